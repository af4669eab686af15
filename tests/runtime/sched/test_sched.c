/* test_sched.c: the goroutine scheduler: deadlock detection (report text, promptness), blocking
 * regions (never reported; the processor is handed off), leaked-goroutine listing and shutdown,
 * plain threads, spawning and joining, groups of iterations (fl_go_each), stacks, yield. */
#include <pthread.h>

#include "tests/runtime/sched/st.h"

typedef struct Dl {
    char report[4096];
    double t;
    _Atomic int calls;
} Dl;

static void on_deadlock(void *ud, const char *report) {
    Dl *d = ud;
    snprintf(d->report, sizeof d->report, "%s", report);
    d->t = st_now();
    atomic_fetch_add(&d->calls, 1);
}

static FlSched *dl_sched(Dl *d, int nprocs) {
    FlErr e;
    memset(d, 0, sizeof *d);
    FlSched *s = fl_sched_new(
        &(FlSchedConfig){.nprocs = nprocs, .on_deadlock = on_deadlock, .ud = d}, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    return s;
}

/* A scheduler of 2 processors reporting to d, the calling thread attached as label. */
static FlSched *dl_main(Dl *d, const char *label) {
    FlSched *s = dl_sched(d, 2);
    fl_sched_attach(s, label);
    return s;
}

#define DEADLOCK "deadlock: all goroutines are blocked"

/* The report must be exact, the callback called once, within 2 s of t0. */
static void check_report(Dl *d, FlSched *s, double t0, const char *expect) {
    CU_ASSERT_EQUAL(atomic_load(&d->calls), 1);
    if (strcmp(d->report, expect) != 0) fprintf(stderr, "\nreport:\n%s\nexpected:\n%s\n", d->report, expect);
    CU_ASSERT_STRING_EQUAL(d->report, expect);
    CU_ASSERT_PTR_NOT_NULL(fl_sched_deadlock_report(s));
    if (fl_sched_deadlock_report(s)) CU_ASSERT_STRING_EQUAL(fl_sched_deadlock_report(s), expect);
    CU_ASSERT(d->t - t0 < 2.0);
}

typedef struct Link {
    FlChan *in, *out;
} Link;
/* receive from in, then send to out; stops at the first error (deadlock) */
static void relay(void *p) {
    Link *l = p;
    FlErr e;
    int64_t v;
    bool ok;
    if (fl_chan_recv(l->in, &v, &ok, &e) != FL_OK) return;
    if (fl_chan_send(l->out, &v, &e) != FL_OK) return;
}

static void test_deadlock_main_alone(void) {
    /* Go: func main() { c := make(chan int); <-c } */
    Dl d;
    FlSched *s = dl_main(&d, "main.fl:3");
    FlChan *c = st_chan(0);
    double t0 = st_now();
    FlErr e = {{0}};
    int64_t v;
    CU_ASSERT_EQUAL(fl_chan_recv(c, &v, NULL, &e), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, DEADLOCK);
    check_report(&d, s, t0, DEADLOCK "\n  goroutine 1 (main.fl:3): chan receive\n");
    /* once deadlocked, an operation that would block fails at once */
    CU_ASSERT_EQUAL(fl_chan_recv(c, &v, NULL, &e), FL_ERROR);
    fl_sched_detach(s);
    fl_chan_release(c);
    fl_sched_free(s);
}

static void test_deadlock_main_and_goroutine(void) {
    /* main waits on a, the goroutine waits on b before it would send on a */
    Dl d;
    FlSched *s = dl_main(&d, "main.fl:3");
    Link l = {st_chan(0), st_chan(0)};
    st_go(s, relay, &l, "worker.fl:7");
    double t0 = st_now();
    FlErr e = {{0}};
    int64_t v;
    CU_ASSERT_EQUAL(fl_chan_recv(l.out, &v, NULL, &e), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, DEADLOCK);
    check_report(&d, s, t0,
                 DEADLOCK "\n  goroutine 1 (main.fl:3): chan receive\n"
                          "  goroutine 2 (worker.fl:7): chan receive\n");
    fl_sched_detach(s);
    /* after a deadlock, wait still waits for the woken worker to unwind, and reports it */
    CU_ASSERT_EQUAL(fl_sched_wait(s, &e), FL_ERROR);
    CU_ASSERT_EQUAL(fl_sched_stats(s).goroutines, 0);
    fl_chan_release(l.in);
    fl_chan_release(l.out);
    fl_sched_free(s);
}

static void test_deadlock_cycle_of_three(void) {
    /* g1: <-a; b <- v   g2: <-b; c <- v   g3: <-c; a <- v, and main waits for them */
    Dl d;
    FlSched *s = dl_sched(&d, 2);
    FlChan *a = st_chan(0), *b = st_chan(0), *c = st_chan(0);
    Link l1 = {a, b}, l2 = {b, c}, l3 = {c, a};
    st_go(s, relay, &l1, "cycle.fl:1");
    st_go(s, relay, &l2, "cycle.fl:2");
    st_go(s, relay, &l3, "cycle.fl:3");
    double t0 = st_now();
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_sched_wait(s, &e), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, DEADLOCK);
    check_report(&d, s, t0,
                 DEADLOCK "\n  goroutine 1 (cycle.fl:1): chan receive\n"
                          "  goroutine 2 (cycle.fl:2): chan receive\n"
                          "  goroutine 3 (cycle.fl:3): chan receive\n"
                          "  goroutine 4 (fl_sched_wait): wait for goroutines\n");
    fl_sched_free(s);
    fl_chan_release(a);
    fl_chan_release(b);
    fl_chan_release(c);
}

static void test_deadlock_full_buffer(void) {
    /* c := make(chan int, 1); c <- 1; c <- 2 */
    Dl d;
    FlSched *s = dl_main(&d, "main.fl:5");
    FlChan *c = st_chan(1);
    st_send(c, 1);
    double t0 = st_now();
    FlErr e = {{0}};
    int64_t v = 2;
    CU_ASSERT_EQUAL(fl_chan_send(c, &v, &e), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, DEADLOCK);
    check_report(&d, s, t0, DEADLOCK "\n  goroutine 1 (main.fl:5): chan send\n");
    CU_ASSERT_EQUAL(fl_chan_len(c), 1);
    fl_sched_detach(s);
    fl_chan_release(c);
    fl_sched_free(s);
}

static void test_deadlock_select_no_ready_case(void) {
    /* select { case <-a: case b <- 1: } with nobody on a or b, no default */
    Dl d;
    FlSched *s = dl_main(&d, "main.fl:9");
    FlChan *a = st_chan(0), *b = st_chan(0);
    int64_t v = 1, w;
    FlSelectCase cs[] = {{.chan = a, .dir = FL_SELECT_RECV, .val = &w},
                         {.chan = b, .dir = FL_SELECT_SEND, .val = &v}};
    double t0 = st_now();
    FlErr e = {{0}};
    int chosen;
    CU_ASSERT_EQUAL(fl_select(cs, 2, false, &chosen, &e), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, DEADLOCK);
    check_report(&d, s, t0, DEADLOCK "\n  goroutine 1 (main.fl:9): select\n");
    fl_sched_detach(s);
    fl_chan_release(a);
    fl_chan_release(b);
    fl_sched_free(s);
}

static void empty_select(void *p) {
    FlErr e;
    int chosen;
    *(FlStatus *)p = fl_select(NULL, 0, false, &chosen, &e);
}
static void nil_recv(void *p) {
    FlErr e;
    *(FlStatus *)p = fl_chan_recv(NULL, NULL, NULL, &e);
}
static void test_deadlock_empty_select_and_nil_channel(void) {
    /* go func() { select {} }(); go func() { <-nilchan }(); main waits for them */
    Dl d;
    FlSched *s = dl_sched(&d, 2);
    FlStatus st1 = FL_OK, st2 = FL_OK;
    st_go(s, empty_select, &st1, "idle.fl:2");
    st_go(s, nil_recv, &st2, "nil.fl:4");
    double t0 = st_now();
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_sched_wait(s, &e), FL_ERROR);
    check_report(&d, s, t0,
                 DEADLOCK "\n  goroutine 1 (idle.fl:2): select (no cases)\n"
                          "  goroutine 2 (nil.fl:4): chan receive (nil chan)\n"
                          "  goroutine 3 (fl_sched_wait): wait for goroutines\n");
    fl_sched_free(s);
    CU_ASSERT_EQUAL(st1, FL_ERROR);
    CU_ASSERT_EQUAL(st2, FL_ERROR);
}

static void just_return(void *p) { (void)p; }
static void test_deadlock_after_last_goroutine_exits(void) {
    /* main waits for a value from a goroutine that returns without sending */
    Dl d;
    FlSched *s = dl_main(&d, "main.fl:1");
    FlChan *c = st_chan(0);
    st_go(s, just_return, NULL, "quit.fl:2");
    double t0 = st_now();
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_chan_recv(c, NULL, NULL, &e), FL_ERROR);
    check_report(&d, s, t0, DEADLOCK "\n  goroutine 1 (main.fl:1): chan receive\n");
    fl_sched_detach(s);
    fl_chan_release(c);
    fl_sched_free(s);
}

/* ---- blocking regions ---- */

typedef struct Mpi {
    FlChan *c;
    atomic_int listed; /* main has checked the listing: the region may end after ms */
    int ms;
} Mpi;
static void slow_mpi_recv(void *p) {
    Mpi *m = p;
    fl_sched_block_begin(); /* MPI_Recv waiting for a computing peer */
    for (int i = 0; i < 30000 && !atomic_load(&m->listed); i++) /* at most 30 s */
        usleep(1000);
    usleep((useconds_t)m->ms * 1000);
    fl_sched_block_end();
    st_send(m->c, 77);
}
static void waiter(void *p) { st_recv(p, NULL); }

static void test_blocking_region_not_reported(void) {
    Dl d;
    FlSched *s = dl_main(&d, "main.fl:1");
    FlChan *c = st_chan(0), *c2 = st_chan(0);
    Mpi m = {c, 0, 300};
    st_go(s, slow_mpi_recv, &m, "mpi.fl:4");
    st_go(s, waiter, c2, "w.fl:9");
    /* Wait until both goroutines have reached their states (a fixed 50 ms was too short under
     * TSan on a loaded machine); the MPI goroutine stays in its region until main has looked. */
    const char *want = "  goroutine 2 (mpi.fl:4): in blocking region\n"
                       "  goroutine 3 (w.fl:9): chan receive\n";
    FlBuf b = {0};
    double t0 = st_now();
    for (;;) {
        fl_buf_free(&b);
        b = (FlBuf){0};
        fl_sched_block_begin();
        usleep(10000);
        fl_sched_block_end();
        if (fl_sched_list(s, &b) == 2 && strcmp(fl_buf_str(&b), want) == 0)
            break;
        if (st_now() - t0 > 20.0)
            break;
    }
    CU_ASSERT_STRING_EQUAL(fl_buf_str(&b), want);
    atomic_store(&m.listed, 1);
    fl_buf_free(&b);
    /* main and w wait on channels; the MPI goroutine is in its region: not a deadlock */
    CU_ASSERT_EQUAL(st_recv(c, NULL), 77);
    st_send(c2, 1);
    fl_sched_detach(s);
    FlErr e;
    CU_ASSERT_EQUAL(fl_sched_wait(s, &e), FL_OK);
    CU_ASSERT_EQUAL(atomic_load(&d.calls), 0);
    CU_ASSERT_PTR_NULL(fl_sched_deadlock_report(s));
    fl_sched_free(s);
    fl_chan_release(c);
    fl_chan_release(c2);
}

typedef struct Hand {
    _Atomic int flag;
    _Atomic int saw;
} Hand;
static void region_waits_for_flag(void *p) {
    Hand *h = p;
    fl_sched_block_begin();
    for (int i = 0; i < 5000 && !atomic_load(&h->flag); i++) usleep(1000);
    fl_sched_block_end();
    atomic_store(&h->saw, atomic_load(&h->flag));
}
static void set_flag(void *p) { atomic_store(&((Hand *)p)->flag, 1); }
static void test_blocking_region_hands_off_processor(void) {
    /* one processor: while a goroutine blocks in a region, another goroutine must still run */
    FlSched *s = st_sched(1);
    Hand h = {0, 0};
    st_go(s, region_waits_for_flag, &h, "a.fl:1");
    usleep(20000);
    st_go(s, set_flag, &h, "b.fl:1");
    FlErr e;
    CU_ASSERT_EQUAL(fl_sched_wait(s, &e), FL_OK);
    CU_ASSERT_EQUAL(atomic_load(&h.saw), 1);
    fl_sched_free(s);
}

/* ---- leaks and shutdown ---- */

static _Atomic int abandoned;
static void leak_recv(void *p) {
    FlErr e = {{0}};
    if (fl_chan_recv(p, NULL, NULL, &e) == FL_ERROR &&
        strcmp(e.msg, "goroutine abandoned: the scheduler is shutting down") == 0)
        atomic_fetch_add(&abandoned, 1);
}
static void test_leaked_goroutines_listed_and_unwound(void) {
    Dl d;
    FlSched *s = dl_main(&d, "main.fl:1");
    FlChan *c = st_chan(0);
    st_go(s, leak_recv, c, "leak.fl:5");
    st_go(s, leak_recv, c, "leak.fl:6");
    fl_sched_block_begin();
    usleep(30000);
    fl_sched_block_end();
    /* main ends: the leaked goroutines are listed (Go just exits) */
    FlBuf b = {0};
    CU_ASSERT_EQUAL(fl_sched_list(s, &b), 2);
    CU_ASSERT_STRING_EQUAL(fl_buf_str(&b), "  goroutine 2 (leak.fl:5): chan receive\n"
                                           "  goroutine 3 (leak.fl:6): chan receive\n");
    fl_buf_free(&b);
    fl_sched_detach(s); /* no attached thread left: a leak, not a deadlock */
    CU_ASSERT_EQUAL(atomic_load(&d.calls), 0);
    atomic_store(&abandoned, 0);
    fl_sched_free(s); /* wakes them with an error; they unwind */
    CU_ASSERT_EQUAL(atomic_load(&abandoned), 2);
    fl_chan_release(c);
}

/* fl_sched_sleep: a goroutine that sleeps is active (no deadlock report while main waits on it),
 * the sleep lasts its seconds, and shutdown ends a long one at once with the abort error */
static _Atomic int slept_ok;
static void sleeper(void *p) {
    FlErr e = {{0}};
    FlStatus st = fl_sched_sleep(*(double *)p, &e);
    if (st == FL_OK) atomic_fetch_add(&slept_ok, 1);
    else if (strcmp(e.msg, "goroutine abandoned: the scheduler is shutting down") == 0) atomic_fetch_add(&abandoned, 1);
}
static void test_sleep_ends_at_shutdown(void) {
    Dl d;
    FlSched *s = dl_sched(&d, 1);
    static double short_s = 0.02, long_s = 30.0;
    atomic_store(&slept_ok, 0);
    atomic_store(&abandoned, 0);
    double t0 = st_now();
    st_go(s, sleeper, &short_s, "sleep.fl:1");
    FlErr e;
    CU_ASSERT_EQUAL(fl_sched_wait(s, &e), FL_OK); /* waiting on a sleeper is no deadlock */
    CU_ASSERT(st_now() - t0 >= 0.02);
    CU_ASSERT_EQUAL(atomic_load(&slept_ok), 1);
    st_go(s, sleeper, &long_s, "sleep.fl:2");
    usleep(20000);
    t0 = st_now();
    fl_sched_free(s); /* must not wait the 30 s */
    CU_ASSERT(st_now() - t0 < 5.0);
    CU_ASSERT_EQUAL(atomic_load(&abandoned), 1);
    CU_ASSERT_EQUAL(atomic_load(&d.calls), 0);
}

typedef struct LSieve {
    FlChan *in, *out;
    int64_t prime;
} LSieve;
static void lgenerate(void *p) {
    LSieve *sv = p;
    FlErr e;
    for (int64_t i = 2; fl_chan_send(sv->out, &i, &e) == FL_OK; i++) {
    }
}
static void lfilter(void *p) {
    LSieve *sv = p;
    FlErr e;
    int64_t i;
    bool ok;
    while (fl_chan_recv(sv->in, &i, &ok, &e) == FL_OK)
        if (i % sv->prime != 0 && fl_chan_send(sv->out, &i, &e) != FL_OK) break;
}
static void test_prime_sieve_verbatim_leaks(void) {
    /* Go's sieve as written in the Go tour leaves its 101 goroutines blocked when main ends */
    enum { N = 100 };
    Dl d;
    FlSched *s = dl_main(&d, "sieve.fl:1");
    FlChan *ch[N + 1];
    LSieve sv[N + 1];
    ch[0] = st_chan(0);
    sv[0] = (LSieve){NULL, ch[0], 0};
    st_go(s, lgenerate, &sv[0], "sieve.fl:3");
    int64_t last = 0;
    for (int i = 0; i < N; i++) {
        last = st_recv(ch[i], NULL);
        ch[i + 1] = st_chan(0);
        sv[i + 1] = (LSieve){ch[i], ch[i + 1], last};
        st_go(s, lfilter, &sv[i + 1], "sieve.fl:8");
    }
    CU_ASSERT_EQUAL(last, 541);
    fl_sched_block_begin();
    usleep(20000);
    fl_sched_block_end();
    FlBuf b = {0};
    CU_ASSERT_EQUAL(fl_sched_list(s, &b), N + 1);
    fl_buf_free(&b);
    fl_sched_detach(s);
    fl_sched_free(s);
    CU_ASSERT_EQUAL(atomic_load(&d.calls), 0);
    for (int i = 0; i <= N; i++) fl_chan_release(ch[i]);
}

/* ---- plain threads, spawning, stacks, yield ---- */

static void echo(void *p) {
    FlChan **c = p;
    for (;;) {
        bool ok;
        int64_t v = st_recv(c[0], &ok);
        if (!ok) break;
        st_send(c[1], v * 2);
    }
}
static void test_unattached_thread_talks_to_goroutine(void) {
    /* the test thread is not attached: its blocking ops block it (spin, then futex) */
    FlSched *s = st_sched(2);
    FlChan *c[2] = {st_chan(0), st_chan(0)};
    st_go(s, echo, c, "echo.fl:1");
    for (int64_t i = 0; i < 3000; i++) {
        st_send(c[0], i);
        CU_ASSERT_EQUAL(st_recv(c[1], NULL), 2 * i);
    }
    FlErr e;
    CU_ASSERT_EQUAL(fl_chan_close(c[0], &e), FL_OK);
    CU_ASSERT_EQUAL(fl_sched_wait(s, &e), FL_OK);
    fl_sched_free(s);
    fl_chan_release(c[0]);
    fl_chan_release(c[1]);
}

static void count_id(void *p) {
    ST_CHECK(fl_go_id() > 0);
    atomic_fetch_add((_Atomic int64_t *)p, 1);
}
static void test_spawn_10000_and_wait(void) {
    FlSched *s = st_sched(2);
    _Atomic int64_t sum = 0;
    for (int round = 0; round < 3; round++) {
        atomic_store(&sum, 0);
        for (int i = 0; i < 10000; i++) st_go(s, count_id, &sum, "spawn.fl:1");
        FlErr e;
        CU_ASSERT_EQUAL(fl_sched_wait(s, &e), FL_OK);
        CU_ASSERT_EQUAL(atomic_load(&sum), 10000);
    }
    FlSchedStats st = fl_sched_stats(s);
    CU_ASSERT_EQUAL(st.goroutines, 0);
    CU_ASSERT(st.stacks <= 10000); /* stacks are reused */
    CU_ASSERT(st.threads >= 1);
    CU_ASSERT_EQUAL(fl_go_id(), 0);
    fl_sched_free(s);
}

/* ---- fl_go_each: iterations are goroutines (Go's `for i := range n { go ... }` + WaitGroup) ---- */

typedef struct Meet {
    FlChan *c;    /* unbuffered: iteration 0 sends, iteration 1 receives */
    int64_t got;
} Meet;
static void meet_iter(void *p, int i) {
    Meet *m = p;
    if (i == 0) st_send(m->c, 42);
    else m->got = st_recv(m->c, NULL);
}
typedef struct MeetRun {
    FlSched *s;
    Meet m;
    FlStatus st;
} MeetRun;
static void meet_from_goroutine(void *p) {
    MeetRun *r = p;
    FlErr e;
    r->st = fl_go_each(r->s, 2, meet_iter, &r->m, "meet.fl:2", &e);
}
static void test_each_iterations_meet(void) {
    /* two iterations meet on an unbuffered channel, with 1, 2 and 4 processors, waited for by an
     * attached thread, a plain thread and a goroutine */
    for (int nprocs = 1; nprocs <= 4; nprocs *= 2) {
        for (int caller = 0; caller < 3; caller++) {
            Dl d;
            FlSched *s = dl_sched(&d, nprocs);
            MeetRun r = {s, {st_chan(0), -1}, FL_ERROR};
            FlErr e = {{0}};
            if (caller == 0) fl_sched_attach(s, "meet.fl:1");
            if (caller == 2) {
                st_go(s, meet_from_goroutine, &r, "meet.fl:1");
                CU_ASSERT_EQUAL(fl_sched_wait(s, &e), FL_OK);
            } else {
                r.st = fl_go_each(s, 2, meet_iter, &r.m, "meet.fl:2", &e);
            }
            if (caller == 0) fl_sched_detach(s);
            CU_ASSERT_EQUAL(r.st, FL_OK);
            CU_ASSERT_EQUAL(r.m.got, 42);
            CU_ASSERT_EQUAL(atomic_load(&d.calls), 0);
            fl_sched_free(s);
            fl_chan_release(r.m.c);
        }
    }
}

typedef struct Gate {
    FlChan *gate;
    _Atomic int passed;
    int n;
} Gate;
static void gate_iter(void *p, int i) {
    Gate *g = p;
    if (i == g->n - 1) ST_OK(fl_chan_close(g->gate, ST_E)); /* the last to start opens it */
    else st_recv(g->gate, NULL);
    atomic_fetch_add(&g->passed, 1);
}
static void test_each_all_blocked_at_once(void) {
    /* 2000 iterations on 2 processors are all blocked at once before the last one starts */
    FlSched *s = st_sched(2);
    fl_sched_attach(s, "gate.fl:1");
    Gate g = {st_chan(0), 0, 2000};
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_go_each(s, g.n, gate_iter, &g, "gate.fl:2", &e), FL_OK);
    CU_ASSERT_EQUAL(atomic_load(&g.passed), g.n);
    fl_sched_detach(s);
    fl_sched_free(s);
    fl_chan_release(g.gate);
}

typedef struct Many {
    _Atomic int64_t sum;
    _Atomic int hits[100000];
} Many;
static void many_iter(void *p, int i) {
    Many *m = p;
    atomic_fetch_add(&m->sum, i);
    atomic_fetch_add(&m->hits[i], 1);
}
static void test_each_100000_bounded_stacks(void) {
    /* every index exactly once; iterations that never block need about one stack per processor */
    FlSched *s = st_sched(2);
    Many *m = calloc(1, sizeof *m);
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_go_each(s, 100000, many_iter, m, "many.fl:1", &e), FL_OK);
    CU_ASSERT_EQUAL(atomic_load(&m->sum), (int64_t)99999 * 100000 / 2);
    int bad = 0;
    for (int i = 0; i < 100000; i++) bad += atomic_load(&m->hits[i]) != 1;
    CU_ASSERT_EQUAL(bad, 0);
    FlSchedStats st = fl_sched_stats(s);
    CU_ASSERT(st.stacks <= 64);
    if (st.stacks > 64) fprintf(stderr, "\n%lld stacks for 100000 iterations\n", (long long)st.stacks);
    fl_sched_free(s);
    free(m);
}

typedef struct Never {
    FlChan *c;
    _Atomic int returned;
} Never;
static void never_iter(void *p, int i) {
    (void)i;
    Never *nv = p;
    FlErr e;
    int64_t v;
    if (fl_chan_recv(nv->c, &v, NULL, &e) == FL_OK) atomic_fetch_add(&st_failures, 1);
    atomic_fetch_add(&nv->returned, 1);
}
static void test_each_deadlock_reported(void) {
    /* both iterations wait on a channel nobody sends on, main waits for them: each is named */
    Dl d;
    FlSched *s = dl_main(&d, "pf.fl:4");
    Never nv = {st_chan(0), 0};
    double t0 = st_now();
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_go_each(s, 2, never_iter, &nv, "pf.fl:5", &e), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, DEADLOCK);
    check_report(&d, s, t0,
                 DEADLOCK "\n  goroutine 1 (pf.fl:4): wait for iterations\n"
                          "  goroutine 2 (pf.fl:5): chan receive\n"
                          "  goroutine 3 (pf.fl:5): chan receive\n");
    CU_ASSERT_EQUAL(atomic_load(&nv.returned), 2); /* both unwound before the call returned */
    fl_sched_detach(s);
    CU_ASSERT_EQUAL(fl_sched_wait(s, &e), FL_ERROR); /* and their goroutines exit */
    CU_ASSERT_EQUAL(fl_sched_stats(s).goroutines, 0);
    fl_sched_free(s);
    fl_chan_release(nv.c);
}

typedef struct Nest {
    FlSched *s;
    _Atomic int leaves;
} Nest;
static void leaf_iter(void *p, int i) {
    (void)i;
    atomic_fetch_add(&((Nest *)p)->leaves, 1);
    fl_yield();
}
static void outer_iter(void *p, int i) {
    (void)i;
    Nest *n = p;
    ST_OK(fl_go_each(n->s, 50, leaf_iter, n, "nest.fl:2", ST_E));
}
static void test_each_nested(void) {
    /* iterations that wait for iterations of their own, on one processor */
    FlSched *s = st_sched(1);
    fl_sched_attach(s, "nest.fl:1");
    Nest n = {s, 0};
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_go_each(s, 20, outer_iter, &n, "nest.fl:1", &e), FL_OK);
    CU_ASSERT_EQUAL(atomic_load(&n.leaves), 1000);
    fl_sched_detach(s);
    fl_sched_free(s);
}

static int64_t deep(int n) {
    volatile char pad[1000];
    pad[0] = (char)n;
    pad[999] = (char)n;
    if (n == 0) return pad[0];
    return deep(n - 1) + pad[999];
}
static void use_stack(void *p) { *(int64_t *)p = deep(600); }
static void test_big_stack(void) {
    /* a goroutine may use most of its (configurable) stack: 600 KB of frames in 1 MiB */
    FlErr e;
    FlSched *s = fl_sched_new(&(FlSchedConfig){.nprocs = 2, .stack_size = 1 << 20}, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    int64_t r = -1;
    st_go(s, use_stack, &r, "deep.fl:1");
    CU_ASSERT_EQUAL(fl_sched_wait(s, &e), FL_OK);
    CU_ASSERT(r >= 0);
    fl_sched_free(s);
}

typedef struct Yl {
    char log[64];
    _Atomic int n;
    char me;
} Yl;
typedef struct YArg {
    Yl *y;
    char me;
    FlChan *gate;
} YArg;
static void yielder(void *p) {
    YArg *a = p;
    st_recv(a->gate, NULL); /* both start together */
    for (int i = 0; i < 10; i++) {
        int k = atomic_fetch_add(&a->y->n, 1);
        if (k < 63) a->y->log[k] = a->me;
        fl_yield();
    }
}
static void open_gate(void *p) {
    FlErr e;
    ST_OK(fl_chan_close(p, &e));
}
static void test_yield_alternates(void) {
    /* one processor; a goroutine opens the gate, so both yielders are readied on that processor */
    FlSched *s = st_sched(1);
    Yl y = {{0}, 0, 0};
    FlChan *gate = st_chan(0);
    YArg a = {&y, 'a', gate}, b = {&y, 'b', gate};
    st_go(s, yielder, &a, "y.fl:1");
    st_go(s, yielder, &b, "y.fl:2");
    usleep(20000);
    st_go(s, open_gate, gate, "y.fl:3");
    FlErr e;
    CU_ASSERT_EQUAL(fl_sched_wait(s, &e), FL_OK);
    CU_ASSERT_EQUAL(atomic_load(&y.n), 20);
    int run = 1, maxrun = 1;
    for (int i = 1; i < 20; i++) {
        run = y.log[i] == y.log[i - 1] ? run + 1 : 1;
        if (run > maxrun) maxrun = run;
    }
    CU_ASSERT(maxrun <= 2);
    if (maxrun > 2) fprintf(stderr, "\nyield log: %.20s\n", y.log);
    fl_sched_free(s);
    fl_chan_release(gate);
}

static void test_errors(void) {
    FlErr e = {{0}};
    CU_ASSERT_PTR_NULL(fl_sched_new(&(FlSchedConfig){.nprocs = 5000}, &e));
    CU_ASSERT_STRING_EQUAL(e.msg, "too many processors: 5000 (at most 1024)");
    CU_ASSERT_PTR_NULL(fl_chan_new(1024, SIZE_MAX / 512, NULL, NULL, &e));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "too large"));
    fl_sched_free(NULL);
    fl_chan_release(NULL);
}

int main(void) {
    static const StCase tests[] = {
        ST_TEST(test_deadlock_main_alone),
        ST_TEST(test_deadlock_main_and_goroutine),
        ST_TEST(test_deadlock_cycle_of_three),
        ST_TEST(test_deadlock_full_buffer),
        ST_TEST(test_deadlock_select_no_ready_case),
        ST_TEST(test_deadlock_empty_select_and_nil_channel),
        ST_TEST(test_deadlock_after_last_goroutine_exits),
        ST_TEST(test_blocking_region_not_reported),
        ST_TEST(test_blocking_region_hands_off_processor),
        ST_TEST(test_leaked_goroutines_listed_and_unwound),
        ST_TEST(test_sleep_ends_at_shutdown),
        ST_TEST(test_prime_sieve_verbatim_leaks),
        ST_TEST(test_unattached_thread_talks_to_goroutine),
        ST_TEST(test_spawn_10000_and_wait),
        ST_TEST(test_each_iterations_meet),
        ST_TEST(test_each_all_blocked_at_once),
        ST_TEST(test_each_100000_bounded_stacks),
        ST_TEST(test_each_deadlock_reported),
        ST_TEST(test_each_nested),
        ST_TEST(test_big_stack),
        ST_TEST(test_yield_alternates),
        ST_TEST(test_errors),
    };
    int rc = st_run("goroutine scheduler", tests, (int)FL_ARRAY_LEN(tests));
    return rc || atomic_load(&st_failures) ? 1 : 0;
}
