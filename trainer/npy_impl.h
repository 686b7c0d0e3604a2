/*
 * trainer/npy_impl.h - the .npy header, written and read (internal;
 * trainer/npy.c). Format: NumPy's "NEP 1: A simple file format for NumPy
 * arrays", versions 1.0, 2.0 and 3.0: the magic "\x93NUMPY", a major and
 * minor version byte, the header length (uint16 LE for 1.0, uint32 LE
 * after), a Python dict literal with 'descr', 'fortran_order' and 'shape',
 * then the C-order data. Both .npy readers use it: data.format = "npy"
 * (data_npy.c) and the members of .npz archives (weights.c).
 */
#ifndef NAS_TRAINER_NPY_IMPL_H
#define NAS_TRAINER_NPY_IMPL_H

#include <stddef.h>
#include <stdint.h>

#define NAS__NPY_MAX_DIMS 8

/* The .npy (version 1.0) magic and header for a C-order array of `descr`
 * ("|u1", "<f4", ...) and shape[0..ndim) into buf[cap], padded with
 * spaces and ending in '\n' so that it is a multiple of 64 bytes.
 * Returns its length, 0 when cap is too small. */
size_t nas__npy_header(char *buf, size_t cap, const char *descr, int ndim, const int64_t *shape);

/* What nas__npy_parse found wrong, in the order it checks. */
enum {
    NAS__NPY_OK = 0,
    NAS__NPY_EMAGIC,   /* fewer than 10 bytes, or not "\x93NUMPY" */
    NAS__NPY_EVERSION, /* not version 1, 2 or 3 (or 2/3 in fewer than 12 bytes) */
    NAS__NPY_ETRUNC,   /* the header is over max_hlen or past the end: needs h->offset bytes */
    NAS__NPY_EKEYS,    /* no 'descr', 'fortran_order' or 'shape' */
    NAS__NPY_EDESCR,   /* descr not quoted, or not shorter than sizeof h->descr */
    NAS__NPY_EFORTRAN, /* fortran_order is not False */
    NAS__NPY_ESHAPE,   /* shape not "(d, ...)" of at most NAS__NPY_MAX_DIMS integers */
    NAS__NPY_ENEG,     /* a dimension is negative or beyond long long */
    NAS__NPY_EBIG      /* the element count passes max_count */
};

/* A parsed .npy header. */
typedef struct nas__npy_hdr {
    char descr[16]; /* as written ("<f4", "|u1", "u1", ...) */
    int ndim;
    int64_t shape[NAS__NPY_MAX_DIMS];
    size_t count;   /* product of shape; counted only when max_count > 0 */
    size_t offset;  /* where the data starts (the header's end) */
} nas__npy_hdr;

/*
 * Parse the .npy header at the start of p[0..len) into h (NEP 1, above).
 * A header longer than max_hlen bytes is refused (NAS__NPY_ETRUNC); with
 * max_count > 0 the element count is kept in h->count and a shape whose
 * count passes max_count is refused (NAS__NPY_EBIG, checked dimension by
 * dimension). The dtype and the data's size are the caller's to check.
 * Returns NAS__NPY_OK or the first NAS__NPY_E* found; h->offset is set
 * from NAS__NPY_ETRUNC on, h->descr from NAS__NPY_EFORTRAN on.
 */
int nas__npy_parse(const unsigned char *p, size_t len, size_t max_hlen, size_t max_count,
                   nas__npy_hdr *h);

#endif
