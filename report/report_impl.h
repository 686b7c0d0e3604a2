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

#endif
