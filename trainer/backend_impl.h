/*
 * trainer/backend_impl.h - the private backend vtable (after ggml's
 * ggml-backend-impl.h). Each device implements `nas__backend_ops` and
 * registers a constructor in trainer/backend.c. Public wrappers in
 * backend.c check shapes once, then dispatch; implementations may assume
 * shapes are consistent.
 *
 * Optional slots may be NULL; the wrapper then returns NAS_EUNSUPPORTED.
 */
#ifndef NAS_TRAINER_BACKEND_IMPL_H
#define NAS_TRAINER_BACKEND_IMPL_H

#include "nas/backend.h"

#ifdef _OPENMP
#include <omp.h> /* omp_get_max_threads */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The threads of a CPU kernel over `units` independent units of work:
 * nthr (below 1: the OpenMP runtime's default, as oneDNN takes the
 * backend's threads = 0), at most one per unit, at least one. */
static inline int nas__cpu_threads(int nthr, long units)
{
#ifdef _OPENMP
    if (nthr < 1)
        nthr = omp_get_max_threads();
#endif
    if (nthr > units)
        nthr = (int)units;
    return nthr < 1 ? 1 : nthr;
}

typedef struct nas__backend_ops {
    const char *name;
    void (*destroy)(nas_backend *be);
    int (*sync)(nas_backend *be); /* optional: NULL means nothing to wait for */

    /* memory: `bytes` of backend memory into *buf; free(NULL) is a no-op */
    int (*alloc)(nas_backend *be, size_t bytes, void **buf);
    void (*free)(nas_backend *be, void *buf);
    int (*upload)(nas_backend *be, void *dst, const float *src, size_t count);
    int (*download)(nas_backend *be, float *dst, const void *src, size_t count);
    int (*zero)(nas_backend *be, void *buf, size_t count);
    int (*copy)(nas_backend *be, void *dst, const void *src, size_t count);

    int (*conv2d_fwd)(nas_backend *be, const nas_tensor *x, const nas_tensor *w, nas_tensor *y,
                      int stride, int pad);
    int (*conv2d_bwd_data)(nas_backend *be, const nas_tensor *dy, const nas_tensor *w,
                           nas_tensor *dx, int stride, int pad);
    int (*conv2d_bwd_filter)(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                             nas_tensor *dw, int stride, int pad);
    int (*batchnorm_fwd_train)(nas_backend *be, const nas_tensor *x, const nas_tensor *gamma,
                               const nas_tensor *beta, nas_tensor *y, nas_tensor *save_mean,
                               nas_tensor *save_invstd, nas_tensor *running_mean,
                               nas_tensor *running_var, float momentum, float eps);
    int (*batchnorm_fwd_infer)(nas_backend *be, const nas_tensor *x, const nas_tensor *gamma,
                               const nas_tensor *beta, const nas_tensor *running_mean,
                               const nas_tensor *running_var, nas_tensor *y, float eps);
    int (*batchnorm_bwd)(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                         const nas_tensor *gamma, const nas_tensor *save_mean,
                         const nas_tensor *save_invstd, nas_tensor *dx, nas_tensor *dgamma,
                         nas_tensor *dbeta);
    int (*relu_fwd)(nas_backend *be, const nas_tensor *x, nas_tensor *y);
    int (*relu_bwd)(nas_backend *be, const nas_tensor *x, const nas_tensor *dy, nas_tensor *dx);
    int (*avgpool_fwd)(nas_backend *be, const nas_tensor *x, nas_tensor *y, int k, int stride,
                       int pad);
    int (*avgpool_bwd)(nas_backend *be, const nas_tensor *dy, nas_tensor *dx, int k, int stride,
                       int pad);
    int (*gap_fwd)(nas_backend *be, const nas_tensor *x, nas_tensor *y);
    int (*gap_bwd)(nas_backend *be, const nas_tensor *dy, nas_tensor *dx);
    int (*linear_fwd)(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                      const nas_tensor *b, nas_tensor *y);
    int (*linear_bwd)(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                      const nas_tensor *dy, nas_tensor *dx, nas_tensor *dw, nas_tensor *db);
    int (*axpy)(nas_backend *be, float alpha, const nas_tensor *x, nas_tensor *y);
    int (*scale)(nas_backend *be, float alpha, const nas_tensor *x, nas_tensor *y);
    int (*softmax_xent)(nas_backend *be, const nas_tensor *logits, const nas_tensor *labels,
                        nas_tensor *dlogits, float *loss, int *correct);
    int (*sgd_step)(nas_backend *be, nas_tensor *w, const nas_tensor *dw, nas_tensor *v,
                    float lr, float momentum, float wd, int nesterov);
    int (*sumsq)(nas_backend *be, const nas_tensor *x, double *out);
    /* issue 15: chain-network ops (optional; NULL: NAS_EUNSUPPORTED) */
    int (*gconv2d_fwd)(nas_backend *be, const nas_tensor *x, const nas_tensor *w, nas_tensor *y,
                       int stride, int pad, int groups);
    int (*gconv2d_bwd_data)(nas_backend *be, const nas_tensor *dy, const nas_tensor *w,
                            nas_tensor *dx, int stride, int pad, int groups);
    int (*gconv2d_bwd_filter)(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                              nas_tensor *dw, int stride, int pad, int groups);
    int (*act_fwd)(nas_backend *be, int fn, const nas_tensor *x, nas_tensor *y);
    int (*act_bwd)(nas_backend *be, int fn, const nas_tensor *x, const nas_tensor *dy,
                   nas_tensor *dx);
    int (*chscale_fwd)(nas_backend *be, const nas_tensor *x, const nas_tensor *s, nas_tensor *y);
    int (*chscale_bwd)(nas_backend *be, const nas_tensor *x, const nas_tensor *s,
                       const nas_tensor *dy, nas_tensor *dx, nas_tensor *ds);
    int (*dropout_fwd)(nas_backend *be, const nas_tensor *x, nas_tensor *y, float p,
                       uint64_t seed);
    int (*dropout_bwd)(nas_backend *be, const nas_tensor *dy, nas_tensor *dx, float p,
                       uint64_t seed);
} nas__backend_ops;

/* One convolution of a network, for nas__backend_set_convs: its input
 * and output channel counts and its MACs per image (K*Ho*Wo*(C/groups)*R*R). */
typedef struct nas__conv_shape {
    int c_in, c_out;
    double macs;
} nas__conv_shape;

/*
 * Optional extension slots, in their own table so that backends which
 * initialise nas__backend_ops positionally need no change: a backend sets
 * nas_backend.ext (NULL = none; every slot may be NULL).
 * download_tensor / copy_tensor: for backends that keep tensors in a
 * non-plain layout (nas_tensor.layout != 0); when set, the public
 * nas_tensor_download / nas_tensor_copy use them instead of download / copy
 * and they must honour the tensors' layouts.
 */
typedef struct nas__backend_ext {
    int (*download_tensor)(nas_backend *be, const nas_tensor *t, float *dst, size_t count);
    int (*copy_tensor)(nas_backend *be, nas_tensor *dst, const nas_tensor *src);
    /* nas_backend_set_precision; NULL: fp32 only */
    int (*set_precision)(nas_backend *be, const char *precision);
    /* Latency on the device's own clock (cuda: CUDA events on the
     * backend's stream): timer_start marks the start in the backend's
     * queue; timer_stop marks the end, waits for it and gives the ms
     * between the marks. NULL: callers time with the host clock after
     * nas_backend_sync (evaluator/latency.c). */
    int (*timer_start)(nas_backend *be);
    int (*timer_stop)(nas_backend *be, double *ms);
    /* The device this backend instance runs on: its name (cuda:
     * cudaDeviceProp.name) into name[n] and compute capability ("8.0")
     * into cc[m]. NULL: the host CPU (evaluator/latency.c reads its model
     * name). */
    int (*device_info)(const nas_backend *be, char *name, size_t n, char *cc, size_t m);
    /* nas_conv2d_fwd_fused (inference: grouped convolution + per-channel
     * bias, then activation `act` (-1: none) or + y when accumulating);
     * NULL: unsupported, callers use conv + batch norm. */
    int (*conv2d_fwd_fused)(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                            const nas_tensor *b, nas_tensor *y, int stride, int pad, int groups,
                            int act, int accumulate);
    /* Training-step bracket for loss-scaled precisions (cuda fp16; issue
     * 19). step_begin runs before a training step's forward: it clears the
     * fp16 overflow flag, and the casts of that step's forward and backward
     * then set it. step_end runs after the step's SGD: *skipped = 1 when the
     * step overflowed (its SGD skipped itself and S halved), else 0; the
     * loss scaler accounts for the step. NULL: no loss scaling. */
    int (*step_begin)(nas_backend *be);
    int (*step_end)(nas_backend *be, int *skipped);
    /* The loss scaler's state {S, consecutive good steps} for checkpoints
     * (nas__loss_scaler_save / _restore, trainer/cuda/loss_scale.h).
     * NAS_EUNSUPPORTED when the current precision scales no loss; set:
     * NAS_EINVAL for a state the scaler cannot hold. NULL: none. */
    int (*loss_scale_get)(nas_backend *be, double state[2]);
    int (*loss_scale_set)(nas_backend *be, const double state[2]);
    /* nas_batchnorm_act_fwd_train / _bwd in one kernel (issue 34).
     * NAS_EUNSUPPORTED (or NULL) for a function, layout or precision the
     * backend does not fuse: nas_batchnorm_act_* then composes the two ops
     * with ws holding BN's output. */
    int (*bn_act_fwd_train)(nas_backend *be, int fn, const nas_tensor *x,
                            const nas_tensor *gamma, const nas_tensor *beta, nas_tensor *y,
                            nas_tensor *ws, nas_tensor *save_mean, nas_tensor *save_invstd,
                            nas_tensor *running_mean, nas_tensor *running_var, float momentum,
                            float eps);
    int (*bn_act_bwd)(nas_backend *be, int fn, const nas_tensor *x, nas_tensor *ws,
                      const nas_tensor *dy, const nas_tensor *gamma, const nas_tensor *save_mean,
                      const nas_tensor *save_invstd, nas_tensor *dx, nas_tensor *dgamma,
                      nas_tensor *dbeta);
    /* nas_batchnorm_act_se_fwd_train / _se_bwd (issue 34): the above with
     * squeeze-and-excitation's pool written by the forward and its two
     * gradients taken by the backward. NULL or NAS_EUNSUPPORTED: the
     * wrappers return NAS_EUNSUPPORTED and callers run the ops apart. */
    int (*bn_act_se_fwd_train)(nas_backend *be, int fn, const nas_tensor *x,
                               const nas_tensor *gamma, const nas_tensor *beta, nas_tensor *y,
                               nas_tensor *ws, nas_tensor *pool, nas_tensor *save_mean,
                               nas_tensor *save_invstd, nas_tensor *running_mean,
                               nas_tensor *running_var, float momentum, float eps);
    int (*bn_act_se_bwd)(nas_backend *be, int fn, const nas_tensor *x, nas_tensor *ws,
                         const nas_tensor *dy, const nas_tensor *s, const nas_tensor *dpool,
                         const nas_tensor *gamma, const nas_tensor *save_mean,
                         const nas_tensor *save_invstd, nas_tensor *dx, nas_tensor *dgamma,
                         nas_tensor *dbeta);
    /* nas__backend_set_convs; NULL: the backend's layouts do not depend on
     * the network */
    int (*set_convs)(nas_backend *be, const nas__conv_shape *convs, int n, int train);
    /* nas_conv2d_fwd_fused_add (inference: grouped convolution + bias +
     * residual r); NULL: unsupported, callers compose the fused conv and
     * an axpy. */
    int (*conv2d_fwd_add)(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                          const nas_tensor *b, const nas_tensor *r, nas_tensor *y, int stride,
                          int pad, int groups);
} nas__backend_ext;

/* Every backend struct starts with this header. */
struct nas_backend {
    const nas__backend_ops *ops;
    void *context; /* device-specific state */
    int threads;
    char last_error[512]; /* detail of the last failed op; "" when none */
    const nas__backend_ext *ext; /* optional extension slots; NULL = none */
    char precision[8];           /* last precision set successfully; "" = fp32 */
};

/*
 * The binary interface between libnas and a backend built as a separate
 * shared object (libnas_cuda.so, trainer/backend_cuda.c): an FNV-1a hash
 * (Fowler, Noll, Vo) of the sizes of the structs the two sides share, each
 * on its own, and of NAS__BACKEND_ABI_VERSION for changes of meaning that
 * keep the sizes (bump it then). The plugin reports the value it was
 * compiled with (nas__cuda_plugin_abi, which also mixes in its probe's
 * nas__cuda_dev) and libnas refuses one that differs: a libnas_cuda.so
 * from an older build has a shorter ext table, and calling a slot past its
 * end would jump to whatever follows it.
 */
#define NAS__BACKEND_ABI_VERSION 1ull
static inline unsigned long long nas__backend_abi(void)
{
    const unsigned long long parts[] = {
        NAS__BACKEND_ABI_VERSION, sizeof(nas__backend_ops), sizeof(nas__backend_ext),
        sizeof(struct nas_backend), sizeof(nas_tensor), sizeof(nas_error),
        sizeof(nas__conv_shape)};
    unsigned long long h = 14695981039346656037ull; /* FNV-1a 64-bit offset basis */
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        h ^= parts[i];
        h *= 1099511628211ull; /* FNV 64-bit prime */
    }
    return h;
}

/* Record a printf-style detail of a failed op in be->last_error and return
 * `code` (so implementations can write `return nas__backend_fail(...)`). */
int nas__backend_fail(nas_backend *be, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Memory slots for backends whose buffers are host memory (ref, cpu):
 * free is free(3); upload, download and copy move `count` floats with
 * memcpy (memmove for copy: dst and src may overlap). They always return
 * NAS_OK. */
void nas__host_free(nas_backend *be, void *buf);
int nas__host_upload(nas_backend *be, void *dst, const float *src, size_t count);
int nas__host_download(nas_backend *be, float *dst, const void *src, size_t count);
int nas__host_copy(nas_backend *be, void *dst, const void *src, size_t count);

/*
 * The convolutions convs[n] (output H*W > 1) of the network about to run,
 * and whether it runs a training step (train 1: forward and backward) or
 * an inference forward (0), so the backend can choose the activation
 * layout for the whole network rather than per tensor (issue 34 item 2).
 * The cpu backend on an AVX-512 host keeps C % 16 == 0 tensors nChw16c
 * and C % 16 == 8 ones nChw8c, so a convolution between the two ran in
 * nChw8c with its 16-multiple side reordered (30 reorders per chain-se
 * training step, 11% of its op time). With this call it uses nChw8c for
 * every multiple of 8: in training whenever a convolution has a side
 * with C % 16 == 8 (each such convolution costs reorders forward and in
 * both gradients, while the batch norm and activation kernels, half the
 * step, run at memory speed in either block); in inference when those
 * convolutions hold at least half of the MACs (else the AVX-512 kernels of
 * the rest outweigh one reorder per boundary: MobileNetV2's stages at
 * 28x28 evaluated 15-25% slower in nChw8c). The networks (trainer/net.c)
 * call it before every forward and backward, so several networks may
 * share one backend; tensors keep their layout tags, so a change of plan
 * costs reorders, never wrong values. Backends without the slot ignore it.
 * Errors: NAS_EINVAL (be NULL, n < 0, or convs NULL with n > 0).
 */
int nas__backend_set_convs(nas_backend *be, const nas__conv_shape *convs, int n, int train);

/* Dispatch to the ext slots above (trainer/backend.c). step_begin /
 * step_end: NAS_OK and *skipped = 0 without loss scaling; loss_scale_get /
 * _set: NAS_EUNSUPPORTED without it. Used by the training loops. */
int nas__backend_step_begin(nas_backend *be);
int nas__backend_step_end(nas_backend *be, int *skipped);
int nas__backend_loss_scale_get(nas_backend *be, double state[2]);
int nas__backend_loss_scale_set(nas_backend *be, const double state[2]);

/* Constructors, one per device; compiled in only when available. */
int nas__backend_ref_create(int threads, int device, nas_backend **out, nas_error *err);
int nas__backend_cpu_create(int threads, int device, nas_backend **out, nas_error *err);
#ifdef NAS_HAVE_CUDA
int nas__backend_cuda_create(int threads, int device, nas_backend **out, nas_error *err);
#endif

/*
 * Training batch norm's statistics on the cpu backend (trainer/cpu_bn_stats.c):
 * mean[c] and biased variance var[c] over N, H, W of x [N,C,H,W] (hw = H*W)
 * stored plain NCHW (block 1) or channel-blocked nChw8c / nChw16c (block 8
 * / 16; C a multiple of block, at most 16). Shifted sums in double (Chan,
 * Golub & LeVeque 1983), one thread per channel block in a fixed order:
 * the result does not depend on nthr (OpenMP threads; below 1: OpenMP's
 * default). No errors.
 */
void nas__cpu_bn_stats(const float *x, int n, int c, int hw, int block, float *mean, float *var,
                       int nthr);

/*
 * Weight gradient of a depthwise convolution (groups == C, one filter per
 * channel) on channel-blocked activations, the cpu backend's own kernel
 * (trainer/cpu_depthwise.c, issue 15):
 *   dw[c,0,ky,kx] = sum over n, oy, ox of
 *                   x[n,c,oy*stride+ky-pad,ox*stride+kx-pad] * dy[n,c,oy,ox]
 * x [N,C,H,W] and dy [N,C,Ho,Wo] in nChw16c (bs 16) or nChw8c (bs 8), dw
 * plain [C,1,R,R] (overwritten). nthr: OpenMP threads, at most one per
 * channel block (below 1: OpenMP's default, as oneDNN's primitives use
 * when the backend has threads = 0; one in a build without OpenMP). Each
 * block's sums run in a fixed order on one thread, so the result does not
 * depend on nthr.
 * Returns 0, or -1 when it does not handle the case (R not 3, 5 or 7, bs
 * not 8 or 16, C not a multiple of bs, an empty extent), before writing
 * anything.
 */
int nas__cpu_dw_wgrad(const float *x, const float *dy, float *dw, int n, int c, int h, int w,
                      int ho, int wo, int r, int stride, int pad, int bs, int nthr);

/*
 * The same weight gradient on bf16 channels-last activations (the cpu
 * backend's precision "bf16": x [N,H,W,C] and dy [N,Ho,Wo,C] as bfloat16
 * bit patterns, nhwc), dw plain fp32 [C,1,R,R]; issue 34. Products and sums
 * in fp32 (each bf16 value converts to float exactly), over (image, output
 * row, output column) in that order; work shared out over OpenMP threads
 * by (32-channel group, kernel row), or on AVX-512 hosts for R = 5 by
 * 16-channel group (the whole kernel at once, when C / 16 is at least
 * twice the threads), one thread each; every path sums in the same order,
 * so the result does not depend on nthr. Returns 0, or -1 before writing anything when R is
 * not 3, 5 or 7, C is not a positive multiple of 8, or an extent is empty.
 */
int nas__cpu_dw_wgrad_bf16(const unsigned short *x, const unsigned short *dy, float *dw, int n,
                           int c, int h, int w, int ho, int wo, int r, int stride, int pad,
                           int nthr);

/* Outputs of at least this many bytes are written by streaming stores
 * (non-temporal: the line is not read first, and the cache keeps the
 * input, which the output pass reads a second time); the same bits. */
#define NAS__CPU_BN_ACT_STREAM_BYTES ((size_t)8 << 20)
/* The workspace nas__cpu_bn_act_fwd / _bwd and nas__cpu_bn_act_bf16_fwd /
 * _bwd take, in bytes, for N images and C channels. */
#define NAS__CPU_BN_ACT_WS_BYTES(n, c)                                          \
    (2 * (size_t)(c) * sizeof(double) + 2 * (size_t)(n) * (size_t)(c) * sizeof(float))

/*
 * Training batch norm fused with the activation after it, the cpu
 * backend's own kernel for fn NAS_FN_RELU, NAS_FN_RELU6, NAS_FN_HSWISH and
 * NAS__BN_IDENTITY (no activation) (trainer/cpu_bn_act.c, issue 34; BN:
 * Ioffe & Szegedy 2015, h-swish: Howard et al. 2019, "Searching for
 * MobileNetV3"). x, y [N,C,H,W] (hw = H*W) in nChw16c (bs 16), nChw8c (bs
 * 8) or plain NCHW (bs 1); gamma, beta, mean, var, invstd [C]. The forward
 * writes y = fn(gamma * (x - mean) * invstd + beta) with the batch's mean,
 * biased variance var and invstd = 1 / sqrt(var + eps); y may be x. With
 * pool non-NULL it also writes pool[N,C] (plain) = the mean of y over H*W,
 * as nas_gap_fwd computes it. The backward takes dy (same shape and layout
 * as x), the forward's gamma, beta (may be NULL for NAS__BN_IDENTITY),
 * mean and invstd, and writes dx (may be dy), dgamma = sum(g * xhat) and
 * dbeta = sum(g) per channel with g = dy' * fn'(z); dy' is dy, or with s
 * and dpool [N,C] (plain; both or neither) squeeze-and-excitation's
 * gradient dy * s[n,c] + dpool[n,c] / hw, dy then being the gradient of
 * y * s and dpool that of pool. nthr: OpenMP threads, at most one per
 * channel block (below 1: OpenMP's default). Each block's sums run in a
 * fixed order on one thread, so the results do not depend on nthr.
 * ws: the caller's workspace of NAS__CPU_BN_ACT_WS_BYTES(N, C) bytes
 * (per-channel sums and per-image partial sums), 8-byte aligned. Return 0,
 * or -1 before writing anything when they do not handle the case (another
 * fn, bs not 16, 8 or 1, C not a multiple of bs, an empty extent, a
 * missing beta, only one of s and dpool, no ws).
 */
#define NAS__BN_IDENTITY (-1)
int nas__cpu_bn_act_fwd(int fn, const float *x, const float *gamma, const float *beta, float *y,
                        float *pool, float *mean, float *var, float *invstd, double *ws, int n,
                        int c, size_t hw, int bs, float eps, int nthr);
int nas__cpu_bn_act_bwd(int fn, const float *x, const float *dy, const float *s,
                        const float *dpool, const float *gamma, const float *beta,
                        const float *mean, const float *invstd, float *dx, float *dgamma,
                        float *dbeta, double *ws, int n, int c, size_t hw, int bs, int nthr);

/*
 * nas__cpu_bn_act_fwd / _bwd on bf16 channels-last activations (the cpu
 * backend's precision "bf16"; trainer/cpu_bn_act_bf16.c, issue 34): x, y,
 * dy, dx [N,H,W,C] as bfloat16 bit patterns (hw = H*W), C a positive
 * multiple of 8; gamma, beta, mean, var, invstd, dgamma, dbeta [C] and
 * pool, s, dpool [N,C] plain fp32, with the same meanings. Arithmetic in
 * float (the sums per image in float, per channel in double); y and dx are
 * rounded to bf16 (nearest even) as stored, and pool is the mean of the
 * stored (rounded) y. ws: NAS__CPU_BN_ACT_WS_BYTES(N, C) bytes, 8-byte
 * aligned: 2*C doubles (the per-channel totals), then N rows of 2*C
 * floats (one image's sums; row 0 then holds the output pass's per-channel
 * scale and shift, or the backward's two means). Each image's sums are
 * one thread's, over its pixels in memory order, and each channel's total
 * one thread's, over the images in order, so the results do not depend on
 * nthr (at most one thread per image). Return 0, or -1 before writing
 * anything for another fn, C not a positive multiple of 8, an empty extent, a
 * missing beta (forward; backward unless NAS__BN_IDENTITY), only one of s
 * and dpool, or no ws.
 */
int nas__cpu_bn_act_bf16_fwd(int fn, const unsigned short *x, const float *gamma,
                             const float *beta, unsigned short *y, float *pool, float *mean,
                             float *var, float *invstd, double *ws, int n, int c, size_t hw,
                             float eps, int nthr, int isa);
int nas__cpu_bn_act_bf16_bwd(int fn, const unsigned short *x, const unsigned short *dy,
                             const float *s, const float *dpool, const float *gamma,
                             const float *beta, const float *mean, const float *invstd,
                             unsigned short *dx, float *dgamma, float *dbeta, double *ws, int n,
                             int c, size_t hw, int nthr, int isa);

/*
 * The instruction set of the bf16 kernels (their isa argument):
 * NAS__BF16_AUTO runs the AVX512-BF16 passes where nas__cpu_bf16_native(),
 * else the generic (portable vector) ones; NAS__BF16_GENERIC always the
 * generic ones; NAS__BF16_NATIVE the AVX512-BF16 ones (the kernel returns
 * -1 on a host without them). The two give the same bytes except that the
 * AVX512-BF16 rounding (VCVTNEPS2BF16) flushes denormal results to zero.
 * nas__cpu_bf16_native: 1 when this build and host have AVX512-F, -BW,
 * -VL and -BF16 (the OS saving the 512-bit registers), else 0.
 */
#define NAS__BF16_AUTO (-1)
#define NAS__BF16_GENERIC 0
#define NAS__BF16_NATIVE 1
int nas__cpu_bf16_native(void);

/*
 * nas__cpu_chscale_fwd / _bwd on bf16 channels-last activations
 * (trainer/cpu_bn_act_bf16.c, issue 34): x, y, dy, dx [N,H,W,C] as
 * bfloat16 bit patterns (hw = H*W), C a positive multiple of 8; s, ds
 * [N,C] plain fp32. y and dx are products rounded to bf16 (nearest even);
 * ds[n,c] is a float sum over the positions in memory order. nthr: OpenMP
 * threads over the images (below 1: OpenMP's default); results do not
 * depend on it. isa: as for nas__cpu_bn_act_bf16_* (the AVX512-BF16
 * passes give the same bytes but for denormal results). Return 0, or -1
 * before writing anything for C not a positive multiple of 8, an empty
 * extent, (backward) dy or ds NULL, or isa NAS__BF16_NATIVE without it.
 */
int nas__cpu_chscale_bf16_fwd(const unsigned short *x, const float *s, unsigned short *y, int n,
                              int c, size_t hw, int nthr, int isa);
int nas__cpu_chscale_bf16_bwd(const unsigned short *x, const float *s, const unsigned short *dy,
                              unsigned short *dx, float *ds, int n, int c, size_t hw, int nthr,
                              int isa);

/*
 * Global average pooling on bf16 channels-last activations
 * (trainer/cpu_bn_act_bf16.c): x, dx [N,H,W,C] as bfloat16 bit patterns
 * (hw = H*W), C a positive multiple of 8; y, dy [N,C] plain fp32. The
 * forward's y[n,c] is the float sum over the positions in memory order,
 * divided by hw; the backward writes dx[n,p,c] = dy[n,c] * (1/hw) rounded
 * to bf16 (nearest even) at every position p. nthr: OpenMP threads over
 * the images (below 1: OpenMP's default); results do not depend on it.
 * Return 0, or -1 before writing anything for C not a positive multiple
 * of 8 or an empty extent.
 */
int nas__cpu_gap_bf16_fwd(const unsigned short *x, float *y, int n, int c, size_t hw, int nthr);
int nas__cpu_gap_bf16_bwd(const float *dy, unsigned short *dx, int n, int c, size_t hw, int nthr);

/*
 * Squeeze-and-excitation's channel scale on the cpu backend
 * (trainer/cpu_se.c; Hu et al. 2018): y = x * s[n,c], and backward ds[n,c]
 * = sum over H*W of dy * x and, when dx is non-NULL, dx = dy * s. x, y,
 * dy, dx [N,C,H,W] (hw = H*W) in nChw16c / nChw8c (bs 16 / 8) or plain
 * NCHW (bs 1); s, ds [N,C] plain. nthr: OpenMP threads over the (image,
 * channel block) pairs (below 1: OpenMP's default); each ds is summed on
 * one thread in memory order, so results do not depend on nthr. Return 0,
 * or -1 before writing anything for bs not in 1..16, C not a multiple of
 * bs, or (backward) dy or ds NULL.
 */
int nas__cpu_chscale_fwd(const float *x, const float *s, float *y, int n, int c, size_t hw,
                         int bs, int nthr);
int nas__cpu_chscale_bwd(const float *x, const float *s, const float *dy, float *dx, float *ds,
                         int n, int c, size_t hw, int bs, int nthr);

#ifdef __cplusplus
}
#endif
#endif /* NAS_TRAINER_BACKEND_IMPL_H */
