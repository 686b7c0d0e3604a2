/*
 * nas/supernet.h - a weight-sharing supernet for one-shot search (issue 32;
 * docs/one-shot.md): single-path uniform sampling (Guo et al., "Single Path
 * One-Shot Neural Architecture Search with Uniform Sampling", ECCV 2020)
 * over a cell or chain space, widths sharing leading channels as in
 * once-for-all (Cai et al., ICLR 2020), BN recalibrated per subnet.
 *
 * The supernet is a store of weight slots, never a second network: every
 * forward and backward runs on a nas_net built by the normal builder
 * (nas_net_create) from a genotype, with its parameters, BN statistics and
 * momentum copied in from the leading blocks of their slots. A slot is
 * named "<parameter name>" or "<parameter name>@<choice>" where the
 * parameter belongs to a searchable layer (cell edge E: the op of edge E;
 * chain layer sS.lL: the token of decision "sS.opL"). No global state.
 */
#ifndef NAS_SUPERNET_H
#define NAS_SUPERNET_H

#include <stdint.h>
#include "nas/backend.h"
#include "nas/space.h"
#include "nas/status.h"
#include "nas/trainer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nas_supernet nas_supernet; /* opaque; owns its slots */

/*
 * Create the supernet of `space` (borrowed: it must outlive the supernet)
 * for inputs of in_c x in_h x in_w (NCHW per image) and `classes` classes,
 * on backend `be` (borrowed). The slots and their largest shapes come from
 * building, at batch 1, one subnet per op index with every width and depth
 * at its largest, plus 32 subnets drawn with PCG32(seed); every element is
 * then initialised as a function of (seed, slot, position) alone:
 * weights and linear biases uniform in +-1/sqrt(fan_in) of the slot's
 * shape (PyTorch's default), BN gamma 1, beta 0, running mean 0, running
 * variance 1, momentum 0. A space with recipe choices (issue 33: proxy.lr
 * and the like as genotype tokens) is accepted: the subnets are built from
 * the network's tokens (nas_space_arch_len), so genotypes differing only in
 * their recipe words share every weight; the training recipe is the one
 * passed to nas_supernet_train. Errors: NAS_EINVAL (NULL argument, bad shape),
 * NAS_ENOMEM, builder and backend errors (the message names the subnet).
 */
int nas_supernet_create(nas_backend *be, const nas_space *space, int in_c, int in_h, int in_w,
                        int classes, uint64_t seed, nas_supernet **out, nas_error *err);
void nas_supernet_destroy(nas_supernet *sn); /* NULL is a no-op */

/* Number of slots, floats held in them (values only), and training steps
 * done so far. */
int nas_supernet_slots(const nas_supernet *sn);
int64_t nas_supernet_floats(const nas_supernet *sn);
int64_t nas_supernet_steps(const nas_supernet *sn);

/* The path of training step `step`: each decision's token drawn uniformly
 * from its allowed tokens by PCG32 seeded with (seed, step) alone, redrawn
 * while the space calls the genotype invalid (nas_space_is_valid). A step
 * draws the same path whether the run was resumed or not. */
void nas_supernet_path(const nas_supernet *sn, int64_t step, nas_genotype *g);

typedef struct nas_supernet_train_opts {
    const nas_recipe *recipe; /* epochs, batch, lr (cosine over all steps), momentum,
                                 nesterov, weight decay, seed (batch order) */
    int64_t max_steps;        /* > 0: stop (NAS_OK) after this many more steps */
    const char *checkpoint;   /* NULL, or a file rewritten after every epoch
                                 (nas_supernet_save with `fingerprint`) */
    const char *fingerprint;  /* what the checkpoint is for (space, data, recipe, seed) */
    nas_train_epoch_cb on_epoch; /* at the end of every epoch, before its checkpoint is
                                    written (what it records of the epoch is on disk
                                    before a resume would start after the epoch);
                                    > 0 stops (NAS_EINTR) once the checkpoint is
                                    written; < 0 (it could not record the epoch)
                                    stops (NAS_EIO) without writing the checkpoint,
                                    so the epoch is trained again on resume */
    void *ctx;
} nas_supernet_train_opts;

/*
 * Train `sn` on `data` (images of the create-time shape) from step
 * nas_supernet_steps(sn) to the recipe's last step (epochs x
 * ceil(n / batch)): each step samples nas_supernet_path(step), builds
 * that subnet (nas_net_create) for the recipe's batch, copies in the
 * leading blocks of its slots (weights, BN statistics, momentum), runs one
 * ordinary training step (batch of the loader's order for that step: the
 * same batches as nas_train with this recipe) and copies the values back;
 * a slot a subnet needs larger than held grows, its new elements at their
 * initial values. stats (may be NULL) as nas_train's for the steps run
 * here. Errors: NAS_EINVAL, NAS_ENAN (message names the step and the
 * genotype), NAS_EINTR, NAS_EIO (checkpoint), NAS_ENOMEM, backend errors.
 */
int nas_supernet_train(nas_supernet *sn, const nas_dataset *data,
                       const nas_supernet_train_opts *o, nas_train_stats *stats, nas_error *err);

/*
 * The subnet of genotype `g`: a nas_net built by nas_net_create for batches
 * of up to max_batch, exactly the stand-alone net of `g`, with every
 * parameter and BN statistic the leading block of its slot (elements a
 * slot does not hold yet: their initial values). The supernet is not
 * changed. Errors: NAS_EINVAL (g not of the space), NAS_ENOMEM, builder
 * and backend errors.
 */
int nas_supernet_subnet(const nas_supernet *sn, const nas_genotype *g, int max_batch,
                        nas_net **out, nas_error *err);

/*
 * The subnet of `g` that nas_supernet_evaluate measures: the subnet
 * (nas_supernet_subnet, for batches of up to batch_size), its BN
 * statistics recalibrated on `recal_batches` batches of `batch_size`
 * images of `calib` (nas_net_bn_recalibrate). *out is the caller's (save it
 * with nas_weights_save: `nas export` of a supernet trial). Errors: those
 * of the two, NAS_EINVAL (NULL out, or calib with recal_batches > 0).
 */
int nas_supernet_subnet_recalibrated(const nas_supernet *sn, const nas_genotype *g,
                                     const nas_dataset *calib, int recal_batches, int batch_size,
                                     nas_net **out, nas_error *err);

/*
 * Validation accuracy in [0,1] of subnet `g` with inherited weights: the
 * subnet (nas_supernet_subnet), its BN statistics recalibrated on
 * `recal_batches` batches of `batch_size` images of `calib`
 * (nas_net_bn_recalibrate; pass a fixed, seeded sample of the training
 * split, nas_dataset_sample) - nas_supernet_subnet_recalibrated - then
 * nas_net_evaluate on `valid`. *loss (may be NULL) gets the mean
 * validation loss. Errors: those of the three.
 */
int nas_supernet_evaluate(const nas_supernet *sn, const nas_genotype *g, const nas_dataset *calib,
                          int recal_batches, int batch_size, const nas_dataset *valid,
                          double *accuracy, double *loss, nas_error *err);

/*
 * nas_supernet_evaluate for the k genotypes g[0..k-1]: accuracy[i] (and,
 * when loss is not NULL, loss[i]) of g[i]. With threads > 1 and the "cpu"
 * backend, min(threads, k) threads evaluate them side by side, each
 * taking the next genotype in index order and running it on a cpu
 * backend of its own with 1 thread and the supernet backend's precision:
 * every result is bit for bit the one nas_supernet_evaluate gives on a
 * 1-thread backend, whatever the thread count and the order the threads
 * finish in (subnets are small, so running them side by side uses T cores
 * better than T threads inside each oneDNN primitive). Note that creating
 * a cpu backend sets OpenBLAS's process-wide thread count (always 1;
 * trainer/backend_cpu.c). Otherwise (threads <= 1, other backends) they
 * run one after the other on the supernet's backend. `sn`, the data sets
 * and the genotypes are only read. Errors: those of nas_supernet_evaluate
 * and nas_backend_create; after a failure the other threads take no new
 * genotype, and the error returned is that of a thread that could not
 * create its backend, else of the lowest failing genotype; NAS_EINVAL
 * (NULL arguments, k < 0), NAS_ENOMEM (a thread could not be started:
 * the call fails, and the threads that did start take no new genotype).
 */
int nas_supernet_evaluate_many(const nas_supernet *sn, const nas_genotype *g, int k,
                               const nas_dataset *calib, int recal_batches, int batch_size,
                               const nas_dataset *valid, int threads, double *accuracy,
                               double *loss, nas_error *err);

/*
 * Write every slot (values as float32 "<slot>" and momentum as
 * "<slot>#momentum", 4-D), the steps done and `fingerprint` to `path`, an
 * .npz written to PATH.tmp and renamed into place. Errors: NAS_EIO,
 * NAS_ENOMEM.
 */
int nas_supernet_save(const nas_supernet *sn, const char *path, const char *fingerprint,
                      nas_error *err);

/*
 * Read a file written by nas_supernet_save into `sn` (created for the same
 * space and seed; a slot the file holds larger than `sn` grows to it).
 * Errors: NAS_EIO, NAS_EEXIST (the file's fingerprint differs from
 * `fingerprint`: both are named), NAS_EFORMAT (a slot this supernet does
 * not have, a missing member, a wrong dtype or rank, momentum for BN
 * statistics, negative steps), NAS_ENOMEM.
 */
int nas_supernet_load(nas_supernet *sn, const char *path, const char *fingerprint,
                      nas_error *err);

/*
 * The training steps done that the checkpoint `path` (written by
 * nas_supernet_save with `fingerprint`) holds, into *steps, without a
 * supernet or a backend (the one-shot search's controller reads it to know
 * which epochs of the curve the checkpoint covers). Only the checkpoint's
 * two metadata members are read (through the ZIP directory), not its
 * slots: a few KB whatever the supernet's size. Errors: those of
 * nas_supernet_load for the file and its fingerprint (NAS_EIO, NAS_EEXIST,
 * NAS_EFORMAT), NAS_EINVAL (NULL argument), NAS_ENOMEM.
 */
int nas_supernet_checkpoint_steps(const char *path, const char *fingerprint, int64_t *steps,
                                  nas_error *err);

/* ---- the read-only weights file: one copy shared by every worker ---------- */

/*
 * Write the values of every slot (float32, no momentum), the steps done and
 * `fingerprint` to `path` as a flat weights file for nas_supernet_map (the
 * layout: trainer/supernet_map_impl.h; every slot's values 64-byte aligned,
 * CRC-32s of the metadata and of the values): written to PATH.tmp,
 * fsync'd, then renamed into place, so a kill never leaves a half-written
 * file under `path`. The one-shot search writes DB.supernet/supernet-CRC.weights
 * beside the checkpoint when phase 1 has finished. About 4 bytes per float
 * of nas_supernet_floats plus 256 per slot. Errors: NAS_EINVAL (NULL
 * argument), NAS_EIO (names the path and why), NAS_ENOMEM,
 * NAS_EUNSUPPORTED (a big-endian host).
 */
int nas_supernet_write_weights(const nas_supernet *sn, const char *path, const char *fingerprint,
                               nas_error *err);

/*
 * The supernet of `space` (arguments as nas_supernet_create's) whose slots
 * are the weights file `path` (nas_supernet_write_weights), mapped
 * read-only and shared (mmap PROT_READ, MAP_SHARED): no private copy of
 * the values, so every process mapping the file shares one physical copy
 * through the page cache. The whole file is checked first - size, magic,
 * version, every offset and shape against the file's bounds, both CRC-32s,
 * the fingerprint (equal to `fingerprint`) and the steps (equal to
 * `steps`, the checkpoint's; steps < 0: any) - and every slot of the file
 * must be one of the space's, at least as large as creation finds it; a
 * slot the file lacks gets its initial values (as nas_supernet_load leaves
 * it). Subnets, their recalibration and evaluation (nas_supernet_subnet,
 * _subnet_recalibrated, _evaluate, _evaluate_many) are bit for bit those
 * of a supernet that nas_supernet_load read the checkpoint into. The
 * supernet is read-only: nas_supernet_train, _load and _save refuse it
 * with NAS_EINVAL and write nothing. nas_supernet_destroy unmaps it. The
 * file must not be changed in place while mapped (nas_supernet_write_weights
 * renames a new file over it, which leaves existing mappings as they were;
 * truncating it under a mapping would fault on the next read, SIGBUS).
 * Errors: NAS_ENOTFOUND (no file), NAS_EIO (cannot open or map it),
 * NAS_EFORMAT (truncated, damaged, or for another space: the message says
 * which check failed), NAS_EEXIST (another supernet's fingerprint, or
 * stale: other steps than `steps`), NAS_EINVAL (NULL argument), NAS_ENOMEM,
 * and those of nas_supernet_create. *out is NULL on failure.
 */
int nas_supernet_map(nas_backend *be, const nas_space *space, int in_c, int in_h, int in_w,
                     int classes, uint64_t seed, const char *path, const char *fingerprint,
                     int64_t steps, nas_supernet **out, nas_error *err);

/* 1 when sn was made by nas_supernet_map (read-only), else 0. */
int nas_supernet_is_mapped(const nas_supernet *sn);

/*
 * Check the weights file `path` as nas_supernet_map does (size, bounds,
 * CRC-32s, fingerprint, steps; steps < 0: any), without a space or a
 * backend: NAS_OK when it is valid and current. Errors: those of
 * nas_supernet_map for the file (NAS_ENOTFOUND, NAS_EIO, NAS_EFORMAT,
 * NAS_EEXIST), NAS_ENOMEM.
 */
int nas_supernet_weights_check(const char *path, const char *fingerprint, int64_t steps,
                               nas_error *err);

#ifdef __cplusplus
}
#endif
#endif /* NAS_SUPERNET_H */
