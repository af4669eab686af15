/* embed_model.c: an inference model through the C API, as an embedder loads one that a script's
 * fluid.io.save_inference_model wrote (test_model.sh).
 *
 *   usage: embed_model MODEL V1 V2 ...
 *
 * fl_program_load(MODEL) (a directory, or its model file), an executor and a scope, the startup
 * (which sets the saved parameters), then one run feeding the model's first feed one row of the
 * values given (float32) and fetching its first target, whose values it prints one per line
 * ("%.9g"). A failure prints the API's message and exits 1. */
#include <stdio.h>
#include <stdlib.h>

#include "compiler/ir/ir.h"
#include "runtime/api.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL V1 V2 ...\n", argv[0]);
        return 2;
    }
    FlErr err;
    FlLoadedProgram *prog = NULL;
    FlExecutor *ex = NULL;
    FlScope *scope = NULL;
    FlTensor x = FL_TENSOR_INIT;
    FlFetch fetch = {NULL, FL_TENSOR_INIT};
    int n = argc - 2, rc = 1;
    float *row = calloc((size_t)n, sizeof *row);
    for (int i = 0; i < n; i++) row[i] = strtof(argv[i + 2], NULL);
    if (fl_program_load(argv[1], &prog, &err) || fl_executor_new(prog, NULL, &ex, &err)) goto done;
    const FlInferenceSpec *spec = fl_program_bundle(prog)->inference;
    if (!spec || !spec->feeds.len) {
        fprintf(stderr, "%s: not an inference model with a feed\n", argv[1]);
        goto out;
    }
    scope = fl_scope_new(NULL);
    int64_t ne[2] = {1, n};
    if (fl_executor_run_startup(ex, scope, &err) || fl_tensor_from_floats(&err, &x, 2, ne, row)) goto done;
    FlFeed feed = {spec->feeds.data[0], &x};
    fetch.name = spec->targets.data[0];
    if (fl_executor_run(ex, scope, &feed, 1, &fetch, 1, &err)) goto done;
    int64_t m = fl_tensor_numel(&fetch.tensor);
    float *y = calloc((size_t)m, sizeof *y);
    if (fl_tensor_to_floats(&err, &fetch.tensor, y, (size_t)m) == FL_OK) {
        for (int64_t i = 0; i < m; i++) printf("%.9g\n", y[i]);
        rc = 0;
    }
    free(y);
done:
    if (rc) fprintf(stderr, "%s\n", fl_error_message(&err));
out:
    fl_tensor_fini(&fetch.tensor);
    fl_tensor_fini(&x);
    if (scope) fl_scope_free(scope);
    fl_executor_free(ex);
    fl_program_free(prog);
    free(row);
    return rc;
}
