/*
 * tests/unit/test_export_train.c - `nas export` and `nas train` as library
 * calls (issue 13), without the CLI:
 *  - nas_export_trial exports a stored trial by id as ONNX with its kept
 *    weights and logits (the .npz holds images, labels and logits of the
 *    asked shapes, and the logits are those of the kept weights), and the
 *    best trial as architecture JSON that reads back with the trial's
 *    genotype, network and weights path; a trial not done, two sources or
 *    no format are refused;
 *  - nas_arch_train trains that JSON for a few steps, writes its
 *    checkpoint beside it and a final_training row with the trial's ids,
 *    recipe, image counts and the accuracy it returned; stopped after
 *    epoch 1 (NAS_EINTR at stage "training") it resumes from the
 *    checkpoint; --proxy reruns the search's split; a genotype trains
 *    without a database or checkpoint; bad options are NAS_ECONFIG.
 * Fixture: a temporary store with one experiment (4 channels, ref backend)
 * and Fashion-MNIST-shaped idx files of 48 training and 16 test images.
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "nas/evaluator.h"
#include "nas/export.h"
#include "nas/rng.h"
#include "nas/store.h"
#include "trainer/weights_impl.h" /* nas__npz_read: the logits file */

#define GENO "|nor_conv_3x3~0|+|skip_connect~0|nor_conv_1x1~1|+|skip_connect~0|none~1|avg_pool_3x3~2|"
#define N_TRAIN 48
#define N_TEST 16

typedef struct fx {
    char dir[64];
    char db[128], weights[128], conf[1024];
    int64_t exp, done, pending;
    int64_t params, macs;
} fx;

static void path_in(const fx *f, char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", f->dir, name);
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* An idx file (big-endian header, then bytes) of n items of dims[1..]. */
static void write_idx(const char *path, unsigned magic, const unsigned *dims, int ndims,
                      const unsigned char *data, size_t bytes)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    unsigned char h[4];
    for (int i = -1; i < ndims; i++) {
        unsigned v = i < 0 ? magic : dims[i];
        h[0] = (unsigned char)(v >> 24), h[1] = (unsigned char)(v >> 16);
        h[2] = (unsigned char)(v >> 8), h[3] = (unsigned char)v;
        assert_int_equal(fwrite(h, 1, 4, fp), 4);
    }
    assert_int_equal(fwrite(data, 1, bytes, fp), bytes);
    assert_int_equal(fclose(fp), 0);
}

/* Fashion-MNIST-shaped files: n 28x28 images whose label is learnable (the
 * brightest quadrant pattern), PCG32(seed). */
static void write_split(const fx *f, const char *prefix, unsigned n, uint64_t seed)
{
    unsigned char *img = malloc((size_t)n * 784), *lab = malloc(n);
    assert_non_null(img);
    assert_non_null(lab);
    nas_rng r;
    nas_rng_seed(&r, seed, 1);
    for (unsigned i = 0; i < n; i++) {
        lab[i] = (unsigned char)nas_rng_bounded(&r, 10);
        for (int p = 0; p < 784; p++) {
            int quad = (p / 28 >= 14) * 2 + (p % 28 >= 14);
            img[(size_t)i * 784 + p] =
                (unsigned char)(((lab[i] >> quad) & 1) * 160 + nas_rng_bounded(&r, 96));
        }
    }
    char path[256];
    unsigned idims[3] = {n, 28, 28}, ldims[1] = {n};
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte", f->dir, prefix);
    write_idx(path, 0x803, idims, 3, img, (size_t)n * 784);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte", f->dir, prefix);
    write_idx(path, 0x801, ldims, 1, lab, n);
    free(img);
    free(lab);
}

/* The network the experiment builds for `geno` (C 4, N 1, 28x28, 10 classes). */
static nas_arch fixture_arch(const char *geno)
{
    nas_arch a;
    nas_arch_init(&a);
    a.net.channels = 4;
    snprintf(a.genotype, sizeof a.genotype, "%s", geno);
    nas_space_desc sd = {.type = NAS_SPACE_CELL, .op_mask = a.op_mask, .channels = 4, .stages = 3, .cells_per_stage = 1};
    nas_space *sp = NULL;
    nas_error err;
    assert_int_equal(nas_space_create(&sd, &sp, &err), NAS_OK);
    assert_int_equal(nas_space_parse(sp, geno, &a.net.genotype, &err), NAS_OK);
    nas_space_destroy(sp);
    return a;
}

/* A trial of the experiment: done with `val` and its network's counts, or
 * left pending. */
static int64_t add_trial(fx *f, nas_store *st, const char *geno, const char *key, int done,
                         double val)
{
    nas_error err;
    int64_t id;
    assert_int_equal(nas_store_trial_insert(st, f->exp, geno, key, "random", &id, &err), NAS_OK);
    if (!done)
        return id;
    assert_int_equal(nas_store_trial_start(st, id, 0, "cpu", &err), NAS_OK);
    nas_trial_result res;
    memset(&res, 0, sizeof res);
    res.val_accuracy = val;
    res.test_accuracy = -1;
    res.train_loss = 2.0;
    nas_arch a = fixture_arch(geno);
    assert_int_equal(nas_count_net(&a.net, &res.macs, &res.params, NULL, NULL), NAS_OK);
    res.latency_ms = 0.5;
    res.train_seconds = 1;
    res.epochs = 1;
    assert_int_equal(nas_store_trial_finish(st, id, &res, val, "", &err), NAS_OK);
    return id;
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/nas_test_export_train_XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    write_split(f, "train", N_TRAIN, 11);
    write_split(f, "t10k", N_TEST, 12);
    path_in(f, f->db, sizeof f->db, "lib.db");
    path_in(f, f->weights, sizeof f->weights, "kept.npz");
    snprintf(f->conf, sizeof f->conf,
             "experiment = \"lib\";\nseed = 3;\n"
             "data: { dir = \"%s\"; train_subset = 32; valid = 16; };\n"
             "space: { channels = 4; cells_per_stage = 1; };\n"
             "proxy: { epochs = 1; batch_size = 16; backend = \"ref\"; threads = 1; };\n"
             "search: { strategy = \"random\"; trials = 3; };\n",
             f->dir);
    nas_error err;
    nas_config cfg;
    assert_int_equal(nas_config_parse_string(f->conf, "lib.conf", &cfg, &err), NAS_OK);
    nas_store *st = NULL;
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK);
    char *canon = nas_config_canonical(&cfg);
    assert_non_null(canon);
    int created = 0;
    assert_int_equal(nas_store_experiment_open(st, "lib", canon, f->conf, "lib.conf", 3, "random",
                                               3, &f->exp, &created, &err),
                     NAS_OK);
    free(canon);
    nas_arch a = fixture_arch(GENO);
    assert_int_equal(nas_count_net(&a.net, &f->macs, &f->params, NULL, NULL), NAS_OK);
    add_trial(f, st, "|skip_connect~0|+|skip_connect~0|none~1|+|skip_connect~0|none~1|none~2|",
              "k1", 1, 0.40);
    f->done = add_trial(f, st, GENO, "k2", 1, 0.75); /* the best */
    f->pending = add_trial(f, st, GENO, "k3", 0, 0);
    /* its kept proxy weights: a network of seed 99, not the export's init seed */
    nas_backend *be = NULL;
    nas_net *net = NULL;
    assert_int_equal(nas_backend_create("ref", 1, 0, &be, &err), NAS_OK);
    assert_int_equal(nas_net_create(be, &a.net, 1, 99, &net, &err), NAS_OK);
    assert_int_equal(nas_weights_save(net, f->weights, &err), NAS_OK);
    assert_int_equal(nas_store_trial_weights_put(st, f->done, f->weights, &err), NAS_OK);
    nas_net_destroy(net);
    nas_backend_destroy(be);
    nas_store_close(st);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

/* The logits of the kept weights on the first n test images, computed here. */
static void kept_logits(const fx *f, const float *images, int n, float *out)
{
    nas_arch a = fixture_arch(GENO);
    nas_backend *be = NULL;
    nas_net *net = NULL;
    nas_tensor *x = NULL;
    const nas_tensor *y = NULL;
    nas_error err;
    assert_int_equal(nas_backend_create("ref", 1, 0, &be, &err), NAS_OK);
    assert_int_equal(nas_net_create(be, &a.net, n, 1, &net, &err), NAS_OK);
    assert_int_equal(nas_weights_load(net, f->weights, &err), NAS_OK);
    assert_int_equal(nas_tensor_create(be, n, 1, 28, 28, &x), NAS_OK);
    assert_int_equal(nas_tensor_upload(x, images, (size_t)n * 784), NAS_OK);
    assert_int_equal(nas_net_forward(net, x, 0, &y), NAS_OK);
    assert_int_equal(nas_tensor_download(y, out, (size_t)n * 10), NAS_OK);
    nas_tensor_destroy(x);
    nas_net_destroy(net);
    nas_backend_destroy(be);
}

static void test_export_trial_onnx_logits(void **state)
{
    fx *f = *state;
    char onnx[256], logits[256];
    path_in(f, onnx, sizeof onnx, "t.onnx");
    path_in(f, logits, sizeof logits, "t.logits.npz");
    nas_export_opts o;
    nas_export_opts_init(&o);
    o.db = f->db;
    o.trial = f->done;
    o.format = "onnx";
    o.out = onnx;
    o.logits = logits;
    o.logits_batch = 4;
    nas_export_result r;
    nas_error err;
    nas_error_clear(&err);
    assert_int_equal(nas_export_trial(&o, &r, &err), NAS_OK);
    assert_int_equal(r.arch.trial_id, f->done);
    assert_int_equal(r.arch.experiment_id, f->exp);
    assert_string_equal(r.arch.genotype, GENO);
    assert_int_equal(r.trained, 1);
    assert_int_equal(r.params, f->params);
    assert_int_equal(r.picked, 0);
    assert_true(file_size(onnx) > 1000);
    /* the logits file: 4 images, their labels, the kept weights' logits */
    nas__npz *z = NULL;
    assert_int_equal(nas__npz_read(logits, &z, &err), NAS_OK);
    const nas__npy *im = nas__npz_find(z, "images"), *lb = nas__npz_find(z, "labels"),
                   *lg = nas__npz_find(z, "logits");
    assert_non_null(im);
    assert_non_null(lb);
    assert_non_null(lg);
    assert_int_equal(im->count, 4 * 784);
    assert_int_equal(lb->count, 4);
    assert_int_equal(lg->ndim, 2);
    assert_int_equal(lg->shape[0], 4);
    assert_int_equal(lg->shape[1], 10);
    float want[40];
    kept_logits(f, im->data, 4, want);
    const float *got = lg->data;
    for (int i = 0; i < 40; i++)
        assert_float_equal(got[i], want[i], 1e-5);
    nas__npz_free(z);
}

static void test_export_best_json(void **state)
{
    fx *f = *state;
    char json[256];
    path_in(f, json, sizeof json, "best.json");
    nas_export_opts o;
    nas_export_opts_init(&o);
    o.db = f->db;
    o.best = 1;
    o.format = "json";
    o.out = json;
    nas_export_result r;
    nas_error err;
    nas_error_clear(&err);
    assert_int_equal(nas_export_trial(&o, &r, &err), NAS_OK);
    assert_int_equal(r.picked, 1);
    assert_string_equal(r.by_metric, "val_accuracy");
    assert_int_equal(r.by_maximize, 1);
    assert_int_equal(r.arch.trial_id, f->done);
    nas_arch back;
    assert_int_equal(nas_arch_read_json(json, &back, &err), NAS_OK);
    assert_string_equal(back.genotype, GENO);
    assert_int_equal(back.trial_id, f->done);
    assert_int_equal(back.net.channels, 4);
    assert_int_equal(back.recipe.batch_size, 16);
    assert_int_equal(back.data.valid, 16);
    assert_string_equal(back.data.dir, f->dir);
    assert_true(strstr(back.weights, "kept.npz") != NULL);
    assert_float_equal(back.metrics.val_accuracy, 0.75, 1e-12);
    /* by a column, lowest first: the other trial (no convolution) has fewer MACs */
    o.by = "macs:min";
    assert_int_equal(nas_export_trial(&o, &r, &err), NAS_OK);
    assert_int_not_equal(r.arch.trial_id, f->done);
    assert_true(r.arch.metrics.macs < f->macs);
    assert_int_equal(r.by_maximize, 0);
}

static void test_export_refusals(void **state)
{
    fx *f = *state;
    char out[256];
    path_in(f, out, sizeof out, "never.onnx");
    nas_export_opts o;
    nas_export_opts_init(&o);
    o.db = f->db;
    o.trial = f->pending;
    o.format = "onnx";
    o.out = out;
    nas_export_result r;
    nas_error err;
    nas_error_clear(&err);
    assert_int_equal(nas_export_trial(&o, &r, &err), NAS_EINVAL);
    assert_non_null(strstr(err.msg, "not done"));
    o.best = 1; /* two sources */
    assert_int_equal(nas_export_opts_check(&o, &err), NAS_EINVAL);
    assert_int_equal(nas_export_trial(&o, &r, &err), NAS_EINVAL);
    o.best = 0;
    o.trial = f->done;
    o.format = NULL;
    assert_int_equal(nas_export_trial(&o, &r, &err), NAS_EINVAL);
    assert_int_equal(file_size(out), -1);
}

/* Train options for the fixture: few images, batch 16, ref backend, quiet. */
static nas_arch_train_opts train_opts(const fx *f, const char *arch)
{
    nas_arch_train_opts o;
    nas_arch_train_opts_init(&o);
    o.arch = arch;
    o.epochs = 1;
    o.batch = 16;
    o.subset = 32;
    o.test_subset = 8;
    o.threads = 1;
    o.backend = "ref";
    o.data = f->dir;
    return o;
}

static void export_json(const fx *f, const char *json)
{
    nas_export_opts o;
    nas_export_opts_init(&o);
    o.db = f->db;
    o.trial = f->done;
    o.format = "json";
    o.out = json;
    nas_export_result r;
    nas_error err;
    assert_int_equal(nas_export_trial(&o, &r, &err), NAS_OK);
}

static void test_train_records_final_training(void **state)
{
    fx *f = *state;
    char json[256];
    path_in(f, json, sizeof json, "a.json");
    export_json(f, json);
    nas_arch_train_opts o = train_opts(f, json);
    o.db = f->db;
    nas_arch_train_result r;
    nas_error err;
    nas_error_clear(&err);
    assert_int_equal(nas_arch_train(&o, &r, &err), NAS_OK);
    assert_null(r.stage);
    assert_int_equal(r.epochs_done, 1);
    assert_int_equal(r.train_images, 32);
    assert_int_equal(r.test_images, 8);
    assert_true(r.test_accuracy >= 0 && r.test_accuracy <= 1);
    assert_true(isfinite(r.train_loss));
    assert_int_equal(r.params, f->params);
    /* the default checkpoint beside ARCH.json, named by mode/epochs/seed/augment
     * and (issue 33) every fingerprinted option given: batch, backend,
     * subset, data (a CRC-32 of the directory) */
    char ckpt[256];
    path_in(f, ckpt, sizeof ckpt, "a.full-e1-s3-crop4+flip-b16-ref-n32-data");
    assert_int_equal(strncmp(r.checkpoint, ckpt, strlen(ckpt)), 0);
    assert_string_equal(r.checkpoint + strlen(ckpt) + 8, ".ckpt.npz");
    assert_true(file_size(r.checkpoint) > 0);
    assert_true(r.final_training_id > 0);
    nas_store *st = NULL;
    assert_int_equal(nas_store_open(f->db, 1, &st, &err), NAS_OK);
    nas_store_final_training *ft = NULL;
    int n = 0;
    assert_int_equal(nas_store_final_training_list(st, f->exp, f->done, &ft, &n, &err), NAS_OK);
    assert_int_equal(n, 1);
    assert_int_equal(ft[0].id, r.final_training_id);
    assert_string_equal(ft[0].genotype, GENO);
    assert_int_equal(ft[0].epochs, 1);
    assert_int_equal(ft[0].train_images, 32);
    assert_string_equal(ft[0].augment, "crop4,flip");
    assert_string_equal(ft[0].backend, "ref");
    assert_int_equal(ft[0].params, f->params);
    assert_float_equal(ft[0].test_accuracy, r.test_accuracy, 1e-12);
    assert_int_equal(strncmp(ft[0].recipe, "mode=full epochs=1 batch_size=16 lr=0.1 ", 40), 0);
    assert_true(nas_store_final_training_is_full(&ft[0]));
    assert_non_null(strstr(ft[0].arch_json, "a.json"));
    free(ft);
    nas_store_close(st);
}

static void test_train_stop_and_resume(void **state)
{
    fx *f = *state;
    char json[256], ckpt[256];
    path_in(f, json, sizeof json, "b.json");
    path_in(f, ckpt, sizeof ckpt, "b.ckpt.npz");
    export_json(f, json);
    nas_arch_train_opts o = train_opts(f, json);
    o.epochs = 2;
    o.stop_after = 1;
    o.checkpoint = ckpt;
    o.augment = "none";
    nas_arch_train_result r;
    nas_error err;
    nas_error_clear(&err);
    assert_int_equal(nas_arch_train(&o, &r, &err), NAS_EINTR);
    assert_non_null(r.stage);
    assert_string_equal(r.stage, "training");
    assert_int_equal(strncmp(err.msg, "training: run the same command again", 36), 0);
    assert_true(file_size(ckpt) > 0);
    o.stop_after = 0;
    assert_int_equal(nas_arch_train(&o, &r, &err), NAS_OK);
    assert_int_equal(r.resumed_from, 1);
    assert_int_equal(r.epochs_done, 2);
    assert_int_equal(r.final_training_id, -1); /* no db */
}

static void test_train_proxy_and_genotype(void **state)
{
    fx *f = *state;
    char json[256];
    path_in(f, json, sizeof json, "c.json");
    export_json(f, json);
    nas_arch_train_opts o = train_opts(f, json);
    o.proxy = 1;
    o.subset = 0;
    o.checkpoint = "none";
    nas_arch_train_result r;
    nas_error err;
    nas_error_clear(&err);
    assert_int_equal(nas_arch_train(&o, &r, &err), NAS_OK);
    assert_int_equal(r.train_images, 32); /* the search's split: train_subset 32, valid 16 */
    assert_true(isfinite(r.val_accuracy));
    assert_string_equal(r.checkpoint, "");
    /* a bare genotype: no database, no checkpoint */
    nas_arch_train_opts g = train_opts(f, NULL);
    g.genotype = GENO;
    g.channels = 4;
    g.have_seed = 1;
    g.seed = 5;
    assert_int_equal(nas_arch_train(&g, &r, &err), NAS_OK);
    assert_string_equal(r.checkpoint, "");
    assert_int_equal(r.recipe.seed, 5);
    assert_int_equal(r.arch.net.channels, 4);
    assert_int_equal(r.params, f->params);
    /* refused before any work */
    g.genotype = "|bogus~0|";
    assert_int_equal(nas_arch_train(&g, &r, &err), NAS_EINVAL);
    assert_null(r.stage);
    g.genotype = GENO;
    g.proxy = 1;
    assert_int_equal(nas_arch_train_opts_check(&g, &err), NAS_ECONFIG);
    g.proxy = 0;
    g.augment = "rotate";
    assert_int_equal(nas_arch_train(&g, &r, &err), NAS_ECONFIG);
    g.augment = NULL;
    g.data = "/nonexistent";
    assert_int_equal(nas_arch_train(&g, &r, &err), NAS_EIO);
    assert_string_equal(r.stage, "loading Fashion-MNIST");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_export_trial_onnx_logits),
        cmocka_unit_test(test_export_best_json),
        cmocka_unit_test(test_export_refusals),
        cmocka_unit_test(test_train_records_final_training),
        cmocka_unit_test(test_train_stop_and_resume),
        cmocka_unit_test(test_train_proxy_and_genotype),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
