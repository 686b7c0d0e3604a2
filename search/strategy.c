/* search/strategy.c - strategy creation and dispatch (see nas/search.h). */
#include <stdlib.h>
#include <string.h> /* memset */
#include <math.h>
#include "strategy_impl.h"

int nas_strategy_create(const nas_config *cfg, const nas_space *space, nas_strategy **out,
                        nas_error *err)
{
    *out = NULL;
    nas_strategy *s = calloc(1, sizeof *s);
    if (!s)
        return nas_error_set(err, NAS_ENOMEM, "strategy: out of memory");
    s->cfg = cfg;
    s->space = space;
    nas_rng_seed(&s->rng, cfg->seed, 1);
    int rc;
    switch (cfg->search.strategy) {
    case NAS_STRATEGY_RANDOM: rc = nas__strategy_random_init(s, err); break;
    case NAS_STRATEGY_EVOLUTION: rc = nas__strategy_evolution_init(s, err); break;
    case NAS_STRATEGY_NAO: rc = nas__strategy_nao_init(s, err); break;
    default: rc = nas_error_set(err, NAS_EINVAL, "strategy: unknown kind %d", (int)cfg->search.strategy);
    }
    if (rc != NAS_OK) {
        free(s);
        return rc;
    }
    *out = s;
    return NAS_OK;
}

void nas_strategy_destroy(nas_strategy *s)
{
    if (!s)
        return;
    if (s->ops && s->ops->destroy)
        s->ops->destroy(s);
    free(s);
}

const char *nas_strategy_name(const nas_strategy *s) { return s->ops->name; }

int nas_strategy_propose(nas_strategy *s, nas_known_fn is_known, void *known_ctx,
                         nas_genotype *out, nas_error *err)
{
    return s->ops->propose(s, is_known, known_ctx, out, err);
}

void nas_strategy_observe(nas_strategy *s, const nas_genotype *g, double score)
{
    s->ops->observe(s, g, score);
}

void nas_strategy_observe_result(nas_strategy *s, const nas_genotype *g,
                                 const nas_trial_result *res)
{
    if (s->ops->observe_result)
        s->ops->observe_result(s, g, res);
    else
        s->ops->observe(s, g, nas_search_score(s->cfg, res, NULL, 0));
}

const char *nas_strategy_origin(const nas_strategy *s)
{
    if (s->ops->origin)
        return s->ops->origin(s);
    return s->ops->name;
}

void nas_strategy_set_proxy(nas_strategy *s, nas_proxy_fn fn, void *ctx)
{
    if (s && s->ops->set_proxy)
        s->ops->set_proxy(s, fn, ctx);
}

void nas_strategy_enqueued(nas_strategy *s, const nas_genotype *g)
{
    if (s->ops->enqueued)
        s->ops->enqueued(s, g);
}

long nas_strategy_last_round(const nas_strategy *s, nas_strategy_round *out)
{
    nas_strategy_round tmp;
    if (!out)
        out = &tmp;
    memset(out, 0, sizeof *out);
    return s->ops->last_round ? s->ops->last_round(s, out) : 0;
}

char *nas_strategy_round_log(const nas_strategy *s)
{
    return s->ops->round_log ? s->ops->round_log(s) : NULL;
}

int nas_strategy_replay_hint(nas_strategy *s, const nas_genotype *stored, int n, const char *log,
                             nas_error *err)
{
    return s->ops->replay_hint ? s->ops->replay_hint(s, stored, n, log, err) : NAS_OK;
}
