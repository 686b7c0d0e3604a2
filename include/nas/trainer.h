/*
 * nas/trainer.h - data sets, the network built from a genotype, and the
 * proxy training loop, all on the kernel library (nas/backend.h).
 *
 * The network is NAS-Bench-201's TinyNetwork (Dong & Yang, ICLR 2020):
 * stem conv3x3 + BN; `stages` stages of `cells_per_stage` cells with C,
 * 2C, 4C ... channels; between stages a residual reduction block
 * (ReLU-conv3x3 s2-BN, ReLU-conv3x3-BN, shortcut avgpool 2x2 s2 + conv1x1);
 * then BN-ReLU, global average pool, linear. Cell edges: none = zero,
 * skip_connect = identity, nor_conv_KxK = ReLU-conv-BN, avg_pool_3x3 =
 * 3x3 average pool (count_include_pad False). Node j sums its inputs; the
 * cell's output is node 3. Layer table: ../shared/reference (and
 * evaluator/ for MACs).
 */
#ifndef NAS_TRAINER_H
#define NAS_TRAINER_H

#include <stdint.h>
#include "nas/backend.h"
#include "nas/space.h"
#include "nas/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- data ---------------------------------------------------------------- */

/* Images in host memory, float32 NCHW, already normalised; labels 0..K-1.
 * A dataset owns its arrays unless it is a view (see nas_dataset_view). */
typedef struct nas_dataset {
    int n, c, h, w;
    int classes;
    float *images;   /* n*c*h*w */
    uint8_t *labels; /* n */
    int owns;        /* 1: destroy frees images/labels */
    float black[NAS_DATA_MAX_C]; /* a 0 (black) pixel after normalisation, per channel: the
                                    padding of augmentation's random crop (issue 16) */
} nas_dataset;

/*
 * Load Fashion-MNIST from idx files (gzip or plain) in `dir`:
 * split "train" reads train-images-idx3-ubyte[.gz] (60000 x 1 x 28 x 28),
 * "test" reads t10k-*. Pixels are scaled to [0,1] then normalised with
 * (x - mean)/std (Fashion-MNIST: mean 0.2860, std 0.3530).
 * Errors: NAS_EIO (missing/unreadable file: message names it), NAS_EFORMAT
 * (bad magic, truncated file, image/label count mismatch, images that are
 * not 28x28: the size the networks are built for), NAS_ENOMEM.
 */
int nas_fmnist_load(const char *dir, const char *split, nas_dataset **out, nas_error *err);

/* The normalisation nas_fmnist_load applies (written into exports so they
 * can preprocess data the same way) and the Debian package's directory. */
#define NAS_FMNIST_MEAN 0.2860
#define NAS_FMNIST_STD 0.3530
#define NAS_FMNIST_DIR "/usr/share/datasets/fashion-mnist"

/*
 * Deterministic train/validation split: shuffle indices with PCG32(seed),
 * the first `n_valid` go to *valid, the next `n_train` (0 = all the rest)
 * to *train. Both outputs own copies. Errors: NAS_EINVAL, NAS_ENOMEM.
 */
int nas_dataset_split(const nas_dataset *full, int n_valid, int n_train, uint64_t seed,
                      nas_dataset **train, nas_dataset **valid, nas_error *err);
void nas_dataset_destroy(nas_dataset *d); /* NULL is a no-op */

/* A copy of min(n, full->n) images of `full` (n > 0), in the order of
 * nas_dataset_split's shuffle with `seed`: the fixed, seeded images of a
 * BN recalibration (nas_net_bn_recalibrate). Errors: NAS_EINVAL,
 * NAS_ENOMEM. */
int nas_dataset_sample(const nas_dataset *full, int n, uint64_t seed, nas_dataset **out,
                       nas_error *err);

/* ---- network ------------------------------------------------------------- */

typedef struct nas_net_desc {
    nas_genotype genotype; /* cell space tokens (nas_op per edge) */
    int channels;          /* C */
    int stages;            /* 3 in NAS-Bench-201 */
    int cells_per_stage;   /* N */
    int in_c, in_h, in_w;  /* input image shape */
    int classes;
    /* issue 15: a chain space (nas/layers.h). NULL (cells, and every caller
     * that zero-initialises the struct): the TinyNetwork above. Else the net
     * is built from nas_space_layers(space, genotype): the layer
     * description, with in_c/in_h/in_w/classes checked against it. The
     * space must outlive the net. */
    const nas_space *space;
} nas_net_desc;

typedef struct nas_net nas_net; /* opaque; owns its parameters and buffers */

/*
 * Build the network for `desc` on `be` (a chain genotype when desc->space
 * is set: every layer of nas/layers.h on the kernel library - grouped
 * convolution for depthwise layers, nas_act_fwd for relu6 / hswish, SE as
 * GAP, two 1x1 convolutions with bias (nas_linear_fwd on the pooled
 * vector), ReLU, hard-sigmoid or sigmoid gate and nas_chscale_fwd; the
 * residual add as a sum; dropout by nas_dropout_fwd seeded per training
 * step; docs/spaces.md "Training") for batches of at most `max_batch`
 * images, initialising weights from PCG32(seed): convolutions and linear
 * with Kaiming-uniform (a = sqrt(5), as PyTorch's default), linear bias
 * uniform(+-1/sqrt(fan_in)), BN gamma 1, beta 0, running var 1.
 * Errors: NAS_EINVAL (bad desc), NAS_ENOMEM, NAS_EBACKEND.
 */
int nas_net_create(nas_backend *be, const nas_net_desc *desc, int max_batch, uint64_t seed,
                   nas_net **out, nas_error *err);
void nas_net_destroy(nas_net *net); /* NULL is a no-op */

/* Forward x[B,in_c,in_h,in_w] (B <= max_batch) in train (batch statistics)
 * or eval (running statistics) mode; *logits points to a [B,classes]
 * tensor owned by the net, valid until the next call. Errors: NAS_EINVAL
 * (NULL argument; or x's shape does not fit: nas_backend_last_error of the
 * net's backend says how), backend errors. */
int nas_net_forward(nas_net *net, const nas_tensor *x, int train, const nas_tensor **logits);

/* After a train-mode forward: loss against labels[B] (floats), backward
 * through the whole net, gradients left in the net. */
int nas_net_backward(nas_net *net, const nas_tensor *labels, float *loss, int *correct);

/* Apply SGD (nas_sgd_step) to every parameter with its gradient. */
int nas_net_sgd_step(nas_net *net, float lr, float momentum, float wd, int nesterov);

/* Number of trainable parameters (conv weights, BN gamma/beta, linear). */
int64_t nas_net_param_count(const nas_net *net);

/* Named parameters and buffers, in construction order, for export and
 * tests. Returns the count; fills at most `cap` entries. The tensors stay
 * owned by the net. Names follow PyTorch's TinyNetwork module paths
 * ("stem.0.weight", "cells.0.layers.0.op.1.weight" for edge 0 of cell 0,
 * "cells.1.conv_a.op.1.weight" for a reduction block, ... as
 * NAS-Bench-201's TinyNetwork); BN entries are weight, bias, running_mean,
 * running_var (the last two are buffers: grad NULL). */
/* Each call also marks the eval-mode folded weights stale (trainer/net.c,
 * "Folded inference"), so a caller that writes parameters through the
 * returned tensors gets them used by the next eval forward; call it again
 * after writing if an eval forward ran in between. */
typedef struct nas_net_param {
    const char *name;
    nas_tensor *value;
    nas_tensor *grad; /* NULL for buffers (BN running stats) */
} nas_net_param;
int nas_net_params(nas_net *net, nas_net_param *out, int cap);

/* ---- training ------------------------------------------------------------ */

typedef struct nas_recipe {
    int epochs;
    int batch_size;
    double lr;           /* peak learning rate */
    double momentum;
    int nesterov;
    double weight_decay;
    nas_schedule schedule; /* cosine: lr_t = lr/2 (1 + cos(pi t/T)), per step */
    uint64_t seed;       /* weight init and batch order */
    /* issue 16 (nas_train; nas_train_resumable takes its augmentation from
     * nas_full_train_opts): zero = none, batches prepared in the loop */
    nas_augment augment; /* each training image, keyed by (seed, epoch, position) */
    int loader_threads;  /* 0..16 threads preparing batches ahead of the trainer; the
                            results do not depend on it */
} nas_recipe;

typedef struct nas_train_stats {
    double train_loss;     /* mean over the last epoch */
    double train_accuracy; /* over the last epoch, in [0,1] */
    double seconds;        /* wall time of the training steps */
    double load_seconds;   /* part of `seconds` spent gathering and uploading batches */
    double wait_seconds;   /* part of load_seconds the trainer waited for the loader
                              (loader_threads 0: the time it spent preparing batches) */
    double images_per_s;
    int epochs;
    int steps;
} nas_train_stats;

/* Called after every step with the step index, total steps and the loss;
 * return non-zero to stop (NAS_EINTR). May be NULL. */
typedef int (*nas_train_progress)(void *ctx, int step, int steps, float loss);

/*
 * Train `net` on `data` with `recipe` (shuffled each epoch with PCG32(seed,
 * epoch); the last partial batch is kept; recipe->augment applied to each
 * image; batches prepared by recipe->loader_threads threads ahead of the
 * steps, trainer/loader_impl.h). Errors: NAS_ENAN when the loss
 * becomes NaN or infinite (message gives epoch and step), NAS_EINTR,
 * backend errors.
 */
int nas_train(nas_net *net, const nas_dataset *data, const nas_recipe *recipe,
              nas_train_progress progress, void *ctx, nas_train_stats *stats, nas_error *err);

/* Summary of one finished epoch, for nas_train_epochs' callback. */
typedef struct nas_epoch_stats {
    int epoch, epochs;     /* 1-based epoch just finished, total */
    double loss;           /* mean training loss over the epoch */
    double accuracy;       /* training accuracy over the epoch, in [0,1] */
    double seconds;        /* wall time of the epoch's steps */
    double images_per_s;
} nas_epoch_stats;

/* Called after every epoch; return non-zero to stop (NAS_EINTR). */
typedef int (*nas_train_epoch_cb)(void *ctx, const nas_epoch_stats *e);

/* nas_train with an extra per-epoch callback `on_epoch` (may be NULL);
 * both callbacks get `ctx`. Same schedule, order and errors. */
int nas_train_epochs(nas_net *net, const nas_dataset *data, const nas_recipe *recipe,
                     nas_train_progress progress, nas_train_epoch_cb on_epoch, void *ctx,
                     nas_train_stats *stats, nas_error *err);

/* Accuracy in [0,1] and mean loss of `net` (eval mode) on `data`. */
int nas_net_evaluate(nas_net *net, const nas_dataset *data, int batch_size, double *accuracy,
                     double *loss, nas_error *err);

/*
 * Batch-norm recalibration (issue 30; SPOS, Guo et al. ECCV 2020, and OFA,
 * Cai et al. ICLR 2020, recompute BN statistics before evaluating): replace
 * every BN layer's running statistics by their cumulative average over the
 * first min(batches * batch_size, data->n) images of `data`, in order, in
 * batches of batch_size (the last one partial), run through the net in
 * train mode with no backward and no weight update. That is PyTorch's
 * BatchNorm2d with momentum=None after reset_running_stats(): after batch
 * k (1-based) running = (1 - 1/k) running + (1/k) batch, so the result is
 * the mean of the batches' means and of their unbiased variances
 * (var * m/(m-1) over the m = B*H*W values of a channel), whatever the
 * statistics were before. Deterministic; `data` is used as given (no
 * augmentation, no shuffle: the caller picks and orders the images).
 * batches 0 changes nothing. Errors: NAS_EINVAL (NULL net or data, empty
 * data, batches < 0, batch_size <= 0 or above the net's max batch),
 * NAS_ENOMEM, backend errors.
 */
int nas_net_bn_recalibrate(nas_net *net, const nas_dataset *data, int batches, int batch_size,
                           nas_error *err);

/* ---- weights files (trainer/weights.c) ---------------------------------------
 * Added for issue 5 (export and full training); docs/export.md describes
 * the file format. The exporters (JSON, ONNX, PyTorch) are in nas/export.h. */

/*
 * Save every parameter and buffer of `net` (nas_net_params: conv and
 * linear weights, BN weight/bias/running_mean/running_var) to `path` as a
 * NumPy .npz archive: one float32 .npy member per entry, named as
 * nas_net_params names it and shaped as PyTorch's state_dict (conv
 * [K,C,R,R], BN [C], linear weight [M,K], bias [M]), plus an int64
 * "<bn>.num_batches_tracked" per BN layer, so
 *   model.load_state_dict({k: torch.from_numpy(v) for k, v in np.load(p).items()})
 * loads it into the exported module. The file is written to PATH.tmp and
 * renamed into place. Errors: NAS_EIO (cannot write: names the path and
 * why), NAS_ENOMEM, backend errors.
 */
int nas_weights_save(nas_net *net, const char *path, nas_error *err);

/*
 * Load `path` (written by nas_weights_save, a checkpoint, or numpy.savez /
 * savez_compressed of such arrays) into `net`. Every parameter must be
 * present with its exact shape and dtype float32.
 * Errors: NAS_EIO (cannot read), NAS_EFORMAT (not an .npz, damaged (CRC),
 * a missing, extra or misshapen array: "the weights are for another
 * architecture"), backend errors.
 */
int nas_weights_load(nas_net *net, const char *path, nas_error *err);

/* ---- full training with checkpoints (trainer/train_full.c; issue 5) -------- */

/* Image augmentation: nas_augment, nas_augment_parse, nas_augment_format
 * (nas/space.h); nas_augment_image below applies it. */

/*
 * Augment one C x H x W image `img` (normalised, NCHW) in place as `a`
 * says, with `tmp` (C*H*W floats) as scratch. The draws come from PCG32
 * seeded by (seed, key) alone (nas/rng.h; trainer/augment.c), so an image
 * gets the same augmentation whichever thread prepares it and in whatever
 * order: the loader passes key = epoch * N + position in the epoch's
 * shuffled order. Draw order: crop dy, dx (each uniform in [-pad, pad]),
 * flip (a bit), cutout centre cy (in [0, H)), cx (in [0, W)). Result:
 *   crop/flip  out(c, y, x) = in(c, y + dy, x' + dx), x' = W-1-x when
 *              flipped else x; black[c] where that falls outside;
 *   cutout     out(c, y, x) = 0 for y in [cy - s/2, cy - s/2 + s) and x
 *              in [cx - s/2, cx - s/2 + s), s = a->cutout, clipped.
 */
void nas_augment_image(const nas_augment *a, float *img, float *tmp, int c, int h, int w,
                       const float *black, uint64_t seed, uint64_t key);

/* A one-line note for the user (a warning that does not stop the run). */
typedef void (*nas_train_note)(void *ctx, const char *msg);

typedef struct nas_full_train_opts {
    const nas_recipe *recipe;
    nas_augment augment;
    const char *checkpoint;      /* .npz rewritten after every epoch; NULL: none */
    int stop_after;              /* > 0: stop with NAS_EINTR after this epoch (tests) */
    nas_train_progress progress; /* per step; non-zero return stops (NAS_EINTR) */
    nas_train_epoch_cb on_epoch; /* per epoch; may be NULL */
    void *ctx;
    /* issue 22: called once, before training goes on, when o->checkpoint
     * was loaded: `epoch` epochs of rec->epochs are done; may be NULL */
    void (*on_resume)(void *ctx, int epoch);
    nas_train_note note;         /* warnings (an old checkpoint resumed); may be NULL */
    /* issue 17 (multi-fidelity promotion): > 0: train only up to the end of
     * this epoch of recipe->epochs and return NAS_OK, the learning-rate
     * schedule still spanning all recipe->epochs; with a checkpoint, a later
     * call with a larger `until` continues from it, and the weights equal
     * one run to that epoch bit for bit. 0: all epochs. */
    int until;
    /* issue 17, search.fidelity.resource = "images": > 0: the budget is
     * counted in training images, not epochs. The cosine schedule spans the
     * steps of the first max_images images of the run (whole epochs, then
     * the batches of the next one that reach max_images; recipe->epochs and
     * `until` are ignored); training stops after the steps of the first
     * until_images (0: max_images), possibly inside an epoch, where the
     * checkpoint keeps the epoch's place and running sums, so a later call
     * with a larger until_images continues bit for bit as one run would. */
    int64_t until_images, max_images;
} nas_full_train_opts;

/*
 * Train `net` on `data` with o->recipe exactly as nas_train does (same
 * shuffle, schedule and step sequence: identical results with augmentation
 * off), augmenting each host batch when asked, and write o->checkpoint
 * (weights, BN statistics, SGD momentum, epoch, step, augmentation RNG,
 * and a fingerprint of network, recipe, augmentation, data size, the
 * net's backend and precision (nas_backend_get_precision) and a CRC-32 of
 * the training images and labels) after every epoch. When o->checkpoint
 * exists it is loaded first and training continues after its last epoch
 * (*resumed_from, may be NULL, gets that epoch; 0 for a fresh start): the
 * result equals an uninterrupted run's. A checkpoint written before
 * backend, precision and data were fingerprinted (issue 19) resumes when
 * the rest matches, with a warning through o->note.
 * stats->epochs counts every finished epoch (resumed ones included).
 * Errors: NAS_EEXIST (the checkpoint belongs to another run: the message
 * lists each differing field, e.g. "precision: bf16 in the checkpoint,
 * fp32 here"), NAS_EFORMAT (damaged checkpoint, or progress counters
 * impossible for this recipe and data: negative, beyond the epochs, steps
 * not epochs x steps per epoch), NAS_ENAN, NAS_EINTR (stopped; the
 * checkpoint holds the last finished epoch), NAS_EIO, backend errors.
 */
int nas_train_resumable(nas_net *net, const nas_dataset *data, const nas_full_train_opts *o,
                        nas_train_stats *stats, int *resumed_from, nas_error *err);

/*
 * The progress recorded in the checkpoint nas_train_resumable wrote at
 * `path`, without a network: *epochs, the whole epochs it finished, and
 * *steps, its optimiser steps (beyond epochs x steps per epoch when it
 * ended inside an epoch). Errors: NAS_EIO (cannot read it), NAS_EFORMAT
 * (not a nas training checkpoint).
 */
int nas_train_checkpoint_progress(const char *path, int *epochs, int64_t *steps, nas_error *err);

#ifdef __cplusplus
}
#endif
#endif /* NAS_TRAINER_H */
