/*
 * tests/fuzz/target_cifar.c - CIFAR binary batches through the CIFAR
 * reader (trainer/data_cifar.c) by way of nas_data_read. Input: byte 0 bit
 * 0 picks CIFAR-100 (train.bin, test.bin) over CIFAR-10 (data_batch_1..5,
 * test_batch.bin), bit 1 reads the test split; the rest is every file of
 * that format (the five CIFAR-10 batches get the same bytes). Promises
 * checked: a failure is an error code with a message, never NAS_ENOMEM for
 * an input under 1 MiB; a success is N 3x32x32 images with labels below
 * 10 or 100.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "nas/data.h"
#include "fuzz.h"

int nas_fuzz_cifar(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int c100 = data[0] & 1, test = (data[0] >> 1) & 1;
    data++;
    size--;
    static const char *const c10[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                      "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
    static const char *const c100f[] = {"train.bin", "test.bin"};
    char p[700];
    for (int i = 0; i < 6; i++) { /* the other format's files must not be there */
        snprintf(p, sizeof p, "%s/%s", nas_fuzz_dir(), c10[i]);
        unlink(p);
    }
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", nas_fuzz_dir(), c100f[i]);
        unlink(p);
    }
    for (int i = 0; i < (c100 ? 2 : 6); i++)
        nas_fuzz_write(c100 ? c100f[i] : c10[i], data, size);
    nas_data_conf dc;
    memset(&dc, 0, sizeof dc);
    snprintf(dc.format, sizeof dc.format, "cifar");
    snprintf(dc.dir, sizeof dc.dir, "%s", nas_fuzz_dir());
    nas_rawset *r = (nas_rawset *)&dc; /* must be reset */
    nas_error err;
    nas_error_clear(&err);
    int rc = nas_data_read(&dc, test, &r, &err);
    if (rc != NAS_OK)
        return nas_fuzz_refused(rc, &err, r == NULL, NULL, NULL, size);
    NAS_FUZZ_CHECK(r && r->n >= 1 && r->c == 3 && r->h == 32 && r->w == 32 &&
                       r->classes == (c100 ? 100 : 10),
                   "n %d c %d h %d w %d classes %d", r->n, r->c, r->h, r->w, r->classes);
    unsigned sum = 0;
    for (int i = 0; i < r->n; i++) {
        NAS_FUZZ_CHECK(r->labels[i] < r->classes, "label %d of %d", r->labels[i], i);
        sum += (unsigned)nas_rawset_pixel(r, (size_t)i, 2, 31, 31);
    }
    nas_rawset_destroy(r);
    return (int)(sum & 0);
}
