/* test_model_average: tests/e2e/model_average.fl (SGD on a linear model, ModelAverage with
 * windows of min(4, num_updates / 2) steps, at least 2) run step by step through the C API.
 * After every step, inside apply() the params are the mean of the params fetched after each step
 * of the current and the last completed window (computed here from the fetched values, float64);
 * after the block, and after apply(need_restore=False) + restore(), they are the step's params
 * bit for bit; need_restore=False leaves the averages in place until restore().
 *   test_model_average     (run from the repository root) */
#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "compiler/ir/ir.h"
#include "lang/eval.h"
#include "runtime/api.h"
#include "runtime/rng.h"
#include "tests/cunit.h"

#define STEPS 40
#define ROWS 4
#define NP 4 /* w [3, 1] and b [1] */

enum { W_STEP, B_STEP, W_AVG, B_AVG, W_AFTER, W_KEPT, W_END, NFETCH };

static void test_model_average(void) {
    FlBundle *bundle = NULL;
    FlBuf diag = {0};
    int nerr = fl_compile_file("tests/e2e/model_average.fl", NULL, &bundle, &diag);
    if (nerr) fprintf(stderr, "%.*s", (int)diag.len, diag.data);
    fl_buf_free(&diag);
    CU_ASSERT_EQUAL_FATAL(nerr, 0);
    /* the fetched names are the assign ops' outputs: find them by the order the program made them */
    FlBlock *b0 = fl_ir_block(bundle->main, 0);
    const char *names[NFETCH];
    size_t k = 0, averaged = 0;
    for (size_t i = 0; i < b0->ops.len; i++) {
        FlOpDesc *op = b0->ops.data[i];
        if (!strcmp(op->type, "average_accumulates")) {
            averaged++;
            CU_ASSERT(strcmp(fl_ir_op_input1(op, "param"), "v") != 0); /* ParamAttr(do_model_average=False) */
        }
        if (k == NFETCH) continue;
        const char *out = fl_ir_op_output1(op, "Out");
        if (!strcmp(op->type, "assign") && out && !strncmp(out, "assign_", 7)) names[k++] = out;
    }
    CU_ASSERT_EQUAL_FATAL(k, NFETCH);
    CU_ASSERT_EQUAL(averaged, 2);
    FlLoadedProgram *prog = fl_program_from_bundle_take(bundle);
    FlExecutor *ex = NULL;
    FlErr err;
    CU_ASSERT_EQUAL_FATAL(fl_executor_new(prog, NULL, &ex, &err), FL_OK);
    FlScope *scope = fl_scope_new(NULL);
    CU_ASSERT_EQUAL_FATAL(fl_executor_run_startup(ex, scope, &err), FL_OK);

    static double seen[STEPS][NP];
    int64_t n = 0, prev = 0, cur = 0; /* params seen; the last completed window's start; the current one's */
    int restarts = 0;
    FlRng rng;
    fl_rng_init(&rng, 3);
    FlFetch fetches[NFETCH];
    for (int i = 0; i < NFETCH; i++) fetches[i] = (FlFetch){names[i], FL_TENSOR_INIT};
    for (int step = 0; step < STEPS; step++) {
        float xv[ROWS * 3], yv[ROWS];
        for (int i = 0; i < ROWS * 3; i++) xv[i] = (float)(2 * fl_rng_uniform(&rng) - 1);
        for (int i = 0; i < ROWS; i++) yv[i] = xv[3 * i] - 2 * xv[3 * i + 1] + 0.5f + (float)fl_rng_uniform(&rng);
        FlTensor xt = FL_TENSOR_INIT, yt = FL_TENSOR_INIT;
        CU_ASSERT_EQUAL_FATAL(fl_tensor_from_floats(&err, &xt, 2, (int64_t[]){ROWS, 3}, xv), FL_OK);
        CU_ASSERT_EQUAL_FATAL(fl_tensor_from_floats(&err, &yt, 2, (int64_t[]){ROWS, 1}, yv), FL_OK);
        FlFeed feeds[2] = {{"x", &xt}, {"y", &yt}};
        FlStatus st = fl_executor_run(ex, scope, feeds, 2, fetches, NFETCH, &err);
        if (st != FL_OK) fprintf(stderr, "%s\n", fl_error_message(&err));
        CU_ASSERT_EQUAL_FATAL(st, FL_OK);
        fl_tensor_fini(&xt);
        fl_tensor_fini(&yt);
        float v[NFETCH][3];
        for (int i = 0; i < NFETCH; i++)
            CU_ASSERT_EQUAL_FATAL(fl_tensor_to_floats(&err, &fetches[i].tensor, v[i], i == B_STEP || i == B_AVG ? 1 : 3), FL_OK);
        for (int i = 0; i < 3; i++) seen[n][i] = v[W_STEP][i];
        seen[n][3] = v[B_STEP][0];
        n++;
        /* the window rule: restart once the window holds >= 2 and >= min(4, floor(n / 2)) params */
        int64_t acc = n - cur;
        if (acc >= 2 && acc >= (n / 2 < 4 ? n / 2 : 4)) {
            prev = cur;
            cur = n;
            restarts++;
        }
        for (int i = 0; i < NP; i++) {
            double ref = 0;
            for (int64_t t = prev; t < n; t++) ref += seen[t][i];
            ref /= (double)(n - prev);
            double got = i < 3 ? v[W_AVG][i] : v[B_AVG][0];
            if (!(fabs(got - ref) <= 1e-6 * (1 + fabs(ref)))) {
                fprintf(stderr, "\nstep %d param element %d: inside apply() %.9g, the mean of steps %lld..%lld %.9g\n",
                        step + 1, i, got, (long long)prev + 1, (long long)n, ref);
                CU_FAIL("the averaged param differs from the mean of the params seen");
            }
        }
        CU_ASSERT_EQUAL(memcmp(v[W_AFTER], v[W_STEP], sizeof v[0]), 0);
        CU_ASSERT_EQUAL(memcmp(v[W_KEPT], v[W_AVG], sizeof v[0]), 0);
        CU_ASSERT_EQUAL(memcmp(v[W_END], v[W_STEP], sizeof v[0]), 0);
        /* the average differs from the step's params once there are two (the test has teeth) */
        if (step > 0) CU_ASSERT(memcmp(v[W_AVG], v[W_STEP], sizeof v[0]) != 0);
    }
    CU_ASSERT(restarts >= 8);
    /* the param in the scope is the trained one, not an average */
    FlTensor w = FL_TENSOR_INIT;
    float wv[3];
    CU_ASSERT_EQUAL(fl_scope_get_tensor(scope, "w", &w, &err), FL_OK);
    CU_ASSERT_EQUAL(fl_tensor_to_floats(&err, &w, wv, 3), FL_OK);
    CU_ASSERT(fabs(wv[0] - seen[n - 1][0]) == 0);
    fl_tensor_fini(&w);
    for (int i = 0; i < NFETCH; i++) fl_tensor_fini(&fetches[i].tensor);
    fl_scope_free(scope);
    fl_executor_free(ex);
    fl_program_free(prog);
}

int main(void) {
    static const FlTestCase cases[] = {{"model_average", test_model_average}};
    return fl_test_run("model_average", NULL, NULL, cases, sizeof cases / sizeof cases[0]);
}
