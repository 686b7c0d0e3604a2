/*
 * cli/cmd_run.c - `nas run CONF [--db PATH] [--experiment NAME] [--new]
 * [--quiet] [--report FILE] [--time-limit DURATION] [--enqueue GENOTYPE]...`:
 * run, resume or extend the search CONF describes
 * (nas_search_run): live progress on stderr, a summary on stdout. Ctrl-C or
 * SIGTERM stops cleanly (exit 130); exit codes as `nas run --help` says.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h> /* clock_gettime */
#include <unistd.h>
#include "cli/cli.h"
#include "nas/parse.h" /* nas_shell_quote */
#include "nas/search.h"
#include "nas/space.h"

/* The only process-wide state: set by the signal handler, read by the
 * controller through nas_run_opts.stop. Holds the signal number. */
static volatile sig_atomic_t stop_flag;

/* A second stop signal aborts at once (trials left running re-run on resume),
 * unless within 1 s of the first: `timeout` signals nas, then its group.
 * SIGPIPE (the output's reader is gone) stops once and is then ignored:
 * every later write to that output raises it again, and the search must
 * still stop cleanly, however long the trial in process takes. */
static void on_stop_signal(int sig)
{
    static struct timespec first;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now); /* async-signal-safe */
    if (sig == SIGPIPE) {
        signal(SIGPIPE, SIG_IGN); /* async-signal-safe; writes fail with EPIPE */
        if (stop_flag)
            return;
    }
    if (stop_flag) {
        if (now.tv_sec - first.tv_sec + (now.tv_nsec - first.tv_nsec) / 1e9 >= 1.0)
            signal(sig, SIG_DFL), raise(sig);
        return;
    }
    first = now;
    stop_flag = sig;
    static const char msg[] =
        "\nnas: stopping: finished trials are kept (Ctrl-C again to abort at once)\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
}

/* Issue 28: the files `nas run` makes beside a new database: the
 * database, SQLite's -wal, -shm and -journal, the run lock; the folder
 * reader's decode cache and the checkpoints are directories. */
static const char *const beside[] = {"", "-wal", "-shm", "-journal", ".lock", ".data", ".ckpt"};
#define N_BESIDE (sizeof beside / sizeof beside[0])

/* Which of them exist now: bit i for beside[i]. */
static unsigned beside_present(const char *db)
{
    unsigned m = 0;
    char p[NAS_PATH_MAX + 16];
    for (size_t i = 0; i < N_BESIDE; i++) {
        snprintf(p, sizeof p, "%s%s", db, beside[i]);
        if (access(p, F_OK) == 0)
            m |= 1u << i;
    }
    return m;
}

/* A run that made the database and failed before it held an experiment
 * leaves nothing behind: remove what it made (the directories only when
 * empty). Never a database that was there before the run. */
static void remove_new_db(const char *db, unsigned before)
{
    if (before & 1u)
        return;
    char p[NAS_PATH_MAX + 16];
    for (size_t i = 0; i < N_BESIDE; i++) {
        if (before & (1u << i))
            continue;
        snprintf(p, sizeof p, "%s%s", db, beside[i]);
        if (i >= N_BESIDE - 2)
            rmdir(p);
        else
            unlink(p);
    }
}

/* Issue 33: `nas run --report FILE`: the HTML report (nas_report_write_file,
 * atomic: FILE.tmp renamed), rewritten after every recorded trial with a
 * self-reload every LIVE_REFRESH_S seconds, and once more when the run
 * ends, without it. A failure to write warns once and the search goes on. */
#define LIVE_REFRESH_S 5
typedef struct live_report {
    const char *path;
    int warned;
} live_report;

static void write_report(live_report *lr, nas_store *st, int64_t exp_id, int refresh_s)
{
    nas_store_experiment e;
    nas_error err;
    nas_error_clear(&err);
    int rc = nas_store_experiment_get(st, exp_id, &e, &err);
    nas_report_opts ro = {.experiment = e.name, .top_k = 10, .refresh_s = refresh_s};
    if (rc == NAS_OK)
        rc = nas_report_write_file(st, &ro, lr->path, NULL, &err);
    if (rc != NAS_OK && !lr->warned++)
        fprintf(stderr, "nas run: warning: cannot write the report %s: %s\n", lr->path, err.msg);
}

static void on_trial(void *user, nas_store *st, int64_t exp_id)
{
    write_report(user, st, exp_id, LIVE_REFRESH_S);
}

/* The run is over: the last report, which no longer reloads itself. */
static void final_report(live_report *lr, const char *db, int64_t exp_id)
{
    nas_store *st = NULL;
    nas_error err;
    nas_error_clear(&err);
    if (nas_store_open(db, 1, &st, &err) == NAS_OK)
        write_report(lr, st, exp_id, 0);
    else if (!lr->warned++)
        fprintf(stderr, "nas run: warning: cannot write the report %s: %s\n", lr->path, err.msg);
    nas_store_close(st);
}


/* Issue 33: what the command line adds to the config: --time-limit
 * (overrides search.time_limit) and --enqueue (appended to search.enqueue). */
typedef struct run_extra {
    double time_limit; /* < 0: not given */
    const char *enqueue[NAS_ENQUEUE_MAX];
    int n_enqueue;
} run_extra;

/* Apply x to the loaded config: each --enqueue genotype is checked with
 * the space's parser and kept in its canonical form. Returns 0, or
 * prints why and returns NAS_EXIT_USAGE. */
static int apply_extra(const run_extra *x, nas_config *cfg)
{
    if (x->time_limit >= 0)
        cfg->search.time_limit = x->time_limit;
    if (x->n_enqueue == 0)
        return 0;
    if (cfg->search.n_enqueue + x->n_enqueue > NAS_ENQUEUE_MAX) {
        fprintf(stderr, "nas run: %d genotypes to enqueue (%d in search.enqueue, %d --enqueue), "
                "expected at most %d\n", cfg->search.n_enqueue + x->n_enqueue,
                cfg->search.n_enqueue, x->n_enqueue, NAS_ENQUEUE_MAX);
        return NAS_EXIT_USAGE;
    }
    nas_space *sp = NULL;
    nas_error err;
    if (nas_space_create(&cfg->space, &sp, &err) != NAS_OK) /* nas run checks them then */
        sp = NULL;
    for (int i = 0; i < x->n_enqueue; i++) {
        char *dst = cfg->search.enqueue[cfg->search.n_enqueue];
        nas_genotype g;
        const char *why = NULL;
        if (strlen(x->enqueue[i]) >= NAS_GENOTYPE_STR_MAX)
            why = "it is too long";
        else if (sp && nas_space_parse(sp, x->enqueue[i], &g, &err) != NAS_OK)
            why = err.msg;
        else if (sp && !nas_space_is_valid(sp, &g))
            why = "it cannot be trained (no path carries data from input to output)";
        if (why) {
            fprintf(stderr, "nas run: --enqueue '%s' is not a genotype of the space of %s: %s\n",
                    x->enqueue[i], cfg->path, why);
            nas_space_destroy(sp);
            return NAS_EXIT_USAGE;
        }
        if (sp)
            nas_space_format(sp, &g, dst, NAS_GENOTYPE_STR_MAX);
        else
            snprintf(dst, NAS_GENOTYPE_STR_MAX, "%s", x->enqueue[i]);
        cfg->search.n_enqueue++;
    }
    nas_space_destroy(sp);
    return 0;
}

static int run_config(const char *conf, const nas_run_opts *opts, const run_extra *x,
                      nas_config *cfgp, nas_run_summary *sum)
{
    const char *db = opts->db_path;
    nas_error err;
    nas_error_clear(&err);
    int rc = nas_config_load(conf, cfgp, &err);
    if (rc != NAS_OK) {
        fprintf(stderr, "nas run: %s\n", err.msg);
        return NAS_EXIT_USAGE; /* a missing or bad config is the user's input */
    }
    if (apply_extra(x, cfgp) != 0)
        return NAS_EXIT_USAGE;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: poll() returns EINTR at once */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* `nas run ... | head` closing the pipe stops like Ctrl-C (trials marked
     * interrupted, the lock released), not killed with the experiment left
     * "running" */
    sigaction(SIGPIPE, &sa, NULL);

    unsigned before = beside_present(db);
    nas_run_opts o = *opts;
    o.time_limit_from_cli = x->time_limit >= 0; /* the messages name --time-limit */
    rc = nas_search_run(cfgp, &o, sum, &err);

    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_IGN); /* the summary to a closed pipe is lost, not fatal */
    if (opts->on_trial_user && !sum->mpi_worker && sum->experiment_id > 0)
        final_report(opts->on_trial_user, db, sum->experiment_id); /* issue 33 */
    if (sum->mpi_worker) { /* issue 4: an MPI worker rank; rank 0 reports */
        if (rc != NAS_OK)
            fprintf(stderr, "nas run (MPI worker): %s\n", err.msg);
        return rc == NAS_OK ? NAS_EXIT_OK : NAS_EXIT_FAIL;
    }

    /* The command that resumes this experiment: --experiment when it is not
     * the config's name (--new, --experiment). */
    const char *ename = sum->experiment[0] ? sum->experiment : cfgp->experiment;
    const char *rname = sum->parent_experiment[0] ? sum->parent_experiment : ename; /* issue 32 */
    char resume[3 * NAS_SHELL_QUOTE_MAX(NAS_PATH_MAX) + 8 * NAS_GENOTYPE_STR_MAX];
    char qconf[NAS_SHELL_QUOTE_MAX(NAS_PATH_MAX)], qdb[NAS_SHELL_QUOTE_MAX(NAS_PATH_MAX)];
    char qname[NAS_SHELL_QUOTE_MAX(NAS_NAME_MAX)];
    int renamed = strcmp(rname, cfgp->experiment) != 0;
    snprintf(resume, sizeof resume, "nas run %s --db %s%s%s", /* issue 29: pasteable */
             nas_shell_quote(conf, qconf, sizeof qconf), nas_shell_quote(db, qdb, sizeof qdb),
             renamed ? " --experiment " : "", renamed ? nas_shell_quote(rname, qname, sizeof qname) : "");
    for (int i = 0; i < x->n_enqueue; i++) { /* issue 33: defining, so repeated */
        char qg[NAS_SHELL_QUOTE_MAX(NAS_GENOTYPE_STR_MAX)];
        size_t k = strlen(resume);
        snprintf(resume + k, sizeof resume - k, " --enqueue %s",
                 nas_shell_quote(x->enqueue[i], qg, sizeof qg));
    }
    if (rc != NAS_OK && rc != NAS_EINTR) {
        fprintf(stderr, "nas run: %s\n", err.msg);
        if (sum->experiment_id <= 0 && rc != NAS_EBUSY) /* another run's database: keep it */
            remove_new_db(db, before);
        if (sum->experiment_id > 0 && sum->done + sum->failed > 0)
            fprintf(stderr,
                    "nas run: finished trials are kept in %s (%d done, %d failed); resume with "
                    "`%s`\n",
                    db, sum->done, sum->failed, resume);
        return nas_cli_exit_code(rc) == NAS_EXIT_USAGE ? NAS_EXIT_USAGE : NAS_EXIT_FAIL;
    }

    nas_report_run_summary(sum, rc, ename, db, resume, stdout, stderr);
    /* Issue 22: the exit code tells whether the search produced anything.
     * Every finished trial failed: 1. Some failed: 0 and a warning. */
    if (rc == NAS_EINTR && !sum->time_limit) /* issue 33: the time limit is an end */
        return 130;
    return sum->failed > 0 && sum->done == 0 ? NAS_EXIT_FAIL : NAS_EXIT_OK;
}

int nas_cmd_run(int argc, char **argv)
{
    const char *conf = NULL;
    nas_run_opts o = {.db_path = "nas.db", .stop = &stop_flag, .log = stderr};
    live_report live = {NULL, 0};
    run_extra x = {.time_limit = -1};
    for (int i = 1; i < argc; i++) {
        const char *val = NULL; /* issue 33: --time-limit and --enqueue take a value */
        int tl = !strcmp(argv[i], "--time-limit") || !strncmp(argv[i], "--time-limit=", 13);
        int enq = !strcmp(argv[i], "--enqueue") || !strncmp(argv[i], "--enqueue=", 10);
        if (tl || enq) {
            const char *eq = strchr(argv[i], '=');
            val = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
        }
        if (tl) {
            if (!val || nas_parse_duration(val, &x.time_limit) != 0 || x.time_limit > 1e9)
                return nas_cli_usage_error("run", "--time-limit needs a duration: seconds, or a "
                                           "number with a unit such as 90s, 30m, 2h (0: none)%s%s%s",
                                           val ? "; got '" : "", val ? val : "", val ? "'" : "");
            continue;
        }
        if (enq) {
            if (!val || !*val)
                return nas_cli_usage_error("run", "--enqueue needs a genotype of the space");
            if (x.n_enqueue >= NAS_ENQUEUE_MAX)
                return nas_cli_usage_error("run", "more than %d --enqueue genotypes",
                                           NAS_ENQUEUE_MAX);
            x.enqueue[x.n_enqueue++] = val;
            continue;
        }
        if (strcmp(argv[i], "--db") == 0) {
            if (++i >= argc)
                return nas_cli_usage_error("run", "--db needs a path");
            o.db_path = argv[i];
        } else if (strncmp(argv[i], "--db=", 5) == 0) {
            o.db_path = argv[i] + 5;
        } else if (strcmp(argv[i], "--experiment") == 0 ||
                   strncmp(argv[i], "--experiment=", 13) == 0) {
            if (argv[i][12] == '=')
                o.experiment = argv[i] + 13;
            else if (++i < argc)
                o.experiment = argv[i];
            if (!o.experiment || !nas_config_name_ok(o.experiment))
                return nas_cli_usage_error("run", "--experiment needs a name (printable, 1 to "
                                           "%d characters)", NAS_NAME_MAX - 1);
        } else if (strcmp(argv[i], "--report") == 0 || strncmp(argv[i], "--report=", 9) == 0) {
            if (argv[i][8] == '=')
                live.path = argv[i] + 9;
            else if (++i < argc)
                live.path = argv[i];
            if (!live.path || !*live.path)
                return nas_cli_usage_error("run", "--report needs a path (the HTML report to "
                                           "keep up to date)");
            o.on_trial = on_trial; /* issue 33: a live report */
            o.on_trial_user = &live;
        } else if (strcmp(argv[i], "--new") == 0) {
            o.new_experiment = 1;
        } else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
            o.quiet = 1;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return nas_cli_unknown_option("run", argv[i]);
        } else if (!conf) {
            conf = argv[i];
        } else {
            return nas_cli_usage_error("run", "unexpected argument '%s' (one CONF file)", argv[i]);
        }
    }
    if (!conf)
        return nas_cli_usage_error("run", "missing CONF (the space.conf to search)");
    if (!*o.db_path)
        return nas_cli_usage_error("run", "--db needs a path");

    nas_config *cfgp = malloc(sizeof *cfgp); /* large; not on the stack */
    if (!cfgp) {
        fprintf(stderr, "nas run: out of memory\n");
        return NAS_EXIT_FAIL;
    }
    nas_run_summary sum = {0};
    int code = run_config(conf, &o, &x, cfgp, &sum);
    free(cfgp);
    /* issue 20: under mpirun, rank 0 ends MPI only now that the summary is
     * printed, with this exit code (MPI_Abort when a rank was lost) */
    fflush(NULL);
    nas_search_mpi_finish(&sum, code);
    return code;
}
