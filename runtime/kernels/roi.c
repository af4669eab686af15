/* roi.c: roi_pool, roi_align and psroi_pool (kernels_roi.h). Each box's bins (or roi_align's
 * sample points and their bilinear weights) are worked out once in double, then the typed loops of
 * roi_t.inc apply them to every channel of the box's image. */
#include "runtime/kernels/kernels_impl.h"

#include <math.h>

#include "runtime/kernels/kernels_roi.h"

/* A bin: the cells [h0, h1) x [w0, w1) of the image (empty when either is). */
typedef struct Span {
    int64_t h0, h1, w0, w1;
} Span;

/* A sample point of roi_align: up to four cells (h*W + w, -1: none) and their weights. */
typedef struct AlignPt {
    int64_t idx[4];
    double w[4];
} AlignPt;

typedef enum RoiKind { ROI_POOL, ROI_ALIGN, PSROI_POOL } RoiKind;

static const char *const roi_ops[][2] = {{"roi_pool", "roi_pool_grad"}, {"roi_align", "roi_align_grad"},
                                         {"psroi_pool", "psroi_pool_grad"}};

/* The shapes: X [N, C, H, W], ROIs [R, 4], Out [R, Co, ph, pw]; bid[r] the image of box r
 * (caller frees). */
typedef struct RoiGeom {
    int64_t N, C, H, W, R, Co, ph, pw;
    int64_t *bid;
} RoiGeom;

#define FL_TMPL "roi_t.inc"
#include "runtime/kernels/tmpl.h"

static FlStatus roi_geom(FlErr *e, RoiKind k, bool grad, const FlTensor *x, const FlTensor *rois, const int64_t *off,
                         int64_t nseq, const FlRoiAttrs *a, RoiGeom *g) {
    const char *op = roi_ops[k][grad];
    if (kneed_float(e, op, "X", x) || ksame_dtype(e, op, "X", x, "ROIs", rois)) return FL_ERROR;
    if (x->ndim != 4 || rois->ndim != 2 || rois->ne[1] != 4)
        return fl_err(e, "%s: X %s must be [N, C, H, W] and ROIs %s [R, 4]", op, fl_tensor_shape(x).s,
                      fl_tensor_shape(rois).s);
    *g = (RoiGeom){.N = x->ne[0], .C = x->ne[1], .H = x->ne[2], .W = x->ne[3], .R = rois->ne[0],
                   .Co = x->ne[1], .ph = a->pooled_height, .pw = a->pooled_width};
    if (a->pooled_height < 1 || a->pooled_width < 1 || !(a->spatial_scale > 0) ||
        (k == ROI_ALIGN && (a->sampling_ratio == 0 || a->sampling_ratio < -1)))
        return fl_err(e, "%s: bad attributes: pooled %d x %d, spatial_scale %g, sampling_ratio %d", op,
                      a->pooled_height, a->pooled_width, a->spatial_scale, a->sampling_ratio);
    if (k == PSROI_POOL) {
        g->Co = a->output_channels;
        if (a->output_channels < 1 || g->C != g->Co * g->ph * g->pw)
            return fl_err(e, "%s: X %s must have output_channels (%d) * pooled_height * pooled_width channels", op,
                          fl_tensor_shape(x).s, a->output_channels);
    }
    if (!off || nseq != g->N || off[nseq] != g->R)
        return fl_err(e, "%s: ROIs %s need the offsets of their LoD, one sequence per image of X %s (found %lld)", op,
                      fl_tensor_shape(rois).s, fl_tensor_shape(x).s, (long long)(off ? nseq : 0));
    /* coordinates become cell indices: each must be finite, and scaled within 2^40 of the image */
    for (int64_t i = 0; i < g->R * 4; i++) {
        double v = fl_tensor_get(rois, i);
        if (!(fabs(v * a->spatial_scale) < 0x1p40))
            return fl_err(e, "%s: ROI %lld has the coordinate %g: boxes must be finite and near the image", op,
                          (long long)(i / 4), v);
    }
    g->bid = fl_xcalloc((size_t)(g->R ? g->R : 1), sizeof *g->bid);
    for (int64_t b = 0; b < nseq; b++)
        for (int64_t r = off[b]; r < off[b + 1]; r++) g->bid[r] = b;
    return FL_OK;
}

static int64_t clampi(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The bins of box r (ph * pw spans). */
static void pool_spans(const RoiGeom *g, const FlTensor *rois, int64_t r, const FlRoiAttrs *a, bool ps, Span *sp) {
    double b[4];
    for (int i = 0; i < 4; i++) b[i] = fl_tensor_get(rois, r * 4 + i);
    double x0, y0, rw, rh;
    if (ps) { /* psroi_pool: rounded, then scaled; the end one cell on */
        x0 = round(b[0]) * a->spatial_scale, y0 = round(b[1]) * a->spatial_scale;
        rw = fmax((round(b[2]) + 1) * a->spatial_scale - x0, 0.1);
        rh = fmax((round(b[3]) + 1) * a->spatial_scale - y0, 0.1);
    } else { /* roi_pool: scaled, then rounded; whole cells, at least one */
        x0 = round(b[0] * a->spatial_scale), y0 = round(b[1] * a->spatial_scale);
        rw = fmax(round(b[2] * a->spatial_scale) - x0 + 1, 1);
        rh = fmax(round(b[3] * a->spatial_scale) - y0 + 1, 1);
    }
    double bh = rh / (double)g->ph, bw = rw / (double)g->pw;
    for (int64_t i = 0; i < g->ph; i++)
        for (int64_t j = 0; j < g->pw; j++) {
            Span *s = &sp[i * g->pw + j];
            if (ps) {
                s->h0 = (int64_t)floor(y0 + bh * (double)i), s->h1 = (int64_t)ceil(y0 + bh * (double)(i + 1));
                s->w0 = (int64_t)floor(x0 + bw * (double)j), s->w1 = (int64_t)ceil(x0 + bw * (double)(j + 1));
            } else {
                s->h0 = (int64_t)floor(bh * (double)i) + (int64_t)y0, s->h1 = (int64_t)ceil(bh * (double)(i + 1)) + (int64_t)y0;
                s->w0 = (int64_t)floor(bw * (double)j) + (int64_t)x0, s->w1 = (int64_t)ceil(bw * (double)(j + 1)) + (int64_t)x0;
            }
            s->h0 = clampi(s->h0, 0, g->H), s->h1 = clampi(s->h1, 0, g->H);
            s->w0 = clampi(s->w0, 0, g->W), s->w1 = clampi(s->w1, 0, g->W);
        }
}

/* roi_align's sample points of box r: ph * pw bins of *n points each (the array is the caller's
 * to free). */
static AlignPt *align_points(const RoiGeom *g, const FlTensor *rois, int64_t r, const FlRoiAttrs *a, int64_t *n) {
    double s = a->spatial_scale, x0 = fl_tensor_get(rois, r * 4) * s, y0 = fl_tensor_get(rois, r * 4 + 1) * s;
    double rw = fmax(fl_tensor_get(rois, r * 4 + 2) * s - x0, 1), rh = fmax(fl_tensor_get(rois, r * 4 + 3) * s - y0, 1);
    double bh = rh / (double)g->ph, bw = rw / (double)g->pw;
    int64_t gh = a->sampling_ratio > 0 ? a->sampling_ratio : (int64_t)ceil(bh);
    int64_t gw = a->sampling_ratio > 0 ? a->sampling_ratio : (int64_t)ceil(bw);
    *n = gh * gw;
    if (g->ph * g->pw * *n > (int64_t)1 << 26) return NULL; /* the caller says which box */
    AlignPt *pts = fl_xcalloc((size_t)(g->ph * g->pw * *n), sizeof *pts);
    AlignPt *p = pts;
    for (int64_t i = 0; i < g->ph; i++)
        for (int64_t j = 0; j < g->pw; j++)
            for (int64_t iy = 0; iy < gh; iy++)
                for (int64_t ix = 0; ix < gw; ix++, p++) {
                    double y = y0 + bh * (double)i + ((double)iy + 0.5) * bh / (double)gh;
                    double x = x0 + bw * (double)j + ((double)ix + 0.5) * bw / (double)gw;
                    for (int q = 0; q < 4; q++) p->idx[q] = -1, p->w[q] = 0;
                    if (y < -1 || y > (double)g->H || x < -1 || x > (double)g->W) continue;
                    y = fmax(y, 0), x = fmax(x, 0);
                    int64_t yl = (int64_t)y, xl = (int64_t)x, yh = yl + 1, xh = xl + 1;
                    if (yl >= g->H - 1) yl = yh = g->H - 1, y = (double)yl;
                    if (xl >= g->W - 1) xl = xh = g->W - 1, x = (double)xl;
                    double ly = y - (double)yl, lx = x - (double)xl, hy = 1 - ly, hx = 1 - lx;
                    int64_t idx[4] = {yl * g->W + xl, yl * g->W + xh, yh * g->W + xl, yh * g->W + xh};
                    double w[4] = {hy * hx, hy * lx, ly * hx, ly * lx};
                    for (int q = 0; q < 4; q++) p->idx[q] = idx[q], p->w[q] = w[q];
                }
    return pts;
}

/* Runs one op (forward, or its gradient when dout is given) over every box. */
static FlStatus roi_run(FlErr *e, RoiKind k, const FlTensor *x, const FlTensor *rois, const int64_t *off, int64_t nseq,
                        const FlRoiAttrs *a, const FlTensor *argmax, const FlTensor *dout, FlTensor *out,
                        FlTensor *arg_out) {
    bool grad = dout != NULL;
    const char *op = roi_ops[k][grad];
    RoiGeom g = {0};
    if (roi_geom(e, k, grad, x, rois, off, nseq, a, &g)) return FL_ERROR;
    int64_t one[4] = {g.R, g.Co, g.ph, g.pw}, per = g.Co * g.ph * g.pw, img = g.C * g.H * g.W;
    FlTensor r = FL_TENSOR_INIT, am = FL_TENSOR_INIT;
    FlStatus st = FL_OK;
    if (grad) {
        st = ksame_dtype(e, op, "X", x, "Out@GRAD", dout);
        if (!st && (dout->ndim != 4 || memcmp(dout->ne, one, sizeof one) != 0))
            st = fl_err(e, "%s: Out@GRAD %s must be [%lld, %lld, %lld, %lld]", op, fl_tensor_shape(dout).s,
                        (long long)one[0], (long long)one[1], (long long)one[2], (long long)one[3]);
        if (!st && k == ROI_POOL &&
            (khas(e, op, "Argmax", argmax) || argmax->dtype != FL_DT_INT64 || !fl_tensor_same_shape(argmax, dout)))
            st = st ? st : fl_err(e, "%s: Argmax %s must be int64 of Out@GRAD's shape", op, fl_tensor_shape(argmax).s);
        for (int64_t i = 0; !st && k == ROI_POOL && i < fl_tensor_numel(argmax); i++) {
            int64_t v = ((const int64_t *)fl_tensor_data(argmax))[i];
            if (v < -1 || v >= g.H * g.W)
                st = fl_err(e, "%s: Argmax holds %lld, not a cell of the %lld x %lld image (nor -1)", op, (long long)v,
                            (long long)g.H, (long long)g.W);
        }
        if (!st) st = kalloc_like(e, op, &r, x);
    } else {
        st = kalloc(e, op, &r, x->dtype, 4, one);
        if (!st && k == ROI_POOL) st = kalloc(e, op, &am, FL_DT_INT64, 4, one);
    }
    Span *sp = fl_xcalloc((size_t)(g.ph * g.pw), sizeof *sp);
    bool f32 = x->dtype == FL_DT_FLOAT32;
    for (int64_t b = 0; b < g.R && !st; b++) {
        int64_t xo = g.bid[b] * img, oo = b * per;
        if (k == ROI_ALIGN) {
            int64_t n;
            AlignPt *pts = align_points(&g, rois, b, a, &n);
            if (!pts) {
                st = fl_err(e, "%s: ROI %lld needs %lld sample points a bin (sampling_ratio -1: one a cell): too many; "
                            "give a sampling_ratio", op, (long long)b, (long long)n);
                break;
            }
            if (f32) roi_align_box_f32(fl_tensor_data(x), fl_tensor_data(&r), dout ? fl_tensor_data(dout) : NULL, xo, oo, &g, pts, n);
            else roi_align_box_f64(fl_tensor_data(x), fl_tensor_data(&r), dout ? fl_tensor_data(dout) : NULL, xo, oo, &g, pts, n);
            free(pts);
            continue;
        }
        pool_spans(&g, rois, b, a, k == PSROI_POOL, sp);
        int64_t *amp = k != ROI_POOL ? NULL : grad ? (int64_t *)fl_tensor_data(argmax) : (int64_t *)fl_tensor_data(&am);
        if (k == ROI_POOL && f32) roi_pool_box_f32(fl_tensor_data(x), fl_tensor_data(&r), dout ? fl_tensor_data(dout) : NULL, amp, xo, oo, &g, sp);
        else if (k == ROI_POOL) roi_pool_box_f64(fl_tensor_data(x), fl_tensor_data(&r), dout ? fl_tensor_data(dout) : NULL, amp, xo, oo, &g, sp);
        else if (f32) psroi_box_f32(fl_tensor_data(x), fl_tensor_data(&r), dout ? fl_tensor_data(dout) : NULL, xo, oo, &g, sp);
        else psroi_box_f64(fl_tensor_data(x), fl_tensor_data(&r), dout ? fl_tensor_data(dout) : NULL, xo, oo, &g, sp);
    }
    free(sp);
    free(g.bid);
    if (st) {
        fl_tensor_fini(&r);
        fl_tensor_fini(&am);
        return FL_ERROR;
    }
    kout(out, &r);
    kout(arg_out, &am);
    return FL_OK;
}

FlStatus fl_kernel_roi_pool(FlErr *e, const FlTensor *x, const FlTensor *rois, const int64_t *off, int64_t nseq,
                            const FlRoiAttrs *a, FlTensor *out, FlTensor *argmax) {
    return roi_run(e, ROI_POOL, x, rois, off, nseq, a, NULL, NULL, out, argmax);
}
FlStatus fl_kernel_roi_pool_grad(FlErr *e, const FlTensor *x, const FlTensor *rois, const int64_t *off, int64_t nseq,
                                 const FlTensor *argmax, const FlTensor *dout, const FlRoiAttrs *a, FlTensor *dx) {
    if (khas(e, "roi_pool_grad", "Out@GRAD", dout)) return FL_ERROR;
    return roi_run(e, ROI_POOL, x, rois, off, nseq, a, argmax, dout, dx, NULL);
}
FlStatus fl_kernel_roi_align(FlErr *e, const FlTensor *x, const FlTensor *rois, const int64_t *off, int64_t nseq,
                             const FlRoiAttrs *a, FlTensor *out) {
    return roi_run(e, ROI_ALIGN, x, rois, off, nseq, a, NULL, NULL, out, NULL);
}
FlStatus fl_kernel_roi_align_grad(FlErr *e, const FlTensor *x, const FlTensor *rois, const int64_t *off, int64_t nseq,
                                  const FlTensor *dout, const FlRoiAttrs *a, FlTensor *dx) {
    if (khas(e, "roi_align_grad", "Out@GRAD", dout)) return FL_ERROR;
    return roi_run(e, ROI_ALIGN, x, rois, off, nseq, a, NULL, dout, dx, NULL);
}
FlStatus fl_kernel_psroi_pool(FlErr *e, const FlTensor *x, const FlTensor *rois, const int64_t *off, int64_t nseq,
                              const FlRoiAttrs *a, FlTensor *out) {
    return roi_run(e, PSROI_POOL, x, rois, off, nseq, a, NULL, NULL, out, NULL);
}
FlStatus fl_kernel_psroi_pool_grad(FlErr *e, const FlTensor *x, const FlTensor *rois, const int64_t *off,
                                   int64_t nseq, const FlTensor *dout, const FlRoiAttrs *a, FlTensor *dx) {
    if (khas(e, "psroi_pool_grad", "Out@GRAD", dout)) return FL_ERROR;
    return roi_run(e, PSROI_POOL, x, rois, off, nseq, a, NULL, dout, dx, NULL);
}
