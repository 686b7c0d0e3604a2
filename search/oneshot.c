/*
 * search/oneshot.c - nas_search_run (nas/search.h): one search
 * (search/controller.c, nas__search_run_one), and for evaluator.kind =
 * "supernet" (issue 32, docs/one-shot.md) the third phase after it:
 *
 *   phase 1  the supernet's training (search/prepare.c, inside the search's
 *            start, before its workers fork);
 *   phase 2  the configured strategy proposes genotypes, each evaluated by
 *            inherited weights (evaluator/supernet_eval.c) on the pool;
 *   phase 3  the best supernet.retrain_top trials are retrained stand-alone
 *            with the proxy recipe as an ordinary search of their own, the
 *            experiment "NAME-finalists": kind "train", their genotypes as
 *            its search.enqueue, a budget of one trial each. Each finalist
 *            is linked to its supernet trial (store table finalist), and,
 *            as the most recent experiment with a done trial, it is what
 *            `nas query`, `nas report` and `nas export --best` read by
 *            default: the best retrained finalist.
 *
 * An extended supernet search (a larger search.trials) may rank other
 * subnets into its top K: the finalists experiment then keeps the
 * finalists it retrained and adds the new ones (its enqueue list grows,
 * old ones first, so its replay proposes what it stored), up to
 * NAS_SUPERNET_FINALISTS_MAX. Under mpirun phase 3 runs on the worker
 * ranks too: rank 0 tells them (NEXT, search/pool_mpi.c) before the
 * finalists search, and each rank serves it (serve_phase3). Calls go one
 * way: this file calls controller.c (nas__search_run_one), the MPI
 * transport and the store; nothing calls back.
 *
 * One run lock (search/run_lock.h) covers every phase: the first search
 * takes it and leaves it to nas_search_run, which hands it to the
 * finalists' search and releases it at the end, so no other `nas run` can
 * write the database between phase 2 and phase 3. MPI worker ranks never
 * take it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "search/controller_impl.h"
#include "search/pool_msg.h" /* issue 32: phase 3 on the MPI worker ranks (nas__mpi_next) */

/* The finalists' genotypes: those the finalists experiment has (in trial
 * order), then the supernet search's best not among them, until K new
 * picks or NAS_SUPERNET_FINALISTS_MAX in all. */
typedef struct finalists {
    int n, from_before, k, picked;
    char geno[NAS_SUPERNET_FINALISTS_MAX][NAS_GENOTYPE_STR_MAX];
    char key[NAS_SUPERNET_FINALISTS_MAX][NAS_GENOTYPE_STR_MAX];
} finalists;

static int have_key(const finalists *f, const char *key)
{
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->key[i], key))
            return 1;
    return 0;
}

static int add_before(void *ctx, const nas_store_trial *t)
{
    finalists *f = ctx;
    if (f->n >= NAS_SUPERNET_FINALISTS_MAX || have_key(f, t->arch_key))
        return f->n >= NAS_SUPERNET_FINALISTS_MAX;
    snprintf(f->geno[f->n], sizeof f->geno[0], "%s", t->genotype);
    snprintf(f->key[f->n], sizeof f->key[0], "%s", t->arch_key);
    f->n++;
    f->from_before++;
    return 0;
}

/* The supernet trials by rank: the first K done, feasible ones. */
static int add_best(void *ctx, const nas_store_trial *t)
{
    finalists *f = ctx;
    if (f->picked >= f->k || f->n >= NAS_SUPERNET_FINALISTS_MAX)
        return 1;
    if (t->status != NAS_TRIAL_DONE || !isfinite(t->score))
        return 0;
    f->picked++;
    if (!have_key(f, t->arch_key)) {
        snprintf(f->geno[f->n], sizeof f->geno[0], "%s", t->genotype);
        snprintf(f->key[f->n], sizeof f->key[0], "%s", t->arch_key);
        f->n++;
    }
    return 0;
}

/* Read the finalists' list from the database; *fin_id the finalists
 * experiment (0: none yet). */
static int pick(const char *db, int64_t sn_exp, const char *name, int k, finalists *f,
                int64_t *fin_id, nas_error *err)
{
    nas_store *st = NULL;
    int rc = nas_store_open(db, 0, &st, err);
    if (rc)
        return rc;
    nas_store_experiment fe;
    nas_error ferr;
    *fin_id = 0;
    if (nas_store_experiment_find(st, name, &fe, &ferr) == NAS_OK) {
        *fin_id = fe.id;
        rc = nas_store_trial_foreach(st, fe.id, NAS_STORE_ORDER_ID, 0, add_before, f, err);
    }
    f->k = k;
    if (!rc)
        rc = nas_store_trial_foreach(st, sn_exp, NAS_STORE_ORDER_RANK, 0, add_best, f, err);
    nas_store_close(st);
    return rc;
}

/* The finalists' search: the config's data, space and proxy recipe,
 * evaluator.kind "train", the list as search.enqueue, one trial each. */
static void finalists_config(const nas_config *cfg, const finalists *f, const char *name,
                             nas_config *out)
{
    *out = *cfg;
    snprintf(out->experiment, sizeof out->experiment, "%s", name);
    out->evaluator.kind = NAS_EVALUATOR_TRAIN;
    out->search.strategy = NAS_STRATEGY_RANDOM;
    out->search.trials = f->n;
    out->search.warmup.proxy[0] = '\0';
    out->search.move_proposal.proxy[0] = '\0';
    out->search.fidelity.scheduler = NAS_FIDELITY_NONE;
    out->search.n_enqueue = f->n;
    for (int i = 0; i < f->n; i++)
        snprintf(out->search.enqueue[i], sizeof out->search.enqueue[i], "%s", f->geno[i]);
}

/* A finalists experiment made before this run lists fewer genotypes in
 * its search.enqueue (the supernet search was extended since): record the
 * longer list as its settings, so the search continues it (its stored
 * trials are the list's first ones, replayed as proposed). */
static int follow_list(const char *db, int64_t fin_id, const nas_config *fcfg, nas_error *err)
{
    nas_store *st = NULL;
    char *canon = nas_config_canonical(fcfg);
    if (!canon)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    int rc = nas_store_open(db, 0, &st, err);
    if (!rc)
        rc = nas_store_experiment_update(st, fin_id, canon, "", fcfg->path, fcfg->search.trials,
                                         err);
    nas_store_close(st);
    free(canon);
    return rc;
}

static int link_finalists(const char *db, int64_t fin_exp, int64_t sn_exp, nas_error *err)
{
    nas_store *st = NULL;
    int rc = nas_store_open(db, 0, &st, err);
    if (!rc)
        rc = nas_store_finalist_link(st, fin_exp, sn_exp, err);
    nas_store_close(st);
    return rc;
}

/* Phase 3 after a finished supernet search `sn` (its summary), within
 * time_limit seconds (0: none); *summary becomes the finalists search's. */
static int phase3(const nas_config *cfg, double time_limit, const nas_run_opts *opts,
                  nas_run_lock *lock, const nas_run_summary *sn, nas_run_summary *summary,
                  nas_error *err)
{
    FILE *log = opts->log ? opts->log : stderr;
    char name[NAS_NAME_MAX];
    if (snprintf(name, sizeof name, "%s-finalists", sn->experiment) >= (int)sizeof name)
        return nas_error_set(err, NAS_ECONFIG, "%s: experiment name '%s' is too long for its "
                             "finalists experiment '%s-finalists' (at most %d bytes)", cfg->path,
                             sn->experiment, sn->experiment, NAS_NAME_MAX - 1);
    finalists *f = calloc(1, sizeof *f);
    nas_config *fcfg = malloc(sizeof *fcfg);
    int64_t fin_id = 0;
    int rc = f && fcfg ? NAS_OK : nas_error_set(err, NAS_ENOMEM, "out of memory");
    if (!rc)
        rc = pick(opts->db_path, sn->experiment_id, name, cfg->supernet.retrain_top, f, &fin_id,
                  err);
    if (!rc && f->n > 0) {
        finalists_config(cfg, f, name, fcfg);
        fcfg->search.time_limit = time_limit;
        if (!opts->quiet)
            fprintf(log, "nas: phase 3: %d of the best of %d subnets retrained stand-alone with the "
                    "proxy recipe, as experiment '%s'%s\n", f->n,
                    sn->done, name, f->from_before ? " (continued)" : "");
        fflush(log);
        /* NAS_FAULT phase_gap_ms (search/pool_msg.h): a pause here, where another
         * `nas run` would get in if the run lock were not held across the phases
         * (tests/e2e/test_oneshot_search.sh) */
        nas__fault_nap("phase_gap_ms");
        if (fin_id > 0)
            rc = follow_list(opts->db_path, fin_id, fcfg, err);
        nas_run_opts o = *opts;
        o.experiment = NULL; /* fcfg's name: a rerun names the supernet search, not this */
        o.new_experiment = 0;
        o.mpi_generation = opts->mpi_generation + 1; /* the search after NEXT */
        summary->experiment_id = -1; /* the finalists', once their search has made it */
        if (!rc && sn->mpi_ranks > 0) /* the worker ranks go on to serve this search */
            rc = nas__mpi_next(name, err);
        if (!rc)
            rc = nas__search_run_one(fcfg, &o, lock, summary, err);
        nas_error lerr;
        if (summary->experiment_id > 0 && summary->experiment_id != sn->experiment_id &&
            link_finalists(opts->db_path, summary->experiment_id, sn->experiment_id, &lerr) &&
            rc == NAS_OK)
            rc = nas_error_set(err, lerr.code, "%s", lerr.msg);
    }
    free(f);
    free(fcfg);
    return rc;
}

/* An MPI worker rank that rank 0 told to go on to phase 3 (its finalists
 * experiment `summary->mpi_next`) serves it with the evaluator rank 0's
 * finalists search has: fcfg derived from cfg as phase3() derives it, and
 * through the same nas__search_run_one (the jobs carry the genotypes, so
 * the rank needs not the list; it reads the database only for the stored
 * defaults, read-only, as every rank does). */
static int serve_phase3(const nas_config *cfg, const nas_run_opts *opts,
                        nas_run_summary *summary, nas_error *err)
{
    char name[NAS_NAME_MAX];
    snprintf(name, sizeof name, "%s", summary->mpi_next);
    finalists *f = calloc(1, sizeof *f);
    nas_config *fcfg = malloc(sizeof *fcfg);
    int rc = f && fcfg ? NAS_OK
                       : nas_error_set(err, NAS_ENOMEM, "MPI worker: out of memory for phase 3 "
                                       "('%s')", name);
    if (!rc) {
        finalists_config(cfg, f, name, fcfg);
        nas_run_opts o = *opts;
        o.experiment = NULL;
        o.new_experiment = 0;
        o.mpi_generation = opts->mpi_generation + 1; /* the search after NEXT */
        rc = nas__search_run_one(fcfg, &o, NULL, summary, err); /* ends MPI */
        /* a failure before it served (data unreadable on this node) leaves
         * MPI up: end it here, or Open MPI would abort every rank at this
         * process's exit; rank 0 gives this rank up and keeps the others
         * (a no-op when MPI has ended) */
        if (rc)
            nas__mpi_stop(0, 1);
    } else {
        nas__mpi_stop(0, 1);
    }
    free(f);
    free(fcfg);
    return rc;
}

/* After a finished supernet search (*summary, its lock in *lock): phase 3,
 * unless an MPI worker rank was lost or the time is out (both said);
 * *summary becomes the finalists search's. */
static int after_phase2(const nas_config *cfg, const nas_run_opts *opts, nas_run_lock *lock,
                        nas_run_summary *summary, nas_error *err)
{
    FILE *log = opts->log ? opts->log : stderr;
    if (summary->mpi_lost > 0) { /* such a rank cannot take phase 3's jobs, nor be told */
        if (!opts->quiet)
            fprintf(log, "nas: phase 3 (retraining the finalists) is not run: %d MPI worker "
                    "rank(s) were given up on in phase 2; run the same command again to "
                    "retrain them\n", summary->mpi_lost);
        return NAS_OK;
    }
    double left = 0; /* issue 33: a time limit covers both searches (0: none) */
    if (cfg->search.time_limit > 0) {
        left = cfg->search.time_limit - summary->wall_s;
        if (left < 1) {
            if (!opts->quiet)
                fprintf(log, "nas: the time limit was reached with the supernet search done: "
                        "run the same command again to retrain its finalists (phase 3)\n");
            return NAS_OK;
        }
    }
    nas_run_summary sn = *summary;
    int rc = phase3(cfg, left, opts, lock, &sn, summary, err);
    /* a rerun of the same command resumes the supernet search, and with it the finalists */
    snprintf(summary->parent_experiment, sizeof summary->parent_experiment, "%s", sn.experiment);
    summary->mpi_ranks = sn.mpi_ranks;
    return rc;
}

int nas_search_run(const nas_config *cfg, const nas_run_opts *opts, nas_run_summary *summary,
                   nas_error *err)
{
    nas_run_summary own;
    if (!summary)
        summary = &own;
    nas_run_lock lock = {-1, -1}; /* held from phase 1 to the end of phase 3 */
    int rc = nas__search_run_one(cfg, opts, &lock, summary, err);
    if (rc == NAS_OK && summary->mpi_worker && summary->mpi_next[0])
        return serve_phase3(cfg, opts, summary, err); /* a worker rank: no lock taken */
    if (rc == NAS_OK && cfg && nas_evaluator_kind_prepares(cfg) && !summary->mpi_worker &&
        summary->done > 0 && cfg->supernet.retrain_top > 0)
        rc = after_phase2(cfg, opts, &lock, summary, err);
    nas__run_unlock(&lock);
    return rc;
}
