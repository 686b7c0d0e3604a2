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
#include "space_impl.h"

struct nas_space {
    nas_space_desc desc;
    nas__chain *chain;         /* type "chain": space/chain.c; NULL for a cell space */
    int n_ops;                 /* allowed ops */
    int ops[NAS_OP_COUNT];     /* their token ids, ascending */
    nas_key_kind key_kind;     /* what nas_space_key computes */
};

void nas_space_set_key_kind(nas_space *s, nas_key_kind kind) { s->key_kind = kind; }

nas_key_kind nas__space_key_kind(const nas_space *s) { return s->key_kind; }

int nas_space_create(const nas_space_desc *desc, nas_space **out, nas_error *err)
{
    if (out)
        *out = NULL;
    if (!desc || !out)
        return nas_error_set(err, NAS_EINVAL, "space: NULL argument");
    if (desc->type == NAS_SPACE_CHAIN) {
        nas__chain *ch = NULL;
        int rc = nas__chain_create(desc, &ch, err);
        if (rc != NAS_OK)
            return rc;
        nas_space *s = calloc(1, sizeof *s);
        if (!s) {
            nas__chain_destroy(ch);
            return nas_error_set(err, NAS_ENOMEM, "space: out of memory");
        }
        s->desc = *desc;
        s->chain = ch;
        *out = s;
        return NAS_OK;
    }
    if (desc->type != NAS_SPACE_CELL)
        return nas_error_set(err, NAS_EINVAL, "space: unknown type %d (\"cell\" or \"chain\")",
                             (int)desc->type);
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
    nas_space *s = calloc(1, sizeof *s);
    if (!s)
        return nas_error_set(err, NAS_ENOMEM, "space: out of memory");
    s->desc = *desc;
    for (int i = 0; i < NAS_OP_COUNT; i++)
        if (desc->op_mask & (1u << i))
            s->ops[s->n_ops++] = i;
    *out = s;
    return NAS_OK;
}

void nas_space_destroy(nas_space *s)
{
    if (s)
        nas__chain_destroy(s->chain);
    free(s);
}

nas__chain *nas__space_chain(const nas_space *s) { return s ? s->chain : NULL; }

const nas_space_desc *nas_space_get_desc(const nas_space *s) { return &s->desc; }

int nas_space_seq_len(const nas_space *s)
{
    if (s->chain)
        return nas__chain_seq_len(s->chain);
    return NAS_CELL_EDGES;
}

int nas_space_vocab_size(const nas_space *s)
{
    if (s->chain)
        return nas__chain_vocab_size(s->chain);
    return NAS_OP_COUNT;
}

int nas_space_token_allowed(const nas_space *s, int pos, int tok)
{
    if (s->chain)
        return nas__chain_token_allowed(s->chain, pos, tok);
    if (pos < 0 || pos >= NAS_CELL_EDGES || tok < 0 || tok >= NAS_OP_COUNT)
        return 0;
    return (s->desc.op_mask >> tok) & 1u;
}

uint64_t nas_space_size(const nas_space *s)
{
    if (s->chain)
        return nas__chain_size(s->chain); /* saturates at 2^63 (NAS_SPACE_COUNT_CAP) */
    uint64_t n = 1;
    for (int i = 0; i < NAS_CELL_EDGES; i++)
        n *= (uint64_t)s->n_ops;
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

int nas_space_is_valid(const nas_space *s, const nas_genotype *g)
{
    if (s && s->chain)
        return nas__chain_is_valid(s->chain, g);
    if (!s || !g || g->len != NAS_CELL_EDGES)
        return 0;
    for (int i = 0; i < NAS_CELL_EDGES; i++)
        if (!nas_space_token_allowed(s, i, g->tok[i]))
            return 0;
    return cell_connected(g);
}

void nas_space_sample(const nas_space *s, nas_rng *r, nas_genotype *out)
{
    if (s->chain) {
        nas__chain_sample(s->chain, r, out);
        return;
    }
    /* Terminates: nas_space_create guarantees a non-`none` op, so the
     * genotype with that op on every edge is valid. */
    memset(out, 0, sizeof *out);
    out->len = NAS_CELL_EDGES;
    do {
        for (int i = 0; i < NAS_CELL_EDGES; i++)
            out->tok[i] = (uint8_t)s->ops[nas_rng_bounded(r, (uint32_t)s->n_ops)];
    } while (!cell_connected(out));
}

void nas_space_mutate(const nas_space *s, nas_rng *r, const nas_genotype *parent,
                      nas_genotype *child)
{
    if (s->chain) {
        nas__chain_mutate(s->chain, r, parent, child);
        return;
    }
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

int nas_space_format(const nas_space *s, const nas_genotype *g, char *buf, size_t n)
{
    if (s && s->chain)
        return nas__chain_format(s->chain, g, buf, n);
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
 * ignored; nothing else is. */
int nas_space_parse(const nas_space *s, const char *str, nas_genotype *out, nas_error *err)
{
    char ops[256];
    if (out)
        memset(out, 0, sizeof *out);
    if (!str || !out)
        return nas_error_set(err, NAS_EINVAL, "genotype: NULL argument");
    if (s && s->chain)
        return nas__chain_parse(s->chain, str, out, err);
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
            if (s && !nas_space_token_allowed(s, e, op))
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
