/*
 * search/controller.c - the search loop (see nas_search_run in nas/search.h).
 *
 *   store: find the experiment by name (issue 22), refuse a run whose
 *          defining settings differ from it (nas_config_diff), check the
 *          space, the placement and the data, then create it or record
 *          this run's running settings (a larger budget extends it)
 *   replay: every trial in id order -> strategy propose (deduped against the
 *           trials before it, with the key it was proposed under: trials
 *           an older nas proposed use NAS-Bench-201's string, see
 *           read_nb201_until), with the observations the schedule makes
 *           before it (below); finished trials wait for their turn to be
 *           observed, unfinished ones (pending/running/interrupted) are
 *           re-queued
 *   loop:  while done + failed + in flight < budget and a worker is idle:
 *             retry, re-queued trial, or (schedule permitting) propose ->
 *             dedupe by canonical key -> insert pending; mark running;
 *             submit to the pool
 *          wait for a result -> record done/failed in the store at once ->
 *          observe in trial order as the schedule allows -> progress
 *   stop:  (*opts->stop set) record results already back, kill the jobs in
 *          flight and mark their trials interrupted.
 *   constraints (issue 6, docs/report.md "Constraints"): a proposal over
 *          constraints.mmacs/params is treated as known (never stored or
 *          trained); latency is measured in the worker before training and
 *          a cell over constraints.latency_ms is recorded as rejected
 *          (done, no accuracy) outside the budget. With several objectives
 *          the progress line shows the running Pareto front's size.
 *
 * The ordered schedule (workers.ordered = true, the default), with N the
 * pool size (workers.count, the GPU slots, or the MPI ranks but 0): the
 * strategy observes results strictly in trial-id order, and the proposal
 * of trial k is made after exactly trials 1..k-N were observed - the
 * strategy sees propose 1..N, observe 1, propose N+1, observe 2, propose
 * N+2, ... whatever order the workers finish in. So a search is a function
 * of (config, seed, N), like a one-worker search is of (config, seed):
 *   - a result that arrives early is stored at once (never lost) and
 *     observed once every earlier trial is; a worker that is idle while N
 *     trials are unobserved waits (head-of-line blocking: about 8-9% of
 *     throughput for N = 2 with trial times varying by a factor 3-5;
 *     docs/cluster.md);
 *   - a failed trial is observed as a failure in its turn; a trial that
 *     is retried (workers.max_retries) is observed only with its final
 *     outcome; a latency-rejected trial (constraints.latency_ms) is a trial
 *     in the schedule like any other, observed in its turn, and stays out
 *     of the budget (done + failed); the MAX_LATENCY_MISSES stop counts
 *     rejections in observation order;
 *   - dedupe at proposal k looks at the stored trials, which are exactly
 *     trials 1..k-1 (inserted at proposal time);
 *   - whether trial k is proposed at all (the budget) does not depend on
 *     timing either: done + failed + in flight < budget counts every
 *     unresolved trial, so it holds only if trials 1..k-1 leave room, and
 *     then it holds at the latest when they are all resolved;
 *   - the replay applies the same schedule, so a resumed search (after
 *     Ctrl-C or kill -9) continues exactly like an uninterrupted one with
 *     the same N. N is stored (strategy_state "controller.workers"); a
 *     resume with another N says so. N = 1 is the one-worker schedule
 *     (propose, observe, propose, ...).
 * workers.ordered = false observes results in completion order (no worker
 * ever waits; evolution and NAO then depend on timing, and the replay
 * observes each finished trial right after its proposal, counting the
 * proposals that differ).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h> /* TIOCGWINSZ: terminal width for the status line */
#include <sys/stat.h>  /* mkdir: the kept-weights directory */
#include <time.h>
#include <unistd.h>
#include <jansson.h> /* issue 4: the persisted retry counts */
#include "nas/inspect.h" /* issue 14: counts of any space */
#include "nas/search.h"
#include "nas/store.h"
#include "search/pool_msg.h" /* issue 4: the Open MPI transport */
#include "search/run_lock.h" /* issue 4: one `nas run` per database */

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
} flight;

typedef struct hist_entry {
    int64_t id;
    nas_trial_status status;
    char key[NAS_GENOTYPE_STR_MAX];       /* functional key of geno (replay) */
    char key_nb201[NAS_GENOTYPE_STR_MAX]; /* NAS-Bench-201's string of geno (replay) */
    char geno[NAS_GENOTYPE_STR_MAX];
    double score;
    double val;
    int diverged;         /* issue 22: trial.flag = 'diverged' */
    nas_trial_result res; /* the stored result (nas_store_trial_result), for replay */
} hist_entry;

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
    volatile sig_atomic_t *stop;
    nas_store *st;
    int64_t exp;
    nas_space *space;
    nas_strategy *strat;
    nas_evaluator *ev;
    int classes; /* of the data (issue 16): the chance level of nas_search_diverged_k */
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
    /* best so far (by score) */
    double best_score, best_val;
    int64_t best_trial;
    char best_geno[NAS_GENOTYPE_STR_MAX];
    /* dedupe lookups against a history prefix (replay) or the store (live) */
    const hist_entry *hist;
    int hist_n;
    int hist_nb201; /* replaying a trial proposed under NAS-Bench-201's string */
    int db_failed;
    nas_error db_err;
    int status_line; /* a redrawable line is on the terminal */
    char weights_dir[NAS_PATH_MAX]; /* proxy.keep_weights: DB.weights ("" = off) */
    /* issue 6: constraints checked before training, and the Pareto front */
    nas_known_fn inner_known;     /* propose_new's dedupe, under the feasibility check */
    long n_infeasible;            /* proposals over constraints.mmacs/params (never stored) */
    int64_t min_macs, min_params; /* smallest among them (-1: none) */
    int n_rejected;               /* trials over constraints.latency_ms (not in the budget) */
    int lat_miss;                 /* consecutive ones */
    double min_latency;           /* fastest of them (NaN: none) */
    double *front;                /* objective vectors of the current front, n_front x d */
    int n_front, cap_front;
    /* issue 4: trials whose worker failed transiently, to run again */
    flight *retry;
    int nretry, cap_retry;
    /* issue 4: transient failures per trial, kept in the store (strategy_state
     * "controller.retries") so a resumed run does not grant fresh retries */
    int64_t *rt_id;
    int *rt_n;
    int n_rt, cap_rt;
    /* The ordered schedule (header comment): trials proposed and not yet
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
} ctl;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fmt_duration(double s, char *buf, size_t n)
{
    if (!isfinite(s) || s < 0) {
        snprintf(buf, n, "--");
        return;
    }
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, n, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else if (t >= 60)
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, n, "%lds", t);
}

/* ---- scoring ------------------------------------------------------------------ */

double nas_search_score(const nas_config *cfg, const nas_trial_result *res, char *note, size_t n)
{
    if (note && n)
        note[0] = '\0';
    if (res->status != NAS_OK)
        return NAN;
    if (cfg->constraints.latency_ms > 0 && isfinite(res->latency_ms) &&
        res->latency_ms > cfg->constraints.latency_ms) {
        if (note && n)
            snprintf(note, n, "infeasible: latency %.3f ms > constraints.latency_ms = %g",
                     res->latency_ms, cfg->constraints.latency_ms);
        return NAN;
    }
    if (cfg->constraints.mmacs > 0 && res->macs > 0 && res->macs / 1e6 > cfg->constraints.mmacs) {
        if (note && n)
            snprintf(note, n, "infeasible: %.3f MMACs > constraints.mmacs = %g", res->macs / 1e6,
                     cfg->constraints.mmacs);
        return NAN;
    }
    if (cfg->constraints.params > 0 && res->params > 0 &&
        (double)res->params > cfg->constraints.params) {
        if (note && n)
            snprintf(note, n, "infeasible: %lld params > constraints.params = %g",
                     (long long)res->params, cfg->constraints.params);
        return NAN;
    }
    const char *metric = cfg->n_objectives > 0 ? cfg->objectives[0].metric : "val_accuracy";
    int maximize = cfg->n_objectives > 0 ? cfg->objectives[0].maximize : 1;
    double v;
    if (strcmp(metric, "latency_ms") == 0)
        v = res->latency_ms;
    else if (strcmp(metric, "macs") == 0)
        v = (double)res->macs;
    else if (strcmp(metric, "params") == 0)
        v = (double)res->params;
    else
        v = res->val_accuracy;
    if (!isfinite(v))
        return NAN;
    return maximize ? v : -v;
}

/* The data's classes set the chance level (Fashion-MNIST: 10). */
#define DATA_CLASSES classes

int nas_search_diverged(const nas_config *cfg, const nas_trial_result *res, char *why, size_t n)
{
    return nas_search_diverged_k(cfg, 10, res, why, n);
}

int nas_search_diverged_k(const nas_config *cfg, int classes, const nas_trial_result *res,
                          char *why, size_t n)
{
    if (classes < 2)
        classes = 10;
    if (why && n)
        why[0] = '\0';
    if (res->status != NAS_OK || !isfinite(res->val_accuracy))
        return 0; /* failed, or rejected before training */
    const double loss_max = 10.0 * log((double)DATA_CLASSES);
    int trained = cfg->evaluator.kind == NAS_EVALUATOR_TRAIN;
    if ((trained || isfinite(res->train_loss)) && !(res->train_loss <= loss_max)) {
        if (why && n)
            snprintf(why, n, "diverged: train_loss %.4g is not finite or > %.2f (10 x ln %d)",
                     res->train_loss, loss_max, DATA_CLASSES);
        return 1;
    }
    if (trained && cfg->data.valid > 0) {
        double p = 1.0 / DATA_CLASSES;
        double chance = p + 3.0 * sqrt(p * (1.0 - p) / cfg->data.valid);
        if (res->val_accuracy <= chance) {
            if (why && n)
                snprintf(why, n,
                         "diverged: val_accuracy %.4f is chance level (<= %.4f: 1/%d + 3 "
                         "standard errors over %d validation images)",
                         res->val_accuracy, chance, DATA_CLASSES, cfg->data.valid);
            return 1;
        }
    }
    return 0;
}

/* ---- the data's shape and normalisation (issue 16) ---------------------------- */

/*
 * Data read from the user's files (data.format set) adds its shape, class
 * count and normalisation to the canonical text as a "# data: ..." line
 * (nas_data_info_format): they are defining, like the settings, but come
 * from the files (whose paths are running settings). A resumed experiment
 * whose stored line differs is refused (NAS_ECONFIG), listing both. The
 * shorthand data.dataset = "fashion-mnist" adds nothing, so experiments
 * from before issue 16 keep their canonical text.
 */
static int data_identity(ctl *c, const nas_config *cfg, int64_t exp_id, char **canon,
                         nas_error *err)
{
    nas_data_info info;
    int own = nas_evaluator_data_info(c->ev, &info);
    c->classes = info.classes;
    if (!own)
        return NAS_OK;
    char line[1024];
    nas_data_info_format(&info, line, sizeof line);
    if (exp_id > 0) {
        char *stored = NULL;
        int rc = nas_store_experiment_canonical(c->st, exp_id, &stored, err);
        if (rc != NAS_OK)
            return rc;
        nas_data_info old;
        char was[1024] = "";
        if (nas_data_info_parse(stored, &old))
            nas_data_info_format(&old, was, sizeof was);
        free(stored);
        if (was[0] && strcmp(was, line) != 0) {
            was[strcspn(was, "\n")] = '\0';
            line[strcspn(line, "\n")] = '\0';
            return nas_error_set(err, NAS_ECONFIG,
                                 "%s: the data of experiment '%s' changed: stored %s, now %s; "
                                 "run with --new or another experiment name to search the new data",
                                 cfg->path, cfg->experiment, was + 2, line + 2);
        }
    }
    size_t n = strlen(*canon), k = strlen(line);
    char *grown = realloc(*canon, n + k + 1);
    if (!grown)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    memcpy(grown + n, line, k + 1);
    *canon = grown;
    return NAS_OK;
}

/* ---- progress ------------------------------------------------------------------ */

static void clear_status(ctl *c)
{
    if (c->status_line) {
        fprintf(c->log, "\r\033[K");
        c->status_line = 0;
    }
}

/* Elapsed time of this run and the time left, estimated from the trials
 * finished in this run plus the fractions of those in flight. */
static void eta_text(ctl *c, char *el, size_t nel, char *eta, size_t neta)
{
    double elapsed = now_s() - c->t_start;
    fmt_duration(elapsed, el, nel);
    double progress = c->ran, partial = 0;
    for (int i = 0; i < c->nfl; i++)
        if (isfinite(c->fl[i].fraction))
            partial += c->fl[i].fraction;
    progress += partial;
    double remaining = c->budget - c->finished - partial;
    double e = NAN;
    if (c->ran > 0 && progress > 0 && remaining >= 0)
        e = elapsed / progress * remaining;
    fmt_duration(e, eta, neta);
}

static void best_text(ctl *c, char *buf, size_t n)
{
    if (c->best_trial < 0)
        snprintf(buf, n, "best --");
    else
        snprintf(buf, n, "best %.4f (trial %lld)", c->best_val, (long long)c->best_trial);
    if (c->cfg->n_objectives > 1) { /* issue 6: size of the running Pareto front */
        size_t len = strlen(buf);
        if (len < n)
            snprintf(buf + len, n - len, ", Pareto front %d", c->n_front);
    }
}

/*
 * Add a finished trial to the running Pareto front (several objectives
 * only): a feasible result with every objective measured enters unless a
 * front member dominates it, and evicts the members it dominates (Deb et
 * al. 2002 definitions, as nas_pareto_front; equal points all stay).
 * O(front) per trial; the same set nas_store_pareto computes from scratch.
 */
static void front_add(ctl *c, const nas_trial_result *res)
{
    int d = c->cfg->n_objectives;
    if (d < 2 || d > NAS_MAX_OBJECTIVES || !isfinite(nas_search_score(c->cfg, res, NULL, 0)))
        return;
    double v[NAS_MAX_OBJECTIVES];
    int mx[NAS_MAX_OBJECTIVES];
    for (int k = 0; k < d; k++) {
        v[k] = nas_objective_value(c->cfg->objectives[k].metric, res);
        mx[k] = c->cfg->objectives[k].maximize;
        if (!isfinite(v[k]))
            return;
    }
    for (int i = 0; i < c->n_front; i++)
        if (nas_pareto_dominates(&c->front[(size_t)i * d], v, d, mx))
            return;
    int w = 0;
    for (int i = 0; i < c->n_front; i++)
        if (!nas_pareto_dominates(v, &c->front[(size_t)i * d], d, mx))
            memmove(&c->front[(size_t)w++ * d], &c->front[(size_t)i * d], (size_t)d * sizeof(double));
    c->n_front = w;
    if (c->n_front == c->cap_front) {
        int cap = c->cap_front ? 2 * c->cap_front : 16;
        double *nf = realloc(c->front, (size_t)cap * (size_t)d * sizeof *nf);
        if (!nf)
            return; /* display only: the store's front is unaffected */
        c->front = nf;
        c->cap_front = cap;
    }
    memcpy(&c->front[(size_t)c->n_front++ * d], v, (size_t)d * sizeof(double));
}

static void draw_status(ctl *c)
{
    if (c->quiet || !c->tty || c->nfl == 0)
        return;
    char el[32], eta[32], best[96];
    eta_text(c, el, sizeof el, eta, sizeof eta);
    best_text(c, best, sizeof best);
    const flight *f = &c->fl[0];
    char loss[32] = "";
    if (isfinite(f->loss))
        snprintf(loss, sizeof loss, " loss %.3f", f->loss);
    char line[512];
    snprintf(line, sizeof line, "  trial %lld, %d/%d: %s %3.0f%%%s%s | %s | elapsed %s, ETA %s",
             (long long)f->trial, f->k, c->budget, c->table ? "lookup" : "training", 100.0 * f->fraction, loss, c->nfl > 1 ? " (+more)" : "", best, el,
             eta);
    /* Never wrap: a wrapped line cannot be redrawn with \r. */
    struct winsize ws;
    if (ioctl(fileno(c->log), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 8 &&
        strlen(line) >= ws.ws_col)
        line[ws.ws_col - 1] = '\0';
    fprintf(c->log, "\r\033[K%s", line);
    fflush(c->log);
    c->status_line = 1;
}

static void on_progress(void *user, int64_t job_id, int worker, double fraction, double loss)
{
    (void)worker;
    ctl *c = user;
    for (int i = 0; i < c->nfl; i++) {
        if (c->fl[i].trial == job_id) {
            c->fl[i].fraction = fraction;
            c->fl[i].loss = loss;
        }
    }
    draw_status(c);
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void say(ctl *c, const char *fmt, ...)
{
    if (c->quiet)
        return;
    clear_status(c);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(c->log, fmt, ap);
    va_end(ap);
    fputc('\n', c->log);
    fflush(c->log);
}

/* ---- dedupe ------------------------------------------------------------------- */

/* Known among the trials before the one replayed, under the key that
 * trial was proposed with (c->hist_nb201: NAS-Bench-201's string, set on
 * the space; see replay). */
static int known_in_history(void *ctx, const nas_genotype *g)
{
    ctl *c = ctx;
    char key[NAS_GENOTYPE_STR_MAX];
    nas_space_key(c->space, g, key, sizeof key);
    for (int i = 0; i < c->hist_n; i++)
        if (strcmp(c->hist_nb201 ? c->hist[i].key_nb201 : c->hist[i].key, key) == 0)
            return 1;
    return 0;
}

static int known_in_store(void *ctx, const nas_genotype *g)
{
    ctl *c = ctx;
    char key[NAS_GENOTYPE_STR_MAX];
    nas_space_key(c->space, g, key, sizeof key);
    int known = 0;
    if (nas_store_trial_known(c->st, c->exp, key, &known, &c->db_err) != NAS_OK) {
        c->db_failed = 1;
        return 1; /* never insert what we could not check */
    }
    return known;
}

/* ---- constraints checked before training (issue 6) ---------------------------- */

/* 1 when g's analytic MACs or params (nas_count_genotype: the net the
 * evaluator would build) exceed cfg->constraints: such a genotype is never
 * trained nor stored. A deterministic function of g, so the replay makes
 * the same decisions. */
static int over_static_constraints(ctl *c, const nas_genotype *g)
{
    const nas_config *cfg = c->cfg;
    if (!(cfg->constraints.mmacs > 0) && !(cfg->constraints.params > 0))
        return 0;
    int64_t macs = 0, params = 0;
    if (nas_count_genotype(NULL, c->space, g, &macs, &params) != NAS_OK) /* cell or chain */
        return 0; /* the evaluator fails it with the reason */
    int over = (cfg->constraints.mmacs > 0 && (double)macs / 1e6 > cfg->constraints.mmacs) ||
               (cfg->constraints.params > 0 && (double)params > cfg->constraints.params);
    if (over) {
        c->n_infeasible++;
        if (c->min_macs < 0 || macs < c->min_macs)
            c->min_macs = macs;
        if (c->min_params < 0 || params < c->min_params)
            c->min_params = params;
    }
    return over;
}

/* The dedupe the strategy sees: known, or over a constraint (so evolution
 * re-mutates, random and NAO sample again, and none of them ever learns
 * from or proposes an infeasible cell). */
static int known_or_infeasible(void *ctx, const nas_genotype *g)
{
    ctl *c = ctx;
    return over_static_constraints(c, g) || c->inner_known(c, g);
}

/* NAS_EINFEASIBLE with what the constraints rejected. */
static int no_feasible(ctl *c, nas_error *err)
{
    const nas_config *cfg = c->cfg;
    const char *what = c->n_done > 0 ? "no more feasible architectures" : "no feasible architecture";
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

/*
 * Ask the strategy for a genotype whose canonical key `known` does not
 * know and that fits the MACs/params constraints; the same procedure runs
 * live and in the replay so the strategy sees the same calls.
 * NAS_EINFEASIBLE when nothing new (or nothing feasible) turns up.
 */
static int propose_new(ctl *c, nas_known_fn known, nas_genotype *g, char *key, nas_error *err)
{
    c->inner_known = known;
    int misses = 0;
    for (int i = 0; i < MAX_PROPOSALS; i++) {
        int rc = nas_strategy_propose(c->strat, known_or_infeasible, c, g, err);
        if (rc == NAS_EINFEASIBLE && c->n_infeasible > 0 && !c->db_failed)
            return no_feasible(c, err);
        if (rc != NAS_OK)
            return rc;
        if (c->db_failed) {
            *err = c->db_err;
            return err->code;
        }
        if (!nas_space_is_valid(c->space, g))
            continue;
        if (over_static_constraints(c, g)) { /* a strategy that ignored is_known */
            if (++misses >= MAX_INFEASIBLE)
                return no_feasible(c, err);
            i--;
            continue;
        }
        nas_space_key(c->space, g, key, NAS_GENOTYPE_STR_MAX);
        if (!known(c, g))
            return NAS_OK;
        if (c->db_failed) {
            *err = c->db_err;
            return err->code;
        }
    }
    return nas_error_set(err, NAS_EINFEASIBLE,
                         "strategy %s proposed nothing new in %d attempts (space exhausted?)",
                         nas_strategy_name(c->strat), MAX_PROPOSALS);
}

/* ---- replay ------------------------------------------------------------------- */

typedef struct hist_vec {
    hist_entry *v;
    int n, cap;
    int oom;
} hist_vec;

static int collect_trial(void *ctx, const nas_store_trial *t)
{
    hist_vec *h = ctx;
    if (h->n == h->cap) {
        int cap = h->cap ? 2 * h->cap : 64;
        hist_entry *v = realloc(h->v, (size_t)cap * sizeof *v);
        if (!v) {
            h->oom = 1;
            return 1;
        }
        h->v = v;
        h->cap = cap;
    }
    hist_entry *e = &h->v[h->n++];
    e->id = t->id;
    e->status = t->status;
    e->key[0] = e->key_nb201[0] = '\0'; /* computed from geno by replay */
    snprintf(e->geno, sizeof e->geno, "%s", t->genotype);
    e->score = t->score;
    e->val = t->val_accuracy;
    e->diverged = strcmp(t->flag, "diverged") == 0;
    nas_store_trial_result(t, &e->res);
    return 0;
}

/* A done trial rejected by constraints.latency_ms before training: recorded
 * with its measured latency and no accuracy; not counted in the budget. */
static int rejected_result(const nas_trial_result *res)
{
    return res->status == NAS_OK && !isfinite(res->val_accuracy);
}

static void note_best(ctl *c, int64_t trial, const char *geno, double score, double val)
{
    if (!isfinite(score))
        return;
    if (c->best_trial < 0 || score > c->best_score) {
        c->best_trial = trial;
        c->best_score = score;
        c->best_val = val;
        snprintf(c->best_geno, sizeof c->best_geno, "%s", geno);
    }
}

/* ---- the ordered schedule ------------------------------------------------------ */

static int pend_len(const ctl *c) { return c->pq_n - c->pq_head; }

/* Append trial `trial` (the newest proposal) to the unobserved trials;
 * res != NULL: its outcome is already stored (replay). */
static int pend_push(ctl *c, int64_t trial, const nas_genotype *g, const nas_trial_result *res,
                     nas_error *err)
{
    if (c->pq_head > 0 && c->pq_head == c->pq_n)
        c->pq_head = c->pq_n = 0;
    if (c->pq_n == c->pq_cap) {
        if (c->pq_head > 0) { /* reuse the observed prefix */
            memmove(c->pq, c->pq + c->pq_head, (size_t)pend_len(c) * sizeof *c->pq);
            c->pq_n -= c->pq_head;
            c->pq_head = 0;
        } else {
            int cap = c->pq_cap ? 2 * c->pq_cap : 16;
            pend *v = realloc(c->pq, (size_t)cap * sizeof *v);
            if (!v)
                return nas_error_set(err, NAS_ENOMEM, "out of memory");
            c->pq = v;
            c->pq_cap = cap;
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

static pend *pend_find(ctl *c, int64_t trial)
{
    for (int i = c->pq_head; i < c->pq_n; i++)
        if (c->pq[i].trial == trial)
            return &c->pq[i];
    return NULL;
}

/* The store-level counts of one finished trial (budget, best, rejects):
 * updated when its result is recorded, whatever the strategy has seen. */
static void account(ctl *c, int64_t trial, const char *geno, const nas_trial_result *res,
                    double score, int diverged)
{
    if (rejected_result(res)) {
        c->n_rejected++;
        if (!(c->min_latency <= res->latency_ms))
            c->min_latency = res->latency_ms;
        return;
    }
    c->finished++;
    if (res->status == NAS_OK) {
        c->n_done++;
        c->n_diverged += diverged != 0;
        note_best(c, trial, geno, score, res->val_accuracy);
    } else {
        c->n_failed++;
    }
}

enum { DRAIN_REPLAY, DRAIN_LIVE, DRAIN_ALL };

/* The strategy observes one finished trial; the latency-miss count and
 * the displayed Pareto front follow (MAX_LATENCY_MISSES ends a live search). */
static int observe(ctl *c, const nas_genotype *g, const nas_trial_result *res, int mode,
                   nas_error *err)
{
    nas_strategy_observe_result(c->strat, g, res);
    if (rejected_result(res)) {
        c->lat_miss++;
        if (mode == DRAIN_LIVE && c->lat_miss >= MAX_LATENCY_MISSES)
            return no_feasible(c, err);
    } else {
        c->lat_miss = 0;
        front_add(c, res);
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
static int drain(ctl *c, int mode, nas_error *err)
{
    while (c->pq_head < c->pq_n && c->pq[c->pq_head].final) {
        int no_more = c->exhausted || c->finished >= c->budget;
        if (mode != DRAIN_ALL && pend_len(c) < c->width && !(mode == DRAIN_LIVE && no_more))
            break;
        pend *p = &c->pq[c->pq_head++];
        int rc = observe(c, &p->g, &p->res, mode, err);
        if (rc != NAS_OK)
            return rc;
    }
    return NAS_OK;
}

/* workers.ordered = false: observe trial p's result now, whatever is still
 * unobserved before it, and drop it from the unobserved trials. */
static int observe_unordered(ctl *c, pend *p, const nas_trial_result *res, int mode,
                             nas_error *err)
{
    nas_genotype g = p->g;
    int i = (int)(p - c->pq);
    memmove(&c->pq[i], &c->pq[i + 1], (size_t)(c->pq_n - i - 1) * sizeof *c->pq);
    c->pq_n--;
    return observe(c, &g, res, mode, err);
}

/* Stored under strategy_state "controller.workers": the schedule width of
 * the last run, so a resume with another width says so. */
#define WIDTH_STATE "controller.workers"
static int width_at(const ctl *c, int k, int dflt);

/* The last trial id proposed under NAS-Bench-201's string (strategy_state
 * NAS_STORE_NB201_KEYS_STATE, written by schema migration 3); 0 if none. */
static int read_nb201_until(ctl *c, int64_t *until, nas_error *err)
{
    void *blob = NULL;
    size_t size = 0;
    nas_error gerr;
    *until = 0;
    int rc = nas_store_strategy_state_get(c->st, c->exp, NAS_STORE_NB201_KEYS_STATE, &blob, &size,
                                          &gerr);
    if (rc == NAS_ENOTFOUND)
        return NAS_OK;
    if (rc != NAS_OK) {
        *err = gerr;
        return rc;
    }
    char text[32] = "";
    if (blob && size < sizeof text)
        memcpy(text, blob, size);
    free(blob);
    char *end = NULL;
    long long v = strtoll(text, &end, 10);
    if (!size || !end || *end != '\0' || v < 0)
        return nas_error_set(err, NAS_EDB,
                             "database %s: strategy_state '%s' of experiment %lld is not a trial "
                             "id", nas_store_path(c->st), NAS_STORE_NB201_KEYS_STATE,
                             (long long)c->exp);
    *until = v;
    return NAS_OK;
}

static int replay(ctl *c, int *mismatch, nas_error *err)
{
    hist_vec h = {0};
    int rc = nas_store_trial_foreach(c->st, c->exp, NAS_STORE_ORDER_ID, 0, collect_trial, &h, err);
    if (rc == NAS_OK && h.oom)
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory reading the trials");
    if (rc != NAS_OK) {
        free(h.v);
        return rc;
    }
    *mismatch = 0;
    c->requeue = calloc((size_t)(h.n > 0 ? h.n : 1), sizeof *c->requeue);
    if (!c->requeue) {
        free(h.v);
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    }
    /* Issue 21: trials up to `nb201_until` (schema migration 3 records it)
     * were proposed by an older nas whose key was NAS-Bench-201's string;
     * their proposals are replayed with that key, so the replay makes the
     * same dedupe decisions, and the same proposals, as the run that made
     * them. Later trials, and the live search, use the functional key. */
    int64_t nb201_until = 0;
    if ((rc = read_nb201_until(c, &nb201_until, err)) != NAS_OK) {
        free(h.v);
        return rc;
    }
    for (int i = 0; i < h.n; i++) {
        nas_genotype g;
        nas_error perr;
        if (nas_space_parse(c->space, h.v[i].geno, &g, &perr) != NAS_OK)
            continue; /* reported in the loop below */
        nas_space_set_key_kind(c->space, NAS_KEY_FUNCTION);
        nas_space_key(c->space, &g, h.v[i].key, sizeof h.v[i].key);
        nas_space_nb201_str(&g, h.v[i].key_nb201, sizeof h.v[i].key_nb201);
    }
    int exhausted = 0;
    for (int i = 0; i < h.n; i++) {
        hist_entry *e = &h.v[i];
        nas_genotype stored;
        nas_error perr;
        if (nas_space_parse(c->space, e->geno, &stored, &perr) != NAS_OK) {
            rc = nas_error_set(err, NAS_EFORMAT,
                               "database %s: trial %lld has genotype '%s' that this space "
                               "cannot read: %s",
                               nas_store_path(c->st), (long long)e->id, e->geno, perr.msg);
            break;
        }
        c->hist_nb201 = e->id <= nb201_until;
        nas_space_set_key_kind(c->space, c->hist_nb201 ? NAS_KEY_NB201 : NAS_KEY_FUNCTION);
        /* the observations the schedule makes before proposal i + 1, under
         * the width it was made with (issue 22: workers.count may change) */
        c->width = width_at(c, i + 1, c->width);
        drain(c, DRAIN_REPLAY, err);
        if (!exhausted) {
            c->hist = h.v;
            c->hist_n = i;
            nas_genotype g;
            char key[NAS_GENOTYPE_STR_MAX];
            nas_error pe;
            int prc = propose_new(c, known_in_history, &g, key, &pe);
            if (prc == NAS_EINFEASIBLE)
                exhausted = 1;
            else if (prc != NAS_OK) {
                rc = prc;
                *err = pe;
                break;
            }
            if (prc != NAS_OK || strcmp(key, c->hist_nb201 ? e->key_nb201 : e->key) != 0)
                (*mismatch)++;
        } else {
            (*mismatch)++;
        }
        if (e->status == NAS_TRIAL_DONE || e->status == NAS_TRIAL_FAILED) {
            account(c, e->id, e->geno, &e->res, e->score, e->diverged);
            if (c->cfg->workers.ordered)
                rc = pend_push(c, e->id, &stored, &e->res, err);
            else /* observed at once, as it was then */
                observe(c, &stored, &e->res, DRAIN_REPLAY, err);
        } else {
            c->requeue[c->nrequeue++] = *e;
            rc = pend_push(c, e->id, &stored, NULL, err);
        }
        if (rc != NAS_OK)
            break;
    }
    c->hist = NULL;
    c->hist_n = 0;
    c->n_hist = h.n;
    c->hist_nb201 = 0;
    nas_space_set_key_kind(c->space, NAS_KEY_FUNCTION);
    free(h.v);
    return rc;
}

/* ---- retry counts that survive a restart (issue 4) ------------------------------ */

/* The strategy_state row holding them: a JSON object {"<trial id>": n}
 * with n = transient failures (worker crashed, was killed, froze, broke
 * the protocol) of that trial so far, over every run of the experiment. */
#define RETRIES_STATE "controller.retries"

static int retries_get(const ctl *c, int64_t trial)
{
    for (int i = 0; i < c->n_rt; i++)
        if (c->rt_id[i] == trial)
            return c->rt_n[i];
    return 0;
}

static int retries_put_mem(ctl *c, int64_t trial, int n)
{
    for (int i = 0; i < c->n_rt; i++)
        if (c->rt_id[i] == trial) {
            c->rt_n[i] = n;
            return NAS_OK;
        }
    if (c->n_rt == c->cap_rt) {
        int cap = c->cap_rt ? 2 * c->cap_rt : 8;
        int64_t *ids = realloc(c->rt_id, (size_t)cap * sizeof *ids);
        if (!ids)
            return NAS_ENOMEM;
        c->rt_id = ids;
        int *ns = realloc(c->rt_n, (size_t)cap * sizeof *ns);
        if (!ns)
            return NAS_ENOMEM;
        c->rt_n = ns;
        c->cap_rt = cap;
    }
    c->rt_id[c->n_rt] = trial;
    c->rt_n[c->n_rt++] = n;
    return NAS_OK;
}

/* Read the counts a previous run left (none: a new experiment, or no
 * transient failure yet). A row that is not our JSON is an error: it would
 * mean another program wrote the row. */
static int retries_load(ctl *c, nas_error *err)
{
    void *blob = NULL;
    size_t size = 0;
    nas_error gerr;
    int rc = nas_store_strategy_state_get(c->st, c->exp, RETRIES_STATE, &blob, &size, &gerr);
    if (rc == NAS_ENOTFOUND)
        return NAS_OK;
    if (rc != NAS_OK) {
        *err = gerr;
        return rc;
    }
    json_error_t jerr;
    json_t *o = json_loadb(blob, size, 0, &jerr);
    free(blob);
    if (!json_is_object(o)) {
        json_decref(o);
        return nas_error_set(err, NAS_EFORMAT,
                             "database %s: strategy_state '%s' of experiment %lld is not a JSON "
                             "object of retry counts: %s",
                             nas_store_path(c->st), RETRIES_STATE, (long long)c->exp,
                             o ? "not an object" : jerr.text);
    }
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        char *end;
        long long id = strtoll(key, &end, 10);
        if (*end || id <= 0 || !json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > 1000000) {
            json_decref(o);
            return nas_error_set(err, NAS_EFORMAT,
                                 "database %s: strategy_state '%s': bad entry \"%s\"",
                                 nas_store_path(c->st), RETRIES_STATE, key);
        }
        if (retries_put_mem(c, id, (int)json_integer_value(v)) != NAS_OK) {
            json_decref(o);
            return nas_error_set(err, NAS_ENOMEM, "out of memory");
        }
    }
    json_decref(o);
    return NAS_OK;
}

/* Record that `trial` has now failed transiently n times: in memory and,
 * in one short write, in the store (before the retry starts, so a
 * controller killed at any later moment resumes with the count). */
static int retries_set(ctl *c, int64_t trial, int n, nas_error *err)
{
    if (retries_put_mem(c, trial, n) != NAS_OK)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    json_t *o = json_object();
    int bad = !o;
    for (int i = 0; i < c->n_rt && !bad; i++) {
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)c->rt_id[i]);
        bad = json_object_set_new(o, key, json_integer(c->rt_n[i])) != 0;
    }
    char *text = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    if (!text)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    int rc = nas_store_strategy_state_put(c->st, c->exp, RETRIES_STATE, text, strlen(text), err);
    free(text);
    return rc;
}

/*
 * The schedule widths of the experiment's earlier runs (issue 22), kept
 * under strategy_state WIDTH_STATE as text: "FROM:N,FROM:N,..." - from
 * trial ordinal FROM (1-based, trials in id order) on, trials were proposed
 * with N workers; a plain "N" (nas before issue 22) is "1:N". *prev gets the
 * last width (0: none stored); c->w_from/w_n the whole history.
 */
static int width_load(ctl *c, int *prev, nas_error *err)
{
    void *blob = NULL;
    size_t size = 0;
    nas_error gerr;
    *prev = 0;
    c->n_w = 0;
    int rc = nas_store_strategy_state_get(c->st, c->exp, WIDTH_STATE, &blob, &size, &gerr);
    if (rc == NAS_ENOTFOUND)
        return NAS_OK;
    if (rc != NAS_OK) {
        *err = gerr;
        return rc;
    }
    char text[1024];
    snprintf(text, sizeof text, "%.*s", (int)(size < sizeof text ? size : sizeof text - 1),
             (const char *)blob);
    free(blob);
    for (char *p = text, *end; *p && c->n_w < (int)(sizeof c->w_n / sizeof c->w_n[0]);) {
        long from = 1, v = strtol(p, &end, 10);
        if (*end == ':') {
            from = v;
            v = strtol(end + 1, &end, 10);
        }
        if (end == p || (*end && *end != ',') || v < 1 || v > 1000000 || from < 1)
            return nas_error_set(err, NAS_EFORMAT,
                                 "database %s: strategy_state '%s' of experiment %lld is not a "
                                 "list of worker counts: '%s'",
                                 nas_store_path(c->st), WIDTH_STATE, (long long)c->exp, text);
        c->w_from[c->n_w] = (int)from;
        c->w_n[c->n_w++] = (int)v;
        p = *end ? end + 1 : end;
    }
    *prev = c->n_w > 0 ? c->w_n[c->n_w - 1] : 0;
    return NAS_OK;
}

/* The width trial ordinal k was proposed with (`dflt` when none stored). */
static int width_at(const ctl *c, int k, int dflt)
{
    int w = dflt;
    for (int i = 0; i < c->n_w; i++)
        if (c->w_from[i] <= k)
            w = c->w_n[i];
    return w;
}

/* Add this run's width to the history when it differs from the last one:
 * the proposals from trial ordinal n_hist + 1 on use it. */
static int width_save(ctl *c, nas_error *err)
{
    if (c->n_w > 0 && c->w_n[c->n_w - 1] == c->width)
        return NAS_OK;
    int cap = (int)(sizeof c->w_n / sizeof c->w_n[0]);
    if (c->n_w == cap) { /* keep the first entry, drop the oldest change */
        memmove(&c->w_from[1], &c->w_from[2], (size_t)(cap - 2) * sizeof c->w_from[0]);
        memmove(&c->w_n[1], &c->w_n[2], (size_t)(cap - 2) * sizeof c->w_n[0]);
        c->n_w--;
    }
    c->w_from[c->n_w] = c->n_w == 0 ? 1 : c->n_hist + 1;
    c->w_n[c->n_w++] = c->width;
    char text[1024];
    size_t len = 0;
    for (int i = 0; i < c->n_w && len < sizeof text; i++) {
        int w = snprintf(text + len, sizeof text - len, "%s%d:%d", i ? "," : "", c->w_from[i],
                         c->w_n[i]);
        len += w > 0 ? (size_t)w : 0;
    }
    return nas_store_strategy_state_put(c->st, c->exp, WIDTH_STATE, text, strlen(text), err);
}

/* ---- the loop ------------------------------------------------------------------ */

static int job_fn(void *ctx, const nas_pool_job *job, nas_pool_progress_fn progress, void *pctx,
                  nas_trial_result *res)
{
    ctl *c = ctx;
    if (c->weights_dir[0]) { /* keep_weights (issue 5): the evaluator saves the trained net */
        char wp[NAS_PATH_MAX + 64];
        snprintf(wp, sizeof wp, "%s/trial-%lld.npz", c->weights_dir, (long long)job->id);
        nas_evaluator_set_weights_path(c->ev, wp);
    }
    double pre_lat = NAN; /* issue 6: latency constraint checked before training */
    if (c->cfg->constraints.latency_ms > 0 && c->cfg->evaluator.kind == NAS_EVALUATOR_TRAIN) {
        nas_error lerr;
        if (nas_evaluator_latency(c->ev, &job->genotype, &pre_lat, &lerr) != NAS_OK)
            pre_lat = NAN; /* measured again after training; nas_search_score judges that */
        else if (pre_lat > c->cfg->constraints.latency_ms) {
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
    if (rc == NAS_OK && isfinite(pre_lat))
        res->latency_ms = pre_lat; /* the measurement that admitted it */
    if (rc == NAS_OK && !isfinite(res->val_accuracy)) {
        res->status = NAS_ENAN;
        snprintf(res->error, sizeof res->error, "validation accuracy is not a number");
        rc = NAS_ENAN;
    }
    return rc;
}

/* One line per model round of the strategy (NAO) since the last call
 * (issue 22); rounds made while replaying are not reported. */
static void report_round(ctl *c)
{
    nas_strategy_round r;
    long n = nas_strategy_last_round(c->strat, &r);
    if (n <= c->rounds_seen)
        return;
    c->rounds_seen = n;
    char tau[96];
    if (isfinite(r.tau))
        snprintf(tau, sizeof tau, "Kendall tau %.2f on %d held-back result(s)", r.tau,
                 r.n_heldout);
    else
        snprintf(tau, sizeof tau, "Kendall tau -- (%d held-back result(s))", r.n_heldout);
    char extra[96] = "";
    if (r.n_neighbours > 0 || r.n_random > 0)
        snprintf(extra, sizeof extra, " (%d single-token neighbour(s), %d uniform sample(s))",
                 r.n_neighbours, r.n_random);
    say(c, "[%s round %ld] model trained on %d results, loss %.4f | %s | %d candidate(s) "
           "decoded, %d queued%s",
        nas_strategy_name(c->strat), r.round, r.n_train, r.loss, tau, r.n_decoded,
        r.n_queued + r.n_random, extra);
}

/* Start one trial: a re-queued one, or a new proposal. Returns NAS_OK,
 * NAS_EINFEASIBLE (nothing new to try) or a failure. */
static int start_one(ctl *c, nas_error *err)
{
    flight f;
    memset(&f, 0, sizeof f);
    f.loss = NAN;
    int rerun = 0, retry = 0;
    if (c->nretry > 0) { /* issue 4: a retry after a transient worker failure */
        f = c->retry[--c->nretry];
        f.loss = NAN;
        f.fraction = 0;
        rerun = retry = 1;
    } else if (c->requeue_pos < c->nrequeue) {
        hist_entry *e = &c->requeue[c->requeue_pos++];
        nas_error perr;
        if (nas_space_parse(c->space, e->geno, &f.g, &perr) != NAS_OK)
            return nas_error_set(err, NAS_EFORMAT, "trial %lld: %s", (long long)e->id, perr.msg);
        f.trial = e->id;
        snprintf(f.geno, sizeof f.geno, "%s", e->geno);
        f.failures = retries_get(c, e->id); /* issue 4: retries used before a restart */
        rerun = 1;
    } else {
        char key[NAS_GENOTYPE_STR_MAX];
        int rc = propose_new(c, known_in_store, &f.g, key, err);
        if (rc != NAS_OK)
            return rc;
        nas_space_format(c->space, &f.g, f.geno, sizeof f.geno);
        report_round(c);
        rc = nas_store_trial_insert(c->st, c->exp, f.geno, key, nas_strategy_origin(c->strat),
                                    &f.trial, err);
        if (rc == NAS_OK)
            rc = pend_push(c, f.trial, &f.g, NULL, err);
        if (rc != NAS_OK)
            return rc;
    }
    f.worker = nas_pool_next_worker(c->pool);
    const char *device = c->cfg->evaluator.kind == NAS_EVALUATOR_TABLE ? "table"
                                                                        : c->cfg->proxy.backend;
    int rc = nas_store_trial_start(c->st, f.trial, f.worker, device, err);
    if (rc != NAS_OK)
        return rc;
    if (!retry) /* issue 4: a retry keeps its "trial k/N" */
        f.k = c->finished + c->nfl + 1;
    f.t0 = now_s();
    if (c->nfl == c->cap_fl) {
        int cap = c->cap_fl ? 2 * c->cap_fl : 8;
        flight *v = realloc(c->fl, (size_t)cap * sizeof *v);
        if (!v)
            return nas_error_set(err, NAS_ENOMEM, "out of memory");
        c->fl = v;
        c->cap_fl = cap;
    }
    c->fl[c->nfl++] = f;
    char used[96] = ""; /* issue 4: a re-queued trial that already failed transiently */
    if (rerun && !retry && f.failures > 0)
        snprintf(used, sizeof used, " (%d of workers.max_retries = %d retries used before)",
                 f.failures, c->cfg->workers.max_retries);
    /* issue 22: the label is the database trial id (what `nas show` and
     * `nas export --trial` take), then the budget progress */
    const char *verb = c->table ? "lookup" : "train ";
    if (nas_pool_size(c->pool) > 1) /* issue 7: GPU slots set the pool size */
        say(c, "[trial %lld, %d/%d] %s %s (worker %d)%s", (long long)f.trial, f.k, c->budget,
            rerun ? "re-run" : verb, f.geno, f.worker, used);
    else
        say(c, "[trial %lld, %d/%d] %s %s%s", (long long)f.trial, f.k, c->budget,
            rerun ? "re-run" : verb, f.geno, used);
    draw_status(c);
    nas_pool_job job = {f.trial, f.g, 0};
    nas_store_trial stt; /* issue 4: the attempt number (the NAS_FAULT hook keys on it) */
    nas_error aerr;
    if (nas_store_trial_get(c->st, f.trial, &stt, &aerr) == NAS_OK)
        job.attempt = stt.attempt;
    rc = nas_pool_submit(c->pool, &job, NULL, err);
    if (rc != NAS_OK) {
        c->nfl--;
        nas_error ie;
        nas_store_trial_interrupt(c->st, f.trial, err->msg, &ie);
        return rc;
    }
    return NAS_OK;
}

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
        say(c, "nas: warning: trial %lld: %s", (long long)trial, werr.msg);
        return;
    }
    const nas_config *cfg = c->cfg;
    if (cfg->proxy.keep_weights < 0 &&
        nas_store_trial_weights_prune(c->st, c->exp, cfg->proxy.keep_top,
                                      cfg->proxy.weights_mb * 1e6, NULL, &werr) != NAS_OK)
        say(c, "nas: warning: proxy.keep_top: %s", werr.msg);
}

static int record(ctl *c, const nas_pool_event *ev, nas_error *err)
{
    int idx = -1;
    for (int i = 0; i < c->nfl; i++)
        if (c->fl[i].trial == ev->job_id)
            idx = i;
    if (idx < 0)
        return nas_error_set(err, NAS_EWORKER, "result for unknown trial %lld",
                             (long long)ev->job_id);
    flight f = c->fl[idx];
    memmove(&c->fl[idx], &c->fl[idx + 1], (size_t)(c->nfl - idx - 1) * sizeof *c->fl);
    c->nfl--;
    /* issue 20: a worker that died while a stop is under way (a signal to
     * the whole process group reaches the workers too; a worker killed
     * while the controller was stopped) cost its trial nothing: the trial
     * is interrupted, its retry count unchanged, and it runs on resume. */
    if (ev->result.status == NAS_EWORKER && c->stop && *c->stop) {
        char reason[sizeof ev->result.error + 64];
        snprintf(reason, sizeof reason, "interrupted: the search was stopped (%s)",
                 ev->result.error);
        int irc = nas_store_trial_interrupt(c->st, f.trial, reason, err);
        if (irc == NAS_OK)
            c->n_interrupted++;
        say(c, "[trial %lld, %d/%d] interrupted %s (%s; no retry spent)", (long long)f.trial,
            f.k, c->budget, f.geno, ev->result.error);
        return irc;
    }
    /* issue 4: a transient failure (the worker process failed: crashed,
     * killed, frozen, broke the protocol: NAS_EWORKER) is run again, up to
     * workers.max_retries times; NaN, timeouts and evaluator errors are not. */
    if (ev->result.status == NAS_EWORKER && f.failures < c->cfg->workers.max_retries) {
        /* counted (and stored) first, so the retry it costs is not given
         * again after a restart */
        f.failures++;
        int prc = retries_set(c, f.trial, f.failures, err);
        if (prc != NAS_OK)
            return prc;
        if (c->nretry == c->cap_retry) {
            int cap = c->cap_retry ? 2 * c->cap_retry : 4;
            flight *v = realloc(c->retry, (size_t)cap * sizeof *v);
            if (!v)
                return nas_error_set(err, NAS_ENOMEM, "out of memory");
            c->retry = v;
            c->cap_retry = cap;
        }
        say(c, "[trial %lld, %d/%d] RETRY  %s: %s (retry %d of workers.max_retries = %d)",
            (long long)f.trial, f.k, c->budget, f.geno, ev->result.error, f.failures, c->cfg->workers.max_retries);
        c->retry[c->nretry++] = f;
        return NAS_OK;
    }

    char note[512], why[200];
    double score = nas_search_score(c->cfg, &ev->result, note, 256);
    int rejected = rejected_result(&ev->result);
    if (rejected) {
        size_t len = strlen(note);
        snprintf(note + len, sizeof note - len, "%s(measured before training; not trained)",
                 len ? " " : "infeasible ");
    }
    /* issue 22: a done trial whose training diverged stays done, flagged */
    int diverged = nas_search_diverged_k(c->cfg, c->classes, &ev->result, why, sizeof why);
    if (diverged) {
        size_t len = strlen(note);
        snprintf(note + len, sizeof note - len, "%s%s", len ? "; " : "", why);
    }
    int rc = nas_store_trial_finish_flagged(c->st, f.trial, &ev->result, score, note,
                                            diverged ? "diverged" : NULL, err);
    if (rc != NAS_OK)
        return rc;
    /* Stored at once; the strategy observes it in trial order (drain). */
    pend *p = pend_find(c, f.trial);
    if (!p)
        return nas_error_set(err, NAS_EWORKER, "trial %lld finished but was never proposed",
                             (long long)f.trial);
    account(c, f.trial, f.geno, &ev->result, score, diverged);
    if (c->cfg->workers.ordered) {
        p->final = 1;
        p->res = ev->result;
    } else if ((rc = observe_unordered(c, p, &ev->result, DRAIN_LIVE, err)) != NAS_OK) {
        return rc;
    }
    if (rejected) { /* issue 6: not in the budget; the strategy learns it is infeasible */
        say(c, "[trial %lld, %d/%d] reject %s: %.3f ms > constraints.latency_ms = %g (not "
               "trained; not counted)",
            (long long)f.trial, f.k, c->budget, f.geno, ev->result.latency_ms, c->cfg->constraints.latency_ms);
        return NAS_OK;
    }
    if (c->weights_dir[0] && ev->result.status == NAS_OK) /* keep_weights: record the file */
        keep_weights(c, f.trial);
    c->ran++;
    double dt = now_s() - f.t0;
    char el[32], eta[32], best[96];
    eta_text(c, el, sizeof el, eta, sizeof eta);
    best_text(c, best, sizeof best);
    char lat[32] = ""; /* a table look-up measures no latency (issue 22) */
    if (!c->table)
        snprintf(lat, sizeof lat, ", %.3f ms", ev->result.latency_ms);
    if (ev->result.status == NAS_OK)
        say(c,
            "[trial %lld, %d/%d] done   val_acc %.4f | %.2f MMACs, %.1fk params%s | %.1f s%s%s "
            "| %s | elapsed %s, ETA %s",
            (long long)f.trial, f.k, c->budget, ev->result.val_accuracy, ev->result.macs / 1e6,
            ev->result.params / 1e3, lat, dt, note[0] ? " | " : "", note, best, el, eta);
    else
        say(c, "[trial %lld, %d/%d] FAILED %s: %s | %s | elapsed %s, ETA %s", (long long)f.trial,
            f.k, c->budget, f.geno,
            ev->result.error[0] ? ev->result.error : nas_strerror(ev->result.status), best, el,
            eta);
    return NAS_OK;
}

/* Stop: keep results already back, kill the rest and mark them interrupted
 * (with the waiting retries). Returns how many trials this run has marked
 * interrupted in all (c->n_interrupted), or a store error. */
static int interrupt_flights(ctl *c, const char *reason, nas_error *err)
{
    nas_pool_event ev;
    nas_error werr;
    int rc = NAS_OK;
    while (c->pool && nas_pool_busy(c->pool) > 0 && nas_pool_wait(c->pool, 0, &ev, &werr) == NAS_OK)
        if (rc == NAS_OK)
            rc = record(c, &ev, err);
    if (c->pool) {
        int64_t ids[1];
        nas_pool_cancel(c->pool, ids, 0);
    }
    for (int i = 0; i < c->nretry; i++) { /* issue 4: retries not yet restarted */
        nas_error ierr;
        if (nas_store_trial_interrupt(c->st, c->retry[i].trial, reason, &ierr) == NAS_OK)
            c->n_interrupted++;
        say(c, "[trial %lld, %d/%d] interrupted %s (its retry runs on resume)",
            (long long)c->retry[i].trial, c->retry[i].k, c->budget, c->retry[i].geno);
    }
    c->nretry = 0;
    for (int i = 0; i < c->nfl; i++) {
        nas_error ierr;
        int irc = nas_store_trial_interrupt(c->st, c->fl[i].trial, reason, &ierr);
        if (irc == NAS_OK)
            c->n_interrupted++;
        else if (rc == NAS_OK) {
            rc = irc;
            *err = ierr;
        }
        say(c, "[trial %lld, %d/%d] interrupted %s", (long long)c->fl[i].trial, c->fl[i].k,
            c->budget, c->fl[i].geno);
    }
    c->nfl = 0;
    /* issue 20: every trial this run interrupted, also those record()
     * interrupted above and the waiting retries, as the database counts */
    return rc == NAS_OK ? c->n_interrupted : rc;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0)
            break;
        if (len + 1 == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

static void fill_summary(ctl *c, nas_run_summary *s)
{
    s->budget = c->budget;
    s->done = c->n_done;
    s->failed = c->n_failed;
    s->diverged = c->n_diverged;
    s->rejected = c->n_rejected;
    s->ran = c->ran;
    s->wall_s = now_s() - c->t_start;
    s->best_trial = c->best_trial;
    s->best_val_accuracy = c->best_trial >= 0 ? c->best_val : NAN;
    snprintf(s->best_genotype, sizeof s->best_genotype, "%s", c->best_trial >= 0 ? c->best_geno : "");
}

/* issue 4: an MPI worker rank (`mpirun -n K nas run`, rank > 0): build the
 * evaluator, serve rank 0's jobs until it says stop; never opens the
 * database (rank 0 is its only writer). */
static int mpi_worker_rank(const nas_config *cfg, int rank, int local_rank, int threads,
                           nas_run_summary *summary, nas_error *err)
{
    ctl c;
    memset(&c, 0, sizeof c);
    c.cfg = cfg;
    c.quiet = 1;
    c.log = stderr;
    summary->mpi_worker = 1;
    /* With CUDA, this rank's GPU from its local rank (docs/cluster.md),
     * chosen before the evaluator's backend initialises CUDA. */
    char gpu_note[512];
    if (cfg->evaluator.kind == NAS_EVALUATOR_TRAIN &&
        nas__mpi_pick_gpu(cfg, local_rank, gpu_note, sizeof gpu_note) >= 0)
        fprintf(stderr, "nas: MPI rank %d: %s\n", rank, gpu_note);
    int rc = nas_space_create(&cfg->space, &c.space, err);
    if (rc == NAS_OK)
        rc = nas_evaluator_create(cfg, c.space, &c.ev, err);
    if (rc == NAS_OK)
        rc = nas__mpi_serve(job_fn, &c, 0.5, threads ? cfg->workers.heartbeat_s : 0, err);
    nas_evaluator_destroy(c.ev);
    nas_space_destroy(c.space);
    nas__mpi_stop(0, rc == NAS_OK ? 0 : 1);
    return rc;
}

/*
 * issue 7: the GPU of each local worker slot. A training search whose
 * placement (nas_placement_resolve over the CUDA devices nas_devices_query
 * finds, in a child process so this one never initialises CUDA) is CUDA
 * runs one worker per slot, slot s on nas_placement_slot_device(s): *gpu
 * (malloc'd, *slots entries) for nas_pool_opts.worker_gpu. A search that
 * cannot use CUDA under nas_placement_resolve's rules (table evaluator;
 * neither workers.device nor proxy.backend "cuda" or "auto"; proxy.backend
 * "ref"), an "auto" one without a device, and an MPI run (ranks pick their
 * own GPU) get *slots = 0 and *gpu = NULL: the pool then has
 * workers.count unpinned workers, as before placement existed.
 * NAS_TEST_CUDA_DEVICES=N (test-only, tests/e2e/test_gpu_slots.sh) stands
 * in for N CUDA devices. Errors: nas_placement_resolve's (e.g. NAS_ENODEV
 * for workers.device = "cuda" without a device), NAS_ENOMEM.
 */
static int gpu_slots(const nas_config *cfg, int mpi_size, nas_placement *pl, int **gpu,
                     int *slots, nas_error *err)
{
    *gpu = NULL;
    *slots = 0;
    memset(pl, 0, sizeof *pl);
    const char *be = cfg->proxy.backend[0] ? cfg->proxy.backend : "auto";
    const char *dv = cfg->workers.device[0] ? cfg->workers.device : "auto";
    int maybe_cuda = !strcmp(dv, "cuda") || !strcmp(be, "cuda") ||
                     ((!strcmp(dv, "auto") || !strcmp(be, "auto")) && strcmp(be, "ref") != 0);
    if (cfg->evaluator.kind != NAS_EVALUATOR_TRAIN || mpi_size > 1 || !maybe_cuda)
        return NAS_OK;
    nas_device_info devs[NAS_MAX_DEVICES];
    int n_cuda = 0;
    nas_error qerr;
    nas_error_clear(&qerr);
    const char *fake = getenv("NAS_TEST_CUDA_DEVICES");
    if (fake && *fake) {
        long v = strtol(fake, NULL, 10);
        n_cuda = v < 0 ? 0 : v > NAS_MAX_DEVICES ? NAS_MAX_DEVICES : (int)v;
        if (n_cuda == 0)
            snprintf(qerr.msg, sizeof qerr.msg, "NAS_TEST_CUDA_DEVICES=%s", fake);
    } else if (nas_devices_query(NAS_DEVICE_CUDA, devs, NAS_MAX_DEVICES, &n_cuda, &qerr) !=
               NAS_OK) {
        n_cuda = 0;
    }
    int rc = nas_placement_resolve(cfg, n_cuda, qerr.msg, pl, err);
    if (rc != NAS_OK || pl->kind != NAS_DEVICE_CUDA || pl->slots <= 0)
        return rc;
    int *g = malloc((size_t)pl->slots * sizeof *g);
    if (!g)
        return nas_error_set(err, NAS_ENOMEM, "out of memory placing the workers");
    for (int s = 0; s < pl->slots; s++)
        g[s] = nas_placement_slot_device(pl, s);
    *gpu = g;
    *slots = pl->slots;
    return NAS_OK;
}

void nas_search_mpi_finish(const nas_run_summary *summary, int exit_code)
{
    if (summary && !summary->mpi_worker && summary->mpi_ranks > 0)
        nas__mpi_stop(summary->mpi_lost, exit_code);
}

int nas_search_run(const nas_config *cfg, const nas_run_opts *opts, nas_run_summary *summary,
                   nas_error *err)
{
    nas_run_summary dummy;
    if (!summary)
        summary = &dummy;
    memset(summary, 0, sizeof *summary);
    summary->experiment_id = -1;
    summary->best_trial = -1;
    summary->best_val_accuracy = NAN;
    if (!cfg || !opts || !opts->db_path)
        return nas_error_set(err, NAS_EINVAL, "search: missing config or database path");
    snprintf(summary->db_path, sizeof summary->db_path, "%s", opts->db_path);
    int mpi_rank = 0, mpi_size = 0, mpi_local = 0; /* issue 4: under mpirun, rank 0 is the
                                                      controller */
    int mpi_threads = 1;
    int mrc = nas__mpi_start(&mpi_rank, &mpi_size, &mpi_local, &mpi_threads, err);
    if (mrc != NAS_OK)
        return mrc;
    if (mpi_size > 1 && mpi_rank > 0)
        return mpi_worker_rank(cfg, mpi_rank, mpi_local, mpi_threads, summary, err);
    if (mpi_size > 1) /* rank 0: nas_search_mpi_finish ends MPI after the report */
        summary->mpi_ranks = mpi_size - 1;
    nas_run_lock lock = {-1, -1}; /* issue 4: one `nas run` per database (search/run_lock.h) */

    ctl c;
    memset(&c, 0, sizeof c);
    c.cfg = cfg;
    c.log = opts->log ? opts->log : stderr;
    c.quiet = opts->quiet;
    c.tty = isatty(fileno(c.log));
    c.stop = opts->stop;
    c.budget = cfg->search.trials;
    c.best_trial = -1;
    c.t_start = now_s();
    c.min_macs = c.min_params = -1;
    c.min_latency = NAN;
    c.table = cfg->evaluator.kind == NAS_EVALUATOR_TABLE;

    int rc;
    char *canon = NULL, *text = NULL;
    const char *final_status = "failed";
    int *slot_gpu = NULL, n_slots = 0, n_workers = 0;
    nas_config *own_cfg = NULL; /* issue 22: cfg under another experiment name */

    /* The store's checks first (they name a missing or read-only
     * directory, a foreign file), then the single-writer lock beside it. */
    if ((rc = nas_store_open(opts->db_path, 0, &c.st, err)) != NAS_OK)
        goto out;
    if ((rc = nas__run_lock(opts->db_path, &lock, err)) != NAS_OK)
        goto out;

    /* Issue 22: the experiment is its name in the database (the most recent
     * row of it): cfg's, or opts->experiment; opts->new_experiment takes the
     * first free NAME-2, NAME-3, ... when NAME exists. */
    char name[NAS_NAME_MAX];
    snprintf(name, sizeof name, "%s",
             opts->experiment && *opts->experiment ? opts->experiment : cfg->experiment);
    nas_store_experiment before;
    nas_error ferr;
    int found = nas_store_experiment_find(c.st, name, &before, &ferr);
    if (found != NAS_OK && found != NAS_ENOTFOUND) {
        rc = found;
        *err = ferr;
        goto out;
    }
    if (found == NAS_OK && opts->new_experiment) {
        char base[NAS_NAME_MAX];
        snprintf(base, sizeof base, "%s", name);
        for (int k = 2; found == NAS_OK; k++) {
            snprintf(name, sizeof name, "%.*s-%d", NAS_NAME_MAX - 12, base, k);
            found = nas_store_experiment_find(c.st, name, &before, &ferr);
            if (found != NAS_OK && found != NAS_ENOTFOUND) {
                rc = found;
                *err = ferr;
                goto out;
            }
        }
    }
    if (strcmp(name, cfg->experiment) != 0) { /* this run's config carries the name */
        own_cfg = malloc(sizeof *own_cfg);
        if (!own_cfg) {
            rc = nas_error_set(err, NAS_ENOMEM, "out of memory");
            goto out;
        }
        *own_cfg = *cfg;
        snprintf(own_cfg->experiment, sizeof own_cfg->experiment, "%s", name);
        cfg = own_cfg;
        c.cfg = cfg;
    }
    snprintf(summary->experiment, sizeof summary->experiment, "%s", name);
    canon = nas_config_canonical(cfg);
    if (!canon) {
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory");
        goto out;
    }
    text = read_file(cfg->path);
    static const char *const strategy_names[] = {"random", "evolution", "nao"};
    const char *sname = (unsigned)cfg->search.strategy < 3 ? strategy_names[cfg->search.strategy]
                                                          : "?";
    char running[2048] = "";
    int n_running = 0;
    if (found == NAS_OK) { /* the same defining settings, or a refusal */
        char *stored = NULL;
        if ((rc = nas_store_experiment_canonical(c.st, before.id, &stored, err)) != NAS_OK)
            goto out;
        char diff[4096];
        int nd = nas_config_diff(stored, cfg, 1, diff, sizeof diff);
        n_running = nas_config_diff(stored, cfg, 0, running, sizeof running);
        free(stored);
        if (nd < 0 || n_running < 0) {
            rc = nas_error_set(err, NAS_ENOMEM, "out of memory");
            goto out;
        }
        if (nd > 0) {
            /* shown even with --quiet: it is the reason of the refusal */
            fprintf(c.log,
                    "nas: %d defining setting(s) of %s differ from experiment '%s' (id %lld) "
                    "in %s (stored -> now):\n%s",
                    nd, cfg->path, name, (long long)before.id, opts->db_path, diff);
            fflush(c.log);
            rc = nas_error_set(err, NAS_ECONFIG,
                               "%s changes defining settings of experiment '%s' (listed above), "
                               "so it cannot continue it. To resume or extend '%s', keep them "
                               "as stored; to start a new experiment, set another experiment "
                               "name in %s, or run with --experiment NAME, or with --new (it "
                               "creates '%s-2' or the next free number)",
                               cfg->path, name, name, cfg->path, name);
            goto out;
        }
    }

    /* Checked before an experiment row is made (issue 22: a failed start
     * leaves none): the space and the strategy, the placement, the data. */
    if ((rc = nas_space_create(&cfg->space, &c.space, err)) != NAS_OK ||
        (rc = nas_strategy_create(cfg, c.space, &c.strat, err)) != NAS_OK)
        goto out;
    /* The pool's size is the schedule's width, needed by the replay. */
    nas_placement pl; /* issue 7: one worker per GPU slot (gpu_slots) */
    if ((rc = gpu_slots(cfg, mpi_size, &pl, &slot_gpu, &n_slots, err)) != NAS_OK)
        goto out;
    n_workers = n_slots > 0 && cfg->workers.count > 0 ? n_slots : cfg->workers.count;
    c.width = mpi_size > 1 ? mpi_size - 1 : n_workers > 0 ? n_workers : 1;
    if (cfg->evaluator.kind == NAS_EVALUATOR_TRAIN) {
        char ntrain[32];
        if (cfg->data.train_subset > 0)
            snprintf(ntrain, sizeof ntrain, "%d", cfg->data.train_subset);
        else
            snprintf(ntrain, sizeof ntrain, "all other");
        const char *from = !strcmp(cfg->data.format, "idx") || !strcmp(cfg->data.format, "npy")
                               ? cfg->data.train_images : cfg->data.dir;
        say(&c, "nas: loading %s from %s (%s training and %d validation images)",
            cfg->data.dataset, from, ntrain, cfg->data.valid);
    } else {
        say(&c, "nas: table evaluator: %s, column %s", cfg->evaluator.table,
            cfg->evaluator.column);
    }
    if ((rc = nas_evaluator_create(cfg, c.space, &c.ev, err)) != NAS_OK)
        goto out;
    if ((rc = data_identity(&c, cfg, found == NAS_OK ? before.id : 0, &canon, err)) != NAS_OK)
        goto out;

    int created = found != NAS_OK;
    if (created)
        rc = nas_store_experiment_create(c.st, name, canon, text ? text : "", cfg->path,
                                         cfg->seed, sname, cfg->search.trials, &c.exp, err);
    else {
        c.exp = before.id;
        rc = nas_store_experiment_update(c.st, c.exp, canon, text ? text : "", cfg->path,
                                         cfg->search.trials, err);
    }
    if (rc != NAS_OK)
        goto out;
    summary->experiment_id = c.exp;
    summary->resumed = !created;

    int run_width = c.width, prev_width = 0;
    if ((rc = width_load(&c, &prev_width, err)) != NAS_OK)
        goto out;
    int mismatch = 0;
    rc = replay(&c, &mismatch, err); /* each trial under the width it was proposed with */
    c.width = run_width;
    if (rc != NAS_OK || (rc = retries_load(&c, err)) != NAS_OK)
        goto out;
    summary->replay_mismatch = mismatch;
    c.rounds_seen = nas_strategy_last_round(c.strat, NULL); /* replayed rounds stay silent */
    if ((rc = nas_store_experiment_set_status(c.st, c.exp, "running", err)) != NAS_OK)
        goto out;
    if (created) {
        say(&c, "nas: experiment '%s' (id %lld) in %s: %d trials, strategy %s, seed %llu",
            name, (long long)c.exp, opts->db_path, c.budget, sname,
            (unsigned long long)cfg->seed);
        if (strcmp(name, cfg->experiment) != 0 || opts->new_experiment ||
            (opts->experiment && *opts->experiment))
            say(&c, "nas: resume or extend it with --experiment %s", name);
    } else {
        if (n_running > 0)
            say(&c, "nas: running settings changed since the last run (stored -> now):\n%.*s",
                (int)(strlen(running) > 0 ? strlen(running) - 1 : 0), running);
        if (c.budget > before.trials_budget)
            say(&c,
                "nas: extending experiment '%s' (id %lld) in %s from %d to %d trials: %d done, "
                "%d failed; %d unfinished trial(s) to re-run",
                name, (long long)c.exp, opts->db_path, before.trials_budget, c.budget, c.n_done,
                c.n_failed, c.nrequeue);
        else
            say(&c,
                "nas: resuming experiment '%s' (id %lld) in %s: %d done, %d failed of %d; %d "
                "unfinished trial(s) to re-run",
                name, (long long)c.exp, opts->db_path, c.n_done, c.n_failed, c.budget,
                c.nrequeue);
        if (strcmp(before.status, "running") == 0 && before.n_running > 0)
            say(&c,
                "nas: note: %d trial(s) were left 'running' (the last `nas run` ended without "
                "cleaning up); they are re-run now. Do not run two `nas run` of one "
                "experiment at once.",
                before.n_running);
        if (prev_width > 0 && prev_width != c.width && c.finished >= c.budget)
            say(&c,
                "nas: note: this run has %d worker(s), the last one had %d: the experiment "
                "has its trials, so nothing changes (an extension would propose with %d "
                "worker(s) from trial %d on)",
                c.width, prev_width, c.width, c.n_hist + 1);
        else if (prev_width > 0 && prev_width != c.width)
            say(&c,
                "nas: note: this run has %d worker(s), the last one had %d: the %d stored "
                "trials keep the schedule they were proposed with (replayed so), the proposals "
                "from here on follow the schedule of %d workers (proposal k after the results "
                "of trials 1..k-%d), so they differ from a fresh run with %d workers "
                "(docs/cluster.md)",
                c.width, prev_width, c.n_hist, c.width, c.width, c.width);
        else if (prev_width == 0 && c.n_done + c.n_failed + c.nrequeue > 0 && c.width > 1)
            say(&c, "nas: note: the earlier runs of this experiment did not record their "
                    "number of workers (an older nas): their schedule may differ from this one");
        if (mismatch)
            say(&c,
                "nas: note: %d of %d replayed proposals differed from the stored trials; the "
                "stored results were observed",
                mismatch, c.n_done + c.n_failed + c.n_rejected + c.nrequeue);
    }
    if (c.finished >= c.budget) {
        say(&c, "nas: the experiment already has its %d trials; nothing to do", c.budget);
        final_status = "done";
        rc = NAS_OK;
        goto out;
    }
    if ((rc = width_save(&c, err)) != NAS_OK)
        goto out;

    /* proxy.keep_weights: true keeps every trained trial's weights; not set
     * (the default) the best proxy.keep_top (keep_weights() prunes) */
    if ((cfg->proxy.keep_weights > 0 || (cfg->proxy.keep_weights < 0 && cfg->proxy.keep_top > 0)) &&
        cfg->evaluator.kind == NAS_EVALUATOR_TRAIN) {
        snprintf(c.weights_dir, sizeof c.weights_dir, "%s.weights", opts->db_path);
        if (mkdir(c.weights_dir, 0777) != 0 && errno != EEXIST) {
            rc = nas_error_set(err, NAS_EIO, "%s: cannot create %s: %s",
                               cfg->proxy.keep_weights > 0 ? "proxy.keep_weights" : "proxy.keep_top",
                               c.weights_dir, strerror(errno));
            goto out;
        }
    }
    if (c.stop && *c.stop) {
        final_status = "interrupted";
        rc = nas_error_set(err, NAS_EINTR, "interrupted before the first trial");
        goto out;
    }
    /* issue 20: without MPI_THREAD_SERIALIZED the worker ranks send no
     * heartbeats (their heartbeat thread would call MPI), so none are
     * expected; trial_timeout_s still catches a stuck rank */
    int heartbeat_s = mpi_size > 1 && !mpi_threads ? 0 : cfg->workers.heartbeat_s;
    if (heartbeat_s != cfg->workers.heartbeat_s)
        say(&c, "nas: warning: this MPI library does not provide MPI_THREAD_SERIALIZED: the "
                "worker ranks send no heartbeats, and only trial_timeout_s catches a frozen one");
    nas_pool_opts po = {cfg->workers.trial_timeout_s, 0.5, on_progress, &c, heartbeat_s,
                        slot_gpu, c.stop};
    /* CUDA: workers.gpus x trials_per_gpu workers (workers.count 0 stays
     * in-process, on the first GPU listed) */
    rc = nas_pool_create(n_workers, job_fn, &c, &po, &c.pool, err);
    if (rc == NAS_OK && n_slots > 0) {
        char map[256] = "";
        size_t used = 0;
        int shown = n_workers > 0 ? n_workers : 1;
        for (int s = 0; s < shown && used + 16 < sizeof map; s++)
            used += (size_t)snprintf(map + used, sizeof map - used, "%s%d", s ? " " : "",
                                     slot_gpu[s]);
        say(&c, "nas: CUDA placement: %d GPU(s) x %d trial(s) per GPU; worker -> GPU: %s%s",
            pl.n_gpus, pl.trials_per_gpu, map, used + 16 >= sizeof map ? " ..." : "");
    }
    if (rc != NAS_OK)
        goto out;
    if (c.table) /* nothing is trained: no backend, no threads (issue 22) */
        say(&c, "nas: %d %s, table look-ups%s", nas_pool_size(c.pool),
            cfg->workers.count == 0 ? "in-process worker" : "worker process(es)",
            c.tty ? "; Ctrl-C stops (resume by running the same command)" : "");
    else
        say(&c, "nas: %d %s, backend %s with %d thread(s) each%s", nas_pool_size(c.pool),
            cfg->workers.count == 0 ? "in-process worker" : "worker process(es)",
            cfg->proxy.backend, cfg->proxy.threads,
            c.tty ? "; Ctrl-C stops (resume by running the same command)" : "");

    /* The ordered schedule (header comment): a worker is given a new
     * proposal only while fewer than c.width trials are unobserved; it
     * waits for the oldest one otherwise. */
    for (;;) {
        if (c.stop && *c.stop)
            break;
        if ((rc = drain(&c, DRAIN_LIVE, err)) != NAS_OK)
            goto out;
        while (!(c.stop && *c.stop) && c.finished + c.nfl < c.budget &&
               nas_pool_idle(c.pool) > 0 &&
               (c.nretry > 0 || c.requeue_pos < c.nrequeue ||
                (!c.exhausted && (pend_len(&c) < c.width || !cfg->workers.ordered)))) {
            rc = start_one(&c, err);
            if (rc == NAS_EINFEASIBLE && c.n_done == 0 && c.nfl == 0 &&
                (c.n_infeasible > 0 || c.n_rejected > 0))
                goto out; /* issue 6: nothing in the space meets the constraints */
            if (rc == NAS_EINFEASIBLE) {
                say(&c, "nas: %s", err->msg);
                c.exhausted = 1;
                nas_error_clear(err);
                rc = NAS_OK;
            }
            if (rc != NAS_OK)
                goto out;
            if ((rc = drain(&c, DRAIN_LIVE, err)) != NAS_OK)
                goto out;
        }
        if (c.nfl == 0)
            break;
        nas_pool_event ev;
        nas_error werr;
        int wrc = nas_pool_wait(c.pool, c.tty ? 1000 : 5000, &ev, &werr);
        if (wrc == NAS_OK) {
            if ((rc = record(&c, &ev, err)) != NAS_OK)
                goto out;
        } else if (wrc == NAS_ETIMEOUT || wrc == NAS_EINTR) {
            draw_status(&c);
        } else {
            rc = wrc;
            *err = werr;
            goto out;
        }
    }
    clear_status(&c);
    if (c.stop && *c.stop) {
        char reason[128];
        int sig = (int)*c.stop;
        if (sig > 1 && sig < 65)
            snprintf(reason, sizeof reason, "interrupted by signal %d (%s)", sig, strsignal(sig));
        else
            snprintf(reason, sizeof reason, "interrupted (the search was stopped)");
        int n = interrupt_flights(&c, reason, err);
        if (n < 0) {
            rc = n;
            goto out;
        }
        summary->interrupted = n;
        summary->stopped = 1;
        final_status = "interrupted";
        rc = nas_error_set(err, NAS_EINTR, "search stopped: %d trial(s) interrupted", n);
        goto out;
    }
    if (!c.exhausted && c.finished < c.budget) {
        /* issue 20: the loop ended with trials left, so no worker can take
         * one: under MPI every worker rank was given up on (a rank cannot
         * be restarted). Not done: its unfinished trials are interrupted
         * (out:) and a new run resumes. */
        rc = nas_error_set(err, NAS_EWORKER,
                           "no workers remain: all %d MPI worker rank(s) were given up on (see "
                           "the trials' errors) with %d of %d trials finished; run the same "
                           "command again to resume",
                           nas_pool_size(c.pool), c.finished, c.budget);
        for (int i = c.requeue_pos; i < c.nrequeue; i++) { /* left by an earlier run */
            nas_error ierr;
            if ((c.requeue[i].status == NAS_TRIAL_RUNNING ||
                 c.requeue[i].status == NAS_TRIAL_PENDING) &&
                nas_store_trial_interrupt(c.st, c.requeue[i].id, err->msg, &ierr) == NAS_OK)
                c.n_interrupted++;
        }
        summary->interrupted = c.n_interrupted;
        final_status = "interrupted";
        goto out;
    }
    if ((rc = drain(&c, DRAIN_ALL, err)) != NAS_OK) /* the strategy sees every result */
        goto out;
    summary->exhausted = c.exhausted && c.finished < c.budget;
    final_status = summary->exhausted ? "exhausted" : "done";
    rc = NAS_OK;

out:
    clear_status(&c);
    if (rc != NAS_OK && rc != NAS_EINTR && (c.nfl > 0 || c.nretry > 0)) {
        nas_error ierr; /* issue 20: waiting retries too, never left 'running' */
        char why[sizeof err->msg + 32];
        snprintf(why, sizeof why, "interrupted: %s", err->msg);
        int n = interrupt_flights(&c, why, &ierr);
        if (n > 0)
            summary->interrupted = n;
    }
    if (c.st && c.exp > 0) {
        nas_error serr;
        nas_store_experiment_set_status(c.st, c.exp, final_status, &serr);
    }
    fill_summary(&c, summary);
    summary->mpi_lost = nas__pool_lost(c.pool); /* nas_search_mpi_finish ends MPI */
    nas_pool_destroy(c.pool);
    nas_evaluator_destroy(c.ev);
    nas_strategy_destroy(c.strat);
    nas_space_destroy(c.space);
    nas_store_close(c.st);
    free(c.fl);
    free(c.requeue);
    free(c.retry);
    free(c.rt_id);
    free(c.rt_n);
    nas__run_unlock(&lock);
    free(c.front);
    free(c.pq);
    free(slot_gpu);
    free(canon);
    free(text);
    free(own_cfg);
    return rc;
}
