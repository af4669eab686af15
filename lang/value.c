/* value.c: the compile-time values of the evaluator and the scopes that bind them.
 *
 * FlValue constructors (numbers, strings, lists and tuples, dicts, Vars, builtins, records),
 * equality and the exact order of numbers, type names, Python's repr, and Env (a name -> value
 * map with a parent).
 *
 * Invariants: every value and every Env lives in the compilation's arena and is never freed one
 * by one (an Env's map is finalised at the end of the compilation through Ctx.envs); None, True,
 * False and ERROR are single values of the Ctx, so they may be compared by pointer; dicts keep
 * their keys in insertion order and find a key as == would (a scan while the dict is small, then
 * through an index from each key's bytes: a program's dict of every parameter is looked up once
 * per layer); == and repr recurse at most FL_MAX_NESTING levels (repr shows a container met again
 * inside itself as [...], as Python does), so no value overflows the C stack.
 */
#include "lang/eval_impl.h"

#include <math.h>
#include <stddef.h>
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
FlValue *fl_v_list(Ctx *c, ValKind k) {
    FlValue *l = fl_v_new(c, k);
    l->list.rt_depth = c->rt_depth;
    l->list.rt_block = c->rt_depth && fl_ev_in_driver(c) ? c->b.block : NULL;
    return l;
}

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
static ptrdiff_t dict_find(FlValue *d, FlValue *k, int depth);

/* Appends to out the bytes that stand for key k in a dict's index (a str key itself is indexed by
 * its text, in a map of its own; a str in a tuple goes through here): two keys get the same bytes
 * exactly when == says they are equal (a number by its value, so that 1, 1.0 and True agree; a
 * str by its text; a Var by its interned name; a tuple by its items; a value of a kind that ==
 * compares by identity by its address). False for a key that has no such bytes: a list or a
 * dict (they may change), a NaN (equal only to itself), a tuple holding one of those or nested
 * deeper than DICT_KEY_NESTING; such keys are found by a scan with ==. */
#define DICT_KEY_NESTING 32
#define DICT_INDEX_MIN 16
static bool key_bytes(const FlValue *k, FlBuf *out, int depth) {
    switch (k->kind) {
    case VK_NONE: fl_buf_putc(out, 'n'); return true;
    case VK_BOOL:
    case VK_INT:
    case VK_FLOAT: {
        double f = k->kind == VK_FLOAT ? k->f : 0;
        if (k->kind == VK_FLOAT && isnan(f)) return false;
        int64_t i;
        if (k->kind != VK_FLOAT) {
            i = k->kind == VK_INT ? k->i : k->b;
        } else if (f == trunc(f) && f >= -9223372036854775808.0 && f < 9223372036854775808.0) {
            i = (int64_t)f; /* an integral float equals the int of its value (0.0 and -0.0 too) */
        } else {
            fl_buf_putc(out, 'f');
            fl_buf_append(out, (const char *)&f, sizeof f);
            return true;
        }
        fl_buf_putc(out, 'i');
        fl_buf_append(out, (const char *)&i, sizeof i);
        return true;
    }
    case VK_STR:
        fl_buf_putc(out, 's');
        fl_buf_append(out, (const char *)&k->str.n, sizeof k->str.n);
        fl_buf_append(out, k->str.s, k->str.n);
        return true;
    case VK_TUPLE:
        if (depth >= DICT_KEY_NESTING) return false;
        fl_buf_putc(out, 't');
        fl_buf_append(out, (const char *)&k->list.len, sizeof k->list.len);
        for (size_t i = 0; i < k->list.len; i++)
            if (!key_bytes(k->list.items[i], out, depth + 1)) return false;
        return true;
    case VK_LIST:
    case VK_SET:
    case VK_DICT: return false;
    case VK_VAR:
        fl_buf_putc(out, 'v');
        fl_buf_append(out, (const char *)&k->var.name, sizeof k->var.name);
        return true;
    case VK_FUNC: case VK_BUILTIN: case VK_MODULE: case VK_RECORD: case VK_GUARD: case VK_PROGRAM:
    case VK_READER: case VK_ERROR: case VK_CLASS:
        fl_buf_putc(out, 'p');
        fl_buf_append(out, (const char *)&k, sizeof k);
        return true;
    case VK_COUNT: break;
    }
    FL_UNREACHABLE();
}

/* The map of d's index that holds key k and k's bytes there (*key, *klen): a str by its own text
 * (it stays in the arena), any other key by key_bytes in *b. NULL when k has no bytes. */
static FlMap *index_slot(FlValue *d, const FlValue *k, FlBuf *b, const char **key, size_t *klen) {
    if (k->kind == VK_STR) {
        *key = k->str.s;
        *klen = k->str.n;
        return d->dict.by_str;
    }
    if (!key_bytes(k, b, 0)) return NULL;
    *key = b->data;
    *klen = b->len;
    return d->dict.by_bytes;
}

/* Enters key i of dict d into its index, if the key has bytes. */
static void index_key(Ctx *c, FlValue *d, size_t i) {
    FlBuf b = {0};
    const char *key;
    size_t klen;
    FlMap *m = index_slot(d, d->dict.keys[i], &b, &key, &klen);
    if (m) fl_map_put(m, m == d->dict.by_str ? key : fl_arena_strndup(&c->arena, key, klen), klen,
                      (void *)(uintptr_t)(i + 1));
    fl_buf_free(&b);
}

/* Builds d's index, once it has DICT_INDEX_MIN keys: a smaller dict is scanned. */
static void make_index(Ctx *c, FlValue *d) {
    /* Envs of their own hold the maps, so that they are finalised with the others */
    d->dict.by_str = &fl_env_new(c, NULL)->map;
    d->dict.by_bytes = &fl_env_new(c, NULL)->map;
    for (size_t i = 0; i < d->dict.len; i++) index_key(c, d, i);
}

FlValue *fl_v_dict_get(FlValue *d, FlValue *k) {
    ptrdiff_t i = dict_find(d, k, 0);
    return i >= 0 ? d->dict.vals[i] : NULL;
}
void fl_v_dict_set(Ctx *c, FlValue *d, FlValue *k, FlValue *v) {
    ptrdiff_t i = dict_find(d, k, 0);
    if (i >= 0) {
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
    if (d->dict.by_str) index_key(c, d, d->dict.len - 1);
    else if (d->dict.len == DICT_INDEX_MIN) make_index(c, d);
}
void fl_v_dict_remove(FlValue *d, size_t i) {
    FL_ASSERT(i < d->dict.len);
    if (d->dict.by_str) { /* key i leaves the index; the keys after it move down one place */
        FlBuf b = {0};
        const char *key;
        size_t klen;
        FlMap *m = index_slot(d, d->dict.keys[i], &b, &key, &klen);
        if (m) fl_map_remove(m, key, klen);
        fl_buf_free(&b);
        FlMap *both[2] = {d->dict.by_str, d->dict.by_bytes};
        for (int j = 0; j < 2; j++)
            for (size_t s = 0; s < both[j]->cap; s++) {
                if (!fl_map_slot_live(both[j], s)) continue;
                uintptr_t at = (uintptr_t)both[j]->buckets[s].val;
                if (at > i + 1) both[j]->buckets[s].val = (void *)(at - 1);
            }
    }
    size_t rest = d->dict.len - i - 1;
    memmove(d->dict.keys + i, d->dict.keys + i + 1, rest * sizeof(FlValue *));
    memmove(d->dict.vals + i, d->dict.vals + i + 1, rest * sizeof(FlValue *));
    d->dict.len--;
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

FlValue *fl_v_rec_get(FlValue *r, const char *name) {
    return r && r->kind == VK_RECORD && r->rec.attrs ? fl_map_find_str(&r->rec.attrs->map, name) : NULL;
}

bool fl_v_is_rec(const FlValue *v, const char *type) {
    return v && v->kind == VK_RECORD && !v->rec.cls && v->rec.type && strcmp(v->rec.type, type) == 0;
}

bool fl_v_is_num(const FlValue *v) {
    return v->kind == VK_INT || v->kind == VK_FLOAT || v->kind == VK_BOOL;
}
double fl_v_num(const FlValue *v) {
    return v->kind == VK_INT ? (double)v->i : v->kind == VK_BOOL ? (double)v->b : v->f;
}
bool fl_v_is_seq(const FlValue *v) { return v->kind == VK_LIST || v->kind == VK_TUPLE; }
bool fl_ev_is_var(const FlValue *v) { return v->kind == VK_VAR; }

/* Python's comparison of two numbers (int, float, bool), exact for ints: -1, 0, 1, or 2 when a
 * NaN makes them unordered. An int and a float compare by value, not through a double. */
int fl_v_num_cmp(const FlValue *a, const FlValue *b) {
    bool ai = a->kind != VK_FLOAT, bi = b->kind != VK_FLOAT;
    if (ai && bi) {
        int64_t x = a->kind == VK_INT ? a->i : a->b, y = b->kind == VK_INT ? b->i : b->b;
        return x < y ? -1 : x > y;
    }
    if (!ai && !bi) return isnan(a->f) || isnan(b->f) ? 2 : a->f < b->f ? -1 : a->f > b->f;
    if (!ai) {
        int r = fl_v_num_cmp(b, a);
        return r == 2 ? 2 : -r;
    }
    int64_t x = a->kind == VK_INT ? a->i : a->b;
    double f = b->f;
    if (isnan(f)) return 2;
    if (f >= 9223372036854775808.0) return -1; /* 2**63: above every int64 */
    if (f < -9223372036854775808.0) return 1;
    double t = trunc(f);
    int64_t y = (int64_t)t;
    if (x != y) return x < y ? -1 : 1;
    return f > t ? -1 : f < t;
}

/* 1 equal, 0 not, -1 nested deeper than FL_MAX_NESTING (a cycle, or a very deep value). */
static int eq(FlValue *a, FlValue *b, int depth);

/* The index of key k in dict d, -1 if absent, -2 when comparing nests too deeply. */
static ptrdiff_t dict_find(FlValue *d, FlValue *k, int depth) {
    if (d->dict.by_str) {
        FlBuf b = {0};
        const char *key;
        size_t klen;
        FlMap *m = index_slot(d, k, &b, &key, &klen);
        uintptr_t at = m ? (uintptr_t)fl_map_find(m, key, klen) : 0;
        fl_buf_free(&b);
        if (m) return (ptrdiff_t)at - 1; /* a key with bytes equals only keys with the same bytes */
    }
    for (size_t i = 0; i < d->dict.len; i++) {
        int r = eq(d->dict.keys[i], k, depth);
        if (r != 0) return r < 0 ? -2 : (ptrdiff_t)i;
    }
    return -1;
}

static int eq(FlValue *a, FlValue *b, int depth) {
    if (a == b) return 1;
    if (fl_v_is_num(a) && fl_v_is_num(b)) return fl_v_num_cmp(a, b) == 0;
    if (a->kind != b->kind) return 0;
    bool container = fl_v_is_seq(a) || a->kind == VK_DICT || a->kind == VK_SET;
    if (container && depth >= FL_MAX_NESTING) return -1;
    switch (a->kind) {
    case VK_NONE: return 1;
    case VK_STR: return a->str.n == b->str.n && memcmp(a->str.s, b->str.s, a->str.n) == 0;
    case VK_LIST:
    case VK_TUPLE:
        if (a->list.len != b->list.len) return 0;
        for (size_t i = 0; i < a->list.len; i++) {
            int r = eq(a->list.items[i], b->list.items[i], depth + 1);
            if (r != 1) return r;
        }
        return 1;
    case VK_SET: /* the same elements, in any order */
        if (a->list.len != b->list.len) return 0;
        for (size_t i = 0; i < a->list.len; i++) {
            int r = 0;
            for (size_t j = 0; j < b->list.len && r == 0; j++) r = eq(a->list.items[i], b->list.items[j], depth + 1);
            if (r != 1) return r;
        }
        return 1;
    case VK_DICT: /* the same keys, mapped to equal values, in any order */
        if (a->dict.len != b->dict.len) return 0;
        for (size_t i = 0; i < a->dict.len; i++) {
            ptrdiff_t j = dict_find(b, a->dict.keys[i], depth + 1);
            if (j < 0) return j == -2 ? -1 : 0;
            int r = eq(a->dict.vals[i], b->dict.vals[j], depth + 1);
            if (r != 1) return r;
        }
        return 1;
    case VK_VAR: return a->var.name == b->var.name;
    case VK_BOOL: case VK_INT: case VK_FLOAT: case VK_FUNC: case VK_BUILTIN: case VK_MODULE:
    case VK_RECORD: case VK_GUARD: case VK_PROGRAM: case VK_READER: case VK_ERROR:
    case VK_CLASS: case VK_COUNT: break;
    }
    return 0;
}

bool fl_v_equal(Ctx *c, FlValue *a, FlValue *b, FlSpan sp, bool *ok) {
    int r = eq(a, b, 0);
    *ok = r >= 0;
    if (r < 0)
        fl_ev_error(c, sp, "cannot compare: the values are nested too deeply (more than %d levels, "
                           "or a list that contains itself)", FL_MAX_NESTING);
    return r == 1;
}

const char *fl_v_type_name(const FlValue *v) {
    switch (v->kind) {
    case VK_NONE: return "None";
    case VK_BOOL: return "bool";
    case VK_INT: return "int";
    case VK_FLOAT: return "float";
    case VK_STR: return "str";
    case VK_LIST: return v->list.rt_kind == RT_TENSOR_ARRAY ? "LoDTensorArray" : "list";
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
    case VK_CLASS: return "type";
    case VK_SET: return "set";
    case VK_COUNT: break;
    }
    return "?";
}

/* The containers being printed, outermost first: one met again is a cycle. */
typedef struct Repr {
    FlValue *path[FL_MAX_NESTING];
    int depth;
    bool too_deep, too_long;
} Repr;

static void repr(Ctx *c, FlValue *v, FlBuf *out, Repr *r);

/* An element of a container as Python shows it: strings quoted. */
static void repr_item(Ctx *c, FlValue *x, FlBuf *out, Repr *r) {
    if (x->kind == VK_STR) fl_buf_putc(out, '\'');
    repr(c, x, out, r);
    if (x->kind == VK_STR) fl_buf_putc(out, '\'');
}

/* A list, tuple or dict: [...], (...) or {...} when it is already being printed, as Python
 * shows a container that holds itself. */
static void repr_container(Ctx *c, FlValue *v, FlBuf *out, Repr *r) {
    const char *open = v->kind == VK_LIST ? "[" : v->kind == VK_TUPLE ? "(" : "{";
    const char *close = v->kind == VK_LIST ? "]" : v->kind == VK_TUPLE ? ")" : "}";
    for (int i = 0; i < r->depth; i++)
        if (r->path[i] == v) {
            fl_buf_printf(out, "%s...%s", open, close);
            return;
        }
    if (r->depth == FL_MAX_NESTING) {
        r->too_deep = true;
        return;
    }
    r->path[r->depth++] = v;
    fl_buf_puts(out, open);
    size_t n = v->kind == VK_DICT ? v->dict.len : v->list.len;
    for (size_t i = 0; i < n && !r->too_deep && !r->too_long; i++) {
        if (i) fl_buf_puts(out, ", ");
        if (v->kind == VK_DICT) {
            repr_item(c, v->dict.keys[i], out, r);
            fl_buf_puts(out, ": ");
            repr_item(c, v->dict.vals[i], out, r);
        } else {
            repr_item(c, v->list.items[i], out, r);
        }
        if (out->len > FL_MAX_LEN) r->too_long = true;
    }
    if (v->kind == VK_TUPLE && n == 1) fl_buf_putc(out, ',');
    fl_buf_puts(out, close);
    r->depth--;
}

/* Python's repr of a float: the fewest digits that read back as the same double, in fixed
 * notation for exponents -4..15 (with ".0" when whole) and as d.ddde+XX otherwise. */
static void float_repr(double f, FlBuf *out) {
    if (isnan(f)) {
        fl_buf_puts(out, "nan");
        return;
    }
    if (isinf(f)) {
        fl_buf_puts(out, f < 0 ? "-inf" : "inf");
        return;
    }
    char e[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, f);
        if (strtod(e, NULL) == f) break;
    }
    /* e: [-]d[.ddd]e[+-]XX: the sign, the digits and the decimal exponent */
    const char *q = e;
    bool neg = *q == '-';
    if (neg) q++;
    char digits[24];
    int nd = 0;
    for (; *q && *q != 'e'; q++)
        if (*q != '.') digits[nd++] = *q;
    digits[nd] = 0;
    int exp = atoi(q + 1);
    while (nd > 1 && digits[nd - 1] == '0') digits[--nd] = 0;
    if (neg) fl_buf_putc(out, '-');
    if (exp < -4 || exp >= 16) {
        fl_buf_putc(out, digits[0]);
        if (nd > 1) fl_buf_printf(out, ".%s", digits + 1);
        fl_buf_printf(out, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    } else if (exp < 0) {
        fl_buf_puts(out, "0.");
        for (int i = 0; i < -exp - 1; i++) fl_buf_putc(out, '0');
        fl_buf_puts(out, digits);
    } else {
        for (int i = 0; i <= exp; i++) fl_buf_putc(out, i < nd ? digits[i] : '0');
        fl_buf_putc(out, '.');
        fl_buf_puts(out, nd > exp + 1 ? digits + exp + 1 : "0");
    }
}

static void repr(Ctx *c, FlValue *v, FlBuf *out, Repr *r) {
    if (r->too_deep || r->too_long) return;
    switch (v->kind) {
    case VK_NONE: fl_buf_puts(out, "None"); break;
    case VK_BOOL: fl_buf_puts(out, v->b ? "True" : "False"); break;
    case VK_INT: fl_buf_printf(out, "%lld", (long long)v->i); break;
    case VK_FLOAT: float_repr(v->f, out); break;
    case VK_STR: fl_buf_append(out, v->str.s, v->str.n); break;
    case VK_SET:
        if (v->list.len == 0) {
            fl_buf_puts(out, "set()");
            break;
        }
        repr_container(c, v, out, r);
        break;
    case VK_LIST:
    case VK_TUPLE:
    case VK_DICT: repr_container(c, v, out, r); break;
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
    case VK_CLASS: fl_buf_printf(out, "<class '%s'>", v->cls.name); break;
    case VK_RECORD: case VK_GUARD: case VK_PROGRAM: case VK_READER: case VK_ERROR: case VK_COUNT: fl_buf_printf(out, "<%s>", fl_v_type_name(v)); break;
    }
    if (out->len > FL_MAX_LEN) r->too_long = true;
}

/* 0, or why the text was cut short: 1 nested too deeply, 2 too long. */
static int repr_top(Ctx *c, FlValue *v, FlBuf *out) {
    Repr *r = fl_xcalloc(1, sizeof *r); /* 8 KB: off the stack */
    repr(c, v, out, r);
    int why = r->too_deep ? 1 : r->too_long ? 2 : 0;
    free(r);
    return why;
}

bool fl_v_repr(Ctx *c, FlValue *v, FlBuf *out) { return repr_top(c, v, out) == 0; }

bool fl_v_repr_at(Ctx *c, FlValue *v, FlBuf *out, FlSpan sp) {
    if (fl_ev_is_rt_list(v)) {
        fl_ev_error(c, sp, "a list filled at run time is printed as numpy.array(l) (its elements are known only "
                           "when the driver runs)");
        return false;
    }
    int why = repr_top(c, v, out);
    if (why == 1)
        fl_ev_error(c, sp, "cannot convert to a string: the value is nested too deeply (more than %d levels)",
                    FL_MAX_NESTING);
    else if (why == 2)
        fl_ev_error(c, sp, "cannot convert to a string: the text would be longer than %d characters",
                    FL_MAX_LEN);
    return why == 0;
}

/* ------------------------------------------------------------------ environments */

Env *fl_env_new(Ctx *c, Env *parent) {
    Env *e = fl_arena_alloc(&c->arena, sizeof *e);
    fl_map_init(&e->map);
    e->parent = parent;
    FL_VEC_PUSH(&c->envs, e);
    return e;
}
void fl_env_share(Env *e) {
    for (; e && !e->shared; e = e->parent) e->shared = true; /* a shared Env's parents are */
}
/* name in e or its parents, then (unless NULL) in `then` or its parents; the name is hashed once. */
static FlValue *env_find(Env *e, Env *then, const char *name) {
    size_t n = strlen(name);
    uint64_t h = fl_hash_bytes(name, n);
    for (int pass = 0; pass < 2; pass++, e = then)
        for (; e; e = e->parent) {
            Env *to = e->redirect ? fl_map_find_hashed(e->redirect, name, n, h) : NULL;
            if (to) e = to;
            FlValue *v = fl_map_find_hashed(&e->map, name, n, h);
            if (v) return v;
        }
    return NULL;
}
FlValue *fl_env_find(Env *e, const char *name) { return env_find(e, NULL, name); }
FlValue *fl_env_find_then(Env *e, Env *then, const char *name) { return env_find(e, then, name); }
/* Notes in e's journal, if any, that name is about to be written. */
static void journal_note(Env *e, const char *name) {
    EnvJournal *j = e->journal;
    if (!j) return;
    size_t n = strlen(name);
    if (fl_map_find(&j->old, name, n)) return;
    FlValue *old = fl_map_find(&e->map, name, n);
    fl_map_put(&j->old, name, n, old ? (void *)old : (void *)&j->old);
    FL_VEC_PUSH(&j->names, name);
}
void fl_env_set(Env *e, const char *name, FlValue *v) {
    Env *to = e->redirect ? fl_map_find_str(e->redirect, name) : NULL;
    Env *t = to ? to : e;
    journal_note(t, name);
    fl_map_put_str(&t->map, name, v);
}
void fl_env_remove(Env *e, const char *name) {
    journal_note(e, name);
    fl_map_remove(&e->map, name, strlen(name));
}
void fl_env_journal_begin(Env *e, EnvJournal *j) {
    fl_map_init(&j->old);
    j->names.data = NULL;
    j->names.len = j->names.cap = 0;
    j->outer = e->journal;
    e->journal = j;
}
void fl_env_journal_end(Env *e, EnvJournal *j) {
    FL_ASSERT(e->journal == j);
    EnvJournal *o = e->journal = j->outer;
    /* a name j saw first written was not written before j began, since o began: its value
     * then is the one o must remember */
    for (size_t i = 0; o && i < j->names.len; i++) {
        const char *name = j->names.data[i];
        size_t n = strlen(name);
        if (fl_map_find(&o->old, name, n)) continue;
        void *old = fl_map_find(&j->old, name, n);
        fl_map_put(&o->old, name, n, old == (void *)&j->old ? (void *)&o->old : old);
        FL_VEC_PUSH(&o->names, name);
    }
    fl_map_fini(&j->old);
    FL_VEC_FREE(&j->names);
}
bool fl_env_journal_old(const EnvJournal *j, const char *name, FlValue **old) {
    void *o = fl_map_find_str(&j->old, name);
    *old = o == (const void *)&j->old ? NULL : o;
    return o != NULL;
}
void fl_env_redirect(Ctx *c, Env *e, const char *name, Env *to) {
    if (!e->redirect) {
        /* an Env of its own holds the map, so that it is finalised with the others */
        e->redirect = &fl_env_new(c, NULL)->map;
    }
    fl_map_put_str(e->redirect, name, to);
}
