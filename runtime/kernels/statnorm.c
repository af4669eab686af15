/* statnorm.c: the normalisations by held statistics, data_norm and spectral_norm, and their
 * gradients (kernels_statnorm.h). */
#include "runtime/kernels/kernels_statnorm.h"

#include <math.h>

#include "runtime/kernels/kernels_impl.h"

/* a float [C] of x's dtype */
static FlStatus check_col(FlErr *e, const char *op, const char *slot, const FlTensor *t, const FlTensor *x) {
    if (kneed_float(e, op, slot, t) || ksame_dtype(e, op, "X", x, slot, t)) return FL_ERROR;
    if (t->ndim != 1 || t->ne[0] != x->ne[1])
        return fl_err(e, "%s: %s %s must be [%lld] (one value per column of X %s)", op, slot, fl_tensor_shape(t).s,
                      (long long)x->ne[1], fl_tensor_shape(x).s);
    return FL_OK;
}

static FlStatus check_x(FlErr *e, const char *op, const FlTensor *x) {
    if (kneed_float(e, op, "X", x)) return FL_ERROR;
    if (x->ndim != 2) return fl_err(e, "%s: X %s must be [N, C]", op, fl_tensor_shape(x).s);
    return FL_OK;
}

/* ---- data_norm ---- */

FlStatus fl_kernel_data_norm(FlErr *e, const FlTensor *x, const FlTensor *batch_size, const FlTensor *batch_sum,
                             const FlTensor *batch_square_sum, FlTensor *y, FlTensor *means, FlTensor *scales) {
    const char *op = "data_norm";
    if (kwant(e, op, "Y", y) || check_x(e, op, x) || check_col(e, op, "BatchSize", batch_size, x) ||
        check_col(e, op, "BatchSum", batch_sum, x) || check_col(e, op, "BatchSquareSum", batch_square_sum, x))
        return FL_ERROR;
    int64_t N = x->ne[0], C = x->ne[1];
    FlTensor o = FL_TENSOR_INIT, m = FL_TENSOR_INIT, s = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &o, x) || kalloc_like(e, op, &m, batch_size) || kalloc_like(e, op, &s, batch_size)) {
        fl_tensor_fini(&o);
        fl_tensor_fini(&m);
        return FL_ERROR;
    }
    for (int64_t j = 0; j < C; j++) {
        double n = fl_tensor_get(batch_size, j);
        fl_tensor_set(&m, j, fl_tensor_get(batch_sum, j) / n);
        fl_tensor_set(&s, j, sqrt(n / fl_tensor_get(batch_square_sum, j)));
    }
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < C; j++)
            fl_tensor_set(&o, i * C + j, (fl_tensor_get(x, i * C + j) - fl_tensor_get(&m, j)) * fl_tensor_get(&s, j));
    kout(y, &o);
    kout(means, &m);
    kout(scales, &s);
    return FL_OK;
}

FlStatus fl_kernel_data_norm_grad(FlErr *e, const FlTensor *x, const FlTensor *means, const FlTensor *scales,
                                  const FlTensor *dy, double epsilon, FlTensor *dx, FlTensor *d_size,
                                  FlTensor *d_sum, FlTensor *d_square_sum) {
    const char *op = "data_norm_grad";
    if (!dx && !d_size && !d_sum && !d_square_sum) return FL_OK;
    if (check_x(e, op, x) || check_col(e, op, "Means", means, x) || check_col(e, op, "Scales", scales, x) ||
        ksame(e, op, "X", x, "Y@GRAD", dy))
        return FL_ERROR;
    int64_t N = x->ne[0], C = x->ne[1];
    FlTensor gx = FL_TENSOR_INIT, gn = FL_TENSOR_INIT, gs = FL_TENSOR_INIT, gq = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &gx, x) || kalloc_like(e, op, &gn, means) || kalloc_like(e, op, &gs, means) ||
        kalloc_like(e, op, &gq, means)) {
        fl_tensor_fini(&gx);
        fl_tensor_fini(&gn);
        fl_tensor_fini(&gs);
        return FL_ERROR;
    }
    for (int64_t j = 0; j < C; j++) {
        double mean = fl_tensor_get(means, j), scale = fl_tensor_get(scales, j), sum = 0, sq = 0;
        for (int64_t i = 0; i < N; i++) {
            double v = fl_tensor_get(x, i * C + j);
            fl_tensor_set(&gx, i * C + j, fl_tensor_get(dy, i * C + j) * scale);
            sum += v;
            sq += (v - mean) * (v - mean);
        }
        fl_tensor_set(&gn, j, (double)N);
        fl_tensor_set(&gs, j, sum);
        fl_tensor_set(&gq, j, sq + (double)N * epsilon);
    }
    kout(dx, &gx);
    kout(d_size, &gn);
    kout(d_sum, &gs);
    kout(d_square_sum, &gq);
    return FL_OK;
}

/* ---- spectral_norm ---- */

/* W [h, w] of weight's axis dim by the rest: idx[r * w + c] is the element's index in weight */
typedef struct SnMat {
    int64_t h, w;
    int64_t *idx;
    double *W, *u, *v, sigma;
} SnMat;

static FlStatus sn_check(FlErr *e, const char *op, const FlTensor *weight, const FlTensor *u, const FlTensor *v,
                         int dim, int64_t iters, double eps) {
    if (kneed_float(e, op, "Weight", weight) || kneed_float(e, op, "U", u) || kneed_float(e, op, "V", v) ||
        ksame_dtype(e, op, "Weight", weight, "U", u) || ksame_dtype(e, op, "Weight", weight, "V", v))
        return FL_ERROR;
    if (weight->ndim < 2 || weight->ndim > 5 || dim < 0 || dim >= weight->ndim)
        return fl_err(e, "%s: Weight %s must have rank 2 to 5 and dim (%d) be one of its axes", op,
                      fl_tensor_shape(weight).s, dim);
    if (iters < 0 || !(eps > 0))
        return fl_err(e, "%s: power_iters (%lld) must be >= 0 and eps (%g) > 0", op, (long long)iters, eps);
    int64_t h = weight->ne[dim], w = fl_tensor_numel(weight) / (h ? h : 1);
    if (u->ndim != 1 || u->ne[0] != h || v->ndim != 1 || v->ne[0] != w)
        return fl_err(e, "%s: U %s and V %s must be [%lld] and [%lld] for Weight %s (dim %d)", op, fl_tensor_shape(u).s,
                      fl_tensor_shape(v).s, (long long)h, (long long)w, fl_tensor_shape(weight).s, dim);
    return FL_OK;
}

static double norm2(const double *x, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += x[i] * x[i];
    return sqrt(s);
}

/* y = W x / (|W x| + eps) for W [h, w] (transposed: W^T x) */
static void power_step(const double *W, int64_t h, int64_t w, bool transposed, const double *x, double *y,
                       double eps) {
    int64_t ny = transposed ? w : h, nx = transposed ? h : w;
    for (int64_t i = 0; i < ny; i++) {
        double s = 0;
        for (int64_t k = 0; k < nx; k++) s += (transposed ? W[k * w + i] : W[i * w + k]) * x[k];
        y[i] = s;
    }
    double n = norm2(y, ny) + eps;
    for (int64_t i = 0; i < ny; i++) y[i] /= n;
}

/* the matrix, the power iteration and sigma */
static void sn_build(SnMat *m, const FlTensor *weight, const FlTensor *u, const FlTensor *v, int dim, int64_t iters,
                     double eps) {
    int nd = weight->ndim;
    m->h = weight->ne[dim];
    m->w = fl_tensor_numel(weight) / (m->h ? m->h : 1);
    int64_t n = m->h * m->w, stride[FL_MAX_DIMS];
    stride[nd - 1] = 1;
    for (int i = nd - 2; i >= 0; i--) stride[i] = stride[i + 1] * weight->ne[i + 1];
    m->idx = fl_xcalloc((size_t)n + 1, sizeof(int64_t));
    m->W = fl_xcalloc((size_t)n + 1, sizeof(double));
    m->u = fl_xcalloc((size_t)m->h + 1, sizeof(double));
    m->v = fl_xcalloc((size_t)m->w + 1, sizeof(double));
    for (int64_t r = 0; r < m->h; r++)
        for (int64_t c = 0; c < m->w; c++) {
            /* c counts the other axes row-major, in their order */
            int64_t rem = c, k = r * stride[dim];
            for (int i = nd - 1; i >= 0; i--) {
                if (i == dim) continue;
                k += (rem % weight->ne[i]) * stride[i];
                rem /= weight->ne[i];
            }
            m->idx[r * m->w + c] = k;
            m->W[r * m->w + c] = fl_tensor_get(weight, k);
        }
    for (int64_t r = 0; r < m->h; r++) m->u[r] = fl_tensor_get(u, r);
    for (int64_t c = 0; c < m->w; c++) m->v[c] = fl_tensor_get(v, c);
    for (int64_t it = 0; it < iters; it++) {
        power_step(m->W, m->h, m->w, true, m->u, m->v, eps);
        power_step(m->W, m->h, m->w, false, m->v, m->u, eps);
    }
    double sigma = 0;
    for (int64_t r = 0; r < m->h; r++)
        for (int64_t c = 0; c < m->w; c++) sigma += m->u[r] * m->W[r * m->w + c] * m->v[c];
    m->sigma = sigma;
}

static void sn_free(SnMat *m) {
    free(m->idx);
    free(m->W);
    free(m->u);
    free(m->v);
}

FlStatus fl_kernel_spectral_norm(FlErr *e, const FlTensor *weight, const FlTensor *u, const FlTensor *v, int dim,
                                 int64_t power_iters, double eps, FlTensor *out) {
    const char *op = "spectral_norm";
    if (kwant(e, op, "Out", out) || sn_check(e, op, weight, u, v, dim, power_iters, eps)) return FL_ERROR;
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &o, weight)) return FL_ERROR;
    SnMat m;
    sn_build(&m, weight, u, v, dim, power_iters, eps);
    for (int64_t k = 0; k < m.h * m.w; k++) fl_tensor_set(&o, m.idx[k], m.W[k] / m.sigma);
    sn_free(&m);
    kout(out, &o);
    return FL_OK;
}

FlStatus fl_kernel_spectral_norm_grad(FlErr *e, const FlTensor *weight, const FlTensor *u, const FlTensor *v,
                                      const FlTensor *dout, int dim, int64_t power_iters, double eps,
                                      FlTensor *dweight) {
    const char *op = "spectral_norm_grad";
    if (!dweight) return FL_OK;
    if (sn_check(e, op, weight, u, v, dim, power_iters, eps) || ksame(e, op, "Weight", weight, "Out@GRAD", dout))
        return FL_ERROR;
    FlTensor g = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &g, weight)) return FL_ERROR;
    SnMat m;
    sn_build(&m, weight, u, v, dim, power_iters, eps);
    double dot = 0; /* <dOut, Out> */
    for (int64_t k = 0; k < m.h * m.w; k++) dot += fl_tensor_get(dout, m.idx[k]) * m.W[k] / m.sigma;
    for (int64_t r = 0; r < m.h; r++)
        for (int64_t c = 0; c < m.w; c++) {
            int64_t k = r * m.w + c;
            fl_tensor_set(&g, m.idx[k], (fl_tensor_get(dout, m.idx[k]) - dot * m.u[r] * m.v[c]) / m.sigma);
        }
    sn_free(&m);
    kout(dweight, &g);
    return FL_OK;
}
