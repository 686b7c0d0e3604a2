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
    nthr = nas__cpu_threads(nthr, cbn);
#pragma omp parallel for num_threads(nthr) schedule(static)
    for (int cb = 0; cb < cbn; cb++)
        f(x, dy, dw, n, cbn, cb, h, w, ho, wo, stride, pad);
    return 0;
}

/* ---- bf16 channels-last (nhwc) activations ------------------------------------------ */

typedef unsigned short h16 __attribute__((vector_size(32), aligned(2)));
typedef unsigned short h8 __attribute__((vector_size(16), aligned(2)));
typedef unsigned int u16v __attribute__((vector_size(64)));
typedef unsigned int u8v __attribute__((vector_size(32)));

/* 16 (8) bfloat16 values at p as floats: each value's bits are the upper
 * half of its float's, so the conversion is exact. (Macros: a vector
 * return value of a function would depend on the clone's ABI.) */
#define bf_load16(p) ((v16)(__builtin_convertvector(*(const h16 *)(p), u16v) << 16))
#define bf_load8(p) ((v8)(__builtin_convertvector(*(const h8 *)(p), u8v) << 16))

/* Kernel row ky of the channels [c0, c0 + G*BS) of dw (plain [C,1,R,R])
 * from nhwc bf16 x and dy with C channels per pixel, as G groups of BS
 * channels (G*R accumulators); LOAD converts BS values. With G = 2 and
 * BS = 16 (32 channels at once) each output pixel's dy and each tap's x
 * are one whole 64-byte line, where one group at a time read 32-byte
 * pieces strided by C and walked x and dy twice as often. Each weight's
 * sum is in the same order whatever G. */
#define DW_WGRAD_NHWC(NAME, VT, BS, G, R, LOAD)                                             \
    static void NAME(const unsigned short *x, const unsigned short *dy, float *dw, int n,   \
                     int c, int c0, int ky, int h, int w, int ho, int wo, int s, int p)      \
    {                                                                                       \
        const size_t xs = (size_t)h * w * c, ds = (size_t)ho * wo * c;                      \
        int lo = (p + s - 1) / s, hi = w - R + p >= 0 ? (w - R + p) / s : -1;              \
        if (hi > wo - 1)                                                                    \
            hi = wo - 1;                                                                    \
        VT acc[G][R];                                                                       \
        _Pragma("GCC unroll 8")                                                             \
        for (int kx = 0; kx < R; kx++) {                                                    \
            _Pragma("GCC unroll 2")                                                         \
            for (int g = 0; g < G; g++)                                                     \
                acc[g][kx] = (VT){0};                                                       \
        }                                                                                   \
        for (int in = 0; in < n; in++) {                                                    \
            const unsigned short *xi = x + (size_t)in * xs + c0, *di = dy + (size_t)in * ds + c0; \
            for (int oy = 0; oy < ho; oy++) {                                               \
                const int iy = oy * s + ky - p;                                             \
                if (iy < 0 || iy >= h)                                                      \
                    continue;                                                               \
                const unsigned short *xr = xi + (size_t)iy * w * c;                         \
                const unsigned short *dr = di + (size_t)oy * wo * c;                        \
                for (int ox = 0; ox < wo; ox++) {                                           \
                    VT d[G];                                                                \
                    _Pragma("GCC unroll 2")                                                 \
                    for (int g = 0; g < G; g++)                                             \
                        d[g] = LOAD(dr + (size_t)ox * c + g * BS);                          \
                    const int ix0 = ox * s - p;                                             \
                    if (ox >= lo && ox <= hi) {                                             \
                        const unsigned short *xp = xr + (size_t)ix0 * c;                    \
                        _Pragma("GCC unroll 8")                                             \
                        for (int kx = 0; kx < R; kx++) {                                    \
                            _Pragma("GCC unroll 2")                                         \
                            for (int g = 0; g < G; g++)                                     \
                                acc[g][kx] += LOAD(xp + (size_t)kx * c + g * BS) * d[g];    \
                        }                                                                   \
                    } else {                                                                \
                        _Pragma("GCC unroll 8")                                             \
                        for (int kx = 0; kx < R; kx++) {                                    \
                            const int ix = ix0 + kx;                                        \
                            if (ix >= 0 && ix < w) {                                        \
                                _Pragma("GCC unroll 2")                                     \
                                for (int g = 0; g < G; g++)                                 \
                                    acc[g][kx] += LOAD(xr + (size_t)ix * c + g * BS) * d[g]; \
                            }                                                               \
                        }                                                                   \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        for (int l = 0; l < BS; l++)                                                        \
            for (int kx = 0; kx < R; kx++) {                                                \
                _Pragma("GCC unroll 2")                                                     \
                for (int g = 0; g < G; g++)                                                 \
                    dw[((size_t)(c0 + g * BS + l) * R + ky) * R + kx] = acc[g][kx][l];      \
            }                                                                               \
    }

/* The whole R x R kernel of the channels [c0, c0 + G*BS) at once (G*R*R
 * accumulators; 25 for R = 5 with G = 1, which AVX-512's 32 vector
 * registers hold): each output pixel's dy is read and converted once for
 * all R kernel rows, and x and dy are walked once instead of once per
 * kernel row. Each weight's sum runs over (image, output row, output
 * column) in the same order as DW_WGRAD_NHWC's, so the two give the same
 * bits. With AVX2's 16 registers the accumulators would spill, so
 * nas__cpu_dw_wgrad_bf16 takes it on AVX-512 hosts only, and it is built
 * for AVX-512 alone (GCC on x86-64). R = 5 only: the cpu backend leaves
 * bf16 3x3 weight gradients to oneDNN's jit_dw kernel (backend_cpu.c),
 * and 7x7 would need 49 accumulators. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define NAS__DW_ALL 1
#define DW_WGRAD_NHWC_ALL(NAME, VT, BS, G, R, LOAD)                                         \
    static void NAME(const unsigned short *x, const unsigned short *dy, float *dw, int n,   \
                     int c, int c0, int h, int w, int ho, int wo, int s, int p)              \
    {                                                                                       \
        const size_t xs = (size_t)h * w * c, ds = (size_t)ho * wo * c;                      \
        int lo = (p + s - 1) / s, hi = w - R + p >= 0 ? (w - R + p) / s : -1;              \
        if (hi > wo - 1)                                                                    \
            hi = wo - 1;                                                                    \
        VT acc[G][R][R];                                                                    \
        _Pragma("GCC unroll 8")                                                             \
        for (int ky = 0; ky < R; ky++) {                                                    \
            _Pragma("GCC unroll 8")                                                         \
            for (int kx = 0; kx < R; kx++) {                                                \
                _Pragma("GCC unroll 2")                                                     \
                for (int g = 0; g < G; g++)                                                 \
                    acc[g][ky][kx] = (VT){0};                                               \
            }                                                                               \
        }                                                                                   \
        for (int in = 0; in < n; in++) {                                                    \
            const unsigned short *xi = x + (size_t)in * xs + c0, *di = dy + (size_t)in * ds + c0; \
            for (int oy = 0; oy < ho; oy++) {                                               \
                const unsigned short *xr[R];                                                \
                int ok[R];                                                                  \
                _Pragma("GCC unroll 8")                                                     \
                for (int ky = 0; ky < R; ky++) {                                            \
                    const int iy = oy * s + ky - p;                                         \
                    ok[ky] = iy >= 0 && iy < h;                                             \
                    xr[ky] = xi + (size_t)(ok[ky] ? iy : 0) * w * c;                        \
                }                                                                           \
                const unsigned short *dr = di + (size_t)oy * wo * c;                        \
                for (int ox = 0; ox < wo; ox++) {                                           \
                    VT d[G];                                                                \
                    _Pragma("GCC unroll 2")                                                 \
                    for (int g = 0; g < G; g++)                                             \
                        d[g] = LOAD(dr + (size_t)ox * c + g * BS);                          \
                    const int ix0 = ox * s - p;                                             \
                    const int inner = ox >= lo && ox <= hi;                                 \
                    _Pragma("GCC unroll 8")                                                 \
                    for (int ky = 0; ky < R; ky++) {                                        \
                        if (!ok[ky])                                                        \
                            continue;                                                       \
                        _Pragma("GCC unroll 8")                                             \
                        for (int kx = 0; kx < R; kx++) {                                    \
                            const int ix = ix0 + kx;                                        \
                            if (inner || (ix >= 0 && ix < w)) {                             \
                                _Pragma("GCC unroll 2")                                     \
                                for (int g = 0; g < G; g++)                                 \
                                    acc[g][ky][kx] +=                                       \
                                        LOAD(xr[ky] + (size_t)ix * c + g * BS) * d[g];      \
                            }                                                               \
                        }                                                                   \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        for (int l = 0; l < BS; l++)                                                        \
            for (int ky = 0; ky < R; ky++)                                                  \
                for (int kx = 0; kx < R; kx++) {                                            \
                    _Pragma("GCC unroll 2")                                                 \
                    for (int g = 0; g < G; g++)                                             \
                        dw[((size_t)(c0 + g * BS + l) * R + ky) * R + kx] =                 \
                            acc[g][ky][kx][l];                                              \
                }                                                                           \
    }

__attribute__((target("avx512f")))
DW_WGRAD_NHWC_ALL(wgrad_bf16_all16_5, v16, 16, 1, 5, bf_load16)
#endif

DW_CLONES DW_WGRAD_NHWC(wgrad_bf16_32_3, v16, 16, 2, 3, bf_load16)
DW_CLONES DW_WGRAD_NHWC(wgrad_bf16_32_5, v16, 16, 2, 5, bf_load16)
DW_CLONES DW_WGRAD_NHWC(wgrad_bf16_32_7, v16, 16, 2, 7, bf_load16)
DW_CLONES DW_WGRAD_NHWC(wgrad_bf16_16_3, v16, 16, 1, 3, bf_load16)
DW_CLONES DW_WGRAD_NHWC(wgrad_bf16_16_5, v16, 16, 1, 5, bf_load16)
DW_CLONES DW_WGRAD_NHWC(wgrad_bf16_16_7, v16, 16, 1, 7, bf_load16)
DW_CLONES DW_WGRAD_NHWC(wgrad_bf16_8_3, v8, 8, 1, 3, bf_load8)
DW_CLONES DW_WGRAD_NHWC(wgrad_bf16_8_5, v8, 8, 1, 5, bf_load8)
DW_CLONES DW_WGRAD_NHWC(wgrad_bf16_8_7, v8, 8, 1, 7, bf_load8)

int nas__cpu_dw_wgrad_bf16(const unsigned short *x, const unsigned short *dy, float *dw, int n,
                           int c, int h, int w, int ho, int wo, int r, int stride, int pad,
                           int nthr)
{
    typedef void (*row_fn)(const unsigned short *, const unsigned short *, float *, int, int,
                           int, int, int, int, int, int, int, int);
    row_fn f16 = r == 3 ? wgrad_bf16_16_3 : r == 5 ? wgrad_bf16_16_5
                 : r == 7 ? wgrad_bf16_16_7 : NULL;
    row_fn f8 = r == 3 ? wgrad_bf16_8_3 : r == 5 ? wgrad_bf16_8_5 : r == 7 ? wgrad_bf16_8_7 : NULL;
    if (!f16 || c % 8 != 0 || c < 8 || n < 1 || h < 1 || w < 1 || ho < 1 || wo < 1 ||
        stride < 1 || pad < 0)
        return -1;
    row_fn f32 = r == 3 ? wgrad_bf16_32_3 : r == 5 ? wgrad_bf16_32_5 : wgrad_bf16_32_7;
    /* AVX-512 and R = 5: the whole kernel per 16 channels
     * (DW_WGRAD_NHWC_ALL) when there are at least two such items per
     * thread (fewer would leave a thread idle for much of the call). Both
     * kernels give the same bits, so the choice changes no result. */
#ifdef NAS__DW_ALL
    if (r == 5 && c % 16 == 0 && c / 16 >= 2 * nas__cpu_threads(nthr, 1L << 30) &&
        __builtin_cpu_supports("avx512f")) {
        const int items_all = c / 16;
        const int nt_all = nas__cpu_threads(nthr, items_all);
#pragma omp parallel for num_threads(nt_all) schedule(static)
        for (int it = 0; it < items_all; it++)
            wgrad_bf16_all16_5(x, dy, dw, n, c, it * 16, h, w, ho, wo, stride, pad);
        return 0;
    }
#endif
    /* work items: (channel group, kernel row); groups of 32 channels, the
     * last one of 16, 8 or 24 (16 + 8) when C is not a multiple of 32 */
    const int ng = (c + 31) / 32, items = ng * r;
    nthr = nas__cpu_threads(nthr, items);
#pragma omp parallel for num_threads(nthr) schedule(static)
    for (int it = 0; it < items; it++) {
        const int g = it / r, ky = it % r, c0 = 32 * g;
        if (c - c0 >= 32)
            f32(x, dy, dw, n, c, c0, ky, h, w, ho, wo, stride, pad);
        else {
            if (c - c0 >= 16)
                f16(x, dy, dw, n, c, c0, ky, h, w, ho, wo, stride, pad);
            if ((c - c0) % 16 == 8)
                f8(x, dy, dw, n, c, c - 8, ky, h, w, ho, wo, stride, pad);
        }
    }
    return 0;
}
