/* pylib.c: the Python library of the compile-time interpreter beyond the core builtins:
 * isinstance, hasattr, setattr, sorted, map, filter, any, all, object, and the modules `math`,
 * `functools` (reduce, partial) and `__future__`; plus the rule that turns a whole float into an int where an
 * int is expected (fl_ev_whole_int).
 *
 * How: builtins as in builtins.c (a BuiltinFn binding its arguments with ARGS); the modules are
 * native modules (no file) registered under their names, so `import math` finds them first.
 * Invariants: nothing here touches the IR; sorting is a stable merge sort whose comparisons
 * report an error once and stop.
 */
#include <math.h>
#include <string.h>

#include "lang/eval_impl.h"

int fl_ev_whole_int(Ctx *c, FlValue *v, const char *what, FlSpan sp, int64_t *out) {
    if (v->kind == VK_INT || v->kind == VK_BOOL) {
        *out = v->kind == VK_INT ? v->i : v->b;
        return 1;
    }
    if (v->kind != VK_FLOAT) return 0;
    if (isfinite(v->f) && v->f == floor(v->f) && fabs(v->f) < 9.2e18) {
        *out = (int64_t)v->f;
        return 1;
    }
    fl_ev_error(c, sp, "%s must be an int, found %g (a float that is not a whole number)", what, v->f);
    fl_diag_note(&c->diag, fl_ev_user_span(c, sp), "'/' always gives a float; '//' divides ints to an int, "
                                                   "as in (k - 1) // 2");
    return -1;
}

/* ------------------------------------------------------------------ ordering */

/* Python's order of a and b (numbers, strings, and lists or tuples of them element by element):
 * -1, 0 or 1; 2 after reporting values that cannot be ordered. */
static int order(Ctx *c, FlValue *a, FlValue *b, FlSpan sp, int depth) {
    if (fl_v_is_seq(a) && a->kind == b->kind && depth < FL_MAX_NESTING) {
        for (size_t i = 0; i < a->list.len && i < b->list.len; i++) {
            int k = order(c, a->list.items[i], b->list.items[i], sp, depth + 1);
            if (k != 0) return k;
        }
        return a->list.len < b->list.len ? -1 : a->list.len > b->list.len;
    }
    if ((fl_v_is_num(a) && fl_v_is_num(b)) || (a->kind == VK_STR && b->kind == VK_STR)) {
        FlValue *lt = fl_ev_compare(c, FL_CMP_LT, a, b, sp);
        if (lt->kind == VK_ERROR) return 2;
        if (lt->b) return -1;
        FlValue *gt = fl_ev_compare(c, FL_CMP_GT, a, b, sp);
        return gt->kind == VK_BOOL && gt->b;
    }
    fl_ev_error(c, sp, "cannot order %s and %s", fl_v_type_name(a), fl_v_type_name(b));
    return 2;
}

/* key(x) for each x of l (or the items themselves when key is NULL); ERROR after an error. */
static FlValue *keys_of(Ctx *c, FlValue *l, FlValue *key, FlSpan sp) {
    if (!key) return l;
    FlValue *out = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < l->list.len; i++) {
        FlValue *k = fl_ev_call_simple(c, key, sp, &l->list.items[i], 1);
        if (k->kind == VK_ERROR) return k;
        fl_v_list_push(c, out, k);
    }
    return out;
}

/* Stable merge sort of idx[0..n) by keys (reversed: descending, still stable). */
static bool merge_sort(Ctx *c, size_t *idx, size_t *tmp, size_t n, FlValue *keys, bool rev, FlSpan sp) {
    if (n < 2) return true;
    size_t h = n / 2;
    if (!merge_sort(c, idx, tmp, h, keys, rev, sp) || !merge_sort(c, idx + h, tmp, n - h, keys, rev, sp)) return false;
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        int o = order(c, keys->list.items[idx[j]], keys->list.items[idx[i]], sp, 0);
        if (o == 2) return false;
        bool take_right = rev ? o > 0 : o < 0;
        tmp[k++] = take_right ? idx[j++] : idx[i++];
    }
    while (i < h) tmp[k++] = idx[i++];
    while (j < n) tmp[k++] = idx[j++];
    memcpy(idx, tmp, n * sizeof *idx);
    return true;
}

/* A new list of l's items sorted by key (NULL: themselves), descending when rev. */
static FlValue *sorted_list(Ctx *c, FlValue *l, FlValue *key, bool rev, FlSpan sp) {
    FlValue *keys = keys_of(c, l, key, sp);
    if (keys->kind == VK_ERROR) return keys;
    size_t n = l->list.len;
    size_t *idx = fl_arena_alloc(&c->arena, (n + 1) * sizeof *idx), *tmp = fl_arena_alloc(&c->arena, (n + 1) * sizeof *tmp);
    for (size_t i = 0; i < n; i++) idx[i] = i;
    if (!merge_sort(c, idx, tmp, n, keys, rev, sp)) return c->error;
    FlValue *out = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < n; i++) fl_v_list_push(c, out, l->list.items[idx[i]]);
    return out;
}

/* locals(): a dict of the running function's local names (the module's names at module level),
 * as `f(**locals())` passes them on. */
static FlValue *b_locals(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("locals", "", 0);
    (void)v;
    const Env *env = c->cur_locals ? c->cur_locals : c->cur_mod ? c->cur_mod->globals : NULL;
    FlValue *d = fl_v_dict(c);
    if (!env) return d;
    for (size_t i = 0; i < env->map.cap; i++)
        if (fl_map_slot_live(&env->map, i)) {
            const FlMapEntry *en = &env->map.buckets[i];
            fl_v_dict_set(c, d, fl_v_str(c, en->key, en->klen), en->val);
        }
    return d;
}

static FlValue *b_sorted(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("sorted", "seq key= reverse=", 3);
    FlValue *l = fl_ev_as_list(c, v[0], a->span);
    if (l->kind == VK_ERROR) return l;
    bool ok = true, rev = v[2] && fl_v_truthy(c, v[2], a->span, &ok);
    return ok ? sorted_list(c, l, v[1], rev, a->span) : c->error;
}

/* list.sort(key=None, reverse=False), in place. */
FlValue *fl_ev_list_sort(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("sort", "key= reverse=", 2);
    bool ok = true, rev = v[1] && fl_v_truthy(c, v[1], a->span, &ok);
    FlValue *s = ok ? sorted_list(c, self, v[0], rev, a->span) : c->error;
    if (s->kind == VK_ERROR) return s;
    if (s->list.len) memcpy(self->list.items, s->list.items, s->list.len * sizeof *s->list.items);
    return c->none;
}

FlValue *fl_ev_min_max(Ctx *c, CallArgs *a, bool is_max) {
    const char *fname = is_max ? "max" : "min";
    ARGS(fname, "*items key= default=", 3);
    FlValue *l = v[0];
    bool has_default = false; /* default=None is a default too */
    for (size_t i = 0; i < a->nkw; i++) has_default = has_default || strcmp(a->kwnames[i], "default") == 0;
    if (l->list.len == 1) l = fl_ev_as_list(c, l->list.items[0], a->span);
    else if (has_default) return fl_ev_error(c, a->span, "%s() takes 'default' only with one iterable argument", fname);
    if (l->kind == VK_ERROR) return l;
    if (!l->list.len) {
        if (has_default) return v[2] ? v[2] : c->none;
        return fl_ev_error(c, a->span, "%s() of an empty sequence", fname);
    }
    FlValue *keys = keys_of(c, l, v[1], a->span);
    if (keys->kind == VK_ERROR) return keys;
    size_t best = 0;
    for (size_t i = 1; i < l->list.len; i++) {
        FlValue *x = keys->list.items[i], *b = keys->list.items[best];
        int o;
        if (fl_v_is_num(x) && fl_v_is_num(b)) {
            o = fl_v_num_cmp(x, b);
            if (o == 2) continue; /* a NaN: Python keeps the first */
        } else {
            o = order(c, x, b, a->span, 0);
            if (o == 2) return c->error;
        }
        if (is_max ? o > 0 : o < 0) best = i;
    }
    return l->list.items[best];
}

/* ------------------------------------------------------------------ builtins */

/* Whether obj is an instance of t: a user class, a builtin type (int, float, str, bool, list,
 * tuple, dict, object), a function that makes records of its name (fluid.ParamAttr), or
 * fluid.framework.Variable (_core.Variable), of which every Var is one. */
static bool instance_of(FlValue *obj, FlValue *t) {
    if (t->kind == VK_CLASS) return obj->kind == VK_RECORD && fl_ev_is_subclass(obj->rec.cls, t);
    if (t->kind == VK_FUNC)
        return obj->kind == VK_RECORD && !obj->rec.cls && t->func.def->def.name &&
               strcmp(obj->rec.type, t->func.def->def.name) == 0;
    const char *n = t->builtin.name;
    if (!strcmp(n, "object")) return true;
    if (!strcmp(n, "int")) return obj->kind == VK_INT || obj->kind == VK_BOOL;
    if (!strcmp(n, "float")) return obj->kind == VK_FLOAT;
    if (!strcmp(n, "bool")) return obj->kind == VK_BOOL;
    if (!strcmp(n, "str")) return obj->kind == VK_STR;
    if (!strcmp(n, "list")) return obj->kind == VK_LIST;
    if (!strcmp(n, "tuple")) return obj->kind == VK_TUPLE;
    if (!strcmp(n, "dict")) return obj->kind == VK_DICT;
    if (!strcmp(n, "set")) return obj->kind == VK_SET;
    if (!strcmp(n, "Variable")) return obj->kind == VK_VAR;
    return false;
}

static bool is_type(FlValue *t) {
    static const char *const types[] = {"object", "int", "float", "bool", "str", "list", "tuple", "dict", "set",
                                        "Variable"};
    if (t->kind == VK_CLASS || t->kind == VK_FUNC) return true;
    if (t->kind != VK_BUILTIN) return false;
    for (size_t i = 0; i < FL_ARRAY_LEN(types); i++)
        if (strcmp(t->builtin.name, types[i]) == 0) return true;
    return false;
}

static FlValue *b_isinstance(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("isinstance", "obj types", 2);
    FlValue *one[1] = {v[1]}, **ts = one;
    size_t n = 1;
    if (v[1]->kind == VK_TUPLE) {
        ts = v[1]->list.items;
        n = v[1]->list.len;
    }
    bool found = false;
    for (size_t i = 0; i < n; i++) {
        if (!is_type(ts[i]))
            return fl_ev_error(c, a->span, "isinstance() arg 2 must be a class, a type or a tuple of them, found %s",
                               fl_v_type_name(ts[i]));
        found = found || instance_of(v[0], ts[i]);
    }
    return fl_v_bool(c, found);
}

static FlValue *b_hasattr(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("hasattr", "obj name", 2);
    if (!fl_ev_want_str(c, v[1], "hasattr() name", a->span)) return c->error;
    FlValue *o = v[0];
    const char *n = v[1]->str.s;
    if (o->kind == VK_VAR) {
        static const char *const var_attrs[] = {"name", "shape", "dtype", "persistable", "stop_gradient"};
        for (size_t i = 0; i < FL_ARRAY_LEN(var_attrs); i++)
            if (strcmp(n, var_attrs[i]) == 0) return c->vtrue;
        return fl_v_bool(c, fl_ev_is_channel(c, o) && (!strcmp(n, "send") || !strcmp(n, "recv") || !strcmp(n, "close")));
    }
    return fl_v_bool(c, fl_ev_find_attr(c, o, n, a->span) || fl_ev_has_value_method(o, n));
}

static FlValue *b_setattr(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("setattr", "obj name value", 3);
    if (!fl_ev_want_str(c, v[1], "setattr() name", a->span)) return c->error;
    const char *n = fl_intern_str(&c->in, v[1]->str.s);
    FlValue *o = v[0], *x = v[2] ? v[2] : c->none;
    if (o->kind == VK_RECORD) fl_v_rec_set(c, o, n, x);
    else if (o->kind == VK_CLASS) fl_env_set(o->cls.attrs, n, x);
    else if (o->kind == VK_MODULE) fl_env_set(o->mod->globals, n, x);
    else return fl_ev_error(c, a->span, "cannot set attribute '%s' of a %s", n, fl_v_type_name(o));
    return c->none;
}

/* map(f, xs, ...): a list (Python 3's iterator, made at once). */
static FlValue *b_map(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("map", "fn *seqs", 2);
    FlValue *seqs = v[1];
    if (!seqs->list.len) return fl_ev_error(c, a->span, "map() needs at least one iterable");
    size_t n = SIZE_MAX, k = seqs->list.len;
    FlValue **ls = fl_arena_alloc(&c->arena, k * sizeof *ls);
    for (size_t i = 0; i < k; i++) {
        ls[i] = fl_ev_as_list(c, seqs->list.items[i], a->span);
        if (ls[i]->kind == VK_ERROR) return c->error;
        if (ls[i]->list.len < n) n = ls[i]->list.len;
    }
    FlValue *out = fl_v_list(c, VK_LIST);
    FlValue **args = fl_arena_alloc(&c->arena, k * sizeof *args);
    for (size_t j = 0; j < n; j++) {
        for (size_t i = 0; i < k; i++) args[i] = ls[i]->list.items[j];
        FlValue *r = fl_ev_call_simple(c, v[0], a->span, args, k);
        if (r->kind == VK_ERROR) return r;
        fl_v_list_push(c, out, r);
    }
    return out;
}

/* The truth of x, or of fn(x) when fn is given; *ok false after an error. */
static bool test(Ctx *c, FlValue *fn, FlValue *x, FlSpan sp, bool *ok) {
    if (fn) x = fl_ev_call_simple(c, fn, sp, &x, 1);
    *ok = x->kind != VK_ERROR;
    return *ok && fl_v_truthy(c, x, sp, ok);
}

static FlValue *b_filter(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("filter", "fn seq", 2);
    FlValue *l = fl_ev_as_list(c, v[1], a->span);
    if (l->kind == VK_ERROR) return l;
    FlValue *out = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < l->list.len; i++) {
        bool ok, t = test(c, v[0]->kind == VK_NONE ? NULL : v[0], l->list.items[i], a->span, &ok);
        if (!ok) return c->error;
        if (t) fl_v_list_push(c, out, l->list.items[i]);
    }
    return out;
}

static FlValue *any_all(Ctx *c, CallArgs *a, bool all) {
    ARGS(all ? "all" : "any", "seq", 1);
    FlValue *l = fl_ev_as_list(c, v[0], a->span);
    if (l->kind == VK_ERROR) return l;
    for (size_t i = 0; i < l->list.len; i++) {
        bool ok, t = test(c, NULL, l->list.items[i], a->span, &ok);
        if (!ok) return c->error;
        if (t != all) return fl_v_bool(c, t);
    }
    return fl_v_bool(c, all);
}
static FlValue *b_any(Ctx *c, FlValue *self, CallArgs *a) { return any_all(c, a, false); }
static FlValue *b_all(Ctx *c, FlValue *self, CallArgs *a) { return any_all(c, a, true); }

/* type(x): the class of an instance, or the builtin type of a plain value. */
static FlValue *b_type(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("type", "obj", 1);
    FlValue *o = v[0] ? v[0] : c->none;
    if (o->kind == VK_RECORD && o->rec.cls) return o->rec.cls;
    static const struct {
        ValKind k;
        const char *name;
    } types[] = {{VK_INT, "int"}, {VK_FLOAT, "float"}, {VK_BOOL, "bool"}, {VK_STR, "str"},
                 {VK_LIST, "list"}, {VK_TUPLE, "tuple"}, {VK_DICT, "dict"}, {VK_SET, "set"}};
    for (size_t i = 0; i < FL_ARRAY_LEN(types); i++)
        if (types[i].k == o->kind) return fl_env_find(c->builtins, fl_intern_str(&c->in, types[i].name));
    return fl_ev_error(c, a->span, "type() of a %s is not supported", fl_v_type_name(o));
}

static FlValue *b_callable(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("callable", "obj", 1);
    FlValue *o = v[0] ? v[0] : c->none;
    return fl_v_bool(c, o->kind == VK_FUNC || o->kind == VK_BUILTIN || o->kind == VK_CLASS ||
                            (o->kind == VK_RECORD && o->rec.cls && fl_ev_class_attr(o->rec.cls, "__call__")));
}

/* round(x): the nearest int, halves to even (Python 3); round(x, n): a float of n decimals. */
static FlValue *b_round(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("round", "x ndigits=", 2);
    if (!fl_v_is_num(v[0])) return fl_ev_error(c, a->span, "round() needs a number, found %s", fl_v_type_name(v[0]));
    if (v[0]->kind != VK_FLOAT && !v[1]) return fl_v_int(c, v[0]->kind == VK_INT ? v[0]->i : v[0]->b);
    double x = fl_v_num(v[0]);
    if (v[1]) {
        int64_t n;
        if (!fl_ev_want_int(c, v[1], "round() ndigits", a->span, &n)) return c->error;
        if (n > 300 || n < -300) return fl_v_float(c, n > 0 ? x : 0.0);
        double p = pow(10.0, (double)n);
        return fl_v_float(c, nearbyint(x * p) / p);
    }
    double r = nearbyint(x); /* the default rounding mode rounds halves to even */
    if (!isfinite(r) || fabs(r) >= 9.2e18) return fl_ev_error(c, a->span, "cannot round %g to an int", x);
    return fl_v_int(c, (int64_t)r);
}

static FlValue *b_object(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("object", "", 0);
    (void)v;
    return fl_v_record(c, "object");
}

/* ------------------------------------------------------------------ functools */

static FlValue *f_reduce(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("reduce", "fn seq initial=", 3);
    FlValue *l = fl_ev_as_list(c, v[1], a->span);
    if (l->kind == VK_ERROR) return l;
    bool has_init = a->npos + a->nkw >= 3; /* an explicit None is an initial value too */
    if (!has_init && !l->list.len) return fl_ev_error(c, a->span, "reduce() of an empty sequence with no initial value");
    FlValue *acc = has_init ? (v[2] ? v[2] : c->none) : l->list.items[0];
    for (size_t i = has_init ? 0 : 1; i < l->list.len; i++) {
        FlValue *args[2] = {acc, l->list.items[i]};
        acc = fl_ev_call_simple(c, v[0], a->span, args, 2);
        if (acc->kind == VK_ERROR) return acc;
    }
    return acc;
}

/* A partial application: calling it calls fn with the stored arguments, then the new ones (a
 * keyword given again replaces the stored one). */
static FlValue *partial_call(Ctx *c, FlValue *self, CallArgs *a) {
    FlValue *fn = fl_map_find_str(&self->rec.attrs->map, "func");
    FlValue *args = fl_map_find_str(&self->rec.attrs->map, "args");
    FlValue *kw = fl_map_find_str(&self->rec.attrs->map, "keywords");
    size_t np = args->list.len + a->npos, nk = kw->dict.len + a->nkw;
    FlValue **pos = fl_arena_alloc(&c->arena, (np + 1) * sizeof *pos);
    if (args->list.len) memcpy(pos, args->list.items, args->list.len * sizeof *pos); /* NULL when none */
    if (a->npos) memcpy(pos + args->list.len, a->pos, a->npos * sizeof *pos);
    const char **kn = fl_arena_alloc(&c->arena, (nk + 1) * sizeof *kn);
    FlValue **kv = fl_arena_alloc(&c->arena, (nk + 1) * sizeof *kv);
    size_t m = 0;
    for (size_t i = 0; i < kw->dict.len; i++) {
        const char *name = fl_intern_str(&c->in, kw->dict.keys[i]->str.s);
        bool again = false;
        for (size_t j = 0; j < a->nkw; j++) again = again || fl_intern_str(&c->in, a->kwnames[j]) == name;
        if (again) continue;
        kn[m] = name;
        kv[m++] = kw->dict.vals[i];
    }
    for (size_t j = 0; j < a->nkw; j++) {
        kn[m] = a->kwnames[j];
        kv[m++] = a->kwvals[j];
    }
    CallArgs b = {pos, np, kn, kv, m, a->span, NULL};
    return fl_ev_call(c, fn, &b);
}

static FlValue *f_partial(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("partial", "func *args **keywords", 3);
    FlValue *p = fl_v_record(c, "functools.partial");
    fl_v_rec_set(c, p, "func", v[0]);
    fl_v_rec_set(c, p, "args", v[1]);
    fl_v_rec_set(c, p, "keywords", v[2]);
    return fl_v_builtin(c, "partial", partial_call, p);
}

/* ------------------------------------------------------------------ math */

/* A number argument of a math function as a double; false after reporting. */
static bool num_arg(Ctx *c, FlValue *x, const char *fname, FlSpan sp, double *out) {
    if (!fl_v_is_num(x)) {
        fl_ev_error(c, sp, "math.%s() needs a number, found %s", fname, fl_v_type_name(x));
        return false;
    }
    *out = fl_v_num(x);
    return true;
}

/* The value of a math function of one number, or a "math domain error". */
static FlValue *math1(Ctx *c, CallArgs *a, const char *fname, double (*fn)(double), double lo, bool open) {
    ARGS(fname, "x", 1);
    if (fl_ev_is_driver_var(c, v[0])) return fl_ev_driver_math(c, fname, v[0], a->span); /* at run time */
    double x;
    if (!num_arg(c, v[0], fname, a->span, &x)) return c->error;
    if (open ? !(x > lo) : !(x >= lo)) return fl_ev_error(c, a->span, "math.%s(): math domain error (%g)", fname, x);
    return fl_v_float(c, fn(x));
}
static FlValue *m_sqrt(Ctx *c, FlValue *self, CallArgs *a) { return math1(c, a, "sqrt", sqrt, 0, false); }
static FlValue *m_exp(Ctx *c, FlValue *self, CallArgs *a) { return math1(c, a, "exp", exp, -INFINITY, false); }
static FlValue *m_log2(Ctx *c, FlValue *self, CallArgs *a) { return math1(c, a, "log2", log2, 0, true); }
static FlValue *m_log10(Ctx *c, FlValue *self, CallArgs *a) { return math1(c, a, "log10", log10, 0, true); }
static FlValue *m_sin(Ctx *c, FlValue *self, CallArgs *a) { return math1(c, a, "sin", sin, -INFINITY, false); }
static FlValue *m_cos(Ctx *c, FlValue *self, CallArgs *a) { return math1(c, a, "cos", cos, -INFINITY, false); }
static FlValue *m_tan(Ctx *c, FlValue *self, CallArgs *a) { return math1(c, a, "tan", tan, -INFINITY, false); }
static FlValue *m_tanh(Ctx *c, FlValue *self, CallArgs *a) { return math1(c, a, "tanh", tanh, -INFINITY, false); }
static FlValue *m_fabs(Ctx *c, FlValue *self, CallArgs *a) { return math1(c, a, "fabs", fabs, -INFINITY, false); }

static FlValue *m_log(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("log", "x base=", 2);
    if (fl_ev_is_driver_var(c, v[0]) && !v[1]) return fl_ev_driver_math(c, "log", v[0], a->span); /* at run time */
    double x, b = 0;
    if (!num_arg(c, v[0], "log", a->span, &x) || (v[1] && !num_arg(c, v[1], "log", a->span, &b))) return c->error;
    if (!(x > 0) || (v[1] && (!(b > 0) || b == 1))) return fl_ev_error(c, a->span, "math.log(): math domain error");
    return fl_v_float(c, v[1] ? log(x) / log(b) : log(x));
}

static FlValue *m_pow(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("pow", "x y", 2);
    double x, y;
    if (!num_arg(c, v[0], "pow", a->span, &x) || !num_arg(c, v[1], "pow", a->span, &y)) return c->error;
    if ((x < 0 && y != floor(y)) || (x == 0 && y < 0)) return fl_ev_error(c, a->span, "math.pow(): math domain error");
    return fl_v_float(c, pow(x, y));
}

/* floor and ceil give ints, as Python 3's do. */
static FlValue *round_to_int(Ctx *c, CallArgs *a, bool up) {
    const char *fname = up ? "ceil" : "floor";
    ARGS(fname, "x", 1);
    if (v[0]->kind == VK_INT || v[0]->kind == VK_BOOL) return fl_v_int(c, v[0]->kind == VK_INT ? v[0]->i : v[0]->b);
    double x;
    if (!num_arg(c, v[0], fname, a->span, &x)) return c->error;
    x = up ? ceil(x) : floor(x);
    if (!isfinite(x) || fabs(x) >= 9.2e18) return fl_ev_error(c, a->span, "math.%s(): cannot convert %g to an int", fname, x);
    return fl_v_int(c, (int64_t)x);
}
static FlValue *m_floor(Ctx *c, FlValue *self, CallArgs *a) { return round_to_int(c, a, false); }
static FlValue *m_ceil(Ctx *c, FlValue *self, CallArgs *a) { return round_to_int(c, a, true); }

static FlValue *m_isnan(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("isnan", "x", 1);
    if (fl_ev_is_driver_var(c, v[0])) return fl_ev_driver_math(c, "isnan", v[0], a->span); /* at run time */
    double x;
    return num_arg(c, v[0], "isnan", a->span, &x) ? fl_v_bool(c, isnan(x)) : c->error;
}
static FlValue *m_isinf(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("isinf", "x", 1);
    if (fl_ev_is_driver_var(c, v[0])) return fl_ev_driver_math(c, "isinf", v[0], a->span); /* at run time */
    double x;
    return num_arg(c, v[0], "isinf", a->span, &x) ? fl_v_bool(c, isinf(x)) : c->error;
}

static const NativeFn math_fns[] = {
    {"sqrt", m_sqrt}, {"exp", m_exp},   {"log", m_log},     {"log2", m_log2},   {"log10", m_log10},
    {"pow", m_pow},   {"floor", m_floor}, {"ceil", m_ceil}, {"sin", m_sin},     {"cos", m_cos},
    {"tan", m_tan},   {"tanh", m_tanh}, {"fabs", m_fabs},   {"isnan", m_isnan},
    {"isinf", m_isinf},
};
static const NativeFn functools_fns[] = {{"reduce", f_reduce}, {"partial", f_partial}};

Module *fl_ev_module_of_fns(Ctx *c, const char *name, const NativeFn *fns, size_t n) {
    Module *m = fl_arena_alloc(&c->arena, sizeof *m);
    m->name = fl_intern_str(&c->in, name);
    m->dir = ".";
    m->is_stdlib = true;
    m->globals = fl_env_new(c, NULL);
    for (size_t i = 0; i < n; i++)
        fl_env_set(m->globals, fl_intern_str(&c->in, fns[i].name), fl_v_builtin(c, fns[i].name, fns[i].fn, NULL));
    FlValue *mv = fl_v_new(c, VK_MODULE);
    mv->mod = m;
    fl_map_put_str(&c->modules, m->name, mv);
    return m;
}

static const NativeFn lib_builtins[] = {
    {"isinstance", b_isinstance}, {"hasattr", b_hasattr}, {"setattr", b_setattr}, {"sorted", b_sorted}, {"locals", b_locals},
    {"map", b_map},               {"filter", b_filter},   {"any", b_any},         {"all", b_all},
    {"object", b_object},         {"type", b_type},       {"callable", b_callable}, {"round", b_round},
};

void fl_ev_pylib_install(Ctx *c) {
    for (size_t i = 0; i < FL_ARRAY_LEN(lib_builtins); i++)
        fl_env_set(c->builtins, fl_intern_str(&c->in, lib_builtins[i].name),
                   fl_v_builtin(c, lib_builtins[i].name, lib_builtins[i].fn, NULL));
    Module *m = fl_ev_module_of_fns(c, "math", math_fns, FL_ARRAY_LEN(math_fns));
    fl_env_set(m->globals, fl_intern_str(&c->in, "pi"), fl_v_float(c, M_PI));
    fl_env_set(m->globals, fl_intern_str(&c->in, "e"), fl_v_float(c, M_E));
    fl_env_set(m->globals, fl_intern_str(&c->in, "inf"), fl_v_float(c, INFINITY));
    fl_env_set(m->globals, fl_intern_str(&c->in, "nan"), fl_v_float(c, NAN));
    fl_ev_module_of_fns(c, "functools", functools_fns, FL_ARRAY_LEN(functools_fns));
    /* `from __future__ import print_function, division`: what Python 3 does anyway */
    static const char *const features[] = {"print_function", "division", "absolute_import", "unicode_literals"};
    Module *fut = fl_ev_module_of_fns(c, "__future__", NULL, 0);
    for (size_t i = 0; i < FL_ARRAY_LEN(features); i++)
        fl_env_set(fut->globals, fl_intern_str(&c->in, features[i]), c->vtrue);
    fl_ev_pyclass_install(c);
    fl_ev_pyset_install(c);
}
