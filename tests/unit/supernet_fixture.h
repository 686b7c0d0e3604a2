/*
 * tests/unit/supernet_fixture.h - what the supernet tests share (header
 * only, static; include after <cmocka.h>): a shipped space on a backend
 * with synthetic images of its input shape, the short recipe, a supernet
 * trained a few steps, the genotypes under test and eval-mode logits.
 */
#ifndef NAS_TESTS_SUPERNET_FIXTURE_H
#define NAS_TESTS_SUPERNET_FIXTURE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "nas/layers.h"
#include "nas/supernet.h"
#include "nas/trainer.h"
#include "tests/unit/chain_space.h"

#define N_IMAGES 32
#define BATCH 8
#define STEPS 6
#define N_EVAL 16

typedef struct fixture {
    nas_config cfg;
    nas_space *space;
    nas_backend *be;
    nas_dataset *data;
    int c, h, w, classes;
} fixture;

static nas_dataset *synthetic(int n, int c, int h, int w, int classes, uint64_t seed)
{
    nas_dataset *d = calloc(1, sizeof *d);
    d->n = n;
    d->c = c;
    d->h = h;
    d->w = w;
    d->classes = classes;
    d->owns = 1;
    d->images = malloc((size_t)n * c * h * w * sizeof(float));
    d->labels = malloc((size_t)n);
    nas_rng r;
    nas_rng_seed(&r, seed, 7);
    for (int i = 0; i < n; i++) {
        d->labels[i] = (uint8_t)(i % classes);
        for (int k = 0; k < c * h * w; k++) /* a class-dependent bright band */
            d->images[(size_t)i * c * h * w + k] =
                (float)(nas_rng_uniform(&r) - 0.5f) + ((k / w) % classes == i % classes ? 1.0f : 0.0f);
    }
    return d;
}

static void fixture_open(fixture *f, const char *conf, const char *backend)
{
    memset(f, 0, sizeof *f);
    f->space = space_load(conf, &f->cfg);
    nas_space_input(f->space, &f->c, &f->h, &f->w, &f->classes);
    nas_error err;
    if (nas_backend_create(backend, 1, 0, &f->be, &err) != NAS_OK)
        fail_msg("backend %s: %s", backend, err.msg);
    f->data = synthetic(N_IMAGES, f->c, f->h, f->w, f->classes, 11);
}

static void fixture_close(fixture *f)
{
    nas_dataset_destroy(f->data);
    nas_backend_destroy(f->be);
    nas_space_destroy(f->space);
}

static nas_recipe recipe(void)
{
    nas_recipe r;
    memset(&r, 0, sizeof r);
    r.epochs = 2;
    r.batch_size = BATCH;
    r.lr = 0.05;
    r.momentum = 0.9;
    r.nesterov = 1;
    r.weight_decay = 5e-4;
    r.seed = 3;
    return r;
}

static nas_supernet *trained(const fixture *f, int64_t steps)
{
    nas_supernet *sn = NULL;
    nas_error err;
    if (nas_supernet_create(f->be, f->space, f->c, f->h, f->w, f->classes, 5, &sn, &err))
        fail_msg("create: %s", err.msg);
    nas_recipe r = recipe();
    nas_supernet_train_opts o = {&r, steps, NULL, NULL, NULL, NULL};
    nas_train_stats st;
    if (nas_supernet_train(sn, f->data, &o, &st, &err))
        fail_msg("train: %s", err.msg);
    assert_int_equal(st.steps, steps);
    return sn;
}

static nas_genotype genotype_of(const fixture *f, const char *cell)
{
    if (cell)
        return space_parse(f->space, cell);
    /* chain: the narrowest width of each stage, op choice 1, deepest depth */
    nas_genotype g;
    g.len = nas_space_seq_len(f->space);
    for (int i = 0; i < g.len; i++) {
        char nm[64];
        int n = nas_space_decision_choices(f->space, i), pick = n > 1 ? 1 : 0;
        nas_space_decision_name(f->space, i, nm, sizeof nm);
        if (strstr(nm, ".channels"))
            pick = 0;
        if (strstr(nm, ".depth"))
            pick = n - 1;
        g.tok[i] = (uint8_t)nas_space_decision_token(f->space, i, pick);
    }
    assert_true(nas_space_is_valid(f->space, &g));
    return g;
}

/* Eval-mode logits of net on the first N_EVAL images of d into out. */
static void eval_logits(nas_backend *be, nas_net *net, const nas_dataset *d, float *out,
                        int classes)
{
    nas_tensor *x = NULL;
    const nas_tensor *logits;
    assert_int_equal(nas_tensor_create(be, N_EVAL, d->c, d->h, d->w, &x), NAS_OK);
    assert_int_equal(nas_tensor_upload(x, d->images, x->count), NAS_OK);
    assert_int_equal(nas_net_forward(net, x, 0, &logits), NAS_OK);
    assert_int_equal(nas_tensor_download(logits, out, (size_t)N_EVAL * classes), NAS_OK);
    nas_tensor_destroy(x);
}

#define CELL_CONF "examples/fashion-cells.conf"
#define CHAIN_CONF "examples/fashion-mobile.conf"
#define CELL_G "|nor_conv_3x3~0|+|skip_connect~0|nor_conv_1x1~1|+|avg_pool_3x3~0|none~1|nor_conv_3x3~2|"

#endif
