/* nn2.c: layer_norm, softmax_with_cross_entropy, cos_sim, lrn, bilinear / nearest
 * interpolation and conv2d_transpose, forward and backward, and the auc metric. The typed loops are in nn2_t.inc;
 * conv2d_transpose is the convolution's input gradient (and its gradients the convolution and
 * the convolution's filter gradient), so it shares conv.c's fast paths. */
#include "runtime/kernels/kernels_impl.h"

#include <math.h>

/* Source coordinates of one output row or column: Out = l0 * X[i0] + l1 * X[i1]. */
typedef struct KInterpAxis {
    int64_t i0, i1;
    double l0, l1;
} KInterpAxis;
typedef struct KInterp {
    int64_t NC, H, W, Ho, Wo;
    KInterpAxis *h, *w; /* Ho and Wo entries */
} KInterp;

/* log(p), finite as Paddle's TolerableValue keeps it (log 0 = -1e20). */
static double ktolerable_log(double p) {
    double l = log(p);
    return isinf(l) ? (l > 0 ? 1e20 : -1e20) : l;
}

#define FL_TMPL "nn2_t.inc"
#include "runtime/kernels/tmpl.h"

/* ---- layer_norm ---- */

static FlStatus ln_check(FlErr *e, const char *op, const FlTensor *x, const FlTensor *scale,
                         const FlTensor *bias, int begin, int64_t *M, int64_t *D) {
    if (kneed_float(e, op, "X", x)) return FL_ERROR;
    if (begin < 1 || begin >= x->ndim)
        return fl_err(e, "%s: begin_norm_axis %d must be in [1, %d) for X %s", op, begin, x->ndim,
                      fl_tensor_shape(x).s);
    *M = kprod(x->ne, 0, begin);
    *D = kprod(x->ne, begin, x->ndim);
    const FlTensor *ps[2] = {scale, bias};
    const char *names[2] = {"Scale", "Bias"};
    for (int i = 0; i < 2; i++) {
        if (!ps[i]) continue;
        if (ksame_dtype(e, op, "X", x, names[i], ps[i])) return FL_ERROR;
        if (fl_tensor_numel(ps[i]) != *D)
            return fl_err(e, "%s: %s %s must hold %lld elements (X %s from dim %d)", op, names[i],
                          fl_tensor_shape(ps[i]).s, (long long)*D, fl_tensor_shape(x).s, begin);
    }
    return FL_OK;
}

#define PD(t) ((t) ? fl_tensor_data(t) : NULL)

FlStatus fl_kernel_layer_norm(FlErr *e, const FlTensor *x, const FlTensor *scale,
                              const FlTensor *bias, int begin_norm_axis, double epsilon,
                              FlTensor *y, FlTensor *mean, FlTensor *variance) {
    const char *op = "layer_norm";
    int64_t M, D;
    if (ln_check(e, op, x, scale, bias, begin_norm_axis, &M, &D) || kwant(e, op, "Y", y))
        return FL_ERROR;
    if (!(epsilon >= 0)) return fl_err(e, "%s: epsilon (%g) must be >= 0", op, epsilon);
    FlTensor r[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    if (kalloc_raw_like(e, op, &r[0], x) || kalloc(e, op, &r[1], x->dtype, 1, &M) ||
        kalloc(e, op, &r[2], x->dtype, 1, &M)) {
        kfini_all(r, 3);
        return FL_ERROR;
    }
    if (x->dtype == FL_DT_FLOAT32)
        ln_fwd_f32(fl_tensor_data(x), PD(scale), PD(bias), epsilon, fl_tensor_data(&r[0]),
                   fl_tensor_data(&r[1]), fl_tensor_data(&r[2]), M, D);
    else
        ln_fwd_f64(fl_tensor_data(x), PD(scale), PD(bias), epsilon, fl_tensor_data(&r[0]),
                   fl_tensor_data(&r[1]), fl_tensor_data(&r[2]), M, D);
    kout(y, &r[0]);
    kout(mean, &r[1]);
    kout(variance, &r[2]);
    return FL_OK;
}

FlStatus fl_kernel_layer_norm_grad(FlErr *e, const FlTensor *x, const FlTensor *scale,
                                   const FlTensor *mean, const FlTensor *variance,
                                   const FlTensor *dy, int begin_norm_axis, double epsilon,
                                   FlTensor *dx, FlTensor *dscale, FlTensor *dbias) {
    const char *op = "layer_norm_grad";
    int64_t M, D;
    if (ln_check(e, op, x, scale, NULL, begin_norm_axis, &M, &D) || ksame(e, op, "X", x, "Y@GRAD", dy) ||
        ksame_dtype(e, op, "X", x, "Mean", mean) || ksame_dtype(e, op, "X", x, "Variance", variance))
        return FL_ERROR;
    if (fl_tensor_numel(mean) != M || fl_tensor_numel(variance) != M)
        return fl_err(e, "%s: Mean %s and Variance %s must hold %lld elements", op,
                      fl_tensor_shape(mean).s, fl_tensor_shape(variance).s, (long long)M);
    if (dscale && !scale) return fl_err(e, "%s: Scale@GRAD needs the input Scale", op);
    FlTensor r[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    if ((dx && kalloc_like(e, op, &r[0], x)) || (dscale && kalloc_like(e, op, &r[1], scale)) ||
        (dbias && kalloc(e, op, &r[2], x->dtype, 1, &D))) {
        kfini_all(r, 3);
        return FL_ERROR;
    }
    void *px = dx ? fl_tensor_data(&r[0]) : NULL, *ps = dscale ? fl_tensor_data(&r[1]) : NULL,
         *pb = dbias ? fl_tensor_data(&r[2]) : NULL;
    if (x->dtype == FL_DT_FLOAT32)
        ln_bwd_f32(fl_tensor_data(x), PD(scale), fl_tensor_data(mean), fl_tensor_data(variance),
                   fl_tensor_data(dy), epsilon, px, ps, pb, M, D);
    else
        ln_bwd_f64(fl_tensor_data(x), PD(scale), fl_tensor_data(mean), fl_tensor_data(variance),
                   fl_tensor_data(dy), epsilon, px, ps, pb, M, D);
    if (dx) kout(dx, &r[0]);
    if (dscale) kout(dscale, &r[1]);
    if (dbias) kout(dbias, &r[2]);
    return FL_OK;
}

/* ---- softmax_with_cross_entropy ---- */

/* Hard labels of a [M, D] problem as int64 (the caller frees *out); each in [0, D) or
 * ignore_index. */
static FlStatus swce_labels(FlErr *e, const char *op, const FlTensor *logits, const FlTensor *label,
                            bool soft, int64_t ignore, int64_t M, int64_t D, int64_t **out) {
    *out = NULL;
    if (soft) {
        if (ksame(e, op, "Logits", logits, "Label", label)) return FL_ERROR;
        return FL_OK;
    }
    if (khas(e, op, "Label", label)) return FL_ERROR;
    if (!kis_int(label->dtype) || fl_tensor_numel(label) != M)
        return fl_err(e, "%s: Label %s (%s) must be int64 class indices, one per row of Logits %s", op,
                      fl_tensor_shape(label).s, fl_dtype_name(label->dtype), fl_tensor_shape(logits).s);
    int64_t *lab = malloc(sizeof(int64_t) * (size_t)(M + 1));
    if (!lab) return fl_err(e, "%s: out of memory", op);
    const void *ld = fl_tensor_data(label);
    for (int64_t i = 0; i < M; i++) {
        lab[i] = label->dtype == FL_DT_INT64 ? ((const int64_t *)ld)[i] : ((const int32_t *)ld)[i];
        if (lab[i] != ignore && (lab[i] < 0 || lab[i] >= D)) {
            long long v = (long long)lab[i];
            free(lab);
            return fl_err(e, "%s: the label of row %lld is %lld, outside [0, %lld)", op, (long long)i, v,
                          (long long)D);
        }
    }
    *out = lab;
    return FL_OK;
}

FlStatus fl_kernel_softmax_with_cross_entropy(FlErr *e, const FlTensor *logits, const FlTensor *label,
                                              bool soft_label, int64_t ignore_index,
                                              bool numeric_stable_mode, FlTensor *softmax,
                                              FlTensor *loss) {
    const char *op = "softmax_with_cross_entropy";
    if (kneed_float(e, op, "Logits", logits)) return FL_ERROR;
    if (logits->ndim < 1 || logits->ne[logits->ndim - 1] < 1)
        return fl_err(e, "%s: Logits %s needs a last dim of classes", op, fl_tensor_shape(logits).s);
    int64_t D = logits->ne[logits->ndim - 1], M = fl_tensor_numel(logits) / D;
    int64_t *lab;
    if (swce_labels(e, op, logits, label, soft_label, ignore_index, M, D, &lab)) return FL_ERROR;
    int64_t lne[FL_MAX_DIMS];
    memcpy(lne, logits->ne, sizeof(int64_t) * (size_t)logits->ndim);
    lne[logits->ndim - 1] = 1;
    FlTensor r[2] = {FL_TENSOR_INIT, FL_TENSOR_INIT};
    if (kalloc_raw_like(e, op, &r[0], logits) || kalloc(e, op, &r[1], logits->dtype, logits->ndim, lne)) {
        kfini_all(r, 2);
        free(lab);
        return FL_ERROR;
    }
    const void *soft = soft_label ? fl_tensor_data(label) : NULL;
    if (logits->dtype == FL_DT_FLOAT32)
        swce_fwd_f32(fl_tensor_data(logits), lab, soft, ignore_index, numeric_stable_mode,
                     fl_tensor_data(&r[0]), fl_tensor_data(&r[1]), M, D);
    else
        swce_fwd_f64(fl_tensor_data(logits), lab, soft, ignore_index, numeric_stable_mode,
                     fl_tensor_data(&r[0]), fl_tensor_data(&r[1]), M, D);
    free(lab);
    kout(softmax, &r[0]);
    kout(loss, &r[1]);
    return FL_OK;
}

FlStatus fl_kernel_softmax_with_cross_entropy_grad(FlErr *e, const FlTensor *softmax,
                                                   const FlTensor *label, const FlTensor *dloss,
                                                   bool soft_label, int64_t ignore_index,
                                                   FlTensor *dlogits) {
    const char *op = "softmax_with_cross_entropy_grad";
    if (kneed_float(e, op, "Softmax", softmax) || ksame_dtype(e, op, "Softmax", softmax, "Loss@GRAD", dloss))
        return FL_ERROR;
    if (softmax->ndim < 1 || softmax->ne[softmax->ndim - 1] < 1)
        return fl_err(e, "%s: Softmax %s needs a last dim of classes", op, fl_tensor_shape(softmax).s);
    int64_t D = softmax->ne[softmax->ndim - 1], M = fl_tensor_numel(softmax) / D;
    if (fl_tensor_numel(dloss) != M)
        return fl_err(e, "%s: Loss@GRAD %s must hold one value per row of Softmax %s", op,
                      fl_tensor_shape(dloss).s, fl_tensor_shape(softmax).s);
    if (!dlogits) return FL_OK;
    int64_t *lab;
    if (swce_labels(e, op, softmax, label, soft_label, ignore_index, M, D, &lab)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, op, &r, softmax)) {
        free(lab);
        return FL_ERROR;
    }
    const void *soft = soft_label ? fl_tensor_data(label) : NULL;
    if (softmax->dtype == FL_DT_FLOAT32)
        swce_bwd_f32(fl_tensor_data(softmax), lab, soft, ignore_index, fl_tensor_data(dloss),
                     fl_tensor_data(&r), M, D);
    else
        swce_bwd_f64(fl_tensor_data(softmax), lab, soft, ignore_index, fl_tensor_data(dloss),
                     fl_tensor_data(&r), M, D);
    free(lab);
    kout(dlogits, &r);
    return FL_OK;
}

/* ---- cos_sim ---- */

static FlStatus cos_check(FlErr *e, const char *op, const FlTensor *x, const FlTensor *y, int64_t *M,
                          int64_t *D, bool *ybc) {
    if (kneed_float(e, op, "X", x) || ksame_dtype(e, op, "X", x, "Y", y)) return FL_ERROR;
    if (x->ndim < 2 || y->ndim != x->ndim)
        return fl_err(e, "%s: X %s and Y %s must have one rank, at least 2", op, fl_tensor_shape(x).s,
                      fl_tensor_shape(y).s);
    *M = x->ne[0];
    *D = kprod(x->ne, 1, x->ndim);
    *ybc = y->ne[0] == 1 && *M != 1;
    if (kprod(y->ne, 1, y->ndim) != *D || (y->ne[0] != *M && y->ne[0] != 1))
        return fl_err(e, "%s: Y %s must have X's shape %s or one row", op, fl_tensor_shape(y).s,
                      fl_tensor_shape(x).s);
    return FL_OK;
}

FlStatus fl_kernel_cos_sim(FlErr *e, const FlTensor *x, const FlTensor *y, FlTensor *out,
                           FlTensor *xnorm, FlTensor *ynorm) {
    const char *op = "cos_sim";
    int64_t M, D;
    bool ybc;
    if (cos_check(e, op, x, y, &M, &D, &ybc) || kwant(e, op, "Out", out)) return FL_ERROR;
    int64_t ne[2] = {M, 1}, ye[2] = {y->ne[0], 1};
    FlTensor r[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    if (kalloc(e, op, &r[0], x->dtype, 2, ne) || kalloc(e, op, &r[1], x->dtype, 2, ne) ||
        kalloc(e, op, &r[2], x->dtype, 2, ye)) {
        kfini_all(r, 3);
        return FL_ERROR;
    }
    if (x->dtype == FL_DT_FLOAT32)
        cos_fwd_f32(fl_tensor_data(x), fl_tensor_data(y), ybc, fl_tensor_data(&r[0]), fl_tensor_data(&r[1]),
                    fl_tensor_data(&r[2]), M, D);
    else
        cos_fwd_f64(fl_tensor_data(x), fl_tensor_data(y), ybc, fl_tensor_data(&r[0]), fl_tensor_data(&r[1]),
                    fl_tensor_data(&r[2]), M, D);
    kout(out, &r[0]);
    kout(xnorm, &r[1]);
    kout(ynorm, &r[2]);
    return FL_OK;
}

FlStatus fl_kernel_cos_sim_grad(FlErr *e, const FlTensor *x, const FlTensor *y, const FlTensor *out,
                                const FlTensor *xnorm, const FlTensor *ynorm, const FlTensor *dout,
                                FlTensor *dx, FlTensor *dy) {
    const char *op = "cos_sim_grad";
    int64_t M, D;
    bool ybc;
    if (cos_check(e, op, x, y, &M, &D, &ybc)) return FL_ERROR;
    const FlTensor *per_row[3] = {out, xnorm, dout};
    const char *names[3] = {"Out", "XNorm", "Out@GRAD"};
    for (int i = 0; i < 3; i++) {
        if (ksame_dtype(e, op, "X", x, names[i], per_row[i])) return FL_ERROR;
        if (fl_tensor_numel(per_row[i]) != M)
            return fl_err(e, "%s: %s %s must hold one value per row of X %s", op, names[i],
                          fl_tensor_shape(per_row[i]).s, fl_tensor_shape(x).s);
    }
    if (ksame_dtype(e, op, "X", x, "YNorm", ynorm)) return FL_ERROR;
    if (fl_tensor_numel(ynorm) != y->ne[0])
        return fl_err(e, "%s: YNorm %s must hold one value per row of Y %s", op, fl_tensor_shape(ynorm).s,
                      fl_tensor_shape(y).s);
    FlTensor r[2] = {FL_TENSOR_INIT, FL_TENSOR_INIT};
    if ((dx && kalloc_like(e, op, &r[0], x)) || (dy && kalloc_like(e, op, &r[1], y))) {
        kfini_all(r, 2);
        return FL_ERROR;
    }
    void *px = dx ? fl_tensor_data(&r[0]) : NULL, *py = dy ? fl_tensor_data(&r[1]) : NULL;
    if (x->dtype == FL_DT_FLOAT32)
        cos_bwd_f32(fl_tensor_data(x), fl_tensor_data(y), ybc, fl_tensor_data(out), fl_tensor_data(xnorm),
                    fl_tensor_data(ynorm), fl_tensor_data(dout), px, py, M, D);
    else
        cos_bwd_f64(fl_tensor_data(x), fl_tensor_data(y), ybc, fl_tensor_data(out), fl_tensor_data(xnorm),
                    fl_tensor_data(ynorm), fl_tensor_data(dout), px, py, M, D);
    if (dx) kout(dx, &r[0]);
    if (dy) kout(dy, &r[1]);
    return FL_OK;
}

/* ---- lrn ---- */

static FlStatus lrn_check(FlErr *e, const char *op, const FlTensor *x, int n) {
    if (kneed_float(e, op, "X", x)) return FL_ERROR;
    if (x->ndim != 4) return fl_err(e, "%s: X %s must be [N, C, H, W]", op, fl_tensor_shape(x).s);
    if (n < 1) return fl_err(e, "%s: n (%d) must be >= 1", op, n);
    return FL_OK;
}

FlStatus fl_kernel_lrn(FlErr *e, const FlTensor *x, int n, double k, double alpha, double beta,
                       FlTensor *out, FlTensor *mid_out) {
    const char *op = "lrn";
    if (lrn_check(e, op, x, n) || kwant(e, op, "Out", out)) return FL_ERROR;
    FlTensor r[2] = {FL_TENSOR_INIT, FL_TENSOR_INIT};
    if (kalloc_raw_like(e, op, &r[0], x) || kalloc_raw_like(e, op, &r[1], x)) {
        kfini_all(r, 2);
        return FL_ERROR;
    }
    int64_t N = x->ne[0], C = x->ne[1], HW = x->ne[2] * x->ne[3];
    if (x->dtype == FL_DT_FLOAT32)
        lrn_fwd_f32(fl_tensor_data(x), n, k, alpha, beta, fl_tensor_data(&r[0]), fl_tensor_data(&r[1]), N, C, HW);
    else
        lrn_fwd_f64(fl_tensor_data(x), n, k, alpha, beta, fl_tensor_data(&r[0]), fl_tensor_data(&r[1]), N, C, HW);
    kout(out, &r[0]);
    kout(mid_out, &r[1]);
    return FL_OK;
}

FlStatus fl_kernel_lrn_grad(FlErr *e, const FlTensor *x, const FlTensor *mid_out, const FlTensor *dout,
                            int n, double alpha, double beta, FlTensor *dx) {
    const char *op = "lrn_grad";
    if (lrn_check(e, op, x, n) || ksame(e, op, "X", x, "MidOut", mid_out) ||
        ksame(e, op, "X", x, "Out@GRAD", dout))
        return FL_ERROR;
    if (!dx) return FL_OK;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, op, &r, x)) return FL_ERROR;
    int64_t N = x->ne[0], C = x->ne[1], HW = x->ne[2] * x->ne[3];
    if (x->dtype == FL_DT_FLOAT32)
        lrn_bwd_f32(fl_tensor_data(x), fl_tensor_data(mid_out), fl_tensor_data(dout), n, alpha, beta,
                    fl_tensor_data(&r), N, C, HW);
    else
        lrn_bwd_f64(fl_tensor_data(x), fl_tensor_data(mid_out), fl_tensor_data(dout), n, alpha, beta,
                    fl_tensor_data(&r), N, C, HW);
    kout(dx, &r);
    return FL_OK;
}

/* ---- bilinear / nearest interpolation ---- */

/* Output index k's source coordinates along an axis of in -> out cells (Paddle's rules). */
static void interp_axis(const FlInterpAttrs *a, int64_t in, int64_t out, KInterpAxis *ax) {
    double ratio = out > 1 ? (a->align_corners ? (double)(in - 1) / (double)(out - 1) : (double)in / (double)out)
                           : 0;
    for (int64_t k = 0; k < out; k++) {
        KInterpAxis *c = &ax[k];
        if (a->method == FL_INTERP_NEAREST) {
            int64_t i = a->align_corners ? (int64_t)(ratio * (double)k + 0.5) : (int64_t)(ratio * (double)k);
            if (i > in - 1) i = in - 1;
            *c = (KInterpAxis){i, i, 1, 0};
            continue;
        }
        bool half = a->align_mode == 0 && !a->align_corners; /* half-pixel centres */
        double src = half ? ratio * ((double)k + 0.5) - 0.5 : ratio * (double)k;
        if (src < 0) src = 0;
        int64_t i0 = (int64_t)src;
        if (i0 > in - 1) i0 = in - 1;
        int64_t i1 = i0 + 1 < in ? i0 + 1 : in - 1;
        double l1 = src - (double)i0;
        *c = (KInterpAxis){i0, i1, 1 - l1, l1};
    }
}

static FlStatus interp_plan(FlErr *e, const char *op, const FlTensor *x, const FlInterpAttrs *a,
                            KInterp *ip) {
    if (kneed_float(e, op, "X", x)) return FL_ERROR;
    if (x->ndim != 4) return fl_err(e, "%s: X %s must be [N, C, H, W]", op, fl_tensor_shape(x).s);
    if (a->out_h < 1 || a->out_w < 1 || x->ne[2] < 1 || x->ne[3] < 1)
        return fl_err(e, "%s: out_h (%d) and out_w (%d) must be >= 1 and X %s not empty", op, a->out_h,
                      a->out_w, fl_tensor_shape(x).s);
    *ip = (KInterp){.NC = x->ne[0] * x->ne[1], .H = x->ne[2], .W = x->ne[3], .Ho = a->out_h, .Wo = a->out_w};
    ip->h = malloc(sizeof(KInterpAxis) * (size_t)(ip->Ho + ip->Wo));
    if (!ip->h) return fl_err(e, "%s: out of memory", op);
    ip->w = ip->h + ip->Ho;
    interp_axis(a, ip->H, ip->Ho, ip->h);
    interp_axis(a, ip->W, ip->Wo, ip->w);
    return FL_OK;
}

FlStatus fl_kernel_interp(FlErr *e, const FlTensor *x, const FlInterpAttrs *a, FlTensor *out) {
    const char *op = a->method == FL_INTERP_NEAREST ? "nearest_interp" : "bilinear_interp";
    KInterp ip;
    if (interp_plan(e, op, x, a, &ip)) return FL_ERROR;
    int64_t ne[4] = {x->ne[0], x->ne[1], ip.Ho, ip.Wo};
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, op, &r, x->dtype, 4, ne)) {
        free(ip.h);
        return FL_ERROR;
    }
    if (x->dtype == FL_DT_FLOAT32) interp_fwd_f32(fl_tensor_data(x), &ip, fl_tensor_data(&r));
    else interp_fwd_f64(fl_tensor_data(x), &ip, fl_tensor_data(&r));
    free(ip.h);
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_interp_grad(FlErr *e, const FlTensor *x, const FlTensor *dout, const FlInterpAttrs *a,
                               FlTensor *dx) {
    const char *op = a->method == FL_INTERP_NEAREST ? "nearest_interp_grad" : "bilinear_interp_grad";
    KInterp ip;
    if (interp_plan(e, op, x, a, &ip)) return FL_ERROR;
    FlStatus st = FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (ksame_dtype(e, op, "X", x, "Out@GRAD", dout)) goto fail;
    if (dout->ndim != 4 || dout->ne[0] != x->ne[0] || dout->ne[1] != x->ne[1] || dout->ne[2] != ip.Ho ||
        dout->ne[3] != ip.Wo) {
        fl_err(e, "%s: Out@GRAD %s must be [%lld, %lld, %lld, %lld]", op, fl_tensor_shape(dout).s,
               (long long)x->ne[0], (long long)x->ne[1], (long long)ip.Ho, (long long)ip.Wo);
        goto fail;
    }
    if (!dx) {
        st = FL_OK;
        goto fail;
    }
    if (kalloc_raw_like(e, op, &r, x)) goto fail;
    if (x->dtype == FL_DT_FLOAT32) interp_bwd_f32(fl_tensor_data(dout), &ip, fl_tensor_data(&r));
    else interp_bwd_f64(fl_tensor_data(dout), &ip, fl_tensor_data(&r));
    kout(dx, &r);
    st = FL_OK;
fail:
    free(ip.h);
    return st;
}

/* ---- conv2d_transpose ---- */

/* Output [N, M, Ho, Wo] of a transposed convolution: Ho = (H - 1) * sh - 2 * ph + dh * (kh - 1) + 1. */
static FlStatus convt_out(FlErr *e, const FlTensor *in, const FlTensor *f, const FlConv2dAttrs *a,
                          int64_t ne[4]) {
    const char *op = "conv2d_transpose";
    if (kneed_float(e, op, "Input", in) || ksame_dtype(e, op, "Input", in, "Filter", f)) return FL_ERROR;
    if (in->ndim != 4 || f->ndim != 4 || a->groups < 1 || f->ne[0] != in->ne[1])
        return fl_err(e, "%s: Input %s must be [N, C, H, W] and Filter %s [C, M/groups, kh, kw] (groups %d)",
                      op, fl_tensor_shape(in).s, fl_tensor_shape(f).s, a->groups);
    ne[0] = in->ne[0];
    ne[1] = f->ne[1] * a->groups;
    for (int i = 0; i < 2; i++) {
        if (a->strides[i] < 1 || a->dilations[i] < 1 || a->paddings[i] < 0) ne[2 + i] = 0;
        else /* int64 of int attributes and tensor dims: no overflow */
            ne[2 + i] = (in->ne[2 + i] - 1) * a->strides[i] - 2 * (int64_t)a->paddings[i] +
                        (int64_t)a->dilations[i] * (f->ne[2 + i] - 1) + 1;
        if (ne[2 + i] < 1)
            return fl_err(e, "%s: Input %s, Filter %s: bad attributes or an empty output (strides (%d, %d), "
                             "paddings (%d, %d), dilations (%d, %d))", op, fl_tensor_shape(in).s,
                          fl_tensor_shape(f).s, a->strides[0], a->strides[1], a->paddings[0], a->paddings[1],
                          a->dilations[0], a->dilations[1]);
    }
    return FL_OK;
}

/* Runs a conv.c kernel, its error message under `op`'s name. */
static FlStatus convt_sub(FlErr *e, const char *op, FlStatus st, const FlErr *sub) {
    return st ? fl_err(e, "%s: %s", op, sub->msg) : FL_OK;
}

FlStatus fl_kernel_conv2d_transpose(FlErr *e, const FlTensor *input, const FlTensor *filter,
                                    const FlConv2dAttrs *a, FlTensor *output) {
    int64_t ne[4];
    if (convt_out(e, input, filter, a, ne)) return FL_ERROR;
    /* the output is the input gradient of the convolution of an [N, M, Ho, Wo] image, whose
     * output the transposed convolution's input stands for */
    FlTensor shape = FL_TENSOR_INIT;
    if (kalloc(e, "conv2d_transpose", &shape, input->dtype, 4, ne)) return FL_ERROR;
    FlErr sub;
    FlStatus st = fl_kernel_conv2d_grad(&sub, &shape, filter, input, a, output, NULL);
    fl_tensor_fini(&shape);
    return convt_sub(e, "conv2d_transpose", st, &sub);
}

FlStatus fl_kernel_conv2d_transpose_grad(FlErr *e, const FlTensor *input, const FlTensor *filter,
                                         const FlTensor *doutput, const FlConv2dAttrs *a,
                                         FlTensor *dinput, FlTensor *dfilter) {
    const char *op = "conv2d_transpose_grad";
    int64_t ne[4];
    if (convt_out(e, input, filter, a, ne) || ksame_dtype(e, op, "Input", input, "Output@GRAD", doutput))
        return FL_ERROR;
    if (doutput->ndim != 4 || memcmp(doutput->ne, ne, sizeof ne) != 0)
        return fl_err(e, "%s: Output@GRAD %s differs from the output shape %s", op, fl_tensor_shape(doutput).s,
                      fl_shape_str(4, ne).s);
    FlErr sub;
    if (dinput && convt_sub(e, op, fl_kernel_conv2d(&sub, doutput, filter, a, dinput), &sub)) return FL_ERROR;
    if (dfilter && convt_sub(e, op, fl_kernel_conv2d_grad(&sub, doutput, filter, input, a, NULL, dfilter), &sub))
        return FL_ERROR;
    return FL_OK;
}

/* ---- auc ---- */

FlStatus fl_kernel_auc(FlErr *e, const FlTensor *predict, const FlTensor *label, const FlTensor *stat_pos,
                       const FlTensor *stat_neg, bool pr, int num_thresholds, int slide_steps, FlTensor *auc,
                       FlTensor *stat_pos_out, FlTensor *stat_neg_out) {
    const char *op = "auc";
    if (kneed_float(e, op, "Predict", predict) || khas(e, op, "Label", label) || khas(e, op, "StatPos", stat_pos) ||
        khas(e, op, "StatNeg", stat_neg))
        return FL_ERROR;
    int64_t R = slide_steps > 0 ? slide_steps : 1, B = (int64_t)num_thresholds + 1;
    if (num_thresholds < 1 || slide_steps < 0)
        return fl_err(e, "%s: num_thresholds (%d) must be >= 1 and slide_steps (%d) >= 0", op, num_thresholds,
                      slide_steps);
    if (predict->ndim != 2 || predict->ne[1] < 1 || !kis_int(label->dtype) || fl_tensor_numel(label) != predict->ne[0])
        return fl_err(e, "%s: Predict %s must be [N, classes] and Label %s (%s) hold N ints", op,
                      fl_tensor_shape(predict).s, fl_tensor_shape(label).s, fl_dtype_name(label->dtype));
    const FlTensor *st[2] = {stat_pos, stat_neg};
    for (int i = 0; i < 2; i++)
        if (st[i]->dtype != FL_DT_INT64 || st[i]->ndim != 2 || st[i]->ne[0] != R || st[i]->ne[1] != B)
            return fl_err(e, "%s: %s %s (%s) must be int64 [%lld, %lld]", op, i ? "StatNeg" : "StatPos",
                          fl_tensor_shape(st[i]).s, fl_dtype_name(st[i]->dtype), (long long)R, (long long)B);
    FlTensor r[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    int64_t one = 1;
    if (kalloc(e, op, &r[0], FL_DT_FLOAT64, 1, &one) || kalloc_like(e, op, &r[1], stat_pos) ||
        kalloc_like(e, op, &r[2], stat_neg)) {
        kfini_all(r, 3);
        return FL_ERROR;
    }
    int64_t *pos = fl_tensor_data(&r[1]), *neg = fl_tensor_data(&r[2]);
    const int64_t *opos = fl_tensor_data(stat_pos), *oneg = fl_tensor_data(stat_neg);
    if (slide_steps > 0) { /* the window moves down a row; row 0 starts empty for this batch */
        memcpy(pos + B, opos, sizeof(int64_t) * (size_t)((R - 1) * B));
        memcpy(neg + B, oneg, sizeof(int64_t) * (size_t)((R - 1) * B));
    } else {
        memcpy(pos, opos, sizeof(int64_t) * (size_t)B);
        memcpy(neg, oneg, sizeof(int64_t) * (size_t)B);
    }
    int64_t N = predict->ne[0], W = predict->ne[1];
    for (int64_t i = 0; i < N; i++) {
        double p = fl_tensor_get(predict, i * W + W - 1);
        int64_t bin = p > 0 ? (int64_t)(p * num_thresholds) : 0;
        if (!(p <= 1)) bin = num_thresholds; /* also NaN: the top bin, never out of range */
        if (fl_tensor_get(label, i) != 0) pos[bin]++;
        else neg[bin]++;
    }
    double sums[2] = {0, 0}; /* every positive, every negative */
    for (int64_t k = 0; k < R * B; k++) sums[0] += (double)pos[k], sums[1] += (double)neg[k];
    /* from the highest bin down, tp and fp: the rows at or above the threshold */
    double area = 0, tp = 0, fp = 0, rec0 = 0, prec0 = 1;
    for (int64_t b = B - 1; b >= 0; b--) {
        double sp = 0, sn = 0;
        for (int64_t k = 0; k < R; k++) sp += (double)pos[k * B + b], sn += (double)neg[k * B + b];
        double tp0 = tp, fp0 = fp;
        tp += sp;
        fp += sn;
        if (!pr) {
            area += (fp - fp0) * (tp + tp0) / 2;
        } else if (tp + fp > 0 && sums[0] > 0) {
            double rec = tp / sums[0], prec = tp / (tp + fp);
            area += (rec - rec0) * (prec + prec0) / 2;
            rec0 = rec, prec0 = prec;
        }
    }
    double v = pr ? (sums[0] > 0 ? area : 0) : (tp > 0 && fp > 0 ? area / tp / fp : 0);
    *(double *)fl_tensor_data(&r[0]) = v;
    kout(auc, &r[0]);
    kout(stat_pos_out, &r[1]);
    kout(stat_neg_out, &r[2]);
    return FL_OK;
}
