/* trace.h: the timeline recorder behind `flrun --timeline`: timed events (op runs, sends,
 * receives, barrier waits, server updates) kept in memory, then written as a Chrome trace-event
 * file (the JSON that chrome://tracing, Perfetto and Horovod's timeline use; docs/running.md).
 *
 * Recording is for whoever holds an FlTrace: the executor (FlExecOptions.trace: one span per
 * op) and the MPI transport (FlMpiOptions.trace). Callers keep a NULL FlTrace * when tracing is
 * off and test it once per event, so recording costs one branch when off.
 *
 * Store: at most `cap` events, shared by every thread: a slot is claimed with one atomic
 * increment and written by its claimer alone, which marks it ready (release) when done; the
 * storage grows in chunks of FL_TRACE_CHUNK events as slots are claimed, never past cap, so a
 * short run costs little memory and a long one a bounded amount. Events past the cap are
 * dropped and counted (fl_trace_dropped); the writer reports them. No lock, no data race:
 * formatting reads only slots marked ready (a thread still recording is not waited for).
 *
 * Times: CLOCK_MONOTONIC nanoseconds (fl_trace_now), the clock the MPI transport's waits use.
 * Lanes (the file's tid): the goroutine id for goroutines and threads attached to a goroutine
 * scheduler (FL_TRACE_GO_LANE + id), else the OS thread id; each lane's events are sequential, so
 * a viewer nests them.
 *
 * Strings: `cat` and `name` are borrowed and must outlive the trace (string literals, names of
 * the program); borrowed args likewise; fl_trace_span_take owns its args.
 * Thread-safety: recording from any thread at once; fl_trace_format concurrently with
 * recording; fl_trace_free once nobody records.
 */
#ifndef FL_TRACE_H
#define FL_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

#define FL_TRACE_CHUNK 4096u           /* events per storage chunk */
#define FL_TRACE_DEFAULT_CAP 1000000u  /* flrun --timeline-events' default */
#define FL_TRACE_GO_LANE 0x40000000u   /* lanes from here on are goroutines */

typedef struct FlTrace FlTrace;

/* A recorder of at most cap (>= 1) events; its origin (fl_trace_origin) is now. */
FlTrace *fl_trace_new(size_t cap);
void fl_trace_free(FlTrace *t); /* NULL is a no-op */

int64_t fl_trace_now(void);                   /* CLOCK_MONOTONIC, ns */
int64_t fl_trace_origin(const FlTrace *t);    /* fl_trace_now() when t was made */
uint32_t fl_trace_lane(void);                 /* the calling thread's (or goroutine's) lane */
size_t fl_trace_count(const FlTrace *t);      /* events kept so far (at most the cap) */
size_t fl_trace_dropped(const FlTrace *t);    /* events dropped at the cap */
size_t fl_trace_cap(const FlTrace *t);

/* A complete event ("ph":"X") [t0, t1] on the caller's lane. args: the members of the event's
 * "args" object as JSON text ("\"line\":\"a.fl:3:4\""), or NULL; borrowed. */
void fl_trace_span(FlTrace *t, const char *cat, const char *name, int64_t t0, int64_t t1, const char *args);
/* The same with args taken (malloc'd; freed with the trace, or at once when dropped). */
void fl_trace_span_take(FlTrace *t, const char *cat, const char *name, int64_t t0, int64_t t1, char *args);
/* A flow event on the caller's lane at ts: ph 's' (its start, inside the sending span) or 'f'
 * (its end, bound to the span enclosing ts: "bp":"e"). A start and an end with the same id and
 * name are one arrow in a viewer; id != 0. */
void fl_trace_flow(FlTrace *t, char ph, const char *name, uint64_t id, int64_t ts);

/* Appends s as a JSON string (quoted, escaped) to b. */
void fl_trace_json_str(FlBuf *b, const char *s);

/* Appends the process's events as JSON objects, each followed by ",\n": metadata first
 * (process_name `process`, process_sort_index pid, process_labels `labels` when not NULL, a
 * thread_name per lane), then the events sorted by time (ties: the longer span first), with
 * "pid" pid and "ts"/"dur" in microseconds since `origin` (a time of this process's clock). */
void fl_trace_format(const FlTrace *t, int pid, const char *process, const char *labels, int64_t origin, FlBuf *out);
/* The same with the events of a window only: spans that lie within [from, to], flow events in it
 * (times of this process's clock, as fl_trace_now; a profiler's span: fluid.profiler's
 * profile_path). */
void fl_trace_format_window(const FlTrace *t, int pid, const char *process, const char *labels, int64_t origin,
                            int64_t from, int64_t to, FlBuf *out);

/* Writes the trace document {"traceEvents":[<events>],"displayTimeUnit":"ms","otherData":{...}}
 * to path: events is the concatenation of fl_trace_format outputs (a trailing ",\n" is cut);
 * other: the members of "otherData" as JSON text (or NULL). Written to a temporary file beside
 * path and renamed into place (fl_write_file), so path holds a whole document or what it held.
 * Errors: the file cannot be written (the message names path). */
FlStatus fl_trace_write(const char *path, const char *events, size_t n, const char *other, FlErr *e) FL_WARN_UNUSED;

#endif
