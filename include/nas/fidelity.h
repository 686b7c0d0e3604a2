/*
 * nas/fidelity.h - the multi-fidelity scheduler (issue 17,
 * docs/multi-fidelity.md): which budget each trial trains for and which
 * trials are promoted to a larger one. Pure bookkeeping: no I/O, no
 * clock, no randomness, so the same results in the same order give the
 * same decisions (the controller rebuilds it from the store after a kill).
 *
 * Rungs k = 0 .. s_max, s_max = floor(log_eta(R / r)) for the smallest
 * budget r (search.fidelity.min), the full budget R (max) and the
 * reduction factor eta. Rung k's budget is r eta^k for k < s_max and R at
 * the top rung; when R / r is a power of eta that is R eta^(k - s_max),
 * both papers' definition.
 *
 *  - Successive halving (Jamieson & Talwalkar, "Non-stochastic Best Arm
 *    Identification and Hyperparameter Optimization", AISTATS 2016),
 *    as Hyperband's most aggressive bracket s = s_max, repeated: eta^s_max
 *    trials at rung 0, the best floor(n_i / eta) of each rung promoted.
 *  - Hyperband (Li et al., "Hyperband: A Novel Bandit-Based Approach to
 *    Hyperparameter Optimization", JMLR 18, 2017, Algorithm 1): brackets
 *    s = s_max, s_max - 1, ..., 0, then again; bracket s starts
 *    n = ceil((s_max + 1) / (s + 1) eta^s) trials at rung s_max - s
 *    (budget R eta^-s); stage i runs n_i = floor(n eta^-i) of them at rung
 *    s_max - s + i and keeps the best floor(n_i / eta). A stage is promoted
 *    when all its results are in (synchronous).
 *  - ASHA (Li et al., "A System for Massively Parallel Hyperparameter
 *    Tuning", MLSys 2020, Algorithm 2, minimum early-stopping rate 0): on
 *    every request, from the highest rung down, promote the best trial of
 *    rung k that is in the top floor(|rung k| / eta) of rung k's completed
 *    results and was not promoted yet; else start a new trial at rung 0.
 *    No worker waits for a rung to fill.
 *
 * A trial continues from its checkpoint when promoted, so a promotion from
 * rung k to k + 1 costs budget(k + 1) - budget(k) (nas_fid_spent counts
 * that); Hyperband's and ASHA's papers count budget(k + 1).
 *
 * Ranking within a rung: one objective, by its value (maximised or
 * minimised as the objective says), ties by the earlier trial; several
 * objectives, by non-dominated sorting (NSGA-II, nas_pareto_sort): front
 * rank, then crowding distance (larger first), then the first objective,
 * then the earlier trial. A failed trial ranks last and is never promoted.
 */
#ifndef NAS_FIDELITY_H
#define NAS_FIDELITY_H

#include <stdint.h>
#include "nas/status.h"
#include "nas/space.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NAS_FID_MAX_RUNGS 32 /* s_max + 1 for R / r up to 2^31 at eta = 2 */
#define NAS_FID_MAX_OBJ 4

/* s_max = floor(log_eta(R / r)), computed in integers (0 when R < r eta). */
int nas_fid_smax(int64_t r, int64_t R, int eta);

/* Budget of rung k (0 .. s_max): r eta^k, and R at k = s_max. */
int64_t nas_fid_rung_budget(int64_t r, int64_t R, int eta, int k);

/* Hyperband's bracket size n = ceil((s_max + 1) / (s + 1) eta^s), in
 * integers (Li et al. 2017, Algorithm 1, line 3). */
int64_t nas_fid_bracket_n(int s_max, int s, int eta);

/* Stage i of bracket s: n_i = floor(n eta^-i) trials (Algorithm 1, line 6). */
int64_t nas_fid_stage_n(int s_max, int s, int eta, int i);

typedef struct nas_fid_opts {
    nas_fidelity_scheduler kind; /* SH, HYPERBAND or ASHA (NONE is NAS_EINVAL) */
    int64_t min, max;            /* r and R, in the resource's unit */
    int eta;                     /* >= 2 */
    int64_t max_new;             /* trials the scheduler may start (search.trials); <= 0: no limit */
    int dims;                    /* objectives, 1 .. NAS_FID_MAX_OBJ */
    int maximize[NAS_FID_MAX_OBJ];
} nas_fid_opts;

typedef struct nas_fid nas_fid; /* opaque */

/* Create a scheduler. Errors: NAS_EINVAL (kind none, eta < 2, min < 1,
 * max < min eta, dims out of range), NAS_ENOMEM. */
int nas_fid_create(const nas_fid_opts *o, nas_fid **out, nas_error *err);
void nas_fid_destroy(nas_fid *f); /* NULL is a no-op */

/* Rungs (s_max + 1); a job carries its rung's budget (nas_fid_job.to). */
int nas_fid_rungs(const nas_fid *f);

typedef enum nas_fid_kind {
    NAS_FID_NEW = 0,  /* start a new trial at `rung` (nas_fid_add its id) */
    NAS_FID_PROMOTE,  /* continue `trial` from rung - 1 to `rung` */
    NAS_FID_WAIT,     /* nothing to start until a result arrives */
    NAS_FID_DONE      /* nothing left to start, nothing running */
} nas_fid_kind;

typedef struct nas_fid_job {
    nas_fid_kind kind;
    int64_t trial;  /* PROMOTE: the trial; NEW: -1 */
    int rung;       /* the rung it runs to */
    int bracket;    /* 0, 1, ...: the bracket (SH, Hyperband), 0 for ASHA */
    int64_t from;   /* budget already trained (0 for NEW) */
    int64_t to;     /* budget after this job */
} nas_fid_job;

/* The next job. A NEW job must be followed by nas_fid_add (or
 * nas_fid_no_new when no trial can be proposed) before the next call;
 * a PROMOTE job is counted as running at its rung at once. */
void nas_fid_next(nas_fid *f, nas_fid_job *job);

/* The new trial `trial` (ids increase) runs job `job` (from nas_fid_next,
 * kind NEW). Errors: NAS_EINVAL (not a NEW job, a known id), NAS_ENOMEM. */
int nas_fid_add(nas_fid *f, int64_t trial, const nas_fid_job *job, nas_error *err);

/* ASHA's replay of a resumed search: undo the promotion `job` just
 * returned by nas_fid_next (its trial is back at its rung, not promoted,
 * its cost refunded) and promote the trial no more until nas_fid_release.
 * The replay reports the stored trials in id order, not in the order their
 * results came in; a promotion the stored run had not made (no stored
 * rung, not under way) waits until all stored trials are back. Errors:
 * NAS_EINVAL (not ASHA, not a promotion that runs now). */
int nas_fid_hold(nas_fid *f, const nas_fid_job *job);

/* Let the held trials be promoted again; returns how many were held. */
int nas_fid_release(nas_fid *f);

/* No more new trials (the budget of trials is spent, or the strategy
 * found nothing new): the current bracket goes on with the trials it has. */
void nas_fid_no_new(nas_fid *f);

/* Trial `trial` finished rung `rung`: ok 1 with its objective values
 * obj[dims] (NaN never ranks above a number), ok 0 failed (never promoted).
 * Errors: NAS_EINVAL (an unknown trial, a rung it was not running). */
int nas_fid_report(nas_fid *f, int64_t trial, int rung, int ok, const double *obj,
                   nas_error *err);

/* 1 when `trial` may still be promoted (its checkpoint is needed), 0 when
 * it reached the top rung, failed, or lost its rung's ranking for good
 * (SH/Hyperband: its stage was promoted without it; ASHA: once no trial
 * can join its rung - no new trials, none running at or below it, none
 * below it still to be promoted - and it is outside the top 1/eta). */
int nas_fid_promotable(const nas_fid *f, int64_t trial);

/* Highest rung `trial` has a result at (-1: none or unknown). */
int nas_fid_top_rung(const nas_fid *f, int64_t trial);

/* Resource handed out so far: a new trial's budget plus, for each
 * promotion, the difference of the two rungs' budgets, plus what
 * nas_fid_charge added. */
int64_t nas_fid_spent(const nas_fid *f);

/* Issue 29: add `extra` (>= 0) to the resource handed out: a promotion
 * whose checkpoint was missing trained from 0, not from its rung's
 * budget (the controller charges that budget again). */
void nas_fid_charge(nas_fid *f, int64_t extra);

/* SH / Hyperband: the bracket being filled (0, 1, ...; -1 before the
 * first job); ASHA: 0. A trial of an earlier bracket can no longer be
 * promoted. */
int nas_fid_bracket(const nas_fid *f);

/* Trials started (nas_fid_add) and trials running a job now. */
int64_t nas_fid_started(const nas_fid *f);
int nas_fid_running(const nas_fid *f);

#ifdef __cplusplus
}
#endif
#endif /* NAS_FIDELITY_H */
