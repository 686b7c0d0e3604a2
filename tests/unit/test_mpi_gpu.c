/*
 * tests/unit/test_mpi_gpu.c - which GPU an MPI worker rank trains on
 * (issue 4, docs/cluster.md "GPUs under MPI"): the local rank from
 * OMPI_COMM_WORLD_LOCAL_RANK or the MPI_COMM_TYPE_SHARED split rank, the
 * device from the local rank modulo workers.gpus, and the
 * CUDA_VISIBLE_DEVICES value that exposes it. No GPU is needed: the
 * placements are resolved with fake device counts and the environment
 * values are strings.
 */
#include <setjmp.h> /* cmocka needs these three first */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nas/search.h"
#include "search/pool_msg.h"

static nas_config cfg_with(const char *device, const char *backend)
{
    nas_config c;
    nas_config_defaults(&c);
    snprintf(c.workers.device, sizeof c.workers.device, "%s", device);
    snprintf(c.proxy.backend, sizeof c.proxy.backend, "%s", backend);
    return c;
}

static void test_local_rank(void **state)
{
    (void)state;
    /* Open MPI's variable wins over the split rank */
    assert_int_equal(nas_mpi_local_rank("3", 7), 3);
    assert_int_equal(nas_mpi_local_rank("0", 5), 0);
    assert_int_equal(nas_mpi_local_rank("12", -1), 12);
    /* absent or unusable: the MPI_COMM_TYPE_SHARED rank */
    assert_int_equal(nas_mpi_local_rank(NULL, 2), 2);
    assert_int_equal(nas_mpi_local_rank("", 4), 4);
    assert_int_equal(nas_mpi_local_rank("-1", 4), 4);
    assert_int_equal(nas_mpi_local_rank("2x", 1), 1);
    assert_int_equal(nas_mpi_local_rank(" 2", 1), 1);
    assert_int_equal(nas_mpi_local_rank("99999999999999999999", 6), 6);
    /* neither: 0 */
    assert_int_equal(nas_mpi_local_rank(NULL, -1), 0);
    assert_int_equal(nas_mpi_local_rank("x", -1), 0);
}

static void test_rank_device_listed(void **state)
{
    (void)state;
    nas_config c = cfg_with("cuda", "cuda");
    c.workers.n_gpus = 2;
    c.workers.gpus[0] = 3;
    c.workers.gpus[1] = 1;
    nas_placement p;
    nas_error err;
    assert_int_equal(nas_placement_resolve(&c, 4, NULL, &p, &err), NAS_OK);
    /* local ranks 0..5 of one node: round robin over workers.gpus, in order */
    const int want[6] = {3, 1, 3, 1, 3, 1};
    for (int r = 0; r < 6; r++)
        assert_int_equal(nas_placement_rank_device(&p, r), want[r]);
    assert_int_equal(nas_placement_rank_device(&p, -1), -1);
    assert_int_equal(nas_placement_rank_device(NULL, 0), -1);
}

static void test_rank_device_all(void **state)
{
    (void)state;
    nas_config c = cfg_with("auto", "auto");
    c.workers.n_gpus = -1; /* "all" */
    nas_placement p;
    nas_error err;
    for (int n_cuda = 1; n_cuda <= 8; n_cuda++) {
        assert_int_equal(nas_placement_resolve(&c, n_cuda, NULL, &p, &err), NAS_OK);
        assert_int_equal(p.kind, NAS_DEVICE_CUDA);
        int used[8] = {0};
        for (int r = 0; r < 3 * n_cuda; r++) {
            int d = nas_placement_rank_device(&p, r);
            assert_int_equal(d, r % n_cuda);
            used[d]++;
        }
        for (int d = 0; d < n_cuda; d++) /* every GPU gets the same number of ranks */
            assert_int_equal(used[d], 3);
    }
    /* auto without a GPU: the CPU, so no device to pick */
    assert_int_equal(nas_placement_resolve(&c, 0, "no driver", &p, &err), NAS_OK);
    assert_int_equal(p.kind, NAS_DEVICE_CPU);
    assert_int_equal(nas_placement_rank_device(&p, 0), -1);
    assert_int_equal(nas_placement_rank_device(&p, 5), -1);
}

static void test_cuda_visible_value(void **state)
{
    (void)state;
    char buf[64];
    /* nothing set: the ordinal itself */
    assert_int_equal(nas__cuda_visible_value(NULL, 2, buf, sizeof buf), 0);
    assert_string_equal(buf, "2");
    assert_int_equal(nas__cuda_visible_value("", 0, buf, sizeof buf), 0);
    assert_string_equal(buf, "0");
    /* a list set by the scheduler: ordinal i is its i-th entry */
    assert_int_equal(nas__cuda_visible_value("4,5,6", 0, buf, sizeof buf), 0);
    assert_string_equal(buf, "4");
    assert_int_equal(nas__cuda_visible_value("4,5,6", 2, buf, sizeof buf), 0);
    assert_string_equal(buf, "6");
    assert_int_equal(nas__cuda_visible_value("GPU-8f2a, GPU-77c1", 1, buf, sizeof buf), 0);
    assert_string_equal(buf, "GPU-77c1");
    /* no such entry, empty entry, too small a buffer, bad ordinal */
    assert_int_equal(nas__cuda_visible_value("4,5", 2, buf, sizeof buf), -1);
    assert_int_equal(nas__cuda_visible_value("4,,5", 1, buf, sizeof buf), -1);
    assert_int_equal(nas__cuda_visible_value("GPU-8f2a", 0, buf, 4), -1);
    assert_int_equal(nas__cuda_visible_value(NULL, 123, buf, 3), -1);
    assert_int_equal(nas__cuda_visible_value(NULL, -1, buf, sizeof buf), -1);
}

/* The whole pick as a worker rank does it, with this machine's devices:
 * a CPU backend never touches CUDA_VISIBLE_DEVICES; a CUDA config on a
 * machine without a GPU picks nothing and says why. */
static void test_pick_gpu(void **state)
{
    (void)state;
    setenv("CUDA_VISIBLE_DEVICES", "7,9", 1);
    char note[512];
    nas_config c = cfg_with("auto", "cpu");
    assert_int_equal(nas__mpi_pick_gpu(&c, 1, note, sizeof note), -1);
    assert_non_null(strstr(note, "CPU"));
    assert_string_equal(getenv("CUDA_VISIBLE_DEVICES"), "7,9");

    nas_device_info d[NAS_MAX_DEVICES];
    int n_cuda = 0;
    nas_error err;
    if (nas_devices_query(NAS_DEVICE_CUDA, d, NAS_MAX_DEVICES, &n_cuda, &err) != NAS_OK)
        n_cuda = 0;
    c = cfg_with("cuda", "cuda");
    int dev = nas__mpi_pick_gpu(&c, 1, note, sizeof note);
    if (n_cuda == 0) {
        assert_int_equal(dev, -1);
        assert_non_null(strstr(note, "no GPU picked"));
        assert_string_equal(getenv("CUDA_VISIBLE_DEVICES"), "7,9");
    } else { /* a machine with GPUs (visible through "7,9"): local rank 1 -> ordinal 1 % n */
        assert_int_equal(dev, 1 % n_cuda);
        assert_string_equal(getenv("CUDA_VISIBLE_DEVICES"), dev == 0 ? "7" : "9");
    }
    unsetenv("CUDA_VISIBLE_DEVICES");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_rank),
        cmocka_unit_test(test_rank_device_listed),
        cmocka_unit_test(test_rank_device_all),
        cmocka_unit_test(test_cuda_visible_value),
        cmocka_unit_test(test_pick_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
