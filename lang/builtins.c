/* builtins.c: the Python builtins of the compile-time interpreter (len, range, zip, enumerate,
 * print, str, int, float, bool, list, tuple, dict, min, max, abs, sum, reversed, getattr), the
 * methods of lists, dicts and strings, and the attributes and methods of Vars (shape, dtype,
 * name; a channel's send, recv and close).
 *
 * How: each builtin is a BuiltinFn that binds its arguments against a parameter spec (ARGS,
 * fl_ev_bind) and returns a value or ERROR after a diagnostic; methods are builtins bound to
 * their object (FlValue.builtin.self). Invariants: builtins run at compile time and never
 * touch the IR except through the op builder (a channel method appends a channel op).
 */
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
    case VK_TUPLE: return fl_v_int(c, (int64_t)o->list.len);
    case VK_DICT: return fl_v_int(c, (int64_t)o->dict.len);
    case VK_RECORD: {
        FlValue *l = fl_map_find_str(&o->rec.attrs->map, "__len__");
        if (l) return l;
        break;
    }
    case VK_VAR: {
        if (fl_ev_is_channel(c, o)) return fl_ev_chan_len(c, o, false, a->span); /* its shape is its elements' */
        FlVarDesc *d = fl_ev_var_desc(c, o);
        if (d && d->ndim > 0 && d->shape[0] >= 0) return fl_v_int(c, d->shape[0]);
        return fl_ev_error(c, a->span, "len() of a Var whose first dimension is only known at run time");
    }
    case VK_NONE: case VK_BOOL: case VK_INT: case VK_FLOAT: case VK_FUNC: case VK_BUILTIN:
    case VK_MODULE: case VK_GUARD: case VK_PROGRAM: case VK_READER: case VK_ERROR: case VK_COUNT: break;
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
    if (fl_v_is_seq(o)) return o;
    FlValue *l = fl_v_list(c, VK_LIST);
    if (o->kind == VK_DICT) {
        for (size_t i = 0; i < o->dict.len; i++) fl_v_list_push(c, l, o->dict.keys[i]);
        return l;
    }
    if (o->kind == VK_STR) {
        for (size_t i = 0; i < o->str.n; i++) fl_v_list_push(c, l, fl_v_str(c, o->str.s + i, 1));
        return l;
    }
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

static FlValue *b_print(Ctx *c, FlValue *self, CallArgs *a) {
    FlBuf b = {0};
    bool ok = true;
    for (size_t i = 0; i < a->npos && ok; i++) {
        if (i) fl_buf_putc(&b, ' ');
        ok = fl_v_repr_at(c, a->pos[i], &b, a->span);
    }
    if (ok) printf("%s\n", fl_buf_str(&b));
    fl_buf_free(&b);
    return ok ? c->none : c->error;
}

static FlValue *b_str(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("str", "obj=", 1);
    if (!v[0]) return fl_v_cstr(c, "");
    FlBuf b = {0};
    FlValue *r = fl_v_repr_at(c, v[0], &b, a->span) ? fl_v_str(c, fl_buf_str(&b), b.len) : c->error;
    fl_buf_free(&b);
    return r;
}

static FlValue *b_int(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("int", "x=", 1);
    if (!v[0]) return fl_v_int(c, 0);
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

static FlValue *minmax(Ctx *c, CallArgs *a, bool is_max) {
    FlValue *l;
    if (a->npos == 1) l = fl_ev_as_list(c, a->pos[0], a->span);
    else {
        l = fl_v_list(c, VK_LIST);
        for (size_t i = 0; i < a->npos; i++) fl_v_list_push(c, l, a->pos[i]);
    }
    if (l->kind == VK_ERROR) return l;
    if (!l->list.len) return fl_ev_error(c, a->span, "%s() of an empty sequence", is_max ? "max" : "min");
    FlValue *best = l->list.items[0];
    for (size_t i = 1; i < l->list.len; i++) {
        FlValue *x = l->list.items[i];
        if (!fl_v_is_num(x) || !fl_v_is_num(best)) return fl_ev_error(c, a->span, "%s() needs numbers", is_max ? "max" : "min");
        int k = fl_v_num_cmp(x, best);
        if (k != 2 && (is_max ? k > 0 : k < 0)) best = x;
    }
    return best;
}
static FlValue *b_min(Ctx *c, FlValue *self, CallArgs *a) { return minmax(c, a, false); }
static FlValue *b_max(Ctx *c, FlValue *self, CallArgs *a) { return minmax(c, a, true); }

static FlValue *b_abs(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("abs", "x", 1);
    if (v[0]->kind == VK_INT) {
        if (v[0]->i == INT64_MIN) return fl_ev_error(c, a->span, "integer overflow in abs() (ints are 64-bit)");
        return fl_v_int(c, v[0]->i < 0 ? -v[0]->i : v[0]->i);
    }
    if (v[0]->kind == VK_BOOL) return fl_v_int(c, v[0]->b);
    if (v[0]->kind == VK_FLOAT) return fl_v_float(c, fabs(v[0]->f));
    return fl_ev_error(c, a->span, "abs() of a %s", fl_v_type_name(v[0]));
}

/* Ints add up exactly in int64 (an overflow is an error); from the first float on, the sum is a
 * float, as in Python. */
static FlValue *b_sum(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("sum", "seq start=", 2);
    FlValue *l = fl_ev_as_list(c, v[0], a->span);
    if (l->kind == VK_ERROR) return l;
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
    if (v[0]->kind == VK_RECORD) {
        FlValue *r = fl_map_find_str(&v[0]->rec.attrs->map, v[1]->str.s);
        if (r) return r;
        if (v[2]) return v[2];
    } else if (v[0]->kind == VK_MODULE) {
        FlValue *r = fl_map_find_str(&v[0]->mod->globals->map, v[1]->str.s);
        if (r) return r;
        if (v[2]) return v[2];
    }
    return fl_ev_getattr(c, v[0], v[1]->str.s, a->span);
}

/* ------------------------------------------------------------------ methods of plain values */

static FlValue *m_append(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("append", "x", 1);
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
static FlValue *m_format(Ctx *c, FlValue *self, CallArgs *a) {
    FlBuf b = {0};
    size_t k = 0;
    for (size_t i = 0; i < self->str.n; i++) {
        if (self->str.s[i] == '{' && i + 1 < self->str.n && self->str.s[i + 1] == '}') {
            if (k >= a->npos) {
                fl_buf_free(&b);
                return fl_ev_error(c, a->span, "format() has more '{}' than arguments");
            }
            if (!fl_v_repr_at(c, a->pos[k++], &b, a->span)) {
                fl_buf_free(&b);
                return c->error;
            }
            i++;
        } else {
            fl_buf_putc(&b, self->str.s[i]);
        }
    }
    FlValue *r = fl_v_str(c, fl_buf_str(&b), b.len);
    fl_buf_free(&b);
    return r;
}

FlValue *fl_ev_value_method(Ctx *c, FlValue *obj, const char *name, FlSpan sp) {
    static const struct {
        ValKind k;
        const char *name;
        BuiltinFn fn;
    } methods[] = {
        {VK_LIST, "append", m_append}, {VK_LIST, "extend", m_extend}, {VK_LIST, "pop", m_pop},
        {VK_DICT, "get", m_get},       {VK_DICT, "keys", m_keys},     {VK_DICT, "values", m_values},
        {VK_DICT, "items", m_items},   {VK_STR, "join", m_join},      {VK_STR, "startswith", m_startswith},
        {VK_STR, "endswith", m_endswith}, {VK_STR, "format", m_format},
    };
    if (obj->kind == VK_PROGRAM) return fl_ev_program_method(c, obj, name, sp);
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
    if (fl_v_is_num(x)) x = fl_ev_const_var(c, fl_v_num(x), chd ? chd->dtype : FL_DT_FLOAT32, a->span);
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

FlValue *fl_ev_var_method(Ctx *c, FlValue *var, const char *name, FlSpan sp) {
    FlVarDesc *d = fl_ev_var_desc(c, var);
    if (!d) return fl_ev_error(c, sp, "var '%s' is not visible here", var->var.name);
    if (strcmp(name, "name") == 0) return fl_v_cstr(c, var->var.name);
    if (strcmp(name, "dtype") == 0) return fl_v_cstr(c, fl_dtype_name(d->dtype));
    if (strcmp(name, "persistable") == 0) return fl_v_bool(c, d->persistable);
    if (strcmp(name, "stop_gradient") == 0) return fl_v_bool(c, d->stop_gradient);
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
    return fl_ev_error(c, sp, "a Var has no attribute '%s' (it has name, shape, dtype%s)", name,
                       is_chan ? ", send, recv, close" : "");
}
bool fl_ev_var_set(Ctx *c, FlValue *var, const char *name, FlValue *v, FlSpan sp) {
    FlVarDesc *d = fl_ev_var_desc(c, var);
    if (!d) {
        fl_ev_error(c, sp, "var '%s' is not visible here", var->var.name);
        return false;
    }
    if (strcmp(name, "stop_gradient") != 0) {
        fl_ev_error(c, sp, "cannot set attribute '%s' of a Var (only stop_gradient)", name);
        return false;
    }
    if (v->kind != VK_BOOL) {
        fl_ev_error(c, sp, "%s must be True or False, found %s", name, fl_v_type_name(v));
        return false;
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
    {"print", b_print}, {"str", b_str},     {"int", b_int},     {"float", b_float},
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
}
