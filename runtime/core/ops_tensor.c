/* ops_tensor.c: adapters of the tensor family (compiler/ops/tensor.def; kernels in
 * runtime/kernels/tensor.c): cumsum, reverse, argmin, argsort, the value tests, diag, where,
 * shape, log_loss, huber_loss and kldiv_loss, with their gradients. Slots are bound by their
 * generated names as in ops_math.c. */
#include <string.h>

#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_tensor.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* ---- cumsum: a.i[0] axis, a.b[0] exclusive, a.b[1] reverse ---- */

static FlStatus prep_cumsum(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_int(op, "axis");
    op->a.b[0] = fl_exec_attr_bool(op, "exclusive");
    op->a.b[1] = fl_exec_attr_bool(op, "reverse");
    return FL_OK;
}
static FlStatus run_cumsum(OpCall *c) {
    const PAttrs *a = &c->op->a;
    return fl_kernel_cumsum(c->e, IN(FL_IN_cumsum_X), (int)a->i[0], a->b[0], a->b[1], OUT(FL_OUT_cumsum_Out));
}
FL_ADAPTER(cumsum, prep_cumsum, run_cumsum);
/* the running sum of dOut the other way (exclusive stays exclusive) */
static FlStatus run_cumsum_grad(OpCall *c) {
    const PAttrs *a = &c->op->a;
    if (!OUT(FL_OUT_cumsum_grad_X_GRAD)) return FL_OK;
    return fl_kernel_cumsum(c->e, IN(FL_IN_cumsum_grad_Out_GRAD), (int)a->i[0], a->b[0], !a->b[1],
                            OUT(FL_OUT_cumsum_grad_X_GRAD));
}
FL_ADAPTER(cumsum_grad, prep_cumsum, run_cumsum_grad);

/* ---- reverse: the axes in a.shape[0..nshape) ---- */

static FlStatus prep_reverse(ExecOp *op, FlErr *e) {
    size_t n;
    const int64_t *v = fl_exec_attr_ints(op, "axis", &n);
    if (n > FL_MAX_DIMS) return fl_err(e, "reverse: axis holds %zu values (at most %d)", n, FL_MAX_DIMS);
    if (n) memcpy(op->a.shape, v, n * sizeof *v);
    op->a.nshape = (int)n;
    return FL_OK;
}
static FlStatus run_reverse(OpCall *c) {
    return fl_kernel_reverse(c->e, IN(FL_IN_reverse_X), c->op->a.shape, c->op->a.nshape, OUT(FL_OUT_reverse_Out));
}
FL_ADAPTER(reverse, prep_reverse, run_reverse);
static FlStatus run_reverse_grad(OpCall *c) {
    if (!OUT(FL_OUT_reverse_grad_X_GRAD)) return FL_OK;
    return fl_kernel_reverse(c->e, IN(FL_IN_reverse_grad_Out_GRAD), c->op->a.shape, c->op->a.nshape,
                             OUT(FL_OUT_reverse_grad_X_GRAD));
}
FL_ADAPTER(reverse_grad, prep_reverse, run_reverse_grad);

/* ---- argmin, argsort ---- */

static FlStatus run_argmin(OpCall *c) {
    return fl_kernel_argmin(c->e, IN(FL_IN_argmin_X), (int)c->op->a.i[0], OUT(FL_OUT_argmin_Out));
}
FL_ADAPTER(argmin, fl_exec_prep_axis, run_argmin);

static FlStatus run_argsort(OpCall *c) {
    return fl_kernel_argsort(c->e, IN(FL_IN_argsort_X), (int)c->op->a.i[0], OUT(FL_OUT_argsort_Out),
                             OUT(FL_OUT_argsort_Indices));
}
FL_ADAPTER(argsort, fl_exec_prep_axis, run_argsort);
static FlStatus run_argsort_grad(OpCall *c) {
    if (!OUT(FL_OUT_argsort_grad_X_GRAD)) return FL_OK;
    return fl_kernel_argsort_grad(c->e, IN(FL_IN_argsort_grad_Indices), IN(FL_IN_argsort_grad_Out_GRAD),
                                  (int)c->op->a.i[0], OUT(FL_OUT_argsort_grad_X_GRAD));
}
FL_ADAPTER(argsort_grad, fl_exec_prep_axis, run_argsort_grad);

/* ---- tests of values ---- */

#define VALUE_TEST(name, KIND)                                                                  \
    static FlStatus run_##name(OpCall *c) {                                                     \
        return fl_kernel_value_test(c->e, KIND, IN(FL_IN_##name##_X), OUT(FL_OUT_##name##_Out)); \
    }                                                                                           \
    FL_ADAPTER(name, NULL, run_##name);
VALUE_TEST(isinf, FL_TEST_INF)
VALUE_TEST(isnan, FL_TEST_NAN)
VALUE_TEST(isfinite, FL_TEST_FINITE)

/* ---- diag, where, shape ---- */

static FlStatus run_diag(OpCall *c) { return fl_kernel_diag(c->e, IN(FL_IN_diag_Diagonal), OUT(FL_OUT_diag_Out)); }
FL_ADAPTER(diag, NULL, run_diag);
static FlStatus run_diag_grad(OpCall *c) {
    if (!OUT(FL_OUT_diag_grad_Diagonal_GRAD)) return FL_OK;
    return fl_kernel_diag_grad(c->e, IN(FL_IN_diag_grad_Out_GRAD), OUT(FL_OUT_diag_grad_Diagonal_GRAD));
}
FL_ADAPTER(diag_grad, NULL, run_diag_grad);

static FlStatus prep_mean_iou(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "num_classes");
    if (op->a.i[0] < 1 || op->a.i[0] > (1 << 24))
        return fl_err(e, "attribute 'num_classes' (%lld) must be in [1, 2^24]", (long long)op->a.i[0]);
    return FL_OK;
}
static FlStatus run_mean_iou(OpCall *c) {
    return fl_kernel_mean_iou(c->e, IN(FL_IN_mean_iou_Predictions), IN(FL_IN_mean_iou_Labels), c->op->a.i[0],
                              OUT(FL_OUT_mean_iou_OutMeanIou), OUT(FL_OUT_mean_iou_OutWrong),
                              OUT(FL_OUT_mean_iou_OutCorrect));
}
FL_ADAPTER(mean_iou, prep_mean_iou, run_mean_iou);

static FlStatus run_range(OpCall *c) {
    return fl_kernel_range(c->e, IN(FL_IN_range_Start), IN(FL_IN_range_End), IN(FL_IN_range_Step),
                           OUT(FL_OUT_range_Out));
}
FL_ADAPTER(range, NULL, run_range);
static FlStatus run_linspace(OpCall *c) {
    return fl_kernel_linspace(c->e, IN(FL_IN_linspace_Start), IN(FL_IN_linspace_Stop), IN(FL_IN_linspace_Num),
                              OUT(FL_OUT_linspace_Out));
}
FL_ADAPTER(linspace, NULL, run_linspace);

static FlStatus run_where(OpCall *c) { return fl_kernel_where(c->e, IN(FL_IN_where_Condition), OUT(FL_OUT_where_Out)); }
FL_ADAPTER(where, NULL, run_where);

static FlStatus run_shape(OpCall *c) { return fl_kernel_shape(c->e, IN(FL_IN_shape_Input), OUT(FL_OUT_shape_Out)); }
FL_ADAPTER(shape, NULL, run_shape);

/* ---- losses ---- */

static FlStatus prep_log_loss(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.f[0] = fl_exec_attr_float(op, "epsilon");
    return FL_OK;
}
static FlStatus run_log_loss(OpCall *c) {
    return fl_kernel_log_loss(c->e, IN(FL_IN_log_loss_Predicted), IN(FL_IN_log_loss_Labels), c->op->a.f[0],
                              OUT(FL_OUT_log_loss_Loss));
}
FL_ADAPTER(log_loss, prep_log_loss, run_log_loss);
static FlStatus run_log_loss_grad(OpCall *c) {
    return fl_kernel_log_loss_grad(c->e, IN(FL_IN_log_loss_grad_Predicted), IN(FL_IN_log_loss_grad_Labels),
                                   IN(FL_IN_log_loss_grad_Loss_GRAD), c->op->a.f[0],
                                   OUT(FL_OUT_log_loss_grad_Predicted_GRAD), OUT(FL_OUT_log_loss_grad_Labels_GRAD));
}
FL_ADAPTER(log_loss_grad, prep_log_loss, run_log_loss_grad);

static FlStatus prep_ts_sigmoid(ExecOp *op, FlErr *e) {
    op->a.f[0] = fl_exec_attr_float(op, "soft_max_up_bound");
    op->a.f[1] = fl_exec_attr_float(op, "soft_max_lower_bound");
    if (!(op->a.f[1] < op->a.f[0]))
        return fl_err(e, "attribute 'soft_max_lower_bound' (%g) must be below 'soft_max_up_bound' (%g)", op->a.f[1],
                      op->a.f[0]);
    return FL_OK;
}
static FlStatus run_ts_sigmoid(OpCall *c) {
    return fl_kernel_ts_sigmoid_loss(c->e, IN(FL_IN_teacher_student_sigmoid_loss_X),
                                     IN(FL_IN_teacher_student_sigmoid_loss_Label),
                                     OUT(FL_OUT_teacher_student_sigmoid_loss_Y));
}
FL_ADAPTER(teacher_student_sigmoid_loss, prep_ts_sigmoid, run_ts_sigmoid);
static FlStatus run_ts_sigmoid_grad(OpCall *c) {
    return fl_kernel_ts_sigmoid_loss_grad(
        c->e, IN(FL_IN_teacher_student_sigmoid_loss_grad_X), IN(FL_IN_teacher_student_sigmoid_loss_grad_Label),
        IN(FL_IN_teacher_student_sigmoid_loss_grad_Y_GRAD), c->op->a.f[0], c->op->a.f[1],
        OUT(FL_OUT_teacher_student_sigmoid_loss_grad_X_GRAD), OUT(FL_OUT_teacher_student_sigmoid_loss_grad_Label_GRAD));
}
FL_ADAPTER(teacher_student_sigmoid_loss_grad, prep_ts_sigmoid, run_ts_sigmoid_grad);

static FlStatus prep_huber(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.f[0] = fl_exec_attr_float(op, "delta");
    return FL_OK;
}
static FlStatus run_huber_loss(OpCall *c) {
    return fl_kernel_huber_loss(c->e, IN(FL_IN_huber_loss_X), IN(FL_IN_huber_loss_Y), c->op->a.f[0],
                                OUT(FL_OUT_huber_loss_Out), OUT(FL_OUT_huber_loss_Residual));
}
FL_ADAPTER(huber_loss, prep_huber, run_huber_loss);
static FlStatus run_huber_loss_grad(OpCall *c) {
    return fl_kernel_huber_loss_grad(c->e, IN(FL_IN_huber_loss_grad_Residual), IN(FL_IN_huber_loss_grad_Out_GRAD),
                                     c->op->a.f[0], OUT(FL_OUT_huber_loss_grad_X_GRAD),
                                     OUT(FL_OUT_huber_loss_grad_Y_GRAD));
}
FL_ADAPTER(huber_loss_grad, prep_huber, run_huber_loss_grad);

/* a.i[0]: the FlKlReduction (the compiler checked the name) */
static FlStatus prep_kldiv(ExecOp *op, FlErr *e) {
    const char *r = fl_exec_attr_string(op, "reduction");
    if (strcmp(r, "none") == 0) op->a.i[0] = FL_KL_NONE;
    else if (strcmp(r, "sum") == 0) op->a.i[0] = FL_KL_SUM;
    else if (strcmp(r, "mean") == 0) op->a.i[0] = FL_KL_MEAN;
    else if (strcmp(r, "batchmean") == 0) op->a.i[0] = FL_KL_BATCHMEAN;
    else return fl_err(e, "kldiv_loss: reduction must be 'none', 'batchmean', 'mean' or 'sum', found '%s'", r);
    return FL_OK;
}
static FlStatus run_kldiv_loss(OpCall *c) {
    return fl_kernel_kldiv_loss(c->e, IN(FL_IN_kldiv_loss_X), IN(FL_IN_kldiv_loss_Target),
                                (FlKlReduction)c->op->a.i[0], OUT(FL_OUT_kldiv_loss_Loss));
}
FL_ADAPTER(kldiv_loss, prep_kldiv, run_kldiv_loss);
static FlStatus run_kldiv_loss_grad(OpCall *c) {
    return fl_kernel_kldiv_loss_grad(c->e, IN(FL_IN_kldiv_loss_grad_X), IN(FL_IN_kldiv_loss_grad_Target),
                                     IN(FL_IN_kldiv_loss_grad_Loss_GRAD), (FlKlReduction)c->op->a.i[0],
                                     OUT(FL_OUT_kldiv_loss_grad_X_GRAD), OUT(FL_OUT_kldiv_loss_grad_Target_GRAD));
}
FL_ADAPTER(kldiv_loss_grad, prep_kldiv, run_kldiv_loss_grad);

static FlStatus run_multiplex(OpCall *c) {
    return fl_kernel_multiplex(c->e, fl_call_ins(c, FL_IN_multiplex_X), fl_call_nin(c, FL_IN_multiplex_X),
                               IN(FL_IN_multiplex_Ids), OUT(FL_OUT_multiplex_Out));
}
FL_ADAPTER(multiplex, NULL, run_multiplex);
/* multiplex_grad: X* Ids Out@GRAD -> X@GRAD* (one per X, or none) */
static FlStatus run_multiplex_grad(OpCall *c) {
    int n = fl_call_nin(c, FL_IN_multiplex_grad_X), nout = fl_call_nout(c, FL_OUT_multiplex_grad_X_GRAD);
    if (nout == 0) return FL_OK;
    if (nout != n) return fl_err(c->e, "multiplex_grad: %d inputs but %d input gradients", n, nout);
    return fl_kernel_multiplex_grad(c->e, fl_call_ins(c, FL_IN_multiplex_grad_X), n, IN(FL_IN_multiplex_grad_Ids),
                                    IN(FL_IN_multiplex_grad_Out_GRAD), fl_call_outs(c, FL_OUT_multiplex_grad_X_GRAD));
}
FL_ADAPTER(multiplex_grad, NULL, run_multiplex_grad);
