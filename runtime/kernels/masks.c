/* masks.c: generate_mask_labels (kernels_masks.h). The rasterization is COCO's polygon-to-mask
 * (rleFrPoly, as Fluid's mask_util.cc has it): the polygon's vertices at 5 times the grid, its
 * edges walked cell by cell, the crossings of each column's cell centres kept as run starts,
 * sorted, and decoded column-major. Coordinates are float, as in Fluid's float kernel, so a vertex
 * rounds to the same cell. */
#include "runtime/kernels/kernels_impl.h"

#include <float.h>
#include <math.h>

#include "runtime/kernels/kernels_masks.h"

static int cmp_u32(const void *a, const void *b) {
    uint32_t c = *(const uint32_t *)a, d = *(const uint32_t *)b;
    return c > d ? 1 : c < d ? -1 : 0;
}

/* The k points xy (x, y pairs, in cells) of a polygon into mask [h, w] (row-major, 0/1). */
static void poly_mask(const float *xy, int k, int h, int w, uint8_t *mask) {
    const double scale = 5;
    int *x = fl_xcalloc((size_t)k + 1, sizeof *x), *y = fl_xcalloc((size_t)k + 1, sizeof *y);
    for (int j = 0; j < k; j++)
        x[j] = (int)(scale * xy[2 * j] + .5), y[j] = (int)(scale * xy[2 * j + 1] + .5);
    x[k] = x[0], y[k] = y[0];
    int64_t m = 0;
    for (int j = 0; j < k; j++) {
        int dx = abs(x[j] - x[j + 1]), dy = abs(y[j] - y[j + 1]);
        m += (dx > dy ? dx : dy) + 1;
    }
    int *u = fl_xcalloc((size_t)m, sizeof *u), *v = fl_xcalloc((size_t)m, sizeof *v);
    m = 0;
    for (int j = 0; j < k; j++) { /* the edge's cells, walked along its longer side */
        int xs = x[j], xe = x[j + 1], ys = y[j], ye = y[j + 1];
        int dx = abs(xe - xs), dy = abs(ys - ye);
        bool flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
        if (flip) {
            int t = xs;
            xs = xe, xe = t, t = ys, ys = ye, ye = t;
        }
        double s = dx >= dy ? (double)(ye - ys) / dx : (double)(xe - xs) / dy;
        for (int d = 0; d <= (dx >= dy ? dx : dy); d++, m++) {
            int t = flip ? (dx >= dy ? dx : dy) - d : d;
            if (dx >= dy) u[m] = t + xs, v[m] = (int)(ys + s * t + .5);
            else v[m] = t + ys, u[m] = (int)(xs + s * t + .5);
        }
    }
    /* the crossings at the columns' centres, back on the grid */
    uint32_t *a = fl_xcalloc((size_t)m + 1, sizeof *a);
    int64_t na = 0;
    for (int64_t j = 1; j < m; j++) {
        if (u[j] == u[j - 1]) continue;
        double xd = (double)(u[j] < u[j - 1] ? u[j] : u[j] - 1);
        xd = (xd + .5) / scale - .5;
        if (floor(xd) != xd || xd < 0 || xd > w - 1) continue;
        double yd = (double)(v[j] < v[j - 1] ? v[j] : v[j - 1]);
        yd = (yd + .5) / scale - .5;
        yd = ceil(yd < 0 ? 0 : yd > h ? h : yd);
        a[na++] = (uint32_t)((int)xd * h + (int)yd);
    }
    a[na++] = (uint32_t)(h * w);
    qsort(a, (size_t)na, sizeof *a, cmp_u32);
    uint32_t p = 0;
    for (int64_t j = 0; j < na; j++) {
        uint32_t t = a[j];
        a[j] -= p, p = t;
    }
    /* run lengths (a zero run merges its neighbours), decoded column-major */
    uint32_t *b = fl_xcalloc((size_t)na, sizeof *b);
    int64_t nb = 0, j = 0;
    b[nb++] = a[j++];
    while (j < na) {
        if (a[j] > 0) {
            b[nb++] = a[j++];
        } else if (++j < na) {
            b[nb - 1] += a[j++];
        }
    }
    uint8_t val = 0;
    int64_t pos = 0;
    for (int64_t r = 0; r < nb; r++, val = !val)
        for (uint32_t q = 0; q < b[r] && pos < (int64_t)h * w; q++, pos++)
            mask[(pos % h) * w + pos / h] = val;
    free(x), free(y), free(u), free(v), free(a), free(b);
}

/* Object o's polygons (points segs[s..e) of each) in the box, the union at res x res into mask. */
static void object_mask(const FlMaskLabelsIn *in, const float *pts, int64_t o, const float *box, int res,
                        uint8_t *mask, uint8_t *tmp, float *buf) {
    float w = box[2] - box[0], h = box[3] - box[1];
    w = w > 1.f ? w : 1.f, h = h > 1.f ? h : 1.f;
    memset(mask, 0, (size_t)res * (size_t)res);
    for (int64_t pg = in->segm_off[1][o]; pg < in->segm_off[1][o + 1]; pg++) {
        int64_t s = in->segm_off[2][pg], k = in->segm_off[2][pg + 1] - s;
        for (int64_t i = 0; i < k; i++)
            buf[2 * i] = (pts[2 * (s + i)] - box[0]) * (float)res / w,
            buf[2 * i + 1] = (pts[2 * (s + i) + 1] - box[1]) * (float)res / h;
        poly_mask(buf, (int)k, res, res, tmp);
        for (int64_t q = 0; q < (int64_t)res * res; q++) mask[q] = mask[q] || tmp[q];
    }
}

/* Fluid's BboxOverlaps in float: the pixel IoU (both edges count). */
static float iou_px(const float *a, const float *b) {
    float iw = fminf(a[2], b[2]) - fmaxf(a[0], b[0]) + 1, ih = fminf(a[3], b[3]) - fmaxf(a[1], b[1]) + 1;
    float inter = (iw > 0 ? iw : 0) * (ih > 0 ? ih : 0);
    if (inter == 0) return 0;
    return inter / ((a[2] - a[0] + 1) * (a[3] - a[1] + 1) + (b[2] - b[0] + 1) * (b[3] - b[1] + 1) - inter);
}

/* Object o's box: the extent of its polygons' points (Fluid's Poly2Boxes, whose maxima start at
 * FLT_MIN, the least positive float, so an object left of or above 0 keeps that). */
static void object_box(const FlMaskLabelsIn *in, const float *pts, int64_t o, float *box) {
    box[0] = box[1] = FLT_MAX, box[2] = box[3] = FLT_MIN;
    for (int64_t q = in->segm_off[2][in->segm_off[1][o]]; q < in->segm_off[2][in->segm_off[1][o + 1]]; q++) {
        box[0] = fminf(box[0], pts[2 * q]), box[2] = fmaxf(box[2], pts[2 * q]);
        box[1] = fminf(box[1], pts[2 * q + 1]), box[3] = fmaxf(box[3], pts[2 * q + 1]);
    }
}

static int64_t iget(const FlTensor *t, int64_t i) { return (int64_t)fl_tensor_get(t, i); }

static FlStatus check_in(FlErr *e, const char *op, const FlMaskLabelsIn *in, int C, int res) {
    if (khas(e, op, "ImInfo", in->im_info) || khas(e, op, "GtClasses", in->gt_classes) ||
        khas(e, op, "IsCrowd", in->is_crowd) || khas(e, op, "GtSegms", in->segms) || khas(e, op, "Rois", in->rois) ||
        khas(e, op, "LabelsInt32", in->labels))
        return FL_ERROR;
    const FlTensor *f[3] = {in->im_info, in->segms, in->rois};
    const char *fn[3] = {"ImInfo", "GtSegms", "Rois"};
    for (int i = 0; i < 3; i++)
        if (f[i]->dtype != FL_DT_FLOAT32)
            return fl_err(e, "%s: %s %s is %s; float32 expected (Fluid's kernel is float32's)", op, fn[i],
                          fl_tensor_shape(f[i]).s, fl_dtype_name(f[i]->dtype));
    const FlTensor *t[3] = {in->gt_classes, in->is_crowd, in->labels};
    const char *tn[3] = {"GtClasses", "IsCrowd", "LabelsInt32"};
    for (int i = 0; i < 3; i++)
        if (!kis_int(t[i]->dtype))
            return fl_err(e, "%s: %s %s is %s; an int dtype expected", op, tn[i], fl_tensor_shape(t[i]).s,
                          fl_dtype_name(t[i]->dtype));
    int64_t N = in->nseq, G = fl_tensor_numel(in->gt_classes), R = in->rois->ndim ? in->rois->ne[0] : 0;
    if (in->im_info->ndim != 2 || in->im_info->ne[0] != N || in->im_info->ne[1] != 3 || in->segms->ndim != 2 ||
        in->segms->ne[1] != 2 || in->rois->ndim != 2 || in->rois->ne[1] != 4 || fl_tensor_numel(in->is_crowd) != G ||
        fl_tensor_numel(in->labels) != R)
        return fl_err(e, "%s: ImInfo %s, GtClasses %s, IsCrowd %s, GtSegms %s, Rois %s and LabelsInt32 %s must be "
                      "[%lld, 3], [G, 1], [G, 1], [S, 2], [R, 4] and [R, 1]", op, fl_tensor_shape(in->im_info).s,
                      fl_tensor_shape(in->gt_classes).s, fl_tensor_shape(in->is_crowd).s,
                      fl_tensor_shape(in->segms).s, fl_tensor_shape(in->rois).s, fl_tensor_shape(in->labels).s,
                      (long long)N);
    for (int64_t n = 0; n <= N; n++) {
        if (in->crowd_off[n] != in->gt_off[n] || in->segm_off[0][n] != in->gt_off[n])
            return fl_err(e, "%s: IsCrowd and GtSegms must hold as many objects per image as GtClasses: image %lld "
                          "starts at object %lld, %lld and %lld", op, (long long)(n ? n - 1 : 0),
                          (long long)in->gt_off[n], (long long)in->crowd_off[n], (long long)in->segm_off[0][n]);
        if (in->label_off[n] != in->roi_off[n])
            return fl_err(e, "%s: LabelsInt32 must be cut into images as Rois: offset %lld is %lld, not %lld", op,
                          (long long)n, (long long)in->label_off[n], (long long)in->roi_off[n]);
    }
    for (int64_t p = 0; p < in->n_poly; p++)
        if (in->segm_off[2][p] == in->segm_off[2][p + 1])
            return fl_err(e, "%s: GtSegms polygon %lld has no points", op, (long long)p);
    for (int64_t i = 0; i < R; i++)
        if (iget(in->labels, i) < 0 || iget(in->labels, i) >= C)
            return fl_err(e, "%s: LabelsInt32 row %lld is %lld, outside [0, num_classes %d)", op, (long long)i,
                          (long long)iget(in->labels, i), C);
    if (C < 1 || res < 1 || (int64_t)C * res * res > ((int64_t)1 << 28))
        return fl_err(e, "%s: bad attributes num_classes %d, resolution %d", op, C, res);
    return FL_OK;
}

FlStatus fl_kernel_generate_mask_labels(FlErr *e, const FlMaskLabelsIn *in, int num_classes, int resolution,
                                        FlTensor *mask_rois, FlTensor *has_mask, FlTensor *mask_int32,
                                        FlTensor *mask_lod) {
    const char *op = "generate_mask_labels";
    if (check_in(e, op, in, num_classes, resolution)) return FL_ERROR;
    int64_t N = in->nseq, R = in->rois->ne[0], MM = (int64_t)resolution * resolution, D = num_classes * MM;
    int64_t maxk = 0; /* the most points of a polygon */
    for (int64_t p = 0; p < in->n_poly; p++)
        if (in->segm_off[2][p + 1] - in->segm_off[2][p] > maxk) maxk = in->segm_off[2][p + 1] - in->segm_off[2][p];
    const float *pts = fl_tensor_data(in->segms), *rois = fl_tensor_data(in->rois), *info = fl_tensor_data(in->im_info);
    FlTensor t[4];
    for (int i = 0; i < 4; i++) t[i] = (FlTensor)FL_TENSOR_INIT;
    float *ob = fl_xcalloc((size_t)(4 * (in->n_obj + 1)), sizeof *ob);
    float *buf = fl_xcalloc((size_t)(2 * maxk + 2), sizeof *buf);
    uint8_t *mask = fl_xcalloc((size_t)MM, 1), *tmp = fl_xcalloc((size_t)MM, 1);
    int64_t *objs = fl_xcalloc((size_t)(in->n_obj + 1), sizeof *objs);
    FlStatus st = FL_ERROR;
    /* at most one row per RoI, and one for an image of background RoIs only */
    if (kalloc(e, op, &t[0], FL_DT_FLOAT32, 2, (int64_t[]){R, 4}) ||
        kalloc(e, op, &t[1], FL_DT_INT32, 2, (int64_t[]){R, 1}) ||
        kalloc(e, op, &t[2], FL_DT_INT32, 2, (int64_t[]){R, D}) ||
        kalloc(e, op, &t[3], FL_DT_INT64, 1, (int64_t[]){N + 1}))
        goto done;
    float *orois = fl_tensor_data(&t[0]);
    int32_t *ohas = fl_tensor_data(&t[1]), *omask = fl_tensor_data(&t[2]);
    int64_t *olod = fl_tensor_data(&t[3]), K = 0;
    for (int64_t q = 0; q < R * D; q++) omask[q] = -1;
    olod[0] = 0;
    for (int64_t n = 0; n < N; n++) {
        int64_t r0 = in->roi_off[n], r1 = in->roi_off[n + 1], nobj = 0, nfg = 0;
        float scale = info[3 * n + 2];
        if (r0 < r1 && !(scale > 0)) {
            fl_err(e, "%s: ImInfo row %lld has scale %g; it must be > 0", op, (long long)n, (double)scale);
            goto done;
        }
        for (int64_t g = in->gt_off[n]; g < in->gt_off[n + 1]; g++)
            if (iget(in->gt_classes, g) > 0 && iget(in->is_crowd, g) == 0) {
                object_box(in, pts, g, ob + 4 * nobj);
                objs[nobj++] = g;
            }
        for (int64_t r = r0; r < r1; r++) {
            int64_t c = iget(in->labels, r);
            if (c <= 0) continue;
            if (nobj == 0) {
                fl_err(e, "%s: image %lld has foreground RoIs (row %lld of class %lld) but no object to take a mask "
                       "from (a non-crowd object of class > 0)", op, (long long)n, (long long)r, (long long)c);
                goto done;
            }
            float box[4];
            for (int q = 0; q < 4; q++) box[q] = rois[4 * r + q] / scale;
            int64_t best = 0;
            float top = FLT_MIN;
            for (int64_t j = 0; j < nobj; j++) {
                float v = iou_px(box, ob + 4 * j);
                if (v > top) top = v, best = j;
            }
            object_mask(in, pts, objs[best], box, resolution, mask, tmp, buf);
            for (int q = 0; q < 4; q++) orois[4 * K + q] = box[q] * scale;
            ohas[K] = (int32_t)(r - r0);
            for (int64_t q = 0; q < MM; q++) omask[K * D + c * MM + q] = mask[q];
            K++, nfg++;
        }
        if (nfg == 0 && r0 < r1) { /* no foreground: the first RoI, class 0, all -1 (Fluid's) */
            for (int q = 0; q < 4; q++) orois[4 * K + q] = rois[4 * r0 + q] / scale * scale;
            ohas[K++] = 0;
        }
        olod[n + 1] = K;
    }
    t[0].ne[0] = t[1].ne[0] = t[2].ne[0] = K; /* views of the leading rows, which hold the result */
    kout(mask_rois, &t[0]), kout(has_mask, &t[1]), kout(mask_int32, &t[2]), kout(mask_lod, &t[3]);
    st = FL_OK;
done:
    for (int i = 0; i < 4; i++) fl_tensor_fini(&t[i]);
    free(ob), free(buf), free(mask), free(tmp), free(objs);
    return st;
}
