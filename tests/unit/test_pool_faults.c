/*
 * tests/unit/test_pool_faults.c - issue 4 pieces of the worker pool:
 * the NAS_FAULT spec matcher, the version-2 JOB (attempt) and HEARTBEAT
 * messages, and heartbeat-based hang detection: a worker that freezes
 * (SIGSTOP) is failed after 3 missed heartbeats with NAS_EWORKER, while a
 * worker that is slow but alive (heartbeats flowing) is left alone.
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
#include "search/pool_msg.h"

enum { JOB_OK = 0, JOB_FREEZE = 1, JOB_SLOW = 2 };

static int job_fn(void *ctx, const nas_pool_job *job, nas_pool_progress_fn progress, void *pctx,
                  nas_trial_result *res)
{
    (void)ctx;
    (void)progress;
    (void)pctx;
    if (job->genotype.tok[0] == JOB_FREEZE)
        raise(SIGSTOP);
    if (job->genotype.tok[0] == JOB_SLOW) {
        struct timespec ts = {4, 0}; /* longer than 3 heartbeats of 1 s */
        while (nanosleep(&ts, &ts) != 0)
            ;
    }
    res->status = NAS_OK;
    res->val_accuracy = 0.5;
    res->epochs = job->attempt; /* echo the attempt back */
    return NAS_OK;
}

static nas_pool_job make_job(int64_t id, int kind, int attempt)
{
    nas_pool_job j;
    memset(&j, 0, sizeof j);
    j.id = id;
    j.attempt = attempt;
    j.genotype.len = 6;
    j.genotype.tok[0] = (uint8_t)kind;
    return j;
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_fault_spec(void **state)
{
    (void)state;
    nas_pool_job j3a1 = make_job(3, 0, 1), j3a2 = make_job(3, 0, 2), j13 = make_job(13, 0, 1);
    const char *spec = "crash@3/1,nan@13,sleep_ms=5,hang@31";
    assert_true(nas__fault_applies(spec, "crash", &j3a1));
    assert_false(nas__fault_applies(spec, "crash", &j3a2)); /* first attempt only */
    assert_false(nas__fault_applies(spec, "crash", &j13));
    assert_true(nas__fault_applies(spec, "nan", &j13));
    assert_false(nas__fault_applies(spec, "nan", &j3a1));
    assert_false(nas__fault_applies(spec, "hang", &j3a1)); /* 31 is not 3 */
    assert_false(nas__fault_applies(spec, "kill", &j3a1));
    assert_false(nas__fault_applies(NULL, "crash", &j3a1));
    assert_false(nas__fault_applies("crash@3x", "crash", &j3a1)); /* malformed: ignored */
}

static void test_messages_v2(void **state)
{
    (void)state;
    uint8_t buf[NAS__MSG_HEADER + NAS__MSG_MAX_PAYLOAD];
    int type;
    uint32_t len;
    char why[128];
    nas_pool_job j = make_job(77, 1, 3), back;
    size_t n = nas__msg_encode_job(buf, &j);
    assert_int_equal(nas__msg_header(buf, &type, &len, why, sizeof why), NAS_OK);
    assert_int_equal(type, NAS__MSG_JOB);
    assert_int_equal(n, NAS__MSG_HEADER + len);
    assert_int_equal(nas__msg_decode_job(buf + NAS__MSG_HEADER, len, &back), NAS_OK);
    assert_int_equal(back.id, 77);
    assert_int_equal(back.attempt, 3);
    assert_memory_equal(back.genotype.tok, j.genotype.tok, 6);

    n = nas__msg_encode_heartbeat(buf, -1);
    assert_int_equal(nas__msg_header(buf, &type, &len, why, sizeof why), NAS_OK);
    assert_int_equal(type, NAS__MSG_HEARTBEAT);
    int64_t id = 0;
    assert_int_equal(nas__msg_decode_heartbeat(buf + NAS__MSG_HEADER, len, &id), NAS_OK);
    assert_int_equal(id, -1);
    assert_int_equal(nas__msg_decode_heartbeat(buf + NAS__MSG_HEADER, len + 1, &id), NAS_EFORMAT);

    /* a version-1 peer is refused with a reason */
    buf[4] = 1;
    buf[5] = 0;
    assert_int_equal(nas__msg_header(buf, &type, &len, why, sizeof why), NAS_EFORMAT);
    assert_non_null(strstr(why, "version"));
}

/* issue 32: NEXT (rank 0 -> worker ranks: phase 3 follows) carries the
 * finalists experiment's name; a malformed one is refused. */
static void test_message_next(void **state)
{
    (void)state;
    uint8_t buf[NAS__MSG_HEADER + NAS__MSG_MAX_PAYLOAD];
    int type;
    uint32_t len;
    char why[128], name[NAS_NAME_MAX];
    size_t n = nas__msg_encode_next(buf, "fashion-oneshot-finalists");
    assert_int_equal(nas__msg_header(buf, &type, &len, why, sizeof why), NAS_OK);
    assert_int_equal(type, NAS__MSG_NEXT);
    assert_int_equal(n, NAS__MSG_HEADER + len);
    assert_int_equal(len, 4 + strlen("fashion-oneshot-finalists"));
    assert_int_equal(nas__msg_decode_next(buf + NAS__MSG_HEADER, len, name), NAS_OK);
    assert_string_equal(name, "fashion-oneshot-finalists");
    /* a length that differs from the name's, in either direction */
    assert_int_equal(nas__msg_decode_next(buf + NAS__MSG_HEADER, len - 1, name), NAS_EFORMAT);
    assert_int_equal(nas__msg_decode_next(buf + NAS__MSG_HEADER, len + 1, name), NAS_EFORMAT);
    assert_int_equal(nas__msg_decode_next(buf + NAS__MSG_HEADER, 3, name), NAS_EFORMAT);
    /* a NUL inside the name */
    buf[NAS__MSG_HEADER + 4 + 3] = '\0';
    assert_int_equal(nas__msg_decode_next(buf + NAS__MSG_HEADER, len, name), NAS_EFORMAT);
    /* empty */
    n = nas__msg_encode_next(buf, "");
    assert_int_equal(n, NAS__MSG_HEADER + 4);
    assert_int_equal(nas__msg_decode_next(buf + NAS__MSG_HEADER, 4, name), NAS_EFORMAT);
    /* the longest name fits; a longer one is cut to it when encoded */
    char longname[2 * NAS_NAME_MAX];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    n = nas__msg_encode_next(buf, longname);
    assert_int_equal(nas__msg_header(buf, &type, &len, why, sizeof why), NAS_OK);
    assert_int_equal(len, 4 + NAS_NAME_MAX - 1);
    assert_int_equal(nas__msg_decode_next(buf + NAS__MSG_HEADER, len, name), NAS_OK);
    assert_int_equal(strlen(name), NAS_NAME_MAX - 1);
    /* a claimed length beyond NAS_NAME_MAX - 1 is refused, not copied */
    buf[NAS__MSG_HEADER] = NAS_NAME_MAX;
    memset(buf + NAS__MSG_HEADER + 4, 'x', NAS_NAME_MAX);
    assert_int_equal(nas__msg_decode_next(buf + NAS__MSG_HEADER, 4 + NAS_NAME_MAX, name),
                     NAS_EFORMAT);
    /* READY (protocol 6: an MPI worker rank has built its evaluator) carries
     * its generation (the NEXTs the rank had received) */
    n = nas__msg_encode_ready(buf, 1);
    assert_int_equal(nas__msg_header(buf, &type, &len, why, sizeof why), NAS_OK);
    assert_int_equal(type, NAS__MSG_READY);
    assert_int_equal(len, 4);
    assert_int_equal(n, NAS__MSG_HEADER + 4);
    int gen = -1;
    assert_int_equal(nas__msg_decode_ready(buf + NAS__MSG_HEADER, len, &gen), NAS_OK);
    assert_int_equal(gen, 1);
    assert_int_equal(nas__msg_decode_ready(buf + NAS__MSG_HEADER, 0, &gen), NAS_EFORMAT);
    assert_int_equal(nas__msg_decode_ready(buf + NAS__MSG_HEADER, 8, &gen), NAS_EFORMAT);
    /* a type past READY (the last) is unknown */
    buf[6] = NAS__MSG_READY + 1;
    assert_int_equal(nas__msg_header(buf, &type, &len, why, sizeof why), NAS_EFORMAT);
    assert_non_null(strstr(why, "unknown message type"));
}

static void test_frozen_worker_missed_heartbeats(void **state)
{
    (void)state;
    nas_pool_opts opts = {.heartbeat_s = 1};
    nas_pool *p = NULL;
    nas_error err;
    assert_int_equal(nas_pool_create(2, job_fn, NULL, &opts, &p, &err), NAS_OK);
    nas_pool_job frozen = make_job(5, JOB_FREEZE, 1), slow = make_job(6, JOB_SLOW, 2);
    double t0 = mono();
    assert_int_equal(nas_pool_submit(p, &frozen, NULL, &err), NAS_OK);
    assert_int_equal(nas_pool_submit(p, &slow, NULL, &err), NAS_OK);
    int seen_frozen = 0, seen_slow = 0;
    for (int k = 0; k < 2; k++) {
        nas_pool_event ev;
        assert_int_equal(nas_pool_wait(p, 20000, &ev, &err), NAS_OK);
        double dt = mono() - t0;
        if (ev.job_id == 5) {
            seen_frozen = 1;
            assert_int_equal(ev.result.status, NAS_EWORKER);
            assert_non_null(strstr(ev.result.error, "no heartbeat"));
            assert_true(dt >= 2.9 && dt < 8.0);
        } else {
            seen_slow = 1;
            assert_int_equal(ev.job_id, 6);
            assert_int_equal(ev.result.status, NAS_OK); /* slow but alive: not killed */
            assert_int_equal(ev.result.epochs, 2);      /* the attempt reached the worker */
            assert_true(dt >= 3.9);
        }
    }
    assert_true(seen_frozen && seen_slow);
    /* the frozen worker was replaced: the pool still runs jobs */
    nas_pool_job ok = make_job(7, JOB_OK, 1);
    assert_int_equal(nas_pool_submit(p, &ok, NULL, &err), NAS_OK);
    nas_pool_event ev;
    assert_int_equal(nas_pool_wait(p, 10000, &ev, &err), NAS_OK);
    assert_int_equal(ev.job_id, 7);
    assert_int_equal(ev.result.status, NAS_OK);
    nas_pool_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_spec),
        cmocka_unit_test(test_messages_v2),
        cmocka_unit_test(test_message_next),
        cmocka_unit_test(test_frozen_worker_missed_heartbeats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
