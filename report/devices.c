/*
 * report/devices.c - `nas devices` as a view (issue 13: moved out of the
 * CLI): the kernel backends compiled into this binary and the devices they
 * can use (CPU model and threads; each CUDA device's name, memory and
 * compute capability), saying plainly when the CUDA backend is compiled in
 * but no device is present, or its shared object (libnas_cuda.so) cannot be
 * loaded, and why.
 */
#include <stdio.h>   /* fprintf */
#include <string.h>  /* strcmp, strncmp */
#include "nas/backend.h" /* nas_backend_compiled */
#include "nas/report.h"
#include "nas/search.h"  /* nas_devices_query */

static double gib(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0 * 1024.0); }

int nas_report_devices(FILE *out, nas_error *err)
{
    int has_cuda = 0;
    fprintf(out, "backends compiled in:");
    for (const char *const *n = nas_backend_compiled(); *n; n++) {
        fprintf(out, " %s", *n);
        if (strcmp(*n, "cuda") == 0)
            has_cuda = 1;
    }
    fprintf(out, "\n\n");

    nas_device_info d[NAS_MAX_DEVICES];
    int count = 0;
    int rc = nas_devices_query(NAS_DEVICE_CPU, d, NAS_MAX_DEVICES, &count, err);
    if (rc != NAS_OK)
        return rc;
    fprintf(out, "cpu   %s, %d thread%s", d[0].name, d[0].units, d[0].units == 1 ? "" : "s");
    if (d[0].memory_bytes)
        fprintf(out, ", %.1f GiB RAM", gib(d[0].memory_bytes));
    fprintf(out, "   (backends: ref, cpu)\n");

    nas_error cuda_err;
    nas_error_clear(&cuda_err);
    count = 0;
    rc = nas_devices_query(NAS_DEVICE_CUDA, d, NAS_MAX_DEVICES, &count, &cuda_err);
    if (!has_cuda || rc == NAS_ENOTFOUND) {
        fprintf(out, "cuda  CUDA backend not compiled in (rebuild with the CUDA toolkit, cuDNN "
                "and cuBLAS present; see docs/cuda.md)\n");
        return NAS_OK;
    }
    if (rc == NAS_ENODEV) {
        const char *why = cuda_err.msg;
        if (strncmp(why, "no CUDA device: ", 16) == 0)
            why += 16;
        fprintf(out, "cuda  CUDA backend compiled in, but no CUDA device is present (%s)\n", why);
        return NAS_OK;
    }
    const char *load = strstr(cuda_err.msg, "cannot load the CUDA backend library: ");
    if (rc != NAS_OK && load) { /* libnas_cuda.so missing or unloadable (trainer/backend_cuda.c) */
        fprintf(out, "cuda  CUDA backend compiled in, but its library libnas_cuda.so cannot be "
                "loaded: %s\n", load + 38);
        return NAS_OK;
    }
    if (rc != NAS_OK) {
        fprintf(out, "cuda  CUDA backend compiled in, but the device query failed: %s\n",
                cuda_err.msg);
        return NAS_OK;
    }
    for (int i = 0; i < count && i < NAS_MAX_DEVICES; i++)
        fprintf(out, "cuda  %d: %s, %.1f GiB, compute capability %d.%d, %d SMs\n", d[i].index,
                d[i].name, gib(d[i].memory_bytes), d[i].cc_major, d[i].cc_minor, d[i].units);
    if (count > NAS_MAX_DEVICES)
        fprintf(out, "cuda  ... and %d more (nas uses at most %d)\n", count - NAS_MAX_DEVICES,
                NAS_MAX_DEVICES);
    return NAS_OK;
}
