/*
 * trainer/data_impl.h - the readers behind nas_data_read (internal; one
 * file per format: data_idx.c, data_npy.c, data_cifar.c) and the raw-set
 * helpers they share (data_source.c).
 */
#ifndef NAS_TRAINER_DATA_IMPL_H
#define NAS_TRAINER_DATA_IMPL_H

#include "nas/data.h"

/* A zeroed raw set with `path` copied in, or NULL (out of memory). */
nas_rawset *nas__rawset_new(const char *path);

/* Check labels[0..n) < classes, or set classes to the largest + 1 when
 * classes is 0 (at least 2). NAS_EFORMAT naming `path` otherwise. */
int nas__labels_check(const uint8_t *labels, int n, int *classes, const char *path,
                      nas_error *err);

/* idx images `images` and labels `labels` (gzip or plain). */
int nas__read_idx(const char *images, const char *labels, nas_rawset **out, nas_error *err);

/* npy images (memory-mapped; layout "" = inferred) and labels. */
int nas__read_npy(const char *images, const char *labels, const char *layout, nas_rawset **out,
                  nas_error *err);

/* CIFAR-10 or -100 binary batches in `dir` (test: the test batch; *out
 * NULL when it is absent). */
int nas__read_cifar(const char *dir, int test, nas_rawset **out, nas_error *err);

#endif
