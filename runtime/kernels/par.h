/* par.h: the kernels' thread pool (flrun --threads N): one pool of N threads (the calling
 * thread and N-1 workers) that the GEMMs (cblas_sgemm on blocks of the product), the kernels' own
 * loops (elementwise, activations, reductions, optimizer updates, im2col) and oneDNN's OpenMP
 * team all run on.
 *
 * Binding: a pool does nothing until a thread binds it (fl_par_bind; the executor binds its
 * pool around every compute op). Kernels called on a thread with no pool bound, and kernels
 * called from inside a chunk (a kernel that calls another), run serially on the calling thread.
 *
 * Determinism: how a kernel cuts its work depends on the shapes and N, never on timing; the
 * chunks run on whichever threads are free, and a reduction combines its chunks' partial results
 * in chunk order. So a given N gives bit-identical results run to run. Across N: element-wise
 * kernels (element-wise ops, activations, optimizer updates) never differ, whatever the cut; sums
 * cut by the element count alone (fl_par_blocks) and do not differ either; a GEMM cut into N
 * blocks (OpenBLAS picks its kernels and K blocking by a call's shape) and oneDNN's primitives
 * (their OpenMP team is N threads) may differ in float rounding.
 *
 * Sharing (many threads running ops at once: goroutines, parallel_for, an embedder's threads):
 * one op uses the pool at a time. A kernel whose work is worth splitting takes the pool (waiting,
 * first come first served, while another op's chunks run on it), runs its chunks on the pool's
 * workers and its own thread, and gives it back. Small ops never take it. So however many threads
 * run ops, the kernels add at most N-1 running threads to them (no oversubscription), and an op
 * gets the same chunks whether it waited or not (results stay deterministic). A kernel never
 * waits on anything but the pool while holding it, and the pool is never taken from inside a
 * chunk, so the pool cannot deadlock with channels, goroutines or parallel_for.
 *
 * Thread-safety: fl_par_new / fl_par_free once per pool; everything else from any thread. */
#ifndef FL_PAR_H
#define FL_PAR_H

#include <stdint.h>

#include "base/base.h"

typedef struct FlPar FlPar;

/* The most threads a pool may have. */
#define FL_PAR_MAX_THREADS 256

/* A pool of nthreads threads (1 <= nthreads <= FL_PAR_MAX_THREADS): nthreads-1 workers are
 * started now. Errors: nthreads out of range, a worker that cannot start (message in e). */
FlPar *fl_par_new(int nthreads, FlErr *e) FL_WARN_UNUSED;
/* Joins the workers. NULL is a no-op. No kernel may be using the pool. */
void fl_par_free(FlPar *p);
/* The pool's thread count N (1 for NULL). */
int fl_par_threads(const FlPar *p);
/* The online CPUs (at least 1): flrun's default for a local run. */
int fl_par_cpus(void);

/* Makes p (may be NULL: serial) the pool of the kernels the calling thread runs from now on and
 * returns the pool bound before, to be restored with another call. */
FlPar *fl_par_bind(FlPar *p);

/* ---- for kernels (runtime/kernels) ---- */

/* N of the calling thread's pool: 1 when none is bound or inside a chunk. */
int fl_par_width(void);
/* How many chunks `work` independent units split into: 1 when work < 2 * grain (the units one
 * chunk must have to pay for a hand-over, measured per kernel family; docs/kernels.md) or the
 * width is 1, else up to the width, with at least grain units each. Only for kernels whose
 * results do not depend on the cut. */
int fl_par_chunks(int64_t work, int64_t grain);
/* How many blocks `work` units split into by the shapes alone: work / grain, at least 1 and at
 * most FL_PAR_MAX_BLOCKS, whatever the pool. For kernels whose results depend on the cut. */
#define FL_PAR_MAX_BLOCKS 64
int fl_par_blocks(int64_t work, int64_t grain);
/* Runs fn(ctx, c) for every chunk c in [0, nchunks), each once, on the bound pool's threads and
 * the caller; returns when all have returned. nchunks 1 (or no pool) runs fn(ctx, 0) here. */
void fl_par_run(int nchunks, void (*fn)(void *ctx, int chunk), void *ctx);
/* Chunk c of nchunks of [0, n): [*lo, *hi). */
static inline void fl_par_range(int64_t n, int c, int nchunks, int64_t *lo, int64_t *hi) {
    *lo = n * c / nchunks;
    *hi = n * (c + 1) / nchunks;
}
/* fl_par_run over [0, n) split by fl_par_chunks(n, grain): fn(ctx, lo, hi) per chunk. */
void fl_par_for(int64_t n, int64_t grain, void (*fn)(void *ctx, int64_t lo, int64_t hi), void *ctx);

/* For a library with threads of its own (oneDNN's OpenMP team): takes the pool as fl_par_run
 * does (its workers stay asleep meanwhile) and returns the thread count the library may use
 * (the width; 1 without a pool, and then nothing is taken). Every fl_par_enter is followed by
 * fl_par_leave on the same thread. */
int fl_par_enter(void);
void fl_par_leave(void);

#endif
