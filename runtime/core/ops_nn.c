/* ops_nn.c: adapters of the matrix products, embeddings, softmax and losses, reductions,
 * convolution, pooling, batch norm and dropout, and their gradients (slots by their generated
 * names, as in ops_math.c; the custom gradients' slots are their FL_GRAD_SLOTS lines in ops.def). */
#include <stdlib.h>
#include <string.h>

#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_conv3.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* ---- products ---- */

static FlStatus prep_mul(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "x_num_col_dims");
    op->a.i[1] = fl_exec_attr_int(op, "y_num_col_dims");
    return FL_OK;
}
static FlStatus run_mul(OpCall *c) {
    return fl_kernel_mul(c->e, IN(FL_IN_mul_X), IN(FL_IN_mul_Y), (int)c->op->a.i[0], (int)c->op->a.i[1],
                         OUT(FL_OUT_mul_Out));
}
FL_ADAPTER(mul, prep_mul, run_mul);
/* mul_grad: X, Y, Out, Out@GRAD -> X@GRAD, Y@GRAD */
static FlStatus run_mul_grad(OpCall *c) {
    if (!OUT(FL_OUT_mul_grad_X_GRAD) && !OUT(FL_OUT_mul_grad_Y_GRAD)) return FL_OK;
    return fl_kernel_mul_grad(c->e, IN(FL_IN_mul_grad_X), IN(FL_IN_mul_grad_Y), IN(FL_IN_mul_grad_Out_GRAD),
                              (int)c->op->a.i[0], (int)c->op->a.i[1], OUT(FL_OUT_mul_grad_X_GRAD),
                              OUT(FL_OUT_mul_grad_Y_GRAD));
}
FL_ADAPTER(mul_grad, prep_mul, run_mul_grad);

static FlStatus prep_matmul(ExecOp *op, FlErr *e) {
    op->a.b[0] = fl_exec_attr_bool(op, "transpose_X");
    op->a.b[1] = fl_exec_attr_bool(op, "transpose_Y");
    op->a.f[0] = fl_exec_attr_float(op, "alpha");
    return FL_OK;
}
static FlStatus run_matmul(OpCall *c) {
    const PAttrs *a = &c->op->a;
    return fl_kernel_matmul(c->e, IN(FL_IN_matmul_X), IN(FL_IN_matmul_Y), a->b[0], a->b[1], a->f[0],
                            OUT(FL_OUT_matmul_Out));
}
FL_ADAPTER(matmul, prep_matmul, run_matmul);
static FlStatus run_matmul_grad(OpCall *c) {
    const PAttrs *a = &c->op->a;
    if (!OUT(FL_OUT_matmul_grad_X_GRAD) && !OUT(FL_OUT_matmul_grad_Y_GRAD)) return FL_OK;
    return fl_kernel_matmul_grad(c->e, IN(FL_IN_matmul_grad_X), IN(FL_IN_matmul_grad_Y),
                                 IN(FL_IN_matmul_grad_Out_GRAD), a->b[0], a->b[1], a->f[0],
                                 OUT(FL_OUT_matmul_grad_X_GRAD), OUT(FL_OUT_matmul_grad_Y_GRAD));
}
FL_ADAPTER(matmul_grad, prep_matmul, run_matmul_grad);

static FlStatus prep_lookup_table(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "padding_idx");
    return FL_OK;
}
static FlStatus run_lookup_table(OpCall *c) {
    return fl_kernel_lookup_table(c->e, IN(FL_IN_lookup_table_W), IN(FL_IN_lookup_table_Ids), c->op->a.i[0],
                                  OUT(FL_OUT_lookup_table_Out));
}
FL_ADAPTER(lookup_table, prep_lookup_table, run_lookup_table);
/* lookup_table_grad: W, Ids, Out, Out@GRAD -> W@GRAD, Ids@GRAD (never made) */
static FlStatus run_lookup_table_grad(OpCall *c) {
    FlSelectedRows *rows = fl_call_out_rows(c, FL_OUT_lookup_table_grad_W_GRAD);
    if (rows) /* is_sparse: the program declares W@GRAD a SelectedRows */
        return fl_kernel_lookup_table_grad_rows(c->e, IN(FL_IN_lookup_table_grad_W), IN(FL_IN_lookup_table_grad_Ids),
                                                IN(FL_IN_lookup_table_grad_Out_GRAD), c->op->a.i[0], rows);
    if (!OUT(FL_OUT_lookup_table_grad_W_GRAD)) return FL_OK;
    return fl_kernel_lookup_table_grad(c->e, IN(FL_IN_lookup_table_grad_W), IN(FL_IN_lookup_table_grad_Ids),
                                       IN(FL_IN_lookup_table_grad_Out_GRAD), c->op->a.i[0],
                                       OUT(FL_OUT_lookup_table_grad_W_GRAD));
}
FL_SPARSE_ADAPTER(lookup_table_grad, prep_lookup_table, run_lookup_table_grad);
/* distributed_lookup_grad_rows: Ids, Out@GRAD -> W@GRAD (a SelectedRows of `height` rows):
 * lookup_table_grad's rows, the table's shape standing in for the table the trainer lacks */
static FlStatus prep_dist_lookup_grad(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "padding_idx");
    op->a.i[1] = fl_exec_attr_int(op, "height");
    if (op->a.i[1] < 1) return fl_err(e, "attribute 'height' is %lld (the table's rows)", (long long)op->a.i[1]);
    return FL_OK;
}
static FlStatus run_dist_lookup_grad(OpCall *c) {
    FlSelectedRows *rows = fl_call_out_rows(c, FL_OUT_distributed_lookup_grad_rows_W_GRAD);
    if (!rows) return fl_err(c->e, "distributed_lookup_grad_rows: W@GRAD must be declared a SelectedRows");
    const FlTensor *dout = IN(FL_IN_distributed_lookup_grad_rows_Out_GRAD);
    FlTensor w = FL_TENSOR_INIT; /* the shape only: the kernel reads no row of W */
    w.dtype = dout->dtype;
    w.ndim = 2;
    w.ne[0] = c->op->a.i[1];
    w.ne[1] = dout->ndim ? dout->ne[dout->ndim - 1] : 0;
    return fl_kernel_lookup_table_grad_rows(c->e, &w, IN(FL_IN_distributed_lookup_grad_rows_Ids), dout, c->op->a.i[0],
                                            rows);
}
FL_SPARSE_ADAPTER(distributed_lookup_grad_rows, prep_dist_lookup_grad, run_dist_lookup_grad);

/* ---- softmax, losses, reductions ---- */

static FlStatus run_softmax(OpCall *c) {
    return fl_kernel_softmax_axis(c->e, IN(FL_IN_softmax_X), (int)c->op->a.i[0], OUT(FL_OUT_softmax_Out));
}
FL_ADAPTER(softmax, fl_exec_prep_axis, run_softmax);
/* softmax_grad: X, Out, Out@GRAD -> X@GRAD */
static FlStatus run_softmax_grad(OpCall *c) {
    if (!OUT(FL_OUT_softmax_grad_X_GRAD)) return FL_OK;
    return fl_kernel_softmax_axis_grad(c->e, IN(FL_IN_softmax_grad_Out), IN(FL_IN_softmax_grad_Out_GRAD),
                                       (int)c->op->a.i[0], OUT(FL_OUT_softmax_grad_X_GRAD));
}
FL_ADAPTER(softmax_grad, fl_exec_prep_axis, run_softmax_grad);

static FlStatus prep_xent(ExecOp *op, FlErr *e) {
    op->a.b[0] = fl_exec_attr_bool(op, "soft_label");
    op->a.i[0] = fl_exec_attr_int(op, "ignore_index");
    return FL_OK;
}
static FlStatus run_cross_entropy(OpCall *c) {
    return fl_kernel_cross_entropy(c->e, IN(FL_IN_cross_entropy_X), IN(FL_IN_cross_entropy_Label),
                                   c->op->a.b[0], c->op->a.i[0], OUT(FL_OUT_cross_entropy_Y));
}
FL_ADAPTER(cross_entropy, prep_xent, run_cross_entropy);
/* cross_entropy_grad: X, Label, Y, Y@GRAD -> X@GRAD, Label@GRAD (never made) */
static FlStatus run_cross_entropy_grad(OpCall *c) {
    if (!OUT(FL_OUT_cross_entropy_grad_X_GRAD)) return FL_OK;
    return fl_kernel_cross_entropy_grad(c->e, IN(FL_IN_cross_entropy_grad_X),
                                        IN(FL_IN_cross_entropy_grad_Label),
                                        IN(FL_IN_cross_entropy_grad_Y_GRAD), c->op->a.b[0], c->op->a.i[0],
                                        OUT(FL_OUT_cross_entropy_grad_X_GRAD));
}
FL_ADAPTER(cross_entropy_grad, prep_xent, run_cross_entropy_grad);

static FlStatus run_mean(OpCall *c) { return fl_kernel_mean(c->e, IN(FL_IN_mean_X), OUT(FL_OUT_mean_Out)); }
FL_ADAPTER(mean, NULL, run_mean);
static FlStatus run_mean_grad(OpCall *c) {
    if (!OUT(FL_OUT_mean_grad_X_GRAD)) return FL_OK;
    return fl_kernel_mean_grad(c->e, IN(FL_IN_mean_grad_X), IN(FL_IN_mean_grad_Out_GRAD),
                               OUT(FL_OUT_mean_grad_X_GRAD));
}
FL_ADAPTER(mean_grad, NULL, run_mean_grad);

FlStatus fl_exec_prep_reduce(ExecOp *op, FlErr *e) {
    if (fl_exec_attr_dims(op, "dim", e) != FL_OK) return FL_ERROR;
    op->a.b[0] = fl_exec_attr_bool(op, "keep_dim");
    op->a.b[1] = fl_exec_attr_bool(op, "reduce_all");
    return FL_OK;
}
#define REDUCE(name)                                                                                         \
    FL_REDUCE_ADAPTER(name);                                                                                 \
    static FlStatus run_##name##_grad(OpCall *c) {                                                           \
        const PAttrs *a = &c->op->a;                                                                         \
        if (!OUT(FL_OUT_##name##_grad_X_GRAD)) return FL_OK;                                                 \
        return fl_kernel_##name##_grad(c->e, IN(FL_IN_##name##_grad_X), IN(FL_IN_##name##_grad_Out_GRAD),    \
                                       a->dims, a->ndims, a->b[0], a->b[1],                                  \
                                       OUT(FL_OUT_##name##_grad_X_GRAD));                                    \
    }                                                                                                        \
    FL_ADAPTER(name##_grad, fl_exec_prep_reduce, run_##name##_grad);
REDUCE(reduce_sum)
REDUCE(reduce_mean)

/* ---- convolution, pooling ---- */

static FlStatus pair(ExecOp *op, const char *name, int *out, FlErr *e) {
    size_t n;
    const int64_t *v = fl_exec_attr_ints(op, name, &n);
    if (n != 2) return fl_err(e, "attribute '%s' must hold 2 ints, found %zu", name, n);
    out[0] = (int)v[0];
    out[1] = (int)v[1];
    return FL_OK;
}

/* conv2d's and conv2d_transpose's attributes into an FlConv2dAttrs (op->a.extra). */
FlStatus fl_exec_prep_conv2d(ExecOp *op, FlErr *e) {
    FlConv2dAttrs *ca = fl_xcalloc(1, sizeof *ca);
    op->a.extra = ca;
    if (pair(op, "strides", ca->strides, e) || pair(op, "paddings", ca->paddings, e) ||
        pair(op, "dilations", ca->dilations, e))
        return FL_ERROR;
    ca->groups = (int)fl_exec_attr_int(op, "groups");
    return FL_OK;
}
static FlStatus run_conv2d(OpCall *c) {
    return fl_kernel_conv2d(c->e, IN(FL_IN_conv2d_Input), IN(FL_IN_conv2d_Filter), c->op->a.extra,
                            OUT(FL_OUT_conv2d_Output));
}
FL_ADAPTER(conv2d, fl_exec_prep_conv2d, run_conv2d);
/* conv2d_grad: Input, Filter, Output, Output@GRAD -> Input@GRAD, Filter@GRAD */
static FlStatus run_conv2d_grad(OpCall *c) {
    if (!OUT(FL_OUT_conv2d_grad_Input_GRAD) && !OUT(FL_OUT_conv2d_grad_Filter_GRAD)) return FL_OK;
    return fl_kernel_conv2d_grad(c->e, IN(FL_IN_conv2d_grad_Input), IN(FL_IN_conv2d_grad_Filter),
                                 IN(FL_IN_conv2d_grad_Output_GRAD), c->op->a.extra,
                                 OUT(FL_OUT_conv2d_grad_Input_GRAD), OUT(FL_OUT_conv2d_grad_Filter_GRAD));
}
FL_ADAPTER(conv2d_grad, fl_exec_prep_conv2d, run_conv2d_grad);

/* pool2d with adaptive windows runs on the N-D pooling kernel (op->a.b[0]; its attributes an
 * FlPoolNdAttrs) */
static FlStatus prep_pool2d(ExecOp *op, FlErr *e) {
    if ((op->a.b[0] = fl_exec_attr_bool(op, "adaptive"))) return fl_exec_prep_pool_nd(op, e, 2);
    FlPool2dAttrs *pa = fl_xcalloc(1, sizeof *pa);
    op->a.extra = pa;
    const char *t = fl_exec_attr_string(op, "pooling_type");
    if (strcmp(t, "max") == 0) pa->type = FL_POOL_MAX;
    else if (strcmp(t, "avg") == 0) pa->type = FL_POOL_AVG;
    else return fl_err(e, "attribute 'pooling_type' must be 'max' or 'avg', found '%s'", t);
    if (pair(op, "ksize", pa->ksize, e) || pair(op, "strides", pa->strides, e) ||
        pair(op, "paddings", pa->paddings, e))
        return FL_ERROR;
    pa->global_pooling = fl_exec_attr_bool(op, "global_pooling");
    pa->exclusive = fl_exec_attr_bool(op, "exclusive");
    pa->ceil_mode = fl_exec_attr_bool(op, "ceil_mode");
    return FL_OK;
}
static FlStatus run_pool2d(OpCall *c) {
    if (c->op->a.b[0]) return fl_kernel_pool_nd(c->e, IN(FL_IN_pool2d_X), c->op->a.extra, OUT(FL_OUT_pool2d_Out), NULL);
    return fl_kernel_pool2d(c->e, IN(FL_IN_pool2d_X), c->op->a.extra, OUT(FL_OUT_pool2d_Out));
}
FL_ADAPTER(pool2d, prep_pool2d, run_pool2d);
/* pool2d_grad: X, Out, Out@GRAD -> X@GRAD */
static FlStatus run_pool2d_grad(OpCall *c) {
    if (!OUT(FL_OUT_pool2d_grad_X_GRAD)) return FL_OK;
    if (c->op->a.b[0])
        return fl_kernel_pool_nd_grad(c->e, IN(FL_IN_pool2d_grad_X), NULL, IN(FL_IN_pool2d_grad_Out_GRAD),
                                      c->op->a.extra, OUT(FL_OUT_pool2d_grad_X_GRAD));
    return fl_kernel_pool2d_grad(c->e, IN(FL_IN_pool2d_grad_X), IN(FL_IN_pool2d_grad_Out),
                                 IN(FL_IN_pool2d_grad_Out_GRAD), c->op->a.extra,
                                 OUT(FL_OUT_pool2d_grad_X_GRAD));
}
FL_ADAPTER(pool2d_grad, prep_pool2d, run_pool2d_grad);

/* ---- batch norm, dropout ---- */

static FlStatus prep_batch_norm(ExecOp *op, FlErr *e) {
    op->a.f[0] = fl_exec_attr_float(op, "momentum");
    op->a.f[1] = fl_exec_attr_float(op, "epsilon");
    op->a.b[0] = fl_exec_attr_bool(op, "is_test");
    return FL_OK;
}
/* X Scale Bias Mean Variance -> Y MeanOut VarianceOut SavedMean SavedVariance */
static FlStatus run_batch_norm(OpCall *c) {
    const PAttrs *a = &c->op->a;
    /* a predicting run (fl_executor_predict) is inference: running statistics, as Fluid's
     * program.clone(for_test=True) */
    bool is_test = a->b[0] || c->rc->read_only;
    return fl_kernel_batch_norm(
        c->e, IN(FL_IN_batch_norm_X), IN(FL_IN_batch_norm_Scale), IN(FL_IN_batch_norm_Bias),
        IN(FL_IN_batch_norm_Mean), IN(FL_IN_batch_norm_Variance), a->f[0], a->f[1], is_test,
        OUT(FL_OUT_batch_norm_Y), OUT(FL_OUT_batch_norm_MeanOut), OUT(FL_OUT_batch_norm_VarianceOut),
        OUT(FL_OUT_batch_norm_SavedMean), OUT(FL_OUT_batch_norm_SavedVariance));
}
FL_ADAPTER(batch_norm, prep_batch_norm, run_batch_norm);
/* batch_norm_grad: X Scale Bias SavedMean SavedVariance Y@GRAD -> X@GRAD Scale@GRAD Bias@GRAD */
static FlStatus run_batch_norm_grad(OpCall *c) {
    if (!OUT(FL_OUT_batch_norm_grad_X_GRAD) && !OUT(FL_OUT_batch_norm_grad_Scale_GRAD) &&
        !OUT(FL_OUT_batch_norm_grad_Bias_GRAD))
        return FL_OK;
    return fl_kernel_batch_norm_grad(
        c->e, IN(FL_IN_batch_norm_grad_X), IN(FL_IN_batch_norm_grad_Scale),
        IN(FL_IN_batch_norm_grad_SavedMean), IN(FL_IN_batch_norm_grad_SavedVariance),
        IN(FL_IN_batch_norm_grad_Y_GRAD), c->op->a.b[0], OUT(FL_OUT_batch_norm_grad_X_GRAD),
        OUT(FL_OUT_batch_norm_grad_Scale_GRAD), OUT(FL_OUT_batch_norm_grad_Bias_GRAD));
}
FL_ADAPTER(batch_norm_grad, prep_batch_norm, run_batch_norm_grad);

static FlStatus prep_dropout(ExecOp *op, FlErr *e) {
    op->a.f[0] = fl_exec_attr_float(op, "dropout_prob");
    op->a.b[0] = fl_exec_attr_bool(op, "is_test");
    const char *impl = fl_exec_attr_string(op, "dropout_implementation");
    op->a.b[1] = !strcmp(impl, "upscale_in_train");
    if (!op->a.b[1] && strcmp(impl, "downgrade_in_infer"))
        return fl_err(e, "dropout_implementation must be 'downgrade_in_infer' or 'upscale_in_train', found '%s'", impl);
    return FL_OK;
}
/* X -> Out Mask; each run draws a new mask from (seed, run number); a predicting run is
 * inference (no mask, Out = X * (1 - p)) */
static FlStatus run_dropout(OpCall *c) {
    const PAttrs *a = &c->op->a;
    bool is_test = a->b[0] || c->rc->read_only;
    return fl_kernel_dropout(c->e, IN(FL_IN_dropout_X), a->f[0], is_test, a->b[1], c->op->seed, c->rc->step,
                             OUT(FL_OUT_dropout_Out), is_test ? NULL : OUT(FL_OUT_dropout_Mask));
}
FL_ADAPTER(dropout, prep_dropout, run_dropout);
/* dropout_grad: Mask Out@GRAD -> X@GRAD */
static FlStatus run_dropout_grad(OpCall *c) {
    const PAttrs *a = &c->op->a;
    if (!OUT(FL_OUT_dropout_grad_X_GRAD)) return FL_OK;
    return fl_kernel_dropout_grad(c->e, IN(FL_IN_dropout_grad_Mask), IN(FL_IN_dropout_grad_Out_GRAD), a->f[0],
                                  a->b[0], a->b[1], OUT(FL_OUT_dropout_grad_X_GRAD));
}
FL_ADAPTER(dropout_grad, prep_dropout, run_dropout_grad);
