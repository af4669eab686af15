/* test_fast.c: the OpenBLAS fast paths (mul, matmul, conv2d and their gradients, float32) give
 * the reference kernels' results on random shapes, within float32 rounding. */
#include "tests/runtime/kernels/kt.h"

#define F FL_DT_FLOAT32
static FlRng rng;
static const double TOL = 1e-4;

static int64_t rnd(int64_t lo, int64_t hi) { return lo + (int64_t)(fl_rng_next(&rng) % (uint64_t)(hi - lo + 1)); }

static void same(const char *what, const FlTensor *a, const FlTensor *b) {
    double d = kt_rel_diff(a, b);
    if (!(d <= TOL)) fprintf(stderr, "\n%s: fast and reference differ by %g\n", what, d);
    CU_ASSERT(d <= TOL);
}

static void test_fast_mul(void) {
    for (int it = 0; it < 12; it++) {
        int64_t M = rnd(1, 40), K = rnd(1, 50), N = rnd(1, 30), M2 = rnd(1, 3);
        FlTensor x = kt_rand(&rng, F, 3, (int64_t[]){M2, M, K}, -1, 1);
        FlTensor y = kt_rand(&rng, F, 2, (int64_t[]){K, N}, -1, 1);
        FlTensor o1 = FL_TENSOR_INIT, o2 = FL_TENSOR_INIT, g = FL_TENSOR_INIT;
        FlTensor dx1 = FL_TENSOR_INIT, dy1 = FL_TENSOR_INIT, dx2 = FL_TENSOR_INIT, dy2 = FL_TENSOR_INIT;
        KT_OK(fl_kernel_mul(KE, &x, &y, 2, 1, &o1));
        KT_OK(fl_kernel_mul_ref(KE, &x, &y, 2, 1, &o2));
        same("mul", &o1, &o2);
        g = kt_rand(&rng, F, o1.ndim, o1.ne, -1, 1);
        KT_OK(fl_kernel_mul_grad(KE, &x, &y, &g, 2, 1, &dx1, &dy1));
        KT_OK(fl_kernel_mul_grad_ref(KE, &x, &y, &g, 2, 1, &dx2, &dy2));
        same("mul_grad dX", &dx1, &dx2);
        same("mul_grad dY", &dy1, &dy2);
        FlTensor all[] = {x, y, o1, o2, g, dx1, dy1, dx2, dy2};
        kt_fini((int)FL_ARRAY_LEN(all), all);
    }
}

static void test_fast_matmul(void) {
    for (int it = 0; it < 16; it++) {
        bool tx = it & 1, ty = it & 2;
        int64_t M = rnd(1, 30), K = rnd(1, 30), N = rnd(1, 30), B = rnd(1, 3);
        int mode = it / 4; /* 0: 2-D, 1: batched, 2: 3-D x 2-D, 3: 2-D x 3-D */
        int64_t xs[3] = {B, tx ? K : M, tx ? M : K}, ys[3] = {B, ty ? N : K, ty ? K : N};
        FlTensor x = mode == 0 || mode == 3 ? kt_rand(&rng, F, 2, xs + 1, -1, 1) : kt_rand(&rng, F, 3, xs, -1, 1);
        FlTensor y = mode == 0 || mode == 2 ? kt_rand(&rng, F, 2, ys + 1, -1, 1) : kt_rand(&rng, F, 3, ys, -1, 1);
        FlTensor o1 = FL_TENSOR_INIT, o2 = FL_TENSOR_INIT, g = FL_TENSOR_INIT;
        FlTensor dx1 = FL_TENSOR_INIT, dy1 = FL_TENSOR_INIT, dx2 = FL_TENSOR_INIT, dy2 = FL_TENSOR_INIT;
        KT_OK(fl_kernel_matmul(KE, &x, &y, tx, ty, 1.5, &o1));
        KT_OK(fl_kernel_matmul_ref(KE, &x, &y, tx, ty, 1.5, &o2));
        same("matmul", &o1, &o2);
        g = kt_rand(&rng, F, o1.ndim, o1.ne, -1, 1);
        KT_OK(fl_kernel_matmul_grad(KE, &x, &y, &g, tx, ty, 1.5, &dx1, &dy1));
        KT_OK(fl_kernel_matmul_grad_ref(KE, &x, &y, &g, tx, ty, 1.5, &dx2, &dy2));
        same("matmul_grad dX", &dx1, &dx2);
        same("matmul_grad dY", &dy1, &dy2);
        FlTensor all[] = {x, y, o1, o2, g, dx1, dy1, dx2, dy2};
        kt_fini((int)FL_ARRAY_LEN(all), all);
    }
}

static void test_fast_conv2d(void) {
    for (int it = 0; it < 12; it++) {
        int groups = (int)rnd(1, 2);
        int64_t N = rnd(1, 3), Cg = rnd(1, 3), Mg = rnd(1, 4), kh = rnd(1, 4), kw = rnd(1, 4);
        FlConv2dAttrs a = {{(int)rnd(1, 2), (int)rnd(1, 3)}, {(int)rnd(0, 2), (int)rnd(0, 2)},
                           {(int)rnd(1, 2), (int)rnd(1, 2)}, groups};
        int64_t H = rnd(a.dilations[0] * (kh - 1) + 1, 12), W = rnd(a.dilations[1] * (kw - 1) + 1, 12);
        FlTensor x = kt_rand(&rng, F, 4, (int64_t[]){N, Cg * groups, H, W}, -1, 1);
        FlTensor f = kt_rand(&rng, F, 4, (int64_t[]){Mg * groups, Cg, kh, kw}, -1, 1);
        FlTensor o1 = FL_TENSOR_INIT, o2 = FL_TENSOR_INIT, g = FL_TENSOR_INIT;
        FlTensor dx1 = FL_TENSOR_INIT, df1 = FL_TENSOR_INIT, dx2 = FL_TENSOR_INIT, df2 = FL_TENSOR_INIT;
        KT_OK(fl_kernel_conv2d(KE, &x, &f, &a, &o1));
        KT_OK(fl_kernel_conv2d_ref(KE, &x, &f, &a, &o2));
        same("conv2d", &o1, &o2);
        g = kt_rand(&rng, F, o1.ndim, o1.ne, -1, 1);
        KT_OK(fl_kernel_conv2d_grad(KE, &x, &f, &g, &a, &dx1, &df1));
        KT_OK(fl_kernel_conv2d_grad_ref(KE, &x, &f, &g, &a, &dx2, &df2));
        same("conv2d_grad dInput", &dx1, &dx2);
        same("conv2d_grad dFilter", &df1, &df2);
        /* only one gradient asked for */
        FlTensor dx3 = FL_TENSOR_INIT;
        KT_OK(fl_kernel_conv2d_grad(KE, &x, &f, &g, &a, &dx3, NULL));
        same("conv2d_grad dInput alone", &dx3, &dx2);
        FlTensor all[] = {x, f, o1, o2, g, dx1, df1, dx2, df2, dx3};
        kt_fini((int)FL_ARRAY_LEN(all), all);
    }
}

/* A realistic size once: the MNIST fc layer's GEMM. */
static void test_fast_mul_large(void) {
    FlTensor x = kt_rand(&rng, F, 2, (int64_t[]){64, 784}, -1, 1);
    FlTensor y = kt_rand(&rng, F, 2, (int64_t[]){784, 128}, -1, 1);
    FlTensor o1 = FL_TENSOR_INIT, o2 = FL_TENSOR_INIT;
    KT_OK(fl_kernel_mul(KE, &x, &y, 1, 1, &o1));
    KT_OK(fl_kernel_mul_ref(KE, &x, &y, 1, 1, &o2));
    same("mul 64x784x128", &o1, &o2);
    FlTensor all[] = {x, y, o1, o2};
    kt_fini(4, all);
}

int main(void) {
    fl_rng_init(&rng, 99);
    static const KtCase cases[] = {
        KT_TEST(test_fast_mul), KT_TEST(test_fast_matmul), KT_TEST(test_fast_conv2d),
        KT_TEST(test_fast_mul_large),
    };
    return kt_run("fast == reference", cases, (int)FL_ARRAY_LEN(cases));
}
