/* value.c: the compile-time values of the evaluator and the scopes that bind them.
 *
 * FlValue constructors (numbers, strings, lists and tuples, dicts, Vars, builtins, records),
 * equality, type names, Python's repr, and Env (a name -> value map with a parent).
 *
 * Invariants: every value and every Env lives in the compilation's arena and is never freed one
 * by one (an Env's map is finalised at the end of the compilation through Ctx.envs); None, True,
 * False and ERROR are single values of the Ctx, so they may be compared by pointer; dicts keep
 * their keys in insertion order and compare keys with fl_v_equal (a linear scan: dicts of a
 * program are small).
 */
#include "lang/eval_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ values */

FlValue *fl_v_new(Ctx *c, ValKind k) {
    FlValue *v = fl_arena_alloc(&c->arena, sizeof *v);
    v->kind = k;
    return v;
}
FlValue *fl_v_int(Ctx *c, int64_t i) {
    FlValue *v = fl_v_new(c, VK_INT);
    v->i = i;
    return v;
}
FlValue *fl_v_float(Ctx *c, double f) {
    FlValue *v = fl_v_new(c, VK_FLOAT);
    v->f = f;
    return v;
}
FlValue *fl_v_bool(Ctx *c, bool b) { return b ? c->vtrue : c->vfalse; }
FlValue *fl_v_str(Ctx *c, const char *s, size_t n) {
    FlValue *v = fl_v_new(c, VK_STR);
    v->str.s = fl_arena_strndup(&c->arena, s, n);
    v->str.n = n;
    return v;
}
FlValue *fl_v_cstr(Ctx *c, const char *s) { return fl_v_str(c, s, strlen(s)); }
FlValue *fl_v_list(Ctx *c, ValKind k) { return fl_v_new(c, k); }

static void arena_grow(Ctx *c, void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return;
    size_t nc = *cap ? *cap * 2 : 4;
    while (nc < need) nc *= 2;
    void *np = fl_arena_alloc(&c->arena, fl_mul_size(nc, elem));
    if (*p) memcpy(np, *p, *cap * elem);
    *p = np;
    *cap = nc;
}

void fl_v_list_push(Ctx *c, FlValue *l, FlValue *v) {
    arena_grow(c, (void **)&l->list.items, &l->list.cap, l->list.len + 1, sizeof(FlValue *));
    l->list.items[l->list.len++] = v;
}
FlValue *fl_v_dict(Ctx *c) { return fl_v_new(c, VK_DICT); }
FlValue *fl_v_dict_get(FlValue *d, FlValue *k) {
    for (size_t i = 0; i < d->dict.len; i++)
        if (fl_v_equal(d->dict.keys[i], k)) return d->dict.vals[i];
    return NULL;
}
void fl_v_dict_set(Ctx *c, FlValue *d, FlValue *k, FlValue *v) {
    for (size_t i = 0; i < d->dict.len; i++)
        if (fl_v_equal(d->dict.keys[i], k)) {
            d->dict.vals[i] = v;
            return;
        }
    if (d->dict.len == d->dict.cap) { /* keys and vals grow together */
        size_t cap = d->dict.cap;
        arena_grow(c, (void **)&d->dict.keys, &cap, d->dict.len + 1, sizeof(FlValue *));
        arena_grow(c, (void **)&d->dict.vals, &d->dict.cap, d->dict.len + 1, sizeof(FlValue *));
    }
    d->dict.keys[d->dict.len] = k;
    d->dict.vals[d->dict.len++] = v;
}
FlValue *fl_v_var(Ctx *c, const char *name) {
    FlValue *v = fl_v_new(c, VK_VAR);
    v->var.name = fl_intern_str(&c->in, name);
    v->var.prog = c->b.main;
    return v;
}
FlValue *fl_v_builtin(Ctx *c, const char *name, BuiltinFn fn, FlValue *self) {
    FlValue *v = fl_v_new(c, VK_BUILTIN);
    v->builtin.name = name;
    v->builtin.fn = fn;
    v->builtin.self = self;
    return v;
}
FlValue *fl_v_record(Ctx *c, const char *type) {
    FlValue *v = fl_v_new(c, VK_RECORD);
    v->rec.type = type;
    v->rec.attrs = fl_env_new(c, NULL);
    return v;
}
void fl_v_rec_set(Ctx *c, FlValue *rec, const char *name, FlValue *v) {
    fl_env_set(rec->rec.attrs, fl_intern_str(&c->in, name), v);
}

bool fl_v_is_num(const FlValue *v) {
    return v->kind == VK_INT || v->kind == VK_FLOAT || v->kind == VK_BOOL;
}
double fl_v_num(const FlValue *v) {
    return v->kind == VK_INT ? (double)v->i : v->kind == VK_BOOL ? (double)v->b : v->f;
}
bool fl_v_is_seq(const FlValue *v) { return v->kind == VK_LIST || v->kind == VK_TUPLE; }
bool fl_ev_is_var(const FlValue *v) { return v->kind == VK_VAR; }

bool fl_v_equal(FlValue *a, FlValue *b) {
    if (a == b) return true;
    bool an = a->kind == VK_INT || a->kind == VK_FLOAT || a->kind == VK_BOOL;
    bool bn = b->kind == VK_INT || b->kind == VK_FLOAT || b->kind == VK_BOOL;
    if (an && bn) {
        double x = a->kind == VK_INT ? (double)a->i : a->kind == VK_BOOL ? a->b : a->f;
        double y = b->kind == VK_INT ? (double)b->i : b->kind == VK_BOOL ? b->b : b->f;
        return x == y;
    }
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case VK_NONE: return true;
    case VK_STR: return a->str.n == b->str.n && memcmp(a->str.s, b->str.s, a->str.n) == 0;
    case VK_LIST:
    case VK_TUPLE:
        if (a->list.len != b->list.len) return false;
        for (size_t i = 0; i < a->list.len; i++)
            if (!fl_v_equal(a->list.items[i], b->list.items[i])) return false;
        return true;
    case VK_VAR: return a->var.name == b->var.name;
    case VK_BOOL: case VK_INT: case VK_FLOAT: case VK_DICT: case VK_FUNC: case VK_BUILTIN:
    case VK_MODULE: case VK_RECORD: case VK_GUARD: case VK_PROGRAM: case VK_READER: case VK_ERROR:
    case VK_COUNT: break;
    }
    return false;
}

const char *fl_v_type_name(const FlValue *v) {
    switch (v->kind) {
    case VK_NONE: return "None";
    case VK_BOOL: return "bool";
    case VK_INT: return "int";
    case VK_FLOAT: return "float";
    case VK_STR: return "str";
    case VK_LIST: return "list";
    case VK_TUPLE: return "tuple";
    case VK_DICT: return "dict";
    case VK_FUNC: return "function";
    case VK_BUILTIN: return "builtin function";
    case VK_MODULE: return "module";
    case VK_VAR: return "Var";
    case VK_RECORD: return v->rec.type;
    case VK_GUARD: return "guard";
    case VK_PROGRAM: return "Program";
    case VK_READER: return "reader";
    case VK_ERROR: return "error";
    case VK_COUNT: break;
    }
    return "?";
}

/* An element of a container as Python shows it: strings quoted. */
static void repr_item(Ctx *c, FlValue *x, FlBuf *out) {
    if (x->kind == VK_STR) fl_buf_putc(out, '\'');
    fl_v_repr(c, x, out);
    if (x->kind == VK_STR) fl_buf_putc(out, '\'');
}

void fl_v_repr(Ctx *c, FlValue *v, FlBuf *out) {
    switch (v->kind) {
    case VK_NONE: fl_buf_puts(out, "None"); break;
    case VK_BOOL: fl_buf_puts(out, v->b ? "True" : "False"); break;
    case VK_INT: fl_buf_printf(out, "%lld", (long long)v->i); break;
    case VK_FLOAT: {
        char tmp[64];
        snprintf(tmp, sizeof tmp, "%.17g", v->f);
        if (!strpbrk(tmp, ".eEn")) strcat(tmp, ".0");
        fl_buf_puts(out, tmp);
        break;
    }
    case VK_STR: fl_buf_append(out, v->str.s, v->str.n); break;
    case VK_LIST:
    case VK_TUPLE:
        fl_buf_putc(out, v->kind == VK_LIST ? '[' : '(');
        for (size_t i = 0; i < v->list.len; i++) {
            if (i) fl_buf_puts(out, ", ");
            repr_item(c, v->list.items[i], out);
        }
        if (v->kind == VK_TUPLE && v->list.len == 1) fl_buf_putc(out, ',');
        fl_buf_putc(out, v->kind == VK_LIST ? ']' : ')');
        break;
    case VK_DICT:
        fl_buf_putc(out, '{');
        for (size_t i = 0; i < v->dict.len; i++) {
            if (i) fl_buf_puts(out, ", ");
            repr_item(c, v->dict.keys[i], out);
            fl_buf_puts(out, ": ");
            repr_item(c, v->dict.vals[i], out);
        }
        fl_buf_putc(out, '}');
        break;
    case VK_VAR: {
        FlVarDesc *d = fl_ev_var_desc(c, v);
        fl_buf_printf(out, "Var(%s", v->var.name);
        if (d) {
            fl_buf_printf(out, ", %s", fl_dtype_name(d->dtype));
            fl_buf_putc(out, ' ');
            fl_ir_shape_str(d->ndim, d->shape, out);
        }
        fl_buf_putc(out, ')');
        break;
    }
    case VK_FUNC: fl_buf_printf(out, "<function %s>", v->func.def->def.name ? v->func.def->def.name : "lambda"); break;
    case VK_BUILTIN: fl_buf_printf(out, "<builtin %s>", v->builtin.name); break;
    case VK_MODULE: fl_buf_printf(out, "<module %s>", v->mod->name); break;
    case VK_RECORD: case VK_GUARD: case VK_PROGRAM: case VK_READER: case VK_ERROR: case VK_COUNT: fl_buf_printf(out, "<%s>", fl_v_type_name(v)); break;
    }
}

/* ------------------------------------------------------------------ environments */

Env *fl_env_new(Ctx *c, Env *parent) {
    Env *e = fl_arena_alloc(&c->arena, sizeof *e);
    fl_map_init(&e->map);
    e->parent = parent;
    FL_VEC_PUSH(&c->envs, e);
    return e;
}
FlValue *fl_env_find(Env *e, const char *name) {
    for (; e; e = e->parent) {
        FlValue *v = fl_map_find_str(&e->map, name);
        if (v) return v;
    }
    return NULL;
}
void fl_env_set(Env *e, const char *name, FlValue *v) { fl_map_put_str(&e->map, name, v); }
