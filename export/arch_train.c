/*
 * export/arch_train.c - `nas train` as a library call (issue 13):
 * nas_arch_train trains an exported architecture (ARCH.json, docs/export.md)
 * or a bare genotype with the full recipe or the search's proxy recipe, a
 * checkpoint after every epoch and resume after an interruption, and
 * records the final test accuracy in the store. It lives in export/ beside
 * the ARCH.json reader it starts from: it is the other end of an export.
 *
 * Two data modes:
 *   full (default)  train on every training image of the experiment's data
 *                   (Fashion-MNIST's 60k for the shorthand; the data.format
 *                   files, with data.size, otherwise), or `subset` of them,
 *                   and test on its test images;
 *   proxy           redo the search's proxy training exactly: the same
 *                   train/validation split (proxy_data in the JSON), recipe,
 *                   seed and backend; reports the validation accuracy next
 *                   to the recorded one (identical on the ref backend).
 *
 * The steps, in order: resolve (architecture, recipe, checkpoint name),
 * load (store, data), build (backend, precision, network), train,
 * evaluate, record. Each failing step names itself in the error.
 */
#include <inttypes.h> /* PRId64 */
#include <limits.h>   /* PATH_MAX */
#include <math.h>     /* isfinite, NAN */
#include <stdio.h>
#include <stdlib.h>   /* realpath */
#include <string.h>
#include <sys/stat.h> /* stat: a data directory that moved */
#include <time.h>     /* clock_gettime: progress ETA */
#include <unistd.h>   /* isatty, sysconf */
#include <zlib.h>     /* crc32: --data in the checkpoint name */
#include "export/export_impl.h"
#include "nas/data.h"
#include "nas/evaluator.h"
#include "nas/export.h"
#include "nas/space.h"
#include "nas/store.h"
#include "nas/suggest.h" /* nas_suggest_hint: "did you mean" */
#include "nas/trainer.h"

void nas_arch_train_opts_init(nas_arch_train_opts *o)
{
    memset(o, 0, sizeof *o);
    o->epochs = o->batch = o->channels = o->cells = o->threads = -1;
    o->lr = o->momentum = o->weight_decay = o->progress_s = -1;
    o->bn_recalibrate = -1;
}

int nas_arch_train_opts_check(const nas_arch_train_opts *o, nas_error *err)
{
    if (!o->arch == !o->genotype)
        return nas_error_set(err, NAS_ECONFIG, "%s",
                             o->arch ? "give ARCH.json or --genotype STRING, not both"
                                     : "missing ARCH.json (from nas export --format json) or "
                                       "--genotype STRING");
    if (o->proxy && (o->subset || o->augment))
        return nas_error_set(err, NAS_ECONFIG,
                             "--proxy trains exactly as the search did: no --subset or --augment");
    if (o->proxy && o->genotype)
        return nas_error_set(err, NAS_ECONFIG,
                             "--proxy redoes a search's trial: it needs ARCH.json, not --genotype");
    nas_augment chk;
    if (o->augment && nas_augment_parse(o->augment, &chk))
        return nas_error_set(err, NAS_ECONFIG, "--augment takes none, or a list of crop, flip, "
                             "cutout such as crop,flip (crop pads 4 pixels, cropN N; cutout cuts "
                             "16x16, cutoutN NxN), not '%s'", o->augment);
    char hint[96];
    if (o->schedule && strcmp(o->schedule, "cosine") && strcmp(o->schedule, "constant"))
        return nas_error_set(err, NAS_ECONFIG, "--schedule is cosine or constant, not '%s'%s",
                             o->schedule,
                             nas_suggest_hint(o->schedule, "cosine constant", hint, sizeof hint));
    const char *p = o->precision;
    if (p && strcmp(p, "fp32") && strcmp(p, "bf16") && strcmp(p, "fp16"))
        return nas_error_set(err, NAS_ECONFIG, "--precision: '%s' is not fp32, bf16 or fp16%s", p,
                             nas_suggest_hint(p, "fp32 bf16 fp16", hint, sizeof hint));
    return NAS_OK;
}

/* ---- resolve: architecture, recipe, checkpoint ------------------------------------ */

/* What one training will do, settled before any data is read. */
typedef struct plan {
    nas_arch a;             /* a.net.space: `space` for a chain network */
    nas_space *space;       /* the architecture's space (owned) */
    nas_recipe rec;
    nas_augment aug;
    char augs[48];          /* aug as text ("crop4,flip", "none") */
    const char *backend, *precision, *dir;
    int lowp;               /* precision other than fp32 */
    int threads;
    int bn_recal;           /* issue 30: BN recalibration batches before testing (0: off) */
    /* --proxy of a multi-fidelity trial (ARCH.json's recipe.fidelity):
     * train up to this budget (epochs or images), the schedule over the
     * trial's fidelity.max, as its rung jobs did; 0: the whole recipe */
    int until;
    int64_t until_images, max_images;
    char ckpt[NAS_PATH_MAX + 128];
} plan;

/* The genotype's architecture: any cell of the NAS-Bench-201 space, C 16,
 * N 1, 3 stages, the Debian package's data directory, seed 0 (the
 * options override). Errors: NAS_EINVAL (the genotype, with why). */
static int arch_from_genotype(const char *genotype, nas_arch *a, nas_error *err)
{
    nas_arch_init(a);
    snprintf(a->genotype, sizeof a->genotype, "%s", genotype);
    snprintf(a->space_type, sizeof a->space_type, "cell");
    a->op_mask = (1u << NAS_OP_COUNT) - 1;
    a->net.channels = 16;
    a->net.stages = 3;
    a->net.cells_per_stage = 1;
    a->recipe.seed = 0;
    snprintf(a->backend, sizeof a->backend, "cpu");
    snprintf(a->data.dataset, sizeof a->data.dataset, "fashion-mnist");
    snprintf(a->data.dir, sizeof a->data.dir, "%s", NAS_FMNIST_DIR);
    int valid = 0, step = 0;
    int rc = nas__arch_parse(a, NULL, &valid, &step, err);
    if (rc && step)
        nas_error_prefix(err, "bad genotype '%s'", genotype);
    if (!rc && !valid)
        rc = nas_error_set(err, NAS_EINVAL, "genotype '%s' has no path from the cell input to "
                           "its output", genotype);
    return rc ? NAS_EINVAL : NAS_OK;
}

/* The recipe: --proxy's from ARCH.json, else the full one with the JSON's
 * seed; the options override either. */
static void resolve_recipe(const nas_arch_train_opts *o, plan *p, const char **augment)
{
    nas_recipe *rec = &p->rec;
    *rec = p->a.recipe;
    if (!o->proxy) {
        rec->epochs = NAS_FULL_EPOCHS;
        rec->batch_size = NAS_FULL_BATCH;
        rec->lr = NAS_FULL_LR;
        rec->momentum = NAS_FULL_MOMENTUM;
        rec->nesterov = 1;
        rec->weight_decay = NAS_FULL_WEIGHT_DECAY;
        rec->schedule = NAS_SCHEDULE_COSINE;
        if (!*augment)
            *augment = NAS_FULL_AUGMENT;
    }
    if (o->epochs > 0)
        rec->epochs = o->epochs;
    if (o->have_seed)
        rec->seed = o->seed;
    if (o->batch > 0)
        rec->batch_size = o->batch;
    if (o->lr >= 0)
        rec->lr = o->lr;
    if (o->momentum >= 0)
        rec->momentum = o->momentum;
    if (o->weight_decay >= 0)
        rec->weight_decay = o->weight_decay;
    if (o->schedule)
        rec->schedule = !strcmp(o->schedule, "cosine") ? NAS_SCHEDULE_COSINE
                                                        : NAS_SCHEDULE_CONSTANT;
    p->bn_recal = o->bn_recalibrate >= 0 ? o->bn_recalibrate
                : o->proxy                ? p->a.bn_recalibrate
                                          : NAS_TRAIN_BN_RECALIBRATE_DEFAULT;
    /* a multi-fidelity trial (an explicit --epochs trains that instead):
     * as evaluator/evaluator.c run_train trains a rung */
    if (o->proxy && o->epochs <= 0 && p->a.fidelity.budget > 0) {
        rec->epochs = (int)p->a.fidelity.max;
        if (p->a.fidelity.images) {
            p->until_images = p->a.fidelity.budget;
            p->max_images = p->a.fidelity.max;
        } else {
            p->until = (int)p->a.fidelity.budget;
        }
    }
}

/* Checkpoint: explicit, "none", or beside ARCH.json named by mode, epochs,
 * seed, augmentation (and the precision unless fp32, so runs in different
 * precisions never resume from each other's checkpoints), then (issue 33)
 * every other option the checkpoint's fingerprint checks
 * (trainer/train_full.c): widths, batch, lr, momentum, weight decay,
 * schedule, backend, --subset, --data (a CRC-32 of the directory as
 * given). The rest of the fingerprint comes from ARCH.json itself, so two
 * recipes that differ in any fingerprinted setting never share a name. */
static void resolve_checkpoint(const nas_arch_train_opts *o, plan *p)
{
    p->ckpt[0] = 0;
    if (!o->checkpoint && o->arch) {
        size_t n = strlen(o->arch);
        int stem = (int)(n > 5 && !strcmp(o->arch + n - 5, ".json") ? n - 5 : n);
        char opts[256] = "";
        size_t k = 0;
#define CKPT_PART(cond, ...)                                                                \
    if ((cond) && k < sizeof opts)                                                          \
        k += (size_t)snprintf(opts + k, sizeof opts - k, __VA_ARGS__);
        CKPT_PART(o->channels > 0, "-C%d", o->channels)
        CKPT_PART(o->cells >= 0, "-N%d", o->cells)
        CKPT_PART(o->batch > 0, "-b%d", o->batch)
        CKPT_PART(o->lr >= 0, "-lr%g", o->lr)
        CKPT_PART(o->momentum >= 0, "-m%g", o->momentum)
        CKPT_PART(o->weight_decay >= 0, "-wd%g", o->weight_decay)
        CKPT_PART(o->schedule != NULL, "-%s", o->schedule ? o->schedule : "")
        CKPT_PART(o->backend != NULL, "-%s", o->backend ? o->backend : "")
        CKPT_PART(o->subset > 0, "-n%d", o->subset)
        CKPT_PART(p->until > 0 || p->until_images > 0, "-upto%lld",
                  (long long)(p->until > 0 ? p->until : p->until_images))
        CKPT_PART(o->data != NULL, "-data%08lx",
                  o->data ? crc32(0L, (const Bytef *)o->data, (uInt)strlen(o->data)) : 0UL)
#undef CKPT_PART
        snprintf(p->ckpt, sizeof p->ckpt, "%.*s.%s-e%d-s%llu%s%s%s%s%s.ckpt.npz", stem, o->arch,
                 o->proxy ? "proxy" : "full", p->rec.epochs, (unsigned long long)p->rec.seed,
                 strcmp(p->augs, "none") ? "-" : "", strcmp(p->augs, "none") ? p->augs : "",
                 p->lowp ? "-" : "", p->lowp ? p->precision : "", opts);
        for (char *c = p->ckpt + stem + 1; *c; c++)
            if (*c == ',' || *c == '/')
                *c = '+';
    } else if (o->checkpoint && strcmp(o->checkpoint, "none") != 0) {
        snprintf(p->ckpt, sizeof p->ckpt, "%s", o->checkpoint);
    }
}

static int resolve(const nas_arch_train_opts *o, plan *p, nas_error *err)
{
    int rc = nas_arch_train_opts_check(o, err);
    if (rc)
        return rc;
    rc = o->arch ? nas_arch_read_json(o->arch, &p->a, err)
                 : arch_from_genotype(o->genotype, &p->a, err);
    if (rc)
        return rc;
    if (o->genotype && o->have_seed)
        p->a.recipe.seed = o->seed;
    int chain = !strcmp(p->a.space_type, "chain");
    if (chain && (o->channels > 0 || o->cells >= 0))
        return nas_error_set(err, NAS_ECONFIG, "%s is a chain network: --channels and --cells "
                             "widen and deepen cell networks only (a chain genotype fixes its "
                             "widths and depths)", o->arch);
    if (chain) { /* issue 15: the network is built from the space's layers */
        if ((rc = nas_arch_space(&p->a, &p->space, err)))
            return rc;
        p->a.net.space = p->space;
    }
    /* The network as exported, or wider/deeper (the genotype stays). */
    if (o->channels > 0)
        p->a.net.channels = o->channels;
    if (o->cells >= 0)
        p->a.net.cells_per_stage = o->cells;
    const char *augment = o->augment;
    resolve_recipe(o, p, &augment);
    nas_augment_parse(augment, &p->aug); /* checked above; NAS_FULL_AUGMENT is valid */
    if (o->proxy) /* issue 16: the search's own augmentation (data.augment) */
        p->aug = p->a.recipe.augment;
    p->rec.augment = p->aug;
    p->rec.loader_threads = 1; /* batch k+1 prepared while step k runs (issue 16) */
    if (p->rec.epochs <= 0)
        return nas_error_set(err, NAS_ECONFIG, "the recipe has 0 epochs: give --epochs N");
    p->backend = o->backend ? o->backend : (!strcmp(p->a.backend, "ref") ? "ref" : "cpu");
    /* full training: every online core; --proxy: the trial's threads */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    p->threads = o->threads >= 0 ? o->threads
                 : o->proxy      ? (p->a.threads > 0 ? p->a.threads : 2)
                                 : (int)(ncpu > 0 ? ncpu : 1);
    p->dir = o->data ? o->data : p->a.data.dir;
    p->precision = o->precision ? o->precision : "fp32";
    p->lowp = strcmp(p->precision, "fp32") != 0;
    nas_augment_format(&p->aug, p->augs, sizeof p->augs);
    resolve_checkpoint(o, p);
    return NAS_OK;
}

/* ---- load and build ------------------------------------------------------------ */

/* The resources of one training, released by release(). */
typedef struct work {
    nas_dataset *full, *train, *valid, *test;
    nas_dataset test_view;
    const nas_dataset *tr, *te; /* what is trained on / tested on */
    nas_backend *be;
    nas_net *net;
    nas_store *st;
} work;

static void release(work *w)
{
    nas_store_close(w->st);
    nas_net_destroy(w->net);
    nas_backend_destroy(w->be);
    nas_dataset_destroy(w->full);
    nas_dataset_destroy(w->train);
    nas_dataset_destroy(w->valid);
    nas_dataset_destroy(w->test);
}

/* Data read through data.format (idx, npy, cifar; or the shorthand with a
 * fractional data.valid): the same reader, split and normalisation as the
 * search (nas/data.h), the normalisation from ARCH.json. --proxy: the
 * search's stratified split; otherwise every training image (--subset:
 * the first `subset` of a seeded shuffle, as for Fashion-MNIST). */
static int load_format(const nas_arch_train_opts *o, const plan *p, work *w, nas_error *err)
{
    nas_data_conf dc;
    nas__arch_data_conf(&p->a, p->dir, &dc);
    const nas_data_info *info = &p->a.data.norm;
    nas_rawset *r = NULL;
    uint32_t *va = NULL, *tr = NULL;
    int rc = nas_data_read(&dc, 0, &r, err), ntr = 0;
    struct stat st;
    if (rc && !o->data && (!strcmp(dc.format, "cifar") || !strcmp(dc.format, "folder")) &&
        stat(dc.dir, &st) != 0) /* as nas export --logits says it */
        rc = nas_error_set(err, NAS_EIO, "the data directory %s (proxy_data.dir of %s) no longer "
                           "exists: if the data moved, give its new place with --data DIR",
                           dc.dir, o->arch ? o->arch : "the architecture");
    if (!rc && o->proxy) {
        int nv = nas_config_valid_count(&dc, r->n);
        rc = nas_data_split(r, nv, dc.train_subset, p->a.data.split_seed, &va, &tr, &ntr, NULL,
                            NULL, err);
        if (!rc)
            rc = nas_data_gather(r, tr, ntr, info, &w->train, err);
        if (!rc)
            rc = nas_data_gather(r, va, nv, info, &w->valid, err);
    } else if (!rc) {
        rc = nas_data_gather(r, NULL, r->n, info, &w->full, err);
        if (!rc && o->subset)
            rc = nas_dataset_split(w->full, 0, o->subset, p->rec.seed, &w->train, &w->valid, err);
    }
    free(va);
    free(tr);
    nas_rawset_destroy(r);
    if (rc == NAS_EFORMAT && !strcmp(dc.format, "folder") && dc.size[0] == 0 && err &&
        strstr(err->msg, "mixed sizes")) /* issue 28: exported before proxy_data.size */
        nas_error_prefix(err, "%s has no proxy_data.size (exported by an older nas?): export the "
                         "trial again, or add \"size\": [H, W] (the search's data.size) to its "
                         "proxy_data", o->arch ? o->arch : "the architecture");
    if (!rc)
        rc = nas_data_load_test(&dc, info, &w->test, err);
    if (!rc && !w->test)
        rc = nas_error_set(err, NAS_EINVAL, "%s: the data (format %s) has no test images (%s): "
                           "nas train tests on them", o->arch ? o->arch : "the genotype",
                           dc.format, nas__no_test_data(dc.format));
    return rc;
}

static int load(const nas_arch_train_opts *o, const plan *p, work *w, const char **stage,
                nas_error *err)
{
    int fmnist = !p->a.data.format[0] && p->a.data.valid_fraction <= 0;
    *stage = fmnist ? "loading Fashion-MNIST" : "loading the data";
    if (fmnist && strcmp(p->a.data.dataset, "fashion-mnist") != 0)
        return nas_error_set(err, NAS_EUNSUPPORTED, "data set '%s' is not supported",
                             p->a.data.dataset);
    int rc;
    if (o->db) { /* open early: a bad --db fails before hours of training */
        *stage = "opening the store";
        if ((rc = nas_store_open(o->db, 0, &w->st, err)))
            return rc;
        int from = nas_store_migrated_from(w->st);
        if (from > 0 && o->out)
            fprintf(o->out,
                    "migrated %s from schema version %d to %d (docs/schema.md lists the "
                    "steps); a nas older than this one can no longer open it\n",
                    o->db, from, NAS_STORE_SCHEMA_VERSION);
    }
    *stage = fmnist ? "loading Fashion-MNIST" : "loading the data";
    const char *fmt = p->a.data.format;
    if (o->data && o->progress && (!strcmp(fmt, "idx") || !strcmp(fmt, "npy")))
        fprintf(o->progress, "nas train: warning: --data %s is not used: the data (format %s) "
                "names its files, %s's proxy_data.train_images, train_labels, test_images and "
                "test_labels; if they moved, put their new paths there\n", o->data, fmt,
                o->arch ? o->arch : "ARCH.json");
    if (!fmnist)
        rc = load_format(o, p, w, err);
    else
        rc = nas_fmnist_load(p->dir, "train", &w->full, err);
    if (!rc && fmnist)
        rc = nas_fmnist_load(p->dir, "test", &w->test, err);
    if (!rc && fmnist && o->proxy) {
        if (p->a.data.valid <= 0)
            rc = nas_error_set(err, NAS_EINVAL, "%s: proxy_data.valid is 0: --proxy needs the "
                               "search's validation split", o->arch);
        else
            rc = nas_dataset_split(w->full, p->a.data.valid, p->a.data.train_subset,
                                   p->a.data.split_seed, &w->train, &w->valid, err);
    } else if (!rc && fmnist && o->subset) {
        rc = nas_dataset_split(w->full, 0, o->subset, p->rec.seed, &w->train, &w->valid, err);
    }
    if (rc)
        return rc;
    w->tr = w->train ? w->train : w->full;
    w->te = w->test;
    /* a crop or cutout that can leave nothing of these images; --proxy
     * repeats the search's augmentation whatever it was */
    char why[400];
    if (!o->proxy && nas_augment_check(&p->aug, w->tr->h, w->tr->w, why, sizeof why) != NAS_OK) {
        *stage = "checking the augmentation";
        return o->augment ? nas_error_set(err, NAS_EINVAL, "--augment %s: %s", o->augment, why)
                          : nas_error_set(err, NAS_EINVAL, "nas train's default augmentation "
                                          "(%s): %s; give --augment (e.g. --augment flip, or "
                                          "none)", NAS_FULL_AUGMENT, why);
    }
    if (o->test_subset > 0 && o->test_subset < w->test->n) {
        w->test_view = *w->test;
        w->test_view.n = o->test_subset;
        w->test_view.owns = 0;
        w->te = &w->test_view;
    }
    return NAS_OK;
}

/* nas_backend_set_precision, with the backend's reason when it refuses
 * (e.g. fp16 on the cpu backend: NAS_EUNSUPPORTED). */
static int set_precision(nas_backend *be, const char *precision, nas_error *err)
{
    int rc = nas_backend_set_precision(be, precision);
    if (rc != NAS_OK) {
        const char *why = nas_backend_last_error(be);
        nas_error_set(err, rc, "--precision %s is not available on the %s backend: %s%s",
                      precision, nas_backend_name(be), why && *why ? why : nas_strerror(rc),
                      !strcmp(precision, "fp16") ? " (fp16 with loss scaling is CUDA-only; use "
                                                   "bf16 or fp32 on the CPU)"
                                                 : "");
    }
    return rc;
}

static int build(const plan *p, work *w, nas_arch_train_result *r, const char **stage,
                 nas_error *err)
{
    *stage = "creating the backend";
    int rc = nas_backend_create(p->backend, p->threads, 0, &w->be, err);
    if (rc)
        return rc;
    *stage = "setting the precision";
    if ((rc = set_precision(w->be, p->precision, err)))
        return rc;
    *stage = "building the network";
    if ((rc = nas_net_create(w->be, &p->a.net, p->rec.batch_size, p->rec.seed, &w->net, err)))
        return rc;
    nas_count_net(&p->a.net, &r->macs, &r->params, NULL, NULL);
    return NAS_OK;
}

static void print_setup(const nas_arch_train_opts *o, const plan *p, const work *w,
                        const nas_arch_train_result *r)
{
    FILE *f = o->out;
    if (!f)
        return;
    if (o->arch)
        fprintf(f, "nas train %s: %s\n", o->arch, p->a.genotype);
    else
        fprintf(f, "nas train: %s\n", p->a.genotype);
    const nas_recipe *rec = &p->rec;
    char net[64];
    if (p->space)
        snprintf(net, sizeof net, "chain network");
    else
        snprintf(net, sizeof net, "C=%d N=%d", p->a.net.channels, p->a.net.cells_per_stage);
    char len[96]; /* a multi-fidelity trial: its budget, the schedule over fidelity.max */
    if (p->until_images > 0)
        snprintf(len, sizeof len, "%lld images (the schedule spans %lld)",
                 (long long)p->until_images, (long long)p->max_images);
    else if (p->until > 0)
        snprintf(len, sizeof len, "%d epochs (the schedule spans %d)", p->until, rec->epochs);
    else
        snprintf(len, sizeof len, "%d epochs", rec->epochs);
    fprintf(f, "%s training, %s, %s backend, %s, %d threads, %d train images, batch %d, "
            "lr %g, %s schedule, %s, seed %llu, augment %s\n",
            o->proxy ? "proxy" : "full", net, p->backend,
            p->precision, p->threads, w->tr->n, rec->batch_size, rec->lr,
            rec->schedule == NAS_SCHEDULE_COSINE ? "cosine" : "constant", len,
            (unsigned long long)rec->seed, p->augs);
    fprintf(f, "params %" PRId64 ", MACs %" PRId64 "; checkpoint %s\n", r->params, r->macs,
            p->ckpt[0] ? p->ckpt : "none");
    fflush(f);
}

/* ---- train: progress and epoch reports --------------------------------------------- */

typedef struct run_ctx {
    FILE *out, *log;
    volatile sig_atomic_t *stop;
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
 * otherwise. A set stop flag stops training. */
static int on_step(void *ctx, int step, int steps, float loss)
{
    run_ctx *c = ctx;
    double now = mono_s();
    if (c->t0 == 0) {
        c->t0 = now;
        c->step0 = step - 1;
        c->last = now;
    }
    if (c->stop && *c->stop)
        return 1;
    if (!c->log || (now - c->last < c->interval && step != steps))
        return 0;
    c->last = now;
    int pe = c->per_epoch > 0 ? c->per_epoch : steps;
    int ep = (step - 1) / pe + 1, s_in = step - (ep - 1) * pe;
    double rate = now > c->t0 ? (step - c->step0) / (now - c->t0) : 0; /* steps per second */
    char eta_ep[32], eta_all[32];
    fmt_eta(rate > 0 ? (pe - s_in) / rate : NAN, eta_ep, sizeof eta_ep);
    fmt_eta(rate > 0 ? (steps - step) / rate : NAN, eta_all, sizeof eta_all);
    fprintf(c->log, "%s  epoch %d/%d  step %d/%d  loss %.4f  ETA epoch %s, run %s%s",
            c->tty ? "\r\033[K" : "", ep, c->epochs, s_in, pe, (double)loss, eta_ep, eta_all,
            c->tty ? "" : "\n");
    fflush(c->log);
    c->drawn = c->tty;
    return 0;
}

static void on_resume(void *ctx, int epoch)
{
    run_ctx *c = ctx;
    if (!c->out)
        return;
    fprintf(c->out, "resumed from %s after epoch %d of %d\n", c->ckpt, epoch, c->epochs);
    fflush(c->out);
}

/* issue 19: a warning that does not stop the run (an older checkpoint resumed) */
static void on_note(void *ctx, const char *msg)
{
    run_ctx *c = ctx;
    fprintf(c->log ? c->log : stderr, "nas train: warning: %s\n", msg);
}

static int on_epoch(void *ctx, const nas_epoch_stats *e)
{
    run_ctx *c = ctx;
    if (c->drawn) {
        fprintf(c->log, "\r\033[K");
        c->drawn = 0;
    }
    if (!c->out)
        return 0;
    fprintf(c->out, "epoch %d/%d  loss %.4f  train acc %.4f  time %.1f s  %.0f img/s%s\n",
            e->epoch, e->epochs, e->loss, e->accuracy, e->seconds, e->images_per_s,
            c->checkpoints ? "  (checkpoint written)" : "");
    fflush(c->out);
    return 0;
}

static int train(const nas_arch_train_opts *o, plan *p, work *w, nas_arch_train_result *r,
                 nas_error *err)
{
    run_ctx c;
    memset(&c, 0, sizeof c);
    c.out = o->out;
    c.log = o->progress;
    c.stop = o->stop;
    c.tty = c.log && isatty(fileno(c.log));
    c.checkpoints = p->ckpt[0] != 0;
    c.epochs = p->rec.epochs;
    if (p->until > 0) /* a multi-fidelity trial: the epochs it trains */
        c.epochs = p->until;
    else if (p->until_images > 0)
        c.epochs = (int)((p->until_images + w->tr->n - 1) / (w->tr->n > 0 ? w->tr->n : 1));
    c.per_epoch = (w->tr->n + p->rec.batch_size - 1) / p->rec.batch_size;
    /* once a second on a terminal, every 10 s into a log */
    c.interval = o->progress_s >= 0 ? o->progress_s : c.tty ? 1.0 : 10.0;
    c.ckpt = p->ckpt;
    nas_full_train_opts fo = {&p->rec, p->aug, p->ckpt[0] ? p->ckpt : NULL, o->stop_after,
                              on_step, on_epoch, &c, on_resume, on_note, p->until,
                              p->until_images, p->max_images};
    nas_train_stats ts;
    int rc = nas_train_resumable(w->net, w->tr, &fo, &ts, &r->resumed_from, err);
    if (c.drawn)
        fprintf(c.log, "\r\033[K");
    if (rc == NAS_EINTR && p->ckpt[0])
        nas_error_prefix(err, "run the same command again to resume from %s", p->ckpt);
    if (rc)
        return rc;
    r->epochs_done = ts.epochs;
    r->train_seconds = ts.seconds;
    r->wait_seconds = ts.wait_seconds;
    r->train_loss = ts.train_loss;
    r->train_accuracy = ts.train_accuracy;
    return NAS_OK;
}

/* ---- evaluate and record ---------------------------------------------------------------- */

/* Issue 30: BN statistics recomputed over p->bn_recal batches of the
 * training images in a fixed order (nas_dataset_sample with the recipe's
 * seed: the search's evaluator does the same), before testing. The
 * checkpoint keeps the statistics of training, so that a resumed or
 * repeated run trains as before; the recalibration is deterministic and
 * redone after it. */
static int recalibrate(const nas_arch_train_opts *o, const plan *p, work *w, nas_error *err)
{
    if (p->bn_recal <= 0)
        return NAS_OK;
    double t0 = mono_s();
    long long n = (long long)p->bn_recal * p->rec.batch_size;
    int used = n < w->tr->n ? (int)n : w->tr->n; /* fewer training images: all of them */
    nas_dataset *recal = NULL;
    int rc = nas_dataset_sample(w->tr, used, p->rec.seed, &recal, err);
    if (!rc)
        rc = nas_net_bn_recalibrate(w->net, recal, p->bn_recal, p->rec.batch_size, err);
    nas_dataset_destroy(recal);
    if (!rc && o->out)
        fprintf(o->out, "BN recalibration: %d batches of %d training images%s, %.2f s\n",
                (used + p->rec.batch_size - 1) / p->rec.batch_size, p->rec.batch_size,
                used < n ? " (all there are)" : "", mono_s() - t0);
    return rc;
}

static int evaluate(const nas_arch_train_opts *o, const plan *p, work *w,
                    nas_arch_train_result *r, nas_error *err)
{
    int rc = nas_net_evaluate(w->net, w->te, p->rec.batch_size, &r->test_accuracy,
                              &r->test_loss, err);
    if (!rc && o->proxy)
        rc = nas_net_evaluate(w->net, w->valid, p->rec.batch_size, &r->val_accuracy, NULL, err);
    if (rc || !o->out)
        return rc;
    FILE *f = o->out;
    fprintf(f, "training: %d epochs, %.1f s of training steps, %.2f%% of it waiting for data\n",
            r->epochs_done, r->train_seconds,
            r->train_seconds > 0 ? 100.0 * r->wait_seconds / r->train_seconds : 0.0);
    if (o->proxy) {
        fprintf(f, "val_accuracy %.6f", r->val_accuracy);
        if (isfinite(p->a.metrics.val_accuracy) && p->a.measured_by[0])
            fprintf(f, "  (trial %" PRId64 " recorded %.6f by %s, not by a proxy training: "
                    "not comparable)", p->a.trial_id, p->a.metrics.val_accuracy,
                    !strcmp(p->a.measured_by, "supernet") ? "weights inherited from the supernet"
                                                          : p->a.measured_by);
        else if (isfinite(p->a.metrics.val_accuracy))
            fprintf(f, "  (trial %" PRId64 " recorded %.6f, difference %.2g)", p->a.trial_id,
                    p->a.metrics.val_accuracy, r->val_accuracy - p->a.metrics.val_accuracy);
        fprintf(f, "\n");
    }
    fprintf(f, "test accuracy %.4f  test loss %.6f  (%d test images)\n", r->test_accuracy,
            r->test_loss, w->te->n);
    return NAS_OK;
}

/* The final_training row of this run (record, already_done): the recipe
 * text also names the test images (issue 33) and --data when given, so a
 * row tells every setting that changes its numbers. */
static void final_row(const nas_arch_train_opts *o, const plan *p, const work *w,
                      const nas_arch_train_result *r, nas_store_final_training *f)
{
    const nas_recipe *rec = &p->rec;
    memset(f, 0, sizeof *f);
    f->experiment_id = p->a.experiment_id;
    f->trial_id = p->a.trial_id;
    snprintf(f->genotype, sizeof f->genotype, "%s", p->a.genotype);
    char real[PATH_MAX];
    if (o->arch)
        snprintf(f->arch_json, sizeof f->arch_json, "%s", realpath(o->arch, real) ? real : o->arch);
    f->epochs = rec->epochs;
    char recal[32] = ""; /* issue 30, when on */
    if (p->bn_recal > 0)
        snprintf(recal, sizeof recal, " bn_recalibrate=%d", p->bn_recal);
    char widths[64]; /* a chain genotype carries its own widths */
    if (p->space)
        snprintf(widths, sizeof widths, "space=chain");
    else
        snprintf(widths, sizeof widths, "channels=%d cells=%d", p->a.net.channels,
                 p->a.net.cells_per_stage);
    snprintf(f->recipe, sizeof f->recipe,
             "mode=%s epochs=%d batch_size=%d lr=%g momentum=%g nesterov=%d weight_decay=%g "
             "schedule=%s seed=%llu %s%s%s%s test_images=%d%s%s",
             o->proxy ? "proxy" : "full", rec->epochs, rec->batch_size, rec->lr, rec->momentum,
             rec->nesterov, rec->weight_decay,
             rec->schedule == NAS_SCHEDULE_COSINE ? "cosine" : "constant",
             (unsigned long long)rec->seed, widths,
             p->lowp ? " precision=" : "", p->lowp ? p->precision : "", recal, w->te->n,
             o->data ? " data=" : "", o->data ? (realpath(o->data, real) ? real : o->data) : "");
    snprintf(f->augment, sizeof f->augment, "%s", p->augs);
    snprintf(f->backend, sizeof f->backend, "%s", p->backend);
    f->train_images = w->tr->n;
    f->test_accuracy = r->test_accuracy;
    f->test_loss = r->test_loss;
    f->train_loss = r->train_loss;
    f->train_accuracy = r->train_accuracy;
    f->train_seconds = r->train_seconds;
    f->params = r->params;
    f->macs = r->macs;
    snprintf(f->checkpoint, sizeof f->checkpoint, "%s",
             p->ckpt[0] && realpath(p->ckpt, real) ? real : p->ckpt);
}

/* Issue 33: a rerun of a finished `nas train ... --db`. The final_training
 * row of the same trial with the same architecture file, recipe (test
 * images and --data included), augmentation, backend, training images
 * and checkpoint: *done gets its id (-1: none). Errors: the store's. */
static int already_done(const nas_arch_train_opts *o, const plan *p, const work *w,
                        nas_arch_train_result *r, int64_t *done, nas_error *err)
{
    *done = -1;
    nas_store_final_training me, *ft = NULL;
    int n = 0;
    final_row(o, p, w, r, &me);
    /* all rows: a trial id not in this database was stored as NULL (-1) */
    int rc = nas_store_final_training_list(w->st, -1, -1, &ft, &n, err);
    for (int i = n - 1; !rc && i >= 0 && *done < 0; i--) {
        const nas_store_final_training *x = &ft[i];
        if ((x->trial_id == me.trial_id || x->trial_id < 0) && !strcmp(x->genotype, me.genotype) &&
            !strcmp(x->arch_json, me.arch_json) && !strcmp(x->recipe, me.recipe) &&
            !strcmp(x->augment, me.augment) && !strcmp(x->backend, me.backend) &&
            x->train_images == me.train_images && !strcmp(x->checkpoint, me.checkpoint)) {
            *done = x->id;
            r->test_accuracy = x->test_accuracy;
            r->test_loss = x->test_loss;
            if (o->out)
                fprintf(o->out, "already done: final_training %" PRId64 " in %s (%s) recorded "
                        "this training: test accuracy %.4f, checkpoint %s; nothing recorded "
                        "(to train again, delete that row or change a setting)\n",
                        x->id, o->db, x->created_at, x->test_accuracy,
                        x->checkpoint[0] ? x->checkpoint : "none");
        }
    }
    free(ft);
    return rc;
}

static int record(const nas_arch_train_opts *o, const plan *p, work *w,
                  nas_arch_train_result *r, nas_error *err)
{
    nas_store_final_training f;
    final_row(o, p, w, r, &f);
    int rc = nas_store_final_training_put(w->st, &f, &r->final_training_id, err);
    if (!rc && o->out)
        fprintf(o->out, "recorded as final_training %" PRId64 " in %s\n", r->final_training_id,
                o->db);
    return rc;
}

/* ---- the whole training ------------------------------------------------------------------- */

static void result_init(nas_arch_train_result *r)
{
    memset(r, 0, sizeof *r);
    r->test_accuracy = r->test_loss = r->val_accuracy = NAN;
    r->train_loss = r->train_accuracy = r->train_seconds = NAN;
    r->wait_seconds = 0;
    r->params = r->macs = -1;
    r->final_training_id = -1;
}

int nas_arch_train(const nas_arch_train_opts *o, nas_arch_train_result *r, nas_error *err)
{
    result_init(r);
    plan *p = calloc(1, sizeof *p); /* large (paths); not on the stack */
    if (!p)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    int rc = resolve(o, p, err);
    work w;
    memset(&w, 0, sizeof w);
    const char *stage = NULL;
    if (!rc)
        rc = load(o, p, &w, &stage, err);
    int64_t done = -1;
    if (!rc && w.st) { /* issue 33: a rerun records nothing */
        stage = "reading the store";
        rc = already_done(o, p, &w, r, &done, err);
        r->final_training_id = done;
        r->already_done = done > 0;
    }
    if (!rc && done < 0)
        rc = build(p, &w, r, &stage, err);
    if (!rc && done < 0) {
        print_setup(o, p, &w, r);
        stage = "training";
        rc = train(o, p, &w, r, err);
    }
    if (!rc && done < 0) {
        stage = "recalibrating batch norm";
        rc = recalibrate(o, p, &w, err);
    }
    if (!rc && done < 0 && p->bn_recal > 0 && p->ckpt[0]) {
        /* issue 30: the tested weights, recalibrated statistics included, beside
         * the checkpoint (which keeps training's, to resume bit for bit), for
         * `nas export --weights final` (export_source.c use_final) */
        char rp[NAS_PATH_MAX + 160];
        stage = "saving the recalibrated weights";
        snprintf(rp, sizeof rp, "%s%s", p->ckpt, NAS_FINAL_RECAL_SUFFIX);
        rc = nas_weights_save(w.net, rp, err);
    }
    if (!rc && done < 0) {
        stage = "testing";
        rc = evaluate(o, p, &w, r, err);
    }
    if (!rc && w.st && done < 0) {
        stage = "recording the result";
        rc = record(o, p, &w, r, err);
    }
    r->arch = p->a;
    r->arch.net.space = NULL; /* p->space is freed below */
    r->recipe = p->rec;
    snprintf(r->checkpoint, sizeof r->checkpoint, "%s", p->ckpt);
    r->train_images = w.tr ? w.tr->n : 0;
    r->test_images = w.te ? w.te->n : 0;
    if (rc && stage) {
        r->stage = stage;
        if (!err || !err->msg[0])
            nas_error_set(err, rc, "%s", nas_strerror(rc));
        nas_error_prefix(err, "%s", stage);
    }
    release(&w);
    nas_space_destroy(p->space);
    free(p);
    return rc;
}
