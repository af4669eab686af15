/* infer_gridsample.c: the shape rules of affine_grid and grid_sampler
 * (compiler/ops/gridsample.def; adapters runtime/core/ops_gridsample.c; kernels
 * runtime/kernels/gridsample.c). */
#include "compiler/infer_impl.h"

FlStatus fl_infer_affine_grid(Ctx *c) {
    FlVarDesc *t, *os;
    if (in1(c, "Theta", &t) || need_float_in(c, t, "Theta") || in_opt(c, "OutputShape", &os)) return FL_ERROR;
    Shape ts = shape_of(t);
    if (ts.nd != 3 || !dims_agree(ts.d[1], 2) || !dims_agree(ts.d[2], 3))
        return fl_err(c->e, "%s: Theta must be [N, 2, 3] (an affine map per image), found %s", c->t, sstr(c, &ts));
    Shape o = {.nd = 4, .d = {ts.d[0], -1, -1, 2}};
    if (os) {
        Shape ss = shape_of(os);
        if (need_int_in(c, os, "OutputShape")) return FL_ERROR;
        if (ss.nd != 1 || !dims_agree(ss.d[0], 4))
            return fl_err(c->e, "%s: OutputShape must be int [4] ([N, C, H, W]), found %s", c->t, sstr(c, &ss));
        return set_out(c, "Output", t->dtype, &o);
    }
    size_t n = 0;
    bool ok;
    const int64_t *s = intsattr(c, "output_shape", &n, &ok);
    if (!ok) return FL_ERROR;
    if (n != 4)
        return fl_err(c->e, "%s: output_shape must be [N, C, H, W] (4 ints) when OutputShape is absent, found %zu", c->t,
                      n);
    for (int i = 0; i < 4; i++)
        if (s[i] < 1 && !(i == 0 && s[i] == -1))
            return fl_err(c->e, "%s: output_shape [%lld, %lld, %lld, %lld] must hold sizes >= 1", c->t, (long long)s[0],
                          (long long)s[1], (long long)s[2], (long long)s[3]);
    if (!dims_agree(s[0], ts.d[0]))
        return fl_err(c->e, "%s: output_shape's N %lld and Theta %s's must agree", c->t, (long long)s[0],
                      sstr(c, &ts));
    o.d[0] = merge(ts.d[0], s[0]);
    o.d[1] = s[2];
    o.d[2] = s[3];
    return set_out(c, "Output", t->dtype, &o);
}

FlStatus fl_infer_grid_sampler(Ctx *c) {
    FlVarDesc *x, *g;
    if (in1(c, "X", &x) || need_float_in(c, x, "X") || in1(c, "Grid", &g) || need_float_in(c, g, "Grid"))
        return FL_ERROR;
    Shape xs = shape_of(x), gs = shape_of(g);
    if (xs.nd != 4) return fl_err(c->e, "%s: X must be [N, C, H, W], found %s", c->t, sstr(c, &xs));
    if (g->dtype != x->dtype || gs.nd != 4 || !dims_agree(gs.d[3], 2) || !dims_agree(gs.d[0], xs.d[0]))
        return fl_err(c->e, "%s: Grid must be %s [N, H', W', 2] with X %s's N, found %s %s", c->t, dt(x->dtype),
                      sstr(c, &xs), dt(g->dtype), sstr(c, &gs));
    Shape o = {.nd = 4, .d = {merge(xs.d[0], gs.d[0]), xs.d[1], gs.d[1], gs.d[2]}};
    return set_out(c, "Output", x->dtype, &o);
}
