/*
 * trainer/cpu_se.c - the cpu backend's channel scale, the last step of
 * squeeze-and-excitation (Hu et al. 2018, "Squeeze-and-Excitation
 * Networks"): y = x * s[n,c] and its backward (ds = sum over H*W of dy * x,
 * dx = dy * s), on the layouts the backend keeps activations in (nChw16c,
 * nChw8c, plain NCHW; trainer/backend_cpu.c "Layout").
 *
 * One (image, channel block) is one unit of work; the units are shared
 * out by OpenMP (the thread pool oneDNN's primitives run on; before issue
 * 34 this was one thread's loop). Each ds is summed on one thread over the
 * positions in memory order, lane by lane, with separate multiplies and
 * adds (CMakeLists.txt builds this file with -ffp-contract=off), so the
 * results are bit for bit those of the former loop whatever the thread
 * count or the vector width of the clone GCC's target_clones picks.
 */
#include <stddef.h> /* size_t */
#include "trainer/backend_impl.h" /* nas__cpu_chscale_* */

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define SE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SE_CLONES
#endif

/* Unit (image i, block cb) of the forward: bs channels over hw positions
 * (bs other than 16 and 8, which have their own below; the plain layout's
 * bs 1 among them). */
SE_CLONES static void fwd_unit(const float *x, const float *s, float *y, int c, size_t hw, int bs,
                               long u)
{
    const int cbn = c / bs, i = (int)(u / cbn), cb = (int)(u % cbn);
    const size_t off = ((size_t)i * cbn + cb) * hw * bs;
    const float *xp = x + off, *sp = s + (size_t)i * c + (size_t)cb * bs;
    float *yp = y + off;
    for (size_t q = 0; q < hw; q++)
        for (int l = 0; l < bs; l++)
            yp[q * bs + l] = xp[q * bs + l] * sp[l];
}

/* Unit (image i, block cb) of the backward. */
SE_CLONES static void bwd_unit(const float *x, const float *s, const float *dy, float *dx,
                               float *ds, int c, size_t hw, int bs, long u)
{
    enum { BMAX = 16 };
    const int cbn = c / bs, i = (int)(u / cbn), cb = (int)(u % cbn);
    const size_t off = ((size_t)i * cbn + cb) * hw * bs, ch = (size_t)i * c + (size_t)cb * bs;
    const float *xp = x + off, *gp = dy + off;
    float acc[BMAX] = {0};
    for (size_t q = 0; q < hw; q++)
        for (int l = 0; l < bs; l++)
            acc[l] += gp[q * bs + l] * xp[q * bs + l];
    if (dx)
        for (size_t q = 0; q < hw; q++)
            for (int l = 0; l < bs; l++)
                dx[off + q * bs + l] = gp[q * bs + l] * s[ch + l];
    for (int l = 0; l < bs; l++)
        ds[ch + l] = acc[l];
}

/* The same two units for the blocked layouts' widths W (16, 8), a block
 * as one GCC vector VT of W lanes: with W unknown at compile time the loops
 * above run lane by lane, at a third to a half of the memory bandwidth
 * these reach (nChw8c, AVX2). The operations per lane and their order are
 * the same, so are the results (tests/conformance/test_lane_bits.c). */
typedef float v16 __attribute__((vector_size(64), aligned(4)));
typedef float v8 __attribute__((vector_size(32), aligned(4)));
#define SE_UNITS(W, VT)                                                                        \
    SE_CLONES static void fwd_unit##W(const float *x, const float *s, float *y, int c,         \
                                      size_t hw, long u)                                      \
    {                                                                                          \
        const int cbn = c / W, i = (int)(u / cbn), cb = (int)(u % cbn);                        \
        const size_t off = ((size_t)i * cbn + cb) * hw * W;                                    \
        const float *xp = x + off;                                                             \
        float *yp = y + off;                                                                   \
        const VT sv = *(const VT *)(s + (size_t)i * c + (size_t)cb * W);                       \
        for (size_t q = 0; q < hw; q++)                                                        \
            *(VT *)(yp + q * W) = *(const VT *)(xp + q * W) * sv;                              \
    }                                                                                          \
    SE_CLONES static void bwd_unit##W(const float *x, const float *s, const float *dy,         \
                                      float *dx, float *ds, int c, size_t hw, long u)         \
    {                                                                                          \
        const int cbn = c / W, i = (int)(u / cbn), cb = (int)(u % cbn);                        \
        const size_t off = ((size_t)i * cbn + cb) * hw * W, ch = (size_t)i * c + (size_t)cb * W; \
        const float *xp = x + off, *gp = dy + off;                                             \
        VT acc = {0};                                                                          \
        for (size_t q = 0; q < hw; q++)                                                        \
            acc += *(const VT *)(gp + q * W) * *(const VT *)(xp + q * W);                      \
        if (dx) {                                                                              \
            const VT sv = *(const VT *)(s + ch);                                               \
            for (size_t q = 0; q < hw; q++)                                                    \
                *(VT *)(dx + off + q * W) = *(const VT *)(gp + q * W) * sv;                    \
        }                                                                                      \
        *(VT *)(ds + ch) = acc;                                                                \
    }
SE_UNITS(16, v16)
SE_UNITS(8, v8)
#undef SE_UNITS

/* The forward (dy NULL: out = y) or the backward (out = dx, may be NULL)
 * over every (image, channel block) unit of one call. */
static int se_run(const float *x, const float *s, const float *dy, float *out, float *ds, int n,
                  int c, size_t hw, int bs, int nthr)
{
    if (bs < 1 || bs > 16 || c % bs != 0)
        return -1;
    const long units = (long)n * (c / bs);
    nthr = nas__cpu_threads(nthr, units);
#pragma omp parallel for num_threads(nthr) schedule(static)
    for (long u = 0; u < units; u++) {
        if (!dy && bs == 16)
            fwd_unit16(x, s, out, c, hw, u);
        else if (!dy && bs == 8)
            fwd_unit8(x, s, out, c, hw, u);
        else if (!dy)
            fwd_unit(x, s, out, c, hw, bs, u);
        else if (bs == 16)
            bwd_unit16(x, s, dy, out, ds, c, hw, u);
        else if (bs == 8)
            bwd_unit8(x, s, dy, out, ds, c, hw, u);
        else
            bwd_unit(x, s, dy, out, ds, c, hw, bs, u);
    }
    return 0;
}

int nas__cpu_chscale_fwd(const float *x, const float *s, float *y, int n, int c, size_t hw,
                         int bs, int nthr)
{
    return se_run(x, s, NULL, y, NULL, n, c, hw, bs, nthr);
}

int nas__cpu_chscale_bwd(const float *x, const float *s, const float *dy, float *dx, float *ds,
                         int n, int c, size_t hw, int bs, int nthr)
{
    if (!dy || !ds)
        return -1;
    return se_run(x, s, dy, dx, ds, n, c, hw, bs, nthr);
}
