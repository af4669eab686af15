/* infer_masks.c: the shape rule of generate_mask_labels (compiler/ops/masks.def; adapter
 * runtime/core/ops_masks.c, kernel runtime/kernels/masks.c). It checks what Fluid's InferShape
 * checks (and the dtypes its float32 kernel needs), so a mistake is a compile error at the
 * layer's line; the number of masks depends on the data (-1). */
#include "compiler/infer_impl.h"

/* Input slot of rank 2 and a dtype: float32 (want_int false) or an int. */
static FlStatus rank2(Ctx *c, const char *slot, bool want_int, FlVarDesc **v) {
    if (in1(c, slot, v)) return FL_ERROR;
    if (want_int ? need_int_in(c, *v, slot) : (*v)->dtype != FL_DT_FLOAT32
                   ? fl_err(c->e, "%s: %s must be float32 (Fluid's kernel is float32's), found %s", c->t, slot,
                            dt((*v)->dtype))
                   : FL_OK)
        return FL_ERROR;
    if ((*v)->ndim == 2) return FL_OK;
    Shape s = shape_of(*v);
    return fl_err(c->e, "%s: %s must have rank 2, found %s", c->t, slot, sstr(c, &s));
}

FlStatus fl_infer_generate_mask_labels(Ctx *c) {
    static const char *const lods[] = {"GtClassesLod", "IsCrowdLod", "GtSegmsLod0", "GtSegmsLod1", "GtSegmsLod2",
                                       "RoisLod", "LabelsInt32Lod"};
    FlVarDesc *info, *cls, *crowd, *segms, *rois, *labels;
    if (rank2(c, "ImInfo", false, &info) || rank2(c, "GtClasses", true, &cls) || rank2(c, "IsCrowd", true, &crowd) ||
        rank2(c, "GtSegms", false, &segms) || rank2(c, "Rois", false, &rois) || rank2(c, "LabelsInt32", true, &labels))
        return FL_ERROR;
    for (size_t i = 0; i < sizeof lods / sizeof *lods; i++)
        if (need_offsets(c, lods[i], false)) return FL_ERROR;
    Shape s = shape_of(segms), r = shape_of(rois);
    if (!dims_agree(s.d[1], 2))
        return fl_err(c->e, "%s: GtSegms must be [S, 2] (x, y points), found %s", c->t, sstr(c, &s));
    if (!dims_agree(r.d[1], 4)) return fl_err(c->e, "%s: Rois must be [R, 4], found %s", c->t, sstr(c, &r));
    int64_t C = iattr(c, "num_classes"), res = iattr(c, "resolution");
    if (C < 1 || res < 1 || C > INT32_MAX || res > 16384 || C * res * res > ((int64_t)1 << 28))
        return fl_err(c->e, "%s: num_classes (%lld) and resolution (%lld) must be >= 1 (and their masks' columns "
                      "below 2^28)", c->t, (long long)C, (long long)res);
    Shape b = {.nd = 2, .d = {-1, 4}}, one = {.nd = 2, .d = {-1, 1}}, m = {.nd = 2, .d = {-1, C * res * res}},
          l = shape1(-1);
    return set_out(c, "MaskRois", FL_DT_FLOAT32, &b) || set_out(c, "RoiHasMaskInt32", FL_DT_INT32, &one) ||
                   set_out(c, "MaskInt32", FL_DT_INT32, &m) || set_out(c, "MaskRoisLod", FL_DT_INT64, &l)
               ? FL_ERROR
               : FL_OK;
}
