/* ops_perspective.c: adapters of roi_perspective_transform and its gradient (kernels in
 * runtime/kernels/kernels_perspective.h; the gradient's slots are its FL_GRAD_SLOTS line in
 * compiler/ops/perspective.def). Each run checks ROIsLod against the regions before its kernel. */
#include <stdlib.h>

#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_perspective.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

static FlStatus prep_perspective(ExecOp *op, FlErr *e) {
    (void)e;
    FlPerspectiveAttrs *a = fl_xcalloc(1, sizeof *a);
    op->a.extra = a;
    a->transformed_height = (int)fl_exec_attr_int(op, "transformed_height");
    a->transformed_width = (int)fl_exec_attr_int(op, "transformed_width");
    a->spatial_scale = fl_exec_attr_float(op, "spatial_scale");
    return FL_OK;
}
#define ATTRS(c) ((const FlPerspectiveAttrs *)(c)->op->a.extra)

static FlStatus run_perspective(OpCall *c) {
    const FlTensor *rois = IN(FL_IN_roi_perspective_transform_ROIs);
    const int64_t *off;
    int64_t nseq;
    if (fl_exec_check_lod(c->e, IN(FL_IN_roi_perspective_transform_ROIsLod), rois && rois->ndim ? rois->ne[0] : -1,
                          "ROIsLod", &off, &nseq))
        return FL_ERROR;
    return fl_kernel_roi_perspective_transform(c->e, IN(FL_IN_roi_perspective_transform_X), rois, off, nseq, ATTRS(c),
                                               OUT(FL_OUT_roi_perspective_transform_Out));
}
FL_ADAPTER(roi_perspective_transform, prep_perspective, run_perspective);

static FlStatus run_perspective_grad(OpCall *c) {
    const FlTensor *rois = IN(FL_IN_roi_perspective_transform_grad_ROIs);
    FlTensor *dx = OUT(FL_OUT_roi_perspective_transform_grad_X_GRAD);
    const int64_t *off;
    int64_t nseq;
    if (!dx) return FL_OK;
    if (fl_exec_check_lod(c->e, IN(FL_IN_roi_perspective_transform_grad_ROIsLod),
                          rois && rois->ndim ? rois->ne[0] : -1, "ROIsLod", &off, &nseq))
        return FL_ERROR;
    return fl_kernel_roi_perspective_transform_grad(c->e, IN(FL_IN_roi_perspective_transform_grad_X), rois, off, nseq,
                                                    IN(FL_IN_roi_perspective_transform_grad_Out_GRAD), ATTRS(c), dx);
}
FL_ADAPTER(roi_perspective_transform_grad, prep_perspective, run_perspective_grad);
