/*
 * search/proxy_check.c - `nas proxy-check` (issue 30, docs/proxy.md): how
 * far the number a search steers on can be trusted, on the user's own data
 * and space. K architectures sampled from the space (cfg->seed), each
 * trained with S seeds to every rung of a fidelity ladder; every
 * (architecture, seed) is one run continued from its checkpoint in
 * DB.ckpt/ (nas_evaluator_set_fidelity, as a promoted trial of
 * multi-fidelity search), on the worker pool (workers.count processes).
 * Every training is a row of table proxy_check under an experiment of its
 * own (strategy "proxy-check"), so Ctrl-C and a rerun continue it. The
 * figures and the verdict are search/proxy_report.c's.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "nas/data.h" /* nas_data_cache_beside */
#include "nas/fidelity.h"
#include "search/proxy_check_impl.h"
#include "search/run_lock.h"
#include "search/stored_defaults.h"

#define PC_STREAM 0x70635f73616d70ull /* the rng stream of the sample ("pc_samp") */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* The checkpoint of architecture a, seed j. */
static void ckpt_path(const nas__pc *p, int a, int j, char *buf, size_t n)
{
    snprintf(buf, n, "%s/pc-%lld-%d-%d.npz", p->ckpt_dir, (long long)p->exp, a, j);
}

/* The worker's job: job->id is the training's index (a S + j) R + k;
 * train architecture a with seed cfg->seed + j to rung k's budget,
 * continuing from the (a, j) checkpoint. The seconds of the evaluation
 * (BN recalibration and validation pass: nas_evaluator_eval_seconds) come
 * back in res->latency_ms: the
 * check measures no latency (evaluator.latency_runs is 0 in the workers'
 * config) and the pool's message has no other slot. res->train_seconds is
 * the run's training time from its start (the checkpoint carries the
 * earlier rungs'). */
static int pc_job(void *ctx, const nas_pool_job *job, nas_pool_progress_fn progress, void *pctx,
                  nas_trial_result *res)
{
    nas__pc *p = ctx;
    int k = (int)(job->id % p->R), aj = (int)(job->id / p->R);
    char ck[NAS_PATH_MAX + 64];
    ckpt_path(p, aj / p->S, aj % p->S, ck, sizeof ck);
    nas_evaluator_set_fidelity(p->ev, (int)p->budget[k], (int)p->max, ck);
    nas_evaluator_set_seed(p->ev, p->cfg->seed + (uint64_t)(aj % p->S));
    int rc = nas_evaluator_run(p->ev, &job->genotype, progress, pctx, res);
    res->latency_ms = nas_evaluator_eval_seconds(p->ev);
    return rc;
}

/* The ladder: search.fidelity's rungs when it has a scheduler, else R/9,
 * R/3, R training images for R = proxy.epochs x the training images. */
static int pc_ladder(nas__pc *p, nas_error *err)
{
    const nas_config *cfg = p->cfg;
    if (cfg->search.fidelity.scheduler != NAS_FIDELITY_NONE) {
        int64_t r = cfg->search.fidelity.min, R = cfg->search.fidelity.max;
        int eta = cfg->search.fidelity.eta, smax = nas_fid_smax(r, R, eta);
        p->images = cfg->search.fidelity.resource == NAS_FIDELITY_IMAGES;
        p->R = smax + 1;
        for (int k = 0; k <= smax; k++)
            p->budget[k] = nas_fid_rung_budget(r, R, eta, k);
        p->max = R;
        return NAS_OK;
    }
    int64_t R = (int64_t)(cfg->proxy.epochs > 0 ? cfg->proxy.epochs : 1) *
                nas_evaluator_train_count(p->ev);
    if (R < 9 || R > INT32_MAX)
        return nas_error_set(err, NAS_ECONFIG, "%s: proxy-check: a budget of %lld training "
                             "images cannot make a ladder R/9, R/3, R", cfg->path, (long long)R);
    p->images = 1;
    p->R = 3;
    p->budget[0] = R / 9;
    p->budget[1] = R / 3;
    p->budget[2] = R;
    p->max = R;
    return NAS_OK;
}

/* K distinct architectures (by canonical key) sampled uniformly from the
 * space with cfg->seed; fewer when the space has fewer. */
static int pc_sample(nas__pc *p, nas_error *err)
{
    nas_rng rng;
    nas_rng_seed(&rng, p->cfg->seed, PC_STREAM);
    p->g = calloc((size_t)p->K, sizeof *p->g);
    p->gs = calloc((size_t)p->K, sizeof *p->gs);
    char(*key)[NAS_GENOTYPE_STR_MAX] = calloc((size_t)p->K, sizeof *key);
    if (!p->g || !p->gs || !key) {
        free(key);
        return nas_error_set(err, NAS_ENOMEM, "out of memory sampling architectures");
    }
    int n = 0;
    for (long tries = 0; n < p->K && tries < 1000L * p->K; tries++) {
        nas_space_sample(p->space, &rng, &p->g[n]);
        nas_space_key(p->space, &p->g[n], key[n], sizeof key[n]);
        int seen = 0;
        for (int i = 0; i < n && !seen; i++)
            seen = !strcmp(key[i], key[n]);
        if (!seen)
            nas_space_format(p->space, &p->g[n], p->gs[n], sizeof p->gs[n]), n++;
    }
    free(key);
    if (n < 2)
        return nas_error_set(err, NAS_ECONFIG, "%s: proxy-check: the space has fewer than 2 "
                             "distinct architectures", p->cfg->path);
    p->K = n;
    return NAS_OK;
}

/* The settings a rerun must share, besides the defining ones. */
static void pc_params(const nas__pc *p, char *buf, size_t n)
{
    size_t u = (size_t)snprintf(buf, n, "archs=%d seeds=%d resource=%s rungs=", p->K, p->S,
                                p->images ? "images" : "epochs");
    for (int k = 0; k < p->R && u < n; k++)
        u += (size_t)snprintf(buf + u, n - u, "%s%lld", k ? "," : "", (long long)p->budget[k]);
}

/* A stored check: it must be a proxy check of the same defining settings,
 * K, S and ladder. Errors: NAS_ECONFIG, the store's. */
static int pc_check_stored(nas__pc *p, const nas_store_experiment *e, const char *params,
                           nas_error *err)
{
    if (strcmp(e->strategy, NAS_STORE_PROXY_CHECK) != 0)
        return nas_error_set(err, NAS_ECONFIG, "%s: experiment '%s' in %s is a search, not a "
                             "proxy check; rename the config's experiment", p->cfg->path,
                             p->name, p->o->db_path);
    char *stored = NULL, diff[4096];
    int rc = nas_store_experiment_canonical(p->st, e->id, &stored, err);
    if (rc != NAS_OK)
        return rc;
    int nd = nas_config_diff(stored, p->cfg, 1, diff, sizeof diff);
    free(stored);
    if (nd != 0)
        return nas_error_set(err, nd < 0 ? NAS_ENOMEM : NAS_ECONFIG,
                             "%s changes %d defining setting(s) of the proxy check '%s' in %s "
                             "(stored -> now):\n%sUse another --db to check the new settings",
                             p->cfg->path, nd, p->name, p->o->db_path, nd < 0 ? "" : diff);
    void *blob = NULL;
    size_t size = 0;
    if ((rc = nas_store_strategy_state_get(p->st, e->id, NAS__PC_STATE, &blob, &size, err)) !=
        NAS_OK)
        return rc;
    int same = blob && size == strlen(params) && !memcmp(blob, params, size);
    char was[256];
    snprintf(was, sizeof was, "%.*s", blob ? (int)size : 0, blob ? (const char *)blob : "");
    free(blob);
    if (!same)
        return nas_error_set(err, NAS_ECONFIG, "proxy check '%s' in %s was made with %s, this "
                             "run asks for %s; rerun with the same options, or use another --db",
                             p->name, p->o->db_path, was, params);
    return NAS_OK;
}

/* Load a stored check's rows into p->row / p->state. Errors: the store's,
 * NAS_ECONFIG (a row of another architecture: the sample changed). */
static int pc_load(nas__pc *p, nas_error *err)
{
    nas_store_pc_row *v = NULL;
    int n = 0, rc = nas_store_pc_list(p->st, p->exp, &v, &n, err);
    for (int i = 0; rc == NAS_OK && i < n; i++) {
        const nas_store_pc_row *r = &v[i];
        if (r->arch < 0 || r->arch >= p->K || r->seed_index < 0 || r->seed_index >= p->S ||
            r->rung < 0 || r->rung >= p->R)
            continue;
        if (strcmp(r->genotype, p->gs[r->arch]) != 0) {
            rc = nas_error_set(err, NAS_ECONFIG, "proxy check '%s': stored architecture %d is "
                               "%s, the sample now %s", p->name, r->arch, r->genotype,
                               p->gs[r->arch]);
            break;
        }
        int i3 = NAS__PC_INDEX(p, r->arch, r->seed_index, r->rung);
        p->row[i3] = *r;
        p->state[i3] = r->error[0] ? NAS__PC_FAIL : NAS__PC_DONE;
        p->n_stored++;
    }
    free(v);
    return rc;
}

/* Open the store, take the run lock, and find or create the check's
 * experiment ("<experiment>-proxy-check"). */
static int pc_open(nas__pc *p, nas_error *err)
{
    int rc;
    if ((rc = nas_store_open(p->o->db_path, 0, &p->st, err)) != NAS_OK ||
        (rc = nas__run_lock(p->o->db_path, &p->lock, err)) != NAS_OK)
        return rc;
    p->locked = 1;
    int from = nas_store_migrated_from(p->st);
    if (from > 0)
        fprintf(p->log,
                "nas: migrated %s from schema version %d to %d (docs/schema.md lists the "
                "steps); a nas older than this one can no longer open it\n",
                p->o->db_path, from, NAS_STORE_SCHEMA_VERSION);
    char params[256];
    pc_params(p, params, sizeof params);
    nas_store_experiment e;
    nas_error ferr;
    if (nas_store_experiment_find(p->st, p->name, &e, &ferr) == NAS_OK) {
        if ((rc = pc_check_stored(p, &e, params, err)) != NAS_OK)
            return rc;
        p->exp = e.id;
        return pc_load(p, err);
    }
    char *canon = nas_config_canonical(p->cfg);
    if (!canon)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    /* the canonical text stands for the file too: a check's record is its settings */
    rc = nas_store_experiment_create(p->st, p->name, canon, canon, p->cfg->path, p->cfg->seed,
                                     NAS_STORE_PROXY_CHECK, p->K * p->S * p->R, &p->exp, err);
    free(canon);
    if (rc == NAS_OK)
        rc = nas_store_strategy_state_put(p->st, p->exp, NAS__PC_STATE, params, strlen(params),
                                          err);
    return rc;
}

/* The next training to start: the lowest rung first, a rung only after
 * the one before it of the same (architecture, seed); -1 when none. */
static int pc_next(const nas__pc *p)
{
    for (int k = 0; k < p->R; k++)
        for (int a = 0; a < p->K; a++)
            for (int j = 0; j < p->S; j++) {
                int i = NAS__PC_INDEX(p, a, j, k);
                if (p->state[i] == NAS__PC_TODO && (k == 0 || p->state[i - 1] == NAS__PC_DONE))
                    return i;
            }
    return -1;
}

/* The progress line of a finished training (and a failed one's reason). */
static void pc_say_done(nas__pc *p, int i)
{
    const nas_store_pc_row *r = &p->row[i];
    if (p->o->quiet)
        return;
    double el = now_s() - p->t0;
    if (r->error[0])
        fprintf(p->log, "[arch %d/%d, seed %d, rung %d] failed: %s\n", r->arch + 1, p->K,
                r->seed_index + 1, r->rung, r->error);
    else
        fprintf(p->log, "[arch %d/%d, seed %d, rung %d, %lld %s] val %.4f  train %.1f s  "
                "eval %.2f s  (%d/%d done, %d:%02d)\n", r->arch + 1, p->K, r->seed_index + 1,
                r->rung, (long long)r->budget, p->images ? "images" : "epochs", r->val_accuracy,
                r->train_seconds, r->eval_seconds, p->n_stored, p->K * p->S * p->R,
                (int)(el / 60), (int)el % 60);
    fflush(p->log);
}

/* Record a finished training (ev from the pool). Errors: the store's. */
static int pc_record(nas__pc *p, const nas_pool_event *ev, nas_error *err)
{
    int i = (int)ev->job_id, k = i % p->R, aj = i / p->R, a = aj / p->S, j = aj % p->S;
    const nas_trial_result *res = &ev->result;
    nas_store_pc_row *r = &p->row[i];
    memset(r, 0, sizeof *r);
    r->experiment_id = p->exp;
    r->arch = a;
    snprintf(r->genotype, sizeof r->genotype, "%s", p->gs[a]);
    r->seed_index = j;
    r->seed = p->cfg->seed + (uint64_t)j;
    r->rung = k;
    r->budget = p->budget[k];
    int ok = res->status == NAS_OK && isfinite(res->val_accuracy);
    r->val_accuracy = ok ? res->val_accuracy : NAN;
    r->train_loss = res->train_loss;
    r->train_seconds = res->train_seconds; /* from the run's start (pc_job) */
    r->eval_seconds = res->latency_ms;     /* pc_job's recalibration + validation pass */
    if (!ok)
        snprintf(r->error, sizeof r->error, "%s", res->error[0] ? res->error : "no accuracy");
    p->state[i] = ok ? NAS__PC_DONE : NAS__PC_FAIL;
    p->n_stored++;
    p->ran++;
    int rc = nas_store_pc_put(p->st, r, err);
    if (rc == NAS_OK && (k == p->R - 1 || !ok)) { /* the run is over: its checkpoint too */
        char ck[NAS_PATH_MAX + 64];
        ckpt_path(p, a, j, ck, sizeof ck);
        unlink(ck);
    }
    pc_say_done(p, i);
    return rc;
}

/* Train until every training is stored (or can never run: a rung after a
 * failed one) or a stop. Errors: NAS_EINTR, the pool's, the store's. */
static int pc_loop(nas__pc *p, nas_error *err)
{
    int in_flight = 0, rc = NAS_OK;
    for (;;) {
        if (p->o->stop && *p->o->stop)
            return nas_error_set(err, NAS_EINTR, "interrupted");
        int i;
        while (nas_pool_idle(p->pool) > 0 && (i = pc_next(p)) >= 0) {
            nas_pool_job job = {.id = i, .attempt = 1};
            job.genotype = p->g[i / p->R / p->S];
            if ((rc = nas_pool_submit(p->pool, &job, NULL, err)) != NAS_OK)
                return rc;
            p->state[i] = NAS__PC_RUN;
            in_flight++;
        }
        if (in_flight == 0)
            return NAS_OK;
        nas_pool_event ev;
        rc = nas_pool_wait(p->pool, 1000, &ev, err);
        if (rc == NAS_ETIMEOUT || rc == NAS_EINTR)
            continue;
        if (rc != NAS_OK)
            return rc;
        in_flight--;
        if ((rc = pc_record(p, &ev, err)) != NAS_OK)
            return rc;
    }
}

/* The live line on a terminal: the trainings in flight and their progress. */
static void pc_on_progress(void *user, int64_t job_id, int worker, double fraction, double loss)
{
    nas__pc *p = user;
    (void)loss;
    if (p->o->quiet || !p->tty || worker < 0)
        return;
    int i = (int)job_id, k = i % p->R, aj = i / p->R;
    fprintf(p->log, "\r  training: arch %d seed %d to rung %d: %3.0f%%  (%d/%d done)\033[K",
            aj / p->S + 1, aj % p->S + 1, k, 100 * fraction, p->n_stored, p->K * p->S * p->R);
    fflush(p->log);
}

/* The data, the space, the ladder, the sample, the store, the pool. */
static int pc_prepare(nas__pc *p, nas_error *err)
{
    const nas_config *cfg = p->cfg;
    if (!nas_evaluator_kind_trains(cfg))
        return nas_error_set(err, NAS_ECONFIG, "%s: proxy-check trains architectures: "
                             "evaluator.kind = \"%s\" has one score per architecture, "
                             "nothing to check", cfg->path, nas_evaluator_kind_name(cfg));
    nas_config *w = malloc(sizeof *w);
    if (!w)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    *w = *cfg; /* the workers' copy: no latency, no kept weights, the ladder's unit */
    nas_data_cache_beside(&w->data, p->o->db_path);
    w->evaluator.latency_runs = 0;
    w->proxy.keep_weights = 0;
    if (cfg->search.fidelity.scheduler == NAS_FIDELITY_NONE)
        w->search.fidelity.resource = NAS_FIDELITY_IMAGES;
    p->wcfg = w;
    int rc;
    if ((rc = nas_space_create(&cfg->space, &p->space, err)) != NAS_OK ||
        (rc = nas_evaluator_create(w, p->space, &p->ev, err)) != NAS_OK ||
        (rc = pc_ladder(p, err)) != NAS_OK || (rc = pc_sample(p, err)) != NAS_OK)
        return rc;
    nas_data_info info;
    nas_evaluator_data_info(p->ev, &info);
    p->classes = info.classes;
    p->valid = nas_evaluator_valid_count(p->ev);
    int n = p->K * p->S * p->R;
    p->row = calloc((size_t)n, sizeof *p->row);
    p->state = calloc((size_t)n, 1);
    if (!p->row || !p->state)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++)
        p->row[i].val_accuracy = NAN;
    if ((rc = pc_open(p, err)) != NAS_OK)
        return rc;
    snprintf(p->ckpt_dir, sizeof p->ckpt_dir, "%s.ckpt", p->o->db_path);
    if (mkdir(p->ckpt_dir, 0777) != 0 && errno != EEXIST)
        return nas_error_set(err, NAS_EIO, "proxy-check: cannot create %s: %s", p->ckpt_dir,
                             strerror(errno));
    nas_pool_opts po = {.job_timeout_s = cfg->workers.trial_timeout_s,
                        .progress_interval_s = 0.5,
                        .on_progress = pc_on_progress,
                        .user = p,
                        .heartbeat_s = cfg->workers.heartbeat_s,
                        .stop = p->o->stop};
    return nas_pool_create(cfg->workers.count, pc_job, p, &po, &p->pool, err);
}

static void pc_say_start(nas__pc *p)
{
    if (p->o->quiet)
        return;
    char rungs[256] = "";
    size_t u = 0;
    for (int k = 0; k < p->R && u < sizeof rungs; k++)
        u += (size_t)snprintf(rungs + u, sizeof rungs - u, "%s%lld", k ? ", " : "",
                              (long long)p->budget[k]);
    fprintf(p->log, "nas proxy-check: '%s' (id %lld) in %s: %d architectures x %d seeds x %d "
            "rungs (%s %s) = %d trainings on %d worker(s), %d validation images; %d stored "
            "before%s\n", p->name, (long long)p->exp, p->o->db_path, p->K, p->S, p->R, rungs,
            p->images ? "images" : "epochs", p->K * p->S * p->R, nas_pool_size(p->pool),
            p->valid, p->n_stored, p->tty ? "; Ctrl-C stops (rerun to continue)" : "");
    fflush(p->log);
}

static void pc_free(nas__pc *p)
{
    nas_pool_destroy(p->pool);
    nas_evaluator_destroy(p->ev);
    nas_space_destroy(p->space);
    if (p->st && p->exp > 0) {
        nas_error e;
        nas_store_experiment_set_status(p->st, p->exp, p->status, &e);
    }
    nas_store_close(p->st);
    if (p->locked)
        nas__run_unlock(&p->lock);
    free(p->wcfg);
    free(p->g);
    free(p->gs);
    free(p->row);
    free(p->state);
}

int nas_proxy_check_run(const nas_config *cfg, const nas_proxy_check_opts *opts, nas_error *err)
{
    if (!cfg || !opts || !opts->db_path)
        return nas_error_set(err, NAS_EINVAL, "proxy-check: missing config or database path");
    nas__pc p;
    memset(&p, 0, sizeof p);
    nas_config *own = malloc(sizeof *own); /* large; not on the stack */
    if (!own)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    *own = *cfg;
    snprintf(p.name, sizeof p.name, "%.*s-proxy-check", NAS_NAME_MAX - 14, cfg->experiment);
    nas__stored_defaults(own, opts->db_path, p.name, opts->quiet ? NULL : opts->log ? opts->log : stderr);
    p.cfg = own;
    p.o = opts;
    p.log = opts->log ? opts->log : stderr;
    p.out = opts->out ? opts->out : stdout;
    p.tty = isatty(fileno(p.log));
    p.K = opts->archs > 0 ? opts->archs : opts->quick ? NAS__PC_QUICK_ARCHS : 12;
    p.S = opts->seeds > 0 ? opts->seeds : 2;
    p.status = "failed";
    p.t0 = now_s();
    int rc = pc_prepare(&p, err);
    if (rc == NAS_OK) {
        pc_say_start(&p);
        rc = pc_loop(&p, err);
        if (p.tty && !opts->quiet)
            fprintf(p.log, "\r\033[K");
    }
    if (rc == NAS_EINTR) {
        p.status = "interrupted";
        if (!opts->quiet)
            fprintf(p.log, "nas proxy-check: stopped; %d training(s) stored (%d in this run); "
                    "run the same command again to continue\n", p.n_stored, p.ran);
    } else if (rc == NAS_OK) {
        p.status = "done";
        rc = nas__pc_report(&p, err);
    }
    pc_free(&p);
    free(own);
    return rc;
}
