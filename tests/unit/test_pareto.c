/*
 * tests/unit/test_pareto.c - Pareto front, non-dominated sorting and
 * crowding distance (Deb et al., NSGA-II, IEEE TEC 2002) against brute
 * force on random points (1, 2 and 3 objectives, mixed max/min goals, ties,
 * duplicates, NaN), crowding against a hand-computed example, and the
 * multi-objective variant of regularized evolution (parent selection by
 * rank then crowding; single-objective behaviour unchanged).
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
#include "nas/search.h"

/* ---- brute-force references (written independently of evaluator/pareto.c) --- */

/* Orient to "smaller is better" and compare: q dominates p. */
static int bf_dominates(const double *q, const double *p, int dims, const int *maximize)
{
    int all_le = 1, some_lt = 0;
    for (int d = 0; d < dims; d++) {
        double a = maximize[d] ? -q[d] : q[d];
        double b = maximize[d] ? -p[d] : p[d];
        if (a > b)
            all_le = 0;
        if (a < b)
            some_lt = 1;
    }
    return all_le && some_lt;
}

static int bf_finite(const double *p, int dims)
{
    for (int d = 0; d < dims; d++)
        if (isnan(p[d]) || isinf(p[d]))
            return 0;
    return 1;
}

/* Random points on a coarse grid (many ties), some exact duplicates of
 * earlier points, a few NaN coordinates. */
static void random_points(nas_rng *r, double *pts, int n, int dims, int grid, int with_nan)
{
    for (int i = 0; i < n; i++) {
        double *p = pts + (size_t)i * dims;
        if (i > 0 && nas_rng_bounded(r, 5) == 0) { /* duplicate */
            int j = (int)nas_rng_bounded(r, (uint32_t)i);
            memcpy(p, pts + (size_t)j * dims, sizeof *p * (size_t)dims);
            continue;
        }
        for (int d = 0; d < dims; d++)
            p[d] = (double)nas_rng_bounded(r, (uint32_t)grid) * 0.5 - 1.0;
        if (with_nan && nas_rng_bounded(r, 12) == 0)
            p[nas_rng_bounded(r, (uint32_t)dims)] = nas_rng_bounded(r, 2) ? NAN : INFINITY;
    }
}

static void test_front_brute_force(void **state)
{
    (void)state;
    nas_rng r;
    nas_rng_seed(&r, 2024, 7);
    int checked_dups = 0, checked_ties = 0;
    for (int trial = 0; trial < 600; trial++) {
        int dims = 1 + trial % 3;
        int n = (int)nas_rng_bounded(&r, 60);
        int grid = 2 + (int)nas_rng_bounded(&r, 12);
        int maximize[3];
        for (int d = 0; d < dims; d++)
            maximize[d] = (int)nas_rng_bounded(&r, 2);
        double pts[60 * 3];
        unsigned char on[60];
        random_points(&r, pts, n, dims, grid, trial % 2);
        int count = nas_pareto_front(pts, n, dims, maximize, on);
        assert_true(count >= 0);
        int want_count = 0;
        for (int i = 0; i < n; i++) {
            const double *p = pts + (size_t)i * dims;
            int want = bf_finite(p, dims);
            for (int j = 0; j < n && want; j++)
                if (j != i && bf_finite(pts + (size_t)j * dims, dims) &&
                    bf_dominates(pts + (size_t)j * dims, p, dims, maximize))
                    want = 0;
            assert_int_equal(on[i], want);
            want_count += want;
            /* duplicates share their fate */
            for (int j = 0; j < i; j++) {
                if (bf_finite(p, dims) && memcmp(p, pts + (size_t)j * dims, sizeof *p * (size_t)dims) == 0) {
                    assert_int_equal(on[i], on[j]);
                    checked_dups += on[i];
                }
            }
        }
        assert_int_equal(count, want_count);
        if (dims == 1 && count > 1)
            checked_ties++;
        /* 1 objective: the front is every point equal to the best value */
        if (dims == 1) {
            double best = NAN;
            for (int i = 0; i < n; i++)
                if (isfinite(pts[i]) && (isnan(best) || (maximize[0] ? pts[i] > best : pts[i] < best)))
                    best = pts[i];
            for (int i = 0; i < n; i++)
                assert_int_equal(on[i], isfinite(pts[i]) && pts[i] == best);
        }
    }
    assert_true(checked_dups > 20);  /* the generator did produce duplicates on fronts */
    assert_true(checked_ties > 20);  /* and tied best values in 1-D */
}

static void test_front_edge_cases(void **state)
{
    (void)state;
    int mx[2] = {1, 0};
    unsigned char on[4];
    assert_int_equal(nas_pareto_front(NULL, 0, 2, mx, NULL), 0);
    assert_int_equal(nas_pareto_front(NULL, 3, 2, mx, on), NAS_EINVAL);
    double p[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    assert_int_equal(nas_pareto_front(p, 4, 0, mx, on), NAS_EINVAL);
    assert_int_equal(nas_pareto_front(p, 4, NAS_PARETO_MAX_DIMS + 1, mx, on), NAS_EINVAL);
    /* four identical points: all on the front */
    assert_int_equal(nas_pareto_front(p, 4, 2, mx, on), 4);
    /* a point equal in one objective and better in the other dominates */
    double q[4] = {0.9, 2.0, 0.9, 1.0}; /* max accuracy, min latency */
    assert_int_equal(nas_pareto_front(q, 2, 2, mx, on), 1);
    assert_int_equal(on[0], 0);
    assert_int_equal(on[1], 1);
    assert_int_equal(nas_pareto_dominates(q + 2, q, 2, mx), 1);
    assert_int_equal(nas_pareto_dominates(q, q + 2, 2, mx), 0);
    assert_int_equal(nas_pareto_dominates(q, q, 2, mx), 0);
}

static void test_sort_brute_force(void **state)
{
    (void)state;
    nas_rng r;
    nas_rng_seed(&r, 99, 3);
    for (int trial = 0; trial < 300; trial++) {
        int dims = 1 + trial % 3;
        int n = (int)nas_rng_bounded(&r, 50);
        int maximize[3];
        for (int d = 0; d < dims; d++)
            maximize[d] = (int)nas_rng_bounded(&r, 2);
        double pts[50 * 3];
        int rank[50];
        unsigned char on[50];
        random_points(&r, pts, n, dims, 3 + (int)nas_rng_bounded(&r, 8), trial % 2);
        int fronts = nas_pareto_sort(pts, n, dims, maximize, rank);
        assert_true(fronts >= 0);
        nas_pareto_front(pts, n, dims, maximize, on);
        int max_rank = -1;
        for (int i = 0; i < n; i++) {
            const double *p = pts + (size_t)i * dims;
            assert_int_equal(rank[i] == -1, !bf_finite(p, dims));
            assert_int_equal(rank[i] == 0, on[i]);
            if (rank[i] > max_rank)
                max_rank = rank[i];
            if (rank[i] < 0)
                continue;
            /* the defining properties of NSGA-II's ranks: nothing of rank
             * >= r dominates a rank-r point; a rank-r point (r > 0) is
             * dominated by some point of rank r - 1 */
            int by_prev = 0;
            for (int j = 0; j < n; j++) {
                if (rank[j] < 0 || j == i)
                    continue;
                int dom = bf_dominates(pts + (size_t)j * dims, p, dims, maximize);
                if (rank[j] >= rank[i])
                    assert_false(dom);
                if (rank[j] == rank[i] - 1 && dom)
                    by_prev = 1;
            }
            if (rank[i] > 0)
                assert_true(by_prev);
        }
        assert_int_equal(fronts, max_rank + 1);
    }
}

static void test_crowding_hand_example(void **state)
{
    (void)state;
    /* Front (max x, min y): (1,1) (2,2) (4,3) (5,5), plus a dominated point
     * (1,5) alone in front 1. Deb et al. III-B by hand: x range 4, y range
     * 4; (2,2): (4-1)/4 + (3-1)/4 = 1.25; (4,3): (5-2)/4 + (5-2)/4 = 1.5. */
    double p[] = {1, 1, 2, 2, 4, 3, 5, 5, 1, 5};
    int mx[2] = {1, 0};
    int rank[5];
    double crowd[5];
    assert_int_equal(nas_pareto_sort(p, 5, 2, mx, rank), 2);
    assert_int_equal(rank[0], 0);
    assert_int_equal(rank[3], 0);
    assert_int_equal(rank[4], 1);
    assert_int_equal(nas_pareto_crowding(p, 5, 2, rank, crowd), NAS_OK);
    assert_true(isinf(crowd[0]) && crowd[0] > 0);
    assert_true(isinf(crowd[3]) && crowd[3] > 0);
    assert_true(fabs(crowd[1] - 1.25) < 1e-12);
    assert_true(fabs(crowd[2] - 1.5) < 1e-12);
    assert_true(isinf(crowd[4])); /* alone in its front */

    /* unranked points get NaN; a flat objective adds nothing */
    double f[] = {1, 0, 2, 0, 3, 0, NAN, 0};
    int rf[4];
    double cf[4];
    assert_int_equal(nas_pareto_sort(f, 4, 2, mx, rf), 3);
    assert_int_equal(nas_pareto_crowding(f, 4, 2, rf, cf), NAS_OK);
    assert_true(isnan(cf[3]));
    assert_int_equal(rf[3], -1);
}

static void test_crowding_properties(void **state)
{
    (void)state;
    nas_rng r;
    nas_rng_seed(&r, 5, 5);
    for (int trial = 0; trial < 200; trial++) {
        int dims = 1 + trial % 3;
        int n = 1 + (int)nas_rng_bounded(&r, 40);
        int mx[3] = {1, 0, 1};
        double pts[40 * 3], scaled[40 * 3];
        int rank[40], rank2[40];
        double crowd[40], crowd2[40];
        random_points(&r, pts, n, dims, 20, 0);
        /* a positive affine change of one objective changes neither ranks
         * nor crowding distances */
        for (int i = 0; i < n * dims; i++)
            scaled[i] = i % dims == 0 ? 7.0 * pts[i] + 3.0 : pts[i];
        assert_true(nas_pareto_sort(pts, n, dims, mx, rank) >= 1);
        assert_true(nas_pareto_sort(scaled, n, dims, mx, rank2) >= 1);
        assert_memory_equal(rank, rank2, sizeof(int) * (size_t)n);
        assert_int_equal(nas_pareto_crowding(pts, n, dims, rank, crowd), NAS_OK);
        assert_int_equal(nas_pareto_crowding(scaled, n, dims, rank, crowd2), NAS_OK);
        for (int i = 0; i < n; i++) {
            assert_true(crowd[i] >= 0);
            if (isinf(crowd[i]))
                assert_true(isinf(crowd2[i]));
            else
                assert_true(fabs(crowd[i] - crowd2[i]) < 1e-9 * (1 + crowd[i]));
            /* the extreme points of each front in each objective are infinite */
            for (int d = 0; d < dims; d++) {
                int is_min = 1, is_max = 1;
                for (int j = 0; j < n; j++) {
                    if (rank[j] != rank[i])
                        continue;
                    if (pts[(size_t)j * dims + d] < pts[(size_t)i * dims + d])
                        is_min = 0;
                    if (pts[(size_t)j * dims + d] > pts[(size_t)i * dims + d])
                        is_max = 0;
                }
                /* strict extremes (no tie) are boundaries */
                int ties = 0;
                for (int j = 0; j < n; j++)
                    ties += j != i && rank[j] == rank[i] &&
                            pts[(size_t)j * dims + d] == pts[(size_t)i * dims + d];
                if ((is_min || is_max) && !ties)
                    assert_true(isinf(crowd[i]));
            }
        }
    }
}

static void test_objective_value(void **state)
{
    (void)state;
    nas_trial_result res = {.status = NAS_OK, .val_accuracy = 0.8, .latency_ms = 1.5,
                            .macs = 1234567, .params = 890};
    assert_true(nas_objective_value("val_accuracy", &res) == 0.8);
    assert_true(nas_objective_value("latency_ms", &res) == 1.5);
    assert_true(nas_objective_value("macs", &res) == 1234567.0);
    assert_true(nas_objective_value("params", &res) == 890.0);
    assert_true(isnan(nas_objective_value("flops", &res)));
    res.macs = -1;
    assert_true(isnan(nas_objective_value("macs", &res)));
    res.latency_ms = NAN;
    assert_true(isnan(nas_objective_value("latency_ms", &res)));
    res.status = NAS_ENAN;
    assert_true(isnan(nas_objective_value("val_accuracy", &res)));
}

/* ---- the multi-objective evolution --------------------------------------- */

typedef struct evo_fx {
    nas_config cfg;
    nas_space *space;
    nas_strategy *s;
} evo_fx;

static void evo_setup(evo_fx *fx, int n_obj, int population, int sample, uint64_t seed)
{
    nas_config_defaults(&fx->cfg);
    snprintf(fx->cfg.experiment, sizeof fx->cfg.experiment, "mo");
    fx->cfg.seed = seed;
    fx->cfg.search.strategy = NAS_STRATEGY_EVOLUTION;
    fx->cfg.search.population = population;
    fx->cfg.search.sample_size = sample;
    fx->cfg.n_objectives = n_obj;
    snprintf(fx->cfg.objectives[0].metric, NAS_NAME_MAX, "val_accuracy");
    fx->cfg.objectives[0].maximize = 1;
    if (n_obj > 1) {
        snprintf(fx->cfg.objectives[1].metric, NAS_NAME_MAX, "latency_ms");
        fx->cfg.objectives[1].maximize = 0;
    }
    nas_error err;
    assert_int_equal(nas_space_create(&fx->cfg.space, &fx->space, &err), NAS_OK);
    assert_int_equal(nas_strategy_create(&fx->cfg, fx->space, &fx->s, &err), NAS_OK);
}

static void evo_teardown(evo_fx *fx)
{
    nas_strategy_destroy(fx->s);
    nas_space_destroy(fx->space);
}

static nas_genotype uniform(int op)
{
    nas_genotype g = {.len = 6};
    for (int i = 0; i < 6; i++)
        g.tok[i] = (uint8_t)op;
    return g;
}

static int hamming(const nas_genotype *a, const nas_genotype *b)
{
    int d = 0;
    for (int i = 0; i < 6; i++)
        d += a->tok[i] != b->tok[i];
    return d;
}

static nas_trial_result result_of(double acc, double lat)
{
    nas_trial_result r = {.status = NAS_OK, .val_accuracy = acc, .latency_ms = lat,
                          .macs = 1000000, .params = 5000, .test_accuracy = -1};
    return r;
}

/* Four members far apart (Hamming distance 6): B (0.95, 3 ms), C (0.92,
 * 2 ms) and A (0.90, 1 ms) form the front, D (0.60, 2.5 ms) is dominated.
 * A and B are the front's ends (infinite crowding), C is in the middle. */
static void seed_population(evo_fx *fx, int use_result, nas_genotype m[4])
{
    nas_error err;
    nas_genotype tmp;
    for (int i = 0; i < 4; i++) /* the seed phase: P random proposals */
        assert_int_equal(nas_strategy_propose(fx->s, NULL, NULL, &tmp, &err), NAS_OK);
    m[0] = uniform(NAS_OP_NOR_CONV_3X3); /* A */
    m[1] = uniform(NAS_OP_NOR_CONV_1X1); /* B */
    m[2] = uniform(NAS_OP_AVG_POOL_3X3); /* C */
    m[3] = uniform(NAS_OP_SKIP_CONNECT); /* D */
    nas_trial_result res[4] = {result_of(0.90, 1.0), result_of(0.95, 3.0), result_of(0.92, 2.0),
                               result_of(0.60, 2.5)};
    for (int i = 0; i < 4; i++) {
        if (use_result)
            nas_strategy_observe_result(fx->s, &m[i], &res[i]);
        else
            nas_strategy_observe(fx->s, &m[i], nas_search_score(&fx->cfg, &res[i], NULL, 0));
    }
}

/* Which member is the parent of `child` (one edge apart), or -1. */
static int parent_of(const nas_genotype *child, const nas_genotype m[4])
{
    for (int i = 0; i < 4; i++)
        if (hamming(child, &m[i]) == 1)
            return i;
    return -1;
}

static void test_evolution_mo_selects_front_ends(void **state)
{
    (void)state;
    evo_fx fx;
    evo_setup(&fx, 2, 4, 40, 11);
    nas_genotype m[4], child;
    seed_population(&fx, 1, m);
    int from[4] = {0};
    nas_error err;
    for (int k = 0; k < 200; k++) {
        assert_int_equal(nas_strategy_propose(fx.s, NULL, NULL, &child, &err), NAS_OK);
        int p = parent_of(&child, m);
        assert_true(p >= 0);
        from[p]++;
    }
    /* rank first: never the dominated D; crowding next: never the middle
     * C; between the two infinite ends the first drawn wins, so both. */
    assert_int_equal(from[3], 0);
    assert_int_equal(from[2], 0);
    assert_true(from[0] > 40);
    assert_true(from[1] > 40);
    evo_teardown(&fx);
}

static void test_evolution_mo_scalar_fallback(void **state)
{
    (void)state;
    /* Same members through the scalar observe: only the score (first
     * objective) is known, so the best-accuracy member B always wins. */
    evo_fx fx;
    evo_setup(&fx, 2, 4, 40, 11);
    nas_genotype m[4], child;
    seed_population(&fx, 0, m);
    nas_error err;
    for (int k = 0; k < 50; k++) {
        assert_int_equal(nas_strategy_propose(fx.s, NULL, NULL, &child, &err), NAS_OK);
        assert_int_equal(parent_of(&child, m), 1);
    }
    evo_teardown(&fx);
}

static void test_evolution_mo_infeasible_excluded(void **state)
{
    (void)state;
    /* A latency constraint makes A (1 ms) the only feasible member when it
     * is 1.5 ms: every child comes from A. */
    evo_fx fx;
    evo_setup(&fx, 2, 4, 40, 3);
    fx.cfg.constraints.latency_ms = 1.5;
    nas_genotype m[4], child;
    seed_population(&fx, 1, m);
    nas_error err;
    for (int k = 0; k < 50; k++) {
        assert_int_equal(nas_strategy_propose(fx.s, NULL, NULL, &child, &err), NAS_OK);
        assert_int_equal(parent_of(&child, m), 0);
    }
    evo_teardown(&fx);
}

/* Synthetic results: accuracy rises with conv edges, latency with conv3x3. */
static nas_trial_result synth(const nas_genotype *g)
{
    double acc = 0.5, lat = 0.2;
    for (int i = 0; i < 6; i++) {
        acc += g->tok[i] == NAS_OP_NOR_CONV_3X3 ? 0.07 : g->tok[i] == NAS_OP_NOR_CONV_1X1 ? 0.04 : 0.0;
        lat += g->tok[i] == NAS_OP_NOR_CONV_3X3 ? 0.5 : g->tok[i] == NAS_OP_NOR_CONV_1X1 ? 0.1 : 0.02;
        acc += 0.003 * (double)((g->tok[i] * 7 + i * 3) % 5);
    }
    nas_trial_result r = result_of(acc, lat);
    if (g->tok[0] == NAS_OP_NONE && g->tok[5] == NAS_OP_AVG_POOL_3X3)
        r.status = NAS_ENAN; /* some failures */
    return r;
}

static void run_sequence(int n_obj, int use_result, uint64_t seed, nas_genotype *seq, int n)
{
    evo_fx fx;
    evo_setup(&fx, n_obj, 8, 3, seed);
    nas_error err;
    for (int k = 0; k < n; k++) {
        assert_int_equal(nas_strategy_propose(fx.s, NULL, NULL, &seq[k], &err), NAS_OK);
        nas_trial_result r = synth(&seq[k]);
        if (use_result)
            nas_strategy_observe_result(fx.s, &seq[k], &r);
        else
            nas_strategy_observe(fx.s, &seq[k], nas_search_score(&fx.cfg, &r, NULL, 0));
    }
    evo_teardown(&fx);
}

static void test_evolution_single_objective_unchanged(void **state)
{
    (void)state;
    /* With one objective, observe_result and observe(score) drive the same
     * search; with two, the runs differ but each is deterministic. */
    nas_genotype a[80], b[80], c[80], d[80];
    run_sequence(1, 0, 17, a, 80);
    run_sequence(1, 1, 17, b, 80);
    assert_memory_equal(a, b, sizeof a);
    run_sequence(2, 1, 17, c, 80);
    run_sequence(2, 1, 17, d, 80);
    assert_memory_equal(c, d, sizeof c);
    assert_memory_equal(a, c, sizeof(nas_genotype) * 8); /* same seed phase */
    int differ = 0;
    for (int k = 8; k < 80; k++)
        differ += memcmp(&a[k], &c[k], sizeof a[k]) != 0;
    assert_true(differ > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_front_brute_force),
        cmocka_unit_test(test_front_edge_cases),
        cmocka_unit_test(test_sort_brute_force),
        cmocka_unit_test(test_crowding_hand_example),
        cmocka_unit_test(test_crowding_properties),
        cmocka_unit_test(test_objective_value),
        cmocka_unit_test(test_evolution_mo_selects_front_ends),
        cmocka_unit_test(test_evolution_mo_scalar_fallback),
        cmocka_unit_test(test_evolution_mo_infeasible_excluded),
        cmocka_unit_test(test_evolution_single_objective_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
