/*
 * tests/unit/test_nao.c - NAO (Luo et al., NeurIPS 2018): the model's
 * gradients against central finite differences, reconstruction by the
 * decoder, the predictor's rank correlation on a synthetic score, and the
 * strategy's proposals (valid, unseen, deterministic, replayable).
 */
#include <stdarg.h>  /* cmocka */
#include <stddef.h>  /* cmocka */
#include <setjmp.h>  /* cmocka */
#include <stdint.h>  /* cmocka */
#include <math.h>    /* fabs, isfinite */
#include <stdlib.h>  /* malloc, free */
#include <string.h>  /* memcmp, memcpy, strcmp */
#include <time.h>    /* clock */
#include <cmocka.h>
#include "nas/search.h"
#include "search/nao_model.h"

/* ---- helpers ---------------------------------------------------------------- */

static nas__nao_model *small_model(int V, int L, uint64_t seed, float scale)
{
    uint8_t allowed[8 * 16];
    for (int t = 0; t < L; t++)
        for (int v = 0; v < V; v++)
            allowed[t * V + v] = (uint8_t)(!(t == 1 && v == 0)); /* one masked token */
    nas__nao_dims d = {.vocab = V, .len = L, .embed = 5, .hidden = 6, .mlp = 7};
    nas_rng r;
    nas_rng_seed(&r, seed, 3);
    nas__nao_model *m = nas__nao_model_create(&d, allowed, scale, &r);
    assert_non_null(m);
    return m;
}

/*
 * Compare the analytic gradient of the joint loss with central differences
 * on every parameter of group `grp`. Returns the worst relative error
 * |num - ana| / max(1e-2, |num| + |ana|).
 */
static double grad_check(nas__nao_model *m, const char *grp, int B, const uint8_t *seqs,
                         const float *y, float tradeoff)
{
    size_t off, n;
    assert_int_equal(nas__nao_param_group(m, grp, &off, &n), 0);
    nas__nao_zero_grad(m);
    float l0 = nas__nao_loss(m, B, seqs, y, tradeoff, NULL, NULL, 1);
    assert_true(isfinite(l0));
    float *w = nas__nao_params(m);
    float *g = malloc(nas__nao_nparams(m) * sizeof(float));
    assert_non_null(g);
    memcpy(g, nas__nao_grads(m), nas__nao_nparams(m) * sizeof(float));
    const float eps = 2e-3f;
    double worst = 0.0, maxg = 0.0;
    for (size_t i = off; i < off + n; i++) {
        float keep = w[i];
        w[i] = keep + eps;
        double lp = nas__nao_loss(m, B, seqs, y, tradeoff, NULL, NULL, 0);
        w[i] = keep - eps;
        double lm = nas__nao_loss(m, B, seqs, y, tradeoff, NULL, NULL, 0);
        w[i] = keep;
        double num = (lp - lm) / (2.0 * eps);
        double den = fabs(num) + fabs(g[i]);
        double rel = fabs(num - g[i]) / (den > 1e-2 ? den : 1e-2);
        if (rel > worst)
            worst = rel;
        if (fabs(g[i]) > maxg)
            maxg = fabs(g[i]);
    }
    free(g);
    print_message("grad %s (tradeoff %.1f): worst rel err %.2e, max |g| %.2e\n", grp,
                  (double)tradeoff, worst, maxg);
    assert_true(maxg > 1e-4); /* the group really receives gradient */
    return worst;
}

static void random_batch(int B, int L, int V, uint8_t *seqs, float *y, uint64_t seed)
{
    nas_rng r;
    nas_rng_seed(&r, seed, 9);
    for (int i = 0; i < B * L; i++) {
        int t = i % L;
        int v;
        do
            v = (int)nas_rng_bounded(&r, (uint32_t)V);
        while (t == 1 && v == 0);
        seqs[i] = (uint8_t)v;
    }
    for (int b = 0; b < B; b++)
        y[b] = nas_rng_uniform(&r);
}

/* ---- gradients ---------------------------------------------------------------- */

static void test_grad_encoder_predictor(void **state)
{
    (void)state;
    enum { V = 4, L = 5, B = 3 };
    nas__nao_model *m = small_model(V, L, 1, 0.5f);
    uint8_t seqs[B * L];
    float y[B];
    random_batch(B, L, V, seqs, y, 2);
    /* tradeoff 1: the predictor's MSE only, through encoder and MLP */
    assert_true(grad_check(m, "prd", B, seqs, y, 1.0f) < 2e-2);
    assert_true(grad_check(m, "enc", B, seqs, y, 1.0f) < 2e-2);
    nas__nao_model_destroy(m);
}

static void test_grad_decoder(void **state)
{
    (void)state;
    enum { V = 4, L = 5, B = 3 };
    nas__nao_model *m = small_model(V, L, 4, 0.5f);
    uint8_t seqs[B * L];
    float y[B];
    random_batch(B, L, V, seqs, y, 5);
    /* tradeoff 0: reconstruction only, through decoder, attention and encoder */
    assert_true(grad_check(m, "dec", B, seqs, y, 0.0f) < 2e-2);
    assert_true(grad_check(m, "enc", B, seqs, y, 0.0f) < 2e-2);
    nas__nao_model_destroy(m);
}

static void test_grad_joint(void **state)
{
    (void)state;
    enum { V = 5, L = 4, B = 4 };
    nas__nao_model *m = small_model(V, L, 7, 0.5f);
    uint8_t seqs[B * L];
    float y[B];
    random_batch(B, L, V, seqs, y, 8);
    assert_true(grad_check(m, "enc", B, seqs, y, 0.7f) < 2e-2);
    assert_true(grad_check(m, "prd", B, seqs, y, 0.7f) < 2e-2);
    assert_true(grad_check(m, "dec", B, seqs, y, 0.7f) < 2e-2);
    /* the parts combine as tradeoff*pred + (1-tradeoff)*rec */
    float pl, rl;
    float l = nas__nao_loss(m, B, seqs, y, 0.7f, &pl, &rl, 0);
    assert_true(fabsf(l - (0.7f * pl + 0.3f * rl)) < 1e-5f);
    nas__nao_model_destroy(m);
}

/* The pairwise ranking term (nas__nao_set_rank_weight) on top of the joint
 * loss: its gradient through predictor and encoder, and its value (a
 * perfectly ordered batch costs less than the same batch reversed). */
static void test_grad_rank_loss(void **state)
{
    (void)state;
    enum { V = 5, L = 4, B = 5 };
    nas__nao_model *m = small_model(V, L, 13, 0.5f);
    uint8_t seqs[B * L];
    float y[B];
    random_batch(B, L, V, seqs, y, 14);
    float pl0, pl1;
    nas__nao_loss(m, B, seqs, y, 0.7f, &pl0, NULL, 0);
    nas__nao_set_rank_weight(m, 0.5f);
    assert_true(grad_check(m, "prd", B, seqs, y, 0.7f) < 2e-2);
    assert_true(grad_check(m, "enc", B, seqs, y, 0.7f) < 2e-2);
    nas__nao_loss(m, B, seqs, y, 0.7f, &pl1, NULL, 0);
    /* log(1 + e^-d) > 0 for every ordered pair: the term adds to the loss */
    assert_true(pl1 > pl0 + 0.5f * 0.1f);
    /* the model's own predictions as targets are perfectly ordered, their
     * reverse is not: the ranking term must tell them apart */
    float S[B * L * 6], p[B], rev[B];
    assert_int_equal(nas__nao_encode(m, B, seqs, S, p), 0);
    for (int b = 0; b < B; b++)
        rev[b] = 1.0f - p[b];
    float a1, a0, b1, b0;
    nas__nao_loss(m, B, seqs, p, 1.0f, &a1, NULL, 0);
    nas__nao_loss(m, B, seqs, rev, 1.0f, &b1, NULL, 0);
    nas__nao_set_rank_weight(m, 0.0f);
    nas__nao_loss(m, B, seqs, p, 1.0f, &a0, NULL, 0);
    nas__nao_loss(m, B, seqs, rev, 1.0f, &b0, NULL, 0);
    double rank_ordered = (a1 - a0) / 0.5, rank_reversed = (b1 - b0) / 0.5;
    print_message("ranking term: ordered %.4f reversed %.4f (log 2 = 0.6931)\n", rank_ordered,
                  rank_reversed);
    assert_true(rank_ordered < 0.6931 && rank_reversed > 0.6931); /* softplus(-d) vs log 2 */
    nas__nao_model_destroy(m);
}

/* dP/ds (used to move architectures) against central differences. */
static void test_grad_predictor_states(void **state)
{
    (void)state;
    enum { V = 4, L = 5, H = 6 };
    nas__nao_model *m = small_model(V, L, 11, 0.5f);
    uint8_t seq[L] = {1, 2, 3, 0, 1};
    float S[L * H], dS[L * H];
    assert_int_equal(nas__nao_encode(m, 1, seq, S, NULL), 0);
    nas__nao_predict_states(m, S, dS);
    double worst = 0.0, maxg = 0.0;
    const float eps = 1e-3f;
    for (int i = 0; i < L * H; i++) {
        float keep = S[i];
        S[i] = keep + eps;
        double pp = nas__nao_predict_states(m, S, NULL);
        S[i] = keep - eps;
        double pm = nas__nao_predict_states(m, S, NULL);
        S[i] = keep;
        double num = (pp - pm) / (2.0 * eps);
        double den = fabs(num) + fabs(dS[i]);
        double rel = fabs(num - dS[i]) / (den > 1e-3 ? den : 1e-3);
        worst = rel > worst ? rel : worst;
        maxg = fabs(dS[i]) > maxg ? fabs(dS[i]) : maxg;
    }
    assert_true(maxg > 1e-5);
    assert_true(worst < 2e-2);
    nas__nao_model_destroy(m);
}

/* ---- learning ------------------------------------------------------------------- */

/* A decoder trained on a handful of sequences reconstructs every one. */
static void test_decoder_reconstructs(void **state)
{
    (void)state;
    enum { V = 5, L = 6, N = 8, H = 24 };
    uint8_t allowed[6 * 5];
    memset(allowed, 1, sizeof allowed);
    nas__nao_dims d = {.vocab = V, .len = L, .embed = 12, .hidden = H, .mlp = 16};
    nas_rng r;
    nas_rng_seed(&r, 21, 1);
    nas__nao_model *m = nas__nao_model_create(&d, allowed, 0.1f, &r);
    assert_non_null(m);
    uint8_t seqs[N * L];
    float y[N];
    for (int i = 0; i < N * L; i++)
        seqs[i] = (uint8_t)nas_rng_bounded(&r, (uint32_t)V);
    for (int i = 0; i < N; i++)
        y[i] = (float)i / (N - 1);
    float before = nas__nao_loss(m, N, seqs, y, 0.2f, NULL, NULL, 0);
    float after = nas__nao_fit(m, N, seqs, y, 300, 4, 0, 0.01f, 0.2f, &r);
    assert_true(after < 0.25f * before);
    float S[N * L * H];
    uint8_t out[N * L];
    assert_int_equal(nas__nao_encode(m, N, seqs, S, NULL), 0);
    assert_int_equal(nas__nao_decode(m, N, S, out), 0);
    assert_memory_equal(out, seqs, sizeof seqs);
    /* beam search: the best beam is the greedy decode (here the original),
     * beams are distinct and in decreasing log probability */
    enum { W = 6 };
    for (int i = 0; i < N; i++) {
        uint8_t beam[W * L];
        double lp[W];
        assert_int_equal(nas__nao_decode_beam(m, S + (size_t)i * L * H, W, beam, lp), W);
        assert_memory_equal(beam, seqs + (size_t)i * L, L);
        for (int k = 0; k < W; k++) {
            if (k > 0)
                assert_true(lp[k] <= lp[k - 1]);
            for (int j = 0; j < k; j++)
                assert_memory_not_equal(beam + (size_t)k * L, beam + (size_t)j * L, L);
        }
        /* beam 0 is sequence i decoded from its own states: its log
         * probability is minus its teacher-forced cross-entropy */
        float rec, yi = 0.5f;
        nas__nao_loss(m, 1, seqs + (size_t)i * L, &yi, 0.0f, NULL, &rec, 0);
        assert_true(fabs(-lp[0] - (double)rec * L) < 1e-3 * (1.0 + fabs(lp[0])));
        assert_true(lp[W - 1] < lp[0]);
    }
    nas__nao_model_destroy(m);
}

static void ranks(const double *x, int n, double *rk)
{
    for (int i = 0; i < n; i++) {
        int less = 0, eq = 0;
        for (int j = 0; j < n; j++) {
            less += x[j] < x[i];
            eq += x[j] == x[i];
        }
        rk[i] = less + (eq - 1) / 2.0;
    }
}

static double spearman(const double *a, const double *b, int n)
{
    double *ra = malloc(n * sizeof *ra), *rb = malloc(n * sizeof *rb);
    ranks(a, n, ra);
    ranks(b, n, rb);
    double ma = 0, mb = 0;
    for (int i = 0; i < n; i++) {
        ma += ra[i] / n;
        mb += rb[i] / n;
    }
    double sab = 0, saa = 0, sbb = 0;
    for (int i = 0; i < n; i++) {
        sab += (ra[i] - ma) * (rb[i] - mb);
        saa += (ra[i] - ma) * (ra[i] - ma);
        sbb += (rb[i] - mb) * (rb[i] - mb);
    }
    free(ra);
    free(rb);
    return sab / sqrt(saa * sbb);
}

/* Kendall's tau-b. */
static double kendall(const double *a, const double *b, int n)
{
    double c = 0, dsc = 0, ta = 0, tb = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            double x = a[i] - a[j], y = b[i] - b[j];
            if (x == 0 && y == 0)
                continue;
            if (x == 0)
                ta++;
            else if (y == 0)
                tb++;
            else if ((x > 0) == (y > 0))
                c++;
            else
                dsc++;
        }
    return (c - dsc) / sqrt((c + dsc + ta) * (c + dsc + tb));
}

/* Synthetic score of a cell genotype: 2 per 3x3 conv, 1 per 1x1 conv, minus
 * 0.5 per pooling; ties are broken by nothing. */
static double synth_score(const nas_genotype *g)
{
    double s = 0;
    for (int i = 0; i < g->len; i++)
        s += g->tok[i] == NAS_OP_NOR_CONV_3X3 ? 2.0
             : g->tok[i] == NAS_OP_NOR_CONV_1X1 ? 1.0
             : g->tok[i] == NAS_OP_AVG_POOL_3X3 ? -0.5
                                                 : 0.0;
    return s;
}

typedef struct fixture {
    nas_config cfg;
    nas_space *space;
} fixture;

static int setup_space(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    nas_config_defaults(&f->cfg);
    snprintf(f->cfg.experiment, sizeof f->cfg.experiment, "test-nao");
    f->cfg.search.strategy = NAS_STRATEGY_NAO;
    nas_error err;
    if (nas_space_create(&f->cfg.space, &f->space, &err) != NAS_OK) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown_space(void **state)
{
    fixture *f = *state;
    nas_space_destroy(f->space);
    free(f);
    return 0;
}

/* The predictor ranks held-out cells by a synthetic score. */
static void test_predictor_rank_correlation(void **state)
{
    fixture *f = *state;
    const int NTR = 150, NTE = 150;
    const int L = nas_space_seq_len(f->space), V = nas_space_vocab_size(f->space);
    uint8_t *allowed = malloc((size_t)L * V);
    for (int t = 0; t < L; t++)
        for (int v = 0; v < V; v++)
            allowed[t * V + v] = (uint8_t)nas_space_token_allowed(f->space, t, v);
    nas__nao_dims d = {.vocab = V, .len = L, .embed = 16, .hidden = 32, .mlp = 32};
    nas_rng r;
    nas_rng_seed(&r, 5, 5);
    nas__nao_model *m = nas__nao_model_create(&d, allowed, 0.1f, &r);
    free(allowed);
    assert_non_null(m);
    uint8_t *seqs = malloc((size_t)(NTR + NTE) * L);
    float *y = malloc(NTR * sizeof *y);
    double *truth = malloc(NTE * sizeof *truth), *pred = malloc(NTE * sizeof *pred);
    for (int i = 0; i < NTR + NTE; i++) {
        nas_genotype g;
        nas_space_sample(f->space, &r, &g);
        memcpy(seqs + (size_t)i * L, g.tok, (size_t)L);
        double s = synth_score(&g);
        if (i < NTR)
            y[i] = (float)((s + 3.0) / 15.0); /* [-3, 12] -> [0, 1] */
        else
            truth[i - NTR] = s;
    }
    nas__nao_fit(m, NTR, seqs, y, 150, 32, 0, 0.005f, 0.8f, &r);
    float *S = malloc((size_t)NTE * L * d.hidden * sizeof(float));
    float *p = malloc(NTE * sizeof(float));
    assert_int_equal(nas__nao_encode(m, NTE, seqs + (size_t)NTR * L, S, p), 0);
    for (int i = 0; i < NTE; i++)
        pred[i] = p[i];
    double rho = spearman(truth, pred, NTE), tau = kendall(truth, pred, NTE);
    print_message("predictor on held-out cells: spearman %.3f kendall %.3f\n", rho, tau);
    assert_true(rho > 0.9);
    assert_true(tau > 0.75);
    free(S);
    free(p);
    free(seqs);
    free(y);
    free(truth);
    free(pred);
    nas__nao_model_destroy(m);
}

/* ---- the strategy ----------------------------------------------------------------- */

typedef struct known_set {
    const nas_space *space;
    char (*keys)[NAS_GENOTYPE_STR_MAX];
    int n;
    int calls;
} known_set;

static int known_fn(void *ctx, const nas_genotype *g)
{
    known_set *k = ctx;
    char key[NAS_GENOTYPE_STR_MAX];
    nas_space_key(k->space, g, key, sizeof key);
    k->calls++;
    for (int i = 0; i < k->n; i++)
        if (strcmp(k->keys[i], key) == 0)
            return 1;
    return 0;
}

/*
 * Run `trials` trials on the synthetic score, the way the controller does
 * (propose, drop known keys, evaluate, observe), recording the genotypes.
 * With `replay` (k, genotypes) the first k trials replay a recorded run:
 * propose is called and the recorded genotype observed.
 */
static void run_search(fixture *f, uint64_t seed, int trials, nas_genotype *rec, int replay_k,
                       const nas_genotype *replay)
{
    nas_config cfg = f->cfg;
    cfg.seed = seed;
    cfg.search.nao.seed_archs = 10;
    cfg.search.nao.epochs = 20;
    cfg.search.nao.top_k = 10;
    cfg.search.nao.batch_per_round = 4;
    nas_strategy *s = NULL;
    nas_error err;
    assert_int_equal(nas_strategy_create(&cfg, f->space, &s, &err), NAS_OK);
    assert_string_equal(nas_strategy_name(s), "nao");
    known_set ks = {.space = f->space, .keys = calloc(trials, NAS_GENOTYPE_STR_MAX)};
    for (int t = 0; t < trials; t++) {
        nas_genotype g;
        int rc = nas_strategy_propose(s, known_fn, &ks, &g, &err);
        assert_int_equal(rc, NAS_OK);
        if (t < replay_k) {
            assert_memory_equal(g.tok, replay[t].tok, (size_t)g.len); /* same as recorded */
            g = replay[t];
        }
        assert_true(nas_space_is_valid(f->space, &g));
        assert_int_equal(known_fn(&ks, &g), 0); /* never a known cell */
        nas_space_key(f->space, &g, ks.keys[ks.n++], NAS_GENOTYPE_STR_MAX);
        rec[t] = g;
        nas_strategy_observe(s, &g, synth_score(&g));
    }
    free(ks.keys);
    nas_strategy_destroy(s);
}

static void test_strategy_valid_unseen_and_better(void **state)
{
    fixture *f = *state;
    const int T = 40;
    nas_genotype rec[40];
    run_search(f, 3, T, rec, 0, NULL);
    /* after the 10 random seeds, the model's proposals should score well
     * above random cells on the synthetic score (random mean: 2.5) */
    double model_mean = 0.0;
    for (int t = 10; t < T; t++)
        model_mean += synth_score(&rec[t]) / (T - 10);
    print_message("mean synthetic score of NAO proposals %.2f (random cells: 2.5)\n",
                  model_mean);
    assert_true(model_mean > 5.0);
    /* the trust region (max_edit, default 1): the model's candidates differ
     * from the top cell they were moved from in one token. A proposal is a
     * uniform sample only when a round has no candidate, so most proposals
     * must be one token from an earlier trial (for a uniform sample among
     * ~40 earlier cells that is about 6 %) */
    int near = 0;
    for (int t = 10; t < T; t++) {
        int close = 0;
        for (int u = 0; u < t && !close; u++) {
            int hd = 0;
            for (int q = 0; q < rec[t].len; q++)
                hd += rec[t].tok[q] != rec[u].tok[q];
            close = hd <= 1;
        }
        near += close;
    }
    print_message("%d of %d model-phase proposals are one token from an earlier trial\n", near,
                  T - 10);
    assert_true(near >= (T - 10) / 2);
}

static void test_strategy_deterministic_and_replay(void **state)
{
    fixture *f = *state;
    const int T = 36, K = 19;
    nas_genotype a[36], b[36], c[36], d[36];
    run_search(f, 77, T, a, 0, NULL);
    run_search(f, 77, T, b, 0, NULL);
    for (int t = 0; t < T; t++)
        assert_memory_equal(a[t].tok, b[t].tok, (size_t)a[t].len);
    /* resume after K trials: a fresh strategy replays them and continues */
    run_search(f, 77, T, c, K, a);
    for (int t = 0; t < T; t++)
        assert_memory_equal(a[t].tok, c[t].tok, (size_t)a[t].len);
    /* another seed gives another search */
    run_search(f, 78, T, d, 0, NULL);
    int same = 0;
    for (int t = 0; t < T; t++)
        same += memcmp(a[t].tok, d[t].tok, (size_t)a[t].len) == 0;
    assert_true(same < T / 2);
}

/* Number of rec[from..T-1] within one token of an earlier trial. */
static int count_near(const nas_genotype *rec, int from, int T)
{
    int near = 0;
    for (int t = from; t < T; t++) {
        int close = 0;
        for (int u = 0; u < t && !close; u++) {
            int hd = 0;
            for (int q = 0; q < rec[t].len; q++)
                hd += rec[t].tok[q] != rec[u].tok[q];
            close = hd <= 1;
        }
        near += close;
    }
    return near;
}

/* fill_neighbours: a round whose decoded pool is empty falls back on the
 * single-token neighbours of the top cells, so with max_edit 1 every model
 * proposal is one token from an earlier trial (a uniform sample among ~40
 * earlier cells is that close about 6 % of the time), and the search stays
 * deterministic and replayable. */
static void test_strategy_fill_neighbours(void **state)
{
    fixture *f = *state;
    const int T = 40, K = 23;
    nas_genotype a[40], c[40];
    f->cfg.search.nao.max_edit = 1;
    f->cfg.search.nao.fill_neighbours = 1;
    run_search(f, 5, T, a, 0, NULL);
    int near = count_near(a, 10, T);
    print_message("fill_neighbours: %d of %d model-phase proposals one token from a trial\n", near,
                  T - 10);
    assert_int_equal(near, T - 10);
    run_search(f, 5, T, c, K, a); /* resume after K trials */
    for (int t = 0; t < T; t++)
        assert_memory_equal(a[t].tok, c[t].tok, (size_t)a[t].len);
}

/* Issue 29 (defect 4): a round's cost is bounded, whatever the number of
 * results. The rank targets counted pairs of results, O(n^2) a round, so
 * a long table search slowed down round by round. One round on 40,000
 * results (one epoch of the capped 96 samples, one greedy step) must take
 * well under half a second of CPU; counting pairs took seconds. */
static void test_strategy_round_cost_bounded(void **state)
{
    fixture *f = *state;
    const int n = 40000;
    nas_config cfg = f->cfg;
    cfg.seed = 11;
    cfg.search.nao.seed_archs = 1;
    cfg.search.nao.epochs = 1;
    cfg.search.nao.top_k = 1;
    cfg.search.nao.max_steps = 1;
    cfg.search.nao.beam_width = 1;
    nas_strategy *s = NULL;
    nas_error err;
    assert_int_equal(nas_strategy_create(&cfg, f->space, &s, &err), NAS_OK);
    nas_genotype g;
    assert_int_equal(nas_strategy_propose(s, NULL, NULL, &g, &err), NAS_OK);
    nas_rng r;
    nas_rng_seed(&r, 5, 1);
    for (int i = 0; i < n; i++) { /* repeated cells are fine: each is one result */
        nas_space_sample(f->space, &r, &g);
        nas_strategy_observe(s, &g, synth_score(&g) + 1e-6 * (i % 97));
    }
    clock_t t0 = clock();
    assert_int_equal(nas_strategy_propose(s, NULL, NULL, &g, &err), NAS_OK);
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    nas_strategy_round info;
    assert_int_equal(nas_strategy_last_round(s, &info), 1);
    assert_int_equal(info.n_train, n);
    print_message("one NAO round on %d results: %.3f s CPU\n", n, cpu);
    assert_true(cpu < 0.5);
    nas_strategy_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grad_encoder_predictor),
        cmocka_unit_test(test_grad_decoder),
        cmocka_unit_test(test_grad_joint),
        cmocka_unit_test(test_grad_rank_loss),
        cmocka_unit_test(test_grad_predictor_states),
        cmocka_unit_test(test_decoder_reconstructs),
        cmocka_unit_test_setup_teardown(test_predictor_rank_correlation, setup_space,
                                        teardown_space),
        cmocka_unit_test_setup_teardown(test_strategy_valid_unseen_and_better, setup_space,
                                        teardown_space),
        cmocka_unit_test_setup_teardown(test_strategy_deterministic_and_replay, setup_space,
                                        teardown_space),
        cmocka_unit_test_setup_teardown(test_strategy_fill_neighbours, setup_space, teardown_space),
        cmocka_unit_test_setup_teardown(test_strategy_round_cost_bounded, setup_space,
                                        teardown_space),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
