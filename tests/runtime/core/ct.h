/* ct.h: helpers shared by the runtime core tests: compile a .fl source text into a loaded
 * program, make an executor and a scope, run with float feeds, read fetched values. Header-only:
 * each test program includes it once. */
#ifndef FL_CT_H
#define FL_CT_H

#include <CUnit/Basic.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/ir.h"
#include "lang/eval.h"
#include "runtime/api.h"
#include "runtime/core/exec.h"
#include "runtime/core/scope.h"
#include "tests/cunit.h"

typedef FlTestCase CtCase;
#define CT_TEST(f) {#f, f}

static inline int ct_run(const char *suite, const CtCase *cases, int n) {
    return fl_test_run(suite, NULL, NULL, cases, (size_t)n);
}

/* Compiles `src` (as if it were the file `path`) into a bundle; fails the test on diagnostics. */
static inline FlBundle *ct_compile(const char *path, const char *src) {
    FlBundle *b = NULL;
    FlBuf diag = {0};
    FlCompileOptions opt = {0};
    opt.stdlib_dir = "stdlib";
    int n = fl_compile_source(path, src, strlen(src), &opt, &b, &diag);
    if (n) fprintf(stderr, "\ncompile errors:\n%s\n", fl_buf_str(&diag));
    fl_buf_free(&diag);
    CU_ASSERT_EQUAL_FATAL(n, 0);
    return b;
}

/* A compiled program with its executor and a scope on which startup has run. */
typedef struct Ct {
    FlLoadedProgram *prog;
    FlExecutor *ex;
    FlScope *scope;
} Ct;

static inline Ct ct_open(const char *path, const char *src) {
    Ct c = {0};
    FlErr e = {{0}};
    c.prog = fl_program_from_bundle_take(ct_compile(path, src));
    FlStatus s = fl_executor_new(c.prog, NULL, &c.ex, &e);
    if (s) fprintf(stderr, "\n%s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(s, FL_OK);
    c.scope = fl_scope_new(NULL);
    s = fl_executor_run_startup(c.ex, c.scope, &e);
    if (s) fprintf(stderr, "\n%s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(s, FL_OK);
    return c;
}

static inline void ct_close(Ct *c) {
    fl_scope_free(c->scope);
    fl_executor_free(c->ex);
    fl_program_free(c->prog);
    memset(c, 0, sizeof *c);
}

static inline FlTensor ct_tensor(FlDType dt, int ndim, const int64_t *ne, const double *v) {
    FlTensor t = FL_TENSOR_INIT;
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_from(&e, &t, dt, ndim, ne, v), FL_OK);
    return t;
}

/* A layer run by several threads at once (the recorders' tests): x [1, 3] -> fc(2, tanh). */
#define CT_FC_TANH_SRC                                                                      \
    "from fluid import layers\n"                                                             \
    "x = layers.data(name=\"x\", shape=[3], dtype=\"float32\")\n"                            \
    "y = layers.fc(x, size=2, act=\"tanh\")\n"

typedef struct CtJob {
    Ct *c;
    int runs, bad;
} CtJob;

static inline void *ct_fc_tanh_runner(void *p) {
    CtJob *j = p;
    for (int r = 0; r < j->runs; r++) {
        FlTensor x = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){1, 3}, (double[]){0.1, 0.2, 0.3});
        FlFeed f = {"x", &x};
        FlFetch o = {"tanh_0.tmp_0", FL_TENSOR_INIT};
        FlErr e;
        if (fl_executor_run(j->c->ex, j->c->scope, &f, 1, &o, 1, &e) != FL_OK) j->bad++;
        fl_tensor_fini(&o.tensor);
        fl_tensor_fini(&x);
    }
    return NULL;
}

/* Runs CT_FC_TANH_SRC's program `runs` times on each of `threads` threads (at most 16) at once;
 * every run must succeed. */
static inline void ct_fc_tanh_threads(Ct *c, int threads, int runs) {
    CtJob jobs[16];
    pthread_t th[16];
    CU_ASSERT_FATAL(threads <= 16);
    for (int i = 0; i < threads; i++) {
        jobs[i] = (CtJob){c, runs, 0};
        pthread_create(&th[i], NULL, ct_fc_tanh_runner, &jobs[i]);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        CU_ASSERT_EQUAL(jobs[i].bad, 0);
    }
}

/* The value of element i of a scope var (through the parents). */
static inline double ct_get(FlScope *s, const char *name, int64_t i) {
    FlTensor t = FL_TENSOR_INIT;
    FlErr e;
    FlStatus st = fl_scope_get_tensor(s, name, &t, &e);
    if (st) fprintf(stderr, "\n%s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(st, FL_OK);
    double v = fl_tensor_get(&t, i);
    fl_tensor_fini(&t);
    return v;
}

#define CT_OK(call, err)                                                                     \
    do {                                                                                     \
        FlStatus ct_s_ = (call);                                                             \
        if (ct_s_ != FL_OK) fprintf(stderr, "\n%s:%d: %s\n", __FILE__, __LINE__, (err)->msg); \
        CU_ASSERT_EQUAL_FATAL(ct_s_, FL_OK);                                                 \
    } while (0)

#define CT_NEAR(a, b, tol) CU_ASSERT_DOUBLE_EQUAL((a), (b), (tol))

/* Checks that a message equals what is expected, printing both when not. */
#define CT_MSG(got, want)                                                                    \
    do {                                                                                     \
        if (strcmp((got), (want)) != 0)                                                      \
            fprintf(stderr, "\n%s:%d:\n  got:  %s\n  want: %s\n", __FILE__, __LINE__, (got), (want)); \
        CU_ASSERT_STRING_EQUAL((got), (want));                                               \
    } while (0)

#endif
