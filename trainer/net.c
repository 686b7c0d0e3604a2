/*
 * trainer/net.c - NAS-Bench-201's TinyNetwork (Dong & Yang, "NAS-Bench-201:
 * Extending the Scope of Reproducible Neural Architecture Search", ICLR
 * 2020) built from a genotype on the kernel library (nas/backend.h).
 *
 * Layout follows ../shared/reference/nb201-tinynetwork-fmnist.md: stem
 * conv3x3 + BN; per stage `cells_per_stage` cells; between stages a ResNet
 * basic block with stride 2; BN-ReLU; global average pool; linear.
 *
 * The network is compiled at create time into a tape of steps over numbered
 * activations (like a tiny static autograd graph). Forward runs the tape in
 * order; backward runs it in reverse and accumulates each activation's
 * gradient (the first contribution writes, later ones nas_axpy). A node of
 * a cell with one input aliases that input; `none` edges add no step at
 * all, so they cost nothing forward or backward. Activation and gradient
 * buffers are allocated once for `max_batch` images; a forward with B <
 * max_batch uses tensor views (same buffers, n = B) kept per distinct B so
 * that each distinct shape has its own tensor structs.
 *
 * Sums without copies. An activation whose only consumer is a node sum
 * (an edge's BN or pooling output, the reduction block's two branches)
 * never needs its own gradient buffer: its gradient IS the sum's gradient,
 * so it shares the sum's gradient buffer (`grad_root`) and the backward of
 * the sum copies nothing. One such input per sum also shares the sum's
 * activation buffer (`act_root`): its producer writes straight into the
 * node, and the forward of the sum only adds the other inputs (nothing
 * else reads that input, and no backward kernel needs an op's own output).
 * Roots are resolved transitively (a node that feeds only the next node's
 * sum shares that node's buffers in turn). This removes a full read+write
 * pass per sum forward and per sum input backward. An input read by the
 * sum and by one earlier step (a residual block's input) shares the sum's
 * gradient buffer too, where that is safe (plan_residual_grads): the sum's
 * gradient is its first contribution, so it is not copied.
 *
 * Folded inference. In eval mode (train == 0) each convolution (dense,
 * grouped or depthwise) whose only consumer is a batch norm runs as one
 * nas_conv2d_fwd_fused with the batch
 * norm folded into its weights and bias (computed on the host when the
 * parameters changed: `gen` counts training forwards, SGD steps and
 * nas_net_params calls), and the batch norm step is skipped. Only the
 * batch norm reading the convolution's own output folds: one reading a
 * folded batch norm's output (the final BN when the cell's output node is
 * one edge's BN output) runs as a plain step (issue 19). When that
 * batch norm's output is a node-sum input whose gradient is shared (see
 * above) and the node's buffer has already been written by the input
 * that shares it, a dense convolution adds straight into the node
 * (oneDNN's sum post-op) and the sum step skips that input. And the folded
 * convolution (without an activation post-op) that writes the input
 * sharing the node's buffer adds one other input of the sum in the same
 * op, nas_conv2d_fwd_fused_add (oneDNN's binary add post-op): an MBConv's
 * projection adds the block's input, a cell's conv edge a skip edge. That
 * input must be complete before the convolution runs and must have a
 * buffer of its own; the sum step skips it too, unless the backend had no
 * such op (then the conv runs without it and the sum adds it). Backends without the
 * fused op (NAS_EUNSUPPORTED, e.g. the cpu backend in bf16) run the plain
 * steps instead; the folded result equals conv + batch norm up to float
 * rounding (tests/unit/test_net.c compares the two).
 * When the folded batch norm runs fused with its activation in training
 * (see "Fused batch norm" below: the activation is the next step and the
 * BN's only reader), the eval convolution also applies that activation
 * as a post-op and writes the activation's output; the activation step is
 * skipped (issue 34, item 4: an MBConv's expansion and depthwise
 * convolutions each become one op; tests/unit/test_chain_net.c). The
 * BN's output is then not written in eval forwards; nothing reads it
 * (the zero-cost proxies, which read ReLU inputs, run training forwards).
 *
 * Fused batch norm (issue 34). A batch norm whose output only the next
 * step reads, that step an activation (ReLU, h-swish, ...), runs both in
 * training forwards as one nas_batchnorm_act_fwd_train writing the
 * activation's output; the batch norm's own output buffer becomes the
 * op's workspace (beta for the cpu backend's kernel, or BN's output where
 * the backend composes the two), and
 * the backward runs nas_batchnorm_act_bwd
 * from the activation's gradient. The zero-cost proxies' identity batch
 * norm runs the two steps as before; eval forwards fold the pair into the
 * convolution before them where there is one (above), else run two steps.
 *
 * Fused squeeze-and-excitation (issue 34). When the fused activation's
 * output feeds only an SE block (a global average pool and the channel
 * scale y * s), a training forward runs nas_batchnorm_act_se_fwd_train,
 * which also writes the pool's output, and the pool step is skipped; the
 * backward then runs the channel scale's backward for ds only, skips the
 * pool's, and nas_batchnorm_act_se_bwd forms the activation's gradient
 * dy * s + dpool / (H*W) inside the batch norm's passes: the activation's
 * gradient, the pool's broadcast and their sum are never written. A
 * backend without the kernel (NAS_EUNSUPPORTED) runs the steps apart.
 */
#include <math.h>   /* sqrtf */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, realloc, free */
#include <string.h> /* memset */
#include "nas/layers.h"
#include "nas/trainer.h"
#include "trainer/backend_impl.h" /* nas__backend_fail, nas__backend_set_convs */
#include "trainer/net_impl.h"

#define BN_MOMENTUM 0.1f
#define BN_EPS 1e-5f
#define MAX_VIEW_SETS 8
/* PCG32 stream for weight initialisation ("init" in ASCII). */
#define INIT_STREAM 0x696e6974ull

enum step_kind {
    S_CONV, S_BN, S_RELU, S_POOL, S_GAP, S_LINEAR, S_SUM,
    /* issue 15, chain networks: grouped / depthwise conv (k = groups), an
     * activation (k = nas_actfn), channel scale y = x * in[0] (SE), dropout */
    S_GCONV, S_ACT, S_CHSCALE, S_DROPOUT
};

typedef struct step {
    int kind;
    int x, y;      /* activation indices (S_SUM: y only) */
    int in[4];     /* S_SUM inputs */
    int n_in;
    int w, b;      /* param indices: conv/linear weight, linear bias; BN gamma, beta */
    int rm, rv;    /* BN running mean and variance (param-table buffers) */
    int sm, si;    /* BN saved mean / inverse std (aux tensors) */
    int k, stride, pad;
    int in_place; /* S_SUM: position in in[] of the input that shares y's buffer, or -1 */
    int fold;     /* S_CONV / S_GCONV: index of the BN step folded into it in eval mode, or -1;
                     S_BN: 1 when folded into its convolution */
    int acc_sum;  /* S_CONV with fold: the sum step it adds into in eval mode, or -1 */
    int post_act; /* S_CONV / S_GCONV with fold: the activation step after the folded BN
                     that it runs as a post-op in eval mode, or -1;
                     S_RELU / S_ACT: 1 when so run by its convolution */
    unsigned acc_mask; /* S_SUM: inputs added by their folded convolution in eval mode */
    int add_sum;  /* S_CONV with fold: the sum step whose in_place input it writes with
                     another input of that sum added in the same op (add_k), or -1 */
    int add_k;    /* S_SUM: position in in[] of the input its in_place input's folded
                     convolution adds (nas_conv2d_fwd_fused_add) in eval mode, or -1;
                     add_ran: 1 when the last eval forward's convolution did add it */
    int add_ran;
    nas_tensor *fw, *fb; /* with fold: folded weights [K,C/groups,R,R] and bias [1,K,1,1] */
    int groups;   /* S_CONV (1) / S_GCONV */
    float p;      /* S_DROPOUT */
    int act;      /* S_BN: the activation step it runs in training forwards, fused
                     (nas_batchnorm_act_fwd_train), or -1; see "Fused batch norm" */
    int by_bn;    /* S_RELU / S_ACT: 1 when the preceding S_BN runs it in training */
    /* "Fused squeeze-and-excitation": S_BN with act: the S_GAP and S_CHSCALE
     * steps that alone read the activation's output, or -1; se_ran: 1 when
     * the last training forward ran them fused. S_GAP / S_CHSCALE: that
     * S_BN step, or -1. */
    int se_gap, se_scale, se_ran, se_bn;
} step;

typedef struct param {
    char name[96];
    nas_tensor *value, *grad, *mom; /* grad, mom NULL for buffers */
} param;

typedef struct act_info {
    int c, h, w;
} act_info;

typedef struct view_set {
    int batch; /* 0: unused slot */
    nas_tensor *act, *grad;
} view_set;

struct nas_net {
    nas_backend *be;
    nas_net_desc desc;
    int max_batch;

    step *steps;
    int n_steps, cap_steps;
    param *params;
    int n_params, cap_params;
    nas_tensor **aux; /* BN save_mean / save_invstd */
    int n_aux, cap_aux;
    act_info *acts; /* index 0: the input image */
    int n_acts, cap_acts;
    nas_tensor **act_buf, **grad_buf; /* max_batch masters (index 0 unused; NULL where
                                         the buffer is shared, see act_root/grad_root) */
    int *act_root, *grad_root;        /* activation whose buffer activation i uses */
    nas_tensor *scratch;              /* largest activation, for gradient sums */
    unsigned char *ginit;             /* per activation: gradient written this backward */
    int logits;                       /* activation index of the logits */

    view_set views[MAX_VIEW_SETS];
    int next_evict;
    view_set *cur;          /* views of the last forward */
    const nas_tensor *input; /* x of the last forward */
    int cur_train;
    int build_status;
    int fuse;                /* 1: eval forwards fold BN into convs; 0: the backend cannot */
    unsigned long gen;       /* parameter generation (see "Folded inference") */
    nas_tensor **stats_copy; /* per parameter: copy of a buffer (BN running statistics)
                                by nas__net_stats_save; NULL until first used */
    unsigned long fold_gen;  /* generation the folded weights were computed for; 0 = never */
    uint64_t seed;           /* creation seed (dropout masks derive from it) */
    uint64_t step;           /* training step for dropout masks (nas__net_set_step) */
    float bn_momentum;       /* of train-mode BN (BN_MOMENTUM; nas__net_set_bn_momentum) */
    int no_bn, no_dropout;   /* zero-cost proxies (nas__net_set_proxy_mode): identity steps */
    nas_tensor *input_grad;  /* non-NULL: the backward also writes d/dx of the input here */
    int bn_act_fwd;          /* 1: the last forward ran fused batch norm + activation steps */
    int bn_act_off;          /* 1: never fuse them (nas__net_set_bn_act) */
    nas__conv_shape *convs;  /* the convolutions with output H*W > 1, for
                                nas__backend_set_convs (one layout per net) */
    int n_convs;
};

/* ---- building ------------------------------------------------------------- */

static void *grow(void *p, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return p;
    int nc = *cap ? *cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    void *q = realloc(p, (size_t)nc * elem);
    if (!q)
        return NULL;
    memset((char *)q + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
    *cap = nc;
    return q;
}

static int add_act(nas_net *n, int c, int h, int w)
{
    act_info *a = grow(n->acts, &n->cap_acts, n->n_acts + 1, sizeof *a);
    if (!a) {
        n->build_status = NAS_ENOMEM;
        return 0;
    }
    n->acts = a;
    a[n->n_acts] = (act_info){c, h, w};
    return n->n_acts++;
}

static step *add_step(nas_net *n, int kind)
{
    step *s = grow(n->steps, &n->cap_steps, n->n_steps + 1, sizeof *s);
    if (!s) {
        n->build_status = NAS_ENOMEM;
        return NULL;
    }
    n->steps = s;
    step *t = &s[n->n_steps++];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->w = t->b = t->rm = t->rv = t->sm = t->si = -1;
    t->in_place = -1;
    t->fold = -1;
    t->acc_sum = -1;
    t->add_sum = t->add_k = -1;
    t->post_act = -1;
    t->act = -1;
    t->se_gap = t->se_scale = t->se_bn = -1;
    return t;
}

/* add_step for an op from activation x to activation y with window k,
 * stride, pad (0 for ops without one); NULL when the build has failed
 * (n->build_status set, now or before). */
static step *add_op(nas_net *n, int kind, int x, int y, int k, int stride, int pad)
{
    step *s = add_step(n, kind);
    if (n->build_status)
        return NULL;
    s->x = x;
    s->y = y;
    s->k = k;
    s->stride = stride;
    s->pad = pad;
    return s;
}

/* A parameter [pn,pc,ph,pw]; trainable ones get a gradient and momentum. */
static int add_param(nas_net *n, const char *name, int pn, int pc, int ph, int pw, int trainable)
{
    param *p = grow(n->params, &n->cap_params, n->n_params + 1, sizeof *p);
    if (!p) {
        n->build_status = NAS_ENOMEM;
        return -1;
    }
    n->params = p;
    param *q = &p[n->n_params];
    snprintf(q->name, sizeof q->name, "%s", name);
    int rc = nas_tensor_create(n->be, pn, pc, ph, pw, &q->value);
    if (!rc && trainable)
        rc = nas_tensor_create(n->be, pn, pc, ph, pw, &q->grad);
    if (!rc && trainable)
        rc = nas_tensor_create(n->be, pn, pc, ph, pw, &q->mom);
    if (!rc && trainable)
        rc = nas_tensor_zero(q->mom);
    n->n_params++; /* even on failure, so destroy frees what was made */
    if (rc) {
        n->build_status = rc;
        return -1;
    }
    return n->n_params - 1;
}

static int add_aux(nas_net *n, int c)
{
    nas_tensor **a = grow(n->aux, &n->cap_aux, n->n_aux + 1, sizeof *a);
    if (!a) {
        n->build_status = NAS_ENOMEM;
        return -1;
    }
    n->aux = a;
    int rc = nas_tensor_create(n->be, 1, c, 1, 1, &a[n->n_aux]);
    if (rc) {
        n->build_status = rc;
        return -1;
    }
    return n->n_aux++;
}

/* Upload `count` values drawn uniformly from (-bound, bound) (or constant). */
static int fill_param(nas_net *n, int pi, nas_rng *r, float bound, float constant, int random)
{
    if (pi < 0)
        return n->build_status;
    nas_tensor *t = n->params[pi].value;
    float *h = malloc(t->count * sizeof *h);
    if (!h)
        return n->build_status = NAS_ENOMEM;
    for (size_t i = 0; i < t->count; i++)
        h[i] = random ? (2.0f * nas_rng_uniform(r) - 1.0f) * bound : constant;
    int rc = nas_tensor_upload(t, h, t->count);
    free(h);
    if (rc)
        n->build_status = rc;
    return rc;
}

/* A k x k convolution of `groups` groups (1: dense, step S_CONV; S_GCONV:
 * grouped / depthwise; either's BN may fold at eval), no bias; weight
 * [cout, C/groups, k, k] with PyTorch's default init: Kaiming uniform with
 * a = sqrt(5), bound = gain*sqrt(3/fan_in) with gain = sqrt(2/(1+a^2)),
 * i.e. 1/sqrt(fan_in), fan_in = C/groups * k * k. */
static int b_conv(nas_net *n, nas_rng *r, const char *module, int x, int cout, int k, int stride,
                  int pad, int groups, int kind)
{
    if (n->build_status)
        return 0;
    act_info in = n->acts[x];
    int ho = (in.h + 2 * pad - k) / stride + 1, wo = (in.w + 2 * pad - k) / stride + 1;
    char name[96];
    snprintf(name, sizeof name, "%s.weight", module);
    int w = add_param(n, name, cout, in.c / groups, k, k, 1);
    fill_param(n, w, r, 1.0f / sqrtf((float)(in.c / groups * k * k)), 0, 1);
    int y = add_act(n, cout, ho, wo);
    step *s = add_op(n, kind, x, y, k, stride, pad);
    if (!s)
        return 0;
    s->w = w;
    s->groups = groups;
    return y;
}

static int b_bn(nas_net *n, const char *module, int x)
{
    if (n->build_status)
        return 0;
    act_info in = n->acts[x];
    char name[96];
    int ids[4];
    static const char *const suffix[4] = {"weight", "bias", "running_mean", "running_var"};
    static const float init[4] = {1.0f, 0.0f, 0.0f, 1.0f};
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "%s.%s", module, suffix[i]);
        ids[i] = add_param(n, name, 1, in.c, 1, 1, i < 2);
        fill_param(n, ids[i], NULL, 0, init[i], 0);
    }
    int sm = add_aux(n, in.c), si = add_aux(n, in.c);
    int y = add_act(n, in.c, in.h, in.w);
    step *s = add_op(n, S_BN, x, y, 0, 0, 0);
    if (!s)
        return 0;
    s->w = ids[0];
    s->b = ids[1];
    s->rm = ids[2];
    s->rv = ids[3];
    s->sm = sm;
    s->si = si;
    return y;
}

static int b_simple(nas_net *n, int kind, int x, int k, int stride, int pad)
{
    if (n->build_status)
        return 0;
    act_info in = n->acts[x];
    int y;
    if (kind == S_POOL)
        y = add_act(n, in.c, (in.h + 2 * pad - k) / stride + 1, (in.w + 2 * pad - k) / stride + 1);
    else if (kind == S_GAP)
        y = add_act(n, in.c, 1, 1);
    else
        y = add_act(n, in.c, in.h, in.w);
    return add_op(n, kind, x, y, k, stride, pad) ? y : 0;
}

/* Node value = sum of `n_in` activations (0 inputs: zeros of shape `like`). */
static int b_sum(nas_net *n, const int *in, int n_in, int like)
{
    if (n->build_status)
        return 0;
    if (n_in == 1)
        return in[0]; /* alias: no copy */
    act_info a = n->acts[like];
    int y = add_act(n, a.c, a.h, a.w);
    step *s = add_step(n, S_SUM);
    if (n->build_status)
        return 0;
    s->y = y;
    s->n_in = n_in;
    for (int i = 0; i < n_in; i++)
        s->in[i] = in[i];
    return y;
}

/* Fully connected C -> m with bias on the flattened [N,C,1,1] input
 * (nas_linear_fwd), PyTorch's default init (bound 1/sqrt(C)). Weight
 * [m,C,1,1]; bias [m,1,1,1] (Linear), or [1,m,1,1] for an SE 1x1 conv
 * (conv_bias) so that weight files carry PyTorch's shapes. */
static int b_linear(nas_net *n, nas_rng *r, const char *module, int x, int m, int conv_bias)
{
    if (n->build_status)
        return 0;
    int k = n->acts[x].c;
    char name[96];
    snprintf(name, sizeof name, "%s.weight", module);
    int w = add_param(n, name, m, k, 1, 1, 1);
    fill_param(n, w, r, 1.0f / sqrtf((float)k), 0, 1);
    snprintf(name, sizeof name, "%s.bias", module);
    int b = conv_bias ? add_param(n, name, 1, m, 1, 1, 1) : add_param(n, name, m, 1, 1, 1, 1);
    fill_param(n, b, r, 1.0f / sqrtf((float)k), 0, 1);
    int y = add_act(n, m, 1, 1);
    step *s = add_op(n, S_LINEAR, x, y, 0, 0, 0);
    if (!s)
        return 0;
    s->w = w;
    s->b = b;
    return y;
}

/* ---- from the layer description (nas/layers.h; issue 15) ---------------------- */

static int b_act(nas_net *n, int x, int fn)
{
    if (fn == NAS_FN_RELU)
        return b_simple(n, S_RELU, x, 0, 0, 0);
    int y = b_simple(n, S_ACT, x, 0, 0, 0);
    if (!n->build_status)
        n->steps[n->n_steps - 1].k = fn;
    return y;
}

/* The kernel of a layer's activation: nas_act (nas/layers.h, the space's
 * words) to nas_actfn (nas/backend.h, the kernels'), by name, not by value.
 * NAS_ACT_NONE has no layer; anything else fails the build (NAS_EINVAL). */
static int act_fn(nas_net *n, int act)
{
    switch (act) {
    case NAS_ACT_RELU: return NAS_FN_RELU;
    case NAS_ACT_RELU6: return NAS_FN_RELU6;
    case NAS_ACT_HSWISH: return NAS_FN_HSWISH;
    default:
        if (!n->build_status)
            n->build_status = NAS_EINVAL;
        return NAS_FN_RELU;
    }
}

/* Squeeze-and-excitation (Hu et al. 2018; MobileNetV3's placement):
 * y = x * gate(fc2(relu(fc1(gap(x))))). */
static int b_se(nas_net *n, nas_rng *r, const nas_layer *l, int x)
{
    char m[96];
    int g = b_simple(n, S_GAP, x, 0, 0, 0);
    snprintf(m, sizeof m, "%s.fc1", l->name);
    g = b_linear(n, r, m, g, l->mid, 1);
    g = b_simple(n, S_RELU, g, 0, 0, 0);
    snprintf(m, sizeof m, "%s.fc2", l->name);
    g = b_linear(n, r, m, g, n->build_status ? 1 : n->acts[x].c, 1);
    g = b_act(n, g, l->gate_sigmoid ? NAS_FN_SIGMOID : NAS_FN_HSIGMOID);
    if (n->build_status)
        return 0;
    act_info a = n->acts[x];
    int y = add_act(n, a.c, a.h, a.w);
    step *s = add_op(n, S_CHSCALE, x, y, 0, 0, 0);
    if (!s)
        return 0;
    s->in[0] = g;
    s->n_in = 1;
    return y;
}

/* Build every layer of `L` (nas/layers.h) in order; act_of[i] is the
 * activation layer i produces. Parameters are named "<layer name>.weight"
 * (BN: weight, bias, running_mean, running_var; SE: .fc1/.fc2 weight and
 * bias; the classifier "classifier.weight/bias"). */
static void b_layers(nas_net *n, nas_rng *r, const nas_layers *L)
{
    int *act_of = calloc((size_t)L->n + 1, sizeof *act_of);
    if (!act_of) {
        n->build_status = NAS_ENOMEM;
        return;
    }
    for (int i = 0; i < L->n && !n->build_status; i++) {
        const nas_layer *l = &L->l[i];
        int x = l->src < 0 ? 0 : act_of[l->src], y = 0;
        switch (l->kind) {
        case NAS_LAYER_CONV:
            if (l->bias || l->groups > 1) {
                n->build_status = NAS_EUNSUPPORTED;
                break;
            }
            y = b_conv(n, r, l->name, x, l->out_c, l->kernel, l->stride, l->pad, 1, S_CONV);
            break;
        case NAS_LAYER_DWCONV:
            y = b_conv(n, r, l->name, x, l->out_c, l->kernel, l->stride, l->pad, l->in_c, S_GCONV);
            break;
        case NAS_LAYER_BN:
            y = b_bn(n, l->name, x);
            break;
        case NAS_LAYER_ACT:
            y = b_act(n, x, act_fn(n, l->act));
            break;
        case NAS_LAYER_SE:
            y = b_se(n, r, l, x);
            break;
        case NAS_LAYER_ADD: {
            int ops[3] = {l->src, l->src2, l->src3}, in[3];
            if (l->n_src < 0 || l->n_src > 3) {
                n->build_status = NAS_EINVAL;
                break;
            }
            for (int k = 0; k < l->n_src; k++)
                in[k] = ops[k] < 0 ? 0 : act_of[ops[k]];
            y = b_sum(n, in, l->n_src, x);
            break;
        }
        case NAS_LAYER_AVGPOOL:
            y = b_simple(n, S_POOL, x, l->kernel, l->stride, l->pad);
            break;
        case NAS_LAYER_POOL:
            y = b_simple(n, S_GAP, x, 0, 0, 0);
            break;
        case NAS_LAYER_DROPOUT:
            y = b_simple(n, S_DROPOUT, x, 0, 0, 0);
            if (!n->build_status)
                n->steps[n->n_steps - 1].p = (float)l->p;
            break;
        case NAS_LAYER_LINEAR:
            y = b_linear(n, r, "classifier", x, l->out_c, 0);
            break;
        default:
            n->build_status = NAS_EUNSUPPORTED;
        }
        if (!n->build_status && (n->acts[y].c * n->acts[y].h * n->acts[y].w !=
                                 l->out_c * l->out_h * l->out_w))
            n->build_status = NAS_EINVAL; /* the description's shapes disagree */
        act_of[i] = y;
    }
    if (!n->build_status)
        n->logits = act_of[L->n - 1];
    free(act_of);
}

/* ---- views ------------------------------------------------------------------ */

static void view_free(view_set *v)
{
    free(v->act);
    free(v->grad);
    memset(v, 0, sizeof *v);
}

static nas_tensor make_view(const nas_tensor *master, int batch, int c, int h, int w)
{
    nas_tensor t = *master;
    t.n = batch;
    t.c = c;
    t.h = h;
    t.w = w;
    t.count = (size_t)batch * c * h * w;
    return t;
}

static view_set *get_views(nas_net *n, int batch)
{
    for (int i = 0; i < MAX_VIEW_SETS; i++)
        if (n->views[i].batch == batch)
            return &n->views[i];
    int slot = -1;
    for (int i = 0; i < MAX_VIEW_SETS && slot < 0; i++)
        if (n->views[i].batch == 0)
            slot = i;
    if (slot < 0) {
        slot = n->next_evict;
        if (&n->views[slot] == n->cur)
            slot = (slot + 1) % MAX_VIEW_SETS;
        n->next_evict = (slot + 1) % MAX_VIEW_SETS;
        view_free(&n->views[slot]);
    }
    view_set *v = &n->views[slot];
    v->act = calloc((size_t)n->n_acts, sizeof *v->act);
    v->grad = calloc((size_t)n->n_acts, sizeof *v->grad);
    if (!v->act || !v->grad) {
        view_free(v);
        return NULL;
    }
    for (int i = 1; i < n->n_acts; i++) {
        act_info a = n->acts[i];
        v->act[i] = make_view(n->act_buf[n->act_root[i]], batch, a.c, a.h, a.w);
        v->grad[i] = make_view(n->grad_buf[n->grad_root[i]], batch, a.c, a.h, a.w);
    }
    v->batch = batch;
    return v;
}

/* ---- buffer sharing ------------------------------------------------------------ */

static int root_of(const int *root, int i)
{
    while (root[i] != i)
        i = root[i];
    return i;
}

/* A new array (the caller frees it) of the step writing each activation,
 * -1 for none (the input), or NULL when out of memory. */
static int *producers(const nas_net *n)
{
    int *prod = malloc((size_t)n->n_acts * sizeof *prod);
    if (!prod)
        return NULL;
    for (int a = 0; a < n->n_acts; a++)
        prod[a] = -1;
    for (int si = 0; si < n->n_steps; si++)
        prod[n->steps[si].y] = si;
    return prod;
}

/* Which conv -> BN pairs fold in eval mode, which of them add straight
 * into a node sum (acc_sum), and which add another input of the sum whose
 * shared buffer they write (add_sum; see "Folded inference" in the header
 * comment). */
static void plan_folding(nas_net *n, const int *uses)
{
    int *prod = producers(n);
    if (!prod) {
        n->fuse = 0;
        return;
    }
    for (int si = 0; si < n->n_steps; si++) {
        step *b = &n->steps[si];
        if (b->kind != S_BN || b->x == 0 || uses[b->x] != 1 || prod[b->x] < 0)
            continue;
        step *c = &n->steps[prod[b->x]];
        /* Only into a conv that itself writes the BN's input and has no BN
         * folded yet: prod[] of a folded BN's output names its conv (below),
         * and a BN reading that output (the cell's output node is one edge's
         * BN output and `lastact` reads it) must not replace the edge's BN
         * (issue 19: eval computed lastact(conv(x)) without the edge's BN). */
        if ((c->kind != S_CONV && c->kind != S_GCONV) || c->y != b->x || c->fold >= 0)
            continue;
        c->fold = si;
        b->fold = 1;
        prod[b->y] = prod[b->x]; /* in eval mode the conv writes the BN's output */
        /* the activation the BN runs fused in training (plan_bn_act: the
         * next step, the BN's only reader) becomes the conv's post-op */
        if (b->act >= 0) {
            step *a = &n->steps[b->act];
            c->post_act = b->act;
            a->post_act = 1;
            prod[a->y] = prod[b->x];
        }
    }
    for (int si = 0; si < n->n_steps; si++) {
        step *s = &n->steps[si];
        if (s->kind != S_SUM || s->in_place < 0)
            continue;
        int first = prod[s->in[s->in_place]];
        for (int k = 0; k < s->n_in && k < 32; k++) {
            int a = s->in[k];
            if (k == s->in_place || a == 0 || uses[a] != 1 || prod[a] < 0)
                continue;
            step *c = &n->steps[prod[a]];
            /* a folded dense conv whose output only this sum reads, running
             * after the input that initialises the node's buffer, and with
             * no activation post-op (the sum reads the activation's output:
             * an accumulating conv would add it un-activated) */
            if (c->kind == S_CONV && c->fold >= 0 && c->post_act < 0 && prod[a] > first) {
                c->acc_sum = si;
                s->acc_mask |= 1u << k;
            }
        }
        /* the folded conv that writes the in_place input (an MBConv's
         * projection) adds another input (the block's input) in the same
         * op. That input must not live in the sum's buffer (act_root), and
         * its producer must run before the conv (prod[], where a folded
         * BN's output maps to its conv); no step writes a buffer between
         * its producer and its last reader, so it is intact then. */
        if (first < 0)
            continue;
        step *c = &n->steps[first];
        if ((c->kind != S_CONV && c->kind != S_GCONV) || c->fold < 0 || c->post_act >= 0 ||
            c->acc_sum >= 0 || c->add_sum >= 0)
            continue;
        for (int k = 0; k < s->n_in && k < 32; k++) {
            int a = s->in[k];
            if (k == s->in_place || (s->acc_mask >> k & 1u) || n->act_root[a] == n->act_root[s->y])
                continue;
            if (a != 0 && (prod[a] < 0 || prod[a] >= first))
                continue;
            c->add_sum = si;
            s->add_k = k;
            break;
        }
    }
    free(prod);
}

/* Which batch norms run fused with the activation after them in training
 * (see "Fused batch norm" in the header comment): the next step is an
 * activation reading the BN's output, and nothing else reads it; and the
 * activation's output has a buffer of its own (not shared with a sum that
 * reads it), since nas__net_relu_inputs reads a fused ReLU's output after
 * the forward. */
static void plan_bn_act(nas_net *n, const int *uses)
{
    for (int si = 0; si + 1 < n->n_steps; si++) {
        step *b = &n->steps[si], *a = &n->steps[si + 1];
        if (b->kind != S_BN || (a->kind != S_RELU && a->kind != S_ACT) || a->x != b->y ||
            uses[b->y] != 1 || b->y == n->logits || n->act_root[b->y] != b->y ||
            n->act_root[a->y] != a->y)
            continue;
        b->act = si + 1;
        a->by_bn = 1;
    }
}

/* Which fused batch norms also run their SE block's pool (see "Fused
 * squeeze-and-excitation"): the activation's output is read by exactly
 * two steps, an S_GAP and an S_CHSCALE scaling it (not as the scale). */
static void plan_se(nas_net *n, const int *uses)
{
    for (int si = 0; si < n->n_steps; si++) {
        step *b = &n->steps[si];
        if (b->kind != S_BN || b->act < 0 || uses[n->steps[b->act].y] != 2)
            continue;
        int y = n->steps[b->act].y, gap = -1, scale = -1;
        for (int k = b->act + 1; k < n->n_steps; k++) {
            const step *t = &n->steps[k];
            if (t->kind == S_GAP && t->x == y)
                gap = k;
            else if (t->kind == S_CHSCALE && t->x == y && t->in[0] != y)
                scale = k;
        }
        if (gap < 0 || scale < 0 || n->steps[gap].y == n->logits)
            continue;
        b->se_gap = gap;
        b->se_scale = scale;
        n->steps[gap].se_bn = n->steps[scale].se_bn = si;
    }
}

/* The earliest step whose backward reads activation a's gradient: a's
 * producer, or the batch norm that runs that producer fused (an
 * activation run by its BN, or an SE pool / channel scale whose gradient
 * the BN's backward takes). prod: the step writing each activation. */
static int grad_reader(const nas_net *n, const int *prod, int a)
{
    int r = prod[a];
    if (r < 0)
        return r;
    const step *p = &n->steps[r];
    if (p->by_bn) /* run by the batch norm before it (plan_bn_act) */
        r--;
    else if ((p->kind == S_GAP || p->kind == S_CHSCALE) && p->se_bn >= 0 && p->se_bn < r)
        r = p->se_bn;
    return r;
}

/* Residual gradients without a copy (see "Sums without copies"): an input x
 * of sum S read by exactly one other step C, earlier in the tape (a
 * residual block's input, read by the block's first op and by the sum),
 * takes S's gradient buffer as its own. S's backward, which runs first,
 * leaves dL/dS there, which is x's first contribution (formerly copied),
 * and C's backward adds its own into the same buffer (as before, through
 * the scratch and nas_axpy): the same additions in the same order, so the
 * same bits. Safe when nothing that shares S's buffer still needs dL/dS
 * after C's backward: every gradient reader of the buffer's activations
 * runs (backward) before C, that is sits after C in the tape, or is C
 * itself (a pool edge into the same node: C reads dL/dS before it adds
 * into the buffer), and when no other input has joined that buffer: the
 * other input's C adds into it too, after the sum but before x's producer
 * reads x's gradient (S = X + A + conv(X), X = pool(A): A's gradient would
 * get the conv's term). A chain of residual blocks still shares one buffer:
 * block k's sum has not joined block k-1's buffer when block k's input is
 * checked. tests/unit/test_net.c builds both refused cases. */
static int plan_residual_grads(nas_net *n, const int *uses)
{
    int *prod = producers(n);
    int *other = malloc((size_t)n->n_acts * sizeof *other); /* the non-sum reader */
    char *joined = calloc((size_t)n->n_acts, 1); /* 1: x joined a sum's buffer here */
    if (!prod || !other || !joined) {
        free(prod);
        free(other);
        free(joined);
        return NAS_ENOMEM;
    }
    for (int a = 0; a < n->n_acts; a++)
        other[a] = -1;
    for (int si = 0; si < n->n_steps; si++) {
        const step *s = &n->steps[si];
        if (s->kind != S_SUM && s->x > 0)
            other[s->x] = si;
    }
    for (int si = 0; si < n->n_steps; si++) {
        const step *s = &n->steps[si];
        if (s->kind != S_SUM)
            continue;
        for (int k = 0; k < s->n_in; k++) {
            const int x = s->in[k], c = x > 0 ? other[x] : -1;
            /* read twice: once here (not twice by this sum) and once by step
             * c, earlier, not a channel scale (whose gate gradient is
             * written, not added) */
            if (x <= 0 || uses[x] != 2 || n->grad_root[x] != x || c < 0 || c >= si ||
                n->steps[c].kind == S_CHSCALE)
                continue;
            int dup = 0;
            for (int j = 0; j < s->n_in; j++)
                dup += s->in[j] == x;
            const int root = root_of(n->grad_root, s->y);
            int ok = dup == 1 && root != x;
            for (int a = 1; a < n->n_acts && ok; a++)
                if (root_of(n->grad_root, a) == root &&
                    (grad_reader(n, prod, a) < c || joined[a]))
                    ok = 0;
            if (ok) {
                n->grad_root[x] = s->y;
                joined[x] = 1;
            }
        }
    }
    for (int i = 0; i < n->n_acts; i++)
        n->grad_root[i] = root_of(n->grad_root, i);
    free(prod);
    free(other);
    free(joined);
    return NAS_OK;
}

/* Fill act_root / grad_root (see the header comment): an activation used
 * by exactly one step, that step a sum, shares the sum's gradient buffer;
 * the first such input of each sum also shares its activation buffer; and
 * a residual input shares its sum's gradient buffer where safe
 * (plan_residual_grads). */
static int plan_sharing(nas_net *n)
{
    int *uses = calloc((size_t)n->n_acts, sizeof *uses);
    n->act_root = malloc((size_t)n->n_acts * sizeof *n->act_root);
    n->grad_root = malloc((size_t)n->n_acts * sizeof *n->grad_root);
    if (!uses || !n->act_root || !n->grad_root) {
        free(uses);
        return NAS_ENOMEM;
    }
    for (int i = 0; i < n->n_acts; i++)
        n->act_root[i] = n->grad_root[i] = i;
    uses[n->logits]++; /* read by the loss */
    for (int si = 0; si < n->n_steps; si++) {
        const step *s = &n->steps[si];
        if (s->kind == S_SUM)
            for (int k = 0; k < s->n_in; k++)
                uses[s->in[k]]++;
        else
            uses[s->x]++;
        if (s->kind == S_CHSCALE)
            uses[s->in[0]]++;
    }
    for (int si = 0; si < n->n_steps; si++) {
        step *s = &n->steps[si];
        if (s->kind != S_SUM)
            continue;
        for (int k = 0; k < s->n_in; k++) {
            int i = s->in[k];
            if (i == 0 || uses[i] != 1)
                continue;
            n->grad_root[i] = s->y;
            if (s->in_place < 0) {
                s->in_place = k;
                n->act_root[i] = s->y;
            }
        }
    }
    for (int i = 0; i < n->n_acts; i++) {
        n->act_root[i] = root_of(n->act_root, i);
        n->grad_root[i] = root_of(n->grad_root, i);
    }
    plan_bn_act(n, uses);
    plan_se(n, uses);
    plan_folding(n, uses);
    int rc = plan_residual_grads(n, uses);
    free(uses);
    return rc;
}

/* ---- create / destroy ------------------------------------------------------- */

void nas_net_destroy(nas_net *n)
{
    if (!n)
        return;
    for (int i = 0; i < n->n_params; i++) {
        nas_tensor_destroy(n->params[i].value);
        nas_tensor_destroy(n->params[i].grad);
        nas_tensor_destroy(n->params[i].mom);
    }
    for (int i = 0; i < n->n_aux; i++)
        nas_tensor_destroy(n->aux[i]);
    for (int i = 0; i < n->n_steps; i++) {
        nas_tensor_destroy(n->steps[i].fw);
        nas_tensor_destroy(n->steps[i].fb);
    }
    if (n->act_buf)
        for (int i = 0; i < n->n_acts; i++)
            nas_tensor_destroy(n->act_buf[i]);
    if (n->grad_buf)
        for (int i = 0; i < n->n_acts; i++)
            nas_tensor_destroy(n->grad_buf[i]);
    nas_tensor_destroy(n->scratch);
    for (int i = 0; i < MAX_VIEW_SETS; i++)
        view_free(&n->views[i]);
    if (n->stats_copy)
        for (int i = 0; i < n->n_params; i++)
            nas_tensor_destroy(n->stats_copy[i]);
    free(n->stats_copy);
    free(n->act_buf);
    free(n->grad_buf);
    free(n->act_root);
    free(n->grad_root);
    free(n->ginit);
    free(n->convs);
    free(n->params);
    free(n->aux);
    free(n->acts);
    free(n->steps);
    free(n);
}

/* Activation and gradient buffers for max_batch images (after building);
 * destroys n on failure. */
static int alloc_buffers(nas_net *n, int max_batch, nas_error *err)
{
    nas_backend *be = n->be;
    n->act_buf = calloc((size_t)n->n_acts, sizeof *n->act_buf);
    n->grad_buf = calloc((size_t)n->n_acts, sizeof *n->grad_buf);
    n->ginit = calloc((size_t)n->n_acts, 1);
    n->fuse = 1;
    n->gen = 1;
    n->bn_momentum = BN_MOMENTUM;
    int rc = (n->act_buf && n->grad_buf && n->ginit) ? plan_sharing(n) : NAS_ENOMEM;
    size_t biggest = 0;
    for (int i = 1; i < n->n_acts && !rc; i++) {
        act_info a = n->acts[i];
        if (n->act_root[i] == i)
            rc = nas_tensor_create(be, max_batch, a.c, a.h, a.w, &n->act_buf[i]);
        if (!rc && n->grad_root[i] == i)
            rc = nas_tensor_create(be, max_batch, a.c, a.h, a.w, &n->grad_buf[i]);
        size_t per = (size_t)a.c * a.h * a.w;
        if (per > biggest)
            biggest = per;
    }
    if (!rc)
        rc = nas_tensor_create(be, max_batch, (int)biggest, 1, 1, &n->scratch);
    if (!rc && !(n->convs = malloc(((size_t)n->n_steps + 1) * sizeof *n->convs)))
        rc = NAS_ENOMEM;
    for (int i = 0; i < n->n_steps && !rc; i++) {
        const step *s = &n->steps[i];
        const act_info y = n->acts[s->y];
        if ((s->kind != S_CONV && s->kind != S_GCONV) || (int64_t)y.h * y.w <= 1)
            continue;
        const nas_tensor *w = n->params[s->w].value; /* [K, C/groups, R, R] */
        n->convs[n->n_convs++] = (nas__conv_shape){
            .c_in = n->acts[s->x].c,
            .c_out = y.c,
            .macs = (double)y.c * y.h * y.w * w->c * w->h * w->w};
    }
    if (rc) {
        nas_net_destroy(n);
        return nas_error_set(err, rc, "allocating activations for batch %d: %s", max_batch,
                             nas_strerror(rc));
    }
    return NAS_OK;
}

/* issue 15: a chain genotype's network from its layer description. */
/* The layer description of `desc`: a chain space's (its shapes checked
 * against desc's input and classes), or the cell network's. */
static int lower(const nas_net_desc *desc, int max_batch, nas_layers *L, nas_error *err)
{
    if (max_batch <= 0)
        return nas_error_set(err, NAS_EINVAL, "bad network description (max batch %d)",
                             max_batch);
    if (!desc->space) {
        nas_space_desc d;
        memset(&d, 0, sizeof d);
        d.channels = desc->channels;
        d.stages = desc->stages;
        d.cells_per_stage = desc->cells_per_stage;
        d.in_c = desc->in_c;
        d.in_h = desc->in_h;
        d.in_w = desc->in_w;
        d.classes = desc->classes;
        return nas_cell_layers(&d, &desc->genotype, L, err);
    }
    int rc = nas_space_layers(desc->space, &desc->genotype, L, err);
    if (rc)
        return rc;
    if (L->in_c != desc->in_c || L->in_h != desc->in_h || L->in_w != desc->in_w ||
        L->classes != desc->classes || L->n < 1) {
        nas_error_set(err, NAS_EINVAL,
                      "the chain space is declared for %dx%dx%d inputs and %d classes, the "
                      "network is asked for %dx%dx%d and %d: set space.input and "
                      "space.classes to the data's",
                      L->in_c, L->in_h, L->in_w, L->classes, desc->in_c, desc->in_h, desc->in_w,
                      desc->classes);
        nas_layers_free(L);
        return NAS_EINVAL;
    }
    return NAS_OK;
}

int nas_net_create(nas_backend *be, const nas_net_desc *desc, int max_batch, uint64_t seed,
                   nas_net **out, nas_error *err)
{
    if (out)
        *out = NULL;
    if (!be || !desc || !out)
        return nas_error_set(err, NAS_EINVAL, "nas_net_create: NULL argument");
    nas_layers L;
    int rc = lower(desc, max_batch, &L, err);
    if (rc)
        return rc;
    rc = nas__net_create_layers(be, desc, &L, max_batch, seed, out, err);
    nas_layers_free(&L);
    return rc;
}

int nas__net_create_layers(nas_backend *be, const nas_net_desc *desc, const nas_layers *L,
                           int max_batch, uint64_t seed, nas_net **out, nas_error *err)
{
    if (!be || !desc || !L || !out || max_batch <= 0)
        return nas_error_set(err, NAS_EINVAL, "nas__net_create_layers: bad argument");
    nas_net *n = calloc(1, sizeof *n);
    if (!n)
        return nas_error_set(err, NAS_ENOMEM, "out of memory creating the network");
    n->be = be;
    n->desc = *desc;
    n->max_batch = max_batch;
    n->seed = seed;
    nas_rng r;
    nas_rng_seed(&r, seed, INIT_STREAM);
    add_act(n, desc->in_c, desc->in_h, desc->in_w); /* 0: input */
    b_layers(n, &r, L);
    int rc;
    if (n->build_status) {
        rc = n->build_status;
        nas_net_destroy(n);
        return nas_error_set(err, rc, "building the network from its layers: %s",
                             nas_strerror(rc));
    }
    rc = alloc_buffers(n, max_batch, err);
    if (rc)
        return rc;
    *out = n;
    return NAS_OK;
}

/* ---- forward / backward ------------------------------------------------------ */

static const nas_tensor *AC(nas_net *n, int i)
{
    return i == 0 ? n->input : &n->cur->act[i];
}

#define P(i) (n->params[(i)].value)
#define PG(i) (n->params[(i)].grad)

/* The nas_actfn of an activation step. */
static int act_fn_of(const step *a) { return a->kind == S_RELU ? NAS_FN_RELU : a->k; }

/* 1 when a forward in mode `train` runs the folded convolutions (see
 * "Folded inference"): eval forwards, unless the backend cannot or the
 * zero-cost proxies made batch norm an identity. */
static int runs_folded(const nas_net *n, int train) { return !train && n->fuse && !n->no_bn; }

/* 1 when the last forward ran BN step b fused with its SE block's pool
 * (see "Fused squeeze-and-excitation"). */
static int se_fused(const nas_net *n, const step *b) { return n->bn_act_fwd && b->se_ran; }

/* Eval-mode conv with its folded BN: into the BN's output, or added into
 * the node sum (acc_sum) whose buffer its shared input has written, or
 * into the BN's output (the sum's shared buffer) with the sum's input
 * add_k added (add_sum; add_ran says whether the backend did it). */
static int run_folded_conv(nas_net *n, const step *s)
{
    const step *b = &n->steps[s->fold];
    nas_tensor *y = &n->cur->act[b->y];
    int acc = s->acc_sum >= 0, fn = -1;
    if (acc && s->post_act >= 0)
        return NAS_EINVAL; /* plan_folding never plans both */
    if (acc) {
        const step *sum = &n->steps[s->acc_sum];
        y = &n->cur->act[sum->y];
        y->layout = AC(n, sum->in[sum->in_place])->layout;
    } else if (s->add_sum >= 0) { /* with the sum's other input added */
        step *sum = &n->steps[s->add_sum];
        int rc = nas_conv2d_fwd_fused_add(n->be, AC(n, s->x), s->fw, s->fb,
                                          AC(n, sum->in[sum->add_k]), y, s->stride, s->pad,
                                          s->groups);
        sum->add_ran = rc == NAS_OK;
        if (rc != NAS_EUNSUPPORTED)
            return rc;
    } else if (s->post_act >= 0) { /* into the activation's output */
        const step *a = &n->steps[s->post_act];
        y = &n->cur->act[a->y];
        fn = act_fn_of(a);
    }
    return nas_conv2d_fwd_fused(n->be, AC(n, s->x), s->fw, s->fb, y, s->stride, s->pad,
                                s->groups, fn, acc);
}

/* Fold every eval-mode BN into its convolution (host arithmetic):
 * w' = w * g, b' = beta - mean * g, g = gamma / sqrt(running_var + eps). */
static int compute_folds(nas_net *n)
{
    int rc = NAS_OK;
    float *hw = NULL, *bn = NULL;
    size_t cap_w = 0, cap_c = 0;
    for (int i = 0; i < n->n_steps && !rc; i++) {
        step *s = &n->steps[i];
        if ((s->kind != S_CONV && s->kind != S_GCONV) || s->fold < 0)
            continue;
        const step *b = &n->steps[s->fold];
        const nas_tensor *w = P(s->w);
        int K = w->n;
        if (!s->fw)
            rc = nas_tensor_create(n->be, w->n, w->c, w->h, w->w, &s->fw);
        if (!rc && !s->fb)
            rc = nas_tensor_create(n->be, 1, K, 1, 1, &s->fb);
        if (!rc && (w->count > cap_w || (size_t)K > cap_c)) {
            free(hw);
            free(bn);
            cap_w = w->count > cap_w ? w->count : cap_w;
            cap_c = (size_t)K > cap_c ? (size_t)K : cap_c;
            hw = malloc(cap_w * sizeof *hw);
            bn = malloc(5 * cap_c * sizeof *bn);
            if (!hw || !bn)
                rc = NAS_ENOMEM;
        }
        if (rc)
            break;
        float *g = bn, *beta = bn + cap_c, *mean = bn + 2 * cap_c, *var = bn + 3 * cap_c,
              *bias = bn + 4 * cap_c;
        rc = nas_tensor_download(w, hw, w->count);
        if (!rc)
            rc = nas_tensor_download(P(b->w), g, (size_t)K);
        if (!rc)
            rc = nas_tensor_download(P(b->b), beta, (size_t)K);
        if (!rc)
            rc = nas_tensor_download(P(b->rm), mean, (size_t)K);
        if (!rc)
            rc = nas_tensor_download(P(b->rv), var, (size_t)K);
        if (rc)
            break;
        size_t per = w->count / (size_t)K;
        for (int k = 0; k < K; k++) {
            g[k] = g[k] / sqrtf(var[k] + BN_EPS);
            bias[k] = beta[k] - mean[k] * g[k];
            for (size_t j = 0; j < per; j++)
                hw[(size_t)k * per + j] *= g[k];
        }
        rc = nas_tensor_upload(s->fw, hw, w->count);
        if (!rc)
            rc = nas_tensor_upload(s->fb, bias, (size_t)K);
    }
    free(hw);
    free(bn);
    if (!rc)
        n->fold_gen = n->gen;
    return rc;
}

/* Dropout mask seed of step s at the current training step: a function of
 * the net's seed, the step index in the tape and the training step, so a
 * resumed run draws the same masks (nas__net_set_step). */
static uint64_t drop_seed(const nas_net *n, const step *s)
{
    return nas_rng_mix64(n->seed ^ ((uint64_t)(s - n->steps) << 40) ^ (n->step * NAS_RNG_GOLDEN));
}

static int run_step(nas_net *n, const step *s, int train)
{
    nas_backend *be = n->be;
    nas_tensor *y = &n->cur->act[s->y];
    int folded = runs_folded(n, train);
    switch (s->kind) {
    case S_CONV:
        if (folded && s->fold >= 0)
            return run_folded_conv(n, s);
        return nas_conv2d_fwd(be, AC(n, s->x), P(s->w), y, s->stride, s->pad);
    case S_BN:
        if (n->no_bn)
            return nas_tensor_copy(y, AC(n, s->x));
        if (folded && s->fold == 1)
            return NAS_OK; /* done by its convolution */
        n->steps[s - n->steps].se_ran = 0;
        if (n->bn_act_fwd && s->act >= 0) {
            const step *a = &n->steps[s->act];
            if (s->se_gap >= 0) {
                int rc = nas_batchnorm_act_se_fwd_train(
                    be, act_fn_of(a), AC(n, s->x), P(s->w), P(s->b), &n->cur->act[a->y], y,
                    &n->cur->act[n->steps[s->se_gap].y], n->aux[s->sm], n->aux[s->si], P(s->rm),
                    P(s->rv), n->bn_momentum, BN_EPS);
                n->steps[s - n->steps].se_ran = rc == NAS_OK;
                if (rc != NAS_EUNSUPPORTED)
                    return rc;
            }
            return nas_batchnorm_act_fwd_train(be, act_fn_of(a), AC(n, s->x), P(s->w), P(s->b),
                                               &n->cur->act[a->y], y, n->aux[s->sm],
                                               n->aux[s->si], P(s->rm), P(s->rv), n->bn_momentum,
                                               BN_EPS);
        }
        if (train)
            return nas_batchnorm_fwd_train(be, AC(n, s->x), P(s->w), P(s->b), y, n->aux[s->sm],
                                           n->aux[s->si], P(s->rm), P(s->rv), n->bn_momentum, BN_EPS);
        return nas_batchnorm_fwd_infer(be, AC(n, s->x), P(s->w), P(s->b), P(s->rm), P(s->rv), y,
                                       BN_EPS);
    case S_RELU:
        if ((s->by_bn && n->bn_act_fwd) || (folded && s->post_act == 1))
            return NAS_OK; /* done by its batch norm, or by its folded convolution */
        return nas_relu_fwd(be, AC(n, s->x), y);
    case S_POOL:
        return nas_avgpool_fwd(be, AC(n, s->x), y, s->k, s->stride, s->pad);
    case S_GAP:
        if (s->se_bn >= 0 && se_fused(n, &n->steps[s->se_bn]))
            return NAS_OK; /* written by its batch norm */
        return nas_gap_fwd(be, AC(n, s->x), y);
    case S_LINEAR:
        return nas_linear_fwd(be, AC(n, s->x), P(s->w), P(s->b), y);
    case S_GCONV:
        if (folded && s->fold >= 0)
            return run_folded_conv(n, s);
        return nas_gconv2d_fwd(be, AC(n, s->x), P(s->w), y, s->stride, s->pad, s->groups);
    case S_ACT:
        if ((s->by_bn && n->bn_act_fwd) || (folded && s->post_act == 1))
            return NAS_OK;
        return nas_act_fwd(be, s->k, AC(n, s->x), y);
    case S_CHSCALE:
        return nas_chscale_fwd(be, AC(n, s->x), AC(n, s->in[0]), y);
    case S_DROPOUT:
        if (!train || n->no_dropout)
            return nas_tensor_copy(y, AC(n, s->x));
        return nas_dropout_fwd(be, AC(n, s->x), y, s->p, drop_seed(n, s));
    case S_SUM: {
        if (s->n_in == 0)
            return nas_tensor_zero(y);
        int rc = NAS_OK, first = s->in_place;
        if (first >= 0) /* its producer already wrote it into y's buffer */
            y->layout = AC(n, s->in[first])->layout;
        else
            rc = nas_tensor_copy(y, AC(n, s->in[first = 0]));
        unsigned added = folded ? s->acc_mask : 0u; /* already in y */
        if (folded && s->add_k >= 0 && s->add_ran && s->add_k < 32)
            added |= 1u << s->add_k; /* added by the conv that wrote in[first] */
        for (int i = 0; i < s->n_in && !rc; i++)
            if (i != first && !(i < 32 && (added >> i & 1u)))
                rc = nas_axpy(be, 1.0f, AC(n, s->in[i]), y);
        return rc;
    }
    }
    return NAS_EINVAL;
}

int nas_net_forward(nas_net *n, const nas_tensor *x, int train, const nas_tensor **logits)
{
    if (logits)
        *logits = NULL;
    if (!n || !x || !logits)
        return NAS_EINVAL;
    if (x->n <= 0 || x->n > n->max_batch || x->c != n->desc.in_c || x->h != n->desc.in_h ||
        x->w != n->desc.in_w)
        return nas__backend_fail(n->be, NAS_EINVAL,
                                 "network input x[%d,%d,%d,%d] does not fit the network, built for "
                                 "%dx%dx%d images in batches of 1..%d",
                                 x->n, x->c, x->h, x->w, n->desc.in_c, n->desc.in_h, n->desc.in_w,
                                 n->max_batch);
    view_set *v = get_views(n, x->n);
    if (!v)
        return NAS_ENOMEM;
    int rc0 = nas__backend_set_convs(n->be, n->convs, n->n_convs, train);
    if (rc0)
        return rc0;
    n->cur = v;
    n->input = x;
    n->cur_train = train;
    n->bn_act_fwd = train && !n->no_bn && !n->bn_act_off;
    if (train)
        n->gen++; /* BN running statistics change */
    else if (n->fuse && n->fold_gen != n->gen) {
        int rc = compute_folds(n);
        if (rc)
            return rc;
    }
    for (int i = 0; i < n->n_steps; i++) {
        int rc = run_step(n, &n->steps[i], train);
        if (rc == NAS_EUNSUPPORTED && !train && n->fuse) {
            /* the backend (or its precision) has no fused conv + bias:
             * the plain steps from the start (eval forwards are pure) */
            n->fuse = 0;
            i = -1;
            continue;
        }
        if (rc)
            return rc;
    }
    *logits = &v->act[n->logits];
    return NAS_OK;
}

/* Destination for the gradient w.r.t. activation i: the gradient buffer
 * itself on the first contribution, else the scratch buffer (then added). */
static nas_tensor *grad_dst(nas_net *n, int i, nas_tensor *scratch_view)
{
    if (!n->ginit[i])
        return &n->cur->grad[i];
    act_info a = n->acts[i];
    *scratch_view = make_view(n->scratch, n->cur->batch, a.c, a.h, a.w);
    return scratch_view;
}

static int grad_done(nas_net *n, int i, nas_tensor *dst)
{
    if (i == 0) { /* the input's gradient (nas__net_set_input_grad) */
        if (dst == n->input_grad) {
            n->ginit[0] = 1;
            return NAS_OK;
        }
        return nas_axpy(n->be, 1.0f, dst, n->input_grad);
    }
    nas_tensor *g = &n->cur->grad[i];
    if (dst == g) {
        n->ginit[i] = 1;
        return NAS_OK;
    }
    return nas_axpy(n->be, 1.0f, dst, g);
}

/* Add gradient `gy` into activation i's gradient. */
static int grad_add(nas_net *n, int i, const nas_tensor *gy)
{
    nas_tensor *g = &n->cur->grad[i];
    if (!n->ginit[i]) {
        n->ginit[i] = 1;
        return nas_tensor_copy(g, gy);
    }
    return nas_axpy(n->be, 1.0f, gy, g);
}

static int zero_param_grads(nas_net *n, const step *s)
{
    int rc = NAS_OK;
    if (s->w >= 0 && PG(s->w))
        rc = nas_tensor_zero(PG(s->w));
    if (!rc && s->b >= 0 && PG(s->b))
        rc = nas_tensor_zero(PG(s->b));
    return rc;
}

/* The activation's gradient dL/dy = dy * s + dpool / (H*W) of fused BN
 * step b's SE block, written into its gradient buffer by the separate ops
 * (the channel scale's dx, the pool's backward, their sum), as the
 * unfused backward forms it; for a backend without the fused kernel. */
static int se_grad_apart(nas_net *n, const step *b)
{
    const step *c = &n->steps[b->se_scale], *g = &n->steps[b->se_gap];
    int y = n->steps[b->act].y, rc = NAS_OK;
    nas_tensor sv, *d;
    if (n->ginit[c->y]) { /* dy * s: the channel scale's forward applied to dy */
        d = grad_dst(n, y, &sv);
        rc = nas_chscale_fwd(n->be, &n->cur->grad[c->y], AC(n, c->in[0]), d);
        if (!rc)
            rc = grad_done(n, y, d);
    }
    if (!rc && n->ginit[g->y]) {
        d = grad_dst(n, y, &sv);
        rc = nas_gap_bwd(n->be, &n->cur->grad[g->y], d);
        if (!rc)
            rc = grad_done(n, y, d);
    }
    return rc;
}

/* Backward of fused BN step b whose forward also ran its SE block's pool
 * (see "Fused squeeze-and-excitation") into d, from the channel scale's
 * output gradient and the pool's. */
static int back_bn_se(nas_net *n, const step *b, nas_tensor *d)
{
    const step *c = &n->steps[b->se_scale], *g = &n->steps[b->se_gap];
    int fn = act_fn_of(&n->steps[b->act]), y = n->steps[b->act].y, rc = NAS_EUNSUPPORTED;
    if (n->ginit[c->y] && n->ginit[g->y])
        rc = nas_batchnorm_act_se_bwd(n->be, fn, AC(n, b->x), &n->cur->act[b->y],
                                      &n->cur->grad[c->y], AC(n, c->in[0]), &n->cur->grad[g->y],
                                      P(b->w), n->aux[b->sm], n->aux[b->si], d, PG(b->w),
                                      PG(b->b));
    if (rc != NAS_EUNSUPPORTED)
        return rc;
    rc = se_grad_apart(n, b);
    return rc ? rc
              : nas_batchnorm_act_bwd(n->be, fn, AC(n, b->x), &n->cur->act[b->y],
                                      &n->cur->grad[y], P(b->w), n->aux[b->sm], n->aux[b->si],
                                      d, PG(b->w), PG(b->b));
}

static int back_step(nas_net *n, const step *s)
{
    nas_backend *be = n->be;
    int fused = n->bn_act_fwd && (s->by_bn || (s->kind == S_BN && s->act >= 0));
    if (fused && s->kind != S_BN)
        return NAS_OK; /* its batch norm's backward covers it */
    int out = fused ? n->steps[s->act].y : s->y; /* the gradient this step starts from */
    /* with SE fused, the activation's gradient is formed by back_bn_se */
    int se = fused && se_fused(n, s);
    if (se ? !n->ginit[n->steps[s->se_scale].y] && !n->ginit[n->steps[s->se_gap].y]
           : !n->ginit[out])
        return zero_param_grads(n, s); /* output unused by the loss */
    if (s->kind == S_GAP && s->se_bn >= 0 && se_fused(n, &n->steps[s->se_bn]))
        return NAS_OK; /* its gradient is taken by its batch norm's backward */
    const nas_tensor *gy = &n->cur->grad[out];
    int needx = s->kind != S_SUM && s->x != 0;
    nas_tensor sv, *dx = needx ? grad_dst(n, s->x, &sv) : NULL;
    if (s->kind != S_SUM && s->x == 0 && n->input_grad) /* the input's (zero-cost) */
        dx = n->ginit[0] ? (sv = make_view(n->scratch, n->cur->batch, n->desc.in_c, n->desc.in_h,
                                           n->desc.in_w), &sv)
                         : n->input_grad;
    int rc;
    switch (s->kind) {
    case S_CONV:
        rc = nas_conv2d_bwd_filter(be, AC(n, s->x), gy, PG(s->w), s->stride, s->pad);
        if (!rc && dx)
            rc = nas_conv2d_bwd_data(be, gy, P(s->w), dx, s->stride, s->pad);
        break;
    case S_BN: {
        if (n->no_bn) { /* identity (zero-cost proxies) */
            rc = zero_param_grads(n, s);
            if (!rc && dx)
                rc = nas_tensor_copy(dx, gy);
            break;
        }
        /* The kernel always computes dx; with the input image as x it goes to scratch. */
        nas_tensor tmp;
        nas_tensor *d = dx;
        if (!d) {
            act_info a = n->acts[s->x];
            tmp = make_view(n->scratch, n->cur->batch, a.c, a.h, a.w);
            d = &tmp;
        }
        if (se)
            rc = back_bn_se(n, s, d);
        else if (fused)
            rc = nas_batchnorm_act_bwd(be, act_fn_of(&n->steps[s->act]), AC(n, s->x),
                                       &n->cur->act[s->y], gy, P(s->w), n->aux[s->sm],
                                       n->aux[s->si], d, PG(s->w), PG(s->b));
        else
            rc = nas_batchnorm_bwd(be, AC(n, s->x), gy, P(s->w), n->aux[s->sm], n->aux[s->si],
                                   d, PG(s->w), PG(s->b));
        break;
    }
    case S_RELU:
        rc = dx ? nas_relu_bwd(be, AC(n, s->x), gy, dx) : NAS_OK;
        break;
    case S_POOL:
        rc = dx ? nas_avgpool_bwd(be, gy, dx, s->k, s->stride, s->pad) : NAS_OK;
        break;
    case S_GAP:
        rc = dx ? nas_gap_bwd(be, gy, dx) : NAS_OK;
        break;
    case S_LINEAR:
        rc = nas_linear_bwd(be, AC(n, s->x), P(s->w), gy, dx, PG(s->w), PG(s->b));
        break;
    case S_GCONV:
        rc = nas_gconv2d_bwd_filter(be, AC(n, s->x), gy, PG(s->w), s->stride, s->pad, s->groups);
        if (!rc && dx)
            rc = nas_gconv2d_bwd_data(be, gy, P(s->w), dx, s->stride, s->pad, s->groups);
        break;
    case S_ACT:
        rc = dx ? nas_act_bwd(be, s->k, AC(n, s->x), gy, dx) : NAS_OK;
        break;
    case S_DROPOUT:
        if (n->no_dropout) {
            rc = dx ? nas_tensor_copy(dx, gy) : NAS_OK;
            break;
        }
        rc = dx ? nas_dropout_bwd(be, gy, dx, s->p, drop_seed(n, s)) : NAS_OK;
        break;
    case S_CHSCALE: {
        /* the gate's gradient: its only reader is this step, so it is
         * written here first (never through the scratch dx may use) */
        int g = s->in[0], se_x = s->se_bn >= 0 && se_fused(n, &n->steps[s->se_bn]);
        if (n->ginit[g])
            return NAS_EINVAL;
        /* with SE fused, dx is formed by its batch norm's backward */
        rc = nas_chscale_bwd(be, AC(n, s->x), AC(n, g), gy, se_x ? NULL : dx, &n->cur->grad[g]);
        if (!rc)
            n->ginit[g] = 1;
        if (se_x)
            return rc;
        break;
    }
    case S_SUM:
        rc = NAS_OK;
        for (int i = 0; i < s->n_in && !rc; i++) {
            int a = s->in[i];
            if (a != 0 && n->grad_root[a] == n->grad_root[s->y]) {
                /* shares gy's buffer: the gradient is already there */
                n->cur->grad[a].layout = gy->layout;
                n->ginit[a] = 1;
            } else {
                rc = grad_add(n, a, gy);
            }
        }
        return rc;
    default:
        return NAS_EINVAL;
    }
    if (!rc && dx)
        rc = grad_done(n, s->x, dx);
    return rc;
}

/* The backward of every step, from the logits' gradient down. */
static int back_steps(nas_net *n)
{
    int rc = nas__backend_set_convs(n->be, n->convs, n->n_convs, 1);
    if (rc)
        return rc;
    n->ginit[n->logits] = 1;
    for (int i = n->n_steps - 1; i >= 0 && !rc; i--)
        rc = back_step(n, &n->steps[i]);
    return rc;
}

/* The layout tag nas__net_act_layouts counts at visit v of net n's
 * activations (v = 2i: activation i, v = 2i + 1: its gradient), or 0 where
 * it counts none (plain, C not a multiple of 8, H*W <= 1, a gradient not
 * written by the last training backward). */
static int act_tag(const nas_net *n, int v)
{
    const nas_tensor *a = &n->cur->act[v / 2];
    if (a->c % 8 != 0 || (int64_t)a->h * a->w <= 1)
        return 0;
    if (v % 2 == 0)
        return a->layout;
    return n->cur_train && n->ginit[v / 2] ? n->cur->grad[v / 2].layout : 0;
}

/* Each tag is counted at its first visit only: compared against every
 * earlier visit, not against the (at most cap) stored ones, so the count
 * is exact however small cap is. Quadratic in n_acts; a test accessor. */
int nas__net_act_layouts(const nas_net *n, int *tags, int cap)
{
    int k = 0;
    if (!n || !n->cur)
        return 0;
    for (int v = 0; v < 2 * n->n_acts; v++) {
        int tag = act_tag(n, v), u = 0;
        if (!tag)
            continue;
        while (u < v && act_tag(n, u) != tag)
            u++;
        if (u < v)
            continue;
        if (k < cap)
            tags[k] = tag;
        k++;
    }
    return k;
}

int nas__net_backward_seed(nas_net *n, float value)
{
    if (!n || !n->cur || !n->cur_train)
        return NAS_EINVAL;
    memset(n->ginit, 0, (size_t)n->n_acts);
    int rc = nas__tensor_fill(&n->cur->grad[n->logits], value);
    return rc ? rc : back_steps(n);
}

int nas__tensor_fill(nas_tensor *t, float v)
{
    float *h = malloc(t->count * sizeof *h);
    if (!h)
        return NAS_ENOMEM;
    for (size_t k = 0; k < t->count; k++)
        h[k] = v;
    int rc = nas_tensor_upload(t, h, t->count);
    free(h);
    return rc;
}

void nas__net_set_input_grad(nas_net *n, nas_tensor *dx) { n->input_grad = dx; }

void nas__net_set_proxy_mode(nas_net *n, int no_bn, int no_dropout)
{
    n->no_bn = no_bn;
    n->no_dropout = no_dropout;
}

int nas__net_weight_params(const nas_net *n, int *idx, int cap)
{
    int m = 0;
    for (int i = 0; i < n->n_steps; i++) {
        const step *s = &n->steps[i];
        if ((s->kind == S_CONV || s->kind == S_GCONV || s->kind == S_LINEAR) && s->w >= 0) {
            if (idx && m < cap)
                idx[m] = s->w;
            m++;
        }
    }
    return m;
}

int nas__net_homogeneous(const nas_net *n)
{
    for (int i = 0; i < n->n_steps; i++) {
        const step *s = &n->steps[i];
        switch (s->kind) {
        case S_CONV: case S_GCONV: case S_RELU: case S_POOL: case S_GAP: case S_SUM:
        case S_BN: case S_DROPOUT:
            break;
        case S_ACT:
            if (s->k != NAS_FN_RELU)
                return 0;
            break;
        case S_LINEAR: /* its bias adds a constant: only the classifier's */
            if (s->y != n->logits)
                return 0;
            break;
        default:
            return 0;
        }
    }
    return 1;
}

/* How many convolution steps read activation a (at least 1). */
static int conv_readers(const nas_net *n, int a)
{
    int m = 0;
    for (int i = 0; i < n->n_steps; i++)
        m += n->steps[i].kind == S_CONV && n->steps[i].x == a;
    return m > 0 ? m : 1;
}

int nas__net_relu_inputs(nas_net *n, const nas_tensor **out, int *mult, int cap)
{
    int m = 0;
    for (int i = 0; i < n->n_steps && n->cur; i++) {
        const step *s = &n->steps[i];
        if (s->kind == S_RELU || (s->kind == S_ACT && s->k == NAS_FN_RELU)) {
            if (out && m < cap) {
                /* a fused step's input is not kept (nor, after an eval
                 * forward, a ReLU's that its folded convolution ran as a
                 * post-op); its output has the same signs (y > 0 exactly
                 * where x > 0), all NASWOT reads */
                int fused = (s->by_bn && n->bn_act_fwd) ||
                            (runs_folded(n, n->cur_train) && s->post_act == 1);
                out[m] = fused ? AC(n, s->y) : AC(n, s->x);
                mult[m] = conv_readers(n, s->y);
            }
            m++;
        }
    }
    return m;
}

int nas_net_backward(nas_net *n, const nas_tensor *labels, float *loss, int *correct)
{
    if (!n || !labels || !n->cur || !n->cur_train)
        return NAS_EINVAL;
    if (labels->count != (size_t)n->cur->batch)
        return NAS_EINVAL;
    memset(n->ginit, 0, (size_t)n->n_acts);
    float l = 0;
    int c = 0;
    int rc = nas_softmax_xent(n->be, &n->cur->act[n->logits], labels, &n->cur->grad[n->logits],
                              &l, &c);
    if (rc)
        return rc;
    if (loss)
        *loss = l;
    if (correct)
        *correct = c;
    return back_steps(n);
}

int nas_net_sgd_step(nas_net *n, float lr, float momentum, float wd, int nesterov)
{
    if (!n)
        return NAS_EINVAL;
    n->gen++;
    for (int i = 0; i < n->n_params; i++) {
        param *p = &n->params[i];
        if (!p->grad)
            continue;
        int rc = nas_sgd_step(n->be, p->value, p->grad, p->mom, lr, momentum, wd, nesterov);
        if (rc)
            return rc;
    }
    return NAS_OK;
}

int64_t nas_net_param_count(const nas_net *n)
{
    if (!n)
        return 0;
    int64_t total = 0;
    for (int i = 0; i < n->n_params; i++)
        if (n->params[i].grad)
            total += (int64_t)n->params[i].value->count;
    return total;
}

int nas_net_params(nas_net *n, nas_net_param *out, int cap)
{
    if (!n)
        return 0;
    n->gen++; /* the caller may write through the tensors: refold before eval */
    for (int i = 0; i < n->n_params && i < cap && out; i++) {
        out[i].name = n->params[i].name;
        out[i].value = n->params[i].value;
        out[i].grad = n->params[i].grad;
    }
    return n->n_params;
}

const nas_net_desc *nas__net_desc(const nas_net *n)
{
    return n ? &n->desc : NULL;
}

int nas__net_max_batch(const nas_net *n)
{
    return n ? n->max_batch : 0;
}

void nas__net_set_step(nas_net *n, uint64_t step)
{
    if (n)
        n->step = step;
}

int nas__net_set_fold(nas_net *n, int on)
{
    if (!n)
        return 0;
    int was = n->fuse;
    n->fuse = on != 0;
    n->fold_gen = 0; /* recompute on the next eval forward */
    return was;
}

int nas__net_set_bn_act(nas_net *n, int on)
{
    if (!n)
        return 0;
    int was = !n->bn_act_off;
    n->bn_act_off = on == 0;
    return was;
}

int nas__net_bn_acts(const nas_net *n)
{
    int m = 0;
    for (int i = 0; n && i < n->n_steps; i++)
        m += n->steps[i].kind == S_BN && n->steps[i].act >= 0;
    return m;
}

int nas__net_se_fused(const nas_net *n)
{
    int m = 0;
    for (int i = 0; n && i < n->n_steps; i++)
        m += n->steps[i].kind == S_BN && se_fused(n, &n->steps[i]);
    return m;
}

int nas__net_folded(const nas_net *n, int *accumulating, int *grouped, int *post_acts)
{
    int folded = 0, acc = 0, grp = 0, post = 0;
    for (int i = 0; n && i < n->n_steps; i++) {
        const step *s = &n->steps[i];
        if ((s->kind == S_CONV || s->kind == S_GCONV) && s->fold >= 0) {
            folded++;
            acc += s->acc_sum >= 0;
            grp += s->kind == S_GCONV;
            post += s->post_act >= 0;
        }
    }
    if (accumulating)
        *accumulating = acc;
    if (grouped)
        *grouped = grp;
    if (post_acts)
        *post_acts = post;
    return folded;
}

int nas__net_residual_adds(const nas_net *n, int *ran)
{
    int planned = 0, done = 0;
    for (int i = 0; n && i < n->n_steps; i++) {
        const step *s = &n->steps[i];
        if (s->kind == S_SUM && s->add_k >= 0) {
            planned++;
            done += s->add_ran;
        }
    }
    if (ran)
        *ran = done;
    return planned;
}

nas_backend *nas__net_backend(const nas_net *n)
{
    return n ? n->be : NULL;
}

/* Added for checkpoints (issue 5, trainer/train_full.c): SGD momentum
 * buffer of parameter i in nas_net_params order; NULL for buffers. */
nas_tensor *nas__net_param_momentum(nas_net *n, int i)
{
    return n && i >= 0 && i < n->n_params ? n->params[i].mom : NULL;
}

/* Added for fp16 loss scaling (issue 19, trainer/train.c): a training
 * forward updates the BN running statistics even when the loss scaler then
 * skips the step, and an fp16 overflow leaves them infinite; the step
 * saves them first and restores them when it is skipped. */
int nas__net_stats_save(nas_net *n)
{
    if (!n)
        return NAS_EINVAL;
    if (!n->stats_copy && !(n->stats_copy = calloc((size_t)n->n_params, sizeof *n->stats_copy)))
        return NAS_ENOMEM;
    for (int i = 0; i < n->n_params; i++) {
        param *p = &n->params[i];
        if (p->grad)
            continue;
        int rc = NAS_OK;
        if (!n->stats_copy[i])
            rc = nas_tensor_create(n->be, p->value->n, p->value->c, p->value->h, p->value->w,
                                   &n->stats_copy[i]);
        if (!rc)
            rc = nas_tensor_copy(n->stats_copy[i], p->value);
        if (rc)
            return rc;
    }
    return NAS_OK;
}

float nas__net_set_bn_momentum(nas_net *n, float momentum)
{
    float old = n->bn_momentum;
    n->bn_momentum = momentum;
    return old;
}

int nas__net_stats_restore(nas_net *n)
{
    if (!n || !n->stats_copy)
        return NAS_EINVAL;
    n->gen++; /* folded weights are stale */
    for (int i = 0; i < n->n_params; i++) {
        if (n->params[i].grad || !n->stats_copy[i])
            continue;
        int rc = nas_tensor_copy(n->params[i].value, n->stats_copy[i]);
        if (rc)
            return rc;
    }
    return NAS_OK;
}
