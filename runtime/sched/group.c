/* group.c: fl_go_each, Go's `for i := range n { go fn(i) }` joined by a WaitGroup, with lazy starts.
 *
 * A group (heap, reference counted: the caller and each goroutine it owns hold one) counts the
 * goroutines it still owes (`remaining`: started and not returned, or not started yet). The
 * caller starts min(n, nprocs) goroutines; each goroutine, when it begins to run, starts the next
 * one (`spawned` hands out the n starts) and then claims its index (`next`). So at most nprocs
 * goroutines are runnable-but-not-started at any time, and a new one starts exactly when a
 * processor takes one: when an iteration blocks, its processor runs the next start, which is how
 * iterations that wait for each other all come to run. Not-started goroutines are runnable, so the
 * deadlock detector never fires while one is left.
 *
 * The caller waits with the park / ready protocol (sched_impl.h) under the group's lock: the
 * goroutine whose return brings `remaining` to 0 claims and readies it. When the wait is aborted
 * (deadlock, panic, shutdown) the caller stops the group (goroutines not begun skip fn, the starts
 * not handed out are given up) and waits, inside a blocking region, on the futex of `remaining`
 * until the goroutines already started have returned: they use the caller's arg.
 *
 * Invariants: remaining = n - (goroutines returned) - (starts given up); a start is handed out at
 * most once (`spawned` counts up past n harmlessly); the waiter pointer is set and cleared under
 * the lock, so a finisher never readies a caller that has moved on.
 */
#include <limits.h>
#include <stdlib.h>

#include "runtime/sched/sched_impl.h"

typedef struct Group {
    FlSched *s;
    void (*fn)(void *, int);
    void *arg;
    const char *label;
    int n;
    _Atomic int refs;
    _Atomic int spawned;   /* starts handed out (may pass n) */
    _Atomic int next;      /* indices claimed */
    _Atomic int remaining; /* goroutines still owed; the aborted caller's futex word */
    _Atomic bool stop;     /* goroutines that begin from now on skip fn and start no other */
    FlLock lock;           /* waiter, failed, err */
    FlG *waiter;
    bool failed;
    FlErr err;             /* why a goroutine could not start */
} Group;

static void release(Group *g) {
    if (atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) == 1) free(g);
}

static void unlock_group(void *g) { fl_unlock(&((Group *)g)->lock); }

/* k goroutines are no longer owed: the last one readies the waiting caller. */
static void finish(Group *g, int k) {
    fl_lock(&g->lock);
    int left = atomic_fetch_sub(&g->remaining, k) - k;
    FlG *w = left == 0 ? g->waiter : NULL;
    g->waiter = left == 0 ? NULL : g->waiter;
    bool wake = w && fl_g_claim(w);
    fl_unlock(&g->lock);
    if (left == 0) fl_futex_wake(&g->remaining, INT_MAX); /* a caller whose wait was aborted */
    if (wake) fl_g_ready(w);
}

/* Gives up every start not handed out yet. */
static void give_up_starts(Group *g) {
    int old = atomic_exchange(&g->spawned, g->n);
    if (old < g->n) finish(g, g->n - old);
}

static void run_one(void *arg);

/* Hands out the next start, if any, and starts its goroutine. */
static void start_next(Group *g) {
    if (atomic_fetch_add(&g->spawned, 1) >= g->n) return;
    atomic_fetch_add(&g->refs, 1);
    FlErr e;
    if (fl_go(g->s, run_one, g, g->label, &e) == FL_OK) return;
    atomic_fetch_sub(&g->refs, 1); /* never the last: the caller holds one */
    fl_lock(&g->lock);
    if (!g->failed) {
        g->failed = true;
        g->err = e;
    }
    fl_unlock(&g->lock);
    atomic_store(&g->stop, true);
    fl_sched_panic(g->s); /* iterations may wait for the one that never starts */
    finish(g, 1);
    give_up_starts(g);
}

static void run_one(void *arg) {
    Group *g = arg;
    if (!atomic_load(&g->stop)) {
        start_next(g);
        g->fn(g->arg, atomic_fetch_add(&g->next, 1));
    } else {
        give_up_starts(g);
    }
    finish(g, 1);
    release(g);
}

FlStatus fl_go_each(FlSched *s, int n, void (*fn)(void *arg, int i), void *arg, const char *label,
                    FlErr *e) {
    if (n <= 0) return FL_OK;
    Group *g = fl_xcalloc(1, sizeof *g);
    g->s = s;
    g->fn = fn;
    g->arg = arg;
    g->label = label;
    g->n = n;
    atomic_store(&g->refs, 1);
    atomic_store(&g->remaining, n);
    int ahead = fl_sched_nprocs(s) < n ? fl_sched_nprocs(s) : n;
    for (int k = 0; k < ahead && !atomic_load(&g->stop); k++) start_next(g);

    FlG tmp, *me = fl_g_get(&tmp);
    FlAbort why = FL_ABORT_NONE;
    fl_lock(&g->lock);
    if (atomic_load(&g->remaining) == 0) {
        fl_unlock(&g->lock);
    } else if (!fl_g_prepare(me, "wait for iterations")) {
        fl_unlock(&g->lock);
        why = me->aborted;
    } else {
        g->waiter = me;
        fl_g_park(me, unlock_group, g);
        why = me->aborted;
    }
    if (me->kind == FL_G_THREAD) atomic_store(&me->status, FL_G_RUNNING);
    if (why != FL_ABORT_NONE) {
        fl_lock(&g->lock);
        g->waiter = NULL;
        fl_unlock(&g->lock);
        atomic_store(&g->stop, true);
        give_up_starts(g);
        fl_sched_block_begin(); /* the started goroutines unwind (their operations fail now) */
        for (int r; (r = atomic_load(&g->remaining)) > 0;) fl_futex_wait(&g->remaining, r);
        fl_sched_block_end();
    }
    fl_lock(&g->lock);
    FlStatus st = g->failed ? fl_err(e, "%s", g->err.msg)
                  : why != FL_ABORT_NONE ? fl_err(e, "%s", fl_g_abort_msg(why))
                                         : FL_OK;
    fl_unlock(&g->lock);
    release(g);
    return st;
}
