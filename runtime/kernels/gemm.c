/* gemm.c: the one matrix-product routine the GEMM-shaped kernels share. The reference path is
 * a plain triple loop accumulating in double; the fast path (float32) is OpenBLAS cblas_sgemm.
 * Both are reentrant (OpenBLAS may use its own thread pool inside a call). */
#include "runtime/kernels/kernels_impl.h"

#include <cblas.h>

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
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    (int)M, (int)N, (int)K, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
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
