/* ops_gridsample.c: the adapters of affine_grid and grid_sampler and their gradients (kernels in
 * runtime/kernels/gridsample.c). */
#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_gridsample.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* ---- affine_grid: a.i[0], a.i[1] the grid's H and W from output_shape (0: from OutputShape) ---- */

static FlStatus prep_affine_grid(ExecOp *op, FlErr *e) {
    (void)e;
    size_t n = 0;
    const int64_t *s = fl_exec_attr_ints(op, "output_shape", &n);
    op->a.i[0] = n == 4 ? s[2] : 0;
    op->a.i[1] = n == 4 ? s[3] : 0;
    return FL_OK;
}
static FlStatus run_affine_grid(OpCall *c) {
    int64_t H = c->op->a.i[0], W = c->op->a.i[1];
    const FlTensor *os = IN(FL_IN_affine_grid_OutputShape);
    if (os && os->buf) {
        if (fl_tensor_numel(os) != 4)
            return fl_err(c->e, "affine_grid: OutputShape %s must hold [N, C, H, W]", fl_tensor_shape(os).s);
        H = fl_tensor_get_int(os, 2);
        W = fl_tensor_get_int(os, 3);
    }
    return fl_kernel_affine_grid(c->e, IN(FL_IN_affine_grid_Theta), H, W, OUT(FL_OUT_affine_grid_Output));
}
FL_ADAPTER(affine_grid, prep_affine_grid, run_affine_grid);
/* affine_grid_grad: Theta Output@GRAD -> Theta@GRAD? */
static FlStatus run_affine_grid_grad(OpCall *c) {
    return fl_kernel_affine_grid_grad(c->e, IN(FL_IN_affine_grid_grad_Theta), IN(FL_IN_affine_grid_grad_Output_GRAD),
                                      OUT(FL_OUT_affine_grid_grad_Theta_GRAD));
}
FL_ADAPTER(affine_grid_grad, NULL, run_affine_grid_grad);

/* ---- grid_sampler ---- */

static FlStatus run_grid_sampler(OpCall *c) {
    return fl_kernel_grid_sampler(c->e, IN(FL_IN_grid_sampler_X), IN(FL_IN_grid_sampler_Grid),
                                  OUT(FL_OUT_grid_sampler_Output));
}
FL_ADAPTER(grid_sampler, NULL, run_grid_sampler);
/* grid_sampler_grad: X Grid Output@GRAD -> X@GRAD? Grid@GRAD? */
static FlStatus run_grid_sampler_grad(OpCall *c) {
    return fl_kernel_grid_sampler_grad(c->e, IN(FL_IN_grid_sampler_grad_X), IN(FL_IN_grid_sampler_grad_Grid),
                                       IN(FL_IN_grid_sampler_grad_Output_GRAD), OUT(FL_OUT_grid_sampler_grad_X_GRAD),
                                       OUT(FL_OUT_grid_sampler_grad_Grid_GRAD));
}
FL_ADAPTER(grid_sampler_grad, NULL, run_grid_sampler_grad);
