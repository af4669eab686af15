/* quant.c: simulated quantization and dequantization (kernels_quant.h). The scale rules follow
 * Fluid's fake_quantize_op.cc; every kernel checks its inputs before it allocates, and writes its
 * outputs only when all are computed, so a weight quantized in place is never half-written. The
 * element loops run over the tensors' float or double data, computing in double. */
#include "runtime/kernels/kernels_quant.h"

#include <math.h>

#include "runtime/kernels/kernels_impl.h"

static double bin_cnt(const FlQuantAttrs *a) { return (double)((1 << (a->bit_length - 1)) - 1); }

static FlStatus check_bits(FlErr *e, const char *op, const FlQuantAttrs *a) {
    if (a->bit_length < 1 || a->bit_length > 16)
        return fl_err(e, "%s: bit_length must be 1 to 16, found %d", op, a->bit_length);
    return FL_OK;
}

/* max |x| over n elements of T data at p into m (a NaN is passed over, as fmax does). */
#define ABS_MAX_LOOP(T, p, n, m)                                                             \
    do {                                                                                     \
        const T *xp = (p);                                                                   \
        for (int64_t i = 0; i < (n); i++) {                                                  \
            T a = xp[i] < 0 ? -xp[i] : xp[i];                                                \
            (m) = a > (m) ? a : (m);                                                         \
        }                                                                                    \
    } while (0)

/* max |x| of a float tensor, by a loop over its data. */
static double abs_max(const FlTensor *x) {
    int64_t n = fl_tensor_numel(x);
    if (x->dtype == FL_DT_FLOAT32) {
        float m = 0;
        ABS_MAX_LOOP(float, fl_tensor_data(x), n, m);
        return m;
    }
    double m = 0;
    ABS_MAX_LOOP(double, fl_tensor_data(x), n, m);
    return m;
}

/* A one-element float input of x's dtype, read. */
static FlStatus one(FlErr *e, const char *op, const char *slot, const FlTensor *x, const FlTensor *t, double *v) {
    if (ksame_dtype(e, op, "X", x, slot, t)) return FL_ERROR;
    if (fl_tensor_numel(t) != 1) return fl_err(e, "%s: %s %s must hold one value", op, slot, fl_tensor_shape(t).s);
    *v = fl_tensor_get(t, 0);
    return FL_OK;
}

/* q = round(clip(x, -s, s) * bin / s) in double, for each element of T data (the clip sends a
 * NaN to -s, as fmin(fmax(v, -s), s) does). */
#define QUANTIZE_LOOP(T)                                                                     \
    do {                                                                                     \
        const T *xp = fl_tensor_data(x);                                                     \
        T *qp = fl_tensor_data(q);                                                           \
        for (int64_t i = 0; i < n; i++) {                                                    \
            double v = xp[i];                                                                \
            v = v > -s ? v : -s;                                                             \
            v = v < s ? v : s;                                                               \
            qp[i] = (T)round(v * bin / s);                                                   \
        }                                                                                    \
    } while (0)

/* q = round(clip(x, -s, s) * bin / s) into a new tensor like x; s <= 0 (an all-zero x): 0. */
static FlStatus quantize(FlErr *e, const char *op, const FlTensor *x, double s, double bin, FlTensor *q) {
    if (!isfinite(s) || s < 0) return fl_err(e, "%s: the scale is %g; a finite value >= 0 expected", op, s);
    if (s == 0) return kalloc_like(e, op, q, x); /* zero-filled */
    if (kalloc_raw_like(e, op, q, x)) return FL_ERROR; /* the loop writes every element */
    int64_t n = fl_tensor_numel(x);
    if (x->dtype == FL_DT_FLOAT32) QUANTIZE_LOOP(float);
    else QUANTIZE_LOOP(double);
    return FL_OK;
}

static FlStatus scalar(FlErr *e, const char *op, const FlTensor *like, double v, FlTensor *t) {
    if (kalloc(e, op, t, like->dtype, 1, (int64_t[]){1})) return FL_ERROR;
    fl_tensor_set(t, 0, v);
    return FL_OK;
}

FlStatus fl_kernel_fake_quantize_abs_max(FlErr *e, const FlTensor *x, const FlQuantAttrs *a, FlTensor *out,
                                         FlTensor *out_scale) {
    const char *op = "fake_quantize_abs_max";
    if (kneed_float(e, op, "X", x) || check_bits(e, op, a)) return FL_ERROR;
    double s = abs_max(x);
    FlTensor r[2] = {FL_TENSOR_INIT, FL_TENSOR_INIT};
    if (quantize(e, op, x, s, bin_cnt(a), &r[0]) || scalar(e, op, x, s, &r[1])) {
        kfini_all(r, 2);
        return FL_ERROR;
    }
    kout(out, &r[0]);
    kout(out_scale, &r[1]);
    return FL_OK;
}

FlStatus fl_kernel_fake_quantize_range_abs_max(FlErr *e, const FlTensor *x, const FlTensor *in_scale,
                                               const FlTensor *iter, const FlTensor *in_scales, const FlQuantAttrs *a,
                                               FlTensor *out, FlTensor *out_scale, FlTensor *out_scales) {
    const char *op = "fake_quantize_range_abs_max";
    double last = 0;
    if (kneed_float(e, op, "X", x) || check_bits(e, op, a) || one(e, op, "InScale", x, in_scale, &last))
        return FL_ERROR;
    FlTensor r[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    double s = last;
    if (!a->is_test) {
        if (khas(e, op, "Iter", iter) || khas(e, op, "InScales", in_scales)) return FL_ERROR;
        if (!kis_int(iter->dtype) || fl_tensor_numel(iter) != 1)
            return fl_err(e, "%s: Iter %s (%s) must be one int", op, fl_tensor_shape(iter).s,
                          fl_dtype_name(iter->dtype));
        int64_t w = a->window_size, it = fl_tensor_get_int(iter, 0);
        if (ksame_dtype(e, op, "X", x, "InScales", in_scales)) return FL_ERROR;
        if (w < 1 || in_scales->ndim != 1 || in_scales->ne[0] != w)
            return fl_err(e, "%s: InScales %s must be [%lld] (window_size)", op, fl_tensor_shape(in_scales).s,
                          (long long)w);
        if (it < 0) return fl_err(e, "%s: Iter is %lld; a step >= 0 expected", op, (long long)it);
        if (fl_tensor_copy(e, &r[2], in_scales)) return FL_ERROR;
        int64_t idx = it % w;
        double removed = fl_tensor_get(&r[2], idx), cur = abs_max(x);
        fl_tensor_set(&r[2], idx, cur);
        if (s < cur) {
            s = cur;
        } else if (fabs(removed - s) < 1e-6) {
            int64_t size = it > w ? w : it;
            s = 0;
            for (int64_t i = 0; i < size; i++) s = fmax(s, fabs(fl_tensor_get(&r[2], i)));
        }
    }
    if (quantize(e, op, x, s, bin_cnt(a), &r[0]) || scalar(e, op, x, s, &r[1])) {
        kfini_all(r, 3);
        return FL_ERROR;
    }
    kout(out, &r[0]);
    kout(out_scale, &r[1]);
    if (a->is_test) fl_tensor_fini(&r[2]);
    else kout(out_scales, &r[2]);
    return FL_OK;
}

FlStatus fl_kernel_fake_quantize_moving_average_abs_max(FlErr *e, const FlTensor *x, const FlTensor *in_scale,
                                                        const FlTensor *in_accum, const FlTensor *in_state,
                                                        const FlQuantAttrs *a, FlTensor *out, FlTensor *out_scale,
                                                        FlTensor *out_state, FlTensor *out_accum) {
    const char *op = "fake_quantize_moving_average_abs_max";
    double s = 0, accum = 0, state = 0;
    if (kneed_float(e, op, "X", x) || check_bits(e, op, a) || one(e, op, "InScale", x, in_scale, &s)) return FL_ERROR;
    if (!a->is_test) {
        if (one(e, op, "InAccum", x, in_accum, &accum) || one(e, op, "InState", x, in_state, &state)) return FL_ERROR;
        state = a->moving_rate * state + 1;
        accum = a->moving_rate * accum + abs_max(x);
        s = accum / state;
    }
    FlTensor r[4] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    if (quantize(e, op, x, s, bin_cnt(a), &r[0]) || scalar(e, op, x, s, &r[1]) ||
        (!a->is_test && (scalar(e, op, x, state, &r[2]) || scalar(e, op, x, accum, &r[3])))) {
        kfini_all(r, 4);
        return FL_ERROR;
    }
    kout(out, &r[0]);
    kout(out_scale, &r[1]);
    if (a->is_test) {
        kfini_all(&r[2], 2);
    } else {
        kout(out_state, &r[2]);
        kout(out_accum, &r[3]);
    }
    return FL_OK;
}

FlStatus fl_kernel_fake_dequantize_max_abs(FlErr *e, const FlTensor *x, const FlTensor *scale, double max_range,
                                           FlTensor *out) {
    const char *op = "fake_dequantize_max_abs";
    double s = 0;
    if (kneed_float(e, op, "X", x) || one(e, op, "Scale", x, scale, &s)) return FL_ERROR;
    if (!(max_range > 0)) return fl_err(e, "%s: max_range must be > 0, found %g", op, max_range);
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, op, &o, x)) return FL_ERROR;
    int64_t n = fl_tensor_numel(x);
    if (x->dtype == FL_DT_FLOAT32) {
        const float *xp = fl_tensor_data(x);
        float *o32 = fl_tensor_data(&o);
        for (int64_t i = 0; i < n; i++) o32[i] = (float)(xp[i] * s / max_range);
    } else {
        const double *xp = fl_tensor_data(x);
        double *o64 = fl_tensor_data(&o);
        for (int64_t i = 0; i < n; i++) o64[i] = xp[i] * s / max_range;
    }
    kout(out, &o);
    return FL_OK;
}
