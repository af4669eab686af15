/* vision.c: the image layers' kernels of kernels_vision.h: the rearrangements (pixel_shuffle,
 * shuffle_channel, space_to_depth, temporal_shift) as a source index per output element, maxout,
 * affine_channel, pad2d and pad_constant_like, group_norm. The typed loops are in vision_t.inc. */
#include "runtime/kernels/kernels_impl.h"

#include <math.h>

#include "runtime/kernels/kernels_layers.h"
#include "runtime/kernels/kernels_vision.h"

/* ---- the rearrangements: Out[o] = X[src(o)], or 0 where src(o) < 0 ---- */

typedef struct RearrangeMap {
    FlRearrange kind;
    int64_t n;          /* output elements */
    int64_t C, H, W;    /* X's dims 1..3 */
    int64_t f, c1, c2;  /* the factor; temporal_shift's channel bounds */
} RearrangeMap;

/* The map of X [N, C, H, W] for n output elements; temporal_shift's bounds as Fluid computes
 * them, in float. */
static RearrangeMap rearrange_map(const FlTensor *x, const FlRearrangeAttrs *a, int64_t n) {
    RearrangeMap m = {.kind = a->kind, .n = n, .C = x->ne[1], .H = x->ne[2], .W = x->ne[3], .f = a->factor};
    m.c1 = (int64_t)((float)m.C * (float)a->shift_ratio);
    m.c2 = (int64_t)((float)m.C * 2 * (float)a->shift_ratio);
    return m;
}

static int64_t rearrange_src(const RearrangeMap *m, int64_t o) {
    const int64_t C = m->C, H = m->H, W = m->W, f = m->f;
    switch (m->kind) {
    case FL_REARRANGE_PIXEL_SHUFFLE: { /* Out [N, C/f^2, H*f, W*f] */
        int64_t ow = o % (W * f), t = o / (W * f), oh = t % (H * f), oc = (t / (H * f)) % (C / (f * f));
        int64_t n = t / (H * f) / (C / (f * f));
        return ((n * C + oc * f * f + (oh % f) * f + ow % f) * H + oh / f) * W + ow / f;
    }
    case FL_REARRANGE_SHUFFLE_CHANNEL: {
        int64_t hw = o % (H * W), t = o / (H * W), oc = t % C, n = t / C;
        return (n * C + (oc % f) * (C / f) + oc / f) * H * W + hw;
    }
    case FL_REARRANGE_SPACE_TO_DEPTH: { /* Out viewed as [N, C/f^2, H*f, W*f] */
        int64_t oc = C / (f * f), w2 = o % (W * f), t = o / (W * f), h2 = t % (H * f);
        t /= H * f;
        int64_t c2 = t % oc, n = t / oc, k = ((h2 % f) * f + w2 % f) * oc + c2;
        return ((n * C + k) * H + h2 / f) * W + w2 / f;
    }
    case FL_REARRANGE_TEMPORAL_SHIFT: { /* X [N*T, C, H, W], T = f */
        int64_t hw = o % (H * W), t1 = o / (H * W), c = t1 % C, nt = t1 / C, t = nt % f;
        int64_t st = c < m->c1 ? t - 1 : c < m->c2 ? t + 1 : t;
        return st < 0 || st >= f ? -1 : ((nt - t + st) * C + c) * H * W + hw;
    }
    case FL_REARRANGE_COUNT: break;
    }
    FL_UNREACHABLE();
}

static const char *rearrange_name(FlRearrange k) {
    switch (k) {
    case FL_REARRANGE_PIXEL_SHUFFLE: return "pixel_shuffle";
    case FL_REARRANGE_SHUFFLE_CHANNEL: return "shuffle_channel";
    case FL_REARRANGE_SPACE_TO_DEPTH: return "space_to_depth";
    case FL_REARRANGE_TEMPORAL_SHIFT: return "temporal_shift";
    case FL_REARRANGE_COUNT: break;
    }
    return "rearrange";
}

/* ---- pad2d: the source of each output cell ---- */

typedef struct Pad2d {
    int64_t NC, H, W, Ho, Wo, C; /* C: the channels of an NHWC image (NC = N then), else 1 */
    int64_t top, left, nout;
    FlPad2dMode mode;
} Pad2d;

static int64_t pad2d_src(const Pad2d *p, int64_t o) {
    int64_t c = o % p->C, t = o / p->C, ow = t % p->Wo, oh = (t / p->Wo) % p->Ho, nc = t / p->Wo / p->Ho;
    int64_t h = oh - p->top, w = ow - p->left;
    switch (p->mode) {
    case FL_PAD2D_CONSTANT:
        if (h < 0 || w < 0 || h >= p->H || w >= p->W) return -1;
        break;
    case FL_PAD2D_REFLECT:
        h = h < 0 ? -h : h, w = w < 0 ? -w : w;
        h = h > p->H - 1 ? 2 * (p->H - 1) - h : h, w = w > p->W - 1 ? 2 * (p->W - 1) - w : w;
        break;
    case FL_PAD2D_EDGE:
        h = h < 0 ? 0 : h > p->H - 1 ? p->H - 1 : h, w = w < 0 ? 0 : w > p->W - 1 ? p->W - 1 : w;
        break;
    case FL_PAD2D_COUNT: FL_UNREACHABLE();
    }
    return ((nc * p->H + h) * p->W + w) * p->C + c;
}

#define FL_TMPL "vision_t.inc"
#include "runtime/kernels/tmpl.h"

/* ---- rearranging ---- */

FlStatus fl_kernel_rearrange(FlErr *e, const FlTensor *x, const FlRearrangeAttrs *a, FlTensor *out) {
    const char *op = rearrange_name(a->kind);
    if (khas(e, op, "X", x)) return FL_ERROR;
    if (x->ndim != 4) return fl_err(e, "%s: X %s must be [N, C, H, W]", op, fl_tensor_shape(x).s);
    const int64_t N = x->ne[0], C = x->ne[1], H = x->ne[2], W = x->ne[3], f = a->factor;
    RearrangeMap m = rearrange_map(x, a, fl_tensor_numel(x));
    int64_t ne[4] = {N, C, H, W};
    bool ok = f >= 1;
    switch (a->kind) {
    case FL_REARRANGE_PIXEL_SHUFFLE:
        ok = ok && C % (f * f) == 0;
        ne[1] = C / (f * f), ne[2] = H * f, ne[3] = W * f;
        break;
    case FL_REARRANGE_SHUFFLE_CHANNEL: ok = ok && C % f == 0; break;
    case FL_REARRANGE_SPACE_TO_DEPTH:
        ok = ok && f >= 2 && C % (f * f) == 0 && H % f == 0 && W % f == 0;
        if (ok) ne[1] = C * f * f, ne[2] = H / f, ne[3] = W / f;
        break;
    case FL_REARRANGE_TEMPORAL_SHIFT: {
        if (kneed_float(e, op, "X", x)) return FL_ERROR;
        ok = ok && N % f == 0 && a->shift_ratio >= 0 && a->shift_ratio <= 0.5;
        break;
    }
    case FL_REARRANGE_COUNT: ok = false; break;
    }
    if (!ok)
        return fl_err(e, "%s: X %s does not divide by the factor %d (%s)", op, fl_tensor_shape(x).s, a->factor,
                      a->kind == FL_REARRANGE_TEMPORAL_SHIFT ? "seg_num divides N*T, shift_ratio in [0, 0.5]"
                      : a->kind == FL_REARRANGE_SHUFFLE_CHANNEL ? "C by group"
                      : a->kind == FL_REARRANGE_PIXEL_SHUFFLE   ? "C by upscale_factor^2"
                                                                : "C by blocksize^2, H and W by blocksize >= 2");
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, op, &r, x->dtype, 4, ne)) return FL_ERROR;
    size_t es = fl_dtype_size(x->dtype);
    const char *src = fl_tensor_data(x);
    char *dst = fl_tensor_data(&r);
    for (int64_t o = 0; o < m.n; o++) {
        int64_t s = rearrange_src(&m, o);
        if (s >= 0) memcpy(dst + (size_t)o * es, src + (size_t)s * es, es);
        else memset(dst + (size_t)o * es, 0, es);
    }
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_rearrange_grad(FlErr *e, const FlTensor *x, const FlTensor *dout, const FlRearrangeAttrs *a,
                                  FlTensor *dx) {
    char op[40];
    snprintf(op, sizeof op, "%s_grad", rearrange_name(a->kind));
    FlTensor shape = FL_TENSOR_INIT;
    FlErr sub;
    /* the forward's checks and output shape, on X */
    if (kneed_float(e, op, "X", x) || ksame_dtype(e, op, "X", x, "Out@GRAD", dout)) return FL_ERROR;
    if (fl_kernel_rearrange(&sub, x, a, &shape)) return fl_err(e, "%s", sub.msg);
    bool same = fl_tensor_same_shape(&shape, dout);
    fl_tensor_fini(&shape);
    if (!same)
        return fl_err(e, "%s: Out@GRAD %s differs from the output's shape for X %s", op, fl_tensor_shape(dout).s,
                      fl_tensor_shape(x).s);
    if (!dx) return FL_OK;
    RearrangeMap m = rearrange_map(x, a, fl_tensor_numel(dout));
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &r, x)) return FL_ERROR;
    if (x->dtype == FL_DT_FLOAT32) rearrange_grad_f32(fl_tensor_data(dout), fl_tensor_data(&r), &m);
    else rearrange_grad_f64(fl_tensor_data(dout), fl_tensor_data(&r), &m);
    kout(dx, &r);
    return FL_OK;
}

/* ---- maxout ---- */

static FlStatus maxout_check(FlErr *e, const char *op, const FlTensor *x, int groups) {
    if (kneed_float(e, op, "X", x)) return FL_ERROR;
    if (x->ndim != 4 || groups < 1 || x->ne[1] % groups != 0)
        return fl_err(e, "%s: X %s must be [N, C, H, W] with C divisible by groups (%d)", op, fl_tensor_shape(x).s,
                      groups);
    return FL_OK;
}

FlStatus fl_kernel_maxout(FlErr *e, const FlTensor *x, int groups, FlTensor *out) {
    if (maxout_check(e, "maxout", x, groups)) return FL_ERROR;
    int64_t ne[4] = {x->ne[0], x->ne[1] / groups, x->ne[2], x->ne[3]}, HW = x->ne[2] * x->ne[3];
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, "maxout", &r, x->dtype, 4, ne)) return FL_ERROR;
    if (x->dtype == FL_DT_FLOAT32) maxout_f32(fl_tensor_data(x), fl_tensor_data(&r), x->ne[0], x->ne[1], HW, groups);
    else maxout_f64(fl_tensor_data(x), fl_tensor_data(&r), x->ne[0], x->ne[1], HW, groups);
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_maxout_grad(FlErr *e, const FlTensor *x, const FlTensor *dout, int groups, FlTensor *dx) {
    const char *op = "maxout_grad";
    if (maxout_check(e, op, x, groups) || ksame_dtype(e, op, "X", x, "Out@GRAD", dout)) return FL_ERROR;
    int64_t ne[4] = {x->ne[0], x->ne[1] / groups, x->ne[2], x->ne[3]}, HW = x->ne[2] * x->ne[3];
    if (dout->ndim != 4 || memcmp(dout->ne, ne, sizeof ne) != 0)
        return fl_err(e, "%s: Out@GRAD %s differs from the output shape %s", op, fl_tensor_shape(dout).s,
                      fl_shape_str(4, ne).s);
    if (!dx) return FL_OK;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &r, x)) return FL_ERROR;
    if (x->dtype == FL_DT_FLOAT32)
        maxout_grad_f32(fl_tensor_data(x), fl_tensor_data(dout), fl_tensor_data(&r), x->ne[0], x->ne[1], HW, groups);
    else maxout_grad_f64(fl_tensor_data(x), fl_tensor_data(dout), fl_tensor_data(&r), x->ne[0], x->ne[1], HW, groups);
    kout(dx, &r);
    return FL_OK;
}

/* ---- affine_channel ---- */

/* X as [outer, C, inner] and Scale, Bias [C]. */
static FlStatus affine_dims(FlErr *e, const char *op, const FlTensor *x, const FlTensor *scale, const FlTensor *bias,
                            bool nhwc, int64_t *outer, int64_t *C, int64_t *inner) {
    if (kneed_float(e, op, "X", x) || ksame_dtype(e, op, "X", x, "Scale", scale) ||
        (bias && ksame_dtype(e, op, "X", x, "Bias", bias)))
        return FL_ERROR;
    if (x->ndim < 2) return fl_err(e, "%s: X %s must have at least 2 dims", op, fl_tensor_shape(x).s);
    int cd = nhwc ? x->ndim - 1 : 1;
    *C = x->ne[cd];
    *outer = kprod(x->ne, 0, cd);
    *inner = kprod(x->ne, cd + 1, x->ndim);
    if (fl_tensor_numel(scale) != *C || (bias && fl_tensor_numel(bias) != *C))
        return fl_err(e, "%s: Scale %s and Bias must hold X %s's %lld channels", op, fl_tensor_shape(scale).s,
                      fl_tensor_shape(x).s, (long long)*C);
    return FL_OK;
}

FlStatus fl_kernel_affine_channel(FlErr *e, const FlTensor *x, const FlTensor *scale, const FlTensor *bias, bool nhwc,
                                  FlTensor *out) {
    int64_t outer, C, inner;
    if (khas(e, "affine_channel", "Bias", bias) ||
        affine_dims(e, "affine_channel", x, scale, bias, nhwc, &outer, &C, &inner))
        return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, "affine_channel", &r, x)) return FL_ERROR;
    if (x->dtype == FL_DT_FLOAT32)
        affine_channel_f32(fl_tensor_data(x), fl_tensor_data(scale), fl_tensor_data(bias), fl_tensor_data(&r), outer, C,
                           inner);
    else affine_channel_f64(fl_tensor_data(x), fl_tensor_data(scale), fl_tensor_data(bias), fl_tensor_data(&r), outer,
                            C, inner);
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_affine_channel_grad(FlErr *e, const FlTensor *x, const FlTensor *scale, const FlTensor *dout,
                                       bool nhwc, FlTensor *dx, FlTensor *dscale, FlTensor *dbias) {
    const char *op = "affine_channel_grad";
    int64_t outer, C, inner;
    if (affine_dims(e, op, x, scale, NULL, nhwc, &outer, &C, &inner) || ksame(e, op, "X", x, "Out@GRAD", dout))
        return FL_ERROR;
    FlTensor r[3];
    for (int i = 0; i < 3; i++) fl_tensor_init(&r[i]);
    if ((dx && kalloc_raw_like(e, op, &r[0], x)) || (dscale && kalloc_raw_like(e, op, &r[1], scale)) ||
        (dbias && kalloc_raw_like(e, op, &r[2], scale))) {
        for (int i = 0; i < 3; i++) fl_tensor_fini(&r[i]);
        return FL_ERROR;
    }
    void *p[3] = {dx ? fl_tensor_data(&r[0]) : NULL, dscale ? fl_tensor_data(&r[1]) : NULL,
                  dbias ? fl_tensor_data(&r[2]) : NULL};
    if (x->dtype == FL_DT_FLOAT32)
        affine_channel_grad_f32(fl_tensor_data(x), fl_tensor_data(scale), fl_tensor_data(dout), p[0], p[1], p[2], outer,
                                C, inner);
    else affine_channel_grad_f64(fl_tensor_data(x), fl_tensor_data(scale), fl_tensor_data(dout), p[0], p[1], p[2],
                                 outer, C, inner);
    FlTensor *outs[3] = {dx, dscale, dbias};
    for (int i = 0; i < 3; i++)
        if (outs[i]) kout(outs[i], &r[i]);
    return FL_OK;
}

/* ---- pad2d, pad_constant_like ---- */

static FlStatus pad2d_geom(FlErr *e, const char *op, const FlTensor *x, const int64_t pads[4], FlPad2dMode mode,
                           bool nhwc, Pad2d *p, int64_t ne[4]) {
    if (kneed_float(e, op, "X", x)) return FL_ERROR;
    if (x->ndim != 4) return fl_err(e, "%s: X %s must be 4-D (%s)", op, fl_tensor_shape(x).s, nhwc ? "NHWC" : "NCHW");
    if ((unsigned)mode >= FL_PAD2D_COUNT) return fl_err(e, "%s: unknown mode %d", op, (int)mode);
    int hd = nhwc ? 1 : 2;
    *p = (Pad2d){.NC = nhwc ? x->ne[0] : x->ne[0] * x->ne[1], .H = x->ne[hd], .W = x->ne[hd + 1],
                 .C = nhwc ? x->ne[3] : 1, .top = pads[0], .left = pads[2], .mode = mode};
    for (int i = 0; i < 4; i++) {
        int64_t size = i < 2 ? p->H : p->W;
        if (pads[i] < 0 || pads[i] > INT32_MAX || (mode == FL_PAD2D_REFLECT && pads[i] >= size) ||
            (mode == FL_PAD2D_EDGE && size < 1))
            return fl_err(e, "%s: paddings [%lld, %lld, %lld, %lld] for X %s: each must be >= 0%s", op,
                          (long long)pads[0], (long long)pads[1], (long long)pads[2], (long long)pads[3],
                          fl_tensor_shape(x).s, mode == FL_PAD2D_REFLECT ? " and below the size it mirrors" : "");
    }
    p->Ho = p->H + pads[0] + pads[1], p->Wo = p->W + pads[2] + pads[3];
    memcpy(ne, x->ne, 4 * sizeof ne[0]);
    ne[hd] = p->Ho, ne[hd + 1] = p->Wo;
    p->nout = kprod(ne, 0, 4);
    return FL_OK;
}

FlStatus fl_kernel_pad2d(FlErr *e, const FlTensor *x, const int64_t pads[4], FlPad2dMode mode, double value, bool nhwc,
                         FlTensor *out) {
    Pad2d p;
    int64_t ne[4];
    if (pad2d_geom(e, "pad2d", x, pads, mode, nhwc, &p, ne)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, "pad2d", &r, x->dtype, 4, ne)) return FL_ERROR;
    if (x->dtype == FL_DT_FLOAT32) {
        const float *xs = fl_tensor_data(x);
        float *o = fl_tensor_data(&r);
        for (int64_t i = 0; i < p.nout; i++) {
            int64_t s = pad2d_src(&p, i);
            o[i] = s >= 0 ? xs[s] : (float)value;
        }
    } else {
        const double *xs = fl_tensor_data(x);
        double *o = fl_tensor_data(&r);
        for (int64_t i = 0; i < p.nout; i++) {
            int64_t s = pad2d_src(&p, i);
            o[i] = s >= 0 ? xs[s] : value;
        }
    }
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_pad2d_grad(FlErr *e, const FlTensor *x, const FlTensor *dout, const int64_t pads[4],
                              FlPad2dMode mode, bool nhwc, FlTensor *dx) {
    const char *op = "pad2d_grad";
    Pad2d p;
    int64_t ne[4];
    if (pad2d_geom(e, op, x, pads, mode, nhwc, &p, ne) || ksame_dtype(e, op, "X", x, "Out@GRAD", dout)) return FL_ERROR;
    if (dout->ndim != 4 || memcmp(dout->ne, ne, sizeof ne) != 0)
        return fl_err(e, "%s: Out@GRAD %s differs from the output shape %s", op, fl_tensor_shape(dout).s,
                      fl_shape_str(4, ne).s);
    if (!dx) return FL_OK;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &r, x)) return FL_ERROR;
    if (x->dtype == FL_DT_FLOAT32) pad2d_grad_f32(fl_tensor_data(dout), fl_tensor_data(&r), &p);
    else pad2d_grad_f64(fl_tensor_data(dout), fl_tensor_data(&r), &p);
    kout(dx, &r);
    return FL_OK;
}

/* Y's paddings inside X: none before, the difference after each dim. */
static FlStatus like_pads(FlErr *e, const char *op, const FlTensor *x, const FlTensor *y, int64_t *pads) {
    if (khas(e, op, "X", x) || ksame_dtype(e, op, "X", x, "Y", y)) return FL_ERROR;
    bool ok = x->ndim == y->ndim;
    for (int i = 0; ok && i < x->ndim; i++) {
        pads[2 * i] = 0;
        pads[2 * i + 1] = x->ne[i] - y->ne[i];
        ok = pads[2 * i + 1] >= 0;
    }
    if (!ok)
        return fl_err(e, "%s: Y %s must have X %s's rank and no dim larger than X's", op, fl_tensor_shape(y).s,
                      fl_tensor_shape(x).s);
    return FL_OK;
}

FlStatus fl_kernel_pad_constant_like(FlErr *e, const FlTensor *x, const FlTensor *y, double value, FlTensor *out) {
    int64_t pads[2 * FL_MAX_DIMS];
    FlErr sub;
    if (like_pads(e, "pad_constant_like", x, y, pads)) return FL_ERROR;
    if (fl_kernel_pad(&sub, y, pads, 2 * y->ndim, value, out)) return fl_err(e, "pad_constant_like: %s", sub.msg);
    return FL_OK;
}

FlStatus fl_kernel_pad_constant_like_grad(FlErr *e, const FlTensor *x, const FlTensor *y, const FlTensor *dout,
                                          FlTensor *dy) {
    int64_t pads[2 * FL_MAX_DIMS];
    FlErr sub;
    if (like_pads(e, "pad_constant_like_grad", x, y, pads)) return FL_ERROR;
    if (fl_kernel_pad_grad(&sub, y, dout, pads, 2 * y->ndim, dy)) return fl_err(e, "pad_constant_like_grad: %s", sub.msg);
    return FL_OK;
}

/* ---- group_norm ---- */

/* X [N, C, ...] in `groups` groups: M elements a group, S a channel; Scale, Bias [C] or NULL. */
static FlStatus gn_dims(FlErr *e, const char *op, const FlTensor *x, const FlTensor *scale, const FlTensor *bias,
                        int groups, int64_t *M, int64_t *S) {
    if (kneed_float(e, op, "X", x)) return FL_ERROR;
    if (x->ndim < 2 || groups < 1 || x->ne[1] % groups != 0)
        return fl_err(e, "%s: X %s must be [N, C, ...] with C divisible by groups (%d)", op, fl_tensor_shape(x).s,
                      groups);
    *S = kprod(x->ne, 2, x->ndim);
    *M = x->ne[1] / groups * *S;
    const FlTensor *ps[2] = {scale, bias};
    for (int i = 0; i < 2; i++) {
        if (!ps[i]) continue;
        if (ksame_dtype(e, op, "X", x, i ? "Bias" : "Scale", ps[i])) return FL_ERROR;
        if (fl_tensor_numel(ps[i]) != x->ne[1])
            return fl_err(e, "%s: %s %s must hold X %s's %lld channels", op, i ? "Bias" : "Scale",
                          fl_tensor_shape(ps[i]).s, fl_tensor_shape(x).s, (long long)x->ne[1]);
    }
    return FL_OK;
}

FlStatus fl_kernel_group_norm(FlErr *e, const FlTensor *x, const FlTensor *scale, const FlTensor *bias, int groups,
                              double epsilon, FlTensor *y, FlTensor *mean, FlTensor *variance) {
    const char *op = "group_norm";
    int64_t M, S;
    if (gn_dims(e, op, x, scale, bias, groups, &M, &S)) return FL_ERROR;
    int64_t ng[2] = {x->ne[0], groups};
    FlTensor r[3];
    for (int i = 0; i < 3; i++) fl_tensor_init(&r[i]);
    if (kalloc_raw_like(e, op, &r[0], x) || kalloc_raw(e, op, &r[1], x->dtype, 2, ng) ||
        kalloc_raw(e, op, &r[2], x->dtype, 2, ng)) {
        for (int i = 0; i < 3; i++) fl_tensor_fini(&r[i]);
        return FL_ERROR;
    }
    const void *s = scale ? fl_tensor_data(scale) : NULL, *b = bias ? fl_tensor_data(bias) : NULL;
    if (x->dtype == FL_DT_FLOAT32)
        group_norm_f32(fl_tensor_data(x), s, b, fl_tensor_data(&r[0]), fl_tensor_data(&r[1]), fl_tensor_data(&r[2]),
                       x->ne[0], groups, M, S, epsilon);
    else group_norm_f64(fl_tensor_data(x), s, b, fl_tensor_data(&r[0]), fl_tensor_data(&r[1]), fl_tensor_data(&r[2]),
                        x->ne[0], groups, M, S, epsilon);
    kout(y, &r[0]);
    kout(mean, &r[1]);
    kout(variance, &r[2]);
    return FL_OK;
}

FlStatus fl_kernel_group_norm_grad(FlErr *e, const FlTensor *x, const FlTensor *scale, const FlTensor *mean,
                                   const FlTensor *variance, const FlTensor *dy, int groups, double epsilon,
                                   FlTensor *dx, FlTensor *dscale, FlTensor *dbias) {
    const char *op = "group_norm_grad";
    int64_t M, S;
    if (gn_dims(e, op, x, scale, NULL, groups, &M, &S) || ksame(e, op, "X", x, "Y@GRAD", dy) ||
        ksame_dtype(e, op, "X", x, "Mean", mean) || ksame_dtype(e, op, "X", x, "Variance", variance))
        return FL_ERROR;
    if (fl_tensor_numel(mean) != x->ne[0] * groups || fl_tensor_numel(variance) != x->ne[0] * groups)
        return fl_err(e, "%s: Mean %s and Variance %s must hold %lld values (N * groups)", op,
                      fl_tensor_shape(mean).s, fl_tensor_shape(variance).s, (long long)(x->ne[0] * groups));
    int64_t C = x->ne[1];
    FlTensor r[3];
    for (int i = 0; i < 3; i++) fl_tensor_init(&r[i]);
    double *acc = calloc((size_t)(2 * C + 1), sizeof(double));
    if (!acc || (dx && kalloc_raw_like(e, op, &r[0], x)) || (dscale && kalloc_raw(e, op, &r[1], x->dtype, 1, &C)) ||
        (dbias && kalloc_raw(e, op, &r[2], x->dtype, 1, &C))) {
        for (int i = 0; i < 3; i++) fl_tensor_fini(&r[i]);
        free(acc);
        return acc ? FL_ERROR : fl_err(e, "%s: out of memory", op);
    }
    void *p[3] = {dx ? fl_tensor_data(&r[0]) : NULL, dscale ? fl_tensor_data(&r[1]) : NULL,
                  dbias ? fl_tensor_data(&r[2]) : NULL};
    double *as = dscale ? acc : NULL, *ab = dbias ? acc + C : NULL;
    const void *s = scale ? fl_tensor_data(scale) : NULL;
    if (x->dtype == FL_DT_FLOAT32)
        group_norm_grad_f32(fl_tensor_data(x), s, fl_tensor_data(mean), fl_tensor_data(variance), fl_tensor_data(dy),
                            p[0], p[1], p[2], as, ab, x->ne[0], groups, M, S, epsilon);
    else group_norm_grad_f64(fl_tensor_data(x), s, fl_tensor_data(mean), fl_tensor_data(variance), fl_tensor_data(dy),
                             p[0], p[1], p[2], as, ab, x->ne[0], groups, M, S, epsilon);
    free(acc);
    FlTensor *outs[3] = {dx, dscale, dbias};
    for (int i = 0; i < 3; i++)
        if (outs[i]) kout(outs[i], &r[i]);
    return FL_OK;
}
