/* driver_print.c: Python's str() and repr() of values that hold fetched values or objects of the
 * script's classes (docs/driver.md, "Fetched values"): print(obj), str(obj) and a tuple, list or
 * dict of them print as Python prints them.
 *
 *   an object of a class with __str__ (str) or __repr__ (str and repr): the method's result
 *   a tuple, list, set or dict: Python's brackets and commas around its items' repr()s
 *   a fetched value: as numpy prints it when the driver runs (a number: as Python's int/float),
 *     inside a container as numpy's repr (array([1., 2.], dtype=float32))
 *   numpy.array(...) of numbers made when the script compiles: the same, a constant of the driver
 *   a list filled at run time (a fetched tensor array's list of numpy arrays included): Python's
 *     list of its elements' reprs, when the driver runs (a LoDTensorArray: a located error)
 *   anything else: the language's repr (value.c)
 *
 * The result is a str, or a run-time string (driver.c) once a part is known only when the driver
 * runs, which print writes with a print_line op.
 */
#include <string.h>

#include "lang/eval_impl.h"

/* Whether str(v) needs more than value.c's repr: v holds a run-time value or an object whose
 * class defines __str__ or __repr__ (depth: nesting, bounded as value.c bounds its repr). */
static const char *str_method(FlValue *v, bool repr);

static bool needs_walk(Ctx *c, FlValue *v, int depth) {
    if (depth > FL_MAX_NESTING) return false;
    if (fl_ev_is_runtime(c, v)) return true;
    switch (v->kind) {
    case VK_RECORD: return fl_ev_is_lod_lengths(v) || fl_v_is_rec(v, "ndarray") || str_method(v, false) != NULL;
    case VK_LIST: case VK_TUPLE: case VK_SET:
        if (fl_ev_is_rt_list(v) || fl_ev_is_tensor_array(v)) return true; /* fl_ev_driver_list_str */
        for (size_t i = 0; i < v->list.len; i++)
            if (needs_walk(c, v->list.items[i], depth + 1)) return true;
        return false;
    case VK_DICT:
        for (size_t i = 0; i < v->dict.len; i++)
            if (needs_walk(c, v->dict.keys[i], depth + 1) || needs_walk(c, v->dict.vals[i], depth + 1)) return true;
        return false;
    case VK_NONE: case VK_BOOL: case VK_INT: case VK_FLOAT: case VK_STR: case VK_VAR: case VK_FUNC:
    case VK_BUILTIN: case VK_MODULE: case VK_GUARD: case VK_PROGRAM: case VK_READER: case VK_CLASS:
    case VK_ERROR: case VK_COUNT: break;
    }
    return false;
}

static FlValue *str_of(Ctx *c, FlValue *v, bool repr, int depth, FlSpan sp);

/* Appends piece (a str or a run-time string) to the run-time string rt. */
static void add(Ctx *c, FlValue *rt, FlValue *piece) {
    if (piece->kind == VK_STR) fl_ev_rtstr_text(c, rt, piece->str.s, piece->str.n);
    else fl_ev_rtstr_add(c, rt, piece);
}

static void text(Ctx *c, FlValue *rt, const char *s) { fl_ev_rtstr_text(c, rt, s, strlen(s)); }

/* The method str(v) (repr: repr(v)) calls on an object of a script's class: __str__, else
 * __repr__ (repr: __repr__ alone); NULL: none. */
static const char *str_method(FlValue *v, bool repr) {
    if (v->kind != VK_RECORD || !v->rec.cls) return NULL;
    if (!repr && fl_ev_class_attr(v->rec.cls, "__str__")) return "__str__";
    return fl_ev_class_attr(v->rec.cls, "__repr__") ? "__repr__" : NULL;
}

/* obj.name(), which must give a string. */
static FlValue *method_str(Ctx *c, FlValue *v, const char *name, FlSpan sp) {
    FlValue *m = fl_ev_find_attr(c, v, name, sp);
    if (!m || m->kind == VK_ERROR) return c->error;
    CallArgs a = {.span = sp};
    FlValue *r = fl_ev_call(c, m, &a);
    if (r->kind == VK_ERROR || r->kind == VK_STR || fl_ev_is_rtstr(r)) return r;
    return fl_ev_error(c, sp, "%s returned %s, not a str (Python's TypeError)", name, fl_v_type_name(r));
}

/* The items of a container between its brackets, each as repr() shows it. */
static FlValue *container_str(Ctx *c, FlValue *v, int depth, FlSpan sp) {
    FlValue *rt = fl_ev_rtstr_new(c);
    bool dict = v->kind == VK_DICT;
    text(c, rt, v->kind == VK_LIST ? "[" : v->kind == VK_TUPLE ? "(" : "{");
    size_t n = dict ? v->dict.len : v->list.len;
    for (size_t i = 0; i < n; i++) {
        if (i) text(c, rt, ", ");
        FlValue *k = str_of(c, dict ? v->dict.keys[i] : v->list.items[i], true, depth + 1, sp);
        if (k->kind == VK_ERROR) return k;
        add(c, rt, k);
        if (!dict) continue;
        text(c, rt, ": ");
        FlValue *x = str_of(c, v->dict.vals[i], true, depth + 1, sp);
        if (x->kind == VK_ERROR) return x;
        add(c, rt, x);
    }
    if (v->kind == VK_TUPLE && n == 1) text(c, rt, ",");
    text(c, rt, v->kind == VK_LIST ? "]" : v->kind == VK_TUPLE ? ")" : "}");
    return fl_ev_rtstr_settle(c, rt);
}

/* numpy.array(...) of numbers made when the script compiles, as numpy prints it: a constant of
 * the driver (of its dtype) printed when the driver gets there; NULL when it holds no numbers. */
static FlValue *ndarray_str(Ctx *c, FlValue *v, bool repr, FlSpan sp) {
    FlValue *x = fl_v_rec_get(v, "_value"), *dt = fl_v_rec_get(v, "_dtype");
    if (!x || !(fl_v_is_num(x) || fl_v_is_seq(x))) return NULL;
    FlValue *var = fl_ev_driver_const(c, x, sp);
    if (var->kind == VK_ERROR) return var;
    DriverSwap sw;
    fl_ev_driver_enter(c, &sw);
    FlVarDesc *d = fl_ev_var_desc(c, var);
    fl_ev_driver_leave(c, &sw);
    if (dt && dt->kind == VK_INT && d && d->dtype != (FlDType)dt->i) {
        const char *names[3] = {"X", "in_dtype", "out_dtype"};
        FlValue *vals[3] = {var, fl_v_int(c, d->dtype), dt};
        if ((var = fl_ev_driver_kwop(c, "cast", names, vals, 3, sp))->kind == VK_ERROR) return var;
    }
    FlValue *rt = fl_ev_rtstr_new(c);
    fl_ev_rtstr_value(c, rt, var, repr ? "repr" : "");
    return rt;
}

static FlValue *str_of(Ctx *c, FlValue *v, bool repr, int depth, FlSpan sp) {
    if (fl_ev_is_rtstr(v)) return v;
    FlValue *nd = fl_v_is_rec(v, "ndarray") ? ndarray_str(c, v, repr, sp) : NULL;
    if (nd) return nd;
    if (fl_ev_is_driver_var(c, v) && repr) { /* an item of a container: numpy's repr, array([1., 2.]) */
        FlValue *rt = fl_ev_rtstr_new(c);
        fl_ev_rtstr_value(c, rt, v, "repr");
        return rt;
    }
    if (fl_ev_is_driver_var(c, v)) return fl_ev_rtstr_of(c, v);
    if (fl_ev_is_rt_list(v) || fl_ev_is_tensor_array(v)) return fl_ev_driver_list_str(c, v, sp);
    if (fl_ev_is_lod_lengths(v)) return fl_ev_lod_lengths_str(c, v); /* a fetched sequence's lengths */
    const char *m = str_method(v, repr);
    if (m) return method_str(c, v, m, sp);
    if (v->kind != VK_RECORD && needs_walk(c, v, depth)) return container_str(c, v, depth, sp);
    FlBuf b = {0};
    bool quote = repr && v->kind == VK_STR;
    if (quote) fl_buf_putc(&b, '\'');
    bool ok = fl_v_repr_at(c, v, &b, sp);
    if (quote) fl_buf_putc(&b, '\'');
    FlValue *r = ok ? fl_v_str(c, fl_buf_str(&b), b.len) : c->error;
    fl_buf_free(&b);
    return r;
}

FlValue *fl_ev_str_of(Ctx *c, FlValue *v, bool repr, FlSpan sp) { return str_of(c, v, repr, 0, sp); }

FlValue *fl_ev_format_arg(Ctx *c, FlValue *x, bool repr, FlSpan sp) {
    switch (x->kind) {
    case VK_RECORD: case VK_LIST: case VK_TUPLE: case VK_SET: case VK_DICT:
        return needs_walk(c, x, 0) ? str_of(c, x, repr, 0, sp) : x;
    case VK_VAR: /* '%r' of a fetched value: numpy's repr */
        return repr && fl_ev_is_driver_var(c, x) ? str_of(c, x, true, 0, sp) : x;
    case VK_NONE: case VK_BOOL: case VK_INT: case VK_FLOAT: case VK_STR: case VK_FUNC:
    case VK_BUILTIN: case VK_MODULE: case VK_GUARD: case VK_PROGRAM: case VK_READER: case VK_CLASS:
    case VK_ERROR: case VK_COUNT: break;
    }
    return x;
}
