/*
 * trainer/cuda/loss_scale.h - dynamic loss scaling for fp16 training, as
 * plain C that the CUDA backend runs (host side and, through NAS_HD, in its
 * kernels) and tests/unit/test_loss_scale.c checks on the CPU.
 *
 * Algorithm: Micikevicius et al., "Mixed Precision Training", ICLR 2018,
 * section 3.2 (loss scaling) with the dynamic schedule of NVIDIA's
 * "Training with Mixed Precision" guide (also PyTorch's GradScaler):
 *   - the loss gradient is multiplied by S before back-propagation, so
 *     small gradients survive the fp16 range (smallest normal 2^-14,
 *     subnormal 2^-24);
 *   - every weight gradient is multiplied by 1/S before the optimiser;
 *   - a step whose scaled gradients overflowed fp16 (|g| >= 65520 rounds
 *     to inf, or NaN) is skipped - weights and momentum untouched - and
 *     S is halved;
 *   - after `interval` consecutive good steps S is doubled.
 * S stays a power of two, so scaling and unscaling are exact in binary
 * floating point (no rounding is added).
 */
#ifndef NAS_TRAINER_CUDA_LOSS_SCALE_H
#define NAS_TRAINER_CUDA_LOSS_SCALE_H

#include "trainer/kernel_math.h" /* NAS_HD, nas__sgd_update */

/* Defaults (PyTorch GradScaler's): S0 = 2^16, x2 after 2000 good steps,
 * x0.5 on overflow; S is kept within [1, 2^24]. */
#define NAS__LS_INIT 65536.0f
#define NAS__LS_INTERVAL 2000
#define NAS__LS_MIN 1.0f
#define NAS__LS_MAX 16777216.0f

/* Largest finite fp16 value is 65504; with round-to-nearest-even every
 * float of magnitude >= 65520 rounds to infinity. */
#define NAS__FP16_OVERFLOW 65520.0f

typedef struct nas__loss_scaler {
    float scale;      /* S, a power of two in [NAS__LS_MIN, NAS__LS_MAX] */
    int interval;     /* good steps before S doubles (>= 1) */
    int good;         /* consecutive good steps since the last change */
    long long steps;  /* steps seen */
    long long skipped; /* steps skipped because of overflow */
} nas__loss_scaler;

/* Start with S = init (rounded down to a power of two and clamped; <= 0
 * means NAS__LS_INIT) and `interval` (<= 0 means NAS__LS_INTERVAL). */
static inline void nas__loss_scaler_init(nas__loss_scaler *s, float init, int interval)
{
    float v = init > 0.0f ? init : NAS__LS_INIT;
    if (v < NAS__LS_MIN)
        v = NAS__LS_MIN;
    if (v > NAS__LS_MAX)
        v = NAS__LS_MAX;
    float p = NAS__LS_MIN;
    while (p * 2.0f <= v)
        p *= 2.0f;
    s->scale = p;
    s->interval = interval > 0 ? interval : NAS__LS_INTERVAL;
    s->good = 0;
    s->steps = 0;
    s->skipped = 0;
}

/*
 * Account for one finished step. `overflowed` != 0: the step was skipped;
 * S halves (not below NAS__LS_MIN) and the good-step count restarts.
 * Otherwise the count grows and S doubles (not above NAS__LS_MAX) when it
 * reaches `interval`. Returns 1 when the step was applied, 0 when skipped.
 */
static inline int nas__loss_scaler_update(nas__loss_scaler *s, int overflowed)
{
    s->steps++;
    if (overflowed) {
        s->skipped++;
        s->good = 0;
        if (s->scale * 0.5f >= NAS__LS_MIN)
            s->scale *= 0.5f;
        return 0;
    }
    if (++s->good >= s->interval) {
        s->good = 0;
        if (s->scale * 2.0f <= NAS__LS_MAX)
            s->scale *= 2.0f;
    }
    return 1;
}

/* Checkpoint form of the scaler's state (issue 19: a resumed fp16 run
 * continues with the same S and good-step count, so it is step-identical
 * to an uninterrupted one): out = {S, good}. */
static inline void nas__loss_scaler_save(const nas__loss_scaler *s, double out[2])
{
    out[0] = (double)s->scale;
    out[1] = (double)s->good;
}

/* Restore {S, good} from nas__loss_scaler_save into s (its interval kept).
 * Returns 0, or -1 (s unchanged) unless S is a power of two in
 * [NAS__LS_MIN, NAS__LS_MAX] and good an integer in [0, interval). */
static inline int nas__loss_scaler_restore(nas__loss_scaler *s, const double in[2])
{
    double v = in[0], g = in[1];
    if (!(v >= (double)NAS__LS_MIN && v <= (double)NAS__LS_MAX) || !(g >= 0.0) ||
        g >= (double)s->interval || g != (double)(int)g)
        return -1;
    double p = NAS__LS_MIN;
    while (p < v)
        p *= 2.0;
    if (p != v)
        return -1;
    s->scale = (float)v;
    s->good = (int)g;
    return 0;
}

/* 1 when float v does not fit fp16: |v| rounds to infinity, or v is NaN
 * or infinite. */
NAS_HD int nas__fp16_overflows(float v) { return !(fabsf(v) < NAS__FP16_OVERFLOW); }

/* 1 when v is NaN or infinite (an fp16 result that overflowed). */
NAS_HD int nas__nonfinite(float v) { return !(fabsf(v) <= 3.402823466e+38f); }

/*
 * One SGD step on a gradient scaled by S: the optimiser sees dw * inv_scale
 * (inv_scale = 1/S, exact for a power of two), then nas__sgd_update.
 * `skip` != 0 (the step overflowed) leaves w and v untouched.
 */
NAS_HD void nas__sgd_update_scaled(float *w, float dw_scaled, float *v, float lr, float momentum,
                                   float wd, int nesterov, float inv_scale, int skip)
{
    if (skip)
        return;
    nas__sgd_update(w, dw_scaled * inv_scale, v, lr, momentum, wd, nesterov);
}

#endif /* NAS_TRAINER_CUDA_LOSS_SCALE_H */
