/* ops_statnorm.c: the adapters of data_norm and spectral_norm and their gradients (kernels in
 * runtime/kernels/statnorm.c). */
#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_statnorm.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* ---- data_norm: a.f[0] epsilon (data_layout checked by the shape rule: X is 2-D, so the two
 * layouts are one) ---- */

static FlStatus prep_data_norm(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.f[0] = fl_exec_attr_float(op, "epsilon");
    return FL_OK;
}
static FlStatus run_data_norm(OpCall *c) {
    return fl_kernel_data_norm(c->e, IN(FL_IN_data_norm_X), IN(FL_IN_data_norm_BatchSize), IN(FL_IN_data_norm_BatchSum),
                               IN(FL_IN_data_norm_BatchSquareSum), OUT(FL_OUT_data_norm_Y),
                               OUT(FL_OUT_data_norm_Means), OUT(FL_OUT_data_norm_Scales));
}
FL_ADAPTER(data_norm, prep_data_norm, run_data_norm);
/* data_norm_grad: X BatchSize BatchSum BatchSquareSum Means Scales Y@GRAD -> X@GRAD? and the
 * batch's summary in BatchSize@GRAD? BatchSum@GRAD? BatchSquareSum@GRAD? */
static FlStatus run_data_norm_grad(OpCall *c) {
    return fl_kernel_data_norm_grad(c->e, IN(FL_IN_data_norm_grad_X), IN(FL_IN_data_norm_grad_Means),
                                    IN(FL_IN_data_norm_grad_Scales), IN(FL_IN_data_norm_grad_Y_GRAD), c->op->a.f[0],
                                    OUT(FL_OUT_data_norm_grad_X_GRAD), OUT(FL_OUT_data_norm_grad_BatchSize_GRAD),
                                    OUT(FL_OUT_data_norm_grad_BatchSum_GRAD),
                                    OUT(FL_OUT_data_norm_grad_BatchSquareSum_GRAD));
}
FL_ADAPTER(data_norm_grad, prep_data_norm, run_data_norm_grad);

/* ---- spectral_norm: a.i[0] dim, a.i[1] power_iters, a.f[0] eps ---- */

static FlStatus prep_spectral_norm(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_int(op, "dim");
    op->a.i[1] = fl_exec_attr_int(op, "power_iters");
    op->a.f[0] = fl_exec_attr_float(op, "eps");
    return FL_OK;
}
static FlStatus run_spectral_norm(OpCall *c) {
    const PAttrs *a = &c->op->a;
    return fl_kernel_spectral_norm(c->e, IN(FL_IN_spectral_norm_Weight), IN(FL_IN_spectral_norm_U),
                                   IN(FL_IN_spectral_norm_V), (int)a->i[0], a->i[1], a->f[0],
                                   OUT(FL_OUT_spectral_norm_Out));
}
FL_ADAPTER(spectral_norm, prep_spectral_norm, run_spectral_norm);
/* spectral_norm_grad: Weight U V Out@GRAD -> Weight@GRAD? */
static FlStatus run_spectral_norm_grad(OpCall *c) {
    const PAttrs *a = &c->op->a;
    return fl_kernel_spectral_norm_grad(c->e, IN(FL_IN_spectral_norm_grad_Weight), IN(FL_IN_spectral_norm_grad_U),
                                        IN(FL_IN_spectral_norm_grad_V), IN(FL_IN_spectral_norm_grad_Out_GRAD),
                                        (int)a->i[0], a->i[1], a->f[0], OUT(FL_OUT_spectral_norm_grad_Weight_GRAD));
}
FL_ADAPTER(spectral_norm_grad, prep_spectral_norm, run_spectral_norm_grad);
