/* infer_nn2.c: shape rules of layer_norm, softmax_with_cross_entropy, cos_sim, lrn, the
 * interpolations, conv2d_transpose and auc (adapters in runtime/core/ops_nn2.c; kernels in
 * runtime/kernels/nn2.c). */
#include "compiler/infer_impl.h"



FlStatus fl_infer_layer_norm(Ctx *c) {
    FlVarDesc *xv, *sv, *bv;
    if (in1(c, "X", &xv) || in_opt(c, "Scale", &sv) || in_opt(c, "Bias", &bv)) return FL_ERROR;
    if (need_float(c, "the input", xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    int64_t begin = iattr(c, "begin_norm_axis");
    if (begin < 1 || begin >= x.nd)
        return fl_err(c->e, "%s: begin_norm_axis %lld must be in [1, %d) for the input %s", c->t,
                      (long long)begin, x.nd, sstr(c, &x));
    int64_t rows = prod(&x, 0, (int)begin), width = prod(&x, (int)begin, x.nd);
    const FlVarDesc *ps[2] = {sv, bv};
    for (int i = 0; i < 2; i++) {
        if (!ps[i]) continue;
        Shape s = shape_of(ps[i]);
        if (ps[i]->dtype != xv->dtype || !dims_agree(prod(&s, 0, s.nd), width))
            return fl_err(c->e, "%s: %s %s %s must be %s with %lld elements (the input %s from dim %lld)",
                          c->t, i ? "Bias" : "Scale", sstr(c, &s), dt(ps[i]->dtype), dt(xv->dtype),
                          (long long)width, sstr(c, &x), (long long)begin);
    }
    Shape r = shape1(rows);
    return set_like(c, "Y", xv) || set_out(c, "Mean", xv->dtype, &r) ||
                   set_out(c, "Variance", xv->dtype, &r)
               ? FL_ERROR
               : FL_OK;
}

FlStatus fl_infer_softmax_xent(Ctx *c) {
    FlVarDesc *xv, *lv;
    if (in1(c, "Logits", &xv) || in1(c, "Label", &lv)) return FL_ERROR;
    if (need_float(c, "the logits", xv)) return FL_ERROR;
    Shape x = shape_of(xv), l = shape_of(lv);
    if (x.nd < 1) return fl_err(c->e, "%s: the logits must have at least one dim", c->t);
    if (iattr(c, "soft_label")) {
        if (lv->dtype != xv->dtype || !shapes_agree(&x, &l))
            return fl_err(c->e, "%s: a soft label must be %s of the logits' shape %s, found %s %s", c->t,
                          dt(xv->dtype), sstr(c, &x), dt(lv->dtype), sstr(c, &l));
    } else {
        if (lv->dtype != FL_DT_INT64)
            return fl_err(c->e, "%s: the label must be int64, found %s", c->t, dt(lv->dtype));
        bool ok = l.nd == x.nd && (l.d[l.nd - 1] == 1 || l.d[l.nd - 1] < 0);
        for (int i = 0; ok && i < x.nd - 1; i++) ok = dims_agree(x.d[i], l.d[i]);
        if (!ok)
            return fl_err(c->e, "%s: the label must have shape [N, 1] for the logits %s, found %s", c->t,
                          sstr(c, &x), sstr(c, &l));
    }
    Shape loss = x;
    for (int i = 0; i < x.nd - 1; i++) loss.d[i] = merge(x.d[i], l.d[i]);
    loss.d[loss.nd - 1] = 1;
    return set_like(c, "Softmax", xv) || set_out(c, "Loss", xv->dtype, &loss) ? FL_ERROR : FL_OK;
}

FlStatus fl_infer_cos_sim(Ctx *c) {
    FlVarDesc *xv, *yv;
    if (in1(c, "X", &xv) || in1(c, "Y", &yv)) return FL_ERROR;
    if (need_float(c, "X", xv)) return FL_ERROR;
    Shape x = shape_of(xv), y = shape_of(yv);
    bool ok = xv->dtype == yv->dtype && x.nd >= 2 && y.nd == x.nd &&
              dims_agree(prod(&x, 1, x.nd), prod(&y, 1, y.nd)) && (y.d[0] == 1 || dims_agree(x.d[0], y.d[0]));
    if (!ok)
        return fl_err(c->e, "%s: Y must have the shape and dtype of X or one row (X %s %s, Y %s %s)", c->t,
                      sstr(c, &x), dt(xv->dtype), sstr(c, &y), dt(yv->dtype));
    Shape o = {.nd = 2, .d = {y.d[0] == 1 ? x.d[0] : merge(x.d[0], y.d[0]), 1}};
    Shape yn = {.nd = 2, .d = {y.d[0] == 1 ? 1 : o.d[0], 1}};
    return set_out(c, "Out", xv->dtype, &o) || set_out(c, "XNorm", xv->dtype, &o) ||
                   set_out(c, "YNorm", xv->dtype, &yn)
               ? FL_ERROR
               : FL_OK;
}

static FlStatus infer_image_op(Ctx *c, FlVarDesc **xv, Shape *x) {
    if (in1(c, "X", xv) || need_float(c, "the input", *xv)) return FL_ERROR;
    *x = shape_of(*xv);
    if (x->nd != 4)
        return fl_err(c->e, "%s: the input must be 4-D (N, C, H, W), found %s", c->t, sstr(c, x));
    return FL_OK;
}

FlStatus fl_infer_lrn(Ctx *c) {
    FlVarDesc *xv;
    Shape x;
    if (infer_image_op(c, &xv, &x)) return FL_ERROR;
    if (iattr(c, "n") < 1) return fl_err(c->e, "%s: n must be >= 1, found %lld", c->t, (long long)iattr(c, "n"));
    return set_like(c, "Out", xv) || set_like(c, "MidOut", xv) ? FL_ERROR : FL_OK;
}

FlStatus fl_infer_interp(Ctx *c) {
    FlVarDesc *xv;
    Shape x;
    if (infer_image_op(c, &xv, &x)) return FL_ERROR;
    int64_t h = iattr(c, "out_h"), w = iattr(c, "out_w");
    if (h < 1 || w < 1 || h > INT32_MAX || w > INT32_MAX)
        return fl_err(c->e, "%s: out_h and out_w must be positive, found %lld and %lld", c->t, (long long)h,
                      (long long)w);
    if (fl_ir_op_attr(c->op, "align_mode") && iattr(c, "align_mode") != 0 && iattr(c, "align_mode") != 1)
        return fl_err(c->e, "%s: align_mode must be 0 or 1, found %lld", c->t, (long long)iattr(c, "align_mode"));
    FlVarDesc *sv = NULL;
    if (in_opt(c, "OutSize", &sv)) return FL_ERROR;
    if (sv) {
        Shape s = shape_of(sv);
        if ((sv->dtype != FL_DT_INT32 && sv->dtype != FL_DT_INT64) || s.nd != 1 || (s.d[0] >= 0 && s.d[0] != 2))
            return fl_err(c->e, "%s: OutSize must be the int32 [2] size [h, w], found %s %s", c->t, dt(sv->dtype),
                          sstr(c, &s));
    }
    /* with OutSize the run's size may differ: the shape when compiling is out_h, out_w (Fluid's) */
    x.d[2] = h, x.d[3] = w;
    return set_out(c, "Out", xv->dtype, &x);
}

FlStatus fl_infer_conv2d_transpose(Ctx *c) {
    FlVarDesc *iv, *fv;
    if (in1(c, "Input", &iv) || in1(c, "Filter", &fv)) return FL_ERROR;
    Shape in = shape_of(iv), f = shape_of(fv);
    if (in.nd != 4 || f.nd != 4 || iv->dtype != fv->dtype || need_float(c, "the input", iv))
        return fl_err(c->e, "%s: the input must be 4-D (N, C, H, W) and the filter 4-D (C, M/groups, kh, kw) "
                      "of one float dtype, found %s %s and %s %s", c->t, sstr(c, &in), dt(iv->dtype),
                      sstr(c, &f), dt(fv->dtype));
    int64_t st[2], pd[2], dl[2], g = iattr(c, "groups");
    if (pair_attr(c, "strides", st) || pair_attr(c, "paddings", pd) || pair_attr(c, "dilations", dl))
        return FL_ERROR;
    if (g < 1) return fl_err(c->e, "%s: groups must be at least 1, found %lld", c->t, (long long)g);
    if (!dims_agree(in.d[1], f.d[0]))
        return fl_err(c->e, "%s: the input has %lld channels but the filter's dim 0 is %lld (Input %s, Filter %s)",
                      c->t, (long long)in.d[1], (long long)f.d[0], sstr(c, &in), sstr(c, &f));
    if (in.d[1] >= 0 && in.d[1] % g != 0)
        return fl_err(c->e, "%s: %lld input channels cannot be divided into %lld groups", c->t,
                      (long long)in.d[1], (long long)g);
    Shape out = {.nd = 4, .d = {in.d[0], f.d[1] < 0 ? -1 : smul(f.d[1], g), -1, -1}};
    for (int i = 0; i < 2; i++) {
        if (st[i] < 1 || dl[i] < 1 || pd[i] < 0)
            return fl_err(c->e, "%s: strides and dilations must be positive and paddings non-negative", c->t);
        if (in.d[2 + i] < 0 || f.d[2 + i] < 0) continue;
        int64_t o = sadd(sadd(smul(in.d[2 + i] - 1, st[i]), -smul(2, pd[i])), sadd(smul(dl[i], f.d[2 + i] - 1), 1));
        if (o < 1)
            return fl_err(c->e, "%s: the output would be empty: input %s, filter %s, stride %lld, padding %lld",
                          c->t, sstr(c, &in), sstr(c, &f), (long long)st[i], (long long)pd[i]);
        out.d[2 + i] = o;
    }
    return set_out(c, "Output", iv->dtype, &out);
}

FlStatus fl_infer_auc(Ctx *c) {
    FlVarDesc *pv, *lv, *sp, *sn;
    if (in1(c, "Predict", &pv) || in1(c, "Label", &lv) || in1(c, "StatPos", &sp) || in1(c, "StatNeg", &sn))
        return FL_ERROR;
    if (need_float(c, "the prediction", pv)) return FL_ERROR;
    Shape p = shape_of(pv), l = shape_of(lv);
    if (p.nd != 2 || l.nd < 1 || !dims_agree(p.d[0], l.d[0]) || (lv->dtype != FL_DT_INT64 && lv->dtype != FL_DT_INT32))
        return fl_err(c->e, "%s: the prediction must be [N, classes] and the label int [N, 1], found %s and %s %s", c->t,
                      sstr(c, &p), sstr(c, &l), dt(lv->dtype));
    if (strcmp(sattr(c, "curve"), "ROC") != 0 && strcmp(sattr(c, "curve"), "PR") != 0)
        return fl_err(c->e, "%s: curve must be 'ROC' or 'PR', found '%s'", c->t, sattr(c, "curve"));
    int64_t nt = iattr(c, "num_thresholds"), steps = iattr(c, "slide_steps");
    if (nt < 1 || nt > (1 << 24) || steps < 0)
        return fl_err(c->e, "%s: num_thresholds must be in [1, 2^24] and slide_steps >= 0, found %lld and %lld", c->t,
                      (long long)nt, (long long)steps);
    const FlVarDesc *st[2] = {sp, sn};
    for (int i = 0; i < 2; i++) {
        Shape s = shape_of(st[i]);
        if (st[i]->dtype != FL_DT_INT64 || s.nd != 2 || s.d[0] != (steps ? steps : 1) || s.d[1] != nt + 1)
            return fl_err(c->e, "%s: %s must be int64 [%lld, %lld], found %s %s", c->t, i ? "StatNeg" : "StatPos",
                          (long long)(steps ? steps : 1), (long long)(nt + 1), dt(st[i]->dtype), sstr(c, &s));
    }
    Shape one = shape1(1);
    return set_out(c, "AUC", FL_DT_FLOAT64, &one) || set_like(c, "StatPosOut", sp) || set_like(c, "StatNegOut", sn)
               ? FL_ERROR
               : FL_OK;
}
