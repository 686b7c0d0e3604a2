/*
 * report/rungs.c - issue 17: the report's rung-by-rung learning curves of a
 * multi-fidelity search (docs/multi-fidelity.md): validation accuracy
 * against the budget trained (search.fidelity.resource units, epochs), one
 * line per trial through the rungs it finished, from the store's rung
 * table. An experiment without rungs gets no section, so reports of other
 * searches are unchanged.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "nas/store.h"
#include "report_impl.h"

#define RW 480
#define RH 320
#define RL 62
#define RR 16
#define RT 44
#define RB 46

/* The experiment's rung rows (nas_store_rung_list), in (trial, fidelity) order. */
typedef struct rungs {
    nas_store_rung *v;
    int n;
} rungs;

/* Axes of the plot: x 0 .. xmax (ticks at the rung budgets), y lo .. hi. */
static void axes(FILE *f, const rungs *a, double xmax, double lo, double hi)
{
    fprintf(f, "<g class=\"axes\">\n<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%d\" "
               "height=\"%d\"/>\n", RL, RT, RW - RL - RR, RH - RT - RB);
    double done[16];
    int nd = 0;
    for (int i = 0; i < a->n && nd < 16; i++) {
        int seen = 0;
        for (int k = 0; k < nd; k++)
            seen |= done[k] == (double)a->v[i].fidelity;
        if (seen)
            continue;
        done[nd++] = (double)a->v[i].fidelity;
        double x = RL + done[nd - 1] / xmax * (RW - RL - RR);
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/><text "
                   "class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%lld</text>\n",
                x, RT, x, RH - RB, x, RH - RB + 16, (long long)a->v[i].fidelity);
    }
    for (int k = 0; k <= 4; k++) {
        double v = lo + (hi - lo) * k / 4, y = RH - RB - (double)k / 4 * (RH - RT - RB);
        fprintf(f, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/><text "
                   "class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.3f</text>\n",
                RL, y, RW - RR, y, RL - 6, y + 4, v);
    }
    fprintf(f, "<text class=\"label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">budget "
               "(search.fidelity units)</text><text class=\"label\" transform=\"translate(14 %d) "
               "rotate(-90)\" text-anchor=\"middle\">validation accuracy</text>\n</g>\n",
            (RW + RL - RR) / 2, RH - 8, (RH + RT - RB) / 2);
}

int nas__report_rungs(FILE *f, nas_store *st, int64_t exp_id, nas_error *err)
{
    rungs a = {NULL, 0};
    int rc = nas_store_rung_list(st, exp_id, &a.v, &a.n, err);
    if (rc != NAS_OK || a.n == 0) {
        free(a.v);
        return rc;
    }
    double xmax = 1, lo = 1, hi = 0;
    for (int i = 0; i < a.n; i++) {
        if ((double)a.v[i].fidelity > xmax)
            xmax = (double)a.v[i].fidelity;
        if (isfinite(a.v[i].val_accuracy)) {
            lo = fmin(lo, a.v[i].val_accuracy);
            hi = fmax(hi, a.v[i].val_accuracy);
        }
    }
    lo = floor(lo * 20) / 20;
    hi = ceil(hi * 20) / 20;
    if (hi <= lo)
        hi = lo + 0.05;
    fputs("<section id=\"rungs\"><h2>Learning curves by rung</h2>\n<p>Multi-fidelity search: "
          "each line is one trial's validation accuracy after each rung it finished; promoted "
          "trials continued from their checkpoint.</p>\n<div class=\"plots\"><figure class=\"plot\">"
          "<svg id=\"plot-rungs\" class=\"chart\"", f);
    fprintf(f, " viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"Learning "
               "curves by rung\">\n<text class=\"ptitle\" x=\"%d\" y=\"18\">Learning curves by rung"
               "</text>\n", RW, RH, RW, RH, RL);
    axes(f, &a, xmax, lo, hi);
    for (int i = 0; i < a.n;) { /* rows are in (trial, fidelity) order: one line per trial */
        int j = i;
        fprintf(f, "<path class=\"curve\" data-trial=\"%lld\" d=\"", (long long)a.v[i].trial_id);
        for (int first = 1; j < a.n && a.v[j].trial_id == a.v[i].trial_id; j++) {
            if (!isfinite(a.v[j].val_accuracy))
                continue;
            fprintf(f, "%s%.1f %.1f", first ? "M" : "L",
                    RL + (double)a.v[j].fidelity / xmax * (RW - RL - RR),
                    RH - RB - (a.v[j].val_accuracy - lo) / (hi - lo) * (RH - RT - RB));
            first = 0;
        }
        fprintf(f, "\"><title>trial %lld</title></path>\n", (long long)a.v[i].trial_id);
        for (int k = i; k < j; k++) /* a dot per rung: a trial of one rung has no line */
            if (isfinite(a.v[k].val_accuracy))
                fprintf(f, "<circle class=\"trial feasible\" data-trial=\"%lld\" cx=\"%.1f\" "
                           "cy=\"%.1f\" r=\"2.5\"><title>trial %lld: %.4f after %lld</title>"
                           "</circle>\n", (long long)a.v[k].trial_id,
                        RL + (double)a.v[k].fidelity / xmax * (RW - RL - RR),
                        RH - RB - (a.v[k].val_accuracy - lo) / (hi - lo) * (RH - RT - RB),
                        (long long)a.v[k].trial_id, a.v[k].val_accuracy,
                        (long long)a.v[k].fidelity);
        i = j;
    }
    fputs("</svg></figure></div></section>\n", f);
    free(a.v);
    return NAS_OK;
}
