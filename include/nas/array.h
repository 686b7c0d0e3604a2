/*
 * nas/array.h - growing a malloc'd array one element at a time (base/array.c):
 * the lists the store reads and the controller's queues; and the string
 * hash of the open-addressing tables (the evaluator's table, key sets).
 */
#ifndef NAS_ARRAY_H
#define NAS_ARRAY_H

#include <stddef.h>
#include <stdint.h>
#include "nas/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Room for one more element in the array *pv (pv: the address of its
 * pointer, which may be NULL; n elements used of *cap, `elem` bytes each):
 * the capacity doubles, or becomes `first` elements when it is 0. The array
 * stays owned by the caller (free it). Errors: NAS_ENOMEM ("out of
 * memory"; *pv and *cap unchanged). */
int nas_array_grow(void *pv, int n, int *cap, int first, size_t elem, nas_error *err);

/* The 64-bit FNV-1a hash (Fowler, Noll, Vo) of the NUL-terminated string
 * s, for hash tables keyed by strings. No errors; s must not be NULL. */
uint64_t nas_hash_str(const char *s);

#ifdef __cplusplus
}
#endif

#endif
