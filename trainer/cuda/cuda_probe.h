/*
 * trainer/cuda/cuda_probe.h - CUDA device discovery, in plain C so that
 * search/placement.c (a C file) can call it, and the two entry points of
 * the CUDA backend's shared object (libnas_cuda.so, issue 29). Built only
 * with the CUDA backend (NAS_HAVE_CUDA). nas__cuda_probe and
 * nas__backend_cuda_create live in libnas (trainer/backend_cuda.c): they
 * load libnas_cuda.so on first use and forward to nas__cuda_plugin_probe /
 * nas__cuda_plugin_create (trainer/cuda/cuda_backend.cu), which take the
 * same arguments.
 */
#ifndef NAS_TRAINER_CUDA_PROBE_H
#define NAS_TRAINER_CUDA_PROBE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One device as cudaGetDeviceProperties reports it. */
typedef struct nas__cuda_dev {
    int index;               /* device ordinal */
    char name[256];          /* cudaDeviceProp.name */
    unsigned long long mem;  /* totalGlobalMem, bytes */
    int major, minor;        /* compute capability */
    int sms;                 /* multiProcessorCount */
} nas__cuda_dev;

/*
 * Query the CUDA runtime in this process: up to `max` devices into `out`,
 * the number present into *count. Returns NAS_OK, or NAS_ENODEV (no
 * driver, no device; *count = 0) / another mapped status with a reason in
 * `reason` (n bytes), e.g. "CUDA driver version is insufficient for CUDA
 * runtime version (cudaErrorInsufficientDriver)". Initialises CUDA in the
 * calling process: callers that fork CUDA workers later run it in a child
 * (see nas_devices_query).
 */
int nas__cuda_probe(nas__cuda_dev *out, int max, int *count, char *reason, size_t n);

/* In libnas_cuda.so, found with dlsym by trainer/backend_cuda.c. When the
 * shared object cannot be loaded the libnas wrappers return NAS_EBACKEND
 * with "cannot load the CUDA backend library: <why>" (in `reason` for the
 * probe, in err for create). */
typedef int (*nas__cuda_probe_fn)(nas__cuda_dev *out, int max, int *count, char *reason,
                                  size_t n);
typedef int (*nas__cuda_create_fn)(int threads, int device, struct nas_backend **out,
                                   struct nas_error *err);
int nas__cuda_plugin_probe(nas__cuda_dev *out, int max, int *count, char *reason, size_t n);
/* NAS__CUDA_ABI(nas__backend_abi()) as the shared object was compiled
 * (trainer/backend_impl.h; the macro also mixes in this header's
 * nas__cuda_dev, which the probe fills across the boundary). libnas calls
 * it before either entry point and refuses a library without it, or whose
 * value differs from its own, with NAS_EBACKEND "cannot load the CUDA
 * backend library: PATH was built against another nas (backend ABI X,
 * this nas Y) ...". */
#define NAS__CUDA_ABI(backend_abi)                                                     \
    (((backend_abi) ^ (unsigned long long)sizeof(nas__cuda_dev)) * 1099511628211ull)
typedef unsigned long long (*nas__cuda_abi_fn)(void);
unsigned long long nas__cuda_plugin_abi(void);
int nas__cuda_plugin_create(int threads, int device, struct nas_backend **out,
                            struct nas_error *err);

#ifdef __cplusplus
}
#endif
#endif /* NAS_TRAINER_CUDA_PROBE_H */
