/* test_tree.c: tree_conv (runtime/kernels/tree.c) against a reference written from Fluid's
 * definition another way: each node's patch by recursion over its descendants (depth below
 * max_depth, the child's place among its parent's children), in double; a case worked by hand;
 * float32 and float64; gradients by kt_grad_check's central differences in float64; and the
 * errors of trees that do not fit. */
#include "tests/runtime/kernels/kt.h"

#include "runtime/kernels/kernels_tree.h"

enum { B = 2, N = 7, E = 7, F = 3, O = 2, K = 2 };
/* instance 0: 1 -> 2 3, 2 -> 4 5, 3 -> 6 (node 7's row unused); instance 1: a chain 1 -> 2 -> 3
 * -> 4, then a pair holding a 0 that ends the edges */
static const double edges_v[B * E * 2] = {1, 2, 1, 3, 2, 4, 2, 5, 3, 6, 0, 0, 0, 0,
                                          1, 2, 2, 3, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0};

static FlTensor make_edges(FlDType dt) {
    return kt_make(dt, 3, (int64_t[]){B, E, 2}, edges_v);
}

static int64_t edge(int64_t b, int64_t j, int s) { return (int64_t)edges_v[(b * E + j) * 2 + s]; }

/* the edges of instance b up to the first pair holding a 0 */
static int64_t nedges(int64_t b) {
    int64_t j = 0;
    while (j < E && edge(b, j, 0) && edge(b, j, 1)) j++;
    return j;
}

/* adds node v's share (depth d, the i-th of c children) and its descendants' to out[K'] */
static void add(const FlTensor *x, const FlTensor *w, int64_t b, int64_t v, int64_t d, int64_t i, int64_t c,
                int64_t md, double *out) {
    if (d >= md) return;
    double et = (double)(md - d) / (double)md, el = (1 - et) * (c == 1 ? 0.5 : (double)(i - 1) / (double)(c - 1));
    double er = (1 - et) * (1 - el);
    for (int64_t f = 0; f < F; f++) {
        double xv = fl_tensor_get(x, (b * N + v - 1) * F + f);
        for (int64_t k = 0; k < O * K; k++)
            out[k] += xv * (el * fl_tensor_get(w, (f * 3 + 0) * O * K + k) + er * fl_tensor_get(w, (f * 3 + 1) * O * K + k) +
                            et * fl_tensor_get(w, (f * 3 + 2) * O * K + k));
    }
    int64_t m = nedges(b), nc = 0, at = 0;
    for (int64_t j = 0; j < m; j++) nc += edge(b, j, 0) == v;
    for (int64_t j = 0; j < m; j++)
        if (edge(b, j, 0) == v) add(x, w, b, edge(b, j, 1), d + 1, ++at, nc, md, out);
}

static void test_tree_by_hand(void) {
    /* 1 -> 2, one feature, W = (1, 10, 100), X = (1, 2), max_depth 2: node 1's patch is 1 (eta_t
     * 1) and 2 (depth 1, the only child: eta_t 0.5, eta_l 0.25, eta_r 0.375): 100 + 2 * (0.25 +
     * 3.75 + 50) = 208; node 2's is 2 alone: 200 */
    FlTensor x = KT_T(FL_DT_FLOAT64, KT_SHAPE(1, 2, 1), 1, 2), ed = KT_T(FL_DT_INT32, KT_SHAPE(1, 1, 2), 1, 2);
    FlTensor w = KT_T(FL_DT_FLOAT64, KT_SHAPE(1, 3, 1, 1), 1, 10, 100), o = FL_TENSOR_INIT;
    KT_OK(fl_kernel_tree_conv(KE, &x, &ed, &w, 2, &o));
    kt_shape_is(&o, 4, (int64_t[]){1, 2, 1, 1});
    CU_ASSERT(kt_values(&o, (double[]){208, 200}, 2, 1e-12));
    FlTensor all[] = {x, ed, w, o};
    kt_fini(4, all);
}

static void test_tree_values(void) {
    FlRng r;
    fl_rng_init(&r, 41);
    const FlDType dts[2] = {FL_DT_FLOAT64, FL_DT_FLOAT32};
    for (int t = 0; t < 2; t++)
        for (int64_t md = 1; md <= 4; md++) {
            FlTensor x = kt_rand(&r, dts[t], 3, (int64_t[]){B, N, F}, -1, 1);
            FlTensor w = kt_rand(&r, dts[t], 4, (int64_t[]){F, 3, O, K}, -1, 1), ed = make_edges(FL_DT_INT64);
            FlTensor o = FL_TENSOR_INIT;
            KT_OK(fl_kernel_tree_conv(KE, &x, &ed, &w, md, &o));
            kt_shape_is(&o, 4, (int64_t[]){B, N, O, K});
            double want[B * N * O * K] = {0};
            for (int64_t b = 0; b < B; b++)
                for (int64_t u = 1; u <= nedges(b) + 1; u++) add(&x, &w, b, u, 0, 1, 1, md, &want[(b * N + u - 1) * O * K]);
            CU_ASSERT(kt_values(&o, want, B * N * O * K, t == 0 ? 1e-12 : 1e-5));
            FlTensor all[] = {x, w, ed, o};
            kt_fini(4, all);
        }
}

typedef struct TreeCtx {
    const FlTensor *edges;
    int64_t md;
} TreeCtx;

static FlStatus tree_fwd(const void *ctx, FlErr *e, FlTensor *in, FlTensor *out) {
    const TreeCtx *c = ctx;
    return fl_kernel_tree_conv(e, &in[0], c->edges, &in[1], c->md, out);
}
static FlStatus tree_bwd(const void *ctx, FlErr *e, FlTensor *in, const FlTensor *out, const FlTensor *dout,
                         FlTensor *din) {
    (void)out;
    const TreeCtx *c = ctx;
    return fl_kernel_tree_conv_grad(e, &in[0], c->edges, &in[1], dout, c->md, &din[0], &din[1]);
}

static void test_tree_grads(void) {
    FlRng r;
    fl_rng_init(&r, 42);
    FlTensor ed = make_edges(FL_DT_INT32);
    for (int64_t md = 1; md <= 3; md++) {
        TreeCtx c = {&ed, md};
        FlTensor in[2] = {kt_rand(&r, FL_DT_FLOAT64, 3, (int64_t[]){B, N, F}, -1, 1),
                          kt_rand(&r, FL_DT_FLOAT64, 4, (int64_t[]){F, 3, O, K}, -1, 1)};
        CU_ASSERT(kt_grad_check("tree_conv", &c, 2, in, (bool[]){true, true}, tree_fwd, tree_bwd, 1e-6));
        kt_fini(2, in);
    }
    fl_tensor_fini(&ed);
}

static void test_tree_errors(void) {
    FlRng r;
    fl_rng_init(&r, 43);
    FlTensor x = kt_rand(&r, FL_DT_FLOAT64, 3, (int64_t[]){1, 3, 2}, -1, 1);
    FlTensor w = kt_rand(&r, FL_DT_FLOAT64, 4, (int64_t[]){2, 3, 1, 1}, -1, 1), o = FL_TENSOR_INIT;
    FlTensor far = KT_T(FL_DT_INT32, KT_SHAPE(1, 2, 2), 1, 2, 2, 4);
    KT_ERR(fl_kernel_tree_conv(KE, &x, &far, &w, 2, &o),
           "tree_conv: EdgeSet [1, 2, 2] [0, 1] = (2, 4): the node ids of instance 0's tree of 3 nodes are 1 to 3");
    FlTensor many = KT_T(FL_DT_INT32, KT_SHAPE(1, 3, 2), 1, 2, 1, 3, 3, 4);
    KT_ERR(fl_kernel_tree_conv(KE, &x, &many, &w, 2, &o),
           "tree_conv: instance 0 of EdgeSet [1, 3, 2] has 3 edges without a 0, so 4 nodes, more than NodesVector "
           "[1, 3, 2]'s 3");
    FlTensor ok = KT_T(FL_DT_INT32, KT_SHAPE(1, 1, 2), 1, 2);
    KT_ERR(fl_kernel_tree_conv(KE, &x, &ok, &w, 0, &o), "tree_conv: max_depth must be at least 1, found 0");
    FlTensor fe = KT_T(FL_DT_FLOAT64, KT_SHAPE(1, 1, 2), 1, 2);
    KT_ERR(fl_kernel_tree_conv(KE, &x, &fe, &w, 2, &o), "tree_conv: EdgeSet [1, 1, 2] has dtype float64; int32 or int64 expected");
    FlTensor all[] = {x, w, o, far, many, ok, fe};
    kt_fini(7, all);
}

int main(void) {
    KtCase cases[] = {KT_TEST(test_tree_by_hand), KT_TEST(test_tree_values), KT_TEST(test_tree_grads),
                      KT_TEST(test_tree_errors)};
    return kt_run("tree", cases, (int)FL_ARRAY_LEN(cases));
}
