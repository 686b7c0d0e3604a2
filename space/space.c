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
#include <ctype.h>  /* isspace */
#include <math.h>   /* log10 */
#include <stdio.h>  /* snprintf */
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
    int arch_len;          /* the type's tokens; the recipe's follow (issue 33) */
    nas__recipe rec;       /* recipe choices (space/recipe.c); rec.n_dec 0: none */
};

/* A NULL space reads and writes cell genotypes (the store's migrations). */
static const nas__space_type *type_of(const nas_space *s) { return s ? s->type : &nas__cell_type; }
static const void *impl_of(const nas_space *s) { return s ? s->impl : NULL; }

/* Issue 33: the longest string of s with its recipe words: the type's
 * genotype of the longest token name at every decision, formatted, plus
 * the longest " KEY=VALUE" word of each recipe decision. */
static size_t longest_string(const nas_space *s)
{
    nas_genotype g;
    memset(&g, 0, sizeof g);
    g.len = s->arch_len;
    for (int i = 0; i < s->arch_len; i++) {
        size_t best = 0;
        for (int j = 0; j < s->type->decision_choices(s->impl, i); j++) {
            int tok = s->type->decision_token(s->impl, i, j);
            const char *name = s->type->token_name(s->impl, tok);
            if (j == 0 || (name && strlen(name) > best)) {
                g.tok[i] = (uint8_t)tok;
                best = name ? strlen(name) : 0;
            }
        }
    }
    char buf[4 * NAS_GENOTYPE_STR_MAX];
    size_t len = s->type->format(s->impl, &g, buf, sizeof buf) == NAS_OK ? strlen(buf) : sizeof buf;
    for (int d = 0; d < s->rec.n_dec; d++) {
        size_t best = 0;
        for (int j = 0; j < s->rec.n[d]; j++)
            if (strlen(s->rec.word[d][j]) > best)
                best = strlen(s->rec.word[d][j]);
        len += 1 + best;
    }
    return len;
}

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
    s->arch_len = t->seq_len(impl);
    rc = nas__recipe_init(&s->rec, &desc->recipe, t->vocab_size(impl), err);
    if (rc == NAS_OK && s->arch_len + s->rec.n_dec > NAS_GENOTYPE_MAX_LEN)
        rc = nas_error_set(err, NAS_EINVAL, "space: %d decisions with the recipe choices, "
                           "expected at most %d", s->arch_len + s->rec.n_dec, NAS_GENOTYPE_MAX_LEN);
    size_t longest = rc == NAS_OK && s->rec.n_dec ? longest_string(s) : 0;
    if (longest >= NAS_GENOTYPE_STR_MAX)
        rc = nas_error_set(err, NAS_EINVAL, "space: a genotype string with the recipe choices' "
                           "words could be %zu characters long, expected at most %d (fewer "
                           "layers, or shorter values)", longest, NAS_GENOTYPE_STR_MAX - 1);
    if (rc != NAS_OK) {
        nas_space_destroy(s);
        return rc;
    }
    *out = s;
    return NAS_OK;
}

/* ---- recipe choices (issue 33): the type sees its own tokens only ---------------- */

/* g's first arch_len tokens as a genotype of the type. */
static nas_genotype arch_of(const nas_space *s, const nas_genotype *g)
{
    nas_genotype a = *g;
    if (s && s->rec.n_dec && a.len > s->arch_len)
        a.len = s->arch_len;
    return a;
}

/* 1 when g carries a token for every recipe decision (and s has some). */
static int has_recipe(const nas_space *s, const nas_genotype *g)
{
    return s && s->rec.n_dec && g->len == s->arch_len + s->rec.n_dec;
}

int nas_space_arch_len(const nas_space *s) { return s ? s->arch_len : NAS_CELL_EDGES; }

int nas_space_recipe_len(const nas_space *s) { return s ? s->rec.n_dec : 0; }

void nas_config_recipe_values(const nas_config *cfg, const nas_space *s, const nas_genotype *g,
                              nas_recipe_values *out)
{
    memset(out, 0, sizeof *out);
    out->lr = cfg->proxy.lr;
    out->weight_decay = cfg->proxy.weight_decay;
    out->batch_size = cfg->proxy.batch_size;
    snprintf(out->augment, sizeof out->augment, "%s", cfg->data.augment);
    if (!g || !has_recipe(s, g))
        return;
    const nas_recipe_choices *c = &s->desc.recipe;
    for (int d = 0; d < s->rec.n_dec; d++) {
        int k = s->rec.key[d], j = g->tok[s->arch_len + d] - s->rec.tok0[d];
        if (j < 0 || j >= s->rec.n[d])
            continue;
        if (k == NAS_RECIPE_LR)
            out->lr = c->num[k][j];
        else if (k == NAS_RECIPE_WEIGHT_DECAY)
            out->weight_decay = c->num[k][j];
        else if (k == NAS_RECIPE_BATCH_SIZE)
            out->batch_size = (int)c->num[k][j];
        else /* data.augment's form: "" for none */
            snprintf(out->augment, sizeof out->augment, "%s",
                     strcmp(c->augment[j], "none") ? c->augment[j] : "");
    }
}

void nas_space_destroy(nas_space *s)
{
    if (s)
        s->type->destroy(s->impl);
    free(s);
}

void nas_space_set_key_kind(nas_space *s, nas_key_kind kind) { s->key_kind = kind; }

const nas_space_desc *nas_space_get_desc(const nas_space *s) { return &s->desc; }

int nas_space_seq_len(const nas_space *s) { return s->arch_len + s->rec.n_dec; }

int nas_space_vocab_size(const nas_space *s)
{
    return s->rec.n_dec ? s->rec.vocab : s->type->vocab_size(s->impl);
}

int nas_space_token_allowed(const nas_space *s, int pos, int tok)
{
    if (pos >= s->arch_len)
        return nas__recipe_token_allowed(&s->rec, pos - s->arch_len, tok);
    return s->type->token_allowed(s->impl, pos, tok);
}

/* Product of the recipe decisions' choice counts (1 without). */
static uint64_t recipe_size(const nas_space *s)
{
    uint64_t p = 1;
    for (int d = 0; d < s->rec.n_dec; d++)
        p *= (uint64_t)s->rec.n[d];
    return p;
}

uint64_t nas_space_size(const nas_space *s)
{
    uint64_t n = s->type->size(s->impl), p = recipe_size(s);
    return n >= NAS_SPACE_COUNT_CAP / p ? NAS_SPACE_COUNT_CAP : n * p;
}

int nas_space_is_valid(const nas_space *s, const nas_genotype *g)
{
    if (!s || !g)
        return 0;
    if (!s->rec.n_dec)
        return s->type->is_valid(s->impl, g);
    if (!has_recipe(s, g))
        return 0;
    for (int d = 0; d < s->rec.n_dec; d++)
        if (!nas__recipe_token_allowed(&s->rec, d, g->tok[s->arch_len + d]))
            return 0;
    nas_genotype a = arch_of(s, g);
    return s->type->is_valid(s->impl, &a);
}

/* Uniform over the type's valid genotypes, then each recipe decision
 * uniform over its choices (no draw without recipe choices: the old
 * sequences). */
void nas_space_sample(const nas_space *s, nas_rng *r, nas_genotype *out)
{
    s->type->sample(s->impl, r, out);
    for (int d = 0; d < s->rec.n_dec; d++)
        out->tok[s->arch_len + d] =
            (uint8_t)(s->rec.tok0[d] + (int)nas_rng_bounded(r, (uint32_t)s->rec.n[d]));
    out->len = s->arch_len + s->rec.n_dec;
}

/* One-position mutation over every token: a position uniform over the
 * arch_len + recipe positions; an arch position is the type's mutation,
 * a recipe one takes another of its choices (uniform). */
void nas_space_mutate(const nas_space *s, nas_rng *r, const nas_genotype *parent,
                      nas_genotype *child)
{
    if (!has_recipe(s, parent)) {
        s->type->mutate(s->impl, r, parent, child);
        return;
    }
    uint32_t pos = nas_rng_bounded(r, (uint32_t)(s->arch_len + s->rec.n_dec));
    *child = *parent;
    if ((int)pos < s->arch_len) {
        nas_genotype a = arch_of(s, parent), c;
        s->type->mutate(s->impl, r, &a, &c);
        memcpy(child->tok, c.tok, (size_t)s->arch_len);
        return;
    }
    int d = (int)pos - s->arch_len;
    int j = parent->tok[pos] - s->rec.tok0[d];
    int k = (int)nas_rng_bounded(r, (uint32_t)(s->rec.n[d] - 1));
    child->tok[pos] = (uint8_t)(s->rec.tok0[d] + (k >= j ? k + 1 : k));
}

int nas_space_format(const nas_space *s, const nas_genotype *g, char *buf, size_t n)
{
    if (!g)
        return type_of(s)->format(impl_of(s), g, buf, n);
    nas_genotype a = arch_of(s, g);
    int rc = type_of(s)->format(impl_of(s), &a, buf, n);
    if (rc == NAS_OK && has_recipe(s, g) &&
        (rc = nas__recipe_format(&s->rec, g->tok + s->arch_len, buf, n)) != NAS_OK)
        buf[0] = '\0';
    return rc;
}

int nas_space_parse(const nas_space *s, const char *str, nas_genotype *out, nas_error *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!str || !out)
        return nas_error_set(err, NAS_EINVAL, "genotype: NULL argument");
    if (!s || !s->rec.n_dec)
        return type_of(s)->parse(impl_of(s), str, out, err);
    /* the type's string ends at the first white space after its start */
    const char *p = str;
    while (isspace((unsigned char)*p))
        p++;
    size_t len = strcspn(p, " \t\r\n");
    char arch[NAS_GENOTYPE_STR_MAX];
    if (len >= sizeof arch)
        return nas_error_set(err, NAS_EFORMAT, "genotype '%.60s...': longer than %d characters",
                             str, NAS_GENOTYPE_STR_MAX - 1);
    snprintf(arch, sizeof arch, "%.*s", (int)len, p);
    int rc = s->type->parse(s->impl, arch, out, err);
    if (rc == NAS_OK)
        rc = nas__recipe_parse(&s->rec, &s->desc.recipe, p + len, str, out->tok + s->arch_len,
                               err);
    if (rc != NAS_OK) {
        memset(out, 0, sizeof *out);
        return rc;
    }
    out->len = s->arch_len + s->rec.n_dec;
    return NAS_OK;
}

void nas_space_key(const nas_space *s, const nas_genotype *g, char *buf, size_t n)
{
    if (!buf || n == 0)
        return;
    nas_genotype a = arch_of(s, g);
    type_of(s)->key(impl_of(s), s ? s->key_kind : NAS_KEY_FUNCTION, &a, buf, n);
    if (has_recipe(s, g) && nas__recipe_format(&s->rec, g->tok + s->arch_len, buf, n) != NAS_OK)
        buf[0] = '\0';
}

int nas_space_layers(const nas_space *s, const nas_genotype *g, nas_layers *out, nas_error *err)
{
    if (!out)
        return nas_error_set(err, NAS_EINVAL, "nas_space_layers: NULL argument");
    memset(out, 0, sizeof *out);
    if (!s || !g)
        return nas_error_set(err, NAS_EINVAL, "nas_space_layers: NULL argument");
    nas_genotype a = arch_of(s, g);
    return s->type->layers(s->impl, &a, out, err);
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
    if (i >= s->arch_len) { /* issue 33: "proxy.lr", "data.augment" */
        int k = s->rec.key[i - s->arch_len];
        snprintf(buf, n, "%s.%s", k == NAS_RECIPE_AUGMENT ? "data" : "proxy",
                 nas__recipe_key_name(k));
        return buf;
    }
    return s->type->decision_name(s->impl, i, buf, n);
}

const char *nas_space_token_name(const nas_space *s, int tok)
{
    if (s && s->rec.n_dec && tok >= s->rec.tok0[0])
        return nas__recipe_token_name(&s->rec, tok);
    return s ? s->type->token_name(s->impl, tok) : NULL;
}

int nas_space_decision_choices(const nas_space *s, int i)
{
    if (!s || i < 0 || i >= nas_space_seq_len(s))
        return 0;
    if (i >= s->arch_len)
        return s->rec.n[i - s->arch_len];
    return s->type->decision_choices(s->impl, i);
}

int nas_space_decision_token(const nas_space *s, int i, int j)
{
    if (i >= s->arch_len)
        return s->rec.tok0[i - s->arch_len] + j;
    return s->type->decision_token(s->impl, i, j);
}

/* Genotype idx over the first len decisions. */
static void genotype_at(const nas_space *s, uint64_t idx, int len, nas_genotype *g)
{
    memset(g, 0, sizeof *g);
    g->len = len;
    for (int i = 0; i < g->len; i++) {
        int n = nas_space_decision_choices(s, i);
        g->tok[i] = (uint8_t)nas_space_decision_token(s, i, (int)(idx % (uint64_t)n));
        idx /= (uint64_t)n;
    }
}

void nas_space_genotype_at(const nas_space *s, uint64_t idx, nas_genotype *g)
{
    genotype_at(s, idx, nas_space_seq_len(s), g);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* nas_space_enumerate_keys over the first len decisions: all of them, or
 * the type's alone (arch_len; the type's own validity and key). */
static int enumerate(const nas_space *s, int len, uint64_t limit, uint64_t *distinct,
                     uint64_t *valid);

int nas_space_enumerate_keys(const nas_space *s, uint64_t limit, uint64_t *distinct,
                             uint64_t *valid)
{
    return s ? enumerate(s, nas_space_seq_len(s), limit, distinct, valid) : NAS_EINVAL;
}

static int enumerate(const nas_space *s, int len, uint64_t limit, uint64_t *distinct,
                     uint64_t *valid)
{
    if (distinct)
        *distinct = 0;
    if (valid)
        *valid = 0;
    uint64_t size = 1; /* product of the choice counts, stopped past the limit */
    for (int i = 0; i < len; i++) {
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
        genotype_at(s, i, len, &g);
        char k[NAS_GENOTYPE_STR_MAX];
        if (len == s->arch_len && s->rec.n_dec) { /* the type's part alone */
            if (!s->type->is_valid(s->impl, &g))
                continue;
            s->type->key(s->impl, s->key_kind, &g, k, sizeof k);
        } else {
            if (!nas_space_is_valid(s, &g))
                continue;
            nas_space_key(s, &g, k, sizeof k);
        }
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

/* The counts of the type's part (recipe choices aside). */
static int count_type(const nas_space *s, nas_space_counts *out)
{
    if (s->type->counts)
        return s->type->counts(s->impl, out);
    memset(out, 0, sizeof *out);
    out->size = s->type->size(s->impl);
    out->size_exact = out->size < NAS_SPACE_COUNT_CAP;
    out->log10_size = log10((double)out->size);
    uint64_t d = 0;
    if (out->size <= ENUMERATE_MAX && enumerate(s, s->arch_len, out->size, &d, NULL) == NAS_OK) {
        out->keys = d;
        out->keys_exact = 1;
        out->keys_counted = 1;
        out->log10_keys = d ? log10((double)d) : 0;
    }
    return NAS_OK;
}

int nas_space_counts_get(const nas_space *s, nas_space_counts *out)
{
    if (!s || !out)
        return NAS_EINVAL;
    int rc = count_type(s, out);
    uint64_t p = recipe_size(s); /* issue 33: every recipe pick is its own key */
    if (rc != NAS_OK || p == 1)
        return rc;
    out->log10_size += log10((double)p);
    if (!out->size_exact || out->size >= NAS_SPACE_COUNT_CAP / p)
        out->size = NAS_SPACE_COUNT_CAP, out->size_exact = 0;
    else
        out->size *= p;
    if (out->keys_counted) {
        out->log10_keys += log10((double)p);
        if (!out->keys_exact || out->keys >= NAS_SPACE_COUNT_CAP / p)
            out->keys = NAS_SPACE_COUNT_CAP, out->keys_exact = 0;
        else
            out->keys *= p;
    }
    return NAS_OK;
}
