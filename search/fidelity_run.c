/*
 * search/fidelity_run.c - multi-fidelity search in the controller (issue 17,
 * docs/multi-fidelity.md). With search.fidelity.scheduler set, run_loop's
 * place is taken by nas__ctl_fid_loop: the strategy proposes, the
 * scheduler (search/fidelity.c) decides each job's budget and which trials
 * are promoted; a promoted trial's job carries its new budget and its
 * worker continues from the trial's checkpoint (DB.ckpt/trial-ID.npz,
 * beside the database as kept weights are), which is deleted as soon as
 * the trial can no longer be promoted.
 *
 * What the strategy learns: each trial once, with its result at the
 * highest rung it reached, when it can no longer be promoted. Evolution's
 * population and NAO's predictor then hold every trial's best-informed
 * value, and a trial is never observed twice (the strategies assume one
 * observation per proposal). Under SH and Hyperband a bracket's trials are
 * observed when the next bracket starts (before its first proposal), in
 * trial order, so the sequence of proposals and observations does not
 * depend on timing: a search is a function of (config, seed), whatever the
 * number of workers. ASHA observes each trial as soon as it is final
 * (asynchronous: no worker waits, and the order depends on timing).
 *
 * Store: every finished rung is a row of the rung table (written first),
 * then the trial's result row holds its latest rung (epochs = its budget).
 * A resumed search (after Ctrl-C or kill -9) replays the scheduler from the
 * stored trials and rungs (nas__ctl_fid_replay): finished rungs are not run
 * again; a job that was under way runs again from its checkpoint, which
 * holds its last finished epoch.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* unlink */
#include "nas/evaluator.h" /* nas_objective_value */
#include "search/controller_impl.h"

int nas__ctl_fid_init(ctl *c, int mpi_size, nas_error *err)
{
    const nas_config *cfg = c->cfg;
    if (cfg->search.fidelity.scheduler == NAS_FIDELITY_NONE)
        return NAS_OK;
    if (cfg->search.fidelity.resource != NAS_FIDELITY_EPOCHS)
        return nas_error_set(err, NAS_ECONFIG,
                             "%s: search.fidelity.resource = \"images\" is not supported by this "
                             "nas yet (promotion continues from per-epoch checkpoints), expected "
                             "\"epochs\"", cfg->path);
    if (mpi_size > 1)
        return nas_error_set(err, NAS_ECONFIG,
                             "%s: search.fidelity under MPI is not supported yet (the worker "
                             "ranks would need the checkpoints), expected a run without mpirun",
                             cfg->path);
    nas_fid_opts o = {cfg->search.fidelity.scheduler, cfg->search.fidelity.min,
                      cfg->search.fidelity.max, cfg->search.fidelity.eta, cfg->search.trials,
                      cfg->n_objectives > 1 ? cfg->n_objectives : 1, {1}};
    if (o.dims > NAS_FID_MAX_OBJ)
        o.dims = NAS_FID_MAX_OBJ;
    for (int k = 0; o.dims > 1 && k < o.dims; k++)
        o.maximize[k] = cfg->objectives[k].maximize;
    return nas_fid_create(&o, &c->fid, err);
}

void nas__ctl_fid_ckpt(const ctl *c, int64_t trial, char *buf, size_t n)
{
    snprintf(buf, n, "%s/trial-%lld.npz", c->ckpt_dir, (long long)trial);
}

void nas__ctl_fid_free(ctl *c)
{
    nas_fid_destroy(c->fid);
    c->fid = NULL;
    free(c->ft);
    free(c->fid_requeue);
}

/* ---- the trials the scheduler knows -------------------------------------------------- */

static fid_trial *ft_find(ctl *c, int64_t id)
{
    for (int i = c->nft - 1; i >= 0; i--)
        if (c->ft[i].id == id)
            return &c->ft[i];
    return NULL;
}

static int ft_add(ctl *c, int64_t id, const nas_genotype *g, int bracket, nas_error *err)
{
    if (c->nft == c->cap_ft) {
        int cap = c->cap_ft ? 2 * c->cap_ft : 64;
        fid_trial *v = realloc(c->ft, (size_t)cap * sizeof *v);
        if (!v)
            return nas_error_set(err, NAS_ENOMEM, "out of memory");
        c->ft = v;
        c->cap_ft = cap;
    }
    fid_trial *t = &c->ft[c->nft++];
    memset(t, 0, sizeof *t);
    t->id = id;
    t->g = *g;
    t->bracket = bracket;
    return NAS_OK;
}

/* The scheduler's objective values of a result: the score (the primary
 * objective, larger is better; NaN when failed or infeasible), or with
 * several objectives each one's value (NaN for all when infeasible). */
static void objectives(const ctl *c, const nas_trial_result *res, double *obj)
{
    double score = nas_search_score(c->cfg, res, NULL, 0);
    obj[0] = score;
    for (int k = 1; c->cfg->n_objectives > 1 && k < c->cfg->n_objectives && k < NAS_FID_MAX_OBJ;
         k++)
        obj[k] = isfinite(score) ? nas_objective_value(c->cfg->objectives[k].metric, res) : NAN;
    if (c->cfg->n_objectives > 1)
        obj[0] = isfinite(score) ? nas_objective_value(c->cfg->objectives[0].metric, res) : NAN;
}

/* 1 when trial `id` has a job in flight, waiting for a retry or re-queued. */
static int busy(const ctl *c, int64_t id)
{
    for (int i = 0; i < c->nfl; i++)
        if (c->fl[i].trial == id)
            return 1;
    for (int i = 0; i < c->nretry; i++)
        if (c->retry[i].trial == id)
            return 1;
    for (int i = 0; i < c->nfid_requeue; i++)
        if (c->fid_requeue[i].trial == id)
            return 1;
    return 0;
}

/*
 * The strategy observes, in trial order, the trials that can no longer be
 * promoted (their checkpoints are deleted): under SH / Hyperband only
 * those of brackets before the current one (all: the search is over), so
 * observations fall at the same points of the job sequence in every run.
 */
static int observe_finals(ctl *c, int mode, int all, nas_error *err)
{
    int sync = c->cfg->search.fidelity.scheduler != NAS_FIDELITY_ASHA;
    for (int i = 0; i < c->nft; i++) {
        fid_trial *t = &c->ft[i];
        if (t->observed || !t->has_res || busy(c, t->id) || nas_fid_promotable(c->fid, t->id))
            continue;
        if (!c->table && !t->ckpt_gone) { /* it can no longer be promoted: delete it once */
            char ck[NAS_PATH_MAX + 64];
            nas__ctl_fid_ckpt(c, t->id, ck, sizeof ck);
            unlink(ck);
            t->ckpt_gone = 1;
        }
        if (sync && !all && t->bracket >= nas_fid_bracket(c->fid))
            continue;
        t->observed = 1;
        int rc = nas__ctl_observe(c, &t->g, &t->res, mode, err);
        if (rc != NAS_OK)
            return rc;
    }
    return NAS_OK;
}

/* ---- the record step ------------------------------------------------------------------ */

int nas__ctl_fid_record(ctl *c, const flight *f, const nas_trial_result *res, char *note,
                        size_t n, nas_error *err)
{
    fid_trial *t = ft_find(c, f->trial);
    if (!t)
        return nas_error_set(err, NAS_EWORKER, "trial %lld finished but was never proposed",
                             (long long)f->trial);
    char why[200];
    double score = nas_search_score(c->cfg, res, note, 256);
    int ok = res->status == NAS_OK && !nas__ctl_rejected(res);
    int diverged = nas_search_diverged(c->cfg, c->classes, c->n_valid, res, why, sizeof why);
    if (diverged) {
        size_t len = strlen(note);
        snprintf(note + len, n - len, "%s%s", len ? "; " : "", why);
    }
    int rc = NAS_OK;
    if (ok) { /* the rung first: a kill after it leaves the rung, which the replay reads */
        nas_store_rung g = {f->trial, f->budget, res->val_accuracy, res->train_loss,
                            nas__ctl_now() - f->t0};
        rc = nas_store_rung_put(c->st, &g, err);
    }
    if (rc == NAS_OK && (ok || !t->has_res)) {
        rc = nas_store_trial_finish_flagged(c->st, f->trial, res, score, note,
                                            diverged ? "diverged" : NULL, err);
    } else if (rc == NAS_OK) { /* a failed promotion: the trial keeps its last rung */
        char keep[512];
        snprintf(keep, sizeof keep, "promotion to %d failed: %s", f->budget,
                 res->error[0] ? res->error : nas_strerror(res->status));
        double s0 = nas_search_score(c->cfg, &t->res, NULL, 0);
        rc = nas_store_trial_finish(c->st, f->trial, &t->res, s0, keep, err);
    }
    if (rc != NAS_OK)
        return rc;
    if (!t->accounted) {
        nas__ctl_account(c, f->trial, f->geno, res, score, diverged);
        t->accounted = 1;
        c->ran += !nas__ctl_rejected(res); /* trials, not rung runs, as without fidelity */
    }
    if (ok) /* the status line's best: the highest rung reached, then the score */
        nas__ctl_note_best(c, f->trial, f->geno, score, res->val_accuracy, f->budget);
    if (ok || !t->has_res) {
        t->res = *res;
        t->has_res = 1;
    }
    double obj[NAS_FID_MAX_OBJ];
    objectives(c, res, obj);
    if ((rc = nas_fid_report(c->fid, f->trial, f->rung, ok, obj, err)) != NAS_OK)
        return rc;
    return observe_finals(c, DRAIN_LIVE, 0, err);
}

/* ---- the loop -------------------------------------------------------------------------- */

/* A rung result the store already holds (a replayed run's): val and loss. */
typedef struct known_rung {
    int64_t trial, fidelity;
    double val, loss;
} known_rung;

typedef struct rung_vec {
    known_rung *v;
    int n, cap, oom;
} rung_vec;

static int collect_rung(void *ctx, const nas_store_rung *r)
{
    rung_vec *rv = ctx;
    if (rv->n == rv->cap) {
        int cap = rv->cap ? 2 * rv->cap : 64;
        known_rung *v = realloc(rv->v, (size_t)cap * sizeof *v);
        if (!v) {
            rv->oom = 1;
            return 1;
        }
        rv->v = v;
        rv->cap = cap;
    }
    rv->v[rv->n++] = (known_rung){r->trial_id, r->fidelity, r->val_accuracy, r->loss};
    return 0;
}

static const known_rung *rung_of(const rung_vec *rv, int64_t trial, int64_t fidelity)
{
    for (int i = 0; i < rv->n; i++)
        if (rv->v[i].trial == trial && rv->v[i].fidelity == fidelity)
            return &rv->v[i];
    return NULL;
}

/* Start job `job` of the scheduler: a new proposal (NEW) or a promotion. */
static int start_job(ctl *c, const nas_fid_job *job, nas_error *err)
{
    flight f;
    memset(&f, 0, sizeof f);
    f.loss = NAN;
    f.rung = job->rung;
    f.budget = (int)job->to;
    f.from = (int)job->from;
    if (job->kind == NAS_FID_PROMOTE) {
        fid_trial *t = ft_find(c, job->trial);
        if (!t)
            return nas_error_set(err, NAS_EWORKER, "scheduler promoted unknown trial %lld",
                                 (long long)job->trial);
        f.trial = t->id;
        f.g = t->g;
        nas_space_format(c->space, &f.g, f.geno, sizeof f.geno);
        f.failures = nas__ctl_retries_get(c, f.trial);
        return nas__ctl_dispatch(c, &f, START_PROMOTE, err);
    }
    int rc = observe_finals(c, DRAIN_LIVE, 0, err); /* before the proposal (header comment) */
    if (rc == NAS_OK)
        rc = nas__ctl_propose(c, &f, err);
    if (rc != NAS_OK)
        return rc;
    c->fid_has_new = 0;
    if ((rc = nas_fid_add(c->fid, f.trial, job, err)) != NAS_OK ||
        (rc = ft_add(c, f.trial, &f.g, job->bracket, err)) != NAS_OK)
        return rc;
    return nas__ctl_dispatch(c, &f, START_NEW, err);
}

/* Start jobs on the idle workers: retries, re-queued jobs, then what the
 * scheduler asks for. A strategy that finds nothing new ends the new
 * trials (the scheduler goes on with the ones it has). */
static int fill(ctl *c, nas_error *err)
{
    while (!(c->stop && *c->stop) && nas_pool_idle(c->pool) > 0) {
        int rc;
        if (c->nretry > 0) {
            flight f = c->retry[--c->nretry];
            f.loss = NAN;
            f.fraction = 0;
            rc = nas__ctl_dispatch(c, &f, START_RETRY, err);
        } else if (c->nfid_requeue > 0) {
            flight f = c->fid_requeue[0];
            memmove(c->fid_requeue, c->fid_requeue + 1,
                    (size_t)--c->nfid_requeue * sizeof *c->fid_requeue);
            rc = nas__ctl_dispatch(c, &f, f.from > 0 ? START_PROMOTE : START_REQUEUED, err);
        } else {
            if (!c->fid_has_new)
                nas_fid_next(c->fid, &c->fid_new);
            if (c->fid_new.kind == NAS_FID_WAIT || c->fid_new.kind == NAS_FID_DONE)
                return NAS_OK;
            c->fid_has_new = c->fid_new.kind == NAS_FID_NEW;
            rc = start_job(c, &c->fid_new, err);
            if (rc == NAS_EINFEASIBLE && c->n_done == 0 && c->nfl == 0 &&
                (c->n_infeasible > 0 || c->n_rejected > 0))
                return rc; /* issue 6: nothing in the space meets the constraints */
            if (rc == NAS_EINFEASIBLE) {
                nas__ctl_say(c, "nas: %s", err->msg);
                c->exhausted = 1;
                c->fid_has_new = 0;
                nas_fid_no_new(c->fid);
                nas_error_clear(err);
                rc = NAS_OK;
            }
        }
        if (rc != NAS_OK)
            return rc;
    }
    return NAS_OK;
}

/* The best trial at the highest fidelity, as the store ranks it, for the
 * summary (the status line's best is the live version of the same). */
static void best_from_store(ctl *c)
{
    nas_store_experiment e;
    nas_store_trial t;
    nas_error err;
    if (nas_store_experiment_get(c->st, c->exp, &e, &err) != NAS_OK || e.best_trial < 0 ||
        nas_store_trial_get(c->st, e.best_trial, &t, &err) != NAS_OK)
        return;
    c->best_trial = t.id;
    c->best_val = t.val_accuracy;
    snprintf(c->best_geno, sizeof c->best_geno, "%s", t.genotype);
}

int nas__ctl_fid_loop(ctl *c, nas_error *err)
{
    int rc;
    for (;;) {
        if (c->stop && *c->stop)
            return NAS_OK;
        if ((rc = fill(c, err)) != NAS_OK)
            return rc;
        if (c->nfl == 0)
            break;
        nas_pool_event ev;
        nas_error werr;
        int wrc = nas_pool_wait(c->pool, c->tty ? 1000 : 5000, &ev, &werr);
        if (wrc == NAS_OK) {
            if ((rc = nas__ctl_record(c, &ev, err)) != NAS_OK)
                return rc;
        } else if (wrc == NAS_ETIMEOUT || wrc == NAS_EINTR) {
            nas__ctl_draw_status(c);
        } else {
            *err = werr;
            return wrc;
        }
    }
    rc = observe_finals(c, DRAIN_LIVE, 1, err);
    best_from_store(c);
    c->exhausted = c->exhausted || c->finished < c->budget;
    return rc;
}

/* ---- the replay ------------------------------------------------------------------------ */

typedef struct fid_hist {
    nas_store_trial *v;
    int n, cap, oom;
} fid_hist;

static int collect_hist(void *ctx, const nas_store_trial *t)
{
    fid_hist *h = ctx;
    if (h->n == h->cap) {
        int cap = h->cap ? 2 * h->cap : 64;
        nas_store_trial *v = realloc(h->v, (size_t)cap * sizeof *v);
        if (!v) {
            h->oom = 1;
            return 1;
        }
        h->v = v;
        h->cap = cap;
    }
    h->v[h->n++] = *t;
    return 0;
}

/* Known among the stored trials before the one replayed (ctx = ctl;
 * c->hist_n of c->ft's first entries). */
static int known_before(void *ctx, const nas_genotype *g)
{
    ctl *c = ctx;
    char key[NAS_GENOTYPE_STR_MAX], k2[NAS_GENOTYPE_STR_MAX];
    nas_space_key(c->space, g, key, sizeof key);
    for (int i = 0; i < c->hist_n && i < c->nft; i++) {
        nas_space_key(c->space, &c->ft[i].g, k2, sizeof k2);
        if (strcmp(key, k2) == 0)
            return 1;
    }
    return 0;
}

static int requeue(ctl *c, const fid_trial *t, const nas_fid_job *job, nas_error *err)
{
    flight *v = realloc(c->fid_requeue, (size_t)(c->nfid_requeue + 1) * sizeof *v);
    if (!v)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    c->fid_requeue = v;
    flight *f = &v[c->nfid_requeue++];
    memset(f, 0, sizeof *f);
    f->trial = t->id;
    f->g = t->g;
    nas_space_format(c->space, &f->g, f->geno, sizeof f->geno);
    f->loss = NAN;
    f->rung = job->rung;
    f->budget = (int)job->to;
    f->from = (int)job->from;
    f->failures = nas__ctl_retries_get(c, t->id);
    return NAS_OK;
}

/* Replay one job of the scheduler against the stored trial `s` (the
 * trial it concerns) and its rungs: report a stored result, a stored
 * first-rung failure, or re-queue the job. */
static int replay_job(ctl *c, const nas_store_trial *s, fid_trial *t, const nas_fid_job *job,
                      const rung_vec *rv, nas_error *err)
{
    const known_rung *k = rung_of(rv, t->id, job->to);
    nas_trial_result res;
    nas_store_trial_result(s, &res);
    if (!k && job->kind == NAS_FID_NEW && s->status == NAS_TRIAL_FAILED) {
        nas__ctl_account(c, t->id, s->genotype, &res, NAN, 0);
        t->accounted = 1;
        t->has_res = 1;
        t->res = res;
        return nas_fid_report(c->fid, t->id, job->rung, 0, NULL, err);
    }
    if (!k)
        return requeue(c, t, job, err);
    res.status = NAS_OK;
    res.error[0] = '\0';
    res.val_accuracy = k->val;
    res.train_loss = k->loss;
    res.epochs = (int)job->to;
    double score = nas_search_score(c->cfg, &res, NULL, 0);
    if (!t->accounted) {
        nas__ctl_account(c, t->id, s->genotype, &res, score, !strcmp(s->flag, "diverged"));
        t->accounted = 1;
    }
    t->res = res;
    t->has_res = 1;
    double obj[NAS_FID_MAX_OBJ];
    objectives(c, &res, obj);
    return nas_fid_report(c->fid, t->id, job->rung, 1, obj, err);
}

/* The scheduler's jobs, replayed until one needs a new proposal beyond
 * the stored trials, or it waits for re-queued jobs. */
static int replay_jobs(ctl *c, fid_hist *h, const rung_vec *rv, int *mismatch, nas_error *err)
{
    int next = 0, rc = NAS_OK;
    while (rc == NAS_OK) {
        nas_fid_job job;
        nas_fid_next(c->fid, &job);
        if (job.kind == NAS_FID_WAIT || job.kind == NAS_FID_DONE)
            break;
        if (job.kind == NAS_FID_PROMOTE) {
            fid_trial *t = ft_find(c, job.trial);
            const nas_store_trial *s = NULL;
            for (int i = 0; i < h->n && !s; i++)
                s = h->v[i].id == job.trial ? &h->v[i] : NULL;
            rc = t && s ? replay_job(c, s, t, &job, rv, err)
                        : nas_error_set(err, NAS_EDB, "replay: promoted trial %lld is not stored",
                                        (long long)job.trial);
            continue;
        }
        if (next >= h->n) { /* the live loop proposes it */
            c->fid_new = job;
            c->fid_has_new = 1;
            break;
        }
        const nas_store_trial *s = &h->v[next++];
        nas_genotype g, stored;
        char key[NAS_GENOTYPE_STR_MAX], skey[NAS_GENOTYPE_STR_MAX];
        if ((rc = observe_finals(c, DRAIN_REPLAY, 0, err)) != NAS_OK)
            break;
        if (nas_space_parse(c->space, s->genotype, &stored, err) != NAS_OK) {
            rc = nas_error_set(err, NAS_EFORMAT, "trial %lld: %s", (long long)s->id, err->msg);
            break;
        }
        c->hist_n = c->nft;
        nas_error perr;
        if (nas__ctl_propose_new(c, known_before, &g, key, &perr) != NAS_OK ||
            (nas_space_key(c->space, &stored, skey, sizeof skey), strcmp(key, skey) != 0))
            ++*mismatch;
        if ((rc = nas_fid_add(c->fid, s->id, &job, err)) != NAS_OK ||
            (rc = ft_add(c, s->id, &stored, job.bracket, err)) != NAS_OK)
            break;
        rc = replay_job(c, s, &c->ft[c->nft - 1], &job, rv, err);
    }
    return rc;
}

int nas__ctl_fid_replay(ctl *c, int *mismatch, nas_error *err)
{
    *mismatch = 0;
    fid_hist h = {0};
    rung_vec rv = {0};
    int rc = nas_store_trial_foreach(c->st, c->exp, NAS_STORE_ORDER_ID, 0, collect_hist, &h, err);
    if (rc == NAS_OK)
        rc = nas_store_rung_foreach(c->st, c->exp, collect_rung, &rv, err);
    if (rc == NAS_OK && (h.oom || rv.oom))
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory replaying the trials");
    c->n_hist = h.n;
    if (rc == NAS_OK)
        rc = replay_jobs(c, &h, &rv, mismatch, err);
    for (int i = 0; rc == NAS_OK && i < h.n; i++) { /* killed between the rung and the trial row */
        fid_trial *t = ft_find(c, h.v[i].id);
        if (t && t->has_res && !busy(c, t->id) && h.v[i].status != NAS_TRIAL_DONE &&
            h.v[i].status != NAS_TRIAL_FAILED)
            rc = nas_store_trial_finish(c->st, t->id, &t->res,
                                        nas_search_score(c->cfg, &t->res, NULL, 0), NULL, err);
    }
    c->hist_n = 0;
    free(h.v);
    free(rv.v);
    return rc;
}
