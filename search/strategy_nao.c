/*
 * search/strategy_nao.c - Neural Architecture Optimization (Luo, Tian, Qin,
 * Chen, Liu, "Neural Architecture Optimization", NeurIPS 2018), written
 * from the paper's description.
 *
 * The first `seed_archs` proposals are uniform samples (genotypes the
 * controller enqueued, issue 33, count among them). After that, each
 * time the proposal queue runs dry a round starts:
 *   1. the encoder/predictor/decoder (search/nao_model.h) is trained on
 *      every observed (genotype, score) pair with the joint loss, the
 *      scores mapped to their normalised ranks in [0,1]. Each round starts
 *      from a fresh initialisation (drawn from the strategy's model stream):
 *      the embedding geometry, and so the gradient paths of step 2, change
 *      from round to round instead of retracing the same decoded cells;
 *   2. the `top_k` best observed genotypes are encoded; their encoder states
 *      s are moved along the predictor's gradient, s' = s + eta dP/ds
 *      (renormalised), for eta = step, step*step_growth, ... (max_steps
 *      sizes) and decoded with a beam of `beam_width` sequences per step
 *      size (nas__nao_decode_beam; width 1 is greedy decoding). Every
 *      decoded genotype that is valid, new (canonical key neither observed,
 *      proposed, nor known to the controller) and within `max_edit` tokens
 *      of the genotype it was moved from (a trust region; 0: no limit)
 *      joins the round's candidate pool;
 *   3. the pool is ranked by the predictor's score of each candidate's own
 *      encoding and the best `batch_per_round` are queued (NAO's paper
 *      likewise keeps the best predicted of the new architectures); an
 *      empty pool is replaced by batch_per_round uniform samples.
 * Before step 1 retrains the model, the previous round's model predicts
 * the results that arrived since (held back from its training): their
 * Kendall tau-b is reported with the round (nas_strategy_last_round).
 * Proposals are labelled (nas_strategy_origin) "nao-seed" (the first
 * seed_archs uniform samples), "nao" (model candidates) or "nao-random"
 * (uniform samples for an empty pool).
 * With NAO_ENSEMBLE > 1 several models are trained per round; each moves
 * every top genotype and candidates are ranked by the mean prediction.
 * When no candidate decodes, the proposal is a uniform sample.
 *
 * Everything random comes from PCG32 streams seeded from cfg->seed, so the
 * proposals are a deterministic function of (config, seed, the sequence of
 * propose/observe calls and is_known answers): replaying a search's trials
 * in order, as the controller does on resume, rebuilds the same state.
 */
#include <math.h>   /* isfinite */
#include <stdlib.h> /* malloc, calloc, realloc, free, qsort */
#include <string.h> /* memcpy, memset, strcmp, strlen */
#include "strategy_impl.h"
#include "nao_model.h"
#include "key_set.h"

/* Used when a knob is 0 (not set); nas_config_defaults has the same values. */
#define NAO_DEF_SEED_ARCHS 20
#define NAO_DEF_TOP_K 5
#define NAO_DEF_EMBED 16
#define NAO_DEF_HIDDEN 32
#define NAO_DEF_EPOCHS 30
#define NAO_DEF_LR 0.005
#define NAO_DEF_TRADEOFF 0.8
#define NAO_DEF_STEP 0.1
#define NAO_DEF_GROWTH 1.5
#define NAO_DEF_MAX_STEPS 8
#define NAO_DEF_BATCH 2
#define NAO_DEF_BEAM 16
#define NAO_DEF_MAX_EDIT 1
#define NAO_TRAIN_BATCH 32 /* model mini-batch */
#define NAO_EPOCH_CAP 96   /* samples visited per epoch at most: bounds a round's cost */
#define NAO_RANDOM_TRIES 10000
#define NAO_MAX_ENSEMBLE 8
#define NAO_HELDOUT 32     /* held-back results the reported Kendall tau covers */
#ifndef NAO_ENSEMBLE
#define NAO_ENSEMBLE 1 /* models trained from fresh initialisations each round */
#endif

/* ---- strategy state ------------------------------------------------------------ */

typedef struct nao_obs {
    nas_genotype g;
    double score;
} nao_obs;

typedef struct nao_state {
    /* knobs, defaults applied */
    int seed_archs, top_k, epochs, max_steps, batch_per_round, restart, beam, max_edit;
    int fill_neighbours; /* empty pool: single-token neighbours of the top cells */
    uint8_t *allowed; /* [L*V] tokens allowed per position */
    double lr, tradeoff, step, growth, rank_weight;
    int L, V, H;
    nas__nao_model *model[NAO_MAX_ENSEMBLE];
    int ens; /* models in the ensemble */
    nas_rng mrng; /* model initialisation and mini-batch shuffling */
    nao_obs *obs;
    size_t n_obs, cap_obs;
    nas__key_set seen; /* keys observed or proposed */
    nas_genotype queue[256];
    uint8_t queue_random[256]; /* 1: a uniform sample queued for an empty pool */
    int q_head, q_len;
    long n_proposed;
    long rounds;
    const char *origin;     /* of the last proposal (nas_strategy_origin) */
    size_t n_obs_trained;   /* observations the current model was trained on */
    nas_strategy_round last; /* the last round, for the progress line */
    /* the NAO_HELDOUT most recent held-back results and their predictions */
    double hb_pred[NAO_HELDOUT], hb_score[NAO_HELDOUT];
    int hb_n, hb_pos;
    /* issue 29: every round so far (nas_strategy_round_log), and a replay's
     * hint: the stored proposals and the log of the run that made them */
    struct nao_logged *log, *hlog;
    size_t n_log, cap_log, n_hlog;
    nas_genotype *hint;
    long n_hint;
} nao_state;

/* Issue 29: one round as the log keeps it: it ran before proposal k
 * (0-based), queued q cells, f of them uniform samples (round_queue), and
 * the queue's checksum. */
typedef struct nao_logged {
    long k;
    int q, f;
    uint32_t sum;
} nao_logged;

typedef struct nao_cand {
    nas_genotype g;
    float pred;
    int order;
} nao_cand;

static void genotype_key(const nas_strategy *s, const nas_genotype *g, char *key)
{
    nas_space_key(s->space, g, key, NAS_GENOTYPE_STR_MAX);
}

static int is_new(nas_strategy *s, const nas_genotype *g, nas_known_fn is_known, void *ctx)
{
    nao_state *st = s->context;
    char key[NAS_GENOTYPE_STR_MAX];
    genotype_key(s, g, key);
    if (nas__key_set_has(&st->seen, key))
        return 0;
    return !(is_known && is_known(ctx, g));
}

static int cmp_obs_desc(const void *a, const void *b)
{
    const nao_obs *x = *(const nao_obs *const *)a, *y = *(const nao_obs *const *)b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x < y ? -1 : (x > y); /* earlier observation first */
}

static int cmp_cand_desc(const void *a, const void *b)
{
    const nao_cand *x = a, *y = b;
    if (x->pred != y->pred)
        return x->pred > y->pred ? -1 : 1;
    return x->order - y->order;
}

/* Add g to the round's candidate pool (cand, cand_keys, cand_seqs hold nc
 * entries) when it is valid, new and not already in the pool; returns the
 * new pool size. */
static int pool_add(nas_strategy *s, const nas_genotype *g, nas_known_fn is_known, void *known_ctx,
                    nao_cand *cand, char *cand_keys, uint8_t *cand_seqs, int nc)
{
    const int L = g->len;
    if (!nas_space_is_valid(s->space, g) || !is_new(s, g, is_known, known_ctx))
        return nc;
    char key[NAS_GENOTYPE_STR_MAX];
    genotype_key(s, g, key);
    for (int c = 0; c < nc; c++)
        if (strcmp(key, cand_keys + (size_t)c * NAS_GENOTYPE_STR_MAX) == 0)
            return nc;
    memcpy(cand_keys + (size_t)nc * NAS_GENOTYPE_STR_MAX, key, NAS_GENOTYPE_STR_MAX);
    cand[nc].g = *g;
    cand[nc].order = nc;
    memcpy(cand_seqs + (size_t)nc * L, g->tok, (size_t)L);
    return nc + 1;
}

/* How well the model ranks results it never saw: the current model
 * (trained in the previous round) predicts the results observed since;
 * those (prediction, score) pairs join the NAO_HELDOUT most recent ones,
 * and the result is Kendall's tau-b over them (each predicted by the
 * model of the round before it was observed). Reads the model only
 * (encoder and predictor forward passes, no random numbers), so the
 * search is unchanged. NaN with fewer than two pairs; *n gets their
 * number. */
static double heldout_tau(nao_state *st, int *n)
{
    *n = st->hb_n;
    int m = 0;
    const int L = st->L, H = st->H;
    if (st->rounds > 0)
        for (size_t i = st->n_obs_trained; i < st->n_obs; i++)
            m += isfinite(st->obs[i].score) ? 1 : 0;
    if (m == 0)
        return st->hb_n >= 2 ? nas_rank_kendall(st->hb_pred, st->hb_score, st->hb_n) : NAN;
    uint8_t *seqs = malloc((size_t)m * L);
    float *states = malloc((size_t)m * L * H * sizeof(float));
    float *pred = malloc((size_t)m * sizeof(float));
    double *p = calloc((size_t)m, sizeof(double));
    double *y = malloc((size_t)m * sizeof(double));
    double tau = NAN;
    if (seqs && states && pred && p && y) {
        int k = 0;
        for (size_t i = st->n_obs_trained; i < st->n_obs; i++)
            if (isfinite(st->obs[i].score)) {
                memcpy(seqs + (size_t)k * L, st->obs[i].g.tok, (size_t)L);
                y[k++] = st->obs[i].score;
            }
        int ok = 1;
        for (int e = 0; e < st->ens && ok; e++) {
            ok = nas__nao_encode(st->model[e], m, seqs, states, pred) == 0;
            for (int i = 0; ok && i < m; i++)
                p[i] += pred[i] / st->ens;
        }
        for (int i = 0; ok && i < m; i++) {
            st->hb_pred[st->hb_pos] = p[i];
            st->hb_score[st->hb_pos] = y[i];
            st->hb_pos = (st->hb_pos + 1) % NAO_HELDOUT;
            if (st->hb_n < NAO_HELDOUT)
                st->hb_n++;
        }
    }
    *n = st->hb_n;
    if (st->hb_n >= 2)
        tau = nas_rank_kendall(st->hb_pred, st->hb_score, st->hb_n);
    free(seqs);
    free(states);
    free(pred);
    free(p);
    free(y);
    return tau;
}

/* The working memory of one NAO round (nao_round), sized for n
 * observations, the K best start cells and nseq decoded sequences per
 * moved embedding. */
typedef struct round_bufs {
    size_t n;                /* finite observations */
    int K, T, nseq;          /* start cells, steps per move, sequences per moved arch */
    uint8_t *seqs;           /* [n][L] the observed cells */
    float *y;                /* [n] their targets (normalised ranks) */
    const nao_obs **ord;     /* [n] the observations, best first after the fit */
    float *S, *dS, *moved;   /* [L*H] embedding and gradient; [T][L*H] moved embeddings */
    uint8_t *dec;            /* [nseq][L] decoded sequences */
    size_t max_c;            /* candidate capacity */
    nao_cand *cand;
    char *cand_keys;
    uint8_t *cand_seqs;
    float *cand_pred, *cs;   /* one model's predictions and encoder states of the candidates */
} round_bufs;

static void round_free(round_bufs *b)
{
    free(b->seqs);
    free(b->y);
    free(b->ord);
    free(b->S);
    free(b->dS);
    free(b->moved);
    free(b->dec);
    free(b->cand);
    free(b->cand_keys);
    free(b->cand_seqs);
    free(b->cand_pred);
    free(b->cs);
}

/* Allocate the buffers for n observations. NAS_ENOMEM (b is then freed). */
static int round_alloc(const nao_state *st, size_t n, round_bufs *b)
{
    const int L = st->L, H = st->H;
    memset(b, 0, sizeof *b);
    b->n = n;
    b->K = st->top_k < (int)n ? st->top_k : (int)n;
    b->T = st->max_steps;
    b->seqs = malloc(n * (size_t)L);
    b->y = malloc(n * sizeof *b->y);
    b->ord = malloc(n * sizeof *b->ord);
    b->S = malloc((size_t)L * H * sizeof(float));
    b->dS = malloc((size_t)L * H * sizeof(float));
    b->moved = malloc((size_t)b->T * L * H * sizeof(float));
    b->nseq = b->T * (st->beam > 1 ? st->beam : 1);
    b->dec = malloc((size_t)b->nseq * L);
    b->max_c = (size_t)b->K * (size_t)st->ens * (size_t)b->nseq;
    if (st->fill_neighbours && b->max_c < (size_t)b->K * (size_t)L * (size_t)st->V)
        b->max_c = (size_t)b->K * (size_t)L * (size_t)st->V; /* single-token neighbours */
    b->cand = malloc(b->max_c * sizeof *b->cand);
    b->cand_keys = malloc(b->max_c * NAS_GENOTYPE_STR_MAX);
    b->cand_seqs = malloc(b->max_c * (size_t)L);
    b->cand_pred = malloc(b->max_c * sizeof(float));
    b->cs = malloc(b->max_c * (size_t)L * H * sizeof(float));
    if (!b->seqs || !b->y || !b->ord || !b->S || !b->dS || !b->moved || !b->dec || !b->cand ||
        !b->cand_keys || !b->cand_seqs || !b->cand_pred || !b->cs) {
        round_free(b);
        return NAS_ENOMEM;
    }
    return NAS_OK;
}

static int cmp_double_asc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* How many of the n sorted values v are below x (*less) and equal to it
 * (*eq): two binary searches. */
static void rank_in_sorted(const double *v, size_t n, double x, size_t *less, size_t *eq)
{
    size_t lo = 0, hi = n; /* first index with v >= x */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    *less = lo;
    for (hi = n; lo < hi;) { /* first index with v > x */
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    *eq = lo - *less;
}

/* The training set: every finite observation and its target, its
 * normalised rank in [0,1] (ties share their mean rank), so the sigmoid's
 * range is spread over the order of the scores rather than squeezed by a
 * few failed cells at the bottom. The counts come from a sorted copy of
 * the scores (issue 29: O(n log n) a round; counting pairs, O(n^2), made
 * a long search slow down round by round); the targets are the same.
 * NAS_ENOMEM. */
static int round_targets(const nao_state *st, round_bufs *b)
{
    const int L = st->L;
    const size_t n = b->n;
    double *sorted = malloc(n * sizeof *sorted);
    if (!sorted)
        return NAS_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < st->n_obs; i++)
        if (isfinite(st->obs[i].score)) {
            sorted[k] = st->obs[i].score;
            b->ord[k++] = &st->obs[i];
        }
    qsort(sorted, n, sizeof *sorted, cmp_double_asc);
    for (size_t i = 0; i < n; i++) {
        size_t less, eq;
        rank_in_sorted(sorted, n, b->ord[i]->score, &less, &eq);
        memcpy(b->seqs + i * L, b->ord[i]->g.tok, (size_t)L);
        b->y[i] = (float)(((double)less + 0.5 * (double)(eq - 1)) / (double)(n - 1));
    }
    free(sorted);
    return NAS_OK;
}

/* Train every model of the ensemble on the targets (a fresh one first
 * with search.nao.restart); *loss gets the mean fit loss. NAS_ENOMEM
 * (also for a fit that returned NaN). */
static int round_fit(nao_state *st, const round_bufs *b, float *loss)
{
    *loss = 0.0f;
    for (int e = 0; e < st->ens; e++) {
        if (st->restart) { /* a fresh initialisation: a new embedding geometry */
            nas__nao_model *fresh = nas__nao_model_create(nas__nao_model_dims(st->model[e]),
                                                          st->allowed, 0.1f, &st->mrng);
            if (!fresh)
                return NAS_ENOMEM;
            nas__nao_model_destroy(st->model[e]);
            st->model[e] = fresh;
        }
        nas__nao_set_rank_weight(st->model[e], (float)st->rank_weight);
        float fl = nas__nao_fit(st->model[e], (int)b->n, b->seqs, b->y, st->epochs,
                                NAO_TRAIN_BATCH, NAO_EPOCH_CAP, (float)st->lr,
                                (float)st->tradeoff, &st->mrng);
        if (isnan(fl))
            return NAS_ENOMEM;
        *loss += fl / (float)st->ens;
    }
    return NAS_OK;
}

/* Move start cell `start`'s embedding up model `mdl`'s predicted gradient
 * in T growing steps and decode each moved embedding (greedily, or the
 * beam's sequences); *nd gets the number of sequences in b->dec. -1 when
 * the model fails. */
static int round_move(const nao_state *st, nas__nao_model *mdl, const nao_obs *start,
                      round_bufs *b, int *nd)
{
    const int L = st->L, H = st->H, T = b->T;
    if (nas__nao_encode(mdl, 1, start->g.tok, b->S, NULL) != 0)
        return -1;
    nas__nao_predict_states(mdl, b->S, b->dS);
    double eta = st->step;
    for (int t = 0; t < T; t++, eta *= st->growth)
        for (int i = 0; i < L * H; i++)
            b->moved[(size_t)t * L * H + i] = b->S[i] + (float)eta * b->dS[i];
    nas__nao_normalize_rows(b->moved, T * L, H);
    *nd = T;
    if (st->beam <= 1)
        return nas__nao_decode(mdl, T, b->moved, b->dec) != 0 ? -1 : 0;
    *nd = 0;
    for (int t = 0; t < T; t++) {
        int got = nas__nao_decode_beam(mdl, b->moved + (size_t)t * L * H, st->beam,
                                       b->dec + (size_t)*nd * L, NULL);
        if (got < 0)
            return -1;
        *nd += got;
    }
    return 0;
}

/* The candidates decoded near the K best cells by every model, within
 * the trust region (search.nao.max_edit tokens from the start). *nc gets
 * their number. NAS_ENOMEM when a model fails. */
static int round_decode(nas_strategy *s, round_bufs *b, nas_known_fn is_known, void *known_ctx,
                        int *nc)
{
    nao_state *st = s->context;
    const int L = st->L, radius = st->max_edit;
    *nc = 0;
    for (int a = 0; a < b->K; a++) {
        for (int e = 0; e < st->ens; e++) {
            int nd;
            if (round_move(st, st->model[e], b->ord[a], b, &nd) != 0)
                return NAS_ENOMEM;
            for (int t = 0; t < nd; t++) {
                nas_genotype g;
                memset(&g, 0, sizeof g);
                g.len = L;
                memcpy(g.tok, b->dec + (size_t)t * L, (size_t)L);
                if (radius > 0) { /* the trust region around the start */
                    int hd = 0;
                    for (int q = 0; q < L; q++)
                        hd += g.tok[q] != b->ord[a]->g.tok[q];
                    if (hd > radius)
                        continue;
                }
                *nc = pool_add(s, &g, is_known, known_ctx, b->cand, b->cand_keys, b->cand_seqs,
                               *nc);
            }
        }
    }
    return NAS_OK;
}

/* Nothing new decoded near the best cells: their single-token neighbours,
 * ranked by the predictor like decoded candidates. Returns the new count. */
static int round_neighbours(nas_strategy *s, round_bufs *b, nas_known_fn is_known,
                            void *known_ctx, int nc)
{
    nao_state *st = s->context;
    const int L = st->L;
    for (int a = 0; a < b->K; a++)
        for (int q = 0; q < L; q++)
            for (int v = 0; v < st->V; v++) {
                if (v == b->ord[a]->g.tok[q] || !st->allowed[q * st->V + v])
                    continue;
                nas_genotype g;
                memset(&g, 0, sizeof g);
                g.len = L;
                memcpy(g.tok, b->ord[a]->g.tok, (size_t)L);
                g.tok[q] = (uint8_t)v;
                nc = pool_add(s, &g, is_known, known_ctx, b->cand, b->cand_keys, b->cand_seqs,
                              nc);
            }
    return nc;
}

/* Score every candidate by the ensemble's mean prediction, best first.
 * NAS_ENOMEM when a model fails. */
static int round_rank(nao_state *st, round_bufs *b, int nc)
{
    for (int c = 0; c < nc; c++)
        b->cand[c].pred = 0.0f;
    for (int e = 0; e < st->ens && nc > 0; e++) {
        if (nas__nao_encode(st->model[e], nc, b->cand_seqs, b->cs, b->cand_pred) != 0)
            return NAS_ENOMEM;
        for (int c = 0; c < nc; c++)
            b->cand[c].pred += b->cand_pred[c] / (float)st->ens;
    }
    qsort(b->cand, (size_t)nc, sizeof *b->cand, cmp_cand_desc);
    return NAS_OK;
}

/* Queue the search.nao.batch_per_round best candidates. An empty pool
 * (the neighbourhoods of the best cells are used up) is replaced by
 * batch_per_round uniform samples, so a dry spell does not retrain the
 * model for every proposal. */
static void round_queue(nas_strategy *s, const round_bufs *b, int nc, nas_known_fn is_known,
                        void *known_ctx, nas_strategy_round *info)
{
    nao_state *st = s->context;
    int cap = (int)(sizeof st->queue / sizeof st->queue[0]);
    int take = nc < st->batch_per_round ? nc : st->batch_per_round;
    take = take < cap ? take : cap;
    info->n_neighbours = nc - info->n_decoded;
    info->n_queued = take;
    for (int c = 0; c < take; c++) {
        st->queue[c] = b->cand[c].g;
        st->queue_random[c] = 0;
    }
    int want = take > 0 ? take : (st->batch_per_round < cap ? st->batch_per_round : cap);
    for (int tries = 0; take < want && tries < 100 * want; tries++) {
        nas_genotype g;
        nas_space_sample(s->space, &s->rng, &g);
        if (!is_new(s, &g, is_known, known_ctx))
            continue;
        char key[NAS_GENOTYPE_STR_MAX], qk[NAS_GENOTYPE_STR_MAX];
        genotype_key(s, &g, key);
        int dup = 0;
        for (int c = 0; c < take && !dup; c++) {
            genotype_key(s, &st->queue[c], qk);
            dup = strcmp(key, qk) == 0;
        }
        if (!dup) {
            st->queue_random[take] = 1;
            st->queue[take++] = g;
            info->n_random++;
        }
    }
    st->q_head = 0;
    st->q_len = take;
}

/* ---- the round log and the replay's shortcut (issue 29) ------------------------- */

/* FNV-1a over the tokens of queue[0..q). */
static uint32_t queue_sum(const nas_genotype *queue, int q)
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < q; i++)
        for (int t = 0; t < queue[i].len; t++) {
            h ^= queue[i].tok[t];
            h *= 16777619u;
        }
    return h;
}

/* Append the round just made (the queue as round_queue left it). -1 when
 * out of memory (the log then stops: a later replay trains those rounds). */
static int log_round(nao_state *st, int fills)
{
    if (st->n_log == st->cap_log) {
        size_t nc = st->cap_log ? 2 * st->cap_log : 64;
        nao_logged *nl = realloc(st->log, nc * sizeof *nl);
        if (!nl)
            return -1;
        st->log = nl;
        st->cap_log = nc;
    }
    st->log[st->n_log++] = (nao_logged){.k = st->n_proposed, .q = st->q_len, .f = fills,
                                        .sum = queue_sum(st->queue, st->q_len)};
    return 0;
}

/*
 * A replayed round rebuilt from the hint, when the stored log has it (round
 * number st->rounds, before this proposal) and its whole queue is among the
 * stored proposals: the model streams advance as round_fit would draw
 * (fresh initialisations, the fit's shuffles), the queue is the stored
 * proposals, or round_queue's uniform samples drawn again, and it must
 * match the logged checksum. Returns 1 when done; 0 (nothing changed):
 * train the round.
 */
static int nao_ghost_round(nas_strategy *s, size_t n, nas_known_fn is_known, void *known_ctx)
{
    nao_state *st = s->context;
    if ((size_t)st->rounds >= st->n_hlog || n < 2)
        return 0;
    const nao_logged *lg = &st->hlog[st->rounds];
    int cap = (int)(sizeof st->queue / sizeof st->queue[0]);
    if (lg->k != st->n_proposed || lg->q < 0 || lg->q > cap || lg->f < 0 || lg->f > lg->q ||
        lg->k + lg->q > st->n_hint)
        return 0;
    nas_rng mrng = st->mrng, rng = s->rng;
    nas__nao_model *fresh[NAO_MAX_ENSEMBLE] = {0};
    int ok = 1;
    for (int e = 0; e < st->ens && ok; e++) { /* as round_fit draws */
        fresh[e] = nas__nao_model_create(nas__nao_model_dims(st->model[e]), st->allowed, 0.1f,
                                         &st->mrng);
        ok = fresh[e] && nas__nao_fit_skip((int)n, st->epochs, NAO_TRAIN_BATCH, &st->mrng) == 0;
    }
    nas_strategy_round info;
    memset(&info, 0, sizeof info);
    if (ok && (lg->f > 0 || lg->q == 0)) { /* an empty pool's uniform samples: drawn again */
        round_bufs none;
        memset(&none, 0, sizeof none);
        round_queue(s, &none, 0, is_known, known_ctx, &info);
    } else if (ok) {
        for (int i = 0; i < lg->q; i++) {
            st->queue[i] = st->hint[lg->k + i];
            st->queue_random[i] = 0;
        }
        st->q_head = 0;
        st->q_len = lg->q;
        info.n_queued = lg->q;
    }
    ok = ok && st->q_len == lg->q && queue_sum(st->queue, st->q_len) == lg->sum;
    for (int i = 0; ok && i < lg->q; i++)
        ok = memcmp(st->queue[i].tok, st->hint[lg->k + i].tok, (size_t)st->L) == 0;
    if (!ok) { /* not the logged round: as before, and train it */
        for (int e = 0; e < st->ens; e++)
            nas__nao_model_destroy(fresh[e]);
        st->mrng = mrng;
        s->rng = rng;
        st->q_head = st->q_len = 0;
        return 0;
    }
    for (int e = 0; e < st->ens; e++) {
        nas__nao_model_destroy(st->model[e]);
        st->model[e] = fresh[e];
    }
    st->rounds++;
    st->n_obs_trained = st->n_obs;
    info.round = st->rounds;
    info.n_train = (int)n;
    info.tau = NAN;
    st->last = info;
    (void)log_round(st, lg->f);
    return 1;
}

static char *nao_round_log(const nas_strategy *s)
{
    const nao_state *st = s->context;
    if (st->n_log == 0)
        return NULL;
    size_t cap = st->n_log * 48 + 1, len = 0;
    char *text = malloc(cap);
    if (!text)
        return NULL;
    text[0] = '\0';
    for (size_t i = 0; i < st->n_log; i++) {
        const nao_logged *lg = &st->log[i];
        len += (size_t)snprintf(text + len, cap - len, "%s%ld:%d:%d:%08x", i ? "," : "", lg->k,
                                lg->q, lg->f, (unsigned)lg->sum);
    }
    return text;
}

static int nao_replay_hint(nas_strategy *s, const nas_genotype *stored, int n, const char *log,
                           nas_error *err)
{
    nao_state *st = s->context;
    free(st->hint);
    free(st->hlog);
    st->hint = NULL;
    st->hlog = NULL;
    st->n_hint = 0;
    st->n_hlog = 0;
    if (n <= 0 || !stored || !log || !*log)
        return NAS_OK;
    size_t m = 1;
    for (const char *p = log; *p; p++)
        m += *p == ',';
    st->hint = malloc((size_t)n * sizeof *st->hint);
    st->hlog = malloc(m * sizeof *st->hlog);
    if (!st->hint || !st->hlog) {
        nao_replay_hint(s, NULL, 0, NULL, NULL);
        return nas_error_set(err, NAS_ENOMEM, "nao: out of memory for the replay's hint");
    }
    memcpy(st->hint, stored, (size_t)n * sizeof *st->hint);
    st->n_hint = n;
    for (const char *p = log; *p && st->n_hlog < m;) { /* a bad entry ends the log */
        char *end;
        nao_logged lg;
        lg.k = strtol(p, &end, 10);
        if (*end != ':')
            break;
        lg.q = (int)strtol(end + 1, &end, 10);
        if (*end != ':')
            break;
        lg.f = (int)strtol(end + 1, &end, 10);
        if (*end != ':')
            break;
        lg.sum = (uint32_t)strtoul(end + 1, &end, 16);
        if (*end && *end != ',')
            break;
        st->hlog[st->n_hlog++] = lg;
        p = *end ? end + 1 : end;
    }
    return NAS_OK;
}

/* One NAO round (Luo et al., NeurIPS 2018): train the models on the
 * observed scores, move the best cells' embeddings up the predicted
 * gradient, decode, rank and queue. NAS_OK (the queue may stay empty when
 * nothing new decodes) or NAS_ENOMEM. */
static int nao_round(nas_strategy *s, nas_known_fn is_known, void *known_ctx, nas_error *err)
{
    nao_state *st = s->context;
    size_t n = 0;
    for (size_t i = 0; i < st->n_obs; i++)
        n += isfinite(st->obs[i].score) ? 1 : 0;
    if (n < 2 || nao_ghost_round(s, n, is_known, known_ctx)) /* issue 29: a replay */
        return NAS_OK;
    round_bufs b;
    if (round_alloc(st, n, &b) != NAS_OK)
        return nas_error_set(err, NAS_ENOMEM, "nao: out of memory in a model round");
    if (round_targets(st, &b) != NAS_OK) {
        round_free(&b);
        return nas_error_set(err, NAS_ENOMEM, "nao: out of memory in a model round");
    }
    nas_strategy_round info;
    memset(&info, 0, sizeof info);
    info.tau = heldout_tau(st, &info.n_heldout);
    float fit_loss = 0.0f;
    int rc = round_fit(st, &b, &fit_loss);
    int nc = 0;
    if (rc == NAS_OK) {
        st->rounds++;
        st->n_obs_trained = st->n_obs;
        info.round = st->rounds;
        info.n_train = (int)n;
        info.loss = fit_loss;
        qsort(b.ord, n, sizeof *b.ord, cmp_obs_desc);
        rc = round_decode(s, &b, is_known, known_ctx, &nc);
    }
    if (rc == NAS_OK) {
        info.n_decoded = nc;
        if (nc == 0 && st->fill_neighbours)
            nc = round_neighbours(s, &b, is_known, known_ctx, nc);
        rc = round_rank(st, &b, nc);
    }
    if (rc == NAS_OK) {
        round_queue(s, &b, nc, is_known, known_ctx, &info);
        st->last = info;
        (void)log_round(st, info.n_random); /* issue 29 */
    } else {
        nas_error_set(err, rc, "nao: out of memory in a model round");
    }
    round_free(&b);
    return rc;
}

static int nao_random(nas_strategy *s, nas_known_fn is_known, void *known_ctx, nas_genotype *out)
{
    for (int i = 0; i < NAO_RANDOM_TRIES; i++) {
        nas_space_sample(s->space, &s->rng, out);
        if (is_new(s, out, is_known, known_ctx))
            return NAS_OK;
    }
    return NAS_EINFEASIBLE;
}

static int nao_propose(nas_strategy *s, nas_known_fn is_known, void *known_ctx, nas_genotype *out,
                       nas_error *err)
{
    nao_state *st = s->context;
    int rc = NAS_EINFEASIBLE;
    if (st->n_proposed >= st->seed_archs) {
        for (int pass = 0; pass < 2 && rc != NAS_OK; pass++) {
            if (pass == 1 && st->q_len == 0) {
                int r = nao_round(s, is_known, known_ctx, err);
                if (r != NAS_OK)
                    return r;
            }
            while (st->q_len > 0 && rc != NAS_OK) {
                st->origin = st->queue_random[st->q_head] ? "nao-random" : "nao";
                *out = st->queue[st->q_head++];
                st->q_len--;
                if (is_new(s, out, is_known, known_ctx))
                    rc = NAS_OK;
            }
        }
    }
    if (rc != NAS_OK) {
        st->origin = st->n_proposed < st->seed_archs ? "nao-seed" : "nao-random";
        rc = nao_random(s, is_known, known_ctx, out);
    }
    if (rc != NAS_OK) {
        memset(out, 0, sizeof *out);
        return nas_error_set(err, rc, "nao: no new architecture found after %d samples",
                             NAO_RANDOM_TRIES);
    }
    char key[NAS_GENOTYPE_STR_MAX];
    genotype_key(s, out, key);
    if (nas__key_set_add(&st->seen, key) != 0)
        return nas_error_set(err, NAS_ENOMEM, "nao: out of memory");
    st->n_proposed++;
    return NAS_OK;
}

static void nao_observe(nas_strategy *s, const nas_genotype *g, double score)
{
    nao_state *st = s->context;
    if (st->n_obs == st->cap_obs) {
        size_t nc = st->cap_obs ? 2 * st->cap_obs : 64;
        nao_obs *no = realloc(st->obs, nc * sizeof *no);
        if (!no)
            return; /* the observation is lost; the search goes on */
        st->obs = no;
        st->cap_obs = nc;
    }
    st->obs[st->n_obs].g = *g;
    st->obs[st->n_obs].score = score;
    st->n_obs++;
    char key[NAS_GENOTYPE_STR_MAX];
    genotype_key(s, g, key);
    (void)nas__key_set_add(&st->seen, key);
}

static void nao_destroy(nas_strategy *s)
{
    nao_state *st = s->context;
    if (!st)
        return;
    for (int e = 0; e < st->ens; e++)
        nas__nao_model_destroy(st->model[e]);
    free(st->allowed);
    free(st->obs);
    free(st->log);
    free(st->hlog);
    free(st->hint);
    nas__key_set_free(&st->seen);
    free(st);
    s->context = NULL;
}

static const char *nao_origin(const nas_strategy *s)
{
    const nao_state *st = s->context;
    return st->origin;
}

static long nao_last_round(const nas_strategy *s, nas_strategy_round *out)
{
    const nao_state *st = s->context;
    if (st->rounds > 0)
        *out = st->last;
    return st->rounds;
}

/* Issue 33: an enqueued genotype is one of the seed_archs seed
 * architectures (one uniform sample fewer), never proposed again; its
 * result trains the model like any observation. */
static void nao_enqueued(nas_strategy *s, const nas_genotype *g)
{
    nao_state *st = s->context;
    char key[NAS_GENOTYPE_STR_MAX];
    genotype_key(s, g, key);
    (void)nas__key_set_add(&st->seen, key); /* out of memory: the controller's dedupe still holds */
    st->n_proposed++;
}

static const nas__strategy_ops nao_ops = {
    .name = "nao",
    .propose = nao_propose,
    .observe = nao_observe,
    .destroy = nao_destroy,
    .origin = nao_origin,
    .last_round = nao_last_round,
    .round_log = nao_round_log,
    .replay_hint = nao_replay_hint,
    .enqueued = nao_enqueued,
};

int nas__strategy_nao_init(nas_strategy *s, nas_error *err)
{
    const nas_config *cfg = s->cfg;
    const int L = nas_space_seq_len(s->space), V = nas_space_vocab_size(s->space);
    if (L < 1 || L > NAS_GENOTYPE_MAX_LEN || V < 1 || V > 255)
        return nas_error_set(err, NAS_EINVAL,
                             "nao: the space's token sequence (length %d, %d tokens) is not usable",
                             L, V);
    nao_state *st = calloc(1, sizeof *st);
    if (!st)
        return nas_error_set(err, NAS_ENOMEM, "nao: out of memory");
#define NAO_KNOB(field, def) (cfg->search.nao.field > 0 ? cfg->search.nao.field : (def))
    st->seed_archs = NAO_KNOB(seed_archs, NAO_DEF_SEED_ARCHS);
    st->top_k = NAO_KNOB(top_k, NAO_DEF_TOP_K);
    st->epochs = NAO_KNOB(epochs, NAO_DEF_EPOCHS);
    st->max_steps = NAO_KNOB(max_steps, NAO_DEF_MAX_STEPS);
    st->batch_per_round = NAO_KNOB(batch_per_round, NAO_DEF_BATCH);
    st->lr = NAO_KNOB(lr, NAO_DEF_LR);
    st->tradeoff = cfg->search.nao.tradeoff >= 0.0 && cfg->search.nao.tradeoff <= 1.0
                       ? cfg->search.nao.tradeoff
                       : NAO_DEF_TRADEOFF;
    st->step = NAO_KNOB(step, NAO_DEF_STEP);
    st->growth = NAO_KNOB(step_growth, NAO_DEF_GROWTH);
    int E = NAO_KNOB(embed_size, NAO_DEF_EMBED), H = NAO_KNOB(hidden_size, NAO_DEF_HIDDEN);
    st->beam = NAO_KNOB(beam_width, NAO_DEF_BEAM);
    st->max_edit = cfg->search.nao.max_edit >= 0 ? cfg->search.nao.max_edit : NAO_DEF_MAX_EDIT;
    st->rank_weight = cfg->search.nao.rank_weight >= 0.0 ? cfg->search.nao.rank_weight : 0.0;
    st->fill_neighbours = cfg->search.nao.fill_neighbours != 0;
    st->ens = NAO_ENSEMBLE;
#undef NAO_KNOB
    st->restart = 1;
    st->origin = "nao";
    st->L = L;
    st->V = V;
    st->H = H;
    uint8_t *allowed = malloc((size_t)L * V);
    if (!allowed) {
        free(st);
        return nas_error_set(err, NAS_ENOMEM, "nao: out of memory");
    }
    for (int t = 0; t < L; t++)
        for (int v = 0; v < V; v++)
            allowed[t * V + v] = (uint8_t)(nas_space_token_allowed(s->space, t, v) ? 1 : 0);
    nas_rng_seed(&st->mrng, cfg->seed, 0x4e414fu /* "NAO" */);
    nas__nao_dims d = {.vocab = V, .len = L, .embed = E, .hidden = H, .mlp = H};
    st->allowed = allowed;
    for (int e = 0; e < st->ens; e++) {
        st->model[e] = nas__nao_model_create(&d, allowed, 0.1f, &st->mrng);
        if (!st->model[e]) {
            for (int q = 0; q < e; q++)
                nas__nao_model_destroy(st->model[q]);
            free(allowed);
            free(st);
        return nas_error_set(err, NAS_ENOMEM, "nao: cannot create the model (%d x %d, E %d, H %d)",
                                 L, V, E, H);
        }
    }
    s->ops = &nao_ops;
    s->context = st;
    return NAS_OK;
}
