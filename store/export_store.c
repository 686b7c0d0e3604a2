/*
 * store/export_store.c - two tables added by issue 5 (export and full
 * training), beside the schema-1 tables of store/store.c:
 *
 *   trial_weights(trial_id PRIMARY KEY -> trial(id), path, bytes, created_at)
 *     where a trial's trained proxy weights (.npz) were kept
 *     (by default those of the best proxy.keep_top trials, pruned by
 *     nas_store_trial_weights_prune; proxy.keep_weights = true: all);
 *   final_training(id, experiment_id, trial_id, genotype, arch_json,
 *     epochs, recipe, augment, backend, train_images, test_accuracy,
 *     test_loss, train_loss, train_accuracy, train_seconds, params, macs,
 *     checkpoint, created_at)
 *     one row per finished `nas train ARCH.json --db PATH`.
 *
 * Both are created on first use with CREATE TABLE IF NOT EXISTS, so a
 * database made by an older nas gains them without a schema-version bump;
 * readers treat a missing table as "no rows". It uses the store's own
 * connection (store/store_impl.h): a second connection, opened and closed
 * for every kept trial, made plain readers see "database is locked".
 * docs/export.md documents the columns.
 */
#include <limits.h>   /* PATH_MAX */
#include <math.h>     /* NAN */
#include <stdio.h>    /* snprintf */
#include <stdlib.h>   /* realpath */
#include <string.h>   /* strdup */
#include <sys/stat.h> /* stat: the weights file's size */
#include <unistd.h>   /* unlink: pruned weights */
#include <sqlite3.h>  /* the database engine */
#include "nas/store.h"
#include "store_impl.h"

#define NOW_SQL "strftime('%Y-%m-%dT%H:%M:%fZ','now')"

static const char EXPORT_TABLES[] =
    "CREATE TABLE IF NOT EXISTS trial_weights(\n"
    "  trial_id INTEGER PRIMARY KEY REFERENCES trial(id),\n"
    "  path TEXT NOT NULL,\n"
    "  bytes INTEGER,\n"
    "  created_at TEXT NOT NULL\n"
    ");\n"
    "CREATE TABLE IF NOT EXISTS final_training(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  experiment_id INTEGER REFERENCES experiment(id),\n"
    "  trial_id INTEGER REFERENCES trial(id),\n"
    "  genotype TEXT NOT NULL,\n"
    "  arch_json TEXT,\n"
    "  epochs INTEGER NOT NULL,\n"
    "  recipe TEXT NOT NULL,\n"
    "  augment TEXT NOT NULL,\n"
    "  backend TEXT NOT NULL,\n"
    "  train_images INTEGER NOT NULL,\n"
    "  test_accuracy REAL,\n"
    "  test_loss REAL,\n"
    "  train_loss REAL,\n"
    "  train_accuracy REAL,\n"
    "  train_seconds REAL,\n"
    "  params INTEGER,\n"
    "  macs INTEGER,\n"
    "  checkpoint TEXT,\n"
    "  created_at TEXT NOT NULL\n"
    ");\n";

/* The store's own connection (store/store_impl.h says why not a second
 * one); a writer first creates the export tables if they are missing. */
static int open_db(nas_store *st, int readonly, sqlite3 **db, nas_error *err)
{
    *db = nas__store_sqlite(st);
    if (readonly || nas__store_readonly(st))
        return NAS_OK;
    char *msg = NULL;
    if (sqlite3_exec(*db, EXPORT_TABLES, NULL, NULL, &msg) != SQLITE_OK) {
        int rc = nas_error_set(err, NAS_EDB, "database %s: cannot create the export tables: %s",
                               nas_store_path(st), msg ? msg : sqlite3_errmsg(*db));
        sqlite3_free(msg);
        *db = NULL;
        return rc;
    }
    return NAS_OK;
}

static int fail(sqlite3 *db, sqlite3_stmt *s, nas_store *st, const char *what, nas_error *err)
{
    int rc = nas_error_set(err, NAS_EDB, "database %s: %s: %s", nas_store_path(st), what,
                           sqlite3_errmsg(db));
    sqlite3_finalize(s);
    return rc;
}

int nas_store_trial_weights_put(nas_store *st, int64_t trial_id, const char *path, nas_error *err)
{
    if (!st || !path)
        return nas_error_set(err, NAS_EINVAL, "nas_store_trial_weights_put: NULL argument");
    sqlite3 *db;
    int rc = open_db(st, 0, &db, err);
    if (rc)
        return rc;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db,
                           "INSERT OR REPLACE INTO trial_weights(trial_id, path, bytes, created_at) "
                           "VALUES(?1, ?2, ?3, " NOW_SQL ")",
                           -1, &s, NULL) != SQLITE_OK)
        return fail(db, s, st, "cannot record trial weights", err);
    struct stat sb;
    char real[PATH_MAX];
    sqlite3_bind_int64(s, 1, trial_id); /* absolute, so exports work from any directory */
    sqlite3_bind_text(s, 2, realpath(path, real) ? real : path, -1, SQLITE_TRANSIENT);
    if (stat(path, &sb) == 0)
        sqlite3_bind_int64(s, 3, (sqlite3_int64)sb.st_size);
    else
        sqlite3_bind_null(s, 3);
    if (sqlite3_step(s) != SQLITE_DONE)
        return fail(db, s, st, "cannot record trial weights", err);
    sqlite3_finalize(s);
    return NAS_OK;
}

int nas_store_trial_weights_get(nas_store *st, int64_t trial_id, char *path, size_t n,
                                nas_error *err)
{
    if (path && n)
        path[0] = 0;
    if (!st || !path || !n)
        return nas_error_set(err, NAS_EINVAL, "nas_store_trial_weights_get: bad argument");
    sqlite3 *db;
    int rc = open_db(st, 1, &db, err);
    if (rc)
        return rc;
    sqlite3_stmt *s = NULL;
    int have_table = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "
                           "'trial_weights'",
                           -1, &s, NULL) != SQLITE_OK ||
        sqlite3_step(s) != SQLITE_ROW)
        return fail(db, s, st, "cannot look for the trial_weights table", err);
    have_table = sqlite3_column_int(s, 0) > 0;
    sqlite3_finalize(s);
    s = NULL;
    rc = NAS_ENOTFOUND;
    if (have_table) {
        if (sqlite3_prepare_v2(db, "SELECT path FROM trial_weights WHERE trial_id = ?1", -1, &s,
                               NULL) != SQLITE_OK)
            return fail(db, s, st, "cannot read trial weights", err);
        sqlite3_bind_int64(s, 1, trial_id);
        int step = sqlite3_step(s);
        if (step == SQLITE_ROW && sqlite3_column_text(s, 0)) {
            snprintf(path, n, "%s", (const char *)sqlite3_column_text(s, 0));
            rc = NAS_OK;
        } else if (step != SQLITE_DONE && step != SQLITE_ROW) {
            return fail(db, s, st, "cannot read trial weights", err);
        }
        sqlite3_finalize(s);
    }
    if (rc == NAS_ENOTFOUND)
        return nas_error_set(err, NAS_ENOTFOUND,
                             "trial %lld has no kept weights in %s (a search keeps the weights "
                             "of its best proxy.keep_top trials within proxy.weights_mb, all "
                             "with proxy.keep_weights = true, none with false): export it with "
                             "--weights init, or retrain it with `nas export --trial %lld "
                             "--format json -o t.json` and `nas train t.json --proxy`",
                             (long long)trial_id, nas_store_path(st), (long long)trial_id);
    return NAS_OK;
}

/* The file of a kept weights path that this database may delete: the file
 * of that name in its own DB.weights/ folder beside it, wherever the row
 * says it was kept. A database copied or moved with its DB.weights/ still
 * records the original's absolute paths; deleting those removed another
 * database's weights (the original's trial_weights rows then named missing
 * files). Returns a malloc'd path ("" for none), NULL when out of memory. */
static char *own_weights_file(nas_store *st, const char *path)
{
    if (!path || !path[0])
        return strdup("");
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(nas_store_path(st)) + strlen(base) + sizeof ".weights/";
    char *own = malloc(n);
    if (own)
        snprintf(own, n, "%s.weights/%s", nas_store_path(st), base);
    return own;
}

int nas_store_trial_weights_prune(nas_store *st, int64_t exp_id, int keep_top, double max_bytes,
                                  int *n_deleted, nas_error *err)
{
    if (n_deleted)
        *n_deleted = 0;
    if (!st)
        return nas_error_set(err, NAS_EINVAL, "nas_store_trial_weights_prune: NULL argument");
    sqlite3 *db;
    int rc = open_db(st, 0, &db, err);
    if (rc)
        return rc;
    sqlite3_stmt *s = NULL;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return fail(db, s, st, "cannot prune kept weights", err);
    /* best first as `nas export --best` ranks: the highest fidelity first
     * (issue 17; the trial's top rung, NULL for all without a scheduler),
     * then the stored score (the primary objective, oriented; NULL for
     * failed or infeasible trials), ties by id. The store migrated the file
     * to schema 5 when it opened it read-write, so the rung table exists. */
    if (sqlite3_prepare_v2(db,
                           "SELECT w.trial_id, w.path, w.bytes, r.score FROM trial_weights w "
                           "JOIN trial t ON t.id = w.trial_id LEFT JOIN result r ON "
                           "r.trial_id = w.trial_id WHERE t.experiment_id = ?1 "
                           "ORDER BY r.score IS NULL, " NAS__STORE_RANK,
                           -1, &s, NULL) != SQLITE_OK) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return fail(db, s, st, "cannot prune kept weights", err);
    }
    sqlite3_bind_int64(s, 1, exp_id);
    int cap = 0, n_drop = 0, kept = 0, step;
    char **drop = NULL;
    int64_t *drop_id = NULL;
    double used = 0;
    int oom = 0;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        const char *path = (const char *)sqlite3_column_text(s, 1);
        double bytes = sqlite3_column_type(s, 2) == SQLITE_NULL ? -1 : sqlite3_column_double(s, 2);
        if (bytes < 0) {
            struct stat sb;
            bytes = path && stat(path, &sb) == 0 ? (double)sb.st_size : 0;
        }
        int feasible = sqlite3_column_type(s, 3) != SQLITE_NULL;
        if (feasible && kept < keep_top && (max_bytes <= 0 || used + bytes <= max_bytes)) {
            kept++;
            used += bytes;
            continue;
        }
        if (n_drop == cap) {
            int nc = cap ? 2 * cap : 16;
            char **nd = realloc(drop, (size_t)nc * sizeof *nd);
            int64_t *ni = nd ? realloc(drop_id, (size_t)nc * sizeof *ni) : NULL;
            if (nd)
                drop = nd;
            if (ni)
                drop_id = ni;
            if (!nd || !ni) {
                oom = 1;
                break;
            }
            cap = nc;
        }
        drop_id[n_drop] = sqlite3_column_int64(s, 0);
        drop[n_drop] = own_weights_file(st, path);
        if (!drop[n_drop]) {
            oom = 1;
            break;
        }
        n_drop++;
    }
    sqlite3_finalize(s);
    s = NULL;
    if (!oom && step != SQLITE_DONE && step != SQLITE_ROW) {
        rc = nas_error_set(err, NAS_EDB, "database %s: cannot prune kept weights: %s",
                           nas_store_path(st), sqlite3_errmsg(db));
    } else if (oom) {
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory pruning kept weights");
    } else if (n_drop > 0) {
        if (sqlite3_prepare_v2(db, "DELETE FROM trial_weights WHERE trial_id = ?1", -1, &s,
                               NULL) != SQLITE_OK)
            rc = NAS_EDB;
        for (int i = 0; !rc && i < n_drop; i++) {
            sqlite3_reset(s);
            sqlite3_bind_int64(s, 1, drop_id[i]);
            if (sqlite3_step(s) != SQLITE_DONE)
                rc = NAS_EDB;
        }
        if (rc)
            rc = nas_error_set(err, NAS_EDB, "database %s: cannot prune kept weights: %s",
                               nas_store_path(st), sqlite3_errmsg(db));
        sqlite3_finalize(s);
    }
    if (!rc && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = nas_error_set(err, NAS_EDB, "database %s: cannot prune kept weights: %s",
                           nas_store_path(st), sqlite3_errmsg(db));
    if (rc)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    /* files only once their rows are gone: a crash leaves at worst a stray file */
    for (int i = 0; i < n_drop; i++) {
        if (!rc && drop[i][0] && unlink(drop[i]) == 0 && n_deleted)
            ++*n_deleted;
        free(drop[i]);
    }
    free(drop);
    free(drop_id);
    return rc;
}

static void bind_num(sqlite3_stmt *s, int i, double v)
{
    if (v == v && v > -1e300 && v < 1e300)
        sqlite3_bind_double(s, i, v);
    else
        sqlite3_bind_null(s, i);
}

static void bind_id(sqlite3_stmt *s, int i, int64_t v)
{
    if (v >= 0)
        sqlite3_bind_int64(s, i, v);
    else
        sqlite3_bind_null(s, i);
}

int nas_store_final_training_put(nas_store *st, const nas_store_final_training *f, int64_t *id,
                                 nas_error *err)
{
    if (id)
        *id = -1;
    if (!st || !f)
        return nas_error_set(err, NAS_EINVAL, "nas_store_final_training_put: NULL argument");
    sqlite3 *db;
    int rc = open_db(st, 0, &db, err);
    if (rc)
        return rc;
    sqlite3_stmt *s = NULL;
    /* An experiment or trial id that is not in this database is kept as NULL. */
    if (sqlite3_prepare_v2(
            db,
            "INSERT INTO final_training(experiment_id, trial_id, genotype, arch_json, epochs, "
            "recipe, augment, backend, train_images, test_accuracy, test_loss, train_loss, "
            "train_accuracy, train_seconds, params, macs, checkpoint, created_at) VALUES("
            "(SELECT id FROM experiment WHERE id = ?1), (SELECT id FROM trial WHERE id = ?2), "
            "?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, " NOW_SQL ")",
            -1, &s, NULL) != SQLITE_OK)
        return fail(db, s, st, "cannot record the final training", err);
    bind_id(s, 1, f->experiment_id);
    bind_id(s, 2, f->trial_id);
    sqlite3_bind_text(s, 3, f->genotype, -1, SQLITE_TRANSIENT);
    if (f->arch_json[0])
        sqlite3_bind_text(s, 4, f->arch_json, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 5, f->epochs);
    sqlite3_bind_text(s, 6, f->recipe, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 7, f->augment, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 8, f->backend, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 9, f->train_images);
    bind_num(s, 10, f->test_accuracy);
    bind_num(s, 11, f->test_loss);
    bind_num(s, 12, f->train_loss);
    bind_num(s, 13, f->train_accuracy);
    bind_num(s, 14, f->train_seconds);
    bind_id(s, 15, f->params);
    bind_id(s, 16, f->macs);
    if (f->checkpoint[0])
        sqlite3_bind_text(s, 17, f->checkpoint, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(s) != SQLITE_DONE)
        return fail(db, s, st, "cannot record the final training", err);
    if (id)
        *id = (int64_t)sqlite3_last_insert_rowid(db);
    sqlite3_finalize(s);
    return NAS_OK;
}

static double col_num(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}

static int64_t col_id(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, i);
}

static void col_text(sqlite3_stmt *s, int i, char *buf, size_t n)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    snprintf(buf, n, "%s", t ? (const char *)t : "");
}

int nas_store_final_training_list(nas_store *st, int64_t exp_id, int64_t trial_id,
                                  nas_store_final_training **out, int *n, nas_error *err)
{
    if (out)
        *out = NULL;
    if (n)
        *n = 0;
    if (!st || !out || !n)
        return nas_error_set(err, NAS_EINVAL, "nas_store_final_training_list: NULL argument");
    sqlite3 *db;
    int rc = open_db(st, 1, &db, err);
    if (rc)
        return rc;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "
                           "'final_training'",
                           -1, &s, NULL) != SQLITE_OK ||
        sqlite3_step(s) != SQLITE_ROW)
        return fail(db, s, st, "cannot look for the final_training table", err);
    int have = sqlite3_column_int(s, 0) > 0;
    sqlite3_finalize(s);
    s = NULL;
    if (!have) {
        return NAS_OK;
    }
    if (sqlite3_prepare_v2(db,
                           "SELECT experiment_id, trial_id, genotype, arch_json, epochs, recipe, "
                           "augment, backend, train_images, test_accuracy, test_loss, "
                           "train_loss, train_accuracy, train_seconds, params, macs, checkpoint, "
                           "id, created_at FROM final_training WHERE (?1 < 0 OR experiment_id = "
                           "?1) AND (?2 < 0 OR trial_id = ?2) ORDER BY id",
                           -1, &s, NULL) != SQLITE_OK)
        return fail(db, s, st, "cannot read final_training", err);
    sqlite3_bind_int64(s, 1, exp_id);
    sqlite3_bind_int64(s, 2, trial_id);
    nas_store_final_training *v = NULL;
    int cnt = 0, cap = 0, step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        if (cnt == cap) {
            int nc = cap ? 2 * cap : 8;
            nas_store_final_training *nv = realloc(v, (size_t)nc * sizeof *nv);
            if (!nv) {
                free(v);
                sqlite3_finalize(s);
                return nas_error_set(err, NAS_ENOMEM, "out of memory reading final_training");
            }
            v = nv;
            cap = nc;
        }
        nas_store_final_training *f = &v[cnt++];
        memset(f, 0, sizeof *f);
        f->experiment_id = col_id(s, 0);
        f->trial_id = col_id(s, 1);
        col_text(s, 2, f->genotype, sizeof f->genotype);
        col_text(s, 3, f->arch_json, sizeof f->arch_json);
        f->epochs = sqlite3_column_int(s, 4);
        col_text(s, 5, f->recipe, sizeof f->recipe);
        col_text(s, 6, f->augment, sizeof f->augment);
        col_text(s, 7, f->backend, sizeof f->backend);
        f->train_images = sqlite3_column_int64(s, 8);
        f->test_accuracy = col_num(s, 9);
        f->test_loss = col_num(s, 10);
        f->train_loss = col_num(s, 11);
        f->train_accuracy = col_num(s, 12);
        f->train_seconds = col_num(s, 13);
        f->params = col_id(s, 14);
        f->macs = col_id(s, 15);
        col_text(s, 16, f->checkpoint, sizeof f->checkpoint);
        f->id = sqlite3_column_int64(s, 17);
        col_text(s, 18, f->created_at, sizeof f->created_at);
    }
    if (step != SQLITE_DONE) {
        free(v);
        return fail(db, s, st, "cannot read final_training", err);
    }
    sqlite3_finalize(s);
    *out = v;
    *n = cnt;
    return NAS_OK;
}

int nas_store_final_training_is_full(const nas_store_final_training *f)
{
    return f && strncmp(f->recipe, "mode=proxy", 10) != 0;
}
