/*
 * trainer/cpu_bn_act.c - the cpu backend's own training batch norm fused
 * with the activation after it (issue 34 item 1: ReLU6, h-swish; issue 34
 * "passes over memory": also ReLU and none), forward and backward, on the
 * layouts the backend keeps activations in (nChw16c, nChw8c, plain NCHW;
 * trainer/backend_cpu.c "Layout"). oneDNN fuses only a ReLU into its
 * batch norm; composing BN and the activation costs a write and a read of
 * BN's output in the forward, and a read of it plus a write and a read of
 * the activation's input gradient in the backward. The backend also runs
 * every fp32 training batch norm's backward here (fn ReLU or none): each
 * thread a run of consecutive channel blocks, without the barriers of
 * oneDNN's two-thread batch norm, which sleep under OMP_WAIT_POLICY=passive
 * on a busy host.
 *
 * Squeeze-and-excitation (Hu et al. 2018) after the activation, y' = y *
 * s[n,c] with s computed from pool[n,c] = mean over H*W of y: the forward
 * can also write pool (the pass that writes y sums it, so y is not read
 * again for the pool), and the backward can take SE's two gradients, dy'
 * at y' and dpool at pool, and form dL/dy = dy' * s + dpool / (H*W) where
 * it reads the gradient (so neither that sum nor its two terms are written
 * and read again as whole tensors).
 *
 * The maths. Batch normalisation in training (Ioffe & Szegedy 2015,
 * "Batch Normalization: Accelerating Deep Network Training by Reducing
 * Internal Covariate Shift", Algorithms 1 and the gradients of section
 * 3): over the m = N*H*W values of channel c,
 *   mean = sum(x) / m, var = sum((x - mean)^2) / m (biased),
 *   xhat = (x - mean) * invstd, invstd = 1 / sqrt(var + eps),
 *   z = gamma * xhat + beta, y = f(z).
 * f is ReLU6, min(max(z, 0), 6), or h-swish (Howard et al. 2019,
 * "Searching for MobileNetV3", section 5.2), z * ReLU6(z + 3) / 6; their
 * derivatives are PyTorch's (kernel_math.h nas__act_grad: ReLU6' = 1 on
 * (0, 6), h-swish' = z / 3 + 1/2 on [-3, 3], 0 below, 1 above). With
 * g = dy * f'(z) the chain rule through z gives
 *   dbeta = sum(g), dgamma = sum(g * xhat),
 *   dx = gamma * invstd * (g - dbeta / m - xhat * dgamma / m).
 *
 * Passes over memory, per channel block (the BS channels stored together;
 * one channel in plain NCHW). Forward: one read of x for the statistics,
 * one read of x and one write of y. The sums are shifted by the channel's
 * first value k (var = E[(x - k)^2] - E[x - k]^2, exact in real numbers
 * for any k and, with k a sample of the channel, free of the cancellation
 * of the unshifted one-pass formula), so one read gives both. Backward:
 * one read of x and dy for the two sums, one read of both and one write
 * of dx. z is recomputed from x in the backward (the forward keeps beta,
 * C floats, in the caller's workspace) with the same float expression as
 * the forward, so f' is taken at the z that made y.
 *
 * Memory order. Each of the two passes reads the whole input, which in a
 * network is usually larger than what the cache keeps of it. The first
 * pass reads the images last to first, the second first to last, so the
 * second starts on the images the first read last, still in the cache
 * (and the first pass of the forward starts on the images the convolution
 * before it wrote last). A large output (NAS__CPU_BN_ACT_STREAM_BYTES) is
 * written by streaming stores, which neither read its lines first nor push
 * the input out of the cache. Neither changes a bit of the results: the
 * sums are kept per image and added in image order whichever order the
 * images were read in.
 *
 * Threads and determinism: as trainer/cpu_depthwise.c, the channel blocks
 * are shared out by OpenMP (the thread pool oneDNN's primitives run on),
 * each block wholly on one thread. Within a block every sum runs per image
 * over the positions in memory order in a float vector, and these are
 * added into a double per channel in image order. So results depend
 * neither on the thread count nor on the vector width of the
 * instruction-set clone GCC's target_clones picks (CMakeLists.txt builds
 * this file with -ffp-contract=off, so no clone fuses a multiply-add).
 */
#include <math.h>   /* sqrt */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uintptr_t */
#include "nas/backend.h"          /* NAS_FN_RELU6, NAS_FN_HSWISH */
#include "trainer/backend_impl.h" /* nas__cpu_bn_act_* */

#if defined(__SSE__)
#include <xmmintrin.h> /* _mm_stream_ps, _mm_sfence */
#define NAS__BN_STREAM 1
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define BN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define BN_CLONES
#endif

/* One call's arguments, shared by the blocks (see nas__cpu_bn_act_fwd). */
typedef struct bn_act_args {
    int fn, n, c; /* activation, images, channels */
    size_t hw;      /* H*W */
    float eps;
    const float *x, *dy, *gamma, *beta;
    const float *smean, *sinvstd; /* the statistics the output passes use */
    float *y, *dx, *mean, *var, *invstd, *dgamma, *dbeta;
    float *pool;             /* forward: [N,C] means of y over H*W, or NULL */
    const float *s, *dpool;  /* backward: SE's channel scales and pooled gradient [N,C], or NULL */
    double *s1, *s2;         /* [C] sums per channel, the caller's (a thread writes its units') */
    float *p1, *p2;          /* [N,C] plain: per image and channel partial sums, the caller's;
                                the backward then keeps its two means in row 0 */
    int nt;                  /* 1: write y or dx by streaming stores (stream_out) */
} bn_act_args;

/* The caller's workspace ws (NAS__CPU_BN_ACT_WS_BYTES(n, c)) as a's sums
 * s1, s2 [C] (doubles) and partial sums p1, p2 [N,C] (floats). */
static void split_ws(bn_act_args *a, double *ws)
{
    a->s1 = ws;
    a->s2 = ws + a->c;
    a->p1 = (float *)(ws + 2 * (size_t)a->c);
    a->p2 = a->p1 + (size_t)a->n * a->c;
}

/* s1[ch], s2[ch] for channels ch0 .. ch1-1: the partial sums p1, p2 of
 * images 0 .. N-1 added in that order into a double (0 + the first is the
 * first, exactly), whichever order the images were read in. Inlined into
 * each clone; the channels are independent, so vectors over them change
 * no sum's order. */
static inline __attribute__((always_inline)) void sum_partials(const bn_act_args *a, int ch0,
                                                               int ch1)
{
    for (int ch = ch0; ch < ch1; ch++)
        a->s1[ch] = a->s2[ch] = 0.0;
    for (int i = 0; i < a->n; i++) {
        const float *q1 = a->p1 + (size_t)i * a->c, *q2 = a->p2 + (size_t)i * a->c;
        for (int ch = ch0; ch < ch1; ch++) {
            a->s1[ch] += (double)q1[ch];
            a->s2[ch] += (double)q2[ch];
        }
    }
}

/* Channel ch's mean, biased variance and invstd from its shifted sums
 * s1 = sum(x - k), s2 = sum((x - k)^2) over m values. */
static void bn_act_channel(const bn_act_args *a, int ch, double k, double s1, double s2)
{
    const double m = (double)a->n * (double)a->hw, d = s1 / m;
    double v = s2 / m - d * d;
    a->mean[ch] = (float)(k + d);
    a->var[ch] = (float)(v > 0.0 ? v : 0.0);
    a->invstd[ch] = (float)(1.0 / sqrt((double)a->var[ch] + (double)a->eps));
}

typedef float v16 __attribute__((vector_size(64), aligned(4)));
typedef int vi16 __attribute__((vector_size(64), aligned(4)));
typedef float v8 __attribute__((vector_size(32), aligned(4)));
typedef int vi8 __attribute__((vector_size(32), aligned(4)));
typedef float v1 __attribute__((vector_size(4), aligned(4)));
typedef int vi1 __attribute__((vector_size(4), aligned(4)));

/* One instantiation of the kernels per layout block BS. */
#define BS 16
#define VT v16
#define VI vi16
#define SFX _16
#include "trainer/cpu_bn_act_body.h"
#undef BS
#undef VT
#undef VI
#undef SFX
#define BS 8
#define VT v8
#define VI vi8
#define SFX _8
#include "trainer/cpu_bn_act_body.h"
#undef BS
#undef VT
#undef VI
#undef SFX
#define BS 1
#define VT v1
#define VI vi1
#define SFX _1
#include "trainer/cpu_bn_act_body.h"
#undef BS
#undef VT
#undef VI
#undef SFX

typedef void (*units_fn)(const bn_act_args *, int, int);

/* Every channel block of a through the kernel `fwd` (else the backward)
 * for layout block bs, shared out over nthr threads (below 1: OpenMP's
 * default), at most one per block: thread t takes the consecutive blocks
 * [units * t / nthr, units * (t + 1) / nthr), so that within one image it
 * walks one stretch of memory (what the hardware prefetcher follows)
 * rather than one block's H*W positions at a time. A block's sums do not
 * depend on which thread runs it or on its neighbours. */
static void run_units(int fwd, const bn_act_args *a, int bs, int nthr)
{
    const int units = a->c / bs;
    const units_fn f = bs == 16 ? (fwd ? fwd_block_16 : bwd_block_16)
                       : bs == 8 ? (fwd ? fwd_block_8 : bwd_block_8)
                                 : (fwd ? fwd_block_1 : bwd_block_1);
    nthr = nas__cpu_threads(nthr, units);
#pragma omp parallel for num_threads(nthr) schedule(static, 1)
    for (int t = 0; t < nthr; t++) {
        f(a, (int)((long)units * t / nthr), (int)((long)units * (t + 1) / nthr));
#ifdef NAS__BN_STREAM
        if (a->nt)
            _mm_sfence(); /* the streaming stores reach memory before the region ends */
#endif
    }
}

/* 1 when the output pass should write `out` (count floats) by streaming
 * stores: a tensor of at least NAS__CPU_BN_ACT_STREAM_BYTES, not in place (the
 * input's lines are in the cache then anyway), 16-byte aligned, in a
 * blocked layout. A streaming store skips reading the line before writing
 * it and keeps the cache for the input, which the output pass reads a
 * second time; for a smaller tensor the next op finds a normal store's
 * output still in the cache, which is worth more. The bits written are the
 * same either way. */
static int stream_out(const float *out, const float *in1, const float *in2, size_t count, int bs)
{
#ifdef NAS__BN_STREAM
    return bs % 4 == 0 && out != in1 && out != in2 && ((uintptr_t)out & 15) == 0 &&
           count * sizeof(float) >= NAS__CPU_BN_ACT_STREAM_BYTES;
#else
    (void)out, (void)in1, (void)in2, (void)count, (void)bs;
    return 0;
#endif
}

/* 1 when the kernels handle activation fn, block width bs and c channels. */
static int bn_act_shape_ok(int fn, int n, int c, size_t hw, int bs)
{
    return (fn == NAS_FN_RELU || fn == NAS_FN_RELU6 || fn == NAS_FN_HSWISH ||
            fn == NAS__BN_IDENTITY) &&
           (bs == 16 || bs == 8 || bs == 1) && n >= 1 && c >= 1 && c % bs == 0 && hw >= 1;
}

int nas__cpu_bn_act_fwd(int fn, const float *x, const float *gamma, const float *beta, float *y,
                        float *pool, float *mean, float *var, float *invstd, double *ws, int n,
                        int c, size_t hw, int bs, float eps, int nthr)
{
    if (!bn_act_shape_ok(fn, n, c, hw, bs) || !beta || !ws)
        return -1;
    bn_act_args a = {.fn = fn, .n = n, .c = c, .hw = hw, .eps = eps, .x = x,
                     .gamma = gamma, .beta = beta, .y = y, .mean = mean, .var = var,
                     .invstd = invstd, .smean = mean, .sinvstd = invstd, .pool = pool,
                     .nt = stream_out(y, x, NULL, (size_t)n * c * hw, bs)};
    split_ws(&a, ws);
    run_units(1, &a, bs, nthr);
    return 0;
}

int nas__cpu_bn_act_bwd(int fn, const float *x, const float *dy, const float *s,
                        const float *dpool, const float *gamma, const float *beta,
                        const float *mean, const float *invstd, float *dx, float *dgamma,
                        float *dbeta, double *ws, int n, int c, size_t hw, int bs, int nthr)
{
    if (!bn_act_shape_ok(fn, n, c, hw, bs) || (!beta && fn != NAS__BN_IDENTITY) ||
        (!s != !dpool) || !ws)
        return -1;
    bn_act_args a = {.fn = fn, .n = n, .c = c, .hw = hw, .x = x, .dy = dy,
                     .gamma = gamma, .beta = beta, .smean = mean,
                     .sinvstd = invstd, .dx = dx, .dgamma = dgamma,
                     .dbeta = dbeta, .s = s, .dpool = dpool,
                     .nt = stream_out(dx, x, dy, (size_t)n * c * hw, bs)};
    split_ws(&a, ws);
    run_units(0, &a, bs, nthr);
    return 0;
}
