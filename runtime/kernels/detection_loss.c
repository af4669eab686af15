/* detection_loss.c: the losses of the detection models (kernels_detection.h): smooth L1 (SSD's
 * and Faster R-CNN's box regression), sigmoid cross entropy with logits (RPN objectness, YOLO),
 * and YOLOv3's loss with its gradient. */
#include "runtime/kernels/detection_impl.h"

/* ---- smooth_l1_loss ---- */

static double sl1(double d, double s2) {
    double a = fabs(d);
    return a < 1.0 / s2 ? 0.5 * d * d * s2 : a - 0.5 / s2;
}
static double sl1_grad(double d, double s2) {
    return fabs(d) < 1.0 / s2 ? s2 * d : (d > 0) - (d < 0);
}

/* A weight of X's shape (NULL: absent). */
static FlStatus sl1_weight(FlErr *e, const char *op, const char *slot, const FlTensor *x, const FlTensor *w) {
    if (!w) return FL_OK;
    if (ksame_dtype(e, op, "X", x, slot, w)) return FL_ERROR;
    if (fl_tensor_numel(w) != fl_tensor_numel(x) || w->ne[0] != x->ne[0])
        return fl_err(e, "%s: %s %s must have X's shape %s", op, slot, fl_tensor_shape(w).s, fl_tensor_shape(x).s);
    return FL_OK;
}

FlStatus fl_kernel_smooth_l1_loss(FlErr *e, const FlTensor *x, const FlTensor *y, const FlTensor *inside,
                                  const FlTensor *outside, double sigma, FlTensor *diff, FlTensor *out) {
    const char *op = "smooth_l1_loss";
    if (kneed_float(e, op, "X", x) || ksame_dtype(e, op, "X", x, "Y", y)) return FL_ERROR;
    if (x->ndim < 2 || fl_tensor_numel(x) != fl_tensor_numel(y) || x->ne[0] != y->ne[0])
        return fl_err(e, "%s: X %s and Y %s must have one shape [N, ...]", op, fl_tensor_shape(x).s,
                      fl_tensor_shape(y).s);
    if (sl1_weight(e, op, "InsideWeight", x, inside) || sl1_weight(e, op, "OutsideWeight", x, outside))
        return FL_ERROR;
    int64_t n = fl_tensor_numel(x), N = x->ne[0], D = N ? n / N : 0;
    double s2 = sigma * sigma;
    double *xd = NULL, *yd = NULL, *iw = NULL, *ow = NULL, *o = NULL;
    FlStatus st = FL_ERROR;
    FlTensor a = FL_TENSOR_INIT, b = FL_TENSOR_INIT;
    if (dload(e, op, x, &xd) || dload(e, op, y, &yd) || (inside && dload(e, op, inside, &iw)) ||
        (outside && dload(e, op, outside, &ow)) || dscratch(e, op, N, &o))
        goto done;
    for (int64_t i = 0; i < N; i++) {
        double sum = 0;
        for (int64_t k = i * D; k < (i + 1) * D; k++) {
            double d = xd[k] - yd[k];
            if (iw) d *= iw[k];
            xd[k] = d; /* xd now holds Diff */
            sum += sl1(d, s2) * (ow ? ow[k] : 1);
        }
        o[i] = sum;
    }
    if ((diff && dnew(e, op, &a, x->dtype, x->ndim, x->ne, xd)) || dnew(e, op, &b, x->dtype, 2, (int64_t[]){N, 1}, o))
        goto done;
    kout(diff, &a);
    kout(out, &b);
    st = FL_OK;
done:
    fl_tensor_fini(&a), fl_tensor_fini(&b);
    free(xd), free(yd), free(iw), free(ow), free(o);
    return st;
}

FlStatus fl_kernel_smooth_l1_loss_grad(FlErr *e, const FlTensor *inside, const FlTensor *outside,
                                       const FlTensor *diff, const FlTensor *dout, double sigma, FlTensor *dx,
                                       FlTensor *dy) {
    const char *op = "smooth_l1_loss_grad";
    if (!dx && !dy) return FL_OK;
    if (kneed_float(e, op, "Diff", diff) || ksame_dtype(e, op, "Diff", diff, "Out@GRAD", dout) ||
        sl1_weight(e, op, "InsideWeight", diff, inside) || sl1_weight(e, op, "OutsideWeight", diff, outside))
        return FL_ERROR;
    int64_t n = fl_tensor_numel(diff), N = diff->ndim ? diff->ne[0] : 1, D = N ? n / N : 0;
    if (fl_tensor_numel(dout) != N)
        return fl_err(e, "%s: Out@GRAD %s must be [%lld, 1]", op, fl_tensor_shape(dout).s, (long long)N);
    double s2 = sigma * sigma;
    double *d = NULL, *g = NULL, *iw = NULL, *ow = NULL, *neg = NULL;
    FlStatus st = FL_ERROR;
    FlTensor a = FL_TENSOR_INIT, b = FL_TENSOR_INIT;
    if (dload(e, op, diff, &d) || dload(e, op, dout, &g) || (inside && dload(e, op, inside, &iw)) ||
        (outside && dload(e, op, outside, &ow)) || dscratch(e, op, n, &neg))
        goto done;
    for (int64_t k = 0; k < n; k++) {
        d[k] = g[D ? k / D : 0] * sl1_grad(d[k], s2) * (iw ? iw[k] : 1) * (ow ? ow[k] : 1);
        neg[k] = -d[k];
    }
    if ((dx && dnew(e, op, &a, diff->dtype, diff->ndim, diff->ne, d)) ||
        (dy && dnew(e, op, &b, diff->dtype, diff->ndim, diff->ne, neg)))
        goto done;
    kout(dx, &a);
    kout(dy, &b);
    st = FL_OK;
done:
    fl_tensor_fini(&a), fl_tensor_fini(&b);
    free(d), free(g), free(iw), free(ow), free(neg);
    return st;
}

/* ---- sigmoid_cross_entropy_with_logits ---- */

static FlStatus xent_check(FlErr *e, const char *op, const FlTensor *x, const FlTensor *label) {
    if (kneed_float(e, op, "X", x) || ksame(e, op, "X", x, "Label", label)) return FL_ERROR;
    return FL_OK;
}

/* The count of elements whose label is not ignore_index (the normaliser; at least a tiny
 * positive number, so an all-ignored tensor gives zeros). */
static double xent_norm(const double *l, int64_t n, int ignore_index) {
    double c = 0;
    for (int64_t k = 0; k < n; k++) c += (int)l[k] != ignore_index;
    return c > 0 ? c : 1e-6;
}

FlStatus fl_kernel_sigmoid_xent(FlErr *e, const FlTensor *x, const FlTensor *label, int ignore_index, bool normalize,
                                FlTensor *out) {
    const char *op = "sigmoid_cross_entropy_with_logits";
    if (xent_check(e, op, x, label)) return FL_ERROR;
    int64_t n = fl_tensor_numel(x);
    double *xd = NULL, *l = NULL;
    FlStatus st = FL_ERROR;
    if (dload(e, op, x, &xd) || dload(e, op, label, &l)) goto done;
    double norm = normalize ? xent_norm(l, n, ignore_index) : 1;
    for (int64_t k = 0; k < n; k++) {
        double v = xd[k];
        xd[k] = (int)l[k] == ignore_index ? 0 : (dmax(v, 0) - v * l[k] + log1p(exp(-fabs(v)))) / norm;
    }
    FlTensor t = FL_TENSOR_INIT;
    if (dnew(e, op, &t, x->dtype, x->ndim, x->ne, xd)) goto done;
    kout(out, &t);
    st = FL_OK;
done:
    free(xd), free(l);
    return st;
}

FlStatus fl_kernel_sigmoid_xent_grad(FlErr *e, const FlTensor *x, const FlTensor *label, const FlTensor *dout,
                                     int ignore_index, bool normalize, FlTensor *dx) {
    const char *op = "sigmoid_cross_entropy_with_logits_grad";
    if (!dx) return FL_OK;
    if (xent_check(e, op, x, label) || ksame(e, op, "X", x, "Out@GRAD", dout)) return FL_ERROR;
    int64_t n = fl_tensor_numel(x);
    double *xd = NULL, *l = NULL, *g = NULL;
    FlStatus st = FL_ERROR;
    if (dload(e, op, x, &xd) || dload(e, op, label, &l) || dload(e, op, dout, &g)) goto done;
    double norm = normalize ? xent_norm(l, n, ignore_index) : 1;
    for (int64_t k = 0; k < n; k++)
        xd[k] = (int)l[k] == ignore_index ? 0 : g[k] * (dsigmoid(xd[k]) - l[k]) / norm;
    FlTensor t = FL_TENSOR_INIT;
    if (dnew(e, op, &t, x->dtype, x->ndim, x->ne, xd)) goto done;
    kout(dx, &t);
    st = FL_OK;
done:
    free(xd), free(l), free(g);
    return st;
}
