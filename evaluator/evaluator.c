/*
 * evaluator/evaluator.c - one trial: build the genotype's network (the
 * TinyNetwork of a cell, or a chain genotype's layers, issue 15),
 * proxy-train it (the NAS-Bench-201 recipe: SGD with Nesterov momentum,
 * weight decay, cosine learning rate; Dong & Yang, ICLR 2020) on a
 * training subset, measure validation accuracy, analytic MACs/params and
 * batch-1 latency; or (kind "table") look the genotype up in a benchmark
 * table, as NAS-Bench-201 intends search methods to be compared.
 *
 * The data set is loaded once in nas_evaluator_create (before workers
 * fork, so they share its pages); the backend is created on the first
 * trial, inside the process that runs it, because device libraries
 * (oneDNN thread pools, CUDA contexts) do not survive fork.
 */
#include <math.h>   /* NAN */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h>
#include <time.h>   /* clock_gettime */
#include <unistd.h> /* access */
#include "evaluator/evaluator_impl.h"
#include "nas/data.h"
#include "nas/evaluator.h"
#include "nas/inspect.h"
#include "nas/zerocost.h"

struct nas_evaluator {
    nas_config cfg;
    const nas_space *space;
    nas__table *table;
    nas_dataset *train, *valid;
    nas_dataset *recal; /* issue 30: proxy.bn_recalibrate batches of train, seeded order */
    nas_data_info info; /* issue 16: the data's shape, classes, normalisation */
    nas_backend *be;
    char weights_path[NAS_PATH_MAX]; /* keep_weights: save here after training ("" = no) */
    int fid_until, fid_max;          /* issue 17: the next run trains to epoch until of max */
    char fid_ckpt[NAS_PATH_MAX];     /* ... from and to this checkpoint ("" = none) */
    double eval_seconds;             /* issue 30: the last run's BN recalibration and validation
                                        pass (NaN: none) */
    nas_zc_scorer *zc;               /* issue 31: kind "zero-cost" */
    nas__sn_eval *sn;                /* issue 32: kind "supernet" */
    const struct eval_kind *kind;    /* what evaluator.kind does (kinds[] below) */
};

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void nas_evaluator_destroy(nas_evaluator *ev)
{
    if (!ev)
        return;
    nas__table_destroy(ev->table);
    nas_dataset_destroy(ev->train);
    nas_dataset_destroy(ev->valid);
    nas_dataset_destroy(ev->recal);
    nas_backend_destroy(ev->be);
    nas_zc_scorer_destroy(ev->zc);
    nas__sn_eval_destroy(ev->sn);
    free(ev);
}

/* kind "table": the CSV. */
static int create_table(nas_evaluator *ev, nas_error *err)
{
    const nas_config *cfg = &ev->cfg;
    return nas__table_load(cfg->evaluator.table, cfg->evaluator.column, cfg->evaluator.test_column,
                           &ev->table, err);
}

/* kind "train": the data set, split once (shared by forked workers). */
static int create_train(nas_evaluator *ev, nas_error *err)
{
    const nas_config *cfg = &ev->cfg;
    /* issue 16: every format through nas_data_load; bad data is the
     * user's input, so a configuration error (exit 2) naming the file */
    int rc = nas_data_load(&cfg->data, cfg->seed, &ev->info, &ev->train, &ev->valid, err);
    if (rc == NAS_EFORMAT || rc == NAS_EIO) { /* the shorthand's dir too (issue 28) */
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err ? err->msg : "");
        rc = nas_error_set(err, NAS_ECONFIG, "%s: bad data: %s", cfg->path, why);
    }
    char why[600]; /* issue 28: a cell space the data's images cannot pass */
    if (!rc && nas_space_check_input(&cfg->space, ev->train->h, ev->train->w, why, sizeof why))
        rc = cfg->space.line_stages
                 ? nas_error_set(err, NAS_ECONFIG, "%s:%d: %s (the data's images are %dx%d)",
                                 cfg->path, cfg->space.line_stages, why, ev->train->h, ev->train->w)
                 : nas_error_set(err, NAS_ECONFIG, "%s: %s (the data's images are %dx%d)", cfg->path,
                                 why, ev->train->h, ev->train->w);
    if (!rc)
        rc = nas_config_check_data(cfg, ev->train->c, ev->train->h, ev->train->w, ev->info.classes,
                                   err);
    if (!rc) /* a crop or cutout that can leave nothing of these images */
        rc = nas_config_check_augment(cfg, ev->train->h, ev->train->w, err);
    long long recal = (long long)cfg->proxy.bn_recalibrate *
                      (cfg->proxy.batch_size > 0 ? cfg->proxy.batch_size : 128);
    if (!rc && recal > 0) /* once, shared by forked workers */
        rc = nas_dataset_sample(ev->train, recal < ev->train->n ? (int)recal : ev->train->n,
                                cfg->seed, &ev->recal, err);
    return rc;
}

/* kind "zero-cost" (issue 31): the scorer, with its minibatch when the
 * proxy reads one (bad data: a configuration error, as for training). */
static int create_zero_cost(nas_evaluator *ev, nas_error *err)
{
    const nas_config *cfg = &ev->cfg;
    int rc = nas_zc_scorer_create(cfg, ev->space, cfg->evaluator.proxy, &ev->zc, err);
    if (rc == NAS_EFORMAT || rc == NAS_EIO) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err ? err->msg : "");
        rc = nas_error_set(err, NAS_ECONFIG, "%s: bad data: %s", cfg->path, why);
    }
    return rc;
}

/* kind "supernet" (issue 32): the data as for training, and the supernet's
 * state (its recipe, fingerprint, calibration sample). */
static int create_supernet(nas_evaluator *ev, nas_error *err)
{
    int rc = create_train(ev, err);
    if (!rc)
        rc = nas__sn_eval_create(&ev->cfg, ev->space, ev->train, &ev->info, &ev->sn, err);
    return rc;
}

static int run_table(nas_evaluator *ev, const nas_genotype *g, const char *gs,
                     nas_eval_progress progress, void *ctx, nas_trial_result *res);
static int run_supernet(nas_evaluator *ev, const nas_genotype *g, const char *gs,
                        nas_eval_progress progress, void *ctx, nas_trial_result *res);
static int run_trained(nas_evaluator *ev, const nas_genotype *g, const char *gs,
                       nas_eval_progress progress, void *ctx, nas_trial_result *res);
static int run_zero_cost(nas_evaluator *ev, const nas_genotype *g, const char *gs,
                         nas_eval_progress progress, void *ctx, nas_trial_result *res);

/* The evaluator kinds (evaluator.kind), in nas_evaluator_kind order: the
 * controller asks nas_evaluator_kind_* what a kind does and never names
 * one. A new kind is a row here and its two functions. */
typedef struct eval_kind {
    const char *name; /* evaluator.kind */
    int trains;       /* 1: trains networks (a backend, latency, weights, fidelity) */
    int (*create)(nas_evaluator *ev, nas_error *err);
    int (*run)(nas_evaluator *ev, const nas_genotype *g, const char *gs, nas_eval_progress progress,
               void *ctx, nas_trial_result *res);
} eval_kind;

static const eval_kind kinds[] = {
    [NAS_EVALUATOR_TRAIN] = {"train", 1, create_train, run_trained},
    [NAS_EVALUATOR_TABLE] = {"table", 0, create_table, run_table},
    [NAS_EVALUATOR_ZERO_COST] = {"zero-cost", 0, create_zero_cost, run_zero_cost},
    [NAS_EVALUATOR_SUPERNET] = {"supernet", 0, create_supernet, run_supernet},
};

static const eval_kind *kind_of(const nas_config *cfg)
{
    unsigned k = (unsigned)cfg->evaluator.kind;
    return k < sizeof kinds / sizeof kinds[0] ? &kinds[k] : &kinds[0];
}

int nas_evaluator_kind_trains(const nas_config *cfg)
{
    return cfg && kind_of(cfg)->trains;
}

int nas_evaluator_kind_reads_data(const nas_config *cfg)
{
    if (!cfg)
        return 0;
    if (cfg->evaluator.kind == NAS_EVALUATOR_ZERO_COST) {
        nas_zc_proxy p;
        return nas_zc_from_name(cfg->evaluator.proxy, &p, NULL) == NAS_OK && nas_zc_needs_data(p);
    }
    return kind_of(cfg)->trains || cfg->evaluator.kind == NAS_EVALUATOR_SUPERNET;
}

const char *nas_evaluator_kind_name(const nas_config *cfg)
{
    return cfg ? kind_of(cfg)->name : "?";
}

void nas_evaluator_kind_device(const nas_config *cfg, char *buf, size_t n)
{
    if (!buf || !n)
        return;
    if (!cfg)
        buf[0] = '\0';
    else if (cfg->evaluator.kind == NAS_EVALUATOR_ZERO_COST) /* "zero-cost:synflow" */
        snprintf(buf, n, "zero-cost:%s", cfg->evaluator.proxy);
    else if (!kind_of(cfg)->trains)
        snprintf(buf, n, "%s", kind_of(cfg)->name); /* "table" */
    else
        snprintf(buf, n, "%s", cfg->proxy.backend);
}

void nas_evaluator_kind_describe(const nas_config *cfg, char *buf, size_t n)
{
    if (!buf || !n)
        return;
    buf[0] = '\0';
    if (!cfg)
        return;
    if (cfg->evaluator.kind == NAS_EVALUATOR_TABLE)
        snprintf(buf, n, "table evaluator: %s, column %s", cfg->evaluator.table,
                 cfg->evaluator.column);
    else if (cfg->evaluator.kind == NAS_EVALUATOR_ZERO_COST)
        snprintf(buf, n, "zero-cost evaluator: every trial's val_accuracy is its %s score "
                 "(nothing is trained; docs/zero-cost.md)", cfg->evaluator.proxy);
    else if (cfg->evaluator.kind == NAS_EVALUATOR_SUPERNET)
        snprintf(buf, n, "supernet evaluator: one supernet trained for %d epochs, then every "
                 "trial's val_accuracy by inherited weights on %d validation images, BN "
                 "recalibrated on %d batches; the best %d retrained stand-alone "
                 "(docs/one-shot.md)", cfg->supernet.epochs, cfg->supernet.valid,
                 cfg->supernet.recal_batches, cfg->supernet.retrain_top);
}

int nas_evaluator_create(const nas_config *cfg, const nas_space *space, nas_evaluator **out,
                         nas_error *err)
{
    if (out)
        *out = NULL;
    if (!cfg || !space || !out)
        return nas_error_set(err, NAS_EINVAL, "nas_evaluator_create: NULL argument");
    nas_evaluator *ev = calloc(1, sizeof *ev);
    if (!ev)
        return nas_error_set(err, NAS_ENOMEM, "out of memory creating the evaluator");
    ev->eval_seconds = NAN;
    ev->cfg = *cfg;
    ev->space = space;
    ev->kind = kind_of(cfg);
    nas_data_info_fmnist(&ev->info);
    int rc = ev->kind->create(ev, err);
    if (rc) {
        nas_evaluator_destroy(ev);
        return rc;
    }
    *out = ev;
    return NAS_OK;
}

int nas_evaluator_net_desc(const nas_evaluator *ev, const nas_space *space,
                           const nas_genotype *g, nas_net_desc *out)
{
    if (!out || !g || (!ev && !space))
        return NAS_EINVAL;
    const nas_space_desc *sd = nas_space_get_desc(ev ? ev->space : space);
    nas_net_desc d;
    memset(&d, 0, sizeof d);
    d.genotype = *g;
    d.genotype.len = nas_space_arch_len(ev ? ev->space : space); /* issue 33: the network's
                                                                   tokens, not the recipe's */
    d.channels = sd->channels;
    d.stages = sd->stages;
    d.cells_per_stage = sd->cells_per_stage;
    if (sd->type == NAS_SPACE_CHAIN) /* issue 15: built from the layer description */
        d.space = ev ? ev->space : space;
    if (ev && ev->train) {
        d.in_c = ev->train->c;
        d.in_h = ev->train->h;
        d.in_w = ev->train->w;
        d.classes = ev->train->classes;
    } else { /* table (or no evaluator): space.input / space.classes, else as it would run
                on Fashion-MNIST (1 x 28 x 28, 10 classes) */
        nas_space_input(ev ? ev->space : space, &d.in_c, &d.in_h, &d.in_w, &d.classes);
    }
    *out = d;
    return NAS_OK;
}

int nas_evaluator_data_info(const nas_evaluator *ev, nas_data_info *info)
{
    if (!ev || !ev->train) {
        nas_data_info_fmnist(info);
        return 0;
    }
    *info = ev->info;
    return ev->cfg.data.format[0] != '\0';
}

int nas_evaluator_valid_count(const nas_evaluator *ev)
{
    return ev && ev->valid ? ev->valid->n : 0;
}

int nas_evaluator_train_count(const nas_evaluator *ev)
{
    return ev && ev->train ? ev->train->n : 0;
}

double nas_evaluator_eval_seconds(const nas_evaluator *ev)
{
    return ev ? ev->eval_seconds : NAN;
}

int nas_evaluator_set_seed(nas_evaluator *ev, uint64_t seed)
{
    if (!ev)
        return NAS_EINVAL;
    ev->cfg.seed = seed; /* read by run_train (init, recipe) and the latency net only */
    return NAS_OK;
}

/* Images of d whose three planes are equal before normalisation (grey
 * images a colour one made RGB): x = x' * std + mean per channel. */
static int count_grey(const nas_dataset *d, const nas_data_info *info)
{
    if (!d || d->c != 3)
        return 0;
    size_t hw = (size_t)d->h * d->w;
    int grey = 0;
    for (int i = 0; i < d->n; i++) {
        const float *p = d->images + (size_t)i * 3 * hw;
        size_t k = 0;
        for (; k < hw; k++) {
            float r = p[k] * info->std[0] + info->mean[0], g = p[hw + k] * info->std[1] + info->mean[1],
                  b = p[2 * hw + k] * info->std[2] + info->mean[2];
            if (fabsf(r - g) > 1e-3f || fabsf(r - b) > 1e-3f)
                break;
        }
        grey += k == hw;
    }
    return grey;
}

/* The test images `nas train` and the final training read. */
static void test_source(const nas_data_conf *dc, char *buf, size_t n)
{
    if (dc->format[0] == '\0')
        snprintf(buf, n, "%s/t10k-images-idx3-ubyte[.gz]", dc->dir);
    else if (!strcmp(dc->format, "cifar")) { /* CIFAR-10's test_batch.bin, CIFAR-100's test.bin */
        char t[NAS_PATH_MAX + 24];
        snprintf(t, sizeof t, "%s/data_batch_1.bin", dc->dir);
        int c10 = access(t, F_OK) == 0;
        snprintf(t, sizeof t, "%s/%s", dc->dir, c10 ? "test_batch.bin" : "test.bin");
        snprintf(buf, n, access(t, F_OK) == 0 ? "%s" : "none (no %s)", t);
    } else if (!strcmp(dc->format, "folder")) {
        char t[NAS_PATH_MAX + 8];
        snprintf(t, sizeof t, "%s/test", dc->dir);
        snprintf(buf, n, access(t, F_OK) == 0 ? "%s/" : "none (no %s/)", t);
    }
    else
        snprintf(buf, n, "%s", dc->test_images[0] ? dc->test_images : "none (no data.test_images)");
}

int nas_evaluator_data_summary(const nas_evaluator *ev, char *line, size_t n, char *warn, size_t wn)
{
    if (line && n)
        line[0] = '\0';
    if (warn && wn)
        warn[0] = '\0';
    if (!ev || !ev->train || !line || !warn)
        return 0;
    const nas_dataset *t = ev->train, *v = ev->valid;
    int nv = v ? v->n : 0;
    char test[NAS_PATH_MAX + 32];
    test_source(&ev->cfg.data, test, sizeof test);
    snprintf(line, n, "data: %d images %dx%dx%d (C x H x W), %d classes: %d training, %d validation; "
             "test images: %s", t->n + nv, t->c, t->h, t->w, t->classes, t->n, nv, test);
    if (!strcmp(ev->cfg.data.format, "folder") && t->c == 3) {
        int grey = count_grey(t, &ev->info) + count_grey(v, &ev->info), all = t->n + nv;
        if (grey > all - grey)
            snprintf(warn, wn, "warning: %d of the %d images in use are grey and %d colour, but a colour "
                     "file makes the whole folder data set 3-channel (each grey image is repeated into "
                     "R, G and B, and networks take 3 input channels); convert the colour files to "
                     "grey if the data is grey (docs/data.md)", grey, all, all - grey);
    }
    return 1;
}

/* Network description for genotype g: the space's widths, the data's shape. */
static nas_net_desc net_desc(const nas_evaluator *ev, const nas_genotype *g)
{
    nas_net_desc d;
    nas_evaluator_net_desc(ev, NULL, g, &d);
    return d;
}

static int fail(nas_trial_result *res, int code, const char *msg)
{
    res->status = code;
    snprintf(res->error, sizeof res->error, "%s", msg);
    return code;
}

/* "auto": the first compiled-in device of cuda, cpu, ref that starts. */
static int create_backend(nas_evaluator *ev, nas_error *err)
{
    const char *name = ev->cfg.proxy.backend[0] ? ev->cfg.proxy.backend : "cpu";
    int threads = ev->cfg.proxy.threads > 0 ? ev->cfg.proxy.threads : 0;
    if (strcmp(name, "auto") != 0)
        return nas_backend_create(name, threads, 0, &ev->be, err);
    static const char *const order[] = {"cuda", "cpu", "ref"};
    int rc = NAS_ENOTFOUND;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        rc = nas_backend_create(order[i], threads, 0, &ev->be, err);
        if (rc == NAS_OK)
            return NAS_OK;
    }
    return rc;
}

/* Create the backend once and apply proxy.precision ("fp32" | "bf16" |
 * "fp16"); a precision the backend cannot do is an error, not a silent
 * fall-back to fp32. */
static int open_backend(nas_evaluator *ev, nas_error *err)
{
    if (ev->be)
        return NAS_OK;
    int rc = create_backend(ev, err);
    if (rc != NAS_OK)
        return rc;
    const char *precision = ev->cfg.proxy.precision[0] ? ev->cfg.proxy.precision : "fp32";
    rc = nas_backend_set_precision(ev->be, precision);
    if (rc != NAS_OK) {
        nas_error_set(err, rc, "proxy.precision = \"%s\" is not available on the %s backend: %s",
                      precision, nas_backend_name(ev->be), nas_backend_last_error(ev->be));
        nas_backend_destroy(ev->be);
        ev->be = NULL;
    }
    return rc;
}

typedef struct progress_ctx {
    nas_eval_progress fn;
    void *ctx;
} progress_ctx;

static int on_step(void *ctx, int step, int steps, float loss)
{
    progress_ctx *p = ctx;
    if (p->fn)
        p->fn(p->ctx, steps > 0 ? (double)step / steps : 1.0, loss);
    return 0;
}

/* Issue 30: BN recalibration over ev->recal, drawn for the config's
 * batch size; a trial whose batch size is a recipe choice (issue 33)
 * draws its own sample of bn_recalibrate x its batch size, as `nas train
 * --proxy` does. */
static int recalibrate(nas_evaluator *ev, nas_net *net, int batch, nas_error *err)
{
    const nas_config *c = &ev->cfg;
    int nb = c->proxy.bn_recalibrate;
    if (batch == (c->proxy.batch_size > 0 ? c->proxy.batch_size : 128))
        return nas_net_bn_recalibrate(net, ev->recal, nb, batch, err);
    long long n = (long long)nb * batch;
    nas_dataset *own = NULL;
    int rc = nas_dataset_sample(ev->train, n < ev->train->n ? (int)n : ev->train->n, c->seed,
                                &own, err);
    if (!rc)
        rc = nas_net_bn_recalibrate(net, own, nb, batch, err);
    nas_dataset_destroy(own);
    return rc;
}

static int run_train(nas_evaluator *ev, const nas_genotype *g, const nas_net_desc *d,
                     nas_eval_progress progress, void *ctx, nas_trial_result *res)
{
    nas_error err = {0};
    nas_net *net = NULL;
    const nas_config *c = &ev->cfg;
    int rc = open_backend(ev, &err);
    if (rc)
        return fail(res, rc, err.msg);
    /* issue 7: the store records which device ran the trial */
    (void)nas_device_describe(ev->be, res->device_name, sizeof res->device_name, res->device_cc,
                              sizeof res->device_cc);
    nas_recipe_values rv; /* issue 33: the trial's recipe choices, else the config's */
    nas_config_recipe_values(c, ev->space, g, &rv);
    int batch = rv.batch_size > 0 ? rv.batch_size : 128;
    rc = nas_net_create(ev->be, d, batch, c->seed, &net, &err);
    if (rc)
        return fail(res, rc, err.msg);
    if (nas_net_param_count(net) != res->params) {
        char m[160];
        snprintf(m, sizeof m, "network has %lld parameters but the analytic count is %lld",
                 (long long)nas_net_param_count(net), (long long)res->params);
        nas_net_destroy(net);
        return fail(res, NAS_EINVAL, m);
    }
    nas_recipe rec = {.epochs = c->proxy.epochs, .batch_size = batch, .lr = rv.lr,
                      .momentum = c->proxy.momentum, .nesterov = c->proxy.nesterov,
                      .weight_decay = rv.weight_decay, .schedule = c->proxy.schedule,
                      .seed = c->seed, .loader_threads = c->data.loader_threads};
    nas_augment_parse(rv.augment, &rec.augment); /* checked by the config's pass 2 */
    nas_train_stats st;
    progress_ctx pc = {progress, ctx};
    if (ev->fid_until > 0) { /* issue 17: a rung, the schedule over the maximum budget */
        rec.epochs = ev->fid_max;
        nas_full_train_opts fo = {.recipe = &rec, .checkpoint = ev->fid_ckpt[0] ? ev->fid_ckpt : NULL,
                                  .progress = on_step, .ctx = &pc, .until = ev->fid_until,
                                  .augment = rec.augment}; /* it trained unaugmented (issue 29) */
        if (c->search.fidelity.resource == NAS_FIDELITY_IMAGES) { /* budgets in images */
            fo.until = 0;
            fo.until_images = ev->fid_until;
            fo.max_images = ev->fid_max;
        }
        rc = nas_train_resumable(net, ev->train, &fo, &st, NULL, &err);
    } else {
        rc = nas_train(net, ev->train, &rec, on_step, &pc, &st, &err);
    }
    res->train_loss = st.train_loss;
    res->train_seconds = st.seconds;
    res->epochs = st.epochs;
    /* issue 30: the evaluation's share of a trial: BN recalibration and the validation pass */
    double t_eval = now_seconds();
    if (!rc && ev->recal) /* issue 30: fresh BN statistics for the evaluation and the kept weights */
        rc = recalibrate(ev, net, batch, &err);
    if (!rc)
        rc = nas_net_evaluate(net, ev->valid, batch, &res->val_accuracy, NULL, &err);
    ev->eval_seconds = now_seconds() - t_eval;
    if (!rc && c->evaluator.latency_runs > 0)
        rc = nas_latency_ms(net, 1, c->evaluator.latency_warmup, c->evaluator.latency_runs,
                            &res->latency_ms, &err);
    if (!rc && c->proxy.keep_weights && ev->weights_path[0]) {
        nas_error werr; /* not fatal: the trial's measurements stand without the file */
        if (nas_weights_save(net, ev->weights_path, &werr) != NAS_OK)
            fprintf(stderr, "nas: keeping trial weights: %s\n", werr.msg);
    }
    nas_net_destroy(net);
    if (rc)
        return fail(res, rc, err.msg);
    return NAS_OK;
}

int nas_evaluator_run(nas_evaluator *ev, const nas_genotype *g, nas_eval_progress progress,
                      void *ctx, nas_trial_result *res)
{
    if (!res)
        return NAS_EINVAL;
    memset(res, 0, sizeof *res);
    res->test_accuracy = -1;
    if (!ev || !g)
        return fail(res, NAS_EINVAL, "nas_evaluator_run: NULL argument");
    char gs[NAS_GENOTYPE_STR_MAX];
    if (nas_space_format(ev->space, g, gs, sizeof gs) != NAS_OK)
        return fail(res, NAS_EINVAL, "genotype cannot be formatted");
    if (nas_count_genotype(ev, ev->space, g, &res->macs, &res->params) != NAS_OK) {
        char m[NAS_GENOTYPE_STR_MAX + 64];
        snprintf(m, sizeof m, "cannot build a network for %s", gs);
        return fail(res, NAS_EINVAL, m);
    }
    return ev->kind->run(ev, g, gs, progress, ctx, res);
}

/* Nothing trained or timed: NULL train_loss, latency_ms, train_seconds
 * (issue 29: not 0, which reads as "timed, took no time"). */
static void untrained(nas_trial_result *res, nas_eval_progress progress, void *ctx)
{
    res->train_loss = NAN;
    res->latency_ms = NAN;
    res->train_seconds = NAN;
    res->epochs = 0;
    if (progress)
        progress(ctx, 1.0, 0.0);
}

static int run_table(nas_evaluator *ev, const nas_genotype *g, const char *gs,
                     nas_eval_progress progress, void *ctx, nas_trial_result *res)
{
    double v, t;
    char key[NAS_GENOTYPE_STR_MAX];
    if (nas__table_by_key(ev->table)) /* a table keyed by canonical key (column "key") */
        nas_space_key(ev->space, g, key, sizeof key);
    if (nas__table_lookup(ev->table, nas__table_by_key(ev->table) ? key : gs, &v, &t) != NAS_OK) {
        char m[NAS_GENOTYPE_STR_MAX + NAS_PATH_MAX + 32];
        snprintf(m, sizeof m, "%s is not in table %s", gs, ev->cfg.evaluator.table);
        return fail(res, NAS_ENOTFOUND, m);
    }
    res->val_accuracy = v * ev->cfg.evaluator.table_scale;
    res->test_accuracy = t >= 0 ? t * ev->cfg.evaluator.table_scale : -1;
    untrained(res, progress, ctx);
    return NAS_OK;
}

static int run_trained(nas_evaluator *ev, const nas_genotype *g, const char *gs,
                       nas_eval_progress progress, void *ctx, nas_trial_result *res)
{
    (void)gs;
    nas_net_desc d = net_desc(ev, g);
    return run_train(ev, g, &d, progress, ctx, res);
}

/* Issue 31: the proxy's score is the trial's val_accuracy (its objective;
 * trial.device "zero-cost:PROXY" says so); a failed proxy fails the trial. */
static int run_zero_cost(nas_evaluator *ev, const nas_genotype *g, const char *gs,
                         nas_eval_progress progress, void *ctx, nas_trial_result *res)
{
    (void)gs;
    double score[NAS_ZC_COUNT];
    nas_error err;
    nas_error_clear(&err);
    if (nas_zc_scorer_score(ev->zc, g, score, &err) != NAS_OK)
        return fail(res, err.code ? err.code : NAS_EINVAL, err.msg);
    res->val_accuracy = score[0];
    untrained(res, progress, ctx);
    return NAS_OK;
}

/* Issue 32: a subnet by inherited weights (evaluator/supernet_eval.c);
 * nothing is trained or timed, so as untrained(), but the device ran it. */
static int run_supernet(nas_evaluator *ev, const nas_genotype *g, const char *gs,
                        nas_eval_progress progress, void *ctx, nas_trial_result *res)
{
    (void)gs;
    nas_error err;
    nas_error_clear(&err);
    int rc = open_backend(ev, &err);
    if (rc)
        return fail(res, rc, err.msg);
    (void)nas_device_describe(ev->be, res->device_name, sizeof res->device_name, res->device_cc,
                              sizeof res->device_cc);
    double t0 = now_seconds();
    rc = nas__sn_eval_run(ev->sn, ev->be, g, ev->valid, &res->val_accuracy, NULL, &err);
    ev->eval_seconds = now_seconds() - t0;
    if (rc)
        return fail(res, rc, err.msg);
    untrained(res, progress, ctx);
    return NAS_OK;
}

int nas_evaluator_kind_prepares(const nas_config *cfg)
{
    return cfg && cfg->evaluator.kind == NAS_EVALUATOR_SUPERNET;
}

int nas_evaluator_set_state_dir(nas_evaluator *ev, const char *dir)
{
    if (!ev || !dir)
        return NAS_EINVAL;
    return ev->sn ? nas__sn_eval_set_dir(ev->sn, dir) : NAS_OK;
}

int nas_evaluator_state_path(const nas_evaluator *ev, char *buf, size_t n)
{
    if (!ev || !ev->sn) {
        if (buf && n)
            buf[0] = '\0';
        return NAS_ENOTFOUND;
    }
    return nas__sn_eval_path(ev->sn, 0, buf, n);
}

int nas_evaluator_prepare(nas_evaluator *ev, FILE *log, nas_error *err)
{
    if (!ev)
        return nas_error_set(err, NAS_EINVAL, "nas_evaluator_prepare: NULL evaluator");
    if (!ev->sn)
        return NAS_OK;
    /* phase 1 runs alone: every worker's threads (workers.count x proxy.threads) */
    int threads = ev->cfg.proxy.threads > 0 ? ev->cfg.proxy.threads : 0;
    if (threads > 0 && ev->cfg.workers.count > 1)
        ev->cfg.proxy.threads = threads * ev->cfg.workers.count;
    int rc = open_backend(ev, err);
    ev->cfg.proxy.threads = threads;
    return rc ? rc : nas__sn_eval_train(ev->sn, ev->be, log, err);
}

int nas_evaluator_supernet_subnet_save(nas_evaluator *ev, const nas_genotype *g, const char *path,
                                       double *val_accuracy, nas_error *err)
{
    if (!ev || !g || !path || !val_accuracy)
        return nas_error_set(err, NAS_EINVAL, "nas_evaluator_supernet_subnet_save: NULL argument");
    *val_accuracy = NAN;
    if (!ev->sn)
        return nas_error_set(err, NAS_EINVAL, "evaluator.kind = \"%s\" has no supernet",
                             ev->kind->name);
    int rc = open_backend(ev, err);
    return rc ? rc : nas__sn_eval_subnet_save(ev->sn, ev->be, g, ev->valid, path, val_accuracy,
                                              err);
}

int nas_evaluator_supernet_recal_batches(const nas_evaluator *ev)
{
    return ev && ev->sn ? nas__sn_eval_recal_batches(ev->sn) : 0;
}

int nas_evaluator_supernet_curve(const nas_evaluator *ev, nas_epoch_stats **rows, int *n,
                                 nas_error *err)
{
    if (!rows || !n)
        return nas_error_set(err, NAS_EINVAL, "nas_evaluator_supernet_curve: NULL argument");
    *rows = NULL;
    *n = 0;
    return ev && ev->sn ? nas__sn_eval_curve(ev->sn, rows, n, err) : NAS_OK;
}

int nas_evaluator_latency(nas_evaluator *ev, const nas_genotype *g, double *ms, nas_error *err)
{
    if (ms)
        *ms = NAN;
    if (!ev || !g || !ms)
        return nas_error_set(err, NAS_EINVAL, "nas_evaluator_latency: NULL argument");
    if (!ev->kind->trains) /* nothing runs: tables and proxies carry no latency (*ms stays NaN) */
        return NAS_OK;
    int rc = open_backend(ev, err);
    if (rc)
        return rc;
    nas_net_desc d = net_desc(ev, g);
    nas_net *net = NULL;
    rc = nas_net_create(ev->be, &d, 1, ev->cfg.seed, &net, err);
    if (rc)
        return rc;
    int runs = ev->cfg.evaluator.latency_runs > 0 ? ev->cfg.evaluator.latency_runs : 10;
    int warmup = ev->cfg.evaluator.latency_warmup > 0 ? ev->cfg.evaluator.latency_warmup : 0;
    rc = nas_latency_ms(net, 1, warmup, runs, ms, err);
    nas_net_destroy(net);
    return rc;
}

int nas_evaluator_set_fidelity(nas_evaluator *ev, int until, int max, const char *checkpoint)
{
    if (!ev || until < 0 || (until > 0 && max < until) ||
        (checkpoint && strlen(checkpoint) >= sizeof ev->fid_ckpt))
        return NAS_EINVAL;
    ev->fid_until = until;
    ev->fid_max = max;
    snprintf(ev->fid_ckpt, sizeof ev->fid_ckpt, "%s", until > 0 && checkpoint ? checkpoint : "");
    return NAS_OK;
}

int nas_evaluator_set_weights_path(nas_evaluator *ev, const char *path)
{
    if (!ev)
        return NAS_EINVAL;
    if (path && strlen(path) >= sizeof ev->weights_path)
        return NAS_EINVAL;
    snprintf(ev->weights_path, sizeof ev->weights_path, "%s", path ? path : "");
    return NAS_OK;
}
