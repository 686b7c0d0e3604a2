/*
 * trainer/data.c - Fashion-MNIST's loader and deterministic splits.
 *
 * File format: Y. LeCun's idx format as used by MNIST and by Fashion-MNIST
 * (Xiao, Rasul & Vollgraf 2017): a big-endian header (magic 0x00000803 for
 * images with 3 dimensions, 0x00000801 for labels with 1), the dimension
 * sizes as big-endian uint32, then unsigned bytes, read by the idx reader
 * of data.format = "idx" (data_idx.c: gzip-compressed or plain), so NAME.gz
 * is tried first and NAME second.
 */
#include <errno.h>
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* strcmp, strerror, memcpy */
#include <zlib.h>   /* gzopen, gzread: gzip or plain idx files */
#include "nas/trainer.h"
#include "trainer/data_impl.h" /* nas__read_idx, nas__labels_check */

#define FMNIST_MEAN 0.2860f
#define FMNIST_STD 0.3530f
#define FMNIST_CLASSES 10
/* Image side the networks are built for (nas_net_desc in_h, in_w; issue 19). */
#define FMNIST_SIDE 28
/* Stream of PCG32 used by nas_dataset_split ("split" in ASCII). */
#define SPLIT_STREAM 0x73706c6974ull

/* dir/name.gz when gzopen opens it, else dir/name, into path[n]. NAS_EIO
 * naming both paths if neither opens. */
static int idx_path(const char *dir, const char *name, char *path, size_t n, nas_error *err)
{
    for (int plain = 0; plain < 2; plain++) {
        snprintf(path, n, plain ? "%s/%s" : "%s/%s.gz", dir, name);
        gzFile gz = gzopen(path, "rb");
        if (gz) {
            gzclose(gz);
            return NAS_OK;
        }
    }
    int e = errno;
    return nas_error_set(err, NAS_EIO, "cannot open %s/%s.gz or %s: %s", dir, name, path,
                         e ? strerror(e) : "unreadable");
}

void nas_dataset_destroy(nas_dataset *d)
{
    if (!d)
        return;
    if (d->owns) {
        free(d->images);
        free(d->labels);
    }
    free(d);
}

static int dataset_alloc(int n, int c, int h, int w, int classes, nas_dataset **out)
{
    nas_dataset *d = calloc(1, sizeof *d);
    if (!d)
        return NAS_ENOMEM;
    d->n = n;
    d->c = c;
    d->h = h;
    d->w = w;
    d->classes = classes;
    d->owns = 1;
    size_t px = (size_t)n * c * h * w;
    d->images = malloc((px ? px : 1) * sizeof(float));
    d->labels = malloc(n ? (size_t)n : 1);
    if (!d->images || !d->labels) {
        nas_dataset_destroy(d);
        return NAS_ENOMEM;
    }
    *out = d;
    return NAS_OK;
}

int nas_fmnist_load(const char *dir, const char *split, nas_dataset **out, nas_error *err)
{
    if (out)
        *out = NULL;
    if (!dir || !split || !out)
        return nas_error_set(err, NAS_EINVAL, "nas_fmnist_load: NULL argument");
    const char *prefix;
    if (strcmp(split, "train") == 0)
        prefix = "train";
    else if (strcmp(split, "test") == 0)
        prefix = "t10k";
    else
        return nas_error_set(err, NAS_EINVAL, "unknown Fashion-MNIST split '%s' (expected train or test)",
                             split);

    char name[64], pi[1200], pl[1200];
    nas_rawset *r = NULL;
    nas_dataset *d = NULL;
    int rc;
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    if ((rc = idx_path(dir, name, pi, sizeof pi, err)))
        return rc;
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    if ((rc = idx_path(dir, name, pl, sizeof pl, err)) ||
        (rc = nas__read_idx(pi, pl, FMNIST_SIDE, 1, &r, err)))
        return rc;
    int classes = FMNIST_CLASSES;
    if ((rc = nas__labels_check(r->labels, r->n, &classes, pl, err)))
        goto done;
    if ((rc = dataset_alloc(r->n, 1, r->h, r->w, FMNIST_CLASSES, &d))) {
        rc = nas_error_set(err, rc, "out of memory loading %d images", r->n);
        goto done;
    }
    memcpy(d->labels, r->labels, (size_t)r->n);
    const uint8_t *raw = r->pixels;
    size_t px = (size_t)r->n * r->h * r->w;
    const float inv = 1.0f / 255.0f, inv_std = 1.0f / FMNIST_STD;
    for (size_t i = 0; i < px; i++)
        d->images[i] = ((float)raw[i] * inv - FMNIST_MEAN) * inv_std;
    d->black[0] = (0.0f * inv - FMNIST_MEAN) * inv_std;
    *out = d;
    d = NULL;
done:
    nas_rawset_destroy(r);
    nas_dataset_destroy(d);
    return rc;
}

static void copy_rows(const nas_dataset *src, const uint32_t *idx, nas_dataset *dst)
{
    size_t per = (size_t)src->c * src->h * src->w;
    for (int i = 0; i < dst->n; i++) {
        memcpy(dst->images + (size_t)i * per, src->images + (size_t)idx[i] * per,
               per * sizeof(float));
        dst->labels[i] = src->labels[idx[i]];
    }
}

int nas_dataset_split(const nas_dataset *full, int n_valid, int n_train, uint64_t seed,
                      nas_dataset **train, nas_dataset **valid, nas_error *err)
{
    if (train)
        *train = NULL;
    if (valid)
        *valid = NULL;
    if (!full || !train || !valid)
        return nas_error_set(err, NAS_EINVAL, "nas_dataset_split: NULL argument");
    if (n_valid < 0 || n_train < 0 || n_valid > full->n)
        return nas_error_set(err, NAS_EINVAL,
                             "cannot hold out %d validation images from a data set of %d", n_valid,
                             full->n);
    int rest = full->n - n_valid;
    if (n_train == 0)
        n_train = rest;
    if (n_train > rest)
        return nas_error_set(err, NAS_EINVAL,
                             "asked for %d training images but only %d remain after %d for validation",
                             n_train, rest, n_valid);
    uint32_t *idx = malloc(((size_t)full->n + 1) * sizeof *idx);
    if (!idx)
        return nas_error_set(err, NAS_ENOMEM, "out of memory splitting %d images", full->n);
    for (int i = 0; i < full->n; i++)
        idx[i] = (uint32_t)i;
    nas_rng r;
    nas_rng_seed(&r, seed, SPLIT_STREAM);
    nas_rng_shuffle(&r, idx, (size_t)full->n);

    nas_dataset *tr = NULL, *va = NULL;
    if (dataset_alloc(n_valid, full->c, full->h, full->w, full->classes, &va) ||
        dataset_alloc(n_train, full->c, full->h, full->w, full->classes, &tr)) {
        free(idx);
        nas_dataset_destroy(va);
        nas_dataset_destroy(tr);
        return nas_error_set(err, NAS_ENOMEM, "out of memory splitting %d images", full->n);
    }
    memcpy(va->black, full->black, sizeof va->black);
    memcpy(tr->black, full->black, sizeof tr->black);
    copy_rows(full, idx, va);
    copy_rows(full, idx + n_valid, tr);
    free(idx);
    *train = tr;
    *valid = va;
    return NAS_OK;
}

int nas_dataset_sample(const nas_dataset *full, int n, uint64_t seed, nas_dataset **out, nas_error *err)
{
    if (out)
        *out = NULL;
    if (!full || !out || n < 0)
        return nas_error_set(err, NAS_EINVAL, "nas_dataset_sample: bad arguments");
    nas_dataset *none = NULL;
    int rc = nas_dataset_split(full, 0, n < full->n ? n : full->n, seed, out, &none, err);
    nas_dataset_destroy(none);
    return rc;
}
