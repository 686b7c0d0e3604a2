/*
 * trainer/cpu_bn_act_body.h - the per-channel-block kernels of
 * trainer/cpu_bn_act.c for one block width, included once per width with
 * BS (channels per block of the layout: 16, 8, or 1 for plain NCHW), VL
 * (channels per unit of work, a divisor of BS; cpu_bn_act.c uses whole
 * blocks), VT / VI (float and int GCC vectors of VL lanes) and SFX (a
 * name suffix) defined. Unit u holds channels u*VL .. u*VL+VL-1, in block
 * u*VL / BS at lane offset u*VL % BS; its elements sit BS floats apart. Not a
 * header of its own: only cpu_bn_act.c includes it. The maths and the
 * memory order are described there.
 */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(name, SFX)
/* Lane-wise select: m ? a : b (m a comparison's all-ones / zero lanes). */
#define SEL(m, a, b) ((VT)(((VI)(a) & (m)) | ((VI)(b) & ~(m))))

/* out = fn(z) lane-wise, fn NAS_FN_RELU, NAS_FN_RELU6, NAS_FN_HSWISH or
 * NAS__BN_IDENTITY, PyTorch's formulas as in kernel_math.h's nas__act
 * (macros: a function taking or returning a vector would change the ABI
 * between target clones). */
#define ACT(out, fn, z)                                                          \
    do {                                                                         \
        if ((fn) == NAS_FN_RELU6) {                                              \
            const VT r_ = SEL((z) > 6.0f, (VT){0} + 6.0f, (z));                  \
            (out) = (VT)((VI)r_ & ~((z) < 0.0f));                                \
        } else if ((fn) == NAS_FN_HSWISH) {                                      \
            const VT r_ = SEL((z) >= 3.0f, (z), (z) * ((z) + 3.0f) / 6.0f);      \
            (out) = (VT)((VI)r_ & ~((z) <= -3.0f));                              \
        } else if ((fn) == NAS_FN_RELU) {                                        \
            (out) = (VT)((VI)(z) & ((z) > 0.0f));                                \
        } else {                                                                 \
            (out) = (z);                                                         \
        }                                                                        \
    } while (0)

/* out = dy * fn'(z) lane-wise, as kernel_math.h's nas__act_grad. */
#define ACT_GRAD(out, fn, z, dy)                                                 \
    do {                                                                         \
        if ((fn) == NAS_FN_RELU6) {                                              \
            (out) = (VT)((VI)(dy) & (((z) > 0.0f) & ((z) < 6.0f)));              \
        } else if ((fn) == NAS_FN_HSWISH) {                                      \
            const VT r_ = SEL((z) > 3.0f, (dy), (dy) * ((z) / 3.0f + 0.5f));     \
            (out) = (VT)((VI)r_ & ~((z) < -3.0f));                               \
        } else if ((fn) == NAS_FN_RELU) {                                        \
            (out) = (VT)((VI)(dy) & ((z) > 0.0f));                               \
        } else {                                                                 \
            (out) = (dy);                                                        \
        }                                                                        \
    } while (0)

/* The gradient reaching y at one position (dp points at dy there): dy, or
 * with squeeze-and-excitation's terms (se: a->s set) dy * sv + pv, where
 * sv is the image's channel scales and pv = dpool * inv its pooled
 * gradient spread over the H*W positions; the same float operations, in
 * the same order, as the unfused steps (a channel-scale backward, a pool
 * backward and their sum). */
#define GRAD_IN(dp, se, sv, pv) ((se) ? *(const VT *)(dp) * (sv) + (pv) : *(const VT *)(dp))

/* The VL channels of unit u as vectors, from a plain per-channel array. */
#define LANES(arr) (*(const VT *)((arr) + (size_t)u * VL))
/* Offset of unit u's first element in an activation. */
#define UNIT_OFF(u, hw) ((size_t)((u) * VL / BS) * (hw) * BS + (size_t)((u) * VL % BS))

/* Forward of unit u: its statistics (shifted sums, one read of
 * x), then y = fn(gamma * xhat + beta) (one read of x, one write of y);
 * with pool (a->pool set) also each image's mean of y over its H*W
 * positions, summed as cpu_gap_fwd sums (lane-wise, position by position,
 * times 1 / (H*W)). Inlined with fn and pool constant (FN(fwd_block)). */
static inline __attribute__((always_inline)) void FN(fwd_unit)(const bn_act_args *a, int u,
                                                               int fn, int pool)
{
    const size_t hw = a->hw, is = (size_t)a->c * hw;
    const float *x0 = a->x + UNIT_OFF(u, hw);
    const VT k = *(const VT *)x0; /* the shift: each channel's first value */
    double s1[VL] = {0}, s2[VL] = {0};
    for (int i = 0; i < a->n; i++) {
        const float *xi = x0 + (size_t)i * is;
        VT a1 = {0}, a2 = {0};
        for (size_t p = 0; p < hw; p++) {
            const VT d = *(const VT *)(xi + p * BS) - k;
            a1 += d;
            a2 += d * d;
        }
        for (int l = 0; l < VL; l++) {
            s1[l] += (double)a1[l];
            s2[l] += (double)a2[l];
        }
    }
    for (int l = 0; l < VL; l++)
        bn_act_channel(a, u * VL + l, (double)k[l], s1[l], s2[l]);
    const VT mu = LANES(a->smean), inv = LANES(a->sinvstd), g = LANES(a->gamma),
             b = LANES(a->beta);
    const float pinv = 1.0f / (float)hw;
    float *y0 = a->y + UNIT_OFF(u, hw);
    for (int i = 0; i < a->n; i++) {
        const float *xi = x0 + (size_t)i * is;
        float *yi = y0 + (size_t)i * is;
        VT acc = {0};
        for (size_t p = 0; p < hw; p++) {
            const VT xh = (*(const VT *)(xi + p * BS) - mu) * inv;
            const VT z = g * xh + b;
            VT out;
            ACT(out, fn, z);
            *(VT *)(yi + p * BS) = out;
            if (pool)
                acc += out;
        }
        if (pool)
            *(VT *)(a->pool + (size_t)i * a->c + (size_t)u * VL) = acc * pinv;
    }
}

/* Backward of unit u: sums of g = dy' * fn'(z) and g * xhat (one
 * read of x and dy), then dx (a second read of both, one write of dx). z
 * is recomputed from x exactly as the forward computed it. dy' is dy, or
 * with se (a->s set) SE's dy * s + dpool / (H*W) (GRAD_IN). Inlined with
 * fn and se constant (FN(bwd_block)), so neither the identity's z nor a
 * branch stays in the loops. */
static inline __attribute__((always_inline)) void FN(bwd_unit)(const bn_act_args *a, int u,
                                                               int fn, int se)
{
    const size_t hw = a->hw, is = (size_t)a->c * hw, off = UNIT_OFF(u, hw);
    const float *x0 = a->x + off, *d0 = a->dy + off;
    const VT mu = LANES(a->smean), inv = LANES(a->sinvstd), g = LANES(a->gamma),
             b = a->beta ? LANES(a->beta) : (VT){0}; /* no beta: identity, z unused */
    const float pinv = 1.0f / (float)hw;
    double s1[VL] = {0}, s2[VL] = {0};
    VT sv = {0}, pv = {0};
    for (int i = 0; i < a->n; i++) {
        const float *xi = x0 + (size_t)i * is, *di = d0 + (size_t)i * is;
        if (se) {
            sv = *(const VT *)(a->s + (size_t)i * a->c + (size_t)u * VL);
            pv = *(const VT *)(a->dpool + (size_t)i * a->c + (size_t)u * VL) * pinv;
        }
        VT a1 = {0}, a2 = {0};
        for (size_t p = 0; p < hw; p++) {
            const VT xh = (*(const VT *)(xi + p * BS) - mu) * inv;
            const VT z = g * xh + b, d = GRAD_IN(di + p * BS, se, sv, pv);
            VT gr;
            ACT_GRAD(gr, fn, z, d);
            a1 += gr;
            a2 += gr * xh;
        }
        for (int l = 0; l < VL; l++) {
            s1[l] += (double)a1[l];
            s2[l] += (double)a2[l];
        }
    }
    const double m = (double)a->n * (double)hw;
    VT c1 = {0}, c2 = {0};
    for (int l = 0; l < VL; l++) {
        a->dbeta[u * VL + l] = (float)s1[l];
        a->dgamma[u * VL + l] = (float)s2[l];
        c1[l] = (float)(s1[l] / m);
        c2[l] = (float)(s2[l] / m);
    }
    const VT k1 = g * inv;
    float *dx0 = a->dx + off;
    for (int i = 0; i < a->n; i++) {
        const float *xi = x0 + (size_t)i * is, *di = d0 + (size_t)i * is;
        float *dxi = dx0 + (size_t)i * is;
        if (se) {
            sv = *(const VT *)(a->s + (size_t)i * a->c + (size_t)u * VL);
            pv = *(const VT *)(a->dpool + (size_t)i * a->c + (size_t)u * VL) * pinv;
        }
        for (size_t p = 0; p < hw; p++) {
            const VT xh = (*(const VT *)(xi + p * BS) - mu) * inv;
            const VT z = g * xh + b, d = GRAD_IN(di + p * BS, se, sv, pv);
            VT gr;
            ACT_GRAD(gr, fn, z, d);
            *(VT *)(dxi + p * BS) = k1 * (gr - c1 - xh * c2);
        }
    }
}

/* The kernels above with fn and the SE / pool flag as constants. */
#define FN_CASE(f, unit, flag)                                                   \
    case f:                                                                      \
        if (flag)                                                                \
            unit(a, u, f, 1);                                                    \
        else                                                                     \
            unit(a, u, f, 0);                                                    \
        break;

BN_CLONES static void FN(fwd_block)(const bn_act_args *a, int u)
{
    switch (a->fn) {
        FN_CASE(NAS_FN_RELU, FN(fwd_unit), a->pool != NULL)
        FN_CASE(NAS_FN_RELU6, FN(fwd_unit), a->pool != NULL)
        FN_CASE(NAS_FN_HSWISH, FN(fwd_unit), a->pool != NULL)
        FN_CASE(NAS__BN_IDENTITY, FN(fwd_unit), a->pool != NULL)
    default:
        break; /* refused by bn_act_shape_ok */
    }
}

BN_CLONES static void FN(bwd_block)(const bn_act_args *a, int u)
{
    switch (a->fn) {
        FN_CASE(NAS_FN_RELU, FN(bwd_unit), a->s != NULL)
        FN_CASE(NAS_FN_RELU6, FN(bwd_unit), a->s != NULL)
        FN_CASE(NAS_FN_HSWISH, FN(bwd_unit), a->s != NULL)
        FN_CASE(NAS__BN_IDENTITY, FN(bwd_unit), a->s != NULL)
    default:
        break;
    }
}

#undef FN_CASE
#undef LANES
#undef UNIT_OFF
#undef ACT
#undef ACT_GRAD
#undef GRAD_IN
#undef SEL
#undef FN
#undef CAT
#undef CAT_
