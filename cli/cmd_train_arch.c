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
#include <time.h>     /* clock_gettime: progress ETA */
#include <unistd.h>   /* isatty, sysconf */
#include "cli/cli.h"
#include "nas/evaluator.h"
#include "nas/export.h"
#include "nas/store.h"
#include "nas/trainer.h"

typedef struct arch_opts {
    const char *arch, *genotype, *db, *backend, *data, *checkpoint, *augment, *precision,
        *schedule;
    long epochs, threads, subset, test_subset, stop_after, batch, channels, cells;
    double lr, momentum, weight_decay, progress_s;
    int proxy, have_seed;
    unsigned long long seed;
} arch_opts;

/*
 * The full-training recipe (issue 22; docs/export.md "nas train"): what
 * `nas train ARCH.json` and `nas train --genotype` use unless told
 * otherwise. SGD with Nesterov momentum 0.9 and weight decay 5e-4, the
 * learning rate from 0.1 down to 0 on a cosine per step (NAS-Bench-201's
 * optimiser), batch 128, 20 epochs over the 60,000 training images,
 * random crop (4 pixels) and horizontal flip, on every online core.
 * `--proxy` uses the recipe in ARCH.json instead (the search's proxy).
 */
#define FULL_EPOCHS 20
#define FULL_BATCH 128
#define FULL_LR 0.1
#define FULL_MOMENTUM 0.9
#define FULL_WEIGHT_DECAY 5e-4
#define FULL_AUGMENT "crop,flip"

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

/* A positive number (or >= 0 with zero_ok) in [.., max] into *out. */
static int parse_num(const char *v, double max, int zero_ok, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !(zero_ok ? d >= 0 : d > 0) || d > max)
        return -1;
    *out = d;
    return 0;
}

static int parse(int argc, char **argv, arch_opts *o)
{
    memset(o, 0, sizeof *o);
    o->epochs = -1;
    o->threads = -1;
    o->batch = -1;
    o->channels = -1;
    o->cells = -1;
    o->lr = o->momentum = o->weight_decay = o->progress_s = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char name[64];
        const char *eq = a[0] == '-' ? strchr(a, '=') : NULL;
        int inline_v = 0;
        if (eq && (size_t)(eq - a) < sizeof name) { /* --opt=value (as --genotype=G took) */
            snprintf(name, sizeof name, "%.*s", (int)(eq - a), a);
            a = name;
            v = eq + 1;
            inline_v = 1;
        }
        if (a[0] != '-') {
            if (o->arch)
                return usage("unexpected argument '%s' (one ARCH.json)", a);
            o->arch = a;
            continue;
        }
        if (!strcmp(a, "--proxy") && !inline_v) {
            o->proxy = 1;
            continue;
        }
        if (!v)
            return usage("%s needs a value", a);
        if (!inline_v)
            i++;
        if (!strcmp(a, "--genotype")) {
            o->genotype = v;
        } else if (!strcmp(a, "--channels")) {
            if (nas_cli_parse_long(v, 1, 4096, &o->channels))
                return usage("--channels needs 1..4096, not '%s'", v);
        } else if (!strcmp(a, "--cells")) {
            if (nas_cli_parse_long(v, 0, 64, &o->cells))
                return usage("--cells needs 0..64 (cells per stage), not '%s'", v);
        } else if (!strcmp(a, "--lr")) {
            if (parse_num(v, 100, 0, &o->lr))
                return usage("--lr needs a positive number up to 100, not '%s'", v);
        } else if (!strcmp(a, "--momentum")) {
            if (parse_num(v, 0.999, 1, &o->momentum))
                return usage("--momentum needs 0..0.999, not '%s'", v);
        } else if (!strcmp(a, "--weight-decay")) {
            if (parse_num(v, 1, 1, &o->weight_decay))
                return usage("--weight-decay needs 0..1, not '%s'", v);
        } else if (!strcmp(a, "--schedule")) {
            if (strcmp(v, "cosine") && strcmp(v, "constant"))
                return usage("--schedule is cosine or constant, not '%s'", v);
            o->schedule = v;
        } else if (!strcmp(a, "--progress")) {
            if (parse_num(v, 86400, 1, &o->progress_s))
                return usage("--progress needs seconds between progress lines (0: every step), "
                             "not '%s'", v);
        } else if (!strcmp(a, "--epochs")) {
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
    if (!o->arch == !o->genotype)
        return usage("%s", o->arch ? "give ARCH.json or --genotype STRING, not both"
                                   : "missing ARCH.json (from nas export --format json) or "
                                     "--genotype STRING");
    if (o->proxy && (o->subset || o->augment))
        return usage("%s", "--proxy trains exactly as the search did: no --subset or --augment");
    if (o->proxy && o->genotype)
        return usage("%s", "--proxy redoes a search's trial: it needs ARCH.json, not --genotype");
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
    int epochs, per_epoch;  /* of the run */
    double interval;        /* seconds between progress reports (0: every step) */
    double t0, last;        /* monotonic time of the first step seen, last report */
    int step0;              /* global step before the first one seen (resume) */
    int drawn;              /* a redrawable line is on the terminal */
    const char *ckpt;
} run_ctx;

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fmt_eta(double s, char *buf, size_t n)
{
    long t = isfinite(s) && s >= 0 ? (long)(s + 0.5) : -1;
    if (t < 0)
        snprintf(buf, n, "--");
    else if (t >= 3600)
        snprintf(buf, n, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
}

/* Progress within an epoch (issue 22): epoch, step, loss and the time left
 * in the epoch and the run (from this process's step rate), at most once
 * per c->interval seconds; redrawn in place on a terminal, one line each
 * otherwise (stderr). */
static int on_step(void *ctx, int step, int steps, float loss)
{
    run_ctx *c = ctx;
    double now = mono_s();
    if (c->t0 == 0) {
        c->t0 = now;
        c->step0 = step - 1;
        c->last = now;
    }
    if (g_stop)
        return 1;
    if (now - c->last < c->interval && step != steps)
        return 0;
    c->last = now;
    int pe = c->per_epoch > 0 ? c->per_epoch : steps;
    int ep = (step - 1) / pe + 1, s_in = step - (ep - 1) * pe;
    double rate = now > c->t0 ? (step - c->step0) / (now - c->t0) : 0; /* steps per second */
    char eta_ep[32], eta_all[32];
    fmt_eta(rate > 0 ? (pe - s_in) / rate : NAN, eta_ep, sizeof eta_ep);
    fmt_eta(rate > 0 ? (steps - step) / rate : NAN, eta_all, sizeof eta_all);
    fprintf(stderr, "%s  epoch %d/%d  step %d/%d  loss %.4f  ETA epoch %s, run %s%s",
            c->tty ? "\r\033[K" : "", ep, c->epochs, s_in, pe, (double)loss, eta_ep, eta_all,
            c->tty ? "" : "\n");
    fflush(stderr);
    c->drawn = c->tty;
    return 0;
}

static void on_resume(void *ctx, int epoch)
{
    run_ctx *c = ctx;
    printf("resumed from %s after epoch %d of %d\n", c->ckpt, epoch, c->epochs);
    fflush(stdout);
}

static int on_epoch(void *ctx, const nas_epoch_stats *e)
{
    run_ctx *c = ctx;
    if (c->drawn) {
        fprintf(stderr, "\r\033[K");
        c->drawn = 0;
    }
    printf("epoch %d/%d  loss %.4f  train acc %.4f  time %.1f s  %.0f img/s%s\n", e->epoch,
           e->epochs, e->loss, e->accuracy, e->seconds, e->images_per_s,
           c->checkpoints ? "  (checkpoint written)" : "");
    fflush(stdout);
    return 0;
}

/* `nas train --genotype G`: the architecture of any cell of the
 * NAS-Bench-201 space, C = --channels (16), N = --cells (1), 3 stages, the
 * data in --data (the Debian package's directory), seed --seed (0).
 * Errors: NAS_EINVAL / NAS_EFORMAT (the genotype, with why). */
static int arch_from_genotype(const arch_opts *o, nas_arch *a, nas_error *err)
{
    nas_arch_init(a);
    snprintf(a->genotype, sizeof a->genotype, "%s", o->genotype);
    snprintf(a->space_type, sizeof a->space_type, "cell");
    a->op_mask = (1u << NAS_OP_COUNT) - 1;
    a->net.channels = 16;
    a->net.stages = 3;
    a->net.cells_per_stage = 1;
    a->recipe.seed = o->have_seed ? o->seed : 0;
    snprintf(a->backend, sizeof a->backend, "cpu");
    snprintf(a->data.dataset, sizeof a->data.dataset, "fashion-mnist");
    snprintf(a->data.dir, sizeof a->data.dir, "%s", NAS_FMNIST_DIR);
    nas_space_desc sd = {.type = NAS_SPACE_CELL, .op_mask = a->op_mask, .channels = 16, .stages = 3, .cells_per_stage = 1};
    nas_space *sp = NULL;
    int rc = nas_space_create(&sd, &sp, err);
    if (!rc && (rc = nas_space_parse(sp, o->genotype, &a->net.genotype, err)) != NAS_OK)
        nas_error_prefix(err, "bad genotype '%s'", o->genotype);
    if (!rc && !nas_space_is_valid(sp, &a->net.genotype))
        rc = nas_error_set(err, NAS_EINVAL, "genotype '%s' has no path from the cell input to "
                           "its output", o->genotype);
    nas_space_destroy(sp);
    return rc;
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
    if (o.augment) { /* a bad --augment is a usage error before any file is read */
        nas_augment chk;
        if (parse_augment(o.augment, &chk))
            return usage("--augment takes none, or crop, flip, crop,flip (crop pads 4 pixels; "
                         "cropN pads N), not '%s'",
                         o.augment);
    }
    nas_error err;
    nas_error_clear(&err);
    nas_arch a;
    int rc = o.arch ? nas_arch_read_json(o.arch, &a, &err) : arch_from_genotype(&o, &a, &err);
    if (rc) {
        fprintf(stderr, "nas train: %s\n", err.msg);
        return o.arch ? NAS_EXIT_FAIL : NAS_EXIT_USAGE;
    }
    /* The network as exported, or wider/deeper (the genotype stays). */
    if (o.channels > 0)
        a.net.channels = (int)o.channels;
    if (o.cells >= 0)
        a.net.cells_per_stage = (int)o.cells;
    /* --proxy: the search's proxy recipe from ARCH.json; else the full
     * recipe (FULL_*) with the JSON's seed. Options override either. */
    nas_recipe rec = a.recipe;
    if (!o.proxy) {
        rec.epochs = FULL_EPOCHS;
        rec.batch_size = FULL_BATCH;
        rec.lr = FULL_LR;
        rec.momentum = FULL_MOMENTUM;
        rec.nesterov = 1;
        rec.weight_decay = FULL_WEIGHT_DECAY;
        rec.schedule = NAS_SCHEDULE_COSINE;
        if (!o.augment)
            o.augment = FULL_AUGMENT;
    }
    if (o.epochs > 0)
        rec.epochs = (int)o.epochs;
    if (o.have_seed)
        rec.seed = o.seed;
    if (o.batch > 0)
        rec.batch_size = (int)o.batch;
    if (o.lr >= 0)
        rec.lr = o.lr;
    if (o.momentum >= 0)
        rec.momentum = o.momentum;
    if (o.weight_decay >= 0)
        rec.weight_decay = o.weight_decay;
    if (o.schedule)
        rec.schedule = !strcmp(o.schedule, "cosine") ? NAS_SCHEDULE_COSINE : NAS_SCHEDULE_CONSTANT;
    nas_augment aug;
    if (parse_augment(o.augment, &aug))
        return usage("--augment takes none, or crop, flip, crop,flip (crop pads 4 pixels; cropN "
                     "pads N), not '%s'",
                     o.augment);
    if (rec.epochs <= 0)
        return usage("%s", "the recipe has 0 epochs: give --epochs N");
    const char *backend = o.backend ? o.backend
                                    : (!strcmp(a.backend, "ref") ? "ref" : "cpu");
    /* full training: every online core; --proxy: the trial's threads */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = o.threads >= 0 ? (int)o.threads
                  : o.proxy      ? (a.threads > 0 ? a.threads : 2)
                                 : (int)(ncpu > 0 ? ncpu : 1);
    const char *dir = o.data ? o.data : a.data.dir;

    /* Checkpoint: explicit, "none", or beside ARCH.json named by mode/epochs/seed/augment
     * (and the precision unless fp32, so runs in different precisions never
     * resume from each other's checkpoints). */
    const char *precision = o.precision ? o.precision : "fp32";
    int lowp = strcmp(precision, "fp32") != 0;
    char ckpt[NAS_PATH_MAX + 128] = "", augs[32];
    nas_augment_format(&aug, augs, sizeof augs);
    if (!o.checkpoint && o.arch) {
        size_t n = strlen(o.arch);
        int stem = (int)(n > 5 && !strcmp(o.arch + n - 5, ".json") ? n - 5 : n);
        snprintf(ckpt, sizeof ckpt, "%.*s.%s-e%d-s%llu%s%s%s%s.ckpt.npz", stem, o.arch,
                 o.proxy ? "proxy" : "full", rec.epochs, (unsigned long long)rec.seed,
                 strcmp(augs, "none") ? "-" : "", strcmp(augs, "none") ? augs : "",
                 lowp ? "-" : "", lowp ? precision : "");
        for (char *p = ckpt + stem + 1; *p; p++)
            if (*p == ',')
                *p = '+';
    } else if (o.checkpoint && strcmp(o.checkpoint, "none") != 0) {
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
    if (o.arch)
        printf("nas train %s: %s\n", o.arch, a.genotype);
    else
        printf("nas train: %s\n", a.genotype);
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
    run_ctx rc_ctx;
    memset(&rc_ctx, 0, sizeof rc_ctx);
    rc_ctx.tty = isatty(STDERR_FILENO);
    rc_ctx.checkpoints = ckpt[0] != 0;
    rc_ctx.epochs = rec.epochs;
    rc_ctx.per_epoch = (tr->n + rec.batch_size - 1) / rec.batch_size;
    /* once a second on a terminal, every 10 s into a log (--progress S) */
    rc_ctx.interval = o.progress_s >= 0 ? o.progress_s : rc_ctx.tty ? 1.0 : 10.0;
    rc_ctx.ckpt = ckpt;
    nas_full_train_opts fo = {&rec, aug, ckpt[0] ? ckpt : NULL, (int)o.stop_after, on_step,
                              on_epoch, &rc_ctx, on_resume, on_note};
    nas_train_stats ts;
    int resumed = 0;
    stage = "training";
    rc = nas_train_resumable(net, tr, &fo, &ts, &resumed, &err);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (rc_ctx.drawn)
        fprintf(stderr, "\r\033[K");
    (void)resumed; /* said when it happened (on_resume) */
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
        if (o.arch)
            snprintf(f.arch_json, sizeof f.arch_json, "%s", realpath(o.arch, real) ? real : o.arch);
        f.epochs = rec.epochs;
        snprintf(f.recipe, sizeof f.recipe,
                 "mode=%s epochs=%d batch_size=%d lr=%g momentum=%g nesterov=%d weight_decay=%g "
                 "schedule=%s seed=%llu channels=%d cells=%d%s%s",
                 o.proxy ? "proxy" : "full", rec.epochs, rec.batch_size, rec.lr, rec.momentum,
                 rec.nesterov, rec.weight_decay,
                 rec.schedule == NAS_SCHEDULE_COSINE ? "cosine" : "constant",
                 (unsigned long long)rec.seed, a.net.channels, a.net.cells_per_stage,
                 lowp ? " precision=" : "", lowp ? precision : "");
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
