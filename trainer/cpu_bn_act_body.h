/*
 * trainer/cpu_bn_act_body.h - the kernels of trainer/cpu_bn_act.c for one
 * layout block width, included once per width with BS (channels per block:
 * 16, 8, or 1 for plain NCHW), VT / VI (float and int GCC vectors of BS
 * lanes) and SFX (a name suffix) defined. Unit u is block u: channels
 * u*BS .. u*BS+BS-1, whose H*W positions of one image lie together (BS
 * floats each), so consecutive units of one image are one stretch of
 * memory. Not a header of its own: only cpu_bn_act.c includes it. The
 * maths and the memory order are described there.
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

/* *(VT *)ptr = v, or with nt set by non-temporal (streaming) stores of 4
 * floats at a time, which write the line without first reading it (ptr
 * 16-byte aligned; only for BS a multiple of 4, and only where SSE is). */
#if defined(NAS__BN_STREAM) && BS % 4 == 0
#define STORE(ptr, v, nt)                                                        \
    do {                                                                         \
        const VT v_ = (v);                                                       \
        if (nt) {                                                                \
            for (int q_ = 0; q_ < BS; q_ += 4)                                   \
                _mm_stream_ps((ptr) + q_, _mm_loadu_ps((const float *)&v_ + q_)); \
        } else {                                                                 \
            *(VT *)(ptr) = v_;                                                   \
        }                                                                        \
    } while (0)
#else
#define STORE(ptr, v, nt) (*(VT *)(ptr) = (v))
#endif

/* The BS channels of unit u as vectors, from a plain per-channel array. */
#define LANES(arr, u) (*(const VT *)((arr) + (size_t)(u) * BS))

/* Forward of units u0 .. u1-1 (consecutive blocks: one stretch of memory
 * per image). Their statistics: shifted sums per image over positions in
 * memory order, in a float vector kept per image (a->p1, a->p2), images
 * last to first (one read of x); then added into a double per channel
 * (a->s1, a->s2) in image order (sum_partials); then y = fn(gamma * xhat +
 * beta), images first to last (one read of x, one write of y); with pool
 * (a->pool set) also each image's mean of y over its H*W positions, summed
 * as cpu_gap_fwd sums (lane-wise, position by position, times 1 / (H*W)).
 * Inlined with fn and pool constant (FN(fwd_block)). */
static inline __attribute__((always_inline)) void FN(fwd_units)(const bn_act_args *a, int u0,
                                                                int u1, int fn, int pool)
{
    const size_t hw = a->hw, is = (size_t)a->c * hw, us = hw * BS;
    double *s1 = a->s1, *s2 = a->s2;
    for (int i = a->n - 1; i >= 0; i--) { /* last image first: see "Memory order" */
        const float *xu = a->x + (size_t)i * is + (size_t)u0 * us;
        for (int u = u0; u < u1; u++, xu += us) {
            const VT k = *(const VT *)(a->x + (size_t)u * us); /* the shift: first values */
            VT a1 = {0}, a2 = {0};
            for (size_t p = 0; p < hw; p++) {
                const VT d = *(const VT *)(xu + p * BS) - k;
                a1 += d;
                a2 += d * d;
            }
            *(VT *)(a->p1 + (size_t)i * a->c + (size_t)u * BS) = a1;
            *(VT *)(a->p2 + (size_t)i * a->c + (size_t)u * BS) = a2;
        }
    }
    sum_partials(a, u0 * BS, u1 * BS);
    for (int u = u0; u < u1; u++) {
        /* k again: read before the pass below writes y, which may be x */
        const VT k = *(const VT *)(a->x + (size_t)u * us);
        for (int l = 0; l < BS; l++)
            bn_act_channel(a, u * BS + l, (double)k[l], s1[u * BS + l], s2[u * BS + l]);
    }
    const float pinv = 1.0f / (float)hw;
    for (int i = 0; i < a->n; i++) {
        const size_t off = (size_t)i * is + (size_t)u0 * us;
        const float *xu = a->x + off;
        float *yu = a->y + off;
        for (int u = u0; u < u1; u++, xu += us, yu += us) {
            const VT mu = LANES(a->smean, u), inv = LANES(a->sinvstd, u),
                     g = LANES(a->gamma, u), b = LANES(a->beta, u);
            VT acc = {0};
            for (size_t p = 0; p < hw; p++) {
                const VT xh = (*(const VT *)(xu + p * BS) - mu) * inv;
                const VT z = g * xh + b;
                VT out;
                ACT(out, fn, z);
                STORE(yu + p * BS, out, a->nt);
                if (pool)
                    acc += out;
            }
            if (pool)
                *(VT *)(a->pool + (size_t)i * a->c + (size_t)u * BS) = acc * pinv;
        }
    }
}

/* Backward of units u0 .. u1-1: sums of g = dy' * fn'(z) and g * xhat
 * (one read of x and dy, images last to first; per image in a float
 * vector, then in a double per channel in image order, as the forward's),
 * then dx (a second read of both, images first to last, one write of
 * dx). z is recomputed from x exactly as the forward computed it. dy' is
 * dy, or with se (a->s set) SE's dy * s + dpool / (H*W) (GRAD_IN).
 * Inlined with fn and se constant (FN(bwd_block)), so neither the
 * identity's z nor a branch stays in the loops. */
static inline __attribute__((always_inline)) void FN(bwd_units)(const bn_act_args *a, int u0,
                                                                int u1, int fn, int se)
{
    const size_t hw = a->hw, is = (size_t)a->c * hw, us = hw * BS;
    const float pinv = 1.0f / (float)hw;
    double *s1 = a->s1, *s2 = a->s2;
    VT sv = {0}, pv = {0};
    for (int i = a->n - 1; i >= 0; i--) { /* last image first: see "Memory order" */
        const size_t off = (size_t)i * is + (size_t)u0 * us;
        const float *xu = a->x + off, *du = a->dy + off;
        for (int u = u0; u < u1; u++, xu += us, du += us) {
            const VT mu = LANES(a->smean, u), inv = LANES(a->sinvstd, u),
                     g = LANES(a->gamma, u),
                     b = a->beta ? LANES(a->beta, u) : (VT){0}; /* no beta: identity */
            if (se) {
                sv = *(const VT *)(a->s + (size_t)i * a->c + (size_t)u * BS);
                pv = *(const VT *)(a->dpool + (size_t)i * a->c + (size_t)u * BS) * pinv;
            }
            VT a1 = {0}, a2 = {0};
            for (size_t p = 0; p < hw; p++) {
                const VT xh = (*(const VT *)(xu + p * BS) - mu) * inv;
                const VT z = g * xh + b, d = GRAD_IN(du + p * BS, se, sv, pv);
                VT gr;
                ACT_GRAD(gr, fn, z, d);
                a1 += gr;
                a2 += gr * xh;
            }
            *(VT *)(a->p1 + (size_t)i * a->c + (size_t)u * BS) = a1;
            *(VT *)(a->p2 + (size_t)i * a->c + (size_t)u * BS) = a2;
        }
    }
    sum_partials(a, u0 * BS, u1 * BS);
    const double m = (double)a->n * (double)hw;
    for (int ch = u0 * BS; ch < u1 * BS; ch++) {
        a->dbeta[ch] = (float)s1[ch];
        a->dgamma[ch] = (float)s2[ch];
        /* image 0's partials are summed: p1, p2 [0, C) now hold the float
         * means dbeta / m and dgamma / m (this thread's channels only) */
        a->p1[ch] = (float)(s1[ch] / m);
        a->p2[ch] = (float)(s2[ch] / m);
    }
    for (int i = 0; i < a->n; i++) {
        const size_t off = (size_t)i * is + (size_t)u0 * us;
        const float *xu = a->x + off, *du = a->dy + off;
        float *dxu = a->dx + off;
        for (int u = u0; u < u1; u++, xu += us, du += us, dxu += us) {
            const VT mu = LANES(a->smean, u), inv = LANES(a->sinvstd, u),
                     g = LANES(a->gamma, u), b = a->beta ? LANES(a->beta, u) : (VT){0};
            const VT c1 = LANES(a->p1, u), c2 = LANES(a->p2, u), k1 = g * inv;
            if (se) {
                sv = *(const VT *)(a->s + (size_t)i * a->c + (size_t)u * BS);
                pv = *(const VT *)(a->dpool + (size_t)i * a->c + (size_t)u * BS) * pinv;
            }
            for (size_t p = 0; p < hw; p++) {
                const VT xh = (*(const VT *)(xu + p * BS) - mu) * inv;
                const VT z = g * xh + b, d = GRAD_IN(du + p * BS, se, sv, pv);
                VT gr;
                ACT_GRAD(gr, fn, z, d);
                STORE(dxu + p * BS, k1 * (gr - c1 - xh * c2), a->nt);
            }
        }
    }
}

/* The kernels above with fn and the SE / pool flag as constants. */
#define FN_CASE(f, units, flag)                                                  \
    case f:                                                                      \
        if (flag)                                                                \
            units(a, u0, u1, f, 1);                                              \
        else                                                                     \
            units(a, u0, u1, f, 0);                                              \
        break;

BN_CLONES static void FN(fwd_block)(const bn_act_args *a, int u0, int u1)
{
    switch (a->fn) {
        FN_CASE(NAS_FN_RELU, FN(fwd_units), a->pool != NULL)
        FN_CASE(NAS_FN_RELU6, FN(fwd_units), a->pool != NULL)
        FN_CASE(NAS_FN_HSWISH, FN(fwd_units), a->pool != NULL)
        FN_CASE(NAS__BN_IDENTITY, FN(fwd_units), a->pool != NULL)
    default:
        break; /* refused by bn_act_shape_ok */
    }
}

BN_CLONES static void FN(bwd_block)(const bn_act_args *a, int u0, int u1)
{
    switch (a->fn) {
        FN_CASE(NAS_FN_RELU, FN(bwd_units), a->s != NULL)
        FN_CASE(NAS_FN_RELU6, FN(bwd_units), a->s != NULL)
        FN_CASE(NAS_FN_HSWISH, FN(bwd_units), a->s != NULL)
        FN_CASE(NAS__BN_IDENTITY, FN(bwd_units), a->s != NULL)
    default:
        break;
    }
}

#undef FN_CASE
#undef LANES
#undef STORE
#undef ACT
#undef ACT_GRAD
#undef GRAD_IN
#undef SEL
#undef FN
#undef CAT
#undef CAT_
