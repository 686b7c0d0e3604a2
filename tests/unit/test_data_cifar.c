/*
 * tests/unit/test_data_cifar.c - the CIFAR binary reader (issue 16):
 * small synthetic CIFAR-10 (five batches and a test batch, 1 label byte)
 * and CIFAR-100 (train.bin, test.bin, coarse + fine label bytes) files
 * with known labels and pixels are read back exactly through
 * nas_data_read; a bad record length and a label beyond the class count
 * are refused naming the file; the stratified split keeps class shares.
 * nas_data_space_input's probe gives the full read's shape and classes,
 * and its message for a truncated or missing batch, reading no records.
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "nas/data.h"
#include "probe_check.h"

static char dir[256];

/* Pixel byte of record `r` of file `f`, channel c, row y, column x. */
static unsigned char px(int f, int r, int c, int y, int x)
{
    return (unsigned char)(f * 37 + r * 11 + c * 101 + y * 7 + x * 3);
}

/* Write `n` records to dir/name: label bytes then 3072 pixels (R, G, B
 * planes of 32x32); label of record r = (f + r) % classes. */
static void write_batch(const char *name, int f, int n, int lb, int classes)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *o = fopen(p, "wb");
    assert_non_null(o);
    for (int r = 0; r < n; r++) {
        if (lb == 2)
            fputc((f + r) % 20, o); /* coarse */
        fputc((f + r) % classes, o);
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < 32; y++)
                for (int x = 0; x < 32; x++)
                    fputc(px(f, r, c, y, x), o);
    }
    fclose(o);
}

static void clean(void)
{
    const char *names[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                           "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin",
                           "train.bin",        "test.bin"};
    char p[512];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
}

static int setup(void **s)
{
    (void)s;
    snprintf(dir, sizeof dir, "/tmp/nas_test_cifar_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    clean();
    rmdir(dir);
    return 0;
}

static nas_data_conf conf(void)
{
    nas_data_conf dc;
    memset(&dc, 0, sizeof dc);
    snprintf(dc.format, sizeof dc.format, "cifar");
    snprintf(dc.dir, sizeof dc.dir, "%s", dir);
    return dc;
}

static void test_cifar10_exact(void **s)
{
    (void)s;
    clean();
    char name[64];
    for (int b = 1; b <= 5; b++) {
        snprintf(name, sizeof name, "data_batch_%d.bin", b);
        write_batch(name, b, 4, 1, 10);
    }
    write_batch("test_batch.bin", 9, 3, 1, 10);
    nas_data_conf dc = conf();
    nas_rawset *r = NULL;
    nas_error err = {0};
    assert_int_equal(nas_data_read(&dc, 0, &r, &err), NAS_OK);
    assert_int_equal(r->n, 20);
    assert_int_equal(r->c, 3);
    assert_int_equal(r->h, 32);
    assert_int_equal(r->w, 32);
    assert_int_equal(r->classes, 10);
    assert_int_equal(r->f32, 0);
    for (int i = 0; i < 20; i++) {
        int f = 1 + i / 4, rec = i % 4;
        assert_int_equal(r->labels[i], (f + rec) % 10);
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < 32; y += 5)
                for (int x = 0; x < 32; x += 3)
                    assert_true(nas_rawset_pixel(r, (size_t)i, c, y, x) == (float)px(f, rec, c, y, x));
    }
    nas_rawset_destroy(r);
    assert_int_equal(nas_data_read(&dc, 1, &r, &err), NAS_OK);
    assert_non_null(r);
    assert_int_equal(r->n, 3);
    assert_int_equal(r->labels[2], (9 + 2) % 10);
    assert_true(nas_rawset_pixel(r, 2, 2, 31, 31) == (float)px(9, 2, 2, 31, 31));
    nas_rawset_destroy(r);
    probe_agrees(&dc);
    /* a batch missing: the probe says what the full read says */
    char p[512];
    snprintf(p, sizeof p, "%s/data_batch_4.bin", dir);
    unlink(p);
    probe_fails_alike(&dc);
}

static void test_cifar100_fine_labels(void **s)
{
    (void)s;
    clean();
    write_batch("train.bin", 1, 150, 2, 100);
    nas_data_conf dc = conf();
    nas_rawset *r = NULL;
    nas_error err = {0};
    assert_int_equal(nas_data_read(&dc, 0, &r, &err), NAS_OK);
    assert_int_equal(r->n, 150);
    assert_int_equal(r->classes, 100);
    for (int i = 0; i < 150; i++)
        assert_int_equal(r->labels[i], (1 + i) % 100);
    assert_true(nas_rawset_pixel(r, 149, 1, 3, 4) == (float)px(1, 149, 1, 3, 4));
    nas_rawset_destroy(r);
    probe_agrees(&dc);
    /* no test.bin: no test set, no error */
    assert_int_equal(nas_data_read(&dc, 1, &r, &err), NAS_OK);
    assert_null(r);
}

static void test_cifar_bad_files(void **s)
{
    (void)s;
    clean();
    write_batch("train.bin", 1, 3, 2, 100);
    char p[512];
    snprintf(p, sizeof p, "%s/train.bin", dir);
    assert_int_equal(truncate(p, 3 * 3074 - 5), 0);
    nas_data_conf dc = conf();
    nas_rawset *r = NULL;
    nas_error err = {0};
    assert_int_equal(nas_data_read(&dc, 0, &r, &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, p));
    assert_non_null(strstr(err.msg, "truncated"));
    probe_fails_alike(&dc);
    clean();
    for (int b = 1; b <= 5; b++) {
        char name[64];
        snprintf(name, sizeof name, "data_batch_%d.bin", b);
        write_batch(name, b, 2, 1, 10);
    }
    /* record 0 of batch 3 gets label 10, one past CIFAR-10's classes */
    snprintf(p, sizeof p, "%s/data_batch_3.bin", dir);
    FILE *f = fopen(p, "r+b");
    assert_non_null(f);
    fputc(10, f);
    fclose(f);
    assert_int_equal(nas_data_read(&dc, 0, &r, &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, p));
    assert_non_null(strstr(err.msg, "label 10"));
}

static void test_split_stratified(void **s)
{
    (void)s;
    clean();
    write_batch("train.bin", 0, 400, 2, 4); /* 4 classes of 100 */
    nas_data_conf dc = conf();
    nas_rawset *r = NULL;
    nas_error err = {0};
    assert_int_equal(nas_data_read(&dc, 0, &r, &err), NAS_OK);
    r->classes = 4;
    uint32_t *va = NULL, *tr = NULL;
    int ntr = 0;
    assert_int_equal(nas_data_split(r, 40, 100, 5, &va, &tr, &ntr, NULL, NULL, &err), NAS_OK);
    assert_int_equal(ntr, 100);
    int per[4] = {0};
    char seen[400] = {0};
    for (int i = 0; i < 40; i++) {
        per[r->labels[va[i]]]++;
        seen[va[i]] = 1;
    }
    for (int k = 0; k < 4; k++)
        assert_int_equal(per[k], 10);
    for (int i = 0; i < 100; i++)
        assert_false(seen[tr[i]]); /* disjoint */
    free(va), free(tr);
    assert_int_equal(nas_data_split(r, 400, 0, 5, &va, &tr, &ntr, NULL, NULL, &err), NAS_ECONFIG);
    nas_rawset_destroy(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cifar10_exact),
        cmocka_unit_test(test_cifar100_fine_labels),
        cmocka_unit_test(test_cifar_bad_files),
        cmocka_unit_test(test_split_stratified),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
