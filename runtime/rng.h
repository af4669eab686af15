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

#endif
