/* gemm.c: the one matrix-product routine the GEMM-shaped kernels share, and which library runs
 * it. The reference path is a plain triple loop accumulating in double; the fast path (float32)
 * is OpenBLAS's cblas_sgemm or oneDNN's dnnl_sgemm. The rule is chosen once for the whole process
 * (fl_gemm_info; the user's FL_GEMM, OPENBLAS_CORETYPE and FL_DNNL decide first): oneDNN for every
 * product when OpenBLAS 0.3.21 does not know the CPU and falls back to SSE, else by shape (oneDNN
 * for the large products, OpenBLAS for the small ones), applied per product to its whole shape
 * (fl_gemm_library). Both libraries run single-threaded (flrun sets
 * OpenBLAS so; dnnl.c gives each sgemm an OpenMP team of 1): with a kernel pool of N threads
 * bound (par.h), a large product is cut into N blocks of C's rows (or columns, when C is wide
 * and short), one single-threaded sgemm per block, run on the pool's threads. Either library
 * picks its kernels and K blocking by a call's shape, so a block's elements may round
 * differently from the uncut product's: the cut depends on the shapes and N (never on timing),
 * so a given N gives the same bits run to run, and N = 1 the uncut product. Why not the
 * libraries' own threads: measured slower on 2 cores (docs/kernels.md, "Threads"), a second pool
 * beside ours, and their split is their own business. */
#include "runtime/kernels/kernels_impl.h"

#include <cblas.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "runtime/kernels/par.h"

/* Multiply-adds per block: products up to twice this run whole (docs/kernels.md, "Threads"); a
 * block is whole groups of 16 rows (columns). */
enum { GEMM_GRAIN = 1 << 21 };

typedef struct GemmJob {
    FlGemmPath lib;
    bool ta, tb, rows; /* rows: blocks of C's rows, else of its columns */
    int64_t M, N, K, lda, ldb, ldc;
    float alpha, beta;
    const float *A, *B;
    float *C;
    int nchunks;
} GemmJob;

/* ---- which library ---- */

const char *fl_isa_name(FlIsa isa) {
    switch (isa) {
    case FL_ISA_NONE: return "none";
    case FL_ISA_SSE: return "sse";
    case FL_ISA_AVX: return "avx";
    case FL_ISA_AVX2: return "avx2";
    case FL_ISA_AVX512: return "avx512";
    case FL_ISA_COUNT: break;
    }
    return "?";
}

const char *fl_gemm_path_name(FlGemmPath path) {
    switch (path) {
    case FL_GEMM_OPENBLAS: return "openblas";
    case FL_GEMM_ONEDNN: return "onednn";
    case FL_GEMM_BY_SHAPE: return "onednn+openblas";
    case FL_GEMM_PATH_COUNT: break;
    }
    return "?";
}

/* OpenBLAS 0.3.21's core names (driver/others/dynamic.c's table) by their widest vectors; any
 * other name (the older SSE cores: Prescott, Core2, Nehalem, Atom, Opteron, Barcelona, ...) is
 * SSE. */
FlIsa fl_gemm_openblas_isa(const char *core) {
    static const struct {
        const char *name;
        FlIsa isa;
    } cores[] = {
        {"SapphireRapids", FL_ISA_AVX512}, {"Cooperlake", FL_ISA_AVX512}, {"SkylakeX", FL_ISA_AVX512},
        {"Zen", FL_ISA_AVX2}, {"Haswell", FL_ISA_AVX2}, {"Excavator", FL_ISA_AVX2},
        {"Steamroller", FL_ISA_AVX}, {"Piledriver", FL_ISA_AVX}, {"Bulldozer", FL_ISA_AVX},
        {"Sandybridge", FL_ISA_AVX},
    };
    if (!core || !*core) return FL_ISA_NONE;
    for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++)
        if (strcasecmp(core, cores[i].name) == 0) return cores[i].isa;
    return FL_ISA_SSE;
}

void fl_gemm_choose(FlGemmInfo *g, const char *fl_gemm, const char *coretype, const char *openblas_core,
                    FlIsa cpu, const char *dnnl_isa, FlIsa dnnl_level) {
    memset(g, 0, sizeof *g);
    g->cpu_isa = cpu;
    FlIsa ob = fl_gemm_openblas_isa(openblas_core);
    bool set_core = coretype && *coretype;
    const char *want = fl_gemm && *fl_gemm ? fl_gemm : "auto";
    bool auto_ = strcmp(want, "auto") == 0;
    if (!auto_ && strcmp(want, "openblas") != 0 && strcmp(want, "onednn") != 0) {
        snprintf(g->error, sizeof g->error, "FL_GEMM=%s: expected openblas, onednn or auto", want);
        auto_ = true;
    } else if (strcmp(want, "onednn") == 0 && !dnnl_isa) {
        snprintf(g->error, sizeof g->error, "FL_GEMM=onednn, but oneDNN is off (FL_DNNL=0)");
        auto_ = true;
    }
    if (!auto_) {
        g->path = strcmp(want, "onednn") == 0 ? FL_GEMM_ONEDNN : FL_GEMM_OPENBLAS;
        g->named = true;
        snprintf(g->why, sizeof g->why, "FL_GEMM=%s", want);
    } else if (!dnnl_isa) {
        g->path = FL_GEMM_OPENBLAS;
        g->named = true;
        snprintf(g->why, sizeof g->why, "oneDNN is off (FL_DNNL=0)");
    } else if (set_core) {
        g->path = FL_GEMM_OPENBLAS;
        snprintf(g->why, sizeof g->why, "OPENBLAS_CORETYPE=%s is honoured", coretype);
    } else if (ob < cpu && dnnl_level > ob) {
        g->path = FL_GEMM_ONEDNN;
        snprintf(g->why, sizeof g->why, "OpenBLAS's kernel for this CPU, %s, is %s, narrower than the CPU's %s",
                 openblas_core ? openblas_core : "?", fl_isa_name(ob), fl_isa_name(cpu));
    } else if (dnnl_level >= ob) {
        g->path = FL_GEMM_BY_SHAPE;
        snprintf(g->why, sizeof g->why, "by shape: oneDNN for products of 2^19 multiply-adds and more with "
                 "over %d rows and columns, OpenBLAS (as wide as the CPU's vectors) for the rest",
                 FL_GEMM_ONEDNN_SIDE);
    } else { /* oneDNN capped below OpenBLAS's kernel (ONEDNN_MAX_CPU_ISA) */
        g->path = FL_GEMM_OPENBLAS;
        snprintf(g->why, sizeof g->why, "OpenBLAS's kernel for this CPU, %s, is as wide as the CPU's vectors "
                 "and oneDNN's narrower", openblas_core ? openblas_core : "?");
    }
    const char *core = openblas_core ? openblas_core : "?";
    switch (g->path) {
    case FL_GEMM_ONEDNN:
        g->kernel = dnnl_isa;
        g->kernel_isa = dnnl_level;
        break;
    case FL_GEMM_BY_SHAPE:
        snprintf(g->kernels, sizeof g->kernels, "%s+%s", dnnl_isa, core);
        g->kernel = g->kernels;
        g->kernel_isa = dnnl_level < ob ? dnnl_level : ob;
        break;
    case FL_GEMM_OPENBLAS:
    case FL_GEMM_PATH_COUNT:
        g->kernel = core;
        g->kernel_isa = ob;
        break;
    }
}

FlGemmPath fl_gemm_library(const FlGemmInfo *g, int64_t M, int64_t N, int64_t K) {
    if (g->path != FL_GEMM_BY_SHAPE) return g->path;
    bool big = M > FL_GEMM_ONEDNN_SIDE && N > FL_GEMM_ONEDNN_SIDE && K > 0 &&
               (double)M * (double)N * (double)K >= (double)FL_GEMM_ONEDNN_MIN;
    return big ? FL_GEMM_ONEDNN : FL_GEMM_OPENBLAS;
}

/* The CPU's widest vectors the OS lets a program use (GCC's and clang's cpu model checks
 * XCR0 too). */
static FlIsa cpu_isa(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return FL_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return FL_ISA_AVX2;
    if (__builtin_cpu_supports("avx")) return FL_ISA_AVX;
    if (__builtin_cpu_supports("sse2")) return FL_ISA_SSE;
#endif
    return FL_ISA_NONE;
}

static struct {
    pthread_once_t once;
    FlGemmInfo info;
} G = {PTHREAD_ONCE_INIT};

static void decide(void) {
    FlIsa dl = FL_ISA_NONE;
    const char *dn = kdnnl_isa(&dl);
    fl_gemm_choose(&G.info, getenv("FL_GEMM"), getenv("OPENBLAS_CORETYPE"), openblas_get_corename(),
                   cpu_isa(), dn, dl);
}

const FlGemmInfo *fl_gemm_info(void) {
    pthread_once(&G.once, decide);
    return &G.info;
}

void fl_gemm_describe(const FlGemmInfo *g, FlBuf *out) {
    fl_buf_printf(out, "%s %s (%s on a CPU with %s): %s", fl_gemm_path_name(g->path), g->kernel,
                  fl_isa_name(g->kernel_isa), fl_isa_name(g->cpu_isa), g->why);
}

bool fl_gemm_warning(const FlGemmInfo *g, FlBuf *out) {
    if (g->named || g->kernel_isa == FL_ISA_NONE || g->kernel_isa >= g->cpu_isa) return false;
    /* measured (docs/kernels.md): AVX2 kernels at 0.6 of AVX-512 ones, SSE kernels at 0.25 */
    fl_buf_printf(out, "matrix products run on %s's %s kernels (%s) on a CPU with %s, %s its speed (%s); "
                  "unset %s to let fluidc choose, or set FL_GEMM=%s to keep them without this warning "
                  "(docs/kernels.md)", g->path == FL_GEMM_ONEDNN ? "oneDNN" : "OpenBLAS", g->kernel,
                  fl_isa_name(g->kernel_isa), fl_isa_name(g->cpu_isa),
                  g->cpu_isa - g->kernel_isa > 1 ? "far below" : "below", g->why,
                  g->path == FL_GEMM_ONEDNN ? "ONEDNN_MAX_CPU_ISA" : "OPENBLAS_CORETYPE",
                  fl_gemm_path_name(g->path));
    return true;
}

/* ---- the product ---- */

void kmark_kernel_used(void) {
    static atomic_bool marked;
    if (atomic_load_explicit(&marked, memory_order_relaxed) || atomic_exchange(&marked, true)) return;
    const char *dir = getenv("FL_KERNEL_MARKS"), *name = getenv("FL_TEST_NAME");
    if (!dir || !*dir || !name || !*name || strchr(name, '/')) return;
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return;
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) close(fd);
}

/* lib: the library the whole product's shape chose (a block of a product cut on the kernel pool
 * runs on the same one, whatever its own size). */
static void sgemm(FlGemmPath lib, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                  const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                  int64_t ldc) {
    kmark_kernel_used();
    if (lib == FL_GEMM_ONEDNN && kdnnl_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
        return;
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
            sgemm(g->lib, g->ta, g->tb, hi - lo, g->N, g->K, g->alpha, g->ta ? g->A + lo : g->A + lo * g->lda,
                  g->lda, g->B, g->ldb, g->beta, g->C + lo * g->ldc, g->ldc);
    } else { /* columns [lo, hi) of C: columns of op(B) */
        block_range(g->N, c, g->nchunks, &lo, &hi);
        if (hi > lo)
            sgemm(g->lib, g->ta, g->tb, g->M, hi - lo, g->K, g->alpha, g->A, g->lda,
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
        FlGemmPath lib = fl_gemm_library(fl_gemm_info(), M, N, K);
        /* up to N blocks of at least GEMM_GRAIN multiply-adds */
        bool rows = M >= N;
        int64_t span = rows ? M : N, per = rows ? N * K : M * K; /* work per row (column) */
        int64_t grain = GEMM_GRAIN / (per > 0 ? per : 1);
        int nchunks = fl_par_chunks((span + 15) / 16, (grain + 15) / 16);
        if (nchunks == 1) {
            sgemm(lib, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
            return;
        }
        GemmJob g = {lib, ta, tb, rows, M, N, K, lda, ldb, ldc, alpha, beta, A, B, C, nchunks};
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
