/* test_half.c: the float16 conversions (runtime/half.h) and the cast kernel between every pair of
 * dtypes with the storage dtypes float16, int8 and uint8.
 *
 * Every one of the 65536 halves round-trips through float and double bit for bit (NaN payloads
 * too) and converts to the value its fields define, computed in float64 arithmetic; the rounding
 * of float and double to half is checked against the nearest half found by float64 arithmetic
 * (ties to even) at every midpoint between two neighbouring halves and its neighbours, and on a
 * spread of a million floats over the whole range. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/half.h"
#include "runtime/kernels/kernels.h"
#include "runtime/tensor.h"
#include "tests/cunit.h"

static uint32_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float ffrom(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The value of half h from its fields, in float64 arithmetic. */
static double half_value(uint16_t h) {
    int e = (h >> 10) & 0x1f, f = h & 0x3ff;
    double v = e == 0 ? ldexp(f, -24) : e == 31 ? (f ? NAN : INFINITY) : ldexp(1024 + f, e - 25);
    return (h & 0x8000) ? -v : v;
}

static void test_every_half(void) {
    int bad = 0;
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t h = (uint16_t)i;
        double d = fl_half_to_double(h), want = half_value(h);
        float f = fl_half_to_float(h);
        if (isnan(want)) {
            bad += !isnan(d) || !isnan(f) || !!signbit(d) != !!(h & 0x8000);
        } else {
            bad += d != want || (double)f != want || !!signbit(d) != !!(h & 0x8000);
        }
        bad += fl_half_from_double(d) != h || fl_half_from_float(f) != h; /* NaN payloads too */
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* The nearest half to x by float64 arithmetic over the finite halves (ties to the even one);
 * beyond 65520 infinity. */
static double halves[31744]; /* the non-negative finite halves, ascending: bits 0..0x7bff */
static uint16_t nearest(double x) {
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double a = fabs(x);
    if (a >= 65520.0) return sign | 0x7c00;
    size_t lo = 0, hi = 0x7bff; /* halves[lo] <= a < halves[hi] or a at the top */
    if (a >= halves[hi]) return sign | (uint16_t)hi;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (halves[mid] <= a) lo = mid;
        else hi = mid;
    }
    double dl = a - halves[lo], dh = halves[hi] - a;
    if (dl < dh || (dl == dh && (lo & 1) == 0)) return sign | (uint16_t)lo;
    return sign | (uint16_t)hi;
}

static void test_rounding(void) {
    for (uint32_t i = 0; i <= 0x7bff; i++) halves[i] = half_value((uint16_t)i);
    int bad = 0;
    /* every midpoint (exact in float: 12 significant bits) and the floats and doubles beside it */
    for (uint32_t i = 0; i < 0x7bff; i++) {
        double m = (halves[i] + halves[i + 1]) / 2;
        for (int s = 0; s < 2; s++) {
            double x = s ? -m : m;
            float xf = (float)x;
            bad += (double)xf != x;
            uint16_t even = (uint16_t)((i & 1) ? i + 1 : i) | (s ? 0x8000 : 0);
            bad += fl_half_from_float(xf) != even || fl_half_from_double(x) != even;
            float up = nextafterf(xf, INFINITY), down = nextafterf(xf, -INFINITY);
            bad += fl_half_from_float(up) != nearest(up) || fl_half_from_float(down) != nearest(down);
            bad += fl_half_from_double(nextafter(x, INFINITY)) != nearest(nextafter(x, INFINITY));
            bad += fl_half_from_double(nextafter(x, -INFINITY)) != nearest(nextafter(x, -INFINITY));
            bad += nearest(x) != even;
        }
    }
    /* a million floats over the whole range (every 4099th bit pattern), NaNs aside */
    for (uint64_t u = 0; u < (1ull << 32); u += 4099) {
        float x = ffrom((uint32_t)u);
        if (isnan(x)) continue;
        bad += fl_half_from_float(x) != nearest(x);
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* the edges: the overflow threshold, the smallest subnormal, infinities, NaN, signed zero */
    CU_ASSERT_EQUAL(fl_half_from_float(65504.0f), 0x7bff);
    CU_ASSERT_EQUAL(fl_half_from_float(nextafterf(65520.0f, 0)), 0x7bff);
    CU_ASSERT_EQUAL(fl_half_from_float(65520.0f), 0x7c00);
    CU_ASSERT_EQUAL(fl_half_from_double(-1e300), 0xfc00);
    CU_ASSERT_EQUAL(fl_half_from_double(0x1p-25), 0x0000);                       /* tie to even 0 */
    CU_ASSERT_EQUAL(fl_half_from_double(nextafter(0x1p-25, 1)), 0x0001);
    CU_ASSERT_EQUAL(fl_half_from_double(0x3p-25), 0x0002);                       /* 1.5 units: even 2 */
    CU_ASSERT_EQUAL(fl_half_from_double(-0x1p-30), 0x8000);
    CU_ASSERT_EQUAL(fl_half_from_float(ffrom(0x00000001u)), 0x0000);             /* float subnormal */
    CU_ASSERT_EQUAL(fl_half_from_float(nextafterf(0x1p-14f, 0)), 0x0400);       /* rounds up to the smallest normal */
    CU_ASSERT_EQUAL(fl_half_from_float(ffrom(0x7fc00000u)), 0x7e00);
    CU_ASSERT_EQUAL(fl_half_from_float(ffrom(0xff800001u)), 0xfe00);             /* a payload below half's bits: quiet */
    CU_ASSERT_EQUAL(fbits(fl_half_to_float(0x7c01)), 0x7f802000u);
}

/* A 1-D tensor of dtype holding vals (converted by fl_tensor_set). */
static void vec(FlTensor *t, FlDType dt, const double *vals, int64_t n) {
    FlErr e = {{0}};
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, t, dt, 1, &n), FL_OK);
    for (int64_t i = 0; i < n; i++) fl_tensor_set(t, i, vals[i]);
}

/* cast to and from the storage dtypes: float to int8/uint8 truncates and saturates (NaN -> 0),
 * an int to a narrower int wraps modulo 2^8, to float16 rounds to nearest even. */
static void test_cast_storage(void) {
    static const double src[] = {0, 1.75, -1.75, 127.9, -128.9, 300, -300, 65519, NAN};
    enum { N = sizeof src / sizeof src[0] };
    static const double to_i8[N] = {0, 1, -1, 127, -128, 127, -128, 127, 0};
    static const double to_u8[N] = {0, 1, 0, 127, 0, 255, 0, 255, 0};
    FlErr e = {{0}};
    FlTensor x = FL_TENSOR_INIT, o = FL_TENSOR_INIT, back = FL_TENSOR_INIT;
    const FlDType floats[] = {FL_DT_FLOAT32, FL_DT_FLOAT64};
    for (int k = 0; k < 2; k++) {
        vec(&x, floats[k], src, N);
        CU_ASSERT_EQUAL_FATAL(fl_kernel_cast(&e, &x, FL_DT_INT8, &o), FL_OK);
        for (int i = 0; i < N; i++) CU_ASSERT_EQUAL(((const int8_t *)fl_tensor_data(&o))[i], to_i8[i]);
        CU_ASSERT_EQUAL_FATAL(fl_kernel_cast(&e, &x, FL_DT_UINT8, &o), FL_OK);
        for (int i = 0; i < N; i++) CU_ASSERT_EQUAL(((const uint8_t *)fl_tensor_data(&o))[i], to_u8[i]);
        CU_ASSERT_EQUAL_FATAL(fl_kernel_cast(&e, &x, FL_DT_FLOAT16, &o), FL_OK);
        for (int i = 0; i < N; i++)
            CU_ASSERT_EQUAL(((const uint16_t *)fl_tensor_data(&o))[i], fl_half_from_double(src[i]));
        /* and back from float16: the half's value, in float and in each int rule */
        CU_ASSERT_EQUAL_FATAL(fl_kernel_cast(&e, &o, floats[k], &back), FL_OK);
        for (int i = 0; i < N - 1; i++)
            CU_ASSERT_EQUAL(fl_tensor_get(&back, i), fl_half_to_double(fl_half_from_double(src[i])));
        CU_ASSERT(isnan(fl_tensor_get(&back, N - 1)));
        CU_ASSERT_EQUAL_FATAL(fl_kernel_cast(&e, &o, FL_DT_INT8, &back), FL_OK);
        for (int i = 0; i < N; i++) CU_ASSERT_EQUAL(fl_tensor_get(&back, i), to_i8[i]);
        fl_tensor_fini(&o);
        fl_tensor_fini(&back);
        fl_tensor_fini(&x);
    }
    /* ints to int8 / uint8 wrap as C's conversion (Fluid's static_cast) does */
    static const double ints[] = {300, -300, 255, 128, -129};
    static const double wrap_i8[] = {44, -44, -1, -128, 127}, wrap_u8[] = {44, 212, 255, 128, 127};
    const FlDType its[] = {FL_DT_INT32, FL_DT_INT64};
    for (int k = 0; k < 2; k++) {
        vec(&x, its[k], ints, 5);
        CU_ASSERT_EQUAL_FATAL(fl_kernel_cast(&e, &x, FL_DT_INT8, &o), FL_OK);
        for (int i = 0; i < 5; i++) CU_ASSERT_EQUAL(fl_tensor_get(&o, i), wrap_i8[i]);
        CU_ASSERT_EQUAL_FATAL(fl_kernel_cast(&e, &x, FL_DT_UINT8, &o), FL_OK);
        for (int i = 0; i < 5; i++) CU_ASSERT_EQUAL(fl_tensor_get(&o, i), wrap_u8[i]);
        fl_tensor_fini(&o);
        fl_tensor_fini(&x);
    }
    /* every int8 and uint8 value through every dtype and back is itself */
    const FlDType all[] = {FL_DT_FLOAT32, FL_DT_FLOAT64, FL_DT_INT32, FL_DT_INT64, FL_DT_FLOAT16, FL_DT_INT8,
                           FL_DT_UINT8};
    const FlDType small[] = {FL_DT_INT8, FL_DT_UINT8};
    double v[256];
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < 256; i++) v[i] = s ? i : i - 128;
        vec(&x, small[s], v, 256);
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
            if ((all[k] == FL_DT_INT8 && s == 1) || (all[k] == FL_DT_UINT8 && s == 0)) continue;
            CU_ASSERT_EQUAL_FATAL(fl_kernel_cast(&e, &x, all[k], &o), FL_OK);
            CU_ASSERT_EQUAL_FATAL(fl_kernel_cast(&e, &o, small[s], &back), FL_OK);
            CU_ASSERT(memcmp(fl_tensor_data(&back), fl_tensor_data(&x), 256) == 0);
            for (int i = 0; i < 256; i++) CU_ASSERT_EQUAL(fl_tensor_get(&o, i), v[i]);
            fl_tensor_fini(&o);
            fl_tensor_fini(&back);
        }
        fl_tensor_fini(&x);
    }
    /* to bool: != 0 */
    static const double b[] = {0, -1, 0.5};
    vec(&x, FL_DT_FLOAT16, b, 3);
    CU_ASSERT_EQUAL_FATAL(fl_kernel_cast(&e, &x, FL_DT_BOOL, &o), FL_OK);
    CU_ASSERT(fl_tensor_get(&o, 0) == 0 && fl_tensor_get(&o, 1) == 1 && fl_tensor_get(&o, 2) == 1);
    fl_tensor_fini(&o);
    fl_tensor_fini(&x);
}

/* fill_constant of the storage dtypes: the value converted by the same rules. */
static void test_fill_storage(void) {
    FlErr e = {{0}};
    FlTensor o = FL_TENSOR_INIT;
    int64_t n = 3;
    CU_ASSERT_EQUAL_FATAL(fl_kernel_fill_constant(&e, 1, &n, 0.1, NULL, FL_DT_FLOAT16, &o), FL_OK);
    for (int i = 0; i < 3; i++) CU_ASSERT_EQUAL(((const uint16_t *)fl_tensor_data(&o))[i], 0x2e66);
    CU_ASSERT_EQUAL_FATAL(fl_kernel_fill_constant(&e, 1, &n, -1000, NULL, FL_DT_INT8, &o), FL_OK);
    CU_ASSERT_EQUAL(fl_tensor_get(&o, 2), -128);
    const int64_t big = 1000;
    CU_ASSERT_EQUAL_FATAL(fl_kernel_fill_constant(&e, 1, &n, 0, &big, FL_DT_UINT8, &o), FL_OK);
    CU_ASSERT_EQUAL(fl_tensor_get(&o, 0), 255);
    fl_tensor_fini(&o);
}

int main(void) {
    static const FlTestCase cases[] = {
        {"every_half", test_every_half},
        {"rounding", test_rounding},
        {"cast_storage", test_cast_storage},
        {"fill_storage", test_fill_storage},
    };
    return fl_test_run("half", NULL, NULL, cases, sizeof cases / sizeof cases[0]);
}
