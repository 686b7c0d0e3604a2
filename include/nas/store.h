/*
 * nas/store.h - the results database: one SQLite file (WAL mode, busy
 * timeout 10 s) holding experiments, their trials and the trials' results.
 *
 * The schema is documented column by column in docs/schema.md. It is
 * versioned with `PRAGMA user_version` (NAS_STORE_SCHEMA_VERSION) and
 * marked with `PRAGMA application_id` (NAS_STORE_APPLICATION_ID), so a
 * SQLite file written by another program is refused instead of modified.
 *
 * An experiment is identified by its name within the database (the most
 * recent row of that name) and its defining settings (issue 22,
 * nas_config_diff): the controller resumes or extends it when they match
 * and refuses the run when they differ; the running settings (budget,
 * workers, ...) may change from run to run. Within an experiment a trial is
 * identified by the canonical key of its architecture (nas_space_key): the
 * same function is never trained twice. Schema 4 (issue 21) migrates older
 * files' keys (NAS-Bench-201's string) to it; docs/schema.md, "Canonical keys".
 *
 * Only the controller writes (short transactions, prepared statements);
 * `nas query` and `nas show` open the file read-only and may run while a
 * search writes. Every failure returns NAS_EDB (SQLite refused) or NAS_EIO
 * (file system) with a message naming the database path and SQLite's own
 * explanation (sqlite3_errmsg).
 */
#ifndef NAS_STORE_H
#define NAS_STORE_H

#include <stdint.h>
#include <stdio.h>
#include "nas/status.h"
#include "nas/space.h"
#include "nas/evaluator.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NAS_STORE_SCHEMA_VERSION 10 /* 2: trial.device_name, trial.device_cc;
                                      3: trial.flag, experiment.conf_canonical not UNIQUE;
                                      4: arch_key is the functional key (issue 21);
                                      5: table rung (issue 17, multi-fidelity);
                                      6: table trials' train_loss, latency_ms NULL;
                                      7: table trials' train_seconds NULL (issue 29);
                                      8: table proxy_check (issue 30);
                                      9: table zc_score (issue 31);
                                      10: tables supernet_epoch, finalist (issue 32) */
/* strategy_state row that migration 4 writes: trials with id <= its value
 * (text) were proposed under NAS-Bench-201's string (nas_space_nb201_str),
 * and the controller's replay dedupes them with it. */
#define NAS_STORE_NB201_KEYS_STATE "controller.nb201_keys_until"
#define NAS_STORE_APPLICATION_ID 0x6E617331 /* "nas1" */
#define NAS_STORE_TIME_MAX 32                /* "2024-01-31T12:34:56.789Z" */

typedef struct nas_store nas_store; /* opaque: one SQLite connection */

/* The byte of the database file a `nas run` holds an open-file-description
 * write lock on while it writes (search/run_lock.c), outside every range
 * SQLite's unix VFS locks. A store opened read-only tests it: when no run
 * holds it, experiments and trials stored as "running" (their run was
 * killed) are read as "interrupted". */
#define NAS_STORE_RUN_LOCK_BYTE 0x3FFFF000L

/* nas_store_open's `readonly` for a writer that checks before it writes:
 * as 0, but a file of an older schema is neither migrated nor switched to
 * WAL mode: the store reads it as readonly == 1 does (writes fail) until
 * nas_store_migrate. A new or current file opens as with 0. */
#define NAS_STORE_OPEN_DEFER 2

/*
 * Open the database at `path`. readonly == 0: create it (and its schema)
 * when missing, WAL mode; readonly == 1: the file must exist and is never
 * modified; NAS_STORE_OPEN_DEFER: see above. Errors: NAS_EIO (missing file
 * for read-only, directory missing or not writable), NAS_EDB (not a SQLite
 * file, a SQLite file of another program, a schema newer than this nas
 * knows, SQLite failure).
 */
int nas_store_open(const char *path, int readonly, nas_store **out, nas_error *err);
void nas_store_close(nas_store *st); /* NULL is a no-op */
const char *nas_store_path(const nas_store *st);
/* The schema version nas_store_open migrated the file from (the file was
 * older than NAS_STORE_SCHEMA_VERSION; a nas that old can no longer open it),
 * 0 when it migrated nothing. Callers that open read-write say so. */
int nas_store_migrated_from(const nas_store *st);
/* Migrate the file a NAS_STORE_OPEN_DEFER open kept as it is, and make the
 * store read-write (WAL mode); a no-op for any other store. On failure the
 * store stays read-only. Errors: NAS_EDB (SQLite, the migration). */
int nas_store_migrate(nas_store *st, nas_error *err);

/* ---- experiments ----------------------------------------------------------- */

typedef struct nas_store_experiment {
    int64_t id;
    char name[NAS_NAME_MAX];
    char strategy[NAS_NAME_MAX];
    char conf_path[NAS_PATH_MAX];
    uint64_t seed;
    int trials_budget;
    char status[16]; /* running | done | interrupted | failed | exhausted */
    char created_at[NAS_STORE_TIME_MAX];
    char updated_at[NAS_STORE_TIME_MAX];
    /* trial counts by status */
    int n_trials, n_pending, n_running, n_done, n_failed, n_interrupted;
    int n_diverged;           /* done trials flagged 'diverged' (schema 3) */
    int64_t best_trial;       /* issue 29: the best done, feasible trial by the one ranking
                                 (the highest fidelity, then the primary objective: store/
                                 store_impl.h NAS__STORE_RANK); -1 none */
    double best_val_accuracy; /* its val_accuracy; NaN when none */
} nas_store_experiment;

/*
 * Create an experiment (status "running"): `canonical` is the effective
 * config (nas_config_canonical), `conf_text` the file as written (for the
 * record). Names need not be unique (nas_store_experiment_find takes the
 * most recent). Errors: NAS_EDB.
 */
int nas_store_experiment_create(nas_store *st, const char *name, const char *canonical,
                                const char *conf_text, const char *conf_path, uint64_t seed,
                                const char *strategy, int trials_budget, int64_t *id,
                                nas_error *err);

/*
 * A new run of experiment `id` (issue 22): record the settings it runs
 * with - the canonical config, the file and its path, the budget
 * (search.trials; raising it extends the experiment). The caller checked
 * that the defining settings are unchanged (nas_config_diff).
 * Errors: NAS_EDB.
 */
int nas_store_experiment_update(nas_store *st, int64_t id, const char *canonical,
                                const char *conf_text, const char *conf_path, int trials_budget,
                                nas_error *err);

/*
 * The most recent experiment named `name` (*created 0; nothing is compared
 * or changed), or a new one (*created 1) made by
 * nas_store_experiment_create. Errors: NAS_EDB.
 */
int nas_store_experiment_open(nas_store *st, const char *name, const char *canonical,
                              const char *conf_text, const char *conf_path, uint64_t seed,
                              const char *strategy, int trials_budget, int64_t *id, int *created,
                              nas_error *err);

/* The experiment `id` with its trial counts. Errors: NAS_ENOTFOUND, NAS_EDB. */
int nas_store_experiment_get(nas_store *st, int64_t id, nas_store_experiment *out,
                             nas_error *err);

/* The most recent experiment named `name`; when `name` is NULL, the
 * default experiment of query, show, report and export (issue 22): the
 * most recent one with a done trial that has a val_accuracy, else the most
 * recent one. Errors: NAS_ENOTFOUND (message lists the names present),
 * NAS_EDB. */
int nas_store_experiment_find(nas_store *st, const char *name, nas_store_experiment *out,
                              nas_error *err);

/* Called once per experiment; return non-zero to stop early (not an error). */
typedef int (*nas_store_experiment_fn)(void *ctx, const nas_store_experiment *e);

/* Visit every experiment in id order. Works read-only. Errors: NAS_EDB. */
int nas_store_experiment_foreach(nas_store *st, nas_store_experiment_fn fn, void *ctx,
                                 nas_error *err);

/* The canonical config text of experiment `id` (malloc'd; caller frees). */
int nas_store_experiment_canonical(nas_store *st, int64_t id, char **out, nas_error *err);

int nas_store_experiment_set_status(nas_store *st, int64_t id, const char *status,
                                    nas_error *err);

/* ---- trials ---------------------------------------------------------------- */

typedef enum nas_trial_status {
    NAS_TRIAL_PENDING = 0, /* proposed, not yet given to a worker */
    NAS_TRIAL_RUNNING,     /* on a worker */
    NAS_TRIAL_DONE,        /* evaluated; result row present */
    NAS_TRIAL_FAILED,      /* evaluation failed; error says why */
    NAS_TRIAL_INTERRUPTED  /* stopped by Ctrl-C or a dead controller; re-run on resume */
} nas_trial_status;

/* "pending", "running", ...; NULL for an invalid value. */
const char *nas_trial_status_name(int status);
/* Errors: NAS_ENOTFOUND. */
int nas_trial_status_from_name(const char *name, nas_trial_status *out);

/* One trial row joined with its result and experiment name. Missing values
 * (SQL NULL) are NaN for doubles, -1 for integers, "" for strings. */
typedef struct nas_store_trial {
    int64_t id;
    int64_t experiment_id;
    char experiment[NAS_NAME_MAX];
    char genotype[NAS_GENOTYPE_STR_MAX];
    char arch_key[NAS_GENOTYPE_STR_MAX];
    char proposed_by[NAS_NAME_MAX];
    nas_trial_status status;
    int worker;
    int attempt; /* times it was started */
    char device[NAS_NAME_MAX];
    char created_at[NAS_STORE_TIME_MAX];
    char started_at[NAS_STORE_TIME_MAX];
    char finished_at[NAS_STORE_TIME_MAX];
    char error[512];
    int has_result;
    double val_accuracy;  /* [0,1] for trained trials */
    double test_accuracy;
    double train_loss;
    int64_t macs;         /* per image */
    int64_t params;
    double latency_ms;    /* batch 1, median */
    double train_seconds;
    int epochs;
    double score;         /* what the strategy observed (NaN: failed/infeasible) */
    char device_name[128]; /* device that ran it: GPU name or CPU model ("" unknown) */
    char device_cc[16];    /* GPU compute capability "8.0"; "" for the CPU */
    char flag[16];         /* issue 22: "diverged" for a done trial whose training diverged
                              (nas_search_diverged); "" otherwise (schema 3) */
    int64_t fidelity;      /* issue 17: the highest budget it has a rung result at
                              (search.fidelity.resource units); -1: none (a search
                              without a scheduler, or a file before schema 5) */
} nas_store_trial;

/*
 * Insert a pending trial. Errors: NAS_EEXIST when the experiment already
 * has a trial with `arch_key`, NAS_EDB.
 */
int nas_store_trial_insert(nas_store *st, int64_t exp_id, const char *genotype,
                           const char *arch_key, const char *proposed_by, int64_t *trial_id,
                           nas_error *err);

/* *known = 1 if the experiment has a trial (any status) with `arch_key`. */
int nas_store_trial_known(nas_store *st, int64_t exp_id, const char *arch_key, int *known,
                          nas_error *err);

/* Mark running on `worker` (device `device`): attempt + 1, started_at now,
 * error and finished_at cleared. */
int nas_store_trial_start(nas_store *st, int64_t trial_id, int worker, const char *device,
                          nas_error *err);

/*
 * Record a finished trial in one transaction: status done (res->status ==
 * NAS_OK) or failed (error = res->error), finished_at now, and its result
 * row (val_accuracy NULL when failed; negative or NaN measurements NULL).
 * `score` is what the strategy observed; `note` (may be NULL) is stored in
 * error for a done trial (e.g. a violated constraint). res->device_name /
 * device_cc, when set, go to trial.device_name / device_cc (schema 2).
 */
int nas_store_trial_finish(nas_store *st, int64_t trial_id, const nas_trial_result *res,
                           double score, const char *note, nas_error *err);

/* The same, and trial.flag = `flag` (issue 22: "diverged"; NULL or "": no
 * flag) for a done trial, in the same transaction. */
int nas_store_trial_finish_flagged(nas_store *st, int64_t trial_id, const nas_trial_result *res,
                                   double score, const char *note, const char *flag,
                                   nas_error *err);

/* Mark a trial interrupted with `reason`. */
int nas_store_trial_interrupt(nas_store *st, int64_t trial_id, const char *reason,
                              nas_error *err);

/* Errors: NAS_ENOTFOUND ("no trial N in PATH"), NAS_EDB. */
int nas_store_trial_get(nas_store *st, int64_t trial_id, nas_store_trial *out, nas_error *err);

typedef enum nas_store_order {
    NAS_STORE_ORDER_ID = 0, /* trial id ascending (proposal order) */
    NAS_STORE_ORDER_RANK    /* done by highest fidelity desc (issue 17; none without a
                               scheduler), then val_accuracy desc; then unfinished,
                               failed last */
} nas_store_order;

/* Called once per trial; return non-zero to stop early (not an error). */
typedef int (*nas_store_trial_fn)(void *ctx, const nas_store_trial *t);

/* Visit the trials of experiment `exp_id` in `order`, at most `limit`
 * (0 = all). Errors: NAS_EDB. */
int nas_store_trial_foreach(nas_store *st, int64_t exp_id, nas_store_order order, int limit,
                            nas_store_trial_fn fn, void *ctx, nas_error *err);

/* The same, only the trials whose highest fidelity (nas_store_trial.
 * fidelity, issue 17) is at least `min_fidelity` (<= 0: all), filtered in
 * the query, so `limit` counts the trials that pass. A file before schema
 * 5 has no fidelity: none pass a min_fidelity > 0. Errors: NAS_EDB. */
int nas_store_trial_foreach_min(nas_store *st, int64_t exp_id, nas_store_order order, int limit,
                                int64_t min_fidelity, nas_store_trial_fn fn, void *ctx,
                                nas_error *err);

/* ---- rungs of multi-fidelity search (store/rung.c; issue 17, schema 5) --------- */

/* One rung's result of a trial: its budget in search.fidelity.resource
 * units (epochs or images), validation accuracy in [0, 1] (NaN: none),
 * mean training loss of its last epoch, wall seconds of the rung's job. */
typedef struct nas_store_rung {
    int64_t trial_id;
    int64_t fidelity;
    double val_accuracy;
    double loss;
    double seconds;
} nas_store_rung;

/* Record (or replace) trial r->trial_id's result at r->fidelity, in one
 * transaction. NaN values are stored as NULL. Errors: NAS_EDB (also a
 * read-only store). */
int nas_store_rung_put(nas_store *st, const nas_store_rung *r, nas_error *err);

/* Issue 17: nas_store_trial_finish_flagged, and with `rung` (may be NULL) its rung row
 * (nas_store_rung_put), all in one transaction: a multi-fidelity search's
 * finished rung and the trial's result are stored together or not at all.
 * Errors: NAS_EDB (also a read-only store). */
int nas_store_trial_finish_rung(nas_store *st, int64_t trial_id, const nas_trial_result *res,
                                double score, const char *note, const char *flag,
                                const nas_store_rung *rung, nas_error *err);

/* Every rung row of experiment `exp_id` in (trial id, fidelity) order,
 * malloc'd into *out (caller frees; NULL when none), *n of them: the list
 * nas_store_rung_foreach visits. Errors: NAS_EDB, NAS_ENOMEM. */
int nas_store_rung_list(nas_store *st, int64_t exp_id, nas_store_rung **out, int *n,
                        nas_error *err);

/* Called once per rung row; return non-zero to stop early. */
typedef int (*nas_store_rung_fn)(void *ctx, const nas_store_rung *r);

/* Visit every rung result of experiment `exp_id` in (trial id, fidelity)
 * order. A file before schema 5 opened read-only has none. Errors: NAS_EDB. */
int nas_store_rung_foreach(nas_store *st, int64_t exp_id, nas_store_rung_fn fn, void *ctx,
                           nas_error *err);

/* ---- strategy state ----------------------------------------------------------- */

/* Save (replace) / load an opaque blob a strategy keeps for experiment
 * `exp_id` under `name`. get: *blob malloc'd (caller frees), NAS_ENOTFOUND
 * when absent. */
int nas_store_strategy_state_put(nas_store *st, int64_t exp_id, const char *name,
                                 const void *blob, size_t size, nas_error *err);
int nas_store_strategy_state_get(nas_store *st, int64_t exp_id, const char *name, void **blob,
                                 size_t *size, nas_error *err);

/* ---- proxy checks (schema 8, issue 30, `nas proxy-check`) -------------------------
 * An experiment whose strategy is NAS_STORE_PROXY_CHECK holds no trials:
 * its trainings are rows of table proxy_check (docs/schema.md). */

#define NAS_STORE_PROXY_CHECK "proxy-check"

typedef struct nas_store_pc_row {
    int64_t experiment_id;
    int arch;                           /* 0 .. K-1: the sampled architecture */
    char genotype[NAS_GENOTYPE_STR_MAX];
    int seed_index;                     /* 0 .. S-1 */
    uint64_t seed;                      /* the training seed */
    int rung;                           /* 0 .. rungs-1 */
    int64_t budget;                     /* the rung's budget (epochs or images) */
    double val_accuracy;                /* NaN: failed (error says why) */
    double train_loss, train_seconds, eval_seconds; /* NaN: unknown */
    char error[512];                    /* "" when it succeeded */
} nas_store_pc_row;

/* Insert (or replace) one training's row. Errors: NAS_EDB. */
int nas_store_pc_put(nas_store *st, const nas_store_pc_row *r, nas_error *err);

/* Every row of experiment `exp_id` (by arch, seed_index, rung) into *out
 * (malloc'd, caller frees; NULL when none) and *n. A file older than
 * schema 8 opened read-only has none. Errors: NAS_EDB, NAS_ENOMEM. */
int nas_store_pc_list(nas_store *st, int64_t exp_id, nas_store_pc_row **out, int *n,
                      nas_error *err);

/* ---- read-only queries for reports and `nas query --pareto` ---------------------
 * (store/query.c; they never write, so they work on a store opened
 * read-only while a search runs) */

/* The config file of experiment `id` as it was written (column conf_text),
 * malloc'd; the caller frees. Errors: NAS_ENOTFOUND, NAS_EDB, NAS_ENOMEM. */
int nas_store_experiment_conf_text(nas_store *st, int64_t id, char **out, nas_error *err);

/*
 * The objectives and constraints experiment `id` ran with, read back from
 * its canonical config (nas_config_canonical) and validated by the config
 * parser: *cfg gets every default, then n_objectives, objectives[] and
 * constraints. Errors: NAS_ENOTFOUND, NAS_EDB, NAS_EFORMAT (the stored
 * text has no readable objectives; *cfg then holds the defaults: one
 * objective, val_accuracy, maximised, no constraints).
 */
int nas_store_experiment_objectives(nas_store *st, int64_t id, nas_config *cfg, nas_error *err);

/*
 * A stored trial as the nas_trial_result the controller had (to replay it
 * through nas_strategy_observe_result, or read it with
 * nas_objective_value): status NAS_OK for a done trial; for any other
 * status NAS_EWORKER with the stored reason in error (the exact code of a
 * failure is not stored). Missing measurements stay missing (NaN doubles,
 * -1 counts).
 */
void nas_store_trial_result(const nas_store_trial *t, nas_trial_result *res);

/* Every trial of experiment `exp_id` in id order: *out is a malloc'd
 * array of *n trials (NULL when none); the caller frees it.
 * Errors: NAS_EDB, NAS_ENOMEM (then *out = NULL, *n = 0). */
int nas_store_trial_list(nas_store *st, int64_t exp_id, nas_store_trial **out, int *n,
                         nas_error *err);

/* 1 if a done trial is feasible: it has a stored score (the controller
 * scores trials that violate a constraint NaN, stored as NULL). */
int nas_store_trial_feasible(const nas_store_trial *t);

/*
 * The Pareto front of experiment `exp_id` under `n_obj` objectives `obj`
 * (1..NAS_MAX_OBJECTIVES; e.g. those of nas_store_experiment_objectives):
 * among done, feasible trials whose objective values are all measured,
 * those no other such trial dominates (nas_pareto_front: duplicates and
 * ties are all on the front). With rung results (issue 17) only the
 * candidates at the highest fidelity any of them reached take part, the
 * rule of `nas export --best`. *out is a malloc'd array of *n trials (NULL
 * when none), best first by the first objective, ties by id.
 * Errors: NAS_EINVAL (n_obj out of range, unknown metric), NAS_EDB,
 * NAS_ENOMEM.
 */
int nas_store_pareto(nas_store *st, int64_t exp_id, const nas_objective *obj, int n_obj,
                     nas_store_trial **out, int *n, nas_error *err);

/* ---- export artifacts (store/export_store.c; issue 5) ----------------------------
 * Two tables created on first write with CREATE TABLE IF NOT EXISTS (no
 * schema-version change; docs/export.md lists their columns). They open
 * their own connection on nas_store_path(st), like store/query.c. */

/* Record that trial `trial_id`'s trained proxy weights are in `path` (an
 * .npz from nas_weights_save; stored as an absolute path when the file
 * exists); replaces an earlier record. The store must
 * be open read-write. Errors: NAS_EDB. */
int nas_store_trial_weights_put(nas_store *st, int64_t trial_id, const char *path,
                                nas_error *err);

/* The weights file recorded for `trial_id` into path[n]. Works on a
 * read-only store. Errors: NAS_ENOTFOUND (none kept: the message says to
 * set proxy.keep_weights or export with --weights init), NAS_EDB. */
int nas_store_trial_weights_get(nas_store *st, int64_t trial_id, char *path, size_t n,
                                nas_error *err);

/*
 * Keep the weights of the best `keep_top` trials of experiment `exp_id`
 * (issue 22; proxy.keep_top, proxy.weights_mb): rank its kept weights as
 * `nas export --best` ranks trials (with rung results, issue 17, the
 * highest fidelity first; then the stored score, i.e. the primary
 * objective oriented, best first; ties by lower id), keep the first
 * keep_top whose files fit together in `max_bytes` (<= 0: no limit; a file
 * that does not fit is skipped, later smaller ones may still fit), and
 * delete the rest: their trial_weights rows in one transaction, then
 * their files (unlink): only the file of that name in this database's own
 * DB.weights/ folder (a copied or moved database never deletes the
 * original's files, whose absolute paths its rows still hold). Weights
 * of trials with no score (failed or infeasible) are never kept.
 * *n_deleted (may be NULL) gets the number of files removed. The store must be open read-write.
 * Errors: NAS_EDB, NAS_ENOMEM (nothing is deleted then).
 */
int nas_store_trial_weights_prune(nas_store *st, int64_t exp_id, int keep_top, double max_bytes,
                                  int *n_deleted, nas_error *err);

/* One finished `nas train ARCH.json --db PATH`. Missing numbers: NaN, -1. */
typedef struct nas_store_final_training {
    int64_t experiment_id, trial_id; /* from ARCH.json; -1 (or absent from the db): NULL */
    char genotype[NAS_GENOTYPE_STR_MAX];
    char arch_json[NAS_PATH_MAX];
    int epochs;
    char recipe[512];   /* "epochs=.. batch_size=.. lr=.. ..." */
    char augment[64];   /* "none", "crop", "flip", "crop,flip" */
    char backend[NAS_NAME_MAX];
    int64_t train_images;
    double test_accuracy, test_loss, train_loss, train_accuracy, train_seconds;
    int64_t params, macs;
    char checkpoint[NAS_PATH_MAX];
    int64_t id;                          /* row id (read back only) */
    char created_at[NAS_STORE_TIME_MAX]; /* read back only */
} nas_store_final_training;

/* Insert `f` into final_training; *id (may be NULL) gets its row id.
 * Errors: NAS_EDB. */
int nas_store_final_training_put(nas_store *st, const nas_store_final_training *f, int64_t *id,
                                 nas_error *err);

/* The final trainings (issue 22) of experiment `exp_id` (-1: any) and of
 * trial `trial_id` (-1: any) in row order: *out is a malloc'd array of *n
 * rows (NULL when none; a database without the table has none); the
 * caller frees it. A row's mode ("full" or "proxy") is the first word of
 * its recipe. Works on a read-only store. Errors: NAS_EDB, NAS_ENOMEM. */
int nas_store_final_training_list(nas_store *st, int64_t exp_id, int64_t trial_id,
                                  nas_store_final_training **out, int *n, nas_error *err);

/* 1 when final training `f` was a full training (recipe "mode=full ..."),
 * 0 for a `nas train --proxy` rerun of the proxy. */
int nas_store_final_training_is_full(const nas_store_final_training *f);

/*
 * Issue 31: the zero-cost score cache (table zc_score, schema 9;
 * store/zc_cache.c): the score of proxy `proxy` (a nas/zerocost.h name)
 * for canonical key `key` under experiment exp_id, as a warm-up or a move
 * proposal computed it. NaN stands for a proxy that failed (stored NULL).
 * _get: NAS_OK and *score, or NAS_ENOTFOUND (not scored yet, or a
 * read-only file older than schema 9); _put: insert or replace, in its own
 * transaction; _foreach: fn for every proxy scored for `key`, by name.
 * Errors: NAS_EDB.
 */
int nas_store_zc_get(nas_store *st, int64_t exp_id, const char *proxy, const char *key,
                     double *score, nas_error *err);
int nas_store_zc_put(nas_store *st, int64_t exp_id, const char *proxy, const char *key,
                     double score, nas_error *err);
int nas_store_zc_foreach(nas_store *st, int64_t exp_id, const char *key,
                         void (*fn)(void *ctx, const char *proxy, double score), void *ctx,
                         nas_error *err);

/* ---- issue 32: one-shot search (store/oneshot_store.c, schema 10) ----------- */

/* One finished epoch of a supernet's training (phase 1): the mean training
 * loss and accuracy of the paths sampled in it, and its seconds. */
typedef struct nas_store_sn_epoch {
    int epoch; /* 1-based */
    double loss, accuracy, seconds;
} nas_store_sn_epoch;

/* Record (insert or replace) epoch e->epoch of experiment exp_id's
 * supernet. Errors: NAS_EDB. */
int nas_store_supernet_epoch_put(nas_store *st, int64_t exp_id, const nas_store_sn_epoch *e,
                                 nas_error *err);

/* Experiment exp_id's supernet curve by epoch: *rows (malloc'd, the caller
 * frees; NULL when none), *n rows. A read-only file before schema 10 has
 * none. Errors: NAS_EDB, NAS_ENOMEM. */
int nas_store_supernet_curve(nas_store *st, int64_t exp_id, nas_store_sn_epoch **rows, int *n,
                             nas_error *err);

/* A finalist: a trial of the finalists experiment (retrained stand-alone
 * with the proxy recipe, phase 3) and the supernet trial of the same
 * canonical key it was chosen from. */
typedef struct nas_store_finalist {
    int64_t trial_id, experiment_id;                   /* the stand-alone trial */
    int64_t supernet_trial_id, supernet_experiment_id; /* the supernet trial */
    char genotype[NAS_GENOTYPE_STR_MAX];
    int done;                   /* the stand-alone trial is done */
    double supernet_accuracy;   /* val_accuracy by inherited weights (NaN: none) */
    double standalone_accuracy; /* val_accuracy retrained (NaN: none yet) */
} nas_store_finalist;

/* Link every trial of experiment finalists_exp to the trial of
 * supernet_exp with the same arch_key (idempotent: links made before
 * stay). Errors: NAS_EINVAL (the same experiment twice), NAS_EDB. */
int nas_store_finalist_link(nas_store *st, int64_t finalists_exp, int64_t supernet_exp,
                            nas_error *err);

/* The finalists of experiment exp_id, whether it is the supernet search
 * or its finalists experiment, by stand-alone trial id: *rows (malloc'd,
 * the caller frees), *n. Errors: NAS_EDB, NAS_ENOMEM. */
int nas_store_finalist_list(nas_store *st, int64_t exp_id, nas_store_finalist **rows, int *n,
                            nas_error *err);

#ifdef __cplusplus
}
#endif
#endif /* NAS_STORE_H */
