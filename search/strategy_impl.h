/*
 * search/strategy_impl.h - the private strategy vtable. One file per
 * strategy implements a constructor; search/strategy.c dispatches.
 */
#ifndef NAS_SEARCH_STRATEGY_IMPL_H
#define NAS_SEARCH_STRATEGY_IMPL_H

#include "nas/search.h"

typedef struct nas__strategy_ops {
    const char *name;
    int (*propose)(nas_strategy *s, nas_known_fn is_known, void *known_ctx, nas_genotype *out,
                   nas_error *err);
    void (*observe)(nas_strategy *s, const nas_genotype *g, double score);
    void (*destroy)(nas_strategy *s);
    /* Optional (NULL: observe(s, g, nas_search_score(s->cfg, res, NULL, 0))):
     * the full result, for strategies that use several objectives. */
    void (*observe_result)(nas_strategy *s, const nas_genotype *g, const nas_trial_result *res);
    /* Optional (NULL: the name): origin of the last proposal (nas_strategy_origin). */
    const char *(*origin)(const nas_strategy *s);
    /* Optional (NULL: no model): the last model round (nas_strategy_last_round). */
    long (*last_round)(const nas_strategy *s, nas_strategy_round *out);
    /* Optional (NULL: none): issue 29, nas_strategy_round_log and
     * nas_strategy_replay_hint. */
    char *(*round_log)(const nas_strategy *s);
    int (*replay_hint)(nas_strategy *s, const nas_genotype *stored, int n, const char *log,
                       nas_error *err);
    /* Optional (NULL: nothing to note): issue 33, nas_strategy_enqueued. */
    void (*enqueued)(nas_strategy *s, const nas_genotype *g);
    /* Optional (NULL: ignored): issue 31, nas_strategy_set_proxy. */
    void (*set_proxy)(nas_strategy *s, nas_proxy_fn fn, void *ctx);
} nas__strategy_ops;

struct nas_strategy {
    const nas__strategy_ops *ops;
    const nas_config *cfg;
    const nas_space *space;
    nas_rng rng; /* seeded from cfg->seed, stream 1 */
    void *context;
};

int nas__strategy_random_init(nas_strategy *s, nas_error *err);
int nas__strategy_evolution_init(nas_strategy *s, nas_error *err);
int nas__strategy_nao_init(nas_strategy *s, nas_error *err);

/* Shared by strategies (search/strategy_random.c): a uniform sample of
 * s->space (using s->rng) for which is_known (may be NULL) says 0. Tries
 * random samples first, then scans every genotype in a random order, so it
 * fails only when every valid genotype is known.
 * Errors: NAS_EINFEASIBLE (all known), NAS_ENOMEM. */
int nas__strategy_sample_new(nas_strategy *s, nas_known_fn is_known, void *known_ctx,
                             nas_genotype *out, nas_error *err);

#endif
