/*
 * trainer/data_image.c - one PNG or JPEG image from memory into 8-bit grey
 * or RGB pixels, and the bilinear resize of data.size (issue 16, the
 * folder reader: data_folder.c).
 *
 * PNG: libpng 1.6's sequential reader ("PNG Specification", W3C 2003;
 * libpng's manual, "Transformations"). JPEG: libjpeg-turbo's libjpeg API
 * (ITU T.81; libjpeg.txt), accurate integer IDCT so the pixels do not
 * depend on the CPU's SIMD. Both report errors by longjmp out of the
 * library; everything a jump could leak lives in a struct reached by
 * pointer (not in registers) and is freed after it.
 */
#include <png.h>
#include <setjmp.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE and size_t */
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <jerror.h> /* after jpeglib.h: the message codes, ERREXIT */
#include "trainer/data_impl.h"

/* A decoder's ending: on success (rc 0) the pixels px go to im, else they
 * are freed. Returns rc. */
static int hand_over(int rc, uint8_t *px, nas__image *im)
{
    if (rc)
        free(px);
    else
        im->px = px;
    return rc;
}

/* ---- PNG ---------------------------------------------------------------- */

typedef struct png_job {
    const uint8_t *buf;
    size_t len, off;
    char msg[200];    /* libpng's error text */
    uint8_t *px;      /* the pixels, malloc'd */
    png_bytep *rows;  /* row pointers into px */
} png_job;

static void png_mem_read(png_structp png, png_bytep out, size_t n)
{
    png_job *j = png_get_io_ptr(png);
    if (n > j->len - j->off)
        png_error(png, "truncated: the file ends early");
    memcpy(out, j->buf + j->off, n);
    j->off += n;
}

static void png_on_error(png_structp png, png_const_charp msg)
{
    png_job *j = png_get_error_ptr(png);
    snprintf(j->msg, sizeof j->msg, "%s", msg ? msg : "error");
    png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
    (void)png, (void)msg; /* ancillary trouble (bad CRC of a text chunk, ...): the pixels are fine */
}

/* Header read, transforms set, the pixels read into j->px (h x w x *c). */
static void png_decode_body(png_structp png, png_infop info, png_job *j, long max_pixels,
                            nas__image *im)
{
    png_set_user_limits(png, NAS__IMAGE_MAX_SIDE, NAS__IMAGE_MAX_SIDE);
    png_set_read_fn(png, j, png_mem_read);
    png_read_info(png, info);
    png_uint_32 w = 0, h = 0;
    int depth = 0, ctype = 0;
    png_get_IHDR(png, info, &w, &h, &depth, &ctype, NULL, NULL, NULL);
    if ((long)w * (long)h > max_pixels)
        png_error(png, "image too large");
    /* deflate expands at most 1032:1, so a file this short cannot hold the
     * rows its header claims: refuse before allocating them */
    double raw = (double)h * (1.0 + ((double)w * png_get_channels(png, info) * depth + 7) / 8);
    if (raw > 1032.0 * (double)j->len + 4096)
        png_error(png, "truncated: too few bytes for the image size in the header");
    if (depth == 16)
        png_set_scale_16(png);
    if (ctype == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(png);
    if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(png);
    /* alpha dropped; so is tRNS transparency, which the palette expansion
     * would otherwise turn into a fourth channel */
    if ((ctype & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS))
        png_set_strip_alpha(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int c = png_get_channels(png, info);
    if ((c != 1 && c != 3) || png_get_rowbytes(png, info) != (size_t)w * (size_t)c)
        png_error(png, "unexpected pixel layout after conversion");
    j->px = malloc((size_t)w * h * (size_t)c);
    j->rows = malloc((size_t)h * sizeof *j->rows);
    if (!j->px || !j->rows)
        png_error(png, "out of memory");
    for (png_uint_32 y = 0; y < h; y++)
        j->rows[y] = j->px + (size_t)y * w * (size_t)c;
    png_read_image(png, j->rows);
    png_read_end(png, NULL);
    im->h = (int)h;
    im->w = (int)w;
    im->c = c;
}

static int decode_png(const uint8_t *buf, size_t len, const char *name, long max_pixels,
                      nas__image *im, nas_error *err)
{
    png_job *j = calloc(1, sizeof *j);
    png_structp png = j ? png_create_read_struct(PNG_LIBPNG_VER_STRING, j, png_on_error,
                                                 png_on_warning)
                        : NULL;
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
        free(j);
        return nas_error_set(err, NAS_ENOMEM, "out of memory decoding %s", name);
    }
    j->buf = buf;
    j->len = len;
    int rc = NAS_OK;
    if (setjmp(png_jmpbuf(png)) == 0)
        png_decode_body(png, info, j, max_pixels, im);
    else
        rc = nas_error_set(err, strcmp(j->msg, "out of memory") ? NAS_EFORMAT : NAS_ENOMEM,
                           "%s: corrupt PNG: %s", name, j->msg);
    png_destroy_read_struct(&png, &info, NULL);
    free(j->rows);
    rc = hand_over(rc, j->px, im);
    free(j);
    return rc;
}

/* ---- JPEG --------------------------------------------------------------- */

typedef struct jpeg_job {
    struct jpeg_error_mgr pub; /* first: libjpeg casts cinfo->err to it */
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
    int bad_warning; /* a warning that means damaged data */
    struct jpeg_decompress_struct ci;
    uint8_t *px;
} jpeg_job;

static void jpeg_on_error(j_common_ptr ci)
{
    jpeg_job *j = (jpeg_job *)(void *)ci->err;
    (*ci->err->format_message)(ci, j->msg);
    longjmp(j->jb, 1);
}

/* Warnings (level -1): damaged or truncated data is an error, reported
 * after the decode; extraneous bytes before a marker (common, harmless)
 * are not. Trace messages (level >= 0) are dropped. */
static void jpeg_on_message(j_common_ptr ci, int level)
{
    jpeg_job *j = (jpeg_job *)(void *)ci->err;
    if (level >= 0 || ci->err->msg_code == JWRN_EXTRANEOUS_DATA || j->bad_warning)
        return;
    (*ci->err->format_message)(ci, j->msg);
    j->bad_warning = 1;
}

static void jpeg_decode_body(jpeg_job *j, const uint8_t *buf, size_t len, long max_pixels,
                             nas__image *im)
{
    struct jpeg_decompress_struct *ci = &j->ci;
    jpeg_create_decompress(ci);
    ci->mem->max_memory_to_use = 4L * max_pixels + (64L << 20);
    jpeg_mem_src(ci, buf, (unsigned long)len);
    if (jpeg_read_header(ci, TRUE) != JPEG_HEADER_OK)
        ERREXIT(ci, JERR_NO_IMAGE);
    if (ci->image_width > NAS__IMAGE_MAX_SIDE || ci->image_height > NAS__IMAGE_MAX_SIDE ||
        (long)ci->image_width * (long)ci->image_height > max_pixels) {
        snprintf(j->msg, sizeof j->msg, "image too large (%ux%u)", (unsigned)ci->image_width,
                 (unsigned)ci->image_height);
        longjmp(j->jb, 1);
    }
    if (ci->jpeg_color_space == JCS_CMYK || ci->jpeg_color_space == JCS_YCCK) {
        snprintf(j->msg, sizeof j->msg, "CMYK images are not supported (convert to RGB)");
        longjmp(j->jb, 1);
    }
    ci->out_color_space = ci->jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
    ci->dct_method = JDCT_ISLOW;
    jpeg_start_decompress(ci);
    int c = ci->output_components;
    size_t stride = (size_t)ci->output_width * (size_t)c;
    if (c != 1 && c != 3)
        ERREXIT(ci, JERR_CONVERSION_NOTIMPL);
    j->px = malloc(stride * ci->output_height);
    if (!j->px)
        ERREXIT1(ci, JERR_OUT_OF_MEMORY, 0);
    while (ci->output_scanline < ci->output_height) {
        JSAMPROW row = j->px + (size_t)ci->output_scanline * stride;
        if (jpeg_read_scanlines(ci, &row, 1) != 1)
            ERREXIT(ci, JERR_INPUT_EOF);
    }
    jpeg_finish_decompress(ci);
    im->h = (int)ci->output_height;
    im->w = (int)ci->output_width;
    im->c = c;
}

static int decode_jpeg(const uint8_t *buf, size_t len, const char *name, long max_pixels,
                       nas__image *im, nas_error *err)
{
    jpeg_job *j = calloc(1, sizeof *j);
    if (!j)
        return nas_error_set(err, NAS_ENOMEM, "out of memory decoding %s", name);
    j->ci.err = jpeg_std_error(&j->pub);
    j->pub.error_exit = jpeg_on_error;
    j->pub.emit_message = jpeg_on_message;
    int rc = NAS_OK;
    if (setjmp(j->jb) == 0)
        jpeg_decode_body(j, buf, len, max_pixels, im);
    else
        rc = nas_error_set(err, NAS_EFORMAT, "%s: corrupt JPEG: %s", name, j->msg);
    if (!rc && j->bad_warning)
        rc = nas_error_set(err, NAS_EFORMAT, "%s: corrupt JPEG: %s", name, j->msg);
    jpeg_destroy_decompress(&j->ci);
    rc = hand_over(rc, j->px, im);
    free(j);
    return rc;
}

/* ---- entry points ------------------------------------------------------- */

int nas__image_decode(const uint8_t *buf, size_t len, const char *name, long max_pixels,
                      nas__image *out, nas_error *err)
{
    memset(out, 0, sizeof *out);
    if (max_pixels <= 0 || max_pixels > NAS__IMAGE_MAX_PIXELS)
        max_pixels = NAS__IMAGE_MAX_PIXELS;
    if (len >= 8 && png_sig_cmp(buf, 0, 8) == 0)
        return decode_png(buf, len, name, max_pixels, out, err);
    if (len >= 3 && buf[0] == 0xFF && buf[1] == 0xD8 && buf[2] == 0xFF)
        return decode_jpeg(buf, len, name, max_pixels, out, err);
    return nas_error_set(err, NAS_EFORMAT, "%s: neither a PNG nor a JPEG file (its first bytes "
                         "are not a PNG or JPEG signature)", name);
}

/* The two source taps of output coordinate i for a scale s = side / out
 * (half-pixel centres: (i + 0.5) * s - 0.5, clamped at 0): *i0, *i1 (the
 * next, clamped to the edge); returns the weight of *i1. */
static float src_taps(int i, float s, int side, int *i0, int *i1)
{
    float f = ((float)i + 0.5f) * s - 0.5f;
    if (f < 0)
        f = 0;
    *i0 = (int)f;
    *i1 = *i0 + 1 < side ? *i0 + 1 : side - 1;
    return f - (float)*i0;
}

void nas__image_resize(const uint8_t *src, int h, int w, int c, uint8_t *dst, int oh, int ow)
{
    if (oh == h && ow == w) {
        memcpy(dst, src, (size_t)h * w * c);
        return;
    }
    const float sy = (float)h / (float)oh, sx = (float)w / (float)ow;
    for (int y = 0; y < oh; y++) {
        int y0, y1;
        float ay = src_taps(y, sy, h, &y0, &y1);
        for (int x = 0; x < ow; x++) {
            int x0, x1;
            float ax = src_taps(x, sx, w, &x0, &x1);
            for (int k = 0; k < c; k++) {
                float p00 = src[((size_t)y0 * w + x0) * c + k], p01 = src[((size_t)y0 * w + x1) * c + k];
                float p10 = src[((size_t)y1 * w + x0) * c + k], p11 = src[((size_t)y1 * w + x1) * c + k];
                float top = p00 + (p01 - p00) * ax, bot = p10 + (p11 - p10) * ax;
                float v = top + (bot - top) * ay + 0.5f;
                dst[((size_t)y * ow + x) * c + k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
    }
}
