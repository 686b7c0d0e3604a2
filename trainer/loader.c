/*
 * trainer/loader.c - batches prepared ahead of the trainer (issue 16);
 * trainer/loader_impl.h describes the order and the guarantees.
 *
 * Ring of S = threads + 1 slots; batch k lives in slot k % S. The trainer
 * holds one slot (the batch it trains on); a producer may fill slot k % S
 * once the trainer has moved past batch k - S. A batch's images are handed
 * out one at a time under the lock: when the trainer asks for a batch that
 * is not ready (a loader thread the scheduler has not run, on a busy
 * machine), it prepares the images nobody has taken yet itself and waits
 * only for those in flight - the content is the same whoever prepares
 * an image. One mutex, two condition variables (a batch became ready; the
 * trainer released a slot).
 */
#define _GNU_SOURCE /* SCHED_BATCH */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "trainer/loader_impl.h"

#define LOADER_MAX_THREADS 16

typedef struct slot {
    float *x, *y;
    long batch;   /* the batch it holds once ready; -1: none */
    long claimed; /* the batch being (or last) prepared in it; -1: none */
    int taken, done; /* images of `claimed` handed out, finished */
} slot;

typedef struct worker {
    nas__loader *l;
    int j;
    pthread_t tid;
    uint32_t *idx; /* this thread's copy of the current epoch's order */
    int idx_epoch;
    float *tmp;
} worker;

struct nas__loader {
    const nas_dataset *d;
    int batch, per_epoch, first_epoch;
    int first_batch; /* batch k of the loader is batch first_batch + k of first_epoch's run */
    long total;      /* batches in the run */
    uint64_t seed;
    nas_augment aug;
    int threads, nslots;
    size_t per;      /* floats per image */
    slot *slots;
    worker *w;       /* threads workers, then the trainer's own (w[threads]) */
    int started;     /* threads running */
    long next;       /* the batch nas__loader_next hands out next */
    pthread_mutex_t mu;
    pthread_cond_t ready, freed;
    int stop;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Gather, augment and label image i of batch k into slot s (no lock: the
 * image is this worker's once taken). */
static void prepare_image(worker *w, long k, int i, slot *s)
{
    nas__loader *l = w->l;
    const nas_dataset *d = l->d;
    k += l->first_batch;
    int ep = l->first_epoch + (int)(k / l->per_epoch), first = (int)(k % l->per_epoch) * l->batch;
    if (w->idx_epoch != ep) { /* this worker's copy of the epoch's order */
        for (int j = 0; j < d->n; j++)
            w->idx[j] = (uint32_t)j;
        nas_rng r;
        nas_rng_seed(&r, l->seed, (uint64_t)ep);
        nas_rng_shuffle(&r, w->idx, (size_t)d->n);
        w->idx_epoch = ep;
    }
    size_t src = w->idx[first + i];
    float *img = s->x + (size_t)i * l->per;
    memcpy(img, d->images + src * l->per, l->per * sizeof *img);
    s->y[i] = (float)d->labels[src];
    if (l->aug.crop_pad > 0 || l->aug.flip || l->aug.cutout > 0)
        nas_augment_image(&l->aug, img, w->tmp, d->c, d->h, d->w, d->black, l->seed,
                          (uint64_t)ep * (uint64_t)d->n + (uint64_t)(first + i));
}

/* Images of batch k in s: the last one is short. */
static int batch_len(const nas__loader *l, long k)
{
    int first = (int)((k + l->first_batch) % l->per_epoch) * l->batch;
    return l->d->n - first < l->batch ? l->d->n - first : l->batch;
}

/* With l->mu held: claim batch k in slot s if nobody has, then take its
 * images one at a time until none is left (the lock is dropped while an
 * image is prepared). Whoever finishes the last image marks it ready. */
static void work_on(nas__loader *l, worker *w, long k, slot *s)
{
    if (s->claimed < k) {
        s->claimed = k;
        s->taken = s->done = 0;
    }
    if (s->claimed != k)
        return;
    int b = batch_len(l, k);
    while (s->taken < b) {
        int i = s->taken++;
        pthread_mutex_unlock(&l->mu);
        prepare_image(w, k, i, s);
        pthread_mutex_lock(&l->mu);
        if (++s->done == b) {
            s->batch = k;
            pthread_cond_broadcast(&l->ready);
        }
    }
}

static void *producer(void *arg)
{
    worker *w = arg;
    nas__loader *l = w->l;
    pthread_mutex_lock(&l->mu);
    for (long k = w->j; k < l->total && !l->stop; k += l->threads) {
        slot *s = &l->slots[k % l->nslots];
        /* the slot is free once the trainer asked for batch k - S + 1 */
        while (!l->stop && l->next < k - l->nslots + 1 + 1 && k >= l->nslots)
            pthread_cond_wait(&l->freed, &l->mu);
        if (!l->stop)
            work_on(l, w, k, s);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

void nas__loader_destroy(nas__loader *l)
{
    if (!l)
        return;
    if (l->started) {
        pthread_mutex_lock(&l->mu);
        l->stop = 1;
        pthread_cond_broadcast(&l->freed);
        pthread_mutex_unlock(&l->mu);
        for (int j = 0; j < l->started; j++)
            pthread_join(l->w[j].tid, NULL);
    }
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->ready);
    pthread_cond_destroy(&l->freed);
    for (int s = 0; l->slots && s < l->nslots; s++) {
        free(l->slots[s].x);
        free(l->slots[s].y);
    }
    for (int j = 0; l->w && j <= l->threads; j++) {
        free(l->w[j].idx);
        free(l->w[j].tmp);
    }
    free(l->slots);
    free(l->w);
    free(l);
}

int nas__loader_create(const nas_dataset *data, int batch, uint64_t seed, int first_epoch,
                       int first_batch, int epochs, const nas_augment *aug, int threads,
                       nas__loader **out, nas_error *err)
{
    *out = NULL;
    if (!data || data->n <= 0 || batch <= 0 || threads < 0 || threads > LOADER_MAX_THREADS ||
        first_epoch < 0 || first_batch < 0 || first_batch >= (data->n + batch - 1) / batch)
        return nas_error_set(err, NAS_EINVAL, "batch loader: bad arguments (%d images, batch %d, "
                             "%d threads, expected 0..%d)", data ? data->n : 0, batch, threads,
                             LOADER_MAX_THREADS);
    nas__loader *l = calloc(1, sizeof *l);
    if (!l)
        return nas_error_set(err, NAS_ENOMEM, "out of memory for the batch loader");
    l->d = data;
    l->batch = batch;
    l->per_epoch = (data->n + batch - 1) / batch;
    l->first_epoch = first_epoch;
    l->first_batch = first_batch;
    l->total = epochs > first_epoch ? (long)(epochs - first_epoch) * l->per_epoch - first_batch : 0;
    l->seed = seed;
    if (aug)
        l->aug = *aug;
    l->threads = threads;
    l->nslots = threads + 1;
    l->per = (size_t)data->c * data->h * data->w;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->ready, NULL);
    pthread_cond_init(&l->freed, NULL);
    int nw = threads + 1;
    l->slots = calloc((size_t)l->nslots, sizeof *l->slots);
    l->w = calloc((size_t)nw, sizeof *l->w);
    int ok = l->slots && l->w;
    for (int s = 0; ok && s < l->nslots; s++) {
        l->slots[s].x = malloc((size_t)batch * l->per * sizeof(float));
        l->slots[s].y = malloc((size_t)batch * sizeof(float));
        l->slots[s].batch = l->slots[s].claimed = -1;
        ok = l->slots[s].x && l->slots[s].y;
    }
    for (int j = 0; ok && j < nw; j++) {
        l->w[j] = (worker){.l = l, .j = j, .idx_epoch = -1};
        l->w[j].idx = malloc((size_t)data->n * sizeof(uint32_t));
        l->w[j].tmp = malloc(l->per * sizeof(float));
        ok = l->w[j].idx && l->w[j].tmp;
    }
    if (!ok) {
        nas__loader_destroy(l);
        return nas_error_set(err, NAS_ENOMEM, "out of memory for %d batches of %d images",
                             threads + 1, batch);
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
#ifdef SCHED_BATCH
    /* Linux: a woken loader thread does not preempt the trainer (sched(7));
     * an unprivileged thread may choose it; ignored where it cannot */
    struct sched_param sp = {0};
    if (pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED) != 0 ||
        pthread_attr_setschedpolicy(&attr, SCHED_BATCH) != 0 ||
        pthread_attr_setschedparam(&attr, &sp) != 0) {
        pthread_attr_destroy(&attr);
        pthread_attr_init(&attr);
    }
#endif
    for (int j = 0; j < threads; j++) {
        int prc = pthread_create(&l->w[j].tid, &attr, producer, &l->w[j]);
        if (prc != 0) /* the scheduling attributes refused: the default ones */
            prc = pthread_create(&l->w[j].tid, NULL, producer, &l->w[j]);
        if (prc != 0) {
            pthread_attr_destroy(&attr);
            nas__loader_destroy(l);
            return nas_error_set(err, NAS_EIO, "cannot start batch loader thread %d of %d", j + 1,
                                 threads);
        }
        l->started = j + 1;
    }
    pthread_attr_destroy(&attr);
    *out = l;
    return NAS_OK;
}

int nas__loader_next(nas__loader *l, const float **x, const float **y, int *b, double *wait_s)
{
    if (l->next >= l->total)
        return NAS_ENOTFOUND;
    long k = l->next;
    slot *s = &l->slots[k % l->nslots];
    double t0 = now_s();
    pthread_mutex_lock(&l->mu);
    l->next++; /* the batch before k is released: its slot may be refilled */
    /* help with (or do) what no thread has taken yet, then wait for the
     * images in flight */
    work_on(l, &l->w[l->threads], k, s);
    while (s->batch != k)
        pthread_cond_wait(&l->ready, &l->mu);
    if (wait_s)
        *wait_s += now_s() - t0;
    /* wake the producers only now: a woken thread that preempts this one
     * then costs step time, not the wait for a batch that was ready */
    pthread_cond_broadcast(&l->freed);
    pthread_mutex_unlock(&l->mu);
    *b = batch_len(l, k);
    *x = s->x;
    *y = s->y;
    return NAS_OK;
}
