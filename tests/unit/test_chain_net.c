/*
 * tests/unit/test_chain_net.c - chain networks built from the layer
 * description (issue 15, trainer/net.c "chain networks"):
 *  - the built net has the counter's parameter count (nas_count_genotype);
 *  - its whole-network gradient (conv, depthwise conv, BN, relu6, hswish,
 *    SE with its gate, residual add, dropout, linear) matches central
 *    finite differences of the loss on the ref backend;
 *  - cpu's logits, loss and one SGD step agree with ref;
 *  - a training step keeps one activation layout per net on cpu;
 *  - eval forwards with folded BN and activation post-ops equal the plain
 *    steps (issue 34);
 *  - every shipped space in examples/spaces (every .conf file there, so a
 *    new space is covered when it is added) trains one sampled genotype
 *    for a few steps on cpu with a finite, falling loss.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <dirent.h> /* the shipped spaces */
#include "nas/inspect.h"
#include "nas/layers.h"
#include "nas/trainer.h"
#include "tests/unit/chain_space.h"
#include "trainer/net_impl.h" /* nas__net_set_bn_act, nas__net_bn_acts, nas__net_se_fused, nas__net_folded, nas__net_residual_adds, nas__net_act_layouts */

static nas_net_desc desc_of(const nas_space *s, const nas_genotype *g)
{
    nas_net_desc d;
    memset(&d, 0, sizeof d);
    d.genotype = *g;
    d.space = s;
    nas_space_input(s, &d.in_c, &d.in_h, &d.in_w, &d.classes);
    return d;
}

static nas_backend *backend(const char *name)
{
    nas_backend *be = NULL;
    nas_error err;
    if (nas_backend_create(name, 1, 0, &be, &err) != NAS_OK)
        fail_msg("backend %s: %s", name, err.msg);
    return be;
}

/* Random images in [-1,1] and labels; the same for the same seed. */
static void batch(const nas_net_desc *d, int b, uint64_t seed, float **x, float **y)
{
    nas_rng r;
    nas_rng_seed(&r, seed, 3);
    size_t n = (size_t)b * d->in_c * d->in_h * d->in_w;
    *x = malloc(n * sizeof **x);
    *y = malloc((size_t)b * sizeof **y);
    for (size_t i = 0; i < n; i++)
        (*x)[i] = 2.0f * nas_rng_uniform(&r) - 1.0f;
    for (int i = 0; i < b; i++)
        (*y)[i] = (float)nas_rng_bounded(&r, (uint32_t)d->classes);
}

static nas_tensor *tensor(nas_backend *be, int n, int c, int h, int w, const float *host)
{
    nas_tensor *t = NULL;
    assert_int_equal(nas_tensor_create(be, n, c, h, w, &t), NAS_OK);
    assert_int_equal(nas_tensor_upload(t, host, t->count), NAS_OK);
    return t;
}

/* train-mode loss and gradients at the current weights */
static double loss_of(nas_net *net, const nas_tensor *x, const nas_tensor *y)
{
    const nas_tensor *logits;
    assert_int_equal(nas_net_forward(net, x, 1, &logits), NAS_OK);
    float l;
    assert_int_equal(nas_net_backward(net, y, &l, NULL), NAS_OK);
    return l;
}

/* The fixture: an 8x8 single-channel input, a stem, an MBConv with SE
 * (hard-sigmoid gate) and relu6 / hswish, a residual add, a projection
 * skip, head conv, dropout and the classifier. */
static const char *const SMALL_CONF = "tests/data/conf/chain_train.conf";

static void test_param_count_and_gradients(void **st)
{
    (void)st;
    nas_config *cfg = malloc(sizeof *cfg);
    nas_space *s = space_load(SMALL_CONF, cfg);
    nas_genotype g = space_parse(s, "se_on:mb3_k3:mb3_k5|skip");
    nas_net_desc d = desc_of(s, &g);
    nas_backend *be = backend("ref");
    nas_net *net = NULL;
    nas_error err;
    assert_int_equal(nas_net_create(be, &d, 4, 7, &net, &err), NAS_OK);
    int64_t macs = 0, params = 0;
    assert_int_equal(nas_count_genotype(NULL, s, &g, &macs, &params), NAS_OK);
    assert_int_equal(nas_net_param_count(net), params);

    float *hx, *hy;
    batch(&d, 4, 11, &hx, &hy);
    nas_tensor *x = tensor(be, 4, d.in_c, d.in_h, d.in_w, hx);
    nas_tensor *y = tensor(be, 4, 1, 1, 1, hy);
    loss_of(net, x, y);
    nas_net_param p[256];
    int np = nas_net_params(net, p, 256);
    assert_true(np > 0 && np <= 256);
    /* a few elements of every trainable parameter: analytic vs central FD */
    int checked = 0, bad = 0;
    for (int i = 0; i < np; i++) {
        if (!p[i].grad)
            continue;
        size_t n = p[i].value->count;
        float *v = malloc(n * sizeof *v), *gr = malloc(n * sizeof *gr);
        assert_int_equal(nas_tensor_download(p[i].value, v, n), NAS_OK);
        loss_of(net, x, y); /* gradients at the unperturbed weights */
        assert_int_equal(nas_tensor_download(p[i].grad, gr, n), NAS_OK);
        for (size_t k = 0; k < n && k < 3; k++) {
            size_t e = (k * 7919) % n;
            float save = v[e], h = 1e-2f;
            v[e] = save + h;
            nas_tensor_upload(p[i].value, v, n);
            double lp = loss_of(net, x, y);
            v[e] = save - h;
            nas_tensor_upload(p[i].value, v, n);
            double lm = loss_of(net, x, y);
            v[e] = save;
            nas_tensor_upload(p[i].value, v, n);
            double num = (lp - lm) / (2.0 * h);
            checked++;
            if (fabs(num - gr[e]) > 2e-3 + 5e-2 * fabs(num)) {
                bad++;
                printf("  %s[%zu]: analytic %.6g numeric %.6g\n", p[i].name, e, (double)gr[e],
                       num);
            }
        }
        free(v);
        free(gr);
    }
    printf("  %d gradient elements checked, %d off\n", checked, bad);
    assert_true(checked > 40);
    assert_int_equal(bad, 0);
    free(hx);
    free(hy);
    nas_tensor_destroy(x);
    nas_tensor_destroy(y);
    nas_net_destroy(net);
    nas_backend_destroy(be);
    nas_space_destroy(s);
    free(cfg);
}

/* One genotype of examples/spaces/fashion-chain.conf on a pair of
 * backends (index 0 and 1): the net on each, for batches of up to b images
 * with weights from seed wseed, and the same b random images x and labels
 * y (seed dseed) uploaded to each. */
typedef struct pair_fixture {
    nas_net_desc d;
    nas_net *net[2];
    nas_tensor *x[2], *y[2];
} pair_fixture;

static void pair_setup(pair_fixture *f, const nas_space *s, const char *geno,
                       nas_backend *const bes[2], int b, uint64_t dseed, uint64_t wseed)
{
    nas_genotype g = space_parse(s, geno);
    f->d = desc_of(s, &g);
    float *hx, *hy;
    batch(&f->d, b, dseed, &hx, &hy);
    for (int k = 0; k < 2; k++) {
        nas_error err;
        f->net[k] = NULL;
        if (nas_net_create(bes[k], &f->d, b, wseed, &f->net[k], &err) != NAS_OK)
            fail_msg("%s: %s", geno, err.msg);
        f->x[k] = tensor(bes[k], b, f->d.in_c, f->d.in_h, f->d.in_w, hx);
        f->y[k] = tensor(bes[k], b, 1, 1, 1, hy);
    }
    free(hx);
    free(hy);
}

static void pair_teardown(pair_fixture *f)
{
    for (int k = 0; k < 2; k++) {
        nas_tensor_destroy(f->x[k]);
        nas_tensor_destroy(f->y[k]);
        nas_net_destroy(f->net[k]);
    }
}

/* cpu against ref: eval logits, train loss, and the logits after one SGD
 * step (every kernel, forward and backward, through the whole net). */
static void test_cpu_matches_ref(void **st)
{
    (void)st;
    nas_config *cfg = malloc(sizeof *cfg);
    nas_space *s = space_load("examples/spaces/fashion-chain.conf", cfg);
    const char *genos[] = {
        "mb1_k3|c24:d2:mb3_k5:mb6_k3|c40:d3:se_on:mb6_k5:skip:mb3_k3|mb6_k5:zero",
        "mb1_k3|c16:d1:skip:mb3_k3|c32:d2:se_off:mb3_k3:mb6_k3:mb3_k3|mb3_k3:mb6_k3",
    };
    for (int gi = 0; gi < 2; gi++) {
        nas_backend *bes[2] = {backend("ref"), backend("cpu")};
        pair_fixture f;
        pair_setup(&f, s, genos[gi], bes, 8, 5, 3);
        float *out[2][2], loss[2];
        for (int b = 0; b < 2; b++) {
            const nas_tensor *lg;
            for (int k = 0; k < 2; k++) {
                assert_int_equal(nas_net_forward(f.net[b], f.x[b], 0, &lg), NAS_OK);
                out[b][k] = malloc(lg->count * sizeof(float));
                assert_int_equal(nas_tensor_download(lg, out[b][k], lg->count), NAS_OK);
                if (k == 0) {
                    loss[b] = (float)loss_of(f.net[b], f.x[b], f.y[b]);
                    assert_int_equal(nas_net_sgd_step(f.net[b], 0.05f, 0.9f, 5e-4f, 1), NAS_OK);
                }
            }
        }
        pair_teardown(&f);
        assert_true(fabsf(loss[0] - loss[1]) < 1e-3f);
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < 8 * f.d.classes; i++)
                if (fabsf(out[0][k][i] - out[1][k][i]) > 2e-3f + 2e-3f * fabsf(out[0][k][i]))
                    fail_msg("%s: logits %d after %d steps: ref %g cpu %g", genos[gi], i, k,
                             (double)out[0][k][i], (double)out[1][k][i]);
        for (int b = 0; b < 2; b++) {
            free(out[b][0]);
            free(out[b][1]);
            nas_backend_destroy(bes[b]);
        }
    }
    nas_space_destroy(s);
    free(cfg);
}

/* Issue 34 item 2: one activation layout per network. A chain net whose
 * 24- and 40-channel projections sit between 48- to 240-channel
 * expansions, and one whose counts are all multiples of 16, keep every
 * activation and gradient of a training step, and every activation of an
 * eval forward, in a single layout on cpu
 * (on an AVX-512 host the first used to mix nChw16c and nChw8c, with a
 * reorder around every convolution between them), with the same loss as
 * ref; then a second net of the other kind on the SAME backend still
 * matches ref (each net sets its own layout plan before running). */
static void test_one_layout(void **st)
{
    (void)st;
    nas_config *cfg = malloc(sizeof *cfg);
    nas_space *s = space_load("examples/spaces/fashion-chain.conf", cfg);
    const char *genos[] = {
        "mb1_k3|c24:d2:mb3_k5:mb6_k3|c40:d3:se_on:mb6_k5:mb6_k3:mb6_k5|mb6_k5:mb6_k3",
        "mb1_k3|c16:d2:mb3_k3:mb3_k3|c32:d2:se_off:mb3_k3:mb3_k3:skip|mb3_k3:zero",
    };
    nas_backend *const bes[2] = {backend("ref"), backend("cpu")};
    pair_fixture f[2]; /* per genotype; [0] on ref, [1] on cpu */
    for (int gi = 0; gi < 2; gi++)
        pair_setup(&f[gi], s, genos[gi], bes, 4, 11 + gi, 5);
    /* An AVX-512 host (oneDNN's nChw16c kernels) gives the two nets
     * different layouts: nChw8c for net 0, nChw16c for net 1, so a plan
     * stuck at nChw8c fails here too. Elsewhere both are nChw8c. */
    int avx512 = 0;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
             !getenv("ONEDNN_MAX_CPU_ISA") && !getenv("DNNL_MAX_CPU_ISA");
#endif
    if (!avx512)
        printf("test_one_layout: no AVX-512 here, so both nets are nChw8c; the nChw16c "
               "plan of the second is not checked\n");
    int tag_of[2] = {0, 0};
    /* net 0, net 1, then net 0 again on the shared backends */
    for (int round = 0; round < 3; round++) {
        int gi = round % 2;
        double l_ref = loss_of(f[gi].net[0], f[gi].x[0], f[gi].y[0]);
        double l_cpu = loss_of(f[gi].net[1], f[gi].x[1], f[gi].y[1]);
        if (!(fabs(l_ref - l_cpu) < 1e-3))
            fail_msg("%s (round %d): loss cpu %g ref %g", genos[gi], round, l_cpu, l_ref);
        int tags[8];
        int k = nas__net_act_layouts(f[gi].net[1], tags, 8);
        if (k != 1)
            fail_msg("%s (round %d): %d activation layouts in one training step, want 1",
                     genos[gi], round, k);
        /* the count does not depend on how many tags fit in the array */
        assert_int_equal(nas__net_act_layouts(f[gi].net[1], NULL, 0), k);
        if (tag_of[gi] && tag_of[gi] != tags[0])
            fail_msg("%s (round %d): layout %d, was %d", genos[gi], round, tags[0], tag_of[gi]);
        tag_of[gi] = tags[0];
        if (round == 1 && avx512 && tag_of[0] == tag_of[1])
            fail_msg("AVX-512 host: the all-16-multiple net ran in the other net's layout %d",
                     tag_of[1]);
        assert_int_equal(nas__net_act_layouts(f[gi].net[0], tags, 8), 0); /* ref: plain */
        /* an eval forward of these nets, whose convolutions touching
         * 24- or 40-channel tensors hold 59% of the MACs, keeps one too */
        const nas_tensor *lg;
        assert_int_equal(nas_net_forward(f[gi].net[1], f[gi].x[1], 0, &lg), NAS_OK);
        k = nas__net_act_layouts(f[gi].net[1], tags, 8);
        if (k != 1)
            fail_msg("%s (round %d): %d activation layouts in an eval forward, want 1",
                     genos[gi], round, k);
    }
    for (int gi = 0; gi < 2; gi++)
        pair_teardown(&f[gi]);
    nas_backend_destroy(bes[0]);
    nas_backend_destroy(bes[1]);
    nas_space_destroy(s);
    free(cfg);
}

/* Issue 34: training with each batch norm fused with its activation
 * (oneDNN's fuse-ReLU batch norm on cpu; h-swish and ReLU6 composed) gives
 * the loss, every parameter gradient and the logits after an SGD step of
 * the same net run as separate steps, on cpu and ref. */
static void test_fused_bn_act(void **st)
{
    (void)st;
    nas_config *cfg = malloc(sizeof *cfg);
    nas_space *s = space_load("examples/spaces/fashion-chain.conf", cfg);
    nas_genotype g =
        space_parse(s, "mb1_k3|c24:d2:mb3_k5:mb6_k3|c40:d3:se_on:mb6_k5:skip:mb3_k3|mb6_k5:zero");
    nas_net_desc d = desc_of(s, &g);
    float *hx, *hy;
    batch(&d, 8, 11, &hx, &hy);
    const char *names[] = {"ref", "cpu"};
    for (int b = 0; b < 2; b++) {
        nas_backend *be = backend(names[b]), *be2 = backend(names[b]);
        nas_net *net[2];
        float loss[2], *lg[2];
        nas_net_param ps[2][512];
        int np = 0;
        nas_backend *bes[2] = {be, be2};
        nas_tensor *x[2], *y[2];
        for (int f = 0; f < 2; f++) {
            x[f] = tensor(bes[f], 8, d.in_c, d.in_h, d.in_w, hx);
            y[f] = tensor(bes[f], 8, 1, 1, 1, hy);
            nas_error err;
            if (nas_net_create(bes[f], &d, 8, 3, &net[f], &err) != NAS_OK)
                fail_msg("%s", err.msg);
            assert_int_equal(nas__net_set_bn_act(net[f], f), 1);
            /* stem, every MBConv's expansion and depthwise, head */
            assert_true(nas__net_bn_acts(net[f]) >= 10);
            loss[f] = (float)loss_of(net[f], x[f], y[f]);
            /* the cpu backend also runs the SE blocks' pool and gradients
             * inside the fused batch norm (stage 3: 2 with SE, stage 4: 1) */
            if (f == 1 && b == 1)
                assert_int_equal(nas__net_se_fused(net[f]), 3);
            else
                assert_int_equal(nas__net_se_fused(net[f]), 0);
            np = nas_net_params(net[f], ps[f], 512);
        }
        if (fabsf(loss[0] - loss[1]) > 1e-5f)
            fail_msg("%s loss: separate %.9g fused %.9g", names[b], (double)loss[0],
                     (double)loss[1]);
        for (int i = 0; i < np; i++) {
            if (!ps[0][i].grad)
                continue;
            size_t n = ps[0][i].grad->count;
            float *a = malloc(n * sizeof *a), *c = malloc(n * sizeof *c);
            assert_int_equal(nas_tensor_download(ps[0][i].grad, a, n), NAS_OK);
            assert_int_equal(nas_tensor_download(ps[1][i].grad, c, n), NAS_OK);
            for (size_t k = 0; k < n; k++)
                if (fabsf(a[k] - c[k]) > 1e-4f + 1e-3f * fabsf(a[k]))
                    fail_msg("%s %s[%zu]: separate %g fused %g", names[b], ps[0][i].name, k,
                             (double)a[k], (double)c[k]);
            free(a);
            free(c);
        }
        for (int f = 0; f < 2; f++) {
            const nas_tensor *l;
            assert_int_equal(nas_net_sgd_step(net[f], 0.05f, 0.9f, 5e-4f, 1), NAS_OK);
            assert_int_equal(nas_net_forward(net[f], x[f], 0, &l), NAS_OK);
            lg[f] = malloc(l->count * sizeof(float));
            assert_int_equal(nas_tensor_download(l, lg[f], l->count), NAS_OK);
        }
        for (int i = 0; i < 8 * d.classes; i++)
            if (fabsf(lg[0][i] - lg[1][i]) > 1e-4f + 1e-3f * fabsf(lg[0][i]))
                fail_msg("%s logits %d: separate %g fused %g", names[b], i, (double)lg[0][i],
                         (double)lg[1][i]);
        for (int f = 0; f < 2; f++) {
            free(lg[f]);
            nas_net_destroy(net[f]);
            nas_tensor_destroy(x[f]);
            nas_tensor_destroy(y[f]);
            nas_backend_destroy(bes[f]);
        }
    }
    free(hx);
    free(hy);
    nas_space_destroy(s);
    free(cfg);
}

/* Issue 34, item 4: eval forwards fold every batch norm into its dense or
 * depthwise convolution and run the activation after it (ReLU, ReLU6,
 * h-swish) as the convolution's post-op; the projection's BN adds into the
 * residual sum. After training moved the weights and running statistics
 * (a BN is an identity at initialisation), the folded eval logits equal
 * the plain conv -> BN -> activation steps' on ref and cpu, and again
 * after one more SGD step (the folds must be recomputed). */
static void test_folded_eval_chain(void **st)
{
    (void)st;
    static const struct {
        const char *conf, *genotype;
    } cases[] = {
        {"examples/spaces/fashion-chain.conf",
         "mb1_k3|c24:d2:mb3_k5:mb6_k3|c40:d3:se_on:mb6_k5:skip:mb3_k3|mb6_k5:zero"},
        {SMALL_CONF, "se_on:mb3_k3:mb3_k5|skip"},
        {SMALL_CONF, "se_off:mb3_k3:mb3_k5|mb3_k3"},
    };
    const char *names[] = {"ref", "cpu"};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        nas_config *cfg = malloc(sizeof *cfg);
        nas_space *s = space_load(cases[k].conf, cfg);
        nas_genotype g = space_parse(s, cases[k].genotype);
        nas_net_desc d = desc_of(s, &g);
        float *hx, *hy;
        batch(&d, 8, 17, &hx, &hy);
        for (int b = 0; b < 2; b++) {
            nas_backend *be = backend(names[b]);
            nas_tensor *x = tensor(be, 8, d.in_c, d.in_h, d.in_w, hx);
            nas_tensor *y = tensor(be, 8, 1, 1, 1, hy);
            nas_net *net = NULL;
            nas_error err;
            if (nas_net_create(be, &d, 8, 5, &net, &err) != NAS_OK)
                fail_msg("%s", err.msg);
            int acc = 0, grouped = 0, post = 0;
            int folded = nas__net_folded(net, &acc, &grouped, &post);
            /* every MBConv's expansion (mb3/mb6) and depthwise conv, with
             * its activation; the stem and head convs too */
            if (grouped < 2 || post < 4 || folded <= grouped)
                fail_msg("%s: %d folded convs, %d depthwise, %d with an activation post-op",
                         cases[k].genotype, folded, grouped, post);
            /* the first genotype's residual blocks (mb6_k3 in stage 1, mb3_k3
             * in stage 2): each projection adds the block's input in the
             * same op (nas_conv2d_fwd_fused_add), so no separate sum pass */
            int adds = nas__net_residual_adds(net, NULL);
            if (k == 0 && adds < 2)
                fail_msg("%s: %d projections add their residual", cases[k].genotype, adds);
            for (int round = 0; round < 2; round++) {
                for (int i = 0; i < 3; i++) {
                    (void)loss_of(net, x, y);
                    assert_int_equal(nas_net_sgd_step(net, 0.1f, 0.9f, 0, 0), NAS_OK);
                }
                const nas_tensor *lg;
                float *out[2];
                for (int f = 0; f < 2; f++) {
                    nas__net_set_fold(net, !f);
                    assert_int_equal(nas_net_forward(net, x, 0, &lg), NAS_OK);
                    out[f] = malloc(lg->count * sizeof(float));
                    assert_int_equal(nas_tensor_download(lg, out[f], lg->count), NAS_OK);
                }
                nas__net_set_fold(net, 1);
                /* and ref and cpu did add them (no silent fallback) */
                int ran = -1;
                if (nas__net_residual_adds(net, &ran) != ran)
                    fail_msg("%s on %s: %d of %d residual adds ran", cases[k].genotype,
                             names[b], ran, nas__net_residual_adds(net, NULL));
                double diff = 0, mag = 0;
                for (size_t i = 0; i < lg->count; i++) {
                    diff = fmax(diff, fabs((double)out[0][i] - out[1][i]));
                    mag = fmax(mag, fabs((double)out[1][i]));
                }
                if (!(diff <= 1e-4 + 1e-4 * mag) || mag == 0)
                    fail_msg("%s on %s, round %d: folded eval differs from the plain steps by "
                             "%g (max |logit| %g)",
                             cases[k].genotype, names[b], round, diff, mag);
                free(out[0]);
                free(out[1]);
            }
            nas_net_destroy(net);
            nas_tensor_destroy(x);
            nas_tensor_destroy(y);
            nas_backend_destroy(be);
        }
        free(hx);
        free(hy);
        nas_space_destroy(s);
        free(cfg);
    }
}

/* The .conf files of examples/spaces ("examples/spaces/NAME.conf"). */
static int shipped_spaces(char names[][300], int max)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/examples/spaces", NAS_SOURCE_DIR);
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL && n < max;) {
        size_t len = strlen(e->d_name);
        if (len > 5 && !strcmp(e->d_name + len - 5, ".conf"))
            snprintf(names[n++], 300, "examples/spaces/%s", e->d_name);
    }
    closedir(d);
    return n;
}

/* Every shipped space: one sampled genotype trains a few steps on cpu. */
static void test_shipped_spaces_train(void **st)
{
    (void)st;
    char spaces[32][300];
    int n = shipped_spaces(spaces, 32);
    assert_true(n >= 4); /* fashion-chain, proxyless, ofa-mbv3, mobilenetv2 */
    nas_backend *be = backend("cpu");
    for (int i = 0; i < n; i++) {
        nas_config *cfg = malloc(sizeof *cfg);
        nas_space *s = space_load(spaces[i], cfg);
        nas_rng r;
        nas_rng_seed(&r, 1, 1);
        nas_genotype g;
        nas_space_sample(s, &r, &g);
        nas_net_desc d = desc_of(s, &g);
        int b = d.in_h > 64 ? 2 : 8;
        nas_net *net = NULL;
        nas_error err;
        if (nas_net_create(be, &d, b, 1, &net, &err) != NAS_OK)
            fail_msg("%s: %s", spaces[i], err.msg);
        int64_t macs, params;
        assert_int_equal(nas_count_genotype(NULL, s, &g, &macs, &params), NAS_OK);
        assert_int_equal(nas_net_param_count(net), params);
        float *hx, *hy;
        batch(&d, b, 9, &hx, &hy);
        nas_tensor *x = tensor(be, b, d.in_c, d.in_h, d.in_w, hx);
        nas_tensor *y = tensor(be, b, 1, 1, 1, hy);
        double first = 0, last = 0;
        for (int k = 0; k < 4; k++) {
            last = loss_of(net, x, y);
            if (k == 0)
                first = last;
            assert_true(isfinite(last));
            assert_int_equal(nas_net_sgd_step(net, 0.02f, 0.9f, 0.0f, 0), NAS_OK);
        }
        printf("  %s: %lld params, loss %.4f -> %.4f on one batch\n", spaces[i],
               (long long)params, first, last);
        assert_true(last < first);
        free(hx);
        free(hy);
        nas_tensor_destroy(x);
        nas_tensor_destroy(y);
        nas_net_destroy(net);
        nas_space_destroy(s);
        free(cfg);
    }
    nas_backend_destroy(be);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_count_and_gradients),
        cmocka_unit_test(test_cpu_matches_ref),
        cmocka_unit_test(test_one_layout),
        cmocka_unit_test(test_fused_bn_act),
        cmocka_unit_test(test_folded_eval_chain),
        cmocka_unit_test(test_shipped_spaces_train),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
