/*
 * search/run_lock.h - one `nas run` per database at a time (private).
 *
 * Two locks, both dropped by the kernel when the process ends however it
 * ends (kill -9 included), so a killed run never leaves a stale lock:
 *  - an exclusive POSIX record lock (fcntl F_SETLK) on DB.lock, a small
 *    file holding "pid host started" for the refusal message, beside the
 *    file the database path resolves to (realpath: every path through
 *    symbolic links finds it; an older nas locks the same file for a
 *    plain path). Forked workers do not inherit it. The file stays
 *    (removing it would let two runs lock two different files);
 *  - issue 20: an open-file-description lock (F_OFD_SETLK) on one byte of
 *    the database file itself, outside SQLite's lock bytes: it follows the
 *    file (device and inode), so a hard link or any other name of the
 *    same file is refused too. Forked workers share it and die with their
 *    owner (PR_SET_PDEATHSIG); a run started the moment after a kill -9
 *    waits up to 2 s for them.
 * Local file systems only: the database lives on the controller's node
 * (NFS locking is not relied upon).
 */
#ifndef NAS_SEARCH_RUN_LOCK_H
#define NAS_SEARCH_RUN_LOCK_H

#include "nas/status.h"

/* The held locks: descriptors of DB.lock and of the database (-1: none). */
typedef struct nas_run_lock {
    int fd, db_fd;
} nas_run_lock;

/* Take the locks for database `db_path` (an existing file: the store has
 * opened it). Errors: NAS_EBUSY "database D is in use by another `nas
 * run` (pid P on host H, started T) ..." or "... (under another name of
 * the same file ...)", NAS_EIO (cannot create DB.lock or open D). */
int nas__run_lock(const char *db_path, nas_run_lock *lk, nas_error *err);

/* Release both; a lock not held is a no-op. */
void nas__run_unlock(nas_run_lock *lk);

#endif
