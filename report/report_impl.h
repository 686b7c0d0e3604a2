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

#endif
