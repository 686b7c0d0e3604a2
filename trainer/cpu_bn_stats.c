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
 */
#include <stddef.h>
#include "trainer/backend_impl.h"
#ifdef _OPENMP
#include <omp.h>
#endif

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
    const double m = (double)n * hw;
    for (int ci = 0; ci < b; ci++) {
        double mu = s1[ci] / m, v = s2[ci] / m - mu * mu;
        mean[cb * b + ci] = (float)(k[ci] + mu);
        var[cb * b + ci] = (float)(v > 0 ? v : 0);
    }
}

void nas__cpu_bn_stats(const float *x, int n, int c, int hw, int block, float *mean, float *var,
                       int nthr)
{
#ifdef _OPENMP
    if (nthr < 1)
        nthr = omp_get_max_threads();
#endif
    const int ncb = c / block;
    if (nthr > ncb)
        nthr = ncb;
    if (nthr < 1)
        nthr = 1;
#pragma omp parallel for num_threads(nthr) schedule(static)
    for (int cb = 0; cb < ncb; cb++)
        block_stats(x, n, c, hw, block, cb, mean, var);
}
