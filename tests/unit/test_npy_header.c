/*
 * tests/unit/test_npy_header.c - validation of .npy members in .npz archives
 * (trainer/weights.c, issue 19): a header whose shape product, or shape
 * product times item size, overflows size_t, or asks for more bytes than
 * the member holds, is refused by the reader (NAS_EFORMAT naming the
 * member) and by the writer (NAS_EINVAL); well-formed members still load.
 * The archives are built here byte by byte (one STORED ZIP member, PKWARE
 * APPNOTE 6.3) so the reader is tested on headers nas would never write.
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h> /* crc32 */
#include "trainer/weights_impl.h"

#define SCRATCH_NAME "npyh"
#include "scratch_dir.h" /* g_dir */

static void put16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, unsigned long v)
{
    put16(p, (unsigned)(v & 0xffff));
    put16(p + 2, (unsigned)(v >> 16));
}

/* Write DIR/file.npz holding one stored member "a.npy": a version-1.0 .npy
 * header with dict text `dict` (padded to 64 bytes) and `nbytes` data
 * bytes. Returns the path (static buffer). */
static const char *write_npz(const char *file, const char *dict, size_t nbytes)
{
    static char path[300];
    snprintf(path, sizeof path, "%s/%s", g_dir, file);
    unsigned char npy[512];
    size_t dl = strlen(dict);
    size_t hl = 10 + dl + 1;
    size_t pad = (64 - hl % 64) % 64;
    assert_true(hl + pad + nbytes <= sizeof npy);
    memcpy(npy, "\x93NUMPY\x01\x00", 8);
    put16(npy + 8, (unsigned)(dl + pad + 1));
    memcpy(npy + 10, dict, dl);
    memset(npy + 10 + dl, ' ', pad);
    npy[10 + dl + pad] = '\n';
    size_t len = 10 + dl + pad + 1;
    for (size_t i = 0; i < nbytes; i++)
        npy[len++] = (unsigned char)(i * 37);
    unsigned long crc = crc32(0L, npy, (uInt)len);
    const char *name = "a.npy";
    unsigned nl = (unsigned)strlen(name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    unsigned char lh[30] = {0}, cd[46] = {0}, eo[22] = {0};
    put32(lh, 0x04034b50);
    put16(lh + 4, 20);
    put32(lh + 14, crc);
    put32(lh + 18, (unsigned long)len);
    put32(lh + 22, (unsigned long)len);
    put16(lh + 26, nl);
    fwrite(lh, 1, 30, f);
    fwrite(name, 1, nl, f);
    fwrite(npy, 1, len, f);
    put32(cd, 0x02014b50);
    put16(cd + 4, 20);
    put16(cd + 6, 20);
    put32(cd + 16, crc);
    put32(cd + 20, (unsigned long)len);
    put32(cd + 24, (unsigned long)len);
    put16(cd + 28, nl);
    fwrite(cd, 1, 46, f);
    fwrite(name, 1, nl, f);
    put32(eo, 0x06054b50);
    put16(eo + 8, 1);
    put16(eo + 10, 1);
    put32(eo + 12, 46 + nl);
    put32(eo + 16, 30 + nl + (unsigned long)len);
    fwrite(eo, 1, 22, f);
    assert_int_equal(fclose(f), 0);
    return path;
}

static void expect_refused(const char *file, const char *dict, size_t nbytes)
{
    const char *path = write_npz(file, dict, nbytes);
    nas__npz *z = (nas__npz *)path; /* must be reset to NULL */
    nas_error err = {0};
    int rc = nas__npz_read(path, &z, &err);
    if (rc != NAS_EFORMAT)
        fail_msg("%s with %zu data bytes: read returned %d, expected NAS_EFORMAT", dict, nbytes,
                 rc);
    assert_null(z);
    if (!strstr(err.msg, "a.npy") || !strstr(err.msg, path))
        fail_msg("message names neither member nor file: %s", err.msg);
    printf("refused: %s\n", err.msg);
}

static void test_reader_rejects_bad_sizes(void **state)
{
    (void)state;
    /* 4611686018427387905 * 4 = 2^64 + 4: wrapped to the 4 bytes present */
    expect_refused("wrap.npz", "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387905,), }", 4);
    /* the shape product itself wraps: 2^32 * 2^32 * 1 = 2^64 -> 0 */
    expect_refused("prod.npz", "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 1), }", 0);
    /* one dimension beyond int64 */
    expect_refused("huge.npz", "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 4);
    /* issue 18: members claiming 2^60 elements (2^62, 2^63 and 2^60 bytes)
     * are refused from the header, before anything is allocated for them */
    expect_refused("e60f4.npz", "{'descr': '<f4', 'fortran_order': False, 'shape': (1152921504606846976,), }", 4);
    expect_refused("e60f8.npz", "{'descr': '<f8', 'fortran_order': False, 'shape': (1073741824, 1073741824), }", 8);
    expect_refused("e60u1.npz", "{'descr': '|u1', 'fortran_order': False, 'shape': (1024, 1024, 1024, 1024, 1024, 1024), }", 1);
    /* a product that does not overflow but exceeds the member */
    expect_refused("short.npz", "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }", 40);
    expect_refused("long.npz", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 12);
    expect_refused("neg.npz", "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 4);
}

static void test_reader_accepts_good(void **state)
{
    (void)state;
    const char *path =
        write_npz("ok.npz", "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", 24);
    nas__npz *z = NULL;
    nas_error err = {0};
    if (nas__npz_read(path, &z, &err) != NAS_OK)
        fail_msg("%s", err.msg);
    const nas__npy *a = nas__npz_find(z, "a");
    assert_non_null(a);
    assert_int_equal(a->ndim, 2);
    assert_int_equal(a->count, 6);
    assert_int_equal(a->itemsize, 4);
    nas__npz_free(z);
    /* a scalar and an empty array */
    path = write_npz("scalar.npz", "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", 8);
    assert_int_equal(nas__npz_read(path, &z, &err), NAS_OK);
    assert_int_equal(nas__npz_find(z, "a")->count, 1);
    nas__npz_free(z);
    path = write_npz("empty.npz", "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }", 0);
    assert_int_equal(nas__npz_read(path, &z, &err), NAS_OK);
    assert_int_equal(nas__npz_find(z, "a")->count, 0);
    nas__npz_free(z);
}

static void test_writer_rejects_overflow(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/w.npz", g_dir);
    nas__npz_writer *w = NULL;
    nas_error err = {0};
    assert_int_equal(nas__npz_create(path, &w, &err), NAS_OK);
    float four = 1.0f;
    int64_t wrap[1] = {4611686018427387905LL};
    assert_int_equal(nas__npz_add(w, "wrap", "<f4", 1, wrap, &four, 4, &err), NAS_EINVAL);
    int64_t prod[3] = {4294967296LL, 4294967296LL, 1};
    assert_int_equal(nas__npz_add(w, "prod", "<f4", 3, prod, &four, 0, &err), NAS_EINVAL);
    int64_t neg[1] = {-1};
    assert_int_equal(nas__npz_add(w, "neg", "<f4", 1, neg, &four, 4, &err), NAS_EINVAL);
    int64_t one[1] = {1};
    assert_int_equal(nas__npz_add(w, "one", "<f4", 1, one, &four, 4, &err), NAS_OK);
    assert_int_equal(nas__npz_close(w, &err), NAS_OK);
    nas__npz *z = NULL;
    assert_int_equal(nas__npz_read(path, &z, &err), NAS_OK);
    assert_int_equal(nas__npz_count(z), 1);
    nas__npz_free(z);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reader_rejects_bad_sizes),
        cmocka_unit_test(test_reader_accepts_good),
        cmocka_unit_test(test_writer_rejects_overflow),
    };
    return cmocka_run_group_tests(tests, scratch_dir_setup, scratch_dir_teardown);
}
