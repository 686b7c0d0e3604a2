/*
 * trainer/cpu_bn_act_bf16.c - training batch norm fused with the
 * activation after it (none, ReLU, ReLU6, h-swish) on the cpu backend's
 * bf16 activations (precision "bf16": bfloat16 channels-last, nhwc),
 * forward and backward; issue 34 ("bf16 on every op of chain nets"). The
 * maths, the shifted one-pass statistics and the recomputation of z in
 * the backward are trainer/cpu_bn_act.c's (see its header); here the
 * inputs are read as bf16 (exact in float), all arithmetic is in float
 * (sums per image in float, added per channel in double), and the outputs
 * y and dx are rounded to bf16 (nearest even) once, as they are stored.
 * Without this kernel a bf16 batch norm ran as oneDNN's batch norm (one
 * thread: channels-last splits pixels between threads with barriers) and
 * a separate eltwise pass each way, or for C not a multiple of 16 as
 * oneDNN's generic nspc_bnorm.
 *
 * Layout: x[n][s][c] (s over H*W), C a multiple of 8. Work: the C/8
 * eight-channel groups are shared out over OpenMP's threads in contiguous
 * runs, each thread walking the pixels in memory order over its run (so
 * reads are contiguous stretches of each pixel's row). Every channel's
 * sums run on one thread over images, then positions, in memory order,
 * so results do not depend on the thread count; CMakeLists.txt builds this
 * file with -ffp-contract=off.
 */
#include <math.h>   /* sqrt */
#include <stddef.h> /* size_t */
#include <string.h> /* memset */
#ifdef _OPENMP
#include <omp.h>
#endif
#include "nas/backend.h"          /* NAS_FN_* */
#include "trainer/backend_impl.h" /* nas__cpu_bn_act_bf16_* */

typedef float v8 __attribute__((vector_size(32), aligned(4)));
typedef int v8i __attribute__((vector_size(32), aligned(4)));
typedef unsigned int u8v __attribute__((vector_size(32), aligned(4)));
typedef unsigned short h8 __attribute__((vector_size(16), aligned(2)));

/* Macros rather than functions: vector arguments and return values would
 * depend on the target clone's ABI. */
/* 8 bf16 values at p as floats (exact) */
#define LD8(p) ((v8)(__builtin_convertvector(*(const h8 *)(p), u8v) << 16))
/* v rounded to bf16, nearest even, stored at p (NaN stays NaN) */
#define ST8(p, v)                                                                           \
    do {                                                                                    \
        const u8v u_ = (u8v)(v), nan_ = (u8v)((v) != (v));                                  \
        const u8v r_ = (u_ + 0x7fffu + ((u_ >> 16) & 1u)) >> 16;                            \
        *(h8 *)(p) = __builtin_convertvector((nan_ & ((u_ >> 16) | 0x40u)) | (~nan_ & r_), h8); \
    } while (0)
/* m ? a : b lane-wise, m a comparison result (all ones or zero) */
#define SEL(m, a, b) ((v8)(((v8i)(a) & (m)) | ((v8i)(b) & ~(m))))

/* f(z) and f'(z) * g of kernel_math.h's nas__act / nas__act_grad for
 * fn ReLU, ReLU6, h-swish, NAS__BN_IDENTITY, lane-wise. */
#define ACT(fn, z, out)                                                                     \
    do {                                                                                    \
        const v8 z0_ = {0}, six_ = z0_ + 6.0f, three_ = z0_ + 3.0f;                         \
        if ((fn) == NAS_FN_RELU)                                                            \
            out = SEL((z) > 0.0f, z, z0_);                                                  \
        else if ((fn) == NAS_FN_RELU6)                                                      \
            out = SEL((z) < 0.0f, z0_, SEL((z) > 6.0f, six_, z));                           \
        else if ((fn) == NAS_FN_HSWISH)                                                     \
            out = SEL((z) <= -3.0f, z0_,                                                    \
                      SEL((z) >= 3.0f, z, (z) * ((z) + three_) / six_));                    \
        else                                                                                \
            out = z;                                                                        \
    } while (0)
#define ACT_GRAD(fn, z, g, out)                                                             \
    do {                                                                                    \
        const v8 z0_ = {0};                                                                 \
        if ((fn) == NAS_FN_RELU)                                                            \
            out = SEL((z) > 0.0f, g, z0_);                                                  \
        else if ((fn) == NAS_FN_RELU6)                                                      \
            out = SEL(((z) > 0.0f) & ((z) < 6.0f), g, z0_);                                 \
        else if ((fn) == NAS_FN_HSWISH)                                                     \
            out = SEL((z) < -3.0f, z0_,                                                     \
                      SEL((z) > 3.0f, g, (g) * ((z) / (z0_ + 3.0f) + 0.5f)));               \
        else                                                                                \
            out = g;                                                                        \
    } while (0)

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define BN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define BN_CLONES
#endif

/* The range [*g0, *g1) of 8-channel groups of thread t of nt. */
static void my_groups(int groups, int t, int nt, int *g0, int *g1)
{
    *g0 = (int)((long)groups * t / nt);
    *g1 = (int)((long)groups * (t + 1) / nt);
}

/* Forward over groups [g0, g1): statistics, then y (and pool). fs: 2*C
 * floats of per-image partial sums, sd: 2*C doubles. */
BN_CLONES static void fwd_groups(int fn, const unsigned short *x, const float *gamma,
                                 const float *beta, unsigned short *y, float *pool, float *mean,
                                 float *var, float *invstd, float *fs, double *sd, int n, int c,
                                 size_t hw, float eps, int g0, int g1)
{
    const int c0 = 8 * g0, c1 = 8 * g1;
    const size_t row = (size_t)c;
    float *fsum = fs, *fsq = fs + c;
    double *dsum = sd, *dsq = sd + c;
    for (int ch = c0; ch < c1; ch += 8) {
        *(v8 *)(mean + ch) = LD8(x + ch); /* the shift: the channel's first value */
        for (int l = 0; l < 8; l++)
            dsum[ch + l] = dsq[ch + l] = 0.0;
    }
    for (int i = 0; i < n; i++) {
        for (int ch = c0; ch < c1; ch += 8)
            *(v8 *)(fsum + ch) = *(v8 *)(fsq + ch) = (v8){0};
        const unsigned short *xi = x + (size_t)i * hw * row;
        for (size_t s = 0; s < hw; s++)
            for (int ch = c0; ch < c1; ch += 8) {
                const v8 d = LD8(xi + s * row + ch) - *(const v8 *)(mean + ch);
                *(v8 *)(fsum + ch) += d;
                *(v8 *)(fsq + ch) += d * d;
            }
        for (int ch = c0; ch < c1; ch++) {
            dsum[ch] += fsum[ch];
            dsq[ch] += fsq[ch];
        }
    }
    const double m = (double)n * (double)hw;
    for (int ch = c0; ch < c1; ch++) {
        double mu = dsum[ch] / m, v = dsq[ch] / m - mu * mu;
        if (v < 0.0)
            v = 0.0;
        mean[ch] = (float)((double)mean[ch] + mu);
        var[ch] = (float)v;
        invstd[ch] = (float)(1.0 / sqrt(v + (double)eps));
        /* per-channel scale and shift of the output pass: z = x * a + b */
        fsum[ch] = gamma[ch] * invstd[ch];
        fsq[ch] = beta[ch] - mean[ch] * fsum[ch];
    }
    const float inv_hw = 1.0f / (float)hw;
    for (int i = 0; i < n; i++) {
        const size_t off = (size_t)i * hw * row;
        for (int ch = c0; ch < c1; ch += 8) {
            const v8 a = *(const v8 *)(fsum + ch), b = *(const v8 *)(fsq + ch);
            v8 acc = {0};
            for (size_t s = 0; s < hw; s++) {
                const v8 z = LD8(x + off + s * row + ch) * a + b;
                v8 o;
                ACT(fn, z, o);
                ST8(y + off + s * row + ch, o);
                if (pool)
                    acc += LD8(y + off + s * row + ch);
            }
            if (pool)
                *(v8 *)(pool + (size_t)i * c + ch) = acc * inv_hw;
        }
    }
}

/* Backward over groups [g0, g1): sums of g and g * xhat, then dx. */
BN_CLONES static void bwd_groups(int fn, const unsigned short *x, const unsigned short *dy,
                                 const float *sc, const float *dpool, const float *gamma,
                                 const float *beta, const float *mean, const float *invstd,
                                 unsigned short *dx, float *dgamma, float *dbeta, float *fs,
                                 double *sd, int n, int c, size_t hw, int g0, int g1)
{
    const int c0 = 8 * g0, c1 = 8 * g1;
    const size_t row = (size_t)c;
    float *fa = fs, *fb = fs + c;
    double *dg = sd, *dgx = sd + c;
    const float inv_hw = 1.0f / (float)hw;
    for (int ch = c0; ch < c1; ch++) {
        dg[ch] = dgx[ch] = 0.0;
    }
    /* a = gamma * invstd, b = beta - mean * a (z = x * a + b, as the forward) */
    float a[8], b[8];
    for (int i = 0; i < n; i++) {
        const size_t off = (size_t)i * hw * row;
        for (int ch = c0; ch < c1; ch += 8) {
            for (int l = 0; l < 8; l++) {
                a[l] = gamma[ch + l] * invstd[ch + l];
                b[l] = (beta ? beta[ch + l] : 0.0f) - mean[ch + l] * a[l];
            }
            const v8 va = *(const v8 *)a, vb = *(const v8 *)b;
            const v8 mu = *(const v8 *)(mean + ch), is = *(const v8 *)(invstd + ch);
            v8 s_ = {0}, p_ = {0};
            if (sc) {
                s_ = *(const v8 *)(sc + (size_t)i * c + ch);
                p_ = *(const v8 *)(dpool + (size_t)i * c + ch) * inv_hw;
            }
            v8 sg = {0}, sgx = {0};
            for (size_t s = 0; s < hw; s++) {
                const v8 xv = LD8(x + off + s * row + ch);
                v8 d = LD8(dy + off + s * row + ch), g;
                if (sc)
                    d = d * s_ + p_;
                const v8 z = xv * va + vb;
                ACT_GRAD(fn, z, d, g);
                sg += g;
                sgx += g * ((xv - mu) * is);
            }
            *(v8 *)(fa + ch) = sg;
            *(v8 *)(fb + ch) = sgx;
        }
        for (int ch = c0; ch < c1; ch++) {
            dg[ch] += fa[ch];
            dgx[ch] += fb[ch];
        }
    }
    const double m = (double)n * (double)hw;
    for (int ch = c0; ch < c1; ch++) {
        dbeta[ch] = (float)dg[ch];
        dgamma[ch] = (float)dgx[ch];
        fa[ch] = (float)(dg[ch] / m);  /* mean of g */
        fb[ch] = (float)(dgx[ch] / m); /* mean of g * xhat */
    }
    for (int i = 0; i < n; i++) {
        const size_t off = (size_t)i * hw * row;
        for (int ch = c0; ch < c1; ch += 8) {
            for (int l = 0; l < 8; l++) {
                a[l] = gamma[ch + l] * invstd[ch + l];
                b[l] = (beta ? beta[ch + l] : 0.0f) - mean[ch + l] * a[l];
            }
            const v8 va = *(const v8 *)a, vb = *(const v8 *)b;
            const v8 mu = *(const v8 *)(mean + ch), is = *(const v8 *)(invstd + ch);
            const v8 mg = *(const v8 *)(fa + ch), mgx = *(const v8 *)(fb + ch);
            v8 s_ = {0}, p_ = {0};
            if (sc) {
                s_ = *(const v8 *)(sc + (size_t)i * c + ch);
                p_ = *(const v8 *)(dpool + (size_t)i * c + ch) * inv_hw;
            }
            for (size_t s = 0; s < hw; s++) {
                const v8 xv = LD8(x + off + s * row + ch);
                v8 d = LD8(dy + off + s * row + ch), g;
                if (sc)
                    d = d * s_ + p_;
                const v8 z = xv * va + vb;
                ACT_GRAD(fn, z, d, g);
                const v8 o = va * (g - mg - ((xv - mu) * is) * mgx);
                ST8(dx + off + s * row + ch, o);
            }
        }
    }
}

static int bad_fn(int fn)
{
    return fn != NAS_FN_RELU && fn != NAS_FN_RELU6 && fn != NAS_FN_HSWISH &&
           fn != NAS__BN_IDENTITY;
}

static int threads_for(int nthr, int groups)
{
#ifdef _OPENMP
    if (nthr < 1)
        nthr = omp_get_max_threads();
#endif
    if (nthr > groups)
        nthr = groups;
    return nthr < 1 ? 1 : nthr;
}

int nas__cpu_bn_act_bf16_fwd(int fn, const unsigned short *x, const float *gamma,
                             const float *beta, unsigned short *y, float *pool, float *mean,
                             float *var, float *invstd, double *ws, int n, int c, size_t hw,
                             float eps, int nthr)
{
    if (bad_fn(fn) || !beta || !ws || c < 8 || c % 8 != 0 || n < 1 || hw < 1)
        return -1;
    const int groups = c / 8;
    nthr = threads_for(nthr, groups);
    float *fs = (float *)(ws + 2 * (size_t)c);
#pragma omp parallel num_threads(nthr)
    {
        int t = 0, nt = 1, g0, g1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        my_groups(groups, t, nt, &g0, &g1);
        if (g1 > g0)
            fwd_groups(fn, x, gamma, beta, y, pool, mean, var, invstd, fs, ws, n, c, hw, eps, g0,
                       g1);
    }
    return 0;
}

int nas__cpu_bn_act_bf16_bwd(int fn, const unsigned short *x, const unsigned short *dy,
                             const float *s, const float *dpool, const float *gamma,
                             const float *beta, const float *mean, const float *invstd,
                             unsigned short *dx, float *dgamma, float *dbeta, double *ws, int n,
                             int c, size_t hw, int nthr)
{
    if (bad_fn(fn) || (!beta && fn != NAS__BN_IDENTITY) || !ws || !s != !dpool || c < 8 ||
        c % 8 != 0 || n < 1 || hw < 1)
        return -1;
    const int groups = c / 8;
    nthr = threads_for(nthr, groups);
    float *fs = (float *)(ws + 2 * (size_t)c);
#pragma omp parallel num_threads(nthr)
    {
        int t = 0, nt = 1, g0, g1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        my_groups(groups, t, nt, &g0, &g1);
        if (g1 > g0)
            bwd_groups(fn, x, dy, s, dpool, gamma, beta, mean, invstd, dx, dgamma, dbeta, fs, ws,
                       n, c, hw, g0, g1);
    }
    return 0;
}
