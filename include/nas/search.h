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

#ifdef __cplusplus
}
#endif
#endif /* NAS_SEARCH_H */
