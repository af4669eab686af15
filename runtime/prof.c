/* prof.c: the op profiler (prof.h): per op type, atomic counters of runs and times, and Fluid's
 * table.
 *
 * How: entry 2 * id + is_grad of a fixed array holds op type id's forward op or its gradient;
 * calls and total are added, min and max kept with compare-and-swap loops. `first` is the order of
 * an op type's first recorded run (a ticket drawn when its calls go from 0 to 1), the table's
 * default order.
 *
 * Invariant: an entry with calls == 0 holds nothing (min is UINT64_MAX, the rest 0), so a reset is
 * a store of those values; the table reads only entries with calls > 0.
 */
#define _GNU_SOURCE
#include "runtime/prof.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/ir.h"
#include "runtime/trace.h"

enum { NENT = 2 * FL_OPID_COUNT };

typedef struct Ent {
    _Atomic uint64_t calls, total, min, max, first;
    _Atomic(const char *) name;
} Ent;

struct FlProf {
    atomic_bool on;
    _Atomic int64_t t0, t1; /* the window: first start, last stop (0: never) */
    _Atomic uint64_t tickets;
    Ent ents[NENT];
};

static const char *const sort_domains[FL_PROF_SORT_COUNT] = {"event first end time", "number of calls", "total time",
                                                             "maximum time", "minimum time", "average time"};
_Static_assert(FL_PROF_SORT_COUNT == FL_IR_PROFILE_SORT_KEYS, "the IR's sort keys, in FlProfSort's order");

const char *fl_prof_sort_name(FlProfSort s) { return fl_ir_profile_sort_keys[s]; }

bool fl_prof_sort_parse(const char *name, FlProfSort *out) {
    int k = fl_ir_profile_sort_key(name);
    if (k >= 0) *out = (FlProfSort)k;
    return k >= 0;
}

static void clear(FlProf *p) {
    for (size_t i = 0; i < NENT; i++) {
        Ent *e = &p->ents[i];
        atomic_store(&e->calls, 0);
        atomic_store(&e->total, 0);
        atomic_store(&e->min, UINT64_MAX);
        atomic_store(&e->max, 0);
        atomic_store(&e->first, 0);
    }
    atomic_store(&p->tickets, 0);
}

FlProf *fl_prof_new(void) {
    FlProf *p = fl_xcalloc(1, sizeof *p);
    atomic_init(&p->on, false);
    atomic_init(&p->t0, 0);
    atomic_init(&p->t1, 0);
    for (size_t i = 0; i < NENT; i++) atomic_init(&p->ents[i].name, NULL);
    clear(p);
    return p;
}

void fl_prof_free(FlProf *p) { free(p); }

void fl_prof_start(FlProf *p) {
    if (atomic_load(&p->on)) return;
    if (!atomic_load(&p->t0)) atomic_store(&p->t0, fl_trace_now());
    atomic_store(&p->on, true);
}

void fl_prof_stop(FlProf *p) {
    if (!atomic_load(&p->on)) return;
    atomic_store(&p->on, false);
    atomic_store(&p->t1, fl_trace_now());
}

void fl_prof_reset(FlProf *p) { clear(p); }

bool fl_prof_is_on(const FlProf *p) { return atomic_load_explicit(&((FlProf *)p)->on, memory_order_relaxed); }

bool fl_prof_window(const FlProf *p, int64_t *t0, int64_t *t1) {
    FlProf *q = (FlProf *)p;
    *t0 = atomic_load(&q->t0);
    *t1 = atomic_load(&q->on) ? fl_trace_now() : atomic_load(&q->t1);
    return *t0 != 0;
}

void fl_prof_record(FlProf *p, const FlOpInfo *op, int64_t t0, int64_t t1) {
    if (!fl_prof_is_on(p)) return;
    Ent *e = &p->ents[2 * (size_t)op->id + (op->is_grad ? 1 : 0)];
    uint64_t d = t1 > t0 ? (uint64_t)(t1 - t0) : 0;
    if (atomic_fetch_add_explicit(&e->calls, 1, memory_order_relaxed) == 0) {
        atomic_store_explicit(&e->name, op->name, memory_order_relaxed);
        atomic_store_explicit(&e->first, atomic_fetch_add(&p->tickets, 1) + 1, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&e->total, d, memory_order_relaxed);
    uint64_t m = atomic_load_explicit(&e->min, memory_order_relaxed);
    while (d < m && !atomic_compare_exchange_weak_explicit(&e->min, &m, d, memory_order_relaxed, memory_order_relaxed)) {
    }
    m = atomic_load_explicit(&e->max, memory_order_relaxed);
    while (d > m && !atomic_compare_exchange_weak_explicit(&e->max, &m, d, memory_order_relaxed, memory_order_relaxed)) {
    }
}

/* ---------------------------------------------------------------- the table */

typedef struct Row {
    FlProfEntry e;
    uint64_t first;
} Row;

static double key_of(const Row *r, FlProfSort s) {
    switch (s) {
    case FL_PROF_SORT_CALLS: return (double)r->e.calls;
    case FL_PROF_SORT_TOTAL: return (double)r->e.total;
    case FL_PROF_SORT_MAX: return (double)r->e.max;
    case FL_PROF_SORT_MIN: return (double)r->e.min;
    case FL_PROF_SORT_AVE: return (double)r->e.total / (double)r->e.calls;
    case FL_PROF_SORT_DEFAULT:
    case FL_PROF_SORT_COUNT: break;
    }
    return 0;
}

/* Sorts rows by key s, the largest first, ties (and the default) in the order of first ends. An
 * insertion sort: a table holds a few dozen op types, and it keeps the key out of a global. */
static void sort_rows(Row *r, size_t n, FlProfSort s) {
    for (size_t i = 1; i < n; i++) {
        Row x = r[i];
        size_t j = i;
        for (; j > 0; j--) {
            double a = key_of(&r[j - 1], s), b = key_of(&x, s);
            if (a > b || (a == b && r[j - 1].first < x.first)) break;
            r[j] = r[j - 1];
        }
        r[j] = x;
    }
}

static size_t collect(const FlProf *p, FlProfSort s, Row **out) {
    FlProf *q = (FlProf *)p;
    Row *r = fl_xcalloc(NENT, sizeof *r);
    size_t n = 0;
    for (size_t i = 0; i < NENT; i++) {
        Ent *e = &q->ents[i];
        uint64_t calls = atomic_load(&e->calls);
        const char *name = atomic_load(&e->name);
        if (!calls || !name) continue;
        r[n].e = (FlProfEntry){name, calls, atomic_load(&e->total), atomic_load(&e->min), atomic_load(&e->max)};
        r[n].first = atomic_load(&e->first);
        n++;
    }
    sort_rows(r, n, s);
    *out = r;
    return n;
}

size_t fl_prof_entries(const FlProf *p, FlProfSort s, FlProfEntry **out) {
    Row *r;
    size_t n = collect(p, s, &r);
    FlProfEntry *e = fl_xcalloc(n + 1, sizeof *e);
    for (size_t i = 0; i < n; i++) e[i] = r[i].e;
    free(r);
    *out = e;
    return n;
}

/* A cell of the table: a value as C++'s ostream prints a double (6 significant digits), padded. */
static void cell(FlBuf *b, double v, int width) { fl_buf_printf(b, "%-*g", width, v); }

void fl_prof_table(const FlProf *p, FlProfSort s, const char *process, FlBuf *out) {
    Row *r;
    size_t n = collect(p, s, &r);
    enum { DATA = 12 };
    size_t name_w = strlen("Event");
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(r[i].e.name);
        if (l > name_w) name_w = l;
        sum += (double)r[i].e.total;
    }
    int nw = (int)name_w + 8;
    fl_buf_puts(out, "\n------------------------->     Profiling Report     <-------------------------\n\n");
    fl_buf_printf(out, "Place: CPU\nProcess: %s\nTime unit: ms\n", process);
    fl_buf_printf(out, "Sorted by %s in descending order (the process's threads together)\n\n", sort_domains[s]);
    fl_buf_printf(out, "%-*s%-*s%-*s%-*s%-*s%-*s%s\n", nw, "Event", DATA, "Calls", DATA, "Total", DATA, "Min.", DATA,
                  "Max.", DATA, "Ave.", "Ratio.");
    for (size_t i = 0; i < n; i++) {
        const FlProfEntry *e = &r[i].e;
        fl_buf_printf(out, "%-*s%-*llu", nw, e->name, DATA, (unsigned long long)e->calls);
        cell(out, (double)e->total / 1e6, DATA);
        cell(out, (double)e->min / 1e6, DATA);
        cell(out, (double)e->max / 1e6, DATA);
        cell(out, (double)e->total / 1e6 / (double)e->calls, DATA);
        fl_buf_printf(out, "%g\n", sum > 0 ? (double)e->total / sum : 0.0);
    }
    if (!n) fl_buf_puts(out, "(no op ran while the profiler was on)\n");
    free(r);
}
