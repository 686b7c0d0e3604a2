/*
 * search/strategy_random.c - random search: every proposal is a uniform
 * sample of the valid genotypes that are not yet known (the baseline of
 * Li & Talwalkar, "Random Search and Reproducibility for Neural
 * Architecture Search", UAI 2019).
 */
#include <stdlib.h> /* malloc, free */
#include "strategy_impl.h"

/* Random draws before falling back to a scan of the whole space. */
#define NAS__RANDOM_TRIES 2000
/* Spaces larger than this are never scanned (EINFEASIBLE after the draws). */
#define NAS__SCAN_MAX (1u << 22)

/* Genotype number `idx` in mixed radix over the allowed tokens of each
 * position. */
static void genotype_at(const nas_space *sp, uint32_t idx, nas_genotype *g)
{
    int len = nas_space_seq_len(sp), vocab = nas_space_vocab_size(sp);
    g->len = len;
    for (int pos = 0; pos < len; pos++) {
        int allowed[256]; /* tokens are uint8_t */
        int n = 0;
        for (int t = 0; t < vocab && n < 256; t++)
            if (nas_space_token_allowed(sp, pos, t))
                allowed[n++] = t;
        g->tok[pos] = (uint8_t)allowed[idx % (uint32_t)n];
        idx /= (uint32_t)n;
    }
}

int nas__strategy_sample_new(nas_strategy *s, nas_known_fn is_known, void *known_ctx,
                             nas_genotype *out, nas_error *err)
{
    for (int i = 0; i < NAS__RANDOM_TRIES; i++) {
        nas_space_sample(s->space, &s->rng, out);
        if (!is_known || !is_known(known_ctx, out))
            return NAS_OK;
    }
    /* Most of the space is known: visit every genotype once, in a random
     * order; the first unknown valid one is a uniform pick among them. */
    uint64_t size = nas_space_size(s->space);
    if (size > NAS__SCAN_MAX)
        return nas_error_set(err, NAS_EINFEASIBLE,
                             "%s: no new genotype in %d random samples of a space of %llu",
                             s->ops->name, NAS__RANDOM_TRIES, (unsigned long long)size);
    uint32_t *idx = malloc((size_t)size * sizeof *idx);
    if (!idx)
        return nas_error_set(err, NAS_ENOMEM, "%s: out of memory", s->ops->name);
    for (uint32_t i = 0; i < (uint32_t)size; i++)
        idx[i] = i;
    nas_rng_shuffle(&s->rng, idx, (size_t)size);
    for (uint32_t i = 0; i < (uint32_t)size; i++) {
        genotype_at(s->space, idx[i], out);
        if (nas_space_is_valid(s->space, out) && !is_known(known_ctx, out)) {
            free(idx);
            return NAS_OK;
        }
    }
    free(idx);
    return nas_error_set(err, NAS_EINFEASIBLE,
                         "%s: every valid genotype of the space (%llu in all) is already known",
                         s->ops->name, (unsigned long long)size);
}

static int random_propose(nas_strategy *s, nas_known_fn is_known, void *known_ctx,
                          nas_genotype *out, nas_error *err)
{
    return nas__strategy_sample_new(s, is_known, known_ctx, out, err);
}

/* Random search learns nothing from results. */
static void random_observe(nas_strategy *s, const nas_genotype *g, double score)
{
    (void)s;
    (void)g;
    (void)score;
}

static void random_destroy(nas_strategy *s) { (void)s; }

static const nas__strategy_ops random_ops = {
    .name = "random",
    .propose = random_propose,
    .observe = random_observe,
    .destroy = random_destroy,
};

int nas__strategy_random_init(nas_strategy *s, nas_error *err)
{
    (void)err;
    s->ops = &random_ops;
    s->context = NULL;
    return NAS_OK;
}
