/* ops_masks.c: the adapter of generate_mask_labels (kernel in runtime/kernels/kernels_masks.h):
 * it checks each input's LoD offsets against its rows (GtSegms' three levels from the points up)
 * and that they all cut the same number of images, then runs the kernel. */
#include <stdlib.h>

#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_masks.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* a.i[0..1] num_classes, resolution */
static FlStatus prep_mask_labels(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_int(op, "num_classes");
    op->a.i[1] = fl_exec_attr_int(op, "resolution");
    return FL_OK;
}

/* The offsets of slot lod over rows (-1 when t has none); *n their sequences. */
static FlStatus offs(OpCall *c, int lod, int64_t rows, const char *name, const int64_t **off, int64_t *n) {
    return fl_exec_check_lod(c->e, IN(lod), rows, name, off, n);
}
static int64_t rows_of(const FlTensor *t) { return t && t->ndim ? t->ne[0] : -1; }

static FlStatus run_mask_labels(OpCall *c) {
    FlMaskLabelsIn in = {.im_info = IN(FL_IN_generate_mask_labels_ImInfo),
                         .gt_classes = IN(FL_IN_generate_mask_labels_GtClasses),
                         .is_crowd = IN(FL_IN_generate_mask_labels_IsCrowd),
                         .segms = IN(FL_IN_generate_mask_labels_GtSegms),
                         .rois = IN(FL_IN_generate_mask_labels_Rois),
                         .labels = IN(FL_IN_generate_mask_labels_LabelsInt32)};
    int64_t n[5], nseq;
    if (offs(c, FL_IN_generate_mask_labels_GtSegmsLod2, rows_of(in.segms), "GtSegmsLod2", &in.segm_off[2],
             &in.n_poly) ||
        offs(c, FL_IN_generate_mask_labels_GtSegmsLod1, in.n_poly, "GtSegmsLod1", &in.segm_off[1], &in.n_obj) ||
        offs(c, FL_IN_generate_mask_labels_GtSegmsLod0, in.n_obj, "GtSegmsLod0", &in.segm_off[0], &nseq) ||
        offs(c, FL_IN_generate_mask_labels_GtClassesLod, rows_of(in.gt_classes), "GtClassesLod", &in.gt_off, &n[0]) ||
        offs(c, FL_IN_generate_mask_labels_IsCrowdLod, rows_of(in.is_crowd), "IsCrowdLod", &in.crowd_off, &n[1]) ||
        offs(c, FL_IN_generate_mask_labels_RoisLod, rows_of(in.rois), "RoisLod", &in.roi_off, &n[2]) ||
        offs(c, FL_IN_generate_mask_labels_LabelsInt32Lod, rows_of(in.labels), "LabelsInt32Lod", &in.label_off, &n[3]))
        return FL_ERROR;
    for (int i = 0; i < 4; i++)
        if (n[i] != nseq)
            return fl_err(c->e, "GtSegms cuts %lld images but GtClasses, IsCrowd, Rois and LabelsInt32 cut %lld, %lld, "
                          "%lld and %lld", (long long)nseq, (long long)n[0], (long long)n[1], (long long)n[2],
                          (long long)n[3]);
    in.nseq = nseq;
    return fl_kernel_generate_mask_labels(c->e, &in, (int)c->op->a.i[0], (int)c->op->a.i[1],
                                          OUT(FL_OUT_generate_mask_labels_MaskRois),
                                          OUT(FL_OUT_generate_mask_labels_RoiHasMaskInt32),
                                          OUT(FL_OUT_generate_mask_labels_MaskInt32),
                                          OUT(FL_OUT_generate_mask_labels_MaskRoisLod));
}
FL_ADAPTER(generate_mask_labels, prep_mask_labels, run_mask_labels);
