/*
 * space/cell.c - the NAS-Bench-201 cell space (Dong & Yang, "NAS-Bench-201:
 * Extending the Scope of Reproducible Neural Architecture Search", ICLR 2020).
 *
 * A cell is a DAG of 4 nodes; node 0 is the cell input, node 3 its output,
 * node j (j >= 1) is the sum of op(node i) over i < j. A genotype holds the
 * 6 edge ops as tokens in the order (1<-0), (2<-0), (2<-1), (3<-0), (3<-1),
 * (3<-2). The space may restrict every edge to a subset of the ops
 * (desc.op_mask).
 *
 * Validity: a genotype is valid when all its tokens are allowed ops AND the
 * output node is not identically zero, i.e. there is a path 0 -> ... -> 3
 * whose edges are all different from `none`. Without such a path the cell
 * output carries no information about its input (it is zero, or at best a
 * learned constant from a BatchNorm shift), so the cell cannot be trained
 * meaningfully. With all 5 ops, 15,284 of the 15,625 genotypes are valid
 * (tests/unit/test_space.c checks this against an independent count).
 *
 * Sampling is uniform over valid genotypes (uniform tokens, rejected until
 * valid). Mutation follows regularized evolution (Real, Aggarwal, Huang,
 * Le, AAAI 2019): change the op of exactly one edge.
 */
#include <ctype.h>  /* isspace */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* memcpy, memset, strlen */
#include <stdio.h>  /* snprintf */
#include "nas/space.h"
#include "nas/suggest.h" /* nas_suggest_hint */
#include "nas/layers.h"
#include "space_impl.h"

/* The cell type's state (space_impl.h). */
typedef struct cell {
    nas_space_desc desc;
    int n_ops;             /* allowed ops */
    int ops[NAS_OP_COUNT]; /* their token ids, ascending */
} cell;

static int cell_create(const nas_space_desc *desc, void **out, nas_error *err)
{
    *out = NULL;
    if (desc->op_mask == 0 || (desc->op_mask & ~NAS__ALL_OPS_MASK))
        return nas_error_set(err, NAS_EINVAL, "space: op mask 0x%x is empty or names unknown ops",
                             desc->op_mask);
    if (!(desc->op_mask & ~(1u << NAS_OP_NONE)))
        return nas_error_set(err, NAS_EINVAL,
                             "space: the op set holds only 'none', so no cell connects input to "
                             "output; add another op");
    if (desc->channels < 1 || desc->stages < 1 || desc->cells_per_stage < 1)
        return nas_error_set(err, NAS_EINVAL,
                             "space: channels (%d), stages (%d) and cells_per_stage (%d) must be >= 1",
                             desc->channels, desc->stages, desc->cells_per_stage);
    cell *c = calloc(1, sizeof *c);
    if (!c)
        return nas_error_set(err, NAS_ENOMEM, "space: out of memory");
    c->desc = *desc;
    for (int i = 0; i < NAS_OP_COUNT; i++)
        if (desc->op_mask & (1u << i))
            c->ops[c->n_ops++] = i;
    *out = c;
    return NAS_OK;
}

static void cell_destroy(void *self) { free(self); }

static int cell_seq_len(const void *self)
{
    (void)self;
    return NAS_CELL_EDGES;
}

static int cell_vocab_size(const void *self)
{
    (void)self;
    return NAS_OP_COUNT;
}

static int cell_token_allowed(const void *self, int pos, int tok)
{
    const cell *c = self;
    if (pos < 0 || pos >= NAS_CELL_EDGES || tok < 0 || tok >= NAS_OP_COUNT)
        return 0;
    return (c->desc.op_mask >> tok) & 1u;
}

static uint64_t cell_size(const void *self)
{
    const cell *c = self;
    uint64_t n = 1;
    for (int i = 0; i < NAS_CELL_EDGES; i++)
        n *= (uint64_t)c->n_ops;
    return n;
}

/* 1 when a path of non-`none` edges leads from node 0 to node 3. */
static int cell_connected(const nas_genotype *g)
{
    int reach[NAS_CELL_NODES] = {1, 0, 0, 0};
    for (int to = 1; to < NAS_CELL_NODES; to++)
        for (int from = 0; from < to; from++)
            if (reach[from] && g->tok[nas__cell_edge(to, from)] != NAS_OP_NONE)
                reach[to] = 1;
    return reach[NAS_CELL_NODES - 1];
}

static int cell_is_valid(const void *self, const nas_genotype *g)
{
    if (!g || g->len != NAS_CELL_EDGES)
        return 0;
    for (int i = 0; i < NAS_CELL_EDGES; i++)
        if (!cell_token_allowed(self, i, g->tok[i]))
            return 0;
    return cell_connected(g);
}

static void cell_sample(const void *self, nas_rng *r, nas_genotype *out)
{
    const cell *s = self;
    /* Terminates: nas_space_create guarantees a non-`none` op, so the
     * genotype with that op on every edge is valid. */
    memset(out, 0, sizeof *out);
    out->len = NAS_CELL_EDGES;
    do {
        for (int i = 0; i < NAS_CELL_EDGES; i++)
            out->tok[i] = (uint8_t)s->ops[nas_rng_bounded(r, (uint32_t)s->n_ops)];
    } while (!cell_connected(out));
}

static void cell_mutate(const void *self, nas_rng *r, const nas_genotype *parent,
                        nas_genotype *child)
{
    const cell *s = self;
    /* Drawing (edge, new op) uniformly and retrying until the child is
     * valid is the same distribution as drawing uniformly from the list of
     * valid one-edge children; the list makes the cost bounded. */
    struct { uint8_t pos, tok; } cand[NAS_CELL_EDGES * NAS_OP_COUNT];
    uint32_t n = 0;
    nas_genotype tmp = *parent;
    tmp.len = NAS_CELL_EDGES;
    for (int pos = 0; pos < NAS_CELL_EDGES; pos++) {
        for (int k = 0; k < s->n_ops; k++) {
            int tok = s->ops[k];
            if (tok == parent->tok[pos])
                continue;
            tmp.tok[pos] = (uint8_t)tok;
            if (cell_connected(&tmp)) {
                cand[n].pos = (uint8_t)pos;
                cand[n].tok = (uint8_t)tok;
                n++;
            }
            tmp.tok[pos] = parent->tok[pos];
        }
    }
    *child = *parent;
    child->len = NAS_CELL_EDGES;
    if (n == 0) /* a one-op space: the parent is the only genotype */
        return;
    uint32_t pick = nas_rng_bounded(r, n);
    child->tok[cand[pick].pos] = cand[pick].tok;
}

/* impl may be NULL (a genotype read without its space). */
static int cell_format(const void *self, const nas_genotype *g, char *buf, size_t n)
{
    (void)self;
    if (!buf || n == 0)
        return NAS_EINVAL;
    buf[0] = '\0';
    if (!g || g->len != NAS_CELL_EDGES)
        return NAS_EINVAL;
    size_t used = 0;
    for (int to = 1; to < NAS_CELL_NODES; to++) {
        int w = snprintf(buf + used, n - used, "%s|", to > 1 ? "+" : "");
        if (w < 0 || (size_t)w >= n - used)
            goto too_small;
        used += (size_t)w;
        for (int from = 0; from < to; from++) {
            const char *name = nas_op_name(g->tok[nas__cell_edge(to, from)]);
            if (!name) {
                buf[0] = '\0';
                return NAS_EINVAL;
            }
            w = snprintf(buf + used, n - used, "%s~%d|", name, from);
            if (w < 0 || (size_t)w >= n - used)
                goto too_small;
            used += (size_t)w;
        }
    }
    return NAS_OK;
too_small:
    buf[0] = '\0';
    return NAS_EINVAL;
}

/* Parse `|op~0|+|op~0|op~1|+|op~0|op~1|op~2|`. Surrounding white space is
 * ignored; nothing else is. impl may be NULL: any op is allowed. */
static int cell_parse(const void *self, const char *str, nas_genotype *out, nas_error *err)
{
    const cell *s = self;
    char ops[256];
    while (isspace((unsigned char)*str))
        str++;
    size_t len = strlen(str);
    while (len > 0 && isspace((unsigned char)str[len - 1]))
        len--;
    const char *p = str, *end = str + len;
    nas_genotype g;
    memset(&g, 0, sizeof g);
    g.len = NAS_CELL_EDGES;

    for (int to = 1; to < NAS_CELL_NODES; to++) {
        if (to > 1) {
            if (p >= end || *p != '+')
                return nas_error_set(err, NAS_EFORMAT,
                                     "genotype '%.*s': node %d: expected '+' before the group of "
                                     "node %d at character %d, found %s",
                                     (int)len, str, to - 1, to, (int)(p - str) + 1,
                                     p >= end ? "the end" : "something else");
            p++;
        }
        if (p >= end || *p != '|')
            return nas_error_set(err, NAS_EFORMAT,
                                 "genotype '%.*s': node %d: expected '|' at character %d",
                                 (int)len, str, to, (int)(p - str) + 1);
        p++;
        for (int from = 0; from < to; from++) {
            int e = nas__cell_edge(to, from);
            const char *q = p;
            while (q < end && *q != '|' && *q != '+')
                q++;
            if (q == p && (q >= end || *q != '|'))
                return nas_error_set(err, NAS_EFORMAT,
                                     "genotype '%.*s': node %d has %d input(s), expected %d "
                                     "(one 'op~i' per node i < %d)",
                                     (int)len, str, to, from, to, to);
            if (q >= end || *q != '|')
                return nas_error_set(err, NAS_EFORMAT,
                                     "genotype '%.*s': edge %d (%d<-%d): '%.*s' is not closed by '|'",
                                     (int)len, str, e + 1, to, from, (int)(q - p), p);
            const char *tilde = memchr(p, '~', (size_t)(q - p));
            if (!tilde)
                return nas_error_set(err, NAS_EFORMAT,
                                     "genotype '%.*s': edge %d (%d<-%d): '%.*s' has no '~%d' "
                                     "naming its source node",
                                     (int)len, str, e + 1, to, from, (int)(q - p), p, from);
            size_t nlen = (size_t)(tilde - p);
            if (nlen >= sizeof ops)
                nlen = sizeof ops - 1;
            memcpy(ops, p, nlen);
            ops[nlen] = '\0';
            int op;
            char list[256], hint[96];
            if (nas_op_from_name(ops, &op) != NAS_OK) {
                nas__op_list(0, list, sizeof list);
                return nas_error_set(err, NAS_EFORMAT,
                                     "genotype '%.*s': edge %d (%d<-%d): unknown op '%s' "
                                     "(expected one of: %s)%s",
                                     (int)len, str, e + 1, to, from, ops, list,
                                     nas_suggest_hint(ops, list, hint, sizeof hint));
            }
            if (s && !cell_token_allowed(s, e, op))
                return nas_error_set(err, NAS_EFORMAT,
                                     "genotype '%.*s': edge %d (%d<-%d): op '%s' is not in this "
                                     "space's op set (%s)",
                                     (int)len, str, e + 1, to, from, ops,
                                     nas__op_list(s->desc.op_mask, list, sizeof list));
            /* the source must be exactly the decimal `from` */
            const char *src = tilde + 1;
            if (q - src != 1 || *src != (char)('0' + from))
                return nas_error_set(err, NAS_EFORMAT,
                                     "genotype '%.*s': edge %d (%d<-%d): source '~%.*s', "
                                     "expected '~%d' (inputs are listed in node order)",
                                     (int)len, str, e + 1, to, from, (int)(q - src), src, from);
            g.tok[e] = (uint8_t)op;
            p = q + 1;
        }
        if (p < end && *p != '+')
            return nas_error_set(err, NAS_EFORMAT,
                                 "genotype '%.*s': node %d has more than %d inputs", (int)len,
                                 str, to, to);
    }
    if (p != end)
        return nas_error_set(err, NAS_EFORMAT,
                             "genotype '%.*s': trailing text '%.*s' after node 3 (the cell has "
                             "3 nodes after its input)",
                             (int)len, str, (int)(end - p), p);
    *out = g;
    return NAS_OK;
}

static void cell_key(const void *self, nas_key_kind kind, const nas_genotype *g, char *buf, size_t n)
{
    (void)self;
    nas__cell_key(kind, g, buf, n); /* space/cell_key.c */
}

static const int cell_from[NAS_CELL_EDGES] = {0, 0, 1, 0, 1, 2};
static const int cell_to[NAS_CELL_EDGES] = {1, 2, 2, 3, 3, 3};

/* Decision i is edge i of the cell, its choices the space's op set. */
static const char *cell_decision_name(const void *self, int i, char *buf, size_t n)
{
    (void)self;
    snprintf(buf, n, "edge %d<-%d", cell_to[i], cell_from[i]);
    return buf;
}

static int cell_decision_choices(const void *self, int i)
{
    (void)i;
    return ((const cell *)self)->n_ops;
}

static int cell_decision_token(const void *self, int i, int j)
{
    const cell *c = self;
    (void)i;
    return j >= 0 && j < c->n_ops ? c->ops[j] : 0;
}

static const char *cell_token_name(const void *self, int tok)
{
    (void)self;
    return nas_op_name(tok);
}

static int cell_layers(const void *self, const nas_genotype *g, nas_layers *out, nas_error *err)
{
    const cell *c = self;
    nas_space_desc d = c->desc;
    nas__desc_input(&c->desc, &d.in_c, &d.in_h, &d.in_w, &d.classes);
    if (g->len != NAS_CELL_EDGES)
        return nas_error_set(err, NAS_EINVAL, "genotype is not a member of this cell space");
    for (int e = 0; e < g->len; e++)
        if (!cell_token_allowed(c, e, g->tok[e]))
            return nas_error_set(err, NAS_EINVAL, "genotype is not a member of this cell space");
    return nas_cell_layers(&d, g, out, err); /* space/cell_layers.c */
}

const nas__space_type nas__cell_type = {
    .id = NAS_SPACE_CELL,
    .create = cell_create,
    .destroy = cell_destroy,
    .seq_len = cell_seq_len,
    .vocab_size = cell_vocab_size,
    .token_allowed = cell_token_allowed,
    .size = cell_size,
    .is_valid = cell_is_valid,
    .sample = cell_sample,
    .mutate = cell_mutate,
    .format = cell_format,
    .parse = cell_parse,
    .key = cell_key,
    .counts = NULL, /* by enumeration (15,625 genotypes at most) */
    .decision_name = cell_decision_name,
    .decision_choices = cell_decision_choices,
    .decision_token = cell_decision_token,
    .token_name = cell_token_name,
    .layers = cell_layers,
};
