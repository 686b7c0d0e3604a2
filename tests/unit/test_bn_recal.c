/*
 * tests/unit/test_bn_recal.c - BN recalibration (nas_net_bn_recalibrate,
 * issue 30 item 3) on Fashion-MNIST (skipped when absent):
 *   - a net trained until its running statistics caught up with its
 *     weights (cosine schedule to 0: the last steps barely move it) scores
 *     the same after recalibration, within noise;
 *   - the result does not depend on the statistics before (a cumulative
 *     average from scratch): recalibrating twice gives identical bits, and
 *     0 batches changes nothing;
 *   - a batch larger than the net holds is NAS_EINVAL.
 * The 24-step proxy it lifts above chance: tests/e2e/test_bn_recalibrate.sh;
 * PyTorch's momentum=None as the oracle: tests/e2e/test_eval_oracle.c.
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nas/trainer.h"

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"
#define MAX_STATS 64

typedef struct fixture {
    nas_dataset *train, *valid;
    nas_backend *be;
} fixture;

/* Copy every BN running statistic of net into buf (float count returned). */
static size_t stats(nas_net *net, float *buf, size_t cap)
{
    nas_net_param ps[512];
    int n = nas_net_params(net, ps, 512);
    size_t used = 0;
    for (int i = 0; i < n && i < 512; i++) {
        if (ps[i].grad)
            continue;
        assert_true(used + ps[i].value->count <= cap);
        assert_int_equal(nas_tensor_download(ps[i].value, buf + used, ps[i].value->count), NAS_OK);
        used += ps[i].value->count;
    }
    return used;
}

static void test_trained_net_unchanged(void **state)
{
    fixture *f = *state;
    nas_space *space = NULL;
    nas_error err = {0};
    nas_space_desc sd = {.type = NAS_SPACE_CELL, .op_mask = (1u << NAS_OP_COUNT) - 1,
                         .channels = 8, .stages = 3, .cells_per_stage = 1};
    assert_int_equal(nas_space_create(&sd, &space, &err), NAS_OK);
    nas_net_desc d;
    memset(&d, 0, sizeof d);
    assert_int_equal(nas_space_parse(space, "|nor_conv_3x3~0|+|skip_connect~0|nor_conv_3x3~1|+|"
                                            "skip_connect~0|nor_conv_1x1~1|nor_conv_3x3~2|",
                                     &d.genotype, &err),
                     NAS_OK);
    nas_space_destroy(space);
    d.channels = 8;
    d.stages = 3;
    d.cells_per_stage = 1;
    d.in_c = 1;
    d.in_h = d.in_w = 28;
    d.classes = 10;
    nas_net *net = NULL;
    assert_int_equal(nas_net_create(f->be, &d, 64, 5, &net, &err), NAS_OK);
    /* 6 epochs of 2,000 images, batch 64: 192 steps, cosine to 0 */
    nas_recipe rec = {6, 64, 0.05, 0.9, 1, 5e-4, NAS_SCHEDULE_COSINE, 5, {0, 0, 0}, 0};
    nas_train_stats st;
    if (nas_train(net, f->train, &rec, NULL, NULL, &st, &err) != NAS_OK)
        fail_msg("training: %s", err.msg);
    double before, after, again, loss_b, loss_a;
    if (nas_net_evaluate(net, f->valid, 50, &before, &loss_b, &err) != NAS_OK)
        fail_msg("evaluate: %s", err.msg);
    nas_dataset *recal = NULL;
    assert_int_equal(nas_dataset_sample(f->train, 20 * 64, 5, &recal, &err), NAS_OK);
    assert_int_equal(recal->n, 20 * 64);

    float *s0 = malloc(MAX_STATS * 1024 * sizeof(float)), *s1 = malloc(MAX_STATS * 1024 * sizeof(float));
    assert_non_null(s0);
    assert_non_null(s1);
    size_t n0 = stats(net, s0, MAX_STATS * 1024);
    assert_int_equal(nas_net_bn_recalibrate(net, recal, 0, 64, &err), NAS_OK); /* 0: nothing */
    assert_int_equal(stats(net, s1, MAX_STATS * 1024), n0);
    assert_memory_equal(s0, s1, n0 * sizeof(float));

    assert_int_equal(nas_net_bn_recalibrate(net, recal, 20, 64, &err), NAS_OK);
    assert_int_equal(nas_net_evaluate(net, f->valid, 50, &after, &loss_a, &err), NAS_OK);
    printf("trained 192 steps: train loss %.4f; val accuracy %.4f (loss %.4f) before, %.4f (loss "
           "%.4f) after recalibration on 20 batches\n", st.train_loss, before, loss_b, after, loss_a);
    assert_true(before > 0.6); /* it did learn */
    /* 1,000 validation images, the same for both: a paired difference of
     * 1.5 points is about 5 images' worth more than one stale statistic */
    assert_true(fabs(after - before) <= 0.015);
    assert_true(fabs(loss_a - loss_b) <= 0.05);

    /* from whatever statistics: the same bits again */
    n0 = stats(net, s0, MAX_STATS * 1024);
    assert_int_equal(nas_net_bn_recalibrate(net, recal, 20, 64, &err), NAS_OK);
    assert_int_equal(stats(net, s1, MAX_STATS * 1024), n0);
    assert_memory_equal(s0, s1, n0 * sizeof(float));
    assert_int_equal(nas_net_evaluate(net, f->valid, 50, &again, NULL, &err), NAS_OK);
    assert_true(again == after);

    /* a batch the net cannot hold */
    assert_int_equal(nas_net_bn_recalibrate(net, recal, 2, 128, &err), NAS_EINVAL);
    printf("larger batch: %s\n", err.msg);
    assert_int_equal(nas_net_bn_recalibrate(net, NULL, 2, 64, &err), NAS_EINVAL);
    free(s0);
    free(s1);
    nas_dataset_destroy(recal);
    nas_net_destroy(net);
}

static int setup(void **state)
{
    nas_dataset *full = NULL;
    nas_error err = {0};
    if (nas_fmnist_load(FMNIST_DIR, "train", &full, &err) != NAS_OK) {
        printf("SKIP: Fashion-MNIST not found in %s: %s\n", FMNIST_DIR, err.msg);
        exit(77);
    }
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    int rc = nas_dataset_split(full, 1000, 2000, 7, &f->train, &f->valid, &err);
    nas_dataset_destroy(full);
    if (!rc)
        rc = nas_backend_create("cpu", 1, 0, &f->be, &err);
    if (rc) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    nas_dataset_destroy(f->train);
    nas_dataset_destroy(f->valid);
    nas_backend_destroy(f->be);
    free(f);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trained_net_unchanged),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
