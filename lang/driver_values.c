/* driver_values.c: what a script does with fetched values beyond v[i], float(v) and printing
 * (docs/driver.md, "Fetched values"): numpy's indexing and slicing, its functions and methods,
 * math of a one-element value, and sys.exit. Each is an op (or a few) of the driver, which the
 * runtime's kernels run; nothing here computes a fetched value at compile time.
 *
 *   v[a:b], v[:, k], v[i, j]   slice over the sliced axes, squeeze of the int ones
 *   v.shape, len(v)            a tuple of ints: compile-time ones where the dims are known, else
 *                              numbers of the driver (a shape op's)
 *   v.mean() v.sum() v.min() v.max(), numpy.mean/average/sum/min/max(v, axis=None)
 *                              reduce_* (every axis: a number, rank 0, as numpy's scalars)
 *   numpy.sort(v)              argsort along the last axis
 *   numpy.array(v), numpy.array([a, b]), numpy.concatenate([a, b], axis)
 *                              the value itself (or cast), stack, concat
 *   math.isnan/isinf/sqrt/exp/log(v)
 *                              the one element as a float64 number, then isnan/isinf/sqrt/...
 *   sys.exit(x)                exit (with a print_line to stderr of a message first)
 *
 * The native module `_values` holds the functions stdlib/numpy.fl and stdlib/sys.fl call;
 * expr.c, builtins.c, pylib.c and stmt.c dispatch driver vars here (one call each).
 */
#include <stdint.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/eval_impl.h"

/* ------------------------------------------------------------------ helpers */

/* op(kw...) on the driver: in the driver's current block (its global one outside a driver
 * body), whatever the inputs. */
static FlValue *dop(Ctx *c, const char *type, const char **names, FlValue **vals, size_t n, FlSpan sp) {
    CallArgs a = {.kwnames = names, .kwvals = vals, .nkw = n, .span = sp};
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    FlValue *r = fl_ev_op(c, type, &a, sp);
    fl_ev_driver_leave(c, &s);
    return r;
}

FlValue *fl_ev_driver_kwop(Ctx *c, const char *type, const char **names, FlValue **vals, size_t n, FlSpan sp) {
    return dop(c, type, names, vals, n, sp);
}

static FlValue *ints(Ctx *c, const int64_t *v, size_t n) {
    FlValue *l = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < n; i++) fl_v_list_push(c, l, fl_v_int(c, v[i]));
    return l;
}

/* The declaration of driver var v (looked up in the driver, wherever ops go now). */
static FlVarDesc *desc(Ctx *c, FlValue *v) {
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    FlVarDesc *d = fl_ev_var_desc(c, v);
    fl_ev_driver_leave(c, &s);
    return d;
}

FlValue *fl_ev_driver_const(Ctx *c, FlValue *v, FlSpan sp) { return fl_ev_driver_const_as(c, v, -1, sp); }

FlValue *fl_ev_driver_const_as(Ctx *c, FlValue *v, int dtype, FlSpan sp) {
    int64_t shape[FL_IR_MAX_DIMS];
    int ndim = -1;
    FlValue *nums = fl_v_list(c, VK_LIST);
    if (!fl_ev_driver_flatten(c, v, 0, shape, &ndim, nums, sp)) return c->error;
    bool all_int = true;
    double *fv = fl_xcalloc(nums->list.len + 1, sizeof *fv);
    for (size_t i = 0; i < nums->list.len; i++) {
        all_int = all_int && nums->list.items[i]->kind != VK_FLOAT;
        fv[i] = fl_v_num(nums->list.items[i]);
    }
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    const char *name = fl_arena_printf(&c->arena, "%s.tmp_0", fl_ev_unique(c, "assign_value"));
    FlVarDesc *d = fl_ev_new_var(c, c->b.block, name, sp);
    d->stop_gradient = true;
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "assign_value", sp);
    fl_ir_op_add_output(op, "Out", name);
    fl_ir_op_set_ints(op, "shape", shape, (size_t)(ndim > 0 ? ndim : 0));
    fl_ir_op_set_int(op, "dtype", dtype >= 0 ? dtype : all_int ? FL_DT_INT64 : FL_DT_FLOAT64);
    fl_ir_op_set_floats(op, "values", fv, nums->list.len);
    fl_ev_set_int_twin(c, op, "values", nums);
    free(fv);
    FlValue *r = fl_ev_infer(c, c->b.block, op, sp) ? fl_v_var(c, name) : c->error; /* the driver's */
    fl_ev_driver_leave(c, &s);
    return r;
}

/* A driver value of v: a driver var as it is; compile-time numbers or nested lists of them a
 * constant of the driver (float64 unless they are all ints, as numpy's arrays); else NULL. */
static FlValue *list_stack(Ctx *c, FlValue *l, FlSpan sp);

static FlValue *as_value(Ctx *c, FlValue *v, const char *what, FlSpan sp) {
    if (fl_ev_is_driver_var(c, v)) return v;
    if (fl_ev_is_rt_list(v)) return list_stack(c, v, sp);
    if (fl_v_is_num(v) || fl_v_is_seq(v)) {
        FlValue *r = fl_ev_driver_const(c, v, sp);
        if (r->kind != VK_ERROR) return r;
        return NULL;
    }
    fl_ev_error(c, sp, "%s takes a fetched value, a number or a list of numbers, found %s", what, fl_v_type_name(v));
    return NULL;
}

/* X converted to dt (a cast op), or X when it has that dtype. */
static FlValue *cast_to(Ctx *c, FlValue *x, FlDType dt, FlSpan sp) {
    FlVarDesc *d = desc(c, x);
    if (!d || d->dtype == dt) return x;
    const char *names[3] = {"X", "in_dtype", "out_dtype"};
    FlValue *vals[3] = {x, fl_v_int(c, d->dtype), fl_v_int(c, dt)};
    return dop(c, "cast", names, vals, 3, sp);
}

/* ------------------------------------------------------------------ indexing and slicing */

/* An index of a fetched value as an int, false (reported) for anything else. */
static bool int_index(Ctx *c, FlValue *x, int64_t *out, FlSpan sp) {
    if (x->kind == VK_INT || x->kind == VK_BOOL) {
        *out = x->kind == VK_INT ? x->i : x->b;
        return true;
    }
    fl_ev_error(c, sp, "a fetched value is indexed by ints and slices here (v[0], v[-1], v[1:3], v[:, k]), found %s",
                fl_v_type_name(x));
    return false;
}

/* v[[i, j, ...]]: numpy's integer-array indexing along the first dim, the rows i, j, ... in that
 * order (a gather of a constant index; a negative index counts from the end, which needs the dim
 * known when the script compiles). */
FlValue *fl_ev_driver_take(Ctx *c, FlValue *v, FlValue *idx, FlSpan sp) {
    FlVarDesc *d = desc(c, v);
    if (!d) return fl_ev_error(c, sp, "var '%s' is not visible here", v->var.name);
    if (d->ndim == 0) return fl_ev_error(c, sp, "an index list of a number (a fetched value of rank 0)");
    if (idx->list.len == 0) return fl_ev_error(c, sp, "an empty index list of a fetched value");
    int64_t dim = d->shape[0];
    FlValue *rows = fl_v_list(c, VK_LIST);
    for (size_t k = 0; k < idx->list.len; k++) {
        int64_t i;
        if (!int_index(c, idx->list.items[k], &i, sp)) return c->error;
        if (dim >= 0 && (i >= dim || i < -dim))
            return fl_ev_error(c, sp, "index %lld is out of bounds for dim 0 of the fetched value '%s' (size %lld)",
                               (long long)i, v->var.name, (long long)dim);
        if (i < 0 && dim < 0)
            return fl_ev_error(c, sp, "a negative index (%lld) in an index list of '%s', whose first dim is known only "
                                      "at run time: index from the start", (long long)i, v->var.name);
        fl_v_list_push(c, rows, fl_v_int(c, i < 0 ? i + dim : i));
    }
    FlValue *index = fl_ev_driver_const(c, rows, sp);
    if (index->kind == VK_ERROR) return index;
    const char *names[2] = {"X", "Index"};
    FlValue *vals[2] = {v, index};
    return dop(c, "gather", names, vals, 2, sp);
}

FlValue *fl_ev_driver_subscript(Ctx *c, Env *e, FlValue *v, FlAst *ix, FlSpan sp) {
    if (ix->kind != FL_AST_SLICE && ix->kind != FL_AST_TUPLE) { /* v[i]: the index op */
        FlValue *i = fl_ev_expr(c, e, ix);
        return i->kind == VK_ERROR ? i : fl_ev_driver_index(c, v, i, sp);
    }
    FlAst *one[1] = {ix};
    FlAst **items = ix->kind == FL_AST_TUPLE ? ix->list.items.items : one;
    size_t n = ix->kind == FL_AST_TUPLE ? ix->list.items.len : 1;
    bool all_int = true;
    for (size_t k = 0; k < n; k++) all_int = all_int && items[k]->kind != FL_AST_SLICE;
    if (all_int) { /* v[i, j] is v[i][j]: index ops */
        FlValue *r = v;
        for (size_t k = 0; k < n && r->kind != VK_ERROR; k++) {
            FlValue *i = fl_ev_expr(c, e, items[k]);
            r = i->kind == VK_ERROR ? i : fl_ev_driver_index(c, r, i, items[k]->span);
        }
        return r;
    }
    FlVarDesc *d = desc(c, v);
    if (!d) return fl_ev_error(c, sp, "var '%s' is not visible here", v->var.name);
    if ((int)n > d->ndim)
        return fl_ev_error(c, sp, "too many indices for the fetched value '%s': it has %d dims, %zu are given",
                           v->var.name, d->ndim, n);
    int64_t axes[FL_IR_MAX_DIMS], starts[FL_IR_MAX_DIMS], ends[FL_IR_MAX_DIMS], drop[FL_IR_MAX_DIMS];
    size_t na = 0, nd = 0;
    for (size_t k = 0; k < n; k++) {
        FlAst *it = items[k];
        int64_t dim = d->shape[k];
        if (it->kind != FL_AST_SLICE) {
            FlValue *x = fl_ev_expr(c, e, it);
            int64_t i;
            if (x->kind == VK_ERROR || !int_index(c, x, &i, it->span)) return c->error;
            if (dim >= 0 && (i >= dim || i < -dim))
                return fl_ev_error(c, it->span, "index %lld is out of bounds for dim %zu of the fetched value '%s' "
                                   "(size %lld)", (long long)i, k, v->var.name, (long long)dim);
            axes[na] = (int64_t)k;
            starts[na] = i;
            ends[na++] = i == -1 ? INT32_MAX : i + 1;
            drop[nd++] = (int64_t)k;
            continue;
        }
        FlValue *b[3] = {NULL, NULL, NULL};
        FlAst *parts[3] = {it->slice.lo, it->slice.hi, it->slice.step};
        for (int p = 0; p < 3; p++) {
            if (!parts[p]) continue;
            b[p] = fl_ev_expr(c, e, parts[p]);
            if (b[p]->kind == VK_ERROR) return c->error;
            if (b[p]->kind == VK_NONE) b[p] = NULL;
        }
        int64_t lo = 0, hi = INT32_MAX, st = 1;
        if ((b[2] && !int_index(c, b[2], &st, it->span)) || (b[0] && !int_index(c, b[0], &lo, it->span)) ||
            (b[1] && !int_index(c, b[1], &hi, it->span)))
            return c->error;
        if (st != 1)
            return fl_ev_error(c, it->span, "a slice of a fetched value takes a step of 1 here (v[a:b]), found %lld",
                               (long long)st);
        if (!b[0] && !b[1]) continue; /* `:` keeps the axis whole */
        axes[na] = (int64_t)k;
        starts[na] = lo;
        ends[na++] = hi;
    }
    FlValue *r = v;
    if (na) {
        const char *names[4] = {"Input", "axes", "starts", "ends"};
        FlValue *vals[4] = {r, ints(c, axes, na), ints(c, starts, na), ints(c, ends, na)};
        r = dop(c, "slice", names, vals, 4, sp);
        if (r->kind == VK_ERROR) return r;
    }
    if (nd) {
        const char *names[2] = {"X", "axes"};
        FlValue *vals[2] = {r, ints(c, drop, nd)};
        r = dop(c, "squeeze", names, vals, 2, sp);
    }
    return r;
}

/* ------------------------------------------------------------------ attributes and len */

/* v.shape: a tuple of ints, as numpy's: compile-time ints when every dim is known when the script
 * compiles, else numbers of the driver (int64, rank 0), the dims of a shape op (a run may give the
 * other dims too: resize's actual_shape). */
static FlValue *shape_of(Ctx *c, FlValue *v, FlSpan sp) {
    FlVarDesc *d = desc(c, v);
    if (!d) return fl_ev_error(c, sp, "var '%s' is not visible here", v->var.name);
    bool known = true;
    for (int i = 0; i < d->ndim; i++) known = known && d->shape[i] >= 0;
    FlValue *t = fl_v_list(c, VK_TUPLE), *s = NULL;
    for (int i = 0; i < d->ndim; i++) {
        if (known) {
            fl_v_list_push(c, t, fl_v_int(c, d->shape[i]));
            continue;
        }
        if (!s) {
            const char *names[1] = {"Input"};
            FlValue *vals[1] = {v};
            s = dop(c, "shape", names, vals, 1, sp);
            if (s->kind == VK_ERROR) return s;
        }
        FlValue *k = fl_ev_driver_index(c, s, fl_v_int(c, i), sp);
        if (k->kind != VK_ERROR) k = cast_to(c, k, FL_DT_INT64, sp);
        if (k->kind == VK_ERROR) return k;
        fl_v_list_push(c, t, k);
    }
    return t;
}

FlValue *fl_ev_driver_len(Ctx *c, FlValue *v, FlSpan sp) {
    FlVarDesc *d = desc(c, v);
    if (d && d->ndim == 0) return fl_ev_error(c, sp, "len() of a number (a fetched value of rank 0)");
    if (d && d->shape[0] >= 0) return fl_v_int(c, d->shape[0]);
    FlValue *s = shape_of(c, v, sp);
    return s->kind == VK_ERROR ? s : s->list.items[0];
}

/* numpy's reductions: over axis (None: every axis, giving a number of rank 0). mean of ints is
 * float64, as numpy's. */
static FlValue *reduce(Ctx *c, const char *kind, FlValue *x, FlValue *axis, FlSpan sp) {
    char type[32];
    snprintf(type, sizeof type, "reduce_%s", kind);
    FlVarDesc *d = desc(c, x);
    if (d && strcmp(kind, "mean") == 0 && d->dtype != FL_DT_FLOAT32 && d->dtype != FL_DT_FLOAT64)
        x = cast_to(c, x, FL_DT_FLOAT64, sp);
    if (x->kind == VK_ERROR) return x;
    bool all = !axis || axis->kind == VK_NONE;
    if (!all && axis->kind != VK_INT)
        return fl_ev_error(c, sp, "numpy.%s(axis=...) takes an int or None here, found %s", kind, fl_v_type_name(axis));
    const char *names[3] = {"X", all ? "reduce_all" : "dim", "keep_dim"};
    FlValue *vals[3] = {x, all ? c->vtrue : ints(c, all ? NULL : &axis->i, 1), c->vfalse};
    FlValue *r = dop(c, type, names, vals, 3, sp);
    if (r->kind == VK_ERROR || !all) return r;
    FlVarDesc *rd = desc(c, r);
    return fl_ev_driver_item(c, r, rd ? rd->dtype : FL_DT_FLOAT32, sp);
}

/* v.mean(), v.sum(), ... as methods: a builtin bound to the value. */
static FlValue *m_reduce(Ctx *c, FlValue *self, CallArgs *a, const char *kind) {
    ARGS(kind, "axis=", 1);
    return reduce(c, kind, self, v[0], a->span);
}
static FlValue *m_mean(Ctx *c, FlValue *self, CallArgs *a) { return m_reduce(c, self, a, "mean"); }
static FlValue *m_sum(Ctx *c, FlValue *self, CallArgs *a) { return m_reduce(c, self, a, "sum"); }
static FlValue *m_min(Ctx *c, FlValue *self, CallArgs *a) { return m_reduce(c, self, a, "min"); }
static FlValue *m_max(Ctx *c, FlValue *self, CallArgs *a) { return m_reduce(c, self, a, "max"); }

static FlValue *m_astype(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("astype", "dtype", 1);
    FlDType dt;
    if (!fl_ev_driver_dtype(c, v[0], &dt, a->span)) return c->error;
    FlValue *r = cast_to(c, self, dt, a->span);
    return r;
}

static FlValue *m_flatten(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("flatten", "", 0);
    (void)v;
    int64_t m1 = -1;
    const char *names[2] = {"X", "shape"};
    FlValue *vals[2] = {self, ints(c, &m1, 1)};
    return dop(c, "reshape", names, vals, 2, a->span);
}

/* v.reshape(d0, d1, ...) or v.reshape((d0, d1, ...)): numpy's, positive dims and at most one -1
 * (Fluid's reshape op reads 0 as "keep this dim", which numpy does not: refused). */
static FlValue *m_reshape(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("reshape", "d0 d1= d2= d3= d4= d5=", 6);
    FlValue **dims = v;
    size_t n = 0;
    while (n < 6 && v[n]) n++;
    if (n == 1 && (v[0]->kind == VK_LIST || v[0]->kind == VK_TUPLE)) {
        dims = v[0]->list.items;
        n = v[0]->list.len;
    }
    if (n == 0 || n > 6) return fl_ev_error(c, a->span, "reshape() takes 1 to 6 dims here, found %zu", n);
    int64_t shape[6];
    int unknown = 0;
    for (size_t i = 0; i < n; i++) {
        if (!fl_ev_want_int(c, dims[i], "a reshape() dim", a->span, &shape[i])) return c->error;
        unknown += shape[i] == -1;
        if ((shape[i] < 1 && shape[i] != -1) || unknown > 1)
            return fl_ev_error(c, a->span, "reshape() takes dims >= 1 and at most one -1, found %lld at dim %zu",
                               (long long)shape[i], i);
    }
    const char *names[2] = {"X", "shape"};
    FlValue *vals[2] = {self, ints(c, shape, n)};
    return dop(c, "reshape", names, vals, 2, a->span);
}

/* t.shape() and t._dtype() of a LoDTensor exe.run(return_numpy=False) gave (Fluid's core.Tensor):
 * its dims as a list, its dtype as core.VarDesc.VarType's (a dtype name here). */
static FlValue *t_shape(Ctx *c, FlValue *self, CallArgs *a) {
    if (a->npos || a->nkw) return fl_ev_error(c, a->span, "shape() takes no arguments");
    FlValue *t = shape_of(c, self, a->span);
    if (t->kind == VK_ERROR) return t;
    FlValue *l = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < t->list.len; i++) fl_v_list_push(c, l, t->list.items[i]);
    return l;
}

static FlValue *t_dtype(Ctx *c, FlValue *self, CallArgs *a) {
    if (a->npos || a->nkw) return fl_ev_error(c, a->span, "_dtype() takes no arguments");
    FlVarDesc *d = desc(c, self);
    return d ? fl_v_cstr(c, fl_dtype_name(d->dtype)) : c->error;
}

FlValue *fl_ev_driver_attr(Ctx *c, FlValue *v, const char *name, FlSpan sp) {
    static const struct {
        const char *name;
        BuiltinFn fn;
    } methods[] = {{"mean", m_mean}, {"sum", m_sum},         {"min", m_min},
                   {"max", m_max},   {"astype", m_astype}, {"flatten", m_flatten},
                   {"reshape", m_reshape}, {"set", fl_ev_driver_m_set}};
    if (fl_map_find_str(&c->tensor_fetches, v->var.name)) { /* a LoDTensor: shape() is a method */
        if (strcmp(name, "shape") == 0) return fl_v_builtin(c, name, t_shape, v);
        if (strcmp(name, "_dtype") == 0) return fl_v_builtin(c, name, t_dtype, v);
    }
    if (strcmp(name, "shape") == 0) return shape_of(c, v, sp);
    FlValue *lod = fl_ev_lod_fetched_attr(c, v, name, sp); /* lod(), recursive_sequence_lengths() */
    if (lod) return lod;
    if (strcmp(name, "ndim") == 0) {
        FlVarDesc *d = desc(c, v);
        return d ? fl_v_int(c, d->ndim) : NULL;
    }
    for (size_t i = 0; i < FL_ARRAY_LEN(methods); i++)
        if (strcmp(methods[i].name, name) == 0) return fl_v_builtin(c, name, methods[i].fn, v);
    return NULL;
}

/* ------------------------------------------------------------------ dtypes */

bool fl_ev_driver_dtype(Ctx *c, FlValue *v, FlDType *out, FlSpan sp) {
    static const struct {
        const char *name;
        FlDType dt;
    } names[] = {{"float32", FL_DT_FLOAT32}, {"float64", FL_DT_FLOAT64}, {"int32", FL_DT_INT32},
                 {"int64", FL_DT_INT64},     {"bool", FL_DT_BOOL},       {"float", FL_DT_FLOAT64},
                 {"int", FL_DT_INT64},       {"float16", FL_DT_FLOAT16}, {"int8", FL_DT_INT8},
                 {"uint8", FL_DT_UINT8}};
    const char *n = v && v->kind == VK_STR ? v->str.s : NULL;
    for (size_t i = 0; n && i < FL_ARRAY_LEN(names); i++)
        if (strcmp(names[i].name, n) == 0) {
            *out = names[i].dt;
            return true;
        }
    fl_ev_error(c, sp, "a dtype here is numpy.float32, float64, int32, int64, bool, float16, int8, uint8, np.int, "
                "np.float or one of their names, found %s", n ? n : fl_v_type_name(v));
    return false;
}

/* ------------------------------------------------------------------ runtime lists */

/* x as the element an array of the runtime list l holds: an RT_LIST's [1, ...x's dims]
 * (numpy.array(l) is the elements stacked: the array's elements concatenated along their first
 * dim), a fetched array's x as it is; a LoDTensorArray's a LoDTensor or a fetched value. */
static FlValue *as_element(Ctx *c, FlValue *l, FlValue *x, FlSpan sp) {
    if (l->list.rt_kind == RT_TENSOR_ARRAY && fl_ev_is_lod_tensor(x)) {
        FlValue *lens = fl_v_rec_get(x, "_lens");
        if (lens && fl_v_is_seq(lens) && lens->list.len)
            return fl_ev_error(c, sp, "LoDTensorArray.append(): a tensor with sequence lengths (%zu level%s): the "
                               "elements of a LoDTensorArray here hold no LoD; append the sequences' data "
                               "(numpy.array(t)) or keep them in a list", lens->list.len, lens->list.len == 1 ? "" : "s");
        FlValue *data = fl_v_rec_get(x, "_data");
        if (!data || data->kind == VK_NONE)
            return fl_ev_error(c, sp, "LoDTensorArray.append(): the LoDTensor holds no data yet (t.set(array, place))");
        FlValue *dt = fl_v_is_rec(data, "ndarray") ? fl_v_rec_get(data, "_dtype") : NULL; /* numpy's astype */
        if (fl_v_is_rec(data, "ndarray")) data = fl_v_rec_get(data, "_value");
        x = fl_ev_is_driver_var(c, data) ? data : fl_ev_driver_const(c, data, sp);
        if (x->kind == VK_ERROR) return x;
        if (dt && dt->kind == VK_INT) x = cast_to(c, x, (FlDType)dt->i, sp);
    }
    if (l->list.rt_kind == RT_TENSOR_ARRAY && !fl_ev_is_driver_var(c, x))
        return fl_ev_error(c, sp, "LoDTensorArray.append() takes a LoDTensor (fluid.LoDTensor(), a fetched value), "
                           "found %s", fl_v_type_name(x));
    if (!fl_ev_is_driver_var(c, x)) {
        if (!fl_v_is_num(x))
            return fl_ev_error(c, sp, "a list filled at run time holds fetched values and numbers, found %s",
                               fl_v_type_name(x));
        x = fl_ev_driver_const(c, x, sp);
        if (x->kind == VK_ERROR) return x;
    }
    if (l->list.rt_kind != RT_LIST) return x;
    int64_t zero = 0;
    const char *names[2] = {"X", "axes"};
    FlValue *vals[2] = {x, ints(c, &zero, 1)};
    return dop(c, "unsqueeze", names, vals, 2, sp);
}

/* A runtime list's array and its length (an int64 [1] counter var of the driver, which each
 * append increments: a count kept beside the array, so that nothing reads the array before a
 * write has made it). */
static FlValue *rt_arr(FlValue *l) { return l->list.rt_array->list.items[0]; }
static FlValue *rt_count(FlValue *l) { return l->list.rt_array->list.items[1]; }

FlValue *fl_ev_driver_list_array(FlValue *l) { return rt_arr(l); }
FlValue *fl_ev_driver_list_count(FlValue *l) { return rt_count(l); }

/* arr[count] = x, then count += 1, in the current block (l: the list they hold). */
static bool array_push(Ctx *c, FlValue *l, FlValue *arr, FlValue *count, FlValue *x, FlSpan sp) {
    FlValue *el = as_element(c, l, x, sp);
    if (el->kind == VK_ERROR) return false;
    const char *names[3] = {"X", "I", "Out"};
    FlValue *vals[3] = {el, count, arr};
    if (dop(c, "write_to_array", names, vals, 3, sp)->kind == VK_ERROR) return false;
    const char *in[2] = {"X", "Out"};
    FlValue *iv[2] = {count, count};
    return dop(c, "increment", in, iv, 2, sp)->kind != VK_ERROR;
}

bool fl_ev_is_rt_list(const FlValue *v) { return v->kind == VK_LIST && v->list.rt_array; }
bool fl_ev_is_tensor_array(const FlValue *v) { return v->kind == VK_LIST && v->list.rt_kind == RT_TENSOR_ARRAY; }

/* A list filled at run time over the driver's array arr, its length computed now (a fetch's). */
static FlValue *rt_list_of(Ctx *c, FlValue *arr, RtKind kind, FlSpan sp) {
    const char *names[1] = {"X"};
    FlValue *vals[1] = {arr};
    FlValue *count = dop(c, "lod_array_length", names, vals, 1, sp);
    if (count->kind == VK_ERROR) return count;
    FlValue *l = fl_v_list(c, VK_LIST), *t = fl_v_list(c, VK_TUPLE);
    fl_v_list_push(c, t, arr);
    fl_v_list_push(c, t, count);
    l->list.rt_array = t;
    l->list.rt_kind = (int)kind;
    return l;
}

FlValue *fl_ev_driver_fetched_array(Ctx *c, FlValue *arr, bool numpy, FlSpan sp) {
    return rt_list_of(c, arr, numpy ? RT_FETCHED : RT_TENSOR_ARRAY, sp);
}

/* fluid.LoDTensorArray(): empty until its first append makes its array (of that tensor's dtype
 * and shape) where it was made, as a list filled at run time; compile-time appends go to the
 * array too. */
FlValue *fl_ev_driver_tensor_array(Ctx *c, FlSpan sp) {
    (void)sp;
    FlValue *l = fl_v_list(c, VK_LIST);
    l->list.rt_kind = RT_TENSOR_ARRAY;
    return l;
}

FlValue *fl_ev_driver_list_append(Ctx *c, FlValue *l, FlValue *x, FlSpan sp) {
    if (l->list.rt_kind == RT_TENSOR_ARRAY && (x = as_element(c, l, x, sp))->kind == VK_ERROR) return x;
    if (!l->list.rt_array) { /* it becomes one: an array of the driver where the list was made (in a
                                runtime block, a new one each time the driver runs the block) */
        if (l->list.rt_depth != 0 && !l->list.rt_block)
            return fl_ev_error(c, sp, "a list filled at run time is made in a runtime block of a program that is "
                               "not the driver");
        FlDType dt = FL_DT_FLOAT64;
        FlVarDesc *xd = fl_ev_is_driver_var(c, x) ? desc(c, x) : NULL;
        if (xd) dt = xd->dtype;
        else if (x->kind == VK_INT || x->kind == VK_BOOL) dt = FL_DT_INT64;
        FlBlock *here = c->b.block;
        DriverSwap s;
        fl_ev_driver_enter(c, &s);
        c->b.block = l->list.rt_block ? l->list.rt_block : fl_ir_block(c->b.main, 0);
        const char *name = fl_ev_unique(c, "list");
        FlVarDesc *d = fl_ev_new_var(c, c->b.block, name, sp);
        d->kind = FL_VAR_TENSOR_ARRAY;
        d->dtype = dt;
        if (xd && l->list.rt_kind != RT_LIST) fl_ir_var_set_shape(d, xd->ndim, xd->shape); /* its elements' */
        d->stop_gradient = true;
        FlValue *arr = fl_v_var(c, name);
        int64_t one = 1;
        const char *fn[3] = {"shape", "value", "dtype"};
        FlValue *fv[3] = {ints(c, &one, 1), fl_v_int(c, 0), fl_v_int(c, FL_DT_INT64)};
        FlValue *count = dop(c, "fill_constant", fn, fv, 3, sp);
        bool ok = count->kind != VK_ERROR;
        for (size_t i = 0; i < l->list.len && ok; i++) ok = array_push(c, l, arr, count, l->list.items[i], sp);
        c->b.block = here;
        fl_ev_driver_leave(c, &s);
        if (!ok) return c->error;
        FlValue *t = fl_v_list(c, VK_TUPLE);
        fl_v_list_push(c, t, arr);
        fl_v_list_push(c, t, count);
        l->list.rt_array = t;
        l->list.len = 0;
    }
    return array_push(c, l, rt_arr(l), rt_count(l), x, sp) ? c->none : c->error;
}

/* The elements of runtime list l stacked (numpy.array(l)): an RT_LIST's concatenated along their
 * leading dim of 1, a fetched array's stacked (all of one shape, else a run-time error). */
static FlValue *list_stack(Ctx *c, FlValue *l, FlSpan sp) {
    const char *names[3] = {"X", "axis", "use_stack"};
    FlValue *vals[3] = {rt_arr(l), fl_v_int(c, 0), fl_v_bool(c, l->list.rt_kind != RT_LIST)};
    FlValue *r = dop(c, "tensor_array_to_tensor", names, vals, 3, sp);
    return r->kind == VK_TUPLE ? r->list.items[0] : r;
}

/* len(l): a number of the driver (a LoDTensorArray nothing was appended to: 0, of the driver too,
 * so that printing it comes in the driver's order). */
FlValue *fl_ev_driver_list_len(Ctx *c, FlValue *l, FlSpan sp) {
    if (!l->list.rt_array) return fl_ev_driver_item(c, fl_ev_driver_const(c, fl_v_int(c, 0), sp), FL_DT_INT64, sp);
    return fl_ev_driver_item(c, rt_count(l), FL_DT_INT64, sp);
}

/* l[i]: element i (one never written is a run-time error); from the end when negative, for a
 * fetched array's list (Python's); a LoDTensorArray's index is a size_t, as Fluid's. */
FlValue *fl_ev_driver_list_index(Ctx *c, FlValue *l, FlValue *idx, FlSpan sp) {
    int64_t i, one = 1;
    if (!l->list.rt_array) /* a LoDTensorArray before its first append */
        return fl_ev_error(c, sp, "LoDTensorArray index out of range: nothing was appended to it");
    if (!int_index(c, idx, &i, sp)) return c->error;
    if (i < 0 && l->list.rt_kind == RT_TENSOR_ARRAY)
        return fl_ev_error(c, sp, "a LoDTensorArray's index is from its start (Fluid's takes an unsigned int), found %lld: "
                           "write a[len(a) - %lld]", (long long)i, (long long)-i);
    if (i < 0 && l->list.rt_kind == RT_LIST)
        return fl_ev_error(c, sp, "a list filled at run time is indexed from its start here (l[0], l[i]), found %lld",
                           (long long)i);
    const char *fn[3] = {"shape", "value", "dtype"};
    FlValue *fv[3] = {ints(c, &one, 1), fl_v_int(c, i), fl_v_int(c, FL_DT_INT64)};
    FlValue *at = dop(c, "fill_constant", fn, fv, 3, sp);
    if (at->kind == VK_ERROR) return at;
    if (i < 0) { /* len(l) + i, when the driver gets here */
        const char *an[2] = {"X", "Y"};
        FlValue *av[2] = {rt_count(l), at};
        if ((at = dop(c, "elementwise_add", an, av, 2, sp))->kind == VK_ERROR) return at;
    }
    const char *names[2] = {"X", "I"};
    FlValue *vals[2] = {rt_arr(l), at};
    FlValue *el = dop(c, "read_from_array", names, vals, 2, sp);
    if (el->kind == VK_ERROR) return el;
    if (l->list.rt_kind == RT_TENSOR_ARRAY) /* a LoDTensor: shape(), _dtype(), lod() */
        fl_map_put_str(&c->tensor_fetches, el->var.name, (void *)el->var.name);
    return l->list.rt_kind == RT_LIST ? fl_ev_driver_index(c, el, fl_v_int(c, 0), sp) : el;
}

FlValue *fl_ev_driver_list_str(Ctx *c, FlValue *l, FlSpan sp) {
    if (l->list.rt_kind == RT_TENSOR_ARRAY)
        return fl_ev_error(c, sp, "str() of a LoDTensorArray: Fluid's names the object and its address; print its "
                           "length (len(a)) or its elements (a[i], numpy.array(a[i]))");
    FlValue *rt = fl_ev_rtstr_new(c);
    /* print_line's "arrays": the elements as they are; "items": an RT_LIST's, each without the
     * leading dim of 1 its array gives it */
    fl_ev_rtstr_value(c, rt, rt_arr(l), l->list.rt_kind == RT_LIST ? "items" : "arrays");
    return rt;
}

/* sum(l): Python's, element by element: a number when they are numbers, else an array. */
FlValue *fl_ev_driver_list_sum(Ctx *c, FlValue *l, FlSpan sp) {
    FlValue *stacked = list_stack(c, l, sp);
    if (stacked->kind == VK_ERROR) return stacked;
    FlVarDesc *d = desc(c, stacked);
    return reduce(c, "sum", stacked, d && d->ndim >= 2 ? fl_v_int(c, 0) : NULL, sp);
}

/* ------------------------------------------------------------------ the module _values */

static FlValue *need(Ctx *c, FlValue *v, const char *what, FlSpan sp) {
    FlValue *r = as_value(c, v, what, sp);
    return r ? r : c->error;
}

/* reduce(kind, a, axis) */
static FlValue *n_reduce(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("reduce", "kind a axis", 3);
    const char *kind = v[0]->kind == VK_STR ? v[0]->str.s : "";
    FlValue *x = need(c, v[1], fl_arena_printf(&c->arena, "numpy.%s()", kind), a->span);
    return x->kind == VK_ERROR ? x : reduce(c, kind, x, v[2], a->span);
}

/* type(X=x, axis=axis) on the driver; the first output. */
static FlValue *axis_op(Ctx *c, const char *type, FlValue *x, FlValue *axis, const char *what, FlSpan sp) {
    if (x->kind == VK_ERROR) return x;
    if (axis->kind != VK_INT) return fl_ev_error(c, sp, "%s(axis=...) takes an int here", what);
    const char *names[2] = {"X", "axis"};
    FlValue *vals[2] = {x, axis};
    FlValue *r = dop(c, type, names, vals, 2, sp);
    return r->kind == VK_TUPLE ? r->list.items[0] : r;
}

static FlValue *n_sort(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("sort", "a axis", 2);
    return axis_op(c, "argsort", need(c, v[0], "numpy.sort()", a->span), v[1], "numpy.sort", a->span);
}

/* The driver values of a list (the elements of numpy.array([a, b]), numpy.concatenate). */
static FlValue *value_list(Ctx *c, FlValue *l, const char *what, FlSpan sp) {
    if (!fl_v_is_seq(l) || l->list.len == 0)
        return fl_ev_error(c, sp, "%s takes a non-empty list of values, found %s", what, fl_v_type_name(l));
    FlValue *r = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < l->list.len; i++) {
        FlValue *x = need(c, l->list.items[i], what, sp);
        if (x->kind == VK_ERROR) return x;
        fl_v_list_push(c, r, x);
    }
    return r;
}

static FlValue *n_concatenate(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("concatenate", "arrays axis", 2);
    FlValue *xs = value_list(c, v[0], "numpy.concatenate()", a->span);
    return axis_op(c, "concat", xs, v[1], "numpy.concatenate", a->span);
}

/* filled(shape, value, dtype): numpy.zeros / ones of a shape one of whose dims is a number known
 * only when the driver runs (a batch's rows: x.shape[0]), on the driver: a range of that many
 * steps gives the dim to fill_constant_batch_size_like. None when every dim is a compile-time
 * number (numpy.fl makes the constant). */
static FlValue *n_filled(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("filled", "shape value dtype", 3);
    (void)self;
    FlValue *shape = v[0];
    if (!fl_v_is_seq(shape)) return c->none;
    size_t n = shape->list.len, k = n;
    int64_t dims[FL_IR_MAX_DIMS];
    if (n > FL_IR_MAX_DIMS) return c->none;
    for (size_t i = 0; i < n; i++) {
        FlValue *d = shape->list.items[i];
        if (fl_ev_is_driver_var(c, d)) {
            if (k < n)
                return fl_ev_error(c, a->span, "numpy.zeros/ones: one dim known only when the driver runs is "
                                               "compiled here, found dims %zu and %zu", k, i);
            k = i;
            dims[i] = -1;
        } else if (!fl_ev_want_int(c, d, "a numpy.zeros/ones dim", a->span, &dims[i])) {
            return c->error;
        }
    }
    if (k == n) return c->none;
    FlDType dt = FL_DT_FLOAT64;
    if (v[2]->kind != VK_NONE && !fl_ev_driver_dtype(c, v[2], &dt, a->span)) return c->error;
    double value = v[1]->kind == VK_FLOAT ? v[1]->f : (double)v[1]->i;
    FlValue *rows = cast_to(c, shape->list.items[k], FL_DT_INT64, a->span);
    if (rows->kind == VK_ERROR) return rows;
    int64_t one = 1;
    const char *fnames[4] = {"shape", "value", "dtype", "force_cpu"};
    FlValue *zero_v[3] = {ints(c, &one, 1), fl_v_float(c, 0), fl_v_int(c, FL_DT_INT64)};
    FlValue *start = dop(c, "fill_constant", fnames, zero_v, 3, a->span);
    FlValue *one_v[3] = {ints(c, &one, 1), fl_v_float(c, 1), fl_v_int(c, FL_DT_INT64)};
    FlValue *step = dop(c, "fill_constant", fnames, one_v, 3, a->span);
    if (start->kind == VK_ERROR || step->kind == VK_ERROR) return c->error;
    const char *rnames[3] = {"Start", "End", "Step"};
    FlValue *rvals[3] = {start, rows, step};
    FlValue *ref = dop(c, "range", rnames, rvals, 3, a->span);
    if (ref->kind == VK_ERROR) return ref;
    const char *names[6] = {"Input", "shape", "value", "dtype", "input_dim_idx", "output_dim_idx"};
    FlValue *vals[6] = {ref, ints(c, dims, n), fl_v_float(c, value), fl_v_int(c, dt), fl_v_int(c, 0),
                        fl_v_int(c, (int64_t)k)};
    return dop(c, "fill_constant_batch_size_like", names, vals, 6, a->span);
}

/* array(obj, dtype): of a driver value, the value (cast to dtype); of a list holding driver
 * values, their stack (numpy's array of equal-shaped arrays). */
static FlValue *n_array(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("array", "object dtype", 2);
    FlValue *x = fl_ev_is_rt_list(v[0]) ? list_stack(c, v[0], a->span) : v[0];
    if (x->kind == VK_ERROR) return x;
    if (!fl_ev_is_driver_var(c, x)) {
        FlValue *xs = value_list(c, x, "numpy.array()", a->span);
        if (xs->kind == VK_ERROR) return xs;
        const char *names[2] = {"X", "axis"};
        FlValue *vals[2] = {xs, fl_v_int(c, 0)};
        x = dop(c, "stack", names, vals, 2, a->span);
        if (x->kind == VK_ERROR) return x;
    }
    if (fl_map_find_str(&c->tensor_fetches, x->var.name)) { /* of a LoDTensor: an array (its .shape numpy's) */
        const char *names[1] = {"X"};
        FlValue *vals[1] = {x};
        x = dop(c, "assign", names, vals, 1, a->span);
        if (x->kind == VK_ERROR) return x;
    }
    if (v[1]->kind == VK_NONE) return x;
    FlDType dt;
    return fl_ev_driver_dtype(c, v[1], &dt, a->span) ? cast_to(c, x, dt, a->span) : c->error;
}

/* Whether numpy.array(obj) needs the driver: obj is a driver value or a list holding one. */
static FlValue *n_is_runtime(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("is_runtime", "object", 1);
    bool r = fl_ev_is_driver_var(c, v[0]) || fl_ev_is_rt_list(v[0]);
    for (size_t i = 0; !r && fl_v_is_seq(v[0]) && i < v[0]->list.len; i++)
        r = fl_ev_is_driver_var(c, v[0]->list.items[i]);
    return fl_v_bool(c, r);
}

/* math(fn, x): math.fn of a fetched value's one element, a float64 number (bool for isnan,
 * isinf), when the driver runs. */
FlValue *fl_ev_driver_math(Ctx *c, const char *fn, FlValue *x, FlSpan sp) {
    static const char *const ok[] = {"isnan", "isinf", "sqrt", "exp", "log", "sin", "cos", "tanh"};
    size_t k = 0;
    while (k < FL_ARRAY_LEN(ok) && strcmp(ok[k], fn) != 0) k++;
    if (k == FL_ARRAY_LEN(ok))
        return fl_ev_error(c, sp, "math.%s() of a fetched value is not compiled (the driver has math.isnan, isinf, "
                           "sqrt, exp, log, sin, cos, tanh)", fn);
    FlValue *n = fl_ev_driver_item(c, x, FL_DT_FLOAT64, sp);
    if (n->kind == VK_ERROR) return n;
    bool test = strcmp(fn, "isnan") == 0 || strcmp(fn, "isinf") == 0;
    const char *names[1] = {"X"};
    FlValue *vals[1] = {n};
    FlValue *r = dop(c, fn, names, vals, 1, sp);
    if (r->kind == VK_ERROR || !test) return r;
    return fl_ev_driver_item(c, r, FL_DT_BOOL, sp); /* a bool, as Python's */
}

/* exit(code, message): sys.exit. message (None, a string or a runtime string) is printed on
 * stderr first; the code is 1 with a message, code & 255 otherwise (as the shell sees it). */
static FlValue *n_exit(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("exit", "arg", 1);
    FlValue *x = v[0];
    int64_t code = 0;
    if (x->kind == VK_INT || x->kind == VK_BOOL) code = (x->kind == VK_INT ? x->i : x->b) & 255;
    else if (x->kind != VK_NONE) code = 1;
    if (x->kind != VK_NONE && x->kind != VK_INT && x->kind != VK_BOOL) {
        FlValue *vals = fl_v_list(c, VK_LIST);
        if (x->kind == VK_STR || fl_ev_is_runtime(c, x)) {
            fl_v_list_push(c, vals, x);
        } else {
            FlBuf b = {0};
            bool ok = fl_v_repr_at(c, x, &b, a->span);
            if (ok) fl_v_list_push(c, vals, fl_v_str(c, fl_buf_str(&b), b.len));
            fl_buf_free(&b);
            if (!ok) return c->error;
        }
        if (fl_ev_driver_print_stream(c, vals, NULL, NULL, "stderr", a->span)->kind == VK_ERROR) return c->error;
    }
    return fl_ev_driver_exit(c, code, a->span);
}

FlValue *fl_ev_driver_exit(Ctx *c, int64_t code, FlSpan sp) {
    const char *names[1] = {"code"};
    FlValue *vals[1] = {fl_v_int(c, code)};
    FlValue *r = dop(c, "exit", names, vals, 1, sp);
    return r->kind == VK_ERROR ? r : c->none;
}

/* getenv(name): the compile-time environment's value (FlCompileOptions.env first), None when unset
 * (os.getenv, os.environ). */
static FlValue *n_getenv(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("getenv", "name", 1);
    if (v[0]->kind != VK_STR) return fl_ev_error(c, a->span, "os.getenv() takes a str, found %s", fl_v_type_name(v[0]));
    const char *s = NULL;
    size_t kn = strlen(v[0]->str.s);
    for (size_t i = 0; i < c->opt->nenv && !s; i++) /* a role's variables (flc build of a plan) first */
        if (!strncmp(c->opt->env[i], v[0]->str.s, kn) && c->opt->env[i][kn] == '=') s = c->opt->env[i] + kn + 1;
    if (!s) s = getenv(v[0]->str.s);
    return s ? fl_v_cstr(c, s) : c->none;
}

/* exists(path): whether path names a file or directory when the script compiles. */
static FlValue *n_exists(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("exists", "path", 1);
    if (v[0]->kind != VK_STR) return fl_ev_error(c, a->span, "os.path.exists() takes a str, found %s", fl_v_type_name(v[0]));
    struct stat st;
    return fl_v_bool(c, stat(v[0]->str.s, &st) == 0);
}

/* An uncaught raise (or a failing assert) reached under a runtime condition of the driver: its
 * "Name: message" and the script's line on stderr, then exit 1, as Python ends on one. */
void fl_ev_driver_raise(Ctx *c, const char *msg, FlSpan sp) {
    FlSpan us = fl_ev_user_span(c, sp);
    const FlSourceFile *f = fl_sources_file(&c->sources, us.file);
    int line = 0, col = 0;
    fl_sources_linecol(&c->sources, us.file, us.start, &line, &col);
    const char *base = f ? strrchr(f->path, '/') : NULL;
    if (strncmp(msg, "assertion failed", 16) == 0) /* the compile-time wording, Python's name at run time */
        msg = fl_arena_printf(&c->arena, "AssertionError%s", msg + 16);
    FlValue *vals = fl_v_list(c, VK_LIST);
    fl_v_list_push(c, vals, fl_v_cstr(c, fl_arena_printf(&c->arena, "Traceback (most recent call last):\n  File \"%s\", "
                                                        "line %d\n%s", f ? (base ? base + 1 : f->path) : "?", line, msg)));
    if (fl_ev_driver_print_stream(c, vals, NULL, NULL, "stderr", sp)->kind == VK_ERROR) return;
    fl_ev_driver_exit(c, 1, sp);
}

/* ------------------------------------------------------------------ scopes' vars */

/* get_tensor() of a find_var record: a scope_var op whose Out is declared as the program's var. */
static FlValue *fv_get_tensor(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("get_tensor", "", 0);
    (void)v;
    FlValue *scope = fl_map_find_str(&self->rec.attrs->map, "_scope");
    FlValue *name = fl_map_find_str(&self->rec.attrs->map, "name");
    const FlVarDesc *from = fl_ir_var_find(fl_ir_block(c->bundle->main, 0), name->str.s);
    if (!from) from = fl_ir_var_find(fl_ir_block(c->bundle->startup, 0), name->str.s);
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    const char *out = fl_ev_driver_value_var(c, c->b.block, "scope_var", from, a->span)->name;
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "scope_var", a->span);
    if (scope && scope->kind == VK_VAR) fl_ir_op_add_input(op, "Scope", scope->var.name);
    fl_ir_op_add_output(op, "Out", out);
    fl_ir_op_set_string(op, "name", name->str.s);
    bool ok = fl_ev_infer(c, c->b.block, op, a->span);
    FlValue *r = ok ? fl_v_var(c, out) : c->error; /* a var of the driver: made while it is current */
    fl_ev_driver_leave(c, &s);
    return r;
}

FlValue *fl_ev_scope_find_var(Ctx *c, FlValue *scope_var, const char *name, FlSpan sp) {
    (void)sp;
    if (!fl_ir_var_find(fl_ir_block(c->bundle->main, 0), name) && !fl_ir_var_find(fl_ir_block(c->bundle->startup, 0), name))
        return c->none; /* Fluid's None: no program makes the var */
    FlValue *r = fl_v_record(c, "Variable");
    fl_v_rec_set(c, r, "_scope", scope_var ? scope_var : c->none);
    fl_v_rec_set(c, r, "name", fl_v_cstr(c, name));
    fl_v_rec_set(c, r, "get_tensor", fl_v_builtin(c, "get_tensor", fv_get_tensor, r));
    return r;
}

/* Program.parse_from_string(binary) (stdlib/fluid/framework.fl): a program read back from
 * program.desc.serialize_to_string() of this script, when it compiles: a copy of that program,
 * as Fluid's gives a Program of the same desc. */
static FlValue *n_parse_program(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("parse_program", "binary", 1);
    (void)self;
    FlValue *prog = fl_ev_program_bytes_program(v[0]);
    if (!prog)
        return fl_ev_error(c, a->span, "Program.parse_from_string takes program.desc.serialize_to_string() of a "
                                       "program of this script, found %s (a program another script saved is read by "
                                       "fluid.io.load_inference_model(dirname, exe))", fl_v_type_name(v[0]));
    FlValue *p = fl_v_new(c, VK_PROGRAM);
    p->prog = fl_ir_program_clone(prog->prog);
    FL_VEC_PUSH(&c->programs, p->prog);
    return p;
}

FlValue *fl_ev_driver_unary(Ctx *c, const char *fn, FlValue *x, const char *what, FlSpan sp) {
    static const char *const ok[] = {"exp", "log", "sqrt", "square", "abs", "tanh", "sin", "cos"};
    size_t k = 0;
    while (k < FL_ARRAY_LEN(ok) && strcmp(ok[k], fn) != 0) k++;
    if (k == FL_ARRAY_LEN(ok)) return fl_ev_error(c, sp, "numpy.%s of a run-time value is not compiled", fn);
    x = need(c, x, what, sp);
    if (x->kind == VK_ERROR) return x;
    FlVarDesc *d = desc(c, x);
    bool keeps = strcmp(fn, "square") == 0 || strcmp(fn, "abs") == 0;
    bool is_float = d && (d->dtype == FL_DT_FLOAT32 || d->dtype == FL_DT_FLOAT64);
    if (d && d->dtype == FL_DT_BOOL && strcmp(fn, "abs") == 0) return x; /* numpy's: the bools */
    if (d && !is_float && strcmp(fn, "abs") == 0) {
        /* the abs op is float's (as Fluid's): of ints, max(x, -x), which keeps the dtype */
        const char *sn[2] = {"X", "scale"}, *mn[2] = {"X", "Y"};
        FlValue *sv[2] = {x, fl_v_float(c, -1.0)};
        FlValue *neg = dop(c, "scale", sn, sv, 2, sp);
        if (neg->kind == VK_ERROR) return neg;
        FlValue *mv[2] = {x, neg};
        return dop(c, "elementwise_max", mn, mv, 2, sp);
    }
    if (d && !is_float && !keeps) x = cast_to(c, x, FL_DT_FLOAT64, sp);
    const char *names[1] = {"X"};
    FlValue *vals[1] = {x};
    return x->kind == VK_ERROR ? x : dop(c, fn, names, vals, 1, sp);
}

/* unary(fn, x): numpy.fn(x) of a driver value (fl_ev_driver_unary). */
static FlValue *n_unary(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("unary", "fn x", 2);
    (void)self;
    const char *fn = v[0]->kind == VK_STR ? v[0]->str.s : "";
    return fl_ev_driver_unary(c, fn, v[1], fl_arena_printf(&c->arena, "numpy.%s()", fn), a->span);
}

/* tensor_array(): fluid.LoDTensorArray() */
static FlValue *n_tensor_array(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    if (a->npos || a->nkw) return fl_ev_error(c, a->span, "LoDTensorArray() takes no arguments");
    return fl_ev_driver_tensor_array(c, a->span);
}

static const NativeFn values_fns[] = {
    {"tensor_array", n_tensor_array},
    {"getenv", n_getenv}, {"exists", n_exists},
    {"reduce", n_reduce}, {"sort", n_sort},   {"unary", n_unary},   {"concatenate", n_concatenate}, {"array", n_array},
    {"is_runtime", n_is_runtime}, {"exit", n_exit}, {"filled", n_filled},
    {"fromfile", fl_ev_driver_fromfile}, {"parse_program", n_parse_program},
};

void fl_ev_values_install(Ctx *c) { fl_ev_module_of_fns(c, "_values", values_fns, FL_ARRAY_LEN(values_fns)); }
