/*
 * tests/unit/fake_cuda_plugin.c - stand-ins for libnas_cuda.so that
 * test_cuda_plugin_abi.c points NAS_CUDA_LIBRARY at (no CUDA needed):
 * built three times (tests/CMakeLists.txt) as
 *   - fake_cuda_plugin_ok: nas__cuda_plugin_abi() is this tree's value,
 *     so libnas calls its entry points, which answer with a message
 *     naming this file;
 *   - fake_cuda_plugin_skew (FAKE_ABI_SKEW): another value, as a library
 *     built by another nas would report;
 *   - fake_cuda_plugin_old (FAKE_NO_ABI): no nas__cuda_plugin_abi at all,
 *     as a libnas_cuda.so from before the check.
 */
#include <stdio.h>  /* snprintf */
#include "trainer/backend_impl.h"
#include "trainer/cuda/cuda_probe.h"

#define FAKE_SAYS "fake_cuda_plugin: entry point reached"

#ifndef FAKE_NO_ABI
unsigned long long nas__cuda_plugin_abi(void)
{
#ifdef FAKE_ABI_SKEW
    return NAS__CUDA_ABI(nas__backend_abi()) ^ 1ull; /* as if a size differed */
#else
    return NAS__CUDA_ABI(nas__backend_abi());
#endif
}
#endif

int nas__cuda_plugin_create(int threads, int device, nas_backend **out, nas_error *err)
{
    (void)threads, (void)device;
    if (out)
        *out = NULL;
    if (err) {
        err->code = NAS_ENODEV;
        snprintf(err->msg, sizeof err->msg, "%s (create)", FAKE_SAYS);
    }
    return NAS_ENODEV;
}

int nas__cuda_plugin_probe(nas__cuda_dev *out, int max, int *count, char *reason, size_t n)
{
    (void)out, (void)max;
    if (count)
        *count = 0;
    if (reason && n)
        snprintf(reason, n, "%s (probe)", FAKE_SAYS);
    return NAS_ENODEV;
}
