/* test_crf.c: the kernels of crf.c. The CRF's negative log-likelihood against a brute force
 * over every tag path of short sequences and against a plain log-space forward pass on long
 * ones with large scores; its gradient by central differences (float64) on a batch mixing
 * sequences of 0, 1, 2 and 17 rows; Viterbi decoding against the brute-force argmax; chunk_eval
 * on hand-counted examples of each scheme; and the errors on bad inputs. */
#include "runtime/kernels/kernels_crf.h"
#include "tests/runtime/kernels/kt.h"

static double at(const FlTensor *t, int64_t i) { return fl_tensor_get(t, i); }

/* s(y) of the path y (L tags) over rows x[r0..r0+L) (kernels_crf.h's definition). */
static double path_score(const FlTensor *x, const FlTensor *w, int64_t r0, int64_t L, int64_t K, const int64_t *y) {
    double s = at(w, y[0]) + at(w, K + y[L - 1]);
    for (int64_t k = 0; k < L; k++) s += at(x, (r0 + k) * K + y[k]);
    for (int64_t k = 1; k < L; k++) s += at(w, (2 + y[k - 1]) * K + y[k]);
    return s;
}

/* Walks every path of L tags: y is the next path in counting order; false after the last. */
static bool next_path(int64_t *y, int64_t L, int64_t K) {
    for (int64_t k = L - 1; k >= 0; k--) {
        if (++y[k] < K) return true;
        y[k] = 0;
    }
    return false;
}

/* log Z by summing exp(s) over all K^L paths, and the best path (first in counting order). */
static double brute(const FlTensor *x, const FlTensor *w, int64_t r0, int64_t L, int64_t K, int64_t *best) {
    int64_t y[8] = {0};
    double m = -INFINITY, z = 0;
    do {
        double s = path_score(x, w, r0, L, K, y);
        if (s > m) m = s, memcpy(best, y, sizeof y);
    } while (next_path(y, L, K));
    memset(y, 0, sizeof y);
    do z += exp(path_score(x, w, r0, L, K, y) - m);
    while (next_path(y, L, K));
    return m + log(z);
}

static FlTensor make_labels(FlRng *r, int64_t T, int64_t K) {
    FlTensor t = FL_TENSOR_INIT;
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &t, FL_DT_INT64, 2, (int64_t[]){T, 1}), FL_OK);
    for (int64_t i = 0; i < T; i++) fl_tensor_set(&t, i, (double)(fl_rng_next(r) % (uint64_t)K));
    return t;
}

static void test_crf_brute_force(void) {
    FlRng r;
    fl_rng_init(&r, 11);
    const int64_t K = 5, off[] = {0, 1, 3, 3, 6, 10}, nseq = 5, T = 10; /* lengths 1, 2, 0, 3, 4 */
    FlDType dts[2] = {FL_DT_FLOAT32, FL_DT_FLOAT64};
    for (int d = 0; d < 2; d++) {
        FlTensor x = kt_rand(&r, dts[d], 2, (int64_t[]){T, K}, -2, 2);
        FlTensor w = kt_rand(&r, dts[d], 2, (int64_t[]){K + 2, K}, -1, 1);
        FlTensor y = make_labels(&r, T, K);
        FlTensor a = FL_TENSOR_INIT, ex = FL_TENSOR_INIT, we = FL_TENSOR_INIT, ll = FL_TENSOR_INIT;
        KT_OK(fl_kernel_linear_chain_crf(KE, &x, &w, &y, off, nseq, &a, &ex, &we, &ll));
        KT_SHAPE_IS(&ll, KT_SHAPE(5, 1));
        KT_SHAPE_IS(&a, KT_SHAPE(10, 5));
        KT_SHAPE_IS(&we, KT_SHAPE(7, 5));
        CU_ASSERT_EQUAL(ll.dtype, dts[d]);
        double tol = d ? 1e-10 : 2e-5;
        for (int64_t s = 0; s < nseq; s++) {
            int64_t L = off[s + 1] - off[s], best[8], lab[8];
            if (L == 0) {
                CU_ASSERT_EQUAL(at(&ll, s), 0.0); /* an empty sequence costs nothing */
                continue;
            }
            for (int64_t k = 0; k < L; k++) lab[k] = (int64_t)at(&y, off[s] + k);
            double want = brute(&x, &w, off[s], L, K, best) - path_score(&x, &w, off[s], L, K, lab);
            CU_ASSERT(fabs(at(&ll, s) - want) <= tol * (1 + fabs(want)));
            CU_ASSERT(at(&ll, s) > 0); /* a negative log-probability */
        }
        /* Alpha's rows sum to 1; EmissionExps = exp(x - row max); TransitionExps = exp(w) */
        for (int64_t t = 0; t < T; t++) {
            double sum = 0, m = -INFINITY;
            for (int64_t j = 0; j < K; j++) sum += at(&a, t * K + j), m = fmax(m, at(&x, t * K + j));
            CU_ASSERT(fabs(sum - 1) <= 1e-6);
            for (int64_t j = 0; j < K; j++) CU_ASSERT(fabs(at(&ex, t * K + j) - exp(at(&x, t * K + j) - m)) <= 1e-6);
        }
        for (int64_t i = 0; i < (K + 2) * K; i++) CU_ASSERT(fabs(at(&we, i) - exp(at(&w, i))) <= 1e-5 * exp(at(&w, i)));
        FlTensor all[] = {x, w, y, a, ex, we, ll};
        kt_fini(7, all);
    }
}

/* log Z - s(label) by a log-sum-exp forward pass (the textbook form, no scaling). */
static double logspace_nll(const FlTensor *x, const FlTensor *w, const FlTensor *y, int64_t r0, int64_t L,
                           int64_t K) {
    double *a = malloc((size_t)K * sizeof *a), *b = malloc((size_t)K * sizeof *b);
    for (int64_t j = 0; j < K; j++) a[j] = at(w, j) + at(x, r0 * K + j);
    for (int64_t k = 1; k < L; k++) {
        for (int64_t j = 0; j < K; j++) {
            double m = -INFINITY, s = 0;
            for (int64_t i = 0; i < K; i++) m = fmax(m, a[i] + at(w, (2 + i) * K + j));
            for (int64_t i = 0; i < K; i++) s += exp(a[i] + at(w, (2 + i) * K + j) - m);
            b[j] = m + log(s) + at(x, (r0 + k) * K + j);
        }
        memcpy(a, b, (size_t)K * sizeof *a);
    }
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < K; j++) m = fmax(m, a[j] + at(w, K + j));
    for (int64_t j = 0; j < K; j++) s += exp(a[j] + at(w, K + j) - m);
    int64_t lab[1024] = {0};
    for (int64_t k = 0; k < L; k++) lab[k] = (int64_t)at(y, r0 + k);
    free(a), free(b);
    return m + log(s) - path_score(x, w, r0, L, K, lab);
}

/* Scores of several hundred and sequences of 600 rows: exp would overflow, the scaled forward
 * pass does not. */
static void test_crf_stable(void) {
    FlRng r;
    fl_rng_init(&r, 5);
    const int64_t K = 6, T = 601, off[] = {0, 600, 601};
    FlTensor x = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){T, K}, -800, 800);
    FlTensor w = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){K + 2, K}, -30, 30);
    FlTensor y = make_labels(&r, T, K), ll = FL_TENSOR_INIT, a = FL_TENSOR_INIT, ex = FL_TENSOR_INIT,
             we = FL_TENSOR_INIT, dx = FL_TENSOR_INIT, dw = FL_TENSOR_INIT;
    KT_OK(fl_kernel_linear_chain_crf(KE, &x, &w, &y, off, 2, &a, &ex, &we, &ll));
    for (int s = 0; s < 2; s++) {
        double want = logspace_nll(&x, &w, &y, off[s], off[s + 1] - off[s], K);
        CU_ASSERT(isfinite(at(&ll, s)));
        CU_ASSERT(fabs(at(&ll, s) - want) <= 1e-9 * (1 + fabs(want)));
    }
    FlTensor g = KT_T(FL_DT_FLOAT64, KT_SHAPE(2, 1), 1, 1);
    KT_OK(fl_kernel_linear_chain_crf_grad(KE, &y, off, 2, &a, &ex, &we, &g, &dx, &dw));
    /* each row of dEmission sums to 0 (marginals minus a one-hot), and is finite */
    for (int64_t t = 0; t < T; t++) {
        double sum = 0;
        for (int64_t j = 0; j < K; j++) sum += at(&dx, t * K + j);
        CU_ASSERT(fabs(sum) <= 1e-9);
    }
    FlTensor all[] = {x, w, y, ll, a, ex, we, dx, dw, g};
    kt_fini(10, all);
}

/* sum_s c[s] * NLL_s (the loss the gradient is checked on). */
static double crf_loss(const FlTensor *x, const FlTensor *w, const FlTensor *y, const int64_t *off, int64_t nseq,
                       const double *c) {
    FlTensor ll = FL_TENSOR_INIT;
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_kernel_linear_chain_crf(&e, x, w, y, off, nseq, NULL, NULL, NULL, &ll), FL_OK);
    double s = 0;
    for (int64_t i = 0; i < nseq; i++) s += c[i] * at(&ll, i);
    fl_tensor_fini(&ll);
    return s;
}

static bool close_to(double got, double want, double tol, const char *what, int64_t i) {
    if (fabs(got - want) <= tol * (1 + fabs(want))) return true;
    fprintf(stderr, "\n  %s[%lld]: analytic %.10g, numeric %.10g\n", what, (long long)i, got, want);
    return false;
}

static void test_crf_grad(void) {
    FlRng r;
    fl_rng_init(&r, 3);
    const int64_t K = 5, T = 20, off[] = {0, 1, 3, 3, 20}, nseq = 4; /* lengths 1, 2, 0, 17 */
    const double c[4] = {0.7, -1.3, 2.0, 0.4};
    FlTensor x = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){T, K}, -2, 2);
    FlTensor w = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){K + 2, K}, -1, 1);
    FlTensor y = make_labels(&r, T, K), g = KT_T(FL_DT_FLOAT64, KT_SHAPE(4, 1), 0.7, -1.3, 2.0, 0.4);
    FlTensor a = FL_TENSOR_INIT, ex = FL_TENSOR_INIT, we = FL_TENSOR_INIT, ll = FL_TENSOR_INIT,
             dx = FL_TENSOR_INIT, dw = FL_TENSOR_INIT, dx2 = FL_TENSOR_INIT;
    KT_OK(fl_kernel_linear_chain_crf(KE, &x, &w, &y, off, nseq, &a, &ex, &we, &ll));
    KT_OK(fl_kernel_linear_chain_crf_grad(KE, &y, off, nseq, &a, &ex, &we, &g, &dx, &dw));
    KT_SHAPE_IS(&dx, KT_SHAPE(20, 5));
    KT_SHAPE_IS(&dw, KT_SHAPE(7, 5));
    const double h = 1e-5;
    FlTensor *ps[2] = {&x, &w}, *gs[2] = {&dx, &dw};
    const char *names[2] = {"dEmission", "dTransition"};
    int bad = 0;
    for (int p = 0; p < 2; p++)
        for (int64_t i = 0, n = fl_tensor_numel(ps[p]); i < n; i++) {
            double v = at(ps[p], i);
            fl_tensor_set(ps[p], i, v + h);
            double up = crf_loss(&x, &w, &y, off, nseq, c);
            fl_tensor_set(ps[p], i, v - h);
            double down = crf_loss(&x, &w, &y, off, nseq, c);
            fl_tensor_set(ps[p], i, v);
            bad += !close_to(at(gs[p], i), (up - down) / (2 * h), 1e-6, names[p], i);
        }
    CU_ASSERT_EQUAL(bad, 0);
    /* only dEmission wanted: the same values */
    KT_OK(fl_kernel_linear_chain_crf_grad(KE, &y, off, nseq, &a, &ex, &we, &g, &dx2, NULL));
    CU_ASSERT(kt_rel_diff(&dx2, &dx) == 0);
    FlTensor all[] = {x, w, y, g, a, ex, we, ll, dx, dw, dx2};
    kt_fini(11, all);
}

static void test_crf_decoding(void) {
    FlRng r;
    fl_rng_init(&r, 17);
    const int64_t K = 4, off[] = {0, 1, 3, 3, 6, 11}, nseq = 5, T = 11; /* lengths 1, 2, 0, 3, 5 */
    FlDType dts[2] = {FL_DT_FLOAT32, FL_DT_FLOAT64};
    for (int d = 0; d < 2; d++) {
        FlTensor x = kt_rand(&r, dts[d], 2, (int64_t[]){T, K}, -2, 2);
        FlTensor w = kt_rand(&r, dts[d], 2, (int64_t[]){K + 2, K}, -1, 1);
        FlTensor p = FL_TENSOR_INIT, hit = FL_TENSOR_INIT;
        KT_OK(fl_kernel_crf_decoding(KE, &x, &w, NULL, off, nseq, &p));
        KT_SHAPE_IS(&p, KT_SHAPE(11, 1));
        CU_ASSERT_EQUAL(p.dtype, FL_DT_INT64);
        for (int64_t s = 0; s < nseq; s++) {
            int64_t L = off[s + 1] - off[s], best[8];
            if (L == 0) continue;
            brute(&x, &w, off[s], L, K, best);
            for (int64_t k = 0; k < L; k++) CU_ASSERT_EQUAL((int64_t)at(&p, off[s] + k), best[k]);
        }
        /* with a label: 1 where the path has the label's tag */
        FlTensor y = make_labels(&r, T, K);
        fl_tensor_set(&y, 4, at(&p, 4)); /* at least one hit */
        KT_OK(fl_kernel_crf_decoding(KE, &x, &w, &y, off, nseq, &hit));
        for (int64_t t = 0; t < T; t++) CU_ASSERT_EQUAL(at(&hit, t), at(&p, t) == at(&y, t) ? 1.0 : 0.0);
        CU_ASSERT_EQUAL(at(&hit, 4), 1.0);
        FlTensor all[] = {x, w, p, hit, y};
        kt_fini(5, all);
    }
    /* the transition matters: a strong 0 -> 1 weight turns emissions that favour 0 0 into 0 1 */
    FlTensor x = KT_T(FL_DT_FLOAT64, KT_SHAPE(2, 2), 1, 0, 1, 0.5);
    FlTensor w = KT_T(FL_DT_FLOAT64, KT_SHAPE(4, 2), 0, 0, 0, 0, 0, 3, 0, 0), p = FL_TENSOR_INIT;
    KT_OK(fl_kernel_crf_decoding(KE, &x, &w, NULL, (int64_t[]){0, 2}, 1, &p));
    KT_VALUES(&p, 0, 0, 1);
    FlTensor all[] = {x, w, p};
    kt_fini(3, all);
}

/* ---- chunk_eval ---- */

typedef struct ChunkCase {
    FlChunkScheme scheme;
    int types;
    int64_t T;
    double infer[12], label[12];
    int64_t off[4];
    int64_t nseq;
    const int64_t *excluded;
    size_t nexcluded;
    int64_t counts[3]; /* inferred, labelled, correct */
} ChunkCase;

static void check_chunks(const ChunkCase *k) {
    FlTensor inf = kt_make(FL_DT_INT64, 2, (int64_t[]){k->T, 1}, k->infer);
    FlTensor lab = kt_make(FL_DT_INT64, 2, (int64_t[]){k->T, 1}, k->label);
    FlTensor o[6] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    KT_OK(fl_kernel_chunk_eval(KE, &inf, &lab, k->off, k->nseq, k->types, k->scheme, k->excluded, k->nexcluded,
                               &o[0], &o[1], &o[2], &o[3], &o[4], &o[5]));
    double ni = (double)k->counts[0], nl = (double)k->counts[1], nc = (double)k->counts[2];
    double p = ni ? nc / ni : 0, rc = nl ? nc / nl : 0, f = nc ? 2 * p * rc / (p + rc) : 0;
    KT_VALUES(&o[0], 1e-6, p);
    KT_VALUES(&o[1], 1e-6, rc);
    KT_VALUES(&o[2], 1e-6, f);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(o[3 + i].dtype, FL_DT_INT64);
        CU_ASSERT_EQUAL((int64_t)at(&o[3 + i], 0), k->counts[i]);
    }
    CU_ASSERT_EQUAL(o[0].dtype, FL_DT_FLOAT32);
    kt_fini(6, o);
    fl_tensor_fini(&inf);
    fl_tensor_fini(&lab);
}

static void test_chunk_eval(void) {
    static const int64_t ex1[] = {1};
    /* The chunks, counted by hand (rows within a sequence, inclusive, and type): */
    static const ChunkCase cases[] = {
        /* IOB, 2 types (B0 I0 B1 I1 = 0 1 2 3, O = 4). Label: (0-1, 0) (3-5, 1) (7, 0) | (0, 0);
         * inference: (0-1, 0) (3-4, 1) (7, 0; an I after O begins a chunk) | (0, 0): 4, 4, 3 correct.
         * Read as one sequence the last two rows would be one chunk of the label's and two of the
         * inference's. */
        {FL_CHUNK_IOB, 2, 9, {0, 1, 4, 2, 3, 4, 4, 1, 0}, {0, 1, 4, 2, 3, 3, 4, 0, 1}, {0, 8, 9}, 2, NULL, 0, {4, 4, 3}},
        /* the same without the chunks of type 1 */
        {FL_CHUNK_IOB, 2, 9, {0, 1, 4, 2, 3, 4, 4, 1, 0}, {0, 1, 4, 2, 3, 3, 4, 0, 1}, {0, 8, 9}, 2, ex1, 1, {3, 3, 3}},
        /* IOE, 2 types (I0 E0 I1 E1 = 0 1 2 3, O = 4). Label: (0-1, 0) (3-5, 1) (6, 1: after an E);
         * inference: (0-1, 0) (3-4, 1) (5-6, 1): 3, 3, 1 correct. */
        {FL_CHUNK_IOE, 2, 8, {0, 1, 4, 2, 3, 2, 3, 4}, {0, 1, 4, 2, 2, 3, 3, 4}, {0, 8}, 1, NULL, 0, {3, 3, 1}},
        /* IOBES, 1 type (B I E S = 0 1 2 3, O = 4). Label: (0-2) (4) (5) (6-7); inference: (0-2) (4)
         * (6-7, unfinished at the end): 3, 4, 3 correct. */
        {FL_CHUNK_IOBES, 1, 8, {0, 1, 2, 4, 3, 4, 0, 1}, {0, 1, 2, 4, 3, 3, 0, 2}, {0, 8}, 1, NULL, 0, {3, 4, 3}},
        /* plain, 3 types (O = 3): a run of one type is a chunk. Label: (0-1, 0) (2, 1) (4-5, 2);
         * inference: (0, 0) (1-2, 1) (4, 2): 3, 3, none correct. An empty sequence between. */
        {FL_CHUNK_PLAIN, 3, 6, {0, 1, 1, 3, 2, 3}, {0, 0, 1, 3, 2, 2}, {0, 6, 6}, 2, NULL, 0, {3, 3, 0}},
        /* IOB: every tag outside, no chunks at all: zeros everywhere */
        {FL_CHUNK_IOB, 2, 3, {4, 4, 4}, {4, 4, 4}, {0, 3}, 1, NULL, 0, {0, 0, 0}},
    };
    for (size_t i = 0; i < FL_ARRAY_LEN(cases); i++) check_chunks(&cases[i]);
    CU_ASSERT_EQUAL(fl_chunk_scheme_find("IOBES"), FL_CHUNK_IOBES);
    CU_ASSERT_EQUAL(fl_chunk_scheme_find("plain"), FL_CHUNK_PLAIN);
    CU_ASSERT_EQUAL(fl_chunk_scheme_find("BIO"), FL_CHUNK_COUNT);
}

static void test_crf_bad_inputs(void) {
    FlTensor x = KT_T(FL_DT_FLOAT32, KT_SHAPE(2, 2), 1, 0, 1, 0.5);
    FlTensor w = KT_T(FL_DT_FLOAT32, KT_SHAPE(4, 2), 0, 0, 0, 0, 0, 3, 0, 0);
    FlTensor w3 = KT_T(FL_DT_FLOAT32, KT_SHAPE(3, 2), 0, 0, 0, 0, 0, 0);
    FlTensor y = KT_T(FL_DT_INT64, KT_SHAPE(2, 1), 0, 2), ll = FL_TENSOR_INIT, p = FL_TENSOR_INIT;
    const int64_t off[] = {0, 2};
    KT_ERR(fl_kernel_linear_chain_crf(KE, &x, &w, &y, off, 1, NULL, NULL, NULL, &ll),
           "linear_chain_crf: Label row 1 is 2, outside the 2 tags [0, 2)");
    KT_ERR(fl_kernel_crf_decoding(KE, &x, &w3, NULL, off, 1, &p),
           "crf_decoding: Transition [3, 2] must be [K + 2, K] = [4, 2] for Emission [2, 2]");
    FlTensor x1 = KT_T(FL_DT_FLOAT32, KT_SHAPE(1, 2), 0, 0);
    KT_ERR(fl_kernel_crf_decoding(KE, &x1, &w, NULL, off, 1, &p),
           "crf_decoding: the offsets cut 2 rows but Emission [1, 2] has 1");
    /* IOB with 1 type: labels 0..2, where 2 is outside; 3 is an error */
    FlTensor a = KT_T(FL_DT_INT64, KT_SHAPE(2, 1), 0, 3), b = KT_T(FL_DT_INT64, KT_SHAPE(2, 1), 0, 2);
    FlTensor o = FL_TENSOR_INIT;
    KT_ERR(fl_kernel_chunk_eval(KE, &a, &b, off, 1, 1, FL_CHUNK_IOB, NULL, 0, &o, NULL, NULL, NULL, NULL, NULL),
           "chunk_eval: Inference row 1 is 3, outside [0, 2] (1 chunk types * 2 tag kinds of IOB)");
    FlTensor all[] = {x, w, w3, y, ll, p, x1, a, b, o};
    kt_fini(10, all);
}

int main(void) {
    static const KtCase tc[] = {
        KT_TEST(test_crf_brute_force), KT_TEST(test_crf_stable),  KT_TEST(test_crf_grad),
        KT_TEST(test_crf_decoding),    KT_TEST(test_chunk_eval), KT_TEST(test_crf_bad_inputs),
    };
    return kt_run("crf kernels", tc, (int)FL_ARRAY_LEN(tc));
}
