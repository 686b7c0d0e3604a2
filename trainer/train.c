/*
 * trainer/train.c - the proxy training loop and evaluation.
 *
 * Mini-batch SGD with momentum (PyTorch's torch.optim.SGD formulation, see
 * nas_sgd_step) and the cosine learning-rate schedule of Loshchilov &
 * Hutter, "SGDR", ICLR 2017, without restarts, stepped per batch:
 *   lr_t = lr/2 * (1 + cos(pi * t / T)),  t = 0 .. T-1, T = total steps,
 * as NAS-Bench-201 trains its networks (cosine annealing, Nesterov 0.9,
 * weight decay 5e-4). Batches are copied from the host data set to the
 * backend with nas_tensor_upload; labels travel as floats.
 */
#include <math.h>   /* cos, isfinite */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* memcpy */
#include <time.h>   /* clock_gettime */
#include "nas/trainer.h"
#include "trainer/backend_impl.h" /* nas__backend_step_begin, _step_end */
#include "trainer/loader_impl.h"  /* batches prepared ahead (issue 16) */
#include "trainer/net_impl.h"     /* nas__net_backend */

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void nas__batch_io_free(nas__batch_io *io)
{
    nas_tensor_destroy(io->x);
    nas_tensor_destroy(io->y);
    io->x = io->y = NULL;
}

int nas__batch_io_init(nas__batch_io *io, nas_backend *be, const nas_dataset *d, int batch)
{
    memset(io, 0, sizeof *io);
    io->per = (size_t)d->c * d->h * d->w;
    int rc = nas_tensor_create(be, batch, d->c, d->h, d->w, &io->x);
    if (!rc)
        rc = nas_tensor_create(be, batch, 1, 1, 1, &io->y);
    if (rc)
        nas__batch_io_free(io);
    return rc;
}

int nas__batch_io_upload(nas__batch_io *io, const float *hx, const float *hy, int b,
                         nas_tensor *xv, nas_tensor *yv)
{
    *xv = *io->x;
    xv->n = b;
    xv->count = (size_t)b * io->per;
    *yv = *io->y;
    yv->n = b;
    yv->count = (size_t)b;
    int rc = nas_tensor_upload(xv, hx, xv->count);
    if (!rc)
        rc = nas_tensor_upload(yv, hy, yv->count);
    return rc;
}

/* Upload images first..first+b of d into views, staged in host buffers
 * hx[b*per], hy[b]. */
static int io_load(nas__batch_io *io, float *hx, float *hy, const nas_dataset *d, int first,
                   int b, nas_tensor *xv, nas_tensor *yv)
{
    for (int i = 0; i < b; i++) {
        size_t src = (size_t)(first + i);
        memcpy(hx + (size_t)i * io->per, d->images + src * io->per, io->per * sizeof(float));
        hy[i] = (float)d->labels[src];
    }
    return nas__batch_io_upload(io, hx, hy, b, xv, yv);
}

/* Sum of squares of every trainable weight: non-finite once any weight is
 * NaN or infinite. The loss alone can miss that (ReLU may map NaN to 0 and
 * leave the logits finite), so nas_train checks this every
 * WEIGHT_CHECK_STEPS steps and at each epoch's end. */
#define WEIGHT_CHECK_STEPS 100

static int weights_finite(nas_net *net, nas_backend *be, int *finite)
{
    int np = nas_net_params(net, NULL, 0);
    double total = 0;
    nas_net_param *all = malloc((size_t)(np > 0 ? np : 1) * sizeof *all);
    if (!all)
        return NAS_ENOMEM;
    nas_net_params(net, all, np);
    int rc = NAS_OK;
    for (int i = 0; i < np && !rc; i++) {
        if (!all[i].grad)
            continue;
        double ss = 0;
        rc = nas_sumsq(be, all[i].value, &ss);
        total += ss;
    }
    free(all);
    *finite = isfinite(total);
    return rc;
}


double nas__train_lr(const nas_recipe *recipe, int t, int total)
{
    if (recipe->schedule != NAS_SCHEDULE_COSINE || total <= 0)
        return recipe->lr;
    return recipe->lr * 0.5 * (1.0 + cos(M_PI * (double)t / (double)total));
}

int nas__train_step(nas_net *net, const nas_tensor *x, const nas_tensor *y,
                    const nas_recipe *recipe, int t, int total, int ep, int s, int per_epoch,
                    float *loss, int *correct, int *skipped, nas_error *err)
{
    nas_backend *be = nas__net_backend(net);
    const nas_tensor *logits;
    double lr = nas__train_lr(recipe, t, total);
    nas__net_set_step(net, (uint64_t)t); /* dropout masks (issue 15) */
    int sk = 0;
    if (skipped)
        *skipped = 0;
    /* loss-scaled precisions (cuda fp16) bracket the step: the overflow
     * flag is cleared here and set by the step's fp16 casts, forward
     * (issue 19) and backward */
    double ls[2];
    int scaling = nas__backend_loss_scale_get(be, ls) == NAS_OK;
    int rc = nas__backend_step_begin(be);
    if (!rc && scaling) /* a skipped step must not keep what its forward did to them */
        rc = nas__net_stats_save(net);
    if (!rc)
        rc = nas_net_forward(net, x, 1, &logits);
    if (!rc)
        rc = nas_net_backward(net, y, loss, correct);
    if (!rc && !isfinite(*loss)) {
        /* an fp16 overflow the loss scaler saw: skip the step (S halves,
         * weights untouched), as Micikevicius et al. 2018, 3.2 */
        if (scaling && nas__backend_step_end(be, &sk) == NAS_OK && sk) {
            if (skipped)
                *skipped = 1;
            rc = nas__net_stats_restore(net);
            if (rc)
                return nas_error_set(err, rc, "restoring the BN statistics of skipped step %d of "
                                     "epoch %d: %s", s + 1, ep + 1, nas_strerror(rc));
            return NAS_OK;
        }
        return nas_error_set(err, NAS_ENAN, "loss is %g at epoch %d, step %d of %d (lr %g)",
                             (double)*loss, ep + 1, s + 1, per_epoch, lr);
    }
    if (!rc)
        rc = nas_net_sgd_step(net, (float)lr, (float)recipe->momentum,
                              (float)recipe->weight_decay, recipe->nesterov);
    if (!rc)
        rc = nas__backend_step_end(be, &sk);
    if (!rc && sk) /* gradients overflowed: SGD skipped itself */
        rc = nas__net_stats_restore(net);
    if (!rc && skipped)
        *skipped = sk;
    if (!rc)
        rc = nas_backend_sync(be);
    if (rc)
        return nas_error_set(err, rc, "training step %d of epoch %d: %s %s", s + 1, ep + 1,
                             nas_strerror(rc), nas_backend_last_error(be));
    return NAS_OK;
}

int nas_train(nas_net *net, const nas_dataset *data, const nas_recipe *recipe,
              nas_train_progress progress, void *ctx, nas_train_stats *stats, nas_error *err)
{
    return nas_train_epochs(net, data, recipe, progress, NULL, ctx, stats, err);
}

int nas_train_epochs(nas_net *net, const nas_dataset *data, const nas_recipe *recipe,
                     nas_train_progress progress, nas_train_epoch_cb on_epoch, void *ctx,
                     nas_train_stats *stats, nas_error *err)
{
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!net || !data || !recipe)
        return nas_error_set(err, NAS_EINVAL, "nas_train: NULL argument");
    if (recipe->epochs < 0 || recipe->batch_size <= 0 || data->n <= 0 || !(recipe->lr >= 0))
        return nas_error_set(err, NAS_EINVAL,
                             "nas_train: bad recipe (epochs %d, batch %d, lr %g) or empty data (%d)",
                             recipe->epochs, recipe->batch_size, recipe->lr, data->n);
    nas_backend *be = nas__net_backend(net);
    if (!be)
        return nas_error_set(err, NAS_EINVAL, "nas_train: network has no parameters");
    nas__batch_io io;
    int rc = nas__batch_io_init(&io, be, data, recipe->batch_size);
    if (rc)
        return nas_error_set(err, rc, "allocating a batch of %d images: %s", recipe->batch_size,
                             nas_strerror(rc));
    nas__loader *ld = NULL;
    rc = nas__loader_create(data, recipe->batch_size, recipe->seed, 0, 0, recipe->epochs,
                            &recipe->augment, recipe->loader_threads, &ld, err);
    if (rc) {
        nas__batch_io_free(&io);
        return rc;
    }
    int per_epoch = (data->n + recipe->batch_size - 1) / recipe->batch_size;
    int total = per_epoch * recipe->epochs;
    int t = 0, done = 0;
    double seconds = 0, load_seconds = 0, wait_seconds = 0, last_loss = 0, last_acc = 0;
    long images = 0;
    for (int ep = 0; ep < recipe->epochs && !rc; ep++) {
        double loss_sum = 0, ep_seconds = seconds;
        long correct_sum = 0, seen = 0;
        for (int s = 0; s < per_epoch; s++, t++) {
            int b = 0;
            double t0 = now_s();
            nas_tensor xv, yv;
            float loss = 0;
            int correct = 0;
            const float *hx, *hy;
            rc = nas__loader_next(ld, &hx, &hy, &b, &wait_seconds);
            if (!rc)
                rc = nas__batch_io_upload(&io, hx, hy, b, &xv, &yv);
            load_seconds += now_s() - t0;
            if (rc) {
                nas_error_set(err, rc, "loading batch %d of epoch %d: %s", s + 1, ep + 1,
                              nas_strerror(rc));
                break;
            }
            int skipped = 0;
            rc = nas__train_step(net, &xv, &yv, recipe, t, total, ep, s, per_epoch, &loss,
                                 &correct, &skipped, err);
            if (rc)
                break;
            seconds += now_s() - t0;
            done = t + 1;
            images += b;
            if (!(skipped && !isfinite(loss))) { /* an overflowed fp16 step has no loss */
                loss_sum += (double)loss * b;
                correct_sum += correct;
                seen += b;
            }
            if ((t + 1) % WEIGHT_CHECK_STEPS == 0 || s + 1 == per_epoch) {
                int finite = 1;
                rc = weights_finite(net, be, &finite);
                if (rc) {
                    nas_error_set(err, rc, "checking weights at epoch %d, step %d: %s", ep + 1,
                                  s + 1, nas_strerror(rc));
                    break;
                }
                if (!finite) {
                    rc = nas_error_set(err, NAS_ENAN,
                                       "weights became NaN or infinite by epoch %d, step %d of %d "
                                       "(lr %g)",
                                       ep + 1, s + 1, per_epoch, nas__train_lr(recipe, t, total));
                    break;
                }
            }
            if (progress && progress(ctx, t + 1, total, loss)) {
                rc = nas_error_set(err, NAS_EINTR, "training interrupted at epoch %d, step %d",
                                   ep + 1, s + 1);
                break;
            }
        }
        if (seen) {
            last_loss = loss_sum / (double)seen;
            last_acc = (double)correct_sum / (double)seen;
        }
        if (stats)
            stats->epochs = rc ? ep : ep + 1;
        if (!rc && on_epoch) {
            nas_epoch_stats es = {ep + 1, recipe->epochs, last_loss, last_acc, seconds - ep_seconds,
                                  0};
            es.images_per_s = es.seconds > 0 ? (double)seen / es.seconds : 0;
            if (on_epoch(ctx, &es))
                rc = nas_error_set(err, NAS_EINTR, "training interrupted after epoch %d", ep + 1);
        }
    }
    if (stats) {
        stats->train_loss = last_loss;
        stats->train_accuracy = last_acc;
        stats->seconds = seconds;
        stats->load_seconds = load_seconds;
        stats->wait_seconds = wait_seconds;
        stats->images_per_s = seconds > 0 ? (double)images / seconds : 0;
        stats->steps = done;
    }
    nas__loader_destroy(ld);
    nas__batch_io_free(&io);
    return rc;
}

/* The batches of nas_net_evaluate (recal 0: eval forwards, accuracy and
 * loss into *sums) and nas_net_bn_recalibrate (recal 1: train forwards of
 * the first n images with BN momentum 1/k for the k-th batch, 1-based:
 * PyTorch's momentum=None). `what` names the caller in errors. */
static int over_batches(nas_net *net, const nas_dataset *data, int n, int batch_size, int recal,
                        double sums[2], const char *what, nas_error *err)
{
    if (!net || !data || batch_size <= 0 || data->n <= 0)
        return nas_error_set(err, NAS_EINVAL, "%s: bad arguments", what);
    nas_backend *be = nas__net_backend(net);
    if (!be)
        return nas_error_set(err, NAS_EINVAL, "%s: network has no parameters", what);
    nas__batch_io io;
    int rc = nas__batch_io_init(&io, be, data, batch_size);
    float *hx = malloc((size_t)batch_size * io.per * sizeof(float));
    float *hy = malloc((size_t)batch_size * sizeof(float));
    if (!rc && (!hx || !hy))
        rc = NAS_ENOMEM;
    if (rc) {
        nas__batch_io_free(&io);
        free(hx);
        free(hy);
        return nas_error_set(err, rc, "allocating a batch of %d images: %s", batch_size,
                             nas_strerror(rc));
    }
    float momentum = recal ? nas__net_set_bn_momentum(net, 1.0f) : 0; /* restored below */
    sums[0] = sums[1] = 0;
    for (int first = 0, k = 1; first < n; first += batch_size, k++) {
        int b = n - first < batch_size ? n - first : batch_size;
        nas_tensor xv, yv;
        const nas_tensor *logits;
        float l = 0;
        int c = 0;
        rc = io_load(&io, hx, hy, data, first, b, &xv, &yv);
        if (!rc && recal)
            nas__net_set_bn_momentum(net, 1.0f / (float)k);
        if (!rc)
            rc = nas_net_forward(net, &xv, recal, &logits);
        if (!rc && !recal)
            rc = nas_softmax_xent(be, logits, &yv, NULL, &l, &c);
        if (rc) {
            nas_error_set(err, rc, "%s images %d..%d: %s %s",
                          recal ? "recalibrating BN on" : "evaluating", first, first + b - 1,
                          nas_strerror(rc), nas_backend_last_error(be));
            break;
        }
        sums[0] += c;
        sums[1] += (double)l * b;
    }
    if (recal)
        nas__net_set_bn_momentum(net, momentum);
    if (!rc && recal)
        rc = nas_backend_sync(be);
    nas__batch_io_free(&io);
    free(hx);
    free(hy);
    return rc;
}

int nas_net_evaluate(nas_net *net, const nas_dataset *data, int batch_size, double *accuracy,
                     double *loss, nas_error *err)
{
    if (accuracy)
        *accuracy = 0;
    if (loss)
        *loss = 0;
    double sums[2];
    int rc = over_batches(net, data, data ? data->n : 0, batch_size, 0, sums, "nas_net_evaluate",
                          err);
    if (rc)
        return rc;
    if (accuracy)
        *accuracy = sums[0] / (double)data->n;
    if (loss)
        *loss = sums[1] / (double)data->n;
    return NAS_OK;
}

int nas_net_bn_recalibrate(nas_net *net, const nas_dataset *data, int batches, int batch_size,
                           nas_error *err)
{
    if (batches < 0 || (net && batch_size > nas__net_max_batch(net)))
        return nas_error_set(err, NAS_EINVAL, "nas_net_bn_recalibrate: %d batches of %d images "
                             "(the net holds at most %d)", batches, batch_size,
                             net ? nas__net_max_batch(net) : 0);
    if (batches == 0)
        return NAS_OK;
    double sums[2];
    long long n = (long long)batches * batch_size;
    if (data && n > data->n)
        n = data->n;
    return over_batches(net, data, (int)n, batch_size, 1, sums, "nas_net_bn_recalibrate", err);
}
