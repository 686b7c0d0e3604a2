/*
 * space/decisions.c - any space as a list of decisions (nas/layers.h):
 * names, choices, vocabulary words, counts and brute-force enumeration,
 * for both space types. Cell: decision i is edge i of the NAS-Bench-201
 * cell, its choices the space's op set.
 */
#include <math.h>   /* log10 */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* malloc, qsort */
#include <string.h>
#include "nas/layers.h"
#include "space_impl.h"

static const int cell_from[NAS_CELL_EDGES] = {0, 0, 1, 0, 1, 2};
static const int cell_to[NAS_CELL_EDGES] = {1, 2, 2, 3, 3, 3};

const char *nas_space_decision_name(const nas_space *s, int i, char *buf, size_t n)
{
    if (!buf || n == 0)
        return buf;
    buf[0] = '\0';
    if (!s || i < 0 || i >= nas_space_seq_len(s))
        return buf;
    if (nas__space_chain(s))
        return nas__chain_decision_name(nas__space_chain(s), i, buf, n);
    snprintf(buf, n, "edge %d<-%d", cell_to[i], cell_from[i]);
    return buf;
}

const char *nas_space_token_name(const nas_space *s, int tok)
{
    if (!s)
        return NULL;
    if (nas__space_chain(s))
        return nas__chain_token_name(nas__space_chain(s), tok);
    return nas_op_name(tok);
}

int nas_space_decision_choices(const nas_space *s, int i)
{
    if (!s || i < 0 || i >= nas_space_seq_len(s))
        return 0;
    if (nas__space_chain(s))
        return nas__chain_decision_choices(nas__space_chain(s), i);
    int n = 0;
    for (int t = 0; t < nas_space_vocab_size(s); t++)
        n += nas_space_token_allowed(s, i, t);
    return n;
}

int nas_space_decision_token(const nas_space *s, int i, int j)
{
    if (nas__space_chain(s))
        return nas__chain_decision_token(nas__space_chain(s), i, j);
    for (int t = 0; t < nas_space_vocab_size(s); t++)
        if (nas_space_token_allowed(s, i, t) && j-- == 0)
            return t;
    return 0;
}

void nas_space_genotype_at(const nas_space *s, uint64_t idx, nas_genotype *g)
{
    memset(g, 0, sizeof *g);
    g->len = nas_space_seq_len(s);
    for (int i = 0; i < g->len; i++) {
        int n = nas_space_decision_choices(s, i);
        g->tok[i] = (uint8_t)nas_space_decision_token(s, i, (int)(idx % (uint64_t)n));
        idx /= (uint64_t)n;
    }
}

void nas_space_input(const nas_space *s, int *c, int *h, int *w, int *classes)
{
    nas__desc_input(nas_space_get_desc(s), c, h, w, classes);
}

void nas__desc_input(const nas_space_desc *d, int *c, int *h, int *w, int *classes)
{
    int data = d->in_c <= 0 && d->data_c > 0; /* issue 28: the data's shape */
    if (c)
        *c = d->in_c > 0 ? d->in_c : data ? d->data_c : 1;
    if (h)
        *h = d->in_c > 0 ? d->in_h : data ? d->data_h : 28;
    if (w)
        *w = d->in_c > 0 ? d->in_w : data ? d->data_w : 28;
    if (classes)
        *classes = d->classes > 0 ? d->classes : d->data_classes > 0 ? d->data_classes : 10;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int nas_space_enumerate_keys(const nas_space *s, uint64_t limit, uint64_t *distinct,
                             uint64_t *valid)
{
    if (distinct)
        *distinct = 0;
    if (valid)
        *valid = 0;
    if (!s)
        return NAS_EINVAL;
    uint64_t size = 1; /* product of the choice counts, stopped past the limit */
    for (int i = 0; i < nas_space_seq_len(s); i++) {
        uint64_t c = (uint64_t)nas_space_decision_choices(s, i);
        if (c == 0 || size > limit / c)
            return NAS_EUNSUPPORTED;
        size *= c;
    }
    struct { uint64_t size; } cnt = {size};
    size_t n = (size_t)cnt.size;
    char **keys = malloc((n ? n : 1) * sizeof *keys);
    if (!keys)
        return NAS_ENOMEM;
    size_t m = 0;
    int rc = NAS_OK;
    for (uint64_t i = 0; i < cnt.size; i++) {
        nas_genotype g;
        nas_space_genotype_at(s, i, &g);
        if (!nas_space_is_valid(s, &g))
            continue;
        char k[NAS_GENOTYPE_STR_MAX];
        nas_space_key(s, &g, k, sizeof k);
        keys[m] = strdup(k);
        if (!keys[m]) {
            rc = NAS_ENOMEM;
            break;
        }
        m++;
    }
    if (rc == NAS_OK) {
        qsort(keys, m, sizeof *keys, cmp_str);
        uint64_t d = 0;
        for (size_t i = 0; i < m; i++)
            if (i == 0 || strcmp(keys[i], keys[i - 1]) != 0)
                d++;
        if (distinct)
            *distinct = d;
        if (valid)
            *valid = m;
    }
    for (size_t i = 0; i < m; i++)
        free(keys[i]);
    free(keys);
    return rc;
}

int nas_space_counts_get(const nas_space *s, nas_space_counts *out)
{
    if (!s || !out)
        return NAS_EINVAL;
    if (nas__space_chain(s))
        return nas__chain_counts(nas__space_chain(s), out);
    memset(out, 0, sizeof *out);
    out->size = nas_space_size(s); /* at most 5^6 */
    out->size_exact = 1;
    out->log10_size = log10((double)out->size);
    uint64_t d = 0;
    if (nas_space_enumerate_keys(s, out->size, &d, NULL) == NAS_OK) {
        out->keys = d;
        out->keys_exact = 1;
        out->keys_counted = 1;
        out->log10_keys = d ? log10((double)d) : 0;
    }
    return NAS_OK;
}
