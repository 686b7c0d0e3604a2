/*
 * search/pool_msg.h - the controller <-> worker wire format (private),
 * shared by the socket-pair pool (search/pool.c) and the Open MPI
 * transport (search/pool_mpi.c).
 *
 * Every message is a 12-byte header followed by `length` payload bytes:
 *   u32 magic "NASP" (0x5053414E little-endian), u16 version, u16 type,
 *   u32 length (<= NAS__MSG_MAX_PAYLOAD).
 * All integers little-endian; doubles as their IEEE-754 bit pattern in a
 * u64. Payloads (version 2):
 *   JOB       i64 job id, u32 attempt, u32 n, n x u8 tokens
 *   PROGRESS  i64 job id, f64 fraction, f64 loss
 *   RESULT    i64 job id, i32 status, f64 val_accuracy, f64 test_accuracy,
 *             f64 train_loss, i64 macs, i64 params, f64 latency_ms,
 *             f64 train_seconds, i32 epochs, u32 n, n bytes of error text
 *   HEARTBEAT i64 job id (-1 when idle)
 *   STOP      (empty) the owner tells an MPI worker rank to exit
 *   NEXT      u32 n, n bytes: the owner tells an MPI worker rank that its
 *             search is over and another follows in the same job (a
 *             one-shot search's phase 3, issue 32): the experiment's name
 *             (1..NAS_NAME_MAX-1 bytes, no NUL). The rank builds the
 *             evaluator for that search, then serves its jobs until STOP.
 *   READY     u32 generation: an MPI worker rank has built its evaluator
 *             for the search it serves and takes jobs (sent once a search,
 *             before any of its results); generation counts the NEXTs the
 *             rank had received (0: the job's first search), so a READY
 *             left unread by an earlier search (a phase 2 with nothing to
 *             do) is told apart and ignored. Rank 0 may have sent the rank
 *             jobs before: they wait in MPI's queue while the rank loads its
 *             data, which can take longer than on rank 0 (a data cache on
 *             rank 0's node only, a slower node, a search after NEXT). Until
 *             READY, with heartbeats on (the rank beats while it loads), such
 *             a job may run NAS__READY_WAIT_FACTOR x trial_timeout_s from its
 *             submission (a load that never ends is still caught); READY
 *             restarts its trial_timeout_s clock.
 * A receiver checks magic, version, type, length and that the payload has
 * exactly the size its type implies; anything else is a protocol error and
 * the sender is treated as broken (its job fails, it is replaced).
 *
 * Version history: 1 had no attempt in JOB and no HEARTBEAT/STOP; 3 added
 * the job's budget, 4 the budget its checkpoint holds, 5 NEXT, 6 READY.
 */
#ifndef NAS_SEARCH_POOL_MSG_H
#define NAS_SEARCH_POOL_MSG_H

#include <stddef.h>
#include <stdint.h>
#include "nas/search.h"

#define NAS__MSG_MAGIC 0x5053414Eu /* "NASP" */
#define NAS__MSG_VERSION 6 /* 3: the job carries its budget (issue 17); 4: and the budget
                              its checkpoint holds (issue 29); 5: NEXT (issue 32); 6: READY */
#define NAS__MSG_HEADER 12
#define NAS__MSG_MAX_PAYLOAD 4096

enum {
    NAS__MSG_JOB = 1,
    NAS__MSG_PROGRESS = 2,
    NAS__MSG_RESULT = 3,
    NAS__MSG_HEARTBEAT = 4,
    NAS__MSG_STOP = 5,
    NAS__MSG_NEXT = 6,
    NAS__MSG_READY = 7
};

/* Encoders write header + payload into buf (at least NAS__MSG_HEADER +
 * NAS__MSG_MAX_PAYLOAD bytes) and return the total size. */
size_t nas__msg_encode_job(uint8_t *buf, const nas_pool_job *job);
size_t nas__msg_encode_progress(uint8_t *buf, int64_t job_id, double fraction, double loss);
size_t nas__msg_encode_result(uint8_t *buf, int64_t job_id, const nas_trial_result *res);
size_t nas__msg_encode_heartbeat(uint8_t *buf, int64_t job_id);
size_t nas__msg_encode_stop(uint8_t *buf);
/* NEXT: name is cut to NAS_NAME_MAX - 1 bytes. */
size_t nas__msg_encode_next(uint8_t *buf, const char *name);
size_t nas__msg_encode_ready(uint8_t *buf, int generation);
/* Before its READY, a rank's job may run this many x trial_timeout_s from
 * its submission (with heartbeats on): loading is allowed longer than a
 * trial, never forever. */
#define NAS__READY_WAIT_FACTOR 10

/* Parse a header: NAS_OK with *type and *length, or NAS_EFORMAT with a
 * reason in `why`. */
int nas__msg_header(const uint8_t *buf, int *type, uint32_t *length, char *why, size_t n);

/* Decode payloads (after a valid header). NAS_OK or NAS_EFORMAT. */
int nas__msg_decode_job(const uint8_t *p, uint32_t len, nas_pool_job *job);
int nas__msg_decode_progress(const uint8_t *p, uint32_t len, int64_t *job_id, double *fraction,
                             double *loss);
int nas__msg_decode_result(const uint8_t *p, uint32_t len, int64_t *job_id,
                           nas_trial_result *res);
int nas__msg_decode_heartbeat(const uint8_t *p, uint32_t len, int64_t *job_id);
/* NEXT into name (NAS_NAME_MAX bytes, NUL-terminated); NAS_EFORMAT for an
 * empty or overlong name, one with a NUL byte, or a length that differs. */
int nas__msg_decode_next(const uint8_t *p, uint32_t len, char name[NAS_NAME_MAX]);
/* READY's generation; NAS_EFORMAT unless the payload is 4 bytes. */
int nas__msg_decode_ready(const uint8_t *p, uint32_t len, int *generation);

/*
 * The worker side of one job, for any transport: apply the NAS_FAULT test
 * hook (see nas__fault_before), run fn, encode the RESULT and hand it to
 * `send`. Progress reports go through `send` too, at most one per
 * progress_interval_s. `send(sctx, bytes, n)` returns 0 or -1 (the owner
 * is gone: the worker exits). Returns 0, or -1 when a send failed.
 */
typedef int (*nas__msg_send_fn)(void *sctx, const uint8_t *buf, size_t n);
int nas__worker_job(nas_pool_job_fn fn, void *ctx, double progress_interval_s,
                    const nas_pool_job *job, nas__msg_send_fn send, void *sctx);

/*
 * NAS_FAULT (test-only fault injection, read by workers before each job):
 * a comma-separated list of
 *   KIND@TRIAL      the fault hits every attempt of job (trial) id TRIAL
 *   KIND@TRIAL/N    ... only its first N attempts (so a retry succeeds)
 *   KIND@TRIAL>N    ... only its attempts after the first N (a multi-fidelity
 *                   trial's promotions: its first rung is attempt 1)
 *   sleep_ms=MS     every job first sleeps MS milliseconds (slows a search)
 *   jitter_ms=MS/SEED  every job first sleeps a pseudo-random 0..MS ms, a
 *                   function of SEED, the job id and the attempt (reorders
 *                   the results of several workers; added to sleep_ms)
 * KIND: crash (SIGSEGV), abort (SIGABRT), kill (SIGKILL, as the OOM killer
 * does), hang (SIGSTOP: the whole worker freezes, heartbeats stop), spin
 * (the job never ends but heartbeats go on: trial_timeout_s catches it),
 * nan (the job "trains" to a NaN loss), diverge (the job ends done with
 * train_loss 1.1e10 and val_accuracy 0.125, a diverged trial: issue 22),
 * garbage (the worker sends a
 * malformed message instead of its result), gpuenv (the job fails at once
 * with "CUDA_VISIBLE_DEVICES=<value the worker runs with>": issue 7's
 * per-slot GPU pinning, testable without a GPU), reject (the job ends at
 * once as a latency rejection: done, untrained, latency_ms 1e6, as
 * constraints.latency_ms rejects a cell before training; issue 29), slow
 * (read by the job itself, search/dispatch.c: its latency measurements,
 * before and after training, read 1e6 ms, as on a machine busy at that
 * moment; a promotion, admitted at its trial's first rung, is not measured
 * before training and keeps the admitted latency).
 * Read elsewhere, not by workers (issue 32, the one-shot search's crash
 * windows): phase_gap_ms=MS (search/oneshot.c: the controller sleeps MS ms
 * between phase 2 and phase 3, where the run lock must hold) and
 * supernet_kill@E (evaluator/supernet_eval.c: the phase-1 child dies by
 * SIGKILL after appending epoch E's curve row, before that epoch's
 * checkpoint is written); supernet_weights_kill (evaluator/supernet_eval.c:
 * the phase-1 child dies by SIGKILL once the weights file's temporary copy
 * is written, before it is renamed into place); next_load_ms=MS
 * (search/controller.c: an MPI worker rank told NEXT sleeps MS ms before it
 * builds the next search's evaluator, as a rank whose data load is slower
 * than rank 0's does). Unknown items are ignored. Returns nonzero when
 * `kind` applies to `job`.
 */
int nas__fault_applies(const char *spec, const char *kind, const nas_pool_job *job);
/* NAS_FAULT's item KEY=MS (KEY one of the *_ms hooks read outside the
 * workers' jobs above): sleep MS milliseconds and return MS; 0 (no sleep)
 * when NAS_FAULT has no such item. */
long nas__fault_nap(const char *key);

/* ---- Open MPI transport (search/pool_mpi.c; stubs without NAS_HAVE_MPI) ---- */

/* Initialise MPI when launched by mpirun/srun: *rank, *size (size 0: not
 * an MPI run, or a single rank) and *local_rank (nas_mpi_local_rank over
 * OMPI_COMM_WORLD_LOCAL_RANK and the MPI_COMM_TYPE_SHARED split rank,
 * which every rank computes here since the split is collective; 0 without
 * MPI). *threads (issue 20): 1 when MPI_Init_thread provided
 * MPI_THREAD_SERIALIZED or more, which the worker ranks' heartbeat thread
 * needs (it calls MPI beside the main thread); 0 otherwise: then no rank
 * may use heartbeats. Issue 32: when MPI is already initialised (an earlier
 * search of this process started it: a one-shot search's phase 3 follows
 * its phase 2 in the same job) no collective call is made (a rank lost in
 * the earlier search would hang it) and *local_rank is -1: the process
 * placed itself (its GPU) when it started MPI. Errors: NAS_EWORKER. */
int nas__mpi_start(int *rank, int *size, int *local_rank, int *threads, nas_error *err);
/* World size of an MPI run (0: none). */
int nas__mpi_size(void);
/* End MPI: with lost_ranks == 0, rank 0 sends every worker rank STOP,
 * then MPI_Finalize; otherwise MPI_Abort(MPI_COMM_WORLD, exit_code) (a
 * lost rank never reaches MPI_Finalize), which does not return. */
void nas__mpi_stop(int lost_ranks, int exit_code);
/* Send one message to `rank`: 0 or -1. */
int nas__mpi_send(int rank, const uint8_t *buf, size_t n);
/* Receive one waiting message if any: 1 (message from *src, *n bytes), 0
 * (none waiting), -1 (MPI error). */
int nas__mpi_poll(int *src, uint8_t *buf, size_t cap, size_t *n);
/* MPI ranks the pool gave up on (frozen, broke the protocol). */
int nas__pool_lost(const nas_pool *p);
/*
 * Under MPI, before the worker rank's evaluator opens its backend: when
 * cfg's placement (nas_placement_resolve over nas_devices_query) is CUDA,
 * pick this rank's GPU (nas_placement_rank_device of its local rank) and
 * restrict the process to it with CUDA_VISIBLE_DEVICES (translated through
 * a CUDA_VISIBLE_DEVICES already set, e.g. by Slurm), so the backend's
 * device 0 is that GPU. Writes what it chose (or why not) into note (may
 * be NULL). Returns the CUDA ordinal chosen, or -1 (CPU placement, no
 * CUDA, or the placement is invalid: the evaluator then reports the
 * problem on every trial).
 */
int nas__mpi_pick_gpu(const nas_config *cfg, int local_rank, char *note, size_t n);
/*
 * The CUDA_VISIBLE_DEVICES value that exposes only device `ordinal` as
 * the process sees it now: entry `ordinal` of the comma-separated list
 * `visible` (the current CUDA_VISIBLE_DEVICES; an index or a GPU UUID),
 * or the ordinal in decimal when `visible` is NULL or empty. Writes it to
 * buf (n bytes). Returns 0, or -1 when the list has no such entry or buf
 * is too small. Pure (search/placement.c).
 */
int nas__cuda_visible_value(const char *visible, int ordinal, char *buf, size_t n);
/* A worker rank: start the heartbeat thread (heartbeat_s > 0), run
 * setup(setup_ctx, err) (the evaluator's construction: the data load) while
 * it beats, send READY (with `generation`: the NEXTs received before this
 * search), then run jobs from rank 0 until STOP or NEXT.
 * NAS_OK (next holds NEXT's experiment name, or "" after STOP) or the
 * failure (setup's; NAS_EWORKER: MPI failed; NAS_EFORMAT: a malformed or
 * unexpected message, with its type). next has NAS_NAME_MAX bytes. */
typedef int (*nas__mpi_setup_fn)(void *setup_ctx, nas_error *err);
int nas__mpi_serve(nas__mpi_setup_fn setup, void *setup_ctx, int generation, nas_pool_job_fn fn,
                   void *ctx, double progress_interval_s, int heartbeat_s, char next[NAS_NAME_MAX],
                   nas_error *err);
/* Rank 0 (issue 32): tell every worker rank that the search it served is
 * over and the search of experiment `name` follows in this job (NEXT);
 * they serve it until nas__mpi_stop. Errors: NAS_EWORKER naming the rank
 * that could not be sent to; NAS_EINVAL without MPI. */
int nas__mpi_next(const char *name, nas_error *err);

#endif
