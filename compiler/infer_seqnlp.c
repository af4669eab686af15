/* infer_seqnlp.c: shape rules of the further sequence ops of the NLP layers, sequence_reverse,
 * row_conv, add_position_encoding and sampling_id (adapters in runtime/core/ops_seqnlp.c; kernels in runtime/kernels/seqnlp.c). */
#include "compiler/infer_impl.h"

FlStatus fl_infer_sequence_reverse(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x) || need_offsets(c, "XLod", false)) return FL_ERROR;
    Shape s = shape_of(x);
    if (s.nd < 2)
        return fl_err(c->e, "%s: X must be [T, ...] with at least two dims (a row per step), found %s", c->t,
                      sstr(c, &s));
    return set_like(c, "Y", x);
}

FlStatus fl_infer_row_conv(Ctx *c) {
    FlVarDesc *x, *f;
    if (in1(c, "X", &x) || need_float_in(c, x, "X") || need_offsets(c, "XLod", false) || in1(c, "Filter", &f) ||
        need_float_in(c, f, "Filter"))
        return FL_ERROR;
    Shape xs = shape_of(x), fs = shape_of(f);
    if (xs.nd != 2) return fl_err(c->e, "%s: X must be [T, D] (a row per step), found %s", c->t, sstr(c, &xs));
    if (fs.nd != 2 || !dims_agree(fs.d[1], xs.d[1]) || fs.d[0] == 0)
        return fl_err(c->e, "%s: Filter must be [k, D] (k >= 1 weights per column of X %s), found %s", c->t,
                      sstr(c, &xs), sstr(c, &fs));
    if (f->dtype != x->dtype)
        return fl_err(c->e, "%s: X is %s but Filter is %s: they must have one dtype", c->t, dt(x->dtype), dt(f->dtype));
    return set_like(c, "Out", x);
}

FlStatus fl_infer_add_position_encoding(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x) || need_float_in(c, x, "X") || need_offsets(c, "XLod", true)) return FL_ERROR;
    bool lod = fl_ir_op_input1(c->op, "XLod") != NULL;
    Shape s = shape_of(x);
    if (s.nd != (lod ? 2 : 3))
        return fl_err(c->e, "%s: X must be %s, found %s", c->t,
                      lod ? "[T, P] (sequences of steps)" : "[B, M, P] (a batch of M steps)", sstr(c, &s));
    if (s.d[s.nd - 1] >= 0 && s.d[s.nd - 1] % 2)
        return fl_err(c->e, "%s: the encoding size (X's last dim) must be even, found %s", c->t, sstr(c, &s));
    return set_like(c, "Out", x);
}

FlStatus fl_infer_sampling_id(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x) || need_float_in(c, x, "X")) return FL_ERROR;
    Shape s = shape_of(x);
    if (s.nd != 2 || s.d[1] == 0)
        return fl_err(c->e, "%s: X must be [N, C] (a distribution over C ids per row), found %s", c->t, sstr(c, &s));
    Shape o = shape1(s.d[0]);
    return set_out(c, "Out", FL_DT_INT64, &o);
}
