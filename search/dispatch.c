/*
 * search/dispatch.c - the dispatch step: the next trial for an idle worker
 * (a retry after a transient failure, a trial an earlier run left
 * unfinished, or a new proposal), marked running in the store and submitted
 * to the pool; and the job a worker runs for it (nas__ctl_job: the latency
 * constraint, then the evaluator).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* access: a promotion's checkpoint */
#include "nas/array.h"
#include "nas/trainer.h" /* nas_train_checkpoint_progress */
#include "search/controller_impl.h"
#include "search/pool_msg.h" /* nas__fault_applies: the NAS_FAULT test hook */

/* ---- the worker's job ----------------------------------------------------------- */

int nas__ctl_job(void *ctx, const nas_pool_job *job, nas_pool_progress_fn progress, void *pctx,
                 nas_trial_result *res)
{
    ctl *c = ctx;
    if (job->budget > 0) { /* issue 17: a rung, from and to the trial's checkpoint */
        char ck[NAS_PATH_MAX + 64];
        nas__ctl_fid_ckpt(c, job->id, ck, sizeof ck);
        if (job->from > 0 && access(ck, R_OK) != 0) { /* issue 29: never from 0 unsaid */
            memset(res, 0, sizeof *res);
            res->status = NAS_ENOTFOUND;
            res->val_accuracy = res->train_loss = res->latency_ms = res->train_seconds = NAN;
            res->test_accuracy = -1;
            snprintf(res->error, sizeof res->error,
                     "checkpoint %s (%d epochs) not found on this worker: DB.ckpt/ must be on a "
                     "file system every worker sees (docs/cluster.md)", ck, job->from);
            return NAS_ENOTFOUND;
        }
        nas_evaluator_set_fidelity(c->ev, job->budget, c->cfg->search.fidelity.max, ck);
    } else {
        nas_evaluator_set_fidelity(c->ev, 0, 0, NULL);
    }
    if (c->weights_dir[0]) { /* keep_weights (issue 5): the evaluator saves the trained net */
        char wp[NAS_PATH_MAX + 64];
        snprintf(wp, sizeof wp, "%s/trial-%lld.npz", c->weights_dir, (long long)job->id);
        nas_evaluator_set_weights_path(c->ev, wp);
    }
    /* NAS_FAULT slow@TRIAL (search/pool_msg.h): this job's latency measurements
     * read 1e6 ms, as on a machine that is busy at that moment */
    const char *fault = getenv("NAS_FAULT");
    int slow = fault && nas__fault_applies(fault, "slow", job);
    double pre_lat = NAN; /* issue 6: latency constraint checked before training */
    /* a promotion (job->from > 0) continues a trial admitted at its first
     * rung: measured again, noise could reject a trained trial's promotion */
    if (c->cfg->constraints.latency_ms > 0 && nas_evaluator_kind_trains(c->cfg) &&
        job->from == 0) {
        nas_error lerr;
        if (nas_evaluator_latency(c->ev, &job->genotype, &pre_lat, &lerr) != NAS_OK)
            pre_lat = NAN; /* measured again after training; nas_search_score judges that */
        else if (slow)
            pre_lat = 1e6;
        if (pre_lat > c->cfg->constraints.latency_ms) {
            memset(res, 0, sizeof *res); /* rejected: measured, not trained */
            res->status = NAS_OK;
            res->val_accuracy = NAN;
            res->test_accuracy = -1;
            res->train_loss = NAN;
            res->train_seconds = NAN;
            res->latency_ms = pre_lat;
            nas_net_desc d;
            if (nas_evaluator_net_desc(c->ev, NULL, &job->genotype, &d) == NAS_OK)
                nas_count_net(&d, &res->macs, &res->params, NULL, NULL);
            if (progress)
                progress(pctx, 1.0, NAN);
            return NAS_OK;
        }
    }
    int rc = nas_evaluator_run(c->ev, &job->genotype, progress, pctx, res);
    if (rc == NAS_OK && slow)
        res->latency_ms = 1e6;
    if (rc == NAS_OK && isfinite(pre_lat))
        res->latency_ms = pre_lat; /* the measurement that admitted it */
    if (rc == NAS_OK && !isfinite(res->val_accuracy)) {
        res->status = NAS_ENAN;
        snprintf(res->error, sizeof res->error, "validation accuracy is not a number");
        rc = NAS_ENAN;
    }
    return rc;
}

/* ---- the dispatch --------------------------------------------------------------- */

/* The next re-queued trial (left unfinished by an earlier run) into *f,
 * with the retries it used before. Errors: NAS_EFORMAT (its genotype). */
static int next_requeued(ctl *c, flight *f, nas_error *err)
{
    hist_entry *e = &c->requeue[c->requeue_pos++];
    nas_error perr;
    if (nas_space_parse(c->space, e->geno, &f->g, &perr) != NAS_OK)
        return nas_error_set(err, NAS_EFORMAT, "trial %lld: %s", (long long)e->id, perr.msg);
    f->trial = e->id;
    snprintf(f->geno, sizeof f->geno, "%s", e->geno);
    f->failures = nas__ctl_retries_get(c, e->id); /* issue 4: retries used before a restart */
    return NAS_OK;
}

/* Where the rung job f starts, in the scheduler's unit: the epochs its
 * trial's checkpoint holds, which the worker continues from. A job an
 * earlier run (or a failed attempt) left part-way has a checkpoint beyond
 * the rung it started from (a promotion 3 -> 9 stopped after epoch 8 goes
 * on from 8, not 3), or below it (a promotion whose checkpoint was gone
 * trained from 0: stopped after epoch 2, it goes on from 2). f->from
 * otherwise: no checkpoint (from 0, or the
 * worker fails the job), one it cannot read (the worker says why), the
 * images unit (whole epochs do not tell the images). */
static int ckpt_from(ctl *c, const flight *f)
{
    if (c->table || c->cfg->search.fidelity.resource == NAS_FIDELITY_IMAGES)
        return f->from;
    char ck[NAS_PATH_MAX + 64];
    nas__ctl_fid_ckpt(c, f->trial, ck, sizeof ck);
    int epochs = 0;
    int64_t steps = 0;
    nas_error err;
    if (access(ck, R_OK) != 0 || nas_train_checkpoint_progress(ck, &epochs, &steps, &err) != NAS_OK)
        return f->from;
    return epochs <= f->budget ? epochs : f->from;
}

int nas__ctl_dispatch(ctl *c, flight *f, int how, nas_error *err)
{
    int rerun = how != START_NEW, retry = how == START_RETRY;
    f->worker = nas_pool_next_worker(c->pool);
    char device[48]; /* issue 31: "table", "zero-cost:synflow" or the backend */
    nas_evaluator_kind_device(c->cfg, device, sizeof device);
    int rc = nas_store_trial_start(c->st, f->trial, f->worker, device, err);
    if (rc != NAS_OK)
        return rc;
    if (!retry && how != START_PROMOTE) /* issue 4: a retry keeps its "trial k/N" */
        f->k = c->finished + c->nfl + 1;
    f->t0 = nas__ctl_now();
    if ((rc = nas_array_grow(&c->fl, c->nfl, &c->cap_fl, 8, sizeof *c->fl, err)) != NAS_OK)
        return rc;
    c->fl[c->nfl++] = *f;
    char used[96] = ""; /* issue 4: a re-queued trial that already failed transiently */
    if (rerun && !retry && f->failures > 0)
        snprintf(used, sizeof used, " (%d of workers.max_retries = %d retries used before)",
                 f->failures, c->cfg->workers.max_retries);
    else if (how == START_NEW && c->enq_last) /* issue 33 */
        snprintf(used, sizeof used, c->enq_last == 2 ? " (warm-up)" : " (enqueued)");
    /* issue 22: the label is the database trial id (what `nas show` and
     * `nas export --trial` take), then the budget progress */
    const char *verb = nas_evaluator_kind_prepares(c->cfg) ? "eval  " /* issue 32: a subnet */
                       : c->table                         ? "lookup"
                                                          : "train ";
    if (f->budget > 0) /* issue 17: a rung of multi-fidelity search */
        nas__ctl_say(c, "[trial %lld, rung %d] %s %s to %d %s (from %d; worker %d)",
                     (long long)f->trial, f->rung, how == START_PROMOTE ? "promote" : verb,
                     f->geno, f->budget, nas__ctl_fid_unit(c), ckpt_from(c, f), f->worker);
    else if (nas_pool_size(c->pool) > 1) /* issue 7: GPU slots set the pool size */
        nas__ctl_say(c, "[trial %lld, %d/%d] %s %s (worker %d)%s", (long long)f->trial, f->k,
                     c->budget, rerun ? "re-run" : verb, f->geno, f->worker, used);
    else
        nas__ctl_say(c, "[trial %lld, %d/%d] %s %s%s", (long long)f->trial, f->k, c->budget,
                     rerun ? "re-run" : verb, f->geno, used);
    nas__ctl_draw_status(c);
    nas_pool_job job = {f->trial, f->g, 0, f->budget, f->from};
    nas_store_trial stt; /* issue 4: the attempt number (the NAS_FAULT hook keys on it) */
    nas_error aerr;
    if (nas_store_trial_get(c->st, f->trial, &stt, &aerr) == NAS_OK)
        job.attempt = stt.attempt;
    rc = nas_pool_submit(c->pool, &job, NULL, err);
    if (rc != NAS_OK) {
        c->nfl--;
        nas_error ie;
        nas_store_trial_interrupt(c->st, f->trial, err->msg, &ie);
        return rc;
    }
    return NAS_OK;
}

int nas__ctl_start_next(ctl *c, nas_error *err)
{
    flight f;
    memset(&f, 0, sizeof f);
    f.loss = NAN;
    int how, rc = NAS_OK;
    if (c->nretry > 0) { /* issue 4: a retry after a transient worker failure */
        f = c->retry[--c->nretry];
        f.loss = NAN;
        f.fraction = 0;
        how = START_RETRY;
    } else if (c->requeue_pos < c->nrequeue) {
        how = START_REQUEUED;
        rc = next_requeued(c, &f, err);
    } else {
        how = START_NEW;
        rc = nas__ctl_propose(c, &f, err);
    }
    if (rc != NAS_OK)
        return rc;
    return nas__ctl_dispatch(c, &f, how, err);
}
