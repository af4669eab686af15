/* ops_nn2.c: adapters of layer_norm, softmax_with_cross_entropy, cos_sim, lrn,
 * conv2d_transpose and the interpolations, and their gradients, and auc (kernels in
 * runtime/kernels/nn2.c; the gradients' slots are their FL_GRAD_SLOTS lines in ops.def). */
#include <stdlib.h>
#include <string.h>

#include "runtime/core/exec_impl.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* ---- layer_norm ---- */

static FlStatus prep_layer_norm(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_int(op, "begin_norm_axis");
    op->a.f[0] = fl_exec_attr_float(op, "epsilon");
    return FL_OK;
}
static FlStatus run_layer_norm(OpCall *c) {
    const PAttrs *a = &c->op->a;
    return fl_kernel_layer_norm(c->e, IN(FL_IN_layer_norm_X), IN(FL_IN_layer_norm_Scale),
                                IN(FL_IN_layer_norm_Bias), (int)a->i[0], a->f[0], OUT(FL_OUT_layer_norm_Y),
                                OUT(FL_OUT_layer_norm_Mean), OUT(FL_OUT_layer_norm_Variance));
}
FL_ADAPTER(layer_norm, prep_layer_norm, run_layer_norm);
/* layer_norm_grad: X Scale? Bias? Mean Variance Y@GRAD -> X@GRAD? Scale@GRAD? Bias@GRAD? */
static FlStatus run_layer_norm_grad(OpCall *c) {
    const PAttrs *a = &c->op->a;
    FlTensor *dx = OUT(FL_OUT_layer_norm_grad_X_GRAD), *ds = OUT(FL_OUT_layer_norm_grad_Scale_GRAD),
             *db = OUT(FL_OUT_layer_norm_grad_Bias_GRAD);
    if (!dx && !ds && !db) return FL_OK;
    return fl_kernel_layer_norm_grad(c->e, IN(FL_IN_layer_norm_grad_X), IN(FL_IN_layer_norm_grad_Scale),
                                     IN(FL_IN_layer_norm_grad_Mean), IN(FL_IN_layer_norm_grad_Variance),
                                     IN(FL_IN_layer_norm_grad_Y_GRAD), (int)a->i[0], a->f[0], dx, ds, db);
}
FL_ADAPTER(layer_norm_grad, prep_layer_norm, run_layer_norm_grad);

/* ---- softmax_with_cross_entropy ---- */

static FlStatus prep_swce(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.b[0] = fl_exec_attr_bool(op, "soft_label");
    op->a.i[0] = fl_exec_attr_int(op, "ignore_index");
    op->a.b[1] = fl_exec_attr_bool(op, "numeric_stable_mode");
    return FL_OK;
}
static FlStatus run_softmax_with_cross_entropy(OpCall *c) {
    const PAttrs *a = &c->op->a;
    return fl_kernel_softmax_with_cross_entropy(
        c->e, IN(FL_IN_softmax_with_cross_entropy_Logits), IN(FL_IN_softmax_with_cross_entropy_Label), a->b[0],
        a->i[0], a->b[1], OUT(FL_OUT_softmax_with_cross_entropy_Softmax), OUT(FL_OUT_softmax_with_cross_entropy_Loss));
}
FL_ADAPTER(softmax_with_cross_entropy, prep_swce, run_softmax_with_cross_entropy);
/* softmax_with_cross_entropy_grad: Logits Label Softmax Loss@GRAD -> Logits@GRAD? */
static FlStatus run_softmax_with_cross_entropy_grad(OpCall *c) {
    const PAttrs *a = &c->op->a;
    FlTensor *dx = OUT(FL_OUT_softmax_with_cross_entropy_grad_Logits_GRAD);
    if (!dx) return FL_OK;
    return fl_kernel_softmax_with_cross_entropy_grad(
        c->e, IN(FL_IN_softmax_with_cross_entropy_grad_Softmax), IN(FL_IN_softmax_with_cross_entropy_grad_Label),
        IN(FL_IN_softmax_with_cross_entropy_grad_Loss_GRAD), a->b[0], a->i[0], dx);
}
FL_ADAPTER(softmax_with_cross_entropy_grad, prep_swce, run_softmax_with_cross_entropy_grad);

/* ---- cos_sim ---- */

static FlStatus run_cos_sim(OpCall *c) {
    return fl_kernel_cos_sim(c->e, IN(FL_IN_cos_sim_X), IN(FL_IN_cos_sim_Y), OUT(FL_OUT_cos_sim_Out),
                             OUT(FL_OUT_cos_sim_XNorm), OUT(FL_OUT_cos_sim_YNorm));
}
FL_ADAPTER(cos_sim, NULL, run_cos_sim);
/* cos_sim_grad: X Y Out XNorm YNorm Out@GRAD -> X@GRAD? Y@GRAD? */
static FlStatus run_cos_sim_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_cos_sim_grad_X_GRAD), *dy = OUT(FL_OUT_cos_sim_grad_Y_GRAD);
    if (!dx && !dy) return FL_OK;
    return fl_kernel_cos_sim_grad(c->e, IN(FL_IN_cos_sim_grad_X), IN(FL_IN_cos_sim_grad_Y),
                                  IN(FL_IN_cos_sim_grad_Out), IN(FL_IN_cos_sim_grad_XNorm),
                                  IN(FL_IN_cos_sim_grad_YNorm), IN(FL_IN_cos_sim_grad_Out_GRAD), dx, dy);
}
FL_ADAPTER(cos_sim_grad, NULL, run_cos_sim_grad);

/* ---- lrn ---- */

static FlStatus prep_lrn(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_int(op, "n");
    op->a.f[0] = fl_exec_attr_float(op, "k");
    op->a.f[1] = fl_exec_attr_float(op, "alpha");
    op->a.f[2] = fl_exec_attr_float(op, "beta");
    return FL_OK;
}
static FlStatus run_lrn(OpCall *c) {
    const PAttrs *a = &c->op->a;
    return fl_kernel_lrn(c->e, IN(FL_IN_lrn_X), (int)a->i[0], a->f[0], a->f[1], a->f[2], OUT(FL_OUT_lrn_Out),
                         OUT(FL_OUT_lrn_MidOut));
}
FL_ADAPTER(lrn, prep_lrn, run_lrn);
/* lrn_grad: X MidOut Out@GRAD -> X@GRAD? */
static FlStatus run_lrn_grad(OpCall *c) {
    const PAttrs *a = &c->op->a;
    FlTensor *dx = OUT(FL_OUT_lrn_grad_X_GRAD);
    if (!dx) return FL_OK;
    return fl_kernel_lrn_grad(c->e, IN(FL_IN_lrn_grad_X), IN(FL_IN_lrn_grad_MidOut), IN(FL_IN_lrn_grad_Out_GRAD),
                              (int)a->i[0], a->f[1], a->f[2], dx);
}
FL_ADAPTER(lrn_grad, prep_lrn, run_lrn_grad);

/* ---- conv2d_transpose ---- */

static FlStatus run_conv2d_transpose(OpCall *c) {
    return fl_kernel_conv2d_transpose(c->e, IN(FL_IN_conv2d_transpose_Input), IN(FL_IN_conv2d_transpose_Filter),
                                      c->op->a.extra, OUT(FL_OUT_conv2d_transpose_Output));
}
FL_ADAPTER(conv2d_transpose, fl_exec_prep_conv2d, run_conv2d_transpose);
/* conv2d_transpose_grad: Input Filter Output@GRAD -> Input@GRAD? Filter@GRAD? */
static FlStatus run_conv2d_transpose_grad(OpCall *c) {
    FlTensor *di = OUT(FL_OUT_conv2d_transpose_grad_Input_GRAD), *df = OUT(FL_OUT_conv2d_transpose_grad_Filter_GRAD);
    if (!di && !df) return FL_OK;
    return fl_kernel_conv2d_transpose_grad(c->e, IN(FL_IN_conv2d_transpose_grad_Input),
                                           IN(FL_IN_conv2d_transpose_grad_Filter),
                                           IN(FL_IN_conv2d_transpose_grad_Output_GRAD), c->op->a.extra, di, df);
}
FL_ADAPTER(conv2d_transpose_grad, fl_exec_prep_conv2d, run_conv2d_transpose_grad);

/* ---- bilinear_interp, nearest_interp ---- */

static FlStatus prep_interp(ExecOp *op, FlErr *e, FlInterpMethod m) {
    FlInterpAttrs *ia = fl_xcalloc(1, sizeof *ia);
    op->a.extra = ia;
    ia->method = m;
    ia->out_h = (int)fl_exec_attr_int(op, "out_h");
    ia->out_w = (int)fl_exec_attr_int(op, "out_w");
    ia->align_corners = fl_exec_attr_bool(op, "align_corners");
    ia->align_mode = m == FL_INTERP_BILINEAR ? (int)fl_exec_attr_int(op, "align_mode") : 1;
    if (ia->out_h < 1 || ia->out_w < 1)
        return fl_err(e, "attributes 'out_h' and 'out_w' must be >= 1, found %d and %d", ia->out_h, ia->out_w);
    return FL_OK;
}
static FlStatus prep_bilinear(ExecOp *op, FlErr *e) { return prep_interp(op, e, FL_INTERP_BILINEAR); }
static FlStatus prep_nearest(ExecOp *op, FlErr *e) { return prep_interp(op, e, FL_INTERP_NEAREST); }

/* The attributes of this run: the op's, with the size [h, w] of OutSize when it has one. */
static FlStatus interp_run_attrs(OpCall *c, const FlTensor *size, FlInterpAttrs *a) {
    *a = *(const FlInterpAttrs *)c->op->a.extra;
    if (!size) return FL_OK;
    if ((size->dtype != FL_DT_INT32 && size->dtype != FL_DT_INT64) || fl_tensor_numel(size) != 2)
        return fl_err(c->e, "OutSize must be the int32 [2] size [h, w], found %s %s", fl_dtype_name(size->dtype),
                      fl_tensor_shape(size).s);
    int64_t hw[2];
    for (int i = 0; i < 2; i++)
        hw[i] = size->dtype == FL_DT_INT32 ? ((const int32_t *)fl_tensor_data(size))[i]
                                           : ((const int64_t *)fl_tensor_data(size))[i];
    if (hw[0] < 1 || hw[1] < 1 || hw[0] > INT32_MAX || hw[1] > INT32_MAX)
        return fl_err(c->e, "OutSize [%lld, %lld] must be a positive size [h, w]", (long long)hw[0], (long long)hw[1]);
    a->out_h = (int)hw[0];
    a->out_w = (int)hw[1];
    return FL_OK;
}
static FlStatus run_interp(OpCall *c, const FlTensor *x, const FlTensor *size, FlTensor *out) {
    FlInterpAttrs a;
    return interp_run_attrs(c, size, &a) || fl_kernel_interp(c->e, x, &a, out);
}
static FlStatus run_interp_grad(OpCall *c, const FlTensor *x, const FlTensor *size, const FlTensor *dout,
                                FlTensor *dx) {
    FlInterpAttrs a;
    if (!dx) return FL_OK;
    return interp_run_attrs(c, size, &a) || fl_kernel_interp_grad(c->e, x, dout, &a, dx);
}
static FlStatus run_bilinear_interp(OpCall *c) {
    return run_interp(c, IN(FL_IN_bilinear_interp_X), IN(FL_IN_bilinear_interp_OutSize),
                      OUT(FL_OUT_bilinear_interp_Out));
}
FL_ADAPTER(bilinear_interp, prep_bilinear, run_bilinear_interp);
static FlStatus run_bilinear_interp_grad(OpCall *c) {
    return run_interp_grad(c, IN(FL_IN_bilinear_interp_grad_X), IN(FL_IN_bilinear_interp_grad_OutSize),
                           IN(FL_IN_bilinear_interp_grad_Out_GRAD), OUT(FL_OUT_bilinear_interp_grad_X_GRAD));
}
FL_ADAPTER(bilinear_interp_grad, prep_bilinear, run_bilinear_interp_grad);
static FlStatus run_nearest_interp(OpCall *c) {
    return run_interp(c, IN(FL_IN_nearest_interp_X), IN(FL_IN_nearest_interp_OutSize), OUT(FL_OUT_nearest_interp_Out));
}
FL_ADAPTER(nearest_interp, prep_nearest, run_nearest_interp);
static FlStatus run_nearest_interp_grad(OpCall *c) {
    return run_interp_grad(c, IN(FL_IN_nearest_interp_grad_X), IN(FL_IN_nearest_interp_grad_OutSize),
                           IN(FL_IN_nearest_interp_grad_Out_GRAD), OUT(FL_OUT_nearest_interp_grad_X_GRAD));
}
FL_ADAPTER(nearest_interp_grad, prep_nearest, run_nearest_interp_grad);

/* ---- auc ---- */

static FlStatus prep_auc(ExecOp *op, FlErr *e) {
    const char *curve = fl_exec_attr_string(op, "curve");
    if (strcmp(curve, "ROC") != 0 && strcmp(curve, "PR") != 0)
        return fl_err(e, "attribute 'curve' must be 'ROC' or 'PR', found '%s'", curve);
    op->a.b[0] = strcmp(curve, "PR") == 0;
    op->a.i[0] = fl_exec_attr_int(op, "num_thresholds");
    op->a.i[1] = fl_exec_attr_int(op, "slide_steps");
    if (op->a.i[0] < 1 || op->a.i[0] > (1 << 24) || op->a.i[1] < 0 || op->a.i[1] > (1 << 20))
        return fl_err(e, "attributes 'num_thresholds' (%lld) and 'slide_steps' (%lld) are out of range",
                      (long long)op->a.i[0], (long long)op->a.i[1]);
    return FL_OK;
}
/* Predict Label StatPos StatNeg -> AUC StatPosOut StatNegOut (the stats updated in place) */
static FlStatus run_auc(OpCall *c) {
    const PAttrs *a = &c->op->a;
    return fl_kernel_auc(c->e, IN(FL_IN_auc_Predict), IN(FL_IN_auc_Label), IN(FL_IN_auc_StatPos),
                         IN(FL_IN_auc_StatNeg), a->b[0], (int)a->i[0], (int)a->i[1], OUT(FL_OUT_auc_AUC),
                         OUT(FL_OUT_auc_StatPosOut), OUT(FL_OUT_auc_StatNegOut));
}
FL_ADAPTER(auc, prep_auc, run_auc);
