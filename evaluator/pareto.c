/*
 * evaluator/pareto.c - Pareto dominance, the non-dominated front, non-dominated
 * sorting, crowding distance and objective values of a trial result (see
 * nas/evaluator.h, "Pareto front and objectives").
 *
 * Deb, Pratap, Agarwal, Meyarivan, "A Fast and Elitist Multiobjective
 * Genetic Algorithm: NSGA-II", IEEE Transactions on Evolutionary
 * Computation 6(2), 2002: dominance (section II), non-dominated sorting
 * (III-A, here by repeated peeling of the front, which needs O(n) memory
 * instead of the paper's O(n^2) domination lists) and crowding distance
 * (III-B).
 */
#include <math.h>   /* isfinite, INFINITY, NAN */
#include <stdlib.h> /* malloc, free, qsort */
#include <string.h> /* strcmp */
#include "nas/evaluator.h"

int nas_pareto_dominates(const double *a, const double *b, int dims, const int *maximize)
{
    int strictly = 0;
    for (int d = 0; d < dims; d++) {
        double x = a[d], y = b[d];
        if (x == y)
            continue;
        int a_better = maximize[d] ? x > y : x < y;
        if (!a_better)
            return 0;
        strictly = 1;
    }
    return strictly;
}

static int args_ok(const double *points, int n, int dims, const int *maximize, const void *out)
{
    if (n < 0 || dims < 1 || dims > NAS_PARETO_MAX_DIMS)
        return 0;
    return n == 0 || (points && maximize && out);
}

static int point_finite(const double *p, int dims)
{
    for (int d = 0; d < dims; d++)
        if (!isfinite(p[d]))
            return 0;
    return 1;
}

int nas_pareto_front(const double *points, int n, int dims, const int *maximize,
                     unsigned char *on_front)
{
    if (!args_ok(points, n, dims, maximize, on_front))
        return NAS_EINVAL;
    int count = 0;
    for (int i = 0; i < n; i++) {
        const double *p = points + (size_t)i * dims;
        int front = point_finite(p, dims);
        for (int j = 0; front && j < n; j++) {
            const double *q = points + (size_t)j * dims;
            if (j != i && point_finite(q, dims) && nas_pareto_dominates(q, p, dims, maximize))
                front = 0;
        }
        on_front[i] = (unsigned char)front;
        count += front;
    }
    return count;
}

int nas_pareto_sort(const double *points, int n, int dims, const int *maximize, int *rank)
{
    if (!args_ok(points, n, dims, maximize, rank))
        return NAS_EINVAL;
    /* Peel fronts: a point joins front r when no point still unranked
     * (before front r was formed) dominates it. `left` lists those points. */
    int *left = malloc((size_t)(n > 0 ? n : 1) * sizeof *left);
    unsigned char *in_front = malloc((size_t)(n > 0 ? n : 1));
    if (!left || !in_front) {
        free(left);
        free(in_front);
        return NAS_ENOMEM;
    }
    int nleft = 0;
    for (int i = 0; i < n; i++) {
        rank[i] = -1;
        if (point_finite(points + (size_t)i * dims, dims))
            left[nleft++] = i;
    }
    int fronts = 0;
    while (nleft > 0) {
        for (int a = 0; a < nleft; a++) {
            const double *p = points + (size_t)left[a] * dims;
            in_front[a] = 1;
            for (int b = 0; b < nleft && in_front[a]; b++)
                if (b != a && nas_pareto_dominates(points + (size_t)left[b] * dims, p, dims, maximize))
                    in_front[a] = 0;
        }
        int keep = 0;
        for (int a = 0; a < nleft; a++) {
            if (in_front[a])
                rank[left[a]] = fronts;
            else
                left[keep++] = left[a];
        }
        nleft = keep; /* never stuck: a finite set always has a non-dominated point */
        fronts++;
    }
    free(left);
    free(in_front);
    return fronts;
}

typedef struct crowd_key {
    double v;
    int i;
} crowd_key;

static int crowd_cmp(const void *pa, const void *pb)
{
    const crowd_key *a = pa, *b = pb;
    if (a->v < b->v)
        return -1;
    if (a->v > b->v)
        return 1;
    return (a->i > b->i) - (a->i < b->i);
}

int nas_pareto_crowding(const double *points, int n, int dims, const int *rank, double *crowd)
{
    if (n < 0 || dims < 1 || dims > NAS_PARETO_MAX_DIMS || (n > 0 && (!points || !rank || !crowd)))
        return NAS_EINVAL;
    if (n == 0)
        return NAS_OK;
    int max_rank = -1;
    for (int i = 0; i < n; i++) {
        crowd[i] = rank[i] >= 0 ? 0.0 : NAN;
        if (rank[i] > max_rank)
            max_rank = rank[i];
    }
    crowd_key *keys = malloc((size_t)n * sizeof *keys);
    if (!keys)
        return NAS_ENOMEM;
    for (int r = 0; r <= max_rank; r++) {
        for (int d = 0; d < dims; d++) {
            int m = 0;
            for (int i = 0; i < n; i++)
                if (rank[i] == r)
                    keys[m++] = (crowd_key){points[(size_t)i * dims + d], i};
            if (m == 0)
                break; /* an empty rank (cannot happen with nas_pareto_sort output) */
            qsort(keys, (size_t)m, sizeof *keys, crowd_cmp);
            crowd[keys[0].i] = INFINITY;
            crowd[keys[m - 1].i] = INFINITY;
            double range = keys[m - 1].v - keys[0].v;
            if (!(range > 0))
                continue;
            for (int k = 1; k + 1 < m; k++)
                crowd[keys[k].i] += (keys[k + 1].v - keys[k - 1].v) / range;
        }
    }
    free(keys);
    return NAS_OK;
}

double nas_objective_value(const char *metric, const nas_trial_result *res)
{
    if (!metric || !res || res->status != NAS_OK)
        return NAN;
    double v;
    if (strcmp(metric, "val_accuracy") == 0)
        v = res->val_accuracy;
    else if (strcmp(metric, "latency_ms") == 0)
        v = res->latency_ms;
    else if (strcmp(metric, "macs") == 0)
        v = res->macs > 0 ? (double)res->macs : NAN;
    else if (strcmp(metric, "params") == 0)
        v = res->params > 0 ? (double)res->params : NAN;
    else
        v = NAN;
    return isfinite(v) ? v : NAN;
}
