/* norm.c: batch_norm (training and test mode, Paddle's outputs) and dropout
 * ("downgrade_in_infer"). Per-channel statistics accumulate in double (the float32 fast path:
 * short float sums added up in double). */
#include "runtime/kernels/kernels_impl.h"
#include "runtime/rng.h"
#include "runtime/kernels/par.h"

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

/* ---- the float32 fast path: channels split across the kernel pool (par.h) ----
 * Each channel's statistics and its outputs are one chunk's work, computed by the same loops
 * whatever the cut, so any thread count gives bit-identical results. A channel's N rows of HW
 * floats are read three times in a row (forward: sum, squared deviations, Y; backward: the two
 * sums, dX): a channel of a batch's activations is a few hundred KB, so the second and third
 * reads come from the CPU's cache, where oneDNN's nchw batch norm (ncsp_bnorm) makes each pass
 * over the whole tensor. Sums run in 16 float lanes over blocks of at most BN_BLOCK elements,
 * each block's total added to a double: the loops vectorise, and the error stays that of a
 * 16-term float sum. */
enum { BN_BLOCK = 256, BN_LANES = 16, BN_GRAIN = 1 << 15 };

/* With t = x - mu over [0, n) and v = t (grad false) or g (grad true): adds the sums of v and
 * of v * t to *s1 and *s2. grad is a constant at each call, so each inlined copy keeps one
 * vectorised loop. */
static inline void bn_sums(const float *x, const float *g, bool grad, int64_t n, float mu,
                           double *s1, double *s2) {
    for (int64_t b = 0; b < n; b += BN_BLOCK) {
        int64_t e = n - b < BN_BLOCK ? n - b : BN_BLOCK;
        float a[BN_LANES] = {0}, a2[BN_LANES] = {0};
        for (int64_t i = 0; i < e; i += BN_LANES) {
            int64_t w = e - i < BN_LANES ? e - i : BN_LANES;
            if (w == BN_LANES)
                for (int l = 0; l < BN_LANES; l++) {
                    float t = x[b + i + l] - mu, v = grad ? g[b + i + l] : t;
                    a[l] += v;
                    a2[l] += v * t;
                }
            else
                for (int l = 0; l < w; l++) {
                    float t = x[b + i + l] - mu, v = grad ? g[b + i + l] : t;
                    a[l] += v;
                    a2[l] += v * t;
                }
        }
        for (int l = 0; l < BN_LANES; l++) *s1 += a[l], *s2 += a2[l];
    }
}

typedef struct BnJob {
    const float *x, *scale, *bias, *mean, *var, *dy;
    double momentum, eps;
    bool is_test;
    float *y, *mean_out, *var_out, *saved_mean, *saved_inv, *dx, *dscale, *dbias;
    int64_t N, C, HW;
} BnJob;

static void bn_fwd_chunk(void *ctx, int64_t lo, int64_t hi) {
    const BnJob *j = ctx;
    int64_t N = j->N, C = j->C, HW = j->HW;
    double m = (double)(N * HW);
    for (int64_t c = lo; c < hi; c++) {
        double mu = j->mean[c], v = j->var[c];
        if (!j->is_test) {
            double s = 0, q = 0;
            for (int64_t n = 0; n < N; n++) bn_sums(j->x + (n * C + c) * HW, NULL, false, HW, 0, &s, &q);
            mu = s / m;
            /* deviations from the float mean, corrected by their own sum (exact for any mu) */
            float fm = (float)mu;
            double d = 0;
            q = 0;
            for (int64_t n = 0; n < N; n++) bn_sums(j->x + (n * C + c) * HW, NULL, false, HW, fm, &d, &q);
            mu = fm + d / m;
            v = q / m - (d / m) * (d / m);
            if (v < 0) v = 0;
        }
        /* Y = (x - fm) * a + b: deviations from the float mean fm lose nothing to a mean
         * that is large against the spread */
        double inv = 1 / sqrt(v + j->eps);
        float fm = (float)mu, a = (float)(inv * j->scale[c]);
        float b = (float)(j->bias[c] - (mu - fm) * inv * j->scale[c]);
        for (int64_t n = 0; n < N; n++) {
            const float *xr = j->x + (n * C + c) * HW;
            float *yr = j->y + (n * C + c) * HW;
            for (int64_t i = 0; i < HW; i++) yr[i] = (xr[i] - fm) * a + b;
        }
        double mom = j->momentum;
        if (j->mean_out) j->mean_out[c] = j->is_test ? j->mean[c] : (float)(j->mean[c] * mom + mu * (1 - mom));
        if (j->var_out) j->var_out[c] = j->is_test ? j->var[c] : (float)(j->var[c] * mom + v * (1 - mom));
        if (j->saved_mean) j->saved_mean[c] = (float)mu;
        if (j->saved_inv) j->saved_inv[c] = (float)inv;
    }
}

static void bn_bwd_chunk(void *ctx, int64_t lo, int64_t hi) {
    const BnJob *j = ctx;
    int64_t N = j->N, C = j->C, HW = j->HW;
    double m = (double)(N * HW);
    for (int64_t c = lo; c < hi; c++) {
        double mu = j->mean[c], inv = j->var[c], sdy = 0, sdyx = 0;
        for (int64_t n = 0; n < N; n++)
            bn_sums(j->x + (n * C + c) * HW, j->dy + (n * C + c) * HW, true, HW, (float)mu, &sdy, &sdyx);
        /* bn_sums took deviations from the float mean: correct to the saved one */
        sdyx = (sdyx - sdy * (mu - (float)mu)) * inv;
        if (j->dbias) j->dbias[c] = (float)sdy;
        if (j->dscale) j->dscale[c] = (float)sdyx;
        if (!j->dx) continue;
        double f = j->scale[c] * inv;
        /* dX = f * (dy - sdy / m - (x - mu) * inv * sdyx / m)
         *    = dy * f + (x - fm) * k + k0 with fm the float mean, k = -f * inv * sdyx / m */
        double kd = -f * inv * sdyx / m;
        float fm = (float)mu, ff = (float)f, k = (float)kd,
              k0 = (float)(-f * sdy / m + kd * (fm - mu));
        for (int64_t n = 0; n < N; n++) {
            const float *xr = j->x + (n * C + c) * HW, *gr = j->dy + (n * C + c) * HW;
            float *dr = j->dx + (n * C + c) * HW;
            if (j->is_test)
                for (int64_t i = 0; i < HW; i++) dr[i] = gr[i] * ff;
            else
                for (int64_t i = 0; i < HW; i++) dr[i] = gr[i] * ff + (xr[i] - fm) * k + k0;
        }
    }
}

/* Channels per chunk: at least BN_GRAIN elements' worth. */
static int64_t bn_grain(int64_t per_channel) {
    return per_channel >= BN_GRAIN ? 1 : (BN_GRAIN + per_channel - 1) / (per_channel ? per_channel : 1);
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
    if (x->dtype == FL_DT_FLOAT32 && fast) {
        BnJob j = {.x = fl_tensor_data(x), .scale = fl_tensor_data(scale), .bias = fl_tensor_data(bias),
                   .mean = fl_tensor_data(mean), .var = fl_tensor_data(variance), .momentum = momentum,
                   .eps = epsilon, .is_test = is_test, .y = P(0), .mean_out = P(1), .var_out = P(2),
                   .saved_mean = P(3), .saved_inv = P(4), .N = N, .C = C, .HW = HW};
        fl_par_for(C, bn_grain(N * HW), bn_fwd_chunk, &j);
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
    if (x->dtype == FL_DT_FLOAT32 && fast) {
        BnJob j = {.x = fl_tensor_data(x), .scale = fl_tensor_data(scale), .mean = fl_tensor_data(saved_mean),
                   .var = fl_tensor_data(saved_variance), .dy = fl_tensor_data(dy), .is_test = is_test,
                   .dx = px, .dscale = ps, .dbias = pb, .N = N, .C = C, .HW = HW};
        fl_par_for(C, bn_grain(N * HW), bn_bwd_chunk, &j);
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

/* what a kept element is multiplied by: 1, or 1 / (1 - p) when upscale (0 when p = 1, where
 * nothing is kept) */
static double kept_scale(double p, bool upscale) { return !upscale ? 1 : p < 1 ? 1 / (1 - p) : 0; }

FlStatus fl_kernel_dropout(FlErr *e, const FlTensor *x, double p, bool is_test, bool upscale, uint64_t seed,
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
    double s = is_test ? (upscale ? 1 : 1 - p) : kept_scale(p, upscale);
    for (int64_t i = 0; i < n; i++) {
        double keep = is_test ? 1 : (fl_rng_uniform(&rng) >= p ? 1 : 0);
        if (f32) {
            ((float *)os)[i] = ((const float *)xs)[i] * (float)(keep * s);
            if (ms) ((float *)ms)[i] = (float)keep;
        } else {
            ((double *)os)[i] = ((const double *)xs)[i] * (keep * s);
            if (ms) ((double *)ms)[i] = keep;
        }
    }
    kout(out, &ro);
    if (!is_test) kout(mask, &rm);
    return FL_OK;
}

FlStatus fl_kernel_dropout_grad(FlErr *e, const FlTensor *mask, const FlTensor *dout, double p,
                                bool is_test, bool upscale, FlTensor *dx) {
    if (kneed_float(e, "dropout_grad", "Out@GRAD", dout)) return FL_ERROR;
    if (is_test) return dx ? fl_kernel_scale(e, dout, upscale ? 1 : 1 - p, 0, true, dx) : FL_OK;
    if (!mask) return fl_err(e, "dropout_grad: Mask is needed in training mode");
    if (ksame(e, "dropout_grad", "Mask", mask, "Out@GRAD", dout)) return FL_ERROR;
    if (!dx) return FL_OK;
    if (!upscale) return fl_kernel_elementwise_mul(e, dout, mask, -1, dx);
    FlTensor t = FL_TENSOR_INIT;
    FlStatus st = fl_kernel_elementwise_mul(e, dout, mask, -1, &t);
    if (!st) st = fl_kernel_scale(e, &t, kept_scale(p, true), 0, true, dx);
    fl_tensor_fini(&t);
    return st;
}
