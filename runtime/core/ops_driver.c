/* ops_driver.c: the adapters of the driver program's ops (compiler/ops/driver.def;
 * docs/driver.md), on the driver host of driver.h.
 *
 *   run_program  Feed*, Scope? -> Fetch*: fl_exec_run of the bundle's program it names on
 *                the Scope's scope (else the root) with the feeds, fetches set from its vars (a
 *                tensor array var's fetch: its array);
 *                reentrant, as fl_exec_run is: goroutines of the driver run programs at once;
 *                in a trainer of a plan (a transport on the scope), a run of main is a step of
 *                the job (FlDist.step_begin / step_end around it, with Step, Rows and
 *                GlobalRows when given); predict: a prediction (FL_EXEC_PREDICT), no step
 *   scope_new    Parent? -> Out: a new scope under Parent's (else the root), held by Out
 *   print_line   X*: texts and values through their specs, one line in one write
 *   time_now     Out = the wall-clock seconds (a float64 number: rank 0)
 *   index, item  X[i] (a view of row i) and float(X) / int(X) of a one-element X
 *   exit         ends the run with a code (sys.exit), recorded in the host
 *   scope_var    Scope? -> Out: the tensor a var of the scope holds (scope.find_var(name).get_tensor())
 *
 * A value prints as numpy's str prints an array ("[3]", "[1.  2.5]", "[[1 2]\n [3 4]]"): ints in
 * columns of one width, floats in fixed point with the fewest digits that give each element back
 * (its dtype's shortest form) and one number of fraction digits for all, trailing zeros as spaces,
 * or, when numpy would switch to scientific notation (a magnitude of 1e8 or more, below 1e-4, or
 * a ratio of the largest to the smallest above 1e3), C's %e form with the shortest digits; lines
 * wrapped at 75 characters and arrays of more than 1000 elements summarized, as numpy's print
 * options do by default. A number (rank 0: time.time(), float(v), v[0] of a
 * vector) prints as Python prints a float or an int ("4.0", "0.00073", "1e+16", "3").
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/core/dist.h"
#include "runtime/core/driver.h"
#include "runtime/core/exec_impl.h"
#include "runtime/half.h"

/* ---------------------------------------------------------------- the host */

static void host_release(void *h) { free(h); }

FlScope *fl_driver_scope(FlScope *root, const FlDriverHost *h) {
    FlScope *s = fl_scope_new(root);
    FlDriverHost *copy = fl_xmalloc(sizeof *copy);
    *copy = *h;
    fl_var_set_object(fl_scope_var(s, FL_DRIVER_VAR), copy, host_release);
    return s;
}

const FlDriverHost *fl_driver_find(FlScope *s) {
    FlVar *v = fl_scope_find(s, FL_DRIVER_VAR);
    return v ? fl_var_get_object(v) : NULL;
}

FlExec *fl_driver_program(const FlDriverHost *h, const char *name) {
    if (strcmp(name, "startup") == 0) return h->startup;
    if (strcmp(name, "main") == 0) return h->main;
    for (size_t i = 0; i < h->nprograms; i++)
        if (strcmp(h->names[i], name) == 0) return h->programs[i];
    return NULL;
}

void fl_driver_hooks_attach(FlScope *root, const FlDriverHooks *h) {
    fl_var_set_object(fl_scope_var(root, FL_DRIVER_HOOKS_VAR), (void *)h, NULL);
}

/* After a run of the startup program on sc: the runner's hook (driver.h), if any. */
static FlStatus startup_done(FlScope *s, FlScope *sc, FlErr *e) {
    FlVar *v = fl_scope_find(s, FL_DRIVER_HOOKS_VAR);
    const FlDriverHooks *k = v ? fl_var_get_object(v) : NULL;
    return k && k->startup_done ? k->startup_done(k->ctx, sc, e) : FL_OK;
}

const FlDriverHost *fl_driver_need_host(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const FlDriverHost *h = fl_driver_find(s);
    if (!h) fl_exec_op_error(rc, op, "a driver op runs only in a bundle's driver (fl_executor_run_driver)");
    return h;
}

static void scope_retain_cb(void *s) { fl_scope_retain(s); }
static void scope_release_cb(void *s) { fl_scope_release(s); }

/* The scope input arg `a` holds (a new reference), else a new reference to dflt. */
FlStatus fl_driver_arg_scope(RunCtx *rc, const ExecOp *op, FlScope *s, const ArgRef *a, FlScope *dflt, FlScope **out) {
    *out = NULL;
    if (!a) {
        fl_scope_retain(dflt);
        *out = dflt;
        return FL_OK;
    }
    FlVar *v = fl_exec_var_read(s, a);
    FlScope *sc = v ? fl_var_retain_object(v, scope_retain_cb) : NULL;
    if (!sc) return fl_exec_op_error(rc, op, "'%s' holds no scope", a->name);
    *out = sc;
    return FL_OK;
}

/* The scope of the op's optional scope input `slot` (a new reference), else the root scope of
 * the driver's run. */
static FlStatus slot_scope(RunCtx *rc, const ExecOp *op, FlScope *s, int slot, FlScope **out) {
    *out = NULL;
    const FlDriverHost *h = fl_driver_need_host(rc, op, s);
    if (!h) return FL_ERROR;
    return fl_driver_arg_scope(rc, op, s, fl_exec_nin(op, slot) > 0 ? fl_exec_in_args(op, slot) : NULL, h->root, out);
}

/* ---------------------------------------------------------------- run_program */

static const FlAttr *strs_attr(const ExecOp *op, const char *name) { return fl_ir_op_attr(op->desc, name); }

static FlStatus prep_run_program(ExecOp *op, FlErr *e) {
    if (!*fl_exec_attr_string(op, "program")) return fl_err(e, "run_program names no program");
    const FlAttr *fn = strs_attr(op, "feed_names"), *tn = strs_attr(op, "fetch_names");
    int nfeed = fl_exec_nin(op, FL_IN_run_program_Feed), nfetch = fl_exec_nout(op, FL_OUT_run_program_Fetch);
    if ((size_t)nfeed != (fn ? fn->n : 0))
        return fl_err(e, "%d feeds but %zu feed_names", nfeed, fn ? fn->n : 0);
    if ((size_t)nfetch != (tn ? tn->n : 0))
        return fl_err(e, "%d fetches but %zu fetch_names", nfetch, tn ? tn->n : 0);
    return FL_OK;
}

/* *out = the one number of the optional input `slot` (int64 [1]); dflt when absent. */
static FlStatus opt_number(RunCtx *rc, const ExecOp *op, FlScope *s, int slot, int64_t dflt, int64_t *out) {
    *out = dflt;
    if (fl_exec_nin(op, slot) == 0) return FL_OK;
    const ArgRef *a = fl_exec_in_args(op, slot);
    FlVar *v = fl_exec_var_read(s, a);
    FlTensor t = FL_TENSOR_INIT;
    if (!v || !fl_var_get_tensor(v, &t)) return fl_exec_op_error(rc, op, "'%s' holds no tensor", a->name);
    bool one = fl_tensor_numel(&t) == 1;
    if (one) *out = fl_tensor_get_int(&t, 0);
    fl_tensor_fini(&t);
    return one ? FL_OK : fl_exec_op_error(rc, op, "'%s' is not one number", a->name);
}

static FlStatus run_run_program(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const FlDriverHost *h = fl_driver_need_host(rc, op, s);
    if (!h) return FL_ERROR;
    const FlAttr *fn = strs_attr(op, "feed_names"), *tn = strs_attr(op, "fetch_names");
    size_t nfeed = fn ? fn->n : 0, nfetch = tn ? tn->n : 0;
    const ArgRef *feeds = fl_exec_in_args(op, FL_IN_run_program_Feed);
    const ArgRef *fetches = fl_exec_out_args(op, FL_OUT_run_program_Fetch);
    bool has_scope = fl_exec_nin(op, FL_IN_run_program_Scope) > 0;
    FlScope *sc;
    if (fl_driver_arg_scope(rc, op, s, has_scope ? fl_exec_in_args(op, FL_IN_run_program_Scope) : NULL, h->root, &sc))
        return FL_ERROR;
    FlTensor *ft = fl_xcalloc(nfeed + 1, sizeof *ft);
    FlExecFeed *f = fl_xcalloc(nfeed + 1, sizeof *f);
    FlVar **outs = fl_xcalloc(nfetch + 1, sizeof *outs);
    FlStatus st = FL_OK;
    for (size_t i = 0; i < nfeed; i++) fl_tensor_init(&ft[i]);
    for (size_t i = 0; i < nfetch; i++) outs[i] = fl_exec_var_write(s, &fetches[i]);
    for (size_t i = 0; i < nfeed && st == FL_OK; i++) {
        FlVar *v = fl_exec_var_read(s, &feeds[i]);
        if (!v || !fl_var_get_tensor(v, &ft[i]))
            st = fl_exec_op_error(rc, op, "feed '%s': '%s' holds no tensor", fn->strs[i], feeds[i].name);
        f[i] = (FlExecFeed){fn->strs[i], &ft[i]};
    }
    const char *pn = fl_exec_attr_string(op, "program");
    FlExec *ex = fl_driver_program(h, pn);
    if (st == FL_OK && !ex)
        st = fl_exec_op_error(rc, op, "program '%s' is not a program of the bundle (startup, main or a named one)", pn);
    /* a trainer of a plan (a transport attached): each run of main is one step of the job */
    bool predict = fl_exec_attr_bool(op, "predict");
    FlDist *d = strcmp(pn, "main") == 0 && !predict ? fl_dist_find(sc) : NULL;
    if (d && !(d->step_begin && d->step_end)) d = NULL;
    int64_t step, rows, global;
    if (st == FL_OK && (opt_number(rc, op, s, FL_IN_run_program_Step, -1, &step) ||
                        opt_number(rc, op, s, FL_IN_run_program_Rows, 0, &rows) ||
                        opt_number(rc, op, s, FL_IN_run_program_GlobalRows, 0, &global)))
        st = FL_ERROR;
    if (st == FL_OK) {
        FlErr e;
        if (d) d->step_begin(d, step, rows, global);
        if (fl_exec_run_into(ex, sc, f, nfeed, (const char *const *)(tn ? tn->strs : NULL), outs, nfetch,
                             predict ? FL_EXEC_PREDICT : 0, &e) ||
            (d && d->step_end(d, &e)))
            st = fl_exec_op_error(rc, op, "the %s program: %s", pn, e.msg);
        else if (ex == h->startup && startup_done(s, sc, &e))
            st = fl_exec_op_error(rc, op, "%s", e.msg);
    }
    for (size_t i = 0; i < nfeed; i++) fl_tensor_fini(&ft[i]);
    free(ft);
    free(outs);
    free(f);
    fl_scope_release(sc);
    return st;
}
FL_CONTROL_ADAPTER(run_program, prep_run_program, run_run_program);

/* ---------------------------------------------------------------- scope_new */

static FlStatus run_scope_new(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlScope *parent;
    if (slot_scope(rc, op, s, FL_IN_scope_new_Parent, &parent)) return FL_ERROR;
    FlScope *n = fl_scope_new(parent);
    fl_scope_release(parent); /* n holds its own reference */
    fl_var_set_object(fl_exec_var_write(s, fl_exec_out_args(op, FL_OUT_scope_new_Out)), n, scope_release_cb);
    return FL_OK;
}
FL_CONTROL_ADAPTER(scope_new, NULL, run_scope_new);

/* ---------------------------------------------------------------- time_now */

static FlStatus run_time_now(RunCtx *rc, const ExecOp *op, FlScope *s) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double now = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    FlTensor t = FL_TENSOR_INIT;
    FlErr e;
    if (fl_tensor_from(&e, &t, FL_DT_FLOAT64, 0, NULL, &now) != FL_OK) return fl_exec_op_error(rc, op, "%s", e.msg);
    fl_var_take_tensor(fl_exec_var_write(s, fl_exec_out_args(op, FL_OUT_time_now_Out)), &t);
    return FL_OK;
}
FL_CONTROL_ADAPTER(time_now, NULL, run_time_now);

/* ---------------------------------------------------------------- print_line */

static bool is_float_dt(FlDType t) { return t == FL_DT_FLOAT32 || t == FL_DT_FLOAT64 || t == FL_DT_FLOAT16; }

/* y and x are the same value of dt (a float dtype). */
static bool same_in(double y, double x, FlDType dt) {
    if (dt == FL_DT_FLOAT16) return fl_half_from_double(y) == fl_half_from_double(x);
    return dt == FL_DT_FLOAT32 ? (float)y == (float)x : y == x;
}

/* The fewest significant digits (%.*g) that give x back in its dtype. */
static int shortest_digits(double x, FlDType dt) {
    char b[64];
    int max = dt == FL_DT_FLOAT16 ? 5 : dt == FL_DT_FLOAT32 ? 9 : 17;
    for (int p = 1; p < max; p++) {
        snprintf(b, sizeof b, "%.*g", p, x);
        double y = strtod(b, NULL);
        if (same_in(y, x, dt)) return p;
    }
    return max;
}

/* numpy's print precision: an array's elements keep at most this many digits after the point
 * (numpy.set_printoptions' precision=8, floatmode 'maxprec'). */
enum { NUMPY_PRECISION = 8 };

/* Digits after the point of text b (a "%f" or "%e" form) once trailing zeros are dropped. */
static int kept_digits(const char *b) {
    const char *dot = strchr(b, '.');
    if (!dot) return 0;
    const char *end = strchr(dot, 'e');
    if (!end) end = dot + strlen(dot);
    while (end > dot + 1 && end[-1] == '0') end--;
    return (int)(end - dot - 1);
}

/* Fraction digits of x's shortest fixed-point form, at most NUMPY_PRECISION (x rounded to that,
 * its trailing zeros dropped, as numpy does). */
static int frac_digits(double x, FlDType dt) {
    char b[400];
    snprintf(b, sizeof b, "%.*g", shortest_digits(x, dt), x);
    int d;
    if (strchr(b, 'e')) { /* digits in the mantissa minus the exponent */
        int exp = atoi(strchr(b, 'e') + 1);
        const char *dot = strchr(b, '.');
        int mant = dot ? (int)(strchr(b, 'e') - dot - 1) : 0;
        d = mant - exp > 0 ? mant - exp : 0;
    } else {
        const char *dot = strchr(b, '.');
        d = dot ? (int)strlen(dot + 1) : 0;
    }
    if (d <= NUMPY_PRECISION) return d;
    snprintf(b, sizeof b, "%.*f", NUMPY_PRECISION, x);
    return kept_digits(b);
}

/* Mantissa digits after the point of x's shortest scientific form, at most NUMPY_PRECISION. */
static int sci_digits(double x, FlDType dt) {
    int d = shortest_digits(x, dt) - 1;
    if (d <= NUMPY_PRECISION) return d;
    char b[64];
    snprintf(b, sizeof b, "%.*e", NUMPY_PRECISION, x);
    return kept_digits(b);
}

/* Element i of t as numpy writes it alone (before column padding). */
typedef struct ElemFmt {
    bool sci;
    int frac;      /* fraction digits of every element (scientific: of its mantissa) */
    int exp_width; /* scientific: the exponent's digits, at least 2 */
} ElemFmt;

static void elem_text(const FlTensor *t, int64_t i, const ElemFmt *f, FlBuf *out) {
    if (t->dtype == FL_DT_BOOL) {
        fl_buf_puts(out, fl_tensor_get(t, i) != 0 ? "True" : "False");
        return;
    }
    if (!is_float_dt(t->dtype)) {
        fl_buf_printf(out, "%lld", (long long)fl_tensor_get_int(t, i));
        return;
    }
    double x = fl_tensor_get(t, i);
    if (isnan(x)) {
        fl_buf_puts(out, "nan");
        return;
    }
    if (isinf(x)) {
        fl_buf_puts(out, x < 0 ? "-inf" : "inf");
        return;
    }
    char b[400];
    if (f->sci) { /* numpy's: every mantissa with f->frac digits of x, a point always, the
                   * exponents padded to one width */
        snprintf(b, sizeof b, "%.*e", f->frac, x);
        char *e = strchr(b, 'e');
        fl_buf_append(out, b, (size_t)(e - b));
        if (f->frac == 0) fl_buf_putc(out, '.');
        fl_buf_printf(out, "e%c%0*d", e[1], f->exp_width, abs(atoi(e + 2)));
        return;
    }
    /* fixed point: each element with its own digits (at most f->frac), padded with spaces to
     * f->frac as numpy pads */
    int d = frac_digits(x, t->dtype);
    if (d > f->frac) d = f->frac;
    snprintf(b, sizeof b, "%.*f", d, x);
    fl_buf_puts(out, b);
    if (d == 0) fl_buf_putc(out, '.');
    for (int k = d; k < f->frac; k++) fl_buf_putc(out, ' ');
}

/* A float as Python's repr writes it: the shortest digits, fixed point for exponents in
 * [-4, 16) with at least one fraction digit, else "1e+16". */
static void python_float(double x, FlDType dt, FlBuf *out) {
    if (!isfinite(x)) {
        fl_buf_puts(out, isnan(x) ? "nan" : x < 0 ? "-inf" : "inf");
        return;
    }
    int p = shortest_digits(x, dt);
    char b[400];
    snprintf(b, sizeof b, "%.*e", p - 1, x);
    int exp = atoi(strchr(b, 'e') + 1);
    if (exp < -4 || exp >= 16) {
        snprintf(b, sizeof b, "%.*g", p, x);
        fl_buf_puts(out, b);
        return;
    }
    int frac = p - 1 - exp;
    snprintf(b, sizeof b, "%.*f", frac > 0 ? frac : 1, x);
    fl_buf_puts(out, b);
}

/* numpy's print options: lines of at most 75 characters, and an array of more than 1000
 * elements summarized: 3 items at each end of every axis longer than 6, "..." between. */
enum { NUMPY_LINEWIDTH = 75, NUMPY_THRESHOLD = 1000, NUMPY_EDGEITEMS = 3 };

/* Whether flat element i of t is printed (summary: every index within the edge items of an axis
 * longer than twice their count). */
static bool elem_shown(const FlTensor *t, int64_t i, bool summary) {
    if (!summary) return true;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t k = i % t->ne[d];
        i /= t->ne[d];
        if (t->ne[d] > 2 * NUMPY_EDGEITEMS && k >= NUMPY_EDGEITEMS && k < t->ne[d] - NUMPY_EDGEITEMS) return false;
    }
    return true;
}

typedef struct ArrayFmt {
    const FlTensor *t;
    const FlBuf *cells; /* each printed element's text, by flat index */
    size_t width;       /* every element is padded on the left to this */
    bool summary;
    const char *sep; /* " " (str) or ", " (repr) */
} ArrayFmt;

static void spaces(FlBuf *b, size_t n) {
    for (size_t k = 0; k < n; k++) fl_buf_putc(b, ' ');
}

/* Appends word to line, first moving line to s and starting a new one at the hanging indent when
 * the word would pass width (never on a line holding only the indent: it would not help). */
static void line_extend(FlBuf *s, FlBuf *line, const FlBuf *word, size_t width, size_t hang) {
    if (line->len + word->len > width && line->len > hang) {
        while (line->len && line->data[line->len - 1] == ' ') line->len--;
        fl_buf_append(s, line->data, line->len);
        fl_buf_putc(s, '\n');
        line->len = 0;
        spaces(line, hang);
    }
    fl_buf_append(line, word->data, word->len);
}

/* numpy's layout of an array: the sub-array from axis on at flat offset off, its lines after the
 * first indented by hang, as wide as width; the last axis's items fill lines, the others' are
 * one per line with a blank line per axis below. */
static void array_rows(const ArrayFmt *F, int axis, int64_t off, size_t hang, size_t width, FlBuf *out) {
    const FlTensor *t = F->t;
    if (axis == t->ndim) {
        spaces(out, F->width - F->cells[off].len);
        fl_buf_append(out, F->cells[off].data, F->cells[off].len);
        return;
    }
    int64_t len = t->ne[axis], stride = 1;
    for (int d = axis + 1; d < t->ndim; d++) stride *= t->ne[d];
    bool summary = F->summary && len > 2 * NUMPY_EDGEITEMS;
    int64_t lead = summary ? NUMPY_EDGEITEMS : 0, shown = summary ? 2 * NUMPY_EDGEITEMS : len;
    FlBuf s = {0}, line = {0}, word = {0}; /* s starts with the hanging indent, dropped below */
    if (axis == t->ndim - 1) {
        FlBuf dots = {0};
        fl_buf_puts(&dots, "...");
        spaces(&line, hang);
        for (int64_t j = 0; j < shown; j++) {
            if (summary && j == lead) {
                line_extend(&s, &line, &dots, width - 1, hang);
                fl_buf_puts(&line, F->sep);
            }
            int64_t k = j < lead ? j : len - shown + j;
            word.len = 0;
            array_rows(F, axis + 1, off + k * stride, hang + 1, width - 1, &word);
            line_extend(&s, &line, &word, width - 1, hang);
            if (j + 1 < shown) fl_buf_puts(&line, F->sep);
        }
        fl_buf_append(&s, line.data, line.len);
        fl_buf_free(&dots);
    } else {
        FlBuf line_sep = {0}; /* the separator without its blanks, a newline per axis left */
        fl_buf_puts(&line_sep, F->sep);
        while (line_sep.len && line_sep.data[line_sep.len - 1] == ' ') line_sep.len--;
        for (int d = axis + 1; d < t->ndim; d++) fl_buf_putc(&line_sep, '\n');
        for (int64_t j = 0; j < shown; j++) {
            spaces(&s, hang);
            if (summary && j == lead) {
                fl_buf_puts(&s, "...");
                fl_buf_append(&s, line_sep.data, line_sep.len);
                spaces(&s, hang);
            }
            int64_t k = j < lead ? j : len - shown + j;
            array_rows(F, axis + 1, off + k * stride, hang + 1, width - 1, &s);
            if (j + 1 < shown) fl_buf_append(&s, line_sep.data, line_sep.len);
        }
        fl_buf_free(&line_sep);
    }
    fl_buf_putc(out, '[');
    fl_buf_append(out, s.data + hang, s.len - hang);
    fl_buf_putc(out, ']');
    fl_buf_free(&s);
    fl_buf_free(&line);
    fl_buf_free(&word);
}

/* numpy's str of t (repr false) or its repr: "array(" and the dtype around the elements, a comma
 * after each, lines indented under the first (rank 0: the number, as a numpy scalar's repr);
 * numpy's line width and summary of large arrays. */
static void array_text(const FlTensor *t, bool repr, FlBuf *out) {
    int64_t n = fl_tensor_numel(t);
    if (t->ndim == 0 && n == 1 && is_float_dt(t->dtype)) {
        python_float(fl_tensor_get(t, 0), t->dtype, out);
        return;
    }
    bool summary = n > NUMPY_THRESHOLD;
    ElemFmt f = {0};
    if (is_float_dt(t->dtype)) { /* the format of the elements printed */
        double lo = INFINITY, hi = 0;
        for (int64_t i = 0; i < n; i++) {
            double a = fabs(fl_tensor_get(t, i));
            if (!isfinite(a) || !elem_shown(t, i, summary)) continue;
            if (a > hi) hi = a;
            if (a > 0 && a < lo) lo = a;
        }
        f.sci = hi >= 1e8 || (lo < 1e-4) || (lo < INFINITY && hi / lo > 1e3);
        if (lo == INFINITY) f.sci = hi >= 1e8;
        f.exp_width = 2;
        for (int64_t i = 0; i < n; i++) {
            double x = fl_tensor_get(t, i);
            if (!isfinite(x) || !elem_shown(t, i, summary)) continue;
            int d = f.sci ? sci_digits(x, t->dtype) : frac_digits(x, t->dtype);
            if (d > f.frac) f.frac = d;
            if (f.sci) { /* the exponent's digits as printed, rounding included */
                char b[64];
                snprintf(b, sizeof b, "%.*e", d, x);
                int w = (int)strlen(strchr(b, 'e') + 2);
                if (w > f.exp_width) f.exp_width = w;
            }
        }
    }
    FlBuf *cells = fl_xcalloc((size_t)(n ? n : 1), sizeof *cells);
    size_t width = t->dtype == FL_DT_BOOL ? 5 : 0; /* numpy pads True as it pads False */
    for (int64_t i = 0; i < n; i++) {
        if (!elem_shown(t, i, summary)) continue;
        elem_text(t, i, &f, &cells[i]);
        if (cells[i].len > width) width = cells[i].len;
    }
    size_t start = out->len;
    if (repr && t->ndim > 0) fl_buf_puts(out, "array(");
    if (t->ndim == 0) {
        fl_buf_puts(out, n ? fl_buf_str(&cells[0]) : "");
    } else if (n == 0) {
        fl_buf_puts(out, "[]");
    } else { /* str: lines of 75 after a "[" of hanging indent; repr: under "array(", with room
              * for the "," or ")" after it */
        ArrayFmt F = {t, cells, width, summary, repr ? ", " : " "};
        array_rows(&F, 0, 0, repr ? 7 : 1, repr ? NUMPY_LINEWIDTH - 1 : NUMPY_LINEWIDTH, out);
    }
    if (repr && t->ndim > 0) { /* numpy names the dtype unless it is float64, int64 or bool, and
                                * always for an empty array (with its shape unless that is (0,)) */
        if (n == 0 && t->ndim != 1) {
            fl_buf_puts(out, ", shape=(");
            for (int d = 0; d < t->ndim; d++) fl_buf_printf(out, "%s%lld", d ? ", " : "", (long long)t->ne[d]);
            fl_buf_puts(out, t->ndim == 1 ? ",)" : ")");
        }
        if (n == 0 || (t->dtype != FL_DT_FLOAT64 && t->dtype != FL_DT_INT64 && t->dtype != FL_DT_BOOL)) {
            /* on a line of its own when it would pass the line width */
            fl_buf_putc(out, ',');
            size_t line = out->len;
            while (line > start && out->data[line - 1] != '\n') line--;
            size_t last = out->len - line;
            size_t dlen = strlen("dtype=)") + strlen(fl_dtype_name(t->dtype));
            fl_buf_puts(out, last + dlen + 1 > NUMPY_LINEWIDTH ? "\n      " : " ");
            fl_buf_printf(out, "dtype=%s", fl_dtype_name(t->dtype));
        }
        fl_buf_putc(out, ')');
    }
    for (int64_t i = 0; i < n; i++) fl_buf_free(&cells[i]);
    free(cells);
}

/* printf with a conversion that prep_print_line checked (a runtime string, hence not a literal). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void printf_checked(FlBuf *out, const char *spec, ...) {
    va_list ap;
    va_start(ap, spec);
    fl_buf_vprintf(out, spec, ap);
    va_end(ap);
}
#pragma GCC diagnostic pop

/* One value through spec: "" as numpy's str; "repr" as numpy's repr (an array inside a Python
 * list, tuple or dict); "list" a vector of ints as Python's list; a printf conversion of one
 * element ("%s": str). ("arrays", a tensor array as Python's list of its elements' reprs, is
 * print_line's own.) */
static FlStatus format_value(RunCtx *rc, const ExecOp *op, const char *name, const FlTensor *t, const char *spec,
                             FlBuf *out) {
    size_t n = strlen(spec);
    char conv = n ? spec[n - 1] : 0;
    if (strcmp(spec, "list") == 0) { /* Python's str of a list of ints: the lengths of a LoD's level */
        if (t->ndim != 1 || (t->dtype != FL_DT_INT64 && t->dtype != FL_DT_INT32))
            return fl_exec_op_error(rc, op, "'%s' %s %s: the spec 'list' prints a vector of ints as Python's list",
                                    name, fl_dtype_name(t->dtype), fl_tensor_shape(t).s);
        fl_buf_putc(out, '[');
        for (int64_t i = 0; i < fl_tensor_numel(t); i++)
            fl_buf_printf(out, "%s%lld", i ? ", " : "", (long long)fl_sat_i64(fl_tensor_get(t, i)));
        fl_buf_putc(out, ']');
        return FL_OK;
    }
    if (strcmp(spec, "repr") == 0) {
        array_text(t, true, out);
        return FL_OK;
    }
    if (!n || conv == 's') {
        FlBuf s = {0};
        array_text(t, false, &s);
        size_t k = 1, width = 0;
        bool zero = false, left = false;
        for (; k < n && strchr("-+ #0", spec[k]); k++) zero |= spec[k] == '0', left |= spec[k] == '-';
        for (; k < n && spec[k] >= '0' && spec[k] <= '9'; k++) width = width * 10 + (size_t)(spec[k] - '0');
        if (!n) {
            fl_buf_append(out, fl_buf_str(&s), s.len);
        } else if (zero && !left && t->ndim == 0 && t->dtype != FL_DT_BOOL && s.len < width) {
            /* Python's '{:05}' of a number: zeros after the sign up to the width (a bool prints as
             * True/False here, which no zeros pad) */
            const char *txt = fl_buf_str(&s);
            size_t sign = txt[0] == '-';
            fl_buf_append(out, txt, sign);
            for (size_t i = s.len; i < width; i++) fl_buf_putc(out, '0');
            fl_buf_append(out, txt + sign, s.len - sign);
        } else {
            printf_checked(out, spec, fl_buf_str(&s));
        }
        fl_buf_free(&s);
        return FL_OK;
    }
    if (fl_tensor_numel(t) != 1)
        return fl_exec_op_error(rc, op, "'%s' %s has %lld elements: the conversion '%s' takes one (as numpy converts "
                                "only one-element arrays to numbers)", name, fl_tensor_shape(t).s,
                                (long long)fl_tensor_numel(t), spec);
    if (strchr("dioxX", conv)) {
        char f[80];
        snprintf(f, sizeof f, "%.*sll%c", (int)n - 1, spec, conv);
        printf_checked(out, f, (long long)fl_sat_i64(fl_tensor_get(t, 0)));
    } else {
        printf_checked(out, spec, fl_tensor_get(t, 0));
    }
    return FL_OK;
}

/* A tensor array as Fluid's fetch gives it with return_numpy (executor.py's as_numpy): a list of
 * its elements, each as numpy's repr, None where one was never written (an uninitialised
 * tensor); items: each element is a list's item with a leading dim of 1, which goes (a number
 * appended prints as Python's). a releases. */
static FlStatus array_list(RunCtx *rc, const ExecOp *op, TArray *a, bool items, FlBuf *out) {
    FlStatus st = FL_OK;
    fl_buf_putc(out, '[');
    for (int64_t i = 0; i < fl_array_len(a) && st == FL_OK; i++) {
        if (i) fl_buf_puts(out, ", ");
        const FlTensor *t = fl_array_at(a, i);
        FlTensor row = FL_TENSOR_INIT;
        FlErr e;
        bool drop = t && items && t->ndim >= 1 && t->ne[0] == 1;
        if (drop && fl_tensor_view(&e, &row, t, 0, t->ndim - 1, t->ne + 1))
            st = fl_exec_op_error(rc, op, "%s", e.msg);
        else if (t)
            array_text(drop ? &row : t, true, out);
        else
            fl_buf_puts(out, "None");
        fl_tensor_fini(&row);
    }
    fl_buf_putc(out, ']');
    fl_array_release(a);
    return st;
}

/* A spec is "", "list", "repr", "arrays", "items", or '%', flags, width and precision, then one of
 * d i o x X e E f F g G s. */
static FlStatus prep_print_line(ExecOp *op, FlErr *e) {
    const FlAttr *texts = strs_attr(op, "texts"), *specs = strs_attr(op, "specs");
    int n = fl_exec_nin(op, FL_IN_print_line_X);
    if (!texts || texts->n != (size_t)n + 1)
        return fl_err(e, "%d values need %d texts, found %zu", n, n + 1, texts ? texts->n : 0);
    if (specs && specs->n && specs->n != (size_t)n) return fl_err(e, "%d values but %zu specs", n, specs->n);
    for (size_t i = 0; specs && i < specs->n; i++) {
        const char *s = specs->strs[i];
        size_t len = strlen(s);
        if (!len || strcmp(s, "list") == 0 || strcmp(s, "repr") == 0 || strcmp(s, "arrays") == 0 ||
            strcmp(s, "items") == 0)
            continue;
        size_t k = 1;
        while (k < len && strchr("-+ #0", s[k])) k++;
        while (k < len && s[k] >= '0' && s[k] <= '9') k++;
        if (k < len && s[k] == '.') k++;
        while (k < len && s[k] >= '0' && s[k] <= '9') k++;
        if (s[0] != '%' || k != len - 1 || !strchr("dioxXeEfFgGs", s[k]) || len > 32)
            return fl_err(e, "spec %zu '%s' is not a conversion ('%%d', '%%.2f', '%%s', ...)", i, s);
    }
    const char *st = fl_exec_attr_string(op, "stream");
    if (strcmp(st, "stdout") != 0 && strcmp(st, "stderr") != 0)
        return fl_err(e, "stream '%s' (stdout or stderr)", st);
    op->a.b[0] = strcmp(st, "stderr") == 0;
    op->a.b[1] = fl_exec_attr_bool(op, "newline");
    return FL_OK;
}

static FlStatus run_print_line(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const FlAttr *texts = strs_attr(op, "texts"), *specs = strs_attr(op, "specs");
    int n = fl_exec_nin(op, FL_IN_print_line_X);
    const ArgRef *x = fl_exec_in_args(op, FL_IN_print_line_X);
    FlBuf line = {0};
    FlStatus st = FL_OK;
    fl_buf_puts(&line, texts->strs[0]);
    for (int i = 0; i < n && st == FL_OK; i++) {
        FlTensor t = FL_TENSOR_INIT;
        FlVar *v = fl_exec_var_read(s, &x[i]);
        const char *spec = specs && specs->n ? specs->strs[i] : "";
        if (strcmp(spec, "arrays") == 0 || strcmp(spec, "items") == 0) /* a tensor array: Python's list */
            st = array_list(rc, op, fl_array_retain(v), spec[0] == 'i', &line);
        else if (!v || !fl_var_get_tensor(v, &t)) st = fl_exec_op_error(rc, op, "'%s' holds no tensor", x[i].name);
        else st = format_value(rc, op, x[i].name, &t, spec, &line);
        fl_tensor_fini(&t);
        fl_buf_puts(&line, texts->strs[i + 1]);
    }
    if (st == FL_OK) {
        if (op->a.b[1]) fl_buf_putc(&line, '\n');
        FILE *f = op->a.b[0] ? stderr : stdout;
        flockfile(f);
        fwrite(fl_buf_str(&line), 1, line.len, f);
        fflush(f);
        funlockfile(f);
    }
    fl_buf_free(&line);
    return st;
}
FL_CONTROL_ADAPTER(print_line, prep_print_line, run_print_line);

/* ---------------------------------------------------------------- index, item */

/* index: Out = a view of X's row i (rows are contiguous), without the first dim. */
static FlStatus run_index(OpCall *c) {
    const FlTensor *x = fl_call_in(c, FL_IN_index_X);
    if (x->ndim < 1) return fl_err(c->e, "X is a number (rank 0): it has no elements to index");
    int64_t i = c->op->a.i[0], n = x->ne[0];
    if (i < -n || i >= n)
        return fl_err(c->e, "index %lld is out of bounds for X %s", (long long)i, fl_tensor_shape(x).s);
    if (i < 0) i += n;
    int64_t inner = n ? fl_tensor_numel(x) / n : 0;
    return fl_tensor_view(c->e, fl_call_out(c, FL_OUT_index_Out), x, i * inner, x->ndim - 1, x->ne + 1);
}
static FlStatus prep_index(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_int(op, "i");
    return FL_OK;
}
FL_ADAPTER(index, prep_index, run_index);

/* slice_rows: Out = a view of X's rows [start, end) after numpy's normalisation. */
static FlStatus run_slice_rows(OpCall *c) {
    const FlTensor *x = fl_call_in(c, FL_IN_slice_rows_X);
    int64_t n = x->ne[0], r[2];
    const FlTensor *b[2] = {fl_call_in(c, FL_IN_slice_rows_Start), fl_call_in(c, FL_IN_slice_rows_End)};
    for (int k = 0; k < 2; k++) {
        if (fl_tensor_numel(b[k]) != 1)
            return fl_err(c->e, "%s holds %lld values: a slice bound is one integer", k ? "End" : "Start",
                          (long long)fl_tensor_numel(b[k]));
        int64_t v = fl_tensor_get_int(b[k], 0);
        if (v < 0) v = v < -n ? 0 : v + n;
        r[k] = v > n ? n : v;
    }
    if (r[1] < r[0]) r[1] = r[0];
    int64_t inner = n ? fl_tensor_numel(x) / n : 0, ne[FL_MAX_DIMS];
    memcpy(ne, x->ne, (size_t)x->ndim * sizeof *ne);
    ne[0] = r[1] - r[0];
    return fl_tensor_view(c->e, fl_call_out(c, FL_OUT_slice_rows_Out), x, r[0] * inner, x->ndim, ne);
}
static FlStatus prep_slice_rows(ExecOp *op, FlErr *e) {
    (void)op, (void)e;
    return FL_OK;
}
FL_ADAPTER(slice_rows, prep_slice_rows, run_slice_rows);

/* item: Out = X's one element, converted to dtype (the int dtypes exactly). */
static FlStatus run_item(OpCall *c) {
    const FlTensor *x = fl_call_in(c, FL_IN_item_X);
    if (fl_tensor_numel(x) != 1)
        return fl_err(c->e, "X %s has %lld elements: only a one-element array converts to a number (as numpy's)",
                      fl_tensor_shape(x).s, (long long)fl_tensor_numel(x));
    FlTensor *out = fl_call_out(c, FL_OUT_item_Out);
    FlDType dt = (FlDType)c->op->a.i[0];
    if (fl_tensor_alloc(c->e, out, dt, 0, NULL) != FL_OK) return FL_ERROR;
    if (dt == FL_DT_INT64 && x->dtype != FL_DT_FLOAT32 && x->dtype != FL_DT_FLOAT64)
        *(int64_t *)fl_tensor_data(out) = fl_tensor_get_int(x, 0);
    else
        fl_tensor_set(out, 0, fl_tensor_get(x, 0));
    return FL_OK;
}
static FlStatus prep_item(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "dtype");
    if (op->a.i[0] < 0 || op->a.i[0] > FL_DT_BOOL) return fl_err(e, "dtype %lld is not a dtype", (long long)op->a.i[0]);
    return FL_OK;
}
FL_ADAPTER(item, prep_item, run_item);

/* ---------------------------------------------------------------- exit */

/* exit: records its code in the host (the first exit wins) and ends the run with an error that
 * unwinds it: the driver's ops after it, its loops and its goroutines stop as they do on any
 * error; fl_executor_run_driver_exit then reports the code instead of the error. */
static FlStatus run_exit(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const FlDriverHost *h = fl_driver_need_host(rc, op, s);
    if (!h) return FL_ERROR;
    bool was = false;
    if (h->exit && atomic_compare_exchange_strong(&h->exit->exited, &was, true)) h->exit->code = (int)op->a.i[0];
    return fl_exec_op_error(rc, op, "exit(%d)", (int)op->a.i[0]);
}
static FlStatus prep_exit(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "code");
    if (op->a.i[0] < 0 || op->a.i[0] > 255)
        return fl_err(e, "code %lld is not an exit status (0 to 255)", (long long)op->a.i[0]);
    return FL_OK;
}
FL_CONTROL_ADAPTER(exit, prep_exit, run_exit);

/* ---------------------------------------------------------------- scope_var */

/* scope_var: Out = a reference to the tensor the scope's var holds now (a tensor in a var is
 * never changed in place, so later runs do not change Out). */
static FlStatus run_scope_var(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlScope *sc;
    if (slot_scope(rc, op, s, FL_IN_scope_var_Scope, &sc)) return FL_ERROR;
    const char *name = fl_exec_attr_string(op, "name");
    FlVar *v = fl_scope_find(sc, name);
    FlTensor t = FL_TENSOR_INIT;
    FlStatus st = FL_OK;
    if (!v) st = fl_exec_op_error(rc, op, "the scope has no var '%s' (find_var(name) is None: run a program that makes it first)", name);
    else if (!fl_var_get_tensor(v, &t)) st = fl_exec_op_error(rc, op, "the scope's var '%s' holds no tensor", name);
    else fl_var_take_tensor(fl_exec_var_write(s, fl_exec_out_args(op, FL_OUT_scope_var_Out)), &t);
    fl_tensor_fini(&t);
    fl_scope_release(sc);
    return st;
}
FL_CONTROL_ADAPTER(scope_var, NULL, run_scope_var);
