/*
 * tests/fuzz/fuzz.h - the fuzz targets (one per parser entry point) and the
 * helpers they share. A target takes arbitrary bytes, runs them through a
 * parser and checks what the parser promises (an error code with a
 * message, or a result that round-trips); it calls abort() when a promise
 * is broken, so libFuzzer (scripts/fuzz.sh) and the regression test
 * (tests/unit/test_fuzz_regressions.c) both see the failure. Memory errors
 * and undefined behaviour are for ASan/UBSan to find. Targets keep no
 * state between calls except scratch files and chain_genotype's two spaces.
 */
#ifndef NAS_TESTS_FUZZ_H
#define NAS_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include "nas/space.h"

#define NAS_FUZZ_TARGET(name, what) int nas_fuzz_##name(const uint8_t *data, size_t size);
#include "targets.def"
#undef NAS_FUZZ_TARGET

/* Write data[0..size) to a scratch file (a memfd, one per `slot` 0..3, reused)
 * and put a path that opens it into path[n]. Returns 0 or aborts. */
int nas_fuzz_file(int slot, const uint8_t *data, size_t size, char *path, size_t n);

/* A scratch directory for targets that read named files (created once per
 * process under $TMPDIR or /tmp, removed at exit). */
const char *nas_fuzz_dir(void);

/* Write data[0..size) to nas_fuzz_dir()/name. Returns 0 or aborts. */
int nas_fuzz_write(const char *name, const uint8_t *data, size_t size);

/* data[0..size) as a NUL-terminated string (malloc'd, the caller frees;
 * an embedded NUL ends it early). Aborts when out of memory. */
char *nas_fuzz_cstr(const uint8_t *data, size_t size);

/* A reader's refusal of its input, checked against what every reader
 * promises: rc is a negative status that err carries, with a message that
 * names the input (name1 or name2 when given, else any text); no_result:
 * the reader left its output unset (the caller's test, e.g. out == NULL);
 * and NAS_ENOMEM only for an input over 1 MiB (memory follows the bytes
 * that are there, not the sizes a header claims: the harnesses cap
 * allocations). Returns rc, or aborts. */
int nas_fuzz_refused(int rc, const nas_error *err, int no_result, const char *name1,
                     const char *name2, size_t size);

/* Parse genotype string `str` in space `sp` (NULL: no space) into *g and
 * check the parser's promises, whatever the space type: a failure is
 * NAS_EFORMAT with a message; a success formats back to a string that
 * parses to the same tokens and, with a space, has a canonical key.
 * Returns the parse's status. */
int nas_fuzz_genotype_roundtrip(const nas_space *sp, const char *str, nas_genotype *g);

/* Abort with a message when `cond` is false (a broken promise). */
#define NAS_FUZZ_CHECK(cond, ...)                                                  \
    do {                                                                           \
        if (!(cond))                                                               \
            nas_fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                 \
    } while (0)
void nas_fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((noreturn, format(printf, 4, 5)))
#endif
    ;

#endif
