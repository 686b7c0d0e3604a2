/*
 * report/oneshot_section.c - issue 32: the report's section "One-shot
 * supernet" (docs/report.md, docs/one-shot.md). A one-shot search
 * (evaluator.kind = "supernet") is two experiments: NAME, whose trials are
 * subnets scored by the supernet's inherited weights and which holds the
 * supernet's training curve (table supernet_epoch), and NAME-finalists,
 * whose trials retrain the best of them stand-alone (table finalist links
 * each to its supernet trial). Either experiment's report gets the section;
 * the finalists' one (the default experiment of `nas report`) finds the
 * supernet experiment through the links.
 *
 * The section: the supernet's loss and training accuracy per epoch (one
 * chart, loss on the left axis, accuracy on the right), the finalists'
 * supernet accuracy against their stand-alone accuracy with Kendall's tau
 * (nas_rank_kendall, nas/search.h: report/ sits above search/), and a table
 * of the finalists. Other experiments get nothing, so their pages are
 * unchanged.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "nas/search.h" /* nas_rank_kendall */
#include "nas/store.h"
#include "report_impl.h" /* nas__report_axis, nas__report_html */

#define OW 480
#define OH 320
#define OL 62
#define OR 62 /* room for the curve's right axis (training accuracy) */
#define OT 44
#define OB 46

/* What the section shows. */
typedef struct oneshot {
    nas_store_sn_epoch *curve; /* the supernet's epochs */
    int n_curve;
    nas_store_finalist *fin;   /* by stand-alone trial id */
    int n_fin;
    nas_store_experiment sn, fx; /* the supernet search and its finalists experiment */
    int has_fx;
} oneshot;

static double ox(const nas__report_axis *a, double v)
{
    return OL + (v - a->lo) / (a->hi - a->lo) * (OW - OL - OR);
}
static double oy(const nas__report_axis *a, double v)
{
    return OH - OB - (v - a->lo) / (a->hi - a->lo) * (OH - OT - OB);
}

static void chart_open(FILE *f, const char *id, const char *title)
{
    fprintf(f, "<figure class=\"plot\"><svg id=\"%s\" class=\"chart\" viewBox=\"0 0 %d %d\" "
               "width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"%s\">\n<text class=\"ptitle\" "
               "x=\"%d\" y=\"18\">%s</text>\n",
            id, OW, OH, OW, OH, title, OL, title);
}

/* Frame, x ticks and grid, y ticks of `yl` on the left (with grid lines)
 * and, when yr is not NULL, of `yr` on the right; the axis labels. */
static void chart_axes(FILE *f, const nas__report_axis *x, const nas__report_axis *yl,
                       const nas__report_axis *yr, const char *xlabel, const char *ylabel,
                       const char *yrlabel)
{
    fprintf(f, "<g class=\"axes\">\n<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%d\" "
               "height=\"%d\"/>\n", OL, OT, OW - OL - OR, OH - OT - OB);
    int nx = (int)floor((x->hi - x->lo) / x->step + 0.5);
    for (int i = 0; i <= nx; i++) {
        double v = x->lo + i * x->step, px = ox(x, v);
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/><text "
                   "class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.*f</text>\n",
                px, OT, px, OH - OB, px, OH - OB + 16, x->decimals, v);
    }
    int ny = (int)floor((yl->hi - yl->lo) / yl->step + 0.5);
    for (int i = 0; i <= ny; i++) {
        double v = yl->lo + i * yl->step, py = oy(yl, v);
        fprintf(f, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/><text "
                   "class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n",
                OL, py, OW - OR, py, OL - 6, py + 4, yl->decimals, v);
    }
    int nr = yr ? (int)floor((yr->hi - yr->lo) / yr->step + 0.5) : -1;
    for (int i = 0; i <= nr; i++) {
        double v = yr->lo + i * yr->step;
        fprintf(f, "<text class=\"tick\" x=\"%d\" y=\"%.1f\">%.*f</text>\n", OW - OR + 6,
                oy(yr, v) + 4, yr->decimals, v);
    }
    fprintf(f, "<text class=\"label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text><text "
               "class=\"label\" transform=\"translate(14 %d) rotate(-90)\" text-anchor=\"middle\">"
               "%s</text>\n",
            (OW + OL - OR) / 2, OH - 8, xlabel, (OH + OT - OB) / 2, ylabel);
    if (yr)
        fprintf(f, "<text class=\"label\" transform=\"translate(%d %d) rotate(90)\" "
                   "text-anchor=\"middle\">%s</text>\n",
                OW - 12, (OH + OT - OB) / 2, yrlabel);
    fputs("</g>\n", f);
}

/* One series of the curve: a line through every epoch and a dot per epoch
 * (class "sn-epoch CLS", data-epoch N). `acc` 0: loss, 1: accuracy. */
static void curve_series(FILE *f, const oneshot *o, const nas__report_axis *x,
                         const nas__report_axis *y, int acc, const char *cls)
{
    fprintf(f, "<path class=\"%s\" d=\"", cls);
    for (int i = 0; i < o->n_curve; i++)
        fprintf(f, "%s%.1f %.1f", i ? "L" : "M", ox(x, o->curve[i].epoch),
                oy(y, acc ? o->curve[i].accuracy : o->curve[i].loss));
    fputs("\"/>\n", f);
    for (int i = 0; i < o->n_curve; i++) {
        const nas_store_sn_epoch *e = &o->curve[i];
        fprintf(f, "<circle class=\"sn-epoch %s\" data-epoch=\"%d\" cx=\"%.1f\" cy=\"%.1f\" "
                   "r=\"3\"><title>epoch %d: loss %.4f, training accuracy %.4f, %.1f s</title>"
                   "</circle>\n",
                cls, e->epoch, ox(x, e->epoch), oy(y, acc ? e->accuracy : e->loss), e->epoch,
                e->loss, e->accuracy, e->seconds);
    }
}

/* The supernet's training curve: loss (left axis) and the training
 * accuracy of the sampled paths (right axis) against the epoch. */
static void plot_curve(FILE *f, const oneshot *o)
{
    double llo = INFINITY, lhi = -INFINITY, alo = INFINITY, ahi = -INFINITY;
    int last = 1;
    for (int i = 0; i < o->n_curve; i++) {
        llo = fmin(llo, o->curve[i].loss);
        lhi = fmax(lhi, o->curve[i].loss);
        alo = fmin(alo, o->curve[i].accuracy);
        ahi = fmax(ahi, o->curve[i].accuracy);
        last = o->curve[i].epoch > last ? o->curve[i].epoch : last;
    }
    nas__report_axis x, yl, yr;
    nas__report_axis_fit(&x, 1, last, last - 1 < 1 ? 1 : last - 1 < 6 ? last - 1 : 6);
    if (x.step < 1) /* whole epochs */
        nas__report_axis_fit(&x, 1, last > 1 ? last : 2, 1);
    nas__report_axis_fit(&yl, llo, lhi, 4);
    nas__report_axis_fit(&yr, alo, ahi, 4);
    chart_open(f, "plot-supernet-curve", "Supernet training");
    chart_axes(f, &x, &yl, &yr, "epoch", "training loss", "training accuracy");
    curve_series(f, o, &x, &yl, 0, "sn-loss");
    curve_series(f, o, &x, &yr, 1, "sn-acc");
    fprintf(f, "<g class=\"legend\"><circle class=\"sn-loss\" cx=\"%d\" cy=\"%d\" r=\"4\"/><text "
               "x=\"%d\" y=\"%d\">loss</text><circle class=\"sn-acc\" cx=\"%d\" cy=\"%d\" r=\"4\"/>"
               "<text x=\"%d\" y=\"%d\">training accuracy</text></g>\n",
            OL + 6, OT - 12, OL + 14, OT - 8, OL + 66, OT - 12, OL + 74, OT - 8);
    fputs("</svg></figure>\n", f);
}

/* The finalists with both accuracies, as two arrays (malloc'd together);
 * *m of them. NULL: out of memory. */
static double *paired(const oneshot *o, int *m)
{
    double *v = malloc(2 * (size_t)(o->n_fin ? o->n_fin : 1) * sizeof *v);
    *m = 0;
    for (int i = 0; v && i < o->n_fin; i++)
        if (isfinite(o->fin[i].supernet_accuracy) && isfinite(o->fin[i].standalone_accuracy)) {
            v[*m] = o->fin[i].supernet_accuracy;
            v[o->n_fin + (*m)++] = o->fin[i].standalone_accuracy;
        }
    return v;
}

/* Supernet accuracy (x) against stand-alone accuracy (y), a dot per
 * finalist retrained (class "finalist", data-trial its stand-alone trial);
 * *tau gets Kendall's tau over them (NaN: fewer than 2, or constant). */
static int plot_scatter(FILE *f, const oneshot *o, double *tau, int *m)
{
    double *v = paired(o, m);
    if (!v)
        return NAS_ENOMEM;
    *tau = nas_rank_kendall(v, v + o->n_fin, *m);
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (int i = 0; i < *m; i++) {
        xlo = fmin(xlo, v[i]);
        xhi = fmax(xhi, v[i]);
        ylo = fmin(ylo, v[o->n_fin + i]);
        yhi = fmax(yhi, v[o->n_fin + i]);
    }
    free(v);
    double px = (xhi - xlo) * 0.05, py = (yhi - ylo) * 0.05; /* no dot on the frame */
    nas__report_axis x, y;
    nas__report_axis_fit(&x, xlo - px, xhi + px, 5);
    nas__report_axis_fit(&y, ylo - py, yhi + py, 5);
    chart_open(f, "plot-supernet-scatter", "Supernet against stand-alone accuracy");
    chart_axes(f, &x, &y, NULL, "validation accuracy by inherited supernet weights",
               "validation accuracy retrained stand-alone", NULL);
    for (int i = 0; i < o->n_fin; i++) {
        const nas_store_finalist *g = &o->fin[i];
        if (!isfinite(g->supernet_accuracy) || !isfinite(g->standalone_accuracy))
            continue;
        fprintf(f, "<circle class=\"trial feasible finalist\" data-trial=\"%lld\" cx=\"%.2f\" "
                   "cy=\"%.2f\" r=\"4\"><title>trial %lld (from supernet trial %lld)\nsupernet "
                   "%.4f, stand-alone %.4f\n",
                (long long)g->trial_id, ox(&x, g->supernet_accuracy),
                oy(&y, g->standalone_accuracy), (long long)g->trial_id,
                (long long)g->supernet_trial_id, g->supernet_accuracy, g->standalone_accuracy);
        nas__report_html(f, g->genotype);
        fputs("</title></circle>\n", f);
    }
    if (isfinite(*tau))
        fprintf(f, "<text class=\"label\" x=\"%d\" y=\"%d\" text-anchor=\"end\">Kendall's tau "
                   "%.3f (%d finalists)</text>\n", OW - OR, OT - 8, *tau, *m);
    else
        fprintf(f, "<text class=\"empty\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                (OW + OL - OR) / 2, (OH + OT - OB) / 2,
                *m < 2 ? "fewer than 2 finalists retrained" : "no ranking: equal accuracies");
    fputs("</svg></figure>\n", f);
    return NAS_OK;
}

/* Rank (1 = best) of value v among the finite `key` values of the finalists. */
static int rank_of(const oneshot *o, double v, int standalone)
{
    int r = 1;
    for (int i = 0; i < o->n_fin; i++) {
        double w = standalone ? o->fin[i].standalone_accuracy : o->fin[i].supernet_accuracy;
        r += isfinite(w) && w > v;
    }
    return r;
}

/* The finalists as a table: both trials, both accuracies and their ranks. */
static void finalist_table(FILE *f, const oneshot *o)
{
    fputs("<table id=\"finalists\"><thead><tr><th>stand-alone trial</th><th>supernet trial"
          "</th><th>supernet accuracy</th><th>rank</th><th>stand-alone accuracy</th><th>rank"
          "</th><th>genotype</th></tr></thead><tbody>\n", f);
    for (int i = 0; i < o->n_fin; i++) {
        const nas_store_finalist *g = &o->fin[i];
        fprintf(f, "<tr data-trial=\"%lld\"><td class=\"num\">%lld</td><td class=\"num\">%lld"
                   "</td>", (long long)g->trial_id, (long long)g->trial_id,
                (long long)g->supernet_trial_id);
        if (isfinite(g->supernet_accuracy))
            fprintf(f, "<td class=\"num\">%.4f</td><td class=\"num\">%d</td>",
                    g->supernet_accuracy, rank_of(o, g->supernet_accuracy, 0));
        else
            fputs("<td class=\"num\">-</td><td class=\"num\">-</td>", f);
        if (isfinite(g->standalone_accuracy))
            fprintf(f, "<td class=\"num\">%.4f</td><td class=\"num\">%d</td>",
                    g->standalone_accuracy, rank_of(o, g->standalone_accuracy, 1));
        else
            fprintf(f, "<td class=\"num\">%s</td><td class=\"num\">-</td>",
                    g->done ? "-" : "not yet");
        fputs("<td><code>", f);
        nas__report_html(f, g->genotype);
        fputs("</code></td></tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
}

/* The section's opening paragraph: which experiment is which. */
static void intro(FILE *f, const oneshot *o)
{
    fputs("<section id=\"oneshot\"><h2>One-shot supernet</h2>\n<p>Experiment '", f);
    nas__report_html(f, o->sn.name);
    fprintf(f, "' (id %lld) trained one weight-sharing supernet", (long long)o->sn.id);
    if (o->n_curve > 0)
        fprintf(f, " for %d epoch%s", o->curve[o->n_curve - 1].epoch,
                o->curve[o->n_curve - 1].epoch == 1 ? "" : "s");
    fprintf(f, " and scored %d subnets by its inherited weights, without training them (its "
               "trials, device <code>supernet</code>)", o->sn.n_done);
    if (o->has_fx) {
        fprintf(f, "; its best %d were retrained stand-alone with the proxy recipe as experiment "
                   "'", o->n_fin);
        nas__report_html(f, o->fx.name);
        fprintf(f, "' (id %lld)", (long long)o->fx.id);
    }
    fputs(".</p>\n<div class=\"plots\">\n", f);
}

/* The finalists part: scatter, tau, how to read them, table. */
static int finalists_part(FILE *f, const oneshot *o)
{
    double tau = NAN;
    int m = 0;
    if (plot_scatter(f, o, &tau, &m) != NAS_OK)
        return NAS_ENOMEM;
    fputs("</div>\n<p id=\"supernet-tau\">", f);
    if (isfinite(tau))
        fprintf(f, "Kendall's tau between supernet and stand-alone accuracy over the %d "
                   "retrained finalists: <strong>%.3f</strong>.", m, tau);
    else
        fprintf(f, "Kendall's tau: undefined (%d finalist%s with both accuracies%s).", m,
                m == 1 ? "" : "s", m < 2 ? "; it needs two" : ", and one of them is constant");
    fputs("</p>\n<p>How to read it: each dot is a finalist, at its accuracy by the supernet's "
          "shared weights (x) and after training it alone (y). Only the order matters: "
          "inherited weights usually give lower accuracies than training (compare the axes), "
          "and what the search relied on is that a subnet the supernet ranks higher also "
          "trains better, i.e. that the dots rise from left to right. Kendall's tau is "
          "(pairs in the same order on both axes &minus; pairs in opposite order) / pairs: 1 "
          "the supernet ordered the finalists as training did, 0 no relation, &minus;1 the "
          "reverse. The finalists are the supernet's best, so this is its ranking where it "
          "matters most and over a narrow range; with few of them tau is coarse (with 3 it "
          "can only be &plusmn;1/3 or &plusmn;1).</p>\n",
          f);
    finalist_table(f, o);
    return NAS_OK;
}

/* Read the curve, the finalists and both experiments of exp_id's one-shot
 * search into *o; o->n_curve == o->n_fin == 0 when it is none. */
static int load(nas_store *st, int64_t exp_id, oneshot *o, nas_error *err)
{
    int rc = nas_store_finalist_list(st, exp_id, &o->fin, &o->n_fin, err);
    if (rc != NAS_OK)
        return rc;
    int64_t sn = o->n_fin > 0 ? o->fin[0].supernet_experiment_id : exp_id;
    if ((rc = nas_store_supernet_curve(st, sn, &o->curve, &o->n_curve, err)) != NAS_OK ||
        (o->n_curve == 0 && o->n_fin == 0))
        return rc;
    if ((rc = nas_store_experiment_get(st, sn, &o->sn, err)) != NAS_OK)
        return rc;
    o->has_fx = o->n_fin > 0;
    return o->has_fx ? nas_store_experiment_get(st, o->fin[0].experiment_id, &o->fx, err)
                     : NAS_OK;
}

int nas__report_oneshot(FILE *f, nas_store *st, int64_t exp_id, nas_error *err)
{
    oneshot o = {0};
    int rc = load(st, exp_id, &o, err);
    if (rc != NAS_OK || (o.n_curve == 0 && o.n_fin == 0))
        goto done;
    intro(f, &o);
    if (o.n_curve > 0)
        plot_curve(f, &o);
    if (o.n_fin > 0)
        rc = finalists_part(f, &o);
    else
        fputs("</div>\n<p id=\"supernet-tau\">No finalist retrained yet "
              "(supernet.retrain_top = 0, or the search has not reached phase 3).</p>\n", f);
    if (rc == NAS_ENOMEM)
        rc = nas_error_set(err, NAS_ENOMEM, "report: out of memory");
    fputs("</section>\n", f);
done:
    free(o.curve);
    free(o.fin);
    return rc;
}
