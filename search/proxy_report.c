/*
 * search/proxy_report.c - the figures and the verdict of `nas proxy-check`
 * (issue 30; every formula in docs/proxy.md): per rung the seed noise, the
 * spread between architectures, the reliability ICC(1), Spearman and
 * Kendall between seeds and against the top rung, and the cost of a trial;
 * then the verdict in plain words and the machine-readable last line.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "search/proxy_check_impl.h"

typedef struct rung_fig {
    nas_proxy_anova_stats a; /* over the architectures with every seed at this rung */
    double seed_rho, seed_tau; /* mean over seed pairs */
    double top_rho, top_tau;   /* seed means against the top rung's */
    double train_s, eval_s;    /* mean seconds: training up to this rung, its evaluation */
    int n_cost;
} rung_fig;

/* Architecture a's S scores at rung k into x[S]; 0 when one is missing. */
static int scores(const nas__pc *p, int a, int k, double *x)
{
    for (int j = 0; j < p->S; j++) {
        const nas_store_pc_row *r = &p->row[NAS__PC_INDEX(p, a, j, k)];
        if (p->state[NAS__PC_INDEX(p, a, j, k)] != NAS__PC_DONE || !isfinite(r->val_accuracy))
            return 0;
        x[j] = r->val_accuracy;
    }
    return 1;
}

/* Mean of Spearman and of Kendall over the seed pairs of table x (n x S). */
static void seed_agreement(const double *x, int n, int s, double *a, double *b, rung_fig *f)
{
    double rho = 0, tau = 0;
    int pairs = 0;
    for (int j = 0; j < s; j++)
        for (int l = j + 1; l < s; l++) {
            for (int i = 0; i < n; i++)
                a[i] = x[i * s + j], b[i] = x[i * s + l];
            rho += nas_rank_spearman(a, b, n);
            tau += nas_rank_kendall(a, b, n);
            pairs++;
        }
    f->seed_rho = pairs ? rho / pairs : NAN;
    f->seed_tau = pairs ? tau / pairs : NAN;
}

/* The cost of a trial to rung k: its training seconds to k (the stored
 * train_seconds count from the run's start), plus the evaluation at k,
 * averaged over the (architecture, seed) runs that got there. */
static void cost(const nas__pc *p, int k, rung_fig *f)
{
    double tr = 0, ev = 0;
    int n = 0;
    for (int a = 0; a < p->K; a++)
        for (int j = 0; j < p->S; j++) {
            const nas_store_pc_row *r = &p->row[NAS__PC_INDEX(p, a, j, k)];
            if (p->state[NAS__PC_INDEX(p, a, j, k)] != NAS__PC_DONE ||
                !isfinite(r->train_seconds) || !isfinite(r->eval_seconds))
                continue;
            tr += r->train_seconds;
            ev += r->eval_seconds;
            n++;
        }
    f->n_cost = n;
    f->train_s = n ? tr / n : NAN;
    f->eval_s = n ? ev / n : NAN;
}

/* Rung k's figures into *f (scratch: x K S, m K, mt K, a, b K). */
static void rung_figures(const nas__pc *p, int k, double *x, double *m, double *mt, double *a,
                         double *b, rung_fig *f)
{
    int n = 0, nt = 0, top = p->R - 1;
    double *xt = x + (size_t)p->K * p->S; /* the top rung's scores of one architecture */
    for (int i = 0; i < p->K; i++)
        if (scores(p, i, k, x + (size_t)n * p->S))
            n++;
    nas_proxy_anova(x, n, p->S, &f->a);
    seed_agreement(x, n, p->S, a, b, f);
    for (int i = 0; i < p->K; i++) {
        if (!scores(p, i, k, a) || !scores(p, i, top, xt))
            continue;
        double s1 = 0, s2 = 0;
        for (int j = 0; j < p->S; j++)
            s1 += a[j], s2 += xt[j];
        m[nt] = s1 / p->S;
        mt[nt++] = s2 / p->S;
    }
    f->top_rho = nas_rank_spearman(m, mt, nt);
    f->top_tau = nas_rank_kendall(m, mt, nt);
    cost(p, k, f);
}

/* The low rung of the last line: the rung of a third of the top budget,
 * else the lowest above the first, else the first below the top; -1 with
 * one rung. */
static int low_rung(const nas__pc *p)
{
    int top = p->R - 1;
    for (int k = 0; k < top; k++)
        if (p->budget[k] * 3 == p->budget[top])
            return k;
    return top >= 2 ? 1 : top - 1;
}

static void print_table(const nas__pc *p, const rung_fig *f)
{
    FILE *o = p->out;
    int nb = p->cfg->proxy.bn_recalibrate;
    fprintf(o, "proxy check '%s': %d architectures x %d seeds, %d validation images, %s%.0d%s\n",
            p->name, p->K, p->S, p->valid, nb > 0 ? "BN recalibration over " : "no BN recalibration",
            nb, nb > 0 ? " batches" : "");
    fprintf(o, "rung %10s  archs  mean_acc  seed_sd  between_sd  reliab.  seed_rho  seed_tau"
            "  top_rho  top_tau  train_s  eval_s  cost_s\n", p->images ? "images" : "epochs");
    for (int k = 0; k < p->R; k++)
        fprintf(o, "%4d %10lld  %5d  %8.4f  %7.4f  %10.4f  %7.3f  %8.3f  %8.3f  %7.3f  %7.3f"
                "  %7.2f  %6.2f  %6.2f\n", k, (long long)p->budget[k], f[k].a.n, f[k].a.mean,
                f[k].a.sd_within, f[k].a.sd_between, f[k].a.icc, f[k].seed_rho, f[k].seed_tau,
                f[k].top_rho, f[k].top_tau, f[k].train_s, f[k].eval_s,
                f[k].train_s + f[k].eval_s);
}

/* For multi-fidelity: low rungs that score far below the top (under
 * two thirds of its mean accuracy) and do not rank like it. Without BN
 * recalibration, stale statistics are the first suspect; with it, the
 * rung's budget is too short to rank. */
static void verdict_rungs(const nas__pc *p, const rung_fig *f)
{
    int top = p->R - 1, nb = p->cfg->proxy.bn_recalibrate;
    for (int k = 0; k < top; k++) {
        if (f[k].top_tau >= 0.5 || f[k].a.mean >= f[top].a.mean * 2 / 3)
            continue;
        if (nb > 0)
            fprintf(p->out, "  knob for the rungs: rung %d scores %.3f against the top's %.3f "
                    "and does not rank like it, with BN recalibration over %d batches: its "
                    "budget is too short to rank; start the ladder higher (a larger "
                    "search.fidelity.min).\n", k, f[k].a.mean, f[top].a.mean, nb);
        else
            fprintf(p->out, "  knob for the rungs: rung %d scores %.3f against the top's %.3f "
                    "and does not rank like it; after a short run at a high learning rate the "
                    "batch-norm statistics lag the weights: recalibrate them before evaluating "
                    "(proxy.bn_recalibrate), or start the ladder higher.\n", k, f[k].a.mean,
                    f[top].a.mean);
        return;
    }
}

/* The verdict's knob: recalibration (a rung at chance level, when it is
 * off; with it on, that rung's budget), validation size (binomial SE
 * against the between-architecture SD), or budget. */
static void verdict_knob(const nas__pc *p, const rung_fig *f, double rel, double tau)
{
    FILE *o = p->out;
    int nb = p->cfg->proxy.bn_recalibrate;
    const rung_fig *t = &f[p->R - 1];
    double c = p->classes >= 2 ? 1.0 / p->classes : 0.1, pm = t->a.mean;
    double chance = c + 3 * sqrt(c * (1 - c) / (p->valid > 0 ? p->valid : 1));
    double se = sqrt(pm * (1 - pm) / (p->valid > 0 ? p->valid : 1)), sdb = t->a.sd_between;
    fprintf(o, "  validation: binomial SE sqrt(p(1-p)/n_valid) = %.4f (p = %.3f, n_valid = %d) "
            "against a between-architecture SD of %.4f and a seed SD of %.4f.\n", se, pm,
            p->valid, sdb, t->a.sd_within);
    for (int k = 0; k < p->R; k++) {
        if (!isfinite(f[k].a.mean) || f[k].a.mean > chance)
            continue;
        if (nb > 0) /* the statistics are fresh: the network has not learned yet */
            fprintf(o, "  knob: budget first: rung %d scores at chance level (mean %.3f <= "
                    "%.3f) even with BN recalibration over %d batches: %s.\n", k, f[k].a.mean,
                    chance, nb, k < p->R - 1 ? "it trains too little to learn; start the ladder "
                    "higher (a larger search.fidelity.min)" : "the proxy trains too little to "
                    "learn; train on more images or epochs");
        else
            fprintf(o, "  knob: recalibration first: rung %d scores at chance level (mean %.3f "
                    "<= %.3f); batch-norm statistics lag the weights after a short run: "
                    "recompute them over a few training batches before evaluating "
                    "(proxy.bn_recalibrate).\n", k, f[k].a.mean, chance);
        return;
    }
    if (isfinite(se) && isfinite(sdb) && se >= 0.5 * sdb) {
        double want = sdb > 0 ? ceil(16 * pm * (1 - pm) / (sdb * sdb)) : NAN;
        fprintf(o, "  knob: validation size: the SE is %.0f%% of the between-architecture SD; "
                "an SE of a quarter of it takes data.valid >= %.0f images (16 p(1-p) / SD^2).\n",
                100 * se / sdb, want);
    } else if (rel < 0.8 || tau < 0.6) {
        fprintf(o, "  knob: budget: the validation split is large enough (SE %.0f%% of the "
                "between SD); the noise is the training's: a longer proxy (more training "
                "images or epochs)%s ranks better.\n",
                isfinite(sdb) && sdb > 0 ? 100 * se / sdb : NAN,
                nb > 0 ? "" : " or a recalibrated one (proxy.bn_recalibrate)");
    } else {
        fprintf(o, "  knob: none needed for ranking at the top rung.\n");
    }
    verdict_rungs(p, f);
}

static void verdict(const nas__pc *p, const rung_fig *f)
{
    FILE *o = p->out;
    int top = p->R - 1;
    double rel = f[top].a.icc, tau = f[top].seed_tau;
    fprintf(o, "verdict:\n");
    if (rel >= 0.8 && tau >= 0.6)
        fprintf(o, "  the proxy ranks: %.0f%% of a trial's score variance is the architecture's "
                "(reliability %.2f), two seeds agree with Kendall tau %.2f.\n", 100 * rel, rel,
                tau);
    else if (rel >= 0.5)
        fprintf(o, "  the proxy ranks coarsely: reliability %.2f, seed tau %.2f; architectures "
                "closer than about %.1f points are ordered by chance.\n", rel, tau,
                200 * f[top].a.sd_within);
    else
        fprintf(o, "  the proxy does not rank: reliability %.2f, seed tau %.2f; most of a "
                "trial's score is noise, and a search on it is close to random search.\n",
                rel, tau);
    int from = -1;
    for (int k = 0; k < top && from < 0; k++)
        if (f[k].top_tau >= 0.5)
            from = k;
    if (top == 0)
        fprintf(o, "  multi-fidelity: one rung only, nothing to promote from.\n");
    else if (from >= 0)
        fprintf(o, "  multi-fidelity: promotion is informative from rung %d (%lld %s, tau %.2f "
                "against the top rung), at %.0f%% of a full trial's cost.\n", from,
                (long long)p->budget[from], p->images ? "images" : "epochs", f[from].top_tau,
                100 * (f[from].train_s + f[from].eval_s) / (f[top].train_s + f[top].eval_s));
    else
        fprintf(o, "  multi-fidelity: no rung below the top ranks like it (tau < 0.5): promotion "
                "would promote by noise; search at the top rung.\n");
    verdict_knob(p, f, rel, tau);
}

int nas__pc_report(const nas__pc *p, nas_error *err)
{
    size_t k = (size_t)p->K;
    double *w = malloc((k * p->S * 2 + 4 * k + 2 * (size_t)p->S) * sizeof *w);
    rung_fig *f = calloc((size_t)p->R, sizeof *f);
    if (!w || !f) {
        free(w);
        free(f);
        return nas_error_set(err, NAS_ENOMEM, "out of memory computing the figures");
    }
    double *x = w, *m = x + 2 * k * p->S, *mt = m + k, *a = mt + k, *b = a + k + p->S;
    for (int r = 0; r < p->R; r++)
        rung_figures(p, r, x, m, mt, a, b, &f[r]);
    print_table(p, f);
    verdict(p, f);
    int top = p->R - 1, lo = low_rung(p);
    fprintf(p->out, "proxy_check reliability=%.3f seed_tau=%.3f low_rung_tau=%.3f cost_s=%.2f\n",
            f[top].a.icc, f[top].seed_tau, lo >= 0 ? f[lo].top_tau : NAN,
            f[top].train_s + f[top].eval_s);
    fflush(p->out);
    free(w);
    free(f);
    return NAS_OK;
}
