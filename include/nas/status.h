/*
 * nas/status.h - status codes and error details shared by every module.
 *
 * Every fallible function returns an int: NAS_OK (0) on success, a negative
 * NAS_E* code on failure. Functions that can say more take a caller-owned
 * `nas_error *` (may be NULL) and fill it with one sentence that says what
 * failed, where (file:line for config errors) and why, e.g.
 *   "examples/bad.conf:12: unknown op 'conv9x9' (expected one of: none, ...)".
 * The code/message pattern follows libuv (uv_strerror) and SQLite
 * (sqlite3_errmsg): one X-macro generates the enum and its strings.
 */
#ifndef NAS_STATUS_H
#define NAS_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* X(NAME, value, description) */
#define NAS_STATUS_MAP(X)                                                     \
    X(OK, 0, "ok")                                                            \
    X(EINVAL, -1, "invalid argument")                                         \
    X(ECONFIG, -2, "configuration error")                                     \
    X(ENOMEM, -3, "out of memory")                                            \
    X(EIO, -4, "input/output error")                                          \
    X(EFORMAT, -5, "malformed data")                                          \
    X(EDB, -6, "database error")                                              \
    X(EBACKEND, -7, "kernel backend error")                                   \
    X(ENAN, -8, "loss diverged (NaN or infinity)")                            \
    X(EUNSUPPORTED, -9, "not supported")                                      \
    X(ENOTFOUND, -10, "not found")                                            \
    X(EINTR, -11, "interrupted")                                              \
    X(EWORKER, -12, "worker failed")                                          \
    X(ETIMEOUT, -13, "timed out")                                             \
    X(ENODEV, -14, "no such device")                                          \
    X(EBUSY, -15, "busy")                                                     \
    X(EEXIST, -16, "already exists")                                          \
    X(EINFEASIBLE, -17, "no feasible candidate")                              \
    X(EDEVFAULT, -18, "sticky device fault: restart this worker")

typedef enum nas_status {
#define NAS__STATUS_ENUM(name, value, desc) NAS_##name = (value),
    NAS_STATUS_MAP(NAS__STATUS_ENUM)
#undef NAS__STATUS_ENUM
} nas_status;

/* Detail of the last failure, owned by the caller (usually on its stack). */
typedef struct nas_error {
    int code;       /* a nas_status value; NAS_OK when nothing failed */
    char msg[1024]; /* one line, no trailing newline */
} nas_error;

/* Description of a status ("invalid argument"); never NULL. */
const char *nas_strerror(int code);

/* Name of a status ("NAS_EINVAL"); never NULL. */
const char *nas_err_name(int code);

/*
 * Record `code` and a printf-style message in `err` (which may be NULL) and
 * return `code`, so callers can write `return nas_error_set(err, ...)`.
 * The message is truncated to fit; it never fails.
 */
int nas_error_set(nas_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Prefix the message already in `err` with "prefix: " (keeps the code). */
void nas_error_prefix(nas_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Reset `err` to NAS_OK with an empty message. NULL is a no-op. */
void nas_error_clear(nas_error *err);

#ifdef __cplusplus
}
#endif
#endif /* NAS_STATUS_H */
