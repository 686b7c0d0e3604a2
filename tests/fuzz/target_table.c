/*
 * tests/fuzz/target_table.c - benchmark tables through nas__table_load
 * (evaluator/table.c, CSV). Byte 0 bit 0 asks for the test column too
 * ("cifar10-test"); the value column is "cifar10-valid"; the rest is the
 * CSV. Promises checked: a failure is an error code with a message naming
 * the file; a success has rows >= 0 and answers look-ups.
 */
#include <string.h>
#include "evaluator/evaluator_impl.h"
#include "fuzz.h"

int nas_fuzz_table(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char path[64];
    nas_fuzz_file(0, data + 1, size - 1, path, sizeof path);
    nas__table *t = (nas__table *)path; /* must be reset */
    nas_error err;
    nas_error_clear(&err);
    int rc = nas__table_load(path, "cifar10-valid", (data[0] & 1) ? "cifar10-test" : NULL, &t,
                             &err);
    if (rc != NAS_OK) {
        NAS_FUZZ_CHECK(t == NULL && rc < 0 && err.code == rc && strstr(err.msg, path),
                       "rc %d msg '%s'", rc, err.msg);
        return rc;
    }
    NAS_FUZZ_CHECK(t != NULL && nas__table_rows(t) >= 0, "rows %d", nas__table_rows(t));
    double v = 0, tv = 0;
    nas__table_lookup(t, "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|"
                         "nor_conv_3x3~1|nor_conv_3x3~2|", &v, &tv);
    nas__table_lookup(t, "", &v, &tv);
    nas__table_destroy(t);
    return rc;
}
