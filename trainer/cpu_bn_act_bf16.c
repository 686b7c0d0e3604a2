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
 * oneDNN's generic nspc_bnorm. Also squeeze-and-excitation's channel
 * scale on the same tensors (y = x * s[n,c], ds = sum over H*W of dy * x),
 * which otherwise ran in fp32 on reordered copies.
 *
 * Layout: x[n][s][c] (s over H*W), C a multiple of 8. Work: the
 * statistics passes share out the channels over OpenMP's threads in runs
 * of whole 16-channel units (no two threads write one cache line of the
 * sums), each thread walking the pixels in memory order over its run;
 * after a barrier, the element-wise passes (y, dx) share out the images,
 * so no two threads write one cache line of y or dx (with 8-channel runs
 * they did, on every pixel, and the kernel was slower than oneDNN's).
 * Every channel's sums run on one thread over images, then positions, in
 * memory order, so results do not depend on the thread count;
 * CMakeLists.txt builds this file with -ffp-contract=off.
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

/* The range [*g0, *g1) of 8-channel groups of thread t of nt for the
 * statistics passes: whole 16-channel units (64 bytes of the float sums),
 * so that no two threads write the same cache line. */
static void my_groups(int groups, int t, int nt, int *g0, int *g1)
{
    const int units = (groups + 1) / 2;
    *g0 = 2 * (int)((long)units * t / nt);
    *g1 = 2 * (int)((long)units * (t + 1) / nt);
    if (*g1 > groups)
        *g1 = groups;
    if (*g0 > groups)
        *g0 = groups;
}

/* The images [*i0, *i1) of thread t of nt for the element-wise passes
 * (each thread whole rows of pixels: no shared cache lines in y, dx). */
static void my_images(int n, int t, int nt, int *i0, int *i1)
{
    *i0 = (int)((long)n * t / nt);
    *i1 = (int)((long)n * (t + 1) / nt);
}

/* The forward's output pass over images [i0, i1), every channel, pixel
 * by pixel (whole rows: each line of y written at once; writing it group
 * by group cost a read for ownership per group), z = x * a + b with a, b
 * in fs, the pool summed in place in its own entries; one copy of the
 * loop per activation (FN a constant). */
#define FWD_OUT_LOOP(FN)                                                                    \
    for (int i = i0; i < i1; i++) {                                                         \
        const size_t off = (size_t)i * hw * row;                                            \
        float *pacc = pool ? pool + (size_t)i * c : NULL;                                   \
        if (pool)                                                                           \
            for (int ch = 0; ch < c; ch += 8)                                               \
                *(v8 *)(pacc + ch) = (v8){0};                                               \
        for (size_t s = 0; s < hw; s++)                                                     \
            for (int ch = 0; ch < c; ch += 8) {                                             \
                const v8 z = LD8(x + off + s * row + ch) * *(const v8 *)(fsum + ch) +       \
                             *(const v8 *)(fsq + ch);                                       \
                v8 o;                                                                       \
                ACT(FN, z, o);                                                              \
                ST8(y + off + s * row + ch, o);                                             \
                if (pool)                                                                   \
                    *(v8 *)(pacc + ch) += LD8(y + off + s * row + ch);                      \
            }                                                                               \
        if (pool)                                                                           \
            for (int ch = 0; ch < c; ch += 8)                                               \
                *(v8 *)(pacc + ch) *= inv_hw;                                               \
    }

BN_CLONES static void fwd_out(int fn, const unsigned short *x, unsigned short *y, float *pool,
                              const float *fs, int c, size_t hw, int i0, int i1)
{
    const size_t row = (size_t)c;
    const float *fsum = fs, *fsq = fs + c;
    const float inv_hw = 1.0f / (float)hw;
    switch (fn) {
    case NAS_FN_RELU:
        FWD_OUT_LOOP(NAS_FN_RELU)
        break;
    case NAS_FN_RELU6:
        FWD_OUT_LOOP(NAS_FN_RELU6)
        break;
    case NAS_FN_HSWISH:
        FWD_OUT_LOOP(NAS_FN_HSWISH)
        break;
    default:
        FWD_OUT_LOOP(NAS__BN_IDENTITY)
    }
}

/* Forward, phase 0: the statistics of groups [g0, g1) and their output
 * scale and shift in fs (2*C floats; per-image partial sums before that),
 * sd: 2*C doubles. Phase 1 (after every thread's phase 0): y (and pool)
 * of images [i0, i1), every channel. */
BN_CLONES static void fwd_groups(int fn, const unsigned short *x, const float *gamma,
                                 const float *beta, unsigned short *y, float *pool, float *mean,
                                 float *var, float *invstd, float *fs, double *sd, int n, int c,
                                 size_t hw, float eps, int g0, int g1, int phase, int i0, int i1)
{
    if (phase == 1) {
        fwd_out(fn, x, y, pool, fs, c, hw, i0, i1);
        return;
    }
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
}

/* z = x * a + b with a = gamma * invstd, b = beta - mean * a (0 for a
 * missing beta), the forward's per-channel expressions, lane-wise */
#define AB(ch, va, vb)                                                                      \
    do {                                                                                    \
        va = *(const v8 *)(gamma + (ch)) * *(const v8 *)(invstd + (ch));                    \
        vb = (beta ? *(const v8 *)(beta + (ch)) : (v8){0}) - *(const v8 *)(mean + (ch)) * va; \
    } while (0)

/* One image's backward pass over channels [c0, c1), group by group with
 * the group's constants and sums in registers: SUMS 1 adds g and g * xhat
 * into fa, fb; SUMS 0 writes dx from the means of g and g * xhat in fa,
 * fb. FN a constant (one copy of the loop per activation). */
#define BWD_IMAGE(FN, SUMS)                                                                 \
    for (int ch = c0; ch < c1; ch += 8) {                                                   \
        v8 va, vb;                                                                          \
        AB(ch, va, vb);                                                                     \
        const v8 mu = *(const v8 *)(mean + ch), is = *(const v8 *)(invstd + ch);            \
        v8 s_ = {0}, p_ = {0};                                                              \
        if (sc) {                                                                           \
            s_ = *(const v8 *)(sc + (size_t)i * c + ch);                                    \
            p_ = *(const v8 *)(dpool + (size_t)i * c + ch) * inv_hw;                        \
        }                                                                                   \
        const v8 mg = *(const v8 *)(fa + ch), mgx = *(const v8 *)(fb + ch);                 \
        v8 sg = {0}, sgx = {0};                                                             \
        for (size_t s = 0; s < hw; s++) {                                                   \
            const v8 xv = LD8(x + off + s * row + ch);                                      \
            v8 d = LD8(dy + off + s * row + ch), g;                                         \
            if (sc)                                                                         \
                d = d * s_ + p_;                                                            \
            const v8 z = xv * va + vb;                                                      \
            ACT_GRAD(FN, z, d, g);                                                          \
            const v8 xh = (xv - mu) * is;                                                   \
            if (SUMS) {                                                                     \
                sg += g;                                                                    \
                sgx += g * xh;                                                              \
            } else {                                                                        \
                const v8 o = va * (g - mg - xh * mgx);                                      \
                ST8(dx + off + s * row + ch, o);                                            \
            }                                                                               \
        }                                                                                   \
        if (SUMS) {                                                                         \
            *(v8 *)(fa + ch) = sg;                                                          \
            *(v8 *)(fb + ch) = sgx;                                                         \
        }                                                                                   \
    }

#define BWD_SWITCH(SUMS)                                                                    \
    switch (fn) {                                                                           \
    case NAS_FN_RELU:                                                                       \
        BWD_IMAGE(NAS_FN_RELU, SUMS)                                                        \
        break;                                                                              \
    case NAS_FN_RELU6:                                                                      \
        BWD_IMAGE(NAS_FN_RELU6, SUMS)                                                       \
        break;                                                                              \
    case NAS_FN_HSWISH:                                                                     \
        BWD_IMAGE(NAS_FN_HSWISH, SUMS)                                                      \
        break;                                                                              \
    default:                                                                                \
        BWD_IMAGE(NAS__BN_IDENTITY, SUMS)                                                   \
    }

/* Backward, phase 0: the sums of g and g * xhat of groups [g0, g1)
 * (per-image partials in fs, 2*C floats, then the means of g and g * xhat
 * there; totals in sd, 2*C doubles). Phase 1 (after every thread's phase
 * 0): dx of images [i0, i1), every channel. */
BN_CLONES static void bwd_groups(int fn, const unsigned short *x, const unsigned short *dy,
                                 const float *sc, const float *dpool, const float *gamma,
                                 const float *beta, const float *mean, const float *invstd,
                                 unsigned short *dx, float *dgamma, float *dbeta, float *fs,
                                 double *sd, int n, int c, size_t hw, int g0, int g1, int phase,
                                 int i0, int i1)
{
    int c0 = 8 * g0, c1 = 8 * g1;
    const size_t row = (size_t)c;
    float *fa = fs, *fb = fs + c;
    double *dg = sd, *dgx = sd + c;
    const float inv_hw = 1.0f / (float)hw;
    if (phase == 1) {
        c0 = 0;
        c1 = c;
        for (int i = i0; i < i1; i++) {
            const size_t off = (size_t)i * hw * row;
            BWD_SWITCH(0)
        }
        return;
    }
    for (int ch = c0; ch < c1; ch++)
        dg[ch] = dgx[ch] = 0.0;
    for (int i = 0; i < n; i++) {
        const size_t off = (size_t)i * hw * row;
        BWD_SWITCH(1)
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
}

static int bad_fn(int fn)
{
    return fn != NAS_FN_RELU && fn != NAS_FN_RELU6 && fn != NAS_FN_HSWISH &&
           fn != NAS__BN_IDENTITY;
}

int nas__cpu_bn_act_bf16_fwd(int fn, const unsigned short *x, const float *gamma,
                             const float *beta, unsigned short *y, float *pool, float *mean,
                             float *var, float *invstd, double *ws, int n, int c, size_t hw,
                             float eps, int nthr)
{
    if (bad_fn(fn) || !beta || !ws || c < 8 || c % 8 != 0 || n < 1 || hw < 1)
        return -1;
    const int groups = c / 8;
    nthr = nas__cpu_threads(nthr, n > groups ? n : groups);
    float *fs = (float *)(ws + 2 * (size_t)c);
#pragma omp parallel num_threads(nthr)
    {
        int t = 0, nt = 1, g0, g1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        int i0, i1;
        my_groups(groups, t, nt, &g0, &g1);
        my_images(n, t, nt, &i0, &i1);
        if (g1 > g0)
            fwd_groups(fn, x, gamma, beta, y, pool, mean, var, invstd, fs, ws, n, c, hw, eps, g0,
                       g1, 0, 0, 0);
#pragma omp barrier
        if (i1 > i0)
            fwd_groups(fn, x, gamma, beta, y, pool, mean, var, invstd, fs, ws, n, c, hw, eps, 0,
                       0, 1, i0, i1);
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
    nthr = nas__cpu_threads(nthr, n > groups ? n : groups);
    float *fs = (float *)(ws + 2 * (size_t)c);
#pragma omp parallel num_threads(nthr)
    {
        int t = 0, nt = 1, g0, g1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        int i0, i1;
        my_groups(groups, t, nt, &g0, &g1);
        my_images(n, t, nt, &i0, &i1);
        if (g1 > g0)
            bwd_groups(fn, x, dy, s, dpool, gamma, beta, mean, invstd, dx, dgamma, dbeta, fs, ws,
                       n, c, hw, g0, g1, 0, 0, 0);
#pragma omp barrier
        if (i1 > i0)
            bwd_groups(fn, x, dy, s, dpool, gamma, beta, mean, invstd, dx, dgamma, dbeta, fs, ws,
                       n, c, hw, 0, 0, 1, i0, i1);
    }
    return 0;
}

/* ---- squeeze-and-excitation's channel scale on bf16 nhwc ------------------------- */

BN_CLONES static void chscale_fwd_image(const unsigned short *x, const float *s,
                                        unsigned short *y, int c, size_t hw)
{
    for (size_t p = 0; p < hw; p++)
        for (int ch = 0; ch < c; ch += 8) {
            const v8 o = LD8(x + p * c + ch) * *(const v8 *)(s + ch);
            ST8(y + p * c + ch, o);
        }
}

BN_CLONES static void chscale_bwd_image(const unsigned short *x, const float *s,
                                        const unsigned short *dy, unsigned short *dx, float *ds,
                                        int c, size_t hw)
{
    for (int ch = 0; ch < c; ch += 8)
        *(v8 *)(ds + ch) = (v8){0};
    for (size_t p = 0; p < hw; p++)
        for (int ch = 0; ch < c; ch += 8) {
            const v8 d = LD8(dy + p * c + ch);
            *(v8 *)(ds + ch) += d * LD8(x + p * c + ch);
            if (dx) {
                const v8 o = d * *(const v8 *)(s + ch);
                ST8(dx + p * c + ch, o);
            }
        }
}

int nas__cpu_chscale_bf16_fwd(const unsigned short *x, const float *s, unsigned short *y, int n,
                              int c, size_t hw, int nthr)
{
    if (c < 8 || c % 8 != 0 || n < 1 || hw < 1)
        return -1;
    nthr = nas__cpu_threads(nthr, n);
#pragma omp parallel for num_threads(nthr) schedule(static)
    for (int i = 0; i < n; i++)
        chscale_fwd_image(x + (size_t)i * hw * c, s + (size_t)i * c, y + (size_t)i * hw * c, c,
                          hw);
    return 0;
}

int nas__cpu_chscale_bf16_bwd(const unsigned short *x, const float *s, const unsigned short *dy,
                              unsigned short *dx, float *ds, int n, int c, size_t hw, int nthr)
{
    if (c < 8 || c % 8 != 0 || n < 1 || hw < 1 || !dy || !ds)
        return -1;
    nthr = nas__cpu_threads(nthr, n);
#pragma omp parallel for num_threads(nthr) schedule(static)
    for (int i = 0; i < n; i++)
        chscale_bwd_image(x + (size_t)i * hw * c, s + (size_t)i * c, dy + (size_t)i * hw * c,
                          dx ? dx + (size_t)i * hw * c : NULL, ds + (size_t)i * c, c, hw);
    return 0;
}
