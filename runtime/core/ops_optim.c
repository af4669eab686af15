/* ops_optim.c: adapters of the elementwise optimizers of fl_kernel_optim (adagrad,
 * decayed_adagrad, rmsprop, adamax, adadelta, ftrl, lars_momentum, lamb). Each prepare reads the
 * rule's attributes into a.f in the order kernels.h gives; each run passes its state slots in
 * the rule's order. An absent state output is written to a temporary and dropped.
 *
 * SelectedRows gradients: fl_exec_rows_update runs a dense kernel on the rows a sparse gradient
 * touches (gathered, then scattered into the tensors themselves when nobody but their var
 * holds them, else into copies: fl_var_lock_sole), so a sparse update equals
 * the dense one row for row. adagrad and ftrl take that path (their other rows stay as they
 * are, as Fluid's sparse kernels leave them); the other rules get the gradient densified. */
#define MAX_ROW_STATES 4

#include "runtime/core/exec_impl.h"

/* The var that output tensor `out` writes when it is the var input tensor `in` was read from
 * (ParamOut = Param) and the write may go in place: a training call (a predict call's writes to
 * persistable vars are dropped) run by the executor. NULL otherwise. Whether the buffer is the
 * var's alone is decided under the var's lock (fl_var_lock_sole). */
static FlVar *update_var(const OpCall *c, const FlTensor *in, const FlTensor *out) {
    if (!c->s || c->rc->read_only || !in->buf) return NULL;
    int ki = -1, ko = -1;
    for (int k = 0; k < c->op->nin && ki < 0; k++)
        if (c->in[k] == in) ki = k;
    for (int k = 0; k < c->op->nout && ko < 0; k++)
        if (c->out[k] == out) ko = k;
    if (ki < 0 || ko < 0) return NULL;
    const ArgRef *a = &c->op->args[ki], *b = &c->op->args[c->op->nin + ko];
    if (a->idx < 0 || a->idx != b->idx || a->up != b->up) return NULL;
    return fl_exec_var_read(c->s, a);
}

FlStatus fl_exec_rows_update(OpCall *c, const FlSelectedRows *g, const FlTensor *const *full, FlTensor *const *outs,
                             int n, FlRowsUpdateFn fn, void *ctx) {
    FL_ASSERT(n >= 1 && n <= MAX_ROW_STATES);
    FlSelectedRows m;
    fl_rows_init(&m);
    FlTensor sub_in[MAX_ROW_STATES], sub_out[MAX_ROW_STATES], res[MAX_ROW_STATES];
    const FlTensor *in[MAX_ROW_STATES];
    FlTensor *out[MAX_ROW_STATES];
    for (int i = 0; i < n; i++) {
        fl_tensor_init(&sub_in[i]);
        fl_tensor_init(&sub_out[i]);
        fl_tensor_init(&res[i]);
        in[i] = &sub_in[i];
        out[i] = &sub_out[i];
    }
    FlStatus st = FL_ERROR;
    if (fl_rows_merge(c->e, &g, 1, &m)) goto fail;
    if (m.height != full[0]->ne[0]) {
        fl_err(c->e, "Grad is a SelectedRows of height %lld, Param %s has %lld rows", (long long)m.height,
               fl_tensor_shape(full[0]).s, (long long)full[0]->ne[0]);
        goto fail;
    }
    for (int i = 0; i < n; i++)
        if (fl_rows_gather(c->e, full[i], &m.rows, &sub_in[i])) goto fail;
    if (fn(c, ctx, &m.value, in, out)) goto fail;
    /* an output that updates its input's var, whose buffer nobody but the var and this call
     * holds, gets that buffer with the rows written into it, under the var's lock (no reader
     * can take a reference meanwhile; one that took it before would have made the count 3);
     * the others a copy with the rows replaced, as a reader may hold the old buffer */
    for (int i = 0; i < n; i++) {
        if (!outs[i]) continue;
        FlVar *v = update_var(c, full[i], outs[i]);
        if (v && fl_var_lock_sole(v, full[i])) {
            FlTensor *w = (FlTensor *)full[i]; /* the call's own reference to the var's buffer */
            FlStatus ws = fl_rows_scatter_into(c->e, w, &m.rows, &sub_out[i]);
            fl_var_unlock_sole(v);
            if (ws) goto fail;
            fl_tensor_ref(&res[i], w);
        } else if (fl_rows_scatter(c->e, full[i], &m.rows, &sub_out[i], &res[i])) {
            goto fail;
        }
    }
    for (int i = 0; i < n; i++) {
        if (!outs[i]) continue;
        fl_tensor_fini(outs[i]);
        *outs[i] = res[i];
        fl_tensor_init(&res[i]);
    }
    st = FL_OK;
fail:
    for (int i = 0; i < n; i++) {
        fl_tensor_fini(&sub_in[i]);
        fl_tensor_fini(&sub_out[i]);
        fl_tensor_fini(&res[i]);
    }
    fl_rows_fini(&m);
    return st;
}

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

static FlStatus attrs(ExecOp *op, const char *a0, const char *a1, const char *a2, const char *a3) {
    const char *names[4] = {a0, a1, a2, a3};
    for (int i = 0; i < 4; i++)
        op->a.f[i] = !names[i] ? 0 : names[i][0] == '?' ? fl_exec_attr_bool(op, names[i] + 1)
                                                        : fl_exec_attr_float(op, names[i]);
    return FL_OK;
}

/* The rule on the rows of a SelectedRows gradient (rows_in: param, then the states). */
typedef struct RuleRows {
    FlOptimRule rule;
    const FlTensor *lr;
    int nstate;
} RuleRows;

static FlStatus rule_rows(OpCall *c, void *ctx, const FlTensor *grad, const FlTensor *const *in, FlTensor *const *out) {
    const RuleRows *r = ctx;
    const FlTensor *state[3] = {NULL, NULL, NULL};
    for (int i = 0; i < r->nstate; i++) state[i] = in[1 + i];
    return fl_kernel_optim(c->e, r->rule, in[0], grad, r->lr, state, NULL, c->op->a.f, out[0], out + 1, NULL);
}

static FlStatus run(OpCall *c, FlOptimRule rule, const FlTensor *param, const FlTensor *grad,
                    const FlTensor *lr, const FlTensor *s0, const FlTensor *s1, const FlTensor *s2,
                    const FlTensor *beta_pow, FlTensor *param_out, FlTensor *o0, FlTensor *o1,
                    FlTensor *o2, FlTensor *beta_pow_out) {
    _Static_assert(FL_IN_adagrad_Grad == 1 && FL_IN_ftrl_Grad == 1, "Grad is input slot 1");
    const FlSelectedRows *g = c->op->ad->sparse ? fl_call_in_rows(c, 1) : NULL;
    if (g) {
        FL_ASSERT(!s2 && !beta_pow); /* adagrad and ftrl */
        RuleRows r = {rule, lr, s1 ? 2 : 1};
        const FlTensor *full[3] = {param, s0, s1};
        FlTensor *outs[3] = {param_out, o0, o1};
        return fl_exec_rows_update(c, g, full, outs, 1 + r.nstate, rule_rows, &r);
    }
    FlTensor tmp[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    const FlTensor *state[3] = {s0, s1, s2};
    FlTensor *outs[3] = {o0 ? o0 : &tmp[0], o1 ? o1 : &tmp[1], o2 ? o2 : &tmp[2]};
    FlStatus s = fl_kernel_optim(c->e, rule, param, grad, lr, state, beta_pow, c->op->a.f, param_out,
                                 outs, beta_pow_out);
    for (int i = 0; i < 3; i++) fl_tensor_fini(&tmp[i]);
    return s;
}

static FlStatus prep_adagrad(ExecOp *op, FlErr *e) { return attrs(op, "epsilon", NULL, NULL, NULL); }
static FlStatus run_adagrad(OpCall *c) {
    return run(c, FL_OPTIM_ADAGRAD, IN(FL_IN_adagrad_Param), IN(FL_IN_adagrad_Grad),
               IN(FL_IN_adagrad_LearningRate), IN(FL_IN_adagrad_Moment), NULL, NULL, NULL,
               OUT(FL_OUT_adagrad_ParamOut), OUT(FL_OUT_adagrad_MomentOut), NULL, NULL, NULL);
}
FL_SPARSE_ADAPTER(adagrad, prep_adagrad, run_adagrad);

static FlStatus prep_decayed_adagrad(ExecOp *op, FlErr *e) { return attrs(op, "epsilon", "decay", NULL, NULL); }
static FlStatus run_decayed_adagrad(OpCall *c) {
    return run(c, FL_OPTIM_DECAYED_ADAGRAD, IN(FL_IN_decayed_adagrad_Param), IN(FL_IN_decayed_adagrad_Grad),
               IN(FL_IN_decayed_adagrad_LearningRate), IN(FL_IN_decayed_adagrad_Moment), NULL, NULL, NULL,
               OUT(FL_OUT_decayed_adagrad_ParamOut), OUT(FL_OUT_decayed_adagrad_MomentOut), NULL, NULL, NULL);
}
FL_ADAPTER(decayed_adagrad, prep_decayed_adagrad, run_decayed_adagrad);

static FlStatus prep_rmsprop(ExecOp *op, FlErr *e) { return attrs(op, "decay", "epsilon", "momentum", "?centered"); }
static FlStatus run_rmsprop(OpCall *c) {
    return run(c, FL_OPTIM_RMSPROP, IN(FL_IN_rmsprop_Param), IN(FL_IN_rmsprop_Grad),
               IN(FL_IN_rmsprop_LearningRate), IN(FL_IN_rmsprop_Moment), IN(FL_IN_rmsprop_MeanSquare),
               IN(FL_IN_rmsprop_MeanGrad), NULL, OUT(FL_OUT_rmsprop_ParamOut), OUT(FL_OUT_rmsprop_MomentOut),
               OUT(FL_OUT_rmsprop_MeanSquareOut), OUT(FL_OUT_rmsprop_MeanGradOut), NULL);
}
FL_ADAPTER(rmsprop, prep_rmsprop, run_rmsprop);

static FlStatus prep_adamax(ExecOp *op, FlErr *e) { return attrs(op, "beta1", "beta2", "epsilon", NULL); }
static FlStatus run_adamax(OpCall *c) {
    return run(c, FL_OPTIM_ADAMAX, IN(FL_IN_adamax_Param), IN(FL_IN_adamax_Grad),
               IN(FL_IN_adamax_LearningRate), IN(FL_IN_adamax_Moment), IN(FL_IN_adamax_InfNorm), NULL,
               IN(FL_IN_adamax_Beta1Pow), OUT(FL_OUT_adamax_ParamOut), OUT(FL_OUT_adamax_MomentOut),
               OUT(FL_OUT_adamax_InfNormOut), NULL, OUT(FL_OUT_adamax_Beta1PowOut));
}
FL_ADAPTER(adamax, prep_adamax, run_adamax);

static FlStatus prep_adadelta(ExecOp *op, FlErr *e) { return attrs(op, "rho", "epsilon", NULL, NULL); }
static FlStatus run_adadelta(OpCall *c) {
    return run(c, FL_OPTIM_ADADELTA, IN(FL_IN_adadelta_Param), IN(FL_IN_adadelta_Grad),
               IN(FL_IN_adadelta_LearningRate), IN(FL_IN_adadelta_AvgSquaredGrad),
               IN(FL_IN_adadelta_AvgSquaredUpdate), NULL, NULL, OUT(FL_OUT_adadelta_ParamOut),
               OUT(FL_OUT_adadelta_AvgSquaredGradOut), OUT(FL_OUT_adadelta_AvgSquaredUpdateOut), NULL, NULL);
}
FL_ADAPTER(adadelta, prep_adadelta, run_adadelta);

static FlStatus prep_ftrl(ExecOp *op, FlErr *e) { return attrs(op, "l1", "l2", "lr_power", NULL); }
static FlStatus run_ftrl(OpCall *c) {
    return run(c, FL_OPTIM_FTRL, IN(FL_IN_ftrl_Param), IN(FL_IN_ftrl_Grad), IN(FL_IN_ftrl_LearningRate),
               IN(FL_IN_ftrl_SquaredAccum), IN(FL_IN_ftrl_LinearAccum), NULL, NULL, OUT(FL_OUT_ftrl_ParamOut),
               OUT(FL_OUT_ftrl_SquaredAccumOut), OUT(FL_OUT_ftrl_LinearAccumOut), NULL, NULL);
}
FL_SPARSE_ADAPTER(ftrl, prep_ftrl, run_ftrl);

static FlStatus prep_lars_momentum(ExecOp *op, FlErr *e) {
    return attrs(op, "mu", "lars_coeff", "lars_weight_decay", NULL);
}
static FlStatus run_lars_momentum(OpCall *c) {
    return run(c, FL_OPTIM_LARS_MOMENTUM, IN(FL_IN_lars_momentum_Param), IN(FL_IN_lars_momentum_Grad),
               IN(FL_IN_lars_momentum_LearningRate), IN(FL_IN_lars_momentum_Velocity), NULL, NULL, NULL,
               OUT(FL_OUT_lars_momentum_ParamOut), OUT(FL_OUT_lars_momentum_VelocityOut), NULL, NULL, NULL);
}
FL_ADAPTER(lars_momentum, prep_lars_momentum, run_lars_momentum);

static FlStatus prep_lamb(ExecOp *op, FlErr *e) { return attrs(op, "beta1", "beta2", "epsilon", "weight_decay"); }
static FlStatus run_lamb(OpCall *c) {
    return run(c, FL_OPTIM_LAMB, IN(FL_IN_lamb_Param), IN(FL_IN_lamb_Grad), IN(FL_IN_lamb_LearningRate),
               IN(FL_IN_lamb_Moment1), IN(FL_IN_lamb_Moment2), NULL, NULL, OUT(FL_OUT_lamb_ParamOut),
               OUT(FL_OUT_lamb_Moment1Out), OUT(FL_OUT_lamb_Moment2Out), NULL, NULL);
}
FL_ADAPTER(lamb, prep_lamb, run_lamb);

static FlStatus prep_average_accumulates(ExecOp *op, FlErr *e) {
    op->a.f[0] = fl_exec_attr_float(op, "average_window");
    op->a.i[0] = fl_exec_attr_int(op, "min_average_window");
    op->a.i[1] = fl_exec_attr_int(op, "max_average_window");
    return FL_OK;
}
static FlStatus run_average_accumulates(OpCall *c) {
    const FlTensor *sum[3] = {IN(FL_IN_average_accumulates_in_sum_1), IN(FL_IN_average_accumulates_in_sum_2),
                              IN(FL_IN_average_accumulates_in_sum_3)};
    const FlTensor *count[3] = {IN(FL_IN_average_accumulates_in_num_accumulates),
                                IN(FL_IN_average_accumulates_in_old_num_accumulates),
                                IN(FL_IN_average_accumulates_in_num_updates)};
    FlTensor *sum_out[3] = {OUT(FL_OUT_average_accumulates_out_sum_1), OUT(FL_OUT_average_accumulates_out_sum_2),
                            OUT(FL_OUT_average_accumulates_out_sum_3)};
    FlTensor *count_out[3] = {OUT(FL_OUT_average_accumulates_out_num_accumulates),
                              OUT(FL_OUT_average_accumulates_out_old_num_accumulates),
                              OUT(FL_OUT_average_accumulates_out_num_updates)};
    return fl_kernel_average_accumulates(c->e, IN(FL_IN_average_accumulates_param), sum, count, c->op->a.f[0],
                                         c->op->a.i[0], c->op->a.i[1], sum_out, count_out);
}
FL_ADAPTER(average_accumulates, prep_average_accumulates, run_average_accumulates);
