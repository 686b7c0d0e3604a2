/*
 * trainer/npy.c - the .npy header, written and read (trainer/npy_impl.h;
 * NumPy NEP 1). One parser for both readers: data.format = "npy"
 * (data_npy.c) and .npz members (weights.c); tests/fuzz feeds both.
 */
#include <errno.h>  /* errno, ERANGE */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* strtoll */
#include <string.h> /* memcpy, strstr */
#include "nas/parse.h"
#include "trainer/npy_impl.h"

size_t nas__npy_header(char *buf, size_t cap, const char *descr, int ndim, const int64_t *shape)
{
    char dict[512];
    int k = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < ndim; i++)
        k += snprintf(dict + k, sizeof dict - (size_t)k, "%lld%s", (long long)shape[i],
                      ndim == 1 ? "," : (i + 1 < ndim ? ", " : ""));
    k += snprintf(dict + k, sizeof dict - (size_t)k, "), }");
    size_t total = 10 + (size_t)k + 1;
    total = (total + 63) / 64 * 64;
    if (total > cap)
        return 0;
    size_t hlen = total - 10;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)(hlen & 0xff);
    buf[9] = (char)((hlen >> 8) & 0xff);
    memcpy(buf + 10, dict, (size_t)k);
    memset(buf + 10 + k, ' ', hlen - (size_t)k - 1);
    buf[total - 1] = '\n';
    return total;
}

/* The largest header nas__npy_parse reads (callers pass less or this). */
#define NPY_HLEN_CAP 65536

int nas__npy_parse(const unsigned char *p, size_t len, size_t max_hlen, size_t max_count,
                   nas__npy_hdr *h)
{
    memset(h, 0, sizeof *h);
    if (len < 10 || memcmp(p, "\x93NUMPY", 6) != 0)
        return NAS__NPY_EMAGIC;
    size_t hlen, off;
    if (p[6] == 1) {
        hlen = (size_t)p[8] | (size_t)p[9] << 8;
        off = 10;
    } else if ((p[6] == 2 || p[6] == 3) && len >= 12) {
        hlen = (size_t)p[8] | (size_t)p[9] << 8 | (size_t)p[10] << 16 | (size_t)p[11] << 24;
        off = 12;
    } else {
        return NAS__NPY_EVERSION;
    }
    h->offset = off + hlen;
    if (max_hlen > NPY_HLEN_CAP)
        max_hlen = NPY_HLEN_CAP;
    if (hlen > max_hlen || off + hlen > len)
        return NAS__NPY_ETRUNC;
    char t[NPY_HLEN_CAP + 1];
    memcpy(t, p + off, hlen);
    t[hlen] = 0;
    const char *d = strstr(t, "'descr'"), *fo = strstr(t, "'fortran_order'"), *sh = strstr(t, "'shape'");
    if (!d || !fo || !sh)
        return NAS__NPY_EKEYS;
    d = strchr(d + 7, '\'');
    const char *de = d ? strchr(d + 1, '\'') : NULL;
    if (!de || de - d - 1 >= (long)sizeof h->descr)
        return NAS__NPY_EDESCR;
    memcpy(h->descr, d + 1, (size_t)(de - d - 1));
    fo = strchr(fo + 15, ':');
    while (fo && *++fo == ' ')
        ;
    if (!fo || strncmp(fo, "False", 5) != 0)
        return NAS__NPY_EFORTRAN;
    sh = strchr(sh + 7, '(');
    if (!sh)
        return NAS__NPY_ESHAPE;
    const char *q = sh + 1;
    h->count = 1;
    while (nas_parse_list_next(&q, ')')) {
        char *end;
        errno = 0;
        long long v = strtoll(q, &end, 10);
        if (end == q || h->ndim >= NAS__NPY_MAX_DIMS)
            return NAS__NPY_ESHAPE;
        if (v < 0 || errno == ERANGE)
            return NAS__NPY_ENEG;
        h->shape[h->ndim++] = v;
        if (max_count) {
            if (v && h->count > max_count / (size_t)v)
                return NAS__NPY_EBIG;
            h->count *= (size_t)v;
        }
        q = end;
    }
    if (!max_count)
        h->count = 0;
    return NAS__NPY_OK;
}
