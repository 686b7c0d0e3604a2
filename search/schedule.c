/*
 * search/schedule.c - the observe step and the ordered schedule (see
 * search/controller.c's header comment): the trials proposed and not yet
 * observed by the strategy, in trial-id order; when the strategy observes
 * the finished ones (nas__ctl_drain); the store-level counts of finished
 * trials (budget, best, latency rejections); how a result is judged
 * (nas__ctl_judge) and why proposals end (nas__ctl_no_feasible,
 * nas__ctl_start_status).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nas/array.h"
#include "search/controller_impl.h"

/* A done trial rejected by constraints.latency_ms before training: recorded
 * with its measured latency and no accuracy; not counted in the budget. */
int nas__ctl_rejected(const nas_trial_result *res)
{
    return res->status == NAS_OK && !isfinite(res->val_accuracy);
}

void nas__ctl_note_best(ctl *c, int64_t trial, const char *geno, double score, double val,
                        int fidelity)
{
    if (!isfinite(score))
        return;
    if (c->best_trial < 0 || fidelity > c->best_fid ||
        (fidelity == c->best_fid && score > c->best_score)) {
        c->best_trial = trial;
        c->best_score = score;
        c->best_val = val;
        c->best_fid = fidelity;
        snprintf(c->best_geno, sizeof c->best_geno, "%s", geno);
    }
}

/* ---- the ordered schedule ------------------------------------------------------ */

int nas__ctl_pend_len(const ctl *c)
{
    return c->pq_n - c->pq_head;
}

/* Append trial `trial` (the newest proposal) to the unobserved trials;
 * res != NULL: its outcome is already stored (replay). */
int nas__ctl_pend_push(ctl *c, int64_t trial, const nas_genotype *g, const nas_trial_result *res,
                       nas_error *err)
{
    if (c->pq_head > 0 && c->pq_head == c->pq_n)
        c->pq_head = c->pq_n = 0;
    if (c->pq_n == c->pq_cap) {
        if (c->pq_head > 0) { /* reuse the observed prefix */
            memmove(c->pq, c->pq + c->pq_head, (size_t)nas__ctl_pend_len(c) * sizeof *c->pq);
            c->pq_n -= c->pq_head;
            c->pq_head = 0;
        } else {
            int rc = nas_array_grow(&c->pq, c->pq_n, &c->pq_cap, 16, sizeof *c->pq, err);
            if (rc != NAS_OK)
                return rc;
        }
    }
    pend *p = &c->pq[c->pq_n++];
    memset(p, 0, sizeof *p);
    p->trial = trial;
    p->g = *g;
    if (res) {
        p->final = 1;
        p->res = *res;
    }
    return NAS_OK;
}

pend *nas__ctl_pend_find(ctl *c, int64_t trial)
{
    for (int i = c->pq_head; i < c->pq_n; i++)
        if (c->pq[i].trial == trial)
            return &c->pq[i];
    return NULL;
}

/* The store-level counts of one finished trial (budget, best, rejects):
 * updated when its result is recorded, whatever the strategy has seen. */
void nas__ctl_account(ctl *c, int64_t trial, const char *geno, const nas_trial_result *res,
                      double score, int diverged)
{
    if (nas__ctl_rejected(res)) {
        c->n_rejected++;
        if (!(c->min_latency <= res->latency_ms))
            c->min_latency = res->latency_ms;
        return;
    }
    c->finished++;
    if (!c->fid) /* the status line's front, with the trial; multi-fidelity: each rung */
        nas__ctl_front_add(c, res, 0);
    if (res->status == NAS_OK) {
        c->n_done++;
        c->n_diverged += diverged != 0;
        nas__ctl_note_best(c, trial, geno, score, res->val_accuracy, 0);
    } else {
        c->n_failed++;
    }
}

/* The strategy observes one finished trial; the latency-miss count and
 * the displayed Pareto front follow (MAX_LATENCY_MISSES ends a live search). */
int nas__ctl_observe(ctl *c, const nas_genotype *g, const nas_trial_result *res, int mode,
                     nas_error *err)
{
    nas_strategy_observe_result(c->strat, g, res);
    if (nas__ctl_rejected(res)) {
        c->lat_miss++;
        if (mode == DRAIN_LIVE && c->lat_miss >= MAX_LATENCY_MISSES)
            return nas__ctl_no_feasible(c, err);
    } else {
        c->lat_miss = 0;
    }
    return NAS_OK;
}

/*
 * Let the strategy observe the finished trials at the head of the
 * unobserved ones, in trial order, as far as the schedule allows: with
 * width N, proposal k comes after exactly the observations of trials
 * 1..k-N, so the head is observed only while N trials are unobserved
 * (DRAIN_REPLAY, DRAIN_LIVE), or once no proposal can follow (DRAIN_LIVE:
 * the budget is spent or the strategy exhausted; DRAIN_ALL: the search
 * ends). A trial that is not final (in flight, waiting for a retry,
 * re-queued) stops it: later results wait for it. Live, the
 * MAX_LATENCY_MISSES-th latency rejection in a row (in observation order,
 * so the same in every run) ends the search with NAS_EINFEASIBLE.
 */
int nas__ctl_drain(ctl *c, int mode, nas_error *err)
{
    while (c->pq_head < c->pq_n && c->pq[c->pq_head].final) {
        int no_more = c->exhausted || c->finished >= c->budget;
        if (mode != DRAIN_ALL && nas__ctl_pend_len(c) < c->width &&
            !(mode == DRAIN_LIVE && no_more))
            break;
        pend *p = &c->pq[c->pq_head++];
        int rc = nas__ctl_observe(c, &p->g, &p->res, mode, err);
        if (rc != NAS_OK)
            return rc;
    }
    return NAS_OK;
}

/* workers.ordered = false: observe trial p's result now, whatever is still
 * unobserved before it, and drop it from the unobserved trials. */
int nas__ctl_observe_unordered(ctl *c, pend *p, const nas_trial_result *res, int mode,
                               nas_error *err)
{
    nas_genotype g = p->g;
    int i = (int)(p - c->pq);
    memmove(&c->pq[i], &c->pq[i + 1], (size_t)(c->pq_n - i - 1) * sizeof *c->pq);
    c->pq_n--;
    return nas__ctl_observe(c, &g, res, mode, err);
}

/* ---- the judgement of a result and the end of the proposals ---------------------- */

/* See controller_impl.h (the record step's judgement, shared with the
 * multi-fidelity record step, search/fidelity_run.c). */
int nas__ctl_judge(ctl *c, const nas_trial_result *res, int chance_test, char *note, size_t n,
                   double *score)
{
    char why[320]; /* the longest reason, the chance-level one, is ~240 bytes */
    *score = nas_search_score(c->cfg, res, note, 256); /* room for what follows */
    if (nas__ctl_rejected(res)) {
        size_t len = strlen(note);
        snprintf(note + len, n - len, "%s(measured before training; not trained)",
                 len ? " " : "infeasible ");
    }
    /* issue 22: a done trial whose training diverged stays done, flagged */
    int diverged = nas_search_diverged(c->cfg, c->classes, chance_test ? c->n_valid : -1, res,
                                       why, sizeof why);
    if (diverged) {
        size_t len = strlen(note);
        snprintf(note + len, n - len, "%s%s", len ? "; " : "", why);
    }
    return diverged;
}

/* NAS_EINFEASIBLE with what the constraints rejected. */
int nas__ctl_no_feasible(ctl *c, nas_error *err)
{
    const nas_config *cfg = c->cfg;
    const char *what =
        c->n_done > 0 ? "no more feasible architectures" : "no feasible architecture";
    if (c->n_rejected > 0 && c->n_infeasible == 0)
        return nas_error_set(err, NAS_EINFEASIBLE,
                             "%s: constraints.latency_ms = %g but the fastest of the %d candidates "
                             "measured has %.3f ms (%d in a row over the limit)",
                             what, cfg->constraints.latency_ms, c->n_rejected, c->min_latency,
                             c->lat_miss);
    if (cfg->constraints.mmacs > 0 && c->min_macs >= 0 &&
        (double)c->min_macs / 1e6 > cfg->constraints.mmacs)
        return nas_error_set(err, NAS_EINFEASIBLE,
                             "%s: constraints.mmacs = %g but the smallest candidate seen has "
                             "%.3f MMACs (%ld proposals rejected before training)",
                             what, cfg->constraints.mmacs, (double)c->min_macs / 1e6,
                             c->n_infeasible);
    if (cfg->constraints.params > 0 && c->min_params >= 0 &&
        (double)c->min_params > cfg->constraints.params)
        return nas_error_set(err, NAS_EINFEASIBLE,
                             "%s: constraints.params = %g but the smallest candidate seen has "
                             "%lld parameters (%ld proposals rejected before training)",
                             what, cfg->constraints.params, (long long)c->min_params,
                             c->n_infeasible);
    return nas_error_set(err, NAS_EINFEASIBLE,
                         "%s: strategy %s found nothing new within constraints.mmacs = %g, "
                         "constraints.params = %g (%ld proposals rejected before training)",
                         what, nas_strategy_name(c->strat), cfg->constraints.mmacs,
                         cfg->constraints.params, c->n_infeasible);
}

/* See controller_impl.h (moved here from controller.c so that the
 * multi-fidelity loop does not call back into it, issue 29). */
int nas__ctl_start_status(ctl *c, int rc, nas_error *err)
{
    if (rc == NAS_EINFEASIBLE && c->n_done == 0 && c->nfl == 0 &&
        (c->n_infeasible > 0 || c->n_rejected > 0))
        return rc; /* issue 6: nothing in the space meets the constraints */
    if (rc == NAS_EINFEASIBLE) {
        nas__ctl_say(c, "nas: %s", err->msg);
        c->exhausted = 1;
        nas_error_clear(err);
        rc = NAS_OK;
    }
    return rc;
}
