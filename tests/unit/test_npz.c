/*
 * tests/unit/test_npz.c - the .npz archive layer (trainer/weights.c) keeps
 * its files readable both ways across changes of the ZIP code:
 *  - tests/data/npz/legacy.npz, written by nas's hand-written ZIP writer
 *    (commit 99f4266, before libzip) with nas__npz_add, loads member by
 *    member with the exact names, dtypes, shapes and values;
 *  - tests/data/npz/numpy_compressed.npz, the same arrays written by
 *    numpy.savez_compressed (DEFLATE members, ZIP64 local extras), loads
 *    to the same arrays;
 *  - an archive written now has the layout of legacy.npz: the same
 *    members in the same order, each STORED (method 0, no data descriptor)
 *    under "<name>.npy", with byte-identical .npy payloads, so numpy and
 *    the pre-libzip reader load it;
 *  - bad input: a file that is no ZIP, a truncated archive and a missing
 *    file fail with NAS_EFORMAT / NAS_EIO naming the path.
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "nas/status.h"
#include "trainer/weights_impl.h"

#define DATA NAS_SOURCE_DIR "/tests/data/npz/"

/* The arrays both fixtures hold, in the order legacy.npz has them. */
static const float W[6] = {1.5f, -2.25f, 3.0f, 0.0f, -0.0f, 1e-3f};
static const int64_t W_SHAPE[2] = {2, 3};
static const int64_t S = -42;
static const uint64_t U[2] = {0x853c49e6748fea9bull, 0xda3e39cb94b95bdbull};
static const int64_t U_SHAPE[1] = {2};
static const double D[3] = {0.1, -1e300, 12345.678};
static const int64_t D_SHAPE[1] = {3};
static const uint8_t B[5] = {0, 1, 127, 128, 255};
static const int64_t B_SHAPE[1] = {5};
static const float CW[4] = {0.5f, 0.25f, -0.125f, 8.0f};
static const int64_t CW_SHAPE[4] = {2, 1, 1, 2};
static const int64_t EMPTY_SHAPE[1] = {0};

typedef struct member {
    const char *name, *descr;
    int ndim;
    const int64_t *shape;
    const void *data;
    size_t nbytes;
} member;

static const member MEMBERS[] = {
    {"cells.0.op.weight", "<f4", 2, W_SHAPE, W, sizeof W},
    {"bn.num_batches_tracked", "<i8", 0, NULL, &S, sizeof S},
    {"state/aug_rng", "<u8", 1, U_SHAPE, U, sizeof U},
    {"state/stats", "<f8", 1, D_SHAPE, D, sizeof D},
    {"state/fingerprint", "|u1", 1, B_SHAPE, B, sizeof B},
    {"stem.0.weight", "<f4", 4, CW_SHAPE, CW, sizeof CW},
    {"empty", "<f4", 1, EMPTY_SHAPE, NULL, 0},
};
#define N_MEMBERS ((int)(sizeof MEMBERS / sizeof MEMBERS[0]))

static void expect_members(const char *path)
{
    nas__npz *z = NULL;
    nas_error err;
    int rc = nas__npz_read(path, &z, &err);
    if (rc != NAS_OK)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, NAS_OK);
    assert_int_equal(nas__npz_count(z), N_MEMBERS);
    for (int i = 0; i < N_MEMBERS; i++) {
        const member *m = &MEMBERS[i];
        const nas__npy *a = nas__npz_at(z, i);
        assert_non_null(a);
        assert_string_equal(a->name, m->name);
        assert_ptr_equal(nas__npz_find(z, m->name), a);
        assert_string_equal(a->descr, m->descr);
        assert_int_equal(a->ndim, m->ndim);
        for (int d = 0; d < m->ndim; d++)
            assert_int_equal(a->shape[d], m->shape[d]);
        assert_int_equal(a->count * a->itemsize, m->nbytes);
        if (m->nbytes)
            assert_memory_equal(a->data, m->data, m->nbytes);
    }
    assert_null(nas__npz_find(z, "absent"));
    nas__npz_free(z);
}

static void test_legacy_fixture(void **state)
{
    (void)state;
    expect_members(DATA "legacy.npz");
}

static void test_numpy_compressed_fixture(void **state)
{
    (void)state;
    expect_members(DATA "numpy_compressed.npz");
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    assert_true(sz > 0);
    unsigned char *b = malloc((size_t)sz);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)sz, f), (size_t)sz);
    fclose(f);
    *n = (size_t)sz;
    return b;
}

static unsigned le16(const unsigned char *p) { return p[0] | (unsigned)p[1] << 8; }
static uint32_t le32(const unsigned char *p) { return le16(p) | (uint32_t)le16(p + 2) << 16; }

/* Walk the local headers of a STORED archive: member i at *off must be
 * "<MEMBERS[i].name>.npy", method 0, no data descriptor (flag bit 3),
 * sizes equal; *payload / *len get its .npy bytes. */
static void local_member(const unsigned char *b, size_t n, size_t *off, int i,
                         const unsigned char **payload, size_t *len)
{
    size_t p = *off;
    assert_true(p + 30 <= n);
    assert_int_equal(le32(b + p), 0x04034b50);
    assert_int_equal(le16(b + p + 6) & 0x8, 0); /* no data descriptor */
    assert_int_equal(le16(b + p + 8), 0);       /* stored */
    uint32_t csize = le32(b + p + 18), usize = le32(b + p + 22);
    assert_int_equal(csize, usize);
    unsigned nlen = le16(b + p + 26), xlen = le16(b + p + 28);
    char want[200];
    snprintf(want, sizeof want, "%s.npy", MEMBERS[i].name);
    assert_int_equal(nlen, strlen(want));
    assert_memory_equal(b + p + 30, want, nlen);
    *payload = b + p + 30 + nlen + xlen;
    *len = usize;
    assert_true(p + 30 + nlen + xlen + usize <= n);
    *off = p + 30 + nlen + xlen + usize;
}

static void test_written_layout(void **state)
{
    (void)state;
    char dir[] = "/tmp/nas_test_npz_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/new.npz", dir);
    nas__npz_writer *w = NULL;
    nas_error err;
    assert_int_equal(nas__npz_create(path, &w, &err), NAS_OK);
    for (int i = 0; i < N_MEMBERS; i++) {
        const member *m = &MEMBERS[i];
        assert_int_equal(nas__npz_add(w, m->name, m->descr, m->ndim, m->shape, m->data,
                                      m->nbytes, &err),
                         NAS_OK);
    }
    assert_int_equal(nas__npz_close(w, &err), NAS_OK);
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    assert_int_not_equal(access(tmp, F_OK), 0); /* renamed into place */
    expect_members(path);

    size_t nn, nl;
    unsigned char *nb = slurp(path, &nn);
    unsigned char *lb = slurp(DATA "legacy.npz", &nl);
    size_t on = 0, ol = 0;
    for (int i = 0; i < N_MEMBERS; i++) {
        const unsigned char *pn, *pl;
        size_t ln, ll;
        local_member(nb, nn, &on, i, &pn, &ln);
        local_member(lb, nl, &ol, i, &pl, &ll);
        assert_int_equal(ln, ll);
        assert_memory_equal(pn, pl, ln); /* the same .npy bytes */
    }
    /* After the last member: the central directory. */
    assert_int_equal(le32(nb + on), 0x02014b50);
    free(nb);
    free(lb);
    remove(path);
    rmdir(dir);
}

static void test_bad_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/nas_test_npz_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    nas__npz *z = NULL;
    nas_error err;

    snprintf(path, sizeof path, "%s/text.npz", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("this is not a zip archive, just some text long enough to look for one\n", f);
    fclose(f);
    assert_int_equal(nas__npz_read(path, &z, &err), NAS_EFORMAT);
    assert_null(z);
    assert_non_null(strstr(err.msg, "text.npz"));
    remove(path);

    /* legacy.npz cut in the middle of its members: no central directory. */
    size_t n;
    unsigned char *b = slurp(DATA "legacy.npz", &n);
    snprintf(path, sizeof path, "%s/cut.npz", dir);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n / 2, f), n / 2);
    fclose(f);
    free(b);
    assert_int_equal(nas__npz_read(path, &z, &err), NAS_EFORMAT);
    assert_null(z);
    assert_non_null(strstr(err.msg, "cut.npz"));
    remove(path);

    snprintf(path, sizeof path, "%s/missing.npz", dir);
    assert_int_equal(nas__npz_read(path, &z, &err), NAS_EIO);
    assert_null(z);
    assert_non_null(strstr(err.msg, "missing.npz"));
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_legacy_fixture),
        cmocka_unit_test(test_numpy_compressed_fixture),
        cmocka_unit_test(test_written_layout),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
