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
