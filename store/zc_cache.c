/*
 * store/zc_cache.c - issue 31: the zero-cost score cache of schema 9,
 * table zc_score: one row per (experiment, proxy, canonical key), the
 * score a warm-up (search.warmup) or a move proposal computed for it.
 * The score depends on the experiment's seed, space and data, so it is
 * kept per experiment; a resumed search reads it instead of scoring again,
 * so it picks the same genotypes. Proxy evaluations are not trials.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "store/store_impl.h"

static int zc_fail(nas_store *st, sqlite3_stmt *s, const char *what, nas_error *err)
{
    int rc = nas_error_set(err, NAS_EDB, "%s: %s", what, sqlite3_errmsg(nas__store_sqlite(st)));
    sqlite3_finalize(s);
    return rc;
}

/* 1 when the file has table zc_score (a read-only version-8 file has not). */
static int zc_has_table(nas_store *st)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(nas__store_sqlite(st),
                           "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'zc_score'",
                           -1, &s, NULL) != SQLITE_OK)
        return 0;
    int has = sqlite3_step(s) == SQLITE_ROW;
    sqlite3_finalize(s);
    return has;
}

int nas_store_zc_get(nas_store *st, int64_t exp_id, const char *proxy, const char *key,
                     double *score, nas_error *err)
{
    static const char what[] = "cannot read the zero-cost score cache";
    *score = NAN;
    if (!zc_has_table(st))
        return NAS_ENOTFOUND;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(nas__store_sqlite(st),
                           "SELECT score FROM zc_score WHERE experiment_id = ?1 AND proxy = ?2 "
                           "AND arch_key = ?3",
                           -1, &s, NULL) != SQLITE_OK)
        return zc_fail(st, NULL, what, err);
    sqlite3_bind_int64(s, 1, exp_id);
    sqlite3_bind_text(s, 2, proxy, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, key, -1, SQLITE_STATIC);
    int step = sqlite3_step(s);
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        return zc_fail(st, s, what, err);
    int found = step == SQLITE_ROW;
    if (found) /* NULL: the proxy failed for it (stored, so not retried) */
        *score = sqlite3_column_type(s, 0) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 0);
    sqlite3_finalize(s);
    return found ? NAS_OK : NAS_ENOTFOUND;
}

int nas_store_zc_put(nas_store *st, int64_t exp_id, const char *proxy, const char *key,
                     double score, nas_error *err)
{
    static const char what[] = "cannot write the zero-cost score cache";
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(nas__store_sqlite(st),
                           "INSERT OR REPLACE INTO zc_score(experiment_id, proxy, arch_key, score) "
                           "VALUES (?1, ?2, ?3, ?4)",
                           -1, &s, NULL) != SQLITE_OK)
        return zc_fail(st, NULL, what, err);
    sqlite3_bind_int64(s, 1, exp_id);
    sqlite3_bind_text(s, 2, proxy, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, key, -1, SQLITE_STATIC);
    if (isfinite(score))
        sqlite3_bind_double(s, 4, score);
    else
        sqlite3_bind_null(s, 4);
    if (sqlite3_step(s) != SQLITE_DONE)
        return zc_fail(st, s, what, err);
    sqlite3_finalize(s);
    return NAS_OK;
}

int nas_store_zc_foreach(nas_store *st, int64_t exp_id, const char *key,
                         void (*fn)(void *ctx, const char *proxy, double score), void *ctx,
                         nas_error *err)
{
    static const char what[] = "cannot read the zero-cost score cache";
    if (!zc_has_table(st))
        return NAS_OK;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(nas__store_sqlite(st),
                           "SELECT proxy, score FROM zc_score WHERE experiment_id = ?1 "
                           "AND arch_key = ?2 ORDER BY proxy",
                           -1, &s, NULL) != SQLITE_OK)
        return zc_fail(st, NULL, what, err);
    sqlite3_bind_int64(s, 1, exp_id);
    sqlite3_bind_text(s, 2, key, -1, SQLITE_STATIC);
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW)
        fn(ctx, (const char *)sqlite3_column_text(s, 0),
           sqlite3_column_type(s, 1) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 1));
    if (step != SQLITE_DONE)
        return zc_fail(st, s, what, err);
    sqlite3_finalize(s);
    return NAS_OK;
}
