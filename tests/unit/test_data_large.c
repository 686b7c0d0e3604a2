/*
 * tests/unit/test_data_large.c - issue 16: an idx header that claims more
 * images than its file holds is refused as truncated before anything is
 * allocated (trainer/data_idx.c), plain and gzip; the npy reader maps its
 * images instead of reading them (trainer/data_npy.c), checked by the
 * mapping being there. The large-file run itself: tests/e2e/test_data_mmap.sh.
 * nas_data_space_input's probe (a chain space's default input) gives the
 * full read's shape and classes for idx (plain, gzip) and npy (N,H,W and N,H,W,C), and its status and message where the
 * files' structure is bad; on idx it reads no pixels, so a gzip file whose
 * image bytes are cut short still gives its shape (the full read reports it).
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "nas/data.h"
#include "probe_check.h"
#include "trainer/npy_impl.h"

static char dir[64];

static void be32(unsigned char *b, uint32_t v)
{
    b[0] = (unsigned char)(v >> 24), b[1] = (unsigned char)(v >> 16);
    b[2] = (unsigned char)(v >> 8), b[3] = (unsigned char)v;
}

/* images claiming n x h x w with `have` pixel bytes, labels claiming n with `lab` bytes */
static void write_idx(const char *img, const char *lab, uint32_t n, uint32_t h, uint32_t w,
                      size_t have, size_t nlab, int gz)
{
    unsigned char hdr[16];
    be32(hdr, 0x803), be32(hdr + 4, n), be32(hdr + 8, h), be32(hdr + 12, w);
    unsigned char *px = calloc(have + nlab + 1, 1);
    gzFile g = gzopen(img, gz ? "wb" : "wbT");
    gzwrite(g, hdr, 16);
    if (have)
        gzwrite(g, px, (unsigned)have);
    gzclose(g);
    be32(hdr, 0x801), be32(hdr + 4, n);
    g = gzopen(lab, gz ? "wb" : "wbT");
    gzwrite(g, hdr, 8);
    if (nlab)
        gzwrite(g, px, (unsigned)nlab);
    gzclose(g);
    free(px);
}

static void test_idx_claims_more_than_the_file(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/nas_test_large_XXXXXX");
    assert_non_null(mkdtemp(dir));
    nas_data_conf dc;
    memset(&dc, 0, sizeof dc);
    snprintf(dc.format, sizeof dc.format, "idx");
    snprintf(dc.train_images, sizeof dc.train_images, "%s/img.idx", dir);
    snprintf(dc.train_labels, sizeof dc.train_labels, "%s/lab.idx", dir);
    for (int gz = 0; gz < 2; gz++) {
        /* 100 million 100x100 images claimed (10^12 bytes), 1,000 bytes there */
        write_idx(dc.train_images, dc.train_labels, 100000000u, 100, 100, 1000, 10, gz);
        nas_rawset *r = NULL;
        nas_error err;
        err.msg[0] = 0;
        int rc = nas_data_read(&dc, 0, &r, &err);
        assert_int_equal(rc, NAS_EFORMAT); /* not NAS_ENOMEM: nothing was allocated */
        assert_null(r);
        assert_non_null(strstr(err.msg, dc.train_images));
        assert_non_null(strstr(err.msg, "truncated"));
        /* the labels too */
        write_idx(dc.train_images, dc.train_labels, 1000u, 10, 10, 100000, 10, gz);
        rc = nas_data_read(&dc, 0, &r, &err);
        assert_int_equal(rc, NAS_EFORMAT);
        assert_non_null(strstr(err.msg, dc.train_labels));
        /* and a file that holds what it claims still reads */
        write_idx(dc.train_images, dc.train_labels, 1000u, 10, 10, 100000, 1000, gz);
        assert_int_equal(nas_data_read(&dc, 0, &r, &err), NAS_OK);
        assert_int_equal(r->n, 1000);
        nas_rawset_destroy(r);
    }
    unlink(dc.train_images);
    unlink(dc.train_labels);
    rmdir(dir);
}

static nas_data_conf idx_conf(const char *fmt)
{
    nas_data_conf dc;
    memset(&dc, 0, sizeof dc);
    snprintf(dc.format, sizeof dc.format, "%s", fmt);
    snprintf(dc.train_images, sizeof dc.train_images, "%s/img.%s", dir, fmt);
    snprintf(dc.train_labels, sizeof dc.train_labels, "%s/lab.%s", dir, fmt);
    return dc;
}

/* n labels (k * 3) % classes, as idx (after its 8-byte header) or npy */
static void put_labels(unsigned char *b, int n, int classes)
{
    for (int k = 0; k < n; k++)
        b[k] = (unsigned char)((k * 3) % classes);
}

static void test_probe_idx(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/nas_test_probe_XXXXXX");
    assert_non_null(mkdtemp(dir));
    nas_data_conf dc = idx_conf("idx");
    for (int gz = 0; gz < 2; gz++) {
        write_idx(dc.train_images, dc.train_labels, 40u, 12, 9, 40 * 12 * 9, 40, gz);
        probe_agrees(&dc); /* labels all 0: two classes, as the full read says */
        /* the structure's errors: the same status and message */
        write_idx(dc.train_images, dc.train_labels, 1000u, 10, 10, 999 * 100, 1000, gz);
        if (!gz) /* a plain file one image short (gzip: only the read finds out) */
            probe_fails_alike(&dc);
        write_idx(dc.train_images, dc.train_labels, 40u, 12, 9, 40 * 12 * 9, 39, gz);
        probe_fails_alike(&dc); /* 39 labels for 40 images: truncated */
        write_idx(dc.train_labels, dc.train_images, 40u, 12, 9, 40 * 12 * 9, 40, gz);
        probe_fails_alike(&dc); /* the files swapped: bad magic */
    }
    /* labels 0..6: seven classes */
    write_idx(dc.train_images, dc.train_labels, 40u, 12, 9, 40 * 12 * 9, 0, 0);
    unsigned char lab[8 + 40] = {0, 0, 8, 1, 0, 0, 0, 40};
    put_labels(lab + 8, 40, 7);
    FILE *f = fopen(dc.train_labels, "wb");
    assert_int_equal(fwrite(lab, 1, sizeof lab, f), sizeof lab);
    fclose(f);
    probe_agrees(&dc);
    unlink(dc.train_images);
    unlink(dc.train_labels);
    rmdir(dir);
}

/* A gzip image file whose bytes after the header are cut: the probe reads
 * the header and the labels only (it read every pixel before, and failed). */
static void test_probe_reads_no_pixels(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/nas_test_probe_XXXXXX");
    assert_non_null(mkdtemp(dir));
    nas_data_conf dc = idx_conf("idx");
    const int n = 200, hw = 28 * 28;
    unsigned char hdr[16];
    be32(hdr, 0x803), be32(hdr + 4, (uint32_t)n), be32(hdr + 8, 28), be32(hdr + 12, 28);
    gzFile g = gzopen(dc.train_images, "wb");
    gzwrite(g, hdr, 16);
    uint32_t x = 12345; /* incompressible pixels, so that a cut lands inside them */
    for (int i = 0; i < n * hw; i++) {
        x = x * 1664525u + 1013904223u;
        unsigned char b = (unsigned char)(x >> 24);
        gzwrite(g, &b, 1);
    }
    gzclose(g);
    struct stat st;
    assert_int_equal(stat(dc.train_images, &st), 0);
    assert_int_equal(truncate(dc.train_images, st.st_size / 2), 0);
    unsigned char lab[8 + 200];
    be32(lab, 0x801), be32(lab + 4, (uint32_t)n);
    put_labels(lab + 8, n, 10);
    g = gzopen(dc.train_labels, "wb");
    gzwrite(g, lab, sizeof lab);
    gzclose(g);
    nas_rawset *r = NULL;
    nas_error err;
    nas_error_clear(&err);
    assert_int_equal(nas_data_read(&dc, 0, &r, &err), NAS_EFORMAT); /* the full read sees it */
    nas_space_desc sd;
    assert_int_equal(probe_space(&dc, &sd, &err), NAS_OK);
    assert_int_equal(sd.data_c, 1);
    assert_int_equal(sd.data_h, 28);
    assert_int_equal(sd.data_w, 28);
    assert_int_equal(sd.data_classes, 10);
    unlink(dc.train_images);
    unlink(dc.train_labels);
    rmdir(dir);
}

/* Write a uint8 .npy array of `ndim` dimensions. */
static void write_npy(const char *path, const unsigned char *data, int ndim, const int64_t *shape)
{
    char hdr[256];
    size_t hl = nas__npy_header(hdr, sizeof hdr, "|u1", ndim, shape), bytes = 1;
    for (int i = 0; i < ndim; i++)
        bytes *= (size_t)shape[i];
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(hdr, 1, hl, f), hl);
    assert_int_equal(fwrite(data, 1, bytes, f), bytes);
    fclose(f);
}

static void test_probe_npy(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/nas_test_probe_XXXXXX");
    assert_non_null(mkdtemp(dir));
    nas_data_conf dc = idx_conf("npy");
    unsigned char *px = calloc(30 * 3 * 10 * 6, 1), lab[30];
    put_labels(lab, 30, 4);
    const int64_t nhw[3] = {30, 10, 6}, nhwc[4] = {30, 10, 6, 3}, nl[1] = {30}, short_l[1] = {29};
    write_npy(dc.train_images, px, 3, nhw);
    write_npy(dc.train_labels, lab, 1, nl);
    probe_agrees(&dc);
    write_npy(dc.train_images, px, 4, nhwc);
    probe_agrees(&dc);
    write_npy(dc.train_labels, lab, 1, short_l);
    probe_fails_alike(&dc); /* 29 labels for 30 images */
    free(px);
    unlink(dc.train_images);
    unlink(dc.train_labels);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idx_claims_more_than_the_file),
        cmocka_unit_test(test_probe_idx),
        cmocka_unit_test(test_probe_reads_no_pixels),
        cmocka_unit_test(test_probe_npy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
