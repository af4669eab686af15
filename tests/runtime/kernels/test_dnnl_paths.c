/* test_dnnl_paths.c: the fast paths (oneDNN's conv2d and pool2d, the pooled batch_norm, and
 * their gradients, float32) give the reference kernels' results within 1e-5 relative (the largest difference over
 * the largest reference magnitude), on shapes covering strides, paddings, dilations, groups, 1x1
 * and 3x3 filters, odd sizes and batch 1 and the bench models' layers (bench_models.sh: VGG-16's,
 * the digits CNN's); two runs of a fast path give bit-identical results. Every case runs on one
 * thread and again on a kernel pool of 2 (oneDNN's OpenMP team of 2, flrun --threads 2). */
#include "tests/runtime/kernels/kt.h"

#include "runtime/kernels/par.h"

#define F FL_DT_FLOAT32
static FlRng rng;
static const double TOL = 1e-5;

static double rel(const FlTensor *a, const FlTensor *b) {
    if (!fl_tensor_same_shape(a, b)) return INFINITY;
    double m = 1e-6, d = 0;
    for (int64_t i = 0, n = fl_tensor_numel(a); i < n; i++) {
        double x = fl_tensor_get(a, i), y = fl_tensor_get(b, i);
        if (fabs(y) > m) m = fabs(y);
        if (!(fabs(x - y) <= d)) d = fabs(x - y);
    }
    return d / m;
}

static void same(const char *what, int k, const FlTensor *a, const FlTensor *b) {
    double d = rel(a, b);
    if (!(d <= TOL)) fprintf(stderr, "\n%s (case %d): fast and reference differ by %g\n", what, k, d);
    CU_ASSERT(d <= TOL);
}

static void bits(const char *what, int k, const FlTensor *a, const FlTensor *b) {
    bool eq = fl_tensor_same_shape(a, b) &&
              memcmp(fl_tensor_data(a), fl_tensor_data(b), (size_t)fl_tensor_nbytes(a)) == 0;
    if (!eq) fprintf(stderr, "\n%s (case %d): two runs differ\n", what, k);
    CU_ASSERT(eq);
}

typedef struct ConvCase {
    int64_t N, C, H, W, M, kh, kw;
    FlConv2dAttrs a;
} ConvCase;

static void conv_case(int k, const ConvCase *c) {
    FlTensor x = kt_rand(&rng, F, 4, (int64_t[]){c->N, c->C, c->H, c->W}, -1, 1);
    FlTensor f = kt_rand(&rng, F, 4, (int64_t[]){c->M, c->C / c->a.groups, c->kh, c->kw}, -1, 1);
    FlTensor o1 = FL_TENSOR_INIT, o2 = FL_TENSOR_INIT, o3 = FL_TENSOR_INIT, g = FL_TENSOR_INIT;
    FlTensor dx1 = FL_TENSOR_INIT, df1 = FL_TENSOR_INIT, dx2 = FL_TENSOR_INIT, df2 = FL_TENSOR_INIT;
    FlTensor dx3 = FL_TENSOR_INIT, df3 = FL_TENSOR_INIT, dx4 = FL_TENSOR_INIT;
    KT_OK(fl_kernel_conv2d(KE, &x, &f, &c->a, &o1));
    KT_OK(fl_kernel_conv2d_ref(KE, &x, &f, &c->a, &o2));
    KT_OK(fl_kernel_conv2d(KE, &x, &f, &c->a, &o3));
    same("conv2d", k, &o1, &o2);
    bits("conv2d", k, &o1, &o3);
    g = kt_rand(&rng, F, 4, o1.ne, -1, 1);
    KT_OK(fl_kernel_conv2d_grad(KE, &x, &f, &g, &c->a, &dx1, &df1));
    KT_OK(fl_kernel_conv2d_grad_ref(KE, &x, &f, &g, &c->a, &dx2, &df2));
    KT_OK(fl_kernel_conv2d_grad(KE, &x, &f, &g, &c->a, &dx3, &df3));
    same("conv2d_grad dInput", k, &dx1, &dx2);
    same("conv2d_grad dFilter", k, &df1, &df2);
    bits("conv2d_grad dInput", k, &dx1, &dx3);
    bits("conv2d_grad dFilter", k, &df1, &df3);
    KT_OK(fl_kernel_conv2d_grad(KE, &x, &f, &g, &c->a, &dx4, NULL));
    same("conv2d_grad dInput alone", k, &dx4, &dx2);
    FlTensor all[] = {x, f, o1, o2, o3, g, dx1, df1, dx2, df2, dx3, df3, dx4};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

#define CONV(N, C, H, W, M, kh, kw, sh, sw, ph, pw, dh, dw, g) \
    {N, C, H, W, M, kh, kw, {{sh, sw}, {ph, pw}, {dh, dw}, g}}

static void test_dnnl_conv2d(void) {
    static const ConvCase cases[] = {
        CONV(2, 16, 32, 32, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1), /* ResNet-32's 3x3 */
        CONV(2, 16, 15, 15, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1), /* stride 2, odd size */
        CONV(2, 16, 16, 16, 32, 1, 1, 2, 2, 0, 0, 1, 1, 1), /* 1x1 stride 2 (shortcut) */
        CONV(3, 8, 9, 9, 12, 1, 1, 1, 1, 0, 0, 1, 1, 1),    /* 1x1 */
        CONV(2, 3, 9, 9, 5, 3, 3, 1, 1, 2, 2, 2, 2, 1),     /* dilation 2 */
        CONV(2, 4, 7, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2),     /* groups 2 */
        CONV(2, 8, 10, 10, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8),   /* depthwise */
        CONV(1, 3, 11, 13, 7, 5, 3, 2, 1, 2, 0, 1, 2, 1),   /* batch 1, mixed everything */
        CONV(1, 6, 8, 7, 9, 3, 1, 1, 2, 1, 0, 3, 1, 3),     /* groups 3, kh != kw */
        CONV(4, 3, 32, 32, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1),  /* the first layer */
        CONV(1, 1, 5, 5, 1, 5, 5, 1, 1, 0, 0, 1, 1, 1),     /* a 1x1 output */
        CONV(8, 1, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1),    /* the digits CNN's conv */
        CONV(2, 64, 16, 16, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1), /* VGG-16's block 2 */
        CONV(2, 512, 2, 2, 512, 3, 3, 1, 1, 1, 1, 1, 1, 1), /* VGG-16's last block */
        CONV(3, 7, 13, 11, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1),   /* odd channels and sizes, stride 2 */
    };
    for (int k = 0; k < (int)FL_ARRAY_LEN(cases); k++) conv_case(k, &cases[k]);
}

typedef struct PoolCase {
    int64_t N, C, H, W;
    FlPool2dAttrs a;
} PoolCase;

#define POOL(N, C, H, W, t, kh, kw, sh, sw, ph, pw, glob, excl, ceil) \
    {N, C, H, W, {t, {kh, kw}, {sh, sw}, {ph, pw}, glob, excl, ceil}}

static void test_dnnl_pool2d(void) {
    static const PoolCase cases[] = {
        POOL(2, 16, 32, 32, FL_POOL_MAX, 2, 2, 2, 2, 0, 0, false, true, false),
        POOL(2, 16, 32, 32, FL_POOL_AVG, 2, 2, 2, 2, 0, 0, false, true, false),
        POOL(2, 4, 15, 15, FL_POOL_MAX, 3, 3, 2, 2, 1, 1, false, true, false),
        POOL(2, 4, 15, 15, FL_POOL_AVG, 3, 3, 2, 2, 1, 1, false, true, false),
        POOL(2, 4, 15, 15, FL_POOL_AVG, 3, 3, 2, 2, 1, 1, false, false, false),
        POOL(1, 3, 11, 8, FL_POOL_MAX, 3, 2, 2, 3, 1, 0, false, true, true),
        POOL(1, 3, 11, 8, FL_POOL_AVG, 3, 2, 2, 3, 1, 0, false, true, true),
        POOL(1, 3, 11, 8, FL_POOL_AVG, 3, 2, 2, 3, 1, 1, false, false, true),
        POOL(3, 16, 8, 8, FL_POOL_AVG, 1, 1, 1, 1, 0, 0, true, true, false),
        POOL(3, 5, 7, 9, FL_POOL_MAX, 1, 1, 1, 1, 0, 0, true, true, false),
        POOL(2, 2, 5, 5, FL_POOL_MAX, 2, 2, 2, 2, 0, 0, false, true, false),
        POOL(8, 16, 8, 8, FL_POOL_MAX, 2, 2, 2, 2, 0, 0, false, true, false), /* digits CNN */
        POOL(2, 512, 2, 2, FL_POOL_MAX, 2, 2, 2, 2, 0, 0, false, true, false), /* VGG-16's last */
    };
    for (int k = 0; k < (int)FL_ARRAY_LEN(cases); k++) {
        const PoolCase *c = &cases[k];
        FlTensor x = kt_distinct(&rng, F, 4, (int64_t[]){c->N, c->C, c->H, c->W});
        FlTensor o1 = FL_TENSOR_INIT, o2 = FL_TENSOR_INIT, g = FL_TENSOR_INIT;
        FlTensor d1 = FL_TENSOR_INIT, d2 = FL_TENSOR_INIT, d3 = FL_TENSOR_INIT;
        KT_OK(fl_kernel_pool2d(KE, &x, &c->a, &o1));
        KT_OK(fl_kernel_pool2d_ref(KE, &x, &c->a, &o2));
        same("pool2d", k, &o1, &o2);
        g = kt_rand(&rng, F, 4, o1.ne, -1, 1);
        KT_OK(fl_kernel_pool2d_grad(KE, &x, &o1, &g, &c->a, &d1));
        KT_OK(fl_kernel_pool2d_grad_ref(KE, &x, &o1, &g, &c->a, &d2));
        KT_OK(fl_kernel_pool2d_grad(KE, &x, &o1, &g, &c->a, &d3));
        same("pool2d_grad", k, &d1, &d2);
        bits("pool2d_grad", k, &d1, &d3);
        FlTensor all[] = {x, o1, o2, g, d1, d2, d3};
        kt_fini((int)FL_ARRAY_LEN(all), all);
    }
}

static void bn_case_at(int k, int ndim, const int64_t *ne, bool is_test, double lo, double hi) {
    int64_t C = ne[1];
    FlTensor x = kt_rand(&rng, F, ndim, ne, lo, hi);
    FlTensor sc = kt_rand(&rng, F, 1, &C, 0.5, 1.5), bi = kt_rand(&rng, F, 1, &C, -1, 1);
    FlTensor mu = kt_rand(&rng, F, 1, &C, -0.5, 0.5), va = kt_rand(&rng, F, 1, &C, 0.5, 2);
    FlTensor r1[5], r2[5];
    for (int i = 0; i < 5; i++) fl_tensor_init(&r1[i]), fl_tensor_init(&r2[i]);
    KT_OK(fl_kernel_batch_norm(KE, &x, &sc, &bi, &mu, &va, 0.9, 1e-5, is_test, &r1[0], &r1[1],
                               &r1[2], &r1[3], &r1[4]));
    KT_OK(fl_kernel_batch_norm_ref(KE, &x, &sc, &bi, &mu, &va, 0.9, 1e-5, is_test, &r2[0],
                                   &r2[1], &r2[2], &r2[3], &r2[4]));
    static const char *names[] = {"batch_norm Y", "batch_norm MeanOut", "batch_norm VarianceOut",
                                  "batch_norm SavedMean", "batch_norm SavedVariance"};
    for (int i = 0; i < 5; i++) same(names[i], k, &r1[i], &r2[i]);
    FlTensor g = kt_rand(&rng, F, ndim, ne, -1, 1);
    FlTensor d1[3], d2[3], d3[3];
    for (int i = 0; i < 3; i++) fl_tensor_init(&d1[i]), fl_tensor_init(&d2[i]), fl_tensor_init(&d3[i]);
    /* both from the reference's saved statistics: the gradients alone are compared */
    KT_OK(fl_kernel_batch_norm_grad(KE, &x, &sc, &r2[3], &r2[4], &g, is_test, &d1[0], &d1[1], &d1[2]));
    KT_OK(fl_kernel_batch_norm_grad_ref(KE, &x, &sc, &r2[3], &r2[4], &g, is_test, &d2[0], &d2[1], &d2[2]));
    KT_OK(fl_kernel_batch_norm_grad(KE, &x, &sc, &r2[3], &r2[4], &g, is_test, &d3[0], NULL, NULL));
    same("batch_norm_grad dX", k, &d1[0], &d2[0]);
    same("batch_norm_grad dScale", k, &d1[1], &d2[1]);
    same("batch_norm_grad dBias", k, &d1[2], &d2[2]);
    bits("batch_norm_grad dX alone", k, &d1[0], &d3[0]);
    FlTensor all[] = {x, sc, bi, mu, va, g};
    kt_fini((int)FL_ARRAY_LEN(all), all);
    kt_fini(5, r1), kt_fini(5, r2), kt_fini(3, d1), kt_fini(3, d2), kt_fini(3, d3);
}

static void bn_case(int k, int ndim, const int64_t *ne, bool is_test) {
    bn_case_at(k, ndim, ne, is_test, -2, 3);
}

static void test_dnnl_batch_norm(void) {
    for (int t = 0; t < 2; t++) {
        bn_case(0, 4, (int64_t[]){4, 16, 8, 8}, t);
        bn_case(1, 4, (int64_t[]){1, 3, 7, 5}, t);
        bn_case(2, 2, (int64_t[]){6, 10}, t);
        bn_case(3, 3, (int64_t[]){2, 5, 9}, t);
        bn_case(4, 4, (int64_t[]){16, 64, 8, 8}, t);
        bn_case(5, 2, (int64_t[]){8, 4096}, t); /* VGG-16's batch norm after its fc */
        bn_case(6, 4, (int64_t[]){3, 5, 17, 19}, t); /* rows longer than a summing block, odd */
        /* a mean large against the spread: (x - mean) must not cancel away in float */
        bn_case_at(7, 4, (int64_t[]){4, 3, 9, 9}, t, 1000, 1001);
    }
}

/* batch_norm's fast path splits channels across the pool: its results do not depend on the
 * thread count (each channel is computed by the same loops whatever the cut). */
static void test_bn_threads_bits(void) {
    int64_t ne[] = {8, 32, 12, 12}, C = 32;
    FlTensor x = kt_rand(&rng, F, 4, ne, -2, 3), g = kt_rand(&rng, F, 4, ne, -1, 1);
    FlTensor sc = kt_rand(&rng, F, 1, &C, 0.5, 1.5), bi = kt_rand(&rng, F, 1, &C, -1, 1);
    FlTensor mu = kt_rand(&rng, F, 1, &C, -0.5, 0.5), va = kt_rand(&rng, F, 1, &C, 0.5, 2);
    FlTensor r[2][5], d[2][3];
    FlErr e;
    FlPar *p = fl_par_new(2, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (int t = 0; t < 2; t++) {
        FlPar *old = fl_par_bind(t ? p : NULL);
        CU_ASSERT_EQUAL(fl_par_width(), t ? 2 : 1);
        for (int i = 0; i < 5; i++) fl_tensor_init(&r[t][i]);
        for (int i = 0; i < 3; i++) fl_tensor_init(&d[t][i]);
        KT_OK(fl_kernel_batch_norm(KE, &x, &sc, &bi, &mu, &va, 0.9, 1e-5, false, &r[t][0],
                                   &r[t][1], &r[t][2], &r[t][3], &r[t][4]));
        KT_OK(fl_kernel_batch_norm_grad(KE, &x, &sc, &r[t][3], &r[t][4], &g, false, &d[t][0],
                                        &d[t][1], &d[t][2]));
        fl_par_bind(old);
    }
    fl_par_free(p);
    for (int i = 0; i < 5; i++) bits("batch_norm 1 vs 2 threads", i, &r[0][i], &r[1][i]);
    for (int i = 0; i < 3; i++) bits("batch_norm_grad 1 vs 2 threads", i, &d[0][i], &d[1][i]);
    FlTensor all[] = {x, g, sc, bi, mu, va};
    kt_fini((int)FL_ARRAY_LEN(all), all);
    kt_fini(5, r[0]), kt_fini(5, r[1]), kt_fini(3, d[0]), kt_fini(3, d[1]);
}

/* The three suites again with a kernel pool of 2 bound: oneDNN's primitives for a team of 2. */
static void test_dnnl_two_threads(void) {
    FlErr e;
    FlPar *p = fl_par_new(2, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    FlPar *old = fl_par_bind(p);
    CU_ASSERT_EQUAL(fl_par_width(), 2);
    test_dnnl_conv2d();
    test_dnnl_pool2d();
    test_dnnl_batch_norm();
    fl_par_bind(old);
    fl_par_free(p);
}

int main(void) {
    fl_rng_init(&rng, 2024);
    static const KtCase cases[] = {
        KT_TEST(test_dnnl_conv2d), KT_TEST(test_dnnl_pool2d), KT_TEST(test_dnnl_batch_norm),
        KT_TEST(test_dnnl_two_threads), KT_TEST(test_bn_threads_bits),
    };
    return kt_run("oneDNN == reference", cases, (int)FL_ARRAY_LEN(cases));
}
