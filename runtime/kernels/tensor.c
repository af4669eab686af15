/* tensor.c: the kernels of the tensor family (kernels_tensor.h): cumsum, reverse, argmin,
 * argsort, the value tests, diag, where, shape, and the losses log_loss, huber_loss and
 * kldiv_loss. The ops along an axis view X as [outer, d, inner] (d the axis' size). */
#include <math.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"
#include "runtime/kernels/kernels_tensor.h"

/* ---- typed element access ---- */

/* a float element as double (the losses: float32 or float64) */
static inline double fget(const FlTensor *t, const void *p, int64_t i) {
    return t->dtype == FL_DT_FLOAT32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}
static inline void fput(FlTensor *t, void *p, int64_t i, double v) {
    if (t->dtype == FL_DT_FLOAT32) ((float *)p)[i] = (float)v;
    else ((double *)p)[i] = v;
}

/* The order of elements i and j of a numeric buffer: -1, 0 or 1, NaN above every number. */
static int ncmp(const void *p, FlDType dt, int64_t i, int64_t j) {
    switch (dt) {
    case FL_DT_INT32: {
        int32_t a = ((const int32_t *)p)[i], b = ((const int32_t *)p)[j];
        return (a > b) - (a < b);
    }
    case FL_DT_INT64: {
        int64_t a = ((const int64_t *)p)[i], b = ((const int64_t *)p)[j];
        return (a > b) - (a < b);
    }
    case FL_DT_FLOAT32:
    case FL_DT_FLOAT64: {
        double a = dt == FL_DT_FLOAT32 ? ((const float *)p)[i] : ((const double *)p)[i];
        double b = dt == FL_DT_FLOAT32 ? ((const float *)p)[j] : ((const double *)p)[j];
        if (isnan(a) || isnan(b)) return isnan(a) - isnan(b);
        return (a > b) - (a < b);
    }
    case FL_DT_FLOAT16:
    case FL_DT_INT8:
    case FL_DT_UINT8:
    case FL_DT_BOOL:
    case FL_DT_COUNT: break;
    }
    FL_UNREACHABLE();
}

/* X numeric, its axis normalised, and the [outer, d, inner] view. */
static FlStatus along(FlErr *e, const char *op, const FlTensor *x, int axis, int *ax, int64_t *outer, int64_t *d,
                      int64_t *inner) {
    if (kneed_num(e, op, "X", x)) return FL_ERROR;
    *ax = kaxis(axis, x->ndim);
    if (*ax < 0) return fl_err(e, "%s: axis %d is out of range for X %s", op, axis, fl_tensor_shape(x).s);
    *outer = kprod(x->ne, 0, *ax);
    *d = x->ne[*ax];
    *inner = kprod(x->ne, *ax + 1, x->ndim);
    return FL_OK;
}

/* ---- cumsum ---- */

#define CUMSUM_LOOP(T, ACC, ADD)                                                                 \
    do {                                                                                         \
        const T *s = fl_tensor_data(x);                                                          \
        T *o = fl_tensor_data(&r);                                                               \
        for (int64_t a = 0; a < outer; a++)                                                      \
            for (int64_t c = 0; c < inner; c++) {                                                \
                ACC acc = 0;                                                                     \
                for (int64_t jj = 0; jj < d; jj++) {                                             \
                    int64_t i = (a * d + (reverse ? d - 1 - jj : jj)) * inner + c;               \
                    ACC next = ADD(acc, s[i]);                                                   \
                    o[i] = (T)(exclusive ? acc : next);                                          \
                    acc = next;                                                                  \
                }                                                                                \
            }                                                                                    \
    } while (0)
#define FADD(a, b) ((a) + (double)(b))
#define IADD(a, b) kadd_i((a), (int64_t)(b))

FlStatus fl_kernel_cumsum(FlErr *e, const FlTensor *x, int axis, bool exclusive, bool reverse, FlTensor *out) {
    int ax;
    int64_t outer, d, inner;
    if (along(e, "cumsum", x, axis, &ax, &outer, &d, &inner)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, "cumsum", &r, x)) return FL_ERROR;
    switch (x->dtype) {
    case FL_DT_FLOAT32: CUMSUM_LOOP(float, double, FADD); break;
    case FL_DT_FLOAT64: CUMSUM_LOOP(double, double, FADD); break;
    case FL_DT_INT32: CUMSUM_LOOP(int32_t, int64_t, IADD); break;
    case FL_DT_INT64: CUMSUM_LOOP(int64_t, int64_t, IADD); break;
    case FL_DT_FLOAT16:
    case FL_DT_INT8:
    case FL_DT_UINT8:
    case FL_DT_BOOL:
    case FL_DT_COUNT: FL_UNREACHABLE();
    }
    kout(out, &r);
    return FL_OK;
}

/* ---- reverse ---- */

FlStatus fl_kernel_reverse(FlErr *e, const FlTensor *x, const int64_t *axes, int n, FlTensor *out) {
    if (kneed_num(e, "reverse", "X", x)) return FL_ERROR;
    bool flip[FL_MAX_DIMS] = {false};
    for (int k = 0; k < n; k++) {
        int a = kaxis((int)axes[k], x->ndim);
        if (a < 0 || axes[k] != (int)axes[k])
            return fl_err(e, "reverse: axis %lld is out of range for X %s", (long long)axes[k], fl_tensor_shape(x).s);
        flip[a] = true;
    }
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, "reverse", &r, x)) return FL_ERROR;
    size_t es = fl_dtype_size(x->dtype);
    const unsigned char *s = fl_tensor_data(x);
    unsigned char *o = fl_tensor_data(&r);
    int64_t numel = fl_tensor_numel(x), stride[FL_MAX_DIMS], at[FL_MAX_DIMS] = {0};
    for (int i = 0; i < x->ndim; i++) stride[i] = kprod(x->ne, i + 1, x->ndim);
    for (int64_t k = 0; k < numel; k++) {
        int64_t src = 0;
        for (int i = 0; i < x->ndim; i++) src += (flip[i] ? x->ne[i] - 1 - at[i] : at[i]) * stride[i];
        memcpy(o + (size_t)k * es, s + (size_t)src * es, es);
        for (int i = x->ndim - 1; i >= 0 && ++at[i] == x->ne[i]; i--) at[i] = 0;
    }
    kout(out, &r);
    return FL_OK;
}

/* ---- argmin, argsort ---- */

FlStatus fl_kernel_argmin(FlErr *e, const FlTensor *x, int axis, FlTensor *out) {
    int ax;
    int64_t outer, d, inner;
    if (along(e, "argmin", x, axis, &ax, &outer, &d, &inner)) return FL_ERROR;
    if (d == 0) return fl_err(e, "argmin: X %s is empty along axis %d", fl_tensor_shape(x).s, ax);
    int64_t ne[FL_MAX_DIMS];
    int nd = kdims_without(x, ax, ne);
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, "argmin", &r, FL_DT_INT64, nd, ne)) return FL_ERROR;
    const void *p = fl_tensor_data(x);
    int64_t *o = fl_tensor_data(&r);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t c = 0; c < inner; c++) {
            int64_t base = a * d * inner + c, best = 0;
            for (int64_t j = 1; j < d; j++)
                if (ncmp(p, x->dtype, base + j * inner, base + best * inner) < 0) best = j;
            o[a * inner + c] = best;
        }
    kout(out, &r);
    return FL_OK;
}

/* A stable merge sort of idx[0..n) (positions along the line at base with step inner) by value;
 * tmp holds n. */
static void sort_line(const void *p, FlDType dt, int64_t base, int64_t inner, int64_t *idx, int64_t *tmp, int64_t n) {
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = ncmp(p, dt, base + idx[j] * inner, base + idx[i] * inner) < 0 ? idx[j++] : idx[i++];
            while (i < mid) tmp[k++] = idx[i++];
            while (j < hi) tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}

FlStatus fl_kernel_argsort(FlErr *e, const FlTensor *x, int axis, FlTensor *out, FlTensor *indices) {
    int ax;
    int64_t outer, d, inner;
    if (along(e, "argsort", x, axis, &ax, &outer, &d, &inner)) return FL_ERROR;
    FlTensor ro = FL_TENSOR_INIT, ri = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, "argsort", &ro, x) || kalloc_raw(e, "argsort", &ri, FL_DT_INT64, x->ndim, x->ne)) {
        fl_tensor_fini(&ro);
        return FL_ERROR;
    }
    int64_t *idx = fl_xcalloc((size_t)(2 * d + 1), sizeof *idx), *tmp = idx + d;
    size_t es = fl_dtype_size(x->dtype);
    const unsigned char *s = fl_tensor_data(x);
    unsigned char *o = fl_tensor_data(&ro);
    int64_t *oi = fl_tensor_data(&ri);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t c = 0; c < inner; c++) {
            int64_t base = a * d * inner + c;
            for (int64_t j = 0; j < d; j++) idx[j] = j;
            sort_line(s, x->dtype, base, inner, idx, tmp, d);
            for (int64_t j = 0; j < d; j++) {
                memcpy(o + (size_t)(base + j * inner) * es, s + (size_t)(base + idx[j] * inner) * es, es);
                oi[base + j * inner] = idx[j];
            }
        }
    free(idx);
    kout(out, &ro);
    kout(indices, &ri);
    return FL_OK;
}

FlStatus fl_kernel_argsort_grad(FlErr *e, const FlTensor *indices, const FlTensor *dout, int axis, FlTensor *dx) {
    int ax;
    int64_t outer, d, inner;
    if (kneed_float(e, "argsort_grad", "Out@GRAD", dout) || khas(e, "argsort_grad", "Indices", indices) ||
        along(e, "argsort_grad", dout, axis, &ax, &outer, &d, &inner))
        return FL_ERROR;
    if (indices->dtype != FL_DT_INT64 || !fl_tensor_same_shape(indices, dout))
        return fl_err(e, "argsort_grad: Indices %s must be int64 of Out@GRAD's shape %s", fl_tensor_shape(indices).s,
                      fl_tensor_shape(dout).s);
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_like(e, "argsort_grad", &r, dout)) return FL_ERROR;
    const int64_t *ix = fl_tensor_data(indices);
    const void *g = fl_tensor_data(dout);
    void *o = fl_tensor_data(&r);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t c = 0; c < inner; c++)
            for (int64_t j = 0; j < d; j++) {
                int64_t i = (a * d + j) * inner + c, k = ix[i];
                if (k < 0 || k >= d) {
                    fl_tensor_fini(&r);
                    return fl_err(e, "argsort_grad: index %lld is out of range [0, %lld)", (long long)k, (long long)d);
                }
                fput(&r, o, (a * d + k) * inner + c, fget(dout, g, i));
            }
    kout(dx, &r);
    return FL_OK;
}

/* ---- tests of values ---- */

FlStatus fl_kernel_value_test(FlErr *e, FlValueTest k, const FlTensor *x, FlTensor *out) {
    static const char *const names[] = {"isinf", "isnan", "isfinite"};
    if (kneed_num(e, names[k], "X", x)) return FL_ERROR;
    bool any = false; /* an element that is inf (isinf), NaN (isnan), not finite (isfinite) */
    if (kis_float(x->dtype)) {
        const void *p = fl_tensor_data(x);
        int64_t n = fl_tensor_numel(x);
        for (int64_t i = 0; i < n && !any; i++) {
            double v = fget(x, p, i);
            switch (k) {
            case FL_TEST_INF: any = isinf(v); break;
            case FL_TEST_NAN: any = isnan(v); break;
            case FL_TEST_FINITE: any = !isfinite(v); break;
            }
        }
    }
    FlTensor r = FL_TENSOR_INIT;
    int64_t one = 1;
    if (kalloc(e, names[k], &r, FL_DT_BOOL, 1, &one)) return FL_ERROR;
    *(unsigned char *)fl_tensor_data(&r) = k == FL_TEST_FINITE ? !any : any;
    kout(out, &r);
    return FL_OK;
}

/* ---- diag, where, shape ---- */

FlStatus fl_kernel_diag(FlErr *e, const FlTensor *d, FlTensor *out) {
    if (kneed_num(e, "diag", "Diagonal", d)) return FL_ERROR;
    if (d->ndim != 1) return fl_err(e, "diag: Diagonal %s must have rank 1", fl_tensor_shape(d).s);
    int64_t n = d->ne[0], ne[2] = {n, n};
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc(e, "diag", &r, d->dtype, 2, ne)) return FL_ERROR;
    size_t es = fl_dtype_size(d->dtype);
    unsigned char *o = fl_tensor_data(&r);
    const unsigned char *s = fl_tensor_data(d);
    for (int64_t i = 0; i < n; i++) memcpy(o + (size_t)(i * n + i) * es, s + (size_t)i * es, es);
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_diag_grad(FlErr *e, const FlTensor *dout, FlTensor *dd) {
    if (kneed_float(e, "diag_grad", "Out@GRAD", dout)) return FL_ERROR;
    if (dout->ndim != 2 || dout->ne[0] != dout->ne[1])
        return fl_err(e, "diag_grad: Out@GRAD %s must be square", fl_tensor_shape(dout).s);
    int64_t n = dout->ne[0];
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc(e, "diag_grad", &r, dout->dtype, 1, &n)) return FL_ERROR;
    const void *g = fl_tensor_data(dout);
    void *o = fl_tensor_data(&r);
    for (int64_t i = 0; i < n; i++) fput(&r, o, i, fget(dout, g, i * n + i));
    kout(dd, &r);
    return FL_OK;
}

FlStatus fl_kernel_where(FlErr *e, const FlTensor *cond, FlTensor *out) {
    if (khas(e, "where", "Condition", cond)) return FL_ERROR;
    if (cond->dtype != FL_DT_BOOL)
        return fl_err(e, "where: Condition %s has dtype %s; bool expected", fl_tensor_shape(cond).s,
                      fl_dtype_name(cond->dtype));
    const unsigned char *p = fl_tensor_data(cond);
    int64_t n = fl_tensor_numel(cond), k = 0, at[FL_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n; i++) k += p[i] != 0;
    int64_t ne[2] = {k, cond->ndim};
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc(e, "where", &r, FL_DT_INT64, 2, ne)) return FL_ERROR;
    int64_t *o = fl_tensor_data(&r);
    for (int64_t i = 0; i < n; i++) {
        if (p[i]) {
            memcpy(o, at, (size_t)cond->ndim * sizeof *o);
            o += cond->ndim;
        }
        for (int j = cond->ndim - 1; j >= 0 && ++at[j] == cond->ne[j]; j--) at[j] = 0;
    }
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_shape(FlErr *e, const FlTensor *x, FlTensor *out) {
    if (khas(e, "shape", "Input", x)) return FL_ERROR;
    int64_t nd = x->ndim;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc(e, "shape", &r, FL_DT_INT32, 1, &nd)) return FL_ERROR;
    int32_t *o = fl_tensor_data(&r);
    for (int i = 0; i < x->ndim; i++) o[i] = fl_sat_i32_of(x->ne[i]);
    kout(out, &r);
    return FL_OK;
}

/* ---- losses ---- */

/* Two float inputs of one dtype and shape. */
static FlStatus pair(FlErr *e, const char *op, const char *an, const FlTensor *a, const char *bn, const FlTensor *b) {
    return kneed_float(e, op, an, a) || ksame(e, op, an, a, bn, b) ? FL_ERROR : FL_OK;
}

/* The results of a two-input loss's gradient, shaped like `like`: a (want_a) and b (want_b). */
static FlStatus two_grads(FlErr *e, const char *op, const FlTensor *like, bool want_a, FlTensor *a, bool want_b,
                          FlTensor *b) {
    if ((want_a && kalloc_raw_like(e, op, a, like)) || (want_b && kalloc_raw_like(e, op, b, like))) {
        fl_tensor_fini(a);
        return FL_ERROR;
    }
    return FL_OK;
}

FlStatus fl_kernel_log_loss(FlErr *e, const FlTensor *p, const FlTensor *l, double eps, FlTensor *loss) {
    if (pair(e, "log_loss", "Predicted", p, "Labels", l)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, "log_loss", &r, p)) return FL_ERROR;
    const void *pp = fl_tensor_data(p), *pl = fl_tensor_data(l);
    void *o = fl_tensor_data(&r);
    int64_t n = fl_tensor_numel(p);
    for (int64_t i = 0; i < n; i++) {
        double v = fget(p, pp, i), y = fget(l, pl, i);
        fput(&r, o, i, -y * log(v + eps) - (1 - y) * log(1 - v + eps));
    }
    kout(loss, &r);
    return FL_OK;
}

FlStatus fl_kernel_log_loss_grad(FlErr *e, const FlTensor *p, const FlTensor *l, const FlTensor *dloss, double eps,
                                 FlTensor *dp, FlTensor *dl) {
    if (pair(e, "log_loss_grad", "Predicted", p, "Labels", l) ||
        ksame(e, "log_loss_grad", "Predicted", p, "Loss@GRAD", dloss))
        return FL_ERROR;
    FlTensor rp = FL_TENSOR_INIT, rl = FL_TENSOR_INIT;
    if (two_grads(e, "log_loss_grad", p, dp != NULL, &rp, dl != NULL, &rl)) return FL_ERROR;
    const void *pp = fl_tensor_data(p), *pl = fl_tensor_data(l), *pg = fl_tensor_data(dloss);
    int64_t n = fl_tensor_numel(p);
    for (int64_t i = 0; i < n; i++) {
        double v = fget(p, pp, i), y = fget(l, pl, i), g = fget(dloss, pg, i);
        if (dp) fput(&rp, fl_tensor_data(&rp), i, g * (-y / (v + eps) + (1 - y) / (1 - v + eps)));
        if (dl) fput(&rl, fl_tensor_data(&rl), i, g * (-log(v + eps) + log(1 - v + eps)));
    }
    kout(dp, &rp);
    kout(dl, &rl);
    return FL_OK;
}

FlStatus fl_kernel_ts_sigmoid_loss(FlErr *e, const FlTensor *x, const FlTensor *label, FlTensor *y) {
    const char *op = "teacher_student_sigmoid_loss";
    if (pair(e, op, "X", x, "Label", label)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, op, &r, x)) return FL_ERROR;
    const void *px = fl_tensor_data(x), *pl = fl_tensor_data(label);
    void *o = fl_tensor_data(&r);
    int64_t n = fl_tensor_numel(x);
    for (int64_t i = 0; i < n; i++) {
        double v = fget(x, px, i), l = fget(label, pl, i);
        double ce0 = (v > 0 ? v : 0) + log1p(exp(-fabs(v))); /* the cross-entropy against 0 */
        double out = l < -1 ? ce0 : l < 0 ? ce0 - v : l < 1 ? ce0 + ce0 - v * l : ce0 - v + ce0 - v * (l - 1);
        fput(&r, o, i, out);
    }
    kout(y, &r);
    return FL_OK;
}

FlStatus fl_kernel_ts_sigmoid_loss_grad(FlErr *e, const FlTensor *x, const FlTensor *label, const FlTensor *dy,
                                        double up, double lo, FlTensor *dx, FlTensor *dlabel) {
    const char *op = "teacher_student_sigmoid_loss_grad";
    if (pair(e, op, "X", x, "Label", label) || ksame(e, op, "X", x, "Y@GRAD", dy)) return FL_ERROR;
    FlTensor rx = FL_TENSOR_INIT, rl = FL_TENSOR_INIT;
    if (two_grads(e, op, x, dx != NULL, &rx, dlabel != NULL, &rl)) return FL_ERROR;
    const void *px = fl_tensor_data(x), *pl = fl_tensor_data(label), *pg = fl_tensor_data(dy);
    int64_t n = fl_tensor_numel(x);
    for (int64_t i = 0; i < n; i++) {
        double v = fget(x, px, i), l = fget(label, pl, i), g = fget(dy, pg, i);
        double c = v > up ? up : v < lo ? lo : v, s = 1 / (1 + exp(-c));
        double d = l < -1 ? s : l < 0 ? s - 1 : 2 * s - l;
        if (c >= up || c <= lo) d = 0;
        if (dx) fput(&rx, fl_tensor_data(&rx), i, g * d);
        if (dlabel) fput(&rl, fl_tensor_data(&rl), i, l >= 0 ? -g * v : 0);
    }
    kout(dx, &rx);
    kout(dlabel, &rl);
    return FL_OK;
}

FlStatus fl_kernel_huber_loss(FlErr *e, const FlTensor *x, const FlTensor *y, double delta, FlTensor *out,
                              FlTensor *residual) {
    if (pair(e, "huber_loss", "X", x, "Y", y)) return FL_ERROR;
    FlTensor ro = FL_TENSOR_INIT, rr = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, "huber_loss", &ro, x) || kalloc_raw_like(e, "huber_loss", &rr, x)) {
        fl_tensor_fini(&ro);
        return FL_ERROR;
    }
    const void *px = fl_tensor_data(x), *py = fl_tensor_data(y);
    void *o = fl_tensor_data(&ro), *res = fl_tensor_data(&rr);
    int64_t n = fl_tensor_numel(x);
    for (int64_t i = 0; i < n; i++) {
        double r = fget(y, py, i) - fget(x, px, i), a = fabs(r);
        fput(&rr, res, i, r);
        fput(&ro, o, i, a <= delta ? 0.5 * r * r : delta * (a - 0.5 * delta));
    }
    kout(out, &ro);
    kout(residual, &rr);
    return FL_OK;
}

FlStatus fl_kernel_huber_loss_grad(FlErr *e, const FlTensor *residual, const FlTensor *dout, double delta,
                                   FlTensor *dx, FlTensor *dy) {
    if (pair(e, "huber_loss_grad", "Residual", residual, "Out@GRAD", dout)) return FL_ERROR;
    FlTensor rx = FL_TENSOR_INIT, ry = FL_TENSOR_INIT;
    if ((dx && kalloc_raw_like(e, "huber_loss_grad", &rx, dout)) ||
        (dy && kalloc_raw_like(e, "huber_loss_grad", &ry, dout))) {
        fl_tensor_fini(&rx);
        return FL_ERROR;
    }
    const void *pr = fl_tensor_data(residual), *pg = fl_tensor_data(dout);
    int64_t n = fl_tensor_numel(dout);
    for (int64_t i = 0; i < n; i++) {
        double r = fget(residual, pr, i), g = fget(dout, pg, i);
        double d = g * (r > delta ? delta : r < -delta ? -delta : r);
        if (dx) fput(&rx, fl_tensor_data(&rx), i, -d);
        if (dy) fput(&ry, fl_tensor_data(&ry), i, d);
    }
    kout(dx, &rx);
    kout(dy, &ry);
    return FL_OK;
}

/* The factor of the elementwise loss in the reduced one (mean: 1/numel, batchmean: 1/N). */
static double kl_scale(const FlTensor *x, FlKlReduction r) {
    switch (r) {
    case FL_KL_NONE:
    case FL_KL_SUM: return 1;
    case FL_KL_MEAN: return fl_tensor_numel(x) ? 1.0 / (double)fl_tensor_numel(x) : 0;
    case FL_KL_BATCHMEAN: return x->ndim && x->ne[0] ? 1.0 / (double)x->ne[0] : 0;
    }
    FL_UNREACHABLE();
}

FlStatus fl_kernel_kldiv_loss(FlErr *e, const FlTensor *x, const FlTensor *t, FlKlReduction red, FlTensor *loss) {
    if (pair(e, "kldiv_loss", "X", x, "Target", t)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    int64_t one = 1;
    if (red == FL_KL_NONE ? kalloc_raw_like(e, "kldiv_loss", &r, x) : kalloc(e, "kldiv_loss", &r, x->dtype, 1, &one))
        return FL_ERROR;
    const void *px = fl_tensor_data(x), *pt = fl_tensor_data(t);
    void *o = fl_tensor_data(&r);
    int64_t n = fl_tensor_numel(x);
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = fget(t, pt, i), l = v > 0 ? v * (log(v) - fget(x, px, i)) : 0;
        if (red == FL_KL_NONE) fput(&r, o, i, l);
        else sum += l;
    }
    if (red != FL_KL_NONE) fput(&r, o, 0, sum * kl_scale(x, red));
    kout(loss, &r);
    return FL_OK;
}

FlStatus fl_kernel_kldiv_loss_grad(FlErr *e, const FlTensor *x, const FlTensor *t, const FlTensor *dloss,
                                   FlKlReduction red, FlTensor *dx, FlTensor *dt) {
    if (pair(e, "kldiv_loss_grad", "X", x, "Target", t) || kneed_float(e, "kldiv_loss_grad", "Loss@GRAD", dloss))
        return FL_ERROR;
    if (red == FL_KL_NONE ? !fl_tensor_same_shape(dloss, x) : fl_tensor_numel(dloss) != 1)
        return fl_err(e, "kldiv_loss_grad: Loss@GRAD %s does not fit X %s", fl_tensor_shape(dloss).s,
                      fl_tensor_shape(x).s);
    FlTensor rx = FL_TENSOR_INIT, rt = FL_TENSOR_INIT;
    if ((dx && kalloc_raw_like(e, "kldiv_loss_grad", &rx, x)) || (dt && kalloc_raw_like(e, "kldiv_loss_grad", &rt, x))) {
        fl_tensor_fini(&rx);
        return FL_ERROR;
    }
    const void *px = fl_tensor_data(x), *pt = fl_tensor_data(t), *pg = fl_tensor_data(dloss);
    double s = kl_scale(x, red);
    int64_t n = fl_tensor_numel(x);
    for (int64_t i = 0; i < n; i++) {
        double v = fget(t, pt, i), g = s * fget(dloss, pg, red == FL_KL_NONE ? i : 0);
        if (dx) fput(&rx, fl_tensor_data(&rx), i, v > 0 ? -v * g : 0);
        if (dt) fput(&rt, fl_tensor_data(&rt), i, v > 0 ? (log(v) + 1 - fget(x, px, i)) * g : 0);
    }
    kout(dx, &rx);
    kout(dt, &rt);
    return FL_OK;
}

/* ---- multiplex ---- */

static FlStatus multiplex_check(FlErr *e, const char *op, const FlTensor *const *xs, int n, const FlTensor *ids) {
    if (n < 1) return fl_err(e, "%s: no inputs to choose from", op);
    for (int k = 0; k < n; k++) {
        if (khas(e, op, "X", xs[k])) return FL_ERROR;
        if (xs[k]->ndim < 1 || (k && !fl_tensor_same_shape(xs[0], xs[k])) || xs[k]->dtype != xs[0]->dtype)
            return fl_err(e, "%s: X %d is %s %s but X 0 is %s %s: the inputs must have one shape and dtype", op, k,
                          fl_dtype_name(xs[k]->dtype), fl_tensor_shape(xs[k]).s, fl_dtype_name(xs[0]->dtype),
                          fl_tensor_shape(xs[0]).s);
    }
    if (khas(e, op, "Ids", ids)) return FL_ERROR;
    int64_t M = xs[0]->ne[0];
    if (fl_tensor_numel(ids) != M)
        return fl_err(e, "%s: Ids %s must hold one index per row of X %s", op, fl_tensor_shape(ids).s,
                      fl_tensor_shape(xs[0]).s);
    for (int64_t i = 0; i < M; i++) {
        int64_t k = fl_tensor_get_int(ids, i);
        if (k < 0 || k >= n)
            return fl_err(e, "%s: Ids row %lld is %lld, outside the %d inputs [0, %d)", op, (long long)i, (long long)k,
                          n, n);
    }
    return FL_OK;
}

FlStatus fl_kernel_multiplex(FlErr *e, const FlTensor *const *xs, int n, const FlTensor *ids, FlTensor *out) {
    const char *op = "multiplex";
    if (kwant(e, op, "Out", out) || multiplex_check(e, op, xs, n, ids)) return FL_ERROR;
    int64_t M = xs[0]->ne[0], row = M ? fl_tensor_numel(xs[0]) / M * (int64_t)fl_dtype_size(xs[0]->dtype) : 0;
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, op, &o, xs[0])) return FL_ERROR;
    for (int64_t i = 0; i < M; i++)
        memcpy((char *)fl_tensor_data(&o) + i * row,
               (const char *)fl_tensor_data(xs[fl_tensor_get_int(ids, i)]) + i * row, (size_t)row);
    kout(out, &o);
    return FL_OK;
}

FlStatus fl_kernel_multiplex_grad(FlErr *e, const FlTensor *const *xs, int n, const FlTensor *ids,
                                  const FlTensor *dout, FlTensor *const *dxs) {
    const char *op = "multiplex_grad";
    if (multiplex_check(e, op, xs, n, ids) || ksame(e, op, "X", xs[0], "Out@GRAD", dout)) return FL_ERROR;
    int64_t M = xs[0]->ne[0], row = M ? fl_tensor_numel(xs[0]) / M * (int64_t)fl_dtype_size(xs[0]->dtype) : 0;
    for (int k = 0; k < n; k++) {
        if (!dxs[k]) continue;
        FlTensor d = FL_TENSOR_INIT;
        if (kalloc_like(e, op, &d, xs[0])) return FL_ERROR;
        for (int64_t i = 0; i < M; i++)
            if (fl_tensor_get_int(ids, i) == k)
                memcpy((char *)fl_tensor_data(&d) + i * row, (const char *)fl_tensor_data(dout) + i * row, (size_t)row);
        kout(dxs[k], &d);
    }
    return FL_OK;
}

/* ---- range, linspace ---- */

/* One element of dtype dt in slot `slot` */
static FlStatus one_elem(FlErr *e, const char *op, const char *slot, const FlTensor *t, FlDType dt) {
    if (khas(e, op, slot, t)) return FL_ERROR;
    if (fl_tensor_numel(t) != 1 || t->dtype != dt)
        return fl_err(e, "%s: %s %s (%s) must hold one %s", op, slot, fl_tensor_shape(t).s, fl_dtype_name(t->dtype),
                      fl_dtype_name(dt));
    return FL_OK;
}

/* Element i of an int32 or int64 tensor */
static int64_t int_of(const FlTensor *t, int64_t i) {
    return t->dtype == FL_DT_INT32 ? ((const int32_t *)fl_tensor_data(t))[i] : ((const int64_t *)fl_tensor_data(t))[i];
}

static int64_t int_elem(const FlTensor *t) { return int_of(t, 0); }

#define FL_RANGE_MAX ((int64_t)1 << 31)

FlStatus fl_kernel_range(FlErr *e, const FlTensor *start, const FlTensor *end, const FlTensor *step,
                         FlTensor *out) {
    const char *op = "range";
    if (khas(e, op, "Start", start) || kneed_num(e, op, "Start", start)) return FL_ERROR;
    FlDType dt = start->dtype;
    if (one_elem(e, op, "Start", start, dt) || one_elem(e, op, "End", end, dt) || one_elem(e, op, "Step", step, dt))
        return FL_ERROR;
    double s = fl_tensor_get(start, 0), en = fl_tensor_get(end, 0), st = fl_tensor_get(step, 0);
    if (isnan(s) || isnan(en) || isnan(st) || isinf(s) || isinf(en) || isinf(st))
        return fl_err(e, "%s: Start %g, End %g and Step %g must be finite", op, s, en, st);
    if (st == 0) return fl_err(e, "%s: Step is 0", op);
    if ((s < en && st < 0) || (s > en && st > 0))
        return fl_err(e, "%s: Step %g points away from End %g (Start %g)", op, st, en, s);
    double want; /* the count, as Fluid's GetSize computes it in the dtype */
    if (dt == FL_DT_INT32 || dt == FL_DT_INT64) {
        int64_t a = int_elem(start), b = int_elem(end), c = int_elem(step);
        double span = fabs((double)b - (double)a), by = fabs((double)c);
        want = floor((span + by - 1) / by);
    } else if (dt == FL_DT_FLOAT32) {
        want = ceilf(fabsf(((float)en - (float)s) / (float)st));
    } else {
        want = ceil(fabs((en - s) / st));
    }
    if (want > (double)FL_RANGE_MAX)
        return fl_err(e, "%s: %.0f values from %g to %g by %g are too many (at most 2^31)", op, want, s, en, st);
    int64_t n = (int64_t)want;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc(e, op, &r, dt, 1, &n)) return FL_ERROR;
    void *o = fl_tensor_data(&r);
    switch (dt) {
    case FL_DT_FLOAT32: {
        float v = (float)s, by = (float)st;
        for (int64_t i = 0; i < n; i++, v += by) ((float *)o)[i] = v;
        break;
    }
    case FL_DT_FLOAT64: {
        double v = s;
        for (int64_t i = 0; i < n; i++, v += st) ((double *)o)[i] = v;
        break;
    }
    case FL_DT_INT32: {
        int64_t v = int_elem(start), by = int_elem(step);
        for (int64_t i = 0; i < n; i++, v += by) ((int32_t *)o)[i] = (int32_t)v;
        break;
    }
    case FL_DT_INT64: {
        int64_t v = int_elem(start), by = int_elem(step);
        for (int64_t i = 0; i < n; i++, v += by) ((int64_t *)o)[i] = v;
        break;
    }
    case FL_DT_FLOAT16:
    case FL_DT_INT8:
    case FL_DT_UINT8:
    case FL_DT_BOOL:
    case FL_DT_COUNT: FL_UNREACHABLE(); /* refused by kneed_num */
    }
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_linspace(FlErr *e, const FlTensor *start, const FlTensor *stop, const FlTensor *num,
                            FlTensor *out) {
    const char *op = "linspace";
    if (khas(e, op, "Start", start) || kneed_float(e, op, "Start", start) || khas(e, op, "Num", num)) return FL_ERROR;
    if (one_elem(e, op, "Start", start, start->dtype) || one_elem(e, op, "Stop", stop, start->dtype) ||
        one_elem(e, op, "Num", num, num->dtype == FL_DT_INT32 ? FL_DT_INT32 : FL_DT_INT64))
        return FL_ERROR;
    int64_t n = int_elem(num);
    if (n < 1 || n > FL_RANGE_MAX) return fl_err(e, "%s: Num is %lld, must be in [1, 2^31]", op, (long long)n);
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc(e, op, &r, start->dtype, 1, &n)) return FL_ERROR;
    void *o = fl_tensor_data(&r);
    if (start->dtype == FL_DT_FLOAT32) {
        float a = *(const float *)fl_tensor_data(start), b = *(const float *)fl_tensor_data(stop);
        float by = n > 1 ? (b - a) / (float)(n - 1) : 0;
        for (int64_t i = 0; i < n; i++) ((float *)o)[i] = a + by * (float)i;
    } else {
        double a = *(const double *)fl_tensor_data(start), b = *(const double *)fl_tensor_data(stop);
        double by = n > 1 ? (b - a) / (double)(n - 1) : 0;
        for (int64_t i = 0; i < n; i++) ((double *)o)[i] = a + by * (double)i;
    }
    kout(out, &r);
    return FL_OK;
}

/* ---- mean_iou ---- */

FlStatus fl_kernel_mean_iou(FlErr *e, const FlTensor *pred, const FlTensor *label, int64_t k, FlTensor *miou,
                            FlTensor *wrong, FlTensor *correct) {
    const char *op = "mean_iou";
    if (khas(e, op, "Predictions", pred) || khas(e, op, "Labels", label)) return FL_ERROR;
    if ((pred->dtype != FL_DT_INT32 && pred->dtype != FL_DT_INT64) || label->dtype != pred->dtype ||
        pred->ndim != label->ndim || memcmp(pred->ne, label->ne, sizeof pred->ne) != 0)
        return fl_err(e, "%s: Predictions %s (%s) and Labels %s (%s) must be int32 or int64 of one shape", op,
                      fl_tensor_shape(pred).s, fl_dtype_name(pred->dtype), fl_tensor_shape(label).s,
                      fl_dtype_name(label->dtype));
    if (k < 1) return fl_err(e, "%s: num_classes is %lld, must be >= 1", op, (long long)k);
    FlTensor r[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    int64_t one = 1;
    if (kalloc(e, op, &r[0], FL_DT_FLOAT32, 1, &one) || kalloc(e, op, &r[1], FL_DT_INT32, 1, &k) ||
        kalloc(e, op, &r[2], FL_DT_INT32, 1, &k)) {
        kfini_all(r, 3);
        return FL_ERROR;
    }
    int32_t *w = fl_tensor_data(&r[1]), *ok = fl_tensor_data(&r[2]);
    memset(w, 0, (size_t)k * sizeof *w);
    memset(ok, 0, (size_t)k * sizeof *ok);
    int64_t n = fl_tensor_numel(pred);
    for (int64_t i = 0; i < n; i++) {
        int64_t p = int_of(pred, i), l = int_of(label, i);
        if (p < 0 || p >= k || l < 0 || l >= k) {
            kfini_all(r, 3);
            return fl_err(e, "%s: element %lld has prediction %lld and label %lld; class ids must be in [0, %lld)", op,
                          (long long)i, (long long)p, (long long)l, (long long)k);
        }
        if (p == l) {
            ok[p]++;
        } else {
            w[l]++;
            w[p]++;
        }
    }
    float sum = 0;
    int valid = 0;
    for (int64_t c = 0; c < k; c++) {
        int32_t d = w[c] + ok[c];
        valid += d > 0;
        sum += (float)ok[c] / (float)(d > 0 ? d : 1);
    }
    *(float *)fl_tensor_data(&r[0]) = sum / (float)valid; /* 0 / 0: NaN, as Fluid */
    kout(miou, &r[0]);
    kout(wrong, &r[1]);
    kout(correct, &r[2]);
    return FL_OK;
}
