/*
 * tests/conformance/test_layout.c - backends that keep activations in a
 * private layout between ops (nas_tensor.layout; the cpu backend's
 * channel-blocked nChw16c / nChw8c, see trainer/backend_cpu.c) against the
 * "ref" oracle, op CHAINS rather than single ops: the output of one op is
 * fed to the next without passing through the host, so a wrong layout tag,
 * a missed conversion or a wrong blocked-index formula shows up as a
 * mismatch after download. Covered: a forward and backward pass through
 * conv -> BN -> ReLU -> avgpool -> sum -> strided conv -> GAP -> linear ->
 * softmax cross-entropy (the network's op sequence), channel counts 16, 32
 * (16-blocked), 8 and 24 (8-blocked) and 5 (plain); mixed layouts (a
 * plain upload meeting a blocked tensor in relu_bwd, axpy, BN backward);
 * copies between equal shapes and into a different shape of equal count;
 * a batch-prefix view of a blocked tensor; scale in place; SGD; and two
 * NAS-Bench-201 reduction blocks in a row (c -> 2c -> 4c for c = 4, 8, 16:
 * plain -> nChw8c -> nChw16c and nChw8c -> nChw16c on the cpu backend,
 * whose convolutions run such mixes in a common layout, conv_prim).
 * Tolerance: |a - ref| <= 1e-3 + 1e-3*|ref| (float chains vs the
 * double-accumulating oracle).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "nas/backend.h"
#include "nas/rng.h"

#define NB 2 /* [0] ref, [1] backend under test */

typedef struct env {
    nas_backend *be[NB];
    nas_rng rng;
    nas_tensor *t[128][NB]; /* t[i][b]: tensor i on backend b */
    int n;
    const char *name;
    double atol, rtol; /* |a - ref| <= atol + rtol*|ref| */
    double bad_frac;   /* fraction of elements allowed outside it (default 0) */
} env;

/* A tensor on both backends (random in [-1,1) when rnd, else NaN). */
static nas_tensor **mk(env *e, int n, int c, int h, int w, int rnd)
{
    assert_true(e->n < 128);
    size_t count = (size_t)n * c * h * w;
    float *host = malloc(count * sizeof *host);
    assert_non_null(host);
    for (size_t i = 0; i < count; i++)
        host[i] = rnd ? 2.0f * nas_rng_uniform(&e->rng) - 1.0f : NAN;
    for (int b = 0; b < NB; b++) {
        assert_int_equal(nas_tensor_create(e->be[b], n, c, h, w, &e->t[e->n][b]), NAS_OK);
        assert_int_equal(nas_tensor_upload(e->t[e->n][b], host, count), NAS_OK);
    }
    free(host);
    return e->t[e->n++];
}

static void fill_const(nas_tensor **t, float v)
{
    float *h = malloc(t[0]->count * sizeof *h);
    assert_non_null(h);
    for (size_t i = 0; i < t[0]->count; i++)
        h[i] = v;
    for (int b = 0; b < NB; b++)
        assert_int_equal(nas_tensor_upload(t[b], h, t[b]->count), NAS_OK);
    free(h);
}

static void check(env *e, const char *what, nas_tensor *r, nas_tensor *a)
{
    assert_int_equal(r->count, a->count);
    float *hr = malloc(r->count * sizeof *hr), *ha = malloc(a->count * sizeof *ha);
    assert_non_null(hr);
    assert_non_null(ha);
    assert_int_equal(nas_tensor_download(r, hr, r->count), NAS_OK);
    assert_int_equal(nas_tensor_download(a, ha, a->count), NAS_OK);
    size_t bad = 0;
    for (size_t i = 0; i < r->count; i++) {
        double lim = e->atol + e->rtol * fabs(hr[i]);
        if (isnan(ha[i]) || isnan(hr[i]) || fabs((double)ha[i] - hr[i]) > lim) {
            if (getenv("NAS_TEST_VERBOSE") || !bad)
                printf("  %s %s: element %zu: %.7g ref %.7g\n", e->name, what, i, (double)ha[i],
                       (double)hr[i]);
            bad++;
        }
    }
    free(hr);
    free(ha);
    if (bad > e->bad_frac * (double)r->count)
        fail_msg("%s %s: %zu of %zu elements differ from ref", e->name, what, bad, r->count);
}
#define CHECK(e, what, t) check((e), (what), (t)[0], (t)[1])

/* Run `call` with B = the backend index; fail with the backend's detail. */
#define ON_BOTH(e, call)                                                                   \
    for (int B = 0; B < NB; B++) {                                                         \
        int rc_ = (call);                                                                  \
        if (rc_ != NAS_OK)                                                                 \
            fail_msg("%s: %s failed: %s (%s)", #call, nas_backend_name((e)->be[B]),        \
                     nas_err_name(rc_), nas_backend_last_error((e)->be[B]));               \
    }

static void open_env(void **state, env *e, uint64_t seed)
{
    memset(e, 0, sizeof *e);
    e->name = *state;
    e->atol = e->rtol = 1e-3;
    nas_rng_seed(&e->rng, seed, 11);
    nas_error err = {0};
    assert_int_equal(nas_backend_create("ref", 1, 0, &e->be[0], &err), NAS_OK);
    int rc = nas_backend_create(e->name, 2, 0, &e->be[1], &err);
    if (rc == NAS_ENODEV) {
        printf("SKIPPED: %s: no CUDA device\n", e->name);
        nas_backend_destroy(e->be[0]);
        skip();
    }
    assert_int_equal(rc, NAS_OK);
}

static void close_env(env *e)
{
    for (int b = 0; b < NB; b++) {
        for (int i = 0; i < e->n; i++)
            nas_tensor_destroy(e->t[i][b]);
        nas_backend_destroy(e->be[b]);
    }
}

#define T(p) ((p)[B])
#define T1(p) ((p)[1])

/*
 * One training step's op sequence of a small cell network with c channels
 * at h x h, batch n: forward, loss, backward, every intermediate compared.
 */
static void chain(env *e, int n, int c, int h)
{
    int h2 = (h + 2 - 3) / 2 + 1;
    nas_tensor **x = mk(e, n, c, h, h, 1), **w1 = mk(e, c, c, 3, 3, 1);
    nas_tensor **w2 = mk(e, 2 * c, c, 3, 3, 1), **g = mk(e, 1, c, 1, 1, 1);
    nas_tensor **bt = mk(e, 1, c, 1, 1, 1), **sm = mk(e, 1, c, 1, 1, 0);
    nas_tensor **si = mk(e, 1, c, 1, 1, 0), **rm = mk(e, 1, c, 1, 1, 0);
    nas_tensor **rv = mk(e, 1, c, 1, 1, 0);
    nas_tensor **lw = mk(e, 10, 2 * c, 1, 1, 1), **lb = mk(e, 10, 1, 1, 1, 1);
    fill_const(rm, 0.0f);
    fill_const(rv, 1.0f);
    nas_tensor **y1 = mk(e, n, c, h, h, 0), **y2 = mk(e, n, c, h, h, 0);
    nas_tensor **y3 = mk(e, n, c, h, h, 0), **y4 = mk(e, n, c, h, h, 0);
    nas_tensor **y5 = mk(e, n, 2 * c, h2, h2, 0), **gp = mk(e, n, 2 * c, 1, 1, 0);
    nas_tensor **lg = mk(e, n, 10, 1, 1, 0), **lab = mk(e, n, 1, 1, 1, 0);
    float *labels = malloc((size_t)n * sizeof *labels);
    assert_non_null(labels);
    for (int i = 0; i < n; i++)
        labels[i] = (float)(i % 10);
    for (int b = 0; b < NB; b++)
        assert_int_equal(nas_tensor_upload(lab[b], labels, (size_t)n), NAS_OK);
    free(labels);

    /* forward: conv -> BN -> ReLU -> pool, + BN output (a node sum),
     * strided conv, GAP, linear */
    ON_BOTH(e, nas_conv2d_fwd(e->be[B], T(x), T(w1), T(y1), 1, 1));
    CHECK(e, "conv fwd", y1);
    ON_BOTH(e, nas_batchnorm_fwd_train(e->be[B], T(y1), T(g), T(bt), T(y2), T(sm), T(si), T(rm),
                                       T(rv), 0.1f, 1e-5f));
    CHECK(e, "bn fwd", y2);
    CHECK(e, "bn running var", rv);
    ON_BOTH(e, nas_relu_fwd(e->be[B], T(y2), T(y3)));
    CHECK(e, "relu fwd", y3);
    ON_BOTH(e, nas_avgpool_fwd(e->be[B], T(y3), T(y4), 3, 1, 1));
    ON_BOTH(e, nas_axpy(e->be[B], 1.0f, T(y2), T(y4)));
    CHECK(e, "pool + sum", y4);
    ON_BOTH(e, nas_conv2d_fwd(e->be[B], T(y4), T(w2), T(y5), 2, 1));
    CHECK(e, "strided conv fwd", y5);
    ON_BOTH(e, nas_gap_fwd(e->be[B], T(y5), T(gp)));
    CHECK(e, "gap fwd", gp);
    ON_BOTH(e, nas_linear_fwd(e->be[B], T(gp), T(lw), T(lb), T(lg)));
    CHECK(e, "linear fwd", lg);

    /* backward */
    nas_tensor **dlg = mk(e, n, 10, 1, 1, 0), **dgp = mk(e, n, 2 * c, 1, 1, 0);
    nas_tensor **dlw = mk(e, 10, 2 * c, 1, 1, 0), **dlb = mk(e, 10, 1, 1, 1, 0);
    nas_tensor **dy5 = mk(e, n, 2 * c, h2, h2, 0), **dy4 = mk(e, n, c, h, h, 0);
    nas_tensor **dw2 = mk(e, 2 * c, c, 3, 3, 0), **dy3 = mk(e, n, c, h, h, 0);
    nas_tensor **dy2 = mk(e, n, c, h, h, 0), **dy1 = mk(e, n, c, h, h, 0);
    nas_tensor **dg = mk(e, 1, c, 1, 1, 0), **dbt = mk(e, 1, c, 1, 1, 0);
    nas_tensor **dw1 = mk(e, c, c, 3, 3, 0), **dx = mk(e, n, c, h, h, 0);
    float loss[NB];
    int correct[NB];
    ON_BOTH(e, nas_softmax_xent(e->be[B], T(lg), T(lab), T(dlg), &loss[B], &correct[B]));
    if (!(fabs(loss[0] - loss[1]) <= e->atol + e->rtol * fabs(loss[0])))
        fail_msg("%s loss %g ref %g", e->name, (double)loss[1], (double)loss[0]);
    ON_BOTH(e, nas_linear_bwd(e->be[B], T(gp), T(lw), T(dlg), T(dgp), T(dlw), T(dlb)));
    ON_BOTH(e, nas_gap_bwd(e->be[B], T(dgp), T(dy5)));
    CHECK(e, "gap bwd", dy5);
    ON_BOTH(e, nas_conv2d_bwd_filter(e->be[B], T(y4), T(dy5), T(dw2), 2, 1));
    CHECK(e, "strided conv bwd filter", dw2);
    ON_BOTH(e, nas_conv2d_bwd_data(e->be[B], T(dy5), T(w2), T(dy4), 2, 1));
    CHECK(e, "strided conv bwd data", dy4);
    ON_BOTH(e, nas_avgpool_bwd(e->be[B], T(dy4), T(dy3), 3, 1, 1));
    CHECK(e, "pool bwd", dy3);
    ON_BOTH(e, nas_relu_bwd(e->be[B], T(y2), T(dy3), T(dy2)));
    ON_BOTH(e, nas_tensor_copy(T(dy1), T(dy4))); /* the sum's second branch */
    ON_BOTH(e, nas_axpy(e->be[B], 1.0f, T(dy2), T(dy1)));
    CHECK(e, "relu bwd + branch", dy1);
    ON_BOTH(e, nas_batchnorm_bwd(e->be[B], T(y1), T(dy1), T(g), T(sm), T(si), T(dy2), T(dg),
                                 T(dbt)));
    CHECK(e, "bn bwd dx", dy2);
    CHECK(e, "bn bwd dgamma", dg);
    ON_BOTH(e, nas_conv2d_bwd_filter(e->be[B], T(x), T(dy2), T(dw1), 1, 1));
    CHECK(e, "conv bwd filter", dw1);
    ON_BOTH(e, nas_conv2d_bwd_data(e->be[B], T(dy2), T(w1), T(dx), 1, 1));
    CHECK(e, "conv bwd data", dx);

    /* SGD on a weight with its gradient and a zeroed momentum */
    nas_tensor **mom = mk(e, c, c, 3, 3, 0);
    fill_const(mom, 0.0f);
    ON_BOTH(e, nas_sgd_step(e->be[B], T(w1), T(dw1), T(mom), 0.05f, 0.9f, 5e-4f, 1));
    CHECK(e, "sgd weight", w1);
    CHECK(e, "sgd momentum", mom);

    /* eval-mode forward on the same blocked input */
    ON_BOTH(e, nas_batchnorm_fwd_infer(e->be[B], T(y1), T(g), T(bt), T(rm), T(rv), T(y3), 1e-5f));
    CHECK(e, "bn infer", y3);
}

static void test_chain(void **state)
{
    /* {8,32,12}: 36864 elements, above the cpu backend's small-problem
     * threshold (threaded primitives, oneDNN sum for axpy) */
    static const int shapes[][3] = {{3, 16, 9}, {2, 32, 7}, {3, 8, 6},
                                    {2, 24, 5}, {3, 5, 7},  {8, 32, 12}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        env e;
        open_env(state, &e, 100 + i);
        chain(&e, shapes[i][0], shapes[i][1], shapes[i][2]);
        close_env(&e);
    }
}

/* The same chains with the backend in bf16 (activations and gradients in
 * bfloat16, 8-bit mantissa: relative error ~0.4% per rounding, a few
 * roundings per op), relative tolerance 5e-2. Skipped visibly where the backend or
 * the CPU has no bf16. Absolute tolerance 0.1: a 3x3 convolution over
 * bf16-rounded inputs of magnitude ~2 sums 9*C products, each off by
 * ~0.4%, so ~0.05 absolute error is expected where the terms cancel; a
 * layout error is O(1) nearly everywhere. */
static void test_chain_bf16(void **state)
{
    static const int shapes[][3] = {{3, 16, 9}, {8, 32, 12}, {3, 8, 6}, {2, 24, 5}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        env e;
        open_env(state, &e, 200 + i);
        int rc = nas_backend_set_precision(e.be[1], "bf16");
        if (rc == NAS_EUNSUPPORTED) {
            printf("SKIPPED: %s: no bf16 (%s)\n", e.name, nas_backend_last_error(e.be[1]));
            close_env(&e);
            skip();
        }
        assert_int_equal(rc, NAS_OK);
        e.atol = 0.1;
        e.rtol = 5e-2;
        chain(&e, shapes[i][0], shapes[i][1], shapes[i][2]);
        close_env(&e);
    }
}

/* Depthwise convolutions of chain networks in bf16 (issue 34): forward,
 * data and weight gradients, and the fused batch norm + activation after
 * them, with R 3 and 5, stride 1 and 2, on channel
 * counts 16, 24 (an 8-channel tail) and 48, the inputs produced by a
 * bf16 convolution so that they arrive in the backend's bf16 layout (the
 * weight gradient's own kernel, trainer/cpu_depthwise.c, reads it).
 * Tolerances as test_chain_bf16's (the weight gradient's: below). */
static void test_depthwise_bf16(void **state)
{
    static const int chans[] = {16, 24, 48};
    for (size_t i = 0; i < sizeof chans / sizeof chans[0]; i++)
        for (int r = 3; r <= 5; r += 2)
            for (int st = 1; st <= 2; st++) {
                env e;
                open_env(state, &e, 300 + 4 * i + (size_t)r + (size_t)st);
                int rc = nas_backend_set_precision(e.be[1], "bf16");
                if (rc == NAS_EUNSUPPORTED) {
                    printf("SKIPPED: %s: no bf16 (%s)\n", e.name,
                           nas_backend_last_error(e.be[1]));
                    close_env(&e);
                    skip();
                }
                assert_int_equal(rc, NAS_OK);
                e.atol = 0.1;
                e.rtol = 5e-2;
                const int n = 2, c = chans[i], h = 8, p = r / 2;
                const int ho = (h + 2 * p - r) / st + 1;
                nas_tensor **x0 = mk(&e, n, c, h, h, 1), **w0 = mk(&e, c, 1, 3, 3, 1);
                nas_tensor **x = mk(&e, n, c, h, h, 0), **w = mk(&e, c, 1, r, r, 1);
                nas_tensor **y = mk(&e, n, c, ho, ho, 0), **dy0 = mk(&e, n, c, ho, ho, 1);
                nas_tensor **dy = mk(&e, n, c, ho, ho, 0), **dx = mk(&e, n, c, h, h, 0);
                nas_tensor **dw = mk(&e, c, 1, r, r, 0);
                ON_BOTH(&e, nas_gconv2d_fwd(e.be[B], T(x0), T(w0), T(x), 1, 1, c));
                ON_BOTH(&e, nas_gconv2d_fwd(e.be[B], T(dy0), T(w0), T(dy), 1, 1, c));
                assert_int_not_equal(T1(x)->layout, 0); /* not plain: the bf16 layout */
                ON_BOTH(&e, nas_gconv2d_fwd(e.be[B], T(x), T(w), T(y), st, p, c));
                CHECK(&e, "depthwise fwd", y);
                ON_BOTH(&e, nas_gconv2d_bwd_data(e.be[B], T(dy), T(w), T(dx), st, p, c));
                CHECK(&e, "depthwise bwd data", dx);
                /* the fused batch norm + h-swish (ReLU6 for stride 2) on the
                 * depthwise output, bf16 by trainer/cpu_bn_act_bf16.c */
                const int fn = st == 1 ? NAS_FN_HSWISH : NAS_FN_RELU6;
                nas_tensor **g = mk(&e, 1, c, 1, 1, 1), **bt = mk(&e, 1, c, 1, 1, 1);
                nas_tensor **ws = mk(&e, n, c, ho, ho, 0), **sm = mk(&e, 1, c, 1, 1, 0);
                nas_tensor **si = mk(&e, 1, c, 1, 1, 0), **rm = mk(&e, 1, c, 1, 1, 0);
                nas_tensor **rv = mk(&e, 1, c, 1, 1, 0), **z = mk(&e, n, c, ho, ho, 0);
                nas_tensor **dz = mk(&e, n, c, ho, ho, 0), **dg = mk(&e, 1, c, 1, 1, 0);
                nas_tensor **db = mk(&e, 1, c, 1, 1, 0);
                fill_const(rm, 0.0f);
                fill_const(rv, 1.0f);
                ON_BOTH(&e, nas_batchnorm_act_fwd_train(e.be[B], fn, T(y), T(g), T(bt), T(z),
                                                        T(ws), T(sm), T(si), T(rm), T(rv), 0.1f,
                                                        1e-5f));
                CHECK(&e, "bn + act fwd", z);
                CHECK(&e, "bn + act running var", rv);
                ON_BOTH(&e, nas_batchnorm_act_bwd(e.be[B], fn, T(y), T(ws), T(dy), T(g), T(sm),
                                                  T(si), T(dz), T(dg), T(db)));
                /* h-swish' jumps by 1/2 at z = -3 and 3, ReLU6' by 1 at 0 and
                 * 6: where bf16 rounding moves z across one, that element's
                 * dx differs by O(1); allow 1% of them */
                e.bad_frac = 0.01;
                CHECK(&e, "bn + act bwd dx", dz);
                /* dgamma sums n*ho*ho <= 128 terms g * xhat, |xhat| up to ~3:
                 * one such jump moves its channel's by up to ~1.5; allow 1 of
                 * 16 channels (a wrong kernel is off nearly everywhere) */
                e.bad_frac = 1.0 / 16;
                CHECK(&e, "bn + act bwd dgamma", dg);
                e.bad_frac = 0.0;
                ON_BOTH(&e, nas_gconv2d_bwd_filter(e.be[B], T(x), T(dy), T(dw), st, p, c));
                /* each weight sums up to n*h*h = 128 products of values of
                 * magnitude ~1, each off by ~2^-8 relative: ~0.05 absolute
                 * where they cancel; a wrong index is off by O(10) */
                e.atol = 0.25;
                CHECK(&e, "depthwise bwd filter", dw);
                close_env(&e);
            }
}

/* Batch norm in training mode with fresh parameters (gamma, beta random,
 * running stats 0 and 1); *g, *sm, *si receive gamma and the saved
 * statistics for the backward pass. */
static void bn_train(env *e, nas_tensor **x, nas_tensor **y, nas_tensor ***g, nas_tensor ***sm,
                     nas_tensor ***si)
{
    const int c = x[0]->c;
    *g = mk(e, 1, c, 1, 1, 1);
    nas_tensor **bt = mk(e, 1, c, 1, 1, 1), **rm = mk(e, 1, c, 1, 1, 0);
    nas_tensor **rv = mk(e, 1, c, 1, 1, 0);
    *sm = mk(e, 1, c, 1, 1, 0);
    *si = mk(e, 1, c, 1, 1, 0);
    fill_const(rm, 0.0f);
    fill_const(rv, 1.0f);
    ON_BOTH(e, nas_batchnorm_fwd_train(e->be[B], T(x), T(*g), T(bt), T(y), T(*sm), T(*si),
                                       T(rm), T(rv), 0.1f, 1e-5f));
}

/*
 * NAS-Bench-201's reduction block (a ResNet basic block with stride 2)
 * from c to 2c channels on x[n,c,h,h], h even:
 *   y = BN(conv3x3(ReLU(BN(conv3x3 s2(ReLU(x)))))) + conv1x1(avgpool2x2 s2(x))
 * forward, then backward from a random dy (uploaded: plain, meeting the
 * backend's own layouts), every output and gradient compared; also the
 * fused inference conv + bias accumulating into a random tensor. Returns
 * y (in the backend's own layout) for the next block.
 */
static nas_tensor **reduce_block(env *e, nas_tensor **x)
{
    const int n = x[0]->n, c = x[0]->c, h = x[0]->h, c2 = 2 * c, h2 = h / 2;
    nas_tensor **wa = mk(e, c2, c, 3, 3, 1), **wb = mk(e, c2, c2, 3, 3, 1);
    nas_tensor **ws = mk(e, c2, c, 1, 1, 1), **bias = mk(e, 1, c2, 1, 1, 1);
    nas_tensor **r0 = mk(e, n, c, h, h, 0), **a = mk(e, n, c2, h2, h2, 0);
    nas_tensor **an = mk(e, n, c2, h2, h2, 0), **r1 = mk(e, n, c2, h2, h2, 0);
    nas_tensor **b = mk(e, n, c2, h2, h2, 0), **y = mk(e, n, c2, h2, h2, 0);
    nas_tensor **p = mk(e, n, c, h2, h2, 0), **s = mk(e, n, c2, h2, h2, 0);
    nas_tensor **ga, **sma, **sia, **gb, **smb, **sib;
    ON_BOTH(e, nas_relu_fwd(e->be[B], T(x), T(r0)));
    ON_BOTH(e, nas_conv2d_fwd(e->be[B], T(r0), T(wa), T(a), 2, 1));
    CHECK(e, "reduce conv a (3x3 s2, c -> 2c)", a);
    bn_train(e, a, an, &ga, &sma, &sia);
    ON_BOTH(e, nas_relu_fwd(e->be[B], T(an), T(r1)));
    ON_BOTH(e, nas_conv2d_fwd(e->be[B], T(r1), T(wb), T(b), 1, 1));
    CHECK(e, "reduce conv b (3x3, 2c -> 2c)", b);
    bn_train(e, b, y, &gb, &smb, &sib);
    ON_BOTH(e, nas_avgpool_fwd(e->be[B], T(x), T(p), 2, 2, 0));
    CHECK(e, "reduce shortcut pool", p);
    ON_BOTH(e, nas_conv2d_fwd(e->be[B], T(p), T(ws), T(s), 1, 0));
    CHECK(e, "reduce shortcut conv (1x1, c -> 2c)", s);
    ON_BOTH(e, nas_axpy(e->be[B], 1.0f, T(s), T(y)));
    CHECK(e, "reduce block y", y);

    /* inference: y2 = random + conv3x3 s2(x) + bias, where supported */
    nas_tensor **yi = mk(e, n, c2, h2, h2, 1);
    int rc = nas_conv2d_fwd_bias(e->be[1], T1(x), T1(wa), T1(bias), T1(yi), 2, 1, 1);
    if (rc != NAS_EUNSUPPORTED) {
        assert_int_equal(rc, NAS_OK);
        assert_int_equal(nas_conv2d_fwd_bias(e->be[0], x[0], wa[0], bias[0], yi[0], 2, 1, 1),
                         NAS_OK);
        CHECK(e, "reduce conv a + bias, accumulated", yi);
    }

    nas_tensor **dy = mk(e, n, c2, h2, h2, 1), **dws = mk(e, c2, c, 1, 1, 0);
    nas_tensor **dp = mk(e, n, c, h2, h2, 0), **dx = mk(e, n, c, h, h, 0);
    nas_tensor **db = mk(e, n, c2, h2, h2, 0), **dwb = mk(e, c2, c2, 3, 3, 0);
    nas_tensor **dr1 = mk(e, n, c2, h2, h2, 0), **dan = mk(e, n, c2, h2, h2, 0);
    nas_tensor **da = mk(e, n, c2, h2, h2, 0), **dwa = mk(e, c2, c, 3, 3, 0);
    nas_tensor **dr0 = mk(e, n, c, h, h, 0), **dx2 = mk(e, n, c, h, h, 0);
    nas_tensor **dg = mk(e, 1, c2, 1, 1, 0), **dbt = mk(e, 1, c2, 1, 1, 0);
    ON_BOTH(e, nas_conv2d_bwd_filter(e->be[B], T(p), T(dy), T(dws), 1, 0));
    CHECK(e, "reduce shortcut conv bwd filter", dws);
    ON_BOTH(e, nas_conv2d_bwd_data(e->be[B], T(dy), T(ws), T(dp), 1, 0));
    CHECK(e, "reduce shortcut conv bwd data", dp);
    ON_BOTH(e, nas_avgpool_bwd(e->be[B], T(dp), T(dx), 2, 2, 0));
    ON_BOTH(e, nas_batchnorm_bwd(e->be[B], T(b), T(dy), T(gb), T(smb), T(sib), T(db), T(dg),
                                 T(dbt)));
    CHECK(e, "reduce bn b bwd", db);
    ON_BOTH(e, nas_conv2d_bwd_filter(e->be[B], T(r1), T(db), T(dwb), 1, 1));
    CHECK(e, "reduce conv b bwd filter", dwb);
    ON_BOTH(e, nas_conv2d_bwd_data(e->be[B], T(db), T(wb), T(dr1), 1, 1));
    CHECK(e, "reduce conv b bwd data", dr1);
    ON_BOTH(e, nas_relu_bwd(e->be[B], T(an), T(dr1), T(dan)));
    ON_BOTH(e, nas_batchnorm_bwd(e->be[B], T(a), T(dan), T(ga), T(sma), T(sia), T(da), T(dg),
                                 T(dbt)));
    CHECK(e, "reduce bn a bwd", da);
    ON_BOTH(e, nas_conv2d_bwd_filter(e->be[B], T(r0), T(da), T(dwa), 2, 1));
    CHECK(e, "reduce conv a bwd filter (2c -> c)", dwa);
    ON_BOTH(e, nas_conv2d_bwd_data(e->be[B], T(da), T(wa), T(dr0), 2, 1));
    CHECK(e, "reduce conv a bwd data (2c -> c)", dr0);
    ON_BOTH(e, nas_relu_bwd(e->be[B], T(x), T(dr0), T(dx2)));
    ON_BOTH(e, nas_axpy(e->be[B], 1.0f, T(dx2), T(dx)));
    CHECK(e, "reduce block dx", dx);
    return y;
}

/* Two reduction blocks in a row, c -> 2c -> 4c, the second one fed the
 * first one's output without passing through the host. */
static void test_reduce(void **state)
{
    static const int shapes[][3] = {{3, 4, 12}, {3, 8, 12}, {2, 16, 8}, {2, 1, 8}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        env e;
        open_env(state, &e, 300 + i);
        nas_tensor **x = mk(&e, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][2], 1);
        nas_tensor **y = reduce_block(&e, x);
        reduce_block(&e, y);
        close_env(&e);
    }
}

/* A blocked output meeting plain uploads, copies across shapes, views. */
static void test_mixed(void **state)
{
    env e;
    open_env(state, &e, 7);
    const int n = 3, c = 16, h = 6;
    nas_tensor **x = mk(&e, n, c, h, h, 1), **w = mk(&e, c, c, 1, 1, 1);
    nas_tensor **y = mk(&e, n, c, h, h, 0), **d = mk(&e, n, c, h, h, 1);
    nas_tensor **z = mk(&e, n, c, h, h, 0), **flat = mk(&e, n, c * h * h, 1, 1, 0);
    ON_BOTH(&e, nas_conv2d_fwd(e.be[B], T(x), T(w), T(y), 1, 0));
    /* relu_bwd: blocked x, plain (uploaded) dy */
    ON_BOTH(&e, nas_relu_bwd(e.be[B], T(y), T(d), T(z)));
    CHECK(&e, "relu bwd mixed", z);
    /* axpy: plain y += blocked x, then blocked y += plain x */
    ON_BOTH(&e, nas_axpy(e.be[B], 0.5f, T(y), T(d)));
    CHECK(&e, "axpy plain += blocked", d);
    ON_BOTH(&e, nas_axpy(e.be[B], -2.0f, T(d), T(y)));
    CHECK(&e, "axpy blocked += plain", y);
    /* copy into another shape with the same count, then scale in place */
    ON_BOTH(&e, nas_tensor_copy(T(flat), T(y)));
    CHECK(&e, "copy across shapes", flat);
    ON_BOTH(&e, nas_scale(e.be[B], 3.0f, T(y), T(y)));
    CHECK(&e, "scale in place", y);
    /* a batch-prefix view of a blocked tensor */
    for (int b = 0; b < NB; b++) {
        nas_tensor v = *y[b];
        v.n = 2;
        v.count = (size_t)2 * c * h * h;
        float *hv = malloc(v.count * sizeof *hv), *hall = malloc(y[b]->count * sizeof *hall);
        assert_non_null(hv);
        assert_non_null(hall);
        assert_int_equal(nas_tensor_download(&v, hv, v.count), NAS_OK);
        assert_int_equal(nas_tensor_download(y[b], hall, y[b]->count), NAS_OK);
        assert_memory_equal(hv, hall, v.count * sizeof *hv);
        free(hv);
        free(hall);
    }
    /* BN backward with a blocked x and a plain dy */
    nas_tensor **g = mk(&e, 1, c, 1, 1, 1), **bt = mk(&e, 1, c, 1, 1, 1);
    nas_tensor **sm = mk(&e, 1, c, 1, 1, 0), **si = mk(&e, 1, c, 1, 1, 0);
    nas_tensor **rm = mk(&e, 1, c, 1, 1, 0), **rv = mk(&e, 1, c, 1, 1, 0);
    nas_tensor **dg = mk(&e, 1, c, 1, 1, 0), **db = mk(&e, 1, c, 1, 1, 0);
    fill_const(rm, 0.0f);
    fill_const(rv, 1.0f);
    ON_BOTH(&e, nas_batchnorm_fwd_train(e.be[B], T(y), T(g), T(bt), T(z), T(sm), T(si), T(rm),
                                        T(rv), 0.1f, 1e-5f));
    nas_tensor **dd = mk(&e, n, c, h, h, 1);
    ON_BOTH(&e, nas_batchnorm_bwd(e.be[B], T(y), T(dd), T(g), T(sm), T(si), T(z), T(dg), T(db)));
    CHECK(&e, "bn bwd mixed dx", z);
    CHECK(&e, "bn bwd mixed dbeta", db);
    close_env(&e);
}

int main(void)
{
    const char *const *names = nas_backend_compiled();
    size_t nb = 0;
    while (names[nb])
        nb++;
    static const struct {
        const char *what;
        CMUnitTestFunction fn;
    } per[] = {{"chain", test_chain},
               {"mixed_layouts", test_mixed},
               {"chain_bf16", test_chain_bf16},
               {"depthwise_bf16", test_depthwise_bf16},
               {"reduce", test_reduce}};
    const size_t np = sizeof per / sizeof per[0];
    struct CMUnitTest *tests = calloc(np * nb, sizeof *tests);
    char(*labels)[64] = calloc(np * nb, sizeof *labels);
    if (!tests || !labels)
        return 1;
    for (size_t b = 0; b < nb; b++)
        for (size_t i = 0; i < np; i++) {
            size_t t = b * np + i;
            snprintf(labels[t], sizeof labels[0], "%s/%s", names[b], per[i].what);
            tests[t] = (struct CMUnitTest){labels[t], per[i].fn, NULL, NULL, (void *)names[b]};
        }
    int failed = _cmocka_run_group_tests("layout", tests, np * nb, NULL, NULL);
    free(tests);
    free(labels);
    return failed ? 1 : 0;
}
