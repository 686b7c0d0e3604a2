/*
 * tests/unit/test_pool.c - the worker pool, in-process and forked: results
 * come back to the right job, a crashing job fails with its signal named
 * and the pool goes on, a hanging job is killed at the timeout, cancel
 * stops jobs in flight; the wire format rejects corrupt messages.
 */
#include <setjmp.h> /* cmocka needs these three first */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "nas/search.h"
#include "search/pool_msg.h"

/* Job behaviour is chosen by the first token. */
enum { JOB_OK = 0, JOB_CRASH = 1, JOB_HANG = 2, JOB_FAIL = 3 };

static int job_fn(void *ctx, const nas_pool_job *job, nas_pool_progress_fn progress, void *pctx,
                  nas_trial_result *res)
{
    (void)ctx;
    switch (job->genotype.tok[0]) {
    case JOB_CRASH:
        raise(SIGSEGV);
        break;
    case JOB_HANG:
        for (;;)
            pause();
    case JOB_FAIL:
        res->status = NAS_ENAN;
        snprintf(res->error, sizeof res->error, "loss became NaN (job %lld)", (long long)job->id);
        return res->status;
    default:
        break;
    }
    int sum = 0;
    for (int i = 0; i < job->genotype.len; i++)
        sum += job->genotype.tok[i];
    for (int step = 1; step <= 4; step++)
        progress(pctx, step / 4.0, 1.0 / step);
    res->status = NAS_OK;
    res->val_accuracy = sum / 100.0 + (double)job->id;
    res->macs = 1000 + job->id;
    res->params = 10;
    res->train_seconds = (double)getpid(); /* where it ran */
    res->epochs = 1;
    return NAS_OK;
}

typedef struct progress_log {
    int calls;
    double last_fraction;
    int64_t last_job;
} progress_log;

static void on_progress(void *user, int64_t job_id, int worker, double fraction, double loss)
{
    (void)worker;
    (void)loss;
    progress_log *pl = user;
    pl->calls++;
    pl->last_fraction = fraction;
    pl->last_job = job_id;
}

static nas_pool_job make_job(int64_t id, int kind, int extra)
{
    nas_pool_job j;
    memset(&j, 0, sizeof j);
    j.id = id;
    j.genotype.len = 6;
    j.genotype.tok[0] = (uint8_t)kind;
    j.genotype.tok[1] = (uint8_t)extra;
    return j;
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_in_process(void **state)
{
    (void)state;
    progress_log pl = {0};
    nas_pool_opts opts = {.progress_interval_s = 1e-9, .on_progress = on_progress, .user = &pl};
    nas_pool *p = NULL;
    nas_error err;
    assert_int_equal(nas_pool_create(0, job_fn, NULL, &opts, &p, &err), NAS_OK);
    assert_int_equal(nas_pool_size(p), 1);
    nas_pool_event ev;
    assert_int_equal(nas_pool_wait(p, 0, &ev, &err), NAS_ENOTFOUND);
    for (int k = 1; k <= 3; k++) {
        assert_int_equal(nas_pool_idle(p), 1);
        nas_pool_job j = make_job(k, JOB_OK, 7 * k);
        int w = -1;
        assert_int_equal(nas_pool_submit(p, &j, &w, &err), NAS_OK);
        assert_int_equal(w, 0);
        assert_int_equal(nas_pool_idle(p), 0);
        assert_int_equal(nas_pool_busy(p), 1);
        assert_int_equal(nas_pool_submit(p, &j, &w, &err), NAS_EBUSY);
        assert_int_equal(nas_pool_wait(p, 1000, &ev, &err), NAS_OK);
        assert_int_equal(ev.job_id, k);
        assert_int_equal(ev.result.status, NAS_OK);
        assert_float_equal(ev.result.val_accuracy, 7 * k / 100.0 + k, 1e-12);
        assert_float_equal(ev.result.train_seconds, (double)getpid(), 0.5);
    }
    assert_int_equal(pl.calls, 12);
    assert_float_equal(pl.last_fraction, 1.0, 0);
    nas_pool_job j = make_job(9, JOB_FAIL, 0);
    assert_int_equal(nas_pool_submit(p, &j, NULL, &err), NAS_OK);
    assert_int_equal(nas_pool_wait(p, 0, &ev, &err), NAS_OK);
    assert_int_equal(ev.result.status, NAS_ENAN);
    assert_non_null(strstr(ev.result.error, "job 9"));
    nas_pool_destroy(p);
    nas_pool_destroy(NULL);
}

static void test_forked_results(void **state)
{
    (void)state;
    progress_log pl = {0};
    nas_pool_opts opts = {.progress_interval_s = 1e-9, .on_progress = on_progress, .user = &pl};
    nas_pool *p = NULL;
    nas_error err;
    assert_int_equal(nas_pool_create(2, job_fn, NULL, &opts, &p, &err), NAS_OK);
    assert_int_equal(nas_pool_size(p), 2);
    assert_int_equal(nas_pool_idle(p), 2);
    int pid0 = nas_pool_worker_pid(p, 0), pid1 = nas_pool_worker_pid(p, 1);
    assert_true(pid0 > 0 && pid1 > 0 && pid0 != pid1 && pid0 != getpid());

    int seen[7] = {0};
    int64_t next = 1, done = 0;
    while (done < 6) {
        while (next <= 6 && nas_pool_idle(p) > 0) {
            nas_pool_job j = make_job(next, next == 4 ? JOB_FAIL : JOB_OK, (int)next);
            assert_int_equal(nas_pool_submit(p, &j, NULL, &err), NAS_OK);
            next++;
        }
        nas_pool_event ev;
        int rc = nas_pool_wait(p, 10000, &ev, &err);
        assert_int_equal(rc, NAS_OK);
        assert_true(ev.job_id >= 1 && ev.job_id <= 6);
        assert_int_equal(seen[ev.job_id], 0);
        seen[ev.job_id] = 1;
        if (ev.job_id == 4) {
            assert_int_equal(ev.result.status, NAS_ENAN);
            assert_string_equal(ev.result.error, "loss became NaN (job 4)");
        } else {
            assert_int_equal(ev.result.status, NAS_OK);
            assert_float_equal(ev.result.val_accuracy, ev.job_id / 100.0 + ev.job_id, 1e-12);
            assert_int_equal(ev.result.macs, 1000 + ev.job_id);
            int ran_in = (int)ev.result.train_seconds;
            assert_true(ran_in == pid0 || ran_in == pid1);
        }
        done++;
    }
    assert_true(pl.calls >= 5 * 4); /* every progress report of the 5 good jobs */
    assert_int_equal(nas_pool_busy(p), 0);
    nas_pool_destroy(p);
}

/* A genotype of NAS_GENOTYPE_MAX_LEN tokens (a long chain space) with a
 * multi-fidelity budget travels whole to a forked worker: the job message
 * is the largest the controller sends (the send buffer overflowed by 4
 * bytes once the budget joined the message; ASan's stack check). */
static void test_forked_longest_job(void **state)
{
    (void)state;
    nas_pool *p = NULL;
    nas_error err;
    assert_int_equal(nas_pool_create(1, job_fn, NULL, NULL, &p, &err), NAS_OK);
    nas_pool_job j = make_job(9, JOB_OK, 0);
    j.budget = 27;
    j.genotype.len = NAS_GENOTYPE_MAX_LEN;
    int sum = 0;
    for (int i = 1; i < NAS_GENOTYPE_MAX_LEN; i++) {
        j.genotype.tok[i] = (uint8_t)(i % 7);
        sum += i % 7;
    }
    assert_int_equal(nas_pool_submit(p, &j, NULL, &err), NAS_OK);
    nas_pool_event ev;
    assert_int_equal(nas_pool_wait(p, 10000, &ev, &err), NAS_OK);
    assert_int_equal(ev.job_id, 9);
    assert_int_equal(ev.result.status, NAS_OK);
    assert_float_equal(ev.result.val_accuracy, sum / 100.0 + 9, 1e-12); /* every token arrived */
    nas_pool_destroy(p);
}

static void test_forked_crash_is_reported_and_replaced(void **state)
{
    (void)state;
    nas_pool *p = NULL;
    nas_error err;
    assert_int_equal(nas_pool_create(1, job_fn, NULL, NULL, &p, &err), NAS_OK);
    int pid0 = nas_pool_worker_pid(p, 0);
    nas_pool_job j = make_job(11, JOB_CRASH, 0);
    assert_int_equal(nas_pool_submit(p, &j, NULL, &err), NAS_OK);
    nas_pool_event ev;
    assert_int_equal(nas_pool_wait(p, 10000, &ev, &err), NAS_OK);
    assert_int_equal(ev.job_id, 11);
    assert_int_equal(ev.result.status, NAS_EWORKER);
    assert_non_null(strstr(ev.result.error, "killed by signal 11"));
    assert_non_null(strstr(ev.result.error, "Segmentation fault"));
    assert_int_equal(nas_pool_idle(p), 1);

    /* The pool goes on with a new worker. */
    j = make_job(12, JOB_OK, 5);
    assert_int_equal(nas_pool_submit(p, &j, NULL, &err), NAS_OK);
    int pid1 = nas_pool_worker_pid(p, 0);
    assert_true(pid1 > 0 && pid1 != pid0);
    assert_int_equal(nas_pool_wait(p, 10000, &ev, &err), NAS_OK);
    assert_int_equal(ev.job_id, 12);
    assert_int_equal(ev.result.status, NAS_OK);
    assert_int_equal((int)ev.result.train_seconds, pid1);
    nas_pool_destroy(p);
}

static void test_forked_timeout(void **state)
{
    (void)state;
    nas_pool_opts opts = {.job_timeout_s = 1};
    nas_pool *p = NULL;
    nas_error err;
    assert_int_equal(nas_pool_create(2, job_fn, NULL, &opts, &p, &err), NAS_OK);
    nas_pool_job hang = make_job(21, JOB_HANG, 0);
    nas_pool_job ok = make_job(22, JOB_OK, 3);
    double t0 = mono();
    assert_int_equal(nas_pool_submit(p, &hang, NULL, &err), NAS_OK);
    assert_int_equal(nas_pool_submit(p, &ok, NULL, &err), NAS_OK);
    nas_pool_event ev;
    /* The good job comes back first, the hanging one at the timeout. */
    assert_int_equal(nas_pool_wait(p, 10000, &ev, &err), NAS_OK);
    assert_int_equal(ev.job_id, 22);
    assert_int_equal(ev.result.status, NAS_OK);
    assert_int_equal(nas_pool_wait(p, 200, &ev, &err), NAS_ETIMEOUT);
    assert_int_equal(nas_pool_wait(p, 10000, &ev, &err), NAS_OK);
    double dt = mono() - t0;
    assert_int_equal(ev.job_id, 21);
    assert_int_equal(ev.result.status, NAS_ETIMEOUT);
    assert_non_null(strstr(ev.result.error, "timed out after 1 s"));
    assert_non_null(strstr(ev.result.error, "signal 9"));
    assert_true(dt >= 0.99 && dt < 5.0);
    /* And the slot works again. */
    ok.id = 23;
    assert_int_equal(nas_pool_submit(p, &ok, NULL, &err), NAS_OK);
    assert_int_equal(nas_pool_wait(p, 10000, &ev, &err), NAS_OK);
    assert_int_equal(ev.job_id, 23);
    assert_int_equal(ev.result.status, NAS_OK);
    nas_pool_destroy(p);
}

static void test_forked_cancel(void **state)
{
    (void)state;
    nas_pool *p = NULL;
    nas_error err;
    assert_int_equal(nas_pool_create(1, job_fn, NULL, NULL, &p, &err), NAS_OK);
    nas_pool_job hang = make_job(31, JOB_HANG, 0);
    assert_int_equal(nas_pool_submit(p, &hang, NULL, &err), NAS_OK);
    nas_pool_event ev;
    assert_int_equal(nas_pool_wait(p, 100, &ev, &err), NAS_ETIMEOUT);
    int64_t ids[4];
    assert_int_equal(nas_pool_cancel(p, ids, 4), 1);
    assert_int_equal(ids[0], 31);
    assert_int_equal(nas_pool_busy(p), 0);
    assert_int_equal(nas_pool_wait(p, 0, &ev, &err), NAS_ENOTFOUND);
    nas_pool_job ok = make_job(32, JOB_OK, 1);
    assert_int_equal(nas_pool_submit(p, &ok, NULL, &err), NAS_OK);
    assert_int_equal(nas_pool_wait(p, 10000, &ev, &err), NAS_OK);
    assert_int_equal(ev.job_id, 32);
    /* Destroy with a job in flight kills it. */
    assert_int_equal(nas_pool_submit(p, &hang, NULL, &err), NAS_OK);
    double t0 = mono();
    nas_pool_destroy(p);
    assert_true(mono() - t0 < 2.5);
}

static void test_wire_format(void **state)
{
    (void)state;
    uint8_t buf[NAS__MSG_HEADER + NAS__MSG_MAX_PAYLOAD];
    int type;
    uint32_t len;
    char why[128];

    nas_pool_job j = make_job(-5, JOB_OK, 200), back;
    j.budget = 27; /* issue 17: a rung's budget travels with the job */
    j.from = 9;    /* issue 29: ... and the budget its checkpoint holds */
    size_t n = nas__msg_encode_job(buf, &j);
    assert_int_equal(nas__msg_header(buf, &type, &len, why, sizeof why), NAS_OK);
    assert_int_equal(type, NAS__MSG_JOB);
    assert_int_equal(len + NAS__MSG_HEADER, n);
    assert_int_equal(nas__msg_decode_job(buf + NAS__MSG_HEADER, len, &back), NAS_OK);
    assert_int_equal(back.id, -5);
    assert_int_equal(back.budget, 27);
    assert_int_equal(back.from, 9);
    assert_int_equal(back.genotype.len, 6);
    assert_memory_equal(back.genotype.tok, j.genotype.tok, 6);
    assert_int_equal(nas__msg_decode_job(buf + NAS__MSG_HEADER, len - 1, &back), NAS_EFORMAT);

    nas_trial_result r, rb;
    memset(&r, 0, sizeof r);
    r.status = NAS_ENAN;
    r.val_accuracy = 0.8125;
    r.test_accuracy = -1;
    r.train_loss = NAN;
    r.macs = 32828288;
    r.params = 316058;
    r.latency_ms = 1.5;
    r.train_seconds = 33.25;
    r.epochs = 3;
    snprintf(r.error, sizeof r.error, "loss became NaN");
    n = nas__msg_encode_result(buf, 77, &r);
    assert_int_equal(nas__msg_header(buf, &type, &len, why, sizeof why), NAS_OK);
    assert_int_equal(type, NAS__MSG_RESULT);
    int64_t id;
    assert_int_equal(nas__msg_decode_result(buf + NAS__MSG_HEADER, len, &id, &rb), NAS_OK);
    assert_int_equal(id, 77);
    assert_int_equal(rb.status, NAS_ENAN);
    assert_float_equal(rb.val_accuracy, 0.8125, 0);
    assert_float_equal(rb.test_accuracy, -1, 0);
    assert_true(isnan(rb.train_loss));
    assert_int_equal(rb.macs, 32828288);
    assert_int_equal(rb.params, 316058);
    assert_int_equal(rb.epochs, 3);
    assert_string_equal(rb.error, "loss became NaN");
    assert_int_equal(nas__msg_decode_result(buf + NAS__MSG_HEADER, len + 1, &id, &rb),
                     NAS_EFORMAT);

    n = nas__msg_encode_progress(buf, 3, 0.5, 2.25);
    assert_int_equal(n, NAS__MSG_HEADER + 24);
    double fr, loss;
    assert_int_equal(nas__msg_header(buf, &type, &len, why, sizeof why), NAS_OK);
    assert_int_equal(nas__msg_decode_progress(buf + NAS__MSG_HEADER, len, &id, &fr, &loss), NAS_OK);
    assert_true(id == 3 && fr == 0.5 && loss == 2.25);

    /* Corruptions are refused with a reason. */
    uint8_t bad[NAS__MSG_HEADER];
    memcpy(bad, buf, sizeof bad);
    bad[0] ^= 0xff;
    assert_int_equal(nas__msg_header(bad, &type, &len, why, sizeof why), NAS_EFORMAT);
    assert_non_null(strstr(why, "magic"));
    memcpy(bad, buf, sizeof bad);
    bad[4] = 9; /* version */
    assert_int_equal(nas__msg_header(bad, &type, &len, why, sizeof why), NAS_EFORMAT);
    assert_non_null(strstr(why, "version"));
    memcpy(bad, buf, sizeof bad);
    bad[6] = 42; /* type */
    assert_int_equal(nas__msg_header(bad, &type, &len, why, sizeof why), NAS_EFORMAT);
    memcpy(bad, buf, sizeof bad);
    bad[10] = 0x7f; /* huge length */
    assert_int_equal(nas__msg_header(bad, &type, &len, why, sizeof why), NAS_EFORMAT);
    assert_non_null(strstr(why, "exceeds"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wire_format),
        cmocka_unit_test(test_in_process),
        cmocka_unit_test(test_forked_results),
        cmocka_unit_test(test_forked_longest_job),
        cmocka_unit_test(test_forked_crash_is_reported_and_replaced),
        cmocka_unit_test(test_forked_timeout),
        cmocka_unit_test(test_forked_cancel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
