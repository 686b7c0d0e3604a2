/*
 * tests/unit/test_trial_device.c - issue 7: which device ran a trial, and
 * latency on the device's own clock, tested with CPU backends:
 *   - nas_device_describe on "ref" and "cpu" gives the CPU model name as
 *     /proc/cpuinfo states it (parsed here independently), no compute
 *     capability;
 *   - the worker -> controller result message carries device name and cc,
 *     and still accepts a result without them;
 *   - the store (schema 2) keeps device_name / device_cc per trial, clears
 *     them when a trial restarts, and migrates a version-1 file (read-write:
 *     to version 2, data kept; read-only: read as before, device "");
 *   - nas_latency_ms uses a backend's device timer (ext slots timer_start /
 *     timer_stop) when it has one: a fake timer's values give the median.
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sqlite3.h> /* to inspect the file and build a version-1 one */
#include "nas/evaluator.h"
#include "nas/store.h"
#include "search/pool_msg.h"      /* nas__msg_encode_result / decode */
#include "trainer/backend_impl.h" /* nas_backend.ext, for the fake device timer */
#include "tests/unit/tiny_net.h"

/* The first "model name" value of /proc/cpuinfo, or "" when none. */
static void cpuinfo_model(char *out, size_t n)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon)
            continue;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        v[strcspn(v, "\n")] = '\0';
        snprintf(out, n, "%s", v);
        break;
    }
    fclose(f);
}

static void test_describe_cpu(void **state)
{
    (void)state;
    char want[256], name[128], cc[16];
    cpuinfo_model(want, sizeof want);
    static const char *const backends[] = {"ref", "cpu"};
    for (int i = 0; i < 2; i++) {
        nas_backend *be = NULL;
        nas_error err;
        assert_int_equal(nas_backend_create(backends[i], 1, 0, &be, &err), NAS_OK);
        snprintf(cc, sizeof cc, "junk");
        assert_int_equal(nas_device_describe(be, name, sizeof name, cc, sizeof cc), NAS_OK);
        if (want[0])
            assert_string_equal(name, want);
        else
            assert_true(name[0] != '\0'); /* another kernel's key, or "unknown CPU" */
        assert_string_equal(cc, "");
        /* short buffers truncate, NULL cc is allowed */
        char small[6];
        assert_int_equal(nas_device_describe(be, small, sizeof small, NULL, 0), NAS_OK);
        assert_int_equal((int)strlen(small), (int)strlen(name) < 5 ? (int)strlen(name) : 5);
        assert_int_equal(nas_device_describe(be, NULL, 8, cc, sizeof cc), NAS_EINVAL);
        nas_backend_destroy(be);
    }
    assert_int_equal(nas_device_describe(NULL, name, sizeof name, cc, sizeof cc), NAS_EINVAL);
    assert_string_equal(name, "");
}

static void test_result_message(void **state)
{
    (void)state;
    uint8_t buf[NAS__MSG_HEADER + NAS__MSG_MAX_PAYLOAD];
    nas_trial_result r, back;
    memset(&r, 0, sizeof r);
    r.status = NAS_OK;
    r.val_accuracy = 0.5;
    r.latency_ms = 2.5;
    snprintf(r.error, sizeof r.error, "a note");
    snprintf(r.device_name, sizeof r.device_name, "NVIDIA H100 80GB HBM3");
    snprintf(r.device_cc, sizeof r.device_cc, "9.0");
    nas__msg_encode_result(buf, 5, &r);
    int type;
    uint32_t len;
    char why[128];
    int64_t id;
    assert_int_equal(nas__msg_header(buf, &type, &len, why, sizeof why), NAS_OK);
    assert_int_equal(nas__msg_decode_result(buf + NAS__MSG_HEADER, len, &id, &back), NAS_OK);
    assert_int_equal(id, 5);
    assert_string_equal(back.error, "a note");
    assert_string_equal(back.device_name, "NVIDIA H100 80GB HBM3");
    assert_string_equal(back.device_cc, "9.0");
    assert_true(back.latency_ms == 2.5);
    /* truncated or padded tails are refused */
    for (uint32_t cut = 1; cut <= 5; cut++)
        assert_int_equal(nas__msg_decode_result(buf + NAS__MSG_HEADER, len - cut, &id, &back),
                         NAS_EFORMAT);
    assert_int_equal(nas__msg_decode_result(buf + NAS__MSG_HEADER, len + 1, &id, &back),
                     NAS_EFORMAT);
    /* a result without the device tail (an older worker) still decodes */
    memset(r.device_name, 0, sizeof r.device_name);
    memset(r.device_cc, 0, sizeof r.device_cc);
    nas__msg_encode_result(buf, 6, &r);
    assert_int_equal(nas__msg_header(buf, &type, &len, why, sizeof why), NAS_OK);
    assert_int_equal(nas__msg_decode_result(buf + NAS__MSG_HEADER, len - 2, &id, &back), NAS_OK);
    assert_string_equal(back.device_name, "");
    assert_string_equal(back.error, "a note");
    assert_int_equal(nas__msg_decode_result(buf + NAS__MSG_HEADER, len - 1, &id, &back),
                     NAS_EFORMAT);
}

/* ---- the store ---------------------------------------------------------------- */

static char DIR_[64];

static void db_path(char *out, size_t n, const char *name)
{
    if (!DIR_[0]) {
        snprintf(DIR_, sizeof DIR_, "/tmp/nas_test_device_XXXXXX");
        assert_non_null(mkdtemp(DIR_));
    }
    snprintf(out, n, "%s/%s", DIR_, name);
    unlink(out);
}

static int64_t sql_int(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *s = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
}

static void sql_exec(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fail_msg("%s: %s", sql, msg ? msg : "?");
    sqlite3_close(db);
}

/* A store with one experiment and trials t[0..2]: t[0] done on a GPU,
 * t[1] done on the CPU, t[2] failed before the backend started. */
static void fill(const char *path, int64_t t[3])
{
    nas_store *st = NULL;
    nas_error err;
    assert_int_equal(nas_store_open(path, 0, &st, &err), NAS_OK);
    int64_t exp;
    int created;
    assert_int_equal(nas_store_experiment_open(st, "dev", "x = 1;", "x = 1;", "x.conf", 1,
                                               "random", 3, &exp, &created, &err),
                     NAS_OK);
    const char *keys[3] = {"k0", "k1", "k2"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(nas_store_trial_insert(st, exp, keys[i], keys[i], "random", &t[i], &err),
                         NAS_OK);
        assert_int_equal(nas_store_trial_start(st, t[i], 0, i == 0 ? "cuda" : "cpu", &err),
                         NAS_OK);
        nas_trial_result r;
        memset(&r, 0, sizeof r);
        r.status = i == 2 ? NAS_ENODEV : NAS_OK;
        r.val_accuracy = 0.5 + 0.1 * i;
        r.test_accuracy = -1;
        if (i == 0) {
            snprintf(r.device_name, sizeof r.device_name, "NVIDIA A100-SXM4-40GB");
            snprintf(r.device_cc, sizeof r.device_cc, "8.0");
        } else if (i == 1) {
            snprintf(r.device_name, sizeof r.device_name, "Test CPU @ 2.0GHz");
        } else {
            snprintf(r.error, sizeof r.error, "no CUDA device");
        }
        assert_int_equal(nas_store_trial_finish(st, t[i], &r, r.val_accuracy, NULL, &err),
                         NAS_OK);
    }
    nas_store_close(st);
}

static void check_trial(const char *path, int readonly, int64_t id, const char *name,
                        const char *cc)
{
    nas_store *st = NULL;
    nas_error err;
    assert_int_equal(nas_store_open(path, readonly, &st, &err), NAS_OK);
    nas_store_trial t;
    assert_int_equal(nas_store_trial_get(st, id, &t, &err), NAS_OK);
    assert_string_equal(t.device_name, name);
    assert_string_equal(t.device_cc, cc);
    nas_store_close(st);
}

static void test_store_device(void **state)
{
    (void)state;
    char path[128];
    db_path(path, sizeof path, "v2.db");
    int64_t t[3];
    fill(path, t);
    assert_int_equal((int)sql_int(path, "PRAGMA user_version"), NAS_STORE_SCHEMA_VERSION);
    assert_int_equal(NAS_STORE_SCHEMA_VERSION, 10);
    check_trial(path, 0, t[0], "NVIDIA A100-SXM4-40GB", "8.0");
    check_trial(path, 1, t[1], "Test CPU @ 2.0GHz", "");
    check_trial(path, 1, t[2], "", "");
    assert_int_equal((int)sql_int(path, "SELECT device_cc IS NULL FROM trial WHERE id = 2"), 1);
    assert_int_equal((int)sql_int(path, "SELECT device_name IS NULL FROM trial WHERE id = 3"), 1);
    /* a restart clears the previous attempt's device */
    nas_store *st = NULL;
    nas_error err;
    assert_int_equal(nas_store_open(path, 0, &st, &err), NAS_OK);
    assert_int_equal(nas_store_trial_start(st, t[0], 1, "cpu", &err), NAS_OK);
    nas_store_trial tr;
    assert_int_equal(nas_store_trial_get(st, t[0], &tr, &err), NAS_OK);
    assert_string_equal(tr.device_name, "");
    assert_string_equal(tr.device, "cpu");
    nas_store_close(st);
}

static void test_store_migration(void **state)
{
    (void)state;
    char path[128];
    db_path(path, sizeof path, "v1.db");
    int64_t t[3];
    fill(path, t);
    /* make it a version-1 file: the trial table without the new columns
     * (version 3's trial.flag too; its experiment table is a superset) */
    sql_exec(path, "ALTER TABLE trial DROP COLUMN flag; ALTER TABLE trial DROP COLUMN device_cc; "
                   "ALTER TABLE trial DROP COLUMN device_name; PRAGMA user_version = 1;");
    assert_int_equal((int)sql_int(path, "SELECT count(*) FROM pragma_table_info('trial') "
                                        "WHERE name LIKE 'device_%'"),
                     0);
    /* read-only: no migration, the trials read as before */
    check_trial(path, 1, t[0], "", "");
    nas_store *st = NULL;
    nas_error err;
    assert_int_equal(nas_store_open(path, 1, &st, &err), NAS_OK);
    nas_store_trial tr;
    assert_int_equal(nas_store_trial_get(st, t[1], &tr, &err), NAS_OK);
    assert_true(tr.val_accuracy > 0.59 && tr.val_accuracy < 0.61);
    nas_store_close(st);
    assert_int_equal((int)sql_int(path, "PRAGMA user_version"), 1);
    /* read-write: migrated once, data kept, new results recorded */
    assert_int_equal(nas_store_open(path, 0, &st, &err), NAS_OK);
    assert_int_equal((int)sql_int(path, "PRAGMA user_version"), NAS_STORE_SCHEMA_VERSION);
    assert_int_equal(nas_store_trial_get(st, t[1], &tr, &err), NAS_OK);
    assert_true(tr.val_accuracy > 0.59 && tr.val_accuracy < 0.61);
    assert_string_equal(tr.device_name, "");
    assert_int_equal(nas_store_trial_start(st, t[2], 0, "cpu", &err), NAS_OK);
    nas_trial_result r;
    memset(&r, 0, sizeof r);
    r.status = NAS_OK;
    r.val_accuracy = 0.9;
    r.test_accuracy = -1;
    snprintf(r.device_name, sizeof r.device_name, "Another CPU");
    assert_int_equal(nas_store_trial_finish(st, t[2], &r, 0.9, NULL, &err), NAS_OK);
    nas_store_close(st);
    check_trial(path, 1, t[2], "Another CPU", "");
    /* opening again does not migrate twice */
    assert_int_equal(nas_store_open(path, 0, &st, &err), NAS_OK);
    nas_store_close(st);
    assert_int_equal((int)sql_int(path, "PRAGMA user_version"), NAS_STORE_SCHEMA_VERSION);
}

/* ---- latency on a device timer ---------------------------------------------------- */

typedef struct fake_timer {
    int starts, stops;
} fake_timer;

static fake_timer FT;

static int fake_start(nas_backend *be)
{
    (void)be;
    FT.starts++;
    return NAS_OK;
}

/* The device "measures" 9, 1, 5, 7, 3 ms: median 5. */
static int fake_stop(nas_backend *be, double *ms)
{
    (void)be;
    static const double seq[] = {9, 1, 5, 7, 3};
    *ms = seq[FT.stops % 5];
    FT.stops++;
    return NAS_OK;
}

static int fake_stop_fails(nas_backend *be, double *ms)
{
    *ms = 0;
    return nas__backend_fail(be, NAS_EDEVFAULT, "fake device fault");
}

static void test_latency_device_timer(void **state)
{
    (void)state;
    nas_backend *be = NULL;
    nas_error err;
    assert_int_equal(nas_backend_create("ref", 1, 0, &be, &err), NAS_OK);
    const int conv3[6] = {NAS_OP_NOR_CONV_3X3, NAS_OP_NOR_CONV_3X3, NAS_OP_NOR_CONV_3X3,
                          NAS_OP_NOR_CONV_3X3, NAS_OP_NOR_CONV_3X3, NAS_OP_NOR_CONV_3X3};
    nas_net_desc d = tiny_net_desc(conv3, 1);
    nas_net *net = NULL;
    assert_int_equal(nas_net_create(be, &d, 1, 1, &net, &err), NAS_OK);
    /* host clock first: positive, finite */
    double ms = -1;
    assert_int_equal(nas_latency_ms(net, 1, 0, 3, &ms, &err), NAS_OK);
    assert_true(ms > 0 && ms < 1e4);
    /* the same backend with a device timer: its values, not the host's */
    const nas__backend_ext *orig = be->ext;
    nas__backend_ext ext;
    memset(&ext, 0, sizeof ext);
    if (orig)
        ext = *orig;
    ext.timer_start = fake_start;
    ext.timer_stop = fake_stop;
    be->ext = &ext;
    memset(&FT, 0, sizeof FT);
    assert_int_equal(nas_latency_ms(net, 1, 2, 5, &ms, &err), NAS_OK);
    assert_true(ms == 5.0);
    assert_int_equal(FT.starts, 5); /* warm-up passes are not timed */
    assert_int_equal(FT.stops, 5);
    memset(&FT, 0, sizeof FT);
    assert_int_equal(nas_latency_ms(net, 1, 0, 4, &ms, &err), NAS_OK);
    assert_true(ms == 6.0); /* 9 1 5 7 -> (5 + 7) / 2 */
    /* a device failure is reported with the backend's detail */
    ext.timer_stop = fake_stop_fails;
    assert_int_equal(nas_latency_ms(net, 1, 0, 3, &ms, &err), NAS_EDEVFAULT);
    assert_non_null(strstr(err.msg, "fake device fault"));
    be->ext = orig;
    nas_net_destroy(net);
    nas_backend_destroy(be);
}

static int cleanup(void **state)
{
    (void)state;
    if (DIR_[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", DIR_);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", DIR_);
    }
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_describe_cpu),
        cmocka_unit_test(test_result_message),
        cmocka_unit_test(test_store_device),
        cmocka_unit_test(test_store_migration),
        cmocka_unit_test(test_latency_device_timer),
    };
    return cmocka_run_group_tests(tests, NULL, cleanup);
}
