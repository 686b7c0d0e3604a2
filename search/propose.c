/*
 * search/propose.c - the propose step: ask the strategy for a genotype that
 * is valid, new (its canonical key is not among the experiment's trials)
 * and within the MACs/params constraints (issue 6, docs/report.md
 * "Constraints"), and insert it as a pending trial. The same procedure
 * (nas__ctl_propose_new) runs in the replay, with the replayed history as
 * the dedupe, so the strategy sees the same calls.
 */
#include <stdio.h>
#include <string.h>
#include "nas/inspect.h" /* issue 14: counts of any space */
#include "search/controller_impl.h"

/* ---- dedupe ------------------------------------------------------------------- */

/* Known among the experiment's stored trials (live); a failed look-up
 * sets c->db_failed and answers known, so nothing unchecked is inserted. */
static int known_in_store(void *ctx, const nas_genotype *g)
{
    ctl *c = ctx;
    char key[NAS_GENOTYPE_STR_MAX];
    nas_space_key(c->space, g, key, sizeof key);
    int known = 0;
    if (nas_store_trial_known(c->st, c->exp, key, &known, &c->db_err) != NAS_OK) {
        c->db_failed = 1;
        return 1; /* never insert what we could not check */
    }
    return known;
}

/* ---- constraints checked before training (issue 6) ---------------------------- */

/* 1 when g's analytic MACs or params (nas_count_genotype: the net the
 * evaluator would build) exceed cfg->constraints: such a genotype is never
 * trained nor stored. A deterministic function of g, so the replay makes
 * the same decisions. */
static int over_static_constraints(ctl *c, const nas_genotype *g)
{
    const nas_config *cfg = c->cfg;
    if (!(cfg->constraints.mmacs > 0) && !(cfg->constraints.params > 0))
        return 0;
    int64_t macs = 0, params = 0;
    if (nas_count_genotype(NULL, c->space, g, &macs, &params) != NAS_OK) /* cell or chain */
        return 0; /* the evaluator fails it with the reason */
    int over = (cfg->constraints.mmacs > 0 && (double)macs / 1e6 > cfg->constraints.mmacs) ||
               (cfg->constraints.params > 0 && (double)params > cfg->constraints.params);
    if (over) {
        c->n_infeasible++;
        if (c->min_macs < 0 || macs < c->min_macs)
            c->min_macs = macs;
        if (c->min_params < 0 || params < c->min_params)
            c->min_params = params;
    }
    return over;
}

/* The dedupe the strategy sees: known, or over a constraint (so evolution
 * re-mutates, random and NAO sample again, and none of them ever learns
 * from or proposes an infeasible cell). */
static int known_or_infeasible(void *ctx, const nas_genotype *g)
{
    ctl *c = ctx;
    return over_static_constraints(c, g) || c->inner_known(c, g);
}

/* ---- known architectures first (issue 33) --------------------------------------- */

int nas__ctl_enqueue_init(ctl *c, nas_error *err)
{
    const nas_config *cfg = c->cfg;
    c->n_enq = c->enq_pos = 0;
    for (int i = 0; i < cfg->search.n_enqueue && i < NAS_ENQUEUE_MAX; i++) {
        nas_error perr;
        if (nas_space_parse(c->space, cfg->search.enqueue[i], &c->enq[i], &perr) != NAS_OK)
            return nas_error_set(err, NAS_ECONFIG, "%s: search.enqueue[%d] = \"%s\" is not a "
                                 "genotype of this space: %s", cfg->path, i,
                                 cfg->search.enqueue[i], perr.msg);
        if (!nas_space_is_valid(c->space, &c->enq[i]))
            return nas_error_set(err, NAS_ECONFIG, "%s: search.enqueue[%d] = \"%s\" cannot be "
                                 "trained in this space", cfg->path, i, cfg->search.enqueue[i]);
        c->n_enq++;
    }
    return NAS_OK;
}

/* The next enqueued genotype that `known` does not know and that fits the
 * constraints into *g (told to the strategy: nas_strategy_enqueued);
 * 0 when none is left. The skipped ones are said in a live search (no
 * replay history: c->hist NULL), where the replay stays silent.
 * Errors (negative): the store's (a failed dedupe look-up). */
static int next_enqueued(ctl *c, nas_known_fn known, nas_genotype *g, nas_error *err)
{
    while (c->enq_pos < c->n_enq) {
        int i = c->enq_pos++;
        const nas_genotype *q = &c->enq[i];
        int over = over_static_constraints(c, q), dup = !over && known(c, q);
        if (c->db_failed) {
            *err = c->db_err;
            return -err->code;
        }
        if (!over && !dup) {
            *g = *q;
            nas_strategy_enqueued(c->strat, g);
            return 1;
        }
        if (!c->hist)
            nas__ctl_say(c, "nas: search.enqueue[%d] %s %s", i, c->cfg->search.enqueue[i],
                         over ? "is over constraints.mmacs/params: not evaluated"
                              : "is already among the experiment's trials (same canonical "
                                "key): not repeated");
    }
    while (c->warm_pos < c->n_warm) { /* issue 31: the warm-up's */
        const nas_genotype *q = &c->warm[c->warm_pos++];
        int skip = over_static_constraints(c, q) || known(c, q);
        if (c->db_failed) {
            *err = c->db_err;
            return -err->code;
        }
        if (!skip) {
            *g = *q;
            nas_strategy_enqueued(c->strat, g);
            return 2;
        }
    }
    return 0;
}

/*
 * Ask the strategy for a genotype whose canonical key `known` does not
 * know and that fits the MACs/params constraints; the same procedure runs
 * live and in the replay so the strategy sees the same calls. Issue 33:
 * the enqueued genotypes come first (next_enqueued).
 * NAS_EINFEASIBLE when nothing new (or nothing feasible) turns up.
 */
int nas__ctl_propose_new(ctl *c, nas_known_fn known, nas_genotype *g, char *key, nas_error *err)
{
    c->inner_known = known;
    int enq = next_enqueued(c, known, g, err);
    c->enq_last = enq > 0 ? enq : 0;
    if (enq < 0)
        return -enq;
    if (enq > 0) {
        nas_space_key(c->space, g, key, NAS_GENOTYPE_STR_MAX);
        return NAS_OK;
    }
    int misses = 0;
    for (int i = 0; i < MAX_PROPOSALS; i++) {
        int rc = nas_strategy_propose(c->strat, known_or_infeasible, c, g, err);
        if (rc == NAS_EINFEASIBLE && c->n_infeasible > 0 && !c->db_failed)
            return nas__ctl_no_feasible(c, err);
        if (rc != NAS_OK)
            return rc;
        if (c->db_failed) {
            *err = c->db_err;
            return err->code;
        }
        if (!nas_space_is_valid(c->space, g))
            continue;
        if (over_static_constraints(c, g)) { /* a strategy that ignored is_known */
            if (++misses >= MAX_INFEASIBLE)
                return nas__ctl_no_feasible(c, err);
            i--;
            continue;
        }
        nas_space_key(c->space, g, key, NAS_GENOTYPE_STR_MAX);
        if (!known(c, g))
            return NAS_OK;
        if (c->db_failed) {
            *err = c->db_err;
            return err->code;
        }
    }
    return nas_error_set(err, NAS_EINFEASIBLE,
                         "strategy %s proposed nothing new in %d attempts (space exhausted?)",
                         nas_strategy_name(c->strat), MAX_PROPOSALS);
}

int nas__ctl_propose(ctl *c, flight *f, nas_error *err)
{
    char key[NAS_GENOTYPE_STR_MAX];
    int rc = nas__ctl_propose_new(c, known_in_store, &f->g, key, err);
    if (rc != NAS_OK)
        return rc;
    nas_space_format(c->space, &f->g, f->geno, sizeof f->geno);
    nas__ctl_report_round(c);
    rc = nas_store_trial_insert(c->st, c->exp, f->geno, key,
                                c->enq_last == 2   ? "warmup"
                                : c->enq_last == 1 ? "enqueued"
                                                   : nas_strategy_origin(c->strat),
                                &f->trial, err);
    if (rc == NAS_OK)
        rc = nas__ctl_pend_push(c, f->trial, &f->g, NULL, err);
    return rc;
}
