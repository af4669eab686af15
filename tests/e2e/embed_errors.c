/* embed_errors.c: the two failing runs docs/embedding.md quotes, through the C API, each printing
 * its error message (tests/e2e/doc_quotes.txt checks the doc against them).
 *
 *   usage: embed_errors fit_a_line.flp seed_server.flp
 *
 * fit_a_line.flp: a step with x of 12 features, with x of dtype int64, without y, then fc_0.w_0
 * set to a [12, 1] tensor and a step on 32 rows of 13 features; seed_server.flp: a
 * parameter-server program run without the distributed runtime. */
#include <stdio.h>
#include <string.h>

#include "runtime/api.h"

/* Loads path into a new executor and scope and runs its startup program; 1 on failure (printed). */
static int open_program(const char *path, FlLoadedProgram **prog, FlExecutor **ex, FlScope **scope) {
    FlErr err;
    *prog = NULL;
    *ex = NULL;
    *scope = NULL;
    if (fl_program_load(path, prog, &err) || fl_executor_new(*prog, NULL, ex, &err)) {
        fprintf(stderr, "%s: %s\n", path, fl_error_message(&err));
        return 1;
    }
    *scope = fl_scope_new(NULL);
    if (fl_executor_run_startup(*ex, *scope, &err)) {
        fprintf(stderr, "%s: %s\n", path, fl_error_message(&err));
        return 1;
    }
    return 0;
}

static void close_program(FlLoadedProgram *prog, FlExecutor *ex, FlScope *scope) {
    if (scope) fl_scope_free(scope);
    fl_executor_free(ex);
    fl_program_free(prog);
}

/* Runs the main program of ex once with nfeeds feeds and prints its error (or that it passed). */
static void run_once(FlExecutor *ex, FlScope *scope, const FlFeed *feeds, size_t nfeeds) {
    FlErr err;
    if (fl_executor_run(ex, scope, feeds, nfeeds, NULL, 0, &err))
        printf("%s\n", fl_error_message(&err));
    else
        printf("the run succeeded\n");
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s fit_a_line.flp seed_server.flp\n", argv[0]);
        return 2;
    }
    FlLoadedProgram *prog;
    FlExecutor *ex;
    FlScope *scope;
    int rc = 0;
    if (open_program(argv[1], &prog, &ex, &scope)) {
        rc = 1;
    } else {
        static float w[12], x[32 * 13], y[32];
        static int64_t xi[32 * 13];
        FlTensor tw = FL_TENSOR_INIT, tx = FL_TENSOR_INIT, ty = FL_TENSOR_INIT;
        FlTensor tx12 = FL_TENSOR_INIT, txi = FL_TENSOR_INIT;
        FlErr err;
        if (fl_tensor_from_floats(&err, &tw, 2, (int64_t[]){12, 1}, w) ||
            fl_tensor_from_floats(&err, &tx, 2, (int64_t[]){32, 13}, x) ||
            fl_tensor_from_floats(&err, &tx12, 2, (int64_t[]){32, 12}, x) ||
            fl_tensor_from_int64s(&err, &txi, 2, (int64_t[]){32, 13}, xi) ||
            fl_tensor_from_floats(&err, &ty, 2, (int64_t[]){32, 1}, y)) {
            fprintf(stderr, "%s\n", fl_error_message(&err));
            rc = 1;
        } else {
            run_once(ex, scope, (FlFeed[]){{"x", &tx12}, {"y", &ty}}, 2);
            run_once(ex, scope, (FlFeed[]){{"x", &txi}, {"y", &ty}}, 2);
            run_once(ex, scope, (FlFeed[]){{"x", &tx}}, 1);
            fl_scope_set_tensor(scope, "fc_0.w_0", &tw);
            run_once(ex, scope, (FlFeed[]){{"x", &tx}, {"y", &ty}}, 2);
        }
        FlTensor *all[] = {&tw, &tx, &tx12, &txi, &ty};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) fl_tensor_fini(all[i]);
    }
    close_program(prog, ex, scope);
    if (open_program(argv[2], &prog, &ex, &scope))
        rc = 1;
    else
        run_once(ex, scope, NULL, 0);
    close_program(prog, ex, scope);
    return rc;
}
