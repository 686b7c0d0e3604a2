/*
 * tests/unit/test_net.c - the TinyNetwork (trainer/net.c) and the training
 * loop (trainer/train.c): whole-network gradients against central finite
 * differences on the ref backend, parameter names and counts against the
 * analytic counter, batch views, cpu vs ref agreement, determinism, and
 * that training lowers the loss.
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nas/evaluator.h"
#include "nas/trainer.h"
#include "trainer/net_impl.h" /* nas__net_set_fold, nas__net_folded */
#include "tests/unit/tiny_data.h"
#include "tests/unit/tiny_net.h"

enum { NONE = NAS_OP_NONE, SKIP = NAS_OP_SKIP_CONNECT, C1 = NAS_OP_NOR_CONV_1X1,
       C3 = NAS_OP_NOR_CONV_3X3, POOL = NAS_OP_AVG_POOL_3X3 };

/* Genotypes covering every op, a node with no input (edges out of a zero
 * node), a dead end (node 2 unused) and the reference cell. */
static const int GENOS[][6] = {
    {C3, C3, C3, SKIP, C3, C3},
    {C1, POOL, SKIP, C3, NONE, POOL},
    {POOL, NONE, C1, SKIP, POOL, C3},
    {NONE, NONE, C3, SKIP, NONE, C1},
    {C3, C1, POOL, SKIP, C1, NONE},
    /* node 2 is node 1 (one skip input), so node 3 = BN(conv1x1(node 0)) +
     * node 1 + pool(node 1): node 1's gradient must not share node 3's
     * buffer, since the BN's backward, after the pool's, needs node 3's
     * gradient alone (net.c plan_residual_grads) */
    {C3, NONE, SKIP, C1, SKIP, POOL},
};
#define N_GENOS (int)(sizeof GENOS / sizeof GENOS[0])

static nas_backend *make_backend(const char *name)
{
    nas_backend *be = NULL;
    nas_error err = {0};
    int rc = nas_backend_create(name, 1, 0, &be, &err);
    return rc == NAS_OK ? be : NULL;
}

/* Upload a random batch of b images and labels (PCG32(seed)). */
static void random_batch(nas_backend *be, const nas_net_desc *d, int b, uint64_t seed,
                         nas_tensor **x, nas_tensor **y)
{
    nas_rng r;
    nas_rng_seed(&r, seed, 7);
    size_t px = (size_t)b * d->in_c * d->in_h * d->in_w;
    float *hx = malloc(px * sizeof *hx), *hy = malloc((size_t)b * sizeof *hy);
    for (size_t i = 0; i < px; i++)
        hx[i] = nas_rng_normal(&r);
    for (int i = 0; i < b; i++)
        hy[i] = (float)nas_rng_bounded(&r, (uint32_t)d->classes);
    assert_int_equal(nas_tensor_create(be, b, d->in_c, d->in_h, d->in_w, x), NAS_OK);
    assert_int_equal(nas_tensor_create(be, b, 1, 1, 1, y), NAS_OK);
    assert_int_equal(nas_tensor_upload(*x, hx, px), NAS_OK);
    assert_int_equal(nas_tensor_upload(*y, hy, (size_t)b), NAS_OK);
    free(hx);
    free(hy);
}

/* Train-mode forward loss (batch statistics), no backward. */
static double loss_at(nas_net *net, nas_backend *be, const nas_tensor *x, const nas_tensor *y)
{
    const nas_tensor *logits;
    assert_int_equal(nas_net_forward(net, x, 1, &logits), NAS_OK);
    float l;
    int c;
    assert_int_equal(nas_softmax_xent(be, logits, y, NULL, &l, &c), NAS_OK);
    return l;
}

static float *download(const nas_tensor *t)
{
    float *h = malloc(t->count * sizeof *h);
    assert_int_equal(nas_tensor_download(t, h, t->count), NAS_OK);
    return h;
}

/*
 * For every trainable tensor: the directional derivative along a random
 * unit direction d, (L(w + h d) - L(w - h d)) / 2h, must match grad . d.
 * Running statistics change during these forwards but do not enter a
 * train-mode forward, so the loss is a pure function of the weights.
 */
static void gradcheck_net(nas_backend *be, nas_net *net, const nas_net_desc *dp, uint64_t seed,
                          const char *what)
{
    const nas_net_desc d = *dp;
    nas_tensor *x, *y;
    random_batch(be, &d, 3, seed + 100, &x, &y);
    const nas_tensor *logits;
    float loss;
    int correct;
    assert_int_equal(nas_net_forward(net, x, 1, &logits), NAS_OK);
    assert_int_equal(nas_net_backward(net, y, &loss, &correct), NAS_OK);
    assert_true(fabs(loss - loss_at(net, be, x, y)) < 1e-6);

    nas_net_param ps[256];
    int np = nas_net_params(net, ps, 256);
    assert_true(np > 0 && np <= 256);
    nas_rng r;
    nas_rng_seed(&r, seed, 99);
    int checked = 0;
    for (int i = 0; i < np; i++) {
        if (!ps[i].grad)
            continue;
        float *w = download(ps[i].value), *g = download(ps[i].grad);
        size_t n = ps[i].value->count;
        float *dir = malloc(n * sizeof *dir), *wp = malloc(n * sizeof *wp);
        double norm = 0, an = 0;
        for (size_t k = 0; k < n; k++) {
            dir[k] = nas_rng_normal(&r);
            norm += (double)dir[k] * dir[k];
        }
        norm = sqrt(norm);
        for (size_t k = 0; k < n; k++) {
            dir[k] = (float)(dir[k] / norm);
            an += (double)g[k] * dir[k];
        }
        const float h = 3e-4f; /* float32 loss: rounding ~1e-4 vs ReLU/BN curvature */
        for (size_t k = 0; k < n; k++)
            wp[k] = w[k] + h * dir[k];
        assert_int_equal(nas_tensor_upload(ps[i].value, wp, n), NAS_OK);
        double lp = loss_at(net, be, x, y);
        for (size_t k = 0; k < n; k++)
            wp[k] = w[k] - h * dir[k];
        assert_int_equal(nas_tensor_upload(ps[i].value, wp, n), NAS_OK);
        double lm = loss_at(net, be, x, y);
        assert_int_equal(nas_tensor_upload(ps[i].value, w, n), NAS_OK);
        double fd = (lp - lm) / (2.0 * h);
        double tol = 1.5e-3 + 6e-2 * fmax(fabs(fd), fabs(an));
        if (getenv("GC_DEBUG"))
            printf("%-32s an %.6g fd %.6g\n", ps[i].name, an, fd);
        else if (fabs(fd - an) > tol)
            fail_msg("%s: analytic %.6g vs finite difference %.6g (%s)", ps[i].name, an, fd,
                     what);
        checked++;
        free(w);
        free(g);
        free(dir);
        free(wp);
    }
    assert_true(checked > 0);
    nas_tensor_destroy(x);
    nas_tensor_destroy(y);
    nas_net_destroy(net);
}

static void gradcheck_genotype(nas_backend *be, const int ops[6], int N, uint64_t seed)
{
    nas_net_desc d = tiny_net_desc(ops, N);
    nas_net *net = NULL;
    nas_error err = {0};
    assert_int_equal(nas_net_create(be, &d, 3, seed, &net, &err), NAS_OK);
    char what[64];
    snprintf(what, sizeof what, "genotype %d %d %d %d %d %d", ops[0], ops[1], ops[2], ops[3],
             ops[4], ops[5]);
    gradcheck_net(be, net, &d, seed, what);
}

/* One layer of a hand-built graph on 4 x 8 x 8 maps (src: earlier layer,
 * -1 the input). */
static nas_layer graph_layer(nas_layer_kind kind, int src, int in_c, int out_c, int hw,
                             const char *name)
{
    nas_layer l;
    memset(&l, 0, sizeof l);
    l.kind = kind;
    l.src = src;
    l.src2 = l.src3 = -1;
    l.in_c = in_c;
    l.out_c = out_c;
    l.in_h = l.in_w = 8;
    l.out_h = l.out_w = hw;
    l.kernel = 3;
    l.stride = 1;
    l.pad = 1;
    l.groups = 1;
    l.stage = l.index = -1;
    snprintf(l.name, sizeof l.name, "%s", name);
    return l;
}

/* S = X + A + conv(X) with X = pool(A), A = conv(input); `x_first`: the
 * sum lists X, A, conv(X), else A, X, conv(X). */
static nas_net *two_residuals_net(nas_backend *be, const nas_net_desc *d, int x_first)
{
    nas_layer l[6] = {
        graph_layer(NAS_LAYER_CONV, -1, 1, 4, 8, "a"),
        graph_layer(NAS_LAYER_AVGPOOL, 0, 4, 4, 8, "x"),
        graph_layer(NAS_LAYER_CONV, 1, 4, 4, 8, "e"),
        graph_layer(NAS_LAYER_ADD, x_first ? 1 : 0, 4, 4, 8, "s"),
        graph_layer(NAS_LAYER_POOL, 3, 4, 4, 1, "gap"),
        graph_layer(NAS_LAYER_LINEAR, 4, 4, d->classes, 1, "fc"),
    };
    l[3].src2 = x_first ? 0 : 1;
    l[3].src3 = 2;
    l[3].n_src = 3;
    l[5].in_h = l[5].in_w = 1;
    nas_layers L = {.n = 6, .cap = 6, .l = l, .in_c = 1, .in_h = 8, .in_w = 8,
                    .classes = d->classes};
    nas_net *net = NULL;
    nas_error err = {0};
    assert_int_equal(nas__net_create_layers(be, d, &L, 3, 7, &net, &err), NAS_OK);
    return net;
}

/* In S = X + A + conv(X), X = pool(A), X may share S's gradient buffer
 * (its other reader, the conv, comes after the pool), but then A must not:
 * the pool's backward would add A's part after the conv's backward added
 * X's into that buffer, and A's gradient would carry the conv's term
 * (trainer/net.c plan_residual_grads). Listed A first, A may share and X
 * may not. Both orders are the same function of the same weights, so their
 * gradients agree up to the sum's rounding; and they match finite
 * differences. */
static void gradcheck_two_residuals(nas_backend *be)
{
    const int ops[6] = {C3, C3, C3, C3, C3, C3};
    nas_net_desc d = tiny_net_desc(ops, 1); /* input 1 x 8 x 8, 5 classes */
    nas_net *net[2] = {two_residuals_net(be, &d, 1), two_residuals_net(be, &d, 0)};
    nas_tensor *x, *y;
    random_batch(be, &d, 3, 17, &x, &y);
    nas_net_param ps[2][16];
    int np[2];
    for (int k = 0; k < 2; k++) {
        const nas_tensor *logits;
        float loss;
        int correct;
        assert_int_equal(nas_net_forward(net[k], x, 1, &logits), NAS_OK);
        assert_int_equal(nas_net_backward(net[k], y, &loss, &correct), NAS_OK);
        np[k] = nas_net_params(net[k], ps[k], 16);
        assert_true(np[k] > 0 && np[k] <= 16);
    }
    assert_int_equal(np[0], np[1]);
    for (int i = 0; i < np[0]; i++) {
        if (!ps[0][i].grad)
            continue;
        float *g0 = download(ps[0][i].grad), *g1 = download(ps[1][i].grad);
        for (size_t k = 0; k < ps[0][i].grad->count; k++)
            if (fabsf(g0[k] - g1[k]) > 1e-5f + 1e-4f * fabsf(g1[k]))
                fail_msg("%s[%zu]: gradient %.7g with X listed first, %.7g with A first",
                         ps[0][i].name, k, g0[k], g1[k]);
        free(g0);
        free(g1);
    }
    nas_tensor_destroy(x);
    nas_tensor_destroy(y);
    gradcheck_net(be, net[0], &d, 7, "S = X + A + conv(X), X = pool(A)");
    gradcheck_net(be, net[1], &d, 8, "S = A + X + conv(X), X = pool(A)");
}

static void test_gradients(void **state)
{
    (void)state;
    nas_backend *be = make_backend("ref");
    assert_non_null(be);
    for (int g = 0; g < N_GENOS; g++)
        gradcheck_genotype(be, GENOS[g], 1, 11 + (uint64_t)g);
    gradcheck_genotype(be, GENOS[1], 2, 5); /* two cells per stage */
    gradcheck_two_residuals(be);
    nas_backend_destroy(be);
}

/* Names follow PyTorch's module paths; counts equal the analytic count. */
typedef struct name_ctx {
    char names[256][96];
    long long params[256];
    int n;
} name_ctx;

static void collect_layer(void *ctx, const nas_layer_info *li)
{
    name_ctx *c = ctx;
    if (li->params == 0)
        return;
    snprintf(c->names[c->n], sizeof c->names[0], "%s", li->module);
    c->params[c->n++] = li->params;
}

static void test_names_and_counts(void **state)
{
    (void)state;
    nas_backend *be = make_backend("ref");
    assert_non_null(be);
    for (int g = 0; g < N_GENOS; g++) {
        for (int N = 1; N <= 2; N++) {
            nas_net_desc d = tiny_net_desc(GENOS[g], N);
            nas_net *net = NULL;
            assert_int_equal(nas_net_create(be, &d, 2, 1, &net, NULL), NAS_OK);
            int64_t macs, params;
            static name_ctx lc;
            lc.n = 0;
            assert_int_equal(nas_count_net(&d, &macs, &params, collect_layer, &lc), NAS_OK);
            assert_int_equal(nas_net_param_count(net), params);
            /* every counted layer's parameters appear under its module path,
             * in the same order: conv/linear "M.weight"(+ "M.bias"), BN
             * "M.weight", "M.bias", "M.running_mean", "M.running_var" */
            nas_net_param ps[512];
            int np = nas_net_params(net, ps, 512);
            int layer = 0;
            int64_t sum = 0;
            for (int i = 0; i < np; i++) {
                assert_true(layer < lc.n);
                size_t ml = strlen(lc.names[layer]);
                if (strncmp(ps[i].name, lc.names[layer], ml) != 0 || ps[i].name[ml] != '.')
                    fail_msg("param %d '%s' outside layer '%s'", i, ps[i].name, lc.names[layer]);
                if (ps[i].grad)
                    sum += (int64_t)ps[i].value->count;
                else
                    assert_true(strstr(ps[i].name, "running_") != NULL);
                int last = i + 1 == np ||
                           strncmp(ps[i + 1].name, lc.names[layer], ml) != 0 ||
                           ps[i + 1].name[ml] != '.';
                if (last) {
                    assert_int_equal(sum, lc.params[layer]);
                    sum = 0;
                    layer++;
                }
            }
            assert_int_equal(layer, lc.n);
            nas_net_destroy(net);
        }
    }
    /* the reference genotype at full size */
    nas_net_desc d = tiny_net_desc(GENOS[0], 1);
    d.channels = 16;
    d.in_h = d.in_w = 28;
    d.classes = 10;
    nas_net *net = NULL;
    assert_int_equal(nas_net_create(be, &d, 1, 1, &net, NULL), NAS_OK);
    assert_int_equal(nas_net_param_count(net), 316058);
    nas_net_param ps[200];
    int np = nas_net_params(net, ps, 200);
    assert_string_equal(ps[0].name, "stem.0.weight");
    assert_string_equal(ps[1].name, "stem.1.weight");
    assert_string_equal(ps[4].name, "stem.1.running_var");
    assert_string_equal(ps[5].name, "cells.0.layers.0.op.1.weight");
    assert_string_equal(ps[np - 2].name, "classifier.weight");
    assert_string_equal(ps[np - 1].name, "classifier.bias");
    nas_net_destroy(net);
    nas_backend_destroy(be);
}

static void test_init(void **state)
{
    (void)state;
    nas_backend *be = make_backend("ref");
    nas_net_desc d = tiny_net_desc(GENOS[0], 1);
    nas_net *a = NULL, *b = NULL, *c = NULL;
    assert_int_equal(nas_net_create(be, &d, 2, 5, &a, NULL), NAS_OK);
    assert_int_equal(nas_net_create(be, &d, 2, 5, &b, NULL), NAS_OK);
    assert_int_equal(nas_net_create(be, &d, 2, 6, &c, NULL), NAS_OK);
    nas_net_param pa[128], pb[128], pc[128];
    int n = nas_net_params(a, pa, 128);
    nas_net_params(b, pb, 128);
    nas_net_params(c, pc, 128);
    int differ = 0;
    for (int i = 0; i < n; i++) {
        float *va = download(pa[i].value), *vb = download(pb[i].value),
              *vc = download(pc[i].value);
        size_t cnt = pa[i].value->count;
        assert_memory_equal(va, vb, cnt * sizeof(float));
        differ |= memcmp(va, vc, cnt * sizeof(float)) != 0;
        const char *nm = pa[i].name;
        size_t L = strlen(nm);
        float want = -1.0f; /* -1: random */
        if (L > 12 && strcmp(nm + L - 12, "running_mean") == 0)
            want = 0.0f;
        else if (L > 11 && strcmp(nm + L - 11, "running_var") == 0)
            want = 1.0f;
        else if (pa[i].value->n == 1) /* BN gamma / beta are [1,C,1,1] */
            want = strcmp(nm + L - 6, "weight") == 0 ? 1.0f : 0.0f;
        if (want >= 0.0f) {
            for (size_t k = 0; k < cnt; k++)
                assert_true(va[k] == want);
        } else {
            /* Kaiming uniform a=sqrt(5): U(-1/sqrt(fan_in), 1/sqrt(fan_in)) */
            int fan_in = pa[i].value->c * pa[i].value->h * pa[i].value->w;
            if (strcmp(nm, "classifier.bias") == 0)
                fan_in = 16; /* 4C = 16 features */
            double bound = 1.0 / sqrt((double)fan_in), mx = 0;
            for (size_t k = 0; k < cnt; k++)
                mx = fmax(mx, fabs(va[k]));
            assert_true(mx <= bound);
            if (cnt >= 16)
                assert_true(mx > 0.5 * bound);
        }
        free(va);
        free(vb);
        free(vc);
    }
    assert_true(differ);
    nas_net_destroy(a);
    nas_net_destroy(b);
    nas_net_destroy(c);
    nas_backend_destroy(be);
}

/* Eval mode is per-image: a batch of 2 gives the first rows of a batch of 3
 * (exercises the per-batch-size views over shared buffers). */
static void test_batch_views(void **state)
{
    (void)state;
    nas_backend *be = make_backend("ref");
    nas_net_desc d = tiny_net_desc(GENOS[1], 1);
    nas_net *net = NULL;
    assert_int_equal(nas_net_create(be, &d, 3, 2, &net, NULL), NAS_OK);
    nas_tensor *x3, *y3, *x2, *y2;
    random_batch(be, &d, 3, 1, &x3, &y3);
    float *h3 = download(x3);
    assert_int_equal(nas_tensor_create(be, 2, 1, 8, 8, &x2), NAS_OK);
    assert_int_equal(nas_tensor_upload(x2, h3, 128), NAS_OK);
    const nas_tensor *lg;
    assert_int_equal(nas_net_forward(net, x3, 0, &lg), NAS_OK);
    assert_int_equal(lg->n, 3);
    float *l3 = download(lg);
    assert_int_equal(nas_net_forward(net, x2, 0, &lg), NAS_OK);
    assert_int_equal(lg->n, 2);
    float *l2 = download(lg);
    for (int i = 0; i < 10; i++)
        assert_true(fabsf(l2[i] - l3[i]) < 1e-5f);
    /* too big a batch is refused */
    nas_tensor *x4, *y4;
    random_batch(be, &d, 4, 1, &x4, &y4);
    assert_int_equal(nas_net_forward(net, x4, 0, &lg), NAS_EINVAL);
    (void)y2;
    free(h3);
    free(l3);
    free(l2);
    nas_tensor_destroy(x3);
    nas_tensor_destroy(y3);
    nas_tensor_destroy(x2);
    nas_tensor_destroy(x4);
    nas_tensor_destroy(y4);
    nas_net_destroy(net);
    nas_backend_destroy(be);
}

/* A learnable synthetic set: class k lights a 2x2 patch at position k. */
static nas_dataset *synthetic(int n, uint64_t seed)
{
    nas_dataset *d = tiny_data_alloc(n);
    nas_rng r;
    nas_rng_seed(&r, seed, 3);
    for (int i = 0; i < n; i++) {
        int k = (int)nas_rng_bounded(&r, 5);
        d->labels[i] = (uint8_t)k;
        float *im = d->images + (size_t)i * 64;
        for (int p = 0; p < 64; p++)
            im[p] = 0.5f * nas_rng_normal(&r);
        int y0 = (k * 3) % 6, x0 = (k * 5) % 6;
        for (int dy = 0; dy < 2; dy++)
            for (int dx = 0; dx < 2; dx++)
                im[(y0 + dy) * 8 + x0 + dx] += 2.0f;
    }
    return d;
}

typedef struct prog {
    float first, last;
    int calls, steps;
} prog;

static int on_step(void *ctx, int step, int steps, float loss)
{
    prog *p = ctx;
    if (p->calls == 0)
        p->first = loss;
    p->last = loss;
    p->calls++;
    p->steps = steps;
    assert_int_equal(step, p->calls);
    return 0;
}

static void train_once(nas_backend *be, const nas_dataset *data, uint64_t seed, double *loss,
                       double *acc, nas_train_stats *st, prog *pg)
{
    nas_net_desc d = tiny_net_desc(GENOS[0], 1);
    nas_net *net = NULL;
    assert_int_equal(nas_net_create(be, &d, 32, seed, &net, NULL), NAS_OK);
    nas_recipe rc = {.epochs = 4, .batch_size = 32, .lr = 0.1, .momentum = 0.9, .nesterov = 1,
                     .weight_decay = 5e-4, .schedule = NAS_SCHEDULE_COSINE, .seed = seed};
    nas_error err = {0};
    assert_int_equal(nas_train(net, data, &rc, on_step, pg, st, &err), NAS_OK);
    assert_int_equal(nas_net_evaluate(net, data, 32, acc, loss, &err), NAS_OK);
    nas_net_destroy(net);
}

static void test_training_and_determinism(void **state)
{
    (void)state;
    nas_backend *be = make_backend("ref");
    nas_dataset *data = synthetic(300, 1); /* 300 = 9 full batches + 12 */
    nas_train_stats s1, s2;
    prog p1 = {0}, p2 = {0};
    double l1, a1, l2, a2;
    train_once(be, data, 3, &l1, &a1, &s1, &p1);
    assert_int_equal(s1.steps, 40);
    assert_int_equal(s1.epochs, 4);
    assert_int_equal(p1.steps, 40);
    assert_int_equal(p1.calls, 40);
    assert_true(p1.first > 1.2f);            /* ~ln 5 at the start */
    assert_true(s1.train_loss < 0.5 * p1.first);
    assert_true(l1 < 0.5 * p1.first);         /* eval-mode loss fell too */
    assert_true(a1 > 0.8);
    assert_true(s1.images_per_s > 0);
    train_once(be, data, 3, &l2, &a2, &s2, &p2);
    assert_true(s1.train_loss == s2.train_loss); /* bit-identical on ref */
    assert_true(l1 == l2);
    assert_true(p1.last == p2.last);
    nas_dataset_destroy(data);
    nas_backend_destroy(be);
}

static int stop_at_3(void *ctx, int step, int steps, float loss)
{
    (void)ctx;
    (void)steps;
    (void)loss;
    return step >= 3;
}

static void test_nan_and_interrupt(void **state)
{
    (void)state;
    nas_backend *be = make_backend("ref");
    nas_dataset *data = synthetic(64, 2);
    nas_net_desc d = tiny_net_desc(GENOS[0], 1);
    nas_net *net = NULL;
    assert_int_equal(nas_net_create(be, &d, 16, 1, &net, NULL), NAS_OK);
    nas_recipe rc = {.epochs = 3, .batch_size = 16, .lr = 0.01, .momentum = 0.9, .nesterov = 1,
                     .weight_decay = 0, .schedule = NAS_SCHEDULE_CONSTANT, .seed = 1};
    data->images[40 * 64 + 17] = NAN; /* one poisoned pixel: NaN loss in epoch 1 */
    nas_error err = {0};
    nas_train_stats st;
    assert_int_equal(nas_train(net, data, &rc, NULL, NULL, &st, &err), NAS_ENAN);
    assert_non_null(strstr(err.msg, "epoch 1,"));
    assert_non_null(strstr(err.msg, "step"));
    assert_int_equal(st.epochs, 0);
    nas_net_destroy(net);
    data->images[40 * 64 + 17] = 0.0f;
    assert_int_equal(nas_net_create(be, &d, 16, 1, &net, NULL), NAS_OK);
    rc.lr = 0.01;
    assert_int_equal(nas_train(net, data, &rc, stop_at_3, NULL, &st, &err), NAS_EINTR);
    assert_int_equal(st.steps, 3);
    nas_net_destroy(net);
    nas_dataset_destroy(data);
    nas_backend_destroy(be);
}

/* cpu backend: same weights, same batch -> same loss, logits and gradients
 * as ref within float tolerance. */
static void test_cpu_matches_ref(void **state)
{
    (void)state;
    nas_backend *ref = make_backend("ref"), *cpu = make_backend("cpu");
    if (!cpu) {
        printf("SKIPPED: cpu backend not available\n");
        nas_backend_destroy(ref);
        skip();
    }
    for (int g = 0; g < N_GENOS; g++) {
        nas_net_desc d = tiny_net_desc(GENOS[g], 1);
        nas_net *nr = NULL, *nc = NULL;
        assert_int_equal(nas_net_create(ref, &d, 4, 9, &nr, NULL), NAS_OK);
        nas_error err = {0};
        if (nas_net_create(cpu, &d, 4, 9, &nc, &err) != NAS_OK)
            fail_msg("cpu net: %s", err.msg);
        nas_tensor *xr, *yr, *xc, *yc;
        random_batch(ref, &d, 4, 3, &xr, &yr);
        random_batch(cpu, &d, 4, 3, &xc, &yc);
        const nas_tensor *lr, *lc;
        float lossr, lossc;
        int cr, cc;
        assert_int_equal(nas_net_forward(nr, xr, 1, &lr), NAS_OK);
        assert_int_equal(nas_net_forward(nc, xc, 1, &lc), NAS_OK);
        float *hr = download(lr), *hc = download(lc);
        for (size_t i = 0; i < lr->count; i++)
            assert_true(fabsf(hr[i] - hc[i]) <= 1e-4f + 1e-3f * fabsf(hr[i]));
        free(hr);
        free(hc);
        assert_int_equal(nas_net_backward(nr, yr, &lossr, &cr), NAS_OK);
        assert_int_equal(nas_net_backward(nc, yc, &lossc, &cc), NAS_OK);
        assert_true(fabsf(lossr - lossc) < 1e-4f);
        nas_net_param pr[128], pc[128];
        int n = nas_net_params(nr, pr, 128);
        assert_int_equal(nas_net_params(nc, pc, 128), n);
        for (int i = 0; i < n; i++) {
            assert_string_equal(pr[i].name, pc[i].name);
            const nas_tensor *tr = pr[i].grad ? pr[i].grad : pr[i].value;
            const nas_tensor *tc = pc[i].grad ? pc[i].grad : pc[i].value;
            float *a = download(tr), *b = download(tc);
            double mx = 0;
            for (size_t k = 0; k < tr->count; k++)
                mx = fmax(mx, fabs(a[k]));
            for (size_t k = 0; k < tr->count; k++)
                if (fabsf(a[k] - b[k]) > 1e-4f + 2e-3f * (float)mx)
                    fail_msg("genotype %d %s[%zu]: ref %g cpu %g", g, pr[i].name, k, a[k], b[k]);
            free(a);
            free(b);
        }
        /* eval mode too, after the running statistics moved */
        assert_int_equal(nas_net_forward(nr, xr, 0, &lr), NAS_OK);
        assert_int_equal(nas_net_forward(nc, xc, 0, &lc), NAS_OK);
        hr = download(lr);
        hc = download(lc);
        for (size_t i = 0; i < lr->count; i++)
            assert_true(fabsf(hr[i] - hc[i]) <= 1e-4f + 1e-3f * fabsf(hr[i]));
        free(hr);
        free(hc);
        nas_tensor_destroy(xr);
        nas_tensor_destroy(yr);
        nas_tensor_destroy(xc);
        nas_tensor_destroy(yc);
        nas_net_destroy(nr);
        nas_net_destroy(nc);
    }
    nas_backend_destroy(ref);
    nas_backend_destroy(cpu);
}

/* Eval logits with folded BN (conv + bias, sums accumulated in the conv)
 * against the plain conv -> BN -> sum steps, after training moved the
 * weights and running statistics, and again after one more SGD step (the
 * folded weights must be recomputed). */
static void fold_case(nas_backend *be, const int ops[6], int channels, int *n_folded, int *n_acc)
{
    nas_net_desc d = tiny_net_desc(ops, 1);
    d.channels = channels;
    nas_net *net = NULL;
    nas_error err = {0};
    if (nas_net_create(be, &d, 4, 5, &net, &err) != NAS_OK)
        fail_msg("net: %s", err.msg);
    int acc = 0;
    *n_folded += nas__net_folded(net, &acc, NULL, NULL);
    *n_acc += acc;
    nas_tensor *x, *y;
    random_batch(be, &d, 4, 11, &x, &y);
    const nas_tensor *lg;
    for (int round = 0; round < 2; round++) {
        for (int s = 0; s < 3; s++) {
            float loss;
            int c;
            assert_int_equal(nas_net_forward(net, x, 1, &lg), NAS_OK);
            assert_int_equal(nas_net_backward(net, y, &loss, &c), NAS_OK);
            assert_int_equal(nas_net_sgd_step(net, 0.1f, 0.9f, 0, 0), NAS_OK);
        }
        assert_int_equal(nas_net_forward(net, x, 0, &lg), NAS_OK);
        float *folded = download(lg);
        assert_int_equal(nas__net_set_fold(net, 0), 1);
        assert_int_equal(nas_net_forward(net, x, 0, &lg), NAS_OK);
        float *plain = download(lg);
        nas__net_set_fold(net, 1);
        double diff = 0, mag = 0;
        for (size_t i = 0; i < lg->count; i++) {
            diff = fmax(diff, fabs((double)folded[i] - plain[i]));
            mag = fmax(mag, fabs((double)plain[i]));
        }
        if (diff > 1e-4 + 1e-4 * mag)
            fail_msg("%s, channels %d, round %d: folded eval differs from conv+BN by %g (max "
                     "|logit| %g)",
                     nas_backend_name(be), channels, round, diff, mag);
        free(folded);
        free(plain);
    }
    nas_tensor_destroy(x);
    nas_tensor_destroy(y);
    nas_net_destroy(net);
}

static void test_folded_eval(void **state)
{
    (void)state;
    const char *names[] = {"ref", "cpu"};
    for (int b = 0; b < 2; b++) {
        nas_backend *be = make_backend(names[b]);
        if (!be) {
            printf("SKIPPED: %s backend not available\n", names[b]);
            continue;
        }
        int folded = 0, acc = 0;
        for (int g = 0; g < N_GENOS; g++)
            fold_case(be, GENOS[g], 4, &folded, &acc);
        if (b == 1)
            fold_case(be, GENOS[0], 16, &folded, &acc); /* blocked layouts */
        /* every conv of these genotypes has a BN after it (stem, edges,
         * reduction conv_a/conv_b); some edges add straight into a node */
        assert_true(folded > 0);
        assert_true(acc > 0);
        nas_backend_destroy(be);
    }
}

/* The eval forward's folding agrees with the plain conv -> BN steps for
 * every one of the 15,625 cells (issue 19: when the cell's output node was
 * one edge's BN output, the final `lastact` BN was folded into that edge's
 * conv as well, overwriting its fold, and eval skipped the edge's BN; at
 * initialisation a BN is an identity, so one SGD step must move gamma,
 * beta and the running statistics first). One cell per stage, 2 images,
 * 2 channels in the first stage (about 5 s). */
static void test_folded_eval_all_cells(void **state)
{
    (void)state;
    nas_backend *be = make_backend("ref");
    assert_non_null(be);
    int zero[6] = {0};
    nas_net_desc d = tiny_net_desc(zero, 1);
    nas_tensor *x, *y;
    random_batch(be, &d, 2, 3, &x, &y);
    int bad = 0, first_bad = -1;
    double worst = 0;
    for (int g = 0; g < 15625; g++) {
        int ops[6];
        for (int e = 0, v = g; e < 6; e++, v /= NAS_OP_COUNT)
            ops[e] = v % NAS_OP_COUNT;
        d = tiny_net_desc(ops, 1);
        d.channels = 2; /* 2, 4, 8 channels: the plan is the same, the arithmetic 4x less */
        nas_net *net = NULL;
        nas_error err = {0};
        if (nas_net_create(be, &d, 2, 1, &net, &err) != NAS_OK)
            fail_msg("cell %d: %s", g, err.msg);
        const nas_tensor *lg;
        float loss;
        int c;
        assert_int_equal(nas_net_forward(net, x, 1, &lg), NAS_OK);
        assert_int_equal(nas_net_backward(net, y, &loss, &c), NAS_OK);
        assert_int_equal(nas_net_sgd_step(net, 0.1f, 0.9f, 0, 0), NAS_OK);
        assert_int_equal(nas_net_forward(net, x, 0, &lg), NAS_OK);
        float folded[10], plain[10];
        assert_true(lg->count <= 10);
        assert_int_equal(nas_tensor_download(lg, folded, lg->count), NAS_OK);
        nas__net_set_fold(net, 0);
        assert_int_equal(nas_net_forward(net, x, 0, &lg), NAS_OK);
        assert_int_equal(nas_tensor_download(lg, plain, lg->count), NAS_OK);
        double diff = 0, mag = 0;
        for (size_t i = 0; i < lg->count; i++) {
            diff = fmax(diff, fabs((double)folded[i] - plain[i]));
            mag = fmax(mag, fabs((double)plain[i]));
        }
        if (!(diff <= 1e-4 + 1e-4 * mag)) {
            if (first_bad < 0)
                first_bad = g;
            bad++;
        }
        worst = fmax(worst, diff);
        nas_net_destroy(net);
    }
    nas_tensor_destroy(x);
    nas_tensor_destroy(y);
    nas_backend_destroy(be);
    printf("folded vs plain eval over 15625 cells: %d differ (max |diff| %g)\n", bad, worst);
    if (bad) {
        int ops[6];
        for (int e = 0, v = first_bad; e < 6; e++, v /= NAS_OP_COUNT)
            ops[e] = v % NAS_OP_COUNT;
        char s[256];
        snprintf(s, sizeof s, "|%s~0|+|%s~0|%s~1|+|%s~0|%s~1|%s~2|", nas_op_name(ops[0]),
                 nas_op_name(ops[1]), nas_op_name(ops[2]), nas_op_name(ops[3]),
                 nas_op_name(ops[4]), nas_op_name(ops[5]));
        fail_msg("%d of 15625 cells: folded eval logits differ from conv+BN (first: %s)", bad, s);
    }
}

/* Issue 19: an input that does not fit the network is NAS_EINVAL with a
 * message (the backend's last error, which nas_train appends), not a bare
 * "invalid argument" at the first training step. */
static void test_input_mismatch(void **state)
{
    (void)state;
    nas_backend *be = make_backend("ref");
    nas_net_desc d = tiny_net_desc(GENOS[0], 1); /* 1x8x8 */
    nas_net *net = NULL;
    nas_error err = {0};
    assert_int_equal(nas_net_create(be, &d, 4, 1, &net, &err), NAS_OK);
    nas_tensor *x = NULL;
    const nas_tensor *lg;
    assert_int_equal(nas_tensor_create(be, 2, 1, 9, 9, &x), NAS_OK);
    assert_int_equal(nas_tensor_zero(x), NAS_OK);
    assert_int_equal(nas_net_forward(net, x, 1, &lg), NAS_EINVAL);
    const char *why = nas_backend_last_error(be);
    if (!strstr(why, "[2,1,9,9]") || !strstr(why, "1x8x8"))
        fail_msg("no useful message for a 9x9 input to an 8x8 net: '%s'", why);
    nas_tensor_destroy(x);
    assert_int_equal(nas_tensor_create(be, 5, 1, 8, 8, &x), NAS_OK); /* batch > max 4 */
    assert_int_equal(nas_net_forward(net, x, 0, &lg), NAS_EINVAL);
    assert_non_null(strstr(nas_backend_last_error(be), "batch"));
    nas_tensor_destroy(x);

    /* through nas_train: the step's error carries the reason */
    float img[3 * 81] = {0};
    uint8_t lab[3] = {0, 1, 2};
    nas_dataset data = {3, 1, 9, 9, 5, img, lab, 0, {0}};
    nas_recipe rec = {1, 4, 0.1, 0.9, 0, 0, NAS_SCHEDULE_CONSTANT, 1, {0, 0, 0}, 0};
    assert_int_equal(nas_train(net, &data, &rec, NULL, NULL, NULL, &err), NAS_EINVAL);
    if (!strstr(err.msg, "1x8x8"))
        fail_msg("nas_train's message does not say why: '%s'", err.msg);
    printf("%s\n", err.msg);
    double acc;
    assert_int_equal(nas_net_evaluate(net, &data, 4, &acc, NULL, &err), NAS_EINVAL);
    if (!strstr(err.msg, "1x8x8"))
        fail_msg("nas_net_evaluate's message does not say why: '%s'", err.msg);
    nas_net_destroy(net);
    nas_backend_destroy(be);
}

static void test_bad_desc(void **state)
{
    (void)state;
    nas_backend *be = make_backend("ref");
    nas_net_desc d = tiny_net_desc(GENOS[0], 1);
    nas_net *net = (nas_net *)&d;
    nas_error err = {0};
    d.in_h = 10; /* 10 -> 5 -> conv 3 vs pool 2 */
    assert_int_equal(nas_net_create(be, &d, 2, 1, &net, &err), NAS_EINVAL);
    assert_null(net);
    assert_non_null(strstr(err.msg, "odd"));
    d = tiny_net_desc(GENOS[0], 1);
    d.genotype.len = 5;
    assert_int_equal(nas_net_create(be, &d, 2, 1, &net, &err), NAS_EINVAL);
    d = tiny_net_desc(GENOS[0], 1);
    assert_int_equal(nas_net_create(be, &d, 0, 1, &net, &err), NAS_EINVAL);
    nas_net_destroy(NULL);
    nas_backend_destroy(be);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradients),
        cmocka_unit_test(test_names_and_counts),
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_batch_views),
        cmocka_unit_test(test_training_and_determinism),
        cmocka_unit_test(test_nan_and_interrupt),
        cmocka_unit_test(test_cpu_matches_ref),
        cmocka_unit_test(test_folded_eval),
        cmocka_unit_test(test_folded_eval_all_cells),
        cmocka_unit_test(test_input_mismatch),
        cmocka_unit_test(test_bad_desc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
