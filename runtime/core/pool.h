/* pool.h: a bounded pool of worker threads for parallel_for's iterations.
 *
 * fl_pool_run queues a batch of n iterations; at most `width` threads run it at once: the caller
 * and up to width-1 pool workers (started on demand, never more than the widest batch asked for
 * minus one, shared by every batch). Each thread takes the next unclaimed iteration of the
 * batch until none is left, so 100,000 iterations cost width threads, not 100,000. The caller
 * always works on its own batch, so a nested fl_pool_run (a parallel_for inside an iteration)
 * makes progress even when every worker is busy. Iterations that wait for each other (a barrier
 * or a channel between iterations) may therefore wait forever when there are more of them than
 * width: use goroutines for that.
 *
 * Thread-safety: fl_pool_run may be called from any number of threads at once, and from inside an
 * iteration. fl_pool_free must be called once, when no fl_pool_run is running.
 */
#ifndef FL_POOL_H
#define FL_POOL_H

#include "base/base.h"

typedef struct FlPool FlPool;

FlPool *fl_pool_new(void);
void fl_pool_free(FlPool *p); /* NULL is a no-op; joins every worker */

/* Runs fn(arg, i) once for every i in [0, n), on the calling thread and at most width-1 pool
 * workers at once (width < 1 counts as 1). Returns when all have returned. When a worker
 * cannot be started the batch runs on the threads there are (the caller at least): never an
 * abort. */
void fl_pool_run(FlPool *p, int n, int width, void (*fn)(void *arg, int i), void *arg);

#endif
