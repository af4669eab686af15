/* perspective.c: roi_perspective_transform and its gradient (kernels_perspective.h). Each ROI's
 * sample points (up to four cells and their bilinear weights) are worked out once in double from
 * its perspective matrix, then applied to every channel of its image: the forward gathers, the
 * gradient scatters the same weights, so it is the forward's exact transpose (as Fluid's, which
 * recomputes the same points). The tests of a point against the quadrilateral and the image use
 * Fluid's tolerance of 1e-4. */
#include "runtime/kernels/kernels_impl.h"

#include <math.h>

#include "runtime/kernels/kernels_perspective.h"

#define EPS 1e-4

/* Fluid's comparisons within EPS: a >= b, a <= b, a > b by more than EPS. */
static bool ge(double a, double b) { return a > b || fabs(a - b) < EPS; }
static bool le(double a, double b) { return a < b || fabs(a - b) < EPS; }
static bool gt(double a, double b) { return a - b > EPS; }

/* Whether (x, y) is in the quadrilateral (qx, qy): on a side (within EPS), or inside by the count
 * of the sides a ray towards +x crosses. */
static bool in_quad(double x, double y, const double *qx, const double *qy) {
    for (int i = 0; i < 4; i++) {
        double xs = qx[i], ys = qy[i], xe = qx[(i + 1) % 4], ye = qy[(i + 1) % 4];
        if (fabs(ys - ye) < EPS) {
            if (fabs(y - ys) < EPS && fabs(y - ye) < EPS && ge(x, fmin(xs, xe)) && le(x, fmax(xs, xe))) return true;
        } else {
            double ix = (y - ys) * (xe - xs) / (ye - ys) + xs;
            if (fabs(ix - x) < EPS && ge(y, fmin(ys, ye)) && le(y, fmax(ys, ye))) return true;
        }
    }
    int cross = 0;
    for (int i = 0; i < 4; i++) {
        double xs = qx[i], ys = qy[i], xe = qx[(i + 1) % 4], ye = qy[(i + 1) % 4];
        if (fabs(ys - ye) < EPS || le(y, fmin(ys, ye)) || gt(y, fmax(ys, ye))) continue;
        double ix = (y - ys) * (xe - xs) / (ye - ys) + xs;
        if (fabs(ix - x) < EPS) return true;
        if (gt(ix, x)) cross++;
    }
    return cross % 2 == 1;
}

static double side(const double *qx, const double *qy, int i, int j) {
    return sqrt((qx[i] - qx[j]) * (qx[i] - qx[j]) + (qy[i] - qy[j]) * (qy[i] - qy[j]));
}

/* The matrix m (3x3, row-major) taking (w, h, 1) of the normalized rectangle to the quadrilateral
 * (Fluid's get_transform_matrix). False when the quadrilateral's mean height is 0 (its width in
 * the rectangle is then not defined). */
static bool quad_matrix(const double *qx, const double *qy, int th, int tw, double *m) {
    double eh = (side(qx, qy, 1, 2) + side(qx, qy, 3, 0)) / 2, ew = (side(qx, qy, 0, 1) + side(qx, qy, 2, 3)) / 2;
    double nh = th > 2 ? th : 2, nwr = round(ew * (nh - 1) / eh) + 1;
    if (!isfinite(nwr)) return false;
    double nw = fmax(2, fmin(nwr, tw));
    double dx1 = qx[1] - qx[2], dx2 = qx[3] - qx[2], dx3 = qx[0] - qx[1] + qx[2] - qx[3];
    double dy1 = qy[1] - qy[2], dy2 = qy[3] - qy[2], dy3 = qy[0] - qy[1] + qy[2] - qy[3];
    double den = dx1 * dy2 - dx2 * dy1 + 1e-5;
    m[6] = (dx3 * dy2 - dx2 * dy3) / den / (nw - 1);
    m[7] = (dx1 * dy3 - dx3 * dy1) / den / (nh - 1);
    m[8] = 1;
    m[3] = (qy[1] - qy[0] + m[6] * (nw - 1) * qy[1]) / (nw - 1);
    m[4] = (qy[3] - qy[0] + m[7] * (nh - 1) * qy[3]) / (nh - 1);
    m[5] = qy[0];
    m[0] = (qx[1] - qx[0] + m[6] * (nw - 1) * qx[1]) / (nw - 1);
    m[1] = (qx[3] - qx[0] + m[7] * (nh - 1) * qx[3]) / (nh - 1);
    m[2] = qx[0];
    return true;
}

/* A sample point: up to four cells (h * W + w, -1: none) and their weights. */
typedef struct Pt {
    int64_t idx[4];
    double w[4];
} Pt;

/* The point (x, y) of an H x W image sampled bilinearly as Fluid's: nothing beyond (-0.5,
 * size - 0.5) (EPS in), clamped to 0 from below and to the last cell from above. */
static void sample(double x, double y, int64_t H, int64_t W, Pt *p) {
    for (int q = 0; q < 4; q++) p->idx[q] = -1, p->w[q] = 0;
    if (!isfinite(x) || !isfinite(y) || ge(-0.5, x) || ge(x, (double)W - 0.5) || ge(-0.5, y) ||
        ge(y, (double)H - 0.5))
        return;
    if (ge(0, x)) x = 0;
    if (ge(0, y)) y = 0;
    int64_t xf = (int64_t)floor(x), yf = (int64_t)floor(y), xc = xf + 1, yc = yf + 1;
    if (xf >= W - 1) xc = xf = W - 1, x = (double)xf;
    if (yf >= H - 1) yc = yf = H - 1, y = (double)yf;
    double fx = x - (double)xf, fy = y - (double)yf;
    int64_t idx[4] = {yf * W + xf, yc * W + xf, yc * W + xc, yf * W + xc};
    double w[4] = {(1 - fx) * (1 - fy), (1 - fx) * fy, fx * fy, fx * (1 - fy)};
    for (int q = 0; q < 4; q++) p->idx[q] = idx[q], p->w[q] = w[q];
}

/* One ROI's th * tw points (ROI r's corners scaled). False: a degenerate quadrilateral. */
static bool roi_points(const FlTensor *rois, int64_t r, const FlPerspectiveAttrs *a, int64_t H, int64_t W, Pt *pts) {
    double qx[4], qy[4], m[9];
    for (int k = 0; k < 4; k++)
        qx[k] = fl_tensor_get(rois, r * 8 + 2 * k) * a->spatial_scale,
        qy[k] = fl_tensor_get(rois, r * 8 + 2 * k + 1) * a->spatial_scale;
    if (!quad_matrix(qx, qy, a->transformed_height, a->transformed_width, m)) return false;
    for (int h = 0; h < a->transformed_height; h++)
        for (int w = 0; w < a->transformed_width; w++) {
            Pt *p = pts + (int64_t)h * a->transformed_width + w;
            double u = m[0] * w + m[1] * h + m[2], v = m[3] * w + m[4] * h + m[5], z = m[6] * w + m[7] * h + m[8];
            double sx = u / z, sy = v / z;
            if (in_quad(sx, sy, qx, qy)) sample(sx, sy, H, W, p);
            else sample(NAN, NAN, H, W, p);
        }
    return true;
}

/* The points applied to one channel: gather into o (forward) or scatter do into dx (gradient). */
#define APPLY(T, NAME)                                                                                       \
    static void NAME(const Pt *pts, int64_t n, const T *x, T *o, const T *dout, T *dx) {                     \
        for (int64_t k = 0; k < n; k++)                                                                      \
            for (int q = 0; q < 4; q++) {                                                                    \
                if (pts[k].idx[q] < 0) continue;                                                             \
                if (dout) dx[pts[k].idx[q]] += (T)(pts[k].w[q] * dout[k]);                                   \
                else o[k] += (T)(pts[k].w[q] * x[pts[k].idx[q]]);                                            \
            }                                                                                                \
    }
APPLY(float, apply_f32)
APPLY(double, apply_f64)
#undef APPLY

static FlStatus run(FlErr *e, const FlTensor *x, const FlTensor *rois, const int64_t *off, int64_t nseq,
                    const FlPerspectiveAttrs *a, const FlTensor *dout, FlTensor *res) {
    const char *op = dout ? "roi_perspective_transform_grad" : "roi_perspective_transform";
    if (kneed_float(e, op, "X", x) || ksame_dtype(e, op, "X", x, "ROIs", rois)) return FL_ERROR;
    if (x->ndim != 4 || rois->ndim != 2 || rois->ne[1] != 8)
        return fl_err(e, "%s: X %s must be [N, C, H, W] and ROIs %s [R, 8] (x1, y1, ..., x4, y4)", op,
                      fl_tensor_shape(x).s, fl_tensor_shape(rois).s);
    if (a->transformed_height < 1 || a->transformed_width < 1 || !(a->spatial_scale > 0))
        return fl_err(e, "%s: bad attributes: transformed %d x %d, spatial_scale %g", op, a->transformed_height,
                      a->transformed_width, a->spatial_scale);
    int64_t N = x->ne[0], C = x->ne[1], H = x->ne[2], W = x->ne[3], R = rois->ne[0];
    int64_t th = a->transformed_height, tw = a->transformed_width, one[4] = {R, C, th, tw};
    if (!off || nseq != N || off[nseq] != R)
        return fl_err(e, "%s: ROIs %s need the offsets of their LoD, one sequence per image of X %s (found %lld)", op,
                      fl_tensor_shape(rois).s, fl_tensor_shape(x).s, (long long)(off ? nseq : 0));
    /* corners become cell positions: each must be finite, and scaled within 2^40 of the image */
    for (int64_t i = 0; i < R * 8; i++) {
        double v = fl_tensor_get(rois, i);
        if (!(fabs(v * a->spatial_scale) < 0x1p40))
            return fl_err(e, "%s: ROI %lld has the coordinate %g: corners must be finite and near the image", op,
                          (long long)(i / 8), v);
    }
    if (dout) {
        if (ksame_dtype(e, op, "X", x, "Out@GRAD", dout)) return FL_ERROR;
        if (dout->ndim != 4 || memcmp(dout->ne, one, sizeof one) != 0)
            return fl_err(e, "%s: Out@GRAD %s must be [%lld, %lld, %lld, %lld]", op, fl_tensor_shape(dout).s,
                          (long long)R, (long long)C, (long long)th, (long long)tw);
    }
    if (th * tw > (int64_t)1 << 28)
        return fl_err(e, "%s: transformed %lld x %lld is too large", op, (long long)th, (long long)tw);
    FlTensor r = FL_TENSOR_INIT;
    if (dout ? kalloc_like(e, op, &r, x) : kalloc(e, op, &r, x->dtype, 4, one)) return FL_ERROR;
    Pt *pts = R > 0 ? fl_xcalloc((size_t)(th * tw), sizeof *pts) : NULL;
    bool f32 = x->dtype == FL_DT_FLOAT32;
    int64_t img = H * W, n = th * tw;
    FlStatus st = FL_OK;
    for (int64_t b = 0; b < nseq && !st; b++)
        for (int64_t k = off[b]; k < off[b + 1]; k++) {
            if (!roi_points(rois, k, a, H, W, pts)) {
                st = fl_err(e, "%s: ROI %lld has a mean height of 0 (its left and right sides have no length): no "
                            "perspective transform", op, (long long)k);
                break;
            }
            for (int64_t c = 0; c < C; c++) {
                int64_t xo = (b * C + c) * img, oo = (k * C + c) * n;
                void *rd = fl_tensor_data(&r);
                const void *xd = fl_tensor_data(x), *gd = dout ? fl_tensor_data(dout) : NULL;
                if (f32 && dout) apply_f32(pts, n, NULL, NULL, (const float *)gd + oo, (float *)rd + xo);
                else if (f32) apply_f32(pts, n, (const float *)xd + xo, (float *)rd + oo, NULL, NULL);
                else if (dout) apply_f64(pts, n, NULL, NULL, (const double *)gd + oo, (double *)rd + xo);
                else apply_f64(pts, n, (const double *)xd + xo, (double *)rd + oo, NULL, NULL);
            }
        }
    free(pts);
    if (st) {
        fl_tensor_fini(&r);
        return FL_ERROR;
    }
    kout(res, &r);
    return FL_OK;
}

FlStatus fl_kernel_roi_perspective_transform(FlErr *e, const FlTensor *x, const FlTensor *rois, const int64_t *off,
                                             int64_t nseq, const FlPerspectiveAttrs *a, FlTensor *out) {
    return run(e, x, rois, off, nseq, a, NULL, out);
}

FlStatus fl_kernel_roi_perspective_transform_grad(FlErr *e, const FlTensor *x, const FlTensor *rois,
                                                  const int64_t *off, int64_t nseq, const FlTensor *dout,
                                                  const FlPerspectiveAttrs *a, FlTensor *dx) {
    if (khas(e, "roi_perspective_transform_grad", "Out@GRAD", dout)) return FL_ERROR;
    return run(e, x, rois, off, nseq, a, dout, dx);
}
