/*
 * cli/cmd_train_arch.c - `nas train ARCH.json [...]`: train an exported
 * architecture (docs/export.md) with its recipe, a checkpoint after every
 * epoch and resume after an interruption; record the final test accuracy
 * in the store with --db. `nas train --genotype` (cli/cmd_train.c) hands
 * over here when its first argument is not an option.
 *
 * Two data modes:
 *   full (default)  train on the Fashion-MNIST training set (60k images, or
 *                   --subset N of them), test on the 10k test images;
 *   --proxy         redo the search's proxy training exactly: the same
 *                   train/validation split (proxy_data in the JSON), recipe,
 *                   seed and backend; prints the validation accuracy next
 *                   to the recorded one (identical on the ref backend).
 *
 * --precision fp32|bf16|fp16 (default fp32; ARCH.json records no
 * precision) as in `nas train --genotype` (nas__cli_set_precision).
 */
#include <errno.h>
#include <inttypes.h> /* PRId64 */
#include <limits.h>   /* PATH_MAX */
#include <math.h>     /* isfinite, fabs */
#include <signal.h>   /* sigaction: Ctrl-C stops after the current step */
#include <stdio.h>
#include <stdlib.h>   /* strtol, realpath */
#include <string.h>
#include <unistd.h>   /* isatty */
#include "cli/cli.h"
#include "nas/evaluator.h"
#include "nas/store.h"
#include "nas/trainer.h"

typedef struct arch_opts {
    const char *arch, *db, *backend, *data, *checkpoint, *augment, *precision;
    long epochs, threads, subset, test_subset, stop_after, batch;
    int proxy, have_seed;
    unsigned long long seed;
} arch_opts;

static volatile sig_atomic_t g_stop; /* set by SIGINT/SIGTERM (CLI process only) */

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static int usage(const char *fmt, const char *a)
{
    fprintf(stderr, "nas train: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, "\n");
    nas_cli_usage(stderr, "train");
    return NAS_EXIT_USAGE;
}

static int parse(int argc, char **argv, arch_opts *o)
{
    memset(o, 0, sizeof *o);
    o->epochs = -1;
    o->threads = -1;
    o->batch = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            if (o->arch)
                return usage("unexpected argument '%s' (one ARCH.json)", a);
            o->arch = a;
            continue;
        }
        if (!strcmp(a, "--proxy")) {
            o->proxy = 1;
            continue;
        }
        if (!v)
            return usage("%s needs a value", a);
        i++;
        if (!strcmp(a, "--epochs")) {
            if (nas_cli_parse_long(v, 1, 100000, &o->epochs))
                return usage("--epochs needs 1..100000, not '%s'", v);
        } else if (!strcmp(a, "--db")) {
            o->db = v;
        } else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            o->seed = strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-')
                return usage("--seed needs a non-negative integer, not '%s'", v);
            o->have_seed = 1;
        } else if (!strcmp(a, "--augment")) {
            o->augment = v;
        } else if (!strcmp(a, "--backend")) {
            o->backend = v;
        } else if (!strcmp(a, "--precision")) {
            if (!nas__cli_precision_ok(v))
                return usage("--precision: '%s' is not fp32, bf16 or fp16", v);
            o->precision = v;
        } else if (!strcmp(a, "--threads")) {
            if (nas_cli_parse_long(v, 0, 1024, &o->threads))
                return usage("--threads needs 0..1024, not '%s'", v);
        } else if (!strcmp(a, "--batch-size")) {
            if (nas_cli_parse_long(v, 1, 65536, &o->batch))
                return usage("--batch-size needs 1..65536, not '%s'", v);
        } else if (!strcmp(a, "--data")) {
            o->data = v;
        } else if (!strcmp(a, "--checkpoint")) {
            o->checkpoint = v;
        } else if (!strcmp(a, "--subset")) {
            if (nas_cli_parse_long(v, 1, 60000, &o->subset))
                return usage("--subset needs 1..60000, not '%s'", v);
        } else if (!strcmp(a, "--test-subset")) {
            if (nas_cli_parse_long(v, 1, 10000, &o->test_subset))
                return usage("--test-subset needs 1..10000, not '%s'", v);
        } else if (!strcmp(a, "--stop-after")) {
            if (nas_cli_parse_long(v, 1, 100000, &o->stop_after))
                return usage("--stop-after needs a positive epoch, not '%s'", v);
        } else {
            return usage("unknown option '%s'", a);
        }
    }
    if (!o->arch)
        return usage("%s", "missing ARCH.json (from nas export --format json)");
    if (o->proxy && (o->subset || o->augment))
        return usage("%s", "--proxy trains exactly as the search did: no --subset or --augment");
    return -1;
}

static int parse_augment(const char *s, nas_augment *a)
{
    memset(a, 0, sizeof *a);
    if (!s || !strcmp(s, "none") || !s[0])
        return 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "crop"))
            a->crop_pad = 4;
        else if (!strncmp(t, "crop", 4) && t[4] >= '1' && t[4] <= '9' && !t[5])
            a->crop_pad = t[4] - '0';
        else if (!strcmp(t, "flip"))
            a->flip = 1;
        else
            return -1;
    }
    return 0;
}

typedef struct run_ctx {
    int tty;
    int checkpoints;
} run_ctx;

static int on_step(void *ctx, int step, int steps, float loss)
{
    run_ctx *c = ctx;
    if (c->tty && (step % 20 == 0 || step == steps)) {
        fprintf(stderr, "\r  step %d/%d  loss %.4f ", step, steps, (double)loss);
        fflush(stderr);
    }
    return g_stop != 0;
}

static int on_epoch(void *ctx, const nas_epoch_stats *e)
{
    run_ctx *c = ctx;
    if (c->tty)
        fprintf(stderr, "\r%40s\r", "");
    printf("epoch %d/%d  loss %.4f  train acc %.4f  time %.1f s  %.0f img/s%s\n", e->epoch,
           e->epochs, e->loss, e->accuracy, e->seconds, e->images_per_s,
           c->checkpoints ? "  (checkpoint written)" : "");
    fflush(stdout);
    return 0;
}

static void on_note(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "nas train: warning: %s\n", msg);
}

int nas__cmd_train_arch(int argc, char **argv)
{
    arch_opts o;
    int prc = parse(argc, argv, &o);
    if (prc >= 0)
        return prc;
    nas_augment aug;
    if (parse_augment(o.augment, &aug))
        return usage("--augment takes none, or crop, flip, crop,flip (crop pads 4 pixels; cropN "
                     "pads N), not '%s'",
                     o.augment);
    nas_error err;
    nas_error_clear(&err);
    nas_arch a;
    int rc = nas_arch_read_json(o.arch, &a, &err);
    if (rc) {
        fprintf(stderr, "nas train: %s\n", err.msg);
        return NAS_EXIT_FAIL;
    }
    nas_recipe rec = a.recipe;
    if (o.epochs > 0)
        rec.epochs = (int)o.epochs;
    if (o.have_seed)
        rec.seed = o.seed;
    if (o.batch > 0)
        rec.batch_size = (int)o.batch;
    if (rec.epochs <= 0)
        return usage("%s", "the recipe has 0 epochs: give --epochs N");
    const char *backend = o.backend ? o.backend
                                    : (!strcmp(a.backend, "ref") ? "ref" : "cpu");
    int threads = o.threads >= 0 ? (int)o.threads : (a.threads > 0 ? a.threads : 2);
    const char *dir = o.data ? o.data : a.data.dir;

    /* Checkpoint: explicit, "none", or beside ARCH.json named by mode/epochs/seed/augment
     * (and the precision unless fp32, so runs in different precisions never
     * resume from each other's checkpoints). */
    const char *precision = o.precision ? o.precision : "fp32";
    int lowp = strcmp(precision, "fp32") != 0;
    char ckpt[NAS_PATH_MAX + 128] = "", augs[32];
    nas_augment_format(&aug, augs, sizeof augs);
    if (!o.checkpoint) {
        size_t n = strlen(o.arch);
        int stem = (int)(n > 5 && !strcmp(o.arch + n - 5, ".json") ? n - 5 : n);
        snprintf(ckpt, sizeof ckpt, "%.*s.%s-e%d-s%llu%s%s%s%s.ckpt.npz", stem, o.arch,
                 o.proxy ? "proxy" : "full", rec.epochs, (unsigned long long)rec.seed,
                 strcmp(augs, "none") ? "-" : "", strcmp(augs, "none") ? augs : "",
                 lowp ? "-" : "", lowp ? precision : "");
        for (char *p = ckpt + stem + 1; *p; p++)
            if (*p == ',')
                *p = '+';
    } else if (strcmp(o.checkpoint, "none") != 0) {
        snprintf(ckpt, sizeof ckpt, "%s", o.checkpoint);
    }

    nas_dataset *full = NULL, *train = NULL, *valid = NULL, *test = NULL;
    nas_backend *be = NULL;
    nas_net *net = NULL;
    nas_store *st = NULL;
    const char *stage = "loading Fashion-MNIST";
    if (strcmp(a.data.dataset, "fashion-mnist") != 0) {
        rc = nas_error_set(&err, NAS_EUNSUPPORTED, "data set '%s' is not supported",
                           a.data.dataset);
        goto out;
    }
    if (o.db) { /* open early: a bad --db fails before hours of training */
        stage = "opening the store";
        rc = nas_store_open(o.db, 0, &st, &err);
        if (rc)
            goto out;
    }
    stage = "loading Fashion-MNIST";
    rc = nas_fmnist_load(dir, "train", &full, &err);
    if (!rc)
        rc = nas_fmnist_load(dir, "test", &test, &err);
    if (!rc && o.proxy) {
        if (a.data.valid <= 0)
            rc = nas_error_set(&err, NAS_EINVAL, "%s: proxy_data.valid is 0: --proxy needs the "
                               "search's validation split", o.arch);
        else
            rc = nas_dataset_split(full, a.data.valid, a.data.train_subset, a.data.split_seed,
                                   &train, &valid, &err);
    } else if (!rc && o.subset) {
        rc = nas_dataset_split(full, 0, (int)o.subset, rec.seed, &train, &valid, &err);
    }
    if (rc)
        goto out;
    const nas_dataset *tr = train ? train : full;
    nas_dataset test_view;
    if (o.test_subset && o.test_subset < test->n) {
        test_view = *test;
        test_view.n = (int)o.test_subset;
        test_view.owns = 0;
    }
    const nas_dataset *te = o.test_subset && o.test_subset < test->n ? &test_view : test;
    stage = "creating the backend";
    rc = nas_backend_create(backend, threads, 0, &be, &err);
    if (rc)
        goto out;
    stage = "setting the precision";
    rc = nas__cli_set_precision(be, precision, &err);
    if (rc)
        goto out;
    stage = "building the network";
    rc = nas_net_create(be, &a.net, rec.batch_size, rec.seed, &net, &err);
    if (rc)
        goto out;
    int64_t macs = -1, params = -1;
    nas_count_net(&a.net, &macs, &params, NULL, NULL);
    printf("nas train %s: %s\n", o.arch, a.genotype);
    printf("%s training, C=%d N=%d, %s backend, %s, %d threads, %d train images, batch %d, "
           "lr %g, %s schedule, %d epochs, seed %llu, augment %s\n",
           o.proxy ? "proxy" : "full", a.net.channels, a.net.cells_per_stage, backend, precision,
           threads,
           tr->n, rec.batch_size, rec.lr, rec.schedule == NAS_SCHEDULE_COSINE ? "cosine" : "constant",
           rec.epochs, (unsigned long long)rec.seed, augs);
    printf("params %" PRId64 ", MACs %" PRId64 "; checkpoint %s\n", params, macs,
           ckpt[0] ? ckpt : "none");
    fflush(stdout);

    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    run_ctx rc_ctx = {isatty(STDERR_FILENO), ckpt[0] != 0};
    nas_full_train_opts fo = {&rec, aug, ckpt[0] ? ckpt : NULL, (int)o.stop_after, on_step,
                              on_epoch, &rc_ctx, on_note};
    nas_train_stats ts;
    int resumed = 0;
    stage = "training";
    rc = nas_train_resumable(net, tr, &fo, &ts, &resumed, &err);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (resumed > 0)
        printf("resumed from %s after epoch %d of %d\n", ckpt, resumed, rec.epochs);
    if (rc == NAS_EINTR && ckpt[0])
        nas_error_prefix(&err, "run the same command again to resume from %s", ckpt);
    if (rc)
        goto out;
    double test_acc = 0, test_loss = 0, val_acc = NAN;
    stage = "testing";
    rc = nas_net_evaluate(net, te, rec.batch_size, &test_acc, &test_loss, &err);
    if (!rc && o.proxy)
        rc = nas_net_evaluate(net, valid, rec.batch_size, &val_acc, NULL, &err);
    if (rc)
        goto out;
    printf("training: %d epochs, %.1f s of training steps\n", ts.epochs, ts.seconds);
    if (o.proxy) {
        printf("val_accuracy %.6f", val_acc);
        if (isfinite(a.metrics.val_accuracy))
            printf("  (trial %" PRId64 " recorded %.6f, difference %.2g)", a.trial_id,
                   a.metrics.val_accuracy, val_acc - a.metrics.val_accuracy);
        printf("\n");
    }
    printf("test accuracy %.4f  test loss %.6f  (%d test images)\n", test_acc, test_loss, te->n);
    if (st) {
        stage = "recording the result";
        nas_store_final_training f;
        memset(&f, 0, sizeof f);
        f.experiment_id = a.experiment_id;
        f.trial_id = a.trial_id;
        snprintf(f.genotype, sizeof f.genotype, "%s", a.genotype);
        char real[PATH_MAX];
        snprintf(f.arch_json, sizeof f.arch_json, "%s", realpath(o.arch, real) ? real : o.arch);
        f.epochs = rec.epochs;
        snprintf(f.recipe, sizeof f.recipe,
                 "mode=%s epochs=%d batch_size=%d lr=%g momentum=%g nesterov=%d weight_decay=%g "
                 "schedule=%s seed=%llu%s%s",
                 o.proxy ? "proxy" : "full", rec.epochs, rec.batch_size, rec.lr, rec.momentum,
                 rec.nesterov, rec.weight_decay,
                 rec.schedule == NAS_SCHEDULE_COSINE ? "cosine" : "constant",
                 (unsigned long long)rec.seed, lowp ? " precision=" : "", lowp ? precision : "");
        snprintf(f.augment, sizeof f.augment, "%s", augs);
        snprintf(f.backend, sizeof f.backend, "%s", backend);
        f.train_images = tr->n;
        f.test_accuracy = test_acc;
        f.test_loss = test_loss;
        f.train_loss = ts.train_loss;
        f.train_accuracy = ts.train_accuracy;
        f.train_seconds = ts.seconds;
        f.params = params;
        f.macs = macs;
        snprintf(f.checkpoint, sizeof f.checkpoint, "%s",
                 ckpt[0] && realpath(ckpt, real) ? real : ckpt);
        int64_t id;
        rc = nas_store_final_training_put(st, &f, &id, &err);
        if (!rc)
            printf("recorded as final_training %" PRId64 " in %s\n", id, o.db);
    }
out:
    if (rc)
        fprintf(stderr, "nas train: %s: %s\n", stage, err.msg[0] ? err.msg : nas_strerror(rc));
    nas_store_close(st);
    nas_net_destroy(net);
    nas_backend_destroy(be);
    nas_dataset_destroy(full);
    nas_dataset_destroy(train);
    nas_dataset_destroy(valid);
    nas_dataset_destroy(test);
    if (rc == NAS_EINTR)
        return 130;
    return rc ? (rc == NAS_EINVAL || rc == NAS_ENOTFOUND ? NAS_EXIT_USAGE : NAS_EXIT_FAIL)
              : NAS_EXIT_OK;
}
