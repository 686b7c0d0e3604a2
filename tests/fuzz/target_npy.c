/*
 * tests/fuzz/target_npy.c - .npy images and labels through the npy reader
 * nas__read_npy (trainer/data_npy.c; the image file is memory-mapped).
 * Input: byte 0 picks data.layout ("", "nhw", "nhwc", "nchw" by its value
 * mod 4), a u16 little-endian length L, L bytes of the images file, the
 * rest the labels file. Promises checked: a failure is an error code with
 * a message naming a file and no raw set, never NAS_ENOMEM for an input
 * under 1 MiB; a success is a plausible shape (N, C <= 16, H, W >= 1) whose
 * every pixel reads (ASan and the mapping's bounds check the reads) and
 * labels below the class count.
 */
#include <string.h>
#include "trainer/data_impl.h"
#include "fuzz.h"

int nas_fuzz_npy(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    static const char *const layouts[] = {"", "nhw", "nhwc", "nchw"};
    const char *layout = layouts[data[0] % 4];
    size_t L = (size_t)data[1] | ((size_t)data[2] << 8);
    data += 3;
    size -= 3;
    if (L > size)
        L = size;
    char img[64], lab[64];
    nas_fuzz_file(0, data, L, img, sizeof img);
    nas_fuzz_file(1, data + L, size - L, lab, sizeof lab);
    nas_rawset *r = (nas_rawset *)img; /* must be reset */
    nas_error err;
    nas_error_clear(&err);
    int rc = nas__read_npy(img, lab, layout, &r, &err);
    if (rc != NAS_OK)
        return nas_fuzz_refused(rc, &err, r == NULL, img, lab, size);
    NAS_FUZZ_CHECK(r && r->n >= 1 && r->c >= 1 && r->c <= NAS_DATA_MAX_C && r->h >= 1 && r->w >= 1 &&
                       r->classes >= 2,
                   "n %d c %d h %d w %d classes %d", r->n, r->c, r->h, r->w, r->classes);
    float sum = 0;
    for (int i = 0; i < r->n; i++) {
        NAS_FUZZ_CHECK(r->labels[i] < r->classes, "label %d of %d", r->labels[i], i);
        for (int c = 0; c < r->c; c++)
            sum += nas_rawset_pixel(r, (size_t)i, c, r->h - 1, r->w - 1) +
                   nas_rawset_pixel(r, (size_t)i, c, 0, 0);
    }
    nas_rawset_destroy(r);
    volatile float sink = sum; /* the reads must happen; NaN pixels are fine */
    (void)sink;
    return 0;
}
