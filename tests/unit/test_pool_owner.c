/*
 * tests/unit/test_pool_owner.c - issue 20: the pool after its owner
 * stalled or a worker died between jobs.
 *  - a result already in the socket when the owner comes back from a
 *    stall longer than job_timeout_s is delivered, not killed as timed
 *    out (the sockets are read before timeouts are judged, and time the
 *    owner was away does not count);
 *  - a worker that died after sending its result (kill -9 while idle) is
 *    replaced by the next submit, which succeeds (EPIPE is not an error
 *    of the search);
 *  - a stop flag set just before nas_pool_wait (the signal arrived between
 *    the owner's check and its sleep) ends the wait at once.
 */
#include <setjmp.h> /* cmocka needs these three first */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "nas/search.h"

static void nap(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static int job_fn(void *ctx, const nas_pool_job *job, nas_pool_progress_fn progress, void *pctx,
                  nas_trial_result *res)
{
    (void)ctx;
    (void)progress;
    (void)pctx;
    nap(job->genotype.tok[0] / 10.0); /* tok[0] tenths of a second */
    res->status = NAS_OK;
    res->val_accuracy = 0.5;
    return NAS_OK;
}

static nas_pool_job make_job(int64_t id, int tenths)
{
    nas_pool_job j;
    memset(&j, 0, sizeof j);
    j.id = id;
    j.attempt = 1;
    j.genotype.len = 6;
    j.genotype.tok[0] = (uint8_t)tenths;
    return j;
}

/* 1 when process pid has exited (a zombie: its socket is closed). */
static int is_zombie(int pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    int z = 0;
    if (fgets(line, sizeof line, f)) {
        const char *rp = strrchr(line, ')');
        z = rp && rp[1] == ' ' && rp[2] == 'Z';
    }
    fclose(f);
    return z;
}

static void test_result_survives_owner_stall(void **state)
{
    (void)state;
    nas_pool_opts opts = {.job_timeout_s = 2, .heartbeat_s = 1};
    nas_pool *p = NULL;
    nas_error err;
    assert_int_equal(nas_pool_create(1, job_fn, NULL, &opts, &p, &err), NAS_OK);
    nas_pool_job j = make_job(1, 3); /* 0.3 s */
    assert_int_equal(nas_pool_submit(p, &j, NULL, &err), NAS_OK);
    nap(3.5); /* the owner is away (a database lock, a slow disk) past the timeout */
    nas_pool_event ev;
    assert_int_equal(nas_pool_wait(p, 5000, &ev, &err), NAS_OK);
    assert_int_equal(ev.job_id, 1);
    if (ev.result.status != NAS_OK)
        fail_msg("the finished job was reported as: %s", ev.result.error);
    nas_pool_destroy(p);
}

static void test_worker_dead_after_result_is_replaced(void **state)
{
    (void)state;
    nas_pool *p = NULL;
    nas_error err;
    assert_int_equal(nas_pool_create(1, job_fn, NULL, NULL, &p, &err), NAS_OK);
    nas_pool_job j1 = make_job(1, 1), j2 = make_job(2, 1);
    assert_int_equal(nas_pool_submit(p, &j1, NULL, &err), NAS_OK);
    nas_pool_event ev;
    assert_int_equal(nas_pool_wait(p, 5000, &ev, &err), NAS_OK);
    assert_int_equal(ev.result.status, NAS_OK);
    int pid = nas_pool_worker_pid(p, 0);
    assert_true(pid > 0);
    assert_int_equal(kill(pid, SIGKILL), 0);
    for (int i = 0; i < 400 && !is_zombie(pid); i++)
        nap(0.005);
    assert_true(is_zombie(pid));
    int rc = nas_pool_submit(p, &j2, NULL, &err);
    if (rc != NAS_OK)
        fail_msg("submit after the worker died: %s", err.msg);
    assert_int_equal(nas_pool_wait(p, 5000, &ev, &err), NAS_OK);
    assert_int_equal(ev.job_id, 2);
    assert_int_equal(ev.result.status, NAS_OK);
    assert_int_not_equal(nas_pool_worker_pid(p, 0), pid); /* a fresh worker ran it */
    nas_pool_destroy(p);
}

static volatile sig_atomic_t stop_flag;

static void test_stop_set_before_wait_is_noticed_at_once(void **state)
{
    (void)state;
    stop_flag = 0;
    nas_pool_opts opts = {.heartbeat_s = 1, .stop = &stop_flag};
    nas_pool *p = NULL;
    nas_error err;
    assert_int_equal(nas_pool_create(1, job_fn, NULL, &opts, &p, &err), NAS_OK);
    nas_pool_job j = make_job(1, 30); /* 3 s */
    assert_int_equal(nas_pool_submit(p, &j, NULL, &err), NAS_OK);
    /* the signal handler ran after the owner's last look at the flag and
     * before it went to sleep in nas_pool_wait */
    stop_flag = SIGINT;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    nas_pool_event ev;
    int rc = nas_pool_wait(p, 5000, &ev, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double dt = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (rc != NAS_EINTR || dt > 0.5)
        fail_msg("nas_pool_wait returned %d after %.2f s; expected NAS_EINTR at once", rc, dt);
    nas_pool_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_result_survives_owner_stall),
        cmocka_unit_test(test_worker_dead_after_result_is_replaced),
        cmocka_unit_test(test_stop_set_before_wait_is_noticed_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
