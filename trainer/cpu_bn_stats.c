/*
 * trainer/cpu_bn_stats.c - the cpu backend's batch statistics for training
 * batch norm: per-channel mean and biased variance of x in its activation
 * layout (plain NCHW, nChw8c or nChw16c), each channel summed by one thread
 * in a fixed order (deterministic for any thread count), in double, with
 * the channel's first element subtracted before summing ("shifted data":
 * Chan, Golub & LeVeque, "Algorithms for computing the sample variance",
 * The American Statistician 37(3), 1983), so that a channel whose mean is
 * large next to its spread loses no precision to cancellation. oneDNN's
 * AVX2 batch norm (nChw8c) lost enough there to fail the conformance case
 * "x in [99.5, 100.5)" (tests/conformance/test_ops.c); the backend now
 * computes the statistics here and lets oneDNN normalise with them
 * (dnnl_use_global_stats).
 *
 * Blocked layouts sum a block's channels side by side in GCC vectors of
 * doubles (one lane per channel, GCC's target_clones picking the widest
 * instruction set), each lane doing the scalar loop's operations in its
 * order; CMakeLists.txt builds this file with -ffp-contract=off, so no
 * clone fuses d * d into the sum. The statistics are thus those of the
 * scalar loop bit for bit, 4-8x faster (the loop was a tenth of a
 * supernet subnet's evaluation: BN recalibration, issue 32).
 */
#include <stddef.h>
#include "trainer/backend_impl.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define STATS_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define STATS_CLONES
#endif

/* A channel's mean and biased variance from its shifted sums s1 =
 * sum(x - k), s2 = sum((x - k)^2) over its n * hw values. */
static void finish(int n, int hw, double k, double s1, double s2, float *mean, float *var)
{
    const double m = (double)n * hw, mu = s1 / m, v = s2 / m - mu * mu;
    *mean = (float)(k + mu);
    *var = (float)(v > 0 ? v : 0);
}

/* Channel block cb of x (b channels, b = 1 for plain NCHW): each
 * channel's m = n*hw elements as shifted sums, the block's channels side
 * by side so every cache line is read once. */
static void block_stats(const float *x, int n, int c, int hw, int b, int cb, float *mean,
                        float *var)
{
    enum { BMAX = 16 };
    double k[BMAX], s1[BMAX] = {0}, s2[BMAX] = {0};
    const int ncb = c / b;
    const float *first = x + (size_t)cb * hw * b;
    for (int ci = 0; ci < b; ci++)
        k[ci] = first[ci];
    for (int i = 0; i < n; i++) {
        const float *p = x + ((size_t)i * ncb + cb) * hw * b;
        for (int s = 0; s < hw; s++, p += b)
            for (int ci = 0; ci < b; ci++) {
                double d = (double)p[ci] - k[ci];
                s1[ci] += d;
                s2[ci] += d * d;
            }
    }
    for (int ci = 0; ci < b; ci++)
        finish(n, hw, k[ci], s1[ci], s2[ci], &mean[cb * b + ci], &var[cb * b + ci]);
}

/* Blocked layouts: block_stats' sums for G groups of 4 channels in vectors
 * of 4 doubles (256 bits: registers on AVX2, halves on SSE2), lane j of
 * group g being channel cb * 4G + 4g + j; written out per group so that the
 * accumulators stay in registers. */
typedef float v4f __attribute__((vector_size(16), aligned(4)));
typedef double v4d __attribute__((vector_size(32)));
#define LOAD4(p, g) __builtin_convertvector(*(const v4f *)((p) + 4 * (g)), v4d)
#define STEP4(g)                                    \
    do {                                            \
        const v4d d_ = LOAD4(p, g) - k##g;          \
        s1_##g += d_;                               \
        s2_##g += d_ * d_;                          \
    } while (0)
#define FINISH4(g)                                                                          \
    for (int j = 0; j < 4; j++)                                                             \
        finish(n, hw, k##g[j], s1_##g[j], s2_##g[j], &mean[cb * B + 4 * (g) + j],            \
               &var[cb * B + 4 * (g) + j])

/* Block cb of an nChw8c x. */
STATS_CLONES static void block_stats8(const float *x, int n, int c, int hw, int cb, float *mean,
                                      float *var)
{
    enum { B = 8 };
    const int ncb = c / B;
    const float *first = x + (size_t)cb * hw * B;
    const v4d k0 = LOAD4(first, 0), k1 = LOAD4(first, 1);
    v4d s1_0 = {0}, s2_0 = {0}, s1_1 = {0}, s2_1 = {0};
    for (int i = 0; i < n; i++) {
        const float *p = x + ((size_t)i * ncb + cb) * hw * B;
        for (int s = 0; s < hw; s++, p += B) {
            STEP4(0);
            STEP4(1);
        }
    }
    FINISH4(0);
    FINISH4(1);
}

/* Block cb of an nChw16c x. */
STATS_CLONES static void block_stats16(const float *x, int n, int c, int hw, int cb, float *mean,
                                       float *var)
{
    enum { B = 16 };
    const int ncb = c / B;
    const float *first = x + (size_t)cb * hw * B;
    const v4d k0 = LOAD4(first, 0), k1 = LOAD4(first, 1), k2 = LOAD4(first, 2),
              k3 = LOAD4(first, 3);
    v4d s1_0 = {0}, s2_0 = {0}, s1_1 = {0}, s2_1 = {0}, s1_2 = {0}, s2_2 = {0}, s1_3 = {0},
        s2_3 = {0};
    for (int i = 0; i < n; i++) {
        const float *p = x + ((size_t)i * ncb + cb) * hw * B;
        for (int s = 0; s < hw; s++, p += B) {
            STEP4(0);
            STEP4(1);
            STEP4(2);
            STEP4(3);
        }
    }
    FINISH4(0);
    FINISH4(1);
    FINISH4(2);
    FINISH4(3);
}

void nas__cpu_bn_stats(const float *x, int n, int c, int hw, int block, float *mean, float *var,
                       int nthr)
{
    const int ncb = c / block;
    nthr = nas__cpu_threads(nthr, ncb);
#pragma omp parallel for num_threads(nthr) schedule(static)
    for (int cb = 0; cb < ncb; cb++) {
        if (block == 8)
            block_stats8(x, n, c, hw, cb, mean, var);
        else if (block == 16)
            block_stats16(x, n, c, hw, cb, mean, var);
        else
            block_stats(x, n, c, hw, block, cb, mean, var);
    }
}
