/*
 * tests/unit/test_rng_mix.c - nas_rng_mix64 (base/rng.c), the splitmix64
 * finaliser behind the augmentation seeds, dropout masks and the pool's
 * injected delays. It must give splitmix64's published outputs, and the
 * augmentation it seeds must draw exactly what it drew before the three
 * copies became one (the checksum below was taken from the binary with
 * trainer/augment.c's own mix64), so old runs, checkpoints and resumed
 * trainings see the same images.
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>
#include "nas/trainer.h"

/* FNV-1a of 64 augmented images, from the binary before nas_rng_mix64. */
#define AUGMENT_CHECKSUM 0x0E9027F928704613ull

/* splitmix64 from state 0 (Steele, Lea & Flood 2014; the reference
 * splitmix64.c by S. Vigna gives these first outputs). */
static void test_splitmix64_outputs(void **state)
{
    (void)state;
    static const uint64_t want[] = {0xE220A8397B1DCDAFull, 0x6E789E6AA1B965F4ull,
                                    0x06C45D188009454Full};
    uint64_t s = 0;
    for (int i = 0; i < 3; i++)
        assert_true(nas_rng_mix64(s += NAS_RNG_GOLDEN) == want[i]);
    assert_true(nas_rng_mix64(0) == 0); /* the finaliser alone fixes 0 */
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void test_augment_draws_unchanged(void **state)
{
    (void)state;
    enum { C = 2, H = 7, W = 9 };
    nas_augment a;
    memset(&a, 0, sizeof a);
    a.crop_pad = 3;
    a.flip = 1;
    a.cutout = 4;
    const float black[C] = {-1.0f, -2.0f};
    float img[C * H * W], tmp[C * H * W];
    uint64_t h = 1469598103934665603ull;
    for (uint64_t key = 0; key < 64; key++) {
        for (int i = 0; i < C * H * W; i++)
            img[i] = (float)(i + 1);
        nas_augment_image(&a, img, tmp, C, H, W, black, 0x1234567890ull + key / 8, key * 977);
        h = fnv(h, img, sizeof img);
    }
    assert_true(h == AUGMENT_CHECKSUM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_splitmix64_outputs),
        cmocka_unit_test(test_augment_draws_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
