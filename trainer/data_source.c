/*
 * trainer/data_source.c - data sources (issue 16): nas_data_read picks
 * the reader of data.format; the split, the normalisation and the gather
 * into the float32 sets the trainer reads are the same for every format.
 * nas/data.h describes the formats, docs/data.md the whole pipeline.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "trainer/data_impl.h"

/* Stream of PCG32 the split uses ("split" in ASCII; as nas_dataset_split). */
#define SPLIT_STREAM 0x73706c6974ull

nas_rawset *nas__rawset_new(const char *path)
{
    nas_rawset *r = calloc(1, sizeof *r);
    if (r)
        snprintf(r->path, sizeof r->path, "%s", path ? path : "");
    return r;
}

void nas_rawset_destroy(nas_rawset *r)
{
    if (!r)
        return;
    if (r->map)
        munmap(r->map, r->map_len);
    free(r->heap);
    free(r->labels);
    free(r);
}

int nas__labels_check(const uint8_t *labels, int n, int *classes, const char *path, nas_error *err)
{
    if (*classes > 0) {
        for (int i = 0; i < n; i++)
            if (labels[i] >= *classes)
                return nas_error_set(err, NAS_EFORMAT,
                                     "%s: label %d of image %d is out of range 0..%d", path,
                                     labels[i], i, *classes - 1);
        return NAS_OK;
    }
    int mx = 0;
    for (int i = 0; i < n; i++)
        if (labels[i] > mx)
            mx = labels[i];
    *classes = mx + 1 < 2 ? 2 : mx + 1;
    return NAS_OK;
}

static int fmnist_file(const char *dir, const char *name, char *out, size_t n)
{
    struct stat st;
    snprintf(out, n, "%s/%s.gz", dir, name);
    if (stat(out, &st) == 0)
        return 1;
    snprintf(out, n, "%s/%s", dir, name);
    return 0;
}

/* nas_data_read; pixels = 0: a probe (nas_data_space_input): idx and
 * CIFAR skip the image bytes (nas__read_idx, nas__read_cifar); npy maps
 * them anyway and the folder reader decodes them (C is 3 if any image is
 * RGB) into its cache, which the full read then maps. */
static int data_read(const nas_data_conf *dc, int test, int pixels, nas_rawset **out, nas_error *err)
{
    if (out)
        *out = NULL;
    if (!dc || !out)
        return nas_error_set(err, NAS_EINVAL, "nas_data_read: NULL argument");
    const char *f = dc->format;
    if (!strcmp(f, "cifar"))
        return nas__read_cifar(dc->dir, test, pixels, out, err);
    if (!strcmp(f, "folder"))
        return nas__read_folder(dc, test, out, err);
    const char *img = test ? dc->test_images : dc->train_images;
    const char *lab = test ? dc->test_labels : dc->train_labels;
    if (!strcmp(f, "idx") || !strcmp(f, "npy")) {
        if (!img[0] || !lab[0]) {
            if (test)
                return NAS_OK;
            return nas_error_set(err, NAS_EINVAL, "data.format = \"%s\" needs data.train_images and "
                                 "data.train_labels", f);
        }
        return f[0] == 'i' ? nas__read_idx(img, lab, 0, pixels, out, err)
                           : nas__read_npy(img, lab, dc->layout, out, err);
    }
    if (f[0] == '\0') { /* the shorthand: Fashion-MNIST's idx files in dc->dir */
        char pi[NAS_PATH_MAX + 40], pl[NAS_PATH_MAX + 40];
        fmnist_file(dc->dir, test ? "t10k-images-idx3-ubyte" : "train-images-idx3-ubyte", pi, sizeof pi);
        fmnist_file(dc->dir, test ? "t10k-labels-idx1-ubyte" : "train-labels-idx1-ubyte", pl, sizeof pl);
        int rc = nas__read_idx(pi, pl, 0, pixels, out, err);
        if (!rc)
            (*out)->classes = 10;
        return rc;
    }
    return nas_error_set(err, NAS_EINVAL, "unknown data.format \"%s\" (expected idx, npy, cifar or "
                         "folder)", f);
}

int nas_data_read(const nas_data_conf *dc, int test, nas_rawset **out, nas_error *err)
{
    return data_read(dc, test, 1, out, err);
}

float nas_rawset_pixel(const nas_rawset *r, size_t i, int c, int y, int x)
{
    size_t k = r->nhwc ? (((i * r->h + y) * r->w + x) * r->c + c)
                       : (((i * r->c + c) * r->h + y) * r->w + x);
    if (!r->f32)
        return (float)((const uint8_t *)r->pixels)[k];
    float v;
    memcpy(&v, (const char *)r->pixels + k * sizeof v, sizeof v);
    return v;
}

int nas_data_split(const nas_rawset *r, int n_valid, int n_train, uint64_t seed, uint32_t **valid,
                   uint32_t **train, int *n_train_out, uint32_t **rest, int *n_rest, nas_error *err)
{
    *valid = *train = NULL;
    if (rest)
        *rest = NULL;
    if (n_valid < 1 || n_valid >= r->n)
        return nas_error_set(err, NAS_ECONFIG, "data.valid = %d does not fit the %d training images "
                             "of %s, expected 1..%d", n_valid, r->n, r->path, r->n - 1);
    int left = r->n - n_valid;
    if (n_train > left)
        return nas_error_set(err, NAS_ECONFIG, "data.train_subset = %d is more than the %d training "
                             "images of %s left after data.valid = %d", n_train, left, r->path,
                             n_valid);
    if (n_train == 0)
        n_train = left;
    uint32_t *idx = malloc((size_t)r->n * sizeof *idx);
    uint32_t *va = malloc((size_t)n_valid * sizeof *va), *rs = malloc((size_t)left * sizeof *rs);
    long long count[256] = {0}, quota[256] = {0};
    if (!idx || !va || !rs) {
        free(idx), free(va), free(rs);
        return nas_error_set(err, NAS_ENOMEM, "out of memory splitting %d images", r->n);
    }
    for (int i = 0; i < r->n; i++) {
        idx[i] = (uint32_t)i;
        count[r->labels[i]]++;
    }
    /* quotas proportional to class sizes; the remainder to the largest
     * fractional parts (ties: the lower class) */
    long long given = 0;
    double frac[256];
    for (int k = 0; k < 256; k++) {
        quota[k] = count[k] * n_valid / r->n;
        frac[k] = (double)(count[k] * n_valid % r->n);
        given += quota[k];
    }
    while (given < n_valid) {
        int best = -1;
        for (int k = 0; k < 256; k++)
            if (quota[k] < count[k] && (best < 0 || frac[k] > frac[best]))
                best = k;
        quota[best]++;
        frac[best] = -1;
        given++;
    }
    nas_rng g;
    nas_rng_seed(&g, seed, SPLIT_STREAM);
    nas_rng_shuffle(&g, idx, (size_t)r->n);
    int nv = 0, nr = 0;
    for (int i = 0; i < r->n; i++) {
        int k = r->labels[idx[i]];
        if (quota[k] > 0) {
            quota[k]--;
            va[nv++] = idx[i];
        } else {
            rs[nr++] = idx[i];
        }
    }
    free(idx);
    uint32_t *tr = malloc((size_t)n_train * sizeof *tr);
    if (!tr) {
        free(va), free(rs);
        return nas_error_set(err, NAS_ENOMEM, "out of memory splitting %d images", r->n);
    }
    memcpy(tr, rs, (size_t)n_train * sizeof *tr);
    *valid = va;
    *train = tr;
    if (n_train_out)
        *n_train_out = n_train;
    if (rest) {
        *rest = rs;
        if (n_rest)
            *n_rest = nr;
    } else {
        free(rs);
    }
    return NAS_OK;
}

void nas_data_norm_compute(const nas_rawset *r, const uint32_t *idx, int n, nas_data_info *info)
{
    memset(info, 0, sizeof *info);
    info->c = r->c;
    info->h = r->h;
    info->w = r->w;
    info->classes = r->classes;
    info->u8 = !r->f32;
    size_t hw = (size_t)r->h * r->w;
    for (int c = 0; c < r->c && c < NAS_DATA_MAX_C; c++) {
        double s = 0, sq = 0;
        unsigned long long si = 0, sqi = 0;
        for (int j = 0; j < n; j++) {
            size_t i = idx ? idx[j] : (size_t)j;
            for (size_t p = 0; p < hw; p++) {
                float v = nas_rawset_pixel(r, i, c, (int)(p / r->w), (int)(p % r->w));
                if (r->f32) {
                    s += v;
                    sq += (double)v * v;
                } else {
                    unsigned u = (unsigned)v;
                    si += u;
                    sqi += (unsigned long long)u * u;
                }
            }
        }
        double cnt = (double)n * (double)hw, mean, var;
        if (n == 0) { /* the shape only (mean and std given): nothing read */
            info->mean[c] = 0.0f;
            info->std[c] = 1.0f;
            continue;
        }
        if (r->f32) {
            mean = s / cnt;
            var = sq / cnt - mean * mean;
        } else {
            mean = (double)si / cnt / 255.0;
            var = (double)sqi / cnt / (255.0 * 255.0) - mean * mean;
        }
        double sd = var > 0 ? sqrt(var) : 0;
        info->mean[c] = (float)mean;
        info->std[c] = sd > 1e-12 ? (float)sd : 1.0f;
    }
}

/* float32 images: the first NaN or infinite pixel of images idx[0..n)
 * (idx NULL: 0..n-1) as NAS_EFORMAT naming the image and the pixel, else
 * NAS_OK (uint8 images are always finite). Normalised, such a pixel makes
 * every loss and weight NaN, which a trial would report as its training
 * diverging. */
static int check_finite(const nas_rawset *r, const uint32_t *idx, int n, nas_error *err)
{
    if (!r->f32)
        return NAS_OK;
    for (int j = 0; j < n; j++) {
        size_t i = idx ? idx[j] : (size_t)j;
        for (int c = 0; c < r->c; c++)
            for (int y = 0; y < r->h; y++)
                for (int x = 0; x < r->w; x++) {
                    float v = nas_rawset_pixel(r, i, c, y, x);
                    if (!isfinite(v))
                        return nas_error_set(err, NAS_EFORMAT, "%s: image %zu has a pixel that "
                                             "is %s (channel %d, row %d, column %d): float32 "
                                             "images must hold finite numbers", r->path, i,
                                             isnan(v) ? "NaN" : "infinite", c, y, x);
                }
    }
    return NAS_OK;
}

int nas_data_gather(const nas_rawset *r, const uint32_t *idx, int n, const nas_data_info *info,
                    nas_dataset **out, nas_error *err)
{
    *out = NULL;
    if (info->c != r->c || info->h != r->h || info->w != r->w)
        return nas_error_set(err, NAS_EFORMAT, "%s: images are %dx%dx%d (C,H,W), the experiment's "
                             "are %dx%dx%d", r->path, r->c, r->h, r->w, info->c, info->h, info->w);
    for (int j = 0; j < n; j++) { /* nas train: data that gained classes since the search */
        int lab = r->labels[idx ? idx[j] : (uint32_t)j];
        if (lab >= info->classes) /* idx, npy: the label file, not the images' */
            return nas_error_set(err, NAS_EFORMAT, "%s: label %d of image %u is out of range "
                                 "0..%d: the experiment's network has %d classes (did the data "
                                 "gain classes since the search?)",
                                 r->labels_path[0] ? r->labels_path : r->path, lab,
                                 idx ? idx[j] : (unsigned)j, info->classes - 1, info->classes);
    }
    int rc = check_finite(r, idx, n, err);
    if (rc)
        return rc;
    nas_dataset *d = calloc(1, sizeof *d);
    size_t per = (size_t)r->c * r->h * r->w;
    if (d) {
        d->images = malloc(((size_t)n * per > 0 ? (size_t)n * per : 1) * sizeof(float));
        d->labels = malloc(n ? (size_t)n : 1);
    }
    if (!d || !d->images || !d->labels) {
        nas_dataset_destroy(d);
        return nas_error_set(err, NAS_ENOMEM, "out of memory gathering %d images of %s", n, r->path);
    }
    d->n = n;
    d->c = r->c;
    d->h = r->h;
    d->w = r->w;
    d->classes = info->classes;
    d->owns = 1;
    const float scale = r->f32 ? 1.0f : 1.0f / 255.0f;
    float mean[NAS_DATA_MAX_C], inv[NAS_DATA_MAX_C];
    for (int c = 0; c < r->c; c++) {
        mean[c] = info->mean[c];
        inv[c] = 1.0f / info->std[c];
        d->black[c] = (0.0f * scale - mean[c]) * inv[c];
    }
    size_t hw = (size_t)r->h * r->w;
    for (int j = 0; j < n; j++) {
        size_t i = idx ? idx[j] : (size_t)j;
        float *o = d->images + (size_t)j * per;
        if (!r->f32 && !r->nhwc) { /* the common case, without per-pixel index arithmetic */
            const uint8_t *p = (const uint8_t *)r->pixels + i * per;
            for (int c = 0; c < r->c; c++)
                for (size_t k = 0; k < hw; k++)
                    o[c * hw + k] = ((float)p[c * hw + k] * scale - mean[c]) * inv[c];
        } else {
            for (int c = 0; c < r->c; c++)
                for (size_t k = 0; k < hw; k++)
                    o[c * hw + k] =
                        (nas_rawset_pixel(r, i, c, (int)(k / r->w), (int)(k % r->w)) * scale - mean[c]) *
                        inv[c];
        }
        d->labels[j] = r->labels[i];
    }
    *out = d;
    return NAS_OK;
}

/* A configuration error (rc NAS_ECONFIG) about the key space.conf set at
 * `line` of dc->conf_file: err's message gets that "FILE:LINE: " in front;
 * `hint` (may be NULL) is appended. Other codes, or no line: rc as it is. */
static int at_key(const nas_data_conf *dc, int line, const char *hint, int rc, nas_error *err)
{
    if (rc != NAS_ECONFIG || (!hint && (line <= 0 || !dc->conf_file[0])))
        return rc;
    char m[sizeof err->msg];
    memcpy(m, err->msg, sizeof m);
    if (line > 0 && dc->conf_file[0])
        return nas_error_set(err, rc, "%s:%d: %s%s", dc->conf_file, line, m, hint ? hint : "");
    return nas_error_set(err, rc, "%s%s", m, hint);
}

int nas_data_load(const nas_data_conf *dc, uint64_t seed, nas_data_info *info, nas_dataset **train,
                  nas_dataset **valid, nas_error *err)
{
    *train = *valid = NULL;
    if (dc->format[0] == '\0' && dc->valid_fraction <= 0) { /* the shorthand, as before issue 16 */
        nas_dataset *full = NULL;
        int rc = nas_fmnist_load(dc->dir, "train", &full, err);
        if (!rc && dc->valid <= 0)
            rc = nas_error_set(err, NAS_ECONFIG, "data.valid must hold out at least one image");
        if (!rc)
            rc = nas_dataset_split(full, dc->valid, dc->train_subset, seed, train, valid, err);
        nas_dataset_destroy(full);
        nas_data_info_fmnist(info);
        return rc;
    }
    nas_rawset *r = NULL;
    uint32_t *va = NULL, *tr = NULL, *rest = NULL;
    int n_tr = 0, n_rest = 0;
    int n_va = 0;
    int rc = nas_data_read(dc, 0, &r, err);
    if (!rc) {
        n_va = nas_config_valid_count(dc, r->n);
        rc = nas_data_split(r, n_va, dc->train_subset, seed, &va, &tr, &n_tr, &rest, &n_rest, err);
        if (n_va < 1 || n_va >= r->n) /* data.valid; else data.train_subset */
            rc = at_key(dc, dc->line_valid,
                        dc->valid_set ? NULL
                                      : " (data.valid is not set: its default is a count of "
                                        "5000 images; set a smaller count, or a fraction such "
                                        "as data.valid = 0.2)",
                        rc, err);
        else
            rc = at_key(dc, dc->line_train_subset, NULL, rc, err);
    }
    if (!rc && dc->format[0] == '\0') { /* the shorthand with a fraction: its fixed normalisation */
        nas_data_info_fmnist(info);
    } else if (!rc) {
        /* given in space.conf: the images are not read for statistics (a
         * memory-mapped file larger than memory stays on disk) */
        nas_data_norm_compute(r, rest, dc->n_mean > 0 ? 0 : n_rest, info);
        for (int c = 0; c < r->c && dc->n_mean == 0 && !rc; c++)
            if (!isfinite(info->mean[c]) || !isfinite(info->std[c])) {
                /* a NaN or infinite pixel (named), else values too large to square */
                rc = check_finite(r, rest, n_rest, err);
                if (!rc)
                    rc = nas_error_set(err, NAS_EFORMAT, "%s: the training images' channel %d "
                                       "has mean %g and std %g: float32 pixels this large "
                                       "cannot be normalised, expected values of a moderate "
                                       "range such as 0..1 or 0..255", r->path, c,
                                       (double)info->mean[c], (double)info->std[c]);
            }
        if (dc->n_mean > 0) { /* given in space.conf: one per channel */
            if (dc->n_mean != r->c || dc->n_std != r->c)
                rc = at_key(dc, dc->line_mean, NULL,
                            nas_error_set(err, NAS_ECONFIG, "data.mean and data.std have %d and %d "
                                          "values, but the images of %s have %d channel(s)",
                                          dc->n_mean, dc->n_std, r->path, r->c),
                            err);
            for (int c = 0; c < r->c && !rc; c++) {
                info->mean[c] = (float)dc->mean[c];
                info->std[c] = (float)dc->std[c];
            }
        }
    }
    if (!rc)
        rc = nas_data_gather(r, tr, n_tr, info, train, err);
    if (!rc)
        rc = nas_data_gather(r, va, n_va, info, valid, err);
    if (rc) {
        nas_dataset_destroy(*train);
        *train = NULL;
    }
    free(va), free(tr), free(rest);
    nas_rawset_destroy(r);
    return rc;
}

int nas_data_load_test(const nas_data_conf *dc, const nas_data_info *info, nas_dataset **test,
                       nas_error *err)
{
    *test = NULL;
    if (dc->format[0] == '\0')
        return nas_fmnist_load(dc->dir, "test", test, err);
    nas_rawset *r = NULL;
    int rc = nas_data_read(dc, 1, &r, err);
    if (rc || !r)
        return rc;
    if (!strcmp(dc->format, "folder") && r->c == 1 && info->c == 3) /* grey test, RGB training */
        rc = nas__rawset_grey_to_rgb(r, err);
    /* idx and npy keep the labels in their own file: name it, not the images' */
    const char *lpath = r->labels_path[0] ? r->labels_path : r->path;
    for (int i = 0; i < r->n && !rc; i++)
        if (r->labels[i] >= info->classes)
            rc = nas_error_set(err, NAS_EFORMAT, "%s: label %d of test image %d is out of range 0..%d "
                               "(the training data has %d classes)", lpath, r->labels[i], i,
                               info->classes - 1, info->classes);
    if (!rc)
        rc = nas_data_gather(r, NULL, r->n, info, test, err);
    nas_rawset_destroy(r);
    return rc;
}

int nas_data_space_input(const nas_data_conf *dc, nas_space_desc *sd, nas_error *err)
{
    if (!dc->format[0] || (sd->in_c > 0 && sd->classes > 0))
        return NAS_OK;
    nas_rawset *r = NULL;
    int rc = data_read(dc, 0, 0, &r, err); /* a probe: no pixels read where the format allows */
    if (rc)
        return rc;
    sd->data_c = r->c;
    sd->data_h = r->h;
    sd->data_w = r->w;
    sd->data_classes = r->classes;
    nas_rawset_destroy(r);
    return NAS_OK;
}
