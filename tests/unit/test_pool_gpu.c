/*
 * tests/unit/test_pool_gpu.c - one GPU per local worker slot (issue 7
 * placement, issue 4 local pool): nas_pool_opts.worker_gpu pins forked
 * worker i to its slot's CUDA device through CUDA_VISIBLE_DEVICES, set in
 * the child before any job (so the backend's device 0 is that GPU), a
 * replacement after a crash gets the same device, an owner's
 * CUDA_VISIBLE_DEVICES list is respected, submit prefers the least loaded
 * GPU, and without worker_gpu nothing changes. No GPU is needed: the jobs
 * report the CUDA_VISIBLE_DEVICES they run under, and the slot devices
 * come from nas_placement_resolve with a fake device count.
 */
#include <setjmp.h> /* cmocka needs these three first */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "nas/search.h"

enum { JOB_ENV = 0, JOB_CRASH = 1, JOB_SLOW = 2 };

/* Report the worker's CUDA_VISIBLE_DEVICES in res->error (status OK). */
static int job_fn(void *ctx, const nas_pool_job *job, nas_pool_progress_fn progress, void *pctx,
                  nas_trial_result *res)
{
    (void)ctx;
    (void)progress;
    (void)pctx;
    if (job->genotype.tok[0] == JOB_CRASH)
        raise(SIGSEGV);
    if (job->genotype.tok[0] == JOB_SLOW) {
        struct timespec ts = {0, 400 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    res->status = NAS_OK;
    res->train_seconds = (double)getpid();
    snprintf(res->error, sizeof res->error, "%s", v ? v : "(unset)");
    return NAS_OK;
}

static nas_pool_job make_job(int64_t id, int kind)
{
    nas_pool_job j;
    memset(&j, 0, sizeof j);
    j.id = id;
    j.genotype.len = 6;
    j.genotype.tok[0] = (uint8_t)kind;
    return j;
}

/* Slot devices of workers.gpus = gpus (n of them), trials_per_gpu = tpg on
 * a machine with n_cuda devices (fake). */
static int slot_devices(const int *gpus, int n, int tpg, int n_cuda, int *dev)
{
    nas_config c;
    nas_config_defaults(&c);
    snprintf(c.workers.device, sizeof c.workers.device, "cuda");
    snprintf(c.proxy.backend, sizeof c.proxy.backend, "cuda");
    snprintf(c.proxy.precision, sizeof c.proxy.precision, "fp32");
    c.workers.n_gpus = n;
    for (int i = 0; i < n; i++)
        c.workers.gpus[i] = gpus[i];
    c.workers.trials_per_gpu = tpg;
    nas_placement p;
    nas_error err;
    assert_int_equal(nas_placement_resolve(&c, n_cuda, NULL, &p, &err), NAS_OK);
    assert_int_equal(p.kind, NAS_DEVICE_CUDA);
    for (int s = 0; s < p.slots; s++)
        dev[s] = nas_placement_slot_device(&p, s);
    return p.slots;
}

/* Give each of the n workers one slow job at once (a busy worker takes no
 * second one, so every worker gets exactly one) and record, per worker,
 * the CUDA_VISIBLE_DEVICES it reported and its pid. */
static void run_env_on_each(nas_pool *pool, int n, char (*seen)[64], int *pid)
{
    nas_error err;
    for (int k = 0; k < n; k++) {
        nas_pool_job j = make_job(100 + k, JOB_SLOW);
        int w = -1;
        assert_int_equal(nas_pool_submit(pool, &j, &w, &err), NAS_OK);
    }
    for (int k = 0; k < n; k++) {
        nas_pool_event ev;
        assert_int_equal(nas_pool_wait(pool, 20000, &ev, &err), NAS_OK);
        assert_int_equal(ev.result.status, NAS_OK);
        assert_true(ev.worker >= 0 && ev.worker < n);
        snprintf(seen[ev.worker], sizeof seen[ev.worker], "%s", ev.result.error);
        pid[ev.worker] = (int)ev.result.train_seconds;
    }
}

/* gpus = [0, 1], trials_per_gpu = 2: workers on devices 0,1,0,1; with the
 * owner's CUDA_VISIBLE_DEVICES = "4,5" they see "4","5","4","5". */
static void test_workers_pinned(void **state)
{
    (void)state;
    int gpus[2] = {0, 1}, dev[8];
    int n = slot_devices(gpus, 2, 2, 2, dev);
    assert_int_equal(n, 4);
    setenv("CUDA_VISIBLE_DEVICES", "4,5", 1);
    nas_pool_opts po;
    memset(&po, 0, sizeof po);
    po.worker_gpu = dev;
    nas_pool *pool = NULL;
    nas_error err;
    assert_int_equal(nas_pool_create(n, job_fn, NULL, &po, &pool, &err), NAS_OK);
    /* the owner's environment is untouched */
    assert_string_equal(getenv("CUDA_VISIBLE_DEVICES"), "4,5");
    char seen[4][64] = {{0}};
    int pid[4] = {0};
    run_env_on_each(pool, 4, seen, pid);
    for (int i = 0; i < 4; i++)
        assert_string_equal(seen[i], dev[i] == 0 ? "4" : "5");
    assert_string_equal(seen[0], "4");
    assert_string_equal(seen[1], "5");

    /* a worker crashes; its replacement runs on the same GPU */
    nas_pool_job bad = make_job(7, JOB_CRASH);
    int w = -1;
    assert_int_equal(nas_pool_submit(pool, &bad, &w, &err), NAS_OK);
    nas_pool_event ev;
    assert_int_equal(nas_pool_wait(pool, 20000, &ev, &err), NAS_OK);
    assert_int_equal(ev.job_id, 7);
    assert_int_equal(ev.result.status, NAS_EWORKER);
    assert_non_null(strstr(ev.result.error, "signal 11"));
    assert_int_equal(nas_pool_worker_pid(pool, w), 0);
    char again[4][64] = {{0}};
    int pid2[4] = {0};
    run_env_on_each(pool, 4, again, pid2);
    for (int i = 0; i < 4; i++)
        assert_string_equal(again[i], seen[i]);
    assert_int_not_equal(pid2[w], pid[w]); /* it is a new process */
    nas_pool_destroy(pool);
    unsetenv("CUDA_VISIBLE_DEVICES");
}

/* No CUDA_VISIBLE_DEVICES in the owner: the ordinals themselves, in the
 * order of workers.gpus (here [3, 1] on a 4-GPU machine). */
static void test_ordinals_without_list(void **state)
{
    (void)state;
    unsetenv("CUDA_VISIBLE_DEVICES");
    int gpus[2] = {3, 1}, dev[8];
    int n = slot_devices(gpus, 2, 1, 4, dev);
    assert_int_equal(n, 2);
    nas_pool_opts po;
    memset(&po, 0, sizeof po);
    po.worker_gpu = dev;
    nas_pool *pool = NULL;
    nas_error err;
    assert_int_equal(nas_pool_create(n, job_fn, NULL, &po, &pool, &err), NAS_OK);
    char seen[2][64] = {{0}};
    int pid[2] = {0};
    run_env_on_each(pool, 2, seen, pid);
    assert_string_equal(seen[0], "3");
    assert_string_equal(seen[1], "1");
    assert_null(getenv("CUDA_VISIBLE_DEVICES"));
    nas_pool_destroy(pool);
}

/* CPU placement (no worker_gpu): workers inherit the owner's environment
 * as it is; -1 entries leave a worker alone too. */
static void test_cpu_unchanged(void **state)
{
    (void)state;
    setenv("CUDA_VISIBLE_DEVICES", "4,5", 1);
    nas_pool *pool = NULL;
    nas_error err;
    assert_int_equal(nas_pool_create(2, job_fn, NULL, NULL, &pool, &err), NAS_OK);
    char seen[2][64] = {{0}};
    int pid[2] = {0};
    run_env_on_each(pool, 2, seen, pid);
    assert_string_equal(seen[0], "4,5");
    assert_string_equal(seen[1], "4,5");
    nas_pool_destroy(pool);

    int dev[2] = {-1, 1};
    nas_pool_opts po;
    memset(&po, 0, sizeof po);
    po.worker_gpu = dev;
    assert_int_equal(nas_pool_create(2, job_fn, NULL, &po, &pool, &err), NAS_OK);
    run_env_on_each(pool, 2, seen, pid);
    assert_string_equal(seen[0], "4,5");
    assert_string_equal(seen[1], "5");
    nas_pool_destroy(pool);
    unsetenv("CUDA_VISIBLE_DEVICES");
}

/* A device the owner's CUDA_VISIBLE_DEVICES does not have: refused at
 * create with the reason; nothing forked. */
static void test_device_not_visible(void **state)
{
    (void)state;
    setenv("CUDA_VISIBLE_DEVICES", "4,5", 1);
    int dev[2] = {0, 2};
    nas_pool_opts po;
    memset(&po, 0, sizeof po);
    po.worker_gpu = dev;
    nas_pool *pool = (nas_pool *)&po; /* must come back NULL */
    nas_error err;
    assert_int_equal(nas_pool_create(2, job_fn, NULL, &po, &pool, &err), NAS_ECONFIG);
    assert_null(pool);
    assert_non_null(strstr(err.msg, "worker 1"));
    assert_non_null(strstr(err.msg, "CUDA device 2"));
    assert_non_null(strstr(err.msg, "CUDA_VISIBLE_DEVICES=\"4,5\""));
    unsetenv("CUDA_VISIBLE_DEVICES");
}

/* In-process (count 0): the calling process runs the jobs, so it is
 * pinned itself. */
static void test_in_process(void **state)
{
    (void)state;
    setenv("CUDA_VISIBLE_DEVICES", "GPU-aa,GPU-bb", 1);
    int dev[1] = {1};
    nas_pool_opts po;
    memset(&po, 0, sizeof po);
    po.worker_gpu = dev;
    nas_pool *pool = NULL;
    nas_error err;
    assert_int_equal(nas_pool_create(0, job_fn, NULL, &po, &pool, &err), NAS_OK);
    assert_string_equal(getenv("CUDA_VISIBLE_DEVICES"), "GPU-bb");
    nas_pool_job j = make_job(1, JOB_ENV);
    assert_int_equal(nas_pool_submit(pool, &j, NULL, &err), NAS_OK);
    nas_pool_event ev;
    assert_int_equal(nas_pool_wait(pool, 0, &ev, &err), NAS_OK);
    assert_string_equal(ev.result.error, "GPU-bb");
    nas_pool_destroy(pool);
    unsetenv("CUDA_VISIBLE_DEVICES");
}

/* Submit gives a job to a free worker on the least loaded GPU: with
 * workers on devices 0,0,1,1 (listed GPU-major), the second job goes to
 * worker 2 (GPU 1), not to worker 1 (GPU 0, already running one). */
static void test_least_loaded_gpu(void **state)
{
    (void)state;
    unsetenv("CUDA_VISIBLE_DEVICES");
    int dev[4] = {0, 0, 1, 1};
    nas_pool_opts po;
    memset(&po, 0, sizeof po);
    po.worker_gpu = dev;
    nas_pool *pool = NULL;
    nas_error err;
    assert_int_equal(nas_pool_create(4, job_fn, NULL, &po, &pool, &err), NAS_OK);
    int order[4];
    for (int k = 0; k < 4; k++) {
        assert_int_equal(nas_pool_next_worker(pool), k == 0 ? 0 : k == 1 ? 2 : k == 2 ? 1 : 3);
        nas_pool_job j = make_job(k + 1, JOB_SLOW);
        assert_int_equal(nas_pool_submit(pool, &j, &order[k], &err), NAS_OK);
    }
    assert_int_equal(order[0], 0);
    assert_int_equal(order[1], 2);
    assert_int_equal(order[2], 1);
    assert_int_equal(order[3], 3);
    for (int k = 0; k < 4; k++) {
        nas_pool_event ev;
        assert_int_equal(nas_pool_wait(pool, 20000, &ev, &err), NAS_OK);
        assert_string_equal(ev.result.error, dev[ev.worker] == 0 ? "0" : "1");
    }
    nas_pool_destroy(pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workers_pinned),
        cmocka_unit_test(test_ordinals_without_list),
        cmocka_unit_test(test_cpu_unchanged),
        cmocka_unit_test(test_device_not_visible),
        cmocka_unit_test(test_in_process),
        cmocka_unit_test(test_least_loaded_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
