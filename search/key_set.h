/*
 * search/key_set.h - a set of canonical key strings (search/key_set.c):
 * open addressing with linear probing over a power-of-two table, hashed
 * with FNV-1a (Fowler, Noll, Vo), kept at most half full. Used where the
 * search checks keys one by one against many: NAO's observed and proposed
 * cells, and the replay's dedupe against the stored trials (issue 29: a
 * scan per check made resuming O(n^2)).
 *
 * Not a public header: only search/ includes it.
 */
#ifndef NAS_SEARCH_KEY_SET_H
#define NAS_SEARCH_KEY_SET_H

#include <stddef.h>

typedef struct nas__key_set {
    char **slot; /* cap slots, NULL or a malloc'd key */
    size_t cap, n;
} nas__key_set;

/* 1 when key k (a NUL-terminated string) is in the set, else 0. O(1) expected. */
int nas__key_set_has(const nas__key_set *ks, const char *k);

/* Insert a copy of k. Returns 0 when added or already present, -1 when out
 * of memory (the set is unchanged). A zeroed nas__key_set is an empty set. */
int nas__key_set_add(nas__key_set *ks, const char *k);

/* Free every key and the table; the set is empty (zeroed) afterwards. */
void nas__key_set_free(nas__key_set *ks);

#endif
