/*
 * search/schedule.c - the observe step and the ordered schedule (see
 * search/controller.c's header comment): the trials proposed and not yet
 * observed by the strategy, in trial-id order; when the strategy observes
 * the finished ones (nas__ctl_drain); and the store-level counts of
 * finished trials (budget, best, latency rejections).
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
        nas__ctl_front_add(c, res);
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
