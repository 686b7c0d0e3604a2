/*
 * search/run_lock.h - one `nas run` per database at a time (private).
 *
 * The controller takes an exclusive POSIX record lock (fcntl F_SETLK) on
 * DB.lock, a small file beside the database holding "pid host started".
 * The kernel drops the lock when the process ends however it ends
 * (kill -9 included), so a killed run never leaves a stale lock behind;
 * forked workers do not inherit it (record locks are per process). The
 * file itself stays (removing it would let two runs lock two different
 * files). Local file systems only: the database lives on the controller's
 * node (NFS locking is not relied upon).
 */
#ifndef NAS_SEARCH_RUN_LOCK_H
#define NAS_SEARCH_RUN_LOCK_H

#include "nas/status.h"

/* Take the lock for database `db_path`; *fd gets the lock's descriptor.
 * Errors: NAS_EBUSY "database D is in use by another `nas run` (pid P on
 * host H since T) ...", NAS_EIO (cannot create DB.lock). */
int nas__run_lock(const char *db_path, int *fd, nas_error *err);

/* Release (close) the lock; fd < 0 is a no-op. */
void nas__run_unlock(int fd);

#endif
