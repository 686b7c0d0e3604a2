/*
 * search/pool.c - the worker pool (see nas/search.h) and its wire format
 * (search/pool_msg.h).
 *
 * Forked mode: one AF_UNIX stream socket pair per worker (send() with
 * MSG_NOSIGNAL, so a dead worker is an EPIPE, never a SIGPIPE). The owner
 * multiplexes the sockets with poll(); a socket that closes means its
 * worker exited: waitpid() says how, the job fails with that reason, and
 * the worker is restarted lazily on the next submit. Timeouts use the
 * monotonic clock.
 *
 * Liveness: each forked worker runs a heartbeat thread that sends a
 * HEARTBEAT message every opts.heartbeat_s seconds (one mutex serialises
 * it with the job's PROGRESS/RESULT messages, so messages never
 * interleave). A busy worker from which nothing arrived for
 * 3 x heartbeat_s is frozen (stopped, thrashing, lost) and is killed; a
 * busy worker that still beats but runs past job_timeout_s is stuck in its
 * job and is killed too. The first fails the job with NAS_EWORKER (the
 * worker process failed: a retry may succeed), the second with
 * NAS_ETIMEOUT (the job itself is too slow: a retry would be too).
 * nas_pool_wait reads every waiting message before it judges either, and
 * both run on the pool's clock, which leaves out the owner's stalls
 * (attend(): stopped with its process group, blocked on a database lock),
 * so a stall never turns a healthy worker or a result already sent into a
 * failure (issue 20). A worker that died between jobs is replaced by the
 * next submit, which sends the job to the replacement. An MPI rank builds
 * its own evaluator (it is not forked from the owner's): a job sent to it
 * before it said READY waits in MPI's queue, and its trial_timeout_s
 * clock starts at READY while heartbeats (which the rank sends as it
 * loads) judge it, within a bound (job_limit_s).
 *
 * GPU slots (issue 7): with opts.worker_gpu, worker i is pinned to its
 * slot's CUDA device. The owner translates the device into a
 * CUDA_VISIBLE_DEVICES value once, in nas_pool_create (through its own
 * CUDA_VISIBLE_DEVICES, e.g. one Slurm set, with nas__cuda_visible_value,
 * the helper the MPI transport uses too); spawn() sets it in the child
 * right after fork, before the child runs any job and so before its
 * backend can initialise CUDA. A replacement of a crashed worker goes
 * through spawn() with the same index, so it gets the same device.
 */
#define _GNU_SOURCE /* ppoll */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>   /* PR_SET_PDEATHSIG: a worker dies with its owner */
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "nas/rng.h" /* nas_rng_mix64 */
#include "search/pool_msg.h"

/* ---- wire format ------------------------------------------------------------- */

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put_f64(uint8_t *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    put_u64(p, v);
}
static uint16_t get_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static double get_f64(const uint8_t *p)
{
    uint64_t v = get_u64(p);
    double d;
    memcpy(&d, &v, sizeof d);
    return d;
}

static size_t finish_header(uint8_t *buf, int type, size_t payload)
{
    put_u32(buf, NAS__MSG_MAGIC);
    put_u16(buf + 4, NAS__MSG_VERSION);
    put_u16(buf + 6, (uint16_t)type);
    put_u32(buf + 8, (uint32_t)payload);
    return NAS__MSG_HEADER + payload;
}

size_t nas__msg_encode_job(uint8_t *buf, const nas_pool_job *job)
{
    uint8_t *p = buf + NAS__MSG_HEADER;
    int n = job->genotype.len;
    if (n < 0)
        n = 0;
    if (n > NAS_GENOTYPE_MAX_LEN)
        n = NAS_GENOTYPE_MAX_LEN;
    put_u64(p, (uint64_t)job->id);
    put_u32(p + 8, (uint32_t)(job->attempt > 0 ? job->attempt : 0));
    put_u32(p + 12, (uint32_t)n);
    put_u32(p + 16, (uint32_t)(job->budget > 0 ? job->budget : 0));
    put_u32(p + 20, (uint32_t)(job->from > 0 ? job->from : 0));
    memcpy(p + 24, job->genotype.tok, (size_t)n);
    return finish_header(buf, NAS__MSG_JOB, 24 + (size_t)n);
}

size_t nas__msg_encode_heartbeat(uint8_t *buf, int64_t job_id)
{
    put_u64(buf + NAS__MSG_HEADER, (uint64_t)job_id);
    return finish_header(buf, NAS__MSG_HEARTBEAT, 8);
}

size_t nas__msg_encode_stop(uint8_t *buf) { return finish_header(buf, NAS__MSG_STOP, 0); }

size_t nas__msg_encode_ready(uint8_t *buf, int generation)
{
    put_u32(buf + NAS__MSG_HEADER, (uint32_t)(generation > 0 ? generation : 0));
    return finish_header(buf, NAS__MSG_READY, 4);
}

size_t nas__msg_encode_next(uint8_t *buf, const char *name)
{
    size_t n = strnlen(name, NAS_NAME_MAX - 1);
    put_u32(buf + NAS__MSG_HEADER, (uint32_t)n);
    memcpy(buf + NAS__MSG_HEADER + 4, name, n);
    return finish_header(buf, NAS__MSG_NEXT, 4 + n);
}

size_t nas__msg_encode_progress(uint8_t *buf, int64_t job_id, double fraction, double loss)
{
    uint8_t *p = buf + NAS__MSG_HEADER;
    put_u64(p, (uint64_t)job_id);
    put_f64(p + 8, fraction);
    put_f64(p + 16, loss);
    return finish_header(buf, NAS__MSG_PROGRESS, 24);
}

#define RESULT_FIXED 76 /* bytes before the error text */

size_t nas__msg_encode_result(uint8_t *buf, int64_t job_id, const nas_trial_result *res)
{
    uint8_t *p = buf + NAS__MSG_HEADER;
    size_t elen = strnlen(res->error, sizeof res->error - 1);
    put_u64(p, (uint64_t)job_id);
    put_u32(p + 8, (uint32_t)res->status);
    put_f64(p + 12, res->val_accuracy);
    put_f64(p + 20, res->test_accuracy);
    put_f64(p + 28, res->train_loss);
    put_u64(p + 36, (uint64_t)res->macs);
    put_u64(p + 44, (uint64_t)res->params);
    put_f64(p + 52, res->latency_ms);
    put_f64(p + 60, res->train_seconds);
    put_u32(p + 68, (uint32_t)res->epochs);
    put_u32(p + 72, (uint32_t)elen);
    memcpy(p + RESULT_FIXED, res->error, elen);
    /* issue 7: then the device that ran it: u8 length + name, u8 length + cc */
    uint8_t *q = p + RESULT_FIXED + elen;
    size_t nlen = strnlen(res->device_name, sizeof res->device_name - 1);
    size_t clen = strnlen(res->device_cc, sizeof res->device_cc - 1);
    q[0] = (uint8_t)nlen;
    memcpy(q + 1, res->device_name, nlen);
    q[1 + nlen] = (uint8_t)clen;
    memcpy(q + 2 + nlen, res->device_cc, clen);
    return finish_header(buf, NAS__MSG_RESULT, RESULT_FIXED + elen + 2 + nlen + clen);
}

int nas__msg_header(const uint8_t *buf, int *type, uint32_t *length, char *why, size_t n)
{
    uint32_t magic = get_u32(buf);
    uint16_t version = get_u16(buf + 4);
    uint16_t t = get_u16(buf + 6);
    uint32_t len = get_u32(buf + 8);
    if (magic != NAS__MSG_MAGIC) {
        snprintf(why, n, "bad magic 0x%08x", magic);
        return NAS_EFORMAT;
    }
    if (version != NAS__MSG_VERSION) {
        snprintf(why, n, "protocol version %u, expected %d", version, NAS__MSG_VERSION);
        return NAS_EFORMAT;
    }
    if (t < NAS__MSG_JOB || t > NAS__MSG_READY) {
        snprintf(why, n, "unknown message type %u", t);
        return NAS_EFORMAT;
    }
    if (len > NAS__MSG_MAX_PAYLOAD) {
        snprintf(why, n, "payload of %u bytes exceeds %d", len, NAS__MSG_MAX_PAYLOAD);
        return NAS_EFORMAT;
    }
    *type = t;
    *length = len;
    return NAS_OK;
}

int nas__msg_decode_job(const uint8_t *p, uint32_t len, nas_pool_job *job)
{
    if (len < 24)
        return NAS_EFORMAT;
    uint32_t attempt = get_u32(p + 8);
    uint32_t n = get_u32(p + 12);
    uint32_t budget = get_u32(p + 16);
    uint32_t from = get_u32(p + 20);
    if (n > NAS_GENOTYPE_MAX_LEN || len != 24 + n || attempt > 1000000 || budget > 1000000000 ||
        from > budget)
        return NAS_EFORMAT;
    memset(job, 0, sizeof *job);
    job->id = (int64_t)get_u64(p);
    job->attempt = (int)attempt;
    job->budget = (int)budget;
    job->from = (int)from;
    job->genotype.len = (int)n;
    memcpy(job->genotype.tok, p + 24, n);
    return NAS_OK;
}

int nas__msg_decode_heartbeat(const uint8_t *p, uint32_t len, int64_t *job_id)
{
    if (len != 8)
        return NAS_EFORMAT;
    *job_id = (int64_t)get_u64(p);
    return NAS_OK;
}

int nas__msg_decode_next(const uint8_t *p, uint32_t len, char name[NAS_NAME_MAX])
{
    if (len < 4)
        return NAS_EFORMAT;
    uint32_t n = get_u32(p);
    if (n == 0 || n > NAS_NAME_MAX - 1 || len != 4 + n || memchr(p + 4, '\0', n))
        return NAS_EFORMAT;
    memcpy(name, p + 4, n);
    name[n] = '\0';
    return NAS_OK;
}

int nas__msg_decode_ready(const uint8_t *p, uint32_t len, int *generation)
{
    if (len != 4 || get_u32(p) > INT32_MAX)
        return NAS_EFORMAT;
    *generation = (int)get_u32(p);
    return NAS_OK;
}

int nas__msg_decode_progress(const uint8_t *p, uint32_t len, int64_t *job_id, double *fraction,
                             double *loss)
{
    if (len != 24)
        return NAS_EFORMAT;
    *job_id = (int64_t)get_u64(p);
    *fraction = get_f64(p + 8);
    *loss = get_f64(p + 16);
    return NAS_OK;
}

int nas__msg_decode_result(const uint8_t *p, uint32_t len, int64_t *job_id,
                           nas_trial_result *res)
{
    if (len < RESULT_FIXED)
        return NAS_EFORMAT;
    uint32_t elen = get_u32(p + 72);
    if (elen >= sizeof res->error || len < RESULT_FIXED + elen)
        return NAS_EFORMAT;
    /* the device tail (issue 7); absent in a sender without it */
    size_t nlen = 0, clen = 0;
    const uint8_t *q = p + RESULT_FIXED + elen;
    if (len != RESULT_FIXED + elen) {
        if (len < RESULT_FIXED + elen + 2)
            return NAS_EFORMAT;
        nlen = q[0];
        if (nlen >= sizeof res->device_name || len < RESULT_FIXED + elen + 2 + nlen)
            return NAS_EFORMAT;
        clen = q[1 + nlen];
        if (clen >= sizeof res->device_cc || len != RESULT_FIXED + elen + 2 + nlen + clen)
            return NAS_EFORMAT;
    }
    memset(res, 0, sizeof *res);
    if (len != RESULT_FIXED + elen) {
        memcpy(res->device_name, q + 1, nlen);
        memcpy(res->device_cc, q + 2 + nlen, clen);
    }
    *job_id = (int64_t)get_u64(p);
    res->status = (int32_t)get_u32(p + 8);
    res->val_accuracy = get_f64(p + 12);
    res->test_accuracy = get_f64(p + 20);
    res->train_loss = get_f64(p + 28);
    res->macs = (int64_t)get_u64(p + 36);
    res->params = (int64_t)get_u64(p + 44);
    res->latency_ms = get_f64(p + 52);
    res->train_seconds = get_f64(p + 60);
    res->epochs = (int32_t)get_u32(p + 68);
    memcpy(res->error, p + RESULT_FIXED, elen);
    res->error[elen] = '\0';
    return NAS_OK;
}

/* ---- pool ------------------------------------------------------------------ */

enum { W_DEAD = 0, W_IDLE, W_BUSY };

#define RBUF (NAS__MSG_HEADER + NAS__MSG_MAX_PAYLOAD)

typedef struct worker {
    int state;
    pid_t pid;
    int fd;            /* owner's end of the socket pair; -1 when dead */
    int64_t job_id;
    double started;    /* monotonic seconds */
    double last_heard; /* monotonic seconds of the last bytes received */
    int ready;         /* 0: an MPI rank that has not said READY (still loading) */
    uint8_t rbuf[RBUF];
    size_t rlen;
} worker;

struct nas_pool {
    int count; /* 0: in-process */
    nas_pool_job_fn fn;
    void *ctx;
    nas_pool_opts opts;
    worker *w;
    /* finished jobs not yet handed out by nas_pool_wait (FIFO) */
    nas_pool_event *queue;
    int qhead, qlen, qcap;
    int inproc_busy;
    int mpi;  /* 1: worker i is MPI rank i + 1 (search/pool_mpi.c) */
    int lost; /* MPI ranks given up on (they cannot be restarted) */
    /* issue 7: CUDA ordinal of worker i (-1: not pinned) and the
     * CUDA_VISIBLE_DEVICES value that pins it; NULL without GPU slots */
    int *gpu;
    char (*gpu_env)[256];
    /* issue 20: the pool's clock (pool_clock) for heartbeats and
     * timeouts is the monotonic clock minus `skipped`, the time the owner
     * was away for longer than expected: `seen` is the last look at the
     * clock, `allow` how long the owner could be away after it */
    double seen, allow, skipped;
};

int nas__pool_lost(const nas_pool *p) { return p ? p->lost : 0; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* issue 20: how long the owner may be away between two calls into the
 * pool (recording a result, proposing) before the rest counts as a stall,
 * and the longest nap inside nas_pool_wait (plus a scheduling slack). */
#define STALL_GRACE_S 1.0
#define SLICE_MS 250
#define SLICE_SLACK_S 0.05

/* Seconds on the pool's clock: monotonic time minus the owner's stalls. */
static double pool_clock(const nas_pool *p) { return now_s() - p->skipped; }

/*
 * The owner looks at the pool: time since the last look beyond what was
 * expected (p->allow) was a stall of the owner - the process was stopped
 * (Ctrl-Z, SIGSTOP of its group), blocked on a database lock or a slow
 * disk - during which it could not read the workers' messages (and, in a
 * stopped process group, the workers could not send them). It is left out
 * of the pool's clock, so a stall never makes a healthy worker look hung
 * or its job timed out; a worker that was really frozen is still caught,
 * that much later.
 */
static void attend(nas_pool *p)
{
    double t = now_s();
    if (p->seen > 0 && t - p->seen > p->allow)
        p->skipped += t - p->seen - p->allow;
    p->seen = t;
    p->allow = STALL_GRACE_S;
}

static int queue_push(nas_pool *p, const nas_pool_event *ev)
{
    if (p->qlen == p->qcap) {
        int cap = p->qcap ? 2 * p->qcap : 8;
        nas_pool_event *q = malloc((size_t)cap * sizeof *q);
        if (!q)
            return NAS_ENOMEM;
        for (int i = 0; i < p->qlen; i++)
            q[i] = p->queue[(p->qhead + i) % p->qcap];
        free(p->queue);
        p->queue = q;
        p->qcap = cap;
        p->qhead = 0;
    }
    p->queue[(p->qhead + p->qlen) % p->qcap] = *ev;
    p->qlen++;
    return NAS_OK;
}

static void fail_event(nas_pool_event *ev, int64_t job_id, int worker, int status,
                       const char *msg)
{
    memset(ev, 0, sizeof *ev);
    ev->job_id = job_id;
    ev->worker = worker;
    ev->result.status = status;
    ev->result.val_accuracy = NAN;
    ev->result.test_accuracy = -1;
    ev->result.train_loss = NAN;
    ev->result.latency_ms = NAN;
    ev->result.train_seconds = NAN;
    snprintf(ev->result.error, sizeof ev->result.error, "%s", msg);
}

/* ---- the worker side --------------------------------------------------------- */

static int send_all(int fd, const uint8_t *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Read exactly n bytes; 0 on success, 1 on clean EOF before any byte, -1 on error. */
static int recv_all(int fd, uint8_t *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = recv(fd, buf + got, n - got, 0);
        if (r == 0)
            return got == 0 ? 1 : -1;
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

/* ---- NAS_FAULT: test-only fault injection (see search/pool_msg.h) ---- */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int nas__fault_applies(const char *spec, const char *kind, const nas_pool_job *job)
{
    if (!spec || !*spec)
        return 0;
    size_t klen = strlen(kind);
    const char *s = spec;
    while (*s) {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        char item[96];
        if (n < sizeof item) {
            memcpy(item, s, n);
            item[n] = '\0';
            if (strncmp(item, kind, klen) == 0 && item[klen] == '@') {
                char *rest;
                long long id = strtoll(item + klen + 1, &rest, 10);
                long upto = -1, after = -1;
                if (*rest == '/')
                    upto = strtol(rest + 1, &rest, 10);
                else if (*rest == '>')
                    after = strtol(rest + 1, &rest, 10);
                if (*rest == '\0' && id == job->id &&
                    (upto < 0 || (job->attempt > 0 && job->attempt <= upto)) &&
                    (after < 0 || job->attempt > after))
                    return 1;
            }
        }
        if (!end)
            break;
        s = end + 1;
    }
    return 0;
}

long nas__fault_nap(const char *key)
{
    const char *s = getenv("NAS_FAULT");
    size_t klen = strlen(key);
    while (s && *s) { /* an item that is exactly KEY=MS */
        if (strncmp(s, key, klen) == 0 && s[klen] == '=') {
            long ms = strtol(s + klen + 1, NULL, 10);
            if (ms > 0)
                sleep_ms(ms);
            return ms > 0 ? ms : 0;
        }
        s = strchr(s, ',');
        s = s ? s + 1 : NULL;
    }
    return 0;
}

static long fault_sleep_ms(const char *spec)
{
    const char *s = spec ? strstr(spec, "sleep_ms=") : NULL;
    return s ? strtol(s + 9, NULL, 10) : 0;
}

/* NAS_FAULT "jitter_ms=MS/SEED": a pseudo-random 0..MS ms for this job, a
 * hash (SplitMix64's finaliser) of SEED, the job id and the attempt, so a
 * seed gives the same delays in every run and other seeds other ones. */
static long fault_jitter_ms(const char *spec, const nas_pool_job *job)
{
    const char *s = spec ? strstr(spec, "jitter_ms=") : NULL;
    if (!s)
        return 0;
    char *rest;
    long ms = strtol(s + 10, &rest, 10);
    unsigned long long seed = *rest == '/' ? strtoull(rest + 1, NULL, 10) : 0;
    if (ms <= 0)
        return 0;
    uint64_t z = nas_rng_mix64(seed * NAS_RNG_GOLDEN + (uint64_t)job->id * 0xBF58476D1CE4E5B9ull +
                               (uint64_t)job->attempt);
    return (long)(z % (uint64_t)(ms + 1));
}

typedef struct job_progress {
    nas__msg_send_fn send;
    void *sctx;
    int64_t job_id;
    double interval;
    double last;
    int failed;
} job_progress;

static void job_progress_cb(void *pctx, double fraction, double loss)
{
    job_progress *jp = pctx;
    double t = now_s();
    if (jp->failed || (t - jp->last < jp->interval && fraction < 1.0))
        return;
    jp->last = t;
    uint8_t buf[NAS__MSG_HEADER + 32];
    size_t n = nas__msg_encode_progress(buf, jp->job_id, fraction, loss);
    if (jp->send(jp->sctx, buf, n) != 0)
        jp->failed = 1;
}

int nas__worker_job(nas_pool_job_fn fn, void *ctx, double progress_interval_s,
                    const nas_pool_job *job, nas__msg_send_fn send, void *sctx)
{
    const char *fault = getenv("NAS_FAULT"); /* test-only hook; see pool_msg.h */
    long nap = fault_sleep_ms(fault) + fault_jitter_ms(fault, job);
    if (nap > 0)
        sleep_ms(nap);
    if (nas__fault_applies(fault, "crash", job))
        raise(SIGSEGV);
    if (nas__fault_applies(fault, "abort", job))
        abort();
    if (nas__fault_applies(fault, "kill", job))
        raise(SIGKILL);
    if (nas__fault_applies(fault, "hang", job))
        raise(SIGSTOP);
    int gpuenv = nas__fault_applies(fault, "gpuenv", job);
    if (gpuenv || nas__fault_applies(fault, "reject", job)) {
        /* issue 7 test hook (gpuenv): fail the job with the GPU pinning the
         * worker runs under instead of training (tests/e2e/test_gpu_slots.sh);
         * issue 29 (reject): end it as a latency rejection, measured 1e6 ms
         * before training and not trained, whatever the machine's speed */
        nas_trial_result r;
        memset(&r, 0, sizeof r);
        r.status = gpuenv ? NAS_EBACKEND : NAS_OK;
        r.val_accuracy = NAN;
        r.test_accuracy = -1;
        r.train_loss = NAN;
        r.latency_ms = gpuenv ? NAN : 1e6;
        r.train_seconds = NAN;
        const char *v = getenv("CUDA_VISIBLE_DEVICES");
        if (gpuenv)
            snprintf(r.error, sizeof r.error,
                     "CUDA_VISIBLE_DEVICES=%s (reported by NAS_FAULT gpuenv)", v ? v : "(unset)");
        uint8_t rb[RBUF];
        size_t rn = nas__msg_encode_result(rb, job->id, &r);
        return send(sctx, rb, rn);
    }
    if (nas__fault_applies(fault, "spin", job))
        for (;;)
            sleep_ms(1000);
    if (nas__fault_applies(fault, "garbage", job)) {
        static const uint8_t junk[NAS__MSG_HEADER] = "GARBAGE!\xff\xff\xff";
        if (send(sctx, junk, sizeof junk) != 0)
            return -1;
        for (;;)
            sleep_ms(1000); /* the owner kills a worker that breaks the protocol */
    }
    job_progress jp = {send, sctx, job->id, progress_interval_s, 0.0, 0};
    nas_trial_result res;
    memset(&res, 0, sizeof res);
    res.test_accuracy = -1;
    int st = fn(ctx, job, job_progress_cb, &jp, &res);
    if (st != NAS_OK && res.status == NAS_OK)
        res.status = st;
    if (nas__fault_applies(fault, "nan", job)) {
        res.status = NAS_ENAN;
        res.val_accuracy = NAN;
        res.train_loss = NAN;
        snprintf(res.error, sizeof res.error,
                 "training diverged: the loss is NaN (injected by NAS_FAULT)");
    }
    if (nas__fault_applies(fault, "diverge", job) && res.status == NAS_OK) {
        res.train_loss = 1.1e10; /* issue 22: done, but diverged (nas_search_diverged) */
        res.val_accuracy = 0.125;
    }
    if (nas__fault_applies(fault, "chance", job) && res.status == NAS_OK)
        res.val_accuracy = 0.1; /* Fashion-MNIST's chance level, the loss as trained */
    if (jp.failed)
        return -1;
    uint8_t buf[RBUF];
    size_t n = nas__msg_encode_result(buf, job->id, &res);
    return send(sctx, buf, n);
}

/* A forked worker's link to its owner: the socket, and a mutex so the
 * heartbeat thread and the job never interleave their messages. */
typedef struct child_link {
    int fd;
    pthread_mutex_t mu;
    int64_t job_id; /* under mu; -1 when idle */
    int heartbeat_s;
} child_link;

static int child_send(void *sctx, const uint8_t *buf, size_t n)
{
    child_link *l = sctx;
    pthread_mutex_lock(&l->mu);
    int rc = send_all(l->fd, buf, n);
    pthread_mutex_unlock(&l->mu);
    return rc;
}

static void *child_heartbeat(void *arg)
{
    child_link *l = arg;
    for (;;) {
        sleep_ms(1000L * l->heartbeat_s);
        uint8_t buf[NAS__MSG_HEADER + 8];
        pthread_mutex_lock(&l->mu);
        size_t n = nas__msg_encode_heartbeat(buf, l->job_id);
        int rc = send_all(l->fd, buf, n);
        pthread_mutex_unlock(&l->mu);
        if (rc != 0)
            _exit(4); /* the owner is gone */
    }
    return NULL;
}

/* The worker process: read jobs until the socket closes. Never returns. */
static void child_main(nas_pool *p, int fd)
{
    uint8_t buf[RBUF]; /* 4 KiB, on the worker's stack */
    child_link link;
    link.fd = fd;
    link.job_id = -1;
    link.heartbeat_s = p->opts.heartbeat_s;
    pthread_mutex_init(&link.mu, NULL);
    if (link.heartbeat_s > 0) {
        pthread_t th;
        if (pthread_create(&th, NULL, child_heartbeat, &link) != 0)
            _exit(6);
        pthread_detach(th);
    }
    for (;;) {
        int rc = recv_all(fd, buf, NAS__MSG_HEADER);
        if (rc == 1)
            _exit(0);
        if (rc != 0)
            _exit(3);
        int type;
        uint32_t len;
        char why[128];
        if (nas__msg_header(buf, &type, &len, why, sizeof why) != NAS_OK || type != NAS__MSG_JOB)
            _exit(3);
        if (recv_all(fd, buf + NAS__MSG_HEADER, len) != 0)
            _exit(3);
        nas_pool_job job;
        if (nas__msg_decode_job(buf + NAS__MSG_HEADER, len, &job) != NAS_OK)
            _exit(3);
        pthread_mutex_lock(&link.mu);
        link.job_id = job.id;
        pthread_mutex_unlock(&link.mu);
        if (nas__worker_job(p->fn, p->ctx, p->opts.progress_interval_s, &job, child_send,
                            &link) != 0)
            _exit(4); /* the owner is gone */
        pthread_mutex_lock(&link.mu);
        link.job_id = -1;
        pthread_mutex_unlock(&link.mu);
    }
}

static void close_worker_fd(worker *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
}

static int spawn(nas_pool *p, int i, nas_error *err)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return nas_error_set(err, NAS_EWORKER, "worker %d: socketpair failed: %s", i,
                             strerror(errno));
    pid_t owner = getpid();
    fflush(NULL); /* no buffered output duplicated in the child */
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return nas_error_set(err, NAS_EWORKER, "worker %d: fork failed: %s", i, strerror(errno));
    }
    if (pid == 0) {
        /* Child: only its own end of its own socket stays open. */
        close(sv[0]);
        for (int j = 0; j < p->count; j++)
            close_worker_fd(&p->w[j]);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != owner)
            _exit(5);
        /* Ctrl-C and SIGTERM are the owner's to handle: a signal to the
         * whole process group (the terminal, `timeout`, `kill -- -PGID`,
         * Slurm, systemd) must not kill the workers under their trials
         * before the owner has noted the stop; the owner then cancels
         * (SIGKILL) what still runs, and PR_SET_PDEATHSIG ends a worker
         * whose owner died. */
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        /* A crash kills the worker, not some inherited handler. */
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
        signal(SIGFPE, SIG_DFL);
        signal(SIGILL, SIG_DFL);
        signal(SIGABRT, SIG_DFL);
        signal(SIGALRM, SIG_DFL);
        /* issue 7: this slot's GPU, before any job can initialise CUDA */
        if (p->gpu && p->gpu[i] >= 0 && setenv("CUDA_VISIBLE_DEVICES", p->gpu_env[i], 1) != 0)
            _exit(7);
        child_main(p, sv[1]);
        _exit(0);
    }
    close(sv[1]);
    worker *w = &p->w[i];
    w->pid = pid;
    w->fd = sv[0];
    w->state = W_IDLE;
    w->ready = 1; /* forked with the owner's evaluator: nothing to load */
    w->rlen = 0;
    w->job_id = -1;
    return NAS_OK;
}

/* Describe how process `pid` ended (waits for it). */
static void reap(worker *w, int idx, char *why, size_t n)
{
    int status = 0;
    pid_t r;
    do
        r = waitpid(w->pid, &status, 0);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        snprintf(why, n, "worker %d (pid %d) vanished", idx, (int)w->pid);
    else if (WIFSIGNALED(status))
        snprintf(why, n, "worker %d (pid %d) killed by signal %d (%s)", idx, (int)w->pid,
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status))
        snprintf(why, n, "worker %d (pid %d) exited with status %d", idx, (int)w->pid,
                 WEXITSTATUS(status));
    else
        snprintf(why, n, "worker %d (pid %d) ended", idx, (int)w->pid);
    w->pid = 0;
}

/* A worker is gone (or must go): kill it if asked, reap it, fail its job. */
static void worker_lost(nas_pool *p, int i, int kill_it, int status, const char *reason)
{
    worker *w = &p->w[i];
    char why[256];
    close_worker_fd(w);
    if (p->mpi) {
        snprintf(why, sizeof why, "MPI rank %d given up on; it gets no more jobs", i + 1);
        p->lost++;
    } else if (w->pid > 0) {
        if (kill_it)
            kill(w->pid, SIGKILL);
        reap(w, i, why, sizeof why);
    } else {
        snprintf(why, sizeof why, "worker %d ended", i);
    }
    if (w->state == W_BUSY) {
        nas_pool_event ev;
        char msg[512];
        if (reason)
            snprintf(msg, sizeof msg, "%s (%s)", reason, why);
        else
            snprintf(msg, sizeof msg, "%s", why);
        fail_event(&ev, w->job_id, i, status, msg);
        queue_push(p, &ev);
    }
    w->state = W_DEAD;
    w->rlen = 0;
    w->job_id = -1;
}

/* Parse every complete message in worker i's buffer. */
static void drain_messages(nas_pool *p, int i)
{
    worker *w = &p->w[i];
    while (w->rlen >= NAS__MSG_HEADER) {
        int type;
        uint32_t len;
        char why[160];
        int hrc = nas__msg_header(w->rbuf, &type, &len, why, sizeof why);
        if (hrc != NAS_OK || type == NAS__MSG_JOB || type == NAS__MSG_STOP ||
            type == NAS__MSG_NEXT || (type == NAS__MSG_READY && (!p->mpi || len != 4))) {
            char reason[200];
            snprintf(reason, sizeof reason, "protocol error from the worker: %s",
                     hrc != NAS_OK ? why : "unexpected job/stop/next/ready message");
            worker_lost(p, i, 1, NAS_EWORKER, reason);
            return;
        }
        if (w->rlen < NAS__MSG_HEADER + len)
            return;
        const uint8_t *pl = w->rbuf + NAS__MSG_HEADER;
        int64_t job_id;
        if (type == NAS__MSG_READY) {
            /* an MPI rank has built its evaluator: a job sent to it while it
             * loaded starts its clock now (search/pool_msg.h). A READY of
             * another generation is an earlier search's that no pool read
             * (a phase 2 with nothing left to do): ignored. */
            int gen = 0;
            if (nas__msg_decode_ready(pl, len, &gen) != NAS_OK) {
                worker_lost(p, i, 1, NAS_EWORKER, "protocol error from the worker: bad ready");
                return;
            }
            if (gen == p->opts.mpi_generation) {
                w->ready = 1;
                if (w->state == W_BUSY)
                    w->started = w->last_heard = pool_clock(p);
            }
        } else if (type == NAS__MSG_HEARTBEAT) {
            if (nas__msg_decode_heartbeat(pl, len, &job_id) != NAS_OK) {
                worker_lost(p, i, 1, NAS_EWORKER, "protocol error from the worker: bad heartbeat");
                return;
            }
        } else if (type == NAS__MSG_PROGRESS) {
            double fraction, loss;
            if (nas__msg_decode_progress(pl, len, &job_id, &fraction, &loss) != NAS_OK) {
                worker_lost(p, i, 1, NAS_EWORKER, "protocol error from the worker: bad progress");
                return;
            }
            if (w->state == W_BUSY && job_id == w->job_id && p->opts.on_progress)
                p->opts.on_progress(p->opts.user, job_id, i, fraction, loss);
        } else {
            nas_pool_event ev;
            memset(&ev, 0, sizeof ev);
            if (nas__msg_decode_result(pl, len, &job_id, &ev.result) != NAS_OK ||
                w->state != W_BUSY || job_id != w->job_id) {
                worker_lost(p, i, 1, NAS_EWORKER, "protocol error from the worker: bad result");
                return;
            }
            ev.job_id = job_id;
            ev.worker = i;
            queue_push(p, &ev);
            w->state = W_IDLE;
            w->job_id = -1;
        }
        size_t used = NAS__MSG_HEADER + len;
        memmove(w->rbuf, w->rbuf + used, w->rlen - used);
        w->rlen -= used;
    }
}

/* issue 7: copy opts->worker_gpu and turn each device into the
 * CUDA_VISIBLE_DEVICES value that exposes it alone (p->count set). */
static int set_gpus(nas_pool *p, const int *dev, nas_error *err)
{
    int n = p->count > 0 ? p->count : 1;
    p->gpu = malloc((size_t)n * sizeof *p->gpu);
    p->gpu_env = calloc((size_t)n, sizeof *p->gpu_env);
    if (!p->gpu || !p->gpu_env)
        return nas_error_set(err, NAS_ENOMEM, "pool: out of memory");
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    for (int i = 0; i < n; i++) {
        p->gpu[i] = dev[i] >= 0 ? dev[i] : -1;
        if (p->gpu[i] >= 0 &&
            nas__cuda_visible_value(visible, p->gpu[i], p->gpu_env[i], sizeof p->gpu_env[i]) != 0)
            return nas_error_set(err, NAS_ECONFIG,
                                 "pool: worker %d should run on CUDA device %d, but "
                                 "CUDA_VISIBLE_DEVICES=\"%s\" has no entry %d (device numbers "
                                 "in workers.gpus count within that list, from 0)",
                                 i, p->gpu[i], visible ? visible : "", p->gpu[i]);
    }
    /* in-process: this process runs the jobs, so it is the one to pin */
    if (p->count == 0 && p->gpu[0] >= 0 && setenv("CUDA_VISIBLE_DEVICES", p->gpu_env[0], 1) != 0)
        return nas_error_set(err, NAS_EWORKER, "pool: cannot set CUDA_VISIBLE_DEVICES=%s: %s",
                             p->gpu_env[0], strerror(errno));
    return NAS_OK;
}

int nas_pool_create(int count, nas_pool_job_fn fn, void *ctx, const nas_pool_opts *opts,
                    nas_pool **out, nas_error *err)
{
    *out = NULL;
    if (count < 0 || count > 1024 || !fn)
        return nas_error_set(err, NAS_EINVAL, "pool: invalid worker count %d", count);
    nas_pool *p = calloc(1, sizeof *p);
    if (!p)
        return nas_error_set(err, NAS_ENOMEM, "pool: out of memory");
    int world = nas__mpi_size();
    if (world > 1) { /* mpirun: the workers are ranks 1..world-1 */
        count = world - 1;
        p->mpi = 1;
    }
    p->count = count;
    p->fn = fn;
    p->ctx = ctx;
    if (opts)
        p->opts = *opts;
    if (p->opts.progress_interval_s <= 0)
        p->opts.progress_interval_s = 0.5;
    p->opts.worker_gpu = NULL; /* the pool keeps its own copy in p->gpu */
    if (opts && opts->worker_gpu && !p->mpi) {
        int rc = set_gpus(p, opts->worker_gpu, err);
        if (rc != NAS_OK) {
            free(p->gpu);
            free(p->gpu_env);
            free(p);
            return rc;
        }
    }
    if (count > 0) {
        p->w = calloc((size_t)count, sizeof *p->w);
        if (!p->w) {
            free(p->gpu);
            free(p->gpu_env);
            free(p);
            return nas_error_set(err, NAS_ENOMEM, "pool: out of memory");
        }
        for (int i = 0; i < count; i++)
            p->w[i].fd = -1;
        for (int i = 0; i < count && p->mpi; i++) {
            p->w[i].state = W_IDLE; /* takes jobs; ready = 0 until it says READY */
            p->w[i].job_id = -1;
        }
        for (int i = 0; i < count && !p->mpi; i++) {
            int rc = spawn(p, i, err);
            if (rc != NAS_OK) {
                nas_pool_destroy(p);
                return rc;
            }
        }
    }
    *out = p;
    return NAS_OK;
}

void nas_pool_destroy(nas_pool *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->count; i++) {
        worker *w = &p->w[i];
        close_worker_fd(w); /* an idle worker sees EOF and exits */
        if (w->pid > 0 && w->state == W_BUSY)
            kill(w->pid, SIGKILL);
    }
    double deadline = now_s() + 2.0;
    for (int i = 0; i < p->count; i++) {
        worker *w = &p->w[i];
        if (w->pid <= 0)
            continue;
        int status;
        while (waitpid(w->pid, &status, WNOHANG) == 0) {
            if (now_s() > deadline) {
                kill(w->pid, SIGKILL);
                waitpid(w->pid, &status, 0);
                break;
            }
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        w->pid = 0;
    }
    free(p->w);
    free(p->queue);
    free(p->gpu);
    free(p->gpu_env);
    free(p);
}

typedef struct inproc_progress {
    nas_pool *p;
    int64_t job_id;
    double last;
} inproc_progress;

static void inproc_progress_cb(void *pctx, double fraction, double loss)
{
    inproc_progress *ip = pctx;
    double t = now_s();
    if (t - ip->last < ip->p->opts.progress_interval_s && fraction < 1.0)
        return;
    ip->last = t;
    if (ip->p->opts.on_progress)
        ip->p->opts.on_progress(ip->p->opts.user, ip->job_id, 0, fraction, loss);
}

int nas_pool_next_worker(const nas_pool *p)
{
    if (p->count == 0)
        return (p->qlen == 0 && !p->inproc_busy) ? 0 : -1;
    if (nas_pool_idle(p) <= 0)
        return -1;
    if (p->gpu && !p->mpi) {
        /* issue 7: the free worker on the GPU running the fewest jobs
         * (ties: a running worker before one to restart, then the lowest
         * index), so the GPUs share the load like nas_placement_pick_slot */
        int best = -1, best_load = 0, best_idle = 0;
        for (int i = 0; i < p->count; i++) {
            if (p->w[i].state == W_BUSY)
                continue;
            int load = 0;
            for (int j = 0; j < p->count; j++)
                load += p->w[j].state == W_BUSY && p->gpu[j] == p->gpu[i];
            int idle = p->w[i].state == W_IDLE;
            if (best < 0 || load < best_load || (load == best_load && idle > best_idle)) {
                best = i;
                best_load = load;
                best_idle = idle;
            }
        }
        return best;
    }
    for (int i = 0; i < p->count; i++)
        if (p->w[i].state == W_IDLE)
            return i;
    for (int i = 0; i < p->count && !p->mpi; i++)
        if (p->w[i].state == W_DEAD)
            return i;
    return -1;
}

int nas_pool_submit(nas_pool *p, const nas_pool_job *job, int *worker_out, nas_error *err)
{
    if (worker_out)
        *worker_out = -1;
    if (p->count == 0) {
        if (p->qlen > 0 || p->inproc_busy)
            return nas_error_set(err, NAS_EBUSY, "pool: the in-process worker is busy");
        if (worker_out)
            *worker_out = 0;
        nas_pool_event ev;
        memset(&ev, 0, sizeof ev);
        ev.job_id = job->id;
        ev.worker = 0;
        ev.result.test_accuracy = -1;
        inproc_progress ip = {p, job->id, 0.0};
        p->inproc_busy = 1;
        int st = p->fn(p->ctx, job, inproc_progress_cb, &ip, &ev.result);
        p->inproc_busy = 0;
        if (st != NAS_OK && ev.result.status == NAS_OK)
            ev.result.status = st;
        if (queue_push(p, &ev) != NAS_OK)
            return nas_error_set(err, NAS_ENOMEM, "pool: out of memory");
        return NAS_OK;
    }
    attend(p);
    uint8_t buf[NAS__MSG_HEADER + NAS__MSG_MAX_PAYLOAD]; /* the encoders' contract */
    size_t n = nas__msg_encode_job(buf, job);
    char last[160] = "";
    /* issue 20: a worker can die between jobs (right after its result,
     * before its EOF was read): the send then fails (EPIPE). That worker
     * is replaced and the job goes to the replacement (or, under MPI, to
     * another rank); the job never ran, so nothing is failed or retried. */
    for (int tries = 0; tries <= p->count; tries++) {
        int pick = nas_pool_next_worker(p);
        if (pick < 0)
            break;
        worker *w = &p->w[pick];
        if (w->state == W_DEAD) {
            int rc = spawn(p, pick, err);
            if (rc != NAS_OK)
                return rc;
        }
        if (p->mpi ? nas__mpi_send(pick + 1, buf, n) == 0 : send_all(w->fd, buf, n) == 0) {
            w->state = W_BUSY;
            w->job_id = job->id;
            w->started = pool_clock(p);
            w->last_heard = w->started;
            if (worker_out)
                *worker_out = pick;
            return NAS_OK;
        }
        snprintf(last, sizeof last, "cannot send a job to worker %d: %s", pick,
                 p->mpi ? "MPI_Send failed" : strerror(errno));
        worker_lost(p, pick, 1, NAS_EWORKER, NULL); /* idle: no job of its own to fail */
    }
    if (last[0])
        return nas_error_set(err, NAS_EWORKER, "pool: %s", last);
    return nas_error_set(err, NAS_EBUSY, "pool: every worker is busy");
}

/* 1 while worker w, an MPI rank that has not said READY, is judged by its
 * heartbeats as it loads its data (heartbeats on). */
static int still_loading(const nas_pool *p, const worker *w)
{
    return !w->ready && p->opts.heartbeat_s > 0;
}

/* Seconds worker w's job may run from w->started (0: no limit):
 * job_timeout_s, but NAS__READY_WAIT_FACTOR x job_timeout_s for an MPI
 * rank that has not said READY while heartbeats are on (it beats while it
 * loads its data, which may take longer than a trial; READY restarts the
 * clock at job_timeout_s, and a load that never ends is still caught).
 * Without heartbeats the job's own limit runs from its submission. */
static double job_limit_s(const nas_pool *p, const worker *w)
{
    if (p->opts.job_timeout_s <= 0)
        return 0;
    return (still_loading(p, w) ? (double)NAS__READY_WAIT_FACTOR : 1.0) * p->opts.job_timeout_s;
}

/* Kill busy workers that missed 3 heartbeats or ran past the timeout
 * (on the pool's clock: time the owner was away does not count). */
static void check_timeouts(nas_pool *p)
{
    double t = pool_clock(p);
    if (p->opts.heartbeat_s > 0) {
        for (int i = 0; i < p->count; i++) {
            worker *w = &p->w[i];
            if (w->state == W_BUSY && t - w->last_heard >= 3.0 * p->opts.heartbeat_s) {
                char reason[160];
                snprintf(reason, sizeof reason,
                         "hung: no heartbeat for %.0f s (3 x workers.heartbeat_s = %d s)%s",
                         t - w->last_heard, p->opts.heartbeat_s, p->mpi ? "" : "; killed");
                worker_lost(p, i, 1, NAS_EWORKER, reason);
            }
        }
    }
    if (p->opts.job_timeout_s <= 0)
        return;
    for (int i = 0; i < p->count; i++) {
        worker *w = &p->w[i];
        double limit = job_limit_s(p, w);
        if (w->state == W_BUSY && t - w->started >= limit) {
            char reason[160];
            int loading = still_loading(p, w);
            if (!loading)
                snprintf(reason, sizeof reason, "timed out after %d s (trial_timeout_s)%s",
                         p->opts.job_timeout_s, p->mpi ? "" : "; killed");
            else
                snprintf(reason, sizeof reason, "still loading its data (no READY) after %.0f s "
                         "(%d x trial_timeout_s)", limit, NAS__READY_WAIT_FACTOR);
            /* a rank stuck in its load is the worker's fault, not the trial's */
            worker_lost(p, i, 1, loading ? NAS_EWORKER : NAS_ETIMEOUT, reason);
        }
    }
}

/* Read everything forked worker i has sent, without blocking, and parse
 * it. EOF or a socket error: the worker is gone (a busy one fails its
 * job; one that sent its RESULT first is idle and is just replaced). */
static void read_worker(nas_pool *p, int i)
{
    worker *w = &p->w[i];
    while (w->fd >= 0 && w->state != W_DEAD) {
        if (w->rlen >= RBUF) { /* cannot happen: drain_messages takes whole messages */
            worker_lost(p, i, 1, NAS_EWORKER, "protocol error from the worker: overlong message");
            return;
        }
        ssize_t got = recv(w->fd, w->rbuf + w->rlen, RBUF - w->rlen, MSG_DONTWAIT);
        if (got > 0) {
            w->last_heard = pool_clock(p);
            w->rlen += (size_t)got;
            drain_messages(p, i);
        } else if (got < 0 && errno == EINTR) {
            continue;
        } else if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;
        } else {
            worker_lost(p, i, 0, NAS_EWORKER, NULL);
            return;
        }
    }
}

/* Read every message that is waiting, from every worker, without
 * blocking (issue 20: before any timeout or heartbeat is judged, so a
 * result or heartbeat sent while the owner was busy elsewhere counts).
 * NAS_OK, or NAS_EWORKER when poll/MPI failed. */
static int read_all(nas_pool *p, nas_error *err)
{
    if (p->mpi) {
        for (int k = 0; k < 100000; k++) { /* bounded: a flood cannot starve the owner */
            int src;
            size_t got = 0;
            uint8_t mbuf[RBUF];
            int r = nas__mpi_poll(&src, mbuf, sizeof mbuf, &got);
            if (r < 0)
                return nas_error_set(err, NAS_EWORKER, "pool: MPI receive failed");
            if (r == 0)
                break;
            if (src < 1 || src > p->count || p->w[src - 1].state == W_DEAD)
                continue; /* a rank given up on: ignored */
            worker *w = &p->w[src - 1];
            w->last_heard = pool_clock(p);
            if (got > RBUF - w->rlen) {
                worker_lost(p, src - 1, 1, NAS_EWORKER, "protocol error: oversized message");
            } else {
                memcpy(w->rbuf + w->rlen, mbuf, got);
                w->rlen += got;
                drain_messages(p, src - 1);
            }
        }
        return NAS_OK;
    }
    struct pollfd fds[1024];
    int map[1024];
    int nf = 0;
    for (int i = 0; i < p->count; i++) {
        if (p->w[i].fd >= 0 && p->w[i].state != W_DEAD) {
            fds[nf].fd = p->w[i].fd;
            fds[nf].events = POLLIN;
            fds[nf].revents = 0;
            map[nf++] = i;
        }
    }
    if (nf == 0)
        return NAS_OK;
    int r;
    do
        r = poll(fds, (nfds_t)nf, 0);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return nas_error_set(err, NAS_EWORKER, "pool: poll failed: %s", strerror(errno));
    for (int k = 0; k < nf && r > 0; k++)
        if (fds[k].revents)
            read_worker(p, map[k]);
    return NAS_OK;
}

/* Sleep at most ms milliseconds (-1: no limit; MPI: 2 ms naps) or until a
 * worker's socket is readable. Issue 20: the owner's stop flag is checked
 * with every signal blocked, and ppoll() unblocks them only while it
 * sleeps, so a stop signal that arrives after the owner's last check ends
 * the sleep at once instead of after the timeout. NAS_OK, NAS_EINTR (a
 * signal arrived, or the stop flag is set), NAS_EWORKER. */
static int sleep_until_message(nas_pool *p, int ms, nas_error *err)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    if (p->opts.stop && *p->opts.stop) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return nas_error_set(err, NAS_EINTR, "pool: the owner is stopping");
    }
    struct pollfd fds[1024];
    int nf = 0;
    for (int i = 0; i < p->count && !p->mpi; i++) {
        if (p->w[i].fd >= 0 && p->w[i].state != W_DEAD) {
            fds[nf].fd = p->w[i].fd;
            fds[nf].events = POLLIN;
            fds[nf].revents = 0;
            nf++;
        }
    }
    if (p->mpi && ms != 0) /* MPI: nothing to block on; nap 2 ms */
        ms = 2;
    struct timespec ts = {ms > 0 ? ms / 1000 : 0, ms > 0 ? (ms % 1000) * 1000000L : 0};
    int r = ppoll(nf > 0 ? fds : NULL, (nfds_t)nf, ms < 0 ? NULL : &ts, &old);
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r < 0) {
        if (e == EINTR)
            return nas_error_set(err, NAS_EINTR, "pool: interrupted by a signal");
        return nas_error_set(err, NAS_EWORKER, "pool: poll failed: %s", strerror(e));
    }
    return NAS_OK;
}

int nas_pool_wait(nas_pool *p, int timeout_ms, nas_pool_event *ev, nas_error *err)
{
    double deadline = timeout_ms < 0 ? INFINITY : now_s() + timeout_ms / 1000.0;
    for (;;) {
        if (p->count > 0) {
            attend(p);
            int rc = read_all(p, err); /* first: what is in the sockets counts */
            if (rc != NAS_OK)
                return rc;
            check_timeouts(p);
        }
        if (p->qlen > 0) {
            *ev = p->queue[p->qhead];
            p->qhead = (p->qhead + 1) % p->qcap;
            p->qlen--;
            if (p->count > 0)
                attend(p);
            return NAS_OK;
        }
        if (nas_pool_busy(p) == 0)
            return nas_error_set(err, NAS_ENOTFOUND, "pool: no job in flight");
        double t = now_s();
        if (t >= deadline)
            return nas_error_set(err, NAS_ETIMEOUT, "pool: no result within %d ms", timeout_ms);
        /* Sleep until a message, the caller's deadline or a job's deadline
         * (pool clock), and never more than SLICE_MS at a time: a longer
         * gap between two looks at the clock is a stall of the owner
         * (stopped, waiting for a lock), which attend() leaves out. */
        double until = deadline - t;
        double pc = pool_clock(p);
        for (int i = 0; i < p->count; i++) {
            const worker *w = &p->w[i];
            if (w->state != W_BUSY)
                continue;
            double limit = job_limit_s(p, w);
            if (limit > 0 && w->started + limit - pc < until)
                until = w->started + limit - pc;
            if (p->opts.heartbeat_s > 0 && w->last_heard + 3.0 * p->opts.heartbeat_s - pc < until)
                until = w->last_heard + 3.0 * p->opts.heartbeat_s - pc;
        }
        int ms = -1;
        if (isfinite(until))
            ms = until <= 0 ? 0 : (int)ceil(until * 1000.0);
        if (ms < 0 || ms > SLICE_MS)
            ms = SLICE_MS;
        p->allow = ms / 1000.0 + SLICE_SLACK_S;
        int rc = sleep_until_message(p, ms, err);
        if (rc != NAS_OK) {
            attend(p);
            return rc;
        }
    }
}

int nas_pool_size(const nas_pool *p) { return p->count > 0 ? p->count : 1; }

int nas_pool_idle(const nas_pool *p)
{
    if (p->count == 0)
        return (p->qlen == 0 && !p->inproc_busy) ? 1 : 0;
    int n = 0;
    for (int i = 0; i < p->count; i++)
        if (p->w[i].state == W_IDLE || (p->w[i].state == W_DEAD && !p->mpi))
            n++;
    /* Results not yet collected hold their slot, so the owner collects
     * before it proposes more. */
    n -= p->qlen;
    return n > 0 ? n : 0;
}

int nas_pool_busy(const nas_pool *p)
{
    int n = p->qlen + (p->count == 0 ? p->inproc_busy : 0);
    for (int i = 0; i < p->count; i++)
        if (p->w[i].state == W_BUSY)
            n++;
    return n;
}

int nas_pool_worker_pid(const nas_pool *p, int i)
{
    if (p->count == 0)
        return i == 0 ? (int)getpid() : 0;
    if (i < 0 || i >= p->count)
        return 0;
    return (int)p->w[i].pid;
}

int nas_pool_cancel(nas_pool *p, int64_t *job_ids, int cap)
{
    int n = 0;
    while (p->qlen > 0) {
        if (n < cap)
            job_ids[n] = p->queue[p->qhead].job_id;
        n++;
        p->qhead = (p->qhead + 1) % p->qcap;
        p->qlen--;
    }
    for (int i = 0; i < p->count; i++) {
        worker *w = &p->w[i];
        if (w->state != W_BUSY)
            continue;
        if (n < cap)
            job_ids[n] = w->job_id;
        n++;
        w->state = W_IDLE; /* so worker_lost queues nothing */
        worker_lost(p, i, 1, NAS_EINTR, NULL);
    }
    return n;
}
