/* infer_roi.c: shape rules of roi_pool, roi_align and psroi_pool (compiler/ops/roi.def; adapters
 * runtime/core/ops_roi.c, kernels runtime/kernels/roi.c). */
#include "compiler/infer_impl.h"

/* X [N, C, H, W] and ROIs [R, 4] of one float dtype, the offsets ROIsLod, and the pooled sizes;
 * out = [R, C, ph, pw]. */
static FlStatus roi_in(Ctx *c, FlVarDesc **xv, Shape *out) {
    FlVarDesc *rv;
    if (in1(c, "X", xv) || in1(c, "ROIs", &rv) || need_float(c, "the input", *xv) || need_offsets(c, "ROIsLod", false))
        return FL_ERROR;
    Shape x = shape_of(*xv), r = shape_of(rv);
    if (x.nd != 4) return fl_err(c->e, "%s: the input must be 4-D (N, C, H, W), found %s", c->t, sstr(c, &x));
    if (rv->dtype != (*xv)->dtype || r.nd != 2 || !dims_agree(r.d[1], 4))
        return fl_err(c->e, "%s: ROIs must be %s [R, 4] (x1, y1, x2, y2), found %s %s", c->t, dt((*xv)->dtype),
                      dt(rv->dtype), sstr(c, &r));
    int64_t ph = iattr(c, "pooled_height"), pw = iattr(c, "pooled_width");
    if (ph < 1 || pw < 1 || ph > INT32_MAX || pw > INT32_MAX)
        return fl_err(c->e, "%s: pooled_height and pooled_width must be >= 1, found %lld and %lld", c->t,
                      (long long)ph, (long long)pw);
    double scale = fattr(c, "spatial_scale");
    if (!(scale > 0)) return fl_err(c->e, "%s: spatial_scale must be > 0, found %g", c->t, scale);
    *out = (Shape){.nd = 4, .d = {r.d[0], x.d[1], ph, pw}};
    return FL_OK;
}

FlStatus fl_infer_roi_pool(Ctx *c) {
    FlVarDesc *xv;
    Shape out;
    if (roi_in(c, &xv, &out)) return FL_ERROR;
    return set_out(c, "Out", xv->dtype, &out) || set_out(c, "Argmax", FL_DT_INT64, &out) ? FL_ERROR : FL_OK;
}

FlStatus fl_infer_roi_align(Ctx *c) {
    FlVarDesc *xv;
    Shape out;
    if (roi_in(c, &xv, &out)) return FL_ERROR;
    int64_t sr = iattr(c, "sampling_ratio");
    if (sr == 0 || sr < -1 || sr > INT32_MAX)
        return fl_err(c->e, "%s: sampling_ratio must be -1 (adaptive) or >= 1, found %lld", c->t, (long long)sr);
    return set_out(c, "Out", xv->dtype, &out);
}

FlStatus fl_infer_psroi_pool(Ctx *c) {
    FlVarDesc *xv;
    Shape out;
    if (roi_in(c, &xv, &out)) return FL_ERROR;
    int64_t oc = iattr(c, "output_channels");
    if (oc < 1 || oc > INT32_MAX) return fl_err(c->e, "%s: output_channels must be >= 1, found %lld", c->t, (long long)oc);
    if (out.d[1] >= 0 && out.d[1] != oc * out.d[2] * out.d[3]) {
        Shape x = shape_of(xv);
        return fl_err(c->e, "%s: the input %s must have output_channels * pooled_height * pooled_width = %lld channels",
                      c->t, sstr(c, &x), (long long)(oc * out.d[2] * out.d[3]));
    }
    out.d[1] = oc;
    return set_out(c, "Out", xv->dtype, &out);
}
