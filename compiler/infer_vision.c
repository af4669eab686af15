/* infer_vision.c: shape rules of the image ops that rearrange, pad and normalise
 * (compiler/ops/vision.def; adapters runtime/core/ops_vision.c, kernels runtime/kernels/vision.c).
 * Unknown dims (-1) pass through; the checks that need a dim run when it is known. */
#include "compiler/infer_impl.h"

/* X must be a float [N, C, H, W]. */
static FlStatus image4(Ctx *c, const char *slot, FlVarDesc **xv, Shape *x) {
    if (in1(c, slot, xv) || need_float(c, "the input", *xv)) return FL_ERROR;
    *x = shape_of(*xv);
    if (x->nd != 4) return fl_err(c->e, "%s: the input must be 4-D (N, C, H, W), found %s", c->t, sstr(c, x));
    return FL_OK;
}

/* An int attribute that must be >= lo. */
static FlStatus int_at_least(Ctx *c, const char *name, int64_t lo, int64_t *v) {
    *v = iattr(c, name);
    if (*v < lo || *v > INT32_MAX)
        return fl_err(c->e, "%s: %s must be an int >= %lld, found %lld", c->t, name, (long long)lo, (long long)*v);
    return FL_OK;
}

/* dim d (when known) must divide by k. */
static FlStatus divides(Ctx *c, const Shape *x, int d, int64_t k, const char *what) {
    if (x->d[d] >= 0 && x->d[d] % k != 0)
        return fl_err(c->e, "%s: dim %d of the input %s (%lld) must divide by %s (%lld)", c->t, d, sstr(c, x),
                      (long long)x->d[d], what, (long long)k);
    return FL_OK;
}

static int64_t dmul(int64_t a, int64_t b) { return a < 0 ? -1 : smul(a, b); }
static int64_t ddiv(int64_t a, int64_t b) { return a < 0 ? -1 : a / b; }

/* The input of the rearranging ops: [N, C, H, W], any dtype. */
static FlStatus input4(Ctx *c, FlVarDesc **xv, Shape *x) {
    if (in1(c, "X", xv)) return FL_ERROR;
    *x = shape_of(*xv);
    if (x->nd != 4) return fl_err(c->e, "%s: the input must be 4-D (N, C, H, W), found %s", c->t, sstr(c, x));
    return FL_OK;
}

FlStatus fl_infer_pixel_shuffle(Ctx *c) {
    FlVarDesc *xv;
    Shape x;
    int64_t r;
    if (input4(c, &xv, &x) || int_at_least(c, "upscale_factor", 1, &r) ||
        divides(c, &x, 1, smul(r, r), "upscale_factor^2"))
        return FL_ERROR;
    Shape o = {.nd = 4, .d = {x.d[0], ddiv(x.d[1], r * r), dmul(x.d[2], r), dmul(x.d[3], r)}};
    return set_out(c, "Out", xv->dtype, &o);
}

FlStatus fl_infer_shuffle_channel(Ctx *c) {
    FlVarDesc *xv;
    Shape x;
    int64_t g;
    if (input4(c, &xv, &x) || int_at_least(c, "group", 1, &g) || divides(c, &x, 1, g, "group")) return FL_ERROR;
    return set_like(c, "Out", xv);
}

FlStatus fl_infer_space_to_depth(Ctx *c) {
    FlVarDesc *xv;
    Shape x;
    int64_t b;
    if (input4(c, &xv, &x) || int_at_least(c, "blocksize", 2, &b) || divides(c, &x, 1, smul(b, b), "blocksize^2") ||
        divides(c, &x, 2, b, "blocksize") || divides(c, &x, 3, b, "blocksize"))
        return FL_ERROR;
    Shape o = {.nd = 4, .d = {x.d[0], dmul(x.d[1], b * b), ddiv(x.d[2], b), ddiv(x.d[3], b)}};
    return set_out(c, "Out", xv->dtype, &o);
}

FlStatus fl_infer_temporal_shift(Ctx *c) {
    FlVarDesc *xv;
    Shape x;
    int64_t t;
    if (input4(c, &xv, &x) || need_float(c, "the input", xv) || int_at_least(c, "seg_num", 1, &t) ||
        divides(c, &x, 0, t, "seg_num"))
        return FL_ERROR;
    double ratio = fattr(c, "shift_ratio");
    if (!(ratio >= 0 && ratio <= 0.5)) return fl_err(c->e, "%s: shift_ratio must be in [0, 0.5], found %g", c->t, ratio);
    return set_like(c, "Out", xv);
}

FlStatus fl_infer_maxout(Ctx *c) {
    FlVarDesc *xv;
    Shape x;
    int64_t g;
    if (input4(c, &xv, &x) || need_float(c, "the input", xv) || int_at_least(c, "groups", 1, &g) ||
        divides(c, &x, 1, g, "groups"))
        return FL_ERROR;
    x.d[1] = ddiv(x.d[1], g);
    return set_out(c, "Out", xv->dtype, &x);
}

/* A channel vector [C] of X's dtype (Scale, Bias). */
static FlStatus channel_vec(Ctx *c, const FlVarDesc *xv, const char *slot, const FlVarDesc *v, int64_t ch) {
    Shape s = shape_of(v);
    if (v->dtype != xv->dtype || s.nd != 1 || !dims_agree(s.d[0], ch))
        return fl_err(c->e, "%s: %s must be %s [%lld] (the input's channels), found %s %s", c->t, slot,
                      dt(xv->dtype), (long long)ch, dt(v->dtype), sstr(c, &s));
    return FL_OK;
}

static FlStatus layout(Ctx *c, const char *attr, bool *nhwc) {
    const char *l = sattr(c, attr);
    if (strcmp(l, "NCHW") != 0 && strcmp(l, "NHWC") != 0)
        return fl_err(c->e, "%s: %s must be 'NCHW' or 'NHWC', found '%s'", c->t, attr, l);
    *nhwc = strcmp(l, "NHWC") == 0;
    return FL_OK;
}

FlStatus fl_infer_affine_channel(Ctx *c) {
    FlVarDesc *xv, *sv, *bv;
    bool nhwc;
    if (in1(c, "X", &xv) || in1(c, "Scale", &sv) || in1(c, "Bias", &bv) || need_float(c, "the input", xv) ||
        layout(c, "data_layout", &nhwc))
        return FL_ERROR;
    Shape x = shape_of(xv);
    if (x.nd < 2) return fl_err(c->e, "%s: the input must have at least 2 dims, found %s", c->t, sstr(c, &x));
    int64_t ch = x.d[nhwc ? x.nd - 1 : 1];
    if (channel_vec(c, xv, "Scale", sv, ch) || channel_vec(c, xv, "Bias", bv, ch)) return FL_ERROR;
    return set_like(c, "Out", xv);
}

FlStatus fl_infer_pad2d(Ctx *c) {
    FlVarDesc *xv, *pv;
    Shape x;
    bool nhwc;
    if (image4(c, "X", &xv, &x) || in_opt(c, "Paddings", &pv) || layout(c, "data_format", &nhwc)) return FL_ERROR;
    const char *mode = sattr(c, "mode");
    if (strcmp(mode, "constant") != 0 && strcmp(mode, "reflect") != 0 && strcmp(mode, "edge") != 0)
        return fl_err(c->e, "%s: mode must be 'constant', 'reflect' or 'edge', found '%s'", c->t, mode);
    int hd = nhwc ? 1 : 2;
    Shape o = x;
    if (pv) {
        Shape ps = shape_of(pv);
        if (pv->dtype != FL_DT_INT32 || ps.nd != 1 || !dims_agree(ps.d[0], 4))
            return fl_err(c->e, "%s: Paddings must be int32 [4], found %s %s", c->t, dt(pv->dtype), sstr(c, &ps));
        o.d[hd] = o.d[hd + 1] = -1; /* known at run time */
        return set_out(c, "Out", xv->dtype, &o);
    }
    size_t n;
    bool ok;
    const int64_t *p = intsattr(c, "paddings", &n, &ok);
    if (!ok) return FL_ERROR;
    if (n != 4) return fl_err(c->e, "%s: paddings must hold 4 values (top, bottom, left, right), found %zu", c->t, n);
    for (int i = 0; i < 4; i++) {
        if (p[i] < 0 || p[i] > INT32_MAX)
            return fl_err(c->e, "%s: paddings must be >= 0, found %lld", c->t, (long long)p[i]);
        int64_t size = x.d[hd + i / 2];
        if (strcmp(mode, "reflect") == 0 && size >= 0 && p[i] >= size)
            return fl_err(c->e, "%s: a reflect padding (%lld) must be below the size it mirrors (%lld) of the input %s",
                          c->t, (long long)p[i], (long long)size, sstr(c, &x));
    }
    for (int i = 0; i < 2; i++) o.d[hd + i] = x.d[hd + i] < 0 ? -1 : sadd(x.d[hd + i], sadd(p[2 * i], p[2 * i + 1]));
    return set_out(c, "Out", xv->dtype, &o);
}

FlStatus fl_infer_pad_constant_like(Ctx *c) {
    FlVarDesc *xv, *yv;
    if (in1(c, "X", &xv) || in1(c, "Y", &yv)) return FL_ERROR;
    Shape x = shape_of(xv), y = shape_of(yv);
    bool ok = x.nd == y.nd && xv->dtype == yv->dtype;
    for (int i = 0; ok && i < x.nd; i++) ok = x.d[i] < 0 || y.d[i] < 0 || y.d[i] <= x.d[i];
    if (!ok)
        return fl_err(c->e, "%s: Y must have X's rank and dtype and no dim larger than X's (X %s %s, Y %s %s)", c->t,
                      sstr(c, &x), dt(xv->dtype), sstr(c, &y), dt(yv->dtype));
    return set_like(c, "Out", xv);
}

FlStatus fl_infer_group_norm(Ctx *c) {
    FlVarDesc *xv, *sv, *bv;
    int64_t g;
    if (in1(c, "X", &xv) || in_opt(c, "Scale", &sv) || in_opt(c, "Bias", &bv) || need_float(c, "the input", xv) ||
        int_at_least(c, "groups", 1, &g))
        return FL_ERROR;
    Shape x = shape_of(xv);
    if (x.nd < 2) return fl_err(c->e, "%s: the input must be [N, C, ...], found %s", c->t, sstr(c, &x));
    if (x.d[1] >= 0 && (g > x.d[1] || x.d[1] % g != 0))
        return fl_err(c->e, "%s: the input's %lld channels cannot be divided into %lld groups", c->t,
                      (long long)x.d[1], (long long)g);
    if ((sv && channel_vec(c, xv, "Scale", sv, x.d[1])) || (bv && channel_vec(c, xv, "Bias", bv, x.d[1])))
        return FL_ERROR;
    double eps = fattr(c, "epsilon");
    if (!(eps >= 0)) return fl_err(c->e, "%s: epsilon must be >= 0, found %g", c->t, eps);
    Shape ng = {.nd = 2, .d = {x.d[0], g}};
    return set_like(c, "Y", xv) || set_out(c, "Mean", xv->dtype, &ng) || set_out(c, "Variance", xv->dtype, &ng)
               ? FL_ERROR
               : FL_OK;
}
