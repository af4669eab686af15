/* infer_seqnlp.c: shape rules of the further sequence ops of the NLP layers, sequence_reverse,
 * row_conv, add_position_encoding, sampling_id and im2sequence (adapters in
 * runtime/core/ops_seqnlp.c; kernels in runtime/kernels/seqnlp.c). */
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

/* The number of patch positions along a side of `size` (or -1 when unknown). */
static int64_t patches(int64_t size, int64_t k, int64_t pad0, int64_t pad1, int64_t stride) {
    return size < 0 ? -1 : (size + pad0 + pad1 - k) / stride + 1;
}

FlStatus fl_infer_im2sequence(Ctx *c) {
    FlVarDesc *x, *y;
    if (in1(c, "X", &x) || need_float_in(c, x, "X") || in_opt(c, "Y", &y) || (y && need_float_in(c, y, "Y")))
        return FL_ERROR;
    Shape s = shape_of(x);
    if (s.nd != 4) return fl_err(c->e, "%s: X must be [N, C, H, W] (a batch of images), found %s", c->t, sstr(c, &s));
    int64_t k[2] = {0}, st[2] = {0}, p[4] = {0}, os[2] = {0};
    if (ints_attr(c, "kernels", 2, k) || ints_attr(c, "strides", 2, st) || ints_attr(c, "paddings", 4, p) ||
        ints_attr(c, "out_stride", 2, os))
        return FL_ERROR;
    for (int i = 0; i < 2; i++)
        if (k[i] < 1 || st[i] < 1 || os[i] < 1)
            return fl_err(c->e, "%s: kernels, strides and out_stride must be >= 1, found [%lld, %lld], [%lld, %lld] "
                                "and [%lld, %lld]", c->t, (long long)k[0], (long long)k[1], (long long)st[0],
                          (long long)st[1], (long long)os[0], (long long)os[1]);
    for (int i = 0; i < 4; i++)
        if (p[i] < 0) return fl_err(c->e, "%s: paddings must be >= 0, found %lld", c->t, (long long)p[i]);
    int64_t oh = patches(s.d[2], k[0], p[0], p[2], st[0]), ow = patches(s.d[3], k[1], p[1], p[3], st[1]);
    if ((s.d[2] >= 0 && oh < 1) || (s.d[3] >= 0 && ow < 1))
        return fl_err(c->e, "%s: a %lldx%lld kernel does not fit the padded %s images", c->t, (long long)k[0],
                      (long long)k[1], sstr(c, &s));
    if (y) {
        Shape ys = shape_of(y);
        if (ys.nd != 2 || !dims_agree(ys.d[1], 2) || !dims_agree(ys.d[0], s.d[0]))
            return fl_err(c->e, "%s: Y must be [N, 2] (each image's real height and width) for X %s, found %s", c->t,
                          sstr(c, &s), sstr(c, &ys));
    }
    int64_t rows = y || s.d[0] < 0 || oh < 0 || ow < 0 ? -1 : s.d[0] * oh * ow;
    int64_t width = s.d[1] < 0 ? -1 : s.d[1] * k[0] * k[1];
    Shape o = {.nd = 2, .d = {rows, width}}, l = shape1(s.d[0] < 0 ? -1 : s.d[0] + 1);
    return set_out(c, "Out", x->dtype, &o) || set_out(c, "OutLod", FL_DT_INT64, &l) ? FL_ERROR : FL_OK;
}
