/*
 * evaluator/zerocost_list.c - `nas space CONF --list|--samples N
 * --zero-cost METRICS` (issue 31, item 5): genotypes as CSV
 * "genotype,key,macs,params,<metric>..." with one column per proxy
 * (nas/zerocost.h), a progress line on stderr.
 *
 * Every genotype's net is built with the weights of PCG32(seed) (the
 * experiment's seed) on the cpu backend, one thread. Data-dependent
 * proxies read one minibatch of the experiment's training split (its
 * normalisation, no augmentation; proxy.batch_size images drawn by
 * PCG32(seed)); a table search has no data, so they are refused there.
 */
#include <inttypes.h> /* PRId64 */
#include <math.h>     /* NAN, isnan */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>     /* clock_gettime */
#include "nas/data.h"
#include "nas/evaluator.h"
#include "nas/inspect.h"
#include "nas/zerocost.h"
#include "evaluator/evaluator_impl.h"

struct nas_zc_scorer {
    nas_zc_proxy p[NAS_ZC_COUNT];
    int n;
    int data; /* some proxy needs the minibatch */
    nas_backend *be;
    nas_tensor *x, *y;
    int in_c, in_h, in_w, classes; /* the data's shape (data: 1) */
    uint64_t seed;
    const nas_space *sp;
};

static int parse_list(const char *list, nas_zc_scorer *z, nas_error *err)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        nas_zc_proxy p;
        if (nas_zc_from_name(t, &p, err) != NAS_OK)
            return NAS_EINVAL;
        if (z->n == NAS_ZC_COUNT)
            return nas_error_set(err, NAS_EINVAL, "--zero-cost: at most %d proxies", NAS_ZC_COUNT);
        z->p[z->n++] = p;
        z->data |= nas_zc_needs_data(p);
    }
    if (z->n == 0)
        return nas_error_set(err, NAS_EINVAL, "--zero-cost needs a comma-separated list of proxies");
    return NAS_OK;
}

/* One minibatch of the experiment's training split onto z->be. */
static int load_batch(const nas_config *cfg, nas_zc_scorer *z, nas_error *err)
{
    nas_data_info info;
    nas_dataset *train = NULL, *valid = NULL;
    int rc = nas_data_load(&cfg->data, cfg->seed, &info, &train, &valid, err);
    if (rc)
        return rc;
    /* the networks are built at the data's shape: a contradicting
     * space.input or space.classes is refused, as for training */
    rc = nas_config_check_data(cfg, train->c, train->h, train->w, train->classes, err);
    if (rc) {
        nas_dataset_destroy(train);
        nas_dataset_destroy(valid);
        return rc;
    }
    int b = cfg->proxy.batch_size > 0 ? cfg->proxy.batch_size : 64;
    if (b > train->n)
        b = train->n;
    z->in_c = train->c;
    z->in_h = train->h;
    z->in_w = train->w;
    z->classes = train->classes;
    size_t per = (size_t)train->c * (size_t)train->h * (size_t)train->w;
    float *hx = malloc((size_t)b * per * sizeof *hx), *hy = malloc((size_t)b * sizeof *hy);
    rc = hx && hy ? NAS_OK : nas_error_set(err, NAS_ENOMEM, "out of memory");
    nas_rng r;
    nas_rng_seed(&r, z->seed, 0x7a63ull); /* "zc" */
    for (int i = 0; i < b && !rc; i++) {
        uint32_t k = nas_rng_bounded(&r, (uint32_t)train->n);
        memcpy(hx + (size_t)i * per, train->images + (size_t)k * per, per * sizeof *hx);
        hy[i] = (float)train->labels[k];
    }
    if (!rc)
        rc = nas_tensor_create(z->be, b, train->c, train->h, train->w, &z->x);
    if (!rc)
        rc = nas_tensor_create(z->be, b, 1, 1, 1, &z->y);
    if (!rc)
        rc = nas_tensor_upload(z->x, hx, (size_t)b * per);
    if (!rc)
        rc = nas_tensor_upload(z->y, hy, (size_t)b);
    if (rc && !err->code)
        nas_error_set(err, rc, "zero-cost minibatch: %s", nas_strerror(rc));
    free(hx);
    free(hy);
    nas_dataset_destroy(train);
    nas_dataset_destroy(valid);
    return rc;
}

void nas_zc_scorer_destroy(nas_zc_scorer *z)
{
    if (!z)
        return;
    nas_tensor_destroy(z->x);
    nas_tensor_destroy(z->y);
    nas_backend_destroy(z->be);
    free(z);
}

int nas_zc_scorer_create(const nas_config *cfg, const nas_space *sp, const char *proxies,
                         nas_zc_scorer **out, nas_error *err)
{
    if (out)
        *out = NULL;
    if (!cfg || !sp || !proxies || !out)
        return nas_error_set(err, NAS_EINVAL, "nas_zc_scorer_create: NULL argument");
    nas_zc_scorer *z = calloc(1, sizeof *z);
    if (!z)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    z->seed = cfg->seed;
    z->sp = sp;
    int rc = parse_list(proxies, z, err);
    if (!rc && z->data && cfg->evaluator.kind == NAS_EVALUATOR_TABLE)
        rc = nas_error_set(err, NAS_EINVAL,
                           "%s: a table search has no data: only data-free proxies (synflow, params, "
                           "macs) can score it, not those reading a minibatch (naswot, snip, "
                           "grad_norm, jacob_cov)",
                           cfg->path);
    if (!rc)
        rc = nas_backend_create("cpu", 1, 0, &z->be, err);
    if (!rc && z->data)
        rc = load_batch(cfg, z, err);
    if (rc) {
        nas_zc_scorer_destroy(z);
        return rc;
    }
    *out = z;
    return NAS_OK;
}

int nas_zc_scorer_count(const nas_zc_scorer *z)
{
    return z ? z->n : 0;
}

nas_zc_proxy nas_zc_scorer_proxy(const nas_zc_scorer *z, int i)
{
    return z && i >= 0 && i < z->n ? z->p[i] : NAS_ZC_COUNT;
}

int nas_zc_scorer_score(nas_zc_scorer *z, const nas_genotype *g, double *scores, nas_error *err)
{
    if (!z || !g || !scores)
        return nas_error_set(err, NAS_EINVAL, "nas_zc_scorer_score: NULL argument");
    for (int i = 0; i < z->n; i++)
        scores[i] = NAN;
    char gs[NAS_GENOTYPE_STR_MAX];
    nas_space_format(z->sp, g, gs, sizeof gs);
    nas_net_desc d;
    int rc = nas_evaluator_net_desc(NULL, z->sp, g, &d);
    if (!rc && z->data) { /* the data's shape, as the trained net's */
        d.in_c = z->in_c;
        d.in_h = z->in_h;
        d.in_w = z->in_w;
        d.classes = z->classes;
    }
    nas_net *net = NULL;
    if (!rc)
        rc = nas_net_create(z->be, &d, z->x ? z->x->n : 1, z->seed, &net, err);
    if (rc)
        return err && err->code ? rc : nas_error_set(err, rc, "%s: cannot build the network", gs);
    int first = NAS_OK;
    for (int i = 0; i < z->n; i++) {
        nas_error e;
        nas_error_clear(&e);
        int r = nas_zc_score(net, z->p[i], z->x, z->y, &scores[i], &e);
        if (r != NAS_OK) {
            scores[i] = NAN;
            if (!first) {
                first = r;
                nas_error_set(err, r, "%s: %s", gs, e.msg);
            }
        }
    }
    nas_net_destroy(net);
    return first;
}

/* One CSV row: genotype, key, macs, params and every proxy (a proxy that
 * fails leaves its cell empty and says why on stderr). */
static int score_row(FILE *out, nas_zc_scorer *z, const nas_genotype *g)
{
    const nas_space *sp = z->sp;
    char gs[NAS_GENOTYPE_STR_MAX], key[NAS_GENOTYPE_STR_MAX];
    nas_space_format(sp, g, gs, sizeof gs);
    nas_space_key(sp, g, key, sizeof key);
    int64_t macs = -1, params = -1;
    (void)nas_count_genotype(NULL, sp, g, &macs, &params);
    double sc[NAS_ZC_COUNT];
    nas_error e;
    nas_error_clear(&e);
    if (nas_zc_scorer_score(z, g, sc, &e) != NAS_OK)
        fprintf(stderr, "nas space: %s\n", e.msg); /* one cell, not the list */
    fprintf(out, "\"%s\",\"%s\",%" PRId64 ",%" PRId64, gs, key, macs, params);
    for (int i = 0; i < z->n; i++) {
        if (isnan(sc[i]))
            fprintf(out, ",");
        else
            fprintf(out, ",%.17g", sc[i]);
    }
    fprintf(out, "\n");
    return NAS_OK;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int nas__zc_list(FILE *out, const nas_config *cfg, const nas_space *sp, uint64_t count, int sample,
                 uint64_t seed, const char *metrics, nas_error *err)
{
    nas_zc_scorer *z = NULL;
    int rc = nas_zc_scorer_create(cfg, sp, metrics, &z, err);
    if (rc)
        return rc;
    fprintf(out, "genotype,key,macs,params");
    for (int i = 0; i < z->n; i++)
        fprintf(out, ",%s", nas_zc_name(z->p[i]));
    fprintf(out, "\n");
    nas_rng r;
    nas_rng_seed(&r, seed, 7);
    double t0 = now_s(), last = t0;
    uint64_t done = 0;
    for (uint64_t i = 0; i < count && !rc; i++) {
        nas_genotype g;
        if (sample) {
            nas_space_sample(sp, &r, &g);
        } else {
            nas_space_genotype_at(sp, i, &g);
            if (!nas_space_is_valid(sp, &g))
                continue;
        }
        rc = score_row(out, z, &g);
        done++;
        double t = now_s();
        if (t - last >= 1.0 || i + 1 == count) {
            fprintf(stderr, "\rnas space: %" PRIu64 " architectures scored in %.0f s (%.3f s each)",
                    done, t - t0, (t - t0) / (double)done);
            last = t;
        }
    }
    if (done)
        fprintf(stderr, "\n");
    nas_zc_scorer_destroy(z);
    if (!rc && ferror(out))
        rc = nas_error_set(err, NAS_EIO, "write error");
    return rc;
}
