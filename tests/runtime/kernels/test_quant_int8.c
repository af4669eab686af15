/* test_quant_int8.c: the int8 inference kernels (runtime/kernels/quant_int8.c, pool2d's int8 loops)
 * against float64 references written from Fluid's operator definitions (quantize: round(x * S)
 * saturated; dequantize: x / S; requantize: round(x * So / Si); conv2d: int8 weights round(w *
 * Sw[m]), bias round(b * Si * Sw[m]), integer sums, acc / (Si * Sw[m]) or round(acc * So / (Si *
 * Sw[m]))), rounding by the C library's nearbyint (ties to even) and exact integer comparisons:
 * ties, saturation at both ends of int8 and uint8, NaN, padding, strides, dilations, groups, a
 * channel of zero weights; the calibration statistics and scales, and Fluid's KL threshold on
 * fixed data against the value Fluid's algorithm gives (a line-by-line Python transcription of
 * Calibrator.__get_optimal_scaling_factor, numpy.histogram spelled out, run once); the errors. */
#include <fenv.h>

#include "tests/runtime/kernels/kt.h"
#include "runtime/kernels/kernels_quant.h"

/* nearbyint(v) (ties to even in the default rounding mode) saturated to [lo, hi]; NaN -> 0 */
static double qref(double v, double lo, double hi) {
    if (v != v) return 0;
    return fmin(fmax(nearbyint(v), lo), hi);
}

static void test_quantize_edges(void) {
    FlTensor x = KT_T(FL_DT_FLOAT32, KT_SHAPE(2, 6), 0.25, 0.75, 1.25, -0.25, -0.75, 63.25, 200, -200, -64.25, 127.75,
                      NAN, 0.3),
             s = KT_T(FL_DT_FLOAT32, KT_SHAPE(1), 2), o = FL_TENSOR_INIT;
    KT_OK(fl_kernel_quantize(KE, &x, &s, true, &o));
    CU_ASSERT_EQUAL(o.dtype, FL_DT_INT8);
    KT_SHAPE_IS(&o, KT_SHAPE(2, 6));
    /* 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> 0, -1.5 -> -2, 126.5 -> 126, saturated, -128.5 -> -128 */
    KT_VALUES(&o, 0, 0, 2, 2, 0, -2, 126, 127, -128, -128, 127, 0, 1);
    KT_OK(fl_kernel_quantize(KE, &x, &s, false, &o));
    CU_ASSERT_EQUAL(o.dtype, FL_DT_UINT8);
    KT_VALUES(&o, 0, 0, 2, 2, 0, 0, 126, 255, 0, 0, 255, 0, 1);
    FlTensor all[] = {x, s, o};
    kt_fini(3, all);
}

static void test_quantize_reference(void) {
    FlRng r;
    fl_rng_init(&r, 11);
    FlTensor x = kt_rand(&r, FL_DT_FLOAT32, 3, (int64_t[]){3, 5, 7}, -3, 3), s = KT_T(FL_DT_FLOAT32, KT_SHAPE(1), 90),
             o = FL_TENSOR_INIT, d = FL_TENSOR_INIT;
    for (int neg = 0; neg < 2; neg++) {
        KT_OK(fl_kernel_quantize(KE, &x, &s, neg, &o));
        double lo = neg ? -128 : 0, hi = neg ? 127 : 255;
        int64_t hits = 0;
        for (int64_t i = 0; i < 105; i++) {
            double want = qref((double)((const float *)fl_tensor_data(&x))[i] * 90, lo, hi);
            CU_ASSERT_EQUAL(fl_tensor_get(&o, i), want);
            hits += want == hi || want == lo;
        }
        CU_ASSERT(hits > 0); /* some values saturate */
        CU_ASSERT(hits < 105);
        /* dequantize gives the value back within half a step (unsaturated ones) */
        KT_OK(fl_kernel_dequantize(KE, &o, &s, &d));
        CU_ASSERT_EQUAL(d.dtype, FL_DT_FLOAT32);
        for (int64_t i = 0; i < 105; i++) {
            double xv = fl_tensor_get(&x, i), q = fl_tensor_get(&o, i);
            CU_ASSERT_EQUAL(fl_tensor_get(&d, i), (double)(float)(q / 90));
            if (q > lo && q < hi) CU_ASSERT(fabs(fl_tensor_get(&d, i) - xv) <= 0.5 / 90 + 1e-6);
        }
    }
    FlTensor all[] = {x, s, o, d};
    kt_fini(4, all);
}

static void test_dequantize_requantize(void) {
    FlTensor q8 = KT_T(FL_DT_INT8, KT_SHAPE(6), -128, -3, -1, 0, 1, 127), u8 = KT_T(FL_DT_UINT8, KT_SHAPE(4), 0, 1, 3, 255),
             s = KT_T(FL_DT_FLOAT32, KT_SHAPE(1), 4), s2 = KT_T(FL_DT_FLOAT32, KT_SHAPE(1), 2),
             s10 = KT_T(FL_DT_FLOAT32, KT_SHAPE(1), 10), o = FL_TENSOR_INIT;
    KT_OK(fl_kernel_dequantize(KE, &q8, &s, &o));
    KT_VALUES(&o, 0, -32, -0.75, -0.25, 0, 0.25, 31.75);
    KT_OK(fl_kernel_dequantize(KE, &u8, &s, &o));
    KT_VALUES(&o, 0, 0, 0.25, 0.75, 63.75);
    /* from scale 4 to 2: x / 2, ties to even (-1.5 -> -2, -0.5 -> 0, 0.5 -> 0, 63.5 -> 64) */
    KT_OK(fl_kernel_requantize(KE, &q8, &s, &s2, &o));
    CU_ASSERT_EQUAL(o.dtype, FL_DT_INT8);
    KT_VALUES(&o, 0, -64, -2, 0, 0, 0, 64);
    /* from 4 to 10: x * 2.5, saturated (-320 -> -128, 317.5 -> 127) */
    KT_OK(fl_kernel_requantize(KE, &q8, &s, &s10, &o));
    KT_VALUES(&o, 0, -128, -8, -2, 0, 2, 127);
    KT_OK(fl_kernel_requantize(KE, &u8, &s, &s10, &o));
    CU_ASSERT_EQUAL(o.dtype, FL_DT_UINT8);
    KT_VALUES(&o, 0, 0, 2, 8, 255); /* 2.5 -> 2, 7.5 -> 8 */
    FlTensor all[] = {q8, u8, s, s2, s10, o};
    kt_fini(6, all);
}

/* The reference int8 convolution, by Fluid's definition, in double. */
static void conv_ref(const FlTensor *in, const FlTensor *f, const FlTensor *b, double si, const float *sw, double so,
                     const FlConv2dAttrs *a, bool fp32, double *out, int64_t Ho, int64_t Wo) {
    int64_t N = in->ne[0], C = in->ne[1], H = in->ne[2], W = in->ne[3], M = f->ne[0], Cg = f->ne[1], kh = f->ne[2],
            kw = f->ne[3], Mg = M / a->groups;
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t y = 0; y < Ho; y++)
                for (int64_t x = 0; x < Wo; x++) {
                    double acc = b ? qref(fl_tensor_get(b, m) * si * sw[m], -2147483648.0, 2147483647.0) : 0;
                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t i = 0; i < kh; i++)
                            for (int64_t j = 0; j < kw; j++) {
                                int64_t h = y * a->strides[0] + i * a->dilations[0] - a->paddings[0];
                                int64_t w = x * a->strides[1] + j * a->dilations[1] - a->paddings[1];
                                if (h < 0 || h >= H || w < 0 || w >= W) continue;
                                double wq = qref(fl_tensor_get(f, ((m * Cg + c) * kh + i) * kw + j) * sw[m], -128, 127);
                                acc += wq * fl_tensor_get(in, ((n * C + (m / Mg) * Cg + c) * H + h) * W + w);
                            }
                    double real = sw[m] > 0 ? acc / (si * sw[m]) : (b ? fl_tensor_get(b, m) : 0);
                    double *o = &out[((n * M + m) * Ho + y) * Wo + x];
                    *o = fp32 ? (double)(float)real : qref(sw[m] > 0 ? acc * so / (si * sw[m]) : real * so, -128, 127);
                }
}

static void test_conv2d_int8(void) {
    FlRng r;
    fl_rng_init(&r, 5);
    struct {
        FlDType dt;
        FlConv2dAttrs a;
        int64_t in[4], f[4];
        bool bias;
    } cases[] = {
        {FL_DT_UINT8, {{1, 1}, {0, 0}, {1, 1}, 1}, {2, 3, 6, 5}, {4, 3, 3, 3}, true},
        {FL_DT_INT8, {{2, 1}, {1, 2}, {1, 2}, 2}, {2, 4, 7, 6}, {6, 2, 3, 2}, true},
        {FL_DT_INT8, {{1, 2}, {2, 0}, {2, 1}, 1}, {1, 2, 6, 7}, {3, 2, 2, 3}, false},
        {FL_DT_UINT8, {{3, 3}, {1, 1}, {1, 1}, 3}, {2, 3, 8, 8}, {3, 1, 3, 3}, true},
    };
    for (size_t k = 0; k < FL_ARRAY_LEN(cases); k++) {
        bool u = cases[k].dt == FL_DT_UINT8;
        FlTensor in = kt_rand(&r, FL_DT_FLOAT64, 4, cases[k].in, u ? 0 : -128, u ? 255.99 : 127.99), q = FL_TENSOR_INIT;
        for (int64_t i = 0, n = fl_tensor_numel(&in); i < n; i++) fl_tensor_set(&in, i, floor(fl_tensor_get(&in, i)));
        FlErr e;
        CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &q, cases[k].dt, 4, cases[k].in), FL_OK);
        for (int64_t i = 0, n = fl_tensor_numel(&in); i < n; i++) fl_tensor_set(&q, i, fl_tensor_get(&in, i));
        if (u) fl_tensor_set(&q, 0, 255); /* the ends of the ranges */
        else fl_tensor_set(&q, 0, -128);
        FlTensor f = kt_rand(&r, FL_DT_FLOAT32, 4, cases[k].f, -0.8, 0.8);
        int64_t M = cases[k].f[0];
        FlTensor b = kt_rand(&r, FL_DT_FLOAT32, 1, (int64_t[]){M}, -2, 2), sw = FL_TENSOR_INIT;
        CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &sw, FL_DT_FLOAT32, 1, (int64_t[]){M}), FL_OK);
        float *swp = fl_tensor_data(&sw);
        for (int64_t m = 0; m < M; m++) {
            double mx = 0;
            for (int64_t i = 0, ck = fl_tensor_numel(&f) / M; i < ck; i++)
                mx = fmax(mx, fabs(fl_tensor_get(&f, m * ck + i)));
            swp[m] = (float)(127 / mx);
        }
        if (k == 1) swp[M - 1] = 0; /* a channel of zero weights: its bias */
        FlTensor si = KT_T(FL_DT_FLOAT32, KT_SHAPE(1), u ? 31.875 : 12.7), so = KT_T(FL_DT_FLOAT32, KT_SHAPE(1), 3.7);
        const FlConv2dAttrs *a = &cases[k].a;
        int64_t Ho = (cases[k].in[2] + 2 * a->paddings[0] - (a->dilations[0] * (cases[k].f[2] - 1) + 1)) / a->strides[0] + 1;
        int64_t Wo = (cases[k].in[3] + 2 * a->paddings[1] - (a->dilations[1] * (cases[k].f[3] - 1) + 1)) / a->strides[1] + 1;
        int64_t nout = cases[k].in[0] * M * Ho * Wo;
        double *want = malloc((size_t)nout * sizeof *want);
        for (int fp32 = 1; fp32 >= 0; fp32--) { /* float32 first: its largest |value| sets Scale_out */
            FlTensor o = FL_TENSOR_INIT;
            const FlTensor *bias = cases[k].bias ? &b : NULL;
            KT_OK(fl_kernel_conv2d_int8(KE, &q, &f, bias, &si, &sw, fp32 ? NULL : &so, a, fp32, &o));
            KT_SHAPE_IS(&o, KT_SHAPE(cases[k].in[0], M, Ho, Wo));
            CU_ASSERT_EQUAL(o.dtype, fp32 ? FL_DT_FLOAT32 : FL_DT_INT8);
            conv_ref(&q, &f, bias, fl_tensor_get(&si, 0), swp, fl_tensor_get(&so, 0), a, fp32, want, Ho, Wo);
            int64_t bad = 0, ends = 0;
            for (int64_t i = 0; i < nout; i++) {
                bad += fl_tensor_get(&o, i) != want[i];
                ends += !fp32 && fabs(want[i]) >= 127;
            }
            CU_ASSERT_EQUAL(bad, 0);
            if (!fp32) CU_ASSERT(ends > 0 && ends < nout); /* the int8 output saturates somewhere */
            double mx = 0;
            for (int64_t i = 0; i < nout; i++) mx = fmax(mx, fabs(want[i]));
            if (fp32) ((float *)fl_tensor_data(&so))[0] = (float)(200 / mx);
            fl_tensor_fini(&o);
        }
        free(want);
        FlTensor all[] = {in, q, f, b, sw, si, so};
        kt_fini(7, all);
    }
}

/* pool2d on int8 and uint8 against its float64 twin: max exactly, the average rounded to even. */
static void test_pool2d_int8(void) {
    FlRng r;
    fl_rng_init(&r, 9);
    FlPool2dAttrs attrs[] = {
        {FL_POOL_MAX, {2, 2}, {2, 2}, {0, 0}, false, true, false},
        {FL_POOL_AVG, {3, 3}, {2, 2}, {1, 1}, false, true, true},
        {FL_POOL_AVG, {2, 3}, {1, 2}, {1, 0}, false, false, false},
        {FL_POOL_MAX, {1, 1}, {1, 1}, {0, 0}, true, true, false},
        {FL_POOL_AVG, {1, 1}, {1, 1}, {0, 0}, true, true, false},
    };
    for (int u = 0; u < 2; u++)
        for (size_t k = 0; k < FL_ARRAY_LEN(attrs); k++) {
            FlTensor x = kt_rand(&r, FL_DT_FLOAT64, 4, (int64_t[]){2, 3, 7, 6}, u ? 0 : -128, u ? 255.99 : 127.99),
                     q = FL_TENSOR_INIT, o = FL_TENSOR_INIT, ref = FL_TENSOR_INIT;
            for (int64_t i = 0; i < 252; i++) fl_tensor_set(&x, i, floor(fl_tensor_get(&x, i)));
            FlErr e;
            CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &q, u ? FL_DT_UINT8 : FL_DT_INT8, 4, x.ne), FL_OK);
            for (int64_t i = 0; i < 252; i++) fl_tensor_set(&q, i, fl_tensor_get(&x, i));
            KT_OK(fl_kernel_pool2d(KE, &q, &attrs[k], &o));
            KT_OK(fl_kernel_pool2d_ref(KE, &x, &attrs[k], &ref));
            CU_ASSERT_EQUAL(o.dtype, q.dtype);
            CU_ASSERT(fl_tensor_same_shape(&o, &ref));
            int64_t bad = 0;
            for (int64_t i = 0, n = fl_tensor_numel(&ref); i < n; i++)
                bad += fl_tensor_get(&o, i) != nearbyint(fl_tensor_get(&ref, i));
            CU_ASSERT_EQUAL(bad, 0);
            FlTensor all[] = {x, q, o, ref};
            kt_fini(4, all);
        }
    /* a tie: (1 + 2) / 2 = 1.5 -> 2, (2 + 3) / 2 = 2.5 -> 2 */
    FlTensor t = KT_T(FL_DT_UINT8, KT_SHAPE(1, 1, 1, 4), 1, 2, 2, 3), o = FL_TENSOR_INIT;
    FlPool2dAttrs avg = {FL_POOL_AVG, {1, 2}, {1, 1}, {0, 0}, false, true, false};
    KT_OK(fl_kernel_pool2d(KE, &t, &avg, &o));
    KT_VALUES(&o, 0, 2, 2, 2);
    FlTensor all[] = {t, o};
    kt_fini(2, all);
}

static void test_calib_sample_and_scale(void) {
    FlTensor x1 = KT_T(FL_DT_FLOAT32, KT_SHAPE(2, 2), 0.5, -3, 1, 2), x2 = KT_T(FL_DT_FLOAT32, KT_SHAPE(3), -1, 2.5, 0),
             zero = KT_T(FL_DT_FLOAT32, KT_SHAPE(1), 7), c0 = KT_T(FL_DT_FLOAT32, KT_SHAPE(1), 0),
             c1 = KT_T(FL_DT_FLOAT32, KT_SHAPE(1), 1), st = FL_TENSOR_INIT, sc = FL_TENSOR_INIT;
    /* direct: the running max; the stale Stat (7) is not read while Count is 0 */
    KT_OK(fl_kernel_calib_sample(KE, &x1, &zero, &c0, FL_CALIB_DIRECT, &st));
    KT_VALUES(&st, 0, 3);
    KT_OK(fl_kernel_calib_sample(KE, &x2, &st, &c1, FL_CALIB_DIRECT, &st));
    KT_VALUES(&st, 0, 3);
    KT_OK(fl_kernel_calib_scale(KE, &st, &c1, FL_CALIB_DIRECT, 127, false, &sc));
    KT_VALUES(&sc, 1e-5, 127.0 / 3);
    /* KL: every |x| gathered */
    KT_OK(fl_kernel_calib_sample(KE, &x1, &zero, &c0, FL_CALIB_KL, &st));
    KT_OK(fl_kernel_calib_sample(KE, &x2, &st, &c1, FL_CALIB_KL, &st));
    KT_SHAPE_IS(&st, KT_SHAPE(7));
    KT_VALUES(&st, 0, 0.5, 3, 1, 2, 1, 2.5, 0);
    /* per channel: 127 / max|row|, 0 for a row of zeros */
    FlTensor w = KT_T(FL_DT_FLOAT32, KT_SHAPE(3, 2), 0.5, -0.25, 0, 0, -2, 1);
    KT_OK(fl_kernel_calib_scale(KE, &w, &c1, FL_CALIB_DIRECT, 127, true, &sc));
    KT_VALUES(&sc, 1e-6, 254, 0, 63.5);
    /* all zero: the scale is max_range */
    FlTensor z = KT_T(FL_DT_FLOAT32, KT_SHAPE(2), 0, 0);
    KT_OK(fl_kernel_calib_scale(KE, &z, &c1, FL_CALIB_DIRECT, 255, false, &sc));
    KT_VALUES(&sc, 0, 255);
    KT_ERR(fl_kernel_calib_scale(KE, &st, &c0, FL_CALIB_DIRECT, 127, false, &sc),
           "calib_scale: no batch was sampled (Calibrator.sample_data() after each run of sampling_program) before "
           "the scales are computed");
    KT_ERR(fl_kernel_calib_scale(KE, &w, &c1, FL_CALIB_KL, 127, true, &sc),
           "calib_scale: per_channel scales are by algo 'direct'");
    FlTensor all[] = {x1, x2, zero, c0, c1, st, sc, w, z};
    kt_fini(9, all);
}

/* The data of the KL case: 3000 values, odd multiples of 1/512 below 4 with every 50th an
 * outlier 20.3 + (k mod 7); signed: every third negated and halved. */
static float kl_value(int k, bool signed_) {
    double x = (double)(((k * 7919) % 1000) * 2 + 1) / 512.0;
    if (k % 50 == 0) x = (float)(20.3 + (k % 7));
    if (signed_ && k % 3 == 0) x = -x * 0.5;
    return (float)x;
}

static void test_kl_threshold(void) {
    float v[3000];
    for (int s = 0; s < 2; s++) {
        for (int k = 0; k < 3000; k++) v[k] = kl_value(k, s);
        double t = fl_kernel_kl_threshold(v, 3000, 4);
        /* Fluid's algorithm on the same values: 25.311961297877133 (all >= 0: bins over [min,
         * max]) and 51.636863736435771 (signed: bins over [-26.3, 26.3], the threshold counted
         * from the first bin, as Fluid's is) */
        CU_ASSERT_DOUBLE_EQUAL(t, s ? 51.636863736435771 : 25.311961297877133, 1e-9);
        /* the batch count (Fluid's P_sum) does not move the threshold */
        CU_ASSERT_DOUBLE_EQUAL(fl_kernel_kl_threshold(v, 3000, 50), t, 1e-9);
    }
    /* one value: numpy widens the range to [v - 0.5, v + 0.5], so the value is in bin 1024 and
     * every candidate from 1432 on ends in an empty bin: Fluid walks back to the last non-empty */
    float one = 2;
    CU_ASSERT_DOUBLE_EQUAL(fl_kernel_kl_threshold(&one, 1, 1), (1024 + 0.5) / 2048, 1e-12);
    /* through calib_scale: 255 / threshold */
    FlTensor x = FL_TENSOR_INIT, c = KT_T(FL_DT_FLOAT32, KT_SHAPE(1), 4), sc = FL_TENSOR_INIT;
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &x, FL_DT_FLOAT32, 1, (int64_t[]){3000}), FL_OK);
    for (int k = 0; k < 3000; k++) ((float *)fl_tensor_data(&x))[k] = kl_value(k, false);
    KT_OK(fl_kernel_calib_scale(KE, &x, &c, FL_CALIB_KL, 255, false, &sc));
    KT_VALUES(&sc, 1e-4, 255 / 25.311961297877133);
    FlTensor all[] = {x, c, sc};
    kt_fini(3, all);
}

static void test_errors(void) {
    FlTensor x = KT_T(FL_DT_FLOAT32, KT_SHAPE(2), 1, 2), q = KT_T(FL_DT_INT8, KT_SHAPE(2), 1, 2),
             zero = KT_T(FL_DT_FLOAT32, KT_SHAPE(1), 0), one = KT_T(FL_DT_FLOAT32, KT_SHAPE(1), 1), o = FL_TENSOR_INIT;
    KT_ERR(fl_kernel_quantize(KE, &x, &zero, true, &o), "quantize: Scale must be a finite scale > 0, found 0");
    KT_ERR(fl_kernel_quantize(KE, &q, &one, true, &o), "quantize: Input [2] is int8; float32 expected");
    KT_ERR(fl_kernel_dequantize(KE, &x, &one, &o), "dequantize: Input [2] is float32; int8 or uint8 expected");
    KT_ERR(fl_kernel_requantize(KE, &q, &one, &x, &o), "requantize: Scale_out [2] must hold one value");
    FlTensor in = FL_TENSOR_INIT, f = FL_TENSOR_INIT, sw = KT_T(FL_DT_FLOAT32, KT_SHAPE(3), 1, 1, 1);
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &in, FL_DT_INT8, 4, (int64_t[]){1, 2, 3, 3}), FL_OK); /* zeros */
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &f, FL_DT_FLOAT32, 4, (int64_t[]){2, 2, 2, 2}), FL_OK);
    FlConv2dAttrs a = FL_CONV2D_ATTRS_DEFAULT;
    KT_ERR(fl_kernel_conv2d_int8(KE, &in, &f, NULL, &one, &sw, NULL, &a, true, &o),
           "conv2d_int8: Scale_weights [3] must hold one scale per output channel (2)");
    KT_ERR(fl_kernel_conv2d_int8(KE, &in, &f, NULL, &one, &one, NULL, &a, false, &o),
           "conv2d_int8: input Scale_out has no value");
    CU_ASSERT(!fl_tensor_has_data(&o));
    FlTensor all[] = {x, q, zero, one, o, in, f, sw};
    kt_fini(8, all);
}

int main(void) {
    KtCase cases[] = {KT_TEST(test_quantize_edges),  KT_TEST(test_quantize_reference),
                      KT_TEST(test_dequantize_requantize), KT_TEST(test_conv2d_int8),
                      KT_TEST(test_pool2d_int8),     KT_TEST(test_calib_sample_and_scale),
                      KT_TEST(test_kl_threshold),    KT_TEST(test_errors)};
    return kt_run("quant_int8", cases, (int)FL_ARRAY_LEN(cases));
}
