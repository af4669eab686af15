/* trace.c: the timeline recorder (trace.h): a bounded, lock-free event store and its Chrome
 * trace-event JSON.
 *
 * How: slot i of the store is event i % FL_TRACE_CHUNK of chunk i / FL_TRACE_CHUNK; chunks are
 * made on first use (the first claimer's allocation wins a compare-and-swap, the others free
 * theirs). `next` counts claims, past the cap too, so the dropped count is next - cap.
 *
 * Invariant: an event's fields are written only by the thread that claimed its slot, before its
 * `ready` flag is set with release order; readers load `ready` with acquire order first.
 */
#define _GNU_SOURCE
#include "runtime/trace.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/sched/sched.h"

typedef struct Ev {
    int64_t ts, dur;       /* ns; dur: 'X' only */
    const char *cat, *name;
    char *args;            /* JSON members, or NULL */
    uint64_t id;           /* flow events */
    uint32_t lane;
    char ph;               /* 'X', 's', 'f' */
    bool own;              /* args is the event's (freed with it) */
    atomic_bool ready;
} Ev;

struct FlTrace {
    size_t cap, nchunks;
    int64_t origin;
    atomic_size_t next;
    _Atomic(Ev *) *chunks;
};

int64_t fl_trace_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

FlTrace *fl_trace_new(size_t cap) {
    FL_ASSERT(cap >= 1);
    FlTrace *t = fl_xcalloc(1, sizeof *t);
    t->cap = cap;
    t->nchunks = (cap + FL_TRACE_CHUNK - 1) / FL_TRACE_CHUNK;
    t->chunks = fl_xcalloc(t->nchunks, sizeof *t->chunks);
    for (size_t i = 0; i < t->nchunks; i++) atomic_init(&t->chunks[i], NULL);
    atomic_init(&t->next, 0);
    t->origin = fl_trace_now();
    return t;
}

void fl_trace_free(FlTrace *t) {
    if (!t) return;
    for (size_t c = 0; c < t->nchunks; c++) {
        Ev *ch = atomic_load(&t->chunks[c]);
        for (size_t i = 0; ch && i < FL_TRACE_CHUNK; i++)
            if (atomic_load(&ch[i].ready) && ch[i].own) free(ch[i].args);
        free(ch);
    }
    free(t->chunks);
    free(t);
}

int64_t fl_trace_origin(const FlTrace *t) { return t->origin; }
size_t fl_trace_cap(const FlTrace *t) { return t->cap; }

size_t fl_trace_count(const FlTrace *t) {
    size_t n = atomic_load(&((FlTrace *)t)->next);
    return n < t->cap ? n : t->cap;
}

size_t fl_trace_dropped(const FlTrace *t) {
    size_t n = atomic_load(&((FlTrace *)t)->next);
    return n > t->cap ? n - t->cap : 0;
}

uint32_t fl_trace_lane(void) {
    static _Thread_local uint32_t tid; /* a cache of the OS's answer, per thread */
    int64_t g = fl_go_id();
    if (g > 0) return FL_TRACE_GO_LANE + (uint32_t)g;
    if (!tid) tid = (uint32_t)syscall(SYS_gettid);
    return tid;
}

/* Claims a slot: the event to fill, or NULL at the cap. */
static Ev *claim(FlTrace *t) {
    size_t i = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
    if (i >= t->cap) return NULL;
    _Atomic(Ev *) *slot = &t->chunks[i / FL_TRACE_CHUNK];
    Ev *ch = atomic_load_explicit(slot, memory_order_acquire);
    if (!ch) {
        Ev *mine = fl_xcalloc(FL_TRACE_CHUNK, sizeof *mine);
        for (size_t k = 0; k < FL_TRACE_CHUNK; k++) atomic_init(&mine[k].ready, false);
        Ev *expected = NULL;
        if (atomic_compare_exchange_strong_explicit(slot, &expected, mine, memory_order_acq_rel, memory_order_acquire)) {
            ch = mine;
        } else {
            free(mine);
            ch = expected;
        }
    }
    return &ch[i % FL_TRACE_CHUNK];
}

static void put(FlTrace *t, char ph, const char *cat, const char *name, int64_t ts, int64_t dur, char *args, bool own,
                uint64_t id) {
    Ev *ev = claim(t);
    if (!ev) {
        if (own) free(args);
        return;
    }
    ev->ph = ph;
    ev->cat = cat;
    ev->name = name;
    ev->ts = ts;
    ev->dur = dur;
    ev->args = args;
    ev->own = own;
    ev->id = id;
    ev->lane = fl_trace_lane();
    atomic_store_explicit(&ev->ready, true, memory_order_release);
}

void fl_trace_span(FlTrace *t, const char *cat, const char *name, int64_t t0, int64_t t1, const char *args) {
    put(t, 'X', cat, name, t0, t1 - t0, (char *)args, false, 0);
}

void fl_trace_span_take(FlTrace *t, const char *cat, const char *name, int64_t t0, int64_t t1, char *args) {
    put(t, 'X', cat, name, t0, t1 - t0, args, true, 0);
}

void fl_trace_flow(FlTrace *t, char ph, const char *name, uint64_t id, int64_t ts) {
    FL_ASSERT((ph == 's' || ph == 'f') && id != 0);
    put(t, ph, "flow", name, ts, 0, NULL, false, id);
}

/* ---------------------------------------------------------------- JSON */

void fl_trace_json_str(FlBuf *b, const char *s) {
    fl_buf_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            fl_buf_putc(b, '\\');
            fl_buf_putc(b, (char)*p);
        } else if (*p < 0x20) {
            fl_buf_printf(b, "\\u%04x", *p);
        } else {
            fl_buf_putc(b, (char)*p);
        }
    }
    fl_buf_putc(b, '"');
}

static int by_time(const void *a, const void *b) {
    const Ev *x = *(const Ev *const *)a, *y = *(const Ev *const *)b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1; /* the enclosing span first */
    return x < y ? -1 : x > y;                            /* then record order: a stable sort */
}

static int by_lane(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Microseconds with nanosecond digits: ts - origin as "123.456". */
static void put_us(FlBuf *b, int64_t ns) {
    if (ns < 0) {
        fl_buf_putc(b, '-');
        ns = -ns;
    }
    fl_buf_printf(b, "%lld.%03lld", (long long)(ns / 1000), (long long)(ns % 1000));
}

void fl_trace_format(const FlTrace *t, int pid, const char *process, const char *labels, int64_t origin, FlBuf *out) {
    fl_trace_format_window(t, pid, process, labels, origin, INT64_MIN, INT64_MAX, out);
}

void fl_trace_format_window(const FlTrace *t, int pid, const char *process, const char *labels, int64_t origin,
                            int64_t from, int64_t to, FlBuf *out) {
    size_t n = fl_trace_count(t), k = 0;
    Ev **evs = fl_xcalloc(n + 1, sizeof *evs);
    for (size_t i = 0; i < n; i++) {
        Ev *ch = atomic_load_explicit(&t->chunks[i / FL_TRACE_CHUNK], memory_order_acquire);
        Ev *ev = ch ? &ch[i % FL_TRACE_CHUNK] : NULL;
        if (ev && atomic_load_explicit(&ev->ready, memory_order_acquire) && ev->ts >= from && ev->ts <= to - ev->dur)
            evs[k++] = ev;
    }
    qsort(evs, k, sizeof *evs, by_time);
    fl_buf_printf(out, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":", pid);
    fl_trace_json_str(out, process);
    fl_buf_printf(out, "}},\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"sort_index\":%d}},\n",
                  pid, pid);
    if (labels) {
        fl_buf_printf(out, "{\"name\":\"process_labels\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"labels\":", pid);
        fl_trace_json_str(out, labels);
        fl_buf_puts(out, "}},\n");
    }
    /* a name per lane: its goroutine, the process's main thread, or another thread */
    uint32_t *lanes = fl_xcalloc(k + 1, sizeof *lanes);
    for (size_t i = 0; i < k; i++) lanes[i] = evs[i]->lane;
    qsort(lanes, k, sizeof *lanes, by_lane);
    uint32_t main_tid = (uint32_t)getpid();
    for (size_t i = 0; i < k; i++) {
        if (i && lanes[i] == lanes[i - 1]) continue;
        uint32_t l = lanes[i];
        fl_buf_printf(out, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":\"", pid, l);
        if (l >= FL_TRACE_GO_LANE) fl_buf_printf(out, "goroutine %u", l - FL_TRACE_GO_LANE);
        else if (l == main_tid) fl_buf_puts(out, "main");
        else fl_buf_printf(out, "thread %u", l);
        fl_buf_puts(out, "\"}},\n");
    }
    free(lanes);
    for (size_t i = 0; i < k; i++) {
        const Ev *ev = evs[i];
        fl_buf_puts(out, "{\"name\":");
        fl_trace_json_str(out, ev->name);
        fl_buf_puts(out, ",\"cat\":");
        fl_trace_json_str(out, ev->cat);
        fl_buf_printf(out, ",\"ph\":\"%c\",\"pid\":%d,\"tid\":%u,\"ts\":", ev->ph, pid, ev->lane);
        put_us(out, ev->ts - origin);
        if (ev->ph == 'X') {
            fl_buf_puts(out, ",\"dur\":");
            put_us(out, ev->dur);
        } else {
            fl_buf_printf(out, ",\"id\":%llu", (unsigned long long)ev->id);
            if (ev->ph == 'f') fl_buf_puts(out, ",\"bp\":\"e\"");
        }
        if (ev->args) fl_buf_printf(out, ",\"args\":{%s}", ev->args);
        fl_buf_puts(out, "},\n");
    }
    free(evs);
}

FlStatus fl_trace_write(const char *path, const char *events, size_t n, const char *other, FlErr *e) {
    FlBuf b = {0};
    fl_buf_puts(&b, "{\"traceEvents\":[\n");
    if (n >= 2 && events[n - 2] == ',' && events[n - 1] == '\n') n -= 2;
    fl_buf_append(&b, events, n);
    fl_buf_printf(&b, "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{%s}}\n", other ? other : "");
    FlStatus st = fl_write_file(path, b.data, b.len, e);
    fl_buf_free(&b);
    return st;
}
