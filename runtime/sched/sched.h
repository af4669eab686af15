/* sched.h: goroutines for the fluidc runtime, scheduled M:N in user space, with Go's model.
 *
 * A scheduler (FlSched) owns `nprocs` processors (P: a local run queue each) and a growing set of
 * worker OS threads (M). A goroutine (G) has its own mmap'd stack with a guard page and is switched
 * to and from with a hand-written x86-64 context switch (callee-saved registers + stack pointer),
 * never a syscall. A goroutine that blocks on a channel parks: its worker runs the next runnable
 * goroutine at once; an idle worker spins for a bounded time before it sleeps on a futex.
 *
 * Three kinds of thread may use channels (runtime/sched/chan.h):
 *   - goroutines started by fl_go: a blocking channel op parks the goroutine, not the thread;
 *   - ATTACHED OS threads (fl_sched_attach): a blocking op blocks the thread (bounded spin, then a
 *     futex), and the deadlock detector counts the thread as one more goroutine (the executor's
 *     calling thread running the main program attaches for the run);
 *   - any other OS thread: a blocking op blocks the thread properly, but the detector does not see
 *     the thread. A thread that hands values to goroutines while they may all be blocked should
 *     attach, or the detector may report a deadlock that the thread would have resolved.
 *
 * Deadlock: when every goroutine and every attached thread (threads in fl_sched_wait included) is
 * blocked on a channel operation, an empty select or fl_sched_wait, and at least one attached thread
 * exists, the scheduler reports
 *     deadlock: all goroutines are blocked
 *       goroutine 1 (main.fl:3): chan receive
 *       goroutine 2 (worker.fl:12): chan send
 * The check runs when the last active goroutine blocks or exits: no polling. A goroutine inside a
 * blocking region (fl_sched_block_begin/end: MPI, long kernels) counts as active, so it is never
 * reported and prevents the report. On detection the report is kept (fl_sched_deadlock_report),
 * the on_deadlock callback (if any) is called once, and every blocked party is woken: its channel
 * operation returns FL_ERROR with the message "deadlock: all goroutines are blocked". From then on
 * a channel operation that would block fails the same way, so the program can unwind (the executor
 * turns the status of its attached thread into exit code 1).
 *
 * Ownership: a goroutine's arg belongs to its function; labels are borrowed and must stay valid
 * until the scheduler is freed (string literals and the loaded program's strings do).
 * Thread-safety: every function may be called from any thread (goroutine or not) at once, except
 * fl_sched_free (once, when nothing else uses the scheduler).
 * Errors: environment failures (no memory for a stack, a thread that cannot start) return FL_ERROR
 * with a message in the FlErr; misuse (a blocking region left unbalanced, attaching twice) is a bug
 * and aborts through FL_ASSERT.
 */
#ifndef FL_SCHED_H
#define FL_SCHED_H

#include "base/base.h"

typedef struct FlSched FlSched;

typedef struct FlSchedConfig {
    int nprocs;         /* processors (goroutines running at once); 0 = online CPUs */
    size_t stack_size;  /* usable bytes per goroutine stack; 0 = 256 KiB; rounded up to pages */
    uint64_t seed;      /* select's random choices; 0 = from the clock */
    /* Called once, on the thread that detects a deadlock, with the whole report (valid during the
     * call). May be NULL. It may exit the process; if it returns, blocked parties are woken with
     * FL_ERROR as described above. */
    void (*on_deadlock)(void *ud, const char *report);
    void *ud;
} FlSchedConfig;

/* A scheduler. cfg may be NULL (all defaults). Worker threads start lazily, on demand. */
FlSched *fl_sched_new(const FlSchedConfig *cfg, FlErr *e) FL_WARN_UNUSED;

/* Frees the scheduler. Goroutines still blocked on channels (leaked) are woken: their blocking
 * operation returns FL_ERROR ("goroutine abandoned: the scheduler is shutting down"), and any
 * later blocking operation fails the same way, so they unwind and release what they own. Waits
 * until every goroutine has returned, then joins the workers. No thread may be attached.
 * NULL is a no-op. */
void fl_sched_free(FlSched *s);

/* Starts fn(arg) as a new goroutine. label names it in reports (e.g. "worker.fl:12"; borrowed,
 * may be NULL). Fails only when no stack can be allocated or the scheduler is shutting down. */
FlStatus fl_go(FlSched *s, void (*fn)(void *arg), void *arg, const char *label,
               FlErr *e) FL_WARN_UNUSED;

/* Go's
 *     var wg sync.WaitGroup
 *     for i := 0; i < n; i++ { wg.Add(1); go func(i int) { defer wg.Done(); fn(arg, i) }(i) }
 *     wg.Wait()
 * fn(arg, i) runs once for every i in [0, n), each on a goroutine of its own (labelled label, as
 * fl_go's), and the caller (a goroutine, an attached or a plain thread) waits until every one has
 * returned. Iterations may wait for each other (one sends, another receives) whatever n and the
 * processors: each is a goroutine. While it waits the caller is blocked at "wait for iterations"
 * for the deadlock detector, so iterations that all block with it are a deadlock whose report
 * names each of them. The goroutines start as processors come free: at most nprocs of them wait
 * to run at any time (each one that starts running starts the next), so only the running and the
 * blocked ones hold stacks, and n may be large. Which i a goroutine gets is the order they start.
 * Errors: when the wait is ended by a deadlock, a panic or a shutdown, the call returns that error
 * once every goroutine already started has returned; the iterations not started by then are not
 * run. When a goroutine cannot be started (no memory for its stack), the scheduler panics (as Go
 * dies without memory), so iterations that wait for it unwind, and the call returns that error.
 * Must not be called inside a blocking region. */
FlStatus fl_go_each(FlSched *s, int n, void (*fn)(void *arg, int i), void *arg, const char *label,
                    FlErr *e) FL_WARN_UNUSED;

/* Blocks the calling OS thread until every goroutine of s has returned. While it waits the thread
 * counts as attached (so "main waits for goroutines that all block" is a deadlock, as
 * sync.WaitGroup.Wait is in Go). On a deadlock (detected now or before) it still waits until the
 * woken goroutines have unwound, then returns FL_ERROR with the deadlock message. Must not be
 * called from a goroutine. */
FlStatus fl_sched_wait(FlSched *s, FlErr *e) FL_WARN_UNUSED;

/* Makes the calling OS thread (not a goroutine) a participant of s until fl_sched_detach: it gets a
 * goroutine id, appears in deadlock reports under label, and counts for the detector. Attach
 * before the thread exchanges values with goroutines (until then the detector cannot know the
 * thread may still send). At most one attachment per thread; detach from the same thread. */
void fl_sched_attach(FlSched *s, const char *label);
/* Renames the calling goroutine (or attached thread) in reports: label must stay valid and
 * unchanged as long as the scheduler lives (a report may print the old one meanwhile). No-op on
 * a thread the scheduler does not know. */
void fl_sched_set_label(const char *label);
void fl_sched_detach(FlSched *s);

/* Brackets a call that may block the OS thread for long (MPI, a big kernel, I/O). In a goroutine,
 * begin hands the worker's processor and run queue to another worker thread (started if needed) so
 * other goroutines keep running; end takes a free processor back or requeues the goroutine. In
 * every thread, the caller counts as active: never reported as deadlocked. Nestable. No channel
 * operation may run inside a region. Outside goroutines and attached threads: no-ops. */
void fl_sched_block_begin(void);
void fl_sched_block_end(void);

/* Sleeps the seconds inside a blocking region (the caller counts as running, never deadlocked).
 * In a goroutine or attached thread it ends early, with the abort error, when its scheduler
 * panics or shuts down, so a pending timer never delays the end of the program. */
FlStatus fl_sched_sleep(double seconds, FlErr *e) FL_WARN_UNUSED;

/* The processors of s (goroutines running at once); for NULL, the count a scheduler with
 * nprocs 0 gets (the online CPUs, at least 1). parallel_for bounds its threads by it. */
int fl_sched_nprocs(const FlSched *s);

/* Lets other goroutines run (runtime.Gosched); sched_yield on a plain thread. */
void fl_yield(void);

/* The id of the calling goroutine or attached thread, 0 elsewhere. */
int64_t fl_go_id(void);

/* Appends one line per live goroutine (not attached threads) of s to out, in id order:
 * "  goroutine 3 (worker.fl:12): chan receive" (blocked: its operation), ": running" or
 * ": in blocking region", and returns how many. For the "main ended while goroutines are still
 * blocked" warning: Go exits then, leaked goroutines are not an error. */
size_t fl_sched_list(FlSched *s, FlBuf *out);

/* Go's panic in a goroutine: every party blocked on a channel operation, an empty select or
 * fl_sched_wait is woken, its operation failing with FL_SCHED_PANIC_MSG, and every later blocking
 * operation fails the same way, so the whole program unwinds (the failing goroutine's own error
 * is reported by whoever called this). Idempotent; a no-op once shutting down. */
#define FL_SCHED_PANIC_MSG "panic: another goroutine failed"
void fl_sched_panic(FlSched *s);
bool fl_sched_panicked(FlSched *s);

/* The deadlock report (see above), or NULL when no deadlock was detected. Owned by s. */
const char *fl_sched_deadlock_report(FlSched *s);

/* Statistics, for tests and benchmarks. */
typedef struct FlSchedStats {
    int64_t goroutines; /* live goroutines */
    int threads;        /* worker threads started so far */
    int64_t stacks;     /* goroutine stacks allocated (mmap'd) so far */
} FlSchedStats;
FlSchedStats fl_sched_stats(FlSched *s);

#endif
