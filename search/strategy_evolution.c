/*
 * search/strategy_evolution.c - regularized (aging) evolution.
 *
 * Real, Aggarwal, Huang, Le, "Regularized Evolution for Image Classifier
 * Architecture Search", AAAI 2019, Algorithm 1, with P = search.population
 * and S = search.sample_size:
 *   - the first P proposals are uniform random samples;
 *   - afterwards each proposal draws S members uniformly (with replacement,
 *     as in the paper's pseudo-code) from the current population, takes the
 *     one with the best score (the first drawn wins ties) and mutates one
 *     edge of it (nas_space_mutate);
 *   - every observed result joins the population; when it holds more than
 *     P members the oldest is removed (aging: removal by age, not by score).
 * Failed trials (score NaN) never join the population. A child the
 * controller already knows is re-mutated from the same parent (up to 64
 * times), then by a random walk from the last child, then replaced by a
 * random unknown genotype. The strategy is a deterministic function of the
 * seed and of the order of proposals and observations.
 *
 * Several objectives (cfg->n_objectives > 1), after NSGA-II (Deb, Pratap,
 * Agarwal, Meyarivan, IEEE TEC 6(2), 2002) inside the aging population:
 * each member keeps its vector of objective values (from
 * nas_strategy_observe_result); the tournament draws the same S members
 * with the same random numbers, and the winner is the one with the lowest
 * non-dominated rank within the current population, then the largest
 * crowding distance within its front (NSGA-II's crowded-comparison
 * operator), then the first drawn. Ranks and distances are recomputed when
 * the population changes. A trial the controller scores NaN (failed, or a
 * violated constraint) still never joins; a member with an unmeasured
 * objective joins but is unranked (loses to every ranked member). Members
 * added by the scalar nas_strategy_observe have no vector: while any such
 * member is alive, selection falls back to the scalar score. With one
 * objective nothing of this runs: proposals are identical to the
 * single-objective algorithm above.
 *
 * Issue 31, search.evolution.move_proposal = { proxy; candidates = C; }:
 * the move proposal of Abdelfattah et al., "Zero-Cost Proxies for
 * Lightweight NAS" (ICLR 2021): the tournament's winner is mutated C times
 * (each child new to the controller, as above, and distinct by canonical
 * key) and the child the zero-cost proxy scores best is proposed (ties:
 * the first mutated). The proxy's scores are not trials. Without it
 * (proxy "") proposals are exactly those of the algorithm above.
 */
#include <math.h>   /* isnan */
#include <stdlib.h> /* calloc, free */
#include <string.h>
#include "nas/zerocost.h"
#include "strategy_impl.h"
#include "search/key_set.h"

#define NAS__REMUTATE_PARENT 64
#define NAS__RANDOM_WALK 1024

typedef struct member {
    nas_genotype g;
    double score;
    int has_vec;                         /* multi-objective: vec is set */
    double vec[NAS_MAX_OBJECTIVES];      /* objective values, unoriented */
    int rank;                            /* non-dominated rank (-1: unranked) */
    double crowd;                        /* crowding distance within its front */
} member;

typedef struct evo {
    int cap;      /* P */
    int head;     /* index of the oldest member */
    int count;    /* members alive, <= cap */
    long proposed;
    member *pop;  /* ring buffer of cap members */
    /* multi-objective */
    int n_obj;     /* cfg->n_objectives when > 1, else 0 */
    int maximize[NAS_MAX_OBJECTIVES];
    int dirty;     /* ranks and crowding need recomputing */
    double *pts;   /* cap x n_obj scratch */
    int *rank;     /* cap scratch */
    double *crowd; /* cap scratch */
    nas_zc_scorer *zc; /* issue 31: the move proposal's proxy (made on first use) */
    nas_proxy_fn proxy_fn; /* ... or precomputed scores (nas_strategy_set_proxy) */
    void *proxy_ctx;
} evo;

/* Issue 31: the move proposal's score of g (NaN: failed or unknown). */
static double proxy_score(evo *e, const nas_genotype *g)
{
    if (e->proxy_fn)
        return e->proxy_fn(e->proxy_ctx, g);
    double v = NAN;
    nas_error err;
    (void)nas_zc_scorer_score(e->zc, g, &v, &err);
    return v;
}

static void evo_set_proxy(nas_strategy *s, nas_proxy_fn fn, void *ctx)
{
    evo *e = s->context;
    e->proxy_fn = fn;
    e->proxy_ctx = ctx;
}

static const member *evo_at(const evo *e, int i) { return &e->pop[(e->head + i) % e->cap]; }

/* 1 when multi-objective selection applies: several objectives and every
 * live member has its vector. Recomputes ranks and crowding if needed. */
static int evo_mo_ready(evo *e)
{
    if (e->n_obj < 2)
        return 0;
    for (int i = 0; i < e->count; i++)
        if (!evo_at(e, i)->has_vec)
            return 0;
    if (!e->dirty)
        return 1;
    int d = e->n_obj;
    for (int i = 0; i < e->count; i++)
        for (int k = 0; k < d; k++)
            e->pts[(size_t)i * d + k] = evo_at(e, i)->vec[k];
    if (nas_pareto_sort(e->pts, e->count, d, e->maximize, e->rank) < 0 ||
        nas_pareto_crowding(e->pts, e->count, d, e->rank, e->crowd) != NAS_OK)
        return 0; /* cannot happen: scratch is preallocated, sizes are valid */
    for (int i = 0; i < e->count; i++) {
        member *m = &e->pop[(e->head + i) % e->cap];
        m->rank = e->rank[i];
        m->crowd = e->crowd[i];
    }
    e->dirty = 0;
    return 1;
}

/* NSGA-II's crowded comparison: 1 if a beats b (lower rank, unranked last;
 * equal rank: larger crowding distance). */
static int mo_better(const member *a, const member *b)
{
    unsigned ra = (unsigned)a->rank, rb = (unsigned)b->rank; /* -1 -> largest */
    if (ra != rb)
        return ra < rb;
    if (a->rank < 0)
        return 0;
    return a->crowd > b->crowd;
}

/* A mutation of parent that is_known does not know into *child: the
 * parent re-mutated, then a random walk, then a random unknown genotype. */
static int mutate_new(nas_strategy *s, const nas_genotype *parent, nas_known_fn is_known,
                      void *known_ctx, nas_genotype *child, nas_error *err)
{
    nas_space_mutate(s->space, &s->rng, parent, child);
    for (int i = 0; is_known && is_known(known_ctx, child); i++) {
        if (i < NAS__REMUTATE_PARENT) {
            nas_space_mutate(s->space, &s->rng, parent, child);
        } else if (i < NAS__REMUTATE_PARENT + NAS__RANDOM_WALK) {
            nas_genotype next;
            nas_space_mutate(s->space, &s->rng, child, &next);
            *child = next;
        } else {
            return nas__strategy_sample_new(s, is_known, known_ctx, child, err);
        }
    }
    return NAS_OK;
}

/* Issue 31: *child (the first mutation) and candidates - 1 more mutations
 * of parent, distinct by canonical key (a repeat is drawn again, at most
 * 4 x candidates draws in all); *child becomes the best-scoring one. */
static int move_proposal(nas_strategy *s, const nas_genotype *parent, nas_known_fn is_known,
                         void *known_ctx, nas_genotype *child, nas_error *err)
{
    evo *e = s->context;
    const char *proxy = s->cfg->search.move_proposal.proxy;
    int want = s->cfg->search.move_proposal.candidates > 0 ? s->cfg->search.move_proposal.candidates
                                                           : 10;
    int rc = e->zc || e->proxy_fn ? NAS_OK
                                   : nas_zc_scorer_create(s->cfg, s->space, proxy, &e->zc, err);
    if (rc != NAS_OK)
        return rc;
    nas__key_set seen;
    memset(&seen, 0, sizeof seen);
    char key[NAS_GENOTYPE_STR_MAX];
    nas_space_key(s->space, child, key, sizeof key);
    double best = NAN;
    if (nas__key_set_add(&seen, key) < 0)
        rc = nas_error_set(err, NAS_ENOMEM, "move proposal: out of memory");
    else
        best = proxy_score(e, child); /* failed: NaN, replaced */
    for (int got = 1, draws = 1; rc == NAS_OK && got < want && draws < 4 * want; draws++) {
        nas_genotype c;
        if ((rc = mutate_new(s, parent, is_known, known_ctx, &c, err)) != NAS_OK)
            break;
        nas_space_key(s->space, &c, key, sizeof key);
        if (nas__key_set_has(&seen, key))
            continue;
        if (nas__key_set_add(&seen, key) < 0) {
            rc = nas_error_set(err, NAS_ENOMEM, "move proposal: out of memory");
            break;
        }
        got++;
        double v = proxy_score(e, &c); /* a failed proxy: NaN, never chosen */
        if (!isnan(v) && (isnan(best) || v > best)) {
            best = v;
            *child = c;
        }
    }
    nas__key_set_free(&seen);
    return rc;
}

static int evo_propose(nas_strategy *s, nas_known_fn is_known, void *known_ctx,
                       nas_genotype *out, nas_error *err)
{
    evo *e = s->context;
    /* Seed phase; also used when no result has come back yet (all trials
     * failed, or the first P are still running). */
    if (e->proposed < e->cap || e->count == 0) {
        int rc = nas__strategy_sample_new(s, is_known, known_ctx, out, err);
        if (rc == NAS_OK)
            e->proposed++;
        return rc;
    }
    int sample = s->cfg->search.sample_size;
    int mo = evo_mo_ready(e);
    const member *best = NULL;
    for (int i = 0; i < sample; i++) {
        const member *m = evo_at(e, (int)nas_rng_bounded(&s->rng, (uint32_t)e->count));
        if (!best || (mo ? mo_better(m, best) : m->score > best->score))
            best = m;
    }
    nas_genotype child;
    int rc = mutate_new(s, &best->g, is_known, known_ctx, &child, err);
    if (rc == NAS_OK && s->cfg->search.move_proposal.proxy[0])
        rc = move_proposal(s, &best->g, is_known, known_ctx, &child, err);
    if (rc != NAS_OK)
        return rc;
    *out = child;
    e->proposed++;
    return NAS_OK;
}

static member *evo_add(evo *e, const nas_genotype *g, double score)
{
    if (e->count == e->cap) { /* age out the oldest */
        e->head = (e->head + 1) % e->cap;
        e->count--;
    }
    member *m = &e->pop[(e->head + e->count) % e->cap];
    m->g = *g;
    m->score = score;
    m->has_vec = 0;
    m->rank = -1;
    m->crowd = 0;
    e->count++;
    e->dirty = 1;
    return m;
}

static void evo_observe(nas_strategy *s, const nas_genotype *g, double score)
{
    evo *e = s->context;
    if (isnan(score))
        return;
    evo_add(e, g, score);
}

static void evo_observe_result(nas_strategy *s, const nas_genotype *g,
                               const nas_trial_result *res)
{
    evo *e = s->context;
    double score = nas_search_score(s->cfg, res, NULL, 0);
    if (isnan(score))
        return;
    member *m = evo_add(e, g, score);
    if (e->n_obj < 2)
        return;
    for (int k = 0; k < e->n_obj; k++)
        m->vec[k] = nas_objective_value(s->cfg->objectives[k].metric, res);
    m->has_vec = 1;
}

static void evo_destroy(nas_strategy *s)
{
    evo *e = s->context;
    if (e) {
        free(e->pop);
        free(e->pts);
        free(e->rank);
        free(e->crowd);
        nas_zc_scorer_destroy(e->zc);
    }
    free(e);
    s->context = NULL;
}

/* Issue 33: an enqueued genotype takes the place of one random sample of
 * the initial population (its result joins the population when observed). */
static void evo_enqueued(nas_strategy *s, const nas_genotype *g)
{
    (void)g;
    evo *e = s->context;
    e->proposed++;
}

static const nas__strategy_ops evolution_ops = {
    .name = "evolution",
    .propose = evo_propose,
    .observe = evo_observe,
    .destroy = evo_destroy,
    .observe_result = evo_observe_result,
    .enqueued = evo_enqueued,
    .set_proxy = evo_set_proxy,
};

int nas__strategy_evolution_init(nas_strategy *s, nas_error *err)
{
    int p = s->cfg->search.population, k = s->cfg->search.sample_size;
    if (p < 1 || k < 1)
        return nas_error_set(err, NAS_EINVAL,
                             "evolution: population (%d) and sample_size (%d) must be >= 1", p, k);
    evo *e = calloc(1, sizeof *e);
    member *pop = calloc((size_t)p, sizeof *pop);
    if (!e || !pop) {
        free(e);
        free(pop);
        return nas_error_set(err, NAS_ENOMEM, "evolution: out of memory");
    }
    e->cap = p;
    e->pop = pop;
    int n_obj = s->cfg->n_objectives;
    if (n_obj > 1) {
        if (n_obj > NAS_MAX_OBJECTIVES) {
            evo_destroy(&(nas_strategy){.context = e});
            return nas_error_set(err, NAS_EINVAL, "evolution: %d objectives, at most %d", n_obj,
                                 NAS_MAX_OBJECTIVES);
        }
        e->n_obj = n_obj;
        for (int k = 0; k < n_obj; k++)
            e->maximize[k] = s->cfg->objectives[k].maximize;
        e->pts = calloc((size_t)p * (size_t)n_obj, sizeof *e->pts);
        e->rank = calloc((size_t)p, sizeof *e->rank);
        e->crowd = calloc((size_t)p, sizeof *e->crowd);
        if (!e->pts || !e->rank || !e->crowd) {
            evo_destroy(&(nas_strategy){.context = e});
            return nas_error_set(err, NAS_ENOMEM, "evolution: out of memory");
        }
    }
    s->ops = &evolution_ops;
    s->context = e;
    return NAS_OK;
}
