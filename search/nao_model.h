/*
 * search/nao_model.h - the encoder / performance predictor / decoder of NAO
 * (Luo, Tian, Qin, Chen, Liu, "Neural Architecture Optimization", NeurIPS
 * 2018), private to search/. Written from the paper's description:
 *
 *   encoder    token embedding [V,E] + one LSTM layer (hidden H) over the
 *              genotype's L tokens, with an input skip u_t = h_t + x_t Wr
 *              [E,H] (the authors' released code adds the embedding back);
 *              each state is L2-normalised, s_t = u_t / |u_t|, and the
 *              representation is the normalised mean r = m / |m|,
 *              m = (1/L) sum_t s_t.
 *   predictor  MLP r[H] -> ReLU(r W1 + b1)[M] -> sigmoid(a W2 + b2): a score
 *              in (0,1) regressed on targets in [0,1] (the strategy passes
 *              normalised ranks).
 *   decoder    one LSTM layer started from (h, c) = (r, r), fed the previous
 *              token (a start token at t = 0); Luong dot attention over the
 *              encoder states s_0..s_{L-1}: o_t = tanh([ctx_t, h_t] Wa + ba),
 *              logits_t = o_t Wo + bo over the V tokens, tokens not allowed
 *              at position t masked out.
 *   loss       tradeoff * mean (p - y)^2 + (1 - tradeoff) * mean over the
 *              B*L tokens of the cross-entropy of the teacher-forced decoder
 *              (plus, optionally, a pairwise ranking term on the predictor).
 *
 * Every matrix product goes through nas_host_sgemm (nas/backend.h); the
 * element-wise parts are plain C. Shapes are row-major, batch first. The
 * model is deterministic: same dims, seed and data give the same numbers.
 */
#ifndef NAS_SEARCH_NAO_MODEL_H
#define NAS_SEARCH_NAO_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "nas/rng.h"

typedef struct nas__nao_dims {
    int vocab;  /* V: tokens 0..V-1 */
    int len;    /* L: sequence length */
    int embed;  /* E */
    int hidden; /* H */
    int mlp;    /* M: predictor hidden width */
} nas__nao_dims;

typedef struct nas__nao_model nas__nao_model; /* opaque */

/*
 * Create a model. `allowed` [L*V] holds 1 where token v may stand at
 * position t (row t); the model copies it. Parameters are drawn uniformly
 * from [-init_scale, init_scale] with `rng` (0.1 in the paper's code).
 * Returns NULL on bad dims or out of memory.
 */
nas__nao_model *nas__nao_model_create(const nas__nao_dims *d, const uint8_t *allowed,
                                      float init_scale, nas_rng *rng);
void nas__nao_model_destroy(nas__nao_model *m); /* NULL is a no-op */
const nas__nao_dims *nas__nao_model_dims(const nas__nao_model *m);

/* All parameters / their gradients as one flat array of nparams floats
 * (used by the optimiser, tests and finite differences). */
size_t nas__nao_nparams(const nas__nao_model *m);
float *nas__nao_params(nas__nao_model *m);
float *nas__nao_grads(nas__nao_model *m);
/* Offset and size (floats) of the named parameter group in the flat array:
 * "enc" (embedding + LSTM), "prd" (MLP), "dec" (embedding, LSTM, attention,
 * output). Returns 0 on success, -1 for an unknown name. */
int nas__nao_param_group(const nas__nao_model *m, const char *name, size_t *off, size_t *n);

/*
 * Joint loss of a batch: seqs [B*L] tokens, y [B] targets in [0,1].
 * Returns tradeoff*pred + (1-tradeoff)*rec and writes the parts (each
 * pointer may be NULL). With `backward` != 0 the gradient of the returned
 * loss is ADDED to the gradient array (call nas__nao_zero_grad first).
 * Returns NAN on out of memory.
 */
float nas__nao_loss(nas__nao_model *m, int B, const uint8_t *seqs, const float *y, float tradeoff,
                    float *pred_loss, float *rec_loss, int backward);
void nas__nao_zero_grad(nas__nao_model *m);

/*
 * Add a pairwise ranking term to the predictor loss: pred becomes
 * mean (p - y)^2 + weight * mean over the batch's ordered pairs y_i > y_j
 * of log(1 + exp(-(z_i - z_j))), z the predictor's logit (RankNet, Burges
 * et al., ICML 2005). What matters for a search is the order of the best
 * architectures, which squared error alone weighs little. 0 (the default
 * of a new model) turns it off; negative values count as 0.
 */
void nas__nao_set_rank_weight(nas__nao_model *m, float weight);

/*
 * One Adam step (Kingma & Ba 2015; beta1 0.9, beta2 0.999, eps 1e-8) on the
 * accumulated gradients, after clipping their global L2 norm to `clip`
 * (<= 0: no clipping) and adding weight decay `wd` * w to them (L2).
 */
void nas__nao_adam_step(nas__nao_model *m, float lr, float wd, float clip);

/*
 * Train `epochs` passes over N sequences (seqs [N*L], targets y [N]) in
 * shuffled mini-batches of `batch` (shuffle from `rng`); with per_epoch > 0
 * an epoch visits only the first per_epoch of the shuffled samples, which
 * bounds the cost of a pass when N grows. Adam with weight decay 1e-4 and
 * gradient-norm clipping at 5 (the values of the paper's code). Returns the
 * last epoch's mean joint loss, or NAN on out of memory.
 */
float nas__nao_fit(nas__nao_model *m, int N, const uint8_t *seqs, const float *y, int epochs,
                   int batch, int per_epoch, float lr, float tradeoff, nas_rng *rng);

/* Issue 29: advance `rng` exactly as nas__nao_fit(m, N, ..., epochs, batch,
 * ..., rng) would (one shuffle of N indices per epoch), without training:
 * a replay that reuses a round's stored outcome keeps the later rounds'
 * random streams. Returns 0, or -1 on out of memory (rng then unchanged
 * only if nothing was drawn: check before relying on it). */
int nas__nao_fit_skip(int N, int epochs, int batch, nas_rng *rng);

/* Encoder: states [B*L*H] (s_t of sample b at (b*L + t)*H) and, when
 * `pred` is non-NULL, the predictor's score [B]. Returns 0 or -1 (memory). */
int nas__nao_encode(nas__nao_model *m, int B, const uint8_t *seqs, float *states, float *pred);

/*
 * Predictor score of one sample given its encoder states [L*H], and its
 * gradient with respect to those states, dstates [L*H] (may be NULL).
 */
float nas__nao_predict_states(nas__nao_model *m, const float *states, float *dstates);

/* Greedy decoder: B state sets [B*L*H] -> token sequences out [B*L],
 * each token the most likely allowed one. Returns 0 or -1 (memory). */
int nas__nao_decode(nas__nao_model *m, int B, const float *states, uint8_t *out);

/*
 * Beam-search decoder (width `width` >= 1) for one state set [L*H]: the
 * `width` most likely token sequences under the decoder (sum of the log
 * probabilities of their tokens), each token allowed at its position,
 * best first, into out [width*L] and their log probabilities into logp
 * [width] (may be NULL). Width 1 is the greedy decode. Returns the number
 * of sequences written (min(width, number of allowed sequences)), or -1
 * on out of memory. Uses the model's workspace: call nothing else on `m`
 * concurrently.
 */
int nas__nao_decode_beam(nas__nao_model *m, const float *states, int width, uint8_t *out,
                         double *logp);

/* L2-normalise each of the n rows of width w in place (x / sqrt(|x|^2 + 1e-12)). */
void nas__nao_normalize_rows(float *x, int n, int w);

#endif
