/* test_prof.c: the op profiler (runtime/prof.h): threads recording at once lose no run (calls,
 * totals, min and max exact); nothing is recorded while it is off; reset forgets; every sort key
 * orders the table as Fluid's does, and bad names are refused; the table's layout; and the
 * executor with a profiler and a trace: per op type, the profiler's calls and total time are the
 * trace's op spans counted and summed, from runs on several threads. Label `concurrency` (TSan). */
#include <pthread.h>

#include "tests/runtime/core/ct.h"

#include "runtime/prof.h"
#include "runtime/trace.h"

enum { THREADS = 4, PER = 20000 };

typedef struct Rec {
    FlProf *p;
    int id;
} Rec;

/* Thread i records PER runs of mul of 1..PER ns and PER/2 of mul_grad of 10 ns. */
static void *recorder(void *arg) {
    Rec *r = arg;
    const FlOpInfo *mul = fl_ops_find("mul"), *mul_grad = fl_ops_find("mul_grad");
    for (int i = 1; i <= PER; i++) {
        fl_prof_record(r->p, mul, 1000, 1000 + i + r->id);
        if (i % 2) fl_prof_record(r->p, mul_grad, 0, 10);
    }
    return NULL;
}

static const FlProfEntry *find(const FlProfEntry *e, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(e[i].name, name)) return &e[i];
    return NULL;
}

static void test_threads(void) {
    FlProf *p = fl_prof_new();
    Rec r[THREADS];
    pthread_t th[THREADS];
    fl_prof_record(p, fl_ops_find("mul"), 0, 5); /* off: not counted */
    fl_prof_start(p);
    for (int i = 0; i < THREADS; i++) {
        r[i] = (Rec){p, i};
        pthread_create(&th[i], NULL, recorder, &r[i]);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    fl_prof_stop(p);
    fl_prof_record(p, fl_ops_find("mul"), 0, 5); /* off again */
    FlProfEntry *e;
    size_t n = fl_prof_entries(p, FL_PROF_SORT_TOTAL, &e);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    const FlProfEntry *mul = find(e, n, "mul"), *grad = find(e, n, "mul_grad");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mul);
    CU_ASSERT_PTR_NOT_NULL_FATAL(grad);
    CU_ASSERT_EQUAL(mul->calls, THREADS * PER);
    uint64_t total = 0;
    for (int t = 0; t < THREADS; t++) total += (uint64_t)PER * (PER + 1) / 2 + (uint64_t)PER * (uint64_t)t;
    CU_ASSERT_EQUAL(mul->total, total);
    CU_ASSERT_EQUAL(mul->min, 1);
    CU_ASSERT_EQUAL(mul->max, PER + THREADS - 1);
    CU_ASSERT_EQUAL(grad->calls, THREADS * PER / 2);
    CU_ASSERT_EQUAL(grad->total, 10u * THREADS * PER / 2);
    CU_ASSERT(grad->min == 10 && grad->max == 10);
    CU_ASSERT_PTR_EQUAL(&e[0], mul); /* the larger total first */
    free(e);
    int64_t t0, t1;
    CU_ASSERT(fl_prof_window(p, &t0, &t1) && t0 > 0 && t1 >= t0);
    fl_prof_reset(p);
    CU_ASSERT_EQUAL(fl_prof_entries(p, FL_PROF_SORT_DEFAULT, &e), 0);
    free(e);
    fl_prof_free(p);
}

/* Op types whose figures differ in every key, recorded in a known order. */
static FlProf *three(void) {
    FlProf *p = fl_prof_new();
    fl_prof_start(p);
    /* relu: calls 3, total 30, min 5, max 20, ave 10 (first end: 1st)
     * mul: calls 1, total 50, min 50, max 50, ave 50 (2nd)
     * sgd: calls 2, total 8, min 4, max 4, ave 4 (3rd) */
    fl_prof_record(p, fl_ops_find("relu"), 0, 5);
    fl_prof_record(p, fl_ops_find("mul"), 0, 50);
    fl_prof_record(p, fl_ops_find("relu"), 0, 20);
    fl_prof_record(p, fl_ops_find("sgd"), 0, 4);
    fl_prof_record(p, fl_ops_find("relu"), 0, 5);
    fl_prof_record(p, fl_ops_find("sgd"), 0, 4);
    return p;
}

static void order(FlProf *p, FlProfSort s, const char *a, const char *b, const char *c) {
    FlProfEntry *e;
    size_t n = fl_prof_entries(p, s, &e);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CHECK_STR(e[0].name, a);
    CHECK_STR(e[1].name, b);
    CHECK_STR(e[2].name, c);
    free(e);
}

static void test_sort_keys(void) {
    FlProf *p = three();
    order(p, FL_PROF_SORT_DEFAULT, "relu", "mul", "sgd");
    order(p, FL_PROF_SORT_CALLS, "relu", "sgd", "mul");
    order(p, FL_PROF_SORT_TOTAL, "mul", "relu", "sgd");
    order(p, FL_PROF_SORT_MAX, "mul", "relu", "sgd");
    order(p, FL_PROF_SORT_MIN, "mul", "relu", "sgd");
    order(p, FL_PROF_SORT_AVE, "mul", "relu", "sgd");
    FlProfSort s;
    CU_ASSERT(fl_prof_sort_parse(NULL, &s) && s == FL_PROF_SORT_DEFAULT);
    for (int k = 1; k < FL_PROF_SORT_COUNT; k++)
        CU_ASSERT(fl_prof_sort_parse(fl_prof_sort_name((FlProfSort)k), &s) && s == (FlProfSort)k);
    CU_ASSERT_FALSE(fl_prof_sort_parse("Total", &s));
    CU_ASSERT_FALSE(fl_prof_sort_parse("", &s));
    CU_ASSERT_FALSE(fl_prof_sort_parse("default", &s)); /* Fluid's None is None, not a name */
    fl_prof_free(p);
}

static void test_table(void) {
    FlProf *p = three();
    FlBuf b = {0};
    fl_prof_table(p, FL_PROF_SORT_CALLS, "flrun x.fl", &b);
    CHECK_STR(fl_buf_str(&b),
              "\n------------------------->     Profiling Report     <-------------------------\n\n"
              "Place: CPU\nProcess: flrun x.fl\nTime unit: ms\n"
              "Sorted by number of calls in descending order (the process's threads together)\n\n"
              "Event        Calls       Total       Min.        Max.        Ave.        Ratio.\n"
              "relu         3           3e-05       5e-06       2e-05       1e-05       0.340909\n"
              "sgd          2           8e-06       4e-06       4e-06       4e-06       0.0909091\n"
              "mul          1           5e-05       5e-05       5e-05       5e-05       0.568182\n");
    fl_prof_reset(p);
    b.len = 0;
    fl_prof_table(p, FL_PROF_SORT_DEFAULT, "p", &b);
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&b), "Sorted by event first end time"));
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&b), "(no op ran while the profiler was on)\n"));
    fl_buf_free(&b);
    fl_prof_free(p);
}

/* ---- the executor with a profiler and a trace, run from several threads ---- */

enum { RUNS = 50 };

/* The sum of the "dur" (us, 3 decimals: exact ns) of the trace's op spans named `name`, in ns. */
static uint64_t span_ns(const char *json, const char *name, uint64_t *count) {
    char pat[96];
    snprintf(pat, sizeof pat, "{\"name\":\"%s\",\"cat\":\"op\"", name);
    uint64_t ns = 0;
    *count = 0;
    for (const char *s = json; (s = strstr(s, pat)); s += strlen(pat)) {
        const char *d = strstr(s, "\"dur\":");
        unsigned long long us = 0, frac = 0;
        CU_ASSERT_FATAL(d && sscanf(d, "\"dur\":%llu.%3llu", &us, &frac) == 2);
        ns += us * 1000 + frac;
        ++*count;
    }
    return ns;
}

static void test_exec(void) {
    FlTrace *t = fl_trace_new(100000);
    FlProf *p = fl_prof_new();
    Ct c = {0};
    FlErr e = {{0}};
    c.prog = fl_program_from_bundle_take(ct_compile("profiled.fl", CT_FC_TANH_SRC));
    FlExecutorOptions xo = {.trace = t, .prof = p};
    CU_ASSERT_EQUAL_FATAL(fl_executor_new(c.prog, &xo, &c.ex, &e), FL_OK);
    c.scope = fl_scope_new(NULL);
    CU_ASSERT_EQUAL_FATAL(fl_executor_run_startup(c.ex, c.scope, &e), FL_OK); /* off: not profiled */
    FlProfEntry *ent;
    CU_ASSERT_EQUAL(fl_prof_entries(p, FL_PROF_SORT_DEFAULT, &ent), 0);
    free(ent);
    fl_prof_start(p);
    ct_fc_tanh_threads(&c, THREADS, RUNS);
    fl_prof_stop(p);
    FlBuf b = {0};
    fl_trace_format(t, 0, "test", NULL, fl_trace_origin(t), &b);
    size_t n = fl_prof_entries(p, FL_PROF_SORT_DEFAULT, &ent);
    CU_ASSERT(n >= 3); /* mul, elementwise_add, tanh */
    CHECK_STR(n ? ent[0].name : "", "mul"); /* the first to end */
    for (size_t i = 0; i < n; i++) {
        uint64_t spans;
        uint64_t ns = span_ns(fl_buf_str(&b), ent[i].name, &spans);
        CU_ASSERT_EQUAL(ent[i].calls, (uint64_t)THREADS * RUNS);
        CU_ASSERT_EQUAL(spans, (uint64_t)THREADS * RUNS);
        CU_ASSERT_EQUAL(ent[i].total, ns);
        CU_ASSERT(ent[i].min <= ent[i].max && ent[i].min * ent[i].calls <= ent[i].total);
    }
    free(ent);
    fl_buf_free(&b);
    ct_close(&c);
    fl_prof_free(p);
    fl_trace_free(t);
}

int main(void) {
    static const CtCase cases[] = {CT_TEST(test_threads), CT_TEST(test_sort_keys), CT_TEST(test_table),
                                   CT_TEST(test_exec)};
    return ct_run("prof", cases, (int)FL_ARRAY_LEN(cases));
}
