/*
 * tests/conformance/test_lane_bits.c - the cpu backend's channel-blocked
 * kernels that sum or scale a block's channels side by side in vectors
 * (training batch norm's statistics, nas__cpu_bn_stats; global average
 * pooling; the SE channel scale) give the plain NCHW loop's results bit
 * for bit: each vector lane does the scalar loop's operations in its
 * order. The same data in plain and in blocked layout must give equal
 * bytes, not merely close values: a supernet's subnet accuracies are
 * compared across versions (issue 32) and must not move when a kernel
 * gets faster. The kernels are also called directly with every block
 * width (1, 8, 16) and 1 or 2 threads, so that the nChw16c code, which the
 * backend runs only on AVX-512 hosts, is checked on every host.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "nas/backend.h"
#include "nas/rng.h"
#include "trainer/backend_impl.h" /* nas__cpu_bn_stats, _bn_act_*, _chscale_* */

/* x[n, c, hw] plain -> blocked by b: element (i, ch, s) at
 * ((i * c/b + ch/b) * hw + s) * b + ch % b. */
static void to_blocked(const float *x, int n, int c, int hw, int b, float *out)
{
    for (int i = 0; i < n; i++)
        for (int ch = 0; ch < c; ch++)
            for (int s = 0; s < hw; s++)
                out[(((size_t)i * (c / b) + ch / b) * hw + s) * b + ch % b] =
                    x[((size_t)i * c + ch) * hw + s];
}

static void test_bn_stats_bits(void **state)
{
    (void)state;
    nas_rng r;
    nas_rng_seed(&r, 7, 1);
    const int cs[] = {8, 16, 24, 48}, n = 3, hw = 7 * 7;
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        const int c = cs[k];
        const size_t count = (size_t)n * c * hw;
        float *x = malloc(count * sizeof *x), *xb = malloc(count * sizeof *xb);
        float m1[48], v1[48], mb[48], vb[48];
        assert_non_null(x);
        assert_non_null(xb);
        for (size_t i = 0; i < count; i++) /* mean far from 0 for some channels */
            x[i] = (i / hw) % 3 == 0 ? 99.5f + nas_rng_uniform(&r) : 2.0f * nas_rng_uniform(&r) - 1;
        nas__cpu_bn_stats(x, n, c, hw, 1, m1, v1, 1);
        for (int b = 8; b <= 16; b += 8) {
            if (c % b)
                continue;
            to_blocked(x, n, c, hw, b, xb);
            for (int nthr = 1; nthr <= 2; nthr++) {
                nas__cpu_bn_stats(xb, n, c, hw, b, mb, vb, nthr);
                if (memcmp(m1, mb, (size_t)c * sizeof *mb) || memcmp(v1, vb, (size_t)c * sizeof *vb))
                    fail_msg("bn statistics of %d channels: block %d (%d threads) differs from "
                             "plain", c, b, nthr);
            }
        }
        free(x);
        free(xb);
    }
}

static nas_tensor *upload(nas_backend *be, int n, int c, int h, int w, const float *host)
{
    nas_tensor *t = NULL;
    assert_int_equal(nas_tensor_create(be, n, c, h, w, &t), NAS_OK);
    assert_int_equal(nas_tensor_upload(t, host, t->count), NAS_OK);
    return t;
}

static void download_eq(const nas_tensor *a, const nas_tensor *b, const char *what, int c)
{
    float *ha = malloc(a->count * sizeof *ha), *hb = malloc(b->count * sizeof *hb);
    assert_non_null(ha);
    assert_non_null(hb);
    assert_int_equal(a->count, b->count);
    assert_int_equal(nas_tensor_download(a, ha, a->count), NAS_OK);
    assert_int_equal(nas_tensor_download(b, hb, b->count), NAS_OK);
    if (memcmp(ha, hb, a->count * sizeof *ha))
        fail_msg("%s of %d channels: the blocked input gives other bits than the plain one",
                 what, c);
    free(ha);
    free(hb);
}

/* x plain (uploaded) and the same values blocked (an identity 1x1
 * convolution's output, exact: one product by 1, the rest by 0). */
static void gap_chscale_one(nas_backend *be, nas_rng *r, int c)
{
    const int n = 3, h = 7;
    const size_t count = (size_t)n * c * h * h;
    float *hx = malloc(count * sizeof *hx), *hw = calloc((size_t)c * c, sizeof *hw),
          *hs = malloc((size_t)n * c * sizeof *hs);
    assert_non_null(hx);
    assert_non_null(hw);
    assert_non_null(hs);
    for (size_t i = 0; i < count; i++)
        hx[i] = 4.0f * nas_rng_uniform(r) - 2.0f;
    for (int i = 0; i < c; i++)
        hw[(size_t)i * c + i] = 1.0f;
    for (int i = 0; i < n * c; i++)
        hs[i] = nas_rng_uniform(r);
    nas_tensor *x = upload(be, n, c, h, h, hx), *w = upload(be, c, c, 1, 1, hw),
               *s = upload(be, n, c, 1, 1, hs), *xb = NULL, *g1 = NULL, *g2 = NULL, *y1 = NULL,
               *y2 = NULL;
    assert_int_equal(nas_tensor_create(be, n, c, h, h, &xb), NAS_OK);
    assert_int_equal(nas_conv2d_fwd(be, x, w, xb, 1, 0), NAS_OK);
    assert_int_not_equal(xb->layout, x->layout); /* the case under test: blocked vs plain */
    download_eq(x, xb, "identity convolution", c);
    assert_int_equal(nas_tensor_create(be, n, c, 1, 1, &g1), NAS_OK);
    assert_int_equal(nas_tensor_create(be, n, c, 1, 1, &g2), NAS_OK);
    assert_int_equal(nas_gap_fwd(be, x, g1), NAS_OK);
    assert_int_equal(nas_gap_fwd(be, xb, g2), NAS_OK);
    download_eq(g1, g2, "gap", c);
    assert_int_equal(nas_tensor_create(be, n, c, h, h, &y1), NAS_OK);
    assert_int_equal(nas_tensor_create(be, n, c, h, h, &y2), NAS_OK);
    assert_int_equal(nas_chscale_fwd(be, x, s, y1), NAS_OK);
    assert_int_equal(nas_chscale_fwd(be, xb, s, y2), NAS_OK);
    download_eq(y1, y2, "chscale", c);
    nas_tensor *all[] = {x, w, s, xb, g1, g2, y1, y2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        nas_tensor_destroy(all[i]);
    free(hx);
    free(hw);
    free(hs);
}

static void test_gap_chscale_bits(void **state)
{
    (void)state;
    nas_backend *be = NULL;
    nas_error err = {0};
    assert_int_equal(nas_backend_create("cpu", 1, 0, &be, &err), NAS_OK);
    nas_rng r;
    nas_rng_seed(&r, 9, 2);
    gap_chscale_one(be, &r, 16);
    gap_chscale_one(be, &r, 24);
    gap_chscale_one(be, &r, 32);
    nas_backend_destroy(be);
}

/* Plain x[n, c, hw] -> its block-b layout (b = 1: a copy), in a new buffer. */
static float *blocked_copy(const float *x, int n, int c, int hw, int b)
{
    float *out = malloc((size_t)n * c * hw * sizeof *out);
    assert_non_null(out);
    to_blocked(x, n, c, hw, b, out);
    return out;
}

/* Fails unless a (plain) and the block-b buffer got hold the same bytes. */
static void blocked_eq(const float *a, const float *got, int n, int c, int hw, int b,
                       const char *what, int nthr)
{
    float *want = blocked_copy(a, n, c, hw, b);
    if (memcmp(want, got, (size_t)n * c * hw * sizeof *want))
        fail_msg("%s of %d channels: block %d (%d threads) differs from plain", what, c, b, nthr);
    free(want);
}

static void fill(nas_rng *r, float *x, size_t count, float lo, float hi)
{
    for (size_t i = 0; i < count; i++)
        x[i] = lo + (hi - lo) * nas_rng_uniform(r);
}

/* SE's channel scale, nas__cpu_chscale_fwd / _bwd: y, dx and ds of every
 * block width equal the plain kernel's bytes. */
static void test_chscale_kernel_bits(void **state)
{
    (void)state;
    nas_rng r;
    nas_rng_seed(&r, 11, 3);
    const int cs[] = {16, 48}, n = 3, hw = 5 * 5;
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        const int c = cs[k];
        const size_t count = (size_t)n * c * hw, nc = (size_t)n * c;
        float *x = malloc(count * sizeof *x), *dy = malloc(count * sizeof *dy),
              *y = malloc(count * sizeof *y), *dx = malloc(count * sizeof *dx),
              *s = malloc(nc * sizeof *s), *ds = malloc(nc * sizeof *ds),
              *yb = malloc(count * sizeof *yb), *dxb = malloc(count * sizeof *dxb),
              *dsb = malloc(nc * sizeof *dsb);
        assert_non_null(x && dy && y && dx && s && ds && yb && dxb && dsb);
        fill(&r, x, count, -2.0f, 2.0f);
        fill(&r, dy, count, -1.0f, 1.0f);
        fill(&r, s, nc, 0.0f, 1.0f);
        assert_int_equal(nas__cpu_chscale_fwd(x, s, y, n, c, (size_t)hw, 1, 1), 0);
        assert_int_equal(nas__cpu_chscale_bwd(x, s, dy, dx, ds, n, c, (size_t)hw, 1, 1), 0);
        for (int b = 8; b <= 16; b += 8)
            for (int nthr = 1; nthr <= 2; nthr++) {
                float *xb = blocked_copy(x, n, c, hw, b), *dyb = blocked_copy(dy, n, c, hw, b);
                assert_int_equal(nas__cpu_chscale_fwd(xb, s, yb, n, c, (size_t)hw, b, nthr), 0);
                blocked_eq(y, yb, n, c, hw, b, "chscale y", nthr);
                assert_int_equal(
                    nas__cpu_chscale_bwd(xb, s, dyb, dxb, dsb, n, c, (size_t)hw, b, nthr), 0);
                blocked_eq(dx, dxb, n, c, hw, b, "chscale dx", nthr);
                if (memcmp(ds, dsb, nc * sizeof *ds))
                    fail_msg("chscale ds of %d channels: block %d (%d threads) differs from "
                             "plain", c, b, nthr);
                free(xb);
                free(dyb);
            }
        float *all[] = {x, dy, y, dx, s, ds, yb, dxb, dsb};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            free(all[i]);
    }
}

/* Training batch norm + activation, nas__cpu_bn_act_fwd / _bwd (with and
 * without SE's pool and gradients): every output of every block width and
 * thread count equals the plain kernel's bytes. */
static void bn_act_bits_one(nas_rng *r, int fn, int c, int se)
{
    const int n = 3, hw = 6 * 6;
    const size_t count = (size_t)n * c * hw, nc = (size_t)n * c;
    enum { CMAX = 48 };
    assert_true(c <= CMAX);
    float *x = malloc(count * sizeof *x), *dy = malloc(count * sizeof *dy),
          *y = malloc(count * sizeof *y), *dx = malloc(count * sizeof *dx),
          *yb = malloc(count * sizeof *yb), *dxb = malloc(count * sizeof *dxb),
          *s = malloc(nc * sizeof *s), *dpool = malloc(nc * sizeof *dpool),
          *pool = malloc(nc * sizeof *pool), *poolb = malloc(nc * sizeof *poolb);
    assert_non_null(x && dy && y && dx && yb && dxb && s && dpool && pool && poolb);
    float gamma[CMAX], beta[CMAX], mean[CMAX], var[CMAX], inv[CMAX], dg[CMAX], db[CMAX];
    float meanb[CMAX], varb[CMAX], invb[CMAX], dgb[CMAX], dbb[CMAX];
    fill(r, x, count, -3.0f, 5.0f);
    fill(r, dy, count, -1.0f, 1.0f);
    fill(r, s, nc, 0.0f, 1.0f);
    fill(r, dpool, nc, -1.0f, 1.0f);
    fill(r, gamma, (size_t)c, 0.5f, 2.5f);
    fill(r, beta, (size_t)c, -1.0f, 1.0f);
    const float *bt = fn == NAS__BN_IDENTITY ? NULL : beta;
    assert_int_equal(nas__cpu_bn_act_fwd(fn, x, gamma, beta, y, se ? pool : NULL, mean, var, inv,
                                         n, c, (size_t)hw, 1, 1e-5f, 1),
                     0);
    assert_int_equal(nas__cpu_bn_act_bwd(fn, x, dy, se ? s : NULL, se ? dpool : NULL, gamma, bt,
                                         mean, inv, dx, dg, db, n, c, (size_t)hw, 1, 1),
                     0);
    for (int b = 8; b <= 16; b += 8) {
        if (c % b)
            continue;
        for (int nthr = 1; nthr <= 2; nthr++) {
            float *xb = blocked_copy(x, n, c, hw, b), *dyb = blocked_copy(dy, n, c, hw, b);
            assert_int_equal(nas__cpu_bn_act_fwd(fn, xb, gamma, beta, yb, se ? poolb : NULL,
                                                 meanb, varb, invb, n, c, (size_t)hw, b, 1e-5f,
                                                 nthr),
                             0);
            blocked_eq(y, yb, n, c, hw, b, "bn_act y", nthr);
            if (memcmp(mean, meanb, (size_t)c * sizeof *mean) ||
                memcmp(var, varb, (size_t)c * sizeof *var) ||
                memcmp(inv, invb, (size_t)c * sizeof *inv) ||
                (se && memcmp(pool, poolb, nc * sizeof *pool)))
                fail_msg("bn_act fn %d statistics or pool of %d channels: block %d (%d threads) "
                         "differ from plain", fn, c, b, nthr);
            assert_int_equal(nas__cpu_bn_act_bwd(fn, xb, dyb, se ? s : NULL, se ? dpool : NULL,
                                                 gamma, bt, meanb, invb, dxb, dgb, dbb, n, c,
                                                 (size_t)hw, b, nthr),
                             0);
            blocked_eq(dx, dxb, n, c, hw, b, "bn_act dx", nthr);
            if (memcmp(dg, dgb, (size_t)c * sizeof *dg) || memcmp(db, dbb, (size_t)c * sizeof *db))
                fail_msg("bn_act fn %d dgamma / dbeta of %d channels: block %d (%d threads) "
                         "differ from plain", fn, c, b, nthr);
            free(xb);
            free(dyb);
        }
    }
    float *all[] = {x, dy, y, dx, yb, dxb, s, dpool, pool, poolb};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
}

static void test_bn_act_kernel_bits(void **state)
{
    (void)state;
    nas_rng r;
    nas_rng_seed(&r, 13, 4);
    const int fns[] = {NAS_FN_RELU, NAS_FN_RELU6, NAS_FN_HSWISH, NAS__BN_IDENTITY};
    const int cs[] = {16, 24, 48};
    for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++)
        for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++)
            for (int se = 0; se <= 1; se++)
                bn_act_bits_one(&r, fns[f], cs[k], se);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bn_stats_bits),
        cmocka_unit_test(test_gap_chscale_bits),
        cmocka_unit_test(test_chscale_kernel_bits),
        cmocka_unit_test(test_bn_act_kernel_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
