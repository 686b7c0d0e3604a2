/*
 * trainer/backend_cpu.c - the "cpu" backend: oneDNN 2.6 (C API) for
 * convolution, batch normalisation, average pooling, ReLU and layout
 * reorders; OpenBLAS (cblas_sgemm) for the fully connected layer; kernels
 * of our own for the depthwise weight gradient (cpu_depthwise.c) and
 * batch norm + ReLU6 / h-swish in training (cpu_bn_act.c); plain loops
 * for the rest. Conformance against the "ref" oracle:
 * tests/conformance/test_ops.c and test_layout.c.
 *
 * Layout. oneDNN's direct convolutions are about 4x faster on channel-
 * blocked activations (nChw16c: 16 channels innermost) than on plain NCHW,
 * so activations stay blocked between ops instead of being reordered around
 * every convolution (what PyTorch does). Every tensor carries a layout tag
 * (nas_tensor.layout): L_PLAIN (NCHW; what create and upload give), L_B16
 * (nChw16c) or L_B8 (nChw8c). An op writes its output in the preferred
 * layout of the output's shape (pref_layout: blocked when C is a multiple
 * of 16 (8) and H*W > 1, else plain; one block for the whole network:
 * nChw8c for every multiple of 8 when the running network's convolutions
 * touch C % 16 == 8 tensors (nas__backend_set_convs, issue 34 item 2);
 * both orders hold the same number of
 * floats, and a batch prefix of a blocked tensor is the blocked tensor of
 * the smaller batch, so the trainer's batch views stay valid); it reads
 * inputs in their preferred layout, reordering an input that arrives in
 * another one into a context buffer (this happens only at the network's
 * edges: uploaded images, tests). Element-wise ops keep their input's
 * layout. Download and copy between shapes convert back to plain.
 * Weights stay plain OIHW for callers; each convolution primitive reorders
 * them to (or, for the weight gradient, from) the blocked format it chose,
 * a few microseconds per call. A convolution between stages of different
 * blocking (8 -> 16 channels: nChw8c -> nChw16c; 4 -> 8: plain -> nChw8c)
 * has no optimised oneDNN kernel for the preferred pair, only the
 * reference one (35x slower per network); conv_prim_g then runs it in a
 * common layout, reordering around it (ONEDNN_VERBOSE=1 shows no "ref:"
 * implementation for channels 4, 8, 16, fp32 or bf16).
 *
 * Primitives. Each (op, shape, layouts, parameters) gets its oneDNN
 * primitive created on first use and cached in the backend context (no
 * global state); later calls only point the cached dnnl_memory objects at
 * the caller's buffers and execute, so the training step does not
 * allocate. Primitives use one user-managed scratchpad that the context
 * owns (grown only when a primitive is created).
 *
 * Fusion. nas_conv2d_fwd_fused is an inference convolution (dense,
 * grouped or depthwise) with a bias and either oneDNN's sum post-op (dst
 * += conv + bias) or an eltwise post-op (dst = f(conv + bias)): the
 * trainer folds each eval-mode batch norm into its convolution, runs the
 * activation after it (an MBConv's expansion and depthwise convolutions,
 * a reduction block's first conv) as the post-op, and adds edge outputs
 * straight into a cell node (trainer/net.c, "Folded inference").
 * Training keeps conv and batch norm apart (batch statistics need the
 * convolution's output); in a NAS-Bench-201 edge the ReLU comes before
 * the convolution, so an edge only gains the bias and the sum.
 * A batch norm followed by a ReLU, ReLU6 or h-swish that alone reads it
 * (chain networks' MBConv blocks, the stem, NAS-Bench-201's final BN-ReLU)
 * runs our own kernel in fp32 training (trainer/cpu_bn_act.c; issue 34,
 * bn_act_ok): a statistics pass, then one pass writing the activation's
 * output; backward, the activation's derivative inside BN's reduction and
 * dx passes. Where that output feeds only squeeze-and-excitation, the
 * forward also writes SE's pool and the backward takes SE's gradients
 * (nas_batchnorm_act_se_*). Every other fp32 training batch norm runs its
 * backward there too (no activation): oneDNN's, with two threads, splits
 * pixels with barriers that sleep under OMP_WAIT_POLICY=passive, and took
 * 40% of a chain-se step on a busy 2-core host (issue 34). oneDNN keeps
 * the plain training forward (with our statistics), inference and bf16
 * batch norms on hosts without AVX512-BF16 where C is a multiple of 16;
 * the other bf16 training batch norms (+ activation, + SE) run
 * trainer/cpu_bn_act_bf16.c (own_bf16_bn).
 *
 * Threads. Debian's oneDNN is built with the OpenMP runtime
 * (DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP): it sizes its parallel regions from
 * the calling thread's OpenMP nthreads ICV, both when a primitive is
 * created (the JIT kernels partition work for that many threads) and when
 * it runs. With threads > 0 the backend calls omp_set_num_threads before
 * creating and before running each primitive: `threads` for large
 * problems, 1 for small ones (fewer than SMALL_WORK elements, e.g. batch-1
 * inference, where waking a second thread costs more than it saves). This
 * changes the calling thread's ICV, i.e. also other OpenMP code that thread
 * later runs. threads == 0 leaves OpenMP at its default (all cores).
 * OpenBLAS (Debian's pthread build, for the fully connected layers) runs
 * on the calling thread only: the backend calls openblas_set_num_threads(1)
 * whatever `threads` is. That call is PROCESS-WIDE (nas_host_sgemm runs on
 * one thread too once a cpu backend exists). OpenBLAS keeps its own pool
 * of threads, apart from oneDNN's OpenMP pool, and after a call that used
 * it each worker spins (sched_yield) for OpenBLAS's thread timeout before
 * it sleeps: with `threads` OpenBLAS threads the spinning workers took the
 * cores from oneDNN's threads, whose next barriers then waited for a
 * preempted thread. Our layers' GEMMs are small (batch x at most a few
 * hundred features), so one thread costs them little. It also takes
 * OpenBLAS out of what the thread count changes: with 2 threads its sgemm
 * rounded differently from 1 thread on shapes as small as 240x60x128 (the
 * cpu backend's results now differ in their last digits from earlier
 * versions wherever a layer's GEMM was large enough for OpenBLAS to split
 * it, e.g. squeeze-and-excitation at batch 128). Measured at batch 128
 * with 2 threads (experiments/bench-train/README.md, session 22): on
 * chain-plain, involuntary context switches fell from 19,143 to 153 per
 * run and CPU time per trained image from 0.60-0.69 to 0.45-0.49 ms.
 * Under load set OMP_WAIT_POLICY=passive (the `nas` CLI does): spinning
 * OpenMP threads make convolutions several times slower when cores are
 * shared.
 *
 * Profiling: with NAS_CPU_PROFILE=1 in the environment the backend adds up
 * wall time per op and prints the table to stderr when destroyed.
 */
#include <dlfcn.h>                 /* dlopen/dlsym: omp_set_num_threads from libgomp */
#include <math.h>                  /* sqrt */
#include <stdint.h>                /* int64_t */
#include <stdio.h>                 /* snprintf, fprintf */
#include <stdlib.h>                /* aligned_alloc, free, calloc, realloc, getenv */
#include <string.h>                /* memcpy, memset, memcmp */
#include <time.h>                  /* clock_gettime (profiling) */
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

/* Problems with fewer output elements than this run on one thread. */
#define SMALL_WORK 32768

/* Layouts (nas_tensor.layout). L_NHWC_BF16 holds count bfloat16 values
 * channels-last in the first half of the tensor's float-sized buffer; only
 * the bf16 precision produces it (oneDNN's AMX convolutions want nhwc).
 * L_NHWC (fp32 channels-last) is never a tensor's layout: a convolution
 * whose preferred layouts have no optimised oneDNN kernel runs in it on
 * reordered copies (see conv_prim_g). */
enum layout { L_PLAIN = 0, L_B16 = 1, L_B8 = 2, L_NHWC_BF16 = 3, L_NHWC = 4 };

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
    PK_REORDER,
    PK_SUM,
    PK_ELT_FWD, /* issue 15: relu6, hswish, sigmoid (oneDNN eltwise) */
    PK_ELT_BWD,
    PK_COUNT
};

/* Profile slots: the primitive kinds, then the plain-loop ops. */
enum prof_slot {
    PS_GAP = PK_COUNT,
    PS_LINEAR,
    PS_AXPY,
    PS_SCALE,
    PS_COPY,
    PS_XENT,
    PS_SGD,
    PS_SUMSQ,
    PS_DW_FWD, /* grouped / depthwise convolutions (issue 15) */
    PS_DW_BWD_DATA,
    PS_DW_BWD_FILTER,
    PS_ACT_LOOP, /* hard sigmoid (no oneDNN eltwise in 2.6) */
    PS_CHSCALE,
    PS_DROPOUT,
    PS_BN_ACT_FWD, /* batch norm + ReLU6 / h-swish, our own kernel (issue 34) */
    PS_BN_ACT_BWD,
    PS_COUNT
};
static const char *const prof_names[PS_COUNT] = {
    "conv_fwd", "conv_bwd_data", "conv_bwd_filter", "bn_train", "bn_infer", "bn_bwd",
    "relu_fwd", "relu_bwd",      "pool_fwd",        "pool_bwd", "reorder",  "axpy_sum",
    "act_fwd",  "act_bwd",       "gap",             "linear",   "axpy",     "scale",
    "copy",     "xent",          "sgd",             "sumsq",    "dwconv_fwd", "dwconv_bwd_data",
    "dwconv_bwd_filter", "hsigmoid", "chscale", "dropout", "bn_act_train", "bn_act_bwd"};

#define MAX_KEY 14
#define MAX_ARGS 12
#define N_TMP 3

/* One cached primitive with a dnnl_memory per execution argument. */
typedef struct prim {
    int kind;
    int prof; /* profile slot (kind, or PS_DW_* for grouped convolutions) */
    int64_t key[MAX_KEY];
    dnnl_primitive_t p;
    int nargs;
    dnnl_exec_arg_t args[MAX_ARGS]; /* last one may be the scratchpad */
    int has_scratch;
    int nthr; /* OpenMP threads to run with (0: leave the ICV alone) */
    /* Convolutions whose chosen weight format differs from the callers'
     * OIHW: a reorder into (w_to_prim) or out of (bwd filter) wbuf. */
    int w_arg; /* index in args of the weights argument, -1 if none */
    int lx, ly; /* convolutions: the activation layouts the primitive runs in */
    int w_to_prim;
    dnnl_primitive_t wre;
    dnnl_memory_t wre_src, wre_dst;
    void *wbuf;
} prim;

typedef struct cpu_ctx {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_attr_t attr; /* scratchpad_mode_user */
    prim **cache;
    size_t ncache, cap;
    void *scratch; /* shared scratchpad, 64-byte aligned */
    size_t scratch_bytes;
    void *tmp[N_TMP]; /* inputs reordered to the layout an op wants */
    size_t tmp_bytes[N_TMP];
    float *var; /* per-channel variance staging for batch norm */
    size_t var_count;
    double *bn_sums; /* workspace of our batch norm kernels (trainer/cpu_bn_act.c,
                        cpu_bn_act_bf16.c): sums per channel and per image,
                        NAS__CPU_BN_ACT_WS_BYTES(N, C) */
    size_t bn_sums_bytes;
    void *gomp; /* dlopen handle of libgomp, or NULL */
    void (*omp_set_num_threads)(int);
    int bf16; /* precision "bf16": activations in L_NHWC_BF16 */
    int block16; /* the host runs oneDNN's AVX-512 kernels: fp32 activations whose C is a
                    multiple of 16 may be nChw16c (unless plan8); else nChw8c at most
                    (pref_layout_dims) */
    int plan8;   /* the running network's layout plan (nas__backend_set_convs; 0 until
                    set): nChw8c for every multiple of 8, none nChw16c */
    int bf16_native; /* the host has AVX512-BF16 (nas__cpu_bf16_native): our bf16 batch norm
                        runs its AVX512-BF16 passes and takes every C (own_bf16_bn) */
    int profile;
    double prof_s[PS_COUNT];
    long prof_n[PS_COUNT];
} cpu_ctx;

static cpu_ctx *ctx_of(nas_backend *be) { return be->context; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Profiling brackets: PROF0 at the start of an op, PROF1(slot) at its end. */
#define PROF0 double prof_t0_ = ctx_of(be)->profile ? now_s() : 0.0
#define PROF1(slot)                                                   \
    do {                                                              \
        cpu_ctx *pc_ = ctx_of(be);                                    \
        if (pc_->profile) {                                           \
            pc_->prof_s[(slot)] += now_s() - prof_t0_;                \
            pc_->prof_n[(slot)]++;                                    \
        }                                                             \
    } while (0)

/* ---- layouts ------------------------------------------------------------------ */

/* The preferred layout of a C x H x W activation. nChw16c only where
 * oneDNN has AVX-512 kernels (block16): on an AVX2 host its batch
 * normalisation has no JIT kernel for nChw16c and runs the reference one,
 * 10-100x slower (ONEDNN_VERBOSE shows "bnorm_ref:any ... aBcd16b"; a
 * chain supernet step took 2.3 s, 96% of it in BN), while nChw8c has
 * AVX2 kernels for every op, so there 8 is the widest block. */
static int pref_layout_dims(int bf16, int block16, int c, int h, int w)
{
    if ((int64_t)h * w <= 1)
        return L_PLAIN;
    if (bf16 && c % 8 == 0)
        return L_NHWC_BF16;
    if (block16 && c % 16 == 0)
        return L_B16;
    if (c % 8 == 0)
        return L_B8;
    return L_PLAIN;
}

/* 1 when fp32 activations whose C is a multiple of 16 are nChw16c: an
 * AVX-512 host, and a network whose counts all allow it (plan8 0). */
static int wide16(const cpu_ctx *c) { return c->block16 && !c->plan8; }

static int pref_layout(const nas_tensor *t)
{
    const cpu_ctx *c = t->be->context;
    return pref_layout_dims(c->bf16, wide16(c), t->c, t->h, t->w);
}

static int is_bf16(int layout) { return layout == L_NHWC_BF16; }

/* Channel block of a layout: element (n, c, s) of an [N,C,HW] tensor with
 * block b sits at ((n*C/b + c/b)*HW + s)*b + c%b (b = 1: plain NCHW). */
static int block_of(int layout) { return layout == L_B16 ? 16 : layout == L_B8 ? 8 : 1; }

/* 1 when training batch norm in layout l takes its statistics from
 * nas__cpu_bn_stats (fp32 plain or channel-blocked), 0 when oneDNN
 * computes them (bf16 channels-last). */
static int own_stats(int l) { return l == L_PLAIN || l == L_B8 || l == L_B16; }

/* 1 when a bf16 training batch norm of x runs our own kernel
 * (trainer/cpu_bn_act_bf16.c): on a host with AVX512-BF16, where the
 * kernel's AVX512-BF16 passes on both threads beat oneDNN's one-thread
 * JIT batch norm plus an eltwise pass (issue 34, session 20,
 * experiments/bench-train/README.md), every C; elsewhere only where C is
 * not a multiple of 16, for which oneDNN 2.6 has only its generic
 * nspc_bnorm on nhwc bf16 (for the other C its JIT batch norm plus an
 * eltwise pass measured faster than the kernel's generic passes). */
static int own_bf16_bn(const nas_tensor *x)
{
    const cpu_ctx *c = x->be->context;
    return c->bf16_native || x->c % 16 != 0;
}

/* The fp32 layout an op falls back to when it cannot run in bf16: the
 * preferred fp32 layout of t's shape for a bf16 `layout`, else `layout`. */
static int f32_of(const nas_tensor *t, int layout)
{
    const cpu_ctx *c = t->be->context;
    return layout == L_NHWC_BF16 ? pref_layout_dims(0, wide16(c), t->c, t->h, t->w) : layout;
}

static dnnl_format_tag_t tag_of(int layout)
{
    switch (layout) {
    case L_B16:
        return dnnl_nChw16c;
    case L_B8:
        return dnnl_nChw8c;
    case L_NHWC_BF16:
    case L_NHWC:
        return dnnl_nhwc;
    default:
        return dnnl_nchw;
    }
}

static dnnl_data_type_t dt_of(int layout) { return is_bf16(layout) ? dnnl_bf16 : dnnl_f32; }

static int same_shape(const nas_tensor *a, const nas_tensor *b)
{
    return a->n == b->n && a->c == b->c && a->h == b->h && a->w == b->w;
}

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
    if (p->wre)
        dnnl_primitive_destroy(p->wre);
    if (p->wre_src)
        dnnl_memory_destroy(p->wre_src);
    if (p->wre_dst)
        dnnl_memory_destroy(p->wre_dst);
    free(p->wbuf);
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

/* Threads for a problem with `work` output elements. */
static int pick_threads(nas_backend *be, size_t work)
{
    if (be->threads <= 0)
        return 0;
    return work < SMALL_WORK ? 1 : be->threads;
}

/* Set every time: other code on this thread may have changed the ICV. */
static void set_threads(cpu_ctx *c, int nthr)
{
    if (nthr > 0 && c->omp_set_num_threads)
        c->omp_set_num_threads(nthr);
}

static int cache_add(nas_backend *be, const char *what, prim *p)
{
    cpu_ctx *c = ctx_of(be);
    if (c->ncache == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 32;
        prim **nc = realloc(c->cache, cap * sizeof *nc);
        if (!nc)
            return nas__backend_fail(be, NAS_ENOMEM, "cpu %s: out of memory", what);
        c->cache = nc;
        c->cap = cap;
    }
    c->cache[c->ncache++] = p;
    return NAS_OK;
}

/* Weight-format plumbing of a convolution primitive: when the format the
 * primitive chose for argument `arg_ids[w_index]` is not plain OIHW, build a
 * reorder between the callers' OIHW buffer and p->wbuf. */
static int prim_weights(nas_backend *be, const char *what, prim *p, const dnnl_memory_desc_t *md,
                        const dnnl_memory_desc_t *user, int to_prim)
{
    cpu_ctx *c = ctx_of(be);
    int rc = NAS_OK;
    dnnl_primitive_desc_t rpd = NULL;
    if (dnnl_memory_desc_equal(md, user))
        return NAS_OK;
    size_t bytes = dnnl_memory_desc_get_size(md);
    p->wbuf = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!p->wbuf)
        return nas__backend_fail(be, NAS_ENOMEM, "cpu %s: out of memory", what);
    p->w_to_prim = to_prim;
    const dnnl_memory_desc_t *src = to_prim ? user : md, *dst = to_prim ? md : user;
    DN("dnnl_reorder_primitive_desc_create",
       dnnl_reorder_primitive_desc_create(&rpd, src, c->engine, dst, c->engine, NULL));
    DN("dnnl_primitive_create", dnnl_primitive_create(&p->wre, rpd));
    DN("dnnl_memory_create", dnnl_memory_create(&p->wre_src, src, c->engine, DNNL_MEMORY_NONE));
    DN("dnnl_memory_create", dnnl_memory_create(&p->wre_dst, dst, c->engine, DNNL_MEMORY_NONE));
fail:
    if (rpd)
        dnnl_primitive_desc_destroy(rpd);
    return rc;
}

/* A new primitive record of `kind` and `key` that runs with `nthr`
 * threads (the calling thread is set to them for creating it), not yet in
 * the cache. NULL when out of memory (recorded in be->last_error). */
static prim *prim_new(nas_backend *be, const char *what, int kind, const int64_t key[MAX_KEY],
                      int nthr)
{
    prim *p = calloc(1, sizeof *p);
    if (!p) {
        nas__backend_fail(be, NAS_ENOMEM, "cpu %s: out of memory", what);
        return NULL;
    }
    p->kind = kind;
    p->prof = kind;
    p->nthr = nthr;
    p->w_arg = -1;
    memcpy(p->key, key, sizeof p->key);
    set_threads(ctx_of(be), nthr);
    return p;
}

/* Append the scratchpad argument that primitive descriptor pd asks for (if
 * any) to p's arguments, growing the context's shared scratchpad. */
static int prim_scratch(nas_backend *be, const char *what, prim *p,
                        const_dnnl_primitive_desc_t pd)
{
    cpu_ctx *c = ctx_of(be);
    int rc = NAS_OK;
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sbytes = smd ? dnnl_memory_desc_get_size(smd) : 0;
    if (sbytes == 0)
        return NAS_OK;
    if (grow_bytes(&c->scratch, &c->scratch_bytes, sbytes) != NAS_OK)
        return nas__backend_fail(be, NAS_ENOMEM, "cpu %s: cannot allocate %zu-byte scratchpad",
                                 what, sbytes);
    p->args[p->nargs].arg = DNNL_ARG_SCRATCHPAD;
    DN("dnnl_memory_create",
       dnnl_memory_create(&p->args[p->nargs].memory, smd, c->engine, DNNL_MEMORY_NONE));
    p->nargs++;
    p->has_scratch = 1;
fail:
    return rc;
}

/*
 * Build a primitive from op descriptor `od` (hint: forward primitive
 * descriptor for backward ops, else NULL) with memory objects for the
 * execution arguments `arg_ids`, and add it to the cache. If `user_w` is
 * given, argument `w_index` is a convolution's weights (or their gradient,
 * to_prim 0) whose callers' format is *user_w. `what` names the op and
 * shape for error messages.
 */
static int prim_build_wa(nas_backend *be, const char *what, int kind,
                         const int64_t key[MAX_KEY], const_dnnl_op_desc_t od,
                         const_dnnl_primitive_desc_t hint, const int *arg_ids, int nargs,
                         int nthr, const dnnl_memory_desc_t *user_w, int w_index, int to_prim,
                         const_dnnl_primitive_attr_t attr, prim **out)
{
    cpu_ctx *c = ctx_of(be);
    int rc = NAS_OK;
    dnnl_primitive_desc_t pd = NULL;
    if (nargs + 1 > MAX_ARGS)
        return nas__backend_fail(be, NAS_EBACKEND, "cpu %s: %d arguments exceed MAX_ARGS", what,
                                 nargs);
    prim *p = prim_new(be, what, kind, key, nthr);
    if (!p)
        return NAS_ENOMEM;
    DN("dnnl_primitive_desc_create",
       dnnl_primitive_desc_create(&pd, od, attr ? attr : c->attr, c->engine, hint));
    for (int i = 0; i < nargs; i++) {
        const dnnl_memory_desc_t *md =
            dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg_ids[i]);
        if (!md || md->ndims == 0) {
            rc = nas__backend_fail(be, NAS_EBACKEND, "cpu %s: no memory descriptor for arg %d",
                                   what, arg_ids[i]);
            goto fail;
        }
        if (user_w && i == w_index) {
            p->w_arg = i;
            rc = prim_weights(be, what, p, md, user_w, to_prim);
            if (rc)
                goto fail;
        }
        p->args[p->nargs].arg = arg_ids[i];
        DN("dnnl_memory_create",
           dnnl_memory_create(&p->args[p->nargs].memory, md, c->engine, DNNL_MEMORY_NONE));
        p->nargs++;
    }
    rc = prim_scratch(be, what, p, pd);
    if (rc)
        goto fail;
    DN("dnnl_primitive_create", dnnl_primitive_create(&p->p, pd));
    rc = cache_add(be, what, p);
    if (rc)
        goto fail;
    dnnl_primitive_desc_destroy(pd);
    *out = p;
    return NAS_OK;
fail:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    prim_destroy(p);
    return rc;
}

/* prim_build_wa with the context's default attributes. */
static int prim_build_w(nas_backend *be, const char *what, int kind, const int64_t key[MAX_KEY],
                        const_dnnl_op_desc_t od, const_dnnl_primitive_desc_t hint,
                        const int *arg_ids, int nargs, int nthr,
                        const dnnl_memory_desc_t *user_w, int w_index, int to_prim, prim **out)
{
    return prim_build_wa(be, what, kind, key, od, hint, arg_ids, nargs, nthr, user_w, w_index,
                         to_prim, NULL, out);
}

static int prim_build(nas_backend *be, const char *what, int kind, const int64_t key[MAX_KEY],
                      const_dnnl_op_desc_t od, const_dnnl_primitive_desc_t hint,
                      const int *arg_ids, int nargs, int nthr, prim **out)
{
    return prim_build_w(be, what, kind, key, od, hint, arg_ids, nargs, nthr, NULL, -1, 0, out);
}

static int run_reorder(nas_backend *be, const char *what, prim *p, void *src, void *dst)
{
    int rc = NAS_OK;
    dnnl_exec_arg_t a[2] = {{DNNL_ARG_SRC, p->wre_src}, {DNNL_ARG_DST, p->wre_dst}};
    DN("dnnl_memory_set_data_handle", dnnl_memory_set_data_handle(p->wre_src, src));
    DN("dnnl_memory_set_data_handle", dnnl_memory_set_data_handle(p->wre_dst, dst));
    DN("dnnl_primitive_execute", dnnl_primitive_execute(p->wre, ctx_of(be)->stream, 2, a));
fail:
    return rc;
}

/* Point the arguments at `bufs` (same order as at build time) and run. */
static int prim_exec(nas_backend *be, const char *what, prim *p, void *const *bufs)
{
    cpu_ctx *c = ctx_of(be);
    int rc = NAS_OK;
    PROF0;
    int user = p->nargs - p->has_scratch;
    set_threads(c, p->nthr);
    for (int i = 0; i < user; i++) {
        void *b = bufs[i];
        if (i == p->w_arg && p->wre) {
            if (p->w_to_prim) {
                rc = run_reorder(be, what, p, bufs[i], p->wbuf);
                if (rc)
                    return rc;
            }
            b = p->wbuf;
        }
        DN("dnnl_memory_set_data_handle", dnnl_memory_set_data_handle(p->args[i].memory, b));
    }
    if (p->has_scratch)
        DN("dnnl_memory_set_data_handle",
           dnnl_memory_set_data_handle(p->args[user].memory, c->scratch));
    DN("dnnl_primitive_execute", dnnl_primitive_execute(p->p, c->stream, p->nargs, p->args));
    if (p->w_arg >= 0 && p->wre && !p->w_to_prim) {
        rc = run_reorder(be, what, p, p->wbuf, bufs[p->w_arg]);
        if (rc)
            return rc;
    }
    DN("dnnl_stream_wait", dnnl_stream_wait(c->stream));
    PROF1(p->prof);
    return NAS_OK;
fail:
    return rc;
}

static int md_4d(dnnl_memory_desc_t *md, int64_t n, int64_t c, int64_t h, int64_t w,
                 dnnl_format_tag_t tag)
{
    dnnl_dims_t d = {n, c, h, w};
    return dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, tag) == dnnl_success ? 0 : -1;
}

/* Memory descriptor of an activation [n,c,h,w] in `layout` (order and type). */
static int md_act(dnnl_memory_desc_t *md, int64_t n, int64_t c, int64_t h, int64_t w, int layout)
{
    dnnl_dims_t d = {n, c, h, w};
    return dnnl_memory_desc_init_by_tag(md, 4, d, dt_of(layout), tag_of(layout)) == dnnl_success
               ? 0
               : -1;
}

/* ---- layout conversion ----------------------------------------------------------- */

/* Reorder a [n,c,h,w] tensor from layout `from` at src to layout `to` at dst. */
static int reorder(nas_backend *be, int n, int c, int h, int w, int from, const void *src,
                   int to, void *dst)
{
    cpu_ctx *cx = ctx_of(be);
    int64_t key[MAX_KEY] = {n, c, h, w, from, to};
    prim *p = cache_find(cx, PK_REORDER, key), *p_new = NULL;
    char what[120];
    int rc = NAS_OK;
    dnnl_primitive_desc_t pd = NULL;
    if (!p) {
        snprintf(what, sizeof what, "reorder [%d,%d,%d,%d] layout %d -> %d", n, c, h, w, from, to);
        dnnl_memory_desc_t smd, dmd;
        if (md_act(&smd, n, c, h, w, from) || md_act(&dmd, n, c, h, w, to))
            return nas__backend_fail(be, NAS_EBACKEND, "cpu %s: bad memory descriptor", what);
        p = p_new = prim_new(be, what, PK_REORDER, key, pick_threads(be, (size_t)n * c * h * w));
        if (!p)
            return NAS_ENOMEM;
        DN("dnnl_reorder_primitive_desc_create",
           dnnl_reorder_primitive_desc_create(&pd, &smd, cx->engine, &dmd, cx->engine, NULL));
        DN("dnnl_primitive_create", dnnl_primitive_create(&p->wre, pd));
        DN("dnnl_memory_create", dnnl_memory_create(&p->wre_src, &smd, cx->engine,
                                                     DNNL_MEMORY_NONE));
        DN("dnnl_memory_create", dnnl_memory_create(&p->wre_dst, &dmd, cx->engine,
                                                     DNNL_MEMORY_NONE));
        dnnl_primitive_desc_destroy(pd);
        pd = NULL;
        rc = cache_add(be, what, p);
        if (rc)
            goto fail;
        p_new = NULL; /* owned by the cache now */
    }
    snprintf(what, sizeof what, "reorder");
    {
        PROF0;
        set_threads(cx, p->nthr);
        rc = run_reorder(be, what, p, (void *)src, dst);
        if (!rc)
            DN("dnnl_stream_wait", dnnl_stream_wait(cx->stream));
        PROF1(PK_REORDER);
    }
    return rc;
fail:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    prim_destroy(p_new);
    return rc;
}

/* t's data in layout `want`: t->buf itself, or a copy in context buffer
 * `slot` (an input arriving in another layout). NULL on failure. */
static const float *in_layout(nas_backend *be, const nas_tensor *t, int want, int slot)
{
    if (t->layout == want)
        return CF(t);
    cpu_ctx *c = ctx_of(be);
    if (grow_bytes(&c->tmp[slot], &c->tmp_bytes[slot], t->count * sizeof(float)) != NAS_OK) {
        nas__backend_fail(be, NAS_ENOMEM, "cpu: cannot allocate a %zu-float layout buffer",
                          t->count);
        return NULL;
    }
    if (reorder(be, t->n, t->c, t->h, t->w, t->layout, t->buf, want, c->tmp[slot]))
        return NULL;
    return c->tmp[slot];
}

/* Convert t in place to layout `want` (through context buffer `slot`). */
static int to_layout(nas_backend *be, nas_tensor *t, int want, int slot)
{
    if (t->layout == want)
        return NAS_OK;
    const float *src = in_layout(be, t, want, slot);
    if (!src)
        return NAS_EBACKEND;
    memcpy(t->buf, src, t->count * sizeof(float));
    t->layout = want;
    return NAS_OK;
}

/* ---- memory --------------------------------------------------------------------- */

static int cpu_alloc(nas_backend *be, size_t bytes, void **buf)
{
    size_t rounded = (bytes + 63) & ~(size_t)63;
    *buf = aligned_alloc(64, rounded ? rounded : 64);
    return *buf ? NAS_OK : nas__backend_fail(be, NAS_ENOMEM, "cpu: cannot allocate %zu bytes",
                                             bytes);
}

static int cpu_download_tensor(nas_backend *be, const nas_tensor *t, float *dst, size_t count)
{
    if (t->layout == L_PLAIN) {
        memcpy(dst, t->buf, count * sizeof(float));
        return NAS_OK;
    }
    return reorder(be, t->n, t->c, t->h, t->w, t->layout, t->buf, L_PLAIN, dst);
}

static int cpu_zero(nas_backend *be, void *buf, size_t count)
{
    memset(buf, 0, count * sizeof(float));
    return NAS_OK;
}

/* dst = src: raw copy keeping the layout when the shapes agree, else the
 * plain order of src. */
static int cpu_copy_tensor(nas_backend *be, nas_tensor *dst, const nas_tensor *src)
{
    PROF0;
    if (same_shape(dst, src) || src->layout == L_PLAIN) {
        memmove(dst->buf, src->buf, src->count * sizeof(float));
        dst->layout = same_shape(dst, src) ? src->layout : L_PLAIN;
    } else {
        int rc = reorder(be, src->n, src->c, src->h, src->w, src->layout, src->buf, L_PLAIN,
                         dst->buf);
        if (rc)
            return rc;
        dst->layout = L_PLAIN;
    }
    PROF1(PS_COPY);
    return NAS_OK;
}

/* ---- convolution ------------------------------------------------------------------ */

/* conv_prim_g's `fused` (forward only): plain, with a bias, with a bias
 * and oneDNN's sum post-op (dst += conv + bias), with a bias and a binary
 * add post-op (dst = conv + bias + src1, src1 a tensor like dst), or with
 * a bias and an activation post-op (CONV_BIAS_ACT + nas_actfn;
 * post_op_attr); fused ones are inference primitives and fp32 only. */
enum {
    CONV_PLAIN = 0,
    CONV_BIAS = 1,
    CONV_BIAS_SUM = 2,
    CONV_BIAS_ADD = 3,
    CONV_BIAS_ACT = 8 /* + nas_actfn */
};

/* A primitive attribute with the context's scratchpad mode and the post-op
 * of a fused convolution `fused` (CONV_BIAS_SUM: a sum, dst += result;
 * CONV_BIAS_ADD: a binary add of a second tensor described by `dst`;
 * CONV_BIAS_ACT + fn: activation fn, a nas_actfn, as eltwise post-ops,
 * formulas as kernel_math.h's nas__act: ReLU; ReLU6 = clip(x, 0, 6);
 * h-swish (oneDNN 2.x's hardswish, x * relu6(x + 3) / 6); h-sigmoid =
 * clip(x / 6 + 1/2, 0, 1) as a linear then a clip post-op; sigmoid =
 * logistic). The caller destroys *out. */
static int post_op_attr(int fused, const dnnl_memory_desc_t *dst, dnnl_primitive_attr_t *out)
{
    dnnl_post_ops_t po = NULL;
    dnnl_status_t st = dnnl_primitive_attr_create(out);
    if (st == dnnl_success)
        st = dnnl_primitive_attr_set_scratchpad_mode(*out, dnnl_scratchpad_mode_user);
    if (st == dnnl_success)
        st = dnnl_post_ops_create(&po);
    if (st == dnnl_success) {
        switch (fused == CONV_BIAS_SUM ? -1 : fused == CONV_BIAS_ADD ? -2 : fused - CONV_BIAS_ACT) {
        case -1:
            st = dnnl_post_ops_append_sum(po, 1.0f);
            break;
        case -2:
            st = dnnl_post_ops_append_binary(po, dnnl_binary_add, dst);
            break;
        case NAS_FN_RELU:
            st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f);
            break;
        case NAS_FN_RELU6:
            st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip_v2, 0.0f, 6.0f);
            break;
        case NAS_FN_HSWISH:
            st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_hardswish, 0.0f, 0.0f);
            break;
        case NAS_FN_HSIGMOID:
            st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, 1.0f / 6.0f, 0.5f);
            if (st == dnnl_success)
                st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip_v2, 0.0f, 1.0f);
            break;
        default:
            st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_logistic, 0.0f, 0.0f);
        }
    }
    if (st == dnnl_success)
        st = dnnl_primitive_attr_set_post_ops(*out, po);
    if (po)
        dnnl_post_ops_destroy(po);
    if (st != dnnl_success && *out) {
        dnnl_primitive_attr_destroy(*out);
        *out = NULL;
    }
    return st == dnnl_success ? NAS_OK : NAS_EBACKEND;
}

/* 1 when the implementation oneDNN picks for op descriptor `od` is one of
 * its reference kernels (implementation name "ref:..."; plain loops, 10-100x
 * slower than the JIT ones) or the descriptor is refused, else 0. The
 * primitive descriptor is only created to be asked, then dropped. */
static int pd_is_ref(cpu_ctx *c, const_dnnl_op_desc_t od, const_dnnl_primitive_desc_t hint,
                     const_dnnl_primitive_attr_t attr)
{
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_primitive_desc_create(&pd, od, attr ? attr : c->attr, c->engine, hint) !=
        dnnl_success)
        return 1;
    const char *impl = NULL;
    int ref = dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
              !impl || strncmp(impl, "ref", 3) == 0;
    dnnl_primitive_desc_destroy(pd);
    return ref;
}

/* One attempt of conv_prim_g with activation layouts lx, ly. With `may_reject`
 * set, a descriptor that only oneDNN's reference kernel implements is
 * dropped: NAS_OK with *out NULL, so that the caller tries other layouts. */
static int conv_build(nas_backend *be, int kind, const nas_tensor *x, const nas_tensor *w,
                      const nas_tensor *y, int stride, int pad, int groups, int lx, int ly,
                      int fused,
                      const int64_t key[MAX_KEY], const char *what, int may_reject,
                      prim **out)
{
    int rc = NAS_OK;
    cpu_ctx *c = ctx_of(be);
    *out = NULL;
    dnnl_memory_desc_t src, wei, dst, user_w, dwei, bia;
    dnnl_dims_t wd = {w->n, w->c, w->h, w->w}, bd = {w->n};
    /* grouped (issue 15): weights [g, K/g, C/g, R, R], the callers' [K,C/g,R,R]
     * buffer read as goihw */
    dnnl_dims_t gwd = {groups, w->n / groups, w->c, w->h, w->w};
    int wnd = groups > 1 ? 5 : 4;
    const int64_t *wdims = groups > 1 ? gwd : wd;
    /* bf16 convolutions: bf16 weights (reordered from the fp32 masters),
     * fp32 weight gradient (oneDNN accumulates it in fp32) */
    if (md_act(&src, x->n, x->c, x->h, x->w, lx) ||
        (groups > 1 ? dnnl_memory_desc_init_by_tag(&user_w, 5, gwd, dnnl_f32, dnnl_goihw) !=
                          dnnl_success
                    : md_4d(&user_w, w->n, w->c, w->h, w->w, dnnl_oihw)) ||
        md_act(&dst, y->n, y->c, y->h, y->w, ly) ||
        dnnl_memory_desc_init_by_tag(&wei, wnd, wdims, dt_of(lx), dnnl_format_tag_any) !=
            dnnl_success ||
        dnnl_memory_desc_init_by_tag(&dwei, wnd, wdims, dnnl_f32, dnnl_format_tag_any) !=
            dnnl_success ||
        dnnl_memory_desc_init_by_tag(&bia, 1, bd, dnnl_f32, dnnl_a) != dnnl_success)
        return nas__backend_fail(be, NAS_EBACKEND, "cpu %s: bad memory descriptor", what);
    dnnl_dims_t strides = {stride, stride}, pl = {pad, pad};
    /* right padding that makes oneDNN's output extent equal ours exactly */
    dnnl_dims_t pr = {(y->h - 1) * stride + w->h - x->h - pad,
                      (y->w - 1) * stride + w->w - x->w - pad};
    dnnl_convolution_desc_t fwd_d, bwd_d;
    dnnl_primitive_desc_t hint = NULL;
    size_t work = (size_t)y->count > x->count ? y->count : x->count;
    int nthr = pick_threads(be, work);
    /* oneDNN 2.6's AMX weight-gradient kernel reduces across threads through
     * spinning barriers: on shared cores 2 threads ran it 10x slower than 1. */
    if (kind == PK_CONV_BWD_FILTER && is_bf16(lx) && nthr > 1)
        nthr = 1;
    set_threads(c, nthr);
    if (fused) { /* inference with bias; CONV_BIAS_SUM: dst += conv + bias;
                    CONV_BIAS_ADD: dst = conv + bias + src1;
                    CONV_BIAS_ACT + fn: dst = fn(conv + bias) */
        const int args[] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST,
                            DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1};
        dnnl_primitive_attr_t own = NULL;
        if (fused != CONV_BIAS && post_op_attr(fused, &dst, &own))
            return nas__backend_fail(be, NAS_EBACKEND, "cpu %s: cannot make the post-op", what);
        dnnl_status_t st = dnnl_convolution_forward_desc_init(
            &fwd_d, dnnl_forward_inference, dnnl_convolution_direct, &src, &wei, &bia, &dst,
            strides, pl, pr);
        if (st != dnnl_success)
            rc = nas__backend_fail(be, NAS_EBACKEND,
                                   "cpu %s: dnnl_convolution_forward_desc_init failed: %s", what,
                                   dnnl_status2str(st));
        else if (!(may_reject && pd_is_ref(c, &fwd_d, NULL, own))) /* own NULL: plain bias */
            rc = prim_build_wa(be, what, kind, key, &fwd_d, NULL, args,
                               fused == CONV_BIAS_ADD ? 5 : 4, nthr, &user_w, 1, 1, own, out);
        if (own)
            dnnl_primitive_attr_destroy(own);
        goto done;
    }
    DN("dnnl_convolution_forward_desc_init",
       dnnl_convolution_forward_desc_init(&fwd_d, dnnl_forward_training, dnnl_convolution_direct,
                                          &src, &wei, NULL, &dst, strides, pl, pr));
    if (kind == PK_CONV_FWD) {
        const int args[] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
        if (may_reject && pd_is_ref(c, &fwd_d, NULL, NULL))
            return NAS_OK;
        rc = prim_build_w(be, what, kind, key, &fwd_d, NULL, args, 3, nthr, &user_w, 1, 1, out);
        goto done;
    }
    DN("dnnl_primitive_desc_create",
       dnnl_primitive_desc_create(&hint, &fwd_d, NULL, c->engine, NULL));
    if (kind == PK_CONV_BWD_DATA) {
        const int args[] = {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC};
        DN("dnnl_convolution_backward_data_desc_init",
           dnnl_convolution_backward_data_desc_init(&bwd_d, dnnl_convolution_direct, &src, &wei,
                                                    &dst, strides, pl, pr));
        if (!(may_reject && pd_is_ref(c, &bwd_d, hint, NULL)))
            rc = prim_build_w(be, what, kind, key, &bwd_d, hint, args, 3, nthr, &user_w, 1, 1,
                              out);
    } else {
        const int args[] = {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS};
        DN("dnnl_convolution_backward_weights_desc_init",
           dnnl_convolution_backward_weights_desc_init(&bwd_d, dnnl_convolution_direct, &src,
                                                       &dwei, NULL, &dst, strides, pl, pr));
        if (!(may_reject && pd_is_ref(c, &bwd_d, hint, NULL)))
            rc = prim_build_w(be, what, kind, key, &bwd_d, hint, args, 3, nthr, &user_w, 2, 0,
                              out);
    }
done:
    if (rc == NAS_OK && *out) {
        (*out)->lx = lx;
        (*out)->ly = ly;
        if (groups > 1)
            (*out)->prof = PS_DW_FWD + (kind - PK_CONV_FWD);
    }
fail:
    if (hint)
        dnnl_primitive_desc_destroy(hint);
    return rc;
}

/*
 * The cached convolution primitive for geometry x[N,C,H,W] w[K,C,R,R]
 * y[N,K,Ho,Wo] whose activations are wanted in layouts lx, ly; works for
 * all three directions (the shapes are the same, only the roles differ).
 *
 * oneDNN 2.6 has optimised (JIT) kernels only for some layout pairs: on
 * x86 both activations nChw16c, both nChw8c, both nhwc or both nchw (gemm),
 * plus a plain input with a blocked output in the forward direction. A
 * pair such as an 8-channel nChw8c input with a 16-channel nChw16c output
 * (NAS-Bench-201's reduction cell 8 -> 16) or a plain 4-channel input with
 * an nChw8c output falls to the reference kernel, ~35x slower for a whole
 * network. So when the preferred pair gets a "ref" implementation the
 * primitive is built for the first of (nChw8c, nChw8c) [both channel
 * counts multiples of 8], (nhwc, nhwc), (nchw, nchw) that has an optimised
 * one; the primitive records the pair it runs in (prim.lx, prim.ly) and
 * the ops reorder inputs into it and the output back out of it.
 */
static int conv_prim_g(nas_backend *be, int kind, const nas_tensor *x, const nas_tensor *w,
                       const nas_tensor *y, int stride, int pad, int groups, int lx, int ly,
                       int fused, prim **out)
{
    int64_t key[MAX_KEY] = {x->n, x->c, x->h, x->w, w->n, w->h, y->h, y->w, stride, pad, lx, ly,
                            fused, groups};
    *out = cache_find(ctx_of(be), kind, key);
    if (*out)
        return NAS_OK;
    static const char *const names[] = {"conv2d_fwd", "conv2d_bwd_data", "conv2d_bwd_filter"};
    char what[200];
    snprintf(what, sizeof what,
             "%s%s x[%d,%d,%d,%d] w[%d,%d,%d,%d] y[%d,%d,%d,%d] stride %d pad %d groups %d%s",
             names[kind - PK_CONV_FWD], fused ? "_bias" : "", x->n, x->c, x->h, x->w, w->n, w->c,
             w->h, w->w, y->n, y->c, y->h, y->w, stride, pad, groups,
             fused == CONV_BIAS_SUM   ? " accumulate"
             : fused == CONV_BIAS_ADD ? " add"
             : fused >= CONV_BIAS_ACT ? " act"
                                      : "");
    int cand[5][2] = {{lx, ly}}, nc = 1;
    if (is_bf16(lx) || is_bf16(ly)) {
        /* a bf16 pair with only a reference kernel (e.g. channel counts
         * that are not multiples of 16 on an AMX host) runs in fp32 */
        lx = f32_of(x, lx);
        ly = f32_of(y, ly);
        cand[nc][0] = lx;
        cand[nc][1] = ly;
        nc++;
    }
    {
        if (x->c % 8 == 0 && y->c % 8 == 0 && !(lx == L_B8 && ly == L_B8)) {
            cand[nc][0] = cand[nc][1] = L_B8;
            nc++;
        }
        cand[nc][0] = cand[nc][1] = L_NHWC;
        nc++;
        if (!(lx == L_PLAIN && ly == L_PLAIN)) {
            cand[nc][0] = cand[nc][1] = L_PLAIN;
            nc++;
        }
    }
    /* a binary add post-op that only a reference kernel takes is refused
     * in every layout: the caller then runs the conv and an axpy */
    const int add = fused == CONV_BIAS_ADD;
    for (int i = 0; i < nc; i++) {
        int rc = conv_build(be, kind, x, w, y, stride, pad, groups, cand[i][0], cand[i][1],
                            fused, key,
                            what, add || i + 1 < nc, out);
        if (rc || *out)
            return rc;
    }
    return nas__backend_fail(be, add ? NAS_EUNSUPPORTED : NAS_EBACKEND,
                             "cpu %s: no %sconvolution primitive", what,
                             add ? "optimised " : "");
}

/* The buffer an op's primitive writes tensor t into when it produces layout
 * `got` and t is wanted in layout `want`: t->buf itself, or context buffer
 * `slot` (then out_done reorders it into t). NULL on failure. */
static void *out_buf(nas_backend *be, const nas_tensor *t, int got, int want, int slot)
{
    if (got == want)
        return t->buf;
    cpu_ctx *c = ctx_of(be);
    if (grow_bytes(&c->tmp[slot], &c->tmp_bytes[slot], t->count * sizeof(float)) != NAS_OK) {
        nas__backend_fail(be, NAS_ENOMEM, "cpu: cannot allocate a %zu-float layout buffer",
                          t->count);
        return NULL;
    }
    return c->tmp[slot];
}

/* Finish an output written by out_buf's rule: reorder `buf` (layout `got`)
 * into t->buf as `want` if they differ; t's layout becomes `want`. */
static int out_done(nas_backend *be, nas_tensor *t, int got, const void *buf, int want)
{
    if (got != want) {
        int rc = reorder(be, t->n, t->c, t->h, t->w, got, buf, want, t->buf);
        if (rc)
            return rc;
    }
    t->layout = want;
    return NAS_OK;
}

/* The convolution primitive of direction `kind` for geometry x -> y (as
 * conv_prim_g), wanted in the activations' preferred layouts *lx, *ly
 * (both fp32 when only one of them would be bf16). */
static int gconv_prim(nas_backend *be, int kind, const nas_tensor *x, const nas_tensor *w,
                      const nas_tensor *y, int stride, int pad, int groups, int *lx, int *ly,
                      prim **p)
{
    *lx = pref_layout(x);
    *ly = pref_layout(y);
    if (is_bf16(*lx) != is_bf16(*ly)) {
        *lx = f32_of(x, *lx);
        *ly = f32_of(y, *ly);
    }
    return conv_prim_g(be, kind, x, w, y, stride, pad, groups, *lx, *ly, CONV_PLAIN, p);
}

/* A convolution from one activation to another: forward (kind PK_CONV_FWD,
 * in = x, out = y) or backward data (PK_CONV_BWD_DATA, in = dy, out = dx).
 * `in` is read in the primitive's layout of its role; `out` is written in
 * its preferred one (through out_buf / out_done when the primitive runs in
 * another). */
static int conv_act(nas_backend *be, int kind, const nas_tensor *in, const nas_tensor *w,
                    nas_tensor *out, int stride, int pad, int groups)
{
    const int fwd = kind == PK_CONV_FWD;
    const nas_tensor *x = fwd ? in : out, *y = fwd ? out : in;
    int lx, ly;
    prim *p;
    int rc = gconv_prim(be, kind, x, w, y, stride, pad, groups, &lx, &ly, &p);
    if (rc)
        return rc;
    const int l_in = fwd ? p->lx : p->ly, got = fwd ? p->ly : p->lx, want = fwd ? ly : lx;
    const float *ib = in_layout(be, in, l_in, 0);
    void *ob = ib ? out_buf(be, out, got, want, 1) : NULL;
    if (!ob)
        return NAS_EBACKEND;
    void *const bufs[] = {(void *)ib, w->buf, ob};
    rc = prim_exec(be, fwd ? "conv2d_fwd" : "conv2d_bwd_data", p, bufs);
    return rc ? rc : out_done(be, out, got, ob, want);
}

static int cpu_gconv2d_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                           nas_tensor *y, int stride, int pad, int groups)
{
    return conv_act(be, PK_CONV_FWD, x, w, y, stride, pad, groups);
}

static int cpu_gconv2d_bwd_data(nas_backend *be, const nas_tensor *dy, const nas_tensor *w,
                                nas_tensor *dx, int stride, int pad, int groups)
{
    return conv_act(be, PK_CONV_BWD_DATA, dy, w, dx, stride, pad, groups);
}

static int cpu_gconv2d_bwd_filter(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                                  nas_tensor *dw, int stride, int pad, int groups)
{
    /* depthwise on blocked fp32 activations: our own kernel (cpu_depthwise.c) */
    if (groups > 1 && groups == x->c && dw->n == x->c && dw->c == 1 && dw->h == dw->w &&
        x->layout == dy->layout && (x->layout == L_B16 || x->layout == L_B8)) {
        PROF0;
        if (nas__cpu_dw_wgrad(CF(x), CF(dy), F(dw), x->n, x->c, x->h, x->w, dy->h, dy->w, dw->h,
                              stride, pad, x->layout == L_B16 ? 16 : 8,
                              pick_threads(be, x->count)) == 0) {
            PROF1(PS_DW_BWD_FILTER);
            return NAS_OK;
        }
    }
    /* the same on bf16 channels-last activations for R 5 and 7 (issue 34:
     * oneDNN 2.6 runs those in its generic jit_bf16 kernel, 0.3-0.6 s a
     * call on chain-se's shapes with AVX512-BF16; its 3x3 jit_dw kernel
     * was faster than ours on chain-plain) */
    if (groups > 1 && groups == x->c && dw->n == x->c && dw->c == 1 && dw->h == dw->w &&
        dw->h != 3 && is_bf16(x->layout) && is_bf16(dy->layout)) {
        PROF0;
        if (nas__cpu_dw_wgrad_bf16(x->buf, dy->buf, F(dw), x->n, x->c, x->h, x->w, dy->h,
                                   dy->w, dw->h, stride, pad, pick_threads(be, x->count)) == 0) {
            PROF1(PS_DW_BWD_FILTER);
            return NAS_OK;
        }
    }
    int lx, ly;
    prim *p;
    int rc = gconv_prim(be, PK_CONV_BWD_FILTER, x, dw, dy, stride, pad, groups, &lx, &ly, &p);
    if (rc)
        return rc;
    const float *xb = in_layout(be, x, p->lx, 0), *dyb = xb ? in_layout(be, dy, p->ly, 1) : NULL;
    if (!dyb)
        return NAS_EBACKEND;
    void *const bufs[] = {(void *)xb, (void *)dyb, dw->buf};
    return prim_exec(be, "conv2d_bwd_filter", p, bufs);
}

static int cpu_conv2d_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                          nas_tensor *y, int stride, int pad)
{
    return cpu_gconv2d_fwd(be, x, w, y, stride, pad, 1);
}

static int cpu_conv2d_bwd_data(nas_backend *be, const nas_tensor *dy, const nas_tensor *w,
                               nas_tensor *dx, int stride, int pad)
{
    return cpu_gconv2d_bwd_data(be, dy, w, dx, stride, pad, 1);
}

static int cpu_conv2d_bwd_filter(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                                 nas_tensor *dw, int stride, int pad)
{
    return cpu_gconv2d_bwd_filter(be, x, dy, dw, stride, pad, 1);
}

/* An inference convolution with a bias and the post-op `fused`
 * (CONV_BIAS, CONV_BIAS_SUM: y += ..., CONV_BIAS_ADD: + r, CONV_BIAS_ACT +
 * fn), fp32 only: x read in the primitive's layout, y written in its
 * preferred one; y's current values (CONV_BIAS_SUM) and r (CONV_BIAS_ADD)
 * are read in the primitive's dst layout, through reordered copies when it
 * runs in another. `what` names the op in errors. */
static int conv_bias_run(nas_backend *be, const char *what, const nas_tensor *x,
                         const nas_tensor *w, const nas_tensor *b, const nas_tensor *r,
                         nas_tensor *y, int stride, int pad, int groups, int fused)
{
    if (ctx_of(be)->bf16)
        return nas__backend_fail(be, NAS_EUNSUPPORTED, "cpu %s: fp32 only (precision is bf16)",
                                 what);
    const int accumulate = fused == CONV_BIAS_SUM;
    int lx = f32_of(x, pref_layout(x)), ly = f32_of(y, pref_layout(y));
    if (accumulate && to_layout(be, y, ly, 1)) /* y's current values, in the dst layout */
        return NAS_EBACKEND;
    prim *p;
    int rc = conv_prim_g(be, PK_CONV_FWD, x, w, y, stride, pad, groups, lx, ly, fused, &p);
    if (rc)
        return rc;
    const float *xb = in_layout(be, x, p->lx, 0);
    const float *rb = xb && r ? in_layout(be, r, p->ly, 2) : NULL;
    if (!xb || (r && !rb))
        return NAS_EBACKEND;
    void *yb = accumulate ? (void *)in_layout(be, y, p->ly, 1) : out_buf(be, y, p->ly, ly, 1);
    if (!yb)
        return NAS_EBACKEND;
    void *const bufs[] = {(void *)xb, w->buf, b->buf, yb, (void *)rb};
    rc = prim_exec(be, what, p, bufs);
    return rc ? rc : out_done(be, y, p->ly, yb, ly);
}

static int cpu_conv2d_fwd_fused(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                                const nas_tensor *b, nas_tensor *y, int stride, int pad,
                                int groups, int act, int accumulate)
{
    return conv_bias_run(be, "conv2d_fwd_fused", x, w, b, NULL, y, stride, pad, groups,
                         accumulate ? CONV_BIAS_SUM
                         : act >= 0 ? CONV_BIAS_ACT + act
                                    : CONV_BIAS);
}

/* y = conv(x, w) + b + r in one primitive (oneDNN's binary add post-op). */
static int cpu_conv2d_fwd_add(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                              const nas_tensor *b, const nas_tensor *r, nas_tensor *y, int stride,
                              int pad, int groups)
{
    return conv_bias_run(be, "conv2d_fwd_fused_add", x, w, b, r, y, stride, pad, groups,
                         CONV_BIAS_ADD);
}

/* ---- batch normalisation ---------------------------------------------------------- */

/* The batch-norm primitive `kind` for x in layout lx (oneDNN's fused ReLU
 * is not used: fp32 training runs a batch norm's ReLU in our own kernel,
 * trainer/cpu_bn_act.c; bf16 composes the two ops where own_bf16_bn does
 * not send it to trainer/cpu_bn_act_bf16.c). */
static int bn_prim(nas_backend *be, int kind, const nas_tensor *x, int lx, float eps, prim **out)
{
    union {
        float f;
        int32_t i;
    } e = {eps};
    int64_t key[MAX_KEY] = {x->n, x->c, x->h, x->w, e.i, lx};
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
    if (md_act(&data, x->n, x->c, x->h, x->w, lx))
        return nas__backend_fail(be, NAS_EBACKEND, "cpu %s: bad memory descriptor", what);
    const unsigned flags = dnnl_use_scale | dnnl_use_shift;
    dnnl_batch_normalization_desc_t fwd_d, bwd_d;
    dnnl_primitive_desc_t hint = NULL;
    /* oneDNN's JIT batch norm splits channel blocks between threads; with
     * fewer blocks than threads it splits N*H*W and synchronises through
     * spinning barriers, 5-10x slower than one thread on a shared machine.
     * So: at most one thread per 16-channel block. */
    int nthr = pick_threads(be, x->count);
    if (nthr > 1 && x->c / 16 < nthr)
        nthr = x->c / 16 > 1 ? x->c / 16 : 1;
    if (nthr > 1 && is_bf16(lx)) /* channels-last: split over pixels, with barriers */
        nthr = 1;
    set_threads(c, nthr);
    if (kind == PK_BN_TRAIN) {
        const int args[] = {DNNL_ARG_SRC,  DNNL_ARG_SCALE, DNNL_ARG_SHIFT,   DNNL_ARG_DST,
                            DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
        /* fp32: the statistics are ours (bn_train, nas__cpu_bn_stats), given to oneDNN */
        const unsigned own = own_stats(lx) ? dnnl_use_global_stats : 0u;
        DN("dnnl_batch_normalization_forward_desc_init",
           dnnl_batch_normalization_forward_desc_init(&fwd_d, dnnl_forward_training, &data, eps,
                                                      flags | own));
        return prim_build(be, what, kind, key, &fwd_d, NULL, args, 6, nthr, out);
    }
    if (kind == PK_BN_INFER) {
        const int args[] = {DNNL_ARG_SRC, DNNL_ARG_SCALE,    DNNL_ARG_SHIFT,
                            DNNL_ARG_MEAN, DNNL_ARG_VARIANCE, DNNL_ARG_DST};
        DN("dnnl_batch_normalization_forward_desc_init",
           dnnl_batch_normalization_forward_desc_init(&fwd_d, dnnl_forward_inference, &data, eps,
                                                      flags | dnnl_use_global_stats));
        return prim_build(be, what, kind, key, &fwd_d, NULL, args, 6, nthr, out);
    }
    /* the hint is the forward as bn_train runs it; the
     * backward itself keeps the batch-statistics terms (no use_global_stats) */
    DN("dnnl_batch_normalization_forward_desc_init",
       dnnl_batch_normalization_forward_desc_init(&fwd_d, dnnl_forward_training, &data, eps,
                                                  flags | (own_stats(lx) ? dnnl_use_global_stats
                                                                         : 0u)));
    DN("dnnl_primitive_desc_create",
       dnnl_primitive_desc_create(&hint, &fwd_d, NULL, c->engine, NULL));
    DN("dnnl_batch_normalization_backward_desc_init",
       dnnl_batch_normalization_backward_desc_init(&bwd_d, dnnl_backward, &data, &data, eps,
                                                   flags));
    {
        const int args[] = {DNNL_ARG_SRC,      DNNL_ARG_MEAN,     DNNL_ARG_VARIANCE,
                            DNNL_ARG_DIFF_DST, DNNL_ARG_SCALE,    DNNL_ARG_DIFF_SRC,
                            DNNL_ARG_DIFF_SCALE, DNNL_ARG_DIFF_SHIFT, DNNL_ARG_SHIFT};
        rc = prim_build(be, what, kind, key, &bwd_d, hint, args, 9, nthr, out);
    }
fail:
    if (hint)
        dnnl_primitive_desc_destroy(hint);
    return rc;
}

/* The batch-norm primitive `kind` for x in x's preferred layout (*lx), and
 * x's data in that layout (*xb). */
static int bn_start(nas_backend *be, int kind, const nas_tensor *x, float eps,
                    int *lx, prim **p, const float **xb)
{
    *lx = pref_layout(x);
    int rc = bn_prim(be, kind, x, *lx, eps, p);
    if (rc)
        return rc;
    *xb = in_layout(be, x, *lx, 0);
    return *xb ? NAS_OK : NAS_EBACKEND;
}

/* Training batch norm (oneDNN's normalisation with our statistics in fp32). */
static int bn_train(nas_backend *be, const nas_tensor *x, const nas_tensor *gamma,
                    const nas_tensor *beta, nas_tensor *y, nas_tensor *save_mean,
                    nas_tensor *save_invstd, nas_tensor *running_mean, nas_tensor *running_var,
                    float momentum, float eps)
{
    int lx;
    prim *p;
    const float *xb;
    int rc = bn_start(be, PK_BN_TRAIN, x, eps, &lx, &p, &xb);
    if (rc)
        return rc;
    cpu_ctx *c = ctx_of(be);
    void *const bufs[] = {(void *)xb, gamma->buf,    beta->buf,
                          y->buf,     save_mean->buf, c->var};
    if (own_stats(lx))
        nas__cpu_bn_stats(xb, x->n, x->c, x->h * x->w, block_of(lx), save_mean->buf, c->var,
                          pick_threads(be, x->count));
    y->layout = lx;
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

static int bn_act_own_fwd(nas_backend *be, int fn, const nas_tensor *x, const nas_tensor *gamma,
                          const nas_tensor *beta, nas_tensor *y, nas_tensor *ws, nas_tensor *pool,
                          nas_tensor *save_mean, nas_tensor *save_invstd,
                          nas_tensor *running_mean, nas_tensor *running_var, float momentum,
                          float eps);

/* Training batch norm: fp32 by oneDNN with our statistics (bn_train);
 * bf16 by our own kernel without an activation (trainer/cpu_bn_act_bf16.c)
 * where own_bf16_bn, else by oneDNN with its statistics. */
static int cpu_batchnorm_fwd_train(nas_backend *be, const nas_tensor *x, const nas_tensor *gamma,
                                   const nas_tensor *beta, nas_tensor *y, nas_tensor *save_mean,
                                   nas_tensor *save_invstd, nas_tensor *running_mean,
                                   nas_tensor *running_var, float momentum, float eps)
{
    if (is_bf16(pref_layout(x)) && own_bf16_bn(x))
        return bn_act_own_fwd(be, NAS__BN_IDENTITY, x, gamma, beta, y, NULL, NULL, save_mean,
                              save_invstd, running_mean, running_var, momentum, eps);
    return bn_train(be, x, gamma, beta, y, save_mean, save_invstd, running_mean,
                    running_var, momentum, eps);
}

static int cpu_batchnorm_fwd_infer(nas_backend *be, const nas_tensor *x,
                                   const nas_tensor *gamma, const nas_tensor *beta,
                                   const nas_tensor *running_mean,
                                   const nas_tensor *running_var, nas_tensor *y, float eps)
{
    int lx;
    prim *p;
    const float *xb;
    int rc = bn_start(be, PK_BN_INFER, x, eps, &lx, &p, &xb);
    if (rc)
        return rc;
    void *const bufs[] = {(void *)xb, gamma->buf, beta->buf, running_mean->buf, running_var->buf,
                          y->buf};
    y->layout = lx;
    return prim_exec(be, "batchnorm_fwd_infer", p, bufs);
}

/* Batch-norm backward by oneDNN (bf16). */
static int bn_bwd(nas_backend *be, const nas_tensor *x,
                  const nas_tensor *dy, const nas_tensor *gamma, const nas_tensor *save_mean,
                  const nas_tensor *save_invstd, nas_tensor *dx, nas_tensor *dgamma,
                  nas_tensor *dbeta)
{
    int lx;
    prim *p;
    const float *xb;
    int rc = bn_start(be, PK_BN_BWD, x, BN_BWD_EPS, &lx, &p, &xb);
    if (rc)
        return rc;
    cpu_ctx *c = ctx_of(be);
    for (int ch = 0; ch < x->c; ch++) {
        double is = CF(save_invstd)[ch];
        c->var[ch] = (float)(1.0 / (is * is) - (double)BN_BWD_EPS);
    }
    const float *dyb = in_layout(be, dy, lx, 1);
    if (!dyb)
        return NAS_EBACKEND;
    void *const bufs[] = {(void *)xb,  save_mean->buf, c->var,      (void *)dyb,
                          gamma->buf,  dx->buf,        dgamma->buf, dbeta->buf,
                          gamma->buf};
    /* oneDNN 2.6 refuses to run the use_shift backward without a SHIFT
     * argument although the gradients do not depend on it; the API has no
     * beta here, so gamma's (read-only, same-sized) buffer stands in. */
    dx->layout = lx;
    return prim_exec(be, "batchnorm_bwd", p, bufs);
}

static int bn_act_own_bwd(nas_backend *be, int fn, const nas_tensor *x, const float *beta,
                          const nas_tensor *dy, const nas_tensor *s, const nas_tensor *dpool,
                          const nas_tensor *gamma, const nas_tensor *save_mean,
                          const nas_tensor *save_invstd, nas_tensor *dx, nas_tensor *dgamma,
                          nas_tensor *dbeta, int slot);

/* Training batch norm's backward by our own kernel (no activation; fp32:
 * trainer/cpu_bn_act.c, each thread a run of consecutive channel blocks;
 * bf16 where own_bf16_bn: trainer/cpu_bn_act_bf16.c), else oneDNN's. */
static int cpu_batchnorm_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                             const nas_tensor *gamma, const nas_tensor *save_mean,
                             const nas_tensor *save_invstd, nas_tensor *dx, nas_tensor *dgamma,
                             nas_tensor *dbeta)
{
    if (is_bf16(pref_layout(x)) && !own_bf16_bn(x))
        return bn_bwd(be, x, dy, gamma, save_mean, save_invstd, dx, dgamma, dbeta);
    return bn_act_own_bwd(be, NAS__BN_IDENTITY, x, NULL, dy, NULL, NULL, gamma, save_mean,
                          save_invstd, dx, dgamma, dbeta, PK_BN_BWD);
}

/* Issue 34: batch norm + activation as one kernel: ReLU, ReLU6 and h-swish
 * by our own, on fp32 activations (blocked or plain layouts,
 * trainer/cpu_bn_act.c) and on bf16 ones where own_bf16_bn (channels-last,
 * trainer/cpu_bn_act_bf16.c); NAS_EUNSUPPORTED for other functions and
 * the other bf16 tensors, which nas_batchnorm_act_* then compose. ws
 * holds beta's C values, from which the backward recomputes BN's output. */
static int bn_act_ok(nas_backend *be, int fn, const nas_tensor *x)
{
    (void)be;
    return (fn == NAS_FN_RELU || fn == NAS_FN_RELU6 || fn == NAS_FN_HSWISH) &&
           (!is_bf16(pref_layout(x)) || own_bf16_bn(x));
}

/* Batch norm + ReLU / ReLU6 / h-swish (or NAS__BN_IDENTITY) forward by
 * nas__cpu_bn_act_fwd, or nas__cpu_bn_act_bf16_fwd for a bf16 layout, in
 * x's preferred layout; with pool (else NULL) also the mean of y over H*W
 * per image and channel (SE's squeeze, as cpu_gap_fwd); beta copied into
 * ws when ws is not NULL. The running statistics as bn_train updates them. */
static int bn_act_own_fwd(nas_backend *be, int fn, const nas_tensor *x, const nas_tensor *gamma,
                          const nas_tensor *beta, nas_tensor *y, nas_tensor *ws, nas_tensor *pool,
                          nas_tensor *save_mean, nas_tensor *save_invstd,
                          nas_tensor *running_mean, nas_tensor *running_var, float momentum,
                          float eps)
{
    PROF0;
    cpu_ctx *c = ctx_of(be);
    const int lx = pref_layout(x);
    const float *xb = in_layout(be, x, lx, 0);
    if (!xb)
        return NAS_EBACKEND;
    if (grow_bytes((void **)&c->var, &c->var_count, (size_t)x->c * sizeof(float)) != NAS_OK ||
        grow_bytes((void **)&c->bn_sums, &c->bn_sums_bytes,
                   NAS__CPU_BN_ACT_WS_BYTES(x->n, x->c)) != NAS_OK)
        return nas__backend_fail(be, NAS_ENOMEM, "cpu batchnorm_act_fwd_train: out of memory");
    const size_t hw = (size_t)x->h * x->w;
    const int nthr = pick_threads(be, x->count);
    if ((is_bf16(lx) ? nas__cpu_bn_act_bf16_fwd(fn, (const unsigned short *)xb, CF(gamma),
                                                CF(beta), y->buf, pool ? F(pool) : NULL,
                                                F(save_mean), c->var, F(save_invstd),
                                                c->bn_sums, x->n, x->c, hw, eps, nthr,
                                                NAS__BF16_AUTO)
                     : nas__cpu_bn_act_fwd(fn, xb, CF(gamma), CF(beta), F(y),
                                           pool ? F(pool) : NULL, F(save_mean), c->var,
                                           F(save_invstd), c->bn_sums, x->n, x->c, hw,
                                           block_of(lx), eps, nthr)) != 0)
        return nas__backend_fail(be, NAS_EBACKEND,
                                 "cpu batchnorm_act_fwd_train: fn %d x[%d,%d,%d,%d] refused", fn,
                                 x->n, x->c, x->h, x->w);
    if (ws) {
        memcpy(ws->buf, beta->buf, (size_t)x->c * sizeof(float));
        ws->layout = lx; /* beta, not activations; never downloaded by callers */
    }
    y->layout = lx;
    if (pool)
        pool->layout = L_PLAIN;
    const float m = (float)((size_t)x->n * x->h * x->w);
    for (int ch = 0; ch < x->c; ch++)
        nas__bn_running_update(&F(running_mean)[ch], &F(running_var)[ch], CF(save_mean)[ch],
                               c->var[ch], m, momentum);
    PROF1(fn == NAS__BN_IDENTITY ? PK_BN_TRAIN : PS_BN_ACT_FWD);
    return NAS_OK;
}

static int cpu_bn_act_fwd_train(nas_backend *be, int fn, const nas_tensor *x,
                                const nas_tensor *gamma, const nas_tensor *beta, nas_tensor *y,
                                nas_tensor *ws, nas_tensor *save_mean, nas_tensor *save_invstd,
                                nas_tensor *running_mean, nas_tensor *running_var,
                                float momentum, float eps)
{
    if (!bn_act_ok(be, fn, x))
        return NAS_EUNSUPPORTED;
    return bn_act_own_fwd(be, fn, x, gamma, beta, y, ws, NULL, save_mean, save_invstd,
                          running_mean, running_var, momentum, eps);
}

static int cpu_bn_act_se_fwd_train(nas_backend *be, int fn, const nas_tensor *x,
                                   const nas_tensor *gamma, const nas_tensor *beta, nas_tensor *y,
                                   nas_tensor *ws, nas_tensor *pool, nas_tensor *save_mean,
                                   nas_tensor *save_invstd, nas_tensor *running_mean,
                                   nas_tensor *running_var, float momentum, float eps)
{
    if (!bn_act_ok(be, fn, x))
        return NAS_EUNSUPPORTED;
    return bn_act_own_fwd(be, fn, x, gamma, beta, y, ws, pool, save_mean, save_invstd,
                          running_mean, running_var, momentum, eps);
}

/* Batch norm (+ activation fn, or NAS__BN_IDENTITY with beta NULL)
 * backward by nas__cpu_bn_act_bwd, in x's preferred layout; with s and
 * dpool (else NULL) from SE's gradients (nas_batchnorm_act_se_bwd). The
 * time goes to profile slot `slot`. */
static int bn_act_own_bwd(nas_backend *be, int fn, const nas_tensor *x, const float *beta,
                          const nas_tensor *dy, const nas_tensor *s, const nas_tensor *dpool,
                          const nas_tensor *gamma, const nas_tensor *save_mean,
                          const nas_tensor *save_invstd, nas_tensor *dx, nas_tensor *dgamma,
                          nas_tensor *dbeta, int slot)
{
    PROF0;
    const int lx = pref_layout(x);
    const float *xb = in_layout(be, x, lx, 0), *dyb = xb ? in_layout(be, dy, lx, 1) : NULL;
    if (!dyb)
        return NAS_EBACKEND;
    /* s and dpool are [N,C,1,1]: with one position per channel every fp32
     * layout stores them in plain order (block_of's formula with HW = 1) */
    if (s && (is_bf16(s->layout) || is_bf16(dpool->layout)))
        return nas__backend_fail(be, NAS_EBACKEND, "cpu batchnorm_act_se_bwd: bf16 s or dpool");
    const float *sb = s ? CF(s) : NULL, *pb = s ? CF(dpool) : NULL;
    cpu_ctx *c = ctx_of(be);
    if (grow_bytes((void **)&c->bn_sums, &c->bn_sums_bytes,
                   NAS__CPU_BN_ACT_WS_BYTES(x->n, x->c)) != NAS_OK)
        return nas__backend_fail(be, NAS_ENOMEM, "cpu batchnorm_act_bwd: out of memory");
    const size_t hw = (size_t)x->h * x->w;
    const int nthr = pick_threads(be, x->count);
    if ((is_bf16(lx) ? nas__cpu_bn_act_bf16_bwd(fn, (const unsigned short *)xb,
                                                (const unsigned short *)dyb, sb, pb, CF(gamma),
                                                beta, CF(save_mean), CF(save_invstd), dx->buf,
                                                F(dgamma), F(dbeta), c->bn_sums, x->n, x->c, hw,
                                                nthr, NAS__BF16_AUTO)
                     : nas__cpu_bn_act_bwd(fn, xb, dyb, sb, pb, CF(gamma), beta, CF(save_mean),
                                           CF(save_invstd), F(dx), F(dgamma), F(dbeta),
                                           c->bn_sums, x->n, x->c, hw, block_of(lx), nthr)) != 0)
        return nas__backend_fail(be, NAS_EBACKEND,
                                 "cpu batchnorm_act_bwd: fn %d x[%d,%d,%d,%d] refused", fn, x->n,
                                 x->c, x->h, x->w);
    dx->layout = lx;
    PROF1(slot);
    return NAS_OK;
}

static int cpu_bn_act_bwd(nas_backend *be, int fn, const nas_tensor *x, nas_tensor *ws,
                          const nas_tensor *dy, const nas_tensor *gamma,
                          const nas_tensor *save_mean, const nas_tensor *save_invstd,
                          nas_tensor *dx, nas_tensor *dgamma, nas_tensor *dbeta)
{
    if (!bn_act_ok(be, fn, x))
        return NAS_EUNSUPPORTED;
    return bn_act_own_bwd(be, fn, x, CF(ws), dy, NULL, NULL, gamma, save_mean, save_invstd, dx,
                          dgamma, dbeta, PS_BN_ACT_BWD);
}

static int cpu_bn_act_se_bwd(nas_backend *be, int fn, const nas_tensor *x, nas_tensor *ws,
                             const nas_tensor *dy, const nas_tensor *s, const nas_tensor *dpool,
                             const nas_tensor *gamma, const nas_tensor *save_mean,
                             const nas_tensor *save_invstd, nas_tensor *dx, nas_tensor *dgamma,
                             nas_tensor *dbeta)
{
    if (!bn_act_ok(be, fn, x))
        return NAS_EUNSUPPORTED;
    return bn_act_own_bwd(be, fn, x, CF(ws), dy, s, dpool, gamma, save_mean, save_invstd, dx,
                          dgamma, dbeta, PS_BN_ACT_BWD);
}

/* ---- relu and the other activations (oneDNN eltwise) ----------------------------- */

/* oneDNN eltwise algorithm of an activation (relu6 = clip_v2 [0,6];
 * hswish = hardswish; sigmoid = logistic); 0 for hsigmoid, which oneDNN 2.6
 * lacks (a plain loop). */
static int elt_alg(int fn, float *alpha, float *beta)
{
    *alpha = 0.0f;
    *beta = 0.0f;
    switch (fn) {
    case NAS_FN_RELU:
        return dnnl_eltwise_relu;
    case NAS_FN_RELU6:
        *beta = 6.0f;
        return dnnl_eltwise_clip_v2;
    case NAS_FN_HSWISH:
        return dnnl_eltwise_hardswish;
    case NAS_FN_SIGMOID:
        return dnnl_eltwise_logistic;
    default:
        return 0;
    }
}

/* 1 when activation `fn` has a oneDNN eltwise algorithm. */
static int has_elt(int fn)
{
    float alpha, beta;
    return elt_alg(fn, &alpha, &beta) != 0;
}

/* The eltwise primitive of activation `fn` on `count` flat elements.
 * `kind` is PK_RELU_FWD/BWD for the relu ops, PK_ELT_FWD/BWD for act_fwd/
 * act_bwd: the same primitives, kept apart in the cache and the profile. */
static int elt_prim(nas_backend *be, int kind, int fn, size_t count, int layout, prim **out)
{
    int64_t key[MAX_KEY] = {(int64_t)count, is_bf16(layout), fn};
    *out = cache_find(ctx_of(be), kind, key);
    if (*out)
        return NAS_OK;
    char what[96];
    snprintf(what, sizeof what, "%s fn %d [%zu elements]", prof_names[kind], fn, count);
    int rc = NAS_OK;
    float alpha, beta;
    dnnl_alg_kind_t alg = (dnnl_alg_kind_t)elt_alg(fn, &alpha, &beta);
    dnnl_memory_desc_t data;
    dnnl_dims_t d = {(int64_t)count};
    dnnl_primitive_desc_t hint = NULL; /* before the first DN: `fail` reads it */
    DN("dnnl_memory_desc_init_by_tag",
       dnnl_memory_desc_init_by_tag(&data, 1, d, dt_of(layout), dnnl_a));
    dnnl_eltwise_desc_t fwd_d, bwd_d;
    int nthr = pick_threads(be, count);
    set_threads(ctx_of(be), nthr);
    DN("dnnl_eltwise_forward_desc_init",
       dnnl_eltwise_forward_desc_init(&fwd_d, dnnl_forward_training, alg, &data, alpha, beta));
    if (kind == PK_ELT_FWD || kind == PK_RELU_FWD) {
        const int args[] = {DNNL_ARG_SRC, DNNL_ARG_DST};
        return prim_build(be, what, kind, key, &fwd_d, NULL, args, 2, nthr, out);
    }
    DN("dnnl_primitive_desc_create",
       dnnl_primitive_desc_create(&hint, &fwd_d, NULL, ctx_of(be)->engine, NULL));
    DN("dnnl_eltwise_backward_desc_init",
       dnnl_eltwise_backward_desc_init(&bwd_d, alg, &data, &data, alpha, beta));
    {
        const int args[] = {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC};
        rc = prim_build(be, what, kind, key, &bwd_d, hint, args, 3, nthr, out);
    }
fail:
    if (hint)
        dnnl_primitive_desc_destroy(hint);
    return rc;
}

/* Activations are element-wise: they run on the flat buffer in x's layout
 * (plain when shapes differ). y = fn(x) with elt_prim's primitive `kind`. */
static int elt_fwd(nas_backend *be, int kind, int fn, const nas_tensor *x, nas_tensor *y)
{
    int l = same_shape(x, y) ? x->layout : L_PLAIN;
    prim *p;
    int rc = elt_prim(be, kind, fn, x->count, l, &p);
    if (rc)
        return rc;
    const float *xb = in_layout(be, x, l, 0);
    if (!xb)
        return NAS_EBACKEND;
    void *const bufs[] = {(void *)xb, y->buf};
    y->layout = l;
    return prim_exec(be, prof_names[kind], p, bufs);
}

/* dx = dy * fn'(x), as elt_fwd. */
static int elt_bwd(nas_backend *be, int kind, int fn, const nas_tensor *x, const nas_tensor *dy,
                   nas_tensor *dx)
{
    int l = same_shape(x, dy) && same_shape(x, dx) ? x->layout : L_PLAIN;
    prim *p;
    int rc = elt_prim(be, kind, fn, x->count, l, &p);
    if (rc)
        return rc;
    const float *xb = in_layout(be, x, l, 0), *dyb = xb ? in_layout(be, dy, l, 1) : NULL;
    if (!dyb)
        return NAS_EBACKEND;
    void *const bufs[] = {(void *)xb, (void *)dyb, dx->buf};
    dx->layout = l;
    return prim_exec(be, prof_names[kind], p, bufs);
}

static int cpu_relu_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y)
{
    return elt_fwd(be, PK_RELU_FWD, NAS_FN_RELU, x, y);
}

static int cpu_relu_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                        nas_tensor *dx)
{
    return elt_bwd(be, PK_RELU_BWD, NAS_FN_RELU, x, dy, dx);
}

/* ---- pooling ------------------------------------------------------------------------- */

static int pool_prim(nas_backend *be, int kind, const nas_tensor *x, const nas_tensor *y, int k,
                     int stride, int pad, int lx, int ly, prim **out)
{
    int64_t key[MAX_KEY] = {x->n, x->c, x->h, x->w, y->h, y->w, k, stride, pad, lx, ly};
    *out = cache_find(ctx_of(be), kind, key);
    if (*out)
        return NAS_OK;
    char what[160];
    snprintf(what, sizeof what, "%s x[%d,%d,%d,%d] y[%d,%d,%d,%d] k %d stride %d pad %d",
             kind == PK_POOL_FWD ? "avgpool_fwd" : "avgpool_bwd", x->n, x->c, x->h, x->w, y->n,
             y->c, y->h, y->w, k, stride, pad);
    int rc = NAS_OK;
    dnnl_memory_desc_t src, dst;
    if (md_act(&src, x->n, x->c, x->h, x->w, lx) || md_act(&dst, y->n, y->c, y->h, y->w, ly))
        return nas__backend_fail(be, NAS_EBACKEND, "cpu %s: bad memory descriptor", what);
    dnnl_dims_t strides = {stride, stride}, kernel = {k, k}, pl = {pad, pad};
    dnnl_dims_t pr = {(y->h - 1) * stride + k - x->h - pad, (y->w - 1) * stride + k - x->w - pad};
    dnnl_pooling_desc_t fwd_d, bwd_d;
    dnnl_primitive_desc_t hint = NULL;
    int nthr = pick_threads(be, x->count);
    set_threads(ctx_of(be), nthr);
    DN("dnnl_pooling_forward_desc_init",
       dnnl_pooling_forward_desc_init(&fwd_d, dnnl_forward_training,
                                      dnnl_pooling_avg_exclude_padding, &src, &dst, strides,
                                      kernel, pl, pr));
    if (kind == PK_POOL_FWD) {
        const int args[] = {DNNL_ARG_SRC, DNNL_ARG_DST};
        return prim_build(be, what, kind, key, &fwd_d, NULL, args, 2, nthr, out);
    }
    DN("dnnl_primitive_desc_create",
       dnnl_primitive_desc_create(&hint, &fwd_d, NULL, ctx_of(be)->engine, NULL));
    DN("dnnl_pooling_backward_desc_init",
       dnnl_pooling_backward_desc_init(&bwd_d, dnnl_pooling_avg_exclude_padding, &src, &dst,
                                       strides, kernel, pl, pr));
    {
        const int args[] = {DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC};
        rc = prim_build(be, what, kind, key, &bwd_d, hint, args, 2, nthr, out);
    }
fail:
    if (hint)
        dnnl_primitive_desc_destroy(hint);
    return rc;
}

/* Average pooling `kind` for geometry x -> y: reads `in` (x forward, dy
 * backward), writes `out` (y forward, dx backward). Both run in their
 * preferred layout when x and y agree on it, else both plain (e.g.
 * 2x2 -> 1x1). */
static int pool_run(nas_backend *be, int kind, const nas_tensor *x, const nas_tensor *y, int k,
                    int stride, int pad, const nas_tensor *in, nas_tensor *out)
{
    int l = pref_layout(x);
    if (l != pref_layout(y))
        l = L_PLAIN;
    prim *p;
    int rc = pool_prim(be, kind, x, y, k, stride, pad, l, l, &p);
    if (rc)
        return rc;
    const float *ib = in_layout(be, in, l, 0);
    if (!ib)
        return NAS_EBACKEND;
    void *const bufs[] = {(void *)ib, out->buf};
    out->layout = l;
    return prim_exec(be, kind == PK_POOL_FWD ? "avgpool_fwd" : "avgpool_bwd", p, bufs);
}

static int cpu_avgpool_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y, int k,
                           int stride, int pad)
{
    return pool_run(be, PK_POOL_FWD, x, y, k, stride, pad, x, y);
}

static int cpu_avgpool_bwd(nas_backend *be, const nas_tensor *dy, nas_tensor *dx, int k,
                           int stride, int pad)
{
    return pool_run(be, PK_POOL_BWD, dx, dy, k, stride, pad, dy, dx);
}

/* bfloat16 <-> float: the upper 16 bits, rounded to nearest even. */
static inline float bf2f(uint16_t v)
{
    uint32_t u = (uint32_t)v << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint16_t f2bf(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN stays NaN */
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Four floats as one GCC vector (SSE on any x86-64): the channel-blocked
 * loops below run lane-wise, each lane the scalar loop's operations in
 * its order, so vectorising them changes no bit. */
typedef float v4f __attribute__((vector_size(16), aligned(4)));

/* Average pooling of one channel block of b channels (b a multiple of 4)
 * over hw positions, y[i] = (sum over s of x[s * b + i]) * inv: lanes 4g..4g+3
 * summed in a vector, position by position as the scalar loop does. */
static void gap_lanes4(const float *x, size_t hw, int b, float inv, float *y)
{
    for (int g = 0; g < b; g += 4) {
        v4f acc = {0};
        for (size_t s = 0; s < hw; s++)
            acc += *(const v4f *)(x + s * b + g);
        *(v4f *)(y + g) = acc * inv;
    }
}

/* Global average pooling over H*W, any layout of x; y[N,C] plain. */
static int cpu_gap_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y)
{
    PROF0;
    if (is_bf16(x->layout) && /* channels-last, C % 8 == 0: trainer/cpu_bn_act_bf16.c */
        nas__cpu_gap_bf16_fwd(x->buf, F(y), x->n, x->c, (size_t)x->h * x->w,
                              pick_threads(be, x->count)) == 0) {
        y->layout = L_PLAIN;
        PROF1(PS_GAP);
        return NAS_OK;
    }
    if (is_bf16(x->layout)) { /* channels-last: rows of C per pixel */
        const uint16_t *xp = x->buf;
        const size_t hw = (size_t)x->h * x->w, C = (size_t)x->c;
        for (int n = 0; n < x->n; n++) {
            float *yp = F(y) + (size_t)n * C;
            for (size_t ch = 0; ch < C; ch++)
                yp[ch] = 0.0f;
            for (size_t s = 0; s < hw; s++)
                for (size_t ch = 0; ch < C; ch++)
                    yp[ch] += bf2f(xp[((size_t)n * hw + s) * C + ch]);
            for (size_t ch = 0; ch < C; ch++)
                yp[ch] /= (float)hw;
        }
        y->layout = L_PLAIN;
        PROF1(PS_GAP);
        return NAS_OK;
    }
    const int b = block_of(x->layout), cb = x->c / b;
    const size_t hw = (size_t)x->h * x->w;
    const float inv = 1.0f / (float)hw;
    for (int n = 0; n < x->n; n++)
        for (int blk = 0; blk < cb; blk++) {
            const float *xp = CF(x) + ((size_t)n * cb + blk) * hw * b;
            float *yp = F(y) + (size_t)n * x->c + blk * b;
            if (b % 4 == 0) {
                gap_lanes4(xp, hw, b, inv, yp);
                continue;
            }
            float acc[16] = {0};
            for (size_t s = 0; s < hw; s++)
                for (int i = 0; i < b; i++)
                    acc[i] += xp[s * b + i];
            for (int i = 0; i < b; i++)
                yp[i] = acc[i] * inv;
        }
    y->layout = L_PLAIN;
    PROF1(PS_GAP);
    return NAS_OK;
}

/* dx = dy/(H*W) broadcast, written in dx's preferred layout. */
static int cpu_gap_bwd(nas_backend *be, const nas_tensor *dy, nas_tensor *dx)
{
    PROF0;
    const float *dyb = in_layout(be, dy, L_PLAIN, 0);
    if (!dyb)
        return NAS_EBACKEND;
    const int l = pref_layout(dx), b = block_of(l), cb = dx->c / b;
    const size_t hw = (size_t)dx->h * dx->w;
    const float inv = 1.0f / (float)hw;
    if (is_bf16(l) && nas__cpu_gap_bf16_bwd(dyb, dx->buf, dx->n, dx->c, hw,
                                            pick_threads(be, dx->count)) == 0) {
        dx->layout = l;
        PROF1(PS_GAP);
        return NAS_OK;
    }
    if (is_bf16(l)) {
        uint16_t *dp = dx->buf;
        const size_t C = (size_t)dx->c;
        for (int n = 0; n < dx->n; n++)
            for (size_t s = 0; s < hw; s++)
                for (size_t ch = 0; ch < C; ch++)
                    dp[((size_t)n * hw + s) * C + ch] = f2bf(dyb[(size_t)n * C + ch] * inv);
        dx->layout = l;
        PROF1(PS_GAP);
        return NAS_OK;
    }
    for (int n = 0; n < dx->n; n++)
        for (int blk = 0; blk < cb; blk++) {
            float *dp = F(dx) + ((size_t)n * cb + blk) * hw * b;
            float g[16];
            for (int i = 0; i < b; i++)
                g[i] = dyb[(size_t)n * dx->c + blk * b + i] * inv;
            for (size_t s = 0; s < hw; s++)
                for (int i = 0; i < b; i++)
                    dp[s * b + i] = g[i];
        }
    dx->layout = l;
    PROF1(PS_GAP);
    return NAS_OK;
}

/* ---- linear (OpenBLAS) ------------------------------------------------------------------ */

/* y[N,M] = x[N,K] w[M,K]^T + b: rows of y start as b, then one sgemm. */
static int cpu_linear_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                          const nas_tensor *b, nas_tensor *y)
{
    PROF0;
    const int n = x->n, m = w->n, k = (int)(x->count / (size_t)x->n);
    const float *xb = in_layout(be, x, L_PLAIN, 0);
    if (!xb)
        return NAS_EBACKEND;
    for (int i = 0; i < n; i++)
        memcpy(F(y) + (size_t)i * m, CF(b), (size_t)m * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, m, k, 1.0f, xb, k, CF(w), k, 1.0f,
                F(y), m);
    y->layout = L_PLAIN;
    PROF1(PS_LINEAR);
    return NAS_OK;
}

/* dx = dy w; dw = dy^T x; db = column sums of dy. */
static int cpu_linear_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                          const nas_tensor *dy, nas_tensor *dx, nas_tensor *dw, nas_tensor *db)
{
    PROF0;
    const int n = x->n, m = w->n, k = (int)(x->count / (size_t)x->n);
    const float *xb = in_layout(be, x, L_PLAIN, 0), *dyb = xb ? in_layout(be, dy, L_PLAIN, 1) : NULL;
    if (!dyb)
        return NAS_EBACKEND;
    if (dx) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, k, m, 1.0f, dyb, m, CF(w), k,
                    0.0f, F(dx), k);
        dx->layout = L_PLAIN;
    }
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, k, n, 1.0f, dyb, m, xb, k, 0.0f,
                F(dw), k);
    for (int j = 0; j < m; j++)
        F(db)[j] = 0.0f;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++)
            F(db)[j] += dyb[(size_t)i * m + j];
    PROF1(PS_LINEAR);
    return NAS_OK;
}

/* ---- elementwise, loss, optimiser --------------------------------------------------------- */

/* y = y + alpha*x on `count` elements of type dt_of(layout), in place,
 * with oneDNN's sum primitive (vectorised, threaded; fp32 arithmetic for
 * bf16 data). Used for large tensors: the node sums and gradient sums. */
static int sum_exec(nas_backend *be, size_t count, int layout, float alpha, const void *x,
                    void *y)
{
    cpu_ctx *c = ctx_of(be);
    union {
        float f;
        int32_t i;
    } a = {alpha};
    int64_t key[MAX_KEY] = {(int64_t)count, is_bf16(layout), a.i};
    prim *p = cache_find(c, PK_SUM, key), *p_new = NULL;
    char what[96];
    snprintf(what, sizeof what, "axpy [%zu elements]", count);
    int rc = NAS_OK;
    dnnl_primitive_desc_t pd = NULL;
    if (!p) {
        dnnl_memory_desc_t md[2];
        dnnl_dims_t d = {(int64_t)count};
        const float scales[2] = {1.0f, alpha};
        DN("dnnl_memory_desc_init_by_tag",
           dnnl_memory_desc_init_by_tag(&md[0], 1, d, dt_of(layout), dnnl_a));
        md[1] = md[0];
        p = p_new = prim_new(be, what, PK_SUM, key, pick_threads(be, count));
        if (!p)
            return NAS_ENOMEM;
        DN("dnnl_sum_primitive_desc_create",
           dnnl_sum_primitive_desc_create(&pd, &md[0], 2, scales, md, c->attr, c->engine));
        const int ids[3] = {DNNL_ARG_MULTIPLE_SRC, DNNL_ARG_MULTIPLE_SRC + 1, DNNL_ARG_DST};
        for (int i = 0; i < 3; i++) {
            p->args[i].arg = ids[i];
            DN("dnnl_memory_create",
               dnnl_memory_create(&p->args[i].memory, &md[0], c->engine, DNNL_MEMORY_NONE));
            p->nargs++;
        }
        rc = prim_scratch(be, what, p, pd);
        if (rc)
            goto fail;
        DN("dnnl_primitive_create", dnnl_primitive_create(&p->p, pd));
        dnnl_primitive_desc_destroy(pd);
        pd = NULL;
        rc = cache_add(be, what, p);
        if (rc)
            goto fail;
        p_new = NULL;
    }
    {
        void *const bufs[3] = {y, (void *)x, y};
        return prim_exec(be, what, p, bufs);
    }
fail:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    prim_destroy(p_new);
    return rc;
}

/* Element-wise ops run on raw buffers in one common layout: y's when the
 * shapes agree (x is reordered to it if needed), else plain for both. */
static int cpu_axpy(nas_backend *be, float alpha, const nas_tensor *x, nas_tensor *y)
{
    PROF0;
    int l = y->layout;
    if (!same_shape(x, y)) {
        l = L_PLAIN;
        if (to_layout(be, y, L_PLAIN, 1))
            return NAS_EBACKEND;
    }
    const float *xp = in_layout(be, x, l, 0);
    if (!xp)
        return NAS_EBACKEND;
    const size_t n = x->count;
    if (n >= SMALL_WORK)
        return sum_exec(be, n, l, alpha, xp, y->buf);
    if (is_bf16(l)) {
        const uint16_t *xh = (const uint16_t *)xp;
        uint16_t *yh = y->buf;
        for (size_t i = 0; i < n; i++)
            yh[i] = f2bf(bf2f(yh[i]) + alpha * bf2f(xh[i]));
    } else {
        float *yp = F(y);
        for (size_t i = 0; i < n; i++)
            yp[i] += alpha * xp[i];
    }
    PROF1(PS_AXPY);
    return NAS_OK;
}

static int cpu_scale(nas_backend *be, float alpha, const nas_tensor *x, nas_tensor *y)
{
    PROF0;
    int l = same_shape(x, y) ? f32_of(x, x->layout) : L_PLAIN;
    const float *xp = in_layout(be, x, l, 0);
    if (!xp)
        return NAS_EBACKEND;
    float *yp = F(y);
    for (size_t i = 0; i < x->count; i++)
        yp[i] = alpha * xp[i];
    y->layout = l;
    PROF1(PS_SCALE);
    return NAS_OK;
}

static int cpu_softmax_xent(nas_backend *be, const nas_tensor *logits, const nas_tensor *labels,
                            nas_tensor *dlogits, float *loss, int *correct)
{
    PROF0;
    const int n = logits->n, k = (int)(logits->count / (size_t)n);
    const float *lg = in_layout(be, logits, L_PLAIN, 0);
    if (!lg)
        return NAS_EBACKEND;
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
        total += nas__softmax_xent_row(lg + (size_t)i * k, k, lab, 1.0f / (float)n,
                                       dlogits ? F(dlogits) + (size_t)i * k : NULL, &am);
        right += am == lab;
    }
    if (dlogits)
        dlogits->layout = L_PLAIN;
    *loss = (float)(total / n);
    *correct = right;
    PROF1(PS_XENT);
    return NAS_OK;
}

static int cpu_sgd_step(nas_backend *be, nas_tensor *w, const nas_tensor *dw, nas_tensor *v,
                        float lr, float momentum, float wd, int nesterov)
{
    PROF0;
    /* Parameters are plain in practice; make the three agree if not. */
    int l = same_shape(w, dw) && same_shape(w, v) ? f32_of(w, w->layout) : L_PLAIN;
    if (to_layout(be, w, l, 1) || to_layout(be, v, l, 2))
        return NAS_EBACKEND;
    const float *gp = in_layout(be, dw, l, 0);
    if (!gp)
        return NAS_EBACKEND;
    float *wp = F(w), *vp = F(v);
    for (size_t i = 0; i < w->count; i++)
        nas__sgd_update(&wp[i], gp[i], &vp[i], lr, momentum, wd, nesterov);
    PROF1(PS_SGD);
    return NAS_OK;
}

static int cpu_sumsq(nas_backend *be, const nas_tensor *x, double *out)
{
    PROF0;
    double acc = 0.0;
    const float *xp = in_layout(be, x, f32_of(x, x->layout), 0);
    if (!xp)
        return NAS_EBACKEND;
    for (size_t i = 0; i < x->count; i++)
        acc += (double)xp[i] * xp[i];
    *out = acc;
    PROF1(PS_SUMSQ);
    return NAS_OK;
}

/* ---- construction -------------------------------------------------------------------------- */

static void print_profile(const cpu_ctx *c)
{
    double total = 0;
    for (int i = 0; i < PS_COUNT; i++)
        total += c->prof_s[i];
    fprintf(stderr, "cpu backend profile (%.3f s in ops):\n", total);
    for (int i = 0; i < PS_COUNT; i++)
        if (c->prof_n[i])
            fprintf(stderr, "  %-16s %8ld calls %10.3f s %5.1f%%\n", prof_names[i], c->prof_n[i],
                    c->prof_s[i], total > 0 ? 100.0 * c->prof_s[i] / total : 0.0);
}

static void cpu_destroy(nas_backend *be)
{
    cpu_ctx *c = ctx_of(be);
    if (c) {
        if (c->profile)
            print_profile(c);
        for (size_t i = 0; i < c->ncache; i++)
            prim_destroy(c->cache[i]);
        free(c->cache);
        free(c->scratch);
        for (int i = 0; i < N_TMP; i++)
            free(c->tmp[i]);
        free(c->var);
        free(c->bn_sums);
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

/* ---- chain-network ops (issue 15) ------------------------------------------------ */

/* hsigmoid, which has no oneDNN eltwise algorithm, is a plain loop, fp32
 * only; the other activations run as elt_fwd / elt_bwd. */
static int cpu_act_fwd(nas_backend *be, int fn, const nas_tensor *x, nas_tensor *y)
{
    if (has_elt(fn))
        return elt_fwd(be, PK_ELT_FWD, fn, x, y);
    PROF0;
    int l = f32_of(x, same_shape(x, y) ? x->layout : L_PLAIN);
    const float *xb = in_layout(be, x, l, 0);
    if (!xb)
        return NAS_EBACKEND;
    for (size_t i = 0; i < x->count; i++)
        F(y)[i] = nas__act(fn, xb[i]);
    y->layout = l;
    PROF1(PS_ACT_LOOP);
    return NAS_OK;
}

static int cpu_act_bwd(nas_backend *be, int fn, const nas_tensor *x, const nas_tensor *dy,
                       nas_tensor *dx)
{
    if (has_elt(fn))
        return elt_bwd(be, PK_ELT_BWD, fn, x, dy, dx);
    PROF0;
    int l = f32_of(x, same_shape(x, dy) && same_shape(x, dx) ? x->layout : L_PLAIN);
    const float *xb = in_layout(be, x, l, 0), *dyb = xb ? in_layout(be, dy, l, 1) : NULL;
    if (!dyb)
        return NAS_EBACKEND;
    for (size_t i = 0; i < x->count; i++)
        F(dx)[i] = nas__act_grad(fn, xb[i], dyb[i]);
    dx->layout = l;
    PROF1(PS_ACT_LOOP);
    return NAS_OK;
}

/* y = x * s[n,c] in x's fp32 layout (blocked or plain), by
 * nas__cpu_chscale_fwd (trainer/cpu_se.c) on the backend's threads; a bf16
 * x by nas__cpu_chscale_bf16_fwd, y bf16 in the same layout. */
static int cpu_chscale_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *s,
                           nas_tensor *y)
{
    PROF0;
    if (is_bf16(x->layout) && same_shape(x, y)) {
        const float *sb = in_layout(be, s, L_PLAIN, 1);
        if (!sb)
            return NAS_EBACKEND;
        if (nas__cpu_chscale_bf16_fwd(x->buf, sb, y->buf, x->n, x->c, (size_t)x->h * x->w,
                                      pick_threads(be, x->count), NAS__BF16_AUTO) == 0) {
            y->layout = x->layout;
            PROF1(PS_CHSCALE);
            return NAS_OK;
        }
    }
    int l = f32_of(x, x->layout);
    const float *xb = in_layout(be, x, l, 0), *sb = xb ? in_layout(be, s, L_PLAIN, 1) : NULL;
    if (!sb)
        return NAS_EBACKEND;
    if (nas__cpu_chscale_fwd(xb, sb, F(y), x->n, x->c, (size_t)x->h * x->w, block_of(l),
                             pick_threads(be, x->count)) != 0)
        return nas__backend_fail(be, NAS_EBACKEND, "cpu chscale_fwd: x[%d,%d,%d,%d] refused",
                                 x->n, x->c, x->h, x->w);
    y->layout = l;
    PROF1(PS_CHSCALE);
    return NAS_OK;
}

/* ds = sum over H*W of dy * x, dx = dy * s (dx may be NULL), by
 * nas__cpu_chscale_bwd in x's fp32 layout; for a bf16 x by
 * nas__cpu_chscale_bf16_bwd in x's layout. */
static int cpu_chscale_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *s,
                           const nas_tensor *dy, nas_tensor *dx, nas_tensor *ds)
{
    PROF0;
    if (is_bf16(x->layout)) { /* dy read in x's bf16 layout */
        const void *dyb = in_layout(be, dy, x->layout, 1);
        const float *sb = dyb ? in_layout(be, s, L_PLAIN, 2) : NULL;
        if (!sb)
            return NAS_EBACKEND;
        if (nas__cpu_chscale_bf16_bwd(x->buf, sb, dyb, dx ? dx->buf : NULL, F(ds), x->n, x->c,
                                      (size_t)x->h * x->w, pick_threads(be, x->count),
                                      NAS__BF16_AUTO) == 0) {
            if (dx)
                dx->layout = x->layout;
            ds->layout = L_PLAIN;
            PROF1(PS_CHSCALE);
            return NAS_OK;
        }
    }
    int l = f32_of(x, x->layout);
    const float *xb = in_layout(be, x, l, 0), *dyb = xb ? in_layout(be, dy, l, 1) : NULL;
    const float *sb = dyb ? in_layout(be, s, L_PLAIN, 2) : NULL;
    if (!sb)
        return NAS_EBACKEND;
    if (nas__cpu_chscale_bwd(xb, sb, dyb, dx ? F(dx) : NULL, F(ds), x->n, x->c,
                             (size_t)x->h * x->w, block_of(l), pick_threads(be, x->count)) != 0)
        return nas__backend_fail(be, NAS_EBACKEND, "cpu chscale_bwd: x[%d,%d,%d,%d] refused",
                                 x->n, x->c, x->h, x->w);
    if (dx)
        dx->layout = l;
    ds->layout = L_PLAIN;
    PROF1(PS_CHSCALE);
    return NAS_OK;
}

/* Dropout works on plain NCHW so that the keep decision of each element
 * (by its NCHW index) matches every other backend. */
static int cpu_dropout_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y, float p,
                           uint64_t seed)
{
    PROF0;
    const float *xb = in_layout(be, x, L_PLAIN, 0);
    if (!xb)
        return NAS_EBACKEND;
    float scale = 1.0f / (1.0f - p);
    for (size_t i = 0; i < x->count; i++)
        F(y)[i] = nas__dropout_keep(seed, i, p) ? xb[i] * scale : 0.0f;
    y->layout = L_PLAIN;
    PROF1(PS_DROPOUT);
    return NAS_OK;
}

static int cpu_dropout_bwd(nas_backend *be, const nas_tensor *dy, nas_tensor *dx, float p,
                           uint64_t seed)
{
    return cpu_dropout_fwd(be, dy, dx, p, seed);
}

static const nas__backend_ops cpu_ops = {
    .name = "cpu",
    .destroy = cpu_destroy,
    .sync = NULL,
    .alloc = cpu_alloc,
    .free = nas__host_free,
    .upload = nas__host_upload,
    .download = nas__host_download,
    .zero = cpu_zero,
    .copy = nas__host_copy,
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
    .gconv2d_fwd = cpu_gconv2d_fwd,
    .gconv2d_bwd_data = cpu_gconv2d_bwd_data,
    .gconv2d_bwd_filter = cpu_gconv2d_bwd_filter,
    .act_fwd = cpu_act_fwd,
    .act_bwd = cpu_act_bwd,
    .chscale_fwd = cpu_chscale_fwd,
    .chscale_bwd = cpu_chscale_bwd,
    .dropout_fwd = cpu_dropout_fwd,
    .dropout_bwd = cpu_dropout_bwd,
};

static int cpu_set_precision(nas_backend *be, const char *precision)
{
    cpu_ctx *c = ctx_of(be);
    if (strcmp(precision, "fp32") == 0) {
        c->bf16 = 0;
        return NAS_OK;
    }
    if (strcmp(precision, "bf16") == 0) {
        dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
        if (isa != dnnl_cpu_isa_avx512_core_bf16 && isa != dnnl_cpu_isa_avx512_core_amx)
            return nas__backend_fail(be, NAS_EUNSUPPORTED,
                                     "precision bf16: this CPU has neither AVX512-BF16 nor AMX");
        c->bf16 = 1;
        return NAS_OK;
    }
    if (strcmp(precision, "fp16") == 0)
        return nas__backend_fail(be, NAS_EUNSUPPORTED, "precision fp16: not supported by cpu");
    return nas__backend_fail(be, NAS_EINVAL, "unknown precision '%s' (fp32, bf16, fp16)",
                             precision);
}

/* nas__backend_set_convs: one fp32 block for the whole network, 8 when
 * convolutions with a C % 16 == 8 side exist (training) or hold at least
 * half of the MACs (inference); the rule and its measurements are in
 * backend_impl.h. The bf16 layout (nhwc for every multiple of 8) is
 * already one layout. */
static int cpu_set_convs(nas_backend *be, const nas__conv_shape *convs, int n, int train)
{
    cpu_ctx *c = ctx_of(be);
    double eight = 0, all = 0;
    int any = 0;
    for (int i = 0; i < n; i++) {
        all += convs[i].macs;
        if (convs[i].c_in % 16 == 8 || convs[i].c_out % 16 == 8) {
            eight += convs[i].macs;
            any = 1;
        }
    }
    c->plan8 = any && (train || eight >= 0.5 * all);
    return NAS_OK;
}

static const nas__backend_ext cpu_ext = {
    .download_tensor = cpu_download_tensor,
    .copy_tensor = cpu_copy_tensor,
    .set_precision = cpu_set_precision,
    .set_convs = cpu_set_convs,
    .conv2d_fwd_fused = cpu_conv2d_fwd_fused,
    .conv2d_fwd_add = cpu_conv2d_fwd_add,
    .bn_act_fwd_train = cpu_bn_act_fwd_train,
    .bn_act_bwd = cpu_bn_act_bwd,
    .bn_act_se_fwd_train = cpu_bn_act_se_fwd_train,
    .bn_act_se_bwd = cpu_bn_act_se_bwd,
};

/*
 * Create the cpu backend with `threads` threads for oneDNN (0 = OpenMP's
 * default) and one for OpenBLAS (see the threading note at the top of this
 * file).
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
    be->ext = &cpu_ext;
    be->context = c;
    be->threads = threads;
    /* AVX-512 core or later (dnnl_cpu_isa_t is a bit mask of features) */
    c->block16 = (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) ==
                 dnnl_cpu_isa_avx512_core;
    c->bf16_native = nas__cpu_bf16_native();
    const char *prof = getenv("NAS_CPU_PROFILE");
    c->profile = prof && prof[0] && strcmp(prof, "0") != 0;
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
    openblas_set_num_threads(1); /* process-wide; see the threading note at the top */
    if (threads > 0) {
        if (dnnl_version()->cpu_runtime == DNNL_RUNTIME_OMP) {
            /* libgomp is already loaded as oneDNN's dependency; this only
             * takes a reference to find omp_set_num_threads, so the backend
             * also works in a build without OpenMP flags (CMakeLists.txt
             * adds them for trainer/cpu_depthwise.c when it finds OpenMP). */
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
