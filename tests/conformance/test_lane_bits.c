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
 * backend runs only on AVX-512 hosts, is checked on every host; the fused
 * batch norm + activation against a scalar reference of its documented
 * algorithm written here (bn_ref_run), in place and out of place.
 */
#include <math.h> /* sqrt (the reference batch norm) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h> /* printf (a skipped path) */
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
        fail_msg("%s of %d channels: block %d (%d threads) differs from the plain-layout "
                 "expectation", what, c, b, nthr);
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
        assert_true(x && dy && y && dx && s && ds && yb && dxb && dsb);
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

/* The documented algorithm of trainer/cpu_bn_act.c, one channel at a time
 * in plain NCHW, written here independently of the kernel (this file is
 * built with -ffp-contract=off, as the kernel is): the forward's shifted
 * sums per image in float, added into a double per channel; y = fn(gamma *
 * xhat + beta) in PyTorch's formulas; the backward's sums of g = dy' *
 * fn'(z) and g * xhat the same way; dx = gamma * invstd * (g - dbeta / m -
 * xhat * dgamma / m). */
typedef struct bn_ref {
    int fn, n, c, hw, se;
    const float *x, *dy, *gamma, *beta, *s, *dpool;
    float *y, *pool, *mean, *var, *inv, *dx, *dg, *db;
} bn_ref;

static float ref_act(int fn, float z)
{
    if (fn == NAS_FN_RELU)
        return z > 0.0f ? z : 0.0f;
    if (fn == NAS_FN_RELU6)
        return z < 0.0f ? 0.0f : (z > 6.0f ? 6.0f : z);
    if (fn == NAS_FN_HSWISH)
        return z <= -3.0f ? 0.0f : (z >= 3.0f ? z : z * (z + 3.0f) / 6.0f);
    return z;
}

static float ref_act_grad(int fn, float z, float d)
{
    if (fn == NAS_FN_RELU)
        return z > 0.0f ? d : 0.0f;
    if (fn == NAS_FN_RELU6)
        return z > 0.0f && z < 6.0f ? d : 0.0f;
    if (fn == NAS_FN_HSWISH)
        return z < -3.0f ? 0.0f : (z > 3.0f ? d : d * (z / 3.0f + 0.5f));
    return d;
}

static void bn_ref_run(const bn_ref *r)
{
    const double m = (double)r->n * (double)r->hw;
    const float pinv = 1.0f / (float)r->hw;
    for (int ch = 0; ch < r->c; ch++) {
#define AT(i, p) (((size_t)(i) * r->c + ch) * r->hw + (p))
        const float k = r->x[AT(0, 0)];
        double s1 = 0.0, s2 = 0.0;
        for (int i = 0; i < r->n; i++) {
            float a1 = 0.0f, a2 = 0.0f;
            for (int p = 0; p < r->hw; p++) {
                const float d = r->x[AT(i, p)] - k;
                a1 += d;
                a2 += d * d;
            }
            s1 += (double)a1;
            s2 += (double)a2;
        }
        const double dm = s1 / m, v = s2 / m - dm * dm;
        r->mean[ch] = (float)((double)k + dm);
        r->var[ch] = (float)(v > 0.0 ? v : 0.0);
        r->inv[ch] = (float)(1.0 / sqrt((double)r->var[ch] + (double)1e-5f));
        const float mu = r->mean[ch], inv = r->inv[ch], g = r->gamma[ch],
                    b = r->fn == NAS__BN_IDENTITY ? 0.0f : r->beta[ch];
        for (int i = 0; i < r->n; i++) {
            float acc = 0.0f;
            for (int p = 0; p < r->hw; p++) {
                const float out = ref_act(r->fn, g * ((r->x[AT(i, p)] - mu) * inv) + r->beta[ch]);
                r->y[AT(i, p)] = out;
                acc += out;
            }
            r->pool[(size_t)i * r->c + ch] = acc * pinv;
        }
        double t1 = 0.0, t2 = 0.0;
        for (int pass = 0; pass < 2; pass++) {
            const float c1 = (float)(t1 / m), c2 = (float)(t2 / m), k1 = g * inv;
            for (int i = 0; i < r->n; i++) {
                const size_t nc = (size_t)i * r->c + ch;
                const float sv = r->se ? r->s[nc] : 0.0f, pv = r->se ? r->dpool[nc] * pinv : 0.0f;
                float a1 = 0.0f, a2 = 0.0f;
                for (int p = 0; p < r->hw; p++) {
                    const float xh = (r->x[AT(i, p)] - mu) * inv, z = g * xh + b;
                    const float d = r->se ? r->dy[AT(i, p)] * sv + pv : r->dy[AT(i, p)];
                    const float gr = ref_act_grad(r->fn, z, d);
                    if (pass == 0) {
                        a1 += gr;
                        a2 += gr * xh;
                    } else {
                        r->dx[AT(i, p)] = k1 * (gr - c1 - xh * c2);
                    }
                }
                t1 += pass == 0 ? (double)a1 : 0.0;
                t2 += pass == 0 ? (double)a2 : 0.0;
            }
            if (pass == 0) {
                r->db[ch] = (float)t1;
                r->dg[ch] = (float)t2;
            }
        }
#undef AT
    }
}

/* Fails unless the kernel's per-channel array equals the reference's bytes. */
static void chan_eq(const float *want, const float *got, size_t count, const char *what, int fn,
                    int c, int b, int nthr)
{
    if (memcmp(want, got, count * sizeof *want))
        fail_msg("bn_act fn %d %s of %d channels: block %d (%d threads) differs from the "
                 "reference", fn, what, c, b, nthr);
}

/* Training batch norm + activation, nas__cpu_bn_act_fwd / _bwd (with and
 * without SE's pool and gradients), every block width (1, 8, 16) and 1 or 2
 * threads, out of place and in place (y == x, dx == dy): every output
 * equals bn_ref_run's bytes. */
static void bn_act_bits_one(nas_rng *r, int fn, int n, int c, int hw, int se)
{
    const size_t count = (size_t)n * c * hw, nc = (size_t)n * c;
    enum { CMAX = 48 };
    assert_true(c <= CMAX);
    float *x = malloc(count * sizeof *x), *dy = malloc(count * sizeof *dy),
          *y = malloc(count * sizeof *y), *dx = malloc(count * sizeof *dx),
          *yb = malloc(count * sizeof *yb), *dxb = malloc(count * sizeof *dxb),
          *s = malloc(nc * sizeof *s), *dpool = malloc(nc * sizeof *dpool),
          *pool = malloc(nc * sizeof *pool), *poolb = malloc(nc * sizeof *poolb);
    assert_true(x && dy && y && dx && yb && dxb && s && dpool && pool && poolb);
    float gamma[CMAX], beta[CMAX], mean[CMAX], var[CMAX], inv[CMAX], dg[CMAX], db[CMAX];
    float meanb[CMAX], varb[CMAX], invb[CMAX], dgb[CMAX], dbb[CMAX];
    double *ws = malloc(NAS__CPU_BN_ACT_WS_BYTES(n, c));
    assert_non_null(ws);
    fill(r, x, count, -3.0f, 5.0f);
    fill(r, dy, count, -1.0f, 1.0f);
    fill(r, s, nc, 0.0f, 1.0f);
    fill(r, dpool, nc, -1.0f, 1.0f);
    fill(r, gamma, (size_t)c, 0.5f, 2.5f);
    fill(r, beta, (size_t)c, -1.0f, 1.0f);
    const bn_ref ref = {.fn = fn, .n = n, .c = c, .hw = hw, .se = se, .x = x, .dy = dy,
                        .gamma = gamma, .beta = beta, .s = s, .dpool = dpool, .y = y,
                        .pool = pool, .mean = mean, .var = var, .inv = inv, .dx = dx,
                        .dg = dg, .db = db};
    bn_ref_run(&ref);
    const float *bt = fn == NAS__BN_IDENTITY ? NULL : beta;
    const int bs[] = {1, 8, 16};
    for (size_t bi = 0; bi < sizeof bs / sizeof bs[0]; bi++) {
        const int b = bs[bi];
        if (c % b)
            continue;
        for (int nthr = 1; nthr <= 2; nthr++)
            for (int in_place = 0; in_place <= 1; in_place++) {
                float *xb = blocked_copy(x, n, c, hw, b), *dyb = blocked_copy(dy, n, c, hw, b);
                float *xf = in_place ? blocked_copy(x, n, c, hw, b) : xb; /* y's buffer */
                float *out = in_place ? xf : yb;
                assert_int_equal(nas__cpu_bn_act_fwd(fn, xf, gamma, beta, out, se ? poolb : NULL,
                                                     meanb, varb, invb, ws, n, c, (size_t)hw, b,
                                                     1e-5f, nthr),
                                 0);
                blocked_eq(y, out, n, c, hw, b, "bn_act y", nthr);
                chan_eq(mean, meanb, (size_t)c, "mean", fn, c, b, nthr);
                chan_eq(var, varb, (size_t)c, "var", fn, c, b, nthr);
                chan_eq(inv, invb, (size_t)c, "invstd", fn, c, b, nthr);
                if (se)
                    chan_eq(pool, poolb, nc, "pool", fn, c, b, nthr);
                float *dout = in_place ? dyb : dxb;
                assert_int_equal(nas__cpu_bn_act_bwd(fn, xb, dyb, se ? s : NULL,
                                                     se ? dpool : NULL, gamma, bt, meanb, invb,
                                                     dout, dgb, dbb, ws, n, c, (size_t)hw, b,
                                                     nthr),
                                 0);
                blocked_eq(dx, dout, n, c, hw, b, "bn_act dx", nthr);
                chan_eq(dg, dgb, (size_t)c, "dgamma", fn, c, b, nthr);
                chan_eq(db, dbb, (size_t)c, "dbeta", fn, c, b, nthr);
                if (in_place)
                    free(xf);
                free(xb);
                free(dyb);
            }
    }
    float *all[] = {x, dy, y, dx, yb, dxb, s, dpool, pool, poolb};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
    free(ws);
}

static void test_bn_act_kernel_bits(void **state)
{
    (void)state;
    nas_rng r;
    nas_rng_seed(&r, 13, 4);
    const int fns[] = {NAS_FN_RELU, NAS_FN_RELU6, NAS_FN_HSWISH, NAS__BN_IDENTITY};
    const int shapes[][3] = {{3, 16, 36}, {3, 24, 36}, {2, 48, 25}, {1, 8, 1}, {2, 16, 1}};
    for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++)
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
            for (int se = 0; se <= 1; se++)
                bn_act_bits_one(&r, fns[f], shapes[k][0], shapes[k][1], shapes[k][2], se);
    /* a tensor big enough for the output passes' streaming stores (out of
     * place, widths 8 and 16; the in-place runs store normally) */
    const int c = 48, hw = 28 * 28;
    const int n = (int)(NAS__CPU_BN_ACT_STREAM_BYTES / (sizeof(float) * c * hw)) + 1;
    bn_act_bits_one(&r, NAS_FN_HSWISH, n, c, hw, 0);
    bn_act_bits_one(&r, NAS_FN_RELU, n, c, hw, 1);
}

/* A float rounded to bfloat16 (nearest even), as its 16-bit pattern. */
static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t v)
{
    uint32_t u = (uint32_t)v << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The depthwise weight gradient on bf16 channels-last activations
 * (nas__cpu_dw_wgrad_bf16, issue 34) against the scalar loop of its
 * documented algorithm: each weight a float sum over (image, output row,
 * output column) of x * dy in that order, so equal bytes; with channel
 * counts that leave a 16- or 8-wide group after the 32-wide ones (24, 40,
 * 48, 72), 1 and 2 threads, R 3/5/7,
 * stride 1 and 2. On an AVX-512 host R = 5 with C a multiple of 16 and
 * C / 16 at least twice the threads takes the whole-kernel path
 * (DW_WGRAD_NHWC_ALL): C 48 with 1 thread, 64, 144 and 192 with 1 and 2;
 * the rest, and every case on other hosts, the row kernel. The test does
 * not see which path ran: both must give the scalar loop's bytes. */
static void test_dw_wgrad_bf16_bits(void **state)
{
    (void)state;
    nas_rng r;
    nas_rng_seed(&r, 17, 5);
    const int cs[] = {8, 16, 24, 40, 48, 72, 64, 144, 192};
    for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++)
        for (int rr = 3; rr <= 7; rr += 2)
            for (int st = 1; st <= 2; st++) {
                const int n = 3, c = cs[ci], h = 9, w = 7, p = rr / 2;
                const int ho = (h + 2 * p - rr) / st + 1, wo = (w + 2 * p - rr) / st + 1;
                const size_t nx = (size_t)n * h * w * c, nd = (size_t)n * ho * wo * c;
                uint16_t *x = malloc(nx * sizeof *x), *dy = malloc(nd * sizeof *dy);
                float *want = calloc((size_t)c * rr * rr, sizeof *want);
                float *got = malloc((size_t)c * rr * rr * sizeof *got);
                assert_true(x && dy && want && got);
                for (size_t i = 0; i < nx; i++)
                    x[i] = to_bf16(4.0f * nas_rng_uniform(&r) - 2.0f);
                for (size_t i = 0; i < nd; i++)
                    dy[i] = to_bf16(2.0f * nas_rng_uniform(&r) - 1.0f);
                for (int ch = 0; ch < c; ch++)
                    for (int ky = 0; ky < rr; ky++)
                        for (int kx = 0; kx < rr; kx++) {
                            float acc = 0.0f;
                            for (int i = 0; i < n; i++)
                                for (int oy = 0; oy < ho; oy++)
                                    for (int ox = 0; ox < wo; ox++) {
                                        int iy = oy * st + ky - p, ix = ox * st + kx - p;
                                        if (iy < 0 || iy >= h || ix < 0 || ix >= w)
                                            continue;
                                        size_t xi = ((size_t)i * h + iy) * w + ix;
                                        size_t di = ((size_t)i * ho + oy) * wo + ox;
                                        acc += from_bf16(x[xi * c + ch]) *
                                               from_bf16(dy[di * c + ch]);
                                    }
                            want[((size_t)ch * rr + ky) * rr + kx] = acc;
                        }
                for (int thr = 1; thr <= 2; thr++) {
                    memset(got, 0xff, (size_t)c * rr * rr * sizeof *got);
                    assert_int_equal(nas__cpu_dw_wgrad_bf16(x, dy, got, n, c, h, w, ho, wo, rr,
                                                            st, p, thr),
                                     0);
                    if (memcmp(got, want, (size_t)c * rr * rr * sizeof *got) != 0)
                        fail_msg("dw_wgrad_bf16 c %d r %d stride %d threads %d: not the "
                                 "scalar loop's bytes", c, rr, st, thr);
                }
                free(x);
                free(dy);
                free(want);
                free(got);
            }
    float dw[9];
    uint16_t one[8 * 9] = {0};
    assert_int_equal(nas__cpu_dw_wgrad_bf16(one, one, dw, 1, 12, 3, 3, 3, 3, 3, 1, 1, 1), -1);
    assert_int_equal(nas__cpu_dw_wgrad_bf16(one, one, dw, 1, 8, 3, 3, 3, 3, 4, 1, 1, 1), -1);
}

/* The statistics nas__cpu_bn_act_bf16_fwd documents, as scalar loops:
 * per channel the shift k (its first value), per image the float sums of
 * x - k and (x - k)^2 over the pixels in memory order, added into doubles
 * in image order; mean = k + E, var = E2 - E^2 (at least 0), invstd =
 * 1 / sqrt(var + eps) in double. x [N,HW,C] bf16. */
static void bf16_stats_ref(const uint16_t *x, int n, int c, int hw, float eps, float *mean,
                           float *var, float *invstd)
{
    for (int ch = 0; ch < c; ch++) {
        const float k = from_bf16(x[ch]);
        double s1 = 0.0, s2 = 0.0;
        for (int i = 0; i < n; i++) {
            float f1 = 0.0f, f2 = 0.0f;
            for (int p = 0; p < hw; p++) {
                const float d = from_bf16(x[((size_t)i * hw + p) * c + ch]) - k;
                f1 += d;
                f2 += d * d;
            }
            s1 += f1;
            s2 += f2;
        }
        const double m = (double)n * (double)hw, mu = s1 / m;
        double v = s2 / m - mu * mu;
        if (v < 0.0)
            v = 0.0;
        mean[ch] = (float)((double)k + mu);
        var[ch] = (float)v;
        invstd[ch] = (float)(1.0 / sqrt(v + (double)eps));
    }
}

/* The bf16 channels-last batch norm + activation (nas__cpu_bn_act_bf16_*,
 * issue 34) against the fp32 kernel on the same bf16-valued data in plain
 * NCHW: statistics within 1e-5 relative (both sum in float per image and
 * double per channel), y and dx within their bf16 rounding (2^-8
 * relative) plus 1e-3 absolute (where the terms cancel); dgamma and dbeta
 * within 1e-3 relative of the sum of magnitudes; mean, var and invstd
 * the bytes of the documented sums (bf16_stats_ref); and with 2 and 3
 * threads the same bytes of every output as with 1. The workspace is
 * filled with NaN bytes before each call, so a sum read before it was
 * written shows. Every fn, with and without SE's gradients, C 8 to 48,
 * N 3 and 5 (an uneven share of images between threads). */
static void bn_act_bf16_one(nas_rng *r, int fn, int n, int c, int hw, int se, int isa)
{
    const size_t cnt = (size_t)n * c * hw;
    uint16_t *xh = malloc(cnt * 2), *dyh = malloc(cnt * 2), *yh = malloc(cnt * 2);
    uint16_t *dxh = malloc(cnt * 2), *y2 = malloc(cnt * 2), *dx2 = malloc(cnt * 2);
    float *x = malloc(cnt * 4), *dy = malloc(cnt * 4), *y = malloc(cnt * 4), *dx = malloc(cnt * 4);
    float *pc = malloc(sizeof(float) * 16 * (size_t)c * (size_t)n);
    double *ws = malloc(NAS__CPU_BN_ACT_WS_BYTES(n, c));
    assert_true(xh && dyh && yh && dxh && y2 && dx2 && x && dy && y && dx && pc && ws);
    float *g = pc, *bt = g + c, *mu = bt + c, *var = mu + c, *is = var + c, *mu2 = is + c;
    float *var2 = mu2 + c, *is2 = var2 + c, *dg = is2 + c, *db = dg + c, *dg2 = db + c;
    float *db2 = dg2 + c, *s = db2 + c, *dp = s + (size_t)n * c, *pool = dp + (size_t)n * c;
    float *pool2 = pool + (size_t)n * c;
    for (int ch = 0; ch < c; ch++) {
        g[ch] = 5.0f * nas_rng_uniform(r);
        bt[ch] = 4.0f * nas_rng_uniform(r) - 2.0f;
    }
    for (size_t i = 0; i < (size_t)n * c; i++) {
        s[i] = nas_rng_uniform(r);
        dp[i] = 2.0f * nas_rng_uniform(r) - 1.0f;
    }
    /* x[i][s][ch] (nhwc) holds plain x[i][ch][s] */
    for (int i = 0; i < n; i++)
        for (int ch = 0; ch < c; ch++)
            for (int p = 0; p < hw; p++) {
                size_t pl = ((size_t)i * c + ch) * hw + p, nh = ((size_t)i * hw + p) * c + ch;
                xh[nh] = to_bf16(3.0f + 2.0f * nas_rng_uniform(r));
                dyh[nh] = to_bf16(2.0f * nas_rng_uniform(r) - 1.0f);
                x[pl] = from_bf16(xh[nh]);
                dy[pl] = from_bf16(dyh[nh]);
            }
    const float *sp = se ? s : NULL, *dpp = se ? dp : NULL;
    const size_t wsb = NAS__CPU_BN_ACT_WS_BYTES(n, c);
    /* the 1-thread run's mean, var, invstd, dgamma, dbeta, pool; the
     * reference statistics */
    float *one = malloc(sizeof(float) * (8 * (size_t)c + (size_t)n * c));
    assert_non_null(one);
    float *rmu = one + 5 * (size_t)c + (size_t)n * c, *rvar = rmu + c, *ris = rvar + c;
    bf16_stats_ref(xh, n, c, hw, 1e-5f, rmu, rvar, ris);
    assert_int_equal(nas__cpu_bn_act_fwd(fn, x, g, bt, y, se ? pool : NULL, mu, var, is, ws, n,
                                         c, (size_t)hw, 1, 1e-5f, 1), 0);
    assert_int_equal(nas__cpu_bn_act_bwd(fn, x, dy, sp, dpp, g, bt, mu, is, dx, dg, db, ws, n, c,
                                         (size_t)hw, 1, 1), 0);
    for (int thr = 1; thr <= 3; thr++) {
        uint16_t *yo = thr == 1 ? yh : y2, *dxo = thr == 1 ? dxh : dx2;
        float *po = pool2; /* compared below after the 1-thread run */
        memset(ws, 0xff, wsb);
        assert_int_equal(nas__cpu_bn_act_bf16_fwd(fn, xh, g, bt, yo, se ? po : NULL, mu2, var2,
                                                  is2, ws, n, c, (size_t)hw, 1e-5f, thr, isa),
                         0);
        memset(ws, 0xff, wsb);
        assert_int_equal(nas__cpu_bn_act_bf16_bwd(fn, xh, dyh, sp, dpp, g, bt, mu2, is2, dxo, dg2,
                                                  db2, ws, n, c, (size_t)hw, thr, isa),
                         0);
        const float *st[6] = {mu2, var2, is2, dg2, db2, pool2};
        if (thr > 1) {
            if (memcmp(yh, y2, cnt * 2) != 0 || memcmp(dxh, dx2, cnt * 2) != 0)
                fail_msg("bn_act_bf16 fn %d c %d n %d: %d threads differ from 1 (y, dx)", fn, c,
                         n, thr);
            for (int k = 0; k < (se ? 6 : 5); k++)
                if (memcmp(st[k], one + (size_t)k * c, (k == 5 ? (size_t)n : 1) * c * 4) != 0)
                    fail_msg("bn_act_bf16 fn %d c %d n %d: %d threads differ from 1 (output %d of "
                             "mean, var, invstd, dgamma, dbeta, pool)", fn, c, n, thr, k);
            continue;
        }
        for (int k = 0; k < (se ? 6 : 5); k++)
            memcpy(one + (size_t)k * c, st[k], (k == 5 ? (size_t)n : 1) * c * 4);
        if (memcmp(mu2, rmu, (size_t)c * 4) != 0 || memcmp(var2, rvar, (size_t)c * 4) != 0 ||
            memcmp(is2, ris, (size_t)c * 4) != 0)
            fail_msg("bn_act_bf16 fn %d c %d n %d: mean, var or invstd not the bytes of the "
                     "documented sums", fn, c, n);
        for (int ch = 0; ch < c; ch++) {
            if (fabs((double)mu2[ch] - mu[ch]) > 1e-5 * fabs((double)mu[ch]) ||
                fabs((double)is2[ch] - is[ch]) > 1e-4 * fabs((double)is[ch]))
                fail_msg("bn_act_bf16 fn %d c %d ch %d: mean %g / %g invstd %g / %g", fn, c, ch,
                         (double)mu2[ch], (double)mu[ch], (double)is2[ch], (double)is[ch]);
            double mag = 0.0;
            for (int i = 0; i < n; i++)
                for (int p = 0; p < hw; p++)
                    mag += fabs((double)dy[((size_t)i * c + ch) * hw + p]) * (se ? 2.0 : 1.0) *
                           (fn == NAS__BN_IDENTITY ? 1.0 : 1.5) * 4.0;
            if (fabs((double)dg2[ch] - dg[ch]) > 1e-3 * mag ||
                fabs((double)db2[ch] - db[ch]) > 1e-3 * mag)
                fail_msg("bn_act_bf16 fn %d c %d ch %d: dgamma %g / %g dbeta %g / %g", fn, c,
                         ch, (double)dg2[ch], (double)dg[ch], (double)db2[ch], (double)db[ch]);
        }
        for (int i = 0; i < n; i++)
            for (int ch = 0; ch < c; ch++)
                for (int p = 0; p < hw; p++) {
                    size_t pl = ((size_t)i * c + ch) * hw + p, nh = ((size_t)i * hw + p) * c + ch;
                    double ya = from_bf16(yh[nh]), dxa = from_bf16(dxh[nh]);
                    if (fabs(ya - y[pl]) > 1e-3 + fabs((double)y[pl]) / 128.0 ||
                        fabs(dxa - dx[pl]) > 2e-2 + fabs((double)dx[pl]) / 64.0)
                        fail_msg("bn_act_bf16 fn %d c %d se %d at (%d,%d,%d): y %g / %g, "
                                 "dx %g / %g", fn, c, se, i, ch, p, ya, (double)y[pl], dxa,
                                 (double)dx[pl]);
                }
        if (se) /* the mean of the rounded y: within the mean of |y| / 256 */
            for (size_t i = 0; i < (size_t)n * c; i++) {
                double mag = 0.0;
                for (int p = 0; p < hw; p++)
                    mag += fabs((double)y[i * hw + p]) / hw;
                if (fabs((double)pool2[i] - pool[i]) > 1e-6 + mag / 256.0)
                    fail_msg("bn_act_bf16 fn %d c %d: pool %g / %g", fn, c, (double)pool2[i],
                             (double)pool[i]);
            }
    }
    free(xh);
    free(dyh);
    free(yh);
    free(dxh);
    free(y2);
    free(dx2);
    free(x);
    free(dy);
    free(y);
    free(dx);
    free(pc);
    free(ws);
    free(one);
}

/* The generic passes, and the AVX512-BF16 ones where the host has them
 * (else skipped, with a message). */
static void test_bn_act_bf16_kernel(void **state)
{
    (void)state;
    const int fns[] = {NAS_FN_RELU, NAS_FN_RELU6, NAS_FN_HSWISH, NAS__BN_IDENTITY};
    const int shapes[][3] = {{3, 8, 36}, {3, 24, 25}, {2, 48, 49}, {3, 16, 9}, {5, 8, 4}};
    for (int isa = NAS__BF16_GENERIC; isa <= NAS__BF16_NATIVE; isa++) {
        if (isa == NAS__BF16_NATIVE && !nas__cpu_bf16_native()) {
            printf("bn_act_bf16: no AVX512-BF16 on this host, its passes skipped\n");
            break;
        }
        nas_rng r;
        nas_rng_seed(&r, 19, 6);
        for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++)
            for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
                for (int se = 0; se <= 1; se++)
                    bn_act_bf16_one(&r, fns[f], shapes[k][0], shapes[k][1], shapes[k][2], se,
                                    isa);
    }
}

/* The AVX512-BF16 passes of the bf16 batch norm (isa NAS__BF16_NATIVE)
 * against the generic ones: the same bytes of y, pool, mean, var, invstd,
 * dx, dgamma and dbeta (they do the same float operations in the same
 * order), with 1 and 2 threads, every fn, with and without SE's
 * gradients, C 8 to 512 (an 8-channel tail at 24, 40, 72 and 264, run
 * by 128-bit accesses; more than one 256-channel block at 264, 512), z
 * spread over h-swish's and ReLU6's corners, and a NaN gamma in one
 * channel (y, dx NaN there, quieted alike). Denormal results, where the
 * two differ (VCVTNEPS2BF16 flushes them), are not produced. Skipped on a
 * host without AVX512-BF16. */
static void test_bn_act_bf16_native(void **state)
{
    (void)state;
    if (!nas__cpu_bf16_native()) {
        printf("bn_act_bf16 native: no AVX512-BF16 on this host, skipped\n");
        uint16_t one[8] = {0};
        float f[8 * 16];
        double ws[64];
        assert_int_equal(nas__cpu_bn_act_bf16_fwd(NAS_FN_RELU, one, f, f, one, NULL, f, f, f, ws,
                                                  1, 8, 1, 1e-5f, 1, NAS__BF16_NATIVE),
                         -1);
        return;
    }
    nas_rng r;
    nas_rng_seed(&r, 29, 8);
    const int fns[] = {NAS_FN_RELU, NAS_FN_RELU6, NAS_FN_HSWISH, NAS__BN_IDENTITY};
    const int shapes[][3] = {{3, 16, 36}, {2, 24, 25}, {2, 40, 9}, {3, 72, 16}, {2, 144, 49},
                             {1, 8, 1},  {2, 264, 9}, {2, 512, 4}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        const int n = shapes[k][0], c = shapes[k][1], hw = shapes[k][2];
        const size_t cnt = (size_t)n * c * hw, nc = (size_t)n * c;
        uint16_t *x = malloc(cnt * 2), *dy = malloc(cnt * 2), *o = malloc(4 * cnt * 2);
        float *p = malloc(sizeof(float) * (4 * nc + 20 * (size_t)c));
        double *ws = malloc(NAS__CPU_BN_ACT_WS_BYTES(n, c));
        assert_true(x && dy && o && p && ws);
        float *g = p, *bt = g + c, *s = bt + c, *dp = s + nc, *st = dp + nc; /* st: 2 x 8C */
        for (int ch = 0; ch < c; ch++) {
            g[ch] = 4.0f * nas_rng_uniform(&r) - 1.0f;
            bt[ch] = 8.0f * nas_rng_uniform(&r) - 4.0f;
        }
        g[c / 2] = NAN;
        for (size_t i = 0; i < nc; i++) {
            s[i] = nas_rng_uniform(&r);
            dp[i] = 2.0f * nas_rng_uniform(&r) - 1.0f;
        }
        for (size_t i = 0; i < cnt; i++) {
            x[i] = to_bf16(6.0f * nas_rng_uniform(&r) - 2.0f);
            dy[i] = to_bf16(2.0f * nas_rng_uniform(&r) - 1.0f);
        }
        for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++)
            for (int se = 0; se <= 1; se++)
                for (int thr = 1; thr <= 2; thr++) {
                    for (int isa = 0; isa <= 1; isa++) {
                        uint16_t *y = o + (size_t)isa * 2 * cnt, *dx = y + cnt;
                        float *q = st + (size_t)isa * 8 * c; /* mean var invstd dg db, pool */
                        float *pool = p + 2 * (size_t)c + 2 * nc + 16 * (size_t)c +
                                      (size_t)isa * nc;
                        assert_int_equal(nas__cpu_bn_act_bf16_fwd(
                                             fns[f], x, g, bt, y, se ? pool : NULL, q, q + c,
                                             q + 2 * c, ws, n, c, (size_t)hw, 1e-5f, thr, isa),
                                         0);
                        assert_int_equal(nas__cpu_bn_act_bf16_bwd(
                                             fns[f], x, dy, se ? s : NULL, se ? dp : NULL, g,
                                             bt, q, q + 2 * c, dx, q + 3 * c, q + 4 * c, ws, n,
                                             c, (size_t)hw, thr, isa),
                                         0);
                    }
                    const float *pool0 = p + 2 * (size_t)c + 2 * nc + 16 * (size_t)c;
                    if (memcmp(o, o + 2 * cnt, 2 * cnt * 2) != 0 ||
                        memcmp(st, st + 8 * c, 5 * (size_t)c * sizeof(float)) != 0 ||
                        (se && memcmp(pool0, pool0 + nc, nc * sizeof(float)) != 0))
                        fail_msg("bn_act_bf16 native fn %d c %d se %d threads %d: not the "
                                 "generic passes' bytes", fns[f], c, se, thr);
                }
        free(x);
        free(dy);
        free(o);
        free(p);
        free(ws);
    }
}

/* SE's channel scale on bf16 channels-last tensors (nas__cpu_chscale_bf16_*,
 * issue 34) against the scalar loops of its documented algorithm: y and
 * dx the products rounded to bf16, ds the float sum over positions in
 * memory order; equal bytes, 1 and 2 threads, C 8, 24, 48, 144, 264, 512, the
 * generic passes and (where the host has them) the AVX512-BF16 ones. */
static void test_chscale_bf16_bits(void **state)
{
    (void)state;
    nas_rng r;
    nas_rng_seed(&r, 23, 7);
    const int shapes[][3] = {{3, 8, 36}, {2, 24, 49}, {4, 48, 16}, {2, 144, 9}, {2, 264, 9},
                             {2, 512, 4}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        const int n = shapes[k][0], c = shapes[k][1], hw = shapes[k][2];
        const size_t cnt = (size_t)n * c * hw;
        uint16_t *x = malloc(cnt * 2), *dy = malloc(cnt * 2), *y = malloc(cnt * 2);
        uint16_t *dx = malloc(cnt * 2), *yw = malloc(cnt * 2), *dxw = malloc(cnt * 2);
        float *sc = malloc((size_t)n * c * 4), *ds = malloc((size_t)n * c * 4);
        float *dsw = malloc((size_t)n * c * 4);
        assert_true(x && dy && y && dx && yw && dxw && sc && ds && dsw);
        for (size_t i = 0; i < cnt; i++) {
            x[i] = to_bf16(4.0f * nas_rng_uniform(&r) - 2.0f);
            dy[i] = to_bf16(2.0f * nas_rng_uniform(&r) - 1.0f);
        }
        for (size_t i = 0; i < (size_t)n * c; i++)
            sc[i] = nas_rng_uniform(&r);
        for (int i = 0; i < n; i++)
            for (int ch = 0; ch < c; ch++) {
                float acc = 0.0f, sv = sc[(size_t)i * c + ch];
                for (int p = 0; p < hw; p++) {
                    size_t e = ((size_t)i * hw + p) * c + ch;
                    yw[e] = to_bf16(from_bf16(x[e]) * sv);
                    dxw[e] = to_bf16(from_bf16(dy[e]) * sv);
                    acc += from_bf16(dy[e]) * from_bf16(x[e]);
                }
                dsw[(size_t)i * c + ch] = acc;
            }
        for (int isa = NAS__BF16_GENERIC; isa <= NAS__BF16_NATIVE; isa++) {
            if (isa == NAS__BF16_NATIVE && !nas__cpu_bf16_native()) {
                printf("chscale_bf16: no AVX512-BF16 on this host, its passes skipped\n");
                break;
            }
            for (int thr = 1; thr <= 2; thr++) {
                memset(y, 0xff, cnt * 2);
                memset(dx, 0xff, cnt * 2);
                memset(ds, 0xff, (size_t)n * c * 4);
                assert_int_equal(nas__cpu_chscale_bf16_fwd(x, sc, y, n, c, (size_t)hw, thr, isa),
                                 0);
                assert_int_equal(
                    nas__cpu_chscale_bf16_bwd(x, sc, dy, dx, ds, n, c, (size_t)hw, thr, isa), 0);
                if (memcmp(y, yw, cnt * 2) != 0 || memcmp(dx, dxw, cnt * 2) != 0 ||
                    memcmp(ds, dsw, (size_t)n * c * 4) != 0)
                    fail_msg("chscale_bf16 c %d threads %d isa %d: not the scalar loops' bytes",
                             c, thr, isa);
            }
        }
        free(x);
        free(dy);
        free(y);
        free(dx);
        free(yw);
        free(dxw);
        free(sc);
        free(ds);
        free(dsw);
    }
}

/* Global average pooling on bf16 channels-last tensors
 * (nas__cpu_gap_bf16_*) against the scalar loops of its documented
 * algorithm (the backend's earlier code): y the float sum over positions
 * in memory order divided by hw, dx = dy * (1/hw) rounded to bf16; equal
 * bytes, 1 and 2 threads, C 8, 24, 144. */
static void test_gap_bf16_bits(void **state)
{
    (void)state;
    nas_rng r;
    nas_rng_seed(&r, 31, 9);
    const int shapes[][3] = {{3, 8, 36}, {2, 24, 49}, {5, 144, 16}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        const int n = shapes[k][0], c = shapes[k][1], hw = shapes[k][2];
        const size_t cnt = (size_t)n * c * hw, nc = (size_t)n * c;
        uint16_t *x = malloc(cnt * 2), *dx = malloc(cnt * 2), *dxw = malloc(cnt * 2);
        float *y = malloc(nc * 4), *yw = malloc(nc * 4), *dy = malloc(nc * 4);
        assert_true(x && dx && dxw && y && yw && dy);
        for (size_t i = 0; i < cnt; i++)
            x[i] = to_bf16(4.0f * nas_rng_uniform(&r) - 2.0f);
        for (size_t i = 0; i < nc; i++)
            dy[i] = 2.0f * nas_rng_uniform(&r) - 1.0f;
        for (int i = 0; i < n; i++)
            for (int ch = 0; ch < c; ch++) {
                float acc = 0.0f;
                for (int p = 0; p < hw; p++)
                    acc += from_bf16(x[((size_t)i * hw + p) * c + ch]);
                yw[(size_t)i * c + ch] = acc / (float)hw;
                for (int p = 0; p < hw; p++)
                    dxw[((size_t)i * hw + p) * c + ch] =
                        to_bf16(dy[(size_t)i * c + ch] * (1.0f / (float)hw));
            }
        for (int thr = 1; thr <= 2; thr++) {
            memset(y, 0xff, nc * 4);
            memset(dx, 0xff, cnt * 2);
            assert_int_equal(nas__cpu_gap_bf16_fwd(x, y, n, c, (size_t)hw, thr), 0);
            assert_int_equal(nas__cpu_gap_bf16_bwd(dy, dx, n, c, (size_t)hw, thr), 0);
            if (memcmp(y, yw, nc * 4) != 0 || memcmp(dx, dxw, cnt * 2) != 0)
                fail_msg("gap_bf16 c %d threads %d: not the scalar loops' bytes", c, thr);
        }
        free(x);
        free(dx);
        free(dxw);
        free(y);
        free(yw);
        free(dy);
    }
    float y[12];
    uint16_t one[12] = {0};
    assert_int_equal(nas__cpu_gap_bf16_fwd(one, y, 1, 12, 1, 1), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bn_stats_bits),
        cmocka_unit_test(test_gap_chscale_bits),
        cmocka_unit_test(test_chscale_kernel_bits),
        cmocka_unit_test(test_bn_act_kernel_bits),
        cmocka_unit_test(test_dw_wgrad_bf16_bits),
        cmocka_unit_test(test_bn_act_bf16_kernel),
        cmocka_unit_test(test_bn_act_bf16_native),
        cmocka_unit_test(test_chscale_bf16_bits),
        cmocka_unit_test(test_gap_bf16_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
