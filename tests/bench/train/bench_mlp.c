/* bench_mlp.c: fluidc's training speed on the benchmark MLP (mlp.fl: 784-512-512-10, relu,
 * softmax + cross-entropy, mean, SGD), through the embedding API (runtime/api.h) exactly as an
 * embedder would use it: one executor, one scope, fl_executor_run with feeds each step.
 *
 * Synthetic data: BATCHES pre-made batches of random features in [0, 1) and random int64 labels
 * in [0, 10), fed in turn. After WARMUP steps, ROUNDS rounds of `steps` steps are timed; the best
 * round gives steps/s. Prints one line of `key=value` figures (bench_train.sh parses it):
 *   steps_per_s, ms_per_step, cpu_ms_per_step (the best round by the process's CPU time: the
 *   figure other jobs on a shared machine distort least), first_loss, last_loss, peak_rss_kib,
 *   and over the timed steps the page faults per step and the buffer cache's misses per step
 *   (allocations of a large buffer that went to malloc; runtime/tensor.h)
 * Never fails on time (benchmarks are not tests); exits 1 only when the program fails to run.
 *
 *   usage: bench_mlp MODEL.flp [BATCH=128] [STEPS=40] [ROUNDS=5]
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "runtime/api.h"
#include "runtime/rng.h"

enum { IN = 784, CLASSES = 10, BATCHES = 4, WARMUP = 5 };

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }

static int step(FlExecutor *ex, FlScope *scope, const FlTensor *x, const FlTensor *y, float *loss,
                FlErr *err) {
    FlFeed feeds[2] = {{"x", x}, {"label", y}};
    FlFetch fetch = {"mean_0.tmp_0", FL_TENSOR_INIT};
    int rc = fl_executor_run(ex, scope, feeds, 2, &fetch, 1, err) ||
             fl_tensor_to_floats(err, &fetch.tensor, loss, 1);
    fl_tensor_fini(&fetch.tensor);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_mlp MODEL.flp [BATCH] [STEPS] [ROUNDS]\n");
        return 2;
    }
    int batch = argc > 2 ? atoi(argv[2]) : 128;
    int steps = argc > 3 ? atoi(argv[3]) : 40;
    int rounds = argc > 4 ? atoi(argv[4]) : 5;
    if (batch < 1 || steps < 1 || rounds < 1) {
        fprintf(stderr, "bench_mlp: BATCH, STEPS and ROUNDS must be positive\n");
        return 2;
    }
    FlErr err;
    FlLoadedProgram *prog = NULL;
    FlExecutor *ex = NULL;
    if (fl_program_load(argv[1], &prog, &err) || fl_executor_new(prog, NULL, &ex, &err)) {
        fprintf(stderr, "bench_mlp: %s\n", fl_error_message(&err));
        return 1;
    }
    FlScope *scope = fl_scope_new(NULL);
    if (fl_executor_run_startup(ex, scope, &err)) {
        fprintf(stderr, "bench_mlp: %s\n", fl_error_message(&err));
        return 1;
    }

    FlTensor xs[BATCHES], ys[BATCHES];
    FlRng rng;
    fl_rng_init(&rng, 7);
    float *xv = malloc(sizeof(float) * (size_t)batch * IN);
    int64_t *yv = malloc(sizeof(int64_t) * (size_t)batch);
    if (!xv || !yv) return 1;
    for (int b = 0; b < BATCHES; b++) {
        for (size_t i = 0; i < (size_t)batch * IN; i++) xv[i] = fl_rng_uniform_f32(&rng);
        for (int i = 0; i < batch; i++) yv[i] = (int64_t)(fl_rng_next(&rng) % CLASSES);
        xs[b] = (FlTensor)FL_TENSOR_INIT;
        ys[b] = (FlTensor)FL_TENSOR_INIT;
        if (fl_tensor_from_floats(&err, &xs[b], 2, (int64_t[]){batch, IN}, xv) ||
            fl_tensor_from_int64s(&err, &ys[b], 2, (int64_t[]){batch, 1}, yv)) {
            fprintf(stderr, "bench_mlp: %s\n", fl_error_message(&err));
            return 1;
        }
    }
    free(xv);
    free(yv);

    float loss = 0, first = 0;
    int k = 0;
    for (int i = 0; i < WARMUP; i++, k++) {
        if (step(ex, scope, &xs[k % BATCHES], &ys[k % BATCHES], &loss, &err)) goto fail;
        if (i == 0) first = loss;
    }
    double best = 1e30, cbest = 1e30;
    struct rusage ru0;
    getrusage(RUSAGE_SELF, &ru0);
    FlBufferCacheStats c0 = fl_buffer_cache_stats();
    for (int r = 0; r < rounds; r++) {
        double t0 = now(), u0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        for (int i = 0; i < steps; i++, k++)
            if (step(ex, scope, &xs[k % BATCHES], &ys[k % BATCHES], &loss, &err)) goto fail;
        double t = now() - t0, c = clock_s(CLOCK_PROCESS_CPUTIME_ID) - u0;
        if (t < best) best = t;
        if (c < cbest) cbest = c;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    FlBufferCacheStats c1 = fl_buffer_cache_stats();
    double timed = (double)steps * rounds;
    printf("steps_per_s=%.3f ms_per_step=%.4f cpu_ms_per_step=%.4f first_loss=%.5f last_loss=%.5f "
           "peak_rss_kib=%ld faults_per_step=%.1f cache_misses_per_step=%.1f batch=%d steps=%d rounds=%d\n",
           steps / best, best / steps * 1e3, cbest / steps * 1e3, first, loss, ru.ru_maxrss,
           (double)(ru.ru_minflt + ru.ru_majflt - ru0.ru_minflt - ru0.ru_majflt) / timed,
           (double)(c1.misses - c0.misses) / timed, batch, steps, rounds);
    for (int b = 0; b < BATCHES; b++) {
        fl_tensor_fini(&xs[b]);
        fl_tensor_fini(&ys[b]);
    }
    fl_scope_free(scope);
    fl_executor_free(ex);
    fl_program_free(prog);
    return 0;
fail:
    fprintf(stderr, "bench_mlp: step %d: %s\n", k, fl_error_message(&err));
    return 1;
}
