/*
 * trainer/data_npy.c - the NumPy reader of data.format = "npy" (issue 16).
 *
 * File format: NumPy's "NEP 1: A simple file format for NumPy arrays"
 * (versions 1.0, 2.0 and 3.0): the magic "\x93NUMPY", a version, a header
 * length (uint16 LE for 1.0, uint32 LE after), a Python dict literal with
 * 'descr', 'fortran_order' and 'shape', then the C-order data. The image
 * file is memory-mapped (mmap, read-only), never read whole: a split
 * copies only the images it takes. Labels are small and are copied.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "trainer/data_impl.h"
#include "trainer/npy_impl.h"

/* The largest header and element count (2^40) an images or labels file
 * may claim. */
#define NPY_MAX_HLEN 65536
#define NPY_MAX_COUNT ((size_t)1 << 40)

typedef struct npy {
    char descr[16];
    int ndim;
    long long shape[NAS__NPY_MAX_DIMS];
    size_t count, itemsize, offset; /* elements, bytes each, data offset */
    const unsigned char *base;      /* the mapped file */
    size_t len;
} npy;

/* What a header nas__npy_parse refused with `rc` lacks (the kinds whose
 * message names nothing but the file). */
static const char *npy_why(int rc)
{
    switch (rc) {
    case NAS__NPY_EKEYS: return "malformed .npy header (no descr, fortran_order or shape)";
    case NAS__NPY_EDESCR: return "malformed .npy descr";
    case NAS__NPY_EFORTRAN:
        return "Fortran-ordered array, expected C order (numpy.ascontiguousarray before numpy.save)";
    case NAS__NPY_EBIG: return "implausibly large .npy shape";
    default: return "malformed .npy shape"; /* NAS__NPY_ESHAPE, NAS__NPY_ENEG */
    }
}

/* Map `path` and parse its header (nas__npy_parse). `what` is "images" or
 * "labels". */
static int npy_map(const char *path, const char *what, npy *a, nas_error *err)
{
    memset(a, 0, sizeof *a);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return nas_error_set(err, NAS_EIO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return nas_error_set(err, NAS_EIO, "%s: not a regular file", path);
    }
    a->len = (size_t)st.st_size;
    if (a->len < 10) {
        close(fd);
        return nas_error_set(err, NAS_EFORMAT, "%s: truncated: %zu bytes, too short for a .npy header",
                             path, a->len);
    }
    void *m = mmap(NULL, a->len, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (m == MAP_FAILED)
        return nas_error_set(err, NAS_EIO, "%s: cannot map %zu bytes: %s (the image file is "
                             "memory-mapped; an address-space limit such as ulimit -v must allow "
                             "its size)", path, a->len, strerror(e));
    a->base = m;
    nas__npy_hdr h;
    int rc = nas__npy_parse(m, a->len, NPY_MAX_HLEN, NPY_MAX_COUNT, &h);
    if (rc == NAS__NPY_EMAGIC)
        rc = nas_error_set(err, NAS_EFORMAT, "%s: bad magic number, expected \"\\x93NUMPY\" (a .npy "
                           "file of %s)", path, what);
    else if (rc == NAS__NPY_EVERSION)
        rc = nas_error_set(err, NAS_EFORMAT, "%s: unsupported .npy version %d.%d", path,
                           a->base[6], a->base[7]);
    else if (rc == NAS__NPY_ETRUNC)
        rc = nas_error_set(err, NAS_EFORMAT, "%s: truncated: the .npy header needs %zu bytes, the "
                           "file has %zu", path, h.offset, a->len);
    else if (rc)
        rc = nas_error_set(err, NAS_EFORMAT, "%s: %s", path, npy_why(rc));
    if (rc)
        goto fail;
    memcpy(a->descr, h.descr, sizeof a->descr);
    a->ndim = h.ndim;
    for (int i = 0; i < h.ndim; i++)
        a->shape[i] = h.shape[i];
    a->count = h.count;
    a->offset = h.offset;
    return NAS_OK;
fail:
    munmap((void *)a->base, a->len);
    a->base = NULL;
    return rc;
}

static void npy_unmap(npy *a)
{
    if (a->base)
        munmap((void *)a->base, a->len);
    a->base = NULL;
}

/* The data must fill exactly count*itemsize bytes after the header. */
static int npy_size_check(const npy *a, const char *path, nas_error *err)
{
    size_t need = a->count * a->itemsize, have = a->len - a->offset;
    if (have < need)
        return nas_error_set(err, NAS_EFORMAT, "%s: truncated: the array needs %zu data bytes, the "
                             "file has %zu", path, need, have);
    if (have > need)
        return nas_error_set(err, NAS_EFORMAT, "%s: %zu bytes after the array's %zu data bytes "
                             "(not a single .npy array)", path, have - need, need);
    return NAS_OK;
}

static int is(const char *d, const char *a, const char *b) { return !strcmp(d, a) || !strcmp(d, b); }

/* Labels of any integer dtype into uint8 (0..255). */
static int read_labels(const char *path, int n_images, const char *images, uint8_t **out,
                       nas_error *err)
{
    npy a;
    int rc = npy_map(path, "labels", &a, err);
    if (rc)
        return rc;
    int sz = 0, sgn = 0;
    if (is(a.descr, "|u1", "<u1") || !strcmp(a.descr, "u1")) sz = 1;
    else if (is(a.descr, "|i1", "<i1")) sz = 1, sgn = 1;
    else if (!strcmp(a.descr, "<u2")) sz = 2;
    else if (!strcmp(a.descr, "<i2")) sz = 2, sgn = 1;
    else if (!strcmp(a.descr, "<u4")) sz = 4;
    else if (!strcmp(a.descr, "<i4")) sz = 4, sgn = 1;
    else if (!strcmp(a.descr, "<u8")) sz = 8;
    else if (!strcmp(a.descr, "<i8")) sz = 8, sgn = 1;
    if (!sz) {
        rc = nas_error_set(err, NAS_EFORMAT, "%s: labels of dtype '%s' are not supported, expected "
                           "an integer array (uint8, int32, int64, ...)", path, a.descr);
        goto done;
    }
    a.itemsize = (size_t)sz;
    if (a.ndim != 1 && !(a.ndim == 2 && a.shape[1] == 1)) {
        rc = nas_error_set(err, NAS_EFORMAT, "%s: labels have %d dimensions, expected one [N]", path,
                           a.ndim);
        goto done;
    }
    if ((rc = npy_size_check(&a, path, err)))
        goto done;
    if (a.shape[0] != n_images) {
        rc = nas_error_set(err, NAS_EFORMAT, "%s has %lld labels but %s has %d images", path,
                           a.shape[0], images, n_images);
        goto done;
    }
    uint8_t *l = malloc(a.count ? a.count : 1);
    if (!l) {
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory reading %s", path);
        goto done;
    }
    const unsigned char *p = a.base + a.offset;
    for (size_t i = 0; i < a.count; i++, p += sz) {
        unsigned long long u = 0;
        for (int b = sz - 1; b >= 0; b--)
            u = u << 8 | p[b];
        long long v = (long long)u;
        if (sgn && sz < 8 && (u >> (8 * sz - 1)) & 1)
            v = (long long)u - (1LL << (8 * sz));
        if (v < 0 || v > 255) {
            free(l);
            rc = nas_error_set(err, NAS_EFORMAT, "%s: label %lld of image %zu is out of range, "
                               "expected 0..255", path, v, i);
            goto done;
        }
        l[i] = (uint8_t)v;
    }
    *out = l;
done:
    npy_unmap(&a);
    return rc;
}

int nas__read_npy(const char *images, const char *labels, const char *layout, nas_rawset **out,
                  nas_error *err)
{
    *out = NULL;
    npy a;
    int rc = npy_map(images, "images", &a, err);
    if (rc)
        return rc;
    nas_rawset *r = NULL;
    int f32;
    if (is(a.descr, "|u1", "<u1") || !strcmp(a.descr, "u1"))
        f32 = 0, a.itemsize = 1;
    else if (!strcmp(a.descr, "<f4"))
        f32 = 1, a.itemsize = 4;
    else {
        rc = nas_error_set(err, NAS_EFORMAT, "%s: images of dtype '%s' are not supported, expected "
                           "uint8 ('|u1') or float32 ('<f4')", images, a.descr);
        goto fail;
    }
    if ((rc = npy_size_check(&a, images, err)))
        goto fail;
    const char *lay = layout && layout[0] ? layout : NULL;
    if (!lay) {
        if (a.ndim == 3)
            lay = "nhw";
        else if (a.ndim == 4 && a.shape[1] <= 4 && a.shape[3] > 4)
            lay = "nchw";
        else if (a.ndim == 4 && a.shape[3] <= 4)
            lay = "nhwc";
    }
    if (!lay || (a.ndim != (strcmp(lay, "nhw") ? 4 : 3))) {
        rc = nas_error_set(err, NAS_EFORMAT, "%s: images of %d dimensions%s, expected N,H,W or "
                           "N,H,W,C or N,C,H,W (set data.layout when it cannot be inferred)",
                           images, a.ndim, lay ? " do not fit data.layout" : "");
        goto fail;
    }
    if (!(r = nas__rawset_new(images))) {
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory reading %s", images);
        goto fail;
    }
    snprintf(r->labels_path, sizeof r->labels_path, "%s", labels);
    r->n = (int)a.shape[0];
    if (!strcmp(lay, "nhw")) {
        r->c = 1, r->h = (int)a.shape[1], r->w = (int)a.shape[2];
    } else if (!strcmp(lay, "nchw")) {
        r->c = (int)a.shape[1], r->h = (int)a.shape[2], r->w = (int)a.shape[3];
    } else {
        r->h = (int)a.shape[1], r->w = (int)a.shape[2], r->c = (int)a.shape[3];
        r->nhwc = r->c > 1;
    }
    if (a.shape[0] <= 0 || a.shape[0] > 1000000000LL || r->c <= 0 || r->c > NAS_DATA_MAX_C ||
        r->h <= 0 || r->w <= 0 || r->h > 8192 || r->w > 8192) {
        rc = nas_error_set(err, NAS_EFORMAT, "%s: implausible images: %lld of %dx%dx%d (C,H,W; at "
                           "most %d channels)", images, a.shape[0], r->c, r->h, r->w, NAS_DATA_MAX_C);
        goto fail;
    }
    r->f32 = f32;
    r->map = (void *)a.base;
    r->map_len = a.len;
    r->pixels = a.base + a.offset;
    a.base = NULL; /* the raw set owns the mapping */
    if ((rc = read_labels(labels, r->n, images, &r->labels, err)) ||
        (rc = nas__labels_check(r->labels, r->n, &r->classes, labels, err)))
        goto fail;
    *out = r;
    return NAS_OK;
fail:
    npy_unmap(&a);
    nas_rawset_destroy(r);
    return rc;
}
