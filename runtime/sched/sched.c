/* sched.c: the M:N goroutine scheduler (Go's G/M/P model, cooperative).
 *
 * G: a goroutine (or a waiting thread, see sched_impl.h). P: a processor, i.e. the right to run
 * goroutines, with a local run queue (a locked ring of 256 plus a `runnext` slot that a readied or
 * new goroutine takes, so a ping-pong pair stays on one worker). M: a worker OS thread; while it
 * holds a P its scheduler context ("g0", the thread's own stack) loops: pick a G, switch to it, and
 * when the G switches back, finish what the G asked for (park: unlock its channels; exit: recycle
 * its stack; requeue). Picking: every 61st tick the global queue first (fairness), then runnext,
 * the local ring, the global queue, then spinning: stealing half of another P's ring (its runnext
 * only when it stayed there over 5 us), for at most SPIN_NS, then the P goes idle and the M sleeps
 * on a futex. Readying a G pushes it and wakes an idle P's M only when no M is spinning already
 * (Go's wakep), so a busy worker rarely pays for a futex wake.
 *
 * Blocking regions (Go's syscall handoff): begin releases the M's P to another M (started when the
 * P has work, else left idle for wakep); end takes an idle P back or requeues the G globally and
 * parks the M.
 *
 * Deadlock detection: s->nactive counts goroutines and attached threads that are not blocked
 * (running, runnable, in a region). Readying increments it before the G can run; blocking
 * decrements it after the G's channels are unlocked, so it may over-count for a moment but never
 * under-counts. The decrement that reaches 0 checks, under the scheduler lock, that it is still 0
 * and an attached thread exists, then reports and wakes every blocked party (claim + aborted).
 *
 * Invariants: a G is in at most one run queue; only the claimer readies a waiting G, and only after
 * its context is saved (g->parked); g0 never touches a G after unlocking the channels it parked on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/sched/sched_impl.h"

#if FL_SCHED_ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                     size_t *size_old);
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#endif
#if FL_SCHED_TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif

enum {
    RUNQ_SIZE = 256,
    GFREE_LOCAL_MAX = 256,
    GFREE_GLOBAL_MAX = 16384,
};
#define SPIN_NS 40000         /* an idle worker spins this long before it sleeps */
#define THREAD_SPIN_NS 40000  /* a blocked plain thread spins this long before its futex */
/* Spinners (idle workers, blocked threads) yield the core every few polls: with more runnable
 * threads than cores (the main program's attached thread spinning next to the workers), the
 * thread that has the work then gets the core instead of waiting for the spinners' time slices
 * (a .fl ping-pong between the main program and a goroutine: 36 us a round trip before, 12 us). */
#define RUNNEXT_STEAL_NS 5000 /* a runnext G unchanged this long may be stolen */
#define DEFAULT_STACK (256u * 1024u)

typedef enum { POST_NONE, POST_PARK, POST_YIELD, POST_EXIT, POST_REQUEUE, POST_COUNT } PostKind;

typedef struct FlP {
    int id;
    FlLock lock;           /* runnext, q, head, tail */
    FlG *runnext;
    FlG *q[RUNQ_SIZE];
    uint32_t head, tail;
    _Atomic int n;         /* q entries + (runnext != NULL): lock-free emptiness checks */
    _Atomic uint64_t gen;  /* bumped when runnext is set */
    _Atomic(FlG *) next_peek; /* runnext, for thieves' heuristics */
    FlM *m;
    struct FlP *link;      /* idle list */
    uint32_t schedtick;
    FlG *gfree;            /* finished Gs with their stacks, for reuse (owner only) */
    int ngfree;
} FlP;

struct FlM {
    FlSched *s;
    pthread_t th;
    FlP *p;
    FlG *curg;
    void *g0_sp;
    _Atomic int wake;      /* futex word for stopm */
    bool spinning;
    FlM *idle_next, *all_next;
    uint64_t rng;
    uint64_t *memo_gen, *memo_t; /* per victim P: runnext generation seen and when */
    /* what the G asked g0 to do when it switched back */
    PostKind post;
    FlG *post_g;
    void (*post_unlock)(void *);
    void *post_arg;
    /* sanitizers */
    void *asan_fake;
    const void *g0_bottom;
    size_t g0_size;
    void *tsan_g0;
};

struct FlSched {
    int nprocs;
    size_t stack_size, page;
    uint64_t seed;
    void (*on_deadlock)(void *ud, const char *report);
    void *ud;
    FlP *ps;

    FlLock lock;            /* pidle, midle, allm, allg, gfree, waiters, nattached, report */
    FlP *pidle;
    _Atomic int npidle;
    FlM *midle, *allm;
    _Atomic int nm;
    _Atomic int nspinning;
    FlG *allg;              /* every G ever made (dead ones are cached), and attached threads */
    FlG *gfree;
    _Atomic int ngfree;     /* under lock; atomic for the lock-free emptiness peek */
    FlG *waiters[64];       /* threads in fl_sched_wait */
    int nwaiters;
    int nattached;          /* attached threads + threads in fl_sched_wait */
    FlBuf report;

    FlLock qlock;           /* global run queue */
    FlG *gq_head, *gq_tail;
    _Atomic int64_t gq_n;

    _Atomic int64_t next_id;
    _Atomic int64_t ngoroutines;
    _Atomic int64_t nactive;
    _Atomic int64_t nstacks;
    _Atomic bool deadlocked;
    _Atomic bool panicked; /* fl_sched_panic: blocking operations fail from now on */
    _Atomic bool stopping;
    _Atomic bool shutdown;
    _Atomic int fence;
    _Atomic int sleep_word; /* 0, 1 once stopping or panicked: fl_sched_sleep waits on it */
};

/* A full barrier (a locked RMW; TSan does not model atomic_thread_fence). The Dekker pairs
 * (publish idle P / check queues vs. push work / check idle Ps) use seq_cst atomics throughout. */
static inline void full_fence(FlSched *s) { atomic_fetch_add(&s->fence, 0); }

/* ---- small helpers ---- */

static _Thread_local FlG *tls_g;
static _Thread_local FlM *tls_m;

/* Not inlined, with a compiler barrier: a goroutine may resume on another thread, and the address
 * of a thread-local must not be kept across a switch. */
__attribute__((noinline)) FlG *fl_g_self(void) {
    FlG *g = tls_g;
    __asm__ volatile("" ::: "memory");
    return g;
}
__attribute__((noinline)) static void set_g(FlG *g) {
    tls_g = g;
    __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static FlM *self_m(void) {
    FlM *m = tls_m;
    __asm__ volatile("" ::: "memory");
    return m;
}

void fl_futex_wait(_Atomic int *a, int val) {
    syscall(SYS_futex, a, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}
void fl_futex_wake(_Atomic int *a, int n) {
    syscall(SYS_futex, a, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

void fl_lock_slow(FlLock *l) {
    for (int i = 0; i < 200; i++) {
        int z = 0;
        if (atomic_load_explicit(&l->v, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_weak_explicit(&l->v, &z, 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return;
        fl_cpu_relax();
    }
    while (atomic_exchange_explicit(&l->v, 2, memory_order_acquire) != 0) fl_futex_wait(&l->v, 2);
}
void fl_lock_wake(FlLock *l) { fl_futex_wake(&l->v, 1); }

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t splitmix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
static uint64_t xs_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}
uint32_t fl_g_rand(FlG *g, uint32_t n) {
    return (uint32_t)(((xs_next(&g->rng) >> 32) * (uint64_t)n) >> 32);
}
static uint64_t seed_for(uint64_t base, int64_t id) {
    uint64_t x = splitmix(base ^ splitmix((uint64_t)id));
    return x ? x : 1;
}

/* ---- run queues ---- */

static void gq_put_list(FlSched *s, FlG *head, FlG *tail, int n) {
    tail->schedlink = NULL;
    fl_lock(&s->qlock);
    if (s->gq_tail)
        s->gq_tail->schedlink = head;
    else
        s->gq_head = head;
    s->gq_tail = tail;
    atomic_fetch_add(&s->gq_n, n);
    fl_unlock(&s->qlock);
}
static void gq_put(FlSched *s, FlG *g) { gq_put_list(s, g, g, 1); }

/* Local queue of p; next: into runnext (the old runnext goes to the ring). */
static void runq_put(FlSched *s, FlP *p, FlG *g, bool next) {
    fl_lock(&p->lock);
    if (next) {
        FlG *old = p->runnext;
        p->runnext = g;
        atomic_store_explicit(&p->next_peek, g, memory_order_relaxed);
        atomic_fetch_add_explicit(&p->gen, 1, memory_order_relaxed);
        if (!old) {
            atomic_fetch_add(&p->n, 1);
            fl_unlock(&p->lock);
            return;
        }
        g = old;
    }
    if (p->tail - p->head < RUNQ_SIZE) {
        p->q[p->tail++ % RUNQ_SIZE] = g;
        atomic_fetch_add(&p->n, 1);
        fl_unlock(&p->lock);
        return;
    }
    /* full: half of it and g go to the global queue */
    FlG *head = p->q[p->head % RUNQ_SIZE], *tail = head;
    for (int i = 1; i < RUNQ_SIZE / 2; i++) {
        FlG *x = p->q[(p->head + (uint32_t)i) % RUNQ_SIZE];
        tail->schedlink = x;
        tail = x;
    }
    p->head += RUNQ_SIZE / 2;
    atomic_fetch_sub(&p->n, RUNQ_SIZE / 2);
    fl_unlock(&p->lock);
    tail->schedlink = g;
    gq_put_list(s, head, g, RUNQ_SIZE / 2 + 1);
}

static FlG *runq_get(FlP *p) {
    if (atomic_load_explicit(&p->n, memory_order_acquire) == 0) return NULL;
    FlG *g = NULL;
    fl_lock(&p->lock);
    /* every 31st tick the ring first: a ping-pong pair in runnext cannot starve the ring */
    if (p->runnext && (p->schedtick % 31 != 0 || p->head == p->tail)) {
        g = p->runnext;
        p->runnext = NULL;
        atomic_store_explicit(&p->next_peek, NULL, memory_order_relaxed);
    } else if (p->head != p->tail) {
        g = p->q[p->head++ % RUNQ_SIZE];
    }
    if (g) atomic_fetch_sub(&p->n, 1);
    fl_unlock(&p->lock);
    return g;
}

/* Takes a batch from the global queue: returns one, the rest go to p's ring. */
static FlG *gq_get(FlSched *s, FlP *p, int max) {
    if (atomic_load_explicit(&s->gq_n, memory_order_acquire) == 0) return NULL;
    fl_lock(&s->qlock);
    int64_t n = atomic_load(&s->gq_n);
    if (n == 0) {
        fl_unlock(&s->qlock);
        return NULL;
    }
    int64_t take = n / s->nprocs + 1;
    if (take > n) take = n;
    if (max > 0 && take > max) take = max;
    if (take > RUNQ_SIZE / 2) take = RUNQ_SIZE / 2;
    FlG *g = s->gq_head, *rest = g->schedlink, *last = g;
    for (int64_t i = 1; i < take; i++) last = last->schedlink;
    s->gq_head = last->schedlink;
    if (!s->gq_head) s->gq_tail = NULL;
    atomic_fetch_sub(&s->gq_n, take);
    fl_unlock(&s->qlock);
    if (take > 1) {
        fl_lock(&p->lock);
        for (FlG *x = rest; x; x = x->schedlink) {
            p->q[p->tail++ % RUNQ_SIZE] = x; /* p's ring is empty here: room for RUNQ_SIZE/2 */
            atomic_fetch_add(&p->n, 1);
            if (x == last) break;
        }
        fl_unlock(&p->lock);
    }
    return g;
}

/* Steals half of a victim's ring into m->p (one returned); a victim's runnext only when it has
 * stayed unchanged for RUNNEXT_STEAL_NS (a ping-pong pair keeps its worker). */
static FlG *steal(FlM *m) {
    FlSched *s = m->s;
    FlP *me = m->p;
    int np = s->nprocs;
    int start = (int)(xs_next(&m->rng) % (uint64_t)np);
    for (int k = 0; k < np; k++) {
        FlP *v = &s->ps[(start + k) % np];
        if (v == me || atomic_load_explicit(&v->n, memory_order_acquire) == 0) continue;
        FlG *batch[RUNQ_SIZE / 2];
        int nb = 0;
        FlG *g = NULL;
        fl_lock(&v->lock);
        uint32_t avail = v->tail - v->head;
        if (avail > 0) {
            uint32_t take = avail - avail / 2;
            for (uint32_t i = 0; i < take; i++) batch[nb++] = v->q[v->head++ % RUNQ_SIZE];
            atomic_fetch_sub(&v->n, (int)take);
        } else if (v->runnext) {
            uint64_t gen = atomic_load_explicit(&v->gen, memory_order_relaxed);
            uint64_t t = now_ns();
            if (m->memo_gen[v->id] != gen) {
                m->memo_gen[v->id] = gen;
                m->memo_t[v->id] = t;
            } else if (t - m->memo_t[v->id] >= RUNNEXT_STEAL_NS) {
                batch[nb++] = v->runnext;
                v->runnext = NULL;
                atomic_store_explicit(&v->next_peek, NULL, memory_order_relaxed);
                atomic_fetch_sub(&v->n, 1);
            }
        }
        fl_unlock(&v->lock);
        if (nb == 0) continue;
        g = batch[0];
        if (nb > 1) {
            fl_lock(&me->lock);
            for (int i = 1; i < nb; i++) me->q[me->tail++ % RUNQ_SIZE] = batch[i];
            atomic_fetch_add(&me->n, nb - 1);
            fl_unlock(&me->lock);
        }
        return g;
    }
    return NULL;
}

/* ---- idle Ps and Ms ---- */

static void pidle_put(FlSched *s, FlP *p) { /* under s->lock */
    p->m = NULL;
    p->link = s->pidle;
    s->pidle = p;
    atomic_fetch_add(&s->npidle, 1);
}
static FlP *pidle_get(FlSched *s) { /* under s->lock */
    FlP *p = s->pidle;
    if (p) {
        s->pidle = p->link;
        atomic_fetch_sub(&s->npidle, 1);
    }
    return p;
}

static void *m_main(void *arg);

/* Gives p to an idle M (or a new one) and wakes it. */
static void startm(FlSched *s, FlP *p, bool spinning) {
    fl_lock(&s->lock);
    FlM *m = s->midle;
    if (m) s->midle = m->idle_next;
    fl_unlock(&s->lock);
    if (m) {
        m->p = p;
        p->m = m;
        m->spinning = spinning;
        atomic_store_explicit(&m->wake, 1, memory_order_release);
        fl_futex_wake(&m->wake, 1);
        return;
    }
    m = fl_xcalloc(1, sizeof *m);
    m->s = s;
    m->spinning = spinning;
    m->rng = seed_for(s->seed, -1 - atomic_load(&s->nm));
    m->memo_gen = fl_xcalloc((size_t)s->nprocs, sizeof *m->memo_gen);
    m->memo_t = fl_xcalloc((size_t)s->nprocs, sizeof *m->memo_t);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 1u << 20);
    /* m joins allm and gets its thread under one hold of the lock: fl_sched_free joins every M
     * of allm as it reads it under the lock, so an M in the list without its thread yet would be
     * joined by a handle never set (an M started by a spinning worker while the scheduler shuts
     * down). Once shutdown is set no M is started: p goes back to the idle list. */
    fl_lock(&s->lock);
    if (atomic_load(&s->shutdown)) {
        pidle_put(s, p);
        fl_unlock(&s->lock);
        if (spinning) atomic_fetch_sub(&s->nspinning, 1); /* what the M would have done */
        pthread_attr_destroy(&a);
        free(m->memo_gen);
        free(m->memo_t);
        free(m);
        return;
    }
    m->p = p;
    p->m = m;
    m->all_next = s->allm;
    s->allm = m;
    atomic_fetch_add(&s->nm, 1);
    int rc = pthread_create(&m->th, &a, m_main, m);
    fl_unlock(&s->lock);
    pthread_attr_destroy(&a);
    if (rc != 0) fl_panic(__FILE__, __LINE__, "cannot start a scheduler thread: %s", strerror(rc));
}

/* Wakes an idle P's M to look for work, unless an M is already spinning (which will find it). */
static void wakep(FlSched *s) {
    if (atomic_load(&s->npidle) == 0 || atomic_load(&s->nspinning) != 0) return;
    int z = 0;
    if (!atomic_compare_exchange_strong(&s->nspinning, &z, 1)) return;
    fl_lock(&s->lock);
    FlP *p = pidle_get(s);
    fl_unlock(&s->lock);
    if (!p) {
        atomic_fetch_sub(&s->nspinning, 1);
        return;
    }
    startm(s, p, true);
}

/* Parks m (without a P) until startm hands it one; false when the scheduler shuts down. */
static bool stopm(FlM *m) {
    FlSched *s = m->s;
    fl_lock(&s->lock);
    if (atomic_load(&s->shutdown)) {
        fl_unlock(&s->lock);
        return false;
    }
    atomic_store_explicit(&m->wake, 0, memory_order_relaxed);
    m->idle_next = s->midle;
    s->midle = m;
    fl_unlock(&s->lock);
    while (atomic_load_explicit(&m->wake, memory_order_acquire) == 0) fl_futex_wait(&m->wake, 0);
    return m->p != NULL;
}

/* ---- deadlock detection and aborts ---- */

static const char *STATUS_TEXT[] = {"idle", "runnable", "running", "waiting", "in blocking region",
                                    "dead"};
_Static_assert(sizeof STATUS_TEXT / sizeof STATUS_TEXT[0] == FL_G_STATUS_COUNT, "STATUS_TEXT");

const char *fl_g_abort_msg(FlAbort a) {
    switch (a) {
    case FL_ABORT_NONE: return "no abort";
    case FL_ABORT_DEADLOCK: return "deadlock: all goroutines are blocked";
    case FL_ABORT_SHUTDOWN: return "goroutine abandoned: the scheduler is shutting down";
    case FL_ABORT_PANIC: return FL_SCHED_PANIC_MSG;
    case FL_ABORT_COUNT: break;
    }
    FL_UNREACHABLE();
}

static int cmp_gid(const void *a, const void *b) {
    int64_t x = (*(FlG *const *)a)->id, y = (*(FlG *const *)b)->id;
    return (x > y) - (x < y);
}

/* Every live G of s (threads too when with_threads) in id order; under s->lock. */
static size_t live_gs(FlSched *s, bool with_threads, FlG ***out) {
    size_t n = 0, cap = 0;
    FlG **v = NULL;
    for (FlG *g = s->allg; g; g = g->allnext) {
        int st = atomic_load(&g->status);
        if (st == FL_G_IDLE || st == FL_G_DEAD) continue;
        if (g->kind == FL_G_THREAD && !with_threads) continue;
        fl_grow((void **)&v, &cap, n + 1, sizeof *v);
        v[n++] = g;
    }
    if (n > 1) qsort(v, n, sizeof *v, cmp_gid);
    *out = v;
    return n;
}

static void line_for(FlBuf *b, FlG *g) {
    int st = atomic_load(&g->status);
    const char *what = st == FL_G_WAITING ? atomic_load(&g->wait_reason) : STATUS_TEXT[st];
    fl_buf_printf(b, "  goroutine %lld (%s): %s\n", (long long)g->id, atomic_load(&g->label) ? atomic_load(&g->label) : "?",
                  what ? what : "?");
}

/* Claims every waiting G and wakes it with `why`. Under s->lock. */
static void abort_waiting(FlSched *s, FlAbort why, FlG **woken, size_t *nwoken) {
    for (FlG *g = s->allg; g; g = g->allnext) {
        if (atomic_load(&g->status) != FL_G_WAITING) continue;
        if (!fl_g_claim(g)) continue;
        g->aborted = why;
        g->param = NULL;
        woken[(*nwoken)++] = g;
    }
}

static size_t count_allg(FlSched *s) {
    size_t n = 0;
    for (FlG *g = s->allg; g; g = g->allnext) n++;
    return n;
}

static void ready_all(FlG **v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        FlG *g = v[i];
        if (g->kind == FL_G_GOROUTINE)
            while (!atomic_load_explicit(&g->parked, memory_order_acquire)) fl_cpu_relax();
        fl_g_ready(g);
    }
}

static void check_deadlock(FlSched *s) {
    fl_lock(&s->lock);
    if (atomic_load(&s->nactive) != 0 || s->nattached == 0 || atomic_load(&s->deadlocked) ||
        atomic_load(&s->stopping)) {
        fl_unlock(&s->lock);
        return;
    }
    FlG **gs;
    size_t n = live_gs(s, true, &gs);
    fl_buf_puts(&s->report, "deadlock: all goroutines are blocked\n");
    for (size_t i = 0; i < n; i++) line_for(&s->report, gs[i]);
    free(gs);
    atomic_store(&s->deadlocked, true);
    FlG **woken = fl_xmalloc(fl_mul_size(count_allg(s) + 1, sizeof *woken));
    size_t nwoken = 0;
    abort_waiting(s, FL_ABORT_DEADLOCK, woken, &nwoken);
    fl_unlock(&s->lock);
    if (s->on_deadlock) s->on_deadlock(s->ud, fl_buf_str(&s->report));
    ready_all(woken, nwoken);
    free(woken);
}

/* Wakes every waiting G with `why`; called under s->lock, returns with it released. */
static void abort_all(FlSched *s, FlAbort why) {
    FlG **woken = fl_xmalloc(fl_mul_size(count_allg(s) + 1, sizeof *woken));
    size_t nwoken = 0;
    abort_waiting(s, why, woken, &nwoken);
    fl_unlock(&s->lock);
    ready_all(woken, nwoken);
    free(woken);
}

/* Ends every fl_sched_sleep of s now and later (the program is over). */
static void wake_sleepers(FlSched *s) {
    atomic_store(&s->sleep_word, 1);
    syscall(SYS_futex, &s->sleep_word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

FlStatus fl_sched_sleep(double seconds, FlErr *e) {
    FlG *g = fl_g_self();
    FlSched *s = g ? g->s : NULL;
    struct timespec now, end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    double whole = seconds > 0 ? (double)(time_t)seconds : 0;
    end.tv_sec += (time_t)whole;
    end.tv_nsec += seconds > 0 ? (long)((seconds - whole) * 1e9) : 0;
    if (end.tv_nsec >= 1000000000L) end.tv_sec++, end.tv_nsec -= 1000000000L;
    fl_sched_block_begin();
    while (!s || !atomic_load(&s->sleep_word)) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        struct timespec rel = {end.tv_sec - now.tv_sec, end.tv_nsec - now.tv_nsec};
        if (rel.tv_nsec < 0) rel.tv_sec--, rel.tv_nsec += 1000000000L;
        if (rel.tv_sec < 0) break;
        if (s) syscall(SYS_futex, &s->sleep_word, FUTEX_WAIT_PRIVATE, 0, &rel, NULL, 0);
        else nanosleep(&rel, NULL);
    }
    fl_sched_block_end();
    if (!s || !atomic_load(&s->sleep_word)) return FL_OK;
    return fl_err(e, "%s", fl_g_abort_msg(atomic_load(&s->panicked) ? FL_ABORT_PANIC : FL_ABORT_SHUTDOWN));
}

void fl_sched_panic(FlSched *s) {
    fl_lock(&s->lock);
    if (atomic_exchange(&s->panicked, true) || atomic_load(&s->stopping)) {
        fl_unlock(&s->lock);
        return;
    }
    abort_all(s, FL_ABORT_PANIC);
    wake_sleepers(s);
}

bool fl_sched_panicked(FlSched *s) { return atomic_load(&s->panicked); }

/* One party of s stopped being active (blocked, exited, detached). */
static void went_inactive(FlSched *s) {
    if (atomic_fetch_sub(&s->nactive, 1) == 1) check_deadlock(s);
}

/* ---- goroutine life cycle ---- */

/* TSan must not instrument a goroutine's first frame (g_entry) nor the switch it leaves by
 * (g_to_g0), not even their entry and exit: an exiting goroutine never returns from them, so
 * their shadow frames would pile up on the G's fiber, which the next goroutine on the G reuses,
 * and every stack trace TSan records would grow with the goroutines run before it. */
#if FL_SCHED_TSAN && defined(__clang__)
#define NO_TSAN_FRAME __attribute__((disable_sanitizer_instrumentation))
#elif FL_SCHED_TSAN
#define NO_TSAN_FRAME __attribute__((no_sanitize_thread))
#else
#define NO_TSAN_FRAME
#endif

NO_TSAN_FRAME static void g_to_g0(FlG *g, PostKind post);

NO_TSAN_FRAME static void g_entry(void *arg) {
    FlG *g = arg;
#if FL_SCHED_ASAN
    {
        const void *b;
        size_t sz;
        __sanitizer_finish_switch_fiber(NULL, &b, &sz);
        g->m->g0_bottom = b;
        g->m->g0_size = sz;
    }
#endif
    g->fn(g->arg);
    FL_ASSERT(g->region_depth == 0); /* a goroutine ended inside a blocking region */
    g_to_g0(g, POST_EXIT);
    FL_UNREACHABLE();
}

/* Switches from goroutine g to its worker's g0, which performs `post`. Returns when g resumes. */
NO_TSAN_FRAME static void g_to_g0(FlG *g, PostKind post) {
    FlM *m = g->m;
    m->post = post;
    m->post_g = g;
#if FL_SCHED_ASAN
    __sanitizer_start_switch_fiber(post == POST_EXIT ? NULL : &g->asan_fake, m->g0_bottom,
                                   m->g0_size);
#endif
#if FL_SCHED_TSAN
    __tsan_switch_to_fiber(m->tsan_g0, 0);
#endif
    fl_ctx_switch(&g->sp, m->g0_sp);
#if FL_SCHED_ASAN
    {
        const void *b;
        size_t sz;
        __sanitizer_finish_switch_fiber(g->asan_fake, &b, &sz);
        g->m->g0_bottom = b;
        g->m->g0_size = sz;
    }
#endif
}

static void allg_add(FlSched *s, FlG *g) { /* under s->lock */
    g->allprev = NULL;
    g->allnext = s->allg;
    if (s->allg) s->allg->allprev = g;
    s->allg = g;
}
static void allg_remove(FlSched *s, FlG *g) { /* under s->lock */
    if (g->allprev)
        g->allprev->allnext = g->allnext;
    else
        s->allg = g->allnext;
    if (g->allnext) g->allnext->allprev = g->allprev;
}

/* Unmaps a G's stack and frees it (never the running one's). Its TSan fiber lives as long as the
 * G, reused by the goroutines that reuse the G: making one costs more than a goroutine (its
 * state is memset, ~100 us), and reuse adds no false ordering, as the next goroutine on a G
 * already happens after the last one ended (the G passes from its exit to the next fl_go
 * through the free lists' locks, and every switch through g0 synchronises). */
static void g_free(FlSched *s, FlG *g) {
#if FL_SCHED_TSAN
    if (g->tsan_fiber) __tsan_destroy_fiber(g->tsan_fiber);
#endif
    munmap(g->stack, g->stack_size + s->page);
    free(g);
}

static void gfree_put(FlSched *s, FlP *p, FlG *g) {
    FlG *list = g;
    int n = 1;
    g->schedlink = NULL;
    if (p) {
        g->schedlink = p->gfree;
        p->gfree = g;
        if (++p->ngfree <= GFREE_LOCAL_MAX) return;
        /* move half of p's cache to the global one */
        n = p->ngfree / 2;
        list = p->gfree;
        FlG *last = list;
        for (int i = 1; i < n; i++) last = last->schedlink;
        p->gfree = last->schedlink;
        p->ngfree -= n;
        last->schedlink = NULL;
    }
    FlG *unmap = NULL;
    fl_lock(&s->lock);
    while (list) {
        FlG *x = list;
        list = list->schedlink;
        if (s->ngfree < GFREE_GLOBAL_MAX) {
            x->schedlink = s->gfree;
            s->gfree = x;
            s->ngfree++;
        } else { /* beyond the cache's cap: unmap */
            allg_remove(s, x);
            x->schedlink = unmap;
            unmap = x;
        }
    }
    fl_unlock(&s->lock);
    while (unmap) {
        FlG *x = unmap;
        unmap = x->schedlink;
        g_free(s, x);
    }
}

static FlG *gfree_get(FlSched *s, FlP *p) {
    if (p && p->gfree) {
        FlG *g = p->gfree;
        p->gfree = g->schedlink;
        p->ngfree--;
        return g;
    }
    if (atomic_load_explicit(&s->ngfree, memory_order_relaxed) == 0) return NULL; /* the lock decides */
    fl_lock(&s->lock);
    FlG *g = s->gfree;
    if (g) {
        s->gfree = g->schedlink;
        s->ngfree--;
        /* refill p's cache with a few more */
        for (int i = 0; p && i < GFREE_LOCAL_MAX / 2 && s->gfree; i++) {
            FlG *x = s->gfree;
            s->gfree = x->schedlink;
            s->ngfree--;
            x->schedlink = p->gfree;
            p->gfree = x;
            p->ngfree++;
        }
    }
    fl_unlock(&s->lock);
    return g;
}

static FlG *galloc(FlSched *s, FlErr *e) {
    size_t total = s->stack_size + s->page;
    char *st = mmap(NULL, total, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (st == MAP_FAILED) {
        fl_err(e, "cannot allocate a goroutine stack of %zu KiB: %s", s->stack_size / 1024,
               strerror(errno));
        return NULL;
    }
    if (mprotect(st, s->page, PROT_NONE) != 0) {
        fl_err(e, "cannot protect a goroutine stack's guard page: %s", strerror(errno));
        munmap(st, total);
        return NULL;
    }
    FlG *g = fl_xcalloc(1, sizeof *g);
    g->kind = FL_G_GOROUTINE;
    g->s = s;
    g->stack = st;
    g->stack_size = s->stack_size;
    atomic_store(&g->status, FL_G_IDLE);
    atomic_fetch_add(&s->nstacks, 1);
    fl_lock(&s->lock);
    allg_add(s, g);
    fl_unlock(&s->lock);
    return g;
}

FlStatus fl_go(FlSched *s, void (*fn)(void *), void *arg, const char *label, FlErr *e) {
    if (atomic_load(&s->stopping))
        return fl_err(e, "cannot start a goroutine: the scheduler is shutting down");
    FlM *m = self_m();
    FlP *p = m && m->s == s ? m->p : NULL;
    FlG *g = gfree_get(s, p);
    if (!g && !(g = galloc(s, e))) return FL_ERROR;
    g->fn = fn;
    g->arg = arg;
    g->label = label;
    g->id = atomic_fetch_add_explicit(&s->next_id, 1, memory_order_relaxed);
    g->rng = seed_for(s->seed, g->id);
    g->region_depth = 0;
    g->aborted = FL_ABORT_NONE;
    g->param = NULL;
    atomic_store_explicit(&g->claim, 1, memory_order_relaxed);
    atomic_store_explicit(&g->wait_reason, NULL, memory_order_relaxed);
    g->sp = fl_ctx_make(g->stack + s->page + g->stack_size, g_entry, g);
#if FL_SCHED_TSAN
    if (!g->tsan_fiber) g->tsan_fiber = __tsan_create_fiber(0); /* kept with the G: see g_free */
#endif
    atomic_fetch_add(&s->ngoroutines, 1);
    atomic_fetch_add(&s->nactive, 1);
    atomic_store_explicit(&g->status, FL_G_RUNNABLE, memory_order_release);
    if (p)
        runq_put(s, p, g, true);
    else
        gq_put(s, g);
    wakep(s);
    return FL_OK;
}

/* g0, after g returned from its function. */
static void g_exited(FlM *m, FlG *g) {
    FlSched *s = m->s;
    atomic_store(&g->status, FL_G_DEAD);
#if FL_SCHED_ASAN
    __asan_unpoison_memory_region(g->stack + s->page, g->stack_size);
#endif
    gfree_put(s, m->p, g);
    if (atomic_fetch_sub(&s->ngoroutines, 1) == 1) {
        FlG *w[FL_ARRAY_LEN(s->waiters)];
        size_t nw = 0;
        fl_lock(&s->lock);
        for (int i = 0; i < s->nwaiters; i++)
            if (fl_g_claim(s->waiters[i])) w[nw++] = s->waiters[i];
        s->nwaiters = 0;
        fl_unlock(&s->lock);
        for (size_t i = 0; i < nw; i++) fl_g_ready(w[i]);
    }
    went_inactive(s);
}

/* ---- the worker loop ---- */

static FlG *findrunnable(FlM *m) {
    FlSched *s = m->s;
top:;
    FlP *p = m->p;
    FlG *g;
    if (p->schedtick % 61 == 0 && (g = gq_get(s, p, 1))) return g;
    if ((g = runq_get(p))) return g;
    if ((g = gq_get(s, p, 0))) return g;
    if (atomic_load(&s->shutdown)) goto release;
    if (!m->spinning) {
        int busy = s->nprocs - atomic_load(&s->npidle);
        if (2 * atomic_load(&s->nspinning) < busy) {
            m->spinning = true;
            atomic_fetch_add(&s->nspinning, 1);
        }
    }
    if (m->spinning) {
        uint64_t t0 = now_ns();
        for (int i = 1;; i++) {
            if ((g = steal(m))) return g;
            if ((g = gq_get(s, p, 0))) return g;
            if ((i & 15) == 0) {
                if (atomic_load(&s->shutdown) || now_ns() - t0 > SPIN_NS) break;
                sched_yield();
            }
            for (int k = 0; k < 8; k++) fl_cpu_relax();
        }
    }
release:
    fl_lock(&s->lock);
    if (!atomic_load(&s->shutdown) && atomic_load(&s->gq_n) > 0) {
        fl_unlock(&s->lock);
        if ((g = gq_get(s, p, 0))) return g;
        fl_lock(&s->lock);
    }
    m->p = NULL;
    pidle_put(s, p);
    fl_unlock(&s->lock);
    bool was_spinning = m->spinning;
    if (was_spinning) {
        m->spinning = false;
        atomic_fetch_sub(&s->nspinning, 1);
    }
    /* recheck after publishing the idle P: a readier that saw no idle P relies on us */
    full_fence(s);
    if (atomic_load(&s->shutdown)) return NULL;
    bool work = atomic_load(&s->gq_n) > 0;
    for (int i = 0; i < s->nprocs && !work; i++) work = atomic_load(&s->ps[i].n) > 0;
    if (work) {
        fl_lock(&s->lock);
        p = pidle_get(s);
        fl_unlock(&s->lock);
        if (p) {
            m->p = p;
            p->m = m;
            if (was_spinning) {
                m->spinning = true;
                atomic_fetch_add(&s->nspinning, 1);
            }
            goto top;
        }
    }
    return NULL;
}

static void execute(FlM *m, FlG *g) {
    m->curg = g;
    g->m = m;
    m->p->schedtick++;
    atomic_store_explicit(&g->status, FL_G_RUNNING, memory_order_relaxed);
    set_g(g);
#if FL_SCHED_ASAN
    __sanitizer_start_switch_fiber(&m->asan_fake, g->stack + m->s->page, g->stack_size);
#endif
#if FL_SCHED_TSAN
    __tsan_switch_to_fiber(g->tsan_fiber, 0);
#endif
    fl_ctx_switch(&m->g0_sp, g->sp);
#if FL_SCHED_ASAN
    __sanitizer_finish_switch_fiber(m->asan_fake, NULL, NULL);
#endif
    set_g(NULL);
    m->curg = NULL;
    FlG *pg = m->post_g;
    PostKind post = m->post;
    m->post = POST_NONE;
    switch (post) {
    case POST_PARK:
        atomic_store_explicit(&pg->parked, 1, memory_order_release);
        m->post_unlock(m->post_arg); /* pg may run elsewhere from here on */
        went_inactive(m->s);
        break;
    case POST_YIELD:
        atomic_store_explicit(&pg->status, FL_G_RUNNABLE, memory_order_relaxed);
        runq_put(m->s, m->p, pg, false);
        break;
    case POST_EXIT: g_exited(m, pg); break;
    case POST_REQUEUE: /* end of a blocking region with no free P: m has none either */
        atomic_store_explicit(&pg->status, FL_G_RUNNABLE, memory_order_relaxed);
        gq_put(m->s, pg);
        wakep(m->s);
        break;
    case POST_NONE:
    case POST_COUNT: FL_UNREACHABLE();
    }
}

static void *m_main(void *arg) {
    FlM *m = arg;
    tls_m = m;
#if FL_SCHED_TSAN
    m->tsan_g0 = __tsan_get_current_fiber();
#endif
    for (;;) {
        if (!m->p && !stopm(m)) break;
        if (!m->p) continue;
        FlG *g = findrunnable(m);
        if (!g) continue;
        if (m->spinning) {
            m->spinning = false;
            if (atomic_fetch_sub(&m->s->nspinning, 1) == 1) wakep(m->s);
        }
        execute(m, g);
    }
    return NULL;
}

/* ---- park / ready ---- */

static void thread_g_init(FlG *tmp) {
    memset(tmp, 0, sizeof *tmp);
    tmp->kind = FL_G_THREAD;
    atomic_store(&tmp->label, "thread");
    atomic_store_explicit(&tmp->status, FL_G_RUNNING, memory_order_relaxed);
    atomic_store_explicit(&tmp->claim, 1, memory_order_relaxed);
    uintptr_t a = (uintptr_t)tmp;
    tmp->rng = seed_for(now_ns(), (int64_t)a);
}

FlG *fl_g_get(FlG *tmp) {
    FlG *g = fl_g_self();
    if (g) return g;
    thread_g_init(tmp);
    return tmp;
}

bool fl_g_prepare(FlG *g, const char *reason) {
    FL_ASSERT(g->region_depth == 0); /* no channel operation inside a blocking region */
    g->aborted = FL_ABORT_NONE;
    g->param = NULL;
    atomic_store_explicit(&g->parked, 0, memory_order_relaxed);
    atomic_store_explicit(&g->wake, 0, memory_order_relaxed);
    atomic_store_explicit(&g->wait_reason, reason, memory_order_relaxed);
    atomic_store_explicit(&g->status, FL_G_WAITING, memory_order_relaxed);
    atomic_store_explicit(&g->claim, 0, memory_order_seq_cst);
    FlSched *s = g->s;
    if (!s) return true;
    FlAbort why = atomic_load(&s->deadlocked)  ? FL_ABORT_DEADLOCK
                  : atomic_load(&s->stopping) ? FL_ABORT_SHUTDOWN
                  : atomic_load(&s->panicked) ? FL_ABORT_PANIC
                                              : FL_ABORT_NONE;
    if (why == FL_ABORT_NONE) return true;
    if (fl_g_claim(g)) { /* not blocking after all */
        atomic_store_explicit(&g->status, FL_G_RUNNING, memory_order_relaxed);
        g->aborted = why;
        return false;
    }
    return true; /* an aborter claimed us already: park, it wakes us at once */
}

void fl_g_park(FlG *g, void (*unlock)(void *), void *arg) {
    if (g->kind == FL_G_GOROUTINE) {
        FlM *m = g->m;
        m->post_unlock = unlock;
        m->post_arg = arg;
        g_to_g0(g, POST_PARK);
        return;
    }
    unlock(arg);
    if (g->s) went_inactive(g->s);
    uint64_t t0 = 0;
    for (int i = 1;; i++) {
        if (atomic_load_explicit(&g->wake, memory_order_acquire) == 1) return;
        if ((i & 63) == 0) {
            uint64_t t = now_ns();
            if (!t0)
                t0 = t;
            else if (t - t0 > THREAD_SPIN_NS)
                break;
            sched_yield();
        }
        fl_cpu_relax();
    }
    int z = 0;
    if (atomic_compare_exchange_strong(&g->wake, &z, 2))
        while (atomic_load_explicit(&g->wake, memory_order_acquire) == 2) fl_futex_wait(&g->wake, 2);
}

void fl_g_ready(FlG *g) {
    FlSched *s = g->s;
    if (s) atomic_fetch_add(&s->nactive, 1);
    atomic_store_explicit(&g->status, g->kind == FL_G_GOROUTINE ? FL_G_RUNNABLE : FL_G_RUNNING,
                          memory_order_relaxed);
    if (g->kind == FL_G_THREAD) {
        /* after the exchange the thread may return and its G (on its stack) vanish; a late
         * futex_wake on that address is harmless */
        if (atomic_exchange_explicit(&g->wake, 1, memory_order_acq_rel) == 2)
            fl_futex_wake(&g->wake, 1);
        return;
    }
    FlM *m = self_m();
    if (m && m->s == s && m->p)
        runq_put(s, m->p, g, true);
    else
        gq_put(s, g);
    wakep(s);
}

/* ---- public API ---- */

static void unlock_lock(void *l) { fl_unlock(l); }

FlSched *fl_sched_new(const FlSchedConfig *cfg, FlErr *e) {
    FlSchedConfig c = cfg ? *cfg : (FlSchedConfig){0};
    if (c.nprocs <= 0) c.nprocs = fl_sched_nprocs(NULL);
    if (c.nprocs > 1024) return fl_err(e, "too many processors: %d (at most 1024)", c.nprocs), NULL;
    long page = sysconf(_SC_PAGESIZE);
    size_t pg = page > 0 ? (size_t)page : 4096;
    size_t st = c.stack_size ? c.stack_size : DEFAULT_STACK;
    if (st < 16 * 1024) st = 16 * 1024;
    if (st > ((size_t)1 << 32))
        return fl_err(e, "goroutine stack size %zu is too large (at most 4 GiB)", st), NULL;
    st = (st + pg - 1) / pg * pg;
    FlSched *s = fl_xcalloc(1, sizeof *s);
    s->nprocs = c.nprocs;
    s->stack_size = st;
    s->page = pg;
    s->seed = c.seed ? c.seed : now_ns() ^ (uint64_t)(uintptr_t)s;
    s->on_deadlock = c.on_deadlock;
    s->ud = c.ud;
    s->ps = fl_xcalloc((size_t)c.nprocs, sizeof *s->ps);
    for (int i = c.nprocs - 1; i >= 0; i--) {
        s->ps[i].id = i;
        pidle_put(s, &s->ps[i]);
    }
    atomic_store(&s->next_id, 1);
    return s;
}

/* Waits until every goroutine has returned, as a waiter the detector does not count (after a
 * deadlock, when the woken goroutines unwind; at shutdown). */
static void wait_uncounted(FlSched *s) {
    while (atomic_load(&s->ngoroutines) > 0) {
        FlG w;
        thread_g_init(&w);
        fl_lock(&s->lock);
        if (atomic_load(&s->ngoroutines) == 0 || s->nwaiters == (int)FL_ARRAY_LEN(s->waiters)) {
            fl_unlock(&s->lock);
            if (atomic_load(&s->ngoroutines) > 0) usleep(1000);
            continue;
        }
        (void)fl_g_prepare(&w, "wait for goroutines");
        s->waiters[s->nwaiters++] = &w;
        fl_g_park(&w, unlock_lock, &s->lock);
    }
}

void fl_sched_free(FlSched *s) {
    if (!s) return;
    FL_ASSERT(fl_g_self() == NULL); /* not from a goroutine or an attached thread */
    fl_lock(&s->lock);
    FL_ASSERT(s->nattached == 0);
    atomic_store(&s->stopping, true);
    full_fence(s);
    abort_all(s, FL_ABORT_SHUTDOWN);
    wake_sleepers(s);
    wait_uncounted(s);
    fl_lock(&s->lock);
    atomic_store(&s->shutdown, true);
    for (FlM *m = s->midle; m; m = m->idle_next) {
        atomic_store_explicit(&m->wake, 1, memory_order_release);
        fl_futex_wake(&m->wake, 1);
    }
    s->midle = NULL;
    FlM *all = s->allm;
    fl_unlock(&s->lock);
    for (FlM *m = all; m; m = m->all_next) pthread_join(m->th, NULL);
    /* a worker that was on its way to idle when shutdown was set may have queued itself after
     * the wake loop: joining covers it because stopm re-checks shutdown under the lock */
    while (all) {
        FlM *m = all;
        all = m->all_next;
        free(m->memo_gen);
        free(m->memo_t);
        free(m);
    }
    FlG *g = s->allg;
    while (g) {
        FlG *next = g->allnext;
        FL_ASSERT(g->kind == FL_G_GOROUTINE);
        g_free(s, g);
        g = next;
    }
    fl_buf_free(&s->report);
    free(s->ps);
    free(s);
}

FlStatus fl_sched_wait(FlSched *s, FlErr *e) {
    FlG *self = fl_g_self();
    FL_ASSERT(!self || self->kind == FL_G_THREAD); /* not from a goroutine */
    FL_ASSERT(!self || self->s == s);
    FlG tmp, *g = self;
    if (atomic_load(&s->deadlocked)) {
        wait_uncounted(s);
        return fl_err(e, "%s", fl_g_abort_msg(FL_ABORT_DEADLOCK));
    }
    fl_lock(&s->lock);
    if (atomic_load(&s->ngoroutines) == 0) {
        fl_unlock(&s->lock);
        return FL_OK;
    }
    if (!g) {
        g = fl_g_get(&tmp);
        g->s = s;
        g->id = atomic_fetch_add(&s->next_id, 1);
        atomic_store(&g->label, "fl_sched_wait");
        allg_add(s, g);
        s->nattached++;
        atomic_fetch_add(&s->nactive, 1);
    }
    FL_ASSERT(s->nwaiters < (int)FL_ARRAY_LEN(s->waiters));
    FlStatus st = FL_OK;
    if (!fl_g_prepare(g, "wait for goroutines")) {
        fl_unlock(&s->lock);
        st = fl_err(e, "%s", fl_g_abort_msg(g->aborted));
    } else {
        s->waiters[s->nwaiters++] = g;
        fl_g_park(g, unlock_lock, &s->lock);
        if (g->aborted) {
            st = fl_err(e, "%s", fl_g_abort_msg(g->aborted));
            fl_lock(&s->lock);
            for (int i = 0; i < s->nwaiters; i++)
                if (s->waiters[i] == g) s->waiters[i--] = s->waiters[--s->nwaiters];
            fl_unlock(&s->lock);
        }
    }
    atomic_store(&g->status, FL_G_RUNNING);
    if (g == &tmp) {
        fl_lock(&s->lock);
        allg_remove(s, g);
        s->nattached--;
        fl_unlock(&s->lock);
        went_inactive(s);
    }
    if (st != FL_OK) wait_uncounted(s); /* the woken goroutines unwind; wait for them */
    return st;
}

void fl_sched_attach(FlSched *s, const char *label) {
    FL_ASSERT(fl_g_self() == NULL); /* a goroutine or an already attached thread */
    FlG *g = fl_xcalloc(1, sizeof *g);
    g->kind = FL_G_THREAD;
    g->s = s;
    g->label = label;
    g->id = atomic_fetch_add(&s->next_id, 1);
    g->rng = seed_for(s->seed, g->id);
    atomic_store(&g->claim, 1);
    atomic_store(&g->status, FL_G_RUNNING);
    fl_lock(&s->lock);
    allg_add(s, g);
    s->nattached++;
    atomic_fetch_add(&s->nactive, 1);
    fl_unlock(&s->lock);
    set_g(g);
}

void fl_sched_detach(FlSched *s) {
    FlG *g = fl_g_self();
    FL_ASSERT(g && g->kind == FL_G_THREAD && g->s == s && g->region_depth == 0);
    fl_lock(&s->lock);
    allg_remove(s, g);
    s->nattached--;
    fl_unlock(&s->lock);
    set_g(NULL);
    free(g);
    went_inactive(s);
}

void fl_sched_block_begin(void) {
    FlG *g = fl_g_self();
    if (!g || g->region_depth++ > 0) return;
    atomic_store_explicit(&g->status, FL_G_REGION, memory_order_relaxed);
    if (g->kind == FL_G_THREAD) return;
    FlSched *s = g->s;
    FlM *m = g->m;
    FlP *p = m->p;
    m->p = NULL;
    p->m = NULL;
    /* hand p off: to a worker at once when it has work, else leave it idle for wakep */
    if (atomic_load(&p->n) > 0 || atomic_load(&s->gq_n) > 0) {
        startm(s, p, false);
        return;
    }
    fl_lock(&s->lock);
    pidle_put(s, p);
    fl_unlock(&s->lock);
    full_fence(s);
    if (atomic_load(&s->gq_n) > 0) wakep(s);
}

void fl_sched_block_end(void) {
    FlG *g = fl_g_self();
    if (!g) return;
    FL_ASSERT(g->region_depth > 0); /* block_end without block_begin */
    if (--g->region_depth > 0) return;
    if (g->kind == FL_G_THREAD) {
        atomic_store_explicit(&g->status, FL_G_RUNNING, memory_order_relaxed);
        return;
    }
    FlSched *s = g->s;
    fl_lock(&s->lock);
    FlP *p = pidle_get(s);
    fl_unlock(&s->lock);
    if (p) {
        FlM *m = g->m;
        m->p = p;
        p->m = m;
        atomic_store_explicit(&g->status, FL_G_RUNNING, memory_order_relaxed);
        return;
    }
    g_to_g0(g, POST_REQUEUE);
}

void fl_yield(void) {
    FlG *g = fl_g_self();
    if (!g || g->kind == FL_G_THREAD) {
        sched_yield();
        return;
    }
    g_to_g0(g, POST_YIELD);
}

void fl_sched_set_label(const char *label) {
    if (tls_g && label) atomic_store(&tls_g->label, label);
}

int64_t fl_go_id(void) {
    FlG *g = fl_g_self();
    return g ? g->id : 0;
}

size_t fl_sched_list(FlSched *s, FlBuf *out) {
    fl_lock(&s->lock);
    FlG **gs;
    size_t n = live_gs(s, false, &gs);
    for (size_t i = 0; i < n; i++) line_for(out, gs[i]);
    fl_unlock(&s->lock);
    free(gs);
    return n;
}

const char *fl_sched_deadlock_report(FlSched *s) {
    return atomic_load(&s->deadlocked) ? fl_buf_str(&s->report) : NULL;
}

FlSchedStats fl_sched_stats(FlSched *s) {
    return (FlSchedStats){.goroutines = atomic_load(&s->ngoroutines),
                          .threads = atomic_load(&s->nm),
                          .stacks = atomic_load(&s->nstacks)};
}

int fl_sched_nprocs(const FlSched *s) {
    if (s) return s->nprocs;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    return ncpu > 0 ? (int)ncpu : 1;
}
