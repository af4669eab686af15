/* ops_ctr.c: the adapters of the CTR feature ops, hash and cvm (continuous_value_model) with its
 * gradient (kernels in runtime/kernels/ctr.c), and of the ops on a sparse gradient's rows,
 * merge_selected_rows and get_tensor_from_selected_rows (over runtime/rows.h). */
#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_ctr.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* ---- hash: a.i[0] num_hash, a.i[1] mod_by ---- */

static FlStatus prep_hash(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_int(op, "num_hash");
    op->a.i[1] = fl_exec_attr_int(op, "mod_by");
    return FL_OK;
}
static FlStatus run_hash(OpCall *c) {
    return fl_kernel_hash(c->e, IN(FL_IN_hash_X), c->op->a.i[0], c->op->a.i[1], OUT(FL_OUT_hash_Out));
}
FL_ADAPTER(hash, prep_hash, run_hash);

/* ---- cvm (continuous_value_model): a.i[0] use_cvm ---- */

static FlStatus prep_cvm(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_bool(op, "use_cvm");
    return FL_OK;
}
static FlStatus run_cvm(OpCall *c) {
    return fl_kernel_cvm(c->e, IN(FL_IN_cvm_X), c->op->a.i[0] != 0,
                         OUT(FL_OUT_cvm_Y));
}
FL_ADAPTER(cvm, prep_cvm, run_cvm);
/* cvm_grad: X CVM XLod? Y@GRAD -> X@GRAD? */
static FlStatus run_cvm_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_cvm_grad_X_GRAD);
    if (!dx) return FL_OK;
    const FlTensor *x = IN(FL_IN_cvm_grad_X), *lod = IN(FL_IN_cvm_grad_XLod);
    const int64_t *off = NULL;
    int64_t nseq = 0;
    if (lod && fl_tensor_has_data(lod) &&
        fl_exec_check_lod(c->e, lod, x && x->ndim ? x->ne[0] : -1, "XLod", &off, &nseq))
        return FL_ERROR;
    return fl_kernel_cvm_grad(c->e, x, IN(FL_IN_cvm_grad_CVM), off, nseq,
                              IN(FL_IN_cvm_grad_Y_GRAD), c->op->a.i[0] != 0, dx);
}
FL_ADAPTER(cvm_grad, prep_cvm, run_cvm_grad);

/* ---- merge_selected_rows, get_tensor_from_selected_rows: X a SelectedRows ---- */

static FlStatus rows_in(OpCall *c, const FlSelectedRows *x, const char *op) {
    if (!x || !fl_rows_has_data(x))
        return fl_err(c->e, "%s: X holds no SelectedRows (a sparse gradient) when the op runs", op);
    return fl_rows_check(c->e, x);
}
static FlStatus run_merge_selected_rows(OpCall *c) {
    const FlSelectedRows *x = fl_call_in_rows(c, FL_IN_merge_selected_rows_X);
    FlSelectedRows *out = fl_call_out_rows(c, FL_OUT_merge_selected_rows_Out);
    if (rows_in(c, x, "merge_selected_rows")) return FL_ERROR;
    if (!out) return fl_err(c->e, "merge_selected_rows: Out must be a SelectedRows var");
    return fl_rows_merge(c->e, &x, 1, out);
}
FL_SPARSE_ADAPTER(merge_selected_rows, NULL, run_merge_selected_rows);
static FlStatus run_get_tensor_from_selected_rows(OpCall *c) {
    const FlSelectedRows *x = fl_call_in_rows(c, FL_IN_get_tensor_from_selected_rows_X);
    if (rows_in(c, x, "get_tensor_from_selected_rows")) return FL_ERROR;
    FlTensor *out = OUT(FL_OUT_get_tensor_from_selected_rows_Out), v = FL_TENSOR_INIT;
    if (!out) return FL_OK;
    fl_tensor_ref(&v, &x->value); /* tensors are immutable once published: the block is shared */
    fl_tensor_fini(out);
    *out = v;
    return FL_OK;
}
FL_SPARSE_ADAPTER(get_tensor_from_selected_rows, NULL, run_get_tensor_from_selected_rows);
