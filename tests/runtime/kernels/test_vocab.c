/* test_vocab.c: the sparse gradients of the losses over large vocabularies (vocab.c): with
 * is_sparse, hierarchical_sigmoid_grad and nce_grad give W's gradient as a SelectedRows whose rows
 * are the nodes (classes) the batch reached, ascending and each once, and whose values are the
 * dense gradient's rows bit for bit, the unreached rows of the dense gradient being zero; dX and
 * dBias are the dense call's. (The values themselves are checked by finite differences in
 * tests/runtime/core/test_grad.c.) */
#include "tests/runtime/kernels/kt.h"

#include "runtime/kernels/kernels_vocab.h"

/* sr holds exactly the rows `want` (n of them, ascending) of the dense gradient dw, whose other
 * rows are all zero; height is dw's. */
static void rows_match(const FlSelectedRows *sr, const FlTensor *dw, const int64_t *want, int64_t n) {
    int64_t R = dw->ne[0], D = dw->ne[1];
    CU_ASSERT_EQUAL_FATAL(sr->rows.ndim, 1);
    CU_ASSERT_EQUAL_FATAL(sr->rows.ne[0], n);
    CU_ASSERT_EQUAL(sr->height, R);
    CU_ASSERT_EQUAL_FATAL(sr->value.ndim, 2);
    CU_ASSERT_EQUAL_FATAL(sr->value.ne[0], n);
    CU_ASSERT_EQUAL_FATAL(sr->value.ne[1], D);
    const int64_t *rows = fl_tensor_data(&sr->rows);
    int64_t k = 0;
    for (int64_t r = 0; r < R; r++) {
        bool listed = k < n && rows[k] == r;
        if (listed) {
            CU_ASSERT_EQUAL(rows[k], want[k]);
        }
        for (int64_t d = 0; d < D; d++) {
            double dense = fl_tensor_get(dw, r * D + d);
            if (listed) {
                CU_ASSERT_EQUAL(fl_tensor_get(&sr->value, k * D + d), dense);
            } else {
                CU_ASSERT_EQUAL(dense, 0.0);
            }
        }
        k += listed;
    }
    CU_ASSERT_EQUAL(k, n);
}

static void same_tensor(const FlTensor *a, const FlTensor *b) {
    CU_ASSERT_FATAL(fl_tensor_same_shape(a, b));
    for (int64_t i = 0; i < fl_tensor_numel(a); i++) CU_ASSERT_EQUAL(fl_tensor_get(a, i), fl_tensor_get(b, i));
}

/* A custom tree over 6 inner nodes whose paths reach nodes 4, 1, 0 and 2 (3 and 5 never), and the
 * default tree over 9 classes, whose classes 0, 3 and 8 reach nodes 0, 1, 2, 3, 5 and 7 of 8 (4 and 6 never). */
static void test_hsigmoid_sparse(void) {
    FlRng r;
    fl_rng_init(&r, 5);
    for (int custom = 0; custom < 2; custom++) {
        int64_t N = 3, D = 4, R = custom ? 6 : 8;
        FlTensor x = kt_rand(&r, FL_DT_FLOAT32, 2, (int64_t[]){N, D}, -1, 1);
        FlTensor w = kt_rand(&r, FL_DT_FLOAT32, 2, (int64_t[]){R, D}, -1, 1);
        FlTensor b = kt_rand(&r, FL_DT_FLOAT32, 2, (int64_t[]){R, 1}, -1, 1);
        FlTensor label = KT_T(FL_DT_INT64, KT_SHAPE(3, 1), 0, 3, 8);
        FlTensor pt = KT_T(FL_DT_INT64, KT_SHAPE(3, 3), 4, 1, -1, 0, -1, -1, 2, 4, 0);
        FlTensor pc = KT_T(FL_DT_INT64, KT_SHAPE(3, 3), 1, 0, 0, 1, 0, 0, 0, 1, 1);
        FlHsigmoidTree t = {custom ? 6 : 9, custom ? &pt : NULL, custom ? &pc : NULL};
        FlTensor out = FL_TENSOR_INIT, pre = FL_TENSOR_INIT, dout = KT_T(FL_DT_FLOAT32, KT_SHAPE(3, 1), 1.0, -0.5, 2.0);
        FlTensor dx = FL_TENSOR_INIT, dw = FL_TENSOR_INIT, db = FL_TENSOR_INIT, dx2 = FL_TENSOR_INIT,
                 db2 = FL_TENSOR_INIT;
        FlSelectedRows sr;
        fl_rows_init(&sr);
        KT_OK(fl_kernel_hsigmoid(KE, &x, &w, &label, &b, &t, &out, &pre));
        KT_OK(fl_kernel_hsigmoid_grad(KE, &x, &w, &label, &b, &t, &pre, &dout, &dx, &dw, NULL, &db));
        KT_OK(fl_kernel_hsigmoid_grad(KE, &x, &w, &label, &b, &t, &pre, &dout, &dx2, NULL, &sr, &db2));
        if (custom) rows_match(&sr, &dw, (int64_t[]){0, 1, 2, 4}, 4);
        else rows_match(&sr, &dw, (int64_t[]){0, 1, 2, 3, 5, 7}, 6);
        same_tensor(&dx, &dx2);
        same_tensor(&db, &db2);
        fl_rows_fini(&sr);
        FlTensor all[] = {x, w, b, label, pt, pc, out, pre, dout, dx, dw, db, dx2, db2};
        kt_fini((int)FL_ARRAY_LEN(all), all);
    }
}

/* nce over 7 classes, 2 true labels a row and the negatives 5 and 1 for every row: the classes
 * sampled are 0, 1, 3, 5 (2, 4 and 6 never). */
static void test_nce_sparse(void) {
    FlRng r;
    fl_rng_init(&r, 9);
    int64_t N = 3, D = 4, R = 7, neg[] = {5, 1};
    FlTensor x = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){N, D}, -1, 1);
    FlTensor w = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){R, D}, -1, 1);
    FlTensor b = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){R, 1}, -1, 1);
    FlTensor label = KT_T(FL_DT_INT64, KT_SHAPE(3, 2), 0, 3, 3, 3, 5, 0);
    FlNceAttrs a = {.num_total = R, .num_neg = 2, .sampler = 0, .neg = neg, .seed = 1, .step = 0};
    FlTensor cost = FL_TENSOR_INIT, logits = FL_TENSOR_INIT, labels = FL_TENSOR_INIT;
    FlTensor dcost = KT_T(FL_DT_FLOAT64, KT_SHAPE(3, 1), 0.5, 1.0, -2.0);
    FlTensor dx = FL_TENSOR_INIT, dw = FL_TENSOR_INIT, db = FL_TENSOR_INIT, dx2 = FL_TENSOR_INIT, db2 = FL_TENSOR_INIT;
    FlSelectedRows sr;
    fl_rows_init(&sr);
    KT_OK(fl_kernel_nce(KE, &x, &label, &w, &b, NULL, &a, &cost, &logits, &labels));
    KT_OK(fl_kernel_nce_grad(KE, &x, &label, &w, &b, NULL, &a, &logits, &labels, &dcost, &dx, &dw, NULL, &db));
    KT_OK(fl_kernel_nce_grad(KE, &x, &label, &w, &b, NULL, &a, &logits, &labels, &dcost, &dx2, NULL, &sr, &db2));
    rows_match(&sr, &dw, (int64_t[]){0, 1, 3, 5}, 4);
    same_tensor(&dx, &dx2);
    same_tensor(&db, &db2);
    fl_rows_fini(&sr);
    FlTensor all[] = {x, w, b, label, cost, logits, labels, dcost, dx, dw, db, dx2, db2};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

int main(void) {
    static const KtCase tc[] = {KT_TEST(test_hsigmoid_sparse), KT_TEST(test_nce_sparse)};
    return kt_run("vocab kernels' sparse gradients", tc, (int)FL_ARRAY_LEN(tc));
}
