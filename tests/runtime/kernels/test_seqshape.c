/* test_seqshape.c: the kernels of seqshape.c (sequence_concat, sequence_reshape, sequence_slice,
 * sequence_pad / unpad, sequence_enumerate) against reference loops written element by element
 * from the definitions, in float32, float64 and int64, on a batch of sequences of 1, 2, 17 and
 * 0 rows; gradients by kt_grad_check's central differences in float64; errors on bad inputs. */
#include "tests/runtime/kernels/kt.h"

#include "runtime/kernels/kernels_seqshape.h"

#define F FL_DT_FLOAT32
#define D FL_DT_FLOAT64
#define I FL_DT_INT64

/* Lengths 1, 2, 17 and an empty sequence. */
static const int64_t OFF[] = {0, 1, 3, 20, 20};
#define NSEQ 4
/* A second input for sequence_concat: lengths 2, 0, 1, 2. */
static const int64_t OFF2[] = {0, 2, 2, 3, 5};

static const FlDType DTS[] = {F, D, I};

static double at(const FlTensor *t, int64_t i) { return fl_tensor_get(t, i); }

/* Every element of t equals the int64 values want[0..n). */
static bool ints_are(const FlTensor *t, const int64_t *want, int64_t n) {
    if (t->dtype != I || fl_tensor_numel(t) != n) return false;
    for (int64_t i = 0; i < n; i++)
        if ((int64_t)at(t, i) != want[i]) return false;
    return true;
}

/* ---- sequence_concat ---- */

static void test_concat_values(void) {
    FlRng r;
    fl_rng_init(&r, 11);
    for (int k = 0; k < 3; k++) {
        FlTensor x0 = kt_rand(&r, DTS[k], 2, (int64_t[]){20, 3}, -9, 9);
        FlTensor x1 = kt_rand(&r, DTS[k], 2, (int64_t[]){5, 3}, -9, 9);
        FlTensor out = FL_TENSOR_INIT, lod = FL_TENSOR_INIT;
        const FlTensor *xs[] = {&x0, &x1};
        const int64_t *offs[] = {OFF, OFF2};
        KT_OK(fl_kernel_sequence_concat(KE, xs, offs, 2, NSEQ, &out, &lod));
        double ref[75];
        int64_t n = 0, want_lod[NSEQ + 1] = {0};
        for (int64_t i = 0; i < NSEQ; i++) {
            for (int64_t row = OFF[i]; row < OFF[i + 1]; row++)
                for (int j = 0; j < 3; j++) ref[n++] = at(&x0, row * 3 + j);
            for (int64_t row = OFF2[i]; row < OFF2[i + 1]; row++)
                for (int j = 0; j < 3; j++) ref[n++] = at(&x1, row * 3 + j);
            want_lod[i + 1] = n / 3;
        }
        KT_SHAPE_IS(&out, KT_SHAPE(25, 3));
        CU_ASSERT_EQUAL(out.dtype, DTS[k]);
        CU_ASSERT(kt_values(&out, ref, 75, 0));
        CU_ASSERT(ints_are(&lod, want_lod, NSEQ + 1));
        FlTensor all[] = {x0, x1, out, lod};
        kt_fini(4, all);
    }
}

/* ---- sequence_reshape ---- */

static void test_reshape_values(void) {
    FlRng r;
    fl_rng_init(&r, 12);
    /* [20, 4] -> new_dim 2: every sequence fits; offsets double */
    for (int k = 0; k < 3; k++) {
        FlTensor x = kt_rand(&r, DTS[k], 2, (int64_t[]){20, 4}, -9, 9), out = FL_TENSOR_INIT, lod = FL_TENSOR_INIT;
        KT_OK(fl_kernel_sequence_reshape(KE, &x, OFF, NSEQ, 2, &out, &lod));
        double ref[80];
        for (int i = 0; i < 80; i++) ref[i] = at(&x, i);
        KT_SHAPE_IS(&out, KT_SHAPE(40, 2));
        CU_ASSERT(kt_values(&out, ref, 80, 0));
        CU_ASSERT(ints_are(&lod, (int64_t[]){0, 2, 6, 40, 40}, 5));
        /* new_dim 4 * 17 = 68: rows of 68 need every sequence's elements to divide by 68 */
        KT_ERR(fl_kernel_sequence_reshape(KE, &x, OFF, NSEQ, 68, &out, &lod),
               "sequence_reshape: sequence 0 has 1 rows of 4 elements: 4 elements do not make rows of new_dim 68");
        FlTensor all[] = {x, out, lod};
        kt_fini(3, all);
    }
    /* [4, 3] in sequences of 2, 2 -> new_dim 6: each sequence becomes one row */
    FlTensor x = KT_T(D, KT_SHAPE(4, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12), out = FL_TENSOR_INIT,
             lod = FL_TENSOR_INIT;
    KT_OK(fl_kernel_sequence_reshape(KE, &x, (int64_t[]){0, 2, 4}, 2, 6, &out, &lod));
    KT_SHAPE_IS(&out, KT_SHAPE(2, 6));
    CU_ASSERT(ints_are(&lod, (int64_t[]){0, 1, 2}, 3));
    KT_ERR(fl_kernel_sequence_reshape(KE, &x, (int64_t[]){0, 1, 4}, 2, 6, &out, &lod),
           "sequence_reshape: sequence 0 has 1 rows of 3 elements: 3 elements do not make rows of new_dim 6");
    FlTensor all[] = {x, out, lod};
    kt_fini(3, all);
}

/* ---- sequence_slice ---- */

static void test_slice_values(void) {
    FlRng r;
    fl_rng_init(&r, 13);
    /* per sequence (lengths 1, 2, 17, 0): offset and length inside it, empty slices included */
    const int64_t so[] = {0, 1, 3, 0}, sl[] = {1, 1, 12, 0};
    for (int k = 0; k < 3; k++) {
        FlTensor x = kt_rand(&r, DTS[k], 3, (int64_t[]){20, 2, 2}, -9, 9), out = FL_TENSOR_INIT, lod = FL_TENSOR_INIT;
        FlTensor o = KT_T(k == 1 ? FL_DT_INT32 : I, KT_SHAPE(4, 1), 0, 1, 3, 0), l = KT_T(I, KT_SHAPE(4, 1), 1, 1, 12, 0);
        KT_OK(fl_kernel_sequence_slice(KE, &x, OFF, NSEQ, &o, &l, &out, &lod));
        double ref[56];
        int64_t n = 0;
        for (int i = 0; i < NSEQ; i++)
            for (int64_t row = OFF[i] + so[i]; row < OFF[i] + so[i] + sl[i]; row++)
                for (int j = 0; j < 4; j++) ref[n++] = at(&x, row * 4 + j);
        KT_SHAPE_IS(&out, KT_SHAPE(14, 2, 2));
        CU_ASSERT(kt_values(&out, ref, 56, 0));
        CU_ASSERT(ints_are(&lod, (int64_t[]){0, 1, 2, 14, 14}, 5));
        FlTensor far = KT_T(I, KT_SHAPE(4, 1), 0, 1, 6, 0), neg = KT_T(I, KT_SHAPE(4, 1), 0, -1, 0, 0);
        KT_ERR(fl_kernel_sequence_slice(KE, &x, OFF, NSEQ, &far, &l, &out, &lod),
               "sequence_slice: sequence 2 has 17 rows: offset 6 and length 12 are outside it");
        KT_ERR(fl_kernel_sequence_slice(KE, &x, OFF, NSEQ, &neg, &l, &out, &lod),
               "sequence_slice: sequence 1 has 2 rows: offset -1 and length 1 are outside it");
        FlTensor all[] = {x, out, lod, o, l, far, neg};
        kt_fini(7, all);
    }
}

/* ---- sequence_pad, sequence_unpad ---- */

static void test_pad_unpad_values(void) {
    FlRng r;
    fl_rng_init(&r, 14);
    for (int k = 0; k < 3; k++) {
        FlTensor x = kt_rand(&r, DTS[k], 2, (int64_t[]){20, 3}, -9, 9), out = FL_TENSOR_INIT, len = FL_TENSOR_INIT;
        FlTensor pv1 = KT_T(DTS[k], KT_SHAPE(1), -5), pvrow = KT_T(DTS[k], KT_SHAPE(3), -1, -2, -3);
        for (int variant = 0; variant < 2; variant++) {
            const FlTensor *pv = variant ? &pvrow : &pv1;
            int64_t L = variant ? 19 : 17;
            KT_OK(fl_kernel_sequence_pad(KE, &x, OFF, NSEQ, pv, variant ? 19 : -1, &out, &len));
            double ref[4 * 19 * 3];
            for (int64_t i = 0; i < NSEQ; i++)
                for (int64_t t = 0; t < L; t++)
                    for (int j = 0; j < 3; j++)
                        ref[(i * L + t) * 3 + j] = t < OFF[i + 1] - OFF[i] ? at(&x, (OFF[i] + t) * 3 + j)
                                                                            : at(pv, variant ? j : 0);
            kt_shape_is(&out, 3, (int64_t[]){4, L, 3});
            CU_ASSERT(kt_values(&out, ref, 4 * L * 3, 0));
            CU_ASSERT(ints_are(&len, (int64_t[]){1, 2, 17, 0}, 4));
            /* sequence_unpad undoes it */
            FlTensor back = FL_TENSOR_INIT, lod = FL_TENSOR_INIT;
            KT_OK(fl_kernel_sequence_unpad(KE, &out, &len, &back, &lod));
            CU_ASSERT_EQUAL(kt_rel_diff(&back, &x), 0);
            CU_ASSERT(ints_are(&lod, OFF, 5));
            kt_fini(1, &back);
            kt_fini(1, &lod);
        }
        KT_ERR(fl_kernel_sequence_pad(KE, &x, OFF, NSEQ, &pv1, 16, &out, &len),
               "sequence_pad: padded_length 16 is less than the longest sequence (17 rows)");
        FlTensor pv2 = KT_T(DTS[k], KT_SHAPE(2), 0, 0);
        KT_ERR(fl_kernel_sequence_pad(KE, &x, OFF, NSEQ, &pv2, -1, &out, &len),
               "sequence_pad: PadValue [2] must hold 1 value or a row of X [20, 3] (3 values)");
        FlTensor all[] = {x, out, len, pv1, pvrow, pv2};
        kt_fini(6, all);
    }
    /* unpad of rank 2: [B, L] -> [sum, 1]; a length past L is an error */
    FlTensor x = KT_T(D, KT_SHAPE(3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9), l = KT_T(I, KT_SHAPE(3), 2, 0, 3);
    FlTensor out = FL_TENSOR_INIT, lod = FL_TENSOR_INIT, bad = KT_T(I, KT_SHAPE(3), 2, 4, 0);
    KT_OK(fl_kernel_sequence_unpad(KE, &x, &l, &out, &lod));
    KT_SHAPE_IS(&out, KT_SHAPE(5, 1));
    KT_VALUES(&out, 0, 1, 2, 7, 8, 9);
    CU_ASSERT(ints_are(&lod, (int64_t[]){0, 2, 2, 5}, 4));
    KT_ERR(fl_kernel_sequence_unpad(KE, &x, &bad, &out, &lod), "sequence_unpad: Length[1] is 4, outside 0 to 3 (X [3, 3])");
    FlTensor all[] = {x, l, out, lod, bad};
    kt_fini(5, all);
}

/* ---- sequence_enumerate ---- */

static void test_enumerate_values(void) {
    FlRng r;
    fl_rng_init(&r, 15);
    FlDType its[] = {I, FL_DT_INT32};
    for (int k = 0; k < 2; k++) {
        FlTensor x = kt_rand(&r, its[k], 2, (int64_t[]){20, 1}, 0, 1000), out = FL_TENSOR_INIT;
        for (int64_t win = 1; win <= 4; win += 3) {
            KT_OK(fl_kernel_sequence_enumerate(KE, &x, OFF, NSEQ, win, -7, &out));
            double ref[80];
            for (int64_t i = 0; i < NSEQ; i++)
                for (int64_t t = OFF[i]; t < OFF[i + 1]; t++)
                    for (int64_t j = 0; j < win; j++) ref[t * win + j] = t + j < OFF[i + 1] ? at(&x, t + j) : -7;
            kt_shape_is(&out, 2, (int64_t[]){20, win});
            CU_ASSERT_EQUAL(out.dtype, its[k]);
            CU_ASSERT(kt_values(&out, ref, 20 * win, 0));
        }
        FlTensor all[] = {x, out};
        kt_fini(2, all);
    }
    FlTensor x = KT_T(I, KT_SHAPE(3, 1), 4, 5, 6), out = FL_TENSOR_INIT;
    KT_OK(fl_kernel_sequence_enumerate(KE, &x, (int64_t[]){0, 2, 3}, 2, 2, 0, &out));
    KT_VALUES(&out, 0, 4, 5, 5, 0, 6, 0);
    KT_ERR(fl_kernel_sequence_enumerate(KE, &x, (int64_t[]){0, 2, 3}, 2, 0, 0, &out),
           "sequence_enumerate: win_size must be >= 1, found 0");
    FlTensor fx = KT_T(F, KT_SHAPE(3, 1), 4, 5, 6);
    KT_ERR(fl_kernel_sequence_enumerate(KE, &fx, (int64_t[]){0, 2, 3}, 2, 2, 0, &out),
           "sequence_enumerate: X [3, 1] float32 must be int32 or int64 ids [T, 1]");
    FlTensor all[] = {x, out, fx};
    kt_fini(3, all);
}

/* ---- offsets and shapes the kernels refuse ---- */

static void test_seqshape_bad_inputs(void) {
    FlTensor x = KT_T(F, KT_SHAPE(3, 2), 1, 2, 3, 4, 5, 6), y = KT_T(F, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    FlTensor out = FL_TENSOR_INIT, lod = FL_TENSOR_INIT, pv = KT_T(F, KT_SHAPE(1), 0);
    /* offsets that do not end at the rows, or decrease */
    KT_ERR(fl_kernel_sequence_reshape(KE, &x, (int64_t[]){0, 1, 2}, 2, 1, &out, &lod),
           "sequence_reshape: the offsets of X do not cut its 3 rows");
    KT_ERR(fl_kernel_sequence_pad(KE, &x, (int64_t[]){0, 2, 1, 3}, 3, &pv, -1, &out, &lod),
           "sequence_pad: the offsets of X do not cut its 3 rows");
    const FlTensor *xs[] = {&x, &y};
    const int64_t *offs[] = {(int64_t[]){0, 1, 3}, (int64_t[]){0, 1, 2}};
    KT_ERR(fl_kernel_sequence_concat(KE, xs, offs, 2, 2, &out, &lod),
           "sequence_concat: X[1] [2, 3] float32 and X[0] [3, 2] float32 differ in dtype or row shape");
    FlTensor pvd = KT_T(D, KT_SHAPE(1), 0);
    KT_ERR(fl_kernel_sequence_pad(KE, &x, (int64_t[]){0, 3}, 1, &pvd, -1, &out, &lod),
           "sequence_pad: X [3, 2] is float32 but PadValue [1] is float64");
    FlTensor v = KT_T(F, KT_SHAPE(3), 1, 2, 3);
    KT_ERR(fl_kernel_sequence_pad(KE, &v, (int64_t[]){0, 3}, 1, &pv, -1, &out, &lod),
           "sequence_pad: X [3] must have rank >= 2");
    FlTensor all[] = {x, y, out, lod, pv, pvd, v};
    kt_fini(7, all);
}

/* ---- gradients by finite differences (float64) ---- */

static FlStatus concat_fwd(const void *ctx, FlErr *e, FlTensor *in, FlTensor *out) {
    (void)ctx;
    const FlTensor *xs[] = {&in[0], &in[1]};
    const int64_t *offs[] = {OFF, OFF2};
    return fl_kernel_sequence_concat(e, xs, offs, 2, NSEQ, out, NULL);
}
static FlStatus concat_bwd(const void *ctx, FlErr *e, FlTensor *in, const FlTensor *out, const FlTensor *dout,
                           FlTensor *din) {
    (void)ctx, (void)out;
    const FlTensor *xs[] = {&in[0], &in[1]};
    const int64_t *offs[] = {OFF, OFF2};
    FlTensor *dxs[] = {&din[0], &din[1]};
    return fl_kernel_sequence_concat_grad(e, xs, offs, 2, NSEQ, dout, dxs);
}

static FlStatus reshape_fwd(const void *ctx, FlErr *e, FlTensor *in, FlTensor *out) {
    (void)ctx;
    return fl_kernel_sequence_reshape(e, &in[0], OFF, NSEQ, 2, out, NULL);
}
static FlStatus reshape_bwd(const void *ctx, FlErr *e, FlTensor *in, const FlTensor *out, const FlTensor *dout,
                            FlTensor *din) {
    (void)ctx, (void)out;
    return fl_kernel_sequence_reshape_grad(e, &in[0], dout, &din[0]);
}

/* in[1], in[2]: Offset and Length (int64, not checked) */
static FlStatus slice_fwd(const void *ctx, FlErr *e, FlTensor *in, FlTensor *out) {
    (void)ctx;
    return fl_kernel_sequence_slice(e, &in[0], OFF, NSEQ, &in[1], &in[2], out, NULL);
}
static FlStatus slice_bwd(const void *ctx, FlErr *e, FlTensor *in, const FlTensor *out, const FlTensor *dout,
                          FlTensor *din) {
    (void)ctx, (void)out;
    return fl_kernel_sequence_slice_grad(e, &in[0], OFF, NSEQ, &in[1], &in[2], dout, &din[0]);
}

/* in[1]: PadValue (not differentiated: it gets no gradient, as in Fluid) */
static FlStatus pad_fwd(const void *ctx, FlErr *e, FlTensor *in, FlTensor *out) {
    (void)ctx;
    FlTensor len = FL_TENSOR_INIT;
    FlStatus s = fl_kernel_sequence_pad(e, &in[0], OFF, NSEQ, &in[1], 18, out, &len);
    fl_tensor_fini(&len);
    return s;
}
static FlStatus pad_bwd(const void *ctx, FlErr *e, FlTensor *in, const FlTensor *out, const FlTensor *dout,
                        FlTensor *din) {
    (void)ctx, (void)out;
    return fl_kernel_sequence_pad_grad(e, &in[0], OFF, NSEQ, dout, &din[0]);
}

/* in[1]: Length (int64) */
static FlStatus unpad_fwd(const void *ctx, FlErr *e, FlTensor *in, FlTensor *out) {
    (void)ctx;
    return fl_kernel_sequence_unpad(e, &in[0], &in[1], out, NULL);
}
static FlStatus unpad_bwd(const void *ctx, FlErr *e, FlTensor *in, const FlTensor *out, const FlTensor *dout,
                          FlTensor *din) {
    (void)ctx, (void)out;
    return fl_kernel_sequence_unpad_grad(e, &in[0], &in[1], dout, &din[0]);
}

static void test_seqshape_grads(void) {
    FlRng r;
    fl_rng_init(&r, 16);
    {
        FlTensor in[2] = {kt_rand(&r, D, 2, (int64_t[]){20, 3}, -1, 1), kt_rand(&r, D, 2, (int64_t[]){5, 3}, -1, 1)};
        CU_ASSERT(kt_grad_check("sequence_concat", NULL, 2, in, (bool[]){true, true}, concat_fwd, concat_bwd, 1e-6));
        kt_fini(2, in);
    }
    {
        FlTensor in[1] = {kt_rand(&r, D, 2, (int64_t[]){20, 4}, -1, 1)};
        CU_ASSERT(kt_grad_check("sequence_reshape", NULL, 1, in, (bool[]){true}, reshape_fwd, reshape_bwd, 1e-6));
        kt_fini(1, in);
    }
    {
        FlTensor in[3] = {kt_rand(&r, D, 2, (int64_t[]){20, 2}, -1, 1), KT_T(I, KT_SHAPE(4, 1), 0, 1, 3, 0),
                          KT_T(I, KT_SHAPE(4, 1), 1, 1, 12, 0)};
        CU_ASSERT(kt_grad_check("sequence_slice", NULL, 3, in, (bool[]){true, false, false}, slice_fwd, slice_bwd, 1e-6));
        kt_fini(3, in);
    }
    {
        FlTensor in[2] = {kt_rand(&r, D, 2, (int64_t[]){20, 2}, -1, 1), KT_T(D, KT_SHAPE(1), 0.5)};
        CU_ASSERT(kt_grad_check("sequence_pad", NULL, 2, in, (bool[]){true, false}, pad_fwd, pad_bwd, 1e-6));
        kt_fini(2, in);
    }
    {
        FlTensor in[2] = {kt_rand(&r, D, 3, (int64_t[]){4, 17, 2}, -1, 1), KT_T(I, KT_SHAPE(4), 1, 2, 17, 0)};
        CU_ASSERT(kt_grad_check("sequence_unpad", NULL, 2, in, (bool[]){true, false}, unpad_fwd, unpad_bwd, 1e-6));
        kt_fini(2, in);
    }
}

int main(void) {
    static const KtCase tc[] = {
        KT_TEST(test_concat_values),    KT_TEST(test_reshape_values),      KT_TEST(test_slice_values),
        KT_TEST(test_pad_unpad_values), KT_TEST(test_enumerate_values),    KT_TEST(test_seqshape_bad_inputs),
        KT_TEST(test_seqshape_grads),
    };
    return kt_run("seqshape kernels", tc, (int)FL_ARRAY_LEN(tc));
}
