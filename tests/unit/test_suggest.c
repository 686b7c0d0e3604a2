/* tests/unit/test_suggest.c - edit distance and "did you mean" (nas/suggest.h, issue 33 item 6). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "nas/suggest.h"

static void test_distance(void **state)
{
    (void)state;
    assert_int_equal(nas_edit_distance("", ""), 0);
    assert_int_equal(nas_edit_distance("abc", ""), 3);
    assert_int_equal(nas_edit_distance("", "ab"), 2);
    assert_int_equal(nas_edit_distance("trials", "trials"), 0);
    assert_int_equal(nas_edit_distance("trails", "trials"), 1); /* one transposition */
    assert_int_equal(nas_edit_distance("kitten", "sitting"), 3);
    assert_int_equal(nas_edit_distance("ca", "abc"), 3); /* optimal string alignment, not full Damerau (2) */
    assert_int_equal(nas_edit_distance("Trials", "trials"), 0); /* case does not count */
    assert_int_equal(nas_edit_distance("epoch", "epochs"), 1);
}

static void test_threshold(void **state)
{
    (void)state;
    assert_int_equal(nas_suggest_threshold(0), 1);
    assert_int_equal(nas_suggest_threshold(2), 1);
    assert_int_equal(nas_suggest_threshold(6), 2);
    assert_int_equal(nas_suggest_threshold(12), 4);
}

static void test_suggest(void **state)
{
    (void)state;
    char out[64], hint[96];
    const char *keys = "strategy, trials, population, sample_size, nao, fidelity";
    assert_int_equal(nas_suggest("trails", keys, out, sizeof out), 1);
    assert_string_equal(out, "trials");
    assert_int_equal(nas_suggest("cosin", "\"cosine\", \"constant\"", out, sizeof out), 1);
    assert_string_equal(out, "cosine");
    assert_int_equal(nas_suggest("--epoch", "--channels --cells --epochs --lr", out, sizeof out), 1);
    assert_string_equal(out, "--epochs");
    /* far off, valid, or nothing to compare with: no suggestion */
    assert_int_equal(nas_suggest("zqxwvk", keys, out, sizeof out), 0);
    assert_string_equal(out, "");
    assert_int_equal(nas_suggest("trials", keys, out, sizeof out), 0);
    assert_int_equal(nas_suggest("x", "", out, sizeof out), 0);
    assert_int_equal(nas_suggest("x", NULL, out, sizeof out), 0);
    assert_int_equal(nas_suggest("a", "b", out, sizeof out), 0); /* a whole word replaced */
    /* ties go to the first */
    assert_int_equal(nas_suggest("cat", "bat, hat", out, sizeof out), 1);
    assert_string_equal(out, "bat");
    /* a short buffer truncates */
    assert_int_equal(nas_suggest("populaton", keys, out, 4), 1);
    assert_string_equal(out, "pop");
    assert_string_equal(nas_suggest_hint("trails", keys, hint, sizeof hint), " (did you mean 'trials'?)");
    assert_string_equal(nas_suggest_hint("zqxwvk", keys, hint, sizeof hint), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distance),
        cmocka_unit_test(test_threshold),
        cmocka_unit_test(test_suggest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
