/*
 * trainer/cpu_depthwise.c - the cpu backend's own kernel for the weight
 * gradient of a depthwise convolution (MobileNets' 3x3 / 5x5 / 7x7
 * per-channel filter; Howard et al. 2017) on channel-blocked activations
 * (nChw16c / nChw8c, trainer/backend_cpu.c "Layout"), issue 15.
 *
 * Why our own: oneDNN 2.6 has no JIT kernel for this direction on nChw16c
 * with R = 5 (the backend ran it in nhwc after reordering both tensors),
 * and its kernels reached about 5 GFLOP/s per thread on chain-se's shapes
 * (experiments/bench-train, "Where the time goes"). Here each (channel
 * block, kernel row) keeps R vector accumulators of 16 (8) channels in
 * registers while it streams over images and output positions, so every
 * loaded x and dy vector feeds R independent multiply-adds.
 *
 * Threads: the channel blocks are shared out by OpenMP, so the kernel runs
 * on the same thread pool as oneDNN's primitives (Debian's oneDNN runs on
 * libgomp). Two POSIX threads of our own had made the whole training step
 * slower (they contended with oneDNN's OpenMP threads; experiments/
 * bench-train README). Determinism: each block is one thread's, and each
 * weight's sum runs over (image, output row, output column) in that order,
 * so the result depends neither on the thread count nor on the machine's
 * vector width: GCC vector extensions do
 * the same lane-wise arithmetic whether compiled to AVX-512, AVX2 or SSE
 * (GCC's target_clones picks one at load time), and CMakeLists.txt builds
 * this file with -ffp-contract=off so that no clone fuses a multiply-add.
 */
#include <stddef.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "trainer/backend_impl.h"

typedef float v16 __attribute__((vector_size(64), aligned(4)));
typedef float v8 __attribute__((vector_size(32), aligned(4)));

/* One channel block cb of dw (plain [C,1,R,R]) for kernel size R and block
 * width BS with vector type VT. Interior output columns (every tap inside
 * the row) skip the bounds tests. */
#define DW_WGRAD_BLOCK(NAME, VT, BS, R)                                                     \
    static void NAME(const float *x, const float *dy, float *dw, int n, int cbn, int cb,   \
                     int h, int w, int ho, int wo, int s, int p)                            \
    {                                                                                       \
        const size_t xs = (size_t)cbn * h * w * BS, ds = (size_t)cbn * ho * wo * BS;        \
        const float *x0 = x + (size_t)cb * h * w * BS, *d0 = dy + (size_t)cb * ho * wo * BS; \
        int lo = (p + s - 1) / s, hi = w - R + p >= 0 ? (w - R + p) / s : -1;              \
        if (hi > wo - 1)                                                                    \
            hi = wo - 1;                                                                    \
        for (int ky = 0; ky < R; ky++) {                                                    \
            VT acc[R];                                                                      \
            _Pragma("GCC unroll 8")                                                         \
            for (int kx = 0; kx < R; kx++)                                                  \
                acc[kx] = (VT){0};                                                          \
            for (int in = 0; in < n; in++) {                                                \
                const float *xi = x0 + (size_t)in * xs, *di = d0 + (size_t)in * ds;         \
                for (int oy = 0; oy < ho; oy++) {                                           \
                    const int iy = oy * s + ky - p;                                         \
                    if (iy < 0 || iy >= h)                                                  \
                        continue;                                                           \
                    const float *xr = xi + (size_t)iy * w * BS, *dr = di + (size_t)oy * wo * BS; \
                    for (int ox = 0; ox < wo; ox++) {                                       \
                        const VT d = *(const VT *)(dr + (size_t)ox * BS);                   \
                        const int ix0 = ox * s - p;                                         \
                        if (ox >= lo && ox <= hi) {                                         \
                            const float *xp = xr + (size_t)ix0 * BS;                        \
                            _Pragma("GCC unroll 8")                                         \
                            for (int kx = 0; kx < R; kx++)                                  \
                                acc[kx] += *(const VT *)(xp + (size_t)kx * BS) * d;         \
                        } else {                                                            \
                            _Pragma("GCC unroll 8")                                         \
                            for (int kx = 0; kx < R; kx++) {                                \
                                const int ix = ix0 + kx;                                    \
                                if (ix >= 0 && ix < w)                                      \
                                    acc[kx] += *(const VT *)(xr + (size_t)ix * BS) * d;     \
                            }                                                               \
                        }                                                                   \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
            for (int l = 0; l < BS; l++)                                                    \
                for (int kx = 0; kx < R; kx++)                                              \
                    dw[((size_t)(cb * BS + l) * R + ky) * R + kx] = acc[kx][l];             \
        }                                                                                   \
    }

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define DW_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DW_CLONES
#endif

DW_CLONES DW_WGRAD_BLOCK(wgrad16_3, v16, 16, 3)
DW_CLONES DW_WGRAD_BLOCK(wgrad16_5, v16, 16, 5)
DW_CLONES DW_WGRAD_BLOCK(wgrad16_7, v16, 16, 7)
DW_CLONES DW_WGRAD_BLOCK(wgrad8_3, v8, 8, 3)
DW_CLONES DW_WGRAD_BLOCK(wgrad8_5, v8, 8, 5)
DW_CLONES DW_WGRAD_BLOCK(wgrad8_7, v8, 8, 7)

int nas__cpu_dw_wgrad(const float *x, const float *dy, float *dw, int n, int c, int h, int w,
                      int ho, int wo, int r, int stride, int pad, int bs, int nthr)
{
    typedef void (*blk_fn)(const float *, const float *, float *, int, int, int, int, int, int,
                           int, int, int);
    blk_fn f = NULL;
    if (bs == 16)
        f = r == 3 ? wgrad16_3 : r == 5 ? wgrad16_5 : r == 7 ? wgrad16_7 : NULL;
    else if (bs == 8)
        f = r == 3 ? wgrad8_3 : r == 5 ? wgrad8_5 : r == 7 ? wgrad8_7 : NULL;
    if (!f || c % bs != 0 || n < 1 || h < 1 || w < 1 || ho < 1 || wo < 1 || stride < 1 ||
        pad < 0)
        return -1;
    const int cbn = c / bs;
#ifdef _OPENMP
    if (nthr < 1) /* the backend's threads = 0: the runtime's default, as oneDNN */
        nthr = omp_get_max_threads();
#endif
    if (nthr > cbn)
        nthr = cbn;
    if (nthr < 1)
        nthr = 1;
#pragma omp parallel for num_threads(nthr) schedule(static)
    for (int cb = 0; cb < cbn; cb++)
        f(x, dy, dw, n, cbn, cb, h, w, ho, wo, stride, pad);
    return 0;
}
