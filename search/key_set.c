/*
 * search/key_set.c - a set of canonical key strings (search/key_set.h):
 * open addressing, linear probing, FNV-1a (Fowler, Noll, Vo) 64-bit hash,
 * the table doubled before it is half full.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "key_set.h"
#include "nas/array.h" /* nas_hash_str */

int nas__key_set_has(const nas__key_set *ks, const char *k)
{
    if (ks->cap == 0)
        return 0;
    for (size_t i = nas_hash_str(k) & (ks->cap - 1);; i = (i + 1) & (ks->cap - 1)) {
        if (!ks->slot[i])
            return 0;
        if (strcmp(ks->slot[i], k) == 0)
            return 1;
    }
}

/* Insert k (copied); 0 on success or when present, -1 on out of memory. */
int nas__key_set_add(nas__key_set *ks, const char *k)
{
    if (nas__key_set_has(ks, k))
        return 0;
    if (2 * (ks->n + 1) > ks->cap) {
        size_t ncap = ks->cap ? 2 * ks->cap : 256;
        char **ns = calloc(ncap, sizeof *ns);
        if (!ns)
            return -1;
        for (size_t i = 0; i < ks->cap; i++) {
            if (!ks->slot[i])
                continue;
            size_t j = nas_hash_str(ks->slot[i]) & (ncap - 1);
            while (ns[j])
                j = (j + 1) & (ncap - 1);
            ns[j] = ks->slot[i];
        }
        free(ks->slot);
        ks->slot = ns;
        ks->cap = ncap;
    }
    size_t len = strlen(k) + 1;
    char *copy = malloc(len);
    if (!copy)
        return -1;
    memcpy(copy, k, len);
    size_t i = nas_hash_str(k) & (ks->cap - 1);
    while (ks->slot[i])
        i = (i + 1) & (ks->cap - 1);
    ks->slot[i] = copy;
    ks->n++;
    return 0;
}

void nas__key_set_free(nas__key_set *ks)
{
    for (size_t i = 0; i < ks->cap; i++)
        free(ks->slot[i]);
    free(ks->slot);
    memset(ks, 0, sizeof *ks);
}
