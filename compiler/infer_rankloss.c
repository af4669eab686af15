/* infer_rankloss.c: shape rules of the ranking losses rank_loss, margin_rank_loss and bpr_loss
 * (adapters in runtime/core/ops_rankloss.c; kernels in runtime/kernels/rankloss.c). */
#include "compiler/infer_impl.h"

/* A float [N, 1] input. */
static FlStatus col(Ctx *c, const char *slot, FlVarDesc **v) {
    if (in1(c, slot, v) || need_float_in(c, *v, slot)) return FL_ERROR;
    Shape s = shape_of(*v);
    if (s.nd != 2 || !dims_agree(s.d[1], 1))
        return fl_err(c->e, "%s: %s must be [N, 1] (a score per row), found %s", c->t, slot, sstr(c, &s));
    return FL_OK;
}

/* Three [N, 1] floats of one dtype and batch; out (and out2 when given) like the first. */
static FlStatus pair(Ctx *c, const char *a, const char *b, const char *l, const char *out, const char *out2) {
    FlVarDesc *x, *y, *z;
    if (col(c, a, &x) || col(c, b, &y) || col(c, l, &z)) return FL_ERROR;
    const FlVarDesc *v[3] = {x, y, z};
    const char *n[3] = {a, b, l};
    for (int i = 1; i < 3; i++) {
        Shape s0 = shape_of(x), si = shape_of(v[i]);
        if (v[i]->dtype != x->dtype)
            return fl_err(c->e, "%s: %s is %s but %s is %s: they must have one dtype", c->t, n[0], dt(x->dtype), n[i],
                          dt(v[i]->dtype));
        if (!dims_agree(s0.d[0], si.d[0]))
            return fl_err(c->e, "%s: %s %s and %s %s must have one row per pair", c->t, n[0], sstr(c, &s0), n[i],
                          sstr(c, &si));
    }
    return set_like(c, out, x) || (out2 && set_like(c, out2, x)) ? FL_ERROR : FL_OK;
}

FlStatus fl_infer_rank_loss(Ctx *c) { return pair(c, "Left", "Right", "Label", "Out", NULL); }

FlStatus fl_infer_margin_rank_loss(Ctx *c) { return pair(c, "X1", "X2", "Label", "Out", "Activated"); }

FlStatus fl_infer_bpr_loss(Ctx *c) {
    FlVarDesc *x, *l;
    if (in1(c, "X", &x) || need_float_in(c, x, "X") || in1(c, "Label", &l) || need_int_in(c, l, "Label"))
        return FL_ERROR;
    Shape xs = shape_of(x), ls = shape_of(l);
    if (xs.nd != 2 || (xs.d[1] >= 0 && xs.d[1] < 2))
        return fl_err(c->e, "%s: X must be [N, C] with C >= 2 (the positive class and at least one other), found %s",
                      c->t, sstr(c, &xs));
    if (ls.nd != 2 || !dims_agree(ls.d[1], 1) || !dims_agree(ls.d[0], xs.d[0]))
        return fl_err(c->e, "%s: Label must be [N, 1] (the positive class of each row of X %s), found %s", c->t,
                      sstr(c, &xs), sstr(c, &ls));
    Shape o = {.nd = 2, .d = {xs.d[0], 1}};
    return set_out(c, "Y", x->dtype, &o);
}
