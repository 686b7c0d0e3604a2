/*
 * tests/unit/test_data.c - Fashion-MNIST idx loading (trainer/data.c):
 * the real files when installed, and small idx files written here (plain
 * and gzip) to check parsing, normalisation and every error path.
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* mkdtemp, unlink, rmdir */
#include <zlib.h>   /* gzopen to write a compressed fixture */
#include "nas/trainer.h"

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/nas_test_data_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static void rm_all(void)
{
    static const char *const names[] = {
        "train-images-idx3-ubyte",    "train-labels-idx1-ubyte",    "t10k-images-idx3-ubyte",
        "t10k-labels-idx1-ubyte",     "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz",  "t10k-labels-idx1-ubyte.gz"};
    char p[512];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", tmpdir, names[i]);
        unlink(p);
    }
}

static int teardown(void **state)
{
    (void)state;
    rm_all();
    rmdir(tmpdir);
    return 0;
}

static void put_be32(unsigned char *b, uint32_t v)
{
    b[0] = (unsigned char)(v >> 24);
    b[1] = (unsigned char)(v >> 16);
    b[2] = (unsigned char)(v >> 8);
    b[3] = (unsigned char)v;
}

/* Write bytes to dir/name (gzip-compressed when gz). */
static void write_file(const char *name, const unsigned char *buf, size_t n, int gz)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s%s", tmpdir, name, gz ? ".gz" : "");
    if (gz) {
        gzFile f = gzopen(p, "wb");
        assert_non_null(f);
        assert_int_equal(gzwrite(f, buf, (unsigned)n), (int)n);
        gzclose(f);
    } else {
        FILE *f = fopen(p, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(buf, 1, n, f), n);
        fclose(f);
    }
}

/* An idx pair for `split` with n images of h x w; pixel i of image k is
 * (k*7 + i) % 256 and label k % 10. Image bytes are cut by `cut_img`. */
static void write_split(const char *prefix, int n, int h, int w, uint32_t img_magic,
                        uint32_t lab_magic, int lab_n, size_t cut_img, int gz)
{
    size_t px = (size_t)n * h * w;
    unsigned char *b = malloc(16 + px);
    put_be32(b, img_magic);
    put_be32(b + 4, (uint32_t)n);
    put_be32(b + 8, (uint32_t)h);
    put_be32(b + 12, (uint32_t)w);
    for (int k = 0; k < n; k++)
        for (int i = 0; i < h * w; i++)
            b[16 + (size_t)k * h * w + i] = (unsigned char)((k * 7 + i) % 256);
    char name[64];
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    write_file(name, b, 16 + px - cut_img, gz);
    free(b);
    unsigned char *l = malloc(8 + (size_t)lab_n);
    put_be32(l, lab_magic);
    put_be32(l + 4, (uint32_t)lab_n);
    for (int k = 0; k < lab_n; k++)
        l[8 + k] = (unsigned char)(k % 10);
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    write_file(name, l, 8 + (size_t)lab_n, gz);
    free(l);
}

static void test_real_files(void **state)
{
    (void)state;
    char p[512];
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte.gz", FMNIST_DIR);
    if (access(p, R_OK) != 0) {
        printf("SKIPPED: Fashion-MNIST not installed in %s\n", FMNIST_DIR);
        skip();
    }
    nas_dataset *tr = NULL, *te = NULL;
    nas_error err = {0};
    assert_int_equal(nas_fmnist_load(FMNIST_DIR, "train", &tr, &err), NAS_OK);
    assert_int_equal(nas_fmnist_load(FMNIST_DIR, "test", &te, &err), NAS_OK);
    assert_int_equal(tr->n, 60000);
    assert_int_equal(te->n, 10000);
    assert_int_equal(tr->c, 1);
    assert_int_equal(tr->h, 28);
    assert_int_equal(tr->w, 28);
    assert_int_equal(tr->classes, 10);
    /* Fashion-MNIST is balanced: 6000 per class in train, 1000 in test. */
    int cnt[10] = {0}, cnt_te[10] = {0};
    for (int i = 0; i < tr->n; i++) {
        assert_true(tr->labels[i] < 10);
        cnt[tr->labels[i]]++;
    }
    for (int i = 0; i < te->n; i++)
        cnt_te[te->labels[i]]++;
    for (int k = 0; k < 10; k++) {
        assert_int_equal(cnt[k], 6000);
        assert_int_equal(cnt_te[k], 1000);
    }
    /* Normalised pixels: overall mean ~0 and std ~1 (the constants were
     * computed on this training set); min is (0 - 0.286)/0.353. */
    double s = 0, s2 = 0, mn = 1e9, mx = -1e9;
    size_t px = (size_t)tr->n * 28 * 28;
    for (size_t i = 0; i < px; i++) {
        double v = tr->images[i];
        s += v;
        s2 += v * v;
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
    }
    double mean = s / (double)px, sd = sqrt(s2 / (double)px - mean * mean);
    assert_true(fabs(mean) < 0.01);
    assert_true(fabs(sd - 1.0) < 0.01);
    assert_true(fabs(mn - (0.0 - 0.2860) / 0.3530) < 1e-5);
    assert_true(fabs(mx - (1.0 - 0.2860) / 0.3530) < 1e-5);
    nas_dataset_destroy(tr);
    nas_dataset_destroy(te);
}

static void check_fixture(const nas_dataset *d, int n, int h, int w)
{
    assert_int_equal(d->n, n);
    assert_int_equal(d->h, h);
    assert_int_equal(d->w, w);
    for (int k = 0; k < n; k++) {
        assert_int_equal(d->labels[k], k % 10);
        for (int i = 0; i < h * w; i++) {
            float want = ((float)((k * 7 + i) % 256) / 255.0f - 0.2860f) / 0.3530f;
            assert_true(fabsf(d->images[(size_t)k * h * w + i] - want) < 1e-5f);
        }
    }
}

static void test_plain_and_gzip(void **state)
{
    (void)state;
    nas_dataset *d = NULL;
    nas_error err = {0};
    write_split("t10k", 13, 28, 28, 0x803, 0x801, 13, 0, 0);
    assert_int_equal(nas_fmnist_load(tmpdir, "test", &d, &err), NAS_OK);
    check_fixture(d, 13, 28, 28);
    nas_dataset_destroy(d);
    rm_all();
    write_split("train", 21, 28, 28, 0x803, 0x801, 21, 0, 1);
    assert_int_equal(nas_fmnist_load(tmpdir, "train", &d, &err), NAS_OK);
    check_fixture(d, 21, 28, 28);
    nas_dataset_destroy(d);
    rm_all();
}

static void test_truncated(void **state)
{
    (void)state;
    nas_dataset *d = (nas_dataset *)&d;
    nas_error err = {0};
    write_split("train", 10, 28, 28, 0x803, 0x801, 10, 5, 1);
    assert_int_equal(nas_fmnist_load(tmpdir, "train", &d, &err), NAS_EFORMAT);
    assert_null(d);
    assert_non_null(strstr(err.msg, "train-images-idx3-ubyte"));
    assert_non_null(strstr(err.msg, "truncated"));
    rm_all();
    /* a header cut short */
    unsigned char hdr[6] = {0, 0, 8, 3, 0, 0};
    write_file("t10k-images-idx3-ubyte", hdr, sizeof hdr, 0);
    write_split("t10k", 1, 1, 1, 0x803, 0x801, 1, 0, 1); /* labels (and a .gz images) */
    char p[512];
    snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte.gz", tmpdir);
    unlink(p); /* so the short plain file is the one read */
    assert_int_equal(nas_fmnist_load(tmpdir, "test", &d, &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, "header"));
    rm_all();
}

static void test_bad_magic_and_mismatch(void **state)
{
    (void)state;
    nas_dataset *d = NULL;
    nas_error err = {0};
    write_split("train", 4, 2, 2, 0x801, 0x801, 4, 0, 0); /* labels magic on images */
    assert_int_equal(nas_fmnist_load(tmpdir, "train", &d, &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, "magic"));
    assert_non_null(strstr(err.msg, "train-images-idx3-ubyte"));
    rm_all();
    write_split("train", 4, 2, 2, 0x803, 0x803, 4, 0, 1); /* images magic on labels */
    assert_int_equal(nas_fmnist_load(tmpdir, "train", &d, &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, "labels"));
    rm_all();
    write_split("train", 4, 2, 2, 0x803, 0x801, 3, 0, 1); /* count mismatch */
    assert_int_equal(nas_fmnist_load(tmpdir, "train", &d, &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, "3 labels"));
    rm_all();
}

/* Issue 19: the network is built for 28x28 images; a file of another size
 * is refused at load time naming the file, not by a bare "invalid
 * argument" at the first training step. */
static void test_wrong_size(void **state)
{
    (void)state;
    static const int sizes[][2] = {{32, 32}, {28, 27}, {5, 4}, {4096, 1}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        nas_dataset *d = (nas_dataset *)&d;
        nas_error err = {0};
        write_split("train", 3, sizes[i][0], sizes[i][1], 0x803, 0x801, 3, 0, 1);
        int rc = nas_fmnist_load(tmpdir, "train", &d, &err);
        if (rc != NAS_EFORMAT || d)
            fail_msg("%dx%d images: status %d, expected NAS_EFORMAT", sizes[i][0], sizes[i][1],
                     rc);
        assert_non_null(strstr(err.msg, "train-images-idx3-ubyte"));
        assert_non_null(strstr(err.msg, "28x28"));
        printf("%s\n", err.msg);
        rm_all();
    }
}

static void test_missing(void **state)
{
    (void)state;
    nas_dataset *d = (nas_dataset *)&d;
    nas_error err = {0};
    assert_int_equal(nas_fmnist_load("/nonexistent/nas-data", "train", &d, &err), NAS_EIO);
    assert_null(d);
    assert_non_null(strstr(err.msg, "/nonexistent/nas-data/train-images-idx3-ubyte"));
    assert_int_equal(nas_fmnist_load(tmpdir, "validation", &d, &err), NAS_EINVAL);
}

static void test_split(void **state)
{
    (void)state;
    enum { PX = 28 * 28 };
    nas_dataset *d = NULL, *tr = NULL, *va = NULL, *tr2 = NULL, *va2 = NULL;
    nas_error err = {0};
    write_split("train", 50, 28, 28, 0x803, 0x801, 50, 0, 0);
    assert_int_equal(nas_fmnist_load(tmpdir, "train", &d, &err), NAS_OK);
    rm_all();
    assert_int_equal(nas_dataset_split(d, 10, 25, 42, &tr, &va, &err), NAS_OK);
    assert_int_equal(va->n, 10);
    assert_int_equal(tr->n, 25);
    /* Each image is identified by its first pixel ((k*7) % 256, distinct
     * for k < 50): the two parts are disjoint and come from d. */
    int seen[50] = {0};
    const nas_dataset *parts[2] = {va, tr};
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < parts[p]->n; i++) {
            int k = -1;
            for (int j = 0; j < 50; j++)
                if (d->images[j * PX] == parts[p]->images[i * PX])
                    k = j;
            assert_true(k >= 0);
            assert_int_equal(seen[k], 0);
            seen[k] = 1;
            assert_int_equal(parts[p]->labels[i], d->labels[k]);
            assert_memory_equal(parts[p]->images + i * PX, d->images + k * PX, PX * sizeof(float));
        }
    /* Same seed, same split; another seed, another. */
    assert_int_equal(nas_dataset_split(d, 10, 25, 42, &tr2, &va2, &err), NAS_OK);
    assert_memory_equal(va->images, va2->images, 10 * PX * sizeof(float));
    assert_memory_equal(tr->labels, tr2->labels, 25);
    nas_dataset_destroy(tr2);
    nas_dataset_destroy(va2);
    assert_int_equal(nas_dataset_split(d, 10, 0, 43, &tr2, &va2, &err), NAS_OK);
    assert_int_equal(tr2->n, 40);
    assert_true(memcmp(va->images, va2->images, 10 * PX * sizeof(float)) != 0);
    nas_dataset_destroy(tr2);
    nas_dataset_destroy(va2);
    assert_int_equal(nas_dataset_split(d, 30, 25, 1, &tr2, &va2, &err), NAS_EINVAL);
    assert_null(tr2);
    assert_int_equal(nas_dataset_split(d, 51, 0, 1, &tr2, &va2, &err), NAS_EINVAL);
    nas_dataset_destroy(tr);
    nas_dataset_destroy(va);
    nas_dataset_destroy(d);
    nas_dataset_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_files),
        cmocka_unit_test(test_plain_and_gzip),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_bad_magic_and_mismatch),
        cmocka_unit_test(test_wrong_size),
        cmocka_unit_test(test_missing),
        cmocka_unit_test(test_split),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
