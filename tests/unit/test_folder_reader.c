/*
 * tests/unit/test_folder_reader.c - the image-folder reader (issue 16):
 * the PNG decoder's conversions (grey, RGB, RGBA and grey+alpha with the
 * alpha dropped, palette expanded, with or without tRNS transparency,
 * 16-bit scaled) on files libpng's own
 * writer made; JPEG grey and RGB from libjpeg's compressor; the bilinear
 * resize on values worked out by hand; the reader's order (class folders,
 * then files, by bytes), labels and channels; a grey test/ folder for an
 * RGB training folder, labelled by the training class names; a test class
 * unknown to train/ refused; the decode cache (mapped on the second read,
 * rebuilt with the old files removed when a file changes, absent when
 * there is no cache directory); nas_data_space_input's probe gives the
 * full read's shape and classes (C = 3 when one image is RGB).
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jpeglib.h>
#include "nas/data.h"
#include "trainer/data_impl.h"
#include "probe_check.h"

static char dir[256];

/* A shell command run in `dir` (setup's working directory). */
static void sh(const char *cmd)
{
    assert_int_equal(system(cmd), 0);
}

static int setup(void **s)
{
    (void)s;
    snprintf(dir, sizeof dir, "/tmp/nas_test_folder_XXXXXX");
    return mkdtemp(dir) && chdir(dir) == 0 ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return chdir("/") == 0 && system(cmd) == 0 ? 0 : -1;
}

/* Write a PNG with libpng's simplified writer; `format` PNG_FORMAT_*. */
static void write_png(const char *path, int w, int h, png_uint_32 format, const void *px,
                      const void *colormap, int colors)
{
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    im.width = (png_uint_32)w;
    im.height = (png_uint_32)h;
    im.format = format;
    im.colormap_entries = (png_uint_32)colors;
    assert_true(png_image_write_to_file(&im, path, 0, px, 0, colormap));
}

static void write_jpeg(const char *path, int w, int h, int c, const uint8_t *px)
{
    struct jpeg_compress_struct ci;
    struct jpeg_error_mgr jerr;
    ci.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&ci);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    jpeg_stdio_dest(&ci, f);
    ci.image_width = (JDIMENSION)w;
    ci.image_height = (JDIMENSION)h;
    ci.input_components = c;
    ci.in_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&ci);
    jpeg_set_quality(&ci, 100, TRUE);
    jpeg_start_compress(&ci, TRUE);
    while (ci.next_scanline < ci.image_height) {
        JSAMPROW row = (JSAMPROW)(px + (size_t)ci.next_scanline * w * c);
        jpeg_write_scanlines(&ci, &row, 1);
    }
    jpeg_finish_compress(&ci);
    jpeg_destroy_compress(&ci);
    fclose(f);
}

static void decode_file(const char *path, nas__image *im)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    nas_error err;
    nas_error_clear(&err);
    assert_int_equal(nas__image_decode(buf, n, path, 0, im, &err), NAS_OK);
}

static void test_png_conversions(void **s)
{
    (void)s;
    char p[512];
    nas__image im;
    uint8_t grey[6] = {0, 10, 20, 30, 40, 250};
    snprintf(p, sizeof p, "%s/g.png", dir);
    write_png(p, 3, 2, PNG_FORMAT_GRAY, grey, NULL, 0);
    decode_file(p, &im);
    assert_int_equal(im.c, 1);
    assert_int_equal(im.h, 2);
    assert_int_equal(im.w, 3);
    assert_memory_equal(im.px, grey, 6);
    free(im.px);
    uint8_t rgba[2 * 4] = {1, 2, 3, 0, 200, 100, 50, 255}; /* alpha dropped, not composited */
    snprintf(p, sizeof p, "%s/rgba.png", dir);
    write_png(p, 2, 1, PNG_FORMAT_RGBA, rgba, NULL, 0);
    decode_file(p, &im);
    assert_int_equal(im.c, 3);
    uint8_t want_rgb[6] = {1, 2, 3, 200, 100, 50};
    assert_memory_equal(im.px, want_rgb, 6);
    free(im.px);
    uint8_t ga[4] = {77, 0, 99, 128};
    snprintf(p, sizeof p, "%s/ga.png", dir);
    write_png(p, 2, 1, PNG_FORMAT_GA, ga, NULL, 0);
    decode_file(p, &im);
    assert_int_equal(im.c, 1);
    assert_int_equal(im.px[0], 77);
    assert_int_equal(im.px[1], 99);
    free(im.px);
    uint8_t cmap[2 * 3] = {10, 20, 30, 240, 230, 220}, idx[3] = {1, 0, 1};
    snprintf(p, sizeof p, "%s/pal.png", dir);
    write_png(p, 3, 1, PNG_FORMAT_RGB_COLORMAP, idx, cmap, 2);
    decode_file(p, &im);
    assert_int_equal(im.c, 3);
    uint8_t want_pal[9] = {240, 230, 220, 10, 20, 30, 240, 230, 220};
    assert_memory_equal(im.px, want_pal, 9);
    free(im.px);
    /* a palette with transparency (tRNS): still 3 channels, the palette's colours */
    uint8_t cmap4[2 * 4] = {10, 20, 30, 0, 240, 230, 220, 128};
    snprintf(p, sizeof p, "%s/pal-trns.png", dir);
    write_png(p, 3, 1, PNG_FORMAT_RGBA_COLORMAP, idx, cmap4, 2);
    decode_file(p, &im);
    assert_int_equal(im.c, 3);
    assert_memory_equal(im.px, want_pal, 9);
    free(im.px);
    uint16_t g16[2] = {0x1234, 0xffff}; /* scaled: round(v * 255 / 65535) */
    snprintf(p, sizeof p, "%s/g16.png", dir);
    write_png(p, 2, 1, PNG_FORMAT_LINEAR_Y, g16, NULL, 0);
    decode_file(p, &im);
    assert_int_equal(im.c, 1);
    assert_int_equal(im.px[0], (0x1234 * 255 + 32767) / 65535);
    assert_int_equal(im.px[1], 255);
    free(im.px);
}

static void test_jpeg(void **s)
{
    (void)s;
    char p[512];
    uint8_t px[16 * 16 * 3];
    for (int i = 0; i < 16 * 16 * 3; i++)
        px[i] = (uint8_t)(i % 3 == 0 ? 200 : i % 3 == 1 ? 60 : 20); /* a flat colour */
    snprintf(p, sizeof p, "%s/rgb.jpg", dir);
    write_jpeg(p, 16, 16, 3, px);
    nas__image im;
    decode_file(p, &im);
    assert_int_equal(im.c, 3);
    assert_int_equal(im.w, 16);
    assert_int_equal(im.h, 16);
    for (int i = 0; i < 16 * 16 * 3; i++)
        assert_true(abs((int)im.px[i] - (int)px[i]) <= 3);
    free(im.px);
    snprintf(p, sizeof p, "%s/g.jpg", dir);
    write_jpeg(p, 8, 8, 1, px); /* the first 64 bytes as grey */
    decode_file(p, &im);
    assert_int_equal(im.c, 1);
    free(im.px);
    uint8_t junk[64] = {0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3};
    nas_error err;
    nas_error_clear(&err);
    assert_int_equal(nas__image_decode(junk, sizeof junk, "junk.jpg", 0, &im, &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, "junk.jpg: corrupt JPEG"));
    assert_null(im.px);
}

static void test_resize(void **s)
{
    (void)s;
    const uint8_t src[4] = {0, 100, 200, 255};
    uint8_t up[16], down[4], same[4];
    nas__image_resize(src, 2, 2, 1, up, 4, 4);
    /* half-pixel centres: columns sample x = -0.25 (clamped), 0.25, 0.75, 1.25 (clamped);
     * the values cv2.resize(INTER_LINEAR) gives for this input */
    const uint8_t want_up[16] = {0, 25, 75, 100, 50, 72, 117, 139, 150, 167, 200, 216, 200, 214, 241, 255};
    assert_memory_equal(up, want_up, 16);
    const uint8_t big[16] = {0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150};
    nas__image_resize(big, 4, 4, 1, down, 2, 2); /* samples at 0.5, 2.5: 2x2 means */
    const uint8_t want_down[4] = {25, 45, 105, 125};
    assert_memory_equal(down, want_down, 4);
    nas__image_resize(src, 2, 2, 1, same, 2, 2);
    assert_memory_equal(same, src, 4);
    const uint8_t rgb[6] = {10, 20, 30, 50, 60, 70}; /* 1 x 2, interleaved channels */
    uint8_t rgb4[12];
    nas__image_resize(rgb, 1, 2, 3, rgb4, 1, 4);
    const uint8_t want_rgb[12] = {10, 20, 30, 20, 30, 40, 40, 50, 60, 50, 60, 70};
    assert_memory_equal(rgb4, want_rgb, 12);
}

/* A grey 4x4 PNG whose pixels are all `v`. */
static void grey_png(const char *rel, uint8_t v)
{
    char p[512];
    uint8_t px[16];
    memset(px, v, sizeof px);
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    write_png(p, 4, 4, PNG_FORMAT_GRAY, px, NULL, 0);
}

static nas_data_conf folder_conf(const char *sub, int cache)
{
    nas_data_conf dc;
    memset(&dc, 0, sizeof dc);
    snprintf(dc.format, sizeof dc.format, "folder");
    snprintf(dc.dir, sizeof dc.dir, "%s/%s", dir, sub);
    if (cache)
        snprintf(dc.cache_dir, sizeof dc.cache_dir, "%s/cache", dir);
    dc.valid = 2;
    return dc;
}

static int count_cache_files(void)
{
    char p[512];
    snprintf(p, sizeof p, "%s/cache", dir);
    DIR *d = opendir(p);
    if (!d)
        return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_folder_order_labels_cache(void **s)
{
    (void)s;
    sh("mkdir -p f/train/b f/train/B f/train/a f/train/.hidden f/test/b");
    grey_png("f/train/b/9.png", 9);
    grey_png("f/train/b/10.png", 10); /* byte order: "10.png" < "9.png" */
    grey_png("f/train/B/x.png", 1);
    grey_png("f/train/a/y.png", 50);
    grey_png("f/train/a/z.png", 51);
    grey_png("f/train/.hidden/h.png", 99);
    grey_png("f/test/b/t.png", 7);
    sh("echo notes > f/train/a/readme.txt");
    nas_data_conf dc = folder_conf("f", 1);
    nas_rawset *r = NULL;
    nas_error err;
    nas_error_clear(&err);
    assert_int_equal(nas_data_read(&dc, 0, &r, &err), NAS_OK);
    /* classes B (0), a (1), b (2); files by name */
    assert_int_equal(r->n, 5);
    assert_int_equal(r->c, 1);
    assert_int_equal(r->h, 4);
    assert_int_equal(r->classes, 3);
    const int want_v[5] = {1, 50, 51, 10, 9}, want_l[5] = {0, 1, 1, 2, 2};
    for (int i = 0; i < 5; i++) {
        assert_int_equal((int)nas_rawset_pixel(r, (size_t)i, 0, 3, 3), want_v[i]);
        assert_int_equal(r->labels[i], want_l[i]);
    }
    assert_null(r->map); /* decoded */
    nas_rawset_destroy(r);
    assert_int_equal(count_cache_files(), 2);
    probe_agrees(&dc);
    assert_int_equal(nas_data_read(&dc, 0, &r, &err), NAS_OK);
    assert_non_null(r->map); /* the cache, mapped */
    assert_int_equal((int)nas_rawset_pixel(r, 3, 0, 0, 0), 10);
    char want_path[600];
    snprintf(want_path, sizeof want_path, "%s/train", dc.dir);
    assert_string_equal(r->path, want_path); /* messages name the folder, not the cache */
    nas_rawset_destroy(r);
    /* the test split: class "b" is label 2 */
    assert_int_equal(nas_data_read(&dc, 1, &r, &err), NAS_OK);
    assert_int_equal(r->n, 1);
    assert_int_equal(r->labels[0], 2);
    assert_int_equal(r->classes, 3);
    nas_rawset_destroy(r);
    assert_int_equal(count_cache_files(), 4);
    /* a changed file: decoded again, the old cache files of the split gone */
    sleep(1);
    grey_png("f/train/b/9.png", 19);
    assert_int_equal(nas_data_read(&dc, 0, &r, &err), NAS_OK);
    assert_null(r->map);
    assert_int_equal((int)nas_rawset_pixel(r, 4, 0, 0, 0), 19);
    nas_rawset_destroy(r);
    assert_int_equal(count_cache_files(), 4);
    /* no cache directory: nothing written */
    sh("rm -rf cache");
    dc.cache_dir[0] = '\0';
    assert_int_equal(nas_data_read(&dc, 0, &r, &err), NAS_OK);
    nas_rawset_destroy(r);
    assert_int_equal(count_cache_files(), 0);
}

static void test_folder_rgb_and_test_split(void **s)
{
    (void)s;
    sh("mkdir -p m/train/cat m/train/dog m/test/dog u/train/a u/test/zebra");
    char p[512];
    uint8_t rgb[8 * 8 * 3];
    for (int i = 0; i < (int)sizeof rgb; i++)
        rgb[i] = (uint8_t)(i % 3 ? 0 : 255); /* red */
    snprintf(p, sizeof p, "%s/m/train/cat/1.png", dir);
    write_png(p, 8, 8, PNG_FORMAT_RGB, rgb, NULL, 0);
    grey_png("m/train/cat/2.png", 40); /* 4x4: resized */
    grey_png("m/train/dog/1.png", 80);
    grey_png("m/train/dog/2.png", 90);
    grey_png("m/test/dog/1.png", 60);
    nas_data_conf dc = folder_conf("m", 0);
    dc.size[0] = dc.size[1] = 6;
    dc.valid = 1;
    nas_rawset *r = NULL;
    nas_error err;
    nas_error_clear(&err);
    assert_int_equal(nas_data_read(&dc, 0, &r, &err), NAS_OK);
    assert_int_equal(r->c, 3);
    assert_int_equal(r->h, 6);
    assert_int_equal(r->w, 6);
    assert_int_equal((int)nas_rawset_pixel(r, 0, 0, 2, 2), 255);
    assert_int_equal((int)nas_rawset_pixel(r, 0, 1, 2, 2), 0);
    for (int c = 0; c < 3; c++) /* grey replicated */
        assert_int_equal((int)nas_rawset_pixel(r, 2, c, 5, 5), 80);
    nas_rawset_destroy(r);
    probe_agrees(&dc);
    /* a grey test folder for RGB training: three channels, the training class names */
    nas_data_info info;
    nas_dataset *train = NULL, *valid = NULL, *test = NULL;
    assert_int_equal(nas_data_load(&dc, 1, &info, &train, &valid, &err), NAS_OK);
    assert_int_equal(info.c, 3);
    assert_int_equal(nas_data_load_test(&dc, &info, &test, &err), NAS_OK);
    assert_non_null(test);
    assert_int_equal(test->c, 3);
    assert_int_equal(test->n, 1);
    assert_int_equal(test->labels[0], 1);
    nas_dataset_destroy(train);
    nas_dataset_destroy(valid);
    nas_dataset_destroy(test);
    /* a test class that train/ lacks */
    grey_png("u/train/a/1.png", 1);
    grey_png("u/test/zebra/1.png", 1);
    dc = folder_conf("u", 0);
    assert_int_equal(nas_data_read(&dc, 1, &r, &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, "u/test/zebra: class folder not in"));
    assert_null(r);
    /* no train/ at all */
    dc = folder_conf("nowhere", 0);
    assert_int_equal(nas_data_read(&dc, 0, &r, &err), NAS_EIO);
    assert_non_null(strstr(err.msg, "holds no train/ folder"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_png_conversions),
        cmocka_unit_test(test_jpeg),
        cmocka_unit_test(test_resize),
        cmocka_unit_test(test_folder_order_labels_cache),
        cmocka_unit_test(test_folder_rgb_and_test_split),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
