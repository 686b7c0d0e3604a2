/*
 * search/run_lock.c - the single-writer lock of `nas run` (see
 * search/run_lock.h).
 */
#include "search/run_lock.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int nas__run_lock(const char *db_path, int *fd, nas_error *err)
{
    *fd = -1;
    char path[4096 + 8];
    if (snprintf(path, sizeof path, "%s.lock", db_path) >= (int)sizeof path)
        return nas_error_set(err, NAS_EINVAL, "database path too long: %s", db_path);
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (f < 0)
        return nas_error_set(err, NAS_EIO, "cannot create the run lock %s: %s", path,
                             strerror(errno));
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (fcntl(f, F_SETLK, &fl) != 0) {
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
    *fd = f;
    return NAS_OK;
}

void nas__run_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* closing drops the record lock */
}
