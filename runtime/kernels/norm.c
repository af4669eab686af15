/* norm.c: batch_norm (training and test mode, Paddle's outputs) and dropout
 * ("downgrade_in_infer"). Per-channel statistics accumulate in double. */
#include "runtime/kernels/kernels_impl.h"
#include "runtime/rng.h"

#include <math.h>

#define FL_TMPL "norm_t.inc"
#include "runtime/kernels/tmpl.h"

static FlStatus bn_check_c(FlErr *e, const char *op, const char *slot, const FlTensor *x,
                           const FlTensor *t) {
    if (ksame_dtype(e, op, "X", x, slot, t)) return FL_ERROR;
    if (t->ndim != 1 || t->ne[0] != x->ne[1])
        return fl_err(e, "%s: X %s and %s %s: %s must be [C] with C = %lld (X's dim 1)", op,
                      fl_tensor_shape(x).s, slot, fl_tensor_shape(t).s, slot, (long long)x->ne[1]);
    return FL_OK;
}

static FlStatus bn_x(FlErr *e, const char *op, const FlTensor *x) {
    if (kneed_float(e, op, "X", x)) return FL_ERROR;
    if (x->ndim < 2)
        return fl_err(e, "%s: X %s must be [N, C] or [N, C, ...]", op, fl_tensor_shape(x).s);
    return FL_OK;
}

FlStatus fl_kernel_batch_norm(FlErr *e, const FlTensor *x, const FlTensor *scale,
                              const FlTensor *bias, const FlTensor *mean,
                              const FlTensor *variance, double momentum, double epsilon,
                              bool is_test, FlTensor *y, FlTensor *mean_out,
                              FlTensor *variance_out, FlTensor *saved_mean,
                              FlTensor *saved_variance) {
    const char *op = "batch_norm";
    if (bn_x(e, op, x) || bn_check_c(e, op, "Scale", x, scale) ||
        bn_check_c(e, op, "Bias", x, bias) || bn_check_c(e, op, "Mean", x, mean) ||
        bn_check_c(e, op, "Variance", x, variance))
        return FL_ERROR;
    if (!(epsilon >= 0)) return fl_err(e, "%s: epsilon (%g) must be >= 0", op, epsilon);
    if (kwant(e, op, "Y", y)) return FL_ERROR;
    FlTensor r[5];
    for (int i = 0; i < 5; i++) fl_tensor_init(&r[i]);
    FlTensor *outs[5] = {y, mean_out, variance_out, saved_mean, saved_variance};
    for (int i = 0; i < 5; i++)
        if (outs[i] && kalloc_like(e, op, &r[i], i == 0 ? x : mean)) {
            for (int j = 0; j < 5; j++) fl_tensor_fini(&r[j]);
            return FL_ERROR;
        }
    int64_t N = x->ne[0], C = x->ne[1], HW = kprod(x->ne, 2, x->ndim);
#define P(i) (outs[i] ? fl_tensor_data(&r[i]) : NULL)
    if (x->dtype == FL_DT_FLOAT32)
        bn_fwd_f32(fl_tensor_data(x), fl_tensor_data(scale), fl_tensor_data(bias), fl_tensor_data(mean),
                   fl_tensor_data(variance), momentum, epsilon, is_test, P(0), P(1), P(2), P(3), P(4),
                   N, C, HW);
    else
        bn_fwd_f64(fl_tensor_data(x), fl_tensor_data(scale), fl_tensor_data(bias), fl_tensor_data(mean),
                   fl_tensor_data(variance), momentum, epsilon, is_test, P(0), P(1), P(2), P(3), P(4),
                   N, C, HW);
#undef P
    for (int i = 0; i < 5; i++) kout(outs[i], &r[i]);
    return FL_OK;
}

FlStatus fl_kernel_batch_norm_grad(FlErr *e, const FlTensor *x, const FlTensor *scale,
                                   const FlTensor *saved_mean, const FlTensor *saved_variance,
                                   const FlTensor *dy, bool is_test, FlTensor *dx,
                                   FlTensor *dscale, FlTensor *dbias) {
    const char *op = "batch_norm_grad";
    if (bn_x(e, op, x) || bn_check_c(e, op, "Scale", x, scale) ||
        bn_check_c(e, op, "SavedMean", x, saved_mean) ||
        bn_check_c(e, op, "SavedVariance", x, saved_variance) || ksame(e, op, "X", x, "Y@GRAD", dy))
        return FL_ERROR;
    FlTensor rx = FL_TENSOR_INIT, rs = FL_TENSOR_INIT, rb = FL_TENSOR_INIT;
    if ((dx && kalloc_like(e, op, &rx, x)) || (dscale && kalloc_like(e, op, &rs, scale)) ||
        (dbias && kalloc_like(e, op, &rb, scale))) {
        fl_tensor_fini(&rx);
        fl_tensor_fini(&rs);
        fl_tensor_fini(&rb);
        return FL_ERROR;
    }
    int64_t N = x->ne[0], C = x->ne[1], HW = kprod(x->ne, 2, x->ndim);
    void *px = dx ? fl_tensor_data(&rx) : NULL, *ps = dscale ? fl_tensor_data(&rs) : NULL,
         *pb = dbias ? fl_tensor_data(&rb) : NULL;
    if (x->dtype == FL_DT_FLOAT32)
        bn_bwd_f32(fl_tensor_data(x), fl_tensor_data(scale), fl_tensor_data(saved_mean),
                   fl_tensor_data(saved_variance), fl_tensor_data(dy), is_test, px, ps, pb, N, C, HW);
    else
        bn_bwd_f64(fl_tensor_data(x), fl_tensor_data(scale), fl_tensor_data(saved_mean),
                   fl_tensor_data(saved_variance), fl_tensor_data(dy), is_test, px, ps, pb, N, C, HW);
    if (dx) kout(dx, &rx);
    if (dscale) kout(dscale, &rs);
    if (dbias) kout(dbias, &rb);
    return FL_OK;
}

/* ---- dropout ---- */

FlStatus fl_kernel_dropout(FlErr *e, const FlTensor *x, double p, bool is_test, uint64_t seed,
                           uint64_t step, FlTensor *out, FlTensor *mask) {
    if (kneed_float(e, "dropout", "X", x)) return FL_ERROR;
    if (!(p >= 0 && p <= 1)) return fl_err(e, "dropout: dropout_prob (%g) must be in [0, 1]", p);
    FlTensor ro = FL_TENSOR_INIT, rm = FL_TENSOR_INIT;
    if (kalloc_like(e, "dropout", &ro, x)) return FL_ERROR;
    if (!is_test && kalloc_like(e, "dropout", &rm, x)) {
        fl_tensor_fini(&ro);
        return FL_ERROR;
    }
    int64_t n = fl_tensor_numel(x);
    bool f32 = x->dtype == FL_DT_FLOAT32;
    const void *xs = fl_tensor_data(x);
    void *os = fl_tensor_data(&ro), *ms = is_test ? NULL : fl_tensor_data(&rm);
    FlRng rng;
    fl_rng_init2(&rng, seed, step);
    for (int64_t i = 0; i < n; i++) {
        double keep = is_test ? 1 - p : (fl_rng_uniform(&rng) >= p ? 1 : 0);
        if (f32) {
            ((float *)os)[i] = ((const float *)xs)[i] * (float)keep;
            if (ms) ((float *)ms)[i] = (float)keep;
        } else {
            ((double *)os)[i] = ((const double *)xs)[i] * keep;
            if (ms) ((double *)ms)[i] = keep;
        }
    }
    kout(out, &ro);
    if (!is_test) kout(mask, &rm);
    return FL_OK;
}

FlStatus fl_kernel_dropout_grad(FlErr *e, const FlTensor *mask, const FlTensor *dout, double p,
                                bool is_test, FlTensor *dx) {
    if (kneed_float(e, "dropout_grad", "Out@GRAD", dout)) return FL_ERROR;
    if (is_test) return dx ? fl_kernel_scale(e, dout, 1 - p, 0, true, dx) : FL_OK;
    if (!mask) return fl_err(e, "dropout_grad: Mask is needed in training mode");
    if (ksame(e, "dropout_grad", "Mask", mask, "Out@GRAD", dout)) return FL_ERROR;
    if (!dx) return FL_OK;
    return fl_kernel_elementwise_mul(e, dout, mask, -1, dx);
}
