/* infer_seq.c: shape rules of the sequence ops sequence_pool, sequence_softmax, sequence_conv,
 * sequence_expand(_as) and sequence_mask (adapters in runtime/core/ops_seq.c; kernels in
 * runtime/kernels/seq.c). A sequence's offsets are an int64 vector: the rows they cut are known
 * at run time only. */
#include "compiler/infer_impl.h"



/* Out: X's shape with an unknown dim 0 (one row per sequence, or the expanded rows). */
static FlStatus set_rows_unknown(Ctx *c, const char *slot, const FlVarDesc *xv, FlDType t) {
    Shape o = shape_of(xv);
    o.d[0] = -1;
    return set_out(c, slot, t, &o);
}

/* X with at least one dim. */
static FlStatus seq_x(Ctx *c, FlVarDesc **xv, Shape *x) {
    if (in1(c, "X", xv)) return FL_ERROR;
    *x = shape_of(*xv);
    if (x->nd < 1) return fl_err(c->e, "%s: X must have at least one dim, found %s", c->t, sstr(c, x));
    return FL_OK;
}

FlStatus fl_infer_sequence_pool(Ctx *c) {
    FlVarDesc *xv;
    Shape x;
    if (seq_x(c, &xv, &x) || need_offsets(c, "XLod", false) || need_float_in(c, xv, "X")) return FL_ERROR;
    const char *pt = sattr(c, "pooltype");
    static const char *const types[] = {"AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST"};
    bool ok = false;
    for (size_t i = 0; i < FL_ARRAY_LEN(types); i++) ok |= strcmp(pt, types[i]) == 0;
    if (!ok) return fl_err(c->e, "%s: pooltype must be AVERAGE, SUM, SQRT, MAX, LAST or FIRST, found '%s'", c->t, pt);
    if (fl_ir_op_output1(c->op, "MaxIndex") && strcmp(pt, "MAX") != 0)
        return fl_err(c->e, "%s: MaxIndex is made by pooltype MAX only, found '%s'", c->t, pt);
    return set_rows_unknown(c, "Out", xv, xv->dtype) || set_rows_unknown(c, "MaxIndex", xv, FL_DT_INT32);
}

FlStatus fl_infer_sequence_softmax(Ctx *c) {
    FlVarDesc *xv;
    Shape x;
    if (seq_x(c, &xv, &x) || need_offsets(c, "XLod", false) || need_float_in(c, xv, "X")) return FL_ERROR;
    if (!(x.nd == 1 || (x.nd == 2 && dims_agree(x.d[1], 1))))
        return fl_err(c->e, "%s: X must be [T] or [T, 1], found %s", c->t, sstr(c, &x));
    return set_like(c, "Out", xv);
}

FlStatus fl_infer_sequence_conv(Ctx *c) {
    FlVarDesc *xv, *fv;
    Shape x;
    if (seq_x(c, &xv, &x) || need_offsets(c, "XLod", false) || need_float_in(c, xv, "X") || in1(c, "Filter", &fv))
        return FL_ERROR;
    int64_t len = iattr(c, "contextLength"), stride = iattr(c, "contextStride");
    if (len < 1) return fl_err(c->e, "%s: contextLength must be >= 1, found %lld", c->t, (long long)len);
    if (stride != 1) return fl_err(c->e, "%s: contextStride must be 1, found %lld", c->t, (long long)stride);
    Shape f = shape_of(fv);
    if (x.nd != 2) return fl_err(c->e, "%s: X must be [T, D], found %s", c->t, sstr(c, &x));
    if (fv->dtype != xv->dtype || f.nd != 2 || !dims_agree(f.d[0], x.d[1] < 0 ? -1 : smul(len, x.d[1])))
        return fl_err(c->e, "%s: Filter must be %s [contextLength * D, N] for X %s, found %s %s", c->t,
                      dt(xv->dtype), sstr(c, &x), dt(fv->dtype), sstr(c, &f));
    Shape o = {.nd = 2, .d = {x.d[0], f.d[1]}};
    return set_out(c, "Out", xv->dtype, &o);
}

/* sequence_expand and sequence_expand_as (whose XLod and OutLod are absent). */
FlStatus fl_infer_sequence_expand(Ctx *c) {
    FlVarDesc *xv;
    Shape x, lod = shape1(-1);
    if (seq_x(c, &xv, &x) || need_offsets(c, "XLod", true) || need_offsets(c, "YLod", false)) return FL_ERROR;
    return set_rows_unknown(c, "Out", xv, xv->dtype) || set_out(c, "OutLod", FL_DT_INT64, &lod);
}

FlStatus fl_infer_sequence_mask(Ctx *c) {
    FlVarDesc *xv, *mv;
    if (in1(c, "X", &xv) || need_int_in(c, xv, "X") || in_opt(c, "MaxLenTensor", &mv) ||
        (mv && need_int_in(c, mv, "MaxLenTensor")))
        return FL_ERROR;
    Shape y = shape_of(xv), m = mv ? shape_of(mv) : shape1(1);
    if (prod(&m, 0, m.nd) != 1 && prod(&m, 0, m.nd) != -1)
        return fl_err(c->e, "%s: MaxLenTensor must hold one int, found %s", c->t, sstr(c, &m));
    int64_t maxlen = mv ? -1 : iattr(c, "maxlen"), odt = iattr(c, "out_dtype");
    if (odt < 0 || odt >= FL_DT_COUNT) return fl_err(c->e, "%s: out_dtype %lld is not a dtype", c->t, (long long)odt);
    if (y.nd >= FL_IR_MAX_DIMS) return fl_err(c->e, "%s: X %s has too many dims to add one", c->t, sstr(c, &y));
    y.d[y.nd++] = maxlen < 0 ? -1 : maxlen;
    return set_out(c, "Y", (FlDType)odt, &y);
}
