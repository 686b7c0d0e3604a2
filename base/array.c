/*
 * base/array.c - nas_array_grow (nas/array.h): doubling growth of a
 * caller-owned array; nas_hash_str, the string hash of hash tables.
 */
#include <stdlib.h> /* realloc */
#include <string.h> /* memcpy */
#include "nas/array.h"

int nas_array_grow(void *pv, int n, int *cap, int first, size_t elem, nas_error *err)
{
    if (n < *cap)
        return NAS_OK;
    void *old, *v;
    memcpy(&old, pv, sizeof old); /* pv points at a T *, whatever T is */
    int want = *cap ? 2 * *cap : first;
    if (!(v = realloc(old, (size_t)want * elem)))
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    memcpy(pv, &v, sizeof v);
    *cap = want;
    return NAS_OK;
}

uint64_t nas_hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a 64-bit offset basis and prime */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}
