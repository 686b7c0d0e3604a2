/*
 * tests/unit/test_config_split.c - issue 30: nas_config_stored_defaults
 * takes a stored experiment's data.valid (a count or a fraction) and
 * proxy.bn_recalibrate (0 when the stored text predates the key) only when
 * the config leaves the key unset and the value differs; nas_config_diff
 * counts a missing proxy.bn_recalibrate line as 0, not as today's default.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nas/space.h"

static void load(const char *text, nas_config *cfg)
{
    nas_error err;
    assert_int_equal(nas_config_parse_string(text, "t.conf", cfg, &err), NAS_OK);
}

/* The texts name proxy.bn_recalibrate = 10, today's default, so that only
 * data.valid differs. */
#define RECAL10 "proxy.bn_recalibrate = 10;\n"

static void test_unset_takes_the_stored_split(void **state)
{
    (void)state;
    nas_config cfg;
    load("experiment = \"x\";\n", &cfg);
    assert_int_equal(cfg.data.valid_set, 0);
    assert_int_equal(
        nas_config_stored_defaults(&cfg, "seed = 42;\ndata.valid = 2000;\n" RECAL10, NULL, 0), 1);
    assert_int_equal(cfg.data.valid, 2000);
    assert_true(cfg.data.valid_fraction == 0);
    load("experiment = \"x\";\n", &cfg); /* a stored fraction */
    assert_int_equal(nas_config_stored_defaults(&cfg, "data.valid = 0.1;\n" RECAL10, NULL, 0), 1);
    assert_true(cfg.data.valid_fraction == 0.1);
    assert_int_equal(nas_config_valid_count(&cfg.data, 50000), 5000);
}

static void test_set_same_or_missing_changes_nothing(void **state)
{
    (void)state;
    nas_config cfg;
    load("experiment = \"x\";\ndata: { valid = 3000; };\n", &cfg);
    assert_int_equal(cfg.data.valid_set, 1);
    assert_int_equal(nas_config_stored_defaults(&cfg, "data.valid = 2000;\n" RECAL10, NULL, 0), 0);
    assert_int_equal(cfg.data.valid, 3000);
    load("experiment = \"x\";\n", &cfg);
    int dflt = cfg.data.valid;
    char same[64];
    snprintf(same, sizeof same, "data.valid = %d;\n" RECAL10, dflt);
    assert_int_equal(nas_config_stored_defaults(&cfg, same, NULL, 0), 0);
    assert_int_equal(nas_config_stored_defaults(&cfg, "seed = 1;\n" RECAL10, NULL, 0), 0);
    assert_int_equal(nas_config_stored_defaults(&cfg, "data.valid = junk;\n" RECAL10, NULL, 0), 0);
    assert_int_equal(nas_config_stored_defaults(&cfg, NULL, NULL, 0), 0);
    assert_int_equal(nas_config_stored_defaults(&cfg, "proxy.bn_recalibrate = -3;\n", NULL, 0), 0);
    assert_int_equal(cfg.data.valid, dflt);
    assert_int_equal(cfg.proxy.bn_recalibrate, 10);
}

/* Pre-bn_recalibrate experiments' texts: the line the 3305fab build wrote
 * ("proxy.bn_recalibrate = 0;") and none at all (before the key). */
static void test_bn_recalibrate_keeps_what_the_experiment_had(void **state)
{
    (void)state;
    nas_config cfg;
    char out[256];
    load("experiment = \"x\";\n", &cfg);
    assert_int_equal(cfg.proxy.bn_recalibrate, 10); /* the new default */
    assert_int_equal(cfg.proxy.bn_recalibrate_set, 0);
    assert_int_equal(nas_config_stored_defaults(&cfg, "data.valid = 5000;\nproxy.bn_recalibrate = 0;\n",
                                                out, sizeof out), 1);
    assert_int_equal(cfg.proxy.bn_recalibrate, 0);
    assert_string_equal(out, "proxy.bn_recalibrate = 0 (stored; the default now is 10)\n");
    load("experiment = \"x\";\n", &cfg); /* a text from before the key: 0 */
    assert_int_equal(nas_config_stored_defaults(&cfg, "data.valid = 2000;\n", out, sizeof out), 2);
    assert_int_equal(cfg.proxy.bn_recalibrate, 0);
    assert_int_equal(cfg.data.valid, 2000);
    assert_string_equal(out, "data.valid = 2000 (stored; the default now is 5000)\n"
                             "proxy.bn_recalibrate = 0 (made before the key existed; the default "
                             "now is 10)\n");
    load("experiment = \"x\";\n", &cfg); /* stored 20: kept; stored 10: nothing */
    assert_int_equal(nas_config_stored_defaults(&cfg, "proxy.bn_recalibrate = 20;\n", NULL, 0), 1);
    assert_int_equal(cfg.proxy.bn_recalibrate, 20);
    load("experiment = \"x\";\n", &cfg);
    assert_int_equal(nas_config_stored_defaults(&cfg, "data.valid = 5000;\nproxy.bn_recalibrate = 10;\n",
                                                NULL, 0), 0);
    assert_int_equal(cfg.proxy.bn_recalibrate, 10);
    load("experiment = \"x\";\nproxy: { bn_recalibrate = 10; };\n", &cfg); /* set: kept */
    assert_int_equal(cfg.proxy.bn_recalibrate_set, 1);
    assert_int_equal(nas_config_stored_defaults(&cfg, "proxy.bn_recalibrate = 0;\n", NULL, 0), 0);
    assert_int_equal(cfg.proxy.bn_recalibrate, 10);
}

/* nas_config_diff: a stored text without proxy.bn_recalibrate was made with
 * 0, so an explicit 10 is a change, and the kept 0 is none. */
static void test_diff_counts_a_missing_bn_recalibrate_as_0(void **state)
{
    (void)state;
    nas_config cfg;
    char out[256];
    load("experiment = \"x\";\nproxy: { bn_recalibrate = 10; };\n", &cfg);
    char *canon = nas_config_canonical(&cfg);
    assert_non_null(canon);
    char *line = strstr(canon, "proxy.bn_recalibrate = 10;\n");
    assert_non_null(line);
    memmove(line, line + strlen("proxy.bn_recalibrate = 10;\n"),
            strlen(line + strlen("proxy.bn_recalibrate = 10;\n")) + 1); /* as before the key */
    assert_int_equal(nas_config_diff(canon, &cfg, 1, out, sizeof out), 1);
    assert_string_equal(out, "  proxy.bn_recalibrate: 0 -> 10\n");
    load("experiment = \"x\";\n", &cfg);
    assert_int_equal(nas_config_stored_defaults(&cfg, canon, NULL, 0), 1);
    assert_int_equal(nas_config_diff(canon, &cfg, 1, out, sizeof out), 0);
    free(canon);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unset_takes_the_stored_split),
        cmocka_unit_test(test_bn_recalibrate_keeps_what_the_experiment_had),
        cmocka_unit_test(test_diff_counts_a_missing_bn_recalibrate_as_0),
        cmocka_unit_test(test_set_same_or_missing_changes_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
