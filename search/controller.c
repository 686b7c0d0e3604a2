/*
 * search/controller.c - the search loop (see nas_search_run in nas/search.h).
 *
 * nas_search_run runs in named steps, each a function below: run_open
 * (store, run lock, the experiment, its defining settings), run_prepare
 * (space, strategy, placement, data; the experiment row), run_replay (the
 * stored trials, retry counts, what is resumed), run_start (the worker
 * pool), run_loop (propose, dispatch, collect, record, observe until the
 * budget) and run_finish (stop, final status), then run_close. The parts
 * they call live in the files search/controller_impl.h lists.
 *
 *   store: find the experiment by name (issue 22), refuse a run whose
 *          defining settings differ from it (nas_config_diff), check the
 *          space, the placement and the data, then create it or record
 *          this run's running settings (a larger budget extends it)
 *   replay: every trial in id order -> strategy propose (deduped against the
 *           trials before it, with the key it was proposed under: trials
 *           an older nas proposed use NAS-Bench-201's string, see
 *           read_nb201_until), with the observations the schedule makes
 *           before it (below); finished trials wait for their turn to be
 *           observed, unfinished ones (pending/running/interrupted) are
 *           re-queued
 *   loop:  while done + failed + in flight < budget and a worker is idle:
 *             retry, re-queued trial, or (schedule permitting) propose ->
 *             dedupe by canonical key -> insert pending; mark running;
 *             submit to the pool
 *          wait for a result -> record done/failed in the store at once ->
 *          observe in trial order as the schedule allows -> progress
 *   stop:  (*opts->stop set) record results already back, kill the jobs in
 *          flight and mark their trials interrupted.
 *   constraints (issue 6, docs/report.md "Constraints"): a proposal over
 *          constraints.mmacs/params is treated as known (never stored or
 *          trained); latency is measured in the worker before training and
 *          a cell over constraints.latency_ms is recorded as rejected
 *          (done, no accuracy) outside the budget. With several objectives
 *          the progress line shows the running Pareto front's size.
 *
 * The ordered schedule (workers.ordered = true, the default), with N the
 * pool size (workers.count, the GPU slots, or the MPI ranks but 0): the
 * strategy observes results strictly in trial-id order, and the proposal
 * of trial k is made after exactly trials 1..k-N were observed - the
 * strategy sees propose 1..N, observe 1, propose N+1, observe 2, propose
 * N+2, ... whatever order the workers finish in. So a search is a function
 * of (config, seed, N), like a one-worker search is of (config, seed):
 *   - a result that arrives early is stored at once (never lost) and
 *     observed once every earlier trial is; a worker that is idle while N
 *     trials are unobserved waits (head-of-line blocking: about 8-9% of
 *     throughput for N = 2 with trial times varying by a factor 3-5;
 *     docs/cluster.md);
 *   - a failed trial is observed as a failure in its turn; a trial that
 *     is retried (workers.max_retries) is observed only with its final
 *     outcome; a latency-rejected trial (constraints.latency_ms) is a trial
 *     in the schedule like any other, observed in its turn, and stays out
 *     of the budget (done + failed); the MAX_LATENCY_MISSES stop counts
 *     rejections in observation order;
 *   - dedupe at proposal k looks at the stored trials, which are exactly
 *     trials 1..k-1 (inserted at proposal time);
 *   - whether trial k is proposed at all (the budget) does not depend on
 *     timing either: done + failed + in flight < budget counts every
 *     unresolved trial, so it holds only if trials 1..k-1 leave room, and
 *     then it holds at the latest when they are all resolved;
 *   - the replay applies the same schedule, so a resumed search (after
 *     Ctrl-C or kill -9) continues exactly like an uninterrupted one with
 *     the same N. N is stored (strategy_state "controller.workers"); a
 *     resume with another N says so. N = 1 is the one-worker schedule
 *     (propose, observe, propose, ...).
 * workers.ordered = false observes results in completion order (no worker
 * ever waits; evolution and NAO then depend on timing, and the replay
 * observes each finished trial right after its proposal, counting the
 * proposals that differ).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h> /* mkdir: the kept-weights directory */
#include <unistd.h>
#include "nas/data.h" /* issue 16: nas_data_cache_beside */
#include "nas/parse.h" /* issue 29: nas_shell_quote */
#include "search/controller_impl.h"
#include "search/pool_msg.h" /* issue 4: the Open MPI transport */
#include "search/run_lock.h" /* issue 4: one `nas run` per database */
#include "search/stored_defaults.h" /* issue 30: unset changed defaults keep the stored values */
#include "search/table_identity.h" /* issue 29: the table's contents are defining */

/* nas_search_run's own state: the ctl its steps share with the files of
 * the loop, and what only the setup steps and run_close use. */
typedef struct run {
    ctl c;
    const nas_run_opts *opts;
    nas_run_summary *summary;    /* filled in every case */
    int mpi_size, mpi_threads;   /* issue 4: ranks (0: no MPI), MPI_THREAD_SERIALIZED given */
    nas_run_lock lock;           /* issue 4: one `nas run` per database (search/run_lock.h) */
    nas_run_lock *hold;          /* NULL, or where the lock is kept across searches */
    char name[NAS_NAME_MAX];     /* issue 22: the experiment's name in the database */
    int found;                   /* NAS_OK: it exists (before); NAS_ENOTFOUND: created now */
    nas_store_experiment before; /* its row when this run started */
    nas_config *own_cfg;         /* issue 22: cfg under another experiment name */
    char *canon, *text;          /* cfg's canonical text; the config file's text (or NULL) */
    const char *sname;           /* the strategy's name */
    char running[2048];          /* running settings changed since the last run */
    int n_running;               /* how many */
    nas_placement pl;            /* issue 7: one worker per GPU slot (gpu_slots) */
    int *slot_gpu, n_slots;      /* the GPU of each slot (malloc'd), their count (0: none) */
    int n_workers;               /* the pool's workers.count (0: in-process) */
    int prev_width;              /* the last run's schedule width (0: none stored) */
    int mismatch;                /* replayed proposals that differed from the stored trials */
    int lowered;                 /* search.trials when below the trials already finished (the
                                    budget is raised to them); 0: not lowered so */
    const char *final_status;    /* the experiment's status when the run ends */
} run;

/* The whole file at path, NUL-terminated (malloc'd; the caller frees it),
 * or NULL when it cannot be read. */
static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0)
            break;
        if (len + 1 == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

/* The counts, the best trial and this run's wall time into *s. */
static void fill_summary(ctl *c, nas_run_summary *s)
{
    s->budget = c->budget;
    s->done = c->n_done;
    s->failed = c->n_failed;
    s->diverged = c->n_diverged;
    s->rejected = c->n_rejected;
    s->ran = c->ran;
    s->interrupted_promotions = c->n_promo_interrupted;
    nas_store_experiment e; /* issue 29: the store's counts, as nas query shows them */
    nas_error qerr;
    if (c->st && c->exp > 0 && nas_store_experiment_get(c->st, c->exp, &e, &qerr) == NAS_OK) {
        s->unfinished = e.n_pending + e.n_running + e.n_interrupted;
        /* latency rejections are outside the budget, but a multi-fidelity
         * scheduler counts them among its trials (docs/multi-fidelity.md) */
        int used = e.n_done + e.n_failed + s->unfinished - (c->fid ? 0 : c->n_rejected);
        s->not_proposed = c->budget > used ? c->budget - used : 0;
    }
    s->wall_s = nas__ctl_now() - c->t_start;
    s->time_limit = c->time_up;
    s->time_limit_s = c->cfg->search.time_limit;
    s->best_trial = c->best_trial;
    s->best_val_accuracy = c->best_trial >= 0 ? c->best_val : NAN;
    snprintf(s->best_genotype, sizeof s->best_genotype, "%s",
             c->best_trial >= 0 ? c->best_geno : "");
}

/* What an MPI worker rank builds before it serves (nas__mpi_serve's setup,
 * run while its heartbeat thread beats): the evaluator, and a supernet's
 * state directory, DB.supernet/ (issue 32: the supernet rank 0's phase 1
 * trained). */
typedef struct rank_setup {
    ctl *c;
    const char *db_path;
    int after_next; /* 1: a search that follows NEXT in this job */
} rank_setup;

static int build_rank_evaluator(void *ctx, nas_error *err)
{
    rank_setup *s = ctx;
    ctl *c = s->c;
    if (s->after_next) /* test hook: a load slower than rank 0's (search/pool_msg.h) */
        nas__fault_nap("next_load_ms");
    int rc = nas_evaluator_create(c->cfg, c->space, &c->ev, err);
    char sdir[NAS_PATH_MAX + 16];
    snprintf(sdir, sizeof sdir, "%s.supernet", s->db_path);
    if (rc == NAS_OK && nas_evaluator_kind_prepares(c->cfg))
        rc = nas_evaluator_set_state_dir(c->ev, sdir) == NAS_OK
                 ? NAS_OK : nas_error_set(err, NAS_EINVAL, "%s: path too long", sdir);
    return rc;
}

/* issue 4: an MPI worker rank (`mpirun -n K nas run`, rank > 0): build the
 * evaluator, say READY, serve rank 0's jobs until it says stop, then end
 * MPI; never opens the database (rank 0 is its only writer). db_path:
 * `--db`, for DB.ckpt/. local_rank: this process's, to pick its GPU (-1:
 * it picked it in an earlier search). Issue 32: when rank 0 says that
 * another search follows (NEXT), MPI stays up and summary->mpi_next names
 * that search. The evaluator is built inside nas__mpi_serve, while the
 * heartbeat thread beats: rank 0 does not wait for the ranks, and may send
 * jobs to a rank that still loads its data (after NEXT it does whenever
 * the rank's load is slower than rank 0's: both start at NEXT, and rank 0
 * sends as soon as its own load is done). Built before the thread started,
 * the evaluator left a rank silent through its load while rank 0's clock
 * ran from the job's submission, so a load longer than rank 0's by 3 x
 * workers.heartbeat_s lost the rank (test_mpi_oneshot.sh, case 6). Now,
 * until the READY that follows the build, rank 0 judges the rank by its
 * heartbeats (when it has them), and gives its job NAS__READY_WAIT_FACTOR x
 * trial_timeout_s (search/pool.c job_limit_s). What
 * the rank does before this function (nas__search_run_one: the stored
 * defaults, a chain space's data probe) rank 0 does too before its first
 * job. */
static int mpi_worker_rank(const nas_config *cfg, const nas_run_opts *opts, int rank, int local_rank,
                           int threads, nas_run_summary *summary, nas_error *err)
{
    ctl c;
    memset(&c, 0, sizeof c);
    c.cfg = cfg;
    c.quiet = 1;
    c.log = stderr;
    summary->mpi_worker = 1;
    /* issue 17: rungs read and write the trial's checkpoint in DB.ckpt/,
     * which rank 0 creates: the ranks must share that file system
     * (docs/cluster.md), as the ranks of one node do */
    if (cfg->search.fidelity.scheduler != NAS_FIDELITY_NONE)
        snprintf(c.ckpt_dir, sizeof c.ckpt_dir, "%s.ckpt", opts->db_path);
    /* With CUDA, this rank's GPU from its local rank (docs/cluster.md),
     * chosen before the evaluator's backend initialises CUDA (issue 32: a
     * supernet's subnets run on the backend too, and its phase 3 follows
     * in this process, on the GPU chosen here). */
    char gpu_note[512];
    if (local_rank >= 0 && (nas_evaluator_kind_trains(cfg) || nas_evaluator_kind_prepares(cfg)) &&
        nas__mpi_pick_gpu(cfg, local_rank, gpu_note, sizeof gpu_note) >= 0)
        fprintf(stderr, "nas: MPI rank %d: %s\n", rank, gpu_note);
    rank_setup setup = {&c, opts->db_path, local_rank < 0};
    int rc = nas_space_create(&cfg->space, &c.space, err);
    if (rc == NAS_OK)
        rc = nas__mpi_serve(build_rank_evaluator, &setup, opts->mpi_generation, nas__ctl_job, &c,
                            0.5, threads ? cfg->workers.heartbeat_s : 0, summary->mpi_next, err);
    nas_evaluator_destroy(c.ev);
    nas_space_destroy(c.space);
    if (rc != NAS_OK || !summary->mpi_next[0])
        nas__mpi_stop(0, rc == NAS_OK ? 0 : 1);
    return rc;
}

/*
 * issue 7: the GPU of each local worker slot. A training search whose
 * placement (nas_placement_resolve over the CUDA devices nas_devices_query
 * finds, in a child process so this one never initialises CUDA) is CUDA
 * runs one worker per slot, slot s on nas_placement_slot_device(s): *gpu
 * (malloc'd, *slots entries) for nas_pool_opts.worker_gpu. A search that
 * cannot use CUDA under nas_placement_resolve's rules (table evaluator;
 * neither workers.device nor proxy.backend "cuda" or "auto"; proxy.backend
 * "ref"), an "auto" one without a device, and an MPI run (ranks pick their
 * own GPU) get *slots = 0 and *gpu = NULL: the pool then has
 * workers.count unpinned workers, as before placement existed.
 * NAS_TEST_CUDA_DEVICES=N (test-only, tests/e2e/test_gpu_slots.sh) stands
 * in for N CUDA devices. Errors: nas_placement_resolve's (e.g. NAS_ENODEV
 * for workers.device = "cuda" without a device), NAS_ENOMEM.
 */
static int gpu_slots(const nas_config *cfg, int mpi_size, nas_placement *pl, int **gpu, int *slots,
                     nas_error *err)
{
    *gpu = NULL;
    *slots = 0;
    memset(pl, 0, sizeof *pl);
    const char *be = cfg->proxy.backend[0] ? cfg->proxy.backend : "auto";
    const char *dv = cfg->workers.device[0] ? cfg->workers.device : "auto";
    int maybe_cuda = !strcmp(dv, "cuda") || !strcmp(be, "cuda") ||
                     ((!strcmp(dv, "auto") || !strcmp(be, "auto")) && strcmp(be, "ref") != 0);
    if (!nas_evaluator_kind_trains(cfg) || mpi_size > 1 || !maybe_cuda)
        return NAS_OK;
    nas_device_info devs[NAS_MAX_DEVICES];
    int n_cuda = 0;
    nas_error qerr;
    nas_error_clear(&qerr);
    const char *fake = getenv("NAS_TEST_CUDA_DEVICES");
    if (fake && *fake) {
        long v = strtol(fake, NULL, 10);
        n_cuda = v < 0 ? 0 : v > NAS_MAX_DEVICES ? NAS_MAX_DEVICES : (int)v;
        if (n_cuda == 0)
            snprintf(qerr.msg, sizeof qerr.msg, "NAS_TEST_CUDA_DEVICES=%s", fake);
    } else if (nas_devices_query(NAS_DEVICE_CUDA, devs, NAS_MAX_DEVICES, &n_cuda, &qerr) !=
               NAS_OK) {
        n_cuda = 0;
    }
    int rc = nas_placement_resolve(cfg, n_cuda, qerr.msg, pl, err);
    if (rc != NAS_OK || pl->kind != NAS_DEVICE_CUDA || pl->slots <= 0)
        return rc;
    int *g = malloc((size_t)pl->slots * sizeof *g);
    if (!g)
        return nas_error_set(err, NAS_ENOMEM, "out of memory placing the workers");
    for (int s = 0; s < pl->slots; s++)
        g[s] = nas_placement_slot_device(pl, s);
    *gpu = g;
    *slots = pl->slots;
    return NAS_OK;
}

void nas_search_mpi_finish(const nas_run_summary *summary, int exit_code)
{
    if (summary && !summary->mpi_worker && summary->mpi_ranks > 0)
        nas__mpi_stop(summary->mpi_lost, exit_code);
}

/* ---- nas_search_run's steps ------------------------------------------------------ */

/* Set up r for one run of cfg: nothing is opened yet; the experiment's
 * status, unless a step sets another, will be 'failed'. */
static void run_init(run *r, const nas_config *cfg, const nas_run_opts *opts, nas_run_lock *hold,
                     nas_run_summary *summary, int mpi_size, int mpi_threads)
{
    memset(r, 0, sizeof *r);
    r->opts = opts;
    r->summary = summary;
    r->mpi_size = mpi_size;
    r->mpi_threads = mpi_threads;
    r->lock = hold ? *hold : (nas_run_lock){-1, -1};
    r->hold = hold;
    r->final_status = "failed";
    ctl *c = &r->c;
    c->cfg = cfg;
    c->log = opts->log ? opts->log : stderr;
    c->quiet = opts->quiet;
    c->tty = isatty(fileno(c->log));
    c->stop = opts->stop ? opts->stop : &c->own_stop;
    c->budget = cfg->search.trials;
    c->best_trial = -1;
    c->t_start = nas__ctl_now();
    if (cfg->search.time_limit > 0) /* issue 33: counted from this run's start */
        c->deadline = c->t_start + cfg->search.time_limit;
    c->min_macs = c->min_params = -1;
    c->min_latency = NAN;
    c->table = !nas_evaluator_kind_trains(cfg); /* a table or a zero-cost proxy (issue 31) */
    c->on_trial = opts->on_trial; /* issue 33 */
    c->on_trial_user = opts->on_trial_user;
    c->tl_cli = opts->time_limit_from_cli;
}

/* Issue 22: the experiment is its name in the database (the most recent
 * row of it): cfg's, or opts->experiment; opts->new_experiment takes the
 * first free NAME-2, NAME-3, ... when NAME exists. Sets r->name, r->found
 * (NAS_OK or NAS_ENOTFOUND) and r->before. Errors: the store's. */
static int run_find(run *r, nas_error *err)
{
    ctl *c = &r->c;
    const nas_run_opts *opts = r->opts;
    snprintf(r->name, sizeof r->name, "%s",
             opts->experiment && *opts->experiment ? opts->experiment : c->cfg->experiment);
    nas_error ferr;
    r->found = nas_store_experiment_find(c->st, r->name, &r->before, &ferr);
    if (r->found != NAS_OK && r->found != NAS_ENOTFOUND) {
        *err = ferr;
        return r->found;
    }
    if (r->found == NAS_OK && opts->new_experiment) {
        char base[NAS_NAME_MAX];
        snprintf(base, sizeof base, "%s", r->name);
        for (int k = 2; r->found == NAS_OK; k++) {
            snprintf(r->name, sizeof r->name, "%.*s-%d", NAS_NAME_MAX - 12, base, k);
            r->found = nas_store_experiment_find(c->st, r->name, &r->before, &ferr);
            if (r->found != NAS_OK && r->found != NAS_ENOTFOUND) {
                *err = ferr;
                return r->found;
            }
        }
    }
    return NAS_OK;
}

/* The same defining settings as the stored experiment, or a refusal: the
 * keys that differ are listed on the log (even with --quiet: they are the
 * reason). Sets r->running, r->n_running (the running settings that
 * changed). Errors: NAS_ECONFIG (a defining setting differs), the
 * store's, NAS_ENOMEM. */
static int run_check_defining(run *r, nas_error *err)
{
    ctl *c = &r->c;
    const nas_config *cfg = c->cfg;
    char *stored = NULL;
    int rc = nas_store_experiment_canonical(c->st, r->before.id, &stored, err);
    if (rc != NAS_OK)
        return rc;
    char diff[4096];
    int nd = nas_config_diff(stored, cfg, 1, diff, sizeof diff);
    if (nd >= 0) /* issue 29: the table's contents are defining too */
        nd += nas__table_identity_diff(stored, r->canon, diff, sizeof diff);
    r->n_running = nas_config_diff(stored, cfg, 0, r->running, sizeof r->running);
    free(stored);
    if (nd < 0 || r->n_running < 0)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    if (nd == 0)
        return NAS_OK;
    /* shown even with --quiet: it is the reason of the refusal */
    fprintf(c->log,
            "nas: %d defining setting(s) of %s differ from experiment '%s' (id %lld) "
            "in %s (stored -> now):\n%s",
            nd, cfg->path, r->name, (long long)r->before.id, r->opts->db_path, diff);
    fflush(c->log);
    return nas_error_set(err, NAS_ECONFIG,
                         "%s changes defining settings of experiment '%s' (listed above), "
                         "so it cannot continue it. To resume or extend '%s', keep them "
                         "as stored; to start a new experiment, set another experiment "
                         "name in %s, or run with --experiment NAME, or with --new (it "
                         "creates '%s-2' or the next free number)",
                         cfg->path, r->name, r->name, cfg->path, r->name);
}

/*
 * Step 1, open: open the store, then take the single-writer lock beside it
 * unless the caller holds it already (r->hold; the store's checks come
 * first: they name a missing or read-only directory, a foreign file);
 * find the experiment (run_find), give this run's config its name, and
 * check the defining settings against a stored experiment
 * (run_check_defining). Nothing is written to the database: a file of an
 * older schema is migrated by run_prepare, once every check has passed.
 * Errors: the store's, NAS_EBUSY (another `nas run`), NAS_ECONFIG,
 * NAS_ENOMEM.
 */
static int run_open(run *r, nas_error *err)
{
    ctl *c = &r->c;
    int rc;
    /* an older file is migrated only once the run is accepted (run_prepare):
     * a refused run leaves it as it was */
    if ((rc = nas_store_open(r->opts->db_path, NAS_STORE_OPEN_DEFER, &c->st, err)) != NAS_OK)
        return rc;
    if (r->lock.fd < 0 && (rc = nas__run_lock(r->opts->db_path, &r->lock, err)) != NAS_OK)
        return rc;
    if ((rc = run_find(r, err)) != NAS_OK)
        return rc;
    if (strcmp(r->name, c->cfg->experiment) != 0) { /* this run's config carries the name */
        r->own_cfg = malloc(sizeof *r->own_cfg);
        if (!r->own_cfg)
            return nas_error_set(err, NAS_ENOMEM, "out of memory");
        *r->own_cfg = *c->cfg;
        snprintf(r->own_cfg->experiment, sizeof r->own_cfg->experiment, "%s", r->name);
        c->cfg = r->own_cfg;
    }
    const nas_config *cfg = c->cfg;
    snprintf(r->summary->experiment, sizeof r->summary->experiment, "%s", r->name);
    r->canon = nas_config_canonical(cfg);
    if (!r->canon)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    if ((rc = nas__table_identity(cfg, &r->canon, err)) != NAS_OK) /* issue 29 */
        return rc;
    r->text = read_file(cfg->path);
    static const char *const strategy_names[] = {"random", "evolution", "nao"};
    r->sname = (unsigned)cfg->search.strategy < 3 ? strategy_names[cfg->search.strategy] : "?";
    if (r->found == NAS_OK)
        return run_check_defining(r, err);
    return NAS_OK;
}

/*
 * Data read from the user's files (data.format set) adds its shape, class
 * count and normalisation to the canonical text as a "# data: ..." line
 * (nas_data_info_format): they are defining, like the settings, but come
 * from the files (whose paths are running settings). A resumed experiment
 * whose stored line differs is refused (NAS_ECONFIG), listing both. The
 * shorthand data.dataset = "fashion-mnist" adds nothing, so experiments
 * from before issue 16 keep their canonical text. Also sets c->classes.
 */
static int data_identity(ctl *c, const nas_config *cfg, int64_t exp_id, char **canon,
                         nas_error *err)
{
    nas_data_info info;
    int own = nas_evaluator_data_info(c->ev, &info);
    c->classes = info.classes;
    c->n_valid = nas_evaluator_valid_count(c->ev);
    if (!own)
        return NAS_OK;
    char line[1024];
    nas_data_info_format(&info, line, sizeof line);
    if (exp_id > 0) {
        char *stored = NULL;
        int rc = nas_store_experiment_canonical(c->st, exp_id, &stored, err);
        if (rc != NAS_OK)
            return rc;
        nas_data_info old;
        char was[1024] = "";
        if (nas_data_info_parse(stored, &old))
            nas_data_info_format(&old, was, sizeof was);
        free(stored);
        if (was[0] && strcmp(was, line) != 0) {
            was[strcspn(was, "\n")] = '\0';
            line[strcspn(line, "\n")] = '\0';
            return nas_error_set(err, NAS_ECONFIG,
                                 "%s: the data of experiment '%s' changed: stored %s, now %s; "
                                 "run with --new or another experiment name to search the new data",
                                 cfg->path, cfg->experiment, was + 2, line + 2);
        }
    }
    size_t n = strlen(*canon), k = strlen(line);
    char *grown = realloc(*canon, n + k + 1);
    if (!grown)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    memcpy(grown + n, line, k + 1);
    *canon = grown;
    return NAS_OK;
}

/*
 * Step 2, prepare: check what the run needs before an experiment row is
 * made (issue 22: a failed start leaves none): the space and the strategy,
 * the placement (it sets the pool size, the schedule's width, which the
 * replay needs), the data (the evaluator); then migrate an older file
 * (nas_store_migrate: a refused run leaves it untouched), create the
 * experiment, or record this run's running settings in it (a larger budget
 * extends it).
 * Errors: nas_space_create's, nas_strategy_create's, gpu_slots',
 * nas_evaluator_create's, the store's.
 */
static int run_prepare(run *r, nas_error *err)
{
    ctl *c = &r->c;
    const nas_config *cfg = c->cfg;
    int rc;
    if (r->found == NAS_OK && cfg->search.fidelity.scheduler != NAS_FIDELITY_NONE &&
        r->before.n_trials > c->budget) {
        /* search.trials below the trials stored: the scheduler keeps them
         * all (it places every stored trial), and nothing new is proposed */
        r->lowered = c->budget;
        c->budget = r->before.n_trials;
    }
    if ((rc = nas_space_create(&cfg->space, &c->space, err)) != NAS_OK ||
        (rc = nas_strategy_create(cfg, c->space, &c->strat, err)) != NAS_OK ||
        (rc = nas__ctl_fid_init(c, err)) != NAS_OK || /* issue 17 */
        (rc = nas__ctl_enqueue_init(c, err)) != NAS_OK) /* issue 33 */
        return rc;
    if ((rc = gpu_slots(cfg, r->mpi_size, &r->pl, &r->slot_gpu, &r->n_slots, err)) != NAS_OK)
        return rc;
    r->n_workers = r->n_slots > 0 && cfg->workers.count > 0 ? r->n_slots : cfg->workers.count;
    c->width = r->mpi_size > 1 ? r->mpi_size - 1 : r->n_workers > 0 ? r->n_workers : 1;
    if (nas_evaluator_kind_trains(cfg)) {
        char ntrain[32];
        if (cfg->data.train_subset > 0)
            snprintf(ntrain, sizeof ntrain, "%d", cfg->data.train_subset);
        else
            snprintf(ntrain, sizeof ntrain, "all other");
        const char *from = !strcmp(cfg->data.format, "idx") || !strcmp(cfg->data.format, "npy")
                               ? cfg->data.train_images : cfg->data.dir;
        char nvalid[32];
        if (cfg->data.valid_fraction > 0) /* issue 16: a fraction of the training images */
            snprintf(nvalid, sizeof nvalid, "%g%% as", 100.0 * cfg->data.valid_fraction);
        else
            snprintf(nvalid, sizeof nvalid, "%d", cfg->data.valid);
        nas__ctl_say(c, "nas: loading %s from %s (%s training and %s validation images)",
                     cfg->data.dataset, from, ntrain, nvalid);
    } else {
        char what[2 * NAS_PATH_MAX];
        nas_evaluator_kind_describe(cfg, what, sizeof what);
        nas__ctl_say(c, "nas: %s", what);
    }
    if ((rc = nas_evaluator_create(cfg, c->space, &c->ev, err)) != NAS_OK)
        return rc;
    char said[2 * NAS_PATH_MAX], warn[512]; /* issue 28: what was loaded */
    if (nas_evaluator_data_summary(c->ev, said, sizeof said, warn, sizeof warn))
        nas__ctl_say(c, "nas: %s%s%s", said, warn[0] ? "\nnas: " : "", warn);
    if ((rc = data_identity(c, cfg, r->found == NAS_OK ? r->before.id : 0, &r->canon, err)) !=
        NAS_OK)
        return rc;
    if ((rc = nas_store_migrate(c->st, err)) != NAS_OK) /* accepted: the first write */
        return rc;
    int from = nas_store_migrated_from(c->st);
    if (from > 0)
        nas__ctl_say(c,
                     "nas: migrated %s from schema version %d to %d (docs/schema.md lists the "
                     "steps); a nas older than this one can no longer open it",
                     r->opts->db_path, from, NAS_STORE_SCHEMA_VERSION);
    const char *text = r->text ? r->text : "";
    if (r->found != NAS_OK)
        rc = nas_store_experiment_create(c->st, r->name, r->canon, text, cfg->path, cfg->seed,
                                         r->sname, cfg->search.trials, &c->exp, err);
    else {
        c->exp = r->before.id;
        rc = nas_store_experiment_update(c->st, c->exp, r->canon, text, cfg->path, c->budget,
                                         err);
    }
    if (rc != NAS_OK)
        return rc;
    r->summary->experiment_id = c->exp;
    r->summary->resumed = r->found == NAS_OK;
    return NAS_OK;
}

/* What a resumed or extended experiment continues with: the changed
 * running settings, the counts, trials an earlier run left 'running', a
 * change of the number of workers, replayed proposals that differed. */
static void say_resumed(run *r)
{
    ctl *c = &r->c;
    const char *db = r->opts->db_path;
    /* multi-fidelity (issue 17): the replay re-queues jobs, promotions too;
     * issue 29: counted apart (a promoted trial stays done at its last
     * rung), with the trials not yet proposed */
    int promotions = 0;
    for (int i = 0; i < c->nfid_requeue; i++)
        promotions += c->fid_requeue[i].promo;
    int unfinished = c->nrequeue + c->nfid_requeue - promotions;
    int used = c->n_hist - (c->fid ? 0 : c->n_rejected); /* rejections: see fill_summary */
    char more[160];
    int n_more = snprintf(more, sizeof more, ", %d not yet proposed",
                          c->budget > used ? c->budget - used : 0);
    if (promotions > 0)
        snprintf(more + n_more, sizeof more - (size_t)n_more,
                 "; %d interrupted promotion(s) to run again", promotions);
    if (r->n_running > 0)
        nas__ctl_say(c, "nas: running settings changed since the last run (stored -> now):\n%.*s",
                     (int)(strlen(r->running) > 0 ? strlen(r->running) - 1 : 0), r->running);
    if (r->lowered > 0) {
        /* the multi-fidelity budget is every stored trial: the scheduler
         * re-runs the unfinished ones; otherwise the finished ones */
        char rest[160] = "";
        if (c->fid && unfinished + promotions > 0)
            snprintf(rest, sizeof rest, "; %d unfinished trial(s) to re-run%s", unfinished,
                     promotions > 0 ? more + n_more : "");
        else if (unfinished > 0)
            snprintf(rest, sizeof rest, "; its unfinished trials are not run");
        nas__ctl_say(c,
                     "nas: search.trials = %d is below the %d trials experiment '%s' (id %lld) "
                     "in %s has (%d done, %d failed): they are kept, and its budget "
                     "is %d trials%s",
                     r->lowered, c->budget, r->name, (long long)c->exp, db, c->n_done,
                     c->n_failed, c->budget, rest);
    } else if (c->budget > r->before.trials_budget)
        nas__ctl_say(c,
                     "nas: extending experiment '%s' (id %lld) in %s from %d to %d trials: %d "
                     "done, %d failed; %d unfinished trial(s) to re-run%s",
                     r->name, (long long)c->exp, db, r->before.trials_budget, c->budget, c->n_done,
                     c->n_failed, unfinished, more);
    else
        nas__ctl_say(c,
                     "nas: resuming experiment '%s' (id %lld) in %s: %d done, %d failed of %d; "
                     "%d unfinished trial(s) to re-run%s",
                     r->name, (long long)c->exp, db, c->n_done, c->n_failed, c->budget,
                     unfinished, more);
    if (strcmp(r->before.status, "running") == 0 && r->before.n_running > 0)
        nas__ctl_say(c,
                     "nas: note: %d trial(s) were left 'running' (the last `nas run` ended "
                     "without cleaning up); %s. Do not run two `nas run` of one experiment at "
                     "once.",
                     r->before.n_running,
                     r->lowered > 0 && !c->fid ? "they are marked interrupted, not run (the "
                                                 "budget is reached)"
                                               : "they are re-run now");
    int prev = r->prev_width;
    if (prev > 0 && prev != c->width && c->finished >= c->budget)
        nas__ctl_say(c,
                     "nas: note: this run has %d worker(s), the last one had %d: the "
                     "experiment has its trials, so nothing changes (an extension would "
                     "propose with %d worker(s) from trial %d on)",
                     c->width, prev, c->width, c->n_hist + 1);
    else if (prev > 0 && prev != c->width)
        nas__ctl_say(c,
                     "nas: note: this run has %d worker(s), the last one had %d: the %d stored "
                     "trials keep the schedule they were proposed with (replayed so), the "
                     "proposals from here on follow the schedule of %d workers (proposal k "
                     "after the results of trials 1..k-%d), so they differ from a fresh run "
                     "with %d workers (docs/cluster.md)",
                     c->width, prev, c->n_hist, c->width, c->width, c->width);
    else if (prev == 0 && c->n_done + c->n_failed + unfinished > 0 && c->width > 1)
        nas__ctl_say(c, "nas: note: the earlier runs of this experiment did not record their "
                        "number of workers (an older nas): their schedule may differ from this "
                        "one");
    if (r->mismatch)
        nas__ctl_say(c,
                     "nas: note: %d of %d replayed proposals differed from the stored trials; "
                     "the stored results were observed",
                     r->mismatch, c->n_done + c->n_failed + c->n_rejected + c->nrequeue);
}

/*
 * Step 3, replay: replay the stored trials through the strategy, each
 * under the schedule width it was proposed with (search/replay.c), then
 * this run's width again (the retry counts are loaded first); mark the experiment
 * 'running' and say what is created or resumed. Errors: those of
 * nas__ctl_width_load, nas__ctl_replay, nas__ctl_retries_load, the store.
 */
static int run_replay(run *r, nas_error *err)
{
    ctl *c = &r->c;
    int rc, run_width = c->width;
    /* the retry counts first: the multi-fidelity replay re-queues rung jobs
     * with their counts */
    if ((rc = nas__ctl_warmup(c, err)) != NAS_OK || /* issue 31: before the replay proposes */
        (rc = nas__ctl_width_load(c, &r->prev_width, err)) != NAS_OK ||
        (rc = nas__ctl_retries_load(c, err)) != NAS_OK)
        return rc;
    rc = c->fid ? nas__ctl_fid_replay(c, &r->mismatch, err) /* issue 17 */
                : nas__ctl_replay(c, &r->mismatch, err);
    nas__ctl_hist_index_free(c); /* issue 29: the replay's dedupe index */
    c->width = run_width;
    if (rc != NAS_OK)
        return rc;
    r->summary->replay_mismatch = r->mismatch;
    c->rounds_seen = nas_strategy_last_round(c->strat, NULL); /* replayed rounds stay silent */
    if (r->found == NAS_OK && !c->fid && c->finished > c->budget) {
        /* search.trials below the trials already finished: they are kept, so
         * the budget is what they are (never "8 of 5"); nothing is run */
        r->lowered = c->budget;
        c->budget = c->finished;
        if ((rc = nas_store_experiment_update(c->st, c->exp, r->canon, r->text ? r->text : "",
                                              c->cfg->path, c->budget, err)) != NAS_OK)
            return rc;
    }
    if ((rc = nas_store_experiment_set_status(c->st, c->exp, "running", err)) != NAS_OK)
        return rc;
    if (r->found != NAS_OK) {
        const nas_run_opts *opts = r->opts;
        char qname[NAS_SHELL_QUOTE_MAX(NAS_NAME_MAX)];
        nas__ctl_say(c, "nas: experiment '%s' (id %lld) in %s: %d trials, strategy %s, seed %llu",
                     r->name, (long long)c->exp, opts->db_path, c->budget, r->sname,
                     (unsigned long long)c->cfg->seed);
        if (strcmp(r->name, c->cfg->experiment) != 0 || opts->new_experiment ||
            (opts->experiment && *opts->experiment))
            nas__ctl_say(c, "nas: resume or extend it with --experiment %s",
                         nas_shell_quote(r->name, qname, sizeof qname));
    } else {
        say_resumed(r);
    }
    nas__ctl_warn_budget(c); /* issue 29: search.trials beyond the space */
    if (!nas_evaluator_kind_trains(c->cfg) && c->cfg->constraints.latency_ms > 0)
        nas__ctl_say(c, "nas: constraints.latency_ms = %g is not applied: evaluator.kind = "
                        "\"%s\" measures no latency",
                     c->cfg->constraints.latency_ms, nas_evaluator_kind_name(c->cfg));
    return NAS_OK;
}

/* Create and say the worker pool: workers.count processes (or one per GPU
 * slot, issue 7; or the MPI worker ranks), their progress drawn on the
 * status line. Errors: nas_pool_create's. */
static int run_pool(run *r, nas_error *err)
{
    ctl *c = &r->c;
    const nas_config *cfg = c->cfg;
    /* issue 20: without MPI_THREAD_SERIALIZED the worker ranks send no
     * heartbeats (their heartbeat thread would call MPI), so none are
     * expected; trial_timeout_s still catches a stuck rank */
    int heartbeat_s = r->mpi_size > 1 && !r->mpi_threads ? 0 : cfg->workers.heartbeat_s;
    if (heartbeat_s != cfg->workers.heartbeat_s)
        nas__ctl_say(c, "nas: warning: this MPI library does not provide MPI_THREAD_SERIALIZED: "
                        "the worker ranks send no heartbeats, and only trial_timeout_s catches "
                        "a frozen one");
    nas_pool_opts po = {.job_timeout_s = cfg->workers.trial_timeout_s,
                        .progress_interval_s = 0.5,
                        .on_progress = nas__ctl_on_progress,
                        .user = c,
                        .heartbeat_s = heartbeat_s,
                        .worker_gpu = r->slot_gpu,
                        .stop = c->stop,
                        .mpi_generation = r->opts->mpi_generation};
    /* CUDA: workers.gpus x trials_per_gpu workers (workers.count 0 stays
     * in-process, on the first GPU listed) */
    int rc = nas_pool_create(r->n_workers, nas__ctl_job, c, &po, &c->pool, err);
    if (rc == NAS_OK && r->n_slots > 0) {
        char map[256] = "";
        size_t used = 0;
        int shown = r->n_workers > 0 ? r->n_workers : 1;
        for (int s = 0; s < shown && used + 16 < sizeof map; s++)
            used += (size_t)snprintf(map + used, sizeof map - used, "%s%d", s ? " " : "",
                                     r->slot_gpu[s]);
        nas__ctl_say(c, "nas: CUDA placement: %d GPU(s) x %d trial(s) per GPU; worker -> GPU: %s%s",
                     r->pl.n_gpus, r->pl.trials_per_gpu, map,
                     used + 16 >= sizeof map ? " ..." : "");
    }
    if (rc != NAS_OK)
        return rc;
    const char *kind = cfg->workers.count == 0 ? "in-process worker" : "worker process(es)";
    const char *hint = c->tty ? "; Ctrl-C stops (resume by running the same command)" : "";
    if (nas_evaluator_kind_prepares(cfg)) /* issue 32: subnets by inherited weights */
        nas__ctl_say(c, "nas: %d %s, subnets evaluated by inherited weights, backend %s with %d "
                     "thread(s) each%s", nas_pool_size(c->pool), kind, cfg->proxy.backend,
                     cfg->proxy.threads, hint);
    else if (c->table) /* nothing is trained: no backend, no threads (issue 22) */
        nas__ctl_say(c, "nas: %d %s, table look-ups%s", nas_pool_size(c->pool), kind, hint);
    else
        nas__ctl_say(c, "nas: %d %s, backend %s with %d thread(s) each%s", nas_pool_size(c->pool),
                     kind, cfg->proxy.backend, cfg->proxy.threads, hint);
    return NAS_OK;
}

/*
 * Step 4, start: store this run's schedule width (issue 22), make the
 * kept-weights directory (proxy.keep_weights: true keeps every trained
 * trial's weights; not set, the default, the best proxy.keep_top, which
 * record.c prunes), and start the worker pool (run_pool). Errors: the
 * store's, NAS_EIO (the weights directory), NAS_EINTR (stopped before the
 * first trial: the experiment becomes 'interrupted'), nas_pool_create's.
 */
static int run_start(run *r, nas_error *err)
{
    ctl *c = &r->c;
    const nas_config *cfg = c->cfg;
    int rc;
    if ((rc = nas__ctl_width_save(c, err)) != NAS_OK)
        return rc;
    if ((cfg->proxy.keep_weights > 0 || (cfg->proxy.keep_weights < 0 && cfg->proxy.keep_top > 0)) &&
        nas_evaluator_kind_trains(cfg)) {
        snprintf(c->weights_dir, sizeof c->weights_dir, "%s.weights", r->opts->db_path);
        if (mkdir(c->weights_dir, 0777) != 0 && errno != EEXIST)
            return nas_error_set(err, NAS_EIO, "%s: cannot create %s: %s",
                                 cfg->proxy.keep_weights > 0 ? "proxy.keep_weights"
                                                             : "proxy.keep_top",
                                 c->weights_dir, strerror(errno));
    }
    if (c->fid) { /* issue 17: checkpoints of trials that may be promoted */
        snprintf(c->ckpt_dir, sizeof c->ckpt_dir, "%s.ckpt", r->opts->db_path);
        if (mkdir(c->ckpt_dir, 0777) != 0 && errno != EEXIST)
            return nas_error_set(err, NAS_EIO, "search.fidelity: cannot create %s: %s",
                                 c->ckpt_dir, strerror(errno));
    }
    /* No worker of this run has started and the run lock keeps other runs
     * out: a temporary .npz in either directory is a killed worker's. */
    if (c->weights_dir[0])
        nas__ctl_unlink_matching(c->weights_dir, "trial-*.npz.tmp*");
    if (c->ckpt_dir[0])
        nas__ctl_unlink_matching(c->ckpt_dir, "trial-*.npz.tmp*");
    if (nas__ctl_stopping(c)) {
        r->final_status = "interrupted";
        return nas_error_set(err, NAS_EINTR, "interrupted before the first trial");
    }
    if (nas_evaluator_kind_prepares(cfg) && /* issue 32: the supernet, before the workers fork */
        (rc = nas__ctl_prepare(c, r->opts->db_path, err)) != NAS_OK) {
        if (rc == NAS_EINTR) {
            r->final_status = "interrupted";
            r->summary->stopped = 1;
        }
        return rc;
    }
    return run_pool(r, err);
}

/*
 * Propose and dispatch: while the budget has room (done + failed + in
 * flight), a worker is idle and there is something to start - a retry, a
 * re-queued trial, or (the ordered schedule permitting: fewer than
 * c->width trials unobserved) a new proposal - start it
 * (nas__ctl_start_next), then observe what the schedule allows. A strategy
 * that finds nothing new ends the proposals (c->exhausted). Errors:
 * NAS_EINFEASIBLE when nothing in the space meets the constraints (issue
 * 6), the store's, the pool's.
 */
static int run_start_trials(ctl *c, nas_error *err)
{
    while (!nas__ctl_stopping(c) && c->finished + c->nfl < c->budget &&
           nas_pool_idle(c->pool) > 0 &&
           (c->nretry > 0 || c->requeue_pos < c->nrequeue ||
            (!c->exhausted && (nas__ctl_pend_len(c) < c->width || !c->cfg->workers.ordered)))) {
        int rc = nas__ctl_start_status(c, nas__ctl_start_next(c, err), err);
        if (rc != NAS_OK)
            return rc;
        if ((rc = nas__ctl_drain(c, DRAIN_LIVE, err)) != NAS_OK)
            return rc;
    }
    return NAS_OK;
}

/* ---- issue 33: the per-trial callback (nas_run_opts.on_trial) ---- */

void nas__ctl_trial_recorded(ctl *c)
{
    if (c->on_trial)
        c->on_trial(c->on_trial_user, c->st, c->exp);
}

/* Collect: wait for one event of the pool (a second on a terminal, to
 * redraw the status line; five otherwise) and record it
 * (nas__ctl_record), then tell nas_run_opts.on_trial. Errors:
 * nas__ctl_record's, the pool's. */
static int run_collect(ctl *c, nas_error *err)
{
    nas_pool_event ev;
    nas_error werr;
    int ms = c->tty ? 1000 : 5000;
    if (c->deadline > 0) /* issue 33: wake up for the time limit */
        ms = (int)fmax(1, fmin(ms, 1000 * (c->deadline - nas__ctl_now()) + 1));
    int wrc = nas_pool_wait(c->pool, ms, &ev, &werr);
    if (wrc == NAS_OK) {
        int rc = nas__ctl_record(c, &ev, err);
        if (rc == NAS_OK)
            nas__ctl_trial_recorded(c); /* issue 33 */
        return rc;
    }
    if (wrc == NAS_ETIMEOUT || wrc == NAS_EINTR) {
        nas__ctl_draw_status(c);
        return NAS_OK;
    }
    *err = werr;
    return wrc;
}

/*
 * Step 5, the loop: observe (nas__ctl_drain), propose and dispatch
 * (run_start_trials), collect and record (run_collect), until a stop or
 * nothing is left in flight. Under the ordered schedule (the header
 * comment) a worker is given a new proposal only while fewer than
 * c->width trials are unobserved; it waits for the oldest one otherwise.
 * Errors: those of the three.
 */
static int run_loop(ctl *c, nas_error *err)
{
    int rc;
    for (;;) {
        if (nas__ctl_stopping(c))
            break;
        if ((rc = nas__ctl_drain(c, DRAIN_LIVE, err)) != NAS_OK)
            return rc;
        if ((rc = run_start_trials(c, err)) != NAS_OK)
            return rc;
        if (c->nfl == 0)
            break;
        if ((rc = run_collect(c, err)) != NAS_OK)
            return rc;
    }
    return NAS_OK;
}

/*
 * Step 5 of a multi-fidelity search (issue 17), in place of run_loop:
 * start what the scheduler asks on the idle workers (nas__ctl_fid_fill),
 * collect and record (run_collect), until a stop or nothing is left in
 * flight; then the strategy observes the last trials (nas__ctl_fid_end).
 * Issue 29: the loop is the controller's, so search/fidelity_run.c never
 * calls the record step back. Errors: those of the three.
 */
static int fid_loop(ctl *c, nas_error *err)
{
    int rc;
    for (;;) {
        if (nas__ctl_stopping(c))
            return NAS_OK;
        if ((rc = nas__ctl_fid_fill(c, err)) != NAS_OK)
            return rc;
        if (c->nfl == 0)
            break;
        if ((rc = run_collect(c, err)) != NAS_OK)
            return rc;
    }
    return nas__ctl_fid_end(c, err);
}

/* A stop (*opts->stop set): results already back are recorded, the trials
 * in flight and the waiting retries are interrupted. Returns NAS_EINTR
 * (the experiment 'interrupted'), or the store's error. */
static int run_stopped(run *r, nas_error *err)
{
    ctl *c = &r->c;
    char reason[128], tl[64];
    int sig = (int)*c->stop;
    if (sig == NAS_STOP_TIME_LIMIT) /* issue 33 */
        snprintf(reason, sizeof reason, "interrupted: time limit reached (%s)",
                 nas__ctl_time_limit_text(c, tl, sizeof tl));
    else if (sig > 1 && sig < 65)
        snprintf(reason, sizeof reason, "interrupted by signal %d (%s)", sig, strsignal(sig));
    else
        snprintf(reason, sizeof reason, "interrupted (the search was stopped)");
    int n = nas__ctl_interrupt_flights(c, reason, err);
    if (n < 0)
        return n;
    r->summary->interrupted = n;
    r->summary->stopped = 1;
    r->final_status = "interrupted";
    return nas_error_set(err, NAS_EINTR, "search stopped: %d trial(s) interrupted", n);
}

/* Mark the trials an earlier run left 'running' or 'pending' that this run
 * did not take up (c->requeue from requeue_pos) 'interrupted', with
 * `reason`: no reader then finds a trial 'running' that nothing runs. */
static void interrupt_leftovers(ctl *c, const char *reason)
{
    for (int i = c->requeue_pos; i < c->nrequeue; i++) {
        nas_error ierr;
        if ((c->requeue[i].status == NAS_TRIAL_RUNNING ||
             c->requeue[i].status == NAS_TRIAL_PENDING) &&
            nas_store_trial_interrupt(c->st, c->requeue[i].id, reason, &ierr) == NAS_OK)
            c->n_interrupted++;
    }
}

/* issue 20: the loop ended with trials left, so no worker can take one:
 * under MPI every worker rank was given up on (a rank cannot be
 * restarted). Not done: the trials an earlier run left unfinished are
 * interrupted (those of this run, by run_close) and a new run resumes.
 * Returns NAS_EWORKER (the experiment 'interrupted'). */
static int run_no_workers(run *r, nas_error *err)
{
    ctl *c = &r->c;
    int rc = nas_error_set(err, NAS_EWORKER,
                           "no workers remain: all %d MPI worker rank(s) were given up on (see "
                           "the trials' errors) with %d of %d trials finished; run the same "
                           "command again to resume",
                           nas_pool_size(c->pool), c->finished, c->budget);
    interrupt_leftovers(c, err->msg);
    r->summary->interrupted = c->n_interrupted;
    r->final_status = "interrupted";
    return rc;
}

/*
 * Step 6, finish: after a stop, interrupt what is in flight (run_stopped);
 * with trials left and no worker, interrupt (run_no_workers); otherwise
 * the strategy observes every remaining result and the experiment is
 * 'done', or 'exhausted' when the strategy found nothing new before the
 * budget. Errors: NAS_EINTR, NAS_EWORKER, the store's, the observation's.
 */
static int run_finish(run *r, nas_error *err)
{
    ctl *c = &r->c;
    nas__ctl_clear_status(c);
    if (c->stop && *c->stop)
        return run_stopped(r, err);
    if (!c->exhausted && c->finished < c->budget && !(c->fid && c->fid_done))
        return run_no_workers(r, err);
    int rc = nas__ctl_drain(c, DRAIN_ALL, err); /* the strategy sees every result */
    if (rc != NAS_OK)
        return rc;
    r->summary->exhausted = c->exhausted && c->finished < c->budget;
    /* issue 29: a multi-fidelity scheduler counts latency rejections
     * among its search.trials new trials (docs/multi-fidelity.md) */
    r->summary->rejected_spent = !c->exhausted && c->finished < c->budget && c->n_rejected > 0;
    r->final_status = r->summary->exhausted ? "exhausted" : "done";
    return NAS_OK;
}

/* Whatever the outcome rc: after a failure, interrupt the trials still in
 * flight or waiting for a retry (issue 20: never left 'running'); set the
 * experiment's final status; fill the summary; release everything but a
 * run lock the caller keeps (r->hold). Returns rc. */
static int run_close(run *r, int rc, nas_error *err)
{
    ctl *c = &r->c;
    nas__ctl_clear_status(c);
    if (rc == NAS_OK && c->st && c->exp > 0) /* a budget lowered below the stored trials */
        interrupt_leftovers(c, "interrupted; not run: the experiment's budget of trials was "
                               "reached without it (raise search.trials to run it)");
    if (rc != NAS_OK && rc != NAS_EINTR && (c->nfl > 0 || c->nretry > 0)) {
        nas_error ierr; /* issue 20: waiting retries too, never left 'running' */
        char why[sizeof err->msg + 32];
        snprintf(why, sizeof why, "interrupted: %s", err->msg);
        int n = nas__ctl_interrupt_flights(c, why, &ierr);
        if (n > 0)
            r->summary->interrupted = n;
    }
    if (c->st && c->exp > 0) {
        nas_error serr;
        nas_store_experiment_set_status(c->st, c->exp, r->final_status, &serr);
    }
    nas__ctl_strategy_log_save(c); /* issue 29: NAO's rounds, for the next replay */
    fill_summary(c, r->summary);
    r->summary->mpi_lost = nas__pool_lost(c->pool); /* nas_search_mpi_finish ends MPI */
    nas_pool_destroy(c->pool);
    nas__ctl_fid_free(c); /* issue 17 */
    nas_evaluator_destroy(c->ev);
    nas_strategy_destroy(c->strat);
    nas_space_destroy(c->space);
    nas_store_close(c->st);
    free(c->fl);
    free(c->warm);
    free(c->requeue);
    free(c->retry);
    free(c->rt_id);
    free(c->rt_n);
    if (r->hold) /* the caller's next search keeps it (nas__search_run_one) */
        *r->hold = r->lock;
    else
        nas__run_unlock(&r->lock);
    free(c->front);
    free(c->pq);
    free(r->slot_gpu);
    free(r->canon);
    free(r->text);
    free(r->own_cfg);
    return rc;
}

/* nas/search.h. An MPI worker rank serves jobs (mpi_worker_rank); rank 0,
 * or a run without MPI, runs the steps above in order, then run_close. */
static int search_run(const nas_config *cfg, const nas_run_opts *opts, nas_run_lock *hold,
                      nas_run_summary *summary, nas_error *err)
{
    nas_run_summary dummy;
    if (!summary)
        summary = &dummy;
    memset(summary, 0, sizeof *summary);
    summary->experiment_id = -1;
    summary->best_trial = -1;
    summary->best_val_accuracy = NAN;
    if (!cfg || !opts || !opts->db_path)
        return nas_error_set(err, NAS_EINVAL, "search: missing config or database path");
    snprintf(summary->db_path, sizeof summary->db_path, "%s", opts->db_path);
    int mpi_rank = 0, mpi_size = 0, mpi_local = 0; /* issue 4: under mpirun, rank 0 is the
                                                      controller */
    int mpi_threads = 1;
    int rc = nas__mpi_start(&mpi_rank, &mpi_size, &mpi_local, &mpi_threads, err);
    if (rc != NAS_OK)
        return rc;
    if (mpi_size > 1 && mpi_rank > 0)
        return mpi_worker_rank(cfg, opts, mpi_rank, mpi_local, mpi_threads, summary,
                               err);
    if (mpi_size > 1) /* rank 0: nas_search_mpi_finish ends MPI after the report */
        summary->mpi_ranks = mpi_size - 1;

    run r;
    run_init(&r, cfg, opts, hold, summary, mpi_size, mpi_threads);
    ctl *c = &r.c;
    rc = run_open(&r, err);
    if (rc == NAS_OK)
        rc = run_prepare(&r, err);
    if (rc == NAS_OK)
        rc = run_replay(&r, err);
    /* issue 29: a multi-fidelity experiment is finished when its scheduler
     * has nothing left (latency rejections count among its trials) */
    if (rc == NAS_OK &&
        (c->fid ? c->fid_done && c->nfid_requeue == 0 : c->finished >= c->budget)) {
        if (c->n_rejected > 0 && c->finished < c->budget)
            nas__ctl_say(c, "nas: the experiment's scheduler has run its %d trials (%d done, %d "
                            "failed, %d rejected by constraints.latency_ms); nothing to do",
                         c->budget, c->n_done, c->n_failed, c->n_rejected);
        else
            nas__ctl_say(c, "nas: the experiment already has its %d trials; nothing to do",
                         c->budget);
        if (c->n_done == 0 && c->n_failed > 0) { /* issue 28: say how to search again */
            char qpath[NAS_SHELL_QUOTE_MAX(NAS_PATH_MAX)];
            fprintf(c->log, "nas: every trial of '%s' failed, and a finished experiment is "
                    "not re-run: once the cause is fixed, search again with `nas run %s --new` "
                    "(a new experiment '%s-2', or the next free name) or `--experiment NAME`, "
                    "or raise search.trials to add new trials to this one\n",
                    r.name, nas_shell_quote(cfg->path, qpath, sizeof qpath), r.name);
        }
        r.final_status = "done";
    } else if (rc == NAS_OK) {
        rc = run_start(&r, err);
        if (rc == NAS_OK) /* issue 17: multi-fidelity search has its own loop */
            rc = c->fid ? fid_loop(c, err) : run_loop(c, err);
        if (rc == NAS_OK)
            rc = run_finish(&r, err);
    }
    return run_close(&r, rc, err);
}

/* issue 16: the folder reader's decode cache goes beside the database
 * ("<db>.data", nas_data_cache_beside); the rest is search_run's. */
int nas__search_run_one(const nas_config *cfg, const nas_run_opts *opts, nas_run_lock *hold,
                        nas_run_summary *summary, nas_error *err)
{
    if (!cfg || !opts || !opts->db_path)
        return search_run(cfg, opts, hold, summary, err);
    nas_config *own = malloc(sizeof *own); /* large; not on the stack */
    if (!own)
        return nas_error_set(err, NAS_ENOMEM, "out of memory starting the search");
    *own = *cfg;
    nas_data_cache_beside(&own->data, opts->db_path);
    if (!opts->new_experiment) /* issue 30: unset changed defaults keep the stored values */
        nas__stored_defaults(own, opts->db_path,
                          opts->experiment && *opts->experiment ? opts->experiment : cfg->experiment,
                          opts->quiet ? NULL : opts->log ? opts->log : stderr);
    /* issue 28: a chain space without space.input / classes takes the data's */
    int rc = nas_evaluator_kind_reads_data(cfg) && cfg->space.type == NAS_SPACE_CHAIN
                 ? nas_data_space_input(&own->data, &own->space, err) : NAS_OK;
    if (rc == NAS_EFORMAT || rc == NAS_EIO) { /* bad data: the user's input (as the evaluator) */
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err ? err->msg : "");
        rc = nas_error_set(err, NAS_ECONFIG, "%s: bad data: %s", cfg->path, why);
    }
    if (rc == NAS_OK)
        rc = search_run(own, opts, hold, summary, err);
    free(own);
    return rc;
}
