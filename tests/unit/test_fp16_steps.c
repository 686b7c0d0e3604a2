/*
 * tests/unit/test_fp16_steps.c - the host side of fp16 loss scaling in the
 * training loops (issue 19), without a GPU: a ref backend dressed as the
 * cuda backend in fp16 (its ext slots step_begin / step_end /
 * loss_scale_get / loss_scale_set drive a host nas__loss_scaler, and its
 * softmax_xent / sgd_step simulate a step whose forward overflowed fp16: an
 * infinite loss, the overflow flag set, every SGD update skipped).
 *  - nas_train skips such a step (weights untouched, S halved) and goes
 *    on, instead of ending with NAS_ENAN; without loss scaling an
 *    infinite loss still ends training with NAS_ENAN;
 *  - nas_train_resumable checkpoints the scaler's state: stopped after
 *    epoch 1 and resumed, it ends with the S and good-step count of an
 *    uninterrupted run (a fresh scaler would restart at S = 65536).
 * The device side (flags set by the fp16 casts, the skipping SGD kernel)
 * runs only with a GPU (tests/gpu).
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
#include "nas/trainer.h"
#include "tests/unit/tiny_data.h"
#include "tests/unit/tiny_net.h"
#include "trainer/backend_impl.h"
#include "trainer/cuda/loss_scale.h"

/* The simulated device state (the test's backend keeps it in be->context,
 * which the ref backend does not use). */
typedef struct mock {
    const nas__backend_ops *ref_ops;
    const nas__backend_ext *ref_ext;
    nas__backend_ops ops;
    nas__backend_ext ext;
    nas__loss_scaler ls;
    int overflow;          /* the device's fp16 overflow flag */
    int step;              /* training steps begun (step_begin calls) */
    const int *bad_steps;  /* steps (1-based) whose forward overflows fp16 */
    int n_bad;
    int in_step;
} mock;

static mock *M(nas_backend *be) { return be->context; }

static int mock_softmax_xent(nas_backend *be, const nas_tensor *logits, const nas_tensor *labels,
                             nas_tensor *dlogits, float *loss, int *correct)
{
    mock *m = M(be);
    int rc = m->ref_ops->softmax_xent(be, logits, labels, dlogits, loss, correct);
    for (int i = 0; !rc && dlogits && m->in_step && i < m->n_bad; i++)
        if (m->bad_steps[i] == m->step) {
            *loss = INFINITY; /* an activation beyond 65504 became inf in fp16 */
            m->overflow = 1;  /* what the forward's casts now flag */
        }
    return rc;
}

static int mock_sgd_step(nas_backend *be, nas_tensor *w, const nas_tensor *dw, nas_tensor *v,
                         float lr, float momentum, float wd, int nesterov)
{
    if (M(be)->overflow)
        return NAS_OK; /* k_sgd_scaled skips itself */
    return M(be)->ref_ops->sgd_step(be, w, dw, v, lr, momentum, wd, nesterov);
}

static int mock_step_begin(nas_backend *be)
{
    mock *m = M(be);
    m->overflow = 0;
    m->step++;
    m->in_step = 1;
    return NAS_OK;
}

static int mock_step_end(nas_backend *be, int *skipped)
{
    mock *m = M(be);
    *skipped = m->overflow;
    nas__loss_scaler_update(&m->ls, m->overflow);
    m->in_step = 0;
    return NAS_OK;
}

static int mock_ls_get(nas_backend *be, double st[2])
{
    nas__loss_scaler_save(&M(be)->ls, st);
    return NAS_OK;
}

static int mock_ls_set(nas_backend *be, const double st[2])
{
    return nas__loss_scaler_restore(&M(be)->ls, st) ? NAS_EINVAL : NAS_OK;
}

/* A ref backend with the fp16 loss-scaling slots (scaling = 0: the
 * overflowing softmax only, no slots, as an fp32 backend). */
static nas_backend *mock_backend(mock *m, int scaling, const int *bad, int n_bad, int interval)
{
    nas_backend *be = NULL;
    nas_error err = {0};
    assert_int_equal(nas_backend_create("ref", 1, 0, &be, &err), NAS_OK);
    memset(m, 0, sizeof *m);
    m->ref_ops = be->ops;
    m->ref_ext = be->ext;
    m->ops = *be->ops;
    m->ops.softmax_xent = mock_softmax_xent;
    m->ops.sgd_step = mock_sgd_step;
    if (be->ext)
        m->ext = *be->ext;
    if (scaling) {
        m->ext.step_begin = mock_step_begin;
        m->ext.step_end = mock_step_end;
        m->ext.loss_scale_get = mock_ls_get;
        m->ext.loss_scale_set = mock_ls_set;
    } else {
        m->in_step = 1; /* no bracket: every softmax with dlogits is a step */
    }
    nas__loss_scaler_init(&m->ls, NAS__LS_INIT, interval);
    m->bad_steps = bad;
    m->n_bad = n_bad;
    be->ops = &m->ops;
    be->ext = &m->ext;
    be->context = m;
    return be;
}

static void mock_destroy(nas_backend *be)
{
    mock *m = M(be);
    be->ops = m->ref_ops;
    be->ext = m->ref_ext;
    be->context = NULL;
    nas_backend_destroy(be);
}

static nas_dataset *synth(int n)
{
    nas_dataset *d = tiny_data_alloc(n);
    nas_rng r;
    nas_rng_seed(&r, 3, 7);
    for (int i = 0; i < n; i++) {
        d->labels[i] = (uint8_t)nas_rng_bounded(&r, 5);
        for (int p = 0; p < 64; p++)
            d->images[i * 64 + p] = nas_rng_normal(&r) + (p % 5 == d->labels[i] ? 1.0f : 0.0f);
    }
    return d;
}

static const int OPS[6] = {NAS_OP_NOR_CONV_3X3, NAS_OP_NOR_CONV_1X1, NAS_OP_AVG_POOL_3X3,
                           NAS_OP_SKIP_CONNECT, NAS_OP_NONE, NAS_OP_NOR_CONV_3X3};

static float *weights_of(nas_net *net, size_t *count)
{
    nas_net_param p[256];
    int np = nas_net_params(net, p, 256);
    size_t total = 0;
    for (int i = 0; i < np; i++)
        total += p[i].value->count;
    float *w = malloc(total * sizeof *w), *q = w;
    for (int i = 0; i < np; i++) {
        assert_int_equal(nas_tensor_download(p[i].value, q, p[i].value->count), NAS_OK);
        q += p[i].value->count;
    }
    *count = total;
    return w;
}

static int stop_at_3(void *ctx, int step, int steps, float loss)
{
    (void)ctx;
    (void)steps;
    (void)loss;
    return step == 3;
}

/* Train 1 epoch of 4 steps (32 images, batch 8) on be (only 3 with
 * `three`); weights out. */
static int train4(nas_backend *be, const nas_dataset *d, float **w, size_t *n, nas_error *err,
                  int three)
{
    nas_net_desc desc = tiny_net_desc(OPS, 1);
    nas_net *net = NULL;
    assert_int_equal(nas_net_create(be, &desc, 8, 5, &net, err), NAS_OK);
    nas_recipe rec = {1, 8, 0.05, 0.9, 1, 5e-4, NAS_SCHEDULE_CONSTANT, 9, {0, 0, 0}, 0};
    nas_train_stats st;
    int rc = nas_train(net, d, &rec, three ? stop_at_3 : NULL, NULL, &st, err);
    *w = weights_of(net, n);
    if (!rc && !three)
        assert_true(isfinite(st.train_loss));
    nas_net_destroy(net);
    return rc;
}

static void test_overflow_skips_step(void **state)
{
    (void)state;
    nas_dataset *d = synth(32);
    nas_error err = {0};
    mock m;
    float *w_all, *w_skip, *w_plain;
    size_t n;

    /* the reference: no step overflows */
    nas_backend *be = mock_backend(&m, 1, NULL, 0, 1000);
    assert_int_equal(train4(be, d, &w_all, &n, &err, 0), NAS_OK);
    assert_int_equal(m.step, 4);
    mock_destroy(be);

    /* steps 4 (the last) overflows in the forward: skipped, not NAS_ENAN */
    static const int last[] = {4};
    be = mock_backend(&m, 1, last, 1, 1000);
    int rc = train4(be, d, &w_skip, &n, &err, 0);
    if (rc != NAS_OK)
        fail_msg("a forward fp16 overflow ended training: %s", err.msg);
    assert_true(m.ls.skipped == 1);
    assert_true(m.ls.scale == NAS__LS_INIT / 2);
    mock_destroy(be);

    /* the skipped step changed nothing (weights, BN statistics): equal to
     * the first 3 steps alone */
    be = mock_backend(&m, 1, NULL, 0, 1000);
    float *w3;
    assert_int_equal(train4(be, d, &w3, &n, &err, 1), NAS_EINTR);
    mock_destroy(be);
    assert_memory_equal(w_skip, w3, n * sizeof *w3);
    assert_memory_not_equal(w_all, w3, n * sizeof *w3);

    /* without loss scaling an infinite loss still ends training */
    be = mock_backend(&m, 0, last, 1, 1000);
    m.step = 4; /* softmax calls are not bracketed: pretend we are at step 4 */
    assert_int_equal(train4(be, d, &w_plain, &n, &err, 0), NAS_ENAN);
    assert_non_null(strstr(err.msg, "inf"));
    mock_destroy(be);

    free(w_all);
    free(w_skip);
    free(w3);
    free(w_plain);
    nas_dataset_destroy(d);
}

/* S after `epochs` of 4 steps with interval 3, stopped after epoch 1 and
 * resumed in a "fresh process" (a new scaler) when resume != 0. */
static void run_resumable(const nas_dataset *d, const char *ck, int resume, double out[2],
                          float **w, size_t *n)
{
    nas_recipe rec = {2, 8, 0.05, 0.9, 1, 5e-4, NAS_SCHEDULE_COSINE, 9, {0, 0, 0}, 0};
    nas_full_train_opts o;
    memset(&o, 0, sizeof o);
    o.recipe = &rec;
    o.checkpoint = resume ? ck : NULL;
    o.stop_after = resume ? 1 : 0;
    nas_net_desc desc = tiny_net_desc(OPS, 1);
    nas_error err = {0};
    static const int bad[] = {2};
    for (int part = 0; part < (resume ? 2 : 1); part++) {
        mock m;
        /* step 2 (of the first part) overflows */
        nas_backend *be = mock_backend(&m, 1, part == 0 ? bad : NULL, part == 0 ? 1 : 0, 3);
        nas_net *net = NULL;
        assert_int_equal(nas_net_create(be, &desc, 8, 5, &net, &err), NAS_OK);
        nas_train_stats st;
        int resumed = 0;
        int rc = nas_train_resumable(net, d, &o, &st, &resumed, &err);
        if (resume && part == 0) {
            assert_int_equal(rc, NAS_EINTR);
        } else {
            if (rc != NAS_OK)
                fail_msg("%s", err.msg);
            assert_int_equal(resumed, resume ? 1 : 0);
            nas__loss_scaler_save(&m.ls, out);
            *w = weights_of(net, n);
        }
        o.stop_after = 0;
        nas_net_destroy(net);
        mock_destroy(be);
    }
}

static void test_checkpoint_keeps_scaler(void **state)
{
    (void)state;
    nas_dataset *d = synth(32);
    char dir[] = "/tmp/nas_test_fp16_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char ck[64];
    snprintf(ck, sizeof ck, "%s/run.ckpt.npz", dir);
    double straight[2], resumed[2];
    float *w0, *w1;
    size_t n0, n1;
    run_resumable(d, ck, 0, straight, &w0, &n0);
    run_resumable(d, ck, 1, resumed, &w1, &n1);
    printf("S %g good %g uninterrupted; S %g good %g resumed\n", straight[0], straight[1],
           resumed[0], resumed[1]);
    /* 8 steps, step 2 skipped (S/2), then 6 good steps with interval 3 (x4) */
    assert_true(straight[0] == NAS__LS_INIT * 2);
    if (resumed[0] != straight[0] || resumed[1] != straight[1])
        fail_msg("resumed run ends with S %g, good %g; uninterrupted: S %g, good %g", resumed[0],
                 resumed[1], straight[0], straight[1]);
    assert_int_equal(n0, n1);
    assert_memory_equal(w0, w1, n0 * sizeof *w0);
    unlink(ck);
    rmdir(dir);
    free(w0);
    free(w1);
    nas_dataset_destroy(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overflow_skips_step),
        cmocka_unit_test(test_checkpoint_keeps_scaler),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
