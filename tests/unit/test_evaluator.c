/*
 * tests/unit/test_evaluator.c - trial evaluation (evaluator/evaluator.c,
 * table.c, latency.c): the table evaluator on CSV fixtures written here,
 * a known row of the NAS-Bench-201 table when it is installed, and a short
 * proxy training trial on Fashion-MNIST.
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

#define REF_CELL "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|"
#define POOL_CELL "|avg_pool_3x3~0|+|none~0|skip_connect~1|+|none~0|none~1|avg_pool_3x3~2|"
#define NB201_CSV NAS_SHARED_DIR "/data/nb201/nb201_mini_accs.csv"
#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/nas_test_eval_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char p[512];
    static const char *const names[] = {"t.csv", "bad.csv", "nocol.csv", "short.csv"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", tmpdir, names[i]);
        unlink(p);
    }
    rmdir(tmpdir);
    return 0;
}

static void write_text(const char *name, const char *text, char *path, size_t n)
{
    snprintf(path, n, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static nas_space *make_space(int C, int N)
{
    nas_space_desc sd = {.type = NAS_SPACE_CELL, .op_mask = (1u << NAS_OP_COUNT) - 1,
                         .channels = C, .stages = 3, .cells_per_stage = N};
    nas_space *s = NULL;
    assert_int_equal(nas_space_create(&sd, &s, NULL), NAS_OK);
    return s;
}

static void table_cfg(nas_config *cfg, const char *path, const char *col, const char *tcol)
{
    nas_config_defaults(cfg);
    cfg->evaluator.kind = NAS_EVALUATOR_TABLE;
    snprintf(cfg->evaluator.table, sizeof cfg->evaluator.table, "%s", path);
    snprintf(cfg->evaluator.column, sizeof cfg->evaluator.column, "%s", col);
    snprintf(cfg->evaluator.test_column, sizeof cfg->evaluator.test_column, "%s", tcol);
    cfg->evaluator.table_scale = 0.01;
}

static void test_table_fixture(void **state)
{
    (void)state;
    char path[512];
    write_text("t.csv",
               "arch,cellstr,val-acc,test-acc\n"
               "0," REF_CELL ",91.5,90.25\n"
               "\n"
               "1,\"" POOL_CELL "\", 40 ,\"38.5\"\r\n",
               path, sizeof path);
    nas_space *sp = make_space(16, 1);
    nas_config cfg;
    table_cfg(&cfg, path, "val-acc", "test-acc");
    nas_evaluator *ev = NULL;
    nas_error err = {0};
    assert_int_equal(nas_evaluator_create(&cfg, sp, &ev, &err), NAS_OK);
    nas_genotype g;
    nas_trial_result r;
    assert_int_equal(nas_space_parse(sp, REF_CELL, &g, NULL), NAS_OK);
    assert_int_equal(nas_evaluator_run(ev, &g, NULL, NULL, &r), NAS_OK);
    assert_int_equal(r.status, NAS_OK);
    assert_true(fabs(r.val_accuracy - 0.915) < 1e-12);
    assert_true(fabs(r.test_accuracy - 0.9025) < 1e-12);
    assert_int_equal(r.params, 316058); /* analytic, as the reference table */
    assert_int_equal(r.macs, 32828288);
    assert_true(isnan(r.latency_ms)); /* nothing trained or timed: stored as NULL */
    assert_true(isnan(r.train_loss));
    assert_true(isnan(r.train_seconds)); /* issue 29: not timed, so not 0 */
    double ms = 1.0;
    assert_int_equal(nas_evaluator_latency(ev, &g, &ms, NULL), NAS_OK);
    assert_true(isnan(ms));
    assert_int_equal(nas_space_parse(sp, POOL_CELL, &g, NULL), NAS_OK);
    assert_int_equal(nas_evaluator_run(ev, &g, NULL, NULL, &r), NAS_OK);
    assert_true(fabs(r.val_accuracy - 0.40) < 1e-12);
    assert_true(fabs(r.test_accuracy - 0.385) < 1e-12);
    /* a genotype not in the table */
    assert_int_equal(nas_space_parse(sp, "|skip_connect~0|+|none~0|none~1|+|none~0|none~1|skip_connect~2|",
                                     &g, NULL),
                     NAS_OK);
    assert_int_equal(nas_evaluator_run(ev, &g, NULL, NULL, &r), NAS_ENOTFOUND);
    assert_int_equal(r.status, NAS_ENOTFOUND);
    assert_non_null(strstr(r.error, "not in table"));
    nas_evaluator_destroy(ev);

    /* without a test column */
    table_cfg(&cfg, path, "val-acc", "");
    assert_int_equal(nas_evaluator_create(&cfg, sp, &ev, &err), NAS_OK);
    assert_int_equal(nas_space_parse(sp, REF_CELL, &g, NULL), NAS_OK);
    assert_int_equal(nas_evaluator_run(ev, &g, NULL, NULL, &r), NAS_OK);
    assert_true(r.test_accuracy == -1.0);
    nas_evaluator_destroy(ev);
    nas_space_destroy(sp);
}

static void test_table_errors(void **state)
{
    (void)state;
    char path[512], msg[600];
    nas_space *sp = make_space(16, 1);
    nas_config cfg;
    nas_evaluator *ev = (nas_evaluator *)&cfg;
    nas_error err = {0};

    write_text("bad.csv", "cellstr,acc\n" REF_CELL ",90\n" POOL_CELL ",ninety\n", path,
               sizeof path);
    table_cfg(&cfg, path, "acc", "");
    assert_int_equal(nas_evaluator_create(&cfg, sp, &ev, &err), NAS_EFORMAT);
    assert_null(ev);
    snprintf(msg, sizeof msg, "%s:3:", path);
    assert_non_null(strstr(err.msg, msg));
    assert_non_null(strstr(err.msg, "ninety"));

    write_text("nocol.csv", "cellstr,acc\n" REF_CELL ",90\n", path, sizeof path);
    table_cfg(&cfg, path, "cifar10-val", "");
    assert_int_equal(nas_evaluator_create(&cfg, sp, &ev, &err), NAS_EFORMAT);
    snprintf(msg, sizeof msg, "%s:1:", path);
    assert_non_null(strstr(err.msg, msg));
    assert_non_null(strstr(err.msg, "cifar10-val"));
    table_cfg(&cfg, path, "acc", "acc-test");
    assert_int_equal(nas_evaluator_create(&cfg, sp, &ev, &err), NAS_EFORMAT);

    write_text("short.csv", "id,genotype,acc\n1," REF_CELL ",90\n2," POOL_CELL "\n", path,
               sizeof path);
    table_cfg(&cfg, path, "acc", "");
    assert_int_equal(nas_evaluator_create(&cfg, sp, &ev, &err), NAS_EFORMAT);
    snprintf(msg, sizeof msg, "%s:3:", path);
    assert_non_null(strstr(err.msg, msg));

    table_cfg(&cfg, "/nonexistent/table.csv", "acc", "");
    assert_int_equal(nas_evaluator_create(&cfg, sp, &ev, &err), NAS_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/table.csv"));
    nas_evaluator_destroy(NULL);
    nas_space_destroy(sp);
}

static void test_nb201_table(void **state)
{
    (void)state;
    if (access(NB201_CSV, R_OK) != 0) {
        printf("SKIPPED: NB201 table absent (%s)\n", NB201_CSV);
        skip();
    }
    /* Row 1 of the table: cifar10-val 82.83399999389648, cifar10-test 88.22. */
    const char *cell =
        "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|";
    nas_space *sp = make_space(16, 5);
    nas_config cfg;
    table_cfg(&cfg, NB201_CSV, "cifar10-val", "cifar10-test");
    nas_evaluator *ev = NULL;
    nas_error err = {0};
    if (nas_evaluator_create(&cfg, sp, &ev, &err) != NAS_OK)
        fail_msg("%s", err.msg);
    nas_genotype g;
    nas_trial_result r;
    assert_int_equal(nas_space_parse(sp, cell, &g, NULL), NAS_OK);
    assert_int_equal(nas_evaluator_run(ev, &g, NULL, NULL, &r), NAS_OK);
    assert_true(fabs(r.val_accuracy - 0.8283399999389648) < 1e-9);
    assert_true(fabs(r.test_accuracy - 0.8822) < 1e-9);
    /* every one of the 15,625 genotypes is in the table */
    nas_rng rng;
    nas_rng_seed(&rng, 1, 1);
    for (int i = 0; i < 200; i++) {
        for (int e = 0; e < 6; e++)
            g.tok[e] = (uint8_t)nas_rng_bounded(&rng, NAS_OP_COUNT);
        g.len = 6;
        assert_int_equal(nas_evaluator_run(ev, &g, NULL, NULL, &r), NAS_OK);
        assert_true(r.val_accuracy >= 0.0 && r.val_accuracy <= 1.0);
    }
    nas_evaluator_destroy(ev);
    nas_space_destroy(sp);
}

typedef struct prog {
    double last;
    int calls;
} prog;

static void on_progress(void *ctx, double fraction, double loss)
{
    prog *p = ctx;
    assert_true(fraction >= p->last && fraction <= 1.0);
    assert_true(isfinite(loss));
    p->last = fraction;
    p->calls++;
}

static void test_train_trial(void **state)
{
    (void)state;
    if (access(FMNIST_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0) {
        printf("SKIPPED: Fashion-MNIST not installed\n");
        skip();
    }
    nas_backend *probe = NULL;
    const char *backend = nas_backend_create("cpu", 1, 0, &probe, NULL) == NAS_OK ? "cpu" : "ref";
    nas_backend_destroy(probe);
    /* cpu (oneDNN) is fast at C=16; the plain-C ref backend gets a smaller net */
    int is_cpu = strcmp(backend, "cpu") == 0, C = is_cpu ? 16 : 4;
    nas_space *sp = make_space(C, 1);
    nas_config cfg;
    nas_config_defaults(&cfg);
    cfg.seed = 3;
    cfg.data.valid = 300;
    cfg.data.train_subset = 1000;
    cfg.proxy.epochs = 2;
    cfg.proxy.batch_size = 50;
    cfg.proxy.lr = 0.1;
    cfg.proxy.threads = 1;
    snprintf(cfg.proxy.backend, sizeof cfg.proxy.backend, "%s", backend);
    cfg.evaluator.kind = NAS_EVALUATOR_TRAIN;
    cfg.evaluator.latency_runs = 5;
    cfg.evaluator.latency_warmup = 1;
    nas_evaluator *ev = NULL;
    nas_error err = {0};
    if (nas_evaluator_create(&cfg, sp, &ev, &err) != NAS_OK)
        fail_msg("%s", err.msg);
    nas_genotype g;
    assert_int_equal(nas_space_parse(sp, REF_CELL, &g, NULL), NAS_OK);
    nas_trial_result r;
    prog p = {0, 0};
    assert_int_equal(nas_evaluator_run(ev, &g, on_progress, &p, &r), NAS_OK);
    assert_int_equal(p.calls, 40); /* 2 epochs x 1000/50 steps */
    assert_true(p.last == 1.0);
    nas_net_desc d = {.genotype = g, .channels = C, .stages = 3, .cells_per_stage = 1,
                      .in_c = 1, .in_h = 28, .in_w = 28, .classes = 10};
    int64_t macs, params;
    assert_int_equal(nas_count_net(&d, &macs, &params, NULL, NULL), NAS_OK);
    assert_int_equal(r.macs, macs);
    assert_int_equal(r.params, params);
    assert_int_equal(r.epochs, 2);
    /* 10 classes: chance is 0.1; 2 short epochs reach well above it */
    printf("%s backend: val accuracy %.3f, train loss %.3f, latency %.3f ms, %.2f s\n", backend,
           r.val_accuracy, r.train_loss, r.latency_ms, r.train_seconds);
    assert_true(r.val_accuracy > 0.4 && r.val_accuracy <= 1.0);
    assert_true(r.train_loss > 0 && r.train_loss < 2.0);
    assert_true(r.latency_ms > 0);
    assert_true(r.train_seconds > 0);
    assert_true(r.test_accuracy == -1.0);
    nas_evaluator_destroy(ev);
    nas_space_destroy(sp);
}

/* Issue 30: nas_evaluator_eval_seconds counts the BN recalibration with
 * the validation pass (nas proxy-check's eval_s and cost_s). Recalibrating
 * over the whole 1,000-image training split costs a third of its training
 * (forward passes against forward and backward), validating 20 images
 * under 1% of it: the evaluation must be at least 5% of the training with
 * recalibration, and longer than without. */
static void test_eval_seconds_count_recalibration(void **state)
{
    (void)state;
    if (access(FMNIST_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0) {
        printf("SKIPPED: Fashion-MNIST not installed\n");
        skip();
    }
    nas_space *sp = make_space(8, 1);
    nas_genotype g;
    assert_int_equal(nas_space_parse(sp, REF_CELL, &g, NULL), NAS_OK);
    double eval_s[2], train_s[2];
    for (int on = 0; on < 2; on++) {
        nas_config cfg;
        nas_config_defaults(&cfg);
        cfg.data.valid = 20;
        cfg.data.train_subset = 1000;
        cfg.proxy.batch_size = 50;
        cfg.proxy.threads = 1;
        cfg.proxy.bn_recalibrate = on ? 20 : 0; /* 20 x 50: the whole split */
        cfg.evaluator.latency_runs = 0;
        nas_evaluator *ev = NULL;
        nas_error err = {0};
        if (nas_evaluator_create(&cfg, sp, &ev, &err) != NAS_OK)
            fail_msg("%s", err.msg);
        nas_trial_result r;
        assert_int_equal(nas_evaluator_run(ev, &g, NULL, NULL, &r), NAS_OK);
        eval_s[on] = nas_evaluator_eval_seconds(ev);
        train_s[on] = r.train_seconds;
        nas_evaluator_destroy(ev);
    }
    printf("eval %.4f s / train %.3f s without recalibration, %.4f s / %.3f s with\n", eval_s[0],
           train_s[0], eval_s[1], train_s[1]);
    assert_true(eval_s[1] >= 0.05 * train_s[1]);
    assert_true(eval_s[1] > eval_s[0]);
    nas_space_destroy(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_fixture),
        cmocka_unit_test(test_table_errors),
        cmocka_unit_test(test_nb201_table),
        cmocka_unit_test(test_train_trial),
        cmocka_unit_test(test_eval_seconds_count_recalibration),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
