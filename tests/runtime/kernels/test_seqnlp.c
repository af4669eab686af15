/* test_seqnlp.c: the kernels of seqnlp.c that the .fl cases cannot pin down: sampling_id's draws
 * follow each row's distribution (frequencies over 20000 rows within 5 standard deviations), a
 * step draws anew while the same (seed, step) repeats its draw, the last id takes what rounding
 * leaves, and its errors. */
#include "runtime/kernels/kernels_seqnlp.h"
#include "tests/runtime/kernels/kt.h"

static void test_sampling_id_frequencies(void) {
    const int64_t N = 20000;
    const double p[3] = {0.1, 0.2, 0.7};
    FlTensor x = FL_TENSOR_INIT, a = FL_TENSOR_INIT, b = FL_TENSOR_INIT, c = FL_TENSOR_INIT;
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &x, FL_DT_FLOAT32, 2, (int64_t[]){N, 3}), FL_OK);
    for (int64_t i = 0; i < N * 3; i++) fl_tensor_set(&x, i, p[i % 3]);
    KT_OK(fl_kernel_sampling_id(KE, &x, 0, 1, 42, 0, &a));
    KT_SHAPE_IS(&a, KT_SHAPE(20000));
    CU_ASSERT_EQUAL(a.dtype, FL_DT_INT64);
    int64_t n[3] = {0, 0, 0};
    for (int64_t i = 0; i < N; i++) {
        int64_t id = ((const int64_t *)fl_tensor_data(&a))[i];
        CU_ASSERT_FATAL(id >= 0 && id < 3);
        n[id]++;
    }
    for (int k = 0; k < 3; k++) {
        double sd = sqrt((double)N * p[k] * (1 - p[k]));
        if (!(fabs((double)n[k] - (double)N * p[k]) <= 5 * sd))
            fprintf(stderr, "\nid %d drawn %lld times of %lld, expected %g\n", k, (long long)n[k], (long long)N,
                    (double)N * p[k]);
        CU_ASSERT(fabs((double)n[k] - (double)N * p[k]) <= 5 * sd);
    }
    /* the same seed and step: the same draw; the next step: another one */
    KT_OK(fl_kernel_sampling_id(KE, &x, 0, 1, 42, 0, &b));
    KT_OK(fl_kernel_sampling_id(KE, &x, 0, 1, 42, 1, &c));
    int64_t same = 0, differ = 0;
    for (int64_t i = 0; i < N; i++) {
        const int64_t *pa = fl_tensor_data(&a), *pb = fl_tensor_data(&b), *pc = fl_tensor_data(&c);
        same += pa[i] == pb[i];
        differ += pa[i] != pc[i];
    }
    CU_ASSERT_EQUAL(same, N);
    CU_ASSERT(differ > N / 4);
    FlTensor all[] = {x, a, b, c};
    kt_fini(4, all);
}

static void test_sampling_id_edges(void) {
    /* r = 0.5 exactly (min = max): 0.5 - 0.3 - 0.3 < 0 at id 1; a row summing below r: the last id */
    FlTensor x = KT_T(FL_DT_FLOAT64, KT_SHAPE(3, 3), 0.3, 0.3, 0.4, 0.1, 0.1, 0.1, 1, 0, 0), o = FL_TENSOR_INIT;
    KT_OK(fl_kernel_sampling_id(KE, &x, 0.5, 0.5, 7, 0, &o));
    KT_VALUES(&o, 0, 1, 2, 0);
    KT_ERR(fl_kernel_sampling_id(KE, &x, 0.6, 0.5, 7, 0, &o), "sampling_id: min (0.6) is greater than max (0.5)");
    FlTensor all[] = {x, o};
    kt_fini(2, all);
}

int main(void) {
    static const KtCase tc[] = {KT_TEST(test_sampling_id_frequencies), KT_TEST(test_sampling_id_edges)};
    return kt_run("seqnlp kernels", tc, (int)FL_ARRAY_LEN(tc));
}
