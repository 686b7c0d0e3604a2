/*
 * tests/unit/test_cuda_plugin_abi.c - libnas checks the backend interface
 * of the libnas_cuda.so it loads (trainer/backend_cuda.c,
 * nas__backend_abi in trainer/backend_impl.h) before calling into it: a
 * library built against another nas is refused with NAS_EBACKEND and a
 * reason naming it, never called (its ext table could be shorter than
 * libnas reads). No GPU needed: NAS_CUDA_LIBRARY points at the stand-ins of
 * fake_cuda_plugin.c. A build without the CUDA backend skips (exit 77) and
 * says so.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "nas/backend.h"
#include "trainer/backend_impl.h"
#ifdef NAS_HAVE_CUDA
#include "trainer/cuda/cuda_probe.h"

/* What nas_backend_create("cuda") and the probe answered. */
typedef struct load_result {
    int rc, probe_rc;   /* their statuses */
    nas_error err;      /* create's message */
    char reason[2048];  /* the probe's */
} load_result;

/* Create the cuda backend and probe its devices with NAS_CUDA_LIBRARY =
 * lib; no backend comes back and no device is counted either way. */
static void load_with(const char *lib, load_result *r)
{
    assert_int_equal(setenv("NAS_CUDA_LIBRARY", lib, 1), 0);
    nas_backend *be = NULL;
    memset(r, 0, sizeof *r);
    r->rc = nas_backend_create("cuda", 0, 0, &be, &r->err);
    assert_null(be);
    int count = -1;
    r->probe_rc = nas__cuda_probe(NULL, 0, &count, r->reason, sizeof r->reason);
    assert_int_equal(count, 0);
    unsetenv("NAS_CUDA_LIBRARY");
}

/* The same interface: libnas calls the library (its answer comes back). */
static void test_matching_library_is_called(void **state)
{
    (void)state;
    load_result r;
    load_with(FAKE_CUDA_PLUGIN_OK, &r);
    assert_int_equal(r.rc, NAS_ENODEV);
    assert_non_null(strstr(r.err.msg, "fake_cuda_plugin: entry point reached (create)"));
    assert_int_equal(r.probe_rc, NAS_ENODEV);
    assert_non_null(strstr(r.reason, "fake_cuda_plugin: entry point reached (probe)"));
}

/* Another interface value (as if a shared struct's size differed):
 * refused, named, not called. */
static void test_other_abi_is_refused(void **state)
{
    (void)state;
    load_result r;
    load_with(FAKE_CUDA_PLUGIN_SKEW, &r);
    assert_int_equal(r.rc, NAS_EBACKEND);
    printf("# create: %s\n", r.err.msg);
    assert_non_null(strstr(r.err.msg, "cannot load the CUDA backend library"));
    assert_non_null(strstr(r.err.msg, FAKE_CUDA_PLUGIN_SKEW));
    assert_non_null(strstr(r.err.msg, "was built against another nas"));
    assert_null(strstr(r.err.msg, "entry point reached"));
    char ours[48];
    snprintf(ours, sizeof ours, "this nas %#llx", NAS__CUDA_ABI(nas__backend_abi()));
    assert_non_null(strstr(r.err.msg, ours));
    assert_int_equal(r.probe_rc, NAS_EBACKEND);
    assert_non_null(strstr(r.reason, "was built against another nas"));
    assert_null(strstr(r.reason, "entry point reached"));
}

/* A library from before the check (no nas__cuda_plugin_abi): refused. */
static void test_library_without_abi_is_refused(void **state)
{
    (void)state;
    load_result r;
    load_with(FAKE_CUDA_PLUGIN_OLD, &r);
    assert_int_equal(r.rc, NAS_EBACKEND);
    assert_non_null(strstr(r.err.msg, "has no nas__cuda_plugin_abi"));
    assert_non_null(strstr(r.err.msg, FAKE_CUDA_PLUGIN_OLD));
    assert_null(strstr(r.err.msg, "entry point reached"));
    assert_int_equal(r.probe_rc, NAS_EBACKEND);
    assert_non_null(strstr(r.reason, "has no nas__cuda_plugin_abi"));
}

/* The real libnas_cuda.so of this build passes the check: its probe runs
 * (without a device it says why there is none; on a GPU host under a
 * sanitizer the CUDA runtime may fail otherwise), and is not refused. */
static void test_built_library_matches(void **state)
{
    (void)state;
    unsetenv("NAS_CUDA_LIBRARY");
    int count = -1;
    char reason[2048] = "";
    int rc = nas__cuda_probe(NULL, 0, &count, reason, sizeof reason);
    printf("# this build's libnas_cuda.so: probe %d, %d device(s)%s%s\n", rc, count,
           reason[0] ? ": " : "", reason);
    assert_null(strstr(reason, "cannot load the CUDA backend library"));
    assert_true(rc == NAS_OK || reason[0] != '\0');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matching_library_is_called),
        cmocka_unit_test(test_other_abi_is_refused),
        cmocka_unit_test(test_library_without_abi_is_refused),
        cmocka_unit_test(test_built_library_matches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void)
{
    printf("SKIPPED: this build has no CUDA backend (CUDA toolkit not found), so there is no "
           "libnas_cuda.so to check\n");
    return 77;
}
#endif
