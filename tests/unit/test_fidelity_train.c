/*
 * tests/unit/test_fidelity_train.c - issue 17, promotion continues training:
 * a trial trained to budget b1 and later continued from its checkpoint to
 * b2 (nas_full_train_opts.until, the learning-rate schedule spanning the
 * maximum budget R) ends with weights equal, bit for bit, to one run
 * trained to b2 with the same seed - on the ref and cpu backends. Also: the
 * schedule really spans R (a run of R = b2 epochs differs), a run to R
 * equals nas_train of R epochs, and a checkpoint beyond `until` is refused.
 * The same with budgets in images (resource "images"), stopping and
 * continuing inside epochs.
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "nas/trainer.h"
#include "tests/unit/tiny_data.h"
#include "tests/unit/tiny_net.h"

enum { NONE = NAS_OP_NONE, SKIP = NAS_OP_SKIP_CONNECT, C1 = NAS_OP_NOR_CONV_1X1,
       C3 = NAS_OP_NOR_CONV_3X3, POOL = NAS_OP_AVG_POOL_3X3 };

#define SCRATCH_NAME "fidtrain"
#include "scratch_dir.h" /* g_dir */

/* n 1x8x8 images with a learnable label, PCG32(seed). */
static nas_dataset *synth(int n, uint64_t seed)
{
    nas_dataset *d = tiny_data_alloc(n);
    nas_rng r;
    nas_rng_seed(&r, seed, 7);
    for (int i = 0; i < n; i++) {
        int label = (int)nas_rng_bounded(&r, 5);
        d->labels[i] = (uint8_t)label;
        for (int p = 0; p < 64; p++) {
            int quad = (p / 8 >= 4) * 2 + (p % 8 >= 4);
            d->images[i * 64 + p] = nas_rng_normal(&r) * 0.5f + (quad == label % 4 ? 1.0f : 0.0f);
        }
    }
    return d;
}

/* Every parameter and buffer of net, concatenated (caller frees). */
static float *all_weights(nas_net *net, size_t *count)
{
    int np = nas_net_params(net, NULL, 0);
    nas_net_param *p = calloc((size_t)np, sizeof *p);
    nas_net_params(net, p, np);
    size_t total = 0;
    for (int i = 0; i < np; i++)
        total += p[i].value->count;
    float *w = malloc(total * sizeof *w);
    size_t at = 0;
    for (int i = 0; i < np; i++) {
        assert_int_equal(nas_tensor_download(p[i].value, w + at, p[i].value->count), NAS_OK);
        at += p[i].value->count;
    }
    free(p);
    *count = total;
    return w;
}

/* A fresh net (seed 5) trained as o says (o->recipe, checkpoint, budget);
 * its weights and stats. rc other than want_rc fails, naming `what`. */
static float *train_net(nas_backend *be, const nas_dataset *data, const nas_full_train_opts *o,
                        int want_rc, const char *what, nas_train_stats *st, int *resumed,
                        size_t *n)
{
    static const int ops[6] = {C3, C1, POOL, SKIP, NONE, C3};
    nas_net_desc d = tiny_net_desc(ops, 1);
    nas_net *net = NULL;
    nas_error err = {0};
    assert_int_equal(nas_net_create(be, &d, o->recipe->batch_size, 5, &net, &err), NAS_OK);
    int rc = nas_train_resumable(net, data, o, st, resumed, &err);
    if (rc != want_rc)
        fail_msg("%s: %s (rc %d, expected %d)", what, err.msg, rc, want_rc);
    float *w = all_weights(net, n);
    nas_net_destroy(net);
    return w;
}

/* Trained with recipe `rec` up to epoch `until` (0: all), from/to
 * checkpoint `ck` (NULL: none). */
static float *run(nas_backend *be, const nas_dataset *data, const nas_recipe *rec, int until,
                  const char *ck, int want_rc, int *resumed, size_t *n)
{
    nas_full_train_opts o = {.recipe = rec, .checkpoint = ck, .until = until};
    nas_train_stats st;
    char what[64];
    snprintf(what, sizeof what, "until epoch %d", until);
    float *w = train_net(be, data, &o, want_rc, what, &st, resumed, n);
    if (want_rc == NAS_OK)
        assert_int_equal(st.epochs, until ? until : rec->epochs);
    return w;
}

/* Backend `name`, or the test skipped (visibly) when it cannot be made. */
static nas_backend *open_or_skip(const char *name)
{
    nas_backend *be = NULL;
    nas_error err;
    if (nas_backend_create(name, 1, 0, &be, &err) != NAS_OK) {
        printf("SKIPPED the %s backend: %s\n", name, err.msg);
        skip();
    }
    return be;
}

static void check_backend(const char *name)
{
    nas_backend *be = open_or_skip(name);
    nas_error err;
    nas_dataset *data = synth(72, 3);
    /* R = 4 epochs, rungs 1 -> 2 -> 4 (eta = 2) */
    nas_recipe rec = {.epochs = 4, .batch_size = 16, .lr = 0.05, .momentum = 0.9, .nesterov = 1,
                      .weight_decay = 5e-4, .schedule = NAS_SCHEDULE_COSINE, .seed = 11};
    char ck[300];
    snprintf(ck, sizeof ck, "%s/%s.ckpt.npz", g_dir, name);
    unlink(ck);
    int resumed = -1;
    size_t n1, n2, n3, n4, n5, n6;
    /* promoted: budget 1, then continued to 2 from the checkpoint */
    float *w1 = run(be, data, &rec, 1, ck, NAS_OK, &resumed, &n1);
    assert_int_equal(resumed, 0);
    float *w2 = run(be, data, &rec, 2, ck, NAS_OK, &resumed, &n2);
    assert_int_equal(resumed, 1);
    /* one uninterrupted run to 2 */
    float *w3 = run(be, data, &rec, 2, NULL, NAS_OK, &resumed, &n3);
    assert_int_equal(n2, n3);
    assert_memory_equal(w2, w3, n2 * sizeof *w2);
    assert_memory_not_equal(w1, w2, n1 * sizeof *w1);
    /* the schedule spans R: a 2-epoch recipe anneals to 0 by epoch 2 and differs */
    nas_recipe short_rec = rec;
    short_rec.epochs = 2;
    float *w4 = run(be, data, &short_rec, 0, NULL, NAS_OK, &resumed, &n4);
    assert_memory_not_equal(w3, w4, n3 * sizeof *w3);
    /* continued to R: equal to nas_train of R epochs */
    float *w5 = run(be, data, &rec, 0, ck, NAS_OK, &resumed, &n5);
    assert_int_equal(resumed, 2);
    static const int ops[6] = {C3, C1, POOL, SKIP, NONE, C3};
    nas_net_desc d = tiny_net_desc(ops, 1);
    nas_net *net = NULL;
    assert_int_equal(nas_net_create(be, &d, rec.batch_size, 5, &net, &err), NAS_OK);
    assert_int_equal(nas_train(net, data, &rec, NULL, NULL, NULL, &err), NAS_OK);
    float *w6 = all_weights(net, &n6);
    nas_net_destroy(net);
    assert_memory_equal(w5, w6, n5 * sizeof *w5);
    /* the checkpoint now holds epoch 4: asking for 2 is refused */
    free(run(be, data, &rec, 2, ck, NAS_EEXIST, &resumed, &n1));
    free(w1), free(w2), free(w3), free(w4), free(w5), free(w6);
    nas_dataset_destroy(data);
    nas_backend_destroy(be);
}

/* Trained to `until` of `max` images (issue 17, resource "images"), from/to
 * checkpoint `ck`. */
static float *run_images(nas_backend *be, const nas_dataset *data, const nas_recipe *rec,
                         int64_t until, int64_t max, const char *ck, int want_rc,
                         nas_train_stats *st, size_t *n)
{
    nas_full_train_opts o = {.recipe = rec, .checkpoint = ck, .until_images = until,
                             .max_images = max};
    char what[64];
    snprintf(what, sizeof what, "until %lld of %lld images", (long long)until, (long long)max);
    return train_net(be, data, &o, want_rc, what, st, NULL, n);
}

/* Budgets in images: 72 images, batch 16 (5 steps per epoch, the last of
 * 8 images), R = 200 images = 2 epochs + 56 images (4 more steps). Rungs
 * 40 -> 100 -> 200 stop inside epochs 1, 2 and 3; each continuation from the
 * checkpoint equals one uninterrupted run to the same budget bit for bit,
 * and its loss is the same partial-epoch mean. */
static void check_images(const char *name)
{
    nas_backend *be = open_or_skip(name);
    nas_dataset *data = synth(72, 3);
    nas_recipe rec = {.epochs = 99, /* ignored with a budget of images */
                      .batch_size = 16, .lr = 0.05, .momentum = 0.9, .nesterov = 1,
                      .weight_decay = 5e-4, .schedule = NAS_SCHEDULE_COSINE, .seed = 11};
    char ck[300];
    snprintf(ck, sizeof ck, "%s/%s.images.npz", g_dir, name);
    unlink(ck);
    nas_train_stats s1, s2, s3, u2, u3;
    size_t n1, n2, n3, m2, m3, m4;
    float *w1 = run_images(be, data, &rec, 40, 200, ck, NAS_OK, &s1, &n1);
    assert_int_equal(s1.steps, 3); /* ceil(40 / 16) */
    assert_int_equal(s1.epochs, 0);
    float *w2 = run_images(be, data, &rec, 100, 200, ck, NAS_OK, &s2, &n2);
    assert_int_equal(s2.steps, 5 + 2); /* 72 + ceil(28 / 16) batches */
    assert_int_equal(s2.epochs, 1);
    float *v2 = run_images(be, data, &rec, 100, 200, NULL, NAS_OK, &u2, &m2);
    assert_int_equal(n2, m2);
    assert_memory_equal(w2, v2, n2 * sizeof *w2);
    assert_true(s2.train_loss == u2.train_loss);
    assert_memory_not_equal(w1, w2, n1 * sizeof *w1);
    float *w3 = run_images(be, data, &rec, 0, 200, ck, NAS_OK, &s3, &n3); /* to R */
    assert_int_equal(s3.steps, 10 + 4);
    float *v3 = run_images(be, data, &rec, 200, 200, NULL, NAS_OK, &u3, &m3);
    assert_memory_equal(w3, v3, n3 * sizeof *w3);
    assert_true(s3.train_loss == u3.train_loss);
    /* the schedule spans R: a run with R = 100 images differs at 100 */
    nas_train_stats u4;
    float *v4 = run_images(be, data, &rec, 100, 100, NULL, NAS_OK, &u4, &m4);
    assert_memory_not_equal(v2, v4, m2 * sizeof *v2);
    /* the checkpoint holds 200 images: asking for 100 is refused, and so is
     * another maximum (another schedule: the fingerprint's budget) */
    free(run_images(be, data, &rec, 100, 200, ck, NAS_EEXIST, &u4, &m4));
    free(run_images(be, data, &rec, 100, 300, ck, NAS_EEXIST, &u4, &m4));
    free(run_images(be, data, &rec, 300, 200, NULL, NAS_EINVAL, &u4, &m4));
    free(w1), free(w2), free(w3), free(v2), free(v3), free(v4);
    nas_dataset_destroy(data);
    nas_backend_destroy(be);
}

/* state: the backend's name (cmocka_unit_test_prestate) */
static void test_images(void **state) { check_images(*state); }
static void test_promotion(void **state) { check_backend(*state); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        {"test_promotion_ref", test_promotion, NULL, NULL, "ref"},
        {"test_promotion_cpu", test_promotion, NULL, NULL, "cpu"},
        {"test_images_ref", test_images, NULL, NULL, "ref"},
        {"test_images_cpu", test_images, NULL, NULL, "cpu"},
    };
    return cmocka_run_group_tests(tests, scratch_dir_setup, scratch_dir_teardown);
}
