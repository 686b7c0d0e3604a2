/*
 * trainer/data.c - Fashion-MNIST idx reader and deterministic splits.
 *
 * File format: Y. LeCun's idx format as used by MNIST and by Fashion-MNIST
 * (Xiao, Rasul & Vollgraf 2017): a big-endian header (magic 0x00000803 for
 * images with 3 dimensions, 0x00000801 for labels with 1), the dimension
 * sizes as big-endian uint32, then unsigned bytes. zlib's gzopen/gzread
 * reads both gzip-compressed and plain files, so NAME.gz is tried first and
 * NAME second.
 */
#include <errno.h>
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* strcmp, strerror, memcpy */
#include <zlib.h>   /* gzopen, gzread: gzip or plain idx files */
#include "nas/trainer.h"

#define FMNIST_MEAN 0.2860f
#define FMNIST_STD 0.3530f
#define FMNIST_CLASSES 10
/* Image side the networks are built for (nas_net_desc in_h, in_w). */
#define FMNIST_SIDE 28
#define IDX_MAGIC_IMAGES 0x00000803u
#define IDX_MAGIC_LABELS 0x00000801u
/* Stream of PCG32 used by nas_dataset_split ("split" in ASCII). */
#define SPLIT_STREAM 0x73706c6974ull

typedef struct idx_file {
    gzFile gz;
    char path[1200];
} idx_file;

/* Open dir/name.gz, else dir/name. NAS_EIO naming both paths if neither opens. */
static int idx_open(const char *dir, const char *name, idx_file *f, nas_error *err)
{
    snprintf(f->path, sizeof f->path, "%s/%s.gz", dir, name);
    f->gz = gzopen(f->path, "rb");
    if (f->gz)
        return NAS_OK;
    snprintf(f->path, sizeof f->path, "%s/%s", dir, name);
    f->gz = gzopen(f->path, "rb");
    if (f->gz)
        return NAS_OK;
    int e = errno;
    return nas_error_set(err, NAS_EIO, "cannot open %s/%s.gz or %s: %s", dir, name, f->path,
                         e ? strerror(e) : "unreadable");
}

/* Read up to `n` bytes into buf, *got of them (fewer at the end of the
 * file); NAS_EIO / NAS_EFORMAT only for a read error. */
static int idx_read_some(idx_file *f, void *buf, size_t n, size_t *got_out, const char *what,
                         nas_error *err)
{
    unsigned char *p = buf;
    size_t got = 0;
    *got_out = 0;
    while (got < n) {
        size_t want = n - got;
        unsigned chunk = want > (1u << 30) ? (1u << 30) : (unsigned)want;
        int r = gzread(f->gz, p + got, chunk);
        if (r < 0) {
            int errnum = 0;
            const char *msg = gzerror(f->gz, &errnum);
            return nas_error_set(err, errnum == Z_ERRNO ? NAS_EIO : NAS_EFORMAT,
                                 "%s: reading %s: %s", f->path, what, msg ? msg : "read error");
        }
        if (r == 0)
            break;
        got += (size_t)r;
        *got_out = got;
    }
    return NAS_OK;
}

static int idx_truncated(idx_file *f, const char *what, size_t n, size_t got, nas_error *err)
{
    return nas_error_set(err, NAS_EFORMAT, "%s: truncated: %s needs %zu bytes, only %zu present",
                         f->path, what, n, got);
}

/* Read exactly `n` bytes; NAS_EFORMAT (truncated) or NAS_EIO otherwise. */
static int idx_read(idx_file *f, void *buf, size_t n, const char *what, nas_error *err)
{
    size_t got = 0;
    int rc = idx_read_some(f, buf, n, &got, what, err);
    if (!rc && got < n)
        rc = idx_truncated(f, what, n, got, err);
    return rc;
}

/* idx_read into a malloc'd buffer (*out, the caller frees it) that grows
 * with the bytes that arrive: a header claiming more images than the file
 * holds costs no more memory than the file (issue 18: 811 bytes claimed
 * 10 million images, 31 GB). */
static int idx_read_alloc(idx_file *f, size_t n, const char *what, unsigned char **out,
                          nas_error *err)
{
    size_t cap = n < ((size_t)1 << 20) ? n : ((size_t)1 << 20), got = 0;
    unsigned char *p = malloc(cap ? cap : 1);
    int rc = p ? NAS_OK : nas_error_set(err, NAS_ENOMEM, "out of memory reading %s", f->path);
    while (!rc && got < n) {
        if (got == cap) {
            size_t ncap = cap > n / 2 ? n : cap * 2;
            unsigned char *np = realloc(p, ncap);
            if (!np) {
                rc = nas_error_set(err, NAS_ENOMEM, "out of memory reading %s", f->path);
                break;
            }
            p = np;
            cap = ncap;
        }
        size_t r = 0;
        rc = idx_read_some(f, p + got, cap - got, &r, what, err);
        if (!rc && r == 0)
            rc = idx_truncated(f, what, n, got, err);
        got += r;
    }
    if (rc) {
        free(p);
        return rc;
    }
    *out = p;
    return NAS_OK;
}

static uint32_t be32(const unsigned char *b)
{
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}

/* Read an idx header with `ndim` dimensions and the expected magic. */
static int idx_header(idx_file *f, uint32_t magic, int ndim, uint32_t *dims, nas_error *err)
{
    unsigned char hdr[16];
    int rc = idx_read(f, hdr, 4 + 4 * (size_t)ndim, "the header", err);
    if (rc)
        return rc;
    uint32_t m = be32(hdr);
    if (m != magic)
        return nas_error_set(err, NAS_EFORMAT,
                             "%s: bad magic number 0x%08x (expected 0x%08x, idx %s)", f->path,
                             (unsigned)m, (unsigned)magic, ndim == 3 ? "images" : "labels");
    for (int i = 0; i < ndim; i++)
        dims[i] = be32(hdr + 4 + 4 * i);
    return NAS_OK;
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

    char name[64];
    idx_file fi = {0}, fl = {0};
    unsigned char *raw = NULL, *labels = NULL;
    nas_dataset *d = NULL;
    uint32_t idim[3] = {0}, ldim[1] = {0}; /* set by idx_header; zeroed for -O2 flow analysis */
    int rc;

    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    if ((rc = idx_open(dir, name, &fi, err)))
        goto done;
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    if ((rc = idx_open(dir, name, &fl, err)))
        goto done;
    if ((rc = idx_header(&fi, IDX_MAGIC_IMAGES, 3, idim, err)))
        goto done;
    if ((rc = idx_header(&fl, IDX_MAGIC_LABELS, 1, ldim, err)))
        goto done;
    if (idim[0] == 0 || idim[1] == 0 || idim[2] == 0 || idim[0] > 10000000u || idim[1] > 4096u ||
        idim[2] > 4096u) {
        rc = nas_error_set(err, NAS_EFORMAT, "%s: implausible image dimensions %ux%ux%u", fi.path,
                           (unsigned)idim[0], (unsigned)idim[1], (unsigned)idim[2]);
        goto done;
    }
    if (ldim[0] != idim[0]) {
        rc = nas_error_set(err, NAS_EFORMAT, "%s has %u labels but %s has %u images", fl.path,
                           (unsigned)ldim[0], fi.path, (unsigned)idim[0]);
        goto done;
    }
    if (idim[1] != FMNIST_SIDE || idim[2] != FMNIST_SIDE) {
        /* the networks nas builds take 28x28 inputs: refuse now rather than
         * fail at the first training step (issue 19) */
        rc = nas_error_set(err, NAS_EFORMAT,
                           "%s: images are %ux%u pixels, but Fashion-MNIST and the networks nas "
                           "builds are %dx%d (other sizes are not supported yet)",
                           fi.path, (unsigned)idim[1], (unsigned)idim[2], FMNIST_SIDE, FMNIST_SIDE);
        goto done;
    }
    int n = (int)idim[0], h = (int)idim[1], w = (int)idim[2];
    size_t px = (size_t)n * h * w;
    char what[96];
    /* the bytes first, the floats once they are all there */
    snprintf(what, sizeof what, "%d images of %dx%d", n, h, w);
    if ((rc = idx_read_alloc(&fi, px, what, &raw, err)))
        goto done;
    snprintf(what, sizeof what, "%d labels", n);
    if ((rc = idx_read_alloc(&fl, (size_t)n, what, &labels, err)))
        goto done;
    if ((rc = dataset_alloc(n, 1, h, w, FMNIST_CLASSES, &d))) {
        rc = nas_error_set(err, rc, "out of memory loading %d images", n);
        goto done;
    }
    memcpy(d->labels, labels, (size_t)n);
    for (int i = 0; i < n; i++) {
        if (d->labels[i] >= FMNIST_CLASSES) {
            rc = nas_error_set(err, NAS_EFORMAT, "%s: label %d of image %d is out of range 0..%d",
                               fl.path, d->labels[i], i, FMNIST_CLASSES - 1);
            goto done;
        }
    }
    const float inv = 1.0f / 255.0f, inv_std = 1.0f / FMNIST_STD;
    for (size_t i = 0; i < px; i++)
        d->images[i] = ((float)raw[i] * inv - FMNIST_MEAN) * inv_std;
    d->black[0] = (0.0f * inv - FMNIST_MEAN) * inv_std;
    *out = d;
    d = NULL;
    rc = NAS_OK;
done:
    free(raw);
    free(labels);
    nas_dataset_destroy(d);
    if (fi.gz)
        gzclose(fi.gz);
    if (fl.gz)
        gzclose(fl.gz);
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
