/*
 * trainer/kernel_math.h - per-element arithmetic shared by the reference
 * backend (C) and the CUDA kernels (nvcc), so the arithmetic is tested on
 * the CPU and only launch geometry and memory movement are GPU-only.
 * Every function is pure and works on one element (or one row).
 */
#ifndef NAS_TRAINER_KERNEL_MATH_H
#define NAS_TRAINER_KERNEL_MATH_H

#include <math.h>

#ifdef __CUDACC__
#define NAS_HD __host__ __device__ static inline
#else
#define NAS_HD static inline
#endif

/* ReLU forward and backward for one element. */
NAS_HD float nas__relu(float x) { return x > 0.0f ? x : 0.0f; }
NAS_HD float nas__relu_grad(float x, float dy) { return x > 0.0f ? dy : 0.0f; }

/*
 * One SGD step for one weight, PyTorch's formulation (torch.optim.SGD):
 *   g = dw + wd*w; v = momentum*v + g; w -= lr*(nesterov ? g + momentum*v : v).
 * Updates *w and *v in place.
 */
NAS_HD void nas__sgd_update(float *w, float dw, float *v, float lr, float momentum, float wd,
                            int nesterov)
{
    float g = dw + wd * (*w);
    float vn = momentum * (*v) + g;
    *v = vn;
    *w -= lr * (nesterov ? g + momentum * vn : vn);
}

/*
 * Softmax cross-entropy of one row of k logits against class `label`,
 * scaled by `inv_n` (1/batch) for the gradient. Writes drow[k] (may be
 * NULL) and returns the row's loss in nats; *argmax gets the first index
 * of the largest logit.
 */
NAS_HD float nas__softmax_xent_row(const float *row, int k, int label, float inv_n, float *drow,
                                   int *argmax)
{
    float mx = row[0];
    int am = 0;
    for (int j = 1; j < k; j++)
        if (row[j] > mx) {
            mx = row[j];
            am = j;
        }
    float sum = 0.0f;
    for (int j = 0; j < k; j++)
        sum += expf(row[j] - mx);
    float lse = mx + logf(sum);
    if (drow)
        for (int j = 0; j < k; j++)
            drow[j] = (expf(row[j] - lse) - (j == label ? 1.0f : 0.0f)) * inv_n;
    *argmax = am;
    return lse - row[label];
}

/* Batch-norm normalise + affine for one element. */
NAS_HD float nas__bn_apply(float x, float mean, float invstd, float gamma, float beta)
{
    return gamma * (x - mean) * invstd + beta;
}

/*
 * Batch-norm input gradient for one element, given per-channel sums over
 * the batch: sum_dy = sum(dy), sum_dy_xhat = sum(dy * xhat), m = N*H*W.
 * dx = gamma*invstd/m * (m*dy - sum_dy - xhat*sum_dy_xhat).
 */
NAS_HD float nas__bn_grad(float dy, float xhat, float gamma, float invstd, float sum_dy,
                          float sum_dy_xhat, float m)
{
    return gamma * invstd / m * (m * dy - sum_dy - xhat * sum_dy_xhat);
}

/*
 * Clipped extent of output position `o` of a window op along one axis:
 * the window [o*stride - pad, o*stride - pad + k) intersected with
 * [0, in). Writes the half-open range to *lo, *hi and returns its length,
 * the avg-pool divisor with count_include_pad = False (PyTorch AvgPool2d).
 */
NAS_HD int nas__pool_window(int o, int k, int stride, int pad, int in, int *lo, int *hi)
{
    int a = o * stride - pad, b = a + k;
    if (a < 0)
        a = 0;
    if (b > in)
        b = in;
    *lo = a;
    *hi = b;
    return b > a ? b - a : 0;
}

/*
 * Batch-norm running-statistics update, PyTorch convention
 * (torch.nn.BatchNorm2d): running = (1-momentum)*running + momentum*batch,
 * where the variance uses the unbiased estimate var_biased*m/(m-1) over the
 * m = N*H*W values of a channel (the biased value when m == 1).
 */
NAS_HD void nas__bn_running_update(float *running_mean, float *running_var, float mean,
                                   float var_biased, float m, float momentum)
{
    float var_unbiased = m > 1.0f ? var_biased * m / (m - 1.0f) : var_biased;
    *running_mean = (1.0f - momentum) * (*running_mean) + momentum * mean;
    *running_var = (1.0f - momentum) * (*running_var) + momentum * var_unbiased;
}

/*
 * Average-pool input gradient of input element (iy, ix) of one [h, w]
 * plane, as a gather (what the CUDA backend runs, one thread per input
 * element; no atomics): the sum, over the output windows that contain it,
 * of dy/count with count from nas__pool_window (count_include_pad =
 * False). dy is that plane's [ho, wo] output gradient. Output rows oy cover
 * iy when oy*stride - pad <= iy < oy*stride - pad + k.
 */
NAS_HD float nas__avgpool_bwd_gather(const float *dy, int iy, int ix, int h, int w, int ho,
                                     int wo, int k, int stride, int pad)
{
    int oy_lo = iy + pad - k + 1 > 0 ? (iy + pad - k + stride) / stride : 0;
    int oy_hi = (iy + pad) / stride;
    int ox_lo = ix + pad - k + 1 > 0 ? (ix + pad - k + stride) / stride : 0;
    int ox_hi = (ix + pad) / stride;
    if (oy_hi > ho - 1)
        oy_hi = ho - 1;
    if (ox_hi > wo - 1)
        ox_hi = wo - 1;
    float s = 0.0f;
    for (int oy = oy_lo; oy <= oy_hi; oy++) {
        int y0, y1, x0, x1;
        int ch = nas__pool_window(oy, k, stride, pad, h, &y0, &y1);
        for (int ox = ox_lo; ox <= ox_hi; ox++) {
            int cnt = ch * nas__pool_window(ox, k, stride, pad, w, &x0, &x1);
            if (cnt > 0)
                s += dy[oy * wo + ox] / (float)cnt;
        }
    }
    return s;
}

/* Activation functions of nas_actfn (nas/backend.h), value and gradient
 * for one element; the gradients follow PyTorch's autograd formulas. */
NAS_HD float nas__act(int fn, float x)
{
    switch (fn) {
    case 0: return x > 0.0f ? x : 0.0f;
    case 1: return x < 0.0f ? 0.0f : (x > 6.0f ? 6.0f : x);
    case 2: return x <= -3.0f ? 0.0f : (x >= 3.0f ? x : x * (x + 3.0f) / 6.0f);
    case 3: return x <= -3.0f ? 0.0f : (x >= 3.0f ? 1.0f : x / 6.0f + 0.5f);
    default: return 1.0f / (1.0f + expf(-x));
    }
}

NAS_HD float nas__act_grad(int fn, float x, float dy)
{
    switch (fn) {
    case 0: return x > 0.0f ? dy : 0.0f;
    case 1: return x > 0.0f && x < 6.0f ? dy : 0.0f;
    case 2: return x < -3.0f ? 0.0f : (x > 3.0f ? dy : dy * (x / 3.0f + 0.5f));
    case 3: return x > -3.0f && x < 3.0f ? dy / 6.0f : 0.0f;
    default: {
        float s = 1.0f / (1.0f + expf(-x));
        return dy * s * (1.0f - s);
    }
    }
}

/*
 * Dropout's keep decision for element i under `seed`: a counter-based
 * draw, PCG32's output permutation XSH-RR (O'Neill 2014) applied to one
 * LCG step of state seed + i * golden-ratio increment, mapped to [0,1) by
 * its top 24 bits; kept when the draw is >= p. Pure, so every backend and
 * the backward pass agree without storing a mask.
 */
NAS_HD int nas__dropout_keep(unsigned long long seed, unsigned long long i, float p)
{
    unsigned long long st = seed + i * 0x9E3779B97F4A7C15ull;
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    unsigned int xs = (unsigned int)(((st >> 18u) ^ st) >> 27u);
    unsigned int rot = (unsigned int)(st >> 59u);
    unsigned int r = (xs >> rot) | (xs << ((32u - rot) & 31u));
    float u = (float)(r >> 8) * (1.0f / 16777216.0f);
    return u >= p;
}

#endif /* NAS_TRAINER_KERNEL_MATH_H */
