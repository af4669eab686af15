/* driver_pyfunc.c: fluid.layers.py_func (docs/driver.md, "py_func: a function compiled into the
 * program"). Fluid calls a Python function on the tensors of every run; here the function runs
 * once, when the script compiles, on arguments that stand for those tensors, and what it does
 * with them becomes ops of a sub-block, as what a script does with a fetched value becomes ops
 * of the driver. The trace makes the program being built the one driver values belong to for
 * its duration, so numpy's functions, arithmetic, indexing, print(...) and the rest of
 * driver_values.c append their ops to the function's block. The native module `_pyfunc`:
 *
 *   build(func, xs, outs, backward_func, skip)
 *       xs, outs: lists of Vars of the program being built; skip: a list of Vars among them.
 *       Traces func(*xs) into a block whose results must match outs (count, dtype, shape where
 *       known), and backward_func(xs..., outs..., douts...) without the skipped vars into a
 *       second block whose results are the gradients of xs (None: none); appends a py_func op
 *       (compiler/ops/control.def) running the first, whose gradient op runs the second.
 *
 * What the function does to Python values (a list it appends to, a counter) happens once, at
 * compile time; only its operations on the tensors run each time the op runs.
 */
#include <stdlib.h>
#include <string.h>

#include "lang/eval_impl.h"

/* The function's block: its argument vars and the results it returned. */
typedef struct Traced {
    FlBlock *block;
    FL_VEC(const char *) args;    /* per argument: its var in the block */
    FL_VEC(FlValue *) results;    /* per result: a Var of the block, or None */
    bool none;                    /* it returned None (no result at all) */
} Traced;

static const char *arg_var(Ctx *c, FlBlock *b, const char *base, size_t i, const FlVarDesc *like, FlSpan sp) {
    const char *name = fl_arena_printf(&c->arena, "%s.arg_%zu", base, i);
    FlVarDesc *d = fl_ev_new_var(c, b, name, sp);
    d->dtype = like->dtype;
    fl_ir_var_set_shape(d, like->ndim, like->shape);
    d->stop_gradient = true;
    return name;
}

/* A result of the function as a var of its block (the driver swap still on): a Var of the block
 * as it is, a Var from outside it assigned to one, numbers (or numpy.array(...) of them) a
 * constant of dtype dt, the out var's; NULL (reported) for anything else. */
static FlValue *result_var(Ctx *c, FlValue *r, const char *what, size_t k, int dt, FlSpan sp) {
    if (fl_ev_is_lod_tensor(r)) {
        FlValue *data = fl_v_rec_get(r, "_data");
        if (data) r = data;
    }
    if (r->kind == VK_VAR && r->var.prog == c->b.main) {
        if (fl_ir_var_find(c->b.block, r->var.name)) return r;
        const char *names[1] = {"X"};
        FlValue *vals[1] = {r};
        CallArgs a = {.kwnames = names, .kwvals = vals, .nkw = 1, .span = sp};
        FlValue *v = fl_ev_op(c, "assign", &a, sp);
        return v->kind == VK_VAR ? v : NULL;
    }
    int ndt;
    FlValue *nums = fl_ev_ndarray_numbers(r, &ndt); /* numpy.array(...) of numbers */
    if (nums) r = nums;
    if (fl_v_is_num(r) || (fl_v_is_seq(r) && r->list.len > 0)) {
        FlValue *v = fl_ev_driver_const_as(c, r, dt, sp);
        return v->kind == VK_VAR ? v : NULL;
    }
    if (r->kind == VK_VAR)
        fl_ev_error(c, sp, "py_func: %s's result %zu is '%s', a var of another program", what, k, r->var.name);
    else
        fl_ev_error(c, sp, "py_func: %s's result %zu is %s; it returns arrays made from its arguments (numpy's "
                    "operations on them) or numbers", what, k, fl_v_type_name(r));
    return NULL;
}

/* Traces fn(args...) into a new child block of the current block. like[i] declares argument i,
 * dts[k] the dtype numbers returned as result k take (-1: numpy's). False when it failed
 * (reported, with a note at the py_func call). */
static bool trace(Ctx *c, FlValue *fn, const char *what, const char *base, const FlVarDesc *const *like, size_t n,
                  const int *dts, size_t nres, bool none_ok, Traced *t, FlSpan sp) {
    FlBlock *parent = c->b.block, *home = c->home;
    t->block = fl_ir_block_new(c->b.main, parent->idx);
    FlValue **pos = fl_arena_alloc(&c->arena, (n + 1) * sizeof *pos);
    for (size_t i = 0; i < n; i++) {
        FL_VEC_PUSH(&t->args, arg_var(c, t->block, base, i, like[i], sp));
        pos[i] = fl_v_var(c, t->args.data[i]);
    }
    int errors = c->diag.nerrors;
    /* the program being built is, for the trace, the one run-time values belong to */
    FlProgram *driver = c->bundle->driver;
    bool after_train = c->driver_after_train;
    int saved_loop = c->loop_depth;
    bool saved_have = c->have_err_span;
    FlSpan saved_span = c->err_span;
    c->bundle->driver = c->b.main;
    c->b.block = c->home = t->block;
    c->loop_depth = 0;
    c->rt_depth++;
    FL_VEC_PUSH(&c->rtloops, NULL);
    /* a user's function locates its ops and errors at its own lines */
    if (fn->kind == VK_FUNC && fn->func.mod && !fn->func.mod->is_stdlib) c->have_err_span = false;
    CallArgs ca = {.pos = pos, .npos = n, .span = sp};
    FlValue *r = fl_ev_call(c, fn, &ca);
    c->have_err_span = saved_have;
    c->err_span = saved_span;
    bool ok = r->kind != VK_ERROR && c->diag.nerrors == errors;
    if (ok) {
        FlValue **items = &r;
        size_t m = 1;
        if (r->kind == VK_TUPLE || r->kind == VK_LIST) {
            items = r->list.items;
            m = r->list.len;
        }
        if (r->kind == VK_NONE && nres == 0) {
            t->none = true;
            m = 0;
        } else if (r->kind == VK_NONE && !none_ok) {
            fl_ev_error(c, sp, "py_func: %s returned None, but out has %zu var%s", what, nres, nres == 1 ? "" : "s");
            ok = false;
        } else if (m != nres) {
            fl_ev_error(c, sp, "py_func: %s returned %zu value%s, but %s %zu", what, m, m == 1 ? "" : "s",
                        none_ok ? "x has" : "out has", nres);
            ok = false;
        }
        for (size_t k = 0; ok && k < m; k++) {
            FlValue *v = items[k];
            if (v->kind == VK_NONE && none_ok) {
                FL_VEC_PUSH(&t->results, v);
                continue;
            }
            v = result_var(c, v, what, k, dts[k], sp);
            if (!v) ok = false;
            else FL_VEC_PUSH(&t->results, v);
        }
    }
    c->rtloops.len--;
    c->rt_depth--;
    c->loop_depth = saved_loop;
    c->b.block = parent;
    c->home = home;
    c->bundle->driver = driver;
    c->driver_after_train = after_train;
    if (!ok) {
        /* the note belongs to this call even when the trace's last error repeated an earlier one */
        c->diag.dropping = c->diag.max_errors > 0 && c->diag.nshown >= c->diag.max_errors;
        fl_diag_note(&c->diag, fl_ev_user_span(c, sp),
                     "py_func compiles %s into the program: it runs once, when the script compiles, on arguments "
                     "that stand for the tensors of every run, and its operations on them (numpy's, as on a "
                     "fetched value: docs/driver.md) become the ops that run", what);
    }
    return ok;
}

static bool want_vars(Ctx *c, FlValue *l, const char *what, FlSpan sp) {
    for (size_t i = 0; i < l->list.len; i++) {
        FlValue *v = l->list.items[i];
        if (v->kind != VK_VAR) {
            fl_ev_error(c, sp, "py_func: %s takes Variables, found %s", what, fl_v_type_name(v));
            return false;
        }
        if (v->var.prog != c->b.main || !fl_ev_var_desc(c, v)) {
            fl_ev_error(c, sp, "py_func: %s '%s' is not a var of the program being built here", what, v->var.name);
            return false;
        }
    }
    return true;
}

static bool in_list(FlValue *l, const char *name) {
    for (size_t i = 0; i < l->list.len; i++)
        if (strcmp(l->list.items[i]->var.name, name) == 0) return true;
    return false;
}

static void strings_attr(FlOpDesc *op, const char *attr, const char **names, size_t n) {
    fl_ir_op_set_strings(op, attr, names, n);
}

/* Whether result shape (nd, ne) fits declared (dnd, dne): -1 on either side fits any size; two
 * of one element fit (a number for a [1] var), as the runtime's check (ops_control.c). */
static bool fits(int nd, const int64_t *ne, int dnd, const int64_t *dne) {
    bool one = true, done = true;
    for (int i = 0; i < nd; i++) one = one && ne[i] == 1;
    for (int i = 0; i < dnd; i++) done = done && dne[i] == 1;
    if (one && done) return true;
    if (nd != dnd) return false;
    for (int i = 0; i < nd; i++)
        if (ne[i] >= 0 && dne[i] >= 0 && ne[i] != dne[i]) return false;
    return true;
}

static bool check_result(Ctx *c, const char *what, size_t k, FlBlock *b, FlValue *r, FlVarDesc *to, FlSpan sp) {
    const FlVarDesc *d = fl_ir_var_find(b, r->var.name);
    if (!d) return true; /* from outside the block: assigned, so declared; never here */
    if (d->dtype == to->dtype && fits(d->ndim, d->shape, to->ndim, to->shape)) return true;
    if (d->dtype == to->dtype && to->ndim == 0 && !to->persistable) {
        /* a var made without a shape (fluid.layers.create_tensor): it takes the result's */
        fl_ir_var_set_shape(to, d->ndim, d->shape);
        return true;
    }
    FlBuf got = {0}, want = {0};
    fl_ir_shape_str(d->ndim, d->shape, &got);
    fl_ir_shape_str(to->ndim, to->shape, &want);
    fl_ev_error(c, sp, "py_func: %s's result %zu is %s %s, but '%s' is %s %s", what, k, fl_dtype_name(d->dtype),
                fl_buf_str(&got), to->name, fl_dtype_name(to->dtype), fl_buf_str(&want));
    fl_buf_free(&got);
    fl_buf_free(&want);
    return false;
}

static void free_traced(Traced *t) {
    FL_VEC_FREE(&t->args);
    FL_VEC_FREE(&t->results);
}

static FlValue *p_build(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("build", "func xs outs backward_func skip", 5);
    (void)self;
    FlSpan sp = a->span;
    FlValue *fn = v[0], *xs = v[1], *outs = v[2], *bfn = v[3], *skip = v[4];
    if (!want_vars(c, xs, "x", sp) || !want_vars(c, outs, "out", sp) || !want_vars(c, skip, "skip_vars_in_backward_input", sp))
        return c->error;
    for (size_t i = 0; i < skip->list.len; i++)
        if (!in_list(xs, skip->list.items[i]->var.name) && !in_list(outs, skip->list.items[i]->var.name))
            return fl_ev_error(c, sp, "py_func: skip_vars_in_backward_input's '%s' is not among x or out",
                               skip->list.items[i]->var.name);
    if (xs->list.len == 0 && outs->list.len == 0)
        return fl_ev_error(c, sp, "py_func: x and out are both empty: the function would take and give nothing");
    size_t nx = xs->list.len, nout = outs->list.len;
    FlVarDesc **xd = fl_arena_alloc(&c->arena, (nx + 2 * nout + 1) * sizeof *xd);
    int *dts = fl_arena_alloc(&c->arena, (nx + nout + 1) * sizeof *dts);
    for (size_t i = 0; i < nx; i++) xd[i] = fl_ev_var_desc(c, xs->list.items[i]);
    for (size_t j = 0; j < nout; j++) {
        xd[nx + j] = fl_ev_var_desc(c, outs->list.items[j]);
        dts[j] = xd[nx + j]->dtype;
    }
    const char *base = fl_ev_unique(c, "py_func");
    FlBlock *parent = c->b.block;
    Traced fw = {0}, bw = {0};
    FlValue *result = c->error;
    if (!trace(c, fn, "func", base, (const FlVarDesc *const *)xd, nx, dts, nout, false, &fw, sp)) goto done;
    for (size_t j = 0; j < nout; j++)
        if (!check_result(c, "func", j, fw.block, fw.results.data[j], xd[nx + j], sp)) goto done;
    FlOpDesc *op = fl_ev_op_raw(c, parent, "py_func", sp);
    fl_ir_op_add_input_slot(op, "X");
    for (size_t i = 0; i < nx; i++) fl_ir_op_add_input(op, "X", xs->list.items[i]->var.name);
    for (size_t j = 0; j < nout; j++) fl_ir_op_add_output(op, "Out", outs->list.items[j]->var.name);
    fl_ir_op_set_block(op, "sub_block", fw.block->idx);
    strings_attr(op, "in_vars", fw.args.data, nx);
    const char **names = fl_arena_alloc(&c->arena, (nx + nout + 1) * sizeof *names);
    for (size_t j = 0; j < nout; j++) names[j] = fw.results.data[j]->var.name;
    strings_attr(op, "out_vars", names, nout);
    if (bfn->kind != VK_NONE) {
        /* backward_func(x..., out..., dout...) without the skipped ones; it gives x's gradients */
        const FlVarDesc **bl = fl_arena_alloc(&c->arena, (nx + 2 * nout + 1) * sizeof *bl);
        size_t nb = 0;
        for (size_t i = 0; i < nx + nout; i++) {
            FlValue *var = i < nx ? xs->list.items[i] : outs->list.items[i - nx];
            if (!in_list(skip, var->var.name)) bl[nb++] = xd[i];
        }
        for (size_t j = 0; j < nout; j++) bl[nb++] = xd[nx + j];
        for (size_t i = 0; i < nx; i++) dts[i] = xd[i]->dtype;
        if (!trace(c, bfn, "backward_func", fl_arena_printf(&c->arena, "%s@GRAD", base), bl, nb, dts, nx, true, &bw,
                   sp))
            goto done;
        for (size_t i = 0; i < nx; i++) {
            FlValue *r = bw.results.data[i];
            bool fp = xd[i]->dtype == FL_DT_FLOAT32 || xd[i]->dtype == FL_DT_FLOAT64;
            if (!fp) bw.results.data[i] = c->none; /* no gradient of an int input is ever taken (Fluid ignores it) */
            else if (r->kind == VK_VAR && !check_result(c, "backward_func", i, bw.block, r, xd[i], sp)) goto done;
        }
        const char **bx = fl_arena_alloc(&c->arena, (2 * nx + 2 * nout + 1) * sizeof *bx);
        size_t used = 0;
        for (size_t i = 0; i < nx + nout; i++) {
            FlValue *var = i < nx ? xs->list.items[i] : outs->list.items[i - nx];
            bx[i] = in_list(skip, var->var.name) ? "" : bw.args.data[used++];
        }
        for (size_t j = 0; j < nout; j++) bx[nx + nout + j] = bw.args.data[used++];
        for (size_t i = 0; i < nx; i++) {
            FlValue *r = bw.results.data[i];
            bx[nx + 2 * nout + i] = r->kind == VK_VAR ? r->var.name : "";
        }
        fl_ir_op_set_int(op, "backward_block", bw.block->idx);
        strings_attr(op, "bw_x", bx, nx);
        strings_attr(op, "bw_out", bx + nx, nout);
        strings_attr(op, "bw_dout", bx + nx + nout, nout);
        strings_attr(op, "bw_dx", bx + nx + 2 * nout, nx);
    }
    result = fl_ev_infer(c, parent, op, sp) ? c->none : c->error;
done:
    free_traced(&fw);
    free_traced(&bw);
    return result;
}

static const NativeFn pyfunc_fns[] = {
    {"build", p_build},
};

void fl_ev_driver_pyfunc_install(Ctx *c) { fl_ev_module_of_fns(c, "_pyfunc", pyfunc_fns, FL_ARRAY_LEN(pyfunc_fns)); }
