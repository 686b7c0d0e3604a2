/*
 * report/report.c - `nas report`: one self-contained HTML page about an
 * experiment (see nas/report.h, nas_report_write, and docs/report.md).
 *
 * The page needs no network access: CSS and a small script are inline,
 * and every plot is inline SVG written here (linear axes with 1-2-5 ticks,
 * circles with an SVG <title> per trial, paths for best-so-far curves and
 * Pareto fronts, bars). The script only improves hovering: it moves each
 * <title> into a tooltip that follows the pointer and highlights the same
 * trial in every plot; without it the browser's own title tooltips remain.
 *
 * It is a read-only view of the database built on the store API
 * (nas/store.h) and the Pareto functions (nas/evaluator.h); it evaluates
 * nothing and sits above the store and the search (README "Layout").
 */
#include <errno.h>
#include <math.h>   /* isfinite, floor, ceil, log10, pow, NAN */
#include <stdio.h>
#include <stdlib.h> /* malloc, free, qsort */
#include <string.h>
#include <time.h>   /* timegm, gmtime_r, strftime */
#include "nas/report.h"
#include "nas/store.h"
#include "nas/chain.h"     /* nas_chain_op_parse, nas_chain_op_name */
#include "nas/evaluator.h" /* nas_pareto_front, nas_objective_value */
#include "report_impl.h"  /* nas__report_rungs, nas__report_oneshot, nas__report_axis_fit */

#define PLOT_W 480
#define PLOT_H 320
#define M_LEFT 62
#define M_RIGHT 16
#define M_TOP 44
#define M_BOTTOM 46

/* ---- HTML helpers ---------------------------------------------------------- */

/* "2025-01-31T12:34:56.789Z" -> seconds since the epoch; NAN if unreadable. */
static double parse_time(const char *s)
{
    struct tm tm;
    double sec = 0;
    memset(&tm, 0, sizeof tm);
    if (!s || sscanf(s, "%d-%d-%dT%d:%d:%lf", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                     &tm.tm_min, &sec) != 6)
        return NAN;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    tm.tm_sec = 0;
    return (double)timegm(&tm) + sec;
}

/* ---- the report's data ------------------------------------------------------- */

typedef struct rep {
    FILE *f;
    nas_store_experiment exp;
    nas_config objcfg;     /* objectives and constraints of the experiment */
    int obj_ok;            /* objcfg read from the store */
    nas_store_trial *t;    /* every trial, id order */
    int n;
    char *conf_text;
    char *canon;
    double t0;             /* wall-time origin, s since the epoch */
    int top_k;
} rep;

static int is_done(const nas_store_trial *t) { return t->status == NAS_TRIAL_DONE && t->has_result; }
static int is_finished(const nas_store_trial *t)
{
    return t->status == NAS_TRIAL_DONE || t->status == NAS_TRIAL_FAILED;
}
/* Latency of a done trial, NAN when not measured (<= 0: the table evaluator). */
static double latency_of(const nas_store_trial *t)
{
    return isfinite(t->latency_ms) && t->latency_ms > 0 ? t->latency_ms : NAN;
}
static double mmacs_of(const nas_store_trial *t) { return t->macs > 0 ? (double)t->macs / 1e6 : NAN; }

/* Multi-line description of a trial (tooltip / <title> text). */
static void trial_tip(const nas_store_trial *t, char *buf, size_t n)
{
    char lat[48] = "latency not measured", macs[48] = "", params[48] = "", acc[48] = "";
    if (isfinite(latency_of(t)))
        snprintf(lat, sizeof lat, "latency %.3f ms", t->latency_ms);
    if (t->macs > 0)
        snprintf(macs, sizeof macs, "%.3f MMACs", (double)t->macs / 1e6);
    if (t->params > 0)
        snprintf(params, sizeof params, "%.1fk params", (double)t->params / 1e3);
    if (isfinite(t->val_accuracy))
        snprintf(acc, sizeof acc, "val_accuracy %.4f", t->val_accuracy);
    const char *status = nas_trial_status_name((int)t->status);
    snprintf(buf, n, "trial %lld (%s%s)\n%s\n%s, %s, %s\n%s%s%s", (long long)t->id,
             status ? status : "?", is_done(t) && !nas_store_trial_feasible(t) ? ", infeasible" : "",
             acc, macs, params, lat, t->genotype, t->error[0] ? "\n" : "", t->error);
}

/* ---- SVG plots ------------------------------------------------------------------ */

typedef nas__report_axis axis;

void nas__report_axis_fit(axis *a, double lo, double hi, int ticks)
{
    if (!isfinite(lo) || !isfinite(hi)) {
        lo = 0;
        hi = 1;
    }
    if (hi - lo <= 0) {
        double pad = fabs(lo) > 0 ? fabs(lo) * 0.1 : 0.5;
        lo -= pad;
        hi += pad;
    }
    double raw = (hi - lo) / ticks;
    double mag = pow(10, floor(log10(raw)));
    double f = raw / mag;
    double step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
    a->step = step;
    a->lo = floor(lo / step + 1e-9) * step;
    a->hi = ceil(hi / step - 1e-9) * step;
    if (a->hi <= a->lo)
        a->hi = a->lo + step;
    int d = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    a->decimals = d > 6 ? 6 : d;
}

typedef struct plot {
    FILE *f;
    axis x, y;
} plot;

static double px(const plot *p, double x)
{
    return M_LEFT + (x - p->x.lo) / (p->x.hi - p->x.lo) * (PLOT_W - M_LEFT - M_RIGHT);
}
static double py(const plot *p, double y)
{
    return PLOT_H - M_BOTTOM - (y - p->y.lo) / (p->y.hi - p->y.lo) * (PLOT_H - M_TOP - M_BOTTOM);
}

static void svg_open(FILE *f, const char *id, const char *title)
{
    fprintf(f,
            "<figure class=\"plot\"><svg id=\"%s\" class=\"chart\" viewBox=\"0 0 %d %d\" "
            "width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"",
            id, PLOT_W, PLOT_H, PLOT_W, PLOT_H);
    nas__report_html(f, title);
    fprintf(f, "\">\n<text class=\"ptitle\" x=\"%d\" y=\"18\">", M_LEFT);
    nas__report_html(f, title);
    fputs("</text>\n", f);
}

static void svg_close(FILE *f) { fputs("</svg></figure>\n", f); }

/* An empty plot area with a message instead of data. */
static void svg_message(FILE *f, const char *msg)
{
    fprintf(f,
            "<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>"
            "<text class=\"empty\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
            M_LEFT, M_TOP, PLOT_W - M_LEFT - M_RIGHT, PLOT_H - M_TOP - M_BOTTOM,
            (PLOT_W + M_LEFT - M_RIGHT) / 2, (PLOT_H + M_TOP - M_BOTTOM) / 2);
    nas__report_html(f, msg);
    fputs("</text>\n", f);
}

/* Frame, grid lines, tick labels and axis labels. */
static void plot_axes(const plot *p, const char *xlabel, const char *ylabel)
{
    FILE *f = p->f;
    fprintf(f, "<g class=\"axes\">\n<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n",
            M_LEFT, M_TOP, PLOT_W - M_LEFT - M_RIGHT, PLOT_H - M_TOP - M_BOTTOM);
    int nx = (int)floor((p->x.hi - p->x.lo) / p->x.step + 0.5);
    for (int i = 0; i <= nx; i++) {
        double v = p->x.lo + i * p->x.step, x = px(p, v);
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
                   "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.*f</text>\n",
                x, M_TOP, x, PLOT_H - M_BOTTOM, x, PLOT_H - M_BOTTOM + 16, p->x.decimals,
                fabs(v) < p->x.step * 1e-9 ? 0.0 : v);
    }
    int ny = (int)floor((p->y.hi - p->y.lo) / p->y.step + 0.5);
    for (int i = 0; i <= ny; i++) {
        double v = p->y.lo + i * p->y.step, y = py(p, v);
        fprintf(f, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
                   "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n",
                M_LEFT, y, PLOT_W - M_RIGHT, y, M_LEFT - 6, y + 4, p->y.decimals,
                fabs(v) < p->y.step * 1e-9 ? 0.0 : v);
    }
    fprintf(f, "<text class=\"label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
            (PLOT_W + M_LEFT - M_RIGHT) / 2, PLOT_H - 8);
    nas__report_html(f, xlabel);
    fprintf(f, "</text><text class=\"label\" transform=\"translate(14 %d) rotate(-90)\" "
               "text-anchor=\"middle\">",
            (PLOT_H + M_TOP - M_BOTTOM) / 2);
    nas__report_html(f, ylabel);
    fputs("</text>\n</g>\n", f);
}

/* A circle for trial t at data point (x, y). */
static void plot_point(const plot *p, const nas_store_trial *t, double x, double y,
                       const char *cls, double r)
{
    char tip[1024];
    trial_tip(t, tip, sizeof tip);
    fprintf(p->f, "<circle class=\"trial %s\" data-trial=\"%lld\" cx=\"%.2f\" cy=\"%.2f\" r=\"%.1f\"><title>",
            cls, (long long)t->id, px(p, x), py(p, y), r);
    nas__report_html(p->f, tip);
    fputs("</title></circle>\n", p->f);
}

/* A cross marking a failed trial at x, on the bottom edge. */
static void plot_failure(const plot *p, const nas_store_trial *t, double x)
{
    double cx = px(p, x), cy = PLOT_H - M_BOTTOM - 6;
    char tip[1024];
    trial_tip(t, tip, sizeof tip);
    fprintf(p->f,
            "<path class=\"failed-mark\" data-trial=\"%lld\" d=\"M%.1f %.1fl8 8m0 -8l-8 8\"><title>",
            (long long)t->id, cx - 4, cy - 4);
    nas__report_html(p->f, tip);
    fputs("</title></path>\n", p->f);
}

/* A legend entry above the plot area: a circle of class `cls` (a cross for
 * "failed-mark") and its text. */
static void legend(FILE *f, int slot, const char *cls, const char *text)
{
    int x = M_LEFT + 6 + slot * 120, y = M_TOP - 8;
    if (strcmp(cls, "failed-mark") == 0)
        fprintf(f, "<g class=\"legend\"><path class=\"failed-mark\" d=\"M%d %dl7 7m0 -7l-7 7\"/>",
                x - 3, y - 8);
    else
        fprintf(f, "<g class=\"legend\"><circle class=\"%s\" cx=\"%d\" cy=\"%d\" r=\"4\"/>",
                cls, x, y - 4);
    fprintf(f, "<text x=\"%d\" y=\"%d\">", x + 8, y);
    nas__report_html(f, text);
    fputs("</text></g>\n", f);
}

/* ---- best so far ------------------------------------------------------------------- */

typedef struct tpoint {
    double x;
    int i; /* trial index */
} tpoint;

static int tpoint_cmp(const void *pa, const void *pb)
{
    const tpoint *a = pa, *b = pb;
    if (a->x != b->x)
        return a->x < b->x ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* Best-so-far validation accuracy of feasible done trials against x
 * (trial number when by_time == 0, wall time otherwise). */
static int plot_best(rep *r, int by_time)
{
    FILE *f = r->f;
    const char *id = by_time ? "plot-best-time" : "plot-best-trials";
    tpoint *pts = malloc((size_t)(r->n > 0 ? r->n : 1) * sizeof *pts);
    if (!pts)
        return NAS_ENOMEM;
    int m = 0, k = 0;
    double ylo = INFINITY, yhi = -INFINITY;
    for (int i = 0; i < r->n; i++) {
        const nas_store_trial *t = &r->t[i];
        if (!is_finished(t))
            continue;
        k++;
        double x = by_time ? parse_time(t->finished_at) - r->t0 : k;
        if (!isfinite(x))
            continue;
        pts[m++] = (tpoint){x, i};
        if (is_done(t) && isfinite(t->val_accuracy)) {
            ylo = fmin(ylo, t->val_accuracy);
            yhi = fmax(yhi, t->val_accuracy);
        }
    }
    qsort(pts, (size_t)m, sizeof *pts, tpoint_cmp);
    double scale = 1;
    const char *xlabel = "trial number (proposal order, finished trials)";
    if (by_time) {
        double span = m ? pts[m - 1].x : 0;
        if (span > 3 * 3600) {
            scale = 3600;
            xlabel = "wall time since the experiment started (h)";
        } else if (span > 300) {
            scale = 60;
            xlabel = "wall time since the experiment started (min)";
        } else {
            xlabel = "wall time since the experiment started (s)";
        }
    }
    svg_open(f, id, by_time ? "Best validation accuracy so far, against wall time"
                            : "Best validation accuracy so far, against trials");
    if (m == 0 || !isfinite(ylo)) {
        svg_message(f, "no finished trial with an accuracy yet");
        svg_close(f);
        free(pts);
        return NAS_OK;
    }
    plot p = {.f = f};
    nas__report_axis_fit(&p.x, by_time ? 0 : 0, pts[m - 1].x / scale, 6);
    nas__report_axis_fit(&p.y, ylo, yhi, 5);
    plot_axes(&p, xlabel, "validation accuracy");
    /* the step line of the best feasible accuracy */
    fputs("<path class=\"best\" d=\"", f);
    double best = NAN;
    int started = 0;
    for (int j = 0; j < m; j++) {
        const nas_store_trial *t = &r->t[pts[j].i];
        if (!nas_store_trial_feasible(t) || !isfinite(t->val_accuracy))
            continue;
        double x = px(&p, pts[j].x / scale);
        if (!started) {
            best = t->val_accuracy;
            fprintf(f, "M%.2f %.2f", x, py(&p, best));
            started = 1;
        } else if (t->val_accuracy > best) {
            fprintf(f, "H%.2f", x);
            best = t->val_accuracy;
            fprintf(f, "V%.2f", py(&p, best));
        }
    }
    if (started)
        fprintf(f, "H%.2f", px(&p, pts[m - 1].x / scale));
    fputs("\"/>\n", f);
    for (int j = 0; j < m; j++) {
        const nas_store_trial *t = &r->t[pts[j].i];
        double x = pts[j].x / scale;
        if (is_done(t) && isfinite(t->val_accuracy))
            plot_point(&p, t, x, t->val_accuracy,
                       nas_store_trial_feasible(t) ? "feasible" : "infeasible", 3);
        else if (t->status == NAS_TRIAL_FAILED)
            plot_failure(&p, t, x);
    }
    legend(f, 0, "feasible", "trial");
    legend(f, 1, "infeasible", "infeasible");
    legend(f, 2, "failed-mark", "failed");
    svg_close(f);
    free(pts);
    return NAS_OK;
}

/* ---- accuracy against a cost, with the Pareto front ------------------------------- */

/* Scatter val_accuracy (y) against cost(t) (x) for done trials with both
 * measured; the front (max accuracy, min cost) of the feasible ones is
 * drawn as a staircase path and larger red circles. Returns the front size
 * in *n_front. */
static int plot_tradeoff(rep *r, const char *id, const char *path_id, const char *title,
                         const char *xlabel, double (*cost)(const nas_store_trial *),
                         const char *missing, int *n_front)
{
    FILE *f = r->f;
    *n_front = 0;
    int n = r->n > 0 ? r->n : 1;
    int *idx = malloc((size_t)n * sizeof *idx);
    double *pts = calloc((size_t)n * 2, sizeof *pts);
    unsigned char *on = malloc((size_t)n);
    tpoint *order = malloc((size_t)n * sizeof *order);
    int *fidx = malloc((size_t)n * sizeof *fidx);
    int rc = NAS_OK;
    if (!idx || !pts || !on || !order || !fidx) {
        rc = NAS_ENOMEM;
        goto done;
    }
    int m = 0, nf = 0;
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (int i = 0; i < r->n; i++) {
        const nas_store_trial *t = &r->t[i];
        double c = cost(t);
        if (!is_done(t) || !isfinite(c) || !isfinite(t->val_accuracy))
            continue;
        idx[m++] = i;
        xlo = fmin(xlo, c);
        xhi = fmax(xhi, c);
        ylo = fmin(ylo, t->val_accuracy);
        yhi = fmax(yhi, t->val_accuracy);
    }
    /* the front of the feasible points at the highest fidelity one of them
     * reached (multi-fidelity: a trial stopped at a low rung is not compared
     * with fully trained ones, as nas query --pareto; -1 without rungs) */
    int64_t top_fid = -1;
    for (int j = 0; j < m; j++)
        if (nas_store_trial_feasible(&r->t[idx[j]]) && r->t[idx[j]].fidelity > top_fid)
            top_fid = r->t[idx[j]].fidelity;
    for (int j = 0; j < m; j++) {
        const nas_store_trial *t = &r->t[idx[j]];
        if (!nas_store_trial_feasible(t) || t->fidelity != top_fid)
            continue;
        fidx[nf] = idx[j];
        pts[2 * nf] = t->val_accuracy;
        pts[2 * nf + 1] = cost(t);
        nf++;
    }
    static const int goals[2] = {1, 0};
    int count = nas_pareto_front(pts, nf, 2, goals, on);
    svg_open(f, id, title);
    if (m == 0) {
        svg_message(f, missing);
        svg_close(f);
        goto done;
    }
    plot p = {.f = f};
    nas__report_axis_fit(&p.x, xlo, xhi, 6);
    nas__report_axis_fit(&p.y, ylo, yhi, 5);
    plot_axes(&p, xlabel, "validation accuracy");
    int k = 0;
    for (int j = 0; j < nf; j++)
        if (on[j])
            order[k++] = (tpoint){pts[2 * j + 1], j};
    qsort(order, (size_t)k, sizeof *order, tpoint_cmp);
    if (k > 0) {
        fprintf(f, "<path id=\"%s\" class=\"pareto\" d=\"", path_id);
        for (int q = 0; q < k; q++) {
            int j = order[q].i;
            double x = px(&p, pts[2 * j + 1]), y = py(&p, pts[2 * j]);
            if (q == 0)
                fprintf(f, "M%.2f %.2f", x, y);
            else
                fprintf(f, "H%.2fV%.2f", x, y);
        }
        fprintf(f, "H%.2f\"/>\n", px(&p, p.x.hi));
    }
    for (int j = 0; j < m; j++) { /* the others below the front */
        const nas_store_trial *t = &r->t[idx[j]];
        int front = 0;
        for (int q = 0; q < nf; q++)
            if (fidx[q] == idx[j] && on[q])
                front = 1;
        if (!front)
            plot_point(&p, t, cost(t), t->val_accuracy,
                       nas_store_trial_feasible(t) ? "feasible" : "infeasible", 3.5);
    }
    for (int q = 0; q < k; q++) {
        const nas_store_trial *t = &r->t[fidx[order[q].i]];
        plot_point(&p, t, cost(t), t->val_accuracy, "front", 5);
    }
    legend(f, 0, "feasible", "trial");
    legend(f, 1, "front", "Pareto front");
    legend(f, 2, "infeasible", "infeasible");
    svg_close(f);
    *n_front = count;
done:
    free(idx);
    free(pts);
    free(on);
    free(order);
    free(fidx);
    return rc;
}

/* ---- op frequency in the top-k ---------------------------------------------------- */

/* Add the ops of genotype string `g` ("|op~0|+|op~0|op~1|+...") to counts. */
/* The ops a report counts: the cell's five (nas_op), or a chain space's,
 * as its trials' genotypes hold them (issue 28: a chain experiment listed
 * the cell ops at 0%). */
#define OPS_MAX 32
typedef struct op_names {
    int chain, n;
    char name[OPS_MAX][16];
} op_names;

static int op_slot(op_names *on, const char *tok, size_t len)
{
    char w[16];
    if (len >= sizeof w)
        return -1;
    memcpy(w, tok, len);
    w[len] = '\0';
    int op;
    uint16_t cop;
    if (!on->chain)
        return nas_op_from_name(w, &op) == NAS_OK ? op : -1;
    if (nas_chain_op_parse(w, &cop) != NAS_OK)
        return -1; /* a width, depth or SE choice */
    nas_chain_op_name(cop, w, sizeof w);
    for (int i = 0; i < on->n; i++)
        if (!strcmp(on->name[i], w))
            return i;
    if (on->n == OPS_MAX)
        return -1;
    snprintf(on->name[on->n], sizeof on->name[0], "%s", w);
    return on->n++;
}

/* A chain space's ops in the order its settings list them ("space.stages
 * = ( ... ops = [\"mb3_k3\", ...] ... )" in the canonical text), so an op
 * no trial took still shows, at 0%. */
static void chain_space_ops(op_names *on, const char *canon)
{
    const char *p = canon ? strstr(canon, "\nspace.stages = ") : NULL;
    const char *end = p ? strchr(p + 1, '\n') : NULL;
    while (p && (p = strchr(p + 1, '"')) != NULL && (!end || p < end)) {
        const char *q = strchr(p + 1, '"');
        if (!q || (end && q > end))
            break;
        op_slot(on, p + 1, (size_t)(q - p - 1));
        p = q;
    }
}

/* Count genotype g's ops into counts[] (cell: "op~k" per edge; chain: the
 * op tokens between '|' and ':'); returns the number counted. */
static int count_ops(op_names *on, const char *g, int *counts)
{
    int edges = 0;
    for (const char *p = g; *p;) {
        size_t len = strcspn(p, on->chain ? "|:" : "|");
        const char *tilde = on->chain ? NULL : memchr(p, '~', len);
        int op = on->chain ? op_slot(on, p, len) : tilde ? op_slot(on, p, (size_t)(tilde - p)) : -1;
        if (op >= 0) {
            counts[op]++;
            edges++;
        }
        p += len + (p[len] ? 1 : 0);
    }
    return edges;
}

/* The top-k order: the highest fidelity first (multi-fidelity: a trial
 * stopped at a low rung is not compared with fully trained ones; -1
 * without rungs), then validation accuracy, then id. */
static int acc_cmp(const void *pa, const void *pb)
{
    const nas_store_trial *a = *(const nas_store_trial *const *)pa;
    const nas_store_trial *b = *(const nas_store_trial *const *)pb;
    if (a->fidelity != b->fidelity)
        return a->fidelity > b->fidelity ? -1 : 1;
    if (a->val_accuracy != b->val_accuracy)
        return a->val_accuracy > b->val_accuracy ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static int plot_ops(rep *r, int chain, int *k_used)
{
    FILE *f = r->f;
    const nas_store_trial **ok = malloc((size_t)(r->n > 0 ? r->n : 1) * sizeof *ok);
    if (!ok)
        return NAS_ENOMEM;
    int m = 0;
    for (int i = 0; i < r->n; i++)
        if (nas_store_trial_feasible(&r->t[i]) && isfinite(r->t[i].val_accuracy))
            ok[m++] = &r->t[i];
    qsort(ok, (size_t)m, sizeof *ok, acc_cmp);
    int k = r->top_k < m ? r->top_k : m;
    *k_used = k;
    op_names on = {.chain = chain, .n = chain ? 0 : NAS_OP_COUNT};
    for (int op = 0; !chain && op < NAS_OP_COUNT; op++)
        strncpy(on.name[op], nas_op_name(op), sizeof on.name[0] - 1); /* on is zeroed */
    if (chain)
        chain_space_ops(&on, r->canon);
    int top[OPS_MAX] = {0}, all[OPS_MAX] = {0};
    int top_edges = 0, all_edges = 0;
    for (int j = 0; j < m; j++) {
        all_edges += count_ops(&on, ok[j]->genotype, all);
        if (j < k)
            top_edges += count_ops(&on, ok[j]->genotype, top);
    }
    free(ok);
    const int n_ops = on.n > 0 ? on.n : 1;
    const char *unit = chain ? "layers" : "edges";
    char title[128];
    snprintf(title, sizeof title, "Share of %s per op: top %d trials against all %d", unit, k, m);
    fprintf(f, "<figure class=\"plot wide\"><svg id=\"plot-ops\" class=\"chart\" viewBox=\"0 0 %d %d\" "
               "width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"",
            PLOT_W * 2, 60 + n_ops * 44, PLOT_W * 2, 60 + n_ops * 44);
    nas__report_html(f, title);
    fputs("\">\n<text class=\"ptitle\" x=\"150\" y=\"18\">", f);
    nas__report_html(f, title);
    fputs("</text>\n", f);
    if (k == 0) {
        fputs("<text class=\"empty\" x=\"150\" y=\"60\">no feasible finished trial yet</text></svg></figure>\n", f);
        return NAS_OK;
    }
    const double x0 = 150, w = PLOT_W * 2 - x0 - 70;
    for (int t = 0; t <= 4; t++) { /* 0..100 % grid */
        double x = x0 + w * t / 4.0;
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"30\" x2=\"%.1f\" y2=\"%d\"/>"
                   "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d%%</text>\n",
                x, x, 34 + n_ops * 44, x, 50 + n_ops * 44, t * 25);
    }
    for (int op = 0; op < on.n; op++) {
        double y = 34 + op * 44;
        double st = top_edges ? (double)top[op] / top_edges : 0;
        double sa = all_edges ? (double)all[op] / all_edges : 0;
        fprintf(f, "<text class=\"opname\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                x0 - 8, y + 22, on.name[op]);
        fprintf(f, "<rect class=\"bar-top\" data-op=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" "
                   "height=\"16\"><title>%s: %d of %d %s (%.1f%%) in the top %d</title></rect>"
                   "<text class=\"barval\" x=\"%.1f\" y=\"%.1f\">%.0f%%</text>\n",
                on.name[op], x0, y + 4, w * st, on.name[op], top[op], top_edges,
                unit, 100 * st, k, x0 + w * st + 4, y + 17, 100 * st);
        fprintf(f, "<rect class=\"bar-all\" data-op=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" "
                   "height=\"12\"><title>%s: %d of %d %s (%.1f%%) in all %d feasible trials</title></rect>"
                   "<text class=\"barval dim\" x=\"%.1f\" y=\"%.1f\">%.0f%%</text>\n",
                on.name[op], x0, y + 22, w * sa, on.name[op], all[op], all_edges,
                unit, 100 * sa, m, x0 + w * sa + 4, y + 32, 100 * sa);
    }
    fprintf(f, "<g class=\"legend\"><rect class=\"bar-top\" x=\"%.0f\" y=\"8\" width=\"10\" height=\"10\"/>"
               "<text x=\"%.0f\" y=\"17\">top %d</text><rect class=\"bar-all\" x=\"%.0f\" y=\"8\" "
               "width=\"10\" height=\"10\"/><text x=\"%.0f\" y=\"17\">all</text></g>\n",
            x0 + w - 120, x0 + w - 106, k, x0 + w - 50, x0 + w - 36);
    fputs("</svg></figure>\n", f);
    return NAS_OK;
}

/* ---- tables ---------------------------------------------------------------------------- */

static int front_table(rep *r, nas_store *st, int *n_front, nas_error *err)
{
    FILE *f = r->f;
    const nas_config *c = &r->objcfg;
    fputs("<section id=\"objective-front\"><h2>Pareto front under the experiment's objectives</h2>\n<p>", f);
    for (int k = 0; k < c->n_objectives; k++) {
        fprintf(f, "%s<code>", k ? ", " : "Objectives: ");
        nas__report_html(f, c->objectives[k].metric);
        fprintf(f, "</code> (%s)", c->objectives[k].maximize ? "max" : "min");
    }
    fputs(".", f);
    if (!r->obj_ok)
        fputs(" (The stored config gave no readable objectives; the default is shown.)", f);
    if (c->n_objectives == 1)
        fputs(" With one objective the front is the best trial (and any trial tied with it).", f);
    fputs(" Only done, feasible trials with every objective measured take part; ties and "
          "duplicates are all on the front.</p>\n", f);
    nas_store_trial *front = NULL;
    int n = 0;
    int rc = nas_store_pareto(st, r->exp.id, c->objectives, c->n_objectives, &front, &n, err);
    if (rc != NAS_OK)
        return rc;
    *n_front = n;
    if (n == 0) {
        fputs("<p id=\"front-empty\">No trial qualifies yet.</p></section>\n", f);
        return NAS_OK;
    }
    fputs("<table id=\"front\"><thead><tr><th>trial</th>", f);
    for (int k = 0; k < c->n_objectives; k++) {
        fputs("<th>", f);
        nas__report_html(f, c->objectives[k].metric);
        fputs("</th>", f);
    }
    int show_macs = 1, show_params = 1, show_lat = 1; /* extra columns not already objectives */
    for (int k = 0; k < c->n_objectives; k++) {
        show_macs &= strcmp(c->objectives[k].metric, "macs") != 0;
        show_params &= strcmp(c->objectives[k].metric, "params") != 0;
        show_lat &= strcmp(c->objectives[k].metric, "latency_ms") != 0;
    }
    fprintf(f, "%s%s%s<th>genotype</th></tr></thead><tbody>\n", show_macs ? "<th>MMACs</th>" : "",
            show_params ? "<th>params</th>" : "", show_lat ? "<th>latency (ms)</th>" : "");
    for (int i = 0; i < n; i++) {
        const nas_store_trial *t = &front[i];
        fprintf(f, "<tr data-trial=\"%lld\"><td>%lld</td>", (long long)t->id, (long long)t->id);
        for (int k = 0; k < c->n_objectives; k++) {
            char v[64];
            nas__report_metric_text(t, c->objectives[k].metric, v, sizeof v);
            fprintf(f, "<td class=\"num\">%s</td>", v);
        }
        char lat[32] = "-";
        if (isfinite(latency_of(t)))
            snprintf(lat, sizeof lat, "%.3f", t->latency_ms);
        if (show_macs)
            fprintf(f, "<td class=\"num\">%.3f</td>", mmacs_of(t));
        if (show_params)
            fprintf(f, "<td class=\"num\">%lld</td>", (long long)t->params);
        if (show_lat)
            fprintf(f, "<td class=\"num\">%s</td>", lat);
        fputs("<td><code>", f);
        nas__report_html(f, t->genotype);
        fputs("</code></td></tr>\n", f);
    }
    fputs("</tbody></table></section>\n", f);
    free(front);
    return NAS_OK;
}

/* issue 22: the experiment's final trainings (`nas train ARCH.json --db`),
 * next to what the search measured for the same trial. */
static int final_table(rep *r, nas_store *st, nas_error *err)
{
    FILE *f = r->f;
    nas_store_final_training *ft = NULL;
    int n = 0;
    int rc = nas_store_final_training_list(st, r->exp.id, -1, &ft, &n, err);
    if (rc != NAS_OK)
        return rc;
    fputs("<section id=\"final-training\"><h2>Final training</h2>\n", f);
    if (n == 0) {
        fputs("<p id=\"no-final\">No trial of this experiment was trained fully yet: "
              "<code>nas export --best --format json -o best.json</code>, then <code>nas train "
              "best.json --db DB</code> records one here.</p></section>\n",
              f);
        return NAS_OK;
    }
    fprintf(f, "<p>Runs of <code>nas train ARCH.json --db</code> (docs/export.md): test accuracy on "
               "the %s test images after the run, next to the trial's proxy validation "
               "accuracy.</p>\n", nas_data_info_parse(r->canon, &(nas_data_info){0}) ? "experiment's"
                                                                                  : "Fashion-MNIST");
    fputs("<table id=\"final\"><thead><tr><th>run</th><th>trial</th>"
          "<th>genotype</th><th>proxy val_acc</th><th>test_acc</th><th>mode</th><th>epochs</th>"
          "<th>train images</th><th>augment</th><th>seconds</th><th>recipe</th></tr></thead>"
          "<tbody>\n",
          f);
    for (int i = 0; i < n; i++) {
        const nas_store_final_training *x = &ft[i];
        double val = NAN;
        for (int k = 0; k < r->n; k++)
            if (r->t[k].id == x->trial_id)
                val = r->t[k].val_accuracy;
        fprintf(f, "<tr><td>%lld</td><td>", (long long)x->id);
        if (x->trial_id >= 0)
            fprintf(f, "%lld", (long long)x->trial_id);
        else
            fputs("-", f);
        fputs("</td><td><code>", f);
        nas__report_html(f, x->genotype);
        fputs("</code></td><td>", f);
        if (isfinite(val))
            fprintf(f, "%.4f", val);
        else
            fputs("-", f);
        fputs("</td><td>", f);
        if (isfinite(x->test_accuracy))
            fprintf(f, "%.4f", x->test_accuracy);
        else
            fputs("-", f);
        fprintf(f, "</td><td>%s</td><td>%d</td><td>%lld</td><td>",
                nas_store_final_training_is_full(x) ? "full" : "proxy rerun", x->epochs,
                (long long)x->train_images);
        nas__report_html(f, x->augment);
        fprintf(f, "</td><td>%.0f</td><td><code>", isfinite(x->train_seconds) ? x->train_seconds : 0.0);
        nas__report_html(f, x->recipe);
        fputs("</code></td></tr>\n", f);
    }
    fputs("</tbody></table></section>\n", f);
    free(ft);
    return NAS_OK;
}

static void failure_table(rep *r)
{
    FILE *f = r->f;
    fputs("<section id=\"failures\"><h2>Failed, infeasible and diverged trials</h2>\n", f);
    int rows = 0;
    for (int i = 0; i < r->n; i++) {
        const nas_store_trial *t = &r->t[i];
        int failed = t->status == NAS_TRIAL_FAILED;
        int infeasible = is_done(t) && !nas_store_trial_feasible(t);
        int diverged = is_done(t) && strcmp(t->flag, "diverged") == 0; /* issue 22 */
        if (!failed && !infeasible && !diverged)
            continue;
        const char *what = failed ? "failed" : infeasible ? "infeasible" : "diverged";
        if (rows++ == 0)
            fputs("<table id=\"failed\"><thead><tr><th>trial</th><th>status</th><th>reason</th>"
                  "<th>attempts</th><th>finished</th><th>genotype</th></tr></thead><tbody>\n", f);
        fprintf(f, "<tr class=\"%s\" data-trial=\"%lld\"><td>%lld</td><td>%s</td><td class=\"reason\">",
                what, (long long)t->id, (long long)t->id, what);
        nas__report_html(f, t->error[0] ? t->error : failed ? "(no reason recorded)" : "(score missing)");
        fprintf(f, "</td><td class=\"num\">%d</td><td>", t->attempt);
        nas__report_html(f, t->finished_at);
        fputs("</td><td><code>", f);
        nas__report_html(f, t->genotype);
        fputs("</code></td></tr>\n", f);
    }
    if (rows)
        fprintf(f, "</tbody></table>\n<p>%d trial%s.</p>\n", rows, rows == 1 ? "" : "s");
    else
        fputs("<p id=\"no-failures\">No trial failed, none violated a constraint and none "
              "diverged.</p>\n", f);
    fputs("</section>\n", f);
}

/* ---- the page -------------------------------------------------------------------------- */

static const char CSS[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;"
    "color:#222;margin:0 auto;max-width:1010px;padding:16px 20px;background:#fff}"
    "h1{font-size:22px;margin:8px 0 4px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}"
    ".meta{color:#666;margin:0 0 10px}"
    "table{border-collapse:collapse;margin:6px 0;font-size:13px}"
    "th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}"
    "th{white-space:nowrap}td.reason{overflow-wrap:anywhere}"
    "th{background:#f4f6f8}td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}"
    "tr.failed td.reason{color:#a11}tr.infeasible td.reason{color:#a60}"
    "tr.diverged td.reason{color:#a60}"
    "tr.hl td{background:#fff3c4}"
    "code{font:12px ui-monospace,Menlo,Consolas,monospace}td code{word-break:break-all}"
    "pre{background:#f6f8fa;border:1px solid #e1e4e8;padding:10px;overflow:auto;font-size:12px}"
    ".plots{display:flex;flex-wrap:wrap;gap:10px}figure.plot{margin:0}"
    "svg.chart{background:#fff;border:1px solid #e3e3e3;font-size:11px;max-width:100%;height:auto}"
    ".ptitle{font-size:13px;font-weight:600;fill:#333}"
    ".frame{fill:none;stroke:#999}.grid{stroke:#eee}.tick{fill:#555}.label{fill:#333;font-size:12px}"
    ".empty{fill:#888;font-size:13px}"
    "circle.feasible{fill:#1f77b4;fill-opacity:.65;stroke:#fff;stroke-width:.6}"
    "circle.infeasible{fill:#fff;stroke:#ff7f0e;stroke-width:1.5}"
    "circle.front{fill:#d62728;stroke:#fff;stroke-width:1}"
    "circle.hl,path.hl{stroke:#000;stroke-width:2.5;fill-opacity:1}"
    ".failed-mark{stroke:#d62728;stroke-width:2;fill:none}"
    "path.best{fill:none;stroke:#2ca02c;stroke-width:2}"
    "path.curve{fill:none;stroke:#1f77b4;stroke-opacity:.45;stroke-width:1.2}"
    "path.sn-loss{fill:none;stroke:#1f77b4;stroke-width:2}path.sn-acc{fill:none;stroke:#ff7f0e;"
    "stroke-width:2}circle.sn-loss{fill:#1f77b4}circle.sn-acc{fill:#ff7f0e}"
    "path.pareto{fill:none;stroke:#d62728;stroke-width:1.6;stroke-dasharray:5 3}"
    ".legend text{fill:#444}"
    "rect.bar-top{fill:#1f77b4}rect.bar-all{fill:#bbb}.opname{fill:#333;font-size:12px}"
    ".barval{fill:#333}.barval.dim{fill:#888}"
    "#tip{position:absolute;pointer-events:none;background:rgba(30,30,30,.92);color:#fff;"
    "padding:6px 8px;border-radius:4px;font-size:12px;white-space:pre;max-width:640px}"
    "dl.summary{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:8px 0}"
    "dl.summary dt{color:#555}dl.summary dd{margin:0}"
    ".live{background:#eef6ff;border:1px solid #b6d4f5;padding:6px 10px;border-radius:4px}"
    ".scroll{overflow-x:auto}#trial-table td.geno{min-width:16em;max-width:24em}"
    "th.sortable{cursor:pointer}th.sortable:hover{background:#e6ebf0}"
    "th[aria-sort=ascending]::after{content:' \\25B2'}th[aria-sort=descending]::after{content:' \\25BC'}"
    "#trial-table tr.failed td.st{color:#a11;font-weight:600}#trial-table td.flag{color:#a60}"
    "#trial-table tr.running td,#trial-table tr.pending td,#trial-table tr.interrupted td{color:#777}";

static const char SCRIPT[] =
    "(function(){\n"
    "  var tip = document.getElementById('tip');\n"
    "  function mark(id, on) {\n"
    "    var els = document.querySelectorAll('[data-trial=\"' + id + '\"]');\n"
    "    for (var i = 0; i < els.length; i++) els[i].classList.toggle('hl', on);\n"
    "  }\n"
    "  var els = document.querySelectorAll('[data-trial]');\n"
    "  for (var i = 0; i < els.length; i++) {\n"
    "    var el = els[i], t = el.querySelector('title');\n"
    "    if (t) { el.setAttribute('data-tip', t.textContent); t.parentNode.removeChild(t); }\n"
    "    el.addEventListener('mouseenter', function (ev) {\n"
    "      var e = ev.currentTarget, text = e.getAttribute('data-tip');\n"
    "      mark(e.getAttribute('data-trial'), true);\n"
    "      if (text) { tip.textContent = text; tip.hidden = false; }\n"
    "    });\n"
    "    el.addEventListener('mousemove', function (ev) {\n"
    "      tip.style.left = (ev.pageX + 14) + 'px'; tip.style.top = (ev.pageY + 14) + 'px';\n"
    "    });\n"
    "    el.addEventListener('mouseleave', function (ev) {\n"
    "      mark(ev.currentTarget.getAttribute('data-trial'), false); tip.hidden = true;\n"
    "    });\n"
    "  }\n"
    "})();\n";

static void summary(rep *r, const char *db_path)
{
    FILE *f = r->f;
    const nas_store_experiment *e = &r->exp;
    fputs("<h1>nas report: ", f);
    nas__report_html(f, e->name);
    fputs("</h1>\n<p class=\"meta\">database <code>", f);
    nas__report_html(f, db_path);
    char now[32];
    time_t tn = time(NULL);
    struct tm tm;
    gmtime_r(&tn, &tm);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(f, "</code>, experiment %lld, generated %s by nas %s</p>\n", (long long)e->id, now,
            NAS_VERSION);
    const nas_store_trial *best = NULL; /* issue 29: the store's rule (NAS__STORE_RANK) */
    for (int i = 0; i < r->n && e->best_trial >= 0; i++)
        if (r->t[i].id == e->best_trial)
            best = &r->t[i];
    fputs("<section id=\"summary\"><dl class=\"summary\">\n<dt>strategy</dt><dd>", f);
    nas__report_html(f, e->strategy);
    fprintf(f, " (seed %llu)</dd>\n<dt>status</dt><dd>", (unsigned long long)e->seed);
    nas__report_html(f, e->status);
    fprintf(f, "; created ");
    nas__report_html(f, e->created_at);
    fprintf(f, ", updated ");
    nas__report_html(f, e->updated_at);
    /* Done trials without an accuracy were rejected by constraints.latency_ms
     * before training (issue 6): not part of the budget, counted apart. */
    int n_rejected = 0;
    for (int i = 0; i < r->n; i++)
        if (is_done(&r->t[i]) && !isfinite(r->t[i].val_accuracy))
            n_rejected++;
    fprintf(f, "</dd>\n<dt>trials</dt><dd>%d of a budget of %d finished: %d done, %d failed; "
               "%d pending, %d running, %d interrupted",
            e->n_done - n_rejected + e->n_failed, e->trials_budget, e->n_done - n_rejected,
            e->n_failed, e->n_pending, e->n_running, e->n_interrupted);
    if (n_rejected)
        fprintf(f, "; %d rejected by constraints.latency_ms before training", n_rejected);
    if (e->n_diverged) /* issue 22 */
        fprintf(f, "; %d diverged (done, flagged: see below)", e->n_diverged);
    fputs("</dd>\n", f);
    const nas_config *c = &r->objcfg;
    fputs("<dt>objectives</dt><dd>", f);
    for (int k = 0; k < c->n_objectives; k++) {
        fputs(k ? ", " : "", f);
        nas__report_html(f, c->objectives[k].metric);
        fprintf(f, " (%s)", c->objectives[k].maximize ? "max" : "min");
    }
    fputs("</dd>\n<dt>constraints</dt><dd>", f);
    int any = 0;
    if (c->constraints.latency_ms > 0)
        fprintf(f, "%slatency &le; %g ms%s", any++ ? ", " : "", c->constraints.latency_ms,
                r->canon && strstr(r->canon, "\nevaluator.kind = \"table\"")
                    ? " (not applied: the table evaluator measures no latency)"
                    : "");
    if (c->constraints.mmacs > 0)
        fprintf(f, "%sMACs &le; %g M", any++ ? ", " : "", c->constraints.mmacs);
    if (c->constraints.params > 0)
        fprintf(f, "%sparams &le; %g", any++ ? ", " : "", c->constraints.params);
    fputs(any ? "</dd>\n" : "none</dd>\n", f);
    fputs("<dt>best</dt><dd>", f);
    if (best) {
        fprintf(f, "trial %lld, validation accuracy %.4f, %.3f MMACs, %lld params: <code>",
                (long long)best->id, best->val_accuracy, mmacs_of(best), (long long)best->params);
        nas__report_html(f, best->genotype);
        fputs("</code>", f);
    } else {
        fputs("no feasible trial finished yet", f);
    }
    fputs("</dd>\n</dl></section>\n", f);
}

int nas_report_write(nas_store *st, const nas_report_opts *opts, FILE *out, int *n_front,
                     nas_error *err)
{
    if (n_front)
        *n_front = 0;
    if (!st || !out)
        return nas_error_set(err, NAS_EINVAL, "report: NULL store or output");
    rep r;
    memset(&r, 0, sizeof r);
    r.f = out;
    r.top_k = opts && opts->top_k > 0 ? opts->top_k : 10;
    const char *name = opts && opts->experiment && *opts->experiment ? opts->experiment : NULL;
    int rc = nas_store_experiment_find(st, name, &r.exp, err);
    if (rc != NAS_OK)
        return rc;
    nas_error oerr;
    r.obj_ok = nas_store_experiment_objectives(st, r.exp.id, &r.objcfg, &oerr) == NAS_OK;
    if (!r.obj_ok && oerr.code != NAS_EFORMAT)
        return nas_error_set(err, oerr.code, "%s", oerr.msg);
    if ((rc = nas_store_trial_list(st, r.exp.id, &r.t, &r.n, err)) != NAS_OK)
        return rc;
    if ((rc = nas_store_experiment_conf_text(st, r.exp.id, &r.conf_text, err)) != NAS_OK ||
        (rc = nas_store_experiment_canonical(st, r.exp.id, &r.canon, err)) != NAS_OK)
        goto done;
    r.t0 = parse_time(r.exp.created_at);
    for (int i = 0; i < r.n; i++) { /* trials older than the row (cannot happen) move the origin */
        double s = parse_time(r.t[i].started_at[0] ? r.t[i].started_at : r.t[i].created_at);
        if (isfinite(s) && (!isfinite(r.t0) || s < r.t0))
            r.t0 = s;
    }

    FILE *f = out;
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>nas report: ",
          f);
    nas__report_html(f, r.exp.name);
    fputs("</title>\n", f);
    int refresh = opts && opts->refresh_s > 0 ? opts->refresh_s : 0;
    if (refresh) /* issue 33: a live report (nas run --report) reloads itself */
        fprintf(f, "<meta http-equiv=\"refresh\" content=\"%d\">\n", refresh);
    fprintf(f, "<style>%s</style>\n</head>\n<body>\n", CSS);
    summary(&r, nas_store_path(st));
    if (refresh)
        fprintf(f, "<p id=\"live\" class=\"live\">Live report: the search is running; this "
                   "page is rewritten after every trial and reloads itself every %d s (<a "
                   "href=\"#trials\">all trials</a>).</p>\n",
                refresh);

    fputs("<section id=\"progress\"><h2>Search progress</h2>\n<p>Green: the best validation "
          "accuracy of feasible trials so far. Dots: every done trial; hollow orange: violates a "
          "constraint; red crosses: failed trials. Hover a point for its details.</p>\n"
          "<div class=\"plots\">\n",
          f);
    if ((rc = plot_best(&r, 0)) != NAS_OK || (rc = plot_best(&r, 1)) != NAS_OK)
        goto oom;
    fputs("</div></section>\n", f);

    int nf_lat = 0, nf_macs = 0;
    fputs("<section id=\"tradeoffs\"><h2>Accuracy against cost</h2>\n<p>Red: the Pareto front "
          "of the feasible trials for each pair (highest accuracy, lowest cost); the dashed line "
          "is its attainment boundary. Latency is the median batch-1 forward pass on the worker's "
          "device; MACs count convolutions and the classifier per ",
          f);
    nas_data_info di; /* issue 28: the experiment's image size (data line of its settings) */
    if (!nas_data_info_parse(r.canon, &di))
        nas_data_info_fmnist(&di);
    fprintf(f, "%dx%dx%d image.</p>\n<div class=\"plots\">\n", di.c, di.h, di.w);
    if ((rc = plot_tradeoff(&r, "plot-acc-latency", "pareto-latency",
                            "Validation accuracy against latency", "latency, batch 1 (ms)",
                            latency_of, "latency was not measured (table evaluator?)", &nf_lat)) !=
            NAS_OK ||
        (rc = plot_tradeoff(&r, "plot-acc-macs", "pareto-macs", "Validation accuracy against MACs",
                            "multiply-accumulates per image (millions)", mmacs_of,
                            "no trial with MACs counted yet", &nf_macs)) != NAS_OK)
        goto oom;
    fprintf(f, "</div>\n<p id=\"front-sizes\">Front sizes: accuracy/latency %d, accuracy/MACs %d.</p>\n</section>\n",
            nf_lat, nf_macs);

    if ((rc = nas__report_rungs(f, st, r.exp.id, err)) != NAS_OK || /* issue 17 */
        (rc = nas__report_oneshot(f, st, r.exp.id, err)) != NAS_OK)  /* issue 32 */
        goto done;

    int nf = 0;
    if ((rc = front_table(&r, st, &nf, err)) != NAS_OK)
        goto done;
    if (n_front)
        *n_front = nf;

    int k_used = 0, chain = r.canon && strstr(r.canon, "\nspace.type = \"chain\"") != NULL;
    fprintf(f, "<section id=\"ops\"><h2>Ops in the best architectures</h2>\n");
    if ((rc = plot_ops(&r, chain, &k_used)) != NAS_OK)
        goto oom;
    fprintf(f, "<p>Blue: share of the %s carrying each op among the %d best feasible "
               "trials by validation accuracy; grey: among all feasible trials.</p></section>\n",
            chain ? "chain's layers (its op decisions)" : "cell's edges", k_used);

    if ((rc = final_table(&r, st, err)) != NAS_OK)
        goto done;
    failure_table(&r);
    nas__report_trial_table(f, r.t, r.n, &r.objcfg); /* issue 33 */

    fputs("<section id=\"config\"><h2>Configuration</h2>\n<p>The config file as written"
          "</p>\n<pre id=\"config-text\">", f);
    nas__report_html(f, r.conf_text);
    fputs("</pre>\n<details><summary>Every effective setting (canonical form: the experiment's "
          "identity)</summary>\n<pre id=\"config-canonical\">", f);
    nas__report_html(f, r.canon);
    fprintf(f, "</pre></details></section>\n<div id=\"tip\" hidden></div>\n<script>\n%s", SCRIPT);
    nas__report_trial_table_script(f); /* issue 33 */
    fputs("</script>\n</body>\n</html>\n", f);
    if (fflush(f) != 0 || ferror(f))
        rc = nas_error_set(err, NAS_EIO, "report: cannot write the page");
    goto done;
oom:
    rc = nas_error_set(err, NAS_ENOMEM, "report: out of memory");
done:
    free(r.t);
    free(r.conf_text);
    free(r.canon);
    return rc;
}

int nas_report_write_file(nas_store *st, const nas_report_opts *opts, const char *path,
                          int *n_front, nas_error *err)
{
    size_t n = strlen(path) + 5;
    char *tmp = malloc(n);
    if (!tmp)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    snprintf(tmp, n, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        int rc = nas_error_set(err, NAS_EIO, "cannot write %s: %s", tmp, strerror(errno));
        free(tmp);
        return rc;
    }
    int rc = nas_report_write(st, opts, f, n_front, err);
    if (fclose(f) != 0 && rc == NAS_OK)
        rc = nas_error_set(err, NAS_EIO, "cannot write %s: %s", tmp, strerror(errno));
    if (rc == NAS_OK && rename(tmp, path) != 0)
        rc = nas_error_set(err, NAS_EIO, "cannot rename %s to %s: %s", tmp, path,
                           strerror(errno));
    if (rc != NAS_OK)
        remove(tmp);
    free(tmp);
    return rc;
}
