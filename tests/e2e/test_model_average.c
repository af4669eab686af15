/* test_model_average: tests/e2e/model_average.fl (SGD on a linear model, ModelAverage with
 * windows of min(4, num_updates / 2) steps, at least 2) run step by step through the C API.
 * After every step, inside apply() the params are the mean of the params fetched after each step
 * of the current and the last completed window (computed here from the fetched values, float64);
 * after the block, and after apply(need_restore=False) + restore(), they are the step's params
 * bit for bit; need_restore=False leaves the averages in place until restore(). The same for
 * ExponentialMovingAverage (tests/e2e/ema.fl, test_ema below).
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
#define MAX_FETCH 8

/* The run of a test program: its executor and scope, and the vars its assign ops (named assign_*)
 * write, in the order the program makes them: the figures each step fetches. */
typedef struct Run {
    FlLoadedProgram *prog;
    FlExecutor *ex;
    FlScope *scope;
    FlRng rng;
    int nfetch;
    FlFetch fetches[MAX_FETCH];
} Run;

/* Compiles path and runs its startup; `op` ops counted into *nops (their "param" input never
 * "v", the parameter of ParamAttr(do_model_average=False)). */
static void run_open(Run *r, const char *path, int nfetch, const char *op, size_t *nops) {
    FlBundle *bundle = NULL;
    FlBuf diag = {0};
    int nerr = fl_compile_file(path, NULL, &bundle, &diag);
    if (nerr) fprintf(stderr, "%.*s", (int)diag.len, diag.data);
    fl_buf_free(&diag);
    CU_ASSERT_EQUAL_FATAL(nerr, 0);
    FL_ASSERT(nfetch <= MAX_FETCH);
    FlBlock *b0 = fl_ir_block(bundle->main, 0);
    int k = 0;
    *nops = 0;
    for (size_t i = 0; i < b0->ops.len; i++) {
        FlOpDesc *o = b0->ops.data[i];
        if (!strcmp(o->type, op)) {
            (*nops)++;
            const char *param = fl_ir_op_input1(o, "param");
            CU_ASSERT(!param || strcmp(param, "v") != 0);
        }
        const char *out = fl_ir_op_output1(o, "Out");
        if (k < nfetch && !strcmp(o->type, "assign") && out && !strncmp(out, "assign_", 7))
            r->fetches[k++] = (FlFetch){out, FL_TENSOR_INIT};
    }
    CU_ASSERT_EQUAL_FATAL(k, nfetch);
    r->nfetch = nfetch;
    r->prog = fl_program_from_bundle_take(bundle);
    FlErr err;
    CU_ASSERT_EQUAL_FATAL(fl_executor_new(r->prog, NULL, &r->ex, &err), FL_OK);
    r->scope = fl_scope_new(NULL);
    CU_ASSERT_EQUAL_FATAL(fl_executor_run_startup(r->ex, r->scope, &err), FL_OK);
    fl_rng_init(&r->rng, 3);
}

/* One training step on a random batch; v[i] the fetched figures (w's 3 values, b's 1). */
static void run_step(Run *r, float v[][3]) {
    FlErr err;
    float xv[ROWS * 3], yv[ROWS];
    for (int i = 0; i < ROWS * 3; i++) xv[i] = (float)(2 * fl_rng_uniform(&r->rng) - 1);
    for (int i = 0; i < ROWS; i++) yv[i] = xv[3 * i] - 2 * xv[3 * i + 1] + 0.5f + (float)fl_rng_uniform(&r->rng);
    FlTensor xt = FL_TENSOR_INIT, yt = FL_TENSOR_INIT;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_from_floats(&err, &xt, 2, (int64_t[]){ROWS, 3}, xv), FL_OK);
    CU_ASSERT_EQUAL_FATAL(fl_tensor_from_floats(&err, &yt, 2, (int64_t[]){ROWS, 1}, yv), FL_OK);
    FlFeed feeds[2] = {{"x", &xt}, {"y", &yt}};
    FlStatus st = fl_executor_run(r->ex, r->scope, feeds, 2, r->fetches, r->nfetch, &err);
    if (st != FL_OK) fprintf(stderr, "%s\n", fl_error_message(&err));
    CU_ASSERT_EQUAL_FATAL(st, FL_OK);
    fl_tensor_fini(&xt);
    fl_tensor_fini(&yt);
    for (int i = 0; i < r->nfetch; i++) {
        int64_t n = fl_tensor_numel(&r->fetches[i].tensor);
        CU_ASSERT_FATAL(n == 1 || n == 3);
        CU_ASSERT_EQUAL_FATAL(fl_tensor_to_floats(&err, &r->fetches[i].tensor, v[i], n), FL_OK);
    }
}

/* The param w in the scope is the trained one (w_step's values), not an average; frees r. */
static void run_close(Run *r, const float *w_step) {
    FlErr err;
    FlTensor w = FL_TENSOR_INIT;
    float wv[3];
    CU_ASSERT_EQUAL(fl_scope_get_tensor(r->scope, "w", &w, &err), FL_OK);
    CU_ASSERT_EQUAL(fl_tensor_to_floats(&err, &w, wv, 3), FL_OK);
    CU_ASSERT(memcmp(wv, w_step, sizeof wv) == 0);
    fl_tensor_fini(&w);
    for (int i = 0; i < r->nfetch; i++) fl_tensor_fini(&r->fetches[i].tensor);
    fl_scope_free(r->scope);
    fl_executor_free(r->ex);
    fl_program_free(r->prog);
}

static void test_model_average(void) {
    Run r;
    size_t averaged;
    run_open(&r, "tests/e2e/model_average.fl", NFETCH, "average_accumulates", &averaged);
    CU_ASSERT_EQUAL(averaged, 2);
    static double seen[STEPS][NP];
    int64_t n = 0, prev = 0, cur = 0; /* params seen; the last completed window's start; the current one's */
    int restarts = 0;
    float v[NFETCH][3];
    for (int step = 0; step < STEPS; step++) {
        run_step(&r, v);
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
    run_close(&r, v[W_STEP]);
}

/* ExponentialMovingAverage (tests/e2e/ema.fl): after every step, inside each apply() the params
 * are the float64 reference's bias-corrected EMA of the params fetched after each step, with the
 * decay min(0.9, (s + 1) / (s + 10)) at step s (from 0) for one and 0.5 for the other; after the
 * block, and after apply(need_restore=False) + restore(), the step's params bit for bit. */
enum { E_W_STEP, E_B_STEP, E_W_EMA, E_B_EMA, E_W_AFTER, E_W_HALF, E_W_END, E_NFETCH };

static void test_ema(void) {
    Run r;
    size_t pows;
    run_open(&r, "tests/e2e/ema.fl", E_NFETCH, "elementwise_pow", &pows);
    CU_ASSERT_EQUAL(pows, 2); /* one bias correction per apply() */
    double ema[NP] = {0}, half[NP] = {0}, pow_ema = 1, pow_half = 1;
    float v[E_NFETCH][3];
    for (int step = 0; step < STEPS; step++) {
        run_step(&r, v);
        double d = fmin(0.9, (float)(step + 1.0) / (float)(step + 10.0));
        d = (float)d; /* the program's decay is float32 */
        pow_ema = pow((float)d, step + 1); /* Fluid's d^(s + 1), with the step's d */
        pow_half *= 0.5;
        for (int i = 0; i < NP; i++) {
            double p = i < 3 ? v[E_W_STEP][i] : v[E_B_STEP][0];
            ema[i] = d * ema[i] + (1 - d) * p;
            half[i] = 0.5 * half[i] + 0.5 * p;
            double want = ema[i] / (1 - pow_ema), got = i < 3 ? v[E_W_EMA][i] : v[E_B_EMA][0];
            if (!(fabs(got - want) <= 1e-5 * (1 + fabs(want)))) {
                fprintf(stderr, "\nstep %d param element %d: inside apply() %.9g, the reference EMA %.9g\n", step + 1,
                        i, got, want);
                CU_FAIL("the EMA differs from the reference");
            }
            if (i < 3) {
                want = half[i] / (1 - pow_half);
                CU_ASSERT(fabs(v[E_W_HALF][i] - want) <= 1e-5 * (1 + fabs(want)));
            }
        }
        CU_ASSERT_EQUAL(memcmp(v[E_W_AFTER], v[E_W_STEP], sizeof v[0]), 0);
        CU_ASSERT_EQUAL(memcmp(v[E_W_END], v[E_W_STEP], sizeof v[0]), 0);
        /* the averages differ from the step's params once there are two (the test has teeth) */
        if (step > 0) CU_ASSERT(memcmp(v[E_W_EMA], v[E_W_STEP], sizeof v[0]) != 0);
        if (step > 0) CU_ASSERT(memcmp(v[E_W_HALF], v[E_W_EMA], sizeof v[0]) != 0);
    }
    run_close(&r, v[E_W_STEP]);
}

int main(void) {
    static const FlTestCase cases[] = {{"model_average", test_model_average}, {"ema", test_ema}};
    return fl_test_run("model_average", NULL, NULL, cases, sizeof cases / sizeof cases[0]);
}
