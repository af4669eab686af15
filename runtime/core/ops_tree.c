/* ops_tree.c: the adapters of tree_conv and its gradient (kernel in runtime/kernels/tree.c). */
#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_tree.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* a.i[0] max_depth */
static FlStatus prep_tree_conv(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_int(op, "max_depth");
    return FL_OK;
}
static FlStatus run_tree_conv(OpCall *c) {
    return fl_kernel_tree_conv(c->e, IN(FL_IN_tree_conv_NodesVector), IN(FL_IN_tree_conv_EdgeSet),
                               IN(FL_IN_tree_conv_Filter), c->op->a.i[0], OUT(FL_OUT_tree_conv_Out));
}
FL_ADAPTER(tree_conv, prep_tree_conv, run_tree_conv);

/* tree_conv_grad: NodesVector EdgeSet Filter Out@GRAD -> NodesVector@GRAD? Filter@GRAD? */
static FlStatus run_tree_conv_grad(OpCall *c) {
    return fl_kernel_tree_conv_grad(c->e, IN(FL_IN_tree_conv_grad_NodesVector), IN(FL_IN_tree_conv_grad_EdgeSet),
                                    IN(FL_IN_tree_conv_grad_Filter), IN(FL_IN_tree_conv_grad_Out_GRAD), c->op->a.i[0],
                                    OUT(FL_OUT_tree_conv_grad_NodesVector_GRAD), OUT(FL_OUT_tree_conv_grad_Filter_GRAD));
}
FL_ADAPTER(tree_conv_grad, prep_tree_conv, run_tree_conv_grad);
