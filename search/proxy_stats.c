/*
 * search/proxy_stats.c - the statistics of `nas proxy-check` (issue 30,
 * docs/proxy.md): the one-way random-effects analysis of a table of
 * scores (architectures x seeds) and rank correlations. Pure arithmetic:
 * no I/O, no allocation beyond small scratch arrays.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "nas/search.h"

int nas_proxy_anova(const double *x, int n, int s, nas_proxy_anova_stats *out)
{
    memset(out, 0, sizeof *out);
    out->mean = out->sd_within = out->sd_between = out->icc = NAN;
    if (!x || n < 0 || s < 0)
        return NAS_EINVAL;
    out->s = s;
    if (n < 2 || s < 2)
        return NAS_OK;
    out->n = n;
    double grand = 0, ssw = 0, ssb = 0;
    for (int i = 0; i < n * s; i++)
        grand += x[i];
    grand /= (double)n * s;
    for (int i = 0; i < n; i++) {
        double m = 0;
        for (int j = 0; j < s; j++)
            m += x[i * s + j];
        m /= s;
        for (int j = 0; j < s; j++)
            ssw += (x[i * s + j] - m) * (x[i * s + j] - m);
        ssb += s * (m - grand) * (m - grand);
    }
    double msw = ssw / ((double)n * (s - 1)), msb = ssb / (n - 1);
    double var_b = (msb - msw) / s; /* the variance component of the architectures */
    out->mean = grand;
    out->ms_within = msw;
    out->ms_between = msb;
    out->sd_within = sqrt(msw);
    out->sd_between = var_b > 0 ? sqrt(var_b) : 0;
    out->icc = msb + (s - 1) * msw > 0 ? (msb - msw) / (msb + (s - 1) * msw) : NAN;
    return NAS_OK;
}

/* Mid-ranks (1-based; ties share the mean of their ranks) of x[0..n). */
static void mid_ranks(const double *x, int n, double *rank)
{
    for (int i = 0; i < n; i++) {
        int below = 0, equal = 0;
        for (int j = 0; j < n; j++) {
            below += x[j] < x[i];
            equal += x[j] == x[i];
        }
        rank[i] = below + (equal + 1) / 2.0;
    }
}

double nas_rank_spearman(const double *a, const double *b, int n)
{
    if (!a || !b || n < 2)
        return NAN;
    double *r = malloc(2 * (size_t)n * sizeof *r);
    if (!r)
        return NAN;
    mid_ranks(a, n, r);
    mid_ranks(b, n, r + n);
    double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
    for (int i = 0; i < n; i++)
        ma += r[i], mb += r[n + i];
    ma /= n;
    mb /= n;
    for (int i = 0; i < n; i++) {
        double da = r[i] - ma, db = r[n + i] - mb;
        sab += da * db, saa += da * da, sbb += db * db;
    }
    free(r);
    return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : NAN;
}

double nas_rank_kendall(const double *a, const double *b, int n)
{
    if (!a || !b || n < 2)
        return NAN;
    double concord = 0; /* concordant minus discordant pairs */
    long pairs_a = 0, pairs_b = 0; /* pairs not tied in a, in b */
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            int sa = (a[i] > a[j]) - (a[i] < a[j]), sb = (b[i] > b[j]) - (b[i] < b[j]);
            concord += sa * sb;
            pairs_a += sa != 0;
            pairs_b += sb != 0;
        }
    return pairs_a > 0 && pairs_b > 0 ? concord / sqrt((double)pairs_a * pairs_b) : NAN;
}
