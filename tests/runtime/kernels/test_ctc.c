/* test_ctc.c: the kernels of ctc.c. The CTC loss against a brute force that enumerates every
 * alignment (a class per frame) of short sequences, including an empty label, repeated labels,
 * an empty sequence and one too short for its label; its gradient by central differences
 * (float64), with and without norm_by_times; longer sequences against a scaled probability-space
 * recursion; a long confident sequence stays finite; greedy
 * alignment, token erasure and edit distance on hand-worked cases; the errors on bad inputs. */
#include "runtime/kernels/kernels_ctc.h"
#include "tests/runtime/kernels/kt.h"

static double at(const FlTensor *t, int64_t i) { return fl_tensor_get(t, i); }

/* -log of the summed probability of the alignments of frames [r0, r0 + T) of x [., C] that
 * collapse (repeats merged, blanks dropped) to lab[0..L); INFINITY when none does. */
static double brute_ctc(const FlTensor *x, int64_t r0, int64_t T, int64_t C, const int64_t *lab, int64_t L,
                        int64_t blank) {
    double y[16][8];
    for (int64_t t = 0; t < T; t++) {
        double m = -INFINITY, z = 0;
        for (int64_t k = 0; k < C; k++) m = fmax(m, at(x, (r0 + t) * C + k));
        for (int64_t k = 0; k < C; k++) z += y[t][k] = exp(at(x, (r0 + t) * C + k) - m);
        for (int64_t k = 0; k < C; k++) y[t][k] /= z;
    }
    int64_t pi[16] = {0};
    double p = 0;
    for (;;) {
        int64_t n = 0, prev = -1;
        bool ok = true;
        for (int64_t t = 0; t < T; t++) {
            if (pi[t] != prev && pi[t] != blank) {
                if (n >= L || lab[n] != pi[t]) ok = false;
                n++;
            }
            prev = pi[t];
        }
        if (ok && n == L) {
            double q = 1;
            for (int64_t t = 0; t < T; t++) q *= y[t][pi[t]];
            p += q;
        }
        int64_t t = T - 1;
        while (t >= 0 && ++pi[t] == C) pi[t--] = 0;
        if (t < 0) break;
    }
    return -log(p);
}

/* Sequences of 3, 4, 0, 5, 2 and 4 frames over C = 4 classes (blank 1); labels: 0 2, 2 2 (a
 * repeat), (empty for the empty sequence), 3 (one), (empty), and 0 0 2 (needs 4 frames: fits
 * exactly); then the same batch with the last label 0 0 2 3 (5 frames needed: too short). */
static const int64_t xoff[] = {0, 3, 7, 7, 12, 14, 18}, NSEQ = 6, T_ALL = 18, C = 4, BLANK = 1;

static void test_warpctc_brute_force(void) {
    FlRng r;
    fl_rng_init(&r, 3);
    const int64_t loff[] = {0, 2, 4, 4, 5, 5, 8};
    const double labs[] = {0, 2, 2, 2, 3, 0, 0, 2};
    FlDType dts[2] = {FL_DT_FLOAT32, FL_DT_FLOAT64};
    for (int d = 0; d < 2; d++) {
        FlTensor x = kt_rand(&r, dts[d], 2, (int64_t[]){T_ALL, C}, -2, 2);
        FlTensor y = kt_make(FL_DT_INT32, 2, (int64_t[]){8, 1}, labs);
        FlTensor loss = FL_TENSOR_INIT, g = FL_TENSOR_INIT;
        KT_OK(fl_kernel_warpctc(KE, &x, xoff, NSEQ, &y, loff, NSEQ, BLANK, &g, &loss));
        KT_SHAPE_IS(&loss, KT_SHAPE(6, 1));
        KT_SHAPE_IS(&g, KT_SHAPE(18, 4));
        CU_ASSERT_EQUAL(loss.dtype, dts[d]);
        double tol = d ? 1e-10 : 2e-5;
        for (int64_t s = 0; s < NSEQ; s++) {
            int64_t lab[8], L = loff[s + 1] - loff[s];
            for (int64_t i = 0; i < L; i++) lab[i] = (int64_t)labs[loff[s] + i];
            double want = xoff[s + 1] == xoff[s] ? 0 : brute_ctc(&x, xoff[s], xoff[s + 1] - xoff[s], C, lab, L, BLANK);
            if (!(fabs(at(&loss, s) - want) <= tol * (1 + fabs(want))))
                fprintf(stderr, "\nsequence %lld: loss %.9g, brute force %.9g\n", (long long)s, at(&loss, s), want);
            CU_ASSERT(fabs(at(&loss, s) - want) <= tol * (1 + fabs(want)));
        }
        /* each row of the gradient sums to 0 (softmax minus a posterior that sums to 1) */
        for (int64_t t = 0; t < T_ALL; t++) {
            double sum = 0;
            for (int64_t k = 0; k < C; k++) sum += at(&g, t * C + k);
            CU_ASSERT(fabs(sum) <= 1e-6);
        }
        /* a label too long for its frames costs 0 and gets no gradient, as warp-ctc gives */
        const int64_t loff2[] = {0, 2, 4, 4, 5, 5, 9};
        const double labs2[] = {0, 2, 2, 2, 3, 0, 0, 2, 3};
        FlTensor y2 = kt_make(FL_DT_INT64, 2, (int64_t[]){9, 1}, labs2);
        KT_OK(fl_kernel_warpctc(KE, &x, xoff, NSEQ, &y2, loff2, NSEQ, BLANK, &g, &loss));
        CU_ASSERT_EQUAL(at(&loss, 5), 0.0);
        for (int64_t i = 14 * C; i < 18 * C; i++) CU_ASSERT_EQUAL(at(&g, i), 0.0);
        CU_ASSERT(at(&loss, 0) > 0);
        FlTensor all[] = {x, y, loss, g, y2};
        kt_fini(5, all);
    }
}

/* -log p by the textbook alpha recursion in probability space (Graves et al. 2006, eq. 6-8), each
 * frame's alphas rescaled to sum 1 and the log of the scales summed: a second reference, written
 * apart from the kernel's log-space recursions, for sequences too long to enumerate. */
static double scaled_ctc(const FlTensor *x, int64_t r0, int64_t T, int64_t K, const int64_t *lab, int64_t L,
                         int64_t blank) {
    int64_t S = 2 * L + 1, ext[64];
    double a[64] = {0}, n[64], y[16], logp = 0;
    for (int64_t s = 0; s < S; s++) ext[s] = s % 2 ? lab[s / 2] : blank;
    for (int64_t t = 0; t < T; t++) {
        double z = 0;
        for (int64_t k = 0; k < K; k++) z += y[k] = exp(at(x, (r0 + t) * K + k));
        for (int64_t k = 0; k < K; k++) y[k] /= z;
        for (int64_t s = 0; s < S; s++) {
            double v;
            if (t == 0) v = s < 2 ? 1 : 0;
            else {
                v = a[s] + (s >= 1 ? a[s - 1] : 0);
                if (s >= 2 && ext[s] != blank && ext[s] != ext[s - 2]) v += a[s - 2];
            }
            n[s] = v * y[ext[s]];
        }
        double c = 0;
        for (int64_t s = 0; s < S; s++) c += n[s];
        for (int64_t s = 0; s < S; s++) a[s] = n[s] / c;
        logp += log(c);
    }
    return -(logp + log(a[S - 1] + (S > 1 ? a[S - 2] : 0)));
}

/* Longer sequences (9 to 30 frames, labels of 1 to 12 classes with repeats) against the scaled
 * probability-space recursion. */
static void test_warpctc_scaled_reference(void) {
    FlRng r;
    fl_rng_init(&r, 11);
    const int64_t off[] = {0, 30, 39, 59, 84}, K = 7, B = 3;
    const double labs[] = {1, 2, 2, 4, 5, 6, 0, 0, 1, 2, 1, 4, /* 12 */ 6, /* 1 */
                           5, 5, 5, 0, 1, 2, 4,                 /* 7 */
                           2, 4, 2, 4, 1, 1, 0, 6, 6, 5};       /* 10 */
    const int64_t loff[] = {0, 12, 13, 20, 30};
    FlTensor x = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){84, K}, -3, 3);
    FlTensor y = kt_make(FL_DT_INT64, 2, (int64_t[]){30, 1}, labs);
    FlTensor loss = FL_TENSOR_INIT;
    KT_OK(fl_kernel_warpctc(KE, &x, off, 4, &y, loff, 4, B, NULL, &loss));
    for (int64_t s = 0; s < 4; s++) {
        int64_t lab[16], L = loff[s + 1] - loff[s];
        for (int64_t i = 0; i < L; i++) lab[i] = (int64_t)labs[loff[s] + i];
        double want = scaled_ctc(&x, off[s], off[s + 1] - off[s], K, lab, L, B);
        if (!(fabs(at(&loss, s) - want) <= 1e-9 * (1 + fabs(want))))
            fprintf(stderr, "\nsequence %lld: loss %.12g, scaled recursion %.12g\n", (long long)s, at(&loss, s), want);
        CU_ASSERT(isfinite(want) && want > 0);
        CU_ASSERT(fabs(at(&loss, s) - want) <= 1e-9 * (1 + fabs(want)));
    }
    FlTensor all[] = {x, y, loss};
    kt_fini(3, all);
}

/* sum_s c[s] * Loss_s (divided by the length with norm). */
static double ctc_loss(const FlTensor *x, const FlTensor *y, const int64_t *loff, const double *c, bool norm) {
    FlTensor loss = FL_TENSOR_INIT;
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_kernel_warpctc(&e, x, xoff, NSEQ, y, loff, NSEQ, BLANK, NULL, &loss), FL_OK);
    double s = 0;
    for (int64_t i = 0; i < NSEQ; i++) {
        int64_t T = xoff[i + 1] - xoff[i];
        s += c[i] * at(&loss, i) / (norm && T ? (double)T : 1.0);
    }
    fl_tensor_fini(&loss);
    return s;
}

static void test_warpctc_grad(void) {
    FlRng r;
    fl_rng_init(&r, 7);
    const int64_t loff[] = {0, 2, 4, 4, 5, 5, 8};
    const double labs[] = {0, 2, 2, 2, 3, 0, 0, 2}, c[] = {0.7, -1.3, 0.4, 2.0, 0.9, 1.1};
    FlTensor x = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){T_ALL, C}, -2, 2);
    FlTensor y = kt_make(FL_DT_INT64, 2, (int64_t[]){8, 1}, labs);
    FlTensor dl = kt_make(FL_DT_FLOAT64, 2, (int64_t[]){NSEQ, 1}, c);
    FlTensor loss = FL_TENSOR_INIT, g = FL_TENSOR_INIT, dx = FL_TENSOR_INIT, q = FL_TENSOR_INIT;
    KT_OK(fl_kernel_warpctc(KE, &x, xoff, NSEQ, &y, loff, NSEQ, BLANK, &g, &loss));
    for (int norm = 0; norm < 2; norm++) {
        KT_OK(fl_kernel_warpctc_grad(KE, &g, xoff, NSEQ, &dl, norm, &dx));
        KT_SHAPE_IS(&dx, KT_SHAPE(18, 4));
        int bad = 0;
        for (int64_t i = 0; i < T_ALL * C; i++) {
            const double eps = 1e-5;
            FlErr e;
            CU_ASSERT_EQUAL_FATAL(fl_tensor_copy(&e, &q, &x), FL_OK);
            fl_tensor_set(&q, i, at(&x, i) + eps);
            double lp = ctc_loss(&q, &y, loff, c, norm);
            fl_tensor_set(&q, i, at(&x, i) - eps);
            double lm = ctc_loss(&q, &y, loff, c, norm), num = (lp - lm) / (2 * eps);
            if (fabs(num - at(&dx, i)) > 1e-7 * (1 + fabs(num))) {
                bad++;
                fprintf(stderr, "\nnorm %d: d loss / d x[%lld]: analytic %g, numeric %g\n", norm, (long long)i,
                        at(&dx, i), num);
            }
        }
        CU_ASSERT_EQUAL(bad, 0);
    }
    FlTensor all[] = {x, y, dl, loss, g, dx, q};
    kt_fini(7, all);
}

/* 400 frames of confident logits (scores up to +-60): exp would overflow a plain product, the
 * log-space recursions do not. */
static void test_warpctc_long(void) {
    FlRng r;
    fl_rng_init(&r, 9);
    const int64_t T = 400, K = 6, off[] = {0, 400}, loff[] = {0, 50};
    FlTensor x = kt_rand(&r, FL_DT_FLOAT32, 2, (int64_t[]){T, K}, -60, 60);
    FlTensor y = FL_TENSOR_INIT, loss = FL_TENSOR_INIT, g = FL_TENSOR_INIT;
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &y, FL_DT_INT64, 2, (int64_t[]){50, 1}), FL_OK);
    for (int64_t i = 0; i < 50; i++) fl_tensor_set(&y, i, (double)(1 + i % 5));
    KT_OK(fl_kernel_warpctc(KE, &x, off, 1, &y, loff, 1, 0, &g, &loss));
    CU_ASSERT(isfinite(at(&loss, 0)) && at(&loss, 0) > 0);
    for (int64_t i = 0; i < T * K; i++) CU_ASSERT(isfinite(at(&g, i)));
    FlTensor all[] = {x, y, loss, g};
    kt_fini(4, all);
}

static void test_ctc_align_erase(void) {
    /* blank 0: 1 1 0 1 2 2 | 0 0 | 3 0 3 -> 1 1 2 | (empty) | 3 3 */
    FlTensor x = KT_T(FL_DT_INT64, KT_SHAPE(11, 1), 1, 1, 0, 1, 2, 2, 0, 0, 3, 0, 3);
    const int64_t off[] = {0, 6, 8, 11};
    FlTensor o = FL_TENSOR_INIT, lod = FL_TENSOR_INIT;
    KT_OK(fl_kernel_ctc_align(KE, &x, off, 3, 0, true, &o, &lod));
    KT_SHAPE_IS(&o, KT_SHAPE(5, 1));
    KT_VALUES(&o, 0, 1, 1, 2, 3, 3);
    KT_VALUES(&lod, 0, 0, 3, 3, 5);
    KT_OK(fl_kernel_ctc_align(KE, &x, off, 3, 0, false, &o, &lod));
    KT_VALUES(&o, 0, 1, 1, 1, 2, 2, 3, 3);
    KT_VALUES(&lod, 0, 0, 5, 5, 7);
    /* every sequence empty: a [0, 1] result */
    FlTensor z = KT_T(FL_DT_INT32, KT_SHAPE(3, 1), 0, 0, 0);
    const int64_t zoff[] = {0, 1, 3};
    KT_OK(fl_kernel_ctc_align(KE, &z, zoff, 2, 0, true, &o, &lod));
    KT_SHAPE_IS(&o, KT_SHAPE(0, 1));
    CU_ASSERT_EQUAL(o.dtype, FL_DT_INT32);
    KT_VALUES(&lod, 0, 0, 0, 0);
    const int64_t tokens[] = {2, 0};
    KT_OK(fl_kernel_sequence_erase(KE, &x, off, 3, tokens, 2, &o, &lod));
    KT_VALUES(&o, 0, 1, 1, 1, 3, 3);
    KT_VALUES(&lod, 0, 0, 3, 3, 5);
    FlTensor all[] = {x, o, lod, z};
    kt_fini(4, all);
}

static void test_edit_distance(void) {
    /* kitten -> sitting (3), "" -> abc (3), abc -> "" (3), same (0) */
    FlTensor h = KT_T(FL_DT_INT64, KT_SHAPE(12, 1), 11, 9, 20, 20, 5, 14, 1, 2, 3, 7, 8, 9);
    FlTensor rf = KT_T(FL_DT_INT32, KT_SHAPE(13, 1), 19, 9, 20, 20, 9, 14, 7, 1, 2, 3, 7, 8, 9);
    const int64_t hoff[] = {0, 6, 6, 9, 12}, roff[] = {0, 7, 10, 10, 13};
    FlTensor o = FL_TENSOR_INIT, n = FL_TENSOR_INIT;
    KT_OK(fl_kernel_edit_distance(KE, &h, hoff, 4, &rf, roff, 4, false, &o, &n));
    KT_SHAPE_IS(&o, KT_SHAPE(4, 1));
    CU_ASSERT_EQUAL(o.dtype, FL_DT_FLOAT32);
    KT_VALUES(&o, 0, 3, 3, 3, 0);
    KT_VALUES(&n, 0, 4);
    KT_ERR(fl_kernel_edit_distance(KE, &h, hoff, 4, &rf, roff, 4, true, &o, &n),
           "edit_distance: reference 2 is empty, which normalized=True cannot divide by");
    const int64_t roff2[] = {0, 7, 10, 11, 13};
    KT_OK(fl_kernel_edit_distance(KE, &h, hoff, 4, &rf, roff2, 4, true, &o, &n));
    /* 3/7; 3/3; abc -> 7 (3 edits)/1; 8 9 vs 7 8 9 (1)/2 */
    KT_VALUES(&o, 1e-6, 3.0 / 7, 1, 3, 0.5);
    FlTensor all[] = {h, rf, o, n};
    kt_fini(4, all);
}

static void test_ctc_bad_inputs(void) {
    FlTensor x = KT_T(FL_DT_FLOAT32, KT_SHAPE(2, 3), 0, 0, 0, 0, 0, 0);
    FlTensor y = KT_T(FL_DT_INT64, KT_SHAPE(2, 1), 1, 0), loss = FL_TENSOR_INIT;
    const int64_t off[] = {0, 2}, two[] = {0, 1, 2};
    KT_ERR(fl_kernel_warpctc(KE, &x, off, 1, &y, off, 1, 0, NULL, &loss),
           "warpctc: Label row 1 is 0: labels are classes in [0, 3) other than the blank 0");
    KT_ERR(fl_kernel_warpctc(KE, &x, off, 1, &y, off, 1, 3, NULL, &loss),
           "warpctc: blank 3 is outside the 3 classes [0, 3) of Logits [2, 3]");
    KT_ERR(fl_kernel_warpctc(KE, &x, off, 1, &y, two, 2, 2, NULL, &loss),
           "warpctc: Logits holds 1 sequences but Label 2: each sequence needs its label");
    FlTensor o = FL_TENSOR_INIT, n = FL_TENSOR_INIT;
    KT_ERR(fl_kernel_edit_distance(KE, &y, off, 1, &y, two, 2, false, &o, &n),
           "edit_distance: Hyps holds 1 sequences but Refs 2: each hypothesis needs its reference");
    KT_ERR(fl_kernel_ctc_align(KE, &x, off, 1, 0, true, &o, &n),
           "ctc_align: Input [2, 3] has dtype float32; int32 or int64 ids expected");
    FlTensor all[] = {x, y, loss, o, n};
    kt_fini(5, all);
}

int main(void) {
    static const KtCase tc[] = {
        KT_TEST(test_warpctc_brute_force), KT_TEST(test_warpctc_scaled_reference), KT_TEST(test_warpctc_grad), KT_TEST(test_warpctc_long),
        KT_TEST(test_ctc_align_erase),     KT_TEST(test_edit_distance), KT_TEST(test_ctc_bad_inputs),
    };
    return kt_run("ctc kernels", tc, (int)FL_ARRAY_LEN(tc));
}
