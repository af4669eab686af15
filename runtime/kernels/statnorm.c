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
