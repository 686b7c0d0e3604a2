/*
 * search/controller_impl.h - the search controller's private parts: the
 * state nas_search_run shares with its steps (ctl) and the functions of
 * the files that make up the controller. search/controller.c describes the
 * search loop and its schedule; it calls, in order:
 *
 *   search/replay.c    replay the stored trials through the strategy, and
 *                      the schedule widths of earlier runs
 *   search/retries.c   retry counts of transient failures kept in the store
 *   search/propose.c   propose: a new, feasible genotype, inserted pending
 *   search/dispatch.c  dispatch: the next trial (retry, re-queued, new) to
 *                      an idle worker, and the job a worker runs
 *   search/record.c    record: store a result, retry, or interrupt
 *   search/schedule.c  observe: the ordered schedule and the counts; how a
 *                      result is judged and why proposals end
 *   search/progress.c  the messages and the live status line
 *   search/score.c     nas_search_score and nas_search_diverged
 *   search/fidelity_run.c  multi-fidelity search: the scheduler's jobs
 *                      (search/fidelity.c decides), its record step and
 *                      replay; called by controller.c and record.c only
 *   search/files.c     DB.ckpt/ and DB.weights/ beside the database
 *
 * Calls go one way (issue 29): controller.c calls the steps; record.c
 * calls fidelity_run.c, which calls dispatch.c, propose.c, replay.c,
 * schedule.c and files.c; none of them calls controller.c, and no two
 * files call each other.
 *
 * Not a public header: only search/ includes it. The database is written by
 * the controller process only (workers never touch it).
 */
#ifndef NAS_SEARCH_CONTROLLER_IMPL_H
#define NAS_SEARCH_CONTROLLER_IMPL_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include "nas/fidelity.h"
#include "nas/search.h"
#include "nas/store.h"
#include "search/run_lock.h" /* nas__search_run_one: the run lock held across searches */

#define MAX_PROPOSALS 256 /* proposals per new trial before giving up as exhausted */
/* Issue 6 (docs/report.md, "Constraints"): consecutive proposals over the
 * MACs/params constraints, and consecutive trials over the latency
 * constraint (each costs a net build and timed passes), before the search
 * stops with NAS_EINFEASIBLE. */
#define MAX_INFEASIBLE 10000
#define MAX_LATENCY_MISSES 1000

typedef struct flight {
    int64_t trial;
    int k;          /* ordinal in the budget, for "[trial ID, k/N]" */
    int worker;
    nas_genotype g;
    char geno[NAS_GENOTYPE_STR_MAX];
    double t0;
    double fraction;
    double loss;
    int failures; /* issue 4: transient failures of this trial in this run (retries) */
    int rung;     /* issue 17: the rung this job trains to (multi-fidelity) */
    int budget;   /* ... its budget (nas_pool_job.budget; 0: no scheduler) */
    int from;     /* ... the budget its checkpoint holds (0: a new trial, or a promotion
                   * whose checkpoint is gone: it trains from 0) */
    int promo;    /* ... 1: a promotion (its trial is done at its last rung), even from 0 */
} flight;

/* Issue 17: a trial of a multi-fidelity search (search/fidelity_run.c). */
typedef struct fid_trial {
    int64_t id;
    nas_genotype g;
    int bracket;         /* the scheduler's bracket it started in */
    int observed;        /* the strategy has seen it (it can no longer be promoted) */
    int has_res;         /* res: its result at the highest rung finished */
    int accounted;       /* counted in the budget (its first rung finished) */
    int ckpt_gone;       /* its checkpoint was deleted (it can no longer be promoted) */
    nas_trial_result res;
} fid_trial;

typedef struct hist_entry {
    int64_t id;
    nas_trial_status status;
    char key[NAS_GENOTYPE_STR_MAX];       /* functional key of geno (replay) */
    char key_nb201[NAS_GENOTYPE_STR_MAX]; /* NAS-Bench-201's string of geno (replay) */
    char geno[NAS_GENOTYPE_STR_MAX];
    double score;
    double val;
    int diverged;         /* issue 22: trial.flag = 'diverged' */
    int64_t promo_failed; /* issue 29: a done trial whose promotion to this budget failed
                             (its note, NAS__CTL_PROMO_FAILED; it keeps its earlier rung);
                             0: none */
    int64_t promo_stopped; /* a done trial whose promotion to this budget was stopped (Ctrl-C,
                              the time limit: its note, "promotion to N interrupted ..."); 0:
                              none */
    nas_trial_result res; /* the stored result (nas_store_trial_result), for replay */
} hist_entry;

/* The note of a multi-fidelity trial whose promotion failed (a timeout, a
 * NaN at the higher rung, retries exhausted): stored 'done' with its
 * earlier rung's result and this note, which the replay reads back
 * (hist_entry.promo_failed). printf arguments: the budget, the reason. */
#define NAS__CTL_PROMO_FAILED "promotion to %lld failed: %s"

/* The experiment's stored trials in id order, as the replays read them
 * (nas__ctl_replay_load). */
typedef struct hist_vec {
    hist_entry *v;
    int n;
} hist_vec;

/* A trial proposed and not yet observed: in flight, waiting for a retry,
 * re-queued, or finished (final) and waiting for the earlier ones. */
typedef struct pend {
    int64_t trial;
    nas_genotype g;
    int final;             /* res holds its stored outcome */
    nas_trial_result res;
} pend;

typedef struct ctl {
    const nas_config *cfg;
    FILE *log;
    int quiet, tty;
    volatile sig_atomic_t *stop; /* opts->stop, or own_stop when that is NULL */
    volatile sig_atomic_t own_stop;
    double deadline; /* issue 33: search.time_limit's end, on nas__ctl_now's clock (0: none) */
    int time_up;     /* ... it was reached: *stop is NAS_STOP_TIME_LIMIT */
    int tl_cli;      /* nas_run_opts.time_limit_from_cli: the limit is --time-limit's */
    nas_store *st;
    int64_t exp;
    nas_space *space;
    nas_strategy *strat;
    nas_evaluator *ev;
    int classes; /* of the data (issue 16): the chance level of nas_search_diverged */
    int n_valid; /* validation images (data.valid, a count or a fraction): the same */
    nas_pool *pool;
    int budget;
    int finished;          /* done + failed in the experiment */
    int n_done, n_failed;
    int n_diverged;        /* issue 22: done trials flagged diverged */
    int ran;               /* finished in this run */
    double t_start;
    flight *fl;
    int nfl, cap_fl;
    /* re-queued unfinished trials */
    hist_entry *requeue;
    int nrequeue, requeue_pos;
    /* best so far: the highest fidelity reached, then the highest score */
    double best_score, best_val;
    int best_fid; /* its fidelity (multi-fidelity; 0 otherwise) */
    int64_t best_trial;
    char best_geno[NAS_GENOTYPE_STR_MAX];
    /* dedupe lookups against a history prefix (replay) or the store (live) */
    const hist_entry *hist;
    int hist_n;
    int hist_nb201; /* replaying a trial proposed under NAS-Bench-201's string */
    struct hist_index *hist_index; /* issue 29: hash sets of hist's keys (search/replay.c) */
    int db_failed;
    nas_error db_err;
    int status_line; /* a redrawable line is on the terminal */
    char weights_dir[NAS_PATH_MAX]; /* proxy.keep_weights: DB.weights ("" = off) */
    /* issue 6: constraints checked before training, and the Pareto front */
    nas_known_fn inner_known;     /* nas__ctl_propose_new's dedupe, under the feasibility check */
    long n_infeasible;            /* proposals over constraints.mmacs/params (never stored) */
    int64_t min_macs, min_params; /* smallest among them (-1: none) */
    int n_rejected;               /* trials over constraints.latency_ms (not in the budget) */
    int lat_miss;                 /* consecutive ones */
    double min_latency;           /* fastest of them (NaN: none) */
    double *front;                /* objective vectors of the current front, n_front x d */
    int n_front, cap_front;
    int64_t front_fid;            /* the fidelity of the front's trials (0: no scheduler) */
    /* issue 4: trials whose worker failed transiently, to run again */
    flight *retry;
    int nretry, cap_retry;
    /* issue 4: transient failures per trial, kept in the store (strategy_state
     * "controller.retries") so a resumed run does not grant fresh retries */
    int64_t *rt_id;
    int *rt_n;
    int n_rt, cap_rt;
    /* The ordered schedule (search/controller.c's header comment): trials proposed and not yet
     * observed by the strategy, in trial-id order; pq[pq_head..pq_n-1]. */
    int width;     /* N: the pool size */
    pend *pq;
    int pq_head, pq_n, pq_cap;
    int exhausted; /* the strategy found nothing new: no more proposals */
    long rounds_seen; /* model rounds of the strategy already reported (issue 22) */
    int table;        /* evaluator.kind = table: trials are looked up, not trained */
    /* issue 22: the schedule width each stored trial was proposed under
     * (WIDTH_STATE): from trial ordinal w_from[i] on, width w_n[i] */
    int w_from[64], w_n[64];
    int n_w;
    int n_hist; /* trials the experiment had when this run started */
    int n_interrupted; /* trials this run marked interrupted (the summary's count) */
    int n_promo_interrupted; /* issue 29: promotions this run stopped (their trials stay done
                                at their last rung, nas__ctl_fid_keep_rung) */
    /* issue 17: multi-fidelity search (search/fidelity_run.c); fid NULL: none */
    nas_fid *fid;
    char ckpt_dir[NAS_PATH_MAX]; /* DB.ckpt: a checkpoint per trial that may be promoted */
    fid_trial *ft;
    int nft, cap_ft;
    nas_fid_job fid_new;        /* a NEW job waiting for its proposal */
    int fid_has_new;
    flight *fid_requeue;        /* jobs the replay found unfinished */
    int nfid_requeue;
    int fid_done;               /* issue 29: the scheduler has nothing left (NAS_FID_DONE) */
    nas_store_rung *fid_rv;     /* the rungs stored before this run, (trial, fidelity) order: */
    int fid_nr;                 /* a promotion to one of them is reported, not trained */
    /* issue 33: nas_run_opts.on_trial and its user pointer (NULL: none) */
    void (*on_trial)(void *user, nas_store *st, int64_t experiment_id);
    void *on_trial_user;
    /* issue 33: search.enqueue, proposed before the strategy's own */
    nas_genotype enq[NAS_ENQUEUE_MAX];
    int n_enq, enq_pos; /* their count; the next one to propose */
    int enq_last;       /* the last proposal was enqueued (1: proposed_by "enqueued";
                           2: a warm-up genotype, "warmup") */
    /* issue 31: search.warmup's top K genotypes (search/warmup.c), proposed
     * after search.enqueue's as enqueued ones are */
    nas_genotype *warm;
    int n_warm, warm_pos;
} ctl;

/* The unit of a multi-fidelity budget in log lines: "images" when
 * search.fidelity.resource = "images", else "epochs". */
static inline const char *nas__ctl_fid_unit(const ctl *c)
{
    return c->cfg->search.fidelity.resource == NAS_FIDELITY_IMAGES ? "images" : "epochs";
}

/* Issue 31 (search/warmup.c): score search.warmup.candidates genotypes
 * sampled with PCG32(seed, stream "warmup") with search.warmup.proxy -
 * reading the experiment's zc_score cache first, writing each new score to
 * it - and keep the `top` best (ties: the earlier sample) in c->warm. Run
 * once the experiment exists and before the replay; proxy "" does
 * nothing. Errors: the scorer's (nas_zc_scorer_create), the store's. */
int nas__ctl_warmup(ctl *c, nas_error *err);

/* Issue 33: a trial's result was recorded (nas__ctl_record returned
 * NAS_OK): call nas_run_opts.on_trial, if any. search/controller.c. */
void nas__ctl_trial_recorded(ctl *c);

/* nas__ctl_drain's modes (search/schedule.c) */
enum { DRAIN_REPLAY, DRAIN_LIVE, DRAIN_ALL };

/* Where a trial handed to nas__ctl_dispatch comes from. */
enum {
    START_NEW,      /* a new proposal (nas__ctl_propose) */
    START_REQUEUED, /* left unfinished by an earlier run (replay) */
    START_RETRY,    /* issue 4: again after a transient worker failure */
    START_PROMOTE   /* issue 17: a promoted trial continues from its checkpoint */
};

/* ---- search/progress.c: messages and the status line ------------------------------ */

/* Monotonic clock, in seconds. */
double nas__ctl_now(void);

/* 1 when the search is to stop: *c->stop is set (a signal), or, issue 33,
 * search.time_limit has run out since this run's start, which sets
 * *c->stop to NAS_STOP_TIME_LIMIT (and c->time_up) and says so, so that
 * the stop takes the Ctrl-C path from there on. */
int nas__ctl_stopping(ctl *c);

/* The time limit as the user set it, into buf (n bytes), returned:
 * "--time-limit 10 s" when it came from the command line, else
 * "search.time_limit = 10 s". search/progress.c. */
const char *nas__ctl_time_limit_text(const ctl *c, char *buf, size_t n);

/* printf-style message line on c->log (nothing when quiet); clears the
 * status line first. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void nas__ctl_say(ctl *c, const char *fmt, ...);

/* Remove the status line from the terminal, if one is drawn. */
void nas__ctl_clear_status(ctl *c);

/* Redraw the status line (a terminal, not quiet, a trial in flight). */
void nas__ctl_draw_status(ctl *c);

/* The pool's progress callback (nas_pool_opts.progress; user = ctl):
 * note the fraction and loss of trial job_id, redraw. */
void nas__ctl_on_progress(void *user, int64_t job_id, int worker, double fraction, double loss);

/* This run's elapsed time and the estimated time left, as text ("--":
 * unknown), into el (nel bytes) and eta (neta bytes); issue 33: with
 * search.time_limit, eta ends with " (limit: 2m05s left)". */
void nas__ctl_eta_text(ctl *c, char *el, size_t nel, char *eta, size_t neta);

/* The label of a job's progress lines into buf: "trial ID, k/N", or
 * "trial ID, rung R" for a multi-fidelity rung job. Returns buf. */
const char *nas__ctl_tag(const ctl *c, const flight *f, char *buf, size_t n);

/* "best 0.8123 (trial 7)" (or "best --"), with the Pareto front's size
 * when there are several objectives, into buf (n bytes). */
void nas__ctl_best_text(ctl *c, char *buf, size_t n);

/* Add a finished trial's result, trained to `fidelity` (its rung's budget;
 * 0 without a scheduler), to the running Pareto front shown on the status
 * line (several objectives only; display only, never fails). As `nas query
 * --pareto`: the feasible trials at the highest fidelity one of them
 * reached, so a result at a higher fidelity starts the front afresh and
 * one at a lower fidelity takes no part. */
void nas__ctl_front_add(ctl *c, const nas_trial_result *res, int64_t fidelity);

/* One line per model round of the strategy (NAO) since the last call. */
void nas__ctl_report_round(ctl *c);

/* ---- search/propose.c: the propose step ------------------------------------------ */

/* Issue 33: parse search.enqueue into c->enq (cell and chain spaces: the
 * space's parser). Errors: NAS_ECONFIG (not a genotype of the space: the
 * config's path, the entry and why). */
int nas__ctl_enqueue_init(ctl *c, nas_error *err);

/* Ask the strategy for a valid genotype *g that `known` (ctx = c) does not
 * know and that fits constraints.mmacs/params; key gets its canonical key
 * (NAS_GENOTYPE_STR_MAX bytes). Issue 33: the enqueued genotypes come
 * first, in order, each skipped when `known` knows it (said when live, not
 * in a replay) or it is over the constraints; c->enq_last tells which.
 * Errors: NAS_EINFEASIBLE (nothing new, or
 * nothing feasible: nas__ctl_no_feasible's message), the strategy's, the
 * store's (a failed dedupe look-up). */
int nas__ctl_propose_new(ctl *c, nas_known_fn known, nas_genotype *g, char *key,
                         nas_error *err);

/* The propose step: a new proposal (nas__ctl_propose_new against the
 * stored trials) into f->g and f->geno, inserted as a pending trial
 * (f->trial) and appended to the unobserved trials. Errors: as
 * nas__ctl_propose_new, the store's, NAS_ENOMEM. */
int nas__ctl_propose(ctl *c, flight *f, nas_error *err);

/* ---- search/dispatch.c: the dispatch step ------------------------------------------ */

/* The job a worker runs (nas_pool_job_fn; ctx = c): the latency
 * constraint measured before training (a cell over it is returned
 * rejected: done, no accuracy), then nas_evaluator_run, saving the weights
 * when they are kept. Returns the evaluator's status; NAS_ENAN when the
 * validation accuracy is not a number. */
int nas__ctl_job(void *ctx, const nas_pool_job *job, nas_pool_progress_fn progress, void *pctx,
                 nas_trial_result *res);

/* Start the next trial on an idle worker: a waiting retry, else a
 * re-queued trial, else a new proposal (nas__ctl_propose); then
 * nas__ctl_dispatch. Errors: NAS_EINFEASIBLE (nothing new to propose),
 * NAS_EFORMAT (a re-queued genotype), the store's, the pool's. */
int nas__ctl_start_next(ctl *c, nas_error *err);

/* The dispatch step: mark trial f running (its worker and device) in the
 * store, add it to the trials in flight (f->k, its place in the budget,
 * kept by a retry), say so, and submit it to the pool. `how` is a START_*
 * value. Errors: the store's, NAS_ENOMEM, the pool's (the trial is then
 * marked interrupted). */
int nas__ctl_dispatch(ctl *c, flight *f, int how, nas_error *err);

/* ---- search/record.c: the record step ---------------------------------------------- */

/* The record step, for one event of the pool: the trial's final result
 * is stored at once, counted and handed to the schedule; a transient
 * failure is retried (workers.max_retries), a worker lost to a stop
 * interrupts its trial. Errors: NAS_EWORKER (an unknown or never proposed
 * trial), the store's, NAS_ENOMEM, NAS_EINFEASIBLE (MAX_LATENCY_MISSES
 * rejections in a row). */
int nas__ctl_record(ctl *c, const nas_pool_event *ev, nas_error *err);

/* A stop or a failure: record the results already back, kill the jobs in
 * flight, and mark them and the waiting retries interrupted (`reason`).
 * Returns how many trials this run has marked interrupted in all
 * (c->n_interrupted), or a (negative) store error. */
int nas__ctl_interrupt_flights(ctl *c, const char *reason, nas_error *err);

/* ---- search/schedule.c: the observe step and the ordered schedule ------------------ */

/* 1 for a done trial rejected by constraints.latency_ms before training
 * (measured latency, no accuracy; not counted in the budget). */
int nas__ctl_rejected(const nas_trial_result *res);

/* How many trials are proposed and not yet observed. */
int nas__ctl_pend_len(const ctl *c);

/* Append trial `trial` (the newest proposal) to the unobserved trials;
 * res != NULL: its outcome is already stored (replay). Errors: NAS_ENOMEM. */
int nas__ctl_pend_push(ctl *c, int64_t trial, const nas_genotype *g, const nas_trial_result *res,
                       nas_error *err);

/* The unobserved trial `trial`, or NULL. */
pend *nas__ctl_pend_find(ctl *c, int64_t trial);

/* Count one finished trial in the store-level counts (budget, best,
 * latency rejections), whatever the strategy has seen. */
void nas__ctl_account(ctl *c, int64_t trial, const char *geno, const nas_trial_result *res,
                      double score, int diverged);

/* The best so far becomes `trial` (its score finite) when `fidelity` is
 * higher than the best's, or equal with a higher score. Without a fidelity
 * scheduler every result has fidelity 0: the best by score. */
void nas__ctl_note_best(ctl *c, int64_t trial, const char *geno, double score, double val,
                        int fidelity);

/* The strategy observes one finished trial (mode: a DRAIN_* value).
 * Errors: NAS_EINFEASIBLE after MAX_LATENCY_MISSES rejections in a row
 * (DRAIN_LIVE only). */
int nas__ctl_observe(ctl *c, const nas_genotype *g, const nas_trial_result *res, int mode,
                     nas_error *err);

/* The observe step: the strategy observes the finished trials at the head
 * of the unobserved ones, in trial order, as far as the schedule allows
 * (mode: DRAIN_REPLAY, DRAIN_LIVE, DRAIN_ALL at the end). Errors: as
 * nas__ctl_observe. */
int nas__ctl_drain(ctl *c, int mode, nas_error *err);

/* workers.ordered = false: observe unobserved trial p's result now and
 * drop it from the unobserved trials. Errors: as nas__ctl_observe. */
int nas__ctl_observe_unordered(ctl *c, pend *p, const nas_trial_result *res, int mode,
                               nas_error *err);

/* Judge result res as the record step stores it: *score (what the
 * strategy observes; NaN when failed or infeasible), `note` (n bytes) the
 * constraint note, the latency rejection and the diverged reason; returns
 * 1 when the training diverged (nas_search_diverged; chance_test 0: a
 * chance-level accuracy alone does not count, a multi-fidelity rung below
 * the maximum), else 0. */
int nas__ctl_judge(ctl *c, const nas_trial_result *res, int chance_test, char *note, size_t n,
                   double *score);

/* Sets NAS_EINFEASIBLE in err with what the constraints rejected (the
 * smallest or fastest candidate seen); returns NAS_EINFEASIBLE. */
int nas__ctl_no_feasible(ctl *c, nas_error *err);

/* The status of starting a trial (rc): NAS_EINFEASIBLE stays an error
 * when nothing in the space ever met the constraints (issue 6: no trial
 * done, none in flight, some infeasible or rejected); otherwise the
 * strategy found nothing new: it is said, c->exhausted set, NAS_OK. Any
 * other rc is returned as it is. */
int nas__ctl_start_status(ctl *c, int rc, nas_error *err);

/* ---- search/replay.c: the replay and the schedule widths ----------------------------- */

/* Replay the experiment's stored trials through the strategy (see
 * search/replay.c): finished ones accounted and observed in their turn,
 * unfinished ones re-queued (c->requeue); *mismatch counts the replayed
 * proposals that differed from the stored trials. Issue 29: when the
 * finished trials already fill c->budget, they are only accounted (the
 * strategy is not replayed; *mismatch stays 0). Leaves c->width at the
 * last stored width. Errors: the store's, NAS_EFORMAT (a stored genotype
 * this space cannot read), NAS_EDB, NAS_ENOMEM, the strategy's. */
int nas__ctl_replay(ctl *c, int *mismatch, nas_error *err);

/* Read the experiment's trials into h (in id order, h->v malloc'd: the
 * caller frees) with both keys of each (the functional key and
 * NAS-Bench-201's string), make room for the re-queued ones (c->requeue),
 * and find the last trial proposed under NAS-Bench-201's string
 * (*nb201_until). Errors: the store's, NAS_ENOMEM, NAS_EDB (a bad
 * strategy_state row). */
int nas__ctl_replay_load(ctl *c, hist_vec *h, int64_t *nb201_until, nas_error *err);

/* A nas_known_fn (ctx = ctl): g is among the stored trials before the one
 * replayed, c->hist[0 .. c->hist_n), under the key that trial was
 * proposed with (c->hist_nb201: NAS-Bench-201's string). */
int nas__ctl_known_in_history(void *ctx, const nas_genotype *g);

/* Free the hash sets nas__ctl_known_in_history builds (issue 29: a look-up
 * is O(1), not a scan of the history); c->hist_index is NULL afterwards. */
void nas__ctl_hist_index_free(ctl *c);

/* Issue 29: say a warning when the trials left to run (search.trials, not
 * yet finished) exceed the space's distinct keys (nas_space_counts_get:
 * exact counts only), as `nas space` counts them: the search cannot
 * fill its budget. Never fails. */
void nas__ctl_warn_budget(ctl *c);

/* Issue 29: store the strategy's round log (nas_strategy_round_log;
 * strategy_state "strategy.rounds") for the next replay. Best effort
 * (nothing when the strategy keeps none). */
void nas__ctl_strategy_log_save(ctl *c);

/* Read the schedule widths of the earlier runs (strategy_state
 * "controller.workers") into c; *prev gets the last one (0: none).
 * Errors: the store's, NAS_EFORMAT (not a list of worker counts). */
int nas__ctl_width_load(ctl *c, int *prev, nas_error *err);

/* Add this run's width (c->width) to the stored history when it differs
 * from the last one. Errors: the store's. */
int nas__ctl_width_save(ctl *c, nas_error *err);

/* ---- search/fidelity_run.c: multi-fidelity search (issue 17) ------------------------- */

/* Create c->fid from search.fidelity (scheduler none: c->fid stays NULL).
 * Under MPI too: the worker ranks find the checkpoints in DB.ckpt/
 * (mpi_worker_rank in controller.c). Errors: nas_fid_create's. */
int nas__ctl_fid_init(ctl *c, nas_error *err);

/* Replay a multi-fidelity experiment's stored trials and rung results
 * into c->fid and the strategy (in place of nas__ctl_replay); unfinished
 * jobs go to c->fid_requeue. Errors: the store's, NAS_EFORMAT, NAS_ENOMEM,
 * the scheduler's. */
int nas__ctl_fid_replay(ctl *c, int *mismatch, nas_error *err);

/* Start jobs on the idle workers: retries, re-queued jobs, then what the
 * scheduler asks for (a strategy that finds nothing new ends the new
 * trials; c->fid_done once the scheduler has nothing left). The
 * controller's multi-fidelity loop calls it, then records what comes back
 * (nas__ctl_record). Errors: the store's, the pool's, the strategy's. */
int nas__ctl_fid_fill(ctl *c, nas_error *err);

/* The end of a multi-fidelity loop: the strategy observes every trial not
 * yet observed, and the best trial is the store's (NAS__STORE_RANK).
 * Errors: the observation's. */
int nas__ctl_fid_end(ctl *c, nas_error *err);

/* Issue 17, constraints.latency_ms: the result of rung job f as the
 * controller records it. A promotion keeps the latency that admitted its
 * trial at the first rung (a trained trial is never stored over the limit
 * by a later measurement), and one that came back rejected (measured again
 * before it: a promotion that trains from 0) fails, with the reason, so the
 * trial keeps its earlier rung. Returns res itself, or buf filled. */
const nas_trial_result *nas__ctl_fid_result(ctl *c, const flight *f, const nas_trial_result *res,
                                            nas_trial_result *buf);

/* The record step of a multi-fidelity job (nas__ctl_record, after retries
 * and stops): the rung row, the trial's result, the scheduler, the
 * strategy's observations, checkpoints no longer needed. `note` as in
 * record_result. Errors: the store's, the scheduler's. */
int nas__ctl_fid_record(ctl *c, const flight *f, const nas_trial_result *res, char *note,
                        size_t n, nas_error *err);

/* Issue 29: stop the promotion f (f->promo) without losing its trial's
 * result: the trial stays done at its last rung, with a note that the
 * promotion was interrupted (`reason`) and runs again on resume (the
 * replay re-queues it: no rung at its budget). Counted in
 * c->n_promo_interrupted. Returns 1 when done so, 0 when f is not such a
 * promotion (the caller interrupts the trial), or a (negative) store
 * error (err set). */
int nas__ctl_fid_keep_rung(ctl *c, const flight *f, const char *reason, nas_error *err);

/* Release what nas__ctl_fid_init and the loop made. */
void nas__ctl_fid_free(ctl *c);

/* ---- search/controller.c ------------------------------------------------------------ */

/* One search of cfg, as nas/search.h's nas_search_run describes it, without
 * its one-shot phases: search/oneshot.c's nas_search_run calls it for the
 * supernet search (phase 2, with phase 1 inside: nas__ctl_prepare) and for
 * the finalists (phase 3). `hold` (may be NULL: the search takes the run
 * lock and releases it when it ends) keeps the run lock (search/run_lock.h)
 * across searches of one `nas run`: a lock already in *hold is used instead
 * of taking it again, and the lock the search took is left in *hold when it
 * ends, however it ends; the caller releases it (nas__run_unlock). MPI
 * worker ranks never take it. */
int nas__search_run_one(const nas_config *cfg, const nas_run_opts *opts, nas_run_lock *hold,
                        nas_run_summary *summary, nas_error *err);

/* ---- search/prepare.c: an evaluator kind's preparation phase (issue 32) ------------- */

/* Phase 1 of a supernet search: make DB.supernet/ beside the database
 * (db_path), set it as the evaluator's state directory (before the pool
 * forks: the workers inherit it), run nas_evaluator_prepare in a forked
 * child and wait for it, then record the supernet's training curve under
 * experiment c->exp. Errors: NAS_EIO (the directory), NAS_EWORKER (fork,
 * the child killed), NAS_EINTR (stopped: the child is killed, its last
 * epoch kept), nas_evaluator_prepare's, the store's. */
int nas__ctl_prepare(ctl *c, const char *db_path, nas_error *err);

/* ---- search/files.c: the directories beside the database ---------------------------- */

/* The checkpoint of trial `trial`: DB.ckpt/trial-ID.npz into buf[n]. */
void nas__ctl_fid_ckpt(const ctl *c, int64_t trial, char *buf, size_t n);

/* Delete the files of directory `dir` whose names match the fnmatch(3)
 * `pattern` (temporary files a killed worker left: "trial-*.npz.tmp*").
 * Best effort: a directory or file that cannot be read or deleted is
 * skipped. */
void nas__ctl_unlink_matching(const char *dir, const char *pattern);

/* ---- search/retries.c: retry counts kept in the store (issue 4) ---------------------- */

/* Transient failures of `trial` so far, over every run (0: none). */
int nas__ctl_retries_get(const ctl *c, int64_t trial);

/* Read the counts earlier runs stored. Errors: the store's, NAS_EFORMAT
 * (the row is not our JSON), NAS_ENOMEM. */
int nas__ctl_retries_load(ctl *c, nas_error *err);

/* `trial` has now failed transiently n times: kept in memory and written
 * to the store at once. Errors: NAS_ENOMEM, the store's. */
int nas__ctl_retries_set(ctl *c, int64_t trial, int n, nas_error *err);

#endif
