/*
 * report/report_impl.h - internal to report/: helpers its views share.
 */
#ifndef NAS_REPORT_IMPL_H
#define NAS_REPORT_IMPL_H

#include <stdio.h>
#include "nas/status.h"

/* Write `s` to f as one RFC 4180 CSV field: quoted (quotes doubled) when
 * it holds a comma, a quote or a line break. report/experiments.c. */
void nas__report_csv_field(FILE *f, const char *s);

/* Flush `out`; NAS_EIO "cannot write the output: ..." when that or an
 * earlier write failed. report/experiments.c. */
int nas__report_flush(FILE *out, nas_error *err);

/* Issue 17: the section of rung-by-rung learning curves of experiment
 * `exp_id` (report/rungs.c): an SVG of validation accuracy against budget,
 * one line per trial; nothing when the experiment has no rungs. Errors:
 * the store's, NAS_ENOMEM. */
#include <stdint.h>
struct nas_store;
int nas__report_rungs(FILE *f, struct nas_store *st, int64_t exp_id, nas_error *err);

/* Issue 33: `s` as HTML text or attribute value, & < > " ' escaped.
 * report/trial_table.c. */
void nas__report_html(FILE *f, const char *s);

/* Trial t's value of objective `metric` as the report shows it
 * (val_accuracy %.4f, latency_ms %.3f, counts %.0f; "-" when missing).
 * report/trial_table.c. */
struct nas_store_trial;
void nas__report_metric_text(const struct nas_store_trial *t, const char *metric, char *buf,
                             size_t n);

/* Issue 33: the section "All trials": a table of the n trials t (id
 * order) with the objectives of `obj`, MACs, params, latency, fidelity
 * and training seconds, sortable by its headers with a small inline
 * script (a plain table without it). report/trial_table.c. */
struct nas_config;
void nas__report_trial_table(FILE *f, const struct nas_store_trial *t, int n,
                             const struct nas_config *obj);

/* The table's sorting script (JavaScript, no <script> tags: the page has
 * one script element). report/trial_table.c. */
void nas__report_trial_table_script(FILE *f);

/* A linear axis of a chart: lo .. hi with a grid every `step`, tick labels
 * with `decimals` decimals. */
typedef struct nas__report_axis {
    double lo, hi, step;
    int decimals;
} nas__report_axis;

/* Fit a 1-2-5 grid of about `ticks` intervals around [lo, hi] (a single
 * value is padded; non-finite bounds give 0 .. 1). report/report.c. */
void nas__report_axis_fit(nas__report_axis *a, double lo, double hi, int ticks);

/* Issue 32: the section "One-shot supernet" (report/oneshot_section.c) for
 * experiment `exp_id` when it is a one-shot search (it has a supernet
 * curve) or its finalists experiment (its trials link to supernet trials;
 * the supernet experiment is found through the links): the supernet's
 * training curve, the finalists' supernet accuracy against their
 * stand-alone accuracy with Kendall's tau, and a table of the finalists.
 * Nothing for any other experiment. Errors: the store's, NAS_ENOMEM. */
int nas__report_oneshot(FILE *f, struct nas_store *st, int64_t exp_id, nas_error *err);

#endif
