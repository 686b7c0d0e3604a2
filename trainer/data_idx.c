/*
 * trainer/data_idx.c - the idx reader of data.format = "idx" (issue 16).
 *
 * Y. LeCun's idx format as used by MNIST and Fashion-MNIST: a big-endian
 * header (magic 0x00000803 for uint8 images of 3 dimensions N,H,W,
 * 0x00000801 for uint8 labels of 1), the dimension sizes as big-endian
 * uint32, then the bytes. zlib's gzopen/gzread reads gzip-compressed and
 * plain files alike. Any image size and class count; one channel.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#include "trainer/data_impl.h"

#define IDX_IMAGES 0x00000803u
#define IDX_LABELS 0x00000801u

/* Read up to `n` bytes into buf, *got of them (fewer at the end of the
 * file). NAS_EIO (a system read error) or NAS_EFORMAT (damaged gzip data)
 * only for a read error. */
static int read_some(gzFile gz, const char *path, void *buf, size_t n, size_t *got_out,
                     const char *what, nas_error *err)
{
    unsigned char *p = buf;
    size_t got = 0;
    *got_out = 0;
    while (got < n) {
        size_t want = n - got;
        int r = gzread(gz, p + got, want > (1u << 30) ? (1u << 30) : (unsigned)want);
        if (r < 0) {
            int errnum = 0;
            const char *m = gzerror(gz, &errnum);
            return nas_error_set(err, errnum == Z_ERRNO ? NAS_EIO : NAS_EFORMAT,
                                 "%s: reading %s: %s", path, what, m ? m : "read error");
        }
        if (r == 0)
            break;
        got += (size_t)r;
        *got_out = got;
    }
    return NAS_OK;
}

static int truncated(const char *path, const char *what, size_t n, size_t got, nas_error *err)
{
    return nas_error_set(err, NAS_EFORMAT, "%s: truncated: %s needs %zu bytes, only %zu present",
                         path, what, n, got);
}

/* Read exactly `n` bytes; NAS_EFORMAT (truncated) or a read_some error. */
static int read_all(gzFile gz, const char *path, void *buf, size_t n, const char *what,
                    nas_error *err)
{
    size_t got = 0;
    int rc = read_some(gz, path, buf, n, &got, what, err);
    if (!rc && got < n)
        rc = truncated(path, what, n, got, err);
    return rc;
}

/* read_all into a malloc'd buffer (*out, the caller frees it) that grows
 * with the bytes that arrive: a header claiming more images than the file
 * holds costs no more memory than the file, also where fits() cannot size
 * it (issue 18: 811 bytes claimed 10 million images, 31 GB). */
static int read_alloc(gzFile gz, const char *path, size_t n, const char *what, uint8_t **out,
                      nas_error *err)
{
    size_t cap = n < ((size_t)1 << 20) ? n : ((size_t)1 << 20), got = 0;
    unsigned char *p = malloc(cap ? cap : 1);
    int rc = p ? NAS_OK : nas_error_set(err, NAS_ENOMEM, "out of memory reading %s", path);
    while (!rc && got < n) {
        if (got == cap) {
            size_t ncap = cap > n / 2 ? n : cap * 2;
            unsigned char *np = realloc(p, ncap);
            if (!np) {
                rc = nas_error_set(err, NAS_ENOMEM, "out of memory reading %s", path);
                break;
            }
            p = np;
            cap = ncap;
        }
        size_t r = 0;
        rc = read_some(gz, path, p + got, cap - got, &r, what, err);
        if (!rc && r == 0)
            rc = truncated(path, what, n, got, err);
        got += r;
    }
    if (rc) {
        free(p);
        return rc;
    }
    *out = p;
    return NAS_OK;
}

/* Deflate's best ratio: a gzip stream of S bytes never expands past this
 * many times S (RFC 1951: a 258-byte match costs at least 2 bits). */
#define GZ_MAX_RATIO 1032ull

/* NAS_EFORMAT when `path` cannot hold `need` bytes after its `hdr`-byte
 * header: a plain file shorter than that, or a gzip file so small that not
 * even deflate's best ratio reaches it. Checked before allocating, so a
 * header claiming more than the file holds costs no memory (issue 16). */
static int fits(gzFile gz, const char *path, size_t hdr, size_t need, const char *what,
                nas_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size < 0)
        return NAS_OK; /* not a regular file we can size: the read finds out */
    unsigned long long size = (unsigned long long)st.st_size;
    int plain = gzdirect(gz);
    unsigned long long cap = plain ? (size > hdr ? size - hdr : 0) : size * GZ_MAX_RATIO;
    if ((unsigned long long)need <= cap)
        return NAS_OK;
    return nas_error_set(err, NAS_EFORMAT, "%s: truncated: %s need %zu bytes, but the %s file of "
                         "%llu bytes %s", path, what, need, plain ? "plain" : "gzip", size,
                         plain ? "holds fewer" : "cannot expand to that many");
}

static uint32_t be32(const unsigned char *b)
{
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}

static int header(gzFile gz, const char *path, uint32_t magic, int ndim, uint32_t *dims,
                  nas_error *err)
{
    unsigned char h[16];
    int rc = read_all(gz, path, h, 4 + 4 * (size_t)ndim, "the header", err);
    if (rc)
        return rc;
    if (be32(h) != magic)
        return nas_error_set(err, NAS_EFORMAT,
                             "%s: bad magic number 0x%08x, expected 0x%08x (idx %s)", path,
                             (unsigned)be32(h), (unsigned)magic, ndim == 3 ? "images" : "labels");
    for (int i = 0; i < ndim; i++)
        dims[i] = be32(h + 4 + 4 * i);
    return NAS_OK;
}

int nas__read_idx(const char *images, const char *labels, int side, int pixels, nas_rawset **out,
                  nas_error *err)
{
    *out = NULL;
    gzFile gi = gzopen(images, "rb"), gl = NULL;
    nas_rawset *r = NULL;
    int rc;
    if (!gi) {
        rc = nas_error_set(err, NAS_EIO, "cannot open %s: %s", images, strerror(errno ? errno : ENOENT));
        goto done;
    }
    gl = gzopen(labels, "rb");
    if (!gl) {
        rc = nas_error_set(err, NAS_EIO, "cannot open %s: %s", labels, strerror(errno ? errno : ENOENT));
        goto done;
    }
    uint32_t id[3] = {0}, ld[1] = {0};
    if ((rc = header(gi, images, IDX_IMAGES, 3, id, err)) || (rc = header(gl, labels, IDX_LABELS, 1, ld, err)))
        goto done;
    if (id[0] == 0 || id[1] == 0 || id[2] == 0 || id[0] > 100000000u || id[1] > 8192u || id[2] > 8192u) {
        rc = nas_error_set(err, NAS_EFORMAT, "%s: implausible image dimensions %ux%ux%u", images,
                           (unsigned)id[0], (unsigned)id[1], (unsigned)id[2]);
        goto done;
    }
    if (ld[0] != id[0]) {
        rc = nas_error_set(err, NAS_EFORMAT, "%s has %u labels but %s has %u images", labels,
                           (unsigned)ld[0], images, (unsigned)id[0]);
        goto done;
    }
    if (side > 0 && (id[1] != (uint32_t)side || id[2] != (uint32_t)side)) {
        /* Fashion-MNIST: the networks nas builds take 28x28 inputs: refuse
         * before reading the images rather than fail at the first training
         * step (issue 19) */
        rc = nas_error_set(err, NAS_EFORMAT,
                           "%s: images are %ux%u pixels, but Fashion-MNIST and the networks nas "
                           "builds are %dx%d (other sizes are not supported yet)",
                           images, (unsigned)id[1], (unsigned)id[2], side, side);
        goto done;
    }
    if (!(r = nas__rawset_new(images))) {
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory reading %s", images);
        goto done;
    }
    snprintf(r->labels_path, sizeof r->labels_path, "%s", labels);
    r->n = (int)id[0];
    r->c = 1;
    r->h = (int)id[1];
    r->w = (int)id[2];
    size_t px = (size_t)r->n * r->h * r->w;
    char wi[96], wl[96];
    snprintf(wi, sizeof wi, "%d images of %dx%d", r->n, r->h, r->w);
    snprintf(wl, sizeof wl, "%d labels", r->n);
    uint8_t *heap = NULL;
    if ((rc = fits(gi, images, 16, px, wi, err)) || (rc = fits(gl, labels, 8, (size_t)r->n, wl, err)) ||
        (pixels && (rc = read_alloc(gi, images, px, wi, &heap, err))))
        goto done;
    r->heap = heap;
    r->pixels = heap;
    if ((rc = read_alloc(gl, labels, (size_t)r->n, wl, &r->labels, err)))
        goto done;
    if ((rc = nas__labels_check(r->labels, r->n, &r->classes, labels, err)))
        goto done;
    *out = r;
    r = NULL;
done:
    nas_rawset_destroy(r);
    if (gi)
        gzclose(gi);
    if (gl)
        gzclose(gl);
    return rc;
}
