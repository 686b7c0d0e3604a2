/*
 * tests/unit/test_store.c - the SQLite store: round trip of experiments,
 * trials and results; experiments by name, the default experiment and the
 * version 2 -> 3 migration (issue 22); one trial per arch key;
 * refusal of foreign files; read-only access.
 */
#include <setjmp.h> /* cmocka needs these three first */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sqlite3.h> /* to build foreign databases and inspect ours */
#include "nas/store.h"

typedef struct fixture {
    char dir[256];
    char db[300];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/nas_test_store_XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->db, sizeof f->db, "%s/nas.db", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", f->dir);
    free(f);
    return 0;
}

static nas_trial_result make_result(double val, int64_t macs, int64_t params)
{
    nas_trial_result r;
    memset(&r, 0, sizeof r);
    r.status = NAS_OK;
    r.val_accuracy = val;
    r.test_accuracy = -1;
    r.train_loss = 0.5;
    r.macs = macs;
    r.params = params;
    r.latency_ms = 1.25;
    r.train_seconds = 12.5;
    r.epochs = 2;
    return r;
}

typedef struct collected {
    int n;
    int64_t id[16];
    nas_trial_status status[16];
    double val[16];
} collected;

static int collect(void *ctx, const nas_store_trial *t)
{
    collected *c = ctx;
    if (c->n < 16) {
        c->id[c->n] = t->id;
        c->status[c->n] = t->status;
        c->val[c->n] = t->val_accuracy;
    }
    c->n++;
    return 0;
}

static void test_round_trip(void **state)
{
    fixture *f = *state;
    nas_error err;
    nas_store *st = NULL;
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK);
    assert_string_equal(nas_store_path(st), f->db);

    int64_t exp = -1;
    int created = 0;
    assert_int_equal(nas_store_experiment_open(st, "exp-a", "a = 1;\n", "a = 1; # text\n",
                                               "a.conf", 42, "evolution", 3, &exp, &created, &err),
                     NAS_OK);
    assert_true(exp > 0);
    assert_int_equal(created, 1);

    int64_t t1, t2, t3;
    assert_int_equal(nas_store_trial_insert(st, exp, "|g1|", "k1", "evolution", &t1, &err), NAS_OK);
    assert_int_equal(nas_store_trial_insert(st, exp, "|g2|", "k2", "evolution", &t2, &err), NAS_OK);
    assert_int_equal(nas_store_trial_insert(st, exp, "|g3|", "k3", "random", &t3, &err), NAS_OK);
    assert_true(t1 < t2 && t2 < t3);

    int known = -1;
    assert_int_equal(nas_store_trial_known(st, exp, "k2", &known, &err), NAS_OK);
    assert_int_equal(known, 1);
    assert_int_equal(nas_store_trial_known(st, exp, "k9", &known, &err), NAS_OK);
    assert_int_equal(known, 0);

    /* t1 done, t2 failed, t3 started twice then interrupted. */
    assert_int_equal(nas_store_trial_start(st, t1, 0, "cpu", &err), NAS_OK);
    nas_trial_result r1 = make_result(0.75, 1000, 200);
    assert_int_equal(nas_store_trial_finish(st, t1, &r1, 0.75, NULL, &err), NAS_OK);
    assert_int_equal(nas_store_trial_start(st, t2, 1, "cpu", &err), NAS_OK);
    nas_trial_result r2 = make_result(NAN, 500, 100);
    r2.status = NAS_ENAN;
    snprintf(r2.error, sizeof r2.error, "loss became NaN at epoch 1 step 3");
    assert_int_equal(nas_store_trial_finish(st, t2, &r2, NAN, NULL, &err), NAS_OK);
    assert_int_equal(nas_store_trial_start(st, t3, 0, "ref", &err), NAS_OK);
    assert_int_equal(nas_store_trial_start(st, t3, 0, "ref", &err), NAS_OK);
    assert_int_equal(nas_store_trial_interrupt(st, t3, "interrupted by SIGINT", &err), NAS_OK);

    nas_store_trial t;
    assert_int_equal(nas_store_trial_get(st, t1, &t, &err), NAS_OK);
    assert_int_equal(t.status, NAS_TRIAL_DONE);
    assert_string_equal(t.genotype, "|g1|");
    assert_string_equal(t.arch_key, "k1");
    assert_string_equal(t.proposed_by, "evolution");
    assert_string_equal(t.experiment, "exp-a");
    assert_string_equal(t.device, "cpu");
    assert_int_equal(t.attempt, 1);
    assert_int_equal(t.worker, 0);
    assert_true(t.has_result);
    assert_float_equal(t.val_accuracy, 0.75, 1e-12);
    assert_true(isnan(t.test_accuracy)); /* -1 stored as NULL */
    assert_int_equal(t.macs, 1000);
    assert_int_equal(t.params, 200);
    assert_float_equal(t.latency_ms, 1.25, 1e-12);
    assert_float_equal(t.train_seconds, 12.5, 1e-12);
    assert_int_equal(t.epochs, 2);
    assert_float_equal(t.score, 0.75, 1e-12);
    assert_true(t.started_at[0] != '\0' && t.finished_at[0] != '\0');
    assert_string_equal(t.error, "");

    assert_int_equal(nas_store_trial_get(st, t2, &t, &err), NAS_OK);
    assert_int_equal(t.status, NAS_TRIAL_FAILED);
    assert_string_equal(t.error, "loss became NaN at epoch 1 step 3");
    assert_true(isnan(t.val_accuracy));
    assert_true(isnan(t.score));
    assert_int_equal(t.macs, 500);

    assert_int_equal(nas_store_trial_get(st, t3, &t, &err), NAS_OK);
    assert_int_equal(t.status, NAS_TRIAL_INTERRUPTED);
    assert_int_equal(t.attempt, 2);
    assert_string_equal(t.error, "interrupted by SIGINT");
    assert_false(t.has_result);

    assert_int_equal(nas_store_trial_get(st, 999, &t, &err), NAS_ENOTFOUND);
    assert_non_null(strstr(err.msg, "999"));

    nas_store_experiment e;
    assert_int_equal(nas_store_experiment_get(st, exp, &e, &err), NAS_OK);
    assert_string_equal(e.name, "exp-a");
    assert_string_equal(e.strategy, "evolution");
    assert_int_equal(e.seed, 42);
    assert_int_equal(e.trials_budget, 3);
    assert_int_equal(e.n_trials, 3);
    assert_int_equal(e.n_done, 1);
    assert_int_equal(e.n_failed, 1);
    assert_int_equal(e.n_interrupted, 1);
    assert_string_equal(e.status, "running");
    assert_int_equal(nas_store_experiment_set_status(st, exp, "interrupted", &err), NAS_OK);
    assert_int_equal(nas_store_experiment_find(st, "exp-a", &e, &err), NAS_OK);
    assert_string_equal(e.status, "interrupted");
    assert_int_equal(nas_store_experiment_find(st, "nope", &e, &err), NAS_ENOTFOUND);
    assert_non_null(strstr(err.msg, "exp-a")); /* lists what there is */

    /* Listing orders: by id; by rank (done first, failed last). */
    collected c = {0};
    assert_int_equal(nas_store_trial_foreach(st, exp, NAS_STORE_ORDER_ID, 0, collect, &c, &err),
                     NAS_OK);
    assert_int_equal(c.n, 3);
    assert_true(c.id[0] == t1 && c.id[1] == t2 && c.id[2] == t3);
    memset(&c, 0, sizeof c);
    assert_int_equal(nas_store_trial_foreach(st, exp, NAS_STORE_ORDER_RANK, 0, collect, &c, &err),
                     NAS_OK);
    assert_int_equal(c.n, 3);
    assert_true(c.id[0] == t1 && c.id[1] == t3 && c.id[2] == t2);
    memset(&c, 0, sizeof c);
    assert_int_equal(nas_store_trial_foreach(st, exp, NAS_STORE_ORDER_RANK, 2, collect, &c, &err),
                     NAS_OK);
    assert_int_equal(c.n, 2);

    /* Strategy state. */
    const char blob[] = "population: 1 2 3";
    assert_int_equal(nas_store_strategy_state_put(st, exp, "evolution", blob, sizeof blob, &err),
                     NAS_OK);
    void *back = NULL;
    size_t size = 0;
    assert_int_equal(nas_store_strategy_state_get(st, exp, "evolution", &back, &size, &err),
                     NAS_OK);
    assert_int_equal(size, sizeof blob);
    assert_memory_equal(back, blob, sizeof blob);
    free(back);
    assert_int_equal(nas_store_strategy_state_get(st, exp, "nao", &back, &size, &err),
                     NAS_ENOTFOUND);
    assert_null(back);
    nas_store_close(st);

    /* The file is marked as ours and in WAL mode. */
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA application_id", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(s, 0), NAS_STORE_APPLICATION_ID);
    sqlite3_finalize(s);
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(s, 0), NAS_STORE_SCHEMA_VERSION);
    sqlite3_finalize(s);
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(s, 0), "wal");
    sqlite3_finalize(s);
    sqlite3_close(db);
}

/* Issue 22: an experiment is found by its name (the most recent row of
 * it), whatever its canonical text; names and canonical texts may repeat;
 * the default experiment is the most recent with a done trial. */
static void test_experiment_by_name(void **state)
{
    fixture *f = *state;
    nas_error err;
    nas_store *st = NULL;
    int64_t a = -1, a2 = -1, b = -1, c = -1;
    int created = -1;
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK);
    assert_int_equal(nas_store_experiment_open(st, "x", "seed = 1;\n", "", "x.conf", 1, "random",
                                               4, &a, &created, &err),
                     NAS_OK);
    assert_int_equal(created, 1);
    /* Same name, another config: the same experiment (the caller compares). */
    assert_int_equal(nas_store_experiment_open(st, "x", "seed = 2;\n", "", "x.conf", 2, "random",
                                               4, &a2, &created, &err),
                     NAS_OK);
    assert_int_equal(created, 0);
    assert_int_equal(a2, a);
    /* A new run records its running settings: budget and canonical text. */
    assert_int_equal(nas_store_experiment_update(st, a, "seed = 1;\ntrials = 9;\n", "t", "y.conf",
                                                 9, &err),
                     NAS_OK);
    nas_store_experiment e;
    assert_int_equal(nas_store_experiment_get(st, a, &e, &err), NAS_OK);
    assert_int_equal(e.trials_budget, 9);
    assert_string_equal(e.conf_path, "y.conf");
    char *canon = NULL;
    assert_int_equal(nas_store_experiment_canonical(st, a, &canon, &err), NAS_OK);
    assert_string_equal(canon, "seed = 1;\ntrials = 9;\n");
    free(canon);
    /* Another row of the same name and text (nas run --new, no UNIQUE):
     * the name now finds it. */
    assert_int_equal(nas_store_experiment_create(st, "x", "seed = 1;\ntrials = 9;\n", "", "", 1,
                                                 "random", 9, &b, &err),
                     NAS_OK);
    assert_true(b > a);
    assert_int_equal(nas_store_experiment_find(st, "x", &e, &err), NAS_OK);
    assert_int_equal(e.id, b);
    assert_int_equal(nas_store_experiment_create(st, "y", "y", "", "", 1, "random", 2, &c, &err),
                     NAS_OK);
    /* The default: the most recent with a done trial (a), else the newest. */
    assert_int_equal(nas_store_experiment_find(st, NULL, &e, &err), NAS_OK);
    assert_int_equal(e.id, c);
    int64_t t;
    assert_int_equal(nas_store_trial_insert(st, a, "|g|", "k", "random", &t, &err), NAS_OK);
    nas_trial_result r = make_result(0.75, 100, 10);
    assert_int_equal(nas_store_trial_finish(st, t, &r, 0.75, NULL, &err), NAS_OK);
    assert_int_equal(nas_store_trial_insert(st, c, "|g|", "k", "random", &t, &err), NAS_OK);
    r.status = NAS_ENAN;
    assert_int_equal(nas_store_trial_finish(st, t, &r, NAN, NULL, &err), NAS_OK);
    assert_int_equal(nas_store_experiment_find(st, NULL, &e, &err), NAS_OK);
    assert_int_equal(e.id, a);
    assert_int_equal(e.best_trial, 1);
    assert_true(fabs(e.best_val_accuracy - 0.75) < 1e-12);
    nas_store_close(st);
}

/* Issue 22: a version-2 file (as nas wrote it before: experiment with
 * UNIQUE(conf_canonical), no trial.flag) reads as it is when opened
 * read-only and is migrated to version 3 read-write: ids kept, two
 * experiments may then share a canonical text, trial.flag recorded. */
static const char V2_FILE[] =
    "CREATE TABLE experiment(id INTEGER PRIMARY KEY, name TEXT NOT NULL, conf_canonical TEXT "
    "NOT NULL UNIQUE, conf_text TEXT NOT NULL, conf_path TEXT NOT NULL, seed INTEGER NOT NULL, "
    "strategy TEXT NOT NULL, trials_budget INTEGER NOT NULL, created_at TEXT NOT NULL, "
    "updated_at TEXT NOT NULL, status TEXT NOT NULL CHECK(status IN "
    "('running','done','interrupted','failed','exhausted')));"
    "CREATE TABLE trial(id INTEGER PRIMARY KEY, experiment_id INTEGER NOT NULL REFERENCES "
    "experiment(id), genotype TEXT NOT NULL, arch_key TEXT NOT NULL, proposed_by TEXT NOT NULL, "
    "status TEXT NOT NULL CHECK(status IN ('pending','running','done','failed','interrupted')), "
    "worker INTEGER, device TEXT, attempt INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, "
    "started_at TEXT, finished_at TEXT, error TEXT, device_name TEXT, device_cc TEXT, "
    "UNIQUE(experiment_id, arch_key));"
    "CREATE INDEX trial_by_status ON trial(experiment_id, status);"
    "CREATE TABLE result(trial_id INTEGER PRIMARY KEY REFERENCES trial(id), val_accuracy REAL, "
    "test_accuracy REAL, train_loss REAL, macs INTEGER, params INTEGER, latency_ms REAL, "
    "train_seconds REAL, epochs INTEGER, score REAL);"
    "CREATE TABLE strategy_state(experiment_id INTEGER NOT NULL REFERENCES experiment(id), name "
    "TEXT NOT NULL, blob BLOB, updated_at TEXT NOT NULL, PRIMARY KEY(experiment_id, name));"
    "INSERT INTO experiment VALUES(3, 'old', 'seed = 1;', 'seed = 1;', 'o.conf', 1, 'random', 2, "
    "'2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z', 'done');"
    "INSERT INTO trial VALUES(7, 3, '|g|', 'k', 'random', 'done', 0, 'cpu', 1, "
    "'2025-01-01T00:00:00.000Z', NULL, NULL, NULL, NULL, NULL);"
    "INSERT INTO result VALUES(7, 0.5, NULL, 0.3, 10, 10, 1.0, 1.0, 1, 0.5);"
    "PRAGMA application_id = 1851880241; PRAGMA user_version = 2;";

static void test_migrate_v2_to_v3(void **state)
{
    fixture *f = *state;
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, V2_FILE, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    nas_error err;
    nas_store *st = NULL;
    nas_store_experiment e;
    nas_store_trial t;
    /* read-only: as it is */
    assert_int_equal(nas_store_open(f->db, 1, &st, &err), NAS_OK);
    assert_int_equal(nas_store_experiment_find(st, NULL, &e, &err), NAS_OK);
    assert_int_equal(e.id, 3);
    assert_int_equal(e.n_diverged, 0);
    assert_int_equal(e.best_trial, 7);
    assert_int_equal(nas_store_trial_get(st, 7, &t, &err), NAS_OK);
    assert_string_equal(t.flag, "");
    collected col = {0};
    assert_int_equal(nas_store_trial_foreach(st, 3, NAS_STORE_ORDER_ID, 0, collect, &col, &err),
                     NAS_OK);
    assert_int_equal(col.n, 1);
    nas_store_close(st);
    /* read-write: migrated */
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK);
    int64_t b, tid;
    assert_int_equal(nas_store_experiment_create(st, "old", "seed = 1;", "", "", 1, "random", 4,
                                                 &b, &err),
                     NAS_OK);
    assert_int_equal(b, 4);
    assert_int_equal(nas_store_trial_insert(st, b, "|h|", "k2", "random", &tid, &err), NAS_OK);
    nas_trial_result r = make_result(0.125, 10, 10);
    r.train_loss = 1.1e10;
    assert_int_equal(nas_store_trial_finish_flagged(st, tid, &r, 0.125, "diverged: x",
                                                    "diverged", &err),
                     NAS_OK);
    assert_int_equal(nas_store_trial_get(st, tid, &t, &err), NAS_OK);
    assert_string_equal(t.flag, "diverged");
    assert_int_equal(nas_store_experiment_get(st, b, &e, &err), NAS_OK);
    assert_int_equal(e.n_diverged, 1);
    /* a re-run clears the flag */
    assert_int_equal(nas_store_trial_start(st, tid, 0, "cpu", &err), NAS_OK);
    assert_int_equal(nas_store_trial_get(st, tid, &t, &err), NAS_OK);
    assert_string_equal(t.flag, "");
    assert_int_equal(nas_store_trial_get(st, 7, &t, &err), NAS_OK);
    assert_int_equal(t.experiment_id, 3);
    nas_store_close(st);
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(s, 0), NAS_STORE_SCHEMA_VERSION);
    sqlite3_finalize(s);
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA foreign_key_check", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
    sqlite3_close(db);
}

/* For the migration tests: experiment "t" with three started trials,
 * ids[0] and ids[2] on the table evaluator (device "table"), ids[1]
 * trained on the cpu. */
static void started_trials(const char *path, int64_t ids[3])
{
    nas_error err;
    nas_store *st = NULL;
    int64_t e;
    static const char *const genos[3] = {"|a|", "|b|", "|c|"}, *const devs[3] = {"table", "cpu",
                                                                               "table"};
    assert_int_equal(nas_store_open(path, 0, &st, &err), NAS_OK);
    assert_int_equal(nas_store_experiment_create(st, "t", "seed = 1;", "", "", 1, "random", 4, &e,
                                                 &err),
                     NAS_OK);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(nas_store_trial_insert(st, e, genos[i], genos[i] + 1, "random", &ids[i],
                                                &err),
                         NAS_OK);
        assert_int_equal(nas_store_trial_start(st, ids[i], 0, devs[i], &err), NAS_OK);
    }
    nas_store_close(st);
}

/* PRAGMA user_version of the file: set it (v >= 0) and return it. */
static int user_version(const char *path, int v)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    char sql[64];
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    if (v >= 0) {
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", v);
        assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    }
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    int got = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return got;
}

/* Schema 6: a version-5 file's table trials (device "table") had 0 for
 * loss and latency; read-only shows them as they are, the first
 * read-write open makes them NULL and leaves a trained trial's alone. */
static void test_migrate_v5_to_v6(void **state)
{
    fixture *f = *state;
    nas_error err;
    nas_store *st = NULL;
    int64_t id[3];
    started_trials(f->db, id);
    int64_t tab = id[0], trn = id[1];
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK);
    nas_trial_result r = make_result(0.8, 10, 10);
    r.train_loss = 0.0; /* what versions before 6 wrote for a table trial */
    r.latency_ms = 0.0;
    assert_int_equal(nas_store_trial_finish(st, tab, &r, 0.8, NULL, &err), NAS_OK);
    r.train_loss = 0.25;
    r.latency_ms = 1.5;
    assert_int_equal(nas_store_trial_finish(st, trn, &r, 0.8, NULL, &err), NAS_OK);
    nas_store_close(st);
    assert_int_equal(user_version(f->db, 5), 5);
    nas_store_trial t;
    assert_int_equal(nas_store_open(f->db, 1, &st, &err), NAS_OK); /* read-only: as it is */
    assert_int_equal(nas_store_trial_get(st, tab, &t, &err), NAS_OK);
    assert_true(t.latency_ms == 0.0 && t.train_loss == 0.0);
    nas_store_close(st);
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK); /* migrated */
    assert_int_equal(nas_store_trial_get(st, tab, &t, &err), NAS_OK);
    assert_true(isnan(t.latency_ms) && isnan(t.train_loss));
    assert_true(t.val_accuracy == 0.8);
    assert_int_equal(nas_store_trial_get(st, trn, &t, &err), NAS_OK);
    assert_true(t.latency_ms == 1.5 && t.train_loss == 0.25);
    nas_store_close(st);
    assert_int_equal(user_version(f->db, -1), NAS_STORE_SCHEMA_VERSION);
}

/* Schema 7 (issue 29): a version-6 file's table trials had 0 for
 * train_seconds ("train_s 0.0": nothing was timed); read-only shows it as
 * it is, the first read-write open makes it NULL and leaves a trained
 * trial's time alone. A table trial recorded now has none either. */
static void test_migrate_v6_to_v7(void **state)
{
    fixture *f = *state;
    nas_error err;
    nas_store *st = NULL;
    int64_t id[3];
    started_trials(f->db, id);
    int64_t tab = id[0], trn = id[1], now = id[2];
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK);
    nas_trial_result r = make_result(0.8, 10, 10);
    r.train_seconds = 0.0; /* what versions before 7 wrote for a table trial */
    assert_int_equal(nas_store_trial_finish(st, tab, &r, 0.8, NULL, &err), NAS_OK);
    r.train_seconds = 12.5;
    assert_int_equal(nas_store_trial_finish(st, trn, &r, 0.8, NULL, &err), NAS_OK);
    r.train_seconds = NAN; /* what the table evaluator gives now */
    assert_int_equal(nas_store_trial_finish(st, now, &r, 0.8, NULL, &err), NAS_OK);
    nas_store_close(st);
    assert_int_equal(user_version(f->db, 6), 6);
    nas_store_trial t;
    assert_int_equal(nas_store_open(f->db, 1, &st, &err), NAS_OK); /* read-only: as it is */
    assert_int_equal(nas_store_trial_get(st, tab, &t, &err), NAS_OK);
    assert_true(t.train_seconds == 0.0);
    assert_int_equal(nas_store_trial_get(st, now, &t, &err), NAS_OK);
    assert_true(isnan(t.train_seconds));
    nas_store_close(st);
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK); /* migrated */
    assert_int_equal(nas_store_trial_get(st, tab, &t, &err), NAS_OK);
    assert_true(isnan(t.train_seconds));
    assert_true(t.val_accuracy == 0.8);
    assert_int_equal(nas_store_trial_get(st, trn, &t, &err), NAS_OK);
    assert_true(t.train_seconds == 12.5);
    nas_store_close(st);
    assert_int_equal(user_version(f->db, -1), NAS_STORE_SCHEMA_VERSION); /* and on to 8 */
}

/* A file of schema `version` with trials, made by dropping `table`, which
 * that version did not have. */
static void older_file(const char *path, const char *table, int version)
{
    int64_t id[3];
    started_trials(path, id);
    sqlite3 *db;
    char sql[64];
    snprintf(sql, sizeof sql, "DROP TABLE %s", table);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(user_version(path, version), version);
}

/* Schema 8 (issue 30): a version-7 file has no proxy_check table; read-only
 * it lists no proxy-check rows (no error), the first read-write open adds
 * the table, and a row goes in and comes back as written. */
static void test_migrate_v7_to_v8(void **state)
{
    fixture *f = *state;
    nas_error err;
    nas_store *st = NULL;
    older_file(f->db, "proxy_check", 7);
    nas_store_pc_row *v = NULL;
    int n = -1;
    assert_int_equal(nas_store_open(f->db, 1, &st, &err), NAS_OK); /* read-only: as it is */
    assert_int_equal(nas_store_pc_list(st, 1, &v, &n, &err), NAS_OK);
    assert_int_equal(n, 0);
    nas_store_close(st);
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK); /* migrated */
    assert_int_equal(user_version(f->db, -1), NAS_STORE_SCHEMA_VERSION);
    nas_store_pc_row r = {.experiment_id = 1, .arch = 2, .genotype = "g2", .seed_index = 1,
                          .seed = 43, .rung = 1, .budget = 2000, .val_accuracy = 0.75,
                          .train_loss = 0.5, .train_seconds = 3.0, .eval_seconds = NAN};
    assert_int_equal(nas_store_pc_put(st, &r, &err), NAS_OK);
    snprintf(r.error, sizeof r.error, "boom");
    r.rung = 2;
    r.val_accuracy = NAN;
    assert_int_equal(nas_store_pc_put(st, &r, &err), NAS_OK);
    assert_int_equal(nas_store_pc_list(st, 1, &v, &n, &err), NAS_OK);
    assert_int_equal(n, 2);
    assert_string_equal(v[0].genotype, "g2");
    assert_true(v[0].val_accuracy == 0.75 && v[0].budget == 2000 && v[0].seed == 43);
    assert_true(isnan(v[0].eval_seconds) && v[0].error[0] == '\0');
    assert_true(isnan(v[1].val_accuracy) && v[1].rung == 2);
    assert_string_equal(v[1].error, "boom");
    free(v);
    nas_store_close(st);
}

/* Schema 9 (issue 31): a version-8 file has no zc_score table; read-only
 * a score is not found (no error), the first read-write open adds the
 * table; scores (a failed proxy's NaN too) come back as written, per
 * experiment, proxy and key, and _foreach lists a key's proxies by name. */
static void zc_collect(void *ctx, const char *proxy, double score)
{
    char *buf = ctx;
    size_t n = strlen(buf);
    snprintf(buf + n, 128 - n, "%s=%g;", proxy, score);
}

static void test_migrate_v8_to_v9(void **state)
{
    fixture *f = *state;
    nas_error err;
    nas_store *st = NULL;
    older_file(f->db, "zc_score", 8);
    double v = 0;
    assert_int_equal(nas_store_open(f->db, 1, &st, &err), NAS_OK); /* read-only: as it is */
    assert_int_equal(nas_store_zc_get(st, 1, "synflow", "k1", &v, &err), NAS_ENOTFOUND);
    nas_store_close(st);
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK); /* migrated */
    assert_int_equal(user_version(f->db, -1), NAS_STORE_SCHEMA_VERSION);
    assert_int_equal(nas_store_zc_put(st, 1, "synflow", "k1", 3.5e43, &err), NAS_OK);
    assert_int_equal(nas_store_zc_put(st, 1, "params", "k1", 1234, &err), NAS_OK);
    assert_int_equal(nas_store_zc_put(st, 1, "synflow", "k2", NAN, &err), NAS_OK);
    assert_int_equal(nas_store_zc_get(st, 1, "synflow", "k1", &v, &err), NAS_OK);
    assert_true(v == 3.5e43);
    assert_int_equal(nas_store_zc_get(st, 1, "synflow", "k2", &v, &err), NAS_OK);
    assert_true(isnan(v));
    assert_int_equal(nas_store_zc_get(st, 2, "synflow", "k1", &v, &err), NAS_ENOTFOUND);
    char buf[128] = "";
    assert_int_equal(nas_store_zc_foreach(st, 1, "k1", zc_collect, buf, &err), NAS_OK);
    assert_string_equal(buf, "params=1234;synflow=3.5e+43;");
    nas_store_close(st);
}

/* Schema 10 (issue 32): a version-9 file has neither supernet_epoch nor
 * finalist; read-only both read as empty (no error), the first read-write
 * open adds them; a curve comes back by epoch (an epoch written again
 * replaced), and the finalists of one experiment link to the trials of
 * another with the same arch_key, listed from either side, once however
 * often they are linked. */
static void test_migrate_v9_to_v10(void **state)
{
    fixture *f = *state;
    nas_error err;
    nas_store *st = NULL;
    older_file(f->db, "finalist", 9);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "DROP TABLE supernet_epoch", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    nas_store_sn_epoch *e = NULL;
    nas_store_finalist *fl = NULL;
    int n = -1;
    assert_int_equal(nas_store_open(f->db, 1, &st, &err), NAS_OK); /* read-only: as it is */
    assert_int_equal(nas_store_supernet_curve(st, 1, &e, &n, &err), NAS_OK);
    assert_int_equal(n, 0);
    assert_int_equal(nas_store_finalist_list(st, 1, &fl, &n, &err), NAS_OK);
    assert_int_equal(n, 0);
    nas_store_close(st);
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK); /* migrated */
    assert_int_equal(user_version(f->db, -1), NAS_STORE_SCHEMA_VERSION);
    nas_store_sn_epoch e2 = {2, 1.5, 0.25, 3.0}, e1 = {1, 2.0, 0.1, 4.0}, e1b = {1, 1.9, 0.2, 5.0};
    assert_int_equal(nas_store_supernet_epoch_put(st, 1, &e2, &err), NAS_OK);
    assert_int_equal(nas_store_supernet_epoch_put(st, 1, &e1, &err), NAS_OK);
    assert_int_equal(nas_store_supernet_epoch_put(st, 1, &e1b, &err), NAS_OK); /* resumed epoch */
    assert_int_equal(nas_store_supernet_curve(st, 1, &e, &n, &err), NAS_OK);
    assert_int_equal(n, 2);
    assert_true(e[0].epoch == 1 && e[0].loss == 1.9 && e[0].seconds == 5.0);
    assert_true(e[1].epoch == 2 && e[1].accuracy == 0.25);
    free(e);
    int64_t sx, fx, s1, s2, f1;
    assert_int_equal(nas_store_experiment_create(st, "sn", "c", "t", "p", 1, "random", 2, &sx, &err),
                     NAS_OK);
    assert_int_equal(nas_store_experiment_create(st, "sn-finalists", "c2", "t", "p", 1, "random", 1,
                                                 &fx, &err), NAS_OK);
    assert_int_equal(nas_store_trial_insert(st, sx, "g1", "k1", "random", &s1, &err), NAS_OK);
    assert_int_equal(nas_store_trial_insert(st, sx, "g2", "k2", "random", &s2, &err), NAS_OK);
    assert_int_equal(nas_store_trial_insert(st, fx, "g2", "k2", "enqueued", &f1, &err), NAS_OK);
    assert_int_equal(nas_store_finalist_link(st, fx, sx, &err), NAS_OK);
    assert_int_equal(nas_store_finalist_link(st, fx, sx, &err), NAS_OK);
    for (int side = 0; side < 2; side++) {
        assert_int_equal(nas_store_finalist_list(st, side ? fx : sx, &fl, &n, &err), NAS_OK);
        assert_int_equal(n, 1);
        assert_true(fl[0].trial_id == f1 && fl[0].supernet_trial_id == s2);
        assert_true(fl[0].experiment_id == fx && fl[0].supernet_experiment_id == sx);
        assert_string_equal(fl[0].genotype, "g2");
        assert_true(!fl[0].done && isnan(fl[0].supernet_accuracy) &&
                    isnan(fl[0].standalone_accuracy));
        free(fl);
    }
    nas_store_close(st);
}

/* Issue 17, schema 5: rung results, a trial's highest fidelity, ranking
 * and the experiment's best at the highest fidelity; a version-4 file
 * reads as it is (no fidelity) read-only and migrates on write. */
static int count_rung(void *ctx, const nas_store_rung *r)
{
    int64_t *sum = ctx;
    sum[0]++;
    sum[1] += r->trial_id * 1000 + r->fidelity;
    return 0;
}

/* Issue 17: a finished rung and the trial's result are written in one
 * transaction (nas_store_trial_finish_rung): when the result cannot be
 * written, the rung is not written either (found in review: they were two
 * transactions, and a failure or a kill between them left a rung without
 * its trial's result). */
static int64_t count_sql(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
}

static void test_finish_rung_atomic(void **state)
{
    fixture *f = *state;
    nas_error err;
    nas_store *st = NULL;
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK);
    int64_t exp, a, b;
    assert_int_equal(nas_store_experiment_create(st, "mf", "seed = 1;", "", "", 1, "random", 2,
                                                 &exp, &err),
                     NAS_OK);
    assert_int_equal(nas_store_trial_insert(st, exp, "|a|", "a", "random", &a, &err), NAS_OK);
    assert_int_equal(nas_store_trial_insert(st, exp, "|b|", "b", "random", &b, &err), NAS_OK);
    nas_trial_result r = make_result(0.8, 10, 10);
    nas_store_rung g = {a, 1, 0.8, 2.0, 1.0};
    assert_int_equal(nas_store_trial_finish_rung(st, a, &r, 0.8, NULL, NULL, &g, &err), NAS_OK);
    nas_store_close(st);
    assert_int_equal(count_sql(f->db, "SELECT count(*) FROM rung"), 1);
    assert_int_equal(count_sql(f->db, "SELECT count(*) FROM result"), 1);
    /* the result row of trial b cannot be written: neither is its rung */
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE TRIGGER no_result BEFORE INSERT ON result BEGIN "
                                  "SELECT RAISE(ABORT, 'refused by the test'); END;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK);
    g.trial_id = b;
    assert_int_equal(nas_store_trial_finish_rung(st, b, &r, 0.8, NULL, NULL, &g, &err), NAS_EDB);
    assert_non_null(strstr(err.msg, "refused by the test"));
    nas_store_trial t;
    assert_int_equal(nas_store_trial_get(st, b, &t, &err), NAS_OK);
    assert_int_equal(t.status, NAS_TRIAL_PENDING);
    assert_int_equal(t.fidelity, -1);
    nas_store_close(st);
    assert_int_equal(count_sql(f->db, "SELECT count(*) FROM rung"), 1);
}

static void test_rungs(void **state)
{
    fixture *f = *state;
    nas_error err;
    nas_store *st = NULL;
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK);
    int64_t exp, a, b, c;
    assert_int_equal(nas_store_experiment_create(st, "mf", "seed = 1;", "", "", 1, "random", 3,
                                                 &exp, &err),
                     NAS_OK);
    assert_int_equal(nas_store_trial_insert(st, exp, "|a|", "a", "random", &a, &err), NAS_OK);
    assert_int_equal(nas_store_trial_insert(st, exp, "|b|", "b", "random", &b, &err), NAS_OK);
    assert_int_equal(nas_store_trial_insert(st, exp, "|c|", "c", "random", &c, &err), NAS_OK);
    /* a: 0.9 at budget 1 only; b: 0.6 at 1, 0.7 at 3; c: failed-free, 0.5 at 1 */
    nas_trial_result r = make_result(0.9, 10, 10);
    assert_int_equal(nas_store_trial_finish(st, a, &r, 0.9, NULL, &err), NAS_OK);
    r = make_result(0.7, 10, 10);
    assert_int_equal(nas_store_trial_finish(st, b, &r, 0.7, NULL, &err), NAS_OK);
    r = make_result(0.5, 10, 10);
    assert_int_equal(nas_store_trial_finish(st, c, &r, 0.5, NULL, &err), NAS_OK);
    nas_store_rung g[4] = {{a, 1, 0.9, 2.0, 1.5}, {b, 1, 0.6, 2.1, 1.4}, {b, 3, 0.7, 1.9, 3.0},
                           {c, 1, 0.5, NAN, NAN}};
    for (int i = 0; i < 4; i++)
        assert_int_equal(nas_store_rung_put(st, &g[i], &err), NAS_OK);
    assert_int_equal(nas_store_rung_put(st, &g[2], &err), NAS_OK); /* again: replaced */
    nas_store_trial t;
    assert_int_equal(nas_store_trial_get(st, b, &t, &err), NAS_OK);
    assert_int_equal(t.fidelity, 3);
    assert_int_equal(nas_store_trial_get(st, a, &t, &err), NAS_OK);
    assert_int_equal(t.fidelity, 1);
    /* best at the highest fidelity: b (0.7 at 3) before a (0.9 at 1) */
    collected col = {0};
    assert_int_equal(nas_store_trial_foreach(st, exp, NAS_STORE_ORDER_RANK, 0, collect, &col, &err),
                     NAS_OK);
    assert_int_equal(col.n, 3);
    assert_int_equal(col.id[0], b);
    assert_int_equal(col.id[1], a);
    assert_int_equal(col.id[2], c);
    /* --min-fidelity in the query: the limit counts the trials that pass */
    memset(&col, 0, sizeof col);
    assert_int_equal(nas_store_trial_foreach_min(st, exp, NAS_STORE_ORDER_RANK, 0, 3, collect,
                                                 &col, &err),
                     NAS_OK);
    assert_int_equal(col.n, 1);
    assert_int_equal(col.id[0], b);
    memset(&col, 0, sizeof col);
    assert_int_equal(nas_store_trial_foreach_min(st, exp, NAS_STORE_ORDER_ID, 1, 1, collect, &col,
                                                 &err),
                     NAS_OK);
    assert_int_equal(col.n, 1);
    assert_int_equal(col.id[0], a);
    nas_store_experiment e;
    assert_int_equal(nas_store_experiment_get(st, exp, &e, &err), NAS_OK);
    assert_int_equal(e.best_trial, b);
    int64_t sum[2] = {0, 0};
    assert_int_equal(nas_store_rung_foreach(st, exp, count_rung, sum, &err), NAS_OK);
    assert_int_equal(sum[0], 4);
    assert_int_equal(sum[1], (a * 1000 + 1) + (b * 1000 + 1) + (b * 1000 + 3) + (c * 1000 + 1));
    /* proxy.keep_top ranks kept weights as export --best ranks trials: with
     * room for one, b's (0.7 at 3) stay, not a's (0.9 at 1 only) */
    const int64_t ids[3] = {a, b, c};
    char wpath[3][340];
    char wdir[320]; /* where nas run keeps them: DB.weights/ beside the database */
    snprintf(wdir, sizeof wdir, "%s.weights", f->db);
    assert_int_equal(mkdir(wdir, 0777), 0);
    for (int i = 0; i < 3; i++) {
        snprintf(wpath[i], sizeof wpath[i], "%s/trial-%d.npz", wdir, i);
        FILE *wf = fopen(wpath[i], "w");
        assert_non_null(wf);
        fputs("weights", wf);
        fclose(wf);
        assert_int_equal(nas_store_trial_weights_put(st, ids[i], wpath[i], &err), NAS_OK);
    }
    int n_deleted = 0;
    assert_int_equal(nas_store_trial_weights_prune(st, exp, 1, 0, &n_deleted, &err), NAS_OK);
    assert_int_equal(n_deleted, 2);
    assert_int_equal(access(wpath[1], F_OK), 0);
    assert_int_not_equal(access(wpath[0], F_OK), 0);
    assert_int_not_equal(access(wpath[2], F_OK), 0);
    nas_store_close(st);

    /* the same file made version 4: read-only reads it as it is */
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "DROP TABLE rung; PRAGMA user_version = 4;", NULL, NULL,
                                  NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(nas_store_open(f->db, 1, &st, &err), NAS_OK);
    assert_int_equal(nas_store_trial_get(st, b, &t, &err), NAS_OK);
    assert_int_equal(t.fidelity, -1);
    memset(&col, 0, sizeof col); /* no fidelity in a version-4 file: none pass */
    assert_int_equal(nas_store_trial_foreach_min(st, exp, NAS_STORE_ORDER_RANK, 0, 1, collect,
                                                 &col, &err),
                     NAS_OK);
    assert_int_equal(col.n, 0);
    sum[0] = 0;
    assert_int_equal(nas_store_rung_foreach(st, exp, count_rung, sum, &err), NAS_OK);
    assert_int_equal(sum[0], 0);
    assert_int_equal(nas_store_experiment_get(st, exp, &e, &err), NAS_OK);
    assert_int_equal(e.best_trial, a); /* by val_accuracy, as before */
    assert_int_equal(nas_store_rung_put(st, &g[0], &err), NAS_EDB);
    nas_store_close(st);
    /* read-write: migrated (to 5, then on), rungs recorded again */
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK);
    assert_int_equal(nas_store_rung_put(st, &g[0], &err), NAS_OK);
    assert_int_equal(nas_store_trial_get(st, a, &t, &err), NAS_OK);
    assert_int_equal(t.fidelity, 1);
    nas_store_close(st);
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(s, 0), NAS_STORE_SCHEMA_VERSION);
    sqlite3_finalize(s);
    sqlite3_close(db);
}

/* A database copied with its DB.weights/ folder records the original's
 * absolute weight paths: pruning the copy deletes its own copy of a file,
 * never the original database's (which then named missing files). */
static void test_weights_prune_copied_db(void **state)
{
    fixture *f = *state;
    nas_error err;
    nas_store *st = NULL;
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK);
    int64_t exp, id[2];
    assert_int_equal(nas_store_experiment_create(st, "cp", "seed = 1;", "", "", 1, "random", 2,
                                                 &exp, &err),
                     NAS_OK);
    assert_int_equal(nas_store_trial_insert(st, exp, "|a|", "a", "random", &id[0], &err), NAS_OK);
    assert_int_equal(nas_store_trial_insert(st, exp, "|b|", "b", "random", &id[1], &err), NAS_OK);
    char orig_dir[320], own_dir[320], orig[2][360], own[2][360];
    snprintf(orig_dir, sizeof orig_dir, "%s/orig.db.weights", f->dir);
    snprintf(own_dir, sizeof own_dir, "%s.weights", f->db);
    assert_int_equal(mkdir(orig_dir, 0777), 0);
    assert_int_equal(mkdir(own_dir, 0777), 0);
    for (int i = 0; i < 2; i++) {
        nas_trial_result r = make_result(0.9 - 0.1 * i, 10, 10);
        assert_int_equal(nas_store_trial_finish(st, id[i], &r, 0.9 - 0.1 * i, NULL, &err),
                         NAS_OK);
        snprintf(orig[i], sizeof orig[i], "%s/trial-%lld.npz", orig_dir, (long long)id[i]);
        snprintf(own[i], sizeof own[i], "%s/trial-%lld.npz", own_dir, (long long)id[i]);
        for (int k = 0; k < 2; k++) {
            FILE *wf = fopen(k ? own[i] : orig[i], "w");
            assert_non_null(wf);
            fputs("weights", wf);
            fclose(wf);
        }
        /* the row the original database wrote, copied with it */
        assert_int_equal(nas_store_trial_weights_put(st, id[i], orig[i], &err), NAS_OK);
    }
    int n_deleted = 0;
    assert_int_equal(nas_store_trial_weights_prune(st, exp, 1, 0, &n_deleted, &err), NAS_OK);
    nas_store_close(st);
    assert_int_equal(n_deleted, 1);
    assert_int_equal(access(orig[0], F_OK), 0); /* the original's files are untouched */
    assert_int_equal(access(orig[1], F_OK), 0);
    assert_int_equal(access(own[0], F_OK), 0);     /* kept: the best */
    assert_int_not_equal(access(own[1], F_OK), 0); /* pruned: the copy's own file */
}

static void test_unique_arch_key(void **state)
{
    fixture *f = *state;
    nas_error err;
    nas_store *st = NULL;
    int64_t a, b, t;
    int created;
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK);
    assert_int_equal(nas_store_experiment_open(st, "a", "A", "", "", 0, "random", 5, &a, &created,
                                               &err),
                     NAS_OK);
    assert_int_equal(nas_store_experiment_open(st, "b", "B", "", "", 0, "random", 5, &b, &created,
                                               &err),
                     NAS_OK);
    assert_int_equal(nas_store_trial_insert(st, a, "|g1|", "same-key", "random", &t, &err), NAS_OK);
    /* A different genotype string with the same canonical key is refused. */
    assert_int_equal(nas_store_trial_insert(st, a, "|g2|", "same-key", "random", &t, &err),
                     NAS_EEXIST);
    assert_int_equal(t, -1);
    assert_non_null(strstr(err.msg, "same-key"));
    /* Another experiment may train the same cell. */
    assert_int_equal(nas_store_trial_insert(st, b, "|g1|", "same-key", "random", &t, &err), NAS_OK);
    nas_store_experiment e;
    assert_int_equal(nas_store_experiment_get(st, a, &e, &err), NAS_OK);
    assert_int_equal(e.n_trials, 1);
    nas_store_close(st);
}

/* Issue 20: a COMMIT that fails (here: a deferred foreign key that a
 * trigger of another program breaks) is rolled back, so the store's next
 * write starts a fresh transaction instead of failing with "cannot start a
 * transaction within a transaction", and nothing of the failed one is
 * committed later. */
static void test_failed_commit_is_rolled_back(void **state)
{
    fixture *f = *state;
    nas_error err;
    nas_store *st = NULL;
    int64_t e, t1, t2;
    int created;
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK);
    assert_int_equal(nas_store_experiment_open(st, "a", "A", "", "", 0, "random", 5, &e, &created,
                                               &err),
                     NAS_OK);
    assert_int_equal(nas_store_trial_insert(st, e, "|g1|", "k1", "random", &t1, &err), NAS_OK);
    assert_int_equal(nas_store_trial_insert(st, e, "|g2|", "k2", "random", &t2, &err), NAS_OK);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    char sql[512];
    snprintf(sql, sizeof sql,
             "CREATE TABLE trap(t INTEGER REFERENCES trial(id) DEFERRABLE INITIALLY DEFERRED);"
             "CREATE TRIGGER trap_t AFTER INSERT ON result WHEN NEW.trial_id = %lld "
             "BEGIN INSERT INTO trap VALUES(-1); END;",
             (long long)t1);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    nas_trial_result r = make_result(0.5, 1000, 100);
    assert_int_equal(nas_store_trial_finish(st, t1, &r, 0.5, NULL, &err), NAS_EDB);
    assert_non_null(strstr(err.msg, "commit"));
    int rc = nas_store_trial_finish(st, t2, &r, 0.5, NULL, &err);
    if (rc != NAS_OK)
        fail_msg("the write after a failed COMMIT: %s", err.msg);
    nas_store_close(st); /* a transaction left open would be lost here */
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT group_concat(id || ':' || status, ' ') FROM "
                                        "(SELECT id, status FROM trial ORDER BY id)",
                                        -1, &s, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    snprintf(sql, sizeof sql, "%lld:pending %lld:done", (long long)t1, (long long)t2);
    assert_string_equal((const char *)sqlite3_column_text(s, 0), sql);
    sqlite3_finalize(s);
    sqlite3_close(db);
}

static void test_refuses_foreign_sqlite(void **state)
{
    fixture *f = *state;
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE notes(x TEXT); INSERT INTO notes VALUES('mine');",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);

    nas_error err;
    nas_store *st = (nas_store *)1;
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_EDB);
    assert_null(st);
    assert_non_null(strstr(err.msg, f->db));
    assert_non_null(strstr(err.msg, "not a nas database"));
    assert_int_equal(nas_store_open(f->db, 1, &st, &err), NAS_EDB);
    assert_non_null(strstr(err.msg, "not a nas database"));

    /* Untouched: still the foreign table only, no application id. */
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &s, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(s, 0), 1);
    sqlite3_finalize(s);
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA application_id", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(s, 0), 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
}

static void test_refuses_newer_schema(void **state)
{
    fixture *f = *state;
    nas_error err;
    nas_store *st = NULL;
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK);
    nas_store_close(st);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_EDB);
    assert_non_null(strstr(err.msg, "newer"));
    assert_non_null(strstr(err.msg, f->db));
}

static void test_refuses_non_sqlite_file(void **state)
{
    fixture *f = *state;
    FILE *fp = fopen(f->db, "wb");
    assert_non_null(fp);
    /* Deterministic bytes that are no SQLite header. */
    uint32_t x = 12345;
    for (int i = 0; i < 8192; i++) {
        x = x * 1664525u + 1013904223u;
        fputc((int)(x >> 24), fp);
    }
    fclose(fp);
    struct stat before, after;
    assert_int_equal(stat(f->db, &before), 0);

    nas_error err;
    nas_store *st = (nas_store *)1;
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_EDB);
    assert_null(st);
    assert_non_null(strstr(err.msg, f->db));
    assert_non_null(strstr(err.msg, "not a nas database"));
    assert_int_equal(nas_store_open(f->db, 1, &st, &err), NAS_EDB);
    assert_non_null(strstr(err.msg, f->db));
    assert_int_equal(stat(f->db, &after), 0);
    assert_int_equal(before.st_size, after.st_size);
}

static void test_read_only(void **state)
{
    fixture *f = *state;
    nas_error err;
    nas_store *st = NULL;

    /* Missing file: a clear message, nothing created. */
    assert_int_equal(nas_store_open(f->db, 1, &st, &err), NAS_EIO);
    assert_null(st);
    assert_non_null(strstr(err.msg, f->db));
    assert_non_null(strstr(err.msg, "no such file"));
    assert_int_not_equal(access(f->db, F_OK), 0);

    int64_t exp, t;
    int created;
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK);
    assert_int_equal(nas_store_experiment_open(st, "ro", "RO", "", "", 0, "random", 2, &exp,
                                               &created, &err),
                     NAS_OK);
    assert_int_equal(nas_store_trial_insert(st, exp, "|g|", "k", "random", &t, &err), NAS_OK);

    /* A reader while the writer is still open (WAL), then after it closed. */
    for (int pass = 0; pass < 2; pass++) {
        nas_store *ro = NULL;
        assert_int_equal(nas_store_open(f->db, 1, &ro, &err), NAS_OK);
        nas_store_experiment e;
        assert_int_equal(nas_store_experiment_find(ro, "ro", &e, &err), NAS_OK);
        assert_int_equal(e.n_trials, 1);
        nas_store_trial tr;
        assert_int_equal(nas_store_trial_get(ro, t, &tr, &err), NAS_OK);
        assert_string_equal(tr.genotype, "|g|");
        int64_t t2;
        assert_int_equal(nas_store_trial_insert(ro, exp, "|h|", "k2", "random", &t2, &err),
                         NAS_EDB);
        assert_non_null(strstr(err.msg, "read-only"));
        nas_store_close(ro);
        if (pass == 0) {
            nas_store_close(st);
            st = NULL;
        }
    }
    /* Nothing was written by the readers. */
    assert_int_equal(nas_store_open(f->db, 0, &st, &err), NAS_OK);
    nas_store_experiment e;
    assert_int_equal(nas_store_experiment_get(st, exp, &e, &err), NAS_OK);
    assert_int_equal(e.n_trials, 1);
    nas_store_close(st);
}

static void test_bad_directory(void **state)
{
    fixture *f = *state;
    nas_error err;
    nas_store *st = NULL;
    char path[400];
    snprintf(path, sizeof path, "%s/no/such/dir/nas.db", f->dir);
    assert_int_equal(nas_store_open(path, 0, &st, &err), NAS_EIO);
    assert_null(st);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "does not exist"));
    /* A directory where the file should be. */
    assert_int_equal(nas_store_open(f->dir, 0, &st, &err), NAS_EIO);
    assert_non_null(strstr(err.msg, "directory"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_experiment_by_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_v2_to_v3, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_v5_to_v6, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_v6_to_v7, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rungs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_weights_prune_copied_db, setup, teardown),
        cmocka_unit_test_setup_teardown(test_finish_rung_atomic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unique_arch_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_foreign_sqlite, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_v7_to_v8, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_v8_to_v9, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_v9_to_v10, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_newer_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_non_sqlite_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_commit_is_rolled_back, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
