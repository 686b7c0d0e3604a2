/*
 * trainer/cuda/cuda_backend.cu - the "cuda" backend: every slot of
 * nas__backend_ops (trainer/backend_impl.h) on one CUDA device.
 *
 *   convolution fwd / bwd-data / bwd-filter   cuDNN (legacy API, still shipped
 *                                             in cuDNN 9); algorithm chosen
 *                                             once per shape with
 *                                             cudnnFind*AlgorithmEx inside a
 *                                             workspace limit, cached
 *   batch norm forward (train, infer)         cuDNN, CUDNN_BATCHNORM_SPATIAL
 *   average pooling forward                   cuDNN, COUNT_EXCLUDE_PADDING
 *   linear (GEMM)                             cuBLAS sgemm (fp32) or
 *                                             cublasGemmEx (fp16 / bf16)
 *   ReLU, batch-norm backward, avg-pool
 *   backward, GAP, bias, axpy, scale,
 *   softmax-xent, SGD, sum of squares         own kernels below, whose
 *                                             per-element arithmetic is the
 *                                             __host__ __device__ code of
 *                                             trainer/kernel_math.h that the
 *                                             ref backend runs on the CPU
 *
 * Why own kernels for some backward passes: the interface gives ReLU and
 * pooling backward no forward output (cuDNN's backward calls want it) and
 * batch-norm backward no eps; our kernels compute exactly the documented
 * formulas from what the interface does pass.
 *
 * Memory: one arena per backend instance (= per trial): plain cudaMalloc'd
 * chunks that tensors are carved from (256-byte aligned); freed blocks are
 * reused by later requests of similar size; everything is released at
 * destroy. No managed memory; host<->device copies are explicit; all work
 * goes to one non-blocking stream per instance.
 *
 * Errors: every CUDA / cuDNN / cuBLAS call is checked and mapped by
 * trainer/cuda/cuda_status.h. A sticky fault (illegal address, launch
 * failure, ECC, ...) marks the instance faulted: that op and every later
 * one return NAS_EDEVFAULT ("restart this worker"), never a result.
 *
 * Precision (cu_set_precision): fp32 by default, convolutions forced to
 * FMA math (no TF32) so results match the reference backend within fp32
 * tolerances; "fp16" / "bf16" cast the operands of convolutions and GEMMs
 * to 16 bits around the cuDNN / cublasGemmEx call (tensor cores, fp32
 * accumulation, fp32 master weights) with dynamic loss scaling for fp16.
 *
 * Latency: CUDA events on the stream (ext slots timer_start/timer_stop).
 *
 * NONE OF THIS FILE'S DEVICE PATHS HAS RUN ON A GPU YET (docs/cuda.md
 * lists them); on a machine without a device only the create-time
 * "no CUDA device" path and nas__cuda_probe run.
 *
 * Built as its own shared object, libnas_cuda.so (with base/status.c and
 * trainer/backend_fail.c), which libnas loads on first use
 * (trainer/backend_cuda.c); its entry points are nas__cuda_plugin_create
 * and nas__cuda_plugin_probe.
 */
#include <cuda_runtime.h> /* cudaMalloc, streams, events, kernels */
#include <cuda_fp16.h>    /* __half (precision fp16) */
#include <cuda_bf16.h>    /* __nv_bfloat16 (precision bf16) */
#include <cublas_v2.h>    /* cublasSgemm, cublasGemmEx */
#include <cudnn.h>        /* convolution, batch norm, pooling */
#include <stdarg.h>       /* va_list for fail messages */
#include <stdio.h>        /* snprintf */
#include <stdlib.h>       /* malloc, free */
#include <string.h>       /* memset, strlen */

#include "trainer/backend_impl.h"      /* nas__backend_ops, nas__backend_fail */
#include "trainer/kernel_math.h"       /* per-element arithmetic shared with ref */
#include "trainer/cuda/cuda_probe.h"   /* nas__cuda_plugin_probe, _create */
#include "trainer/cuda/cuda_status.h"  /* status mapping */
#include "trainer/cuda/loss_scale.h"   /* fp16 dynamic loss scaling */

/* The numeric codes in cuda_status.h must be the toolkit's. */
#define NAS__SA(lib_enum, num) static_assert((int)(lib_enum) == (num), #lib_enum " moved")
NAS__SA(cudaErrorInvalidValue, 1);
NAS__SA(cudaErrorMemoryAllocation, 2);
NAS__SA(cudaErrorInitializationError, 3);
NAS__SA(cudaErrorCudartUnloading, 4);
NAS__SA(cudaErrorStubLibrary, 34);
NAS__SA(cudaErrorInsufficientDriver, 35);
NAS__SA(cudaErrorDevicesUnavailable, 46);
NAS__SA(cudaErrorInvalidDeviceFunction, 98);
NAS__SA(cudaErrorNoDevice, 100);
NAS__SA(cudaErrorInvalidDevice, 101);
NAS__SA(cudaErrorDeviceUninitialized, 201);
NAS__SA(cudaErrorNoKernelImageForDevice, 209);
NAS__SA(cudaErrorECCUncorrectable, 214);
NAS__SA(cudaErrorNvlinkUncorrectable, 220);
NAS__SA(cudaErrorUnsupportedPtxVersion, 222);
NAS__SA(cudaErrorContained, 226);
NAS__SA(cudaErrorIllegalAddress, 700);
NAS__SA(cudaErrorLaunchOutOfResources, 701);
NAS__SA(cudaErrorLaunchTimeout, 702);
NAS__SA(cudaErrorAssert, 710);
NAS__SA(cudaErrorHardwareStackError, 714);
NAS__SA(cudaErrorIllegalInstruction, 715);
NAS__SA(cudaErrorMisalignedAddress, 716);
NAS__SA(cudaErrorInvalidAddressSpace, 717);
NAS__SA(cudaErrorInvalidPc, 718);
NAS__SA(cudaErrorLaunchFailure, 719);
NAS__SA(cudaErrorNotSupported, 801);
NAS__SA(cudaErrorSystemNotReady, 802);
NAS__SA(cudaErrorSystemDriverMismatch, 803);
NAS__SA(cudaErrorCompatNotSupportedOnDevice, 804);
NAS__SA(cudaErrorExternalDevice, 911);
NAS__SA(cudaErrorUnknown, 999);
NAS__SA(CUDNN_STATUS_NOT_INITIALIZED, 1001);
NAS__SA(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH, 1002);
NAS__SA(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED, 1008);
NAS__SA(CUDNN_STATUS_BAD_PARAM, 2000);
NAS__SA(CUDNN_STATUS_NOT_SUPPORTED, 3000);
NAS__SA(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER, 3005);
NAS__SA(CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH, 3007);
NAS__SA(CUDNN_STATUS_INTERNAL_ERROR, 4000);
NAS__SA(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, 4003);
NAS__SA(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED, 4004);
NAS__SA(CUDNN_STATUS_EXECUTION_FAILED, 5000);
NAS__SA(CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER, 5001);
NAS__SA(CUDNN_STATUS_EXECUTION_FAILED_CUDART, 5003);
NAS__SA(CUBLAS_STATUS_NOT_INITIALIZED, 1);
NAS__SA(CUBLAS_STATUS_ALLOC_FAILED, 3);
NAS__SA(CUBLAS_STATUS_INVALID_VALUE, 7);
NAS__SA(CUBLAS_STATUS_ARCH_MISMATCH, 8);
NAS__SA(CUBLAS_STATUS_MAPPING_ERROR, 11);
NAS__SA(CUBLAS_STATUS_EXECUTION_FAILED, 13);
NAS__SA(CUBLAS_STATUS_INTERNAL_ERROR, 14);
NAS__SA(CUBLAS_STATUS_NOT_SUPPORTED, 15);
NAS__SA(CUBLAS_STATUS_LICENSE_ERROR, 16);
#undef NAS__SA

/* ---- tunables ------------------------------------------------------------ */

#define ARENA_CHUNK ((size_t)64 << 20)   /* arena grows in 64 MiB chunks */
#define ARENA_ALIGN ((size_t)256)        /* cudaMalloc's own alignment */
#define WS_LIMIT ((size_t)256 << 20)     /* most cuDNN workspace we ask for */
#define WS_MIN ((size_t)4 << 20)         /* below this: run workspace-free algos */
#define BLOCK 256                        /* threads per block, every kernel */
#define MAX_GRID 4096                    /* grid-stride loops beyond this */
#define SUMSQ_BLOCKS 256                 /* fixed partial count: deterministic */

/* ---- state ---------------------------------------------------------------- */

typedef struct chunk {
    char *base;
    size_t size, used;
} chunk;

typedef struct block {
    char *ptr;
    size_t size;
    int live;
} block;

enum conv_kind { CONV_FWD = 0, CONV_BWD_DATA = 1, CONV_BWD_FILTER = 2 };

typedef struct conv_choice {
    int kind, n, c, h, w, k, r, stride, pad, prec, groups; /* the key */
    int algo;                               /* cudnnConvolution*Algo_t */
    cudnnMathType_t math;
    size_t ws;                              /* workspace bytes it needs */
} conv_choice;

/* Arithmetic of convolutions and GEMMs (nas_backend_set_precision). */
enum precision { PREC_FP32 = 0, PREC_FP16 = 1, PREC_BF16 = 2 };

typedef struct cuda_ctx {
    int device;
    char device_name[256]; /* "NAME, cc M.m", for messages */
    char prop_name[256];   /* cudaDeviceProp.name */
    int cc_major, cc_minor;
    int faulted;              /* a sticky fault happened: every op fails */
    char fault[256];          /* the first fault's description */
    cudaStream_t stream;
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    cudnnTensorDescriptor_t xd, yd, bnd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnPoolingDescriptor_t pd;
    /* arena */
    chunk *chunks;
    int n_chunks, cap_chunks;
    block *blocks;
    int n_blocks, cap_blocks;
    /* cuDNN workspace (allocated on the first convolution) */
    void *ws;
    size_t ws_size;
    int ws_ready;
    /* conv algorithm cache */
    conv_choice *choices;
    int n_choices, cap_choices;
    /* scratch for reductions: device and host */
    void *dscratch;
    size_t dscratch_size;
    void *hscratch;
    size_t hscratch_size;
    /* mixed precision: 16-bit copies of an op's operands (slots 0, 1: inputs;
     * 2: output), the fp16 overflow flag (device int) and the loss scaler */
    int prec;
    void *lp[3];
    size_t lp_size[3];
    int *d_overflow;
    nas__loss_scaler ls;
    int step_open;     /* a backward pass with loss scaling has started */
    int in_step;       /* between step_begin and step_end (issue 19): forward casts flag too */
    int bracketed;     /* the training loop brackets its steps (step_begin / step_end);
                          0: softmax_xent starts each step, as before */
    /* latency timing (CUDA events on the stream) */
    cudaEvent_t ev_start, ev_stop;
} cuda_ctx;

static cuda_ctx *CTX(const nas_backend *be) { return (cuda_ctx *)be->context; }

/* ---- error handling ------------------------------------------------------ */

/* "cudnnConvolutionForward" from "cudnnConvolutionForward(ctx->dnn, ...)". */
static void call_name(char *dst, size_t n, const char *call)
{
    size_t i = 0;
    while (call[i] && call[i] != '(' && i + 1 < n) {
        dst[i] = call[i];
        i++;
    }
    dst[i] = '\0';
}

/* Record the failure of `call` (returning `code` of `lib`, described by
 * `desc`) in be->last_error; mark the instance faulted on a sticky error. */
static int fail_lib(nas_backend *be, nas__cuda_lib lib, int code, const char *desc,
                    const char *call, int line)
{
    cuda_ctx *c = CTX(be);
    char fn[96];
    call_name(fn, sizeof fn, call);
    int st = nas__cuda_status(lib, code);
    if (st != NAS_EDEVFAULT && lib == NAS__CUDA_LIB_RUNTIME)
        (void)cudaGetLastError(); /* a non-sticky error must not resurface at the next check */
    if (st != NAS_EDEVFAULT && lib != NAS__CUDA_LIB_RUNTIME) {
        /* A library failure may be the first sign of a sticky fault. */
        cudaError_t pending = cudaStreamQuery(c->stream);
        if (nas__cuda_status(NAS__CUDA_LIB_RUNTIME, (int)pending) == NAS_EDEVFAULT) {
            st = NAS_EDEVFAULT;
            desc = cudaGetErrorString(pending);
            lib = NAS__CUDA_LIB_RUNTIME;
            code = (int)pending;
        }
    }
    if (st == NAS_EDEVFAULT) {
        if (!c->faulted) {
            c->faulted = 1;
            snprintf(c->fault, sizeof c->fault, "%s: %s (%s)", fn, desc,
                     nas__cuda_code_name(lib, code));
        }
        return nas__backend_fail(be, NAS_EDEVFAULT,
                                 "sticky fault on CUDA device %d (%s): %s: %s (%s) "
                                 "[cuda_backend.cu:%d]; restart this worker",
                                 c->device, c->device_name, fn, desc,
                                 nas__cuda_code_name(lib, code), line);
    }
    return nas__backend_fail(be, st, "CUDA device %d: %s: %s (%s) [cuda_backend.cu:%d]", c->device,
                             fn, desc, nas__cuda_code_name(lib, code), line);
}

static int fail_rt(nas_backend *be, cudaError_t e, const char *call, int line)
{
    return fail_lib(be, NAS__CUDA_LIB_RUNTIME, (int)e, cudaGetErrorString(e), call, line);
}

/* The result of a CUDA runtime, cuDNN or cuBLAS call: its library, code
 * and (on failure) the library's description. One overload per library, so
 * one macro checks a call of any of them. */
struct cu_result {
    bool ok;
    nas__cuda_lib lib;
    int code;
    const char *desc;
};

static cu_result cu_result_of(cudaError_t e)
{
    return {e == cudaSuccess, NAS__CUDA_LIB_RUNTIME, (int)e,
            e == cudaSuccess ? "" : cudaGetErrorString(e)};
}

static cu_result cu_result_of(cudnnStatus_t s)
{
    return {s == CUDNN_STATUS_SUCCESS, NAS__CUDA_LIB_CUDNN, (int)s,
            s == CUDNN_STATUS_SUCCESS ? "" : cudnnGetErrorString(s)};
}

static cu_result cu_result_of(cublasStatus_t s)
{
    return {s == CUBLAS_STATUS_SUCCESS, NAS__CUDA_LIB_CUBLAS, (int)s,
            s == CUBLAS_STATUS_SUCCESS ? "" : cublasGetStatusString(s)};
}

/* Run `call` (CUDA runtime, cuDNN or cuBLAS) in an op of `be`; on failure
 * record it (fail_lib) and return its nas status. */
#define CU(be, call)                                                                 \
    do {                                                                             \
        cu_result r_ = cu_result_of(call);                                           \
        if (!r_.ok)                                                                  \
            return fail_lib((be), r_.lib, r_.code, r_.desc, #call, __LINE__);        \
    } while (0)
/* After a kernel launch: configuration errors now, earlier sticky faults. */
#define LAUNCHED(be, name)                             \
    do {                                               \
        cudaError_t e_ = cudaGetLastError();           \
        if (e_ != cudaSuccess)                         \
            return fail_rt((be), e_, name, __LINE__);  \
    } while (0)

/* Every op starts here: refuse after a sticky fault; bind the device. */
static int enter(nas_backend *be)
{
    cuda_ctx *c = CTX(be);
    if (c->faulted)
        return nas__backend_fail(be, NAS_EDEVFAULT,
                                 "CUDA device %d (%s) had a sticky fault earlier (%s); restart "
                                 "this worker",
                                 c->device, c->device_name, c->fault);
    int cur = -1;
    CU(be, cudaGetDevice(&cur));
    if (cur != c->device)
        CU(be, cudaSetDevice(c->device));
    return NAS_OK;
}

#define ENTER(be)              \
    do {                       \
        int rc_ = enter(be);   \
        if (rc_ != NAS_OK)     \
            return rc_;        \
    } while (0)

static unsigned grid_for(size_t n)
{
    size_t g = (n + BLOCK - 1) / BLOCK;
    if (g < 1)
        g = 1;
    return (unsigned)(g > MAX_GRID ? MAX_GRID : g);
}

/* ---- kernels ---------------------------------------------------------------
 * Launch geometry only: the arithmetic is in trainer/kernel_math.h. Every
 * element loop is grid-stride over size_t indices. */

#define GRID_STRIDE(i, n) \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)blockDim.x * gridDim.x)

__global__ void k_relu_fwd(const float *x, float *y, size_t n)
{
    GRID_STRIDE(i, n) y[i] = nas__relu(x[i]);
}

__global__ void k_relu_bwd(const float *x, const float *dy, float *dx, size_t n)
{
    GRID_STRIDE(i, n) dx[i] = nas__relu_grad(x[i], dy[i]);
}

__global__ void k_axpy(float alpha, const float *x, float *y, size_t n)
{
    GRID_STRIDE(i, n) y[i] += alpha * x[i];
}

__global__ void k_scale(float alpha, const float *x, float *y, size_t n)
{
    GRID_STRIDE(i, n) y[i] = alpha * x[i];
}

__global__ void k_sgd(float *w, const float *dw, float *v, size_t n, float lr, float momentum,
                      float wd, int nesterov)
{
    GRID_STRIDE(i, n)
    {
        float wi = w[i], vi = v[i];
        nas__sgd_update(&wi, dw[i], &vi, lr, momentum, wd, nesterov);
        w[i] = wi;
        v[i] = vi;
    }
}

/* SGD on loss-scaled gradients (precision fp16): dw carries the factor S,
 * inv_scale = 1/S; the whole step is skipped when *overflow is set (some
 * gradient of this step overflowed fp16). nas__sgd_update_scaled is the
 * arithmetic tests/unit/test_loss_scale.c checks on the CPU. */
__global__ void k_sgd_scaled(float *w, const float *dw, float *v, size_t n, float lr,
                             float momentum, float wd, int nesterov, float inv_scale,
                             const int *overflow)
{
    int skip = *overflow;
    if (skip)
        return;
    GRID_STRIDE(i, n)
    {
        float wi = w[i], vi = v[i];
        nas__sgd_update_scaled(&wi, dw[i], &vi, lr, momentum, wd, nesterov, inv_scale, skip);
        w[i] = wi;
        v[i] = vi;
    }
}

/* fp32 <-> 16-bit conversions around the tensor-core convolutions and
 * GEMMs (round to nearest even). `overflow` (NULL: not checked) is set to 1
 * when a value does not fit fp16 (to_lp) or a 16-bit result is inf/NaN
 * (from_lp): the fp16 loss scaler then skips the step. */
template <typename T> __device__ T lp_from_float(float v);
template <> __device__ __half lp_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __nv_bfloat16 lp_from_float<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}
__device__ float lp_to_float(__half v) { return __half2float(v); }
__device__ float lp_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __global__ void k_to_lp(const float *x, T *y, size_t n, int *overflow)
{
    GRID_STRIDE(i, n)
    {
        float v = x[i];
        if (overflow && nas__fp16_overflows(v))
            *overflow = 1; /* every writer stores 1: no atomics needed */
        y[i] = lp_from_float<T>(v);
    }
}

template <typename T> __global__ void k_from_lp(const T *x, float *y, size_t n, int *overflow)
{
    GRID_STRIDE(i, n)
    {
        float v = lp_to_float(x[i]);
        if (overflow && nas__nonfinite(v))
            *overflow = 1;
        y[i] = v;
    }
}

/* y[n, m] += b[m] for y[rows, cols]. */
__global__ void k_add_bias(float *y, const float *b, size_t rows, size_t cols)
{
    GRID_STRIDE(i, rows * cols) y[i] += b[i % cols];
}

/* db[m] = sum_n dy[n, m]; one thread per column, rows summed in order. */
__global__ void k_col_sum(const float *dy, float *db, int rows, int cols)
{
    GRID_STRIDE(m, (size_t)cols)
    {
        float s = 0.0f;
        for (int r = 0; r < rows; r++)
            s += dy[(size_t)r * cols + m];
        db[m] = s;
    }
}

/* y[p] = mean of x[p*hw .. p*hw+hw) for p < planes. */
__global__ void k_gap_fwd(const float *x, float *y, size_t planes, int hw)
{
    GRID_STRIDE(p, planes)
    {
        const float *row = x + p * (size_t)hw;
        float s = 0.0f;
        for (int j = 0; j < hw; j++)
            s += row[j];
        y[p] = s / (float)hw;
    }
}

__global__ void k_gap_bwd(const float *dy, float *dx, size_t n, int hw)
{
    GRID_STRIDE(i, n) dx[i] = dy[i / (size_t)hw] / (float)hw;
}

/* issue 15: activations, SE channel scale and dropout (arithmetic in
 * trainer/kernel_math.h, as the ref backend's). */
__global__ void k_act_fwd(int fn, const float *x, float *y, size_t n)
{
    GRID_STRIDE(i, n) y[i] = nas__act(fn, x[i]);
}

__global__ void k_act_bwd(int fn, const float *x, const float *dy, float *dx, size_t n)
{
    GRID_STRIDE(i, n) dx[i] = nas__act_grad(fn, x[i], dy[i]);
}

__global__ void k_chscale_fwd(const float *x, const float *s, float *y, size_t n, int hw)
{
    GRID_STRIDE(i, n) y[i] = x[i] * s[i / (size_t)hw];
}

/* ds[p] = sum over the plane of dy * x (one thread per plane: fixed order);
 * dx = dy * s when dx is not NULL */
__global__ void k_chscale_bwd(const float *x, const float *s, const float *dy, float *dx,
                              float *ds, size_t planes, int hw)
{
    GRID_STRIDE(p, planes)
    {
        const float *xr = x + p * (size_t)hw, *gr = dy + p * (size_t)hw;
        float acc = 0.0f;
        for (int j = 0; j < hw; j++) {
            acc += gr[j] * xr[j];
            if (dx)
                dx[p * (size_t)hw + j] = gr[j] * s[p];
        }
        ds[p] = acc;
    }
}

__global__ void k_dropout(const float *x, float *y, size_t n, float p, unsigned long long seed)
{
    float scale = 1.0f / (1.0f - p);
    GRID_STRIDE(i, n) y[i] = nas__dropout_keep(seed, i, p) ? x[i] * scale : 0.0f;
}

/* Average-pool backward: one thread per input element, the gather of
 * nas__avgpool_bwd_gather (deterministic, no atomics). */
__global__ void k_avgpool_bwd(const float *dy, float *dx, size_t n_in, int h, int w, int ho,
                              int wo, int k, int stride, int pad)
{
    GRID_STRIDE(i, n_in)
    {
        int ix = (int)(i % (size_t)w);
        int iy = (int)((i / (size_t)w) % (size_t)h);
        size_t plane = i / ((size_t)w * h);
        dx[i] = nas__avgpool_bwd_gather(dy + plane * (size_t)ho * wo, iy, ix, h, w, ho, wo, k,
                                        stride, pad);
    }
}

/*
 * Batch-norm backward, pass 1: per channel c, sum_dy = sum(dy) and
 * sum_dy_xhat = sum(dy * xhat) over N*H*W; one block per channel,
 * fixed-order tree reduction (deterministic). Writes dbeta = sum_dy,
 * dgamma = sum_dy_xhat.
 */
__global__ void k_bn_bwd_reduce(const float *x, const float *dy, const float *mean,
                                const float *invstd, float *dgamma, float *dbeta, int n, int ch,
                                int hw)
{
    __shared__ float s_dy[BLOCK];
    __shared__ float s_dyx[BLOCK];
    int c = blockIdx.x;
    float mu = mean[c], is = invstd[c];
    float a = 0.0f, b = 0.0f;
    size_t m = (size_t)n * hw;
    for (size_t j = threadIdx.x; j < m; j += blockDim.x) {
        size_t idx = ((j / hw) * ch + c) * (size_t)hw + j % hw;
        float g = dy[idx];
        a += g;
        b += g * (x[idx] - mu) * is;
    }
    s_dy[threadIdx.x] = a;
    s_dyx[threadIdx.x] = b;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half) {
            s_dy[threadIdx.x] += s_dy[threadIdx.x + half];
            s_dyx[threadIdx.x] += s_dyx[threadIdx.x + half];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        dbeta[c] = s_dy[0];
        dgamma[c] = s_dyx[0];
    }
}

/* Batch-norm backward, pass 2: dx per element with nas__bn_grad. */
__global__ void k_bn_bwd_dx(const float *x, const float *dy, const float *gamma,
                            const float *mean, const float *invstd, const float *dgamma,
                            const float *dbeta, float *dx, size_t total, int ch, int hw, float m)
{
    GRID_STRIDE(i, total)
    {
        int c = (int)((i / (size_t)hw) % (size_t)ch);
        float xhat = (x[i] - mean[c]) * invstd[c];
        dx[i] = nas__bn_grad(dy[i], xhat, gamma[c], invstd[c], dbeta[c], dgamma[c], m);
    }
}

/*
 * Softmax cross-entropy, one thread per row (K is small: 10 classes):
 * out[r] = row loss, out[rows + r] = 1 if argmax == label else 0, or -1
 * when the label is not an integer in [0, K).
 */
__global__ void k_softmax_xent(const float *logits, const float *labels, float *dlogits,
                               float *out, int rows, int k)
{
    GRID_STRIDE(r, (size_t)rows)
    {
        float lf = labels[r];
        int label = (int)lf;
        if (!(lf >= 0.0f) || label >= k || (float)label != lf) {
            out[r] = 0.0f;
            out[rows + r] = -1.0f;
            continue;
        }
        int am = 0;
        float loss = nas__softmax_xent_row(logits + r * (size_t)k, k, label, 1.0f / (float)rows,
                                           dlogits ? dlogits + r * (size_t)k : NULL, &am);
        out[r] = loss;
        out[rows + r] = am == label ? 1.0f : 0.0f;
    }
}

/* Partial sums of squares in double, one per block (fixed grid). */
__global__ void k_sumsq(const float *x, size_t n, double *partial)
{
    __shared__ double s[BLOCK];
    double a = 0.0;
    GRID_STRIDE(i, n)
    {
        double v = (double)x[i];
        a += v * v;
    }
    s[threadIdx.x] = a;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half)
            s[threadIdx.x] += s[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        partial[blockIdx.x] = s[0];
}

/* Does nothing: launched at create to check the binary has code for the
 * device's architecture. */
__global__ void k_probe(void) {}

/* ---- memory: the per-trial arena ------------------------------------------ */

static size_t round_up(size_t b) { return (b + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN; }

/* Record an out-of-memory failure of `need` bytes. */
static int fail_oom(nas_backend *be, size_t need)
{
    cuda_ctx *c = CTX(be);
    size_t fr = 0, total = 0;
    (void)cudaGetLastError(); /* clear the (non-sticky) allocation error */
    if (cudaMemGetInfo(&fr, &total) != cudaSuccess)
        fr = 0;
    char msg[160];
    nas__cuda_oom_message(msg, sizeof msg, need, fr);
    return nas__backend_fail(be, NAS_ENOMEM, "%s (CUDA device %d, %s, %llu MiB total)", msg,
                             c->device, c->device_name, nas__cuda_mib_down(total));
}

/* cudaMalloc that maps out-of-memory to the "needs X MiB" message. */
static int dev_malloc(nas_backend *be, void **p, size_t bytes)
{
    *p = NULL;
    cudaError_t e = cudaMalloc(p, bytes);
    if (e == cudaErrorMemoryAllocation) {
        *p = NULL;
        return fail_oom(be, bytes);
    }
    if (e != cudaSuccess) {
        *p = NULL;
        return fail_rt(be, e, "cudaMalloc", __LINE__);
    }
    return NAS_OK;
}

static int grow(void **arr, int *cap, size_t elem)
{
    int nc = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p)
        return NAS_ENOMEM;
    *arr = p;
    *cap = nc;
    return NAS_OK;
}

static int cu_alloc(nas_backend *be, size_t bytes, void **buf)
{
    cuda_ctx *c = CTX(be);
    *buf = NULL;
    ENTER(be);
    if (bytes == 0)
        return NAS_OK;
    size_t need = round_up(bytes);
    /* 1. a freed block of similar size (at most twice as large) */
    int best = -1;
    for (int i = 0; i < c->n_blocks; i++) {
        block *b = &c->blocks[i];
        if (!b->live && b->size >= need && b->size <= 2 * need &&
            (best < 0 || b->size < c->blocks[best].size))
            best = i;
    }
    if (best >= 0) {
        c->blocks[best].live = 1;
        *buf = c->blocks[best].ptr;
        return NAS_OK;
    }
    if (c->n_blocks == c->cap_blocks &&
        grow((void **)&c->blocks, &c->cap_blocks, sizeof(block)) != NAS_OK)
        return nas__backend_fail(be, NAS_ENOMEM, "cuda alloc: host out of memory");
    /* 2. the tail of the newest chunk */
    chunk *ck = c->n_chunks ? &c->chunks[c->n_chunks - 1] : NULL;
    if (!ck || ck->size - ck->used < need) {
        if (c->n_chunks == c->cap_chunks &&
            grow((void **)&c->chunks, &c->cap_chunks, sizeof(chunk)) != NAS_OK)
            return nas__backend_fail(be, NAS_ENOMEM, "cuda alloc: host out of memory");
        /* 3. a new chunk: ARENA_CHUNK, or exactly `need` when that fails */
        size_t size = need > ARENA_CHUNK ? need : ARENA_CHUNK;
        void *p = NULL;
        cudaError_t e = cudaMalloc(&p, size);
        if (e == cudaErrorMemoryAllocation && size > need) {
            (void)cudaGetLastError();
            size = need;
            e = cudaMalloc(&p, size);
        }
        if (e == cudaErrorMemoryAllocation)
            return fail_oom(be, need);
        if (e != cudaSuccess)
            return fail_rt(be, e, "cudaMalloc", __LINE__);
        ck = &c->chunks[c->n_chunks++];
        ck->base = (char *)p;
        ck->size = size;
        ck->used = 0;
    }
    block *b = &c->blocks[c->n_blocks++];
    b->ptr = ck->base + ck->used;
    b->size = need;
    b->live = 1;
    ck->used += need;
    *buf = b->ptr;
    return NAS_OK;
}

static void cu_free(nas_backend *be, void *buf)
{
    if (!buf)
        return;
    cuda_ctx *c = CTX(be);
    for (int i = c->n_blocks - 1; i >= 0; i--)
        if (c->blocks[i].ptr == (char *)buf) {
            c->blocks[i].live = 0; /* reused in stream order: no sync needed */
            return;
        }
}

/* Device scratch of at least `bytes`. */
static int dscratch(nas_backend *be, size_t bytes, void **p)
{
    cuda_ctx *c = CTX(be);
    if (c->dscratch_size < bytes) {
        if (c->dscratch) {
            CU(be, cudaStreamSynchronize(c->stream));
            CU(be, cudaFree(c->dscratch));
        }
        c->dscratch = NULL;
        c->dscratch_size = 0;
        int rc = dev_malloc(be, &c->dscratch, round_up(bytes));
        if (rc != NAS_OK)
            return rc;
        c->dscratch_size = round_up(bytes);
    }
    *p = c->dscratch;
    return NAS_OK;
}

static int hscratch(nas_backend *be, size_t bytes, void **p)
{
    cuda_ctx *c = CTX(be);
    if (c->hscratch_size < bytes) {
        void *q = realloc(c->hscratch, bytes);
        if (!q)
            return nas__backend_fail(be, NAS_ENOMEM, "cuda: host scratch of %zu bytes", bytes);
        c->hscratch = q;
        c->hscratch_size = bytes;
    }
    *p = c->hscratch;
    return NAS_OK;
}

static int cu_upload(nas_backend *be, void *dst, const float *src, size_t count)
{
    ENTER(be);
    /* From pageable memory the copy is staged before the call returns, so
     * the caller may reuse `src` at once. */
    CU(be, cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyHostToDevice,
                           CTX(be)->stream));
    return NAS_OK;
}

static int cu_download(nas_backend *be, float *dst, const void *src, size_t count)
{
    ENTER(be);
    CU(be, cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyDeviceToHost,
                           CTX(be)->stream));
    CU(be, cudaStreamSynchronize(CTX(be)->stream));
    return NAS_OK;
}

static int cu_zero(nas_backend *be, void *buf, size_t count)
{
    ENTER(be);
    CU(be, cudaMemsetAsync(buf, 0, count * sizeof(float), CTX(be)->stream));
    return NAS_OK;
}

static int cu_copy(nas_backend *be, void *dst, const void *src, size_t count)
{
    ENTER(be);
    CU(be, cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyDeviceToDevice,
                           CTX(be)->stream));
    return NAS_OK;
}

static int cu_sync(nas_backend *be)
{
    ENTER(be);
    CU(be, cudaStreamSynchronize(CTX(be)->stream));
    return NAS_OK;
}

/* ---- descriptors ---------------------------------------------------------------- */

static int set4d(nas_backend *be, cudnnTensorDescriptor_t d, int n, int c, int h, int w)
{
    CU(be, cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
    return NAS_OK;
}

#define TRY(expr)              \
    do {                       \
        int rc_ = (expr);      \
        if (rc_ != NAS_OK)     \
            return rc_;        \
    } while (0)

/* ---- mixed precision: 16-bit operand copies -------------------------------------- */

/* The cuDNN / CUDA type of the 16-bit copies (fp32: the tensors themselves). */
static cudnnDataType_t dnn_type(int prec)
{
    return prec == PREC_FP16 ? CUDNN_DATA_HALF
                             : prec == PREC_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

static cudaDataType_t blas_type(int prec)
{
    return prec == PREC_FP16 ? CUDA_R_16F : prec == PREC_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* The overflow flag for casts of loss-scaled gradients (fp16 only). */
static int *grad_flag(const cuda_ctx *c) { return c->prec == PREC_FP16 ? c->d_overflow : NULL; }

/* The overflow flag for the casts of a training step's forward (fp16,
 * between step_begin and step_end): an activation or weight beyond fp16's
 * range then makes the loss scaler skip the step instead of ending the
 * training with a NaN loss (issue 19). Eval forwards are not flagged. */
static int *fwd_flag(const cuda_ctx *c)
{
    return c->prec == PREC_FP16 && c->in_step ? c->d_overflow : NULL;
}

/* Device scratch slot `slot` holding at least `count` 16-bit elements;
 * grown (after the stream drains) when too small, kept for later ops. */
static int lp_buf(nas_backend *be, int slot, size_t count, void **p)
{
    cuda_ctx *c = CTX(be);
    size_t bytes = round_up(count * 2);
    if (c->lp_size[slot] < bytes) {
        if (c->lp[slot]) {
            CU(be, cudaStreamSynchronize(c->stream));
            CU(be, cudaFree(c->lp[slot]));
        }
        c->lp[slot] = NULL;
        c->lp_size[slot] = 0;
        TRY(dev_malloc(be, &c->lp[slot], bytes));
        c->lp_size[slot] = bytes;
    }
    *p = c->lp[slot];
    return NAS_OK;
}

/* 16-bit copy of fp32 tensor t in slot `slot` (flag: see k_to_lp). */
static int to_lp(nas_backend *be, const nas_tensor *t, int slot, int *flag, void **out)
{
    cuda_ctx *c = CTX(be);
    TRY(lp_buf(be, slot, t->count, out));
    if (c->prec == PREC_BF16)
        k_to_lp<__nv_bfloat16><<<grid_for(t->count), BLOCK, 0, c->stream>>>(
                (const float *)t->buf, (__nv_bfloat16 *)*out, t->count, flag);
    else
        k_to_lp<__half><<<grid_for(t->count), BLOCK, 0, c->stream>>>(
                (const float *)t->buf, (__half *)*out, t->count, flag);
    LAUNCHED(be, "k_to_lp");
    return NAS_OK;
}

/* fp32 tensor t = the 16-bit values at src (flag: see k_from_lp). */
static int from_lp(nas_backend *be, const void *src, nas_tensor *t, int *flag)
{
    cuda_ctx *c = CTX(be);
    if (c->prec == PREC_BF16)
        k_from_lp<__nv_bfloat16><<<grid_for(t->count), BLOCK, 0, c->stream>>>(
                (const __nv_bfloat16 *)src, (float *)t->buf, t->count, flag);
    else
        k_from_lp<__half><<<grid_for(t->count), BLOCK, 0, c->stream>>>(
                (const __half *)src, (float *)t->buf, t->count, flag);
    LAUNCHED(be, "k_from_lp");
    return NAS_OK;
}

/* x, w, y descriptors and the convolution (cross-correlation, as PyTorch).
 * fp32: fp32 tensors, FMA math (no TF32). fp16 / bf16: 16-bit tensors with
 * fp32 accumulation (cuDNN's PSEUDO_HALF / PSEUDO_BFLOAT16 configurations)
 * on tensor cores (CUDNN_TENSOR_OP_MATH). */
static int conv_descs(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                      const nas_tensor *y, int stride, int pad, int groups)
{
    cuda_ctx *c = CTX(be);
    cudnnDataType_t dt = dnn_type(c->prec);
    CU(be, cudnnSetTensor4dDescriptor(c->xd, CUDNN_TENSOR_NCHW, dt, x->n, x->c, x->h, x->w));
    CU(be, cudnnSetTensor4dDescriptor(c->yd, CUDNN_TENSOR_NCHW, dt, y->n, y->c, y->h, y->w));
    CU(be, cudnnSetFilter4dDescriptor(c->wd, dt, CUDNN_TENSOR_NCHW, w->n, w->c, w->h, w->w));
    CU(be, cudnnSetConvolution2dDescriptor(c->cd, pad, pad, stride, stride, 1, 1,
                                           CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    /* issue 15: grouped / depthwise (filter [K, C/groups, R, R]); set on
     * every call, the descriptor is shared */
    CU(be, cudnnSetConvolutionGroupCount(c->cd, groups));
    CU(be, cudnnSetConvolutionMathType(c->cd, c->prec == PREC_FP32 ? CUDNN_FMA_MATH
                                                                    : CUDNN_TENSOR_OP_MATH));
    return NAS_OK;
}

/* The workspace used for algorithm search and execution: WS_LIMIT, halved
 * while the device cannot spare it, none below WS_MIN. */
static int ensure_ws(nas_backend *be)
{
    cuda_ctx *c = CTX(be);
    if (c->ws_ready)
        return NAS_OK;
    for (size_t s = WS_LIMIT; s >= WS_MIN; s /= 2) {
        void *p = NULL;
        cudaError_t e = cudaMalloc(&p, s);
        if (e == cudaSuccess) {
            c->ws = p;
            c->ws_size = s;
            break;
        }
        if (e != cudaErrorMemoryAllocation)
            return fail_rt(be, e, "cudaMalloc(workspace)", __LINE__);
        (void)cudaGetLastError();
    }
    c->ws_ready = 1;
    return NAS_OK;
}

static conv_choice *find_choice(cuda_ctx *c, int kind, const nas_tensor *x, const nas_tensor *w,
                                int stride, int pad, int groups)
{
    for (int i = 0; i < c->n_choices; i++) {
        conv_choice *q = &c->choices[i];
        if (q->kind == kind && q->n == x->n && q->c == x->c && q->h == x->h && q->w == x->w &&
            q->k == w->n && q->r == w->h && q->stride == stride && q->pad == pad &&
            q->prec == c->prec && q->groups == groups)
            return q;
    }
    return NULL;
}

/* Pick from cuDNN's measured results (fastest first): the fastest
 * deterministic one that succeeded within the workspace, else the fastest
 * that succeeded. */
template <typename Perf>
static int pick_perf(const Perf *perf, int n, size_t ws_size)
{
    int any = -1;
    for (int i = 0; i < n; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ws_size)
            continue;
        if (perf[i].determinism == CUDNN_DETERMINISTIC)
            return i;
        if (any < 0)
            any = i;
    }
    return any;
}

/* The cached algorithm for this shape and precision, measured on first use
 * with cudnnFind*AlgorithmEx on the op's own buffers xb, wb, yb (fp32
 * tensors or their 16-bit copies; outputs are overwritten by the real call
 * that follows). Descriptors must be set. */
static int conv_algo(nas_backend *be, int kind, const nas_tensor *x, const nas_tensor *w,
                     const void *xb, const void *wb, const void *yb, int stride, int pad,
                     int groups, conv_choice **out)
{
    cuda_ctx *c = CTX(be);
    *out = find_choice(c, kind, x, w, stride, pad, groups);
    if (*out)
        return NAS_OK;
    TRY(ensure_ws(be));
    int got = 0, pick = -1, algo = 0;
    size_t mem = 0;
    cudnnMathType_t math = CUDNN_FMA_MATH;
    /* cudnnFind*Ex writes its output argument: the real output of the op */
    void *xw = (void *)xb, *ww = (void *)wb, *yw = (void *)yb;
    if (kind == CONV_FWD) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        CU(be, cudnnFindConvolutionForwardAlgorithmEx(c->dnn, c->xd, xb, c->wd, wb, c->cd,
                                                      c->yd, yw,
                                                      CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got,
                                                      perf, c->ws, c->ws_size));
        pick = pick_perf(perf, got, c->ws_size);
        if (pick >= 0) {
            algo = (int)perf[pick].algo;
            mem = perf[pick].memory;
            math = perf[pick].mathType;
        }
    } else if (kind == CONV_BWD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        CU(be, cudnnFindConvolutionBackwardDataAlgorithmEx(
                    c->dnn, c->wd, wb, c->yd, yb, c->cd, c->xd, xw,
                    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf, c->ws, c->ws_size));
        pick = pick_perf(perf, got, c->ws_size);
        if (pick >= 0) {
            algo = (int)perf[pick].algo;
            mem = perf[pick].memory;
            math = perf[pick].mathType;
        }
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        CU(be, cudnnFindConvolutionBackwardFilterAlgorithmEx(
                    c->dnn, c->xd, xb, c->yd, yb, c->cd, c->wd, ww,
                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, perf, c->ws, c->ws_size));
        pick = pick_perf(perf, got, c->ws_size);
        if (pick >= 0) {
            algo = (int)perf[pick].algo;
            mem = perf[pick].memory;
            math = perf[pick].mathType;
        }
    }
    static const char *const kinds[] = {"forward", "backward-data", "backward-filter"};
    static const char *const precs[] = {"fp32", "fp16", "bf16"};
    if (pick < 0)
        return nas__backend_fail(be, NAS_EUNSUPPORTED,
                                 "cuDNN has no %s %s convolution algorithm for x[%d,%d,%d,%d] "
                                 "w[%d,%d,%d,%d] stride %d pad %d within a %llu MiB workspace",
                                 precs[c->prec], kinds[kind], x->n, x->c, x->h, x->w, w->n, w->c,
                                 w->h, w->w, stride, pad, nas__cuda_mib_down(c->ws_size));
    if (c->n_choices == c->cap_choices &&
        grow((void **)&c->choices, &c->cap_choices, sizeof(conv_choice)) != NAS_OK)
        return nas__backend_fail(be, NAS_ENOMEM, "cuda: host out of memory (algorithm cache)");
    conv_choice *q = &c->choices[c->n_choices++];
    q->kind = kind;
    q->n = x->n;
    q->c = x->c;
    q->h = x->h;
    q->w = x->w;
    q->k = w->n;
    q->r = w->h;
    q->stride = stride;
    q->pad = pad;
    q->prec = c->prec;
    q->groups = groups;
    q->algo = algo;
    q->math = math;
    q->ws = mem;
    *out = q;
    return NAS_OK;
}

/* ---- convolution -------------------------------------------------------------- */

static const float ONE = 1.0f, ZERO = 0.0f;

/* The device buffers of one convolution call: the two it reads (in0, in1)
 * and the one it writes (out). fp32: the tensors' own buffers. fp16 / bf16:
 * cast around the convolution - the inputs to 16-bit copies (slots 0, 1),
 * the output computed into slot 2 and widened into the fp32 output tensor
 * by conv_finish - so every nas_tensor stays fp32 (the interface's
 * contract) and the weights the optimiser updates are the fp32 masters.
 * Gradient casts (flag: grad_flag) note fp16 overflow for the loss scaler. */
typedef struct conv_bufs {
    const void *in0, *in1;
    void *out;
} conv_bufs;

static int conv_start(nas_backend *be, const nas_tensor *in0, int *flag0, const nas_tensor *in1,
                      int *flag1, const nas_tensor *out, conv_bufs *b)
{
    b->in0 = in0->buf;
    b->in1 = in1->buf;
    b->out = out->buf;
    if (CTX(be)->prec != PREC_FP32) {
        void *a, *d;
        TRY(to_lp(be, in0, 0, flag0, &a));
        TRY(to_lp(be, in1, 1, flag1, &d));
        TRY(lp_buf(be, 2, out->count, &b->out));
        b->in0 = a;
        b->in1 = d;
    }
    return NAS_OK;
}

/* fp16 / bf16: widen the output computed in slot 2 into `out`. */
static int conv_finish(nas_backend *be, const conv_bufs *b, nas_tensor *out, int *flag)
{
    if (CTX(be)->prec != PREC_FP32)
        TRY(from_lp(be, b->out, out, flag));
    return NAS_OK;
}

static int cu_gconv2d_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                          nas_tensor *y, int stride, int pad, int groups)
{
    cuda_ctx *c = CTX(be);
    conv_choice *q;
    conv_bufs b; /* in0 = x, in1 = w, out = y */
    ENTER(be);
    TRY(conv_start(be, x, fwd_flag(c), w, fwd_flag(c), y, &b));
    TRY(conv_descs(be, x, w, y, stride, pad, groups));
    TRY(conv_algo(be, CONV_FWD, x, w, b.in0, b.in1, b.out, stride, pad, groups, &q));
    CU(be, cudnnSetConvolutionMathType(c->cd, q->math));
    CU(be, cudnnConvolutionForward(c->dnn, &ONE, c->xd, b.in0, c->wd, b.in1, c->cd,
                                   (cudnnConvolutionFwdAlgo_t)q->algo, c->ws, q->ws, &ZERO,
                                   c->yd, b.out));
    return conv_finish(be, &b, y, fwd_flag(c));
}

static int cu_gconv2d_bwd_data(nas_backend *be, const nas_tensor *dy, const nas_tensor *w,
                               nas_tensor *dx, int stride, int pad, int groups)
{
    cuda_ctx *c = CTX(be);
    conv_choice *q;
    conv_bufs b; /* in0 = dy, in1 = w, out = dx */
    ENTER(be);
    TRY(conv_start(be, dy, grad_flag(c), w, NULL, dx, &b));
    TRY(conv_descs(be, dx, w, dy, stride, pad, groups));
    TRY(conv_algo(be, CONV_BWD_DATA, dx, w, b.out, b.in1, b.in0, stride, pad, groups, &q));
    CU(be, cudnnSetConvolutionMathType(c->cd, q->math));
    CU(be, cudnnConvolutionBackwardData(c->dnn, &ONE, c->wd, b.in1, c->yd, b.in0, c->cd,
                                        (cudnnConvolutionBwdDataAlgo_t)q->algo, c->ws, q->ws,
                                        &ZERO, c->xd, b.out));
    return conv_finish(be, &b, dx, grad_flag(c));
}

static int cu_gconv2d_bwd_filter(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                                 nas_tensor *dw, int stride, int pad, int groups)
{
    cuda_ctx *c = CTX(be);
    conv_choice *q;
    conv_bufs b; /* in0 = x, in1 = dy, out = dw */
    ENTER(be);
    TRY(conv_start(be, x, NULL, dy, grad_flag(c), dw, &b));
    TRY(conv_descs(be, x, dw, dy, stride, pad, groups));
    TRY(conv_algo(be, CONV_BWD_FILTER, x, dw, b.in0, b.out, b.in1, stride, pad, groups, &q));
    CU(be, cudnnSetConvolutionMathType(c->cd, q->math));
    CU(be, cudnnConvolutionBackwardFilter(c->dnn, &ONE, c->xd, b.in0, c->yd, b.in1, c->cd,
                                          (cudnnConvolutionBwdFilterAlgo_t)q->algo, c->ws,
                                          q->ws, &ZERO, c->wd, b.out));
    return conv_finish(be, &b, dw, grad_flag(c));
}

static int cu_conv2d_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w, nas_tensor *y,
                         int stride, int pad)
{
    return cu_gconv2d_fwd(be, x, w, y, stride, pad, 1);
}

static int cu_conv2d_bwd_data(nas_backend *be, const nas_tensor *dy, const nas_tensor *w,
                              nas_tensor *dx, int stride, int pad)
{
    return cu_gconv2d_bwd_data(be, dy, w, dx, stride, pad, 1);
}

static int cu_conv2d_bwd_filter(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                                nas_tensor *dw, int stride, int pad)
{
    return cu_gconv2d_bwd_filter(be, x, dy, dw, stride, pad, 1);
}

/* ---- batch norm ------------------------------------------------------------------ */

static int bn_descs(nas_backend *be, const nas_tensor *x)
{
    cuda_ctx *c = CTX(be);
    TRY(set4d(be, c->xd, x->n, x->c, x->h, x->w));
    CU(be, cudnnDeriveBNTensorDescriptor(c->bnd, c->xd, CUDNN_BATCHNORM_SPATIAL));
    return NAS_OK;
}

static int cu_bn_fwd_train(nas_backend *be, const nas_tensor *x, const nas_tensor *gamma,
                           const nas_tensor *beta, nas_tensor *y, nas_tensor *save_mean,
                           nas_tensor *save_invstd, nas_tensor *running_mean,
                           nas_tensor *running_var, float momentum, float eps)
{
    cuda_ctx *c = CTX(be);
    ENTER(be);
    if ((double)eps < CUDNN_BN_MIN_EPSILON)
        return nas__backend_fail(be, NAS_EUNSUPPORTED,
                                 "batchnorm: eps %g is below cuDNN's minimum %g", (double)eps,
                                 (double)CUDNN_BN_MIN_EPSILON);
    TRY(bn_descs(be, x));
    /* cuDNN: running = (1-f)*running + f*batch with the unbiased batch
     * variance in running_var, save_invstd = 1/sqrt(biased var + eps). */
    CU(be, cudnnBatchNormalizationForwardTraining(
                c->dnn, CUDNN_BATCHNORM_SPATIAL, &ONE, &ZERO, c->xd, x->buf, c->xd, y->buf, c->bnd,
                gamma->buf, beta->buf, (double)momentum, running_mean->buf, running_var->buf,
                (double)eps, save_mean->buf, save_invstd->buf));
    return NAS_OK;
}

static int cu_bn_fwd_infer(nas_backend *be, const nas_tensor *x, const nas_tensor *gamma,
                           const nas_tensor *beta, const nas_tensor *running_mean,
                           const nas_tensor *running_var, nas_tensor *y, float eps)
{
    cuda_ctx *c = CTX(be);
    ENTER(be);
    if ((double)eps < CUDNN_BN_MIN_EPSILON)
        return nas__backend_fail(be, NAS_EUNSUPPORTED,
                                 "batchnorm: eps %g is below cuDNN's minimum %g", (double)eps,
                                 (double)CUDNN_BN_MIN_EPSILON);
    TRY(bn_descs(be, x));
    CU(be, cudnnBatchNormalizationForwardInference(
                c->dnn, CUDNN_BATCHNORM_SPATIAL, &ONE, &ZERO, c->xd, x->buf, c->xd, y->buf, c->bnd,
                gamma->buf, beta->buf, running_mean->buf, running_var->buf, (double)eps));
    return NAS_OK;
}

static int cu_bn_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *dy,
                     const nas_tensor *gamma, const nas_tensor *save_mean,
                     const nas_tensor *save_invstd, nas_tensor *dx, nas_tensor *dgamma,
                     nas_tensor *dbeta)
{
    cuda_ctx *c = CTX(be);
    ENTER(be);
    int hw = x->h * x->w;
    const float *xb = (const float *)x->buf, *dyb = (const float *)dy->buf;
    const float *mean = (const float *)save_mean->buf, *is = (const float *)save_invstd->buf;
    k_bn_bwd_reduce<<<x->c, BLOCK, 0, c->stream>>>(xb, dyb, mean, is, (float *)dgamma->buf,
                                                   (float *)dbeta->buf, x->n, x->c, hw);
    LAUNCHED(be, "k_bn_bwd_reduce");
    k_bn_bwd_dx<<<grid_for(x->count), BLOCK, 0, c->stream>>>(
            xb, dyb, (const float *)gamma->buf, mean, is, (const float *)dgamma->buf,
            (const float *)dbeta->buf, (float *)dx->buf, x->count, x->c, hw,
            (float)((size_t)x->n * hw));
    LAUNCHED(be, "k_bn_bwd_dx");
    return NAS_OK;
}

/* ---- activations and pooling --------------------------------------------------------- */

static int cu_relu_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y)
{
    ENTER(be);
    k_relu_fwd<<<grid_for(x->count), BLOCK, 0, CTX(be)->stream>>>((const float *)x->buf,
                                                                  (float *)y->buf, x->count);
    LAUNCHED(be, "k_relu_fwd");
    return NAS_OK;
}

static int cu_relu_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *dy, nas_tensor *dx)
{
    ENTER(be);
    k_relu_bwd<<<grid_for(x->count), BLOCK, 0, CTX(be)->stream>>>(
            (const float *)x->buf, (const float *)dy->buf, (float *)dx->buf, x->count);
    LAUNCHED(be, "k_relu_bwd");
    return NAS_OK;
}

static int cu_avgpool_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y, int k, int stride,
                          int pad)
{
    cuda_ctx *c = CTX(be);
    ENTER(be);
    TRY(set4d(be, c->xd, x->n, x->c, x->h, x->w));
    TRY(set4d(be, c->yd, y->n, y->c, y->h, y->w));
    CU(be, cudnnSetPooling2dDescriptor(c->pd, CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
                                       CUDNN_NOT_PROPAGATE_NAN, k, k, pad, pad, stride, stride));
    CU(be, cudnnPoolingForward(c->dnn, c->pd, &ONE, c->xd, x->buf, &ZERO, c->yd, y->buf));
    return NAS_OK;
}

static int cu_avgpool_bwd(nas_backend *be, const nas_tensor *dy, nas_tensor *dx, int k, int stride,
                          int pad)
{
    ENTER(be);
    k_avgpool_bwd<<<grid_for(dx->count), BLOCK, 0, CTX(be)->stream>>>(
            (const float *)dy->buf, (float *)dx->buf, dx->count, dx->h, dx->w, dy->h, dy->w, k,
            stride, pad);
    LAUNCHED(be, "k_avgpool_bwd");
    return NAS_OK;
}

static int cu_gap_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y)
{
    ENTER(be);
    size_t planes = (size_t)x->n * x->c;
    k_gap_fwd<<<grid_for(planes), BLOCK, 0, CTX(be)->stream>>>(
            (const float *)x->buf, (float *)y->buf, planes, x->h * x->w);
    LAUNCHED(be, "k_gap_fwd");
    return NAS_OK;
}

static int cu_gap_bwd(nas_backend *be, const nas_tensor *dy, nas_tensor *dx)
{
    ENTER(be);
    k_gap_bwd<<<grid_for(dx->count), BLOCK, 0, CTX(be)->stream>>>(
            (const float *)dy->buf, (float *)dx->buf, dx->count, dx->h * dx->w);
    LAUNCHED(be, "k_gap_bwd");
    return NAS_OK;
}

/* ---- chain-network ops (issue 15) ---------------------------------------------------- */

static int cu_act_fwd(nas_backend *be, int fn, const nas_tensor *x, nas_tensor *y)
{
    ENTER(be);
    k_act_fwd<<<grid_for(x->count), BLOCK, 0, CTX(be)->stream>>>(fn, (const float *)x->buf,
                                                                 (float *)y->buf, x->count);
    LAUNCHED(be, "k_act_fwd");
    return NAS_OK;
}

static int cu_act_bwd(nas_backend *be, int fn, const nas_tensor *x, const nas_tensor *dy,
                      nas_tensor *dx)
{
    ENTER(be);
    k_act_bwd<<<grid_for(x->count), BLOCK, 0, CTX(be)->stream>>>(
            fn, (const float *)x->buf, (const float *)dy->buf, (float *)dx->buf, x->count);
    LAUNCHED(be, "k_act_bwd");
    return NAS_OK;
}

static int cu_chscale_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *s,
                          nas_tensor *y)
{
    ENTER(be);
    k_chscale_fwd<<<grid_for(x->count), BLOCK, 0, CTX(be)->stream>>>(
            (const float *)x->buf, (const float *)s->buf, (float *)y->buf, x->count, x->h * x->w);
    LAUNCHED(be, "k_chscale_fwd");
    return NAS_OK;
}

static int cu_chscale_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *s,
                          const nas_tensor *dy, nas_tensor *dx, nas_tensor *ds)
{
    ENTER(be);
    size_t planes = (size_t)x->n * x->c;
    k_chscale_bwd<<<grid_for(planes), BLOCK, 0, CTX(be)->stream>>>(
            (const float *)x->buf, (const float *)s->buf, (const float *)dy->buf,
            dx ? (float *)dx->buf : NULL, (float *)ds->buf, planes, x->h * x->w);
    LAUNCHED(be, "k_chscale_bwd");
    return NAS_OK;
}

static int cu_dropout_fwd(nas_backend *be, const nas_tensor *x, nas_tensor *y, float p,
                          uint64_t seed)
{
    ENTER(be);
    k_dropout<<<grid_for(x->count), BLOCK, 0, CTX(be)->stream>>>(
            (const float *)x->buf, (float *)y->buf, x->count, p, (unsigned long long)seed);
    LAUNCHED(be, "k_dropout");
    return NAS_OK;
}

static int cu_dropout_bwd(nas_backend *be, const nas_tensor *dy, nas_tensor *dx, float p,
                          uint64_t seed)
{
    return cu_dropout_fwd(be, dy, dx, p, seed);
}

/* ---- linear (cuBLAS, column-major view of our row-major tensors) ------------------ */

/*
 * C[m,n] (column-major, fp32, ld ldc) = op(A)[m,k] * op(B)[k,n]: cublasSgemm
 * in fp32 (default math: no TF32); in fp16 / bf16 cublasGemmEx on the
 * 16-bit copies a, b with fp32 output and CUBLAS_COMPUTE_32F accumulation
 * (tensor cores).
 */
static int gemm(nas_backend *be, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                const void *a, int lda, const void *b, int ldb, float *cm, int ldc)
{
    cuda_ctx *c = CTX(be);
    if (c->prec == PREC_FP32) {
        CU(be, cublasSgemm(c->blas, ta, tb, m, n, k, &ONE, (const float *)a, lda,
                           (const float *)b, ldb, &ZERO, cm, ldc));
        return NAS_OK;
    }
    cudaDataType_t t = blas_type(c->prec);
    CU(be, cublasGemmEx(c->blas, ta, tb, m, n, k, &ONE, a, t, lda, b, t, ldb, &ZERO, cm,
                        CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return NAS_OK;
}

static int cu_linear_fwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                         const nas_tensor *b, nas_tensor *y)
{
    cuda_ctx *c = CTX(be);
    ENTER(be);
    int n = x->n, m = w->n, k = (int)(x->count / (size_t)x->n);
    const void *xb = x->buf, *wb = w->buf;
    if (c->prec != PREC_FP32) {
        void *p, *q;
        TRY(to_lp(be, x, 0, fwd_flag(c), &p));
        TRY(to_lp(be, w, 1, fwd_flag(c), &q));
        xb = p;
        wb = q;
    }
    /* y^T[M,N] = w[M,K] * x^T[K,N]: column-major, w is K x M (transposed). */
    TRY(gemm(be, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, wb, k, xb, k, (float *)y->buf, m));
    k_add_bias<<<grid_for((size_t)n * m), BLOCK, 0, c->stream>>>(
            (float *)y->buf, (const float *)b->buf, (size_t)n, (size_t)m);
    LAUNCHED(be, "k_add_bias");
    return NAS_OK;
}

static int cu_linear_bwd(nas_backend *be, const nas_tensor *x, const nas_tensor *w,
                         const nas_tensor *dy, nas_tensor *dx, nas_tensor *dw, nas_tensor *db)
{
    cuda_ctx *c = CTX(be);
    ENTER(be);
    int n = x->n, m = w->n, k = (int)(x->count / (size_t)x->n);
    const void *xb = x->buf, *wb = w->buf, *g = dy->buf;
    if (c->prec != PREC_FP32) {
        void *p, *q, *r;
        TRY(to_lp(be, dy, 0, grad_flag(c), &p));
        TRY(to_lp(be, w, 1, NULL, &q));
        TRY(to_lp(be, x, 2, NULL, &r));
        g = p;
        wb = q;
        xb = r;
    }
    if (dx) /* dx^T[K,N] = w^T[K,M] * dy^T[M,N] */
        TRY(gemm(be, CUBLAS_OP_N, CUBLAS_OP_N, k, n, m, wb, k, g, m, (float *)dx->buf, k));
    /* dw^T[K,M] = x^T[K,N] * dy[N,M] */
    TRY(gemm(be, CUBLAS_OP_N, CUBLAS_OP_T, k, m, n, xb, k, g, m, (float *)dw->buf, k));
    /* db from the fp32 dy: exact column sums in every precision */
    k_col_sum<<<grid_for((size_t)m), BLOCK, 0, c->stream>>>((const float *)dy->buf,
                                                            (float *)db->buf, n, m);
    LAUNCHED(be, "k_col_sum");
    return NAS_OK;
}

/* ---- element-wise, loss, optimiser, reductions ------------------------------------------ */

static int cu_axpy(nas_backend *be, float alpha, const nas_tensor *x, nas_tensor *y)
{
    ENTER(be);
    k_axpy<<<grid_for(x->count), BLOCK, 0, CTX(be)->stream>>>(alpha, (const float *)x->buf,
                                                              (float *)y->buf, x->count);
    LAUNCHED(be, "k_axpy");
    return NAS_OK;
}

static int cu_scale(nas_backend *be, float alpha, const nas_tensor *x, nas_tensor *y)
{
    ENTER(be);
    k_scale<<<grid_for(x->count), BLOCK, 0, CTX(be)->stream>>>(alpha, (const float *)x->buf,
                                                               (float *)y->buf, x->count);
    LAUNCHED(be, "k_scale");
    return NAS_OK;
}

static int cu_softmax_xent(nas_backend *be, const nas_tensor *logits, const nas_tensor *labels,
                           nas_tensor *dlogits, float *loss, int *correct)
{
    cuda_ctx *c = CTX(be);
    ENTER(be);
    int rows = logits->n, k = (int)(logits->count / (size_t)logits->n);
    void *d = NULL, *h = NULL;
    size_t bytes = 2 * (size_t)rows * sizeof(float);
    TRY(dscratch(be, bytes, &d));
    TRY(hscratch(be, bytes, &h));
    k_softmax_xent<<<grid_for((size_t)rows), BLOCK, 0, c->stream>>>(
            (const float *)logits->buf, (const float *)labels->buf,
            dlogits ? (float *)dlogits->buf : NULL, (float *)d, rows, k);
    LAUNCHED(be, "k_softmax_xent");
    CU(be, cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, c->stream));
    int overflowed = 0; /* fp16: did the previous step's gradients overflow? */
    int scaling = dlogits && c->prec == PREC_FP16;
    /* without step_begin / step_end (callers of the ops alone) the step
     * starts here; bracketed steps are accounted by cu_step_end and their
     * flag already holds this step's forward overflows */
    int legacy = scaling && !c->bracketed;
    if (legacy)
        CU(be, cudaMemcpyAsync(&overflowed, c->d_overflow, sizeof overflowed,
                               cudaMemcpyDeviceToHost, c->stream));
    CU(be, cudaStreamSynchronize(c->stream));
    const float *out = (const float *)h;
    double sum = 0.0;
    int ok = 0;
    for (int r = 0; r < rows; r++) {
        if (out[rows + r] < 0.0f)
            return nas__backend_fail(be, NAS_EINVAL,
                                     "softmax_xent: label of row %d is not a class index in "
                                     "0..%d",
                                     r, k - 1);
        sum += (double)out[r];
        ok += out[rows + r] > 0.5f;
    }
    *loss = (float)(sum / rows);
    *correct = ok;
    if (scaling) {
        /* A backward pass starts here. Unbracketed: the previous step is
         * complete on the device (its SGD kernels skipped themselves if it
         * overflowed): account for it and clear the flag. Then scale this
         * step's loss gradient by S (Micikevicius et al. 2018, 3.2). */
        if (legacy) {
            if (c->step_open)
                (void)nas__loss_scaler_update(&c->ls, overflowed);
            c->step_open = 1;
            CU(be, cudaMemsetAsync(c->d_overflow, 0, sizeof(int), c->stream));
        }
        k_scale<<<grid_for(dlogits->count), BLOCK, 0, c->stream>>>(
                c->ls.scale, (const float *)dlogits->buf, (float *)dlogits->buf, dlogits->count);
        LAUNCHED(be, "k_scale(loss scale)");
    }
    return NAS_OK;
}

static int cu_sgd_step(nas_backend *be, nas_tensor *w, const nas_tensor *dw, nas_tensor *v,
                       float lr, float momentum, float wd, int nesterov)
{
    cuda_ctx *c = CTX(be);
    ENTER(be);
    if (c->prec == PREC_FP16 && c->step_open) { /* dw carries the loss scale */
        k_sgd_scaled<<<grid_for(w->count), BLOCK, 0, c->stream>>>(
                (float *)w->buf, (const float *)dw->buf, (float *)v->buf, w->count, lr, momentum,
                wd, nesterov, 1.0f / c->ls.scale, c->d_overflow);
        LAUNCHED(be, "k_sgd_scaled");
        return NAS_OK;
    }
    k_sgd<<<grid_for(w->count), BLOCK, 0, c->stream>>>(
            (float *)w->buf, (const float *)dw->buf, (float *)v->buf, w->count, lr, momentum, wd,
            nesterov);
    LAUNCHED(be, "k_sgd");
    return NAS_OK;
}

static int cu_sumsq(nas_backend *be, const nas_tensor *x, double *out)
{
    cuda_ctx *c = CTX(be);
    ENTER(be);
    void *d = NULL, *h = NULL;
    size_t bytes = SUMSQ_BLOCKS * sizeof(double);
    TRY(dscratch(be, bytes, &d));
    TRY(hscratch(be, bytes, &h));
    k_sumsq<<<SUMSQ_BLOCKS, BLOCK, 0, c->stream>>>((const float *)x->buf, x->count, (double *)d);
    LAUNCHED(be, "k_sumsq");
    CU(be, cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, c->stream));
    CU(be, cudaStreamSynchronize(c->stream));
    const double *p = (const double *)h;
    double s = 0.0;
    for (int i = 0; i < SUMSQ_BLOCKS; i++)
        s += p[i];
    *out = s;
    return NAS_OK;
}

/* ---- precision, timing, device --------------------------------------------------- */

/*
 * nas_backend_set_precision for cuda:
 *   "fp32"  fp32 everywhere, FMA math (no TF32): matches ref within fp32
 *           tolerances.
 *   "fp16"  convolutions (cuDNN) and the classifier GEMM (cublasGemmEx) on
 *           fp16 copies of their operands with fp32 accumulation, on tensor
 *           cores; every nas_tensor stays fp32 (activations, gradients and
 *           the fp32 master weights); dynamic loss scaling
 *           (trainer/cuda/loss_scale.h): the loss gradient is scaled by S,
 *           sgd_step divides it out, a step whose gradients overflowed fp16
 *           is skipped on the device and S halves; S doubles after
 *           NAS__LS_INTERVAL good steps. Needs compute capability >= 7.0.
 *   "bf16"  the same casts to bfloat16, no loss scaling (bf16 has fp32's
 *           exponent range). Needs compute capability >= 8.0.
 * Batch norm, pooling, ReLU, softmax, sums and SGD run in fp32 in every
 * precision. Micikevicius et al., "Mixed Precision Training", ICLR 2018;
 * Kalamkar et al., "A Study of BFLOAT16 for Deep Learning Training", 2019.
 * Errors: NAS_EINVAL (unknown name), NAS_EUNSUPPORTED (device too old),
 * NAS_ENOMEM (the overflow flag), NAS_EBACKEND, NAS_EDEVFAULT.
 */
static int cu_set_precision(nas_backend *be, const char *precision)
{
    cuda_ctx *c = CTX(be);
    int prec, need_major;
    if (strcmp(precision, "fp32") == 0) {
        prec = PREC_FP32;
        need_major = 0;
    } else if (strcmp(precision, "fp16") == 0) {
        prec = PREC_FP16;
        need_major = 7;
    } else if (strcmp(precision, "bf16") == 0) {
        prec = PREC_BF16;
        need_major = 8;
    } else {
        return nas__backend_fail(be, NAS_EINVAL, "unknown precision '%s' (fp32, bf16, fp16)",
                                 precision);
    }
    if (c->cc_major < need_major)
        return nas__backend_fail(be, NAS_EUNSUPPORTED,
                                 "precision %s on CUDA needs compute capability %d.0 or newer "
                                 "(tensor cores); device %d (%s) has %d.%d",
                                 precision, need_major, c->device, c->prop_name, c->cc_major,
                                 c->cc_minor);
    ENTER(be);
    if (prec == PREC_FP16 && !c->d_overflow) {
        void *p = NULL;
        TRY(dev_malloc(be, &p, sizeof(int)));
        c->d_overflow = (int *)p;
        CU(be, cudaMemsetAsync(c->d_overflow, 0, sizeof(int), c->stream));
    }
    c->prec = prec;
    c->step_open = 0;
    c->in_step = 0;
    c->bracketed = 0;
    nas__loss_scaler_init(&c->ls, NAS__LS_INIT, NAS__LS_INTERVAL);
    return NAS_OK;
}

/* Training-step bracket (nas__backend_ext.step_begin / step_end; issue
 * 19). fp16: step_begin clears the overflow flag, so that it collects the
 * step's forward casts (fwd_flag) and its gradient casts (grad_flag);
 * step_end reads it after the step's SGD kernels (which skipped themselves
 * if it was set), accounts for the step in the loss scaler and reports it.
 * Other precisions: nothing to do. */
static int cu_step_begin(nas_backend *be)
{
    cuda_ctx *c = CTX(be);
    if (c->prec != PREC_FP16)
        return NAS_OK;
    ENTER(be);
    CU(be, cudaMemsetAsync(c->d_overflow, 0, sizeof(int), c->stream));
    c->bracketed = 1;
    c->in_step = 1;
    c->step_open = 1;
    return NAS_OK;
}

static int cu_step_end(nas_backend *be, int *skipped)
{
    cuda_ctx *c = CTX(be);
    *skipped = 0;
    if (c->prec != PREC_FP16 || !c->in_step)
        return NAS_OK;
    ENTER(be);
    int overflowed = 0;
    CU(be, cudaMemcpyAsync(&overflowed, c->d_overflow, sizeof overflowed, cudaMemcpyDeviceToHost,
                           c->stream));
    CU(be, cudaStreamSynchronize(c->stream));
    *skipped = nas__loss_scaler_update(&c->ls, overflowed) == 0;
    c->in_step = 0;
    c->step_open = 0;
    return NAS_OK;
}

/* The fp16 loss scaler's {S, good steps} for checkpoints
 * (nas__loss_scaler_save / _restore); NAS_EUNSUPPORTED in fp32 and bf16. */
static int cu_loss_scale_get(nas_backend *be, double state[2])
{
    cuda_ctx *c = CTX(be);
    if (c->prec != PREC_FP16)
        return NAS_EUNSUPPORTED;
    nas__loss_scaler_save(&c->ls, state);
    return NAS_OK;
}

static int cu_loss_scale_set(nas_backend *be, const double state[2])
{
    cuda_ctx *c = CTX(be);
    if (c->prec != PREC_FP16)
        return NAS_EUNSUPPORTED;
    if (nas__loss_scaler_restore(&c->ls, state) != 0)
        return nas__backend_fail(be, NAS_EINVAL, "loss scaler state {%g, %g}: S must be a power "
                                 "of two in [%g, %g], good steps in [0, %d)",
                                 state[0], state[1], (double)NAS__LS_MIN, (double)NAS__LS_MAX,
                                 c->ls.interval);
    return NAS_OK;
}

/* Latency with CUDA events recorded on the instance's stream: the time the
 * device takes from the start mark to the end mark, including any gaps in
 * which it waited for the host to launch work. */
static int cu_timer_start(nas_backend *be)
{
    cuda_ctx *c = CTX(be);
    ENTER(be);
    if (!c->ev_start)
        CU(be, cudaEventCreate(&c->ev_start));
    if (!c->ev_stop)
        CU(be, cudaEventCreate(&c->ev_stop));
    CU(be, cudaEventRecord(c->ev_start, c->stream));
    return NAS_OK;
}

static int cu_timer_stop(nas_backend *be, double *ms)
{
    cuda_ctx *c = CTX(be);
    *ms = 0.0;
    ENTER(be);
    if (!c->ev_start || !c->ev_stop)
        return nas__backend_fail(be, NAS_EINVAL, "cuda timer_stop without timer_start");
    CU(be, cudaEventRecord(c->ev_stop, c->stream));
    CU(be, cudaEventSynchronize(c->ev_stop));
    float f = 0.0f;
    CU(be, cudaEventElapsedTime(&f, c->ev_start, c->ev_stop));
    *ms = (double)f;
    return NAS_OK;
}

static int cu_device_info(const nas_backend *be, char *name, size_t n, char *cc, size_t m)
{
    const cuda_ctx *c = (const cuda_ctx *)be->context;
    if (name && n)
        snprintf(name, n, "%s", c->prop_name);
    if (cc && m)
        snprintf(cc, m, "%d.%d", c->cc_major, c->cc_minor);
    return NAS_OK;
}

/* Positional, in the order of trainer/backend_impl.h (C++17 has no
 * designated initialisers). */
static const nas__backend_ext cuda_ext = {
    /* .download_tensor = */ NULL,
    /* .copy_tensor = */ NULL,
    /* .set_precision = */ cu_set_precision,
    /* .timer_start = */ cu_timer_start,
    /* .timer_stop = */ cu_timer_stop,
    /* .device_info = */ cu_device_info,
    /* .conv2d_fwd_fused = */ NULL, /* eval uses conv + batch norm (no folding yet) */
    /* .step_begin = */ cu_step_begin,
    /* .step_end = */ cu_step_end,
    /* .loss_scale_get = */ cu_loss_scale_get,
    /* .loss_scale_set = */ cu_loss_scale_set,
    /* .bn_act_fwd_train = */ NULL, /* composed: batch norm, then the activation */
    /* .bn_act_bwd = */ NULL,
    /* .bn_act_se_fwd_train = */ NULL, /* the SE ops run apart */
    /* .bn_act_se_bwd = */ NULL,
    /* .set_convs = */ NULL, /* cuDNN picks its layouts per call */
    /* .conv2d_fwd_add = */ NULL, /* no folding yet (above) */
};

/* ---- lifetime --------------------------------------------------------------------- */

/* Release everything; safe on a partly built context. Errors are ignored:
 * after a sticky fault the frees fail too, and the process is about to be
 * restarted. */
static void release(cuda_ctx *c)
{
    if (!c)
        return;
    if (c->stream)
        (void)cudaStreamSynchronize(c->stream);
    for (int i = 0; i < c->n_chunks; i++)
        (void)cudaFree(c->chunks[i].base);
    if (c->ws)
        (void)cudaFree(c->ws);
    if (c->dscratch)
        (void)cudaFree(c->dscratch);
    for (int i = 0; i < 3; i++)
        if (c->lp[i])
            (void)cudaFree(c->lp[i]);
    if (c->d_overflow)
        (void)cudaFree(c->d_overflow);
    if (c->ev_start)
        (void)cudaEventDestroy(c->ev_start);
    if (c->ev_stop)
        (void)cudaEventDestroy(c->ev_stop);
    if (c->xd)
        (void)cudnnDestroyTensorDescriptor(c->xd);
    if (c->yd)
        (void)cudnnDestroyTensorDescriptor(c->yd);
    if (c->bnd)
        (void)cudnnDestroyTensorDescriptor(c->bnd);
    if (c->wd)
        (void)cudnnDestroyFilterDescriptor(c->wd);
    if (c->cd)
        (void)cudnnDestroyConvolutionDescriptor(c->cd);
    if (c->pd)
        (void)cudnnDestroyPoolingDescriptor(c->pd);
    if (c->blas)
        (void)cublasDestroy(c->blas);
    if (c->dnn)
        (void)cudnnDestroy(c->dnn);
    if (c->stream)
        (void)cudaStreamDestroy(c->stream);
    free(c->chunks);
    free(c->blocks);
    free(c->choices);
    free(c->hscratch);
    free(c);
}

static void cu_destroy(nas_backend *be)
{
    if (!be)
        return;
    release(CTX(be));
    free(be);
}

static const nas__backend_ops cuda_ops = {
    /* .name = */ "cuda",
    /* .destroy = */ cu_destroy,
    /* .sync = */ cu_sync,
    /* .alloc = */ cu_alloc,
    /* .free = */ cu_free,
    /* .upload = */ cu_upload,
    /* .download = */ cu_download,
    /* .zero = */ cu_zero,
    /* .copy = */ cu_copy,
    /* .conv2d_fwd = */ cu_conv2d_fwd,
    /* .conv2d_bwd_data = */ cu_conv2d_bwd_data,
    /* .conv2d_bwd_filter = */ cu_conv2d_bwd_filter,
    /* .batchnorm_fwd_train = */ cu_bn_fwd_train,
    /* .batchnorm_fwd_infer = */ cu_bn_fwd_infer,
    /* .batchnorm_bwd = */ cu_bn_bwd,
    /* .relu_fwd = */ cu_relu_fwd,
    /* .relu_bwd = */ cu_relu_bwd,
    /* .avgpool_fwd = */ cu_avgpool_fwd,
    /* .avgpool_bwd = */ cu_avgpool_bwd,
    /* .gap_fwd = */ cu_gap_fwd,
    /* .gap_bwd = */ cu_gap_bwd,
    /* .linear_fwd = */ cu_linear_fwd,
    /* .linear_bwd = */ cu_linear_bwd,
    /* .axpy = */ cu_axpy,
    /* .scale = */ cu_scale,
    /* .softmax_xent = */ cu_softmax_xent,
    /* .sgd_step = */ cu_sgd_step,
    /* .sumsq = */ cu_sumsq,
    /* .gconv2d_fwd = */ cu_gconv2d_fwd,
    /* .gconv2d_bwd_data = */ cu_gconv2d_bwd_data,
    /* .gconv2d_bwd_filter = */ cu_gconv2d_bwd_filter,
    /* .act_fwd = */ cu_act_fwd,
    /* .act_bwd = */ cu_act_bwd,
    /* .chscale_fwd = */ cu_chscale_fwd,
    /* .chscale_bwd = */ cu_chscale_bwd,
    /* .dropout_fwd = */ cu_dropout_fwd,
    /* .dropout_bwd = */ cu_dropout_bwd,
};

/* Create-time failure: message into err (the instance does not exist yet). */
static int create_fail(nas_error *err, cuda_ctx *c, nas__cuda_lib lib, int code, const char *desc,
                       const char *what, int device)
{
    int st = nas__cuda_status(lib, code);
    char fn[96];
    call_name(fn, sizeof fn, what);
    what = fn;
    if (st == NAS_OK)
        st = NAS_EBACKEND;
    if (st == NAS_ENODEV)
        nas_error_set(err, st, "no CUDA device: %s (%s) [%s]", desc,
                      nas__cuda_code_name(lib, code), what);
    else if (st == NAS_ENOMEM)
        nas_error_set(err, st, "out of GPU memory while setting up CUDA device %d: %s: %s (%s)",
                      device, what, desc, nas__cuda_code_name(lib, code));
    else
        nas_error_set(err, st, "CUDA device %d: %s: %s (%s)", device, what, desc,
                      nas__cuda_code_name(lib, code));
    release(c);
    return st;
}

/* Run `call` (CUDA runtime, cuDNN or cuBLAS) while creating the backend;
 * on failure release the half-made instance and return (create_fail). */
#define CREATE(call)                                                                   \
    do {                                                                               \
        cu_result r_ = cu_result_of(call);                                             \
        if (!r_.ok)                                                                    \
            return create_fail(err, c, r_.lib, r_.code, r_.desc, #call, device);       \
    } while (0)

/*
 * Create a CUDA backend on device ordinal `device` (threads is unused).
 * Errors: NAS_ENODEV "no CUDA device: <reason>" (no driver, no device,
 * ordinal out of range), NAS_EUNSUPPORTED (this build has no code for the
 * device's architecture), NAS_ENOMEM, NAS_EBACKEND.
 */
extern "C" int nas__cuda_plugin_create(int threads, int device, nas_backend **out, nas_error *err)
{
    (void)threads;
    if (!out)
        return nas_error_set(err, NAS_EINVAL, "nas__backend_cuda_create: out is NULL");
    *out = NULL;
    cuda_ctx *c = NULL;
    int n = 0;
    CREATE(cudaGetDeviceCount(&n));
    if (n <= 0)
        return nas_error_set(err, NAS_ENODEV,
                             "no CUDA device: cudaGetDeviceCount reports 0 devices");
    if (device < 0 || device >= n)
        return nas_error_set(err, NAS_ENODEV,
                             "no CUDA device: device %d requested, %d present (0..%d)", device, n,
                             n - 1);
    c = (cuda_ctx *)calloc(1, sizeof *c);
    if (!c)
        return nas_error_set(err, NAS_ENOMEM, "cuda backend: host out of memory");
    c->device = device;
    CREATE(cudaSetDevice(device));
    cudaDeviceProp prop;
    CREATE(cudaGetDeviceProperties(&prop, device));
    snprintf(c->device_name, sizeof c->device_name, "%s, cc %d.%d", prop.name, prop.major,
             prop.minor);
    snprintf(c->prop_name, sizeof c->prop_name, "%s", prop.name);
    c->cc_major = prop.major;
    c->cc_minor = prop.minor;
    c->prec = PREC_FP32;
    nas__loss_scaler_init(&c->ls, NAS__LS_INIT, NAS__LS_INTERVAL);
    /* Does this binary carry code for the device (NAS_CUDA_ARCHS)? */
    k_probe<<<1, 1>>>();
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorUnsupportedPtxVersion) {
        nas_error_set(err, NAS_EUNSUPPORTED,
                      "CUDA device %d (%s) has compute capability %d.%d, which this build has "
                      "no code for; rebuild with -DNAS_CUDA_ARCHS=\"...;%d%d\"",
                      device, prop.name, prop.major, prop.minor, prop.major, prop.minor);
        release(c);
        return NAS_EUNSUPPORTED;
    }
    CREATE(e);
    CREATE(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    CREATE(cudnnCreate(&c->dnn));
    CREATE(cudnnSetStream(c->dnn, c->stream));
    CREATE(cudnnCreateTensorDescriptor(&c->xd));
    CREATE(cudnnCreateTensorDescriptor(&c->yd));
    CREATE(cudnnCreateTensorDescriptor(&c->bnd));
    CREATE(cudnnCreateFilterDescriptor(&c->wd));
    CREATE(cudnnCreateConvolutionDescriptor(&c->cd));
    CREATE(cudnnCreatePoolingDescriptor(&c->pd));
    CREATE(cublasCreate(&c->blas));
    CREATE(cublasSetStream(c->blas, c->stream));
    /* Plain fp32 GEMM: the default math mode excludes TF32 tensor ops
     * (set explicitly, so a changed library default cannot slip in). */
    CREATE(cublasSetMathMode(c->blas, CUBLAS_DEFAULT_MATH));
    nas_backend *be = (nas_backend *)calloc(1, sizeof *be);
    if (!be) {
        release(c);
        return nas_error_set(err, NAS_ENOMEM, "cuda backend: host out of memory");
    }
    be->ops = &cuda_ops;
    be->ext = &cuda_ext;
    be->context = c;
    be->threads = 0;
    be->last_error[0] = '\0';
    *out = be;
    return NAS_OK;
}

/* ---- device discovery ------------------------------------------------------------ */

/* The backend interface this object was compiled against (cuda_probe.h). */
extern "C" unsigned long long nas__cuda_plugin_abi(void)
{
    return NAS__CUDA_ABI(nas__backend_abi());
}

extern "C" int nas__cuda_plugin_probe(nas__cuda_dev *out, int max, int *count, char *reason,
                                      size_t n)
{
    int found = 0;
    if (count)
        *count = 0;
    if (reason && n)
        reason[0] = '\0';
    cudaError_t e = cudaGetDeviceCount(&found);
    if (e != cudaSuccess) {
        if (reason && n)
            snprintf(reason, n, "%s (%s)", cudaGetErrorString(e),
                     nas__cuda_code_name(NAS__CUDA_LIB_RUNTIME, (int)e));
        int st = nas__cuda_status(NAS__CUDA_LIB_RUNTIME, (int)e);
        return st == NAS_OK ? NAS_EBACKEND : st;
    }
    if (found <= 0) {
        if (reason && n)
            snprintf(reason, n, "cudaGetDeviceCount reports 0 devices");
        return NAS_ENODEV;
    }
    for (int i = 0; i < found && i < max && out; i++) {
        cudaDeviceProp prop;
        e = cudaGetDeviceProperties(&prop, i);
        memset(&out[i], 0, sizeof out[i]);
        out[i].index = i;
        if (e != cudaSuccess) {
            snprintf(out[i].name, sizeof out[i].name, "(properties unavailable: %s)",
                     cudaGetErrorString(e));
            continue;
        }
        snprintf(out[i].name, sizeof out[i].name, "%s", prop.name);
        out[i].mem = (unsigned long long)prop.totalGlobalMem;
        out[i].major = prop.major;
        out[i].minor = prop.minor;
        out[i].sms = prop.multiProcessorCount;
    }
    if (count)
        *count = found;
    return NAS_OK;
}
