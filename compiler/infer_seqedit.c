/* infer_seqedit.c: the shape rule of sequence_scatter (compiler/ops/seqedit.def; adapters
 * runtime/core/ops_seqedit.c; kernels runtime/kernels/seqedit.c). */
#include "compiler/infer_impl.h"

/* sequence_scatter: X float [N, ...], Ids int64 [M, 1] (or [M]), Updates [M, 1] of X's dtype; Out
 * like X. */
FlStatus fl_infer_sequence_scatter(Ctx *c) {
    FlVarDesc *x, *ids, *up;
    if (in1(c, "X", &x) || need_float_in(c, x, "X") || in1(c, "Ids", &ids) || in1(c, "Updates", &up) ||
        need_offsets(c, "IdsLod", false))
        return FL_ERROR;
    Shape xs = shape_of(x), is = shape_of(ids), us = shape_of(up);
    if (xs.nd < 2)
        return fl_err(c->e, "%s: X must be [N, ...] with at least two dims (a row per sequence), found %s", c->t,
                      sstr(c, &xs));
    if (ids->dtype != FL_DT_INT64 || !(is.nd == 1 || (is.nd == 2 && dims_agree(is.d[1], 1))))
        return fl_err(c->e, "%s: Ids must be int64 [M, 1] (an element index per row of the sequences), found %s %s",
                      c->t, dt(ids->dtype), sstr(c, &is));
    bool same = up->dtype == x->dtype && us.nd == is.nd;
    for (int k = 0; same && k < us.nd; k++) same = dims_agree(us.d[k], is.d[k]);
    if (!same)
        return fl_err(c->e, "%s: Updates must be %s %s like Ids (a value per index), found %s %s", c->t, dt(x->dtype),
                      sstr(c, &is), dt(up->dtype), sstr(c, &us));
    return set_like(c, "Out", x);
}
