/*
 * trainer/backend_cpu.c - the "cpu" backend: oneDNN 2.6 (C API) for
 * convolution, batch normalisation, average pooling and ReLU; OpenBLAS
 * (cblas_sgemm) for the fully connected layer; plain loops for the rest.
 * Conformance against the "ref" oracle: tests/conformance/test_ops.c.
 *
 * Memory is host memory in plain NCHW f32 (oneDNN tags nchw/oihw). Each
 * (op, shape, parameters) gets its oneDNN primitive created on first use and
 * cached in the backend context (no global state); later calls only point
 * the cached dnnl_memory objects at the caller's buffers and execute, so the
 * hot path does not allocate. Primitives use a user-managed scratchpad that
 * the context owns (grown only when a primitive is created).
 *
 * Threads: Debian's oneDNN is built with the OpenMP runtime
 * (DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP), which sizes its parallel regions
 * from the calling thread's OpenMP nthreads ICV. With threads > 0 the backend
 * calls omp_set_num_threads(threads) before every oneDNN execution: this
 * changes the ICV of the calling thread, i.e. also any other OpenMP code
 * that thread later runs. OpenBLAS (Debian's pthread build) is set with
 * openblas_set_num_threads(threads), which is PROCESS-WIDE: the last cpu
 * backend created wins, and nas_host_sgemm is affected too. threads == 0
 * leaves both libraries at their defaults (all cores).
 */
#include <dlfcn.h>                 /* dlopen/dlsym: omp_set_num_threads from libgomp */
#include <math.h>                  /* sqrt */
#include <stdint.h>                /* int64_t */
#include <stdio.h>                 /* snprintf */
#include <stdlib.h>                /* aligned_alloc, free, calloc, realloc */
#include <string.h>                /* memcpy, memset, memcmp */
#include <cblas.h>                 /* cblas_sgemm, openblas_set_num_threads */
#include <oneapi/dnnl/dnnl.h>      /* oneDNN C API */
#include <oneapi/dnnl/dnnl_debug.h> /* dnnl_status2str */
#include "trainer/backend_impl.h"
#include "trainer/kernel_math.h"

#define F(t) ((float *)(t)->buf)
#define CF(t) ((const float *)(t)->buf)

/* Batch-norm backward gets the saved 1/sqrt(var+eps), not eps: oneDNN wants
 * the variance, so we pass var = 1/invstd^2 - BN_BWD_EPS and build the
 * backward primitive with BN_BWD_EPS, which reproduces invstd exactly up to
 * rounding, whatever eps the forward used. */
#define BN_BWD_EPS 1e-5f

enum prim_kind {
    PK_CONV_FWD,
    PK_CONV_BWD_DATA,
    PK_CONV_BWD_FILTER,
    PK_BN_TRAIN,
    PK_BN_INFER,
    PK_BN_BWD,
    PK_RELU_FWD,
    PK_RELU_BWD,
    PK_POOL_FWD,
    PK_POOL_BWD,
};

#define MAX_KEY 10
#define MAX_ARGS 12

/* One cached primitive with a dnnl_memory per execution argument. */
typedef struct prim {
    int kind;
    int64_t key[MAX_KEY];
    dnnl_primitive_t p;
    int nargs;
    dnnl_exec_arg_t args[MAX_ARGS]; /* last one may be the scratchpad */
    int has_scratch;
} prim;

typedef struct cpu_ctx {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_attr_t attr; /* scratchpad_mode_user */
    prim **cache;
    size_t ncache, cap;
    void *scratch; /* shared scratchpad, 64-byte aligned */
    size_t scratch_bytes;
    float *var; /* per-channel variance staging for batch norm */
    size_t var_count;
    void *gomp; /* dlopen handle of libgomp, or NULL */
    void (*omp_set_num_threads)(int);
} cpu_ctx;

static cpu_ctx *ctx_of(nas_backend *be) { return be->context; }

/* ---- oneDNN plumbing --------------------------------------------------------- */

/* Fail with op, shape and the oneDNN status string. */
#define DN(call_name, expr)                                                                \
    do {                                                                                   \
        dnnl_status_t st_ = (expr);                                                        \
        if (st_ != dnnl_success) {                                                         \
            rc = nas__backend_fail(be, NAS_EBACKEND, "cpu %s: %s failed: %s", what,         \
                                   call_name, dnnl_status2str(st_));                       \
            goto fail;                                                                     \
        }                                                                                  \
    } while (0)

static void prim_destroy(prim *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nargs; i++)
        dnnl_memory_destroy(p->args[i].memory);
    if (p->p)
        dnnl_primitive_destroy(p->p);
    free(p);
}

static prim *cache_find(cpu_ctx *c, int kind, const int64_t key[MAX_KEY])
{
    for (size_t i = 0; i < c->ncache; i++)
        if (c->cache[i]->kind == kind && memcmp(c->cache[i]->key, key, sizeof c->cache[i]->key) == 0)
            return c->cache[i];
    return NULL;
}

static int grow_bytes(void **buf, size_t *have, size_t want)
{
    if (want <= *have)
        return NAS_OK;
    size_t bytes = (want + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, bytes);
    if (!p)
        return NAS_ENOMEM;
    free(*buf);
    *buf = p;
    *have = bytes;
    return NAS_OK;
}

/*
 * Build a primitive from op descriptor `od` (hint: forward primitive
 * descriptor for backward ops, else NULL) with memory objects for the
 * execution arguments `arg_ids`, and add it to the cache. `what` names the
 * op and shape for error messages.
 */
static int prim_build(nas_backend *be, const char *what, int kind, const int64_t key[MAX_KEY],
                      const_dnnl_op_desc_t od, const_dnnl_primitive_desc_t hint,
                      const int *arg_ids, int nargs, prim **out)
{
    cpu_ctx *c = ctx_of(be);
    int rc = NAS_OK;
    dnnl_primitive_desc_t pd = NULL;
    if (nargs + 1 > MAX_ARGS)
        return nas__backend_fail(be, NAS_EBACKEND, "cpu %s: %d arguments exceed MAX_ARGS", what,
                                 nargs);
    prim *p = calloc(1, sizeof *p);
    if (!p)
        return nas__backend_fail(be, NAS_ENOMEM, "cpu %s: out of memory", what);
    p->kind = kind;
    memcpy(p->key, key, sizeof p->key);
    DN("dnnl_primitive_desc_create", dnnl_primitive_desc_create(&pd, od, c->attr, c->engine, hint));
    for (int i = 0; i < nargs; i++) {
        const dnnl_memory_desc_t *md =
            dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg_ids[i]);
        if (!md || md->ndims == 0) {
            rc = nas__backend_fail(be, NAS_EBACKEND, "cpu %s: no memory descriptor for arg %d",
                                   what, arg_ids[i]);
            goto fail;
        }
        p->args[p->nargs].arg = arg_ids[i];
        DN("dnnl_memory_create",
           dnnl_memory_create(&p->args[p->nargs].memory, md, c->engine, DNNL_MEMORY_NONE));
        p->nargs++;
    }
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sbytes = smd ? dnnl_memory_desc_get_size(smd) : 0;
    if (sbytes > 0) {
        if (grow_bytes(&c->scratch, &c->scratch_bytes, sbytes) != NAS_OK) {
            rc = nas__backend_fail(be, NAS_ENOMEM, "cpu %s: cannot allocate %zu-byte scratchpad",
                                   what, sbytes);
            goto fail;
        }
        p->args[p->nargs].arg = DNNL_ARG_SCRATCHPAD;
        DN("dnnl_memory_create",
           dnnl_memory_create(&p->args[p->nargs].memory, smd, c->engine, DNNL_MEMORY_NONE));
        p->nargs++;
        p->has_scratch = 1;
    }
    DN("dnnl_primitive_create", dnnl_primitive_create(&p->p, pd));
    if (c->ncache == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 32;
        prim **nc = realloc(c->cache, cap * sizeof *nc);
        if (!nc) {
            rc = nas__backend_fail(be, NAS_ENOMEM, "cpu %s: out of memory", what);
            goto fail;
        }
        c->cache = nc;
        c->cap = cap;
    }
    c->cache[c->ncache++] = p;
    dnnl_primitive_desc_destroy(pd);
    *out = p;
    return NAS_OK;
fail:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    prim_destroy(p);
    return rc;
}

/* Point the arguments at `bufs` (same order as at build time) and run. */
static int prim_exec(nas_backend *be, const char *what, prim *p, void *const *bufs)
{
    cpu_ctx *c = ctx_of(be);
    int rc = NAS_OK;
    int user = p->nargs - p->has_scratch;
    for (int i = 0; i < user; i++)
        DN("dnnl_memory_set_data_handle", dnnl_memory_set_data_handle(p->args[i].memory, bufs[i]));
    if (p->has_scratch)
        DN("dnnl_memory_set_data_handle",
           dnnl_memory_set_data_handle(p->args[user].memory, c->scratch));
    if (c->omp_set_num_threads && be->threads > 0)
        c->omp_set_num_threads(be->threads);
    DN("dnnl_primitive_execute", dnnl_primitive_execute(p->p, c->stream, p->nargs, p->args));
    DN("dnnl_stream_wait", dnnl_stream_wait(c->stream));
    return NAS_OK;
fail:
    return rc;
}

static int md_nchw(dnnl_memory_desc_t *md, int64_t n, int64_t c, int64_t h, int64_t w,
                   dnnl_format_tag_t tag)
{
    dnnl_dims_t d = {n, c, h, w};
    return dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, tag) == dnnl_success ? 0 : -1;
}

/* ---- memory --------------------------------------------------------------------- */

static int cpu_alloc(nas_backend *be, size_t bytes, void **buf)
{
    size_t rounded = (bytes + 63) & ~(size_t)63;
    *buf = aligned_alloc(64, rounded ? rounded : 64);
    return *buf ? NAS_OK : nas__backend_fail(be, NAS_ENOMEM, "cpu: cannot allocate %zu bytes",
                                             bytes);
}

static void cpu_free(nas_backend *be, void *buf) { free(buf); }

static int cpu_upload(nas_backend *be, void *dst, const float *src, size_t count)
{
    memcpy(dst, src, count * sizeof(float));
    return NAS_OK;
}

static int cpu_download(nas_backend *be, float *dst, const void *src, size_t count)
{
    memcpy(dst, src, count * sizeof(float));
    return NAS_OK;
}

static int cpu_zero(nas_backend *be, void *buf, size_t count)
{
    memset(buf, 0, count * sizeof(float));
    return NAS_OK;
}

static int cpu_copy(nas_backend *be, void *dst, const void *src, size_t count)
{
    memmove(dst, src, count * sizeof(float));
    return NAS_OK;
}

/* ---- convolution ------------------------------------------------------------------ */

/* Conv geometry x[N,C,H,W] w[K,C,R,R] y[N,K,Ho,Wo]; works for all three
 * directions (the shapes are the same, only the roles differ). */
static int conv_prim(nas_backend *be, int kind, const nas_tensor *x, const nas_tensor *w,
                     const nas_tensor *y, int stride, int pad, prim **out)
{
    int64_t key[MAX_KEY] = {x->n, x->c, x->h, x->w, w->n, w->h, y->h, y->w, stride, pad};
    *out = cache_find(ctx_of(be), kind, key);
    if (*out)
        return NAS_OK;
    static const char *const names[] = {"conv2d_fwd", "conv2d_bwd_data", "conv2d_bwd_filter"};
    char what[200];
    snprintf(what, sizeof what, "%s x[%d,%d,%d,%d] w[%d,%d,%d,%d] y[%d,%d,%d,%d] stride %d pad %d",
             names[kind - PK_CONV_FWD], x->n, x->c, x->h, x->w, w->n, w->c, w->h, w->w, y->n,
             y->c, y->h, y->w, stride, pad);
    int rc = NAS_OK;
    dnnl_memory_desc_t src, wei, dst;
    if (md_nchw(&src, x->n, x->c, x->h, x->w, dnnl_nchw) ||
        md_nchw(&wei, w->n, w->c, w->h, w->w, dnnl_oihw) ||
        md_nchw(&dst, y->n, y->c, y->h, y->w, dnnl_nchw))
        return nas__backend_fail(be, NAS_EBACKEND, "cpu %s: bad memory descriptor", what);
    dnnl_dims_t strides = {stride, stride}, pl = {pad, pad};
    /* right padding that makes oneDNN's output extent equal ours exactly */
    dnnl_dims_t pr = {(y->h - 1) * stride + w->h - x->h - pad,
                      (y->w - 1) * stride + w->w - x->w - pad};
    dnnl_convolution_desc_t fwd_d, bwd_d;
    dnnl_primitive_desc_t hint = NULL;
    DN("dnnl_convolution_forward_desc_init",
       dnnl_convolution_forward_desc_init(&fwd_d, dnnl_forward_training, dnnl_convolution_direct,
                                          &src, &wei, NULL, &dst, strides, pl, pr));
    if (kind == PK_CONV_FWD) {
        const int args[] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
        return prim_build(be, what, kind, key, &fwd_d, NULL, args, 3, out);
    }
    DN("dnnl_primitive_desc_create",
       dnnl_primitive_desc_create(&hint, &fwd_d, NULL, ctx_of(be)->engine, NULL));
    if (kind == PK_CONV_BWD_DATA) {
        const int args[] = {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC};
        DN("dnnl_convolution_backward_data_desc_init",
           dnnl_convolution_backward_data_desc_init(&bwd_d, dnnl_convolution_direct, &src, &wei,
                                                    &dst, strides, pl, pr));
        rc = prim_build(be, what, kind, key, &bwd_d, hint, args, 3, out);
    } else {
        const int args[] = {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS};
        DN("dnnl_convolution_backward_weights_desc_init",
           dnnl_convolution_backward_weights_desc_init(&bwd_d, dnnl_convolution_direct, &src,
                                                       &wei, NULL, &dst, strides, pl, pr));
        rc = prim_build(be, what, kind, key, &bwd_d, hint, args, 3, out);
    }
fail:
    if (hint)
        dnnl_primitive_desc_destroy(hint);
    return rc;
}

static int cpu_conv2d_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                          nas_tensor *y, int stride, int pad)
{
    prim *p;
    int rc = conv_prim(be, PK_CONV_FWD, x, w, y, stride, pad, &p);
    if (rc)
        return rc;
    void *const bufs[] = {x->buf, w->buf, y->buf};
    return prim_exec(be, "conv2d_fwd", p, bufs);
}

static int cpu_conv2d_bwd_data(nas_backend *be, const nas_tensor *dy, const nas_tensor *w,
                               nas_tensor *dx, int stride, int pad)
{
    prim *p;
    int rc = conv_prim(be, PK_CONV_BWD_DATA, dx, w, dy, stride, pad, &p);
    if (rc)
        return rc;
    void *const bufs[] = {dy->buf, w->buf, dx->buf};
    return prim_exec(be, "conv2d_bwd_data", p, bufs);
}

static int cpu_conv2d_bwd_filter(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                                 nas_tensor *dw, int stride, int pad)
{
    prim *p;
    int rc = conv_prim(be, PK_CONV_BWD_FILTER, x, dw, dy, stride, pad, &p);
    if (rc)
        return rc;
    void *const bufs[] = {x->buf, dy->buf, dw->buf};
    return prim_exec(be, "conv2d_bwd_filter", p, bufs);
}

/* ---- batch normalisation ---------------------------------------------------------- */

static int bn_prim(nas_backend *be, int kind, const nas_tensor *x, float eps, prim **out)
{
    union {
        float f;
        int32_t i;
    } e = {eps};
    int64_t key[MAX_KEY] = {x->n, x->c, x->h, x->w, e.i};
    cpu_ctx *c = ctx_of(be);
    *out = cache_find(c, kind, key);
    if (*out)
        return NAS_OK;
    static const char *const names[] = {"batchnorm_fwd_train", "batchnorm_fwd_infer",
                                        "batchnorm_bwd"};
    char what[160];
    snprintf(what, sizeof what, "%s x[%d,%d,%d,%d] eps %g", names[kind - PK_BN_TRAIN], x->n,
             x->c, x->h, x->w, (double)eps);
    int rc = NAS_OK;
    if (grow_bytes((void **)&c->var, &c->var_count, (size_t)x->c * sizeof(float)) != NAS_OK)
        return nas__backend_fail(be, NAS_ENOMEM, "cpu %s: out of memory", what);
    dnnl_memory_desc_t data;
    if (md_nchw(&data, x->n, x->c, x->h, x->w, dnnl_nchw))
        return nas__backend_fail(be, NAS_EBACKEND, "cpu %s: bad memory descriptor", what);
    const unsigned flags = dnnl_use_scale | dnnl_use_shift;
    dnnl_batch_normalization_desc_t fwd_d, bwd_d;
    dnnl_primitive_desc_t hint = NULL;
    if (kind == PK_BN_TRAIN) {
        const int args[] = {DNNL_ARG_SRC,  DNNL_ARG_SCALE, DNNL_ARG_SHIFT,
                            DNNL_ARG_DST,  DNNL_ARG_MEAN,  DNNL_ARG_VARIANCE};
        DN("dnnl_batch_normalization_forward_desc_init",
           dnnl_batch_normalization_forward_desc_init(&fwd_d, dnnl_forward_training, &data, eps,
                                                      flags));
        return prim_build(be, what, kind, key, &fwd_d, NULL, args, 6, out);
    }
    if (kind == PK_BN_INFER) {
        const int args[] = {DNNL_ARG_SRC, DNNL_ARG_SCALE,    DNNL_ARG_SHIFT,
                            DNNL_ARG_MEAN, DNNL_ARG_VARIANCE, DNNL_ARG_DST};
        DN("dnnl_batch_normalization_forward_desc_init",
           dnnl_batch_normalization_forward_desc_init(&fwd_d, dnnl_forward_inference, &data, eps,
                                                      flags | dnnl_use_global_stats));
        return prim_build(be, what, kind, key, &fwd_d, NULL, args, 6, out);
    }
    DN("dnnl_batch_normalization_forward_desc_init",
       dnnl_batch_normalization_forward_desc_init(&fwd_d, dnnl_forward_training, &data, eps,
                                                  flags));
    DN("dnnl_primitive_desc_create",
       dnnl_primitive_desc_create(&hint, &fwd_d, NULL, c->engine, NULL));
    DN("dnnl_batch_normalization_backward_desc_init",
       dnnl_batch_normalization_backward_desc_init(&bwd_d, dnnl_backward, &data, &data, eps,
                                                   flags));
    {
        const int args[] = {DNNL_ARG_SRC,      DNNL_ARG_MEAN,     DNNL_ARG_VARIANCE,
                            DNNL_ARG_DIFF_DST, DNNL_ARG_SCALE,    DNNL_ARG_DIFF_SRC,
                            DNNL_ARG_DIFF_SCALE, DNNL_ARG_DIFF_SHIFT, DNNL_ARG_SHIFT};
        rc = prim_build(be, what, kind, key, &bwd_d, hint, args, 9, out);
    }
fail:
    if (hint)
        dnnl_primitive_desc_destroy(hint);
    return rc;
}

static int cpu_batchnorm_fwd_train(nas_backend *be, const nas_tensor *x, const nas_tensor *gamma,
                                   const nas_tensor *beta, nas_tensor *y, nas_tensor *save_mean,
                                   nas_tensor *save_invstd, nas_tensor *running_mean,
                                   nas_tensor *running_var, float momentum, float eps)
{
    prim *p;
    int rc = bn_prim(be, PK_BN_TRAIN, x, eps, &p);
    if (rc)
        return rc;
    cpu_ctx *c = ctx_of(be);
    void *const bufs[] = {x->buf, gamma->buf, beta->buf, y->buf, save_mean->buf, c->var};
    rc = prim_exec(be, "batchnorm_fwd_train", p, bufs);
    if (rc)
        return rc;
    const float m = (float)((size_t)x->n * x->h * x->w);
    for (int ch = 0; ch < x->c; ch++) {
        float var = c->var[ch]; /* biased, as used to normalise */
        F(save_invstd)[ch] = (float)(1.0 / sqrt((double)var + (double)eps));
        nas__bn_running_update(&F(running_mean)[ch], &F(running_var)[ch], CF(save_mean)[ch], var,
                               m, momentum);
    }
    return NAS_OK;
}

static int cpu_batchnorm_fwd_infer(nas_backend *be, const nas_tensor *x,
                                   const nas_tensor *gamma, const nas_tensor *beta,
                                   const nas_tensor *running_mean,
                                   const nas_tensor *running_var, nas_tensor *y, float eps)
{
    prim *p;
    int rc = bn_prim(be, PK_BN_INFER, x, eps, &p);
    if (rc)
        return rc;
    void *const bufs[] = {x->buf, gamma->buf, beta->buf, running_mean->buf, running_var->buf,
                          y->buf};
    return prim_exec(be, "batchnorm_fwd_infer", p, bufs);
}

static int cpu_batchnorm_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                             const nas_tensor *gamma, const nas_tensor *save_mean,
                             const nas_tensor *save_invstd, nas_tensor *dx, nas_tensor *dgamma,
                             nas_tensor *dbeta)
{
    prim *p;
    int rc = bn_prim(be, PK_BN_BWD, x, BN_BWD_EPS, &p);
    if (rc)
        return rc;
    cpu_ctx *c = ctx_of(be);
    for (int ch = 0; ch < x->c; ch++) {
        double is = CF(save_invstd)[ch];
        c->var[ch] = (float)(1.0 / (is * is) - (double)BN_BWD_EPS);
    }
    void *const bufs[] = {x->buf, save_mean->buf, c->var, dy->buf, gamma->buf, dx->buf,
                          dgamma->buf, dbeta->buf, gamma->buf};
    /* oneDNN 2.6 refuses to run the use_shift backward without a SHIFT
     * argument although the gradients do not depend on it; the API has no
     * beta here, so gamma's (read-only, same-sized) buffer stands in. */
    return prim_exec(be, "batchnorm_bwd", p, bufs);
}

/* ---- relu --------------------------------------------------------------------------- */

static int relu_prim(nas_backend *be, int kind, size_t count, prim **out)
{
    int64_t key[MAX_KEY] = {(int64_t)count};
    *out = cache_find(ctx_of(be), kind, key);
    if (*out)
        return NAS_OK;
    char what[96];
    snprintf(what, sizeof what, "%s [%zu elements]", kind == PK_RELU_FWD ? "relu_fwd" : "relu_bwd",
             count);
    int rc = NAS_OK;
    dnnl_memory_desc_t data;
    dnnl_dims_t d = {(int64_t)count};
    DN("dnnl_memory_desc_init_by_tag", dnnl_memory_desc_init_by_tag(&data, 1, d, dnnl_f32, dnnl_a));
    dnnl_eltwise_desc_t fwd_d, bwd_d;
    dnnl_primitive_desc_t hint = NULL;
    DN("dnnl_eltwise_forward_desc_init",
       dnnl_eltwise_forward_desc_init(&fwd_d, dnnl_forward_training, dnnl_eltwise_relu, &data,
                                      0.0f, 0.0f));
    if (kind == PK_RELU_FWD) {
        const int args[] = {DNNL_ARG_SRC, DNNL_ARG_DST};
        return prim_build(be, what, kind, key, &fwd_d, NULL, args, 2, out);
    }
    DN("dnnl_primitive_desc_create",
       dnnl_primitive_desc_create(&hint, &fwd_d, NULL, ctx_of(be)->engine, NULL));
    DN("dnnl_eltwise_backward_desc_init",
       dnnl_eltwise_backward_desc_init(&bwd_d, dnnl_eltwise_relu, &data, &data, 0.0f, 0.0f));
    {
        const int args[] = {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC};
        rc = prim_build(be, what, kind, key, &bwd_d, hint, args, 3, out);
    }
fail:
    if (hint)
        dnnl_primitive_desc_destroy(hint);
    return rc;
}

static int cpu_relu_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y)
{
    prim *p;
    int rc = relu_prim(be, PK_RELU_FWD, x->count, &p);
    if (rc)
        return rc;
    void *const bufs[] = {x->buf, y->buf};
    return prim_exec(be, "relu_fwd", p, bufs);
}

static int cpu_relu_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                        nas_tensor *dx)
{
    prim *p;
    int rc = relu_prim(be, PK_RELU_BWD, x->count, &p);
    if (rc)
        return rc;
    void *const bufs[] = {x->buf, dy->buf, dx->buf};
    return prim_exec(be, "relu_bwd", p, bufs);
}

/* ---- pooling ------------------------------------------------------------------------- */

static int pool_prim(nas_backend *be, int kind, const nas_tensor *x, const nas_tensor *y, int k,
                     int stride, int pad, prim **out)
{
    int64_t key[MAX_KEY] = {x->n, x->c, x->h, x->w, y->h, y->w, k, stride, pad};
    *out = cache_find(ctx_of(be), kind, key);
    if (*out)
        return NAS_OK;
    char what[160];
    snprintf(what, sizeof what, "%s x[%d,%d,%d,%d] y[%d,%d,%d,%d] k %d stride %d pad %d",
             kind == PK_POOL_FWD ? "avgpool_fwd" : "avgpool_bwd", x->n, x->c, x->h, x->w, y->n,
             y->c, y->h, y->w, k, stride, pad);
    int rc = NAS_OK;
    dnnl_memory_desc_t src, dst;
    if (md_nchw(&src, x->n, x->c, x->h, x->w, dnnl_nchw) ||
        md_nchw(&dst, y->n, y->c, y->h, y->w, dnnl_nchw))
        return nas__backend_fail(be, NAS_EBACKEND, "cpu %s: bad memory descriptor", what);
    dnnl_dims_t strides = {stride, stride}, kernel = {k, k}, pl = {pad, pad};
    dnnl_dims_t pr = {(y->h - 1) * stride + k - x->h - pad, (y->w - 1) * stride + k - x->w - pad};
    dnnl_pooling_desc_t fwd_d, bwd_d;
    dnnl_primitive_desc_t hint = NULL;
    DN("dnnl_pooling_forward_desc_init",
       dnnl_pooling_forward_desc_init(&fwd_d, dnnl_forward_training,
                                      dnnl_pooling_avg_exclude_padding, &src, &dst, strides,
                                      kernel, pl, pr));
    if (kind == PK_POOL_FWD) {
        const int args[] = {DNNL_ARG_SRC, DNNL_ARG_DST};
        return prim_build(be, what, kind, key, &fwd_d, NULL, args, 2, out);
    }
    DN("dnnl_primitive_desc_create",
       dnnl_primitive_desc_create(&hint, &fwd_d, NULL, ctx_of(be)->engine, NULL));
    DN("dnnl_pooling_backward_desc_init",
       dnnl_pooling_backward_desc_init(&bwd_d, dnnl_pooling_avg_exclude_padding, &src, &dst,
                                       strides, kernel, pl, pr));
    {
        const int args[] = {DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC};
        rc = prim_build(be, what, kind, key, &bwd_d, hint, args, 2, out);
    }
fail:
    if (hint)
        dnnl_primitive_desc_destroy(hint);
    return rc;
}

static int cpu_avgpool_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y, int k,
                           int stride, int pad)
{
    prim *p;
    int rc = pool_prim(be, PK_POOL_FWD, x, y, k, stride, pad, &p);
    if (rc)
        return rc;
    void *const bufs[] = {x->buf, y->buf};
    return prim_exec(be, "avgpool_fwd", p, bufs);
}

static int cpu_avgpool_bwd(nas_backend *be, const nas_tensor *dy, nas_tensor *dx, int k,
                           int stride, int pad)
{
    prim *p;
    int rc = pool_prim(be, PK_POOL_BWD, dx, dy, k, stride, pad, &p);
    if (rc)
        return rc;
    void *const bufs[] = {dy->buf, dx->buf};
    return prim_exec(be, "avgpool_bwd", p, bufs);
}

/* Global average pooling: contiguous H*W planes, plain loops. */
static int cpu_gap_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y)
{
    const size_t hw = (size_t)x->h * x->w, planes = (size_t)x->n * x->c;
    const float inv = 1.0f / (float)hw;
    for (size_t p = 0; p < planes; p++) {
        const float *xp = CF(x) + p * hw;
        float s = 0.0f;
        for (size_t i = 0; i < hw; i++)
            s += xp[i];
        F(y)[p] = s * inv;
    }
    return NAS_OK;
}

static int cpu_gap_bwd(nas_backend *be, const nas_tensor *dy, nas_tensor *dx)
{
    const size_t hw = (size_t)dx->h * dx->w, planes = (size_t)dx->n * dx->c;
    const float inv = 1.0f / (float)hw;
    for (size_t p = 0; p < planes; p++) {
        float g = CF(dy)[p] * inv;
        float *dxp = F(dx) + p * hw;
        for (size_t i = 0; i < hw; i++)
            dxp[i] = g;
    }
    return NAS_OK;
}

/* ---- linear (OpenBLAS) ------------------------------------------------------------------ */

/* y[N,M] = x[N,K] w[M,K]^T + b: rows of y start as b, then one sgemm. */
static int cpu_linear_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                          const nas_tensor *b, nas_tensor *y)
{
    const int n = x->n, m = w->n, k = (int)(x->count / (size_t)x->n);
    for (int i = 0; i < n; i++)
        memcpy(F(y) + (size_t)i * m, CF(b), (size_t)m * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, m, k, 1.0f, CF(x), k, CF(w), k, 1.0f,
                F(y), m);
    return NAS_OK;
}

/* dx = dy w; dw = dy^T x; db = column sums of dy. */
static int cpu_linear_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                          const nas_tensor *dy, nas_tensor *dx, nas_tensor *dw, nas_tensor *db)
{
    const int n = x->n, m = w->n, k = (int)(x->count / (size_t)x->n);
    if (dx)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, k, m, 1.0f, CF(dy), m, CF(w),
                    k, 0.0f, F(dx), k);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, k, n, 1.0f, CF(dy), m, CF(x), k, 0.0f,
                F(dw), k);
    for (int j = 0; j < m; j++)
        F(db)[j] = 0.0f;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++)
            F(db)[j] += CF(dy)[(size_t)i * m + j];
    return NAS_OK;
}

/* ---- elementwise, loss, optimiser --------------------------------------------------------- */

static int cpu_axpy(nas_backend *be, float alpha, const nas_tensor *x, nas_tensor *y)
{
    const float *xp = CF(x);
    float *yp = F(y);
    for (size_t i = 0; i < x->count; i++)
        yp[i] += alpha * xp[i];
    return NAS_OK;
}

static int cpu_scale(nas_backend *be, float alpha, const nas_tensor *x, nas_tensor *y)
{
    const float *xp = CF(x);
    float *yp = F(y);
    for (size_t i = 0; i < x->count; i++)
        yp[i] = alpha * xp[i];
    return NAS_OK;
}

static int cpu_softmax_xent(nas_backend *be, const nas_tensor *logits, const nas_tensor *labels,
                            nas_tensor *dlogits, float *loss, int *correct)
{
    const int n = logits->n, k = (int)(logits->count / (size_t)n);
    for (int i = 0; i < n; i++) {
        float v = CF(labels)[i];
        if (!(v >= 0.0f) || v >= (float)k || v != (float)(int)v)
            return nas__backend_fail(be, NAS_EINVAL,
                                     "softmax_xent: label %g of row %d is not a class in [0,%d)",
                                     (double)v, i, k);
    }
    double total = 0.0;
    int right = 0;
    for (int i = 0; i < n; i++) {
        int lab = (int)CF(labels)[i], am;
        total += nas__softmax_xent_row(CF(logits) + (size_t)i * k, k, lab, 1.0f / (float)n,
                                       dlogits ? F(dlogits) + (size_t)i * k : NULL, &am);
        right += am == lab;
    }
    *loss = (float)(total / n);
    *correct = right;
    return NAS_OK;
}

static int cpu_sgd_step(nas_backend *be, nas_tensor *w, const nas_tensor *dw, nas_tensor *v,
                        float lr, float momentum, float wd, int nesterov)
{
    float *wp = F(w), *vp = F(v);
    const float *gp = CF(dw);
    for (size_t i = 0; i < w->count; i++)
        nas__sgd_update(&wp[i], gp[i], &vp[i], lr, momentum, wd, nesterov);
    return NAS_OK;
}

static int cpu_sumsq(nas_backend *be, const nas_tensor *x, double *out)
{
    double acc = 0.0;
    const float *xp = CF(x);
    for (size_t i = 0; i < x->count; i++)
        acc += (double)xp[i] * xp[i];
    *out = acc;
    return NAS_OK;
}

/* ---- construction -------------------------------------------------------------------------- */

static void cpu_destroy(nas_backend *be)
{
    cpu_ctx *c = ctx_of(be);
    if (c) {
        for (size_t i = 0; i < c->ncache; i++)
            prim_destroy(c->cache[i]);
        free(c->cache);
        free(c->scratch);
        free(c->var);
        if (c->attr)
            dnnl_primitive_attr_destroy(c->attr);
        if (c->stream)
            dnnl_stream_destroy(c->stream);
        if (c->engine)
            dnnl_engine_destroy(c->engine);
        if (c->gomp)
            dlclose(c->gomp);
        free(c);
    }
    free(be);
}

static const nas__backend_ops cpu_ops = {
    .name = "cpu",
    .destroy = cpu_destroy,
    .sync = NULL,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_upload,
    .download = cpu_download,
    .zero = cpu_zero,
    .copy = cpu_copy,
    .conv2d_fwd = cpu_conv2d_fwd,
    .conv2d_bwd_data = cpu_conv2d_bwd_data,
    .conv2d_bwd_filter = cpu_conv2d_bwd_filter,
    .batchnorm_fwd_train = cpu_batchnorm_fwd_train,
    .batchnorm_fwd_infer = cpu_batchnorm_fwd_infer,
    .batchnorm_bwd = cpu_batchnorm_bwd,
    .relu_fwd = cpu_relu_fwd,
    .relu_bwd = cpu_relu_bwd,
    .avgpool_fwd = cpu_avgpool_fwd,
    .avgpool_bwd = cpu_avgpool_bwd,
    .gap_fwd = cpu_gap_fwd,
    .gap_bwd = cpu_gap_bwd,
    .linear_fwd = cpu_linear_fwd,
    .linear_bwd = cpu_linear_bwd,
    .axpy = cpu_axpy,
    .scale = cpu_scale,
    .softmax_xent = cpu_softmax_xent,
    .sgd_step = cpu_sgd_step,
    .sumsq = cpu_sumsq,
};

/*
 * Create the cpu backend with `threads` threads for oneDNN and OpenBLAS
 * (0 = library defaults; see the threading note at the top of this file).
 * `device` is ignored. Errors: NAS_ENOMEM, NAS_EBACKEND (oneDNN engine or
 * stream creation failed).
 */
int nas__backend_cpu_create(int threads, int device, nas_backend **out, nas_error *err)
{
    *out = NULL;
    nas_backend *be = calloc(1, sizeof *be);
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!be || !c) {
        free(be);
        free(c);
        return nas_error_set(err, NAS_ENOMEM, "cpu backend: out of memory");
    }
    be->ops = &cpu_ops;
    be->context = c;
    be->threads = threads;
    dnnl_status_t st;
    const char *step = "dnnl_engine_create";
    if ((st = dnnl_engine_create(&c->engine, dnnl_cpu, 0)) != dnnl_success)
        goto fail;
    step = "dnnl_stream_create";
    if ((st = dnnl_stream_create(&c->stream, c->engine, dnnl_stream_default_flags)) !=
        dnnl_success)
        goto fail;
    step = "dnnl_primitive_attr_create";
    if ((st = dnnl_primitive_attr_create(&c->attr)) != dnnl_success)
        goto fail;
    step = "dnnl_primitive_attr_set_scratchpad_mode";
    if ((st = dnnl_primitive_attr_set_scratchpad_mode(c->attr, dnnl_scratchpad_mode_user)) !=
        dnnl_success)
        goto fail;
    if (threads > 0) {
        openblas_set_num_threads(threads); /* process-wide */
        if (dnnl_version()->cpu_runtime == DNNL_RUNTIME_OMP) {
            /* libgomp is already loaded as oneDNN's dependency; this only
             * takes a reference to find omp_set_num_threads without making
             * the build link OpenMP itself. */
            c->gomp = dlopen("libgomp.so.1", RTLD_LAZY);
            if (c->gomp) {
                void *sym = dlsym(c->gomp, "omp_set_num_threads");
                memcpy(&c->omp_set_num_threads, &sym, sizeof sym);
            }
        }
    }
    *out = be;
    return NAS_OK;
fail:
    cpu_destroy(be);
    return nas_error_set(err, NAS_EBACKEND, "cpu backend: %s failed: %s", step,
                         dnnl_status2str(st));
}
