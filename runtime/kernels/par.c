/* par.c: the kernels' thread pool (par.h).
 *
 * How: the op using the pool holds `use` (a mutex: one op at a time). It posts a job (fn, ctx,
 * nchunks) under `mu` and publishes it in `claim`, one 64-bit word holding the job's generation
 * (high half) and the next unclaimed chunk (low half); workers and the caller claim chunks by
 * compare-and-swap on that word, so a worker that woke for an older job can never claim a chunk
 * of a newer one. The last chunk to finish wakes the caller. Workers spin briefly on `claim`
 * after a job (kernels come in quick succession during a training step), then sleep on `work`.
 * Invariants: fn, ctx and nchunks change only under mu while `use` is held; a worker reads them
 * under mu together with the generation it then claims for.
 */
#define _GNU_SOURCE
#include "runtime/kernels/par.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct FlPar {
    int n; /* threads, the caller included */
    pthread_mutex_t use; /* held by the op running on the pool */
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    void (*fn)(void *, int);
    void *ctx;
    int nchunks;
    _Atomic uint64_t claim;  /* generation << 32 | next chunk */
    atomic_int finished;     /* chunks of the current job done */
    atomic_bool stop;
    int nworkers;
    pthread_t *workers;
};

static _Thread_local FlPar *tls_pool;
static _Thread_local int tls_inside; /* running a chunk, or between fl_par_enter and _leave */

enum { SPIN = 4096 };

static inline void relax(void) { __builtin_ia32_pause(); }

/* Claims and runs chunks of generation gen until none is left. */
static void run_chunks(FlPar *p, uint32_t gen, void (*fn)(void *, int), void *ctx, int nchunks) {
    uint64_t v = atomic_load_explicit(&p->claim, memory_order_acquire);
    for (;;) {
        if ((uint32_t)(v >> 32) != gen || (int)(uint32_t)v >= nchunks) return;
        if (!atomic_compare_exchange_weak_explicit(&p->claim, &v, v + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        int c = (int)(uint32_t)v;
        tls_inside++;
        fn(ctx, c);
        tls_inside--;
        if (atomic_fetch_add_explicit(&p->finished, 1, memory_order_acq_rel) + 1 == nchunks) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_broadcast(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
        v = atomic_load_explicit(&p->claim, memory_order_acquire);
    }
}

static void *worker(void *arg) {
    FlPar *p = arg;
    uint32_t seen = 0;
    for (;;) {
        /* a new generation: spin a little, then sleep */
        int spins = 0;
        while ((uint32_t)(atomic_load_explicit(&p->claim, memory_order_acquire) >> 32) == seen &&
               !atomic_load_explicit(&p->stop, memory_order_acquire) && spins < SPIN) {
            relax();
            spins++;
        }
        pthread_mutex_lock(&p->mu);
        while ((uint32_t)(atomic_load_explicit(&p->claim, memory_order_relaxed) >> 32) == seen &&
               !atomic_load_explicit(&p->stop, memory_order_relaxed))
            pthread_cond_wait(&p->work, &p->mu);
        if (atomic_load_explicit(&p->stop, memory_order_relaxed)) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        seen = (uint32_t)(atomic_load_explicit(&p->claim, memory_order_relaxed) >> 32);
        void (*fn)(void *, int) = p->fn;
        void *ctx = p->ctx;
        int nchunks = p->nchunks;
        pthread_mutex_unlock(&p->mu);
        run_chunks(p, seen, fn, ctx, nchunks);
    }
}

int fl_par_cpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > FL_PAR_MAX_THREADS ? FL_PAR_MAX_THREADS : (int)n;
}

FlPar *fl_par_new(int nthreads, FlErr *e) {
    if (nthreads < 1 || nthreads > FL_PAR_MAX_THREADS) {
        fl_err(e, "kernel threads: %d is out of range (1 to %d)", nthreads, FL_PAR_MAX_THREADS);
        return NULL;
    }
    FlPar *p = fl_xcalloc(1, sizeof *p);
    p->n = nthreads;
    pthread_mutex_init(&p->use, NULL);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->claim, 0);
    atomic_init(&p->finished, 0);
    atomic_init(&p->stop, false);
    p->workers = fl_xcalloc((size_t)nthreads, sizeof *p->workers);
    for (int i = 0; i < nthreads - 1; i++) {
        if (pthread_create(&p->workers[i], NULL, worker, p) != 0) {
            fl_err(e, "kernel threads: cannot start worker %d of %d", i + 1, nthreads - 1);
            fl_par_free(p);
            return NULL;
        }
        p->nworkers++;
    }
    return p;
}

void fl_par_free(FlPar *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nworkers; i++) pthread_join(p->workers[i], NULL);
    free(p->workers);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->use);
    free(p);
}

int fl_par_threads(const FlPar *p) { return p ? p->n : 1; }

FlPar *fl_par_bind(FlPar *p) {
    FlPar *old = tls_pool;
    tls_pool = p;
    return old;
}

int fl_par_width(void) { return tls_pool && !tls_inside ? tls_pool->n : 1; }

int fl_par_chunks(int64_t work, int64_t grain) {
    int w = fl_par_width();
    if (w <= 1 || grain < 1 || work < 2 * grain) return 1;
    int64_t c = work / grain;
    return c < w ? (int)c : w;
}

int fl_par_blocks(int64_t work, int64_t grain) {
    int64_t b = grain > 0 ? work / grain : 1;
    return b < 1 ? 1 : b > FL_PAR_MAX_BLOCKS ? FL_PAR_MAX_BLOCKS : (int)b;
}

void fl_par_run(int nchunks, void (*fn)(void *ctx, int chunk), void *ctx) {
    FlPar *p = tls_pool;
    if (nchunks <= 1 || !p || tls_inside || p->n <= 1) {
        for (int c = 0; c < nchunks; c++) fn(ctx, c); /* nested or serial: in order, here */
        return;
    }
    pthread_mutex_lock(&p->use);
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->nchunks = nchunks;
    atomic_store_explicit(&p->finished, 0, memory_order_relaxed);
    uint32_t gen = (uint32_t)(atomic_load_explicit(&p->claim, memory_order_relaxed) >> 32) + 1;
    atomic_store_explicit(&p->claim, (uint64_t)gen << 32, memory_order_release);
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    run_chunks(p, gen, fn, ctx, nchunks);
    for (int spins = 0; spins < SPIN; spins++) {
        if (atomic_load_explicit(&p->finished, memory_order_acquire) == nchunks) break;
        relax();
    }
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->finished, memory_order_acquire) < nchunks)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_unlock(&p->use);
}

typedef struct ForCtx {
    int64_t n;
    int nchunks;
    void (*fn)(void *, int64_t, int64_t);
    void *ctx;
} ForCtx;

static void for_chunk(void *arg, int c) {
    ForCtx *f = arg;
    int64_t lo, hi;
    fl_par_range(f->n, c, f->nchunks, &lo, &hi);
    f->fn(f->ctx, lo, hi);
}

void fl_par_for(int64_t n, int64_t grain, void (*fn)(void *ctx, int64_t lo, int64_t hi), void *ctx) {
    if (n <= 0) return;
    int nc = fl_par_chunks(n, grain);
    if (nc == 1) {
        fn(ctx, 0, n);
        return;
    }
    ForCtx f = {n, nc, fn, ctx};
    fl_par_run(nc, for_chunk, &f);
}

int fl_par_enter(void) {
    FlPar *p = tls_pool;
    if (!p || tls_inside || p->n <= 1) {
        tls_inside++;
        return 1;
    }
    pthread_mutex_lock(&p->use);
    tls_inside++;
    return p->n;
}

void fl_par_leave(void) {
    FlPar *p = tls_pool;
    FL_ASSERT(tls_inside > 0);
    tls_inside--;
    if (p && !tls_inside && p->n > 1) pthread_mutex_unlock(&p->use);
}
