/*
 * tests/unit/test_proxy_stats.c - the statistics of `nas proxy-check`
 * (issue 30, docs/proxy.md) against values computed by hand: the one-way
 * random-effects ICC(1) with its pooled seed SD and between SD, Spearman's
 * rho with mid-ranks and Kendall's tau-b with ties.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "nas/search.h"

/* 3 architectures x 2 seeds: row means 2, 5, 8, grand mean 5;
 * SSW = 1 + 1 + 1 + 1 + 0 + 0 = 4, MSW = 4 / (3 x 1) = 4/3;
 * SSB = 2 (9 + 0 + 9) = 36, MSB = 36 / 2 = 18;
 * ICC(1) = (18 - 4/3) / (18 + 4/3) = 50/58; sd_within = sqrt(4/3);
 * sd_between = sqrt((18 - 4/3) / 2) = sqrt(25/3). */
static void test_icc_by_hand(void **state)
{
    (void)state;
    const double x[] = {1, 3, 4, 6, 8, 8};
    nas_proxy_anova_stats a;
    assert_int_equal(nas_proxy_anova(x, 3, 2, &a), NAS_OK);
    assert_int_equal(a.n, 3);
    assert_true(fabs(a.mean - 5) < 1e-12);
    assert_true(fabs(a.ms_within - 4.0 / 3) < 1e-12);
    assert_true(fabs(a.ms_between - 18) < 1e-12);
    assert_true(fabs(a.icc - 50.0 / 58) < 1e-12);
    assert_true(fabs(a.sd_within - sqrt(4.0 / 3)) < 1e-12);
    assert_true(fabs(a.sd_between - sqrt(25.0 / 3)) < 1e-12);
}

/* Seeds that swap the order of two architectures: MSB = 0, MSW = 2,
 * ICC(1) = (0 - 2) / (0 + 2) = -1, no spread between architectures. */
static void test_icc_all_noise(void **state)
{
    (void)state;
    const double x[] = {1, 3, 3, 1};
    nas_proxy_anova_stats a;
    assert_int_equal(nas_proxy_anova(x, 2, 2, &a), NAS_OK);
    assert_true(fabs(a.icc + 1) < 1e-12);
    assert_true(a.sd_between == 0);
    assert_true(fabs(a.sd_within - sqrt(2)) < 1e-12);
}

/* One seed or one architecture: nothing to estimate. */
static void test_icc_too_small(void **state)
{
    (void)state;
    const double x[] = {1, 2, 3};
    nas_proxy_anova_stats a;
    assert_int_equal(nas_proxy_anova(x, 3, 1, &a), NAS_OK);
    assert_true(isnan(a.icc) && isnan(a.sd_within) && a.n == 0);
    assert_int_equal(nas_proxy_anova(x, 1, 3, &a), NAS_OK);
    assert_true(isnan(a.icc));
    assert_int_equal(nas_proxy_anova(NULL, 1, 3, &a), NAS_EINVAL);
}

/* a = 1 2 2 3 (a tie), b = 1 3 2 4. Mid-ranks of a: 1 2.5 2.5 4, of b:
 * 1 3 2 4; deviations -1.5 0 0 1.5 and -1.5 .5 -.5 1.5: rho = 4.5 /
 * sqrt(4.5 x 5). Pairs: 5 concordant, 0 discordant, 1 tied in a only:
 * tau-b = 5 / sqrt(5 x 6). */
static void test_ranks_with_ties(void **state)
{
    (void)state;
    const double a[] = {1, 2, 2, 3}, b[] = {1, 3, 2, 4};
    assert_true(fabs(nas_rank_spearman(a, b, 4) - 4.5 / sqrt(22.5)) < 1e-12);
    assert_true(fabs(nas_rank_kendall(a, b, 4) - 5 / sqrt(30.0)) < 1e-12);
    assert_true(fabs(nas_rank_kendall(b, a, 4) - 5 / sqrt(30.0)) < 1e-12);
}

/* Reversed order: -1 for both; a constant side or fewer than 2: NaN. */
static void test_ranks_edges(void **state)
{
    (void)state;
    const double a[] = {0.1, 0.5, 0.9}, r[] = {3, 2, 1}, c[] = {7, 7, 7};
    assert_true(fabs(nas_rank_spearman(a, r, 3) + 1) < 1e-12);
    assert_true(fabs(nas_rank_kendall(a, r, 3) + 1) < 1e-12);
    assert_true(isnan(nas_rank_spearman(a, c, 3)));
    assert_true(isnan(nas_rank_kendall(c, a, 3)));
    assert_true(isnan(nas_rank_kendall(a, r, 1)));
    assert_true(isnan(nas_rank_spearman(a, r, 0)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_icc_by_hand),     cmocka_unit_test(test_icc_all_noise),
        cmocka_unit_test(test_icc_too_small),   cmocka_unit_test(test_ranks_with_ties),
        cmocka_unit_test(test_ranks_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
