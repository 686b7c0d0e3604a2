/*
 * tests/conformance/test_ops.c - the kernel library's conformance suite
 * (after ggml's test-backend-ops and llm.c's per-kernel checks).
 *
 * 1. The "ref" oracle itself: known results on tiny hand-built inputs, and
 *    every backward op against central finite differences of its forward.
 * 2. Every compiled backend (nas_backend_compiled(), so a cuda backend joins
 *    automatically) against "ref" on random inputs with odd shapes: batch
 *    1 and 3, channels 1/3/4/5/8/16/32 (every mix of the cpu backend's
 *    plain, nChw8c and nChw16c layouts in convolutions), 7x7 to 28x28.
 *    Outputs are filled with NaN first, so an element the op forgets to
 *    write fails the check.
 *    An element passes when |a - ref| <= atol + rtol*|ref| (per-op values
 *    in the TOL_* table below). A backend that reports NAS_ENODEV is
 *    skipped visibly ("SKIPPED: <backend>: no CUDA device").
 * 3. SGD against the formula by hand, nas_host_sgemm against a triple loop.
 */
#include <math.h>     /* fabs, NAN, isnan, log */
#include <setjmp.h>   /* cmocka needs jmp_buf */
#include <stdarg.h>   /* cmocka needs va_list */
#include <stddef.h>   /* cmocka needs size_t */
#include <stdint.h>   /* cmocka needs uintmax_t */
#include <stdio.h>    /* printf */
#include <stdlib.h>   /* malloc, free */
#include <string.h>   /* strcmp */
#include <cmocka.h>   /* test runner and assertions */
#include "nas/backend.h"
#include "nas/rng.h"

/* ---- tolerances: |a - ref| <= atol + rtol*|ref| ------------------------------ */

typedef struct tol {
    double atol, rtol;
} tol;

/* Inputs are uniform in [-1,1]; float accumulation over up to a few
 * thousand terms against the double-accumulating oracle. */
static const tol TOL_CONV = {2e-4, 2e-4};      /* fwd, bwd data, bwd filter */
static const tol TOL_BN = {1e-4, 1e-4};        /* y, save_mean/invstd, running stats */
static const tol TOL_BN_BWD = {2e-4, 5e-4};    /* dx, dgamma, dbeta */
static const tol TOL_EXACT = {0.0, 0.0};       /* relu fwd/bwd: no arithmetic */
static const tol TOL_POOL = {1e-6, 1e-5};      /* avgpool, gap: <= 9 terms / H*W terms */
static const tol TOL_LINEAR = {1e-4, 1e-4};    /* fwd, dx, dw, db */
static const tol TOL_ELEM = {1e-6, 1e-6};      /* axpy, scale, sgd: one fma each */
static const tol TOL_XENT = {1e-6, 1e-5};      /* loss and dlogits */
static const tol TOL_SUMSQ = {1e-9, 1e-9};     /* double accumulation on both sides */
/* issue 15: activations (relu6/hsigmoid: one multiply; hswish/sigmoid: oneDNN's
 * own formula or exp approximation), channel scale (one product; its ds a
 * sum over H*W), grouped conv as TOL_CONV, dropout exact (same keep
 * decisions, one multiply). */
static const tol TOL_ACT = {1e-6, 1e-5};
static const tol TOL_CHSCALE = {1e-5, 1e-5};

/* Finite differences of the ref forward (float outputs, double sums). */
static const tol TOL_FD = {2e-3, 2e-2};

/* ---- helpers ------------------------------------------------------------------- */

static int within(double a, double ref, tol t) { return fabs(a - ref) <= t.atol + t.rtol * fabs(ref); }

static float *rand_host(nas_rng *rng, size_t n, float lo, float hi)
{
    float *p = malloc(n * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = lo + (hi - lo) * nas_rng_uniform(rng);
    return p;
}

static nas_tensor *mk(nas_backend *be, int n, int c, int h, int w, const float *host)
{
    nas_tensor *t = NULL;
    assert_int_equal(nas_tensor_create(be, n, c, h, w, &t), NAS_OK);
    if (host)
        assert_int_equal(nas_tensor_upload(t, host, t->count), NAS_OK);
    return t;
}

static float *dl(const nas_tensor *t)
{
    float *p = malloc(t->count * sizeof *p);
    assert_non_null(p);
    assert_int_equal(nas_tensor_download(t, p, t->count), NAS_OK);
    return p;
}

static void up(nas_tensor *t, const float *host)
{
    assert_int_equal(nas_tensor_upload(t, host, t->count), NAS_OK);
}

/* ---- cross-backend comparison ---------------------------------------------------- */

/* One logical tensor on both backends: [0] = ref, [1] = backend under test. */
typedef struct pair {
    nas_tensor *t[2];
    int is_out;
} pair;

typedef struct cmp {
    nas_backend *ref, *be;
    nas_rng rng;
    pair p[24];
    int np;
    char label[160];
    double worst; /* largest |a-ref| / (atol + rtol*|ref|) seen, for the log */
} cmp;

static pair *cmp_add(cmp *c, int n, int ch, int h, int w, const float *host, int is_out)
{
    assert_true(c->np < (int)(sizeof c->p / sizeof c->p[0]));
    pair *p = &c->p[c->np++];
    p->is_out = is_out;
    p->t[0] = mk(c->ref, n, ch, h, w, host);
    p->t[1] = mk(c->be, n, ch, h, w, host);
    return p;
}

/* Random input in [lo,hi) on both backends. */
static pair *cmp_in(cmp *c, int n, int ch, int h, int w, float lo, float hi)
{
    size_t count = (size_t)n * ch * h * w;
    float *host = rand_host(&c->rng, count, lo, hi);
    pair *p = cmp_add(c, n, ch, h, w, host, 0);
    free(host);
    return p;
}

/* Output: NaN sentinel everywhere on both backends. */
static pair *cmp_out(cmp *c, int n, int ch, int h, int w)
{
    size_t count = (size_t)n * ch * h * w;
    float *host = malloc(count * sizeof *host);
    assert_non_null(host);
    for (size_t i = 0; i < count; i++)
        host[i] = NAN;
    pair *p = cmp_add(c, n, ch, h, w, host, 1);
    free(host);
    return p;
}

/* Every element written (no NaN left) and within tolerance of ref. */
static void cmp_check(cmp *c, const pair *p, const char *what, tol t)
{
    float *r = dl(p->t[0]), *a = dl(p->t[1]);
    size_t bad = 0, nan_left = 0, first = (size_t)-1;
    for (size_t i = 0; i < p->t[0]->count; i++) {
        if (isnan(r[i]))
            fail_msg("%s %s: ref left element %zu unwritten (NaN)", c->label, what, i);
        if (isnan(a[i])) {
            nan_left++;
            if (first == (size_t)-1)
                first = i;
            continue;
        }
        double lim = t.atol + t.rtol * fabs(r[i]);
        double e = fabs((double)a[i] - r[i]);
        if (lim > 0 && e / lim > c->worst)
            c->worst = e / lim;
        if (!within(a[i], r[i], t)) {
            if (!bad)
                printf("  %s %s: element %zu: %s %.9g ref %.9g (|diff| %.3g > %.3g)\n",
                       c->label, what, i, nas_backend_name(c->be), (double)a[i], (double)r[i],
                       e, lim);
            bad++;
        }
    }
    free(r);
    free(a);
    if (nan_left)
        fail_msg("%s %s: %zu elements left NaN (first %zu): output not fully written",
                 c->label, what, nan_left, first);
    if (bad)
        fail_msg("%s %s: %zu elements out of tolerance", c->label, what, bad);
}

static void cmp_reset(cmp *c)
{
    for (int i = 0; i < c->np; i++) {
        nas_tensor_destroy(c->p[i].t[0]);
        nas_tensor_destroy(c->p[i].t[1]);
    }
    c->np = 0;
}

/* Run one op call on both backends; fail with the backend's detail. */
#define BOTH(c, call_ref, call_be)                                                         \
    do {                                                                                   \
        int rc_ref_ = (call_ref);                                                          \
        if (rc_ref_ != NAS_OK)                                                             \
            fail_msg("%s: ref failed: %s (%s)", (c)->label, nas_err_name(rc_ref_),         \
                     nas_backend_last_error((c)->ref));                                    \
        int rc_be_ = (call_be);                                                            \
        if (rc_be_ != NAS_OK)                                                              \
            fail_msg("%s: %s failed: %s (%s)", (c)->label, nas_backend_name((c)->be),      \
                     nas_err_name(rc_be_), nas_backend_last_error((c)->be));               \
    } while (0)

#define R(p) ((p)->t[0])
#define D(p) ((p)->t[1])

/* Create the backend named by the test state; skip visibly on ENODEV. */
static void open_backends(void **state, cmp *c, uint64_t seed)
{
    const char *name = *state;
    nas_error err = {0};
    memset(c, 0, sizeof *c);
    nas_rng_seed(&c->rng, seed, 7);
    assert_int_equal(nas_backend_create("ref", 1, 0, &c->ref, &err), NAS_OK);
    int rc = nas_backend_create(name, 2, 0, &c->be, &err);
    if (rc == NAS_ENODEV) {
        printf("SKIPPED: %s: no CUDA device\n", name);
        nas_backend_destroy(c->ref);
        skip();
    }
    if (rc != NAS_OK)
        fail_msg("cannot create backend %s: %s (%s)", name, nas_err_name(rc), err.msg);
    assert_string_equal(nas_backend_name(c->be), name);
}

static void close_backends(cmp *c, const char *what)
{
    cmp_reset(c);
    printf("  %s %s: worst |diff|/(atol+rtol|ref|) = %.3f\n", nas_backend_name(c->be), what,
           c->worst);
    nas_backend_destroy(c->be);
    nas_backend_destroy(c->ref);
}

/* ---- per-op comparisons ---------------------------------------------------------- */

typedef struct conv_case {
    int n, c, h, k, r, stride, pad;
} conv_case;

static const conv_case conv_cases[] = {
    {1, 3, 7, 5, 3, 1, 1},   {3, 5, 7, 16, 3, 2, 1},  {3, 16, 7, 5, 1, 1, 0},
    {1, 16, 28, 16, 3, 1, 1}, {3, 3, 28, 16, 3, 2, 1}, {3, 16, 28, 5, 1, 2, 0},
    {1, 5, 7, 3, 1, 2, 0},   {3, 5, 7, 3, 3, 1, 0},   {3, 3, 28, 5, 3, 2, 0},
    {1, 16, 7, 16, 1, 1, 1}, {3, 5, 28, 16, 1, 1, 0},
    /* 4- and 8-channel stages and the mixes between stages (cpu: nChw8c
     * next to nChw16c or plain, see conv_prim in trainer/backend_cpu.c) */
    {3, 1, 14, 8, 3, 1, 1},  {3, 1, 14, 4, 3, 1, 1},  {3, 4, 14, 4, 3, 1, 1},
    {3, 4, 14, 4, 1, 1, 0},  {3, 4, 14, 8, 3, 2, 1},  {3, 4, 14, 8, 1, 1, 0},
    {3, 8, 14, 8, 3, 1, 1},  {3, 8, 14, 16, 3, 2, 1}, {3, 8, 14, 16, 1, 1, 0},
    {3, 16, 14, 32, 3, 2, 1}, {3, 16, 7, 8, 1, 1, 0}, {3, 8, 7, 4, 3, 1, 1},
};

static void conv_one(cmp *c, const conv_case *k)
{
    int ho = (k->h + 2 * k->pad - k->r) / k->stride + 1;
    snprintf(c->label, sizeof c->label, "conv x[%d,%d,%d,%d] w[%d,%d,%d,%d] s%d p%d", k->n, k->c,
             k->h, k->h, k->k, k->c, k->r, k->r, k->stride, k->pad);
    pair *x = cmp_in(c, k->n, k->c, k->h, k->h, -1, 1);
    pair *w = cmp_in(c, k->k, k->c, k->r, k->r, -1, 1);
    pair *dy = cmp_in(c, k->n, k->k, ho, ho, -1, 1);
    pair *y = cmp_out(c, k->n, k->k, ho, ho);
    pair *dx = cmp_out(c, k->n, k->c, k->h, k->h);
    pair *dw = cmp_out(c, k->k, k->c, k->r, k->r);
    BOTH(c, nas_conv2d_fwd(c->ref, R(x), R(w), R(y), k->stride, k->pad),
         nas_conv2d_fwd(c->be, D(x), D(w), D(y), k->stride, k->pad));
    cmp_check(c, y, "fwd y", TOL_CONV);
    BOTH(c, nas_conv2d_bwd_data(c->ref, R(dy), R(w), R(dx), k->stride, k->pad),
         nas_conv2d_bwd_data(c->be, D(dy), D(w), D(dx), k->stride, k->pad));
    cmp_check(c, dx, "bwd_data dx", TOL_CONV);
    BOTH(c, nas_conv2d_bwd_filter(c->ref, R(x), R(dy), R(dw), k->stride, k->pad),
         nas_conv2d_bwd_filter(c->be, D(x), D(dy), D(dw), k->stride, k->pad));
    cmp_check(c, dw, "bwd_filter dw", TOL_CONV);
    cmp_reset(c);
}

static void test_conv(void **state)
{
    cmp c;
    open_backends(state, &c, 101);
    size_t ncase = sizeof conv_cases / sizeof conv_cases[0];
    for (size_t i = 0; i < ncase; i++)
        conv_one(&c, &conv_cases[i]);
    /* Again in a different order: cached primitives must be reused correctly. */
    for (size_t i = ncase; i-- > 0;)
        conv_one(&c, &conv_cases[i]);
    close_backends(&c, "conv");
}

/* A training batch norm's output, saved statistics and running statistics. */
static void bn_train_check(cmp *c, const pair *y, const pair *sm, const pair *si,
                           const pair *rmean, const pair *rvar)
{
    cmp_check(c, y, "fwd_train y", TOL_BN);
    cmp_check(c, sm, "fwd_train save_mean", TOL_BN);
    cmp_check(c, si, "fwd_train save_invstd", TOL_BN);
    cmp_check(c, rmean, "fwd_train running_mean", TOL_BN);
    cmp_check(c, rvar, "fwd_train running_var", TOL_BN);
}

/* x uniform in [lo, hi) */
static void bn_at(cmp *c, int n, int ch, int h, float lo, float hi)
{
    snprintf(c->label, sizeof c->label, "batchnorm x[%d,%d,%d,%d] in [%g, %g)", n, ch, h, h,
             (double)lo, (double)hi);
    const float momentum = 0.1f, eps = 1e-5f;
    pair *x = cmp_in(c, n, ch, h, h, lo, hi);
    pair *gamma = cmp_in(c, 1, ch, 1, 1, 0.5f, 1.5f);
    pair *beta = cmp_in(c, 1, ch, 1, 1, -0.5f, 0.5f);
    pair *rmean = cmp_in(c, 1, ch, 1, 1, -0.2f, 0.2f);
    pair *rvar = cmp_in(c, 1, ch, 1, 1, 0.5f, 1.5f);
    pair *dy = cmp_in(c, n, ch, h, h, -1, 1);
    pair *y = cmp_out(c, n, ch, h, h);
    pair *sm = cmp_out(c, 1, ch, 1, 1), *si = cmp_out(c, 1, ch, 1, 1);
    pair *dx = cmp_out(c, n, ch, h, h);
    pair *dg = cmp_out(c, 1, ch, 1, 1), *db = cmp_out(c, 1, ch, 1, 1);
    pair *yi = cmp_out(c, n, ch, h, h);
    BOTH(c,
         nas_batchnorm_fwd_train(c->ref, R(x), R(gamma), R(beta), R(y), R(sm), R(si), R(rmean),
                                 R(rvar), momentum, eps),
         nas_batchnorm_fwd_train(c->be, D(x), D(gamma), D(beta), D(y), D(sm), D(si), D(rmean),
                                 D(rvar), momentum, eps));
    bn_train_check(c, y, sm, si, rmean, rvar);
    BOTH(c,
         nas_batchnorm_bwd(c->ref, R(x), R(dy), R(gamma), R(sm), R(si), R(dx), R(dg), R(db)),
         nas_batchnorm_bwd(c->be, D(x), D(dy), D(gamma), D(sm), D(si), D(dx), D(dg), D(db)));
    cmp_check(c, dx, "bwd dx", TOL_BN_BWD);
    cmp_check(c, dg, "bwd dgamma", TOL_BN_BWD);
    cmp_check(c, db, "bwd dbeta", TOL_BN_BWD);
    BOTH(c,
         nas_batchnorm_fwd_infer(c->ref, R(x), R(gamma), R(beta), R(rmean), R(rvar), R(yi), eps),
         nas_batchnorm_fwd_infer(c->be, D(x), D(gamma), D(beta), D(rmean), D(rvar), D(yi), eps));
    cmp_check(c, yi, "fwd_infer y", TOL_BN);
    cmp_reset(c);
}

static void bn_one(cmp *c, int n, int ch, int h) { bn_at(c, n, ch, h, -1, 3); /* mean != 0 */ }

static void test_batchnorm(void **state)
{
    cmp c;
    open_backends(state, &c, 202);
    bn_one(&c, 1, 3, 7);
    bn_one(&c, 3, 5, 7);
    bn_one(&c, 3, 16, 28);
    bn_one(&c, 1, 16, 28);
    bn_one(&c, 3, 5, 1); /* after GAP: 3 values per channel */
    bn_one(&c, 3, 5, 7); /* cached again */
    /* several nChw16c and nChw8c blocks (the cpu backend's layouts), odd
     * pixel counts, and a mean 200 standard deviations from 0 (the
     * variance's sums must not cancel) */
    bn_one(&c, 5, 48, 7);
    bn_one(&c, 3, 24, 14);
    bn_one(&c, 6, 40, 5);
    bn_one(&c, 2, 32, 3);
    bn_at(&c, 4, 16, 7, 99.5f, 100.5f);
    close_backends(&c, "batchnorm");
}

static void relu_one(cmp *c, int n, int ch, int h)
{
    snprintf(c->label, sizeof c->label, "relu x[%d,%d,%d,%d]", n, ch, h, h);
    pair *x = cmp_in(c, n, ch, h, h, -1, 1);
    pair *dy = cmp_in(c, n, ch, h, h, -1, 1);
    pair *y = cmp_out(c, n, ch, h, h), *dx = cmp_out(c, n, ch, h, h);
    BOTH(c, nas_relu_fwd(c->ref, R(x), R(y)), nas_relu_fwd(c->be, D(x), D(y)));
    cmp_check(c, y, "fwd", TOL_EXACT);
    BOTH(c, nas_relu_bwd(c->ref, R(x), R(dy), R(dx)), nas_relu_bwd(c->be, D(x), D(dy), D(dx)));
    cmp_check(c, dx, "bwd", TOL_EXACT);
    /* in place: y = relu(y) */
    BOTH(c, nas_relu_fwd(c->ref, R(x), R(x)), nas_relu_fwd(c->be, D(x), D(x)));
    cmp_check(c, x, "fwd in place", TOL_EXACT);
    cmp_reset(c);
}

static void test_relu(void **state)
{
    cmp c;
    open_backends(state, &c, 303);
    relu_one(&c, 1, 3, 7);
    relu_one(&c, 3, 16, 28);
    relu_one(&c, 3, 5, 7);
    close_backends(&c, "relu");
}

static void pool_one(cmp *c, int n, int ch, int h, int k, int s, int p)
{
    int ho = (h + 2 * p - k) / s + 1;
    snprintf(c->label, sizeof c->label, "avgpool x[%d,%d,%d,%d] k%d s%d p%d", n, ch, h, h, k, s,
             p);
    pair *x = cmp_in(c, n, ch, h, h, -1, 1);
    pair *dy = cmp_in(c, n, ch, ho, ho, -1, 1);
    pair *y = cmp_out(c, n, ch, ho, ho), *dx = cmp_out(c, n, ch, h, h);
    BOTH(c, nas_avgpool_fwd(c->ref, R(x), R(y), k, s, p), nas_avgpool_fwd(c->be, D(x), D(y), k, s, p));
    cmp_check(c, y, "fwd", TOL_POOL);
    BOTH(c, nas_avgpool_bwd(c->ref, R(dy), R(dx), k, s, p),
         nas_avgpool_bwd(c->be, D(dy), D(dx), k, s, p));
    cmp_check(c, dx, "bwd", TOL_POOL);
    cmp_reset(c);
}

static void gap_one(cmp *c, int n, int ch, int h)
{
    snprintf(c->label, sizeof c->label, "gap x[%d,%d,%d,%d]", n, ch, h, h);
    pair *x = cmp_in(c, n, ch, h, h, -1, 1);
    pair *dy = cmp_in(c, n, ch, 1, 1, -1, 1);
    pair *y = cmp_out(c, n, ch, 1, 1), *dx = cmp_out(c, n, ch, h, h);
    BOTH(c, nas_gap_fwd(c->ref, R(x), R(y)), nas_gap_fwd(c->be, D(x), D(y)));
    cmp_check(c, y, "fwd", TOL_POOL);
    BOTH(c, nas_gap_bwd(c->ref, R(dy), R(dx)), nas_gap_bwd(c->be, D(dy), D(dx)));
    cmp_check(c, dx, "bwd", TOL_POOL);
    cmp_reset(c);
}

static void test_pool(void **state)
{
    cmp c;
    open_backends(state, &c, 404);
    pool_one(&c, 1, 3, 7, 3, 1, 1);
    pool_one(&c, 3, 5, 7, 2, 2, 0);
    pool_one(&c, 3, 16, 28, 3, 1, 1);
    pool_one(&c, 1, 16, 28, 2, 2, 0);
    pool_one(&c, 3, 5, 7, 3, 2, 1);
    pool_one(&c, 1, 3, 7, 3, 1, 1);
    gap_one(&c, 1, 3, 7);
    gap_one(&c, 3, 16, 28);
    gap_one(&c, 3, 5, 7);
    close_backends(&c, "pool");
}

static void linear_one(cmp *c, int n, int k, int m, int as4d)
{
    snprintf(c->label, sizeof c->label, "linear x[%d,%d] w[%d,%d]%s", n, k, m, k,
             as4d ? " (x as [N,C,H,W])" : "");
    pair *x = as4d ? cmp_in(c, n, k / 4, 2, 2, -1, 1) : cmp_in(c, n, k, 1, 1, -1, 1);
    pair *w = cmp_in(c, m, k, 1, 1, -1, 1);
    pair *b = cmp_in(c, 1, m, 1, 1, -1, 1);
    pair *dy = cmp_in(c, n, m, 1, 1, -1, 1);
    pair *y = cmp_out(c, n, m, 1, 1);
    pair *dx = as4d ? cmp_out(c, n, k / 4, 2, 2) : cmp_out(c, n, k, 1, 1);
    pair *dw = cmp_out(c, m, k, 1, 1), *db = cmp_out(c, 1, m, 1, 1);
    BOTH(c, nas_linear_fwd(c->ref, R(x), R(w), R(b), R(y)),
         nas_linear_fwd(c->be, D(x), D(w), D(b), D(y)));
    cmp_check(c, y, "fwd y", TOL_LINEAR);
    BOTH(c, nas_linear_bwd(c->ref, R(x), R(w), R(dy), R(dx), R(dw), R(db)),
         nas_linear_bwd(c->be, D(x), D(w), D(dy), D(dx), D(dw), D(db)));
    cmp_check(c, dx, "bwd dx", TOL_LINEAR);
    cmp_check(c, dw, "bwd dw", TOL_LINEAR);
    cmp_check(c, db, "bwd db", TOL_LINEAR);
    /* dx = NULL: the weight gradients alone */
    pair *dw2 = cmp_out(c, m, k, 1, 1), *db2 = cmp_out(c, 1, m, 1, 1);
    BOTH(c, nas_linear_bwd(c->ref, R(x), R(w), R(dy), NULL, R(dw2), R(db2)),
         nas_linear_bwd(c->be, D(x), D(w), D(dy), NULL, D(dw2), D(db2)));
    cmp_check(c, dw2, "bwd dw (dx NULL)", TOL_LINEAR);
    cmp_check(c, db2, "bwd db (dx NULL)", TOL_LINEAR);
    cmp_reset(c);
}

static void test_linear(void **state)
{
    cmp c;
    open_backends(state, &c, 505);
    linear_one(&c, 1, 16, 10, 0);
    linear_one(&c, 3, 5, 3, 0);
    linear_one(&c, 3, 64, 10, 1);
    linear_one(&c, 7, 100, 13, 1);
    close_backends(&c, "linear");
}

static void test_elementwise(void **state)
{
    cmp c;
    open_backends(state, &c, 606);
    const int shapes[][4] = {{1, 3, 7, 7}, {3, 16, 28, 28}, {3, 5, 1, 1}};
    for (int i = 0; i < 3; i++) {
        const int *s = shapes[i];
        snprintf(c.label, sizeof c.label, "elementwise [%d,%d,%d,%d]", s[0], s[1], s[2], s[3]);
        pair *x = cmp_in(&c, s[0], s[1], s[2], s[3], -1, 1);
        pair *y = cmp_in(&c, s[0], s[1], s[2], s[3], -1, 1);
        BOTH(&c, nas_axpy(c.ref, -0.37f, R(x), R(y)), nas_axpy(c.be, -0.37f, D(x), D(y)));
        cmp_check(&c, y, "axpy", TOL_ELEM);
        pair *z = cmp_out(&c, s[0], s[1], s[2], s[3]);
        BOTH(&c, nas_scale(c.ref, 1.7f, R(x), R(z)), nas_scale(c.be, 1.7f, D(x), D(z)));
        cmp_check(&c, z, "scale", TOL_ELEM);
        BOTH(&c, nas_scale(c.ref, 0.5f, R(y), R(y)), nas_scale(c.be, 0.5f, D(y), D(y)));
        cmp_check(&c, y, "scale in place", TOL_ELEM);
        pair *w = cmp_in(&c, s[0], s[1], s[2], s[3], -1, 1);
        pair *dw = cmp_in(&c, s[0], s[1], s[2], s[3], -1, 1);
        pair *v = cmp_in(&c, s[0], s[1], s[2], s[3], -0.1f, 0.1f);
        for (int nest = 0; nest < 2; nest++) {
            BOTH(&c, nas_sgd_step(c.ref, R(w), R(dw), R(v), 0.05f, 0.9f, 5e-4f, nest),
                 nas_sgd_step(c.be, D(w), D(dw), D(v), 0.05f, 0.9f, 5e-4f, nest));
            cmp_check(&c, w, nest ? "sgd nesterov w" : "sgd w", TOL_ELEM);
            cmp_check(&c, v, nest ? "sgd nesterov v" : "sgd v", TOL_ELEM);
        }
        double sr = -1, sb = -1;
        BOTH(&c, nas_sumsq(c.ref, R(x), &sr), nas_sumsq(c.be, D(x), &sb));
        if (!within(sb, sr, TOL_SUMSQ))
            fail_msg("sumsq: %s %.17g ref %.17g", nas_backend_name(c.be), sb, sr);
        pair *cp = cmp_out(&c, s[0], s[1], s[2], s[3]);
        assert_int_equal(nas_tensor_copy(R(cp), R(x)), NAS_OK);
        assert_int_equal(nas_tensor_copy(D(cp), D(x)), NAS_OK);
        cmp_check(&c, cp, "tensor_copy", TOL_EXACT);
        assert_int_equal(nas_tensor_zero(D(cp)), NAS_OK);
        float *zz = dl(D(cp));
        for (size_t j = 0; j < D(cp)->count; j++)
            assert_true(zz[j] == 0.0f);
        free(zz);
        cmp_reset(&c);
    }
    close_backends(&c, "elementwise");
}

static void xent_one(cmp *c, int n, int k, float spread)
{
    snprintf(c->label, sizeof c->label, "softmax_xent logits[%d,%d]", n, k);
    pair *lg = cmp_in(c, n, k, 1, 1, -spread, spread);
    float *lab = malloc((size_t)n * sizeof *lab);
    assert_non_null(lab);
    for (int i = 0; i < n; i++)
        lab[i] = (float)nas_rng_bounded(&c->rng, (uint32_t)k);
    pair *labels = cmp_add(c, n, 1, 1, 1, lab, 0);
    free(lab);
    pair *d = cmp_out(c, n, k, 1, 1);
    float lr = NAN, lb = NAN;
    int cr = -1, cb = -1;
    BOTH(c, nas_softmax_xent(c->ref, R(lg), R(labels), R(d), &lr, &cr),
         nas_softmax_xent(c->be, D(lg), D(labels), D(d), &lb, &cb));
    cmp_check(c, d, "dlogits", TOL_XENT);
    if (!within(lb, lr, TOL_XENT))
        fail_msg("%s loss: %s %.9g ref %.9g", c->label, nas_backend_name(c->be), (double)lb,
                 (double)lr);
    assert_int_equal(cb, cr);
    float le = NAN;
    int ce = -1;
    BOTH(c, nas_softmax_xent(c->ref, R(lg), R(labels), NULL, &lr, &cr),
         nas_softmax_xent(c->be, D(lg), D(labels), NULL, &le, &ce));
    assert_true(within(le, lr, TOL_XENT));
    assert_int_equal(ce, cr);
    cmp_reset(c);
}

static void test_softmax_xent(void **state)
{
    cmp c;
    open_backends(state, &c, 707);
    xent_one(&c, 1, 10, 3);
    xent_one(&c, 3, 10, 3);
    xent_one(&c, 64, 10, 20); /* large logits: needs the max shift */
    xent_one(&c, 5, 2, 1);
    close_backends(&c, "softmax_xent");
}

/* Shape errors are caught by the wrappers, with a detail message. */
static void test_shape_errors(void **state)
{
    cmp c;
    open_backends(state, &c, 808);
    nas_tensor *x = mk(c.be, 2, 3, 7, 7, NULL), *w = mk(c.be, 4, 3, 3, 3, NULL);
    nas_tensor *y = mk(c.be, 2, 4, 6, 6, NULL), *bad = NULL;
    assert_int_equal(nas_conv2d_fwd(c.be, x, w, y, 1, 1), NAS_EINVAL);
    assert_true(strlen(nas_backend_last_error(c.be)) > 0);
    assert_int_equal(nas_avgpool_fwd(c.be, x, y, 3, 1, 1), NAS_EINVAL);
    assert_int_equal(nas_tensor_create(c.be, 0, 3, 7, 7, &bad), NAS_EINVAL);
    assert_null(bad);
    float one = 1.0f;
    assert_int_equal(nas_tensor_upload(x, &one, 1), NAS_EINVAL);
    /* a tensor of another backend is refused */
    nas_tensor *rx = mk(c.ref, 2, 3, 7, 7, NULL);
    assert_int_equal(nas_relu_fwd(c.be, rx, x), NAS_EINVAL);
    /* a missing x beside a valid workspace is refused, not dereferenced */
    assert_int_equal(nas_batchnorm_act_fwd_train(c.be, NAS_FN_RELU, NULL, NULL, NULL, x, x, NULL,
                                                 NULL, NULL, NULL, 0.1f, 1e-5f),
                     NAS_EINVAL);
    /* labels outside [0,K) */
    nas_tensor *lg = mk(c.be, 2, 3, 1, 1, NULL), *lb = mk(c.be, 2, 1, 1, 1, NULL);
    float lv[2] = {0.0f, 3.0f};
    float z[6] = {0};
    up(lg, z);
    up(lb, lv);
    float loss;
    int correct;
    assert_int_equal(nas_softmax_xent(c.be, lg, lb, NULL, &loss, &correct), NAS_EINVAL);
    nas_tensor_destroy(lg);
    nas_tensor_destroy(lb);
    nas_tensor_destroy(rx);
    nas_tensor_destroy(x);
    nas_tensor_destroy(w);
    nas_tensor_destroy(y);
    close_backends(&c, "errors");
}

/* SGD against the formula computed by hand for one weight:
 * w=1, dw=0.5, v=0.2, lr=0.1, momentum=0.9, wd=0.01:
 * g = 0.5 + 0.01*1 = 0.51; v = 0.9*0.2 + 0.51 = 0.69;
 * plain:    w = 1 - 0.1*0.69 = 0.931
 * nesterov: w = 1 - 0.1*(0.51 + 0.9*0.69) = 0.8869. */
static void test_sgd_formula(void **state)
{
    cmp c;
    open_backends(state, &c, 909);
    for (int nest = 0; nest < 2; nest++) {
        float hw[2] = {1.0f, -2.0f}, hdw[2] = {0.5f, 0.0f}, hv[2] = {0.2f, 0.0f};
        nas_tensor *w = mk(c.be, 2, 1, 1, 1, hw), *dw = mk(c.be, 2, 1, 1, 1, hdw);
        nas_tensor *v = mk(c.be, 2, 1, 1, 1, hv);
        assert_int_equal(nas_sgd_step(c.be, w, dw, v, 0.1f, 0.9f, 0.01f, nest), NAS_OK);
        float *ow = dl(w), *ov = dl(v);
        assert_float_equal(ov[0], 0.69, 1e-6);
        assert_float_equal(ow[0], nest ? 0.8869 : 0.931, 1e-6);
        /* second weight: only decay acts: g = -0.02, v = -0.02 */
        assert_float_equal(ov[1], -0.02, 1e-7);
        assert_float_equal(ow[1], nest ? -2.0 + 0.1 * (0.02 + 0.9 * 0.02) : -2.0 + 0.002,
                           1e-6);
        free(ow);
        free(ov);
        nas_tensor_destroy(w);
        nas_tensor_destroy(dw);
        nas_tensor_destroy(v);
    }
    close_backends(&c, "sgd formula");
}

/* ---- the ref oracle: known results ------------------------------------------------ */

static nas_backend *ref_open(void)
{
    nas_backend *be = NULL;
    nas_error err = {0};
    assert_int_equal(nas_backend_create("ref", 0, 0, &be, &err), NAS_OK);
    return be;
}

/* Cross-correlation (not convolution): a kernel with a single 1 at (0,0)
 * and pad 1 shifts the image down-right by one. */
/* Inference conv + bias, written (accumulate 0: y starts as NaN, every
 * element must be written) or added to random values already in y. */
/* y = conv + b (+ y, or then act `fn`) on the backend and on ref, compared;
 * 0 when the backend has no fused path (NAS_EUNSUPPORTED), else 1. */
static int fused_check(cmp *c, pair *x, pair *w, pair *b, pair *y, int stride, int pad,
                       int groups, int fn, int accumulate)
{
    int rc = nas_conv2d_fwd_fused(c->be, D(x), D(w), D(b), D(y), stride, pad, groups, fn,
                                  accumulate);
    if (rc == NAS_EUNSUPPORTED) {
        cmp_reset(c);
        return 0;
    }
    if (rc != NAS_OK)
        fail_msg("%s: %s failed: %s (%s)", c->label, nas_backend_name(c->be), nas_err_name(rc),
                 nas_backend_last_error(c->be));
    assert_int_equal(nas_conv2d_fwd_fused(c->ref, R(x), R(w), R(b), R(y), stride, pad, groups,
                                          fn, accumulate),
                     NAS_OK);
    cmp_check(c, y, "y", TOL_CONV);
    cmp_reset(c);
    return 1;
}

/* The end of an optional op's test: skipped when no case ran, else every
 * case must have run. */
static void optional_done(cmp *c, int ran, int want, const char *what)
{
    if (!ran) {
        /* optional op: the trainer falls back to the separate ops */
        printf("SKIPPED: %s/%s: backend has no such fused op (NAS_EUNSUPPORTED)\n",
               nas_backend_name(c->be), what);
        close_backends(c, what);
        skip();
    }
    assert_int_equal(ran, want);
    close_backends(c, what);
}

static int conv_bias_one(cmp *c, const conv_case *k, int accumulate)
{
    int ho = (k->h + 2 * k->pad - k->r) / k->stride + 1;
    snprintf(c->label, sizeof c->label, "conv_bias%s x[%d,%d,%d,%d] w[%d,%d,%d,%d] s%d p%d",
             accumulate ? " accumulate" : "", k->n, k->c, k->h, k->h, k->k, k->c, k->r, k->r,
             k->stride, k->pad);
    pair *x = cmp_in(c, k->n, k->c, k->h, k->h, -1, 1);
    pair *w = cmp_in(c, k->k, k->c, k->r, k->r, -1, 1);
    pair *b = cmp_in(c, 1, k->k, 1, 1, -1, 1);
    pair *y = accumulate ? cmp_in(c, k->n, k->k, ho, ho, -1, 1) : cmp_out(c, k->n, k->k, ho, ho);
    return fused_check(c, x, w, b, y, k->stride, k->pad, 1, -1, accumulate);
}

static void test_conv_bias(void **state)
{
    cmp c;
    open_backends(state, &c, 103);
    size_t ncase = sizeof conv_cases / sizeof conv_cases[0];
    int ran = 0;
    for (int acc = 0; acc < 2; acc++)
        for (size_t i = 0; i < ncase; i++)
            ran += conv_bias_one(&c, &conv_cases[i], acc);
    optional_done(&c, ran, 2 * (int)ncase, "conv_bias");
}

static void test_ref_conv_known(void **state)
{
    nas_backend *be = ref_open();
    float hx[9], hw[9] = {1, 0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 9; i++)
        hx[i] = (float)(i + 1);
    nas_tensor *x = mk(be, 1, 1, 3, 3, hx), *w = mk(be, 1, 1, 3, 3, hw);
    nas_tensor *y = mk(be, 1, 1, 3, 3, NULL), *y2 = mk(be, 1, 1, 2, 2, NULL);
    assert_int_equal(nas_conv2d_fwd(be, x, w, y, 1, 1), NAS_OK);
    float *o = dl(y);
    const float want[9] = {0, 0, 0, 0, 1, 2, 0, 4, 5};
    for (int i = 0; i < 9; i++)
        assert_float_equal(o[i], want[i], 0);
    free(o);
    /* with a bias of 10, then accumulated onto that result with bias 1 */
    float hb[1] = {10};
    nas_tensor *b = mk(be, 1, 1, 1, 1, hb);
    assert_int_equal(nas_conv2d_fwd_bias(be, x, w, b, y, 1, 1, 0), NAS_OK);
    o = dl(y);
    for (int i = 0; i < 9; i++)
        assert_float_equal(o[i], want[i] + 10, 0);
    hb[0] = 1;
    up(b, hb);
    assert_int_equal(nas_conv2d_fwd_bias(be, x, w, b, y, 1, 1, 1), NAS_OK);
    free(o);
    o = dl(y);
    for (int i = 0; i < 9; i++)
        assert_float_equal(o[i], 2 * want[i] + 11, 0);
    free(o);
    /* bias -3, then ReLU6 and h-swish as post-ops: x*relu6(x+3)/6 */
    hb[0] = -3;
    up(b, hb);
    assert_int_equal(nas_conv2d_fwd_fused(be, x, w, b, y, 1, 1, 1, NAS_FN_RELU6, 0), NAS_OK);
    o = dl(y);
    for (int i = 0; i < 9; i++)
        assert_float_equal(o[i], want[i] > 3 ? want[i] - 3 : 0, 0);
    free(o);
    assert_int_equal(nas_conv2d_fwd_fused(be, x, w, b, y, 1, 1, 1, NAS_FN_HSWISH, 0), NAS_OK);
    o = dl(y);
    for (int i = 0; i < 9; i++)
        assert_float_equal(o[i], (want[i] - 3) * want[i] / 6, 1e-6);
    free(o);
    /* bias -3 and a residual r = 100 * x added in the same op; r as y, and
     * an r unlike y (3x3 against the stride-2 2x2 y2), are refused */
    float hr[9];
    for (int i = 0; i < 9; i++)
        hr[i] = 100.0f * hx[i];
    nas_tensor *r = mk(be, 1, 1, 3, 3, hr);
    assert_int_equal(nas_conv2d_fwd_fused_add(be, x, w, b, r, y, 1, 1, 1), NAS_OK);
    o = dl(y);
    for (int i = 0; i < 9; i++)
        assert_float_equal(o[i], want[i] - 3 + 100.0f * hx[i], 0);
    free(o);
    assert_int_equal(nas_conv2d_fwd_fused_add(be, x, w, b, y, y, 1, 1, 1), NAS_EINVAL);
    /* a missing bias or residual is refused, not dereferenced */
    assert_int_equal(nas_conv2d_fwd_fused_add(be, x, w, NULL, r, y, 1, 1, 1), NAS_EINVAL);
    assert_int_equal(nas_conv2d_fwd_fused_add(be, x, w, b, NULL, y, 1, 1, 1), NAS_EINVAL);
    assert_int_equal(nas_conv2d_fwd_fused(be, x, w, NULL, y, 1, 1, 1, -1, 0), NAS_EINVAL);
    assert_int_equal(nas_conv2d_fwd_fused_add(be, x, w, b, r, y2, 2, 1, 1), NAS_EINVAL);
    nas_tensor_destroy(r);
    nas_tensor_destroy(b);
    /* stride 2 pad 1 with the same kernel picks x[-1,-1], x[-1,1], x[1,-1], x[1,1] */
    assert_int_equal(nas_conv2d_fwd(be, x, w, y2, 2, 1), NAS_OK);
    o = dl(y2);
    const float want2[4] = {0, 0, 0, 5};
    for (int i = 0; i < 4; i++)
        assert_float_equal(o[i], want2[i], 0);
    free(o);
    nas_tensor_destroy(x);
    nas_tensor_destroy(w);
    nas_tensor_destroy(y);
    nas_tensor_destroy(y2);
    nas_backend_destroy(be);
}

/* avg pool k3 s1 p1 on 1..9 excludes padding: the corner averages 4 values. */
static void test_ref_pool_known(void **state)
{
    nas_backend *be = ref_open();
    float hx[9];
    for (int i = 0; i < 9; i++)
        hx[i] = (float)(i + 1);
    nas_tensor *x = mk(be, 1, 1, 3, 3, hx), *y = mk(be, 1, 1, 3, 3, NULL);
    assert_int_equal(nas_avgpool_fwd(be, x, y, 3, 1, 1), NAS_OK);
    float *o = dl(y);
    assert_float_equal(o[0], (1 + 2 + 4 + 5) / 4.0, 1e-6);
    assert_float_equal(o[1], (1 + 2 + 3 + 4 + 5 + 6) / 6.0, 1e-6);
    assert_float_equal(o[4], 5.0, 1e-6);
    assert_float_equal(o[8], (5 + 6 + 8 + 9) / 4.0, 1e-6);
    free(o);
    nas_tensor *g = mk(be, 1, 1, 1, 1, NULL);
    assert_int_equal(nas_gap_fwd(be, x, g), NAS_OK);
    o = dl(g);
    assert_float_equal(o[0], 5.0, 1e-6);
    free(o);
    nas_tensor_destroy(g);
    nas_tensor_destroy(x);
    nas_tensor_destroy(y);
    nas_backend_destroy(be);
}

/* BN training output has per-channel mean beta and std gamma (biased var);
 * running stats follow PyTorch (unbiased variance). */
static void test_ref_bn_known(void **state)
{
    nas_backend *be = ref_open();
    /* channel 0: 1,2,3,4 (mean 2.5, biased var 1.25, unbiased 5/3); channel 1: 0,0,0,8 */
    float hx[8] = {1, 2, 0, 0, 3, 4, 0, 8}; /* [N=2,C=2,H=1,W=2] */
    float hg[2] = {2, 1}, hb[2] = {1, 0}, hrm[2] = {0, 1}, hrv[2] = {1, 1};
    nas_tensor *x = mk(be, 2, 2, 1, 2, hx), *gm = mk(be, 1, 2, 1, 1, hg);
    nas_tensor *bt = mk(be, 1, 2, 1, 1, hb), *rm = mk(be, 1, 2, 1, 1, hrm);
    nas_tensor *rv = mk(be, 1, 2, 1, 1, hrv), *y = mk(be, 2, 2, 1, 2, NULL);
    nas_tensor *sm = mk(be, 1, 2, 1, 1, NULL), *si = mk(be, 1, 2, 1, 1, NULL);
    assert_int_equal(nas_batchnorm_fwd_train(be, x, gm, bt, y, sm, si, rm, rv, 0.1f, 1e-5f),
                     NAS_OK);
    float *o = dl(y), *m = dl(sm), *s = dl(si), *orm = dl(rm), *orv = dl(rv);
    assert_float_equal(m[0], 2.5, 1e-6);
    assert_float_equal(m[1], 2.0, 1e-6);
    assert_float_equal(s[0], 1.0 / sqrt(1.25 + 1e-5), 1e-5);
    assert_float_equal(s[1], 1.0 / sqrt(12.0 + 1e-5), 1e-5);
    assert_float_equal(o[0], 2.0 * (1 - 2.5) / sqrt(1.25 + 1e-5) + 1.0, 1e-5);
    assert_float_equal(o[7], 1.0 * (8 - 2.0) / sqrt(12.0 + 1e-5), 1e-5);
    assert_float_equal(orm[0], 0.9 * 0 + 0.1 * 2.5, 1e-6);
    assert_float_equal(orm[1], 0.9 * 1 + 0.1 * 2.0, 1e-6);
    assert_float_equal(orv[0], 0.9 * 1 + 0.1 * (5.0 / 3.0), 1e-6);
    assert_float_equal(orv[1], 0.9 * 1 + 0.1 * 16.0, 1e-5);
    free(o);
    free(m);
    free(s);
    free(orm);
    free(orv);
    nas_tensor *yi = mk(be, 2, 2, 1, 2, NULL);
    float hrm2[2] = {0.5f, -1.0f}, hrv2[2] = {4.0f, 0.25f};
    up(rm, hrm2);
    up(rv, hrv2);
    assert_int_equal(nas_batchnorm_fwd_infer(be, x, gm, bt, rm, rv, yi, 1e-5f), NAS_OK);
    o = dl(yi);
    assert_float_equal(o[1], 2.0 * (2 - 0.5) / sqrt(4 + 1e-5) + 1.0, 1e-5);
    assert_float_equal(o[6], 1.0 * (0 + 1.0) / sqrt(0.25 + 1e-5), 1e-5);
    free(o);
    nas_tensor *all[] = {x, gm, bt, rm, rv, y, sm, si, yi};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        nas_tensor_destroy(all[i]);
    nas_backend_destroy(be);
}

/* Uniform logits give loss log K; ties go to the lowest index. */
static void test_ref_xent_known(void **state)
{
    nas_backend *be = ref_open();
    float hl[8] = {0, 0, 0, 0, 1, 5, 5, -1}, hlab[2] = {0, 2};
    nas_tensor *lg = mk(be, 2, 4, 1, 1, hl), *lb = mk(be, 2, 1, 1, 1, hlab);
    nas_tensor *d = mk(be, 2, 4, 1, 1, NULL);
    float loss;
    int correct;
    assert_int_equal(nas_softmax_xent(be, lg, lb, d, &loss, &correct), NAS_OK);
    double z = exp(1.0) + 2 * exp(5.0) + exp(-1.0);
    double want = (log(4.0) + (log(z) - 5.0)) / 2.0;
    assert_float_equal(loss, want, 1e-6);
    assert_int_equal(correct, 1); /* row 0 argmax 0 == label; row 1 argmax 1 != 2 */
    float *o = dl(d);
    assert_float_equal(o[0], (0.25 - 1) / 2, 1e-7);
    assert_float_equal(o[6], (exp(5.0) / z - 1) / 2, 1e-6);
    free(o);
    nas_tensor_destroy(lg);
    nas_tensor_destroy(lb);
    nas_tensor_destroy(d);
    nas_backend_destroy(be);
}


/* ---- chain-network ops (issue 15) -------------------------------------------------- */

/* A copy of t in the layout the backend keeps activations in between ops
 * (the cpu backend's nChw16c / nChw8c when C allows; an upload is plain):
 * the output of a 1x1 convolution with identity weights, which is t
 * exactly (one product by 1, the rest by 0). The caller owns it. */
static nas_tensor *in_own_layout(nas_backend *be, const nas_tensor *t)
{
    float *eye = calloc((size_t)t->c * t->c, sizeof *eye);
    assert_non_null(eye);
    for (int i = 0; i < t->c; i++)
        eye[(size_t)i * t->c + i] = 1.0f;
    nas_tensor *w = mk(be, t->c, t->c, 1, 1, eye), *y = mk(be, t->n, t->c, t->h, t->w, NULL);
    free(eye);
    assert_int_equal(nas_conv2d_fwd(be, t, w, y, 1, 0), NAS_OK);
    if (strcmp(nas_backend_name(be), "cpu") == 0 && t->c % 8 == 0 && t->h * t->w > 1)
        assert_int_not_equal(y->layout, 0); /* else this check would repeat the plain one */
    nas_tensor_destroy(w);
    return y;
}

typedef struct gconv_case {
    int n, c, h, k, r, stride, groups;
} gconv_case;

/* depthwise k = 3, 5, 7 with stride 1 and 2 at plain (5, 3), nChw8c (24, 8)
 * and nChw16c (16, 32, 96) channel counts, and true grouped convolutions */
static const gconv_case gconv_cases[] = {
    {3, 16, 14, 16, 3, 1, 16}, {3, 16, 14, 16, 3, 2, 16}, {2, 24, 7, 24, 5, 1, 24},
    {2, 24, 14, 24, 5, 2, 24}, {2, 32, 7, 32, 7, 1, 32},  {2, 32, 14, 32, 7, 2, 32},
    {3, 5, 7, 5, 3, 1, 5},     {1, 3, 9, 3, 7, 2, 3},     {2, 96, 7, 96, 3, 1, 96},
    {2, 8, 7, 8, 5, 2, 8},     {2, 8, 7, 16, 3, 1, 4},    {3, 6, 7, 4, 3, 2, 2},
    {2, 16, 7, 32, 1, 1, 2},
};

static void gconv_one(cmp *c, const gconv_case *k)
{
    int pad = k->r / 2, ho = (k->h + 2 * pad - k->r) / k->stride + 1, cg = k->c / k->groups;
    snprintf(c->label, sizeof c->label, "gconv x[%d,%d,%d,%d] w[%d,%d,%d,%d] s%d g%d", k->n,
             k->c, k->h, k->h, k->k, cg, k->r, k->r, k->stride, k->groups);
    pair *x = cmp_in(c, k->n, k->c, k->h, k->h, -1, 1);
    pair *w = cmp_in(c, k->k, cg, k->r, k->r, -1, 1);
    pair *dy = cmp_in(c, k->n, k->k, ho, ho, -1, 1);
    pair *y = cmp_out(c, k->n, k->k, ho, ho);
    pair *dx = cmp_out(c, k->n, k->c, k->h, k->h);
    pair *dw = cmp_out(c, k->k, cg, k->r, k->r);
    BOTH(c, nas_gconv2d_fwd(c->ref, R(x), R(w), R(y), k->stride, pad, k->groups),
         nas_gconv2d_fwd(c->be, D(x), D(w), D(y), k->stride, pad, k->groups));
    cmp_check(c, y, "fwd y", TOL_CONV);
    BOTH(c, nas_gconv2d_bwd_data(c->ref, R(dy), R(w), R(dx), k->stride, pad, k->groups),
         nas_gconv2d_bwd_data(c->be, D(dy), D(w), D(dx), k->stride, pad, k->groups));
    cmp_check(c, dx, "bwd_data dx", TOL_CONV);
    BOTH(c, nas_gconv2d_bwd_filter(c->ref, R(x), R(dy), R(dw), k->stride, pad, k->groups),
         nas_gconv2d_bwd_filter(c->be, D(x), D(dy), D(dw), k->stride, pad, k->groups));
    cmp_check(c, dw, "bwd_filter dw", TOL_CONV);
    if (k->groups == k->c && k->k == k->c) { /* depthwise: again on activations in the */
        pair *dw2 = cmp_out(c, k->k, cg, k->r, k->r); /* backend's own layout */
        nas_tensor *xb = in_own_layout(c->be, D(x)), *dyb = in_own_layout(c->be, D(dy));
        BOTH(c, nas_gconv2d_bwd_filter(c->ref, R(x), R(dy), R(dw2), k->stride, pad, k->groups),
             nas_gconv2d_bwd_filter(c->be, xb, dyb, D(dw2), k->stride, pad, k->groups));
        cmp_check(c, dw2, "bwd_filter dw (inputs in the backend's layout)", TOL_CONV);
        nas_tensor_destroy(xb);
        nas_tensor_destroy(dyb);
    }
    cmp_reset(c);
}

/* Batch norm and the depthwise weight gradient on the backend's own layout
 * give bit-identical outputs with 1 and 2 threads (the cpu backend: oneDNN
 * gives each 16-channel block of a batch norm to one thread, and
 * trainer/cpu_depthwise.c sums in a fixed order on one thread), so a
 * trial's result does not depend on proxy.threads through them. */
static void test_threads_bitwise(void **state)
{
    const char *name = *state;
    nas_backend *be[2] = {NULL, NULL};
    nas_error err = {0};
    for (int i = 0; i < 2; i++) {
        int rc = nas_backend_create(name, i + 1, 0, &be[i], &err);
        if (rc == NAS_ENODEV) {
            printf("SKIPPED: %s: no CUDA device\n", name);
            skip();
        }
        assert_int_equal(rc, NAS_OK);
    }
    enum { N = 6, C = 48, H = 14, K = 5 };
    nas_rng rng;
    nas_rng_seed(&rng, 77, 7);
    float *hx = rand_host(&rng, (size_t)N * C * H * H, -1, 3);
    float *hd = rand_host(&rng, (size_t)N * C * H * H, -1, 1);
    float *hg = rand_host(&rng, C, 0.5f, 1.5f), *hb = rand_host(&rng, C, -0.5f, 0.5f);
    float *hs = rand_host(&rng, (size_t)N * C, 0, 1);
    float zeros[C], ones[C], *out[2][5];
    for (int k = 0; k < C; k++) {
        zeros[k] = 0.0f;
        ones[k] = 1.0f;
    }
    for (int i = 0; i < 2; i++) {
        nas_tensor *x0 = mk(be[i], N, C, H, H, hx), *d0 = mk(be[i], N, C, H, H, hd);
        nas_tensor *x = in_own_layout(be[i], x0), *d = in_own_layout(be[i], d0);
        nas_tensor *g = mk(be[i], 1, C, 1, 1, hg), *b = mk(be[i], 1, C, 1, 1, hb);
        nas_tensor *y = mk(be[i], N, C, H, H, NULL), *dx = mk(be[i], N, C, H, H, NULL);
        nas_tensor *sm = mk(be[i], 1, C, 1, 1, NULL), *si = mk(be[i], 1, C, 1, 1, NULL);
        nas_tensor *rm = mk(be[i], 1, C, 1, 1, NULL), *rv = mk(be[i], 1, C, 1, 1, NULL);
        nas_tensor *dg = mk(be[i], 1, C, 1, 1, NULL), *db = mk(be[i], 1, C, 1, 1, NULL);
        nas_tensor *dw = mk(be[i], C, 1, K, K, NULL);
        nas_tensor *s = mk(be[i], N, C, 1, 1, hs), *ds = mk(be[i], N, C, 1, 1, NULL);
        up(rm, zeros);
        up(rv, ones);
        assert_int_equal(nas_batchnorm_fwd_train(be[i], x, g, b, y, sm, si, rm, rv, 0.1f, 1e-5f),
                         NAS_OK);
        assert_int_equal(nas_batchnorm_bwd(be[i], x, d, g, sm, si, dx, dg, db), NAS_OK);
        assert_int_equal(nas_gconv2d_bwd_filter(be[i], x, d, dw, 1, K / 2, C), NAS_OK);
        assert_int_equal(nas_chscale_bwd(be[i], x, s, d, NULL, ds), NAS_OK);
        out[i][4] = dl(ds);
        out[i][0] = dl(y);
        out[i][1] = dl(dx);
        out[i][2] = dl(dg);
        out[i][3] = dl(dw);
        nas_tensor *all[] = {x0, d0, x, d, g, b, y, dx, sm, si, rm, rv, dg, db, dw, s, ds};
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            nas_tensor_destroy(all[k]);
    }
    const size_t len[5] = {(size_t)N * C * H * H, (size_t)N * C * H * H, C, (size_t)C * K * K,
                           (size_t)N * C};
    static const char *const what[5] = {"bn y", "bn dx", "bn dgamma", "depthwise dw",
                                        "chscale ds"};
    for (int k = 0; k < 5; k++) {
        if (memcmp(out[0][k], out[1][k], len[k] * sizeof(float)))
            fail_msg("%s: %s differs between 1 and 2 threads", name, what[k]);
        free(out[0][k]);
        free(out[1][k]);
    }
    free(hx);
    free(hd);
    free(hg);
    free(hb);
    free(hs);
    nas_backend_destroy(be[0]);
    nas_backend_destroy(be[1]);
}

/* The fully connected layer gives the same bytes whether its backend has
 * 2 threads or 1, for a shape OpenBLAS would split between threads
 * (x [240, 128] -> y [240, 60]: Debian's threaded sgemm rounded this
 * differently from its one-thread sgemm). The cpu backend runs OpenBLAS
 * on one thread (trainer/backend_cpu.c, "Threads"): a second OpenBLAS
 * thread spins after each call on the cores oneDNN's threads need. Each
 * backend is made, used and destroyed before the next: OpenBLAS's thread
 * count is process-wide, so two backends alive at once would both run
 * with the last one's. The check can only fail on a host whose threaded
 * OpenBLAS rounds this shape differently from one thread (this one did
 * with the backend's OpenBLAS at 2 threads). */
static void test_linear_threads_bitwise(void **state)
{
    const char *name = *state;
    enum { N = 240, K = 128, M = 60 };
    nas_rng rng;
    nas_rng_seed(&rng, 78, 7);
    float *hx = rand_host(&rng, (size_t)N * K, -1, 1), *hw = rand_host(&rng, (size_t)M * K, -1, 1);
    float *hb = rand_host(&rng, M, -1, 1), *hd = rand_host(&rng, (size_t)N * M, -1, 1);
    float *out[2][4];
    for (int i = 0; i < 2; i++) {
        nas_backend *be = NULL;
        nas_error err = {0};
        int rc = nas_backend_create(name, 2 - i, 0, &be, &err);
        if (rc == NAS_ENODEV) { /* skip() does not return: free the inputs first */
            free(hx);
            free(hw);
            free(hb);
            free(hd);
            printf("SKIPPED: %s: no CUDA device\n", name);
            skip();
        }
        assert_int_equal(rc, NAS_OK);
        nas_tensor *x = mk(be, N, K, 1, 1, hx), *w = mk(be, M, K, 1, 1, hw);
        nas_tensor *b = mk(be, 1, M, 1, 1, hb), *d = mk(be, N, M, 1, 1, hd);
        nas_tensor *y = mk(be, N, M, 1, 1, NULL), *dx = mk(be, N, K, 1, 1, NULL);
        nas_tensor *dw = mk(be, M, K, 1, 1, NULL), *db = mk(be, 1, M, 1, 1, NULL);
        assert_int_equal(nas_linear_fwd(be, x, w, b, y), NAS_OK);
        assert_int_equal(nas_linear_bwd(be, x, w, d, dx, dw, db), NAS_OK);
        out[i][0] = dl(y);
        out[i][1] = dl(dx);
        out[i][2] = dl(dw);
        out[i][3] = dl(db);
        nas_tensor *all[] = {x, w, b, d, y, dx, dw, db};
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            nas_tensor_destroy(all[k]);
        nas_backend_destroy(be);
    }
    const size_t len[4] = {(size_t)N * M, (size_t)N * K, (size_t)M * K, M};
    static const char *const what[4] = {"linear y", "linear dx", "linear dw", "linear db"};
    for (int k = 0; k < 4; k++) {
        if (memcmp(out[0][k], out[1][k], len[k] * sizeof(float)))
            fail_msg("%s: %s differs between 2 threads and 1", name, what[k]);
        free(out[0][k]);
        free(out[1][k]);
    }
    free(hx);
    free(hw);
    free(hb);
    free(hd);
}

static void test_gconv(void **state)
{
    cmp c;
    open_backends(state, &c, 1501);
    size_t ncase = sizeof gconv_cases / sizeof gconv_cases[0];
    for (size_t i = 0; i < ncase; i++)
        gconv_one(&c, &gconv_cases[i]);
    for (size_t i = ncase; i-- > 0;) /* cached primitives reused */
        gconv_one(&c, &gconv_cases[i]);
    close_backends(&c, "gconv");
}

/* Issue 34, item 4: the eval convolution with a bias and an activation
 * post-op, dense, depthwise and grouped (gconv_cases' shapes, pad R/2),
 * every nas_actfn and none; and grouped with accumulation. Weights in [-1,1] and biases in [-4,4] put
 * the pre-activations across every piece of ReLU6, h-swish and h-sigmoid
 * (beyond 6 and below -3). */
static int conv_fused_one(cmp *c, const gconv_case *k, int fn, int accumulate)
{
    int pad = k->r / 2, ho = (k->h + 2 * pad - k->r) / k->stride + 1, cg = k->c / k->groups;
    snprintf(c->label, sizeof c->label,
             "conv_fused act %d%s x[%d,%d,%d,%d] w[%d,%d,%d,%d] s%d g%d", fn,
             accumulate ? " accumulate" : "", k->n, k->c, k->h, k->h, k->k, cg, k->r, k->r,
             k->stride, k->groups);
    pair *x = cmp_in(c, k->n, k->c, k->h, k->h, -1, 1);
    pair *w = cmp_in(c, k->k, cg, k->r, k->r, -1, 1);
    pair *b = cmp_in(c, 1, k->k, 1, 1, -4, 4);
    pair *y = accumulate ? cmp_in(c, k->n, k->k, ho, ho, -1, 1) : cmp_out(c, k->n, k->k, ho, ho);
    return fused_check(c, x, w, b, y, k->stride, pad, k->groups, fn, accumulate);
}

static void test_conv_fused(void **state)
{
    cmp c;
    open_backends(state, &c, 107);
    const gconv_case dense[] = {{2, 16, 7, 24, 1, 1, 1}, {2, 8, 9, 16, 3, 2, 1}};
    int ran = 0, want = 0;
    for (int fn = -1; fn <= NAS_FN_SIGMOID; fn++) {
        for (size_t i = 0; i < sizeof gconv_cases / sizeof gconv_cases[0]; i++, want++)
            ran += conv_fused_one(&c, &gconv_cases[i], fn, 0);
        for (size_t i = 0; i < sizeof dense / sizeof dense[0]; i++, want++)
            ran += conv_fused_one(&c, &dense[i], fn, 0);
    }
    /* grouped and depthwise, added to what y holds (sum post-op) */
    for (size_t i = 0; i < sizeof gconv_cases / sizeof gconv_cases[0]; i++, want++)
        ran += conv_fused_one(&c, &gconv_cases[i], -1, 1);
    /* an activation with accumulate is refused, and so is an unknown one
     * (checked before any backend is asked) */
    pair *x = cmp_in(&c, 1, 4, 5, 5, -1, 1), *w = cmp_in(&c, 4, 1, 3, 3, -1, 1);
    pair *b = cmp_in(&c, 1, 4, 1, 1, -1, 1), *y = cmp_out(&c, 1, 4, 5, 5);
    assert_int_equal(nas_conv2d_fwd_fused(c.be, D(x), D(w), D(b), D(y), 1, 1, 4, NAS_FN_RELU, 1),
                     NAS_EINVAL);
    assert_int_equal(nas_conv2d_fwd_fused(c.be, D(x), D(w), D(b), D(y), 1, 1, 4, 7, 0),
                     NAS_EINVAL);
    cmp_reset(&c);
    optional_done(&c, ran, want, "conv_fused");
}

/* Issue 34, item 4: the eval convolution with a bias and a residual added
 * in the same op (an MBConv's projection and its residual sum), dense,
 * grouped and depthwise (gconv_cases' shapes, pad R/2), against ref; y
 * starts as NaN, so every element must be written. */
static void test_conv_fused_add(void **state)
{
    cmp c;
    open_backends(state, &c, 109);
    const gconv_case dense[] = {{2, 16, 7, 24, 1, 1, 1}, {2, 40, 7, 24, 1, 1, 1},
                                {3, 24, 5, 8, 3, 2, 1}};
    const size_t nd = sizeof dense / sizeof dense[0];
    const size_t ng = sizeof gconv_cases / sizeof gconv_cases[0];
    int ran = 0, want = 0;
    for (size_t i = 0; i < nd + ng; i++, want++) {
        const gconv_case *k = i < nd ? &dense[i] : &gconv_cases[i - nd];
        int pad = k->r / 2, ho = (k->h + 2 * pad - k->r) / k->stride + 1, cg = k->c / k->groups;
        snprintf(c.label, sizeof c.label, "conv_fused_add x[%d,%d,%d,%d] w[%d,%d,%d,%d] s%d g%d",
                 k->n, k->c, k->h, k->h, k->k, cg, k->r, k->r, k->stride, k->groups);
        pair *x = cmp_in(&c, k->n, k->c, k->h, k->h, -1, 1);
        pair *w = cmp_in(&c, k->k, cg, k->r, k->r, -1, 1);
        pair *b = cmp_in(&c, 1, k->k, 1, 1, -4, 4);
        pair *r = cmp_in(&c, k->n, k->k, ho, ho, -8, 8);
        pair *y = cmp_out(&c, k->n, k->k, ho, ho);
        int rc = nas_conv2d_fwd_fused_add(c.be, D(x), D(w), D(b), D(r), D(y), k->stride, pad,
                                          k->groups);
        if (rc == NAS_EUNSUPPORTED) {
            cmp_reset(&c);
            continue;
        }
        if (rc != NAS_OK)
            fail_msg("%s: %s failed: %s (%s)", c.label, nas_backend_name(c.be), nas_err_name(rc),
                     nas_backend_last_error(c.be));
        assert_int_equal(nas_conv2d_fwd_fused_add(c.ref, R(x), R(w), R(b), R(r), R(y),
                                                  k->stride, pad, k->groups),
                         NAS_OK);
        cmp_check(&c, y, "y", TOL_CONV);
        cmp_reset(&c);
        ran++;
    }
    optional_done(&c, ran, want, "conv_fused_add");
}

static void act_one(cmp *c, int fn, int n, int ch, int h)
{
    snprintf(c->label, sizeof c->label, "act %d x[%d,%d,%d,%d]", fn, n, ch, h, h);
    pair *x = cmp_in(c, n, ch, h, h, -8, 8); /* every piece of relu6, hswish, hsigmoid */
    pair *dy = cmp_in(c, n, ch, h, h, -1, 1);
    pair *y = cmp_out(c, n, ch, h, h), *dx = cmp_out(c, n, ch, h, h);
    BOTH(c, nas_act_fwd(c->ref, fn, R(x), R(y)), nas_act_fwd(c->be, fn, D(x), D(y)));
    cmp_check(c, y, "fwd", TOL_ACT);
    BOTH(c, nas_act_bwd(c->ref, fn, R(x), R(dy), R(dx)),
         nas_act_bwd(c->be, fn, D(x), D(dy), D(dx)));
    cmp_check(c, dx, "bwd", TOL_ACT);
    cmp_reset(c);
}

static void test_act(void **state)
{
    cmp c;
    open_backends(state, &c, 1502);
    for (int fn = NAS_FN_RELU; fn <= NAS_FN_SIGMOID; fn++) {
        act_one(&c, fn, 3, 16, 7);
        act_one(&c, fn, 3, 5, 7);
        act_one(&c, fn, 4, 24, 1);
    }
    close_backends(&c, "act");
}

/* Issue 34: batch norm fused with the activation after it, forward and
 * backward, against ref (which composes nas_batchnorm_fwd_train and
 * nas_act_fwd, then nas_act_bwd and nas_batchnorm_bwd). x and dy arrive
 * in the backend's own layout (blocked where C allows), as in a network;
 * x in [lo, hi) so about a third of BN's outputs are negative. */
static void bn_act_at(cmp *c, int fn, int n, int ch, int h, float lo, float hi, float g_lo,
                      float g_hi)
{
    snprintf(c->label, sizeof c->label,
             "batchnorm_act %d x[%d,%d,%d,%d] in [%g, %g) gamma [%g, %g)", fn, n, ch, h, h,
             (double)lo, (double)hi, (double)g_lo, (double)g_hi);
    const float momentum = 0.1f, eps = 1e-5f;
    pair *x0 = cmp_in(c, n, ch, h, h, lo, hi), *dy0 = cmp_in(c, n, ch, h, h, -1, 1);
    pair *gamma = cmp_in(c, 1, ch, 1, 1, g_lo, g_hi), *beta = cmp_in(c, 1, ch, 1, 1, -0.5f, 0.5f);
    pair *rmean = cmp_in(c, 1, ch, 1, 1, -0.2f, 0.2f), *rvar = cmp_in(c, 1, ch, 1, 1, 0.5f, 1.5f);
    pair *y = cmp_out(c, n, ch, h, h), *ws = cmp_out(c, n, ch, h, h);
    pair *sm = cmp_out(c, 1, ch, 1, 1), *si = cmp_out(c, 1, ch, 1, 1);
    pair *dx = cmp_out(c, n, ch, h, h);
    pair *dg = cmp_out(c, 1, ch, 1, 1), *db = cmp_out(c, 1, ch, 1, 1);
    nas_tensor *x = in_own_layout(c->be, D(x0)), *dy = in_own_layout(c->be, D(dy0));
    BOTH(c,
         nas_batchnorm_act_fwd_train(c->ref, fn, R(x0), R(gamma), R(beta), R(y), R(ws), R(sm),
                                     R(si), R(rmean), R(rvar), momentum, eps),
         nas_batchnorm_act_fwd_train(c->be, fn, x, D(gamma), D(beta), D(y), D(ws), D(sm), D(si),
                                     D(rmean), D(rvar), momentum, eps));
    bn_train_check(c, y, sm, si, rmean, rvar);
    BOTH(c,
         nas_batchnorm_act_bwd(c->ref, fn, R(x0), R(ws), R(dy0), R(gamma), R(sm), R(si), R(dx),
                               R(dg), R(db)),
         nas_batchnorm_act_bwd(c->be, fn, x, D(ws), dy, D(gamma), D(sm), D(si), D(dx), D(dg),
                               D(db)));
    cmp_check(c, dx, "bwd dx", TOL_BN_BWD);
    cmp_check(c, dg, "bwd dgamma", TOL_BN_BWD);
    cmp_check(c, db, "bwd dbeta", TOL_BN_BWD);
    nas_tensor_destroy(x);
    nas_tensor_destroy(dy);
    cmp_reset(c);
}

/* gamma in [0.5, 1.5): BN's outputs within about +-3 */
static void bn_act_one(cmp *c, int fn, int n, int ch, int h, float lo, float hi)
{
    bn_act_at(c, fn, n, ch, h, lo, hi, 0.5f, 1.5f);
}

static void test_batchnorm_act(void **state)
{
    cmp c;
    open_backends(state, &c, 3401);
    static const int fns[] = {NAS_FN_RELU, NAS_FN_RELU6, NAS_FN_HSWISH};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        bn_act_one(&c, fns[i], 3, 16, 7, -1, 3);   /* nChw16c */
        bn_act_one(&c, fns[i], 5, 48, 7, -1, 3);   /* three 16-channel blocks */
        bn_act_one(&c, fns[i], 3, 24, 14, -1, 3);  /* nChw8c */
        bn_act_one(&c, fns[i], 3, 5, 7, -1, 3);    /* plain */
        bn_act_one(&c, fns[i], 4, 16, 1, -1, 3);   /* after GAP: plain */
        bn_act_one(&c, fns[i], 2, 32, 5, 99.5f, 100.5f); /* mean far from 0 */
        bn_act_one(&c, fns[i], 3, 16, 7, -1, 3);   /* cached primitives again */
        /* gamma up to 5: BN's outputs reach past ReLU6's 6 and h-swish's +-3 */
        bn_act_at(&c, fns[i], 3, 16, 7, -1, 3, 2.5f, 5.0f);  /* nChw16c */
        bn_act_at(&c, fns[i], 3, 24, 14, -1, 3, 2.5f, 5.0f); /* nChw8c */
        bn_act_at(&c, fns[i], 3, 5, 7, -1, 3, 2.5f, 5.0f);   /* plain */
    }
    close_backends(&c, "batchnorm_act");
}

/* Issue 34: batch norm + activation fused with squeeze-and-excitation's
 * pool (forward) and its two gradients (backward), against ref running
 * the separate ops as the trainer's unfused steps do: nas_batchnorm_act_*
 * with nas_gap_fwd after the forward, and the activation's gradient
 * dy * s (nas_chscale_fwd on dy) + nas_gap_bwd(dpool), summed by
 * nas_axpy, before the backward. Returns 0 when the backend declines
 * (NAS_EUNSUPPORTED: optional op), 1 when it ran and agreed. */
static int bn_act_se_at(cmp *c, int fn, int n, int ch, int h, float g_lo, float g_hi)
{
    snprintf(c->label, sizeof c->label, "batchnorm_act_se %d x[%d,%d,%d,%d] gamma [%g, %g)", fn,
             n, ch, h, h, (double)g_lo, (double)g_hi);
    pair *x0 = cmp_in(c, n, ch, h, h, -1, 3), *dy0 = cmp_in(c, n, ch, h, h, -1, 1);
    pair *gamma = cmp_in(c, 1, ch, 1, 1, g_lo, g_hi), *beta = cmp_in(c, 1, ch, 1, 1, -0.5f, 0.5f);
    pair *rmean = cmp_in(c, 1, ch, 1, 1, -0.2f, 0.2f), *rvar = cmp_in(c, 1, ch, 1, 1, 0.5f, 1.5f);
    pair *s = cmp_in(c, n, ch, 1, 1, 0, 1), *dpool = cmp_in(c, n, ch, 1, 1, -1, 1);
    pair *y = cmp_out(c, n, ch, h, h), *ws = cmp_out(c, n, ch, h, h), *pool = cmp_out(c, n, ch, 1, 1);
    pair *sm = cmp_out(c, 1, ch, 1, 1), *si = cmp_out(c, 1, ch, 1, 1);
    pair *dx = cmp_out(c, n, ch, h, h), *g = cmp_out(c, n, ch, h, h), *gp = cmp_out(c, n, ch, h, h);
    pair *dg = cmp_out(c, 1, ch, 1, 1), *db = cmp_out(c, 1, ch, 1, 1);
    nas_tensor *x = in_own_layout(c->be, D(x0)), *dy = in_own_layout(c->be, D(dy0));
    int rc = nas_batchnorm_act_se_fwd_train(c->be, fn, x, D(gamma), D(beta), D(y), D(ws),
                                            D(pool), D(sm), D(si), D(rmean), D(rvar), 0.1f, 1e-5f);
    if (rc == NAS_EUNSUPPORTED) {
        nas_tensor_destroy(x);
        nas_tensor_destroy(dy);
        cmp_reset(c);
        return 0;
    }
    if (rc != NAS_OK)
        fail_msg("%s: %s (%s)", c->label, nas_err_name(rc), nas_backend_last_error(c->be));
    BOTH(c,
         nas_batchnorm_act_fwd_train(c->ref, fn, R(x0), R(gamma), R(beta), R(y), R(ws), R(sm),
                                     R(si), R(rmean), R(rvar), 0.1f, 1e-5f),
         nas_gap_fwd(c->ref, R(y), R(pool)));
    bn_train_check(c, y, sm, si, rmean, rvar);
    cmp_check(c, pool, "fwd pool", TOL_POOL);
    BOTH(c, nas_chscale_fwd(c->ref, R(dy0), R(s), R(g)), nas_gap_bwd(c->ref, R(dpool), R(gp)));
    BOTH(c, nas_axpy(c->ref, 1.0f, R(gp), R(g)),
         nas_batchnorm_act_bwd(c->ref, fn, R(x0), R(ws), R(g), R(gamma), R(sm), R(si), R(dx),
                               R(dg), R(db)));
    rc = nas_batchnorm_act_se_bwd(c->be, fn, x, D(ws), dy, D(s), D(dpool), D(gamma), D(sm),
                                  D(si), D(dx), D(dg), D(db));
    if (rc != NAS_OK)
        fail_msg("%s bwd: %s (%s)", c->label, nas_err_name(rc), nas_backend_last_error(c->be));
    cmp_check(c, dx, "bwd dx", TOL_BN_BWD);
    cmp_check(c, dg, "bwd dgamma", TOL_BN_BWD);
    cmp_check(c, db, "bwd dbeta", TOL_BN_BWD);
    nas_tensor_destroy(x);
    nas_tensor_destroy(dy);
    cmp_reset(c);
    return 1;
}

static void test_batchnorm_act_se(void **state)
{
    cmp c;
    open_backends(state, &c, 3402);
    static const int fns[] = {NAS_FN_RELU, NAS_FN_RELU6, NAS_FN_HSWISH};
    int ran = 0, cases = 0;
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        ran += bn_act_se_at(&c, fns[i], 3, 16, 7, 0.5f, 1.5f);  /* nChw16c / nChw8c */
        ran += bn_act_se_at(&c, fns[i], 5, 48, 7, 0.5f, 1.5f);  /* several blocks */
        ran += bn_act_se_at(&c, fns[i], 3, 24, 14, 0.5f, 1.5f); /* nChw8c, half blocks */
        ran += bn_act_se_at(&c, fns[i], 2, 40, 4, 2.5f, 5.0f);  /* past the clips */
        ran += bn_act_se_at(&c, fns[i], 3, 5, 7, 0.5f, 1.5f);   /* plain */
        cases += 5;
    }
    optional_done(&c, ran, cases, "batchnorm_act_se");
}

/* x comes out of a 1x1 convolution so the cpu backend holds it blocked
 * (nChw16c / nChw8c) when C allows: the scale must honour the layout. */
static void chscale_one(cmp *c, int n, int ch, int h)
{
    snprintf(c->label, sizeof c->label, "chscale x[%d,%d,%d,%d]", n, ch, h, h);
    pair *x0 = cmp_in(c, n, ch, h, h, -1, 1);
    pair *w = cmp_in(c, ch, ch, 1, 1, -1, 1);
    pair *x = cmp_out(c, n, ch, h, h);
    pair *s = cmp_in(c, n, ch, 1, 1, 0, 1);
    pair *dy = cmp_in(c, n, ch, h, h, -1, 1);
    pair *y = cmp_out(c, n, ch, h, h), *dx = cmp_out(c, n, ch, h, h);
    pair *ds = cmp_out(c, n, ch, 1, 1);
    BOTH(c, nas_conv2d_fwd(c->ref, R(x0), R(w), R(x), 1, 0),
         nas_conv2d_fwd(c->be, D(x0), D(w), D(x), 1, 0));
    BOTH(c, nas_chscale_fwd(c->ref, R(x), R(s), R(y)), nas_chscale_fwd(c->be, D(x), D(s), D(y)));
    cmp_check(c, y, "fwd", TOL_CONV);
    BOTH(c, nas_chscale_bwd(c->ref, R(x), R(s), R(dy), R(dx), R(ds)),
         nas_chscale_bwd(c->be, D(x), D(s), D(dy), D(dx), D(ds)));
    cmp_check(c, dx, "bwd dx", TOL_CHSCALE);
    cmp_check(c, ds, "bwd ds", TOL_CONV);
    cmp_reset(c);
}

static void test_chscale(void **state)
{
    cmp c;
    open_backends(state, &c, 1503);
    chscale_one(&c, 3, 16, 7);
    chscale_one(&c, 2, 24, 14);
    chscale_one(&c, 3, 5, 7);
    chscale_one(&c, 2, 32, 1);
    close_backends(&c, "chscale");
}

static void test_dropout(void **state)
{
    cmp c;
    open_backends(state, &c, 1504);
    const float ps[] = {0.0f, 0.2f, 0.5f};
    for (int i = 0; i < 3; i++) {
        snprintf(c.label, sizeof c.label, "dropout p %.1f", (double)ps[i]);
        pair *x = cmp_in(&c, 8, 64, 1, 1, -1, 1), *dy = cmp_in(&c, 8, 64, 1, 1, -1, 1);
        pair *y = cmp_out(&c, 8, 64, 1, 1), *dx = cmp_out(&c, 8, 64, 1, 1);
        BOTH(&c, nas_dropout_fwd(c.ref, R(x), R(y), ps[i], 77),
             nas_dropout_fwd(c.be, D(x), D(y), ps[i], 77));
        cmp_check(&c, y, "fwd", TOL_EXACT);
        BOTH(&c, nas_dropout_bwd(c.ref, R(dy), R(dx), ps[i], 77),
             nas_dropout_bwd(c.be, D(dy), D(dx), ps[i], 77));
        cmp_check(&c, dx, "bwd", TOL_EXACT);
        /* the fraction dropped is p (512 draws: within 0.07), and the
         * kept elements are scaled by 1/(1-p) */
        float *hx = dl(D(x)), *hy = dl(D(y));
        int zeros = 0;
        for (size_t j = 0; j < D(x)->count; j++) {
            if (hy[j] == 0.0f)
                zeros++;
            else
                assert_float_equal(hy[j], hx[j] / (1.0f - ps[i]), 1e-6);
        }
        assert_true(fabs((double)zeros / (double)D(x)->count - ps[i]) < 0.07);
        free(hx);
        free(hy);
        cmp_reset(&c);
    }
    /* another seed drops other elements */
    nas_tensor *x = mk(c.ref, 1, 256, 1, 1, NULL), *a = mk(c.ref, 1, 256, 1, 1, NULL),
               *b = mk(c.ref, 1, 256, 1, 1, NULL);
    float ones[256];
    for (int j = 0; j < 256; j++)
        ones[j] = 1.0f;
    up(x, ones);
    assert_int_equal(nas_dropout_fwd(c.ref, x, a, 0.5f, 1), NAS_OK);
    assert_int_equal(nas_dropout_fwd(c.ref, x, b, 0.5f, 2), NAS_OK);
    float *ha = dl(a), *hb = dl(b);
    assert_true(memcmp(ha, hb, sizeof ones) != 0);
    free(ha);
    free(hb);
    nas_tensor_destroy(x);
    nas_tensor_destroy(a);
    nas_tensor_destroy(b);
    close_backends(&c, "dropout");
}

/* ---- the ref oracle: backward ops against central finite differences ---------- */

/* L(param) = sum_i g_i * f(param)_i as a double; `eval` re-uploads the
 * perturbed host parameter and reruns the forward. */
typedef double (*eval_fn)(void *ctx);

static void fd_check(const char *what, eval_fn eval, void *ctx, float *param, size_t n,
                     const float *analytic, float h)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float save = param[i];
        float hi = save + h, lo = save - h;
        param[i] = hi;
        double lp = eval(ctx);
        param[i] = lo;
        double lm = eval(ctx);
        param[i] = save;
        double num = (lp - lm) / ((double)hi - (double)lo);
        if (!within(analytic[i], num, TOL_FD)) {
            if (bad < 3)
                printf("  fd %s[%zu]: analytic %.6g numeric %.6g\n", what, i,
                       (double)analytic[i], num);
            bad++;
        }
    }
    eval(ctx);
    if (bad)
        fail_msg("%s: %zu of %zu gradient elements disagree with finite differences", what,
                 bad, n);
}

static double dot_out(const nas_tensor *y, const float *g)
{
    float *o = dl(y);
    double s = 0;
    for (size_t i = 0; i < y->count; i++)
        s += (double)o[i] * g[i];
    free(o);
    return s;
}

typedef struct conv_fd {
    nas_tensor *x, *w, *y;
    float *hx, *hw, *g;
    int stride, pad;
} conv_fd;

static double conv_eval(void *p)
{
    conv_fd *c = p;
    up(c->x, c->hx);
    up(c->w, c->hw);
    assert_int_equal(nas_conv2d_fwd(c->x->be, c->x, c->w, c->y, c->stride, c->pad), NAS_OK);
    return dot_out(c->y, c->g);
}

static void test_ref_fd_conv(void **state)
{
    nas_backend *be = ref_open();
    nas_rng rng;
    nas_rng_seed(&rng, 11, 1);
    const conv_case cases[] = {{2, 3, 5, 4, 3, 1, 1}, {1, 2, 7, 3, 3, 2, 1},
                               {2, 3, 5, 2, 1, 2, 0}, {1, 2, 6, 2, 3, 2, 0}};
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        const conv_case *k = &cases[t];
        int ho = (k->h + 2 * k->pad - k->r) / k->stride + 1;
        conv_fd c = {0};
        c.stride = k->stride;
        c.pad = k->pad;
        c.x = mk(be, k->n, k->c, k->h, k->h, NULL);
        c.w = mk(be, k->k, k->c, k->r, k->r, NULL);
        c.y = mk(be, k->n, k->k, ho, ho, NULL);
        c.hx = rand_host(&rng, c.x->count, -1, 1);
        c.hw = rand_host(&rng, c.w->count, -1, 1);
        c.g = rand_host(&rng, c.y->count, -1, 1);
        nas_tensor *g = mk(be, k->n, k->k, ho, ho, c.g);
        nas_tensor *dx = mk(be, k->n, k->c, k->h, k->h, NULL);
        nas_tensor *dw = mk(be, k->k, k->c, k->r, k->r, NULL);
        conv_eval(&c);
        assert_int_equal(nas_conv2d_bwd_data(be, g, c.w, dx, k->stride, k->pad), NAS_OK);
        assert_int_equal(nas_conv2d_bwd_filter(be, c.x, g, dw, k->stride, k->pad), NAS_OK);
        float *adx = dl(dx), *adw = dl(dw);
        fd_check("conv dx", conv_eval, &c, c.hx, c.x->count, adx, 1e-2f);
        fd_check("conv dw", conv_eval, &c, c.hw, c.w->count, adw, 1e-2f);
        free(adx);
        free(adw);
        free(c.hx);
        free(c.hw);
        free(c.g);
        nas_tensor_destroy(c.x);
        nas_tensor_destroy(c.w);
        nas_tensor_destroy(c.y);
        nas_tensor_destroy(g);
        nas_tensor_destroy(dx);
        nas_tensor_destroy(dw);
    }
    nas_backend_destroy(be);
}

typedef struct bn_fd {
    nas_tensor *x, *gm, *bt, *y, *sm, *si, *rm, *rv;
    float *hx, *hg, *hb, *g;
} bn_fd;

static double bn_eval(void *p)
{
    bn_fd *c = p;
    up(c->x, c->hx);
    up(c->gm, c->hg);
    up(c->bt, c->hb);
    assert_int_equal(nas_batchnorm_fwd_train(c->x->be, c->x, c->gm, c->bt, c->y, c->sm, c->si,
                                             c->rm, c->rv, 0.1f, 1e-5f),
                     NAS_OK);
    return dot_out(c->y, c->g);
}

static void test_ref_fd_batchnorm(void **state)
{
    nas_backend *be = ref_open();
    nas_rng rng;
    nas_rng_seed(&rng, 12, 1);
    const int shapes[][3] = {{2, 3, 3}, {3, 2, 1}, {1, 2, 4}};
    for (int t = 0; t < 3; t++) {
        int n = shapes[t][0], ch = shapes[t][1], h = shapes[t][2];
        bn_fd c = {0};
        c.x = mk(be, n, ch, h, h, NULL);
        c.y = mk(be, n, ch, h, h, NULL);
        c.gm = mk(be, 1, ch, 1, 1, NULL);
        c.bt = mk(be, 1, ch, 1, 1, NULL);
        c.sm = mk(be, 1, ch, 1, 1, NULL);
        c.si = mk(be, 1, ch, 1, 1, NULL);
        c.rm = mk(be, 1, ch, 1, 1, NULL);
        c.rv = mk(be, 1, ch, 1, 1, NULL);
        assert_int_equal(nas_tensor_zero(c.rm), NAS_OK);
        assert_int_equal(nas_tensor_zero(c.rv), NAS_OK);
        c.hx = rand_host(&rng, c.x->count, -1, 2);
        c.hg = rand_host(&rng, (size_t)ch, 0.5f, 1.5f);
        c.hb = rand_host(&rng, (size_t)ch, -0.5f, 0.5f);
        c.g = rand_host(&rng, c.y->count, -1, 1);
        nas_tensor *g = mk(be, n, ch, h, h, c.g);
        nas_tensor *dx = mk(be, n, ch, h, h, NULL);
        nas_tensor *dg = mk(be, 1, ch, 1, 1, NULL), *db = mk(be, 1, ch, 1, 1, NULL);
        bn_eval(&c);
        assert_int_equal(nas_batchnorm_bwd(be, c.x, g, c.gm, c.sm, c.si, dx, dg, db), NAS_OK);
        float *adx = dl(dx), *adg = dl(dg), *adb = dl(db);
        fd_check("bn dx", bn_eval, &c, c.hx, c.x->count, adx, 1e-2f);
        fd_check("bn dgamma", bn_eval, &c, c.hg, (size_t)ch, adg, 1e-2f);
        fd_check("bn dbeta", bn_eval, &c, c.hb, (size_t)ch, adb, 1e-2f);
        free(adx);
        free(adg);
        free(adb);
        free(c.hx);
        free(c.hg);
        free(c.hb);
        free(c.g);
        nas_tensor *all[] = {c.x, c.y, c.gm, c.bt, c.sm, c.si, c.rm, c.rv, g, dx, dg, db};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            nas_tensor_destroy(all[i]);
    }
    nas_backend_destroy(be);
}

/* Single-input ops: relu, avgpool, gap. */
typedef struct unary_fd {
    nas_tensor *x, *y;
    float *hx, *g;
    int op; /* 0 relu, 1 avgpool, 2 gap */
    int k, stride, pad;
} unary_fd;

static double unary_eval(void *p)
{
    unary_fd *c = p;
    nas_backend *be = c->x->be;
    up(c->x, c->hx);
    int rc = c->op == 0   ? nas_relu_fwd(be, c->x, c->y)
             : c->op == 1 ? nas_avgpool_fwd(be, c->x, c->y, c->k, c->stride, c->pad)
                          : nas_gap_fwd(be, c->x, c->y);
    assert_int_equal(rc, NAS_OK);
    return dot_out(c->y, c->g);
}

static void unary_case(nas_backend *be, nas_rng *rng, int op, int n, int ch, int h, int k,
                       int s, int p)
{
    int ho = op == 0 ? h : op == 1 ? (h + 2 * p - k) / s + 1 : 1;
    unary_fd c = {0};
    c.op = op;
    c.k = k;
    c.stride = s;
    c.pad = p;
    c.x = mk(be, n, ch, h, h, NULL);
    c.y = mk(be, n, ch, ho, ho, NULL);
    c.hx = rand_host(rng, c.x->count, -1, 1);
    if (op == 0) /* keep ReLU inputs away from the kink at 0 */
        for (size_t i = 0; i < c.x->count; i++)
            c.hx[i] += c.hx[i] >= 0 ? 0.1f : -0.1f;
    c.g = rand_host(rng, c.y->count, -1, 1);
    nas_tensor *g = mk(be, n, ch, ho, ho, c.g), *dx = mk(be, n, ch, h, h, NULL);
    unary_eval(&c);
    int rc = op == 0   ? nas_relu_bwd(be, c.x, g, dx)
             : op == 1 ? nas_avgpool_bwd(be, g, dx, k, s, p)
                       : nas_gap_bwd(be, g, dx);
    assert_int_equal(rc, NAS_OK);
    float *adx = dl(dx);
    fd_check(op == 0 ? "relu dx" : op == 1 ? "avgpool dx" : "gap dx", unary_eval, &c, c.hx,
             c.x->count, adx, 1e-2f);
    free(adx);
    free(c.hx);
    free(c.g);
    nas_tensor_destroy(c.x);
    nas_tensor_destroy(c.y);
    nas_tensor_destroy(g);
    nas_tensor_destroy(dx);
}

static void test_ref_fd_unary(void **state)
{
    nas_backend *be = ref_open();
    nas_rng rng;
    nas_rng_seed(&rng, 13, 1);
    unary_case(be, &rng, 0, 2, 3, 4, 0, 0, 0);
    unary_case(be, &rng, 1, 2, 2, 5, 3, 1, 1);
    unary_case(be, &rng, 1, 1, 2, 7, 2, 2, 0);
    unary_case(be, &rng, 1, 1, 2, 7, 3, 2, 1);
    unary_case(be, &rng, 2, 2, 3, 5, 0, 0, 0);
    nas_backend_destroy(be);
}

typedef struct lin_fd {
    nas_tensor *x, *w, *b, *y;
    float *hx, *hw, *hb, *g;
} lin_fd;

static double lin_eval(void *p)
{
    lin_fd *c = p;
    up(c->x, c->hx);
    up(c->w, c->hw);
    up(c->b, c->hb);
    assert_int_equal(nas_linear_fwd(c->x->be, c->x, c->w, c->b, c->y), NAS_OK);
    return dot_out(c->y, c->g);
}

static void test_ref_fd_linear(void **state)
{
    nas_backend *be = ref_open();
    nas_rng rng;
    nas_rng_seed(&rng, 14, 1);
    const int n = 3, k = 5, m = 4;
    lin_fd c = {0};
    c.x = mk(be, n, k, 1, 1, NULL);
    c.w = mk(be, m, k, 1, 1, NULL);
    c.b = mk(be, 1, m, 1, 1, NULL);
    c.y = mk(be, n, m, 1, 1, NULL);
    c.hx = rand_host(&rng, c.x->count, -1, 1);
    c.hw = rand_host(&rng, c.w->count, -1, 1);
    c.hb = rand_host(&rng, c.b->count, -1, 1);
    c.g = rand_host(&rng, c.y->count, -1, 1);
    nas_tensor *g = mk(be, n, m, 1, 1, c.g), *dx = mk(be, n, k, 1, 1, NULL);
    nas_tensor *dw = mk(be, m, k, 1, 1, NULL), *db = mk(be, 1, m, 1, 1, NULL);
    lin_eval(&c);
    assert_int_equal(nas_linear_bwd(be, c.x, c.w, g, dx, dw, db), NAS_OK);
    float *adx = dl(dx), *adw = dl(dw), *adb = dl(db);
    fd_check("linear dx", lin_eval, &c, c.hx, c.x->count, adx, 1e-2f);
    fd_check("linear dw", lin_eval, &c, c.hw, c.w->count, adw, 1e-2f);
    fd_check("linear db", lin_eval, &c, c.hb, c.b->count, adb, 1e-2f);
    free(adx);
    free(adw);
    free(adb);
    free(c.hx);
    free(c.hw);
    free(c.hb);
    free(c.g);
    nas_tensor *all[] = {c.x, c.w, c.b, c.y, g, dx, dw, db};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        nas_tensor_destroy(all[i]);
    nas_backend_destroy(be);
}

typedef struct xent_fd {
    nas_tensor *lg, *lb;
    float *hl;
} xent_fd;

static double xent_eval(void *p)
{
    xent_fd *c = p;
    up(c->lg, c->hl);
    float loss;
    int correct;
    assert_int_equal(nas_softmax_xent(c->lg->be, c->lg, c->lb, NULL, &loss, &correct), NAS_OK);
    return loss;
}

static void test_ref_fd_softmax_xent(void **state)
{
    nas_backend *be = ref_open();
    nas_rng rng;
    nas_rng_seed(&rng, 15, 1);
    const int n = 3, k = 5;
    float hlab[3] = {4, 0, 2};
    xent_fd c = {0};
    c.lg = mk(be, n, k, 1, 1, NULL);
    c.lb = mk(be, n, 1, 1, 1, hlab);
    c.hl = rand_host(&rng, c.lg->count, -2, 2);
    nas_tensor *d = mk(be, n, k, 1, 1, NULL);
    up(c.lg, c.hl);
    float loss;
    int correct;
    assert_int_equal(nas_softmax_xent(be, c.lg, c.lb, d, &loss, &correct), NAS_OK);
    float *ad = dl(d);
    fd_check("softmax_xent dlogits", xent_eval, &c, c.hl, c.lg->count, ad, 1e-2f);
    free(ad);
    free(c.hl);
    nas_tensor_destroy(c.lg);
    nas_tensor_destroy(c.lb);
    nas_tensor_destroy(d);
    nas_backend_destroy(be);
}

/* ---- host GEMM -------------------------------------------------------------------- */

static void test_host_sgemm(void **state)
{
    nas_rng rng;
    nas_rng_seed(&rng, 16, 1);
    const int m = 5, n = 7, k = 3;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            /* stored shapes: A is m x k (or k x m), B is k x n (or n x k); pad rows */
            int arows = ta ? k : m, acols = ta ? m : k, brows = tb ? n : k, bcols = tb ? k : n;
            int lda = acols + 2, ldb = bcols + 1, ldc = n + 3;
            float *a = rand_host(&rng, (size_t)arows * lda, -1, 1);
            float *b = rand_host(&rng, (size_t)brows * ldb, -1, 1);
            float *c = rand_host(&rng, (size_t)m * ldc, -1, 1);
            float *c0 = malloc((size_t)m * ldc * sizeof *c0);
            assert_non_null(c0);
            memcpy(c0, c, (size_t)m * ldc * sizeof *c0);
            const float alpha = 0.75f, beta = -0.5f;
            nas_host_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
            for (int i = 0; i < m; i++) {
                for (int j = 0; j < n; j++) {
                    double s = 0;
                    for (int p = 0; p < k; p++) {
                        double av = ta ? a[p * lda + i] : a[i * lda + p];
                        double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
                        s += av * bv;
                    }
                    double want = alpha * s + beta * c0[i * ldc + j];
                    if (fabs(c[i * ldc + j] - want) > 1e-5 + 1e-5 * fabs(want))
                        fail_msg("sgemm ta=%d tb=%d C[%d,%d] = %g, want %g", ta, tb, i, j,
                                 (double)c[i * ldc + j], want);
                }
                for (int j = n; j < ldc; j++) /* padding columns untouched */
                    assert_true(c[i * ldc + j] == c0[i * ldc + j]);
            }
            free(a);
            free(b);
            free(c);
            free(c0);
        }
}

static void test_registry(void **state)
{
    nas_backend *be = (nas_backend *)0x1;
    nas_error err = {0};
    assert_int_equal(nas_backend_create("tpu", 1, 0, &be, &err), NAS_ENOTFOUND);
    assert_null(be);
    assert_true(strstr(err.msg, "tpu") != NULL);
    const char *const *names = nas_backend_compiled();
    int has_ref = 0, has_cpu = 0;
    for (int i = 0; names[i]; i++) {
        has_ref |= strcmp(names[i], "ref") == 0;
        has_cpu |= strcmp(names[i], "cpu") == 0;
    }
    assert_true(has_ref && has_cpu);
    nas_backend_destroy(NULL);
    nas_tensor_destroy(NULL);
}


/* ---- issue 15: finite differences of the chain-network ops (ref) ------------------ */

typedef struct chain_fd {
    int op; /* 0 gconv, 1 act, 2 chscale, 3 dropout */
    int fn, stride, pad, groups;
    nas_tensor *x, *w, *y; /* w: conv weights or the scale s */
    float *hx, *hw, *g;
} chain_fd;

static double chain_eval(void *p)
{
    chain_fd *c = p;
    nas_backend *be = c->x->be;
    up(c->x, c->hx);
    if (c->w)
        up(c->w, c->hw);
    int rc = c->op == 0   ? nas_gconv2d_fwd(be, c->x, c->w, c->y, c->stride, c->pad, c->groups)
             : c->op == 1 ? nas_act_fwd(be, c->fn, c->x, c->y)
             : c->op == 2 ? nas_chscale_fwd(be, c->x, c->w, c->y)
                          : nas_dropout_fwd(be, c->x, c->y, 0.3f, 5);
    assert_int_equal(rc, NAS_OK);
    return dot_out(c->y, c->g);
}

static void chain_fd_free(chain_fd *c)
{
    free(c->hx);
    free(c->hw);
    free(c->g);
    nas_tensor_destroy(c->x);
    nas_tensor_destroy(c->w);
    nas_tensor_destroy(c->y);
}

static void test_ref_fd_gconv(void **state)
{
    nas_backend *be = ref_open();
    nas_rng rng;
    nas_rng_seed(&rng, 15, 1);
    const gconv_case cases[] = {{2, 4, 6, 4, 3, 1, 4}, {1, 3, 7, 3, 5, 2, 3},
                                {1, 2, 7, 2, 7, 1, 2}, {2, 4, 5, 6, 3, 2, 2}};
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        const gconv_case *k = &cases[t];
        chain_fd c = {0};
        c.stride = k->stride;
        c.pad = k->r / 2;
        c.groups = k->groups;
        int ho = (k->h + 2 * c.pad - k->r) / k->stride + 1, cg = k->c / k->groups;
        c.x = mk(be, k->n, k->c, k->h, k->h, NULL);
        c.w = mk(be, k->k, cg, k->r, k->r, NULL);
        c.y = mk(be, k->n, k->k, ho, ho, NULL);
        c.hx = rand_host(&rng, c.x->count, -1, 1);
        c.hw = rand_host(&rng, c.w->count, -1, 1);
        c.g = rand_host(&rng, c.y->count, -1, 1);
        nas_tensor *g = mk(be, k->n, k->k, ho, ho, c.g);
        nas_tensor *dx = mk(be, k->n, k->c, k->h, k->h, NULL), *dw = mk(be, k->k, cg, k->r, k->r, NULL);
        chain_eval(&c);
        assert_int_equal(nas_gconv2d_bwd_data(be, g, c.w, dx, c.stride, c.pad, c.groups), NAS_OK);
        assert_int_equal(nas_gconv2d_bwd_filter(be, c.x, g, dw, c.stride, c.pad, c.groups),
                         NAS_OK);
        float *adx = dl(dx), *adw = dl(dw);
        fd_check("gconv dx", chain_eval, &c, c.hx, c.x->count, adx, 1e-2f);
        fd_check("gconv dw", chain_eval, &c, c.hw, c.w->count, adw, 1e-2f);
        free(adx);
        free(adw);
        nas_tensor_destroy(g);
        nas_tensor_destroy(dx);
        nas_tensor_destroy(dw);
        chain_fd_free(&c);
    }
    nas_backend_destroy(be);
}

/* activations (inputs kept 0.05 away from the kinks at -3, 0, 3, 6),
 * channel scale (dx and ds) and dropout */
static void test_ref_fd_chain_elem(void **state)
{
    nas_backend *be = ref_open();
    nas_rng rng;
    nas_rng_seed(&rng, 16, 1);
    for (int op = 1; op <= 3; op++)
        for (int fn = 0; fn <= (op == 1 ? NAS_FN_SIGMOID : 0); fn++) {
            chain_fd c = {0};
            c.op = op;
            c.fn = fn;
            c.x = mk(be, 2, 3, 4, 4, NULL);
            c.y = mk(be, 2, 3, 4, 4, NULL);
            c.hx = rand_host(&rng, c.x->count, -8, 8);
            static const float kinks[] = {-3.0f, 0.0f, 3.0f, 6.0f};
            for (size_t i = 0; i < c.x->count; i++)
                for (int j = 0; j < 4; j++)
                    if (fabsf(c.hx[i] - kinks[j]) < 0.05f)
                        c.hx[i] = kinks[j] + 0.1f;
            if (op == 2) {
                c.w = mk(be, 2, 3, 1, 1, NULL);
                c.hw = rand_host(&rng, c.w->count, -1, 1);
            }
            c.g = rand_host(&rng, c.y->count, -1, 1);
            nas_tensor *g = mk(be, 2, 3, 4, 4, c.g), *dx = mk(be, 2, 3, 4, 4, NULL);
            nas_tensor *ds = mk(be, 2, 3, 1, 1, NULL);
            chain_eval(&c);
            int rc = op == 1   ? nas_act_bwd(be, fn, c.x, g, dx)
                     : op == 2 ? nas_chscale_bwd(be, c.x, c.w, g, dx, ds)
                               : nas_dropout_bwd(be, g, dx, 0.3f, 5);
            assert_int_equal(rc, NAS_OK);
            float *adx = dl(dx);
            char what[32];
            snprintf(what, sizeof what, "%s dx", op == 1 ? "act" : op == 2 ? "chscale" : "dropout");
            fd_check(what, chain_eval, &c, c.hx, c.x->count, adx, 1e-2f);
            if (op == 2) {
                float *ads = dl(ds);
                fd_check("chscale ds", chain_eval, &c, c.hw, c.w->count, ads, 1e-2f);
                free(ads);
            }
            free(adx);
            nas_tensor_destroy(g);
            nas_tensor_destroy(dx);
            nas_tensor_destroy(ds);
            chain_fd_free(&c);
        }
    nas_backend_destroy(be);
}

/* ---- runner: fixed tests plus one group per compiled backend --------------------- */

typedef struct per_backend {
    const char *what;
    CMUnitTestFunction fn;
} per_backend;

static const per_backend per_backend_tests[] = {
    {"conv", test_conv},
    {"conv_bias", test_conv_bias},
    {"conv_fused", test_conv_fused},
    {"conv_fused_add", test_conv_fused_add},
    {"batchnorm", test_batchnorm},
    {"batchnorm_act", test_batchnorm_act},
    {"batchnorm_act_se", test_batchnorm_act_se},
    {"relu", test_relu},
    {"pool", test_pool},
    {"linear", test_linear},
    {"elementwise", test_elementwise},
    {"softmax_xent", test_softmax_xent},
    {"sgd_formula", test_sgd_formula},
    {"shape_errors", test_shape_errors},
    {"gconv", test_gconv},
    {"threads_bitwise", test_threads_bitwise},
    {"linear_threads_bitwise", test_linear_threads_bitwise},
    {"act", test_act},
    {"chscale", test_chscale},
    {"dropout", test_dropout},
};

int main(void)
{
    static const struct CMUnitTest fixed[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_ref_conv_known),
        cmocka_unit_test(test_ref_pool_known),
        cmocka_unit_test(test_ref_bn_known),
        cmocka_unit_test(test_ref_xent_known),
        cmocka_unit_test(test_ref_fd_conv),
        cmocka_unit_test(test_ref_fd_batchnorm),
        cmocka_unit_test(test_ref_fd_unary),
        cmocka_unit_test(test_ref_fd_linear),
        cmocka_unit_test(test_ref_fd_softmax_xent),
        cmocka_unit_test(test_host_sgemm),
        cmocka_unit_test(test_ref_fd_gconv),
        cmocka_unit_test(test_ref_fd_chain_elem),
    };
    const size_t nfixed = sizeof fixed / sizeof fixed[0];
    const size_t nper = sizeof per_backend_tests / sizeof per_backend_tests[0];
    const char *const *names = nas_backend_compiled();
    size_t nb = 0;
    while (names[nb])
        nb++;
    size_t total = nfixed + nb * nper;
    struct CMUnitTest *tests = calloc(total, sizeof *tests);
    char(*labels)[64] = calloc(total, sizeof *labels);
    if (!tests || !labels)
        return 1;
    memcpy(tests, fixed, sizeof fixed);
    size_t t = nfixed;
    for (size_t b = 0; b < nb; b++)
        for (size_t i = 0; i < nper; i++, t++) {
            snprintf(labels[t], sizeof labels[t], "%s/%s", names[b], per_backend_tests[i].what);
            tests[t].name = labels[t];
            tests[t].test_func = per_backend_tests[i].fn;
            tests[t].initial_state = (void *)names[b];
        }
    int failed = _cmocka_run_group_tests("ops", tests, total, NULL, NULL);
    free(tests);
    free(labels);
    return failed ? 1 : 0;
}
