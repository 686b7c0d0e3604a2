/*
 * space/chain.c - chain (MobileNet-style) spaces: the description of
 * nas/chain.h compiled into an ordered list of categorical decisions, the
 * genotype's string and canonical key, sampling and mutation
 * (docs/spaces.md).
 *
 * Decisions, stage by stage, in this order: the stage's width (when
 * `channels` is a list), its depth (when `depth` is given), its SE switch
 * (when se = "choice"), then one op per layer (always, even with a single
 * choice, so the string reads as the network). A token is an index into
 * one vocabulary of words shared by all positions ("c24", "d3", "se_on",
 * "se_off", op names), so NAO's embedding of "mb6_k3" is the same at every
 * layer.
 *
 * String: the tokens of a stage joined by ':', stages joined by '|':
 *   mb1_k3|c24:d2:mb6_k3:mb3_k5:skip:zero|...
 *
 * Canonical key (equal exactly for genotypes that compute the same
 * function): per stage, its width token (if the width is a decision), its
 * SE token (if SE is a decision and an MBConv layer runs), then the ops of
 * the layers that run and are not no-ops; stages joined by '|'. A layer
 * does not run when it lies beyond the chosen depth; it is a no-op when it
 * is `zero`, or `skip` where input and output shapes match (stride 1, same
 * width). The network is a function of exactly those tokens (strides,
 * fixed widths and activations are the space's), so equal keys mean equal
 * networks, and different keys differ in a width, an SE switch or the op
 * sequence, i.e. in weights: nothing else is merged.
 *
 * Sampling draws every decision uniformly and independently (uniform over
 * genotypes; every genotype is valid). Mutation (Real et al., AAAI 2019)
 * changes one decision that has more than one choice to another value.
 */
#include <ctype.h>  /* isdigit */
#include <math.h>   /* log10 */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free, strtol */
#include <string.h>
#include "nas/layers.h"
#include "nas/suggest.h" /* nas_suggest_hint */
#include "space_impl.h"

enum { DEC_WIDTH = 0, DEC_DEPTH, DEC_SE, DEC_OP };

typedef struct dec {
    int kind, stage, layer;
    int n;                         /* allowed tokens */
    uint8_t tok[NAS_CHAIN_MAX_OPS]; /* vocabulary ids, in declared order */
    int val[NAS_CHAIN_MAX_OPS];    /* width, depth, se (0/1) or op code */
} dec;

struct nas__chain {
    nas_chain_desc d;
    int in_c, in_h, in_w, classes;
    int n_dec;
    dec dec[NAS_GENOTYPE_MAX_LEN];
    int n_vocab;
    char vocab[255][16];
    int first_dec[NAS_CHAIN_MAX_STAGES], n_stage_dec[NAS_CHAIN_MAX_STAGES];
};

/* ---- ops ------------------------------------------------------------------------- */

const char *nas_chain_op_name(uint16_t op, char *buf, size_t n)
{
    switch (nas_chain_op_kind_of(op)) {
    case NAS_CHAIN_MB:
        snprintf(buf, n, "mb%d_k%d", nas_chain_op_expand(op), nas_chain_op_kernel(op));
        break;
    case NAS_CHAIN_CONV: snprintf(buf, n, "conv_k%d", nas_chain_op_kernel(op)); break;
    case NAS_CHAIN_SKIP: snprintf(buf, n, "skip"); break;
    case NAS_CHAIN_ZERO: snprintf(buf, n, "zero"); break;
    default: snprintf(buf, n, "?"); break;
    }
    return buf;
}

/* A whole decimal number of 1 or 2 digits at s, ending at `end`; -1 otherwise. */
static int small_num(const char *s, const char *end)
{
    if (end - s < 1 || end - s > 2)
        return -1;
    int v = 0;
    for (const char *p = s; p < end; p++) {
        if (!isdigit((unsigned char)*p))
            return -1;
        v = v * 10 + (*p - '0');
    }
    if (end - s == 2 && s[0] == '0')
        return -1;
    return v;
}

int nas_chain_op_parse(const char *name, uint16_t *op)
{
    if (!name)
        return -1;
    if (strcmp(name, "skip") == 0) {
        *op = nas_chain_op_make(NAS_CHAIN_SKIP, 0, 0);
        return 0;
    }
    if (strcmp(name, "zero") == 0) {
        *op = nas_chain_op_make(NAS_CHAIN_ZERO, 0, 0);
        return 0;
    }
    if (strncmp(name, "conv_k", 6) == 0) {
        int k = small_num(name + 6, name + strlen(name));
        if (k != 1 && k != 3 && k != 5 && k != 7)
            return -1;
        *op = nas_chain_op_make(NAS_CHAIN_CONV, 0, k);
        return 0;
    }
    if (strncmp(name, "mb", 2) == 0) {
        const char *us = strstr(name, "_k");
        if (!us)
            return -1;
        int e = small_num(name + 2, us);
        int k = small_num(us + 2, name + strlen(name));
        if (e < 1 || e > 8 || (k != 3 && k != 5 && k != 7))
            return -1;
        *op = nas_chain_op_make(NAS_CHAIN_MB, e, k);
        return 0;
    }
    return -1;
}

const char *nas_act_name(int act)
{
    switch (act) {
    case NAS_ACT_RELU: return "relu";
    case NAS_ACT_RELU6: return "relu6";
    case NAS_ACT_HSWISH: return "hswish";
    }
    return NULL;
}

/* ---- compile ------------------------------------------------------------------------ */

static int vocab_add(nas__chain *c, const char *word, nas_error *err)
{
    for (int i = 0; i < c->n_vocab; i++)
        if (strcmp(c->vocab[i], word) == 0)
            return i;
    if (c->n_vocab >= 255)
        return nas_error_set(err, NAS_EINVAL,
                             "space: more than 255 distinct choice words, expected at most 255 "
                             "(tokens are bytes)");
    snprintf(c->vocab[c->n_vocab], sizeof c->vocab[0], "%s", word);
    return c->n_vocab++;
}

static int add_dec(nas__chain *c, int kind, int stage, int layer, const int *vals, int n,
                   nas_error *err)
{
    if (c->n_dec >= NAS_GENOTYPE_MAX_LEN)
        return nas_error_set(err, NAS_EINVAL,
                             "space: more than %d decisions (widths, depths, SE switches and one op "
                             "per layer), expected at most %d",
                             NAS_GENOTYPE_MAX_LEN, NAS_GENOTYPE_MAX_LEN);
    if (n < 1 || n > NAS_CHAIN_MAX_OPS)
        return nas_error_set(err, NAS_EINVAL, "space: stage %d: a decision with %d choices, expected "
                                              "1 to %d", stage + 1, n, NAS_CHAIN_MAX_OPS);
    dec *d = &c->dec[c->n_dec];
    d->kind = kind;
    d->stage = stage;
    d->layer = layer;
    d->n = n;
    for (int i = 0; i < n; i++) {
        char w[16];
        if (kind == DEC_WIDTH)
            snprintf(w, sizeof w, "c%d", vals[i]);
        else if (kind == DEC_DEPTH)
            snprintf(w, sizeof w, "d%d", vals[i]);
        else if (kind == DEC_SE)
            snprintf(w, sizeof w, "%s", vals[i] ? "se_on" : "se_off");
        else
            nas_chain_op_name((uint16_t)vals[i], w, sizeof w);
        int t = vocab_add(c, w, err);
        if (t < 0)
            return t;
        for (int j = 0; j < i; j++)
            if (d->tok[j] == t)
                return nas_error_set(err, NAS_EINVAL, "space: stage %d: choice '%s' listed twice",
                                     stage + 1, w);
        d->tok[i] = (uint8_t)t;
        d->val[i] = vals[i];
    }
    c->n_dec++;
    return NAS_OK;
}

static size_t max_string_len(const nas__chain *c)
{
    size_t len = 0;
    for (int i = 0; i < c->n_dec; i++) {
        size_t m = 0;
        for (int j = 0; j < c->dec[i].n; j++) {
            size_t l = strlen(c->vocab[c->dec[i].tok[j]]);
            m = l > m ? l : m;
        }
        len += m + 1; /* separator */
    }
    return len;
}

int nas__chain_create(const nas_space_desc *desc, void **out, nas_error *err)
{
    *out = NULL;
    const nas_chain_desc *d = &desc->chain;
    if (d->n_stages < 1 || d->n_stages > NAS_CHAIN_MAX_STAGES)
        return nas_error_set(err, NAS_EINVAL, "space: %d stages, expected 1 to %d", d->n_stages,
                             NAS_CHAIN_MAX_STAGES);
    if (d->stem_channels < 1 || d->stem_kernel < 1 || d->stem_stride < 1)
        return nas_error_set(err, NAS_EINVAL, "space: the stem needs kernel, channels and stride >= 1");
    nas__chain *c = calloc(1, sizeof *c);
    if (!c)
        return nas_error_set(err, NAS_ENOMEM, "space: out of memory");
    c->d = *d;
    nas__desc_input(desc, &c->in_c, &c->in_h, &c->in_w, &c->classes);
    int rc = NAS_OK;
    for (int s = 0; s < d->n_stages && rc == NAS_OK; s++) {
        const nas_chain_stage *st = &d->stages[s];
        c->first_dec[s] = c->n_dec;
        if (st->n_width < 1 || st->layers < 1 || st->layers > NAS_CHAIN_MAX_LAYERS || st->n_ops < 1 ||
            st->stride < 1) {
            rc = nas_error_set(err, NAS_EINVAL,
                               "space: stage %d needs channels, stride >= 1, 1 to %d layers and ops",
                               s + 1, NAS_CHAIN_MAX_LAYERS);
            break;
        }
        for (int i = 0; i < st->n_depth; i++)
            if (st->depth[i] < 1 || st->depth[i] > st->layers)
                rc = nas_error_set(err, NAS_EINVAL, "space: stage %d: depth %d not in [1, %d]", s + 1,
                                   st->depth[i], st->layers);
        if (rc)
            break;
        if (st->width_choice)
            rc = add_dec(c, DEC_WIDTH, s, -1, st->width, st->n_width, err);
        if (!rc && st->n_depth > 0)
            rc = add_dec(c, DEC_DEPTH, s, -1, st->depth, st->n_depth, err);
        if (!rc && st->se == 2) {
            static const int se[2] = {0, 1};
            rc = add_dec(c, DEC_SE, s, -1, se, 2, err);
        }
        for (int l = 0; l < st->layers && !rc; l++) {
            int vals[NAS_CHAIN_MAX_OPS];
            const uint16_t *ops = (l == 0 && st->n_first > 0) ? st->first : st->ops;
            int n = (l == 0 && st->n_first > 0) ? st->n_first : st->n_ops;
            for (int i = 0; i < n; i++)
                vals[i] = ops[i];
            rc = add_dec(c, DEC_OP, s, l, vals, n, err);
        }
        c->n_stage_dec[s] = c->n_dec - c->first_dec[s];
    }
    if (rc == NAS_OK && max_string_len(c) >= NAS_GENOTYPE_STR_MAX)
        rc = nas_error_set(err, NAS_EINVAL,
                           "space: a genotype string could be %zu characters long, expected at most %d",
                           max_string_len(c), NAS_GENOTYPE_STR_MAX - 1);
    if (rc) {
        free(c);
        return rc;
    }
    *out = c;
    return NAS_OK;
}

void nas__chain_destroy(void *c) { free(c); }

const nas_chain_desc *nas__chain_desc(const nas__chain *c) { return &c->d; }

void nas__chain_input(const nas__chain *c, int *ch, int *h, int *w, int *classes)
{
    if (ch)
        *ch = c->in_c;
    if (h)
        *h = c->in_h;
    if (w)
        *w = c->in_w;
    if (classes)
        *classes = c->classes;
}

int nas__chain_seq_len(const void *self) { return ((const nas__chain *)self)->n_dec; }
int nas__chain_vocab_size(const void *self) { return ((const nas__chain *)self)->n_vocab; }

/* Index of token `tok` among decision `pos`'s choices, or -1. */
static int choice_of(const nas__chain *c, int pos, int tok)
{
    if (pos < 0 || pos >= c->n_dec)
        return -1;
    const dec *d = &c->dec[pos];
    for (int i = 0; i < d->n; i++)
        if (d->tok[i] == tok)
            return i;
    return -1;
}

int nas__chain_token_allowed(const void *self, int pos, int tok)
{
    const nas__chain *c = self;
    return choice_of(c, pos, tok) >= 0;
}

uint64_t nas__chain_size(const void *self)
{
    const nas__chain *c = self;
    uint64_t n = 1;
    for (int i = 0; i < c->n_dec; i++) {
        if (n > NAS_SPACE_COUNT_CAP / (uint64_t)c->dec[i].n)
            return NAS_SPACE_COUNT_CAP;
        n *= (uint64_t)c->dec[i].n;
    }
    return n < NAS_SPACE_COUNT_CAP ? n : NAS_SPACE_COUNT_CAP;
}

int nas__chain_is_valid(const void *self, const nas_genotype *g)
{
    const nas__chain *c = self;
    if (!g || g->len != c->n_dec)
        return 0;
    for (int i = 0; i < c->n_dec; i++)
        if (choice_of(c, i, g->tok[i]) < 0)
            return 0;
    return 1;
}

int nas__chain_pick_of(const nas__chain *c, const nas_genotype *g, nas__chain_pick *p)
{
    if (!nas__chain_is_valid(c, g))
        return -1;
    memset(p, 0, sizeof *p);
    for (int s = 0; s < c->d.n_stages; s++) {
        const nas_chain_stage *st = &c->d.stages[s];
        p->width[s] = st->width[0];
        p->depth[s] = st->layers;
        p->se[s] = st->se == 1;
    }
    for (int i = 0; i < c->n_dec; i++) {
        const dec *d = &c->dec[i];
        int v = d->val[choice_of(c, i, g->tok[i])];
        switch (d->kind) {
        case DEC_WIDTH: p->width[d->stage] = v; break;
        case DEC_DEPTH: p->depth[d->stage] = v; break;
        case DEC_SE: p->se[d->stage] = v; break;
        default: p->op[d->stage][d->layer] = (uint16_t)v; break;
        }
    }
    return 0;
}

void nas__chain_sample(const void *self, nas_rng *r, nas_genotype *out)
{
    const nas__chain *c = self;
    memset(out, 0, sizeof *out);
    out->len = c->n_dec;
    for (int i = 0; i < c->n_dec; i++)
        out->tok[i] = c->dec[i].tok[nas_rng_bounded(r, (uint32_t)c->dec[i].n)];
}

void nas__chain_mutate(const void *self, nas_rng *r, const nas_genotype *parent,
                       nas_genotype *child)
{
    const nas__chain *c = self;
    *child = *parent;
    int open[NAS_GENOTYPE_MAX_LEN], n = 0;
    for (int i = 0; i < c->n_dec; i++)
        if (c->dec[i].n > 1)
            open[n++] = i;
    if (n == 0 || !nas__chain_is_valid(c, parent))
        return; /* a fixed network (one choice everywhere): the parent is the only genotype */
    int pos = open[nas_rng_bounded(r, (uint32_t)n)];
    const dec *d = &c->dec[pos];
    int cur = choice_of(c, pos, parent->tok[pos]);
    int k = (int)nas_rng_bounded(r, (uint32_t)(d->n - 1));
    if (k >= cur)
        k++;
    child->tok[pos] = d->tok[k];
}

/* ---- strings ------------------------------------------------------------------------- */

int nas__chain_format(const void *self, const nas_genotype *g, char *buf, size_t n)
{
    const nas__chain *c = self;
    if (!buf || n == 0)
        return NAS_EINVAL;
    buf[0] = '\0';
    if (!nas__chain_is_valid(c, g))
        return NAS_EINVAL;
    size_t used = 0;
    for (int i = 0; i < c->n_dec; i++) {
        const char *sep = "";
        if (i > 0)
            sep = c->dec[i].stage != c->dec[i - 1].stage ? "|" : ":";
        int w = snprintf(buf + used, n - used, "%s%s", sep, c->vocab[g->tok[i]]);
        if (w < 0 || (size_t)w >= n - used) {
            buf[0] = '\0';
            return NAS_EINVAL;
        }
        used += (size_t)w;
    }
    return NAS_OK;
}

/* The decision's expected form, for messages: "c24, c32" / "mb3_k3, ...". */
static void list_choices(const nas__chain *c, int pos, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < c->dec[pos].n; i++) {
        int w = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", c->vocab[c->dec[pos].tok[i]]);
        if (w < 0 || (size_t)w >= n - used)
            return;
        used += (size_t)w;
    }
}

int nas__chain_parse(const void *self, const char *str, nas_genotype *out, nas_error *err)
{
    const nas__chain *c = self;
    memset(out, 0, sizeof *out);
    if (!str)
        return nas_error_set(err, NAS_EINVAL, "genotype: NULL argument");
    while (isspace((unsigned char)*str))
        str++;
    int len = (int)strlen(str);
    while (len > 0 && isspace((unsigned char)str[len - 1]))
        len--;
    nas_genotype g;
    memset(&g, 0, sizeof g);
    const char *p = str, *end = str + len;
    int pos = 0;
    for (int s = 0; s < c->d.n_stages; s++) {
        if (s > 0) {
            if (p >= end || *p != '|')
                return nas_error_set(err, NAS_EFORMAT,
                                     "genotype '%.*s': %d stage(s), expected %d separated by '|'", len,
                                     str, s, c->d.n_stages);
            p++;
        }
        for (int k = 0; k < c->n_stage_dec[s]; k++, pos++) {
            if (k > 0) {
                if (p >= end || *p != ':')
                    return nas_error_set(err, NAS_EFORMAT,
                                         "genotype '%.*s': stage %d has %d token(s), expected %d "
                                         "separated by ':'",
                                         len, str, s + 1, k, c->n_stage_dec[s]);
                p++;
            }
            const char *q = p;
            while (q < end && *q != ':' && *q != '|')
                q++;
            char word[32];
            snprintf(word, sizeof word, "%.*s", (int)(q - p), p);
            int tok = -1;
            for (int i = 0; i < c->dec[pos].n; i++)
                if (strcmp(c->vocab[c->dec[pos].tok[i]], word) == 0)
                    tok = c->dec[pos].tok[i];
            if (tok < 0) {
                char list[512], hint[96];
                list_choices(c, pos, list, sizeof list);
                return nas_error_set(err, NAS_EFORMAT,
                                     "genotype '%.*s': stage %d, token %d ('%s'): expected one of: %s%s",
                                     len, str, s + 1, k + 1, word, list,
                                     nas_suggest_hint(word, list, hint, sizeof hint));
            }
            g.tok[pos] = (uint8_t)tok;
            p = q;
        }
        if (p < end && *p == ':')
            return nas_error_set(err, NAS_EFORMAT,
                                 "genotype '%.*s': stage %d has more than %d tokens", len, str, s + 1,
                                 c->n_stage_dec[s]);
    }
    if (p != end)
        return nas_error_set(err, NAS_EFORMAT,
                             "genotype '%.*s': trailing text '%.*s' after the last of %d stages", len,
                             str, (int)(end - p), p, c->d.n_stages);
    g.len = c->n_dec;
    *out = g;
    return NAS_OK;
}

/* ---- canonical key ----------------------------------------------------------------------- */

/* space_impl.h */
int nas__chain_op_is_noop(uint16_t op, int same)
{
    int k = nas_chain_op_kind_of(op);
    return k == NAS_CHAIN_ZERO || (k == NAS_CHAIN_SKIP && same);
}

void nas__chain_key(const void *self, nas_key_kind kind, const nas_genotype *g, char *buf, size_t n)
{
    const nas__chain *c = self;
    (void)kind; /* one key for chain spaces */
    if (!buf || n == 0)
        return;
    buf[0] = '\0';
    nas__chain_pick p;
    if (nas__chain_pick_of(c, g, &p) != 0) {
        snprintf(buf, n, "?");
        return;
    }
    size_t used = 0;
    int cin = c->d.stem_channels;
#define PUT(...)                                                            \
    do {                                                                    \
        int w_ = snprintf(buf + used, n - used, __VA_ARGS__);               \
        if (w_ < 0 || (size_t)w_ >= n - used)                               \
            return;                                                         \
        used += (size_t)w_;                                                 \
    } while (0)
    for (int s = 0; s < c->d.n_stages; s++) {
        const nas_chain_stage *st = &c->d.stages[s];
        int w = p.width[s];
        char op[16];
        const char *eff[NAS_CHAIN_MAX_LAYERS];
        char names[NAS_CHAIN_MAX_LAYERS][16];
        int ne = 0, any_mb = 0;
        for (int l = 0; l < p.depth[s]; l++) {
            int same = l > 0 || (st->stride == 1 && cin == w);
            if (nas__chain_op_is_noop(p.op[s][l], same))
                continue;
            if (nas_chain_op_kind_of(p.op[s][l]) == NAS_CHAIN_MB)
                any_mb = 1;
            snprintf(names[ne], sizeof names[ne], "%s", nas_chain_op_name(p.op[s][l], op, sizeof op));
            eff[ne] = names[ne];
            ne++;
        }
        int first = 1;
        if (s > 0)
            PUT("|");
        if (st->width_choice) {
            PUT("c%d", w);
            first = 0;
        }
        if (st->se == 2 && any_mb) {
            PUT("%s%s", first ? "" : ":", p.se[s] ? "se_on" : "se_off");
            first = 0;
        }
        for (int i = 0; i < ne; i++) {
            PUT("%s%s", first ? "" : ":", eff[i]);
            first = 0;
        }
        cin = w;
    }
#undef PUT
}

/* ---- counting ------------------------------------------------------------------------------ */

/* Saturating arithmetic at NAS_SPACE_COUNT_CAP; *exact is cleared on saturation. */
static uint64_t sat_mul(uint64_t a, uint64_t b, int *exact)
{
    if (a == 0 || b == 0)
        return 0;
    if (a >= NAS_SPACE_COUNT_CAP || b >= NAS_SPACE_COUNT_CAP || a > (NAS_SPACE_COUNT_CAP - 1) / b) {
        *exact = 0;
        return NAS_SPACE_COUNT_CAP;
    }
    return a * b;
}

static uint64_t sat_add(uint64_t a, uint64_t b, int *exact)
{
    if (a >= NAS_SPACE_COUNT_CAP || b >= NAS_SPACE_COUNT_CAP || a > NAS_SPACE_COUNT_CAP - 1 - b) {
        *exact = 0;
        return NAS_SPACE_COUNT_CAP;
    }
    return a + b;
}

typedef struct opset {
    int eff, eff_nomb; /* effective ops, those without MBConv */
    int noop;          /* a no-op (zero or identity skip) is among the choices */
} opset;

static opset classify(const uint16_t *ops, int n, int same)
{
    opset o = {0, 0, 0};
    for (int i = 0; i < n; i++) {
        if (nas__chain_op_is_noop(ops[i], same)) {
            o.noop = 1;
            continue;
        }
        o.eff++;
        if (nas_chain_op_kind_of(ops[i]) != NAS_CHAIN_MB)
            o.eff_nomb++;
    }
    return o;
}

/* Effective ops common to the first and the other layers (by code). */
static void common(const nas_chain_stage *st, int same0, int *both, int *both_nomb)
{
    *both = *both_nomb = 0;
    if (st->n_first == 0) {
        opset o = classify(st->ops, st->n_ops, 1);
        *both = o.eff;
        *both_nomb = o.eff_nomb;
        (void)same0;
        return;
    }
    for (int i = 0; i < st->n_first; i++) {
        if (nas__chain_op_is_noop(st->first[i], same0) ||
            nas__chain_op_is_noop(st->first[i], 1))
            continue; /* a no-op in the other layers never appears in a key there */
        for (int j = 0; j < st->n_ops; j++)
            if (st->ops[j] == st->first[i]) {
                (*both)++;
                if (nas_chain_op_kind_of(st->first[i]) != NAS_CHAIN_MB)
                    (*both_nomb)++;
            }
    }
}

/* A stage's op sets: F those of layer 0 (keeping the shape when same0),
 * R those of the later layers, and the effective ops both share. */
typedef struct stage_sets {
    opset F, R;
    int both, both_nomb;
} stage_sets;

static stage_sets stage_sets_of(const nas_chain_stage *st, int same0)
{
    const uint16_t *f = st->n_first ? st->first : st->ops;
    int nf = st->n_first ? st->n_first : st->n_ops;
    stage_sets S = {classify(f, nf, same0), classify(st->ops, st->n_ops, 1), 0, 0};
    common(st, same0, &S.both, &S.both_nomb);
    return S;
}

/* Whether, for some depth choice, l effective ops can run with the first
 * at layer 0 (*a) or with layer 0 a no-op (*b); see stage_sequences. */
static void stage_runs(const nas_chain_stage *st, const stage_sets *S, int l, int *a, int *b)
{
    *a = *b = 0;
    int nd = st->n_depth ? st->n_depth : 1;
    for (int i = 0; i < nd; i++) {
        int d = st->n_depth ? st->depth[i] : st->layers;
        if (l >= 1 && l <= d && (S->R.noop || l == d))
            *a = 1;
        if (S->F.noop && l <= d - 1 && (S->R.noop || l == d - 1))
            *b = 1;
    }
}

/*
 * Distinct effective op sequences of a stage (docs/spaces.md "Counting
 * keys"), split into all and those without an MBConv; `same0` says
 * whether layer 0 keeps the shape. A sequence t1..tl runs either with t1
 * at layer 0 (t1 effective there, t2.. effective at later layers, l <= d,
 * and l == d unless a later layer can be a no-op) or with layer 0 a no-op
 * (all effective at later layers, l <= d - 1, equality unless no-ops).
 */
static void stage_sequences(const nas_chain_stage *st, int same0, uint64_t *all, uint64_t *nomb,
                            int *exact)
{
    stage_sets S = stage_sets_of(st, same0);
    *all = *nomb = 0;
    for (int l = 0; l <= st->layers; l++) {
        int a, b;
        stage_runs(st, &S, l, &a, &b);
        if (l == 0) {
            if (b) {
                *all = sat_add(*all, 1, exact);
                *nomb = sat_add(*nomb, 1, exact);
            }
            continue;
        }
        /* |E_R|^(l-1) * (a|E_F| + b|E_R| - ab|E_F n E_R|), with and without MBConv */
        uint64_t pw = 1, pw_n = 1;
        for (int i = 0; i < l - 1; i++) {
            pw = sat_mul(pw, (uint64_t)S.R.eff, exact);
            pw_n = sat_mul(pw_n, (uint64_t)S.R.eff_nomb, exact);
        }
        uint64_t k = (uint64_t)(a * S.F.eff + b * S.R.eff - a * b * S.both);
        uint64_t k_n = (uint64_t)(a * S.F.eff_nomb + b * S.R.eff_nomb - a * b * S.both_nomb);
        *all = sat_add(*all, sat_mul(pw, k, exact), exact);
        *nomb = sat_add(*nomb, sat_mul(pw_n, k_n, exact), exact);
    }
}

static double stage_sequences_log10(const nas_chain_stage *st, int same0)
{
    /* magnitude only (for "about 10^x" past the cap): sum in doubles */
    stage_sets S = stage_sets_of(st, same0);
    double total = 0, total_n = 0;
    for (int l = 0; l <= st->layers; l++) {
        int a, b;
        stage_runs(st, &S, l, &a, &b);
        if (l == 0) {
            total += b;
            total_n += b;
            continue;
        }
        total += pow(S.R.eff, l - 1) * (a * S.F.eff + b * S.R.eff - a * b * S.both);
        total_n += pow(S.R.eff_nomb, l - 1) *
                   (a * S.F.eff_nomb + b * S.R.eff_nomb - a * b * S.both_nomb);
    }
    double keys = st->se == 2 ? total_n + 2 * (total - total_n) : total;
    return keys > 0 ? log10(keys) : -INFINITY;
}

#define NW (NAS_CHAIN_MAX_STAGES * NAS_CHAIN_MAX_CHOICES + 1)

int nas__chain_counts(const void *self, nas_space_counts *out)
{
    const nas__chain *c = self;
    memset(out, 0, sizeof *out);
    out->size_exact = 1;
    out->log10_size = 0;
    uint64_t size = 1;
    for (int i = 0; i < c->n_dec; i++) {
        size = sat_mul(size, (uint64_t)c->dec[i].n, &out->size_exact);
        out->log10_size += log10((double)c->dec[i].n);
    }
    out->size = size;
    /* keys: dynamic programme over the stages, state = width entering the stage */
    int wv[NW], nw = 1;
    uint64_t cnt[NW];
    double lg[NW];
    wv[0] = c->d.stem_channels;
    cnt[0] = 1;
    lg[0] = 0;
    int exact = 1;
    for (int s = 0; s < c->d.n_stages; s++) {
        const nas_chain_stage *st = &c->d.stages[s];
        int nwv[NW], nn = 0;
        uint64_t ncnt[NW];
        double nlg[NW];
        for (int j = 0; j < st->n_width; j++) {
            int w = st->width[j];
            uint64_t acc = 0;
            double lacc = -INFINITY;
            for (int i = 0; i < nw; i++) {
                int same0 = st->stride == 1 && wv[i] == w;
                uint64_t all, nomb;
                stage_sequences(st, same0, &all, &nomb, &exact);
                uint64_t keys = st->se == 2 ? sat_add(nomb, sat_mul(2, all - nomb, &exact), &exact)
                                            : all;
                if (all >= NAS_SPACE_COUNT_CAP)
                    keys = NAS_SPACE_COUNT_CAP;
                acc = sat_add(acc, sat_mul(cnt[i], keys, &exact), &exact);
                double l = lg[i] + stage_sequences_log10(st, same0);
                /* log10(10^lacc + 10^l) */
                if (l > -INFINITY)
                    lacc = lacc == -INFINITY ? l
                                             : (lacc > l ? lacc + log10(1 + pow(10, l - lacc))
                                                         : l + log10(1 + pow(10, lacc - l)));
            }
            int k;
            for (k = 0; k < nn; k++)
                if (nwv[k] == w)
                    break;
            if (k == nn) { /* widths are listed once per stage: always a new entry */
                nwv[nn] = w;
                ncnt[nn] = 0;
                nlg[nn] = -INFINITY;
                nn++;
            }
            ncnt[k] = sat_add(ncnt[k], acc, &exact);
            nlg[k] = lacc;
        }
        memcpy(wv, nwv, sizeof(int) * (size_t)nn);
        memcpy(cnt, ncnt, sizeof(uint64_t) * (size_t)nn);
        memcpy(lg, nlg, sizeof(double) * (size_t)nn);
        nw = nn;
    }
    uint64_t keys = 0;
    double lk = -INFINITY;
    for (int i = 0; i < nw; i++) {
        keys = sat_add(keys, cnt[i], &exact);
        if (lg[i] > -INFINITY)
            lk = lk == -INFINITY ? lg[i]
                                 : (lk > lg[i] ? lk + log10(1 + pow(10, lg[i] - lk))
                                               : lg[i] + log10(1 + pow(10, lk - lg[i])));
    }
    out->keys = keys;
    out->keys_exact = exact;
    out->log10_keys = lk;
    out->keys_counted = 1;
    return NAS_OK;
}

/* ---- decisions (public, nas/layers.h) --------------------------------------------------------- */

const char *nas__chain_decision_name(const void *self, int i, char *buf, size_t n)
{
    const nas__chain *c = self;
    const dec *d = &c->dec[i];
    switch (d->kind) {
    case DEC_WIDTH: snprintf(buf, n, "s%d.channels", d->stage + 1); break;
    case DEC_DEPTH: snprintf(buf, n, "s%d.depth", d->stage + 1); break;
    case DEC_SE: snprintf(buf, n, "s%d.se", d->stage + 1); break;
    default: snprintf(buf, n, "s%d.op%d", d->stage + 1, d->layer); break;
    }
    return buf;
}

const char *nas__chain_token_name(const void *self, int tok)
{
    const nas__chain *c = self;
    return tok >= 0 && tok < c->n_vocab ? c->vocab[tok] : NULL;
}

int nas__chain_decision_choices(const void *self, int i)
{
    const nas__chain *c = self;
    return i >= 0 && i < c->n_dec ? c->dec[i].n : 0;
}

int nas__chain_decision_token(const void *self, int i, int j)
{
    const nas__chain *c = self;
    return c->dec[i].tok[j];
}
