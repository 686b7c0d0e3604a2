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
 * which otherwise ran in fp32 on reordered copies, and global average
 * pooling (SE's squeeze where it is not fused, the head).
 * Two implementations of the batch norm and channel scale: generic GCC
 * vector passes (any x86-64 or other host), and AVX512-BF16 passes
 * chosen at run time (below, "the same kernel with AVX512-BF16
 * instructions"; same bytes but for denormal results); the cpu backend
 * sends every bf16 batch norm here on AVX512-BF16 hosts, elsewhere only
 * those with C not a multiple of 16 (backend_cpu.c, own_bf16_bn).
 *
 * Layout: x[n][s][c] (s over H*W), C a multiple of 8. Work, in one
 * OpenMP region with one barrier:
 * 1. each thread a run of whole images: per image and channel the sums
 *    over its pixels in memory order, in float, one row of the
 *    workspace per image;
 * 2. the last thread to finish its rows (an atomic count) adds them per
 *    channel in image order, in double, while the others wait at the
 *    barrier (a second barrier, with the channels shared out, cost more
 *    than this reduction of N x C values: under OMP_WAIT_POLICY=passive
 *    every barrier is a sleep and a wake-up);
 * 3. each thread its images again: the element-wise pass (y, dx), so no
 *    two threads write one cache line of y or dx (with 8-channel runs
 *    they did, on every pixel, and the kernel was slower than oneDNN's).
 * Step 1 shared out channels before session 24, which left 16 channels
 * (a chain net's stem and first stage) to one thread and 48 at 2:1; by
 * images every C splits evenly (experiments/bench-train/README.md). The
 * float and double sums, and their order, are those of that version (the
 * same bytes), and do not depend on the thread count;
 * CMakeLists.txt builds this file with -ffp-contract=off.
 */
#include <math.h>   /* sqrt */
#include <stdatomic.h> /* atomic_int: the last thread to finish the sums reduces them */
#include <stddef.h> /* size_t */
#include <string.h> /* memcpy */
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
                      SEL((z) >= 3.0f, z, (z) * ((z) + three_) * (1.0f / 6.0f)));           \
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
                      SEL((z) > 3.0f, g, (g) * ((z) * (1.0f / 3.0f) + 0.5f)));              \
        else                                                                                \
            out = g;                                                                        \
    } while (0)

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define BN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define BN_CLONES
#endif

/* The end of the forward's statistics pass for the C channels: from
 * the sums of the shifted values (dsum, dsq over m values; mean holds the
 * shift) the mean, biased variance and invstd, and the output pass's
 * per-channel scale a and shift b (z = x * a + b) in fa, fb. */
static void fwd_finish(const float *gamma, const float *beta, float *mean, float *var,
                       float *invstd, float *fa, float *fb, const double *dsum,
                       const double *dsq, double m, float eps, int c)
{
    for (int ch = 0; ch < c; ch++) {
        double mu = dsum[ch] / m, v = dsq[ch] / m - mu * mu;
        if (v < 0.0)
            v = 0.0;
        mean[ch] = (float)((double)mean[ch] + mu);
        var[ch] = (float)v;
        invstd[ch] = (float)(1.0 / sqrt(v + (double)eps));
        fa[ch] = gamma[ch] * invstd[ch];
        fb[ch] = beta[ch] - mean[ch] * fa[ch];
    }
}

/* The end of the backward's reduction for the C channels: dbeta and
 * dgamma from the sums of g and g * xhat (dg, dgx, m values each), and
 * their means in fa, fb for the dx pass. */
static void bwd_finish(float *dgamma, float *dbeta, float *fa, float *fb, const double *dg,
                       const double *dgx, double m, int c)
{
    for (int ch = 0; ch < c; ch++) {
        dbeta[ch] = (float)dg[ch];
        dgamma[ch] = (float)dgx[ch];
        fa[ch] = (float)(dg[ch] / m);  /* mean of g */
        fb[ch] = (float)(dgx[ch] / m); /* mean of g * xhat */
    }
}

/* sd[ch] and sd[C + ch] for every channel: the per-image rows of p
 * (2*C floats each: C sums of one kind, then C of the other) added in
 * image order, in double. Row 0 may then be overwritten (fwd_finish,
 * bwd_finish write there). */
static void sum_rows(const float *p, double *sd, int n, int c)
{
    for (int ch = 0; ch < c; ch++)
        sd[ch] = sd[c + ch] = 0.0;
    for (int i = 0; i < n; i++) {
        const float *r = p + (size_t)i * 2 * (size_t)c;
        for (int ch = 0; ch < c; ch++) {
            sd[ch] += r[ch];
            sd[c + ch] += r[c + ch];
        }
    }
}

/* 1 for the last of the nt threads of a parallel region to call this
 * (once each) on *arrived (0 before the region): that thread then sees
 * every row the others wrote before their call (acquire-release), and can
 * reduce them while the others go on to the barrier after it. One barrier
 * per call instead of two (each costs a sleep and a wake-up under
 * OMP_WAIT_POLICY=passive). */
static int last_to_arrive(atomic_int *arrived, int nt)
{
    return atomic_fetch_add_explicit(arrived, 1, memory_order_acq_rel) + 1 == nt;
}

/* one bf16 value as a float (exact) */
static inline float bf16_to_float(unsigned short v)
{
    const unsigned int u = (unsigned int)v << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The images [*i0, *i1) of thread t of nt for the sums and the
 * element-wise passes (each thread whole rows of pixels: no shared cache
 * lines in the sums' rows, y or dx). */
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

/* Forward, statistics: for each image i of [i0, i1) the sums over its
 * pixels (memory order) of the shifted values x - mean and of their
 * squares, per channel in float, as row i of p (C sums, then C sums of
 * squares); mean holds the shift. */
BN_CLONES static void fwd_sums(const unsigned short *x, const float *mean, float *p, int c,
                               size_t hw, int i0, int i1)
{
    const size_t row = (size_t)c;
    for (int i = i0; i < i1; i++) {
        float *fsum = p + (size_t)i * 2 * row, *fsq = fsum + row;
        for (int ch = 0; ch < c; ch += 8)
            *(v8 *)(fsum + ch) = *(v8 *)(fsq + ch) = (v8){0};
        const unsigned short *xi = x + (size_t)i * hw * row;
        for (size_t s = 0; s < hw; s++)
            for (int ch = 0; ch < c; ch += 8) {
                const v8 d = LD8(xi + s * row + ch) - *(const v8 *)(mean + ch);
                *(v8 *)(fsum + ch) += d;
                *(v8 *)(fsq + ch) += d * d;
            }
    }
}

/* z = x * a + b with a = gamma * invstd, b = beta - mean * a (0 for a
 * missing beta), the forward's per-channel expressions, lane-wise */
#define AB(ch, va, vb)                                                                      \
    do {                                                                                    \
        va = *(const v8 *)(gamma + (ch)) * *(const v8 *)(invstd + (ch));                    \
        vb = (beta ? *(const v8 *)(beta + (ch)) : (v8){0}) - *(const v8 *)(mean + (ch)) * va; \
    } while (0)

/* One image's backward pass over its C channels, group by group with the group's constants and sums in registers: SUMS 1
 * writes the sums of g and g * xhat to fa, fb; SUMS 0 writes dx from
 * the means of g and g * xhat in fa, fb. FN a constant (one copy of the
 * loop per activation). */
#define BWD_IMAGE(FN, SUMS)                                                                 \
    for (int ch = 0; ch < c; ch += 8) {                                                     \
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

/* Backward over images [i0, i1), every channel: with sums 1 the sums over
 * each image's pixels (memory order) of g and g * xhat per channel in
 * float, as row i of p (C and C floats); with sums 0 dx, from the means of
 * g and g * xhat in p (C and C floats). */
BN_CLONES static void bwd_pass(int fn, int sums, const unsigned short *x,
                               const unsigned short *dy, const float *sc, const float *dpool,
                               const float *gamma, const float *beta, const float *mean,
                               const float *invstd, unsigned short *dx, float *p, int c,
                               size_t hw, int i0, int i1)
{
    const size_t row = (size_t)c;
    const float inv_hw = 1.0f / (float)hw;
    for (int i = i0; i < i1; i++) {
        const size_t off = (size_t)i * hw * row;
        float *fa = sums ? p + (size_t)i * 2 * row : p, *fb = fa + row;
        if (sums)
            BWD_SWITCH(1)
        else
            BWD_SWITCH(0)
    }
}

/* ---- the same kernel with AVX512-BF16 instructions ------------------------------- */

/*
 * On hosts with AVX512-BF16 (Intel Cooper Lake, Sapphire Rapids and
 * later, AMD Zen 4 and later; oneDNN's avx512_core_bf16) the passes above run as the functions
 * below: 16 channels (one 64-byte line of floats, 32 bytes of bf16) per
 * vector, bf16 -> float as a 16-bit shift of the zero-extended pattern
 * (exact), float -> bf16 by VCVTNEPS2BF16, which rounds to nearest even
 * and keeps NaN a (quiet) NaN as ST8 does, in one instruction where ST8
 * takes about ten. The arithmetic is the generic passes' lane by lane (the
 * same products, sums and order, no fused multiply-add), so the two give
 * the same bytes, but for one thing: VCVTNEPS2BF16 flushes denormal
 * results (|v| < 2^-126) to zero, as oneDNN's bf16 kernels do (Intel SDM,
 * "VCVTNEPS2BF16"). tests/conformance/test_lane_bits.c compares the two.
 * A C % 16 == 8 tail runs with 128-bit loads and stores of its 8 bf16
 * values; masks are used only outside the pixel loops.
 */
#if defined(__GNUC__) && defined(__x86_64__) &&                                         \
    (defined(__clang__) ? __clang_major__ >= 9 : __GNUC__ >= 10)
#define HAVE_AVX512BF16 1
#include <immintrin.h>

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define TGT_INLINE TGT __attribute__((always_inline)) static inline

/* Channels per block of the passes below: their per-channel constants and
 * sums are stack arrays of BLK floats (1 KiB each), read and written whole
 * (unmasked, 64-byte aligned) in the pixel loops. A first version with
 * masked loads and stores in those loops (and per-group strided walks)
 * was 2-4x slower on this AMD Zen 4 host; perf put its time on the masked
 * accesses (experiments/bench-train/README.md, session 20). */
#define BLK 256
#define ALIGNED64 __attribute__((aligned(64)))

/* 16 bf16 at p as floats, exactly; full 0: only the first 8 (the rest 0) */
TGT_INLINE __m512 ld16(const unsigned short *p, int full)
{
    const __m256i h = full ? _mm256_loadu_si256((const __m256i *)p)
                           : _mm256_zextsi128_si256(_mm_loadu_si128((const __m128i *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
/* v rounded to bf16 (nearest even, NaN stays NaN, denormals to 0) at p
 * (full 0: the first 8 lanes only); returns the rounded values as floats */
TGT_INLINE __m512 st16(unsigned short *p, int full, __m512 v)
{
    const __m256i h = (__m256i)_mm512_cvtneps_pbh(v);
    if (full)
        _mm256_storeu_si256((__m256i *)p, h);
    else
        _mm_storeu_si128((__m128i *)p, _mm256_castsi256_si128(h));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
/* the 16 floats at p of channels ch.. of C (past C: 0), outside the loops */
TGT_INLINE __m512 ldc(const float *p, int ch, int c)
{
    return _mm512_maskz_loadu_ps(c - ch >= 16 ? 0xffff : (__mmask16)((1u << (c - ch)) - 1u), p);
}
/* v's lanes of channels ch.. of C stored at p */
TGT_INLINE void stc(float *p, int ch, int c, __m512 v)
{
    _mm512_mask_storeu_ps(p, c - ch >= 16 ? 0xffff : (__mmask16)((1u << (c - ch)) - 1u), v);
}
#define LD(a, j) _mm512_load_ps((a) + (j))
#define ST(a, j, v) _mm512_store_ps((a) + (j), (v))

/* ACT and ACT_GRAD of the generic passes: the same selections, the same
 * arithmetic (comparisons ordered: a NaN z selects as there) */
TGT_INLINE __m512 act16(int fn, __m512 z)
{
    const __m512 zero = _mm512_setzero_ps();
    if (fn == NAS_FN_RELU)
        return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(z, zero, _CMP_GT_OQ), z);
    if (fn == NAS_FN_RELU6) {
        __m512 o = _mm512_mask_mov_ps(z, _mm512_cmp_ps_mask(z, _mm512_set1_ps(6.0f), _CMP_GT_OQ),
                                      _mm512_set1_ps(6.0f));
        return _mm512_mask_mov_ps(o, _mm512_cmp_ps_mask(z, zero, _CMP_LT_OQ), zero);
    }
    if (fn == NAS_FN_HSWISH) {
        const __m512 h = _mm512_mul_ps(_mm512_mul_ps(z, _mm512_add_ps(z, _mm512_set1_ps(3.0f))),
                                       _mm512_set1_ps(1.0f / 6.0f));
        const __m512 o =
            _mm512_mask_mov_ps(h, _mm512_cmp_ps_mask(z, _mm512_set1_ps(3.0f), _CMP_GE_OQ), z);
        return _mm512_mask_mov_ps(o, _mm512_cmp_ps_mask(z, _mm512_set1_ps(-3.0f), _CMP_LE_OQ),
                                  zero);
    }
    return z;
}
TGT_INLINE __m512 act_grad16(int fn, __m512 z, __m512 g)
{
    const __m512 zero = _mm512_setzero_ps();
    if (fn == NAS_FN_RELU)
        return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(z, zero, _CMP_GT_OQ), g);
    if (fn == NAS_FN_RELU6)
        return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(z, zero, _CMP_GT_OQ) &
                                       _mm512_cmp_ps_mask(z, _mm512_set1_ps(6.0f), _CMP_LT_OQ),
                                   g);
    if (fn == NAS_FN_HSWISH) {
        const __m512 d = _mm512_mul_ps(
            g, _mm512_add_ps(_mm512_mul_ps(z, _mm512_set1_ps(1.0f / 3.0f)), _mm512_set1_ps(0.5f)));
        const __m512 o =
            _mm512_mask_mov_ps(d, _mm512_cmp_ps_mask(z, _mm512_set1_ps(3.0f), _CMP_GT_OQ), g);
        return _mm512_mask_mov_ps(o, _mm512_cmp_ps_mask(z, _mm512_set1_ps(-3.0f), _CMP_LT_OQ),
                                  zero);
    }
    return g;
}

/* fwd_sums with AVX512-BF16: per image of [i0, i1) and block of
 * channels, the pixels in memory order, the sums of the shifted values
 * per channel in float (as the generic pass, lane by lane), as row i of
 * p. */
TGT static void fwd_sums_avx(const unsigned short *x, const float *mean, float *p, int c,
                             size_t hw, int i0, int i1)
{
    const size_t row = (size_t)c;
    for (int k0 = 0; k0 < c; k0 += BLK) {
        const int k1 = c - k0 > BLK ? k0 + BLK : c;
        float mu[BLK] ALIGNED64, su[BLK] ALIGNED64, sq[BLK] ALIGNED64;
        for (int ch = k0; ch < k1; ch += 16)
            ST(mu, ch - k0, ldc(mean + ch, ch, k1));
        for (int i = i0; i < i1; i++) {
            const unsigned short *xi = x + (size_t)i * hw * row;
            float *pi = p + (size_t)i * 2 * row;
            for (int j = 0; j < k1 - k0; j += 16) {
                ST(su, j, _mm512_setzero_ps());
                ST(sq, j, _mm512_setzero_ps());
            }
            for (size_t s = 0; s < hw; s++)
                for (int ch = k0; ch < k1; ch += 16) {
                    const int j = ch - k0;
                    const __m512 d = _mm512_sub_ps(ld16(xi + s * row + ch, k1 - ch >= 16),
                                                   LD(mu, j));
                    ST(su, j, _mm512_add_ps(LD(su, j), d));
                    ST(sq, j, _mm512_add_ps(LD(sq, j), _mm512_mul_ps(d, d)));
                }
            for (int ch = k0; ch < k1; ch += 16) {
                stc(pi + ch, ch, k1, LD(su, ch - k0));
                stc(pi + row + ch, ch, k1, LD(sq, ch - k0));
            }
        }
    }
}

/* fwd_out: y (and pool) of images [i0, i1), the pixels in memory order,
 * every channel of a block at each; z = x * a + b with a, b in fs. */
TGT_INLINE void fwd_out_avx_fn(int fn, const unsigned short *x, unsigned short *y, float *pool,
                               const float *fs, int c, size_t hw, int i0, int i1)
{
    const size_t row = (size_t)c;
    const __m512 inv_hw = _mm512_set1_ps(1.0f / (float)hw);
    for (int k0 = 0; k0 < c; k0 += BLK) {
        const int k1 = c - k0 > BLK ? k0 + BLK : c;
        float va[BLK] ALIGNED64, vb[BLK] ALIGNED64, acc[BLK] ALIGNED64;
        for (int ch = k0; ch < k1; ch += 16) {
            ST(va, ch - k0, ldc(fs + ch, ch, k1));
            ST(vb, ch - k0, ldc(fs + c + ch, ch, k1));
        }
        for (int i = i0; i < i1; i++) {
            const size_t off = (size_t)i * hw * row;
            for (int j = 0; j < k1 - k0; j += 16)
                ST(acc, j, _mm512_setzero_ps());
            for (size_t s = 0; s < hw; s++)
                for (int ch = k0; ch < k1; ch += 16) {
                    const int j = ch - k0, full = k1 - ch >= 16;
                    const __m512 z = _mm512_add_ps(
                        _mm512_mul_ps(ld16(x + off + s * row + ch, full), LD(va, j)), LD(vb, j));
                    const __m512 o = st16(y + off + s * row + ch, full, act16(fn, z));
                    if (pool)
                        ST(acc, j, _mm512_add_ps(LD(acc, j), o));
                }
            if (pool)
                for (int ch = k0; ch < k1; ch += 16)
                    stc(pool + (size_t)i * c + ch, ch, k1,
                        _mm512_mul_ps(LD(acc, ch - k0), inv_hw));
        }
    }
}

/* fwd_out_avx_fn with fn a constant (one copy of the loop each) */
TGT static void fwd_out_avx(int fn, const unsigned short *x, unsigned short *y, float *pool,
                            const float *fs, int c, size_t hw, int i0, int i1)
{
    switch (fn) {
    case NAS_FN_RELU:
        fwd_out_avx_fn(NAS_FN_RELU, x, y, pool, fs, c, hw, i0, i1);
        break;
    case NAS_FN_RELU6:
        fwd_out_avx_fn(NAS_FN_RELU6, x, y, pool, fs, c, hw, i0, i1);
        break;
    case NAS_FN_HSWISH:
        fwd_out_avx_fn(NAS_FN_HSWISH, x, y, pool, fs, c, hw, i0, i1);
        break;
    default:
        fwd_out_avx_fn(NAS__BN_IDENTITY, x, y, pool, fs, c, hw, i0, i1);
    }
}

/* One image's backward over its C channels, as
 * BWD_IMAGE (the same operations per lane): SUMS 1 writes the sums of g
 * and g * xhat to fa, fb; SUMS 0 writes dx from their means in fa, fb.
 * Unlike BWD_IMAGE it walks the image's pixels in memory order, all of a
 * block's channels at each pixel (strided 32-byte pieces, one channel
 * group at a time, left the loads waiting: 1.3-2x slower). */
TGT_INLINE void bwd_image_avx(int fn, int sums, const unsigned short *x,
                              const unsigned short *dy, const float *sc, const float *dpool,
                              const float *gamma, const float *beta, const float *mean,
                              const float *invstd, unsigned short *dx, float *fa, float *fb,
                              int i, int c, size_t hw)
{
    const size_t row = (size_t)c, off = (size_t)i * hw * row;
    const __m512 inv_hw = _mm512_set1_ps(1.0f / (float)hw);
    for (int k0 = 0; k0 < c; k0 += BLK) {
        const int k1 = c - k0 > BLK ? k0 + BLK : c;
        /* per channel ch = k0 + j: z = x * va + vb, xhat = (x - mu) * is, dy' = dy * sv + pv;
         * m1, m2 the means of g and g * xhat (SUMS 0) or their sums (SUMS 1) */
        float va[BLK] ALIGNED64, vb[BLK] ALIGNED64, mu[BLK] ALIGNED64, is[BLK] ALIGNED64;
        float sv[BLK] ALIGNED64, pv[BLK] ALIGNED64, m1[BLK] ALIGNED64, m2[BLK] ALIGNED64;
        for (int ch = k0; ch < k1; ch += 16) {
            const int j = ch - k0;
            const __m512 a = _mm512_mul_ps(ldc(gamma + ch, ch, k1), ldc(invstd + ch, ch, k1));
            ST(va, j, a);
            ST(vb, j, _mm512_sub_ps(beta ? ldc(beta + ch, ch, k1) : _mm512_setzero_ps(),
                                    _mm512_mul_ps(ldc(mean + ch, ch, k1), a)));
            ST(mu, j, ldc(mean + ch, ch, k1));
            ST(is, j, ldc(invstd + ch, ch, k1));
            if (sc) {
                ST(sv, j, ldc(sc + (size_t)i * c + ch, ch, k1));
                ST(pv, j, _mm512_mul_ps(ldc(dpool + (size_t)i * c + ch, ch, k1), inv_hw));
            }
            ST(m1, j, sums ? _mm512_setzero_ps() : ldc(fa + ch, ch, k1));
            ST(m2, j, sums ? _mm512_setzero_ps() : ldc(fb + ch, ch, k1));
        }
        for (size_t s = 0; s < hw; s++)
            for (int ch = k0; ch < k1; ch += 16) {
                const int j = ch - k0, full = k1 - ch >= 16;
                const size_t e = off + s * row + ch;
                const __m512 xv = ld16(x + e, full), a = LD(va, j);
                __m512 d = ld16(dy + e, full);
                if (sc)
                    d = _mm512_add_ps(_mm512_mul_ps(d, LD(sv, j)), LD(pv, j));
                const __m512 z = _mm512_add_ps(_mm512_mul_ps(xv, a), LD(vb, j));
                const __m512 g = act_grad16(fn, z, d);
                const __m512 xh = _mm512_mul_ps(_mm512_sub_ps(xv, LD(mu, j)), LD(is, j));
                if (sums) {
                    ST(m1, j, _mm512_add_ps(LD(m1, j), g));
                    ST(m2, j, _mm512_add_ps(LD(m2, j), _mm512_mul_ps(g, xh)));
                } else {
                    const __m512 t =
                        _mm512_sub_ps(_mm512_sub_ps(g, LD(m1, j)), _mm512_mul_ps(xh, LD(m2, j)));
                    st16(dx + e, full, _mm512_mul_ps(a, t));
                }
            }
        if (sums)
            for (int ch = k0; ch < k1; ch += 16) {
                stc(fa + ch, ch, k1, LD(m1, ch - k0));
                stc(fb + ch, ch, k1, LD(m2, ch - k0));
            }
    }
}

/* bwd_image_avx with fn and sums constants (one copy of the loop each) */
#define BWD_AVX_SWITCH(SUMS)                                                                \
    switch (fn) {                                                                           \
    case NAS_FN_RELU:                                                                       \
        bwd_image_avx(NAS_FN_RELU, SUMS, x, dy, sc, dpool, gamma, beta, mean, invstd, dx,   \
                      fa, fb, i, c, hw);                                                    \
        break;                                                                              \
    case NAS_FN_RELU6:                                                                      \
        bwd_image_avx(NAS_FN_RELU6, SUMS, x, dy, sc, dpool, gamma, beta, mean, invstd, dx,  \
                      fa, fb, i, c, hw);                                                    \
        break;                                                                              \
    case NAS_FN_HSWISH:                                                                     \
        bwd_image_avx(NAS_FN_HSWISH, SUMS, x, dy, sc, dpool, gamma, beta, mean, invstd, dx, \
                      fa, fb, i, c, hw);                                                    \
        break;                                                                              \
    default:                                                                                \
        bwd_image_avx(NAS__BN_IDENTITY, SUMS, x, dy, sc, dpool, gamma, beta, mean, invstd,  \
                      dx, fa, fb, i, c, hw);                                                \
    }

/* bwd_pass with the AVX512-BF16 passes */
TGT static void bwd_pass_avx(int fn, int sums, const unsigned short *x, const unsigned short *dy,
                             const float *sc, const float *dpool, const float *gamma,
                             const float *beta, const float *mean, const float *invstd,
                             unsigned short *dx, float *p, int c, size_t hw, int i0, int i1)
{
    for (int i = i0; i < i1; i++) {
        float *fa = sums ? p + (size_t)i * 2 * (size_t)c : p, *fb = fa + c;
        if (sums)
            BWD_AVX_SWITCH(1)
        else
            BWD_AVX_SWITCH(0)
    }
}

/* chscale_fwd_image / chscale_bwd_image with AVX512-BF16: one image
 * x[hw][c], its scales s[c] (and ds[c]) in 64-byte aligned stack copies,
 * the same products and sums per lane (ds in memory order of the pixels),
 * so the same bytes (but for denormal results). */
TGT static void chscale_fwd_image_avx(const unsigned short *x, const float *s,
                                      unsigned short *y, int c, size_t hw)
{
    for (int k0 = 0; k0 < c; k0 += BLK) {
        const int k1 = c - k0 > BLK ? k0 + BLK : c;
        float sv[BLK] ALIGNED64;
        for (int ch = k0; ch < k1; ch += 16)
            ST(sv, ch - k0, ldc(s + ch, ch, k1));
        for (size_t p = 0; p < hw; p++)
            for (int ch = k0; ch < k1; ch += 16) {
                const int full = k1 - ch >= 16;
                st16(y + p * c + ch, full,
                     _mm512_mul_ps(ld16(x + p * c + ch, full), LD(sv, ch - k0)));
            }
    }
}

TGT static void chscale_bwd_image_avx(const unsigned short *x, const float *s,
                                      const unsigned short *dy, unsigned short *dx, float *ds,
                                      int c, size_t hw)
{
    for (int k0 = 0; k0 < c; k0 += BLK) {
        const int k1 = c - k0 > BLK ? k0 + BLK : c;
        float sv[BLK] ALIGNED64, acc[BLK] ALIGNED64;
        for (int ch = k0; ch < k1; ch += 16) {
            ST(sv, ch - k0, ldc(s + ch, ch, k1));
            ST(acc, ch - k0, _mm512_setzero_ps());
        }
        for (size_t p = 0; p < hw; p++)
            for (int ch = k0; ch < k1; ch += 16) {
                const int j = ch - k0, full = k1 - ch >= 16;
                const __m512 d = ld16(dy + p * c + ch, full);
                const __m512 xv = ld16(x + p * c + ch, full);
                ST(acc, j, _mm512_add_ps(LD(acc, j), _mm512_mul_ps(d, xv)));
                if (dx)
                    st16(dx + p * c + ch, full, _mm512_mul_ps(d, LD(sv, j)));
            }
        for (int ch = k0; ch < k1; ch += 16)
            stc(ds + ch, ch, k1, LD(acc, ch - k0));
    }
}

/* 1 when this host runs the AVX512-BF16 passes (the CPU has the
 * instructions and the OS saves the 512-bit registers, as
 * __builtin_cpu_supports checks). */
int nas__cpu_bf16_native(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}
#else
int nas__cpu_bf16_native(void) { return 0; }
#endif

static int bad_fn(int fn)
{
    return fn != NAS_FN_RELU && fn != NAS_FN_RELU6 && fn != NAS_FN_HSWISH &&
           fn != NAS__BN_IDENTITY;
}

/* 1 to run the AVX512-BF16 passes, 0 the generic ones, -1 for isa
 * NAS__BF16_NATIVE on a host (or build) without them */
static int use_native(int isa)
{
    if (isa == NAS__BF16_GENERIC)
        return 0;
    const int have = nas__cpu_bf16_native();
    return isa == NAS__BF16_NATIVE && !have ? -1 : have;
}

int nas__cpu_bn_act_bf16_fwd(int fn, const unsigned short *x, const float *gamma,
                             const float *beta, unsigned short *y, float *pool, float *mean,
                             float *var, float *invstd, double *ws, int n, int c, size_t hw,
                             float eps, int nthr, int isa)
{
    const int native = use_native(isa);
    if (bad_fn(fn) || !beta || !ws || c < 8 || c % 8 != 0 || n < 1 || hw < 1 || native < 0)
        return -1;
    nthr = nas__cpu_threads(nthr, n);
    float *fs = (float *)(ws + 2 * (size_t)c);
    for (int ch = 0; ch < c; ch++)
        mean[ch] = bf16_to_float(x[ch]); /* the shift: the channel's first value */
    atomic_int arrived = 0;
#pragma omp parallel num_threads(nthr) shared(arrived)
    {
        int t = 0, nt = 1, i0, i1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        my_images(n, t, nt, &i0, &i1);
#ifdef HAVE_AVX512BF16
        if (native && i1 > i0)
            fwd_sums_avx(x, mean, fs, c, hw, i0, i1);
#endif
        if (!native && i1 > i0)
            fwd_sums(x, mean, fs, c, hw, i0, i1);
        if (last_to_arrive(&arrived, nt)) {
            sum_rows(fs, ws, n, c);
            fwd_finish(gamma, beta, mean, var, invstd, fs, fs + c, ws, ws + c,
                       (double)n * (double)hw, eps, c);
        }
#pragma omp barrier
#ifdef HAVE_AVX512BF16
        if (native && i1 > i0)
            fwd_out_avx(fn, x, y, pool, fs, c, hw, i0, i1);
#endif
        if (!native && i1 > i0)
            fwd_out(fn, x, y, pool, fs, c, hw, i0, i1);
    }
    return 0;
}

int nas__cpu_bn_act_bf16_bwd(int fn, const unsigned short *x, const unsigned short *dy,
                             const float *s, const float *dpool, const float *gamma,
                             const float *beta, const float *mean, const float *invstd,
                             unsigned short *dx, float *dgamma, float *dbeta, double *ws, int n,
                             int c, size_t hw, int nthr, int isa)
{
    const int native = use_native(isa);
    if (bad_fn(fn) || (!beta && fn != NAS__BN_IDENTITY) || !ws || !s != !dpool || c < 8 ||
        c % 8 != 0 || n < 1 || hw < 1 || native < 0)
        return -1;
    nthr = nas__cpu_threads(nthr, n);
    float *fs = (float *)(ws + 2 * (size_t)c);
    atomic_int arrived = 0;
#pragma omp parallel num_threads(nthr) shared(arrived)
    {
        int t = 0, nt = 1, i0, i1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        my_images(n, t, nt, &i0, &i1);
        for (int sums = 1; sums >= 0; sums--) {
#ifdef HAVE_AVX512BF16
            if (native && i1 > i0)
                bwd_pass_avx(fn, sums, x, dy, s, dpool, gamma, beta, mean, invstd, dx, fs, c, hw,
                             i0, i1);
#endif
            if (!native && i1 > i0)
                bwd_pass(fn, sums, x, dy, s, dpool, gamma, beta, mean, invstd, dx, fs, c, hw,
                         i0, i1);
            if (!sums)
                break;
            if (last_to_arrive(&arrived, nt)) {
                sum_rows(fs, ws, n, c);
                bwd_finish(dgamma, dbeta, fs, fs + c, ws, ws + c, (double)n * (double)hw, c);
            }
#pragma omp barrier
        }
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
                              int c, size_t hw, int nthr, int isa)
{
    const int native = use_native(isa);
    if (c < 8 || c % 8 != 0 || n < 1 || hw < 1 || native < 0)
        return -1;
    nthr = nas__cpu_threads(nthr, n);
#pragma omp parallel for num_threads(nthr) schedule(static)
    for (int i = 0; i < n; i++) {
        const unsigned short *xi = x + (size_t)i * hw * c;
        unsigned short *yi = y + (size_t)i * hw * c;
#ifdef HAVE_AVX512BF16
        if (native) {
            chscale_fwd_image_avx(xi, s + (size_t)i * c, yi, c, hw);
            continue;
        }
#endif
        chscale_fwd_image(xi, s + (size_t)i * c, yi, c, hw);
    }
    return 0;
}

int nas__cpu_chscale_bf16_bwd(const unsigned short *x, const float *s, const unsigned short *dy,
                              unsigned short *dx, float *ds, int n, int c, size_t hw, int nthr,
                              int isa)
{
    const int native = use_native(isa);
    if (c < 8 || c % 8 != 0 || n < 1 || hw < 1 || !dy || !ds || native < 0)
        return -1;
    nthr = nas__cpu_threads(nthr, n);
#pragma omp parallel for num_threads(nthr) schedule(static)
    for (int i = 0; i < n; i++) {
        const size_t o = (size_t)i * hw * c;
#ifdef HAVE_AVX512BF16
        if (native) {
            chscale_bwd_image_avx(x + o, s + (size_t)i * c, dy + o, dx ? dx + o : NULL,
                                  ds + (size_t)i * c, c, hw);
            continue;
        }
#endif
        chscale_bwd_image(x + o, s + (size_t)i * c, dy + o, dx ? dx + o : NULL,
                          ds + (size_t)i * c, c, hw);
    }
    return 0;
}

/* ---- global average pooling on bf16 nhwc ------------------------------------------ */

/* y[c] = (float sum over the hw pixels of x, in memory order) / hw for one
 * image x[hw][c] */
BN_CLONES static void gap_fwd_image(const unsigned short *x, float *y, int c, size_t hw)
{
    for (int ch = 0; ch < c; ch += 8)
        *(v8 *)(y + ch) = (v8){0};
    for (size_t p = 0; p < hw; p++)
        for (int ch = 0; ch < c; ch += 8)
            *(v8 *)(y + ch) += LD8(x + p * c + ch);
    for (int ch = 0; ch < c; ch += 8)
        *(v8 *)(y + ch) /= (float)hw;
}

/* dx[p][c] = bf16(dy[c] * (1 / hw)) for every pixel p of one image: the
 * row rounded once (into the first pixel), then copied */
BN_CLONES static void gap_bwd_image(const float *dy, unsigned short *dx, int c, size_t hw)
{
    const float inv = 1.0f / (float)hw;
    for (int ch = 0; ch < c; ch += 8) {
        const v8 o = *(const v8 *)(dy + ch) * inv;
        ST8(dx + ch, o);
    }
    for (size_t p = 1; p < hw; p++)
        memcpy(dx + p * c, dx, (size_t)c * sizeof *dx);
}

int nas__cpu_gap_bf16_fwd(const unsigned short *x, float *y, int n, int c, size_t hw, int nthr)
{
    if (c < 8 || c % 8 != 0 || n < 1 || hw < 1)
        return -1;
    nthr = nas__cpu_threads(nthr, n);
#pragma omp parallel for num_threads(nthr) schedule(static)
    for (int i = 0; i < n; i++)
        gap_fwd_image(x + (size_t)i * hw * c, y + (size_t)i * c, c, hw);
    return 0;
}

int nas__cpu_gap_bf16_bwd(const float *dy, unsigned short *dx, int n, int c, size_t hw, int nthr)
{
    if (c < 8 || c % 8 != 0 || n < 1 || hw < 1)
        return -1;
    nthr = nas__cpu_threads(nthr, n);
#pragma omp parallel for num_threads(nthr) schedule(static)
    for (int i = 0; i < n; i++)
        gap_bwd_image(dy + (size_t)i * c, dx + (size_t)i * hw * c, c, hw);
    return 0;
}
