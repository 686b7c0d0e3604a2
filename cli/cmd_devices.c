/*
 * cli/cmd_devices.c - `nas devices`: the kernel backends compiled into this
 * binary and the devices they can use (CPU model and threads; each CUDA
 * device's name, memory and compute capability), saying plainly when the
 * CUDA backend is compiled in but no device is present, and why.
 * Exit code 0 whenever the listing could be made (an absent GPU is not a
 * failure of this command).
 */
#include <stdio.h>   /* printf */
#include <string.h>  /* strcmp, strncmp */
#include "cli/cli.h"
#include "nas/backend.h" /* nas_backend_compiled */
#include "nas/search.h"  /* nas_devices_query */

static double gib(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0 * 1024.0); }

int nas_cmd_devices(int argc, char **argv)
{
    if (argc > 1) {
        fprintf(stderr, "nas devices: unexpected argument '%s'\n", argv[1]);
        nas_cli_usage(stderr, "devices");
        return NAS_EXIT_USAGE;
    }
    int has_cuda = 0;
    printf("backends compiled in:");
    for (const char *const *n = nas_backend_compiled(); *n; n++) {
        printf(" %s", *n);
        if (strcmp(*n, "cuda") == 0)
            has_cuda = 1;
    }
    printf("\n\n");

    nas_device_info d[NAS_MAX_DEVICES];
    int count = 0;
    nas_error err;
    nas_error_clear(&err);
    int rc = nas_devices_query(NAS_DEVICE_CPU, d, NAS_MAX_DEVICES, &count, &err);
    if (rc != NAS_OK) {
        fprintf(stderr, "nas devices: %s\n", err.msg);
        return NAS_EXIT_FAIL;
    }
    printf("cpu   %s, %d thread%s", d[0].name, d[0].units, d[0].units == 1 ? "" : "s");
    if (d[0].memory_bytes)
        printf(", %.1f GiB RAM", gib(d[0].memory_bytes));
    printf("   (backends: ref, cpu)\n");

    nas_error_clear(&err);
    count = 0;
    rc = nas_devices_query(NAS_DEVICE_CUDA, d, NAS_MAX_DEVICES, &count, &err);
    if (!has_cuda || rc == NAS_ENOTFOUND) {
        printf("cuda  CUDA backend not compiled in (rebuild with the CUDA toolkit, cuDNN and "
               "cuBLAS present; see docs/cuda.md)\n");
        return NAS_EXIT_OK;
    }
    if (rc == NAS_ENODEV) {
        const char *why = err.msg;
        if (strncmp(why, "no CUDA device: ", 16) == 0)
            why += 16;
        printf("cuda  CUDA backend compiled in, but no CUDA device is present (%s)\n", why);
        return NAS_EXIT_OK;
    }
    if (rc != NAS_OK) {
        printf("cuda  CUDA backend compiled in, but the device query failed: %s\n", err.msg);
        return NAS_EXIT_OK;
    }
    for (int i = 0; i < count && i < NAS_MAX_DEVICES; i++)
        printf("cuda  %d: %s, %.1f GiB, compute capability %d.%d, %d SMs\n", d[i].index,
               d[i].name, gib(d[i].memory_bytes), d[i].cc_major, d[i].cc_minor, d[i].units);
    if (count > NAS_MAX_DEVICES)
        printf("cuda  ... and %d more (nas uses at most %d)\n", count - NAS_MAX_DEVICES,
               NAS_MAX_DEVICES);
    return NAS_EXIT_OK;
}
