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
 */
#include <math.h>   /* isnan */
#include <stdlib.h> /* calloc, free */
#include "strategy_impl.h"

#define NAS__REMUTATE_PARENT 64
#define NAS__RANDOM_WALK 1024

typedef struct member {
    nas_genotype g;
    double score;
} member;

typedef struct evo {
    int cap;      /* P */
    int head;     /* index of the oldest member */
    int count;    /* members alive, <= cap */
    long proposed;
    member *pop;  /* ring buffer of cap members */
} evo;

static const member *evo_at(const evo *e, int i) { return &e->pop[(e->head + i) % e->cap]; }

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
    const member *best = NULL;
    for (int i = 0; i < sample; i++) {
        const member *m = evo_at(e, (int)nas_rng_bounded(&s->rng, (uint32_t)e->count));
        if (!best || m->score > best->score)
            best = m;
    }
    nas_genotype child;
    nas_space_mutate(s->space, &s->rng, &best->g, &child);
    for (int i = 0; is_known && is_known(known_ctx, &child); i++) {
        if (i < NAS__REMUTATE_PARENT) {
            nas_space_mutate(s->space, &s->rng, &best->g, &child);
        } else if (i < NAS__REMUTATE_PARENT + NAS__RANDOM_WALK) {
            nas_genotype next;
            nas_space_mutate(s->space, &s->rng, &child, &next);
            child = next;
        } else {
            int rc = nas__strategy_sample_new(s, is_known, known_ctx, &child, err);
            if (rc != NAS_OK)
                return rc;
            break;
        }
    }
    *out = child;
    e->proposed++;
    return NAS_OK;
}

static void evo_observe(nas_strategy *s, const nas_genotype *g, double score)
{
    evo *e = s->context;
    if (isnan(score))
        return;
    if (e->count == e->cap) { /* age out the oldest */
        e->head = (e->head + 1) % e->cap;
        e->count--;
    }
    member *m = &e->pop[(e->head + e->count) % e->cap];
    m->g = *g;
    m->score = score;
    e->count++;
}

static void evo_destroy(nas_strategy *s)
{
    evo *e = s->context;
    if (e)
        free(e->pop);
    free(e);
    s->context = NULL;
}

static const nas__strategy_ops evolution_ops = {
    .name = "evolution",
    .propose = evo_propose,
    .observe = evo_observe,
    .destroy = evo_destroy,
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
    s->ops = &evolution_ops;
    s->context = e;
    return NAS_OK;
}
