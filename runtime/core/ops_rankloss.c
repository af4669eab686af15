/* ops_rankloss.c: adapters of the ranking losses rank_loss, margin_rank_loss and bpr_loss and
 * their gradients (kernels in runtime/kernels/rankloss.c). */
#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_rankloss.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

static FlStatus run_rank_loss(OpCall *c) {
    return fl_kernel_rank_loss(c->e, IN(FL_IN_rank_loss_Label), IN(FL_IN_rank_loss_Left), IN(FL_IN_rank_loss_Right),
                               OUT(FL_OUT_rank_loss_Out));
}
FL_ADAPTER(rank_loss, NULL, run_rank_loss);
/* rank_loss_grad: Label Left Right Out@GRAD -> Left@GRAD? Right@GRAD? */
static FlStatus run_rank_loss_grad(OpCall *c) {
    return fl_kernel_rank_loss_grad(c->e, IN(FL_IN_rank_loss_grad_Label), IN(FL_IN_rank_loss_grad_Left),
                                    IN(FL_IN_rank_loss_grad_Right), IN(FL_IN_rank_loss_grad_Out_GRAD),
                                    OUT(FL_OUT_rank_loss_grad_Left_GRAD), OUT(FL_OUT_rank_loss_grad_Right_GRAD));
}
FL_ADAPTER(rank_loss_grad, NULL, run_rank_loss_grad);

/* a.f[0] margin */
static FlStatus prep_margin_rank_loss(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.f[0] = fl_exec_attr_float(op, "margin");
    return FL_OK;
}
static FlStatus run_margin_rank_loss(OpCall *c) {
    return fl_kernel_margin_rank_loss(c->e, IN(FL_IN_margin_rank_loss_Label), IN(FL_IN_margin_rank_loss_X1),
                                      IN(FL_IN_margin_rank_loss_X2), c->op->a.f[0], OUT(FL_OUT_margin_rank_loss_Out),
                                      OUT(FL_OUT_margin_rank_loss_Activated));
}
FL_ADAPTER(margin_rank_loss, prep_margin_rank_loss, run_margin_rank_loss);
/* margin_rank_loss_grad: Label Activated Out@GRAD -> X1@GRAD? X2@GRAD? */
static FlStatus run_margin_rank_loss_grad(OpCall *c) {
    return fl_kernel_margin_rank_loss_grad(c->e, IN(FL_IN_margin_rank_loss_grad_Label),
                                           IN(FL_IN_margin_rank_loss_grad_Activated),
                                           IN(FL_IN_margin_rank_loss_grad_Out_GRAD),
                                           OUT(FL_OUT_margin_rank_loss_grad_X1_GRAD),
                                           OUT(FL_OUT_margin_rank_loss_grad_X2_GRAD));
}
FL_ADAPTER(margin_rank_loss_grad, NULL, run_margin_rank_loss_grad);

static FlStatus run_bpr_loss(OpCall *c) {
    return fl_kernel_bpr_loss(c->e, IN(FL_IN_bpr_loss_X), IN(FL_IN_bpr_loss_Label), OUT(FL_OUT_bpr_loss_Y));
}
FL_ADAPTER(bpr_loss, NULL, run_bpr_loss);
/* bpr_loss_grad: X Label Y@GRAD -> X@GRAD? */
static FlStatus run_bpr_loss_grad(OpCall *c) {
    return fl_kernel_bpr_loss_grad(c->e, IN(FL_IN_bpr_loss_grad_X), IN(FL_IN_bpr_loss_grad_Label),
                                   IN(FL_IN_bpr_loss_grad_Y_GRAD), OUT(FL_OUT_bpr_loss_grad_X_GRAD));
}
FL_ADAPTER(bpr_loss_grad, NULL, run_bpr_loss_grad);
