/*
 * trainer/data_cifar.c - the CIFAR binary reader of data.format = "cifar"
 * (issue 16).
 *
 * File format: A. Krizhevsky's binary version of CIFAR-10 and CIFAR-100
 * ("Learning Multiple Layers of Features from Tiny Images", 2009; the
 * dataset page's "Binary version"): fixed records of label byte(s) then
 * 3072 pixel bytes, 1024 red, 1024 green, 1024 blue, each 32 rows of 32.
 * CIFAR-10 (data_batch_1.bin .. data_batch_5.bin, test_batch.bin): 1
 * label byte, 10 classes. CIFAR-100 (train.bin, test.bin): a coarse and a
 * fine label byte; the fine label (100 classes) is used.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "trainer/data_impl.h"

#define PIXELS 3072

static int exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* Append the records of `path` (label bytes `lb`) to r's buffers
 * (pixels = 0: count them only). */
static int read_batch(const char *path, int lb, int classes, int pixels, nas_rawset *r,
                      size_t *cap, nas_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return nas_error_set(err, NAS_EIO, "cannot open %s: %s", path, strerror(errno));
    size_t rec = (size_t)lb + PIXELS;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (len <= 0 || (size_t)len % rec != 0) {
        fclose(f);
        return nas_error_set(err, NAS_EFORMAT, "%s: truncated: %ld bytes is not a whole number of "
                             "%zu-byte CIFAR-%d records (%d label byte%s + 3072 pixels)", path, len,
                             rec, classes, lb, lb > 1 ? "s" : "");
    }
    size_t n = (size_t)len / rec;
    if (!pixels) {
        r->n += (int)n;
        fclose(f);
        return NAS_OK;
    }
    if ((size_t)r->n + n > *cap) {
        size_t nc = ((size_t)r->n + n) * 2;
        unsigned char *px = realloc(r->heap, nc * PIXELS);
        if (px)
            r->heap = px;
        uint8_t *lab = px ? realloc(r->labels, nc) : NULL;
        if (lab)
            r->labels = lab;
        if (!px || !lab) {
            fclose(f);
            return nas_error_set(err, NAS_ENOMEM, "out of memory reading %s", path);
        }
        *cap = nc;
    }
    unsigned char *buf = malloc(rec);
    if (!buf) {
        fclose(f);
        return nas_error_set(err, NAS_ENOMEM, "out of memory reading %s", path);
    }
    int rc = NAS_OK;
    for (size_t i = 0; i < n; i++) {
        if (fread(buf, 1, rec, f) != rec) {
            rc = nas_error_set(err, NAS_EIO, "%s: read error at record %zu", path, i);
            break;
        }
        int label = buf[lb - 1];
        if (label >= classes) {
            rc = nas_error_set(err, NAS_EFORMAT, "%s: label %d of record %zu is out of range "
                               "0..%d (CIFAR-%d)", path, label, i, classes - 1, classes);
            break;
        }
        r->labels[r->n] = (uint8_t)label;
        memcpy((unsigned char *)r->heap + (size_t)r->n * PIXELS, buf + lb, PIXELS);
        r->n++;
    }
    free(buf);
    fclose(f);
    return rc;
}

int nas__read_cifar(const char *dir, int test, int pixels, nas_rawset **out, nas_error *err)
{
    *out = NULL;
    char p[NAS_PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/data_batch_1.bin", dir);
    int c10 = exists(p);
    snprintf(p, sizeof p, "%s/train.bin", dir);
    int c100 = exists(p);
    if (!c10 && !c100)
        return nas_error_set(err, NAS_EIO, "%s holds neither CIFAR-10 (data_batch_1.bin .. "
                             "data_batch_5.bin, test_batch.bin) nor CIFAR-100 (train.bin, test.bin) "
                             "binary files", dir);
    int lb = c10 ? 1 : 2, classes = c10 ? 10 : 100;
    if (test) {
        snprintf(p, sizeof p, "%s/%s", dir, c10 ? "test_batch.bin" : "test.bin");
        if (!exists(p))
            return NAS_OK; /* no test set */
    }
    nas_rawset *r = nas__rawset_new(dir);
    if (!r)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    r->c = 3;
    r->h = r->w = 32;
    r->classes = classes;
    size_t cap = 0;
    int rc = NAS_OK;
    if (test)
        rc = read_batch(p, lb, classes, pixels, r, &cap, err);
    else if (c100) {
        snprintf(p, sizeof p, "%s/train.bin", dir);
        rc = read_batch(p, lb, classes, pixels, r, &cap, err);
    } else {
        for (int b = 1; b <= 5 && !rc; b++) {
            snprintf(p, sizeof p, "%s/data_batch_%d.bin", dir, b);
            rc = read_batch(p, lb, classes, pixels, r, &cap, err);
        }
    }
    if (rc) {
        nas_rawset_destroy(r);
        return rc;
    }
    r->pixels = r->heap;
    *out = r;
    return NAS_OK;
}
