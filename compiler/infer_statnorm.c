/* infer_statnorm.c: the shape rules of the normalisations by held statistics, data_norm and
 * spectral_norm (compiler/ops/statnorm.def; adapters runtime/core/ops_statnorm.c; kernels
 * runtime/kernels/statnorm.c). */
#include "compiler/infer_impl.h"

FlStatus fl_infer_data_norm(Ctx *c) {
    FlVarDesc *x;
    const char *layout = sattr(c, "data_layout");
    double eps = fattr(c, "epsilon");
    if (strcmp(layout, "NCHW") && strcmp(layout, "NHWC"))
        return fl_err(c->e, "%s: data_layout must be 'NCHW' or 'NHWC', found '%s'", c->t, layout);
    if (!(eps >= 0 && eps <= 0.001)) return fl_err(c->e, "%s: epsilon (%g) must be in [0, 0.001]", c->t, eps);
    if (in1(c, "X", &x) || need_float_in(c, x, "X")) return FL_ERROR;
    Shape xs = shape_of(x);
    if (xs.nd != 2)
        return fl_err(c->e, "%s: X must be [N, C] (Fluid's kernel normalises rows of features), found %s", c->t,
                      sstr(c, &xs));
    static const char *const stats[] = {"BatchSize", "BatchSum", "BatchSquareSum"};
    for (int i = 0; i < 3; i++) {
        FlVarDesc *v;
        if (in1(c, stats[i], &v)) return FL_ERROR;
        Shape s = shape_of(v);
        if (v->dtype != x->dtype || s.nd != 1 || !dims_agree(s.d[0], xs.d[1]))
            return fl_err(c->e, "%s: %s must be %s [%lld] (one value per column of X %s), found %s %s", c->t, stats[i],
                          dt(x->dtype), (long long)xs.d[1], sstr(c, &xs), dt(v->dtype), sstr(c, &s));
    }
    Shape cs = shape1(xs.d[1]);
    return set_like(c, "Y", x) || set_out(c, "Means", x->dtype, &cs) || set_out(c, "Scales", x->dtype, &cs)
               ? FL_ERROR
               : FL_OK;
}
