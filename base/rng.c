/*
 * base/rng.c - PCG-XSH-RR 64/32 (O'Neill 2014), written from the paper's
 * description: 64-bit LCG state, output = rotate(xorshift(state) >> 27,
 * state >> 59).
 */
#include <math.h>
#include "nas/rng.h"

#define NAS__PCG_MULT 6364136223846793005ULL

uint32_t nas_rng_u32(nas_rng *r)
{
    uint64_t old = r->state;
    r->state = old * NAS__PCG_MULT + r->inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31u));
}

void nas_rng_seed(nas_rng *r, uint64_t seed, uint64_t stream)
{
    r->state = 0u;
    r->inc = (stream << 1u) | 1u;
    nas_rng_u32(r);
    r->state += seed;
    nas_rng_u32(r);
}

uint32_t nas_rng_bounded(nas_rng *r, uint32_t bound)
{
    if (bound == 0)
        return 0;
    /* Reject the low values that would make the modulo biased. */
    uint32_t threshold = (uint32_t)(-bound) % bound;
    for (;;) {
        uint32_t x = nas_rng_u32(r);
        if (x >= threshold)
            return x % bound;
    }
}

float nas_rng_uniform(nas_rng *r)
{
    return (float)(nas_rng_u32(r) >> 8) * (1.0f / 16777216.0f);
}

float nas_rng_normal(nas_rng *r)
{
    /* Box-Muller; u1 in (0,1] so log() is finite. */
    double u1 = ((double)(nas_rng_u32(r) >> 8) + 1.0) / 16777216.0;
    double u2 = (double)(nas_rng_u32(r) >> 8) / 16777216.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

void nas_rng_shuffle(nas_rng *r, uint32_t *idx, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = nas_rng_bounded(r, (uint32_t)i);
        uint32_t t = idx[i - 1];
        idx[i - 1] = idx[j];
        idx[j] = t;
    }
}

uint64_t nas_rng_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
