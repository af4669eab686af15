/* rng.c: splitmix64, xoshiro256**, and a Box-Muller Gaussian with portable transcendental
 * functions. The log/sin/cos below use only +, -, *, / and exact scaling (frexp/ldexp), so their
 * results are identical on every IEEE-754 platform as long as the compiler does not contract
 * a*b+c into fused multiply-adds: the build passes -ffp-contract=off for this file. Accuracy is a
 * few ulps, which is all a random generator needs; determinism is what matters here. */
#include "runtime/rng.h"

#include <math.h>

uint64_t fl_rng_splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void fl_rng_init(FlRng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = fl_rng_splitmix64(&x);
    r->spare = 0;
    r->has_spare = 0;
}

void fl_rng_init2(FlRng *r, uint64_t seed, uint64_t stream) {
    uint64_t x = stream;
    uint64_t h = fl_rng_splitmix64(&x);
    fl_rng_init(r, seed ^ h);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t fl_rng_next(FlRng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double fl_rng_uniform(FlRng *r) { return (double)(fl_rng_next(r) >> 11) * 0x1.0p-53; }

float fl_rng_uniform_f32(FlRng *r) { return (float)(fl_rng_next(r) >> 40) * 0x1.0p-24f; }

/* log(x) for x > 0: x = m * 2^k with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s),
 * s = (m-1)/(m+1), |s| < 0.1716, by its series (s^2 < 0.0295: 13 terms reach 1e-20). */
static double port_log(double x) {
    int k;
    double m = frexp(x, &k); /* exact: m in [0.5, 1) */
    if (m < 0.70710678118654752440) {
        m *= 2;
        k -= 1;
    }
    double s = (m - 1) / (m + 1), s2 = s * s, term = s, sum = 0;
    for (int i = 1; i <= 27; i += 2) {
        sum += term / i;
        term *= s2;
    }
    return 2 * sum + k * 0.69314718055994530942;
}

/* sin and cos of 2*pi*u for u in [0, 1): reduce by octant (exact in binary), then Taylor series
 * on [0, pi/4]. */
static void port_sincos2pi(double u, double *sn, double *cs) {
    double v = u * 8;
    int oct = (int)v;
    if (oct > 7) oct = 7;
    double f = v - oct; /* [0, 1) */
    if (oct & 1) f = 1 - f; /* reflect so the angle grows toward the octant's even edge */
    double a = f * 0.78539816339744830962, a2 = a * a;
    double s = 0, c = 0, ts = a, tc = 1;
    for (int i = 1; i <= 21; i += 2) {
        s += ts;
        c += tc;
        ts *= -a2 / ((i + 1) * (i + 2));
        tc *= -a2 / (i * (i + 1));
    }
    /* angle = oct*pi/4 + f*pi/4 (even oct) or (oct+1)*pi/4 - f*pi/4 (odd oct) */
    double rs, rc;
    switch (oct) {
    case 0: rs = s, rc = c; break;          /* a */
    case 1: rs = c, rc = s; break;          /* pi/2 - a */
    case 2: rs = c, rc = -s; break;         /* pi/2 + a */
    case 3: rs = s, rc = -c; break;         /* pi - a */
    case 4: rs = -s, rc = -c; break;        /* pi + a */
    case 5: rs = -c, rc = -s; break;        /* 3pi/2 - a */
    case 6: rs = -c, rc = s; break;         /* 3pi/2 + a */
    default: rs = -s, rc = c; break;        /* 2pi - a */
    }
    *sn = rs;
    *cs = rc;
}

double fl_rng_gaussian(FlRng *r) {
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u1 = 1.0 - fl_rng_uniform(r); /* (0, 1]: log is finite */
    double u2 = fl_rng_uniform(r);
    double rad = sqrt(-2 * port_log(u1)); /* IEEE sqrt is correctly rounded everywhere */
    double sn, cs;
    port_sincos2pi(u2, &sn, &cs);
    r->spare = rad * sn;
    r->has_spare = 1;
    return rad * cs;
}

/* ---- Philox4x32-10 ---- */

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void fl_rng_philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* The two 64-bit words of block (p, attempt) under seed. */
static void counter_words(uint64_t seed, uint64_t p, uint32_t attempt, uint64_t w[2]) {
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    const uint32_t ctr[4] = {(uint32_t)p, (uint32_t)(p >> 32), attempt, 0};
    uint32_t o[4];
    fl_rng_philox(ctr, key, o);
    w[0] = (uint64_t)o[0] | (uint64_t)o[1] << 32;
    w[1] = (uint64_t)o[2] | (uint64_t)o[3] << 32;
}

static double unit53(uint64_t w) { return (double)(w >> 11) * 0x1.0p-53; }

double fl_rng_counter_uniform(uint64_t seed, uint64_t i) {
    uint64_t w[2];
    counter_words(seed, i >> 1, 0, w);
    return unit53(w[i & 1]);
}

/* Component i % 2 of the Box-Muller pair of block (i / 2, attempt). */
static double pair_gaussian(uint64_t seed, uint64_t i, uint32_t attempt) {
    uint64_t w[2];
    counter_words(seed, i >> 1, attempt, w);
    double rad = sqrt(-2 * port_log(1.0 - unit53(w[0]))); /* 1 - u in (0, 1]: log is finite */
    double sn, cs;
    port_sincos2pi(unit53(w[1]), &sn, &cs);
    return (i & 1) ? rad * sn : rad * cs;
}

double fl_rng_counter_gaussian(uint64_t seed, uint64_t i) { return pair_gaussian(seed, i, 0); }

double fl_rng_counter_truncated(uint64_t seed, uint64_t i) {
    for (uint32_t a = 0; a < FL_RNG_TRUNC_ATTEMPTS; a++) {
        double g = pair_gaussian(seed, i, a);
        if (g >= -2.0 && g <= 2.0) return g;
    }
    return 0.0;
}
