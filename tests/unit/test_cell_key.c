/*
 * tests/unit/test_cell_key.c - the cell's canonical key (nas_space_key)
 * against an independent, numeric canonicalisation of the function each
 * of the 15,625 NAS-Bench-201 cells computes (issue 21).
 *
 * The numeric model (the same function model space/cell_key.c states, but
 * evaluated, not rewritten): a feature map is a triple (v, k, c) of values
 * in the field Z_p, p = 2^61 - 1:
 *   v  the part that depends on the cell input,
 *   k  an input-independent part that varies over the image,
 *   c  an input-independent part that is constant over the image.
 *   input x     = (X, 0, 0), X random
 *   none        = (0, 0, 0)
 *   skip        = identity;  a sum of inputs = the sum of the triples
 *   avg_pool    = (P v, P k, c): linear and parameter-free (one random P for
 *                 every pooling edge), and it leaves a constant map as it is
 *                 (count_include_pad = False)
 *   conv edge e = ReLU-Conv-BN with its own weights: a random function
 *                 H(slot of e, type, input triple) of its input, where
 *                   - input zero: BN's shift beta_e, the same for 1x1 and
 *                     3x3 (no weight of the conv touches a zero input), in c;
 *                   - input has a v part: the result goes into v;
 *                   - else a k part: into k;
 *                   - else (a nonzero constant): 1x1 keeps it constant (c),
 *                     3x3 does not (zero padding at the borders: k).
 * Two cells compute the same function when one's conv edges can be renamed
 * into the other's. So every cell is evaluated under every injective
 * assignment of its conv edges to 6 independent weight slots, and the
 * smallest output hash is its class: equal for renamings, and (with
 * probability 1 - 2^-50 or so) different otherwise.
 *
 * The test checks that the key partitions the space exactly as this does:
 * same number of classes, no key holding two functional classes, no
 * functional class split over two keys.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "nas/space.h"

#define N_ALL 15625                       /* 5^6 */
#define P61 ((UINT64_C(1) << 61) - 1)     /* Mersenne prime 2^61 - 1 */
#define FUNCTION_CLASSES 5234             /* the count this model gives */

static uint64_t mod_mul(uint64_t a, uint64_t b)
{
    unsigned __int128 m = (unsigned __int128)a * b;
    uint64_t lo = (uint64_t)(m & P61), hi = (uint64_t)(m >> 61);
    uint64_t r = lo + hi;
    return r >= P61 ? r - P61 : r;
}

static uint64_t mod_add(uint64_t a, uint64_t b)
{
    uint64_t r = a + b;
    return r >= P61 ? r - P61 : r;
}

/* splitmix64's finaliser: a well-mixed hash of a 64-bit word. */
static uint64_t mix(uint64_t z)
{
    z += UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t hash5(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
    uint64_t h = mix(a ^ UINT64_C(0x5bd1e995));
    h = mix(h ^ b);
    h = mix(h ^ c);
    h = mix(h ^ d);
    h = mix(h ^ e);
    return h % P61;
}

typedef struct fmap {
    uint64_t v, k, c;
} fmap;

static const uint64_t X_IN = UINT64_C(0x1234567890abcde) % P61;
static const uint64_t POOL = UINT64_C(0x0fedcba987654321) % P61;

static fmap conv_apply(int slot, int op, fmap in)
{
    fmap out = {0, 0, 0};
    if (in.v == 0 && in.k == 0 && in.c == 0) {
        out.c = hash5(7, (uint64_t)slot, 0, 0, 0); /* beta of this edge */
        return out;
    }
    uint64_t h = hash5((uint64_t)slot, (uint64_t)op, in.v, in.k, in.c);
    if (in.v)
        out.v = h;
    else if (in.k || op == NAS_OP_NOR_CONV_3X3)
        out.k = h;
    else
        out.c = h;
    return out;
}

/* Output hash of cell g with conv edge e using weight slot slot[e]. */
static uint64_t cell_eval(const nas_genotype *g, const int *slot)
{
    fmap node[NAS_CELL_NODES] = {{X_IN, 0, 0}};
    int e = 0;
    for (int to = 1; to < NAS_CELL_NODES; to++) {
        fmap acc = {0, 0, 0};
        for (int from = 0; from < to; from++, e++) {
            fmap in = node[from], t = {0, 0, 0};
            switch (g->tok[e]) {
            case NAS_OP_NONE:
                break;
            case NAS_OP_SKIP_CONNECT:
                t = in;
                break;
            case NAS_OP_AVG_POOL_3X3:
                t.v = mod_mul(POOL, in.v);
                t.k = mod_mul(POOL, in.k);
                t.c = in.c;
                break;
            default:
                t = conv_apply(slot[e], g->tok[e], in);
                break;
            }
            acc.v = mod_add(acc.v, t.v);
            acc.k = mod_add(acc.k, t.k);
            acc.c = mod_add(acc.c, t.c);
        }
        node[to] = acc;
    }
    fmap o = node[NAS_CELL_NODES - 1];
    return hash5(11, o.v, o.k, o.c, 13);
}

/* Smallest output hash over every injective map of g's conv edges into
 * NAS_CELL_EDGES slots (slots unused by a live edge do not matter). */
static void assign(const nas_genotype *g, const int *conv, int m, int i, int *slot,
                   unsigned used, uint64_t *best)
{
    if (i == m) {
        uint64_t h = cell_eval(g, slot);
        if (h < *best)
            *best = h;
        return;
    }
    for (int s = 0; s < NAS_CELL_EDGES; s++)
        if (!(used >> s & 1u)) {
            slot[conv[i]] = s;
            assign(g, conv, m, i + 1, slot, used | 1u << s, best);
        }
}

static uint64_t function_class(const nas_genotype *g)
{
    int conv[NAS_CELL_EDGES], m = 0, slot[NAS_CELL_EDGES] = {0};
    for (int e = 0; e < NAS_CELL_EDGES; e++)
        if (g->tok[e] == NAS_OP_NOR_CONV_1X1 || g->tok[e] == NAS_OP_NOR_CONV_3X3)
            conv[m++] = e;
    uint64_t best = UINT64_MAX;
    assign(g, conv, m, 0, slot, 0u, &best);
    return best;
}

static void genotype_from_index(int idx, nas_genotype *g)
{
    memset(g, 0, sizeof *g);
    g->len = NAS_CELL_EDGES;
    for (int i = 0; i < NAS_CELL_EDGES; i++) {
        g->tok[i] = (uint8_t)(idx % NAS_OP_COUNT);
        idx /= NAS_OP_COUNT;
    }
}

typedef struct cell_row {
    uint64_t fn;       /* functional class (hash) */
    const char *key;   /* nas_space_key */
    int idx;
} cell_row;

static int by_fn(const void *a, const void *b)
{
    const cell_row *x = a, *y = b;
    return x->fn < y->fn ? -1 : x->fn > y->fn;
}

static int by_key(const void *a, const void *b)
{
    const cell_row *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->fn < y->fn ? -1 : x->fn > y->fn);
}

static void fmt(const nas_space *s, int idx, char *buf)
{
    nas_genotype g;
    genotype_from_index(idx, &g);
    nas_space_format(s, &g, buf, NAS_GENOTYPE_STR_MAX);
}

/* The key's partition equals the functional one over all 15,625 cells. */
static void test_key_partition_is_functional(void **state)
{
    (void)state;
    nas_space_desc d = {.type = NAS_SPACE_CELL, .op_mask = (1u << NAS_OP_COUNT) - 1u, .channels = 16, .stages = 3, .cells_per_stage = 1};
    nas_space *s = NULL;
    nas_error err;
    assert_int_equal(nas_space_create(&d, &s, &err), NAS_OK);
    cell_row *row = calloc(N_ALL, sizeof *row);
    char *keys = calloc(N_ALL, NAS_GENOTYPE_STR_MAX);
    assert_non_null(row);
    assert_non_null(keys);
    for (int i = 0; i < N_ALL; i++) {
        nas_genotype g;
        genotype_from_index(i, &g);
        row[i].idx = i;
        row[i].fn = function_class(&g);
        row[i].key = keys + (size_t)i * NAS_GENOTYPE_STR_MAX;
        nas_space_key(s, &g, keys + (size_t)i * NAS_GENOTYPE_STR_MAX, NAS_GENOTYPE_STR_MAX);
    }
    char a[NAS_GENOTYPE_STR_MAX], b[NAS_GENOTYPE_STR_MAX];
    /* no key holds two functions */
    qsort(row, N_ALL, sizeof *row, by_key);
    int key_classes = 1, merged = 0;
    for (int i = 1; i < N_ALL; i++) {
        if (strcmp(row[i - 1].key, row[i].key) != 0) {
            key_classes++;
        } else if (row[i - 1].fn != row[i].fn) {
            if (merged++ == 0) {
                fmt(s, row[i - 1].idx, a);
                fmt(s, row[i].idx, b);
                print_message("key '%s' merges different functions:\n  %s\n  %s\n", row[i].key,
                              a, b);
            }
        }
    }
    /* no function split over two keys */
    qsort(row, N_ALL, sizeof *row, by_fn);
    int fn_classes = 1, split = 0;
    for (int i = 1; i < N_ALL; i++) {
        if (row[i - 1].fn != row[i].fn) {
            fn_classes++;
        } else if (strcmp(row[i - 1].key, row[i].key) != 0) {
            if (split++ == 0) {
                fmt(s, row[i - 1].idx, a);
                fmt(s, row[i].idx, b);
                print_message("one function, two keys:\n  %s -> %s\n  %s -> %s\n", a,
                              row[i - 1].key, b, row[i].key);
            }
        }
    }
    print_message("functional classes %d, key classes %d; %d key merges, %d splits\n",
                  fn_classes, key_classes, merged, split);
    assert_int_equal(fn_classes, FUNCTION_CLASSES);
    assert_int_equal(merged, 0);
    assert_int_equal(split, 0);
    assert_int_equal(key_classes, FUNCTION_CLASSES);
    free(keys);
    free(row);
    nas_space_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_partition_is_functional),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
