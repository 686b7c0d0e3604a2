/*
 * space/space.c - the facade of every space type: the nas_space handle and
 * the public functions of nas/space.h and nas/layers.h that depend on the
 * type, each one call through the type's table (space_impl.h,
 * nas__space_type), plus what every type shares: enumeration, counting by
 * enumeration, the input shape.
 *
 * Call graph: space.c -> a type's table -> that type's files (cell.c ->
 * cell_key.c, cell_layers.c; chain_layers.c -> chain.c). No type calls the
 * facade or another type. A new space type is a file defining its table
 * and one entry in `types` below.
 */
#include <math.h>   /* log10 */
#include <stdlib.h> /* calloc, free, malloc, qsort */
#include <string.h> /* memset, strcmp, strdup */
#include "nas/layers.h"
#include "space_impl.h"

static const nas__space_type *const types[] = {&nas__cell_type, &nas__chain_type};

struct nas_space {
    nas_space_desc desc;
    const nas__space_type *type;
    void *impl;            /* the type's state */
    nas_key_kind key_kind; /* what nas_space_key computes */
};

/* A NULL space reads and writes cell genotypes (the store's migrations). */
static const nas__space_type *type_of(const nas_space *s) { return s ? s->type : &nas__cell_type; }
static const void *impl_of(const nas_space *s) { return s ? s->impl : NULL; }

int nas_space_create(const nas_space_desc *desc, nas_space **out, nas_error *err)
{
    if (out)
        *out = NULL;
    if (!desc || !out)
        return nas_error_set(err, NAS_EINVAL, "space: NULL argument");
    const nas__space_type *t = NULL;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (types[i]->id == desc->type)
            t = types[i];
    if (!t)
        return nas_error_set(err, NAS_EINVAL, "space: unknown type %d (\"cell\" or \"chain\")",
                             (int)desc->type);
    void *impl = NULL;
    int rc = t->create(desc, &impl, err);
    if (rc != NAS_OK)
        return rc;
    nas_space *s = calloc(1, sizeof *s);
    if (!s) {
        t->destroy(impl);
        return nas_error_set(err, NAS_ENOMEM, "space: out of memory");
    }
    s->desc = *desc;
    s->type = t;
    s->impl = impl;
    *out = s;
    return NAS_OK;
}

void nas_space_destroy(nas_space *s)
{
    if (s)
        s->type->destroy(s->impl);
    free(s);
}

void nas_space_set_key_kind(nas_space *s, nas_key_kind kind) { s->key_kind = kind; }

const nas_space_desc *nas_space_get_desc(const nas_space *s) { return &s->desc; }

int nas_space_seq_len(const nas_space *s) { return s->type->seq_len(s->impl); }

int nas_space_vocab_size(const nas_space *s) { return s->type->vocab_size(s->impl); }

int nas_space_token_allowed(const nas_space *s, int pos, int tok)
{
    return s->type->token_allowed(s->impl, pos, tok);
}

uint64_t nas_space_size(const nas_space *s) { return s->type->size(s->impl); }

int nas_space_is_valid(const nas_space *s, const nas_genotype *g)
{
    return s ? s->type->is_valid(s->impl, g) : 0;
}

void nas_space_sample(const nas_space *s, nas_rng *r, nas_genotype *out)
{
    s->type->sample(s->impl, r, out);
}

void nas_space_mutate(const nas_space *s, nas_rng *r, const nas_genotype *parent,
                      nas_genotype *child)
{
    s->type->mutate(s->impl, r, parent, child);
}

int nas_space_format(const nas_space *s, const nas_genotype *g, char *buf, size_t n)
{
    return type_of(s)->format(impl_of(s), g, buf, n);
}

int nas_space_parse(const nas_space *s, const char *str, nas_genotype *out, nas_error *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!str || !out)
        return nas_error_set(err, NAS_EINVAL, "genotype: NULL argument");
    return type_of(s)->parse(impl_of(s), str, out, err);
}

void nas_space_key(const nas_space *s, const nas_genotype *g, char *buf, size_t n)
{
    if (!buf || n == 0)
        return;
    type_of(s)->key(impl_of(s), s ? s->key_kind : NAS_KEY_FUNCTION, g, buf, n);
}

int nas_space_layers(const nas_space *s, const nas_genotype *g, nas_layers *out, nas_error *err)
{
    if (!out)
        return nas_error_set(err, NAS_EINVAL, "nas_space_layers: NULL argument");
    memset(out, 0, sizeof *out);
    if (!s || !g)
        return nas_error_set(err, NAS_EINVAL, "nas_space_layers: NULL argument");
    return s->type->layers(s->impl, g, out, err);
}

void nas_space_input(const nas_space *s, int *c, int *h, int *w, int *classes)
{
    nas__desc_input(&s->desc, c, h, w, classes); /* space/input.c */
}

/* ---- decisions (nas/layers.h) ------------------------------------------------------- */

const char *nas_space_decision_name(const nas_space *s, int i, char *buf, size_t n)
{
    if (!buf || n == 0)
        return buf;
    buf[0] = '\0';
    if (!s || i < 0 || i >= nas_space_seq_len(s))
        return buf;
    return s->type->decision_name(s->impl, i, buf, n);
}

const char *nas_space_token_name(const nas_space *s, int tok)
{
    return s ? s->type->token_name(s->impl, tok) : NULL;
}

int nas_space_decision_choices(const nas_space *s, int i)
{
    if (!s || i < 0 || i >= nas_space_seq_len(s))
        return 0;
    return s->type->decision_choices(s->impl, i);
}

int nas_space_decision_token(const nas_space *s, int i, int j)
{
    return s->type->decision_token(s->impl, i, j);
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
    size_t n = (size_t)size;
    char **keys = malloc((n ? n : 1) * sizeof *keys);
    if (!keys)
        return NAS_ENOMEM;
    size_t m = 0;
    int rc = NAS_OK;
    for (uint64_t i = 0; i < size; i++) {
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

/* Types without a counting formula (cell) count keys by enumeration, up
 * to this many genotypes (beyond: keys_counted = 0). */
#define ENUMERATE_MAX (UINT64_C(1) << 20)

int nas_space_counts_get(const nas_space *s, nas_space_counts *out)
{
    if (!s || !out)
        return NAS_EINVAL;
    if (s->type->counts)
        return s->type->counts(s->impl, out);
    memset(out, 0, sizeof *out);
    out->size = nas_space_size(s);
    out->size_exact = out->size < NAS_SPACE_COUNT_CAP;
    out->log10_size = log10((double)out->size);
    uint64_t d = 0;
    if (out->size <= ENUMERATE_MAX && nas_space_enumerate_keys(s, out->size, &d, NULL) == NAS_OK) {
        out->keys = d;
        out->keys_exact = 1;
        out->keys_counted = 1;
        out->log10_keys = d ? log10((double)d) : 0;
    }
    return NAS_OK;
}
