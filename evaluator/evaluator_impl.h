/*
 * evaluator/evaluator_impl.h - the look-up table behind the "table"
 * evaluator (internal; see evaluator/table.c).
 */
#ifndef NAS_EVALUATOR_IMPL_H
#define NAS_EVALUATOR_IMPL_H

#include "nas/status.h"

typedef struct nas__table nas__table;

/*
 * Load a CSV with a header row; the key column is `cellstr` (or, failing
 * that, `genotype`: the genotype string; failing both, `key`: the
 * canonical key, see nas__table_by_key); `column` is required, `test_column` optional (NULL or
 * "" = none). Errors: NAS_EIO (cannot read), NAS_EFORMAT ("FILE:LINE: ..."),
 * NAS_ENOMEM.
 */
int nas__table_load(const char *path, const char *column, const char *test_column,
                    nas__table **out, nas_error *err);

/* Most data rows (lines after the header) a table may have: 10 million
 * (NAS-Bench-201 has 15,625; docs/space-conf.md, "Limits"). */
#define NAS__TABLE_MAX_ROWS 10000000

/* nas__table_load with another row limit (tests): a table with more than
 * `max_rows` data rows is NAS_EFORMAT ("FILE:LINE: more than N data rows")
 * as soon as the reader gets there. */
int nas__table_load_limited(const char *path, const char *column, const char *test_column,
                            int max_rows, nas__table **out, nas_error *err);
void nas__table_destroy(nas__table *t); /* NULL is a no-op */
/* 1 when the table is keyed by canonical key (column `key`, no `cellstr`
 * or `genotype` column): look genotypes up by nas_space_key. */
int nas__table_by_key(const nas__table *t);
/* Number of rows. */
int nas__table_rows(const nas__table *t);
/* Values of row `key`; *test gets -1 when there is no test column.
 * Returns NAS_OK or NAS_ENOTFOUND. */
int nas__table_lookup(const nas__table *t, const char *key, double *value, double *test);

/* `nas space --list|--samples --zero-cost` (evaluator/zerocost_list.c):
 * CSV rows "genotype,key,macs,params,<metric>..." for the valid genotypes
 * among the first `count` of the enumeration (sample 0) or for `count`
 * genotypes sampled with PCG32(seed) (sample 1); `metrics` a
 * comma-separated list of nas/zerocost.h names. Progress on stderr.
 * Errors: NAS_EINVAL (unknown proxy; a data-dependent proxy in a table
 * search), data and backend errors, NAS_EIO. */
#include <stdio.h>
#include <stdint.h>
#include "nas/space.h"
int nas__zc_list(FILE *out, const nas_config *cfg, const nas_space *sp, uint64_t count, int sample,
                 uint64_t seed, const char *metrics, nas_error *err);

/* ---- issue 32: evaluator.kind = "supernet" (evaluator/supernet_eval.c) ---- */
#include "nas/trainer.h"
typedef struct nas__sn_eval nas__sn_eval;
/* The supernet kind's state for the training split `train` (borrowed, as
 * cfg and space): its recipe (nas_supernet_recipe), fingerprint, and the
 * calibration sample (supernet.recal_batches x batch images of train,
 * seeded by cfg->seed), made once so forked workers share it. Errors:
 * NAS_ENOMEM, nas_dataset_sample's. */
int nas__sn_eval_create(const nas_config *cfg, const nas_space *space, const nas_dataset *train,
                        const nas_data_info *info, nas__sn_eval **out, nas_error *err);
void nas__sn_eval_destroy(nas__sn_eval *s); /* NULL is a no-op */
/* The directory the checkpoint lives in (DB.supernet). NAS_EINVAL: too long. */
int nas__sn_eval_set_dir(nas__sn_eval *s, const char *dir);
/* DIR/supernet-CRC.npz (curve 0: the checkpoint), .tsv (curve 1: its
 * training curve) or .weights (curve 2: the flat weights file workers map)
 * into buf[n]; NAS_ENOTFOUND when no directory is set. */
int nas__sn_eval_path(const nas__sn_eval *s, int curve, char *buf, size_t n);
/* Phase 1 on backend `be` in the calling process: nas_evaluator_prepare;
 * once the supernet is trained (now or before), the weights file (curve 2)
 * is checked and written when missing, stale or damaged (a failure to
 * write it is a warning on log). */
int nas__sn_eval_train(nas__sn_eval *s, nas_backend *be, FILE *log, nas_error *err);
/* Phase 2: accuracy of g by inherited weights (nas_supernet_evaluate), the
 * weights file mapped read-only once per process (nas_supernet_map; when it
 * is missing or invalid, a warning on stderr and the checkpoint read
 * instead). Errors: NAS_EWORKER (no checkpoint on
 * this worker: its file system, so the trial is retried as after a crash),
 * NAS_EINVAL (phase 1 unfinished), nas_supernet_load's and _evaluate's. */
int nas__sn_eval_run(nas__sn_eval *s, nas_backend *be, const nas_genotype *g,
                     const nas_dataset *valid, double *acc, double *loss, nas_error *err);
/* nas_evaluator_supernet_subnet_save: the subnet nas__sn_eval_run measures,
 * its accuracy on the same images into *acc, its weights saved to path. */
int nas__sn_eval_subnet_save(nas__sn_eval *s, nas_backend *be, const nas_genotype *g,
                             const nas_dataset *valid, const char *path, double *acc,
                             nas_error *err);
/* nas_evaluator_supernet_recal_batches. */
int nas__sn_eval_recal_batches(const nas__sn_eval *s);
/* The training curve: nas_evaluator_supernet_curve. */
int nas__sn_eval_curve(const nas__sn_eval *s, nas_epoch_stats **rows, int *n, nas_error *err);

#endif
