/* ops_vocab.c: adapters of the losses over large vocabularies, hierarchical_sigmoid and its
 * gradient (kernels in runtime/kernels/vocab.c). */
#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_vocab.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* a.i[0] num_classes */
static FlStatus prep_hierarchical_sigmoid(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_int(op, "num_classes");
    return FL_OK;
}
static FlStatus run_hierarchical_sigmoid(OpCall *c) {
    FlHsigmoidTree t = {c->op->a.i[0], IN(FL_IN_hierarchical_sigmoid_PathTable),
                        IN(FL_IN_hierarchical_sigmoid_PathCode)};
    return fl_kernel_hsigmoid(c->e, IN(FL_IN_hierarchical_sigmoid_X), IN(FL_IN_hierarchical_sigmoid_W),
                              IN(FL_IN_hierarchical_sigmoid_Label), IN(FL_IN_hierarchical_sigmoid_Bias), &t,
                              OUT(FL_OUT_hierarchical_sigmoid_Out), OUT(FL_OUT_hierarchical_sigmoid_PreOut));
}
FL_ADAPTER(hierarchical_sigmoid, prep_hierarchical_sigmoid, run_hierarchical_sigmoid);
/* hierarchical_sigmoid_grad: X W Label PathTable? PathCode? Bias? PreOut Out@GRAD -> X@GRAD? W@GRAD?
 * Bias@GRAD? */
static FlStatus run_hierarchical_sigmoid_grad(OpCall *c) {
    FlHsigmoidTree t = {c->op->a.i[0], IN(FL_IN_hierarchical_sigmoid_grad_PathTable),
                        IN(FL_IN_hierarchical_sigmoid_grad_PathCode)};
    return fl_kernel_hsigmoid_grad(
        c->e, IN(FL_IN_hierarchical_sigmoid_grad_X), IN(FL_IN_hierarchical_sigmoid_grad_W),
        IN(FL_IN_hierarchical_sigmoid_grad_Label), IN(FL_IN_hierarchical_sigmoid_grad_Bias), &t,
        IN(FL_IN_hierarchical_sigmoid_grad_PreOut), IN(FL_IN_hierarchical_sigmoid_grad_Out_GRAD),
        OUT(FL_OUT_hierarchical_sigmoid_grad_X_GRAD), OUT(FL_OUT_hierarchical_sigmoid_grad_W_GRAD),
        OUT(FL_OUT_hierarchical_sigmoid_grad_Bias_GRAD));
}
FL_ADAPTER(hierarchical_sigmoid_grad, prep_hierarchical_sigmoid, run_hierarchical_sigmoid_grad);
