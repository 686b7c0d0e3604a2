/*
 * cli/cmd_supernet.c - `nas supernet CONF [--epochs E] [--genotypes K]
 * [--seeds S] [--recal-batches N] [--valid-images V] [--threads T] [--checkpoint PATH]
 * [--out TSV] [--quiet]` (issue 32, docs/one-shot.md "nas supernet"):
 * train CONF's space as a weight-sharing supernet (nas/supernet.h) with
 * the proxy recipe for E epochs, evaluate K random genotypes by inherited
 * weights (BN recalibrated on N training batches, then the validation
 * split; T > 1 threads evaluate T subnets side by side,
 * nas_supernet_evaluate_many), and with S > 0 train the same K stand-alone with the proxy
 * (nas_evaluator_run, seeds seed .. seed + S - 1) to measure how far the
 * supernet ranks them: Kendall's tau against the stand-alone mean, and
 * between the first two seeds (the ceiling). Progress on stderr; one row
 * per genotype and the last line on stdout:
 *   supernet supernet_tau=X seed_tau=Y subnets_per_s=Z supernet_s=A eval_s=B standalone_s=C
 */
#include <errno.h>
#include <math.h>   /* NAN, isnan */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>   /* clock_gettime */
#include <unistd.h> /* access */
#include "cli/cli.h"
#include "nas/data.h"
#include "nas/evaluator.h"
#include "nas/layers.h" /* nas_space_check_input */
#include "nas/search.h" /* nas_rank_kendall */
#include "nas/space.h"
#include "nas/supernet.h"

typedef struct sn_opts {
    const char *conf, *checkpoint, *out;
    int epochs, genotypes, seeds, recal, threads, quiet, valid_images;
} sn_opts;

typedef struct sn_run {
    nas_config *cfg;
    nas_space *space;
    nas_dataset *train, *valid, *calib;
    nas_data_info info;
    nas_backend *be;
    nas_supernet *sn;
    nas_genotype *g;  /* K genotypes */
    double *acc;      /* K supernet accuracies, then K x S stand-alone ones */
    double t_train, t_eval, t_alone;
} sn_run;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse(int argc, char **argv, sn_opts *o)
{
    const nas_cli_int ints[] = {{"--epochs", 1, 10000, &o->epochs, "1 to 10000"},
                                {"--genotypes", 2, 100000, &o->genotypes, "2 to 100000"},
                                {"--seeds", 0, 100, &o->seeds, "0 to 100"},
                                {"--recal-batches", 0, 10000, &o->recal, "0 to 10000"},
                                {"--threads", 0, 256, &o->threads, "0 to 256"},
                                {"--valid-images", 0, 100000000, &o->valid_images,
                                 "0 to 100000000"}};
    for (int i = 1; i < argc; i++) {
        int r;
        if (!strcmp(argv[i], "--checkpoint") || !strcmp(argv[i], "--out")) {
            if (i + 1 >= argc || !*argv[i + 1])
                return nas_cli_usage_error("supernet", "%s needs a path", argv[i]);
            *(!strcmp(argv[i], "--out") ? &o->out : &o->checkpoint) = argv[i + 1];
            i++;
        } else if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q")) {
            o->quiet = 1;
        } else if ((r = nas_cli_ints("supernet", ints, 6, argv[i],
                                     i + 1 < argc ? argv[i + 1] : NULL)) != 0) {
            if (r > 0)
                return r;
            i++;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return nas_cli_unknown_option("supernet", argv[i]);
        } else if (!o->conf) {
            o->conf = argv[i];
        } else {
            return nas_cli_usage_error("supernet", "unexpected argument '%s'", argv[i]);
        }
    }
    if (!o->conf)
        return nas_cli_usage_error("supernet", "missing CONF (the space.conf to train)");
    return 0;
}

/* Issue 33: recipe choices (a list for proxy.lr, proxy.weight_decay,
 * proxy.batch_size or data.augment) are refused: the supernet trains with
 * one recipe and shares weights across architectures only, so the picks
 * of its genotypes would be ignored in phase 2 and honoured by the
 * stand-alone training. NAS_ECONFIG naming the key and the file. */
static int refuse_recipe(const char *conf, const nas_config *cfg, nas_error *err)
{
    static const char *const keys[NAS_RECIPE_KEYS] = {"proxy.lr", "proxy.weight_decay",
                                                      "proxy.batch_size", "data.augment"};
    for (int k = 0; k < NAS_RECIPE_KEYS; k++)
        if (cfg->space.recipe.n[k] > 0)
            return nas_error_set(err, NAS_ECONFIG,
                                 "%s: %s is a list of %d recipe choices (docs/space-conf.md), but "
                                 "nas supernet trains the supernet with one recipe and shares "
                                 "weights across architectures only, expected one value",
                                 conf, keys[k], cfg->space.recipe.n[k]);
    return NAS_OK;
}

/* Config, space, data, backend. */
static int setup(const sn_opts *o, sn_run *r, nas_error *err)
{
    nas_config *cfg = r->cfg;
    int rc = nas_config_load(o->conf, cfg, err);
    if (!rc)
        rc = refuse_recipe(o->conf, cfg, err);
    if (!rc && cfg->space.type == NAS_SPACE_CHAIN)
        rc = nas_data_space_input(&cfg->data, &cfg->space, err);
    if (!rc)
        rc = nas_space_create(&cfg->space, &r->space, err);
    if (rc)
        return rc;
    if (o->threads > 0)
        cfg->proxy.threads = o->threads;
    rc = nas_data_load(&cfg->data, cfg->seed, &r->info, &r->train, &r->valid, err);
    if (!rc) {
        char msg[256];
        rc = nas_space_check_input(&cfg->space, r->train->h, r->train->w, msg, sizeof msg);
        if (rc)
            nas_error_set(err, rc, "%s", msg);
    }
    if (!rc)
        rc = nas_config_check_augment(cfg, r->train->h, r->train->w, err);
    const char *be = cfg->proxy.backend[0] && strcmp(cfg->proxy.backend, "auto") ? cfg->proxy.backend
                                                                                  : "cpu";
    if (!rc)
        rc = nas_backend_create(be, cfg->proxy.threads > 0 ? cfg->proxy.threads : 0, 0, &r->be,
                                err);
    const char *precision = cfg->proxy.precision[0] ? cfg->proxy.precision : "fp32";
    if (!rc && (rc = nas_backend_set_precision(r->be, precision)) != 0)
        nas_error_set(err, rc, "proxy.precision = \"%s\" is not available on the %s backend: %s",
                      precision, nas_backend_name(r->be), nas_backend_last_error(r->be));
    nas_recipe rec; /* the supernet's batch: supernet.batch_size, else the proxy's */
    nas_supernet_recipe(cfg, &rec);
    int batch = rec.batch_size;
    if (!rc && o->recal > 0)
        rc = nas_dataset_sample(r->train, o->recal * batch, cfg->seed, &r->calib, err);
    return rc;
}

static int on_epoch(void *ctx, const nas_epoch_stats *e)
{
    const sn_opts *o = ctx;
    if (!o->quiet)
        fprintf(stderr, "supernet epoch %d/%d: loss %.4f, train accuracy %.4f, %.1f s (%.0f images/s)\n",
                e->epoch, e->epochs, e->loss, e->accuracy, e->seconds, e->images_per_s);
    return 0;
}

/* With --checkpoint: the trained supernet as `nas run`'s workers read it,
 * its weights file (the checkpoint's path without ".npz", plus ".weights")
 * mapped read-only (nas_supernet_map, which checks it in full); when it is
 * missing, stale or damaged it is written from the supernet in memory and
 * mapped again. When that fails too, a warning, and the supernet in
 * memory evaluates. fp: the supernet's fingerprint (borrowed). */
static void map_weights(const sn_opts *o, sn_run *r, const char *fp)
{
    char fpath[NAS_PATH_MAX + 16];
    size_t n = strlen(o->checkpoint);
    int base = n > 4 && !strcmp(o->checkpoint + n - 4, ".npz") ? (int)(n - 4) : (int)n;
    snprintf(fpath, sizeof fpath, "%.*s.weights", base, o->checkpoint);
    int64_t steps = nas_supernet_steps(r->sn);
    const nas_dataset *t = r->train;
    nas_supernet *m = NULL;
    nas_error why;
    int rc = nas_supernet_map(r->be, r->space, t->c, t->h, t->w, t->classes, r->cfg->seed, fpath,
                              fp, steps, &m, &why);
    if (rc) { /* not this supernet's file (yet): write it, then map it */
        rc = nas_supernet_write_weights(r->sn, fpath, fp, &why);
        if (!rc)
            rc = nas_supernet_map(r->be, r->space, t->c, t->h, t->w, t->classes, r->cfg->seed,
                                  fpath, fp, steps, &m, &why);
    }
    if (rc) {
        fprintf(stderr, "nas supernet: warning: %s; the subnets are read from memory\n", why.msg);
        return;
    }
    nas_supernet_destroy(r->sn);
    r->sn = m;
    if (!o->quiet)
        fprintf(stderr, "supernet: subnets read from %s, mapped read-only\n", fpath);
}

/* Phase 1: create, resume from the checkpoint when it is this run's, train. */
static int phase_train(const sn_opts *o, sn_run *r, nas_error *err)
{
    nas_config *cfg = r->cfg;
    cfg->supernet.epochs = o->epochs; /* the supernet group's batch and lr, else the proxy's */
    nas_recipe rec;
    nas_supernet_recipe(cfg, &rec);
    char *fp = nas_supernet_fingerprint(cfg, &r->info, r->train->n, &rec);
    if (!fp)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    int rc = nas_supernet_create(r->be, r->space, r->train->c, r->train->h, r->train->w,
                                 r->train->classes, cfg->seed, &r->sn, err);
    if (!rc && o->checkpoint && access(o->checkpoint, F_OK) == 0) {
        rc = nas_supernet_load(r->sn, o->checkpoint, fp, err);
        if (!rc && !o->quiet)
            fprintf(stderr, "supernet: resumed %s after %lld steps\n", o->checkpoint,
                    (long long)nas_supernet_steps(r->sn));
    }
    if (rc) {
        free(fp);
        return rc;
    }
    if (!o->quiet)
        fprintf(stderr, "supernet: %d slots, %.2f M weights; %d epochs of %d images, batch %d\n",
                nas_supernet_slots(r->sn), (double)nas_supernet_floats(r->sn) / 1e6, rec.epochs,
                r->train->n, rec.batch_size);
    nas_supernet_train_opts to = {&rec, 0, o->checkpoint, fp, on_epoch, (void *)o};
    nas_train_stats st;
    double t0 = now_s();
    rc = nas_supernet_train(r->sn, r->train, &to, &st, err);
    r->t_train = now_s() - t0;
    if (!rc && o->checkpoint)
        map_weights(o, r, fp);
    free(fp);
    return rc;
}

/* K distinct (by canonical key) genotypes drawn uniformly from the space;
 * a space of fewer keys (nas_space_counts_get) is refused at once. */
static int pick_genotypes(const sn_opts *o, sn_run *r, nas_error *err)
{
    int k = o->genotypes, have = 0;
    nas_space_counts cnt;
    if (nas_space_counts_get(r->space, &cnt) == NAS_OK && cnt.keys_counted && cnt.keys_exact &&
        cnt.keys < (uint64_t)k)
        return nas_error_set(err, NAS_EINVAL, "--genotypes %d, but the space has %llu distinct "
                             "genotypes (nas space %s)", k, (unsigned long long)cnt.keys, o->conf);
    r->g = calloc((size_t)k, sizeof *r->g);
    char(*keys)[NAS_GENOTYPE_STR_MAX] = calloc((size_t)k, sizeof *keys);
    if (!r->g || !keys) {
        free(keys);
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    }
    nas_rng rng;
    nas_rng_seed(&rng, r->cfg->seed, 0x6f6e65ull); /* "one" */
    for (int tries = 0; have < k && tries < 100 * k; tries++) {
        nas_space_sample(r->space, &rng, &r->g[have]);
        nas_space_key(r->space, &r->g[have], keys[have], sizeof keys[have]);
        int dup = 0;
        for (int j = 0; j < have && !dup; j++)
            dup = !strcmp(keys[j], keys[have]);
        have += !dup;
    }
    free(keys);
    if (have < k)
        return nas_error_set(err, NAS_EINVAL, "the space has fewer than %d distinct genotypes", k);
    return NAS_OK;
}

/* Phase 2: each genotype by inherited weights. */
static int phase_eval(const sn_opts *o, sn_run *r, nas_error *err)
{
    nas_recipe rec;
    nas_supernet_recipe(r->cfg, &rec);
    int k = o->genotypes, batch = rec.batch_size, rc = NAS_OK;
    nas_dataset valid = *r->valid; /* the first --valid-images of the split: a view */
    valid.owns = 0;
    if (o->valid_images > 0 && o->valid_images < valid.n)
        valid.n = o->valid_images;
    double t0 = now_s(); /* --threads T: T subnets side by side, 1 thread each */
    rc = nas_supernet_evaluate_many(r->sn, r->g, k, r->calib, o->recal, batch, &valid,
                                    r->cfg->proxy.threads, r->acc, NULL, err);
    r->t_eval = now_s() - t0;
    if (!rc && !o->quiet)
        fprintf(stderr, "supernet: %d subnets evaluated in %.1f s (%d validation images, BN "
                "recalibrated on %d batches)\n", k, r->t_eval, valid.n, o->recal);
    return rc;
}

/* Phase 3 (S > 0): each genotype trained stand-alone with the proxy. */
static int phase_alone(const sn_opts *o, sn_run *r, nas_error *err)
{
    int k = o->genotypes, s = o->seeds, rc = NAS_OK;
    if (s <= 0)
        return NAS_OK;
    nas_evaluator *ev = NULL;
    double t0 = now_s();
    r->cfg->proxy.keep_weights = 0;
    rc = nas_evaluator_create(r->cfg, r->space, &ev, err);
    for (int j = 0; j < s && !rc; j++) {
        nas_evaluator_set_seed(ev, r->cfg->seed + (uint64_t)j);
        for (int i = 0; i < k && !rc; i++) {
            nas_trial_result res;
            rc = nas_evaluator_run(ev, &r->g[i], NULL, NULL, &res);
            if (rc)
                nas_error_set(err, rc, "stand-alone training of genotype %d, seed %d: %s", i + 1,
                              j, res.error);
            r->acc[k + i * s + j] = res.val_accuracy;
            if (!rc && !o->quiet)
                fprintf(stderr, "stand-alone %d/%d seed %d: %.4f (supernet %.4f), %.1f s\n", i + 1,
                        k, j, res.val_accuracy, r->acc[i], now_s() - t0);
        }
    }
    nas_evaluator_destroy(ev);
    r->t_alone = now_s() - t0;
    return rc;
}

/* Rows (genotype, supernet accuracy, stand-alone per seed) and the last line. */
static void report(const sn_opts *o, const sn_run *r, FILE *rows)
{
    int k = o->genotypes, s = o->seeds;
    double *mean = calloc((size_t)k, sizeof *mean), *s0 = calloc((size_t)k, sizeof *s0),
           *s1 = calloc((size_t)k, sizeof *s1);
    if (!mean || !s0 || !s1) {
        free(mean);
        free(s0);
        free(s1);
        return;
    }
    fprintf(rows, "genotype\tsupernet_acc");
    for (int j = 0; j < s; j++)
        fprintf(rows, "\tseed%d_acc", j);
    fprintf(rows, "\n");
    for (int i = 0; i < k; i++) {
        char buf[NAS_GENOTYPE_STR_MAX];
        nas_space_format(r->space, &r->g[i], buf, sizeof buf);
        fprintf(rows, "%s\t%.4f", buf, r->acc[i]);
        for (int j = 0; j < s; j++) {
            double a = r->acc[k + i * s + j];
            fprintf(rows, "\t%.4f", a);
            mean[i] += a / s;
        }
        s0[i] = s > 0 ? r->acc[k + i * s] : NAN;
        s1[i] = s > 1 ? r->acc[k + i * s + 1] : NAN;
        fprintf(rows, "\n");
    }
    double tau = s > 0 ? nas_rank_kendall(r->acc, mean, k) : NAN;
    double seed_tau = s > 1 ? nas_rank_kendall(s0, s1, k) : NAN;
    double per_s = r->t_eval > 0 ? k / r->t_eval : 0;
    printf("supernet");
    if (s > 0)
        printf(" supernet_tau=%.3f", tau);
    if (s > 1)
        printf(" seed_tau=%.3f", seed_tau);
    printf(" subnets_per_s=%.2f supernet_s=%.1f eval_s=%.1f", per_s, r->t_train, r->t_eval);
    if (s > 0)
        printf(" standalone_s=%.1f", r->t_alone);
    printf("\n");
    free(mean);
    free(s0);
    free(s1);
}

static void run_free(sn_run *r)
{
    nas_supernet_destroy(r->sn);
    nas_backend_destroy(r->be);
    nas_dataset_destroy(r->calib);
    nas_dataset_destroy(r->train);
    nas_dataset_destroy(r->valid);
    nas_space_destroy(r->space);
    free(r->g);
    free(r->acc);
    free(r->cfg);
}

int nas_cmd_supernet(int argc, char **argv)
{
    sn_opts o = {NULL, NULL, NULL, 0, 30, 0, 4, 0, 0, 0};
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    sn_run r;
    memset(&r, 0, sizeof r);
    nas_error err;
    nas_error_clear(&err);
    r.cfg = malloc(sizeof *r.cfg);
    r.acc = calloc((size_t)o.genotypes * (size_t)(1 + o.seeds), sizeof *r.acc);
    if (!r.cfg || !r.acc) {
        run_free(&r);
        fprintf(stderr, "nas supernet: out of memory\n");
        return NAS_EXIT_FAIL;
    }
    FILE *probe = o.out ? fopen(o.out, "a") : NULL; /* --out is written at the end: check it
                                                      before the training */
    if (o.out && !probe)
        rc = nas_error_set(&err, NAS_EIO, "cannot write %s: %s", o.out, strerror(errno));
    if (probe)
        fclose(probe);
    if (!rc)
        rc = setup(&o, &r, &err);
    if (!rc && o.epochs == 0) /* supernet.epochs, as nas run trains it (issue 32) */
        o.epochs = r.cfg->supernet.epochs;
    if (!rc) /* before the training: a bad --genotypes shows at once */
        rc = pick_genotypes(&o, &r, &err);
    if (!rc)
        rc = phase_train(&o, &r, &err);
    if (!rc)
        rc = phase_eval(&o, &r, &err);
    if (!rc)
        rc = phase_alone(&o, &r, &err);
    if (!rc) {
        FILE *rows = o.out ? fopen(o.out, "w") : stdout;
        if (!rows) {
            rc = nas_error_set(&err, NAS_EIO, "cannot write %s", o.out);
        } else {
            report(&o, &r, rows);
            if (rows != stdout)
                fclose(rows);
        }
    }
    run_free(&r);
    if (rc) {
        fprintf(stderr, "nas supernet: %s\n", err.msg);
        return nas_cli_exit_code(rc);
    }
    return NAS_EXIT_OK;
}
