/*
 * store/oneshot_store.c - issue 32, tables of schema 10: the supernet's
 * training curve per experiment (supernet_epoch: phase 1 of a one-shot
 * search, a row per finished epoch), and the finalists (finalist: each
 * trial retrained stand-alone in phase 3, linked to the supernet trial it
 * was chosen from). A read-only file older than schema 10 has neither
 * table: its readers get no rows.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "nas/array.h"
#include "store/store_impl.h"

static int os_fail(nas_store *st, sqlite3_stmt *s, const char *what, nas_error *err)
{
    int rc = nas_error_set(err, NAS_EDB, "%s: %s", what, sqlite3_errmsg(nas__store_sqlite(st)));
    sqlite3_finalize(s);
    return rc;
}

/* 1 when the file has table `name` (a read-only file before schema 10 has not). */
static int has_table(nas_store *st, const char *name)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(nas__store_sqlite(st),
                           "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", -1, &s,
                           NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    int has = sqlite3_step(s) == SQLITE_ROW;
    sqlite3_finalize(s);
    return has;
}

/* A listing that ran out of memory: no rows, the statement finalised. */
static int list_fail(sqlite3_stmt *s, void **rows, int *n)
{
    sqlite3_finalize(s);
    free(*rows);
    *rows = NULL;
    *n = 0;
    return NAS_ENOMEM;
}

static void bind_real(sqlite3_stmt *s, int i, double v)
{
    if (isfinite(v))
        sqlite3_bind_double(s, i, v);
    else
        sqlite3_bind_null(s, i);
}

static double col_real(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}

int nas_store_supernet_epoch_put(nas_store *st, int64_t exp_id, const nas_store_sn_epoch *e,
                                 nas_error *err)
{
    static const char what[] = "cannot record the supernet's training curve";
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(nas__store_sqlite(st),
                           "INSERT OR REPLACE INTO supernet_epoch(experiment_id, epoch, loss, "
                           "accuracy, seconds) VALUES (?1, ?2, ?3, ?4, ?5)",
                           -1, &s, NULL) != SQLITE_OK)
        return os_fail(st, NULL, what, err);
    sqlite3_bind_int64(s, 1, exp_id);
    sqlite3_bind_int(s, 2, e->epoch);
    bind_real(s, 3, e->loss);
    bind_real(s, 4, e->accuracy);
    bind_real(s, 5, e->seconds);
    if (sqlite3_step(s) != SQLITE_DONE)
        return os_fail(st, s, what, err);
    sqlite3_finalize(s);
    return NAS_OK;
}

int nas_store_supernet_curve(nas_store *st, int64_t exp_id, nas_store_sn_epoch **rows, int *n,
                             nas_error *err)
{
    static const char what[] = "cannot read the supernet's training curve";
    *rows = NULL;
    *n = 0;
    if (!has_table(st, "supernet_epoch"))
        return NAS_OK;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(nas__store_sqlite(st),
                           "SELECT epoch, loss, accuracy, seconds FROM supernet_epoch WHERE "
                           "experiment_id = ?1 ORDER BY epoch",
                           -1, &s, NULL) != SQLITE_OK)
        return os_fail(st, NULL, what, err);
    sqlite3_bind_int64(s, 1, exp_id);
    int cap = 0, step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        if (nas_array_grow(rows, *n, &cap, 32, sizeof **rows, err) != NAS_OK)
            return list_fail(s, (void **)rows, n);
        nas_store_sn_epoch *e = &(*rows)[(*n)++];
        e->epoch = sqlite3_column_int(s, 0);
        e->loss = col_real(s, 1);
        e->accuracy = col_real(s, 2);
        e->seconds = col_real(s, 3);
    }
    if (step != SQLITE_DONE) {
        free(*rows);
        *rows = NULL;
        *n = 0;
        return os_fail(st, s, what, err);
    }
    sqlite3_finalize(s);
    return NAS_OK;
}

int nas_store_finalist_link(nas_store *st, int64_t finalists_exp, int64_t supernet_exp,
                            nas_error *err)
{
    static const char what[] = "cannot link the finalists to their supernet trials";
    if (finalists_exp == supernet_exp) /* every trial would be its own finalist */
        return nas_error_set(err, NAS_EINVAL, "%s: experiment %lld cannot hold its own finalists",
                             what, (long long)supernet_exp);
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(nas__store_sqlite(st),
                           "INSERT OR IGNORE INTO finalist(trial_id, supernet_trial_id) "
                           "SELECT f.id, s.id FROM trial f JOIN trial s ON s.arch_key = f.arch_key "
                           "AND s.experiment_id = ?2 WHERE f.experiment_id = ?1",
                           -1, &s, NULL) != SQLITE_OK)
        return os_fail(st, NULL, what, err);
    sqlite3_bind_int64(s, 1, finalists_exp);
    sqlite3_bind_int64(s, 2, supernet_exp);
    if (sqlite3_step(s) != SQLITE_DONE)
        return os_fail(st, s, what, err);
    sqlite3_finalize(s);
    return NAS_OK;
}

int nas_store_finalist_list(nas_store *st, int64_t exp_id, nas_store_finalist **rows, int *n,
                            nas_error *err)
{
    static const char what[] = "cannot read the finalists";
    *rows = NULL;
    *n = 0;
    if (!has_table(st, "finalist"))
        return NAS_OK;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(nas__store_sqlite(st),
                           "SELECT l.trial_id, f.experiment_id, l.supernet_trial_id, s.experiment_id, "
                           "f.genotype, f.status, rs.val_accuracy, rf.val_accuracy "
                           "FROM finalist l JOIN trial f ON f.id = l.trial_id "
                           "JOIN trial s ON s.id = l.supernet_trial_id "
                           "LEFT JOIN result rf ON rf.trial_id = f.id "
                           "LEFT JOIN result rs ON rs.trial_id = s.id "
                           "WHERE f.experiment_id = ?1 OR s.experiment_id = ?1 ORDER BY l.trial_id",
                           -1, &s, NULL) != SQLITE_OK)
        return os_fail(st, NULL, what, err);
    sqlite3_bind_int64(s, 1, exp_id);
    int cap = 0, step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        if (nas_array_grow(rows, *n, &cap, 16, sizeof **rows, err) != NAS_OK)
            return list_fail(s, (void **)rows, n);
        nas_store_finalist *f = &(*rows)[(*n)++];
        memset(f, 0, sizeof *f);
        f->trial_id = sqlite3_column_int64(s, 0);
        f->experiment_id = sqlite3_column_int64(s, 1);
        f->supernet_trial_id = sqlite3_column_int64(s, 2);
        f->supernet_experiment_id = sqlite3_column_int64(s, 3);
        const unsigned char *gt = sqlite3_column_text(s, 4), *stt = sqlite3_column_text(s, 5);
        snprintf(f->genotype, sizeof f->genotype, "%s", gt ? (const char *)gt : "");
        f->done = stt && strcmp((const char *)stt, "done") == 0;
        f->supernet_accuracy = col_real(s, 6);
        f->standalone_accuracy = col_real(s, 7);
    }
    if (step != SQLITE_DONE) {
        free(*rows);
        *rows = NULL;
        *n = 0;
        return os_fail(st, s, what, err);
    }
    sqlite3_finalize(s);
    return NAS_OK;
}
