/* sched_impl.h: what sched.c, chan.c and ctx.c share inside runtime/sched/ (never included from
 * outside the folder): the goroutine record (FlG), the waiter record (FlSudog), the futex lock, and
 * the park / ready protocol that channels use.
 *
 * Park / ready protocol (Go's gopark / goready, with a claim word for select and aborts):
 *   1. The blocking party holds the lock(s) of the channel(s) and calls fl_g_prepare(); when that
 *      returns false the scheduler is deadlocked or shutting down: unlock and fail.
 *   2. It queues its sudogs on the channels and calls fl_g_park(g, reason, unlock, arg). A
 *      goroutine switches to its worker's scheduler context first, which then calls unlock(arg):
 *      nobody can find the sudogs before the goroutine's registers are saved. A thread calls
 *      unlock(arg) and sleeps (bounded spin, then futex).
 *   3. A waker, holding the channel lock, takes a sudog off the queue and claims its G with
 *      fl_g_claim (a CAS of g->claim 0 -> 1; only one waker wins, the others skip the stale sudog:
 *      that is how one select case wins), fills in the sudog (value, success) and g->param, unlocks,
 *      then calls fl_g_ready(g).
 *   4. The woken party re-locks and unqueues its remaining sudogs (select), or, when g->aborted is
 *      set (deadlock or shutdown), all of them, and returns.
 * Every field a waker writes is written before fl_g_ready, whose queue push / wake flag is a
 * release that the woken party's resumption acquires: channel hand-over is TSan-visible.
 */
#ifndef FL_SCHED_IMPL_H
#define FL_SCHED_IMPL_H

#include <stdatomic.h>

#include "runtime/sched/chan.h"
#include "runtime/sched/sched.h"

/* ---- sanitizer detection ---- */
#if defined(__SANITIZE_ADDRESS__)
#define FL_SCHED_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define FL_SCHED_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#undef FL_SCHED_ASAN
#define FL_SCHED_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#undef FL_SCHED_TSAN
#define FL_SCHED_TSAN 1
#endif
#endif

/* ---- a futex-based lock with a short spin (Drepper's mutex); no owner: a goroutine may lock it
 * and its worker's scheduler context unlock it on the same OS thread. ---- */
typedef struct FlLock {
    _Atomic int v; /* 0 free, 1 locked, 2 locked with sleepers */
} FlLock;
void fl_lock_slow(FlLock *l);
void fl_lock_wake(FlLock *l);
static inline void fl_lock(FlLock *l) {
    int z = 0;
    if (!atomic_compare_exchange_strong_explicit(&l->v, &z, 1, memory_order_acquire,
                                                 memory_order_relaxed))
        fl_lock_slow(l);
}
static inline void fl_unlock(FlLock *l) {
    if (atomic_exchange_explicit(&l->v, 0, memory_order_release) == 2) fl_lock_wake(l);
}
static inline void fl_cpu_relax(void) { __builtin_ia32_pause(); }
/* Sleeps while *a == val (spurious wake-ups happen: re-check); wakes up to n sleepers on a. */
void fl_futex_wait(_Atomic int *a, int val);
void fl_futex_wake(_Atomic int *a, int n);

/* ---- goroutines and waiting threads ---- */
typedef enum {
    FL_G_IDLE,     /* cached, not started */
    FL_G_RUNNABLE, /* in a run queue */
    FL_G_RUNNING,
    FL_G_WAITING,  /* parked on channels / select / fl_sched_wait */
    FL_G_REGION,   /* inside fl_sched_block_begin/end */
    FL_G_DEAD,
    FL_G_STATUS_COUNT
} FlGStatus;

typedef enum { FL_G_GOROUTINE, FL_G_THREAD, FL_G_KIND_COUNT } FlGKind;
typedef enum { FL_ABORT_NONE, FL_ABORT_DEADLOCK, FL_ABORT_SHUTDOWN, FL_ABORT_PANIC, FL_ABORT_COUNT } FlAbort;

typedef struct FlM FlM;
typedef struct FlSudog FlSudog;
typedef struct FlG FlG;

struct FlG {
    FlGKind kind;
    FlSched *s;          /* NULL: a plain (unattached) thread, invisible to the detector */
    int64_t id;
    _Atomic(const char *) label; /* borrowed, immutable text; fl_sched_set_label swaps it */
    _Atomic int status;  /* FlGStatus */
    const char *_Atomic wait_reason; /* "chan receive", ... while WAITING */
    _Atomic int claim;   /* 0 while waiting: the one who CASes it to 1 wakes us */
    _Atomic int parked;  /* goroutine: its context is saved (set by its worker after the switch) */
    FlAbort aborted;     /* written by the claimer before ready */
    void *param;         /* the sudog that fired, written by the claimer before ready */
    uint64_t rng;        /* select's generator (xorshift64*) */
    /* goroutine */
    void *sp;            /* saved stack pointer while not running */
    FlM *m;              /* worker running it */
    void (*fn)(void *);
    void *arg;
    char *stack;         /* mmap'd block: guard page, then stack_size usable bytes */
    size_t stack_size;
    int region_depth;
    FlG *schedlink;      /* run queue / free list link */
    FlG *allnext, *allprev; /* the scheduler's list of every G (goroutines and attached threads) */
    void *asan_fake;
    void *tsan_fiber;
    /* thread */
    _Atomic int wake;    /* 0 waiting, 1 woken, 2 sleeping on the futex */
};

struct FlSudog {
    FlG *g;
    FlChan *c;
    FlSudog *next, *prev; /* in the channel's wait queue */
    void *elem;           /* send: the value; recv: the out buffer (may be NULL) */
    int case_index;
    bool is_recv;
    bool in_queue;        /* under the channel's lock */
    bool success;         /* recv: a value was received; send: it was taken (false: closed) */
};

/* The calling goroutine or attached thread, or NULL (always re-read after a block: a goroutine may
 * resume on another OS thread). */
FlG *fl_g_self(void);
/* The caller's G: its goroutine or attached thread, else *tmp set up as an unattached waiter. */
FlG *fl_g_get(FlG *tmp);
/* Step 1 above; sets status WAITING with reason. False when blocking must fail (see aborted). */
bool fl_g_prepare(FlG *g, const char *reason);
/* The message for a failed prepare / an aborted wait. */
const char *fl_g_abort_msg(FlAbort a);
void fl_g_park(FlG *g, void (*unlock)(void *), void *arg);
static inline bool fl_g_claim(FlG *g) {
    int z = 0;
    return atomic_compare_exchange_strong_explicit(&g->claim, &z, 1, memory_order_acq_rel,
                                                   memory_order_relaxed);
}
void fl_g_ready(FlG *g);
uint32_t fl_g_rand(FlG *g, uint32_t n); /* uniform in [0, n) */

/* ctx.c: the context switch. fl_ctx_make prepares a stack whose first switch calls entry(arg)
 * (entry must never return); fl_ctx_switch saves the callee-saved registers on the current stack,
 * stores its stack pointer in *save and resumes the context saved at to. */
void *fl_ctx_make(void *stack_top, void (*entry)(void *), void *arg);
void fl_ctx_switch(void **save, void *to);

#endif
