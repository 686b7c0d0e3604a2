/*
 * space/cell_key.c - the canonical key of a NAS-Bench-201 cell.
 *
 * The key is the "unique string" NAS-Bench-201 uses to group isomorphic
 * cells (Dong & Yang, ICLR 2020; 15,625 genotypes fall into 6,466 classes).
 * Each node is described by an expression over node 0 ("0"), built in
 * topological order:
 *
 *   term(i -> j) = "#"                 if op is none, or node i is "#"
 *                = key(i)              if op is skip_connect
 *                = "(" key(i) ")@" op  otherwise (a parametric op or pooling)
 *   key(j)       = the terms of node j's inputs, sorted by strcmp, joined by "+"
 *
 * and the cell's key is key(3). Equivalences this captures, and no others:
 *  1. A `none` edge contributes the zero term "#"; so does any edge leaving
 *     a node whose only input is zero (node 1 behind a none edge, etc.):
 *     such branches are dead and the op on them is irrelevant.
 *  2. skip_connect is the identity: it adds no op to a path, so
 *     `skip(conv(x))` and `conv(x)` on the path give the same text.
 *  3. Addition is commutative: the inputs summed at a node are compared as
 *     an unordered multiset (sorted), so swapping which edge carries which
 *     branch does not change the key.
 *  Deliberately NOT captured (kept apart, which is conservative: it never
 *  merges cells that compute different functions):
 *  - duplicates are not collapsed: x + x stays "0+0", distinct from "0";
 *  - a zero term is dropped only when it is the whole of a node: a node
 *    with several inputs that are all zero ("#+#") is kept as written, and
 *    an op applied to it is kept (after BatchNorm it is a learned constant,
 *    not zero); "#" terms inside a sum are kept as well. This is exactly
 *    NAS-Bench-201's rule, so keys agree with its 6,466 classes
 *    (tests/unit/test_space.c checks the count).
 *  - sums are not flattened across skip edges: skip_connect copies the
 *    text of a node as one term, so skip(a + b) + c and a + skip(b + c)
 *    (equal functions) keep different keys, as in NAS-Bench-201;
 *  - ops are not treated as linear: avg_pool(x) + avg_pool(y) and
 *    avg_pool(x + y) are different keys.
 *
 * Genotypes whose output is identically zero (invalid, see space/cell.c)
 * still get a key, one of five strings made of "#" terms.
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

/* Canonical key of genotype `g` of the cell space (see the comment above).
 * `buf` gets the key, truncated to n - 1 characters (NAS_GENOTYPE_STR_MAX is
 * always enough: the longest key has about 130 characters). */
void nas_space_key(const nas_space *s, const nas_genotype *g, char *buf, size_t n)
{
    if (nas__space_chain(s)) { /* chain spaces: space/chain.c */
        nas__chain_key(nas__space_chain(s), g, buf, n);
        return;
    }
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
