/*
 * evaluator/latency.c - inference latency on the device the trial runs on,
 * and the description of that device for the store (issue 7).
 *
 * Latency: `warmup` untimed eval-mode forward passes, then the median of
 * `runs` timed ones. Backends with a device clock (cuda: the ext slots
 * timer_start / timer_stop, CUDA events recorded on the backend's stream)
 * time each pass on the device; the others with CLOCK_MONOTONIC around the
 * pass and nas_backend_sync. The median resists the outliers a shared
 * machine produces; batch 1 is the on-device latency figure used by
 * hardware-aware NAS (e.g. Cai et al., "Once-for-All", ICLR 2020).
 */
#include <stdio.h>  /* fopen, fgets */
#include <stdlib.h> /* calloc, qsort, free */
#include <string.h> /* strncmp, strchr, strspn */
#include <time.h>   /* clock_gettime */
#include "nas/evaluator.h"
#include "trainer/backend_impl.h" /* nas_backend.ext: device timer, device info */
#include "trainer/net_impl.h"     /* nas__net_desc, nas__net_backend */

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

/* One timed eval-mode forward pass of x into *ms. */
static int timed_pass(nas_net *net, nas_backend *be, const nas_tensor *x, double *ms)
{
    const nas_tensor *logits;
    const nas__backend_ext *ext = be->ext;
    if (ext && ext->timer_start && ext->timer_stop) { /* the device's clock */
        int rc = ext->timer_start(be);
        if (!rc)
            rc = nas_net_forward(net, x, 0, &logits);
        if (!rc)
            rc = ext->timer_stop(be, ms);
        return rc;
    }
    double t0 = now_ms();
    int rc = nas_net_forward(net, x, 0, &logits);
    if (!rc)
        rc = nas_backend_sync(be);
    *ms = now_ms() - t0;
    return rc;
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
    for (int i = 0; i < runs && !rc; i++)
        rc = timed_pass(net, be, x, &t[i]);
    if (!rc) {
        qsort(t, (size_t)runs, sizeof *t, cmp_double);
        *median_ms = runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]);
    } else {
        const char *detail = be ? nas_backend_last_error(be) : "";
        nas_error_set(err, rc, "measuring latency at batch %d: %s%s%s", batch, nas_strerror(rc),
                      detail[0] ? ": " : "", detail);
    }
    nas_tensor_destroy(x);
    free(t);
    return rc;
}

/* The host CPU's model name from /proc/cpuinfo (x86 "model name"; ARM
 * "Hardware" / "Processor"; other kernels "cpu model"), or "unknown CPU". */
static void cpu_model(char *name, size_t n)
{
    static const char *const keys[] = {"model name", "cpu model", "Hardware", "Processor"};
    char best[256] = "";
    int best_rank = (int)(sizeof keys / sizeof keys[0]);
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            for (int k = 0; k < best_rank; k++) {
                size_t kl = strlen(keys[k]);
                if (strncmp(line, keys[k], kl) != 0)
                    continue;
                const char *p = line + kl;
                p += strspn(p, " \t");
                if (*p != ':')
                    continue;
                p++;
                p += strspn(p, " \t");
                size_t len = strcspn(p, "\r\n");
                if (len == 0)
                    continue;
                if (len >= sizeof best)
                    len = sizeof best - 1;
                memcpy(best, p, len);
                best[len] = '\0';
                best_rank = k;
                break;
            }
            if (best_rank == 0)
                break; /* "model name" is the best there is */
        }
        fclose(f);
    }
    snprintf(name, n, "%s", best[0] ? best : "unknown CPU");
}

int nas_device_describe(const nas_backend *be, char *name, size_t n, char *cc, size_t m)
{
    if (name && n)
        name[0] = '\0';
    if (cc && m)
        cc[0] = '\0';
    if (!be || !name || n == 0)
        return NAS_EINVAL;
    if (be->ext && be->ext->device_info)
        return be->ext->device_info(be, name, n, cc, m);
    cpu_model(name, n);
    return NAS_OK;
}
