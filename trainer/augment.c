/*
 * trainer/augment.c - image augmentation (issue 16; nas/space.h
 * nas_augment, nas/trainer.h nas_augment_image): random crop with zero
 * padding and horizontal flip (He et al., "Deep Residual Learning",
 * CVPR 2016, 4.2), cutout (DeVries & Taylor, 2017).
 *
 * Every image draws from its own PCG32 generator, seeded from (seed, key)
 * by two splitmix64 steps (nas_rng_mix64; Steele, Lea & Flood, "Fast
 * Splittable Pseudorandom Number Generators", OOPSLA 2014), so the result
 * depends on nothing but the seed and the image's place in the run: loader
 * threads can prepare batches in any order and at any time.
 */
#include <string.h> /* memcpy */
#include "nas/trainer.h"

#define AUG_STREAM 0x61756731ull /* "aug1" */

void nas_augment_image(const nas_augment *a, float *img, float *tmp, int c, int h, int w,
                       const float *black, uint64_t seed, uint64_t key)
{
    if (!a || (a->crop_pad <= 0 && !a->flip && a->cutout <= 0))
        return;
    nas_rng r;
    uint64_t k = nas_rng_mix64(key + NAS_RNG_GOLDEN); /* one splitmix64 step from key */
    nas_rng_seed(&r, nas_rng_mix64((seed ^ k) + NAS_RNG_GOLDEN), AUG_STREAM);
    int dy = 0, dx = 0, flip = 0;
    if (a->crop_pad > 0) {
        dy = (int)nas_rng_bounded(&r, (uint32_t)(2 * a->crop_pad + 1)) - a->crop_pad;
        dx = (int)nas_rng_bounded(&r, (uint32_t)(2 * a->crop_pad + 1)) - a->crop_pad;
    }
    if (a->flip)
        flip = (int)nas_rng_bounded(&r, 2);
    size_t plane = (size_t)h * w;
    if (dy || dx || flip) {
        memcpy(tmp, img, (size_t)c * plane * sizeof *tmp);
        for (int ch = 0; ch < c; ch++) {
            float pad = black ? black[ch] : 0.0f;
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    int sy = y + dy, sx = (flip ? w - 1 - x : x) + dx;
                    img[ch * plane + (size_t)y * w + x] =
                        sy >= 0 && sy < h && sx >= 0 && sx < w ? tmp[ch * plane + (size_t)sy * w + sx]
                                                               : pad;
                }
        }
    }
    if (a->cutout > 0) {
        int cy = (int)nas_rng_bounded(&r, (uint32_t)h), cx = (int)nas_rng_bounded(&r, (uint32_t)w);
        int y0 = cy - a->cutout / 2, x0 = cx - a->cutout / 2;
        int y1 = y0 + a->cutout, x1 = x0 + a->cutout;
        y0 = y0 < 0 ? 0 : y0, x0 = x0 < 0 ? 0 : x0;
        y1 = y1 > h ? h : y1, x1 = x1 > w ? w : x1;
        for (int ch = 0; ch < c; ch++)
            for (int y = y0; y < y1; y++)
                for (int x = x0; x < x1; x++)
                    img[ch * plane + (size_t)y * w + x] = 0.0f;
    }
}
