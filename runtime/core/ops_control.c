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
 *                      (an alias, not a copy): later writes to Out land in the picked var.
 * Goroutines, channels and select are in ops_chan.c, the distributed ops in ops_dist.c. */
#include <pthread.h>
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
