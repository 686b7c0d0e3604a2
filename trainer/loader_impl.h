/*
 * trainer/loader_impl.h - the batch loader of the training loops (issue 16;
 * internal to trainer/: train.c, train_full.c).
 *
 * It hands out the batches of a run in the order the loops train on them:
 * epoch by epoch, each epoch's images in the order PCG32(seed, epoch)
 * shuffles 0..n-1 (nas_rng_shuffle), batch_size at a time, the last
 * partial batch kept. Each batch is gathered from the data set, its images
 * augmented (nas_augment_image, key = epoch * n + position in the epoch)
 * and its labels written as floats. With threads > 0 that work runs on
 * that many pthreads ahead of the trainer: batch k+1 is prepared while the
 * trainer runs step k (threads + 1 buffers; thread j prepares the batches
 * k = j mod threads). A batch's content depends only on (data, batch size,
 * seed, augmentation, k), never on timing or the thread count, so results
 * are identical with threads on or off. No global state.
 */
#ifndef NAS_TRAINER_LOADER_IMPL_H
#define NAS_TRAINER_LOADER_IMPL_H

#include "nas/trainer.h"

typedef struct nas__loader nas__loader;

/*
 * Batches of epochs first_epoch .. epochs-1 of `data` (borrowed; it must
 * outlive the loader), starting at batch first_batch (0-based, below the
 * batches per epoch) of first_epoch: a run resumed inside an epoch (issue
 * 17) gets the batches it would have had. `aug` may be NULL (none).
 * threads: 0 prepares each batch inside nas__loader_next; 1..16 run ahead.
 * Errors: NAS_EINVAL, NAS_ENOMEM, NAS_EIO (a thread could not be started).
 */
int nas__loader_create(const nas_dataset *data, int batch, uint64_t seed, int first_epoch,
                       int first_batch, int epochs, const nas_augment *aug, int threads,
                       nas__loader **out, nas_error *err);

/*
 * The next batch: *x (b * C*H*W floats, NCHW) and *y (b labels as floats)
 * stay valid until the next call; *b images. *wait_s (may be NULL) gets
 * the seconds this call blocked for it (threads 0: the time spent
 * preparing it). NAS_ENOTFOUND after the last batch.
 */
int nas__loader_next(nas__loader *l, const float **x, const float **y, int *b, double *wait_s);

/* Stop the threads and free everything; NULL is a no-op. */
void nas__loader_destroy(nas__loader *l);

#endif
