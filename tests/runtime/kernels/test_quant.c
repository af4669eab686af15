/* test_quant.c: the simulated quantization kernels (runtime/kernels/quant.c) against values
 * worked by hand and a float64 reference of Fluid's formulas: the int grid, bit_length's edges,
 * an all-zero input, a weight quantized in place, the range and moving-average scale rules step
 * by step, dequantization's round trip, and the errors. */
#include "tests/runtime/kernels/kt.h"
#include "runtime/kernels/kernels_quant.h"

static FlQuantAttrs attrs(int bits) { return (FlQuantAttrs){.bit_length = bits, .window_size = 3, .moving_rate = 0.9}; }

/* round(clip(x, -s, s) * (2^(bits-1) - 1) / s), 0 when s is 0: the reference, in double */
static double qref(double x, double s, int bits) {
    if (s == 0) return 0;
    double b = (double)((1 << (bits - 1)) - 1), v = fmin(fmax(x, -s), s);
    return round(v * b / s);
}

static void test_abs_max_by_hand(void) {
    FlQuantAttrs a = attrs(8);
    FlTensor x = KT_T(FL_DT_FLOAT32, KT_SHAPE(2, 2), 0.5, -1.0, 0.25, 0.004), o = FL_TENSOR_INIT, s = FL_TENSOR_INIT;
    KT_OK(fl_kernel_fake_quantize_abs_max(KE, &x, &a, &o, &s));
    KT_SHAPE_IS(&o, KT_SHAPE(2, 2));
    KT_VALUES(&o, 0, 64, -127, 32, 1); /* 63.5 rounds away from 0 */
    KT_SHAPE_IS(&s, KT_SHAPE(1));
    KT_VALUES(&s, 0, 1.0);
    a.bit_length = 2; /* bin_cnt 1: the signs */
    KT_OK(fl_kernel_fake_quantize_abs_max(KE, &x, &a, &o, &s));
    KT_VALUES(&o, 0, 1, -1, 0, 0);
    a.bit_length = 1; /* bin_cnt 0: everything 0 */
    KT_OK(fl_kernel_fake_quantize_abs_max(KE, &x, &a, &o, &s));
    KT_VALUES(&o, 0, 0, 0, 0, 0);
    a.bit_length = 16;
    KT_OK(fl_kernel_fake_quantize_abs_max(KE, &x, &a, &o, &s));
    KT_VALUES(&o, 0, 16384, -32767, 8192, 131); /* 16383.5 -> 16384; 0.004 * 32767 = 131.07 */
    FlTensor all[] = {x, o, s};
    kt_fini(3, all);
}

/* Random tensors of both float dtypes against the reference; the grid's size per bit length. */
static void test_abs_max_reference(void) {
    FlRng r;
    fl_rng_init(&r, 7);
    int bits[] = {3, 5, 8};
    for (int d = 0; d < 2; d++)
        for (size_t k = 0; k < FL_ARRAY_LEN(bits); k++) {
            FlDType dt = d ? FL_DT_FLOAT64 : FL_DT_FLOAT32;
            FlQuantAttrs a = attrs(bits[k]);
            FlTensor x = kt_rand(&r, dt, 3, (int64_t[]){3, 4, 5}, -2.5, 1.5), o = FL_TENSOR_INIT, s = FL_TENSOR_INIT;
            KT_OK(fl_kernel_fake_quantize_abs_max(KE, &x, &a, &o, &s));
            double m = 0;
            for (int64_t i = 0; i < 60; i++) m = fmax(m, fabs(fl_tensor_get(&x, i)));
            CU_ASSERT_DOUBLE_EQUAL(fl_tensor_get(&s, 0), m, 0);
            double bin = (double)((1 << (bits[k] - 1)) - 1);
            int64_t ends = 0;
            for (int64_t i = 0; i < 60; i++) {
                double q = fl_tensor_get(&o, i);
                CU_ASSERT_EQUAL(q, qref(fl_tensor_get(&x, i), m, bits[k]));
                CU_ASSERT(fabs(q) <= bin && q == round(q));
                ends += fabs(q) == bin;
            }
            CU_ASSERT(ends >= 1); /* max|x| lands on the grid's end */
            FlTensor all[] = {x, o, s};
            kt_fini(3, all);
        }
}

/* All zeros: scale 0 and a zero output, no NaN (Fluid 1.5 divides by the zero scale). */
static void test_all_zero(void) {
    FlQuantAttrs a = attrs(8);
    FlTensor x = KT_T(FL_DT_FLOAT32, KT_SHAPE(3), 0, 0, -0.0), o = FL_TENSOR_INIT, s = FL_TENSOR_INIT;
    KT_OK(fl_kernel_fake_quantize_abs_max(KE, &x, &a, &o, &s));
    KT_VALUES(&o, 0, 0, 0, 0);
    KT_VALUES(&s, 0, 0);
    FlTensor d = FL_TENSOR_INIT;
    KT_OK(fl_kernel_fake_dequantize_max_abs(KE, &o, &s, 127, &d));
    KT_VALUES(&d, 0, 0, 0, 0);
    FlTensor all[] = {x, o, s, d};
    kt_fini(4, all);
}

/* A weight quantized in place (Out is X's struct), then dequantized: within half a step. */
static void test_in_place_round_trip(void) {
    FlRng r;
    fl_rng_init(&r, 11);
    FlQuantAttrs a = attrs(8);
    FlTensor w = kt_rand(&r, FL_DT_FLOAT32, 2, (int64_t[]){4, 6}, -0.3, 0.7), keep = FL_TENSOR_INIT;
    FlTensor s = FL_TENSOR_INIT, d = FL_TENSOR_INIT;
    KT_OK(fl_tensor_copy(KE, &keep, &w));
    KT_OK(fl_kernel_fake_quantize_abs_max(KE, &w, &a, &w, &s));
    double m = fl_tensor_get(&s, 0);
    for (int64_t i = 0; i < 24; i++) CU_ASSERT_EQUAL(fl_tensor_get(&w, i), qref(fl_tensor_get(&keep, i), m, 8));
    KT_OK(fl_kernel_fake_dequantize_max_abs(KE, &w, &s, 127, &d));
    for (int64_t i = 0; i < 24; i++) CU_ASSERT(fabs(fl_tensor_get(&d, i) - fl_tensor_get(&keep, i)) <= m / 254 + 1e-7);
    FlTensor all[] = {w, keep, s, d};
    kt_fini(4, all);
}

/* The window rule step by step (window 3): the scale grows with a larger max, stays while the
 * value leaving the window is not the scale, and is recomputed from the window when it is. */
static void test_range_abs_max(void) {
    FlQuantAttrs a = attrs(8);
    double maxes[] = {0.5, 2.0, 1.0, 0.25, 0.75, 0.5};
    /* the scales: 0.5 (above the first 0.001), 2, 2, 2 (step 3 replaces slot 0's 0.5); step 4 replaces
     * slot 1's 2.0, the scale: the window [0.25, 0.75, 1.0] gives 1.0; step 5 replaces slot 2's 1.0, the
     * scale again: [0.25, 0.75, 0.5] gives 0.75 */
    double want[] = {0.5, 2.0, 2.0, 2.0, 1.0, 0.75};
    FlTensor scale = KT_T(FL_DT_FLOAT32, KT_SHAPE(1), 0.001), win = KT_T(FL_DT_FLOAT32, KT_SHAPE(3), 0, 0, 0);
    for (int step = 0; step < 6; step++) {
        FlTensor x = KT_T(FL_DT_FLOAT32, KT_SHAPE(2), maxes[step], -maxes[step] / 2), o = FL_TENSOR_INIT;
        FlTensor it = KT_T(FL_DT_INT64, KT_SHAPE(1), (double)step);
        KT_OK(fl_kernel_fake_quantize_range_abs_max(KE, &x, &scale, &it, &win, &a, &o, &scale, &win));
        CU_ASSERT_DOUBLE_EQUAL(fl_tensor_get(&scale, 0), want[step], 1e-7);
        CU_ASSERT_DOUBLE_EQUAL(fl_tensor_get(&win, step % 3), maxes[step], 1e-7);
        CU_ASSERT_EQUAL(fl_tensor_get(&o, 0), qref(maxes[step], want[step], 8));
        CU_ASSERT_EQUAL(fl_tensor_get(&o, 1), qref(-maxes[step] / 2, want[step], 8));
        FlTensor all[] = {x, o, it};
        kt_fini(3, all);
    }
    /* is_test: the given scale, values beyond it clipped; the window untouched */
    a.is_test = true;
    FlTensor x = KT_T(FL_DT_FLOAT32, KT_SHAPE(3), 1.5, -0.375, 0.75), o = FL_TENSOR_INIT, s = FL_TENSOR_INIT;
    KT_OK(fl_kernel_fake_quantize_range_abs_max(KE, &x, &scale, NULL, NULL, &a, &o, &s, NULL));
    KT_VALUES(&o, 0, 127, -64, 127); /* scale 0.75: -63.5 -> -64 */
    FlTensor all[] = {scale, win, x, o, s};
    kt_fini(5, all);
}

static void test_moving_average(void) {
    FlQuantAttrs a = attrs(8);
    FlTensor scale = KT_T(FL_DT_FLOAT64, KT_SHAPE(1), 0.001), accum = KT_T(FL_DT_FLOAT64, KT_SHAPE(1), 1);
    FlTensor state = KT_T(FL_DT_FLOAT64, KT_SHAPE(1), 1);
    double st = 1, ac = 1, maxes[] = {2.0, 0.5, 4.0};
    for (int step = 0; step < 3; step++) {
        FlTensor x = KT_T(FL_DT_FLOAT64, KT_SHAPE(2), -maxes[step], 0.3), o = FL_TENSOR_INIT;
        KT_OK(fl_kernel_fake_quantize_moving_average_abs_max(KE, &x, &scale, &accum, &state, &a, &o, &scale, &state,
                                                             &accum));
        st = 0.9 * st + 1;
        ac = 0.9 * ac + maxes[step];
        CU_ASSERT_DOUBLE_EQUAL(fl_tensor_get(&state, 0), st, 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(fl_tensor_get(&accum, 0), ac, 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(fl_tensor_get(&scale, 0), ac / st, 1e-12);
        CU_ASSERT_EQUAL(fl_tensor_get(&o, 0), qref(-maxes[step], ac / st, 8));
        CU_ASSERT_EQUAL(fl_tensor_get(&o, 1), qref(0.3, ac / st, 8));
        FlTensor all[] = {x, o};
        kt_fini(2, all);
    }
    FlTensor all[] = {scale, accum, state};
    kt_fini(3, all);
}

static void test_dequantize(void) {
    FlTensor q = KT_T(FL_DT_FLOAT32, KT_SHAPE(2, 2), 127, -64, 0, 3), s = KT_T(FL_DT_FLOAT32, KT_SHAPE(1), 0.5);
    FlTensor o = FL_TENSOR_INIT;
    KT_OK(fl_kernel_fake_dequantize_max_abs(KE, &q, &s, 127, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(2, 2));
    KT_VALUES(&o, 1e-7, 0.5, -32.0 / 127, 0, 1.5 / 127);
    FlTensor all[] = {q, s, o};
    kt_fini(3, all);
}

static void test_errors(void) {
    FlQuantAttrs a = attrs(17);
    FlTensor x = KT_T(FL_DT_FLOAT32, KT_SHAPE(2), 1, 2), o = FL_TENSOR_INIT, s = FL_TENSOR_INIT;
    KT_ERR(fl_kernel_fake_quantize_abs_max(KE, &x, &a, &o, &s), "fake_quantize_abs_max: bit_length must be 1 to 16, found 17");
    FlTensor two = KT_T(FL_DT_FLOAT32, KT_SHAPE(2), 1, 2);
    KT_ERR(fl_kernel_fake_dequantize_max_abs(KE, &x, &two, 127, &o), "fake_dequantize_max_abs: Scale [2] must hold one value");
    FlTensor one = KT_T(FL_DT_FLOAT32, KT_SHAPE(1), 1);
    KT_ERR(fl_kernel_fake_dequantize_max_abs(KE, &x, &one, 0, &o), "fake_dequantize_max_abs: max_range must be > 0, found 0");
    FlTensor neg = KT_T(FL_DT_FLOAT32, KT_SHAPE(1), -1);
    a.bit_length = 8;
    a.is_test = true;
    KT_ERR(fl_kernel_fake_quantize_range_abs_max(KE, &x, &neg, NULL, NULL, &a, &o, &s, NULL),
           "fake_quantize_range_abs_max: the scale is -1; a finite value >= 0 expected");
    a.is_test = false;
    FlTensor win = KT_T(FL_DT_FLOAT32, KT_SHAPE(2), 0, 0), it = KT_T(FL_DT_INT64, KT_SHAPE(1), 1);
    KT_ERR(fl_kernel_fake_quantize_range_abs_max(KE, &x, &one, &it, &win, &a, &o, &s, &win),
           "fake_quantize_range_abs_max: InScales [2] must be [3] (window_size)");
    CU_ASSERT(!fl_tensor_has_data(&o) && !fl_tensor_has_data(&s));
    FlTensor all[] = {x, two, one, neg, win, it};
    kt_fini(6, all);
}

int main(void) {
    KtCase cases[] = {KT_TEST(test_abs_max_by_hand), KT_TEST(test_abs_max_reference), KT_TEST(test_all_zero),
                      KT_TEST(test_in_place_round_trip), KT_TEST(test_range_abs_max), KT_TEST(test_moving_average),
                      KT_TEST(test_dequantize), KT_TEST(test_errors)};
    return kt_run("quant", cases, (int)FL_ARRAY_LEN(cases));
}
