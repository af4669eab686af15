/* test_chan.c: channels and select against Go's semantics, table-driven.
 *
 * Every row of CASES names a case, states what Go does (printed when the case fails), and runs
 * twice: as the body of a "main" goroutine (the scheduler waits for it), and on the test thread
 * attached to the scheduler (the executor's calling thread runs channel ops that way). Each run
 * uses a fresh scheduler with 2 processors; a case joins every goroutine it starts. */
#include <pthread.h>

#include "tests/runtime/sched/st.h"

typedef struct T {
    FlSched *s;
} T;

/* ---- helpers ---- */

static void go(T *t, void (*fn)(void *), void *arg) { st_go(t->s, fn, arg, "test.fl:1"); }

/* Sleeps inside a blocking region: other goroutines keep running meanwhile. */
static void nap(int ms) {
    fl_sched_block_begin();
    usleep((useconds_t)ms * 1000);
    fl_sched_block_end();
}

/* A goroutine body with its arguments. */
typedef struct Job {
    FlChan *c, *d, *done;
    int64_t a, b;
    _Atomic int64_t *acc;
    _Atomic int *flag;
    FlStatus st;
    char msg[1024];
    bool ok;
    int64_t got;
} Job;

static void finish(Job *j) {
    if (j->done) st_send(j->done, 1);
}
static void join(FlChan *done, int n) {
    for (int i = 0; i < n; i++) st_recv(done, NULL);
}

static void job_send(void *p) { /* sends a; sets flag after the send completed */
    Job *j = p;
    st_send(j->c, j->a);
    if (j->flag) atomic_store(j->flag, 1);
    finish(j);
}
static void job_send_n(void *p) { /* sends a..b-1, then sets flag */
    Job *j = p;
    for (int64_t i = j->a; i < j->b; i++) st_send(j->c, i);
    if (j->flag) atomic_store(j->flag, 1);
    finish(j);
}
static void job_recv(void *p) { /* one receive, result in got/ok */
    Job *j = p;
    j->got = st_recv(j->c, &j->ok);
    finish(j);
}
static void job_try_send(void *p) { /* one send that may fail: status and message kept */
    Job *j = p;
    FlErr e = {{0}};
    int64_t v = j->a;
    j->st = fl_chan_send(j->c, &v, &e);
    snprintf(j->msg, sizeof j->msg, "%s", j->st == FL_OK ? "" : e.msg);
    finish(j);
}
static void job_close_later(void *p) {
    Job *j = p;
    nap((int)j->a);
    FlErr e;
    ST_OK(fl_chan_close(j->c, &e));
    finish(j);
}
static void job_send_later(void *p) {
    Job *j = p;
    nap(20);
    st_send(j->c, j->a);
    finish(j);
}

/* ---- the cases ---- */

static void unbuffered_rendezvous(T *t) {
    FlChan *c = st_chan(0), *done = st_chan(1);
    Job j = {.c = c, .a = 42, .done = done};
    go(t, job_send, &j);
    bool ok;
    ST_CHECK(st_recv(c, &ok) == 42 && ok);
    join(done, 1);
    fl_chan_release(c);
    fl_chan_release(done);
}

static void unbuffered_sender_waits(T *t) {
    FlChan *c = st_chan(0), *done = st_chan(1);
    _Atomic int flag = 0;
    Job j = {.c = c, .a = 7, .flag = &flag, .done = done};
    go(t, job_send, &j);
    nap(30);
    ST_CHECK(atomic_load(&flag) == 0); /* no receiver yet: the send has not completed */
    ST_CHECK(fl_chan_len(c) == 0);
    ST_CHECK(st_recv(c, NULL) == 7);
    join(done, 1);
    ST_CHECK(atomic_load(&flag) == 1);
    fl_chan_release(c);
    fl_chan_release(done);
}

static void unbuffered_receiver_waits(T *t) {
    FlChan *c = st_chan(0), *done = st_chan(1);
    Job j = {.c = c, .done = done};
    go(t, job_recv, &j);
    nap(30);
    st_send(c, 99);
    join(done, 1);
    ST_CHECK(j.got == 99 && j.ok);
    fl_chan_release(c);
    fl_chan_release(done);
}

static void buffered_no_block(T *t) {
    FlChan *c = st_chan(3);
    st_send(c, 1);
    st_send(c, 2);
    st_send(c, 3);
    ST_CHECK(fl_chan_len(c) == 3 && fl_chan_cap(c) == 3);
    ST_CHECK(st_recv(c, NULL) == 1);
    ST_CHECK(fl_chan_len(c) == 2);
    fl_chan_release(c);
}

static void buffered_fifo(T *t) {
    FlChan *c = st_chan(128);
    for (int64_t i = 0; i < 128; i++) st_send(c, i * 3);
    for (int64_t i = 0; i < 128; i++) ST_CHECK(st_recv(c, NULL) == i * 3);
    /* wrap-around keeps the order */
    for (int round = 0; round < 5; round++) {
        for (int64_t i = 0; i < 100; i++) st_send(c, round * 1000 + i);
        for (int64_t i = 0; i < 100; i++) ST_CHECK(st_recv(c, NULL) == round * 1000 + i);
    }
    fl_chan_release(c);
}

static void buffered_full_blocks(T *t) {
    FlChan *c = st_chan(2), *done = st_chan(1);
    _Atomic int flag = 0;
    Job j = {.c = c, .a = 0, .b = 3, .flag = &flag, .done = done};
    go(t, job_send_n, &j);
    nap(30);
    ST_CHECK(atomic_load(&flag) == 0 && fl_chan_len(c) == 2); /* third send blocked */
    ST_CHECK(st_recv(c, NULL) == 0);
    join(done, 1);
    ST_CHECK(atomic_load(&flag) == 1);
    ST_CHECK(st_recv(c, NULL) == 1 && st_recv(c, NULL) == 2);
    fl_chan_release(c);
    fl_chan_release(done);
}

static void buffered_full_fifo_with_waiting_senders(T *t) {
    /* senders blocked on a full buffer are served in order behind the buffered values */
    FlChan *c = st_chan(2), *done = st_chan(1);
    Job j = {.c = c, .a = 0, .b = 10, .done = done};
    go(t, job_send_n, &j);
    nap(20);
    for (int64_t i = 0; i < 10; i++) ST_CHECK(st_recv(c, NULL) == i);
    join(done, 1);
    fl_chan_release(c);
    fl_chan_release(done);
}

static void buffered_empty_blocks(T *t) {
    FlChan *c = st_chan(4), *done = st_chan(1);
    Job j = {.c = c, .done = done};
    go(t, job_recv, &j);
    nap(30);
    ST_CHECK(fl_chan_len(c) == 0);
    st_send(c, 5);
    join(done, 1);
    ST_CHECK(j.got == 5 && j.ok);
    fl_chan_release(c);
    fl_chan_release(done);
}

static void close_wakes_receivers(T *t) {
    FlChan *c = st_chan(0), *done = st_chan(3);
    Job j[3];
    for (int i = 0; i < 3; i++) {
        j[i] = (Job){.c = c, .done = done};
        go(t, job_recv, &j[i]);
    }
    nap(30);
    FlErr e;
    ST_OK(fl_chan_close(c, &e));
    join(done, 3);
    for (int i = 0; i < 3; i++) ST_CHECK(j[i].got == 0 && !j[i].ok);
    fl_chan_release(c);
    fl_chan_release(done);
}

static void close_wakes_senders(T *t) {
    FlChan *c = st_chan(0), *done = st_chan(2);
    Job j[2];
    for (int i = 0; i < 2; i++) {
        j[i] = (Job){.c = c, .a = i, .done = done};
        go(t, job_try_send, &j[i]);
    }
    nap(30);
    FlErr e;
    ST_OK(fl_chan_close(c, &e));
    join(done, 2);
    for (int i = 0; i < 2; i++)
        ST_CHECK(j[i].st == FL_ERROR && strcmp(j[i].msg, "send on closed channel") == 0);
    fl_chan_release(c);
    fl_chan_release(done);
}

static void drain_after_close(T *t) {
    FlChan *c = st_chan(3);
    st_send(c, 10);
    st_send(c, 20);
    FlErr e;
    ST_OK(fl_chan_close(c, &e));
    bool ok;
    ST_CHECK(st_recv(c, &ok) == 10 && ok);
    ST_CHECK(st_recv(c, &ok) == 20 && ok);
    for (int i = 0; i < 3; i++) ST_CHECK(st_recv(c, &ok) == 0 && !ok);
    fl_chan_release(c);
}

static void recv_closed_empty(T *t) {
    FlChan *c = st_chan(0);
    FlErr e;
    ST_OK(fl_chan_close(c, &e));
    bool ok = true;
    ST_CHECK(st_recv(c, &ok) == 0 && !ok);
    fl_chan_release(c);
}

static void send_on_closed(T *t) {
    FlChan *c = st_chan(5);
    FlErr e = {{0}};
    ST_OK(fl_chan_close(c, &e));
    int64_t v = 1;
    ST_CHECK(fl_chan_send(c, &v, &e) == FL_ERROR);
    ST_CHECK(strcmp(e.msg, "send on closed channel") == 0);
    ST_CHECK(fl_chan_len(c) == 0);
    fl_chan_release(c);
}

static void double_close(T *t) {
    FlChan *c = st_chan(1);
    FlErr e = {{0}};
    ST_OK(fl_chan_close(c, &e));
    ST_CHECK(fl_chan_close(c, &e) == FL_ERROR);
    ST_CHECK(strcmp(e.msg, "close of closed channel") == 0);
    fl_chan_release(c);
}

static void close_nil(T *t) {
    FlErr e = {{0}};
    ST_CHECK(fl_chan_close(NULL, &e) == FL_ERROR);
    ST_CHECK(strcmp(e.msg, "close of nil channel") == 0);
    ST_CHECK(fl_chan_len(NULL) == 0 && fl_chan_cap(NULL) == 0);
}

static int sel(FlSelectCase *cs, int n, bool dflt) {
    FlErr e = {{0}};
    int chosen = -2;
    if (fl_select(cs, n, dflt, &chosen, &e) != FL_OK) {
        atomic_fetch_add(&st_failures, 1);
        fprintf(stderr, "\n[%s] select failed: %s\n", atomic_load(&st_case), e.msg);
    }
    return chosen;
}
#define RECV(ch, p) ((FlSelectCase){.chan = (ch), .dir = FL_SELECT_RECV, .val = (p)})
#define SEND(ch, p) ((FlSelectCase){.chan = (ch), .dir = FL_SELECT_SEND, .val = (p)})

static void select_default_not_ready(T *t) {
    FlChan *a = st_chan(0), *b = st_chan(1);
    int64_t v = 1, w = -1;
    FlSelectCase cs[] = {RECV(a, &w), SEND(a, &v), RECV(b, &w)};
    ST_CHECK(sel(cs, 3, true) == -1);
    ST_CHECK(w == -1 && fl_chan_len(b) == 0);
    fl_chan_release(a);
    fl_chan_release(b);
}

static void select_default_ready_recv(T *t) {
    FlChan *a = st_chan(1);
    st_send(a, 33);
    int64_t w = 0;
    FlSelectCase cs[] = {RECV(a, &w)};
    ST_CHECK(sel(cs, 1, true) == 0);
    ST_CHECK(w == 33 && cs[0].ok && fl_chan_len(a) == 0);
    fl_chan_release(a);
}

static void select_send_ready(T *t) {
    FlChan *a = st_chan(1);
    int64_t v = 8;
    FlSelectCase cs[] = {SEND(a, &v)};
    ST_CHECK(sel(cs, 1, true) == 0);
    ST_CHECK(fl_chan_len(a) == 1 && st_recv(a, NULL) == 8);
    fl_chan_release(a);
}

static void select_send_full_default(T *t) {
    FlChan *a = st_chan(1);
    st_send(a, 1);
    int64_t v = 2;
    FlSelectCase cs[] = {SEND(a, &v)};
    ST_CHECK(sel(cs, 1, true) == -1);
    ST_CHECK(fl_chan_len(a) == 1 && st_recv(a, NULL) == 1);
    fl_chan_release(a);
}

static void select_closed_recv(T *t) {
    FlChan *a = st_chan(0), *b = st_chan(0);
    FlErr e;
    ST_OK(fl_chan_close(b, &e));
    int64_t w = 77;
    FlSelectCase cs[] = {RECV(a, &w), RECV(b, &w)};
    ST_CHECK(sel(cs, 2, false) == 1);
    ST_CHECK(w == 0 && !cs[1].ok);
    fl_chan_release(a);
    fl_chan_release(b);
}

static void select_closed_send(T *t) {
    FlChan *a = st_chan(1);
    FlErr e = {{0}};
    ST_OK(fl_chan_close(a, &e));
    int64_t v = 1;
    FlSelectCase cs[] = {SEND(a, &v)};
    int chosen = -2;
    ST_CHECK(fl_select(cs, 1, true, &chosen, &e) == FL_ERROR);
    ST_CHECK(chosen == 0 && strcmp(e.msg, "send on closed channel") == 0);
    fl_chan_release(a);
}

static void select_nil_never_ready(T *t) {
    int64_t v = 1, w = 5;
    FlSelectCase cs[] = {RECV(NULL, &w), SEND(NULL, &v)};
    ST_CHECK(sel(cs, 2, true) == -1);
    ST_CHECK(w == 5);
}

static void select_nil_and_ready(T *t) {
    FlChan *a = st_chan(1);
    int64_t v = 1, w = 0;
    for (int i = 0; i < 100; i++) {
        st_send(a, i);
        FlSelectCase cs[] = {RECV(NULL, &w), SEND(NULL, &v), RECV(a, &w)};
        ST_CHECK(sel(cs, 3, false) == 2 && w == i);
    }
    fl_chan_release(a);
}

static void select_no_cases_default(T *t) { ST_CHECK(sel(NULL, 0, true) == -1); }

static void select_blocking_woken_by_send(T *t) {
    FlChan *a = st_chan(0), *b = st_chan(0), *done = st_chan(1);
    Job j = {.c = b, .a = 123, .done = done};
    go(t, job_send_later, &j);
    int64_t w = 0;
    FlSelectCase cs[] = {RECV(a, &w), RECV(b, &w)};
    ST_CHECK(sel(cs, 2, false) == 1);
    ST_CHECK(w == 123 && cs[1].ok);
    join(done, 1);
    fl_chan_release(a);
    fl_chan_release(b);
    fl_chan_release(done);
}

static void select_blocking_woken_by_close(T *t) {
    FlChan *a = st_chan(0), *b = st_chan(2), *done = st_chan(1);
    Job j = {.c = b, .a = 20, .done = done};
    go(t, job_close_later, &j);
    int64_t w = 9;
    FlSelectCase cs[] = {RECV(a, &w), RECV(b, &w)};
    ST_CHECK(sel(cs, 2, false) == 1);
    ST_CHECK(w == 0 && !cs[1].ok);
    join(done, 1);
    fl_chan_release(a);
    fl_chan_release(b);
    fl_chan_release(done);
}

static void select_blocked_send_then_closed(T *t) {
    FlChan *a = st_chan(0), *done = st_chan(1);
    Job j = {.c = a, .a = 20, .done = done};
    go(t, job_close_later, &j);
    int64_t v = 1;
    FlSelectCase cs[] = {SEND(a, &v)};
    FlErr e = {{0}};
    int chosen = -2;
    ST_CHECK(fl_select(cs, 1, false, &chosen, &e) == FL_ERROR);
    ST_CHECK(chosen == 0 && strcmp(e.msg, "send on closed channel") == 0);
    join(done, 1);
    fl_chan_release(a);
    fl_chan_release(done);
}

static void select_send_recv_mix(T *t) {
    /* a blocked select with a send case on a and a receive case on b: a receiver on a fires the
     * send case; then a sender on b fires the receive case */
    FlChan *a = st_chan(0), *b = st_chan(0), *done = st_chan(2);
    Job r = {.c = a, .done = done};
    go(t, job_recv, &r);
    int64_t v = 55, w = 0;
    FlSelectCase cs[] = {SEND(a, &v), RECV(b, &w)};
    ST_CHECK(sel(cs, 2, false) == 0);
    join(done, 1);
    ST_CHECK(r.got == 55 && r.ok);
    Job s = {.c = b, .a = 66, .done = done};
    go(t, job_send_later, &s);
    FlSelectCase cs2[] = {SEND(a, &v), RECV(b, &w)};
    ST_CHECK(sel(cs2, 2, false) == 1 && w == 66);
    join(done, 1);
    fl_chan_release(a);
    fl_chan_release(b);
    fl_chan_release(done);
}

typedef struct SelPeer {
    FlChan *c, *done;
    int64_t got;
} SelPeer;
static void job_select_recv(void *p) {
    SelPeer *sp = p;
    int64_t w = 0;
    FlSelectCase cs[] = {RECV(sp->c, &w)};
    ST_CHECK(sel(cs, 1, false) == 0);
    sp->got = w;
    st_send(sp->done, 1);
}
static void select_against_select(T *t) {
    /* two selects meet on an unbuffered channel: one sends, one receives */
    FlChan *c = st_chan(0), *done = st_chan(1);
    for (int i = 0; i < 50; i++) {
        SelPeer sp = {c, done, 0};
        go(t, job_select_recv, &sp);
        int64_t v = 1000 + i;
        FlSelectCase cs[] = {SEND(c, &v)};
        ST_CHECK(sel(cs, 1, false) == 0);
        join(done, 1);
        ST_CHECK(sp.got == 1000 + i);
    }
    fl_chan_release(c);
    fl_chan_release(done);
}

static void select_same_channel_twice(T *t) {
    /* two receive cases on one channel: either may fire, the value arrives once */
    FlChan *a = st_chan(1);
    int hits[2] = {0, 0};
    for (int i = 0; i < 400; i++) {
        st_send(a, i);
        int64_t w0 = -1, w1 = -1;
        FlSelectCase cs[] = {RECV(a, &w0), RECV(a, &w1)};
        int k = sel(cs, 2, false);
        ST_CHECK(k == 0 || k == 1);
        if (k == 0 || k == 1) {
            hits[k]++;
            ST_CHECK((k == 0 ? w0 : w1) == i && (k == 0 ? w1 : w0) == -1);
        }
    }
    ST_CHECK(hits[0] > 100 && hits[1] > 100);
    fl_chan_release(a);
}

static void select_fairness(T *t) {
    /* 10,000 selects over two always-ready channels */
    FlChan *a = st_chan(1), *b = st_chan(1);
    st_send(a, 0);
    st_send(b, 1);
    int hits[2] = {0, 0};
    for (int i = 0; i < 10000; i++) {
        int64_t w = -1;
        FlSelectCase cs[] = {RECV(a, &w), RECV(b, &w)};
        int k = sel(cs, 2, false);
        ST_CHECK(k == w);
        if (k < 0 || k > 1) break;
        hits[k]++;
        st_send(k == 0 ? a : b, k);
    }
    ST_CHECK(hits[0] >= 4700 && hits[0] <= 5300);
    ST_CHECK(hits[0] + hits[1] == 10000);
    fl_chan_release(a);
    fl_chan_release(b);
}

static void select_fairness_send(T *t) {
    /* send cases too: 10,000 selects over two channels with room, drained after each */
    FlChan *a = st_chan(1), *b = st_chan(1);
    int hits[2] = {0, 0};
    for (int i = 0; i < 10000; i++) {
        int64_t v = i;
        FlSelectCase cs[] = {SEND(a, &v), SEND(b, &v)};
        int k = sel(cs, 2, false);
        if (k < 0 || k > 1) break;
        hits[k]++;
        ST_CHECK(st_recv(k == 0 ? a : b, NULL) == i);
    }
    ST_CHECK(hits[0] >= 4700 && hits[0] <= 5300);
    fl_chan_release(a);
    fl_chan_release(b);
}

/* Receives j->a values from j->c, each after a nap so that the sender's select has blocked;
 * counts the ones into j->got. */
static void job_slow_receiver(void *p) {
    Job *j = p;
    for (int64_t i = 0; i < j->a; i++) {
        fl_sched_block_begin();
        usleep(200);
        fl_sched_block_end();
        j->got += st_recv(j->c, NULL);
    }
    finish(j);
}

static void select_blocked_fairness_one_channel(T *t) {
    /* Go's TestPseudoRandomSend: a select offering 1 and 0 on one unbuffered channel, blocked
     * until a slow receiver comes, sends each about half the time */
    FlChan *c = st_chan(0), *done = st_chan(1);
    Job j = {.c = c, .a = 200, .done = done};
    go(t, job_slow_receiver, &j);
    for (int i = 0; i < 200; i++) {
        int64_t one = 1, zero = 0;
        FlSelectCase cs[] = {SEND(c, &one), SEND(c, &zero)};
        ST_CHECK(sel(cs, 2, false) >= 0);
    }
    join(done, 1);
    ST_CHECK(j.got >= 50 && j.got <= 150);
    if (j.got < 50 || j.got > 150) fprintf(stderr, "    %lld of 200 selects sent their first case\n", (long long)j.got);
    fl_chan_release(c);
    fl_chan_release(done);
}

typedef struct PC {
    FlChan *c, *done;
    int64_t n;
    _Atomic int64_t *sum;
} PC;
static void producer(void *p) {
    PC *pc = p;
    for (int64_t i = 1; i <= pc->n; i++) st_send(pc->c, i);
    st_send(pc->done, 1);
}
static void consumer(void *p) {
    PC *pc = p;
    int64_t local = 0;
    for (;;) {
        bool ok;
        int64_t v = st_recv(pc->c, &ok);
        if (!ok) break;
        local += v;
    }
    atomic_fetch_add(pc->sum, local);
    st_send(pc->done, 1);
}
static void producers_consumers(T *t, size_t cap) {
    enum { NP = 8, NC = 4, N = 2000 };
    FlChan *c = st_chan(cap), *pdone = st_chan(NP), *cdone = st_chan(NC);
    _Atomic int64_t sum = 0;
    PC pp = {c, pdone, N, &sum}, cc = {c, cdone, N, &sum};
    for (int i = 0; i < NC; i++) go(t, consumer, &cc);
    for (int i = 0; i < NP; i++) go(t, producer, &pp);
    join(pdone, NP);
    FlErr e;
    ST_OK(fl_chan_close(c, &e));
    join(cdone, NC);
    ST_CHECK(atomic_load(&sum) == (int64_t)NP * N * (N + 1) / 2);
    fl_chan_release(c);
    fl_chan_release(pdone);
    fl_chan_release(cdone);
}
static void many_producers_consumers_buffered(T *t) { producers_consumers(t, 16); }
static void many_producers_consumers_unbuffered(T *t) { producers_consumers(t, 0); }

typedef struct Spawn {
    _Atomic int64_t left;
    FlChan *done;
} Spawn;
static void spawn_body(void *p) {
    Spawn *sp = p;
    if (atomic_fetch_sub(&sp->left, 1) == 1) {
        FlErr e;
        ST_OK(fl_chan_close(sp->done, &e));
    }
}
static void spawn_join_10000(T *t) {
    Spawn sp = {10000, st_chan(0)};
    for (int i = 0; i < 10000; i++) go(t, spawn_body, &sp);
    bool ok = true;
    st_recv(sp.done, &ok);
    ST_CHECK(!ok && atomic_load(&sp.left) == 0);
    fl_chan_release(sp.done);
}

typedef struct Tree {
    T *t;
    int depth;
    FlChan *out; /* receives the node count of the subtree */
} Tree;
static void tree(void *p) {
    Tree *tr = p;
    int64_t n = 1;
    if (tr->depth > 0) {
        FlChan *c = st_chan(2);
        Tree kids[2] = {{tr->t, tr->depth - 1, c}, {tr->t, tr->depth - 1, c}};
        go(tr->t, tree, &kids[0]);
        go(tr->t, tree, &kids[1]);
        n += st_recv(c, NULL) + st_recv(c, NULL);
        fl_chan_release(c);
    }
    st_send(tr->out, n);
}
static void goroutines_spawn_goroutines(T *t) {
    FlChan *c = st_chan(0);
    Tree root = {t, 9, c};
    go(t, tree, &root);
    ST_CHECK(st_recv(c, NULL) == 1023);
    fl_chan_release(c);
}

/* Go's concurrent prime sieve, with a quit channel so that the filters end */
typedef struct Sieve {
    FlChan *in, *out, *quit, *done;
    int64_t prime;
} Sieve;
static bool send_or_quit(FlChan *c, int64_t v, FlChan *quit) {
    int64_t w;
    FlSelectCase cs[] = {SEND(c, &v), RECV(quit, &w)};
    return sel(cs, 2, false) == 0;
}
static void generate(void *p) {
    Sieve *sv = p;
    for (int64_t i = 2; send_or_quit(sv->out, i, sv->quit); i++) {
    }
    st_send(sv->done, 1);
}
static void filter(void *p) {
    Sieve *sv = p;
    for (;;) {
        int64_t i = 0;
        FlSelectCase cs[] = {RECV(sv->in, &i), RECV(sv->quit, NULL)};
        if (sel(cs, 2, false) != 0) break;
        if (i % sv->prime != 0 && !send_or_quit(sv->out, i, sv->quit)) break;
    }
    st_send(sv->done, 1);
}
static void prime_sieve(T *t) {
    enum { N = 100 };
    static const int64_t first[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47};
    FlChan *chans[N + 1], *quit = st_chan(0), *done = st_chan(N + 1);
    Sieve sv[N + 1];
    chans[0] = st_chan(0);
    sv[0] = (Sieve){NULL, chans[0], quit, done, 0};
    go(t, generate, &sv[0]);
    int64_t primes[N];
    for (int i = 0; i < N; i++) {
        primes[i] = st_recv(chans[i], NULL);
        chans[i + 1] = st_chan(0);
        sv[i + 1] = (Sieve){chans[i], chans[i + 1], quit, done, primes[i]};
        go(t, filter, &sv[i + 1]);
    }
    for (size_t i = 0; i < FL_ARRAY_LEN(first); i++) ST_CHECK(primes[i] == first[i]);
    ST_CHECK(primes[N - 1] == 541);
    for (int i = 1; i < N; i++) ST_CHECK(primes[i] > primes[i - 1]);
    FlErr e;
    ST_OK(fl_chan_close(quit, &e));
    join(done, N + 1);
    for (int i = 0; i <= N; i++) fl_chan_release(chans[i]);
    fl_chan_release(quit);
    fl_chan_release(done);
}

typedef struct Src {
    FlChan *c;
    int64_t from, n;
} Src;
static void source(void *p) {
    Src *s = p;
    for (int64_t i = 0; i < s->n; i++) st_send(s->c, s->from + i);
    FlErr e;
    ST_OK(fl_chan_close(s->c, &e));
}
static void fan_in_select(T *t) {
    /* three sources merged with select; a closed source's channel is set to nil (Go's idiom) */
    FlChan *c[3] = {st_chan(0), st_chan(4), st_chan(1)}, *keep[3] = {c[0], c[1], c[2]};
    Src src[3] = {{c[0], 0, 1000}, {c[1], 10000, 700}, {c[2], 100000, 300}};
    for (int i = 0; i < 3; i++) go(t, source, &src[i]);
    int64_t sum = 0, count = 0, expect = 0;
    for (int i = 0; i < 3; i++)
        for (int64_t k = 0; k < src[i].n; k++) expect += src[i].from + k;
    int open = 3;
    while (open > 0) {
        int64_t v[3] = {0, 0, 0};
        FlSelectCase cs[] = {RECV(c[0], &v[0]), RECV(c[1], &v[1]), RECV(c[2], &v[2])};
        int k = sel(cs, 3, false);
        if (k < 0) break;
        if (!cs[k].ok) {
            c[k] = NULL;
            open--;
            continue;
        }
        sum += v[k];
        count++;
    }
    ST_CHECK(count == 2000 && sum == expect);
    for (int i = 0; i < 3; i++) fl_chan_release(keep[i]);
}

typedef struct Big {
    unsigned char b[256];
} Big;
typedef struct BigJob {
    FlChan *c, *done;
    int k;
} BigJob;
static void big_sender(void *p) {
    BigJob *bj = p;
    for (int i = 0; i < 500; i++) {
        Big v;
        memset(&v, (bj->k * 37 + i) & 0xff, sizeof v);
        FlErr e;
        ST_OK(fl_chan_send(bj->c, &v, &e));
    }
    st_send(bj->done, 1);
}
static void values_handed_over_whole(T *t) {
    /* 256-byte values from 4 senders through a small buffer arrive untorn */
    FlErr e;
    FlChan *c = fl_chan_new(sizeof(Big), 3, NULL, NULL, &e), *done = st_chan(4);
    BigJob bj[4];
    for (int k = 0; k < 4; k++) {
        bj[k] = (BigJob){c, done, k};
        go(t, big_sender, &bj[k]);
    }
    for (int i = 0; i < 2000; i++) {
        Big v;
        bool ok;
        ST_OK(fl_chan_recv(c, &v, &ok, &e));
        bool same = ok;
        for (size_t j = 1; j < sizeof v.b; j++) same = same && v.b[j] == v.b[0];
        ST_CHECK(same);
    }
    join(done, 4);
    fl_chan_release(c);
    fl_chan_release(done);
}

static void count_drop(void *elem, void *ud) {
    atomic_fetch_add((_Atomic int64_t *)ud, *(int64_t *)elem);
}
static void drop_callback(T *t) {
    /* not Go (its GC frees values): buffered values left at the last release, and values received
     * with no out buffer, are given to the drop callback exactly once */
    _Atomic int64_t dropped = 0;
    FlErr e;
    FlChan *c = fl_chan_new(sizeof(int64_t), 4, count_drop, &dropped, &e);
    st_send(c, 1);
    st_send(c, 10);
    st_send(c, 100);
    bool ok;
    ST_OK(fl_chan_recv(c, NULL, &ok, &e));
    ST_CHECK(ok && atomic_load(&dropped) == 1);
    int64_t w;
    FlSelectCase cs[] = {RECV(c, NULL)};
    ST_CHECK(sel(cs, 1, false) == 0 && cs[0].ok && atomic_load(&dropped) == 11);
    fl_chan_retain(c);
    fl_chan_release(c);
    ST_CHECK(atomic_load(&dropped) == 11);
    (void)w;
    fl_chan_release(c);
    ST_CHECK(atomic_load(&dropped) == 111);
}

static void zero_size_elements(T *t) {
    /* chan struct{}: signals without payload */
    FlErr e;
    FlChan *c = fl_chan_new(0, 2, NULL, NULL, &e);
    ST_OK(fl_chan_send(c, NULL, &e));
    ST_OK(fl_chan_send(c, NULL, &e));
    ST_CHECK(fl_chan_len(c) == 2);
    bool ok;
    ST_OK(fl_chan_recv(c, NULL, &ok, &e));
    ST_CHECK(ok);
    ST_OK(fl_chan_close(c, &e));
    ST_OK(fl_chan_recv(c, NULL, &ok, &e));
    ST_CHECK(ok);
    ST_OK(fl_chan_recv(c, NULL, &ok, &e));
    ST_CHECK(!ok);
    fl_chan_release(c);
}

typedef struct Thr {
    FlSched *s;
    FlChan *in, *out;
    _Atomic int attached;
} Thr;
static void *plain_thread(void *p) { /* an OS thread echoing values + 1 */
    Thr *th = p;
    /* it feeds goroutines that may all be blocked meanwhile: it attaches, so the deadlock
     * detector knows it may still send */
    fl_sched_attach(th->s, "thread.fl:1");
    atomic_store(&th->attached, 1);
    for (;;) {
        bool ok;
        int64_t v = st_recv(th->in, &ok);
        if (!ok) break;
        st_send(th->out, v + 1);
    }
    fl_sched_detach(th->s);
    return NULL;
}
static void plain_thread_peer(T *t) {
    /* an OS thread that is not a goroutine blocks on channels properly */
    Thr th = {t->s, st_chan(0), st_chan(0), 0};
    pthread_t pt;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&pt, NULL, plain_thread, &th), 0);
    while (!atomic_load(&th.attached)) nap(1); /* before it attaches, it is invisible */
    for (int64_t i = 0; i < 2000; i++) {
        st_send(th.in, i);
        ST_CHECK(st_recv(th.out, NULL) == i + 1);
    }
    FlErr e;
    ST_OK(fl_chan_close(th.in, &e));
    fl_sched_block_begin(); /* joining is a blocking call */
    pthread_join(pt, NULL);
    fl_sched_block_end();
    fl_chan_release(th.in);
    fl_chan_release(th.out);
}

static void ping(void *p) {
    Job *j = p;
    for (int i = 0; i < 10000; i++) st_send(j->d, st_recv(j->c, NULL) + 1);
    finish(j);
}
static void ping_pong(T *t) {
    /* 10,000 unbuffered round trips, each value incremented on both sides */
    FlChan *a = st_chan(0), *b = st_chan(0), *done = st_chan(1);
    Job j = {.c = a, .d = b, .done = done};
    go(t, ping, &j);
    int64_t v = 0;
    for (int i = 0; i < 10000; i++) {
        st_send(a, v);
        v = st_recv(b, NULL) + 1;
    }
    ST_CHECK(v == 20000);
    join(done, 1);
    fl_chan_release(a);
    fl_chan_release(b);
    fl_chan_release(done);
}

typedef struct Case {
    const char *name;
    void (*fn)(T *);
    const char *go; /* what Go does */
} Case;

static const Case CASES[] = {
    {"unbuffered_rendezvous", unbuffered_rendezvous,
     "a send on an unbuffered channel hands the value to a receiver"},
    {"unbuffered_sender_waits", unbuffered_sender_waits,
     "an unbuffered send does not complete until a receiver takes the value"},
    {"unbuffered_receiver_waits", unbuffered_receiver_waits,
     "a receive on an empty unbuffered channel blocks until a sender comes"},
    {"buffered_no_block", buffered_no_block,
     "sends on a buffered channel with room complete at once; len counts buffered values"},
    {"buffered_fifo", buffered_fifo, "a buffered channel is FIFO, also across wrap-around"},
    {"buffered_full_blocks", buffered_full_blocks,
     "a send on a full buffered channel blocks until a receive makes room"},
    {"buffered_full_fifo_with_waiting_senders", buffered_full_fifo_with_waiting_senders,
     "blocked senders' values come after the buffered ones, in order"},
    {"buffered_empty_blocks", buffered_empty_blocks,
     "a receive on an empty buffered channel blocks until a send"},
    {"close_wakes_receivers", close_wakes_receivers,
     "close wakes every blocked receiver with the zero value and ok=false"},
    {"close_wakes_senders", close_wakes_senders,
     "close makes every blocked sender panic: send on closed channel"},
    {"drain_after_close", drain_after_close,
     "receives from a closed channel drain the buffer, then yield zero, ok=false, forever"},
    {"recv_closed_empty", recv_closed_empty,
     "a receive from a closed empty channel returns zero, ok=false at once"},
    {"send_on_closed", send_on_closed, "a send on a closed channel panics: send on closed channel"},
    {"double_close", double_close, "closing a closed channel panics: close of closed channel"},
    {"close_nil", close_nil, "closing a nil channel panics: close of nil channel; len/cap of nil are 0"},
    {"select_default_not_ready", select_default_not_ready,
     "select with no ready case takes default and moves no value"},
    {"select_default_ready_recv", select_default_ready_recv,
     "select with a ready receive case takes it, not default"},
    {"select_send_ready", select_send_ready, "select with a send case with room takes it"},
    {"select_send_full_default", select_send_full_default,
     "a send case on a full channel is not ready: default"},
    {"select_closed_recv", select_closed_recv,
     "a receive case on a closed channel is ready: zero value, ok=false"},
    {"select_closed_send", select_closed_send,
     "a send case on a closed channel is ready and panics: send on closed channel"},
    {"select_nil_never_ready", select_nil_never_ready, "cases on nil channels are never ready"},
    {"select_nil_and_ready", select_nil_and_ready,
     "nil cases are ignored; the ready case is always chosen"},
    {"select_no_cases_default", select_no_cases_default,
     "select {} with default takes default at once"},
    {"select_blocking_woken_by_send", select_blocking_woken_by_send,
     "a blocked select wakes on a later send to one of its channels and takes that case"},
    {"select_blocking_woken_by_close", select_blocking_woken_by_close,
     "a blocked select wakes when one of its channels is closed: ok=false"},
    {"select_blocked_send_then_closed", select_blocked_send_then_closed,
     "a select blocked in a send case panics when the channel is closed"},
    {"select_send_recv_mix", select_send_recv_mix,
     "a select with send and receive cases takes whichever side a peer completes"},
    {"select_against_select", select_against_select,
     "two selects rendezvous on an unbuffered channel"},
    {"select_same_channel_twice", select_same_channel_twice,
     "two cases on one channel: either may be chosen, the value is delivered once"},
    {"select_fairness", select_fairness,
     "select chooses uniformly among ready cases: 10,000 selects pick each of 2 about 50% (+-3%)"},
    {"select_fairness_send", select_fairness_send,
     "uniform choice among ready send cases as well"},
    {"select_blocked_fairness_one_channel", select_blocked_fairness_one_channel,
     "a blocked select with two sends on one channel completes either, about half the time each "
     "(TestPseudoRandomSend)"},
    {"many_producers_consumers_buffered", many_producers_consumers_buffered,
     "8 producers, 4 consumers on a buffered channel: every value received exactly once"},
    {"many_producers_consumers_unbuffered", many_producers_consumers_unbuffered,
     "the same on an unbuffered channel"},
    {"spawn_join_10000", spawn_join_10000, "10,000 goroutines start, run and are joined"},
    {"goroutines_spawn_goroutines", goroutines_spawn_goroutines,
     "goroutines start goroutines: a binary tree of 1023"},
    {"prime_sieve", prime_sieve,
     "Go's concurrent prime sieve yields the first 100 primes (the 100th is 541)"},
    {"fan_in_select", fan_in_select,
     "a fan-in over select with nil-ing closed channels receives every value once"},
    {"values_handed_over_whole", values_handed_over_whole,
     "a value is copied whole: 256-byte values are never torn"},
    {"drop_callback", drop_callback, "values nobody receives are released (Go: collected)"},
    {"zero_size_elements", zero_size_elements, "chan struct{} carries signals; close still drains"},
    {"plain_thread_peer", plain_thread_peer,
     "an attached OS thread blocks on channels like a goroutine"},
    {"ping_pong", ping_pong, "10,000 unbuffered round trips deliver every value"},
};

/* ---- the runner ---- */

typedef struct Run {
    const Case *c;
    T t;
} Run;
static void run_main(void *p) {
    Run *r = p;
    r->c->fn(&r->t);
}

static void run_case(const Case *c, bool as_goroutine) {
    char tag[160];
    snprintf(tag, sizeof tag, "%s (%s)", c->name, as_goroutine ? "goroutine" : "attached thread");
    atomic_store(&st_case, tag);
    int before = atomic_load(&st_failures);
    FlSched *s = st_sched(2);
    Run r = {c, {s}};
    FlErr e = {{0}};
    if (as_goroutine) {
        st_go(s, run_main, &r, "main.fl:1");
    } else {
        fl_sched_attach(s, "main.fl:1");
        c->fn(&r.t);
        fl_sched_detach(s);
    }
    FlStatus st = fl_sched_wait(s, &e);
    if (st != FL_OK) fprintf(stderr, "\n[%s] wait: %s\n", tag, e.msg);
    CU_ASSERT_EQUAL(st, FL_OK);
    fl_sched_free(s);
    int fails = atomic_load(&st_failures) - before;
    if (fails) fprintf(stderr, "\n[%s] FAILED; Go: %s\n", tag, c->go);
    CU_ASSERT_EQUAL(fails, 0);
}

static void test_cases_in_goroutines(void) {
    for (size_t i = 0; i < FL_ARRAY_LEN(CASES); i++) run_case(&CASES[i], true);
}
static void test_cases_on_attached_thread(void) {
    for (size_t i = 0; i < FL_ARRAY_LEN(CASES); i++) run_case(&CASES[i], false);
}
static void test_case_count(void) { CU_ASSERT(FL_ARRAY_LEN(CASES) >= 30); }

int main(void) {
    static const StCase tests[] = {
        ST_TEST(test_case_count),
        ST_TEST(test_cases_in_goroutines),
        ST_TEST(test_cases_on_attached_thread),
    };
    return st_run("channels and select", tests, (int)FL_ARRAY_LEN(tests));
}
