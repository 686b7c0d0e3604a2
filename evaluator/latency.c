/*
 * evaluator/latency.c - inference latency: `warmup` untimed eval-mode
 * forward passes, then the median of `runs` timed ones (CLOCK_MONOTONIC,
 * synchronised with the device after each pass). The median resists the
 * outliers a shared machine produces; batch 1 is the on-device latency
 * figure used by hardware-aware NAS (e.g. Cai et al., "Once-for-All",
 * ICLR 2020).
 */
#include <stdlib.h> /* calloc, qsort, free */
#include <time.h>   /* clock_gettime */
#include "nas/evaluator.h"
#include "trainer/net_impl.h" /* nas__net_desc, nas__net_backend */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int nas_latency_ms(nas_net *net, int batch, int warmup, int runs, double *median_ms,
                   nas_error *err)
{
    if (median_ms)
        *median_ms = 0;
    if (!net || !median_ms || batch <= 0 || warmup < 0 || runs <= 0)
        return nas_error_set(err, NAS_EINVAL, "nas_latency_ms: bad arguments (batch %d, runs %d)",
                             batch, runs);
    nas_backend *be = nas__net_backend(net);
    const nas_net_desc *d = nas__net_desc(net);
    if (batch > nas__net_max_batch(net))
        return nas_error_set(err, NAS_EINVAL, "latency batch %d exceeds the net's maximum batch %d",
                             batch, nas__net_max_batch(net));
    nas_tensor *x = NULL;
    double *t = calloc((size_t)runs, sizeof *t);
    int rc = t ? NAS_OK : NAS_ENOMEM;
    if (!rc)
        rc = nas_tensor_create(be, batch, d->in_c, d->in_h, d->in_w, &x);
    if (!rc)
        rc = nas_tensor_zero(x);
    const nas_tensor *logits;
    for (int i = 0; i < warmup && !rc; i++) {
        rc = nas_net_forward(net, x, 0, &logits);
        if (!rc)
            rc = nas_backend_sync(be);
    }
    for (int i = 0; i < runs && !rc; i++) {
        double t0 = now_ms();
        rc = nas_net_forward(net, x, 0, &logits);
        if (!rc)
            rc = nas_backend_sync(be);
        t[i] = now_ms() - t0;
    }
    if (!rc) {
        qsort(t, (size_t)runs, sizeof *t, cmp_double);
        *median_ms = runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]);
    } else {
        nas_error_set(err, rc, "measuring latency at batch %d: %s", batch, nas_strerror(rc));
    }
    nas_tensor_destroy(x);
    free(t);
    return rc;
}
