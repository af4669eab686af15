/* bench_chan.c: channel and goroutine figures for runtime/sched, the same programs as
 * bench_chan.go. Prints "name value" lines (best of several runs) for bench_chan.sh. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/sched/chan.h"
#include "runtime/sched/sched.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static FlChan *mk(size_t cap) {
    FlErr e;
    FlChan *c = fl_chan_new(sizeof(int64_t), cap, NULL, NULL, &e);
    if (!c) abort();
    return c;
}
static void snd(FlChan *c, int64_t v) {
    FlErr e;
    if (fl_chan_send(c, &v, &e) != FL_OK) abort();
}
static int64_t rcv(FlChan *c) {
    FlErr e;
    int64_t v;
    bool ok;
    if (fl_chan_recv(c, &v, &ok, &e) != FL_OK) abort();
    return ok ? v : -1;
}
static FlSched *S;
static void go(void (*fn)(void *), void *arg) {
    FlErr e;
    if (fl_go(S, fn, arg, "bench", &e) != FL_OK) abort();
}

enum { PP_N = 1000000, BUF_N = 5000000, SPAWN_N = 10000 };

typedef struct Pair {
    FlChan *a, *b, *done;
} Pair;
static void ponger(void *p) {
    Pair *pr = p;
    for (int i = 0; i < PP_N; i++) snd(pr->b, rcv(pr->a));
}
static void consumer(void *p) {
    Pair *pr = p;
    int64_t sum = 0;
    for (int64_t v; (v = rcv(pr->a)) >= 0;) sum += v;
    snd(pr->done, sum);
}
typedef struct Sp {
    _Atomic int left;
    FlChan *done;
} Sp;
static void spawned(void *p) {
    Sp *sp = p;
    if (atomic_fetch_sub(&sp->left, 1) == 1) {
        FlErr e;
        if (fl_chan_close(sp->done, &e) != FL_OK) abort();
    }
}

static double best_pp, best_buf, best_spawn = 1e9;

static void main_g(void *arg) {
    (void)arg;
    for (int r = 0; r < 3; r++) { /* unbuffered ping-pong */
        Pair pr = {mk(0), mk(0), NULL};
        go(ponger, &pr);
        double t0 = now();
        for (int i = 0; i < PP_N; i++) {
            snd(pr.a, i);
            rcv(pr.b);
        }
        double rate = PP_N / (now() - t0);
        if (rate > best_pp) best_pp = rate;
        fl_chan_release(pr.a);
        fl_chan_release(pr.b);
    }
    for (int r = 0; r < 3; r++) { /* buffered (capacity 128) throughput */
        Pair pr = {mk(128), NULL, mk(0)};
        go(consumer, &pr);
        double t0 = now();
        for (int i = 0; i < BUF_N; i++) snd(pr.a, 1);
        FlErr e;
        if (fl_chan_close(pr.a, &e) != FL_OK) abort();
        if (rcv(pr.done) != BUF_N) abort();
        double rate = BUF_N / (now() - t0);
        if (rate > best_buf) best_buf = rate;
        fl_chan_release(pr.a);
        fl_chan_release(pr.done);
    }
    for (int r = 0; r < 5; r++) { /* spawn and join 10,000 goroutines */
        Sp sp = {SPAWN_N, mk(0)};
        double t0 = now();
        for (int i = 0; i < SPAWN_N; i++) go(spawned, &sp);
        rcv(sp.done);
        double t = now() - t0;
        if (t < best_spawn) best_spawn = t;
        fl_chan_release(sp.done);
    }
}

int main(void) {
    FlErr e;
    S = fl_sched_new(NULL, &e);
    if (!S) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    go(main_g, NULL);
    if (fl_sched_wait(S, &e) != FL_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    FlSchedStats st = fl_sched_stats(S);
    fl_sched_free(S);
    printf("pingpong %.0f\nbuffered %.0f\nspawn_ms %.3f\n", best_pp, best_buf, best_spawn * 1e3);
    printf("threads %d\nstacks %lld\n", st.threads, (long long)st.stacks);
    return 0;
}
