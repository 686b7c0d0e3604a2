/*
 * export/export_source.c - the architecture `nas export` exports
 * (nas_export_trial, export/export_trial.c): a stored trial - the best
 * done, feasible one of an experiment by its first objective or by a
 * column, or one given by id - rebuilt as a nas_arch from the trial's row
 * and its experiment's stored config; or a bare genotype. Reads the store
 * only (opened read-only). A supernet trial's weights are rebuilt from the
 * supernet (export/export_supernet.c).
 */
#include <inttypes.h> /* PRId64 */
#include <limits.h>   /* PATH_MAX */
#include <math.h>     /* isfinite, NAN */
#include <stdint.h>   /* INT32_MAX */
#include <stdio.h>
#include <stdlib.h>   /* realpath */
#include <string.h>
#include <sys/stat.h> /* stat: is the kept weights file this database's own */
#include <unistd.h>   /* access: the final training's checkpoint */
#include "export/export_impl.h"
#include "nas/evaluator.h"
#include "nas/parse.h" /* nas_shell_quote: the hint's command */
#include "nas/store.h"

/* ---- choosing the trial ------------------------------------------------------- */

typedef struct column {
    const char *name;
    int maximize;
} column;

static const column COLUMNS[] = {
    {"val_accuracy", 1}, {"test_accuracy", 1}, {"score", 1},         {"train_loss", 0},
    {"macs", 0},         {"params", 0},        {"latency_ms", 0},    {"train_seconds", 0},
};

static double column_value(const nas_store_trial *t, const char *name)
{
    if (!strcmp(name, "val_accuracy"))
        return t->val_accuracy;
    if (!strcmp(name, "test_accuracy"))
        return t->test_accuracy >= 0 ? t->test_accuracy : NAN;
    if (!strcmp(name, "score"))
        return t->score;
    if (!strcmp(name, "train_loss"))
        return t->train_loss;
    if (!strcmp(name, "macs"))
        return t->macs > 0 ? (double)t->macs : NAN;
    if (!strcmp(name, "params"))
        return t->params > 0 ? (double)t->params : NAN;
    if (!strcmp(name, "latency_ms"))
        return t->latency_ms;
    if (!strcmp(name, "train_seconds"))
        return t->train_seconds;
    return NAN;
}

/* "--by latency_ms" or "--by latency_ms:max": column and direction. */
static int parse_by(const char *by, char *name, size_t n, int *maximize, nas_error *err)
{
    snprintf(name, n, "%s", by);
    char *colon = strchr(name, ':');
    int dir = -1;
    if (colon) {
        *colon = 0;
        if (!strcmp(colon + 1, "max"))
            dir = 1;
        else if (!strcmp(colon + 1, "min"))
            dir = 0;
        else
            return nas_error_set(err, NAS_EINVAL, "--by %s: direction must be :max or :min", by);
    }
    for (size_t i = 0; i < sizeof COLUMNS / sizeof COLUMNS[0]; i++)
        if (!strcmp(COLUMNS[i].name, name)) {
            *maximize = dir >= 0 ? dir : COLUMNS[i].maximize;
            return NAS_OK;
        }
    char list[256] = "";
    for (size_t i = 0; i < sizeof COLUMNS / sizeof COLUMNS[0]; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                 COLUMNS[i].name);
    return nas_error_set(err, NAS_EINVAL, "--by %s: unknown column (expected one of: %s)", by,
                         list);
}

/* The best done, feasible trial of experiment `exp` under `metric`; under
 * a multi-fidelity scheduler (issue 17), best among the trials at the
 * highest fidelity any done trial reached. */
static int pick_best(nas_store *st, const nas_store_experiment *exp, const char *metric,
                     int maximize, nas_store_trial *best, nas_error *err)
{
    nas_store_trial *all = NULL;
    int n = 0;
    int rc = nas_store_trial_list(st, exp->id, &all, &n, err);
    if (rc)
        return rc;
    if (n == 0) {
        free(all);
        return nas_error_set(err, NAS_ENOTFOUND,
                             "experiment '%s' in %s has no trials yet: nothing to export",
                             exp->name, nas_store_path(st));
    }
    int found = -1, n_done = 0, n_failed = 0, n_infeasible = 0, n_unmeasured = 0;
    double bestv = 0;
    int64_t top_fid = -1; /* issue 17: -1 for every trial without a scheduler */
    for (int i = 0; i < n; i++)
        if (all[i].status == NAS_TRIAL_DONE && nas_store_trial_feasible(&all[i]) &&
            isfinite(column_value(&all[i], metric)) && all[i].fidelity > top_fid)
            top_fid = all[i].fidelity;
    for (int i = 0; i < n; i++) {
        const nas_store_trial *t = &all[i];
        if (t->status == NAS_TRIAL_FAILED)
            n_failed++;
        if (t->status != NAS_TRIAL_DONE)
            continue;
        n_done++;
        if (!nas_store_trial_feasible(t)) {
            n_infeasible++;
            continue;
        }
        double v = column_value(t, metric);
        if (!isfinite(v)) {
            n_unmeasured++;
            continue;
        }
        if (t->fidelity < top_fid) /* trained less than the best-trained trials */
            continue;
        if (found < 0 || (maximize ? v > bestv : v < bestv)) {
            found = i;
            bestv = v;
        }
    }
    if (found < 0) {
        int rc2 = nas_error_set(err, NAS_ENOTFOUND,
                                "experiment '%s' in %s has no trial to export: %d trials, %d "
                                "done (%d violate a constraint, %d have no %s), %d failed",
                                exp->name, nas_store_path(st), n, n_done, n_infeasible,
                                n_unmeasured, metric, n_failed);
        free(all);
        return rc2;
    }
    *best = all[found];
    free(all);
    return NAS_OK;
}

/* ---- the architecture ---------------------------------------------------------- */

/* Issue 16: the experiment's data (shape, classes, normalisation) from the
 * "# data:" line of its canonical text; none for the Fashion-MNIST shorthand. */
static void data_from_store(nas_store *st, int64_t exp_id, nas_arch *a)
{
    char *canon = NULL;
    nas_data_info info;
    if (nas_store_experiment_canonical(st, exp_id, &canon, NULL) == NAS_OK &&
        nas_data_info_parse(canon, &info)) {
        a->data.norm = info;
        a->net.in_c = info.c;
        a->net.in_h = info.h;
        a->net.in_w = info.w;
        a->net.classes = info.classes;
    }
    free(canon);
}

static void arch_from_config(nas_arch *a, const nas_config *cfg)
{
    if (cfg->space.type == NAS_SPACE_CHAIN) { /* issue 15: the whole space */
        snprintf(a->space_type, sizeof a->space_type, "chain");
        a->space = cfg->space;
        memset(&a->space.recipe, 0, sizeof a->space.recipe); /* the network's space */
    }
    a->op_mask = cfg->space.op_mask;
    a->net.channels = cfg->space.channels;
    a->net.stages = cfg->space.stages;
    a->net.cells_per_stage = cfg->space.cells_per_stage;
    if (cfg->space.in_c > 0) { /* issue 31: a cell space's declared input, as the search counted */
        a->net.in_c = cfg->space.in_c;
        a->net.in_h = cfg->space.in_h;
        a->net.in_w = cfg->space.in_w;
    }
    if (cfg->space.classes > 0)
        a->net.classes = cfg->space.classes;
    a->recipe.epochs = cfg->proxy.epochs;
    a->recipe.batch_size = cfg->proxy.batch_size > 0 ? cfg->proxy.batch_size : 128;
    a->recipe.lr = cfg->proxy.lr;
    a->recipe.momentum = cfg->proxy.momentum;
    a->recipe.nesterov = cfg->proxy.nesterov;
    a->recipe.weight_decay = cfg->proxy.weight_decay;
    a->recipe.schedule = cfg->proxy.schedule;
    a->recipe.seed = cfg->seed;
    a->bn_recalibrate = cfg->proxy.bn_recalibrate; /* issue 30 */
    if (cfg->search.fidelity.scheduler != NAS_FIDELITY_NONE) { /* budget: arch_from_trial */
        a->fidelity.images = cfg->search.fidelity.resource == NAS_FIDELITY_IMAGES;
        a->fidelity.max = cfg->search.fidelity.max;
    }
    snprintf(a->backend, sizeof a->backend, "%s", cfg->proxy.backend[0] ? cfg->proxy.backend : "cpu");
    a->threads = cfg->proxy.threads;
    snprintf(a->data.dataset, sizeof a->data.dataset, "%s", cfg->data.dataset);
    snprintf(a->data.dir, sizeof a->data.dir, "%s", cfg->data.dir);
    snprintf(a->data.format, sizeof a->data.format, "%s", cfg->data.format);
    a->data.train_subset = cfg->data.train_subset;
    a->data.valid = cfg->data.valid;
    a->data.valid_fraction = cfg->data.valid_fraction;
    snprintf(a->data.train_images, sizeof a->data.train_images, "%s", cfg->data.train_images);
    snprintf(a->data.train_labels, sizeof a->data.train_labels, "%s", cfg->data.train_labels);
    snprintf(a->data.test_images, sizeof a->data.test_images, "%s", cfg->data.test_images);
    snprintf(a->data.test_labels, sizeof a->data.test_labels, "%s", cfg->data.test_labels);
    snprintf(a->data.layout, sizeof a->data.layout, "%s", cfg->data.layout);
    a->data.size[0] = cfg->data.size[0];
    a->data.size[1] = cfg->data.size[1];
    nas_augment_parse(cfg->data.augment, &a->recipe.augment); /* the search's augmentation */
    a->data.split_seed = cfg->seed;
    snprintf(a->experiment, sizeof a->experiment, "%s", cfg->experiment);
}

static void arch_from_trial(nas_arch *a, const nas_store_trial *t)
{
    snprintf(a->genotype, sizeof a->genotype, "%s", t->genotype);
    a->trial_id = t->id;
    a->experiment_id = t->experiment_id;
    snprintf(a->experiment, sizeof a->experiment, "%s", t->experiment);
    a->metrics.val_accuracy = t->val_accuracy;
    a->metrics.test_accuracy = t->test_accuracy >= 0 ? t->test_accuracy : NAN;
    a->metrics.train_loss = t->train_loss;
    a->metrics.macs = t->macs;
    a->metrics.params = t->params;
    a->metrics.latency_ms = t->latency_ms;
    a->metrics.train_seconds = t->train_seconds;
    a->metrics.epochs = t->epochs;
    /* a multi-fidelity trial trained to its highest rung, the schedule
     * over fidelity.max (evaluator/evaluator.c run_train) */
    a->fidelity.budget = a->fidelity.max > 0 && t->fidelity > 0 ? t->fidelity : 0;
}

/* Issue 33: a trial of a search with recipe choices. Its genotype (the
 * search space's string, with " lr=0.1 ..." words) becomes the network's
 * alone, and the values it picked replace the lists in a->recipe, so
 * ARCH.json holds what the trial trained with (`nas train --proxy`
 * reproduces it). After data_from_store (a chain space's input). */
static int recipe_from_trial(nas_arch *a, const nas_config *cfg, nas_error *err)
{
    int any = 0;
    for (int k = 0; k < NAS_RECIPE_KEYS; k++)
        any |= cfg->space.recipe.n[k];
    if (!any)
        return NAS_OK;
    nas_space_desc d = cfg->space;
    d.data_c = a->net.in_c;
    d.data_h = a->net.in_h;
    d.data_w = a->net.in_w;
    d.data_classes = a->net.classes;
    nas_space *sp = NULL;
    nas_genotype g;
    int rc = nas_space_create(&d, &sp, err);
    if (!rc)
        rc = nas_space_parse(sp, a->genotype, &g, err);
    if (!rc) {
        nas_recipe_values v;
        nas_config_recipe_values(cfg, sp, &g, &v);
        a->recipe.lr = v.lr;
        a->recipe.weight_decay = v.weight_decay;
        a->recipe.batch_size = v.batch_size > 0 ? v.batch_size : 128;
        nas_augment_parse(v.augment, &a->recipe.augment);
        g.len = nas_space_arch_len(sp);
        rc = nas_space_format(sp, &g, a->genotype, sizeof a->genotype);
    }
    nas_space_destroy(sp);
    if (rc)
        nas_error_prefix(err, "trial %" PRId64 "'s recipe choices", a->trial_id);
    return rc;
}

/*
 * The store keeps an experiment's canonical config as dotted lines
 * ("proxy.lr = 0.05;", nas_config_canonical). Rebuild libconfig groups from
 * them ("proxy: { lr = 0.05; };") so the config parser reads every setting
 * back. Lines of one group are contiguous in the canonical order.
 * Returns a malloc'd string or NULL.
 */
static char *canonical_to_conf(const char *canon)
{
    size_t cap = strlen(canon) * 2 + 256, len = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    char open[4][NAS_NAME_MAX]; /* currently open groups */
    int depth = 0;
    for (const char *p = canon; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        char key[256] = "";
        size_t kl = eq ? (size_t)(eq - p) : 0;
        while (kl && p[kl - 1] == ' ')
            kl--;
        if (kl >= sizeof key)
            kl = 0;
        memcpy(key, p, kl);
        key[kl] = 0;
        /* Split the key into groups + leaf. */
        char *parts[6];
        int np = 0;
        for (char *save = NULL, *t = strtok_r(key, ".", &save); t && np < 6;
             t = strtok_r(NULL, ".", &save))
            parts[np++] = t;
        int groups = np > 0 ? np - 1 : 0;
        if (groups > 4)
            groups = 4;
        int keep = 0;
        while (keep < depth && keep < groups && !strcmp(open[keep], parts[keep]))
            keep++;
        for (; depth > keep; depth--)
            len += (size_t)snprintf(out + len, cap - len, "%*s};\n", 2 * (depth - 1), "");
        for (; depth < groups; depth++) {
            snprintf(open[depth], sizeof open[depth], "%s", parts[depth]);
            len += (size_t)snprintf(out + len, cap - len, "%*s%s: {\n", 2 * depth, "",
                                    parts[depth]);
        }
        /* An unset setting is written as "" or [] (or 0 for data.size), which the
         * parser refuses as a value: leave it out, the default it stands for. */
        const char *v = eq ? eq + 1 : "";
        while (*v == ' ')
            v++;
        int unset = !strncmp(v, "\"\";", 3) || !strncmp(v, "[];", 3);
        /* libconfig reads an integer beyond 32 bits (a seed) only with an L */
        char *end;
        long long iv = strtoll(v, &end, 10);
        int wide = end != v && *end == ';' && (iv > INT32_MAX || iv < INT32_MIN);
        if (np > 0 && eq && !unset && wide)
            len += (size_t)snprintf(out + len, cap - len, "%*s%s = %lldL;\n", 2 * depth, "",
                                    parts[np - 1], iv);
        else if (np > 0 && eq && !unset)
            len += (size_t)snprintf(out + len, cap - len, "%*s%s %.*s\n", 2 * depth, "",
                                    parts[np - 1], (int)(n - (size_t)(eq - p)), eq);
        if (len + 512 > cap) {
            cap *= 2;
            char *q = realloc(out, cap);
            if (!q) {
                free(out);
                return NULL;
            }
            out = q;
        }
        p += n + (e ? 1 : 0);
    }
    for (; depth > 0; depth--)
        len += (size_t)snprintf(out + len, cap - len, "%*s};\n", 2 * (depth - 1), "");
    return out;
}

/* The experiment's settings: its canonical config rebuilt as libconfig
 * groups, else the config file as written; objectives and constraints
 * from the store's own reader. */
static int experiment_config(nas_store *st, int64_t exp_id, nas_config *cfg, nas_error *err)
{
    char *canon = NULL, *text = NULL;
    nas_error e1, e2;
    nas_error_clear(&e1);
    nas_error_clear(&e2);
    int rc = nas_store_experiment_canonical(st, exp_id, &canon, err);
    if (rc)
        return rc;
    char *conf = canonical_to_conf(canon);
    rc = conf ? nas_config_parse_string(conf, "stored canonical config", cfg, &e1) : NAS_ENOMEM;
    free(conf);
    if (rc && nas_store_experiment_conf_text(st, exp_id, &text, &e2) == NAS_OK) {
        rc = nas_config_parse_string(text, "stored config text", cfg, &e2);
        free(text);
    }
    if (rc == NAS_OK) /* issue 30: a key the experiment predates has its value of then */
        nas_config_stored_defaults(cfg, canon, NULL, 0);
    free(canon);
    if (rc)
        return nas_error_set(err, NAS_EFORMAT, "%s: cannot read experiment %lld's config: %s%s%s",
                             nas_store_path(st), (long long)exp_id, e1.msg, e2.msg[0] ? "; " : "",
                             e2.msg);
    nas_config obj;
    if (nas_store_experiment_objectives(st, exp_id, &obj, &e2) == NAS_OK) {
        cfg->n_objectives = obj.n_objectives;
        memcpy(cfg->objectives, obj.objectives, sizeof cfg->objectives);
        cfg->constraints = obj.constraints;
    }
    return NAS_OK;
}

/* Issue 33, --weights final: trial t's latest full training (`nas train
 * ARCH.json --db`, table final_training), whose checkpoint holds the
 * trained weights (after training it keeps the last epoch's). Its widths
 * (recipe "channels=C cells=N": nas train --channels, --cells) replace the
 * search's, its parameter count and test accuracy the trial's.
 * Errors: NAS_ENOTFOUND with the commands that make one; NAS_EIO when its
 * checkpoint is gone. */
static int use_final(nas_store *st, const nas_export_opts *o, const nas_store_trial *t,
                     nas_arch *a, nas_export_result *r, nas_error *err)
{
    nas_store_final_training *ft = NULL;
    int n = 0, pick = -1;
    int rc = nas_store_final_training_list(st, -1, t->id, &ft, &n, err);
    for (int i = n - 1; !rc && i >= 0 && pick < 0; i--)
        if (nas_store_final_training_is_full(&ft[i]))
            pick = i;
    char qdb[NAS_SHELL_QUOTE_MAX(NAS_PATH_MAX)], how[3 * NAS_SHELL_QUOTE_MAX(NAS_PATH_MAX)];
    nas_shell_quote(o->db, qdb, sizeof qdb);
    snprintf(how, sizeof how, "`nas export --db %s --trial %" PRId64 " --format json -o trial-%"
             PRId64 ".json && nas train trial-%" PRId64 ".json --db %s`", qdb, t->id, t->id, t->id,
             qdb);
    const nas_store_final_training *f = pick >= 0 ? &ft[pick] : NULL;
    int c, cells;
    const char *w = f ? strstr(f->recipe, " channels=") : NULL;
    if (rc)
        ;
    else if (!f)
        rc = nas_error_set(err, NAS_ENOTFOUND, "trial %" PRId64 " has no final training in %s "
                           "(--weights final exports the weights of `nas train --db`): make one "
                           "with %s", t->id, o->db, how);
    else if (!f->checkpoint[0])
        rc = nas_error_set(err, NAS_ENOTFOUND, "final_training %" PRId64 " of trial %" PRId64
                           " kept no weights (trained with --checkpoint none): train it again "
                           "with a checkpoint: %s", f->id, t->id, how);
    else if (access(f->checkpoint, R_OK) != 0)
        rc = nas_error_set(err, NAS_EIO, "final_training %" PRId64 " of trial %" PRId64 ": its "
                           "checkpoint %s (the trained weights) cannot be read: moved or "
                           "deleted? train it again: %s", f->id, t->id, f->checkpoint, how);
    else {
        if (w && sscanf(w, " channels=%d cells=%d", &c, &cells) == 2) {
            a->net.channels = c;
            a->net.cells_per_stage = cells;
        }
        /* issue 30: a recalibrated training's tested weights, saved beside its
         * checkpoint (which keeps training's statistics); older ones: the checkpoint */
        int n = snprintf(a->weights, sizeof a->weights, "%s%s", f->checkpoint,
                         NAS_FINAL_RECAL_SUFFIX);
        if (!strstr(f->recipe, " bn_recalibrate=") || n >= (int)sizeof a->weights ||
            access(a->weights, R_OK) != 0)
            snprintf(a->weights, sizeof a->weights, "%s", f->checkpoint);
        a->metrics.params = f->params;
        a->metrics.macs = f->macs;
        a->metrics.test_accuracy = f->test_accuracy;
        r->final_training_id = f->id;
        r->final_test_accuracy = f->test_accuracy;
    }
    free(ft);
    return rc;
}

/* The trial's kept weights as this database's own file. `w` is the
 * absolute path the search recorded; the database's own copy of it is
 * `db`.weights/<its name> (the file nas_store_trial_weights_prune deletes).
 * A database moved or copied with its DB.weights/ folder keeps the
 * original's paths in its rows: read as recorded, a copy's export would
 * read another database's file (changed or pruned since), or none once it
 * is gone. So when the file beside `db` exists and is not the recorded one
 * (another inode), w becomes it (absolute) and stderr says so; otherwise w
 * is left as it is (the export then fails on it, naming the recorded
 * path). */
static void weights_beside_db(const char *db, int64_t trial, char *w, size_t n)
{
    if (!w[0])
        return;
    const char *base = strrchr(w, '/');
    char cand[NAS_PATH_MAX + 32], real[PATH_MAX];
    struct stat sc, sw;
    int k = snprintf(cand, sizeof cand, "%s.weights/%s", db, base ? base + 1 : w);
    if (k < 0 || k >= (int)sizeof cand || stat(cand, &sc) != 0 || access(cand, R_OK) != 0)
        return;
    int recorded = stat(w, &sw) == 0;
    if (recorded && sw.st_dev == sc.st_dev && sw.st_ino == sc.st_ino)
        return; /* the database's own file, as recorded */
    const char *own = realpath(cand, real) ? real : cand;
    if (strlen(own) >= n)
        return;
    if (recorded)
        fprintf(stderr, "nas: trial %" PRId64 "'s weights were recorded as %s, another "
                "database's DB.weights/ (this one copied from it?); reading this database's own "
                "%s\n", trial, w, own);
    else
        fprintf(stderr, "nas: trial %" PRId64 "'s weights were kept as %s, which is gone; "
                "reading %s beside the database\n", trial, w, own);
    snprintf(w, n, "%s", own);
}

/* Everything from the store: trial, experiment config, weights path. */
int nas__export_arch_from_store(const nas_export_opts *o, nas_arch *a, nas_export_result *r,
                                nas_error *err)
{
    nas_store *st = NULL;
    int rc = nas_store_open(o->db, 1, &st, err);
    if (rc)
        return rc;
    nas_store_trial t;
    nas_store_experiment exp;
    nas_config cfg;
    if (o->trial > 0) {
        rc = nas_store_trial_get(st, o->trial, &t, err);
        if (!rc && t.status == NAS_TRIAL_FAILED)
            rc = nas_error_set(err, NAS_EINVAL,
                               "trial %" PRId64 " failed (%s): it has no result to export", t.id,
                               t.error[0] ? t.error : "no reason recorded");
        else if (!rc && t.status != NAS_TRIAL_DONE)
            rc = nas_error_set(err, NAS_EINVAL,
                               "trial %" PRId64 " is %s, not done: it has no result to export yet",
                               t.id, nas_trial_status_name(t.status));
    } else {
        rc = nas_store_experiment_find(st, o->experiment, &exp, err);
    }
    if (!rc)
        rc = experiment_config(st, o->trial > 0 ? t.experiment_id : exp.id, &cfg, err);
    if (!rc && o->best) {
        char metric[NAS_NAME_MAX];
        int maximize = 1;
        if (o->by)
            rc = parse_by(o->by, metric, sizeof metric, &maximize, err);
        else {
            snprintf(metric, sizeof metric, "%s",
                     cfg.n_objectives > 0 ? cfg.objectives[0].metric : "val_accuracy");
            maximize = cfg.n_objectives > 0 ? cfg.objectives[0].maximize : 1;
        }
        /* issue 29: by the experiment's objective, the store's one ranking
         * (its best trial); pick_best ranks --by another column, and says
         * why nothing can be exported */
        if (!rc && !o->by && exp.best_trial > 0)
            rc = nas_store_trial_get(st, exp.best_trial, &t, err);
        else if (!rc)
            rc = pick_best(st, &exp, metric, maximize, &t, err);
        if (!rc) {
            r->picked = 1;
            snprintf(r->by_metric, sizeof r->by_metric, "%s", metric);
            r->by_maximize = maximize;
        }
    }
    if (!rc) {
        arch_from_config(a, &cfg);
        arch_from_trial(a, &t);
        data_from_store(st, t.experiment_id, a);
        rc = recipe_from_trial(a, &cfg, err);
    }
    if (!rc) {
        char real[PATH_MAX];
        snprintf(a->db_path, sizeof a->db_path, "%s", realpath(o->db, real) ? real : o->db);
        nas_error e2;
        /* JSON holds no weights: it only names them (source.weights) when
         * kept, and needs them only for --logits */
        int need = !o->init_weights && !o->final_weights &&
                   (strcmp(o->format, "json") || o->logits);
        if (cfg.evaluator.kind == NAS_EVALUATOR_TABLE) {
            a->weights[0] = 0; /* looked up in a table, never trained */
            snprintf(a->measured_by, sizeof a->measured_by, "table");
            if (need)
                rc = nas_error_set(err, NAS_ENOTFOUND,
                                   "trial %" PRId64 " of '%s' was looked up in a table "
                                   "(evaluator.kind = \"table\"), never trained: it has no "
                                   "weights. Export it with --weights init (fresh weights), "
                                   "or as --format json and train it with `nas train`",
                                   t.id, t.experiment);
        } else if (t.status == NAS_TRIAL_DONE && t.has_result && !isfinite(t.val_accuracy)) {
            a->weights[0] = 0; /* rejected by constraints.latency_ms: never trained */
            if (need)
                rc = nas_error_set(err, NAS_ENOTFOUND,
                                   "trial %" PRId64 " of '%s' was rejected before training (%s): "
                                   "never trained, it has no weights. Export it with --weights "
                                   "init (fresh weights), or as --format json and train it with "
                                   "`nas train`",
                                   t.id, t.experiment,
                                   t.error[0] ? t.error : "over constraints.latency_ms");
        } else if (cfg.evaluator.kind == NAS_EVALUATOR_SUPERNET) {
            a->weights[0] = 0; /* issue 32: measured with weights inherited from the supernet */
            snprintf(a->measured_by, sizeof a->measured_by, "supernet");
            if (need)
                rc = nas__export_supernet_weights(o, &cfg, t.genotype, a, r, err);
        } else if (nas_store_trial_weights_get(st, t.id, a->weights, sizeof a->weights, &e2) !=
                   NAS_OK) {
            a->weights[0] = 0;
            if (need || e2.code != NAS_ENOTFOUND)
                rc = nas_error_set(err, e2.code == NAS_ENOTFOUND ? NAS_ENOTFOUND : e2.code, "%s",
                                   e2.msg);
        } else {
            weights_beside_db(o->db, t.id, a->weights, sizeof a->weights);
        }
    }
    if (!rc && o->final_weights)
        rc = use_final(st, o, &t, a, r, err);
    nas_store_close(st);
    return rc;
}

int nas__export_arch_from_genotype(const nas_export_opts *o, nas_arch *a, nas_error *err)
{
    snprintf(a->genotype, sizeof a->genotype, "%s", o->genotype);
    a->net.channels = (int)o->channels;
    a->net.cells_per_stage = (int)o->cells;
    a->recipe.seed = o->seed;
    a->data.split_seed = o->seed;
    int valid = 0;
    int rc = nas__arch_parse(a, NULL, &valid, NULL, err);
    if (!rc && !valid)
        rc = nas_error_set(err, NAS_EINVAL, "--genotype %s: no path carries the input to the "
                           "cell's output", a->genotype);
    if (rc)
        return rc == NAS_EFORMAT ? NAS_EINVAL : rc;
    int64_t macs, params;
    if (nas_count_net(&a->net, &macs, &params, NULL, NULL) == NAS_OK) {
        a->metrics.macs = macs;
        a->metrics.params = params;
    }
    return NAS_OK;
}

