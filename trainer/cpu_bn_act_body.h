/*
 * trainer/cpu_bn_act_body.h - the per-channel-block kernels of
 * trainer/cpu_bn_act.c for one block width, included once per width with
 * BS (channels per block: 16, 8, or 1 for plain NCHW), VT / VI (float and
 * int GCC vectors of BS lanes) and SFX (a name suffix) defined. Not a
 * header of its own: only cpu_bn_act.c includes it. The maths and the
 * memory order are described there.
 */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(name, SFX)
/* Lane-wise select: m ? a : b (m a comparison's all-ones / zero lanes). */
#define SEL(m, a, b) ((VT)(((VI)(a) & (m)) | ((VI)(b) & ~(m))))

/* out = fn(z) lane-wise, fn NAS_FN_RELU6 or NAS_FN_HSWISH, PyTorch's
 * formulas as in kernel_math.h's nas__act (macros: a function taking or
 * returning a vector would change the ABI between target clones). */
#define ACT(out, fn, z)                                                          \
    do {                                                                         \
        if ((fn) == NAS_FN_RELU6) {                                              \
            const VT r_ = SEL((z) > 6.0f, (VT){0} + 6.0f, (z));                  \
            (out) = (VT)((VI)r_ & ~((z) < 0.0f));                                \
        } else {                                                                 \
            const VT r_ = SEL((z) >= 3.0f, (z), (z) * ((z) + 3.0f) / 6.0f);      \
            (out) = (VT)((VI)r_ & ~((z) <= -3.0f));                              \
        }                                                                        \
    } while (0)

/* out = dy * fn'(z) lane-wise, as kernel_math.h's nas__act_grad. */
#define ACT_GRAD(out, fn, z, dy)                                                 \
    do {                                                                         \
        if ((fn) == NAS_FN_RELU6) {                                              \
            (out) = (VT)((VI)(dy) & (((z) > 0.0f) & ((z) < 6.0f)));              \
        } else {                                                                 \
            const VT r_ = SEL((z) > 3.0f, (dy), (dy) * ((z) / 3.0f + 0.5f));     \
            (out) = (VT)((VI)r_ & ~((z) < -3.0f));                               \
        }                                                                        \
    } while (0)

/* The BS channels of block cb as vectors, from a plain per-channel array. */
#define LANES(arr) (*(const VT *)((arr) + (size_t)cb * BS))

/* Forward of channel block cb: its statistics (shifted sums, one read of
 * x), then y = fn(gamma * xhat + beta) (one read of x, one write of y). */
BN_CLONES static void FN(fwd_block)(const bn_act_args *a, int cb)
{
    const size_t hw = a->hw, is = (size_t)a->cbn * hw * BS;
    const float *x0 = a->x + (size_t)cb * hw * BS;
    const VT k = *(const VT *)x0; /* the shift: each channel's first value */
    double s1[BS] = {0}, s2[BS] = {0};
    for (int i = 0; i < a->n; i++) {
        const float *xi = x0 + (size_t)i * is;
        VT a1 = {0}, a2 = {0};
        for (size_t p = 0; p < hw; p++) {
            const VT d = *(const VT *)(xi + p * BS) - k;
            a1 += d;
            a2 += d * d;
        }
        for (int l = 0; l < BS; l++) {
            s1[l] += (double)a1[l];
            s2[l] += (double)a2[l];
        }
    }
    for (int l = 0; l < BS; l++)
        bn_act_channel(a, cb * BS + l, (double)k[l], s1[l], s2[l]);
    const VT mu = LANES(a->smean), inv = LANES(a->sinvstd), g = LANES(a->gamma),
             b = LANES(a->beta);
    float *y0 = a->y + (size_t)cb * hw * BS;
    for (int i = 0; i < a->n; i++) {
        const float *xi = x0 + (size_t)i * is;
        float *yi = y0 + (size_t)i * is;
        for (size_t p = 0; p < hw; p++) {
            const VT xh = (*(const VT *)(xi + p * BS) - mu) * inv;
            const VT z = g * xh + b;
            ACT(*(VT *)(yi + p * BS), a->fn, z);
        }
    }
}

/* Backward of channel block cb: sums of g = dy * fn'(z) and g * xhat (one
 * read of x and dy), then dx (a second read of both, one write of dx). z
 * is recomputed from x exactly as the forward computed it. */
BN_CLONES static void FN(bwd_block)(const bn_act_args *a, int cb)
{
    const size_t hw = a->hw, is = (size_t)a->cbn * hw * BS, off = (size_t)cb * hw * BS;
    const float *x0 = a->x + off, *d0 = a->dy + off;
    const VT mu = LANES(a->smean), inv = LANES(a->sinvstd), g = LANES(a->gamma),
             b = LANES(a->beta);
    double s1[BS] = {0}, s2[BS] = {0};
    for (int i = 0; i < a->n; i++) {
        const float *xi = x0 + (size_t)i * is, *di = d0 + (size_t)i * is;
        VT a1 = {0}, a2 = {0};
        for (size_t p = 0; p < hw; p++) {
            const VT xh = (*(const VT *)(xi + p * BS) - mu) * inv;
            const VT z = g * xh + b, d = *(const VT *)(di + p * BS);
            VT gr;
            ACT_GRAD(gr, a->fn, z, d);
            a1 += gr;
            a2 += gr * xh;
        }
        for (int l = 0; l < BS; l++) {
            s1[l] += (double)a1[l];
            s2[l] += (double)a2[l];
        }
    }
    const double m = (double)a->n * (double)hw;
    VT c1 = {0}, c2 = {0};
    for (int l = 0; l < BS; l++) {
        a->dbeta[cb * BS + l] = (float)s1[l];
        a->dgamma[cb * BS + l] = (float)s2[l];
        c1[l] = (float)(s1[l] / m);
        c2[l] = (float)(s2[l] / m);
    }
    const VT k1 = g * inv;
    float *dx0 = a->dx + off;
    for (int i = 0; i < a->n; i++) {
        const float *xi = x0 + (size_t)i * is, *di = d0 + (size_t)i * is;
        float *dxi = dx0 + (size_t)i * is;
        for (size_t p = 0; p < hw; p++) {
            const VT xh = (*(const VT *)(xi + p * BS) - mu) * inv;
            const VT z = g * xh + b, d = *(const VT *)(di + p * BS);
            VT gr;
            ACT_GRAD(gr, a->fn, z, d);
            *(VT *)(dxi + p * BS) = k1 * (gr - c1 - xh * c2);
        }
    }
}

#undef LANES
#undef ACT
#undef ACT_GRAD
#undef SEL
#undef FN
#undef CAT
#undef CAT_
