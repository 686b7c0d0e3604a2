/*
 * evaluator/zerocost.c - zero-cost proxies on nas's own net (nas/zerocost.h;
 * formulas and sources there and in docs/zero-cost.md).
 *
 * Every proxy is one forward (and backward) of trainer/net.c in train mode
 * on the net's backend; the per-weight products, norms and the NASWOT
 * kernel are summed in double on the host.
 */
#include <math.h>   /* fabs, sqrt, log, isfinite */
#include <stdint.h>
#include <stdlib.h> /* malloc, calloc, free */
#include <string.h>
#include "nas/evaluator.h" /* nas_count_net */
#include "nas/zerocost.h"
#include "trainer/net_impl.h"

static const char *const names[NAS_ZC_COUNT] = {"synflow",   "naswot", "snip", "grad_norm",
                                                "jacob_cov", "params", "macs"};

const char *nas_zc_name(nas_zc_proxy p)
{
    return (int)p >= 0 && p < NAS_ZC_COUNT ? names[p] : NULL;
}

int nas_zc_from_name(const char *name, nas_zc_proxy *out, nas_error *err)
{
    for (int i = 0; i < NAS_ZC_COUNT && name; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = (nas_zc_proxy)i;
            return NAS_OK;
        }
    return nas_error_set(err, NAS_EINVAL,
                         "unknown zero-cost proxy '%s' (expected synflow, naswot, snip, grad_norm, "
                         "jacob_cov, params or macs)",
                         name ? name : "(null)");
}

int nas_zc_needs_data(nas_zc_proxy p)
{
    return p == NAS_ZC_NASWOT || p == NAS_ZC_SNIP || p == NAS_ZC_GRAD_NORM || p == NAS_ZC_JACOB_COV;
}

/* The net's conv and linear weights with their gradients on the host. */
typedef struct wlist {
    int n;
    nas_net_param *p; /* every parameter (nas_net_params) */
    int np;
    int *idx; /* weight layers' indices into p */
} wlist;

static void wlist_free(wlist *w)
{
    free(w->p);
    free(w->idx);
}

static int wlist_init(nas_net *net, wlist *w)
{
    memset(w, 0, sizeof *w);
    w->np = nas_net_params(net, NULL, 0);
    w->n = nas__net_weight_params(net, NULL, 0);
    w->p = calloc((size_t)w->np + 1, sizeof *w->p);
    w->idx = calloc((size_t)w->n + 1, sizeof *w->idx);
    if (!w->p || !w->idx) {
        wlist_free(w);
        return NAS_ENOMEM;
    }
    nas_net_params(net, w->p, w->np);
    nas__net_weight_params(net, w->idx, w->n);
    return NAS_OK;
}

/* Per weight layer: sum of |theta * g| (snip, synflow) or ||g||_2 (grad_norm). */
static int sum_weights(const wlist *w, int norm, double *out)
{
    double total = 0;
    int rc = NAS_OK;
    for (int i = 0; i < w->n && !rc; i++) {
        const nas_net_param *p = &w->p[w->idx[i]];
        size_t c = p->value->count;
        float *v = malloc(c * sizeof *v), *g = malloc(c * sizeof *g);
        if (!v || !g)
            rc = NAS_ENOMEM;
        if (!rc)
            rc = nas_tensor_download(p->value, v, c);
        if (!rc)
            rc = nas_tensor_download(p->grad, g, c);
        double layer = 0;
        for (size_t k = 0; k < c && !rc; k++)
            layer += norm ? (double)g[k] * g[k] : fabs((double)v[k] * g[k]);
        total += norm ? sqrt(layer) : layer;
        free(v);
        free(g);
    }
    *out = total;
    return rc;
}

/* Replace every parameter by its absolute value, keeping the originals in
 * saved[i] (restore: abs_params(w, saved, 1)). */
static int abs_params(const wlist *w, float **saved, int restore)
{
    int rc = NAS_OK;
    for (int i = 0; i < w->np && !rc; i++) {
        nas_tensor *t = w->p[i].value;
        if (restore) {
            rc = saved[i] ? nas_tensor_upload(t, saved[i], t->count) : NAS_OK;
            continue;
        }
        float *a = malloc(t->count * sizeof *a);
        saved[i] = malloc(t->count * sizeof *saved[i]);
        if (!a || !saved[i]) {
            free(a);
            return NAS_ENOMEM;
        }
        rc = nas_tensor_download(t, saved[i], t->count);
        for (size_t k = 0; k < t->count && !rc; k++)
            a[k] = fabsf(saved[i][k]);
        if (!rc)
            rc = nas_tensor_upload(t, a, t->count);
        free(a);
    }
    return rc;
}

/* Forward of the all-`s` image; *r = sum of the logits (double). */
static int forward_sum(nas_net *net, const nas_tensor *x, double *r)
{
    const nas_tensor *logits = NULL;
    int rc = nas_net_forward(net, x, 1, &logits);
    float *h = rc ? NULL : malloc(logits->count * sizeof *h);
    if (!rc && !h)
        rc = NAS_ENOMEM;
    if (!rc)
        rc = nas_tensor_download(logits, h, logits->count);
    *r = 0;
    for (size_t k = 0; !rc && k < logits->count; k++)
        *r += h[k];
    free(h);
    return rc;
}

/* Synflow in fp32 without overflow. The backward is linear in the seed
 * dR/dlogits = t, so a seed t = 2^-64 scales every gradient exactly (a power
 * of two) and the score is divided by t again. A net homogeneous in its
 * input (nas__net_homogeneous: NAS-Bench-201 cells) also takes the all-s
 * input with s = 2^-64 when the all-ones forward leaves fp32's range (R >
 * 1e30); its score is then divided by s. Others are refused past fp32. */
static int synflow_run(nas_net *net, nas_tensor *x, const wlist *w, double *score, nas_error *err)
{
    double r, s = 1, t = 1;
    int rc = nas__tensor_fill(x, 1.0f);
    if (!rc)
        rc = forward_sum(net, x, &r);
    if (!rc && !(fabs(r) < 1e30) && nas__net_homogeneous(net)) {
        s = ldexp(1, -64);
        rc = nas__tensor_fill(x, (float)s);
        if (!rc)
            rc = forward_sum(net, x, &r);
    }
    if (rc)
        return nas_error_set(err, rc, "synflow: forward: %s", nas_strerror(rc));
    if (!isfinite(r))
        return nas_error_set(err, NAS_ENAN, "synflow: the all-ones forward overflowed fp32");
    if (fabs(r) / s > 1e30)
        t = ldexp(1, -64);
    rc = nas__net_backward_seed(net, (float)t);
    if (!rc)
        rc = sum_weights(w, 0, score);
    if (rc)
        return nas_error_set(err, rc, "synflow: backward: %s", nas_strerror(rc));
    *score /= s * t;
    if (!isfinite(*score))
        return nas_error_set(err, NAS_ENAN, "synflow: the gradients overflowed fp32");
    return NAS_OK;
}

static int synflow(nas_net *net, double *score, nas_error *err)
{
    const nas_net_desc *d = nas__net_desc(net);
    wlist w;
    if (wlist_init(net, &w))
        return nas_error_set(err, NAS_ENOMEM, "synflow: out of memory");
    float **saved = calloc((size_t)w.np + 1, sizeof *saved);
    nas_tensor *x = NULL;
    int rc = saved ? NAS_OK : NAS_ENOMEM;
    if (!rc)
        rc = nas_tensor_create(nas__net_backend(net), 1, d->in_c, d->in_h, d->in_w, &x);
    if (!rc)
        rc = abs_params(&w, saved, 0);
    nas__net_set_proxy_mode(net, 1, 1);
    if (rc)
        nas_error_set(err, rc, "synflow: %s", nas_strerror(rc));
    else
        rc = synflow_run(net, x, &w, score, err);
    nas__net_set_proxy_mode(net, 0, 0);
    if (saved) {
        int r2 = abs_params(&w, saved, 1);
        if (r2 && !rc)
            rc = nas_error_set(err, r2, "synflow: restoring the weights: %s", nas_strerror(r2));
        for (int i = 0; i < w.np; i++)
            free(saved[i]);
    }
    free(saved);
    nas_tensor_destroy(x);
    wlist_free(&w);
    return rc;
}

/* snip (norm 0) and grad_norm (norm 1): one cross-entropy backward. */
static int grad_proxy(nas_net *net, const nas_tensor *x, const nas_tensor *y, int norm,
                      double *score, nas_error *err)
{
    wlist w;
    if (wlist_init(net, &w))
        return nas_error_set(err, NAS_ENOMEM, "zero-cost: out of memory");
    const nas_tensor *logits;
    nas__net_set_proxy_mode(net, 0, 1);
    int rc = nas_net_forward(net, x, 1, &logits);
    if (!rc)
        rc = nas_net_backward(net, y, NULL, NULL);
    if (!rc)
        rc = sum_weights(&w, norm, score);
    nas__net_set_proxy_mode(net, 0, 0);
    wlist_free(&w);
    if (rc)
        return nas_error_set(err, rc, "%s: %s", norm ? "grad_norm" : "snip", nas_strerror(rc));
    return NAS_OK;
}

/* log|det K| by LU with partial pivoting (K is B x B, row-major). */
static double logdet(double *k, int b)
{
    double s = 0;
    for (int c = 0; c < b; c++) {
        int piv = c;
        for (int r = c + 1; r < b; r++)
            if (fabs(k[r * b + c]) > fabs(k[piv * b + c]))
                piv = r;
        if (k[piv * b + c] == 0)
            return -INFINITY;
        if (piv != c)
            for (int j = 0; j < b; j++) {
                double t = k[c * b + j];
                k[c * b + j] = k[piv * b + j];
                k[piv * b + j] = t;
            }
        s += log(fabs(k[c * b + c]));
        for (int r = c + 1; r < b; r++) {
            double f = k[r * b + c] / k[c * b + c];
            for (int j = c; j < b; j++)
                k[r * b + j] -= f * k[c * b + j];
        }
    }
    return s;
}

/* Add one ReLU input's agreement counts to K: per image the codes x > 0
 * packed in 64-bit words, K[i][j] += units - popcount(code_i ^ code_j). */
static int naswot_add(const nas_tensor *t, int b, int mult, double *k)
{
    size_t per = t->count / (size_t)b, words = (per + 63) / 64;
    float *h = malloc(t->count * sizeof *h);
    uint64_t *code = calloc((size_t)b * words + 1, sizeof *code);
    int rc = h && code ? nas_tensor_download(t, h, t->count) : NAS_ENOMEM;
    for (int i = 0; i < b && !rc; i++)
        for (size_t u = 0; u < per; u++)
            if (h[(size_t)i * per + u] > 0)
                code[(size_t)i * words + u / 64] |= UINT64_C(1) << (u % 64);
    for (int i = 0; i < b && !rc; i++)
        for (int j = i; j < b; j++) {
            uint64_t diff = 0;
            for (size_t q = 0; q < words; q++)
                diff += (uint64_t)__builtin_popcountll(code[(size_t)i * words + q] ^
                                                       code[(size_t)j * words + q]);
            double agree = (double)mult * (double)(per - diff);
            k[i * b + j] += agree;
            if (j != i)
                k[j * b + i] += agree;
        }
    free(h);
    free(code);
    return rc;
}

static int naswot(nas_net *net, const nas_tensor *x, double *score, nas_error *err)
{
    const nas_tensor *logits;
    int b = x->n;
    nas__net_set_proxy_mode(net, 0, 1);
    int rc = nas_net_forward(net, x, 1, &logits);
    nas__net_set_proxy_mode(net, 0, 0);
    if (rc)
        return nas_error_set(err, rc, "naswot: forward: %s", nas_strerror(rc));
    int m = nas__net_relu_inputs(net, NULL, NULL, 0);
    if (m == 0)
        return nas_error_set(err, NAS_EINVAL, "naswot: the network has no ReLU");
    const nas_tensor **in = calloc((size_t)m, sizeof *in);
    int *mult = calloc((size_t)m, sizeof *mult);
    double *k = calloc((size_t)b * (size_t)b, sizeof *k);
    rc = in && mult && k ? NAS_OK : NAS_ENOMEM;
    if (!rc)
        nas__net_relu_inputs(net, in, mult, m);
    for (int i = 0; i < m && !rc; i++) /* once per ReLU module of the PyTorch net */
        rc = naswot_add(in[i], b, mult[i] > 0 ? mult[i] : 1, k);
    if (!rc)
        *score = logdet(k, b);
    free(in);
    free(mult);
    free(k);
    if (rc)
        return nas_error_set(err, rc, "naswot: %s", nas_strerror(rc));
    return NAS_OK;
}

/* LAPACK's symmetric eigenvalue solver (in the OpenBLAS nas links). */
void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
            double *work, const int *lwork, int *info);

/* jacob_cov's score of the B x P Jacobian j (Mellor et al. v1). */
static int jacob_score(const float *j, int b, size_t per, double *score)
{
    double *c = calloc((size_t)b * (size_t)b, sizeof *c), *mean = calloc((size_t)b, sizeof *mean);
    double *ev = calloc((size_t)b, sizeof *ev), *work = calloc((size_t)b * 8, sizeof *work);
    if (!c || !mean || !ev || !work) {
        free(c), free(mean), free(ev), free(work);
        return NAS_ENOMEM;
    }
    for (int i = 0; i < b; i++) {
        for (size_t u = 0; u < per; u++)
            mean[i] += j[(size_t)i * per + u];
        mean[i] /= (double)per;
    }
    for (int i = 0; i < b; i++)
        for (int k = i; k < b; k++) {
            double sum = 0;
            for (size_t u = 0; u < per; u++)
                sum += (j[(size_t)i * per + u] - mean[i]) * (j[(size_t)k * per + u] - mean[k]);
            c[i * b + k] = c[k * b + i] = sum;
        }
    for (int i = 0; i < b; i++) /* covariance -> correlation */
        for (int k = 0; k < b; k++)
            if (i != k)
                c[i * b + k] /= sqrt(c[i * b + i] * c[k * b + k]);
    for (int i = 0; i < b; i++)
        c[i * b + i] = 1;
    int n = b, lwork = b * 8, info = 0;
    dsyev_("N", "U", &n, c, &n, ev, work, &lwork, &info);
    double s = 0;
    for (int i = 0; i < b; i++)
        s -= log(ev[i] + 1e-5) + 1 / (ev[i] + 1e-5);
    *score = info == 0 ? s : NAN;
    free(c), free(mean), free(ev), free(work);
    return NAS_OK;
}

static int jacob_cov(nas_net *net, const nas_tensor *x, double *score, nas_error *err)
{
    nas_tensor *dx = NULL;
    size_t per = x->count / (size_t)x->n;
    float *h = malloc(x->count * sizeof *h);
    int rc = h ? nas_tensor_create(nas__net_backend(net), x->n, x->c, x->h, x->w, &dx) : NAS_ENOMEM;
    const nas_tensor *logits;
    nas__net_set_proxy_mode(net, 0, 1);
    nas__net_set_input_grad(net, dx);
    if (!rc)
        rc = nas_net_forward(net, x, 1, &logits);
    if (!rc)
        rc = nas__net_backward_seed(net, 1.0f);
    nas__net_set_input_grad(net, NULL);
    nas__net_set_proxy_mode(net, 0, 0);
    if (!rc)
        rc = nas_tensor_download(dx, h, x->count);
    if (!rc)
        rc = jacob_score(h, x->n, per, score);
    free(h);
    nas_tensor_destroy(dx);
    if (rc)
        return nas_error_set(err, rc, "jacob_cov: %s", nas_strerror(rc));
    if (!isfinite(*score))
        return nas_error_set(err, NAS_ENAN, "jacob_cov: the correlation matrix has no eigenvalues "
                                            "(a constant Jacobian row?)");
    return NAS_OK;
}

int nas_zc_score(nas_net *net, nas_zc_proxy p, const nas_tensor *x, const nas_tensor *y,
                 double *score, nas_error *err)
{
    if (!net || !score)
        return nas_error_set(err, NAS_EINVAL, "zero-cost: NULL argument");
    *score = NAN;
    if (nas_zc_needs_data(p) && (!x || !y))
        return nas_error_set(err, NAS_EINVAL, "%s needs a minibatch (images and labels)",
                             nas_zc_name(p));
    switch (p) {
    case NAS_ZC_SYNFLOW: return synflow(net, score, err);
    case NAS_ZC_NASWOT: return naswot(net, x, score, err);
    case NAS_ZC_SNIP: return grad_proxy(net, x, y, 0, score, err);
    case NAS_ZC_GRAD_NORM: return grad_proxy(net, x, y, 1, score, err);
    case NAS_ZC_JACOB_COV: return jacob_cov(net, x, score, err);
    case NAS_ZC_PARAMS:
    case NAS_ZC_MACS: {
        int64_t macs = 0, params = 0;
        int rc = nas_count_net(nas__net_desc(net), &macs, &params, NULL, NULL);
        if (rc)
            return nas_error_set(err, rc, "%s: counting failed", nas_zc_name(p));
        *score = (double)(p == NAS_ZC_PARAMS ? params : macs);
        return NAS_OK;
    }
    default: return nas_error_set(err, NAS_EINVAL, "zero-cost: unknown proxy %d", (int)p);
    }
}
