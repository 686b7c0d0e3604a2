/*
 * search/fidelity.c - the multi-fidelity scheduler of nas/fidelity.h:
 * successive halving, Hyperband and ASHA over rungs of growing budget
 * (issue 17). Pure bookkeeping over the trials it was told about; the
 * controller (search/controller.c) asks it for jobs and reports results.
 */
#include <math.h>   /* isnan, INFINITY */
#include <stdlib.h> /* malloc, qsort */
#include <string.h> /* memset */
#include "nas/evaluator.h" /* nas_pareto_sort, nas_pareto_crowding */
#include "nas/fidelity.h"

/* ---- the published arithmetic ----------------------------------------------------- */

int nas_fid_smax(int64_t r, int64_t R, int eta)
{
    int s = 0;
    if (r < 1 || eta < 2)
        return 0;
    for (int64_t b = r; b <= R / eta && s < NAS_FID_MAX_RUNGS - 1; b *= eta)
        s++;
    return s;
}

static int64_t ipow(int64_t b, int e)
{
    int64_t p = 1;
    while (e-- > 0)
        p *= b;
    return p;
}

int64_t nas_fid_rung_budget(int64_t r, int64_t R, int eta, int k)
{
    int s_max = nas_fid_smax(r, R, eta);
    if (k >= s_max)
        return R;
    return r * ipow(eta, k < 0 ? 0 : k);
}

int64_t nas_fid_bracket_n(int s_max, int s, int eta)
{
    int64_t num = (int64_t)(s_max + 1) * ipow(eta, s);
    return (num + s) / (s + 1); /* ceil(num / (s + 1)) */
}

int64_t nas_fid_stage_n(int s_max, int s, int eta, int i)
{
    return nas_fid_bracket_n(s_max, s, eta) / ipow(eta, i);
}

/* ---- state ------------------------------------------------------------------------- */

typedef struct entry {
    int64_t trial;
    int bracket;
    int first;            /* rung it started at */
    int running;          /* rung of the job running now, -1 none */
    int top;              /* highest rung with a result, -1 none */
    int failed;
    int held;             /* ASHA replay: not promoted until nas_fid_release */
    uint32_t promoted;    /* bit k: promoted from rung k */
    double obj[NAS_FID_MAX_RUNGS][NAS_FID_MAX_OBJ]; /* results per rung */
} entry;

struct nas_fid {
    nas_fid_opts o;
    int s_max;
    int64_t budget[NAS_FID_MAX_RUNGS];
    entry *e;
    int n, cap;
    int64_t spent;
    int no_new;
    /* SH / Hyperband: the bracket being run */
    int bracket;     /* index, 0, 1, ...; -1 before the first */
    int s;           /* its s */
    int stage;       /* i */
    int64_t target;  /* jobs of this stage (stage 0: new trials) */
    int64_t issued;  /* of them handed out */
    int *cur;        /* entries of this stage (promotion order for i > 0) */
    int ncur;
    int has_pending_new; /* a NEW job was handed out and not yet added */
};

int nas_fid_create(const nas_fid_opts *o, nas_fid **out, nas_error *err)
{
    *out = NULL;
    if (!o || o->kind == NAS_FIDELITY_NONE || o->kind > NAS_FIDELITY_ASHA || o->eta < 2 ||
        o->min < 1 || o->max / o->eta < o->min || o->dims < 1 || o->dims > NAS_FID_MAX_OBJ)
        return nas_error_set(err, NAS_EINVAL,
                             "fidelity scheduler: bad options (scheduler %d, min %lld, max %lld, "
                             "eta %d, %d objectives): expected a scheduler, eta >= 2, min >= 1, "
                             "max >= min x eta, 1..%d objectives",
                             o ? (int)o->kind : -1, o ? (long long)o->min : 0,
                             o ? (long long)o->max : 0, o ? o->eta : 0, o ? o->dims : 0,
                             NAS_FID_MAX_OBJ);
    nas_fid *f = calloc(1, sizeof *f);
    if (!f)
        return nas_error_set(err, NAS_ENOMEM, "out of memory for the fidelity scheduler");
    f->o = *o;
    f->s_max = nas_fid_smax(o->min, o->max, o->eta);
    for (int k = 0; k <= f->s_max; k++)
        f->budget[k] = nas_fid_rung_budget(o->min, o->max, o->eta, k);
    f->bracket = -1;
    *out = f;
    return NAS_OK;
}

void nas_fid_destroy(nas_fid *f)
{
    if (!f)
        return;
    free(f->e);
    free(f->cur);
    free(f);
}

int nas_fid_rungs(const nas_fid *f) { return f->s_max + 1; }

int64_t nas_fid_spent(const nas_fid *f) { return f->spent; }

void nas_fid_charge(nas_fid *f, int64_t extra)
{
    if (extra > 0)
        f->spent += extra;
}

int64_t nas_fid_started(const nas_fid *f) { return f->n; }

int nas_fid_bracket(const nas_fid *f) { return f->o.kind == NAS_FIDELITY_ASHA ? 0 : f->bracket; }

int nas_fid_running(const nas_fid *f)
{
    int r = 0;
    for (int i = 0; i < f->n; i++)
        r += f->e[i].running >= 0;
    return r;
}

static int find(const nas_fid *f, int64_t trial)
{
    for (int i = 0; i < f->n; i++) /* few thousand trials at most: a scan is enough */
        if (f->e[i].trial == trial)
            return i;
    return -1;
}

int nas_fid_top_rung(const nas_fid *f, int64_t trial)
{
    int i = find(f, trial);
    return i < 0 ? -1 : f->e[i].top;
}

/* ---- ranking within a rung ------------------------------------------------------------ */

typedef struct rankrow {
    int idx;      /* entry */
    int front;    /* non-dominated rank (0 for one objective) */
    double crowd; /* crowding distance (0 for one objective) */
    double key;   /* first objective, larger is better */
    int64_t trial;
} rankrow;

static int cmp_rank(const void *pa, const void *pb)
{
    const rankrow *a = pa, *b = pb;
    if (a->front != b->front)
        return a->front < b->front ? -1 : 1;
    if (a->crowd != b->crowd)
        return a->crowd > b->crowd ? -1 : 1;
    if (a->key != b->key)
        return a->key > b->key ? -1 : 1;
    return a->trial < b->trial ? -1 : a->trial > b->trial;
}

/* Rank entries idx[0..m) (all with a result at rung k, none failed) best
 * first, in place. Returns NAS_ENOMEM or NAS_OK. */
static int rank_rung(const nas_fid *f, int k, int *idx, int m)
{
    if (m <= 1)
        return NAS_OK;
    int d = f->o.dims;
    rankrow *rows = calloc((size_t)m, sizeof *rows);
    double *pts = d > 1 ? malloc((size_t)m * d * sizeof *pts) : NULL;
    int *rk = d > 1 ? malloc((size_t)m * sizeof *rk) : NULL;
    double *cr = d > 1 ? malloc((size_t)m * sizeof *cr) : NULL;
    if (!rows || (d > 1 && (!pts || !rk || !cr))) {
        free(rows), free(pts), free(rk), free(cr);
        return NAS_ENOMEM;
    }
    for (int j = 0; j < m; j++) {
        const entry *e = &f->e[idx[j]];
        double v = e->obj[k][0];
        rows[j].idx = idx[j];
        rows[j].trial = e->trial;
        rows[j].key = isnan(v) ? -INFINITY : (f->o.maximize[0] ? v : -v);
        for (int o = 0; pts && o < d; o++) /* NaN: the worst value */
            pts[(size_t)j * d + o] = isnan(e->obj[k][o])
                                         ? (f->o.maximize[o] ? -INFINITY : INFINITY)
                                         : e->obj[k][o];
    }
    if (d > 1 && nas_pareto_sort(pts, m, d, f->o.maximize, rk) >= 0 &&
        nas_pareto_crowding(pts, m, d, rk, cr) >= 0) {
        for (int j = 0; j < m; j++) {
            rows[j].front = rk[j] < 0 ? m : rk[j];
            rows[j].crowd = isnan(cr[j]) ? -INFINITY : cr[j];
        }
    }
    qsort(rows, (size_t)m, sizeof *rows, cmp_rank);
    for (int j = 0; j < m; j++)
        idx[j] = rows[j].idx;
    free(rows), free(pts), free(rk), free(cr);
    return NAS_OK;
}

/* ---- jobs ---------------------------------------------------------------------------- */

static void job_new(nas_fid *f, nas_fid_job *job, int rung)
{
    job->kind = NAS_FID_NEW;
    job->trial = -1;
    job->rung = rung;
    job->from = 0;
    job->to = f->budget[rung];
    f->has_pending_new = 1;
}

static void job_promote(nas_fid *f, nas_fid_job *job, int i, int from_rung)
{
    entry *e = &f->e[i];
    e->promoted |= 1u << from_rung;
    e->running = from_rung + 1;
    job->kind = NAS_FID_PROMOTE;
    job->trial = e->trial;
    job->rung = from_rung + 1;
    job->bracket = e->bracket;
    job->from = f->budget[from_rung];
    job->to = f->budget[from_rung + 1];
    f->spent += job->to - job->from;
}

static int64_t new_left(const nas_fid *f)
{
    if (f->no_new)
        return 0;
    if (f->o.max_new <= 0)
        return INT64_MAX;
    return f->o.max_new - f->n;
}

/* ASHA: the entries with a result at rung k (not failed, started at or
 * below it) ranked best first into idx[f->n]; returns how many of them
 * are in its top 1/eta (0: none yet, or out of memory). */
static int asha_top(const nas_fid *f, int k, int *idx)
{
    int m = 0;
    for (int i = 0; i < f->n; i++)
        if (f->e[i].top >= k && !f->e[i].failed && f->e[i].first <= k)
            idx[m++] = i;
    int keep = m / f->o.eta;
    return keep > 0 && rank_rung(f, k, idx, m) == NAS_OK ? keep : 0;
}

/* ASHA, once no new trial may start: 1 when rung k may still gain a
 * result, so that keep = floor(|rung k| / eta) grows - a job runs at or
 * below k, or a rung below k has a trial next_asha will promote (in its
 * top 1/eta, not promoted, not running), which may go on up to k. Uses
 * idx[f->n] as scratch. */
static int asha_may_join(const nas_fid *f, int k, int *idx)
{
    for (int j = 0; j < f->n; j++)
        if (f->e[j].running >= 0 && f->e[j].running <= k)
            return 1;
    for (int b = 0; b < k; b++) {
        int keep = asha_top(f, b, idx);
        for (int j = 0; j < keep; j++)
            if (!(f->e[idx[j]].promoted & (1u << b)) && f->e[idx[j]].running < 0)
                return 1;
    }
    return 0;
}

/* ASHA (Li et al. 2020, Algorithm 2). */
static void next_asha(nas_fid *f, nas_fid_job *job)
{
    int *idx = malloc((size_t)(f->n > 0 ? f->n : 1) * sizeof *idx);
    for (int k = f->s_max - 1; idx && k >= 0; k--) {
        int keep = asha_top(f, k, idx);
        for (int j = 0; j < keep; j++) {
            if (!(f->e[idx[j]].promoted & (1u << k)) && f->e[idx[j]].running < 0 &&
                !f->e[idx[j]].held) {
                job_promote(f, job, idx[j], k);
                free(idx);
                return;
            }
        }
    }
    free(idx);
    job->bracket = 0;
    if (new_left(f) > 0) {
        job_new(f, job, 0);
        return;
    }
    job->kind = nas_fid_running(f) ? NAS_FID_WAIT : NAS_FID_DONE;
    job->trial = -1;
}

/* SH / Hyperband: begin bracket f->bracket + 1 (0 new trials: none left). */
static void bracket_begin(nas_fid *f)
{
    f->bracket++;
    f->s = f->o.kind == NAS_FIDELITY_SH ? f->s_max : f->s_max - f->bracket % (f->s_max + 1);
    f->stage = 0;
    int64_t n = nas_fid_bracket_n(f->s_max, f->s, f->o.eta), left = new_left(f);
    f->target = n < left ? n : left;
    f->issued = 0;
    f->ncur = 0;
}

/* All of this stage's jobs handed out and their results in. */
static int stage_complete(const nas_fid *f)
{
    if (f->issued < f->target)
        return 0;
    int rung = f->s_max - f->s + f->stage;
    for (int j = 0; j < f->ncur; j++) {
        const entry *e = &f->e[f->cur[j]];
        if (!e->failed && e->top < rung)
            return 0;
    }
    return 1;
}

/* Promote the best floor(n_i / eta) of the finished stage into f->cur.
 * Returns how many (0: the bracket is over), or -1 out of memory. */
static int stage_promote(nas_fid *f)
{
    int rung = f->s_max - f->s + f->stage;
    if (rung >= f->s_max)
        return 0;
    int m = 0;
    for (int j = 0; j < f->ncur; j++)
        if (!f->e[f->cur[j]].failed)
            f->cur[m++] = f->cur[j];
    int keep = f->ncur / f->o.eta; /* floor(n_i / eta) of the stage, failures included */
    if (keep > m)
        keep = m;
    if (rank_rung(f, rung, f->cur, m) != NAS_OK)
        return -1;
    f->ncur = keep;
    f->stage++;
    f->target = keep;
    f->issued = 0;
    return keep;
}

static void next_sync(nas_fid *f, nas_fid_job *job)
{
    if (f->bracket < 0)
        bracket_begin(f);
    for (;;) {
        job->bracket = f->bracket;
        int rung = f->s_max - f->s + f->stage;
        if (f->stage == 0 && f->issued < f->target) {
            if (new_left(f) <= 0) { /* the budget ran out inside the bracket */
                f->target = f->issued;
                continue;
            }
            job_new(f, job, rung);
            return;
        }
        if (f->stage > 0 && f->issued < f->target) {
            job_promote(f, job, f->cur[f->issued++], rung - 1);
            return;
        }
        if (!stage_complete(f)) {
            job->kind = NAS_FID_WAIT;
            job->trial = -1;
            return;
        }
        int kept = f->target > 0 ? stage_promote(f) : 0;
        if (kept > 0)
            continue;
        if (kept < 0 || new_left(f) <= 0) { /* out of memory: stop handing out work */
            job->kind = nas_fid_running(f) ? NAS_FID_WAIT : NAS_FID_DONE;
            job->trial = -1;
            return;
        }
        bracket_begin(f);
    }
}

void nas_fid_next(nas_fid *f, nas_fid_job *job)
{
    memset(job, 0, sizeof *job);
    job->trial = -1;
    if (f->has_pending_new) { /* the caller must add (or give up on) the last NEW first */
        job->kind = NAS_FID_WAIT;
        return;
    }
    if (f->o.kind == NAS_FIDELITY_ASHA)
        next_asha(f, job);
    else
        next_sync(f, job);
}

int nas_fid_add(nas_fid *f, int64_t trial, const nas_fid_job *job, nas_error *err)
{
    if (!job || job->kind != NAS_FID_NEW || !f->has_pending_new || find(f, trial) >= 0)
        return nas_error_set(err, NAS_EINVAL, "fidelity scheduler: trial %lld is not a new "
                             "trial's job", (long long)trial);
    if (f->n == f->cap) {
        int cap = f->cap ? 2 * f->cap : 64;
        entry *e = realloc(f->e, (size_t)cap * sizeof *e);
        int *cur = realloc(f->cur, (size_t)cap * sizeof *cur);
        if (e)
            f->e = e;
        if (cur)
            f->cur = cur;
        if (!e || !cur)
            return nas_error_set(err, NAS_ENOMEM, "out of memory for the fidelity scheduler");
        f->cap = cap;
    }
    entry *e = &f->e[f->n];
    memset(e, 0, sizeof *e);
    e->trial = trial;
    e->bracket = job->bracket;
    e->first = job->rung;
    e->running = job->rung;
    e->top = -1;
    if (f->o.kind != NAS_FIDELITY_ASHA) {
        f->cur[f->ncur++] = f->n;
        f->issued++;
    }
    f->n++;
    f->spent += job->to;
    f->has_pending_new = 0;
    return NAS_OK;
}

int nas_fid_hold(nas_fid *f, const nas_fid_job *job)
{
    int i = job && job->kind == NAS_FID_PROMOTE ? find(f, job->trial) : -1;
    if (i < 0 || f->o.kind != NAS_FIDELITY_ASHA || f->e[i].running != job->rung ||
        job->rung < 1)
        return NAS_EINVAL;
    entry *e = &f->e[i];
    e->promoted &= ~(1u << (job->rung - 1));
    e->running = -1;
    e->held = 1;
    f->spent -= job->to - job->from;
    return NAS_OK;
}

int nas_fid_release(nas_fid *f)
{
    int n = 0;
    for (int i = 0; i < f->n; i++) {
        n += f->e[i].held;
        f->e[i].held = 0;
    }
    return n;
}

void nas_fid_no_new(nas_fid *f)
{
    f->no_new = 1;
    f->has_pending_new = 0;
}

int nas_fid_report(nas_fid *f, int64_t trial, int rung, int ok, const double *obj,
                   nas_error *err)
{
    int i = find(f, trial);
    if (i < 0 || rung < 0 || rung > f->s_max || f->e[i].running != rung)
        return nas_error_set(err, NAS_EINVAL, "fidelity scheduler: trial %lld is not running "
                             "rung %d", (long long)trial, rung);
    entry *e = &f->e[i];
    e->running = -1;
    if (!ok) {
        e->failed = 1;
        return NAS_OK;
    }
    for (int o = 0; o < f->o.dims; o++)
        e->obj[rung][o] = obj ? obj[o] : NAN;
    e->top = rung;
    return NAS_OK;
}

int nas_fid_promotable(const nas_fid *f, int64_t trial)
{
    int i = find(f, trial);
    if (i < 0)
        return 0;
    const entry *e = &f->e[i];
    if (e->failed || e->top >= f->s_max)
        return 0;
    if (e->running >= 0 || e->top < 0)
        return 1;
    if (f->o.kind != NAS_FIDELITY_ASHA) { /* chosen and not yet started, or its stage open */
        for (int64_t j = f->issued; j < f->target && f->stage > 0 && j < f->ncur; j++)
            if (f->cur[j] == i)
                return 1;
        return e->bracket == f->bracket && f->s_max - f->s + f->stage == e->top;
    }
    if (new_left(f) > 0)
        return 1;
    int *idx = malloc((size_t)f->n * sizeof *idx);
    if (!idx)
        return 1; /* out of memory: keep the checkpoint */
    /* a trial may still join its rung and lift it into the top 1/eta; or it
     * is in that top and not promoted yet: next_asha promotes it */
    int in = asha_may_join(f, e->top, idx), keep = in ? 0 : asha_top(f, e->top, idx);
    for (int j = 0; j < keep && !in; j++)
        in = idx[j] == i && !(e->promoted & (1u << e->top));
    free(idx);
    return in;
}
