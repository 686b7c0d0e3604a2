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

/* A done trial's flag, as the report's trial table and nas query's table
 * show it: the stored flag ("diverged"), else what its result says:
 * "rejected" (done without an accuracy: over constraints.latency_ms, never
 * trained), "infeasible" (no score: violates a constraint); "" otherwise. */
const char *nas__report_flag(const struct nas_store_trial *t);

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

/* ---- issue 32: one-shot trials in `nas query` and `nas show` (report/oneshot_trials.c) --- */

/* What `nas query` needs to mark an experiment's one-shot trials. */
struct nas_store_finalist;
struct nas_store_trial;
struct json_t;
typedef struct nas__report_os {
    int64_t exp_id;
    struct nas_store_finalist *fin; /* nas_store_finalist_list(exp_id) */
    int n_fin;
    int supernet_exp;  /* exp_id scores subnets by inherited weights (a curve, or finalists
                          chosen from it) */
    int finalists_exp; /* exp_id's trials retrain supernet trials */
    int active;        /* either: the one-shot columns show */
} nas__report_os;

/* Load / free *os for experiment exp_id. Errors: the store's. */
int nas__report_os_load(struct nas_store *st, int64_t exp_id, nas__report_os *os,
                        nas_error *err);
void nas__report_os_free(nas__report_os *os);

/* The finalist link of trial `trial`: as the stand-alone trial
 * (supernet_side 0) or as the supernet trial (1); NULL when none. */
const struct nas_store_finalist *nas__report_os_link(const nas__report_os *os, int64_t trial,
                                                     int supernet_side);

/* "finalist" (a retrained trial), "supernet" (device 'supernet', or any
 * trial of a supernet experiment) or "trained". */
const char *nas__report_os_kind(const nas__report_os *os, const struct nas_store_trial *t);

/* `nas query`'s one-shot columns, nothing when !os->active: the table's
 * header, note line and cells (kind; sn_trial, sn_acc in a finalists
 * experiment; retrained, retr_acc in a supernet experiment with
 * finalists); the CSV's header and cells (kind, supernet_trial,
 * supernet_accuracy, retrained_trial, retrained_accuracy, after fidelity);
 * the JSON object's fields of the same names. */
void nas__report_os_table_header(FILE *f, const nas__report_os *os);
void nas__report_os_table_note(FILE *f, const nas__report_os *os);
void nas__report_os_table_row(FILE *f, const nas__report_os *os, const struct nas_store_trial *t);
void nas__report_os_csv_header(FILE *f, const nas__report_os *os);
void nas__report_os_csv_row(FILE *f, const nas__report_os *os, const struct nas_store_trial *t);
void nas__report_os_json_row(struct json_t *o, const nas__report_os *os,
                             const struct nas_store_trial *t);

/* `nas show`: trial t's kind and its link in a one-shot search ("retrained
 * as trial N (val_accuracy A)" / "chosen from supernet trial M of
 * experiment 'X' (supernet accuracy A)"); nothing for other trials.
 * Errors: the store's. */
int nas__report_os_show(FILE *f, struct nas_store *st, const struct nas_store_trial *t,
                        nas_error *err);

#endif
