/* prof.h: the op profiler behind `fluid.profiler` and `flrun --profile`: for each op type, the
 * number of runs and their total, shortest and longest time while the profiler is on, and Paddle
 * Fluid's table of them (docs/running.md, "Profiling").
 *
 * The executor times every op run when it holds an FlProf (FlExecOptions.prof) that is on, with
 * the same two clock reads as a --timeline span (so the table's totals are the timeline's op spans
 * summed by type), and hands the time to fl_prof_record. An op type is a table entry (the forward
 * op or its gradient, compiler/ops.h): the store is a fixed array of counters, so a profile of any
 * length costs the same memory and never drops a run.
 *
 *     FlProf *p = fl_prof_new();
 *     FlExecutorOptions xo = {.prof = p};      // then fl_executor_new, startup ...
 *     fl_prof_start(p);
 *     ... runs ...
 *     fl_prof_stop(p);
 *     FlBuf b = {0};
 *     fl_prof_table(p, FL_PROF_SORT_TOTAL, "flrun model.fl", &b);   // Fluid's table
 *
 * Sorting (Fluid's sorted_key): FL_PROF_SORT_DEFAULT lists the op types in the order their first
 * run ended; the others sort by calls, total, max, min or average time, the largest first (ties in
 * the default order).
 *
 * Thread-safety: fl_prof_record from any number of threads at once (atomic counters; no lock);
 * start, stop, reset and the table from one controlling thread. A run counts when the profiler
 * is on at its start and at its end, and then whole.
 */
#ifndef FL_PROF_H
#define FL_PROF_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "compiler/ops.h"

typedef struct FlProf FlProf;

typedef enum FlProfSort {
    FL_PROF_SORT_DEFAULT, /* Fluid's None: the order of the first end of each op type */
    FL_PROF_SORT_CALLS,
    FL_PROF_SORT_TOTAL,
    FL_PROF_SORT_MAX,
    FL_PROF_SORT_MIN,
    FL_PROF_SORT_AVE,
    FL_PROF_SORT_COUNT
} FlProfSort;

/* Fluid's name of a sort key ("calls", "total", ...; the default's is NULL: Fluid's None), as
 * the IR names them (fl_ir_profile_sort_keys, in this order). */
const char *fl_prof_sort_name(FlProfSort s);
/* The sort key named `name` (NULL: the default). false for any other name. */
bool fl_prof_sort_parse(const char *name, FlProfSort *out);

/* A profiler, off, with nothing recorded. */
FlProf *fl_prof_new(void);
void fl_prof_free(FlProf *p); /* NULL is a no-op; nobody may record any more */

/* Turns it on (runs are recorded from now on) or off; a start of a profiler that is on, or a
 * stop of one that is off, changes nothing. The window (fl_prof_window) is from the first start
 * to the last stop. */
void fl_prof_start(FlProf *p);
void fl_prof_stop(FlProf *p);
/* Forgets every run recorded so far (Fluid's reset_profiler); on or off stays as it is. */
void fl_prof_reset(FlProf *p);
bool fl_prof_is_on(const FlProf *p);
/* The span the profiler was on, in fl_trace_now() nanoseconds: *t0 its first start, *t1 its last
 * stop (or now while it is on). false when it never started. */
bool fl_prof_window(const FlProf *p, int64_t *t0, int64_t *t1);

/* One run of an op of type `op` from t0 to t1 (fl_trace_now() ns), ended now; ignored while off. */
void fl_prof_record(FlProf *p, const FlOpInfo *op, int64_t t0, int64_t t1);

/* What was recorded of one op type (times in ns). */
typedef struct FlProfEntry {
    const char *name; /* the op type ("mul", "mul_grad"); owned by the op table */
    uint64_t calls, total, min, max;
} FlProfEntry;
/* The op types recorded (calls > 0), sorted by s, into a malloc'ed array (*out, freed by the
 * caller); returns their count. */
size_t fl_prof_entries(const FlProf *p, FlProfSort s, FlProfEntry **out);

/* Appends Fluid's table to out: a header (place CPU, `process` as the process's name, time unit
 * ms, the sorting), then per op type its name, calls, total, min, max and average time and its
 * ratio of the sum of the totals. */
void fl_prof_table(const FlProf *p, FlProfSort s, const char *process, FlBuf *out);

#endif
