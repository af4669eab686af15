/* infer_perspective.c: the shape rule of roi_perspective_transform (compiler/ops/perspective.def;
 * adapters runtime/core/ops_perspective.c, kernels runtime/kernels/perspective.c). It checks what
 * Fluid's InferShape checks, so a mistake is a compile error at the layer's line. */
#include "compiler/infer_impl.h"

/* X [N, C, H, W] and ROIs [R, 8] of one float dtype, the offsets ROIsLod; Out [R, C, th, tw]. */
FlStatus fl_infer_roi_perspective_transform(Ctx *c) {
    FlVarDesc *xv, *rv;
    if (in1(c, "X", &xv) || in1(c, "ROIs", &rv) || need_float(c, "the input", xv) || need_offsets(c, "ROIsLod", false))
        return FL_ERROR;
    Shape x = shape_of(xv), r = shape_of(rv);
    if (x.nd != 4) return fl_err(c->e, "%s: the input must be 4-D (N, C, H, W), found %s", c->t, sstr(c, &x));
    if (rv->dtype != xv->dtype || r.nd != 2 || !dims_agree(r.d[1], 8))
        return fl_err(c->e, "%s: ROIs must be %s [R, 8] (x1, y1, x2, y2, x3, y3, x4, y4), found %s %s", c->t,
                      dt(xv->dtype), dt(rv->dtype), sstr(c, &r));
    int64_t th = iattr(c, "transformed_height"), tw = iattr(c, "transformed_width");
    if (th < 1 || tw < 1 || th > INT32_MAX || tw > INT32_MAX)
        return fl_err(c->e, "%s: transformed_height and transformed_width must be >= 1, found %lld and %lld", c->t,
                      (long long)th, (long long)tw);
    double scale = fattr(c, "spatial_scale");
    if (!(scale > 0)) return fl_err(c->e, "%s: spatial_scale must be > 0, found %g", c->t, scale);
    Shape out = {.nd = 4, .d = {r.d[0], x.d[1], th, tw}};
    return set_out(c, "Out", xv->dtype, &out);
}
