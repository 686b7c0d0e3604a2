/*
 * trainer/cuda/cuda_status.h - mapping of CUDA runtime, cuDNN and cuBLAS
 * status codes to nas_status, as pure table-driven functions.
 *
 * Plain C with the numeric codes written out (values from the CUDA 13
 * driver_types.h, cuDNN 9 cudnn_graph.h and cuBLAS 13 cublas_api.h), so it
 * builds and is unit-tested on machines without the toolkit
 * (tests/gpu/test_cuda.c); trainer/cuda/cuda_backend.cu static_asserts
 * that the numbers equal the toolkit's enumerators.
 *
 * Policy (issue 7):
 *   no driver / no device / device unusable  -> NAS_ENODEV
 *   device or library allocation failed       -> NAS_ENOMEM (fails one trial)
 *   sticky context faults (illegal address, launch failure, ECC, device
 *   assert, ...) after which the CUDA context is unusable
 *                                             -> NAS_EDEVFAULT (restart worker)
 *   architecture / feature not supported      -> NAS_EUNSUPPORTED
 *   anything else                             -> NAS_EBACKEND
 * References: CUDA Runtime API "Error Handling" (cudaError enum notes on
 * which errors leave the context in an inconsistent state), cuDNN 9 API
 * "cudnnStatus_t" (category = code / 1000 * 1000), cuBLAS "cublasStatus_t".
 */
#ifndef NAS_TRAINER_CUDA_STATUS_H
#define NAS_TRAINER_CUDA_STATUS_H

#include <stddef.h> /* size_t */
#include <stdio.h>  /* snprintf */
#include "nas/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which library a status code comes from. */
typedef enum nas__cuda_lib {
    NAS__CUDA_LIB_RUNTIME = 0, /* cudaError_t */
    NAS__CUDA_LIB_CUDNN = 1,   /* cudnnStatus_t */
    NAS__CUDA_LIB_CUBLAS = 2   /* cublasStatus_t */
} nas__cuda_lib;

typedef struct nas__cuda_code {
    int code;         /* the library's numeric status */
    int status;       /* the nas_status it maps to */
    const char *name; /* the library's enumerator name */
} nas__cuda_code;

/* Rows for the CUDA runtime; codes not listed map to NAS_EBACKEND. */
static const nas__cuda_code nas__cuda_runtime_codes[] = {
    {0, NAS_OK, "cudaSuccess"},
    {1, NAS_EBACKEND, "cudaErrorInvalidValue"},
    {2, NAS_ENOMEM, "cudaErrorMemoryAllocation"},
    {3, NAS_ENODEV, "cudaErrorInitializationError"},
    {4, NAS_EBACKEND, "cudaErrorCudartUnloading"},
    {34, NAS_ENODEV, "cudaErrorStubLibrary"},
    {35, NAS_ENODEV, "cudaErrorInsufficientDriver"},
    {46, NAS_ENODEV, "cudaErrorDevicesUnavailable"},
    {98, NAS_EBACKEND, "cudaErrorInvalidDeviceFunction"},
    {100, NAS_ENODEV, "cudaErrorNoDevice"},
    {101, NAS_ENODEV, "cudaErrorInvalidDevice"},
    {201, NAS_ENODEV, "cudaErrorDeviceUninitialized"},
    {209, NAS_EUNSUPPORTED, "cudaErrorNoKernelImageForDevice"},
    {214, NAS_EDEVFAULT, "cudaErrorECCUncorrectable"},
    {220, NAS_EDEVFAULT, "cudaErrorNvlinkUncorrectable"},
    {222, NAS_EUNSUPPORTED, "cudaErrorUnsupportedPtxVersion"},
    {226, NAS_EDEVFAULT, "cudaErrorContained"},
    {700, NAS_EDEVFAULT, "cudaErrorIllegalAddress"},
    {701, NAS_EBACKEND, "cudaErrorLaunchOutOfResources"},
    {702, NAS_EDEVFAULT, "cudaErrorLaunchTimeout"},
    {710, NAS_EDEVFAULT, "cudaErrorAssert"},
    {714, NAS_EDEVFAULT, "cudaErrorHardwareStackError"},
    {715, NAS_EDEVFAULT, "cudaErrorIllegalInstruction"},
    {716, NAS_EDEVFAULT, "cudaErrorMisalignedAddress"},
    {717, NAS_EDEVFAULT, "cudaErrorInvalidAddressSpace"},
    {718, NAS_EDEVFAULT, "cudaErrorInvalidPc"},
    {719, NAS_EDEVFAULT, "cudaErrorLaunchFailure"},
    {801, NAS_EUNSUPPORTED, "cudaErrorNotSupported"},
    {802, NAS_ENODEV, "cudaErrorSystemNotReady"},
    {803, NAS_ENODEV, "cudaErrorSystemDriverMismatch"},
    {804, NAS_ENODEV, "cudaErrorCompatNotSupportedOnDevice"},
    {911, NAS_EDEVFAULT, "cudaErrorExternalDevice"},
    {999, NAS_EDEVFAULT, "cudaErrorUnknown"},
};

/* Rows for cuDNN 9 (exact codes first; then the category rows below). */
static const nas__cuda_code nas__cuda_cudnn_codes[] = {
    {0, NAS_OK, "CUDNN_STATUS_SUCCESS"},
    {1001, NAS_ENODEV, "CUDNN_STATUS_NOT_INITIALIZED"},
    {1002, NAS_EBACKEND, "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH"},
    {1008, NAS_EBACKEND, "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED"},
    {2000, NAS_EBACKEND, "CUDNN_STATUS_BAD_PARAM"},
    {3000, NAS_EUNSUPPORTED, "CUDNN_STATUS_NOT_SUPPORTED"},
    {3005, NAS_ENODEV, "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER"},
    {3007, NAS_EUNSUPPORTED, "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH"},
    {4000, NAS_EBACKEND, "CUDNN_STATUS_INTERNAL_ERROR"},
    {4003, NAS_ENOMEM, "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED"},
    {4004, NAS_ENOMEM, "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED"},
    {5000, NAS_EBACKEND, "CUDNN_STATUS_EXECUTION_FAILED"},
    {5001, NAS_EBACKEND, "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER"},
    {5003, NAS_EBACKEND, "CUDNN_STATUS_EXECUTION_FAILED_CUDART"},
};

/* cuDNN 9 categories (code / 1000 * 1000) for codes not listed above. */
static const nas__cuda_code nas__cuda_cudnn_categories[] = {
    {1000, NAS_EBACKEND, "CUDNN_STATUS_* (uncategorised)"},
    {2000, NAS_EBACKEND, "CUDNN_STATUS_BAD_PARAM_*"},
    {3000, NAS_EUNSUPPORTED, "CUDNN_STATUS_NOT_SUPPORTED_*"},
    {4000, NAS_EBACKEND, "CUDNN_STATUS_INTERNAL_ERROR_*"},
    {5000, NAS_EBACKEND, "CUDNN_STATUS_EXECUTION_FAILED_*"},
};

static const nas__cuda_code nas__cuda_cublas_codes[] = {
    {0, NAS_OK, "CUBLAS_STATUS_SUCCESS"},
    {1, NAS_ENODEV, "CUBLAS_STATUS_NOT_INITIALIZED"},
    {3, NAS_ENOMEM, "CUBLAS_STATUS_ALLOC_FAILED"},
    {7, NAS_EBACKEND, "CUBLAS_STATUS_INVALID_VALUE"},
    {8, NAS_EUNSUPPORTED, "CUBLAS_STATUS_ARCH_MISMATCH"},
    {11, NAS_EBACKEND, "CUBLAS_STATUS_MAPPING_ERROR"},
    {13, NAS_EBACKEND, "CUBLAS_STATUS_EXECUTION_FAILED"},
    {14, NAS_EBACKEND, "CUBLAS_STATUS_INTERNAL_ERROR"},
    {15, NAS_EUNSUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED"},
    {16, NAS_EBACKEND, "CUBLAS_STATUS_LICENSE_ERROR"},
};

#define NAS__CUDA_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The row for `code` of `lib`, or NULL when the code is not listed. */
static inline const nas__cuda_code *nas__cuda_code_find(nas__cuda_lib lib, int code)
{
    const nas__cuda_code *t;
    int n;
    switch (lib) {
    case NAS__CUDA_LIB_RUNTIME:
        t = nas__cuda_runtime_codes;
        n = NAS__CUDA_COUNT(nas__cuda_runtime_codes);
        break;
    case NAS__CUDA_LIB_CUDNN:
        t = nas__cuda_cudnn_codes;
        n = NAS__CUDA_COUNT(nas__cuda_cudnn_codes);
        break;
    case NAS__CUDA_LIB_CUBLAS:
        t = nas__cuda_cublas_codes;
        n = NAS__CUDA_COUNT(nas__cuda_cublas_codes);
        break;
    default:
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (t[i].code == code)
            return &t[i];
    if (lib == NAS__CUDA_LIB_CUDNN && code >= 1000) {
        int cat = code / 1000 * 1000;
        for (int i = 0; i < NAS__CUDA_COUNT(nas__cuda_cudnn_categories); i++)
            if (nas__cuda_cudnn_categories[i].code == cat)
                return &nas__cuda_cudnn_categories[i];
    }
    return NULL;
}

/*
 * The nas_status for status `code` of library `lib` (see the policy in the
 * file comment). Unlisted non-zero codes give NAS_EBACKEND; 0 gives NAS_OK.
 */
static inline int nas__cuda_status(nas__cuda_lib lib, int code)
{
    if (code == 0)
        return NAS_OK;
    const nas__cuda_code *row = nas__cuda_code_find(lib, code);
    return row ? row->status : NAS_EBACKEND;
}

/* The enumerator name for `code` ("cudaErrorNoDevice"), or "unknown status". */
static inline const char *nas__cuda_code_name(nas__cuda_lib lib, int code)
{
    const nas__cuda_code *row = nas__cuda_code_find(lib, code);
    return row ? row->name : "unknown status";
}

/* Whole MiB, rounded up (for "needs") or down (for "free"). */
static inline unsigned long long nas__cuda_mib_up(size_t bytes)
{
    return ((unsigned long long)bytes + (1ull << 20) - 1) >> 20;
}
static inline unsigned long long nas__cuda_mib_down(size_t bytes)
{
    return (unsigned long long)bytes >> 20;
}

/*
 * The out-of-memory reason recorded for a failed allocation of `need`
 * bytes with `free_bytes` free on the device (both in bytes):
 * "out of GPU memory: needs X MiB, device has Y MiB free" (X rounded up,
 * Y down, so a request of one byte still reads "needs 1 MiB").
 */
static inline void nas__cuda_oom_message(char *buf, size_t n, size_t need, size_t free_bytes)
{
    snprintf(buf, n, "out of GPU memory: needs %llu MiB, device has %llu MiB free",
             nas__cuda_mib_up(need), nas__cuda_mib_down(free_bytes));
}

#ifdef __cplusplus
}
#endif
#endif /* NAS_TRAINER_CUDA_STATUS_H */
