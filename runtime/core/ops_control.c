/* ops_control.c: the control ops. Each runs its sub-block in a new child scope of the scope
 * running the op, made with the sub-block's layout (so the sub-block's own vars live and die
 * there, and writes to outer vars reach the outer scopes through their ArgRefs):
 *   conditional_block  once, when Cond is true;
 *   while              again and again while Condition (an outer var the body re-assigns) is
 *                      true, a fresh scope per iteration (kept for while_grad when the op has
 *                      StepScopes: ops_rnn_ctl.c);
 *   parallel_for       n iterations, each a goroutine (fl_go_each) in a scope holding its int64
 *                      [1] index var, the op waiting for all; an iteration's error is a
 *                      goroutine's panic, and the first one is the op's error;
 *   list_index         binds Out, in the scope of Out's block, to the very var X[Index] names
 *                      (an alias, not a copy): later writes to Out land in the picked var;
 *   py_func            once, its inputs bound to the block's argument vars, its outputs set to
 *                      the block's result vars (checked against their declarations);
 *   py_func_grad       the same with the block compiled from backward_func.
 * Goroutines, channels and select are in ops_chan.c, the distributed ops in ops_dist.c. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/core/exec_impl.h"
#include "runtime/sched/sched.h"

static FlStatus read_bool(RunCtx *rc, const ExecOp *op, FlScope *s, const ArgRef *a, bool scalar,
                          bool *out) {
    FlTensor t = FL_TENSOR_INIT;
    FlVar *v = fl_exec_var_read(s, a);
    if (!v || !fl_var_get_tensor(v, &t))
        return fl_exec_op_error(rc, op, "condition '%s' has no value", a->name);
    int64_t n = fl_tensor_numel(&t);
    if (scalar && n != 1) {
        FlShapeStr sh = fl_tensor_shape(&t);
        fl_tensor_fini(&t);
        return fl_exec_op_error(rc, op, "condition '%s' must hold one element, found %s", a->name, sh.s);
    }
    *out = n > 0;
    for (int64_t i = 0; i < n; i++)
        if (fl_tensor_get(&t, i) == 0) *out = false;
    fl_tensor_fini(&t);
    return FL_OK;
}

static FlStatus run_sub(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlScope *child = fl_scope_new_layout(s, &op->sub->layout);
    FlStatus st = fl_exec_block(rc, op->sub, child);
    fl_scope_release(child);
    return st;
}

static FlStatus need_sub(ExecOp *op, FlErr *e) {
    if (!op->sub) return fl_err(e, "attribute 'sub_block' is missing");
    return FL_OK;
}

/* ---- conditional_block: Cond X* -> Out* ---- */
static FlStatus prep_cond(ExecOp *op, FlErr *e) {
    if (need_sub(op, e)) return FL_ERROR;
    if (fl_exec_nin(op, FL_IN_conditional_block_Cond) != 1) return fl_err(e, "slot 'Cond' must hold one var");
    op->a.b[0] = fl_exec_attr_bool(op, "is_scalar_condition");
    return FL_OK;
}
static FlStatus run_cond(RunCtx *rc, const ExecOp *op, FlScope *s) {
    bool yes;
    if (read_bool(rc, op, s, fl_exec_in_args(op, FL_IN_conditional_block_Cond), op->a.b[0], &yes)) return FL_ERROR;
    return yes ? run_sub(rc, op, s) : FL_OK;
}
FL_CONTROL_ADAPTER(conditional_block, prep_cond, run_cond);

/* ---- while: X* Condition -> Out* ---- */
static FlStatus prep_while(ExecOp *op, FlErr *e) {
    if (need_sub(op, e)) return FL_ERROR;
    if (fl_exec_nin(op, FL_IN_while_Condition) != 1) return fl_err(e, "slot 'Condition' must hold one var");
    return FL_OK;
}
static FlStatus run_while(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const ArgRef *cond = fl_exec_in_args(op, FL_IN_while_Condition);
    if (fl_exec_nout(op, FL_OUT_while_StepScopes) != 1) {
        for (;;) {
            bool yes;
            if (read_bool(rc, op, s, cond, true, &yes)) return FL_ERROR;
            if (!yes) return FL_OK;
            if (run_sub(rc, op, s)) return FL_ERROR;
        }
    }
    WhileRun *r = fl_while_run_new(op, s); /* differentiated: every iteration kept for while_grad */
    if (!r) return fl_exec_op_error(rc, op, "out of memory");
    for (;;) {
        bool yes;
        if (read_bool(rc, op, s, cond, true, &yes)) {
            fl_while_run_keep(r, NULL, s);
            return FL_ERROR;
        }
        if (!yes) break;
        FlScope *step = fl_while_run_step(r, s);
        if (!step) {
            fl_while_run_keep(r, NULL, s);
            return fl_exec_op_error(rc, op, "out of memory");
        }
        if (fl_exec_block(rc, op->sub, step)) {
            fl_while_run_keep(r, NULL, s);
            return FL_ERROR;
        }
        fl_while_run_snap(r, op, s);
    }
    fl_while_run_keep(r, op, s);
    return FL_OK;
}
FL_CONTROL_ADAPTER(while, prep_while, run_while);

/* ---- parallel_for: X* -> Out*, n iterations ---- */
static FlStatus prep_pfor(ExecOp *op, FlErr *e) {
    if (need_sub(op, e)) return FL_ERROR;
    op->a.i[0] = fl_exec_attr_int(op, "n");
    if (op->a.i[0] < 0 || op->a.i[0] > 1 << 20)
        return fl_err(e, "attribute 'n' must be in [0, %d], found %lld", 1 << 20, (long long)op->a.i[0]);
    const char *iv = fl_exec_attr_string(op, "index_var");
    long slot = fl_scope_layout_find(&op->sub->layout, iv);
    if (slot < 0) return fl_err(e, "index_var '%s' is not a var of its sub-block", iv);
    op->a.i[1] = slot;
    return FL_OK;
}

typedef struct PFor {
    RunCtx *rc;
    const ExecOp *op;
    FlScope *s;
    pthread_mutex_t mu;
    bool failed; /* an iteration failed (guarded by mu) */
    FlErr err;   /* the first one's error */
} PFor;

/* One iteration, on its own goroutine: a RunCtx of its own (error, report label), and long
 * kernels keep its processor (rc.iteration). A failure is Go's panic: the other iterations and
 * goroutines unwind (conc.c), so none waits forever for the failed one. */
static void pfor_iter(void *arg, int i) {
    PFor *p = arg;
    const ExecOp *op = p->op;
    FlScope *child = fl_scope_new_layout(p->s, &op->sub->layout);
    FlTensor t = FL_TENSOR_INIT;
    int64_t one = 1;
    double v = i;
    FlErr e;
    ConcLabel label = {.owner = fl_go_id(), .op = op};
    RunCtx rc = *p->rc;
    rc.e = &e;
    rc.label = &label;
    rc.iteration = true;
    FlStatus st = fl_tensor_from(&e, &t, FL_DT_INT64, 1, &one, &v);
    if (st == FL_OK) {
        fl_var_take_tensor(fl_scope_slot_var(child, (size_t)op->a.i[1]), &t);
        st = fl_exec_block(&rc, op->sub, child);
    }
    fl_scope_release(child);
    if (st == FL_OK || fl_conc_is_abort(&rc, e.msg)) return;
    pthread_mutex_lock(&p->mu);
    if (!p->failed) {
        p->failed = true;
        p->err = e;
    }
    pthread_mutex_unlock(&p->mu);
    fl_conc_panic(&rc, e.msg);
}

/* The iterations are goroutines started by fl_go_each, the op's caller waiting for them as Go's
 * WaitGroup.Wait (the detector sees it blocked at the op's line). */
static FlStatus run_pfor(RunCtx *rc, const ExecOp *op, FlScope *s) {
    int n = (int)op->a.i[0];
    if (n == 0) return FL_OK;
    if (fl_conc_need_sched(rc, op)) return FL_ERROR;
    PFor p = {.rc = rc, .op = op, .s = s};
    pthread_mutex_init(&p.mu, NULL);
    fl_conc_set_where(rc, op);
    FlErr e;
    FlStatus st = fl_go_each(rc->sched, n, pfor_iter, &p, op->where[0] ? op->where : "parallel_for", &e);
    pthread_mutex_destroy(&p.mu);
    if (p.failed) {
        fl_err(rc->e, "%s", p.err.msg);
        return FL_ERROR;
    }
    return st == FL_OK ? FL_OK : fl_exec_op_error(rc, op, "%s", e.msg);
}
FL_CONTROL_ADAPTER(parallel_for, prep_pfor, run_pfor);

/* ---- list_index: X* Index -> Out (an alias of X[Index]) ---- */
static FlStatus prep_list_index(ExecOp *op, FlErr *e) {
    if (fl_exec_nin(op, FL_IN_list_index_Index) != 1) return fl_err(e, "slot 'Index' must hold one var");
    if (fl_exec_nout(op, FL_OUT_list_index_Out) != 1) return fl_err(e, "slot 'Out' must hold one var");
    if (fl_exec_nin(op, FL_IN_list_index_X) == 0) return fl_err(e, "slot 'X' is empty");
    const ArgRef *out = &op->args[op->nin];
    if (out->idx < 0 || out->shared) return fl_err(e, "Out '%s' cannot be an alias", out->name);
    return FL_OK;
}
static FlStatus run_list_index(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const ArgRef *ia = fl_exec_in_args(op, FL_IN_list_index_Index);
    FlTensor t = FL_TENSOR_INIT;
    FlVar *iv = fl_exec_var_read(s, ia);
    if (!iv || !fl_var_get_tensor(iv, &t))
        return fl_exec_op_error(rc, op, "input Index '%s' has no value", ia->name);
    bool isint = t.dtype == FL_DT_INT64 || t.dtype == FL_DT_INT32;
    int64_t n = fl_tensor_numel(&t);
    int64_t i = n == 1 ? fl_tensor_get_int(&t, 0) : 0;
    FlShapeStr sh = fl_tensor_shape(&t);
    FlDType dt = t.dtype;
    fl_tensor_fini(&t);
    if (!isint || n != 1)
        return fl_exec_op_error(rc, op, "Index '%s' must be one int32/int64 element, found %s %s",
                                ia->name, fl_dtype_name(dt), sh.s);
    int nx = fl_exec_nin(op, FL_IN_list_index_X);
    if (i < 0 || i >= nx)
        return fl_exec_op_error(rc, op, "Index '%s' is %lld, outside the list's [0, %d)", ia->name,
                                (long long)i, nx);
    const ArgRef *xa = &fl_exec_in_args(op, FL_IN_list_index_X)[i];
    if (xa->idx < 0) return fl_exec_op_error(rc, op, "list element %lld is empty", (long long)i);
    FlVar *picked = fl_exec_var_write(s, xa); /* made at its home when it has no value yet */
    const ArgRef *oa = &op->args[op->nin];
    FlScope *home = fl_exec_scope_up(s, oa->up);
    if (fl_scope_slot_set(home, (size_t)oa->idx, picked) != picked)
        return fl_exec_op_error(rc, op, "Out '%s' already names another var in this scope", oa->name);
    return FL_OK;
}
FL_CONTROL_ADAPTER(list_index, prep_list_index, run_list_index);

/* ---- py_func: X* -> Out*, and py_func_grad: X Out Out@GRAD -> X@GRAD ----
 * The block holds the ops a py_func's function was compiled into (lang/driver_pyfunc.c). Its
 * arguments are vars of the block, bound here to the op's inputs in a new child scope; its
 * results are vars of the block too, which the op's outputs are set to after it ran. op->a.list
 * holds the block slots: py_func's in_vars (one per X) then out_vars (one per Out);
 * py_func_grad's bw_x (per X), bw_out and bw_dout (per Out), then bw_dx (per X); -1 where the
 * function takes or gives nothing. */
static FlStatus py_slots(ExecOp *op, const char *attr, int n, int64_t *out, bool required, FlErr *e) {
    const FlAttr *a = fl_ir_op_attr(op->desc, attr);
    size_t have = a && a->type == FL_ATTR_STRINGS ? a->n : 0;
    if ((int)have != n) return fl_err(e, "attribute '%s' has %zu names for %d vars", attr, have, n);
    for (int i = 0; i < n; i++) {
        out[i] = a->strs[i][0] ? fl_scope_layout_find(&op->sub->layout, a->strs[i]) : -1;
        if (a->strs[i][0] && out[i] < 0)
            return fl_err(e, "attribute '%s': '%s' is not a var of its sub-block", attr, a->strs[i]);
        if (required && out[i] < 0) return fl_err(e, "attribute '%s': name %d is empty", attr, i);
    }
    return FL_OK;
}

static FlStatus prep_py_func(ExecOp *op, FlErr *e) {
    if (need_sub(op, e)) return FL_ERROR;
    int nx = fl_exec_nin(op, FL_IN_py_func_X), nout = fl_exec_nout(op, FL_OUT_py_func_Out);
    op->a.list = calloc((size_t)(nx + nout) + 1, sizeof *op->a.list);
    if (!op->a.list) return fl_err(e, "out of memory");
    op->a.nlist = nx + nout;
    if (py_slots(op, "in_vars", nx, op->a.list, true, e)) return FL_ERROR;
    return py_slots(op, "out_vars", nout, op->a.list + nx, true, e);
}

static FlStatus prep_py_func_grad(ExecOp *op, FlErr *e) {
    if (need_sub(op, e)) return FL_ERROR;
    int nx = fl_exec_nin(op, FL_IN_py_func_grad_X), nout = fl_exec_nin(op, FL_IN_py_func_grad_Out);
    if (fl_exec_nin(op, FL_IN_py_func_grad_Out_GRAD) != nout)
        return fl_err(e, "slot 'Out@GRAD' must hold one var per Out (%d)", nout);
    int ng = fl_exec_nout(op, FL_OUT_py_func_grad_X_GRAD);
    if (ng != 0 && ng != nx) return fl_err(e, "slot 'X@GRAD' must hold one var per X (%d), found %d", nx, ng);
    op->a.list = calloc((size_t)(2 * nx + 2 * nout) + 1, sizeof *op->a.list);
    if (!op->a.list) return fl_err(e, "out of memory");
    op->a.nlist = 2 * nx + 2 * nout;
    int64_t *l = op->a.list;
    if (py_slots(op, "bw_x", nx, l, false, e) || py_slots(op, "bw_out", nout, l + nx, false, e) ||
        py_slots(op, "bw_dout", nout, l + nx + nout, true, e))
        return FL_ERROR;
    return py_slots(op, "bw_dx", nx, l + nx + 2 * nout, false, e);
}

/* Binds the block var at slot (when >= 0) to the value of the op's input arg a. */
static FlStatus py_bind(RunCtx *rc, const ExecOp *op, FlScope *s, FlScope *child, const ArgRef *a, int64_t slot) {
    if (slot < 0) return FL_OK;
    FlTensor t = FL_TENSOR_INIT;
    FlVar *v = fl_exec_var_read(s, a);
    if (!v || !fl_var_get_tensor(v, &t)) return fl_exec_op_error(rc, op, "input '%s' has no value", a->name);
    fl_var_take_tensor(fl_scope_slot_var(child, (size_t)slot), &t);
    return FL_OK;
}

/* Whether a value of shape (nd, ne) fits declared shape (dnd, dne) (-1: any size); both of one
 * element also fit (a number for a [1] var). */
static bool py_fits(int nd, const int64_t *ne, int dnd, const int64_t *dne) {
    int64_t n = 1, dn = 1;
    for (int i = 0; i < nd; i++) n *= ne[i];
    for (int i = 0; i < dnd; i++) dn *= dne[i] < 0 ? 2 : dne[i];
    if (n == 1 && dn == 1) return true;
    if (nd != dnd) return false;
    for (int i = 0; i < nd; i++)
        if (dne[i] >= 0 && dne[i] != ne[i]) return false;
    return true;
}

/* Sets the op's output arg a to the block var at slot, which must have dtype dt and fit the
 * shape (dnd, dne) of var `like`; what says which value it is for the message. */
static FlStatus py_result(RunCtx *rc, const ExecOp *op, FlScope *s, FlScope *child, const ArgRef *a, int64_t slot,
                          const char *like, FlDType dt, int dnd, const int64_t *dne, const char *what) {
    FlTensor t = FL_TENSOR_INIT;
    FlVar *v = fl_scope_slot(child, (size_t)slot);
    if (!v || !fl_var_get_tensor(v, &t)) return fl_exec_op_error(rc, op, "%s has no value", what);
    if (t.dtype != dt || !py_fits(t.ndim, t.ne, dnd, dne)) {
        FlShapeStr got = fl_tensor_shape(&t), want = fl_shape_str(dnd, dne);
        FlDType gdt = t.dtype;
        fl_tensor_fini(&t);
        return fl_exec_op_error(rc, op, "%s is %s %s, but '%s' is %s %s", what, fl_dtype_name(gdt), got.s, like,
                                fl_dtype_name(dt), want.s);
    }
    if (t.ndim != dnd) { /* a number for a var of one element: the var's shape */
        t.ndim = dnd;
        for (int i = 0; i < FL_MAX_DIMS; i++) t.ne[i] = 1;
    }
    fl_var_take_tensor(fl_exec_var_write(s, a), &t);
    return FL_OK;
}

static FlStatus run_py_func(RunCtx *rc, const ExecOp *op, FlScope *s) {
    int nx = fl_exec_nin(op, FL_IN_py_func_X), nout = fl_exec_nout(op, FL_OUT_py_func_Out);
    const ArgRef *xa = fl_exec_in_args(op, FL_IN_py_func_X), *oa = fl_exec_out_args(op, FL_OUT_py_func_Out);
    FlScope *child = fl_scope_new_layout(s, &op->sub->layout);
    FlStatus st = FL_OK;
    for (int i = 0; i < nx && st == FL_OK; i++) st = py_bind(rc, op, s, child, &xa[i], op->a.list[i]);
    if (st == FL_OK) st = fl_exec_block(rc, op->sub, child);
    for (int j = 0; j < nout && st == FL_OK; j++) {
        const FlVarDesc *d = fl_exec_arg_desc(op, &oa[j]);
        if (!d) {
            st = fl_exec_op_error(rc, op, "output '%s' is not declared", oa[j].name);
            break;
        }
        char what[64];
        snprintf(what, sizeof what, "the function's result %d", j);
        st = py_result(rc, op, s, child, &oa[j], op->a.list[nx + j], oa[j].name, d->dtype, d->ndim, d->shape, what);
    }
    fl_scope_release(child);
    return st;
}
FL_CONTROL_ADAPTER(py_func, prep_py_func, run_py_func);

static FlStatus run_py_func_grad(RunCtx *rc, const ExecOp *op, FlScope *s) {
    int nx = fl_exec_nin(op, FL_IN_py_func_grad_X), nout = fl_exec_nin(op, FL_IN_py_func_grad_Out);
    int ng = fl_exec_nout(op, FL_OUT_py_func_grad_X_GRAD);
    const ArgRef *xa = fl_exec_in_args(op, FL_IN_py_func_grad_X), *oa = fl_exec_in_args(op, FL_IN_py_func_grad_Out);
    const ArgRef *ga = fl_exec_in_args(op, FL_IN_py_func_grad_Out_GRAD);
    const ArgRef *dxa = fl_exec_out_args(op, FL_OUT_py_func_grad_X_GRAD);
    const int64_t *l = op->a.list;
    FlScope *child = fl_scope_new_layout(s, &op->sub->layout);
    FlStatus st = FL_OK;
    for (int i = 0; i < nx && st == FL_OK; i++) st = py_bind(rc, op, s, child, &xa[i], l[i]);
    for (int j = 0; j < nout && st == FL_OK; j++) st = py_bind(rc, op, s, child, &oa[j], l[nx + j]);
    for (int j = 0; j < nout && st == FL_OK; j++) st = py_bind(rc, op, s, child, &ga[j], l[nx + nout + j]);
    if (st == FL_OK) st = fl_exec_block(rc, op->sub, child);
    for (int i = 0; i < ng && st == FL_OK; i++) {
        if (dxa[i].idx < 0) continue; /* no gradient wanted */
        FlTensor x = FL_TENSOR_INIT;
        FlVar *xv = fl_exec_var_read(s, &xa[i]);
        if (!xv || !fl_var_get_tensor(xv, &x)) {
            st = fl_exec_op_error(rc, op, "input '%s' has no value", xa[i].name);
            break;
        }
        int64_t slot = l[nx + 2 * nout + i];
        if (slot < 0) { /* the function gave None: no gradient through this input */
            FlTensor z = FL_TENSOR_INIT;
            FlErr e;
            if (fl_tensor_alloc_like(&e, &z, &x, x.dtype)) st = fl_exec_op_error(rc, op, "%s", e.msg);
            else fl_var_take_tensor(fl_exec_var_write(s, &dxa[i]), &z);
        } else {
            char what[96];
            snprintf(what, sizeof what, "backward_func's result %d (the gradient of '%s')", i, xa[i].name);
            st = py_result(rc, op, s, child, &dxa[i], slot, xa[i].name, x.dtype, x.ndim, x.ne, what);
        }
        fl_tensor_fini(&x);
    }
    fl_scope_release(child);
    return st;
}
FL_CONTROL_ADAPTER(py_func_grad, prep_py_func_grad, run_py_func_grad);
