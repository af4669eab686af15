/* detection.c: the box kernels of Fluid's detection layers (kernels_detection.h): prior boxes
 * (SSD's prior_box and density_prior_box), Faster R-CNN's anchors, box coding and its gradient,
 * IoU matrices, clipping to the image, polygon geometry, the decoder-and-assign of Cascade R-CNN
 * and YOLOv3's boxes. Each computes in double on copies of its inputs and writes its outputs in
 * the inputs' float dtype; the formulas (which edges count, where centres lie, which roundings)
 * are those of Fluid's operators, so a box here is the box Fluid makes. */
#include "runtime/kernels/detection_impl.h"

/* ---- prior_box ---- */

/* The expanded aspect ratios (at most 1 + 2 * n): 1, then each ratio not within 1e-6 of one
 * already there, followed by its inverse with flip. */
static int expand_ratios(const double *ar, int n, bool flip, double *out) {
    int k = 0;
    out[k++] = 1.0;
    for (int i = 0; i < n; i++) {
        bool seen = false;
        for (int j = 0; j < k && !seen; j++) seen = fabs(ar[i] - out[j]) < 1e-6;
        if (seen) continue;
        out[k++] = ar[i];
        if (flip) out[k++] = 1.0 / ar[i];
    }
    return k;
}

int fl_prior_box_count(const FlPriorBoxAttrs *a) {
    double tmp[1 + 2 * 64];
    int nar = expand_ratios(a->aspect_ratios, a->n_ar < 64 ? a->n_ar : 64, a->flip, tmp);
    return nar * a->n_min + a->n_max;
}

/* The feature map's [H, W] and the image's from NCHW inputs. */
static FlStatus map_sizes(FlErr *e, const char *op, const FlTensor *input, const FlTensor *image, int64_t *H,
                          int64_t *W, int64_t *IH, int64_t *IW) {
    if (khas(e, op, "Input", input)) return FL_ERROR;
    if (input->ndim != 4) return fl_err(e, "%s: Input %s must be NCHW", op, fl_tensor_shape(input).s);
    *H = input->ne[2], *W = input->ne[3];
    if (!image) return FL_OK;
    if (khas(e, op, "Image", image)) return FL_ERROR;
    if (image->ndim != 4) return fl_err(e, "%s: Image %s must be NCHW", op, fl_tensor_shape(image).s);
    *IH = image->ne[2], *IW = image->ne[3];
    return FL_OK;
}

/* The sizes of a prior kernel's float Input and Image, and its steps: step_w and step_h, or the
 * image size over the feature map's when either is 0. */
static FlStatus prior_grid(FlErr *e, const char *op, const FlTensor *input, const FlTensor *image, double step_w,
                           double step_h, int64_t *H, int64_t *W, int64_t *IH, int64_t *IW, double *sw, double *sh) {
    if (map_sizes(e, op, input, image, H, W, IH, IW) || kneed_float(e, op, "Input", input)) return FL_ERROR;
    *sw = step_w, *sh = step_h;
    if (step_w == 0 || step_h == 0) *sw = (double)*IW / (double)*W, *sh = (double)*IH / (double)*H;
    return FL_OK;
}

/* Writes the box of centre (cx, cy) and half sizes (bw, bh) over the image size at b. */
static void put_box(double *b, double cx, double cy, double bw, double bh, double iw, double ih) {
    b[0] = (cx - bw) / iw;
    b[1] = (cy - bh) / ih;
    b[2] = (cx + bw) / iw;
    b[3] = (cy + bh) / ih;
}

/* Variances [rows, 4]: every row the 4 values. */
static FlStatus fill_variances(FlErr *e, const char *op, FlTensor *vars, FlDType dt, int nd, const int64_t *ne,
                               const double *v, int64_t rows) {
    double *d;
    if (dscratch(e, op, rows * 4, &d)) return FL_ERROR;
    for (int64_t i = 0; i < rows; i++) memcpy(d + 4 * i, v, 4 * sizeof *d);
    FlTensor t = FL_TENSOR_INIT;
    FlStatus st = dnew(e, op, &t, dt, nd, ne, d);
    free(d);
    if (st) return FL_ERROR;
    kout(vars, &t);
    return FL_OK;
}

/* The boxes d (n doubles, taken and freed) clipped to [0, 1] with clip, as `boxes` of shape ne in
 * dtype dt, and their variances: the common end of the prior and anchor kernels. */
static FlStatus put_boxes(FlErr *e, const char *op, double *d, int64_t n, bool clip, FlDType dt, int nd,
                          const int64_t *ne, const double *var, FlTensor *boxes, FlTensor *variances) {
    if (clip)
        for (int64_t i = 0; i < n; i++) d[i] = dmin(dmax(d[i], 0), 1);
    FlTensor t = FL_TENSOR_INIT;
    FlStatus st = dnew(e, op, &t, dt, nd, ne, d);
    free(d);
    if (st || fill_variances(e, op, variances, dt, nd, ne, var, n / 4)) {
        fl_tensor_fini(&t);
        return FL_ERROR;
    }
    kout(boxes, &t);
    return FL_OK;
}

FlStatus fl_kernel_prior_box(FlErr *e, const FlTensor *input, const FlTensor *image, const FlPriorBoxAttrs *a,
                             FlTensor *boxes, FlTensor *variances) {
    const char *op = "prior_box";
    int64_t H = 0, W = 0, IH = 0, IW = 0; /* set by prior_grid (initialised for -O3's -Wmaybe-uninitialized) */
    double sw, sh, *d;
    if (a->n_ar > 64) return fl_err(e, "%s: at most 64 aspect ratios, found %d", op, a->n_ar);
    if (prior_grid(e, op, input, image, a->step_w, a->step_h, &H, &W, &IH, &IW, &sw, &sh)) return FL_ERROR;
    double ars[1 + 2 * 64];
    int nar = expand_ratios(a->aspect_ratios, a->n_ar, a->flip, ars);
    int64_t P = fl_prior_box_count(a), n = H * W * P * 4;
    if (dscratch(e, op, n, &d)) return FL_ERROR;
    double *b = d;
    for (int64_t h = 0; h < H; h++)
        for (int64_t w = 0; w < W; w++) {
            double cx = ((double)w + a->offset) * sw, cy = ((double)h + a->offset) * sh;
            for (int s = 0; s < a->n_min; s++) {
                double mn = a->min_sizes[s];
                if (a->min_max_aspect_ratios_order) {
                    put_box(b, cx, cy, mn / 2, mn / 2, (double)IW, (double)IH), b += 4;
                    if (a->n_max) {
                        double m = sqrt(mn * a->max_sizes[s]) / 2;
                        put_box(b, cx, cy, m, m, (double)IW, (double)IH), b += 4;
                    }
                    for (int r = 0; r < nar; r++) {
                        if (fabs(ars[r] - 1.0) < 1e-6) continue;
                        put_box(b, cx, cy, mn * sqrt(ars[r]) / 2, mn / sqrt(ars[r]) / 2, (double)IW, (double)IH);
                        b += 4;
                    }
                } else {
                    for (int r = 0; r < nar; r++) {
                        put_box(b, cx, cy, mn * sqrt(ars[r]) / 2, mn / sqrt(ars[r]) / 2, (double)IW, (double)IH);
                        b += 4;
                    }
                    if (a->n_max) {
                        double m = sqrt(mn * a->max_sizes[s]) / 2;
                        put_box(b, cx, cy, m, m, (double)IW, (double)IH), b += 4;
                    }
                }
            }
        }
    return put_boxes(e, op, d, n, a->clip, input->dtype, 4, (int64_t[]){H, W, P, 4}, a->variances, boxes,
                     variances);
}

/* ---- density_prior_box ---- */

int64_t fl_density_prior_box_count(const FlDensityPriorBoxAttrs *a) {
    int64_t n = 0;
    for (int i = 0; i < a->n_sizes; i++) n += a->n_ratios * a->densities[i] * a->densities[i];
    return n;
}

FlStatus fl_kernel_density_prior_box(FlErr *e, const FlTensor *input, const FlTensor *image,
                                     const FlDensityPriorBoxAttrs *a, FlTensor *boxes, FlTensor *variances) {
    const char *op = "density_prior_box";
    int64_t H = 0, W = 0, IH = 0, IW = 0;
    double sw, sh;
    if (prior_grid(e, op, input, image, a->step_w, a->step_h, &H, &W, &IH, &IW, &sw, &sh)) return FL_ERROR;
    int64_t P = fl_density_prior_box_count(a), n = H * W * P * 4;
    /* Fluid's integer grid: the mean step truncated, then divided by the density in ints */
    int64_t step_avg = (int64_t)((sw + sh) * 0.5);
    double *d;
    if (dscratch(e, op, n, &d)) return FL_ERROR;
    double *b = d;
    for (int64_t h = 0; h < H; h++)
        for (int64_t w = 0; w < W; w++) {
            double cx = ((double)w + a->offset) * sw, cy = ((double)h + a->offset) * sh;
            for (int s = 0; s < a->n_sizes; s++) {
                int64_t dens = a->densities[s], shift = step_avg / dens;
                for (int r = 0; r < a->n_ratios; r++) {
                    double sq = sqrt(a->fixed_ratios[r]);
                    double bw = a->fixed_sizes[s] * sq, bh = a->fixed_sizes[s] / sq;
                    double dcx = cx - (double)step_avg / 2. + (double)shift / 2.;
                    double dcy = cy - (double)step_avg / 2. + (double)shift / 2.;
                    for (int64_t di = 0; di < dens; di++)
                        for (int64_t dj = 0; dj < dens; dj++) {
                            double x = dcx + (double)(dj * shift), y = dcy + (double)(di * shift);
                            b[0] = dmax((x - bw / 2.) / (double)IW, 0.);
                            b[1] = dmax((y - bh / 2.) / (double)IH, 0.);
                            b[2] = dmin((x + bw / 2.) / (double)IW, 1.);
                            b[3] = dmin((y + bh / 2.) / (double)IH, 1.);
                            b += 4;
                        }
                }
            }
        }
    int64_t ne4[4] = {H, W, P, 4}, ne2[2] = {H * W * P, 4};
    if (a->flatten_to_2d) return put_boxes(e, op, d, n, a->clip, input->dtype, 2, ne2, a->variances, boxes, variances);
    return put_boxes(e, op, d, n, a->clip, input->dtype, 4, ne4, a->variances, boxes, variances);
}

/* ---- anchor_generator ---- */

FlStatus fl_kernel_anchor_generator(FlErr *e, const FlTensor *input, const FlAnchorAttrs *a, FlTensor *anchors,
                                    FlTensor *variances) {
    const char *op = "anchor_generator";
    int64_t H = 0, W = 0; /* set by map_sizes (initialised for -O3's -Wmaybe-uninitialized) */
    if (map_sizes(e, op, input, NULL, &H, &W, NULL, NULL) || kneed_float(e, op, "Input", input)) return FL_ERROR;
    int64_t A = (int64_t)a->n_ratios * a->n_sizes, n = H * W * A * 4;
    double sw = a->stride[0], sh = a->stride[1];
    double *d;
    if (dscratch(e, op, n, &d)) return FL_ERROR;
    double *b = d;
    for (int64_t h = 0; h < H; h++)
        for (int64_t w = 0; w < W; w++) {
            double xc = (double)w * sw + a->offset * (sw - 1), yc = (double)h * sh + a->offset * (sh - 1);
            for (int r = 0; r < a->n_ratios; r++)
                for (int s = 0; s < a->n_sizes; s++) {
                    double ar = a->aspect_ratios[r], size = a->anchor_sizes[s];
                    double base_w = round(sqrt(sw * sh / ar)), base_h = round(base_w * ar);
                    double aw = size / sw * base_w, ah = size / sh * base_h;
                    b[0] = xc - 0.5 * (aw - 1);
                    b[1] = yc - 0.5 * (ah - 1);
                    b[2] = xc + 0.5 * (aw - 1);
                    b[3] = yc + 0.5 * (ah - 1);
                    b += 4;
                }
        }
    return put_boxes(e, op, d, n, false, input->dtype, 4, (int64_t[]){H, W, A, 4}, a->variances, anchors,
                     variances);
}

/* ---- iou_similarity ---- */

/* The IoU of iou_similarity (Fluid's IOUSimilarity): normalized areas (area2 b's, computed once
 * per box), the intersection's sides floored at 0; an empty union gives 0 (where Fluid divides 0
 * by 0). */
static double iou_sim(const double *a, const double *b, double area2) {
    double area1 = (a[3] - a[1]) * (a[2] - a[0]);
    double ih = dmax(dmin(a[3], b[3]) - dmax(a[1], b[1]), 0), iw = dmax(dmin(a[2], b[2]) - dmax(a[0], b[0]), 0);
    double inter = iw * ih, uni = area1 + area2 - inter;
    return uni != 0 ? inter / uni : 0;
}

/* Out is written row by row in its dtype (no [N, M] of doubles: 8,000 boxes against themselves
 * are 64M values; tests/bench/bench_nms.sh). */
FlStatus fl_kernel_iou_similarity(FlErr *e, const FlTensor *x, const FlTensor *y, FlTensor *out) {
    const char *op = "iou_similarity";
    if (kboxes(e, op, "X", x) || kboxes(e, op, "Y", y) || ksame_dtype(e, op, "X", x, "Y", y)) return FL_ERROR;
    if (x->ndim != 2 || y->ndim != 2)
        return fl_err(e, "%s: X %s and Y %s must be [N, 4] and [M, 4]", op, fl_tensor_shape(x).s, fl_tensor_shape(y).s);
    int64_t N = x->ne[0], M = y->ne[0];
    double *xd = NULL, *yd = NULL, *area = NULL;
    FlStatus st = FL_ERROR;
    FlTensor t = FL_TENSOR_INIT;
    if (dload(e, op, x, &xd) || dload(e, op, y, &yd) || dscratch(e, op, M, &area) ||
        kalloc_raw(e, op, &t, x->dtype, 2, (int64_t[]){N, M}))
        goto done;
    for (int64_t j = 0; j < M; j++) {
        const double *b = yd + 4 * j;
        area[j] = (b[3] - b[1]) * (b[2] - b[0]);
    }
    void *o = fl_tensor_data(&t);
    for (int64_t i = 0; i < N; i++) {
        const double *a = xd + 4 * i;
        switch (t.dtype) { /* kboxes took floats only */
        case FL_DT_FLOAT32:
            for (int64_t j = 0; j < M; j++) ((float *)o)[i * M + j] = (float)iou_sim(a, yd + 4 * j, area[j]);
            break;
        case FL_DT_FLOAT64:
            for (int64_t j = 0; j < M; j++) ((double *)o)[i * M + j] = iou_sim(a, yd + 4 * j, area[j]);
            break;
        case FL_DT_INT32:
        case FL_DT_INT64:
        case FL_DT_FLOAT16:
        case FL_DT_INT8:
        case FL_DT_UINT8:
        case FL_DT_BOOL:
        case FL_DT_COUNT: FL_UNREACHABLE();
        }
    }
    kout(out, &t);
    st = FL_OK;
done:
    if (st != FL_OK) fl_tensor_fini(&t);
    free(xd), free(yd), free(area);
    return st;
}

/* ---- box_coder ---- */

FlBoxCode fl_box_code_find(const char *name) {
    if (!strcmp(name, "encode_center_size")) return FL_BOX_ENCODE_CENTER_SIZE;
    if (!strcmp(name, "decode_center_size")) return FL_BOX_DECODE_CENTER_SIZE;
    return FL_BOX_CODE_COUNT;
}

typedef struct Coder {
    int64_t N, M;      /* rows, columns of the output [N, M, 4] */
    bool encode;
    double pixel;      /* 1 for pixel boxes (both edges count), 0 for normalized ones */
    int axis;
    double *prior, *pvar, *target; /* double copies; pvar NULL without PriorBoxVar */
    const double *variance;        /* the attribute's 4 values, or NULL */
} Coder;

/* The prior of output row i, column j, and its variance (4 values). */
static const double *coder_prior(const Coder *k, int64_t i, int64_t j, const double **var) {
    static const double ones[4] = {1, 1, 1, 1};
    int64_t p = k->encode || k->axis == 0 ? j : i;
    *var = k->pvar ? k->pvar + 4 * p : k->variance ? k->variance : ones;
    return k->prior + 4 * p;
}

static FlStatus coder_init(FlErr *e, const char *op, Coder *k, const FlTensor *prior, const FlTensor *prior_var,
                           const FlTensor *target, FlBoxCode code, bool normalized, int axis, const double *variance) {
    memset(k, 0, sizeof *k);
    if (kboxes(e, op, "PriorBox", prior) || kboxes(e, op, "TargetBox", target) ||
        ksame_dtype(e, op, "PriorBox", prior, "TargetBox", target))
        return FL_ERROR;
    if (prior->ndim != 2) return fl_err(e, "%s: PriorBox %s must be [M, 4]", op, fl_tensor_shape(prior).s);
    if (prior_var && (ksame(e, op, "PriorBox", prior, "PriorBoxVar", prior_var))) return FL_ERROR;
    k->encode = code == FL_BOX_ENCODE_CENTER_SIZE;
    k->pixel = normalized ? 0 : 1;
    k->axis = axis;
    k->variance = variance;
    if (k->encode) {
        if (target->ndim != 2)
            return fl_err(e, "%s: encode_center_size needs TargetBox [N, 4], found %s", op, fl_tensor_shape(target).s);
        k->N = target->ne[0], k->M = prior->ne[0];
    } else {
        if (target->ndim != 3)
            return fl_err(e, "%s: decode_center_size needs TargetBox [N, M, 4], found %s", op,
                          fl_tensor_shape(target).s);
        if (axis != 0 && axis != 1) return fl_err(e, "%s: axis must be 0 or 1, found %d", op, axis);
        int64_t want = target->ne[axis == 0 ? 1 : 0];
        if (prior->ne[0] != want)
            return fl_err(e, "%s: PriorBox %s must have %lld rows for TargetBox %s with axis %d", op,
                          fl_tensor_shape(prior).s, (long long)want, fl_tensor_shape(target).s, axis);
        k->N = target->ne[0], k->M = target->ne[1];
    }
    if (dload(e, op, prior, &k->prior) || (prior_var && dload(e, op, prior_var, &k->pvar)) ||
        dload(e, op, target, &k->target))
        return FL_ERROR;
    return FL_OK;
}

static void coder_fini(Coder *k) { free(k->prior), free(k->pvar), free(k->target); }

/* Centre and size of a box (pixel boxes count both edges). */
static void center_size(const double *b, double pixel, double *cx, double *cy, double *w, double *h) {
    *w = b[2] - b[0] + pixel;
    *h = b[3] - b[1] + pixel;
    *cx = (b[2] + b[0]) / 2;
    *cy = (b[3] + b[1]) / 2;
}

FlStatus fl_kernel_box_coder(FlErr *e, const FlTensor *prior, const FlTensor *prior_var, const FlTensor *target,
                             FlBoxCode code, bool normalized, int axis, const double *variance, FlTensor *out) {
    const char *op = "box_coder";
    Coder k;
    double *o = NULL;
    FlStatus st = FL_ERROR;
    if (coder_init(e, op, &k, prior, prior_var, target, code, normalized, axis, variance) ||
        dscratch(e, op, k.N * k.M * 4, &o))
        goto done;
    for (int64_t i = 0; i < k.N; i++)
        for (int64_t j = 0; j < k.M; j++) {
            const double *v, *p = coder_prior(&k, i, j, &v);
            double pcx, pcy, pw, ph, *r = o + (i * k.M + j) * 4;
            center_size(p, k.pixel, &pcx, &pcy, &pw, &ph);
            if (k.encode) {
                double tcx, tcy, tw, th;
                center_size(k.target + 4 * i, k.pixel, &tcx, &tcy, &tw, &th);
                r[0] = (tcx - pcx) / pw / v[0];
                r[1] = (tcy - pcy) / ph / v[1];
                r[2] = log(fabs(tw / pw)) / v[2];
                r[3] = log(fabs(th / ph)) / v[3];
            } else {
                const double *t = k.target + (i * k.M + j) * 4;
                double cx = v[0] * t[0] * pw + pcx, cy = v[1] * t[1] * ph + pcy;
                double w = exp(v[2] * t[2]) * pw, h = exp(v[3] * t[3]) * ph;
                r[0] = cx - w / 2;
                r[1] = cy - h / 2;
                r[2] = cx + w / 2 - k.pixel;
                r[3] = cy + h / 2 - k.pixel;
            }
        }
    FlTensor t = FL_TENSOR_INIT;
    if (dnew(e, op, &t, target->dtype, 3, (int64_t[]){k.N, k.M, 4}, o)) goto done;
    kout(out, &t);
    st = FL_OK;
done:
    coder_fini(&k);
    free(o);
    return st;
}

/* The chain rule through one output box r = f(target t, prior p): dt and dp (4 each) get
 * dr's share. */
static void coder_back(const Coder *k, const double *t, const double *p, const double *v, const double *dr,
                       double *dt, double *dp) {
    double pcx, pcy, pw, ph;
    center_size(p, k->pixel, &pcx, &pcy, &pw, &ph);
    if (k->encode) {
        double tcx, tcy, tw, th;
        center_size(t, k->pixel, &tcx, &tcy, &tw, &th);
        /* r0 = (tcx - pcx) / (pw v0): tcx = (t0 + t2) / 2, pcx = (p0 + p2) / 2, pw = p2 - p0 + pixel */
        double gx = dr[0] / (pw * v[0]), gy = dr[1] / (ph * v[1]);
        dt[0] += 0.5 * gx, dt[2] += 0.5 * gx, dt[1] += 0.5 * gy, dt[3] += 0.5 * gy;
        double ox = (tcx - pcx) / pw, oy = (tcy - pcy) / ph;
        dp[0] += gx * (-0.5 + ox), dp[2] += gx * (-0.5 - ox);
        dp[1] += gy * (-0.5 + oy), dp[3] += gy * (-0.5 - oy);
        /* r2 = log|tw / pw| / v2 */
        double gw = dr[2] / v[2], gh = dr[3] / v[3];
        dt[2] += gw / tw, dt[0] -= gw / tw, dt[3] += gh / th, dt[1] -= gh / th;
        dp[2] -= gw / pw, dp[0] += gw / pw, dp[3] -= gh / ph, dp[1] += gh / ph;
    } else {
        double ew = exp(v[2] * t[2]), eh = exp(v[3] * t[3]), w = ew * pw, h = eh * ph;
        /* r0 = cx - w/2, r2 = cx + w/2 - pixel: cx = v0 t0 pw + pcx, w = exp(v2 t2) pw */
        double gcx = dr[0] + dr[2], gw = (dr[2] - dr[0]) / 2, gcy = dr[1] + dr[3], gh = (dr[3] - dr[1]) / 2;
        dt[0] += gcx * v[0] * pw, dt[2] += gw * v[2] * w;
        dt[1] += gcy * v[1] * ph, dt[3] += gh * v[3] * h;
        /* d cx / d pw = v0 t0, d pcx / d p0 = d pcx / d p2 = 1/2, d pw / d p2 = 1 = -d pw / d p0 */
        double gpw = gcx * v[0] * t[0] + gw * ew, gph = gcy * v[1] * t[1] + gh * eh;
        dp[0] += gcx / 2 - gpw, dp[2] += gcx / 2 + gpw;
        dp[1] += gcy / 2 - gph, dp[3] += gcy / 2 + gph;
    }
}

FlStatus fl_kernel_box_coder_grad(FlErr *e, const FlTensor *prior, const FlTensor *prior_var, const FlTensor *target,
                                  const FlTensor *dout, FlBoxCode code, bool normalized, int axis,
                                  const double *variance, FlTensor *dtarget, FlTensor *dprior) {
    const char *op = "box_coder_grad";
    if (!dtarget && !dprior) return FL_OK;
    Coder k;
    double *dr = NULL, *dt = NULL, *dp = NULL;
    FlStatus st = FL_ERROR;
    FlTensor a = FL_TENSOR_INIT, b = FL_TENSOR_INIT;
    if (coder_init(e, op, &k, prior, prior_var, target, code, normalized, axis, variance)) goto done;
    if (ksame_dtype(e, op, "TargetBox", target, "OutputBox@GRAD", dout)) goto done;
    if (fl_tensor_numel(dout) != k.N * k.M * 4) {
        fl_err(e, "%s: OutputBox@GRAD %s must be [%lld, %lld, 4]", op, fl_tensor_shape(dout).s, (long long)k.N,
               (long long)k.M);
        goto done;
    }
    int64_t nt = fl_tensor_numel(target), np = fl_tensor_numel(prior);
    if (dload(e, op, dout, &dr) || dscratch(e, op, nt, &dt) || dscratch(e, op, np, &dp)) goto done;
    memset(dt, 0, (size_t)nt * sizeof *dt);
    memset(dp, 0, (size_t)np * sizeof *dp);
    for (int64_t i = 0; i < k.N; i++)
        for (int64_t j = 0; j < k.M; j++) {
            const double *v, *p = coder_prior(&k, i, j, &v);
            int64_t pi = (p - k.prior) / 4, ti = k.encode ? i : i * k.M + j;
            coder_back(&k, k.target + 4 * ti, p, v, dr + (i * k.M + j) * 4, dt + 4 * ti, dp + 4 * pi);
        }
    if ((dtarget && dnew(e, op, &a, target->dtype, target->ndim, target->ne, dt)) ||
        (dprior && dnew(e, op, &b, prior->dtype, prior->ndim, prior->ne, dp)))
        goto done;
    kout(dtarget, &a);
    kout(dprior, &b);
    st = FL_OK;
done:
    fl_tensor_fini(&a), fl_tensor_fini(&b);
    coder_fini(&k);
    free(dr), free(dt), free(dp);
    return st;
}

/* ---- box_clip ---- */

FlStatus fl_kernel_box_clip(FlErr *e, const FlTensor *input, const FlTensor *im_info, const int64_t *off,
                            int64_t nseq, FlTensor *out) {
    const char *op = "box_clip";
    if (kboxes(e, op, "Input", input) || kneed_float(e, op, "ImInfo", im_info) ||
        ksame_dtype(e, op, "Input", input, "ImInfo", im_info))
        return FL_ERROR;
    if (im_info->ndim != 2 || im_info->ne[1] != 3)
        return fl_err(e, "%s: ImInfo %s must be [N, 3] (height, width, scale)", op, fl_tensor_shape(im_info).s);
    int64_t n = fl_tensor_numel(input) / 4, rows = input->ne[0];
    int64_t images = off ? nseq : rows, per = off ? 0 : (rows ? n / rows : 0);
    if (off && koffsets(e, op, "Input", off, nseq, rows)) return FL_ERROR;
    if (images > im_info->ne[0])
        return fl_err(e, "%s: Input %s holds %lld images but ImInfo %s has %lld rows", op, fl_tensor_shape(input).s,
                      (long long)images, fl_tensor_shape(im_info).s, (long long)im_info->ne[0]);
    double *d = NULL, *info = NULL;
    FlStatus st = FL_ERROR;
    if (dload(e, op, input, &d) || dload(e, op, im_info, &info)) goto done;
    int64_t row_boxes = rows ? n / rows : 0; /* boxes per row of Input */
    for (int64_t img = 0; img < images; img++) {
        double W = round(info[3 * img + 1] / info[3 * img + 2]), H = round(info[3 * img] / info[3 * img + 2]);
        int64_t b0 = off ? off[img] * row_boxes : img * per, b1 = off ? off[img + 1] * row_boxes : (img + 1) * per;
        for (int64_t b = b0; b < b1; b++)
            for (int k = 0; k < 4; k++) {
                double lim = (k % 2 ? H : W) - 1;
                d[4 * b + k] = dmax(dmin(d[4 * b + k], lim), 0);
            }
    }
    FlTensor t = FL_TENSOR_INIT;
    if (dnew(e, op, &t, input->dtype, input->ndim, input->ne, d)) goto done;
    kout(out, &t);
    st = FL_OK;
done:
    free(d), free(info);
    return st;
}

/* ---- polygon_box_transform ---- */

FlStatus fl_kernel_polygon_box_transform(FlErr *e, const FlTensor *input, FlTensor *out) {
    const char *op = "polygon_box_transform";
    if (kneed_float(e, op, "Input", input)) return FL_ERROR;
    if (input->ndim != 4 || input->ne[1] % 2)
        return fl_err(e, "%s: Input %s must be [N, 2K, H, W] (an even number of geometry channels)", op,
                      fl_tensor_shape(input).s);
    int64_t N = input->ne[0], C = input->ne[1], H = input->ne[2], W = input->ne[3];
    double *d;
    if (dload(e, op, input, &d)) return FL_ERROR;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++) {
                    double *v = d + ((n * C + c) * H + h) * W + w;
                    *v = (double)(c % 2 ? h : w) * 4 - *v;
                }
    FlTensor t = FL_TENSOR_INIT;
    FlStatus st = dnew(e, op, &t, input->dtype, 4, input->ne, d);
    free(d);
    if (st) return FL_ERROR;
    kout(out, &t);
    return FL_OK;
}

/* ---- box_decoder_and_assign ---- */

FlStatus fl_kernel_box_decoder_and_assign(FlErr *e, const FlTensor *prior, const FlTensor *prior_var,
                                          const FlTensor *target, const FlTensor *score, double box_clip,
                                          FlTensor *decode, FlTensor *assign) {
    const char *op = "box_decoder_and_assign";
    if (kboxes(e, op, "PriorBox", prior) || ksame_dtype(e, op, "PriorBox", prior, "PriorBoxVar", prior_var) ||
        ksame_dtype(e, op, "PriorBox", prior, "TargetBox", target) ||
        ksame_dtype(e, op, "PriorBox", prior, "BoxScore", score))
        return FL_ERROR;
    if (prior->ndim != 2 || fl_tensor_numel(prior_var) != 4 || score->ndim != 2 || target->ndim != 2 ||
        target->ne[0] != prior->ne[0] || score->ne[0] != prior->ne[0] || target->ne[1] != 4 * score->ne[1])
        return fl_err(e, "%s: PriorBox %s, PriorBoxVar %s, TargetBox %s and BoxScore %s must be [N, 4], [4], "
                         "[N, C * 4] and [N, C]",
                      op, fl_tensor_shape(prior).s, fl_tensor_shape(prior_var).s, fl_tensor_shape(target).s,
                      fl_tensor_shape(score).s);
    int64_t N = prior->ne[0], C = score->ne[1];
    double *p = NULL, *v = NULL, *t = NULL, *s = NULL, *dec = NULL, *as = NULL;
    FlStatus st = FL_ERROR;
    FlTensor a = FL_TENSOR_INIT, b = FL_TENSOR_INIT;
    if (dload(e, op, prior, &p) || dload(e, op, prior_var, &v) || dload(e, op, target, &t) ||
        dload(e, op, score, &s) || dscratch(e, op, N * C * 4, &dec) || dscratch(e, op, N * 4, &as))
        goto done;
    for (int64_t i = 0; i < N; i++) {
        const double *pb = p + 4 * i;
        double pw = pb[2] - pb[0] + 1, ph = pb[3] - pb[1] + 1, pcx = pb[0] + pw / 2, pcy = pb[1] + ph / 2;
        for (int64_t j = 0; j < C; j++) {
            const double *tb = t + (i * C + j) * 4;
            double *o = dec + (i * C + j) * 4;
            double dw = dmin(v[2] * tb[2], box_clip), dh = dmin(v[3] * tb[3], box_clip);
            double cx = v[0] * tb[0] * pw + pcx, cy = v[1] * tb[1] * ph + pcy, w = exp(dw) * pw, h = exp(dh) * ph;
            o[0] = cx - w / 2, o[1] = cy - h / 2, o[2] = cx + w / 2 - 1, o[3] = cy + h / 2 - 1;
        }
        double best = -1;
        int64_t bj = -1;
        for (int64_t j = 1; j < C; j++)
            if (s[i * C + j] > best) best = s[i * C + j], bj = j;
        memcpy(as + 4 * i, bj > 0 ? dec + (i * C + bj) * 4 : pb, 4 * sizeof *as);
    }
    if ((decode && dnew(e, op, &a, prior->dtype, 2, (int64_t[]){N, C * 4}, dec)) ||
        (assign && dnew(e, op, &b, prior->dtype, 2, (int64_t[]){N, 4}, as)))
        goto done;
    kout(decode, &a);
    kout(assign, &b);
    st = FL_OK;
done:
    fl_tensor_fini(&a), fl_tensor_fini(&b);
    free(p), free(v), free(t), free(s), free(dec), free(as);
    return st;
}

/* ---- yolo_box ---- */

FlStatus fl_kernel_yolo_box(FlErr *e, const FlTensor *x, const FlTensor *img_size, const int64_t *anchors,
                            int n_anchors, int class_num, double conf_thresh, int downsample_ratio, FlTensor *boxes,
                            FlTensor *scores) {
    const char *op = "yolo_box";
    if (kneed_float(e, op, "X", x) || kneed_int(e, op, "ImgSize", img_size)) return FL_ERROR;
    int64_t A = n_anchors, C = class_num;
    if (x->ndim != 4 || x->ne[1] != A * (5 + C))
        return fl_err(e, "%s: X %s must be [N, %lld, H, W] for %lld anchors and %lld classes", op,
                      fl_tensor_shape(x).s, (long long)(A * (5 + C)), (long long)A, (long long)C);
    int64_t N = x->ne[0], H = x->ne[2], W = x->ne[3], hw = H * W, nb = A * hw;
    if (img_size->ndim != 2 || img_size->ne[0] != N || img_size->ne[1] != 2)
        return fl_err(e, "%s: ImgSize %s must be [%lld, 2] (height, width)", op, fl_tensor_shape(img_size).s,
                      (long long)N);
    double input_size = (double)downsample_ratio * (double)H;
    double *d = NULL, *bo = NULL, *so = NULL;
    FlStatus st = FL_ERROR;
    FlTensor a = FL_TENSOR_INIT, b = FL_TENSOR_INIT;
    if (dload(e, op, x, &d) || dscratch(e, op, N * nb * 4, &bo) || dscratch(e, op, N * nb * C, &so)) goto done;
    memset(bo, 0, (size_t)(N * nb * 4) * sizeof *bo);
    memset(so, 0, (size_t)(N * nb * C) * sizeof *so);
    for (int64_t n = 0; n < N; n++) {
        double ih = (double)iget(img_size, 2 * n), iw = (double)iget(img_size, 2 * n + 1);
        for (int64_t j = 0; j < A; j++) {
            const double *xa = d + (n * A + j) * (5 + C) * hw; /* anchor j's channels */
            for (int64_t k = 0; k < H; k++)
                for (int64_t l = 0; l < W; l++) {
                    int64_t at = k * W + l;
                    double conf = dsigmoid(xa[4 * hw + at]);
                    if (conf < conf_thresh) continue;
                    /* Fluid divides both coordinates by the grid's height (square maps) */
                    double cx = ((double)l + dsigmoid(xa[at])) * iw / (double)H;
                    double cy = ((double)k + dsigmoid(xa[hw + at])) * ih / (double)H;
                    double w = exp(xa[2 * hw + at]) * (double)anchors[2 * j] * iw / input_size;
                    double h = exp(xa[3 * hw + at]) * (double)anchors[2 * j + 1] * ih / input_size;
                    double *o = bo + (n * nb + j * hw + at) * 4;
                    o[0] = dmax(cx - w / 2, 0), o[1] = dmax(cy - h / 2, 0);
                    o[2] = dmin(cx + w / 2, iw - 1), o[3] = dmin(cy + h / 2, ih - 1);
                    double *s = so + (n * nb + j * hw + at) * C;
                    for (int64_t c = 0; c < C; c++) s[c] = conf * dsigmoid(xa[(5 + c) * hw + at]);
                }
        }
    }
    if ((boxes && dnew(e, op, &a, x->dtype, 3, (int64_t[]){N, nb, 4}, bo)) ||
        (scores && dnew(e, op, &b, x->dtype, 3, (int64_t[]){N, nb, C}, so)))
        goto done;
    kout(boxes, &a);
    kout(scores, &b);
    st = FL_OK;
done:
    fl_tensor_fini(&a), fl_tensor_fini(&b);
    free(d), free(bo), free(so);
    return st;
}
