/*
 * nas/rng.h - PCG32, the project's only random number generator.
 *
 * Algorithm: PCG-XSH-RR 64/32 from M. E. O'Neill, "PCG: A Family of Simple
 * Fast Space-Efficient Statistically Good Algorithms for Random Number
 * Generation", 2014. A generator is a plain value owned by its user; there
 * is no global generator. Same seed and stream give the same sequence on
 * every platform.
 */
#ifndef NAS_RNG_H
#define NAS_RNG_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nas_rng {
    uint64_t state;
    uint64_t inc; /* always odd */
} nas_rng;

/* Seed a generator; `stream` selects one of 2^63 independent sequences. */
void nas_rng_seed(nas_rng *r, uint64_t seed, uint64_t stream);

/* Next 32 uniformly distributed bits. */
uint32_t nas_rng_u32(nas_rng *r);

/* Uniform integer in [0, bound), without modulo bias (O'Neill's method).
 * bound == 0 returns 0. */
uint32_t nas_rng_bounded(nas_rng *r, uint32_t bound);

/* Uniform float in [0, 1) with 24 random bits. */
float nas_rng_uniform(nas_rng *r);

/* Standard normal deviate (Box-Muller; one of the pair is discarded so the
 * generator carries no hidden state). */
float nas_rng_normal(nas_rng *r);

/* Fisher-Yates shuffle of idx[0..n). */
void nas_rng_shuffle(nas_rng *r, uint32_t *idx, size_t n);

/* 2^64 divided by the golden ratio, odd: splitmix64's increment, also used
 * to spread counters (seed + i * NAS_RNG_GOLDEN) before nas_rng_mix64. */
#define NAS_RNG_GOLDEN 0x9E3779B97F4A7C15ull

/* The splitmix64 finaliser (G. L. Steele, D. Lea & C. H. Flood, "Fast
 * Splittable Pseudorandom Number Generators", OOPSLA 2014; the constants
 * of Java 8's SplittableRandom): a bijective, well-mixed hash of a 64-bit
 * word. Not a generator: for seeds derived from several numbers (a dropout
 * step, an augmented image, an injected delay). One splitmix64 output is
 * nas_rng_mix64(state += NAS_RNG_GOLDEN). */
uint64_t nas_rng_mix64(uint64_t z);

#ifdef __cplusplus
}
#endif
#endif /* NAS_RNG_H */
