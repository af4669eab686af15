/* gemm.c: the one matrix-product routine the GEMM-shaped kernels share. The reference path is
 * a plain triple loop accumulating in double; the fast path (float32) is OpenBLAS cblas_sgemm.
 * Both are reentrant. OpenBLAS runs single-threaded (flrun sets it so): with a kernel pool of N
 * threads bound (par.h), a large product is cut into N blocks of C's rows (or columns, when C is
 * wide and short), one single-threaded cblas_sgemm per block, run on the pool's threads. OpenBLAS
 * picks its kernels and K blocking by a call's shape, so a block's elements may round
 * differently from the uncut product's: the cut depends on the shapes and N (never on timing),
 * so a given N gives the same bits run to run, and N = 1 the uncut product. Why not OpenBLAS's
 * own threads: measured slower on 2 cores (docs/kernels.md, "Threads"), a second pool beside
 * ours, and its split is its own business. */
#include "runtime/kernels/kernels_impl.h"

#include <cblas.h>

#include "runtime/kernels/par.h"

/* Multiply-adds per block: products up to twice this run whole (docs/kernels.md, "Threads"); a
 * block is whole groups of 16 rows (columns). */
enum { GEMM_GRAIN = 1 << 21 };

typedef struct GemmJob {
    bool ta, tb, rows; /* rows: blocks of C's rows, else of its columns */
    int64_t M, N, K, lda, ldb, ldc;
    float alpha, beta;
    const float *A, *B;
    float *C;
    int nchunks;
} GemmJob;

static void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                  int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (int)M, (int)N, (int)K, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}

/* Block c's rows (columns) [lo, hi) of span: whole groups of 16 (the micro-kernels' widths). */
static void block_range(int64_t span, int c, int nchunks, int64_t *lo, int64_t *hi) {
    fl_par_range((span + 15) / 16, c, nchunks, lo, hi);
    *lo = *lo * 16 < span ? *lo * 16 : span;
    *hi = *hi * 16 < span ? *hi * 16 : span;
}

static void gemm_chunk(void *arg, int c) {
    const GemmJob *g = arg;
    int64_t lo, hi;
    if (g->rows) { /* rows [lo, hi) of C: rows of op(A) */
        block_range(g->M, c, g->nchunks, &lo, &hi);
        if (hi > lo)
            sgemm(g->ta, g->tb, hi - lo, g->N, g->K, g->alpha, g->ta ? g->A + lo : g->A + lo * g->lda,
                  g->lda, g->B, g->ldb, g->beta, g->C + lo * g->ldc, g->ldc);
    } else { /* columns [lo, hi) of C: columns of op(B) */
        block_range(g->N, c, g->nchunks, &lo, &hi);
        if (hi > lo)
            sgemm(g->ta, g->tb, g->M, hi - lo, g->K, g->alpha, g->A, g->lda,
                  g->tb ? g->B + lo * g->ldb : g->B + lo, g->ldb, g->beta, g->C + lo, g->ldc);
    }
}

#define GEMM_REF(T)                                                                        \
    for (int64_t i = 0; i < M; i++) {                                                      \
        for (int64_t j = 0; j < N; j++) {                                                  \
            double acc = 0;                                                                \
            for (int64_t k = 0; k < K; k++) {                                              \
                double a = ta ? A[k * lda + i] : A[i * lda + k];                           \
                double b = tb ? B[j * ldb + k] : B[k * ldb + j];                           \
                acc += a * b;                                                              \
            }                                                                              \
            T *c = &C[i * ldc + j];                                                        \
            *c = (T)(beta == 0 ? alpha * acc : alpha * acc + (double)beta * *c);           \
        }                                                                                  \
    }

void kgemm_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
               int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc,
               bool fast) {
    if (M == 0 || N == 0) return;
    if (fast && M <= INT32_MAX && N <= INT32_MAX && K <= INT32_MAX && lda <= INT32_MAX &&
        ldb <= INT32_MAX && ldc <= INT32_MAX) {
        if (K == 0) { /* BLAS leaves C alone when K == 0; we want beta * C */
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) C[i * ldc + j] = beta == 0 ? 0 : beta * C[i * ldc + j];
            return;
        }
        /* up to N blocks of at least GEMM_GRAIN multiply-adds */
        bool rows = M >= N;
        int64_t span = rows ? M : N, per = rows ? N * K : M * K; /* work per row (column) */
        int64_t grain = GEMM_GRAIN / (per > 0 ? per : 1);
        int nchunks = fl_par_chunks((span + 15) / 16, (grain + 15) / 16);
        if (nchunks == 1) {
            sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
            return;
        }
        GemmJob g = {ta, tb, rows, M, N, K, lda, ldb, ldc, alpha, beta, A, B, C, nchunks};
        fl_par_run(nchunks, gemm_chunk, &g);
        return;
    }
    GEMM_REF(float)
}

void kgemm_f64(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double *A,
               int64_t lda, const double *B, int64_t ldb, double beta, double *C, int64_t ldc,
               bool fast) {
    (void)fast; /* float64 exists for checks: always the reference loops */
    if (M == 0 || N == 0) return;
    GEMM_REF(double)
}
