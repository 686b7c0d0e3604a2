/*
 * store/store.c - the SQLite results database (see nas/store.h and
 * docs/schema.md). One connection per nas_store; statements are prepared
 * once and cached; every write is one short transaction.
 */
#define _GNU_SOURCE /* F_OFD_GETLK (Linux 3.15+): is a `nas run` writing the file */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sqlite3.h> /* the database engine */
#include "nas/store.h"
#include "store_impl.h" /* nas__store_rung_insert */

#define NOW_SQL "strftime('%Y-%m-%dT%H:%M:%fZ','now')"

/* Schema version 1. docs/schema.md describes every column. */
/* The experiment table's columns: `canonical` is the constraint of
 * conf_canonical (" UNIQUE" in version 1, "" from version 3). */
#define EXPERIMENT_TABLE(canonical)                                                       \
    "  id INTEGER PRIMARY KEY,\n"                                                           \
    "  name TEXT NOT NULL,\n"                                                               \
    "  conf_canonical TEXT NOT NULL" canonical ",\n"                                         \
    "  conf_text TEXT NOT NULL,\n"                                                          \
    "  conf_path TEXT NOT NULL,\n"                                                          \
    "  seed INTEGER NOT NULL,\n"                                                            \
    "  strategy TEXT NOT NULL,\n"                                                           \
    "  trials_budget INTEGER NOT NULL,\n"                                                   \
    "  created_at TEXT NOT NULL,\n"                                                         \
    "  updated_at TEXT NOT NULL,\n"                                                         \
    "  status TEXT NOT NULL CHECK(status IN ('running','done','interrupted','failed','exhausted'))\n"

static const char SCHEMA_V1[] =
    "CREATE TABLE experiment(\n" EXPERIMENT_TABLE(" UNIQUE") ");\n"
    "CREATE TABLE trial(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  experiment_id INTEGER NOT NULL REFERENCES experiment(id),\n"
    "  genotype TEXT NOT NULL,\n"
    "  arch_key TEXT NOT NULL,\n"
    "  proposed_by TEXT NOT NULL,\n"
    "  status TEXT NOT NULL CHECK(status IN ('pending','running','done','failed','interrupted')),\n"
    "  worker INTEGER,\n"
    "  device TEXT,\n"
    "  attempt INTEGER NOT NULL DEFAULT 0,\n"
    "  created_at TEXT NOT NULL,\n"
    "  started_at TEXT,\n"
    "  finished_at TEXT,\n"
    "  error TEXT,\n"
    "  UNIQUE(experiment_id, arch_key)\n"
    ");\n"
    "CREATE INDEX trial_by_status ON trial(experiment_id, status);\n"
    "CREATE TABLE result(\n"
    "  trial_id INTEGER PRIMARY KEY REFERENCES trial(id),\n"
    "  val_accuracy REAL,\n"
    "  test_accuracy REAL,\n"
    "  train_loss REAL,\n"
    "  macs INTEGER,\n"
    "  params INTEGER,\n"
    "  latency_ms REAL,\n"
    "  train_seconds REAL,\n"
    "  epochs INTEGER,\n"
    "  score REAL\n"
    ");\n"
    "CREATE TABLE strategy_state(\n"
    "  experiment_id INTEGER NOT NULL REFERENCES experiment(id),\n"
    "  name TEXT NOT NULL,\n"
    "  blob BLOB,\n"
    "  updated_at TEXT NOT NULL,\n"
    "  PRIMARY KEY(experiment_id, name)\n"
    ");\n";

/* Version 2 (issue 7): which device ran each trial - the GPU's name and
 * compute capability, or the CPU's model name (device_cc NULL). Applied on
 * top of SCHEMA_V1 to new files and, once, to version-1 files opened
 * read-write. */
static const char MIGRATE_V2[] =
    "ALTER TABLE trial ADD COLUMN device_name TEXT;\n"
    "ALTER TABLE trial ADD COLUMN device_cc TEXT;\n";

/* The version-2 columns in TRIAL_COLUMNS; a version-1 file opened
 * read-only (not migrated) reads NULLs in their place (stmt_get). */
#define V2_TRIAL_COLUMNS "t.device_name, t.device_cc"

/* Version 3 (issue 22): an experiment is identified by its name (the most
 * recent row of a name) and its defining settings, compared by
 * nas_config_diff; conf_canonical holds the settings of the latest run and
 * is no longer UNIQUE (two experiments may share it: `nas run --new`), which
 * takes a rebuild of the experiment table (SQLite cannot drop a constraint;
 * the rebuild runs with foreign keys off, before nas_store_open turns them
 * on, and keeps every id). trial.flag marks a done trial whose training
 * diverged ('diverged'; NULL otherwise). */
static const char MIGRATE_V3[] =
    "CREATE TABLE experiment_v3(\n" EXPERIMENT_TABLE("") ");\n"
    "INSERT INTO experiment_v3 SELECT id, name, conf_canonical, conf_text, conf_path, seed, "
    "strategy, trials_budget, created_at, updated_at, status FROM experiment;\n"
    "DROP TABLE experiment;\n"
    "ALTER TABLE experiment_v3 RENAME TO experiment;\n"
    "CREATE INDEX experiment_by_name ON experiment(name, id);\n"
    "ALTER TABLE trial ADD COLUMN flag TEXT;\n";

/* The version-3 column; NULL when a version-1 or -2 file is read as it is. */
#define V3_FLAG "t.flag"

/* Version 5 (issue 17, multi-fidelity search): one row per rung a trial
 * finished - its budget (`fidelity`, in search.fidelity.resource units),
 * validation accuracy, training loss and the seconds that rung took.
 * Trials of a search without a scheduler have no rows. */
static const char MIGRATE_V5[] =
    "CREATE TABLE IF NOT EXISTS rung(\n"
    "  trial_id INTEGER NOT NULL REFERENCES trial(id),\n"
    "  fidelity INTEGER NOT NULL,\n"
    "  val_accuracy REAL,\n"
    "  loss REAL,\n"
    "  seconds REAL,\n"
    "  created_at TEXT NOT NULL,\n"
    "  PRIMARY KEY(trial_id, fidelity)\n"
    ");\n";

/* Version 6: a table evaluator (trial.device "table") trains and times
 * nothing, but earlier versions recorded 0 for its trials' train_loss and
 * latency_ms; they are unknown, NULL, as nas writes them now. */
static const char MIGRATE_V6[] =
    "UPDATE result SET train_loss = NULL, latency_ms = NULL\n"
    " WHERE trial_id IN (SELECT id FROM trial WHERE device = 'table');\n";

/* Version 7 (issue 29): the same for train_seconds, which versions before 7
 * recorded as 0 for a table trial (shown "train_s 0.0": timed, and took no
 * time); nothing was timed, so it is unknown, NULL. */
static const char MIGRATE_V7[] =
    "UPDATE result SET train_seconds = NULL\n"
    " WHERE trial_id IN (SELECT id FROM trial WHERE device = 'table');\n";

/* Version 8 (issue 30, `nas proxy-check`): one row per training of a proxy
 * check - sampled architecture `arch` trained with seed number
 * `seed_index` (seed `seed`) to rung `rung` (budget `budget`, in the
 * ladder's unit), its validation accuracy, loss and the seconds its
 * training and its evaluation took; `error` for a failed one. Nothing
 * else changes: an older file gets the table, empty. */
static const char MIGRATE_V8[] =
    "CREATE TABLE IF NOT EXISTS proxy_check(\n"
    "  experiment_id INTEGER NOT NULL REFERENCES experiment(id),\n"
    "  arch INTEGER NOT NULL,\n"
    "  genotype TEXT NOT NULL,\n"
    "  seed_index INTEGER NOT NULL,\n"
    "  seed INTEGER NOT NULL,\n"
    "  rung INTEGER NOT NULL,\n"
    "  budget INTEGER NOT NULL,\n"
    "  val_accuracy REAL,\n"
    "  train_loss REAL,\n"
    "  train_seconds REAL,\n"
    "  eval_seconds REAL,\n"
    "  error TEXT,\n"
    "  created_at TEXT NOT NULL,\n"
    "  PRIMARY KEY(experiment_id, arch, seed_index, rung)\n"
    ");\n";

/* Version 9 (issue 31): the zero-cost score cache - the score of proxy
 * `proxy` for the canonical key `arch_key` under experiment
 * `experiment_id` (NULL: the proxy failed for it), written by a warm-up or
 * a move proposal (store/zc_cache.c). An older file gets it, empty. */
static const char MIGRATE_V9[] =
    "CREATE TABLE IF NOT EXISTS zc_score(\n"
    "  experiment_id INTEGER NOT NULL REFERENCES experiment(id),\n"
    "  proxy TEXT NOT NULL,\n"
    "  arch_key TEXT NOT NULL,\n"
    "  score REAL,\n"
    "  PRIMARY KEY(experiment_id, proxy, arch_key)\n"
    ");\n";

/* Version 10 (issue 32, one-shot search): the supernet's training curve
 * per experiment (a row per finished epoch of phase 1: training loss and
 * accuracy of the sampled paths, seconds), and the link of each retrained
 * finalist (a trial of the finalists experiment, trained stand-alone) to
 * the supernet trial it was chosen from (store/oneshot_store.c). An older
 * file gets both, empty. */
static const char MIGRATE_V10[] =
    "CREATE TABLE IF NOT EXISTS supernet_epoch(\n"
    "  experiment_id INTEGER NOT NULL REFERENCES experiment(id),\n"
    "  epoch INTEGER NOT NULL,\n"
    "  loss REAL,\n"
    "  accuracy REAL,\n"
    "  seconds REAL,\n"
    "  PRIMARY KEY(experiment_id, epoch)\n"
    ");\n"
    "CREATE TABLE IF NOT EXISTS finalist(\n"
    "  trial_id INTEGER PRIMARY KEY REFERENCES trial(id),\n"
    "  supernet_trial_id INTEGER NOT NULL REFERENCES trial(id)\n"
    ");\n";

/* ?3 > 0: only trials whose highest fidelity is at least ?3 (issue 17,
 * `nas query --min-fidelity`); a file before schema 5 has none. */
#define MIN_FIDELITY "(?3 <= 0 OR coalesce(" NAS__STORE_FIDELITY ", -1) >= ?3)"

#define TRIAL_COLUMNS                                                                         \
    "SELECT t.id, t.experiment_id, e.name, t.genotype, t.arch_key, t.proposed_by, t.status, " \
    "t.worker, t.attempt, t.device, t.created_at, t.started_at, t.finished_at, t.error, "     \
    "r.trial_id IS NOT NULL, r.val_accuracy, r.test_accuracy, r.train_loss, r.macs, "         \
    "r.params, r.latency_ms, r.train_seconds, r.epochs, r.score, " V2_TRIAL_COLUMNS ", "     \
    V3_FLAG ", " NAS__STORE_FIDELITY " FROM trial t JOIN experiment e ON e.id = t.experiment_id "                      \
    "LEFT JOIN result r ON r.trial_id = t.id "

/* The best done trial of experiment e: highest val_accuracy among the
 * feasible ones (score stored) at the highest fidelity (issue 17; all
 * NULL without a scheduler), ties by id. */
#define BEST_TRIAL                                                                           \
    "trial t JOIN result r ON r.trial_id = t.id WHERE t.experiment_id = e.id AND "           \
    "t.status = 'done' AND r.score IS NOT NULL AND r.val_accuracy IS NOT NULL "              \
    "ORDER BY " NAS__STORE_RANK " LIMIT 1"

#define EXPERIMENT_COLUMNS                                                                   \
    "SELECT e.id, e.name, e.strategy, e.conf_path, e.seed, e.trials_budget, e.status, "      \
    "e.created_at, e.updated_at, "                                                           \
    "(SELECT count(*) FROM trial t WHERE t.experiment_id = e.id), "                          \
    "(SELECT count(*) FROM trial t WHERE t.experiment_id = e.id AND t.status = 'pending'), " \
    "(SELECT count(*) FROM trial t WHERE t.experiment_id = e.id AND t.status = 'running'), " \
    "(SELECT count(*) FROM trial t WHERE t.experiment_id = e.id AND t.status = 'done'), "    \
    "(SELECT count(*) FROM trial t WHERE t.experiment_id = e.id AND t.status = 'failed'), "  \
    "(SELECT count(*) FROM trial t WHERE t.experiment_id = e.id AND t.status = 'interrupted'), " \
    "(SELECT count(*) FROM trial t WHERE t.experiment_id = e.id AND " V3_FLAG " = 'diverged'), " \
    "(SELECT t.id FROM " BEST_TRIAL "), (SELECT r.val_accuracy FROM " BEST_TRIAL ") "      \
    "FROM experiment e "

/* Issue 22: the default experiment of query, show, report and export: the
 * most recent one with a trained (or looked-up) done trial. */
#define HAS_RESULT                                                                           \
    "EXISTS(SELECT 1 FROM trial t JOIN result r ON r.trial_id = t.id "                       \
    "WHERE t.experiment_id = e.id AND t.status = 'done' AND r.val_accuracy IS NOT NULL)"

enum {
    Q_EXP_INSERT,
    Q_EXP_UPDATE,
    Q_EXP_GET,
    Q_EXP_FIND_NAME,
    Q_EXP_FIND_ANY,
    Q_EXP_NAMES,
    Q_EXP_CANON,
    Q_EXP_STATUS,
    Q_TRIAL_INSERT,
    Q_TRIAL_KNOWN,
    Q_TRIAL_START,
    Q_TRIAL_FINISH,
    Q_RESULT_INSERT,
    Q_TRIAL_INTERRUPT,
    Q_TRIAL_GET,
    Q_TRIAL_BY_ID,
    Q_TRIAL_BY_RANK,
    Q_STATE_PUT,
    Q_STATE_GET,
    Q_COUNT
};

static const char *const QUERIES[Q_COUNT] = {
    [Q_EXP_INSERT] = "INSERT INTO experiment(name, conf_canonical, conf_text, conf_path, seed, "
                     "strategy, trials_budget, created_at, updated_at, status) "
                     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, " NOW_SQL ", " NOW_SQL ", 'running')",
    [Q_EXP_UPDATE] = "UPDATE experiment SET conf_canonical = ?2, conf_text = ?3, conf_path = ?4, "
                     "trials_budget = ?5, updated_at = " NOW_SQL " WHERE id = ?1",
    [Q_EXP_GET] = EXPERIMENT_COLUMNS "WHERE e.id = ?1",
    [Q_EXP_FIND_NAME] = EXPERIMENT_COLUMNS "WHERE e.name = ?1 ORDER BY e.id DESC LIMIT 1",
    [Q_EXP_FIND_ANY] = EXPERIMENT_COLUMNS "ORDER BY " HAS_RESULT " DESC, e.id DESC LIMIT 1",
    [Q_EXP_NAMES] = "SELECT DISTINCT name FROM experiment ORDER BY name",
    [Q_EXP_CANON] = "SELECT conf_canonical FROM experiment WHERE id = ?1",
    [Q_EXP_STATUS] = "UPDATE experiment SET status = ?2, updated_at = " NOW_SQL " WHERE id = ?1",
    [Q_TRIAL_INSERT] = "INSERT INTO trial(experiment_id, genotype, arch_key, proposed_by, status, "
                       "attempt, created_at) VALUES(?1, ?2, ?3, ?4, 'pending', 0, " NOW_SQL ")",
    [Q_TRIAL_KNOWN] = "SELECT 1 FROM trial WHERE experiment_id = ?1 AND arch_key = ?2",
    [Q_TRIAL_START] = "UPDATE trial SET status = 'running', worker = ?2, device = ?3, "
                      "attempt = attempt + 1, started_at = " NOW_SQL ", finished_at = NULL, "
                      "error = NULL, device_name = NULL, device_cc = NULL, flag = NULL "
                      "WHERE id = ?1",
    [Q_TRIAL_FINISH] = "UPDATE trial SET status = ?2, error = ?3, finished_at = " NOW_SQL
                       ", device_name = coalesce(?4, device_name), "
                       "device_cc = CASE WHEN ?4 IS NULL THEN device_cc ELSE ?5 END, "
                       "flag = ?6 WHERE id = ?1",
    [Q_RESULT_INSERT] = "INSERT OR REPLACE INTO result(trial_id, val_accuracy, test_accuracy, "
                        "train_loss, macs, params, latency_ms, train_seconds, epochs, score) "
                        "VALUES(?1, CASE WHEN ?2 >= 0 OR (SELECT device FROM trial WHERE id = ?1) "
                        "LIKE 'zero-cost:%' THEN ?2 END, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    [Q_TRIAL_INTERRUPT] = "UPDATE trial SET status = 'interrupted', error = ?2, finished_at = "
                          NOW_SQL " WHERE id = ?1",
    [Q_TRIAL_GET] = TRIAL_COLUMNS "WHERE t.id = ?1",
    [Q_TRIAL_BY_ID] = TRIAL_COLUMNS "WHERE t.experiment_id = ?1 AND " MIN_FIDELITY
                                   " ORDER BY t.id LIMIT ?2",
    [Q_TRIAL_BY_RANK] =
        TRIAL_COLUMNS "WHERE t.experiment_id = ?1 AND " MIN_FIDELITY " ORDER BY "
                      "CASE t.status WHEN 'done' THEN 0 WHEN 'failed' THEN 2 ELSE 1 END, "
                      NAS__STORE_RANK " LIMIT ?2",
    [Q_STATE_PUT] = "INSERT OR REPLACE INTO strategy_state(experiment_id, name, blob, updated_at) "
                    "VALUES(?1, ?2, ?3, " NOW_SQL ")",
    [Q_STATE_GET] = "SELECT blob FROM strategy_state WHERE experiment_id = ?1 AND name = ?2",
};

struct nas_store {
    sqlite3 *db;
    int readonly;
    int ours;       /* 1 once check_schema accepted the file (closing may checkpoint it) */
    int64_t schema; /* user_version of the file (< current only when opened read-only) */
    int migrated_from; /* the version this open migrated the file from; 0: none */
    int no_writer;     /* a reader of a file no `nas run` holds (NAS_STORE_RUN_LOCK_BYTE free):
                          "running" rows are shown as "interrupted" (stale_*) */
    int deferred;      /* NAS_STORE_OPEN_DEFER kept an older file as it is: readonly until
                          nas_store_migrate */
    char path[NAS_PATH_MAX];
    sqlite3_stmt *stmt[Q_COUNT];
};

static int db_fail(nas_store *st, nas_error *err, const char *what)
{
    return nas_error_set(err, NAS_EDB, "database %s: %s: %s", st->path, what,
                         sqlite3_errmsg(st->db));
}

/* `sql` for the file's schema: a version-1 or -2 file opened read-only (not
 * migrated) reads NULL for the columns later versions added. Returns sql
 * itself, or the rewritten text in buf[n]. */
static const char *old_schema_sql(const nas_store *st, const char *sql, char *buf, size_t n)
{
    static const struct {
        int version;
        const char *cols, *nulls;
    } added[] = {{2, V2_TRIAL_COLUMNS, "NULL, NULL"}, {3, V3_FLAG, "NULL"}, {5, NAS__STORE_FIDELITY, "NULL"}};
    for (size_t i = 0; i < sizeof added / sizeof added[0]; i++) {
        if (st->schema >= added[i].version || !strstr(sql, added[i].cols))
            continue;
        char tmp[4096];
        size_t len = 0;
        for (const char *p = sql, *at; len < sizeof tmp; p = at + strlen(added[i].cols)) {
            at = strstr(p, added[i].cols);
            int w = at ? snprintf(tmp + len, sizeof tmp - len, "%.*s%s", (int)(at - p), p,
                                  added[i].nulls)
                       : snprintf(tmp + len, sizeof tmp - len, "%s", p);
            len += w > 0 ? (size_t)w : 0;
            if (!at)
                break;
        }
        snprintf(buf, n, "%s", tmp);
        sql = buf;
    }
    return sql;
}

/* The cached statement `q`, reset and with its bindings cleared. */
static sqlite3_stmt *stmt_get(nas_store *st, int q, nas_error *err)
{
    if (!st->stmt[q]) {
        char old[4096];
        const char *sql = old_schema_sql(st, QUERIES[q], old, sizeof old);
        if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st->stmt[q],
                               NULL) != SQLITE_OK) {
            db_fail(st, err, "cannot prepare a statement");
            st->stmt[q] = NULL;
            return NULL;
        }
    }
    sqlite3_reset(st->stmt[q]);
    sqlite3_clear_bindings(st->stmt[q]);
    return st->stmt[q];
}

static int require_rw(nas_store *st, nas_error *err)
{
    if (st->readonly)
        return nas_error_set(err, NAS_EDB, "database %s: opened read-only", st->path);
    return NAS_OK;
}

/* The cached statement `q` with ?1 bound to `id` (an experiment or trial
 * id). `write` 1: the store must be open read-write. NULL with err set
 * (the caller returns NAS_EDB) when it is read-only or SQLite fails. */
static sqlite3_stmt *stmt_id(nas_store *st, int q, int64_t id, int write, nas_error *err)
{
    if (write && require_rw(st, err) != NAS_OK)
        return NULL;
    sqlite3_stmt *s = stmt_get(st, q, err);
    if (s)
        sqlite3_bind_int64(s, 1, id);
    return s;
}

/* Run a cached write statement whose parameters are bound. */
static int step_write(nas_store *st, sqlite3_stmt *s, const char *what, nas_error *err)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE)
        return db_fail(st, err, what);
    return NAS_OK;
}

/* Copies the current row of a query into `out`: NAS_OK or NAS_ENOMEM. */
typedef int (*row_reader)(sqlite3_stmt *s, void *out);

/*
 * Run the bound query `s`, which returns at most one row, and give that row
 * to `read`. Returns read's status (NAS_ENOMEM with "out of memory");
 * NAS_ENOTFOUND when there is no row, with err untouched (the caller says
 * what is missing); NAS_EDB "database PATH: <what>: <SQLite's reason>" when
 * SQLite fails. `s` is reset in every case.
 */
static int query_row(nas_store *st, sqlite3_stmt *s, row_reader read, void *out,
                     const char *what, nas_error *err)
{
    int rc = sqlite3_step(s);
    int status = NAS_ENOTFOUND;
    if (rc == SQLITE_ROW)
        status = read(s, out);
    else if (rc != SQLITE_DONE)
        status = db_fail(st, err, what);
    sqlite3_reset(s);
    if (status == NAS_ENOMEM)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    return status;
}

/* row_reader: column 0 as an int64_t. */
static int row_int64(sqlite3_stmt *s, void *out)
{
    *(int64_t *)out = sqlite3_column_int64(s, 0);
    return NAS_OK;
}

/* row_reader: column 0 as a malloc'd string (char *; "" for NULL). */
static int row_strdup(sqlite3_stmt *s, void *out)
{
    const unsigned char *t = sqlite3_column_text(s, 0);
    char *copy = strdup(t ? (const char *)t : "");
    *(char **)out = copy;
    return copy ? NAS_OK : NAS_ENOMEM;
}

/* A malloc'd copy of a BLOB column (at least one byte allocated). */
typedef struct blob_copy {
    void *data;
    size_t size;
} blob_copy;

/* row_reader: column 0 as a blob_copy. */
static int row_blob(sqlite3_stmt *s, void *out)
{
    blob_copy *b = out;
    int n = sqlite3_column_bytes(s, 0);
    const void *p = sqlite3_column_blob(s, 0);
    b->data = malloc(n > 0 ? (size_t)n : 1);
    if (!b->data)
        return NAS_ENOMEM;
    if (n > 0)
        memcpy(b->data, p, (size_t)n);
    b->size = (size_t)n;
    return NAS_OK;
}

static void copy_text(char *dst, size_t n, sqlite3_stmt *s, int col)
{
    const unsigned char *t = sqlite3_column_text(s, col);
    snprintf(dst, n, "%s", t ? (const char *)t : "");
}

static double col_double(sqlite3_stmt *s, int col)
{
    return sqlite3_column_type(s, col) == SQLITE_NULL ? NAN : sqlite3_column_double(s, col);
}

static int64_t col_int(sqlite3_stmt *s, int col)
{
    return sqlite3_column_type(s, col) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, col);
}

static int exec_sql(nas_store *st, const char *sql, const char *what, nas_error *err)
{
    char *msg = NULL;
    if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        nas_error_set(err, NAS_EDB, "database %s: %s: %s", st->path, what,
                      msg ? msg : sqlite3_errmsg(st->db));
        sqlite3_free(msg);
        return NAS_EDB;
    }
    return NAS_OK;
}

/* COMMIT the open transaction; if that fails (a deferred constraint, a
 * disk error), ROLLBACK, so the connection is never left inside a
 * transaction that later writes would join and nothing would commit
 * (issue 20). NAS_OK or NAS_EDB with `what` and SQLite's reason. */
static int commit(nas_store *st, const char *what, nas_error *err)
{
    if (exec_sql(st, "COMMIT", what, err) == NAS_OK)
        return NAS_OK;
    if (!sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    return NAS_EDB;
}

/* Read one integer from a PRAGMA or query. */
static int query_int(nas_store *st, const char *sql, int64_t *out, nas_error *err)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int64(s, 0);
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            *out = 0;
            rc = SQLITE_OK;
        }
    }
    if (rc != SQLITE_OK) {
        int code = sqlite3_errcode(st->db);
        if (code == SQLITE_NOTADB)
            nas_error_set(err, NAS_EDB,
                          "%s is not a nas database: it is not a SQLite file (%s)", st->path,
                          sqlite3_errmsg(st->db));
        else if ((code & 0xff) == SQLITE_CORRUPT)
            nas_error_set(err, NAS_EDB,
                          "database %s is damaged or truncated (%s); nothing was changed: "
                          "restore it from a copy or give another --db",
                          st->path, sqlite3_errmsg(st->db));
        else
            db_fail(st, err, "cannot read the database header");
        sqlite3_finalize(s);
        return NAS_EDB;
    }
    sqlite3_finalize(s);
    return NAS_OK;
}

/* Directory part of `path` into dir ("." when there is none). */
static void dir_of(const char *path, char *dir, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, n, ".");
    else if (slash == path)
        snprintf(dir, n, "/");
    else
        snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

/* File-system checks before SQLite sees the path, so the messages say
 * what is wrong in words a user can act on. */
static int precheck(const char *path, int readonly, nas_error *err)
{
    struct stat sb;
    int exists = stat(path, &sb) == 0;
    if (exists && S_ISDIR(sb.st_mode))
        return nas_error_set(err, NAS_EIO, "database %s: is a directory, expected a file", path);
    if (readonly) {
        if (!exists)
            return nas_error_set(err, NAS_EIO,
                                 "database %s: no such file (run `nas run CONF --db %s` first)",
                                 path, path);
        if (access(path, R_OK) != 0)
            return nas_error_set(err, NAS_EIO, "database %s: cannot read it: %s", path,
                                 strerror(errno));
        return NAS_OK;
    }
    char dir[NAS_PATH_MAX];
    dir_of(path, dir, sizeof dir);
    struct stat db;
    if (stat(dir, &db) != 0 || !S_ISDIR(db.st_mode))
        return nas_error_set(err, NAS_EIO, "database %s: directory %s does not exist", path, dir);
    /* SQLite in WAL mode creates PATH-wal and PATH-shm beside the file. */
    if (access(dir, W_OK | X_OK) != 0)
        return nas_error_set(err, NAS_EIO,
                             "database %s: directory %s is not writable (%s); choose another "
                             "place with --db",
                             path, dir, strerror(errno));
    if (exists && access(path, R_OK | W_OK) != 0)
        return nas_error_set(err, NAS_EIO, "database %s: cannot write it: %s", path,
                             strerror(errno));
    return NAS_OK;
}

/* 1 when a read-only open must use immutable=1: the directory is not
 * writable and there is neither a PATH-wal nor a PATH-shm. */
static int ro_needs_immutable(const char *path)
{
    char dir[NAS_PATH_MAX], side[NAS_PATH_MAX + 8];
    dir_of(path, dir, sizeof dir);
    if (access(dir, W_OK) == 0)
        return 0;
    snprintf(side, sizeof side, "%s-wal", path);
    if (access(side, F_OK) == 0)
        return 0;
    snprintf(side, sizeof side, "%s-shm", path);
    if (access(side, F_OK) == 0)
        return 0;
    return 1;
}

/* "file:PATH?immutable=1" with PATH percent-encoded (RFC 3986). */
static void uri_of(const char *path, char *out, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t k = (size_t)snprintf(out, n, "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p && k + 4 < n; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("/-._~", *p)) {
            out[k++] = (char)*p;
        } else {
            out[k++] = '%';
            out[k++] = hex[*p >> 4];
            out[k++] = hex[*p & 15];
        }
    }
    out[k] = '\0';
    snprintf(out + k, n - k, "?immutable=1");
}

static int create_schema(nas_store *st, nas_error *err)
{
    char sql[sizeof SCHEMA_V1 + sizeof MIGRATE_V2 + sizeof MIGRATE_V3 + sizeof MIGRATE_V5 +
             sizeof MIGRATE_V8 + sizeof MIGRATE_V9 + sizeof MIGRATE_V10 + 256];
    snprintf(sql, sizeof sql, "BEGIN IMMEDIATE;\n%s%s%s%s%s%s%sPRAGMA application_id = %d;\n"
             "PRAGMA user_version = %d;\nCOMMIT;",
             SCHEMA_V1, MIGRATE_V2, MIGRATE_V3, MIGRATE_V5, MIGRATE_V8, MIGRATE_V9, MIGRATE_V10,
             NAS_STORE_APPLICATION_ID,
             NAS_STORE_SCHEMA_VERSION);
    int rc = exec_sql(st, sql, "cannot create the schema", err);
    if (rc != NAS_OK)
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* One migration step, version `to` - 1 -> `to` (`sql`: MIGRATE_V2,
 * MIGRATE_V3, or NULL; `fn`, may be NULL: C code that rewrites rows, run
 * after `sql`), in one IMMEDIATE transaction that re-reads the version, so
 * concurrent openers migrate once. */
static int migrate_step(nas_store *st, int to, const char *sql,
                        int (*fn)(nas_store *, nas_error *), nas_error *err)
{
    int64_t ver = 0;
    if (exec_sql(st, "BEGIN IMMEDIATE", "cannot begin the schema migration", err) != NAS_OK)
        return NAS_EDB;
    int rc = query_int(st, "PRAGMA user_version", &ver, err);
    if (rc == NAS_OK && ver == to - 1) {
        char what[96], bump[64];
        snprintf(what, sizeof what, "cannot migrate the schema from version %d to %d", to - 1,
                 to);
        snprintf(bump, sizeof bump, "PRAGMA user_version = %d;", to);
        if (sql)
            rc = exec_sql(st, sql, what, err);
        if (rc == NAS_OK && fn)
            rc = fn(st, err);
        if (rc == NAS_OK)
            rc = exec_sql(st, bump, what, err);
        if (rc == NAS_OK && !st->migrated_from)
            st->migrated_from = to - 1;
    }
    if (rc == NAS_OK)
        rc = exec_sql(st, "COMMIT", "cannot commit the schema migration", err);
    if (rc != NAS_OK) {
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        if (st->migrated_from == to - 1)
            st->migrated_from = 0;
        return rc;
    }
    st->schema = to;
    return NAS_OK;
}

/* Version 1 -> 2 (MIGRATE_V2). */
static int migrate_v2(nas_store *st, nas_error *err)
{
    return migrate_step(st, 2, MIGRATE_V2, NULL, err);
}

/* Version 2 -> 3 (MIGRATE_V3, issue 22): experiment rebuilt without
 * UNIQUE(conf_canonical), trial.flag added (NULL for the old trials). */
static int migrate_v3(nas_store *st, nas_error *err)
{
    return migrate_step(st, 3, MIGRATE_V3, NULL, err);
}

/* Version 3 -> 4 (issue 21): trial.arch_key becomes the functional key
 * (nas_space_key) instead of NAS-Bench-201's string (nas_space_nb201_str),
 * recomputed from each trial's genotype. No column changes. The two keys
 * partition the cells differently, so two trials of one experiment may now
 * share a key (their cells compute one function): the later one keeps its
 * row and result, with arch_key "KEY (same function as trial N)", so
 * UNIQUE(experiment_id, arch_key) holds and nothing is lost. Each
 * experiment with trials gets the strategy_state row
 * NAS_STORE_NB201_KEYS_STATE = "<largest trial id>": the trials up to it were proposed
 * under the old key, and the controller's replay dedupes them with it, so a
 * resumed search makes the same proposals as before (search/replay.c).
 * A genotype that does not parse keeps its key. Runs inside migrate_step's
 * transaction. */
typedef struct key_row {
    int64_t id, exp;
    char *geno;
} key_row;

static int migrate_keys(nas_store *st, nas_error *err)
{
    sqlite3_stmt *sel = NULL, *upd = NULL, *taken = NULL, *mark = NULL;
    key_row *rows = NULL;
    size_t n = 0, cap = 0;
    int rc = NAS_OK;
    if (sqlite3_prepare_v2(st->db, "SELECT id, experiment_id, genotype FROM trial ORDER BY id", -1,
                           &sel, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(st->db, "UPDATE trial SET arch_key = ?2 WHERE id = ?1", -1, &upd,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(st->db,
                           "SELECT id FROM trial WHERE experiment_id = ?1 AND arch_key = ?2", -1,
                           &taken, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(st->db,
                           "INSERT OR REPLACE INTO strategy_state(experiment_id, name, blob, "
                           "updated_at) SELECT experiment_id, '" NAS_STORE_NB201_KEYS_STATE "', "
                           "CAST(max(id) AS TEXT), " NOW_SQL " FROM trial GROUP BY experiment_id",
                           -1, &mark, NULL) != SQLITE_OK) {
        rc = db_fail(st, err, "cannot prepare the key migration");
        goto done;
    }
    /* read first: the updates below must not run under an open SELECT */
    int step;
    while ((step = sqlite3_step(sel)) == SQLITE_ROW) {
        if (n == cap) {
            size_t c2 = cap ? 2 * cap : 256;
            key_row *r2 = realloc(rows, c2 * sizeof *r2);
            if (!r2) {
                rc = nas_error_set(err, NAS_ENOMEM, "database %s: out of memory", st->path);
                goto done;
            }
            rows = r2;
            cap = c2;
        }
        const unsigned char *g = sqlite3_column_text(sel, 2);
        rows[n].id = sqlite3_column_int64(sel, 0);
        rows[n].exp = sqlite3_column_int64(sel, 1);
        rows[n].geno = strdup(g ? (const char *)g : "");
        if (!rows[n].geno) {
            rc = nas_error_set(err, NAS_ENOMEM, "database %s: out of memory", st->path);
            goto done;
        }
        n++;
    }
    if (step != SQLITE_DONE) {
        rc = db_fail(st, err, "cannot read the trials to migrate their keys");
        goto done;
    }
    for (size_t i = 0; i < n && rc == NAS_OK; i++) {
        nas_genotype g;
        nas_error perr;
        if (nas_space_parse(NULL, rows[i].geno, &g, &perr) != NAS_OK)
            continue;
        char key[NAS_GENOTYPE_STR_MAX + 64];
        nas_space_key(NULL, &g, key, NAS_GENOTYPE_STR_MAX);
        /* old keys never equal new ones (old ones always hold three terms
         * and '#' or '0'; new ones hold 'x', 'b' or are "0"), so only an
         * earlier, already migrated trial can hold this key */
        sqlite3_reset(taken);
        sqlite3_bind_int64(taken, 1, rows[i].exp);
        sqlite3_bind_text(taken, 2, key, -1, SQLITE_TRANSIENT);
        step = sqlite3_step(taken);
        if (step == SQLITE_ROW) {
            long long first = (long long)sqlite3_column_int64(taken, 0);
            size_t len = strlen(key);
            snprintf(key + len, sizeof key - len, " (same function as trial %lld)", first);
        } else if (step != SQLITE_DONE) {
            rc = db_fail(st, err, "cannot check a migrated key");
            break;
        }
        sqlite3_reset(upd);
        sqlite3_bind_int64(upd, 1, rows[i].id);
        sqlite3_bind_text(upd, 2, key, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(upd) != SQLITE_DONE)
            rc = db_fail(st, err, "cannot store a migrated key");
    }
    if (rc == NAS_OK && sqlite3_step(mark) != SQLITE_DONE)
        rc = db_fail(st, err, "cannot record which trials used the old key");
done:
    for (size_t i = 0; i < n; i++)
        free(rows[i].geno);
    free(rows);
    sqlite3_finalize(sel);
    sqlite3_finalize(upd);
    sqlite3_finalize(taken);
    sqlite3_finalize(mark);
    return rc;
}

static int migrate_v4(nas_store *st, nas_error *err)
{
    return migrate_step(st, 4, NULL, migrate_keys, err);
}

/* Version 4 -> 5 (MIGRATE_V5, issue 17): the rung table, empty. */
static int migrate_v5(nas_store *st, nas_error *err)
{
    return migrate_step(st, 5, MIGRATE_V5, NULL, err);
}

/* Version 5 -> 6 (MIGRATE_V6): table trials' loss and latency NULL. */
static int migrate_v6(nas_store *st, nas_error *err)
{
    return migrate_step(st, 6, MIGRATE_V6, NULL, err);
}

/* Version 6 -> 7 (MIGRATE_V7): table trials' train_seconds NULL. */
static int migrate_v7(nas_store *st, nas_error *err)
{
    return migrate_step(st, 7, MIGRATE_V7, NULL, err);
}

/* Version 7 -> 8 (MIGRATE_V8, issue 30): the proxy_check table, empty. */
static int migrate_v8(nas_store *st, nas_error *err)
{
    return migrate_step(st, 8, MIGRATE_V8, NULL, err);
}

/* Version 8 -> 9 (MIGRATE_V9, issue 31): the zc_score table, empty. */
static int migrate_v9(nas_store *st, nas_error *err)
{
    return migrate_step(st, 9, MIGRATE_V9, NULL, err);
}

/* Version 9 -> 10 (MIGRATE_V10, issue 32): supernet_epoch and finalist, empty. */
static int migrate_v10(nas_store *st, nas_error *err)
{
    return migrate_step(st, 10, MIGRATE_V10, NULL, err);
}

static int migrate(nas_store *st, nas_error *err);

/* Check that the file is a nas database of a version we know; create the
 * schema in a new, empty file (read-write only). */
static int check_schema(nas_store *st, nas_error *err)
{
    int64_t app = 0, ver = 0, ntab = 0;
    int rc;
    if ((rc = query_int(st, "PRAGMA application_id", &app, err)) != NAS_OK ||
        (rc = query_int(st, "PRAGMA user_version", &ver, err)) != NAS_OK ||
        (rc = query_int(st, "SELECT count(*) FROM sqlite_master", &ntab, err)) != NAS_OK)
        return rc;
    if (app == 0 && ver == 0 && ntab == 0) {
        if (st->readonly)
            return nas_error_set(err, NAS_EDB, "%s is not a nas database: it is an empty file",
                                 st->path);
        /* Another process may have created it meanwhile: the IMMEDIATE
         * transaction serialises creators; re-check inside it. */
        if ((rc = create_schema(st, err)) != NAS_OK) {
            if ((rc = query_int(st, "PRAGMA application_id", &app, err)) != NAS_OK)
                return rc;
            if (app != NAS_STORE_APPLICATION_ID)
                return NAS_EDB;
            nas_error_clear(err);
            if ((rc = query_int(st, "PRAGMA user_version", &ver, err)) != NAS_OK)
                return rc;
        } else {
            st->schema = NAS_STORE_SCHEMA_VERSION;
            return NAS_OK;
        }
    }
    if (app != NAS_STORE_APPLICATION_ID)
        return nas_error_set(err, NAS_EDB,
                             "%s is a SQLite database but not a nas database (application_id "
                             "0x%08llx, expected 0x%08x); refusing to touch it",
                             st->path, (unsigned long long)(uint32_t)app,
                             NAS_STORE_APPLICATION_ID);
    if (ver > NAS_STORE_SCHEMA_VERSION)
        return nas_error_set(err, NAS_EDB,
                             "database %s: schema version %lld is newer than this nas knows "
                             "(%d); use a newer nas",
                             st->path, (long long)ver, NAS_STORE_SCHEMA_VERSION);
    if (ver < 1)
        return nas_error_set(err, NAS_EDB, "database %s: schema version %lld is not valid",
                             st->path, (long long)ver);
    st->schema = ver;
    if (st->readonly)
        return NAS_OK;
    if (st->deferred && ver < NAS_STORE_SCHEMA_VERSION) {
        st->readonly = 1; /* read as it is until nas_store_migrate */
        return NAS_OK;
    }
    st->deferred = 0;
    return migrate(st, err);
}

/* Bring a file of an older schema (st->schema) to NAS_STORE_SCHEMA_VERSION,
 * one step after the other. Errors: NAS_EDB. */
static int migrate(nas_store *st, nas_error *err)
{
    int rc;
    if (st->schema < 2 && (rc = migrate_v2(st, err)) != NAS_OK)
        return rc;
    if (st->schema < 3 && (rc = migrate_v3(st, err)) != NAS_OK)
        return rc;
    if (st->schema < 4 && (rc = migrate_v4(st, err)) != NAS_OK)
        return rc;
    if (st->schema < 5 && (rc = migrate_v5(st, err)) != NAS_OK)
        return rc;
    if (st->schema < 6 && (rc = migrate_v6(st, err)) != NAS_OK)
        return rc;
    if (st->schema < 7 && (rc = migrate_v7(st, err)) != NAS_OK)
        return rc;
    if (st->schema < 8 && (rc = migrate_v8(st, err)) != NAS_OK)
        return rc;
    if (st->schema < 9 && (rc = migrate_v9(st, err)) != NAS_OK)
        return rc;
    if (st->schema < 10 && (rc = migrate_v10(st, err)) != NAS_OK)
        return rc;
    return NAS_OK;
}

int nas_store_migrated_from(const nas_store *st)
{
    return st ? st->migrated_from : 0;
}

/* A read-write store's settings: WAL mode, synchronous NORMAL, foreign keys;
 * closing it checkpoints. Errors: NAS_EDB. */
static int become_writer(nas_store *st, nas_error *err)
{
    int64_t dummy;
    sqlite3_stmt *s = NULL;
    const char *mode = "";
    if (sqlite3_prepare_v2(st->db, "PRAGMA journal_mode=WAL", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        mode = (const char *)sqlite3_column_text(s, 0);
    int wal = mode && strcmp(mode, "wal") == 0;
    sqlite3_finalize(s);
    if (!wal)
        return db_fail(st, err, "cannot switch to WAL mode");
    int rc;
    if ((rc = exec_sql(st, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
                       "cannot set pragmas", err)) != NAS_OK ||
        (rc = query_int(st, "PRAGMA foreign_keys", &dummy, err)) != NAS_OK)
        return rc;
    st->ours = 1;
    return NAS_OK;
}

int nas_store_migrate(nas_store *st, nas_error *err)
{
    if (!st->deferred || !st->readonly)
        return NAS_OK; /* nothing was kept back */
    /* the statements cached so far read the old schema (old_schema_sql) */
    for (int i = 0; i < Q_COUNT; i++) {
        sqlite3_finalize(st->stmt[i]);
        st->stmt[i] = NULL;
    }
    st->deferred = 0;
    st->readonly = 0;
    int rc = migrate(st, err);
    if (rc == NAS_OK)
        rc = become_writer(st, err);
    if (rc != NAS_OK)
        st->readonly = 1; /* a failed migration leaves a store that only reads */
    return rc;
}

static int writer_gone(const char *path);

int nas_store_open(const char *path, int readonly, nas_store **out, nas_error *err)
{
    *out = NULL;
    int defer = readonly == NAS_STORE_OPEN_DEFER;
    if (defer)
        readonly = 0;
    if (!path || !*path)
        return nas_error_set(err, NAS_EINVAL, "database: empty path");
    if (strlen(path) >= NAS_PATH_MAX)
        return nas_error_set(err, NAS_EINVAL, "database %.64s...: path too long", path);
    int rc = precheck(path, readonly, err);
    if (rc != NAS_OK)
        return rc;
    nas_store *st = calloc(1, sizeof *st);
    if (!st)
        return nas_error_set(err, NAS_ENOMEM, "database %s: out of memory", path);
    snprintf(st->path, sizeof st->path, "%s", path);
    st->readonly = readonly;
    st->deferred = defer;
    int flags = readonly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    const char *name = path;
    char uri[3 * NAS_PATH_MAX + 32];
    if (readonly && ro_needs_immutable(path)) {
        /* A WAL file in a directory we cannot write: SQLite cannot create
         * PATH-shm, and with no PATH-wal nobody is writing, so read it as
         * an immutable file. */
        uri_of(path, uri, sizeof uri);
        name = uri;
        flags |= SQLITE_OPEN_URI;
    }
    if (sqlite3_open_v2(name, &st->db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        rc = nas_error_set(err, NAS_EDB, "database %s: cannot open: %s", path,
                           st->db ? sqlite3_errmsg(st->db) : "out of memory");
        nas_store_close(st);
        return rc;
    }
    sqlite3_extended_result_codes(st->db, 1);
    sqlite3_busy_timeout(st->db, 10000);
    /* Until the file is known to be ours, closing must not checkpoint a
     * WAL left beside it (a killed writer's) into it: a foreign or a newer
     * database is never written (issue 18). It stays off: a writer's
     * nas_store_close checkpoints explicitly, without the file locks. */
    sqlite3_db_config(st->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    if ((rc = check_schema(st, err)) != NAS_OK) {
        nas_store_close(st);
        return rc;
    }
    if (!st->readonly && (rc = become_writer(st, err)) != NAS_OK) {
        nas_store_close(st);
        return rc;
    }
    if (readonly) /* a reader: is the run that wrote "running" still there? */
        st->no_writer = writer_gone(path);
    *out = st;
    return NAS_OK;
}

void nas_store_close(nas_store *st)
{
    if (!st)
        return;
    for (int i = 0; i < Q_COUNT; i++)
        sqlite3_finalize(st->stmt[i]);
    /* A writer leaves everything in the database file (a copy of PATH alone
     * is complete) by a TRUNCATE checkpoint, which takes only the WAL's
     * locks, and then closes without checkpointing: SQLite's checkpoint on
     * close takes the file's PENDING and EXCLUSIVE locks, and a plain reader
     * opening the file in that moment (sqlite3 with no busy timeout) saw
     * "database is locked" at the end of every run. PATH-wal (empty) and
     * PATH-shm stay beside the file. */
    if (st->ours && st->db)
        sqlite3_exec(st->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
    sqlite3_close(st->db);
    free(st);
}

const char *nas_store_path(const nas_store *st) { return st->path; }

sqlite3 *nas__store_sqlite(nas_store *st) { return st->db; }

int nas__store_readonly(const nas_store *st) { return st->readonly; }

/* ---- experiments ----------------------------------------------------------- */

int nas_store_experiment_create(nas_store *st, const char *name, const char *canonical,
                                const char *conf_text, const char *conf_path, uint64_t seed,
                                const char *strategy, int trials_budget, int64_t *id,
                                nas_error *err)
{
    *id = -1;
    int rc = require_rw(st, err);
    if (rc != NAS_OK)
        return rc;
    sqlite3_stmt *s = stmt_get(st, Q_EXP_INSERT, err);
    if (!s)
        return NAS_EDB;
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, canonical, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, conf_text ? conf_text : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, conf_path ? conf_path : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 5, (sqlite3_int64)seed);
    sqlite3_bind_text(s, 6, strategy, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 7, trials_budget);
    if ((rc = step_write(st, s, "cannot create the experiment", err)) != NAS_OK)
        return rc;
    *id = sqlite3_last_insert_rowid(st->db);
    return NAS_OK;
}

int nas_store_experiment_update(nas_store *st, int64_t id, const char *canonical,
                                const char *conf_text, const char *conf_path, int trials_budget,
                                nas_error *err)
{
    sqlite3_stmt *s = stmt_id(st, Q_EXP_UPDATE, id, 1, err);
    if (!s)
        return NAS_EDB;
    sqlite3_bind_text(s, 2, canonical, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, conf_text ? conf_text : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, conf_path ? conf_path : "", -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 5, trials_budget);
    return step_write(st, s, "cannot update the experiment", err);
}

int nas_store_experiment_open(nas_store *st, const char *name, const char *canonical,
                              const char *conf_text, const char *conf_path, uint64_t seed,
                              const char *strategy, int trials_budget, int64_t *id, int *created,
                              nas_error *err)
{
    *id = -1;
    *created = 0;
    int rc = require_rw(st, err);
    if (rc != NAS_OK)
        return rc;
    if (exec_sql(st, "BEGIN IMMEDIATE", "cannot begin a transaction", err) != NAS_OK)
        return NAS_EDB;
    nas_store_experiment e;
    nas_error ferr;
    rc = nas_store_experiment_find(st, name, &e, &ferr);
    if (rc == NAS_OK) {
        *id = e.id;
        return commit(st, "cannot commit", err);
    }
    if (rc == NAS_ENOTFOUND)
        rc = nas_store_experiment_create(st, name, canonical, conf_text, conf_path, seed,
                                         strategy, trials_budget, id, err);
    else
        *err = ferr;
    if (rc == NAS_OK) {
        *created = 1;
        return commit(st, "cannot commit", err);
    }
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    *id = -1;
    return NAS_EDB;
}

/* Whether no `nas run` holds the database file at `path`: the run's
 * open-file-description lock on NAS_STORE_RUN_LOCK_BYTE (search/run_lock.c)
 * is free. The kernel drops that lock however the run ended, kill -9
 * included. 0 when it is held or cannot be tested. */
static int writer_gone(const char *path)
{
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0)
        return 0;
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = NAS_STORE_RUN_LOCK_BYTE;
    fl.l_len = 1;
    int gone = fcntl(f, F_OFD_GETLK, &fl) == 0 && fl.l_type == F_UNLCK;
    close(f);
    return gone;
}

/* A run that was killed (kill -9, a crash, the machine) could not mark its
 * experiment and trials: they stay "running" in the file. A reader of a
 * file no run holds shows them as "interrupted", which is what they are
 * and what the next `nas run` resumes. */
static void stale_experiment(const nas_store *st, nas_store_experiment *e)
{
    if (!st->no_writer)
        return;
    if (strcmp(e->status, "running") == 0)
        snprintf(e->status, sizeof e->status, "interrupted");
    e->n_interrupted += e->n_running;
    e->n_running = 0;
}

static void stale_trial(const nas_store *st, nas_store_trial *t)
{
    if (st->no_writer && t->status == NAS_TRIAL_RUNNING)
        t->status = NAS_TRIAL_INTERRUPTED;
}

/* row_reader: an EXPERIMENT_COLUMNS row as a nas_store_experiment. */
static int read_experiment(sqlite3_stmt *s, void *out)
{
    nas_store_experiment *e = out;
    memset(e, 0, sizeof *e);
    e->id = sqlite3_column_int64(s, 0);
    copy_text(e->name, sizeof e->name, s, 1);
    copy_text(e->strategy, sizeof e->strategy, s, 2);
    copy_text(e->conf_path, sizeof e->conf_path, s, 3);
    e->seed = (uint64_t)sqlite3_column_int64(s, 4);
    e->trials_budget = sqlite3_column_int(s, 5);
    copy_text(e->status, sizeof e->status, s, 6);
    copy_text(e->created_at, sizeof e->created_at, s, 7);
    copy_text(e->updated_at, sizeof e->updated_at, s, 8);
    e->n_trials = sqlite3_column_int(s, 9);
    e->n_pending = sqlite3_column_int(s, 10);
    e->n_running = sqlite3_column_int(s, 11);
    e->n_done = sqlite3_column_int(s, 12);
    e->n_failed = sqlite3_column_int(s, 13);
    e->n_interrupted = sqlite3_column_int(s, 14);
    e->n_diverged = sqlite3_column_int(s, 15);
    e->best_trial = col_int(s, 16);
    e->best_val_accuracy = col_double(s, 17);
    return NAS_OK;
}

int nas_store_experiment_get(nas_store *st, int64_t id, nas_store_experiment *out,
                             nas_error *err)
{
    sqlite3_stmt *s = stmt_id(st, Q_EXP_GET, id, 0, err);
    if (!s)
        return NAS_EDB;
    int rc = query_row(st, s, read_experiment, out, "cannot read the experiment", err);
    if (rc == NAS_OK)
        stale_experiment(st, out);
    if (rc == NAS_ENOTFOUND)
        return nas_error_set(err, NAS_ENOTFOUND, "database %s: no experiment %lld", st->path,
                             (long long)id);
    return rc;
}

int nas_store_experiment_find(nas_store *st, const char *name, nas_store_experiment *out,
                              nas_error *err)
{
    sqlite3_stmt *s = stmt_get(st, name ? Q_EXP_FIND_NAME : Q_EXP_FIND_ANY, err);
    if (!s)
        return NAS_EDB;
    if (name)
        sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    int rc = query_row(st, s, read_experiment, out, "cannot read the experiments", err);
    if (rc == NAS_OK)
        stale_experiment(st, out);
    if (rc != NAS_ENOTFOUND)
        return rc;
    if (!name)
        return nas_error_set(err, NAS_ENOTFOUND, "database %s: has no experiments yet", st->path);
    /* List the names there are, to help a typo. */
    char names[512] = "";
    size_t len = 0;
    s = stmt_get(st, Q_EXP_NAMES, err);
    while (s && sqlite3_step(s) == SQLITE_ROW && len < sizeof names - 4) {
        const unsigned char *t = sqlite3_column_text(s, 0);
        int w = snprintf(names + len, sizeof names - len, "%s'%s'", len ? ", " : "",
                         t ? (const char *)t : "");
        if (w < 0)
            break;
        len += (size_t)w;
    }
    if (s)
        sqlite3_reset(s);
    return nas_error_set(err, NAS_ENOTFOUND, "database %s: no experiment named '%s' (%s%s)",
                         st->path, name, len ? "there are: " : "there are none",
                         names);
}

int nas_store_experiment_foreach(nas_store *st, nas_store_experiment_fn fn, void *ctx,
                                 nas_error *err)
{
    /* A private statement, so `fn` may call other store functions. */
    char old[4096];
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, old_schema_sql(st, EXPERIMENT_COLUMNS "ORDER BY e.id", old,
                                                  sizeof old),
                           -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, "cannot prepare the experiment listing");
    nas_store_experiment e;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        read_experiment(s, &e);
        stale_experiment(st, &e);
        if (fn(ctx, &e) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    int status = rc == SQLITE_DONE ? NAS_OK : db_fail(st, err, "cannot list the experiments");
    sqlite3_finalize(s);
    return status;
}

int nas_store_experiment_canonical(nas_store *st, int64_t id, char **out, nas_error *err)
{
    *out = NULL;
    sqlite3_stmt *s = stmt_id(st, Q_EXP_CANON, id, 0, err);
    if (!s)
        return NAS_EDB;
    int rc = query_row(st, s, row_strdup, out, "cannot read the experiment", err);
    if (rc == NAS_ENOTFOUND)
        return nas_error_set(err, NAS_ENOTFOUND, "database %s: no experiment %lld", st->path,
                             (long long)id);
    return rc;
}

int nas_store_experiment_set_status(nas_store *st, int64_t id, const char *status,
                                    nas_error *err)
{
    sqlite3_stmt *s = stmt_id(st, Q_EXP_STATUS, id, 1, err);
    if (!s)
        return NAS_EDB;
    sqlite3_bind_text(s, 2, status, -1, SQLITE_STATIC);
    return step_write(st, s, "cannot update the experiment status", err);
}

/* ---- trials ---------------------------------------------------------------- */

static const char *const STATUS_NAMES[] = {"pending", "running", "done", "failed", "interrupted"};

const char *nas_trial_status_name(int status)
{
    if (status < 0 || status >= (int)(sizeof STATUS_NAMES / sizeof STATUS_NAMES[0]))
        return NULL;
    return STATUS_NAMES[status];
}

int nas_trial_status_from_name(const char *name, nas_trial_status *out)
{
    for (int i = 0; i < (int)(sizeof STATUS_NAMES / sizeof STATUS_NAMES[0]); i++) {
        if (strcmp(name, STATUS_NAMES[i]) == 0) {
            *out = (nas_trial_status)i;
            return NAS_OK;
        }
    }
    return NAS_ENOTFOUND;
}

int nas_store_trial_insert(nas_store *st, int64_t exp_id, const char *genotype,
                           const char *arch_key, const char *proposed_by, int64_t *trial_id,
                           nas_error *err)
{
    *trial_id = -1;
    sqlite3_stmt *s = stmt_id(st, Q_TRIAL_INSERT, exp_id, 1, err);
    if (!s)
        return NAS_EDB;
    sqlite3_bind_text(s, 2, genotype, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, arch_key, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, proposed_by, -1, SQLITE_STATIC);
    if (step_write(st, s, "cannot insert a trial", err) == NAS_OK) {
        *trial_id = sqlite3_last_insert_rowid(st->db);
        return NAS_OK;
    }
    if (sqlite3_extended_errcode(st->db) == SQLITE_CONSTRAINT_UNIQUE)
        return nas_error_set(err, NAS_EEXIST,
                             "database %s: experiment %lld already has a trial with key %s",
                             st->path, (long long)exp_id, arch_key);
    return NAS_EDB;
}

int nas_store_trial_known(nas_store *st, int64_t exp_id, const char *arch_key, int *known,
                          nas_error *err)
{
    *known = 0;
    sqlite3_stmt *s = stmt_id(st, Q_TRIAL_KNOWN, exp_id, 0, err);
    if (!s)
        return NAS_EDB;
    sqlite3_bind_text(s, 2, arch_key, -1, SQLITE_STATIC);
    int64_t one = 0;
    int rc = query_row(st, s, row_int64, &one, "cannot look up a trial key", err);
    *known = rc == NAS_OK;
    return rc == NAS_ENOTFOUND ? NAS_OK : rc;
}

int nas_store_trial_start(nas_store *st, int64_t trial_id, int worker, const char *device,
                          nas_error *err)
{
    sqlite3_stmt *s = stmt_id(st, Q_TRIAL_START, trial_id, 1, err);
    if (!s)
        return NAS_EDB;
    sqlite3_bind_int(s, 2, worker);
    if (device)
        sqlite3_bind_text(s, 3, device, -1, SQLITE_STATIC);
    return step_write(st, s, "cannot mark a trial running", err);
}

static void bind_real_or_null(sqlite3_stmt *s, int i, double v, int allow_negative)
{
    if (isfinite(v) && (allow_negative || v >= 0))
        sqlite3_bind_double(s, i, v);
    else
        sqlite3_bind_null(s, i);
}

int nas_store_trial_finish(nas_store *st, int64_t trial_id, const nas_trial_result *res,
                           double score, const char *note, nas_error *err)
{
    return nas_store_trial_finish_flagged(st, trial_id, res, score, note, NULL, err);
}

int nas_store_trial_finish_flagged(nas_store *st, int64_t trial_id, const nas_trial_result *res,
                                   double score, const char *note, const char *flag,
                                   nas_error *err)
{
    return nas_store_trial_finish_rung(st, trial_id, res, score, note, flag, NULL, err);
}

/* The trial and result rows of nas_store_trial_finish_flagged, inside the
 * caller's transaction. Errors: NAS_EDB. */
static int finish_rows(nas_store *st, int64_t trial_id, const nas_trial_result *res, double score,
                       const char *note, const char *flag, nas_error *err)
{
    int ok = res->status == NAS_OK;
    sqlite3_stmt *s = stmt_id(st, Q_TRIAL_FINISH, trial_id, 0, err);
    if (!s)
        return NAS_EDB;
    sqlite3_bind_text(s, 2, ok ? "done" : "failed", -1, SQLITE_STATIC);
    if (!ok)
        sqlite3_bind_text(s, 3, res->error[0] ? res->error : nas_strerror(res->status), -1,
                          SQLITE_TRANSIENT);
    else if (note && *note)
        sqlite3_bind_text(s, 3, note, -1, SQLITE_TRANSIENT);
    if (res->device_name[0]) { /* where it ran (issue 7); NULL keeps the column */
        sqlite3_bind_text(s, 4, res->device_name, -1, SQLITE_TRANSIENT);
        if (res->device_cc[0])
            sqlite3_bind_text(s, 5, res->device_cc, -1, SQLITE_TRANSIENT);
    }
    if (ok && flag && *flag) /* issue 22: e.g. "diverged" */
        sqlite3_bind_text(s, 6, flag, -1, SQLITE_TRANSIENT);
    if (step_write(st, s, "cannot record a trial", err) != NAS_OK)
        return NAS_EDB;
    s = stmt_id(st, Q_RESULT_INSERT, trial_id, 0, err);
    if (!s)
        return NAS_EDB;
    if (ok) /* negative: NULL (-1: none), except in a trial whose device is
             * "zero-cost:PROXY", where it is the proxy's score (jacob_cov's are
             * negative; issue 31): the statement decides */
        bind_real_or_null(s, 2, res->val_accuracy, 1);
    bind_real_or_null(s, 3, res->test_accuracy, 0);
    bind_real_or_null(s, 4, res->train_loss, 0);
    if (res->macs > 0)
        sqlite3_bind_int64(s, 5, res->macs);
    if (res->params > 0)
        sqlite3_bind_int64(s, 6, res->params);
    bind_real_or_null(s, 7, res->latency_ms, 0);
    bind_real_or_null(s, 8, res->train_seconds, 0);
    if (res->epochs > 0)
        sqlite3_bind_int(s, 9, res->epochs);
    bind_real_or_null(s, 10, score, 1);
    return step_write(st, s, "cannot record a result", err);
}

int nas_store_trial_finish_rung(nas_store *st, int64_t trial_id, const nas_trial_result *res,
                                double score, const char *note, const char *flag,
                                const nas_store_rung *rung, nas_error *err)
{
    int rc = require_rw(st, err);
    if (rc != NAS_OK)
        return rc;
    if (exec_sql(st, "BEGIN IMMEDIATE", "cannot begin a transaction", err) != NAS_OK)
        return NAS_EDB;
    if ((!rung || nas__store_rung_insert(st, rung, err) == NAS_OK) &&
        finish_rows(st, trial_id, res, score, note, flag, err) == NAS_OK)
        return commit(st, "cannot commit a result", err);
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    return NAS_EDB;
}

int nas_store_trial_interrupt(nas_store *st, int64_t trial_id, const char *reason,
                              nas_error *err)
{
    sqlite3_stmt *s = stmt_id(st, Q_TRIAL_INTERRUPT, trial_id, 1, err);
    if (!s)
        return NAS_EDB;
    sqlite3_bind_text(s, 2, reason ? reason : "interrupted", -1, SQLITE_TRANSIENT);
    return step_write(st, s, "cannot mark a trial interrupted", err);
}

/* row_reader: a TRIAL_COLUMNS row as a nas_store_trial. */
static int read_trial(sqlite3_stmt *s, void *out)
{
    nas_store_trial *t = out;
    memset(t, 0, sizeof *t);
    t->id = sqlite3_column_int64(s, 0);
    t->experiment_id = sqlite3_column_int64(s, 1);
    copy_text(t->experiment, sizeof t->experiment, s, 2);
    copy_text(t->genotype, sizeof t->genotype, s, 3);
    copy_text(t->arch_key, sizeof t->arch_key, s, 4);
    copy_text(t->proposed_by, sizeof t->proposed_by, s, 5);
    char status[16];
    copy_text(status, sizeof status, s, 6);
    nas_trial_status ts = NAS_TRIAL_PENDING;
    nas_trial_status_from_name(status, &ts);
    t->status = ts;
    t->worker = (int)col_int(s, 7);
    t->attempt = sqlite3_column_int(s, 8);
    copy_text(t->device, sizeof t->device, s, 9);
    copy_text(t->created_at, sizeof t->created_at, s, 10);
    copy_text(t->started_at, sizeof t->started_at, s, 11);
    copy_text(t->finished_at, sizeof t->finished_at, s, 12);
    copy_text(t->error, sizeof t->error, s, 13);
    t->has_result = sqlite3_column_int(s, 14);
    t->val_accuracy = col_double(s, 15);
    t->test_accuracy = col_double(s, 16);
    t->train_loss = col_double(s, 17);
    t->macs = col_int(s, 18);
    t->params = col_int(s, 19);
    t->latency_ms = col_double(s, 20);
    t->train_seconds = col_double(s, 21);
    t->epochs = (int)col_int(s, 22);
    t->score = col_double(s, 23);
    copy_text(t->device_name, sizeof t->device_name, s, 24);
    copy_text(t->device_cc, sizeof t->device_cc, s, 25);
    copy_text(t->flag, sizeof t->flag, s, 26);
    t->fidelity = col_int(s, 27);
    return NAS_OK;
}

int nas_store_trial_get(nas_store *st, int64_t trial_id, nas_store_trial *out, nas_error *err)
{
    sqlite3_stmt *s = stmt_id(st, Q_TRIAL_GET, trial_id, 0, err);
    if (!s)
        return NAS_EDB;
    int rc = query_row(st, s, read_trial, out, "cannot read a trial", err);
    if (rc == NAS_OK)
        stale_trial(st, out);
    if (rc == NAS_ENOTFOUND)
        return nas_error_set(err, NAS_ENOTFOUND, "database %s: no trial %lld", st->path,
                             (long long)trial_id);
    return rc;
}

int nas_store_trial_foreach(nas_store *st, int64_t exp_id, nas_store_order order, int limit,
                            nas_store_trial_fn fn, void *ctx, nas_error *err)
{
    return nas_store_trial_foreach_min(st, exp_id, order, limit, 0, fn, ctx, err);
}

int nas_store_trial_foreach_min(nas_store *st, int64_t exp_id, nas_store_order order, int limit,
                                int64_t min_fidelity, nas_store_trial_fn fn, void *ctx,
                                nas_error *err)
{
    /* A private statement, so `fn` may call other store functions. */
    int q = order == NAS_STORE_ORDER_RANK ? Q_TRIAL_BY_RANK : Q_TRIAL_BY_ID;
    sqlite3_stmt *s = NULL;
    char old[4096];
    if (sqlite3_prepare_v2(st->db, old_schema_sql(st, QUERIES[q], old, sizeof old), -1, &s,
                           NULL) != SQLITE_OK)
        return db_fail(st, err, "cannot prepare the trial listing");
    sqlite3_bind_int64(s, 1, exp_id);
    sqlite3_bind_int(s, 2, limit > 0 ? limit : -1);
    sqlite3_bind_int64(s, 3, min_fidelity);
    nas_store_trial *t = malloc(sizeof *t);
    if (!t) {
        sqlite3_finalize(s);
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    }
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        read_trial(s, t);
        stale_trial(st, t);
        if (fn(ctx, t) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    free(t);
    int status = NAS_OK;
    if (rc != SQLITE_DONE)
        status = db_fail(st, err, "cannot list trials");
    sqlite3_finalize(s);
    return status;
}

/* ---- strategy state ----------------------------------------------------------- */

int nas_store_strategy_state_put(nas_store *st, int64_t exp_id, const char *name,
                                 const void *blob, size_t size, nas_error *err)
{
    sqlite3_stmt *s = stmt_id(st, Q_STATE_PUT, exp_id, 1, err);
    if (!s)
        return NAS_EDB;
    if (size > INT_MAX)
        return nas_error_set(err, NAS_EINVAL, "database %s: strategy state too large", st->path);
    sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
    sqlite3_bind_blob(s, 3, blob, (int)size, SQLITE_STATIC);
    return step_write(st, s, "cannot save the strategy state", err);
}

int nas_store_strategy_state_get(nas_store *st, int64_t exp_id, const char *name, void **blob,
                                 size_t *size, nas_error *err)
{
    *blob = NULL;
    *size = 0;
    sqlite3_stmt *s = stmt_id(st, Q_STATE_GET, exp_id, 0, err);
    if (!s)
        return NAS_EDB;
    sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
    blob_copy b = {NULL, 0};
    int rc = query_row(st, s, row_blob, &b, "cannot read the strategy state", err);
    if (rc == NAS_ENOTFOUND)
        return nas_error_set(err, NAS_ENOTFOUND, "database %s: no strategy state '%s'",
                             st->path, name);
    if (rc == NAS_OK) {
        *blob = b.data;
        *size = b.size;
    }
    return rc;
}
