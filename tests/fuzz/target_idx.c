/*
 * tests/fuzz/target_idx.c - Fashion-MNIST idx files through nas_fmnist_load
 * (trainer/data.c; zlib reads gzip or plain). Input: u16 little-endian L,
 * then L bytes of train-images-idx3-ubyte, then the rest as
 * train-labels-idx1-ubyte (either may be gzip: zlib detects it). Promises
 * checked: a failure is an error code with a message, never NAS_ENOMEM for
 * an input under 1 MiB (allocations follow the data, not the counts a
 * header claims); a success is a data set of 28x28 images whose labels are
 * in 0..9.
 */
#include <string.h>
#include "nas/trainer.h"
#include "fuzz.h"

int nas_fuzz_idx(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t L = (size_t)data[0] | ((size_t)data[1] << 8);
    data += 2;
    size -= 2;
    if (L > size)
        L = size;
    nas_fuzz_write("train-images-idx3-ubyte", data, L);
    nas_fuzz_write("train-labels-idx1-ubyte", data + L, size - L);
    nas_dataset *d = (nas_dataset *)data; /* must be reset */
    nas_error err;
    nas_error_clear(&err);
    int rc = nas_fmnist_load(nas_fuzz_dir(), "train", &d, &err);
    if (rc != NAS_OK)
        return nas_fuzz_refused(rc, &err, d == NULL, NULL, NULL, size);
    NAS_FUZZ_CHECK(d && d->n > 0 && d->c == 1 && d->h == 28 && d->w == 28, "shape");
    for (int i = 0; i < d->n; i++)
        NAS_FUZZ_CHECK(d->labels[i] < 10, "label %d of image %d", d->labels[i], i);
    nas_dataset_destroy(d);
    return rc;
}
