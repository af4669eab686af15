/* half.h: IEEE 754 binary16 (the float16 dtype, stored as uint16_t) to and from float and double.
 *
 * binary16: 1 sign bit, 5 exponent bits (bias 15), 10 fraction bits. Exponent 0 holds zero and
 * the subnormals (fraction * 2^-24), 31 holds infinity (fraction 0) and NaN.
 *
 * fl_half_to_double / fl_half_to_float are exact (every half is a float). fl_half_from_double
 * rounds to nearest, ties to even, exactly once (a float goes through it widened, which is
 * exact, so no value is rounded twice): magnitudes from 65520 (the midpoint between 65504, the
 * largest half, and 2^16) up become infinity, those up to 2^-25 (half the smallest subnormal)
 * become zero, with the sign kept; NaN stays NaN with its sign and the top 10 bits of its
 * payload (a payload that would be empty becomes the quiet bit), so every half round-trips
 * through float and double unchanged, NaNs included. No state: any thread may call them.
 */
#ifndef FL_HALF_H
#define FL_HALF_H

#include <stdint.h>
#include <string.h>

static inline double fl_half_to_double(uint16_t h) {
    uint64_t sign = (uint64_t)(h >> 15) << 63;
    unsigned exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
    uint64_t bits;
    if (exp == 0) {
        double v = (double)frac * 0x1p-24; /* zero or a subnormal: exact */
        return sign ? -v : v;
    }
    if (exp == 31) bits = sign | 0x7ff0000000000000ull | ((uint64_t)frac << 42);
    else bits = sign | ((uint64_t)(exp - 15 + 1023) << 52) | ((uint64_t)frac << 42);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* A NaN goes bit by bit: the hardware's float <-> double conversions would set its quiet bit. */
static inline float fl_half_to_float(uint16_t h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
        uint32_t bits = ((uint32_t)(h & 0x8000) << 16) | 0x7f800000u | ((uint32_t)(h & 0x3ff) << 13);
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    return (float)fl_half_to_double(h);
}

static inline uint16_t fl_half_from_double(double d) {
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    uint16_t sign = (uint16_t)((bits >> 48) & 0x8000);
    int exp = (int)((bits >> 52) & 0x7ff);
    uint64_t frac = bits & 0xfffffffffffffull;
    if (exp == 0x7ff) {
        if (!frac) return sign | 0x7c00;
        uint16_t f = (uint16_t)(frac >> 42);
        return sign | 0x7c00 | (f ? f : 0x200);
    }
    int e = exp - 1023; /* d = 1.frac * 2^e (a double subnormal is far below half's range) */
    if (e > 15) return sign | 0x7c00;
    if (e < -25) return sign;
    uint64_t m = frac | (1ull << 52), q, rem, halfway;
    uint16_t h;
    if (e >= -14) { /* a normal half: keep 10 of the 52 fraction bits */
        q = frac >> 42;
        rem = frac & ((1ull << 42) - 1);
        halfway = 1ull << 41;
        h = (uint16_t)(sign | ((unsigned)(e + 15) << 10) | q);
    } else { /* a subnormal half: m * 2^(e-52) in units of 2^-24 */
        int shift = 28 - e; /* 43..53 */
        q = m >> shift;
        rem = m & ((1ull << shift) - 1);
        halfway = 1ull << (shift - 1);
        h = (uint16_t)(sign | q);
    }
    /* a carry out of the fraction steps into the next binade (and from 65504 up to infinity) */
    if (rem > halfway || (rem == halfway && (h & 1))) h++;
    return h;
}

static inline uint16_t fl_half_from_float(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x7fffffu)) {
        uint16_t frac = (uint16_t)((bits & 0x7fffffu) >> 13);
        return (uint16_t)(((bits >> 16) & 0x8000) | 0x7c00 | (frac ? frac : 0x200));
    }
    return fl_half_from_double((double)f);
}

#endif
