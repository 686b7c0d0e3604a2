/*
 * tests/unit/test_export.c - weights files, architecture JSON and
 * resumable full training (issue 5):
 *  - nas_weights_save / nas_weights_load round trip: a second net with
 *    other initial weights gives bit-identical logits after loading;
 *  - load errors: missing file, damaged byte (CRC), another architecture;
 *  - architecture JSON round trip, and damaged / invalid JSON rejected
 *    with the file, position or key in the message;
 *  - nas_train_resumable without augmentation equals nas_train bit for
 *    bit; stopped after epoch 1 and resumed from its checkpoint, it ends
 *    with the same weights as an uninterrupted run; a checkpoint of
 *    another run is refused; augmentation is deterministic and changes
 *    the result;
 *  - (issue 19) a checkpoint with impossible progress counters is refused
 *    as damaged; one of another backend, precision or training data is
 *    refused naming the difference; one written before backend, precision
 *    and data were fingerprinted resumes with a warning.
 * Runs on the ref backend with small synthetic images (8x8).
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "nas/export.h"
#include "nas/trainer.h"
#include "tests/unit/tiny_data.h"
#include "tests/unit/tiny_net.h"
#include "trainer/weights_impl.h" /* nas__npz_*: rewriting checkpoints */

enum { NONE = NAS_OP_NONE, SKIP = NAS_OP_SKIP_CONNECT, C1 = NAS_OP_NOR_CONV_1X1,
       C3 = NAS_OP_NOR_CONV_3X3, POOL = NAS_OP_AVG_POOL_3X3 };

#define SCRATCH_NAME "export"
#include "scratch_dir.h" /* g_dir */

static void path_in(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", g_dir, name);
}

static nas_backend *ref_backend(void)
{
    nas_backend *be = NULL;
    nas_error err;
    assert_int_equal(nas_backend_create("ref", 1, 0, &be, &err), NAS_OK);
    return be;
}

/* A synthetic data set: n 1x8x8 images whose label is learnable (class =
 * the quadrant-brightness pattern), PCG32(seed). */
static nas_dataset *synth(int n, uint64_t seed)
{
    nas_dataset *d = tiny_data_alloc(n);
    nas_rng r;
    nas_rng_seed(&r, seed, 7);
    for (int i = 0; i < n; i++) {
        int label = (int)nas_rng_bounded(&r, 5);
        d->labels[i] = (uint8_t)label;
        for (int p = 0; p < 64; p++) {
            int quad = (p / 8 >= 4) * 2 + (p % 8 >= 4);
            d->images[i * 64 + p] = nas_rng_normal(&r) * 0.5f + (quad == label % 4 ? 1.0f : 0.0f) +
                                    (label == 4 ? 0.7f : 0.0f);
        }
    }
    return d;
}

/* Logits of `net` (eval mode) on the first b images of d, into out. */
static void logits_of(nas_net *net, nas_backend *be, const nas_dataset *d, int b, float *out)
{
    nas_tensor *x = NULL;
    const nas_tensor *y = NULL;
    assert_int_equal(nas_tensor_create(be, b, 1, 8, 8, &x), NAS_OK);
    assert_int_equal(nas_tensor_upload(x, d->images, (size_t)b * 64), NAS_OK);
    assert_int_equal(nas_net_forward(net, x, 0, &y), NAS_OK);
    assert_int_equal(nas_tensor_download(y, out, y->count), NAS_OK);
    nas_tensor_destroy(x);
}

/* All parameters and buffers of net, concatenated (caller frees). */
static float *all_weights(nas_net *net, size_t *count)
{
    int np = nas_net_params(net, NULL, 0);
    nas_net_param *p = calloc((size_t)np, sizeof *p);
    nas_net_params(net, p, np);
    size_t total = 0;
    for (int i = 0; i < np; i++)
        total += p[i].value->count;
    float *w = malloc(total * sizeof *w);
    size_t off = 0;
    for (int i = 0; i < np; i++) {
        assert_int_equal(nas_tensor_download(p[i].value, w + off, p[i].value->count), NAS_OK);
        off += p[i].value->count;
    }
    free(p);
    *count = total;
    return w;
}

static void test_weights_round_trip(void **state)
{
    (void)state;
    static const int ops[6] = {C3, NONE, C1, SKIP, POOL, C3};
    nas_net_desc d = tiny_net_desc(ops, 1);
    nas_backend *be = ref_backend();
    nas_net *a = NULL, *b = NULL;
    nas_error err;
    assert_int_equal(nas_net_create(be, &d, 16, 1, &a, &err), NAS_OK);
    assert_int_equal(nas_net_create(be, &d, 16, 2, &b, &err), NAS_OK);
    nas_dataset *data = synth(64, 3);
    nas_recipe rec = {1, 16, 0.05, 0.9, 1, 5e-4, NAS_SCHEDULE_COSINE, 11, {0, 0, 0}, 0};
    /* Training moves BN running statistics away from (0, 1) too. */
    assert_int_equal(nas_train(a, data, &rec, NULL, NULL, NULL, &err), NAS_OK);
    float la[8 * 5], lb[8 * 5];
    logits_of(a, be, data, 8, la);
    logits_of(b, be, data, 8, lb);
    assert_memory_not_equal(la, lb, sizeof la);
    char path[300];
    path_in(path, sizeof path, "w.npz");
    assert_int_equal(nas_weights_save(a, path, &err), NAS_OK);
    assert_int_equal(access(path, F_OK), 0);
    char tmp[310];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    assert_int_not_equal(access(tmp, F_OK), 0); /* renamed into place */
    assert_int_equal(nas_weights_load(b, path, &err), NAS_OK);
    logits_of(b, be, data, 8, lb);
    assert_memory_equal(la, lb, sizeof la);

    /* Another architecture: refused, naming the file. */
    static const int other[6] = {C3, C3, C3, SKIP, C3, C3};
    nas_net_desc d2 = tiny_net_desc(other, 1);
    nas_net *c = NULL;
    assert_int_equal(nas_net_create(be, &d2, 8, 1, &c, &err), NAS_OK);
    assert_int_equal(nas_weights_load(c, path, &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, "another architecture"));
    assert_non_null(strstr(err.msg, "w.npz"));

    /* A damaged byte in the middle: the CRC catches it. */
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size / 2, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, size / 2, SEEK_SET);
    fputc(ch ^ 0x55, f);
    fclose(f);
    assert_int_equal(nas_weights_load(b, path, &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, "CRC"));
    /* Missing file. */
    path_in(path, sizeof path, "missing.npz");
    assert_int_equal(nas_weights_load(b, path, &err), NAS_EIO);
    assert_non_null(strstr(err.msg, "missing.npz"));
    /* Unwritable place. */
    assert_int_equal(nas_weights_save(a, "/nonexistent-dir/w.npz", &err), NAS_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent-dir/w.npz"));

    nas_net_destroy(a);
    nas_net_destroy(b);
    nas_net_destroy(c);
    nas_dataset_destroy(data);
    nas_backend_destroy(be);
}

static void test_arch_json(void **state)
{
    (void)state;
    nas_arch a;
    nas_arch_init(&a);
    snprintf(a.genotype, sizeof a.genotype,
             "|nor_conv_3x3~0|+|none~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_1x1~1|none~2|");
    a.net.channels = 8;
    a.net.cells_per_stage = 2;
    a.recipe.epochs = 7;
    a.recipe.batch_size = 96;
    a.recipe.lr = 0.1;
    a.recipe.momentum = 0.85;
    a.recipe.nesterov = 0;
    a.recipe.weight_decay = 3e-4;
    a.recipe.schedule = NAS_SCHEDULE_CONSTANT;
    a.recipe.seed = 12345678901234ull;
    a.data.train_subset = 1000;
    a.data.valid = 500;
    a.data.split_seed = 99;
    a.metrics.val_accuracy = 0.8125;
    a.metrics.macs = 123456;
    a.metrics.params = 7890;
    a.trial_id = 4;
    a.experiment_id = 2;
    snprintf(a.experiment, sizeof a.experiment, "exp");
    char path[300];
    path_in(path, sizeof path, "a.json");
    nas_error err;
    assert_int_equal(nas_arch_write_json(&a, path, &err), NAS_OK);
    nas_arch b;
    assert_int_equal(nas_arch_read_json(path, &b, &err), NAS_OK);
    assert_string_equal(b.genotype, a.genotype);
    static const uint8_t toks[6] = {C3, NONE, POOL, SKIP, C1, NONE};
    assert_int_equal(b.net.genotype.len, 6);
    assert_memory_equal(b.net.genotype.tok, toks, 6);
    assert_int_equal(b.net.channels, 8);
    assert_int_equal(b.net.cells_per_stage, 2);
    assert_int_equal(b.net.in_h, 28);
    assert_int_equal(b.net.classes, 10);
    assert_int_equal(b.recipe.epochs, 7);
    assert_int_equal(b.recipe.batch_size, 96);
    assert_true(b.recipe.lr == 0.1 && b.recipe.momentum == 0.85 && b.recipe.weight_decay == 3e-4);
    assert_int_equal(b.recipe.nesterov, 0);
    assert_int_equal(b.recipe.schedule, NAS_SCHEDULE_CONSTANT);
    assert_true(b.recipe.seed == 12345678901234ull);
    assert_int_equal(b.data.train_subset, 1000);
    assert_int_equal(b.data.valid, 500);
    assert_true(b.data.split_seed == 99);
    assert_true(b.metrics.val_accuracy == 0.8125);
    assert_true(isnan(b.metrics.latency_ms)); /* missing stays missing */
    assert_int_equal(b.metrics.macs, 123456);
    assert_int_equal(b.trial_id, 4);
    assert_string_equal(b.experiment, "exp");

    /* Damaged: truncated in the middle -> position in the message. */
    FILE *f = fopen(path, "r+b");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    assert_int_equal(truncate(path, size / 2), 0);
    assert_int_equal(nas_arch_read_json(path, &b, &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, "a.json:"));
    assert_non_null(strstr(err.msg, "not valid JSON"));

    /* Valid JSON, wrong content. */
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"[1,2]", "must be an object"},
        {"{\"format\": \"other\", \"version\": 1}", "key 'format'"},
        {"{\"format\": \"nas-architecture\", \"version\": 99}", "key 'version'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        f = fopen(path, "w");
        fputs(bad[i].text, f);
        fclose(f);
        assert_int_equal(nas_arch_read_json(path, &b, &err), NAS_EFORMAT);
        assert_non_null(strstr(err.msg, bad[i].want));
    }
    /* A bad genotype and a bad recipe value in an otherwise good file. */
    a.recipe.lr = 0.1;
    snprintf(a.genotype, sizeof a.genotype, "|conv9x9~0|+|none~0|none~1|+|none~0|none~1|none~2|");
    assert_int_equal(nas_arch_write_json(&a, path, &err), NAS_OK);
    assert_int_equal(nas_arch_read_json(path, &b, &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, "genotype"));
    assert_non_null(strstr(err.msg, "conv9x9"));
    snprintf(a.genotype, sizeof a.genotype,
             "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|");
    assert_int_equal(nas_arch_write_json(&a, path, &err), NAS_OK);
    assert_int_equal(nas_arch_read_json(path, &b, &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, "genotype"));
    snprintf(a.genotype, sizeof a.genotype,
             "|nor_conv_3x3~0|+|none~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_1x1~1|none~2|");
    a.recipe.batch_size = 0;
    assert_int_equal(nas_arch_write_json(&a, path, &err), NAS_OK);
    assert_int_equal(nas_arch_read_json(path, &b, &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, "recipe.batch_size"));
    path_in(path, sizeof path, "none.json");
    assert_int_equal(nas_arch_read_json(path, &b, &err), NAS_EIO);
    assert_int_equal(nas_arch_write_json(&a, "/nonexistent-dir/a.json", &err), NAS_EIO);
}

/* Issue 28: the data settings ARCH.json carries - a folder's data.size
 * (proxy_data.size) round-trips, a file without it reads as unset, a bad
 * one is refused naming the key; idx/npy files name no data.dir. */
static void test_arch_json_data(void **state)
{
    (void)state;
    nas_arch a, b;
    nas_arch_init(&a);
    snprintf(a.genotype, sizeof a.genotype,
             "|nor_conv_3x3~0|+|none~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_1x1~1|none~2|");
    snprintf(a.data.format, sizeof a.data.format, "folder");
    snprintf(a.data.dir, sizeof a.data.dir, "/data/imgs");
    a.data.size[0] = 30;
    a.data.size[1] = 28;
    char path[300], text[8192];
    path_in(path, sizeof path, "data.json");
    nas_error err;
    assert_int_equal(nas_arch_write_json(&a, path, &err), NAS_OK);
    assert_int_equal(nas_arch_read_json(path, &b, &err), NAS_OK);
    assert_int_equal(b.data.size[0], 30);
    assert_int_equal(b.data.size[1], 28);
    assert_string_equal(b.data.dir, "/data/imgs");
    a.data.size[0] = a.data.size[1] = 0; /* unset: no key, reads as unset */
    assert_int_equal(nas_arch_write_json(&a, path, &err), NAS_OK);
    FILE *f = fopen(path, "r");
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    assert_null(strstr(text, "\"size\""));
    assert_int_equal(nas_arch_read_json(path, &b, &err), NAS_OK);
    assert_int_equal(b.data.size[0], 0);
    char *dir = strstr(text, "\"/data/imgs\""); /* a bad size is refused */
    assert_non_null(dir);
    char bad[8300];
    snprintf(bad, sizeof bad, "%.*s\"/data/imgs\", \"size\": [0, 5]%s", (int)(dir - text), text,
             dir + strlen("\"/data/imgs\""));
    f = fopen(path, "w");
    fputs(bad, f);
    fclose(f);
    assert_int_equal(nas_arch_read_json(path, &b, &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, "proxy_data.size"));
    snprintf(a.data.format, sizeof a.data.format, "npy"); /* files, no directory */
    snprintf(a.data.train_images, sizeof a.data.train_images, "/data/x.npy");
    snprintf(a.data.train_labels, sizeof a.data.train_labels, "/data/y.npy");
    assert_int_equal(nas_arch_write_json(&a, path, &err), NAS_OK);
    f = fopen(path, "r");
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    assert_null(strstr(text, "\"dir\""));
    assert_null(strstr(text, "/data/imgs"));
    assert_int_equal(nas_arch_read_json(path, &b, &err), NAS_OK);
    assert_string_equal(b.data.train_images, "/data/x.npy");
}

/* Train a fresh net (seed 5) with opts; return its weights. */
static float *train_with(nas_backend *be, const nas_dataset *data, const nas_full_train_opts *o,
                         int *rc_out, int *resumed, size_t *count)
{
    static const int ops[6] = {C3, C1, POOL, SKIP, NONE, C3};
    nas_net_desc d = tiny_net_desc(ops, 1);
    nas_net *net = NULL;
    nas_error err;
    assert_int_equal(nas_net_create(be, &d, o->recipe->batch_size, 5, &net, &err), NAS_OK);
    nas_train_stats st;
    *rc_out = nas_train_resumable(net, data, o, &st, resumed, &err);
    float *w = all_weights(net, count);
    nas_net_destroy(net);
    return w;
}

static void test_resumable_training(void **state)
{
    (void)state;
    nas_backend *be = ref_backend();
    nas_dataset *data = synth(80, 9);
    nas_recipe rec = {3, 16, 0.05, 0.9, 1, 5e-4, NAS_SCHEDULE_COSINE, 21, {0, 0, 0}, 0};
    nas_error err;

    /* Same as nas_train, bit for bit, without augmentation. */
    static const int ops[6] = {C3, C1, POOL, SKIP, NONE, C3};
    nas_net_desc d = tiny_net_desc(ops, 1);
    nas_net *net = NULL;
    assert_int_equal(nas_net_create(be, &d, 16, 5, &net, &err), NAS_OK);
    assert_int_equal(nas_train(net, data, &rec, NULL, NULL, NULL, &err), NAS_OK);
    size_t n0;
    float *w0 = all_weights(net, &n0);
    nas_net_destroy(net);
    nas_full_train_opts o;
    memset(&o, 0, sizeof o);
    o.recipe = &rec;
    int rc, resumed;
    size_t n1;
    float *w1 = train_with(be, data, &o, &rc, &resumed, &n1);
    assert_int_equal(rc, NAS_OK);
    assert_int_equal(resumed, 0);
    assert_int_equal(n1, n0);
    assert_memory_equal(w0, w1, n0 * sizeof *w0);

    /* With augmentation: deterministic, and different. */
    o.augment.crop_pad = 2;
    o.augment.flip = 1;
    size_t n2, n3;
    float *w2 = train_with(be, data, &o, &rc, &resumed, &n2);
    assert_int_equal(rc, NAS_OK);
    float *w3 = train_with(be, data, &o, &rc, &resumed, &n3);
    assert_memory_equal(w2, w3, n2 * sizeof *w2);
    assert_memory_not_equal(w0, w2, n0 * sizeof *w0);

    /* Stop after epoch 1, resume from the checkpoint: same as w2. */
    char ck[300];
    path_in(ck, sizeof ck, "run.ckpt.npz");
    o.checkpoint = ck;
    o.stop_after = 1;
    size_t n4, n5;
    float *w4 = train_with(be, data, &o, &rc, &resumed, &n4);
    assert_int_equal(rc, NAS_EINTR);
    assert_int_equal(access(ck, F_OK), 0);
    o.stop_after = 0;
    float *w5 = train_with(be, data, &o, &rc, &resumed, &n5);
    assert_int_equal(rc, NAS_OK);
    assert_int_equal(resumed, 1);
    assert_memory_equal(w2, w5, n2 * sizeof *w2);
    /* The checkpoint also loads as plain weights (it is an .npz state_dict). */
    assert_int_equal(nas_net_create(be, &d, 16, 77, &net, &err), NAS_OK);
    assert_int_equal(nas_weights_load(net, ck, &err), NAS_OK);
    size_t n6;
    float *w6 = all_weights(net, &n6);
    assert_memory_equal(w2, w6, n2 * sizeof *w2);
    nas_net_destroy(net);

    /* A checkpoint of another run (other seed) is refused. */
    nas_recipe other = rec;
    other.seed = 22;
    o.recipe = &other;
    float *w7 = train_with(be, data, &o, &rc, &resumed, &n6);
    assert_int_equal(rc, NAS_EEXIST);

    free(w0);
    free(w1);
    free(w2);
    free(w3);
    free(w4);
    free(w5);
    free(w6);
    free(w7);
    nas_dataset_destroy(data);
    nas_backend_destroy(be);
}

/* Copy the .npz `src` to `dst` with member `name` replaced by the given
 * array (the way a damaged or edited checkpoint would look). */
static void rewrite_member(const char *src, const char *dst, const char *name, const char *descr,
                           int64_t len, const void *data, size_t nbytes)
{
    nas__npz *z = NULL;
    nas__npz_writer *w = NULL;
    nas_error err = {0};
    assert_int_equal(nas__npz_read(src, &z, &err), NAS_OK);
    assert_int_equal(nas__npz_create(dst, &w, &err), NAS_OK);
    for (int i = 0; i < nas__npz_count(z); i++) {
        const nas__npy *a = nas__npz_at(z, i);
        if (strcmp(a->name, name) == 0)
            assert_int_equal(nas__npz_add(w, name, descr, 1, &len, data, nbytes, &err), NAS_OK);
        else
            assert_int_equal(nas__npz_add(w, a->name, a->descr, a->ndim, a->shape, a->data,
                                          a->count * a->itemsize, &err),
                             NAS_OK);
    }
    assert_int_equal(nas__npz_close(w, &err), NAS_OK);
    nas__npz_free(z);
}

static void note_into(void *ctx, const char *msg)
{
    snprintf(ctx, 1024, "%s", msg);
}

/* nas_train_resumable of a fresh tiny net (seed 5) with opts o on be. */
static int resume_on(nas_backend *be, const nas_dataset *data, const nas_full_train_opts *o,
                     int *resumed, nas_error *err)
{
    static const int ops[6] = {C3, C1, POOL, SKIP, NONE, C3};
    nas_net_desc d = tiny_net_desc(ops, 1);
    nas_net *net = NULL;
    assert_int_equal(nas_net_create(be, &d, o->recipe->batch_size, 5, &net, err), NAS_OK);
    nas_train_stats st;
    int rc = nas_train_resumable(net, data, o, &st, resumed, err);
    nas_net_destroy(net);
    return rc;
}

static void expect_refused(nas_backend *be, const nas_dataset *data, const nas_full_train_opts *o,
                           int code, const char *what, const char *why)
{
    nas_error err = {0};
    int resumed = -1;
    int rc = resume_on(be, data, o, &resumed, &err);
    if (rc != code || !strstr(err.msg, what))
        fail_msg("%s: expected status %d and '%s' in the message, got %d: %s", why, code, what,
                 rc, err.msg);
    printf("refused (%s): %s\n", why, err.msg);
}

/* Issue 19: a checkpoint whose CRC and fingerprint pass but whose
 * progress counters are out of range is refused; the fingerprint covers
 * backend, precision and data, and a mismatch says what differs. */
static void test_checkpoint_checks(void **state)
{
    (void)state;
    nas_backend *be = ref_backend();
    nas_dataset *data = synth(80, 9);
    nas_recipe rec = {2, 16, 0.05, 0.9, 1, 5e-4, NAS_SCHEDULE_COSINE, 21, {0, 0, 0}, 0}; /* 5 steps/epoch */
    nas_full_train_opts o;
    memset(&o, 0, sizeof o);
    o.recipe = &rec;
    char ck[300], bad[300];
    path_in(ck, sizeof ck, "checks.ckpt.npz");
    path_in(bad, sizeof bad, "bad.ckpt.npz");
    o.checkpoint = ck;
    o.stop_after = 1;
    nas_error err = {0};
    int resumed = 0;
    assert_int_equal(resume_on(be, data, &o, &resumed, &err), NAS_EINTR);
    o.stop_after = 0;

    /* progress = {version, epochs done, epochs, steps done} */
    static const int64_t bad_prog[][4] = {
        {1, -3, 2, 5},             /* negative epoch: trained 5 epochs, "epoch -2/2" */
        {1, 3, 2, 15},             /* beyond the recipe's epochs */
        {1, 1, 2, 1LL << 40},      /* steps truncated to int */
        {1, 1, 2, 3},              /* steps do not match the epochs done */
        {1, 1, 7, 5},              /* another epoch count */
        {1, 1, 2, -5},
    };
    o.checkpoint = bad;
    for (size_t i = 0; i < sizeof bad_prog / sizeof bad_prog[0]; i++) {
        rewrite_member(ck, bad, "state/progress", "<i8", 4, bad_prog[i], sizeof bad_prog[i]);
        expect_refused(be, data, &o, NAS_EFORMAT, "progress", "bad progress counters");
    }
    static const int64_t good_prog[4] = {1, 1, 2, 5};
    rewrite_member(ck, bad, "state/progress", "<i8", 4, good_prog, sizeof good_prog);
    assert_int_equal(resume_on(be, data, &o, &resumed, &err), NAS_OK);
    assert_int_equal(resumed, 1);

    /* another backend */
    o.checkpoint = ck;
    nas_backend *cpu = NULL;
    if (nas_backend_create("cpu", 1, 0, &cpu, &err) == NAS_OK) {
        expect_refused(cpu, data, &o, NAS_EEXIST, "backend", "ref checkpoint, cpu run");
        /* another precision: a bf16 checkpoint resumed in fp32 and back */
        if (nas_backend_set_precision(cpu, "bf16") == NAS_OK) {
            char ck16[300];
            path_in(ck16, sizeof ck16, "bf16.ckpt.npz");
            o.checkpoint = ck16;
            o.stop_after = 1;
            assert_int_equal(resume_on(cpu, data, &o, &resumed, &err), NAS_EINTR);
            o.stop_after = 0;
            assert_int_equal(nas_backend_set_precision(cpu, "fp32"), NAS_OK);
            expect_refused(cpu, data, &o, NAS_EEXIST, "precision", "bf16 checkpoint, fp32 run");
            o.checkpoint = ck;
        } else {
            printf("SKIPPED the precision check: the cpu backend has no bf16 here\n");
        }
        nas_backend_destroy(cpu);
    } else {
        printf("SKIPPED the backend and precision checks: no cpu backend\n");
    }

    /* other images, same count */
    nas_dataset *other = synth(80, 10);
    expect_refused(be, other, &o, NAS_EEXIST, "data", "other training images");
    nas_dataset_destroy(other);

    /* another seed: the message names it */
    nas_recipe seed22 = rec;
    seed22.seed = 22;
    o.recipe = &seed22;
    expect_refused(be, data, &o, NAS_EEXIST, "seed: 21 in the checkpoint, 22 here", "seed");
    o.recipe = &rec;

    /* A checkpoint of nas before issue 19 (fingerprint without backend,
     * precision and data) resumes, with a warning. */
    nas__npz *z = NULL;
    assert_int_equal(nas__npz_read(ck, &z, &err), NAS_OK);
    const nas__npy *f = nas__npz_find(z, "state/fingerprint");
    assert_non_null(f);
    char fp[1024];
    snprintf(fp, sizeof fp, "%.*s", (int)f->count, (const char *)f->data);
    nas__npz_free(z);
    char *cut = strstr(fp, " | backend=");
    assert_non_null(cut);
    *cut = 0;
    rewrite_member(ck, bad, "state/fingerprint", "|u1", (int64_t)strlen(fp), fp, strlen(fp));
    o.checkpoint = bad;
    char note[1024] = "";
    o.note = note_into;
    o.ctx = note;
    assert_int_equal(resume_on(be, data, &o, &resumed, &err), NAS_OK);
    assert_int_equal(resumed, 1);
    if (!strstr(note, "older nas") || !strstr(note, "backend=ref"))
        fail_msg("no warning for an old checkpoint: '%s'", note);
    printf("old checkpoint: %s\n", note);
    /* ... but not when the rest differs */
    o.note = NULL;
    rewrite_member(ck, bad, "state/fingerprint", "|u1", (int64_t)strlen(fp), fp, strlen(fp));
    o.recipe = &seed22;
    expect_refused(be, data, &o, NAS_EEXIST, "seed", "old checkpoint, other seed");
    o.recipe = &rec;

    /* the right run still resumes */
    o.checkpoint = ck;
    assert_int_equal(resume_on(be, data, &o, &resumed, &err), NAS_OK);
    assert_int_equal(resumed, 1);
    nas_dataset_destroy(data);
    nas_backend_destroy(be);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weights_round_trip),
        cmocka_unit_test(test_arch_json),
        cmocka_unit_test(test_arch_json_data),
        cmocka_unit_test(test_resumable_training),
        cmocka_unit_test(test_checkpoint_checks),
    };
    return cmocka_run_group_tests(tests, scratch_dir_setup, scratch_dir_teardown);
}
