/*
 * tests/unit/test_table_limits.c - issue 18, docs/space-conf.md "Limits":
 * a benchmark table (evaluator/table.c) with more data rows than the limit
 * (NAS__TABLE_MAX_ROWS, 10 million; here a limit of 100 through
 * nas__table_load_limited, the same code) is refused with a message naming
 * the file, the line and the limit, without loading the rest; a table at
 * the limit loads.
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "evaluator/evaluator_impl.h"

static void write_rows(const char *path, int rows)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "cellstr,acc\n");
    for (int i = 0; i < rows; i++)
        fprintf(f, "|cell%d~0|,%d.5\n", i, i % 100);
    assert_int_equal(fclose(f), 0);
}

static void test_row_limit(void **state)
{
    (void)state;
    char path[] = "/tmp/nas_test_table_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    nas__table *t = NULL;
    nas_error err;
    write_rows(path, 100);
    if (nas__table_load_limited(path, "acc", NULL, 100, &t, &err) != NAS_OK)
        fail_msg("100 rows with a limit of 100: %s", err.msg);
    assert_int_equal(nas__table_rows(t), 100);
    nas__table_destroy(t);
    write_rows(path, 101);
    t = (nas__table *)path; /* must be reset */
    assert_int_equal(nas__table_load_limited(path, "acc", NULL, 100, &t, &err), NAS_EFORMAT);
    assert_null(t);
    print_message("%s\n", err.msg);
    char want[600];
    snprintf(want, sizeof want, "%s:102: more than 100 data rows", path);
    if (!strstr(err.msg, want))
        fail_msg("expected '%s' in: %s", want, err.msg);
    /* the public loader uses the documented limit */
    assert_int_equal(NAS__TABLE_MAX_ROWS, 10000000);
    assert_int_equal(nas__table_load(path, "acc", NULL, &t, &err), NAS_OK);
    assert_int_equal(nas__table_rows(t), 101);
    nas__table_destroy(t);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
