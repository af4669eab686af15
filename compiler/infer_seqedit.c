/* infer_seqedit.c: the shape rules of sequence_scatter, lod_rank_table and
 * reorder_lod_tensor_by_rank (compiler/ops/seqedit.def; adapters
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

/* lod_rank_table: XLod offsets -> int64 [n, 2]. */
FlStatus fl_infer_lod_rank_table(Ctx *c) {
    if (need_offsets(c, "XLod", false)) return FL_ERROR;
    Shape o = {.nd = 2, .d = {-1, 2}};
    return set_out(c, "Out", FL_DT_INT64, &o);
}

/* reorder_lod_tensor_by_rank: X [T, ...] (any dtype) -> Out like X (its rows reordered), OutLod
 * int64 offsets; RankTable int64 [n, 2]. */
FlStatus fl_infer_reorder_lod_tensor_by_rank(Ctx *c) {
    FlVarDesc *x, *rt;
    if (in1(c, "X", &x) || check_dtype(c, x->dtype) || need_offsets(c, "XLod", true) || in1(c, "RankTable", &rt))
        return FL_ERROR;
    Shape xs = shape_of(x), rs = shape_of(rt);
    if (xs.nd < 1) return fl_err(c->e, "%s: X must have rows to reorder, found %s", c->t, sstr(c, &xs));
    if (rt->dtype != FL_DT_INT64 || rs.nd != 2 || !dims_agree(rs.d[1], 2))
        return fl_err(c->e, "%s: RankTable must be a lod_rank_table (int64 [n, 2]), found %s %s", c->t, dt(rt->dtype),
                      sstr(c, &rs));
    Shape lo = {.nd = 1, .d = {-1}};
    if (set_like(c, "Out", x)) return FL_ERROR;
    return set_out(c, "OutLod", FL_DT_INT64, &lo);
}
