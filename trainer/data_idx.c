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

static int gz_read(gzFile gz, const char *path, void *buf, size_t n, const char *what,
                   nas_error *err)
{
    unsigned char *p = buf;
    size_t got = 0;
    while (got < n) {
        size_t want = n - got;
        int r = gzread(gz, p + got, want > (1u << 30) ? (1u << 30) : (unsigned)want);
        if (r < 0) {
            int e = 0;
            const char *m = gzerror(gz, &e);
            return nas_error_set(err, NAS_EFORMAT, "%s: reading %s: %s", path, what,
                                 m ? m : "read error");
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    if (got < n)
        return nas_error_set(err, NAS_EFORMAT, "%s: truncated: %s needs %zu bytes, only %zu present",
                             path, what, n, got);
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
    int rc = gz_read(gz, path, h, 4 + 4 * (size_t)ndim, "the header", err);
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

int nas__read_idx(const char *images, const char *labels, nas_rawset **out, nas_error *err)
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
    if (!(r = nas__rawset_new(images))) {
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory reading %s", images);
        goto done;
    }
    r->n = (int)id[0];
    r->c = 1;
    r->h = (int)id[1];
    r->w = (int)id[2];
    size_t px = (size_t)r->n * r->h * r->w;
    char what[96];
    snprintf(what, sizeof what, "%d images of %dx%d", r->n, r->h, r->w);
    if ((rc = fits(gi, images, 16, px, what, err)))
        goto done;
    snprintf(what, sizeof what, "%d labels", r->n);
    if ((rc = fits(gl, labels, 8, (size_t)r->n, what, err)))
        goto done;
    r->heap = malloc(px);
    r->labels = malloc((size_t)r->n);
    if (!r->heap || !r->labels) {
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory reading %d images from %s", r->n, images);
        goto done;
    }
    r->pixels = r->heap;
    snprintf(what, sizeof what, "%d images of %dx%d", r->n, r->h, r->w);
    if ((rc = gz_read(gi, images, r->heap, px, what, err)))
        goto done;
    snprintf(what, sizeof what, "%d labels", r->n);
    if ((rc = gz_read(gl, labels, r->labels, (size_t)r->n, what, err)))
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
