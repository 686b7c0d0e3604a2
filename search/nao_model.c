/*
 * search/nao_model.c - NAO's encoder, predictor and decoder with their
 * backward passes and Adam (see nao_model.h for the model and the paper).
 *
 * Layout: parameters, gradients and the two Adam moments are four flat
 * arrays with named pointers into them (one allocation each). Activations
 * of one batch live in a workspace sized for the largest batch seen.
 * Matrix products: nas_host_sgemm; element-wise work: plain loops.
 */
#include <math.h>   /* expf, sqrt, log, powf */
#include <stdlib.h> /* malloc, calloc, free */
#include <string.h> /* memcpy, memset, strcmp */
#include "nas/backend.h" /* nas_host_sgemm */
#include "nao_model.h"

/* Parameter tensors: X(name, element count). V, E, H, G = 4H, M in scope. */
#define NAO_PARAMS(X)                                                                    \
    X(enc_emb, V * E) X(enc_wx, E * G) X(enc_wh, H * G) X(enc_b, G) X(enc_wr, E * H)    \
    X(prd_w1, H * M) X(prd_b1, M) X(prd_w2, M) X(prd_b2, 1)                              \
    X(dec_emb, (V + 1) * E) X(dec_wx, E * G) X(dec_wh, H * G) X(dec_b, G)                \
    X(att_w, 2 * H * H) X(att_b, H) X(out_w, H * V) X(out_b, V)

typedef struct nao_tensors {
#define NAO_FIELD(name, count) float *name;
    NAO_PARAMS(NAO_FIELD)
#undef NAO_FIELD
} nao_tensors;

/* Workspace arrays: X(name, element count for batch capacity B). */
#define NAO_WORK(X)                                                                      \
    X(ex, L * B * E) X(eg, L * B * G) X(ec, L * B * H) X(etc, L * B * H) X(eh, L * B * H)  \
    X(eu, L * B * H)                                                                     \
    X(enrm, L * B) X(S, B * L * H) X(mraw, B * H) X(mn, B) X(r, B * H)                   \
    X(z1, B * M) X(a1, B * M) X(p, B)                                                    \
    X(dxe, L * B * E) X(dgt, L * B * G) X(dcc, L * B * H) X(dtc, L * B * H)              \
    X(dhh, L * B * H) X(alpha, L * B * L) X(cat, L * B * 2 * H) X(oat, L * B * H)        \
    X(prob, L * B * V)                                                                   \
    X(gG, B * G) X(gh, B * H) X(gc, B * H) X(gX, B * E) X(gS, B * L * H) X(gr, B * H)    \
    X(gcat, B * 2 * H) X(go, B * H) X(glog, B * V) X(gdh, B * H) X(galpha, L)            \
    X(gz, B * M) X(gp, B) X(zl, B) X(gzl, B)

typedef struct nao_work {
#define NAO_FIELD(name, count) float *name;
    NAO_WORK(NAO_FIELD)
#undef NAO_FIELD
} nao_work;

struct nas__nao_model {
    nas__nao_dims d;
    uint8_t *allowed; /* [L*V] */
    size_t np;
    float *w, *g, *am, *av; /* params, grads, Adam first and second moments */
    nao_tensors P, D;       /* named views into w and g */
    size_t grp_off[3], grp_n[3];
    long adam_t;
    int cap; /* batch capacity of the workspace */
    float *wsbuf;
    nao_work W;
    int *tok_in; /* [L*cap] decoder input tokens */
    uint32_t *perm;
    int perm_n;
    float rank_weight; /* weight of the pairwise ranking loss (0: none) */
};

static inline float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }
/* tanh through expf: glibc's tanhf (via expm1f) dominated the profile. */
static inline float tanh_f(float x)
{
    if (x > 15.0f)
        return 1.0f;
    if (x < -15.0f)
        return -1.0f;
    return 1.0f - 2.0f / (expf(2.0f * x) + 1.0f);
}

/* C[m,n] = A B (+ C when acc): row-major, tight leading dimensions. */
static void mm(int ta, int tb, int m, int n, int k, const float *a, const float *b, float *c,
               int acc)
{
    int lda = ta ? m : k, ldb = tb ? k : n;
    nas_host_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, acc ? 1.0f : 0.0f, c, n);
}

/* db[n] += column sums of g[rows,n]. */
static void colsum_add(float *db, const float *g, int rows, int n)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < n; j++)
            db[j] += g[(size_t)i * n + j];
}

void nas__nao_normalize_rows(float *x, int n, int w)
{
    for (int i = 0; i < n; i++) {
        float *row = x + (size_t)i * w;
        double ss = 1e-12;
        for (int j = 0; j < w; j++)
            ss += (double)row[j] * row[j];
        float inv = (float)(1.0 / sqrt(ss));
        for (int j = 0; j < w; j++)
            row[j] *= inv;
    }
}

nas__nao_model *nas__nao_model_create(const nas__nao_dims *d, const uint8_t *allowed,
                                      float init_scale, nas_rng *rng)
{
    if (!d || d->vocab < 1 || d->vocab > 255 || d->len < 1 || d->embed < 1 || d->hidden < 1 ||
        d->mlp < 1)
        return NULL;
    nas__nao_model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->d = *d;
    const size_t V = (size_t)d->vocab, E = (size_t)d->embed, H = (size_t)d->hidden,
                 G = 4 * H, M = (size_t)d->mlp, L = (size_t)d->len;
    size_t np = 0;
#define NAO_COUNT(name, count) np += (count);
    NAO_PARAMS(NAO_COUNT)
#undef NAO_COUNT
    m->np = np;
    m->allowed = malloc(L * V);
    m->w = calloc(np, sizeof(float));
    m->g = calloc(np, sizeof(float));
    m->am = calloc(np, sizeof(float));
    m->av = calloc(np, sizeof(float));
    if (!m->allowed || !m->w || !m->g || !m->am || !m->av) {
        nas__nao_model_destroy(m);
        return NULL;
    }
    memcpy(m->allowed, allowed, L * V);
    size_t off = 0;
#define NAO_PTR(name, count)                                                              \
    m->P.name = m->w + off;                                                              \
    m->D.name = m->g + off;                                                              \
    off += (count);
    NAO_PARAMS(NAO_PTR)
#undef NAO_PTR
    m->grp_off[0] = 0;
    m->grp_n[0] = (size_t)(m->P.prd_w1 - m->w);
    m->grp_off[1] = m->grp_n[0];
    m->grp_n[1] = (size_t)(m->P.dec_emb - m->P.prd_w1);
    m->grp_off[2] = m->grp_off[1] + m->grp_n[1];
    m->grp_n[2] = np - m->grp_off[2];
    for (size_t i = 0; i < np; i++)
        m->w[i] = init_scale * (2.0f * nas_rng_uniform(rng) - 1.0f);
    return m;
}

void nas__nao_model_destroy(nas__nao_model *m)
{
    if (!m)
        return;
    free(m->allowed);
    free(m->w);
    free(m->g);
    free(m->am);
    free(m->av);
    free(m->wsbuf);
    free(m->tok_in);
    free(m->perm);
    free(m);
}

const nas__nao_dims *nas__nao_model_dims(const nas__nao_model *m) { return &m->d; }
size_t nas__nao_nparams(const nas__nao_model *m) { return m->np; }
float *nas__nao_params(nas__nao_model *m) { return m->w; }
float *nas__nao_grads(nas__nao_model *m) { return m->g; }

int nas__nao_param_group(const nas__nao_model *m, const char *name, size_t *off, size_t *n)
{
    static const char *names[3] = {"enc", "prd", "dec"};
    for (int i = 0; i < 3; i++)
        if (strcmp(name, names[i]) == 0) {
            *off = m->grp_off[i];
            *n = m->grp_n[i];
            return 0;
        }
    return -1;
}

void nas__nao_zero_grad(nas__nao_model *m) { memset(m->g, 0, m->np * sizeof(float)); }

/* Make the workspace hold batches of B; 0 or -1 (out of memory). */
static int ensure_cap(nas__nao_model *m, int B)
{
    if (B <= m->cap)
        return 0;
    const size_t V = (size_t)m->d.vocab, E = (size_t)m->d.embed, H = (size_t)m->d.hidden,
                 G = 4 * H, M = (size_t)m->d.mlp, L = (size_t)m->d.len;
    size_t total = 0;
#define NAO_COUNT(name, count) total += (count);
    NAO_WORK(NAO_COUNT)
#undef NAO_COUNT
    float *buf = calloc(total, sizeof(float));
    int *tok = malloc(L * (size_t)B * sizeof(int));
    if (!buf || !tok) {
        free(buf);
        free(tok);
        return -1;
    }
    free(m->wsbuf);
    free(m->tok_in);
    m->wsbuf = buf;
    m->tok_in = tok;
    size_t off = 0;
#define NAO_PTR(name, count)                                                              \
    m->W.name = buf + off;                                                               \
    off += (count);
    NAO_WORK(NAO_PTR)
#undef NAO_PTR
    m->cap = B;
    return 0;
}

/*
 * One LSTM step for a batch: gates [B,G] hold the pre-activations on entry
 * and i, f, g, o on exit; c = f*cprev + i*g, tc = tanh(c), h = o*tc.
 * cprev NULL means zeros.
 */
static void lstm_cell_fwd(int B, int H, float *gates, const float *cprev, float *c, float *tc,
                          float *h)
{
    const int G = 4 * H;
    for (int b = 0; b < B; b++) {
        float *gt = gates + (size_t)b * G;
        for (int j = 0; j < H; j++) {
            float i = sigm(gt[j]), f = sigm(gt[H + j]), g = tanh_f(gt[2 * H + j]),
                  o = sigm(gt[3 * H + j]);
            gt[j] = i;
            gt[H + j] = f;
            gt[2 * H + j] = g;
            gt[3 * H + j] = o;
            size_t k = (size_t)b * H + j;
            float cv = i * g + (cprev ? f * cprev[k] : 0.0f);
            c[k] = cv;
            tc[k] = tanh_f(cv);
            h[k] = o * tc[k];
        }
    }
}

/*
 * Backward of lstm_cell_fwd: dh [B,H] (grad w.r.t. h), dc_io [B,H] grad
 * w.r.t. c from the future on entry, w.r.t. cprev on exit; writes dgates.
 */
static void lstm_cell_bwd(int B, int H, const float *gates, const float *cprev, const float *tc,
                          const float *dh, float *dc_io, float *dgates)
{
    const int G = 4 * H;
    for (int b = 0; b < B; b++) {
        const float *gt = gates + (size_t)b * G;
        float *dg = dgates + (size_t)b * G;
        for (int j = 0; j < H; j++) {
            size_t k = (size_t)b * H + j;
            float i = gt[j], f = gt[H + j], g = gt[2 * H + j], o = gt[3 * H + j];
            float t = tc[k];
            float dc = dc_io[k] + dh[k] * o * (1.0f - t * t);
            float cp = cprev ? cprev[k] : 0.0f;
            dg[j] = dc * g * i * (1.0f - i);
            dg[H + j] = dc * cp * f * (1.0f - f);
            dg[2 * H + j] = dc * i * (1.0f - g * g);
            dg[3 * H + j] = dh[k] * t * o * (1.0f - o);
            dc_io[k] = dc * f;
        }
    }
}

/* Encoder over seqs [B*L]: fills ex, eg, ec, etc, eh, enrm and S. */
static void enc_forward(nas__nao_model *m, int B, const uint8_t *seqs)
{
    const int V = m->d.vocab, E = m->d.embed, H = m->d.hidden, G = 4 * H, L = m->d.len;
    nao_work *w = &m->W;
    (void)V;
    for (int t = 0; t < L; t++) {
        float *X = w->ex + (size_t)t * B * E, *Gt = w->eg + (size_t)t * B * G;
        for (int b = 0; b < B; b++) {
            memcpy(X + (size_t)b * E, m->P.enc_emb + (size_t)seqs[b * L + t] * E,
                   E * sizeof(float));
            memcpy(Gt + (size_t)b * G, m->P.enc_b, G * sizeof(float));
        }
        mm(0, 0, B, G, E, X, m->P.enc_wx, Gt, 1);
        if (t > 0)
            mm(0, 0, B, G, H, w->eh + (size_t)(t - 1) * B * H, m->P.enc_wh, Gt, 1);
        float *h = w->eh + (size_t)t * B * H, *u = w->eu + (size_t)t * B * H;
        lstm_cell_fwd(B, H, Gt, t > 0 ? w->ec + (size_t)(t - 1) * B * H : NULL,
                      w->ec + (size_t)t * B * H, w->etc + (size_t)t * B * H, h);
        memcpy(u, h, (size_t)B * H * sizeof(float));
        mm(0, 0, B, H, E, X, m->P.enc_wr, u, 1); /* u = h + x Wr (input skip) */
        for (int b = 0; b < B; b++) {
            const float *hb = u + (size_t)b * H;
            double ss = 1e-12;
            for (int j = 0; j < H; j++)
                ss += (double)hb[j] * hb[j];
            float n = (float)sqrt(ss);
            w->enrm[t * B + b] = n;
            float *s = w->S + ((size_t)b * L + t) * H;
            for (int j = 0; j < H; j++)
                s[j] = hb[j] / n;
        }
    }
}

/* r = normalize(mean_t S[b,t]) for each b. */
static void rep_forward(nas__nao_model *m, int B)
{
    const int H = m->d.hidden, L = m->d.len;
    nao_work *w = &m->W;
    for (int b = 0; b < B; b++) {
        float *mr = w->mraw + (size_t)b * H;
        for (int j = 0; j < H; j++) {
            float acc = 0.0f;
            for (int t = 0; t < L; t++)
                acc += w->S[((size_t)b * L + t) * H + j];
            mr[j] = acc / (float)L;
        }
        double ss = 1e-12;
        for (int j = 0; j < H; j++)
            ss += (double)mr[j] * mr[j];
        float n = (float)sqrt(ss);
        w->mn[b] = n;
        for (int j = 0; j < H; j++)
            w->r[(size_t)b * H + j] = mr[j] / n;
    }
}

/* gS[b,t] += d/dS of the loss given gr (grad w.r.t. r). */
static void rep_backward(nas__nao_model *m, int B)
{
    const int H = m->d.hidden, L = m->d.len;
    nao_work *w = &m->W;
    for (int b = 0; b < B; b++) {
        const float *r = w->r + (size_t)b * H, *gr = w->gr + (size_t)b * H;
        float dot = 0.0f;
        for (int j = 0; j < H; j++)
            dot += r[j] * gr[j];
        float inv = 1.0f / (w->mn[b] * (float)L);
        for (int j = 0; j < H; j++) {
            float gm = (gr[j] - r[j] * dot) * inv;
            for (int t = 0; t < L; t++)
                w->gS[((size_t)b * L + t) * H + j] += gm;
        }
    }
}

/* p = sigmoid(relu(r W1 + b1) W2 + b2). */
static void prd_forward(nas__nao_model *m, int B)
{
    const int H = m->d.hidden, M = m->d.mlp;
    nao_work *w = &m->W;
    for (int b = 0; b < B; b++)
        memcpy(w->z1 + (size_t)b * M, m->P.prd_b1, M * sizeof(float));
    mm(0, 0, B, M, H, w->r, m->P.prd_w1, w->z1, 1);
    for (size_t i = 0; i < (size_t)B * M; i++)
        w->a1[i] = w->z1[i] > 0.0f ? w->z1[i] : 0.0f;
    for (int b = 0; b < B; b++)
        w->p[b] = m->P.prd_b2[0];
    mm(0, 0, B, 1, M, w->a1, m->P.prd_w2, w->p, 1);
    for (int b = 0; b < B; b++) {
        w->zl[b] = w->p[b];
        w->p[b] = sigm(w->p[b]);
    }
}

/* Given gp [B] = dLoss/dp and gzl [B] = any further dLoss/dz on the
 * logits z (the ranking loss; zero otherwise): accumulate predictor grads
 * (if grads) and gr += dLoss/dr. */
static void prd_backward(nas__nao_model *m, int B, int grads)
{
    const int H = m->d.hidden, M = m->d.mlp;
    nao_work *w = &m->W;
    for (int b = 0; b < B; b++)
        w->gp[b] = w->gp[b] * w->p[b] * (1.0f - w->p[b]) + w->gzl[b]; /* through the sigmoid */
    if (grads) {
        mm(1, 0, M, 1, B, w->a1, w->gp, m->D.prd_w2, 1);
        for (int b = 0; b < B; b++)
            m->D.prd_b2[0] += w->gp[b];
    }
    mm(0, 1, B, M, 1, w->gp, m->P.prd_w2, w->gz, 0);
    for (size_t i = 0; i < (size_t)B * M; i++)
        if (w->z1[i] <= 0.0f)
            w->gz[i] = 0.0f;
    if (grads) {
        mm(1, 0, H, M, B, w->r, w->gz, m->D.prd_w1, 1);
        colsum_add(m->D.prd_b1, w->gz, B, M);
    }
    mm(0, 1, B, H, M, w->gz, m->P.prd_w1, w->gr, 1);
}

/*
 * Decoder from S and r (already computed), positions 0..steps-1 (steps <=
 * L; a position depends only on those before it). With `target` (teacher
 * forcing) returns the summed cross-entropy over the B*steps tokens; `out` (may be NULL)
 * gets the argmax tokens, which are fed back when target is NULL.
 */
static double dec_forward_steps(nas__nao_model *m, int B, const uint8_t *target, uint8_t *out,
                                int steps)
{
    const int V = m->d.vocab, E = m->d.embed, H = m->d.hidden, G = 4 * H, L = m->d.len;
    nao_work *w = &m->W;
    double loss = 0.0;
    for (int t = 0; t < steps; t++) {
        float *X = w->dxe + (size_t)t * B * E, *Gt = w->dgt + (size_t)t * B * G;
        const float *hprev = t > 0 ? w->dhh + (size_t)(t - 1) * B * H : w->r;
        const float *cprev = t > 0 ? w->dcc + (size_t)(t - 1) * B * H : w->r;
        for (int b = 0; b < B; b++) {
            int tok;
            if (t == 0)
                tok = V;
            else if (target)
                tok = target[b * L + t - 1];
            else
                tok = out[b * L + t - 1];
            m->tok_in[t * B + b] = tok;
            memcpy(X + (size_t)b * E, m->P.dec_emb + (size_t)tok * E, E * sizeof(float));
            memcpy(Gt + (size_t)b * G, m->P.dec_b, G * sizeof(float));
        }
        mm(0, 0, B, G, E, X, m->P.dec_wx, Gt, 1);
        mm(0, 0, B, G, H, hprev, m->P.dec_wh, Gt, 1);
        float *h = w->dhh + (size_t)t * B * H;
        lstm_cell_fwd(B, H, Gt, cprev, w->dcc + (size_t)t * B * H, w->dtc + (size_t)t * B * H, h);
        float *cat = w->cat + (size_t)t * B * 2 * H;
        for (int b = 0; b < B; b++) {
            const float *Sb = w->S + (size_t)b * L * H, *hb = h + (size_t)b * H;
            float *al = w->alpha + ((size_t)t * B + b) * L;
            mm(0, 1, 1, L, H, hb, Sb, al, 0); /* scores = h . s_k */
            float mx = al[0];
            for (int k = 1; k < L; k++)
                mx = al[k] > mx ? al[k] : mx;
            float z = 0.0f;
            for (int k = 0; k < L; k++) {
                al[k] = expf(al[k] - mx);
                z += al[k];
            }
            for (int k = 0; k < L; k++)
                al[k] /= z;
            float *cb = cat + (size_t)b * 2 * H;
            mm(0, 0, 1, H, L, al, Sb, cb, 0); /* context */
            memcpy(cb + H, hb, H * sizeof(float));
        }
        float *o = w->oat + (size_t)t * B * H;
        for (int b = 0; b < B; b++)
            memcpy(o + (size_t)b * H, m->P.att_b, H * sizeof(float));
        mm(0, 0, B, H, 2 * H, cat, m->P.att_w, o, 1);
        for (size_t i = 0; i < (size_t)B * H; i++)
            o[i] = tanh_f(o[i]);
        float *pr = w->prob + (size_t)t * B * V;
        for (int b = 0; b < B; b++)
            memcpy(pr + (size_t)b * V, m->P.out_b, V * sizeof(float));
        mm(0, 0, B, V, H, o, m->P.out_w, pr, 1);
        const uint8_t *ok = m->allowed + (size_t)t * V;
        for (int b = 0; b < B; b++) {
            float *row = pr + (size_t)b * V;
            float mx = -INFINITY;
            int am = -1;
            for (int v = 0; v < V; v++)
                if (ok[v] && row[v] > mx) {
                    mx = row[v];
                    am = v;
                }
            float z = 0.0f;
            for (int v = 0; v < V; v++) {
                row[v] = ok[v] ? expf(row[v] - mx) : 0.0f;
                z += row[v];
            }
            for (int v = 0; v < V; v++)
                row[v] /= z;
            if (out)
                out[b * L + t] = (uint8_t)(am < 0 ? 0 : am);
            if (target) {
                float pt = row[target[b * L + t]];
                loss -= log(pt > 1e-30f ? (double)pt : 1e-30);
            }
        }
    }
    return loss;
}

/* The decoder over all L positions (see dec_forward_steps). */
static double dec_forward(nas__nao_model *m, int B, const uint8_t *target, uint8_t *out)
{
    return dec_forward_steps(m, B, target, out, m->d.len);
}

/* Backward of the teacher-forced decoder; `scale` multiplies d(sum CE).
 * Accumulates decoder grads, gS and gr. */
static void dec_backward(nas__nao_model *m, int B, const uint8_t *target, float scale)
{
    const int V = m->d.vocab, E = m->d.embed, H = m->d.hidden, G = 4 * H, L = m->d.len;
    nao_work *w = &m->W;
    memset(w->gh, 0, (size_t)B * H * sizeof(float));
    memset(w->gc, 0, (size_t)B * H * sizeof(float));
    for (int t = L - 1; t >= 0; t--) {
        const float *pr = w->prob + (size_t)t * B * V;
        for (int b = 0; b < B; b++)
            for (int v = 0; v < V; v++)
                w->glog[(size_t)b * V + v] =
                    scale * (pr[(size_t)b * V + v] - (v == target[b * L + t] ? 1.0f : 0.0f));
        const float *o = w->oat + (size_t)t * B * H;
        mm(1, 0, H, V, B, o, w->glog, m->D.out_w, 1);
        colsum_add(m->D.out_b, w->glog, B, V);
        mm(0, 1, B, H, V, w->glog, m->P.out_w, w->go, 0);
        for (size_t i = 0; i < (size_t)B * H; i++)
            w->go[i] *= 1.0f - o[i] * o[i];
        const float *cat = w->cat + (size_t)t * B * 2 * H;
        mm(1, 0, 2 * H, H, B, cat, w->go, m->D.att_w, 1);
        colsum_add(m->D.att_b, w->go, B, H);
        mm(0, 1, B, 2 * H, H, w->go, m->P.att_w, w->gcat, 0);
        const float *h = w->dhh + (size_t)t * B * H;
        for (int b = 0; b < B; b++) {
            float *dh = w->gdh + (size_t)b * H;
            const float *gcb = w->gcat + (size_t)b * 2 * H;
            for (int j = 0; j < H; j++)
                dh[j] = w->gh[(size_t)b * H + j] + gcb[H + j];
            const float *Sb = w->S + (size_t)b * L * H, *hb = h + (size_t)b * H;
            const float *al = w->alpha + ((size_t)t * B + b) * L;
            float *gSb = w->gS + (size_t)b * L * H;
            mm(0, 1, 1, L, H, gcb, Sb, w->galpha, 0);    /* dalpha = dctx . s_k */
            mm(1, 0, L, H, 1, al, gcb, gSb, 1);          /* ds_k += alpha_k dctx */
            float dot = 0.0f;
            for (int k = 0; k < L; k++)
                dot += al[k] * w->galpha[k];
            for (int k = 0; k < L; k++)
                w->galpha[k] = al[k] * (w->galpha[k] - dot); /* dscores */
            mm(0, 0, 1, H, L, w->galpha, Sb, dh, 1); /* dh += dscores S */
            mm(1, 0, L, H, 1, w->galpha, hb, gSb, 1); /* ds_k += dscore_k h */
        }
        const float *cprev = t > 0 ? w->dcc + (size_t)(t - 1) * B * H : w->r;
        const float *hprev = t > 0 ? w->dhh + (size_t)(t - 1) * B * H : w->r;
        const float *Gt = w->dgt + (size_t)t * B * G;
        lstm_cell_bwd(B, H, Gt, cprev, w->dtc + (size_t)t * B * H, w->gdh, w->gc, w->gG);
        const float *X = w->dxe + (size_t)t * B * E;
        mm(1, 0, E, G, B, X, w->gG, m->D.dec_wx, 1);
        mm(1, 0, H, G, B, hprev, w->gG, m->D.dec_wh, 1);
        colsum_add(m->D.dec_b, w->gG, B, G);
        mm(0, 1, B, E, G, w->gG, m->P.dec_wx, w->gX, 0);
        for (int b = 0; b < B; b++) {
            float *de = m->D.dec_emb + (size_t)m->tok_in[t * B + b] * E;
            for (int j = 0; j < E; j++)
                de[j] += w->gX[(size_t)b * E + j];
        }
        mm(0, 1, B, H, G, w->gG, m->P.dec_wh, w->gh, 0);
    }
    /* h_{-1} = c_{-1} = r */
    for (size_t i = 0; i < (size_t)B * H; i++)
        w->gr[i] += w->gh[i] + w->gc[i];
}

/* Backward of the encoder from gS (grad w.r.t. the normalised states). */
static void enc_backward(nas__nao_model *m, int B, const uint8_t *seqs)
{
    const int E = m->d.embed, H = m->d.hidden, G = 4 * H, L = m->d.len;
    nao_work *w = &m->W;
    memset(w->gh, 0, (size_t)B * H * sizeof(float));
    memset(w->gc, 0, (size_t)B * H * sizeof(float));
    for (int t = L - 1; t >= 0; t--) {
        for (int b = 0; b < B; b++) {
            const float *s = w->S + ((size_t)b * L + t) * H, *gs = w->gS + ((size_t)b * L + t) * H;
            float dot = 0.0f;
            for (int j = 0; j < H; j++)
                dot += s[j] * gs[j];
            float inv = 1.0f / w->enrm[t * B + b];
            float *du = w->go + (size_t)b * H;
            for (int j = 0; j < H; j++)
                du[j] = (gs[j] - s[j] * dot) * inv;
        }
        for (size_t i = 0; i < (size_t)B * H; i++)
            w->gdh[i] = w->gh[i] + w->go[i];
        const float *cprev = t > 0 ? w->ec + (size_t)(t - 1) * B * H : NULL;
        const float *Gt = w->eg + (size_t)t * B * G;
        lstm_cell_bwd(B, H, Gt, cprev, w->etc + (size_t)t * B * H, w->gdh, w->gc, w->gG);
        const float *X = w->ex + (size_t)t * B * E;
        mm(1, 0, E, G, B, X, w->gG, m->D.enc_wx, 1);
        if (t > 0)
            mm(1, 0, H, G, B, w->eh + (size_t)(t - 1) * B * H, w->gG, m->D.enc_wh, 1);
        colsum_add(m->D.enc_b, w->gG, B, G);
        mm(0, 1, B, E, G, w->gG, m->P.enc_wx, w->gX, 0);
        mm(1, 0, E, H, B, X, w->go, m->D.enc_wr, 1); /* skip path */
        mm(0, 1, B, E, H, w->go, m->P.enc_wr, w->gX, 1);
        for (int b = 0; b < B; b++) {
            float *de = m->D.enc_emb + (size_t)seqs[b * L + t] * E;
            for (int j = 0; j < E; j++)
                de[j] += w->gX[(size_t)b * E + j];
        }
        if (t > 0)
            mm(0, 1, B, H, G, w->gG, m->P.enc_wh, w->gh, 0);
    }
}

/* Pairwise logistic ranking loss on the predictor's logits z (RankNet,
 * Burges et al., ICML 2005): mean over the ordered pairs y_i > y_j of the
 * batch of log(1 + exp(-(z_i - z_j))). With gz non-NULL its gradient with
 * respect to z, times `scale`, is added to gz [B]. 0 when no pair is ordered. */
static double rank_loss(int B, const float *z, const float *y, float scale, float *gz)
{
    int pairs = 0;
    for (int i = 0; i < B; i++)
        for (int j = 0; j < B; j++)
            pairs += y[i] > y[j];
    if (pairs == 0)
        return 0.0;
    double sum = 0.0;
    for (int i = 0; i < B; i++)
        for (int j = 0; j < B; j++) {
            if (!(y[i] > y[j]))
                continue;
            double d = (double)z[i] - (double)z[j];
            /* softplus(-d), stable for either sign */
            sum += d > 0.0 ? log1p(exp(-d)) : -d + log1p(exp(d));
            if (gz) {
                float g = scale * (float)(-1.0 / (1.0 + exp(d))) / (float)pairs;
                gz[i] += g;
                gz[j] -= g;
            }
        }
    return sum / pairs;
}

void nas__nao_set_rank_weight(nas__nao_model *m, float weight)
{
    m->rank_weight = weight > 0.0f ? weight : 0.0f;
}

float nas__nao_loss(nas__nao_model *m, int B, const uint8_t *seqs, const float *y, float tradeoff,
                    float *pred_loss, float *rec_loss, int backward)
{
    if (B < 1 || ensure_cap(m, B) != 0)
        return NAN;
    const int H = m->d.hidden, L = m->d.len;
    nao_work *w = &m->W;
    enc_forward(m, B, seqs);
    rep_forward(m, B);
    prd_forward(m, B);
    double pl = 0.0;
    for (int b = 0; b < B; b++)
        pl += ((double)w->p[b] - y[b]) * ((double)w->p[b] - y[b]);
    pl /= B;
    const float rw = m->rank_weight;
    if (rw > 0.0f)
        pl += rw * rank_loss(B, w->zl, y, 0.0f, NULL);
    double rl = dec_forward(m, B, seqs, NULL) / ((double)B * L);
    if (pred_loss)
        *pred_loss = (float)pl;
    if (rec_loss)
        *rec_loss = (float)rl;
    if (backward) {
        memset(w->gS, 0, (size_t)B * L * H * sizeof(float));
        memset(w->gr, 0, (size_t)B * H * sizeof(float));
        dec_backward(m, B, seqs, (1.0f - tradeoff) / ((float)B * L));
        for (int b = 0; b < B; b++)
            w->gp[b] = tradeoff * 2.0f * (w->p[b] - y[b]) / (float)B;
        memset(w->gzl, 0, (size_t)B * sizeof(float));
        if (rw > 0.0f)
            (void)rank_loss(B, w->zl, y, tradeoff * rw, w->gzl);
        prd_backward(m, B, 1);
        rep_backward(m, B);
        enc_backward(m, B, seqs);
    }
    return (float)(tradeoff * pl + (1.0 - tradeoff) * rl);
}

void nas__nao_adam_step(nas__nao_model *m, float lr, float wd, float clip)
{
    const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    float scale = 1.0f;
    if (clip > 0.0f) {
        double ss = 0.0;
        for (size_t i = 0; i < m->np; i++)
            ss += (double)m->g[i] * m->g[i];
        double n = sqrt(ss);
        if (n > clip)
            scale = (float)(clip / n);
    }
    m->adam_t++;
    float c1 = 1.0f - powf(b1, (float)m->adam_t), c2 = 1.0f - powf(b2, (float)m->adam_t);
    for (size_t i = 0; i < m->np; i++) {
        float g = m->g[i] * scale + wd * m->w[i];
        m->am[i] = b1 * m->am[i] + (1.0f - b1) * g;
        m->av[i] = b2 * m->av[i] + (1.0f - b2) * g * g;
        m->w[i] -= lr * (m->am[i] / c1) / (sqrtf(m->av[i] / c2) + eps);
    }
}

float nas__nao_fit(nas__nao_model *m, int N, const uint8_t *seqs, const float *y, int epochs,
                   int batch, int per_epoch, float lr, float tradeoff, nas_rng *rng)
{
    const int L = m->d.len;
    if (N < 1 || batch < 1)
        return NAN;
    if (batch > N)
        batch = N;
    int used = per_epoch > 0 && per_epoch < N ? per_epoch : N;
    if (N > m->perm_n) {
        uint32_t *p = realloc(m->perm, (size_t)N * sizeof *p);
        if (!p)
            return NAN;
        m->perm = p;
        m->perm_n = N;
    }
    uint8_t *bs = malloc((size_t)batch * L);
    float *by = malloc((size_t)batch * sizeof(float));
    if (!bs || !by) {
        free(bs);
        free(by);
        return NAN;
    }
    double last = 0.0;
    for (int e = 0; e < epochs; e++) {
        for (int i = 0; i < N; i++)
            m->perm[i] = (uint32_t)i;
        nas_rng_shuffle(rng, m->perm, (size_t)N);
        double sum = 0.0;
        for (int s = 0; s < used; s += batch) {
            int nb = used - s < batch ? used - s : batch;
            for (int b = 0; b < nb; b++) {
                memcpy(bs + (size_t)b * L, seqs + (size_t)m->perm[s + b] * L, (size_t)L);
                by[b] = y[m->perm[s + b]];
            }
            nas__nao_zero_grad(m);
            float l = nas__nao_loss(m, nb, bs, by, tradeoff, NULL, NULL, 1);
            if (isnan(l)) {
                free(bs);
                free(by);
                return NAN;
            }
            sum += (double)l * nb;
            nas__nao_adam_step(m, lr, 1e-4f, 5.0f);
        }
        last = sum / used;
    }
    free(bs);
    free(by);
    return (float)last;
}

int nas__nao_fit_skip(int N, int epochs, int batch, nas_rng *rng)
{
    if (N < 1 || batch < 1) /* nas__nao_fit draws nothing then */
        return 0;
    uint32_t *perm = malloc((size_t)N * sizeof *perm);
    if (!perm)
        return -1;
    for (int e = 0; e < epochs; e++) {
        for (int i = 0; i < N; i++)
            perm[i] = (uint32_t)i;
        nas_rng_shuffle(rng, perm, (size_t)N);
    }
    free(perm);
    return 0;
}

int nas__nao_encode(nas__nao_model *m, int B, const uint8_t *seqs, float *states, float *pred)
{
    if (B < 1 || ensure_cap(m, B) != 0)
        return -1;
    const int H = m->d.hidden, L = m->d.len;
    enc_forward(m, B, seqs);
    memcpy(states, m->W.S, (size_t)B * L * H * sizeof(float));
    if (pred) {
        rep_forward(m, B);
        prd_forward(m, B);
        memcpy(pred, m->W.p, (size_t)B * sizeof(float));
    }
    return 0;
}

float nas__nao_predict_states(nas__nao_model *m, const float *states, float *dstates)
{
    if (ensure_cap(m, 1) != 0)
        return NAN;
    const int H = m->d.hidden, L = m->d.len;
    nao_work *w = &m->W;
    memcpy(w->S, states, (size_t)L * H * sizeof(float));
    rep_forward(m, 1);
    prd_forward(m, 1);
    float p = w->p[0];
    if (dstates) {
        w->gp[0] = 1.0f;
        w->gzl[0] = 0.0f;
        memset(w->gr, 0, (size_t)H * sizeof(float));
        memset(w->gS, 0, (size_t)L * H * sizeof(float));
        prd_backward(m, 1, 0);
        rep_backward(m, 1);
        memcpy(dstates, w->gS, (size_t)L * H * sizeof(float));
    }
    return p;
}

int nas__nao_decode(nas__nao_model *m, int B, const float *states, uint8_t *out)
{
    if (B < 1 || ensure_cap(m, B) != 0)
        return -1;
    const int H = m->d.hidden, L = m->d.len;
    memcpy(m->W.S, states, (size_t)B * L * H * sizeof(float));
    rep_forward(m, B);
    dec_forward(m, B, NULL, out);
    return 0;
}

typedef struct beam_item {
    double logp;
    int parent, tok, order;
} beam_item;

static int cmp_beam(const void *a, const void *b)
{
    const beam_item *x = a, *y = b;
    if (x->logp != y->logp)
        return x->logp > y->logp ? -1 : 1;
    return x->order - y->order;
}

int nas__nao_decode_beam(nas__nao_model *m, const float *states, int width, uint8_t *out,
                         double *logp)
{
    const int L = m->d.len, V = m->d.vocab, H = m->d.hidden;
    if (width < 1 || ensure_cap(m, width) != 0)
        return -1;
    uint8_t *pre = calloc((size_t)width * L, 1), *nxt = calloc((size_t)width * L, 1);
    double *lp = calloc((size_t)width, sizeof *lp);
    beam_item *it = malloc((size_t)width * V * sizeof *it);
    if (!pre || !nxt || !lp || !it) {
        free(pre);
        free(nxt);
        free(lp);
        free(it);
        return -1;
    }
    nao_work *w = &m->W;
    int nb = 1;
    for (int t = 0; t < L; t++) {
        /* the probabilities at position t of every beam: one teacher-forced
         * pass over the prefixes (tokens after t do not influence step t) */
        for (int b = 0; b < nb; b++)
            memcpy(w->S + (size_t)b * L * H, states, (size_t)L * H * sizeof(float));
        rep_forward(m, nb);
        (void)dec_forward_steps(m, nb, pre, NULL, t + 1);
        const float *pr = w->prob + (size_t)t * nb * V;
        const uint8_t *ok = m->allowed + (size_t)t * V;
        int ni = 0;
        for (int b = 0; b < nb; b++)
            for (int v = 0; v < V; v++) {
                if (!ok[v])
                    continue;
                float q = pr[(size_t)b * V + v];
                it[ni].logp = lp[b] + log(q > 1e-30f ? (double)q : 1e-30);
                it[ni].parent = b;
                it[ni].tok = v;
                it[ni].order = ni;
                ni++;
            }
        qsort(it, (size_t)ni, sizeof *it, cmp_beam);
        int keep = ni < width ? ni : width;
        for (int k = 0; k < keep; k++) {
            memcpy(nxt + (size_t)k * L, pre + (size_t)it[k].parent * L, (size_t)L);
            nxt[(size_t)k * L + t] = (uint8_t)it[k].tok;
        }
        for (int k = 0; k < keep; k++)
            lp[k] = it[k].logp;
        uint8_t *sw = pre;
        pre = nxt;
        nxt = sw;
        nb = keep;
    }
    memcpy(out, pre, (size_t)nb * L);
    if (logp)
        memcpy(logp, lp, (size_t)nb * sizeof *logp);
    free(pre);
    free(nxt);
    free(lp);
    free(it);
    return nb;
}
