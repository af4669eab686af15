/* expr.c: evaluating expressions and calls (the tree walk over expression nodes).
 *
 * fl_ev_expr evaluates one expression node: names (with a did-you-mean suggestion), literals,
 * attributes, indexing and slicing (a list indexed by a Var becomes a list_index op), lists,
 * dicts, comprehensions, operators (arith.c), conditional expressions and lambdas. Calls bind
 * arguments to a .fl function's parameters (call_func) or to a builtin's spec (fl_ev_bind).
 *
 * Invariants: the recursion depth is bounded (MAX_DEPTH nested expressions, 150 nested calls),
 * so a deep or recursive program gives a diagnostic instead of overflowing the C stack; a call
 * made from user code into the stdlib sets the user-level span that errors and ops inside it
 * report (fl_ev_call); a failed expression yields ERROR after exactly one message.
 */
#include "lang/eval_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ops.h"

#define MAX_DEPTH 180

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

/* ------------------------------------------------------------------ expressions */

static FlValue *eval_call(Ctx *c, Env *e, FlAst *n);

static FlValue *index_value(Ctx *c, FlValue *obj, FlValue *idx, FlSpan sp) {
    if (obj->kind == VK_ERROR || idx->kind == VK_ERROR) return c->error;
    if (fl_ev_is_rt_list(obj)) return fl_ev_driver_list_index(c, obj, idx, sp); /* driver_values.c */
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
    if (fl_ev_is_driver_var(c, obj)) return fl_ev_driver_index(c, obj, idx, sp); /* a fetched value */
    if (fl_ev_is_lod_lengths(obj))
        return fl_ev_error(c, sp, "the lod() or recursive_sequence_lengths() of a fetched sequence is known when the "
                                  "driver runs, as a whole: print() or str() it (indexing it is not compiled)");
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

/* numpy's basic indexing of a compile-time array's nested lists: item k of idx (an int, or a
 * slice given by its three parts) picks in dim k; the dims after the last item stay whole. */
static FlValue *nd_pick(Ctx *c, FlValue *v, FlValue **idx, FlValue *(*sl)[3], size_t k, size_t n, FlSpan sp) {
    if (k == n) return v;
    if (!fl_v_is_seq(v))
        return fl_ev_error(c, sp, "too many indices for array: the array has %zu dimension%s, %zu were indexed", k,
                           k == 1 ? "" : "s", n);
    if (idx[k]) {
        if (idx[k]->kind != VK_INT && idx[k]->kind != VK_BOOL)
            return fl_ev_error(c, sp, "a numpy array is indexed by ints and slices here, found %s",
                               fl_v_type_name(idx[k]));
        int64_t len = (int64_t)v->list.len, i = idx[k]->kind == VK_INT ? idx[k]->i : idx[k]->b;
        if (i < -len || i >= len)
            return fl_ev_error(c, sp, "index %lld is out of bounds for axis %zu with size %lld", (long long)i, k,
                               (long long)len);
        return nd_pick(c, v->list.items[i < 0 ? i + len : i], idx, sl, k + 1, n, sp);
    }
    FlValue *part = slice_value(c, v, sl[k][0], sl[k][1], sl[k][2], sp);
    if (part->kind == VK_ERROR) return part;
    FlValue *out = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < part->list.len; i++) {
        FlValue *x = nd_pick(c, part->list.items[i], idx, sl, k + 1, n, sp);
        if (x->kind == VK_ERROR) return x;
        fl_v_list_push(c, out, x);
    }
    return out;
}

/* a[...] of a compile-time numpy array (numpy.array of numbers): ints and slices of compile-time
 * ints pick its numbers when the script compiles (an array, or a number when every dim is
 * indexed); a[i] with i an int of the driver (a runtime loop's counter) makes the array a constant
 * of the driver and indexes that when the driver runs. */
static FlValue *ndarray_subscript(Ctx *c, Env *e, FlValue *o, FlAst *ix, FlSpan sp) {
    int dt;
    FlValue *nums = fl_ev_ndarray_numbers(o, &dt);
    FlAst *one[1] = {ix};
    FlAst **items = ix->kind == FL_AST_TUPLE ? ix->list.items.items : one;
    size_t n = ix->kind == FL_AST_TUPLE ? ix->list.items.len : 1;
    if (n > FL_IR_MAX_DIMS) return fl_ev_error(c, sp, "too many indices for array (%zu)", n);
    FlValue *idx[FL_IR_MAX_DIMS] = {0}, *sl[FL_IR_MAX_DIMS][3] = {{0}};
    bool driver = false;
    for (size_t k = 0; k < n; k++) {
        FlAst *it = items[k];
        if (it->kind == FL_AST_SLICE) {
            FlAst *parts[3] = {it->slice.lo, it->slice.hi, it->slice.step};
            for (int p = 0; p < 3; p++) {
                sl[k][p] = parts[p] ? fl_ev_expr(c, e, parts[p]) : NULL;
                if (sl[k][p] && sl[k][p]->kind == VK_ERROR) return c->error;
                driver = driver || fl_ev_is_driver_var(c, sl[k][p]);
            }
        } else {
            idx[k] = fl_ev_expr(c, e, it);
            if (idx[k]->kind == VK_ERROR) return c->error;
            driver = driver || fl_ev_is_driver_var(c, idx[k]);
        }
    }
    if (driver) {
        bool rows = n == 1 && !idx[0] && (!sl[0][2] || sl[0][2]->kind == VK_NONE ||
                                          (sl[0][2]->kind == VK_INT && sl[0][2]->i == 1));
        if (n != 1 || (!idx[0] && !rows))
            return fl_ev_error(c, sp, "a numpy array is indexed here by a value known only when the driver runs (a "
                               "runtime loop's counter) in a way that is not compiled: a[i] and a[i:j] (step 1) "
                               "are; index by compile-time ints otherwise");
        FlValue *k = fl_ev_driver_const_as(c, nums, dt, sp);
        if (k->kind == VK_ERROR) return k;
        if (idx[0]) return fl_ev_driver_index(c, k, idx[0], sp);
        /* a[i:j]: slice_rows, the missing bounds 0 and the end (clamped) */
        FlValue *bound[2];
        for (int p = 0; p < 2; p++) {
            FlValue *x = sl[0][p] && sl[0][p]->kind != VK_NONE ? sl[0][p] : fl_v_int(c, p ? INT64_MAX : 0);
            if (!fl_ev_is_driver_var(c, x) && x->kind != VK_INT)
                return fl_ev_error(c, sp, "slice indices must be integers, found %s", fl_v_type_name(x));
            bound[p] = fl_ev_is_driver_var(c, x) ? x : fl_ev_driver_const(c, x, sp);
            if (bound[p]->kind == VK_ERROR) return bound[p];
        }
        const char *names[3] = {"X", "Start", "End"};
        FlValue *vals[3] = {k, bound[0], bound[1]};
        CallArgs a = {.kwnames = names, .kwvals = vals, .nkw = 3, .span = sp};
        return fl_ev_op(c, "slice_rows", &a, sp);
    }
    FlValue *r = nd_pick(c, nums, idx, sl, 0, n, sp);
    if (r->kind == VK_ERROR || !fl_v_is_seq(r)) return r;
    r = fl_ev_ndarray_of(c, r, dt, sp);
    /* the shape from the array's (an empty pick keeps the dims after it: numpy's (0, 2)) */
    FlValue *shape = fl_map_find_str(&o->rec.attrs->map, "shape");
    if (r->kind == VK_ERROR || !shape || !fl_v_is_seq(shape)) return r;
    FlValue *out = fl_v_list(c, VK_TUPLE);
    for (size_t k = 0; k < shape->list.len; k++) {
        if (k < n && idx[k]) continue;
        int64_t dim = shape->list.items[k]->i;
        if (k < n) {
            FlValue *all = fl_v_list(c, VK_LIST);
            for (int64_t i = 0; i < dim; i++) fl_v_list_push(c, all, c->none);
            FlValue *part = slice_value(c, all, sl[k][0], sl[k][1], sl[k][2], sp);
            if (part->kind == VK_ERROR) return part;
            dim = (int64_t)part->list.len;
        }
        fl_v_list_push(c, out, fl_v_int(c, dim));
    }
    fl_v_rec_set(c, r, "shape", out);
    return r;
}

FlValue *fl_ev_find_attr(Ctx *c, FlValue *obj, const char *name, FlSpan sp) {
    switch (obj->kind) {
    case VK_MODULE: {
        FlValue *v = fl_map_find_str(&obj->mod->globals->map, name);
        if (v) return v;
        /* a submodule not imported yet: fluid.layers after `import fluid` */
        if (obj->mod->is_stdlib || obj->mod->path) {
            char *dotted = fl_arena_printf(&c->arena, "%s.%s", obj->mod->name, name);
            return fl_map_find_str(&c->modules, dotted);
        }
        return NULL;
    }
    case VK_RECORD: {
        FlValue *v = fl_map_find_str(&obj->rec.attrs->map, name);
        if (v || !obj->rec.cls) return v;
        v = fl_ev_class_attr(obj->rec.cls, name);
        FlValue *self = obj->rec.bind ? obj->rec.bind : obj;
        return v ? fl_ev_class_member(c, v, self->rec.cls, self, sp) : NULL;
    }
    case VK_FUNC:
    case VK_BUILTIN:
        if (strcmp(name, "__name__") != 0) return NULL;
        return fl_v_cstr(c, obj->kind == VK_BUILTIN ? obj->builtin.name
                            : obj->func.def->def.name ? obj->func.def->def.name : "<lambda>");
    case VK_CLASS: {
        if (strcmp(name, "__name__") == 0) return fl_v_cstr(c, obj->cls.name);
        FlValue *v = fl_ev_class_attr(obj, name);
        return v ? fl_ev_class_member(c, v, obj, NULL, sp) : NULL;
    }
    case VK_NONE: case VK_BOOL: case VK_INT: case VK_FLOAT: case VK_STR: case VK_LIST:
    case VK_TUPLE: case VK_DICT: case VK_VAR: case VK_GUARD: case VK_PROGRAM: case VK_READER:
    case VK_ERROR: case VK_SET: case VK_COUNT: break;
    }
    return NULL;
}

FlValue *fl_ev_getattr(Ctx *c, FlValue *obj, const char *name, FlSpan sp) {
    switch (obj->kind) {
    case VK_ERROR: return c->error;
    case VK_MODULE: {
        FlValue *v = fl_ev_find_attr(c, obj, name, sp);
        if (v) return v;
        const char *sug = fl_ev_suggest(c, name, obj->mod->globals);
        if (sug) return fl_ev_error(c, sp, "module '%s' has no attribute '%s'; did you mean '%s'?", obj->mod->name, name, sug);
        return fl_ev_error(c, sp, "module '%s' has no attribute '%s'", obj->mod->name, name);
    }
    case VK_RECORD: {
        FlValue *v = fl_ev_find_attr(c, obj, name, sp);
        if (v) return v;
        return fl_ev_error(c, sp, "'%s' object has no attribute '%s'", obj->rec.type, name);
    }
    case VK_CLASS: {
        FlValue *v = fl_ev_find_attr(c, obj, name, sp);
        if (v) return v;
        return fl_ev_error(c, sp, "class '%s' has no attribute '%s'", obj->cls.name, name);
    }
    case VK_VAR: return fl_ev_var_method(c, obj, name, sp);
    case VK_FUNC:
    case VK_BUILTIN: {
        FlValue *v = fl_ev_find_attr(c, obj, name, sp); /* __name__ */
        if (v) return v;
        break;
    }
    case VK_NONE: case VK_BOOL: case VK_INT: case VK_FLOAT: case VK_STR: case VK_LIST:
    case VK_TUPLE: case VK_DICT: case VK_GUARD: case VK_PROGRAM: case VK_READER: case VK_SET: case VK_COUNT: break;
    }
    return fl_ev_value_method(c, obj, name, sp);
}

/* Dict keys are the immutable values; reports others. */
static bool check_key(Ctx *c, FlValue *k, FlSpan sp) {
    if (k->kind == VK_STR || k->kind == VK_INT || k->kind == VK_BOOL || k->kind == VK_FLOAT ||
        k->kind == VK_TUPLE || k->kind == VK_NONE)
        return true;
    fl_ev_error(c, sp, "a %s cannot be a dict key", fl_v_type_name(k));
    return false;
}

typedef struct Comp {
    FlAst *n;       /* the LISTCOMP or DICTCOMP */
    Env *outer;     /* where the comprehension is written */
    Env *scope;     /* its own: the targets of its 'for' clauses */
    FlValue *out;   /* the list or dict being built */
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
    if (fl_ev_is_reader_batch(it)) { /* the driver's (docs/driver.md, "Data") */
        q->out = fl_ev_batch_comp(c, q->scope, n, it);
        return q->out->kind != VK_ERROR;
    }
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
        if (!fl_ev_ct_iteration(c, n->span, "comprehension")) return false;
        if (c->arena.used_total > MEMORY_LIMIT) {
            fl_ev_error(c, n->span, "this comprehension is too large to run at compile time (more than 512 MiB)");
            c->aborted = true;
            return false;
        }
        if (!fl_ev_assign(c, q->scope, cl->loop.target, seq->list.items[i]) || !comp_clause(c, q, k + 1))
            return false;
    }
    return true;
}

/* [elt for ... if ...] and {key: val for ...}: the clauses nest left to right, as in Python, and
 * their targets are bound in a scope of the comprehension's own (Python 3): they do not leak. */
static FlValue *eval_comp(Ctx *c, Env *e, FlAst *n) {
    Comp q = {n, e, fl_env_new(c, e), n->kind == FL_AST_LISTCOMP ? fl_v_list(c, VK_LIST) : fl_v_dict(c)};
    FlValue *r = comp_clause(c, &q, 0) ? q.out : c->error;
    if (!q.scope->shared) fl_map_fini(&q.scope->map); /* as a call's locals (call_func) */
    return r;
}

/* A comparison or a chain of them (`a < b < c` is `a < b and b < c` with b evaluated once):
 * *last is the rightmost operand's value. On compile-time values a false link ends the chain
 * (the operands after it are not evaluated); when a link is a Var, the links are joined by
 * logical_and ops. */
static FlValue *compare_chain(Ctx *c, Env *e, FlAst *n, FlValue **last) {
    FlValue *l, *left;
    if (n->kind == FL_AST_CMP_CHAIN) {
        left = compare_chain(c, e, n->binop.l, &l);
        if (left->kind == VK_ERROR) return left;
        if (left->kind != VK_VAR) {
            bool ok, t = fl_v_truthy(c, left, n->binop.l->span, &ok);
            if (!ok) return c->error;
            if (!t) return left;
        }
    } else {
        left = NULL;
        l = fl_ev_expr(c, e, n->binop.l);
    }
    FlValue *r = fl_ev_expr(c, e, n->binop.r);
    *last = r;
    FlValue *res = fl_ev_compare(c, n->binop.op, l, r, n->span);
    if (!left || res->kind == VK_ERROR) return res;
    if (left->kind == VK_VAR && res->kind == VK_VAR) return fl_ev_op2(c, "logical_and", left, res, n->span);
    if (left->kind == VK_VAR) { /* Var link, then a compile-time one: the chain is the Var when it holds */
        bool ok, t = fl_v_truthy(c, res, n->span, &ok);
        return !ok ? c->error : t ? left : res;
    }
    return res;
}

FlValue *fl_ev_expr(Ctx *c, Env *e, FlAst *n) {
    if (++c->depth > MAX_DEPTH) {
        c->depth--;
        return fl_ev_error(c, n->span, "expression nested too deeply");
    }
    FlValue *res = c->error;
    switch (n->kind) {
    case FL_AST_NAME: {
        FlValue *v = fl_env_find_then(e, c->builtins, n->name);
        if (!v) {
            const char *sug = fl_ev_suggest(c, n->name, e);
            if (sug) res = fl_ev_error(c, n->span, "unknown name '%s'; did you mean '%s'?", n->name, sug);
            else res = fl_ev_error(c, n->span, "unknown name '%s'", n->name);
        }
        else res = v;
        break;
    }
    /* a literal is one value however often it runs, as a constant of a Python code object */
    case FL_AST_INT: res = n->memo ? n->memo : (n->memo = fl_v_int(c, n->ival)); break;
    case FL_AST_FLOAT: res = n->memo ? n->memo : (n->memo = fl_v_float(c, n->fval)); break;
    case FL_AST_STR: res = n->memo ? n->memo : (n->memo = fl_v_str(c, n->str, n->slen)); break;
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
        int ndt;
        if (fl_ev_is_driver_var(c, o)) { /* a fetched value: numpy's indexing (driver_values.c) */
            res = fl_ev_driver_subscript(c, e, o, ix, n->span);
        } else if (fl_ev_ndarray_numbers(o, &ndt)) { /* numpy.array(...) of compile-time numbers */
            res = ndarray_subscript(c, e, o, ix, n->span);
        } else if (ix->kind == FL_AST_SLICE) {
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
        if (n->list.set) { /* {a, b}: pyset.c */
            res = fl_ev_set_display(c, e, n);
            break;
        }
        FlValue *l = fl_v_list(c, n->kind == FL_AST_LIST ? VK_LIST : VK_TUPLE);
        bool bad = false;
        for (size_t i = 0; i < n->list.items.len; i++) {
            FlAst *item = n->list.items.items[i];
            FlValue *x = fl_ev_expr(c, e, item->kind == FL_AST_STARRED ? item->unop.e : item);
            if (x->kind != VK_ERROR && item->kind == FL_AST_STARRED) { /* [*xs, y]: spliced */
                FlValue *xs = fl_ev_as_list(c, x, item->span);
                if (xs->kind == VK_ERROR) bad = true;
                for (size_t k = 0; xs->kind != VK_ERROR && k < xs->list.len; k++) fl_v_list_push(c, l, xs->list.items[k]);
                continue;
            }
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
        res = fl_ev_binop(c, n->binop.op, l, r, n->span);
        break;
    }
    case FL_AST_UNOP: res = fl_ev_unop(c, n->unop.op, fl_ev_expr(c, e, n->unop.e), n->span); break;
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
            res = fl_ev_op2(c, n->kind == FL_AST_AND ? "logical_and" : "logical_or", l, r, n->span);
            break;
        }
        bool ok;
        bool t = fl_v_truthy(c, l, n->binop.l->span, &ok);
        if (!ok) break;
        if ((n->kind == FL_AST_AND && !t) || (n->kind == FL_AST_OR && t)) res = l;
        else res = fl_ev_expr(c, e, n->binop.r);
        break;
    }
    case FL_AST_COMPARE:
    case FL_AST_CMP_CHAIN: {
        FlValue *last;
        res = compare_chain(c, e, n, &last);
        break;
    }
    case FL_AST_STARRED:
        res = fl_ev_error(c, n->span, "a starred expression is only allowed in a list, a tuple or an assignment target");
        break;
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
    case FL_AST_LAMBDA: res = fl_ev_make_func(c, e, n); break;
    case FL_AST_LISTCOMP:
    case FL_AST_DICTCOMP: res = eval_comp(c, e, n); break;
    case FL_AST_COMP_FOR: case FL_AST_COMP_IF: case FL_AST_EXPR_STMT: case FL_AST_ASSIGN:
    case FL_AST_AUGASSIGN: case FL_AST_DEF: case FL_AST_RETURN: case FL_AST_IF: case FL_AST_FOR:
    case FL_AST_WHILE: case FL_AST_BREAK: case FL_AST_CONTINUE: case FL_AST_PASS:
    case FL_AST_IMPORT: case FL_AST_FROM_IMPORT: case FL_AST_WITH: case FL_AST_GO:
    case FL_AST_PARALLEL_FOR: case FL_AST_SELECT: case FL_AST_CASE: case FL_AST_CLASS:
    case FL_AST_ASSERT: case FL_AST_RAISE: case FL_AST_GLOBAL: case FL_AST_TRY: case FL_AST_COUNT:
        res = fl_ev_error(c, n->span, "a %s is not an expression", fl_ast_kind_name(n->kind));
        break;
    }
    c->depth--;
    return res;
}

/* ------------------------------------------------------------------ calls */

FlValue *fl_ev_make_func(Ctx *c, Env *e, FlAst *n) {
    FlValue *f = fl_v_new(c, VK_FUNC);
    f->func.def = n;
    f->func.closure = e;
    fl_env_share(e);
    f->func.mod = c->cur_mod;
    return f;
}

static FlValue *call_func(Ctx *c, FlValue *fn, CallArgs *a) {
    CallArgs with_self;
    if (fn->func.self) { /* a bound method: the instance comes first */
        with_self = *a;
        with_self.pos = fl_arena_alloc(&c->arena, (a->npos + 1) * sizeof *with_self.pos);
        with_self.pos[0] = fn->func.self;
        if (a->npos) memcpy(with_self.pos + 1, a->pos, a->npos * sizeof *a->pos);
        with_self.npos = a->npos + 1;
        with_self.pos_spans = NULL;
        a = &with_self;
    }
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
            Module *saved = c->cur_mod;
            c->cur_mod = fn->func.mod;
            vals[i] = fl_ev_expr(c, fn->func.closure, ps[i].deflt);
            c->cur_mod = saved;
        }
        fl_env_set(le, ps[i].name, vals[i]);
    }
    if (c->func_depth > 150) return fl_ev_error(c, sp, "maximum recursion depth exceeded in %s()", fname);
    Module *saved = c->cur_mod;
    c->cur_mod = fn->func.mod;
    int saved_loop = c->loop_depth;
    c->loop_depth = 0;
    FlValue *saved_owner = c->cur_owner, *saved_self = c->cur_self;
    Env *saved_locals = c->cur_locals;
    c->cur_locals = le;
    c->cur_owner = fn->func.owner;
    c->cur_self = np && !ps[0].star ? vals[0] : NULL;
    FL_VEC_PUSH(&c->rtloops, NULL); /* break and continue cannot leave a function */
    RtFunc rtf, *saved_rtf = c->rtfunc;
    fl_ev_rtfunc_begin(c, &rtf);
    c->func_depth++;
    bool user_fn = fn->func.mod && !fn->func.mod->is_stdlib;
    c->user_calls += user_fn;
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
    if (rtf.result && r->kind != VK_ERROR) r = fl_ev_rtfunc_value(c, &rtf, def, r, sp); /* driver_loop.c */
    c->ret = saved_ret;
    c->func_depth--;
    c->rtfunc = saved_rtf;
    c->user_calls -= user_fn;
    c->rtloops.len--;
    c->cur_owner = saved_owner;
    c->cur_self = saved_self;
    c->cur_locals = saved_locals;
    c->loop_depth = saved_loop;
    c->cur_mod = saved;
    /* locals nothing can reach any more: their map's memory goes back now, not at the end of the
     * compilation (a call of every layer would otherwise keep its own) */
    if (!le->shared) fl_map_fini(&le->map);
    return r;
}

FlValue *fl_ev_call(Ctx *c, FlValue *fn, CallArgs *a) {
    if (fn->kind == VK_ERROR) return c->error;
    for (size_t i = 0; i < a->npos; i++)
        if (a->pos[i]->kind == VK_ERROR) return c->error;
    for (size_t i = 0; i < a->nkw; i++)
        if (a->kwvals[i]->kind == VK_ERROR) return c->error;
    Module *cm = c->cur_mod;
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
    else if (fn->kind == VK_CLASS) r = fl_ev_instantiate(c, fn, a);
    else if (fn->kind == VK_RECORD && fn->rec.cls && fl_ev_class_attr(fn->rec.cls, "__call__"))
        r = fl_ev_call(c, fl_ev_find_attr(c, fn, "__call__", a->span), a);
    else r = fl_ev_error(c, a->span, "'%s' object is not callable", fl_v_type_name(fn));
    if (set_span) c->have_err_span = false;
    return r;
}

FlValue *fl_ev_call_simple(Ctx *c, FlValue *fn, FlSpan sp, FlValue **pos, size_t npos) {
    CallArgs a = {.pos = pos, .npos = npos, .span = sp};
    return fl_ev_call(c, fn, &a);
}

/* The arguments of one call being evaluated: in the caller's frame while they fit (nearly every
 * call), on the heap past that. */
#define CALL_ARGS_INLINE 8
typedef struct ArgList {
    FlValue *pos_in[CALL_ARGS_INLINE], *kwv_in[CALL_ARGS_INLINE];
    FlSpan span_in[CALL_ARGS_INLINE];
    const char *kwn_in[CALL_ARGS_INLINE];
    FlValue **pos, **kwv;
    FlSpan *spans;
    const char **kwn;
    size_t npos, pos_cap, nkw, kw_cap;
} ArgList;

/* Moves an array of len elements of `elem` bytes from buf (where it starts) or the heap to a heap
 * block twice as large. */
static void *args_grow(void *data, const void *buf, size_t len, size_t elem) {
    void *p = fl_xmalloc(fl_mul_size(2 * len, elem));
    memcpy(p, data, len * elem);
    if (data != buf) free(data);
    return p;
}
/* Room for one more element in the parallel arrays *x and *y (len of *cap used), which start in
 * xbuf and ybuf. */
static void args_room(void **x, void **y, const void *xbuf, const void *ybuf, size_t len, size_t *cap,
                      size_t xe, size_t ye) {
    if (len < *cap) return;
    *x = args_grow(*x, xbuf, len, xe);
    *y = args_grow(*y, ybuf, len, ye);
    *cap *= 2;
}
static void args_push_pos(ArgList *l, FlValue *v, FlSpan sp) {
    args_room((void **)&l->pos, (void **)&l->spans, l->pos_in, l->span_in, l->npos, &l->pos_cap,
              sizeof *l->pos, sizeof *l->spans);
    l->pos[l->npos] = v;
    l->spans[l->npos++] = sp;
}
static void args_push_kw(ArgList *l, const char *name, FlValue *v) {
    args_room((void **)&l->kwn, (void **)&l->kwv, l->kwn_in, l->kwv_in, l->nkw, &l->kw_cap,
              sizeof *l->kwn, sizeof *l->kwv);
    l->kwn[l->nkw] = name;
    l->kwv[l->nkw++] = v;
}

static FlValue *eval_call(Ctx *c, Env *e, FlAst *n) {
    FlValue *fn = fl_ev_expr(c, e, n->call.fn);
    size_t na = n->call.nargs;
    ArgList l;
    l.pos = l.pos_in;
    l.kwv = l.kwv_in;
    l.spans = l.span_in;
    l.kwn = l.kwn_in;
    l.npos = l.nkw = 0;
    l.pos_cap = l.kw_cap = CALL_ARGS_INLINE;
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
            for (size_t k = 0; k < v->list.len; k++) args_push_pos(&l, v->list.items[k], ar->span);
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
                args_push_kw(&l, fl_intern_str(&c->in, v->dict.keys[k]->str.s), v->dict.vals[k]);
            }
        } else if (ar->name) {
            for (size_t k = 0; k < l.nkw; k++)
                if (l.kwn[k] == ar->name) {
                    fl_ev_error(c, ar->span, "keyword argument '%s' repeated", ar->name);
                    bad = true;
                }
            args_push_kw(&l, ar->name, v);
        } else {
            args_push_pos(&l, v, ar->span);
        }
    }
    FlValue *r = c->error;
    if (!bad) {
        CallArgs a = {l.pos, l.npos, l.kwn, l.kwv, l.nkw, n->span, l.spans};
        r = fl_ev_call(c, fn, &a);
    }
    if (l.pos != l.pos_in) free(l.pos);
    if (l.spans != l.span_in) free(l.spans);
    if (l.kwn != l.kwn_in) free(l.kwn);
    if (l.kwv != l.kwv_in) free(l.kwv);
    return r;
}

bool fl_ev_bind(Ctx *c, const char *fname, const char *spec, CallArgs *a, FlValue **out) {
    /* the spec's names, read in place (each builtin call binds through here) */
    const char *names[32];
    int nlen[32];
    bool opt[32];
    int star = -1, dstar = -1, np = 0;
    for (const char *p = spec; *p && np < 32;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        if (p[0] == '*' && p[1] == '*') {
            dstar = np;
            p += 2;
        } else if (p[0] == '*') {
            star = np;
            p += 1;
        }
        const char *q = p;
        while (*q && *q != ' ') q++;
        opt[np] = q > p && q[-1] == '=';
        names[np] = p;
        nlen[np] = (int)(q - p) - opt[np];
        np++;
        p = q;
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
        const char *kn = a->kwnames[k];
        size_t kl = strlen(kn);
        int i;
        for (i = 0; i < np; i++)
            if (i != star && i != dstar && (size_t)nlen[i] == kl && memcmp(names[i], kn, kl) == 0) break;
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
            fl_ev_error(c, a->span, "%s() missing required argument '%.*s'", fname, nlen[i], names[i]);
            return false;
        }
        if (out[i] && out[i]->kind == VK_NONE && opt[i]) out[i] = NULL;
    }
    return true;
}
