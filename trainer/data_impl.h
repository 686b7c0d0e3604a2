/*
 * trainer/data_impl.h - the readers behind nas_data_read (internal; one
 * file per format: data_idx.c, data_npy.c, data_cifar.c, data_folder.c with
 * data_image.c) and the raw-set
 * helpers they share (data_source.c).
 */
#ifndef NAS_TRAINER_DATA_IMPL_H
#define NAS_TRAINER_DATA_IMPL_H

#include "nas/data.h"

/* A zeroed raw set with `path` copied in, or NULL (out of memory). */
nas_rawset *nas__rawset_new(const char *path);

/* Check labels[0..n) < classes, or set classes to the largest + 1 when
 * classes is 0 (at least 2). NAS_EFORMAT naming `path` otherwise. */
int nas__labels_check(const uint8_t *labels, int n, int *classes, const char *path,
                      nas_error *err);

/* idx images `images` and labels `labels` (gzip or plain; data_idx.c).
 * side > 0: the images must be side x side (Fashion-MNIST's 28), checked
 * before their pixels are read. pixels = 0: a probe: the headers, the
 * size checks and the labels (for the class count) only; r->pixels is
 * NULL, and damage inside the image bytes (a truncated or corrupt gzip
 * stream) is left to the full read. Errors: NAS_EIO (cannot open or read),
 * NAS_EFORMAT (bad magic, implausible or mismatched counts, another size,
 * truncated), NAS_ENOMEM. */
int nas__read_idx(const char *images, const char *labels, int side, int pixels, nas_rawset **out,
                  nas_error *err);

/* npy images (memory-mapped; layout "" = inferred) and labels. */
int nas__read_npy(const char *images, const char *labels, const char *layout, nas_rawset **out,
                  nas_error *err);

/* CIFAR-10 or -100 binary batches in `dir` (test: the test batch; *out
 * NULL when it is absent). pixels = 0: a probe: the files and their sizes
 * (whole records) are checked and counted, nothing is read (r->pixels and
 * r->labels NULL; the classes are the variant's, 10 or 100; a label out
 * of range is left to the full read). */
int nas__read_cifar(const char *dir, int test, int pixels, nas_rawset **out, nas_error *err);

/* ---- folder (data_image.c, data_folder.c) ---------------------------- */

/* A decoded image: h rows of w pixels of c channels (1 grey, 3 RGB),
 * interleaved H,W,C, 8 bits; px is malloc'd (the caller frees it). */
typedef struct nas__image {
    int h, w, c;
    uint8_t *px;
} nas__image;

/* Largest side and pixel count the folder reader decodes. */
#define NAS__IMAGE_MAX_SIDE 8192
#define NAS__IMAGE_MAX_PIXELS (1L << 26)

/*
 * Decode one PNG (libpng, "PNG Specification", W3C 2003) or JPEG (libjpeg-
 * turbo, ITU T.81 baseline/progressive) held in buf[0..len), told apart by
 * its signature. Grey (PNG grey or grey+alpha, JPEG one component) gives
 * c = 1, anything else c = 3: palettes expanded to RGB, alpha and tRNS
 * transparency dropped, 16-bit samples scaled to 8 (png_set_scale_16), JPEG
 * with the accurate integer IDCT (JDCT_ISLOW). `name` is used in messages;
 * images over `max_pixels` (or NAS__IMAGE_MAX_SIDE a side) are refused.
 * Errors: NAS_EFORMAT naming `name` (neither format, corrupt or truncated
 * data, CMYK JPEG, too large), NAS_ENOMEM.
 */
int nas__image_decode(const uint8_t *buf, size_t len, const char *name, long max_pixels,
                      nas__image *out, nas_error *err);

/* Bilinear resize of an H,W,C image src (h x w) into dst (oh x ow, same c),
 * half-pixel centres (source coordinate (x + 0.5) * w / ow - 0.5, clamped
 * to the edges; as OpenCV's INTER_LINEAR and PyTorch's align_corners =
 * False), no antialiasing, rounded to nearest. A same-size call copies. */
void nas__image_resize(const uint8_t *src, int h, int w, int c, uint8_t *dst, int oh, int ow);

/* The folder reader of data.format = "folder" (nas/data.h); *out NULL
 * when test = 1 and dc->dir has no test/. */
int nas__read_folder(const nas_data_conf *dc, int test, nas_rawset **out, nas_error *err);

/* A one-channel uint8 N,C,H,W raw set in memory becomes three channels
 * (the grey plane replicated): a grey test folder for an RGB training
 * folder. NAS_ENOMEM, NAS_EINVAL (not such a set). */
int nas__rawset_grey_to_rgb(nas_rawset *r, nas_error *err);

#endif
