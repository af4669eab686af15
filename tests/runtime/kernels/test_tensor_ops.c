/* test_tensor_ops.c: the kernels of kernels_tensor.h (cumsum, reverse, argmin, argsort, the value
 * tests, diag, where, shape, log_loss, huber_loss, kldiv_loss): forward values against plain
 * references written from Fluid's operator definitions, in every dtype each takes (float32
 * within 1e-5 relative of the float64 reference, float64 within 1e-12, ints exactly), and the
 * error messages. Their gradients are checked by finite differences through the executor
 * (core_test_grad, grad_cases_tensor.inc). */
#include "tests/runtime/kernels/kt.h"

#include "runtime/kernels/kernels_tensor.h"

#define F FL_DT_FLOAT32
#define D FL_DT_FLOAT64

static FlRng rng;
static const FlDType NUM[] = {FL_DT_FLOAT32, FL_DT_FLOAT64, FL_DT_INT32, FL_DT_INT64};

static int64_t prod(const int64_t *ne, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= ne[i];
    return p;
}

static double tol_of(FlDType dt) { return dt == F ? 1e-5 : dt == D ? 1e-12 : 0; }

/* X [3, 4, 5] of dtype dt: small integers for the int dtypes, with ties */
static FlTensor rand_x(FlDType dt) {
    FlTensor x = kt_rand(&rng, dt, 3, (int64_t[]){3, 4, 5}, -3, 3);
    if (dt != F && dt != D)
        for (int64_t i = 0; i < 60; i++) fl_tensor_set(&x, i, floor(fl_tensor_get(&x, i)));
    return x;
}

/* index of element (a, j, c) of a [outer, d, inner] view */
#define AT(a, j, c) (((a) * d + (j)) * inner + (c))

static void test_cumsum(void) {
    for (int t = 0; t < 4; t++)
        for (int axis = -3; axis < 3; axis++)
            for (int mode = 0; mode < 4; mode++) {
                bool excl = mode & 1, rev = mode & 2;
                FlTensor x = rand_x(NUM[t]), o = FL_TENSOR_INIT;
                KT_OK(fl_kernel_cumsum(KE, &x, axis, excl, rev, &o));
                int ax = axis < 0 ? axis + 3 : axis;
                int64_t outer = prod(x.ne, 0, ax), d = x.ne[ax], inner = prod(x.ne, ax + 1, 3);
                double worst = 0;
                for (int64_t a = 0; a < outer; a++)
                    for (int64_t c = 0; c < inner; c++)
                        for (int64_t j = 0; j < d; j++) {
                            double s = 0; /* the sum over the elements before (or after) j */
                            for (int64_t k = 0; k < d; k++)
                                if ((rev ? k > j : k < j) || (!excl && k == j)) s += fl_tensor_get(&x, AT(a, k, c));
                            double got = fl_tensor_get(&o, AT(a, j, c));
                            worst = fmax(worst, fabs(got - s) / fmax(1, fabs(s)));
                        }
                CU_ASSERT(worst <= tol_of(NUM[t]));
                CU_ASSERT_EQUAL(o.dtype, NUM[t]);
                kt_fini(1, &x);
                kt_fini(1, &o);
            }
}

static void test_reverse(void) {
    const int64_t axes[][3] = {{0, 2}, {-1}, {1, 1}, {0, 1, 2}};
    const int n[] = {2, 1, 2, 3};
    for (int t = 0; t < 4; t++)
        for (int k = 0; k < 4; k++) {
            FlTensor x = rand_x(NUM[t]), o = FL_TENSOR_INIT;
            KT_OK(fl_kernel_reverse(KE, &x, axes[k], n[k], &o));
            bool flip[3] = {false};
            for (int m = 0; m < n[k]; m++) flip[axes[k][m] < 0 ? axes[k][m] + 3 : axes[k][m]] = true;
            bool same = true;
            for (int64_t i = 0; i < 3; i++)
                for (int64_t j = 0; j < 4; j++)
                    for (int64_t l = 0; l < 5; l++) {
                        int64_t si = flip[0] ? 2 - i : i, sj = flip[1] ? 3 - j : j, sl = flip[2] ? 4 - l : l;
                        same = same && fl_tensor_get(&o, (i * 4 + j) * 5 + l) == fl_tensor_get(&x, (si * 4 + sj) * 5 + sl);
                    }
            CU_ASSERT(same);
            kt_fini(1, &x);
            kt_fini(1, &o);
        }
    FlTensor x = KT_T(F, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6), o = FL_TENSOR_INIT;
    KT_ERR(fl_kernel_reverse(KE, &x, (int64_t[]){2}, 1, &o), "reverse: axis 2 is out of range for X [2, 3]");
    kt_fini(1, &x);
}

static void test_argmin_argsort(void) {
    for (int t = 0; t < 4; t++)
        for (int axis = 0; axis < 3; axis++) {
            FlTensor x = rand_x(NUM[t]), am = FL_TENSOR_INIT, s = FL_TENSOR_INIT, ix = FL_TENSOR_INIT;
            KT_OK(fl_kernel_argmin(KE, &x, axis, &am));
            KT_OK(fl_kernel_argsort(KE, &x, axis, &s, &ix));
            int64_t outer = prod(x.ne, 0, axis), d = x.ne[axis], inner = prod(x.ne, axis + 1, 3);
            bool ok = true;
            for (int64_t a = 0; a < outer; a++)
                for (int64_t c = 0; c < inner; c++) {
                    int64_t best = 0;
                    for (int64_t j = 1; j < d; j++)
                        if (fl_tensor_get(&x, AT(a, j, c)) < fl_tensor_get(&x, AT(a, best, c))) best = j;
                    ok = ok && fl_tensor_get_int(&am, a * inner + c) == best;
                    bool seen[5] = {false};
                    for (int64_t j = 0; j < d; j++) {
                        int64_t k = fl_tensor_get_int(&ix, AT(a, j, c));
                        ok = ok && k >= 0 && k < d && !seen[k];
                        if (!ok) break;
                        seen[k] = true;
                        ok = ok && fl_tensor_get(&s, AT(a, j, c)) == fl_tensor_get(&x, AT(a, k, c));
                        if (j > 0) { /* ascending, and equal values in their order (stable) */
                            double p = fl_tensor_get(&s, AT(a, j - 1, c)), v = fl_tensor_get(&s, AT(a, j, c));
                            ok = ok && (p < v || (p == v && fl_tensor_get_int(&ix, AT(a, j - 1, c)) < k));
                        }
                    }
                }
            CU_ASSERT(ok);
            CU_ASSERT_EQUAL(s.dtype, NUM[t]);
            FlTensor all[] = {x, am, s, ix};
            kt_fini(4, all);
        }
    /* int64 beyond 2^53 compared exactly; NaN sorts last */
    FlTensor big = FL_TENSOR_INIT, o = FL_TENSOR_INIT, ix = FL_TENSOR_INIT;
    KT_OK(fl_tensor_alloc(KE, &big, FL_DT_INT64, 1, (int64_t[]){2}));
    ((int64_t *)fl_tensor_data(&big))[0] = ((int64_t)1 << 53) + 1;
    ((int64_t *)fl_tensor_data(&big))[1] = (int64_t)1 << 53;
    KT_OK(fl_kernel_argmin(KE, &big, 0, &o));
    KT_VALUES(&o, 0, 1);
    FlTensor nan = KT_T(D, KT_SHAPE(4), NAN, 2, -1, 2), s = FL_TENSOR_INIT;
    KT_OK(fl_kernel_argsort(KE, &nan, -1, &s, &ix));
    KT_VALUES(&ix, 0, 2, 1, 3, 0);
    CU_ASSERT(isnan(fl_tensor_get(&s, 3)));
    KT_ERR(fl_kernel_argsort(KE, &nan, 1, &s, &ix), "argsort: axis 1 is out of range for X [4]");
    FlTensor all[] = {big, o, ix, nan, s};
    kt_fini(5, all);
}

static void test_tests_diag_where_shape(void) {
    FlTensor x = KT_T(F, KT_SHAPE(2, 2), 1, INFINITY, 0, -2), y = KT_T(D, KT_SHAPE(3), 1, NAN, 0);
    FlTensor z = KT_T(FL_DT_INT32, KT_SHAPE(2), 5, -5), o = FL_TENSOR_INIT;
    const FlTensor *xs[] = {&x, &y, &z};
    const double want[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}; /* isinf, isnan, isfinite of x, y, z */
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 3; i++) {
            KT_OK(fl_kernel_value_test(KE, (FlValueTest)k, xs[i], &o));
            CU_ASSERT_EQUAL(o.dtype, FL_DT_BOOL);
            KT_VALUES(&o, 0, want[i][k]);
        }
    KT_OK(fl_kernel_diag(KE, &z, &o));
    KT_VALUES(&o, 0, 5, 0, 0, -5);
    CU_ASSERT_EQUAL(o.dtype, FL_DT_INT32);
    FlTensor g = KT_T(D, KT_SHAPE(2, 2), 1, 2, 3, 4);
    KT_OK(fl_kernel_diag_grad(KE, &g, &o));
    KT_VALUES(&o, 0, 1, 4);
    KT_ERR(fl_kernel_diag(KE, &g, &o), "diag: Diagonal [2, 2] must have rank 1");
    FlTensor c = KT_T(FL_DT_BOOL, KT_SHAPE(2, 1, 3), 0, 1, 0, 1, 0, 1);
    KT_OK(fl_kernel_where(KE, &c, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(3, 3));
    KT_VALUES(&o, 0, 0, 0, 1, 1, 0, 0, 1, 0, 2);
    FlTensor none = KT_T(FL_DT_BOOL, KT_SHAPE(2), 0, 0);
    KT_OK(fl_kernel_where(KE, &none, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(0, 1));
    KT_ERR(fl_kernel_where(KE, &x, &o), "where: Condition [2, 2] has dtype float32; bool expected");
    KT_OK(fl_kernel_shape(KE, &c, &o));
    CU_ASSERT_EQUAL(o.dtype, FL_DT_INT32);
    KT_VALUES(&o, 0, 2, 1, 3);
    FlTensor all[] = {x, y, z, o, g, c, none};
    kt_fini(7, all);
}

static void test_losses(void) {
    for (int t = 0; t < 2; t++) {
        FlDType dt = t ? D : F;
        int64_t ne[2] = {6, 1};
        FlTensor p = kt_rand(&rng, dt, 2, ne, 0.05, 0.95), l = kt_rand(&rng, dt, 2, ne, 0, 1);
        FlTensor x = kt_rand(&rng, dt, 2, ne, -2, 2), y = kt_rand(&rng, dt, 2, ne, -2, 2), o = FL_TENSOR_INIT,
                 r = FL_TENSOR_INIT;
        double worst = 0;
        KT_OK(fl_kernel_log_loss(KE, &p, &l, 1e-4, &o));
        for (int i = 0; i < 6; i++) {
            double v = fl_tensor_get(&p, i), w = fl_tensor_get(&l, i);
            worst = fmax(worst, fabs(fl_tensor_get(&o, i) - (-w * log(v + 1e-4) - (1 - w) * log(1 - v + 1e-4))));
        }
        KT_OK(fl_kernel_huber_loss(KE, &x, &y, 0.7, &o, &r));
        for (int i = 0; i < 6; i++) {
            double d = fl_tensor_get(&y, i) - fl_tensor_get(&x, i);
            double want = fabs(d) <= 0.7 ? d * d / 2 : 0.7 * (fabs(d) - 0.35);
            worst = fmax(worst, fabs(fl_tensor_get(&o, i) - want) + fabs(fl_tensor_get(&r, i) - d));
        }
        /* kldiv: X log probabilities, T with a zero (its term 0) */
        fl_tensor_set(&l, 2, 0);
        double sum = 0;
        KT_OK(fl_kernel_kldiv_loss(KE, &x, &l, FL_KL_NONE, &o));
        for (int i = 0; i < 6; i++) {
            double v = fl_tensor_get(&l, i), want = v > 0 ? v * (log(v) - fl_tensor_get(&x, i)) : 0;
            sum += want;
            worst = fmax(worst, fabs(fl_tensor_get(&o, i) - want));
        }
        const FlKlReduction rs[] = {FL_KL_SUM, FL_KL_MEAN, FL_KL_BATCHMEAN};
        const double want[] = {sum, sum / 6, sum / 6};
        for (int k = 0; k < 3; k++) {
            KT_OK(fl_kernel_kldiv_loss(KE, &x, &l, rs[k], &o));
            KT_SHAPE_IS(&o, KT_SHAPE(1));
            worst = fmax(worst, fabs(fl_tensor_get(&o, 0) - want[k]));
        }
        CU_ASSERT(worst <= (t ? 1e-12 : 1e-5));
        FlTensor all[] = {p, l, x, y, o, r};
        kt_fini(6, all);
    }
    /* batchmean divides by the first dim, mean by every element */
    FlTensor x = KT_T(D, KT_SHAPE(2, 2), 0, 0, 0, 0), t = KT_T(D, KT_SHAPE(2, 2), 1, 1, 1, 1), o = FL_TENSOR_INIT;
    fl_tensor_set(&t, 0, exp(1.0));
    KT_OK(fl_kernel_kldiv_loss(KE, &x, &t, FL_KL_BATCHMEAN, &o));
    KT_VALUES(&o, 1e-12, exp(1.0) / 2);
    KT_OK(fl_kernel_kldiv_loss(KE, &x, &t, FL_KL_MEAN, &o));
    KT_VALUES(&o, 1e-12, exp(1.0) / 4);
    FlTensor y = KT_T(F, KT_SHAPE(2, 2), 0, 0, 0, 0);
    KT_ERR(fl_kernel_kldiv_loss(KE, &x, &y, FL_KL_SUM, &o), "kldiv_loss: X [2, 2] is float64 but Target [2, 2] is float32");
    FlTensor all[] = {x, t, o, y};
    kt_fini(4, all);
}

int main(void) {
    fl_rng_init(&rng, 31);
    static const KtCase tc[] = {KT_TEST(test_cumsum), KT_TEST(test_reverse), KT_TEST(test_argmin_argsort),
                                KT_TEST(test_tests_diag_where_shape), KT_TEST(test_losses)};
    return kt_run("tensor family kernels (values and errors)", tc, (int)(sizeof tc / sizeof tc[0]));
}
