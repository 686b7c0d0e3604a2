/*
 * search/fidelity_run.c - multi-fidelity search in the controller (issue 17,
 * docs/multi-fidelity.md). With search.fidelity.scheduler set, run_loop's
 * place is taken by the controller's fid_loop, which starts jobs through
 * nas__ctl_fid_fill and records through nas__ctl_record (which calls
 * nas__ctl_fid_record here; issue 29: this file never calls back into the
 * controller or the record step). The strategy proposes, the pure
 * scheduler (search/fidelity.c: fed results, it returns jobs) decides each
 * job's budget and which trials
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
 * Store: every finished rung is a row of the rung table, written in one
 * transaction with the trial's result row, which holds its latest rung
 * (epochs = its budget; nas_store_trial_finish_rung). A resumed search
 * (after Ctrl-C or kill -9) replays the scheduler from the stored trials
 * and rungs (nas__ctl_fid_replay): finished rungs are not run again; a job
 * that was under way runs again from its checkpoint, which holds its last
 * finished epoch.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* unlink, access */
#include "nas/array.h"
#include "nas/evaluator.h" /* nas_objective_value */
#include "search/controller_impl.h"

int nas__ctl_fid_init(ctl *c, nas_error *err)
{
    const nas_config *cfg = c->cfg;
    if (cfg->search.fidelity.scheduler == NAS_FIDELITY_NONE)
        return NAS_OK;
    nas_fid_opts o = {cfg->search.fidelity.scheduler, cfg->search.fidelity.min,
                      cfg->search.fidelity.max, cfg->search.fidelity.eta, c->budget,
                      cfg->n_objectives > 1 ? cfg->n_objectives : 1, {1}};
    if (o.dims > NAS_FID_MAX_OBJ)
        o.dims = NAS_FID_MAX_OBJ;
    for (int k = 0; o.dims > 1 && k < o.dims; k++)
        o.maximize[k] = cfg->objectives[k].maximize;
    return nas_fid_create(&o, &c->fid, err);
}

void nas__ctl_fid_free(ctl *c)
{
    nas_fid_destroy(c->fid);
    c->fid = NULL;
    free(c->ft);
    free(c->fid_requeue);
    free(c->fid_rv);
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
    int rc = nas_array_grow(&c->ft, c->nft, &c->cap_ft, 64, sizeof *c->ft, err);
    if (rc != NAS_OK)
        return rc;
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

/* Delete trial `id`'s checkpoint and any temporary file a worker killed
 * while writing it left beside it (the .npz writer's PATH.tmp, and
 * libzip's PATH.tmp.XXXXXX inside zip_close; trainer/weights.c). */
static void remove_ckpt(const ctl *c, int64_t id)
{
    char ck[NAS_PATH_MAX + 64], pattern[64];
    nas__ctl_fid_ckpt(c, id, ck, sizeof ck);
    unlink(ck);
    snprintf(pattern, sizeof pattern, "trial-%lld.npz.tmp*", (long long)id);
    nas__ctl_unlink_matching(c->ckpt_dir, pattern);
}

/* Delete the checkpoints of the trials that can no longer be promoted
 * (nas_fid_promotable; none in flight, waiting for a retry or re-queued),
 * once each. Called when a result is in (observe_finals) and when a
 * promotion starts: the rung's decision was made then (nas_fid_next), and
 * the trials it left out would otherwise keep their checkpoints until the
 * next result (under SH the whole top rung). The replay makes the same
 * decisions from the stored rungs, so a resume never needs them. */
static void drop_ckpts(ctl *c)
{
    for (int i = 0; !c->table && i < c->nft; i++) {
        fid_trial *t = &c->ft[i];
        if (t->ckpt_gone || !t->has_res || busy(c, t->id) || nas_fid_promotable(c->fid, t->id))
            continue;
        remove_ckpt(c, t->id);
        t->ckpt_gone = 1;
    }
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
    drop_ckpts(c); /* they can no longer be promoted: delete them once */
    for (int i = 0; i < c->nft; i++) {
        fid_trial *t = &c->ft[i];
        if (t->observed || !t->has_res || busy(c, t->id) || nas_fid_promotable(c->fid, t->id))
            continue;
        if (sync && !all && t->bracket >= nas_fid_bracket(c->fid))
            continue;
        t->observed = 1;
        int rc = nas__ctl_observe(c, &t->g, &t->res, mode, err);
        if (rc != NAS_OK)
            return rc;
    }
    return NAS_OK;
}

/* bsearch's order of stored rungs: (trial, fidelity), as nas_store_rung_list gives them. */
static int rung_cmp(const void *a, const void *b)
{
    const nas_store_rung *x = a, *y = b;
    if (x->trial_id != y->trial_id)
        return x->trial_id < y->trial_id ? -1 : 1;
    return (x->fidelity > y->fidelity) - (x->fidelity < y->fidelity);
}

/* The stored rung of `trial` at `fidelity` among rv[0..n); NULL when none. */
static const nas_store_rung *rung_of(const nas_store_rung *rv, int n, int64_t trial,
                                     int64_t fidelity)
{
    nas_store_rung key = {.trial_id = trial, .fidelity = fidelity};
    return n > 0 ? bsearch(&key, rv, (size_t)n, sizeof *rv, rung_cmp) : NULL;
}

/* Report to the scheduler trial t's stored rung k, the result of its job
 * `job` (issue 29: every stored outcome replays as itself): t's result is
 * `base` with k's accuracy, loss and budget; `geno` and `diverged` are what
 * the trial was stored with. Nothing is trained or written. Errors: the
 * scheduler's (nas_fid_report). */
static int report_rung(ctl *c, fid_trial *t, const char *geno, const nas_trial_result *base,
                       int diverged, const nas_fid_job *job, const nas_store_rung *k,
                       nas_error *err)
{
    nas_trial_result res = *base;
    res.status = NAS_OK;
    res.error[0] = '\0';
    res.val_accuracy = k->val_accuracy;
    res.train_loss = k->loss;
    res.epochs = (int)job->to;
    double score = nas_search_score(c->cfg, &res, NULL, 0);
    if (!t->accounted) {
        nas__ctl_account(c, t->id, geno, &res, score, diverged);
        t->accounted = 1;
    }
    /* issue 29: the best at the highest fidelity, as live (it was ranked at
     * its first rung: a 1-epoch best after a resume or extension) */
    nas__ctl_note_best(c, t->id, geno, score, res.val_accuracy, (int)job->to);
    nas__ctl_front_add(c, &res, job->to);
    t->res = res;
    t->has_res = 1;
    double obj[NAS_FID_MAX_OBJ];
    objectives(c, &res, obj);
    return nas_fid_report(c->fid, t->id, job->rung, 1, obj, err);
}

/* ---- the record step ------------------------------------------------------------------ */

const nas_trial_result *nas__ctl_fid_result(ctl *c, const flight *f, const nas_trial_result *res,
                                            nas_trial_result *buf)
{
    fid_trial *t = ft_find(c, f->trial);
    double limit = c->cfg->constraints.latency_ms;
    if (!t || !t->has_res || t->res.status != NAS_OK || nas__ctl_rejected(&t->res) ||
        !(limit > 0))
        return res; /* a first rung, or no latency constraint */
    *buf = *res;
    if (nas__ctl_rejected(res)) { /* measured again before a promotion: not trained */
        buf->status = NAS_EINFEASIBLE;
        snprintf(buf->error, sizeof buf->error,
                 "latency %.3f ms > constraints.latency_ms = %g, measured again before it (not "
                 "trained; the trial was admitted at %.3f ms)",
                 res->latency_ms, limit, t->res.latency_ms);
    } else if (res->status == NAS_OK) {
        buf->latency_ms = t->res.latency_ms; /* the measurement that admitted the trial */
    }
    return buf;
}

int nas__ctl_fid_record(ctl *c, const flight *f, const nas_trial_result *res, char *note,
                        size_t n, nas_error *err)
{
    fid_trial *t = ft_find(c, f->trial);
    if (!t)
        return nas_error_set(err, NAS_EWORKER, "trial %lld finished but was never proposed",
                             (long long)f->trial);
    double score;
    /* below the maximum budget a chance-level accuracy is a short training,
     * not a diverged one (a NaN or exploding loss is divergence at any rung) */
    int diverged = nas__ctl_judge(c, res, f->budget >= c->cfg->search.fidelity.max, note, n,
                                  &score);
    int ok = res->status == NAS_OK && !nas__ctl_rejected(res);
    int rc;
    if (ok || !t->has_res) { /* the rung and the trial's result in one transaction */
        nas_store_rung g = {f->trial, f->budget, res->val_accuracy, res->train_loss,
                            nas__ctl_now() - f->t0};
        rc = nas_store_trial_finish_rung(c->st, f->trial, res, score, note,
                                         diverged ? "diverged" : NULL, ok ? &g : NULL, err);
    } else { /* a failed promotion: the trial keeps its last rung */
        char keep[512];
        snprintf(keep, sizeof keep, NAS__CTL_PROMO_FAILED, (long long)f->budget,
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
    if (ok) { /* the status line's best and front: the highest rung reached, then the score */
        nas__ctl_note_best(c, f->trial, f->geno, score, res->val_accuracy, f->budget);
        nas__ctl_front_add(c, res, f->budget);
    }
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

int nas__ctl_fid_keep_rung(ctl *c, const flight *f, const char *reason, nas_error *err)
{
    fid_trial *t = c->fid && f->promo ? ft_find(c, f->trial) : NULL;
    if (!t || !t->has_res || t->res.status != NAS_OK)
        return 0;
    char note[640];
    snprintf(note, sizeof note, "promotion to %d interrupted (%s); it runs again on resume",
             f->budget, reason);
    int rc = nas_store_trial_finish(c->st, f->trial, &t->res,
                                    nas_search_score(c->cfg, &t->res, NULL, 0), note, err);
    if (rc != NAS_OK)
        return rc < 0 ? rc : -rc;
    c->n_promo_interrupted++;
    return 1;
}

/* ---- the loop -------------------------------------------------------------------------- */

/* Issue 29: a promotion continues from its trial's checkpoint, which holds
 * f->from epochs. When it is gone (deleted once the trial could no longer
 * be promoted, and promoted after all by an extension; a copy of the
 * database without DB.ckpt/), the promotion trains from 0, said so, and
 * the scheduler is charged the budget it trains again (the evaluator would
 * otherwise start afresh silently while the log said "from N"). */
static void check_ckpt(ctl *c, flight *f)
{
    char ck[NAS_PATH_MAX + 64];
    if (c->table || f->from <= 0)
        return;
    nas__ctl_fid_ckpt(c, f->trial, ck, sizeof ck);
    if (access(ck, R_OK) == 0)
        return;
    nas__ctl_say(c, "nas: warning: trial %lld's checkpoint %s is missing: its promotion to %d "
                 "%s trains from 0 (%d %s, not %d)", (long long)f->trial, ck, f->budget,
                 nas__ctl_fid_unit(c), f->budget, nas__ctl_fid_unit(c), f->budget - f->from);
    nas_fid_charge(c->fid, f->from);
    f->from = 0;
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
        f.promo = 1;
        f.g = t->g;
        nas_space_format(c->space, &f.g, f.geno, sizeof f.geno);
        /* an extension regroups the last, truncated bracket, whose promotions
         * the replay could not reach: one to a rung an earlier run stored
         * (its checkpoint deleted since) keeps that rung, as the replay would */
        const nas_store_rung *k = rung_of(c->fid_rv, c->fid_nr, t->id, job->to);
        if (k) {
            nas__ctl_say(c, "[trial %lld, rung %d] stored %s at %lld %s: val_acc %.4f (an "
                         "earlier run's; not trained again)", (long long)t->id, job->rung,
                         f.geno, (long long)job->to, nas__ctl_fid_unit(c), k->val_accuracy);
            int rc = report_rung(c, t, f.geno, &t->res, 0, job, k, err);
            return rc == NAS_OK ? observe_finals(c, DRAIN_LIVE, 0, err) : rc;
        }
        f.failures = nas__ctl_retries_get(c, f.trial);
        check_ckpt(c, &f);
        int rc = nas__ctl_dispatch(c, &f, START_PROMOTE, err);
        if (rc == NAS_OK)
            drop_ckpts(c); /* those the decision left out */
        return rc;
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
            int how = f.promo ? START_PROMOTE : START_REQUEUED;
            check_ckpt(c, &f);
            rc = nas__ctl_dispatch(c, &f, how, err);
        } else {
            if (!c->fid_has_new)
                nas_fid_next(c->fid, &c->fid_new);
            c->fid_done = c->fid_new.kind == NAS_FID_DONE;
            if (c->fid_new.kind == NAS_FID_WAIT || c->fid_new.kind == NAS_FID_DONE)
                return NAS_OK;
            c->fid_has_new = c->fid_new.kind == NAS_FID_NEW;
            rc = start_job(c, &c->fid_new, err);
            if (rc == NAS_EINFEASIBLE && (rc = nas__ctl_start_status(c, rc, err)) == NAS_OK) {
                c->fid_has_new = 0; /* the strategy found nothing new: no more new trials */
                nas_fid_no_new(c->fid);
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

int nas__ctl_fid_fill(ctl *c, nas_error *err)
{
    return fill(c, err);
}

int nas__ctl_fid_end(ctl *c, nas_error *err)
{
    int rc = observe_finals(c, DRAIN_LIVE, 1, err);
    best_from_store(c);
    /* issue 29: c->exhausted only when the strategy found nothing new
     * (nas__ctl_start_status); a scheduler done with fewer trials finished
     * than search.trials counted latency rejections among its trials
     * (run_finish says so), and one not done lost its workers */
    return rc;
}

/* ---- the replay ------------------------------------------------------------------------ */

/* What the replay reads: the stored trials (with their keys) and rungs. */
typedef struct fid_store {
    hist_vec h;
    nas_store_rung *rv;
    int nr;
} fid_store;

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
    f->promo = job->kind == NAS_FID_PROMOTE;
    f->failures = nas__ctl_retries_get(c, t->id);
    return NAS_OK;
}

/* 1 when job `job` of stored trial `s`, which has no rung at the job's
 * budget, ended as stored (issue 29: every stored outcome replays as
 * itself): a first rung that failed or was rejected by
 * constraints.latency_ms (done, no accuracy), or a promotion that failed
 * (done with its earlier rung, hist_entry.promo_failed). Otherwise the job
 * is unfinished (pending, running, interrupted) and runs again. */
static int ended_unranked(const hist_entry *s, const nas_fid_job *job)
{
    if (job->kind == NAS_FID_NEW)
        return s->status == NAS_TRIAL_FAILED ||
               (s->status == NAS_TRIAL_DONE && nas__ctl_rejected(&s->res));
    return s->status == NAS_TRIAL_DONE && s->promo_failed == job->to;
}

/* Replay one job of the scheduler against the stored trial `s` (the
 * trial it concerns) and its rungs: report a stored result, a stored
 * failure or rejection (ended_unranked), or re-queue the job. */
static int replay_job(ctl *c, const hist_entry *s, fid_trial *t, const nas_fid_job *job,
                      const fid_store *fs, nas_error *err)
{
    const nas_store_rung *k = rung_of(fs->rv, fs->nr, t->id, job->to);
    nas_trial_result res = s->res;
    if (!k && ended_unranked(s, job)) {
        if (!t->accounted) { /* a failed promotion keeps its earlier rung's result */
            nas__ctl_account(c, t->id, s->geno, &res, NAN, 0);
            t->accounted = 1;
            t->has_res = 1;
            t->res = res;
        }
        return nas_fid_report(c->fid, t->id, job->rung, 0, NULL, err);
    }
    if (!k)
        return requeue(c, t, job, err);
    return report_rung(c, t, s->geno, &res, s->diverged, job, k, err);
}

/* bsearch's comparison of a trial id (key) with a stored trial: the
 * store lists them in id order. */
static int hist_cmp(const void *key, const void *e)
{
    int64_t id = *(const int64_t *)key, other = ((const hist_entry *)e)->id;
    return (id > other) - (id < other);
}

/* The stored trial `id`; NULL when none. */
static const hist_entry *stored(const hist_vec *h, int64_t id)
{
    return h->n > 0 ? bsearch(&id, h->v, (size_t)h->n, sizeof *h->v, hist_cmp) : NULL;
}

/* ASHA: 1 when promotion `job` of stored trial `s` was neither made (no
 * stored rung at its budget) nor under way when the stored run stopped
 * (s is done, and its note names no stopped or failed promotion to that
 * budget): the replay, which reports the stored trials in id order rather
 * than in the order their results came in, would start a promotion the
 * run had not chosen (with 2 workers a later trial's result can come in
 * first and take the rung's top 1/eta). */
static int asha_not_made(const ctl *c, const hist_entry *s, const nas_fid_job *job,
                         const fid_store *fs)
{
    return c->cfg->search.fidelity.scheduler == NAS_FIDELITY_ASHA &&
           s->status == NAS_TRIAL_DONE && s->promo_failed != job->to &&
           s->promo_stopped != job->to && !rung_of(fs->rv, fs->nr, s->id, job->to);
}

/* The scheduler's jobs, replayed until one needs a new proposal beyond
 * the stored trials, or it waits for re-queued jobs. A proposal is
 * deduplicated against the stored trials before it (their stored keys,
 * nas__ctl_known_in_history) and compared with the stored trial's key.
 * Under ASHA a promotion the stored run had not made waits (nas_fid_hold)
 * until every stored trial is back; then the scheduler decides again with
 * all of them, as the stored run would have gone on. */
static int replay_jobs(ctl *c, const fid_store *fs, int *mismatch, nas_error *err)
{
    const hist_vec *h = &fs->h;
    int next = 0, rc = NAS_OK;
    while (rc == NAS_OK) {
        nas_fid_job job;
        if (next >= h->n) /* every stored trial is back: decide with the held ones too */
            nas_fid_release(c->fid);
        nas_fid_next(c->fid, &job);
        c->fid_done = job.kind == NAS_FID_DONE; /* issue 29: a finished experiment */
        if (job.kind == NAS_FID_WAIT || job.kind == NAS_FID_DONE)
            break;
        if (job.kind == NAS_FID_PROMOTE) {
            fid_trial *t = ft_find(c, job.trial);
            const hist_entry *s = stored(h, job.trial);
            if (t && s && next < h->n && asha_not_made(c, s, &job, fs)) {
                if (nas_fid_hold(c->fid, &job) != NAS_OK)
                    rc = nas_error_set(err, NAS_EINVAL, "replay: cannot hold trial %lld",
                                       (long long)job.trial);
                continue;
            }
            rc = t && s ? replay_job(c, s, t, &job, fs, err)
                        : nas_error_set(err, NAS_EDB, "replay: promoted trial %lld is not stored",
                                        (long long)job.trial);
            continue;
        }
        if (next >= h->n) { /* the live loop proposes it */
            c->fid_new = job;
            c->fid_has_new = 1;
            break;
        }
        const hist_entry *s = &h->v[next++];
        nas_genotype g, st;
        char key[NAS_GENOTYPE_STR_MAX];
        if ((rc = observe_finals(c, DRAIN_REPLAY, 0, err)) != NAS_OK)
            break;
        if (nas_space_parse(c->space, s->geno, &st, err) != NAS_OK) {
            rc = nas_error_set(err, NAS_EFORMAT, "trial %lld: %s", (long long)s->id, err->msg);
            break;
        }
        c->hist = h->v;
        c->hist_n = next - 1;
        nas_error perr;
        if (nas__ctl_propose_new(c, nas__ctl_known_in_history, &g, key, &perr) != NAS_OK ||
            strcmp(key, s->key) != 0)
            ++*mismatch;
        if ((rc = nas_fid_add(c->fid, s->id, &job, err)) != NAS_OK ||
            (rc = ft_add(c, s->id, &st, job.bracket, err)) != NAS_OK)
            break;
        rc = replay_job(c, s, &c->ft[c->nft - 1], &job, fs, err);
    }
    c->hist = NULL;
    c->hist_n = 0;
    return rc;
}

int nas__ctl_fid_replay(ctl *c, int *mismatch, nas_error *err)
{
    *mismatch = 0;
    fid_store fs = {{0}, NULL, 0};
    int64_t nb201_until; /* a multi-fidelity experiment (schema 5) has none */
    int rc = nas__ctl_replay_load(c, &fs.h, &nb201_until, err);
    if (rc == NAS_OK)
        rc = nas_store_rung_list(c->st, c->exp, &fs.rv, &fs.nr, err);
    c->n_hist = fs.h.n;
    if (rc == NAS_OK)
        rc = replay_jobs(c, &fs, mismatch, err);
    /* the live best counts every stored rung, also those the replayed schedule
     * has not reached (an extension regroups the last, truncated bracket), as
     * the summary's best (best_from_store) does */
    for (int i = 0; rc == NAS_OK && i < fs.nr; i++) {
        const hist_entry *s = stored(&fs.h, fs.rv[i].trial_id);
        if (!s)
            continue;
        nas_trial_result res = s->res;
        res.status = NAS_OK;
        res.val_accuracy = fs.rv[i].val_accuracy;
        res.train_loss = fs.rv[i].loss;
        nas__ctl_note_best(c, s->id, s->geno, nas_search_score(c->cfg, &res, NULL, 0),
                           res.val_accuracy, (int)fs.rv[i].fidelity);
    }
    /* A file written before the rung and the trial's result were one
     * transaction may hold a rung whose trial row a kill left unfinished:
     * finish it from the rung (nas_store_trial_finish_rung writes both). */
    for (int i = 0; rc == NAS_OK && i < fs.h.n; i++) {
        fid_trial *t = ft_find(c, fs.h.v[i].id);
        if (t && t->has_res && !busy(c, t->id) && fs.h.v[i].status != NAS_TRIAL_DONE &&
            fs.h.v[i].status != NAS_TRIAL_FAILED)
            rc = nas_store_trial_finish(c->st, t->id, &t->res,
                                        nas_search_score(c->cfg, &t->res, NULL, 0), NULL, err);
    }
    free(fs.h.v);
    free(c->fid_rv); /* kept for the live loop's promotions (start_job) */
    c->fid_rv = fs.rv;
    c->fid_nr = fs.nr;
    return rc;
}
