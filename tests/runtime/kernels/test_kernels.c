/* test_kernels.c: forward kernels on small hand-computed cases, optimizer updates against
 * hand-computed values, shape-error messages, and kernels called from many threads at once. */
#include <pthread.h>

#include "tests/runtime/kernels/kt.h"

#define F FL_DT_FLOAT32
#define D FL_DT_FLOAT64
#define I FL_DT_INT64


static void test_fill_and_cast(void) {
    FlTensor o = FL_TENSOR_INIT, u = FL_TENSOR_INIT, u2 = FL_TENSOR_INIT, g = FL_TENSOR_INIT, c = FL_TENSOR_INIT;
    KT_OK(fl_kernel_fill_constant(KE, 2, (int64_t[]){2, 2}, 3.5, NULL, F, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(2, 2));
    KT_VALUES(&o, 0, 3.5, 3.5, 3.5, 3.5);
    KT_OK(fl_kernel_fill_constant(KE, 1, (int64_t[]){3}, 7.9, NULL, I, &o));
    CU_ASSERT_EQUAL(o.dtype, I);
    KT_VALUES(&o, 0, 7, 7, 7);
    KT_OK(fl_kernel_uniform_random(KE, 2, (int64_t[]){50, 40}, -2, 3, 11, 0, F, &u));
    KT_OK(fl_kernel_uniform_random(KE, 2, (int64_t[]){50, 40}, -2, 3, 11, 0, F, &u2));
    CU_ASSERT_EQUAL(memcmp(fl_tensor_data(&u), fl_tensor_data(&u2), fl_tensor_nbytes(&u)), 0);
    double mn = 1e9, mx = -1e9;
    for (int i = 0; i < 2000; i++) {
        mn = fmin(mn, fl_tensor_get(&u, i));
        mx = fmax(mx, fl_tensor_get(&u, i));
    }
    CU_ASSERT(mn >= -2 && mx < 3 && mn < -1.9 && mx > 2.9);
    KT_OK(fl_kernel_uniform_random(KE, 2, (int64_t[]){50, 40}, -2, 3, 12, 0, F, &u2));
    CU_ASSERT_NOT_EQUAL(memcmp(fl_tensor_data(&u), fl_tensor_data(&u2), fl_tensor_nbytes(&u)), 0);
    KT_OK(fl_kernel_gaussian_random(KE, 1, (int64_t[]){20000}, 1, 2, 3, 0, D, &g));
    double s = 0, s2 = 0;
    for (int i = 0; i < 20000; i++) {
        double v = fl_tensor_get(&g, i);
        s += v;
        s2 += v * v;
    }
    CU_ASSERT(fabs(s / 20000 - 1) < 0.05);
    CU_ASSERT(fabs(s2 / 20000 - 1 - 4) < 0.15);
    KT_ERR(fl_kernel_uniform_random(KE, 1, (int64_t[]){2}, 1, 0, 1, 0, F, &u), "uniform_random: min (1) is greater than max (0)");
    KT_ERR(fl_kernel_gaussian_random(KE, 1, (int64_t[]){2}, 0, 1, 1, 0, I, &u), "gaussian_random: dtype int64 is not supported; float32 or float64 expected");
    FlTensor x = KT_T(F, KT_SHAPE(4), -1.5, 0, 2.7, 3);
    KT_OK(fl_kernel_cast(KE, &x, I, &c));
    KT_VALUES(&c, 0, -1, 0, 2, 3);
    KT_OK(fl_kernel_cast(KE, &x, FL_DT_BOOL, &c));
    KT_VALUES(&c, 0, 1, 0, 1, 1);
    KT_OK(fl_kernel_assign(KE, &x, &c));
    CU_ASSERT_NOT_EQUAL(c.buf, x.buf);
    KT_VALUES(&c, 0, -1.5, 0, 2.7f, 3);
    FlTensor all[] = {o, u, u2, g, c, x};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

static void test_mul_matmul_values(void) {
    FlTensor x = KT_T(F, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6), y = KT_T(F, KT_SHAPE(3, 2), 1, 0, 0, 1, 1, 1);
    FlTensor o = FL_TENSOR_INIT;
    KT_OK(fl_kernel_mul(KE, &x, &y, 1, 1, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(2, 2));
    KT_VALUES(&o, 1e-6, 4, 5, 10, 11);
    KT_OK(fl_kernel_matmul(KE, &x, &x, false, true, 0.5, &o));
    KT_VALUES(&o, 1e-5, 7, 16, 16, 38.5);
    /* mul flattens X [2, 1, 3] at x_num_col_dims 1 */
    FlTensor x3 = KT_T(F, KT_SHAPE(2, 1, 3), 1, 2, 3, 4, 5, 6);
    KT_OK(fl_kernel_mul(KE, &x3, &y, 1, 1, &o));
    KT_VALUES(&o, 1e-6, 4, 5, 10, 11);
    FlTensor big = FL_TENSOR_INIT, w = FL_TENSOR_INIT;
    KT_OK(fl_kernel_fill_constant(KE, 2, (int64_t[]){128, 784}, 0, NULL, F, &big));
    KT_OK(fl_kernel_fill_constant(KE, 2, (int64_t[]){10, 512}, 0, NULL, F, &w));
    KT_ERR(fl_kernel_mul(KE, &big, &w, 1, 1, &o),
           "mul: X [128, 784] and Y [10, 512]: X's columns (784) differ from Y's rows (10)");
    KT_ERR(fl_kernel_mul(KE, &big, &w, 2, 1, &o), "mul: x_num_col_dims (2) must be in [1, 2) for X [128, 784]");
    KT_ERR(fl_kernel_matmul(KE, &x, &x, false, false, 1, &o),
           "matmul: X [2, 3] and Y [2, 3] (transpose_X false, transpose_Y false): the inner sizes differ (3 and 2)");
    KT_VALUES(&o, 1e-6, 4, 5, 10, 11); /* a failed kernel leaves its output alone */
    FlTensor all[] = {x, y, o, x3, big, w};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

static void test_elementwise_values(void) {
    FlTensor x = KT_T(F, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6), b = KT_T(F, KT_SHAPE(3), 10, 20, 30);
    FlTensor c = KT_T(F, KT_SHAPE(2, 1), 100, 200), o = FL_TENSOR_INIT;
    KT_OK(fl_kernel_elementwise_add(KE, &x, &b, -1, &o));
    KT_VALUES(&o, 0, 11, 22, 33, 14, 25, 36);
    KT_OK(fl_kernel_elementwise_add(KE, &x, &c, 0, &o)); /* Paddle axis: Y [2, 1] at dim 0 */
    KT_VALUES(&o, 0, 101, 102, 103, 204, 205, 206);
    KT_OK(fl_kernel_elementwise_sub(KE, &b, &c, -1, &o)); /* both operands broadcast */
    KT_SHAPE_IS(&o, KT_SHAPE(2, 3));
    KT_VALUES(&o, 0, -90, -80, -70, -190, -180, -170);
    KT_OK(fl_kernel_elementwise_mul(KE, &x, &b, 1, &o));
    KT_VALUES(&o, 0, 10, 40, 90, 40, 100, 180);
    KT_OK(fl_kernel_elementwise_div(KE, &b, &x, -1, &o));
    KT_VALUES(&o, 1e-5, 10, 10, 10, 2.5, 4, 5);
    FlTensor th = KT_T(F, KT_SHAPE(1), 3.5);
    KT_OK(fl_kernel_elementwise_max(KE, &x, &th, -1, &o));
    KT_VALUES(&o, 0, 3.5, 3.5, 3.5, 4, 5, 6);
    KT_OK(fl_kernel_elementwise_min(KE, &x, &th, -1, &o));
    KT_VALUES(&o, 0, 1, 2, 3, 3.5, 3.5, 3.5);
    FlTensor two = KT_T(F, KT_SHAPE(1), 2);
    KT_OK(fl_kernel_elementwise_pow(KE, &x, &two, -1, &o));
    KT_VALUES(&o, 1e-5, 1, 4, 9, 16, 25, 36);
    /* floordiv / mod follow Python: the remainder has the divisor's sign */
    FlTensor ia = KT_T(I, KT_SHAPE(4), 7, -7, 7, -7), ib = KT_T(I, KT_SHAPE(4), 2, 2, -2, -2);
    KT_OK(fl_kernel_elementwise_floordiv(KE, &ia, &ib, -1, &o));
    KT_VALUES(&o, 0, 3, -4, -4, 3);
    KT_OK(fl_kernel_elementwise_mod(KE, &ia, &ib, -1, &o));
    KT_VALUES(&o, 0, 1, 1, -1, -1);
    FlTensor fa = KT_T(D, KT_SHAPE(2), -7.5, 7.5), fb = KT_T(D, KT_SHAPE(2), 2, -2);
    KT_OK(fl_kernel_elementwise_floordiv(KE, &fa, &fb, -1, &o));
    KT_VALUES(&o, 0, -4, -4);
    KT_OK(fl_kernel_elementwise_mod(KE, &fa, &fb, -1, &o));
    KT_VALUES(&o, 0, 0.5, -0.5);
    KT_OK(fl_kernel_elementwise_div(KE, &ia, &ib, -1, &o)); /* integer division truncates */
    KT_VALUES(&o, 0, 3, -3, -3, 3);
    FlTensor z = KT_T(I, KT_SHAPE(1), 0);
    KT_ERR(fl_kernel_elementwise_mod(KE, &ia, &z, -1, &o), "elementwise_mod: integer division by zero (Y [1] holds a 0)");
    FlTensor y4 = KT_T(F, KT_SHAPE(4), 1, 2, 3, 4);
    KT_ERR(fl_kernel_elementwise_add(KE, &x, &y4, -1, &o),
           "elementwise_add: X [2, 3] and Y [4] cannot be broadcast together: dim 1 of the result would be both 3 and 4");
    KT_ERR(fl_kernel_elementwise_add(KE, &x, &b, 0, &o),
           "elementwise_add: X [2, 3] and Y [3] with axis 0: Y's dim 0 (3) differs from X's dim 0 (2)");
    KT_ERR(fl_kernel_elementwise_add(KE, &x, &ia, -1, &o), "elementwise_add: X [2, 3] is float32 but Y [4] is int64");
    FlTensor all[] = {x, b, c, o, th, two, ia, ib, fa, fb, z, y4};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

/* The int64 elements of t, read exactly (doubles lose the low bits near INT64_MAX). */
static int64_t i64_at(const FlTensor *t, int64_t i) { return ((const int64_t *)fl_tensor_data(t))[i]; }
static int32_t i32_at(const FlTensor *t, int64_t i) { return ((const int32_t *)fl_tensor_data(t))[i]; }

/* Integer arithmetic wraps (two's complement, Go's): no SIGFPE on INT_MIN / -1, no signed
 * overflow (the ASan+UBSan build checks the latter). */
static void test_int_wrap(void) {
    int64_t one = 1, two = 2;
    FlTensor a = FL_TENSOR_INIT, m1 = FL_TENSOR_INIT, b = FL_TENSOR_INIT, o = FL_TENSOR_INIT;
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &a, I, 1, &two), FL_OK);
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &m1, I, 1, &one), FL_OK);
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &b, I, 1, &two), FL_OK);
    int64_t *pa = fl_tensor_data(&a), *pb = fl_tensor_data(&b);
    pa[0] = INT64_MIN, pa[1] = INT64_MAX;
    ((int64_t *)fl_tensor_data(&m1))[0] = -1;
    KT_OK(fl_kernel_elementwise_floordiv(KE, &a, &m1, -1, &o));
    CU_ASSERT_EQUAL(i64_at(&o, 0), INT64_MIN);
    CU_ASSERT_EQUAL(i64_at(&o, 1), -INT64_MAX);
    KT_OK(fl_kernel_elementwise_div(KE, &a, &m1, -1, &o));
    CU_ASSERT_EQUAL(i64_at(&o, 0), INT64_MIN);
    KT_OK(fl_kernel_elementwise_mod(KE, &a, &m1, -1, &o));
    CU_ASSERT_EQUAL(i64_at(&o, 0), 0);
    CU_ASSERT_EQUAL(i64_at(&o, 1), 0);
    pb[0] = -1, pb[1] = 1;
    KT_OK(fl_kernel_elementwise_add(KE, &a, &b, -1, &o)); /* fast path */
    CU_ASSERT_EQUAL(i64_at(&o, 0), INT64_MAX);
    CU_ASSERT_EQUAL(i64_at(&o, 1), INT64_MIN);
    KT_OK(fl_kernel_elementwise_add_ref(KE, &a, &b, -1, &o));
    CU_ASSERT_EQUAL(i64_at(&o, 1), INT64_MIN);
    KT_OK(fl_kernel_elementwise_sub(KE, &a, &b, -1, &o));
    CU_ASSERT_EQUAL(i64_at(&o, 0), INT64_MIN + 1);
    CU_ASSERT_EQUAL(i64_at(&o, 1), INT64_MAX - 1);
    pb[0] = 1, pb[1] = -1;
    KT_OK(fl_kernel_elementwise_sub(KE, &a, &b, -1, &o));
    CU_ASSERT_EQUAL(i64_at(&o, 0), INT64_MAX);
    CU_ASSERT_EQUAL(i64_at(&o, 1), INT64_MIN);
    pb[0] = 2, pb[1] = 3;
    KT_OK(fl_kernel_elementwise_mul(KE, &a, &b, -1, &o));
    CU_ASSERT_EQUAL(i64_at(&o, 0), 0);                 /* -2^63 * 2 = -2^64 = 0 mod 2^64 */
    CU_ASSERT_EQUAL(i64_at(&o, 1), INT64_MAX - 2);     /* (2^63 - 1) * 3 mod 2^64 */
    const FlTensor *xs[] = {&a, &a};
    KT_OK(fl_kernel_sum(KE, xs, 2, &o));
    CU_ASSERT_EQUAL(i64_at(&o, 0), 0);
    CU_ASSERT_EQUAL(i64_at(&o, 1), -2);
    FlTensor s1 = FL_TENSOR_INIT;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &s1, I, 1, &one), FL_OK);
    ((int64_t *)fl_tensor_data(&s1))[0] = INT64_MAX;
    KT_OK(fl_kernel_increment(KE, &s1, 1, &o));
    CU_ASSERT_EQUAL(i64_at(&o, 0), INT64_MIN);
    /* int32: the same rules at 32 bits */
    FlTensor c = KT_T(FL_DT_INT32, KT_SHAPE(2), -2147483648.0, 2147483647.0);
    FlTensor cm1 = KT_T(FL_DT_INT32, KT_SHAPE(1), -1), cp1 = KT_T(FL_DT_INT32, KT_SHAPE(1), 1);
    KT_OK(fl_kernel_elementwise_floordiv(KE, &c, &cm1, -1, &o));
    CU_ASSERT_EQUAL(i32_at(&o, 0), INT32_MIN);
    CU_ASSERT_EQUAL(i32_at(&o, 1), -INT32_MAX);
    KT_OK(fl_kernel_elementwise_div(KE, &c, &cm1, -1, &o));
    CU_ASSERT_EQUAL(i32_at(&o, 0), INT32_MIN);
    KT_OK(fl_kernel_elementwise_mod(KE, &c, &cm1, -1, &o));
    CU_ASSERT_EQUAL(i32_at(&o, 0), 0);
    KT_OK(fl_kernel_elementwise_add(KE, &c, &cp1, -1, &o));
    CU_ASSERT_EQUAL(i32_at(&o, 1), INT32_MIN);
    KT_OK(fl_kernel_elementwise_sub(KE, &c, &cp1, -1, &o));
    CU_ASSERT_EQUAL(i32_at(&o, 0), INT32_MAX);
    KT_OK(fl_kernel_elementwise_mul(KE, &c, &c, -1, &o));
    CU_ASSERT_EQUAL(i32_at(&o, 0), 0);
    CU_ASSERT_EQUAL(i32_at(&o, 1), 1);
    FlTensor all[] = {a, m1, b, o, s1, c, cm1, cp1};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

/* Float to int saturates at the type's range; NaN gives 0 (C leaves both undefined). */
static void test_float_to_int_saturates(void) {
    FlTensor o = FL_TENSOR_INIT;
    KT_OK(fl_kernel_fill_constant(KE, 1, (int64_t[]){1}, NAN, NULL, I, &o));
    CU_ASSERT_EQUAL(i64_at(&o, 0), 0);
    KT_OK(fl_kernel_fill_constant(KE, 1, (int64_t[]){1}, 1e30, NULL, I, &o));
    CU_ASSERT_EQUAL(i64_at(&o, 0), INT64_MAX);
    KT_OK(fl_kernel_fill_constant(KE, 1, (int64_t[]){1}, -1e30, NULL, I, &o));
    CU_ASSERT_EQUAL(i64_at(&o, 0), INT64_MIN);
    KT_OK(fl_kernel_fill_constant(KE, 1, (int64_t[]){1}, 1e30, NULL, FL_DT_INT32, &o));
    CU_ASSERT_EQUAL(i32_at(&o, 0), INT32_MAX);
    KT_OK(fl_kernel_fill_constant(KE, 1, (int64_t[]){1}, -3e9, NULL, FL_DT_INT32, &o));
    CU_ASSERT_EQUAL(i32_at(&o, 0), INT32_MIN);
    KT_OK(fl_kernel_fill_constant(KE, 1, (int64_t[]){1}, -7.9, NULL, FL_DT_INT32, &o));
    CU_ASSERT_EQUAL(i32_at(&o, 0), -7);
    /* an exact integer (fill_constant's int_value) wins over its double for the int dtypes */
    int64_t big = INT64_MAX;
    KT_OK(fl_kernel_fill_constant(KE, 1, (int64_t[]){1}, 9.2e18, &big, I, &o));
    CU_ASSERT_EQUAL(i64_at(&o, 0), INT64_MAX);
    KT_OK(fl_kernel_fill_constant(KE, 1, (int64_t[]){1}, 9.2e18, &big, FL_DT_INT32, &o));
    CU_ASSERT_EQUAL(i32_at(&o, 0), INT32_MAX);
    KT_OK(fl_kernel_assign_value(KE, 1, (int64_t[]){2}, (double[]){9.2e18, 9007199254740992.0},
                                 (int64_t[]){INT64_MAX - 1, 9007199254740993}, 2, I, &o));
    CU_ASSERT_EQUAL(i64_at(&o, 0), INT64_MAX - 1);
    CU_ASSERT_EQUAL(i64_at(&o, 1), 9007199254740993);
    FlTensor x = KT_T(F, KT_SHAPE(5), NAN, 1e30, -1e30, INFINITY, -2.5);
    FlTensor xd = KT_T(D, KT_SHAPE(3), NAN, 9.3e18, -9.3e18);
    KT_OK(fl_kernel_cast(KE, &x, I, &o));
    CU_ASSERT_EQUAL(i64_at(&o, 0), 0);
    CU_ASSERT_EQUAL(i64_at(&o, 1), INT64_MAX);
    CU_ASSERT_EQUAL(i64_at(&o, 2), INT64_MIN);
    CU_ASSERT_EQUAL(i64_at(&o, 3), INT64_MAX);
    CU_ASSERT_EQUAL(i64_at(&o, 4), -2);
    KT_OK(fl_kernel_cast(KE, &x, FL_DT_INT32, &o));
    CU_ASSERT_EQUAL(i32_at(&o, 0), 0);
    CU_ASSERT_EQUAL(i32_at(&o, 1), INT32_MAX);
    CU_ASSERT_EQUAL(i32_at(&o, 2), INT32_MIN);
    CU_ASSERT_EQUAL(i32_at(&o, 4), -2);
    KT_OK(fl_kernel_cast(KE, &xd, I, &o));
    CU_ASSERT_EQUAL(i64_at(&o, 0), 0);
    CU_ASSERT_EQUAL(i64_at(&o, 1), INT64_MAX);
    CU_ASSERT_EQUAL(i64_at(&o, 2), INT64_MIN);
    FlTensor all[] = {o, x, xd};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

static void test_compare_logical(void) {
    FlTensor x = KT_T(I, KT_SHAPE(4), 1, 2, 3, 4), t = KT_T(I, KT_SHAPE(1), 2), o = FL_TENSOR_INIT;
    KT_OK(fl_kernel_less_than(KE, &x, &t, -1, &o));
    CU_ASSERT_EQUAL(o.dtype, FL_DT_BOOL);
    KT_VALUES(&o, 0, 1, 0, 0, 0);
    KT_OK(fl_kernel_less_equal(KE, &x, &t, -1, &o));
    KT_VALUES(&o, 0, 1, 1, 0, 0);
    KT_OK(fl_kernel_greater_than(KE, &x, &t, -1, &o));
    KT_VALUES(&o, 0, 0, 0, 1, 1);
    KT_OK(fl_kernel_greater_equal(KE, &x, &t, -1, &o));
    KT_VALUES(&o, 0, 0, 1, 1, 1);
    KT_OK(fl_kernel_equal(KE, &x, &t, -1, &o));
    KT_VALUES(&o, 0, 0, 1, 0, 0);
    KT_OK(fl_kernel_not_equal(KE, &x, &t, -1, &o));
    KT_VALUES(&o, 0, 1, 0, 1, 1);
    FlTensor a = KT_T(FL_DT_BOOL, KT_SHAPE(4), 0, 0, 1, 1), b = KT_T(FL_DT_BOOL, KT_SHAPE(4), 0, 1, 0, 1);
    KT_OK(fl_kernel_logical_and(KE, &a, &b, &o));
    KT_VALUES(&o, 0, 0, 0, 0, 1);
    KT_OK(fl_kernel_logical_or(KE, &a, &b, &o));
    KT_VALUES(&o, 0, 0, 1, 1, 1);
    KT_OK(fl_kernel_logical_not(KE, &a, &o));
    KT_VALUES(&o, 0, 1, 1, 0, 0);
    FlTensor cnt = KT_T(I, KT_SHAPE(1), 41);
    KT_OK(fl_kernel_increment(KE, &cnt, 1, &cnt)); /* the output may be the input */
    KT_VALUES(&cnt, 0, 42);
    KT_ERR(fl_kernel_increment(KE, &x, 1, &o), "increment: X [4] must hold exactly one element");
    FlTensor all[] = {x, t, o, a, b, cnt};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

static void test_activation_values(void) {
    FlTensor x = KT_T(F, KT_SHAPE(4), -2, -0.5, 0.5, 2), o = FL_TENSOR_INIT;
    KT_OK(fl_kernel_relu(KE, &x, &o));
    KT_VALUES(&o, 0, 0, 0, 0.5, 2);
    KT_OK(fl_kernel_sigmoid(KE, &x, &o));
    KT_VALUES(&o, 1e-6, 0.11920292, 0.37754067, 0.62245933, 0.88079708);
    KT_OK(fl_kernel_tanh(KE, &x, &o));
    KT_VALUES(&o, 1e-6, -0.96402758, -0.46211716, 0.46211716, 0.96402758);
    KT_OK(fl_kernel_abs(KE, &x, &o));
    KT_VALUES(&o, 0, 2, 0.5, 0.5, 2);
    KT_OK(fl_kernel_square(KE, &x, &o));
    KT_VALUES(&o, 0, 4, 0.25, 0.25, 4);
    FlTensor p = KT_T(F, KT_SHAPE(3), 1, 4, 0.25);
    KT_OK(fl_kernel_sqrt(KE, &p, &o));
    KT_VALUES(&o, 1e-7, 1, 2, 0.5);
    KT_OK(fl_kernel_log(KE, &p, &o));
    KT_VALUES(&o, 1e-6, 0, 1.3862944, -1.3862944);
    KT_OK(fl_kernel_exp(KE, &p, &o));
    KT_VALUES(&o, 1e-4, 2.7182818, 54.59815, 1.2840254);
    KT_OK(fl_kernel_scale(KE, &p, 2, 1, true, &o));
    KT_VALUES(&o, 0, 3, 9, 1.5);
    KT_OK(fl_kernel_scale(KE, &p, 2, 1, false, &o));
    KT_VALUES(&o, 0, 4, 10, 2.5);
    FlTensor all[] = {x, o, p};
    kt_fini(3, all);
}

static void test_softmax_loss_reduce_values(void) {
    FlTensor x = KT_T(F, KT_SHAPE(2, 3), 1, 2, 3, 1001, 1002, 1003), o = FL_TENSOR_INIT;
    KT_OK(fl_kernel_softmax(KE, &x, &o)); /* stable: the second row does not overflow */
    KT_VALUES(&o, 1e-6, 0.09003057, 0.24472847, 0.66524096, 0.09003057, 0.24472847, 0.66524096);
    FlTensor p = KT_T(F, KT_SHAPE(2, 2), 0.2, 0.8, 0.5, 0.5), l = KT_T(I, KT_SHAPE(2, 1), 1, 0);
    KT_OK(fl_kernel_cross_entropy(KE, &p, &l, false, -100, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(2, 1));
    KT_VALUES(&o, 1e-6, 0.22314355, 0.69314718);
    FlTensor sl = KT_T(F, KT_SHAPE(2, 2), 0.5, 0.5, 1, 0);
    KT_OK(fl_kernel_cross_entropy(KE, &p, &sl, true, -100, &o));
    KT_VALUES(&o, 1e-6, 0.5 * (1.6094379 + 0.22314355), 0.69314718);
    FlTensor bad = KT_T(I, KT_SHAPE(2, 1), 1, 2);
    KT_ERR(fl_kernel_cross_entropy(KE, &p, &bad, false, -100, &o),
           "cross_entropy: Label[1] is 2, outside [0, 2) for X's last dim");
    FlTensor badshape = KT_T(I, KT_SHAPE(3, 1), 1, 0, 0);
    KT_ERR(fl_kernel_cross_entropy(KE, &p, &badshape, false, -100, &o),
           "cross_entropy: X [2, 2] and Label [3, 1]: Label must have X's shape with the last dim 1 (one class index per row of 2 probabilities)");
    FlTensor r = KT_T(F, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    KT_OK(fl_kernel_mean(KE, &r, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(1));
    KT_VALUES(&o, 1e-6, 3.5);
    KT_OK(fl_kernel_reduce_sum(KE, &r, (int[]){0}, 1, false, false, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(3));
    KT_VALUES(&o, 0, 5, 7, 9);
    KT_OK(fl_kernel_reduce_mean(KE, &r, (int[]){-1}, 1, true, false, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(2, 1));
    KT_VALUES(&o, 1e-6, 2, 5);
    KT_OK(fl_kernel_reduce_sum(KE, &r, NULL, 0, false, true, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(1));
    KT_VALUES(&o, 0, 21);
    FlTensor ri = KT_T(I, KT_SHAPE(2, 2), 1, 2, 3, 4);
    KT_OK(fl_kernel_reduce_sum(KE, &ri, (int[]){1}, 1, false, false, &o));
    KT_VALUES(&o, 0, 3, 7);
    KT_ERR(fl_kernel_reduce_sum(KE, &r, (int[]){2}, 1, false, false, &o), "reduce_sum: dim 2 is out of range for X [2, 3]");
    const FlTensor *xs[3] = {&r, &r, &r};
    KT_OK(fl_kernel_sum(KE, xs, 3, &o));
    KT_VALUES(&o, 0, 3, 6, 9, 12, 15, 18);
    const FlTensor *ys[2] = {&r, &p};
    KT_ERR(fl_kernel_sum(KE, ys, 2, &o), "sum: X[0] [2, 3] and another input [2, 2] must have the same shape");
    FlTensor all[] = {x, o, p, l, sl, bad, badshape, r, ri};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

static void test_shape_ops_values(void) {
    FlTensor a = KT_T(F, KT_SHAPE(2, 2), 1, 2, 3, 4), b = KT_T(F, KT_SHAPE(2, 1), 5, 6), o = FL_TENSOR_INIT;
    const FlTensor *xs[2] = {&a, &b};
    KT_OK(fl_kernel_concat(KE, xs, 2, 1, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(2, 3));
    KT_VALUES(&o, 0, 1, 2, 5, 3, 4, 6);
    FlTensor p0 = FL_TENSOR_INIT, p1 = FL_TENSOR_INIT;
    FlTensor *parts[2] = {&p0, &p1};
    KT_OK(fl_kernel_split(KE, &o, 1, 0, (int64_t[]){-1, 1}, 2, parts, 2));
    KT_VALUES(&p0, 0, 1, 2, 3, 4);
    KT_VALUES(&p1, 0, 5, 6);
    KT_ERR(fl_kernel_split(KE, &o, 1, 2, NULL, 0, parts, 2), "split: X [2, 3]: dim 1 (3) does not split into 2 equal parts");
    KT_ERR(fl_kernel_concat(KE, (const FlTensor *[]){&a, &b}, 2, 0, &p0), "concat: X[0] [2, 2] and X[1] [2, 1] differ outside axis 0");
    FlTensor r = FL_TENSOR_INIT;
    KT_OK(fl_kernel_reshape(KE, &o, (int64_t[]){-1, 0}, 2, &r));
    KT_SHAPE_IS(&r, KT_SHAPE(2, 3));
    KT_OK(fl_kernel_reshape(KE, &o, (int64_t[]){3, -1}, 2, &r));
    KT_SHAPE_IS(&r, KT_SHAPE(3, 2));
    CU_ASSERT_EQUAL(r.buf, o.buf); /* a view */
    KT_ERR(fl_kernel_reshape(KE, &o, (int64_t[]){4, -1}, 2, &r), "reshape: X [2, 3] (6 elements) cannot be reshaped to [4, -1]");
    KT_ERR(fl_kernel_reshape(KE, &o, (int64_t[]){5}, 1, &r), "reshape: X [2, 3] has 6 elements but shape [5] has 5");
    FlTensor t = FL_TENSOR_INIT;
    KT_OK(fl_kernel_transpose(KE, &o, (int[]){1, 0}, 2, &t));
    KT_SHAPE_IS(&t, KT_SHAPE(3, 2));
    KT_VALUES(&t, 0, 1, 3, 2, 4, 5, 6);
    KT_ERR(fl_kernel_transpose(KE, &o, (int[]){0, 0}, 2, &t), "transpose: axis [0, 0] is not a permutation of the 2 dims of X [2, 3]");
    FlTensor x = KT_T(F, KT_SHAPE(2, 4), 3, 9, 1, 9, 7, 2, 8, 4), am = FL_TENSOR_INIT;
    KT_OK(fl_kernel_argmax(KE, &x, -1, &am));
    CU_ASSERT_EQUAL(am.dtype, I);
    KT_SHAPE_IS(&am, KT_SHAPE(2));
    KT_VALUES(&am, 0, 1, 2); /* the first on ties */
    KT_OK(fl_kernel_argmax(KE, &x, 0, &am));
    KT_VALUES(&am, 0, 1, 0, 1, 0);
    FlTensor tv = FL_TENSOR_INIT, ti = FL_TENSOR_INIT;
    KT_OK(fl_kernel_top_k(KE, &x, 2, &tv, &ti));
    KT_SHAPE_IS(&tv, KT_SHAPE(2, 2));
    KT_VALUES(&tv, 0, 9, 9, 8, 7);
    KT_VALUES(&ti, 0, 1, 3, 2, 0);
    KT_ERR(fl_kernel_top_k(KE, &x, 5, &tv, &ti), "top_k: k (5) must be in [1, 4] for X [2, 4]");
    FlTensor lab = KT_T(I, KT_SHAPE(2, 1), 3, 1), acc = FL_TENSOR_INIT, cor = FL_TENSOR_INIT, tot = FL_TENSOR_INIT;
    KT_OK(fl_kernel_accuracy(KE, &tv, &ti, &lab, &acc, &cor, &tot));
    KT_VALUES(&acc, 0, 0.5);
    KT_VALUES(&cor, 0, 1);
    KT_VALUES(&tot, 0, 2);
    FlTensor all[] = {a, b, o, p0, p1, r, t, x, am, tv, ti, lab, acc, cor, tot};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

static void test_conv_pool_values(void) {
    FlTensor x = KT_T(F, KT_SHAPE(1, 1, 3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9);
    FlTensor w = KT_T(F, KT_SHAPE(1, 1, 2, 2), 1, 1, 1, 1), o = FL_TENSOR_INIT, o2 = FL_TENSOR_INIT;
    FlConv2dAttrs a = FL_CONV2D_ATTRS_DEFAULT;
    KT_OK(fl_kernel_conv2d(KE, &x, &w, &a, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(1, 1, 2, 2));
    KT_VALUES(&o, 1e-5, 12, 16, 24, 28);
    a = (FlConv2dAttrs){{2, 2}, {1, 1}, {1, 1}, 1};
    KT_OK(fl_kernel_conv2d(KE, &x, &w, &a, &o));
    KT_VALUES(&o, 1e-5, 1, 5, 11, 28);
    KT_OK(fl_kernel_conv2d_ref(KE, &x, &w, &a, &o2));
    KT_VALUES(&o2, 1e-5, 1, 5, 11, 28);
    FlTensor w3 = KT_T(F, KT_SHAPE(1, 2, 2, 2), 1, 1, 1, 1, 1, 1, 1, 1);
    KT_ERR(fl_kernel_conv2d(KE, &x, &w3, &a, &o),
           "conv2d: Input [1, 1, 3, 3] and Filter [1, 2, 2, 2] with groups 1: Filter's dim 1 (2) times groups must equal Input's channels (1), and both channel counts must divide by groups");
    FlTensor p = FL_TENSOR_INIT;
    FlTensor g = FL_TENSOR_INIT;
    KT_OK(fl_kernel_fill_constant(KE, 4, (int64_t[]){1, 1, 4, 4}, 0, NULL, F, &g));
    for (int i = 0; i < 16; i++) fl_tensor_set(&g, i, i);
    FlPool2dAttrs pa = {FL_POOL_MAX, {2, 2}, {2, 2}, {0, 0}, false, true, false};
    KT_OK(fl_kernel_pool2d(KE, &g, &pa, &p));
    KT_VALUES(&p, 0, 5, 7, 13, 15);
    pa.type = FL_POOL_AVG;
    KT_OK(fl_kernel_pool2d(KE, &g, &pa, &p));
    KT_VALUES(&p, 1e-6, 2.5, 4.5, 10.5, 12.5);
    FlPool2dAttrs pb = {FL_POOL_AVG, {3, 3}, {2, 2}, {1, 1}, false, true, false};
    KT_OK(fl_kernel_pool2d(KE, &x, &pb, &p));
    KT_VALUES(&p, 1e-6, 3, 4, 6, 7);
    pb.exclusive = false;
    KT_OK(fl_kernel_pool2d(KE, &x, &pb, &p));
    KT_VALUES(&p, 1e-6, 12.0 / 9, 16.0 / 9, 24.0 / 9, 28.0 / 9);
    FlPool2dAttrs gp = {FL_POOL_MAX, {1, 1}, {1, 1}, {0, 0}, true, true, false};
    KT_OK(fl_kernel_pool2d(KE, &x, &gp, &p));
    KT_SHAPE_IS(&p, KT_SHAPE(1, 1, 1, 1));
    KT_VALUES(&p, 0, 9);
    FlTensor all[] = {x, w, o, o2, w3, p, g};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

static void test_batch_norm_dropout_values(void) {
    FlTensor x = KT_T(F, KT_SHAPE(2, 1), 1, 3), sc = KT_T(F, KT_SHAPE(1), 2), bi = KT_T(F, KT_SHAPE(1), 0.5);
    FlTensor mean = KT_T(F, KT_SHAPE(1), 0), var = KT_T(F, KT_SHAPE(1), 1);
    FlTensor y = FL_TENSOR_INIT, mo = FL_TENSOR_INIT, vo = FL_TENSOR_INIT, sm = FL_TENSOR_INIT, sv = FL_TENSOR_INIT;
    KT_OK(fl_kernel_batch_norm(KE, &x, &sc, &bi, &mean, &var, 0.9, 0, false, &y, &mo, &vo, &sm, &sv));
    KT_VALUES(&y, 1e-6, -1.5, 2.5);
    KT_VALUES(&mo, 1e-6, 0.2);
    KT_VALUES(&vo, 1e-6, 1.0);
    KT_VALUES(&sm, 1e-6, 2);
    KT_VALUES(&sv, 1e-6, 1);
    KT_OK(fl_kernel_batch_norm(KE, &x, &sc, &bi, &mean, &var, 0.9, 0, true, &y, NULL, NULL, NULL, NULL));
    KT_VALUES(&y, 1e-6, 2.5, 6.5);
    FlTensor c2 = KT_T(F, KT_SHAPE(2), 1, 1);
    KT_ERR(fl_kernel_batch_norm(KE, &x, &c2, &bi, &mean, &var, 0.9, 0, false, &y, NULL, NULL, NULL, NULL),
           "batch_norm: X [2, 1] and Scale [2]: Scale must be [C] with C = 1 (X's dim 1)");
    FlTensor d = FL_TENSOR_INIT, m = FL_TENSOR_INIT, d2 = FL_TENSOR_INIT, m2 = FL_TENSOR_INIT, ones = FL_TENSOR_INIT;
    KT_OK(fl_kernel_fill_constant(KE, 2, (int64_t[]){100, 100}, 1, NULL, F, &ones));
    KT_OK(fl_kernel_dropout(KE, &ones, 0.3, false, false, 5, 0, &d, &m));
    KT_OK(fl_kernel_dropout(KE, &ones, 0.3, false, false, 5, 0, &d2, &m2));
    CU_ASSERT_EQUAL(memcmp(fl_tensor_data(&m), fl_tensor_data(&m2), fl_tensor_nbytes(&m)), 0);
    double kept = 0;
    for (int i = 0; i < 10000; i++) {
        double v = fl_tensor_get(&m, i);
        CU_ASSERT(v == 0 || v == 1);
        CU_ASSERT_EQUAL(fl_tensor_get(&d, i), v);
        kept += v;
    }
    CU_ASSERT(fabs(kept / 10000 - 0.7) < 0.02);
    KT_OK(fl_kernel_dropout(KE, &ones, 0.3, false, false, 5, 1, &d2, &m2)); /* the next step: a new mask */
    CU_ASSERT_NOT_EQUAL(memcmp(fl_tensor_data(&m), fl_tensor_data(&m2), fl_tensor_nbytes(&m)), 0);
    /* upscale_in_train: the same mask, the kept elements / 0.7; in test mode X itself */
    KT_OK(fl_kernel_dropout(KE, &ones, 0.3, false, true, 5, 0, &d2, &m2));
    CU_ASSERT_EQUAL(memcmp(fl_tensor_data(&m), fl_tensor_data(&m2), fl_tensor_nbytes(&m)), 0);
    for (int i = 0; i < 10000; i++) CU_ASSERT(fabs(fl_tensor_get(&d2, i) - fl_tensor_get(&m, i) / 0.7) < 1e-6);
    KT_OK(fl_kernel_dropout(KE, &x, 0.3, true, true, 5, 0, &d, NULL));
    KT_VALUES(&d, 1e-6, 1, 3);
    KT_OK(fl_kernel_dropout(KE, &ones, 1.0, false, true, 5, 0, &d2, &m2)); /* nothing kept: 0, not NaN */
    for (int i = 0; i < 10000; i++) CU_ASSERT(fl_tensor_get(&d2, i) == 0);
    KT_OK(fl_kernel_dropout(KE, &x, 0.3, true, false, 5, 0, &d, NULL));
    KT_VALUES(&d, 1e-6, 0.7, 2.1);
    KT_ERR(fl_kernel_dropout(KE, &x, 1.5, false, false, 5, 0, &d, &m), "dropout: dropout_prob (1.5) must be in [0, 1]");
    FlTensor all[] = {x, sc, bi, mean, var, y, mo, vo, sm, sv, c2, d, m, d2, m2, ones};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

static void test_optimizers(void) {
    FlTensor p = KT_T(F, KT_SHAPE(2), 1, 2), g = KT_T(F, KT_SHAPE(2), 0.5, -1), lr = KT_T(F, KT_SHAPE(1), 0.1);
    FlTensor po = FL_TENSOR_INIT;
    KT_OK(fl_kernel_sgd(KE, &p, &g, &lr, &po));
    KT_VALUES(&po, 1e-7, 0.95, 2.1);
    KT_VALUES(&p, 0, 1, 2); /* a separate output leaves Param alone */
    FlBuffer *before = p.buf;
    KT_OK(fl_kernel_sgd(KE, &p, &g, &lr, &p)); /* in place: sole owner, same buffer */
    CU_ASSERT_EQUAL(p.buf, before);
    KT_VALUES(&p, 1e-7, 0.95, 2.1);
    FlTensor view = FL_TENSOR_INIT;
    fl_tensor_ref(&view, &p);
    KT_OK(fl_kernel_sgd(KE, &p, &g, &lr, &p)); /* shared: replaced whole, the reader keeps the old */
    CU_ASSERT_NOT_EQUAL(p.buf, view.buf);
    KT_VALUES(&view, 1e-7, 0.95, 2.1);
    KT_VALUES(&p, 1e-6, 0.9, 2.2);

    FlTensor mp = KT_T(D, KT_SHAPE(1), 1), mg = KT_T(D, KT_SHAPE(1), 0.5), mv = KT_T(D, KT_SHAPE(1), 2);
    FlTensor mlr = KT_T(D, KT_SHAPE(1), 0.1), vo = FL_TENSOR_INIT;
    KT_OK(fl_kernel_momentum(KE, &mp, &mg, &mv, &mlr, 0.9, false, &po, &vo));
    KT_VALUES(&vo, 1e-12, 2.3);
    KT_VALUES(&po, 1e-12, 0.77);
    KT_OK(fl_kernel_momentum(KE, &mp, &mg, &mv, &mlr, 0.9, true, &po, &vo));
    KT_VALUES(&po, 1e-12, 0.743);

    FlTensor ap = KT_T(D, KT_SHAPE(1), 1), ag = KT_T(D, KT_SHAPE(1), 0.5), m1 = KT_T(D, KT_SHAPE(1), 0.1);
    FlTensor m2 = KT_T(D, KT_SHAPE(1), 0.2), alr = KT_T(D, KT_SHAPE(1), 0.01);
    FlTensor b1p = KT_T(F, KT_SHAPE(1), 0.9), b2p = KT_T(F, KT_SHAPE(1), 0.999);
    KT_OK(fl_kernel_adam(KE, &ap, &ag, &alr, &m1, &m2, &b1p, &b2p, 0.9, 0.999, 1e-8, &ap, &m1, &m2, &b1p, &b2p));
    KT_VALUES(&m1, 1e-12, 0.14);
    KT_VALUES(&m2, 1e-12, 0.20005);
    KT_VALUES(&ap, 1e-7, 0.9990101742275282);
    KT_VALUES(&b1p, 1e-7, 0.81);
    KT_VALUES(&b2p, 1e-7, 0.998001);
    FlTensor g3 = KT_T(D, KT_SHAPE(3), 1, 2, 3);
    KT_ERR(fl_kernel_adam(KE, &ap, &g3, &alr, &m1, &m2, &b1p, &b2p, 0.9, 0.999, 1e-8, &ap, &m1, &m2, NULL, NULL),
           "adam: Param [1] and Grad [3] must have the same shape");
    FlTensor all[] = {p, g, lr, po, view, mp, mg, mv, mlr, vo, ap, ag, m1, m2, alr, b1p, b2p, g3};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

/* Many threads run kernels on the same inputs at once; each must get the single-thread result. */
typedef struct Shared {
    FlTensor x, w, img, filt, expect_fc, expect_conv;
    int bad;
} Shared;

static void *worker(void *arg) {
    Shared *s = arg;
    FlConv2dAttrs a = {{1, 1}, {1, 1}, {1, 1}, 1};
    for (int i = 0; i < 10; i++) {
        FlErr e;
        FlTensor fc = FL_TENSOR_INIT, sm = FL_TENSOR_INIT, cv = FL_TENSOR_INIT, pool = FL_TENSOR_INIT;
        FlPool2dAttrs pa = {FL_POOL_MAX, {2, 2}, {2, 2}, {0, 0}, false, true, false};
        if (fl_kernel_mul(&e, &s->x, &s->w, 1, 1, &fc) || fl_kernel_softmax(&e, &fc, &sm) ||
            fl_kernel_conv2d(&e, &s->img, &s->filt, &a, &cv) || fl_kernel_pool2d(&e, &cv, &pa, &pool))
            __atomic_add_fetch(&s->bad, 1, __ATOMIC_RELAXED);
        else if (memcmp(fl_tensor_data(&sm), fl_tensor_data(&s->expect_fc), fl_tensor_nbytes(&sm)) ||
                 memcmp(fl_tensor_data(&pool), fl_tensor_data(&s->expect_conv), fl_tensor_nbytes(&pool)))
            __atomic_add_fetch(&s->bad, 1, __ATOMIC_RELAXED);
        FlTensor all[] = {fc, sm, cv, pool};
        kt_fini(4, all);
    }
    return NULL;
}

static void test_threads(void) {
    FlRng r;
    fl_rng_init(&r, 3);
    Shared s = {.x = kt_rand(&r, F, 2, (int64_t[]){16, 64}, -1, 1), .w = kt_rand(&r, F, 2, (int64_t[]){64, 10}, -1, 1),
                .img = kt_rand(&r, F, 4, (int64_t[]){2, 3, 8, 8}, -1, 1),
                .filt = kt_rand(&r, F, 4, (int64_t[]){4, 3, 3, 3}, -1, 1)};
    fl_tensor_init(&s.expect_fc);
    fl_tensor_init(&s.expect_conv);
    FlTensor fc = FL_TENSOR_INIT, cv = FL_TENSOR_INIT;
    FlConv2dAttrs a = {{1, 1}, {1, 1}, {1, 1}, 1};
    FlPool2dAttrs pa = {FL_POOL_MAX, {2, 2}, {2, 2}, {0, 0}, false, true, false};
    KT_OK(fl_kernel_mul(KE, &s.x, &s.w, 1, 1, &fc));
    KT_OK(fl_kernel_softmax(KE, &fc, &s.expect_fc));
    KT_OK(fl_kernel_conv2d(KE, &s.img, &s.filt, &a, &cv));
    KT_OK(fl_kernel_pool2d(KE, &cv, &pa, &s.expect_conv));
    pthread_t th[4];
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, worker, &s);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    CU_ASSERT_EQUAL(s.bad, 0);
    FlTensor all[] = {s.x, s.w, s.img, s.filt, s.expect_fc, s.expect_conv, fc, cv};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

int main(void) {
    static const KtCase cases[] = {
        KT_TEST(test_fill_and_cast),         KT_TEST(test_mul_matmul_values),
        KT_TEST(test_elementwise_values),    KT_TEST(test_int_wrap),
        KT_TEST(test_float_to_int_saturates), KT_TEST(test_compare_logical),
        KT_TEST(test_activation_values),     KT_TEST(test_softmax_loss_reduce_values),
        KT_TEST(test_shape_ops_values),      KT_TEST(test_conv_pool_values),
        KT_TEST(test_batch_norm_dropout_values), KT_TEST(test_optimizers),
        KT_TEST(test_threads),
    };
    return kt_run("kernels: values, errors, threads", cases, (int)FL_ARRAY_LEN(cases));
}
