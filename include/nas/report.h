/*
 * nas/report.h - the HTML report (report/report.c, docs/report.md): a
 * read-only view of a finished or running search, built on the store's
 * queries (nas/store.h) and the Pareto arithmetic (nas/evaluator.h). It
 * evaluates nothing and never writes the database.
 */
#ifndef NAS_REPORT_H
#define NAS_REPORT_H

#include <stdio.h> /* FILE */
#include "nas/status.h"
#include "nas/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nas_report_opts {
    const char *experiment; /* name; NULL or "": the most recent experiment */
    int top_k;              /* best trials counted in the op-frequency chart; 0 = 10 */
} nas_report_opts;

/*
 * Write one self-contained HTML page about an experiment to `out` (no
 * network access needed to view it: inline CSS, inline SVG plots, a small
 * inline script for tooltips): summary; best-so-far validation accuracy
 * against trial number and against wall time; accuracy/latency and
 * accuracy/MACs scatter plots with their Pareto fronts (max accuracy, min
 * cost) drawn as a path, a tooltip on every trial; the Pareto front under
 * the experiment's own objectives; op frequency in the top-k trials
 * against all trials; failed and infeasible trials with their reasons;
 * the config text. docs/report.md describes the page and its element ids.
 * *n_front (may be NULL) gets the size of the front under the
 * experiment's objectives. Reads only (the store may be read-only).
 * Errors: NAS_ENOTFOUND (no such experiment), NAS_EDB, NAS_ENOMEM,
 * NAS_EIO (writing `out` failed).
 */
int nas_report_write(nas_store *st, const nas_report_opts *opts, FILE *out, int *n_front,
                     nas_error *err);

#ifdef __cplusplus
}
#endif
#endif /* NAS_REPORT_H */
