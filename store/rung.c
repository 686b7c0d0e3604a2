/*
 * store/rung.c - the rung table of schema 5 (issue 17, multi-fidelity
 * search; docs/schema.md): every rung result of every trial, written by
 * the controller, read by the controller's replay, `nas query` (a trial's
 * highest fidelity is a column of nas_store_trial) and the report's
 * learning curves; and the proxy_check table of schema 8 (issue 30, `nas
 * proxy-check`): the rungs of its trainings, written by the check, read by
 * its rerun. Uses the store's own connection (store/store_impl.h).
 */
#include <math.h>   /* isfinite, NAN */
#include <stdio.h>
#include <stdlib.h> /* free */
#include <string.h> /* memset */
#include <sqlite3.h>
#include "nas/array.h"
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

/* Prepare `sql` on the store's connection into *s; NAS_EDB (with `what`)
 * when SQLite refuses it. */
static int prepare(nas_store *st, const char *sql, sqlite3_stmt **s, const char *what,
                   nas_error *err)
{
    *s = NULL;
    if (sqlite3_prepare_v2(nas__store_sqlite(st), sql, -1, s, NULL) != SQLITE_OK)
        return rung_fail(st, *s, what, err);
    return NAS_OK;
}

int nas__store_rung_insert(nas_store *st, const nas_store_rung *r, nas_error *err)
{
    static const char what[] = "cannot record a rung result";
    sqlite3_stmt *s;
    if (prepare(st,
                "INSERT OR REPLACE INTO rung(trial_id, fidelity, val_accuracy, loss, seconds, "
                "created_at) VALUES(?1, ?2, ?3, ?4, ?5, strftime('%Y-%m-%dT%H:%M:%fZ','now'))",
                &s, what, err) != NAS_OK)
        return NAS_EDB;
    sqlite3_bind_int64(s, 1, r->trial_id);
    sqlite3_bind_int64(s, 2, r->fidelity);
    bind_num(s, 3, r->val_accuracy);
    bind_num(s, 4, r->loss);
    bind_num(s, 5, r->seconds);
    if (sqlite3_step(s) != SQLITE_DONE)
        return rung_fail(st, s, what, err);
    sqlite3_finalize(s);
    return NAS_OK;
}

int nas_store_rung_put(nas_store *st, const nas_store_rung *r, nas_error *err)
{
    if (nas__store_readonly(st))
        return nas_error_set(err, NAS_EDB, "database %s: opened read-only, cannot record a rung",
                             nas_store_path(st));
    return nas__store_rung_insert(st, r, err); /* one statement: its own transaction */
}

static double col_num(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}

/* *has = 1 when the file has table `name` (a file of an older schema read
 * as it is may not). Errors: NAS_EDB (with `what`). */
static int has_table(nas_store *st, const char *name, int *has, const char *what,
                     nas_error *err)
{
    sqlite3_stmt *s;
    *has = 0;
    if (prepare(st, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", &s, what,
                err) != NAS_OK)
        return NAS_EDB;
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    int step = sqlite3_step(s);
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        return rung_fail(st, s, what, err);
    sqlite3_finalize(s);
    *has = step == SQLITE_ROW;
    return NAS_OK;
}

int nas_store_rung_foreach(nas_store *st, int64_t exp_id, nas_store_rung_fn fn, void *ctx,
                           nas_error *err)
{
    static const char what[] = "cannot read the rung results";
    sqlite3_stmt *s;
    int has, step;
    /* a file before schema 5 read as it is has no rung table: no rungs */
    if (has_table(st, "rung", &has, what, err) != NAS_OK)
        return NAS_EDB;
    if (!has)
        return NAS_OK;
    if (prepare(st,
                "SELECT g.trial_id, g.fidelity, g.val_accuracy, g.loss, g.seconds "
                "FROM rung g JOIN trial t ON t.id = g.trial_id "
                "WHERE t.experiment_id = ?1 ORDER BY g.trial_id, g.fidelity",
                &s, what, err) != NAS_OK)
        return NAS_EDB;
    sqlite3_bind_int64(s, 1, exp_id);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        nas_store_rung r = {sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
                            col_num(s, 2), col_num(s, 3), col_num(s, 4)};
        if (fn(ctx, &r))
            break;
    }
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        return rung_fail(st, s, what, err);
    sqlite3_finalize(s);
    return NAS_OK;
}

typedef struct rung_vec {
    nas_store_rung *v;
    int n, cap;
    nas_error oom; /* code NAS_ENOMEM when the list could not grow */
} rung_vec;

/* nas_store_rung_foreach's callback (ctx = rung_vec): append one row;
 * 1 (stop) when out of memory. */
static int rung_add(void *ctx, const nas_store_rung *r)
{
    rung_vec *a = ctx;
    if (nas_array_grow(&a->v, a->n, &a->cap, 64, sizeof *a->v, &a->oom) != NAS_OK)
        return 1;
    a->v[a->n++] = *r;
    return 0;
}

int nas_store_rung_list(nas_store *st, int64_t exp_id, nas_store_rung **out, int *n,
                        nas_error *err)
{
    rung_vec a = {0};
    *out = NULL;
    *n = 0;
    int rc = nas_store_rung_foreach(st, exp_id, rung_add, &a, err);
    if (rc == NAS_OK && a.oom.code)
        rc = nas_error_set(err, NAS_ENOMEM, "database %s: out of memory reading the rungs",
                           nas_store_path(st));
    if (rc != NAS_OK) {
        free(a.v);
        return rc;
    }
    *out = a.v;
    *n = a.n;
    return NAS_OK;
}

/* ---- proxy checks (schema 8) ------------------------------------------------------- */

int nas_store_pc_put(nas_store *st, const nas_store_pc_row *r, nas_error *err)
{
    static const char what[] = "cannot record a proxy-check training";
    if (nas__store_readonly(st))
        return nas_error_set(err, NAS_EDB, "database %s: opened read-only, %s",
                             nas_store_path(st), what);
    sqlite3_stmt *s;
    if (prepare(st,
                "INSERT OR REPLACE INTO proxy_check(experiment_id, arch, genotype, seed_index, "
                "seed, rung, budget, val_accuracy, train_loss, train_seconds, eval_seconds, "
                "error, created_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                "strftime('%Y-%m-%dT%H:%M:%fZ','now'))",
                &s, what, err) != NAS_OK)
        return NAS_EDB;
    sqlite3_bind_int64(s, 1, r->experiment_id);
    sqlite3_bind_int(s, 2, r->arch);
    sqlite3_bind_text(s, 3, r->genotype, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 4, r->seed_index);
    sqlite3_bind_int64(s, 5, (int64_t)r->seed);
    sqlite3_bind_int(s, 6, r->rung);
    sqlite3_bind_int64(s, 7, r->budget);
    bind_num(s, 8, r->val_accuracy);
    bind_num(s, 9, r->train_loss);
    bind_num(s, 10, r->train_seconds);
    bind_num(s, 11, r->eval_seconds);
    if (r->error[0])
        sqlite3_bind_text(s, 12, r->error, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 12);
    if (sqlite3_step(s) != SQLITE_DONE)
        return rung_fail(st, s, what, err);
    sqlite3_finalize(s);
    return NAS_OK;
}

/* One proxy_check row of the SELECT in nas_store_pc_list into *r. */
static void pc_row_read(sqlite3_stmt *s, nas_store_pc_row *r)
{
    memset(r, 0, sizeof *r);
    r->experiment_id = sqlite3_column_int64(s, 0);
    r->arch = sqlite3_column_int(s, 1);
    const unsigned char *g = sqlite3_column_text(s, 2), *e = sqlite3_column_text(s, 11);
    snprintf(r->genotype, sizeof r->genotype, "%s", g ? (const char *)g : "");
    r->seed_index = sqlite3_column_int(s, 3);
    r->seed = (uint64_t)sqlite3_column_int64(s, 4);
    r->rung = sqlite3_column_int(s, 5);
    r->budget = sqlite3_column_int64(s, 6);
    r->val_accuracy = col_num(s, 7);
    r->train_loss = col_num(s, 8);
    r->train_seconds = col_num(s, 9);
    r->eval_seconds = col_num(s, 10);
    snprintf(r->error, sizeof r->error, "%s", e ? (const char *)e : "");
}

int nas_store_pc_list(nas_store *st, int64_t exp_id, nas_store_pc_row **out, int *n,
                      nas_error *err)
{
    static const char what[] = "cannot read the proxy-check trainings";
    *out = NULL;
    *n = 0;
    int has, step, cap = 0;
    if (has_table(st, "proxy_check", &has, what, err) != NAS_OK)
        return NAS_EDB;
    if (!has)
        return NAS_OK;
    sqlite3_stmt *s;
    if (prepare(st,
                "SELECT experiment_id, arch, genotype, seed_index, seed, rung, budget, "
                "val_accuracy, train_loss, train_seconds, eval_seconds, error FROM proxy_check "
                "WHERE experiment_id = ?1 ORDER BY arch, seed_index, rung",
                &s, what, err) != NAS_OK)
        return NAS_EDB;
    sqlite3_bind_int64(s, 1, exp_id);
    nas_store_pc_row *v = NULL;
    int k = 0;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        if (nas_array_grow(&v, k, &cap, 64, sizeof *v, err) != NAS_OK) {
            sqlite3_finalize(s);
            free(v);
            return NAS_ENOMEM;
        }
        pc_row_read(s, &v[k++]);
    }
    if (step != SQLITE_DONE) {
        free(v);
        return rung_fail(st, s, what, err);
    }
    sqlite3_finalize(s);
    *out = v;
    *n = k;
    return NAS_OK;
}
