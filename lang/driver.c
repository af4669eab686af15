/* driver.c: the driver program (docs/driver.md): what a script does at run time, compiled while
 * the script runs at compile time. The native module `_driver` (used by stdlib/fluid/executor.fl,
 * stdlib/threading.fl, stdlib/time.fl and stdlib/numpy.fl) appends the driver's ops:
 *
 *   run(...)              exe.run: a run_program op; its fetches are new vars of the driver
 *   global_scope()        the root scope (a Scope record); its new_scope() appends scope_new
 *   time_now()            time.time(): a time_now op
 *   thread_start(f, a, k) Thread.start(): a channel of the driver and a `go` whose goroutine runs
 *                         f(*a, **k) (compiled into the go's block, as a go body is) and then
 *                         sends on the channel; thread_join(ch) receives from it
 *   array(obj, dtype)     numpy.array of compile-time numbers: an ndarray record that a feed makes
 *                         a constant of the driver
 *   cuda_note()           CUDAPlace(n): says once per compilation that it means the CPU
 *
 * Where ops go: the driver is a program of its own (Bundle.driver, made on first use). Inside a
 * thread's body the current program is the driver (the go block is one of its blocks); elsewhere
 * an op whose inputs are driver vars goes to the driver's global block (fl_ev_op and
 * fl_ev_binop_var route it through fl_ev_driver_enter), so `time.time() - start` is the driver's.
 *
 * Fetched values: arithmetic and comparisons go to the driver through fl_ev_binop_var; v[i] is an
 * index op and float(v), int(v) an item op (fl_ev_driver_index, fl_ev_driver_item).
 *
 * Run-time strings: str(v), '...{}'.format(v) and '%d' % v of a driver var make a RuntimeStr
 * record, a format (texts between the values, a printf spec per value) and its driver vars;
 * `+` joins them with strings, and print(...) of one (or of a driver var) appends a print_line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/infer.h"
#include "lang/eval_impl.h"

#define RTSTR_TYPE "RuntimeStr"
#define SCOPE_TYPE "Scope"
#define NDARRAY_TYPE "ndarray"

/* ------------------------------------------------------------------ the driver program */

FlProgram *fl_ev_driver(Ctx *c) {
    if (!c->bundle->driver) c->bundle->driver = fl_ir_program_new();
    else if (c->train_driver) c->driver_after_train = true; /* the script's own use, after fluid.train's loop */
    return c->bundle->driver;
}

bool fl_ev_in_driver(const Ctx *c) { return c->bundle->driver && c->b.main == c->bundle->driver; }

bool fl_ev_driver_started(const Ctx *c) {
    return c->bundle->driver && fl_ir_block(c->bundle->driver, 0)->ops.len > 0;
}

bool fl_ev_is_driver_var(const Ctx *c, const FlValue *v) {
    return v && v->kind == VK_VAR && c->bundle->driver && v->var.prog == c->bundle->driver;
}

void fl_ev_driver_enter(Ctx *c, DriverSwap *s) {
    s->swapped = !fl_ev_in_driver(c);
    if (!s->swapped) return;
    s->main = c->b.main;
    s->block = c->b.block;
    s->home = c->home;
    c->b.main = fl_ev_driver(c);
    c->b.block = c->home = fl_ir_block(c->b.main, 0);
}

void fl_ev_driver_leave(Ctx *c, DriverSwap *s) {
    if (!s->swapped) return;
    c->b.main = s->main;
    c->b.block = s->block;
    c->home = s->home;
}

/* ------------------------------------------------------------------ records */

static FlValue *rec_get(FlValue *r, const char *name) {
    return r && r->kind == VK_RECORD && r->rec.attrs ? fl_map_find_str(&r->rec.attrs->map, name) : NULL;
}

static bool is_rec(const FlValue *v, const char *type) {
    return v && v->kind == VK_RECORD && !v->rec.cls && v->rec.type && strcmp(v->rec.type, type) == 0;
}

/* ------------------------------------------------------------------ run-time strings */

bool fl_ev_is_rtstr(const FlValue *v) { return is_rec(v, RTSTR_TYPE); }

bool fl_ev_is_runtime(const Ctx *c, const FlValue *v) {
    return fl_ev_is_rtstr(v) || fl_ev_is_driver_var(c, v) || fl_ev_is_lod_lengths(v);
}

FlValue *fl_ev_rtstr_new(Ctx *c) {
    FlValue *r = fl_v_record(c, RTSTR_TYPE);
    FlValue *texts = fl_v_list(c, VK_LIST);
    fl_v_list_push(c, texts, fl_v_cstr(c, ""));
    fl_v_rec_set(c, r, "_texts", texts);
    fl_v_rec_set(c, r, "_vars", fl_v_list(c, VK_LIST));
    fl_v_rec_set(c, r, "_specs", fl_v_list(c, VK_LIST));
    return r;
}

void fl_ev_rtstr_text(Ctx *c, FlValue *rt, const char *s, size_t n) {
    FlValue *texts = rec_get(rt, "_texts");
    FlValue **last = &texts->list.items[texts->list.len - 1];
    FlBuf b = {0};
    fl_buf_append(&b, (*last)->str.s, (*last)->str.n);
    fl_buf_append(&b, s, n);
    *last = fl_v_str(c, fl_buf_str(&b), b.len);
    fl_buf_free(&b);
}

void fl_ev_rtstr_value(Ctx *c, FlValue *rt, FlValue *var, const char *spec) {
    fl_v_list_push(c, rec_get(rt, "_vars"), var);
    fl_v_list_push(c, rec_get(rt, "_specs"), fl_v_cstr(c, spec));
    fl_v_list_push(c, rec_get(rt, "_texts"), fl_v_cstr(c, ""));
}

/* Appends v (a str, a RuntimeStr or a driver var, which prints as numpy's str) to rt. */
void fl_ev_rtstr_add(Ctx *c, FlValue *rt, FlValue *v) {
    if (v->kind == VK_STR) {
        fl_ev_rtstr_text(c, rt, v->str.s, v->str.n);
    } else if (fl_ev_is_rtstr(v) || fl_ev_is_lod_lengths(v)) {
        if (fl_ev_is_lod_lengths(v)) v = fl_ev_lod_lengths_str(c, v); /* a fetched sequence's lengths */
        FlValue *t = rec_get(v, "_texts"), *vars = rec_get(v, "_vars"), *specs = rec_get(v, "_specs");
        fl_ev_rtstr_text(c, rt, t->list.items[0]->str.s, t->list.items[0]->str.n);
        for (size_t i = 0; i < vars->list.len; i++) {
            fl_ev_rtstr_value(c, rt, vars->list.items[i], specs->list.items[i]->str.s);
            fl_ev_rtstr_text(c, rt, t->list.items[i + 1]->str.s, t->list.items[i + 1]->str.n);
        }
    } else {
        fl_ev_rtstr_value(c, rt, v, "");
    }
}

FlValue *fl_ev_rtstr_cat(Ctx *c, FlValue *a, FlValue *b) {
    FlValue *rt = fl_ev_rtstr_new(c);
    fl_ev_rtstr_add(c, rt, a);
    fl_ev_rtstr_add(c, rt, b);
    return rt;
}

FlValue *fl_ev_rtstr_settle(Ctx *c, FlValue *rt) {
    FlValue *texts = rec_get(rt, "_texts");
    return texts->list.len == 1 ? texts->list.items[0] : rt;
}

FlValue *fl_ev_rtstr_of(Ctx *c, FlValue *v) {
    if (fl_ev_is_rtstr(v)) return v;
    FlValue *rt = fl_ev_rtstr_new(c);
    fl_ev_rtstr_add(c, rt, v);
    return rt;
}

/* A format spec of str.format ("[[fill]align][sign][#][0][width][.precision][type]") as the
 * printf conversion print_line takes; NULL (reported) for what a run-time value cannot take. */
const char *fl_ev_rtstr_pyspec(Ctx *c, const char *spec, size_t n, FlSpan sp) {
    FlBuf b = {0};
    size_t i = 0;
    fl_buf_putc(&b, '%');
    if (i < n && (spec[i] == '<' || spec[i] == '>')) {
        if (spec[i] == '<') fl_buf_putc(&b, '-');
        i++;
    }
    while (i < n && strchr("+ #0", spec[i])) fl_buf_putc(&b, spec[i++]);
    while (i < n && spec[i] >= '0' && spec[i] <= '9') fl_buf_putc(&b, spec[i++]);
    bool prec = false;
    if (i < n && spec[i] == '.') {
        prec = true;
        fl_buf_putc(&b, spec[i++]);
        while (i < n && spec[i] >= '0' && spec[i] <= '9') fl_buf_putc(&b, spec[i++]);
    }
    char type = i < n ? spec[i++] : (prec ? 'g' : 's');
    if (i != n || !strchr("dfFeEgGxXos", type)) {
        fl_buf_free(&b);
        fl_ev_error(c, sp, "the format spec ':%.*s' of a run-time value is not one print can apply (it takes "
                    "[<|>][sign][#][0][width][.precision][d|f|e|g|x|o|s])", (int)n, spec);
        return NULL;
    }
    fl_buf_putc(&b, type);
    const char *r = n == 0 ? "" : fl_intern_str(&c->in, fl_buf_str(&b));
    fl_buf_free(&b);
    return r;
}

/* print(*values, sep, end) of run-time values: a print_line op where the first driver var is
 * (the driver's global block, or the thread body being compiled). */
FlValue *fl_ev_driver_print(Ctx *c, FlValue *values, FlValue *sep, FlValue *end, FlSpan sp) {
    return fl_ev_driver_print_stream(c, values, sep, end, "stdout", sp);
}

FlValue *fl_ev_driver_print_stream(Ctx *c, FlValue *values, FlValue *sep, FlValue *end, const char *stream, FlSpan sp) {
    const char *endt = end ? end->str.s : "\n";
    size_t el = strlen(endt);
    bool newline = el > 0 && endt[el - 1] == '\n'; /* else print_line writes end and no newline */
    FlValue *rt = fl_ev_rtstr_new(c);
    for (size_t i = 0; i < values->list.len; i++) {
        FlValue *v = values->list.items[i];
        if (i) fl_ev_rtstr_text(c, rt, sep ? sep->str.s : " ", sep ? sep->str.n : 1);
        if (v->kind == VK_STR || fl_ev_is_runtime(c, v)) {
            fl_ev_rtstr_add(c, rt, v);
        } else {
            FlBuf b = {0};
            bool ok = fl_v_repr_at(c, v, &b, sp);
            if (ok) fl_ev_rtstr_text(c, rt, fl_buf_str(&b), b.len);
            fl_buf_free(&b);
            if (!ok) return c->error;
        }
    }
    fl_ev_rtstr_text(c, rt, endt, newline ? el - 1 : el);
    FlValue *texts = rec_get(rt, "_texts"), *vars = rec_get(rt, "_vars"), *specs = rec_get(rt, "_specs");
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "print_line", sp);
    const char **tx = fl_xcalloc(texts->list.len + 1, sizeof *tx);
    const char **sx = fl_xcalloc(specs->list.len + 1, sizeof *sx);
    bool any_spec = false;
    for (size_t i = 0; i < texts->list.len; i++) tx[i] = texts->list.items[i]->str.s;
    for (size_t i = 0; i < specs->list.len; i++) {
        sx[i] = specs->list.items[i]->str.s;
        any_spec = any_spec || *sx[i];
    }
    for (size_t i = 0; i < vars->list.len; i++) fl_ir_op_add_input(op, "X", vars->list.items[i]->var.name);
    fl_ir_op_set_strings(op, "texts", tx, texts->list.len);
    if (any_spec) fl_ir_op_set_strings(op, "specs", sx, specs->list.len);
    fl_ir_op_set_string(op, "stream", stream);
    if (!newline) fl_ir_op_set_bool(op, "newline", false);
    free(tx);
    free(sx);
    bool ok = fl_ev_infer(c, c->b.block, op, sp);
    fl_ev_driver_leave(c, &s);
    return ok ? c->none : c->error;
}

/* ------------------------------------------------------------------ operations on fetched values */

/* op(X=v, attr=n) on the driver (fl_ev_op sends it there: v is a driver var). */
static FlValue *driver_op1(Ctx *c, const char *type, FlValue *v, const char *attr, FlValue *n, FlSpan sp) {
    const char *names[2] = {"X", attr};
    FlValue *vals[2] = {v, n};
    CallArgs a = {.kwnames = names, .kwvals = vals, .nkw = 2, .span = sp};
    return fl_ev_op(c, type, &a, sp);
}

/* v[i] with i an int of the driver (`for i in range(len(v)): v[i]`): gather's row i, its first
 * axis dropped; an i outside [0, len(v)) is gather's run-time error. */
static FlValue *index_by_var(Ctx *c, FlValue *v, FlValue *idx, FlSpan sp) {
    FlVarDesc *d = fl_ev_var_desc(c, idx);
    if (!d || (d->dtype != FL_DT_INT64 && d->dtype != FL_DT_INT32) || d->ndim > 1 ||
        (d->ndim == 1 && d->shape[0] != 1)) {
        FlBuf b = {0};
        if (d) fl_ir_shape_str(d->ndim, d->shape, &b);
        fl_ev_error(c, sp, "a fetched value is indexed by one int here (v[0], v[i]), found a Var of %s %s",
                    d ? fl_dtype_name(d->dtype) : "another program", fl_buf_str(&b));
        fl_buf_free(&b);
        return c->error;
    }
    FlValue *one = fl_v_list(c, VK_LIST);
    fl_v_list_push(c, one, fl_v_int(c, 1));
    FlValue *i1 = driver_op1(c, "reshape", idx, "shape", one, sp); /* gather's Index is [N] */
    if (i1->kind == VK_ERROR) return i1;
    const char *gn[2] = {"X", "Index"};
    FlValue *gv[2] = {v, i1};
    CallArgs ga = {.kwnames = gn, .kwvals = gv, .nkw = 2, .span = sp};
    FlValue *row = fl_ev_op(c, "gather", &ga, sp);
    if (row->kind == VK_ERROR) return row;
    FlValue *axes = fl_v_list(c, VK_LIST);
    fl_v_list_push(c, axes, fl_v_int(c, 0));
    return driver_op1(c, "squeeze", row, "axes", axes, sp);
}

FlValue *fl_ev_driver_index(Ctx *c, FlValue *v, FlValue *idx, FlSpan sp) {
    if (idx->kind == VK_VAR) return index_by_var(c, v, idx, sp);
    if (idx->kind == VK_LIST) return fl_ev_driver_take(c, v, idx, sp); /* v[[0, 2]]: driver_values.c */
    if (idx->kind != VK_INT && idx->kind != VK_BOOL)
        return fl_ev_error(c, sp, "a fetched value is indexed by an int (v[0], v[-1]), a slice (v[a:b]) or a list "
                                  "of ints (v[[0, 2]]) here, found %s", fl_v_type_name(idx));
    return driver_op1(c, "index", v, "i", fl_v_int(c, idx->kind == VK_INT ? idx->i : idx->b), sp);
}

FlValue *fl_ev_driver_item(Ctx *c, FlValue *v, FlDType dt, FlSpan sp) {
    return driver_op1(c, "item", v, "dtype", fl_v_int(c, dt), sp);
}

/* ------------------------------------------------------------------ constants */

/* The shape and values of a nested list of numbers (or one number); false (reported) when it is
 * ragged or holds something else. */
bool fl_ev_driver_flatten(Ctx *c, FlValue *v, int depth, int64_t *shape, int *ndim, FlValue *out, FlSpan sp) {
    if (fl_v_is_num(v)) {
        if (depth == 0) *ndim = 0;
        else if (depth != *ndim) goto ragged;
        fl_v_list_push(c, out, v);
        return true;
    }
    if (!fl_v_is_seq(v)) {
        fl_ev_error(c, sp, "a feed value holds %s: it takes numbers, nested lists of them, numpy.array(...) of "
                    "them, or a fetched value", fl_v_type_name(v));
        return false;
    }
    if (depth >= FL_IR_MAX_DIMS) goto ragged;
    if (*ndim < 0 || depth >= *ndim) { /* the first path down sets the shape */
        if (*ndim >= 0 && depth >= *ndim) goto ragged;
        shape[depth] = (int64_t)v->list.len;
        if (v->list.len == 0 || !fl_v_is_seq(v->list.items[0])) *ndim = depth + 1;
    } else if (shape[depth] != (int64_t)v->list.len) {
        goto ragged;
    }
    for (size_t i = 0; i < v->list.len; i++)
        if (!fl_ev_driver_flatten(c, v->list.items[i], depth + 1, shape, ndim, out, sp)) return false;
    return true;
ragged:
    fl_ev_error(c, sp, "a feed value is not rectangular (numpy would make an array of objects of it)");
    return false;
}

/* A constant of the driver (an assign_value in the current block, which the caller made the
 * driver's) holding compile-time value v for the feed var `to` (its dtype; a value without a batch
 * dimension gets one of 1 row). */
static FlValue *feed_const(Ctx *c, FlValue *v, const FlVarDesc *to, FlDType want, FlSpan sp) {
    int64_t shape[FL_IR_MAX_DIMS];
    int ndim = -1;
    FlValue *vals = fl_v_list(c, VK_LIST);
    if (!fl_ev_driver_flatten(c, v, 0, shape, &ndim, vals, sp)) return c->error;
    if (ndim == 0) { /* a number: one element in the var's rank */
        ndim = to->ndim > 0 ? to->ndim : 1;
        for (int i = 0; i < ndim; i++) shape[i] = 1;
    } else if (ndim == to->ndim - 1 && to->ndim > 0 && to->shape[0] < 0) {
        memmove(shape + 1, shape, (size_t)ndim * sizeof *shape);
        shape[0] = 1;
        ndim++;
    }
    double *fv = fl_xcalloc(vals->list.len + 1, sizeof *fv);
    for (size_t i = 0; i < vals->list.len; i++) fv[i] = fl_v_num(vals->list.items[i]);
    const char *name = fl_arena_printf(&c->arena, "%s.tmp_0", fl_ev_unique(c, "assign_value"));
    FlVarDesc *d = fl_ev_new_var(c, c->b.block, name, sp);
    if (!d) {
        free(fv);
        return fl_ev_error(c, sp, "a constant of the driver for feed '%s' cannot be named '%s': a var has that name", to->name, name);
    }
    d->stop_gradient = true;
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "assign_value", sp);
    fl_ir_op_add_output(op, "Out", name);
    fl_ir_op_set_ints(op, "shape", shape, (size_t)ndim);
    fl_ir_op_set_int(op, "dtype", want);
    fl_ir_op_set_floats(op, "values", fv, vals->list.len);
    fl_ev_set_int_twin(c, op, "values", vals);
    free(fv);
    if (!fl_ev_infer(c, c->b.block, op, sp)) return c->error;
    return fl_v_var(c, name);
}

/* ------------------------------------------------------------------ exe.run */

FlVarDesc *fl_ev_driver_value_var(Ctx *c, FlBlock *b, const char *prefix, const FlVarDesc *like, FlSpan sp) {
    const char *name = fl_arena_printf(&c->arena, "%s.tmp_0", fl_ev_unique(c, prefix));
    FlVarDesc *d = fl_ev_new_var(c, b, name, sp);
    FlLoc loc = d->loc;
    fl_ir_var_copy(d, like);
    d->loc = loc;
    d->persistable = d->trainable = d->fed = false;
    d->stop_gradient = true;
    fl_ir_var_set_lod(d, 0, NULL); /* offsets are not fetched yet */
    return d;
}

/* The name a run_program gives program p: "main", "startup", or the name of a named program of the
 * bundle (Bundle.programs), which adopts a Program() or a clone the first time the driver runs it:
 * program_1, program_2, ... in that order. The program stays the same object, so ops the script
 * appends to it later are in the bundle too. */
const char *fl_ev_program_name(Ctx *c, const FlProgram *p) {
    if (p == c->bundle->main) return "main";
    if (p == c->bundle->startup) return "startup";
    for (size_t i = 0; i < c->bundle->programs.len; i++)
        if (c->bundle->programs.data[i].program == p) return c->bundle->programs.data[i].name;
    for (size_t i = 0; i < c->programs.len; i++)
        if (c->programs.data[i] == p) {
            char name[32];
            snprintf(name, sizeof name, "program_%zu", c->bundle->programs.len + 1);
            fl_ir_bundle_add_program(c->bundle, name, c->programs.data[i]);
            c->programs.data[i] = NULL; /* adopted by the bundle */
            return c->bundle->programs.data[c->bundle->programs.len - 1].name;
        }
    return NULL;
}

static const char *program_name(Ctx *c, FlValue *p, FlSpan sp) {
    if (!p || p->kind == VK_NONE) return "main";
    FlValue *inner = p->kind == VK_RECORD ? rec_get(p, "_program") : NULL; /* a CompiledProgram */
    if (inner) p = inner;
    if (p->kind != VK_PROGRAM) {
        fl_ev_error(c, sp, "exe.run(program=...) takes a Program, found %s", fl_v_type_name(p));
        return NULL;
    }
    if (p->prog == c->bundle->driver) {
        fl_ev_error(c, sp, "exe.run(program=...): the program is the driver itself (what runs the others)");
        return NULL;
    }
    const char *name = fl_ev_program_name(c, p->prog);
    if (!name) fl_ev_error(c, sp, "exe.run(program=...): the program is not one this script made");
    return name;
}

/* The name of a feed key or a fetch (a Var or a var name), NULL (reported) for anything else. */
static const char *var_name_of(Ctx *c, FlValue *v, const char *what, FlSpan sp) {
    if (v->kind == VK_VAR) return v->var.name;
    if (v->kind == VK_STR) return v->str.s;
    fl_ev_error(c, sp, "%s must be a Variable or a var name, found %s", what, fl_v_type_name(v));
    return NULL;
}

static bool want_bool(Ctx *c, FlValue *v, const char *what, FlSpan sp) {
    if (!v || v->kind == VK_BOOL) return true;
    fl_ev_error(c, sp, "%s must be True or False, found %s", what, fl_v_type_name(v));
    return false;
}

/* run(program, feed, fetch_list, feed_var_name, fetch_var_name, scope, return_numpy,
 * use_program_cache) */
static FlValue *d_run(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("run", "program= feed= fetch_list= feed_var_name= fetch_var_name= scope= return_numpy= use_program_cache=", 8);
    FlSpan sp = a->span;
    const char *pname = program_name(c, v[0], sp);
    if (!pname) return c->error;
    const FlProgram *prog = fl_ir_bundle_program(c->bundle, pname);
    const FlBlock *g = fl_ir_block(prog, 0);
    for (int k = 3; k <= 4; k++)
        if (v[k] && v[k]->kind != VK_STR)
            return fl_ev_error(c, sp, "%s must be a string, found %s", k == 3 ? "feed_var_name" : "fetch_var_name",
                               fl_v_type_name(v[k]));
    if (!want_bool(c, v[6], "return_numpy", sp) || !want_bool(c, v[7], "use_program_cache", sp)) return c->error;
    FlValue *scope_var = NULL;
    if (v[5] && v[5]->kind != VK_NONE) {
        if (!is_rec(v[5], SCOPE_TYPE))
            return fl_ev_error(c, sp, "scope must be a Scope (fluid.global_scope(), scope.new_scope()), found %s",
                               fl_v_type_name(v[5]));
        scope_var = rec_get(v[5], "_var");
        if (scope_var && scope_var->kind == VK_NONE) scope_var = NULL;
    }
    FlValue *feed = v[1] && v[1]->kind != VK_NONE ? v[1] : NULL;
    if (feed && feed->kind == VK_LIST && feed->list.len == 1 && feed->list.items[0]->kind == VK_DICT)
        feed = feed->list.items[0]; /* one place's feed (the batch of an iterable PyReader) */
    if (feed && feed->kind != VK_DICT)
        return fl_ev_error(c, sp, "feed must be a dict of var names to values, found %s", fl_v_type_name(feed));
    for (size_t i = 0; feed && i < feed->dict.len; i++) {
        FlValue *x = feed->dict.vals[i];
        if (x->kind != VK_LIST || !(fl_ev_is_tensor_array(x) || (fl_ev_is_rt_list(x) && x->list.rt_kind == RT_FETCHED)))
            continue;
        const char *name = var_name_of(c, feed->dict.keys[i], "a feed key", sp);
        if (!name) return c->error;
        return fl_ev_error(c, sp, "feed '%s': a %s is not a value exe.run feeds (Fluid 1.5 feeds each var a LoDTensor "
                           "or a numpy array); feed its elements to data vars (a[i]) and fill an array in the "
                           "program (fluid.layers.array_write)", name,
                           fl_ev_is_tensor_array(x) ? "LoDTensorArray" : "fetched tensor array's list");
    }
    if (feed && (feed = fl_ev_lod_feeds(c, feed, g, sp))->kind == VK_ERROR) return feed; /* LoDTensors */
    bool numpy_false = v[6] && v[6]->kind == VK_BOOL && !v[6]->b; /* return_numpy=False: LoDTensors */
    FlValue *fetch = v[2] && v[2]->kind != VK_NONE ? v[2] : NULL;
    if (fetch && fetch->kind == VK_SET) fetch = fl_ev_as_list(c, fetch, sp); /* fetch_list={g_img} */
    if (fetch && fetch->kind == VK_VAR) return fl_ev_error(c, sp, "fetch_list must be a list of Variables or var names, found a Variable: write [%s]", fetch->var.name);
    if (fetch && !fl_v_is_seq(fetch))
        return fl_ev_error(c, sp, "fetch_list must be a list of Variables or var names, found %s", fl_v_type_name(fetch));
    /* check the names against the program before anything is appended */
    size_t nfeed = feed ? feed->dict.len : 0, nfetch = fetch ? fetch->list.len : 0;
    const char **fnames = fl_arena_alloc(&c->arena, (nfeed + 1) * sizeof *fnames);
    const char **tnames = fl_arena_alloc(&c->arena, (nfetch + 1) * sizeof *tnames);
    for (size_t i = 0; i < nfeed; i++) {
        if (!(fnames[i] = var_name_of(c, feed->dict.keys[i], "a feed key", sp))) return c->error;
        if (!fl_ir_var_find(g, fnames[i]))
            return fl_ev_error(c, sp, "feed '%s' is not a var of the %s program's global block", fnames[i], pname);
    }
    for (size_t i = 0; i < nfetch; i++) {
        if (!(tnames[i] = var_name_of(c, fetch->list.items[i], "a fetch", sp))) return c->error;
        const FlVarDesc *td = fl_ir_var_find(g, tnames[i]);
        if (!td) return fl_ev_error(c, sp, "fetch '%s' is not a var of the %s program's global block", tnames[i], pname);
        if (td->kind == FL_VAR_TENSOR_ARRAY && td->lod_level > 0) /* Fluid's as_numpy raises on LoD elements */
            return fl_ev_error(c, sp, "fetch '%s' is a tensor array of sequences (lod_level %d): a fetched array's "
                               "elements hold no LoD here; fetch each element with its offsets "
                               "(fluid.layers.array_read(array, i))", tnames[i], td->lod_level);
    }
    FlErr serr;
    FlLoc where = FL_LOC_NONE;
    if (fl_infer_check_storage(prog, &serr, &where)) { /* a program rewritten to store int8 weights */
        fl_ev_error(c, sp, "exe.run of the %s program: %s", pname, serr.msg);
        FlSpan at;
        if (fl_ev_loc_span(c, where, &at)) fl_diag_note(&c->diag, at, "the op is made here");
        return c->error;
    }
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    FlValue *result = c->error;
    FlValue **feedv = fl_arena_alloc(&c->arena, (nfeed + 1) * sizeof *feedv);
    for (size_t i = 0; i < nfeed; i++) {
        FlValue *x = feed->dict.vals[i];
        const FlVarDesc *to = fl_ir_var_find(g, fnames[i]);
        if (fl_ev_is_driver_var(c, x)) {
            FlVarDesc *d = fl_ev_var_desc(c, x);
            if (d && d->dtype != to->dtype) {
                fl_ev_error(c, sp, "feed '%s' is %s but the value given is %s", fnames[i], fl_dtype_name(to->dtype),
                            fl_dtype_name(d->dtype));
                goto done;
            }
            feedv[i] = x;
            continue;
        }
        FlDType want = to->dtype;
        if (is_rec(x, NDARRAY_TYPE)) {
            FlValue *dt = rec_get(x, "_dtype");
            if (dt && dt->kind == VK_INT && (FlDType)dt->i != to->dtype) {
                fl_ev_error(c, sp, "feed '%s' is %s but the array given is %s (astype('%s') it)", fnames[i],
                            fl_dtype_name(to->dtype), fl_dtype_name((FlDType)dt->i), fl_dtype_name(to->dtype));
                goto done;
            }
            x = rec_get(x, "_value");
        } else if (x->kind == VK_VAR) {
            fl_ev_error(c, sp, "feed '%s': '%s' is a var of a program, not a value the driver has: fetch it "
                        "(fetch_list=[...]) and feed the fetched value", fnames[i], x->var.name);
            goto done;
        }
        if ((feedv[i] = feed_const(c, x, to, want, sp))->kind == VK_ERROR) goto done;
    }
    FlBlock *outer = c->b.block; /* with a py_reader's guard, the run goes in a block of its own */
    const char *guard = NULL;
    if (!fl_ev_pyreader_feeds(c, prog, feed, &fnames, &feedv, &nfeed, &guard, sp)) {
        c->b.block = outer;
        goto done;
    }
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "run_program", sp);
    fl_ir_op_set_string(op, "program", pname);
    for (size_t i = 0; i < nfeed; i++) fl_ir_op_add_input(op, "Feed", feedv[i]->var.name);
    if (scope_var) fl_ir_op_add_input(op, "Scope", scope_var->var.name);
    result = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < nfetch; i++) {
        /* a run a py_reader feeds keeps its fetches in the driver's global block: after the
         * EOFException they hold the last batch's, as the script's names do in Python */
        FlVarDesc *d = fl_ev_driver_value_var(c, guard ? fl_ir_block(c->b.main, 0) : outer, "fetch",
                                              fl_ir_var_find(g, tnames[i]), sp);
        const char *name = d->name;
        if (guard && !fl_ev_pyreader_fetch_init(c, d, sp)) result = c->error;
        fl_ir_op_add_output(op, "Fetch", name);
        fl_v_list_push(c, result, fl_v_var(c, name));
        if (d->kind == FL_VAR_TENSOR_ARRAY && guard) {
            fl_ev_error(c, sp, "fetch '%s' is a tensor array, of a run a py_reader feeds: fetch its elements "
                        "(fluid.layers.array_read(array, i))", tnames[i]);
            result = c->error;
        }
        if (numpy_false && d->kind != FL_VAR_TENSOR_ARRAY) fl_map_put_str(&c->tensor_fetches, name, (void *)name);
    }
    if (nfeed) fl_ir_op_set_strings(op, "feed_names", fnames, nfeed);
    if (nfetch) fl_ir_op_set_strings(op, "fetch_names", tnames, nfetch);
    if (!fl_ev_infer(c, c->b.block, op, sp)) result = c->error;
    if (guard && !fl_ev_pyreader_guard_end(c, outer, guard, sp)) result = c->error;
    for (size_t i = 0; i < nfetch && result->kind != VK_ERROR; i++) { /* a tensor array's: a list of them */
        FlValue *x = result->list.items[i];
        if (fl_ev_var_desc(c, x)->kind != FL_VAR_TENSOR_ARRAY) continue;
        result->list.items[i] = fl_ev_driver_fetched_array(c, x, !numpy_false, sp);
        if (result->list.items[i]->kind == VK_ERROR) result = c->error;
    }
done:
    fl_ev_driver_leave(c, &s);
    return result;
}

/* ------------------------------------------------------------------ scopes */

static FlValue *scope_record(Ctx *c, FlValue *var);

static FlValue *s_new_scope(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("new_scope", "", 0);
    (void)v;
    FlValue *parent = rec_get(self, "_var");
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    const char *name = fl_arena_printf(&c->arena, "%s.tmp_0", fl_ev_unique(c, "scope"));
    fl_ev_new_var(c, c->b.block, name, a->span);
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "scope_new", a->span);
    if (parent && parent->kind == VK_VAR) fl_ir_op_add_input(op, "Parent", parent->var.name);
    fl_ir_op_add_output(op, "Out", name);
    bool ok = fl_ev_infer(c, c->b.block, op, a->span);
    FlValue *var = fl_v_var(c, name);
    fl_ev_driver_leave(c, &s);
    return ok ? scope_record(c, var) : c->error;
}

/* find_var(name): a Variable record whose get_tensor() reads the var from the scope when the
 * driver runs (driver_values.c); None when neither the main nor the startup program has it. */
static FlValue *s_find_var(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("find_var", "name", 1);
    if (v[0]->kind != VK_STR) return fl_ev_error(c, a->span, "find_var(name) takes a str, found %s", fl_v_type_name(v[0]));
    return fl_ev_scope_find_var(c, rec_get(self, "_var"), v[0]->str.s, a->span);
}

/* A Scope record: var is the driver var holding it (None: the root scope). */
static FlValue *scope_record(Ctx *c, FlValue *var) {
    FlValue *r = fl_v_record(c, SCOPE_TYPE);
    fl_v_rec_set(c, r, "_var", var);
    fl_v_rec_set(c, r, "new_scope", fl_v_builtin(c, "new_scope", s_new_scope, r));
    fl_v_rec_set(c, r, "find_var", fl_v_builtin(c, "find_var", s_find_var, r));
    return r;
}

static FlValue *d_global_scope(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("global_scope", "", 0);
    (void)v;
    return scope_record(c, c->none);
}

/* ------------------------------------------------------------------ time, numpy, places */

static FlValue *d_time_now(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("time_now", "", 0);
    (void)v;
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    CallArgs none = {.span = a->span};
    FlValue *r = fl_ev_op(c, "time_now", &none, a->span);
    fl_ev_driver_leave(c, &s);
    return r;
}

static FlValue *ndarray_new(Ctx *c, FlValue *value, FlValue *dtype, FlSpan sp);

/* The shape of a nested list of numbers into shape (from depth on); false when it is ragged or
 * holds something else (the feed reports it). */
static bool nd_shape(Ctx *c, FlValue *v, size_t depth, FlValue *shape) {
    if (fl_v_is_num(v)) return depth == shape->list.len;
    if (!fl_v_is_seq(v) || depth >= FL_IR_MAX_DIMS) return false;
    if (depth == shape->list.len) fl_v_list_push(c, shape, fl_v_int(c, (int64_t)v->list.len));
    else if (shape->list.items[depth]->i != (int64_t)v->list.len) return false;
    for (size_t i = 0; i < v->list.len; i++)
        if (!nd_shape(c, v->list.items[i], depth + 1, shape)) return false;
    return v->list.len > 0 || depth + 1 == shape->list.len;
}

/* a.astype(dtype) of numbers kept for a feed: the same numbers in that dtype. */
static FlValue *nd_astype(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("astype", "dtype", 1);
    return ndarray_new(c, rec_get(self, "_value"), v[0], a->span);
}

/* The numbers of a rectangular nested list, in order, into flat. */
static void nd_flatten(Ctx *c, FlValue *v, FlValue *flat) {
    if (!fl_v_is_seq(v)) {
        fl_v_list_push(c, flat, v);
        return;
    }
    for (size_t i = 0; i < v->list.len; i++) nd_flatten(c, v->list.items[i], flat);
}

/* The nested list of dims[d..nd) taking the numbers of flat from *at on. */
static FlValue *nd_nest(Ctx *c, FlValue *flat, const int64_t *dims, size_t d, size_t nd, size_t *at) {
    if (d == nd) return flat->list.items[(*at)++];
    FlValue *l = fl_v_list(c, VK_LIST);
    for (int64_t i = 0; i < dims[d]; i++) fl_v_list_push(c, l, nd_nest(c, flat, dims, d + 1, nd, at));
    return l;
}

/* a.reshape(d0, d1, ...) or a.reshape((d0, d1, ...)) of numbers kept for a feed: numpy's (the
 * same numbers in order; one dim may be -1, the rest's quotient). */
static FlValue *nd_reshape(Ctx *c, FlValue *self, CallArgs *a) {
    FlSpan sp = a->span;
    FlValue *shape = rec_get(self, "shape");
    if (!shape) return fl_ev_error(c, sp, "reshape() of a ragged array (its rows differ in length)");
    if (a->nkw) return fl_ev_error(c, sp, "reshape() takes the dims (order= is not compiled)");
    FlValue *const *dv = a->pos;
    size_t nd = a->npos;
    if (nd == 1 && fl_v_is_seq(dv[0])) {
        nd = dv[0]->list.len;
        dv = dv[0]->list.items;
    }
    if (nd == 0 || nd > FL_IR_MAX_DIMS)
        return fl_ev_error(c, sp, "reshape() takes 1 to %d dims, found %zu", FL_IR_MAX_DIMS, nd);
    int64_t dims[FL_IR_MAX_DIMS], known = 1, numel = 1;
    int unknown = -1;
    for (size_t k = 0; k < shape->list.len; k++) numel *= shape->list.items[k]->i;
    for (size_t k = 0; k < nd; k++) {
        if (dv[k]->kind != VK_INT || dv[k]->i < -1 || (dv[k]->i == -1 && unknown >= 0))
            return fl_ev_error(c, sp, "reshape(): each dim is an int >= 0, one of them may be -1, found %s",
                               dv[k]->kind == VK_INT ? "another -1 or a negative int" : fl_v_type_name(dv[k]));
        if (dv[k]->i == -1) unknown = (int)k;
        else known *= dv[k]->i;
        dims[k] = dv[k]->i;
    }
    if (unknown >= 0 && known > 0 && numel % known == 0) dims[unknown] = numel / known;
    int64_t got = 1;
    for (size_t k = 0; k < nd; k++) got *= dims[k];
    if (got != numel || (unknown >= 0 && known == 0))
        return fl_ev_error(c, sp, "cannot reshape an array of %lld numbers into %zu dims of %lld", (long long)numel,
                           nd, (long long)known);
    FlValue *flat = fl_v_list(c, VK_LIST);
    nd_flatten(c, rec_get(self, "_value"), flat);
    size_t at = 0;
    FlValue *dt = rec_get(self, "_dtype");
    FlValue *r = ndarray_new(c, nd_nest(c, flat, dims, 0, nd, &at), NULL, sp);
    if (r->kind != VK_ERROR && dt) fl_v_rec_set(c, r, "_dtype", dt);
    return r;
}

static FlValue *ndarray_new(Ctx *c, FlValue *value, FlValue *dtype, FlSpan sp) {
    FlValue *r = fl_v_record(c, NDARRAY_TYPE);
    fl_v_rec_set(c, r, "_value", value);
    if (dtype && dtype->kind != VK_NONE) {
        FlDType dt;
        if (!fl_ev_driver_dtype(c, dtype, &dt, sp)) return c->error; /* driver_values.c */
        fl_v_rec_set(c, r, "_dtype", fl_v_int(c, dt));
    }
    fl_v_rec_set(c, r, "astype", fl_v_builtin(c, "astype", nd_astype, r));
    fl_v_rec_set(c, r, "reshape", fl_v_builtin(c, "reshape", nd_reshape, r));
    FlValue *shape = fl_v_list(c, VK_TUPLE);
    if (nd_shape(c, value, 0, shape)) fl_v_rec_set(c, r, "shape", shape); /* numpy's, when rectangular */
    return r;
}

FlValue *fl_ev_ndarray_of(Ctx *c, FlValue *value, int dtype, FlSpan sp) {
    FlValue *r = ndarray_new(c, value, NULL, sp);
    if (r->kind != VK_ERROR && dtype >= 0) fl_v_rec_set(c, r, "_dtype", fl_v_int(c, dtype));
    return r;
}

FlValue *fl_ev_ndarray_numbers(FlValue *v, int *dtype) {
    if (!is_rec(v, NDARRAY_TYPE)) return NULL;
    FlValue *dt = rec_get(v, "_dtype");
    *dtype = dt && dt->kind == VK_INT ? (int)dt->i : -1;
    return rec_get(v, "_value");
}

/* array(obj, dtype=None): obj's numbers kept for a feed; dtype a numpy dtype name. */
static FlValue *d_array(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("array", "object dtype=", 2);
    if (fl_ev_is_runtime(c, v[0]))
        return fl_ev_error(c, a->span, "numpy.array() of a string known only at run time");
    if (is_rec(v[0], NDARRAY_TYPE) && !v[1]) return v[0];
    return ndarray_new(c, is_rec(v[0], NDARRAY_TYPE) ? rec_get(v[0], "_value") : v[0], v[1], a->span);
}

static FlValue *d_cuda_note(Ctx *c, FlValue *self, CallArgs *a) {
    if (!c->cuda_noted) {
        c->cuda_noted = true;
        fl_diag_warning(&c->diag, fl_ev_user_span(c, a->span),
                        "fluid.CUDAPlace means the CPU here: fluidc has no GPU kernels, and the program runs the "
                        "same ops on the CPU");
    }
    return c->none;
}

/* ------------------------------------------------------------------ threads */

static FlValue *d_thread_start(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("thread_start", "target args kwargs", 3);
    FlSpan sp = a->span;
    if (v[0]->kind != VK_FUNC && v[0]->kind != VK_BUILTIN)
        return fl_ev_error(c, sp, "Thread(target=...) must be a function, found %s", fl_v_type_name(v[0]));
    if (!fl_v_is_seq(v[1])) return fl_ev_error(c, sp, "Thread(args=...) must be a tuple, found %s", fl_v_type_name(v[1]));
    if (v[2]->kind != VK_DICT) return fl_ev_error(c, sp, "Thread(kwargs=...) must be a dict, found %s", fl_v_type_name(v[2]));
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    FlValue *r = fl_ev_lower_thread(c, v[0], v[1], v[2], sp);
    fl_ev_driver_leave(c, &s);
    return r;
}

static FlValue *d_thread_join(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("thread_join", "done", 1);
    if (!fl_ev_is_driver_var(c, v[0])) return fl_ev_error(c, a->span, "join(): the thread was not started");
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    const char *name = fl_arena_printf(&c->arena, "%s.tmp_0", fl_ev_unique(c, "join"));
    FlVarDesc *d = fl_ev_new_var(c, c->b.block, name, a->span);
    d->dtype = FL_DT_BOOL;
    int64_t one = 1;
    fl_ir_var_set_shape(d, 1, &one);
    d->stop_gradient = true;
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "channel_recv", a->span);
    fl_ir_op_add_input(op, "Channel", v[0]->var.name);
    fl_ir_op_add_output(op, "Out", name);
    bool ok = fl_ev_infer(c, c->b.block, op, a->span);
    fl_ev_driver_leave(c, &s);
    return ok ? c->none : c->error;
}

static const NativeFn driver_fns[] = {
    {"run", d_run},
    {"global_scope", d_global_scope},
    {"time_now", d_time_now},
    {"array", d_array},
    {"cuda_note", d_cuda_note},
    {"thread_start", d_thread_start},
    {"thread_join", d_thread_join},
    {"write_dot", fl_ev_driver_write_dot}, /* driver_file.c */
};

void fl_ev_driver_install(Ctx *c) {
    fl_ev_module_of_fns(c, "_driver", driver_fns, FL_ARRAY_LEN(driver_fns));
    fl_ev_values_install(c); /* driver_values.c */
}
