/* test_nn2.c: the kernels of nn2.c (layer_norm, softmax_with_cross_entropy, cos_sim, lrn,
 * interpolation, conv2d_transpose, auc) and pool2d's ceil_mode: known values, plain reference loops
 * written from the definitions (float32 and float64), gradients by kt_grad_check's central
 * differences in float64, and the errors on bad inputs. */
#include "tests/runtime/kernels/kt.h"

static double at(const FlTensor *t, int64_t i) { return fl_tensor_get(t, i); }

/* ---- layer_norm ---- */

static void ref_layer_norm(const FlTensor *x, const FlTensor *s, const FlTensor *b, int64_t M, int64_t D,
                           double eps, double *y) {
    for (int64_t i = 0; i < M; i++) {
        double mu = 0, var = 0;
        for (int64_t j = 0; j < D; j++) mu += at(x, i * D + j) / (double)D;
        for (int64_t j = 0; j < D; j++) var += pow(at(x, i * D + j) - mu, 2) / (double)D;
        for (int64_t j = 0; j < D; j++)
            y[i * D + j] = (at(x, i * D + j) - mu) / sqrt(var + eps) * (s ? at(s, j) : 1) + (b ? at(b, j) : 0);
    }
}

static void test_layer_norm_values(void) {
    FlRng r;
    fl_rng_init(&r, 7);
    FlDType dts[2] = {FL_DT_FLOAT32, FL_DT_FLOAT64};
    for (int k = 0; k < 2; k++) {
        FlTensor x = kt_rand(&r, dts[k], 3, (int64_t[]){2, 3, 4}, -2, 2);
        FlTensor s = kt_rand(&r, dts[k], 1, (int64_t[]){12}, 0.5, 1.5);
        FlTensor b = kt_rand(&r, dts[k], 1, (int64_t[]){12}, -1, 1);
        FlTensor y = FL_TENSOR_INIT, m = FL_TENSOR_INIT, v = FL_TENSOR_INIT;
        KT_OK(fl_kernel_layer_norm(KE, &x, &s, &b, 1, 1e-5, &y, &m, &v));
        double ref[24];
        ref_layer_norm(&x, &s, &b, 2, 12, 1e-5, ref);
        CU_ASSERT(kt_values(&y, ref, 24, k ? 1e-12 : 1e-5));
        KT_SHAPE_IS(&m, KT_SHAPE(2));
        /* begin_norm_axis 2, no scale or bias */
        KT_OK(fl_kernel_layer_norm(KE, &x, NULL, NULL, 2, 0.1, &y, &m, &v));
        ref_layer_norm(&x, NULL, NULL, 6, 4, 0.1, ref);
        CU_ASSERT(kt_values(&y, ref, 24, k ? 1e-12 : 1e-5));
        KT_SHAPE_IS(&v, KT_SHAPE(6));
        FlTensor all[] = {x, s, b, y, m, v};
        kt_fini(6, all);
    }
    FlTensor x = KT_T(FL_DT_FLOAT64, KT_SHAPE(1, 4), 1, 2, 3, 4), y = FL_TENSOR_INIT;
    /* mean 2.5, variance 1.25 */
    KT_OK(fl_kernel_layer_norm(KE, &x, NULL, NULL, 1, 0, &y, NULL, NULL));
    KT_VALUES(&y, 1e-12, -1.5 / sqrt(1.25), -0.5 / sqrt(1.25), 0.5 / sqrt(1.25), 1.5 / sqrt(1.25));
    FlErr e;
    CU_ASSERT_EQUAL(fl_kernel_layer_norm(&e, &x, NULL, NULL, 2, 0, &y, NULL, NULL), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "begin_norm_axis 2"));
    FlTensor s3 = KT_T(FL_DT_FLOAT64, KT_SHAPE(3), 1, 1, 1);
    CU_ASSERT_EQUAL(fl_kernel_layer_norm(&e, &x, &s3, NULL, 1, 0, &y, NULL, NULL), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "must hold 4 elements"));
    fl_tensor_fini(&x);
    fl_tensor_fini(&y);
    fl_tensor_fini(&s3);
}

/* ---- softmax_with_cross_entropy ---- */

static void test_swce_values(void) {
    FlRng r;
    fl_rng_init(&r, 8);
    FlTensor z = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){4, 5}, -3, 3);
    FlTensor lab = KT_T(FL_DT_INT64, KT_SHAPE(4, 1), 0, 4, 2, 7);
    FlTensor sm = FL_TENSOR_INIT, loss = FL_TENSOR_INIT;
    KT_OK(fl_kernel_softmax_with_cross_entropy(KE, &z, &lab, false, 7, true, &sm, &loss));
    KT_SHAPE_IS(&loss, KT_SHAPE(4, 1));
    double p[20], want[4];
    for (int i = 0; i < 4; i++) {
        double s = 0;
        for (int j = 0; j < 5; j++) s += exp(at(&z, i * 5 + j));
        for (int j = 0; j < 5; j++) p[i * 5 + j] = exp(at(&z, i * 5 + j)) / s;
        int64_t c = (int64_t)at(&lab, i);
        want[i] = c == 7 ? 0 : -log(p[i * 5 + c]); /* row 3 is ignored */
    }
    CU_ASSERT(kt_values(&sm, p, 20, 1e-12));
    CU_ASSERT(kt_values(&loss, want, 4, 1e-12));
    /* the unstable mode: the same values here */
    KT_OK(fl_kernel_softmax_with_cross_entropy(KE, &z, &lab, false, 7, false, &sm, &loss));
    CU_ASSERT(kt_values(&loss, want, 4, 1e-12));
    /* stable mode survives huge logits; the unstable one reports log 0 as 1e20 */
    FlTensor big = KT_T(FL_DT_FLOAT32, KT_SHAPE(1, 2), 1000, -1000), l0 = KT_T(FL_DT_INT64, KT_SHAPE(1, 1), 1);
    KT_OK(fl_kernel_softmax_with_cross_entropy(KE, &big, &l0, false, -100, true, &sm, &loss));
    KT_VALUES(&loss, 1e-3, 2000);
    KT_OK(fl_kernel_softmax_with_cross_entropy(KE, &big, &l0, false, -100, false, &sm, &loss));
    KT_VALUES(&loss, 1e14, 1e20);
    /* soft labels */
    FlTensor soft = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){4, 5}, 0, 0.4);
    KT_OK(fl_kernel_softmax_with_cross_entropy(KE, &z, &soft, true, -100, true, &sm, &loss));
    for (int i = 0; i < 4; i++) {
        want[i] = 0;
        for (int j = 0; j < 5; j++) want[i] -= at(&soft, i * 5 + j) * log(p[i * 5 + j]);
    }
    CU_ASSERT(kt_values(&loss, want, 4, 1e-12));
    /* a label out of range names its row */
    FlTensor badl = KT_T(FL_DT_INT64, KT_SHAPE(4, 1), 0, 1, 5, 1);
    FlErr e;
    CU_ASSERT_EQUAL(fl_kernel_softmax_with_cross_entropy(&e, &z, &badl, false, -100, true, &sm, &loss), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "row 2 is 5"));
    ((int64_t *)fl_tensor_data(&badl))[2] = INT64_MAX; /* read as int64, never through a double */
    CU_ASSERT_EQUAL(fl_kernel_softmax_with_cross_entropy(&e, &z, &badl, false, -100, true, &sm, &loss), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "row 2 is 9223372036854775807"));
    FlTensor all[] = {z, lab, sm, loss, big, l0, soft, badl};
    kt_fini(8, all);
}

/* ---- cos_sim ---- */

static void test_cos_sim_values(void) {
    FlTensor x = KT_T(FL_DT_FLOAT32, KT_SHAPE(2, 2), 3, 4, 1, 0), y = KT_T(FL_DT_FLOAT32, KT_SHAPE(2, 2), 4, 3, 0, 2);
    FlTensor o = FL_TENSOR_INIT, xn = FL_TENSOR_INIT, yn = FL_TENSOR_INIT;
    KT_OK(fl_kernel_cos_sim(KE, &x, &y, &o, &xn, &yn));
    KT_SHAPE_IS(&o, KT_SHAPE(2, 1));
    KT_VALUES(&o, 1e-6, 24.0 / 25, 0);
    KT_VALUES(&xn, 1e-6, 5, 1);
    KT_VALUES(&yn, 1e-6, 5, 2);
    FlTensor row = KT_T(FL_DT_FLOAT32, KT_SHAPE(1, 2), 0, 1);
    KT_OK(fl_kernel_cos_sim(KE, &x, &row, &o, &xn, &yn));
    KT_VALUES(&o, 1e-6, 0.8, 0);
    KT_SHAPE_IS(&yn, KT_SHAPE(1, 1));
    FlTensor y3 = KT_T(FL_DT_FLOAT32, KT_SHAPE(3, 2), 1, 1, 1, 1, 1, 1);
    FlErr e;
    CU_ASSERT_EQUAL(fl_kernel_cos_sim(&e, &x, &y3, &o, &xn, &yn), FL_ERROR);
    FlTensor all[] = {x, y, o, xn, yn, row, y3};
    kt_fini(7, all);
}

/* ---- lrn ---- */

static void test_lrn_values(void) {
    FlRng r;
    fl_rng_init(&r, 9);
    int ns[3] = {5, 4, 1};
    for (int t = 0; t < 3; t++) {
        int n = ns[t];
        FlTensor x = kt_rand(&r, FL_DT_FLOAT64, 4, (int64_t[]){2, 6, 2, 3}, -2, 2);
        FlTensor o = FL_TENSOR_INIT, mid = FL_TENSOR_INIT;
        KT_OK(fl_kernel_lrn(KE, &x, n, 1.5, 0.3, 0.75, &o, &mid));
        double want[72];
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 6; c++)
                for (int p = 0; p < 6; p++) {
                    double s = 0; /* channels c - (n-1)/2 .. c + n/2, inside the image */
                    for (int j = c - (n - 1) / 2; j <= c + n / 2; j++)
                        if (j >= 0 && j < 6) s += pow(at(&x, (b * 6 + j) * 6 + p), 2);
                    int i = (b * 6 + c) * 6 + p;
                    want[i] = at(&x, i) / pow(1.5 + 0.3 * s, 0.75);
                }
        CU_ASSERT(kt_values(&o, want, 72, 1e-12));
        FlTensor all[] = {x, o, mid};
        kt_fini(3, all);
    }
}

/* ---- interpolation (Paddle's coordinate rules, written out) ---- */

static void ref_bilinear(const FlTensor *x, int64_t NC, int64_t H, int64_t W, int64_t Ho, int64_t Wo, bool ac,
                         int mode, double *out) {
    double rh = Ho > 1 ? (ac ? (H - 1.0) / (Ho - 1.0) : (double)H / Ho) : 0;
    double rw = Wo > 1 ? (ac ? (W - 1.0) / (Wo - 1.0) : (double)W / Wo) : 0;
    bool flag = mode == 0 && !ac;
    for (int64_t c = 0; c < NC; c++)
        for (int64_t k = 0; k < Ho; k++) {
            int64_t yn = flag ? (int64_t)(rh * (k + 0.5) - 0.5) : (int64_t)(rh * k);
            if (yn < 0) yn = 0;
            int64_t ys = yn + 1 < H - 1 ? yn + 1 : H - 1;
            double sy = flag ? fmax(rh * (k + 0.5) - 0.5, 0) : rh * k, dn = sy - yn, ds = 1 - dn;
            for (int64_t l = 0; l < Wo; l++) {
                int64_t xw = flag ? (int64_t)(rw * (l + 0.5) - 0.5) : (int64_t)(rw * l);
                if (xw < 0) xw = 0;
                int64_t xe = xw + 1 < W - 1 ? xw + 1 : W - 1;
                double sx = flag ? fmax(rw * (l + 0.5) - 0.5, 0) : rw * l, dw = sx - xw, de = 1 - dw;
                const int64_t o = c * H * W;
                out[(c * Ho + k) * Wo + l] = ds * de * at(x, o + yn * W + xw) + ds * dw * at(x, o + yn * W + xe) +
                                             dn * de * at(x, o + ys * W + xw) + dn * dw * at(x, o + ys * W + xe);
            }
        }
}

static void test_interp_values(void) {
    FlTensor x = KT_T(FL_DT_FLOAT32, KT_SHAPE(1, 1, 2, 2), 0, 1, 2, 3), o = FL_TENSOR_INIT;
    FlInterpAttrs a = {FL_INTERP_BILINEAR, 3, 3, true, 1};
    KT_OK(fl_kernel_interp(KE, &x, &a, &o));
    KT_VALUES(&o, 1e-6, 0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3);
    FlInterpAttrs nn = {FL_INTERP_NEAREST, 4, 4, false, 1};
    KT_OK(fl_kernel_interp(KE, &x, &nn, &o));
    KT_VALUES(&o, 0, 0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3);
    FlInterpAttrs nac = {FL_INTERP_NEAREST, 3, 3, true, 1}; /* rounds: ratio 0.5 */
    KT_OK(fl_kernel_interp(KE, &x, &nac, &o));
    KT_VALUES(&o, 0, 0, 1, 1, 2, 3, 3, 2, 3, 3);
    FlRng r;
    fl_rng_init(&r, 10);
    FlTensor big = kt_rand(&r, FL_DT_FLOAT64, 4, (int64_t[]){2, 2, 5, 4}, -1, 1);
    int sizes[4][2] = {{7, 9}, {3, 2}, {1, 6}, {10, 4}};
    for (int s = 0; s < 4; s++)
        for (int ac = 0; ac < 2; ac++)
            for (int mode = 0; mode < 2; mode++) {
                FlInterpAttrs b = {FL_INTERP_BILINEAR, sizes[s][0], sizes[s][1], ac, mode};
                KT_OK(fl_kernel_interp(KE, &big, &b, &o));
                double want[4 * 10 * 9];
                ref_bilinear(&big, 4, 5, 4, b.out_h, b.out_w, ac, mode, want);
                CU_ASSERT(kt_values(&o, want, 4 * b.out_h * b.out_w, 1e-12));
            }
    FlInterpAttrs bad = {FL_INTERP_BILINEAR, 0, 3, true, 1};
    FlErr e;
    CU_ASSERT_EQUAL(fl_kernel_interp(&e, &x, &bad, &o), FL_ERROR);
    FlTensor all[] = {x, o, big};
    kt_fini(3, all);
}

/* ---- conv2d_transpose: every input cell adds Filter * value to its output window ---- */

static void ref_convt(const FlTensor *x, const FlTensor *f, const FlConv2dAttrs *a, const int64_t *one,
                      double *out) {
    int64_t N = x->ne[0], C = x->ne[1], H = x->ne[2], W = x->ne[3], Mg = f->ne[1], kh = f->ne[2], kw = f->ne[3];
    int64_t M = one[1], Ho = one[2], Wo = one[3], Cg = C / a->groups;
    memset(out, 0, sizeof(double) * (size_t)(N * M * Ho * Wo));
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++)
                    for (int64_t m = 0; m < Mg; m++)
                        for (int64_t i = 0; i < kh; i++)
                            for (int64_t j = 0; j < kw; j++) {
                                int64_t oh = h * a->strides[0] - a->paddings[0] + i * a->dilations[0];
                                int64_t ow = w * a->strides[1] - a->paddings[1] + j * a->dilations[1];
                                if (oh < 0 || oh >= Ho || ow < 0 || ow >= Wo) continue;
                                int64_t om = (c / Cg) * Mg + m;
                                out[((n * M + om) * Ho + oh) * Wo + ow] +=
                                    at(x, ((n * C + c) * H + h) * W + w) * at(f, ((c * Mg + m) * kh + i) * kw + j);
                            }
}

static void test_conv2d_transpose_values(void) {
    FlTensor x = KT_T(FL_DT_FLOAT32, KT_SHAPE(1, 1, 2, 2), 1, 2, 3, 4);
    FlTensor f = KT_T(FL_DT_FLOAT32, KT_SHAPE(1, 1, 2, 2), 1, 1, 1, 1), o = FL_TENSOR_INIT;
    FlConv2dAttrs a = {{2, 2}, {0, 0}, {1, 1}, 1};
    KT_OK(fl_kernel_conv2d_transpose(KE, &x, &f, &a, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(1, 1, 4, 4));
    KT_VALUES(&o, 0, 1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4);
    FlRng r;
    fl_rng_init(&r, 11);
    FlConv2dAttrs as[3] = {{{1, 1}, {0, 0}, {1, 1}, 1}, {{2, 3}, {1, 0}, {1, 2}, 1}, {{2, 2}, {1, 1}, {2, 1}, 2}};
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < 2; k++) {
            FlDType dt = k ? FL_DT_FLOAT64 : FL_DT_FLOAT32;
            FlTensor xi = kt_rand(&r, dt, 4, (int64_t[]){2, 4, 3, 4}, -1, 1);
            FlTensor fi = kt_rand(&r, dt, 4, (int64_t[]){4, 3, 3, 2}, -1, 1);
            KT_OK(fl_kernel_conv2d_transpose(KE, &xi, &fi, &as[t], &o));
            double want[2 * 6 * 16 * 16];
            ref_convt(&xi, &fi, &as[t], o.ne, want);
            CU_ASSERT_EQUAL(o.ne[1], 3 * as[t].groups);
            CU_ASSERT_EQUAL(o.ne[2], (3 - 1) * as[t].strides[0] - 2 * as[t].paddings[0] + as[t].dilations[0] * 2 + 1);
            CU_ASSERT(kt_values(&o, want, fl_tensor_numel(&o), k ? 1e-12 : 1e-5));
            fl_tensor_fini(&xi);
            fl_tensor_fini(&fi);
        }
    FlTensor f2 = KT_T(FL_DT_FLOAT32, KT_SHAPE(2, 1, 1, 1), 1, 1);
    FlErr e;
    CU_ASSERT_EQUAL(fl_kernel_conv2d_transpose(&e, &x, &f2, &a, &o), FL_ERROR);
    FlTensor all[] = {x, f, o, f2};
    kt_fini(4, all);
}

/* ---- pool2d ceil_mode: the last window hangs over the edge and is clipped ---- */

static void test_pool_ceil_values(void) {
    FlTensor x = KT_T(FL_DT_FLOAT64, KT_SHAPE(1, 1, 3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9), o = FL_TENSOR_INIT;
    FlPool2dAttrs a = {FL_POOL_MAX, {2, 2}, {2, 2}, {0, 0}, false, true, true};
    KT_OK(fl_kernel_pool2d(KE, &x, &a, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(1, 1, 2, 2));
    KT_VALUES(&o, 0, 5, 6, 8, 9);
    a.type = FL_POOL_AVG; /* exclusive: the clipped windows' own cells */
    KT_OK(fl_kernel_pool2d(KE, &x, &a, &o));
    KT_VALUES(&o, 1e-12, 3, 4.5, 7.5, 9);
    a.exclusive = false; /* divided by the whole window */
    KT_OK(fl_kernel_pool2d(KE, &x, &a, &o));
    KT_VALUES(&o, 1e-12, 3, 9 / 4.0, 15 / 4.0, 9 / 4.0);
    a.ceil_mode = false;
    KT_OK(fl_kernel_pool2d(KE, &x, &a, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(1, 1, 1, 1));
    fl_tensor_fini(&x);
    fl_tensor_fini(&o);
}

/* ---- auc: known curves (the brute-force comparison over fed batches is in
 * tests/runtime/core/test_nn2_layers.c) ---- */

static double auc_of(const FlTensor *p, const FlTensor *l, int T, bool pr) {
    int64_t ne[2] = {1, T + 1};
    FlTensor sp = FL_TENSOR_INIT, sn = FL_TENSOR_INIT, a = FL_TENSOR_INIT;
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &sp, FL_DT_INT64, 2, ne), FL_OK);
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &sn, FL_DT_INT64, 2, ne), FL_OK);
    FlTensor po = FL_TENSOR_INIT, no = FL_TENSOR_INIT;
    KT_OK(fl_kernel_auc(KE, p, l, &sp, &sn, pr, T, 0, &a, &po, &no));
    double v = fl_tensor_get(&a, 0);
    FlTensor all[] = {sp, sn, a, po, no};
    kt_fini(5, all);
    return v;
}

static void test_auc_values(void) {
    FlTensor p = KT_T(FL_DT_FLOAT32, KT_SHAPE(4, 2), 0.9, 0.1, 0.8, 0.2, 0.3, 0.7, 0.1, 0.9);
    FlTensor sep = KT_T(FL_DT_INT64, KT_SHAPE(4, 1), 0, 0, 1, 1), rev = KT_T(FL_DT_INT64, KT_SHAPE(4, 1), 1, 1, 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(auc_of(&p, &sep, 100, false), 1, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(auc_of(&p, &rev, 100, false), 0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(auc_of(&p, &sep, 1, false), 0.5, 1e-12); /* one threshold: every score in bin 0 */
    FlTensor one = KT_T(FL_DT_INT64, KT_SHAPE(4, 1), 1, 1, 1, 1);
    CU_ASSERT_DOUBLE_EQUAL(auc_of(&p, &one, 100, false), 0, 0); /* no negatives: 0, as Paddle */
    FlTensor mix = KT_T(FL_DT_INT64, KT_SHAPE(4, 1), 0, 1, 0, 1); /* pos 0.2, 0.9; neg 0.1, 0.7 */
    CU_ASSERT_DOUBLE_EQUAL(auc_of(&p, &mix, 100, false), 0.75, 1e-12);
    /* PR: trapezoids from (recall 0, precision 1) through (recall, precision) at each bin that
     * selects a row, from the top: mix (0.5, 1) (0.5, 0.5) (1, 2/3) (1, 0.5) = 0.5 + 0.5 * (1/2 +
     * 2/3) / 2; rev (0, 0) (0, 0) (0.5, 1/3) (1, 1/2) = 0.5 * 1/3 / 2 + 0.5 * (1/3 + 1/2) / 2 */
    CU_ASSERT_DOUBLE_EQUAL(auc_of(&p, &sep, 100, true), 1, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(auc_of(&p, &mix, 100, true), 0.5 + 0.5 * (0.5 + 2.0 / 3) / 2, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(auc_of(&p, &rev, 100, true), 0.5 / 3 / 2 + 0.5 * (1.0 / 3 + 0.5) / 2, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(auc_of(&p, &one, 100, true), 1, 1e-12); /* every row positive */
    FlTensor none = KT_T(FL_DT_INT64, KT_SHAPE(4, 1), 0, 0, 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(auc_of(&p, &none, 100, true), 0, 0); /* no positives: 0 */
    fl_tensor_fini(&none);
    int64_t bad_ne[2] = {1, 5};
    FlTensor bad = FL_TENSOR_INIT, a = FL_TENSOR_INIT;
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &bad, FL_DT_INT64, 2, bad_ne), FL_OK);
    CU_ASSERT_EQUAL(fl_kernel_auc(&e, &p, &sep, &bad, &bad, false, 100, 0, &a, NULL, NULL), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "must be int64 [1, 101]"));
    FlTensor all[] = {p, sep, rev, one, mix, bad};
    kt_fini(6, all);
}

/* ---- hostile inputs: absent inputs, wrong dtypes and shapes are errors, never crashes ---- */

static void test_nn2_bad_inputs(void) {
    FlTensor f4 = KT_T(FL_DT_FLOAT32, KT_SHAPE(1, 2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8);
    FlTensor i4 = KT_T(FL_DT_INT64, KT_SHAPE(1, 2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8);
    FlTensor f2 = KT_T(FL_DT_FLOAT32, KT_SHAPE(2, 2), 1, 2, 3, 4), d2 = KT_T(FL_DT_FLOAT64, KT_SHAPE(2, 2), 1, 2, 3, 4);
    FlTensor o1 = FL_TENSOR_INIT, o2 = FL_TENSOR_INIT, o3 = FL_TENSOR_INIT;
    FlErr e;
    FlConv2dAttrs ca = {{1, 1}, {0, 0}, {1, 1}, 1}, huge = {{1, 1}, {INT32_MAX, 0}, {1, 1}, 1};
    FlInterpAttrs ia = {FL_INTERP_BILINEAR, 3, 3, true, 1};
    const FlTensor *xs[3] = {NULL, &i4, &f2};
    for (int k = 0; k < 3; k++) {
        const FlTensor *x = xs[k];
        CU_ASSERT_EQUAL(fl_kernel_layer_norm(&e, x, NULL, NULL, 1, 1e-5, &o1, &o2, &o3), k == 2 ? FL_OK : FL_ERROR);
        CU_ASSERT_EQUAL(fl_kernel_layer_norm_grad(&e, x, NULL, NULL, NULL, NULL, 1, 1e-5, &o1, &o2, &o3), FL_ERROR);
        CU_ASSERT_EQUAL(fl_kernel_softmax_with_cross_entropy_grad(&e, x, NULL, NULL, false, -100, &o1), FL_ERROR);
        CU_ASSERT_EQUAL(fl_kernel_cos_sim(&e, x, &d2, &o1, &o2, &o3), FL_ERROR);
        CU_ASSERT_EQUAL(fl_kernel_cos_sim_grad(&e, x, x, NULL, NULL, NULL, NULL, &o1, &o2), FL_ERROR);
        CU_ASSERT_EQUAL(fl_kernel_lrn(&e, x, 5, 1, 1, 1, &o1, &o2), FL_ERROR);
        CU_ASSERT_EQUAL(fl_kernel_lrn_grad(&e, x, NULL, NULL, 5, 1, 1, &o1), FL_ERROR);
        CU_ASSERT_EQUAL(fl_kernel_interp(&e, x, &ia, &o1), FL_ERROR);
        CU_ASSERT_EQUAL(fl_kernel_interp_grad(&e, x, NULL, &ia, &o1), FL_ERROR);
        CU_ASSERT_EQUAL(fl_kernel_conv2d_transpose(&e, x, &f4, &ca, &o1), FL_ERROR);
        CU_ASSERT_EQUAL(fl_kernel_conv2d_transpose_grad(&e, x, &f4, NULL, &ca, &o1, &o2), FL_ERROR);
        CU_ASSERT_EQUAL(fl_kernel_auc(&e, x, NULL, NULL, NULL, false, 10, 1, &o1, &o2, &o3), FL_ERROR);
    }
    /* the layer norm of a float 2-D input works; its gradient without Mean does not */
    KT_OK(fl_kernel_layer_norm(KE, &f2, NULL, NULL, 1, 1e-5, &o1, &o2, &o3));
    CU_ASSERT_EQUAL(fl_kernel_layer_norm_grad(&e, &f2, NULL, NULL, &o3, &f2, 1, 1e-5, &o1, NULL, NULL), FL_ERROR);
    /* softmax_with_cross_entropy: no label, a float hard label, a label of the wrong row count */
    CU_ASSERT_EQUAL(fl_kernel_softmax_with_cross_entropy(&e, &f2, NULL, false, -100, true, &o1, &o2), FL_ERROR);
    CU_ASSERT_EQUAL(fl_kernel_softmax_with_cross_entropy(&e, &f2, &f2, false, -100, true, &o1, &o2), FL_ERROR);
    CU_ASSERT_EQUAL(fl_kernel_softmax_with_cross_entropy(&e, &f2, &d2, true, -100, true, &o1, &o2), FL_ERROR);
    /* conv2d_transpose: a padding so large the output would be empty */
    FlTensor w = KT_T(FL_DT_FLOAT32, KT_SHAPE(2, 1, 1, 1), 1, 1);
    KT_OK(fl_kernel_conv2d_transpose(KE, &f4, &w, &ca, &o1));
    CU_ASSERT_EQUAL(fl_kernel_conv2d_transpose(&e, &f4, &w, &huge, &o1), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "empty output"));
    FlTensor all[] = {f4, i4, f2, d2, o1, o2, o3, w};
    kt_fini(8, all);
}

/* ---- gradients by central differences (float64) ---- */

typedef enum { N_LN, N_LN_PLAIN, N_SWCE, N_SWCE_SOFT, N_COS, N_LRN, N_INTERP, N_CONVT } NOp;
typedef struct NG {
    NOp op;
    int i1;
    FlInterpAttrs interp;
    FlConv2dAttrs conv;
} NG;

static FlStatus nfwd(const void *vc, FlErr *e, FlTensor *in, FlTensor *out) {
    const NG *c = vc;
    FlTensor t = FL_TENSOR_INIT, u = FL_TENSOR_INIT;
    FlStatus s;
    switch (c->op) {
    case N_LN: return fl_kernel_layer_norm(e, &in[0], &in[1], &in[2], c->i1, 1e-3, out, NULL, NULL);
    case N_LN_PLAIN: return fl_kernel_layer_norm(e, &in[0], NULL, NULL, c->i1, 1e-3, out, NULL, NULL);
    case N_SWCE:
    case N_SWCE_SOFT:
        s = fl_kernel_softmax_with_cross_entropy(e, &in[0], &in[1], c->op == N_SWCE_SOFT, 2, true, &t, out);
        fl_tensor_fini(&t);
        return s;
    case N_COS: return fl_kernel_cos_sim(e, &in[0], &in[1], out, NULL, NULL);
    case N_LRN:
        s = fl_kernel_lrn(e, &in[0], c->i1, 1.0, 0.5, 0.75, out, &t);
        fl_tensor_fini(&t);
        return s;
    case N_INTERP: return fl_kernel_interp(e, &in[0], &c->interp, out);
    case N_CONVT: return fl_kernel_conv2d_transpose(e, &in[0], &in[1], &c->conv, out);
    }
    (void)u;
    return FL_ERROR;
}

static FlStatus nbwd(const void *vc, FlErr *e, FlTensor *in, const FlTensor *out, const FlTensor *dout,
                     FlTensor *din) {
    const NG *c = vc;
    FlTensor t[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    FlStatus s = FL_ERROR;
    switch (c->op) {
    case N_LN:
    case N_LN_PLAIN: {
        bool p = c->op == N_LN;
        s = fl_kernel_layer_norm(e, &in[0], p ? &in[1] : NULL, p ? &in[2] : NULL, c->i1, 1e-3, &t[0], &t[1], &t[2]);
        if (!s)
            s = fl_kernel_layer_norm_grad(e, &in[0], p ? &in[1] : NULL, &t[1], &t[2], dout, c->i1, 1e-3, &din[0],
                                          p ? &din[1] : NULL, p ? &din[2] : NULL);
        break;
    }
    case N_SWCE:
    case N_SWCE_SOFT:
        s = fl_kernel_softmax_with_cross_entropy(e, &in[0], &in[1], c->op == N_SWCE_SOFT, 2, true, &t[0], &t[1]);
        if (!s) s = fl_kernel_softmax_with_cross_entropy_grad(e, &t[0], &in[1], dout, c->op == N_SWCE_SOFT, 2, &din[0]);
        break;
    case N_COS:
        s = fl_kernel_cos_sim(e, &in[0], &in[1], &t[0], &t[1], &t[2]);
        if (!s) s = fl_kernel_cos_sim_grad(e, &in[0], &in[1], out, &t[1], &t[2], dout, &din[0], &din[1]);
        break;
    case N_LRN:
        s = fl_kernel_lrn(e, &in[0], c->i1, 1.0, 0.5, 0.75, &t[0], &t[1]);
        if (!s) s = fl_kernel_lrn_grad(e, &in[0], &t[1], dout, c->i1, 0.5, 0.75, &din[0]);
        break;
    case N_INTERP: s = fl_kernel_interp_grad(e, &in[0], dout, &c->interp, &din[0]); break;
    case N_CONVT: s = fl_kernel_conv2d_transpose_grad(e, &in[0], &in[1], dout, &c->conv, &din[0], &din[1]); break;
    }
    kt_fini(3, t);
    return s;
}

static void test_nn2_grads(void) {
    FlRng r;
    fl_rng_init(&r, 12);
    const FlDType d = FL_DT_FLOAT64;
    bool all3[3] = {true, true, true}, first[2] = {true, false};
    {
        FlTensor in[3] = {kt_rand(&r, d, 3, (int64_t[]){2, 3, 4}, -2, 2), kt_rand(&r, d, 1, (int64_t[]){12}, 0.5, 2),
                          kt_rand(&r, d, 1, (int64_t[]){12}, -1, 1)};
        NG g = {.op = N_LN, .i1 = 1};
        CU_ASSERT(kt_grad_check("layer_norm", &g, 3, in, all3, nfwd, nbwd, 1e-6));
        FlTensor in2[3] = {in[0], kt_rand(&r, d, 1, (int64_t[]){4}, 0.5, 2), kt_rand(&r, d, 1, (int64_t[]){4}, -1, 1)};
        g.i1 = 2;
        CU_ASSERT(kt_grad_check("layer_norm axis 2", &g, 3, in2, all3, nfwd, nbwd, 1e-6));
        g.op = N_LN_PLAIN;
        CU_ASSERT(kt_grad_check("layer_norm plain", &g, 1, in, all3, nfwd, nbwd, 1e-6));
        kt_fini(3, in);
        kt_fini(2, in2 + 1);
    }
    {
        FlTensor in[2] = {kt_rand(&r, d, 3, (int64_t[]){2, 3, 5}, -2, 2), KT_T(FL_DT_INT64, KT_SHAPE(2, 3, 1), 0, 4, 2, 1, 3, 2)};
        NG g = {.op = N_SWCE};
        CU_ASSERT(kt_grad_check("softmax_with_cross_entropy", &g, 2, in, first, nfwd, nbwd, 1e-6));
        fl_tensor_fini(&in[1]);
        in[1] = kt_rand(&r, d, 3, (int64_t[]){2, 3, 5}, 0, 0.5);
        g.op = N_SWCE_SOFT;
        CU_ASSERT(kt_grad_check("softmax_with_cross_entropy soft", &g, 2, in, first, nfwd, nbwd, 1e-6));
        kt_fini(2, in);
    }
    {
        FlTensor in[2] = {kt_rand(&r, d, 2, (int64_t[]){3, 4}, -2, 2), kt_rand(&r, d, 2, (int64_t[]){3, 4}, -2, 2)};
        NG g = {.op = N_COS};
        CU_ASSERT(kt_grad_check("cos_sim", &g, 2, in, all3, nfwd, nbwd, 1e-6));
        fl_tensor_fini(&in[1]);
        in[1] = kt_rand(&r, d, 2, (int64_t[]){1, 4}, -2, 2);
        CU_ASSERT(kt_grad_check("cos_sim broadcast", &g, 2, in, all3, nfwd, nbwd, 1e-6));
        kt_fini(2, in);
    }
    for (int n = 1; n <= 5; n += 2) {
        FlTensor x = kt_rand(&r, d, 4, (int64_t[]){2, 5, 2, 2}, -2, 2);
        NG g = {.op = N_LRN, .i1 = n};
        CU_ASSERT(kt_grad_check("lrn", &g, 1, &x, all3, nfwd, nbwd, 1e-6));
        fl_tensor_fini(&x);
    }
    {
        FlTensor x = kt_rand(&r, d, 4, (int64_t[]){1, 2, 3, 4}, -2, 2);
        FlInterpAttrs as[4] = {{FL_INTERP_BILINEAR, 5, 7, true, 1}, {FL_INTERP_BILINEAR, 2, 9, false, 0},
                               {FL_INTERP_BILINEAR, 6, 3, false, 1}, {FL_INTERP_NEAREST, 5, 2, true, 1}};
        for (int i = 0; i < 4; i++) {
            NG g = {.op = N_INTERP, .interp = as[i]};
            CU_ASSERT(kt_grad_check("interp", &g, 1, &x, all3, nfwd, nbwd, 1e-6));
        }
        fl_tensor_fini(&x);
    }
    {
        FlTensor in[2] = {kt_rand(&r, d, 4, (int64_t[]){2, 4, 3, 3}, -1, 1), kt_rand(&r, d, 4, (int64_t[]){4, 2, 3, 2}, -1, 1)};
        FlConv2dAttrs as[2] = {{{2, 1}, {1, 0}, {1, 2}, 1}, {{1, 2}, {0, 1}, {2, 1}, 2}};
        for (int i = 0; i < 2; i++) {
            NG g = {.op = N_CONVT, .conv = as[i]};
            CU_ASSERT(kt_grad_check("conv2d_transpose", &g, 2, in, all3, nfwd, nbwd, 1e-6));
        }
        kt_fini(2, in);
    }
}

int main(void) {
    static const KtCase tc[] = {
        KT_TEST(test_layer_norm_values), KT_TEST(test_swce_values),   KT_TEST(test_cos_sim_values),
        KT_TEST(test_lrn_values),        KT_TEST(test_interp_values), KT_TEST(test_conv2d_transpose_values),
        KT_TEST(test_pool_ceil_values),  KT_TEST(test_auc_values),    KT_TEST(test_nn2_bad_inputs),
        KT_TEST(test_nn2_grads),
    };
    return kt_run("nn2 kernels", tc, (int)FL_ARRAY_LEN(tc));
}
