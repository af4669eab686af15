/* st.h: helpers shared by the scheduler and channel tests. Header-only, included once per test.
 *
 * CUnit's assertions are not thread-safe and goroutines run on worker threads, so checks inside
 * goroutines go through ST_CHECK, which counts failures atomically and prints them; the runner
 * asserts the count on the test thread afterwards. */
#ifndef FL_ST_H
#define FL_ST_H

#define _GNU_SOURCE
#include <CUnit/Basic.h>
#include "tests/cunit.h"
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/sched/chan.h"
#include "runtime/sched/sched.h"

static _Atomic int st_failures;
static const char *_Atomic st_case = "";

#define ST_CHECK(c)                                                                          \
    do {                                                                                     \
        if (!(c)) {                                                                          \
            atomic_fetch_add(&st_failures, 1);                                               \
            fprintf(stderr, "\n%s:%d: [%s] check failed: %s\n", __FILE__, __LINE__,           \
                    atomic_load(&st_case), #c);                                              \
        }                                                                                    \
    } while (0)

/* The call must succeed (FlErr named ST_E in scope). */
#define ST_OK(call)                                                                          \
    do {                                                                                     \
        FlErr st_e_ = {{0}};                                                                 \
        FlErr *ST_E = &st_e_;                                                                \
        (void)ST_E;                                                                          \
        if ((call) != FL_OK) {                                                               \
            atomic_fetch_add(&st_failures, 1);                                               \
            fprintf(stderr, "\n%s:%d: [%s] %s failed: %s\n", __FILE__, __LINE__,              \
                    atomic_load(&st_case), #call, st_e_.msg);                                \
        }                                                                                    \
    } while (0)

static inline double st_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* int64 channels */
static inline FlChan *st_chan(size_t cap) {
    FlErr e;
    FlChan *c = fl_chan_new(sizeof(int64_t), cap, NULL, NULL, &e);
    if (!c) {
        fprintf(stderr, "fl_chan_new: %s\n", e.msg);
        abort();
    }
    return c;
}
static inline void st_send(FlChan *c, int64_t v) {
    FlErr e;
    if (fl_chan_send(c, &v, &e) != FL_OK) {
        atomic_fetch_add(&st_failures, 1);
        fprintf(stderr, "\n[%s] send failed: %s\n", atomic_load(&st_case), e.msg);
    }
}
static inline int64_t st_recv(FlChan *c, bool *ok) {
    FlErr e;
    int64_t v = -1;
    bool okv = false;
    if (fl_chan_recv(c, &v, &okv, &e) != FL_OK) {
        atomic_fetch_add(&st_failures, 1);
        fprintf(stderr, "\n[%s] recv failed: %s\n", atomic_load(&st_case), e.msg);
    }
    if (ok) *ok = okv;
    return v;
}

static inline FlSched *st_sched(int nprocs) {
    FlErr e;
    FlSched *s = fl_sched_new(&(FlSchedConfig){.nprocs = nprocs}, &e);
    if (!s) {
        fprintf(stderr, "fl_sched_new: %s\n", e.msg);
        abort();
    }
    return s;
}
static inline void st_go(FlSched *s, void (*fn)(void *), void *arg, const char *label) {
    FlErr e;
    if (fl_go(s, fn, arg, label, &e) != FL_OK) {
        fprintf(stderr, "fl_go: %s\n", e.msg);
        abort();
    }
}

/* A test's table entry and runner. */
typedef FlTestCase StCase;
#define ST_TEST(f) {#f, f}

static inline int st_run(const char *suite_name, const StCase *cases, int n) {
    return fl_test_run(suite_name, NULL, NULL, cases, (size_t)n);
}

#endif
