/*
 * search/progress.c - what a search shows while it runs: the messages
 * (nas__ctl_say), the live status line redrawn on a terminal (trial,
 * fraction, loss, best, elapsed, ETA), the running Pareto front whose size
 * it shows, and one line per model round of the strategy. Nothing here
 * writes to the database.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h> /* TIOCGWINSZ: terminal width for the status line */
#include <time.h>
#include "search/controller_impl.h"

double nas__ctl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int nas__ctl_stopping(ctl *c)
{
    if (c->deadline > 0 && !*c->stop && nas__ctl_now() >= c->deadline) {
        *c->stop = NAS_STOP_TIME_LIMIT;
        c->time_up = 1;
        char tl[64];
        nas__ctl_say(c, "nas: time limit reached (%s): stopping; the "
                        "trials in flight are interrupted and run again on resume",
                     nas__ctl_time_limit_text(c, tl, sizeof tl));
    }
    return *c->stop != 0;
}

const char *nas__ctl_time_limit_text(const ctl *c, char *buf, size_t n)
{
    snprintf(buf, n, c->tl_cli ? "--time-limit %g s" : "search.time_limit = %g s",
             c->cfg->search.time_limit);
    return buf;
}

/* A duration as "42s", "3m05s" or "1h02m" ("--": unknown) into buf (n bytes). */
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

/* ---- the status line ------------------------------------------------------------ */

void nas__ctl_clear_status(ctl *c)
{
    if (c->status_line) {
        fprintf(c->log, "\r\033[K");
        c->status_line = 0;
    }
}

/* Elapsed time of this run and the time left, estimated from the trials
 * finished in this run plus the fractions of those in flight. */
void nas__ctl_eta_text(ctl *c, char *el, size_t nel, char *eta, size_t neta)
{
    double elapsed = nas__ctl_now() - c->t_start;
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
    if (c->deadline > 0) { /* issue 33: the time left beside the ETA */
        char left[32];
        fmt_duration(fmax(0, c->deadline - nas__ctl_now()), left, sizeof left);
        size_t k = strlen(eta);
        snprintf(eta + k, neta > k ? neta - k : 0, " (limit: %s left)", left);
    }
}

const char *nas__ctl_tag(const ctl *c, const flight *f, char *buf, size_t n)
{
    if (f->budget > 0) /* issue 17: a rung job (a promotion has no ordinal) */
        snprintf(buf, n, "trial %lld, rung %d", (long long)f->trial, f->rung);
    else
        snprintf(buf, n, "trial %lld, %d/%d", (long long)f->trial, f->k, c->budget);
    return buf;
}

void nas__ctl_best_text(ctl *c, char *buf, size_t n)
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
 * O(front) per trial; the same set nas_store_pareto computes from scratch:
 * multi-fidelity, only the results at the highest fidelity reached.
 */
void nas__ctl_front_add(ctl *c, const nas_trial_result *res, int64_t fidelity)
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
    if (fidelity < c->front_fid)
        return;
    if (fidelity > c->front_fid) { /* the lower fidelity's trials leave the front */
        c->n_front = 0;
        c->front_fid = fidelity;
    }
    for (int i = 0; i < c->n_front; i++)
        if (nas_pareto_dominates(&c->front[(size_t)i * d], v, d, mx))
            return;
    int w = 0;
    for (int i = 0; i < c->n_front; i++)
        if (!nas_pareto_dominates(v, &c->front[(size_t)i * d], d, mx))
            memmove(&c->front[(size_t)w++ * d], &c->front[(size_t)i * d],
                    (size_t)d * sizeof(double));
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

void nas__ctl_draw_status(ctl *c)
{
    if (c->quiet || !c->tty || c->nfl == 0)
        return;
    char el[32], eta[48], best[96];
    nas__ctl_eta_text(c, el, sizeof el, eta, sizeof eta);
    nas__ctl_best_text(c, best, sizeof best);
    const flight *f = &c->fl[0];
    char loss[32] = "";
    if (isfinite(f->loss))
        snprintf(loss, sizeof loss, " loss %.3f", f->loss);
    char line[512], tag[64], count[48] = "";
    nas__ctl_tag(c, f, tag, sizeof tag); /* issue 29: a promotion has no ordinal */
    if (f->budget > 0)
        snprintf(count, sizeof count, "%d/%d trials, ", c->finished, c->budget);
    snprintf(line, sizeof line, "  %s: %s %3.0f%%%s%s | %s | %selapsed %s, ETA %s", tag,
             c->table ? "lookup" : "training", 100.0 * f->fraction, loss,
             c->nfl > 1 ? " (+more)" : "", best, count, el, eta);
    /* Never wrap: a wrapped line cannot be redrawn with \r. */
    struct winsize ws;
    if (ioctl(fileno(c->log), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 8 && strlen(line) >= ws.ws_col)
        line[ws.ws_col - 1] = '\0';
    fprintf(c->log, "\r\033[K%s", line);
    fflush(c->log);
    c->status_line = 1;
}

void nas__ctl_on_progress(void *user, int64_t job_id, int worker, double fraction, double loss)
{
    (void)worker;
    ctl *c = user;
    for (int i = 0; i < c->nfl; i++) {
        if (c->fl[i].trial == job_id) {
            c->fl[i].fraction = fraction;
            c->fl[i].loss = loss;
        }
    }
    nas__ctl_draw_status(c);
}

void nas__ctl_say(ctl *c, const char *fmt, ...)
{
    if (c->quiet)
        return;
    nas__ctl_clear_status(c);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(c->log, fmt, ap);
    va_end(ap);
    fputc('\n', c->log);
    fflush(c->log);
}

/* One line per model round of the strategy (NAO) since the last call
 * (issue 22); rounds made while replaying are not reported. */
void nas__ctl_report_round(ctl *c)
{
    nas_strategy_round r;
    long n = nas_strategy_last_round(c->strat, &r);
    if (n <= c->rounds_seen)
        return;
    c->rounds_seen = n;
    char tau[96];
    if (isfinite(r.tau))
        snprintf(tau, sizeof tau, "Kendall tau %.2f on %d held-back result(s)", r.tau, r.n_heldout);
    else
        snprintf(tau, sizeof tau, "Kendall tau -- (%d held-back result(s))", r.n_heldout);
    char extra[96] = "";
    if (r.n_neighbours > 0 || r.n_random > 0)
        snprintf(extra, sizeof extra, " (%d single-token neighbour(s), %d uniform sample(s))",
                 r.n_neighbours, r.n_random);
    nas__ctl_say(c,
                 "[%s round %ld] model trained on %d results, loss %.4f | %s | %d candidate(s) "
                 "decoded, %d queued%s",
                 nas_strategy_name(c->strat), r.round, r.n_train, r.loss, tau, r.n_decoded,
                 r.n_queued + r.n_random, extra);
}
