/*
 * tests/unit/test_fidelity.c - the multi-fidelity scheduler (nas/fidelity.h,
 * issue 17) against the published definitions, written out by hand for
 * small cases:
 *   - Hyperband (Li et al., JMLR 2017, Algorithm 1) for R = 27, r = 1,
 *     eta = 3: s_max = 3, brackets of 27, 12, 6 and 4 trials, stages
 *     (27@1 9@3 3@9 1@27), (12@3 4@9 1@27), (6@9 2@27), (4@27);
 *   - successive halving (Jamieson & Talwalkar 2016) on a 9-trial learning
 *     curve table whose curves cross, so a promotion must use the rung's
 *     own result;
 *   - ASHA (Li et al., MLSys 2020, Algorithm 2) on the same table, job by
 *     job;
 *   - budget accounting with continued training (a promotion costs the
 *     difference of the rung budgets) and without (the papers' sum);
 *   - promotion by non-dominated sorting with two objectives.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>
#include "nas/fidelity.h"

/* ---- the synthetic learning-curve table (trial 1..9 at budgets 1, 3, 9) ------ */

static const double CURVE9[10][3] = {
    {0, 0, 0},
    {0.50, 0.60, 0.65}, /* t1 */
    {0.70, 0.97, 0.98}, /* t2: third at budget 1, best at budget 3 */
    {0.60, 0.65, 0.70}, /* t3 */
    {0.20, 0.50, 0.70}, /* t4 */
    {0.90, 0.95, 0.96}, /* t5 */
    {0.30, 0.40, 0.45}, /* t6 */
    {0.40, 0.45, 0.50}, /* t7 */
    {0.10, 0.20, 0.30}, /* t8 */
    {0.80, 0.85, 0.99}, /* t9: second at budget 1 and 3, best at 9 */
};

static nas_fid *make(nas_fidelity_scheduler kind, int64_t r, int64_t R, int eta, int64_t max_new)
{
    nas_fid_opts o = {kind, r, R, eta, max_new, 1, {1}};
    nas_fid *f = NULL;
    nas_error err = {0};
    assert_int_equal(nas_fid_create(&o, &f, &err), NAS_OK);
    return f;
}

/* One worker: take the next job, run it at once (report curve[trial][rung]). */
static nas_fid_kind step(nas_fid *f, int64_t *next_id, double (*value)(int64_t, int),
                         nas_fid_job *job)
{
    nas_error err = {0};
    nas_fid_next(f, job);
    if (job->kind == NAS_FID_NEW) {
        job->trial = (*next_id)++;
        assert_int_equal(nas_fid_add(f, job->trial, job, &err), NAS_OK);
    }
    if (job->kind == NAS_FID_NEW || job->kind == NAS_FID_PROMOTE) {
        double v = value(job->trial, job->rung);
        assert_int_equal(nas_fid_report(f, job->trial, job->rung, 1, &v, &err), NAS_OK);
    }
    return job->kind;
}

static double curve9(int64_t t, int rung) { return CURVE9[t][rung]; }

static void test_arithmetic(void **state)
{
    (void)state;
    assert_int_equal(nas_fid_smax(1, 27, 3), 3);
    assert_int_equal(nas_fid_smax(1, 26, 3), 2);
    assert_int_equal(nas_fid_smax(1, 81, 3), 4);
    assert_int_equal(nas_fid_smax(1000, 60000, 3), 3); /* 1000 3000 9000 27000, then 60000 */
    /* rung budgets r eta^k, R at the top */
    assert_int_equal(nas_fid_rung_budget(1, 27, 3, 0), 1);
    assert_int_equal(nas_fid_rung_budget(1, 27, 3, 1), 3);
    assert_int_equal(nas_fid_rung_budget(1, 27, 3, 2), 9);
    assert_int_equal(nas_fid_rung_budget(1, 27, 3, 3), 27);
    assert_int_equal(nas_fid_rung_budget(1000, 60000, 3, 2), 9000);
    assert_int_equal(nas_fid_rung_budget(1000, 60000, 3, 3), 60000);
    /* Hyperband's bracket sizes for R = 27, eta = 3 (and Li et al.'s
     * Table 1, R = 81: 81, 34, 15, 8, 5) */
    assert_int_equal(nas_fid_bracket_n(3, 3, 3), 27);
    assert_int_equal(nas_fid_bracket_n(3, 2, 3), 12);
    assert_int_equal(nas_fid_bracket_n(3, 1, 3), 6);
    assert_int_equal(nas_fid_bracket_n(3, 0, 3), 4);
    assert_int_equal(nas_fid_bracket_n(4, 4, 3), 81);
    assert_int_equal(nas_fid_bracket_n(4, 3, 3), 34);
    assert_int_equal(nas_fid_bracket_n(4, 2, 3), 15);
    assert_int_equal(nas_fid_bracket_n(4, 1, 3), 8);
    assert_int_equal(nas_fid_bracket_n(4, 0, 3), 5);
    /* stages n_i = floor(n eta^-i): Table 1's columns, R = 81 */
    static const int64_t t1[5][5] = {{81, 27, 9, 3, 1}, {34, 11, 3, 1}, {15, 5, 1}, {8, 2}, {5}};
    for (int s = 4; s >= 0; s--)
        for (int i = 0; i <= s; i++)
            assert_int_equal(nas_fid_stage_n(4, s, 3, i), t1[4 - s][i]);
}

/* Hyperband, R = 27, eta = 3, one worker: every job's (bracket, rung) in
 * order, the bracket and stage sizes, and the budget spent. */
static double linear(int64_t t, int rung) { return (double)((t * 7) % 11) + rung; }

static void test_hyperband_27(void **state)
{
    (void)state;
    nas_fid *f = make(NAS_FIDELITY_HYPERBAND, 1, 27, 3, 49);
    assert_int_equal(nas_fid_rungs(f), 4);
    /* count[bracket][rung]: jobs run */
    int count[4][4] = {{0}};
    int64_t id = 1, papers = 0;
    nas_fid_job job;
    int jobs = 0;
    while (step(f, &id, linear, &job) != NAS_FID_DONE) {
        assert_int_not_equal(job.kind, NAS_FID_WAIT); /* one worker never waits */
        assert_in_range(job.bracket, 0, 3);
        count[job.bracket][job.rung]++;
        papers += job.to;
        jobs++;
        assert_true(jobs < 1000);
    }
    static const int want[4][4] = {
        {27, 9, 3, 1}, /* s = 3 */
        {0, 12, 4, 1}, /* s = 2 */
        {0, 0, 6, 2},  /* s = 1 */
        {0, 0, 0, 4},  /* s = 0 */
    };
    for (int b = 0; b < 4; b++)
        for (int k = 0; k < 4; k++)
            if (count[b][k] != want[b][k])
                fail_msg("bracket %d rung %d: %d jobs, expected %d", b, k, count[b][k], want[b][k]);
    assert_int_equal(nas_fid_started(f), 49);
    /* continued training: 27 + 9x2 + 3x6 + 1x18 = 81; 12x3 + 4x6 + 18 = 78;
     * 6x9 + 2x18 = 90; 4x27 = 108 */
    assert_int_equal(nas_fid_spent(f), 81 + 78 + 90 + 108);
    /* from scratch (the papers' accounting, sum of n_i r_i per bracket) */
    assert_int_equal(papers, (27 + 27 + 27 + 27) + (36 + 36 + 27) + (54 + 54) + 108);
    nas_fid_destroy(f);
}

/* Successive halving, R = 9, eta = 3 on CURVE9: 9 trials at budget 1, the
 * best 3 at budget 1 (t5, t9, t2) to budget 3, the best of those at
 * budget 3 (t2, 0.97, though third at budget 1) to 9. */
static void test_sh_promotions(void **state)
{
    (void)state;
    nas_fid *f = make(NAS_FIDELITY_SH, 1, 9, 3, 9);
    int64_t id = 1;
    nas_fid_job job;
    for (int i = 0; i < 9; i++) {
        assert_int_equal(step(f, &id, curve9, &job), NAS_FID_NEW);
        assert_int_equal(job.rung, 0);
        assert_int_equal(job.trial, i + 1);
        assert_int_equal(job.to, 1);
    }
    static const int64_t r1[3] = {5, 9, 2};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(step(f, &id, curve9, &job), NAS_FID_PROMOTE);
        assert_int_equal(job.trial, r1[i]);
        assert_int_equal(job.rung, 1);
        assert_int_equal(job.from, 1);
        assert_int_equal(job.to, 3);
    }
    assert_int_equal(step(f, &id, curve9, &job), NAS_FID_PROMOTE);
    assert_int_equal(job.trial, 2);
    assert_int_equal(job.rung, 2);
    assert_int_equal(job.from, 3);
    assert_int_equal(job.to, 9);
    assert_int_equal(step(f, &id, curve9, &job), NAS_FID_DONE);
    assert_int_equal(nas_fid_spent(f), 9 + 3 * 2 + 6);
    assert_int_equal(nas_fid_top_rung(f, 2), 2);
    assert_int_equal(nas_fid_top_rung(f, 5), 1);
    assert_int_equal(nas_fid_top_rung(f, 9), 1);
    assert_int_equal(nas_fid_top_rung(f, 1), 0);
    for (int64_t t = 1; t <= 9; t++) /* the bracket is over: no checkpoint is needed */
        assert_int_equal(nas_fid_promotable(f, t), 0);
    nas_fid_destroy(f);
}

/* Synchronous SH with several workers: the stage waits for its results;
 * trials outside the promoted set lose their checkpoints' use. */
static void test_sh_waits(void **state)
{
    (void)state;
    nas_fid *f = make(NAS_FIDELITY_SH, 1, 9, 3, 9);
    nas_error err = {0};
    nas_fid_job job;
    for (int64_t t = 1; t <= 9; t++) {
        nas_fid_next(f, &job);
        assert_int_equal(job.kind, NAS_FID_NEW);
        nas_fid_job again;
        nas_fid_next(f, &again); /* nothing else before the NEW is added */
        assert_int_equal(again.kind, NAS_FID_WAIT);
        assert_int_equal(nas_fid_add(f, t, &job, &err), NAS_OK);
    }
    nas_fid_next(f, &job);
    assert_int_equal(job.kind, NAS_FID_WAIT);
    assert_int_equal(nas_fid_running(f), 9);
    for (int64_t t = 9; t >= 1; t--) { /* results in any order */
        assert_int_equal(nas_fid_promotable(f, t), 1);
        double v = CURVE9[t][0];
        assert_int_equal(nas_fid_report(f, t, 0, 1, &v, &err), NAS_OK);
        if (t > 1) {
            nas_fid_next(f, &job);
            assert_int_equal(job.kind, NAS_FID_WAIT);
        }
    }
    double v = 0;
    assert_int_equal(nas_fid_report(f, 3, 0, 1, &v, &err), NAS_EINVAL); /* not running */
    nas_fid_next(f, &job);
    assert_int_equal(job.kind, NAS_FID_PROMOTE);
    assert_int_equal(job.trial, 5);
    assert_int_equal(nas_fid_promotable(f, 9), 1); /* chosen, not yet started */
    assert_int_equal(nas_fid_promotable(f, 1), 0); /* lost */
    assert_int_equal(nas_fid_promotable(f, 3), 0);
    nas_fid_destroy(f);
}

/* ASHA, R = 9, eta = 3, one worker on CURVE9, job by job as Algorithm 2
 * decides them (worked out in the comments). */
static void test_asha_sequence(void **state)
{
    (void)state;
    nas_fid *f = make(NAS_FIDELITY_ASHA, 1, 9, 3, 9);
    int64_t id = 1;
    nas_fid_job job;
    static const struct {
        nas_fid_kind kind;
        int64_t trial;
        int rung;
    } want[] = {
        {NAS_FID_NEW, 1, 0},     {NAS_FID_NEW, 2, 0},
        {NAS_FID_NEW, 3, 0},     /* rung 0 = {1,2,3}: top 1 = t2 */
        {NAS_FID_PROMOTE, 2, 1}, /* rung 1 = {2}: top 0; rung 0 top 1 promoted */
        {NAS_FID_NEW, 4, 0},     /* 4 results: top 1 = t2 */
        {NAS_FID_NEW, 5, 0},     /* 5 results: top 1 = t5 */
        {NAS_FID_PROMOTE, 5, 1}, /* rung 1 = {2,5}: top 0 */
        {NAS_FID_NEW, 6, 0},     /* 6 results: top 2 = t5, t2, both promoted */
        {NAS_FID_NEW, 7, 0},     {NAS_FID_NEW, 8, 0},
        {NAS_FID_NEW, 9, 0},     /* 9 results: top 3 = t5, t9, t2 */
        {NAS_FID_PROMOTE, 9, 1}, /* rung 1 = {2,5,9}: top 1 = t2 (0.97) */
        {NAS_FID_PROMOTE, 2, 2}, /* no new trials left */
        {NAS_FID_DONE, -1, 0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        nas_fid_kind k = step(f, &id, curve9, &job);
        if (k != want[i].kind || (k != NAS_FID_DONE && (job.trial != want[i].trial ||
                                                         job.rung != want[i].rung)))
            fail_msg("job %zu: kind %d trial %lld rung %d, expected kind %d trial %lld rung %d",
                     i + 1, (int)k, (long long)job.trial, job.rung, (int)want[i].kind,
                     (long long)want[i].trial, want[i].rung);
    }
    assert_int_equal(nas_fid_spent(f), 9 + 3 * 2 + 6);
    nas_fid_charge(f, 1); /* issue 29: a promotion trained from 0 (its checkpoint gone) */
    nas_fid_charge(f, -5); /* ignored */
    assert_int_equal(nas_fid_spent(f), 9 + 3 * 2 + 6 + 1);
    assert_int_equal(nas_fid_promotable(f, 9), 0); /* nothing can join rung 1 any more */
    assert_int_equal(nas_fid_promotable(f, 2), 0); /* top rung */
    nas_fid_destroy(f);
}

/* ASHA never waits while new trials may start: N workers stay busy. */
static void test_asha_async(void **state)
{
    (void)state;
    nas_fid *f = make(NAS_FIDELITY_ASHA, 1, 9, 3, 0);
    nas_error err = {0};
    nas_fid_job job;
    for (int64_t t = 1; t <= 4; t++) { /* four workers, no result yet */
        nas_fid_next(f, &job);
        assert_int_equal(job.kind, NAS_FID_NEW);
        assert_int_equal(nas_fid_add(f, t, &job, &err), NAS_OK);
    }
    assert_int_equal(nas_fid_running(f), 4);
    for (int64_t t = 1; t <= 3; t++) {
        double v = CURVE9[t][0];
        assert_int_equal(nas_fid_report(f, t, 0, 1, &v, &err), NAS_OK);
    }
    nas_fid_next(f, &job); /* t4 still running: t2 is already in the top 1/3 */
    assert_int_equal(job.kind, NAS_FID_PROMOTE);
    assert_int_equal(job.trial, 2);
    /* a failed trial is never promoted */
    double v = 0.99;
    assert_int_equal(nas_fid_report(f, 4, 0, 0, &v, &err), NAS_OK);
    assert_int_equal(nas_fid_promotable(f, 4), 0);
    nas_fid_destroy(f);
}

/* ASHA once no trial can join a rung (no new trials left, none running
 * below): a trial in the rung's top 1/eta that is not promoted yet is
 * still promotable (its checkpoint is needed: the next job promotes it);
 * the others are not. (nas_fid_promotable said 0 for it, so a search
 * deleted the checkpoint its promotion then missed.) */
static void test_asha_last_in_top(void **state)
{
    (void)state;
    nas_fid *f = make(NAS_FIDELITY_ASHA, 1, 9, 3, 3);
    nas_error err = {0};
    nas_fid_job job;
    for (int64_t t = 1; t <= 3; t++) { /* three workers, all the new trials */
        nas_fid_next(f, &job);
        assert_int_equal(job.kind, NAS_FID_NEW);
        assert_int_equal(nas_fid_add(f, t, &job, &err), NAS_OK);
    }
    for (int64_t t = 1; t <= 3; t++) {
        double v = CURVE9[t][0];
        assert_int_equal(nas_fid_report(f, t, 0, 1, &v, &err), NAS_OK);
    }
    assert_int_equal(nas_fid_running(f), 0);
    assert_int_equal(nas_fid_promotable(f, 2), 1); /* best at budget 1: the top 1/3 */
    assert_int_equal(nas_fid_promotable(f, 1), 0);
    assert_int_equal(nas_fid_promotable(f, 3), 0);
    nas_fid_next(f, &job);
    assert_int_equal(job.kind, NAS_FID_PROMOTE);
    assert_int_equal(job.trial, 2);
    nas_fid_destroy(f);
}

/* ASHA (eta 2, rungs 1, 2, 4), no new trials left and nothing running:
 * t1 is alone at rung 1, outside its top floor(1/2) = 0, but t3 waits at
 * rung 0 for its promotion; once it joins rung 1 below t1, rung 1 keeps
 * 1 and t1 is promoted to 4. So t1 is still promotable (its checkpoint is
 * needed). nas_fid_promotable said 0 ("no trial can join its rung": it
 * looked only at running jobs), so a 1-worker ASHA search deleted t1's
 * checkpoint and its promotion to 4 epochs trained from 0. */
static void test_asha_join_from_below(void **state)
{
    (void)state;
    nas_fid *f = make(NAS_FIDELITY_ASHA, 1, 4, 2, 4);
    nas_error err = {0};
    nas_fid_job job;
    double v;
    for (int64_t t = 1; t <= 2; t++) {
        nas_fid_next(f, &job);
        assert_int_equal(job.kind, NAS_FID_NEW);
        assert_int_equal(nas_fid_add(f, t, &job, &err), NAS_OK);
    }
    v = 0.9, assert_int_equal(nas_fid_report(f, 1, 0, 1, &v, &err), NAS_OK);
    v = 0.8, assert_int_equal(nas_fid_report(f, 2, 0, 1, &v, &err), NAS_OK);
    nas_fid_next(f, &job); /* rung 0 = {t1, t2}: its top 1 */
    assert_int_equal(job.kind, NAS_FID_PROMOTE);
    assert_int_equal(job.trial, 1);
    for (int64_t t = 3; t <= 4; t++) { /* the last new trials */
        nas_fid_next(f, &job);
        assert_int_equal(job.kind, NAS_FID_NEW);
        assert_int_equal(nas_fid_add(f, t, &job, &err), NAS_OK);
    }
    v = 0.5, assert_int_equal(nas_fid_report(f, 1, 1, 1, &v, &err), NAS_OK);
    v = 0.85, assert_int_equal(nas_fid_report(f, 3, 0, 1, &v, &err), NAS_OK);
    v = 0.1, assert_int_equal(nas_fid_report(f, 4, 0, 1, &v, &err), NAS_OK);
    assert_int_equal(nas_fid_running(f), 0);
    assert_int_equal(nas_fid_promotable(f, 1), 1); /* t3 may join rung 1 below it */
    assert_int_equal(nas_fid_promotable(f, 3), 1); /* rung 0's top 2, not promoted */
    assert_int_equal(nas_fid_promotable(f, 2), 0);
    assert_int_equal(nas_fid_promotable(f, 4), 0);
    nas_fid_next(f, &job);
    assert_int_equal(job.kind, NAS_FID_PROMOTE);
    assert_int_equal(job.trial, 3);
    assert_int_equal(nas_fid_promotable(f, 1), 1); /* t3 runs at rung 1 */
    v = 0.4, assert_int_equal(nas_fid_report(f, 3, 1, 1, &v, &err), NAS_OK);
    assert_int_equal(nas_fid_promotable(f, 3), 0); /* below t1 at rung 1 */
    nas_fid_next(f, &job); /* rung 1 = {t1, t3}: its top 1 */
    assert_int_equal(job.kind, NAS_FID_PROMOTE);
    assert_int_equal(job.trial, 1);
    assert_int_equal(job.rung, 2);
    v = 0.6, assert_int_equal(nas_fid_report(f, 1, 2, 1, &v, &err), NAS_OK);
    nas_fid_next(f, &job);
    assert_int_equal(job.kind, NAS_FID_DONE);
    for (int64_t t = 1; t <= 4; t++)
        assert_int_equal(nas_fid_promotable(f, t), 0);
    nas_fid_destroy(f);
}

/* Two objectives (val_accuracy max, latency min): ASHA promotes by
 * non-dominated sorting. t3 (0.89, 11 ms) is the second best by accuracy
 * but t1 (0.9, 10 ms) dominates it; t2 (0.8, 1 ms) is on the front. */
static void test_pareto_promotion(void **state)
{
    (void)state;
    nas_fid_opts o = {NAS_FIDELITY_ASHA, 1, 3, 3, 6, 2, {1, 0}};
    nas_fid *f = NULL;
    nas_error err = {0};
    assert_int_equal(nas_fid_create(&o, &f, &err), NAS_OK);
    static const double pts[7][2] = {{0, 0},     {0.9, 10}, {0.8, 1},  {0.89, 11},
                                     {0.5, 20},  {0.6, 30}, {0.7, 40}};
    nas_fid_job job;
    int64_t promoted[2];
    int np = 0;
    for (int64_t t = 1; np < 2;) {
        nas_fid_next(f, &job);
        if (job.kind == NAS_FID_NEW) {
            assert_int_equal(nas_fid_add(f, t, &job, &err), NAS_OK);
            assert_int_equal(nas_fid_report(f, t, 0, 1, pts[t], &err), NAS_OK);
            t++;
        } else {
            assert_int_equal(job.kind, NAS_FID_PROMOTE);
            promoted[np++] = job.trial;
            double v[2] = {1, 1};
            assert_int_equal(nas_fid_report(f, job.trial, 1, 1, v, &err), NAS_OK);
        }
        assert_true(t <= 7);
    }
    assert_int_equal(promoted[0], 1); /* 3 results: front {t1, t2}, t1 first */
    assert_int_equal(promoted[1], 2); /* 6 results: top 2 = the front, not t3 */
    nas_fid_destroy(f);
}

static void test_bad_options(void **state)
{
    (void)state;
    nas_fid *f = NULL;
    nas_error err = {0};
    nas_fid_opts o = {NAS_FIDELITY_NONE, 1, 27, 3, 0, 1, {1}};
    assert_int_equal(nas_fid_create(&o, &f, &err), NAS_EINVAL);
    o.kind = NAS_FIDELITY_SH;
    o.max = 2;
    assert_int_equal(nas_fid_create(&o, &f, &err), NAS_EINVAL);
    assert_non_null(strstr(err.msg, "max >= min x eta"));
    o.max = 27;
    o.dims = 0;
    assert_int_equal(nas_fid_create(&o, &f, &err), NAS_EINVAL);
    assert_null(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arithmetic),      cmocka_unit_test(test_hyperband_27),
        cmocka_unit_test(test_sh_promotions),   cmocka_unit_test(test_sh_waits),
        cmocka_unit_test(test_asha_sequence),   cmocka_unit_test(test_asha_async),
        cmocka_unit_test(test_asha_last_in_top),
        cmocka_unit_test(test_asha_join_from_below),
        cmocka_unit_test(test_pareto_promotion), cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
