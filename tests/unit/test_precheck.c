/*
 * tests/unit/test_precheck.c - what the controller uses to reject a
 * candidate before training (issue 6): nas_evaluator_net_desc (the net the
 * evaluator builds, for nas_count_net) and nas_evaluator_latency (batch-1
 * latency of the untrained net).
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "nas/evaluator.h"

#define CONV_CELL "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|"
#define POOL_CELL "|avg_pool_3x3~0|+|none~0|skip_connect~1|+|none~0|none~1|avg_pool_3x3~2|"
#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

static nas_space *make_space(int C, int N)
{
    nas_space_desc sd = {.type = NAS_SPACE_CELL, .op_mask = (1u << NAS_OP_COUNT) - 1,
                         .channels = C, .stages = 3, .cells_per_stage = N};
    nas_space *s = NULL;
    assert_int_equal(nas_space_create(&sd, &s, NULL), NAS_OK);
    return s;
}

/* Without an evaluator: the space's widths and the Fashion-MNIST shape;
 * counts match a description written out by hand. */
static void test_net_desc_counts(void **state)
{
    (void)state;
    nas_space *sp = make_space(8, 2);
    nas_genotype g, p;
    assert_int_equal(nas_space_parse(sp, CONV_CELL, &g, NULL), NAS_OK);
    assert_int_equal(nas_space_parse(sp, POOL_CELL, &p, NULL), NAS_OK);
    nas_net_desc d;
    assert_int_equal(nas_evaluator_net_desc(NULL, sp, &g, &d), NAS_OK);
    assert_int_equal(d.channels, 8);
    assert_int_equal(d.stages, 3);
    assert_int_equal(d.cells_per_stage, 2);
    assert_int_equal(d.in_c, 1);
    assert_int_equal(d.in_h, 28);
    assert_int_equal(d.in_w, 28);
    assert_int_equal(d.classes, 10);
    nas_net_desc h = {.genotype = g, .channels = 8, .stages = 3, .cells_per_stage = 2,
                      .in_c = 1, .in_h = 28, .in_w = 28, .classes = 10};
    int64_t m1, p1, m2, p2, m3, p3;
    assert_int_equal(nas_count_net(&d, &m1, &p1, NULL, NULL), NAS_OK);
    assert_int_equal(nas_count_net(&h, &m2, &p2, NULL, NULL), NAS_OK);
    assert_int_equal(m1, m2);
    assert_int_equal(p1, p2);
    /* five 3x3 convolutions per cell cost more than a cell of pools and skips */
    assert_int_equal(nas_evaluator_net_desc(NULL, sp, &p, &d), NAS_OK);
    assert_int_equal(nas_count_net(&d, &m3, &p3, NULL, NULL), NAS_OK);
    assert_true(m3 < m1);
    assert_true(p3 < p1);
    assert_int_equal(nas_evaluator_net_desc(NULL, NULL, &g, &d), NAS_EINVAL);
    assert_int_equal(nas_evaluator_net_desc(NULL, sp, NULL, &d), NAS_EINVAL);
    assert_int_equal(nas_evaluator_net_desc(NULL, sp, &g, NULL), NAS_EINVAL);
    nas_space_destroy(sp);
}

/* A train evaluator: the same description; a finite positive latency,
 * larger for the all-conv cell than for the cell of pools and skips; and
 * the training run's MACs equal the pre-training count. */
static void test_latency_train(void **state)
{
    (void)state;
    if (access(FMNIST_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0) {
        printf("SKIPPED: Fashion-MNIST not installed\n");
        skip();
    }
    nas_space *sp = make_space(4, 1);
    nas_config cfg;
    nas_config_defaults(&cfg);
    cfg.seed = 2;
    cfg.data.valid = 32;
    cfg.data.train_subset = 32;
    cfg.proxy.epochs = 1;
    cfg.proxy.batch_size = 32;
    cfg.proxy.threads = 1;
    snprintf(cfg.proxy.backend, sizeof cfg.proxy.backend, "ref");
    cfg.evaluator.kind = NAS_EVALUATOR_TRAIN;
    cfg.evaluator.latency_runs = 9;
    cfg.evaluator.latency_warmup = 1;
    nas_evaluator *ev = NULL;
    nas_error err = {0};
    if (nas_evaluator_create(&cfg, sp, &ev, &err) != NAS_OK)
        fail_msg("%s", err.msg);
    nas_genotype g, p;
    assert_int_equal(nas_space_parse(sp, CONV_CELL, &g, NULL), NAS_OK);
    assert_int_equal(nas_space_parse(sp, POOL_CELL, &p, NULL), NAS_OK);
    nas_net_desc a, b;
    assert_int_equal(nas_evaluator_net_desc(ev, NULL, &g, &a), NAS_OK);
    assert_int_equal(nas_evaluator_net_desc(NULL, sp, &g, &b), NAS_OK);
    assert_memory_equal(&a, &b, sizeof a);
    double lg = NAN, lp = NAN;
    if (nas_evaluator_latency(ev, &g, &lg, &err) != NAS_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(nas_evaluator_latency(ev, &p, &lp, &err), NAS_OK);
    printf("ref backend, C=4: conv cell %.3f ms, pool cell %.3f ms\n", lg, lp);
    assert_true(isfinite(lg) && lg > 0);
    assert_true(isfinite(lp) && lp > 0);
    assert_true(lg > lp);
    int64_t macs, params;
    assert_int_equal(nas_count_net(&a, &macs, &params, NULL, NULL), NAS_OK);
    nas_trial_result r;
    assert_int_equal(nas_evaluator_run(ev, &g, NULL, NULL, &r), NAS_OK);
    assert_int_equal(r.macs, macs);
    assert_int_equal(r.params, params);
    double none = 1.0;
    assert_int_not_equal(nas_evaluator_latency(NULL, &g, &none, &err), NAS_OK);
    assert_true(isnan(none));
    nas_evaluator_destroy(ev);
    nas_space_destroy(sp);
}

/* A table evaluator runs nothing: latency unknown (NaN), as its trials record (NULL). */
static void test_latency_table(void **state)
{
    (void)state;
    char dir[] = "/tmp/nas_test_precheck_XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.csv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("cellstr,v\n" CONV_CELL ",90.0\n", f);
    fclose(f);
    nas_space *sp = make_space(16, 1);
    nas_config cfg;
    nas_config_defaults(&cfg);
    cfg.evaluator.kind = NAS_EVALUATOR_TABLE;
    snprintf(cfg.evaluator.table, sizeof cfg.evaluator.table, "%s", path);
    snprintf(cfg.evaluator.column, sizeof cfg.evaluator.column, "v");
    cfg.evaluator.test_column[0] = '\0';
    nas_evaluator *ev = NULL;
    nas_error err = {0};
    if (nas_evaluator_create(&cfg, sp, &ev, &err) != NAS_OK)
        fail_msg("%s", err.msg);
    nas_genotype g;
    assert_int_equal(nas_space_parse(sp, CONV_CELL, &g, NULL), NAS_OK);
    double ms = 1.0;
    assert_int_equal(nas_evaluator_latency(ev, &g, &ms, &err), NAS_OK);
    assert_true(isnan(ms)); /* nothing runs: unknown, stored as NULL */
    nas_evaluator_destroy(ev);
    nas_space_destroy(sp);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_net_desc_counts),
        cmocka_unit_test(test_latency_train),
        cmocka_unit_test(test_latency_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
