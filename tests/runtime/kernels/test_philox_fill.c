/* test_philox_fill.c: the counter-based random fills. Philox4x32-10 against Random123's
 * known-answer vectors; the fills' first values pinned for a few seeds (the generator is part of
 * the IR format: a program's initial values must not change between versions, docs/ir.md);
 * any slicing of rows (several part counts, uneven and odd-sized blocks) equal to the whole;
 * the distributions' mean and variance over 1e6 samples; the truncated Gaussian's bounds. */
#include "tests/runtime/kernels/kt.h"

#include "runtime/rng.h"

static const FlDType F = FL_DT_FLOAT32, D = FL_DT_FLOAT64;

static void test_philox_known_answers(void) {
    static const uint32_t cases[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
         0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
         0x94fdcceb, 0x5001e420, 0x24126ea1},
    };
    for (int c = 0; c < 3; c++) {
        uint32_t out[4];
        fl_rng_philox(cases[c], cases[c] + 4, out);
        for (int k = 0; k < 4; k++) CU_ASSERT_EQUAL(out[k], cases[c][6 + k]);
    }
}

/* The format: these values are what every version draws for these seeds. A change here changes
 * every program's initial parameters; it needs a format note in docs/ir.md, not a new golden. */
static void test_pinned_values(void) {
    static const struct {
        uint64_t seed;
        double u[4], g[4], t[4];
    } pins[] = {
        {UINT64_C(1),
         {0x1.ca141d79c7dp-1, 0x1.6c2b544f2be44p-1, 0x1.bf8b997d58102p-1, 0x1.4fecc126f380fp-1},
         {-0x1.05c318a128e96p-1, -0x1.07932256986ecp+1, -0x1.21f3a8b5765ccp+0, -0x1.b113fbe918963p+0},
         {-0x1.05c318a128e96p-1, 0x1.5a02bbff7e553p-2, -0x1.21f3a8b5765ccp+0, -0x1.b113fbe918963p+0}},
        {UINT64_C(42),
         {0x1.dfd524ee73abcp-2, 0x1.5d0acf5c4afd4p-2, 0x1.4ee9b3f7f36c8p-2, 0x1.d1381bee0e3d6p-2},
         {-0x1.371e09f80c7ddp-1, 0x1.e46d16bfae946p-1, -0x1.b510d5acb221cp-1, 0x1.020a3f1760d4bp-2},
         {-0x1.371e09f80c7ddp-1, 0x1.e46d16bfae946p-1, -0x1.b510d5acb221cp-1, 0x1.020a3f1760d4bp-2}},
        {UINT64_C(0x123456789abcdef),
         {0x1.8b19609770a04p-1, 0x1.ea13ffe4529e8p-2, 0x1.48f83616b7284p-2, 0x1.6533b47eca802p-1},
         {-0x1.b4048b5357ef3p+0, 0x1.d80b2d7cd6be1p-3, -0x1.232645c917b09p-2, -0x1.aa96c131b1666p-1},
         {-0x1.b4048b5357ef3p+0, 0x1.d80b2d7cd6be1p-3, -0x1.232645c917b09p-2, -0x1.aa96c131b1666p-1}},
    };
    for (size_t p = 0; p < FL_ARRAY_LEN(pins); p++)
        for (int i = 0; i < 4; i++) {
            CU_ASSERT_EQUAL(fl_rng_counter_uniform(pins[p].seed, (uint64_t)i), pins[p].u[i]);
            /* the Gaussians go through this module's own log/sin/cos: exact on every platform */
            CU_ASSERT_EQUAL(fl_rng_counter_gaussian(pins[p].seed, (uint64_t)i), pins[p].g[i]);
            CU_ASSERT_EQUAL(fl_rng_counter_truncated(pins[p].seed, (uint64_t)i), pins[p].t[i]);
        }
    /* the ops scale those: uniform_random(min, max) = min + (max - min) u */
    FlTensor o = FL_TENSOR_INIT;
    KT_OK(fl_kernel_uniform_random(KE, 1, (int64_t[]){4}, -1, 1, pins[0].seed, 0, D, &o));
    for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(fl_tensor_get(&o, i), -1 + 2 * pins[0].u[i]);
    KT_OK(fl_kernel_gaussian_random(KE, 1, (int64_t[]){4}, 1, 3, pins[0].seed, 0, D, &o));
    for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(fl_tensor_get(&o, i), 1 + 3 * pins[0].g[i]);
    fl_tensor_fini(&o);
}

typedef FlStatus (*FillFn)(FlErr *, int, const int64_t *, double, double, uint64_t, int64_t, FlDType,
                           FlTensor *);

/* rows [r0, r1) of a [R, C] fill, made with their offset, equal those rows of the whole */
static void check_slices(FillFn fn, double a, double b, FlDType dt, int64_t R, int64_t C) {
    FlTensor whole = FL_TENSOR_INIT, part = FL_TENSOR_INIT;
    KT_OK(fn(KE, 2, (int64_t[]){R, C}, a, b, 77, 0, dt, &whole));
    size_t es = dt == F ? 4 : 8;
    const char *w = fl_tensor_data(&whole);
    for (int64_t P = 1; P <= 7; P++) {
        /* Fluid's rule: P - 1 blocks of ceil(R / P) rows, the rest in the last (uneven) */
        int64_t per = (R + P - 1) / P;
        for (int64_t r0 = 0; r0 < R; r0 += per) {
            int64_t r1 = r0 + per < R ? r0 + per : R;
            KT_OK(fn(KE, 2, (int64_t[]){r1 - r0, C}, a, b, 77, r0 * C, dt, &part));
            CU_ASSERT_EQUAL(memcmp(fl_tensor_data(&part), w + (size_t)(r0 * C) * es,
                                   (size_t)((r1 - r0) * C) * es), 0);
        }
    }
    /* single rows and single elements at odd offsets (the second half of a Gaussian pair) */
    for (int64_t r = 0; r < R; r += 3) {
        KT_OK(fn(KE, 1, (int64_t[]){C}, a, b, 77, r * C, dt, &part));
        CU_ASSERT_EQUAL(memcmp(fl_tensor_data(&part), w + (size_t)(r * C) * es, (size_t)C * es), 0);
    }
    for (int64_t i = 1; i < R * C; i += 7) {
        KT_OK(fn(KE, 1, (int64_t[]){1}, a, b, 77, i, dt, &part));
        CU_ASSERT_EQUAL(memcmp(fl_tensor_data(&part), w + (size_t)i * es, es), 0);
    }
    fl_tensor_fini(&whole);
    fl_tensor_fini(&part);
}

static void test_slices_equal_whole(void) {
    /* rows not divisible by the part counts, odd row widths (Gaussian pairs straddle rows) */
    for (int dt = 0; dt < 2; dt++) {
        FlDType t = dt ? D : F;
        check_slices(fl_kernel_uniform_random, -0.5, 0.5, t, 101, 13);
        check_slices(fl_kernel_gaussian_random, 0, 0.02, t, 101, 13);
        check_slices(fl_kernel_truncated_gaussian_random, 1, 2, t, 101, 13);
        check_slices(fl_kernel_uniform_random, -1, 1, t, 37, 64);
        check_slices(fl_kernel_gaussian_random, 0, 1, t, 9, 1);
    }
}

static void test_distributions(void) {
    const int64_t n = 1000000;
    FlTensor o = FL_TENSOR_INIT;
    /* uniform [-2, 3): mean 0.5, variance 25/12; the mean's standard error is 1.4e-3 */
    KT_OK(fl_kernel_uniform_random(KE, 1, &n, -2, 3, 5, 0, D, &o));
    double s = 0, s2 = 0, mn = 1e9, mx = -1e9;
    for (int64_t i = 0; i < n; i++) {
        double v = fl_tensor_get(&o, i);
        s += v, s2 += v * v, mn = v < mn ? v : mn, mx = v > mx ? v : mx;
    }
    double m = s / (double)n, var = s2 / (double)n - m * m;
    CU_ASSERT(fabs(m - 0.5) < 0.01);
    CU_ASSERT(fabs(var - 25.0 / 12) < 0.01);
    CU_ASSERT(mn >= -2 && mx < 3 && mn < -1.999 && mx > 2.999);
    /* gaussian N(1, 2^2) */
    KT_OK(fl_kernel_gaussian_random(KE, 1, &n, 1, 2, 6, 0, D, &o));
    double s3 = 0, s4 = 0;
    s = s2 = 0;
    for (int64_t i = 0; i < n; i++) {
        double z = (fl_tensor_get(&o, i) - 1) / 2;
        s += z, s2 += z * z, s3 += z * z * z, s4 += z * z * z * z;
    }
    CU_ASSERT(fabs(s / (double)n) < 0.006);
    CU_ASSERT(fabs(s2 / (double)n - 1) < 0.01);
    CU_ASSERT(fabs(s3 / (double)n) < 0.02);
    CU_ASSERT(fabs(s4 / (double)n - 3) < 0.05);
    /* even and odd elements (cos and sin of a pair) are uncorrelated */
    double c = 0;
    for (int64_t i = 0; i + 1 < n; i += 2)
        c += (fl_tensor_get(&o, i) - 1) * (fl_tensor_get(&o, i + 1) - 1) / 4;
    CU_ASSERT(fabs(c / (double)(n / 2)) < 0.01);
    /* truncated N(0, 1) to [-2, 2]: mean 0, variance 1 - 4 phi(2) / (2 Phi(2) - 1) = 0.773741 */
    KT_OK(fl_kernel_truncated_gaussian_random(KE, 1, &n, 0, 1, 7, 0, D, &o));
    s = s2 = 0, mn = 1e9, mx = -1e9;
    for (int64_t i = 0; i < n; i++) {
        double v = fl_tensor_get(&o, i);
        s += v, s2 += v * v, mn = v < mn ? v : mn, mx = v > mx ? v : mx;
    }
    CU_ASSERT(fabs(s / (double)n) < 0.005);
    CU_ASSERT(fabs(s2 / (double)n - 0.773741) < 0.005);
    CU_ASSERT(mn >= -2 && mx <= 2 && mn < -1.99 && mx > 1.99);
    /* scaled: N(3, 0.5^2) within [2, 4] */
    KT_OK(fl_kernel_truncated_gaussian_random(KE, 1, &n, 3, 0.5, 8, 0, F, &o));
    mn = 1e9, mx = -1e9;
    for (int64_t i = 0; i < n; i++) {
        double v = fl_tensor_get(&o, i);
        mn = v < mn ? v : mn, mx = v > mx ? v : mx;
    }
    CU_ASSERT(mn >= 2 && mx <= 4);
    fl_tensor_fini(&o);
}

static void test_errors(void) {
    FlTensor o = FL_TENSOR_INIT;
    KT_ERR(fl_kernel_uniform_random(KE, 1, (int64_t[]){2}, 0, 1, 1, -1, F, &o),
           "uniform_random: shard_offset (-1) is negative");
    KT_ERR(fl_kernel_gaussian_random(KE, 1, (int64_t[]){2}, 0, 1, 1, INT64_MAX, F, &o),
           "gaussian_random: shard_offset 9223372036854775807 + 2 elements overflows");
    KT_ERR(fl_kernel_truncated_gaussian_random(KE, 1, (int64_t[]){2}, 0, -1, 1, 0, F, &o),
           "truncated_gaussian_random: std (-1) is negative");
    KT_ERR(fl_kernel_truncated_gaussian_random(KE, 1, (int64_t[]){2}, 0, 1, 1, 0, FL_DT_INT64, &o),
           "truncated_gaussian_random: dtype int64 is not supported; float32 or float64 expected");
    fl_tensor_fini(&o);
}

int main(void) {
    static const KtCase cases[] = {
        KT_TEST(test_philox_known_answers), KT_TEST(test_pinned_values),
        KT_TEST(test_slices_equal_whole),   KT_TEST(test_distributions),
        KT_TEST(test_errors),
    };
    return kt_run("counter-based random fills", cases, (int)FL_ARRAY_LEN(cases));
}
