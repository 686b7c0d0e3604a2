/*
 * search/pool_mpi.c - the Open MPI transport of the worker pool (issue 4).
 *
 * `mpirun -n K nas run space.conf`: every rank runs `nas run`; rank 0 is
 * the controller (the only one that opens the database), ranks 1..K-1
 * serve jobs (nas__mpi_serve) until rank 0 sends STOP (or NEXT, issue 32:
 * a one-shot search's phase 3 follows, served the same way). Messages are the
 * pool's wire format (search/pool_msg.h), one MPI message each, tag 7 on
 * MPI_COMM_WORLD, validated on receipt like socket messages.
 *
 * Worker ranks send a HEARTBEAT every heartbeat_s seconds from a second
 * thread (MPI_THREAD_SERIALIZED: one mutex serialises every MPI call of
 * the rank, and the main thread polls with MPI_Iprobe instead of blocking
 * in MPI_Recv). The thread starts before the rank builds its evaluator
 * (nas__mpi_serve's setup: the data load), so a rank beats while it
 * loads, and says READY when it is built (protocol 6): rank 0 may have
 * sent it jobs already (it does not wait for the ranks), whose
 * trial_timeout_s clock then starts at READY (search/pool.c). This matters
 * where a rank loads slower than rank 0: its data cache missing on its
 * node, and in a one-shot search's phase 3, which every rank starts after
 * NEXT while rank 0 starts sending jobs as soon as its own load is done.
 * Rank 0 declares a busy rank lost after 3 missed heartbeats or
 * trial_timeout_s: its trial fails and the rank gets no more jobs (MPI
 * cannot restart a rank).
 *
 * What Open MPI allows: by default, when a rank dies (crash, kill -9, OOM
 * killer) mpirun aborts the whole job, rank 0 included; the database stays
 * consistent and `nas run` resumes (trials left running are re-run). A
 * frozen or unreachable rank does not abort the job: rank 0 fails its
 * trial and goes on; since such a rank can never reach MPI_Finalize, rank
 * 0 ends the job with MPI_Abort once the database is closed and the
 * summary printed (nas_search_mpi_finish), with the run's exit code (issue
 * 20). When every worker rank is lost the search ends with "no workers
 * remain" (its unfinished trials interrupted; a new mpirun resumes). Surviving a
 * dead rank needs ULFM (Open MPI 5 built --with-ft=ulfm, run with
 * --with-ft ulfm / --enable-recovery), which this transport does not use.
 *
 * Without NAS_HAVE_MPI this file provides stubs: nas__mpi_start reports
 * size 0 and nas run works as a single process.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "search/pool_msg.h"

/* Set by Open MPI's mpirun, Slurm's srun (PMI/PMIx) or MPICH's launchers. */
static int launched_by_mpi(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE",
                                       "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]))
            return 1;
    return 0;
}

/* GPU of a worker rank (issue 4; docs/cluster.md "GPUs under MPI"). */
int nas__mpi_pick_gpu(const nas_config *cfg, int local_rank, char *note, size_t n)
{
    char scratch[8];
    if (!note || n == 0) {
        note = scratch;
        n = sizeof scratch;
    }
    note[0] = '\0';
    const char *be = cfg->proxy.backend[0] ? cfg->proxy.backend : "auto";
    if (strcmp(be, "cpu") == 0 || strcmp(be, "ref") == 0 || strcmp(cfg->workers.device, "cpu") == 0) {
        snprintf(note, n, "CPU (proxy.backend = \"%s\")", be);
        return -1;
    }
    nas_device_info devs[NAS_MAX_DEVICES];
    int n_cuda = 0;
    nas_error qerr = {0};
    if (nas_devices_query(NAS_DEVICE_CUDA, devs, NAS_MAX_DEVICES, &n_cuda, &qerr) != NAS_OK)
        n_cuda = 0;
    nas_placement p;
    nas_error perr;
    if (nas_placement_resolve(cfg, n_cuda, qerr.msg, &p, &perr) != NAS_OK) {
        snprintf(note, n, "no GPU picked: %s", perr.msg);
        return -1;
    }
    int dev = nas_placement_rank_device(&p, local_rank);
    if (dev < 0) {
        snprintf(note, n, "CPU (no CUDA device)");
        return -1;
    }
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    char value[256];
    if (nas__cuda_visible_value(visible, dev, value, sizeof value) != 0 ||
        setenv("CUDA_VISIBLE_DEVICES", value, 1) != 0) {
        snprintf(note, n, "GPU %d, but CUDA_VISIBLE_DEVICES could not be set (was \"%s\")", dev,
                 visible ? visible : "");
        return -1;
    }
    snprintf(note, n, "GPU %d of workers.gpus (local rank %d; CUDA_VISIBLE_DEVICES=%s)", dev,
             local_rank, value);
    return dev;
}

#ifdef NAS_HAVE_MPI
#include <mpi.h>
#include <pthread.h>

#define TAG 7

int nas__mpi_start(int *rank, int *size, int *local_rank, int *threads, nas_error *err)
{
    *rank = 0;
    *size = 0;
    *local_rank = 0;
    *threads = 1;
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (fin)
        return NAS_OK;
    int again = init; /* issue 32: this process started MPI in an earlier search */
    if (!init) {
        if (!launched_by_mpi())
            return NAS_OK;
        int provided = 0;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
            return nas_error_set(err, NAS_EWORKER, "MPI_Init_thread failed");
        /* issue 20: a library without thread support may provide less;
         * then a second thread must not call MPI (no heartbeats) */
        *threads = provided >= MPI_THREAD_SERIALIZED;
    } else {
        int provided = 0;
        MPI_Query_thread(&provided);
        *threads = provided >= MPI_THREAD_SERIALIZED;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    if (*size < 2) {
        *size = 0; /* one rank: an ordinary local run */
        return NAS_OK;
    }
    if (again) { /* no collective call: a rank lost earlier would never join it */
        *local_rank = -1;
        return NAS_OK;
    }
    /* The local rank: OMPI_COMM_WORLD_LOCAL_RANK under Open MPI's mpirun,
     * else the rank among the processes sharing this node's memory (the
     * split is collective: every rank makes it, here, right after init). */
    int shared = -1;
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_rank(node, &shared);
        MPI_Comm_free(&node);
    }
    *local_rank = nas_mpi_local_rank(getenv("OMPI_COMM_WORLD_LOCAL_RANK"), shared);
    return NAS_OK;
}

int nas__mpi_size(void)
{
    int init = 0, fin = 0, size = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin)
        return 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return size > 1 ? size : 0;
}

void nas__mpi_stop(int lost_ranks, int exit_code)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin)
        return;
    if (lost_ranks > 0) { /* a lost rank never reaches MPI_Finalize */
        fflush(NULL);
        MPI_Abort(MPI_COMM_WORLD, exit_code);
    }
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) { /* the controller: every worker rank may go */
        uint8_t buf[NAS__MSG_HEADER];
        size_t n = nas__msg_encode_stop(buf);
        for (int r = 1; r < size; r++)
            nas__mpi_send(r, buf, n);
    }
    MPI_Finalize();
}

int nas__mpi_send(int rank, const uint8_t *buf, size_t n)
{
    return MPI_Send(buf, (int)n, MPI_BYTE, rank, TAG, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

int nas__mpi_poll(int *src, uint8_t *buf, size_t cap, size_t *n)
{
    int flag = 0;
    MPI_Status s;
    if (MPI_Iprobe(MPI_ANY_SOURCE, TAG, MPI_COMM_WORLD, &flag, &s) != MPI_SUCCESS)
        return -1;
    if (!flag)
        return 0;
    int count = 0;
    MPI_Get_count(&s, MPI_BYTE, &count);
    if (count < 0 || (size_t)count > cap) {
        /* Too big to be ours: receive into a scratch buffer, report it
         * truncated so the caller sees a protocol error. */
        uint8_t *tmp = malloc(count > 0 ? (size_t)count : 1);
        if (!tmp)
            return -1;
        MPI_Recv(tmp, count, MPI_BYTE, s.MPI_SOURCE, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        memcpy(buf, tmp, cap);
        free(tmp);
        *n = cap;
    } else {
        MPI_Recv(buf, count, MPI_BYTE, s.MPI_SOURCE, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        *n = (size_t)count;
    }
    *src = s.MPI_SOURCE;
    return 1;
}

typedef struct rank_link {
    pthread_mutex_t mu;
    int64_t job_id;
    int heartbeat_s;
    int stop;
} rank_link;

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int rank_send(void *sctx, const uint8_t *buf, size_t n)
{
    rank_link *l = sctx;
    pthread_mutex_lock(&l->mu);
    int rc = nas__mpi_send(0, buf, n);
    pthread_mutex_unlock(&l->mu);
    return rc;
}

static void *rank_heartbeat(void *arg)
{
    rank_link *l = arg;
    for (;;) {
        for (int i = 0; i < 10 * l->heartbeat_s; i++) {
            nap_ms(100);
            pthread_mutex_lock(&l->mu);
            int stop = l->stop;
            pthread_mutex_unlock(&l->mu);
            if (stop)
                return NULL;
        }
        uint8_t buf[NAS__MSG_HEADER + 8];
        pthread_mutex_lock(&l->mu);
        size_t n = nas__msg_encode_heartbeat(buf, l->job_id);
        if (!l->stop)
            nas__mpi_send(0, buf, n);
        pthread_mutex_unlock(&l->mu);
    }
}

int nas__mpi_next(const char *name, nas_error *err)
{
    int size = nas__mpi_size();
    if (size < 2)
        return nas_error_set(err, NAS_EINVAL, "MPI: no worker rank to tell about '%s'", name);
    uint8_t buf[NAS__MSG_HEADER + 4 + NAS_NAME_MAX];
    size_t n = nas__msg_encode_next(buf, name);
    for (int r = 1; r < size; r++)
        if (nas__mpi_send(r, buf, n) != 0)
            return nas_error_set(err, NAS_EWORKER, "MPI: cannot send rank %d the next search "
                                 "('%s'): MPI_Send failed", r, name);
    return NAS_OK;
}

int nas__mpi_serve(nas__mpi_setup_fn setup, void *setup_ctx, int generation, nas_pool_job_fn fn,
                   void *ctx, double progress_interval_s, int heartbeat_s, char next[NAS_NAME_MAX],
                   nas_error *err)
{
    next[0] = '\0';
    rank_link l;
    pthread_mutex_init(&l.mu, NULL);
    l.job_id = -1;
    l.heartbeat_s = heartbeat_s;
    l.stop = 0;
    pthread_t th;
    int have_thread = heartbeat_s > 0 && pthread_create(&th, NULL, rank_heartbeat, &l) == 0;
    uint8_t buf[NAS__MSG_HEADER + NAS__MSG_MAX_PAYLOAD];
    /* the evaluator is built while the thread beats, then READY (pool_msg.h) */
    int rc = setup ? setup(setup_ctx, err) : NAS_OK;
    if (rc == NAS_OK && rank_send(&l, buf, nas__msg_encode_ready(buf, generation)) != 0)
        rc = nas_error_set(err, NAS_EWORKER, "MPI worker: cannot send READY to rank 0");
    while (rc == NAS_OK) {
        int src = -1;
        size_t n = 0;
        pthread_mutex_lock(&l.mu);
        int got = nas__mpi_poll(&src, buf, sizeof buf, &n);
        pthread_mutex_unlock(&l.mu);
        if (got < 0) {
            rc = nas_error_set(err, NAS_EWORKER, "MPI worker: receive failed");
            break;
        }
        if (got == 0) {
            nap_ms(2);
            continue;
        }
        int type;
        uint32_t len;
        char why[128];
        if (src != 0 || n < NAS__MSG_HEADER ||
            nas__msg_header(buf, &type, &len, why, sizeof why) != NAS_OK ||
            n != NAS__MSG_HEADER + len) {
            rc = nas_error_set(err, NAS_EFORMAT, "MPI worker: malformed message from rank %d",
                               src);
            break;
        }
        if (type == NAS__MSG_STOP)
            break;
        if (type == NAS__MSG_NEXT) { /* issue 32: another search follows in this job */
            if (nas__msg_decode_next(buf + NAS__MSG_HEADER, len, next) != NAS_OK)
                rc = nas_error_set(err, NAS_EFORMAT, "MPI worker: malformed NEXT message "
                                   "(%u bytes) from rank 0", (unsigned)len);
            break;
        }
        nas_pool_job job;
        if (type != NAS__MSG_JOB || nas__msg_decode_job(buf + NAS__MSG_HEADER, len, &job) != NAS_OK) {
            rc = nas_error_set(err, NAS_EFORMAT, "MPI worker: unexpected message type %d", type);
            break;
        }
        pthread_mutex_lock(&l.mu);
        l.job_id = job.id;
        pthread_mutex_unlock(&l.mu);
        if (nas__worker_job(fn, ctx, progress_interval_s, &job, rank_send, &l) != 0) {
            rc = nas_error_set(err, NAS_EWORKER, "MPI worker: cannot send to rank 0");
            break;
        }
        pthread_mutex_lock(&l.mu);
        l.job_id = -1;
        pthread_mutex_unlock(&l.mu);
    }
    pthread_mutex_lock(&l.mu);
    l.stop = 1;
    pthread_mutex_unlock(&l.mu);
    if (have_thread)
        pthread_join(th, NULL);
    pthread_mutex_destroy(&l.mu);
    return rc;
}

#else /* !NAS_HAVE_MPI */

int nas__mpi_start(int *rank, int *size, int *local_rank, int *threads, nas_error *err)
{
    (void)err;
    *rank = 0;
    *size = 0;
    *local_rank = 0;
    *threads = 1;
    (void)launched_by_mpi;
    return NAS_OK;
}
int nas__mpi_size(void) { return 0; }
void nas__mpi_stop(int lost_ranks, int exit_code)
{
    (void)lost_ranks;
    (void)exit_code;
}
int nas__mpi_send(int rank, const uint8_t *buf, size_t n)
{
    (void)rank;
    (void)buf;
    (void)n;
    return -1;
}
int nas__mpi_poll(int *src, uint8_t *buf, size_t cap, size_t *n)
{
    (void)src;
    (void)buf;
    (void)cap;
    (void)n;
    return -1;
}
int nas__mpi_next(const char *name, nas_error *err)
{
    (void)name;
    return nas_error_set(err, NAS_EINVAL, "this nas was built without Open MPI");
}
int nas__mpi_serve(nas__mpi_setup_fn setup, void *setup_ctx, int generation, nas_pool_job_fn fn,
                   void *ctx, double progress_interval_s, int heartbeat_s, char next[NAS_NAME_MAX],
                   nas_error *err)
{
    next[0] = '\0';
    (void)setup;
    (void)setup_ctx;
    (void)generation;
    (void)fn;
    (void)ctx;
    (void)progress_interval_s;
    (void)heartbeat_s;
    return nas_error_set(err, NAS_EINVAL, "this nas was built without Open MPI");
}

#endif
