/* test_tensor.c: tensors (allocation, views, copies, reference counts, shape strings, failure
 * paths) and the random generator (determinism, golden values, distributions). */
#include <pthread.h>

#include "tests/runtime/kernels/kt.h"

static void test_tensor_alloc(void) {
    FlErr e;
    FlTensor t = FL_TENSOR_INIT;
    CU_ASSERT_FALSE(fl_tensor_has_data(&t));
    CU_ASSERT_EQUAL(fl_tensor_numel(&t), 1);
    CU_ASSERT_STRING_EQUAL(fl_tensor_shape(&t).s, "[]");
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &t, FL_DT_FLOAT32, 2, (int64_t[]){128, 784}), FL_OK);
    CU_ASSERT_STRING_EQUAL(fl_tensor_shape(&t).s, "[128, 784]");
    CU_ASSERT_EQUAL(fl_tensor_numel(&t), 128 * 784);
    CU_ASSERT_EQUAL(fl_tensor_nbytes(&t), 128 * 784 * 4);
    CU_ASSERT_EQUAL((uintptr_t)fl_tensor_data(&t) % 64, 0);
    const float *p = fl_tensor_data(&t);
    bool zero = true;
    for (int i = 0; i < 128 * 784; i++) zero = zero && p[i] == 0;
    CU_ASSERT(zero);
    CU_ASSERT_EQUAL(fl_buffer_refs(t.buf), 1);
    /* re-allocating into the same tensor releases the old buffer */
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc_like(&e, &t, &t, FL_DT_INT64), FL_OK);
    CU_ASSERT_EQUAL(t.dtype, FL_DT_INT64);
    CU_ASSERT_STRING_EQUAL(fl_tensor_shape(&t).s, "[128, 784]");
    fl_tensor_fini(&t);
    fl_tensor_fini(&t); /* idempotent */
    fl_tensor_fini(NULL);
    /* zero-sized dims are fine */
    CU_ASSERT_EQUAL(fl_tensor_alloc(&e, &t, FL_DT_FLOAT64, 2, (int64_t[]){0, 5}), FL_OK);
    CU_ASSERT_EQUAL(fl_tensor_numel(&t), 0);
    fl_tensor_fini(&t);
}

static void test_tensor_alloc_errors(void) {
    FlErr e;
    FlTensor t = FL_TENSOR_INIT;
    CU_ASSERT_EQUAL(fl_tensor_alloc(&e, &t, FL_DT_FLOAT32, 2, (int64_t[]){3, -1}), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, "shape [3, -1] has a negative dimension");
    CU_ASSERT_EQUAL(fl_tensor_alloc(&e, &t, FL_DT_FLOAT32, 2, (int64_t[]){1LL << 40, 1LL << 40}), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, "shape [1099511627776, 1099511627776] has too many elements");
    /* with a 0 dim in any place: the strides of the others would overflow (fuzz_pyfeed) */
    CU_ASSERT_EQUAL(fl_tensor_alloc(&e, &t, FL_DT_FLOAT32, 3, (int64_t[]){0, 1LL << 40, 1LL << 40}), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, "shape [0, 1099511627776, 1099511627776] has too many elements");
    CU_ASSERT_EQUAL(fl_tensor_alloc(&e, &t, FL_DT_FLOAT32, 3, (int64_t[]){INT64_MAX, 0, 3}), FL_ERROR);
    CU_ASSERT_EQUAL(fl_tensor_alloc(&e, &t, FL_DT_FLOAT32, 3, (int64_t[]){INT64_MAX, 0, 1}), FL_OK);
    fl_tensor_fini(&t);
    CU_ASSERT_EQUAL(fl_tensor_alloc(&e, &t, FL_DT_FLOAT64, 1, (int64_t[]){1LL << 62}), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, "shape [4611686018427387904] is too large to allocate");
    CU_ASSERT_EQUAL(fl_tensor_alloc(&e, &t, FL_DT_FLOAT32, 9, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1}), FL_ERROR);
    /* a user-sized allocation that the system refuses: an error, not an abort (256 TiB) */
    CU_ASSERT_EQUAL(fl_tensor_alloc(&e, &t, FL_DT_FLOAT32, 2, (int64_t[]){1LL << 24, 1LL << 24}), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "cannot allocate a float32 tensor of shape [16777216, 16777216]"));
    CU_ASSERT_FALSE(fl_tensor_has_data(&t));
}

static void test_tensor_views_and_copies(void) {
    FlErr e;
    FlTensor a = KT_T(FL_DT_FLOAT32, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    FlTensor v = FL_TENSOR_INIT, c = FL_TENSOR_INIT, r = FL_TENSOR_INIT;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_view(&e, &v, &a, 3, 1, (int64_t[]){3}), FL_OK);
    CU_ASSERT_EQUAL(v.buf, a.buf);
    CU_ASSERT_EQUAL(fl_buffer_refs(a.buf), 2);
    KT_VALUES(&v, 0, 4, 5, 6);
    CU_ASSERT_EQUAL(fl_tensor_view(&e, &r, &a, 4, 1, (int64_t[]){3}), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, "a view of shape [3] at element 4 does not fit in a tensor of shape [2, 3]");
    CU_ASSERT_EQUAL_FATAL(fl_tensor_copy(&e, &c, &v), FL_OK);
    CU_ASSERT_NOT_EQUAL(c.buf, a.buf);
    fl_tensor_set(&c, 0, 40);
    CU_ASSERT_EQUAL(fl_tensor_get(&v, 0), 4);
    fl_tensor_ref(&r, &a);
    CU_ASSERT_EQUAL(fl_buffer_refs(a.buf), 3);
    CU_ASSERT(fl_tensor_same_shape(&r, &a));
    CU_ASSERT_FALSE(fl_tensor_same_shape(&v, &a));
    fl_tensor_ref(&r, &r); /* self-assignment keeps the count */
    CU_ASSERT_EQUAL(fl_buffer_refs(a.buf), 3);
    fl_tensor_fini(&a);
    KT_VALUES(&v, 0, 4, 5, 6); /* the view keeps the buffer alive */
    CU_ASSERT_EQUAL(fl_buffer_refs(v.buf), 2);
    /* conversions through get/set */
    FlTensor b = KT_T(FL_DT_BOOL, KT_SHAPE(3), 0, 2, -1);
    KT_VALUES(&b, 0, 0, 1, 1);
    FlTensor i = KT_T(FL_DT_INT64, KT_SHAPE(2), 1e15, -3);
    KT_VALUES(&i, 0, 1e15, -3);
    FlTensor all[] = {v, c, r, b, i};
    kt_fini(5, all);
}

static void *ref_worker(void *arg) {
    FlTensor *shared = arg;
    for (int i = 0; i < 2000; i++) {
        FlTensor mine = FL_TENSOR_INIT;
        fl_tensor_ref(&mine, shared);
        fl_tensor_fini(&mine);
    }
    return NULL;
}

static void test_tensor_refcount_threads(void) {
    FlTensor t = KT_T(FL_DT_FLOAT32, KT_SHAPE(4), 1, 2, 3, 4);
    pthread_t th[4];
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, ref_worker, &t);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    CU_ASSERT_EQUAL(fl_buffer_refs(t.buf), 1);
    fl_tensor_fini(&t);
}

static void test_rng_determinism(void) {
    FlRng a, b, c;
    fl_rng_init(&a, 42);
    fl_rng_init(&b, 42);
    fl_rng_init(&c, 43);
    int differ = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = fl_rng_next(&a), y = fl_rng_next(&b), z = fl_rng_next(&c);
        CU_ASSERT_EQUAL(x, y);
        differ += x != z;
    }
    CU_ASSERT(differ > 990);
    for (int i = 0; i < 1000; i++) {
        double g1 = fl_rng_gaussian(&a), g2 = fl_rng_gaussian(&b);
        CU_ASSERT_EQUAL(memcmp(&g1, &g2, sizeof g1), 0);
    }
    /* golden values: the same bits on every platform */
    FlRng g;
    fl_rng_init(&g, 0);
    CU_ASSERT_EQUAL(fl_rng_next(&g), UINT64_C(0x99EC5F36CB75F2B4));
    fl_rng_init(&g, 1);
    double v = fl_rng_gaussian(&g);
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    CU_ASSERT_EQUAL(bits, UINT64_C(0xBFF8B93B94E8CC62));
    CU_ASSERT(fabs(v - -1.5452228371402943) < 1e-14); /* libm Box-Muller agrees to rounding */
    /* seeds mixed with a stream differ from plain seeds and from each other */
    fl_rng_init2(&a, 7, 1);
    fl_rng_init2(&b, 7, 2);
    CU_ASSERT_NOT_EQUAL(fl_rng_next(&a), fl_rng_next(&b));
}

static void test_rng_distributions(void) {
    FlRng r;
    fl_rng_init(&r, 5);
    double s = 0, s2 = 0, us = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        double u = fl_rng_uniform(&r);
        float f = fl_rng_uniform_f32(&r);
        CU_ASSERT(u >= 0 && u < 1 && f >= 0 && f < 1);
        us += u;
        double g = fl_rng_gaussian(&r);
        s += g;
        s2 += g * g;
    }
    CU_ASSERT(fabs(us / n - 0.5) < 0.005);
    CU_ASSERT(fabs(s / n) < 0.01);
    CU_ASSERT(fabs(s2 / n - 1) < 0.02);
}

int main(void) {
    static const KtCase cases[] = {
        KT_TEST(test_tensor_alloc),         KT_TEST(test_tensor_alloc_errors),
        KT_TEST(test_tensor_views_and_copies), KT_TEST(test_tensor_refcount_threads),
        KT_TEST(test_rng_determinism),      KT_TEST(test_rng_distributions),
    };
    return kt_run("tensor and rng", cases, (int)FL_ARRAY_LEN(cases));
}
