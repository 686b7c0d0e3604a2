/*
 * nas/data.h - bring your own data (issue 16): one reader per on-disk
 * format fills one raw image set (uint8 or float32, N images of C,H,W,
 * held in memory or memory-mapped) with labels; splitting, normalisation
 * and the float32 N,C,H,W sets the trainer reads (nas_dataset,
 * nas/trainer.h) are separate steps. docs/data.md describes the formats,
 * the split and the normalisation.
 *
 * Formats (data.format in space.conf):
 *   idx    Y. LeCun's idx files of the MNIST family, gzip or plain (zlib):
 *          images magic 0x00000803 [N,H,W] uint8, labels 0x00000801 [N];
 *          classes = largest label + 1.
 *   npy    NumPy .npy (NEP 1, versions 1-3): images uint8 or float32 in
 *          N,H,W / N,H,W,C / N,C,H,W (data.layout, or inferred: 3 dims
 *          N,H,W; 4 dims N,C,H,W when dim 1 <= 4 and the last dim is not,
 *          else N,H,W,C), C order, little-endian; labels uint8/int32/int64
 *          [N]; classes = largest label + 1. The image file is memory-mapped
 *          (mmap), not read: only the images a split takes are ever copied.
 *   cifar  CIFAR-10 / CIFAR-100 binary batches in data.dir (Krizhevsky,
 *          "Learning Multiple Layers of Features from Tiny Images", 2009):
 *          records of 1 label byte (CIFAR-10: data_batch_1..5.bin,
 *          test_batch.bin; 10 classes) or 2 (CIFAR-100: coarse, fine;
 *          train.bin, test.bin; the fine label, 100 classes), then 3072
 *          pixel bytes: 1024 red, 1024 green, 1024 blue, rows of 32.
 *   folder data.dir/train/ (and optionally test/) with one subfolder per
 *          class: class k = the k-th subfolder in byte order (strcmp),
 *          images in byte order of their names within a class. PNG
 *          (libpng) or JPEG (libjpeg-turbo) files, told apart by their
 *          first bytes; C = 1 when every image is grey, else 3 (grey
 *          images replicated); alpha dropped, palettes expanded, 16 bits
 *          scaled to 8. data.size resizes (bilinear, half-pixel centres);
 *          without it the images must share one size. The decoded set is
 *          cached as uint8 N,C,H,W .npy files in dc->cache_dir, keyed by a
 *          fingerprint of the folder (names, sizes, mtimes, data.size);
 *          later reads map the cache (docs/data.md).
 *
 * Every reader checks what it reads and fails with NAS_EFORMAT naming the
 * file: truncated data, a wrong magic number, counts that differ, a label
 * at or above the class count, an unsupported dtype or shape; NAS_EIO when
 * a file cannot be opened.
 */
#ifndef NAS_DATA_H
#define NAS_DATA_H

#include <stddef.h>
#include <stdint.h>
#include "nas/space.h"
#include "nas/trainer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Raw images as a reader found them; owns its memory or mapping. */
typedef struct nas_rawset {
    int n, c, h, w;
    int classes;         /* the format's (CIFAR) or the largest label + 1 */
    int f32;             /* 0: uint8 pixels, 1: float32 */
    int nhwc;            /* 1: stored N,H,W,C (npy), 0: N,C,H,W */
    const void *pixels;  /* n*c*h*w values */
    uint8_t *labels;     /* n, 0..classes-1 */
    char path[NAS_PATH_MAX]; /* the image file (or directory), for messages */
    char labels_path[NAS_PATH_MAX]; /* idx, npy: the label file, for messages about a
                                       label ("": the labels are in `path`) */
    /* private */
    void *heap;
    void *map;
    size_t map_len;
} nas_rawset;

/*
 * Read the training (test = 0) or test (test = 1) images of `dc`
 * (dc->format "idx", "npy", "cifar" or "folder"; "" reads Fashion-MNIST's idx files
 * from dc->dir). *out is NULL when test = 1 and dc names no test files.
 * Errors: NAS_EIO, NAS_EFORMAT (message names the file), NAS_EINVAL
 * (unknown format), NAS_ENOMEM.
 */
int nas_data_read(const nas_data_conf *dc, int test, nas_rawset **out, nas_error *err);
void nas_rawset_destroy(nas_rawset *r); /* NULL is a no-op */

/* Put the folder reader's decode cache beside the database `db_path`:
 * dc->cache_dir = "<db_path>.data" (as the kept weights go to
 * "<db_path>.weights"). nas run calls it; without a database the cache
 * is "<config dir>/nas-data" (nas_config_load). */
void nas_data_cache_beside(nas_data_conf *dc, const char *db_path);

/* Pixel (c, y, x) of image i, unscaled (0..255 for uint8). */
float nas_rawset_pixel(const nas_rawset *r, size_t i, int c, int y, int x);

/*
 * Seeded split stratified by class: the indices 0..n-1 are shuffled with
 * PCG32(seed, "split") (as nas_dataset_split) and, in that order, each
 * image goes to validation while its class's quota lasts (quotas
 * proportional to the class sizes, largest remainders first), else to the
 * rest. *train gets the first n_train of the rest (0 = all of it), *rest
 * (may be NULL) all of it. Caller frees the arrays.
 * Errors: NAS_ECONFIG (the counts do not fit the data: names the file),
 * NAS_ENOMEM.
 */
int nas_data_split(const nas_rawset *r, int n_valid, int n_train, uint64_t seed,
                   uint32_t **valid, uint32_t **train, int *n_train_out, uint32_t **rest,
                   int *n_rest, nas_error *err);

/* Per-channel mean and standard deviation (population) of images idx[0..n)
 * after scaling (1/255 for uint8), into info->mean/std (a zero std becomes
 * 1; n = 0: mean 0, std 1, no image read); sets info->c, h, w, classes, u8
 * from r. Sums in double, in index order, so the result is deterministic. */
void nas_data_norm_compute(const nas_rawset *r, const uint32_t *idx, int n, nas_data_info *info);

/* Images idx[0..n) (idx NULL: 0..n-1) as a float32 N,C,H,W nas_dataset
 * normalised with `info`: x' = (x * scale - mean[c]) * (1 / std[c]) in
 * float, scale = 1/255 for uint8. Errors: NAS_EFORMAT (info's shape is not
 * r's, or a gathered label is info->classes or more: the message names
 * r->labels_path when set, else r->path; a NaN or infinite float32 pixel,
 * naming the image), NAS_ENOMEM. */
int nas_data_gather(const nas_rawset *r, const uint32_t *idx, int n, const nas_data_info *info,
                    nas_dataset **out, nas_error *err);

/*
 * The search's data: read dc's training images, split them (data.valid, a
 * count or a fraction: nas_config_valid_count; data.train_subset;
 * nas_data_split), compute the normalisation on the training split (every
 * image not held out), and gather both sets into *train and *valid; *info
 * gets the shape, classes and normalisation. The shorthand (dc->format
 * "") keeps Fashion-MNIST's fixed normalisation, and with a count its
 * unstratified split (nas_fmnist_load, nas_dataset_split), so old
 * experiments train bit-identically; with a fraction it is split as
 * every format is. Errors: those of the reader and the split; NAS_ENOMEM.
 */
int nas_data_load(const nas_data_conf *dc, uint64_t seed, nas_data_info *info, nas_dataset **train,
                  nas_dataset **valid, nas_error *err);

/* The test images of dc normalised with `info` (the experiment's), whose
 * shape and classes they must match. *test is NULL when dc has no test
 * files. Errors: NAS_EFORMAT (another shape; a label >= info->classes, naming
 * the label file for idx and npy), those of the reader. */
int nas_data_load_test(const nas_data_conf *dc, const nas_data_info *info, nas_dataset **test,
                       nas_error *err);

/*
 * Issue 28: a space's input and classes default to the data's. When sd
 * (a chain space, or a cell space for `nas space`'s counts) has no
 * space.input or space.classes and dc names its own files (dc->format
 * set), probe dc's training data and set sd->data_c, data_h, data_w
 * (the images' C, H, W, after data.size) and data_classes (the largest
 * label + 1), which nas_space_input and the lowering use where
 * space.input / space.classes are not set. The probe reads no image bytes
 * where the format allows: idx reads its headers and labels, CIFAR checks
 * its files' sizes (the classes are the variant's), npy maps its images
 * and reads its labels (as the full read); the folder reader decodes every
 * image (C is 3 if any is RGB), into its cache when dc->cache_dir is set.
 * Shapes, classes and every message are those of nas_data_read; damage
 * inside the image bytes (a corrupt gzip stream, a CIFAR label out of
 * range) is reported by the full read that follows, not by the probe.
 * The shorthand (Fashion-MNIST, 1 x 28 x 28, 10 classes) is left as it
 * is, unread. nas run calls it for chain spaces only (a cell network takes
 * its shape from the loaded data). Errors: the reader's (NAS_EIO, NAS_EFORMAT naming the file),
 * NAS_ENOMEM.
 */
int nas_data_space_input(const nas_data_conf *dc, nas_space_desc *sd, nas_error *err);

#ifdef __cplusplus
}
#endif
#endif /* NAS_DATA_H */
