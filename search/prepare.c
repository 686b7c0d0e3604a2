/*
 * search/prepare.c - the preparation phase of an evaluator kind that has
 * one (issue 32: the one-shot supernet's training, phase 1; docs/one-shot.md):
 * before the worker pool starts, a forked child runs
 * nas_evaluator_prepare, which creates a backend and trains; the
 * controller waits for it and then records what it made (the supernet's
 * training curve) in the store. The child, not the controller, opens the
 * backend, because the pool forks workers afterwards and oneDNN's OpenMP
 * threads (or a CUDA context) do not survive fork; the child never touches
 * the database (workers never do). Ctrl-C (or SIGTERM) stops the child at
 * once: its last finished epoch is in the checkpoint, and a rerun
 * continues from there.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h> /* PR_SET_PDEATHSIG: the child dies with the controller */
#include <sys/stat.h>  /* mkdir */
#include <sys/wait.h>
#include <time.h>     /* nanosleep */
#include <unistd.h>   /* fork, pipe, _exit */
#include "search/controller_impl.h"

/* The child: default signal dispositions (it dies at a Ctrl-C; the
 * checkpoint keeps the last epoch), the preparation, and its status and
 * message back through fd. Never returns. */
static void child(ctl *c, int fd, pid_t owner)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* a controller killed with -9 takes it along */
    if (getppid() != owner)
        _exit(5);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    nas_error err;
    nas_error_clear(&err);
    int rc = nas_evaluator_prepare(c->ev, c->quiet ? NULL : c->log, &err);
    if (c->log)
        fflush(c->log);
    int code = rc;
    ssize_t w = write(fd, &code, sizeof code);
    if (w == (ssize_t)sizeof code && rc)
        w = write(fd, err.msg, strlen(err.msg) + 1);
    (void)w;
    _exit(rc ? 1 : 0);
}

/* Wait for child pid, polling every 50 ms whether the search is to stop
 * (nas__ctl_stopping: a signal, or search.time_limit run out): a stop
 * kills the child (SIGTERM, then SIGKILL after 5 s). *status: waitpid's.
 * 1 when stopped (also when a Ctrl-C to the process group killed the
 * child before the flag was seen). */
static int wait_child(ctl *c, pid_t pid, int *status)
{
    struct timespec tick = {0, 50 * 1000 * 1000};
    double killed_at = 0;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR))
            return killed_at > 0 || nas__ctl_stopping(c);
        if (killed_at == 0 && nas__ctl_stopping(c)) {
            kill(pid, SIGTERM);
            killed_at = nas__ctl_now();
        } else if (killed_at > 0 && nas__ctl_now() - killed_at > 5) {
            kill(pid, SIGKILL);
        }
        nanosleep(&tick, NULL);
    }
}

/* The child's status and message, read from fd after it exited. */
static int child_result(int fd, int status, nas_error *err)
{
    int code = 0;
    char msg[sizeof err->msg];
    msg[0] = '\0';
    ssize_t n = read(fd, &code, sizeof code);
    if (n == (ssize_t)sizeof code && code != 0) {
        ssize_t m = read(fd, msg, sizeof msg - 1);
        msg[m > 0 ? m : 0] = '\0';
        return nas_error_set(err, code, "%s", msg);
    }
    if (n == (ssize_t)sizeof code && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return NAS_OK;
    if (WIFSIGNALED(status))
        return nas_error_set(err, NAS_EWORKER, "the supernet's training (phase 1) was killed "
                             "by signal %d (%s); rerun to continue from its last epoch",
                             WTERMSIG(status), strsignal(WTERMSIG(status)));
    return nas_error_set(err, NAS_EWORKER, "the supernet's training (phase 1) exited with status "
                         "%d without a result", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* The curve the child appended, into the store (rows already there are
 * replaced: a resumed epoch is the one that finished). */
static int record_curve(ctl *c, nas_error *err)
{
    nas_epoch_stats *rows = NULL;
    int n = 0, rc = nas_evaluator_supernet_curve(c->ev, &rows, &n, err);
    for (int i = 0; rc == NAS_OK && i < n; i++) {
        nas_store_sn_epoch e = {rows[i].epoch, rows[i].loss, rows[i].accuracy, rows[i].seconds};
        rc = nas_store_supernet_epoch_put(c->st, c->exp, &e, err);
    }
    free(rows);
    return rc;
}

int nas__ctl_prepare(ctl *c, const char *db_path, nas_error *err)
{
    char dir[NAS_PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s.supernet", db_path) >= (int)sizeof dir)
        return nas_error_set(err, NAS_EINVAL, "database path %s is too long", db_path);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return nas_error_set(err, NAS_EIO, "evaluator.kind = \"supernet\": cannot create %s: %s",
                             dir, strerror(errno));
    if (nas_evaluator_set_state_dir(c->ev, dir) != NAS_OK)
        return nas_error_set(err, NAS_EINVAL, "supernet directory %s is too long", dir);
    nas__ctl_unlink_matching(dir, "supernet-*.npz.tmp*"); /* a killed child's (the run lock
                                                             keeps other runs out) */
    nas__ctl_unlink_matching(dir, "supernet-*.weights.tmp*"); /* likewise */
    int fds[2];
    if (pipe(fds) != 0)
        return nas_error_set(err, NAS_EWORKER, "supernet (phase 1): pipe: %s", strerror(errno));
    nas__ctl_clear_status(c);
    fflush(c->log);
    pid_t owner = getpid(), pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return nas_error_set(err, NAS_EWORKER, "supernet (phase 1): fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        child(c, fds[1], owner);
    }
    close(fds[1]);
    int status = 0, stopped = wait_child(c, pid, &status);
    int rc = child_result(fds[0], status, err);
    close(fds[0]);
    int crc = record_curve(c, rc == NAS_OK ? err : &(nas_error){0}); /* what finished, in any case */
    if (stopped) {
        char ck[NAS_PATH_MAX + 64];
        nas_evaluator_state_path(c->ev, ck, sizeof ck);
        nas__ctl_say(c, "nas: supernet: stopped in phase 1; its last finished epoch is kept in %s, "
                     "and the same command continues from it", ck);
        return nas_error_set(err, NAS_EINTR, "interrupted while training the supernet (phase 1); "
                             "its last finished epoch is kept in %s: run the same command to "
                             "continue", ck);
    }
    return rc ? rc : crc;
}
