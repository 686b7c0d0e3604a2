/*
 * tests/unit/tiny_data.h - the data set the unit tests' tiny network
 * (tiny_net.h) trains on (header only, static inline): n images of
 * 1 x 8 x 8 (NCHW, float32) in 5 classes, owned by the set.
 */
#ifndef NAS_TESTS_TINY_DATA_H
#define NAS_TESTS_TINY_DATA_H

#include <stdint.h>
#include <stdlib.h>
#include "nas/trainer.h"

/* A data set of n 1x8x8 images, 5 classes, images[n*64] and labels[n]
 * allocated but not filled: each test draws its own learnable pattern.
 * nas_dataset_destroy frees it. */
static inline nas_dataset *tiny_data_alloc(int n)
{
    nas_dataset *d = calloc(1, sizeof *d);
    d->n = n;
    d->c = 1;
    d->h = d->w = 8;
    d->classes = 5;
    d->owns = 1;
    d->images = malloc((size_t)n * 64 * sizeof(float));
    d->labels = malloc((size_t)n);
    return d;
}

#endif
