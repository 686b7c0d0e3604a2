/*
 * search/run_lock.c - the single-writer lock of `nas run` (see
 * search/run_lock.h).
 */
#define _GNU_SOURCE /* F_OFD_SETLK (Linux 3.15+) */
#include "search/run_lock.h"
#include "nas/store.h" /* NAS_STORE_RUN_LOCK_BYTE */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The byte of the database file the run lock covers: outside every range
 * SQLite's unix VFS locks (PENDING_BYTE 0x40000000 and the 511 bytes after
 * it), so the lock never meets SQLite's own locks nor readers; read-only
 * stores test it (nas/store.h). */
#define DB_LOCK_BYTE NAS_STORE_RUN_LOCK_BYTE

/* How long a run waits for the database file's lock when the path lock was
 * free: the workers of a run killed a moment ago share its lock and die
 * just after it (PR_SET_PDEATHSIG). */
#define INHERITED_WAIT_MS 2000

static int set_lock(int fd, int cmd, off_t start)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = start;
    fl.l_len = start ? 1 : 0;
    return fcntl(fd, cmd, &fl);
}

/* The lock on the database file itself (issue 20): an open-file-
 * description lock, so it follows the file (device and inode) whatever
 * path names it - a symbolic link, a hard link, a relative path - and no
 * close() of another descriptor of the file (SQLite's) drops it. */
static int lock_db_file(const char *db_path, int *fd, nas_error *err)
{
    *fd = -1;
    int f = open(db_path, O_RDWR | O_CLOEXEC);
    if (f < 0)
        return nas_error_set(err, NAS_EIO, "cannot open %s to lock it: %s", db_path,
                             strerror(errno));
    for (int waited = 0;; waited += 20) {
        if (set_lock(f, F_OFD_SETLK, DB_LOCK_BYTE) == 0) {
            *fd = f;
            return NAS_OK;
        }
        int e = errno;
        if ((e != EACCES && e != EAGAIN) || waited >= INHERITED_WAIT_MS) {
            close(f);
            if (e == EACCES || e == EAGAIN)
                return nas_error_set(err, NAS_EBUSY,
                                     "database %s is in use by another `nas run` (under "
                                     "another name of the same file: a hard link, or a path "
                                     "through a symbolic link); only one search may write a "
                                     "database at a time: wait for it to finish, or stop it "
                                     "(Ctrl-C) and run this command again to resume",
                                     db_path);
            return nas_error_set(err, NAS_EIO, "cannot lock %s: %s", db_path, strerror(e));
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

int nas__run_lock(const char *db_path, nas_run_lock *lk, nas_error *err)
{
    lk->fd = lk->db_fd = -1;
    /* DB.lock beside the file the path resolves to, so every path through
     * symbolic links finds the same note */
    char real[PATH_MAX];
    const char *base = realpath(db_path, real) ? real : db_path;
    char path[PATH_MAX + 8];
    if (snprintf(path, sizeof path, "%s.lock", base) >= (int)sizeof path)
        return nas_error_set(err, NAS_EINVAL, "database path too long: %s", db_path);
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (f < 0)
        return nas_error_set(err, NAS_EIO, "cannot create the run lock %s: %s", path,
                             strerror(errno));
    if (set_lock(f, F_SETLK, 0) != 0) {
        int e = errno;
        char holder[256] = "";
        ssize_t n = pread(f, holder, sizeof holder - 1, 0);
        holder[n > 0 ? n : 0] = '\0';
        holder[strcspn(holder, "\n")] = '\0';
        close(f);
        if (e == EACCES || e == EAGAIN) {
            int pid = 0;
            char host[128] = "?", since[64] = "?";
            if (sscanf(holder, "%d %127s %63s", &pid, host, since) < 1)
                pid = 0;
            return nas_error_set(err, NAS_EBUSY,
                                 "database %s is in use by another `nas run` (pid %d on host %s, "
                                 "started %s); only one search may write a database at a time: "
                                 "wait for it to finish, or stop it (Ctrl-C) and run this "
                                 "command again to resume",
                                 db_path, pid, host, since);
        }
        return nas_error_set(err, NAS_EIO, "cannot lock %s: %s", path, strerror(e));
    }
    int rc = lock_db_file(db_path, &lk->db_fd, err);
    if (rc != NAS_OK) {
        close(f);
        return rc;
    }
    char host[128] = "localhost";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    char since[64];
    time_t t = time(NULL);
    struct tm tmv;
    strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tmv));
    char line[256];
    int n = snprintf(line, sizeof line, "%d %s %s\n", (int)getpid(), host, since);
    if (ftruncate(f, 0) != 0 || pwrite(f, line, (size_t)n, 0) != n) {
        /* the lock holds; only the note for the next user is missing */
    }
    lk->fd = f;
    return NAS_OK;
}

void nas__run_unlock(nas_run_lock *lk)
{
    if (lk->db_fd >= 0)
        close(lk->db_fd); /* the last descriptor of its description: the lock goes */
    if (lk->fd >= 0)
        close(lk->fd); /* closing drops the record lock */
    lk->fd = lk->db_fd = -1;
}
