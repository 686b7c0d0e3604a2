/*
 * search/record.c - the record step: a result back from a worker is stored
 * at once (done, failed, or latency-rejected; a diverged training is
 * flagged), counted, handed to the schedule for the strategy to observe in
 * its turn, and reported; a transient worker failure is retried instead
 * (workers.max_retries), and a worker lost to a stop interrupts its trial.
 * A stop kills the trials in flight and marks them interrupted
 * (nas__ctl_interrupt_flights).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* access: the kept weights file */
#include "nas/array.h"
#include "search/controller_impl.h"

/* Record trial's saved weights file and (proxy.keep_weights not set, issue
 * 22) keep only the best proxy.keep_top trials' files within
 * proxy.weights_mb. Failures are warnings: the trial's result stands. */
static void keep_weights(ctl *c, int64_t trial)
{
    char wp[NAS_PATH_MAX + 64];
    snprintf(wp, sizeof wp, "%s/trial-%lld.npz", c->weights_dir, (long long)trial);
    nas_error werr;
    if (access(wp, R_OK) != 0)
        return;
    if (nas_store_trial_weights_put(c->st, trial, wp, &werr) != NAS_OK) {
        nas__ctl_say(c, "nas: warning: trial %lld: %s", (long long)trial, werr.msg);
        return;
    }
    const nas_config *cfg = c->cfg;
    if (cfg->proxy.keep_weights < 0 &&
        nas_store_trial_weights_prune(c->st, c->exp, cfg->proxy.keep_top,
                                      cfg->proxy.weights_mb * 1e6, NULL, &werr) != NAS_OK)
        nas__ctl_say(c, "nas: warning: proxy.keep_top: %s", werr.msg);
}

/* Take the flight of trial `job_id` out of the trials in flight into *f.
 * Errors: NAS_EWORKER (no such trial in flight). */
static int take_flight(ctl *c, int64_t job_id, flight *f, nas_error *err)
{
    int idx = -1;
    for (int i = 0; i < c->nfl; i++)
        if (c->fl[i].trial == job_id)
            idx = i;
    if (idx < 0)
        return nas_error_set(err, NAS_EWORKER, "result for unknown trial %lld", (long long)job_id);
    *f = c->fl[idx];
    memmove(&c->fl[idx], &c->fl[idx + 1], (size_t)(c->nfl - idx - 1) * sizeof *c->fl);
    c->nfl--;
    return NAS_OK;
}

/* Mark flight f's trial interrupted (`reason`; counted in c->n_interrupted),
 * or, a multi-fidelity promotion (issue 29), keep its trial done at its
 * last rung (nas__ctl_fid_keep_rung). Returns the store's status. */
static int interrupt_flight(ctl *c, const flight *f, const char *reason, nas_error *err)
{
    int kept = nas__ctl_fid_keep_rung(c, f, reason, err);
    if (kept != 0)
        return kept > 0 ? NAS_OK : -kept;
    int rc = nas_store_trial_interrupt(c->st, f->trial, reason, err);
    if (rc == NAS_OK)
        c->n_interrupted++;
    return rc;
}

/* issue 20: a worker that died while a stop is under way (a signal to
 * the whole process group reaches the workers too; a worker killed
 * while the controller was stopped) cost its trial nothing: the trial
 * is interrupted, its retry count unchanged, and it runs on resume.
 * Returns the store's status. */
static int record_stopped(ctl *c, const flight *f, const nas_trial_result *res, nas_error *err)
{
    char reason[sizeof res->error + 64];
    snprintf(reason, sizeof reason, "interrupted: the search was stopped (%s)", res->error);
    int irc = interrupt_flight(c, f, reason, err);
    char tag[64];
    nas__ctl_say(c, "[%s] interrupted %s (%s; no retry spent)", nas__ctl_tag(c, f, tag, sizeof tag),
                 f->geno, res->error);
    return irc;
}

/* issue 4: a transient failure (the worker process failed: crashed,
 * killed, frozen, broke the protocol: NAS_EWORKER) is run again, up to
 * workers.max_retries times; NaN, timeouts and evaluator errors are not.
 * The count is stored first, so the retry it costs is not given again
 * after a restart; the trial then waits in c->retry for a worker.
 * Errors: the store's, NAS_ENOMEM. */
static int record_retry(ctl *c, flight *f, const nas_trial_result *res, nas_error *err)
{
    f->failures++;
    int prc = nas__ctl_retries_set(c, f->trial, f->failures, err);
    if (prc != NAS_OK)
        return prc;
    if ((prc = nas_array_grow(&c->retry, c->nretry, &c->cap_retry, 4, sizeof *c->retry, err)) !=
        NAS_OK)
        return prc;
    char tag[64];
    nas__ctl_say(c, "[%s] RETRY  %s: %s (retry %d of workers.max_retries = %d)",
                 nas__ctl_tag(c, f, tag, sizeof tag), f->geno, res->error, f->failures,
                 c->cfg->workers.max_retries);
    c->retry[c->nretry++] = *f;
    return NAS_OK;
}

/* Store trial f's final result (score, note, the diverged flag), count it
 * and hand it to the schedule: observed now (workers.ordered = false) or
 * in its turn (nas__ctl_drain). `note` (n bytes, 512) gets the note stored
 * with it. Errors: the store's, NAS_EWORKER (a trial never proposed), the
 * observation's (NAS_EINFEASIBLE after MAX_LATENCY_MISSES). */
static int record_result(ctl *c, const flight *f, const nas_trial_result *res, char *note, size_t n,
                         nas_error *err)
{
    double score;
    int diverged = nas__ctl_judge(c, res, 1, note, n, &score);
    int rc = nas_store_trial_finish_flagged(c->st, f->trial, res, score, note,
                                            diverged ? "diverged" : NULL, err);
    if (rc != NAS_OK)
        return rc;
    /* Stored at once; the strategy observes it in trial order (drain). */
    pend *p = nas__ctl_pend_find(c, f->trial);
    if (!p)
        return nas_error_set(err, NAS_EWORKER, "trial %lld finished but was never proposed",
                             (long long)f->trial);
    nas__ctl_account(c, f->trial, f->geno, res, score, diverged);
    if (c->cfg->workers.ordered) {
        p->final = 1;
        p->res = *res;
    } else if ((rc = nas__ctl_observe_unordered(c, p, res, DRAIN_LIVE, err)) != NAS_OK) {
        return rc;
    }
    return NAS_OK;
}

/* The line of a recorded trial: done (accuracy, cost, note) or FAILED,
 * with the best so far, the elapsed time and the ETA; a multi-fidelity
 * job (issue 17) is labelled by its rung (issue 29: a failed promotion
 * too, it has no ordinal) and shows the trials finished of the budget. */
static void say_result(ctl *c, const flight *f, const nas_trial_result *res, const char *note)
{
    double dt = nas__ctl_now() - f->t0;
    char el[32], eta[48], best[96], tag[64], count[48] = "";
    nas__ctl_eta_text(c, el, sizeof el, eta, sizeof eta);
    nas__ctl_best_text(c, best, sizeof best);
    nas__ctl_tag(c, f, tag, sizeof tag);
    if (f->budget > 0)
        snprintf(count, sizeof count, "%d/%d trials, ", c->finished, c->budget);
    char lat[32] = ""; /* a table look-up measures no latency (issue 22) */
    if (!c->table)
        snprintf(lat, sizeof lat, ", %.3f ms", res->latency_ms);
    if (f->budget > 0 && res->status == NAS_OK) /* issue 17: a rung */
        nas__ctl_say(c, "[%s] done   val_acc %.4f at %d %s | %.1f s%s%s | %s | %selapsed %s, "
                     "ETA %s", tag, res->val_accuracy, f->budget, nas__ctl_fid_unit(c), dt, note[0] ? " | " : "", note,
                     best, count, el, eta);
    else if (res->status == NAS_OK)
        nas__ctl_say(c,
                     "[%s] done   val_acc %.4f | %.2f MMACs, %.1fk params%s | "
                     "%.1f s%s%s | %s | elapsed %s, ETA %s",
                     tag, res->val_accuracy, res->macs / 1e6, res->params / 1e3, lat, dt,
                     note[0] ? " | " : "", note, best, el, eta);
    else
        nas__ctl_say(c, "[%s] FAILED %s%s: %s | %s | %selapsed %s, ETA %s", tag,
                     f->promo ? "promotion of " : "", f->geno,
                     res->error[0] ? res->error : nas_strerror(res->status), best, count, el, eta);
}

int nas__ctl_record(ctl *c, const nas_pool_event *ev, nas_error *err)
{
    flight f;
    int rc = take_flight(c, ev->job_id, &f, err);
    if (rc != NAS_OK)
        return rc;
    const nas_trial_result *res = &ev->result;
    if (res->status == NAS_EWORKER && c->stop && *c->stop)
        return record_stopped(c, &f, res, err);
    if (res->status == NAS_EWORKER && f.failures < c->cfg->workers.max_retries)
        return record_retry(c, &f, res, err);
    char note[512];
    note[0] = '\0';
    nas_trial_result promo;
    if (c->fid) /* a promotion's latency is the one that admitted its trial */
        res = nas__ctl_fid_result(c, &f, res, &promo);
    rc = c->fid ? nas__ctl_fid_record(c, &f, res, note, sizeof note, err) /* issue 17 */
                : record_result(c, &f, res, note, sizeof note, err);
    if (rc != NAS_OK)
        return rc;
    if (nas__ctl_rejected(res)) { /* issue 6: not in the budget; the strategy learns it is
                                     infeasible. Issue 29: labelled by its own count, a
                                     rejection takes no place k/N of the budget */
        nas__ctl_say(c,
                     "[trial %lld, rejection %d] reject %s: %.3f ms > constraints.latency_ms = %g "
                     "(not trained; not counted%s)",
                     (long long)f.trial, c->n_rejected, f.geno, res->latency_ms,
                     c->cfg->constraints.latency_ms,
                     c->fid ? " in the budget, but one of the scheduler's trials" : "");
        return NAS_OK;
    }
    if (c->weights_dir[0] && res->status == NAS_OK) /* keep_weights: record the file */
        keep_weights(c, f.trial);
    if (!c->fid) /* multi-fidelity: a trial counts once, at its first rung (fidelity_run.c) */
        c->ran++;
    say_result(c, &f, res, note);
    return NAS_OK;
}

/* Stop: keep results already back, kill the rest and mark them interrupted
 * (with the waiting retries). Returns how many trials this run has marked
 * interrupted in all (c->n_interrupted), or a store error. */
int nas__ctl_interrupt_flights(ctl *c, const char *reason, nas_error *err)
{
    nas_pool_event ev;
    nas_error werr;
    int rc = NAS_OK;
    while (c->pool && nas_pool_busy(c->pool) > 0 && nas_pool_wait(c->pool, 0, &ev, &werr) == NAS_OK)
        if (rc == NAS_OK)
            rc = nas__ctl_record(c, &ev, err);
    if (c->pool) {
        int64_t ids[1];
        nas_pool_cancel(c->pool, ids, 0);
    }
    for (int i = 0; i < c->nretry; i++) { /* issue 4: retries not yet restarted */
        nas_error ierr;
        interrupt_flight(c, &c->retry[i], reason, &ierr);
        char tag[64];
        nas__ctl_say(c, "[%s] interrupted %s (its retry runs on resume)",
                     nas__ctl_tag(c, &c->retry[i], tag, sizeof tag), c->retry[i].geno);
    }
    c->nretry = 0;
    for (int i = 0; i < c->nfl; i++) {
        nas_error ierr;
        int irc = interrupt_flight(c, &c->fl[i], reason, &ierr);
        if (irc != NAS_OK && rc == NAS_OK) {
            rc = irc;
            *err = ierr;
        }
        char tag[64];
        nas__ctl_say(c, "[%s] interrupted %s%s", nas__ctl_tag(c, &c->fl[i], tag, sizeof tag),
                     c->fl[i].geno,
                     c->fid && c->fl[i].promo
                         ? " (a promotion: the trial stays done at its last rung; the "
                           "promotion runs again on resume)"
                         : "");
    }
    c->nfl = 0;
    /* issue 20: every trial this run interrupted, also those nas__ctl_record()
     * interrupted above and the waiting retries, as the database counts */
    return rc == NAS_OK ? c->n_interrupted : rc;
}
