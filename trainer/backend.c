/*
 * trainer/backend.c - the public kernel-library API (nas/backend.h): the
 * backend registry, tensors, and one wrapper per op that checks shapes once
 * and dispatches through the device vtable (trainer/backend_impl.h), in the
 * style of ggml's ggml-backend.c and SQLite's os.c method wrappers.
 */
#include <stdio.h>   /* vsnprintf, snprintf */
#include <stdlib.h>  /* malloc, free */
#include <string.h>  /* strcmp, memcpy, memmove */
#include <cblas.h>   /* cblas_sgemm (OpenBLAS) */
#include "nas/suggest.h" /* nas_suggest_hint: "did you mean" */
#include "trainer/backend_impl.h"

/* ---- registry ----------------------------------------------------------- */

typedef int (*backend_ctor)(int threads, int device, nas_backend **out, nas_error *err);

static const struct {
    const char *name;
    backend_ctor create;
} registry[] = {
    {"ref", nas__backend_ref_create},
    {"cpu", nas__backend_cpu_create},
#ifdef NAS_HAVE_CUDA
    {"cuda", nas__backend_cuda_create},
#endif
};

static const char *const compiled_names[] = {
    "ref",
    "cpu",
#ifdef NAS_HAVE_CUDA
    "cuda",
#endif
    NULL,
};

const char *const *nas_backend_compiled(void) { return compiled_names; }

int nas_backend_create(const char *name, int threads, int device, nas_backend **out,
                       nas_error *err)
{
    if (!out)
        return nas_error_set(err, NAS_EINVAL, "nas_backend_create: out is NULL");
    *out = NULL;
    if (!name)
        return nas_error_set(err, NAS_EINVAL, "nas_backend_create: name is NULL");
    if (threads < 0)
        return nas_error_set(err, NAS_EINVAL, "backend '%s': threads must be >= 0 (got %d)",
                             name, threads);
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (strcmp(registry[i].name, name) == 0) {
            int rc = registry[i].create(threads, device, out, err);
            if (rc != NAS_OK)
                *out = NULL;
            else
                (*out)->last_error[0] = '\0';
            return rc;
        }
    char list[256] = "";
    size_t used = 0;
    for (size_t i = 0; compiled_names[i]; i++) {
        int k = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                         compiled_names[i]);
        if (k < 0 || (size_t)k >= sizeof list - used)
            break;
        used += (size_t)k;
    }
    char hint[96];
    return nas_error_set(err, NAS_ENOTFOUND, "unknown backend '%s' (compiled in: %s)%s", name,
                         list, nas_suggest_hint(name, list, hint, sizeof hint));
}

void nas_backend_destroy(nas_backend *be)
{
    if (be)
        be->ops->destroy(be);
}

const char *nas_backend_name(const nas_backend *be) { return be ? be->ops->name : "(null)"; }

int nas_backend_sync(nas_backend *be)
{
    if (!be)
        return NAS_EINVAL;
    return be->ops->sync ? be->ops->sync(be) : NAS_OK;
}

const char *nas_backend_last_error(const nas_backend *be) { return be ? be->last_error : ""; }

int nas_backend_set_precision(nas_backend *be, const char *precision)
{
    if (!be || !precision)
        return NAS_EINVAL;
    if (be->ext && be->ext->set_precision) {
        int rc = be->ext->set_precision(be, precision);
        if (rc == NAS_OK)
            snprintf(be->precision, sizeof be->precision, "%s", precision);
        return rc;
    }
    if (strcmp(precision, "fp32") == 0) {
        snprintf(be->precision, sizeof be->precision, "fp32");
        return NAS_OK;
    }
    if (strcmp(precision, "bf16") != 0 && strcmp(precision, "fp16") != 0)
        return nas__backend_fail(be, NAS_EINVAL, "unknown precision '%s' (fp32, bf16, fp16)",
                                 precision);
    return nas__backend_fail(be, NAS_EUNSUPPORTED, "precision %s: not supported by the %s backend",
                             precision, be->ops->name);
}

int nas__backend_set_convs(nas_backend *be, const nas__conv_shape *convs, int n, int train)
{
    if (!be || n < 0 || (n > 0 && !convs))
        return NAS_EINVAL;
    return be->ext && be->ext->set_convs ? be->ext->set_convs(be, convs, n, train) : NAS_OK;
}

int nas__backend_step_begin(nas_backend *be)
{
    if (!be)
        return NAS_EINVAL;
    return be->ext && be->ext->step_begin ? be->ext->step_begin(be) : NAS_OK;
}

int nas__backend_step_end(nas_backend *be, int *skipped)
{
    *skipped = 0;
    if (!be)
        return NAS_EINVAL;
    return be->ext && be->ext->step_end ? be->ext->step_end(be, skipped) : NAS_OK;
}

int nas__backend_loss_scale_get(nas_backend *be, double state[2])
{
    if (!be)
        return NAS_EINVAL;
    return be->ext && be->ext->loss_scale_get ? be->ext->loss_scale_get(be, state)
                                              : NAS_EUNSUPPORTED;
}

int nas__backend_loss_scale_set(nas_backend *be, const double state[2])
{
    if (!be)
        return NAS_EINVAL;
    return be->ext && be->ext->loss_scale_set ? be->ext->loss_scale_set(be, state)
                                              : NAS_EUNSUPPORTED;
}

const char *nas_backend_get_precision(const nas_backend *be)
{
    return be && be->precision[0] ? be->precision : "fp32";
}

/* ---- host memory (ref and cpu backends) -------------------------------- */

void nas__host_free(nas_backend *be, void *buf)
{
    free(buf);
}

int nas__host_upload(nas_backend *be, void *dst, const float *src, size_t count)
{
    memcpy(dst, src, count * sizeof(float));
    return NAS_OK;
}

int nas__host_download(nas_backend *be, float *dst, const void *src, size_t count)
{
    memcpy(dst, src, count * sizeof(float));
    return NAS_OK;
}

int nas__host_copy(nas_backend *be, void *dst, const void *src, size_t count)
{
    memmove(dst, src, count * sizeof(float));
    return NAS_OK;
}

/* ---- tensors ------------------------------------------------------------ */

int nas_tensor_create(nas_backend *be, int n, int c, int h, int w, nas_tensor **out)
{
    if (!out)
        return NAS_EINVAL;
    *out = NULL;
    if (!be)
        return NAS_EINVAL;
    if (n <= 0 || c <= 0 || h <= 0 || w <= 0)
        return nas__backend_fail(be, NAS_EINVAL, "tensor_create: bad shape [%d,%d,%d,%d]", n,
                                 c, h, w);
    size_t count = (size_t)n;
    const int dims[3] = {c, h, w};
    for (int i = 0; i < 3; i++) {
        if (count > ((size_t)-1 / sizeof(float)) / (size_t)dims[i])
            return nas__backend_fail(be, NAS_EINVAL, "tensor_create: [%d,%d,%d,%d] overflows",
                                     n, c, h, w);
        count *= (size_t)dims[i];
    }
    nas_tensor *t = malloc(sizeof *t);
    if (!t)
        return NAS_ENOMEM;
    t->n = n;
    t->c = c;
    t->h = h;
    t->w = w;
    t->count = count;
    t->be = be;
    t->buf = NULL;
    t->layout = 0;
    int rc = be->ops->alloc(be, count * sizeof(float), &t->buf);
    if (rc != NAS_OK) {
        free(t);
        return rc;
    }
    *out = t;
    return NAS_OK;
}

void nas_tensor_destroy(nas_tensor *t)
{
    if (!t)
        return;
    t->be->ops->free(t->be, t->buf);
    free(t);
}

int nas_tensor_upload(nas_tensor *t, const float *host, size_t count)
{
    if (!t || (!host && count))
        return NAS_EINVAL;
    if (count != t->count)
        return nas__backend_fail(t->be, NAS_EINVAL, "tensor_upload: %zu floats into [%d,%d,%d,%d]",
                                 count, t->n, t->c, t->h, t->w);
    int rc = t->be->ops->upload(t->be, t->buf, host, count);
    if (rc == NAS_OK)
        t->layout = 0; /* uploads are plain NCHW */
    return rc;
}

int nas_tensor_download(const nas_tensor *t, float *host, size_t count)
{
    if (!t || (!host && count))
        return NAS_EINVAL;
    if (count != t->count)
        return nas__backend_fail(t->be, NAS_EINVAL,
                                 "tensor_download: %zu floats from [%d,%d,%d,%d]", count, t->n,
                                 t->c, t->h, t->w);
    if (t->be->ext && t->be->ext->download_tensor)
        return t->be->ext->download_tensor(t->be, t, host, count);
    return t->be->ops->download(t->be, host, t->buf, count);
}

int nas_tensor_zero(nas_tensor *t)
{
    if (!t)
        return NAS_EINVAL;
    return t->be->ops->zero(t->be, t->buf, t->count);
}

int nas_tensor_copy(nas_tensor *dst, const nas_tensor *src)
{
    if (!dst || !src || dst->be != src->be)
        return NAS_EINVAL;
    if (dst->count != src->count)
        return nas__backend_fail(dst->be, NAS_EINVAL, "tensor_copy: %zu elements into %zu",
                                 src->count, dst->count);
    if (dst == src)
        return NAS_OK;
    if (dst->be->ext && dst->be->ext->copy_tensor)
        return dst->be->ext->copy_tensor(dst->be, dst, src);
    int rc = dst->be->ops->copy(dst->be, dst->buf, src->buf, src->count);
    if (rc == NAS_OK)
        dst->layout = src->layout;
    return rc;
}

/* ---- shape checks --------------------------------------------------------- */

/* Tensors passed to an op must exist and belong to `be`. */
static int owned(const nas_backend *be, const nas_tensor *t) { return t && t->be == be; }

static int shape_is(const nas_tensor *t, int n, int c, int h, int w)
{
    return t->n == n && t->c == c && t->h == h && t->w == w;
}

/* Output extent of a window op, or 0 when the parameters make no output. */
static int out_extent(int in, int k, int stride, int pad)
{
    if (k <= 0 || stride <= 0 || pad < 0 || in + 2 * pad < k)
        return 0;
    return (in + 2 * pad - k) / stride + 1;
}

#define SHP(t) (t)->n, (t)->c, (t)->h, (t)->w
#define SHPF "[%d,%d,%d,%d]"

#define DISPATCH(be, slot, ...)                                                         \
    do {                                                                                \
        if (!(be)->ops->slot)                                                           \
            return nas__backend_fail((be), NAS_EUNSUPPORTED, "%s: not supported by %s", \
                                     #slot, (be)->ops->name);                           \
        (be)->last_error[0] = '\0';                                                     \
        return (be)->ops->slot((be), __VA_ARGS__);                                      \
    } while (0)

/* Conv shapes: x[N,C,H,W], w[K,C,R,R], y[N,K,Ho,Wo]. */
static int conv_check(nas_backend *be, const char *op, const nas_tensor *x, const nas_tensor *w,
                      const nas_tensor *y, int stride, int pad)
{
    if (!be || !owned(be, x) || !owned(be, w) || !owned(be, y))
        return be ? nas__backend_fail(be, NAS_EINVAL, "%s: NULL or foreign tensor", op)
                  : NAS_EINVAL;
    int r = w->h;
    int ho = out_extent(x->h, r, stride, pad), wo = out_extent(x->w, r, stride, pad);
    if (w->w != r || w->c != x->c || ho == 0 || wo == 0 ||
        !shape_is(y, x->n, w->n, ho, wo))
        return nas__backend_fail(be, NAS_EINVAL,
                                 "%s: inconsistent shapes x" SHPF " w" SHPF " y" SHPF
                                 " stride %d pad %d",
                                 op, SHP(x), SHP(w), SHP(y), stride, pad);
    return NAS_OK;
}

int nas_conv2d_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w, nas_tensor *y,
                   int stride, int pad)
{
    int rc = conv_check(be, "conv2d_fwd", x, w, y, stride, pad);
    if (rc)
        return rc;
    DISPATCH(be, conv2d_fwd, x, w, y, stride, pad);
}

static int gconv_check(nas_backend *be, const char *op, const nas_tensor *x, const nas_tensor *w,
                       const nas_tensor *y, int stride, int pad, int groups);

int nas_conv2d_fwd_bias(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                        const nas_tensor *b, nas_tensor *y, int stride, int pad, int accumulate)
{
    return nas_conv2d_fwd_fused(be, x, w, b, y, stride, pad, 1, -1, accumulate);
}

/* The checks every inference convolution with a bias shares: the
 * (grouped) convolution's shapes, then a bias of one value per output
 * channel on this backend. */
static int bias_conv_check(nas_backend *be, const char *op, const nas_tensor *x,
                           const nas_tensor *w, const nas_tensor *b, const nas_tensor *y,
                           int stride, int pad, int groups)
{
    int rc = groups == 1 ? conv_check(be, op, x, w, y, stride, pad)
                         : gconv_check(be, op, x, w, y, stride, pad, groups);
    if (rc)
        return rc;
    if (!owned(be, b))
        return nas__backend_fail(be, NAS_EINVAL, "%s: no bias on this backend", op);
    if (b->count != (size_t)w->n)
        return nas__backend_fail(be, NAS_EINVAL,
                                 "%s: bias" SHPF " does not match %d output channels", op, SHP(b),
                                 w->n);
    return NAS_OK;
}

int nas_conv2d_fwd_fused(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                         const nas_tensor *b, nas_tensor *y, int stride, int pad, int groups,
                         int act, int accumulate)
{
    int rc = bias_conv_check(be, "conv2d_fwd_fused", x, w, b, y, stride, pad, groups);
    if (rc)
        return rc;
    if (act < -1 || act > NAS_FN_SIGMOID)
        return nas__backend_fail(be, NAS_EINVAL, "conv2d_fwd_fused: activation %d out of range",
                                 act);
    if (act >= 0 && accumulate)
        return nas__backend_fail(be, NAS_EINVAL,
                                 "conv2d_fwd_fused: an activation post-op with accumulate");
    if (!be->ext || !be->ext->conv2d_fwd_fused)
        return nas__backend_fail(be, NAS_EUNSUPPORTED, "conv2d_fwd_fused: not on backend %s",
                                 be->ops->name);
    be->last_error[0] = '\0';
    return be->ext->conv2d_fwd_fused(be, x, w, b, y, stride, pad, groups, act, accumulate);
}

int nas_conv2d_fwd_fused_add(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                             const nas_tensor *b, const nas_tensor *r, nas_tensor *y, int stride,
                             int pad, int groups)
{
    int rc = bias_conv_check(be, "conv2d_fwd_fused_add", x, w, b, y, stride, pad, groups);
    if (rc)
        return rc;
    if (!owned(be, r))
        return nas__backend_fail(be, NAS_EINVAL,
                                 "conv2d_fwd_fused_add: no residual on this backend");
    if (r == y || r->buf == y->buf || r->n != y->n || r->c != y->c || r->h != y->h ||
        r->w != y->w)
        return nas__backend_fail(be, NAS_EINVAL,
                                 "conv2d_fwd_fused_add: residual" SHPF " must be a tensor apart "
                                 "from y" SHPF " with its shape", SHP(r), SHP(y));
    if (!be->ext || !be->ext->conv2d_fwd_add)
        return nas__backend_fail(be, NAS_EUNSUPPORTED, "conv2d_fwd_fused_add: not on backend %s",
                                 be->ops->name);
    be->last_error[0] = '\0';
    return be->ext->conv2d_fwd_add(be, x, w, b, r, y, stride, pad, groups);
}

int nas_conv2d_bwd_data(nas_backend *be, const nas_tensor *dy, const nas_tensor *w,
                        nas_tensor *dx, int stride, int pad)
{
    int rc = conv_check(be, "conv2d_bwd_data", dx, w, dy, stride, pad);
    if (rc)
        return rc;
    DISPATCH(be, conv2d_bwd_data, dy, w, dx, stride, pad);
}

int nas_conv2d_bwd_filter(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                          nas_tensor *dw, int stride, int pad)
{
    int rc = conv_check(be, "conv2d_bwd_filter", x, dw, dy, stride, pad);
    if (rc)
        return rc;
    DISPATCH(be, conv2d_bwd_filter, x, dy, dw, stride, pad);
}

/* Per-channel parameter vectors: count C (normally [1,C,1,1]). */
static int chan_ok(const nas_backend *be, const nas_tensor *p, int c)
{
    return owned(be, p) && p->count == (size_t)c;
}

int nas_batchnorm_fwd_train(nas_backend *be, const nas_tensor *x, const nas_tensor *gamma,
                            const nas_tensor *beta, nas_tensor *y, nas_tensor *save_mean,
                            nas_tensor *save_invstd, nas_tensor *running_mean,
                            nas_tensor *running_var, float momentum, float eps)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, y) || !shape_is(y, SHP(x)) || !chan_ok(be, gamma, x->c) ||
        !chan_ok(be, beta, x->c) || !chan_ok(be, save_mean, x->c) ||
        !chan_ok(be, save_invstd, x->c) || !chan_ok(be, running_mean, x->c) ||
        !chan_ok(be, running_var, x->c) || !(eps > 0.0f) || !(momentum >= 0.0f) ||
        !(momentum <= 1.0f))
        return nas__backend_fail(be, NAS_EINVAL,
                                 "batchnorm_fwd_train: bad arguments (x and y must match, every "
                                 "per-channel tensor must hold C elements, eps > 0, momentum in "
                                 "[0,1]; eps %g momentum %g)",
                                 (double)eps, (double)momentum);
    DISPATCH(be, batchnorm_fwd_train, x, gamma, beta, y, save_mean, save_invstd, running_mean,
             running_var, momentum, eps);
}

int nas_batchnorm_fwd_infer(nas_backend *be, const nas_tensor *x, const nas_tensor *gamma,
                            const nas_tensor *beta, const nas_tensor *running_mean,
                            const nas_tensor *running_var, nas_tensor *y, float eps)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, y) || !shape_is(y, SHP(x)) || !chan_ok(be, gamma, x->c) ||
        !chan_ok(be, beta, x->c) || !chan_ok(be, running_mean, x->c) ||
        !chan_ok(be, running_var, x->c) || !(eps > 0.0f))
        return nas__backend_fail(be, NAS_EINVAL,
                                 "batchnorm_fwd_infer: bad arguments (x and y must match, every "
                                 "per-channel tensor must hold C elements, eps > 0)");
    DISPATCH(be, batchnorm_fwd_infer, x, gamma, beta, running_mean, running_var, y, eps);
}

int nas_batchnorm_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                      const nas_tensor *gamma, const nas_tensor *save_mean,
                      const nas_tensor *save_invstd, nas_tensor *dx, nas_tensor *dgamma,
                      nas_tensor *dbeta)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, dy) || !owned(be, dx) || !shape_is(dy, SHP(x)) ||
        !shape_is(dx, SHP(x)) || !chan_ok(be, gamma, x->c) || !chan_ok(be, save_mean, x->c) ||
        !chan_ok(be, save_invstd, x->c) || !chan_ok(be, dgamma, x->c) ||
        !chan_ok(be, dbeta, x->c))
        return nas__backend_fail(be, NAS_EINVAL,
                                 "batchnorm_bwd: bad arguments (x, dy, dx must match; every "
                                 "per-channel tensor must hold C elements)");
    DISPATCH(be, batchnorm_bwd, x, dy, gamma, save_mean, save_invstd, dx, dgamma, dbeta);
}

/* Issue 34: the backend's fused kernel, else BN into ws and fn(ws) into y. */
int nas_batchnorm_act_fwd_train(nas_backend *be, int fn, const nas_tensor *x,
                                const nas_tensor *gamma, const nas_tensor *beta, nas_tensor *y,
                                nas_tensor *ws, nas_tensor *save_mean, nas_tensor *save_invstd,
                                nas_tensor *running_mean, nas_tensor *running_var,
                                float momentum, float eps)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, ws) || !shape_is(ws, SHP(x)) || fn < 0 ||
        fn > NAS_FN_SIGMOID)
        return nas__backend_fail(be, NAS_EINVAL,
                                 "batchnorm_act_fwd_train: bad workspace (must match x) or "
                                 "function %d",
                                 fn);
    if (be->ext && be->ext->bn_act_fwd_train && owned(be, x) && owned(be, y) &&
        shape_is(y, SHP(x)) && chan_ok(be, gamma, x->c)) {
        be->last_error[0] = '\0';
        int rc = be->ext->bn_act_fwd_train(be, fn, x, gamma, beta, y, ws, save_mean, save_invstd,
                                           running_mean, running_var, momentum, eps);
        if (rc != NAS_EUNSUPPORTED)
            return rc;
    }
    int rc = nas_batchnorm_fwd_train(be, x, gamma, beta, ws, save_mean, save_invstd, running_mean,
                                     running_var, momentum, eps);
    return rc ? rc : nas_act_fwd(be, fn, ws, y);
}

/* The fused kernel's backward, else fn's backward in place in ws, then BN's. */
int nas_batchnorm_act_bwd(nas_backend *be, int fn, const nas_tensor *x, nas_tensor *ws,
                          const nas_tensor *dy, const nas_tensor *gamma,
                          const nas_tensor *save_mean, const nas_tensor *save_invstd,
                          nas_tensor *dx, nas_tensor *dgamma, nas_tensor *dbeta)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, ws) || !shape_is(ws, SHP(x)) || fn < 0 || fn > NAS_FN_SIGMOID)
        return nas__backend_fail(be, NAS_EINVAL,
                                 "batchnorm_act_bwd: bad workspace (must match x) or function %d",
                                 fn);
    if (be->ext && be->ext->bn_act_bwd && owned(be, dy) && owned(be, dx) &&
        shape_is(dy, SHP(x)) && shape_is(dx, SHP(x)) && chan_ok(be, gamma, x->c)) {
        be->last_error[0] = '\0';
        int rc = be->ext->bn_act_bwd(be, fn, x, ws, dy, gamma, save_mean, save_invstd, dx, dgamma,
                                     dbeta);
        if (rc != NAS_EUNSUPPORTED)
            return rc;
    }
    int rc = nas_act_bwd(be, fn, ws, dy, ws);
    return rc ? rc : nas_batchnorm_bwd(be, x, ws, gamma, save_mean, save_invstd, dx, dgamma, dbeta);
}

/* 1 when t is a [N,C,1,1]-sized per-image, per-channel tensor of x's. */
static int per_image_ok(const nas_backend *be, const nas_tensor *t, const nas_tensor *x)
{
    return owned(be, t) && t->n == x->n && t->count == (size_t)x->n * x->c;
}

/* Issue 34: the backend's fused kernel with SE's pool, or NAS_EUNSUPPORTED. */
int nas_batchnorm_act_se_fwd_train(nas_backend *be, int fn, const nas_tensor *x,
                                   const nas_tensor *gamma, const nas_tensor *beta, nas_tensor *y,
                                   nas_tensor *ws, nas_tensor *pool, nas_tensor *save_mean,
                                   nas_tensor *save_invstd, nas_tensor *running_mean,
                                   nas_tensor *running_var, float momentum, float eps)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, y) || !shape_is(y, SHP(x)) || !owned(be, ws) ||
        !shape_is(ws, SHP(x)) || !per_image_ok(be, pool, x) || !chan_ok(be, gamma, x->c) ||
        !chan_ok(be, beta, x->c) || !chan_ok(be, save_mean, x->c) ||
        !chan_ok(be, save_invstd, x->c) || !chan_ok(be, running_mean, x->c) ||
        !chan_ok(be, running_var, x->c) || !(eps > 0.0f) || !(momentum >= 0.0f) ||
        !(momentum <= 1.0f) || fn < 0 || fn > NAS_FN_SIGMOID)
        return nas__backend_fail(be, NAS_EINVAL,
                                 "batchnorm_act_se_fwd_train: bad arguments (x, y, ws must match; "
                                 "pool must hold N*C elements, every per-channel tensor C; eps > "
                                 "0, momentum in [0,1]; fn %d eps %g momentum %g)",
                                 fn, (double)eps, (double)momentum);
    if (!be->ext || !be->ext->bn_act_se_fwd_train)
        return NAS_EUNSUPPORTED;
    be->last_error[0] = '\0';
    return be->ext->bn_act_se_fwd_train(be, fn, x, gamma, beta, y, ws, pool, save_mean,
                                        save_invstd, running_mean, running_var, momentum, eps);
}

/* Issue 34: the fused kernel's backward from SE's gradients, or NAS_EUNSUPPORTED. */
int nas_batchnorm_act_se_bwd(nas_backend *be, int fn, const nas_tensor *x, nas_tensor *ws,
                             const nas_tensor *dy, const nas_tensor *s, const nas_tensor *dpool,
                             const nas_tensor *gamma, const nas_tensor *save_mean,
                             const nas_tensor *save_invstd, nas_tensor *dx, nas_tensor *dgamma,
                             nas_tensor *dbeta)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, ws) || !shape_is(ws, SHP(x)) || !owned(be, dy) ||
        !shape_is(dy, SHP(x)) || !owned(be, dx) || !shape_is(dx, SHP(x)) ||
        !per_image_ok(be, s, x) || !per_image_ok(be, dpool, x) || !chan_ok(be, gamma, x->c) ||
        !chan_ok(be, save_mean, x->c) || !chan_ok(be, save_invstd, x->c) ||
        !chan_ok(be, dgamma, x->c) || !chan_ok(be, dbeta, x->c) || fn < 0 || fn > NAS_FN_SIGMOID)
        return nas__backend_fail(be, NAS_EINVAL,
                                 "batchnorm_act_se_bwd: bad arguments (x, ws, dy, dx must match; "
                                 "s and dpool must hold N*C elements, every per-channel tensor "
                                 "C; fn %d)",
                                 fn);
    if (!be->ext || !be->ext->bn_act_se_bwd)
        return NAS_EUNSUPPORTED;
    be->last_error[0] = '\0';
    return be->ext->bn_act_se_bwd(be, fn, x, ws, dy, s, dpool, gamma, save_mean, save_invstd, dx,
                                  dgamma, dbeta);
}

int nas_relu_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, y) || x->count != y->count)
        return nas__backend_fail(be, NAS_EINVAL, "relu_fwd: x and y must have equal counts");
    DISPATCH(be, relu_fwd, x, y);
}

int nas_relu_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *dy, nas_tensor *dx)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, dy) || !owned(be, dx) || x->count != dy->count ||
        x->count != dx->count)
        return nas__backend_fail(be, NAS_EINVAL,
                                 "relu_bwd: x, dy and dx must have equal counts");
    DISPATCH(be, relu_bwd, x, dy, dx);
}

/* Pool shapes: x[N,C,H,W], y[N,C,Ho,Wo]; pad <= k/2 so no window lies
 * wholly in the padding (PyTorch's rule). */
static int pool_check(nas_backend *be, const char *op, const nas_tensor *x,
                      const nas_tensor *y, int k, int stride, int pad)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, y))
        return nas__backend_fail(be, NAS_EINVAL, "%s: NULL or foreign tensor", op);
    int ho = out_extent(x->h, k, stride, pad), wo = out_extent(x->w, k, stride, pad);
    if (ho == 0 || wo == 0 || 2 * pad > k || !shape_is(y, x->n, x->c, ho, wo))
        return nas__backend_fail(be, NAS_EINVAL,
                                 "%s: inconsistent shapes x" SHPF " y" SHPF
                                 " k %d stride %d pad %d",
                                 op, SHP(x), SHP(y), k, stride, pad);
    return NAS_OK;
}

int nas_avgpool_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y, int k, int stride,
                    int pad)
{
    int rc = pool_check(be, "avgpool_fwd", x, y, k, stride, pad);
    if (rc)
        return rc;
    DISPATCH(be, avgpool_fwd, x, y, k, stride, pad);
}

int nas_avgpool_bwd(nas_backend *be, const nas_tensor *dy, nas_tensor *dx, int k, int stride,
                    int pad)
{
    int rc = pool_check(be, "avgpool_bwd", dx, dy, k, stride, pad);
    if (rc)
        return rc;
    DISPATCH(be, avgpool_bwd, dy, dx, k, stride, pad);
}

int nas_gap_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, y) || !shape_is(y, x->n, x->c, 1, 1))
        return nas__backend_fail(be, NAS_EINVAL, "gap_fwd: y must be [N,C,1,1] for x[N,C,H,W]");
    DISPATCH(be, gap_fwd, x, y);
}

int nas_gap_bwd(nas_backend *be, const nas_tensor *dy, nas_tensor *dx)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, dy) || !owned(be, dx) || !shape_is(dy, dx->n, dx->c, 1, 1))
        return nas__backend_fail(be, NAS_EINVAL,
                                 "gap_bwd: dy must be [N,C,1,1] for dx[N,C,H,W]");
    DISPATCH(be, gap_bwd, dy, dx);
}

/* Linear shapes: x[N,K(,1,1)], w[M,K], b[M], y[N,M]. */
static int linear_check(nas_backend *be, const char *op, const nas_tensor *x,
                        const nas_tensor *w, const nas_tensor *y)
{
    size_t k = x->count / (size_t)x->n;
    size_t m = (size_t)w->n;
    if (w->count != m * k || y->n != x->n || y->count != (size_t)x->n * m)
        return nas__backend_fail(be, NAS_EINVAL,
                                 "%s: inconsistent shapes x" SHPF " w" SHPF " y" SHPF, op,
                                 SHP(x), SHP(w), SHP(y));
    return NAS_OK;
}

int nas_linear_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                   const nas_tensor *b, nas_tensor *y)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, w) || !owned(be, b) || !owned(be, y))
        return nas__backend_fail(be, NAS_EINVAL, "linear_fwd: NULL or foreign tensor");
    int rc = linear_check(be, "linear_fwd", x, w, y);
    if (rc)
        return rc;
    if (b->count != (size_t)w->n)
        return nas__backend_fail(be, NAS_EINVAL, "linear_fwd: b has %zu elements, want %d",
                                 b->count, w->n);
    DISPATCH(be, linear_fwd, x, w, b, y);
}

int nas_linear_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                   const nas_tensor *dy, nas_tensor *dx, nas_tensor *dw, nas_tensor *db)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, w) || !owned(be, dy) || !owned(be, dw) || !owned(be, db) ||
        (dx && !owned(be, dx)))
        return nas__backend_fail(be, NAS_EINVAL, "linear_bwd: NULL or foreign tensor");
    int rc = linear_check(be, "linear_bwd", x, w, dy);
    if (rc)
        return rc;
    if ((dx && dx->count != x->count) || dw->count != w->count || db->count != (size_t)w->n)
        return nas__backend_fail(be, NAS_EINVAL,
                                 "linear_bwd: dx/dw/db counts must match x/w/[M]");
    DISPATCH(be, linear_bwd, x, w, dy, dx, dw, db);
}

int nas_axpy(nas_backend *be, float alpha, const nas_tensor *x, nas_tensor *y)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, y) || x->count != y->count)
        return nas__backend_fail(be, NAS_EINVAL, "axpy: x and y must have equal counts");
    DISPATCH(be, axpy, alpha, x, y);
}

int nas_scale(nas_backend *be, float alpha, const nas_tensor *x, nas_tensor *y)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, y) || x->count != y->count)
        return nas__backend_fail(be, NAS_EINVAL, "scale: x and y must have equal counts");
    DISPATCH(be, scale, alpha, x, y);
}

int nas_softmax_xent(nas_backend *be, const nas_tensor *logits, const nas_tensor *labels,
                     nas_tensor *dlogits, float *loss, int *correct)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, logits) || !owned(be, labels) || (dlogits && !owned(be, dlogits)) || !loss ||
        !correct || labels->count != (size_t)logits->n ||
        (dlogits && dlogits->count != logits->count))
        return nas__backend_fail(be, NAS_EINVAL,
                                 "softmax_xent: want logits[N,K], labels[N], dlogits[N,K] or "
                                 "NULL, loss and correct non-NULL");
    DISPATCH(be, softmax_xent, logits, labels, dlogits, loss, correct);
}

int nas_sgd_step(nas_backend *be, nas_tensor *w, const nas_tensor *dw, nas_tensor *v, float lr,
                 float momentum, float wd, int nesterov)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, w) || !owned(be, dw) || !owned(be, v) || w->count != dw->count ||
        w->count != v->count)
        return nas__backend_fail(be, NAS_EINVAL, "sgd_step: w, dw and v must have equal counts");
    DISPATCH(be, sgd_step, w, dw, v, lr, momentum, wd, nesterov);
}

int nas_sumsq(nas_backend *be, const nas_tensor *x, double *out)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !out)
        return nas__backend_fail(be, NAS_EINVAL, "sumsq: NULL or foreign argument");
    DISPATCH(be, sumsq, x, out);
}

/* ---- chain-network ops (issue 15) ------------------------------------------- */

/* Grouped conv shapes: x[N,C,H,W], w[K,C/g,R,R], y[N,K,Ho,Wo], g | C, g | K. */
static int gconv_check(nas_backend *be, const char *op, const nas_tensor *x, const nas_tensor *w,
                       const nas_tensor *y, int stride, int pad, int groups)
{
    if (!be || !owned(be, x) || !owned(be, w) || !owned(be, y))
        return be ? nas__backend_fail(be, NAS_EINVAL, "%s: NULL or foreign tensor", op)
                  : NAS_EINVAL;
    int r = w->h;
    int ho = out_extent(x->h, r, stride, pad), wo = out_extent(x->w, r, stride, pad);
    if (groups <= 0 || x->c % groups || w->n % groups || w->w != r ||
        w->c * groups != x->c || ho == 0 || wo == 0 || !shape_is(y, x->n, w->n, ho, wo))
        return nas__backend_fail(be, NAS_EINVAL,
                                 "%s: inconsistent shapes x" SHPF " w" SHPF " y" SHPF
                                 " stride %d pad %d groups %d",
                                 op, SHP(x), SHP(w), SHP(y), stride, pad, groups);
    return NAS_OK;
}

int nas_gconv2d_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w, nas_tensor *y,
                    int stride, int pad, int groups)
{
    int rc = gconv_check(be, "gconv2d_fwd", x, w, y, stride, pad, groups);
    if (rc)
        return rc;
    DISPATCH(be, gconv2d_fwd, x, w, y, stride, pad, groups);
}

int nas_gconv2d_bwd_data(nas_backend *be, const nas_tensor *dy, const nas_tensor *w,
                         nas_tensor *dx, int stride, int pad, int groups)
{
    int rc = gconv_check(be, "gconv2d_bwd_data", dx, w, dy, stride, pad, groups);
    if (rc)
        return rc;
    DISPATCH(be, gconv2d_bwd_data, dy, w, dx, stride, pad, groups);
}

int nas_gconv2d_bwd_filter(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                           nas_tensor *dw, int stride, int pad, int groups)
{
    int rc = gconv_check(be, "gconv2d_bwd_filter", x, dw, dy, stride, pad, groups);
    if (rc)
        return rc;
    DISPATCH(be, gconv2d_bwd_filter, x, dy, dw, stride, pad, groups);
}

int nas_act_fwd(nas_backend *be, int fn, const nas_tensor *x, nas_tensor *y)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, y) || x->count != y->count || fn < 0 || fn > NAS_FN_SIGMOID)
        return nas__backend_fail(be, NAS_EINVAL, "act_fwd: bad tensors or function %d", fn);
    DISPATCH(be, act_fwd, fn, x, y);
}

int nas_act_bwd(nas_backend *be, int fn, const nas_tensor *x, const nas_tensor *dy,
                nas_tensor *dx)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, dy) || !owned(be, dx) || x->count != dy->count ||
        x->count != dx->count || fn < 0 || fn > NAS_FN_SIGMOID)
        return nas__backend_fail(be, NAS_EINVAL, "act_bwd: bad tensors or function %d", fn);
    DISPATCH(be, act_bwd, fn, x, dy, dx);
}

int nas_chscale_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *s, nas_tensor *y)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, s) || !owned(be, y) || !shape_is(s, x->n, x->c, 1, 1) ||
        !shape_is(y, x->n, x->c, x->h, x->w))
        return nas__backend_fail(be, NAS_EINVAL,
                                 "chscale_fwd: want x[N,C,H,W], s[N,C,1,1], y like x");
    DISPATCH(be, chscale_fwd, x, s, y);
}

int nas_chscale_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *s,
                    const nas_tensor *dy, nas_tensor *dx, nas_tensor *ds)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, s) || !owned(be, dy) || !owned(be, ds) ||
        (dx && !owned(be, dx)) || !shape_is(s, x->n, x->c, 1, 1) ||
        !shape_is(ds, x->n, x->c, 1, 1) || !shape_is(dy, x->n, x->c, x->h, x->w) ||
        (dx && !shape_is(dx, x->n, x->c, x->h, x->w)))
        return nas__backend_fail(be, NAS_EINVAL,
                                 "chscale_bwd: want x, dy, dx [N,C,H,W] and s, ds [N,C,1,1]");
    DISPATCH(be, chscale_bwd, x, s, dy, dx, ds);
}

int nas_dropout_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y, float p, uint64_t seed)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, x) || !owned(be, y) || x->count != y->count || !(p >= 0.0f && p < 1.0f))
        return nas__backend_fail(be, NAS_EINVAL, "dropout_fwd: bad tensors or p %g", (double)p);
    DISPATCH(be, dropout_fwd, x, y, p, seed);
}

int nas_dropout_bwd(nas_backend *be, const nas_tensor *dy, nas_tensor *dx, float p,
                    uint64_t seed)
{
    if (!be)
        return NAS_EINVAL;
    if (!owned(be, dy) || !owned(be, dx) || dy->count != dx->count || !(p >= 0.0f && p < 1.0f))
        return nas__backend_fail(be, NAS_EINVAL, "dropout_bwd: bad tensors or p %g", (double)p);
    DISPATCH(be, dropout_bwd, dy, dx, p, seed);
}

/* ---- host GEMM ------------------------------------------------------------ */

void nas_host_sgemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                    int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
