/*
 * trainer/backend_cuda.c - the "cuda" backend, loaded on demand (issue 29,
 * defect 8). The backend itself (the .cu files in trainer/cuda/, with cuDNN, cuBLAS and
 * the CUDA runtime) is built as a separate shared object, libnas_cuda.so
 * (cmake/cuda.cmake); linking it into every command cost each of them
 * ~220 MB of resident memory for the libraries' code and data even when
 * nothing ran on a GPU. This file is what libnas keeps: the registry's
 * "cuda" constructor and the device probe, which dlopen() the shared object
 * the first time they are called and forward to its two entry points
 * (trainer/cuda/cuda_probe.h). Commands that never ask for the cuda backend
 * or the CUDA devices never map it.
 *
 * Where the shared object is looked for, first match wins:
 *   1. $NAS_CUDA_LIBRARY, when set and not empty (only there);
 *   2. beside the running binary (/proc/self/exe): DIR/libnas_cuda.so;
 *   3. DIR/../lib/libnas_cuda.so (an installed prefix);
 *   4. the build tree it was built in (NAS_CUDA_BUILD_DIR), so tests built
 *      in subdirectories find it.
 * It is opened RTLD_NODELETE, so it stays mapped for the backends created
 * from it and this file holds no state of its own.
 */
#ifdef NAS_HAVE_CUDA
#include <dlfcn.h>    /* dlopen, dlsym, dlerror, dlclose */
#include <limits.h>   /* PATH_MAX */
#include <stdio.h>    /* snprintf */
#include <stdlib.h>   /* getenv */
#include <string.h>   /* strrchr */
#include <unistd.h>   /* readlink, access */
#include "trainer/backend_impl.h"
#include "trainer/cuda/cuda_probe.h"

#define CUDA_SO "libnas_cuda.so"

/* dlopen `path` into *h (and its name into opened[m]); on failure append
 * its reason to why[n]. */
static int try_open(const char *path, void **h, char *why, size_t n, char *opened, size_t m)
{
    *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (*h) {
        snprintf(opened, m, "%s", path);
        return 1;
    }
    size_t used = strlen(why);
    if (access(path, F_OK) == 0) { /* there, but it (or a library it needs) does not load */
        const char *e = dlerror();
        snprintf(why + used, n - used, "%s%s", used ? "; " : "", e ? e : path);
    } else {
        snprintf(why + used, n - used, "%s%s: not found", used ? "; " : "", path);
    }
    return 0;
}

/*
 * Open libnas_cuda.so (search order above), check that it was built
 * against this libnas's backend interface (nas__cuda_plugin_abi against
 * nas__backend_abi, trainer/backend_impl.h), and find `symbol` in it.
 * Returns the symbol, or NULL with the reason in why[n]: "cannot load the
 * CUDA backend library: <each place tried and why>", "... PATH has no
 * nas__cuda_plugin_abi (built by an older nas ...)" or "... PATH was built
 * against another nas (backend ABI X, this nas Y) ...".
 */
static void *cuda_symbol(const char *symbol, char *why, size_t n)
{
    char reasons[1536] = "", path[PATH_MAX + 32], which[PATH_MAX + 32] = CUDA_SO;
    void *h = NULL;
    const char *env = getenv("NAS_CUDA_LIBRARY");
    if (env && env[0]) {
        try_open(env, &h, reasons, sizeof reasons, which, sizeof which);
    } else {
        char exe[PATH_MAX];
        ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
        char *slash = k > 0 ? (exe[k] = '\0', strrchr(exe, '/')) : NULL;
        if (slash) {
            *slash = '\0';
            snprintf(path, sizeof path, "%s/" CUDA_SO, exe);
            if (!try_open(path, &h, reasons, sizeof reasons, which, sizeof which)) {
                snprintf(path, sizeof path, "%s/../lib/" CUDA_SO, exe);
                try_open(path, &h, reasons, sizeof reasons, which, sizeof which);
            }
        }
#ifdef NAS_CUDA_BUILD_DIR
        if (!h)
            try_open(NAS_CUDA_BUILD_DIR "/" CUDA_SO, &h, reasons, sizeof reasons, which,
                     sizeof which);
#endif
    }
    if (!h) {
        snprintf(why, n, "cannot load the CUDA backend library: %s (set NAS_CUDA_LIBRARY to its "
                 "path; see docs/cuda.md)", reasons);
        return NULL;
    }
    /* the same backend interface as this libnas, or nothing is called */
    void *abi_sym = dlsym(h, "nas__cuda_plugin_abi");
    void *sym = NULL;
    if (!abi_sym) {
        snprintf(why, n, "cannot load the CUDA backend library: %s has no nas__cuda_plugin_abi "
                 "(built by an older nas: rebuild it with this one, or set NAS_CUDA_LIBRARY to "
                 "the matching library)", which);
    } else {
        nas__cuda_abi_fn abi;
        memcpy(&abi, &abi_sym, sizeof abi); /* object -> function pointer, as POSIX allows */
        unsigned long long theirs = abi(), ours = NAS__CUDA_ABI(nas__backend_abi());
        if (theirs != ours)
            snprintf(why, n, "cannot load the CUDA backend library: %s was built against another "
                     "nas (backend ABI %#llx, this nas %#llx): rebuild it with this one, or set "
                     "NAS_CUDA_LIBRARY to the matching library", which, theirs, ours);
        else if (!(sym = dlsym(h, symbol)))
            snprintf(why, n, "cannot load the CUDA backend library: %s has no %s (a "
                     "libnas_cuda.so from another build?)", which, symbol);
    }
    dlclose(h); /* RTLD_NODELETE: stays mapped */
    return sym;
}

int nas__backend_cuda_create(int threads, int device, nas_backend **out, nas_error *err)
{
    char why[2048];
    void *sym = cuda_symbol("nas__cuda_plugin_create", why, sizeof why);
    if (!sym)
        return nas_error_set(err, NAS_EBACKEND, "%s", why);
    nas__cuda_create_fn create;
    memcpy(&create, &sym, sizeof create); /* object -> function pointer, as POSIX allows */
    return create(threads, device, out, err);
}

int nas__cuda_probe(nas__cuda_dev *out, int max, int *count, char *reason, size_t n)
{
    char why[2048];
    if (count)
        *count = 0;
    void *sym = cuda_symbol("nas__cuda_plugin_probe", why, sizeof why);
    if (!sym) {
        if (reason && n)
            snprintf(reason, n, "%s", why);
        return NAS_EBACKEND;
    }
    nas__cuda_probe_fn probe;
    memcpy(&probe, &sym, sizeof probe);
    return probe(out, max, count, reason, n);
}
#else
typedef int nas__backend_cuda_not_built; /* a CPU-only build: nothing to load */
#endif
