/*
 * evaluator/supernet_eval.c - evaluator.kind = "supernet" (issue 32,
 * docs/one-shot.md): phase 1 trains one weight-sharing supernet
 * (nas/supernet.h: single-path uniform sampling, Guo et al., ECCV 2020) to
 * a checkpoint beside the database; phase 2 evaluates a genotype by the
 * weights it inherits from that checkpoint, BN recalibrated on a fixed,
 * seeded sample of the training split (SPOS, OFA), on the first
 * supernet.valid validation images.
 *
 * The checkpoint's name is the CRC-32 of its fingerprint (the config's
 * seed, data and space lines, the data as loaded, the supernet recipe,
 * the backend): every process of a search - the forked child that trains
 * it, each worker, each MPI rank - computes the same name from the config
 * alone, two experiments that would train the same supernet share it, and
 * a file of other settings is never read as this one (its stored
 * fingerprint is compared in full on load). Beside it, PATH.tsv holds the
 * training curve, a line per finished epoch: appended (and fsync'd) before
 * the epoch's checkpoint is renamed into place (nas_supernet_train calls
 * on_epoch first), so a kill between the two leaves a row ahead of the
 * checkpoint, never a checkpoint without its row; the rows beyond the
 * checkpoint's epochs are dropped when training resumes (trim_curve) and
 * never read (nas__sn_eval_curve), and that epoch is trained and recorded
 * again.
 *
 * Beside them, PATH.weights (nas_supernet_write_weights) holds the
 * finished supernet's values as one flat file that every process
 * evaluating subnets maps read-only and shared (nas_supernet_map): one
 * physical copy in the page cache for all workers instead of one heap copy
 * each (docs/one-shot.md "The mapped weights file"). Phase 1 writes it
 * when training ends, and every later start of phase 1 checks it (its
 * fingerprint, its steps against the checkpoint's, its CRC-32s) and
 * rewrites it from the checkpoint when it is missing, stale or damaged
 * (a database from before the file existed gets it so). A process that
 * finds it invalid says so on stderr and reads the checkpoint instead.
 */
#include <errno.h>
#include <math.h>
#include <signal.h> /* raise: the supernet_kill@E test hook */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* access, fsync */
#include <zlib.h>   /* crc32 */
#include "evaluator/evaluator_impl.h"
#include "nas/array.h"
#include "nas/data.h"
#include "nas/evaluator.h"
#include "nas/supernet.h"
#include "trainer/supernet_map_impl.h" /* nas__supernet_write_weights: its kill test hook */

struct nas__sn_eval {
    const nas_config *cfg;  /* borrowed (the evaluator's copy) */
    const nas_space *space; /* borrowed */
    const nas_dataset *train; /* borrowed */
    nas_dataset *calib;     /* recal_batches x batch images of train, seeded */
    nas_recipe rec;         /* the supernet's training recipe */
    char *fingerprint;      /* malloc'd */
    char dir[NAS_PATH_MAX]; /* where the checkpoint lives ("" = not set) */
    nas_supernet *sn;       /* loaded by the first evaluation in this process */
};

char *nas_supernet_fingerprint(const nas_config *cfg, const nas_data_info *info, int n_train,
                               const nas_recipe *rec)
{
    char *canon = nas_config_canonical(cfg), data[256];
    size_t cap = (canon ? strlen(canon) : 0) + 1024, n = 0;
    char *fp = canon ? malloc(cap) : NULL;
    if (!fp) {
        free(canon);
        return NULL;
    }
    n += (size_t)snprintf(fp, cap, "supernet v1\n");
    for (char *save = NULL, *line = strtok_r(canon, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char key[64]; /* data.*: the defining keys only (not where the files are) */
        snprintf(key, sizeof key, "%.*s", (int)strcspn(line, " ="), line);
        if (!strncmp(line, "seed ", 5) || !strncmp(line, "space.", 6) ||
            (!strncmp(line, "data.", 5) && nas_config_key_defining(key)))
            n += (size_t)snprintf(fp + n, cap - n, "%s\n", line);
    }
    nas_data_info_format(info, data, sizeof data);
    snprintf(fp + n, cap - n,
             "data as loaded: %s, %d training images\nsupernet recipe: %d epochs, batch %d, lr %g, "
             "momentum %g, nesterov %d, weight decay %g, schedule %d\nbackend %s, %s\n",
             data, n_train, rec->epochs, rec->batch_size, rec->lr, rec->momentum, rec->nesterov,
             rec->weight_decay, (int)rec->schedule,
             cfg->proxy.backend[0] ? cfg->proxy.backend : "cpu",
             cfg->proxy.precision[0] ? cfg->proxy.precision : "fp32");
    free(canon);
    return fp;
}

void nas_supernet_recipe(const nas_config *cfg, nas_recipe *rec)
{
    memset(rec, 0, sizeof *rec);
    rec->epochs = cfg->supernet.epochs > 0 ? cfg->supernet.epochs : 20;
    rec->batch_size = cfg->supernet.batch_size > 0 ? cfg->supernet.batch_size
                      : cfg->proxy.batch_size > 0 ? cfg->proxy.batch_size : 128;
    rec->lr = cfg->supernet.lr > 0 ? cfg->supernet.lr : cfg->proxy.lr;
    rec->momentum = cfg->proxy.momentum;
    rec->nesterov = cfg->proxy.nesterov;
    rec->weight_decay = cfg->proxy.weight_decay;
    rec->schedule = cfg->proxy.schedule;
    rec->seed = cfg->seed;
    rec->loader_threads = cfg->data.loader_threads;
    nas_augment_parse(cfg->data.augment, &rec->augment); /* checked by the config's pass 2 */
}

void nas__sn_eval_destroy(nas__sn_eval *s)
{
    if (!s)
        return;
    nas_supernet_destroy(s->sn);
    nas_dataset_destroy(s->calib);
    free(s->fingerprint);
    free(s);
}

int nas__sn_eval_create(const nas_config *cfg, const nas_space *space, const nas_dataset *train,
                        const nas_data_info *info, nas__sn_eval **out, nas_error *err)
{
    *out = NULL;
    nas__sn_eval *s = calloc(1, sizeof *s);
    if (!s)
        return nas_error_set(err, NAS_ENOMEM, "out of memory creating the supernet evaluator");
    s->cfg = cfg;
    s->space = space;
    s->train = train;
    nas_supernet_recipe(cfg, &s->rec);
    s->fingerprint = nas_supernet_fingerprint(cfg, info, train->n, &s->rec);
    int rc = s->fingerprint ? NAS_OK : nas_error_set(err, NAS_ENOMEM, "out of memory");
    long long nc = (long long)cfg->supernet.recal_batches * s->rec.batch_size;
    if (!rc && nc > 0) /* once, before workers fork: they share it */
        rc = nas_dataset_sample(train, nc < train->n ? (int)nc : train->n, cfg->seed, &s->calib,
                                err);
    if (rc) {
        nas__sn_eval_destroy(s);
        return rc;
    }
    *out = s;
    return NAS_OK;
}

int nas__sn_eval_set_dir(nas__sn_eval *s, const char *dir)
{
    if (!s || !dir || strlen(dir) >= sizeof s->dir)
        return NAS_EINVAL;
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    return NAS_OK;
}

int nas__sn_eval_path(const nas__sn_eval *s, int curve, char *buf, size_t n)
{
    if (!s || !s->dir[0]) {
        if (n)
            buf[0] = '\0';
        return NAS_ENOTFOUND;
    }
    unsigned long crc = crc32(0L, (const Bytef *)s->fingerprint, (uInt)strlen(s->fingerprint));
    int w = snprintf(buf, n, "%s/supernet-%08lx.%s", s->dir, crc & 0xffffffffUL,
                     curve == 1 ? "tsv" : curve == 2 ? "weights" : "npz");
    return w < 0 || (size_t)w >= n ? NAS_EINVAL : NAS_OK;
}

/* Steps of the whole supernet recipe: epochs x ceil(n / batch). */
static int64_t total_steps(const nas__sn_eval *s)
{
    int64_t per = (s->train->n + s->rec.batch_size - 1) / s->rec.batch_size;
    return per * s->rec.epochs;
}

typedef struct curve_ctx {
    const char *path; /* the curve file, a line appended per epoch */
    FILE *log;
    int kill_after;   /* NAS_FAULT supernet_kill@E: E (0: none) */
    nas_error err;    /* why the row could not be written (code 0: it was) */
} curve_ctx;

/* Append row e to the curve file and flush it to disk. */
static int append_row(const char *path, const nas_epoch_stats *e, nas_error *err)
{
    FILE *f = fopen(path, "a");
    if (!f)
        return nas_error_set(err, NAS_EIO, "supernet curve %s: cannot open it to append epoch "
                             "%d: %s", path, e->epoch, strerror(errno));
    int bad = fprintf(f, "%d\t%.6f\t%.6f\t%.3f\n", e->epoch, e->loss, e->accuracy, e->seconds) < 0;
    bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
    int e2 = errno;
    bad |= fclose(f) != 0;
    if (bad)
        return nas_error_set(err, NAS_EIO, "supernet curve %s: cannot write epoch %d: %s", path,
                             e->epoch, strerror(e2 ? e2 : errno));
    return NAS_OK;
}

/* nas_supernet_train's per-epoch callback, called before the epoch's
 * checkpoint is written: the curve row first (a failure stops the training
 * with cc->err), then the log line. */
static int on_epoch(void *ctx, const nas_epoch_stats *e)
{
    curve_ctx *cc = ctx;
    if (append_row(cc->path, e, &cc->err) != NAS_OK)
        return -1; /* no checkpoint for an epoch without its row */
    if (cc->kill_after == e->epoch) /* test hook: die in the window row -> checkpoint */
        raise(SIGKILL);
    if (cc->log)
        fprintf(cc->log, "nas: supernet epoch %d/%d: loss %.4f, train accuracy %.4f, %.1f s "
                "(%.0f images/s)\n", e->epoch, e->epochs, e->loss, e->accuracy, e->seconds,
                e->images_per_s);
    return 0;
}

/* The test hook NAS_FAULT=...supernet_kill@E... (search/pool_msg.h): E, or 0. */
static int kill_hook_epoch(void)
{
    const char *fault = getenv("NAS_FAULT"), *p = fault ? strstr(fault, "supernet_kill@") : NULL;
    return p ? atoi(p + 14) : 0;
}

/* The curve's rows of epochs 1..epochs, each once (the first), in file
 * order: *rows malloc'd. A missing file has none. */
static int read_curve(const char *path, const nas_recipe *rec, int n_train, int epochs,
                      nas_epoch_stats **rows, int *n, nas_error *err)
{
    *rows = NULL;
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? NAS_OK
                               : nas_error_set(err, NAS_EIO, "%s: %s", path, strerror(errno));
    int cap = 0, rc = NAS_OK;
    nas_epoch_stats e;
    memset(&e, 0, sizeof e);
    while (rc == NAS_OK &&
           fscanf(f, "%d %lf %lf %lf", &e.epoch, &e.loss, &e.accuracy, &e.seconds) == 4) {
        int seen = e.epoch < 1 || e.epoch > epochs;
        for (int i = 0; i < *n && !seen; i++)
            seen = (*rows)[i].epoch == e.epoch;
        if (seen)
            continue;
        rc = nas_array_grow(rows, *n, &cap, 32, sizeof **rows, err);
        e.epochs = rec->epochs;
        e.images_per_s = e.seconds > 0 ? n_train / e.seconds : 0;
        if (rc == NAS_OK)
            (*rows)[(*n)++] = e;
    }
    fclose(f);
    if (rc) {
        free(*rows);
        *rows = NULL;
        *n = 0;
    }
    return rc;
}

/* Before training resumes from a checkpoint of `epochs` epochs: rewrite the
 * curve with only the rows read_curve keeps (a row of an epoch whose
 * checkpoint a kill prevented goes: the epoch is trained and appended
 * again), through PATH.tmp renamed into place. No file: nothing to do. */
static int trim_curve(const char *path, const nas_recipe *rec, int n_train, int epochs,
                      nas_error *err)
{
    nas_epoch_stats *rows = NULL;
    int n = 0, rc = read_curve(path, rec, n_train, epochs, &rows, &n, err);
    if (rc || access(path, F_OK) != 0) {
        free(rows);
        return rc;
    }
    char tmp[NAS_PATH_MAX + 48];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    int bad = !f;
    for (int i = 0; f && i < n; i++)
        bad |= fprintf(f, "%d\t%.6f\t%.6f\t%.3f\n", rows[i].epoch, rows[i].loss,
                       rows[i].accuracy, rows[i].seconds) < 0;
    if (f)
        bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
    if (f)
        bad |= fclose(f) != 0;
    free(rows);
    if (bad || rename(tmp, path) != 0) {
        rc = nas_error_set(err, NAS_EIO, "supernet curve %s: cannot rewrite it for the resumed "
                           "training (via %s): %s", path, tmp, strerror(errno));
        remove(tmp);
    }
    return rc;
}

/* The supernet of this search, writable (never the mapped one), read from
 * its checkpoint when there is one (a file of other settings: NAS_EEXIST
 * naming both fingerprints' first differing line, from nas_supernet_load). */
static int open_supernet(nas__sn_eval *s, nas_backend *be, const char *path, nas_error *err)
{
    if (s->sn && nas_supernet_is_mapped(s->sn)) {
        nas_supernet_destroy(s->sn);
        s->sn = NULL;
    }
    if (s->sn)
        return NAS_OK;
    const nas_dataset *t = s->train;
    int rc = nas_supernet_create(be, s->space, t->c, t->h, t->w, t->classes, s->cfg->seed, &s->sn,
                                 err);
    if (!rc && access(path, F_OK) == 0)
        rc = nas_supernet_load(s->sn, path, s->fingerprint, err);
    if (rc) {
        nas_supernet_destroy(s->sn);
        s->sn = NULL;
    }
    return rc;
}

/* The test hook NAS_FAULT=...supernet_weights_kill... (search/pool_msg.h):
 * SIGKILL once the weights file's temporary copy is complete, before it is
 * renamed into place. */
static void weights_kill_hook(void *ctx)
{
    (void)ctx;
    const char *fault = getenv("NAS_FAULT");
    if (fault && strstr(fault, "supernet_weights_kill"))
        raise(SIGKILL);
}

/* Phase 1 has finished (the checkpoint `path` holds `steps`, all of them):
 * make sure the weights file `wpath` is there, valid and current, else
 * write it from the checkpoint (read into s->sn unless already there).
 * Failing to write it is a warning (workers then read the checkpoint). */
static int ensure_weights(nas__sn_eval *s, nas_backend *be, const char *path, const char *wpath,
                          int64_t steps, FILE *log, nas_error *err)
{
    nas_error why;
    int bad = nas_supernet_weights_check(wpath, s->fingerprint, steps, &why);
    if (!bad)
        return NAS_OK;
    if (bad != NAS_ENOTFOUND && log)
        fprintf(log, "nas: supernet: %s; rewriting it from the checkpoint\n", why.msg);
    int rc = open_supernet(s, be, path, err);
    if (rc)
        return rc;
    if (nas_supernet_steps(s->sn) != steps)
        return nas_error_set(err, NAS_EIO, "supernet checkpoint %s changed while read (%lld "
                             "steps, then %lld)", path, (long long)steps,
                             (long long)nas_supernet_steps(s->sn));
    rc = nas__supernet_write_weights(s->sn, wpath, s->fingerprint, weights_kill_hook, NULL, &why);
    if (log && rc)
        fprintf(log, "nas: warning: %s; the workers read the checkpoint instead, each into its "
                "own memory\n", why.msg);
    else if (log)
        fprintf(log, "nas: supernet: wrote %s (%.1f MB), which the workers map read-only\n",
                wpath, 4e-6 * (double)nas_supernet_floats(s->sn));
    return NAS_OK;
}

int nas__sn_eval_train(nas__sn_eval *s, nas_backend *be, FILE *log, nas_error *err)
{
    char path[NAS_PATH_MAX + 32], curve[NAS_PATH_MAX + 32], wpath[NAS_PATH_MAX + 32];
    if (nas__sn_eval_path(s, 0, path, sizeof path) ||
        nas__sn_eval_path(s, 1, curve, sizeof curve) ||
        nas__sn_eval_path(s, 2, wpath, sizeof wpath))
        return nas_error_set(err, NAS_EINVAL, "supernet: no directory for its checkpoint");
    int64_t done = 0, total = total_steps(s);
    int rc = access(path, F_OK) == 0 /* its steps only: the slots are read when needed */
                 ? nas_supernet_checkpoint_steps(path, s->fingerprint, &done, err)
                 : NAS_OK;
    if (!rc && done >= total) {
        if (log)
            fprintf(log, "nas: supernet: trained (%d epochs, %lld steps) in %s\n", s->rec.epochs,
                    (long long)done, path);
        return ensure_weights(s, be, path, wpath, done, log, err);
    }
    if (!rc)
        rc = open_supernet(s, be, path, err);
    if (rc)
        return rc;
    done = nas_supernet_steps(s->sn);
    /* rows of epochs the checkpoint does not hold (all of them with no
     * checkpoint): written by a run killed before their checkpoint */
    rc = trim_curve(curve, &s->rec, s->train->n, (int)(done / (total / s->rec.epochs)), err);
    if (rc)
        return rc;
    if (log)
        fprintf(log, "nas: supernet (phase 1): %d slots, %.2f M weights; %s %d epochs of %d "
                "images, batch %d, into %s\n", nas_supernet_slots(s->sn),
                (double)nas_supernet_floats(s->sn) / 1e6, done ? "continuing" : "training",
                s->rec.epochs, s->train->n, s->rec.batch_size, path);
    curve_ctx cc = {curve, log, kill_hook_epoch(), {0}};
    nas_supernet_train_opts o = {&s->rec, 0, path, s->fingerprint, on_epoch, &cc};
    nas_train_stats st;
    rc = nas_supernet_train(s->sn, s->train, &o, &st, err);
    if (rc && cc.err.code) /* stopped because the curve could not be written: say which file and why */
        rc = nas_error_set(err, cc.err.code, "%s (supernet training stopped, no checkpoint of "
                           "that epoch written)", cc.err.msg);
    if (!rc)
        rc = ensure_weights(s, be, path, wpath, nas_supernet_steps(s->sn), log, err);
    return rc;
}

/* The finished supernet of checkpoint `path` (its steps checked first):
 * the weights file `wpath` mapped read-only, or, when that is missing or
 * invalid (said on stderr unless quiet_missing and missing), the
 * checkpoint read into this process's memory. */
static int open_finished(nas__sn_eval *s, nas_backend *be, const char *path, const char *wpath,
                         int quiet_missing, nas_error *err)
{
    int64_t steps = 0;
    int rc = nas_supernet_checkpoint_steps(path, s->fingerprint, &steps, err);
    if (rc)
        return rc;
    if (steps < total_steps(s))
        return nas_error_set(err, NAS_EINVAL, "supernet %s holds %lld of its %lld training steps: "
                             "phase 1 has not finished", path, (long long)steps,
                             (long long)total_steps(s));
    const nas_dataset *t = s->train;
    nas_error why;
    rc = nas_supernet_map(be, s->space, t->c, t->h, t->w, t->classes, s->cfg->seed, wpath,
                          s->fingerprint, steps, &s->sn, &why);
    if (!rc)
        return NAS_OK;
    if (rc != NAS_ENOTFOUND || !quiet_missing)
        fprintf(stderr, "nas: warning: supernet weights: %s; this process reads the checkpoint "
                "%s instead (its own copy; the next `nas run` rewrites the file)\n", why.msg,
                path);
    return open_supernet(s, be, path, err);
}

/* The trained supernet, mapped (or read from its checkpoint) by the first
 * call in this process; *v the validation images a subnet is measured on
 * (the first supernet.valid of `valid`: a view). A missing checkpoint is
 * `missing` (NAS_EWORKER in a worker, NAS_ENOTFOUND for an export, which
 * also reads the checkpoint without a word when the weights file is
 * missing: a database from before it existed). */
static int ready(nas__sn_eval *s, nas_backend *be, const nas_dataset *valid, int missing,
                 nas_dataset *v, nas_error *err)
{
    char path[NAS_PATH_MAX + 32], wpath[NAS_PATH_MAX + 32];
    if (nas__sn_eval_path(s, 0, path, sizeof path) || nas__sn_eval_path(s, 2, wpath, sizeof wpath))
        return nas_error_set(err, NAS_EINVAL, "supernet: no directory for its checkpoint");
    if (!s->sn && access(path, R_OK) != 0)
        return missing == NAS_EWORKER
                   ? nas_error_set(err, NAS_EWORKER, "supernet checkpoint %s not found on this "
                                   "worker: the database's folder must be on a file system every "
                                   "worker sees (docs/cluster.md)", path)
                   : nas_error_set(err, missing, "supernet checkpoint %s not found (moved or "
                                   "deleted?): %s", path, strerror(errno));
    int rc = s->sn ? NAS_OK : open_finished(s, be, path, wpath, missing == NAS_ENOTFOUND, err);
    if (rc)
        return rc;
    if (nas_supernet_steps(s->sn) < total_steps(s))
        return nas_error_set(err, NAS_EINVAL, "supernet %s holds %lld of its %lld training steps: "
                             "phase 1 has not finished", path,
                             (long long)nas_supernet_steps(s->sn), (long long)total_steps(s));
    *v = *valid;
    v->owns = 0;
    if (s->cfg->supernet.valid > 0 && s->cfg->supernet.valid < v->n)
        v->n = s->cfg->supernet.valid;
    return NAS_OK;
}

int nas__sn_eval_run(nas__sn_eval *s, nas_backend *be, const nas_genotype *g,
                     const nas_dataset *valid, double *acc, double *loss, nas_error *err)
{
    nas_dataset v;
    int rc = ready(s, be, valid, NAS_EWORKER, &v, err);
    if (rc)
        return rc;
    int nb = s->calib ? s->cfg->supernet.recal_batches : 0;
    return nas_supernet_evaluate(s->sn, g, s->calib, nb, s->rec.batch_size, &v, acc, loss, err);
}

int nas__sn_eval_subnet_save(nas__sn_eval *s, nas_backend *be, const nas_genotype *g,
                             const nas_dataset *valid, const char *path, double *acc,
                             nas_error *err)
{
    nas_dataset v;
    int rc = ready(s, be, valid, NAS_ENOTFOUND, &v, err);
    if (rc)
        return rc;
    int nb = s->calib ? s->cfg->supernet.recal_batches : 0;
    nas_net *net = NULL; /* what nas_supernet_evaluate measures (nas__sn_eval_run) */
    rc = nas_supernet_subnet_recalibrated(s->sn, g, s->calib, nb, s->rec.batch_size, &net, err);
    if (!rc)
        rc = nas_net_evaluate(net, &v, s->rec.batch_size, acc, NULL, err);
    if (!rc)
        rc = nas_weights_save(net, path, err);
    nas_net_destroy(net);
    return rc;
}

int nas__sn_eval_recal_batches(const nas__sn_eval *s)
{
    /* the sample holds min(recal_batches x batch, training images), all of
     * which nas_net_bn_recalibrate runs (nas__sn_eval_create) */
    int b = s ? s->rec.batch_size : 0;
    return s && s->calib && b > 0 ? (s->calib->n + b - 1) / b : 0;
}

int nas__sn_eval_curve(const nas__sn_eval *s, nas_epoch_stats **rows, int *n, nas_error *err)
{
    *rows = NULL;
    *n = 0;
    char path[NAS_PATH_MAX + 32], curve[NAS_PATH_MAX + 32];
    if (nas__sn_eval_path(s, 0, path, sizeof path) || nas__sn_eval_path(s, 1, curve, sizeof curve))
        return NAS_OK;
    if (access(path, F_OK) != 0) /* no checkpoint: no finished epoch */
        return NAS_OK;
    int64_t steps = 0; /* the epochs the checkpoint holds: rows beyond them are not finished */
    int rc = nas_supernet_checkpoint_steps(path, s->fingerprint, &steps, err);
    if (rc)
        return rc;
    int64_t per = total_steps(s) / s->rec.epochs;
    return read_curve(curve, &s->rec, s->train->n, (int)(steps / per), rows, n, err);
}
