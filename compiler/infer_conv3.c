/* infer_conv3.c: shape rules of conv3d, conv3d_transpose, pool3d and the max poolings with an
 * argmax mask (compiler/ops/conv3.def; adapters runtime/core/ops_conv3.c, kernels
 * runtime/kernels/conv3.c). */
#include "compiler/infer_impl.h"

/* Input [N, C, D, H, W] and Filter (5-D) of one float dtype, and the three window attributes. */
static FlStatus conv3_in(Ctx *c, FlVarDesc **iv, Shape *in, Shape *f, int64_t st[3], int64_t pd[3], int64_t dl[3],
                         int64_t *g) {
    FlVarDesc *fv;
    if (in1(c, "Input", iv) || in1(c, "Filter", &fv)) return FL_ERROR;
    *in = shape_of(*iv), *f = shape_of(fv);
    if (in->nd != 5 || f->nd != 5 || (*iv)->dtype != fv->dtype || !is_float((*iv)->dtype))
        return fl_err(c->e, "%s: the input must be 5-D (N, C, D, H, W) and the filter 5-D, of one float dtype, "
                      "found %s %s and %s %s", c->t, sstr(c, in), dt((*iv)->dtype), sstr(c, f), dt(fv->dtype));
    if (ints_attr(c, "strides", 3, st) || ints_attr(c, "paddings", 3, pd) || ints_attr(c, "dilations", 3, dl))
        return FL_ERROR;
    for (int i = 0; i < 3; i++)
        if (st[i] < 1 || dl[i] < 1 || pd[i] < 0 || st[i] > INT32_MAX || dl[i] > INT32_MAX || pd[i] > INT32_MAX)
            return fl_err(c->e, "%s: strides and dilations must be positive and paddings non-negative", c->t);
    *g = iattr(c, "groups");
    if (*g < 1 || *g > INT32_MAX) return fl_err(c->e, "%s: groups must be at least 1, found %lld", c->t, (long long)*g);
    return FL_OK;
}

FlStatus fl_infer_conv3d(Ctx *c) {
    FlVarDesc *iv;
    Shape in, f;
    int64_t st[3], pd[3], dl[3], g;
    if (conv3_in(c, &iv, &in, &f, st, pd, dl, &g)) return FL_ERROR;
    if (in.d[1] >= 0 && f.d[1] >= 0 && in.d[1] != smul(f.d[1], g))
        return fl_err(c->e, "%s: the input has %lld channels but the filter expects %lld (groups %lld) (Input %s, "
                      "Filter %s)", c->t, (long long)in.d[1], (long long)smul(f.d[1], g), (long long)g,
                      sstr(c, &in), sstr(c, &f));
    if (f.d[0] >= 0 && f.d[0] % g != 0)
        return fl_err(c->e, "%s: %lld filters cannot be divided into %lld groups", c->t, (long long)f.d[0],
                      (long long)g);
    Shape out = {.nd = 5, .d = {in.d[0], f.d[0]}};
    for (int i = 0; i < 3; i++) {
        bool empty = false;
        out.d[2 + i] = window_out(in.d[2 + i], f.d[2 + i], st[i], pd[i], dl[i], false, &empty);
        if (empty)
            return fl_err(c->e, "%s: the output would be empty: input %s, filter %s, stride %lld, padding %lld, "
                          "dilation %lld", c->t, sstr(c, &in), sstr(c, &f), (long long)st[i], (long long)pd[i],
                          (long long)dl[i]);
    }
    return set_out(c, "Output", iv->dtype, &out);
}

FlStatus fl_infer_conv3d_transpose(Ctx *c) {
    FlVarDesc *iv;
    Shape in, f;
    int64_t st[3], pd[3], dl[3], g;
    if (conv3_in(c, &iv, &in, &f, st, pd, dl, &g)) return FL_ERROR;
    if (!dims_agree(in.d[1], f.d[0]))
        return fl_err(c->e, "%s: the input has %lld channels but the filter's dim 0 is %lld (Input %s, Filter %s)",
                      c->t, (long long)in.d[1], (long long)f.d[0], sstr(c, &in), sstr(c, &f));
    if (in.d[1] >= 0 && in.d[1] % g != 0)
        return fl_err(c->e, "%s: %lld input channels cannot be divided into %lld groups", c->t, (long long)in.d[1],
                      (long long)g);
    size_t n;
    bool ok;
    const int64_t *os = intsattr(c, "output_size", &n, &ok);
    if (!ok) return FL_ERROR;
    if (n != 0 && n != 3) return fl_err(c->e, "%s: output_size must hold 3 values (or none), found %zu", c->t, n);
    Shape out = {.nd = 5, .d = {in.d[0], f.d[1] < 0 ? -1 : smul(f.d[1], g), -1, -1, -1}};
    for (int i = 0; i < 3; i++) {
        if (in.d[2 + i] < 0 || f.d[2 + i] < 0) {
            out.d[2 + i] = n ? os[i] : -1;
            continue;
        }
        int64_t o = sadd(sadd(smul(in.d[2 + i] - 1, st[i]), -smul(2, pd[i])), sadd(smul(dl[i], f.d[2 + i] - 1), 1));
        if (o < 1)
            return fl_err(c->e, "%s: the output would be empty: input %s, filter %s, stride %lld, padding %lld", c->t,
                          sstr(c, &in), sstr(c, &f), (long long)st[i], (long long)pd[i]);
        if (n && (os[i] < o || os[i] >= sadd(o, st[i])))
            return fl_err(c->e, "%s: output_size %lld of dim %d must be in [%lld, %lld) for input %s, filter %s, stride "
                          "%lld", c->t, (long long)os[i], 2 + i, (long long)o, (long long)sadd(o, st[i]),
                          sstr(c, &in), sstr(c, &f), (long long)st[i]);
        out.d[2 + i] = n ? os[i] : o;
    }
    return set_out(c, "Output", iv->dtype, &out);
}

/* pool3d and max_pool{2,3}d_with_index: X [N, C, <nsp dims>] -> Out (and Mask). */
static FlStatus pool_shape(Ctx *c, int nsp, bool with_mask) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv) || need_float(c, "the input", xv)) return FL_ERROR;
    Shape x = shape_of(xv), out = x;
    if (x.nd != 2 + nsp)
        return fl_err(c->e, "%s: the input must be %d-D (N, C, %s), found %s", c->t, 2 + nsp,
                      nsp == 3 ? "D, H, W" : "H, W", sstr(c, &x));
    if (!with_mask) {
        const char *type = sattr(c, "pooling_type");
        if (strcmp(type, "max") != 0 && strcmp(type, "avg") != 0)
            return fl_err(c->e, "%s: pooling_type must be 'max' or 'avg', found '%s'", c->t, type);
    }
    int64_t k[3], st[3], pd[3];
    if (ints_attr(c, "ksize", nsp, k) || ints_attr(c, "strides", nsp, st) || ints_attr(c, "paddings", nsp, pd))
        return FL_ERROR;
    bool global = iattr(c, "global_pooling") != 0, adaptive = iattr(c, "adaptive") != 0;
    bool ceil = !with_mask && iattr(c, "ceil_mode") != 0;
    for (int i = 0; i < nsp && !global; i++) {
        int64_t *o = &out.d[2 + i];
        if (k[i] < 1 || k[i] > INT32_MAX)
            return fl_err(c->e, "%s: ksize must be positive, found %lld", c->t, (long long)k[i]);
        if (adaptive) {
            *o = k[i];
            continue;
        }
        if (st[i] < 1 || pd[i] < 0 || pd[i] >= k[i] || st[i] > INT32_MAX)
            return fl_err(c->e, "%s: strides must be positive and paddings non-negative and below ksize", c->t);
        bool empty = false;
        *o = window_out(x.d[2 + i], k[i], st[i], pd[i], 1, ceil, &empty);
        if (empty)
            return fl_err(c->e, "%s: the output would be empty: input %s, ksize %lld, stride %lld, padding %lld", c->t,
                          sstr(c, &x), (long long)k[i], (long long)st[i], (long long)pd[i]);
    }
    for (int i = 0; i < nsp && global; i++) out.d[2 + i] = 1;
    if (set_out(c, "Out", xv->dtype, &out)) return FL_ERROR;
    return with_mask ? set_out(c, "Mask", FL_DT_INT32, &out) : FL_OK;
}

FlStatus fl_infer_pool3d(Ctx *c) { return pool_shape(c, 3, false); }
FlStatus fl_infer_max_pool_with_index(Ctx *c, int nsp) { return pool_shape(c, nsp, true); }
