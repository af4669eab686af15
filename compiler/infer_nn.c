/* infer_nn.c: shape rules of the matrix products, the embedding lookup, softmax and
 * cross_entropy, mean and the reductions, convolution, pooling, batch norm and dropout (adapters
 * in runtime/core/ops_nn.c, reduce_max / reduce_min / reduce_prod's in ops_layers.c; kernels in
 * runtime/kernels/linalg.c, shape.c (lookup_table), reduce.c, reduce_minmax.c, conv.c, dnnl.c,
 * norm.c). */
#include "compiler/infer_impl.h"

/* ---- linear algebra ---- */

FlStatus fl_infer_mul(Ctx *c) {
    FlVarDesc *xv, *yv;
    if (in1(c, "X", &xv) || in1(c, "Y", &yv)) return FL_ERROR;
    Shape x = shape_of(xv), y = shape_of(yv);
    int64_t xn = iattr(c, "x_num_col_dims"), yn = iattr(c, "y_num_col_dims");
    if (xn < 1 || xn >= x.nd)
        return fl_err(c->e, "%s: x_num_col_dims is %lld but the input X %s needs it in 1..%d",
                      c->t, (long long)xn, sstr(c, &x), x.nd - 1);
    if (yn < 1 || yn >= y.nd)
        return fl_err(c->e, "%s: y_num_col_dims is %lld but the weight Y %s needs it in 1..%d",
                      c->t, (long long)yn, sstr(c, &y), y.nd - 1);
    if (xv->dtype != yv->dtype)
        return fl_err(c->e, "%s: the input is %s but the weight is %s", c->t, dt(xv->dtype),
                      dt(yv->dtype));
    int64_t cols = prod(&x, (int)xn, x.nd), rows = prod(&y, 0, (int)yn);
    if (!dims_agree(cols, rows))
        return fl_err(c->e, "%s: the input has %lld columns but the weight has %lld rows (X %s, Y %s)",
                      c->t, (long long)cols, (long long)rows, sstr(c, &x), sstr(c, &y));
    Shape out = {0};
    for (int i = 0; i < xn; i++) out.d[out.nd++] = x.d[i];
    for (int i = (int)yn; i < y.nd; i++) {
        if (out.nd == FL_IR_MAX_DIMS) return fl_err(c->e, "%s: the result has too many dims", c->t);
        out.d[out.nd++] = y.d[i];
    }
    return set_out(c, "Out", xv->dtype, &out);
}

FlStatus fl_infer_lookup_table(Ctx *c) {
    FlVarDesc *wv, *iv;
    if (in1(c, "W", &wv) || in1(c, "Ids", &iv)) return FL_ERROR;
    Shape w = shape_of(wv), ids = shape_of(iv);
    if (w.nd != 2)
        return fl_err(c->e, "%s: the table must be 2-D (rows, width), found %s", c->t, sstr(c, &w));
    if (iv->dtype != FL_DT_INT64)
        return fl_err(c->e, "%s: the ids must be int64, found %s", c->t, dt(iv->dtype));
    if (ids.nd == 0) return fl_err(c->e, "%s: the ids have no dims", c->t);
    /* [N, 1] -> [N, width]; [N] -> [N, width] */
    Shape out = ids;
    if (ids.d[ids.nd - 1] == 1 && ids.nd > 1) out.d[out.nd - 1] = w.d[1];
    else if (out.nd < FL_IR_MAX_DIMS) out.d[out.nd++] = w.d[1];
    else return fl_err(c->e, "%s: the result has too many dims", c->t);
    int64_t pad = iattr(c, "padding_idx");
    if (pad < -1 || (w.d[0] >= 0 && pad >= w.d[0]))
        return fl_err(c->e, "%s: padding_idx %lld is not a row of the table %s", c->t,
                      (long long)pad, sstr(c, &w));
    return set_out(c, "Out", wv->dtype, &out);
}

FlStatus fl_infer_matmul(Ctx *c) {
    FlVarDesc *xv, *yv;
    if (in1(c, "X", &xv) || in1(c, "Y", &yv)) return FL_ERROR;
    Shape x = shape_of(xv), y = shape_of(yv);
    if (x.nd == 0 || y.nd == 0)
        return fl_err(c->e, "%s: operands must have at least one dim (X %s, Y %s)", c->t,
                      sstr(c, &x), sstr(c, &y));
    if (xv->dtype != yv->dtype)
        return fl_err(c->e, "%s: dtype mismatch: %s and %s", c->t, dt(xv->dtype), dt(yv->dtype));
    bool tx = iattr(c, "transpose_X") != 0, ty = iattr(c, "transpose_Y") != 0;
    int64_t m = 1, kx, ky, n = 1;
    if (x.nd == 1) kx = x.d[0];
    else {
        m = x.d[x.nd - 2], kx = x.d[x.nd - 1];
        if (tx) m = x.d[x.nd - 1], kx = x.d[x.nd - 2];
    }
    if (y.nd == 1) ky = y.d[0];
    else {
        ky = y.d[y.nd - 2], n = y.d[y.nd - 1];
        if (ty) ky = y.d[y.nd - 1], n = y.d[y.nd - 2];
    }
    if (!dims_agree(kx, ky))
        return fl_err(c->e, "%s: the left operand has %lld columns but the right one has %lld rows "
                      "(X %s%s, Y %s%s)", c->t, (long long)kx, (long long)ky, sstr(c, &x),
                      tx ? " transposed" : "", sstr(c, &y), ty ? " transposed" : "");
    Shape bx = {.nd = x.nd > 2 ? x.nd - 2 : 0}, by = {.nd = y.nd > 2 ? y.nd - 2 : 0}, out;
    memcpy(bx.d, x.d, sizeof(int64_t) * (size_t)bx.nd);
    memcpy(by.d, y.d, sizeof(int64_t) * (size_t)by.nd);
    if (!broadcast(&bx, &by, &out))
        return fl_err(c->e, "%s: batch dims of X %s and Y %s cannot be broadcast", c->t,
                      sstr(c, &x), sstr(c, &y));
    if (x.nd >= 2) out.d[out.nd++] = m;
    if (y.nd >= 2) out.d[out.nd++] = n;
    if (out.nd == 0) out = shape1(1);
    return set_out(c, "Out", xv->dtype, &out);
}

/* ---- reductions and losses ---- */

FlStatus fl_infer_softmax(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x)) return FL_ERROR;
    Shape s = shape_of(x);
    int axis = 0;
    if (s.nd > 0 && norm_axis(c, iattr(c, "axis"), s.nd, &s, &axis)) return FL_ERROR;
    return set_out(c, "Out", x->dtype, &s);
}

FlStatus fl_infer_cross_entropy(Ctx *c) {
    FlVarDesc *xv, *lv;
    if (in1(c, "X", &xv) || in1(c, "Label", &lv)) return FL_ERROR;
    Shape x = shape_of(xv), l = shape_of(lv);
    if (x.nd < 1) return fl_err(c->e, "%s: the input must have at least one dim", c->t);
    if (!is_float(xv->dtype))
        return fl_err(c->e, "%s: the input must be float32 or float64, found %s", c->t,
                      dt(xv->dtype));
    bool soft = iattr(c, "soft_label") != 0;
    if (soft) {
        if (lv->dtype != xv->dtype)
            return fl_err(c->e, "%s: a soft label must be %s like the input, found %s", c->t,
                          dt(xv->dtype), dt(lv->dtype));
        if (!shapes_agree(&x, &l))
            return fl_err(c->e, "%s: a soft label must have the input's shape (X %s, Label %s)",
                          c->t, sstr(c, &x), sstr(c, &l));
    } else {
        if (lv->dtype != FL_DT_INT64)
            return fl_err(c->e, "%s: the label must be int64, found %s", c->t, dt(lv->dtype));
        /* [N, 1] (or [N]) against X [N, D] */
        bool shape_ok = (l.nd == x.nd && l.d[l.nd - 1] == 1) || l.nd == x.nd - 1 ||
                        (l.nd == x.nd && l.d[l.nd - 1] < 0);
        if (!shape_ok)
            return fl_err(c->e, "%s: the label must have shape [N, 1] for the input X %s, found %s",
                          c->t, sstr(c, &x), sstr(c, &l));
        for (int i = 0; i < x.nd - 1; i++)
            if (!dims_agree(x.d[i], l.d[i]))
                return fl_err(c->e, "%s: the input has %lld rows but the label has %lld (X %s, Label %s)",
                              c->t, (long long)x.d[i], (long long)l.d[i], sstr(c, &x), sstr(c, &l));
    }
    Shape y = x;
    for (int i = 0; i < x.nd - 1; i++) y.d[i] = merge(x.d[i], l.d[i]);
    y.d[y.nd - 1] = 1;
    return set_out(c, "Y", xv->dtype, &y);
}

FlStatus fl_infer_reduce(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    size_t n;
    bool ok;
    const int64_t *dims = intsattr(c, "dim", &n, &ok);
    if (!ok) return FL_ERROR;
    bool keep = iattr(c, "keep_dim") != 0, all = iattr(c, "reduce_all") != 0;
    bool reduced[FL_IR_MAX_DIMS] = {0};
    if (all || x.nd == 0) {
        for (int i = 0; i < x.nd; i++) reduced[i] = true;
    } else {
        for (size_t k = 0; k < n; k++) {
            int a = 0;
            if (norm_axis(c, dims[k], x.nd, &x, &a)) return FL_ERROR;
            reduced[a] = true;
        }
    }
    Shape out = {0};
    for (int i = 0; i < x.nd; i++) {
        if (!reduced[i]) out.d[out.nd++] = x.d[i];
        else if (keep) out.d[out.nd++] = 1;
    }
    if (out.nd == 0) out = shape1(1);
    return set_out(c, "Out", xv->dtype, &out);
}

/* ---- convolution and pooling ---- */



/* conv2d's output shape from Input iv and Filter fv and the attributes strides, paddings,
 * dilations and groups (conv2d and conv2d_int8). */
FlStatus fl_infer_conv2d_shape(Ctx *c, const FlVarDesc *iv, const FlVarDesc *fv, Shape *outp) {
    Shape in = shape_of(iv), f = shape_of(fv);
    if (in.nd != 4)
        return fl_err(c->e, "%s: the input must be 4-D (N, C, H, W), found %s", c->t, sstr(c, &in));
    if (f.nd != 4)
        return fl_err(c->e, "%s: the filter must be 4-D (M, C/groups, kh, kw), found %s", c->t,
                      sstr(c, &f));
    int64_t st[2], pd[2], dl[2], g = iattr(c, "groups");
    if (pair_attr(c, "strides", st) || pair_attr(c, "paddings", pd) ||
        pair_attr(c, "dilations", dl))
        return FL_ERROR;
    for (int i = 0; i < 2; i++)
        if (st[i] < 1 || dl[i] < 1 || pd[i] < 0)
            return fl_err(c->e, "%s: strides and dilations must be positive and paddings "
                          "non-negative", c->t);
    if (g < 1) return fl_err(c->e, "%s: groups must be at least 1, found %lld", c->t, (long long)g);
    if (in.d[1] >= 0 && f.d[1] >= 0 && in.d[1] != smul(f.d[1], g))
        return fl_err(c->e, "%s: the input has %lld channels but the filter expects %lld (groups %lld) "
                      "(Input %s, Filter %s)", c->t, (long long)in.d[1], (long long)smul(f.d[1], g),
                      (long long)g, sstr(c, &in), sstr(c, &f));
    if (f.d[0] >= 0 && f.d[0] % g != 0)
        return fl_err(c->e, "%s: %lld filters cannot be divided into %lld groups", c->t,
                      (long long)f.d[0], (long long)g);
    Shape out = {.nd = 4, .d = {in.d[0], f.d[0]}};
    for (int i = 0; i < 2; i++) {
        bool empty = false;
        out.d[2 + i] = window_out(in.d[2 + i], f.d[2 + i], st[i], pd[i], dl[i], false, &empty);
        if (empty)
            return fl_err(c->e, "%s: the output would be empty: input %s, filter %s, stride %lld, "
                          "padding %lld, dilation %lld", c->t, sstr(c, &in), sstr(c, &f),
                          (long long)st[i], (long long)pd[i], (long long)dl[i]);
    }
    *outp = out;
    return FL_OK;
}

FlStatus fl_infer_conv2d(Ctx *c) {
    FlVarDesc *iv, *fv;
    if (in1(c, "Input", &iv) || in1(c, "Filter", &fv)) return FL_ERROR;
    if (iv->dtype != fv->dtype)
        return fl_err(c->e, "%s: the input is %s but the filter is %s", c->t, dt(iv->dtype),
                      dt(fv->dtype));
    Shape out;
    if (fl_infer_conv2d_shape(c, iv, fv, &out)) return FL_ERROR;
    return set_out(c, "Output", iv->dtype, &out);
}

FlStatus fl_infer_pool2d(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    if (x.nd != 4)
        return fl_err(c->e, "%s: the input must be 4-D (N, C, H, W), found %s", c->t, sstr(c, &x));
    const char *type = sattr(c, "pooling_type");
    if (strcmp(type, "max") != 0 && strcmp(type, "avg") != 0)
        return fl_err(c->e, "%s: pooling_type must be 'max' or 'avg', found '%s'", c->t, type);
    /* of the storage dtypes, int8 and uint8 pool (int8 inference), with fixed windows only */
    if (xv->dtype == FL_DT_FLOAT16 || (fl_dtype_is_storage(xv->dtype) && iattr(c, "adaptive")))
        return fl_err(c->e, "%s: X is %s, which pool2d takes only as int8 or uint8 and not adaptive: cast it to "
                      "float32 first (fluid.layers.cast(x, 'float32'))", c->t, dt(xv->dtype));
    Shape out = x;
    if (iattr(c, "global_pooling")) {
        out.d[2] = out.d[3] = 1;
        return set_out(c, "Out", xv->dtype, &out);
    }
    int64_t k[2], st[2], pd[2];
    if (pair_attr(c, "ksize", k) || pair_attr(c, "strides", st) || pair_attr(c, "paddings", pd))
        return FL_ERROR;
    for (int i = 0; i < 2; i++) {
        if (k[i] < 1 || st[i] < 1 || pd[i] < 0)
            return fl_err(c->e, "%s: ksize and strides must be positive and paddings non-negative",
                          c->t);
        if (iattr(c, "adaptive")) { /* ksize is the output's size */
            out.d[2 + i] = k[i];
            continue;
        }
        bool empty = false;
        out.d[2 + i] = window_out(x.d[2 + i], k[i], st[i], pd[i], 1, iattr(c, "ceil_mode") != 0, &empty);
        if (empty)
            return fl_err(c->e, "%s: the output would be empty: input %s, ksize %lld, stride %lld, "
                          "padding %lld", c->t, sstr(c, &x), (long long)k[i], (long long)st[i],
                          (long long)pd[i]);
    }
    return set_out(c, "Out", xv->dtype, &out);
}

FlStatus fl_infer_batch_norm(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    if (x.nd < 2 || x.nd > 5)
        return fl_err(c->e, "%s: the input must have 2 to 5 dims (N, C, ...), found %s", c->t,
                      sstr(c, &x));
    int64_t ch = x.d[1];
    static const char *const params[] = {"Scale", "Bias", "Mean", "Variance"};
    for (size_t i = 0; i < FL_ARRAY_LEN(params); i++) {
        FlVarDesc *v;
        if (in1(c, params[i], &v)) return FL_ERROR;
        Shape s = shape_of(v);
        if (s.nd != 1 || !dims_agree(s.d[0], ch))
            return fl_err(c->e, "%s: the input has %lld channels but %s has shape %s", c->t,
                          (long long)ch, params[i], sstr(c, &s));
    }
    Shape cs = shape1(ch);
    if (set_like(c, "Y", xv) || set_out(c, "MeanOut", xv->dtype, &cs) ||
        set_out(c, "VarianceOut", xv->dtype, &cs) || set_out(c, "SavedMean", xv->dtype, &cs) ||
        set_out(c, "SavedVariance", xv->dtype, &cs))
        return FL_ERROR;
    return FL_OK;
}

FlStatus fl_infer_mean(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x)) return FL_ERROR;
    Shape one = shape1(1);
    return set_out(c, "Out", x->dtype, &one);
}

FlStatus fl_infer_dropout(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x)) return FL_ERROR;
    return set_like(c, "Out", x) || set_like(c, "Mask", x) ? FL_ERROR : FL_OK;
}
