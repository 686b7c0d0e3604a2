/*
 * nas/search.h - search strategies, the worker pool and the controller.
 *
 * A strategy proposes genotypes and observes their results; it never sees
 * the store or the workers. Strategies are deterministic functions of
 * (config, seed, sequence of observations): replaying a finished search's
 * observations in trial order rebuilds the exact state, which is how a
 * resumed run continues the same search.
 *
 * Strategies: random search; regularized (aging) evolution (Real, Aggarwal,
 * Huang, Le, "Regularized Evolution for Image Classifier Architecture
 * Search", AAAI 2019); NAO (Luo, Tian, Qin, Chen, Liu, "Neural
 * Architecture Optimization", NeurIPS 2018).
 */
#ifndef NAS_SEARCH_H
#define NAS_SEARCH_H

#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include "nas/space.h"
#include "nas/evaluator.h"
#include "nas/store.h" /* nas_store: nas_run_opts.on_trial */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- strategies ---------------------------------------------------------- */

typedef struct nas_strategy nas_strategy; /* opaque; see search/strategy_impl.h */

/*
 * Create the strategy named by cfg->search.strategy over `space`, seeded
 * from cfg->seed. The strategy keeps pointers to `cfg` and `space`, which
 * must outlive it. Errors: NAS_EINVAL, NAS_ENOMEM.
 */
int nas_strategy_create(const nas_config *cfg, const nas_space *space, nas_strategy **out,
                        nas_error *err);
void nas_strategy_destroy(nas_strategy *s); /* NULL is a no-op */
const char *nas_strategy_name(const nas_strategy *s);

/*
 * Propose the next genotype to evaluate. The controller discards proposals
 * whose canonical key was already evaluated and asks again; `is_known`
 * (may be NULL) lets a strategy ask the controller that itself.
 * Errors: NAS_EINFEASIBLE when the strategy cannot find anything new.
 */
typedef int (*nas_known_fn)(void *ctx, const nas_genotype *g);
int nas_strategy_propose(nas_strategy *s, nas_known_fn is_known, void *known_ctx,
                         nas_genotype *out, nas_error *err);

/* Report a result: `score` is the objective to maximise (NaN for a failed
 * trial). Called once per finished trial, in trial order. */
void nas_strategy_observe(nas_strategy *s, const nas_genotype *g, double score);

/*
 * Report a finished trial with everything it measured (optional richer form
 * of nas_strategy_observe; call one or the other per trial, never both).
 * Strategies that optimise several objectives (evolution when
 * cfg->n_objectives > 1) read the metrics from `res`; every other strategy
 * gets nas_strategy_observe(s, g, nas_search_score(cfg, res, NULL, 0)), so
 * for them both calls are equivalent. What each strategy does with several
 * objectives (docs/report.md): random ignores them; evolution selects
 * parents by non-dominated rank, then crowding distance (NSGA-II, Deb et
 * al. 2002) within its aging population; NAO trains its predictor on the
 * scalar score (the first objective, constraints as NaN).
 */
void nas_strategy_observe_result(nas_strategy *s, const nas_genotype *g,
                                 const nas_trial_result *res);

/*
 * Where the most recent proposal came from, for trial.proposed_by: the
 * strategy's name ("random", "evolution", "nao"), except for NAO's
 * uniform samples: "nao-seed" for the first search.nao.seed_archs
 * proposals (before the model is used) and "nao-random" for a uniform
 * sample drawn later because no model candidate was left (issue 22).
 * Never NULL.
 */
const char *nas_strategy_origin(const nas_strategy *s);

/*
 * Issue 33 (search.enqueue): the controller proposed g itself, in place of
 * a call of nas_strategy_propose, and will have it evaluated and observed
 * like the strategy's own proposals. The strategy counts it as one of its
 * proposals: evolution among the P random samples of its initial
 * population, NAO among its search.nao.seed_archs seed architectures
 * (and it never proposes g's key again); random search ignores it. So
 * enqueued genotypes take the place of random seeds, and each strategy
 * learns from their results (observe) as from its own.
 */
void nas_strategy_enqueued(nas_strategy *s, const nas_genotype *g);

/*
 * Issue 31: the zero-cost score the strategy's move proposal
 * (search.evolution.move_proposal) ranks candidates by, in place of
 * computing search.evolution.move_proposal.proxy (nas_zc_scorer): fn(ctx,
 * g) returns the score of g, larger better, NaN when unknown (never
 * chosen). For a study that reads precomputed scores
 * (experiments/strategy-study). NULL fn: the proxy again. Strategies
 * without a move proposal ignore it.
 */
typedef double (*nas_proxy_fn)(void *ctx, const nas_genotype *g);
void nas_strategy_set_proxy(nas_strategy *s, nas_proxy_fn fn, void *ctx);

/*
 * Issue 31, search.warmup: the candidates a warm-up scores - up to n
 * valid genotypes of `space` with distinct canonical keys, drawn with
 * PCG32(cfg->seed, stream "warm") (fewer only when the space has fewer
 * within 20 n + 1000 draws) - into out[n], in draw order. `nas run`
 * scores these (search/warmup.c); a study that reads precomputed scores
 * draws the same ones. Returns how many, or a negative nas_status
 * (-NAS_ENOMEM) with err set.
 */
int nas_warmup_candidates(const nas_config *cfg, const nas_space *space, int n, nas_genotype *out,
                          nas_error *err);

/* The last model round of a strategy that trains a model (NAO), for the
 * one-line-per-round progress report (issue 22). */
typedef struct nas_strategy_round {
    long round;        /* rounds so far (1-based number of the last one) */
    int n_train;       /* results the model was trained on */
    double loss;       /* final epoch's mean joint loss (predictor + lambda-weighted
                          reconstruction, search/nao_model.h) */
    int n_heldout;     /* results observed since the previous round, predicted by the
                          previous round's model before it ever saw them */
    double tau;        /* Kendall's tau-b between those predictions and the results
                          (NaN with fewer than 2 held-back results or no previous model) */
    int n_decoded;     /* distinct new valid candidates decoded (trust region applied) */
    int n_neighbours;  /* candidates from single-token neighbours (empty decode pool) */
    int n_queued;      /* best predicted candidates queued as proposals */
    int n_random;      /* uniform samples queued because the pool was empty */
} nas_strategy_round;

/* *out = the last round; returns its number (out->round), 0 when the
 * strategy trains no model or has not had a round yet (out zeroed). */
long nas_strategy_last_round(const nas_strategy *s, nas_strategy_round *out);

/*
 * Issue 29: replaying a strategy that trains a model (NAO) without training
 * every round again. nas_strategy_round_log gives a malloc'd text (the
 * caller frees; NULL: the strategy keeps none, or has had no round) that
 * records each round's place in the proposals and a checksum of what it
 * queued; the controller stores it (strategy_state "strategy.rounds").
 * Before replaying n stored trials, nas_strategy_replay_hint hands the
 * strategy their genotypes in trial order and the stored log (log may be
 * NULL); a round whose whole queue is among those trials and matches the
 * log's checksum is then rebuilt from them, its random draws reproduced,
 * without training, so the proposals are those of the run. Call it with
 * n = 0 after the replay. The reported Kendall tau of the first rounds
 * after such a replay covers fewer held-back results. Strategies without
 * a model ignore both. Errors: NAS_ENOMEM (the hint is then ignored).
 */
char *nas_strategy_round_log(const nas_strategy *s);
int nas_strategy_replay_hint(nas_strategy *s, const nas_genotype *stored, int n, const char *log,
                             nas_error *err);

/* ---- worker pool ------------------------------------------------------------ */

/*
 * A pool runs jobs (one trial each) on workers and hands back their results.
 * count == 0: in-process; nas_pool_submit runs the job at once and queues
 * its result (one job at a time; no timeout). count >= 1: that many forked
 * worker processes. Fork after the job context (the evaluator, with its
 * data set) is built, so workers share it copy-on-write. Jobs and results
 * travel over one socket pair per worker as length-prefixed messages
 * (magic "NASP", version, type, length, payload; validated on receipt; see
 * search/pool_msg.h). A worker that dies fails its job with the reason
 * ("worker 0 (pid 123) killed by signal 11 (Segmentation fault)") and is
 * replaced before the next job; a job running longer than the timeout is
 * killed and failed with NAS_ETIMEOUT. Workers ignore SIGINT: the owner
 * decides what a Ctrl-C means (nas_pool_cancel).
 */
typedef struct nas_pool nas_pool; /* opaque */

typedef struct nas_pool_job {
    int64_t id;            /* the caller's id for the job (the trial id) */
    nas_genotype genotype; /* what to evaluate */
    int attempt;           /* 1 for the first run of this job, 2 for its first retry, ...
                              (0 = unknown; only the NAS_FAULT test hook reads it) */
    int budget;            /* issue 17: > 0: a rung of multi-fidelity search - train to this
                              many epochs of search.fidelity.max, continuing from the
                              trial's checkpoint; 0: the whole proxy recipe */
    int from;              /* issue 29: > 0: a promotion, whose checkpoint must hold this
                              many epochs (a worker that cannot read it fails the job
                              instead of training from 0 unsaid); 0: none needed */
} nas_pool_job;

/* Report progress from inside a job: fraction done in [0,1], last loss. */
typedef void (*nas_pool_progress_fn)(void *pctx, double fraction, double loss);

/* Evaluate one job (in a worker process, or in-process for count 0); fill
 * *res (res->status < 0 and res->error on failure) and return res->status. */
typedef int (*nas_pool_job_fn)(void *ctx, const nas_pool_job *job, nas_pool_progress_fn progress,
                               void *pctx, nas_trial_result *res);

typedef struct nas_pool_opts {
    int job_timeout_s;          /* 0 = none (forked workers only) */
    double progress_interval_s; /* least time between progress reports; 0 = 0.5 s */
    /* Called (in the owner's process, from submit or wait) with a job's
     * progress; may be NULL. */
    void (*on_progress)(void *user, int64_t job_id, int worker, double fraction, double loss);
    void *user;
    /* Forked workers send a heartbeat every heartbeat_s seconds from a
     * thread of their own; a busy worker silent for 3 x heartbeat_s (a
     * frozen process: stopped, swapped to death, lost rank) is killed and
     * its job failed with NAS_EWORKER. 0 = no heartbeats. */
    int heartbeat_s;
    /* issue 7: the CUDA device of each worker slot, or NULL (no GPU
     * placement: nothing changes). worker_gpu[i] (count entries; 1 when
     * count is 0) is the CUDA ordinal worker i trains on
     * (nas_placement_slot_device), -1 for "leave it alone". Forked worker
     * i - and every replacement of it after a crash - sets
     * CUDA_VISIBLE_DEVICES to that device alone before any job runs,
     * translated through the owner's CUDA_VISIBLE_DEVICES list
     * (nas__cuda_visible_value), so the backend's device 0 is the slot's
     * GPU; in-process (count 0) the calling process does so. Submit then
     * gives a job to an idle worker on the GPU running the fewest jobs.
     * Copied by nas_pool_create; ignored under MPI (ranks pick their own
     * GPU). nas_pool_create fails with NAS_ECONFIG when a device is not in
     * the owner's CUDA_VISIBLE_DEVICES list. */
    const int *worker_gpu;
    /* issue 20: the owner's stop flag (set by its signal handler), or
     * NULL. nas_pool_wait returns NAS_EINTR as soon as it is set, also
     * when the signal arrived just before the wait began or went to
     * another thread: it checks the flag with signals blocked and sleeps
     * in ppoll(), which unblocks them atomically. */
    volatile sig_atomic_t *stop;
    /* issue 32, MPI only: which search of the job this pool serves (0 the
     * first; 1 after NEXT, a one-shot search's phase 3). A rank's READY of
     * another generation is an earlier search's, left unread, and ignored
     * (search/pool_msg.h). */
    int mpi_generation;
} nas_pool_opts;

typedef struct nas_pool_event {
    int64_t job_id;
    int worker;              /* index 0..count-1 (0 in-process) */
    nas_trial_result result; /* result.status < 0: the job failed, result.error says why */
} nas_pool_event;

/* Create the pool (forks `count` workers now). opts may be NULL.
 * Errors: NAS_EINVAL, NAS_ENOMEM, NAS_EWORKER (fork or socketpair failed). */
int nas_pool_create(int count, nas_pool_job_fn fn, void *ctx, const nas_pool_opts *opts,
                    nas_pool **out, nas_error *err);

/* Kill every worker (busy ones with SIGKILL) and reap them. NULL is a no-op. */
void nas_pool_destroy(nas_pool *p);

/* Give `job` to an idle worker; *worker (may be NULL) gets its index.
 * Errors: NAS_EBUSY (no idle worker), NAS_EWORKER (cannot start a worker). */
int nas_pool_submit(nas_pool *p, const nas_pool_job *job, int *worker, nas_error *err);

/*
 * Wait up to timeout_ms (-1: no limit) for a finished job. NAS_OK: *ev
 * holds it. NAS_ETIMEOUT: nothing finished in time. NAS_EINTR: a signal
 * arrived (check your stop flag). NAS_ENOTFOUND: no job is in flight.
 */
int nas_pool_wait(nas_pool *p, int timeout_ms, nas_pool_event *ev, nas_error *err);

int nas_pool_size(const nas_pool *p);    /* workers (1 in-process) */
int nas_pool_idle(const nas_pool *p);    /* workers that can take a job now */
int nas_pool_busy(const nas_pool *p);    /* jobs in flight (incl. unread results) */
/* Index of the worker the next nas_pool_submit will use, or -1 if none is
 * idle (lets the owner record the assignment before an in-process job runs). */
int nas_pool_next_worker(const nas_pool *p);
/* Process id of worker i (0 when it is not running; getpid() in-process). */
int nas_pool_worker_pid(const nas_pool *p, int i);

/* Stop every job in flight now (SIGKILL its worker; replaced on the next
 * submit). Writes up to `cap` ids of the stopped jobs, returns their count;
 * queued unread results are dropped. */
int nas_pool_cancel(nas_pool *p, int64_t *job_ids, int cap);

/* ---- the controller -------------------------------------------------------- */

/* Issue 33: the value *nas_run_opts.stop takes when search.time_limit
 * stops the search (a signal handler stores the signal number). */
#define NAS_STOP_TIME_LIMIT (-1)

typedef struct nas_run_opts {
    const char *db_path;          /* results database (created when missing) */
    int quiet;                    /* 1: no live progress */
    volatile sig_atomic_t *stop;  /* set non-zero (by a signal handler) to stop; may be NULL.
                                     Issue 33: the search sets it to NAS_STOP_TIME_LIMIT
                                     itself when search.time_limit is reached */
    FILE *log;                    /* progress output; NULL = stderr */
    /* issue 22: the experiment to run under another name than cfg's (NULL
     * or "": cfg->experiment), and 1 to start a new experiment even when
     * that name exists (it becomes NAME-2, or the next free number) */
    const char *experiment;
    int new_experiment;
    /* issue 33: called on the controller's thread each time a trial's
     * result has been recorded in the store (done, failed, rejected, or a
     * transient failure queued for a retry), with the store (read it only:
     * it is the run's own connection) and the experiment's id; NULL: none.
     * It reports nothing back: its failures are its own. `nas run --report
     * FILE` rewrites the HTML report here (the search does not know the
     * report, which sits above it). */
    void (*on_trial)(void *user, nas_store *st, int64_t experiment_id);
    void *on_trial_user;
    /* 1: cfg->search.time_limit came from the command line (`nas run
     * --time-limit`), so the time-limit messages name that flag instead of
     * the setting; 0: from the config */
    int time_limit_from_cli;
    /* issue 32, set by the one-shot search, 0 for callers: which search of
     * an MPI job this is (1: the finalists' search after NEXT), so a
     * rank's READY is matched to it (nas_pool_opts.mpi_generation) */
    int mpi_generation;
} nas_run_opts;

typedef struct nas_run_summary {
    int64_t experiment_id;
    char experiment[NAS_NAME_MAX]; /* its name (another than cfg's with --new or --experiment) */
    int resumed;          /* 1: the experiment existed; finished trials were replayed */
    int replay_mismatch;  /* replayed proposals that differed from the stored genotype */
    int budget;           /* search.trials */
    int done, failed;     /* finished trials of the experiment (all runs) */
    int diverged;         /* done trials flagged diverged (nas_search_diverged; all runs) */
    int rejected;         /* trials over constraints.latency_ms: measured, not trained,
                             outside the budget (all runs) */
    int interrupted;      /* trials stopped by this run's Ctrl-C */
    int interrupted_promotions; /* issue 29: multi-fidelity promotions it stopped (their
                                   trials stay done at their last rung) */
    int unfinished;       /* issue 29: the experiment's trials left pending, running or
                             interrupted (by any run; as nas query counts them) */
    int not_proposed;     /* issue 29: trials of the budget not yet proposed */
    int ran;              /* trials finished in this run */
    int stopped;          /* 1: stopped by *opts->stop */
    int time_limit;       /* issue 33: 1: stopped by search.time_limit (then stopped is 1,
                             and the status NAS_EINTR) */
    double time_limit_s;  /* ... the limit, in seconds (0: none) */
    int exhausted;        /* 1: the strategy found nothing new before the budget */
    int rejected_spent;   /* issue 29: 1: a multi-fidelity search ended with fewer finished
                             trials than the budget because latency rejections used up
                             its scheduler's search.trials new trials */
    double wall_s;        /* this run */
    int64_t best_trial;   /* -1 when nothing succeeded */
    char best_genotype[NAS_GENOTYPE_STR_MAX];
    double best_val_accuracy;
    char db_path[NAS_PATH_MAX];
    int mpi_worker;       /* 1: this process was an MPI worker rank (nothing to report) */
    /* issue 32: an MPI worker rank whose rank 0 goes on to another search
     * in the same job (a one-shot search's phase 3): that search's
     * experiment, which the rank serves next (MPI is not ended); "" when
     * the rank has ended MPI */
    char mpi_next[NAS_NAME_MAX];
    int mpi_ranks;        /* issue 20: worker ranks of an MPI run, as rank 0 (0: no MPI) */
    int mpi_lost;         /* issue 20: of them, ranks given up on or still in a job */
    /* issue 32: after a supernet search's phase 3 the summary is its
     * finalists experiment's ("NAME-finalists"); this names the experiment a
     * rerun of the same command resumes (the supernet search's; "" for any
     * other search: `experiment`) */
    char parent_experiment[NAS_NAME_MAX];
} nas_run_summary;

/*
 * Run, resume or extend the search `cfg` describes, writing every trial to
 * the database: open the store, find the experiment by its name (issue 22;
 * opts->experiment, opts->new_experiment), refuse a run whose defining
 * settings (nas_config_key_defining) differ from the stored ones (the keys
 * are listed on opts->log, even when quiet), check the space, the placement
 * and the data, then create the experiment or record this run's running
 * settings (search.trials may grow: the experiment is extended), replay
 * finished trials through the strategy (each under the number of workers it
 * was proposed with), re-queue unfinished ones, then propose / dedupe by
 * canonical key / evaluate on the pool / record / observe until
 * search.trials trials are done or failed.
 * Progress goes to opts->log. *summary (may be NULL) is filled in every case.
 * Issue 32, evaluator.kind = "supernet" (docs/one-shot.md): the supernet
 * is trained first (phase 1, in a forked child, checkpointed every epoch
 * in DB.supernet/), the trials are its subnets (phase 2), and then the
 * best supernet.retrain_top are retrained stand-alone as the experiment
 * "NAME-finalists" (phase 3, search/oneshot.c; under mpirun on the
 * worker ranks too), whose summary *summary then holds (parent_experiment
 * names the supernet search).
 * One `nas run` per database: a run lock is held from the store's opening
 * to the return, across every phase (NAS_EBUSY "database D is in use by
 * another `nas run` ..." when another run holds it).
 * Returns NAS_OK (also when trials failed: summary->done and ->failed say
 * how many), NAS_EINTR (stopped: finished trials kept, running ones marked
 * interrupted), NAS_ECONFIG (changed defining settings: nothing written),
 * or the failure (NAS_EDB, NAS_EIO, ... with err).
 */
int nas_search_run(const nas_config *cfg, const nas_run_opts *opts, nas_run_summary *summary,
                   nas_error *err);

/*
 * Under mpirun, rank 0 ends the MPI job: call it after nas_search_run once
 * the summary is reported, with the process's exit code (issue 20: so the
 * summary and the resume hint are printed, and mpirun exits with that
 * code: 0, 130 after a stop, 1 after a failure). With every worker rank
 * idle it sends them STOP and calls MPI_Finalize (the caller then returns
 * exit_code); when a rank was given up on (frozen: it can never reach
 * MPI_Finalize) or is still in a job cut short by a stop, it calls
 * MPI_Abort(MPI_COMM_WORLD, exit_code) and does not return. No-op without
 * MPI (summary->mpi_ranks == 0) and for worker ranks (nas_search_run ends
 * MPI on them itself).
 */
void nas_search_mpi_finish(const nas_run_summary *summary, int exit_code);

/* The score a strategy observes for a result under cfg's first objective
 * (val_accuracy when none): larger is better; NaN for failed trials and
 * trials that violate a constraint (then `note`, if non-NULL and n > 0,
 * says which). */
double nas_search_score(const nas_config *cfg, const nas_trial_result *res, char *note, size_t n);

/*
 * Issue 22: 1 when a done trial's training diverged (it stays done, with
 * trial.flag = 'diverged'; docs/schema.md): its train_loss is not finite or
 * above 10 ln C nats (23.03 for Fashion-MNIST's C = 10 classes; a uniform
 * guess scores ln C = 2.30) - for table look-ups only when a loss was
 * recorded - or, for trained trials, its val_accuracy is at chance level:
 * at most 1/C + 3 standard errors of a guess over data.valid images,
 * 1/C + 3 sqrt((1/C)(1 - 1/C) / valid) (0.1127 for 5000 images); no
 * chance-level check when that bound is 1 or more (too few images). Failed
 * and latency-rejected trials are never diverged. `why` (may be NULL) gets
 * the reason ("diverged: train_loss ..."). C = `classes`, the data's
 * class count (issue 16; < 2 means Fashion-MNIST's 10); `valid` the
 * number of validation images (nas_evaluator_valid_count; 0: data.valid
 * as a count, and no chance-level check when data.valid is a fraction;
 * < 0: no chance-level check, as for a multi-fidelity rung below the
 * maximum budget, where a short training may not have learned yet).
 */
int nas_search_diverged(const nas_config *cfg, int classes, int valid, const nas_trial_result *res,
                        char *why, size_t n);

/* ---- devices and placement (search/placement.c) ---------------------------- */

typedef enum nas_device_kind { NAS_DEVICE_CPU = 0, NAS_DEVICE_CUDA = 1 } nas_device_kind;

#define NAS_MAX_DEVICES 16

/* One device a backend can run on. */
typedef struct nas_device_info {
    nas_device_kind kind;
    int index;              /* CUDA device ordinal; 0 for the CPU */
    char name[256];         /* "NVIDIA A100-SXM4-80GB"; CPU model name */
    uint64_t memory_bytes;  /* device global memory; host RAM for the CPU (0 if unknown) */
    int cc_major, cc_minor; /* CUDA compute capability; 0.0 for the CPU */
    int units;              /* streaming multiprocessors (CUDA); online CPU threads */
} nas_device_info;

/*
 * List the devices of `kind`: up to `max` entries into `out` (may be NULL
 * when max is 0), the number found into *count.
 * CPU: one entry, model name from /proc/cpuinfo ("unknown CPU" if absent),
 * threads from sysconf(_SC_NPROCESSORS_ONLN), RAM from sysconf.
 * CUDA: every device cudaGetDeviceCount reports, with name, memory and
 * compute capability (cudaGetDeviceProperties). The CUDA query runs in a
 * short-lived child process so the caller's process never initialises
 * CUDA (a process that initialised CUDA cannot use it in fork()ed
 * workers).
 * Errors (with *count = 0 and the reason in err): NAS_ENOTFOUND "CUDA
 * backend not compiled in (...)"; NAS_ENODEV "no CUDA device: <reason
 * from the CUDA runtime>", e.g. "CUDA driver version is insufficient for
 * CUDA runtime version (cudaErrorInsufficientDriver)" on a machine with the
 * toolkit but no driver.
 */
int nas_devices_query(nas_device_kind kind, nas_device_info *out, int max, int *count,
                      nas_error *err);

/* Where the trials of a search run, resolved from the `workers` and `proxy`
 * groups of space.conf and the number of CUDA devices present. */
typedef struct nas_placement {
    nas_device_kind kind;        /* CPU or CUDA */
    char backend[NAS_NAME_MAX];  /* name for nas_backend_create: "cpu", "ref" or "cuda" */
    int n_gpus;                  /* GPUs used (0 for the CPU) */
    int gpus[NAS_MAX_DEVICES];   /* their CUDA ordinals, in config order */
    int trials_per_gpu;          /* concurrent trials per GPU (CUDA), else 0 */
    int slots;                   /* concurrent trials in all: n_gpus*trials_per_gpu
                                    (CUDA); workers.count, at least 1 (CPU) */
} nas_placement;

/*
 * Resolve the placement of cfg's trials given `n_cuda` CUDA devices present
 * (from nas_devices_query, or a fake count in tests) and, when n_cuda is 0,
 * `no_cuda_reason` (the nas_devices_query message; may be NULL).
 * Rules: workers.device "cpu" -> proxy.backend ("cpu", "ref"; "auto" or ""
 * -> "cpu"); "cuda" (or proxy.backend "cuda") -> the CUDA backend on
 * workers.gpus ("all" or no list: every device) with trials_per_gpu
 * trials each (0 means 1); "auto" (or "") -> CUDA when n_cuda > 0, else the
 * CPU.
 * Errors: NAS_ENODEV "workers.device = \"cuda\" but no CUDA device is
 * present (<reason>)..."; NAS_ECONFIG for a GPU index outside 0..n_cuda-1,
 * a repeated index, trials_per_gpu < 0, an unknown device name or
 * device "cuda" with proxy.backend "ref"; NAS_EUNSUPPORTED for
 * proxy.precision "fp16" when the trials run on the CPU (fp16 with loss
 * scaling is CUDA-only; fp32 and bf16 are placed on both).
 */
int nas_placement_resolve(const nas_config *cfg, int n_cuda, const char *no_cuda_reason,
                          nas_placement *out, nas_error *err);

/*
 * Device of worker slot `slot` (0 <= slot < p->slots): the CUDA ordinal
 * gpus[slot % n_gpus] (round robin, so the first n_gpus trials land on
 * different GPUs), 0 for the CPU; -1 when slot is out of range.
 */
int nas_placement_slot_device(const nas_placement *p, int slot);

/*
 * The free slot a new trial should take: among slots with busy[slot] == 0,
 * one on the GPU running the fewest trials (ties: the GPU listed first,
 * then the lowest slot). busy has p->slots entries. Returns -1 when every
 * slot is busy (at most trials_per_gpu trials run on one GPU at once).
 */
int nas_placement_pick_slot(const nas_placement *p, const unsigned char *busy);

/*
 * The local rank of an MPI process (its index among the ranks of the job
 * on the same node; issue 4, docs/cluster.md "GPUs under MPI"):
 * `env_local_rank` (the value of OMPI_COMM_WORLD_LOCAL_RANK, set by Open
 * MPI's mpirun; may be NULL) when it is a decimal integer in 0..1000000;
 * else `shared_rank` (the rank in the communicator that
 * MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, ...) returns,
 * which every MPI-3 launcher supports, srun included) when >= 0; else 0.
 * Pure: no MPI call, no environment read. Never fails.
 */
int nas_mpi_local_rank(const char *env_local_rank, int shared_rank);

/*
 * The CUDA ordinal an MPI worker rank trains on: p->gpus[local_rank %
 * p->n_gpus] (workers.gpus in config order, or every device for "all"), so
 * the ranks of one node spread over its GPUs round robin and share them
 * once there are more ranks than GPUs (each rank runs one trial at a time;
 * workers.trials_per_gpu does not apply under MPI). Local rank 0 of the
 * first node is the controller and never trains. Returns -1 when p is not
 * a CUDA placement (the CPU: no GPU to pick), has no GPU, or local_rank < 0.
 * Pure arithmetic over p (tests pass fake placements).
 */
int nas_placement_rank_device(const nas_placement *p, int local_rank);

/* ---- proxy check (issue 30; search/proxy_check.c, docs/proxy.md) ------------ */

/*
 * One-way random-effects analysis (Shrout & Fleiss, "Intraclass
 * correlations: uses in assessing rater reliability", Psychol. Bull. 86(2),
 * 1979, case 1) of n architectures x s seeds of scores, x row-major
 * (x[i*s + j]: architecture i, seed j; all finite):
 *   MSW = sum_i sum_j (x_ij - m_i)^2 / (n (s - 1))  (m_i: row mean)
 *   MSB = s sum_i (m_i - m)^2 / (n - 1)             (m: grand mean)
 *   sd_within  = sqrt(MSW)                         (seed noise, pooled)
 *   sd_between = sqrt(max(0, (MSB - MSW) / s))      (spread of true scores)
 *   icc = ICC(1) = (MSB - MSW) / (MSB + (s - 1) MSW), the reliability of
 *   one trial's score: between variance over total variance (may be < 0).
 * n < 2 or s < 2: every figure NaN (n = 0). Errors: NAS_EINVAL.
 */
typedef struct nas_proxy_anova_stats {
    int n, s;
    double mean, ms_within, ms_between;
    double sd_within, sd_between, icc;
} nas_proxy_anova_stats;
int nas_proxy_anova(const double *x, int n, int s, nas_proxy_anova_stats *out);

/* Spearman's rho of a[0..n) and b[0..n): Pearson's correlation of their
 * mid-ranks (ties share the mean rank). NaN when n < 2 or either is
 * constant. */
double nas_rank_spearman(const double *a, const double *b, int n);

/* Kendall's tau-b (Kendall 1945): (concordant - discordant pairs) /
 * sqrt((pairs not tied in a) (pairs not tied in b)); NaN when n < 2 or
 * either is constant. O(n^2). */
double nas_rank_kendall(const double *a, const double *b, int n);

typedef struct nas_proxy_check_opts {
    const char *db_path;         /* results database (created when missing) */
    int archs;                   /* K: architectures sampled (0: 12) */
    int seeds;                   /* S: training seeds per architecture (0: 2) */
    int quick;                   /* 1: --quick (docs/proxy.md: K 6, S 2) */
    int quiet;                   /* 1: no progress lines */
    volatile sig_atomic_t *stop; /* set non-zero by a signal handler to stop; may be NULL */
    FILE *log;                   /* progress and the report; NULL = stderr */
    FILE *out;                   /* the figures, verdict and last line; NULL = stdout */
} nas_proxy_check_opts;

/*
 * `nas proxy-check`: sample K architectures from cfg's space (seeded by
 * cfg->seed), train each with S seeds (cfg->seed + j) to every rung of the
 * ladder - search.fidelity's rungs when it has a scheduler, else R/9, R/3
 * and R training images for R = proxy.epochs x the training images - each
 * (architecture, seed) one run continued from its checkpoint in DB.ckpt/,
 * on workers.count worker processes; store every training in experiment
 * "<experiment>-proxy-check" (strategy "proxy-check", table proxy_check);
 * then print the figures of docs/proxy.md, the verdict, and the last line
 * "proxy_check reliability=R seed_tau=T low_rung_tau=L cost_s=C" on
 * opts->out. A rerun continues: stored trainings are not repeated.
 * Returns NAS_OK, NAS_EINTR (stopped: finished trainings kept),
 * NAS_ECONFIG (a table evaluator; defining settings, K, S or the ladder
 * differ from the stored check), or the store's, the pool's, the data's
 * errors.
 */
int nas_proxy_check_run(const nas_config *cfg, const nas_proxy_check_opts *opts, nas_error *err);

#ifdef __cplusplus
}
#endif
#endif /* NAS_SEARCH_H */
