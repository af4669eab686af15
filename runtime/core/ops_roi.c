/* ops_roi.c: adapters of roi_pool, roi_align and psroi_pool and their gradients (kernels in
 * runtime/kernels/kernels_roi.h; the gradients' slots are their FL_GRAD_SLOTS lines in
 * compiler/ops/roi.def). Each run checks ROIsLod against the boxes before its kernel. */
#include <stdlib.h>

#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_roi.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

static FlStatus prep_roi(ExecOp *op, FlErr *e) {
    (void)e;
    FlRoiAttrs *a = fl_xcalloc(1, sizeof *a);
    op->a.extra = a;
    a->pooled_height = (int)fl_exec_attr_int(op, "pooled_height");
    a->pooled_width = (int)fl_exec_attr_int(op, "pooled_width");
    a->spatial_scale = fl_exec_attr_float(op, "spatial_scale");
    a->sampling_ratio = fl_ops_attr(op->info, "sampling_ratio") ? (int)fl_exec_attr_int(op, "sampling_ratio") : -1;
    a->output_channels = fl_ops_attr(op->info, "output_channels") ? (int)fl_exec_attr_int(op, "output_channels") : 0;
    return FL_OK;
}
#define ROI(c) ((const FlRoiAttrs *)(c)->op->a.extra)

/* The offsets of ROIs' LoD, checked against its rows. */
static FlStatus roi_lod(OpCall *c, const FlTensor *lod, const FlTensor *rois, const int64_t **off, int64_t *nseq) {
    return fl_exec_check_lod(c->e, lod, rois && rois->ndim ? rois->ne[0] : -1, "ROIsLod", off, nseq);
}

#define ROI_ADAPTERS(name, fwd_call, grad_call)                                                                  \
    static FlStatus run_##name(OpCall *c) {                                                                     \
        const FlTensor *x = IN(FL_IN_##name##_X), *rois = IN(FL_IN_##name##_ROIs);                            \
        const int64_t *off;                                                                                     \
        int64_t nseq;                                                                                           \
        if (roi_lod(c, IN(FL_IN_##name##_ROIsLod), rois, &off, &nseq)) return FL_ERROR;                       \
        return fwd_call;                                                                                        \
    }                                                                                                           \
    FL_ADAPTER(name, prep_roi, run_##name);                                                                     \
    static FlStatus run_##name##_grad(OpCall *c) {                                                              \
        const FlTensor *x = IN(FL_IN_##name##_grad_X), *rois = IN(FL_IN_##name##_grad_ROIs);                  \
        const FlTensor *dout = IN(FL_IN_##name##_grad_Out_GRAD);                                               \
        FlTensor *dx = OUT(FL_OUT_##name##_grad_X_GRAD);                                                        \
        const int64_t *off;                                                                                     \
        int64_t nseq;                                                                                           \
        if (!dx) return FL_OK;                                                                                  \
        if (roi_lod(c, IN(FL_IN_##name##_grad_ROIsLod), rois, &off, &nseq)) return FL_ERROR;                  \
        return grad_call;                                                                                       \
    }                                                                                                           \
    FL_ADAPTER(name##_grad, prep_roi, run_##name##_grad)

ROI_ADAPTERS(roi_pool,
             fl_kernel_roi_pool(c->e, x, rois, off, nseq, ROI(c), OUT(FL_OUT_roi_pool_Out), OUT(FL_OUT_roi_pool_Argmax)),
             fl_kernel_roi_pool_grad(c->e, x, rois, off, nseq, IN(FL_IN_roi_pool_grad_Argmax), dout, ROI(c), dx));
ROI_ADAPTERS(roi_align, fl_kernel_roi_align(c->e, x, rois, off, nseq, ROI(c), OUT(FL_OUT_roi_align_Out)),
             fl_kernel_roi_align_grad(c->e, x, rois, off, nseq, dout, ROI(c), dx));
ROI_ADAPTERS(psroi_pool, fl_kernel_psroi_pool(c->e, x, rois, off, nseq, ROI(c), OUT(FL_OUT_psroi_pool_Out)),
             fl_kernel_psroi_pool_grad(c->e, x, rois, off, nseq, dout, ROI(c), dx));
