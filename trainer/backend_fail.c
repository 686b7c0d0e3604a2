/*
 * trainer/backend_fail.c - nas__backend_fail (trainer/backend_impl.h), in a
 * file of its own because two targets compile it: libnas and the CUDA
 * backend's shared object libnas_cuda.so (cmake/cuda.cmake), which carries
 * its own copy so that it needs nothing from the binary that loads it.
 */
#include <stdarg.h> /* va_list */
#include <stdio.h>  /* vsnprintf */
#include "trainer/backend_impl.h"

int nas__backend_fail(nas_backend *be, int code, const char *fmt, ...)
{
    if (be) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(be->last_error, sizeof be->last_error, fmt, ap);
        va_end(ap);
    }
    return code;
}
