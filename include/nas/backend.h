/*
 * nas/backend.h - the kernel library: one op interface, one implementation
 * per device (after ggml's backends).
 *
 *   "ref"  plain C, single thread: the oracle every other backend is tested
 *          against; deterministic.
 *   "cpu"  oneDNN (convolution, batch norm, pooling, ReLU) + OpenBLAS (GEMM).
 *   "cuda" cuDNN + cuBLAS (built when the toolkit is found).
 *
 * Tensors are float32, NCHW, and live in backend memory: callers never
 * dereference `nas_tensor.buf`; they move data with nas_tensor_upload /
 * nas_tensor_download. 2-D tensors (N x K) use n = N, c = K, h = w = 1.
 * All op functions return NAS_OK or a negative status (NAS_EINVAL on shape
 * mismatch, NAS_EBACKEND when the device library fails, NAS_ENOMEM).
 * Unless stated otherwise an op overwrites its output.
 */
#ifndef NAS_BACKEND_H
#define NAS_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "nas/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nas_backend nas_backend; /* opaque; see trainer/backend_impl.h */

typedef struct nas_tensor {
    int n, c, h, w;   /* NCHW shape */
    size_t count;     /* n*c*h*w elements */
    void *buf;        /* backend memory; opaque to callers */
    nas_backend *be;  /* owner */
    int layout;       /* storage order of buf, private to the backend: 0 = plain
                       * NCHW (after create and upload); a backend may write an
                       * op's output in a blocked order (e.g. oneDNN nChw16c)
                       * and convert on download. Copied with the struct
                       * (views keep it); callers never interpret it. */
} nas_tensor;

/* ---- backends ------------------------------------------------------------ */

/*
 * Create backend `name` ("ref", "cpu", "cuda") using `threads` CPU threads
 * (0 = library default) or, for cuda, device `device`. The cpu backend's
 * threads are oneDNN's (OpenMP); it runs OpenBLAS on one thread, and sets
 * that process-wide (trainer/backend_cpu.c, "Threads").
 * Errors: NAS_ENOTFOUND (unknown name or not compiled in), NAS_ENODEV (no
 * CUDA device), NAS_EBACKEND, NAS_ENOMEM.
 */
int nas_backend_create(const char *name, int threads, int device, nas_backend **out,
                       nas_error *err);
void nas_backend_destroy(nas_backend *be); /* NULL is a no-op */
const char *nas_backend_name(const nas_backend *be);
/* Block until queued work is done (no-op for host backends). */
int nas_backend_sync(nas_backend *be);
/*
 * Precision of the backend's arithmetic for ops run after this call:
 * "fp32" (default) or "bf16" (cpu backend: activations and gradients of
 * convolutions, batch norm, ReLU, pooling and sums in bfloat16, channels-
 * last, so oneDNN uses AMX / AVX-512 BF16 where the CPU has it; weights,
 * their gradients, the optimiser, the classifier and the loss stay fp32 -
 * mixed precision with fp32 master weights, Micikevicius et al., "Mixed
 * Precision Training", ICLR 2018; Kalamkar et al., "A Study of BFLOAT16 for
 * Deep Learning Training", 2019). cuda backend: "fp16" or "bf16" run
 * convolutions and the linear GEMM on 16-bit copies of their operands with
 * fp32 accumulation (tensor cores), all tensors staying fp32; "fp16" adds
 * dynamic loss scaling (the gradients of a backward pass carry the scale,
 * which nas_sgd_step divides out; a step whose gradients overflowed fp16
 * is skipped) - docs/cuda.md. Tensors keep their values across a
 * change. Errors: NAS_EINVAL (unknown name), NAS_EUNSUPPORTED (the backend
 * or CPU cannot do it; "fp32" is always accepted).
 */
int nas_backend_set_precision(nas_backend *be, const char *precision);
/* The precision last set with nas_backend_set_precision ("fp32" when none
 * was set or be is NULL); the string is owned by the backend. Added for
 * checkpoint fingerprints (issue 19). */
const char *nas_backend_get_precision(const nas_backend *be);
/* Names of the backends compiled in, NULL-terminated. */
const char *const *nas_backend_compiled(void);
/*
 * Detail of the last failed op or tensor call on `be` (op, shapes and, for
 * device-library failures, the library's status string), e.g.
 * "cpu conv2d_fwd x[2,3,7,7] w[4,3,3,3] y[2,4,7,7] stride 1 pad 1:
 * dnnl_primitive_create failed: unimplemented". "" when nothing failed;
 * never NULL. Valid until the next
 * call on `be`. Op functions take no nas_error, so callers append this text
 * to their own message.
 */
const char *nas_backend_last_error(const nas_backend *be);

/* ---- tensors ------------------------------------------------------------- */

/* Allocate an uninitialised tensor. Errors: NAS_EINVAL, NAS_ENOMEM. */
int nas_tensor_create(nas_backend *be, int n, int c, int h, int w, nas_tensor **out);
void nas_tensor_destroy(nas_tensor *t); /* NULL is a no-op */
int nas_tensor_upload(nas_tensor *t, const float *host, size_t count);
int nas_tensor_download(const nas_tensor *t, float *host, size_t count);
int nas_tensor_zero(nas_tensor *t);
/* dst = src (same count). */
int nas_tensor_copy(nas_tensor *dst, const nas_tensor *src);

/* ---- ops ----------------------------------------------------------------- */

/* y[N,K,Ho,Wo] = conv(x[N,C,H,W], w[K,C,R,R]), square kernel R, no bias,
 * Ho = (H + 2*pad - R)/stride + 1. */
int nas_conv2d_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w, nas_tensor *y,
                   int stride, int pad);
/*
 * Inference convolution with a bias and an optional accumulation:
 * y[N,K,Ho,Wo] (+)= conv(x[N,C,H,W], w[K,C,R,R]) + b[1,K,1,1], where "+="
 * (accumulate != 0) adds to what y holds. The trainer uses it to run an
 * eval-mode conv -> batch norm pair as one op, with the batch norm folded
 * into w and b (w' = w * gamma / sqrt(var + eps), b' = beta - mean *
 * gamma / sqrt(var + eps); Ioffe & Szegedy 2015, section 3.2), writing or
 * adding straight into a cell node's sum (oneDNN's bias and sum post-op;
 * oneDNN developer guide, "Primitive Attributes: Post-ops").
 * Errors: NAS_EINVAL (shapes), NAS_EUNSUPPORTED when the backend or the
 * current precision has no fused path (callers then fall back to
 * nas_conv2d_fwd + nas_batchnorm_fwd_infer), NAS_EBACKEND.
 */
int nas_conv2d_fwd_bias(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                        const nas_tensor *b, nas_tensor *y, int stride, int pad, int accumulate);
/*
 * The same for a grouped or depthwise convolution with an optional
 * activation post-op (issue 34, item 4): y[N,K,Ho,Wo] = f(conv(x[N,C,H,W],
 * w[K,C/groups,R,R]) + b[1,K,1,1]), or y += conv + b when accumulate != 0
 * (then act must be -1). act: a nas_actfn (ReLU, ReLU6, h-swish,
 * h-sigmoid, sigmoid; oneDNN's eltwise post-op on cpu) or -1 for none.
 * groups = 1 and act = -1 is nas_conv2d_fwd_bias. The trainer folds an
 * eval-mode batch norm into its convolution and the activation after it
 * into the same op, so an MBConv's expansion and depthwise convolutions
 * each run as one pass. Errors: NAS_EINVAL (shapes, groups not dividing C
 * or K, act out of range, act with accumulate), NAS_EUNSUPPORTED (no fused
 * path on this backend or precision; callers fall back to the plain ops),
 * NAS_EBACKEND.
 */
int nas_conv2d_fwd_fused(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                         const nas_tensor *b, nas_tensor *y, int stride, int pad, int groups,
                         int act, int accumulate);
/*
 * Inference convolution with a bias and a residual added in the same pass
 * (issue 34, item 4): y[N,K,Ho,Wo] = conv(x[N,C,H,W], w[K,C/groups,R,R]) +
 * b[1,K,1,1] + r[N,K,Ho,Wo]. r is read, not changed, and must not share
 * y's buffer. The trainer runs an eval-mode convolution with its folded
 * batch norm that writes a sum's shared buffer (an MBConv's projection, a
 * cell's conv edge) together with another input of that sum (the block's
 * input, a skip edge) as this one op (oneDNN's binary add post-op on cpu;
 * oneDNN developer guide, "Primitive Attributes: Post-ops"), where the
 * conv and a separate sum would write y and then read it back. Errors:
 * NAS_EINVAL (shapes, r not like y, r sharing y's buffer),
 * NAS_EUNSUPPORTED (no such fused path on this backend or precision, or
 * on cpu only oneDNN's reference kernel; callers fall back to
 * nas_conv2d_fwd_fused and nas_axpy), NAS_EBACKEND.
 */
int nas_conv2d_fwd_fused_add(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                             const nas_tensor *b, const nas_tensor *r, nas_tensor *y, int stride,
                             int pad, int groups);
/* dx[N,C,H,W] = gradient of the loss w.r.t. x given dy. */
int nas_conv2d_bwd_data(nas_backend *be, const nas_tensor *dy, const nas_tensor *w,
                        nas_tensor *dx, int stride, int pad);
/* dw[K,C,R,R] = gradient w.r.t. the weights (overwritten, not accumulated). */
int nas_conv2d_bwd_filter(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                          nas_tensor *dw, int stride, int pad);

/*
 * Batch normalisation (Ioffe & Szegedy 2015) over N,H,W per channel C.
 * Training: uses batch statistics (biased variance), writes the batch mean
 * and 1/sqrt(var+eps) into save_mean/save_invstd [1,C,1,1], and updates
 * running_mean/running_var with running = (1-momentum)*running +
 * momentum*batch (PyTorch convention, unbiased batch variance).
 * gamma, beta, running_*: [1,C,1,1].
 */
int nas_batchnorm_fwd_train(nas_backend *be, const nas_tensor *x, const nas_tensor *gamma,
                            const nas_tensor *beta, nas_tensor *y, nas_tensor *save_mean,
                            nas_tensor *save_invstd, nas_tensor *running_mean,
                            nas_tensor *running_var, float momentum, float eps);
/* Inference: y = gamma * (x - running_mean) / sqrt(running_var + eps) + beta. */
int nas_batchnorm_fwd_infer(nas_backend *be, const nas_tensor *x, const nas_tensor *gamma,
                            const nas_tensor *beta, const nas_tensor *running_mean,
                            const nas_tensor *running_var, nas_tensor *y, float eps);
/* Backward of the training forward: dx, dgamma, dbeta (overwritten). */
int nas_batchnorm_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                      const nas_tensor *gamma, const nas_tensor *save_mean,
                      const nas_tensor *save_invstd, nas_tensor *dx, nas_tensor *dgamma,
                      nas_tensor *dbeta);

/*
 * Training batch norm fused with the activation that follows it (issue 34):
 * y = fn(BN(x)) with BN as nas_batchnorm_fwd_train (same statistics, saved
 * mean / invstd and running updates) and fn a nas_actfn. ws[N,C,H,W]
 * (same shape as x) is the backend's workspace for the backward: the cpu
 * backend keeps beta's C values in it for ReLU, ReLU6 and h-swish (its own
 * kernel, trainer/cpu_bn_act.c, recomputes BN(x) from x); other backends
 * and functions the BN output BN(x). Either way
 * it saves a pass over memory against two ops: BN's output is not written
 * and re-read.
 * The backward takes the same ws (and may overwrite it): dx, dgamma,
 * dbeta of the composite from dy = dLoss/dy. Results equal
 * nas_batchnorm_fwd_train + nas_act_fwd and nas_act_bwd +
 * nas_batchnorm_bwd up to float rounding (tests/conformance/test_ops.c).
 * Errors: as those ops (NAS_EINVAL for shapes or fn).
 */
int nas_batchnorm_act_fwd_train(nas_backend *be, int fn, const nas_tensor *x,
                                const nas_tensor *gamma, const nas_tensor *beta, nas_tensor *y,
                                nas_tensor *ws, nas_tensor *save_mean, nas_tensor *save_invstd,
                                nas_tensor *running_mean, nas_tensor *running_var,
                                float momentum, float eps);
int nas_batchnorm_act_bwd(nas_backend *be, int fn, const nas_tensor *x, nas_tensor *ws,
                          const nas_tensor *dy, const nas_tensor *gamma,
                          const nas_tensor *save_mean, const nas_tensor *save_invstd,
                          nas_tensor *dx, nas_tensor *dgamma, nas_tensor *dbeta);

/*
 * nas_batchnorm_act_fwd_train / _bwd when the activation's output y
 * [N,C,H,W] feeds squeeze-and-excitation (Hu et al., "Squeeze-and-
 * Excitation Networks", CVPR 2018) and nothing else: y' = y * s with s
 * [N,C,1,1] computed from pool = nas_gap_fwd(y) (issue 34: fewer passes
 * over memory). The forward is nas_batchnorm_act_fwd_train that also
 * writes pool [N,C,1,1], the mean of y over H,W, as nas_gap_fwd does, in
 * the pass that writes y. The backward is nas_batchnorm_act_bwd from
 * dL/dy = dy * s + dpool / (H*W), formed where the kernel reads it:
 * dy [N,C,H,W] is the gradient of y' = nas_chscale_fwd(y, s) (s: the
 * forward's scales) and dpool [N,C,1,1] that of pool; run
 * nas_chscale_bwd with dx NULL for ds. Same results as the separate ops
 * (the cpu backend: the same float operations in the same order).
 * Optional: NAS_EUNSUPPORTED, before anything is written, when the
 * backend has no such kernel for fn, the layout or the precision; callers
 * then run nas_batchnorm_act_* and the separate SE ops. Other errors as
 * nas_batchnorm_act_* (NAS_EINVAL for shapes or fn).
 */
int nas_batchnorm_act_se_fwd_train(nas_backend *be, int fn, const nas_tensor *x,
                                   const nas_tensor *gamma, const nas_tensor *beta, nas_tensor *y,
                                   nas_tensor *ws, nas_tensor *pool, nas_tensor *save_mean,
                                   nas_tensor *save_invstd, nas_tensor *running_mean,
                                   nas_tensor *running_var, float momentum, float eps);
int nas_batchnorm_act_se_bwd(nas_backend *be, int fn, const nas_tensor *x, nas_tensor *ws,
                             const nas_tensor *dy, const nas_tensor *s, const nas_tensor *dpool,
                             const nas_tensor *gamma, const nas_tensor *save_mean,
                             const nas_tensor *save_invstd, nas_tensor *dx, nas_tensor *dgamma,
                             nas_tensor *dbeta);

/* y = max(x, 0); any shape. */
int nas_relu_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y);
/* dx = dy * (x > 0). */
int nas_relu_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *dy, nas_tensor *dx);

/* Average pooling, square window k, padding excluded from the divisor
 * (count_include_pad = False, as NAS-Bench-201). y[N,C,Ho,Wo]. */
int nas_avgpool_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y, int k, int stride,
                    int pad);
int nas_avgpool_bwd(nas_backend *be, const nas_tensor *dy, nas_tensor *dx, int k, int stride,
                    int pad);
/* Global average pool: y[N,C,1,1] = mean over H,W of x[N,C,H,W]. */
int nas_gap_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y);
int nas_gap_bwd(nas_backend *be, const nas_tensor *dy, nas_tensor *dx);

/* Fully connected: y[N,M] = x[N,K] * w[M,K]^T + b[M] (x may be [N,K,1,1]). */
int nas_linear_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                   const nas_tensor *b, nas_tensor *y);
/* dx[N,K] = dy*w (dx may be NULL); dw[M,K] = dy^T*x; db[M] = sum_n dy. */
int nas_linear_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                   const nas_tensor *dy, nas_tensor *dx, nas_tensor *dw, nas_tensor *db);

/* y += alpha * x (same count). */
int nas_axpy(nas_backend *be, float alpha, const nas_tensor *x, nas_tensor *y);
/* y = alpha * x (same count; y may be x). */
int nas_scale(nas_backend *be, float alpha, const nas_tensor *x, nas_tensor *y);

/*
 * Softmax cross-entropy, mean over the batch. logits[N,K]; labels[N] holds
 * class indices as floats (a tensor so it can live on the device).
 * Writes dlogits[N,K] = (softmax - onehot)/N, *loss (mean, nats) and
 * *correct (number of rows whose argmax equals the label; ties: lowest index).
 * dlogits may be NULL (evaluation).
 */
int nas_softmax_xent(nas_backend *be, const nas_tensor *logits, const nas_tensor *labels,
                     nas_tensor *dlogits, float *loss, int *correct);

/*
 * SGD with momentum and L2 weight decay, PyTorch's formulation:
 *   g = dw + wd*w;  v = momentum*v + g;
 *   w -= lr * (nesterov ? g + momentum*v : v).
 */
int nas_sgd_step(nas_backend *be, nas_tensor *w, const nas_tensor *dw, nas_tensor *v, float lr,
                 float momentum, float wd, int nesterov);

/* Sum of squares of x into *out (host) - used for NaN/explosion checks. */
int nas_sumsq(nas_backend *be, const nas_tensor *x, double *out);

/* ---- chain-network ops (issue 15; docs/spaces.md "Training") ------------- */

/*
 * Grouped convolution: y[N,K,Ho,Wo] = conv(x[N,C,H,W], w[K,C/groups,R,R])
 * where output channel k sees only the input channels of its group
 * (k / (K/groups)); groups divides C and K. groups == C == K is the
 * depthwise convolution of MobileNets (Howard et al. 2017; PyTorch
 * Conv2d(groups=C)); groups == 1 equals nas_conv2d_fwd. No bias,
 * Ho = (H + 2*pad - R)/stride + 1. bwd_data writes dx[N,C,H,W];
 * bwd_filter overwrites dw[K,C/groups,R,R]. Errors: NAS_EINVAL (shapes,
 * groups not dividing C or K).
 */
int nas_gconv2d_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w, nas_tensor *y,
                    int stride, int pad, int groups);
int nas_gconv2d_bwd_data(nas_backend *be, const nas_tensor *dy, const nas_tensor *w,
                         nas_tensor *dx, int stride, int pad, int groups);
int nas_gconv2d_bwd_filter(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                           nas_tensor *dw, int stride, int pad, int groups);

/* Element-wise activations. The first three values equal nas_act
 * (nas/chain.h). relu6 = min(max(x,0),6); hswish = x*relu6(x+3)/6 and
 * hsigmoid = relu6(x+3)/6 (Howard et al., "Searching for MobileNetV3",
 * ICCV 2019; PyTorch Hardswish / Hardsigmoid, gradients as PyTorch's:
 * relu6' = 1 on (0,6), hswish' = x/3+1/2 on [-3,3], hsigmoid' = 1/6 on
 * (-3,3)); sigmoid = 1/(1+exp(-x)). */
typedef enum nas_actfn {
    NAS_FN_RELU = 0,
    NAS_FN_RELU6 = 1,
    NAS_FN_HSWISH = 2,
    NAS_FN_HSIGMOID = 3,
    NAS_FN_SIGMOID = 4
} nas_actfn;
/* y = f(x), any shape (x and y the same count). Errors: NAS_EINVAL (fn). */
int nas_act_fwd(nas_backend *be, int fn, const nas_tensor *x, nas_tensor *y);
/* dx = dy * f'(x), from the forward's input x. */
int nas_act_bwd(nas_backend *be, int fn, const nas_tensor *x, const nas_tensor *dy,
                nas_tensor *dx);

/*
 * Channel-wise scale, the last step of squeeze-and-excitation (Hu et al.,
 * "Squeeze-and-Excitation Networks", CVPR 2018): y[N,C,H,W] = x * s[N,C,1,1].
 * Backward: dx = dy * s; ds[N,C,1,1] = sum over H,W of dy * x (both
 * overwritten; dx may be NULL).
 */
int nas_chscale_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *s, nas_tensor *y);
int nas_chscale_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *s,
                    const nas_tensor *dy, nas_tensor *dx, nas_tensor *ds);

/*
 * Inverted dropout (Srivastava et al., JMLR 2014, scaled at training time as
 * PyTorch's Dropout): y[i] = keep(i) ? x[i] / (1-p) : 0 with keep(i) =
 * nas_dropout_keep(seed, i, p) on the element's NCHW index i, so every
 * backend drops the same elements for the same seed. 0 <= p < 1. Backward:
 * dx = dy * keep / (1-p) with the same seed.
 */
int nas_dropout_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y, float p, uint64_t seed);
int nas_dropout_bwd(nas_backend *be, const nas_tensor *dy, nas_tensor *dx, float p,
                    uint64_t seed);

/* ---- host GEMM ----------------------------------------------------------- */

/*
 * Row-major single-precision GEMM on host memory, for the controller's
 * models (NAO's LSTMs and MLP): C[M,N] = alpha*op(A)*op(B) + beta*C with
 * op(X) = X or X^T. Uses OpenBLAS (cblas_sgemm).
 */
void nas_host_sgemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                    int lda, const float *b, int ldb, float beta, float *c, int ldc);

#ifdef __cplusplus
}
#endif
#endif /* NAS_BACKEND_H */
