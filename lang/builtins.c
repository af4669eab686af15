/* builtins.c: the Python builtins of the compile-time interpreter (len, range, zip, enumerate,
 * print, str, int, float, bool, list, tuple, dict, min, max, abs, sum, reversed, getattr; the
 * rest are in pylib.c), the methods of lists, dicts and strings, and the attributes and methods
 * of Vars (shape, dtype, name; a channel's send, recv and close).
 *
 * How: each builtin is a BuiltinFn that binds its arguments against a parameter spec (ARGS,
 * fl_ev_bind) and returns a value or ERROR after a diagnostic; methods are builtins bound to
 * their object (FlValue.builtin.self). Invariants: builtins run at compile time and never
 * touch the IR except through the op builder (a channel method appends a channel op).
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/eval_impl.h"

bool fl_ev_want_int(Ctx *c, FlValue *v, const char *what, FlSpan sp, int64_t *out) {
    if (v->kind == VK_INT) {
        *out = v->i;
        return true;
    }
    if (v->kind == VK_BOOL) {
        *out = v->b;
        return true;
    }
    if (v->kind == VK_FLOAT) { /* range(n / 2): Python 2's '/' */
        FlBuf b = {0};
        fl_v_repr(c, v, &b);
        fl_ev_error(c, sp, "%s must be an int, found the float %s", what, fl_buf_str(&b));
        fl_buf_free(&b);
        fl_diag_note(&c->diag, fl_ev_user_span(c, sp), "'/' always gives a float; '//' divides ints to an int");
        return false;
    }
    fl_ev_error(c, sp, "%s must be an int, found %s", what, fl_v_type_name(v));
    return false;
}
bool fl_ev_check_len(Ctx *c, size_t have, size_t add, const char *what, FlSpan sp) {
    if (have <= FL_MAX_LEN && add <= FL_MAX_LEN - have) return true;
    fl_ev_error(c, sp, "a %s may hold at most %d %s; this one would hold %zu", what, FL_MAX_LEN,
                strcmp(what, "str") == 0 ? "characters" : "elements", have + add);
    return false;
}
bool fl_ev_want_str(Ctx *c, FlValue *v, const char *what, FlSpan sp) {
    if (v->kind == VK_STR) return true;
    fl_ev_error(c, sp, "%s must be a string, found %s", what, fl_v_type_name(v));
    return false;
}

/* ------------------------------------------------------------------ Python builtins */

static FlValue *b_len(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("len", "obj", 1);
    FlValue *o = v[0];
    switch (o->kind) {
    case VK_STR: return fl_v_int(c, (int64_t)o->str.n);
    case VK_LIST:
        if (fl_ev_is_rt_list(o) || fl_ev_is_tensor_array(o)) return fl_ev_driver_list_len(c, o, a->span);
        return fl_v_int(c, (int64_t)o->list.len);
    case VK_SET:
    case VK_TUPLE: return fl_v_int(c, (int64_t)o->list.len);
    case VK_DICT: return fl_v_int(c, (int64_t)o->dict.len);
    case VK_RECORD: {
        int dt;
        FlValue *nums = fl_ev_ndarray_numbers(o, &dt); /* numpy's len: the first dim */
        if (nums && fl_v_is_seq(nums)) return fl_v_int(c, (int64_t)nums->list.len);
        if (nums) return fl_ev_error(c, a->span, "len() of unsized object (a numpy array of rank 0)");
        FlValue *l = fl_map_find_str(&o->rec.attrs->map, "__len__");
        /* a batch's rows (int64 [1]) as Python's len gives them: a number */
        if (l && fl_ev_is_driver_var(c, l)) return fl_ev_driver_item(c, l, FL_DT_INT64, a->span);
        if (l) return l;
        break;
    }
    case VK_VAR: {
        if (fl_ev_is_channel(c, o)) return fl_ev_chan_len(c, o, false, a->span); /* its shape is its elements' */
        if (fl_ev_is_driver_var(c, o)) return fl_ev_driver_len(c, o, a->span);
        FlVarDesc *d = fl_ev_var_desc(c, o);
        if (d && d->ndim > 0 && d->shape[0] >= 0) return fl_v_int(c, d->shape[0]);
        return fl_ev_error(c, a->span, "len() of a Var whose first dimension is only known at run time");
    }
    case VK_NONE: case VK_BOOL: case VK_INT: case VK_FLOAT: case VK_FUNC: case VK_BUILTIN:
    case VK_MODULE: case VK_GUARD: case VK_PROGRAM: case VK_READER: case VK_ERROR: case VK_CLASS: case VK_COUNT: break;
    }
    return fl_ev_error(c, a->span, "object of type '%s' has no len()", fl_v_type_name(o));
}

/* range() makes every element at once: a million ints is already 40 MB of arena. */
#define RANGE_MAX 1000000

static FlValue *b_range(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("range", "a b= step=", 3);
    int64_t lo = 0, hi, st = 1;
    if (!fl_ev_want_int(c, v[0], "range() argument", a->span, v[1] ? &lo : &hi)) return c->error;
    if (v[1] && !fl_ev_want_int(c, v[1], "range() argument", a->span, &hi)) return c->error;
    if (v[2] && !fl_ev_want_int(c, v[2], "range() step", a->span, &st)) return c->error;
    if (st == 0) return fl_ev_error(c, a->span, "range() step must not be zero");
    FlValue *l = fl_v_list(c, VK_LIST);
    /* the length in uint64, where hi - lo and the step's magnitude cannot overflow */
    uint64_t n = 0;
    if (st > 0 && hi > lo) n = ((uint64_t)hi - (uint64_t)lo - 1) / (uint64_t)st + 1;
    if (st < 0 && lo > hi) n = ((uint64_t)lo - (uint64_t)hi - 1) / (0 - (uint64_t)st) + 1;
    if (n > RANGE_MAX)
        return fl_ev_error(c, a->span, "range() of %llu elements is too large for compile time (at most 1,000,000)",
                           (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++) fl_v_list_push(c, l, fl_v_int(c, lo + (int64_t)i * st));
    return l;
}

FlValue *fl_ev_as_list(Ctx *c, FlValue *o, FlSpan sp) {
    if (fl_ev_is_rt_list(o))
        return fl_ev_error(c, sp, "a list filled at run time has no elements when the script compiles: use len(l), "
                                  "l[i], a for loop over it, sum(l), numpy.array(l) or numpy.mean(l)");
    if (fl_v_is_seq(o)) return o;
    FlValue *l = fl_v_list(c, VK_LIST);
    if (o->kind == VK_SET) { /* its elements, in insertion order */
        for (size_t i = 0; i < o->list.len; i++) fl_v_list_push(c, l, o->list.items[i]);
        return l;
    }
    if (o->kind == VK_DICT) {
        for (size_t i = 0; i < o->dict.len; i++) fl_v_list_push(c, l, o->dict.keys[i]);
        return l;
    }
    if (o->kind == VK_STR) {
        for (size_t i = 0; i < o->str.n; i++) fl_v_list_push(c, l, fl_v_str(c, o->str.s + i, 1));
        return l;
    }
    FlValue *samples = fl_ev_batch_samples(c, o, sp); /* a reader's batch: its samples */
    if (samples) return samples;
    return fl_ev_error(c, sp, "'%s' object is not iterable", fl_v_type_name(o));
}

static FlValue *b_zip(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("zip", "*seqs", 1);
    FlValue *seqs = v[0];
    size_t n = SIZE_MAX;
    FlValue **ls = fl_arena_alloc(&c->arena, (seqs->list.len + 1) * sizeof *ls);
    for (size_t i = 0; i < seqs->list.len; i++) {
        ls[i] = fl_ev_as_list(c, seqs->list.items[i], a->span);
        if (ls[i]->kind == VK_ERROR) return c->error;
        if (ls[i]->list.len < n) n = ls[i]->list.len;
    }
    FlValue *out = fl_v_list(c, VK_LIST);
    if (!seqs->list.len) return out;
    for (size_t k = 0; k < n; k++) {
        FlValue *t = fl_v_list(c, VK_TUPLE);
        for (size_t i = 0; i < seqs->list.len; i++) fl_v_list_push(c, t, ls[i]->list.items[k]);
        fl_v_list_push(c, out, t);
    }
    return out;
}

static FlValue *b_enumerate(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("enumerate", "seq start=", 2);
    if (fl_ev_is_reader_iter(v[0])) return fl_ev_reader_enumerate(c, v[0], v[1], a->span);
    FlValue *l = fl_ev_as_list(c, v[0], a->span);
    if (l->kind == VK_ERROR) return l;
    int64_t st = 0;
    if (v[1] && !fl_ev_want_int(c, v[1], "start", a->span, &st)) return c->error;
    FlValue *out = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < l->list.len; i++) {
        FlValue *t = fl_v_list(c, VK_TUPLE);
        int64_t k;
        if (__builtin_add_overflow(st, (int64_t)i, &k))
            return fl_ev_error(c, a->span, "integer overflow in enumerate() (ints are 64-bit)");
        fl_v_list_push(c, t, fl_v_int(c, k));
        fl_v_list_push(c, t, l->list.items[i]);
        fl_v_list_push(c, out, t);
    }
    return out;
}

/* print(*values, sep=' ', end='\n', flush=False, file=None): at compile time, to standard output
 * (file=sys.stderr: standard error); when a value is known only at run time (a fetched value, a
 * string made of one), the driver prints the line when it runs (docs/driver.md). Once the driver
 * has an op (an exe.run, a loop of them), every line prints when the driver gets there, so the
 * lines of the script come out in its order. */
static FlValue *b_print(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("print", "*values sep= end= flush= file=", 5);
    if ((v[1] && !fl_ev_want_str(c, v[1], "print() sep", a->span)) ||
        (v[2] && !fl_ev_want_str(c, v[2], "print() end", a->span)))
        return c->error;
    FlValue *stream = v[4] && v[4]->kind == VK_RECORD ? fl_map_find_str(&v[4]->rec.attrs->map, "_stream") : NULL;
    if (v[4] && v[4]->kind != VK_NONE && (!stream || stream->kind != VK_STR))
        return fl_ev_error(c, a->span, "print(file=...) takes sys.stdout or sys.stderr, found %s", fl_v_type_name(v[4]));
    bool to_err = stream && strcmp(stream->str.s, "stderr") == 0;
    /* in a runtime if, loop or thread of the driver, or after the driver's first op: when it runs */
    bool rt = fl_ev_in_driver(c) || fl_ev_driver_started(c);
    FlValue *texts = fl_v_list(c, VK_LIST); /* str() of each value (driver_print.c) */
    for (size_t i = 0; i < v[0]->list.len; i++) {
        FlValue *t = fl_ev_str_of(c, v[0]->list.items[i], false, a->span);
        if (t->kind == VK_ERROR) return t;
        rt = rt || t->kind != VK_STR;
        fl_v_list_push(c, texts, t);
    }
    if (rt) return fl_ev_driver_print_stream(c, texts, v[1], v[2], to_err ? "stderr" : "stdout", a->span);
    FlBuf b = {0};
    bool ok = true;
    for (size_t i = 0; i < texts->list.len; i++) {
        if (i) fl_buf_puts(&b, v[1] ? v[1]->str.s : " ");
        fl_buf_append(&b, texts->list.items[i]->str.s, texts->list.items[i]->str.n);
    }
    if (ok) fprintf(to_err ? stderr : stdout, "%s%s", fl_buf_str(&b), v[2] ? v[2]->str.s : "\n");
    if (ok && v[3]) fflush(to_err ? stderr : stdout); /* flush=True; output is flushed at exit anyway */
    fl_buf_free(&b);
    return ok ? c->none : c->error;
}

static FlValue *b_str(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("str", "obj=", 1);
    if (!v[0]) return fl_v_cstr(c, "");
    return fl_ev_str_of(c, v[0], false, a->span);
}

/* repr(obj): Python's (a str quoted, a fetched value as numpy's repr, an object's __repr__). */
static FlValue *b_repr(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("repr", "obj", 1);
    return fl_ev_str_of(c, v[0], true, a->span);
}

static FlValue *b_int(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("int", "x=", 1);
    if (!v[0]) return fl_v_int(c, 0);
    if (fl_ev_is_driver_var(c, v[0])) return fl_ev_driver_item(c, v[0], FL_DT_INT64, a->span);
    if (v[0]->kind == VK_INT) return v[0];
    if (v[0]->kind == VK_BOOL) return fl_v_int(c, v[0]->b);
    if (v[0]->kind == VK_FLOAT) {
        if (!isfinite(v[0]->f) || fabs(v[0]->f) >= 9.2e18) return fl_ev_error(c, a->span, "cannot convert %g to int", v[0]->f);
        return fl_v_int(c, (int64_t)v[0]->f);
    }
    if (v[0]->kind == VK_STR) {
        char *end;
        errno = 0;
        long long x = strtoll(v[0]->str.s, &end, 10);
        if (errno || end == v[0]->str.s || *end) return fl_ev_error(c, a->span, "invalid literal for int(): '%s'", v[0]->str.s);
        return fl_v_int(c, x);
    }
    return fl_ev_error(c, a->span, "int() of a %s", fl_v_type_name(v[0]));
}

static FlValue *b_float(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("float", "x=", 1);
    if (!v[0]) return fl_v_float(c, 0);
    if (fl_ev_is_driver_var(c, v[0])) return fl_ev_driver_item(c, v[0], FL_DT_FLOAT64, a->span);
    if (fl_v_is_num(v[0])) return fl_v_float(c, fl_v_num(v[0]));
    if (v[0]->kind == VK_STR) {
        char *end;
        double x = strtod(v[0]->str.s, &end);
        if (end == v[0]->str.s || *end) return fl_ev_error(c, a->span, "could not convert string to float: '%s'", v[0]->str.s);
        return fl_v_float(c, x);
    }
    return fl_ev_error(c, a->span, "float() of a %s", fl_v_type_name(v[0]));
}

static FlValue *b_bool(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("bool", "x=", 1);
    if (!v[0]) return c->vfalse;
    bool ok;
    bool t = fl_v_truthy(c, v[0], a->span, &ok);
    return ok ? fl_v_bool(c, t) : c->error;
}

static FlValue *b_list(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("list", "x=", 1);
    FlValue *out = fl_v_list(c, VK_LIST);
    if (!v[0]) return out;
    FlValue *l = fl_ev_as_list(c, v[0], a->span);
    if (l->kind == VK_ERROR) return l;
    for (size_t i = 0; i < l->list.len; i++) fl_v_list_push(c, out, l->list.items[i]);
    return out;
}

static FlValue *b_tuple(Ctx *c, FlValue *self, CallArgs *a) {
    FlValue *l = b_list(c, self, a);
    if (l->kind == VK_LIST) l->kind = VK_TUPLE;
    return l;
}

static FlValue *b_dict(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("dict", "x= **kw", 2);
    FlValue *d = fl_v_dict(c);
    if (v[0]) {
        if (v[0]->kind == VK_DICT) {
            for (size_t i = 0; i < v[0]->dict.len; i++) fl_v_dict_set(c, d, v[0]->dict.keys[i], v[0]->dict.vals[i]);
        } else {
            FlValue *l = fl_ev_as_list(c, v[0], a->span);
            if (l->kind == VK_ERROR) return l;
            for (size_t i = 0; i < l->list.len; i++) {
                FlValue *p = l->list.items[i];
                if (!fl_v_is_seq(p) || p->list.len != 2) return fl_ev_error(c, a->span, "dict() needs (key, value) pairs");
                fl_v_dict_set(c, d, p->list.items[0], p->list.items[1]);
            }
        }
    }
    for (size_t i = 0; v[1] && i < v[1]->dict.len; i++) fl_v_dict_set(c, d, v[1]->dict.keys[i], v[1]->dict.vals[i]);
    return d;
}

static FlValue *b_min(Ctx *c, FlValue *self, CallArgs *a) { return fl_ev_min_max(c, a, false); }
static FlValue *b_max(Ctx *c, FlValue *self, CallArgs *a) { return fl_ev_min_max(c, a, true); }

static FlValue *b_abs(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("abs", "x", 1);
    if (v[0]->kind == VK_INT) {
        if (v[0]->i == INT64_MIN) return fl_ev_error(c, a->span, "integer overflow in abs() (ints are 64-bit)");
        return fl_v_int(c, v[0]->i < 0 ? -v[0]->i : v[0]->i);
    }
    if (v[0]->kind == VK_BOOL) return fl_v_int(c, v[0]->b);
    if (v[0]->kind == VK_FLOAT) return fl_v_float(c, fabs(v[0]->f));
    /* a fetched value: numpy's abs, elementwise (a number of the driver is one element) */
    if (fl_ev_is_driver_var(c, v[0])) return fl_ev_driver_unary(c, "abs", v[0], "abs()", a->span);
    if (v[0]->kind == VK_VAR)
        return fl_ev_error(c, a->span, "abs() of a Var of the program being built (Fluid's Variable has no "
                           "__abs__): use fluid.layers.abs(x)");
    return fl_ev_error(c, a->span, "abs() of a %s", fl_v_type_name(v[0]));
}

/* Python's start + x0 + x1 + ... with the language's +, when a Var is among them (Fluid's
 * sum([a, b]) of Vars: 0 + a is a scale op, then elementwise adds). */
static FlValue *sum_vars(Ctx *c, FlValue *l, FlValue *start, FlSpan sp) {
    FlValue *acc = start ? start : fl_v_int(c, 0);
    for (size_t k = 0; k < l->list.len; k++) {
        acc = fl_ev_binop(c, FL_OP_ADD, acc, l->list.items[k], sp);
        if (acc->kind == VK_ERROR) return acc;
    }
    return acc;
}

/* Ints add up exactly in int64 (an overflow is an error); from the first float on, the sum is a
 * float, as in Python. A Var among the values (or as start) makes it Python's sum by +. */
static FlValue *b_sum(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("sum", "seq start=", 2);
    if (fl_ev_is_rt_list(v[0]) && !v[1]) return fl_ev_driver_list_sum(c, v[0], a->span);
    FlValue *l = fl_ev_as_list(c, v[0], a->span);
    if (l->kind == VK_ERROR) return l;
    bool vars = v[1] && fl_ev_is_var(v[1]);
    for (size_t k = 0; k < l->list.len && !vars; k++) vars = fl_ev_is_var(l->list.items[k]);
    if (vars) return sum_vars(c, l, v[1], a->span);
    if (v[1] && !fl_v_is_num(v[1])) return fl_ev_error(c, a->span, "sum() start must be a number, found %s", fl_v_type_name(v[1]));
    bool isf = v[1] && v[1]->kind == VK_FLOAT;
    double f = isf ? v[1]->f : 0;
    int64_t i = v[1] && !isf ? (v[1]->kind == VK_INT ? v[1]->i : v[1]->b) : 0;
    for (size_t k = 0; k < l->list.len; k++) {
        FlValue *x = l->list.items[k];
        if (!fl_v_is_num(x)) return fl_ev_error(c, a->span, "sum() needs numbers, found %s", fl_v_type_name(x));
        if (x->kind == VK_FLOAT && !isf) {
            isf = true;
            f = (double)i;
        }
        if (isf) f += fl_v_num(x);
        else if (__builtin_add_overflow(i, x->kind == VK_INT ? x->i : x->b, &i))
            return fl_ev_error(c, a->span, "integer overflow in sum() (ints are 64-bit)");
    }
    return isf ? fl_v_float(c, f) : fl_v_int(c, i);
}

static FlValue *b_reversed(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("reversed", "seq", 1);
    FlValue *l = fl_ev_as_list(c, v[0], a->span);
    if (l->kind == VK_ERROR) return l;
    FlValue *out = fl_v_list(c, VK_LIST);
    for (size_t i = l->list.len; i-- > 0;) fl_v_list_push(c, out, l->list.items[i]);
    return out;
}

static FlValue *b_getattr(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("getattr", "obj name default=", 3);
    if (!fl_ev_want_str(c, v[1], "getattr() name", a->span)) return c->error;
    bool has_default = a->npos + a->nkw >= 3; /* getattr(x, "n", None): None is the default */
    FlValue *r = fl_ev_find_attr(c, v[0], v[1]->str.s, a->span);
    if (r) return r;
    if (has_default && v[0]->kind != VK_VAR && !fl_ev_has_value_method(v[0], v[1]->str.s))
        return v[2] ? v[2] : c->none;
    if (has_default && v[0]->kind == VK_VAR) {
        FlValue *one[2] = {v[0], v[1]};
        CallArgs ha = {.pos = one, .npos = 2, .span = a->span};
        FlValue *h = fl_env_find(c->builtins, fl_intern_str(&c->in, "hasattr"));
        FlValue *has = fl_ev_call(c, h, &ha);
        if (has->kind == VK_BOOL && !has->b) return v[2] ? v[2] : c->none;
    }
    return fl_ev_getattr(c, v[0], v[1]->str.s, a->span);
}

/* ------------------------------------------------------------------ methods of plain values */

static FlValue *m_append(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("append", "x", 1);
    if (fl_ev_is_rt_list(self) || fl_ev_is_tensor_array(self) ||
        (fl_ev_in_driver(c) && self->list.rt_depth < c->rt_depth)) /* at run time */
        return fl_ev_driver_list_append(c, self, v[0], a->span);
    fl_v_list_push(c, self, v[0]);
    return c->none;
}
static FlValue *m_extend(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("extend", "seq", 1);
    FlValue *l = fl_ev_as_list(c, v[0], a->span);
    if (l->kind == VK_ERROR) return l;
    if (!fl_ev_check_len(c, self->list.len, l->list.len, "list", a->span)) return c->error;
    size_t n = l->list.len; /* l may be self */
    for (size_t i = 0; i < n; i++) fl_v_list_push(c, self, l->list.items[i]);
    return c->none;
}
static FlValue *m_pop(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("pop", "i=", 1);
    if (!self->list.len) return fl_ev_error(c, a->span, "pop from an empty list");
    int64_t i = (int64_t)self->list.len - 1;
    if (v[0] && !fl_ev_want_int(c, v[0], "pop() index", a->span, &i)) return c->error;
    if (i < 0) i += (int64_t)self->list.len;
    if (i < 0 || i >= (int64_t)self->list.len) return fl_ev_error(c, a->span, "pop index out of range");
    FlValue *x = self->list.items[i];
    memmove(self->list.items + i, self->list.items + i + 1, (self->list.len - (size_t)i - 1) * sizeof(FlValue *));
    self->list.len--;
    return x;
}
static FlValue *m_insert(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("insert", "i x", 2);
    int64_t i;
    if (!fl_ev_want_int(c, v[0], "insert() index", a->span, &i)) return c->error;
    int64_t n = (int64_t)self->list.len;
    if (i < 0) i = i + n < 0 ? 0 : i + n;
    if (i > n) i = n;
    fl_v_list_push(c, self, v[1] ? v[1] : c->none);
    memmove(self->list.items + i + 1, self->list.items + i, (size_t)(n - i) * sizeof(FlValue *));
    self->list.items[i] = v[1] ? v[1] : c->none;
    return c->none;
}
/* The index of the first item of l equal to x, -1 if none, -2 after an error. */
static ptrdiff_t find_item(Ctx *c, FlValue *l, FlValue *x, FlSpan sp) {
    for (size_t i = 0; i < l->list.len; i++) {
        bool ok, eq = fl_v_equal(c, l->list.items[i], x, sp, &ok);
        if (!ok) return -2;
        if (eq) return (ptrdiff_t)i;
    }
    return -1;
}
static FlValue *m_index(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("index", "x", 1);
    ptrdiff_t i = find_item(c, self, v[0] ? v[0] : c->none, a->span);
    if (i == -2) return c->error;
    if (i < 0) return fl_ev_error(c, a->span, "index(): the value is not in the %s", fl_v_type_name(self));
    return fl_v_int(c, i);
}
static FlValue *m_count(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("count", "x", 1);
    int64_t n = 0;
    for (size_t i = 0; i < self->list.len; i++) {
        bool ok, eq = fl_v_equal(c, self->list.items[i], v[0] ? v[0] : c->none, a->span, &ok);
        if (!ok) return c->error;
        n += eq;
    }
    return fl_v_int(c, n);
}
static FlValue *m_remove(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("remove", "x", 1);
    ptrdiff_t i = find_item(c, self, v[0] ? v[0] : c->none, a->span);
    if (i == -2) return c->error;
    if (i < 0) return fl_ev_error(c, a->span, "list.remove(x): x not in list");
    memmove(self->list.items + i, self->list.items + i + 1, (self->list.len - (size_t)i - 1) * sizeof(FlValue *));
    self->list.len--;
    return c->none;
}
static FlValue *m_reverse(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("reverse", "", 0);
    (void)v;
    for (size_t i = 0, j = self->list.len; i + 1 < j; i++, j--) {
        FlValue *t = self->list.items[i];
        self->list.items[i] = self->list.items[j - 1];
        self->list.items[j - 1] = t;
    }
    return c->none;
}
/* list.copy() and dict.copy(): shallow. */
static FlValue *m_copy(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("copy", "", 0);
    (void)v;
    if (self->kind == VK_DICT) {
        FlValue *d = fl_v_dict(c);
        for (size_t i = 0; i < self->dict.len; i++) fl_v_dict_set(c, d, self->dict.keys[i], self->dict.vals[i]);
        return d;
    }
    FlValue *l = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < self->list.len; i++) fl_v_list_push(c, l, self->list.items[i]);
    return l;
}
static FlValue *m_update(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("update", "other= **kw", 2);
    if (v[0]) {
        FlValue *b = fl_env_find(c->builtins, fl_intern_str(&c->in, "dict"));
        FlValue *d = fl_ev_call_simple(c, b, a->span, &v[0], 1); /* a dict, or (key, value) pairs */
        if (d->kind == VK_ERROR) return d;
        for (size_t i = 0; i < d->dict.len; i++) fl_v_dict_set(c, self, d->dict.keys[i], d->dict.vals[i]);
    }
    for (size_t i = 0; i < v[1]->dict.len; i++) fl_v_dict_set(c, self, v[1]->dict.keys[i], v[1]->dict.vals[i]);
    return c->none;
}
/* dict.pop(key[, default]) */
static FlValue *m_dict_pop(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("pop", "key default=", 2);
    for (size_t i = 0; i < self->dict.len; i++) {
        bool ok, eq = fl_v_equal(c, self->dict.keys[i], v[0], a->span, &ok);
        if (!ok) return c->error;
        if (!eq) continue;
        FlValue *x = self->dict.vals[i];
        fl_v_dict_remove(self, i);
        return x;
    }
    if (a->npos + a->nkw >= 2) return v[1] ? v[1] : c->none;
    FlBuf b = {0};
    fl_v_repr(c, v[0], &b);
    const char *q = v[0]->kind == VK_STR ? "'" : "";
    fl_ev_error(c, a->span, "pop(): key %s%s%s not in dict", q, fl_buf_str(&b), q);
    fl_buf_free(&b);
    return c->error;
}
static FlValue *m_setdefault(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("setdefault", "key default=", 2);
    FlValue *r = fl_v_dict_get(self, v[0]);
    if (r) return r;
    fl_v_dict_set(c, self, v[0], v[1] ? v[1] : c->none);
    return v[1] ? v[1] : c->none;
}
static FlValue *m_get(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("get", "key default=", 2);
    FlValue *r = fl_v_dict_get(self, v[0]);
    return r ? r : v[1] ? v[1] : c->none;
}
static FlValue *dict_view(Ctx *c, FlValue *self, int which) {
    FlValue *l = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < self->dict.len; i++) {
        if (which == 0) fl_v_list_push(c, l, self->dict.keys[i]);
        else if (which == 1) fl_v_list_push(c, l, self->dict.vals[i]);
        else {
            FlValue *t = fl_v_list(c, VK_TUPLE);
            fl_v_list_push(c, t, self->dict.keys[i]);
            fl_v_list_push(c, t, self->dict.vals[i]);
            fl_v_list_push(c, l, t);
        }
    }
    return l;
}
static FlValue *m_keys(Ctx *c, FlValue *self, CallArgs *a) { return dict_view(c, self, 0); }
static FlValue *m_values(Ctx *c, FlValue *self, CallArgs *a) { return dict_view(c, self, 1); }
static FlValue *m_items(Ctx *c, FlValue *self, CallArgs *a) { return dict_view(c, self, 2); }
static FlValue *m_join(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("join", "seq", 1);
    FlValue *l = fl_ev_as_list(c, v[0], a->span);
    if (l->kind == VK_ERROR) return l;
    FlBuf b = {0};
    for (size_t i = 0; i < l->list.len; i++) {
        if (l->list.items[i]->kind != VK_STR) {
            fl_buf_free(&b);
            return fl_ev_error(c, a->span, "join() needs strings, found %s", fl_v_type_name(l->list.items[i]));
        }
        if (i) fl_buf_append(&b, self->str.s, self->str.n);
        fl_buf_append(&b, l->list.items[i]->str.s, l->list.items[i]->str.n);
    }
    FlValue *r = fl_v_str(c, fl_buf_str(&b), b.len);
    fl_buf_free(&b);
    return r;
}
static FlValue *m_startswith(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("startswith", "prefix", 1);
    if (!fl_ev_want_str(c, v[0], "prefix", a->span)) return c->error;
    return fl_v_bool(c, self->str.n >= v[0]->str.n && memcmp(self->str.s, v[0]->str.s, v[0]->str.n) == 0);
}
static FlValue *m_endswith(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("endswith", "suffix", 1);
    if (!fl_ev_want_str(c, v[0], "suffix", a->span)) return c->error;
    return fl_v_bool(c, self->str.n >= v[0]->str.n &&
                            memcmp(self->str.s + self->str.n - v[0]->str.n, v[0]->str.s, v[0]->str.n) == 0);
}
/* ------------------------------------------------------------------ str.format's specs */

/* A replacement field's spec, Python's [[fill]align][sign][#][0][width][grouping][.precision][type]. */
typedef struct Spec {
    const char *fill; /* one character, UTF-8 */
    size_t fill_n;
    char align, sign, group, type; /* 0: not given */
    bool alt, zero, fill_given;
    int64_t width, prec; /* -1: not given */
} Spec;

#define SPEC_MAX 100000 /* a wider field or a longer precision is a mistake, not a layout */

static size_t utf8_count(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xc0) != 0x80;
    return k;
}

static bool spec_int(const char *s, size_t n, size_t *i, int64_t *out) {
    if (*i >= n || s[*i] < '0' || s[*i] > '9') return false;
    int64_t v = 0;
    for (; *i < n && s[*i] >= '0' && s[*i] <= '9'; (*i)++) v = v > SPEC_MAX ? v : v * 10 + (s[*i] - '0');
    *out = v;
    return true;
}

static bool parse_spec(const char *s, size_t n, Spec *p) {
    *p = (Spec){.fill = " ", .fill_n = 1, .width = -1, .prec = -1};
    size_t i = 0, f = n ? 1 : 0;
    while (f < n && ((unsigned char)s[f] & 0xc0) == 0x80) f++; /* the first character's bytes */
    if (f < n && s[f] && strchr("<>=^", s[f])) {
        p->fill = s;
        p->fill_n = f;
        p->fill_given = true;
        p->align = s[f];
        i = f + 1;
    } else if (n && s[0] && strchr("<>=^", s[0])) {
        p->align = s[i++];
    }
    if (i < n && s[i] && strchr("+- ", s[i])) p->sign = s[i++];
    if (i < n && s[i] == '#') p->alt = true, i++;
    if (i < n && s[i] == '0') p->zero = true, i++;
    spec_int(s, n, &i, &p->width);
    if (i < n && (s[i] == ',' || s[i] == '_')) p->group = s[i++];
    if (i < n && s[i] == '.') {
        i++;
        if (!spec_int(s, n, &i, &p->prec)) return false;
    }
    if (i < n) p->type = s[i++];
    return i == n && p->width <= SPEC_MAX && p->prec <= SPEC_MAX;
}

/* A number's text without its sign: `pre` bytes of base prefix ("0x" of '#x'), `nd` digits before
 * the point (which grouping separates), then the rest (".25", "e+08", "%"). */
typedef struct NumText {
    FlBuf s;
    size_t pre, nd;
    bool neg;
} NumText;

/* g's digits with one after the point at least, in exponent form from exponent prec - 1 on:
 * Python's float format without a type code. */
static void float_plain(FlBuf *t, double m, int prec, bool alt) {
    char buf[512];
    int pg = prec ? prec : 1;
    snprintf(buf, sizeof buf, "%.*e", pg - 1, m);
    const char *ep = strchr(buf, 'e');
    int e = ep ? atoi(ep + 1) : 0;
    if (ep && (e < -4 || e >= pg - 1)) {
        size_t keep = (size_t)(ep - buf);
        if (!alt && memchr(buf, '.', keep)) {
            while (buf[keep - 1] == '0') keep--;
            if (buf[keep - 1] == '.') keep--;
        }
        fl_buf_append(t, buf, keep);
        fl_buf_puts(t, ep);
        return;
    }
    snprintf(buf, sizeof buf, "%.*f", ep ? pg - 1 - e : 0, m);
    size_t len = strlen(buf);
    if (ep && strchr(buf, '.') && !alt) {
        while (buf[len - 1] == '0') len--;
        if (buf[len - 1] == '.') len++; /* one digit after the point stays: "12.0" */
    }
    fl_buf_append(t, buf, len);
    if (ep && !strchr(buf, '.')) fl_buf_puts(t, ".0");
}

/* number x by spec p into *nt; false (reported) for a spec Python refuses for x's type. */
static bool number_text(Ctx *c, const Spec *p, FlValue *x, NumText *nt, FlSpan sp) {
    char type = p->type;
    const char *tn = fl_v_type_name(x);
    if (x->kind != VK_FLOAT && (!type || strchr("bcdoxXn", type))) {
        if (p->prec >= 0) return fl_ev_error(c, sp, "format(): precision not allowed in integer format specifier"), false;
        int64_t v = x->kind == VK_BOOL ? x->b : x->i;
        uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
        nt->neg = v < 0;
        if (type == 'c') {
            if (p->sign || p->alt) return fl_ev_error(c, sp, "format(): sign and '#' not allowed with format code 'c'"), false;
            if (v < 0 || v > 0x10ffff) return fl_ev_error(c, sp, "format(): %%c arg not in range(0x110000)"), false;
            char u[4];
            size_t un = v < 0x80 ? 1 : v < 0x800 ? 2 : v < 0x10000 ? 3 : 4;
            for (size_t k = un - 1; k > 0; k--, m >>= 6) u[k] = (char)(0x80 | (m & 0x3f));
            u[0] = (char)(un == 1 ? m : (un == 2 ? 0xc0 : un == 3 ? 0xe0 : 0xf0) | m);
            fl_buf_append(&nt->s, u, un);
            return true;
        }
        unsigned base = type == 'b' ? 2 : type == 'o' ? 8 : type == 'x' || type == 'X' ? 16 : 10;
        if (p->alt && base != 10) {
            fl_buf_append(&nt->s, type == 'b' ? "0b" : type == 'o' ? "0o" : type == 'x' ? "0x" : "0X", 2);
            nt->pre = 2;
        }
        char d[72];
        size_t k = sizeof d;
        do {
            d[--k] = (type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef")[m % base];
            m /= base;
        } while (m);
        fl_buf_append(&nt->s, d + k, sizeof d - k);
        nt->nd = sizeof d - k;
        return true;
    }
    if (type && !strchr("eEfFgGn%", type))
        return fl_ev_error(c, sp, "format(): unknown format code '%c' for object of type '%s'", type, tn), false;
    double f = fl_v_num(x), m = fabs(f);
    nt->neg = signbit(f) && !isnan(f);
    int prec = p->prec < 0 ? 6 : (int)p->prec;
    if (type == '%') m *= 100;
    if (!type && p->prec < 0) { /* repr's digits */
        if (!fl_v_repr_at(c, fl_v_float(c, m), &nt->s, sp)) return false;
    } else if (!type) {
        float_plain(&nt->s, m, prec, p->alt);
    } else {
        char fmt[8], conv = type == 'n' ? 'g' : type == '%' ? 'f' : type;
        snprintf(fmt, sizeof fmt, "%%%s.*%c", p->alt ? "#" : "", conv);
        int len = snprintf(NULL, 0, fmt, prec, m);
        char *buf = fl_xmalloc((size_t)len + 1);
        snprintf(buf, (size_t)len + 1, fmt, prec, m);
        fl_buf_append(&nt->s, buf, (size_t)len);
        free(buf);
        if (type == '%') fl_buf_putc(&nt->s, '%');
    }
    while (nt->nd < nt->s.len && nt->s.data[nt->nd] >= '0' && nt->s.data[nt->nd] <= '9') nt->nd++;
    return true;
}

/* Appends digits[0, n) to b with `sep` between groups of `every` from the right (none: sep 0). */
static void put_grouped(FlBuf *b, const char *digits, size_t n, char sep, size_t every) {
    for (size_t i = 0; i < n; i++) {
        if (sep && i && (n - i) % every == 0) fl_buf_putc(b, sep);
        fl_buf_putc(b, digits[i]);
    }
}

/* false, after the error reported (err). */
static bool refused(FlValue *err) {
    (void)err;
    return false;
}

/* One replacement field's value x formatted by spec[0, n) as Python's format(x, spec) does: fill,
 * alignment (a str to the left, a number to the right; '=' pads after the sign), sign, '#', '0'
 * (zeros after the sign of a number, as fill of a str), width, ',' or '_' grouping, precision
 * (a str's first characters) and the type codes of str, int and float. */
static bool format_spec(Ctx *c, FlBuf *b, FlValue *x, const char *spec, size_t n, FlSpan sp) {
    if (!n) return fl_v_repr_at(c, x, b, sp);
    Spec p;
    if (!parse_spec(spec, n, &p)) return fl_ev_error(c, sp, "format(): unsupported format spec '%.*s'", (int)n, spec), false;
    bool number = x->kind == VK_INT || x->kind == VK_FLOAT || x->kind == VK_BOOL, ok = true;
    if (p.zero && !p.fill_given) p.fill = "0", p.fill_n = 1; /* '0': the fill, unless one is given */
    FlBuf body = {0};
    size_t at = 0; /* where '=' pads: after the sign and base prefix */
    if (!number) { /* a str, or another value's repr */
        if (p.type && p.type != 's')
            ok = refused(fl_ev_error(c, sp, "format(): unknown format code '%c' for object of type '%s'", p.type, fl_v_type_name(x)));
        else if (p.sign || p.alt || p.group || p.align == '=')
            ok = refused(fl_ev_error(c, sp, "format(): %s not allowed in string format specifier",
                             p.sign ? "sign" : p.alt ? "alternate form (#)" : p.group ? "grouping" : "'=' alignment"));
        else if (x->kind == VK_STR) fl_buf_append(&body, x->str.s, x->str.n);
        else ok = fl_v_repr_at(c, x, &body, sp);
        if (ok && p.prec >= 0) { /* the first prec characters */
            size_t k = 0, seen = 0;
            for (; k < body.len; k++)
                if (((unsigned char)body.data[k] & 0xc0) != 0x80 && seen++ == (size_t)p.prec) break;
            body.len = k;
        }
        if (!p.align) p.align = '<';
    } else if (p.type == 's') {
        ok = refused(fl_ev_error(c, sp, "format(): unknown format code 's' for object of type '%s'", fl_v_type_name(x)));
    } else if (p.group == ',' && p.type && !strchr("deEfFgG%", p.type)) {
        ok = refused(fl_ev_error(c, sp, "format(): cannot specify ',' with '%c'", p.type));
    } else if (p.group == '_' && p.type && !strchr("dbxXoeEfFgG%", p.type)) {
        ok = refused(fl_ev_error(c, sp, "format(): cannot specify '_' with '%c'", p.type));
    } else {
        NumText nt = {0};
        ok = number_text(c, &p, x, &nt, sp);
        const char *sign = nt.neg ? "-" : p.sign == '+' ? "+" : p.sign == ' ' ? " " : "";
        size_t every = p.type && strchr("boxX", p.type) ? 4 : 3, zeros = 0, rest = nt.s.len - nt.pre - nt.nd;
        if (!p.align) p.align = p.zero ? '=' : '>';
        if (ok && p.align == '=' && p.fill_n == 1 && p.fill[0] == '0') { /* zeros grouped as the digits are */
            for (;;) {
                size_t d = nt.nd + zeros, len = strlen(sign) + nt.pre + d + (p.group && d ? (d - 1) / every : 0) + rest;
                if (!p.group || (int64_t)len >= p.width) break;
                zeros++;
            }
        }
        if (ok) {
            fl_buf_puts(&body, sign);
            fl_buf_append(&body, nt.s.data, nt.pre);
            at = body.len;
            char *digits = fl_xmalloc(zeros + nt.nd + 1);
            memset(digits, '0', zeros);
            memcpy(digits + zeros, nt.s.data + nt.pre, nt.nd);
            put_grouped(&body, digits, zeros + nt.nd, p.group, every);
            free(digits);
            fl_buf_append(&body, nt.s.data + nt.pre + nt.nd, rest);
        }
        fl_buf_free(&nt.s);
    }
    if (ok) {
        size_t len = utf8_count(body.data, body.len), w = p.width > 0 ? (size_t)p.width : 0;
        size_t fill = w > len ? w - len : 0;
        size_t left = p.align == '>' || p.align == '=' ? fill : p.align == '^' ? fill / 2 : 0;
        if (p.align != '=') at = 0;
        fl_buf_append(b, body.data, at);
        for (size_t k = 0; k < left; k++) fl_buf_append(b, p.fill, p.fill_n);
        fl_buf_append(b, body.data + at, body.len - at);
        for (size_t k = left; k < fill; k++) fl_buf_append(b, p.fill, p.fill_n);
    }
    fl_buf_free(&body);
    return ok;
}

/* str.format: {} (the next argument), {0} (by position), {name} (by keyword), each with an
 * optional conversion (!r: repr, !a: the same for ASCII text, !s: str) and :spec; {{ and }}
 * stand for braces. */
static FlValue *m_format(Ctx *c, FlValue *self, CallArgs *a) {
    FlBuf b = {0};
    FlValue *rt = NULL; /* a run-time string once a field is a run-time value (driver.c) */
    size_t k = 0;
    const char *s = self->str.s;
    size_t n = self->str.n;
    for (size_t i = 0; i < n; i++) {
        if ((s[i] == '{' || s[i] == '}') && i + 1 < n && s[i + 1] == s[i]) {
            fl_buf_putc(&b, s[i++]);
            continue;
        }
        if (s[i] != '{') {
            fl_buf_putc(&b, s[i]);
            continue;
        }
        const char *close = memchr(s + i, '}', n - i);
        if (!close) {
            fl_buf_free(&b);
            return fl_ev_error(c, a->span, "format(): a '{' without its '}'");
        }
        size_t fe = (size_t)(close - s), colon = i + 1;
        while (colon < fe && s[colon] != ':' && s[colon] != '!') colon++;
        size_t fl = colon - i - 1; /* the field name's length */
        char conv = 0;
        if (colon < fe && s[colon] == '!') { /* !r, !a or !s, then the spec */
            conv = colon + 1 < fe ? s[colon + 1] : 0;
            if (!conv || !strchr("ras", conv) || (colon + 2 < fe && s[colon + 2] != ':')) {
                fl_buf_free(&b);
                return fl_ev_error(c, a->span, "format(): the conversion of '{%.*s}' is not !r, !a or !s",
                                   (int)(fe - i - 1), s + i + 1);
            }
            colon += 2;
        }
        FlValue *x = NULL;
        if (fl == 0) {
            x = k < a->npos ? a->pos[k++] : NULL;
        } else if (s[i + 1] >= '0' && s[i + 1] <= '9') {
            size_t idx = (size_t)strtoul(s + i + 1, NULL, 10);
            x = idx < a->npos ? a->pos[idx] : NULL;
        } else {
            for (size_t j = 0; j < a->nkw && !x; j++)
                if (strlen(a->kwnames[j]) == fl && memcmp(a->kwnames[j], s + i + 1, fl) == 0) x = a->kwvals[j];
        }
        if (!x) {
            fl_buf_free(&b);
            return fl_ev_error(c, a->span, "format(): no argument for the field '{%.*s}'", (int)(fe - i - 1), s + i + 1);
        }
        const char *spec = colon < fe ? s + colon + 1 : "";
        if (conv == 'r' || conv == 'a') x = fl_ev_str_of(c, x, true, a->span); /* repr(x), formatted as a str */
        x = x->kind == VK_ERROR ? x : fl_ev_format_arg(c, x, false, a->span); /* an object's __str__, a container's items */
        if (x->kind == VK_ERROR) {
            fl_buf_free(&b);
            return x;
        }
        if (fl_ev_is_runtime(c, x)) {
            const char *ps = fl_ev_rtstr_pyspec(c, spec, colon < fe ? fe - colon - 1 : 0, a->span);
            if (!ps) {
                fl_buf_free(&b);
                return c->error;
            }
            if (!rt) rt = fl_ev_rtstr_new(c);
            fl_ev_rtstr_text(c, rt, fl_buf_str(&b), b.len);
            b.len = 0;
            if (fl_ev_is_rtstr(x) && *ps) {
                fl_buf_free(&b);
                return fl_ev_error(c, a->span, "a format spec of a run-time string is not applied; format its values");
            }
            if (fl_ev_is_rtstr(x)) rt = fl_ev_rtstr_cat(c, rt, x);
            else fl_ev_rtstr_value(c, rt, x, ps);
            i = fe;
            continue;
        }
        if (!format_spec(c, &b, x, spec, colon < fe ? fe - colon - 1 : 0, a->span)) {
            fl_buf_free(&b);
            return c->error;
        }
        i = fe;
    }
    FlValue *r = fl_v_str(c, fl_buf_str(&b), b.len);
    fl_buf_free(&b);
    return rt ? fl_ev_rtstr_cat(c, rt, r) : r;
}

/* str.split(sep=None, maxsplit=-1): on runs of whitespace without sep. */
static FlValue *m_split(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("split", "sep= maxsplit=", 2);
    int64_t max = -1;
    if (v[0] && !fl_ev_want_str(c, v[0], "split() separator", a->span)) return c->error;
    if (v[1] && !fl_ev_want_int(c, v[1], "split() maxsplit", a->span, &max)) return c->error;
    if (v[0] && v[0]->str.n == 0) return fl_ev_error(c, a->span, "split(): empty separator");
    FlValue *out = fl_v_list(c, VK_LIST);
    const char *s = self->str.s, *end = s + self->str.n;
    if (!v[0]) {
        while (s < end) {
            while (s < end && strchr(" \t\n\r\f\v", *s)) s++;
            if (s == end) break;
            const char *w = s;
            if (max >= 0 && (int64_t)out->list.len == max) s = end;
            else while (s < end && !strchr(" \t\n\r\f\v", *s)) s++;
            const char *we = s;
            while (s == end && we > w && strchr(" \t\n\r\f\v", we[-1])) we--;
            fl_v_list_push(c, out, fl_v_str(c, w, (size_t)(we - w)));
        }
        return out;
    }
    const char *sep = v[0]->str.s;
    size_t sl = v[0]->str.n;
    for (;;) {
        const char *hit = max >= 0 && (int64_t)out->list.len == max ? NULL : memmem(s, (size_t)(end - s), sep, sl);
        if (!hit) break;
        fl_v_list_push(c, out, fl_v_str(c, s, (size_t)(hit - s)));
        s = hit + sl;
    }
    fl_v_list_push(c, out, fl_v_str(c, s, (size_t)(end - s)));
    return out;
}

static FlValue *m_replace(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("replace", "old new count=", 3);
    int64_t count = -1;
    if (!fl_ev_want_str(c, v[0], "replace() old", a->span) || !fl_ev_want_str(c, v[1], "replace() new", a->span))
        return c->error;
    if (v[2] && !fl_ev_want_int(c, v[2], "replace() count", a->span, &count)) return c->error;
    if (!v[0]->str.n) return fl_ev_error(c, a->span, "replace(): an empty 'old' is not supported");
    FlBuf b = {0};
    const char *s = self->str.s, *end = s + self->str.n;
    for (int64_t done = 0; count < 0 || done < count; done++) {
        const char *hit = memmem(s, (size_t)(end - s), v[0]->str.s, v[0]->str.n);
        if (!hit) break;
        fl_buf_append(&b, s, (size_t)(hit - s));
        fl_buf_append(&b, v[1]->str.s, v[1]->str.n);
        s = hit + v[0]->str.n;
        if (!fl_ev_check_len(c, b.len, 0, "str", a->span)) {
            fl_buf_free(&b);
            return c->error;
        }
    }
    fl_buf_append(&b, s, (size_t)(end - s));
    FlValue *r = fl_v_str(c, fl_buf_str(&b), b.len);
    fl_buf_free(&b);
    return r;
}

static FlValue *m_strip(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("strip", "chars=", 1);
    if (v[0] && !fl_ev_want_str(c, v[0], "strip() chars", a->span)) return c->error;
    const char *set = v[0] ? v[0]->str.s : " \t\n\r\f\v";
    size_t lo = 0, hi = self->str.n;
    while (lo < hi && strchr(set, self->str.s[lo])) lo++;
    while (hi > lo && strchr(set, self->str.s[hi - 1])) hi--;
    return fl_v_str(c, self->str.s + lo, hi - lo);
}

static FlValue *change_case(Ctx *c, FlValue *self, bool up) {
    char *t = fl_arena_strndup(&c->arena, self->str.s, self->str.n);
    for (size_t i = 0; i < self->str.n; i++)
        if (up ? (t[i] >= 'a' && t[i] <= 'z') : (t[i] >= 'A' && t[i] <= 'Z')) t[i] ^= 0x20;
    return fl_v_str(c, t, self->str.n);
}
static FlValue *m_lower(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("lower", "", 0);
    (void)v;
    return change_case(c, self, false);
}
static FlValue *m_upper(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("upper", "", 0);
    (void)v;
    return change_case(c, self, true);
}

static const struct {
    ValKind k;
    const char *name;
    BuiltinFn fn;
} methods[] = {
    {VK_LIST, "append", m_append}, {VK_LIST, "extend", m_extend}, {VK_LIST, "pop", m_pop},
    {VK_LIST, "insert", m_insert}, {VK_LIST, "index", m_index},   {VK_LIST, "count", m_count},
    {VK_LIST, "remove", m_remove}, {VK_LIST, "reverse", m_reverse}, {VK_LIST, "sort", fl_ev_list_sort},
    {VK_LIST, "copy", m_copy},     {VK_TUPLE, "index", m_index},  {VK_TUPLE, "count", m_count},
    {VK_DICT, "get", m_get},       {VK_DICT, "keys", m_keys},     {VK_DICT, "values", m_values},
    {VK_DICT, "items", m_items},   {VK_DICT, "update", m_update}, {VK_DICT, "pop", m_dict_pop},
    {VK_DICT, "setdefault", m_setdefault}, {VK_DICT, "copy", m_copy},
    {VK_STR, "join", m_join},      {VK_STR, "startswith", m_startswith},
    {VK_STR, "endswith", m_endswith}, {VK_STR, "format", m_format}, {VK_STR, "split", m_split},
    {VK_STR, "replace", m_replace}, {VK_STR, "strip", m_strip},   {VK_STR, "lower", m_lower},
    {VK_STR, "upper", m_upper},
};

bool fl_ev_has_value_method(const FlValue *obj, const char *name) {
    for (size_t i = 0; i < FL_ARRAY_LEN(methods); i++)
        if (methods[i].k == obj->kind && strcmp(methods[i].name, name) == 0) return true;
    return false;
}

FlValue *fl_ev_value_method(Ctx *c, FlValue *obj, const char *name, FlSpan sp) {
    if (obj->kind == VK_PROGRAM) return fl_ev_program_method(c, obj, name, sp);
    if (obj->kind == VK_SET) return fl_ev_set_method(c, obj, name, sp);
    if ((fl_ev_is_rt_list(obj) || fl_ev_is_tensor_array(obj)) && strcmp(name, "append") != 0)
        return fl_ev_error(c, sp, fl_ev_is_tensor_array(obj)
                                      ? "'LoDTensorArray' object has no attribute '%s' here (it has append(t), len(a), "
                                        "a[i] and iteration)"
                                      : "%s() of a list filled at run time: its elements are known only when the driver "
                                        "runs (it has append(x), len(l), l[i] and iteration)",
                           name);
    for (size_t i = 0; i < FL_ARRAY_LEN(methods); i++)
        if (methods[i].k == obj->kind && strcmp(methods[i].name, name) == 0)
            return fl_v_builtin(c, methods[i].name, methods[i].fn, obj);
    return fl_ev_error(c, sp, "'%s' object has no attribute '%s'", fl_v_type_name(obj), name);
}

/* ------------------------------------------------------------------ Vars: attributes, channels */

static FlValue *chan_send(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("send", "x", 1);
    FlValue *x = v[0];
    FlVarDesc *chd = fl_ev_var_desc(c, self);
    if (fl_v_is_num(x)) x = fl_ev_const_var(c, x, chd ? chd->dtype : FL_DT_FLOAT32, a->span);
    if (x->kind != VK_VAR) return fl_ev_error(c, a->span, "send() needs a Var, found %s", fl_v_type_name(x));
    const char *names[2] = {"Channel", "X"};
    FlValue *vals[2] = {self, x};
    CallArgs oa = {.kwnames = names, .kwvals = vals, .nkw = 2, .span = a->span};
    FlValue *r = fl_ev_op(c, "channel_send", &oa, a->span);
    return r->kind == VK_ERROR ? r : c->none;
}
static FlValue *chan_recv(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("recv", "", 0);
    (void)v;
    const char *names[1] = {"Channel"};
    FlValue *vals[1] = {self};
    CallArgs oa = {.kwnames = names, .kwvals = vals, .nkw = 1, .span = a->span};
    FlValue *r = fl_ev_op(c, "channel_recv", &oa, a->span);
    if (r->kind == VK_TUPLE) return r->list.items[0];
    return r;
}
static FlValue *chan_close(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("close", "", 0);
    (void)v;
    const char *names[1] = {"Channel"};
    FlValue *vals[1] = {self};
    CallArgs oa = {.kwnames = names, .kwvals = vals, .nkw = 1, .span = a->span};
    FlValue *r = fl_ev_op(c, "channel_close", &oa, a->span);
    return r->kind == VK_ERROR ? r : c->none;
}

/* Variable.astype(dtype): a cast op (Fluid's math_op_patch). */
static FlValue *var_astype(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("astype", "dtype", 1);
    FlVarDesc *d = fl_ev_var_desc(c, self);
    if (!d) return fl_ev_error(c, a->span, "var '%s' is not visible here", self->var.name);
    const char *names[3] = {"X", "in_dtype", "out_dtype"};
    FlValue *vals[3] = {self, fl_v_cstr(c, fl_dtype_name(d->dtype)), v[0]};
    CallArgs oa = {.kwnames = names, .kwvals = vals, .nkw = 3, .span = a->span};
    return fl_ev_op(c, "cast", &oa, a->span);
}

/* Variable.to_string(throw_on_error, with_details=False): the var as `flc show` prints it. */
static FlValue *var_to_string(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("to_string", "throw_on_error with_details=", 2);
    if (v[0]->kind != VK_BOOL || (v[1] && v[1]->kind != VK_BOOL))
        return fl_ev_error(c, a->span, "to_string() takes throw_on_error and with_details, both bools");
    FlVarDesc *d = fl_ev_var_desc(c, self);
    if (!d) return fl_ev_error(c, a->span, "var '%s' is not visible here", self->var.name);
    FlBuf b = {0};
    fl_buf_printf(&b, "var %s : %s", self->var.name, fl_dtype_name(d->dtype));
    fl_ir_shape_str(d->ndim, d->shape, &b);
    if (d->lod_level) fl_buf_printf(&b, " lod_level %d", d->lod_level);
    if (v[1] && v[1]->b) /* with_details: Fluid adds stop_gradient, persistable and more */
        fl_buf_printf(&b, " stop_gradient %s persistable %s", d->stop_gradient ? "True" : "False",
                      d->persistable ? "True" : "False");
    FlValue *r = fl_v_cstr(c, fl_buf_str(&b));
    fl_buf_free(&b);
    return r;
}

FlValue *fl_ev_var_method(Ctx *c, FlValue *var, const char *name, FlSpan sp) {
    FlVarDesc *d = fl_ev_var_desc(c, var);
    if (!d) return fl_ev_error(c, sp, "var '%s' is not visible here", var->var.name);
    /* a fetched value in the user's script has numpy's attributes; the library (DataFeeder, the
     * readers) works on the driver's vars as Vars, with their declared shapes */
    bool user = !(c->cur_mod && c->cur_mod->is_stdlib);
    FlValue *dv = user && fl_ev_is_driver_var(c, var) ? fl_ev_driver_attr(c, var, name, sp) : NULL;
    if (dv) return dv;
    if (strcmp(name, "name") == 0) return fl_v_cstr(c, var->var.name);
    if (strcmp(name, "dtype") == 0) return fl_v_cstr(c, fl_dtype_name(d->dtype));
    if (strcmp(name, "lod_level") == 0) return fl_v_int(c, d->lod_level);
    if (strcmp(name, "block") == 0) return fl_ev_var_block(c, var);
    if (strcmp(name, "astype") == 0 && d->kind != FL_VAR_CHANNEL) return fl_v_builtin(c, name, var_astype, var);
    if (strcmp(name, "to_string") == 0) return fl_v_builtin(c, name, var_to_string, var);
    if (strcmp(name, "persistable") == 0) return fl_v_bool(c, d->persistable);
    if (strcmp(name, "stop_gradient") == 0) return fl_v_bool(c, d->stop_gradient);
    if (strcmp(name, "error_clip") == 0) {
        FlValue *clip = fl_map_find_str(&c->error_clips, fl_arena_printf(&c->arena, "%p/%s", (void *)c->b.main, var->var.name));
        return clip ? clip : c->none;
    }
    if (strcmp(name, "is_data") == 0) return fl_v_bool(c, fl_ev_var_is_data(c, var, d));
    if (strcmp(name, "type") == 0) { /* Fluid's var.type, as fluid.core.VarDesc.VarType names it */
        static const char *const kinds[FL_VAR_KIND_COUNT] = {
            [FL_VAR_DENSE] = "LOD_TENSOR", [FL_VAR_CHANNEL] = "CHANNEL", [FL_VAR_RAW] = "RAW",
            [FL_VAR_SELECTED_ROWS] = "SELECTED_ROWS", [FL_VAR_TENSOR_ARRAY] = "LOD_TENSOR_ARRAY"};
        return fl_v_cstr(c, kinds[d->kind]);
    }
    if (strcmp(name, "shape") == 0) {
        FlValue *l = fl_v_list(c, VK_LIST);
        for (int i = 0; i < d->ndim; i++) fl_v_list_push(c, l, fl_v_int(c, d->shape[i]));
        return l;
    }
    bool is_chan = d->kind == FL_VAR_CHANNEL;
    if (strcmp(name, "send") == 0 || strcmp(name, "recv") == 0 || strcmp(name, "close") == 0) {
        if (!is_chan) {
            FlBuf b = {0};
            fl_ir_shape_str(d->ndim, d->shape, &b);
            fl_ev_error(c, sp, "'%s' needs a channel, found a %s tensor '%s' %s", name, fl_dtype_name(d->dtype),
                        var->var.name, fl_buf_str(&b));
            fl_buf_free(&b);
            return c->error;
        }
        BuiltinFn fn = name[0] == 's' ? chan_send : name[0] == 'r' ? chan_recv : chan_close;
        return fl_v_builtin(c, name, fn, var);
    }
    return fl_ev_error(c, sp, "a Var has no attribute '%s' (it has name, shape, dtype, type, lod_level, block, "
                       "persistable, stop_gradient, is_data, to_string%s)", name, is_chan ? ", send, recv, close" : ", astype");
}
bool fl_ev_var_set(Ctx *c, FlValue *var, const char *name, FlValue *v, FlSpan sp) {
    FlVarDesc *d = fl_ev_var_desc(c, var);
    if (!d) {
        fl_ev_error(c, sp, "var '%s' is not visible here", var->var.name);
        return false;
    }
    if (strcmp(name, "error_clip") == 0) {
        /* Fluid's var.error_clip: an ErrorClipByValue (fluid.clip) or None */
        if (v->kind != VK_NONE && !(v->kind == VK_RECORD && strcmp(v->rec.type, "ErrorClipByValue") == 0)) {
            fl_ev_error(c, sp, "error_clip must be a fluid.clip.ErrorClipByValue or None, found %s", fl_v_type_name(v));
            return false;
        }
        const char *key = fl_arena_printf(&c->arena, "%p/%s", (void *)c->b.main, var->var.name);
        fl_map_put_str(&c->error_clips, fl_intern_str(&c->in, key), v->kind == VK_NONE ? NULL : v); /* NULL: none */
        return true;
    }
    if (strcmp(name, "stop_gradient") != 0 && strcmp(name, "persistable") != 0) {
        fl_ev_error(c, sp, "cannot set attribute '%s' of a Var (only stop_gradient, persistable and error_clip)", name);
        return false;
    }
    if (v->kind != VK_BOOL) {
        fl_ev_error(c, sp, "%s must be True or False, found %s", name, fl_v_type_name(v));
        return false;
    }
    if (name[0] == 'p') { /* Fluid's var.persistable: kept in the scope from one run to the next */
        const char *pkey = fl_arena_printf(&c->arena, "%p/%s", (void *)c->b.main, var->var.name);
        if (!v->b && fl_map_find_str(&c->params, pkey)) {
            fl_ev_error(c, sp, "'%s' is a parameter: it stays persistable (the optimizer's updates live in the scope)",
                        var->var.name);
            return false;
        }
        if (v->b && !fl_ir_var_find(fl_ir_block(c->b.main, 0), var->var.name)) {
            fl_ev_error(c, sp, "'%s' is a var of a block of control flow: only a var of the program's global block can "
                        "be persistable", var->var.name);
            return false;
        }
        d->persistable = v->b;
        return true;
    }
    d->stop_gradient = v->b;
    const char *key = fl_arena_printf(&c->arena, "%p/%s", (void *)c->b.main, var->var.name);
    if (fl_map_find_str(&c->params, key)) d->trainable = !v->b;
    return true;
}

/* cap(ch): Go's capacity of a channel, at run time. */
static FlValue *b_cap(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("cap", "obj", 1);
    if (v[0]->kind == VK_VAR && fl_ev_is_channel(c, v[0])) return fl_ev_chan_len(c, v[0], true, a->span);
    if (v[0]->kind == VK_ERROR) return v[0];
    return fl_ev_error(c, a->span, "cap() needs a channel, found %s", fl_v_type_name(v[0]));
}
/* ------------------------------------------------------------------ the builtins table */
static const NativeFn py_builtins[] = {
    {"len", b_len},     {"range", b_range}, {"zip", b_zip},     {"enumerate", b_enumerate},
    {"print", b_print}, {"str", b_str},     {"repr", b_repr},     {"int", b_int},     {"float", b_float},
    {"bool", b_bool},   {"list", b_list},   {"tuple", b_tuple}, {"dict", b_dict},
    {"min", b_min},     {"max", b_max},     {"abs", b_abs},     {"sum", b_sum},
    {"reversed", b_reversed}, {"getattr", b_getattr}, {"cap", b_cap},
};

void fl_builtins_install(Ctx *c) {
    c->builtins = fl_env_new(c, NULL);
    for (size_t i = 0; i < FL_ARRAY_LEN(py_builtins); i++)
        fl_env_set(c->builtins, fl_intern_str(&c->in, py_builtins[i].name),
                   fl_v_builtin(c, py_builtins[i].name, py_builtins[i].fn, NULL));
    fl_ev_native_module(c, "_core");
    fl_ev_driver_install(c);
    fl_ev_driver_data_install(c);
    fl_ev_driver_random_install(c);
    fl_ev_driver_pyfunc_install(c);
    fl_ev_dist_install(c);
    fl_ev_driver_io_install(c);
    fl_ev_driver_metrics_install(c);
    fl_ev_driver_pyreader_install(c);
    fl_ev_driver_lod_install(c);
    fl_ev_driver_dataset_install(c);
    fl_ev_driver_file_install(c);
    fl_ev_contrib_install(c);
    fl_ev_pylib_install(c);
}
