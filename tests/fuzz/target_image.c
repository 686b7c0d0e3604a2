/*
 * tests/fuzz/target_image.c - one image file through the folder reader's
 * decoder nas__image_decode (trainer/data_image.c: libpng or libjpeg-turbo,
 * chosen by the signature), then nas__image_resize to 5 x 7. Input: the
 * file's bytes. The harness caps images at 2^22 pixels (the reader allows
 * 2^26) so the fuzzer does not spend its time filling huge blank images.
 * Promises checked: a failure is an error code with a message naming the
 * file and no pixels, never NAS_ENOMEM for an input under 1 MiB; a
 * success is 1 or 3 channels of h x w pixels within the limits, every
 * byte readable (ASan checks the reads), and the resize stays in bounds.
 */
#include <stdlib.h>
#include <string.h>
#include "trainer/data_impl.h"
#include "fuzz.h"

#define FUZZ_MAX_PIXELS (1L << 22)

int nas_fuzz_image(const uint8_t *data, size_t size)
{
    nas__image im;
    memset(&im, 0xA5, sizeof im); /* must be reset */
    nas_error err;
    nas_error_clear(&err);
    int rc = nas__image_decode(data, size, "fuzz.img", FUZZ_MAX_PIXELS, &im, &err);
    if (rc != NAS_OK)
        return nas_fuzz_refused(rc, &err, im.px == NULL, "fuzz.img", NULL, size);
    NAS_FUZZ_CHECK(im.px && (im.c == 1 || im.c == 3) && im.h >= 1 && im.w >= 1 &&
                       (long)im.h * im.w <= FUZZ_MAX_PIXELS,
                   "c %d h %d w %d", im.c, im.h, im.w);
    unsigned sum = 0;
    for (size_t k = 0; k < (size_t)im.h * im.w * im.c; k++)
        sum += im.px[k];
    uint8_t small[5 * 7 * 3];
    nas__image_resize(im.px, im.h, im.w, im.c, small, 5, 7);
    free(im.px);
    return (int)(sum & 0) + (small[0] & 0);
}
