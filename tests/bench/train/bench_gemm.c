/* bench_gemm.c: the GEMM floor of one training step of the benchmark MLP: the step's sgemm calls
 * alone, with the shapes and transposes fluidc's mul / mul_grad kernels use
 * (runtime/kernels/linalg.c; row-major cblas_sgemm), on buffers allocated once:
 *   forward   Out = X W            NN  [B, K] x [K, N]           x 3 layers
 *   backward  dW  = X^T dOut       TN  [B, K]^T x [B, N] -> [K, N]   x 3 layers
 *             dX  = dOut W^T       NT  [B, N] x [K, N]^T -> [B, K]   layers 2 and 3 (the first
 *                                  layer's input is data: no gradient)
 * with (K, N) = (784, 512), (512, 512), (512, 10), by OpenBLAS's cblas_sgemm (the kernel
 * OPENBLAS_CORETYPE names, else OpenBLAS's choice for this CPU) or, with -l onednn, by oneDNN's
 * dnnl_sgemm (its OpenMP team of 1, the ISA oneDNN detects), or with -l fluidc each product on
 * the library fluidc's rule picks for its shape (fl_gemm_library) — the libraries fluidc's GEMM
 * may run (docs/kernels.md, "Which GEMM"). ROUNDS rounds of STEPS steps; the best round is
 * reported as one line of `key=value` figures (bench_train.sh parses it):
 *   ms_per_step, cpu_ms_per_step (the best round by the process's CPU time, which other jobs on a
 *   shared machine distort least), gflops, mflop_per_step, library (openblas or onednn), kernel
 *   (OpenBLAS's core name or oneDNN's ISA), openblas_core, and each call's time on stderr (-v).
 * Never fails on time.
 *
 *   usage: bench_gemm [-v] [-l openblas|onednn|fluidc] [BATCH=128] [STEPS=40] [ROUNDS=5]
 */
#include <cblas.h>
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/kernels/kernels.h"

enum { LAYERS = 3, CALLS = 8 };

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }

typedef struct Call {
    const char *what;
    bool ta, tb;
    int M, N, K, lda, ldb, ldc;
    const float *A, *B;
    float *C;
} Call;

static float *buf(size_t n) {
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "bench_gemm: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) p[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    return p;
}

static bool onednn, fluidc;

static void run(const Call *c) {
    /* -l fluidc: each product on the library fluidc's rule picks for its shape (gemm.c) */
    bool dn = fluidc ? fl_gemm_library(fl_gemm_info(), c->M, c->N, c->K) == FL_GEMM_ONEDNN : onednn;
    if (dn) {
        dnnl_sgemm(c->ta ? 'T' : 'N', c->tb ? 'T' : 'N', c->M, c->N, c->K, 1.0f, c->A, c->lda, c->B,
                   c->ldb, 0.0f, c->C, c->ldc);
        return;
    }
    cblas_sgemm(CblasRowMajor, c->ta ? CblasTrans : CblasNoTrans, c->tb ? CblasTrans : CblasNoTrans,
                c->M, c->N, c->K, 1.0f, c->A, c->lda, c->B, c->ldb, 0.0f, c->C, c->ldc);
}

int main(int argc, char **argv) {
    int a = 1;
    bool verbose = argc > a && strcmp(argv[a], "-v") == 0;
    if (verbose) a++;
    if (argc > a + 1 && strcmp(argv[a], "-l") == 0) {
        if (strcmp(argv[a + 1], "onednn") == 0) onednn = true;
        else if (strcmp(argv[a + 1], "fluidc") == 0) fluidc = true;
        else if (strcmp(argv[a + 1], "openblas") != 0) {
            fprintf(stderr, "bench_gemm: -l takes openblas, onednn or fluidc, found '%s'\n", argv[a + 1]);
            return 2;
        }
        a += 2;
    }
    if (onednn || fluidc) { /* one thread per call, as fluidc runs it (found in the process: no OpenMP flags) */
        void (*set)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
        if (set) set(1);
    }
    int B = argc > a ? atoi(argv[a]) : 128;
    int steps = argc > a + 1 ? atoi(argv[a + 1]) : 40;
    int rounds = argc > a + 2 ? atoi(argv[a + 2]) : 5;
    if (B < 1 || steps < 1 || rounds < 1) {
        fprintf(stderr, "bench_gemm: BATCH, STEPS and ROUNDS must be positive\n");
        return 2;
    }
    static const int dims[LAYERS][2] = {{784, 512}, {512, 512}, {512, 10}};
    float *X[LAYERS], *W[LAYERS], *Out[LAYERS], *dOut[LAYERS], *dW[LAYERS], *dX[LAYERS];
    Call calls[CALLS];
    int n = 0;
    for (int l = 0; l < LAYERS; l++) {
        int K = dims[l][0], N = dims[l][1];
        X[l] = buf((size_t)B * K);
        W[l] = buf((size_t)K * N);
        Out[l] = buf((size_t)B * N);
        dOut[l] = buf((size_t)B * N);
        dW[l] = buf((size_t)K * N);
        dX[l] = buf((size_t)B * K);
        calls[n++] = (Call){"fwd  X W", false, false, B, N, K, K, N, N, X[l], W[l], Out[l]};
    }
    for (int l = LAYERS - 1; l >= 0; l--) {
        int K = dims[l][0], N = dims[l][1];
        if (l > 0)
            calls[n++] = (Call){"bwd  dOut W^T", false, true, B, K, N, N, N, K, dOut[l], W[l], dX[l]};
        calls[n++] = (Call){"bwd  X^T dOut", true, false, K, N, B, K, N, N, X[l], dOut[l], dW[l]};
    }
    double flop = 0, per[CALLS] = {0};
    for (int i = 0; i < n; i++) flop += 2.0 * calls[i].M * calls[i].N * calls[i].K;
    for (int i = 0; i < n; i++) per[i] = 1e30;
    for (int w = 0; w < 3; w++)
        for (int i = 0; i < n; i++) run(&calls[i]);
    double best = 1e30, cbest = 1e30;
    for (int r = 0; r < rounds; r++) {
        double t0 = now(), u0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        for (int s = 0; s < steps; s++)
            for (int i = 0; i < n; i++) run(&calls[i]);
        double t = now() - t0, c = clock_s(CLOCK_PROCESS_CPUTIME_ID) - u0;
        if (t < best) best = t;
        if (c < cbest) cbest = c;
    }
    if (verbose) { /* each call alone, best of its runs */
        for (int i = 0; i < n; i++) {
            for (int r = 0; r < rounds * steps; r++) {
                double t0 = now();
                run(&calls[i]);
                double t = now() - t0;
                if (t < per[i]) per[i] = t;
            }
            const Call *c = &calls[i];
            fprintf(stderr, "  %-14s %c%c M=%-4d N=%-4d K=%-4d %7.3f ms %6.2f GFLOP/s\n", c->what,
                    c->ta ? 'T' : 'N', c->tb ? 'T' : 'N', c->M, c->N, c->K, per[i] * 1e3,
                    2.0 * c->M * c->N * c->K / per[i] * 1e-9);
        }
    }
    static const struct {
        dnnl_cpu_isa_t id;
        const char *name;
    } isas[] = {{dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"}, {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
                {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"}, {dnnl_cpu_isa_avx512_core, "avx512_core"},
                {dnnl_cpu_isa_avx2_vnni, "avx2_vnni"}, {dnnl_cpu_isa_avx2, "avx2"}, {dnnl_cpu_isa_avx, "avx"},
                {dnnl_cpu_isa_sse41, "sse41"}};
    const char *kernel = openblas_get_corename();
    if (fluidc) kernel = fl_gemm_info()->kernel;
    else if (onednn) {
        kernel = "other";
        for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++)
            if (isas[i].id == dnnl_get_effective_cpu_isa()) kernel = isas[i].name;
    }
    printf("ms_per_step=%.4f cpu_ms_per_step=%.4f gflops=%.2f mflop_per_step=%.1f calls=%d batch=%d library=%s "
           "kernel=%s openblas_core=%s\n", best / steps * 1e3, cbest / steps * 1e3, flop * steps / best * 1e-9,
           flop * 1e-6, n, B,
           fluidc ? fl_gemm_path_name(fl_gemm_info()->path) : onednn ? "onednn" : "openblas", kernel,
           openblas_get_corename());
    for (int l = 0; l < LAYERS; l++) {
        free(X[l]), free(W[l]), free(Out[l]), free(dOut[l]), free(dW[l]), free(dX[l]);
    }
    return 0;
}
