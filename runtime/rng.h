/* rng.h: a deterministic, platform-independent pseudo-random generator.
 *
 * xoshiro256** (Blackman & Vigna) seeded through splitmix64. The state is a plain value owned by
 * the caller: there are no globals, so any number of generators may run on any threads at once,
 * one generator per thread at a time. The same seed gives bit-identical sequences on every
 * platform: integers and uniforms use integer arithmetic and exact conversions; the Gaussian uses
 * Box-Muller with this module's own log/sin/cos (plain double arithmetic, compiled without
 * floating-point contraction), not libm's, whose last bits differ between libraries.
 *
 *     FlRng r;
 *     fl_rng_init(&r, 42);
 *     double u = fl_rng_uniform(&r);     // [0, 1)
 *     double g = fl_rng_gaussian(&r);    // N(0, 1)
 */
#ifndef FL_RNG_H
#define FL_RNG_H

#include <stdint.h>

typedef struct FlRng {
    uint64_t s[4];
    double spare; /* the second Box-Muller value, valid when has_spare */
    int has_spare;
} FlRng;

/* Seeds the generator; every seed (0 included) gives a valid, distinct stream. */
void fl_rng_init(FlRng *r, uint64_t seed);
/* Seeds from two words (e.g. an op's seed and a step counter) mixed together. */
void fl_rng_init2(FlRng *r, uint64_t seed, uint64_t stream);
uint64_t fl_rng_next(FlRng *r); /* 64 random bits */
double fl_rng_uniform(FlRng *r); /* uniform in [0, 1), 53 random bits */
float fl_rng_uniform_f32(FlRng *r); /* uniform in [0, 1), 24 random bits */
double fl_rng_gaussian(FlRng *r); /* standard normal (Box-Muller, pairs cached) */
/* splitmix64 step: a good 64-bit mixer, also useful for hashing seeds. */
uint64_t fl_rng_splitmix64(uint64_t *x);

/* ---- counter-based draws (the random initialisers) ----
 *
 * Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3",
 * SC'11): a keyed bijection of a 128-bit counter, so the value at counter c needs no state and no
 * draw before it. The random fill ops take element i of a tensor (row-major, counted over the
 * whole tensor) from the counter i alone, so any slice of rows is computed on its own and equals
 * the same rows of the whole tensor. These functions are pure; any thread may call them.
 *
 * Layout (part of the IR format, pinned by tests/runtime/kernels/test_philox_fill.c): key = the
 * op's effective seed (low word, high word); counter = (p low word, p high word, attempt, 0)
 * where p = i / 2 is the pair of elements i belongs to. One Philox block gives two 64-bit words
 * (words 0,1 and 2,3, low word first): uniform element i takes word i % 2 of block p; a
 * Gaussian pair takes u1 from word 0 and u2 from word 1, element 2p gets r cos(2 pi u2), element
 * 2p+1 gets r sin(2 pi u2) with r = sqrt(-2 log(1 - u1)). The truncated Gaussian of element i
 * takes its component of attempts 0, 1, ... (the counter's third word) until |x| <= 2, at most
 * FL_RNG_TRUNC_ATTEMPTS of them (see fl_rng_counter_truncated). */
#define FL_RNG_TRUNC_ATTEMPTS 16

/* out = Philox4x32-10(ctr, key). */
void fl_rng_philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
/* Element i of a uniform [0, 1) tensor drawn with `seed` (53 random bits). */
double fl_rng_counter_uniform(uint64_t seed, uint64_t i);
/* Element i of a standard normal tensor drawn with `seed` (Box-Muller on pair i / 2). */
double fl_rng_counter_gaussian(uint64_t seed, uint64_t i);
/* Element i of a standard normal tensor truncated to [-2, 2] (Fluid's truncated_gaussian_random
 * bounds, in std units): the first attempt whose draw lies in the bounds. The chance that all
 * FL_RNG_TRUNC_ATTEMPTS miss is 0.0455^16 < 4e-22; the element is then 0 (the mean). */
double fl_rng_counter_truncated(uint64_t seed, uint64_t i);

#endif
