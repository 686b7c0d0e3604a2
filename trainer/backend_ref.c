/*
 * trainer/backend_ref.c - the "ref" backend: plain C loops, one thread,
 * double accumulators, deterministic. It is the oracle the conformance suite
 * (tests/conformance/test_ops.c) checks every other backend against, in the
 * way llm.c checks its CUDA kernels against train_gpt2.c. Every op is the
 * textbook definition written in gather form (each output element computes
 * its own sum), so the summation order is fixed.
 *
 * Formulas: convolution/pooling as in PyTorch's Conv2d/AvgPool2d
 * (cross-correlation, count_include_pad = False); batch norm after Ioffe &
 * Szegedy 2015 with PyTorch's running-statistics convention; per-element
 * arithmetic shared with the CUDA kernels lives in trainer/kernel_math.h.
 */
#include <math.h>    /* sqrt */
#include <stdlib.h>  /* malloc, free, calloc */
#include <string.h>  /* memcpy, memset */
#include "trainer/backend_impl.h"
#include "trainer/kernel_math.h"

#define F(t) ((float *)(t)->buf)
#define CF(t) ((const float *)(t)->buf)

/* ---- memory --------------------------------------------------------------- */

static int ref_alloc(nas_backend *be, size_t bytes, void **buf)
{
    *buf = malloc(bytes ? bytes : 1);
    return *buf ? NAS_OK : nas__backend_fail(be, NAS_ENOMEM, "ref: cannot allocate %zu bytes",
                                             bytes);
}

static int ref_zero(nas_backend *be, void *buf, size_t count)
{
    float *p = buf;
    for (size_t i = 0; i < count; i++)
        p[i] = 0.0f;
    return NAS_OK;
}

/* ---- convolution ------------------------------------------------------------ */

/* Grouped convolution: output channel k reads input channels
 * g*Cg .. g*Cg+Cg-1 of its group g = k / Kg (Cg = C/groups, Kg = K/groups);
 * w[k, j, r, s] weighs input channel g*Cg + j. */
static int ref_gconv2d_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                           nas_tensor *y, int stride, int pad, int groups)
{
    const int N = x->n, C = x->c, H = x->h, W = x->w, K = w->n, R = w->h;
    const int Ho = y->h, Wo = y->w, Cg = C / groups, Kg = K / groups;
    const float *xp = CF(x), *wp = CF(w);
    float *yp = F(y);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            for (int oh = 0; oh < Ho; oh++)
                for (int ow = 0; ow < Wo; ow++) {
                    double acc = 0.0;
                    int c0 = (k / Kg) * Cg;
                    for (int j = 0; j < Cg; j++)
                        for (int r = 0; r < R; r++) {
                            int ih = oh * stride - pad + r;
                            if (ih < 0 || ih >= H)
                                continue;
                            for (int s2 = 0; s2 < R; s2++) {
                                int iw = ow * stride - pad + s2;
                                if (iw < 0 || iw >= W)
                                    continue;
                                acc += (double)xp[((size_t)(n * C + c0 + j) * H + ih) * W + iw] *
                                       wp[((size_t)(k * Cg + j) * R + r) * R + s2];
                            }
                        }
                    yp[((size_t)(n * K + k) * Ho + oh) * Wo + ow] = (float)acc;
                }
    return NAS_OK;
}

static int ref_gconv2d_bwd_data(nas_backend *be, const nas_tensor *dy, const nas_tensor *w,
                                nas_tensor *dx, int stride, int pad, int groups)
{
    const int N = dx->n, C = dx->c, H = dx->h, W = dx->w, K = w->n, R = w->h;
    const int Ho = dy->h, Wo = dy->w, Cg = C / groups, Kg = K / groups;
    const float *dyp = CF(dy), *wp = CF(w);
    float *dxp = F(dx);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int ih = 0; ih < H; ih++)
                for (int iw = 0; iw < W; iw++) {
                    double acc = 0.0;
                    int g = c / Cg, j = c % Cg;
                    for (int k = g * Kg; k < (g + 1) * Kg; k++)
                        for (int r = 0; r < R; r++) {
                            int th = ih + pad - r;
                            if (th < 0 || th % stride)
                                continue;
                            int oh = th / stride;
                            if (oh >= Ho)
                                continue;
                            for (int s2 = 0; s2 < R; s2++) {
                                int tw = iw + pad - s2;
                                if (tw < 0 || tw % stride)
                                    continue;
                                int ow = tw / stride;
                                if (ow >= Wo)
                                    continue;
                                acc += (double)dyp[((size_t)(n * K + k) * Ho + oh) * Wo + ow] *
                                       wp[((size_t)(k * Cg + j) * R + r) * R + s2];
                            }
                        }
                    dxp[((size_t)(n * C + c) * H + ih) * W + iw] = (float)acc;
                }
    return NAS_OK;
}

static int ref_gconv2d_bwd_filter(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                                  nas_tensor *dw, int stride, int pad, int groups)
{
    const int N = x->n, C = x->c, H = x->h, W = x->w, K = dw->n, R = dw->h;
    const int Ho = dy->h, Wo = dy->w, Cg = C / groups, Kg = K / groups;
    const float *xp = CF(x), *dyp = CF(dy);
    float *dwp = F(dw);
    for (int k = 0; k < K; k++)
        for (int j = 0; j < Cg; j++)
            for (int r = 0; r < R; r++)
                for (int s2 = 0; s2 < R; s2++) {
                    double acc = 0.0;
                    int c = (k / Kg) * Cg + j;
                    for (int n = 0; n < N; n++)
                        for (int oh = 0; oh < Ho; oh++) {
                            int ih = oh * stride - pad + r;
                            if (ih < 0 || ih >= H)
                                continue;
                            for (int ow = 0; ow < Wo; ow++) {
                                int iw = ow * stride - pad + s2;
                                if (iw < 0 || iw >= W)
                                    continue;
                                acc += (double)dyp[((size_t)(n * K + k) * Ho + oh) * Wo + ow] *
                                       xp[((size_t)(n * C + c) * H + ih) * W + iw];
                            }
                        }
                    dwp[((size_t)(k * Cg + j) * R + r) * R + s2] = (float)acc;
                }
    return NAS_OK;
}

/* Dense convolution is the groups = 1 case of the grouped one above (the
 * same loops, in the same order, so the same sums to the last bit):
 * y[n,k,oh,ow] = sum_{c,r,s} x[n,c,oh*S-P+r,ow*S-P+s] * w[k,c,r,s]. */
static int ref_conv2d_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                          nas_tensor *y, int stride, int pad)
{
    return ref_gconv2d_fwd(be, x, w, y, stride, pad, 1);
}

/* dx[n,c,ih,iw] = sum over (k,r,s) with ih = oh*S-P+r, iw = ow*S-P+s of
 * dy[n,k,oh,ow] * w[k,c,r,s]. */
static int ref_conv2d_bwd_data(nas_backend *be, const nas_tensor *dy, const nas_tensor *w,
                               nas_tensor *dx, int stride, int pad)
{
    return ref_gconv2d_bwd_data(be, dy, w, dx, stride, pad, 1);
}

/* dw[k,c,r,s] = sum_{n,oh,ow} dy[n,k,oh,ow] * x[n,c,oh*S-P+r,ow*S-P+s]. */
static int ref_conv2d_bwd_filter(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                                 nas_tensor *dw, int stride, int pad)
{
    return ref_gconv2d_bwd_filter(be, x, dy, dw, stride, pad, 1);
}

/* ---- batch normalisation ------------------------------------------------------- */

static int ref_batchnorm_fwd_train(nas_backend *be, const nas_tensor *x,
                                   const nas_tensor *gamma, const nas_tensor *beta,
                                   nas_tensor *y, nas_tensor *save_mean,
                                   nas_tensor *save_invstd, nas_tensor *running_mean,
                                   nas_tensor *running_var, float momentum, float eps)
{
    const int N = x->n, C = x->c;
    const size_t HW = (size_t)x->h * x->w, M = (size_t)N * HW;
    const float *xp = CF(x);
    float *yp = F(y);
    for (int c = 0; c < C; c++) {
        double sum = 0.0;
        for (int n = 0; n < N; n++)
            for (size_t i = 0; i < HW; i++)
                sum += xp[((size_t)n * C + c) * HW + i];
        double mean = sum / (double)M, ss = 0.0;
        for (int n = 0; n < N; n++)
            for (size_t i = 0; i < HW; i++) {
                double d = xp[((size_t)n * C + c) * HW + i] - mean;
                ss += d * d;
            }
        double var = ss / (double)M; /* biased: used to normalise */
        float fmean = (float)mean, invstd = (float)(1.0 / sqrt(var + (double)eps));
        float g = CF(gamma)[c], b = CF(beta)[c];
        for (int n = 0; n < N; n++)
            for (size_t i = 0; i < HW; i++) {
                size_t j = ((size_t)n * C + c) * HW + i;
                yp[j] = nas__bn_apply(xp[j], fmean, invstd, g, b);
            }
        F(save_mean)[c] = fmean;
        F(save_invstd)[c] = invstd;
        nas__bn_running_update(&F(running_mean)[c], &F(running_var)[c], fmean, (float)var,
                               (float)M, momentum);
    }
    return NAS_OK;
}

static int ref_batchnorm_fwd_infer(nas_backend *be, const nas_tensor *x,
                                   const nas_tensor *gamma, const nas_tensor *beta,
                                   const nas_tensor *running_mean,
                                   const nas_tensor *running_var, nas_tensor *y, float eps)
{
    const int N = x->n, C = x->c;
    const size_t HW = (size_t)x->h * x->w;
    const float *xp = CF(x);
    float *yp = F(y);
    for (int c = 0; c < C; c++) {
        float mean = CF(running_mean)[c];
        float invstd = (float)(1.0 / sqrt((double)CF(running_var)[c] + (double)eps));
        float g = CF(gamma)[c], b = CF(beta)[c];
        for (int n = 0; n < N; n++)
            for (size_t i = 0; i < HW; i++) {
                size_t j = ((size_t)n * C + c) * HW + i;
                yp[j] = nas__bn_apply(xp[j], mean, invstd, g, b);
            }
    }
    return NAS_OK;
}

/* dbeta = sum dy, dgamma = sum dy*xhat, dx from nas__bn_grad (batch
 * statistics depend on x, so all three terms appear). */
static int ref_batchnorm_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                             const nas_tensor *gamma, const nas_tensor *save_mean,
                             const nas_tensor *save_invstd, nas_tensor *dx, nas_tensor *dgamma,
                             nas_tensor *dbeta)
{
    const int N = x->n, C = x->c;
    const size_t HW = (size_t)x->h * x->w, M = (size_t)N * HW;
    const float *xp = CF(x), *dyp = CF(dy);
    float *dxp = F(dx);
    for (int c = 0; c < C; c++) {
        float mean = CF(save_mean)[c], invstd = CF(save_invstd)[c], g = CF(gamma)[c];
        double sdy = 0.0, sdyx = 0.0;
        for (int n = 0; n < N; n++)
            for (size_t i = 0; i < HW; i++) {
                size_t j = ((size_t)n * C + c) * HW + i;
                double xhat = ((double)xp[j] - mean) * invstd;
                sdy += dyp[j];
                sdyx += dyp[j] * xhat;
            }
        for (int n = 0; n < N; n++)
            for (size_t i = 0; i < HW; i++) {
                size_t j = ((size_t)n * C + c) * HW + i;
                float xhat = (xp[j] - mean) * invstd;
                dxp[j] = nas__bn_grad(dyp[j], xhat, g, invstd, (float)sdy, (float)sdyx,
                                      (float)M);
            }
        F(dgamma)[c] = (float)sdyx;
        F(dbeta)[c] = (float)sdy;
    }
    return NAS_OK;
}

/* ---- relu -------------------------------------------------------------------- */

static int ref_relu_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y)
{
    const float *xp = CF(x);
    float *yp = F(y);
    for (size_t i = 0; i < x->count; i++)
        yp[i] = nas__relu(xp[i]);
    return NAS_OK;
}

static int ref_relu_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                        nas_tensor *dx)
{
    const float *xp = CF(x), *dyp = CF(dy);
    float *dxp = F(dx);
    for (size_t i = 0; i < x->count; i++)
        dxp[i] = nas__relu_grad(xp[i], dyp[i]);
    return NAS_OK;
}

/* ---- pooling ----------------------------------------------------------------- */

static int ref_avgpool_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y, int k,
                           int stride, int pad)
{
    const int H = x->h, W = x->w, Ho = y->h, Wo = y->w;
    const size_t planes = (size_t)x->n * x->c;
    for (size_t p = 0; p < planes; p++) {
        const float *xp = CF(x) + p * H * W;
        float *yp = F(y) + p * Ho * Wo;
        for (int oh = 0; oh < Ho; oh++)
            for (int ow = 0; ow < Wo; ow++) {
                int h0, h1, w0, w1;
                int cnt = nas__pool_window(oh, k, stride, pad, H, &h0, &h1) *
                          nas__pool_window(ow, k, stride, pad, W, &w0, &w1);
                double acc = 0.0;
                for (int ih = h0; ih < h1; ih++)
                    for (int iw = w0; iw < w1; iw++)
                        acc += xp[ih * W + iw];
                yp[oh * Wo + ow] = (float)(acc / cnt);
            }
    }
    return NAS_OK;
}

/* First output index whose window [o*S-P, o*S-P+k) contains i, and one past
 * the last, along one axis. */
static void covering(int i, int k, int stride, int pad, int out, int *lo, int *hi)
{
    int t = i + pad - k + 1; /* o*S >= t */
    int a = t <= 0 ? 0 : (t + stride - 1) / stride;
    int b = (i + pad) / stride + 1; /* o*S <= i+P */
    *lo = a;
    *hi = b < out ? b : out;
}

/* dx[i] = sum over windows containing i of dy[o] / count(o). */
static int ref_avgpool_bwd(nas_backend *be, const nas_tensor *dy, nas_tensor *dx, int k,
                           int stride, int pad)
{
    const int H = dx->h, W = dx->w, Ho = dy->h, Wo = dy->w;
    const size_t planes = (size_t)dx->n * dx->c;
    for (size_t p = 0; p < planes; p++) {
        const float *dyp = CF(dy) + p * Ho * Wo;
        float *dxp = F(dx) + p * H * W;
        for (int ih = 0; ih < H; ih++)
            for (int iw = 0; iw < W; iw++) {
                int oh0, oh1, ow0, ow1;
                covering(ih, k, stride, pad, Ho, &oh0, &oh1);
                covering(iw, k, stride, pad, Wo, &ow0, &ow1);
                double acc = 0.0;
                for (int oh = oh0; oh < oh1; oh++)
                    for (int ow = ow0; ow < ow1; ow++) {
                        int a, b;
                        int cnt = nas__pool_window(oh, k, stride, pad, H, &a, &b) *
                                  nas__pool_window(ow, k, stride, pad, W, &a, &b);
                        acc += (double)dyp[oh * Wo + ow] / cnt;
                    }
                dxp[ih * W + iw] = (float)acc;
            }
    }
    return NAS_OK;
}

static int ref_gap_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y)
{
    const size_t HW = (size_t)x->h * x->w, planes = (size_t)x->n * x->c;
    for (size_t p = 0; p < planes; p++) {
        double acc = 0.0;
        for (size_t i = 0; i < HW; i++)
            acc += CF(x)[p * HW + i];
        F(y)[p] = (float)(acc / (double)HW);
    }
    return NAS_OK;
}

static int ref_gap_bwd(nas_backend *be, const nas_tensor *dy, nas_tensor *dx)
{
    const size_t HW = (size_t)dx->h * dx->w, planes = (size_t)dx->n * dx->c;
    for (size_t p = 0; p < planes; p++) {
        float g = (float)((double)CF(dy)[p] / (double)HW);
        for (size_t i = 0; i < HW; i++)
            F(dx)[p * HW + i] = g;
    }
    return NAS_OK;
}

/* ---- linear ------------------------------------------------------------------- */

static int ref_linear_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                          const nas_tensor *b, nas_tensor *y)
{
    const int N = x->n, M = w->n;
    const size_t K = x->count / (size_t)N;
    for (int n = 0; n < N; n++)
        for (int m = 0; m < M; m++) {
            double acc = CF(b)[m];
            for (size_t k = 0; k < K; k++)
                acc += (double)CF(x)[n * K + k] * CF(w)[m * K + k];
            F(y)[(size_t)n * M + m] = (float)acc;
        }
    return NAS_OK;
}

static int ref_linear_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                          const nas_tensor *dy, nas_tensor *dx, nas_tensor *dw, nas_tensor *db)
{
    const int N = x->n, M = w->n;
    const size_t K = x->count / (size_t)N;
    const float *xp = CF(x), *wp = CF(w), *dyp = CF(dy);
    if (dx)
        for (int n = 0; n < N; n++)
            for (size_t k = 0; k < K; k++) {
                double acc = 0.0;
                for (int m = 0; m < M; m++)
                    acc += (double)dyp[(size_t)n * M + m] * wp[m * K + k];
                F(dx)[n * K + k] = (float)acc;
            }
    for (int m = 0; m < M; m++) {
        for (size_t k = 0; k < K; k++) {
            double acc = 0.0;
            for (int n = 0; n < N; n++)
                acc += (double)dyp[(size_t)n * M + m] * xp[n * K + k];
            F(dw)[m * K + k] = (float)acc;
        }
        double acc = 0.0;
        for (int n = 0; n < N; n++)
            acc += dyp[(size_t)n * M + m];
        F(db)[m] = (float)acc;
    }
    return NAS_OK;
}

/* ---- elementwise, loss, optimiser ------------------------------------------------ */

static int ref_axpy(nas_backend *be, float alpha, const nas_tensor *x, nas_tensor *y)
{
    for (size_t i = 0; i < x->count; i++)
        F(y)[i] += alpha * CF(x)[i];
    return NAS_OK;
}

static int ref_scale(nas_backend *be, float alpha, const nas_tensor *x, nas_tensor *y)
{
    for (size_t i = 0; i < x->count; i++)
        F(y)[i] = alpha * CF(x)[i];
    return NAS_OK;
}

/* Class index from a float label; -1 unless it is an integer in [0,k). */
static int label_index(float v, int k)
{
    if (!(v >= 0.0f) || v >= (float)k || v != (float)(int)v)
        return -1;
    return (int)v;
}

static int ref_softmax_xent(nas_backend *be, const nas_tensor *logits, const nas_tensor *labels,
                            nas_tensor *dlogits, float *loss, int *correct)
{
    const int N = logits->n;
    const int K = (int)(logits->count / (size_t)N);
    for (int n = 0; n < N; n++)
        if (label_index(CF(labels)[n], K) < 0)
            return nas__backend_fail(be, NAS_EINVAL,
                                     "softmax_xent: label %g of row %d is not a class in [0,%d)",
                                     (double)CF(labels)[n], n, K);
    double total = 0.0;
    int right = 0;
    for (int n = 0; n < N; n++) {
        int lab = label_index(CF(labels)[n], K), am;
        total += nas__softmax_xent_row(CF(logits) + (size_t)n * K, K, lab, 1.0f / (float)N,
                                       dlogits ? F(dlogits) + (size_t)n * K : NULL, &am);
        right += am == lab;
    }
    *loss = (float)(total / N);
    *correct = right;
    return NAS_OK;
}

static int ref_sgd_step(nas_backend *be, nas_tensor *w, const nas_tensor *dw, nas_tensor *v,
                        float lr, float momentum, float wd, int nesterov)
{
    for (size_t i = 0; i < w->count; i++)
        nas__sgd_update(&F(w)[i], CF(dw)[i], &F(v)[i], lr, momentum, wd, nesterov);
    return NAS_OK;
}

static int ref_sumsq(nas_backend *be, const nas_tensor *x, double *out)
{
    double acc = 0.0;
    for (size_t i = 0; i < x->count; i++)
        acc += (double)CF(x)[i] * CF(x)[i];
    *out = acc;
    return NAS_OK;
}

/* ---- construction -------------------------------------------------------------- */

/* ---- chain-network ops (issue 15) ---------------------------------------------- */

static int ref_act_fwd(nas_backend *be, int fn, const nas_tensor *x, nas_tensor *y)
{
    for (size_t i = 0; i < x->count; i++)
        F(y)[i] = nas__act(fn, CF(x)[i]);
    return NAS_OK;
}

static int ref_act_bwd(nas_backend *be, int fn, const nas_tensor *x, const nas_tensor *dy,
                       nas_tensor *dx)
{
    for (size_t i = 0; i < x->count; i++)
        F(dx)[i] = nas__act_grad(fn, CF(x)[i], CF(dy)[i]);
    return NAS_OK;
}

static int ref_chscale_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *s,
                           nas_tensor *y)
{
    const size_t HW = (size_t)x->h * x->w, planes = (size_t)x->n * x->c;
    for (size_t p = 0; p < planes; p++)
        for (size_t i = 0; i < HW; i++)
            F(y)[p * HW + i] = CF(x)[p * HW + i] * CF(s)[p];
    return NAS_OK;
}

static int ref_chscale_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *s,
                           const nas_tensor *dy, nas_tensor *dx, nas_tensor *ds)
{
    const size_t HW = (size_t)x->h * x->w, planes = (size_t)x->n * x->c;
    for (size_t p = 0; p < planes; p++) {
        double acc = 0.0;
        for (size_t i = 0; i < HW; i++) {
            acc += (double)CF(dy)[p * HW + i] * CF(x)[p * HW + i];
            if (dx)
                F(dx)[p * HW + i] = CF(dy)[p * HW + i] * CF(s)[p];
        }
        F(ds)[p] = (float)acc;
    }
    return NAS_OK;
}

static int ref_dropout_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y, float p,
                           uint64_t seed)
{
    float scale = 1.0f / (1.0f - p);
    for (size_t i = 0; i < x->count; i++)
        F(y)[i] = nas__dropout_keep(seed, i, p) ? CF(x)[i] * scale : 0.0f;
    return NAS_OK;
}

static int ref_dropout_bwd(nas_backend *be, const nas_tensor *dy, nas_tensor *dx, float p,
                           uint64_t seed)
{
    return ref_dropout_fwd(be, dy, dx, p, seed);
}

static void ref_destroy(nas_backend *be) { free(be); }

static const nas__backend_ops ref_ops = {
    .name = "ref",
    .destroy = ref_destroy,
    .sync = NULL,
    .alloc = ref_alloc,
    .free = nas__host_free,
    .upload = nas__host_upload,
    .download = nas__host_download,
    .zero = ref_zero,
    .copy = nas__host_copy,
    .conv2d_fwd = ref_conv2d_fwd,
    .conv2d_bwd_data = ref_conv2d_bwd_data,
    .conv2d_bwd_filter = ref_conv2d_bwd_filter,
    .batchnorm_fwd_train = ref_batchnorm_fwd_train,
    .batchnorm_fwd_infer = ref_batchnorm_fwd_infer,
    .batchnorm_bwd = ref_batchnorm_bwd,
    .relu_fwd = ref_relu_fwd,
    .relu_bwd = ref_relu_bwd,
    .avgpool_fwd = ref_avgpool_fwd,
    .avgpool_bwd = ref_avgpool_bwd,
    .gap_fwd = ref_gap_fwd,
    .gap_bwd = ref_gap_bwd,
    .linear_fwd = ref_linear_fwd,
    .linear_bwd = ref_linear_bwd,
    .axpy = ref_axpy,
    .scale = ref_scale,
    .softmax_xent = ref_softmax_xent,
    .sgd_step = ref_sgd_step,
    .sumsq = ref_sumsq,
    .gconv2d_fwd = ref_gconv2d_fwd,
    .gconv2d_bwd_data = ref_gconv2d_bwd_data,
    .gconv2d_bwd_filter = ref_gconv2d_bwd_filter,
    .act_fwd = ref_act_fwd,
    .act_bwd = ref_act_bwd,
    .chscale_fwd = ref_chscale_fwd,
    .chscale_bwd = ref_chscale_bwd,
    .dropout_fwd = ref_dropout_fwd,
    .dropout_bwd = ref_dropout_bwd,
};

/* y (+)= f(conv(x, w) + b): the plain (grouped) convolution into a
 * temporary, then the bias, then the activation or the accumulation, in
 * that order (the oracle for the fused kernels). */
static int ref_conv2d_fwd_fused(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                                const nas_tensor *b, nas_tensor *y, int stride, int pad,
                                int groups, int act, int accumulate)
{
    nas_tensor t = *y;
    t.buf = malloc(y->count * sizeof(float));
    if (!t.buf)
        return nas__backend_fail(be, NAS_ENOMEM, "ref conv2d_fwd_fused: out of memory");
    ref_gconv2d_fwd(be, x, w, &t, stride, pad, groups);
    const float *tp = CF(&t), *bp = CF(b);
    float *yp = F(y);
    size_t plane = (size_t)y->h * y->w;
    for (size_t i = 0; i < y->count; i++) {
        float v = tp[i] + bp[(i / plane) % (size_t)y->c];
        if (act >= 0)
            v = nas__act(act, v);
        yp[i] = accumulate ? yp[i] + v : v;
    }
    free(t.buf);
    return NAS_OK;
}

/* y = conv(x, w) + b + r: ref_conv2d_fwd_fused, then the residual added
 * element by element (the oracle for the fused kernels). */
static int ref_conv2d_fwd_add(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                              const nas_tensor *b, const nas_tensor *r, nas_tensor *y, int stride,
                              int pad, int groups)
{
    int rc = ref_conv2d_fwd_fused(be, x, w, b, y, stride, pad, groups, -1, 0);
    if (rc)
        return rc;
    const float *rp = CF(r);
    float *yp = F(y);
    for (size_t i = 0; i < y->count; i++)
        yp[i] += rp[i];
    return NAS_OK;
}

static const nas__backend_ext ref_ext = {
    .conv2d_fwd_fused = ref_conv2d_fwd_fused,
    .conv2d_fwd_add = ref_conv2d_fwd_add,
};

/* The ref backend ignores `threads` (always one) and `device`. */
int nas__backend_ref_create(int threads, int device, nas_backend **out, nas_error *err)
{
    *out = NULL;
    nas_backend *be = calloc(1, sizeof *be);
    if (!be)
        return nas_error_set(err, NAS_ENOMEM, "ref backend: out of memory");
    be->ops = &ref_ops;
    be->ext = &ref_ext;
    be->context = NULL;
    be->threads = 1;
    *out = be;
    return NAS_OK;
}
