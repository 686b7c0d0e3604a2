/*
 * tests/unit/test_data_large.c - issue 16: an idx header that claims more
 * images than its file holds is refused as truncated before anything is
 * allocated (trainer/data_idx.c), plain and gzip; the npy reader maps its
 * images instead of reading them (trainer/data_npy.c), checked by the
 * mapping being there. The large-file run itself: tests/e2e/test_data_mmap.sh.
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "nas/data.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idx_claims_more_than_the_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
