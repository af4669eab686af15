/* ops_shape.c: adapters of sum, concat, split, reshape, transpose, argmax, top_k, accuracy,
 * Print and the optimizers, and the gradients among them. List slots ("X*") come as arrays;
 * an unneeded gradient in a list is a NULL entry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/core/exec_impl.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* ---- sum ---- */

/* SelectedRows: all of them to a SelectedRows Out, merged (duplicate rows added); with a dense
 * Out each is added as the tensor it stands for. */
static FlStatus run_sum(OpCall *c) {
    int n = fl_call_nin(c, FL_IN_sum_X);
    const FlTensor *const *xs = fl_call_ins(c, FL_IN_sum_X);
    const FlSelectedRows *const *rs = fl_call_ins_rows(c, FL_IN_sum_X);
    for (int i = 0; i < n; i++)
        if (!xs[i]) return fl_err(c->e, "sum: input %d is empty", i);
    if (n == 0) return fl_err(c->e, "sum: no inputs");
    FlSelectedRows *ro = fl_call_out_rows(c, FL_OUT_sum_Out);
    if (ro) {
        for (int i = 0; i < n; i++)
            if (!rs || !rs[i]) return fl_err(c->e, "sum: Out is a SelectedRows but input %d is dense", i);
        return fl_rows_merge(c->e, rs, n, ro);
    }
    FlTensor *dense = calloc((size_t)n, sizeof *dense);
    const FlTensor **ins = calloc((size_t)n, sizeof *ins);
    FlStatus st = dense && ins ? FL_OK : fl_err(c->e, "sum: out of memory");
    for (int i = 0; i < n && st == FL_OK; i++) {
        fl_tensor_init(&dense[i]);
        ins[i] = xs[i];
        if (rs && rs[i]) {
            st = fl_rows_to_dense(c->e, rs[i], &dense[i]);
            ins[i] = &dense[i];
        }
    }
    if (st == FL_OK) st = fl_kernel_sum(c->e, ins, n, OUT(FL_OUT_sum_Out));
    for (int i = 0; dense && i < n; i++) fl_tensor_fini(&dense[i]);
    free(dense);
    free(ins);
    return st;
}
FL_SPARSE_ADAPTER(sum, NULL, run_sum);
/* sum_grad: X*, Out, Out@GRAD -> X@GRAD* */
static FlStatus run_sum_grad(OpCall *c) {
    return fl_kernel_sum_grad(c->e, IN(FL_IN_sum_grad_Out_GRAD), fl_call_nout(c, FL_OUT_sum_grad_X_GRAD),
                              fl_call_outs(c, FL_OUT_sum_grad_X_GRAD));
}
FL_ADAPTER(sum_grad, NULL, run_sum_grad);

/* ---- sparse_decay: X (SelectedRows), Param -> Out (SelectedRows) {coeff, l1} ---- */
static FlStatus run_sparse_decay(OpCall *c) {
    const FlSelectedRows *x = fl_call_in_rows(c, FL_IN_sparse_decay_X);
    FlSelectedRows *ro = fl_call_out_rows(c, FL_OUT_sparse_decay_Out);
    const FlTensor *p = IN(FL_IN_sparse_decay_Param);
    if (!x || !ro) return fl_err(c->e, "sparse_decay: X and Out must be SelectedRows (a sparse gradient)");
    if (!p) return fl_err(c->e, "sparse_decay: Param is empty");
    return fl_rows_decay(c->e, x, p, fl_exec_attr_float(c->op, "coeff"), fl_exec_attr_bool(c->op, "l1"), ro);
}
FL_SPARSE_ADAPTER(sparse_decay, NULL, run_sparse_decay);

/* ---- split_selected_rows: X (SelectedRows) -> Out* (SelectedRows) {height_sections} ---- */
static FlStatus run_split_selected_rows(OpCall *c) {
    const FlSelectedRows *x = fl_call_in_rows(c, FL_IN_split_selected_rows_X);
    if (!x) return fl_err(c->e, "split_selected_rows: X is dense; it splits a SelectedRows (a sparse gradient)");
    size_t nsec;
    const int64_t *sec = fl_exec_attr_ints(c->op, "height_sections", &nsec);
    int n = fl_call_nout(c, FL_OUT_split_selected_rows_Out);
    if ((size_t)n != nsec || n < 1)
        return fl_err(c->e, "split_selected_rows: %zu height_sections for %d outputs", nsec, n);
    FlSelectedRows *outs = calloc((size_t)n, sizeof *outs);
    if (!outs) return fl_err(c->e, "split_selected_rows: out of memory");
    for (int k = 0; k < n; k++) fl_rows_init(&outs[k]);
    FlStatus st = fl_rows_split(c->e, x, sec, n, outs);
    FlSelectedRows *const *ro = c->out_rows ? c->out_rows + c->op->out_off[FL_OUT_split_selected_rows_Out] : NULL;
    for (int k = 0; k < n; k++) {
        if (st == FL_OK && ro && ro[k]) {
            fl_rows_fini(ro[k]);
            *ro[k] = outs[k];
        } else {
            fl_rows_fini(&outs[k]);
        }
    }
    free(outs);
    return st;
}
FL_SPARSE_ADAPTER(split_selected_rows, NULL, run_split_selected_rows);

/* ---- concat, split ---- */

static FlStatus run_concat(OpCall *c) {
    int n = fl_call_nin(c, FL_IN_concat_X);
    const FlTensor *const *xs = fl_call_ins(c, FL_IN_concat_X);
    for (int i = 0; i < n; i++)
        if (!xs[i]) return fl_err(c->e, "concat: input %d is empty", i);
    if (n == 0) return fl_err(c->e, "concat: no inputs");
    return fl_kernel_concat(c->e, xs, n, (int)c->op->a.i[0], OUT(FL_OUT_concat_Out));
}
FL_ADAPTER(concat, fl_exec_prep_axis, run_concat);
/* concat_grad: X*, Out, Out@GRAD -> X@GRAD* (as many as X, or none) */
static FlStatus run_concat_grad(OpCall *c) {
    int n = fl_call_nin(c, FL_IN_concat_grad_X);
    if (fl_call_nout(c, FL_OUT_concat_grad_X_GRAD) == 0) return FL_OK;
    if (fl_call_nout(c, FL_OUT_concat_grad_X_GRAD) != n)
        return fl_err(c->e, "concat_grad: %d inputs but %d input gradients", n,
                      fl_call_nout(c, FL_OUT_concat_grad_X_GRAD));
    return fl_kernel_concat_grad(c->e, fl_call_ins(c, FL_IN_concat_grad_X), n, IN(FL_IN_concat_grad_Out_GRAD),
                                 (int)c->op->a.i[0], fl_call_outs(c, FL_OUT_concat_grad_X_GRAD));
}
FL_ADAPTER(concat_grad, fl_exec_prep_axis, run_concat_grad);

static FlStatus prep_split(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "axis");
    op->a.i[1] = fl_exec_attr_int(op, "num");
    size_t n;
    const int64_t *s = fl_exec_attr_ints(op, "sections", &n);
    op->a.nlist = (int)n;
    if (n) {
        op->a.list = fl_xmalloc(n * sizeof *op->a.list);
        memcpy(op->a.list, s, n * sizeof *s);
    }
    return FL_OK;
}
static FlStatus run_split(OpCall *c) {
    int n = fl_call_nout(c, FL_OUT_split_Out);
    FlTensor *const *outs = fl_call_outs(c, FL_OUT_split_Out);
    /* the kernel fills every part: stand-ins for the parts nobody wants */
    FlTensor st[8], *all_st[8];
    FlTensor **all = n > 8 ? fl_xcalloc((size_t)n, sizeof *all) : all_st;
    FlTensor *dummy = n > 8 ? fl_xcalloc((size_t)n, sizeof *dummy) : st;
    for (int i = 0; i < n; i++) {
        fl_tensor_init(&dummy[i]);
        all[i] = outs[i] ? outs[i] : &dummy[i];
    }
    const PAttrs *a = &c->op->a;
    FlStatus s =
        fl_kernel_split(c->e, IN(FL_IN_split_X), (int)a->i[0], (int)a->i[1], a->list, a->nlist, all, n);
    for (int i = 0; i < n; i++) fl_tensor_fini(&dummy[i]);
    if (dummy != st) {
        free(dummy);
        free(all);
    }
    return s;
}
FL_ADAPTER(split, prep_split, run_split);
/* split_grad: X, Out*, Out@GRAD* -> X@GRAD */
static FlStatus run_split_grad(OpCall *c) {
    if (!OUT(FL_OUT_split_grad_X_GRAD)) return FL_OK;
    const PAttrs *a = &c->op->a;
    return fl_kernel_split_grad(c->e, IN(FL_IN_split_grad_X), fl_call_ins(c, FL_IN_split_grad_Out_GRAD),
                                fl_call_nin(c, FL_IN_split_grad_Out_GRAD), (int)a->i[0], a->list, a->nlist,
                                OUT(FL_OUT_split_grad_X_GRAD));
}
FL_ADAPTER(split_grad, prep_split, run_split_grad);

/* ---- reshape, transpose ---- */

static FlStatus prep_reshape(ExecOp *op, FlErr *e) { return fl_exec_attr_shape(op, "shape", e); }
static FlStatus run_reshape(OpCall *c) {
    return fl_kernel_reshape(c->e, IN(FL_IN_reshape_X), c->op->a.shape, c->op->a.nshape,
                             OUT(FL_OUT_reshape_Out));
}
FL_ADAPTER(reshape, prep_reshape, run_reshape);
static FlStatus run_reshape_grad(OpCall *c) {
    if (!OUT(FL_OUT_reshape_grad_X_GRAD)) return FL_OK;
    return fl_kernel_reshape_grad(c->e, IN(FL_IN_reshape_grad_X), IN(FL_IN_reshape_grad_Out_GRAD),
                                  OUT(FL_OUT_reshape_grad_X_GRAD));
}
FL_ADAPTER(reshape_grad, prep_reshape, run_reshape_grad);

static FlStatus prep_transpose(ExecOp *op, FlErr *e) { return fl_exec_attr_dims(op, "axis", e); }
static FlStatus run_transpose(OpCall *c) {
    return fl_kernel_transpose(c->e, IN(FL_IN_transpose_X), c->op->a.dims, c->op->a.ndims,
                               OUT(FL_OUT_transpose_Out));
}
FL_ADAPTER(transpose, prep_transpose, run_transpose);
static FlStatus run_transpose_grad(OpCall *c) {
    if (!OUT(FL_OUT_transpose_grad_X_GRAD)) return FL_OK;
    return fl_kernel_transpose_grad(c->e, IN(FL_IN_transpose_grad_Out_GRAD), c->op->a.dims, c->op->a.ndims,
                                    OUT(FL_OUT_transpose_grad_X_GRAD));
}
FL_ADAPTER(transpose_grad, prep_transpose, run_transpose_grad);

/* ---- classification helpers ---- */

static FlStatus run_argmax(OpCall *c) {
    return fl_kernel_argmax(c->e, IN(FL_IN_argmax_X), (int)c->op->a.i[0], OUT(FL_OUT_argmax_Out));
}
FL_ADAPTER(argmax, fl_exec_prep_axis, run_argmax);

static FlStatus prep_top_k(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "k");
    return FL_OK;
}
static FlStatus run_top_k(OpCall *c) {
    FlTensor idx = FL_TENSOR_INIT;
    FlTensor *ip = OUT(FL_OUT_top_k_Indices) ? OUT(FL_OUT_top_k_Indices)
                                             : &idx; /* the kernel always makes the indices */
    FlStatus s = fl_kernel_top_k(c->e, IN(FL_IN_top_k_X), (int)c->op->a.i[0], OUT(FL_OUT_top_k_Out), ip);
    fl_tensor_fini(&idx);
    return s;
}
FL_ADAPTER(top_k, prep_top_k, run_top_k);

static FlStatus run_accuracy(OpCall *c) {
    return fl_kernel_accuracy(c->e, IN(FL_IN_accuracy_Out), IN(FL_IN_accuracy_Indices),
                              IN(FL_IN_accuracy_Label), OUT(FL_OUT_accuracy_Accuracy),
                              OUT(FL_OUT_accuracy_Correct), OUT(FL_OUT_accuracy_Total));
}
FL_ADAPTER(accuracy, NULL, run_accuracy);

/* ---- Print: Out shares In; prints "message name [shape] dtype: v0 v1 ..." to stdout (name,
 * shape and dtype as the print_tensor_ flags say); Print_grad passes the gradient through and
 * prints it the same way when print_phase asks for the backward pass ---- */

static FlStatus prep_print_phase(ExecOp *op, bool grad, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "summarize");
    op->a.i[1] = fl_exec_attr_int(op, "first_n");
    op->a.str = fl_exec_attr_string(op, "message");
    op->a.b[0] = fl_exec_attr_bool(op, "print_tensor_name");
    op->a.b[1] = fl_exec_attr_bool(op, "print_tensor_shape");
    op->a.b[2] = fl_exec_attr_bool(op, "print_tensor_type");
    const char *phase = fl_exec_attr_string(op, "print_phase");
    bool fwd = strcmp(phase, "forward") == 0, bwd = strcmp(phase, "backward") == 0;
    if (!fwd && !bwd && strcmp(phase, "both") != 0)
        return fl_err(e, "print_phase must be 'forward', 'backward' or 'both', found '%s'", phase);
    /* b[3]: this op prints (the forward op in phases forward and both, its gradient op in
     * backward and both) */
    op->a.b[3] = grad ? !fwd : !bwd;
    return FL_OK;
}
static FlStatus prep_print(ExecOp *op, FlErr *e) { return prep_print_phase(op, false, e); }
static FlStatus prep_print_grad(ExecOp *op, FlErr *e) { return prep_print_phase(op, true, e); }

/* lods: the nlod offset tensors of x's levels (outer first), printed as "lod [0 2 3][0 1 2 3]" */
static void print_tensor(const ExecOp *op, const char *name, const FlTensor *x, const FlTensor *const *lods,
                         int nlod) {
    long k = atomic_fetch_add(&((ExecOp *)op)->count, 1);
    if (!op->a.b[3] || (op->a.i[1] >= 0 && k >= op->a.i[1])) return;
    FlBuf b = {0};
    if (op->a.str[0]) fl_buf_printf(&b, "%s ", op->a.str);
    if (op->a.b[0]) fl_buf_printf(&b, "%s ", name);
    if (op->a.b[1]) fl_buf_printf(&b, "%s ", fl_tensor_shape(x).s);
    if (op->a.b[2]) fl_buf_printf(&b, "%s ", fl_dtype_name(x->dtype));
    if (nlod) fl_buf_puts(&b, "lod ");
    for (int l = 0; l < nlod; l++) {
        fl_buf_putc(&b, '[');
        int64_t n = lods[l] ? fl_tensor_numel(lods[l]) : 0;
        for (int64_t i = 0; i < n; i++) fl_buf_printf(&b, i ? " %lld" : "%lld", (long long)fl_tensor_get_int(lods[l], i));
        fl_buf_putc(&b, ']');
    }
    while (b.len && b.data[b.len - 1] == ' ') b.len--;
    fl_buf_putc(&b, ':');
    int64_t n = fl_tensor_numel(x), lim = op->a.i[0] < 0 ? n : op->a.i[0];
    bool ints = x->dtype == FL_DT_INT64 || x->dtype == FL_DT_INT32 || x->dtype == FL_DT_BOOL;
    for (int64_t i = 0; i < n && i < lim; i++) { /* integers whole and exact: %g drops digits past 6 */
        if (ints) fl_buf_printf(&b, " %lld", (long long)fl_tensor_get_int(x, i));
        else fl_buf_printf(&b, " %g", fl_tensor_get(x, i));
    }
    if (lim < n) fl_buf_puts(&b, " ...");
    fl_buf_putc(&b, '\n');
    fputs(fl_buf_str(&b), stdout);
    fflush(stdout);
    fl_buf_free(&b);
}

static FlStatus run_print(OpCall *c) {
    const FlTensor *x = IN(FL_IN_Print_In);
    print_tensor(c->op, fl_exec_in_args(c->op, FL_IN_Print_In)->name, x, fl_call_ins(c, FL_IN_Print_InLod),
                 fl_call_nin(c, FL_IN_Print_InLod));
    if (OUT(FL_OUT_Print_Out)) fl_tensor_ref(OUT(FL_OUT_Print_Out), x);
    return FL_OK;
}
FL_ADAPTER(Print, prep_print, run_print);
/* Print_grad: In, Out, Out@GRAD -> In@GRAD (the gradient passes through) */
static FlStatus run_print_grad(OpCall *c) {
    const FlTensor *g = IN(FL_IN_Print_grad_Out_GRAD);
    if (!g) return fl_err(c->e, "Print_grad: input Out@GRAD has no value");
    print_tensor(c->op, fl_exec_in_args(c->op, FL_IN_Print_grad_Out_GRAD)->name, g,
                 fl_call_ins(c, FL_IN_Print_grad_InLod), fl_call_nin(c, FL_IN_Print_grad_InLod));
    if (OUT(FL_OUT_Print_grad_In_GRAD)) fl_tensor_ref(OUT(FL_OUT_Print_grad_In_GRAD), g);
    return FL_OK;
}
FL_ADAPTER(Print_grad, prep_print_grad, run_print_grad);

/* ---- optimizers: the inputs are the executor's own references, so the kernels never update a
 * published buffer in place: every update is a new tensor replacing the old one whole (except
 * a SelectedRows gradient's rows, written into the parameter and its state under their var's
 * lock when only the var and the call hold them: fl_exec_rows_update) ---- */

static FlStatus sgd_rows(OpCall *c, void *ctx, const FlTensor *grad, const FlTensor *const *in, FlTensor *const *out) {
    (void)ctx;
    return fl_kernel_sgd(c->e, in[0], grad, IN(FL_IN_sgd_LearningRate), out[0]);
}
/* A SelectedRows Grad updates its rows only (the others have a zero gradient). */
static FlStatus run_sgd(OpCall *c) {
    const FlSelectedRows *g = fl_call_in_rows(c, FL_IN_sgd_Grad);
    if (g)
        return fl_exec_rows_update(c, g, (const FlTensor *[]){IN(FL_IN_sgd_Param)},
                                   (FlTensor *[]){OUT(FL_OUT_sgd_ParamOut)}, 1, sgd_rows, NULL);
    return fl_kernel_sgd(c->e, IN(FL_IN_sgd_Param), IN(FL_IN_sgd_Grad), IN(FL_IN_sgd_LearningRate),
                         OUT(FL_OUT_sgd_ParamOut));
}
FL_SPARSE_ADAPTER(sgd, NULL, run_sgd);

static FlStatus prep_momentum(ExecOp *op, FlErr *e) {
    op->a.f[0] = fl_exec_attr_float(op, "mu");
    op->a.b[0] = fl_exec_attr_bool(op, "use_nesterov");
    return FL_OK;
}
/* Param Grad Velocity LearningRate -> ParamOut VelocityOut */
static FlStatus run_momentum(OpCall *c) {
    FlTensor v = FL_TENSOR_INIT;
    FlStatus s = fl_kernel_momentum(c->e, IN(FL_IN_momentum_Param), IN(FL_IN_momentum_Grad),
                                    IN(FL_IN_momentum_Velocity), IN(FL_IN_momentum_LearningRate),
                                    c->op->a.f[0], c->op->a.b[0], OUT(FL_OUT_momentum_ParamOut),
                                    OUT(FL_OUT_momentum_VelocityOut) ? OUT(FL_OUT_momentum_VelocityOut) : &v);
    fl_tensor_fini(&v);
    return s;
}
FL_ADAPTER(momentum, prep_momentum, run_momentum);

static FlStatus prep_adam(ExecOp *op, FlErr *e) {
    op->a.f[0] = fl_exec_attr_float(op, "beta1");
    op->a.f[1] = fl_exec_attr_float(op, "beta2");
    op->a.f[2] = fl_exec_attr_float(op, "epsilon");
    op->a.b[0] = fl_exec_attr_bool(op, "lazy_mode");
    return FL_OK;
}
/* Adam on param, grad and moments p, m1, m2 (whole tensors or the rows of a sparse gradient);
 * the beta powers come from the call. */
static FlStatus adam_on(OpCall *c, const FlTensor *grad, const FlTensor *p, const FlTensor *m1, const FlTensor *m2,
                        FlTensor *po, FlTensor *m1o, FlTensor *m2o) {
    const PAttrs *a = &c->op->a;
    FlTensor t1 = FL_TENSOR_INIT, t2 = FL_TENSOR_INIT;
    FlStatus s = fl_kernel_adam(c->e, p, grad, IN(FL_IN_adam_LearningRate), m1, m2, IN(FL_IN_adam_Beta1Pow),
                                IN(FL_IN_adam_Beta2Pow), a->f[0], a->f[1], a->f[2], po, m1o ? m1o : &t1,
                                m2o ? m2o : &t2, OUT(FL_OUT_adam_Beta1PowOut), OUT(FL_OUT_adam_Beta2PowOut));
    fl_tensor_fini(&t1);
    fl_tensor_fini(&t2);
    return s;
}
static FlStatus adam_rows(OpCall *c, void *ctx, const FlTensor *grad, const FlTensor *const *in, FlTensor *const *out) {
    (void)ctx;
    return adam_on(c, grad, in[0], in[1], in[2], out[0], out[1], out[2]);
}
/* Param Grad LearningRate Moment1 Moment2 Beta1Pow Beta2Pow
 *   -> ParamOut Moment1Out Moment2Out Beta1PowOut Beta2PowOut
 * A SelectedRows Grad: lazy_mode updates its rows only (param and moments); otherwise every row
 * as the dense gradient with zeros elsewhere would (the moments of the other rows decay). */
static FlStatus run_adam(OpCall *c) {
    const FlTensor *p = IN(FL_IN_adam_Param), *m1 = IN(FL_IN_adam_Moment1), *m2 = IN(FL_IN_adam_Moment2);
    FlTensor *po = OUT(FL_OUT_adam_ParamOut), *m1o = OUT(FL_OUT_adam_Moment1Out), *m2o = OUT(FL_OUT_adam_Moment2Out);
    const FlSelectedRows *g = fl_call_in_rows(c, FL_IN_adam_Grad);
    if (!g) return adam_on(c, IN(FL_IN_adam_Grad), p, m1, m2, po, m1o, m2o);
    if (c->op->a.b[0])
        return fl_exec_rows_update(c, g, (const FlTensor *[]){p, m1, m2}, (FlTensor *[]){po, m1o, m2o}, 3,
                                   adam_rows, NULL);
    FlTensor dense = FL_TENSOR_INIT;
    FlStatus s = fl_rows_to_dense(c->e, g, &dense);
    if (s == FL_OK) s = adam_on(c, &dense, p, m1, m2, po, m1o, m2o);
    fl_tensor_fini(&dense);
    return s;
}
FL_SPARSE_ADAPTER(adam, prep_adam, run_adam);
