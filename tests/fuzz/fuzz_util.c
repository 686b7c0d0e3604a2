/*
 * tests/fuzz/fuzz_util.c - what the fuzz targets share (tests/fuzz/fuzz.h):
 * scratch files, failure reports and the genotype round trip of every
 * space type.
 * Parsers that take a path read the fuzz input from a memfd (Linux
 * memfd_create: no disk I/O, opened by path as /proc/self/fd/N).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h> /* memfd_create */
#include <unistd.h>
#include "fuzz.h"

static int g_fd[4] = {-1, -1, -1, -1};
static char g_dir[512];

void nas_fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s:%d: fuzz check failed: %s: ", file, line, cond);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

static void put_all(int fd, const uint8_t *data, size_t size)
{
    NAS_FUZZ_CHECK(ftruncate(fd, 0) == 0, "ftruncate");
    size_t off = 0;
    while (off < size) {
        ssize_t w = pwrite(fd, data + off, size - off, (off_t)off);
        NAS_FUZZ_CHECK(w > 0, "pwrite");
        off += (size_t)w;
    }
}

int nas_fuzz_file(int slot, const uint8_t *data, size_t size, char *path, size_t n)
{
    NAS_FUZZ_CHECK(slot >= 0 && slot < 4, "slot %d", slot);
    if (g_fd[slot] < 0)
        g_fd[slot] = memfd_create("nas-fuzz", 0);
    NAS_FUZZ_CHECK(g_fd[slot] >= 0, "memfd_create");
    put_all(g_fd[slot], data, size);
    snprintf(path, n, "/proc/self/fd/%d", g_fd[slot]);
    return 0;
}

static void remove_dir(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz: could not remove %s\n", g_dir);
}

const char *nas_fuzz_dir(void)
{
    if (!g_dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(g_dir, sizeof g_dir, "%s/nas-fuzz-XXXXXX", t && *t ? t : "/tmp");
        NAS_FUZZ_CHECK(mkdtemp(g_dir) != NULL, "mkdtemp %s", g_dir);
        atexit(remove_dir);
    }
    return g_dir;
}

int nas_fuzz_write(const char *name, const uint8_t *data, size_t size)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", nas_fuzz_dir(), name);
    FILE *f = fopen(path, "wb");
    NAS_FUZZ_CHECK(f != NULL, "fopen %s", path);
    NAS_FUZZ_CHECK(size == 0 || fwrite(data, 1, size, f) == size, "fwrite %s", path);
    NAS_FUZZ_CHECK(fclose(f) == 0, "fclose %s", path);
    return 0;
}

char *nas_fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    NAS_FUZZ_CHECK(s != NULL, "malloc");
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

int nas_fuzz_refused(int rc, const nas_error *err, int no_result, const char *name1,
                     const char *name2, size_t size)
{
    const int named = name1 ? strstr(err->msg, name1) || (name2 && strstr(err->msg, name2))
                            : err->msg[0] != '\0';
    NAS_FUZZ_CHECK(no_result && rc < 0 && err->code == rc && named, "rc %d msg '%s'", rc, err->msg);
    NAS_FUZZ_CHECK(rc != NAS_ENOMEM || size > (1u << 20), "a %zu-byte input: %s", size, err->msg);
    return rc;
}

int nas_fuzz_genotype_roundtrip(const nas_space *sp, const char *str, nas_genotype *g)
{
    nas_error err;
    nas_error_clear(&err);
    int rc = nas_space_parse(sp, str, g, &err);
    if (rc != NAS_OK) {
        NAS_FUZZ_CHECK(rc == NAS_EFORMAT && err.code == rc && err.msg[0], "rc %d msg '%s'", rc,
                       err.msg);
        return rc;
    }
    char buf[NAS_GENOTYPE_STR_MAX], key[NAS_GENOTYPE_STR_MAX];
    NAS_FUZZ_CHECK(nas_space_format(sp, g, buf, sizeof buf) == NAS_OK, "format '%s'", str);
    nas_genotype g2;
    NAS_FUZZ_CHECK(nas_space_parse(sp, buf, &g2, &err) == NAS_OK, "reparse '%s': %s", buf, err.msg);
    NAS_FUZZ_CHECK(g2.len == g->len && memcmp(g->tok, g2.tok, (size_t)g->len) == 0,
                   "'%s' -> '%s'", str, buf);
    if (sp) {
        nas_space_key(sp, g, key, sizeof key);
        NAS_FUZZ_CHECK(key[0] != '\0', "empty key for '%s'", buf);
    }
    return NAS_OK;
}
