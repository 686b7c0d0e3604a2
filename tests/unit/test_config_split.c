/*
 * tests/unit/test_config_split.c - issue 30: nas_config_stored_split takes
 * a stored experiment's data.valid (a count or a fraction) only when the
 * config leaves the key unset and the value differs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include "nas/space.h"

static void load(const char *text, nas_config *cfg)
{
    nas_error err;
    assert_int_equal(nas_config_parse_string(text, "t.conf", cfg, &err), NAS_OK);
}

static void test_unset_takes_the_stored_split(void **state)
{
    (void)state;
    nas_config cfg;
    load("experiment = \"x\";\n", &cfg);
    assert_int_equal(cfg.data.valid_set, 0);
    assert_int_equal(nas_config_stored_split(&cfg, "seed = 42;\ndata.valid = 2000;\n"), 1);
    assert_int_equal(cfg.data.valid, 2000);
    assert_true(cfg.data.valid_fraction == 0);
    load("experiment = \"x\";\n", &cfg); /* a stored fraction */
    assert_int_equal(nas_config_stored_split(&cfg, "data.valid = 0.1;\n"), 1);
    assert_true(cfg.data.valid_fraction == 0.1);
    assert_int_equal(nas_config_valid_count(&cfg.data, 50000), 5000);
}

static void test_set_same_or_missing_changes_nothing(void **state)
{
    (void)state;
    nas_config cfg;
    load("experiment = \"x\";\ndata: { valid = 3000; };\n", &cfg);
    assert_int_equal(cfg.data.valid_set, 1);
    assert_int_equal(nas_config_stored_split(&cfg, "data.valid = 2000;\n"), 0);
    assert_int_equal(cfg.data.valid, 3000);
    load("experiment = \"x\";\n", &cfg);
    int dflt = cfg.data.valid;
    char same[64];
    snprintf(same, sizeof same, "data.valid = %d;\n", dflt);
    assert_int_equal(nas_config_stored_split(&cfg, same), 0);
    assert_int_equal(nas_config_stored_split(&cfg, "seed = 1;\n"), 0);
    assert_int_equal(nas_config_stored_split(&cfg, "data.valid = junk;\n"), 0);
    assert_int_equal(nas_config_stored_split(&cfg, NULL), 0);
    assert_int_equal(cfg.data.valid, dflt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unset_takes_the_stored_split),
        cmocka_unit_test(test_set_same_or_missing_changes_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
