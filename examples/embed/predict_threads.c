/* predict_threads.c: the multi-threaded prediction case that Paddle Fluid made painful, with
 * fluidc's embedding API: ten threads run ONE executor on ONE scope at once, each feeding its
 * own value under the same feed name "x" and fetching the same var; each must get its own value
 * back. No thread-unique names, scopes or executors. The whole round is repeated 100 times.
 *
 *   usage: embed_predict_threads identity.flp
 */
#include <pthread.h>
#include <stdio.h>

#include "runtime/api.h"

enum { THREADS = 10, ROUNDS = 100, CALLS = 5 };

typedef struct Worker {
    FlExecutor *ex;
    FlScope *scope;
    int i;
    int wrong;
    FlErr err;
} Worker;

static void *work(void *arg) {
    Worker *w = arg;
    for (int k = 0; k < CALLS; k++) {
        float in = (float)w->i;
        int64_t ne[2] = {1, 1};
        FlTensor x = FL_TENSOR_INIT;
        if (fl_tensor_from_floats(&w->err, &x, 2, ne, &in)) {
            w->wrong++;
            return NULL;
        }
        FlFeed feed = {"x", &x};
        FlFetch fetch = {"scale_0.tmp_0", FL_TENSOR_INIT};
        float out = -1;
        if (fl_executor_run(w->ex, w->scope, &feed, 1, &fetch, 1, &w->err) ||
            fl_tensor_to_floats(&w->err, &fetch.tensor, &out, 1) || out != in)
            w->wrong++;
        fl_tensor_fini(&fetch.tensor);
        fl_tensor_fini(&x);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s identity.flp\n", argv[0]);
        return 2;
    }
    FlErr err;
    FlLoadedProgram *prog = NULL;
    FlExecutor *ex = NULL;
    if (fl_program_load(argv[1], &prog, &err) || fl_executor_new(prog, NULL, &ex, &err)) {
        fprintf(stderr, "%s\n", fl_error_message(&err));
        fl_program_free(prog);
        return 1;
    }
    FlScope *scope = fl_scope_new(NULL);
    int failures = 0;
    if (fl_executor_run_startup(ex, scope, &err)) {
        fprintf(stderr, "%s\n", fl_error_message(&err));
        failures++;
    }
    for (int round = 0; round < ROUNDS && !failures; round++) {
        pthread_t th[THREADS];
        Worker w[THREADS];
        for (int i = 0; i < THREADS; i++) {
            w[i] = (Worker){.ex = ex, .scope = scope, .i = i};
            pthread_create(&th[i], NULL, work, &w[i]);
        }
        for (int i = 0; i < THREADS; i++) {
            pthread_join(th[i], NULL);
            if (w[i].wrong) {
                fprintf(stderr, "round %d, thread %d: %d wrong results (%s)\n", round, i,
                        w[i].wrong, fl_error_message(&w[i].err));
                failures++;
            }
        }
    }
    if (!failures) printf("%d rounds x %d threads x %d calls: every thread got its own value back\n",
                          ROUNDS, THREADS, CALLS);
    fl_scope_free(scope);
    fl_executor_free(ex);
    fl_program_free(prog);
    return failures ? 1 : 0;
}
