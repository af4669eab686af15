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

/* oneDNN's batch norm for Y; the [C] outputs from its batch statistics (or the running ones in
 * test mode), as bn_fwd forms them. */
static bool bn_fwd_dnnl(const FlTensor *x, const float *scale, const float *bias,
                        const float *mean, const float *var, double momentum, double eps,
                        bool is_test, float *y, float *mean_out, float *var_out,
                        float *saved_mean, float *saved_inv, int64_t N, int64_t C, int64_t HW) {
    float *bm = malloc((size_t)(2 * C) * sizeof *bm + 1);
    if (!bm) return false;
    float *bv = bm + C;
    if (!kdnnl_bn(N, C, HW, fl_tensor_data(x), scale, bias, mean, var, eps, is_test, y, bm, bv)) {
        free(bm);
        return false;
    }
    for (int64_t c = 0; c < C; c++) {
        double mu = is_test ? mean[c] : bm[c], v = is_test ? var[c] : bv[c];
        if (mean_out) mean_out[c] = is_test ? mean[c] : (float)(mean[c] * momentum + mu * (1 - momentum));
        if (var_out) var_out[c] = is_test ? var[c] : (float)(var[c] * momentum + v * (1 - momentum));
        if (saved_mean) saved_mean[c] = (float)mu;
        if (saved_inv) saved_inv[c] = (float)(1 / sqrt(v + eps));
    }
    free(bm);
    return true;
}

static FlStatus batch_norm(FlErr *e, const FlTensor *x, const FlTensor *scale,
                           const FlTensor *bias, const FlTensor *mean, const FlTensor *variance,
                           double momentum, double epsilon, bool is_test, FlTensor *y,
                           FlTensor *mean_out, FlTensor *variance_out, FlTensor *saved_mean,
                           FlTensor *saved_variance, bool fast) {
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
        if (outs[i] && kalloc_raw_like(e, op, &r[i], i == 0 ? x : mean)) { /* written whole */
            for (int j = 0; j < 5; j++) fl_tensor_fini(&r[j]);
            return FL_ERROR;
        }
    int64_t N = x->ne[0], C = x->ne[1], HW = kprod(x->ne, 2, x->ndim);
#define P(i) (outs[i] ? fl_tensor_data(&r[i]) : NULL)
    if (x->dtype == FL_DT_FLOAT32 && fast &&
        bn_fwd_dnnl(x, fl_tensor_data(scale), fl_tensor_data(bias), fl_tensor_data(mean),
                    fl_tensor_data(variance), momentum, epsilon, is_test, P(0), P(1), P(2), P(3),
                    P(4), N, C, HW)) {
        /* done by oneDNN */
    } else if (x->dtype == FL_DT_FLOAT32)
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

static FlStatus batch_norm_grad(FlErr *e, const FlTensor *x, const FlTensor *scale,
                                const FlTensor *saved_mean, const FlTensor *saved_variance,
                                const FlTensor *dy, bool is_test, FlTensor *dx, FlTensor *dscale,
                                FlTensor *dbias, bool fast) {
    const char *op = "batch_norm_grad";
    if (bn_x(e, op, x) || bn_check_c(e, op, "Scale", x, scale) ||
        bn_check_c(e, op, "SavedMean", x, saved_mean) ||
        bn_check_c(e, op, "SavedVariance", x, saved_variance) || ksame(e, op, "X", x, "Y@GRAD", dy))
        return FL_ERROR;
    FlTensor rx = FL_TENSOR_INIT, rs = FL_TENSOR_INIT, rb = FL_TENSOR_INIT;
    /* every kernel writes the gradients whole */
    if ((dx && kalloc_raw_like(e, op, &rx, x)) || (dscale && kalloc_raw_like(e, op, &rs, scale)) ||
        (dbias && kalloc_raw_like(e, op, &rb, scale))) {
        fl_tensor_fini(&rx);
        fl_tensor_fini(&rs);
        fl_tensor_fini(&rb);
        return FL_ERROR;
    }
    int64_t N = x->ne[0], C = x->ne[1], HW = kprod(x->ne, 2, x->ndim);
    void *px = dx ? fl_tensor_data(&rx) : NULL, *ps = dscale ? fl_tensor_data(&rs) : NULL,
         *pb = dbias ? fl_tensor_data(&rb) : NULL;
    if (x->dtype == FL_DT_FLOAT32 && fast &&
        kdnnl_bn_grad(N, C, HW, fl_tensor_data(x), fl_tensor_data(scale),
                      fl_tensor_data(saved_mean), fl_tensor_data(saved_variance),
                      fl_tensor_data(dy), is_test, px, ps, pb)) {
        /* done by oneDNN */
    } else if (x->dtype == FL_DT_FLOAT32)
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

FlStatus fl_kernel_batch_norm(FlErr *e, const FlTensor *x, const FlTensor *scale,
                              const FlTensor *bias, const FlTensor *mean,
                              const FlTensor *variance, double momentum, double epsilon,
                              bool is_test, FlTensor *y, FlTensor *mean_out,
                              FlTensor *variance_out, FlTensor *saved_mean,
                              FlTensor *saved_variance) {
    return batch_norm(e, x, scale, bias, mean, variance, momentum, epsilon, is_test, y, mean_out,
                      variance_out, saved_mean, saved_variance, true);
}
FlStatus fl_kernel_batch_norm_ref(FlErr *e, const FlTensor *x, const FlTensor *scale,
                                  const FlTensor *bias, const FlTensor *mean,
                                  const FlTensor *variance, double momentum, double epsilon,
                                  bool is_test, FlTensor *y, FlTensor *mean_out,
                                  FlTensor *variance_out, FlTensor *saved_mean,
                                  FlTensor *saved_variance) {
    return batch_norm(e, x, scale, bias, mean, variance, momentum, epsilon, is_test, y, mean_out,
                      variance_out, saved_mean, saved_variance, false);
}
FlStatus fl_kernel_batch_norm_grad(FlErr *e, const FlTensor *x, const FlTensor *scale,
                                   const FlTensor *saved_mean, const FlTensor *saved_variance,
                                   const FlTensor *dy, bool is_test, FlTensor *dx,
                                   FlTensor *dscale, FlTensor *dbias) {
    return batch_norm_grad(e, x, scale, saved_mean, saved_variance, dy, is_test, dx, dscale,
                           dbias, true);
}
FlStatus fl_kernel_batch_norm_grad_ref(FlErr *e, const FlTensor *x, const FlTensor *scale,
                                       const FlTensor *saved_mean,
                                       const FlTensor *saved_variance, const FlTensor *dy,
                                       bool is_test, FlTensor *dx, FlTensor *dscale,
                                       FlTensor *dbias) {
    return batch_norm_grad(e, x, scale, saved_mean, saved_variance, dy, is_test, dx, dscale,
                           dbias, false);
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
