/*
 * search/warmup.c - issue 31, search.warmup = { proxy; candidates; top; }:
 * the zero-cost warm-up of Abdelfattah et al., "Zero-Cost Proxies for
 * Lightweight NAS" (ICLR 2021, section 5): score N random genotypes with
 * a training-free proxy and let the strategy start from the K best - the
 * controller proposes them first (search/propose.c, as search.enqueue's),
 * so they are NAO's seed architectures, evolution's first population and
 * random search's first K trials. Proxy evaluations are not trials: they
 * are not charged to search.trials.
 *
 * Reproducible: the N candidates are drawn with PCG32(seed, stream
 * "warmup") from the space, the proxy's weights and minibatch are the
 * seed's (nas_zc_scorer), and every score goes to the experiment's
 * zc_score cache as it is computed, so a resumed search (after kill -9
 * too) reads the same scores back, picks the same K and replays the same
 * sequence - and scores only what the killed run had not.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "nas/zerocost.h"
#include "search/controller_impl.h"
#include "search/key_set.h"

typedef struct cand {
    nas_genotype g;
    double score;
    int index; /* sample order: ties go to the earlier */
} cand;

static int by_score(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    int xn = isnan(x->score), yn = isnan(y->score);
    if (xn != yn)
        return xn - yn; /* failed proxies last */
    if (!xn && x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->index - y->index;
}

int nas_warmup_candidates(const nas_config *cfg, const nas_space *space, int n, nas_genotype *out,
                          nas_error *err)
{
    nas_rng r;
    nas_rng_seed(&r, cfg->seed, 0x7761726dull); /* "warm" */
    nas__key_set seen;
    memset(&seen, 0, sizeof seen);
    int k = 0;
    for (long tries = 0; k < n && tries < 20L * n + 1000; tries++) {
        nas_genotype g;
        nas_space_sample(space, &r, &g);
        if (!nas_space_is_valid(space, &g))
            continue;
        char key[NAS_GENOTYPE_STR_MAX];
        nas_space_key(space, &g, key, sizeof key);
        if (nas__key_set_has(&seen, key))
            continue;
        if (nas__key_set_add(&seen, key) < 0) {
            nas__key_set_free(&seen);
            return -nas_error_set(err, NAS_ENOMEM, "search.warmup: out of memory");
        }
        out[k++] = g;
    }
    nas__key_set_free(&seen);
    return k;
}

/* The candidates (nas_warmup_candidates) into v[n], unscored. */
static int sample_candidates(ctl *c, cand *v, int n, nas_error *err)
{
    nas_genotype *g = malloc((size_t)(n > 0 ? n : 1) * sizeof *g);
    if (!g)
        return -nas_error_set(err, NAS_ENOMEM, "search.warmup: out of memory");
    int k = nas_warmup_candidates(c->cfg, c->space, n, g, err);
    for (int i = 0; i < k; i++) {
        v[i].g = g[i];
        v[i].index = i;
        v[i].score = NAN;
    }
    free(g);
    return k;
}

/* Each candidate's score: the cache's, else computed (the scorer made on
 * first need) and cached at once. *fresh counts the computed ones. */
static int score_candidates(ctl *c, cand *v, int n, int *fresh, nas_error *err)
{
    const char *proxy = c->cfg->search.warmup.proxy;
    nas_zc_scorer *z = NULL;
    int rc = NAS_OK;
    *fresh = 0;
    for (int i = 0; i < n && rc == NAS_OK; i++) {
        char key[NAS_GENOTYPE_STR_MAX];
        nas_space_key(c->space, &v[i].g, key, sizeof key);
        rc = nas_store_zc_get(c->st, c->exp, proxy, key, &v[i].score, err);
        if (rc != NAS_ENOTFOUND)
            continue;
        if (!z && (rc = nas_zc_scorer_create(c->cfg, c->space, proxy, &z, err)) != NAS_OK)
            break;
        nas_error e;
        nas_error_clear(&e);
        if (nas_zc_scorer_score(z, &v[i].g, &v[i].score, &e) != NAS_OK)
            nas__ctl_say(c, "nas: search.warmup: %s (left out)", e.msg);
        rc = nas_store_zc_put(c->st, c->exp, proxy, key, v[i].score, err);
        ++*fresh;
    }
    nas_zc_scorer_destroy(z);
    return rc;
}

int nas__ctl_warmup(ctl *c, nas_error *err)
{
    const nas_config *cfg = c->cfg;
    if (!cfg->search.warmup.proxy[0] || c->warm)
        return NAS_OK;
    int n = cfg->search.warmup.candidates, k = cfg->search.warmup.top;
    cand *v = malloc((size_t)n * sizeof *v);
    if (!v)
        return nas_error_set(err, NAS_ENOMEM, "search.warmup: out of memory");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int got = sample_candidates(c, v, n, err), fresh = 0;
    int rc = got < 0 ? -got : score_candidates(c, v, got, &fresh, err);
    if (rc == NAS_OK) {
        qsort(v, (size_t)got, sizeof *v, by_score);
        int ok = 0;
        while (ok < got && !isnan(v[ok].score))
            ok++;
        c->n_warm = ok < k ? ok : k;
        c->warm = malloc((size_t)(c->n_warm > 0 ? c->n_warm : 1) * sizeof *c->warm);
        if (!c->warm)
            rc = nas_error_set(err, NAS_ENOMEM, "search.warmup: out of memory");
        for (int i = 0; rc == NAS_OK && i < c->n_warm; i++)
            c->warm[i] = v[i].g;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (rc == NAS_OK)
            nas__ctl_say(c, "nas: warm-up: %d candidates scored with %s (%d from the cache, %d "
                         "now, %.1f s; not trials, not charged to search.trials): the %d best "
                         "go first (scores %.6g .. %.6g)",
                         got, cfg->search.warmup.proxy, got - fresh, fresh,
                         (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec),
                         c->n_warm, c->n_warm ? v[0].score : NAN,
                         c->n_warm ? v[c->n_warm - 1].score : NAN);
    }
    free(v);
    return rc;
}
