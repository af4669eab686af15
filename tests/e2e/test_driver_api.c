/* test_driver_api: the embedding API of the driver program (docs/driver.md, docs/embedding.md).
 * A script that runs its startup program through exe.run has a driver; fl_executor_run_driver
 * runs it on the caller's root scope, where the startup program's parameters then are (read
 * back here, and used by a plain fl_executor_run of main). A program without a driver says so.
 *   test_driver_api     (run from the repository root) */
#include <CUnit/Basic.h>
#include <string.h>

#include "compiler/ir/ir.h"
#include "lang/eval.h"
#include "runtime/api.h"
#include "tests/cunit.h"

static const char script[] =
    "import paddle.fluid as fluid\n"
    "x = fluid.layers.data(name='x', shape=[1], dtype='float32')\n"
    "w = fluid.layers.create_parameter(shape=[1], dtype='float32', name='w',\n"
    "                                  default_initializer=fluid.initializer.Constant(3.5))\n"
    "y = fluid.layers.elementwise_mul(x, w)\n"
    "exe = fluid.Executor(fluid.CPUPlace())\n"
    "exe.run(fluid.default_startup_program())\n";

static FlLoadedProgram *compile(const char *src) {
    FlBundle *bundle = NULL;
    FlBuf diag = {0};
    int nerr = fl_compile_source("driver_api.fl", src, strlen(src), NULL, &bundle, &diag);
    if (nerr) fprintf(stderr, "%.*s", (int)diag.len, diag.data);
    fl_buf_free(&diag);
    return nerr ? NULL : fl_program_from_bundle_take(bundle);
}

static void test_run_driver(void) {
    FlLoadedProgram *prog = compile(script);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    CU_ASSERT_PTR_NOT_NULL(fl_program_bundle(prog)->driver);
    FlExecutor *ex = NULL;
    FlErr err = {{0}};
    CU_ASSERT_EQUAL_FATAL(fl_executor_new(prog, NULL, &ex, &err), FL_OK);
    CU_ASSERT_TRUE(fl_executor_has_driver(ex));
    FlScope *scope = fl_scope_new(NULL);
    FlTensor w = FL_TENSOR_INIT;
    CU_ASSERT_EQUAL(fl_scope_get_tensor(scope, "w", &w, &err), FL_ERROR); /* nothing ran yet */
    CU_ASSERT_EQUAL_FATAL(fl_executor_run_driver(ex, scope, &err), FL_OK);
    CU_ASSERT_EQUAL_FATAL(fl_scope_get_tensor(scope, "w", &w, &err), FL_OK);
    CU_ASSERT_EQUAL(((float *)fl_tensor_data(&w))[0], 3.5f);
    /* the main program runs on what the driver's startup made */
    float xv = 2.0f;
    int64_t shape[2] = {1, 1};
    FlTensor x = FL_TENSOR_INIT;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_from_floats(&err, &x, 2, shape, &xv), FL_OK);
    FlFeed feed = {"x", &x};
    FlFetch fetch = {"elementwise_mul_0.tmp_0", FL_TENSOR_INIT};
    CU_ASSERT_EQUAL_FATAL(fl_executor_run(ex, scope, &feed, 1, &fetch, 1, &err), FL_OK);
    CU_ASSERT_EQUAL(((float *)fl_tensor_data(&fetch.tensor))[0], 7.0f);
    fl_tensor_fini(&fetch.tensor);
    fl_tensor_fini(&x);
    fl_tensor_fini(&w);
    fl_scope_free(scope);
    fl_executor_free(ex);
    fl_program_free(prog);
}

static void test_no_driver(void) {
    FlLoadedProgram *prog = compile("import fluid\nx = fluid.layers.data(name='x', shape=[1], dtype='float32')\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    CU_ASSERT_PTR_NULL(fl_program_bundle(prog)->driver);
    FlExecutor *ex = NULL;
    FlErr err = {{0}};
    CU_ASSERT_EQUAL_FATAL(fl_executor_new(prog, NULL, &ex, &err), FL_OK);
    CU_ASSERT_FALSE(fl_executor_has_driver(ex));
    FlScope *scope = fl_scope_new(NULL);
    CU_ASSERT_EQUAL(fl_executor_run_driver(ex, scope, &err), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(err.msg, "the program has no driver (run its startup, then its main program)");
    fl_scope_free(scope);
    fl_executor_free(ex);
    fl_program_free(prog);
}

int main(void) {
    static const FlTestCase cases[] = {{"run the driver", test_run_driver}, {"no driver", test_no_driver}};
    return fl_test_run("driver_api", NULL, NULL, cases, sizeof cases / sizeof cases[0]);
}
