/*
 * trainer/train_full.c - full training of an exported architecture with
 * per-epoch checkpoints, resume, and image augmentation (issue 5).
 *
 * The loop is step for step the proxy loop of trainer/train.c (same
 * shuffle PCG32(seed, epoch), same per-step cosine learning rate of
 * Loshchilov & Hutter's SGDR without restarts, same forward / backward /
 * nas_sgd_step sequence), so with augmentation off and no interruption it
 * computes exactly what nas_train computes: on the ref backend `nas train
 * ARCH.json --proxy` reproduces a trial bit for bit. What it adds:
 *
 *  - augmentation of each host image (nas_augment_image, trainer/augment.c:
 *    random crop with zero padding, horizontal flip, cutout), prepared with
 *    the batch by the loader (trainer/loader.c) ahead of the step; each
 *    image's draws are keyed by (seed, epoch, position), so no generator
 *    state needs keeping (checkpoints still carry state/aug_rng, unused);
 *  - a checkpoint after every epoch (trainer/weights.c's .npz: weights,
 *    BN statistics, SGD momentum, epoch and step counters, a fingerprint of the run: architecture,
 *    recipe, augmentation, backend, precision and a CRC-32 of the
 *    training images), written to
 *    PATH.tmp and renamed, so an interruption at any moment leaves the
 *    previous checkpoint intact; a rerun resumes after the last finished
 *    epoch and ends with the same weights as an uninterrupted run;
 *  - (issue 17) budgets of multi-fidelity search: `until` stops after an
 *    epoch, `until_images` inside one, with a checkpoint there that keeps
 *    the epoch's place (the loader restarts at that batch of the epoch's
 *    shuffled order) and running loss sums, so continuing equals one run.
 */
#include <inttypes.h> /* PRIu64, PRId64 */
#include <math.h>     /* cos, isfinite */
#include <stdio.h>    /* snprintf */
#include <stdlib.h>   /* malloc, free */
#include <string.h>   /* memcpy */
#include <time.h>     /* clock_gettime */
#include <unistd.h>   /* access */
#include <zlib.h>     /* crc32: the training data's fingerprint */
#include "nas/layers.h"
#include "nas/trainer.h"
#include "trainer/backend_impl.h" /* nas__backend_loss_scale_get, _set */
#include "trainer/loader_impl.h"  /* batches prepared ahead, augmented (issue 16) */
#include "trainer/net_impl.h"     /* nas__net_backend, nas__net_param_momentum */
#include "trainer/weights_impl.h" /* the .npz checkpoint */

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define CKPT_VERSION 1
#define AUG_STREAM 0x61756730ull /* "aug0": the generator checkpoints still carry */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- checkpoints ------------------------------------------------------------------ */

/* CRC-32 (zlib) of the training images and labels: identifies the data
 * whatever directory or subset option it came from. */
static unsigned long data_crc(const nas_dataset *data)
{
    const size_t bytes = (size_t)data->n * data->c * data->h * data->w * sizeof *data->images;
    const uLong c = crc32_z(crc32(0L, Z_NULL, 0), (const Bytef *)data->images, bytes);
    return crc32_z(c, data->labels, (size_t)data->n);
}

/* A chain network's layers (issue 15): " space=crc32:X" of every layer's
 * name, kind, shapes and settings, so a checkpoint of the same genotype
 * tokens in another chain space (another activation, say) is not resumed;
 * "" for a cell network (its fingerprint stays as before). */
static void space_part(const nas_net_desc *d, char *buf, size_t n)
{
    buf[0] = 0;
    nas_layers L;
    memset(&L, 0, sizeof L);
    if (!d->space || nas_space_layers(d->space, &d->genotype, &L, NULL) != NAS_OK)
        return;
    uLong c = crc32(0L, Z_NULL, 0);
    for (int i = 0; i < L.n; i++) {
        const nas_layer *l = &L.l[i];
        char t[256];
        int len = snprintf(t, sizeof t, "%s %d %d %d %dx%dx%d %dx%dx%d %d %d %d %d %d %d %d %d %.17g;",
                           l->name, (int)l->kind, l->src, l->src2, l->in_c, l->in_h, l->in_w,
                           l->out_c, l->out_h, l->out_w, l->kernel, l->stride, l->pad, l->groups,
                           l->bias, l->act, l->mid, l->gate_sigmoid, l->p);
        c = crc32(c, (const unsigned char *)t, (uInt)(len > 0 && len < (int)sizeof t ? len : 0));
    }
    snprintf(buf, n, " space=crc32:%08lx", (unsigned long)c);
    nas_layers_free(&L);
}

/* The run's fingerprint: genotype, widths (a chain network: its layers'
 * CRC), recipe, augmentation, image count, then (issue 19) " | backend=NAME
 * precision=P data=crc32:X". Checkpoints of nas before issue 19 end before
 * " | backend=" (RUN_PART). */
#define RUN_PART " | backend="
static void fingerprint(const nas_net *net, const nas_dataset *data, const nas_recipe *r,
                        const nas_augment *a, int64_t max_images, char *buf, size_t n)
{
    const nas_net_desc *d = nas__net_desc(net);
    const nas_backend *be = nas__net_backend(net);
    char aug[48], space[40];
    nas_augment_format(a, aug, sizeof aug);
    /* issue 16: each image's draws are keyed by its place in the run (the
     * loader's threads); an older checkpoint drew from one sequence, so
     * it is another run */
    if (strcmp(aug, "none") != 0)
        strncat(aug, "/keyed", sizeof aug - strlen(aug) - 1);
    space_part(d, space, sizeof space);
    /* issue 17: a schedule over a budget of images (not whole epochs) */
    char budget[40] = "";
    if (max_images > 0)
        snprintf(budget, sizeof budget, " budget=%" PRId64, max_images);
    int k = snprintf(buf, n, "v%d ops", CKPT_VERSION);
    for (int e = 0; e < d->genotype.len && k < (int)n; e++)
        k += snprintf(buf + k, n - (size_t)k, " %d", d->genotype.tok[e]);
    if (k < (int)n)
        snprintf(buf + k, n - (size_t)k,
                 " C=%d stages=%d N=%d in=%dx%dx%d classes=%d%s | epochs=%d batch=%d lr=%.17g "
                 "momentum=%.17g nesterov=%d wd=%.17g schedule=%d seed=%" PRIu64
                 " | augment=%s | images=%d%s" RUN_PART "%s precision=%s data=crc32:%08lx",
                 d->channels, d->stages, d->cells_per_stage, d->in_c, d->in_h, d->in_w, d->classes,
                 space, r->epochs, r->batch_size, r->lr, r->momentum, r->nesterov, r->weight_decay,
                 (int)r->schedule, r->seed, aug, data->n, budget, nas_backend_name(be),
                 nas_backend_get_precision(be), data_crc(data));
}

/* Value of `key` in fingerprint fp into val[n] ("ops": the six op ids,
 * "version": "v1"); 0 when absent. */
static int fp_value(const char *fp, const char *key, char *val, size_t n)
{
    size_t kl = strlen(key);
    if (!strcmp(key, "version") || !strcmp(key, "ops")) {
        const char *ops = strstr(fp, " ops");
        const char *end = strstr(fp, " C=");
        if (!ops || !end || end < ops)
            return 0;
        if (!strcmp(key, "version"))
            snprintf(val, n, "%.*s", (int)(ops - fp), fp);
        else
            snprintf(val, n, "%.*s", (int)(end - ops - 5), ops + 5);
        return 1;
    }
    for (const char *p = fp; (p = strstr(p, key)) != NULL; p += kl) {
        if ((p == fp || p[-1] == ' ') && p[kl] == '=') {
            const char *v = p + kl + 1;
            snprintf(val, n, "%.*s", (int)strcspn(v, " "), v);
            return 1;
        }
    }
    return 0;
}

/* "precision: bf16 in the checkpoint, fp32 here; ..." for every field of
 * the fingerprints `old` (checkpoint) and `cur` (this run) that differs. */
static void fp_diff(const char *old, const char *cur, char *buf, size_t n)
{
    static const char *const keys[] = {
        "version", "ops", "C", "stages", "N", "in", "classes", "space", "epochs", "batch", "lr",
        "momentum", "nesterov", "wd", "schedule", "seed", "augment", "images", "budget",
        "backend", "precision", "data"};
    size_t k = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0] && k < n; i++) {
        char a[256], b[256];
        int ha = fp_value(old, keys[i], a, sizeof a), hb = fp_value(cur, keys[i], b, sizeof b);
        if (ha == hb && (!ha || !strcmp(a, b)))
            continue;
        const char *label = strcmp(keys[i], "data") ? keys[i]
                                                     : "training data (CRC-32 of images, labels)";
        int w = snprintf(buf + k, n - k, "%s%s: %s in the checkpoint, %s here", k ? "; " : "",
                         label, ha ? a : "(none)", hb ? b : "(none)");
        k += w > 0 ? (size_t)w : 0;
    }
    if (!buf[0])
        snprintf(buf, n, "fingerprint '%s' in the checkpoint, '%s' here", old, cur);
}

static int save_checkpoint(nas_net *net, const char *path, const char *fp, int epoch, int epochs,
                           int64_t steps, const nas_rng *aug, const double stats[3],
                           const double partial[3], nas_error *err)
{
    nas__npz_writer *z;
    int rc = nas__npz_create(path, &z, err);
    if (rc)
        return rc;
    rc = nas__weights_add(z, net, "", 1, err);
    int np = nas_net_params(net, NULL, 0);
    nas_net_param *p = malloc((size_t)(np > 0 ? np : 1) * sizeof *p);
    float *h = NULL;
    if (!rc && !p)
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory writing %s", path);
    if (!rc) {
        nas_net_params(net, p, np);
        size_t maxc = 1;
        for (int i = 0; i < np; i++)
            if (p[i].value->count > maxc)
                maxc = p[i].value->count;
        h = malloc(maxc * sizeof *h);
        if (!h)
            rc = nas_error_set(err, NAS_ENOMEM, "out of memory writing %s", path);
    }
    for (int i = 0; !rc && i < np; i++) {
        nas_tensor *m = nas__net_param_momentum(net, i);
        if (!m)
            continue;
        int64_t shape[4];
        int nd = nas__torch_shape(p[i].name, m, shape);
        rc = nas_tensor_download(m, h, m->count);
        if (rc) {
            rc = nas_error_set(err, rc, "downloading the momentum of %s", p[i].name);
            break;
        }
        char name[256];
        snprintf(name, sizeof name, "optim/momentum/%s", p[i].name);
        rc = nas__npz_add(z, name, "<f4", nd, shape, h, m->count * sizeof *h, err);
    }
    int64_t prog[4] = {CKPT_VERSION, epoch, epochs, steps};
    int64_t s4 = 4, s2 = 2, s3 = 3, sfp = (int64_t)strlen(fp);
    uint64_t rng[2] = {aug->state, aug->inc};
    if (!rc)
        rc = nas__npz_add(z, "state/progress", "<i8", 1, &s4, prog, sizeof prog, err);
    if (!rc)
        rc = nas__npz_add(z, "state/aug_rng", "<u8", 1, &s2, rng, sizeof rng, err);
    if (!rc)
        rc = nas__npz_add(z, "state/stats", "<f8", 1, &s3, stats, 3 * sizeof *stats, err);
    if (!rc)
        rc = nas__npz_add(z, "state/fingerprint", "|u1", 1, &sfp, fp, (size_t)sfp, err);
    /* issue 17: a checkpoint inside an epoch (a budget of images) carries
     * the epoch's running loss sum, correct count and images so far */
    if (!rc && partial)
        rc = nas__npz_add(z, "state/partial", "<f8", 1, &s3, partial, 3 * sizeof *partial, err);
    double ls[2];
    if (!rc && nas__backend_loss_scale_get(nas__net_backend(net), ls) == NAS_OK)
        rc = nas__npz_add(z, "state/loss_scale", "<f8", 1, &s2, ls, sizeof ls, err);
    free(h);
    free(p);
    if (rc) {
        nas__npz_abort(z);
        return rc;
    }
    return nas__npz_close(z, err);
}

/* The checkpoint's progress {version, epochs done, epochs, steps done}
 * against this run: 0 <= done <= epochs, epochs equal to the recipe's and
 * steps = done x steps per epoch after a whole epoch, or (`partial`: a
 * checkpoint inside an epoch, issue 17) strictly between that and the next
 * epoch's end (which also keeps them within int). Errors: NAS_EFORMAT
 * naming the file and the values. */
static int check_progress(const char *path, const int64_t prog[4], int epochs, int per_epoch,
                          int partial, nas_error *err)
{
    int64_t at = prog[1] * (int64_t)per_epoch;
    if (prog[2] == epochs && prog[1] >= 0 && prog[1] <= epochs &&
        (partial ? prog[1] < epochs && prog[3] > at && prog[3] < at + per_epoch
                 : prog[3] == at))
        return NAS_OK;
    return nas_error_set(err, NAS_EFORMAT,
                         "checkpoint %s: its progress counters are impossible for this run "
                         "(epoch %" PRId64 " of %" PRId64 ", %" PRId64 " steps; expected 0..%d of "
                         "%d epochs, %d steps each): the file is damaged or was edited; delete "
                         "it to start over",
                         path, prog[1], prog[2], prog[3], epochs, epochs, per_epoch);
}

int nas_train_checkpoint_progress(const char *path, int *epochs, int64_t *steps, nas_error *err)
{
    *epochs = 0;
    *steps = 0;
    static const char *const names[] = {"state/progress"}; /* not the weights */
    nas__npz *z;
    int rc = nas__npz_read_members(path, names, 1, &z, err);
    if (rc)
        return rc;
    const nas__npy *pr = nas__npz_find(z, "state/progress");
    int64_t prog[4];
    if (!pr || strcmp(pr->descr, "<i8") || pr->count != 4) {
        nas__npz_free(z);
        return nas_error_set(err, NAS_EFORMAT, "%s is not a nas training checkpoint", path);
    }
    memcpy(prog, pr->data, sizeof prog);
    nas__npz_free(z);
    if (prog[1] < 0 || prog[1] > prog[2] || prog[3] < 0)
        return nas_error_set(err, NAS_EFORMAT, "checkpoint %s: impossible progress counters",
                             path);
    *epochs = (int)prog[1];
    *steps = prog[3];
    return NAS_OK;
}

/* Restore a checkpoint; *epoch gets the epochs it has finished. */
static int load_checkpoint(nas_net *net, const char *path, const char *fp, int epochs,
                           int per_epoch, int *epoch, int64_t *steps, nas_rng *aug,
                           double stats[3], double partial[3], nas_train_note note, void *ctx,
                           nas_error *err)
{
    nas__npz *z;
    int rc = nas__npz_read(path, &z, err);
    if (rc)
        return rc;
    const nas__npy *pr = nas__npz_find(z, "state/progress");
    const nas__npy *rg = nas__npz_find(z, "state/aug_rng");
    const nas__npy *st = nas__npz_find(z, "state/stats");
    const nas__npy *f = nas__npz_find(z, "state/fingerprint");
    if (!pr || !rg || !st || !f || strcmp(pr->descr, "<i8") || pr->count != 4 ||
        strcmp(rg->descr, "<u8") || rg->count != 2 || strcmp(st->descr, "<f8") || st->count != 3 ||
        strcmp(f->descr, "|u1")) {
        nas__npz_free(z);
        return nas_error_set(err, NAS_EFORMAT, "%s is not a nas training checkpoint", path);
    }
    int64_t prog[4];
    memcpy(prog, pr->data, sizeof prog);
    char old[1024];
    size_t n = f->count < sizeof old - 1 ? f->count : sizeof old - 1;
    memcpy(old, f->data, n);
    old[n] = 0;
    /* Before issue 19 the fingerprint ended before backend, precision and
     * data: such a checkpoint resumes when the rest matches, with a note. */
    const char *run = strstr(fp, RUN_PART);
    int legacy = run && !strstr(old, RUN_PART) && strlen(old) == (size_t)(run - fp) &&
                 !strncmp(old, fp, (size_t)(run - fp));
    if (prog[0] != CKPT_VERSION || (!legacy && strcmp(old, fp) != 0)) {
        char why[1024];
        if (prog[0] != CKPT_VERSION)
            snprintf(why, sizeof why, "format version %" PRId64 ", this nas writes %d", prog[0],
                     CKPT_VERSION);
        else
            fp_diff(old, fp, why, sizeof why);
        nas__npz_free(z);
        return nas_error_set(err, NAS_EEXIST,
                             "checkpoint %s belongs to another run (%s): delete it or choose "
                             "another with --checkpoint",
                             path, why);
    }
    if (legacy && note) {
        char msg[1024];
        snprintf(msg, sizeof msg,
                 "checkpoint %s was written by an older nas that did not record the backend, "
                 "precision and training data; resuming it as if they were this run's (%s)",
                 path, run + 3);
        note(ctx, msg);
    }
    const nas__npy *pa = nas__npz_find(z, "state/partial");
    if (pa && (strcmp(pa->descr, "<f8") || pa->count != 3)) {
        nas__npz_free(z);
        return nas_error_set(err, NAS_EFORMAT, "%s: misshapen state/partial", path);
    }
    rc = check_progress(path, prog, epochs, per_epoch, pa != NULL, err);
    if (rc) {
        nas__npz_free(z);
        return rc;
    }
    rc = nas__weights_load_from(net, z, path, "", err);
    int np = nas_net_params(net, NULL, 0);
    nas_net_param *p = malloc((size_t)(np > 0 ? np : 1) * sizeof *p);
    if (!rc && !p)
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory reading %s", path);
    if (!rc)
        nas_net_params(net, p, np);
    for (int i = 0; !rc && i < np; i++) {
        nas_tensor *m = nas__net_param_momentum(net, i);
        if (!m)
            continue;
        char name[256];
        snprintf(name, sizeof name, "optim/momentum/%s", p[i].name);
        const nas__npy *a = nas__npz_find(z, name);
        if (!a || strcmp(a->descr, "<f4") || a->count != m->count)
            rc = nas_error_set(err, NAS_EFORMAT, "%s: missing or misshapen %s", path, name);
        else
            rc = nas_tensor_upload(m, a->data, a->count);
    }
    free(p);
    /* the fp16 loss scaler's {S, good steps} (issue 19); a checkpoint
     * written before it was kept restarts the scaler at S = 65536 */
    double ls[2];
    const nas__npy *lsm = nas__npz_find(z, "state/loss_scale");
    nas_backend *be = nas__net_backend(net);
    if (!rc && nas__backend_loss_scale_get(be, ls) == NAS_OK) {
        if (lsm && !strcmp(lsm->descr, "<f8") && lsm->count == 2) {
            memcpy(ls, lsm->data, sizeof ls);
            if (nas__backend_loss_scale_set(be, ls) != NAS_OK)
                rc = nas_error_set(err, NAS_EFORMAT,
                                   "%s: state/loss_scale {%g, %g} is not a loss scaler state "
                                   "(a power of two and a good-step count)",
                                   path, ls[0], ls[1]);
        } else if (lsm) {
            rc = nas_error_set(err, NAS_EFORMAT, "%s: misshapen state/loss_scale", path);
        } else if (note) {
            char msg[1024];
            snprintf(msg, sizeof msg,
                     "checkpoint %s holds no loss scaler state (written by an older nas): the "
                     "fp16 loss scale restarts at %g, so this run is not step-identical to an "
                     "uninterrupted one",
                     path, ls[0]);
            note(ctx, msg);
        }
    }
    if (!rc) {
        uint64_t r[2];
        memcpy(r, rg->data, sizeof r);
        aug->state = r[0];
        aug->inc = r[1];
        memcpy(stats, st->data, 3 * sizeof *stats);
        if (pa)
            memcpy(partial, pa->data, 3 * sizeof *partial);
        else
            partial[0] = partial[1] = partial[2] = 0;
        *epoch = (int)prog[1];
        *steps = prog[3];
    }
    nas__npz_free(z);
    return rc;
}

/* ---- the budget: whole epochs, or images (issue 17) -------------------------------- */

/* Where a run stops and what its schedule spans, in steps: `epochs` for
 * the loader and the checkpoint's counters, `total` the steps the cosine
 * schedule spans, `last` the step count after which this call returns. */
typedef struct span {
    int epochs;
    int64_t total, last;
} span;

/* Steps that train on the first `images` images of the run: whole epochs
 * of per_epoch steps (the last batch short), then the batches of the
 * next epoch until `images` are seen (the last one may go past it). */
static int64_t steps_of(int64_t images, int n, int batch, int per_epoch)
{
    return images / n * per_epoch + (images % n + batch - 1) / batch;
}

static int span_of(const nas_full_train_opts *o, int n, int per_epoch, span *sp, nas_error *err)
{
    const nas_recipe *rec = o->recipe;
    if (o->max_images > 0) {
        if (o->until_images < 0 || o->until_images > o->max_images)
            return nas_error_set(err, NAS_EINVAL,
                                 "a budget of %" PRId64 " images is outside 0..%" PRId64,
                                 o->until_images, o->max_images);
        int64_t ep = (o->max_images + n - 1) / n;
        if (ep > 1000000)
            return nas_error_set(err, NAS_EINVAL,
                                 "a budget of %" PRId64 " images is %" PRId64 " epochs of %d "
                                 "images, expected at most 1000000",
                                 o->max_images, ep, n);
        sp->epochs = (int)ep;
        sp->total = steps_of(o->max_images, n, rec->batch_size, per_epoch);
        sp->last = o->until_images > 0 ? steps_of(o->until_images, n, rec->batch_size, per_epoch)
                                       : sp->total;
    } else {
        int last = o->until > 0 && o->until < rec->epochs ? o->until : rec->epochs;
        sp->epochs = rec->epochs;
        sp->total = (int64_t)per_epoch * rec->epochs;
        sp->last = (int64_t)per_epoch * last;
    }
    if (sp->total > INT32_MAX)
        return nas_error_set(err, NAS_EINVAL, "%" PRId64 " training steps, expected at most %d",
                             sp->total, (int)INT32_MAX);
    return NAS_OK;
}

/* Load o->checkpoint (load_checkpoint) for a run spanning sp; one past
 * the step this call stops at belongs to a later rung: NAS_EEXIST. Calls
 * o->on_resume. */
static int resume(nas_net *net, const nas_full_train_opts *o, const char *fp, int epochs,
                  int per_epoch, const span *sp, int *start, int64_t *t64, nas_rng *aug,
                  double saved[3], double part[3], nas_error *err)
{
    int rc = load_checkpoint(net, o->checkpoint, fp, epochs, per_epoch, start, t64, aug, saved,
                             part, o->note, o->ctx, err);
    if (rc == NAS_OK && *t64 > sp->last)
        rc = nas_error_set(err, NAS_EEXIST,
                           "checkpoint %s holds step %" PRId64 " (epoch %d), beyond step %" PRId64
                           " (epoch %" PRId64 ") asked for",
                           o->checkpoint, *t64, *start, sp->last,
                           (sp->last + per_epoch - 1) / per_epoch);
    if (rc == NAS_OK && o->on_resume)
        o->on_resume(o->ctx, *start);
    return rc;
}

/* ---- the loop ---------------------------------------------------------------------- */

int nas_train_resumable(nas_net *net, const nas_dataset *data, const nas_full_train_opts *o,
                        nas_train_stats *stats, int *resumed_from, nas_error *err)
{
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (resumed_from)
        *resumed_from = 0;
    if (!net || !data || !o || !o->recipe)
        return nas_error_set(err, NAS_EINVAL, "nas_train_resumable: NULL argument");
    if (o->recipe->epochs < 0 || o->recipe->batch_size <= 0 || data->n <= 0 ||
        !(o->recipe->lr >= 0))
        return nas_error_set(err, NAS_EINVAL, "bad recipe (epochs %d, batch %d, lr %g) or no data",
                             o->recipe->epochs, o->recipe->batch_size, o->recipe->lr);
    int per_epoch = (data->n + o->recipe->batch_size - 1) / o->recipe->batch_size;
    span sp = {0, 0, 0};
    int rc = span_of(o, data->n, per_epoch, &sp, err);
    if (rc)
        return rc;
    nas_recipe r = *o->recipe; /* with a budget of images: as many epochs as it touches */
    r.epochs = sp.epochs;
    const nas_recipe *rec = &r;
    nas_backend *be = nas__net_backend(net);
    char fp[1024];
    fingerprint(net, data, rec, &o->augment, o->max_images, fp, sizeof fp);
    nas_rng aug;
    nas_rng_seed(&aug, rec->seed, AUG_STREAM);
    int start = 0;
    int64_t t64 = 0;
    double saved[3] = {0, 0, 0}; /* loss, accuracy, seconds */
    double part[3] = {0, 0, 0};  /* inside an epoch: loss sum, correct, images */
    if (o->checkpoint && access(o->checkpoint, F_OK) == 0) {
        rc = resume(net, o, fp, rec->epochs, per_epoch, &sp, &start, &t64, &aug, saved, part, err);
        if (rc)
            return rc;
        if (resumed_from)
            *resumed_from = start;
    }
    int total = (int)sp.total, t = (int)t64;
    nas__batch_io io;
    nas__loader *ld = NULL;
    int last_ep = (int)((sp.last + per_epoch - 1) / per_epoch);
    rc = nas__loader_create(data, rec->batch_size, rec->seed, start, t % per_epoch, last_ep,
                            &o->augment, rec->loader_threads, &ld, err);
    if (rc)
        return rc;
    rc = nas__batch_io_init(&io, be, data, rec->batch_size);
    if (rc) {
        rc = nas_error_set(err, rc, "allocating a batch of %d images: %s", rec->batch_size,
                           nas_strerror(rc));
        goto out;
    }
    double seconds = saved[2], last_loss = saved[0], last_acc = saved[1], wait_seconds = 0;
    long images = 0;
    int done_epochs = start;
    double loss_sum = part[0], ep0 = seconds;
    long correct_sum = (long)part[1], seen = (long)part[2];
    while (t < sp.last && !rc) {
        const int ep = t / per_epoch, s = t % per_epoch;
        int b = 0;
        double t0 = now_s();
        const float *hx, *hy;
        rc = nas__loader_next(ld, &hx, &hy, &b, &wait_seconds);
        if (rc) {
            nas_error_set(err, rc, "batch %d of epoch %d: the loader has no more", s + 1, ep + 1);
            break;
        }
        nas_tensor xv, yv;
        float loss = 0;
        int correct = 0;
        rc = nas__batch_io_upload(&io, hx, hy, b, &xv, &yv);
        if (rc) {
            nas_error_set(err, rc, "uploading batch %d of epoch %d: %s %s", s + 1, ep + 1,
                          nas_strerror(rc), nas_backend_last_error(be));
            break;
        }
        int skipped = 0;
        rc = nas__train_step(net, &xv, &yv, rec, t, total, ep, s, per_epoch, &loss, &correct,
                             &skipped, err);
        if (rc)
            break;
        seconds += now_s() - t0;
        images += b;
        if (!(skipped && !isfinite(loss))) { /* an overflowed fp16 step has no loss */
            loss_sum += (double)loss * b;
            correct_sum += correct;
            seen += b;
        }
        if (o->progress && o->progress(o->ctx, t + 1, total, loss)) {
            rc = nas_error_set(err, NAS_EINTR,
                               "interrupted in epoch %d; the checkpoint holds %s %d", ep + 1,
                               t64 % per_epoch ? "a budget inside epoch" : "epoch",
                               t64 % per_epoch ? start + 1 : ep);
            break;
        }
        t++;
        if (t % per_epoch != 0) { /* inside an epoch: only a budget of images ends here */
            if (t == sp.last) {
                last_loss = seen ? loss_sum / (double)seen : 0;
                last_acc = seen ? (double)correct_sum / (double)seen : 0;
            }
            if (t == sp.last && o->checkpoint) {
                double st3[3] = {last_loss, last_acc, seconds};
                double p3[3] = {loss_sum, (double)correct_sum, (double)seen};
                rc = save_checkpoint(net, o->checkpoint, fp, ep, rec->epochs, t, &aug, st3, p3,
                                     err);
            }
            continue;
        }
        last_loss = seen ? loss_sum / (double)seen : 0;
        last_acc = seen ? (double)correct_sum / (double)seen : 0;
        done_epochs = ep + 1;
        if (o->checkpoint) {
            double st3[3] = {last_loss, last_acc, seconds};
            rc = save_checkpoint(net, o->checkpoint, fp, ep + 1, rec->epochs, t, &aug, st3, NULL,
                                 err);
            if (rc)
                break;
        }
        if (o->on_epoch) {
            nas_epoch_stats es = {ep + 1, rec->epochs, last_loss, last_acc, seconds - ep0, 0};
            es.images_per_s = es.seconds > 0 ? (double)seen / es.seconds : 0;
            if (o->on_epoch(o->ctx, &es)) {
                rc = nas_error_set(err, NAS_EINTR, "interrupted after epoch %d", ep + 1);
                break;
            }
        }
        loss_sum = 0;
        correct_sum = seen = 0;
        ep0 = seconds;
        if (o->stop_after > 0 && ep + 1 == o->stop_after && ep + 1 < rec->epochs) {
            rc = nas_error_set(err, NAS_EINTR, "stopped after epoch %d of %d as asked%s%s", ep + 1,
                               rec->epochs, o->checkpoint ? "; checkpoint " : "",
                               o->checkpoint ? o->checkpoint : "");
            break;
        }
    }
    if (stats) {
        stats->epochs = done_epochs;
        stats->steps = t;
        stats->train_loss = last_loss;
        stats->train_accuracy = last_acc;
        stats->seconds = seconds;
        stats->images_per_s = seconds - saved[2] > 0 ? (double)images / (seconds - saved[2]) : 0;
        stats->wait_seconds = wait_seconds;
    }
out:
    nas__loader_destroy(ld);
    nas__batch_io_free(&io);
    return rc;
}
