/*
 * tests/unit/test_strategy.c - random search and regularized evolution
 * (Real et al., AAAI 2019): determinism, valid and new proposals, aging of
 * the population, failed trials kept out, and evolution beating random
 * search on a synthetic objective.
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
#include "nas/inspect.h" /* nas_count_genotype */
#include "nas/search.h"

/* ---- a tiny controller: known keys, synthetic scores ---------------------- */

typedef struct known {
    const nas_space *space;
    int n;
    char keys[4096][NAS_GENOTYPE_STR_MAX / 2];
    int all; /* 1: everything is known */
    int except_valid; /* with all: this one genotype (tokens) is not known */
    nas_genotype except;
} known;

static int known_index(const known *k, const nas_genotype *g)
{
    char key[NAS_GENOTYPE_STR_MAX];
    nas_space_key(k->space, g, key, sizeof key);
    for (int i = 0; i < k->n; i++)
        if (strcmp(k->keys[i], key) == 0)
            return i;
    return -1;
}

static int is_known(void *ctx, const nas_genotype *g)
{
    known *k = ctx;
    if (k->all)
        return !(k->except_valid && memcmp(g->tok, k->except.tok, 6) == 0);
    return known_index(k, g) >= 0;
}

static void add_known(known *k, const nas_genotype *g)
{
    assert_true(k->n < 4096);
    char key[NAS_GENOTYPE_STR_MAX];
    nas_space_key(k->space, g, key, sizeof key);
    assert_true(strlen(key) < sizeof k->keys[0]);
    snprintf(k->keys[k->n++], sizeof k->keys[0], "%s", key);
}

/* Synthetic objective: 1 per nor_conv_3x3 edge, 0.5 per nor_conv_1x1 edge,
 * plus a fixed pseudo-random table value in [0, 0.3) per genotype. */
static double synth_score(const nas_genotype *g)
{
    double s = 0;
    uint32_t h = 2166136261u;
    for (int i = 0; i < 6; i++) {
        s += g->tok[i] == NAS_OP_NOR_CONV_3X3 ? 1.0 : g->tok[i] == NAS_OP_NOR_CONV_1X1 ? 0.5 : 0.0;
        h = (h ^ g->tok[i]) * 16777619u;
    }
    return s + 0.3 * (double)(h % 1000u) / 1000.0;
}

typedef struct fixture {
    nas_config cfg;
    nas_space *space;
} fixture;

static void setup_fx(fixture *fx, nas_strategy_kind kind, uint64_t seed, unsigned mask)
{
    nas_config_defaults(&fx->cfg);
    snprintf(fx->cfg.experiment, sizeof fx->cfg.experiment, "t");
    fx->cfg.search.strategy = kind;
    fx->cfg.seed = seed;
    if (mask)
        fx->cfg.space.op_mask = mask;
    fx->space = NULL;
    nas_error err = {0};
    assert_int_equal(nas_space_create(&fx->cfg.space, &fx->space, &err), NAS_OK);
}

static nas_strategy *make_strategy(const fixture *fx)
{
    nas_strategy *s = NULL;
    nas_error err = {0};
    int rc = nas_strategy_create(&fx->cfg, fx->space, &s, &err);
    if (rc != NAS_OK)
        fail_msg("strategy: %s", err.msg);
    return s;
}

/* Run `trials` propose/observe rounds; record the proposals; return the
 * best score seen. Every proposal must be valid and new. */
static double run_search(nas_strategy *s, const nas_space *space, int trials, nas_genotype *seq)
{
    known *k = calloc(1, sizeof *k);
    assert_non_null(k);
    k->space = space;
    double best = -1;
    for (int t = 0; t < trials; t++) {
        nas_genotype g;
        nas_error err = {0};
        int rc = nas_strategy_propose(s, is_known, k, &g, &err);
        if (rc != NAS_OK)
            fail_msg("propose %d: %s", t, err.msg);
        assert_true(nas_space_is_valid(space, &g));
        assert_int_equal(known_index(k, &g), -1);
        add_known(k, &g);
        if (seq)
            seq[t] = g;
        double sc = synth_score(&g);
        if (sc > best)
            best = sc;
        nas_strategy_observe(s, &g, sc);
    }
    free(k);
    return best;
}

static void check_determinism(nas_strategy_kind kind)
{
    enum { T = 60 };
    nas_genotype a[T], b[T], c[T];
    fixture fx;
    setup_fx(&fx, kind, 11, 0);
    nas_strategy *s1 = make_strategy(&fx), *s2 = make_strategy(&fx);
    run_search(s1, fx.space, T, a);
    run_search(s2, fx.space, T, b);
    for (int t = 0; t < T; t++)
        assert_memory_equal(a[t].tok, b[t].tok, 6);
    nas_strategy_destroy(s1);
    nas_strategy_destroy(s2);
    fx.cfg.seed = 12;
    nas_strategy *s3 = make_strategy(&fx);
    run_search(s3, fx.space, T, c);
    int differ = 0;
    for (int t = 0; t < T; t++)
        differ += memcmp(a[t].tok, c[t].tok, 6) != 0;
    assert_true(differ > T / 2);
    nas_strategy_destroy(s3);
    nas_space_destroy(fx.space);
}

static void test_random_determinism(void **state)
{
    (void)state;
    check_determinism(NAS_STRATEGY_RANDOM);
}

static void test_evolution_determinism(void **state)
{
    (void)state;
    check_determinism(NAS_STRATEGY_EVOLUTION);
}

static void test_names(void **state)
{
    (void)state;
    fixture fx;
    setup_fx(&fx, NAS_STRATEGY_RANDOM, 1, 0);
    nas_strategy *s = make_strategy(&fx);
    assert_string_equal(nas_strategy_name(s), "random");
    nas_strategy_destroy(s);
    fx.cfg.search.strategy = NAS_STRATEGY_EVOLUTION;
    s = make_strategy(&fx);
    assert_string_equal(nas_strategy_name(s), "evolution");
    nas_strategy_destroy(s);
    nas_strategy_destroy(NULL);
    nas_space_destroy(fx.space);
}

/* A space of 64 genotypes (skip_connect, nor_conv_3x3): all known gives
 * NAS_EINFEASIBLE; all but one gives exactly that one (found by the scan
 * after the random draws fail). */
static void test_random_exhaustion(void **state)
{
    (void)state;
    unsigned mask = (1u << NAS_OP_SKIP_CONNECT) | (1u << NAS_OP_NOR_CONV_3X3);
    nas_strategy_kind kinds[2] = {NAS_STRATEGY_RANDOM, NAS_STRATEGY_EVOLUTION};
    for (int k = 0; k < 2; k++) {
        fixture fx;
        setup_fx(&fx, kinds[k], 5, mask);
        nas_strategy *s = make_strategy(&fx);
        known *kn = calloc(1, sizeof *kn);
        assert_non_null(kn);
        kn->space = fx.space;
        kn->all = 1;
        nas_genotype g;
        nas_error err = {0};
        assert_int_equal(nas_strategy_propose(s, is_known, kn, &g, &err), NAS_EINFEASIBLE);
        assert_int_equal(err.code, NAS_EINFEASIBLE);
        kn->except_valid = 1;
        const uint8_t last[6] = {NAS_OP_SKIP_CONNECT, NAS_OP_NOR_CONV_3X3, NAS_OP_SKIP_CONNECT,
                                 NAS_OP_NOR_CONV_3X3, NAS_OP_NOR_CONV_3X3, NAS_OP_SKIP_CONNECT};
        kn->except.len = 6;
        memcpy(kn->except.tok, last, 6);
        assert_int_equal(nas_strategy_propose(s, is_known, kn, &g, &err), NAS_OK);
        assert_memory_equal(g.tok, last, 6);
        free(kn);
        nas_strategy_destroy(s);
        nas_space_destroy(fx.space);
    }
}

static int hamming(const nas_genotype *a, const nas_genotype *b)
{
    int d = 0;
    for (int i = 0; i < 6; i++)
        d += a->tok[i] != b->tok[i];
    return d;
}

static void uniform_genotype(nas_genotype *g, int op)
{
    memset(g, 0, sizeof *g);
    g->len = 6;
    memset(g->tok, op, 6);
}

/* Count, among n proposals, the children one edge away from `a`. */
static int children_near(nas_strategy *s, const nas_genotype *a, int n)
{
    int near = 0;
    for (int i = 0; i < n; i++) {
        nas_genotype g;
        assert_int_equal(nas_strategy_propose(s, NULL, NULL, &g, NULL), NAS_OK);
        near += hamming(&g, a) <= 1;
    }
    return near;
}

/* Aging: with P = S = 4, a champion A (score 100) is the parent of many
 * children while it is in the population; once four younger results have
 * arrived it is removed, whatever its score, and no child is near it.
 * Failed trials (NaN) do not enter the population, so they do not push A
 * out. */
static void test_evolution_aging(void **state)
{
    (void)state;
    fixture fx;
    setup_fx(&fx, NAS_STRATEGY_EVOLUTION, 3, 0);
    fx.cfg.search.population = 4;
    fx.cfg.search.sample_size = 4;
    nas_strategy *s = make_strategy(&fx);
    nas_genotype seedg;
    for (int i = 0; i < 4; i++) /* the random phase: P proposals */
        assert_int_equal(nas_strategy_propose(s, NULL, NULL, &seedg, NULL), NAS_OK);

    nas_genotype A, B, C, D, E, F;
    uniform_genotype(&A, NAS_OP_NOR_CONV_3X3);
    uniform_genotype(&B, NAS_OP_SKIP_CONNECT);
    uniform_genotype(&C, NAS_OP_NOR_CONV_1X1);
    uniform_genotype(&D, NAS_OP_AVG_POOL_3X3);
    uniform_genotype(&E, NAS_OP_SKIP_CONNECT);
    E.tok[3] = E.tok[4] = E.tok[5] = NAS_OP_NOR_CONV_1X1;
    uniform_genotype(&F, NAS_OP_AVG_POOL_3X3);
    F.tok[0] = NAS_OP_SKIP_CONNECT;

    nas_strategy_observe(s, &A, 100.0);
    /* failed trials: not members */
    for (int i = 0; i < 5; i++)
        nas_strategy_observe(s, &F, NAN);
    /* A is the only member: every child is its mutant */
    assert_int_equal(children_near(s, &A, 20), 20);

    nas_strategy_observe(s, &B, 1.0);
    nas_strategy_observe(s, &C, 2.0);
    nas_strategy_observe(s, &D, 3.0);
    /* A is still a member and the best: a tournament of 4 draws from 4
     * members picks it with probability 1 - (3/4)^4 = 0.68 */
    int near = children_near(s, &A, 40);
    assert_true(near >= 15);
    assert_true(near < 40);

    nas_strategy_observe(s, &E, 4.0); /* fifth result: A, the oldest, leaves */
    assert_int_equal(children_near(s, &A, 40), 0);
    /* the new best member E is now the most frequent parent */
    assert_true(children_near(s, &E, 40) >= 15);
    nas_strategy_destroy(s);
    nas_space_destroy(fx.space);
}

/* Evolution climbs the synthetic objective faster than random search:
 * mean best score over 20 seeds at a budget of 60 trials. */
static void test_evolution_beats_random(void **state)
{
    (void)state;
    enum { SEEDS = 20, T = 60 };
    double sum[2] = {0, 0};
    nas_strategy_kind kinds[2] = {NAS_STRATEGY_RANDOM, NAS_STRATEGY_EVOLUTION};
    for (int k = 0; k < 2; k++) {
        for (int seed = 0; seed < SEEDS; seed++) {
            fixture fx;
            setup_fx(&fx, kinds[k], 1000 + (uint64_t)seed, 0);
            nas_strategy *s = make_strategy(&fx);
            sum[k] += run_search(s, fx.space, T, NULL);
            nas_strategy_destroy(s);
            nas_space_destroy(fx.space);
        }
    }
    double mean_random = sum[0] / SEEDS, mean_evo = sum[1] / SEEDS;
    print_message("mean best score over %d seeds, %d trials: random %.3f, evolution %.3f (max 6.3)\n",
                  SEEDS, T, mean_random, mean_evo);
    assert_true(mean_evo > mean_random + 0.3);
}

/* Issue 31, search.evolution.move_proposal: is_known is asked about every
 * mutation the step makes (each new here), so the log holds the step's
 * candidates; the proposal must be the one with the most parameters (the
 * "params" proxy), the first mutated among equals - and for some seed not
 * the first candidate, which plain evolution would have proposed. */
typedef struct asked_log {
    nas_genotype g[256];
    int n;
} asked_log;

static int log_known(void *ctx, const nas_genotype *g)
{
    asked_log *l = ctx;
    if (l->n < 256)
        l->g[l->n++] = *g;
    return 0;
}

static int64_t params_of(const nas_space *sp, const nas_genotype *g)
{
    int64_t macs = 0, params = 0;
    assert_int_equal(nas_count_genotype(NULL, sp, g, &macs, &params), NAS_OK);
    return params;
}

static void test_move_proposal(void **state)
{
    (void)state;
    int not_first = 0;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        fixture fx;
        setup_fx(&fx, NAS_STRATEGY_EVOLUTION, seed, 0);
        fx.cfg.search.population = 3;
        fx.cfg.search.sample_size = 1;
        fx.cfg.space.channels = 4;
        snprintf(fx.cfg.search.move_proposal.proxy, sizeof fx.cfg.search.move_proposal.proxy,
                 "params");
        fx.cfg.search.move_proposal.candidates = 8;
        nas_strategy *s = make_strategy(&fx);
        asked_log *l = calloc(1, sizeof *l);
        assert_non_null(l);
        nas_genotype g;
        nas_error err = {0};
        for (int i = 0; i < 3; i++) {
            assert_int_equal(nas_strategy_propose(s, log_known, l, &g, &err), NAS_OK);
            nas_strategy_observe(s, &g, 0.1 * (i + 1));
        }
        l->n = 0;
        assert_int_equal(nas_strategy_propose(s, log_known, l, &g, &err), NAS_OK);
        assert_true(l->n >= 2);
        int best = 0;
        for (int i = 1; i < l->n; i++)
            if (params_of(fx.space, &l->g[i]) > params_of(fx.space, &l->g[best]))
                best = i;
        char want[NAS_GENOTYPE_STR_MAX], got[NAS_GENOTYPE_STR_MAX];
        nas_space_key(fx.space, &l->g[best], want, sizeof want);
        nas_space_key(fx.space, &g, got, sizeof got);
        if (strcmp(want, got) != 0)
            fail_msg("seed %llu: proposed %s, the best-scoring of %d candidates is %s",
                     (unsigned long long)seed, got, l->n, want);
        not_first += best != 0;
        free(l);
        nas_strategy_destroy(s);
        nas_space_destroy(fx.space);
    }
    assert_true(not_first > 0);
}

/* Issue 33 (search.enqueue): an enqueued genotype counts as one of the
 * strategy's proposals. Evolution (P = 3, S = 1): enqueued G plus two
 * random samples fill the initial population; with only G's result
 * finite, the next proposal is a mutation of G (one token changed), not a
 * fourth random sample. NAO (seed_archs = 2): G plus one uniform sample
 * are the seeds, so the next proposal is no longer labelled "nao-seed". */
static void test_enqueued_counts(void **state)
{
    (void)state;
    const nas_genotype G = {.tok = {NAS_OP_NOR_CONV_3X3, NAS_OP_NOR_CONV_3X3, NAS_OP_NOR_CONV_3X3,
                                    NAS_OP_SKIP_CONNECT, NAS_OP_NOR_CONV_3X3, NAS_OP_NOR_CONV_3X3}};
    for (uint64_t seed = 1; seed <= 5; seed++) {
        fixture fx;
        setup_fx(&fx, NAS_STRATEGY_EVOLUTION, seed, 0);
        fx.cfg.search.population = 3;
        fx.cfg.search.sample_size = 1;
        nas_strategy *s = make_strategy(&fx);
        known *k = calloc(1, sizeof *k);
        assert_non_null(k);
        k->space = fx.space;
        nas_strategy_enqueued(s, &G);
        add_known(k, &G);
        nas_genotype g;
        nas_error err = {0};
        for (int i = 0; i < 2; i++) {
            assert_int_equal(nas_strategy_propose(s, is_known, k, &g, &err), NAS_OK);
            add_known(k, &g);
            nas_strategy_observe(s, &g, NAN); /* failed: kept out of the population */
        }
        nas_strategy_observe(s, &G, 0.9);
        assert_int_equal(nas_strategy_propose(s, is_known, k, &g, &err), NAS_OK);
        int diff = 0;
        for (int t = 0; t < 6; t++)
            diff += g.tok[t] != G.tok[t];
        if (diff != 1)
            fail_msg("seed %llu: the 4th proposal differs from the enqueued parent in %d tokens",
                     (unsigned long long)seed, diff);
        free(k);
        nas_strategy_destroy(s);
        nas_space_destroy(fx.space);
    }
    fixture fx;
    setup_fx(&fx, NAS_STRATEGY_NAO, 3, 0);
    fx.cfg.search.nao.seed_archs = 2;
    nas_strategy *s = make_strategy(&fx);
    nas_strategy_enqueued(s, &G);
    nas_genotype g;
    nas_error err = {0};
    assert_int_equal(nas_strategy_propose(s, NULL, NULL, &g, &err), NAS_OK);
    assert_string_equal(nas_strategy_origin(s), "nao-seed");
    assert_memory_not_equal(g.tok, G.tok, 6);
    nas_strategy_observe(s, &G, 0.9);
    nas_strategy_observe(s, &g, 0.5);
    assert_int_equal(nas_strategy_propose(s, NULL, NULL, &g, &err), NAS_OK);
    assert_string_not_equal(nas_strategy_origin(s), "nao-seed");
    assert_memory_not_equal(g.tok, G.tok, 6); /* the enqueued key is never proposed again */
    nas_strategy_destroy(s);
    nas_space_destroy(fx.space);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_random_determinism),
        cmocka_unit_test(test_evolution_determinism),
        cmocka_unit_test(test_random_exhaustion),
        cmocka_unit_test(test_evolution_aging),
        cmocka_unit_test(test_evolution_beats_random),
        cmocka_unit_test(test_enqueued_counts),
        cmocka_unit_test(test_move_proposal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
