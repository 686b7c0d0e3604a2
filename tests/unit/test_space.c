/*
 * tests/unit/test_space.c - the op registry and the NAS-Bench-201 cell space:
 * validity, canonical key (5,234 functional classes; NAS-Bench-201's own
 * string, Dong & Yang ICLR 2020: 6,466; tests/unit/test_cell_key.c checks
 * the functional partition cell by cell), string
 * round trips and parse errors, sampling, mutation, op subsets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>
#include "nas/space.h"

#define N_ALL 15625 /* 5^6 */

static nas_space *make_space(unsigned mask)
{
    nas_space_desc d = {.type = NAS_SPACE_CELL, .op_mask = mask, .channels = 16, .stages = 3, .cells_per_stage = 1};
    nas_space *s = NULL;
    nas_error err;
    assert_int_equal(nas_space_create(&d, &s, &err), NAS_OK);
    assert_non_null(s);
    return s;
}

static unsigned mask_of(int a, int b) { return (1u << a) | (1u << b); }

static void genotype_from_index(int idx, nas_genotype *g)
{
    memset(g, 0, sizeof *g);
    g->len = NAS_CELL_EDGES;
    for (int i = 0; i < NAS_CELL_EDGES; i++) {
        g->tok[i] = (uint8_t)(idx % NAS_OP_COUNT);
        idx /= NAS_OP_COUNT;
    }
}

static void parse_ok(const nas_space *s, const char *str, nas_genotype *g)
{
    nas_error err = {0};
    int rc = nas_space_parse(s, str, g, &err);
    if (rc != NAS_OK)
        fail_msg("parse '%s': %s", str, err.msg);
}

/* ---- ops ---------------------------------------------------------------- */

static void test_ops_registry(void **state)
{
    (void)state;
    assert_int_equal(NAS_OP_COUNT, 5);
    for (int i = 0; i < NAS_OP_COUNT; i++) {
        const char *name = nas_op_name(i);
        assert_non_null(name);
        int op = -1;
        assert_int_equal(nas_op_from_name(name, &op), NAS_OK);
        assert_int_equal(op, i);
    }
    assert_string_equal(nas_op_name(NAS_OP_NOR_CONV_3X3), "nor_conv_3x3");
    assert_string_equal(nas_op_name(NAS_OP_NONE), "none");
    assert_null(nas_op_name(-1));
    assert_null(nas_op_name(NAS_OP_COUNT));
    int op = 77;
    assert_int_equal(nas_op_from_name("conv9x9", &op), NAS_ENOTFOUND);
    assert_int_equal(op, 77);
    assert_int_equal(nas_op_from_name("", &op), NAS_ENOTFOUND);
    assert_int_equal(nas_op_from_name(NULL, &op), NAS_ENOTFOUND);
}

/* ---- create -------------------------------------------------------------- */

static void test_create_errors(void **state)
{
    (void)state;
    nas_error err = {0};
    nas_space *s = (nas_space *)&err; /* must be reset to NULL on failure */
    nas_space_desc d = {.type = NAS_SPACE_CELL, .op_mask = 0, .channels = 16, .stages = 3, .cells_per_stage = 1};
    assert_int_equal(nas_space_create(&d, &s, &err), NAS_EINVAL);
    assert_null(s);
    d.op_mask = 1u << NAS_OP_NONE;
    assert_int_equal(nas_space_create(&d, &s, &err), NAS_EINVAL);
    assert_non_null(strstr(err.msg, "none"));
    d.op_mask = 1u << NAS_OP_COUNT;
    assert_int_equal(nas_space_create(&d, &s, &err), NAS_EINVAL);
    d.op_mask = 3;
    d.channels = 0;
    assert_int_equal(nas_space_create(&d, &s, &err), NAS_EINVAL);
    d.channels = 16;
    d.type = (nas_space_type)7;
    assert_int_equal(nas_space_create(&d, &s, &err), NAS_EINVAL);
    nas_space_destroy(NULL);

    nas_space *ok = make_space(0x1f);
    assert_int_equal(nas_space_seq_len(ok), 6);
    assert_int_equal(nas_space_vocab_size(ok), NAS_OP_COUNT);
    assert_int_equal(nas_space_size(ok), N_ALL);
    assert_int_equal(nas_space_get_desc(ok)->channels, 16);
    nas_space_destroy(ok);
    nas_space *sub = make_space(mask_of(NAS_OP_SKIP_CONNECT, NAS_OP_NOR_CONV_3X3));
    assert_int_equal(nas_space_size(sub), 64);
    assert_true(nas_space_token_allowed(sub, 0, NAS_OP_SKIP_CONNECT));
    assert_false(nas_space_token_allowed(sub, 0, NAS_OP_NONE));
    assert_false(nas_space_token_allowed(sub, 6, NAS_OP_SKIP_CONNECT));
    assert_false(nas_space_token_allowed(sub, 0, NAS_OP_COUNT));
    nas_space_destroy(sub);
}

/* ---- validity ------------------------------------------------------------- */

/* Independent check: the four paths 0->3 of the cell, listed by hand. */
static int has_live_path(const nas_genotype *g)
{
    static const int paths[4][3] = {{3, -1, -1}, {0, 4, -1}, {1, 5, -1}, {0, 2, 5}};
    for (int p = 0; p < 4; p++) {
        int live = 1;
        for (int k = 0; k < 3 && paths[p][k] >= 0; k++)
            if (g->tok[paths[p][k]] == NAS_OP_NONE)
                live = 0;
        if (live)
            return 1;
    }
    return 0;
}

static void test_validity(void **state)
{
    (void)state;
    nas_space *s = make_space(0x1f);
    int valid = 0;
    for (int i = 0; i < N_ALL; i++) {
        nas_genotype g;
        genotype_from_index(i, &g);
        int v = nas_space_is_valid(s, &g);
        assert_int_equal(v, has_live_path(&g));
        valid += v;
    }
    /* 5^6 minus the genotypes with every 0->3 path cut (4^... by inclusion
     * of the path structure); the brute force above and the count agree. */
    assert_int_equal(valid, 15284);

    nas_genotype g;
    genotype_from_index(N_ALL - 1, &g); /* all avg_pool_3x3: valid */
    assert_true(nas_space_is_valid(s, &g));
    g.len = 5;
    assert_false(nas_space_is_valid(s, &g));
    g.len = 6;
    g.tok[2] = NAS_OP_COUNT;
    assert_false(nas_space_is_valid(s, &g));
    nas_space_destroy(s);

    /* an op outside the subset makes a genotype invalid */
    nas_space *sub = make_space(mask_of(NAS_OP_NONE, NAS_OP_NOR_CONV_1X1));
    parse_ok(NULL, "|nor_conv_1x1~0|+|none~0|none~1|+|none~0|nor_conv_1x1~1|none~2|", &g);
    assert_true(nas_space_is_valid(sub, &g));
    g.tok[0] = NAS_OP_SKIP_CONNECT;
    assert_false(nas_space_is_valid(sub, &g));
    nas_space_destroy(sub);
}

/* ---- canonical key ------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int count_classes(const nas_space *s, int nb201)
{
    char **keys = calloc(N_ALL, sizeof *keys);
    assert_non_null(keys);
    char *pool = calloc(N_ALL, NAS_GENOTYPE_STR_MAX);
    assert_non_null(pool);
    for (int i = 0; i < N_ALL; i++) {
        nas_genotype g;
        genotype_from_index(i, &g);
        keys[i] = pool + (size_t)i * NAS_GENOTYPE_STR_MAX;
        if (nb201)
            nas_space_nb201_str(&g, keys[i], NAS_GENOTYPE_STR_MAX);
        else
            nas_space_key(s, &g, keys[i], NAS_GENOTYPE_STR_MAX);
        assert_true(strlen(keys[i]) > 0);
        assert_true(strlen(keys[i]) < 200);
    }
    qsort(keys, N_ALL, sizeof *keys, cmp_str);
    int classes = 1;
    for (int i = 1; i < N_ALL; i++)
        classes += strcmp(keys[i - 1], keys[i]) != 0;
    free(pool);
    free(keys);
    return classes;
}

static void test_key_class_count(void **state)
{
    (void)state;
    nas_space *s = make_space(0x1f);
    assert_int_equal(count_classes(s, 0), 5234); /* the functional key */
    assert_int_equal(count_classes(s, 1), 6466); /* NAS-Bench-201's count */
    /* the NB201 key kind makes nas_space_key that string (replay of old trials) */
    nas_space_set_key_kind(s, NAS_KEY_NB201);
    assert_int_equal(count_classes(s, 0), 6466);
    char a[NAS_GENOTYPE_STR_MAX];
    nas_genotype g;
    genotype_from_index(1234, &g);
    nas_space_key(s, &g, a, sizeof a);
    char b[NAS_GENOTYPE_STR_MAX];
    nas_space_nb201_str(&g, b, sizeof b);
    assert_string_equal(a, b);
    nas_space_set_key_kind(s, NAS_KEY_FUNCTION);
    assert_int_equal(count_classes(s, 0), 5234);
    nas_space_destroy(s);
}

static void key_of(const nas_space *s, const char *str, char *buf)
{
    nas_genotype g;
    parse_ok(s, str, &g);
    nas_space_key(s, &g, buf, NAS_GENOTYPE_STR_MAX);
}

static void test_key_pairs(void **state)
{
    (void)state;
    nas_space *s = make_space(0x1f);
    /* equivalent: same function */
    static const char *same[][2] = {
        /* node 1 is a copy of the input: conv3(x) + conv1(x) in either order */
        {"|skip_connect~0|+|none~0|none~1|+|nor_conv_3x3~0|nor_conv_1x1~1|none~2|",
         "|skip_connect~0|+|none~0|none~1|+|nor_conv_1x1~0|nor_conv_3x3~1|none~2|"},
        /* node 2 is a dead end (3<-2 is none): its inputs do not matter */
        {"|nor_conv_3x3~0|+|avg_pool_3x3~0|nor_conv_1x1~1|+|skip_connect~0|nor_conv_3x3~1|none~2|",
         "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|none~2|"},
        /* conv(skip(x)) == conv(x) */
        {"|skip_connect~0|+|none~0|none~1|+|none~0|nor_conv_3x3~1|none~2|",
         "|none~0|+|none~0|none~1|+|nor_conv_3x3~0|none~1|none~2|"},
        /* node 1 is zero: pooling or copying it gives zero */
        {"|none~0|+|skip_connect~0|skip_connect~1|+|none~0|avg_pool_3x3~1|nor_conv_1x1~2|",
         "|none~0|+|skip_connect~0|avg_pool_3x3~1|+|none~0|none~1|nor_conv_1x1~2|"},
        /* pooling is linear: pool(x + conv(x)) == pool(x) + pool(conv(x)) */
        {"|nor_conv_3x3~0|+|skip_connect~0|skip_connect~1|+|none~0|none~1|avg_pool_3x3~2|",
         "|nor_conv_3x3~0|+|none~0|avg_pool_3x3~1|+|avg_pool_3x3~0|none~1|skip_connect~2|"},
        /* sums are flat across skip edges: skip(a + b) + c == a + skip(b + c) */
        {"|nor_conv_3x3~0|+|avg_pool_3x3~0|skip_connect~1|+|nor_conv_1x1~0|none~1|skip_connect~2|",
         "|nor_conv_3x3~0|+|nor_conv_1x1~0|none~1|+|avg_pool_3x3~0|skip_connect~1|skip_connect~2|"},
        /* a conv on a zero node is its BN shift, whatever the kernel size */
        {"|none~0|+|skip_connect~0|nor_conv_3x3~1|+|none~0|none~1|skip_connect~2|",
         "|none~0|+|skip_connect~0|nor_conv_1x1~1|+|none~0|none~1|skip_connect~2|"},
        /* two separately weighted convs on x, whichever edges carry them */
        {"|nor_conv_3x3~0|+|nor_conv_3x3~0|none~1|+|none~0|nor_conv_3x3~1|skip_connect~2|",
         "|nor_conv_3x3~0|+|none~0|nor_conv_3x3~1|+|nor_conv_3x3~0|none~1|skip_connect~2|"},
    };
    /* different functions */
    static const char *diff[][2] = {
        {"|nor_conv_3x3~0|+|none~0|none~1|+|none~0|skip_connect~1|none~2|",
         "|nor_conv_1x1~0|+|none~0|none~1|+|none~0|skip_connect~1|none~2|"},
        /* pool(conv(x)) vs conv(pool(x)) */
        {"|avg_pool_3x3~0|+|none~0|none~1|+|none~0|nor_conv_3x3~1|none~2|",
         "|nor_conv_3x3~0|+|none~0|none~1|+|none~0|avg_pool_3x3~1|none~2|"},
        /* x + x vs x */
        {"|skip_connect~0|+|none~0|none~1|+|skip_connect~0|skip_connect~1|none~2|",
         "|none~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|"},
        /* conv(x) + x vs conv(x) */
        {"|nor_conv_3x3~0|+|none~0|none~1|+|skip_connect~0|skip_connect~1|none~2|",
         "|nor_conv_3x3~0|+|none~0|none~1|+|none~0|skip_connect~1|none~2|"},
        /* issue 21: c2(c1(x)) + c3(x) (3 convs) vs c2(c1(x)) + c1(x) (2 convs);
         * NAS-Bench-201's string merges them */
        {"|nor_conv_3x3~0|+|nor_conv_3x3~0|none~1|+|none~0|nor_conv_3x3~1|skip_connect~2|",
         "|nor_conv_3x3~0|+|none~0|skip_connect~1|+|none~0|nor_conv_3x3~1|skip_connect~2|"},
        /* two convs on x vs one conv on x used twice */
        {"|skip_connect~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|none~0|none~1|skip_connect~2|",
         "|nor_conv_3x3~0|+|none~0|skip_connect~1|+|none~0|skip_connect~1|skip_connect~2|"},
        /* x + beta (a conv on the zero node 1) vs x */
        {"|none~0|+|skip_connect~0|nor_conv_3x3~1|+|none~0|none~1|skip_connect~2|",
         "|none~0|+|skip_connect~0|none~1|+|none~0|none~1|skip_connect~2|"},
        /* pool(beta) is beta, but pool(x) is not x: conv(x + beta) vs conv(x) + beta */
        {"|none~0|+|skip_connect~0|nor_conv_1x1~1|+|none~0|none~1|nor_conv_3x3~2|",
         "|none~0|+|nor_conv_3x3~0|nor_conv_1x1~1|+|none~0|none~1|skip_connect~2|"},
    };
    char a[NAS_GENOTYPE_STR_MAX], b[NAS_GENOTYPE_STR_MAX];
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        key_of(s, same[i][0], a);
        key_of(s, same[i][1], b);
        if (strcmp(a, b) != 0)
            fail_msg("pair %zu should merge: '%s' vs '%s'", i, a, b);
    }
    for (size_t i = 0; i < sizeof diff / sizeof diff[0]; i++) {
        key_of(s, diff[i][0], a);
        key_of(s, diff[i][1], b);
        if (strcmp(a, b) == 0)
            fail_msg("pair %zu should differ, both '%s'", i, a);
    }
    nas_space_destroy(s);
}

/* Property over the whole space: when edge (3<-2) is none, the edges into
 * node 2 cannot change the key; and swapping the two inputs of node 2 after
 * making node 1 a copy of the input (skip) never changes it either. */
static void test_key_properties(void **state)
{
    (void)state;
    nas_space *s = make_space(0x1f);
    char a[NAS_GENOTYPE_STR_MAX], b[NAS_GENOTYPE_STR_MAX];
    for (int i = 0; i < N_ALL; i++) {
        nas_genotype g, h;
        genotype_from_index(i, &g);
        nas_space_key(s, &g, a, sizeof a);
        h = g;
        if (g.tok[5] == NAS_OP_NONE) {
            h.tok[1] = NAS_OP_AVG_POOL_3X3;
            h.tok[2] = NAS_OP_NOR_CONV_1X1;
            nas_space_key(s, &h, b, sizeof b);
            assert_string_equal(a, b);
        }
        if (g.tok[0] == NAS_OP_SKIP_CONNECT) {
            h = g;
            h.tok[1] = g.tok[2];
            h.tok[2] = g.tok[1];
            nas_space_key(s, &h, b, sizeof b);
            assert_string_equal(a, b);
        }
    }
    nas_space_destroy(s);
}

/* ---- string form ----------------------------------------------------------------- */

static void test_round_trip(void **state)
{
    (void)state;
    nas_space *s = make_space(0x1f);
    char buf[NAS_GENOTYPE_STR_MAX];
    for (int i = 0; i < N_ALL; i++) {
        nas_genotype g, h;
        genotype_from_index(i, &g);
        assert_int_equal(nas_space_format(s, &g, buf, sizeof buf), NAS_OK);
        parse_ok(s, buf, &h);
        assert_int_equal(h.len, 6);
        assert_memory_equal(g.tok, h.tok, 6);
    }
    /* the string names edges in NAS-Bench-201 order */
    nas_genotype g;
    parse_ok(s, "|nor_conv_3x3~0|+|nor_conv_1x1~0|avg_pool_3x3~1|+|skip_connect~0|none~1|nor_conv_3x3~2|", &g);
    const uint8_t want[6] = {NAS_OP_NOR_CONV_3X3, NAS_OP_NOR_CONV_1X1, NAS_OP_AVG_POOL_3X3,
                             NAS_OP_SKIP_CONNECT, NAS_OP_NONE, NAS_OP_NOR_CONV_3X3};
    assert_memory_equal(g.tok, want, 6);
    assert_int_equal(nas_space_format(s, &g, buf, sizeof buf), NAS_OK);
    assert_string_equal(buf, "|nor_conv_3x3~0|+|nor_conv_1x1~0|avg_pool_3x3~1|+|skip_connect~0|none~1|nor_conv_3x3~2|");
    /* surrounding white space is accepted */
    parse_ok(s, "  |nor_conv_3x3~0|+|nor_conv_1x1~0|avg_pool_3x3~1|+|skip_connect~0|none~1|nor_conv_3x3~2|\n", &g);
    /* buffer too small */
    assert_int_equal(nas_space_format(s, &g, buf, 10), NAS_EINVAL);
    assert_string_equal(buf, "");
    nas_space_destroy(s);
}

static void test_parse_errors(void **state)
{
    (void)state;
    nas_space *s = make_space(0x1f);
    nas_space *sub = make_space(mask_of(NAS_OP_SKIP_CONNECT, NAS_OP_NOR_CONV_3X3));
    static const struct {
        int sub;
        const char *str;
        const char *want; /* substring of the message */
    } cases[] = {
        {0, "|nor_conv_3x3~0|+|nor_conv_1x1~0|conv9x9~1|+|skip_connect~0|none~1|nor_conv_3x3~2|",
         "edge 3 (2<-1): unknown op 'conv9x9'"},
        {0, "|nor_conv_3x3~0|+|nor_conv_1x1~0|none~0|+|skip_connect~0|none~1|nor_conv_3x3~2|",
         "edge 3 (2<-1): source '~0', expected '~1'"},
        {0, "|nor_conv_3x3~0|+|nor_conv_1x1~0|+|skip_connect~0|none~1|nor_conv_3x3~2|",
         "node 2 has 1 input(s), expected 2"},
        {0, "|nor_conv_3x3~0|none~1|+|nor_conv_1x1~0|none~1|+|skip_connect~0|none~1|nor_conv_3x3~2|",
         "node 1 has more than 1 inputs"},
        {0, "|nor_conv_3x3~0|+|nor_conv_1x1~0|none~1|", "expected '+'"},
        {0, "|nor_conv_3x3~0|+|nor_conv_1x1~0|none~1|+|skip_connect~0|none~1|nor_conv_3x3~2|+|none~0|",
         "trailing text"},
        {0, "|nor_conv_3x3|+|nor_conv_1x1~0|none~1|+|skip_connect~0|none~1|nor_conv_3x3~2|",
         "edge 1 (1<-0): 'nor_conv_3x3' has no '~0'"},
        {0, "nor_conv_3x3~0|+|nor_conv_1x1~0|none~1|+|skip_connect~0|none~1|nor_conv_3x3~2|",
         "node 1: expected '|'"},
        {0, "", "node 1: expected '|'"},
        {1, "|nor_conv_3x3~0|+|skip_connect~0|nor_conv_3x3~1|+|skip_connect~0|none~1|nor_conv_3x3~2|",
         "edge 5 (3<-1): op 'none' is not in this space's op set (skip_connect, nor_conv_3x3)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nas_genotype g;
        nas_error err = {0};
        int rc = nas_space_parse(cases[i].sub ? sub : s, cases[i].str, &g, &err);
        assert_int_equal(rc, NAS_EFORMAT);
        if (!strstr(err.msg, cases[i].want))
            fail_msg("case %zu: message '%s' lacks '%s'", i, err.msg, cases[i].want);
    }
    nas_space_destroy(sub);
    nas_space_destroy(s);
}

/* ---- sampling and mutation --------------------------------------------------------- */

static void test_sample_determinism(void **state)
{
    (void)state;
    nas_space *s = make_space(0x1f);
    nas_rng r1, r2, r3;
    nas_rng_seed(&r1, 7, 1);
    nas_rng_seed(&r2, 7, 1);
    nas_rng_seed(&r3, 8, 1);
    int differ = 0;
    for (int i = 0; i < 200; i++) {
        nas_genotype a, b, c;
        nas_space_sample(s, &r1, &a);
        nas_space_sample(s, &r2, &b);
        nas_space_sample(s, &r3, &c);
        assert_int_equal(a.len, 6);
        assert_true(nas_space_is_valid(s, &a));
        assert_memory_equal(a.tok, b.tok, 6);
        differ += memcmp(a.tok, c.tok, 6) != 0;
    }
    assert_true(differ > 150);
    nas_space_destroy(s);
}

/* Uniform over valid genotypes: a 3-op space has 729 genotypes; every
 * valid one appears about equally often and no invalid one appears. */
static void test_sample_uniform_subset(void **state)
{
    (void)state;
    unsigned mask = (1u << NAS_OP_NONE) | (1u << NAS_OP_SKIP_CONNECT) | (1u << NAS_OP_AVG_POOL_3X3);
    nas_space *s = make_space(mask);
    static const int ops3[3] = {NAS_OP_NONE, NAS_OP_SKIP_CONNECT, NAS_OP_AVG_POOL_3X3};
    int count[729] = {0};
    int n_valid = 0, is_valid[729];
    for (int i = 0; i < 729; i++) {
        nas_genotype g = {.len = 6};
        int k = i;
        for (int e = 0; e < 6; e++, k /= 3)
            g.tok[e] = (uint8_t)ops3[k % 3];
        is_valid[i] = nas_space_is_valid(s, &g);
        n_valid += is_valid[i];
    }
    nas_rng r;
    nas_rng_seed(&r, 123, 5);
    const int draws = 200 * n_valid;
    for (int d = 0; d < draws; d++) {
        nas_genotype g;
        nas_space_sample(s, &r, &g);
        int idx = 0;
        for (int e = 5; e >= 0; e--) {
            int k = g.tok[e] == NAS_OP_NONE ? 0 : g.tok[e] == NAS_OP_SKIP_CONNECT ? 1 : 2;
            assert_true(nas_space_token_allowed(s, e, g.tok[e]));
            idx = idx * 3 + k;
        }
        count[idx]++;
    }
    double chi2 = 0;
    for (int i = 0; i < 729; i++) {
        if (!is_valid[i]) {
            assert_int_equal(count[i], 0);
            continue;
        }
        double dlt = count[i] - 200.0;
        chi2 += dlt * dlt / 200.0;
    }
    /* chi-square with n_valid - 1 dof: mean ~ n_valid, sd ~ sqrt(2 n_valid) */
    assert_true(chi2 < n_valid + 6 * sqrt(2.0 * n_valid));
    nas_space_destroy(s);
}

static void test_mutation(void **state)
{
    (void)state;
    unsigned masks[3] = {0x1f, mask_of(NAS_OP_NONE, NAS_OP_NOR_CONV_1X1),
                         (1u << NAS_OP_SKIP_CONNECT) | (1u << NAS_OP_NOR_CONV_3X3) |
                             (1u << NAS_OP_AVG_POOL_3X3)};
    for (int m = 0; m < 3; m++) {
        nas_space *s = make_space(masks[m]);
        nas_rng r;
        nas_rng_seed(&r, 99, 3);
        int pos_hits[6] = {0};
        for (int i = 0; i < 3000; i++) {
            nas_genotype p, c;
            nas_space_sample(s, &r, &p);
            nas_space_mutate(s, &r, &p, &c);
            assert_true(nas_space_is_valid(s, &c));
            int changed = 0, where = -1;
            for (int e = 0; e < 6; e++) {
                assert_true(nas_space_token_allowed(s, e, c.tok[e]));
                if (c.tok[e] != p.tok[e]) {
                    changed++;
                    where = e;
                }
            }
            assert_int_equal(changed, 1);
            pos_hits[where]++;
        }
        for (int e = 0; e < 6; e++) /* every edge gets mutated */
            assert_true(pos_hits[e] > 100);
        /* determinism */
        nas_rng a, b;
        nas_rng_seed(&a, 5, 0);
        nas_rng_seed(&b, 5, 0);
        nas_genotype p, c1, c2;
        nas_space_sample(s, &a, &p);
        nas_space_sample(s, &b, &p);
        nas_space_mutate(s, &a, &p, &c1);
        nas_space_mutate(s, &b, &p, &c2);
        assert_memory_equal(c1.tok, c2.tok, 6);
        nas_space_destroy(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ops_registry),
        cmocka_unit_test(test_create_errors),
        cmocka_unit_test(test_validity),
        cmocka_unit_test(test_key_class_count),
        cmocka_unit_test(test_key_pairs),
        cmocka_unit_test(test_key_properties),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_sample_determinism),
        cmocka_unit_test(test_sample_uniform_subset),
        cmocka_unit_test(test_mutation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
