/* bench_infer.c: fluidc's inference latency on one image, through the embedding API
 * (runtime/api.h): models.fl built with -D infer=1 (the forward pass only, batch_norm in test
 * mode), parameters from its startup program, one random image [1, C, H, W] fed again and again.
 * After WARMUP runs, RUNS runs are timed one by one; prints the best and the median latency in
 * milliseconds as `key=value` (bench_models.sh parses them). Never fails on time.
 *
 *   usage: bench_infer MODEL.flp C H W [RUNS=30]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/api.h"
#include "runtime/rng.h"

enum { WARMUP = 3, MAX_RUNS = 1000 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: bench_infer MODEL.flp C H W [RUNS]\n");
        return 2;
    }
    int64_t c = atoi(argv[2]), h = atoi(argv[3]), w = atoi(argv[4]);
    int runs = argc > 5 ? atoi(argv[5]) : 30;
    if (c < 1 || h < 1 || w < 1 || runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "bench_infer: C, H, W must be positive and RUNS in 1..%d\n", MAX_RUNS);
        return 2;
    }
    FlErr err;
    FlLoadedProgram *prog = NULL;
    FlExecutor *ex = NULL;
    if (fl_program_load(argv[1], &prog, &err) || fl_executor_new(prog, NULL, &ex, &err)) {
        fprintf(stderr, "bench_infer: %s\n", fl_error_message(&err));
        return 1;
    }
    FlScope *scope = fl_scope_new(NULL);
    FlTensor x = FL_TENSOR_INIT, y = FL_TENSOR_INIT;
    size_t n = (size_t)(c * h * w);
    float *xv = malloc(sizeof(float) * n);
    if (!xv) return 1;
    FlRng rng;
    fl_rng_init(&rng, 7);
    for (size_t i = 0; i < n; i++) xv[i] = fl_rng_uniform_f32(&rng);
    int64_t label = 3;
    if (fl_executor_run_startup(ex, scope, &err) ||
        fl_tensor_from_floats(&err, &x, 4, (int64_t[]){1, c, h, w}, xv) ||
        fl_tensor_from_int64s(&err, &y, 2, (int64_t[]){1, 1}, &label)) {
        fprintf(stderr, "bench_infer: %s\n", fl_error_message(&err));
        return 1;
    }
    free(xv);
    static double t[MAX_RUNS];
    for (int i = 0; i < WARMUP + runs; i++) {
        FlFeed feeds[2] = {{"x", &x}, {"label", &y}};
        FlFetch fetch = {"mean_0.tmp_0", FL_TENSOR_INIT};
        double t0 = now();
        if (fl_executor_run(ex, scope, feeds, 2, &fetch, 1, &err)) {
            fprintf(stderr, "bench_infer: %s\n", fl_error_message(&err));
            return 1;
        }
        if (i >= WARMUP) t[i - WARMUP] = now() - t0;
        fl_tensor_fini(&fetch.tensor);
    }
    qsort(t, (size_t)runs, sizeof *t, cmp);
    printf("best_ms=%.3f median_ms=%.3f runs=%d\n", t[0] * 1e3, t[runs / 2] * 1e3, runs);
    fl_tensor_fini(&x);
    fl_tensor_fini(&y);
    fl_scope_free(scope);
    fl_executor_free(ex);
    fl_program_free(prog);
    return 0;
}
