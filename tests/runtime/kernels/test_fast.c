/* test_fast.c: the fast paths (mul, matmul, conv2d and their gradients, float32) give the
 * reference kernels' results on random shapes, within float32 rounding, on the GEMM library the
 * environment selects (CMake runs this test as it is, with FL_DNNL=0 and with FL_GEMM=onednn);
 * elementwise_add's fast path (and its gradient's) gives exactly the generic loops' results; and
 * the rule that picks the GEMM library (fl_gemm_choose), case by case. */
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

/* elementwise_add's fast path (contiguous and single-value runs, dX / dY sharing dOut) against
 * the generic loops: random shapes under both broadcasting rules, float32 and float64 (and the
 * forward for ints). The per-element sums are the same operations, so the results are equal. */
static void test_fast_elementwise_add(void) {
    for (int it = 0; it < 48; it++) {
        FlDType dt = it % 3 == 2 ? FL_DT_FLOAT64 : F;
        int nd = (int)rnd(1, 4), axis = -1;
        int64_t xs[4], ys[4];
        int ny = nd;
        for (int i = 0; i < nd; i++) xs[i] = ys[i] = rnd(1, 9);
        switch (it % 4) {
        case 0: break; /* same shapes */
        case 1: /* numpy: Y broadcast along some dims, or X along others */
            for (int i = 0; i < nd; i++) {
                int r = (int)rnd(0, 3);
                if (r == 0) ys[i] = 1;
                else if (r == 1) xs[i] = 1;
            }
            break;
        case 2: /* numpy: Y of lower rank (a bias row) */
            ny = (int)rnd(1, nd);
            for (int i = 0; i < ny; i++) ys[i] = xs[nd - ny + i];
            break;
        case 3: /* Paddle's axis: Y's dims match X's from `axis` */
            axis = (int)rnd(0, nd - 1);
            ny = (int)rnd(1, nd - axis);
            for (int i = 0; i < ny; i++) ys[i] = xs[axis + i];
            break;
        }
        FlTensor x = kt_rand(&rng, dt, nd, xs, -1, 1), y = kt_rand(&rng, dt, ny, ys, -1, 1);
        FlTensor o1 = FL_TENSOR_INIT, o2 = FL_TENSOR_INIT, g = FL_TENSOR_INIT;
        FlTensor dx1 = FL_TENSOR_INIT, dy1 = FL_TENSOR_INIT, dx2 = FL_TENSOR_INIT, dy2 = FL_TENSOR_INIT;
        KT_OK(fl_kernel_elementwise_add(KE, &x, &y, axis, &o1));
        KT_OK(fl_kernel_elementwise_add_ref(KE, &x, &y, axis, &o2));
        CU_ASSERT(fl_tensor_same_shape(&o1, &o2));
        CU_ASSERT(kt_rel_diff(&o1, &o2) == 0);
        g = kt_rand(&rng, dt, o1.ndim, o1.ne, -1, 1);
        KT_OK(fl_kernel_elementwise_add_grad(KE, &x, &y, &g, axis, &dx1, &dy1));
        KT_OK(fl_kernel_elementwise_add_grad_ref(KE, &x, &y, &g, axis, &dx2, &dy2));
        CU_ASSERT(fl_tensor_same_shape(&dx1, &x) && fl_tensor_same_shape(&dy1, &y));
        CU_ASSERT(kt_rel_diff(&dx1, &dx2) == 0);
        CU_ASSERT(kt_rel_diff(&dy1, &dy2) == 0);
        /* one gradient alone, and the output struct being the input struct */
        FlTensor dy3 = FL_TENSOR_INIT, g2 = FL_TENSOR_INIT;
        fl_tensor_ref(&g2, &g);
        KT_OK(fl_kernel_elementwise_add_grad(KE, &x, &y, &g2, axis, NULL, &dy3));
        CU_ASSERT(kt_rel_diff(&dy3, &dy2) == 0);
        KT_OK(fl_kernel_elementwise_add_grad(KE, &x, &y, &g2, axis, &g2, NULL));
        CU_ASSERT(kt_rel_diff(&g2, &dx2) == 0);
        FlTensor all[] = {x, y, o1, o2, g, dx1, dy1, dx2, dy2, dy3, g2};
        kt_fini((int)FL_ARRAY_LEN(all), all);
    }
    /* integers: the forward only */
    for (int it = 0; it < 8; it++) {
        FlDType dt = it & 1 ? FL_DT_INT64 : FL_DT_INT32;
        int64_t r = rnd(1, 6), c = rnd(1, 6);
        FlTensor x = kt_rand(&rng, dt, 2, (int64_t[]){r, c}, -50, 50);
        FlTensor y = kt_rand(&rng, dt, 1, (int64_t[]){it & 2 ? 1 : c}, -50, 50);
        FlTensor o1 = FL_TENSOR_INIT, o2 = FL_TENSOR_INIT;
        KT_OK(fl_kernel_elementwise_add(KE, &x, &y, -1, &o1));
        KT_OK(fl_kernel_elementwise_add_ref(KE, &x, &y, -1, &o2));
        CU_ASSERT(kt_rel_diff(&o1, &o2) == 0);
        FlTensor all[] = {x, y, o1, o2};
        kt_fini(4, all);
    }
    /* an empty batch: a bias row's gradient over 0 rows is 0 (its chunking divided by the rows;
     * fuzz_pyfeed found it through the Python package) */
    FlTensor x = FL_TENSOR_INIT, g = FL_TENSOR_INIT, dy = FL_TENSOR_INIT;
    FlTensor y = kt_rand(&rng, F, 1, (int64_t[]){3}, -1, 1);
    KT_OK(fl_tensor_alloc(KE, &x, F, 2, (int64_t[]){0, 3}));
    KT_OK(fl_tensor_alloc(KE, &g, F, 2, (int64_t[]){0, 3}));
    KT_OK(fl_kernel_elementwise_add_grad(KE, &x, &y, &g, -1, NULL, &dy));
    CU_ASSERT(fl_tensor_same_shape(&dy, &y) && fl_tensor_get(&dy, 0) == 0 && fl_tensor_get(&dy, 2) == 0);
    FlTensor all[] = {x, y, g, dy};
    kt_fini(4, all);
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

/* The library this process runs is the one its environment asks for. */
static void test_gemm_path_env(void) {
    const FlGemmInfo *g = fl_gemm_info();
    const char *want = getenv("FL_GEMM"), *dnnl = getenv("FL_DNNL");
    CU_ASSERT(g->error[0] == 0);
    if (want && strcmp(want, "onednn") == 0) CU_ASSERT(g->path == FL_GEMM_ONEDNN);
    if ((want && strcmp(want, "openblas") == 0) || (dnnl && strcmp(dnnl, "0") == 0))
        CU_ASSERT(g->path == FL_GEMM_OPENBLAS);
    CU_ASSERT(g->kernel && *g->kernel);
}

static void choose(const char *fl_gemm, const char *coretype, const char *core, FlIsa cpu,
                   const char *dnnl, FlIsa dl, FlGemmPath want, const char *why, bool error) {
    FlGemmInfo g;
    fl_gemm_choose(&g, fl_gemm, coretype, core, cpu, dnnl, dl);
    CU_ASSERT(g.path == want);
    CU_ASSERT(strstr(g.why, why) != NULL);
    CU_ASSERT((g.error[0] != 0) == error);
    if (g.path != want || !strstr(g.why, why) || (g.error[0] != 0) != error)
        fprintf(stderr, "\nFL_GEMM=%s OPENBLAS_CORETYPE=%s core %s: %s, why '%s', error '%s'\n",
                fl_gemm ? fl_gemm : "-", coretype ? coretype : "-", core, fl_gemm_path_name(g.path), g.why,
                g.error);
}

/* The rule: the user's FL_GEMM, FL_DNNL=0 and OPENBLAS_CORETYPE first; else by shape when
 * OpenBLAS's kernel is as wide as the CPU's vectors, oneDNN when OpenBLAS fell back to narrower
 * ones. */
static void test_gemm_choose(void) {
    const FlIsa A512 = FL_ISA_AVX512, A2 = FL_ISA_AVX2;
    /* an Intel CPU OpenBLAS 0.3.21 does not know: Prescott on AVX-512 -> oneDNN */
    choose(NULL, NULL, "Prescott", A512, "avx512_core_amx", A512, FL_GEMM_ONEDNN, "narrower", false);
    choose("auto", "", "Prescott", A512, "avx512_core_amx", A512, FL_GEMM_ONEDNN, "narrower", false);
    /* a CPU it knows: by shape, oneDNN for the large products and OpenBLAS's own kernel for the rest */
    choose(NULL, NULL, "Cooperlake", A512, "avx512_core_bf16", A512, FL_GEMM_BY_SHAPE, "by shape", false);
    choose(NULL, NULL, "Haswell", A2, "avx2", A2, FL_GEMM_BY_SHAPE, "by shape", false);
    choose(NULL, NULL, "Zen", A2, "avx2", A2, FL_GEMM_BY_SHAPE, "by shape", false);
    /* the user's OPENBLAS_CORETYPE is honoured, even below the CPU */
    choose(NULL, "Haswell", "Haswell", A512, "avx512_core", A512, FL_GEMM_OPENBLAS, "OPENBLAS_CORETYPE=Haswell", false);
    /* oneDNN capped below OpenBLAS's kernel (ONEDNN_MAX_CPU_ISA): OpenBLAS stays */
    choose(NULL, NULL, "Sandybridge", A512, "sse41", FL_ISA_SSE, FL_GEMM_OPENBLAS, "oneDNN's narrower", false);
    /* FL_GEMM and FL_DNNL */
    choose("openblas", NULL, "Prescott", A512, "avx512_core", A512, FL_GEMM_OPENBLAS, "FL_GEMM=openblas", false);
    choose("onednn", NULL, "Cooperlake", A512, "avx512_core", A512, FL_GEMM_ONEDNN, "FL_GEMM=onednn", false);
    choose(NULL, NULL, "Prescott", A512, NULL, FL_ISA_NONE, FL_GEMM_OPENBLAS, "FL_DNNL=0", false);
    /* what cannot be: an error for flrun, and the auto path meanwhile */
    choose("onednn", NULL, "Prescott", A512, NULL, FL_ISA_NONE, FL_GEMM_OPENBLAS, "FL_DNNL=0", true);
    choose("mkl", NULL, "Prescott", A512, "avx512_core", A512, FL_GEMM_ONEDNN, "narrower", true);
    /* by shape: oneDNN from 2^19 multiply-adds with more than 16 rows and columns */
    FlGemmInfo by;
    fl_gemm_choose(&by, NULL, NULL, "Cooperlake", A512, "avx512_core_bf16", A512);
    CU_ASSERT(strcmp(by.kernel, "avx512_core_bf16+Cooperlake") == 0);
    CU_ASSERT(fl_gemm_library(&by, 128, 512, 784) == FL_GEMM_ONEDNN);
    CU_ASSERT(fl_gemm_library(&by, 64, 128, 64) == FL_GEMM_ONEDNN); /* exactly 2^19 */
    CU_ASSERT(fl_gemm_library(&by, 64, 128, 63) == FL_GEMM_OPENBLAS);
    CU_ASSERT(fl_gemm_library(&by, 128, 10, 512) == FL_GEMM_OPENBLAS); /* 10 columns */
    CU_ASSERT(fl_gemm_library(&by, 16, 4096, 4096) == FL_GEMM_OPENBLAS); /* 16 rows */
    CU_ASSERT(fl_gemm_library(&by, 17, 4096, 4096) == FL_GEMM_ONEDNN);
    CU_ASSERT(fl_gemm_library(&by, 8, 8, 8) == FL_GEMM_OPENBLAS);
    fl_gemm_choose(&by, "onednn", NULL, "Cooperlake", A512, "avx512_core_bf16", A512);
    CU_ASSERT(fl_gemm_library(&by, 8, 8, 8) == FL_GEMM_ONEDNN);
    fl_gemm_choose(&by, "openblas", NULL, "Cooperlake", A512, "avx512_core_bf16", A512);
    CU_ASSERT(fl_gemm_library(&by, 128, 512, 784) == FL_GEMM_OPENBLAS);
    /* the core names' vectors, and the warning when the kernel is narrower than the CPU */
    CU_ASSERT(fl_gemm_openblas_isa("SkylakeX") == FL_ISA_AVX512);
    CU_ASSERT(fl_gemm_openblas_isa("Sandybridge") == FL_ISA_AVX);
    CU_ASSERT(fl_gemm_openblas_isa("Nehalem") == FL_ISA_SSE);
    FlGemmInfo g;
    FlBuf b = {0};
    fl_gemm_choose(&g, NULL, "Prescott", "Prescott", A512, "avx512_core", A512);
    CU_ASSERT(fl_gemm_warning(&g, &b) && strstr(fl_buf_str(&b), "far below") &&
              strstr(fl_buf_str(&b), "OPENBLAS_CORETYPE=Prescott"));
    fl_buf_free(&b);
    fl_gemm_choose(&g, NULL, NULL, "Cooperlake", A512, "avx512_core", A512);
    CU_ASSERT(!fl_gemm_warning(&g, &b));
    /* the user named the library: FL_GEMM, or FL_DNNL=0 */
    fl_gemm_choose(&g, "openblas", "Prescott", "Prescott", A512, "avx512_core", A512);
    CU_ASSERT(!fl_gemm_warning(&g, &b));
    fl_gemm_choose(&g, NULL, "Prescott", "Prescott", A512, NULL, FL_ISA_NONE);
    CU_ASSERT(!fl_gemm_warning(&g, &b));
    fl_buf_free(&b);
}

int main(void) {
    fl_rng_init(&rng, 99);
    static const KtCase cases[] = {
        KT_TEST(test_fast_mul), KT_TEST(test_fast_matmul), KT_TEST(test_fast_conv2d),
        KT_TEST(test_fast_mul_large), KT_TEST(test_fast_elementwise_add), KT_TEST(test_gemm_path_env),
        KT_TEST(test_gemm_choose),
    };
    return kt_run("fast == reference", cases, (int)FL_ARRAY_LEN(cases));
}
