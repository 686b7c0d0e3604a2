/*
 * store/store_impl.h - the store's private seam: the files of store/ that
 * add tables beside store/store.c's (store/export_store.c) reach the
 * store's own SQLite connection through it.
 *
 * Not a public header: only store/ includes it.
 */
#ifndef NAS_STORE_IMPL_H
#define NAS_STORE_IMPL_H

#include <sqlite3.h>
#include "nas/store.h"

/* SQL: the highest fidelity of the trial aliased `t` (NULL: no rung, a
 * search without a scheduler; store.c also reads a version-1 .. 4 file as
 * it is, with NULL in its place). One expression for every ranking "at the
 * highest fidelity" (issue 17): the best trial, nas query, kept weights. */
#define NAS__STORE_FIDELITY "(SELECT max(g.fidelity) FROM rung g WHERE g.trial_id = t.id)"

/* Issue 29: the one ranking of trials (docs/multi-fidelity.md), an ORDER BY
 * list over trial t and result r: the highest stored fidelity first, then
 * the stored score (the primary objective, oriented so that larger is
 * better; NULL for a failed or infeasible trial), ties by id. The
 * experiment's best trial (nas experiments, the run summary of a
 * multi-fidelity search, nas export --best, nas report), nas query's
 * ranking and proxy.keep_top all use it. */
#define NAS__STORE_RANK NAS__STORE_FIDELITY " DESC NULLS LAST, r.score DESC NULLS LAST, t.id"

/* The store's connection (owned by the store: never closed by the caller).
 * One connection per store: a second one on the same file, closed while a
 * plain reader (sqlite3 with no busy timeout) opens it, briefly takes the
 * file's PENDING lock as it tries to checkpoint, and that reader then sees
 * "database is locked" (SQLite, "Write-Ahead Logging", section 8). */
sqlite3 *nas__store_sqlite(nas_store *st);

/* 1 when the store was opened read-only. */
int nas__store_readonly(const nas_store *st);

/* Insert (or replace) rung row r inside the caller's transaction
 * (store/rung.c; nas_store_trial_finish_rung). Errors: NAS_EDB. */
int nas__store_rung_insert(nas_store *st, const nas_store_rung *r, nas_error *err);

#endif
