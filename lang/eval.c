/* eval.c: the compile-time interpreter. It walks the AST of a module, evaluating plain values
 * as Python would and turning every operation on a Var into ops of the current block.
 *
 * Layout: values and environments; errors and locations; the op builder (fl_ev_op: slots,
 * attributes, output vars, shape inference at the user's line); expressions; calls; statements;
 * runtime control flow (conditional_block, while, for over a channel, go, parallel_for, select);
 * the compile entry points.
 *
 * Runtime control flow: a body that becomes a sub-block is evaluated with the current block set
 * to the sub-block. Names that the body rebinds to Vars are carried out: an `assign` at the end
 * of the sub-block writes the new value into the var the name had before (or, for a new name,
 * into a fresh var of the home block: the block around the outermost runtime if or loop), and
 * the name is bound to that outer var again. That is what makes `i = i + 1` in a `while` body a
 * loop-carried variable that the condition and the code after the loop see. break and continue
 * of a runtime loop lower to flag vars (RtLoop in eval_impl.h).
 */
#define _GNU_SOURCE /* memmem */
#include "lang/eval_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/backward.h"
#include "compiler/infer.h"
#include "compiler/ir/rules.h"
#include "compiler/ops.h"
#include "compiler/verify.h"

#define MAX_DEPTH 180

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
    default: return false;
    }
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
    default: fl_buf_printf(out, "<%s>", fl_v_type_name(v)); break;
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


/* ------------------------------------------------------------------ errors and locations */

FlSpan fl_ev_user_span(Ctx *c, FlSpan sp) { return c->have_err_span ? c->err_span : sp; }

FlValue *fl_ev_error(Ctx *c, FlSpan sp, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    FlBuf msg = {0};
    fl_buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    fl_diag_error(&c->diag, fl_ev_user_span(c, sp), "%s", fl_buf_str(&msg));
    fl_buf_free(&msg);
    return c->error;
}

FlLoc fl_ev_loc(Ctx *c, FlSpan sp) {
    sp = fl_ev_user_span(c, sp);
    FlLoc loc = FL_LOC_NONE;
    const FlSourceFile *f = fl_sources_file(&c->sources, sp.file);
    if (!f) return loc;
    while (c->src_map.len <= sp.file) FL_VEC_PUSH(&c->src_map, -1);
    if (c->src_map.data[sp.file] < 0) {
        c->src_map.data[sp.file] = (int32_t)c->bundle->source_paths.len;
        FL_VEC_PUSH(&c->bundle->source_paths, fl_xstrdup(f->path));
    }
    int line, col, eline, ecol;
    fl_sources_linecol(&c->sources, sp.file, sp.start, &line, &col);
    fl_sources_linecol(&c->sources, sp.file, sp.end > sp.start ? sp.end - 1 : sp.start, &eline, &ecol);
    loc.file = c->src_map.data[sp.file];
    loc.line = line;
    loc.col = col;
    loc.len = eline == line ? ecol - col + 1 : 1;
    return loc;
}

/* ------------------------------------------------------------------ vars and ops */

FlVarDesc *fl_ev_var_desc(Ctx *c, FlValue *v) {
    if (v->kind != VK_VAR) return NULL;
    FlVarDesc *d = fl_ir_var_lookup(c->b.main, c->b.block, v->var.name);
    if (!d && v->var.prog != c->b.main) {
        /* a var of another program (program_guard): look in its global block */
        d = fl_ir_var_find(fl_ir_block(v->var.prog, 0), v->var.name);
    }
    return d;
}

bool fl_ev_is_channel(Ctx *c, FlValue *v) {
    FlVarDesc *d = fl_ev_var_desc(c, v);
    return d && d->kind == FL_VAR_CHANNEL;
}

const char *fl_ev_unique(Ctx *c, const char *prefix) {
    FlMap *m = c->unique_stack.len ? c->unique_stack.data[c->unique_stack.len - 1] : &c->unique;
    const char *key = fl_intern_str(&c->in, prefix);
    int64_t *n = fl_map_find_str(m, key);
    if (!n) {
        n = fl_arena_alloc(&c->arena, sizeof *n);
        fl_map_put_str(m, key, n);
    }
    for (;;) {
        char *name = fl_arena_printf(&c->arena, "%s_%lld", prefix, (long long)(*n)++);
        if (!fl_ir_var_lookup(c->b.main, c->b.block, name) && !fl_ir_var_find(fl_ir_block(c->b.main, 0), name))
            return fl_intern_str(&c->in, name);
    }
}

FlVarDesc *fl_ev_new_var(Ctx *c, FlBlock *b, const char *name, FlSpan sp) {
    FlVarDesc *d = fl_ir_var_add(b, name);
    if (!d) return NULL;
    d->loc = fl_ev_loc(c, sp);
    return d;
}

FlOpDesc *fl_ev_op_raw(Ctx *c, FlBlock *b, const char *type, FlSpan sp) {
    FlOpDesc *op = fl_ir_op_append(b, type);
    op->loc = fl_ev_loc(c, sp);
    return op;
}

bool fl_ev_infer(Ctx *c, FlBlock *b, FlOpDesc *op, FlSpan sp) {
    FlErr e;
    fl_ops_fill_defaults(op);
    if (fl_ops_check(op, &e) != FL_OK || fl_infer_op(c->b.main, b, op, &e) != FL_OK) {
        fl_ev_error(c, sp, "%s", e.msg);
        return false;
    }
    return true;
}

static bool dtype_from_value(Ctx *c, FlValue *v, FlDType *dt) {
    if (v->kind == VK_INT && v->i >= 0 && v->i < FL_DT_COUNT) {
        *dt = (FlDType)v->i;
        return true;
    }
    if (v->kind != VK_STR) return false;
    for (int t = 0; t < FL_DT_COUNT; t++)
        if (strcmp(v->str.s, fl_dtype_name((FlDType)t)) == 0) {
            *dt = (FlDType)t;
            return true;
        }
    return false;
}

static bool value_is_num(const FlValue *v) {
    return v->kind == VK_INT || v->kind == VK_FLOAT || v->kind == VK_BOOL;
}
static double num_of(const FlValue *v) {
    return v->kind == VK_INT ? (double)v->i : v->kind == VK_BOOL ? (double)v->b : v->f;
}

/* Sets attribute `info` of op from a compile-time value; reports a type error. */
static bool set_attr(Ctx *c, FlOpDesc *op, const FlAttrInfo *info, FlValue *v, FlSpan sp) {
    const char *n = info->name;
    switch (info->type) {
    case FL_ATTR_INT:
        if (strstr(n, "dtype")) {
            FlDType dt;
            if (!dtype_from_value(c, v, &dt)) break;
            fl_ir_op_set_int(op, n, dt);
            return true;
        }
        if (v->kind != VK_INT && v->kind != VK_BOOL) break;
        fl_ir_op_set_int(op, n, v->kind == VK_INT ? v->i : v->b);
        return true;
    case FL_ATTR_FLOAT:
        if (!value_is_num(v)) break;
        fl_ir_op_set_float(op, n, num_of(v));
        return true;
    case FL_ATTR_BOOL:
        if (v->kind != VK_BOOL && v->kind != VK_INT) break;
        fl_ir_op_set_bool(op, n, v->kind == VK_BOOL ? v->b : v->i != 0);
        return true;
    case FL_ATTR_STRING:
        if (v->kind != VK_STR) break;
        fl_ir_op_set_string(op, n, v->str.s);
        return true;
    case FL_ATTR_INTS: {
        if (v->kind == VK_INT) {
            fl_ir_op_set_ints(op, n, &v->i, 1);
            return true;
        }
        if (!fl_v_is_seq(v)) break;
        int64_t *a = fl_arena_alloc(&c->arena, (v->list.len + 1) * sizeof *a);
        for (size_t i = 0; i < v->list.len; i++) {
            if (v->list.items[i]->kind != VK_INT) goto bad;
            a[i] = v->list.items[i]->i;
        }
        fl_ir_op_set_ints(op, n, a, v->list.len);
        return true;
    }
    case FL_ATTR_FLOATS: {
        if (!fl_v_is_seq(v)) break;
        double *a = fl_arena_alloc(&c->arena, (v->list.len + 1) * sizeof *a);
        for (size_t i = 0; i < v->list.len; i++) {
            if (!value_is_num(v->list.items[i])) goto bad;
            a[i] = num_of(v->list.items[i]);
        }
        fl_ir_op_set_floats(op, n, a, v->list.len);
        return true;
    }
    case FL_ATTR_STRINGS: {
        if (!fl_v_is_seq(v)) break;
        const char **a = fl_arena_alloc(&c->arena, (v->list.len + 1) * sizeof *a);
        for (size_t i = 0; i < v->list.len; i++) {
            if (v->list.items[i]->kind != VK_STR) goto bad;
            a[i] = v->list.items[i]->str.s;
        }
        fl_ir_op_set_strings(op, n, a, v->list.len);
        return true;
    }
    case FL_ATTR_BLOCK:
    case FL_ATTR_BLOCKS:
    case FL_ATTR_TYPE_COUNT: break;
    }
bad:;
    static const char *tn[] = {"an int", "a float", "a string", "a bool", "a list of ints",
                               "a list of floats", "a list of strings", "a block", "blocks"};
    fl_ev_error(c, sp, "%s: attribute '%s' must be %s, found %s", op->type, n,
                info->type < FL_ATTR_TYPE_COUNT ? tn[info->type] : "?", fl_v_type_name(v));
    return false;
}

FlValue *fl_ev_const_var(Ctx *c, double v, FlDType dt, FlSpan sp) {
    const char *name = fl_ev_unique(c, "fill_constant");
    name = fl_arena_printf(&c->arena, "%s.tmp_0", name);
    FlVarDesc *d = fl_ev_new_var(c, c->b.block, name, sp);
    d->stop_gradient = true;
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "fill_constant", sp);
    fl_ir_op_add_output(op, "Out", name);
    int64_t one = 1;
    fl_ir_op_set_ints(op, "shape", &one, 1);
    fl_ir_op_set_float(op, "value", v);
    fl_ir_op_set_int(op, "dtype", dt);
    if (!fl_ev_infer(c, c->b.block, op, sp)) return c->error;
    return fl_v_var(c, name);
}

/* Adds the vars of value v (a Var or a list of Vars) to slot `slot` of op. Numbers become
 * constant vars of dtype dt. */
static bool add_slot_vars(Ctx *c, FlOpDesc *op, bool input, const FlSlotInfo *si, FlValue *v,
                          FlDType dt, FlSpan sp) {
    FlValue *one[1] = {v};
    FlValue **items = one;
    size_t n = 1;
    if (fl_v_is_seq(v)) {
        items = v->list.items;
        n = v->list.len;
        if (!si->list && n != 1) {
            fl_ev_error(c, sp, "%s: input '%s' takes one Var, found a %s of %zu", op->type,
                        si->name, fl_v_type_name(v), n);
            return false;
        }
    }
    if (input) fl_ir_op_add_input_slot(op, si->name);
    else fl_ir_op_add_output_slot(op, si->name);
    for (size_t i = 0; i < n; i++) {
        FlValue *x = items[i];
        if (x->kind == VK_ERROR) return false;
        if (input && value_is_num(x)) x = fl_ev_const_var(c, num_of(x), dt, sp);
        if (x->kind == VK_ERROR) return false;
        if (x->kind != VK_VAR) {
            fl_ev_error(c, sp, "%s: '%s' must be a Var, found %s", op->type, si->name,
                        fl_v_type_name(x));
            return false;
        }
        if (!fl_ev_var_desc(c, x)) {
            fl_ev_error(c, sp, "%s: var '%s' is not visible here (it belongs to another block)",
                        op->type, x->var.name);
            return false;
        }
        if (input) fl_ir_op_add_input(op, si->name, x->var.name);
        else fl_ir_op_add_output(op, si->name, x->var.name);
    }
    return true;
}

FlValue *fl_ev_op(Ctx *c, const char *type, CallArgs *a, FlSpan sp) {
    const FlOpInfo *info = fl_ops_find(type);
    if (!info) return fl_ev_error(c, sp, "unknown op '%s'", type);
    FlBlock *b = c->b.block;
    FlOpDesc *op = fl_ir_op_append(b, type);
    op->loc = fl_ev_loc(c, sp);
    size_t pos = b->ops.len - 1;
    FlValue *given_out[FL_OPS_MAX_SLOTS] = {0};
    int64_t n_out = -1;
    FlDType dt = FL_DT_FLOAT32;
    /* the dtype numbers become: the first input var's dtype */
    for (size_t k = 0; k < a->nkw; k++) {
        FlValue *v = a->kwvals[k];
        if (fl_ops_in_slot(info, a->kwnames[k]) && v->kind == VK_VAR) {
            FlVarDesc *d = fl_ev_var_desc(c, v);
            if (d) dt = d->dtype;
            break;
        }
    }
    for (size_t k = 0; k < a->nkw; k++) {
        const char *kn = a->kwnames[k];
        FlValue *v = a->kwvals[k];
        if (v->kind == VK_ERROR) goto fail;
        const FlSlotInfo *si;
        const FlAttrInfo *ai;
        if (strcmp(kn, "_n_out") == 0 && v->kind == VK_INT) {
            n_out = v->i;
        } else if ((si = fl_ops_in_slot(info, kn))) {
            if (v->kind == VK_NONE) continue;
            if (!add_slot_vars(c, op, true, si, v, dt, sp)) goto fail;
        } else if ((si = fl_ops_out_slot(info, kn))) {
            given_out[si - info->outs] = v;
        } else if ((ai = fl_ops_attr(info, kn))) {
            if (v->kind == VK_NONE) continue;
            if (!set_attr(c, op, ai, v, sp)) goto fail;
        } else {
            fl_ev_error(c, sp, "op '%s' has no input, output or attribute '%s'", type, kn);
            goto fail;
        }
    }
    if (a->npos) {
        fl_ev_error(c, sp, "op '%s' takes keyword arguments only", type);
        goto fail;
    }
    /* outputs: given ones, else fresh vars */
    const char *base = NULL;
    int tmp = 0;
    FlValue *outs[FL_OPS_MAX_SLOTS] = {0};
    for (int s = 0; s < info->nouts; s++) {
        const FlSlotInfo *si = &info->outs[s];
        if (given_out[s]) {
            if (!add_slot_vars(c, op, false, si, given_out[s], dt, sp)) goto fail;
            outs[s] = given_out[s];
            continue;
        }
        if (si->optional) continue;
        if (!base) base = fl_ev_unique(c, type);
        int64_t count = 1;
        if (si->list) {
            count = n_out;
            if (count < 0) {
                FlAttr *num = fl_ir_op_attr(op, "num");
                FlAttr *sec = fl_ir_op_attr(op, "sections");
                count = sec && sec->n ? (int64_t)sec->n : num ? num->i : 1;
            }
        }
        FlValue *lst = si->list ? fl_v_list(c, VK_LIST) : NULL;
        fl_ir_op_add_output_slot(op, si->name);
        for (int64_t i = 0; i < count; i++) {
            const char *name = fl_arena_printf(&c->arena, "%s.tmp_%d", base, tmp++);
            FlVarDesc *d = fl_ev_new_var(c, b, name, sp);
            FL_ASSERT(d);
            fl_ir_op_add_output(op, si->name, name);
            FlValue *vv = fl_v_var(c, name);
            if (lst) fl_v_list_push(c, lst, vv);
            else outs[s] = vv;
        }
        if (lst) outs[s] = lst;
    }
    if (!fl_ev_infer(c, b, op, sp)) goto fail;
    /* stop_gradient propagates: an op whose inputs all stop gradients makes outputs that do */
    bool all_stop = true, any_in = false;
    for (size_t s = 0; s < op->ins.len; s++)
        for (size_t i = 0; i < op->ins.data[s].nargs; i++) {
            FlVarDesc *d = fl_ir_var_lookup(c->b.main, b, op->ins.data[s].args[i]);
            any_in = true;
            if (d && !d->stop_gradient) all_stop = false;
        }
    if (any_in && all_stop && !(info->flags & FL_OPF_OPTIMIZE))
        for (size_t s = 0; s < op->outs.len; s++)
            for (size_t i = 0; i < op->outs.data[s].nargs; i++) {
                FlVarDesc *d = fl_ir_var_find(b, op->outs.data[s].args[i]);
                if (d && !d->persistable) d->stop_gradient = true;
            }
    if (info->nouts == 1) return outs[0] ? outs[0] : c->none;
    FlValue *t = fl_v_list(c, VK_TUPLE);
    for (int s = 0; s < info->nouts; s++)
        if (!info->outs[s].optional || outs[s]) fl_v_list_push(c, t, outs[s] ? outs[s] : c->none);
    return t;
fail:
    fl_ir_op_remove(b, pos);
    return c->error;
}

static FlValue *op2(Ctx *c, const char *type, FlValue *x, FlValue *y, FlSpan sp) {
    const char *names[2] = {"X", "Y"};
    FlValue *vals[2] = {x, y};
    CallArgs a = {.kwnames = names, .kwvals = vals, .nkw = y ? 2 : 1, .span = sp};
    return fl_ev_op(c, type, &a, sp);
}

static FlValue *scale_op(Ctx *c, FlValue *x, double scale, double bias, FlSpan sp) {
    const char *names[3] = {"X", "scale", "bias"};
    FlValue *vals[3] = {x, fl_v_float(c, scale), fl_v_float(c, bias)};
    CallArgs a = {.kwnames = names, .kwvals = vals, .nkw = 3, .span = sp};
    return fl_ev_op(c, "scale", &a, sp);
}

static const char *cmp_op_name(int op) {
    switch (op) {
    case FL_CMP_EQ: return "equal";
    case FL_CMP_NE: return "not_equal";
    case FL_CMP_LT: return "less_than";
    case FL_CMP_LE: return "less_equal";
    case FL_CMP_GT: return "greater_than";
    case FL_CMP_GE: return "greater_equal";
    default: return NULL;
    }
}

/* An arithmetic binary operation where at least one side is a Var. op >= 100 marks a
 * comparison (op - 100 is the FlCmpOp). */
FlValue *fl_ev_binop_var(Ctx *c, int op, FlValue *l, FlValue *r, FlSpan sp) {
    FlValue *var = l->kind == VK_VAR ? l : r;
    FlVarDesc *d = fl_ev_var_desc(c, var);
    if (!d) return fl_ev_error(c, sp, "var '%s' is not visible here", var->var.name);
    if (d->kind == FL_VAR_CHANNEL)
        return fl_ev_error(c, sp, "arithmetic on a channel ('%s')", var->var.name);
    bool is_float = d->dtype == FL_DT_FLOAT32 || d->dtype == FL_DT_FLOAT64;
    if (op >= 100) {
        const char *name = cmp_op_name(op - 100);
        if (!name) return fl_ev_error(c, sp, "this comparison is not defined on Vars");
        if (value_is_num(l)) l = fl_ev_const_var(c, num_of(l), d->dtype, sp);
        if (value_is_num(r)) r = fl_ev_const_var(c, num_of(r), d->dtype, sp);
        if (l->kind != VK_VAR || r->kind != VK_VAR)
            return l->kind == VK_ERROR || r->kind == VK_ERROR
                       ? c->error
                       : fl_ev_error(c, sp, "cannot compare a Var with %s",
                                     fl_v_type_name(l->kind == VK_VAR ? r : l));
        return op2(c, name, l, r, sp);
    }
    FlValue *other = var == l ? r : l;
    if (other->kind != VK_VAR && !value_is_num(other))
        return fl_ev_error(c, sp, "unsupported operand types for arithmetic: %s and %s",
                           fl_v_type_name(l), fl_v_type_name(r));
    if (other->kind != VK_VAR && is_float) {
        double s = num_of(other);
        bool var_left = var == l;
        switch (op) {
        case FL_OP_ADD: return scale_op(c, var, 1, s, sp);
        case FL_OP_SUB: return var_left ? scale_op(c, var, 1, -s, sp) : scale_op(c, var, -1, s, sp);
        case FL_OP_MUL: return scale_op(c, var, s, 0, sp);
        case FL_OP_DIV:
            if (var_left) {
                if (s == 0) return fl_ev_error(c, sp, "division by zero");
                return scale_op(c, var, 1.0 / s, 0, sp);
            }
            break;
        default: break;
        }
    }
    if (value_is_num(l)) l = fl_ev_const_var(c, num_of(l), d->dtype, sp);
    if (value_is_num(r)) r = fl_ev_const_var(c, num_of(r), d->dtype, sp);
    if (l->kind == VK_ERROR || r->kind == VK_ERROR) return c->error;
    static const char *names[FL_BINOP_COUNT] = {
        [FL_OP_ADD] = "elementwise_add", [FL_OP_SUB] = "elementwise_sub",
        [FL_OP_MUL] = "elementwise_mul", [FL_OP_DIV] = "elementwise_div",
        [FL_OP_FLOORDIV] = "elementwise_floordiv", [FL_OP_MOD] = "elementwise_mod",
        [FL_OP_MATMUL] = "matmul", [FL_OP_POW] = "elementwise_pow"};
    return op2(c, names[op], l, r, sp);
}

/* ------------------------------------------------------------------ compile-time arithmetic */

static FlValue *num_binop(Ctx *c, int op, FlValue *l, FlValue *r, FlSpan sp) {
    bool ints = (l->kind == VK_INT || l->kind == VK_BOOL) && (r->kind == VK_INT || r->kind == VK_BOOL);
    if (ints) {
        int64_t a = l->kind == VK_INT ? l->i : l->b, b = r->kind == VK_INT ? r->i : r->b, v = 0;
        switch (op) {
        case FL_OP_ADD:
            if (__builtin_add_overflow(a, b, &v)) goto ovf;
            return fl_v_int(c, v);
        case FL_OP_SUB:
            if (__builtin_sub_overflow(a, b, &v)) goto ovf;
            return fl_v_int(c, v);
        case FL_OP_MUL:
            if (__builtin_mul_overflow(a, b, &v)) goto ovf;
            return fl_v_int(c, v);
        case FL_OP_DIV:
            if (b == 0) return fl_ev_error(c, sp, "division by zero");
            return fl_v_float(c, (double)a / (double)b);
        case FL_OP_FLOORDIV:
        case FL_OP_MOD: {
            if (b == 0) return fl_ev_error(c, sp, op == FL_OP_MOD ? "modulo by zero" : "division by zero");
            if (a == INT64_MIN && b == -1) goto ovf;
            int64_t q = a / b, m = a % b;
            if (m != 0 && ((m < 0) != (b < 0))) {
                q--;
                m += b;
            }
            return fl_v_int(c, op == FL_OP_MOD ? m : q);
        }
        case FL_OP_POW: {
            if (b < 0) return fl_v_float(c, pow((double)a, (double)b));
            int64_t res = 1;
            for (int64_t i = 0; i < b; i++)
                if (__builtin_mul_overflow(res, a, &res)) goto ovf;
            return fl_v_int(c, res);
        }
        case FL_OP_MATMUL: break;
        }
        return fl_ev_error(c, sp, "'@' needs Vars, found two numbers");
    ovf:
        return fl_ev_error(c, sp, "integer overflow in a compile-time expression");
    }
    double a = num_of(l), b = num_of(r);
    switch (op) {
    case FL_OP_ADD: return fl_v_float(c, a + b);
    case FL_OP_SUB: return fl_v_float(c, a - b);
    case FL_OP_MUL: return fl_v_float(c, a * b);
    case FL_OP_DIV:
        if (b == 0) return fl_ev_error(c, sp, "division by zero");
        return fl_v_float(c, a / b);
    case FL_OP_FLOORDIV:
        if (b == 0) return fl_ev_error(c, sp, "division by zero");
        return fl_v_float(c, floor(a / b));
    case FL_OP_MOD:
        if (b == 0) return fl_ev_error(c, sp, "modulo by zero");
        return fl_v_float(c, a - floor(a / b) * b);
    case FL_OP_POW: return fl_v_float(c, pow(a, b));
    case FL_OP_MATMUL: break;
    }
    return fl_ev_error(c, sp, "'@' needs Vars, found two numbers");
}

static const char *binop_sym(int op) {
    static const char *s[] = {"+", "-", "*", "/", "//", "%", "@", "**"};
    return op >= 0 && op < FL_BINOP_COUNT ? s[op] : "?";
}

static FlValue *binop(Ctx *c, int op, FlValue *l, FlValue *r, FlSpan sp) {
    if (l->kind == VK_ERROR || r->kind == VK_ERROR) return c->error;
    if (l->kind == VK_VAR || r->kind == VK_VAR) return fl_ev_binop_var(c, op, l, r, sp);
    if (value_is_num(l) && value_is_num(r)) return num_binop(c, op, l, r, sp);
    if (op == FL_OP_ADD && l->kind == VK_STR && r->kind == VK_STR) {
        FlBuf b = {0};
        fl_buf_append(&b, l->str.s, l->str.n);
        fl_buf_append(&b, r->str.s, r->str.n);
        FlValue *v = fl_v_str(c, fl_buf_str(&b), b.len);
        fl_buf_free(&b);
        return v;
    }
    if (op == FL_OP_ADD && fl_v_is_seq(l) && l->kind == r->kind) {
        FlValue *v = fl_v_list(c, l->kind);
        for (size_t i = 0; i < l->list.len; i++) fl_v_list_push(c, v, l->list.items[i]);
        for (size_t i = 0; i < r->list.len; i++) fl_v_list_push(c, v, r->list.items[i]);
        return v;
    }
    if (op == FL_OP_MUL && (fl_v_is_seq(l) || l->kind == VK_STR) && r->kind == VK_INT) {
        if (r->i > 1000000) return fl_ev_error(c, sp, "repetition count %lld is too large", (long long)r->i);
        if (l->kind == VK_STR) {
            FlBuf b = {0};
            for (int64_t i = 0; i < r->i; i++) fl_buf_append(&b, l->str.s, l->str.n);
            FlValue *v = fl_v_str(c, fl_buf_str(&b), b.len);
            fl_buf_free(&b);
            return v;
        }
        FlValue *v = fl_v_list(c, l->kind);
        for (int64_t k = 0; k < r->i; k++)
            for (size_t i = 0; i < l->list.len; i++) fl_v_list_push(c, v, l->list.items[i]);
        return v;
    }
    if (op == FL_OP_MOD && l->kind == VK_STR) {
        /* "%s" % x and "%d/%s" % (a, b): %s, %d, %f, %g, %r and %% */
        FlValue *args = fl_v_is_seq(r) ? r : NULL;
        size_t ai = 0;
        FlBuf b = {0};
        for (size_t i = 0; i < l->str.n; i++) {
            char ch = l->str.s[i];
            if (ch != '%' || i + 1 >= l->str.n) {
                fl_buf_putc(&b, ch);
                continue;
            }
            char f = l->str.s[++i];
            if (f == '%') {
                fl_buf_putc(&b, '%');
                continue;
            }
            FlValue *x = args ? (ai < args->list.len ? args->list.items[ai++] : NULL) : (ai++ == 0 ? r : NULL);
            if (!x) {
                fl_buf_free(&b);
                return fl_ev_error(c, sp, "not enough arguments for format string");
            }
            if (f == 'd' && value_is_num(x)) fl_buf_printf(&b, "%lld", (long long)num_of(x));
            else if ((f == 'f' || f == 'g') && value_is_num(x)) fl_buf_printf(&b, f == 'f' ? "%f" : "%g", num_of(x));
            else fl_v_repr(c, x, &b);
        }
        FlValue *v = fl_v_str(c, fl_buf_str(&b), b.len);
        fl_buf_free(&b);
        return v;
    }
    return fl_ev_error(c, sp, "unsupported operand types for %s: %s and %s", binop_sym(op),
                       fl_v_type_name(l), fl_v_type_name(r));
}

bool fl_v_truthy(Ctx *c, FlValue *v, FlSpan sp, bool *ok) {
    *ok = true;
    switch (v->kind) {
    case VK_NONE: return false;
    case VK_BOOL: return v->b;
    case VK_INT: return v->i != 0;
    case VK_FLOAT: return v->f != 0;
    case VK_STR: return v->str.n != 0;
    case VK_LIST:
    case VK_TUPLE: return v->list.len != 0;
    case VK_DICT: return v->dict.len != 0;
    case VK_ERROR: *ok = false; return false;
    case VK_VAR:
        fl_ev_error(c, sp, "the truth value of a Var is only known at run time; use it in an "
                           "'if' or 'while' statement");
        *ok = false;
        return false;
    default: return true;
    }
}

static FlValue *compare(Ctx *c, int op, FlValue *l, FlValue *r, FlSpan sp) {
    if (l->kind == VK_ERROR || r->kind == VK_ERROR) return c->error;
    if ((l->kind == VK_VAR || r->kind == VK_VAR) && op != FL_CMP_IS && op != FL_CMP_IS_NOT &&
        op != FL_CMP_IN && op != FL_CMP_NOT_IN)
        return fl_ev_binop_var(c, 100 + op, l, r, sp);
    switch (op) {
    case FL_CMP_EQ: return fl_v_bool(c, fl_v_equal(l, r));
    case FL_CMP_NE: return fl_v_bool(c, !fl_v_equal(l, r));
    case FL_CMP_IS: return fl_v_bool(c, l == r || (l->kind == VK_NONE && r->kind == VK_NONE) || (l->kind == VK_BOOL && r->kind == VK_BOOL && l->b == r->b));
    case FL_CMP_IS_NOT: return fl_v_bool(c, !(l == r || (l->kind == VK_NONE && r->kind == VK_NONE) || (l->kind == VK_BOOL && r->kind == VK_BOOL && l->b == r->b)));
    case FL_CMP_IN:
    case FL_CMP_NOT_IN: {
        bool found = false;
        if (fl_v_is_seq(r)) {
            for (size_t i = 0; i < r->list.len && !found; i++) found = fl_v_equal(l, r->list.items[i]);
        } else if (r->kind == VK_DICT) {
            found = fl_v_dict_get(r, l) != NULL;
        } else if (r->kind == VK_STR && l->kind == VK_STR) {
            found = l->str.n == 0 || (memmem(r->str.s, r->str.n, l->str.s, l->str.n) != NULL);
        } else {
            return fl_ev_error(c, sp, "'in' needs a list, tuple, dict or str on its right, found %s",
                               fl_v_type_name(r));
        }
        return fl_v_bool(c, op == FL_CMP_IN ? found : !found);
    }
    default: break;
    }
    if (value_is_num(l) && value_is_num(r)) {
        double a = num_of(l), b = num_of(r);
        bool res = op == FL_CMP_LT ? a < b : op == FL_CMP_LE ? a <= b : op == FL_CMP_GT ? a > b : a >= b;
        return fl_v_bool(c, res);
    }
    if (l->kind == VK_STR && r->kind == VK_STR) {
        size_t n = l->str.n < r->str.n ? l->str.n : r->str.n;
        int k = memcmp(l->str.s, r->str.s, n);
        if (k == 0) k = l->str.n < r->str.n ? -1 : l->str.n > r->str.n;
        bool res = op == FL_CMP_LT ? k < 0 : op == FL_CMP_LE ? k <= 0 : op == FL_CMP_GT ? k > 0 : k >= 0;
        return fl_v_bool(c, res);
    }
    return fl_ev_error(c, sp, "cannot order %s and %s", fl_v_type_name(l), fl_v_type_name(r));
}

/* ------------------------------------------------------------------ suggestions */

static size_t edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return 99;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t prev = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cur = row[j];
            size_t sub = prev + (a[i - 1] != b[j - 1]);
            size_t m = row[j] + 1 < row[j - 1] + 1 ? row[j] + 1 : row[j - 1] + 1;
            row[j] = sub < m ? sub : m;
            prev = cur;
        }
    }
    return row[lb];
}

/* The closest name visible in e (and its parents, and the builtins) to `name`, when it is close
 * enough to be a likely typo; NULL otherwise. */
const char *fl_ev_suggest(Ctx *c, const char *name, Env *e) {
    const char *best = NULL;
    size_t bd = strlen(name) <= 3 ? 1 : 2;
    bd++;
    for (int pass = 0; pass < 2; pass++)
        for (Env *x = pass ? c->builtins : e; x; x = x->parent)
            for (size_t i = 0; i < x->map.cap; i++) {
                if (!fl_map_slot_live(&x->map, i)) continue;
                const char *k = x->map.buckets[i].key;
                if (k[0] == '_') continue;
                size_t d = edit_distance(name, k);
                if (d < bd) {
                    bd = d;
                    best = k;
                }
            }
    return best;
}

/* ------------------------------------------------------------------ static checks */

/* break/continue outside a loop and 'import *' inside a function are errors where they are
 * written, whether or not the code runs (as in Python). */
static void check_placement(Ctx *c, FlAstList *body, bool in_loop, bool in_def) {
    for (size_t i = 0; i < body->len; i++) {
        FlAst *s = body->items[i];
        switch (s->kind) {
        case FL_AST_BREAK:
        case FL_AST_CONTINUE:
            if (!in_loop) fl_diag_error(&c->diag, s->span, "'%s' outside a loop", s->kind == FL_AST_BREAK ? "break" : "continue");
            break;
        case FL_AST_FROM_IMPORT:
            if (s->import.star && in_def) fl_diag_error(&c->diag, s->span, "'import *' is only allowed at module level");
            break;
        case FL_AST_DEF: check_placement(c, &s->def.body, false, true); break;
        case FL_AST_IF:
            check_placement(c, &s->cond.then_body, in_loop, in_def);
            check_placement(c, &s->cond.else_body, in_loop, in_def);
            break;
        case FL_AST_FOR:
        case FL_AST_WHILE:
            check_placement(c, &s->loop.body, true, in_def);
            check_placement(c, &s->loop.else_body, in_loop, in_def);
            break;
        case FL_AST_PARALLEL_FOR: check_placement(c, &s->loop.body, false, in_def); break;
        case FL_AST_GO: check_placement(c, &s->with.body, false, in_def); break;
        case FL_AST_WITH: check_placement(c, &s->with.body, in_loop, in_def); break;
        case FL_AST_SELECT:
            for (size_t k = 0; k < s->select.cases.len; k++)
                check_placement(c, &s->select.cases.items[k]->case_.body, in_loop, in_def);
            break;
        default: break;
        }
    }
}

/* ------------------------------------------------------------------ expressions */

static FlValue *eval_call(Ctx *c, Env *e, FlAst *n);

static FlValue *index_value(Ctx *c, FlValue *obj, FlValue *idx, FlSpan sp) {
    if (obj->kind == VK_ERROR || idx->kind == VK_ERROR) return c->error;
    if (fl_v_is_seq(obj) && idx->kind == VK_VAR) {
        /* a compile-time list indexed by a runtime index (parallel_for): list_index */
        if (obj->list.len == 0) return fl_ev_error(c, sp, "indexing an empty list");
        for (size_t i = 0; i < obj->list.len; i++)
            if (obj->list.items[i]->kind != VK_VAR)
                return fl_ev_error(c, sp, "a list indexed by a Var must hold Vars, found %s",
                                   fl_v_type_name(obj->list.items[i]));
        /* the elements may differ in shape (w [13, 1], b [1]): Out takes the dims they agree
         * on and -1 elsewhere; with different ranks, the first element's rank */
        FlVarDesc *d0 = fl_ev_var_desc(c, obj->list.items[0]);
        if (!d0) return fl_ev_error(c, sp, "var '%s' is not visible here", obj->list.items[0]->var.name);
        const char *out = fl_arena_printf(&c->arena, "%s.tmp_0", fl_ev_unique(c, "list_index"));
        FlVarDesc *od = fl_ev_new_var(c, c->b.block, out, sp);
        fl_ir_var_copy(od, d0);
        od->loc = fl_ev_loc(c, sp);
        od->persistable = od->trainable = false;
        FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "list_index", sp);
        fl_ir_op_add_input_slot(op, "X");
        for (size_t i = 0; i < obj->list.len; i++) {
            FlVarDesc *di = fl_ev_var_desc(c, obj->list.items[i]);
            if (!di) return fl_ev_error(c, sp, "var '%s' is not visible here", obj->list.items[i]->var.name);
            if (di->dtype != d0->dtype)
                return fl_ev_error(c, sp, "a list indexed by a Var must hold Vars of one dtype, found %s and %s",
                                   fl_dtype_name(d0->dtype), fl_dtype_name(di->dtype));
            for (int k = 0; k < od->ndim; k++)
                if (k >= di->ndim || di->shape[k] != od->shape[k]) od->shape[k] = -1;
            fl_ir_op_add_input(op, "X", obj->list.items[i]->var.name);
        }
        fl_ir_op_add_input(op, "Index", idx->var.name);
        fl_ir_op_add_output(op, "Out", out);
        FlErr e;
        fl_ops_fill_defaults(op);
        if (fl_ops_check(op, &e) != FL_OK) return fl_ev_error(c, sp, "%s", e.msg);
        return fl_v_var(c, out);
    }
    if (fl_v_is_seq(obj) || obj->kind == VK_STR) {
        if (idx->kind != VK_INT && idx->kind != VK_BOOL)
            return fl_ev_error(c, sp, "%s indices must be integers, found %s", fl_v_type_name(obj),
                               fl_v_type_name(idx));
        int64_t len = obj->kind == VK_STR ? (int64_t)obj->str.n : (int64_t)obj->list.len;
        int64_t i = idx->kind == VK_INT ? idx->i : idx->b;
        if (i < 0) i += len;
        if (i < 0 || i >= len)
            return fl_ev_error(c, sp, "index %lld out of range for a %s of length %lld",
                               (long long)(idx->kind == VK_INT ? idx->i : idx->b),
                               fl_v_type_name(obj), (long long)len);
        return obj->kind == VK_STR ? fl_v_str(c, obj->str.s + i, 1) : obj->list.items[i];
    }
    if (obj->kind == VK_DICT) {
        FlValue *v = fl_v_dict_get(obj, idx);
        if (!v) {
            FlBuf b = {0};
            fl_v_repr(c, idx, &b);
            fl_ev_error(c, sp, "key %s%s%s not in dict", idx->kind == VK_STR ? "'" : "",
                        fl_buf_str(&b), idx->kind == VK_STR ? "'" : "");
            fl_buf_free(&b);
            return c->error;
        }
        return v;
    }
    if (obj->kind == VK_RECORD && idx->kind == VK_STR) {
        FlValue *v = fl_map_find_str(&obj->rec.attrs->map, idx->str.s);
        if (v) return v;
        return fl_ev_error(c, sp, "%s has no item '%s'", obj->rec.type, idx->str.s);
    }
    if (obj->kind == VK_VAR) return fl_ev_error(c, sp, "indexing a Var is not supported; use layers.split or layers.reshape");
    return fl_ev_error(c, sp, "%s is not subscriptable", fl_v_type_name(obj));
}

static FlValue *slice_value(Ctx *c, FlValue *obj, FlValue *lo, FlValue *hi, FlValue *st, FlSpan sp) {
    if (!fl_v_is_seq(obj) && obj->kind != VK_STR)
        return fl_ev_error(c, sp, "%s cannot be sliced", fl_v_type_name(obj));
    int64_t len = obj->kind == VK_STR ? (int64_t)obj->str.n : (int64_t)obj->list.len;
    int64_t step = 1;
    if (st && st->kind != VK_NONE) {
        if (st->kind != VK_INT) return fl_ev_error(c, sp, "slice step must be an int");
        step = st->i;
        if (step == 0) return fl_ev_error(c, sp, "slice step cannot be zero");
    }
    int64_t a = step > 0 ? 0 : len - 1, b = step > 0 ? len : -1;
    for (int k = 0; k < 2; k++) {
        FlValue *x = k ? hi : lo;
        if (!x || x->kind == VK_NONE) continue;
        if (x->kind != VK_INT) return fl_ev_error(c, sp, "slice indices must be integers");
        int64_t v = x->i;
        if (v < 0) v += len;
        if (step > 0) v = v < 0 ? 0 : v > len ? len : v;
        else v = v < -1 ? -1 : v > len - 1 ? len - 1 : v;
        if (k) b = v;
        else a = v;
    }
    if (obj->kind == VK_STR) {
        FlBuf buf = {0};
        for (int64_t i = a; step > 0 ? i < b : i > b; i += step) fl_buf_putc(&buf, obj->str.s[i]);
        FlValue *v = fl_v_str(c, fl_buf_str(&buf), buf.len);
        fl_buf_free(&buf);
        return v;
    }
    FlValue *v = fl_v_list(c, obj->kind);
    for (int64_t i = a; step > 0 ? i < b : i > b; i += step) fl_v_list_push(c, v, obj->list.items[i]);
    return v;
}

FlValue *fl_ev_getattr(Ctx *c, FlValue *obj, const char *name, FlSpan sp) {
    switch (obj->kind) {
    case VK_ERROR: return c->error;
    case VK_MODULE: {
        FlValue *v = fl_map_find_str(&obj->mod->globals->map, name);
        if (v) return v;
        /* a submodule not imported yet: fluid.layers after `import fluid` */
        if (obj->mod->is_stdlib || obj->mod->path) {
            char *dotted = fl_arena_printf(&c->arena, "%s.%s", obj->mod->name, name);
            FlValue *sub = fl_map_find_str(&c->modules, dotted);
            if (sub) return sub;
        }
        const char *sug = fl_ev_suggest(c, name, obj->mod->globals);
        if (sug) return fl_ev_error(c, sp, "module '%s' has no attribute '%s'; did you mean '%s'?", obj->mod->name, name, sug);
        return fl_ev_error(c, sp, "module '%s' has no attribute '%s'", obj->mod->name, name);
    }
    case VK_RECORD: {
        FlValue *v = fl_map_find_str(&obj->rec.attrs->map, name);
        if (v) return v;
        return fl_ev_error(c, sp, "'%s' object has no attribute '%s'", obj->rec.type, name);
    }
    case VK_VAR: return fl_ev_var_method(c, obj, name, sp);
    default: return fl_ev_value_method(c, obj, name, sp);
    }
}

static FlValue *make_func(Ctx *c, Env *e, FlAst *n);
static Module *cur_module(Ctx *c);
static bool assign_to(Ctx *c, Env *e, FlAst *t, FlValue *v);

/* Dict keys are the immutable values; reports others. */
static bool check_key(Ctx *c, FlValue *k, FlSpan sp) {
    if (k->kind == VK_STR || k->kind == VK_INT || k->kind == VK_BOOL || k->kind == VK_FLOAT ||
        k->kind == VK_TUPLE || k->kind == VK_NONE)
        return true;
    fl_ev_error(c, sp, "a %s cannot be a dict key", fl_v_type_name(k));
    return false;
}

#define COMP_MAX_ITERATIONS 1000000
#define MEMORY_LIMIT ((size_t)512 << 20)

typedef struct Comp {
    FlAst *n;       /* the LISTCOMP or DICTCOMP */
    Env *outer;     /* where the comprehension is written */
    Env *scope;     /* its own: the targets of its 'for' clauses */
    FlValue *out;   /* the list or dict being built */
    int64_t budget; /* iterations left */
} Comp;

/* Clause k of a comprehension and, for each item it lets through, the clauses after it; past
 * the last clause, the element. False after an error. */
static bool comp_clause(Ctx *c, Comp *q, size_t k) {
    FlAst *n = q->n;
    if (k == n->comp.clauses.len) {
        FlValue *x = fl_ev_expr(c, q->scope, n->comp.elt);
        if (x->kind == VK_ERROR) return false;
        if (n->kind == FL_AST_LISTCOMP) {
            fl_v_list_push(c, q->out, x);
            return true;
        }
        if (!check_key(c, x, n->comp.elt->span)) return false;
        FlValue *v = fl_ev_expr(c, q->scope, n->comp.val);
        if (v->kind == VK_ERROR) return false;
        fl_v_dict_set(c, q->out, x, v);
        return true;
    }
    FlAst *cl = n->comp.clauses.items[k];
    if (cl->kind == FL_AST_COMP_IF) {
        FlValue *t = fl_ev_expr(c, q->scope, cl->cond.test);
        if (t->kind == VK_ERROR) return false;
        bool ok, tv = fl_v_truthy(c, t, cl->cond.test->span, &ok);
        return ok && (!tv || comp_clause(c, q, k + 1));
    }
    /* as in Python, the first iterable is evaluated in the enclosing scope */
    FlValue *it = fl_ev_expr(c, k == 0 ? q->outer : q->scope, cl->loop.iter);
    if (it->kind == VK_ERROR) return false;
    if (it->kind == VK_VAR) {
        if (fl_ev_is_channel(c, it))
            fl_ev_error(c, cl->loop.iter->span, "a comprehension cannot iterate over a channel: it runs at compile "
                                                "time; receive in a 'for' statement instead");
        else
            fl_ev_error(c, cl->loop.iter->span, "a comprehension cannot iterate over a tensor Var: it runs at "
                                                "compile time; iterate over a list or range(n)");
        return false;
    }
    FlValue *seq = fl_ev_as_list(c, it, cl->loop.iter->span);
    if (seq->kind == VK_ERROR) return false;
    for (size_t i = 0; i < seq->list.len; i++) {
        if (--q->budget < 0 || c->arena.used_total > MEMORY_LIMIT) {
            fl_ev_error(c, n->span, "this comprehension is too large to run at compile time (more than %s)",
                        q->budget < 0 ? "1,000,000 iterations" : "512 MiB");
            c->aborted = true;
            return false;
        }
        if (!assign_to(c, q->scope, cl->loop.target, seq->list.items[i]) || !comp_clause(c, q, k + 1))
            return false;
    }
    return true;
}

/* [elt for ... if ...] and {key: val for ...}: the clauses nest left to right, as in Python, and
 * their targets are bound in a scope of the comprehension's own (Python 3): they do not leak. */
static FlValue *eval_comp(Ctx *c, Env *e, FlAst *n) {
    Comp q = {n, e, fl_env_new(c, e), n->kind == FL_AST_LISTCOMP ? fl_v_list(c, VK_LIST) : fl_v_dict(c),
              COMP_MAX_ITERATIONS};
    return comp_clause(c, &q, 0) ? q.out : c->error;
}

FlValue *fl_ev_expr(Ctx *c, Env *e, FlAst *n) {
    if (++c->depth > MAX_DEPTH) {
        c->depth--;
        return fl_ev_error(c, n->span, "expression nested too deeply");
    }
    FlValue *res = c->error;
    switch (n->kind) {
    case FL_AST_NAME: {
        FlValue *v = fl_env_find(e, n->name);
        if (!v) v = fl_env_find(c->builtins, n->name);
        if (!v) {
            const char *sug = fl_ev_suggest(c, n->name, e);
            if (sug) res = fl_ev_error(c, n->span, "unknown name '%s'; did you mean '%s'?", n->name, sug);
            else res = fl_ev_error(c, n->span, "unknown name '%s'", n->name);
        }
        else res = v;
        break;
    }
    case FL_AST_INT: res = fl_v_int(c, n->ival); break;
    case FL_AST_FLOAT: res = fl_v_float(c, n->fval); break;
    case FL_AST_STR: res = fl_v_str(c, n->str, n->slen); break;
    case FL_AST_TRUE: res = c->vtrue; break;
    case FL_AST_FALSE: res = c->vfalse; break;
    case FL_AST_NONE: res = c->none; break;
    case FL_AST_ATTR: {
        FlValue *o = fl_ev_expr(c, e, n->attr.obj);
        res = fl_ev_getattr(c, o, n->attr.name, n->attr.name_span.end ? n->attr.name_span : n->span);
        break;
    }
    case FL_AST_CALL: res = eval_call(c, e, n); break;
    case FL_AST_INDEX: {
        FlValue *o = fl_ev_expr(c, e, n->index.obj);
        FlAst *ix = n->index.index;
        if (ix->kind == FL_AST_SLICE) {
            FlValue *lo = ix->slice.lo ? fl_ev_expr(c, e, ix->slice.lo) : NULL;
            FlValue *hi = ix->slice.hi ? fl_ev_expr(c, e, ix->slice.hi) : NULL;
            FlValue *st = ix->slice.step ? fl_ev_expr(c, e, ix->slice.step) : NULL;
            if (o->kind == VK_ERROR || (lo && lo->kind == VK_ERROR) || (hi && hi->kind == VK_ERROR) || (st && st->kind == VK_ERROR))
                break;
            res = slice_value(c, o, lo, hi, st, n->span);
        } else {
            FlValue *i = fl_ev_expr(c, e, ix);
            res = index_value(c, o, i, n->span);
        }
        break;
    }
    case FL_AST_SLICE: res = fl_ev_error(c, n->span, "a slice is only valid inside [...]"); break;
    case FL_AST_LIST:
    case FL_AST_TUPLE: {
        FlValue *l = fl_v_list(c, n->kind == FL_AST_LIST ? VK_LIST : VK_TUPLE);
        bool bad = false;
        for (size_t i = 0; i < n->list.items.len; i++) {
            FlValue *x = fl_ev_expr(c, e, n->list.items.items[i]);
            if (x->kind == VK_ERROR) bad = true;
            fl_v_list_push(c, l, x);
        }
        res = bad ? c->error : l;
        break;
    }
    case FL_AST_DICT: {
        FlValue *d = fl_v_dict(c);
        bool bad = false;
        for (size_t i = 0; i < n->dict.keys.len; i++) {
            FlValue *k = fl_ev_expr(c, e, n->dict.keys.items[i]);
            FlValue *v = fl_ev_expr(c, e, n->dict.vals.items[i]);
            if (k->kind == VK_ERROR || v->kind == VK_ERROR) {
                bad = true;
                continue;
            }
            if (!check_key(c, k, n->dict.keys.items[i]->span)) {
                bad = true;
                continue;
            }
            fl_v_dict_set(c, d, k, v);
        }
        res = bad ? c->error : d;
        break;
    }
    case FL_AST_BINOP: {
        FlValue *l = fl_ev_expr(c, e, n->binop.l);
        FlValue *r = fl_ev_expr(c, e, n->binop.r);
        res = binop(c, n->binop.op, l, r, n->span);
        break;
    }
    case FL_AST_UNOP: {
        FlValue *v = fl_ev_expr(c, e, n->unop.e);
        if (v->kind == VK_ERROR) break;
        if (n->unop.op == FL_UN_NOT) {
            if (v->kind == VK_VAR) {
                res = op2(c, "logical_not", v, NULL, n->span);
                break;
            }
            bool ok;
            bool t = fl_v_truthy(c, v, n->span, &ok);
            res = ok ? fl_v_bool(c, !t) : c->error;
        } else if (v->kind == VK_VAR) {
            res = n->unop.op == FL_UN_NEG ? scale_op(c, v, -1, 0, n->span) : v;
        } else if (v->kind == VK_INT || v->kind == VK_BOOL) {
            int64_t x = v->kind == VK_INT ? v->i : v->b;
            if (n->unop.op == FL_UN_NEG && x == INT64_MIN) res = fl_ev_error(c, n->span, "integer overflow in a compile-time expression");
            else res = fl_v_int(c, n->unop.op == FL_UN_NEG ? -x : x);
        } else if (v->kind == VK_FLOAT) {
            res = fl_v_float(c, n->unop.op == FL_UN_NEG ? -v->f : v->f);
        } else {
            res = fl_ev_error(c, n->span, "bad operand type for unary %s: %s",
                              n->unop.op == FL_UN_NEG ? "-" : "+", fl_v_type_name(v));
        }
        break;
    }
    case FL_AST_AND:
    case FL_AST_OR: {
        FlValue *l = fl_ev_expr(c, e, n->binop.l);
        if (l->kind == VK_ERROR) break;
        if (l->kind == VK_VAR) {
            FlValue *r = fl_ev_expr(c, e, n->binop.r);
            if (r->kind != VK_VAR) {
                if (r->kind != VK_ERROR) fl_ev_error(c, n->span, "'%s' of a Var and a %s", n->kind == FL_AST_AND ? "and" : "or", fl_v_type_name(r));
                break;
            }
            res = op2(c, n->kind == FL_AST_AND ? "logical_and" : "logical_or", l, r, n->span);
            break;
        }
        bool ok;
        bool t = fl_v_truthy(c, l, n->binop.l->span, &ok);
        if (!ok) break;
        if ((n->kind == FL_AST_AND && !t) || (n->kind == FL_AST_OR && t)) res = l;
        else res = fl_ev_expr(c, e, n->binop.r);
        break;
    }
    case FL_AST_COMPARE: {
        FlValue *l = fl_ev_expr(c, e, n->binop.l);
        FlValue *r = fl_ev_expr(c, e, n->binop.r);
        res = compare(c, n->binop.op, l, r, n->span);
        break;
    }
    case FL_AST_COND: {
        FlValue *t = fl_ev_expr(c, e, n->cond.test);
        if (t->kind == VK_ERROR) break;
        if (t->kind == VK_VAR) {
            res = fl_ev_error(c, n->cond.test->span, "a conditional expression needs a compile-time "
                                                     "condition; for a Var use an 'if' statement");
            break;
        }
        bool ok;
        bool tv = fl_v_truthy(c, t, n->cond.test->span, &ok);
        if (!ok) break;
        res = fl_ev_expr(c, e, tv ? n->cond.then : n->cond.other);
        break;
    }
    case FL_AST_LAMBDA: res = make_func(c, e, n); break;
    case FL_AST_LISTCOMP:
    case FL_AST_DICTCOMP: res = eval_comp(c, e, n); break;
    default: res = fl_ev_error(c, n->span, "a %s is not an expression", fl_ast_kind_name(n->kind)); break;
    }
    c->depth--;
    return res;
}

/* ------------------------------------------------------------------ calls */

static FlValue *make_func(Ctx *c, Env *e, FlAst *n) {
    FlValue *f = fl_v_new(c, VK_FUNC);
    f->func.def = n;
    f->func.closure = e;
    f->func.mod = cur_module(c);
    return f;
}

static Module *cur_module(Ctx *c) { return c->cur_mod; }
static void set_cur_module(Ctx *c, Module *m) { c->cur_mod = m; }

static FlValue *call_func(Ctx *c, FlValue *fn, CallArgs *a) {
    FlAst *def = fn->func.def;
    const char *fname = def->def.name ? def->def.name : "<lambda>";
    Env *le = fl_env_new(c, fn->func.closure);
    size_t np = def->def.nparams;
    FlAstParam *ps = def->def.params;
    int star = -1, dstar = -1;
    size_t nfixed = 0; /* the positional parameters: the ones before *args (the parser keeps order) */
    for (size_t i = 0; i < np; i++) {
        if (ps[i].star == 1) star = (int)i;
        else if (ps[i].star == 2) dstar = (int)i;
        else if (star < 0) nfixed++;
    }
    FlSpan sp = a->span;
    if (a->npos > nfixed && star < 0)
        return fl_ev_error(c, sp, "%s() takes %zu positional argument%s but %zu %s given", fname,
                           nfixed, nfixed == 1 ? "" : "s", a->npos, a->npos == 1 ? "was" : "were");
    FlValue **vals = fl_arena_alloc(&c->arena, (np + 1) * sizeof *vals);
    FlValue *rest = star >= 0 ? fl_v_list(c, VK_TUPLE) : NULL;
    for (size_t i = 0; i < a->npos; i++) {
        if (i < nfixed) vals[i] = a->pos[i];
        else fl_v_list_push(c, rest, a->pos[i]);
    }
    FlValue *kwrest = dstar >= 0 ? fl_v_dict(c) : NULL;
    for (size_t k = 0; k < a->nkw; k++) {
        size_t i;
        for (i = 0; i < np; i++)
            if (!ps[i].star && ps[i].name == fl_intern_str(&c->in, a->kwnames[k])) break;
        if (i == np) {
            if (kwrest) {
                fl_v_dict_set(c, kwrest, fl_v_cstr(c, a->kwnames[k]), a->kwvals[k]);
                continue;
            }
            return fl_ev_error(c, sp, "%s() got an unexpected keyword argument '%s'", fname, a->kwnames[k]);
        }
        if (vals[i]) return fl_ev_error(c, sp, "%s() got multiple values for argument '%s'", fname, ps[i].name);
        vals[i] = a->kwvals[k];
    }
    for (size_t i = 0; i < np; i++) {
        if (ps[i].star == 1) vals[i] = rest;
        else if (ps[i].star == 2) vals[i] = kwrest;
        else if (!vals[i]) {
            if (!ps[i].deflt) return fl_ev_error(c, sp, "%s() missing required argument '%s'", fname, ps[i].name);
            /* defaults are evaluated in the defining scope each call (they are compile-time) */
            Module *saved = cur_module(c);
            set_cur_module(c, fn->func.mod);
            vals[i] = fl_ev_expr(c, fn->func.closure, ps[i].deflt);
            set_cur_module(c, saved);
        }
        fl_env_set(le, ps[i].name, vals[i]);
    }
    if (c->func_depth > 150) return fl_ev_error(c, sp, "maximum recursion depth exceeded in %s()", fname);
    Module *saved = cur_module(c);
    set_cur_module(c, fn->func.mod);
    int saved_loop = c->loop_depth;
    c->loop_depth = 0;
    FL_VEC_PUSH(&c->rtloops, NULL); /* break and continue cannot leave a function */
    c->func_depth++;
    FlValue *saved_ret = c->ret;
    c->ret = c->none;
    Flow fl;
    if (def->kind == FL_AST_LAMBDA) {
        c->ret = fl_ev_expr(c, le, def->def.body.items[0]->expr.e);
        fl = FLOW_RETURN;
    } else {
        fl = fl_ev_block(c, le, &def->def.body);
    }
    FlValue *r = fl == FLOW_ERROR ? c->error : c->ret;
    c->ret = saved_ret;
    c->func_depth--;
    c->rtloops.len--;
    c->loop_depth = saved_loop;
    set_cur_module(c, saved);
    return r;
}

FlValue *fl_ev_call(Ctx *c, FlValue *fn, CallArgs *a) {
    if (fn->kind == VK_ERROR) return c->error;
    for (size_t i = 0; i < a->npos; i++)
        if (a->pos[i]->kind == VK_ERROR) return c->error;
    for (size_t i = 0; i < a->nkw; i++)
        if (a->kwvals[i]->kind == VK_ERROR) return c->error;
    Module *cm = cur_module(c);
    bool from_user = !cm || !cm->is_stdlib;
    bool set_span = false;
    if (from_user && !c->have_err_span &&
        (fn->kind == VK_BUILTIN || (fn->kind == VK_FUNC && fn->func.mod && fn->func.mod->is_stdlib))) {
        c->have_err_span = true;
        c->err_span = a->span;
        set_span = true;
    }
    FlValue *r;
    if (fn->kind == VK_BUILTIN) r = fn->builtin.fn(c, fn->builtin.self, a);
    else if (fn->kind == VK_FUNC) r = call_func(c, fn, a);
    else r = fl_ev_error(c, a->span, "'%s' object is not callable", fl_v_type_name(fn));
    if (set_span) c->have_err_span = false;
    return r;
}

FlValue *fl_ev_call_simple(Ctx *c, FlValue *fn, FlSpan sp, FlValue **pos, size_t npos) {
    CallArgs a = {.pos = pos, .npos = npos, .span = sp};
    return fl_ev_call(c, fn, &a);
}

static FlValue *eval_call(Ctx *c, Env *e, FlAst *n) {
    FlValue *fn = fl_ev_expr(c, e, n->call.fn);
    size_t na = n->call.nargs;
    FL_VEC(FlValue *) pos = {0};
    FL_VEC(FlSpan) pos_spans = {0};
    FL_VEC(const char *) kwn = {0};
    FL_VEC(FlValue *) kwv = {0};
    bool bad = fn->kind == VK_ERROR;
    for (size_t i = 0; i < na; i++) {
        FlAstArg *ar = &n->call.args[i];
        FlValue *v = fl_ev_expr(c, e, ar->value);
        if (v->kind == VK_ERROR) {
            bad = true;
            continue;
        }
        if (ar->star == 1) {
            if (!fl_v_is_seq(v)) {
                fl_ev_error(c, ar->span, "argument after * must be a list or tuple, found %s", fl_v_type_name(v));
                bad = true;
                continue;
            }
            for (size_t k = 0; k < v->list.len; k++) {
                FL_VEC_PUSH(&pos, v->list.items[k]);
                FL_VEC_PUSH(&pos_spans, ar->span);
            }
        } else if (ar->star == 2) {
            if (v->kind != VK_DICT) {
                fl_ev_error(c, ar->span, "argument after ** must be a dict, found %s", fl_v_type_name(v));
                bad = true;
                continue;
            }
            for (size_t k = 0; k < v->dict.len; k++) {
                if (v->dict.keys[k]->kind != VK_STR) {
                    fl_ev_error(c, ar->span, "keywords must be strings");
                    bad = true;
                    break;
                }
                FL_VEC_PUSH(&kwn, fl_intern_str(&c->in, v->dict.keys[k]->str.s));
                FL_VEC_PUSH(&kwv, v->dict.vals[k]);
            }
        } else if (ar->name) {
            for (size_t k = 0; k < kwn.len; k++)
                if (kwn.data[k] == ar->name) {
                    fl_ev_error(c, ar->span, "keyword argument '%s' repeated", ar->name);
                    bad = true;
                }
            FL_VEC_PUSH(&kwn, ar->name);
            FL_VEC_PUSH(&kwv, v);
        } else {
            FL_VEC_PUSH(&pos, v);
            FL_VEC_PUSH(&pos_spans, ar->span);
        }
    }
    FlValue *r = c->error;
    if (!bad) {
        CallArgs a = {pos.data, pos.len, kwn.data, kwv.data, kwn.len, n->span, pos_spans.data};
        r = fl_ev_call(c, fn, &a);
    }
    FL_VEC_FREE(&pos);
    FL_VEC_FREE(&pos_spans);
    FL_VEC_FREE(&kwn);
    FL_VEC_FREE(&kwv);
    return r;
}

bool fl_ev_bind(Ctx *c, const char *fname, const char *spec, CallArgs *a, FlValue **out) {
    /* parse the spec into names */
    const char *names[32];
    bool opt[32];
    int star = -1, dstar = -1, np = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *tok = strtok(buf, " "); tok && np < 32; tok = strtok(NULL, " ")) {
        size_t l = strlen(tok);
        opt[np] = l && tok[l - 1] == '=';
        if (opt[np]) tok[l - 1] = 0;
        if (tok[0] == '*' && tok[1] == '*') {
            dstar = np;
            tok += 2;
        } else if (tok[0] == '*') {
            star = np;
            tok += 1;
        }
        names[np++] = fl_intern_str(&c->in, tok);
    }
    for (int i = 0; i < np; i++) out[i] = NULL;
    int nfixed = 0;
    for (int i = 0; i < np; i++)
        if (i != star && i != dstar && (star < 0 || i < star)) nfixed++;
    if ((int)a->npos > nfixed && star < 0) {
        fl_ev_error(c, a->span, "%s() takes at most %d positional argument%s but %zu %s given", fname, nfixed,
                    nfixed == 1 ? "" : "s", a->npos, a->npos == 1 ? "was" : "were");
        return false;
    }
    FlValue *rest = star >= 0 ? fl_v_list(c, VK_TUPLE) : NULL;
    for (size_t i = 0; i < a->npos; i++) {
        if ((int)i < nfixed) out[i] = a->pos[i];
        else fl_v_list_push(c, rest, a->pos[i]);
    }
    FlValue *kw = dstar >= 0 ? fl_v_dict(c) : NULL;
    for (size_t k = 0; k < a->nkw; k++) {
        const char *kn = fl_intern_str(&c->in, a->kwnames[k]);
        int i;
        for (i = 0; i < np; i++)
            if (i != star && i != dstar && names[i] == kn) break;
        if (i == np) {
            if (kw) {
                fl_v_dict_set(c, kw, fl_v_cstr(c, kn), a->kwvals[k]);
                continue;
            }
            fl_ev_error(c, a->span, "%s() got an unexpected keyword argument '%s'", fname, kn);
            return false;
        }
        if (out[i]) {
            fl_ev_error(c, a->span, "%s() got multiple values for argument '%s'", fname, kn);
            return false;
        }
        out[i] = a->kwvals[k];
    }
    for (int i = 0; i < np; i++) {
        if (i == star) out[i] = rest;
        else if (i == dstar) out[i] = kw;
        else if (!out[i] && !opt[i]) {
            fl_ev_error(c, a->span, "%s() missing required argument '%s'", fname, names[i]);
            return false;
        }
        if (out[i] && out[i]->kind == VK_NONE && opt[i]) out[i] = NULL;
    }
    return true;
}

/* ------------------------------------------------------------------ statements */

static bool unpack(Ctx *c, Env *e, FlAst *t, FlValue *v) {
    FlAstList *items = &t->list.items;
    if (v->kind == VK_ERROR) {
        for (size_t i = 0; i < items->len; i++) assign_to(c, e, items->items[i], v);
        return false;
    }
    if (!fl_v_is_seq(v)) {
        fl_ev_error(c, t->span, "cannot unpack a %s into %zu names", fl_v_type_name(v), items->len);
        for (size_t i = 0; i < items->len; i++) assign_to(c, e, items->items[i], c->error);
        return false;
    }
    if (v->list.len != items->len) {
        fl_ev_error(c, t->span, "cannot unpack %zu values into %zu names", v->list.len, items->len);
        for (size_t i = 0; i < items->len; i++) assign_to(c, e, items->items[i], c->error);
        return false;
    }
    bool ok = true;
    for (size_t i = 0; i < items->len; i++) ok = assign_to(c, e, items->items[i], v->list.items[i]) && ok;
    return ok;
}

static bool assign_to(Ctx *c, Env *e, FlAst *t, FlValue *v) {
    switch (t->kind) {
    case FL_AST_NAME: fl_env_set(e, t->name, v); return true;
    case FL_AST_TUPLE:
    case FL_AST_LIST: return unpack(c, e, t, v);
    case FL_AST_ATTR: {
        FlValue *o = fl_ev_expr(c, e, t->attr.obj);
        if (o->kind == VK_ERROR || v->kind == VK_ERROR) return false;
        if (o->kind == VK_RECORD) {
            fl_v_rec_set(c, o, t->attr.name, v);
            return true;
        }
        if (o->kind == VK_MODULE) {
            fl_env_set(o->mod->globals, t->attr.name, v);
            return true;
        }
        fl_ev_error(c, t->span, "cannot set attribute '%s' of a %s", t->attr.name, fl_v_type_name(o));
        return false;
    }
    case FL_AST_INDEX: {
        FlValue *o = fl_ev_expr(c, e, t->index.obj);
        FlValue *i = fl_ev_expr(c, e, t->index.index);
        if (o->kind == VK_ERROR || i->kind == VK_ERROR || v->kind == VK_ERROR) return false;
        if (o->kind == VK_DICT) {
            fl_v_dict_set(c, o, i, v);
            return true;
        }
        if (o->kind == VK_LIST && i->kind == VK_INT) {
            int64_t k = i->i < 0 ? i->i + (int64_t)o->list.len : i->i;
            if (k < 0 || k >= (int64_t)o->list.len) {
                fl_ev_error(c, t->span, "list assignment index out of range");
                return false;
            }
            o->list.items[k] = v;
            return true;
        }
        fl_ev_error(c, t->span, "a %s does not support item assignment", fl_v_type_name(o));
        return false;
    }
    default:
        fl_ev_error(c, t->span, "cannot assign to a %s", fl_ast_kind_name(t->kind));
        return false;
    }
}

static Flow eval_stmt(Ctx *c, Env *e, FlAst *s);
static Flow guard_rest(Ctx *c, Env *e, FlAstList *body, size_t from);

/* The runtime loop that a break or continue here would leave, or NULL (none, or a compile-time
 * loop is nearer). */
static RtLoop *rt_loop(Ctx *c) {
    return c->rtloops.len && c->loop_depth == 0 ? c->rtloops.data[c->rtloops.len - 1] : NULL;
}

/* Runs body->items[from..] in order, up to one that lowers a break or continue of the runtime
 * loop around inside a runtime block (RtLoop) while more statements follow: *next is then the
 * index after it, else body->len. */
static Flow run_stmts(Ctx *c, Env *e, FlAstList *body, size_t from, size_t *next) {
    RtLoop *l = rt_loop(c);
    *next = body->len;
    for (size_t i = from; i < body->len; i++) {
        if (c->aborted) return FLOW_ERROR;
        if (c->arena.used_total > MEMORY_LIMIT) {
            fl_ev_error(c, body->items[i]->span, "the program needs more than 512 MiB of memory at compile time");
            c->aborted = true;
            return FLOW_ERROR;
        }
        int exits = l ? l->exits : 0;
        Flow f = eval_stmt(c, e, body->items[i]);
        if (f != FLOW_NORMAL && f != FLOW_ERROR) return f;
        if (f == FLOW_ERROR && c->diag.nerrors > 200) return FLOW_ERROR;
        if (l && l->exits != exits && i + 1 < body->len) {
            *next = i + 1;
            return FLOW_NORMAL;
        }
    }
    return FLOW_NORMAL;
}

/* Runs the statements in order. Once one has lowered a break or continue of the runtime loop
 * around (inside a runtime block), the rest run only while that iteration is alive. */
Flow fl_ev_block(Ctx *c, Env *e, FlAstList *body) {
    size_t next;
    Flow f = run_stmts(c, e, body, 0, &next);
    return next < body->len ? guard_rest(c, e, body, next) : f;
}

/* ---- runtime control flow ---- */

typedef struct Snapshot {
    FlMap map; /* name -> value before the body */
} Snapshot;

static void snap_take(Env *e, Snapshot *s) {
    fl_map_init(&s->map);
    for (size_t i = 0; i < e->map.cap; i++)
        if (fl_map_slot_live(&e->map, i)) fl_map_put(&s->map, e->map.buckets[i].key, e->map.buckets[i].klen, e->map.buckets[i].val);
}

static void snap_restore(Env *e, Snapshot *s) {
    /* drop names added by the body; restore rebound ones */
    FL_VEC(const char *) drop = {0};
    for (size_t i = 0; i < e->map.cap; i++)
        if (fl_map_slot_live(&e->map, i) && !fl_map_find(&s->map, e->map.buckets[i].key, e->map.buckets[i].klen))
            FL_VEC_PUSH(&drop, e->map.buckets[i].key);
    for (size_t i = 0; i < drop.len; i++) fl_map_remove(&e->map, drop.data[i], strlen(drop.data[i]));
    FL_VEC_FREE(&drop);
    for (size_t i = 0; i < s->map.cap; i++)
        if (fl_map_slot_live(&s->map, i)) fl_map_put(&e->map, s->map.buckets[i].key, s->map.buckets[i].klen, s->map.buckets[i].val);
}

/* Where a name first bound inside a runtime block gets its var: the home block (see Ctx) when it
 * encloses parent, so that the var outlives every runtime if and loop iteration around it (as a
 * Python name does) and no enclosing block has to copy it out; else parent. */
static FlBlock *home_block(Ctx *c, FlBlock *parent) {
    for (FlBlock *x = parent; x; x = x->parent >= 0 ? fl_ir_block(c->b.main, x->parent) : NULL)
        if (x == c->home) return x;
    return parent;
}

/* Carries names rebound to Vars in the sub-block out to the parent (see the file comment). */
static void carry_out(Ctx *c, Env *e, Snapshot *s, FlBlock *parent, FlBlock *sub, FlSpan sp) {
    FL_VEC(const char *) names = {0};
    for (size_t i = 0; i < e->map.cap; i++)
        if (fl_map_slot_live(&e->map, i)) FL_VEC_PUSH(&names, e->map.buckets[i].key);
    for (size_t i = 0; i < names.len; i++) {
        const char *name = names.data[i];
        FlValue *now = fl_map_find_str(&e->map, name);
        FlValue *before = fl_map_find_str(&s->map, name);
        if (!now || now == before || now->kind != VK_VAR) continue;
        if (before && before->kind == VK_VAR && before->var.name == now->var.name) {
            fl_env_set(e, name, before);
            continue;
        }
        FlVarDesc *nd = fl_ir_var_lookup(c->b.main, sub, now->var.name);
        if (!nd) continue;
        if (fl_ir_var_lookup(c->b.main, parent, now->var.name)) continue; /* already visible outside */
        const char *target = NULL;
        if (before && before->kind == VK_VAR && fl_ir_var_lookup(c->b.main, parent, before->var.name)) {
            FlVarDesc *bd = fl_ir_var_lookup(c->b.main, parent, before->var.name);
            bool same = bd->kind == nd->kind && bd->dtype == nd->dtype && bd->ndim == nd->ndim;
            for (int k = 0; same && k < bd->ndim; k++)
                if (bd->shape[k] != nd->shape[k] && bd->shape[k] >= 0 && nd->shape[k] >= 0) same = false;
            if (!same) {
                FlBuf a = {0}, b = {0};
                fl_ir_shape_str(bd->ndim, bd->shape, &a);
                fl_ir_shape_str(nd->ndim, nd->shape, &b);
                fl_ev_error(c, sp, "'%s' changes from %s %s to %s %s inside a runtime block; a name rebound there must keep its dtype and shape", name,
                            fl_dtype_name(bd->dtype), fl_buf_str(&a), fl_dtype_name(nd->dtype), fl_buf_str(&b));
                fl_buf_free(&a);
                fl_buf_free(&b);
                continue;
            }
            target = before->var.name;
        } else {
            target = fl_ev_unique(c, name);
            FlVarDesc *td = fl_ev_new_var(c, home_block(c, parent), target, sp);
            fl_ir_var_copy(td, nd);
            td->loc = fl_ev_loc(c, sp);
            td->persistable = false;
        }
        c->b.block = sub;
        FlOpDesc *op = fl_ev_op_raw(c, sub, "assign", sp);
        fl_ir_op_add_input(op, "X", now->var.name);
        fl_ir_op_add_output(op, "Out", target);
        fl_ev_infer(c, sub, op, sp);
        fl_env_set(e, name, fl_v_var(c, target));
    }
    FL_VEC_FREE(&names);
}

static bool block_declares(const FlProgram *p, const FlBlock *outer, const char *name, const FlBlock *b) {
    /* is `name` declared in b or a block between b and outer (exclusive)? */
    for (const FlBlock *x = b; x && x != outer; x = x->parent >= 0 ? fl_ir_block(p, x->parent) : NULL)
        if (fl_ir_var_find(x, name)) return true;
    return false;
}

typedef FL_VEC(const char *) StrVec;

static void collect_io(Ctx *c, FlBlock *outer, FlBlock *b, FlMap *in, FlMap *out, StrVec *inl, StrVec *outl) {
    for (size_t k = 0; k < b->ops.len; k++) {
        FlOpDesc *op = b->ops.data[k];
        for (size_t s = 0; s < op->ins.len; s++)
            for (size_t i = 0; i < op->ins.data[s].nargs; i++) {
                const char *n = op->ins.data[s].args[i];
                if (!block_declares(c->b.main, outer, n, b) && !fl_map_find_str(in, n)) {
                    fl_map_put_str(in, n, (void *)n);
                    FL_VEC_PUSH(inl, n);
                }
            }
        for (size_t s = 0; s < op->outs.len; s++)
            for (size_t i = 0; i < op->outs.data[s].nargs; i++) {
                const char *n = op->outs.data[s].args[i];
                if (!block_declares(c->b.main, outer, n, b) && !fl_map_find_str(out, n)) {
                    fl_map_put_str(out, n, (void *)n);
                    FL_VEC_PUSH(outl, n);
                }
                /* writing a list_index output writes the picked var: every list item */
                if (block_declares(c->b.main, outer, n, b)) {
                    for (size_t q = 0; q < b->ops.len; q++) {
                        FlOpDesc *li = b->ops.data[q];
                        if (strcmp(li->type, "list_index") != 0 || op == li) continue;
                        const char *o = fl_ir_op_output1(li, "Out");
                        FlSlot *xs = fl_ir_op_input(li, "X");
                        if (!o || !xs || strcmp(o, n) != 0) continue;
                        for (size_t j = 0; j < xs->nargs; j++)
                            if (!fl_map_find_str(out, xs->args[j])) {
                                fl_map_put_str(out, xs->args[j], (void *)xs->args[j]);
                                FL_VEC_PUSH(outl, xs->args[j]);
                            }
                    }
                }
            }
        for (size_t a = 0; a < op->attrs.len; a++) {
            FlAttr *at = &op->attrs.data[a];
            if (at->type == FL_ATTR_BLOCK) collect_io(c, outer, fl_ir_block(c->b.main, (int)at->i), in, out, inl, outl);
            if (at->type == FL_ATTR_BLOCKS)
                for (size_t j = 0; j < at->n; j++) collect_io(c, outer, fl_ir_block(c->b.main, (int)at->ints[j]), in, out, inl, outl);
        }
    }
}

void fl_ev_control_io(Ctx *c, FlBlock *parent, FlBlock *sub, FlOpDesc *op, const char *in_slot, const char *out_slot) {
    FlMap in, out;
    fl_map_init(&in);
    fl_map_init(&out);
    StrVec inl = {0}, outl = {0};
    collect_io(c, parent, sub, &in, &out, &inl, &outl);
    if (in_slot) {
        fl_ir_op_add_input_slot(op, in_slot);
        for (size_t i = 0; i < inl.len; i++)
            if (fl_ir_var_lookup(c->b.main, parent, inl.data[i])) fl_ir_op_add_input(op, in_slot, inl.data[i]);
    }
    if (out_slot) {
        fl_ir_op_add_output_slot(op, out_slot);
        for (size_t i = 0; i < outl.len; i++)
            if (fl_ir_var_lookup(c->b.main, parent, outl.data[i])) fl_ir_op_add_output(op, out_slot, outl.data[i]);
    }
    FL_VEC_FREE(&inl);
    FL_VEC_FREE(&outl);
    fl_map_fini(&in);
    fl_map_fini(&out);
}

/* Runs body into sub, a new block of the current one; carries names out or restores them. A body
 * whose names do not carry out (a goroutine's) is the home of the names bound in it. With next,
 * only body->items[from..] up to one that lowers a loop exit (run_stmts). */
static Flow run_in(Ctx *c, Env *e, FlAstList *body, size_t from, size_t *next, FlBlock *sub, bool carry,
                   FlSpan sp) {
    FlBlock *parent = c->b.block, *home = c->home;
    Snapshot s;
    snap_take(e, &s);
    c->b.block = sub;
    if (!carry) c->home = sub;
    c->rt_depth++;
    Flow f = next ? run_stmts(c, e, body, from, next) : fl_ev_block(c, e, body);
    c->rt_depth--;
    c->home = home;
    if (carry) carry_out(c, e, &s, parent, sub, sp);
    else snap_restore(e, &s);
    c->b.block = parent;
    fl_map_fini(&s.map);
    return f;
}

FlBlock *fl_ev_sub_block(Ctx *c, Env *e, FlAstList *body, bool carry, FlSpan sp, Flow *flow) {
    FlBlock *sub = fl_ir_block_new(c->b.main, c->b.block->idx);
    Flow f = run_in(c, e, body, 0, NULL, sub, carry, sp);
    if (flow) *flow = f;
    return sub;
}

static bool check_cond_var(Ctx *c, FlValue *v, FlSpan sp, const char *what) {
    FlVarDesc *d = fl_ev_var_desc(c, v);
    if (!d) {
        fl_ev_error(c, sp, "var '%s' is not visible here", v->var.name);
        return false;
    }
    if (d->kind != FL_VAR_DENSE || d->dtype != FL_DT_BOOL) {
        FlBuf b = {0};
        fl_ir_shape_str(d->ndim, d->shape, &b);
        fl_ev_error(c, sp, "the condition of '%s' must be a bool Var, found %s %s", what,
                    d->kind == FL_VAR_CHANNEL ? "channel" : fl_dtype_name(d->dtype), fl_buf_str(&b));
        fl_buf_free(&b);
        return false;
    }
    return true;
}

static FlOpDesc *control_op(Ctx *c, const char *type, FlBlock *sub, FlSpan sp) {
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, type, sp);
    fl_ir_op_set_block(op, "sub_block", sub->idx);
    return op;
}

/* Runs body into a conditional_block on the bool var `cond` (appended to the current block);
 * names it rebinds to Vars are carried out. Returns the body's flow. With next, only
 * body->items[from..] up to one that lowers a loop exit (run_stmts). */
static Flow cond_block(Ctx *c, Env *e, FlAstList *body, size_t from, size_t *next, const char *cond, FlSpan sp) {
    FlBlock *parent = c->b.block;
    FlBlock *sub = fl_ir_block_new(c->b.main, parent->idx);
    Flow f = run_in(c, e, body, from, next, sub, true, sp);
    FlOpDesc *op = control_op(c, "conditional_block", sub, sp);
    fl_ir_op_add_input(op, "Cond", cond);
    fl_ev_control_io(c, parent, sub, op, "X", "Out");
    fl_ev_infer(c, parent, op, sp);
    return f;
}

/* The flow of a statement whose body ran in a runtime block (`where`: an if's branch, the rest
 * of a loop body after an exit, a loop's else clause). A break or continue that reached it has
 * been lowered onto the innermost runtime loop's flags (rt_exit), so the statement completes
 * normally; one meant for a compile-time loop cannot be, nor can a return. */
static Flow branch_flow(Ctx *c, Flow f, FlSpan sp, const char *where) {
    switch (f) {
    case FLOW_NORMAL:
    case FLOW_ERROR: return f;
    case FLOW_BREAK:
    case FLOW_CONTINUE:
        if (rt_loop(c)) return FLOW_NORMAL;
        /* one for a compile-time loop was reported where it is written (and ends the unrolling) */
        return f;
    case FLOW_RETURN:
        fl_ev_error(c, sp, "'return' inside %s cannot be compiled (the branch is taken at run time)", where);
        return FLOW_ERROR;
    }
    return FLOW_ERROR;
}

/* The flow that says more of two branches' (an exit over a normal end, a return over an exit). */
static Flow worse(Flow a, Flow b) {
    int ra = a == FLOW_RETURN ? 2 : a == FLOW_BREAK || a == FLOW_CONTINUE;
    int rb = b == FLOW_RETURN ? 2 : b == FLOW_BREAK || b == FLOW_CONTINUE;
    return rb > ra ? b : a;
}

static Flow runtime_if(Ctx *c, Env *e, FlAst *s, FlValue *cond) {
    if (!check_cond_var(c, cond, s->cond.test->span, "if")) return FLOW_ERROR;
    /* the else branch's condition is taken before the then branch may rebind the condition */
    FlValue *nc = NULL;
    if (s->cond.else_body.len) {
        nc = op2(c, "logical_not", cond, NULL, s->span);
        if (nc->kind == VK_ERROR) return FLOW_ERROR;
    }
    Flow f1 = cond_block(c, e, &s->cond.then_body, 0, NULL, cond->var.name, s->span);
    Flow f2 = nc ? cond_block(c, e, &s->cond.else_body, 0, NULL, nc->var.name, s->span) : FLOW_NORMAL;
    Flow f = branch_flow(c, worse(f1, f2), s->span, "a runtime 'if'");
    return f1 == FLOW_ERROR || f2 == FLOW_ERROR ? FLOW_ERROR : f;
}

/* Makes op (a fill_constant of block b) set the bool [1] var `name` to `value`. */
static void fill_flag(Ctx *c, FlBlock *b, FlOpDesc *op, const char *name, bool value, FlSpan sp) {
    int64_t one = 1;
    op->loc = fl_ev_loc(c, sp);
    fl_ir_op_add_output(op, "Out", name);
    fl_ir_op_set_ints(op, "shape", &one, 1);
    fl_ir_op_set_float(op, "value", value);
    fl_ir_op_set_int(op, "dtype", FL_DT_BOOL);
    fl_ev_infer(c, b, op, sp);
}

/* A new bool [1] var of block b, set to `value` by a fill_constant inserted at ops[pos]. */
static const char *new_flag(Ctx *c, FlBlock *b, const char *prefix, size_t pos, bool value, FlSpan sp) {
    const char *name = fl_ev_unique(c, prefix);
    FlVarDesc *d = fl_ev_new_var(c, b, name, sp);
    int64_t one = 1;
    d->dtype = FL_DT_BOOL;
    fl_ir_var_set_shape(d, 1, &one);
    d->stop_gradient = true;
    fill_flag(c, b, fl_ir_op_insert(b, pos, "fill_constant"), name, value, sp);
    return name;
}

/* Sets the bool [1] var `name` to `value` in the current block. */
static void set_flag(Ctx *c, const char *name, bool value, FlSpan sp) {
    fill_flag(c, c->b.block, fl_ir_op_append(c->b.block, "fill_constant"), name, value, sp);
}

/* break or continue of the runtime loop l, lowered as RtLoop describes. Returns the flow that
 * ends the evaluation of the enclosing statements. */
static Flow rt_exit(Ctx *c, RtLoop *l, bool is_break, FlSpan sp) {
    bool nested = c->rt_depth != l->depth;
    if (is_break && (nested || l->has_else)) {
        if (!l->broke) l->broke = new_flag(c, l->outer, "loop_broke", l->outer->ops.len, false, sp);
        set_flag(c, l->broke, true, sp);
    }
    l->has_break |= is_break;
    if (nested) {
        if (!l->alive) l->alive = new_flag(c, l->body, "loop_alive", 0, true, sp);
        set_flag(c, l->alive, false, sp);
        l->exits++;
    }
    return is_break ? FLOW_BREAK : FLOW_CONTINUE;
}

/* After a statement of a runtime loop's body (or of a block within it) that lowered a break or
 * continue, the rest of the statement list runs only while the iteration is alive: in
 * conditional_blocks on `alive`, one after the other (not one inside the other: `alive` is never
 * set again in the iteration), each up to the next statement that lowers an exit. */
static Flow guard_rest(Ctx *c, Env *e, FlAstList *body, size_t from) {
    const char *alive = rt_loop(c)->alive;
    while (from < body->len) {
        FlSpan sp = body->items[from]->span;
        Flow f = branch_flow(c, cond_block(c, e, body, from, &from, alive, sp), sp, "a runtime loop");
        if (f != FLOW_NORMAL) return f;
    }
    return FLOW_NORMAL;
}

/* Evaluates a runtime loop's body into l->body (a new block of the current one) with l as the
 * innermost runtime loop and no compile-time loop around; names rebound to Vars are carried out
 * to the current block. */
static Flow loop_body(Ctx *c, Env *e, FlAstList *body, RtLoop *l, FlSpan sp) {
    int depth = c->loop_depth;
    c->loop_depth = 0;
    l->depth = c->rt_depth + 1;
    FL_VEC_PUSH(&c->rtloops, l);
    Flow f = run_in(c, e, body, 0, NULL, l->body, true, sp);
    c->rtloops.len--;
    c->loop_depth = depth;
    return f;
}

/* The end of an iteration, after the carry-out (RtLoop): a while's condition is evaluated again
 * into the condition var (recompute) unless a break ran, and a break clears it. f is the flow
 * of the body. */
static void loop_end(Ctx *c, Env *e, FlAst *s, RtLoop *l, Flow f, bool recompute) {
    FlBlock *saved = c->b.block, *b = l->body;
    c->b.block = b;
    FlValue *nb = NULL;
    if (f == FLOW_BREAK) { /* a break directly in the body: every iteration that gets here broke */
        set_flag(c, l->cond, false, s->span);
        goto done;
    }
    if (l->broke) {
        nb = op2(c, "logical_not", fl_v_var(c, l->broke), NULL, s->span);
        if (nb->kind == VK_ERROR) goto done;
    }
    if (recompute) {
        FlBlock *guard = nb ? fl_ir_block_new(c->b.main, b->idx) : NULL;
        c->b.block = guard ? guard : b;
        FlValue *c2 = fl_ev_expr(c, e, s->loop.iter);
        if (c2->kind == VK_VAR && c2->var.name != l->cond) {
            FlOpDesc *as = fl_ev_op_raw(c, c->b.block, "assign", s->span);
            fl_ir_op_add_input(as, "X", c2->var.name);
            fl_ir_op_add_output(as, "Out", l->cond);
            fl_ev_infer(c, c->b.block, as, s->span);
        } else if (c2->kind != VK_VAR && c2->kind != VK_ERROR) {
            fl_ev_error(c, s->loop.iter->span, "the loop condition stopped being a Var inside the body");
        }
        c->b.block = b;
        if (guard) {
            FlOpDesc *op = control_op(c, "conditional_block", guard, s->span);
            fl_ir_op_add_input(op, "Cond", nb->var.name);
            fl_ev_control_io(c, b, guard, op, "X", "Out");
            fl_ev_infer(c, b, op, s->span);
        }
    }
    if (nb) {
        const char *names[3] = {"X", "Y", "Out"};
        FlValue *vals[3] = {fl_v_var(c, l->cond), nb, fl_v_var(c, l->cond)};
        CallArgs a = {.kwnames = names, .kwvals = vals, .nkw = 3, .span = s->span};
        fl_ev_op(c, "logical_and", &a, s->span);
    }
done:
    c->b.block = saved;
}

/* The else clause of a runtime loop (after its op): it runs unless a break left the loop. */
static Flow loop_else(Ctx *c, Env *e, FlAst *s, RtLoop *l) {
    FlAstList *body = &s->loop.else_body;
    if (!body->len) return FLOW_NORMAL;
    if (!l->has_break) return fl_ev_block(c, e, body);
    FlValue *nb = op2(c, "logical_not", fl_v_var(c, l->broke), NULL, s->span);
    if (nb->kind == VK_ERROR) return FLOW_ERROR;
    return branch_flow(c, cond_block(c, e, body, 0, NULL, nb->var.name, s->span), s->span,
                       "a runtime loop's 'else'");
}

/* while on a Var: the body and the re-evaluated condition become the sub-block. */
static Flow runtime_while(Ctx *c, Env *e, FlAst *s, FlValue *cond) {
    if (!check_cond_var(c, cond, s->loop.iter->span, "while")) return FLOW_ERROR;
    FlBlock *parent = c->b.block;
    RtLoop loop = {.cond = cond->var.name, .body = fl_ir_block_new(c->b.main, parent->idx), .outer = parent,
                   .has_else = s->loop.else_body.len > 0};
    Flow f = loop_body(c, e, &s->loop.body, &loop, s->span);
    loop_end(c, e, s, &loop, f, true);
    FlOpDesc *op = control_op(c, "while", loop.body, s->span);
    fl_ev_control_io(c, parent, loop.body, op, "X", "Out");
    fl_ir_op_add_input(op, "Condition", cond->var.name);
    fl_ev_infer(c, parent, op, s->span);
    if (f == FLOW_RETURN) {
        fl_ev_error(c, s->span, "'return' inside a runtime loop cannot be compiled");
        return FLOW_ERROR;
    }
    return loop_else(c, e, s, &loop);
}

/* `for v in ch`: ok = true; while ok: v, ok = recv(ch); if ok: body. break clears ok. */
static Flow runtime_for_chan(Ctx *c, Env *e, FlAst *s, FlValue *ch) {
    FlBlock *parent = c->b.block;
    FlVarDesc *chd = fl_ev_var_desc(c, ch);
    if (s->loop.target->kind != FL_AST_NAME) {
        fl_ev_error(c, s->loop.target->span, "'for ... in' a channel binds one name");
        return FLOW_ERROR;
    }
    FlValue *ok = fl_ev_const_var(c, 1, FL_DT_BOOL, s->span);
    if (ok->kind == VK_ERROR) return FLOW_ERROR;
    FlBlock *sub = fl_ir_block_new(c->b.main, parent->idx);
    c->b.block = sub;
    const char *vname = fl_arena_printf(&c->arena, "%s.tmp_0", fl_ev_unique(c, "channel_recv"));
    FlVarDesc *vd = fl_ev_new_var(c, sub, vname, s->loop.target->span);
    vd->dtype = chd->dtype;
    fl_ir_var_set_shape(vd, chd->ndim, chd->shape);
    FlOpDesc *rv = fl_ev_op_raw(c, sub, "channel_recv", s->span);
    fl_ir_op_add_input(rv, "Channel", ch->var.name);
    fl_ir_op_add_output(rv, "Out", vname);
    fl_ir_op_add_output(rv, "Status", ok->var.name);
    fl_ev_infer(c, sub, rv, s->span);
    Snapshot snap;
    snap_take(e, &snap);
    fl_env_set(e, s->loop.target->name, fl_v_var(c, vname));
    RtLoop loop = {.cond = ok->var.name, .body = fl_ir_block_new(c->b.main, sub->idx), .outer = parent,
                   .has_else = s->loop.else_body.len > 0};
    Flow f = loop_body(c, e, &s->loop.body, &loop, s->span);
    loop_end(c, e, s, &loop, f, false);
    FlOpDesc *cb = control_op(c, "conditional_block", loop.body, s->span);
    fl_ir_op_add_input(cb, "Cond", ok->var.name);
    fl_ev_control_io(c, sub, loop.body, cb, "X", "Out");
    fl_ev_infer(c, sub, cb, s->span);
    snap_restore(e, &snap);
    fl_map_fini(&snap.map);
    c->b.block = parent;
    FlOpDesc *op = control_op(c, "while", sub, s->span);
    fl_ev_control_io(c, parent, sub, op, "X", "Out");
    fl_ir_op_add_input(op, "Condition", ok->var.name);
    fl_ev_infer(c, parent, op, s->span);
    if (f == FLOW_RETURN) {
        fl_ev_error(c, s->span, "'return' inside a runtime loop cannot be compiled");
        return FLOW_ERROR;
    }
    return loop_else(c, e, s, &loop);
}

/* go: the body on its own goroutine */
static Flow stmt_go(Ctx *c, Env *e, FlAstList *body, FlSpan sp) {
    FlBlock *parent = c->b.block;
    Flow f;
    int saved_loop = c->loop_depth;
    c->loop_depth = 0;
    FL_VEC_PUSH(&c->rtloops, NULL);
    FlBlock *sub = fl_ev_sub_block(c, e, body, false, sp, &f);
    c->rtloops.len--;
    c->loop_depth = saved_loop;
    FlOpDesc *op = control_op(c, "go", sub, sp);
    fl_ev_control_io(c, parent, sub, op, "X", NULL);
    fl_ev_infer(c, parent, op, sp);
    if (f == FLOW_RETURN) {
        fl_ev_error(c, sp, "'return' inside a go block");
        return FLOW_ERROR;
    }
    return FLOW_NORMAL;
}

/* parallel_for: n concurrent iterations; idx_name is bound to the index Var (or, with
 * as_rec, a record whose .idx is). */
static Flow stmt_parallel_for(Ctx *c, Env *e, int64_t n, const char *bind, bool as_rec, FlAstList *body, FlSpan sp) {
    FlBlock *parent = c->b.block;
    if (n < 1) {
        fl_ev_error(c, sp, "parallel_for needs at least one iteration, found %lld", (long long)n);
        return FLOW_ERROR;
    }
    const char *base = fl_ev_unique(c, "parallel_for");
    const char *idx = fl_arena_printf(&c->arena, "%s.idx", base);
    FlBlock *sub = fl_ir_block_new(c->b.main, parent->idx);
    FlVarDesc *d = fl_ev_new_var(c, sub, idx, sp);
    d->dtype = FL_DT_INT64;
    int64_t one = 1;
    fl_ir_var_set_shape(d, 1, &one);
    d->stop_gradient = true;
    Snapshot snap;
    snap_take(e, &snap);
    c->b.block = sub;
    FlValue *iv = fl_v_var(c, idx);
    if (bind) {
        if (as_rec) {
            FlValue *r = fl_v_record(c, "ParallelFor");
            fl_v_rec_set(c, r, "idx", iv);
            fl_env_set(e, fl_intern_str(&c->in, bind), r);
        } else {
            fl_env_set(e, fl_intern_str(&c->in, bind), iv);
        }
    }
    int saved_loop = c->loop_depth;
    c->loop_depth = 0;
    FL_VEC_PUSH(&c->rtloops, NULL);
    FlBlock *home = c->home;
    c->home = sub;
    Flow f = fl_ev_block(c, e, body);
    c->home = home;
    c->rtloops.len--;
    c->loop_depth = saved_loop;
    snap_restore(e, &snap);
    fl_map_fini(&snap.map);
    c->b.block = parent;
    FlOpDesc *op = control_op(c, "parallel_for", sub, sp);
    fl_ir_op_set_int(op, "n", n);
    fl_ir_op_set_string(op, "index_var", idx);
    fl_ev_control_io(c, parent, sub, op, "X", "Out");
    fl_ev_infer(c, parent, op, sp);
    if (f == FLOW_RETURN || f == FLOW_BREAK || f == FLOW_CONTINUE) {
        fl_ev_error(c, sp, "'return', 'break' and 'continue' cannot leave a parallel_for body");
        return FLOW_ERROR;
    }
    return FLOW_NORMAL;
}

static bool iteration_count(Ctx *c, FlValue *v, FlSpan sp, int64_t *n) {
    if (v->kind == VK_INT) {
        *n = v->i;
        return true;
    }
    if (fl_v_is_seq(v)) {
        *n = (int64_t)v->list.len;
        return true;
    }
    if (v->kind != VK_ERROR)
        fl_ev_error(c, sp, "parallel_for needs a compile-time count (an int or range(n)), found %s", fl_v_type_name(v));
    return false;
}

static Flow stmt_select(Ctx *c, Env *e, FlAst *s) {
    FlBlock *parent = c->b.block;
    FL_VEC(int64_t) kinds = {0};
    FL_VEC(const char *) chans = {0};
    FL_VEC(const char *) vars = {0};
    FL_VEC(int64_t) blocks = {0};
    bool bad = false, has_default = false, reported_exit = false;
    for (size_t i = 0; i < s->select.cases.len; i++) {
        FlAst *cs = s->select.cases.items[i];
        FlAst *opn = cs->case_.op;
        Snapshot snap;
        snap_take(e, &snap);
        int64_t kind = 2;
        const char *chn = "", *vn = "";
        if (!opn) {
            if (has_default) {
                fl_ev_error(c, cs->span, "a select has at most one 'default' case");
                bad = true;
            }
            has_default = true;
        } else {
            if (opn->kind != FL_AST_CALL || opn->call.fn->kind != FL_AST_ATTR ||
                (strcmp(opn->call.fn->attr.name, "recv") != 0 && strcmp(opn->call.fn->attr.name, "send") != 0)) {
                fl_ev_error(c, opn->span, "a select case must be 'ch.recv()' or 'ch.send(x)'");
                bad = true;
                fl_map_fini(&snap.map);
                continue;
            }
            bool is_send = strcmp(opn->call.fn->attr.name, "send") == 0;
            FlValue *ch = fl_ev_expr(c, e, opn->call.fn->attr.obj);
            if (ch->kind == VK_ERROR) {
                bad = true;
                fl_map_fini(&snap.map);
                continue;
            }
            if (!fl_ev_is_channel(c, ch)) {
                fl_ev_error(c, opn->call.fn->attr.obj->span, "'%s' needs a channel, found %s",
                            is_send ? "send" : "recv", fl_v_type_name(ch));
                bad = true;
                fl_map_fini(&snap.map);
                continue;
            }
            FlVarDesc *chd = fl_ev_var_desc(c, ch);
            chn = ch->var.name;
            if (is_send) {
                kind = 1;
                if (opn->call.nargs != 1) {
                    fl_ev_error(c, opn->span, "send() takes one value");
                    bad = true;
                    fl_map_fini(&snap.map);
                    continue;
                }
                FlValue *x = fl_ev_expr(c, e, opn->call.args[0].value);
                if (x->kind == VK_INT || x->kind == VK_FLOAT) x = fl_ev_const_var(c, num_of(x), chd->dtype, opn->span);
                if (x->kind != VK_VAR) {
                    if (x->kind != VK_ERROR) fl_ev_error(c, opn->span, "send() needs a Var, found %s", fl_v_type_name(x));
                    bad = true;
                    fl_map_fini(&snap.map);
                    continue;
                }
                vn = x->var.name;
            } else {
                kind = 0;
                vn = fl_arena_printf(&c->arena, "%s.tmp_0", fl_ev_unique(c, "select_recv"));
                FlVarDesc *vd = fl_ev_new_var(c, parent, vn, cs->span);
                vd->dtype = chd->dtype;
                fl_ir_var_set_shape(vd, chd->ndim, chd->shape);
                if (cs->case_.target) {
                    if (cs->case_.target->kind != FL_AST_NAME) {
                        fl_ev_error(c, cs->case_.target->span, "a select case binds one name");
                        bad = true;
                    } else {
                        fl_env_set(e, cs->case_.target->name, fl_v_var(c, vn));
                    }
                }
            }
        }
        Flow f;
        FlBlock *sub = fl_ev_sub_block(c, e, &cs->case_.body, true, cs->span, &f);
        /* names the case rebinds stay rebound (carried out); the received name does not leak */
        if (cs->case_.target && cs->case_.target->kind == FL_AST_NAME) {
            const char *tn = cs->case_.target->name;
            FlValue *prev = fl_map_find_str(&snap.map, tn);
            if (prev) fl_env_set(e, tn, prev);
            else fl_map_remove(&e->map, tn, strlen(tn));
        }
        fl_map_fini(&snap.map);
        if (f == FLOW_RETURN) {
            fl_ev_error(c, cs->span, "'return' inside a select case cannot be compiled (the case is chosen at run time)");
            bad = true;
        } else if ((f == FLOW_BREAK || f == FLOW_CONTINUE) && c->loop_depth == 0) {
            /* lowering it as in an if would be easy; saying which loop it leaves is not */
            fl_ev_error(c, cs->span, "'break' and 'continue' inside a select case are ambiguous (in Go they "
                                     "leave the select, in Python the loop); set a flag in the case and test it "
                                     "after the select");
            bad = true;
        } else if (f == FLOW_BREAK || f == FLOW_CONTINUE) {
            reported_exit = true; /* one for a compile-time loop was reported where it is written */
        }
        FL_VEC_PUSH(&kinds, kind);
        FL_VEC_PUSH(&chans, chn);
        FL_VEC_PUSH(&vars, vn);
        FL_VEC_PUSH(&blocks, (int64_t)sub->idx);
    }
    if (!bad && !reported_exit && kinds.len) {
        FlOpDesc *op = fl_ev_op_raw(c, parent, "select", s->span);
        fl_ir_op_set_ints(op, "case_kinds", kinds.data, kinds.len);
        fl_ir_op_set_strings(op, "case_channels", chans.data, chans.len);
        fl_ir_op_set_strings(op, "case_vars", vars.data, vars.len);
        fl_ir_op_set_blocks(op, "sub_blocks", blocks.data, blocks.len);
        fl_ir_op_add_input_slot(op, "X");
        fl_ir_op_add_output_slot(op, "Out");
        FlMap in, out;
        fl_map_init(&in);
        fl_map_init(&out);
        StrVec inl = {0}, outl = {0};
        for (size_t i = 0; i < kinds.len; i++) {
            if (chans.data[i][0] && !fl_map_find_str(&in, chans.data[i])) {
                fl_map_put_str(&in, chans.data[i], (void *)chans.data[i]);
                FL_VEC_PUSH(&inl, chans.data[i]);
            }
            if (kinds.data[i] == 1 && !fl_map_find_str(&in, vars.data[i])) {
                fl_map_put_str(&in, vars.data[i], (void *)vars.data[i]);
                FL_VEC_PUSH(&inl, vars.data[i]);
            }
            if (kinds.data[i] == 0 && !fl_map_find_str(&out, vars.data[i])) {
                fl_map_put_str(&out, vars.data[i], (void *)vars.data[i]);
                FL_VEC_PUSH(&outl, vars.data[i]);
            }
            collect_io(c, parent, fl_ir_block(c->b.main, (int)blocks.data[i]), &in, &out, &inl, &outl);
        }
        for (size_t i = 0; i < inl.len; i++) {
            bool is_recv_target = false;
            for (size_t k = 0; k < kinds.len; k++)
                if (kinds.data[k] == 0 && strcmp(vars.data[k], inl.data[i]) == 0) is_recv_target = true;
            if (!is_recv_target && fl_ir_var_lookup(c->b.main, parent, inl.data[i])) fl_ir_op_add_input(op, "X", inl.data[i]);
        }
        for (size_t i = 0; i < outl.len; i++)
            if (fl_ir_var_lookup(c->b.main, parent, outl.data[i])) fl_ir_op_add_output(op, "Out", outl.data[i]);
        FL_VEC_FREE(&inl);
        FL_VEC_FREE(&outl);
        fl_map_fini(&in);
        fl_map_fini(&out);
        fl_ev_infer(c, parent, op, s->span);
    }
    FL_VEC_FREE(&kinds);
    FL_VEC_FREE(&chans);
    FL_VEC_FREE(&vars);
    FL_VEC_FREE(&blocks);
    return reported_exit ? FLOW_BREAK : bad ? FLOW_ERROR : FLOW_NORMAL;
}

static Flow stmt_for(Ctx *c, Env *e, FlAst *s) {
    FlValue *it = fl_ev_expr(c, e, s->loop.iter);
    if (it->kind == VK_ERROR) {
        assign_to(c, e, s->loop.target, c->error);
        return FLOW_ERROR;
    }
    if (it->kind == VK_VAR) {
        if (fl_ev_is_channel(c, it)) return runtime_for_chan(c, e, s, it);
        fl_ev_error(c, s->loop.iter->span, "cannot iterate over a tensor Var; iterate over a channel, a list or range(n)");
        return FLOW_ERROR;
    }
    FlValue *seq = fl_ev_as_list(c, it, s->loop.iter->span);
    if (seq->kind == VK_ERROR) return FLOW_ERROR;
    int loop_rt_depth = c->loop_rt_depth;
    c->loop_rt_depth = c->rt_depth;
    c->loop_depth++;
    Flow res = FLOW_NORMAL;
    bool broke = false;
    for (size_t i = 0; i < seq->list.len; i++) {
        if (!assign_to(c, e, s->loop.target, seq->list.items[i])) {
            res = FLOW_ERROR;
            break;
        }
        Flow f = fl_ev_block(c, e, &s->loop.body);
        if (f == FLOW_BREAK) {
            broke = true;
            break;
        }
        if (f == FLOW_RETURN || (f == FLOW_ERROR && c->diag.nerrors > 200)) {
            res = f;
            break;
        }
    }
    c->loop_depth--;
    c->loop_rt_depth = loop_rt_depth;
    if (!broke && res == FLOW_NORMAL && s->loop.else_body.len) res = fl_ev_block(c, e, &s->loop.else_body);
    return res;
}

static Flow stmt_while(Ctx *c, Env *e, FlAst *s) {
    int loop_rt_depth = c->loop_rt_depth;
    c->loop_rt_depth = c->rt_depth;
    c->loop_depth++;
    Flow res = FLOW_NORMAL;
    bool broke = false;
    for (long iter = 0;; iter++) {
        FlValue *t = fl_ev_expr(c, e, s->loop.iter);
        if (t->kind == VK_ERROR) {
            res = FLOW_ERROR;
            break;
        }
        if (t->kind == VK_VAR) {
            if (iter > 0) {
                fl_ev_error(c, s->loop.iter->span, "the condition became a Var after the loop ran at compile time");
                res = FLOW_ERROR;
                break;
            }
            c->loop_depth--;
            c->loop_rt_depth = loop_rt_depth;
            return runtime_while(c, e, s, t);
        }
        bool ok;
        bool tv = fl_v_truthy(c, t, s->loop.iter->span, &ok);
        if (!ok) {
            res = FLOW_ERROR;
            break;
        }
        if (!tv) break;
        if (iter >= 1000000) {
            fl_ev_error(c, s->span, "this compile-time loop ran 1,000,000 times; is it infinite?");
            res = FLOW_ERROR;
            break;
        }
        Flow f = fl_ev_block(c, e, &s->loop.body);
        if (f == FLOW_BREAK) {
            broke = true;
            break;
        }
        if (f == FLOW_RETURN || f == FLOW_ERROR) {
            res = f;
            break;
        }
    }
    c->loop_depth--;
    c->loop_rt_depth = loop_rt_depth;
    if (!broke && res == FLOW_NORMAL && s->loop.else_body.len) res = fl_ev_block(c, e, &s->loop.else_body);
    return res;
}

/* from m import *: the names m's __all__ lists when it has one (a submodule among them is
 * imported), else every global of m whose name does not start with '_'. */
static Flow import_star(Ctx *c, Env *e, FlValue *m, FlAst *s, const char *dir) {
    Env *g = m->mod->globals;
    FlValue *all = fl_map_find_str(&g->map, "__all__");
    StrVec names = {0};
    bool ok = true;
    if (!all) {
        for (size_t i = 0; i < g->map.cap; i++)
            if (fl_map_slot_live(&g->map, i) && g->map.buckets[i].key[0] != '_') FL_VEC_PUSH(&names, g->map.buckets[i].key);
    } else if (!fl_v_is_seq(all)) {
        fl_ev_error(c, s->span, "__all__ of module '%s' must be a list or tuple of names, found %s", m->mod->name,
                    fl_v_type_name(all));
        ok = false;
    } else {
        for (size_t i = 0; i < all->list.len; i++) {
            FlValue *x = all->list.items[i];
            if (x->kind == VK_STR) {
                FL_VEC_PUSH(&names, fl_intern_str(&c->in, x->str.s));
                continue;
            }
            fl_ev_error(c, s->span, "__all__ of module '%s' must hold names (strings), found %s", m->mod->name,
                        fl_v_type_name(x));
            ok = false;
        }
    }
    for (size_t i = 0; i < names.len; i++) {
        const char *nm = names.data[i];
        FlValue *v = fl_map_find_str(&g->map, nm);
        if (!v) v = fl_ev_import(c, fl_arena_printf(&c->arena, "%s.%s", m->mod->name, nm), s->span, dir);
        ok = ok && v->kind != VK_ERROR;
        fl_env_set(e, nm, v);
    }
    FL_VEC_FREE(&names);
    return ok ? FLOW_NORMAL : FLOW_ERROR;
}

static Flow stmt_import(Ctx *c, Env *e, FlAst *s) {
    Module *cm = cur_module(c);
    const char *dir = cm ? cm->dir : ".";
    if (s->kind == FL_AST_IMPORT) {
        FlValue *m = fl_ev_import(c, s->import.module, s->span, dir);
        if (m->kind == VK_ERROR) {
            fl_env_set(e, s->import.alias ? s->import.alias : s->import.module, c->error);
            return FLOW_ERROR;
        }
        if (s->import.alias) {
            fl_env_set(e, s->import.alias, m);
        } else {
            /* `import a.b` binds a */
            const char *dot = strchr(s->import.module, '.');
            if (dot) {
                const char *top = fl_intern(&c->in, s->import.module, (size_t)(dot - s->import.module));
                fl_env_set(e, top, fl_ev_import(c, top, s->span, dir));
            } else {
                fl_env_set(e, s->import.module, m);
            }
        }
        return FLOW_NORMAL;
    }
    FlValue *m = fl_ev_import(c, s->import.module, s->span, dir);
    bool bad = m->kind == VK_ERROR;
    if (s->import.star) return bad ? FLOW_ERROR : import_star(c, e, m, s, dir);
    for (size_t i = 0; i < s->import.nnames; i++) {
        const char *nm = s->import.names[i];
        const char *as = s->import.aliases && s->import.aliases[i] ? s->import.aliases[i] : nm;
        if (bad) {
            fl_env_set(e, as, c->error);
            continue;
        }
        FlValue *v = fl_map_find_str(&m->mod->globals->map, nm);
        if (!v) {
            const char *dotted = fl_arena_printf(&c->arena, "%s.%s", s->import.module, nm);
            FlSpan nsp = s->import.name_spans ? s->import.name_spans[i] : s->span;
            v = fl_ev_import(c, dotted, nsp, dir);
            if (v->kind == VK_ERROR) {
                bad = true;
                fl_env_set(e, as, c->error);
                continue;
            }
        }
        fl_env_set(e, as, v);
    }
    return bad ? FLOW_ERROR : FLOW_NORMAL;
}

static Flow stmt_with(Ctx *c, Env *e, FlAst *s) {
    FlValue *g = fl_ev_expr(c, e, s->with.expr);
    if (g->kind == VK_ERROR) return FLOW_ERROR;
    if (g->kind != VK_GUARD) {
        fl_ev_error(c, s->with.expr->span, "'with' needs a guard (program_guard, unique_name.guard, "
                                           "name_scope, go, parallel_for, server.do), found %s",
                    fl_v_type_name(g));
        return FLOW_ERROR;
    }
    switch (g->guard.kind) {
    case GK_GO:
        if (s->with.as_name) fl_ev_error(c, s->span, "'with fluid.go()' binds no name");
        return stmt_go(c, e, &s->with.body, s->span);
    case GK_PARALLEL_FOR:
        return stmt_parallel_for(c, e, g->guard.n, s->with.as_name, true, &s->with.body, s->span);
    case GK_PROGRAM: {
        BuildState saved = c->b;
        FlBlock *home = c->home;
        c->b.main = g->guard.a->prog;
        c->b.startup = g->guard.b ? g->guard.b->prog : saved.startup;
        c->b.block = c->home = fl_ir_block(c->b.main, 0);
        if (s->with.as_name) fl_env_set(e, s->with.as_name, g->guard.a);
        Flow f = fl_ev_block(c, e, &s->with.body);
        c->b = saved;
        c->home = home;
        return f;
    }
    case GK_UNIQUE_NAME: {
        FlMap *m = fl_arena_alloc(&c->arena, sizeof *m);
        fl_map_init(m);
        FL_VEC_PUSH(&c->unique_stack, m);
        Flow f = fl_ev_block(c, e, &s->with.body);
        c->unique_stack.len--;
        fl_map_fini(m);
        return f;
    }
    case GK_NAME_SCOPE: {
        FL_VEC_PUSH(&c->name_scopes, g->guard.a ? g->guard.a->str.s : "");
        Flow f = fl_ev_block(c, e, &s->with.body);
        c->name_scopes.len--;
        return f;
    }
    case GK_SERVER_DO: {
        if (c->in_server_do) {
            fl_ev_error(c, s->span, "server.do() blocks cannot nest");
            return FLOW_ERROR;
        }
        FlBlock *parent = c->b.block;
        if (parent->idx != 0) {
            fl_ev_error(c, s->span, "server.do() must be used at the top level of the program");
            return FLOW_ERROR;
        }
        FlBlock *sub = fl_ir_block_new(c->b.main, parent->idx);
        FlBlock *home = c->home;
        c->in_server_do = true;
        c->server_block = sub;
        c->b.block = c->home = sub;
        Flow f = fl_ev_block(c, e, &s->with.body);
        c->b.block = parent;
        c->home = home;
        c->in_server_do = false;
        /* The server runs only listen_and_serv: the forward and backward ops that built the
         * model belong to the trainers. */
        for (size_t i = parent->ops.len; i-- > 0;) {
            FlOpDesc *op = parent->ops.data[i];
            if (strcmp(op->type, "listen_and_serv") != 0) fl_ir_op_remove(parent, i);
        }
        FlOpDesc *op = fl_ev_op_raw(c, parent, "listen_and_serv", s->span);
        int64_t bi = sub->idx;
        fl_ir_op_set_blocks(op, "optimize_blocks", &bi, 1);
        fl_ev_control_io(c, parent, sub, op, "X", NULL);
        /* every gradient the optimize block reads comes from the trainers */
        FL_VEC(const char *) g2b = {0};
        FlSlot *xs = fl_ir_op_input(op, "X");
        for (size_t i = 0; xs && i < xs->nargs; i++)
            if (fl_rule_has_grad(xs->args[i]))
                FL_VEC_PUSH(&g2b, fl_arena_printf(&c->arena, "%s:%d", xs->args[i], sub->idx));
        fl_ir_op_set_strings(op, "grad_to_block", g2b.data, g2b.len);
        FL_VEC_FREE(&g2b);
        if (g->guard.a) fl_ir_op_set_int(op, "fanin", g->guard.a->i);
        fl_ev_infer(c, parent, op, s->span);
        return f == FLOW_ERROR ? f : FLOW_NORMAL;
    }
    case GK_COUNT: break;
    }
    return FLOW_NORMAL;
}

static Flow eval_stmt(Ctx *c, Env *e, FlAst *s) {
    switch (s->kind) {
    case FL_AST_EXPR_STMT: {
        FlValue *v = fl_ev_expr(c, e, s->expr.e);
        return v->kind == VK_ERROR ? FLOW_ERROR : FLOW_NORMAL;
    }
    case FL_AST_ASSIGN: {
        /* a = b = v: v once, then the targets left to right; after a failed one the rest are
         * bound to the error value (quietly), as Python would not reach them */
        FlValue *v = fl_ev_expr(c, e, s->assign.value);
        bool ok = assign_to(c, e, s->assign.target, v);
        for (size_t i = 0; i < s->assign.more.len; i++) {
            FlAst *t = s->assign.more.items[i];
            if (ok) ok = assign_to(c, e, t, v);
            else if (t->kind == FL_AST_NAME || t->kind == FL_AST_TUPLE || t->kind == FL_AST_LIST) assign_to(c, e, t, c->error);
        }
        return ok && v->kind != VK_ERROR ? FLOW_NORMAL : FLOW_ERROR;
    }
    case FL_AST_AUGASSIGN: {
        FlValue *cur = fl_ev_expr(c, e, s->assign.target);
        FlValue *v = fl_ev_expr(c, e, s->assign.value);
        FlValue *r = binop(c, s->assign.op, cur, v, s->span);
        if (s->assign.target->kind != FL_AST_NAME && s->assign.target->kind != FL_AST_ATTR &&
            s->assign.target->kind != FL_AST_INDEX) {
            fl_ev_error(c, s->assign.target->span, "illegal target for augmented assignment");
            return FLOW_ERROR;
        }
        return assign_to(c, e, s->assign.target, r) && r->kind != VK_ERROR ? FLOW_NORMAL : FLOW_ERROR;
    }
    case FL_AST_DEF: fl_env_set(e, s->def.name, make_func(c, e, s)); return FLOW_NORMAL;
    case FL_AST_RETURN:
        if (c->func_depth == 0) {
            fl_ev_error(c, s->span, "'return' outside a function");
            return FLOW_ERROR;
        }
        c->ret = s->expr.e ? fl_ev_expr(c, e, s->expr.e) : c->none;
        return FLOW_RETURN;
    case FL_AST_IF: {
        FlValue *t = fl_ev_expr(c, e, s->cond.test);
        if (t->kind == VK_ERROR) return FLOW_ERROR;
        if (t->kind == VK_VAR) return runtime_if(c, e, s, t);
        bool ok;
        bool tv = fl_v_truthy(c, t, s->cond.test->span, &ok);
        if (!ok) return FLOW_ERROR;
        return fl_ev_block(c, e, tv ? &s->cond.then_body : &s->cond.else_body);
    }
    case FL_AST_FOR: return stmt_for(c, e, s);
    case FL_AST_WHILE: return stmt_while(c, e, s);
    case FL_AST_BREAK:
    case FL_AST_CONTINUE: {
        bool is_break = s->kind == FL_AST_BREAK;
        if (c->loop_depth > 0) {
            if (c->rt_depth == c->loop_rt_depth) return is_break ? FLOW_BREAK : FLOW_CONTINUE;
            fl_ev_error(c, s->span, "'%s' under a runtime 'if' or 'select' cannot leave a compile-time loop: that "
                                    "loop is unrolled when the program is built, so when it stops cannot depend on "
                                    "run-time values", is_break ? "break" : "continue");
            return FLOW_BREAK; /* ends the unrolling: said once */
        }
        RtLoop *l = rt_loop(c);
        if (l) return rt_exit(c, l, is_break, s->span);
        fl_ev_error(c, s->span, "'%s' outside a loop", is_break ? "break" : "continue");
        return FLOW_ERROR;
    }
    case FL_AST_PASS: return FLOW_NORMAL;
    case FL_AST_IMPORT:
    case FL_AST_FROM_IMPORT: return stmt_import(c, e, s);
    case FL_AST_WITH: return stmt_with(c, e, s);
    case FL_AST_GO: return stmt_go(c, e, &s->with.body, s->span);
    case FL_AST_PARALLEL_FOR: {
        FlValue *it = fl_ev_expr(c, e, s->loop.iter);
        int64_t n;
        if (!iteration_count(c, it, s->loop.iter->span, &n)) return FLOW_ERROR;
        if (s->loop.target->kind != FL_AST_NAME) {
            fl_ev_error(c, s->loop.target->span, "parallel_for binds one name");
            return FLOW_ERROR;
        }
        return stmt_parallel_for(c, e, n, s->loop.target->name, false, &s->loop.body, s->span);
    }
    case FL_AST_SELECT: return stmt_select(c, e, s);
    default: {
        FlValue *v = fl_ev_expr(c, e, s);
        return v->kind == VK_ERROR ? FLOW_ERROR : FLOW_NORMAL;
    }
    }
}

/* ------------------------------------------------------------------ backward */

FlValue *fl_ev_append_backward(Ctx *c, FlValue *loss, FlValue *param_list, FlSpan sp) {
    if (loss->kind != VK_VAR) return fl_ev_error(c, sp, "append_backward needs a Var loss, found %s", fl_v_type_name(loss));
    FlVarDesc *ld = fl_ev_var_desc(c, loss);
    if (!ld) return fl_ev_error(c, sp, "var '%s' is not visible here", loss->var.name);
    FL_VEC(const char *) params = {0};
    if (param_list) {
        if (!fl_v_is_seq(param_list)) return fl_ev_error(c, sp, "parameter_list must be a list of Vars or names");
        for (size_t i = 0; i < param_list->list.len; i++) {
            FlValue *p = param_list->list.items[i];
            if (p->kind == VK_VAR) FL_VEC_PUSH(&params, p->var.name);
            else if (p->kind == VK_STR) FL_VEC_PUSH(&params, p->str.s);
            else {
                FL_VEC_FREE(&params);
                return fl_ev_error(c, sp, "parameter_list must be a list of Vars or names");
            }
        }
    }
    FlBackwardResult r = {0};
    FlErr err;
    FlLoc where = FL_LOC_NONE;
    FlStatus st = fl_backward_append(c->b.main, loss->var.name, params.data, params.len, &r, &err, &where);
    FL_VEC_FREE(&params);
    if (st != FL_OK) {
        fl_backward_result_fini(&r);
        return fl_ev_error(c, sp, "%s", err.msg);
    }
    FlValue *ps = fl_v_list(c, VK_LIST), *gs = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < r.pairs.len; i++) {
        fl_v_list_push(c, ps, fl_v_var(c, r.pairs.data[i].param));
        fl_v_list_push(c, gs, fl_v_var(c, r.pairs.data[i].grad));
    }
    fl_backward_result_fini(&r);
    FlValue *t = fl_v_list(c, VK_TUPLE);
    fl_v_list_push(c, t, ps);
    fl_v_list_push(c, t, gs);
    return t;
}

/* ------------------------------------------------------------------ compile */


const char *fl_eval_default_stdlib(void) {
#ifdef FL_STDLIB_DIR
    return FL_STDLIB_DIR;
#else
    return "stdlib";
#endif
}

/* Runs a module file's top level. */
Module *fl_ev_run_file(Ctx *c, const char *name, const char *path, char *text, size_t len, bool is_stdlib);

Module *fl_ev_run_file(Ctx *c, const char *name, const char *path, char *text, size_t len, bool is_stdlib) {
    uint32_t fid = fl_sources_add_take(&c->sources, path, text, len);
    FlAstModule am;
    int nerr = fl_parse(&c->arena, &c->in, &c->diag, fid, &am);
    Module *m = fl_arena_alloc(&c->arena, sizeof *m);
    m->name = fl_intern_str(&c->in, name);
    m->path = fl_arena_strdup(&c->arena, path);
    const char *slash = strrchr(path, '/');
    m->dir = slash ? fl_arena_strndup(&c->arena, path, (size_t)(slash - path)) : ".";
    m->is_stdlib = is_stdlib;
    m->globals = fl_env_new(c, NULL);
    FlValue *mv = fl_v_new(c, VK_MODULE);
    mv->mod = m;
    fl_map_put_str(&c->modules, m->name, mv);
    if (nerr) return NULL;
    int before = c->diag.nerrors;
    check_placement(c, &am.body, false, false);
    if (c->diag.nerrors > before) return NULL;
    fl_env_set(m->globals, fl_intern_str(&c->in, "__name__"), fl_v_cstr(c, name));
    Module *saved = cur_module(c);
    set_cur_module(c, m);
    m->loading = true;
    bool saved_have = c->have_err_span;
    if (!is_stdlib) c->have_err_span = false;
    int saved_loop = c->loop_depth;
    c->loop_depth = 0;
    FL_VEC_PUSH(&c->rtloops, NULL);
    fl_ev_block(c, m->globals, &am.body);
    c->rtloops.len--;
    c->loop_depth = saved_loop;
    c->have_err_span = saved_have;
    m->loading = false;
    set_cur_module(c, saved);
    return m;
}

static void report_verify(Ctx *c, FlVerifyIssues *vi) {
    for (size_t i = 0; i < vi->items.len; i++) {
        FlVerifyIssue *it = &vi->items.data[i];
        /* map the loc back to a span */
        FlSpan sp = {0, 0, 0};
        bool found = false;
        if (it->loc.file >= 0) {
            for (size_t f = 0; f < c->src_map.len; f++)
                if (c->src_map.data[f] == it->loc.file) {
                    const FlSourceFile *sf = fl_sources_file(&c->sources, (uint32_t)f);
                    if (sf && it->loc.line >= 1 && (size_t)it->loc.line <= sf->nlines) {
                        uint32_t off = sf->line_starts[it->loc.line - 1] + (uint32_t)(it->loc.col - 1);
                        sp = fl_span((uint32_t)f, off, off + (uint32_t)(it->loc.len > 0 ? it->loc.len : 1));
                        found = true;
                    }
                    break;
                }
        }
        if (found) fl_diag_error(&c->diag, sp, "%s", it->msg);
        else fl_diag_error_plain(&c->diag, "%s", it->msg);
    }
}

static int compile(const char *path, char *text, size_t len, const FlCompileOptions *opt, FlBundle **out, FlBuf *diag_out) {
    Ctx *c = fl_xcalloc(1, sizeof *c);
    FlCompileOptions dflt = {0};
    if (!opt) opt = &dflt;
    c->opt = opt;
    fl_arena_init(&c->arena);
    fl_intern_init(&c->in);
    fl_sources_init(&c->sources);
    fl_diag_init(&c->diag, &c->sources);
    if (opt->max_errors > 0) c->diag.max_errors = opt->max_errors;
    fl_map_init(&c->modules);
    fl_map_init(&c->unique);
    fl_map_init(&c->block_of_var);
    c->stdlib_dir = opt->stdlib_dir ? opt->stdlib_dir : getenv("FLUIDC_STDLIB");
    if (!c->stdlib_dir || !*c->stdlib_dir) c->stdlib_dir = fl_eval_default_stdlib();
    c->none = fl_v_new(c, VK_NONE);
    c->vtrue = fl_v_new(c, VK_BOOL);
    c->vtrue->b = true;
    c->vfalse = fl_v_new(c, VK_BOOL);
    c->error = fl_v_new(c, VK_ERROR);
    c->bundle = fl_ir_bundle_new();
    c->b.main = c->bundle->main;
    c->b.startup = c->bundle->startup;
    c->b.block = c->home = fl_ir_block(c->b.main, 0);
    free(c->bundle->role);
    c->bundle->role = fl_xstrdup("local");
    fl_builtins_install(c);

    Module *m = fl_ev_run_file(c, "__main__", path, text, len, false);
    (void)m;
    if (c->diag.nerrors == 0) {
        FlVerifyIssues vi = {0};
        if (fl_verify_program(c->bundle->main, c->bundle->startup, &vi) > 0) report_verify(c, &vi);
        fl_verify_issues_fini(&vi);
    }
    if (c->diag.nerrors == 0) {
        /* a program with listen_and_serv is a parameter server's */
        for (size_t i = 0; i < fl_ir_block(c->bundle->main, 0)->ops.len; i++)
            if (strcmp(fl_ir_block(c->bundle->main, 0)->ops.data[i]->type, "listen_and_serv") == 0) {
                free(c->bundle->role);
                c->bundle->role = fl_xstrdup("pserver");
            }
        FlErr e;
        if (fl_ir_validate_bundle(c->bundle, &e) != FL_OK) fl_diag_error_plain(&c->diag, "internal: the built program is invalid: %s", e.msg);
    }
    int nerr = c->diag.nerrors;
    if (diag_out) fl_buf_append(diag_out, fl_buf_str(&c->diag.out), c->diag.out.len);
    if (nerr == 0) *out = c->bundle;
    else {
        *out = NULL;
        fl_ir_bundle_free(c->bundle);
    }
    for (size_t i = 0; i < c->envs.len; i++) fl_map_fini(&c->envs.data[i]->map);
    FL_VEC_FREE(&c->envs);
    for (size_t i = 0; i < c->programs.len; i++)
        if (c->programs.data[i]) fl_ir_program_free(c->programs.data[i]);
    FL_VEC_FREE(&c->programs);
    for (size_t i = 0; i < c->readers.len; i++) fl_ir_reader_free(c->readers.data[i]);
    FL_VEC_FREE(&c->readers);
    FL_VEC_FREE(&c->unique_stack);
    FL_VEC_FREE(&c->name_scopes);
    FL_VEC_FREE(&c->rtloops);
    FL_VEC_FREE(&c->src_map);
    fl_map_fini(&c->modules);
    fl_map_fini(&c->unique);
    fl_map_fini(&c->block_of_var);
    fl_diag_fini(&c->diag);
    fl_sources_fini(&c->sources);
    fl_intern_fini(&c->in);
    fl_arena_fini(&c->arena);
    free(c);
    return nerr;
}

int fl_compile_source(const char *path, const char *text, size_t len, const FlCompileOptions *opt, FlBundle **out, FlBuf *diag_out) {
    char *copy = fl_xmalloc(len + 1);
    memcpy(copy, text, len);
    copy[len] = 0;
    return compile(path, copy, len, opt, out, diag_out);
}

int fl_compile_file(const char *path, const FlCompileOptions *opt, FlBundle **out, FlBuf *diag_out) {
    FlErr e;
    size_t len;
    char *text = fl_read_file(path, &len, &e);
    *out = NULL;
    if (!text) {
        if (diag_out) fl_buf_printf(diag_out, "flc: error: %s\n", e.msg);
        return 1;
    }
    return compile(path, text, len, opt, out, diag_out);
}
