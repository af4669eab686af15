/* test_seq.c: the sequence kernels of seq.c (sequence_pool, sequence_softmax, sequence_conv,
 * sequence_expand, sequence_mask) against plain reference loops written from the definitions,
 * on a batch of sequences of lengths 1, 2, 0 (empty) and 17, in float32 and float64; gradients
 * by kt_grad_check's central differences in float64; errors on bad inputs. */
#include "tests/runtime/kernels/kt.h"

#include "runtime/kernels/kernels_seq.h"

static double at(const FlTensor *t, int64_t i) { return fl_tensor_get(t, i); }

/* The first n elements of t are vals. */
static bool starts_with(const FlTensor *t, const double *vals, int64_t n) {
    bool ok = fl_tensor_numel(t) >= n;
    for (int64_t i = 0; ok && i < n; i++) ok = at(t, i) == vals[i];
    return ok;
}

/* lengths 1, 2, 0, 17 */
static const int64_t OFF[] = {0, 1, 3, 3, 20};
enum { NSEQ = 4, ROWS = 20 };
static const FlDType DTS[2] = {FL_DT_FLOAT32, FL_DT_FLOAT64};

/* ---- sequence_pool ---- */

static double ref_pool(const FlTensor *x, int64_t D, FlSeqPool t, int64_t s, int64_t j, double pad, int64_t *arg) {
    int64_t b = OFF[s], n = OFF[s + 1] - b;
    *arg = -1;
    if (n == 0) return pad;
    double sum = 0, mx = -INFINITY;
    for (int64_t r = b; r < b + n; r++) {
        double v = at(x, r * D + j);
        sum += v;
        if (v > mx) mx = v, *arg = r;
    }
    switch (t) {
    case FL_SEQPOOL_AVERAGE: return sum / (double)n;
    case FL_SEQPOOL_SUM: return sum;
    case FL_SEQPOOL_SQRT: return sum / sqrt((double)n);
    case FL_SEQPOOL_MAX: return mx;
    case FL_SEQPOOL_LAST: return at(x, (b + n - 1) * D + j);
    case FL_SEQPOOL_FIRST: return at(x, b * D + j);
    case FL_SEQPOOL_COUNT: break;
    }
    return NAN;
}

static void test_pool_values(void) {
    FlRng r;
    fl_rng_init(&r, 3);
    for (int k = 0; k < 2; k++) {
        /* X [20, 2, 3]: a row is 6 values */
        FlTensor x = kt_distinct(&r, DTS[k], 3, (int64_t[]){ROWS, 2, 3});
        for (int t = 0; t < FL_SEQPOOL_COUNT; t++) {
            FlTensor out = FL_TENSOR_INIT, idx = FL_TENSOR_INIT;
            KT_OK(fl_kernel_sequence_pool(KE, &x, OFF, NSEQ, (FlSeqPool)t, 0.5, &out, &idx));
            KT_SHAPE_IS(&out, KT_SHAPE(NSEQ, 2, 3));
            CU_ASSERT_EQUAL(out.dtype, DTS[k]);
            double ref[NSEQ * 6];
            int64_t args[NSEQ * 6];
            for (int64_t s = 0; s < NSEQ; s++)
                for (int64_t j = 0; j < 6; j++) ref[s * 6 + j] = ref_pool(&x, 6, (FlSeqPool)t, s, j, 0.5, &args[s * 6 + j]);
            CU_ASSERT(kt_values(&out, ref, NSEQ * 6, k ? 1e-12 : 1e-5));
            if (t == FL_SEQPOOL_MAX) {
                CU_ASSERT_EQUAL(idx.dtype, FL_DT_INT32);
                KT_SHAPE_IS(&idx, KT_SHAPE(NSEQ, 2, 3));
                for (int64_t i = 0; i < NSEQ * 6; i++) CU_ASSERT_EQUAL(at(&idx, i), (double)args[i]);
            } else {
                CU_ASSERT_FALSE(fl_tensor_has_data(&idx)); /* only MAX keeps indices */
            }
            fl_tensor_fini(&out);
            fl_tensor_fini(&idx);
        }
        fl_tensor_fini(&x);
    }
    /* known values: lengths 2 and 1, D 1 */
    FlTensor x = KT_T(FL_DT_FLOAT32, KT_SHAPE(3, 1), 1, 3, 5), out = FL_TENSOR_INIT;
    const int64_t off[] = {0, 2, 3};
    KT_OK(fl_kernel_sequence_pool(KE, &x, off, 2, FL_SEQPOOL_SQRT, 0, &out, NULL));
    CU_ASSERT(kt_values(&out, (double[]){4 / sqrt(2.0), 5}, 2, 1e-6));
    fl_tensor_fini(&out);
    fl_tensor_fini(&x);
}

typedef struct SG {
    FlSeqPool type;
    bool keep; /* MAX: pass MaxIndex to the gradient (else found again in X) */
    int op;    /* 0 pool, 1 softmax, 2 conv, 3 expand dense, 4 expand lod */
    int64_t start, len;
} SG;

static FlStatus sfwd(const void *ctx, FlErr *e, FlTensor *in, FlTensor *out) {
    const SG *g = ctx;
    static const int64_t xoff[] = {0, 2, 3, 3, 5}; /* X of expand with LoD: 5 rows, lengths 2 1 0 2 */
    switch (g->op) {
    case 0: return fl_kernel_sequence_pool(e, &in[0], OFF, NSEQ, g->type, 0, out, NULL);
    case 1: return fl_kernel_sequence_softmax(e, &in[0], OFF, NSEQ, out);
    case 2: return fl_kernel_sequence_conv(e, &in[0], OFF, NSEQ, &in[1], g->start, g->len, out);
    case 3: return fl_kernel_sequence_expand(e, &in[0], NULL, 0, OFF, NSEQ, out, NULL);
    default: return fl_kernel_sequence_expand(e, &in[0], xoff, NSEQ, OFF, NSEQ, out, NULL);
    }
}

static FlStatus sbwd(const void *ctx, FlErr *e, FlTensor *in, const FlTensor *out, const FlTensor *dout,
                     FlTensor *din) {
    const SG *g = ctx;
    static const int64_t xoff[] = {0, 2, 3, 3, 5};
    switch (g->op) {
    case 0: {
        FlTensor o = FL_TENSOR_INIT, idx = FL_TENSOR_INIT;
        if (fl_kernel_sequence_pool(e, &in[0], OFF, NSEQ, g->type, 0, &o, &idx)) return FL_ERROR;
        FlStatus st = fl_kernel_sequence_pool_grad(e, &in[0], OFF, NSEQ, g->type, g->keep && idx.buf ? &idx : NULL,
                                                   dout, &din[0]);
        fl_tensor_fini(&o);
        fl_tensor_fini(&idx);
        return st;
    }
    case 1: return fl_kernel_sequence_softmax_grad(e, out, OFF, NSEQ, dout, &din[0]);
    case 2: return fl_kernel_sequence_conv_grad(e, &in[0], OFF, NSEQ, &in[1], g->start, g->len, dout, &din[0], &din[1]);
    case 3: return fl_kernel_sequence_expand_grad(e, &in[0], NULL, 0, OFF, NSEQ, dout, &din[0]);
    default: return fl_kernel_sequence_expand_grad(e, &in[0], xoff, NSEQ, OFF, NSEQ, dout, &din[0]);
    }
}

static void test_pool_grads(void) {
    FlRng r;
    fl_rng_init(&r, 5);
    bool one[2] = {true, false};
    for (int t = 0; t < FL_SEQPOOL_COUNT; t++)
        for (int keep = 0; keep < 2; keep++) {
            FlTensor in[1] = {kt_distinct(&r, FL_DT_FLOAT64, 2, (int64_t[]){ROWS, 3})};
            SG g = {.type = (FlSeqPool)t, .keep = keep, .op = 0};
            char name[64];
            snprintf(name, sizeof name, "sequence_pool type %d keep %d", t, keep);
            CU_ASSERT(kt_grad_check(name, &g, 1, in, one, sfwd, sbwd, 1e-6));
            fl_tensor_fini(&in[0]);
        }
}

/* ---- sequence_softmax ---- */

static void test_softmax(void) {
    FlRng r;
    fl_rng_init(&r, 9);
    for (int k = 0; k < 2; k++) {
        FlTensor x = kt_rand(&r, DTS[k], k ? 1 : 2, (int64_t[]){ROWS, 1}, -3, 3), y = FL_TENSOR_INIT;
        KT_OK(fl_kernel_sequence_softmax(KE, &x, OFF, NSEQ, &y));
        CU_ASSERT(fl_tensor_same_shape(&x, &y));
        double ref[ROWS];
        for (int s = 0; s < NSEQ; s++) {
            double z = 0;
            for (int64_t i = OFF[s]; i < OFF[s + 1]; i++) z += exp(at(&x, i));
            for (int64_t i = OFF[s]; i < OFF[s + 1]; i++) ref[i] = exp(at(&x, i)) / z;
        }
        CU_ASSERT(kt_values(&y, ref, ROWS, k ? 1e-12 : 1e-6));
        CU_ASSERT_DOUBLE_EQUAL(at(&y, 0), 1.0, 1e-7); /* a sequence of one row */
        fl_tensor_fini(&x);
        fl_tensor_fini(&y);
    }
    bool one[1] = {true};
    FlTensor in[1] = {kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){ROWS, 1}, -3, 3)};
    SG g = {.op = 1};
    CU_ASSERT(kt_grad_check("sequence_softmax", &g, 1, in, one, sfwd, sbwd, 1e-6));
    fl_tensor_fini(&in[0]);
}

/* ---- sequence_conv ---- */

static void ref_conv(const FlTensor *x, const FlTensor *w, int64_t D, int64_t N, int64_t start, int64_t L, double *out) {
    for (int64_t s = 0; s < NSEQ; s++)
        for (int64_t t = OFF[s]; t < OFF[s + 1]; t++)
            for (int64_t n = 0; n < N; n++) {
                double acc = 0;
                for (int64_t j = 0; j < L; j++) {
                    int64_t src = t + start + j;
                    if (src < OFF[s] || src >= OFF[s + 1]) continue;
                    for (int64_t k = 0; k < D; k++) acc += at(x, src * D + k) * at(w, (j * D + k) * N + n);
                }
                out[t * N + n] = acc;
            }
}

static void test_conv(void) {
    FlRng r;
    fl_rng_init(&r, 11);
    const int64_t D = 3, N = 4;
    const int64_t cfg[][2] = {{-1, 3}, {0, 1}, {-2, 5}, {0, 2}, {-4, 3}};
    for (int k = 0; k < 2; k++)
        for (size_t c = 0; c < FL_ARRAY_LEN(cfg); c++) {
            int64_t start = cfg[c][0], L = cfg[c][1];
            FlTensor x = kt_rand(&r, DTS[k], 2, (int64_t[]){ROWS, D}, -1, 1);
            FlTensor w = kt_rand(&r, DTS[k], 2, (int64_t[]){L * D, N}, -1, 1), out = FL_TENSOR_INIT;
            KT_OK(fl_kernel_sequence_conv(KE, &x, OFF, NSEQ, &w, start, L, &out));
            KT_SHAPE_IS(&out, KT_SHAPE(ROWS, N));
            double ref[ROWS * 4];
            ref_conv(&x, &w, D, N, start, L, ref);
            CU_ASSERT(kt_values(&out, ref, ROWS * N, k ? 1e-12 : 1e-5));
            fl_tensor_fini(&x);
            fl_tensor_fini(&w);
            fl_tensor_fini(&out);
        }
    bool both[2] = {true, true};
    for (size_t c = 0; c < FL_ARRAY_LEN(cfg); c++) {
        FlTensor in[2] = {kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){ROWS, D}, -1, 1),
                          kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){cfg[c][1] * D, N}, -1, 1)};
        SG g = {.op = 2, .start = cfg[c][0], .len = cfg[c][1]};
        CU_ASSERT(kt_grad_check("sequence_conv", &g, 2, in, both, sfwd, sbwd, 1e-6));
        kt_fini(2, in);
    }
}

/* ---- sequence_expand ---- */

static void test_expand(void) {
    /* dense X: one row per sequence of Y (lengths 1 2 0 17) */
    FlTensor x = KT_T(FL_DT_INT64, KT_SHAPE(4, 2), 1, 2, 3, 4, 5, 6, 7, 8), out = FL_TENSOR_INIT,
             lod = FL_TENSOR_INIT;
    KT_OK(fl_kernel_sequence_expand(KE, &x, NULL, 0, OFF, NSEQ, &out, &lod));
    KT_SHAPE_IS(&out, KT_SHAPE(ROWS, 2));
    CU_ASSERT_FALSE(fl_tensor_has_data(&lod)); /* a dense X makes no offsets */
    double ref[ROWS * 2];
    int64_t o = 0;
    for (int s = 0; s < NSEQ; s++)
        for (int64_t k = 0; k < OFF[s + 1] - OFF[s]; k++, o++) ref[o * 2] = 2 * s + 1, ref[o * 2 + 1] = 2 * s + 2;
    CU_ASSERT(kt_values(&out, ref, ROWS * 2, 0));
    fl_tensor_fini(&x);
    /* X with LoD (lengths 2 1 0 2) repeated 1, 2, 0, 17 times */
    const int64_t xoff[] = {0, 2, 3, 3, 5};
    x = KT_T(FL_DT_FLOAT32, KT_SHAPE(5), 10, 11, 20, 40, 41);
    KT_OK(fl_kernel_sequence_expand(KE, &x, xoff, NSEQ, OFF, NSEQ, &out, &lod));
    KT_SHAPE_IS(&out, KT_SHAPE(2 + 2 + 34));
    KT_SHAPE_IS(&lod, KT_SHAPE(1 + 20));
    CU_ASSERT(starts_with(&out, (double[]){10, 11, 20, 20, 40, 41, 40, 41}, 8));
    CU_ASSERT_EQUAL(at(&out, 37), 41);
    CU_ASSERT(starts_with(&lod, (double[]){0, 2, 3, 4, 6, 8}, 6));
    CU_ASSERT_EQUAL(at(&lod, 20), 38);
    fl_tensor_fini(&x);
    fl_tensor_fini(&out);
    fl_tensor_fini(&lod);
    FlRng r;
    fl_rng_init(&r, 13);
    bool one[1] = {true};
    FlTensor in[1] = {kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){4, 3}, -1, 1)};
    SG g = {.op = 3};
    CU_ASSERT(kt_grad_check("sequence_expand dense", &g, 1, in, one, sfwd, sbwd, 1e-6));
    fl_tensor_fini(&in[0]);
    in[0] = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){5, 2}, -1, 1);
    g.op = 4;
    CU_ASSERT(kt_grad_check("sequence_expand lod", &g, 1, in, one, sfwd, sbwd, 1e-6));
    fl_tensor_fini(&in[0]);
}

/* ---- sequence_mask ---- */

static void test_mask(void) {
    FlTensor x = KT_T(FL_DT_INT64, KT_SHAPE(2, 2), 3, 0, 1, 5), y = FL_TENSOR_INIT;
    KT_OK(fl_kernel_sequence_mask(KE, &x, 4, FL_DT_FLOAT32, &y));
    KT_SHAPE_IS(&y, KT_SHAPE(2, 2, 4));
    CU_ASSERT_EQUAL(y.dtype, FL_DT_FLOAT32);
    CU_ASSERT(kt_values(&y, (double[]){1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}, 16, 0));
    KT_OK(fl_kernel_sequence_mask(KE, &x, -1, FL_DT_INT64, &y)); /* maxlen: the largest length */
    KT_SHAPE_IS(&y, KT_SHAPE(2, 2, 5));
    CU_ASSERT_EQUAL(y.dtype, FL_DT_INT64);
    CU_ASSERT(kt_values(&y, (double[]){1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1}, 20, 0));
    fl_tensor_fini(&x);
    x = KT_T(FL_DT_INT32, KT_SHAPE(3), 2, -1, 0);
    KT_OK(fl_kernel_sequence_mask(KE, &x, -1, FL_DT_BOOL, &y));
    KT_SHAPE_IS(&y, KT_SHAPE(3, 2));
    CU_ASSERT(kt_values(&y, (double[]){1, 1, 0, 0, 0, 0}, 6, 0));
    fl_tensor_fini(&x);
    fl_tensor_fini(&y);
}

/* ---- errors ---- */

static void test_seq_bad_inputs(void) {
    FlTensor x = KT_T(FL_DT_FLOAT32, KT_SHAPE(3, 2), 1, 2, 3, 4, 5, 6), out = FL_TENSOR_INIT;
    const int64_t off[] = {0, 1, 4};
    KT_ERR(fl_kernel_sequence_pool(KE, &x, off, 2, FL_SEQPOOL_SUM, 0, &out, NULL),
           "sequence_pool: the offsets end at 4 but X [3, 2] has 3 rows");
    KT_ERR(fl_kernel_sequence_softmax(KE, &x, (int64_t[]){0, 3}, 1, &out),
           "sequence_softmax: X [3, 2] must be [T] or [T, 1]");
    FlTensor w = KT_T(FL_DT_FLOAT32, KT_SHAPE(4, 1), 1, 2, 3, 4);
    KT_ERR(fl_kernel_sequence_conv(KE, &x, (int64_t[]){0, 3}, 1, &w, -1, 3, &out),
           "sequence_conv: Filter [4, 1] must be [contextLength * D, N] = [6, N] for X [3, 2]");
    KT_ERR(fl_kernel_sequence_expand(KE, &x, NULL, 0, (int64_t[]){0, 1, 2}, 2, &out, NULL),
           "sequence_expand: X [3, 2] has 3 rows but Y holds 2 sequences (one row of X per sequence)");
    KT_ERR(fl_kernel_sequence_expand(KE, &x, (int64_t[]){0, 3}, 1, (int64_t[]){0, 1, 2}, 2, &out, NULL),
           "sequence_expand: X holds 1 sequences but Y 2 (one sequence of X per sequence of Y)");
    KT_ERR(fl_kernel_sequence_mask(KE, &x, 3, FL_DT_INT64, &out),
           "sequence_mask: X [3, 2] has dtype float32; int32 or int64 lengths expected");
    /* a MaxIndex outside its sequence */
    FlTensor idx = KT_T(FL_DT_INT32, KT_SHAPE(1, 2), 0, 3), dx = FL_TENSOR_INIT;
    FlTensor dout = KT_T(FL_DT_FLOAT32, KT_SHAPE(1, 2), 1, 1);
    KT_ERR(fl_kernel_sequence_pool_grad(KE, &x, (int64_t[]){0, 3}, 1, FL_SEQPOOL_MAX, &idx, &dout, &dx),
           "sequence_pool_grad: MaxIndex[1] is 3, outside sequence 0 (rows 0 to 3)");
    CU_ASSERT_FALSE(fl_tensor_has_data(&out));
    CU_ASSERT_FALSE(fl_tensor_has_data(&dx));
    fl_tensor_fini(&x);
    fl_tensor_fini(&w);
    fl_tensor_fini(&idx);
    fl_tensor_fini(&dout);
}

int main(void) {
    static const KtCase tc[] = {
        KT_TEST(test_pool_values), KT_TEST(test_pool_grads), KT_TEST(test_softmax),        KT_TEST(test_conv),
        KT_TEST(test_expand),      KT_TEST(test_mask),       KT_TEST(test_seq_bad_inputs),
    };
    return kt_run("sequence kernels", tc, (int)FL_ARRAY_LEN(tc));
}
