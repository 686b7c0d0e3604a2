/*
 * search/placement.c - the devices trials can run on (nas_devices_query)
 * and which trial runs where (nas_placement_*), as declared in
 * nas/search.h. The placement functions are pure arithmetic over the
 * config and a device count, so tests drive them with fake counts.
 */
#include <errno.h>     /* EINTR */
#include <stdio.h>     /* fopen, fgets, snprintf */
#include <stdlib.h>    /* malloc, free */
#include <string.h>    /* strcmp, strncmp, memset */
#include <sys/wait.h>  /* waitpid */
#include <unistd.h>    /* fork, pipe, sysconf, _exit */
#include "nas/search.h"
#include "search/pool_msg.h" /* nas__cuda_visible_value */
#ifdef NAS_HAVE_CUDA
#include "trainer/cuda/cuda_probe.h" /* nas__cuda_probe */
#endif

/* ---- the CPU ----------------------------------------------------------------- */

/* "model name : AMD EPYC 7B13" from /proc/cpuinfo (first processor). */
static void cpu_model(char *buf, size_t n)
{
    snprintf(buf, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        size_t len = strlen(v);
        while (len && (v[len - 1] == '\n' || v[len - 1] == ' '))
            v[--len] = '\0';
        if (len)
            snprintf(buf, n, "%s", v);
        break;
    }
    fclose(f);
}

static int query_cpu(nas_device_info *out, int max, int *count)
{
    *count = 1;
    if (!out || max < 1)
        return NAS_OK;
    memset(out, 0, sizeof *out);
    out->kind = NAS_DEVICE_CPU;
    out->index = 0;
    cpu_model(out->name, sizeof out->name);
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    out->units = threads > 0 ? (int)threads : 1;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    out->memory_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    return NAS_OK;
}

/* ---- CUDA devices --------------------------------------------------------------- */

#ifdef NAS_HAVE_CUDA
/* What the probe child sends back. */
typedef struct probe_reply {
    int rc, count;
    char reason[512];
    nas__cuda_dev devs[NAS_MAX_DEVICES];
} probe_reply;

/* Run nas__cuda_probe in a child process so this process never initialises
 * CUDA (a CUDA context does not survive fork, and the pool forks workers
 * after this). Falls back to probing in-process when fork fails. */
static void probe_isolated(probe_reply *r)
{
    memset(r, 0, sizeof *r);
    int fd[2];
    pid_t pid = -1;
    if (pipe(fd) == 0) {
        fflush(NULL);
        pid = fork();
        if (pid < 0) {
            close(fd[0]);
            close(fd[1]);
        }
    }
    if (pid < 0) { /* no pipe or no fork: probe here */
        r->rc = nas__cuda_probe(r->devs, NAS_MAX_DEVICES, &r->count, r->reason, sizeof r->reason);
        return;
    }
    if (pid == 0) {
        close(fd[0]);
        probe_reply c;
        memset(&c, 0, sizeof c);
        c.rc = nas__cuda_probe(c.devs, NAS_MAX_DEVICES, &c.count, c.reason, sizeof c.reason);
        const char *p = (const char *)&c;
        size_t left = sizeof c;
        while (left) {
            ssize_t k = write(fd[1], p, left);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0)
                break;
            p += k;
            left -= (size_t)k;
        }
        _exit(0);
    }
    close(fd[1]);
    char *p = (char *)r;
    size_t got = 0;
    while (got < sizeof *r) {
        ssize_t k = read(fd[0], p + got, sizeof *r - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (got != sizeof *r) {
        memset(r, 0, sizeof *r);
        r->rc = NAS_EBACKEND;
        if (WIFSIGNALED(status))
            snprintf(r->reason, sizeof r->reason,
                     "the CUDA probe process was killed by signal %d", WTERMSIG(status));
        else
            snprintf(r->reason, sizeof r->reason, "the CUDA probe process sent no answer");
    }
}
#endif

static int query_cuda(nas_device_info *out, int max, int *count, nas_error *err)
{
#ifndef NAS_HAVE_CUDA
    (void)out;
    (void)max;
    *count = 0;
    return nas_error_set(err, NAS_ENOTFOUND,
                         "CUDA backend not compiled in (configure with the CUDA toolkit and "
                         "cuDNN present, or -DNAS_CUDA=ON; see docs/cuda.md)");
#else
    probe_reply *r = malloc(sizeof *r);
    if (!r) {
        *count = 0;
        return nas_error_set(err, NAS_ENOMEM, "nas_devices_query: out of memory");
    }
    probe_isolated(r);
    int rc = r->rc;
    if (rc != NAS_OK) {
        *count = 0;
        if (rc == NAS_ENODEV)
            nas_error_set(err, rc, "no CUDA device: %s", r->reason);
        else
            nas_error_set(err, rc, "CUDA device query failed: %s", r->reason);
        free(r);
        return rc;
    }
    *count = r->count;
    for (int i = 0; i < r->count && i < max && i < NAS_MAX_DEVICES && out; i++) {
        nas_device_info *d = &out[i];
        memset(d, 0, sizeof *d);
        d->kind = NAS_DEVICE_CUDA;
        d->index = r->devs[i].index;
        snprintf(d->name, sizeof d->name, "%s", r->devs[i].name);
        d->memory_bytes = r->devs[i].mem;
        d->cc_major = r->devs[i].major;
        d->cc_minor = r->devs[i].minor;
        d->units = r->devs[i].sms;
    }
    free(r);
    return NAS_OK;
#endif
}

int nas_devices_query(nas_device_kind kind, nas_device_info *out, int max, int *count,
                      nas_error *err)
{
    int dummy;
    if (!count)
        count = &dummy;
    *count = 0;
    if (max < 0 || (max > 0 && !out))
        return nas_error_set(err, NAS_EINVAL, "nas_devices_query: bad output array");
    switch (kind) {
    case NAS_DEVICE_CPU:
        return query_cpu(out, max, count);
    case NAS_DEVICE_CUDA:
        return query_cuda(out, max, count, err);
    }
    return nas_error_set(err, NAS_EINVAL, "nas_devices_query: unknown device kind %d", (int)kind);
}

/* ---- placement ------------------------------------------------------------------------- */

static int is(const char *s, const char *v) { return strcmp(s, v) == 0; }

int nas_placement_resolve(const nas_config *cfg, int n_cuda, const char *no_cuda_reason,
                          nas_placement *out, nas_error *err)
{
    if (!cfg || !out)
        return nas_error_set(err, NAS_EINVAL, "nas_placement_resolve: NULL argument");
    memset(out, 0, sizeof *out);
    if (n_cuda < 0)
        n_cuda = 0;
    const char *dev = cfg->workers.device[0] ? cfg->workers.device : "auto";
    const char *be = cfg->proxy.backend[0] ? cfg->proxy.backend : "auto";
    if (!is(dev, "cpu") && !is(dev, "cuda") && !is(dev, "auto"))
        return nas_error_set(err, NAS_ECONFIG,
                             "workers.device = \"%s\", expected \"cpu\", \"cuda\" or \"auto\"",
                             dev);
    if (!is(be, "cpu") && !is(be, "ref") && !is(be, "cuda") && !is(be, "auto"))
        return nas_error_set(err, NAS_ECONFIG,
                             "proxy.backend = \"%s\", expected \"cpu\", \"ref\", \"cuda\" or "
                             "\"auto\"",
                             be);
    if (is(dev, "cuda") && is(be, "ref"))
        return nas_error_set(err, NAS_ECONFIG,
                             "workers.device = \"cuda\" but proxy.backend = \"ref\" (the "
                             "reference backend runs on the CPU); use proxy.backend = \"cuda\" "
                             "or \"auto\"");

    int cuda;
    const char *why; /* which key asked for CUDA, for messages */
    if (is(dev, "cuda") || is(be, "cuda")) {
        cuda = 1;
        why = is(dev, "cuda") ? "workers.device = \"cuda\"" : "proxy.backend = \"cuda\"";
    } else if ((is(dev, "auto") || is(be, "auto")) && !is(be, "ref")) {
        cuda = n_cuda > 0; /* auto: CUDA when present, else the CPU */
        why = "auto";
    } else {
        cuda = 0;
        why = "";
    }

    if (!cuda) {
        /* issue 7: fp16 (with loss scaling) exists on CUDA only; bf16 on both */
        if (is(cfg->proxy.precision, "fp16"))
            return nas_error_set(err, NAS_EUNSUPPORTED,
                                 "proxy.precision = \"fp16\" needs the CUDA backend (tensor cores "
                                 "and loss scaling), but these trials run on the CPU (%s); use "
                                 "\"bf16\" or \"fp32\" on the CPU",
                                 why[0] ? "\"auto\" found no CUDA device"
                                        : "workers.device and proxy.backend select it");
        out->kind = NAS_DEVICE_CPU;
        snprintf(out->backend, sizeof out->backend, "%s", is(be, "ref") ? "ref" : "cpu");
        out->slots = cfg->workers.count > 0 ? cfg->workers.count : 1;
        return NAS_OK;
    }
    if (n_cuda == 0)
        return nas_error_set(err, NAS_ENODEV,
                             "%s but no CUDA device is present (%s); use workers.device = "
                             "\"auto\" to fall back to the CPU, or \"cpu\"",
                             why,
                             no_cuda_reason && no_cuda_reason[0] ? no_cuda_reason
                                                                 : "no reason given");
    /* fp32, fp16 and bf16 all run on CUDA (docs/cuda.md, mixed precision);
     * a device too old for the 16-bit formats is refused when the backend
     * starts (nas_backend_set_precision). */
    out->kind = NAS_DEVICE_CUDA;
    snprintf(out->backend, sizeof out->backend, "cuda");
    int tpg = cfg->workers.trials_per_gpu;
    if (tpg < 0)
        return nas_error_set(err, NAS_ECONFIG, "workers.trials_per_gpu = %d, expected >= 1", tpg);
    out->trials_per_gpu = tpg == 0 ? 1 : tpg;
    int listed = cfg->workers.n_gpus;
    if (listed <= 0) { /* "all" (or no list) */
        out->n_gpus = n_cuda < NAS_MAX_DEVICES ? n_cuda : NAS_MAX_DEVICES;
        for (int i = 0; i < out->n_gpus; i++)
            out->gpus[i] = i;
    } else {
        if (listed > NAS_MAX_DEVICES)
            return nas_error_set(err, NAS_ECONFIG, "workers.gpus has %d entries, at most %d",
                                 listed, NAS_MAX_DEVICES);
        for (int i = 0; i < listed; i++) {
            int g = cfg->workers.gpus[i];
            if (g < 0 || g >= n_cuda)
                return nas_error_set(err, NAS_ECONFIG,
                                     "workers.gpus[%d] = %d but only %d CUDA device%s present "
                                     "(ids 0..%d)",
                                     i, g, n_cuda, n_cuda == 1 ? " is" : "s are", n_cuda - 1);
            for (int j = 0; j < i; j++)
                if (cfg->workers.gpus[j] == g)
                    return nas_error_set(err, NAS_ECONFIG, "GPU %d is listed twice in workers.gpus",
                                         g);
            out->gpus[i] = g;
        }
        out->n_gpus = listed;
    }
    out->slots = out->n_gpus * out->trials_per_gpu;
    return NAS_OK;
}

int nas_placement_slot_device(const nas_placement *p, int slot)
{
    if (!p || slot < 0 || slot >= p->slots)
        return -1;
    if (p->kind != NAS_DEVICE_CUDA || p->n_gpus <= 0)
        return 0;
    return p->gpus[slot % p->n_gpus];
}

int nas_placement_pick_slot(const nas_placement *p, const unsigned char *busy)
{
    if (!p || !busy || p->slots <= 0)
        return -1;
    if (p->kind != NAS_DEVICE_CUDA || p->n_gpus <= 0) {
        for (int s = 0; s < p->slots; s++)
            if (!busy[s])
                return s;
        return -1;
    }
    /* running[g]: busy slots on the g-th listed GPU (slot s is on s % n_gpus) */
    int running[NAS_MAX_DEVICES] = {0};
    for (int s = 0; s < p->slots; s++)
        if (busy[s])
            running[s % p->n_gpus]++;
    int best = -1;
    for (int s = 0; s < p->slots; s++) {
        if (busy[s])
            continue;
        int g = s % p->n_gpus;
        if (best < 0 || running[g] < running[best % p->n_gpus] ||
            (running[g] == running[best % p->n_gpus] && g < best % p->n_gpus))
            best = s;
    }
    return best;
}

/* ---- GPU of an MPI worker rank (issue 4) ------------------------------------------- */

int nas_mpi_local_rank(const char *env_local_rank, int shared_rank)
{
    if (env_local_rank && *env_local_rank) {
        const char *s = env_local_rank;
        long v = 0;
        while (*s >= '0' && *s <= '9' && v <= 1000000L)
            v = v * 10 + (*s++ - '0');
        if (*s == '\0' && v <= 1000000L)
            return (int)v;
    }
    return shared_rank >= 0 ? shared_rank : 0;
}

int nas_placement_rank_device(const nas_placement *p, int local_rank)
{
    if (!p || p->kind != NAS_DEVICE_CUDA || p->n_gpus <= 0 || p->n_gpus > NAS_MAX_DEVICES ||
        local_rank < 0)
        return -1;
    return p->gpus[local_rank % p->n_gpus];
}

int nas__cuda_visible_value(const char *visible, int ordinal, char *buf, size_t n)
{
    if (!buf || n == 0 || ordinal < 0)
        return -1;
    if (!visible || !*visible) { /* every device visible: the ordinal itself */
        int k = snprintf(buf, n, "%d", ordinal);
        return k > 0 && (size_t)k < n ? 0 : -1;
    }
    const char *s = visible;
    for (int i = 0;; i++) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        while (len && (*s == ' ' || *s == '\t')) { /* "0, 1" */
            s++;
            len--;
        }
        while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
            len--;
        if (i == ordinal) {
            if (len == 0 || len >= n)
                return -1;
            memcpy(buf, s, len);
            buf[len] = '\0';
            return 0;
        }
        if (!end)
            return -1;
        s = end + 1;
    }
}
