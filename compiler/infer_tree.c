/* infer_tree.c: the shape rule of tree_conv (compiler/ops/tree.def; adapter
 * runtime/core/ops_tree.c; kernel runtime/kernels/tree.c). */
#include "compiler/infer_impl.h"

/* tree_conv: NodesVector float [B, N, F], EdgeSet int [B, E, 2], Filter [F, 3, O, K] (NodesVector's
 * dtype), max_depth >= 1 -> Out [B, N, O, K]. */
FlStatus fl_infer_tree_conv(Ctx *c) {
    FlVarDesc *x, *ed, *w;
    if (in1(c, "NodesVector", &x) || need_float_in(c, x, "NodesVector") || in1(c, "EdgeSet", &ed) ||
        need_int_in(c, ed, "EdgeSet") || in1(c, "Filter", &w))
        return FL_ERROR;
    Shape xs = shape_of(x), es = shape_of(ed), ws = shape_of(w);
    if (xs.nd != 3) return fl_err(c->e, "%s: NodesVector must be [B, N, F] (each instance's node features), found %s",
                                  c->t, sstr(c, &xs));
    if (es.nd != 3 || !dims_agree(es.d[2], 2) || !dims_agree(es.d[0], xs.d[0]))
        return fl_err(c->e, "%s: EdgeSet must be [B, E, 2] (each instance's (parent, child) pairs) of NodesVector %s's "
                            "batch, found %s",
                      c->t, sstr(c, &xs), sstr(c, &es));
    if (w->dtype != x->dtype)
        return fl_err(c->e, "%s: Filter is %s but NodesVector is %s: they must have one dtype", c->t, dt(w->dtype),
                      dt(x->dtype));
    if (ws.nd != 4 || !dims_agree(ws.d[1], 3) || !dims_agree(ws.d[0], xs.d[2]))
        return fl_err(c->e, "%s: Filter must be [F, 3, O, K] with F NodesVector %s's features, found %s", c->t,
                      sstr(c, &xs), sstr(c, &ws));
    int64_t md = iattr(c, "max_depth");
    if (md < 1) return fl_err(c->e, "%s: max_depth must be at least 1, found %lld", c->t, (long long)md);
    Shape o = {.nd = 4, .d = {xs.d[0], xs.d[1], ws.d[2], ws.d[3]}};
    return set_out(c, "Out", x->dtype, &o);
}
