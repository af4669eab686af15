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

FlStatus fl_infer_spectral_norm(Ctx *c) {
    FlVarDesc *w, *u, *v;
    int64_t dim = iattr(c, "dim"), iters = iattr(c, "power_iters");
    double eps = fattr(c, "eps");
    if (in1(c, "Weight", &w) || need_float_in(c, w, "Weight")) return FL_ERROR;
    Shape ws = shape_of(w);
    if (ws.nd < 2 || ws.nd > 5)
        return fl_err(c->e, "%s: Weight must have rank 2 to 5 (a weight of fc or a convolution), found %s", c->t,
                      sstr(c, &ws));
    if (dim < 0 || dim >= ws.nd)
        return fl_err(c->e, "%s: dim (%lld) must be an axis of Weight %s, in [0, %d)", c->t, (long long)dim,
                      sstr(c, &ws), ws.nd);
    if (iters < 0) return fl_err(c->e, "%s: power_iters (%lld) must be >= 0", c->t, (long long)iters);
    if (!(eps > 0)) return fl_err(c->e, "%s: eps (%g) must be > 0", c->t, eps);
    int64_t h = ws.d[dim], rest = 1;
    for (int i = 0; i < ws.nd; i++)
        if (i != dim) rest = ws.d[i] < 0 || rest < 0 ? -1 : smul(rest, ws.d[i]);
    if (in1(c, "U", &u) || in1(c, "V", &v)) return FL_ERROR;
    Shape us = shape_of(u), vs = shape_of(v);
    if (u->dtype != w->dtype || us.nd != 1 || !dims_agree(us.d[0], h))
        return fl_err(c->e, "%s: U must be %s [%lld] (Weight %s's axis %lld), found %s %s", c->t, dt(w->dtype),
                      (long long)h, sstr(c, &ws), (long long)dim, dt(u->dtype), sstr(c, &us));
    if (v->dtype != w->dtype || vs.nd != 1 || !dims_agree(vs.d[0], rest))
        return fl_err(c->e, "%s: V must be %s [%lld] (the other axes of Weight %s), found %s %s", c->t, dt(w->dtype),
                      (long long)rest, sstr(c, &ws), dt(v->dtype), sstr(c, &vs));
    return set_like(c, "Out", w);
}
