/* test_trace.c: the timeline recorder (runtime/trace.h) and the executor's op spans with it:
 * threads recording at once keep every event (below the cap) or exactly the cap (above it) and
 * count the rest; the JSON escapes names; the document's framing and its writing; one executor
 * run from several threads at once with a trace records one span per op run, each on its
 * thread's lane, with the op's .fl line. Label `concurrency` (TSan). */
#include <pthread.h>
#include <unistd.h>

#include "tests/runtime/core/ct.h"

#include "runtime/trace.h"

enum { THREADS = 4, PER = 5000 };

typedef struct Rec {
    FlTrace *t;
    int id;
} Rec;

static void *recorder(void *p) {
    Rec *r = p;
    for (int i = 0; i < PER; i++) {
        int64_t t0 = fl_trace_now();
        if (i % 2) fl_trace_span(r->t, "test", "even", t0, t0 + 5, "\"k\":1");
        else {
            char *args = fl_xstrdup("\"k\":2");
            fl_trace_span_take(r->t, "test", "odd", t0, t0 + 5, args);
        }
    }
    return NULL;
}

static size_t count(const char *s, const char *pat) {
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, pat)); p += strlen(pat)) n++;
    return n;
}

/* THREADS threads x PER events each into a recorder of `cap`: what is kept and dropped. */
static void record(size_t cap, size_t *kept, size_t *dropped, size_t *spans, size_t *lanes) {
    FlTrace *t = fl_trace_new(cap);
    Rec r[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        r[i] = (Rec){t, i};
        pthread_create(&th[i], NULL, recorder, &r[i]);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    *kept = fl_trace_count(t);
    *dropped = fl_trace_dropped(t);
    FlBuf b = {0};
    fl_trace_format(t, 7, "proc", NULL, fl_trace_origin(t), &b);
    *spans = count(fl_buf_str(&b), "\"ph\":\"X\"");
    *lanes = count(fl_buf_str(&b), "\"name\":\"thread_name\"");
    CU_ASSERT_EQUAL(count(fl_buf_str(&b), "\"pid\":7,"), *spans + *lanes + 2); /* + process name, sort index */
    fl_buf_free(&b);
    fl_trace_free(t);
}

static void test_threads_below_cap(void) {
    size_t kept, dropped, spans, lanes;
    record(THREADS * PER + 10, &kept, &dropped, &spans, &lanes);
    CU_ASSERT_EQUAL(kept, THREADS * PER);
    CU_ASSERT_EQUAL(dropped, 0);
    CU_ASSERT_EQUAL(spans, THREADS * PER);
    CU_ASSERT_EQUAL(lanes, THREADS);
}

static void test_threads_at_cap(void) {
    size_t kept, dropped, spans, lanes;
    record(1000, &kept, &dropped, &spans, &lanes); /* a chunk boundary inside: 4096 > 1000 */
    CU_ASSERT_EQUAL(kept, 1000);
    CU_ASSERT_EQUAL(dropped, THREADS * PER - 1000);
    CU_ASSERT_EQUAL(spans, 1000);
    record(FL_TRACE_CHUNK + 1, &kept, &dropped, &spans, &lanes); /* a second chunk of one event */
    CU_ASSERT_EQUAL(kept, FL_TRACE_CHUNK + 1);
    CU_ASSERT_EQUAL(spans, FL_TRACE_CHUNK + 1);
    CU_ASSERT_EQUAL(dropped, THREADS * PER - FL_TRACE_CHUNK - 1);
}

/* Events come out in time order, the enclosing span before the spans it holds; times in
 * microseconds from the origin given; flows with their ids; names escaped. */
static void test_format(void) {
    FlTrace *t = fl_trace_new(16);
    int64_t o = fl_trace_origin(t);
    fl_trace_span(t, "op", "inner", o + 2000, o + 2500, NULL);
    fl_trace_span(t, "op", "a \"q\"\nb\\", o + 1000, o + 3000, "\"line\":\"x.fl:1:2\"");
    fl_trace_flow(t, 'f', "grad", (7ull << 32) | 3, o + 2000);
    fl_trace_flow(t, 's', "grad", 5, o + 1000);
    FlBuf b = {0};
    fl_trace_format(t, 3, "rank 3 \"x\"", "clock", o - 500, &b);
    const char *s = fl_buf_str(&b);
    const char *outer = strstr(s, "{\"name\":\"a \\\"q\\\"\\u000ab\\\\\",\"cat\":\"op\",\"ph\":\"X\",\"pid\":3,\"tid\":");
    const char *inner = strstr(s, "\"name\":\"inner\"");
    const char *fl = strstr(s, "\"ph\":\"f\"");
    CU_ASSERT_PTR_NOT_NULL(outer);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, ",\"ts\":1.500,\"dur\":2.000,\"args\":{\"line\":\"x.fl:1:2\"}},\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "\"ts\":2.500,\"dur\":0.500},\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "\"ts\":2.500,\"id\":30064771075,\"bp\":\"e\"},\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "\"ph\":\"s\",\"pid\":3,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "\"args\":{\"name\":\"rank 3 \\\"x\\\"\"}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "\"name\":\"process_labels\",\"ph\":\"M\",\"pid\":3,\"tid\":0,\"args\":{\"labels\":\"clock\"}"));
    CU_ASSERT(outer && inner && fl && outer < inner && inner < fl); /* by time; the longer span first */
    fl_buf_free(&b);
    fl_trace_free(t);
}

/* The document: the events' trailing separator cut, otherData; a path that cannot be written. */
static void test_write(void) {
    char dir[] = "/tmp/fl_trace_XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char path[128], bad[160];
    snprintf(path, sizeof path, "%s/t.json", dir);
    snprintf(bad, sizeof bad, "%s/none/t.json", dir);
    const char *ev = "{\"name\":\"a\",\"ph\":\"X\"},\n{\"name\":\"b\",\"ph\":\"X\"},\n";
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_trace_write(path, ev, strlen(ev), "\"ranks\":1", &e), FL_OK);
    size_t n = 0;
    char *got = fl_read_file(path, &n, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    CHECK_STR(got, "{\"traceEvents\":[\n{\"name\":\"a\",\"ph\":\"X\"},\n{\"name\":\"b\",\"ph\":\"X\"}\n],\n"
                   "\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"ranks\":1}}\n");
    free(got);
    CU_ASSERT_EQUAL(fl_trace_write(bad, "", 0, NULL, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, bad));
    remove(path);
    rmdir(dir);
}

/* ---- the executor with a trace, run from several threads ---- */

enum { RUNS = 50 };

static void test_exec_spans(void) {
    FlTrace *t = fl_trace_new(100000);
    Ct c = {0};
    FlErr e = {{0}};
    c.prog = fl_program_from_bundle_take(ct_compile("traced.fl", CT_FC_TANH_SRC));
    FlExecutorOptions xo = {.trace = t};
    CU_ASSERT_EQUAL_FATAL(fl_executor_new(c.prog, &xo, &c.ex, &e), FL_OK);
    c.scope = fl_scope_new(NULL);
    CU_ASSERT_EQUAL_FATAL(fl_executor_run_startup(c.ex, c.scope, &e), FL_OK);
    size_t startup = fl_trace_count(t);
    CU_ASSERT(startup >= 2); /* the weight's and the bias's initialisers */
    ct_fc_tanh_threads(&c, THREADS, RUNS);
    size_t per_run = (fl_trace_count(t) - startup) / (THREADS * RUNS);
    CU_ASSERT(per_run >= 3); /* mul, elementwise_add, tanh */
    CU_ASSERT_EQUAL(fl_trace_count(t), startup + per_run * THREADS * RUNS);
    FlBuf b = {0};
    fl_trace_format(t, 0, "test", NULL, fl_trace_origin(t), &b);
    const char *s = fl_buf_str(&b);
    CU_ASSERT_EQUAL(count(s, "\"name\":\"mul\",\"cat\":\"op\""), THREADS * RUNS);
    CU_ASSERT_EQUAL(count(s, "\"name\":\"tanh\",\"cat\":\"op\""), THREADS * RUNS);
    CU_ASSERT(count(s, "\"args\":{\"line\":\"traced.fl:3:5\",\"block\":0,\"outputs\":[\"tanh_0.tmp_0\"]}") ==
              THREADS * RUNS);
    CU_ASSERT(count(s, "\"name\":\"thread_name\"") >= THREADS + 1); /* each runner, and main's startup */
    fl_buf_free(&b);
    ct_close(&c);
    fl_trace_free(t);
}

int main(void) {
    static const CtCase cases[] = {CT_TEST(test_threads_below_cap), CT_TEST(test_threads_at_cap), CT_TEST(test_format),
                                   CT_TEST(test_write), CT_TEST(test_exec_spans)};
    return ct_run("trace", cases, (int)FL_ARRAY_LEN(cases));
}
