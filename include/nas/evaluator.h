/*
 * nas/evaluator.h - what a trial measures: validation accuracy (by proxy
 * training or by table look-up), MACs and parameters (analytic), batch-1
 * latency (measured on the worker's device).
 *
 * MACs count multiply-accumulates of convolutions and linear layers only
 * (BN, ReLU, pooling and sums are not counted), as PyTorch counters do;
 * FLOPs = 2 x MACs where a figure in FLOPs is wanted.
 */
#ifndef NAS_EVALUATOR_H
#define NAS_EVALUATOR_H

#include <stdint.h>
#include <stdio.h>
#include "nas/space.h"
#include "nas/trainer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- analytic counts ----------------------------------------------------- */

typedef struct nas_layer_info {
    char module[96]; /* PyTorch module path, e.g. "cells.0.layers.0.op.1" */
    char op[24];     /* "conv3x3 s1", "batchnorm", "linear", ... */
    int in_c, in_h, in_w, out_c, out_h, out_w;
    int64_t params;
    int64_t macs; /* per image */
} nas_layer_info;

/*
 * MACs per image and trainable parameters of the network `desc` describes,
 * counted layer by layer as ../shared/reference/nb201-tinynetwork-fmnist.md.
 * If `layer` is non-NULL it is called once per parameterised layer in
 * PyTorch module order. Errors: NAS_EINVAL.
 */
int nas_count_net(const nas_net_desc *desc, int64_t *macs, int64_t *params,
                  void (*layer)(void *ctx, const nas_layer_info *info), void *ctx);

/* Median time in ms of `runs` eval-mode forward passes of a batch of
 * `batch` zero images, after `warmup` untimed passes, on the net's device:
 * CUDA events on the backend's stream for cuda, CLOCK_MONOTONIC around the
 * pass and nas_backend_sync otherwise (evaluator/latency.c). */
int nas_latency_ms(nas_net *net, int batch, int warmup, int runs, double *median_ms,
                   nas_error *err);

/*
 * The device backend `be` runs on (issue 7: the store records it per
 * trial): name[n] gets the GPU's name (cudaDeviceProp.name) or, for the
 * host backends (cpu, ref), the CPU model name from /proc/cpuinfo
 * ("unknown CPU" when it says none); cc[m] (may be NULL) the GPU's compute
 * capability "M.m", "" for the CPU. Errors: NAS_EINVAL (NULL be or name).
 */
int nas_device_describe(const nas_backend *be, char *name, size_t n, char *cc, size_t m);

/* ---- trial evaluation ---------------------------------------------------- */

/* Result of one trial. On failure status < 0 and `error` says why. */
typedef struct nas_trial_result {
    int status;             /* NAS_OK or the nas_status of the failure */
    char error[512];
    double val_accuracy;    /* in [0,1] for trained trials; table: as in the table (percent);
                               zero-cost: the proxy's score (issue 31) */
    double test_accuracy;   /* table evaluator's test column, else -1 */
    double train_loss;      /* table evaluator: NaN (stored as NULL) */
    int64_t macs;
    int64_t params;
    double latency_ms;      /* batch 1, median; table evaluator: NaN (stored as NULL) */
    double train_seconds;   /* wall time of the training, s; table evaluator: NaN (NULL) */
    int epochs;
    char device_name[128];  /* where it ran: GPU name or CPU model ("" when nothing ran) */
    char device_cc[16];     /* GPU compute capability "8.0"; "" for the CPU */
} nas_trial_result;

typedef struct nas_evaluator nas_evaluator; /* opaque: data sets or table */

/* Progress during a trial: fraction done in [0,1] and the last loss. */
typedef void (*nas_eval_progress)(void *ctx, double fraction, double loss);

/*
 * What evaluator.kind does, for the controller, which names no kind
 * (evaluator/evaluator.c holds the table of kinds: "train", "table",
 * "zero-cost"):
 *   _trains: 1 when trials train networks (a backend, workers' devices,
 *     latency, kept weights, multi-fidelity, the diverged check);
 *   _reads_data: 1 when the evaluator loads the experiment's data (train;
 *     zero-cost with a proxy that reads a minibatch);
 *   _name: the kind's evaluator.kind word;
 *   _device: trial.device into buf[n]: the backend (proxy.backend) of a
 *     trained trial, "table", or "zero-cost:PROXY" (issue 31);
 *   _describe: the line `nas run` says for an untrained kind ("table
 *     evaluator: PATH, column C"; "zero-cost evaluator: ..."), "" for train.
 * NULL cfg: 0, "?", "".
 */
int nas_evaluator_kind_trains(const nas_config *cfg);
int nas_evaluator_kind_reads_data(const nas_config *cfg);
const char *nas_evaluator_kind_name(const nas_config *cfg);
void nas_evaluator_kind_device(const nas_config *cfg, char *buf, size_t n);
void nas_evaluator_kind_describe(const nas_config *cfg, char *buf, size_t n);

/*
 * Prepare to evaluate trials of `cfg`: "train" loads and splits the data
 * set once (shared by forked workers); "table" loads the CSV; "zero-cost"
 * makes a nas_zc_scorer (nas/zerocost.h) of evaluator.proxy.
 * Errors: NAS_EIO, NAS_EFORMAT (bad data or table), NAS_ENOMEM.
 */
int nas_evaluator_create(const nas_config *cfg, const nas_space *space, nas_evaluator **out,
                         nas_error *err);
void nas_evaluator_destroy(nas_evaluator *ev); /* NULL is a no-op */

/*
 * Evaluate one genotype: train the proxy and measure (train), or look it up
 * (table). Always fills *res; returns res->status. A NaN loss gives
 * NAS_ENAN, a genotype missing from the table NAS_ENOTFOUND.
 */
int nas_evaluator_run(nas_evaluator *ev, const nas_genotype *g, nas_eval_progress progress,
                      void *ctx, nas_trial_result *res);

/*
 * Where the next trained trial's weights go (issue 5, export): unless the
 * config has proxy.keep_weights = false, nas_evaluator_run saves the proxy-
 * trained network to `path` with nas_weights_save (.npz) after measuring
 * it (the controller sets a path only when weights are kept, and prunes
 * them to the best proxy.keep_top by default: issue 22). NULL or "" stops saving. A failed save does not fail the trial (its
 * measurements stand); the file is then simply absent. Table evaluators
 * train nothing and save nothing. Errors: NAS_EINVAL (path too long).
 */
int nas_evaluator_set_weights_path(nas_evaluator *ev, const char *path);

/*
 * Issue 17 (multi-fidelity search): until > 0 - the following runs train
 * only to epoch `until` of a recipe of `max` epochs (the learning-rate
 * schedule spans max), continuing from `checkpoint` when it exists and
 * rewriting it after every epoch (nas_train_resumable with
 * nas_full_train_opts.until; NULL: no checkpoint). The result's epochs is
 * `until`. With search.fidelity.resource = "images" in the evaluator's
 * config, until and max count training images instead (possibly ending
 * inside an epoch; nas_full_train_opts.until_images, max_images) and the
 * result's epochs is the number of whole epochs trained. until = 0: the
 * whole proxy recipe, as before. Errors:
 * NAS_EINVAL (until < 0, max < until, path too long).
 */
int nas_evaluator_set_fidelity(nas_evaluator *ev, int until, int max, const char *checkpoint);

/*
 * The network genotype `g` becomes under this search (issue 6: constraints
 * checked before training): the space's widths (channels, stages,
 * cells_per_stage) and the data's shape (N x C x H x W input, `classes`
 * outputs). `ev` may be NULL (then `space` is used, with the Fashion-MNIST
 * shape 1x28x28, 10 classes, as a table evaluator does); with ev non-NULL
 * `space` is ignored. Feed it to nas_count_net for MACs and params.
 * Errors: NAS_EINVAL (NULL arguments).
 */
int nas_evaluator_net_desc(const nas_evaluator *ev, const nas_space *space,
                           const nas_genotype *g, nas_net_desc *out);

/*
 * Issue 16: the data this evaluator trains on - C,H,W, classes and the
 * normalisation (computed on the training split, or Fashion-MNIST's for
 * the data.dataset shorthand and for table evaluators). Returns 1 when the
 * data was read from the user's files (data.format set), 0 otherwise.
 */
int nas_evaluator_data_info(const nas_evaluator *ev, nas_data_info *info);

/*
 * Issue 29: the fingerprint of a table file's contents (evaluator.table),
 * which identifies a table experiment as its defining settings do (the
 * path is a running setting: the file may move, its contents may not
 * change). Writes "crc32 XXXXXXXX, N bytes" into out[n]: zlib's CRC-32
 * (ISO 3309) of every byte of the file, as the full training fingerprints
 * its data (trainer/train_full.c), and the file's size. Reads the file
 * once, in 64 KiB blocks. Errors: NAS_EINVAL (NULL or n < 40), NAS_EIO
 * (cannot open or read: message names the file and errno's text).
 */
int nas_evaluator_table_fingerprint(const char *path, char *out, size_t n, nas_error *err);

/* The number of validation images this evaluator measures val_accuracy
 * on (data.valid as a count, or its fraction of the training images:
 * nas_config_valid_count); 0 for a table evaluator. */
int nas_evaluator_valid_count(const nas_evaluator *ev);

/* The number of training images a trial trains on (data.train_subset, or
 * every image left after the validation split); 0 for a table evaluator. */
int nas_evaluator_train_count(const nas_evaluator *ev);

/* Issue 30: seconds the last nas_evaluator_run of a trained trial spent
 * evaluating it, in this process: its BN recalibration
 * (proxy.bn_recalibrate batches, nas_net_bn_recalibrate; none when 0) and
 * its validation pass (nas_net_evaluate over the validation split); NaN
 * before the first run (or NULL ev). */
double nas_evaluator_eval_seconds(const nas_evaluator *ev);

/*
 * Issue 30 (`nas proxy-check`): the seed of the following trainings -
 * weight initialisation and the recipe's shuffling and augmentation - in
 * place of cfg->seed, while the data split stays the one cfg->seed made
 * when the evaluator was created. Errors: NAS_EINVAL (NULL ev).
 */
int nas_evaluator_set_seed(nas_evaluator *ev, uint64_t seed);

/*
 * Issue 28: what the evaluator loaded, for `nas run` to say at load: one
 * line into line[n] (no newline), "data: 7000 images 1x28x28 (C x H x W),
 * 10 classes: 6000 training, 1000 validation; test images: PATH" (the
 * split as nas_data_load made it; test: the files `nas train` and the
 * final training read, or "none"), and into warn[wn] a warning or "": a
 * folder set that is 3-channel although most of its images in use are
 * grey (their R, G and B planes equal before normalisation), since one
 * colour file makes every image RGB (docs/data.md). Returns 0 and leaves
 * both empty for a table evaluator (no data), else 1.
 */
int nas_evaluator_data_summary(const nas_evaluator *ev, char *line, size_t n, char *warn, size_t wn);

/*
 * Batch-1 latency of `g` untrained, in ms (median of
 * cfg->evaluator.latency_runs passes, 10 when unset, after latency_warmup):
 * builds the net on the evaluator's backend and times eval-mode forward
 * passes (nas_latency_ms); the weights do not change the cost, so this is
 * what a trained net measures, without training it. Table evaluators:
 * NaN and NAS_OK (nothing runs). Errors: those of nas_net_create and
 * nas_latency_ms.
 */
int nas_evaluator_latency(nas_evaluator *ev, const nas_genotype *g, double *ms, nas_error *err);

/* ---- issue 32: evaluator.kind = "supernet" (docs/one-shot.md) --------------
 * A kind with a preparation phase: before any trial, a weight-sharing
 * supernet is trained once (phase 1) to a checkpoint in a directory beside
 * the database; each trial is then a subnet evaluated by the weights it
 * inherits from it (phase 2). */

/* 1 when cfg's evaluator kind has a preparation phase (supernet), else 0. */
int nas_evaluator_kind_prepares(const nas_config *cfg);

/*
 * The directory (DB.supernet, created by the caller) where the kind keeps
 * its state: the supernet checkpoint DIR/supernet-CRC.npz, CRC the CRC-32
 * of its fingerprint (nas_supernet_fingerprint), and its training curve
 * beside it (.tsv). Set it before workers fork. No-op for kinds without a
 * preparation phase. Errors: NAS_EINVAL (NULL ev, path too long).
 */
int nas_evaluator_set_state_dir(nas_evaluator *ev, const char *dir);

/* The checkpoint's path into buf[n] ("" and NAS_ENOTFOUND when the kind
 * has none or no directory is set). */
int nas_evaluator_state_path(const nas_evaluator *ev, char *buf, size_t n);

/*
 * Phase 1: train the supernet (nas_supernet_train, single-path uniform
 * sampling: Guo et al., ECCV 2020) with the supernet recipe
 * (nas_supernet_recipe) on the training split, continuing from the
 * checkpoint when it holds part of the training, rewriting it after every
 * epoch and appending the epoch's loss, training accuracy and seconds to
 * the curve first (fsync'd before the checkpoint is renamed into place; a
 * resume drops rows of epochs its checkpoint does not hold, and trains and
 * appends them again, so every epoch has one row); a finished checkpoint
 * returns at once. It creates a backend
 * with workers.count x proxy.threads threads (phase 1 runs alone, so on
 * every worker's cores; a resume with another count continues with other
 * threads, which oneDNN sums in another order) in the calling process: call it in a process that forks no workers
 * afterwards (`nas run` forks a child for it; oneDNN's threads do not
 * survive fork). Progress lines go to `log` (NULL: none). Errors:
 * NAS_EINVAL (no state directory), NAS_EEXIST (the checkpoint was written
 * for other settings: its fingerprint's first differing line is named),
 * nas_supernet_train's (NAS_ENAN, NAS_EIO, ...), NAS_EIO (the curve cannot
 * be written), backend errors. No-op (NAS_OK) for kinds without a
 * preparation phase.
 */
int nas_evaluator_prepare(nas_evaluator *ev, FILE *log, nas_error *err);

/*
 * `nas export` of a supernet trial (phase 2): the subnet of `g` with the
 * weights it inherits from the checkpoint in the state directory, BN
 * recalibrated exactly as nas_evaluator_run evaluated the trial (the same
 * supernet.recal_batches batches of the same seeded sample of the training
 * split, on the same backend), saved to `path` (nas_weights_save), and its
 * accuracy on the same validation images (the first supernet.valid) into
 * *val_accuracy, which therefore reproduces the trial's. Errors:
 * NAS_EINVAL (NULL argument, not a supernet evaluator, no state directory,
 * phase 1 unfinished), NAS_ENOTFOUND (no checkpoint: named), NAS_EEXIST (a
 * checkpoint of other settings), nas_supernet_load's, backend errors,
 * NAS_EIO (the save).
 */
int nas_evaluator_supernet_subnet_save(nas_evaluator *ev, const nas_genotype *g, const char *path,
                                       double *val_accuracy, nas_error *err);

/* The number of batches a subnet's BN recalibration actually runs (what
 * nas_evaluator_run and nas_evaluator_supernet_subnet_save do):
 * ceil(min(supernet.recal_batches x batch, training images) / batch), so
 * fewer than supernet.recal_batches when the training split is smaller;
 * 0 without recalibration or for another kind. */
int nas_evaluator_supernet_recal_batches(const nas_evaluator *ev);

/* The supernet's training curve as recorded so far: *rows (malloc'd; the
 * caller frees) gets one nas_epoch_stats per finished epoch (epoch, loss,
 * accuracy, seconds) - an epoch the checkpoint holds, each once (a row
 * written before a kill prevented its epoch's checkpoint is left out) -
 * *n their count (0 with none, and without a checkpoint). Errors: NAS_EIO,
 * NAS_ENOMEM, the checkpoint's (nas_supernet_checkpoint_steps). */
int nas_evaluator_supernet_curve(const nas_evaluator *ev, nas_epoch_stats **rows, int *n,
                                 nas_error *err);

/* The supernet's training recipe of cfg: supernet.epochs, supernet.batch_size
 * (0: proxy.batch_size), supernet.lr (0: proxy.lr), the proxy's momentum,
 * Nesterov, weight decay, schedule, loader threads, cfg->seed and
 * data.augment. */
void nas_supernet_recipe(const nas_config *cfg, nas_recipe *rec);

/* What a supernet checkpoint is for (malloc'd text; NULL: no memory): the
 * seed, space and defining data lines of cfg's canonical text (not
 * data.dir and the other running data keys: the files may move), the data as loaded (info, n_train images), the
 * recipe `rec`, proxy.backend and proxy.precision. */
char *nas_supernet_fingerprint(const nas_config *cfg, const nas_data_info *info, int n_train,
                               const nas_recipe *rec);

/* ---- Pareto front and objectives (evaluator/pareto.c) ------------------------
 * Arithmetic over measured results, below the store and the search (issue
 * 13): the store's Pareto query (nas_store_pareto), the report, the
 * evolution strategy and the controller's running front all use it. */

/*
 * Multi-objective comparison of `n` points with `dims` objectives each,
 * stored row-major in `points` (point i is points[i*dims .. i*dims+dims-1]);
 * maximize[d] is 1 when objective d is better larger, 0 when better smaller.
 * Definitions follow Deb, Pratap, Agarwal, Meyarivan, "A Fast and Elitist
 * Multiobjective Genetic Algorithm: NSGA-II", IEEE TEC 6(2), 2002:
 *   - a dominates b when a is at least as good as b in every objective and
 *     strictly better in at least one;
 *   - ties and duplicates: equal points never dominate each other, so
 *     duplicates share a rank (all of them are on the front or none is);
 *     with one objective the front is every point equal to the best value;
 *   - a point with a NaN or infinite coordinate is "unranked": it is never
 *     on a front, never dominates, and gets rank -1 and crowding NaN.
 * Limits: 1 <= dims <= NAS_PARETO_MAX_DIMS; n >= 0.
 */
#define NAS_PARETO_MAX_DIMS 8

/* 1 if a dominates b (both `dims` long, finite), else 0. */
int nas_pareto_dominates(const double *a, const double *b, int dims, const int *maximize);

/*
 * The non-dominated set (rank 0): on_front[i] = 1 for points no other point
 * dominates, else 0. Returns how many are on the front, or NAS_EINVAL
 * (bad n/dims, NULL pointer). O(n^2 dims) time, no allocation.
 */
int nas_pareto_front(const double *points, int n, int dims, const int *maximize,
                     unsigned char *on_front);

/*
 * Non-dominated sorting (NSGA-II section III-A): rank[i] = 0 for the front,
 * 1 for the front of what is left once rank 0 is removed, and so on; -1
 * for unranked points. Returns the number of fronts (0 when n == 0 or no
 * point is ranked), or NAS_EINVAL / NAS_ENOMEM. O(F n^2 dims) time for F
 * fronts, O(n) memory.
 */
int nas_pareto_sort(const double *points, int n, int dims, const int *maximize, int *rank);

/*
 * Crowding distance within each front (NSGA-II section III-B): for every
 * objective, the points of one front are sorted by it (ties by index);
 * the first and last get +infinity, each other point adds
 * (next - previous) / (max - min) of its neighbours in that order (nothing
 * when max == min). rank[] comes from nas_pareto_sort. crowd[i] is NaN for
 * unranked points. Returns NAS_OK, NAS_EINVAL or NAS_ENOMEM.
 */
int nas_pareto_crowding(const double *points, int n, int dims, const int *rank, double *crowd);

/*
 * The value of objective metric `metric` ("val_accuracy", "latency_ms",
 * "macs", "params") in `res`, unoriented (a latency in ms, MACs per image):
 * NaN when the trial failed (res->status != NAS_OK), the metric is unknown,
 * or it was not measured (non-finite double, MACs or params <= 0).
 */
double nas_objective_value(const char *metric, const nas_trial_result *res);

#ifdef __cplusplus
}
#endif
#endif /* NAS_EVALUATOR_H */
