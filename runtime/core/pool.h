/* pool.h: a growable pool of worker threads for work that must run CONCURRENTLY (parallel_for
 * iterations, later goroutines): fl_pool_run gives every task its own thread at once, reusing idle
 * workers and starting new ones when none is idle, so tasks that wait for each other (barriers,
 * channels) cannot starve. Workers that finish go idle and are reused; they stop when the pool is
 * freed.
 *
 * Thread-safety: fl_pool_run may be called from any number of threads at once, and from inside a
 * task (nested parallel_for). fl_pool_free must be called once, when no fl_pool_run is running.
 */
#ifndef FL_POOL_H
#define FL_POOL_H

#include "base/base.h"

typedef struct FlPool FlPool;

FlPool *fl_pool_new(void);
void fl_pool_free(FlPool *p); /* NULL is a no-op; joins every worker */

/* Runs fn(arg, i) for i in [0, n) concurrently: i = 0 on the calling thread, the others on pool
 * workers. Returns when all have returned. Failing to start a thread aborts (it is not user
 * input). */
void fl_pool_run(FlPool *p, int n, void (*fn)(void *arg, int i), void *arg);

#endif
