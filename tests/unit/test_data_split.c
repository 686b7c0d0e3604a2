/*
 * tests/unit/test_data_split.c - issue 16: data.valid as a count or a
 * fraction, data.augment and data.loader_threads in space.conf (parsing,
 * canonical text, old experiments' identity), and the stratified split a
 * fraction selects (trainer/data_source.c nas_data_split).
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nas/data.h"
#include "nas/space.h"

static int parse(const char *data_body, nas_config *c, nas_error *err)
{
    char text[1024];
    snprintf(text, sizeof text, "experiment = \"x\";\ndata: { %s };\n", data_body);
    return nas_config_parse_string(text, "t.conf", c, err);
}

static void test_valid_count_or_fraction(void **state)
{
    (void)state;
    nas_config c;
    nas_error err;
    assert_int_equal(parse("valid = 5000;", &c, &err), NAS_OK);
    assert_int_equal(c.data.valid, 5000);
    assert_true(c.data.valid_fraction == 0);
    char *canon = nas_config_canonical(&c);
    assert_non_null(strstr(canon, "data.valid = 5000;\n")); /* as before: old experiments match */
    free(canon);
    assert_int_equal(parse("valid = 0.1;", &c, &err), NAS_OK);
    assert_true(c.data.valid_fraction == 0.1);
    canon = nas_config_canonical(&c);
    assert_non_null(strstr(canon, "data.valid = 0.1;\n"));
    /* a fraction is another experiment than the count it was */
    nas_config old;
    assert_int_equal(parse("valid = 6000;", &old, &err), NAS_OK);
    char *oc = nas_config_canonical(&old), diff[512];
    assert_int_equal(nas_config_diff(oc, &c, 1, diff, sizeof diff), 1);
    assert_non_null(strstr(diff, "data.valid: 6000 -> 0.1"));
    free(oc);
    free(canon);
    /* the rule: floor(fraction x N), at least 1 */
    assert_int_equal(nas_config_valid_count(&c.data, 60000), 6000);
    assert_int_equal(nas_config_valid_count(&c.data, 59), 5);
    assert_int_equal(nas_config_valid_count(&c.data, 5), 1);
    assert_int_equal(parse("valid = 12;", &c, &err), NAS_OK);
    assert_int_equal(nas_config_valid_count(&c.data, 100), 12);
    static const char *const bad[] = {"valid = 1.5;", "valid = 0.0;", "valid = 1.0;", "valid = -0.2;",
                                      "valid = \"10%\";", "valid = 0;", "valid = 0.5; train_subset = 40000;"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = 0;
        assert_int_equal(parse(bad[i], &c, &err), NAS_ECONFIG);
        assert_non_null(strstr(err.msg, "t.conf:2: data."));
    }
}

static void test_augment_key(void **state)
{
    (void)state;
    nas_config c;
    nas_error err;
    assert_int_equal(parse("augment = \"flip,crop\"; loader_threads = 0;", &c, &err), NAS_OK);
    assert_string_equal(c.data.augment, "crop4,flip"); /* canonical spelling */
    assert_int_equal(c.data.loader_threads, 0);
    char *canon = nas_config_canonical(&c);
    assert_non_null(strstr(canon, "data.augment = \"crop4,flip\";\n"));
    free(canon);
    assert_true(nas_config_key_defining("data.augment"));
    assert_false(nas_config_key_defining("data.loader_threads"));
    assert_int_equal(parse("augment = \"none\";", &c, &err), NAS_OK);
    assert_string_equal(c.data.augment, "");
    /* an experiment stored before these keys: the same experiment */
    nas_config d;
    assert_int_equal(parse("valid = 5000;", &d, &err), NAS_OK);
    char *dc = nas_config_canonical(&d);
    char *p = strstr(dc, "data.augment = ");
    assert_non_null(p);
    memmove(p, strchr(p, '\n') + 1, strlen(strchr(p, '\n') + 1) + 1);
    assert_int_equal(nas_config_diff(dc, &d, 1, NULL, 0), 0);
    free(dc);
    assert_int_equal(parse("augment = \"crop,blur\";", &c, &err), NAS_ECONFIG);
    assert_non_null(strstr(err.msg, "t.conf:2: data.augment = \"crop,blur\""));
    assert_int_equal(parse("loader_threads = 17;", &c, &err), NAS_ECONFIG);
}

/* The split a fraction selects: seeded, stratified (each class's share of
 * validation images is its share of the data, largest remainders first). */
static void test_stratified_fraction(void **state)
{
    (void)state;
    enum { N = 1000 };
    nas_rawset r;
    memset(&r, 0, sizeof r);
    static uint8_t px[N], lab[N];
    r.n = N, r.c = 1, r.h = 1, r.w = 1, r.classes = 3, r.pixels = px, r.labels = lab;
    for (int i = 0; i < N; i++)
        lab[i] = (uint8_t)(i < 700 ? 0 : i < 950 ? 1 : 2); /* 700, 250, 50 */
    nas_data_conf dc;
    memset(&dc, 0, sizeof dc);
    dc.valid_fraction = 0.13; /* 130: 91, 32.5, 6.5 -> 91, 33, 6 */
    int nv = nas_config_valid_count(&dc, N);
    assert_int_equal(nv, 130);
    uint32_t *va, *tr, *rest;
    int ntr, nrest;
    nas_error err;
    assert_int_equal(nas_data_split(&r, nv, 0, 7, &va, &tr, &ntr, &rest, &nrest, &err), NAS_OK);
    int per[3] = {0};
    for (int i = 0; i < nv; i++)
        per[lab[va[i]]]++;
    assert_int_equal(per[0], 91);
    assert_int_equal(per[1] + per[2], 39);
    assert_true(per[1] == 33 || per[1] == 32); /* tie 0.5/0.5: the lower class */
    assert_int_equal(per[1], 33);
    assert_int_equal(ntr, N - nv);
    uint32_t *va2, *tr2;
    int ntr2;
    assert_int_equal(nas_data_split(&r, nv, 0, 7, &va2, &tr2, &ntr2, NULL, NULL, &err), NAS_OK);
    assert_memory_equal(va, va2, (size_t)nv * sizeof *va); /* seeded */
    free(va), free(tr), free(rest), free(va2), free(tr2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_count_or_fraction),
        cmocka_unit_test(test_augment_key),
        cmocka_unit_test(test_stratified_fraction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
