/*
 * space/cell_key.c - the canonical key of a NAS-Bench-201 cell, and
 * NAS-Bench-201's own "unique string".
 *
 * ---- nas_space_key: the functional key (issue 21) ----
 *
 * Two cells get the same key exactly when they compute the same function
 * in this model of the network nas builds (space/cell_layers.c), which
 * is NAS-Bench-201's InferCell:
 *   - node 0 is the input x; node j is the sum of op(node i) over i < j;
 *   - none is 0; skip_connect is the identity; a sum keeps multiplicity
 *     (x + x is 2x, not x) and is commutative and associative;
 *   - avg_pool_3x3 (stride 1, count_include_pad = False) has no weights
 *     and is linear: pool(a + b) = pool(a) + pool(b), and it leaves a map
 *     that is constant over the image unchanged;
 *   - every conv edge (nor_conv_1x1, nor_conv_3x3: ReLU-Conv-BN) has its
 *     own weights: two conv edges are two different functions even on the
 *     same input, and one conv whose output is reused (through skip edges)
 *     is one function. Cells are equal when one's conv edges can be renamed
 *     into the other's;
 *   - a conv edge on a node that is identically zero outputs BatchNorm's
 *     learned shift beta (a per-channel constant, trained: its gradient is
 *     not zero), whatever its kernel size; so x and x + beta differ. nas
 *     trains the whole cell as written (it prunes no dead branch), as
 *     NAS-Bench-201 did, so this is the function actually trained;
 *   - a conv of an input-independent map stays input-independent: 1x1 of
 *     a constant map is a constant map, 3x3 of a nonzero constant is not
 *     (zero padding at the borders).
 * Identities this does NOT apply (cells stay apart, the safe direction):
 * ones that hold only for particular weight values, ones that depend on
 * BatchNorm's mode (in training mode BN of a constant map is exactly its
 * beta; with running statistics it is not), and the scale-invariance of
 * a later BatchNorm (2x and x differ).
 *
 * Algorithm. Each node's value is a multiset of atoms, each atom a string:
 *   "x"                    the input
 *   "c1(V)" / "c3(V)"      a conv edge applied to value V (atoms of V sorted
 *                          by strcmp, joined by "+")
 *   "b"                    beta of a conv edge whose input is zero
 *   "p(A)"                 avg_pool of atom A (never of a constant atom)
 * Pooling is pushed into the atoms (linearity) and drops off constant
 * atoms. A conv atom is written without a name when no other live conv
 * edge has the same type and the same input value: its text then names
 * it. "Twins" (same type and input, or two betas) get a label, "c3#1(x)",
 * "c3#2(x)"; the labels are assigned by trying every permutation of the
 * twins (at most 6! = 720) and keeping the smallest key, so a renaming of
 * conv edges gives the same key. Live means the edge's target node reaches
 * the output through edges other than none; dead edges do not appear. The
 * key is the sorted atoms of node 3 joined by "+", or "0" when the output
 * is identically zero. tests/unit/test_cell_key.c checks the partition
 * against an independent numeric evaluation of this model on all 15,625
 * cells: 5,234 classes (NAS-Bench-201's string: 6,466).
 *
 * ---- nas_space_nb201_str: NAS-Bench-201's unique string ----
 *
 * The string NAS-Bench-201 (Dong & Yang, ICLR 2020) uses to group cells,
 * `to_unique_str(consider_zero=True)`: 6,466 classes. It was nas's key
 * before issue 21 and is kept for the trials proposed under it (replay of
 * a search started by an older nas, see search/replay.c). It is not a
 * functional key: a skip edge copies the text of its source node, so one
 * conv reused through a skip and a second, separately weighted conv on the
 * same input give the same text (different functions), while it never
 * flattens sums across skip edges nor distributes pooling (equal functions
 * kept apart); an edge leaving a zero node is zero although BN's beta
 * makes it a constant.
 *   term(i -> j) = "#"                 if op is none, or node i is "#"
 *                = key(i)              if op is skip_connect
 *                = "(" key(i) ")@" op  otherwise
 *   key(j)       = the terms of node j's inputs, sorted by strcmp, joined by "+"
 */
#include <stdlib.h> /* qsort */
#include <string.h> /* strcmp, strlen, memcpy */
#include <stdio.h>  /* snprintf */
#include "nas/space.h"
#include "space_impl.h"

#define KEY_NODE_MAX NAS_GENOTYPE_STR_MAX

static int cmp_terms(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

void nas_space_nb201_str(const nas_genotype *g, char *buf, size_t n)
{
    static const char zero[] = "#";
    char node[NAS_CELL_NODES][KEY_NODE_MAX];
    char term[NAS_CELL_NODES - 1][KEY_NODE_MAX];

    if (!buf || n == 0)
        return;
    snprintf(node[0], sizeof node[0], "0");
    for (int to = 1; to < NAS_CELL_NODES; to++) {
        for (int from = 0; from < to; from++) {
            int op = g->tok[nas__cell_edge(to, from)];
            const char *name = nas_op_name(op);
            if (!name || op == NAS_OP_NONE || strcmp(node[from], zero) == 0)
                snprintf(term[from], sizeof term[from], "%s", zero);
            else if (op == NAS_OP_SKIP_CONNECT)
                snprintf(term[from], sizeof term[from], "%s", node[from]);
            else
                snprintf(term[from], sizeof term[from], "(%s)@%s", node[from], name);
        }
        qsort(term, (size_t)to, sizeof term[0], cmp_terms);
        size_t used = 0;
        node[to][0] = '\0';
        for (int i = 0; i < to; i++) {
            int w = snprintf(node[to] + used, sizeof node[to] - used, "%s%s", i ? "+" : "",
                             term[i]);
            if (w < 0 || (size_t)w >= sizeof node[to] - used)
                break; /* cannot happen for 4 nodes; keeps the text terminated */
            used += (size_t)w;
        }
    }
    snprintf(buf, n, "%s", node[NAS_CELL_NODES - 1]);
}

/* ---- the functional key ---------------------------------------------------- */

#define ATOM_MAX 256 /* the longest atom has about 70 characters */
#define NODE_ATOMS 8 /* node 3 has at most 4 atoms */

typedef struct atom {
    char s[ATOM_MAX];
    char cls; /* 'v' input-dependent, 'k' input-independent, varies over the image,
                 'c' constant over the image */
} atom;

typedef struct value {
    int n;
    atom a[NODE_ATOMS];
} value;

static int cmp_atoms(const void *a, const void *b)
{
    return strcmp(((const atom *)a)->s, ((const atom *)b)->s);
}

static void push(value *v, const char *s, char cls)
{
    if (v->n >= NODE_ATOMS)
        return; /* cannot happen: see NODE_ATOMS */
    snprintf(v->a[v->n].s, ATOM_MAX, "%s", s);
    v->a[v->n].cls = cls;
    v->n++;
}

/* The sorted atoms of v joined by "+" ("0" when v is zero). */
static void join(value *v, char *buf, size_t n)
{
    qsort(v->a, (size_t)v->n, sizeof v->a[0], cmp_atoms);
    size_t used = 0;
    buf[0] = '\0';
    if (v->n == 0)
        snprintf(buf, n, "0");
    for (int i = 0; i < v->n && used < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%s", i ? "+" : "", v->a[i].s);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* Evaluate the cell symbolically. label[e] >= 0: conv edge e is written
 * with "#label+1"; -1: without a label; tag != 0: every conv edge is
 * written with its edge index (a faithful form used to find twins).
 * in_text[e] gets the text of conv edge e's input ("" for a zero input). */
static void evaluate(const nas_genotype *g, const int *label, int tag, char *out, size_t n,
                     char in_text[NAS_CELL_EDGES][KEY_NODE_MAX])
{
    value node[NAS_CELL_NODES];
    memset(node, 0, sizeof node);
    push(&node[0], "x", 'v');
    char tmp[KEY_NODE_MAX], name[16];
    for (int to = 1; to < NAS_CELL_NODES; to++) {
        for (int from = 0; from < to; from++) {
            int e = nas__cell_edge(to, from);
            int op = g->tok[e];
            value *src = &node[from], *dst = &node[to];
            if (op == NAS_OP_SKIP_CONNECT) {
                for (int i = 0; i < src->n; i++)
                    push(dst, src->a[i].s, src->a[i].cls);
            } else if (op == NAS_OP_AVG_POOL_3X3) {
                for (int i = 0; i < src->n; i++) {
                    if (src->a[i].cls == 'c') {
                        push(dst, src->a[i].s, 'c');
                    } else {
                        snprintf(tmp, sizeof tmp, "p(%s)", src->a[i].s);
                        push(dst, tmp, src->a[i].cls);
                    }
                }
            } else if (op == NAS_OP_NOR_CONV_1X1 || op == NAS_OP_NOR_CONV_3X3) {
                if (tag)
                    snprintf(name, sizeof name, "@%d", e);
                else if (label[e] >= 0)
                    snprintf(name, sizeof name, "#%d", label[e] + 1);
                else
                    name[0] = '\0';
                if (src->n == 0) {
                    if (in_text)
                        in_text[e][0] = '\0';
                    snprintf(tmp, sizeof tmp, "b%s", name);
                    push(dst, tmp, 'c');
                    continue;
                }
                char cls = 'c';
                for (int i = 0; i < src->n; i++)
                    if (src->a[i].cls == 'v' || (src->a[i].cls == 'k' && cls != 'v'))
                        cls = src->a[i].cls;
                if (cls == 'c' && op == NAS_OP_NOR_CONV_3X3)
                    cls = 'k'; /* borders: zero padding */
                char in[KEY_NODE_MAX];
                value copy = *src;
                join(&copy, in, sizeof in);
                if (in_text)
                    snprintf(in_text[e], KEY_NODE_MAX, "%s", in);
                snprintf(tmp, sizeof tmp, "%s%s(%s)", op == NAS_OP_NOR_CONV_1X1 ? "c1" : "c3", name,
                         in);
                push(dst, tmp, cls);
            }
            /* none (and an invalid token): nothing */
        }
    }
    join(&node[NAS_CELL_NODES - 1], out, n);
}

/* 1 when node j's value reaches the output through non-none edges. */
static void live_nodes(const nas_genotype *g, int live[NAS_CELL_NODES])
{
    live[NAS_CELL_NODES - 1] = 1;
    for (int j = NAS_CELL_NODES - 2; j >= 0; j--) {
        live[j] = 0;
        for (int k = j + 1; k < NAS_CELL_NODES; k++)
            if (live[k] && g->tok[nas__cell_edge(k, j)] != NAS_OP_NONE)
                live[j] = 1;
    }
}

static int is_conv(int op) { return op == NAS_OP_NOR_CONV_1X1 || op == NAS_OP_NOR_CONV_3X3; }

/* Try every assignment of labels 0..nt-1 to the twin edges twin[0..nt-1];
 * keep the smallest key in best. */
static void permute(const nas_genotype *g, int *label, const int *twin, int nt, int i,
                    unsigned used, char *best, char *cand, size_t n)
{
    if (i == nt) {
        evaluate(g, label, 0, cand, n, NULL);
        if (best[0] == '\0' || strcmp(cand, best) < 0)
            snprintf(best, n, "%s", cand);
        return;
    }
    for (int l = 0; l < nt; l++)
        if (!(used >> l & 1u)) {
            label[twin[i]] = l;
            permute(g, label, twin, nt, i + 1, used | 1u << l, best, cand, n);
        }
}

/* The functional key of genotype `g` (see the comment at the top of this
 * file); `buf` gets it, truncated to n - 1 characters (NAS_GENOTYPE_STR_MAX
 * is always enough: the longest key has about 130 characters). */
static void functional_key(const nas_genotype *g, char *buf, size_t n)
{
    /* 1. find the live conv edges and, in a faithful tagged form, their
     *    type and input: twins share both (or both have a zero input) */
    char in_text[NAS_CELL_EDGES][KEY_NODE_MAX], scratch[KEY_NODE_MAX];
    int label[NAS_CELL_EDGES], live[NAS_CELL_NODES], twin[NAS_CELL_EDGES], nt = 0;
    for (int e = 0; e < NAS_CELL_EDGES; e++)
        label[e] = -1;
    evaluate(g, label, 1, scratch, sizeof scratch, in_text);
    live_nodes(g, live);
    int to_of[NAS_CELL_EDGES];
    for (int to = 1; to < NAS_CELL_NODES; to++)
        for (int from = 0; from < to; from++)
            to_of[nas__cell_edge(to, from)] = to;
    for (int e = 0; e < NAS_CELL_EDGES; e++) {
        if (!is_conv(g->tok[e]) || !live[to_of[e]])
            continue;
        for (int f = 0; f < NAS_CELL_EDGES; f++) {
            if (f == e || !is_conv(g->tok[f]) || !live[to_of[f]])
                continue;
            int zero = in_text[e][0] == '\0';
            if (zero ? in_text[f][0] == '\0'
                     : g->tok[e] == g->tok[f] && strcmp(in_text[e], in_text[f]) == 0) {
                twin[nt++] = e;
                break;
            }
        }
    }
    /* 2. the smallest key over the labellings of the twins */
    char best[KEY_NODE_MAX] = "", cand[KEY_NODE_MAX];
    permute(g, label, twin, nt, 0, 0u, best, cand, sizeof cand);
    snprintf(buf, n, "%s", best);
}

void nas__cell_key(nas_key_kind kind, const nas_genotype *g, char *buf, size_t n)
{
    if (!buf || n == 0)
        return;
    if (kind == NAS_KEY_NB201)
        nas_space_nb201_str(g, buf, n);
    else
        functional_key(g, buf, n);
}
