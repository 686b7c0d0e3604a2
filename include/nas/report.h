/*
 * nas/report.h - read-only views of a finished or running search, built
 * on the store's queries (nas/store.h) and the Pareto arithmetic
 * (nas/evaluator.h): the HTML report (report/report.c, docs/report.md)
 * and the text views of `nas query`, `nas show` and `nas experiments`
 * (report/trials.c, report/experiments.c). They evaluate nothing and never
 * write the database.
 */
#ifndef NAS_REPORT_H
#define NAS_REPORT_H

#include <stdint.h>
#include <stdio.h> /* FILE */
#include "nas/status.h"
#include "nas/search.h" /* nas_run_summary */
#include "nas/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nas_report_opts {
    const char *experiment; /* name; NULL or "": the most recent experiment */
    int top_k;              /* best trials counted in the op-frequency chart; 0 = 10 */
    int refresh_s;          /* issue 33: > 0: the page reloads itself every refresh_s
                               seconds (<meta http-equiv="refresh">) and says it is live,
                               for `nas run --report` while the search runs; 0: a still page */
} nas_report_opts;

/*
 * Write one self-contained HTML page about an experiment to `out` (no
 * network access needed to view it: inline CSS, inline SVG plots, a small
 * inline script for tooltips): summary; best-so-far validation accuracy
 * against trial number and against wall time; accuracy/latency and
 * accuracy/MACs scatter plots with their Pareto fronts (max accuracy, min
 * cost) drawn as a path, a tooltip on every trial; for a one-shot search
 * or its finalists experiment (issue 32) the supernet's training curve
 * and the finalists' supernet against stand-alone accuracy with Kendall's
 * tau; the Pareto front under the experiment's own objectives; op
 * frequency in the top-k trials against all trials; failed and infeasible trials with their reasons;
 * the config text. docs/report.md describes the page and its element ids.
 * *n_front (may be NULL) gets the size of the front under the
 * experiment's objectives. Reads only (the store may be read-only).
 * Errors: NAS_ENOTFOUND (no such experiment), NAS_EDB, NAS_ENOMEM,
 * NAS_EIO (writing `out` failed).
 */
int nas_report_write(nas_store *st, const nas_report_opts *opts, FILE *out, int *n_front,
                     nas_error *err);

/*
 * nas_report_write into the file `path` (`nas report -o`): the page goes
 * to PATH.tmp, renamed over `path` when complete, so a viewer never sees
 * half a page; PATH.tmp is removed on failure. Errors: as
 * nas_report_write, NAS_EIO (cannot create, write or rename the file).
 */
int nas_report_write_file(nas_store *st, const nas_report_opts *opts, const char *path,
                          int *n_front, nas_error *err);

/* ---- views over stored results: `nas query`, `nas show`, `nas experiments` -------- */

typedef enum nas_report_format {
    NAS_REPORT_TABLE, /* aligned columns for a terminal */
    NAS_REPORT_CSV,   /* RFC 4180, a header line first */
    NAS_REPORT_JSON   /* an array of objects (jansson, 2-space indent), null when missing */
} nas_report_format;

/* "table", "csv" or "json" into *out: 0, or -1 for anything else. */
int nas_report_format_parse(const char *s, nas_report_format *out);

typedef struct nas_report_trials_opts {
    const char *experiment;   /* name; NULL: the most recent with a done trial */
    nas_report_format format;
    int limit;                /* at most this many rows; <= 0: all */
    int pareto;               /* 1: only the Pareto front under the experiment's objectives */
    int64_t min_fidelity;     /* issue 17: > 0: only trials whose highest fidelity is at least
                                 this (search.fidelity.resource units); 0: all */
    const char *zero_cost;    /* issue 31: a proxy name: a last column zc_PROXY with the score
                                 the warm-up or move proposal cached for the trial's canonical
                                 key (empty / null when not scored); NULL: no column */
} nas_report_trials_opts;

/*
 * `nas query` (report/trials.c): the trials of one experiment ranked by
 * validation accuracy (done first, best first; unfinished next; failed
 * last), or with o->pareto only its Pareto front (done, feasible trials
 * no other dominates, best first by the first objective), written to
 * `out`. Columns: rank, trial id, genotype, status (a diverged trial:
 * "diverged" in the table), val/test accuracy (fractions), train loss,
 * MACs (per image; FLOPs = 2 x MACs), params, latency_ms (batch 1),
 * train_seconds, epochs, device, attempt, error, device name and compute
 * capability, flag, the test accuracy of the trial's latest full `nas
 * train` and its count of final trainings, and (issue 17) the highest
 * fidelity the trial reached under a multi-fidelity scheduler (the table
 * shows that column only when some trial has one; ranking puts the
 * highest fidelity first). For the experiments of a one-shot search
 * (issue 32) kind (supernet: val_accuracy by inherited weights; finalist:
 * retrained) and the linked supernet trial or retraining with its
 * accuracy (the table shows the relevant pair; csv and json add kind,
 * supernet_trial, supernet_accuracy, retrained_trial, retrained_accuracy
 * after fidelity). The table starts with the
 * experiment's counts. Reads only. Errors: NAS_ENOTFOUND (no such
 * experiment), NAS_EDB, NAS_ENOMEM, NAS_EIO (writing `out`); a failure in
 * the front is prefixed "--pareto".
 */
int nas_report_trials(nas_store *st, const nas_report_trials_opts *o, FILE *out,
                      nas_error *err);

/*
 * `nas show` (report/trials.c): every stored field of trial `trial_id` -
 * its row, its result and its experiment - as "name value" lines ("-"
 * when missing), then its kept weights file and its final trainings (one
 * line each plus its recipe); a one-shot trial's kind and its supernet
 * trial or retraining (issue 32). Written to `out` only when all were read.
 * Reads only. Errors: NAS_ENOTFOUND (no such trial), NAS_EDB, NAS_ENOMEM.
 */
int nas_report_trial(nas_store *st, int64_t trial_id, FILE *out, nas_error *err);

/*
 * `nas experiments` (report/experiments.c): every experiment of the
 * store, oldest first - id, name, status, done / failed / budget,
 * diverged, best val_accuracy and its trial, created_at - with the
 * default one of query, show, report and export marked. Reads only.
 * Errors: NAS_EDB, NAS_ENOMEM, NAS_EIO (writing `out`).
 */
int nas_report_experiments(nas_store *st, nas_report_format format, FILE *out,
                           nas_error *err);

/* ---- the end of a search run: `nas run` (report/run_summary.c) ---------------------- */

/*
 * Write how a run of nas_search_run ended (its `status`: NAS_OK or
 * NAS_EINTR) to `out`: stopped / ended early / complete with the trial
 * counts and this run's wall time, trials rejected by
 * constraints.latency_ms, the best trial (val_accuracy as a fraction),
 * where the results are, and after NAS_EINTR the command `resume` that
 * resumes it. After NAS_OK, warnings about failed trials (or that every
 * trial failed) and diverged trials go to `log`. `ename` is the
 * experiment's name, `db` the database path as given.
 */
void nas_report_run_summary(const nas_run_summary *sum, int status, const char *ename,
                            const char *db, const char *resume, FILE *out, FILE *log);

/* ---- the machine: `nas devices` (report/devices.c) ---------------------------------- */

/*
 * Write the kernel backends compiled in and the devices found to `out`:
 * the CPU (model, threads, RAM in GiB), then each CUDA device (name,
 * memory in GiB, compute capability, SMs), or why there is none (not
 * compiled in, no device, the query failed - not an error here).
 * Errors: the CPU query's (nas_devices_query).
 */
int nas_report_devices(FILE *out, nas_error *err);

#ifdef __cplusplus
}
#endif
#endif /* NAS_REPORT_H */
