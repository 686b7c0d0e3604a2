/*
 * store/rung.c - the rung table of schema 5 (issue 17, multi-fidelity
 * search; docs/schema.md): every rung result of every trial, written by
 * the controller, read by the controller's replay, `nas query` (a trial's
 * highest fidelity is a column of nas_store_trial) and the report's
 * learning curves. Uses the store's own connection (store/store_impl.h).
 */
#include <math.h>   /* isfinite, NAN */
#include <stdio.h>
#include <sqlite3.h>
#include "nas/store.h"
#include "store_impl.h"

static int rung_fail(nas_store *st, sqlite3_stmt *s, const char *what, nas_error *err)
{
    sqlite3 *db = nas__store_sqlite(st);
    int rc = nas_error_set(err, NAS_EDB, "database %s: %s: %s", nas_store_path(st), what,
                           sqlite3_errmsg(db));
    sqlite3_finalize(s);
    return rc;
}

static void bind_num(sqlite3_stmt *s, int i, double v)
{
    if (isfinite(v))
        sqlite3_bind_double(s, i, v);
    else
        sqlite3_bind_null(s, i);
}

int nas_store_rung_put(nas_store *st, const nas_store_rung *r, nas_error *err)
{
    if (nas__store_readonly(st))
        return nas_error_set(err, NAS_EDB, "database %s: opened read-only, cannot record a rung",
                             nas_store_path(st));
    sqlite3 *db = nas__store_sqlite(st);
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db,
                           "INSERT OR REPLACE INTO rung(trial_id, fidelity, val_accuracy, loss, "
                           "seconds, created_at) VALUES(?1, ?2, ?3, ?4, ?5, "
                           "strftime('%Y-%m-%dT%H:%M:%fZ','now'))",
                           -1, &s, NULL) != SQLITE_OK)
        return rung_fail(st, s, "cannot record a rung result", err);
    sqlite3_bind_int64(s, 1, r->trial_id);
    sqlite3_bind_int64(s, 2, r->fidelity);
    bind_num(s, 3, r->val_accuracy);
    bind_num(s, 4, r->loss);
    bind_num(s, 5, r->seconds);
    if (sqlite3_step(s) != SQLITE_DONE)
        return rung_fail(st, s, "cannot record a rung result", err);
    sqlite3_finalize(s);
    return NAS_OK;
}

static double col_num(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}

int nas_store_rung_foreach(nas_store *st, int64_t exp_id, nas_store_rung_fn fn, void *ctx,
                           nas_error *err)
{
    sqlite3 *db = nas__store_sqlite(st);
    sqlite3_stmt *s = NULL;
    /* a file before schema 5 read as it is has no rung table: no rungs */
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rung'",
                           -1, &s, NULL) != SQLITE_OK)
        return rung_fail(st, s, "cannot read the rung results", err);
    int step = sqlite3_step(s);
    sqlite3_finalize(s);
    s = NULL;
    if (step == SQLITE_DONE)
        return NAS_OK;
    if (step != SQLITE_ROW)
        return rung_fail(st, s, "cannot read the rung results", err);
    if (sqlite3_prepare_v2(db,
                           "SELECT g.trial_id, g.fidelity, g.val_accuracy, g.loss, g.seconds "
                           "FROM rung g JOIN trial t ON t.id = g.trial_id "
                           "WHERE t.experiment_id = ?1 ORDER BY g.trial_id, g.fidelity",
                           -1, &s, NULL) != SQLITE_OK)
        return rung_fail(st, s, "cannot read the rung results", err);
    sqlite3_bind_int64(s, 1, exp_id);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        nas_store_rung r = {sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
                            col_num(s, 2), col_num(s, 3), col_num(s, 4)};
        if (fn(ctx, &r))
            break;
    }
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        return rung_fail(st, s, "cannot read the rung results", err);
    sqlite3_finalize(s);
    return NAS_OK;
}
