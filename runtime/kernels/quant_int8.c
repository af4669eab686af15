/* quant_int8.c: int8 inference (kernels_quant.h): quantize, dequantize, requantize, the int8
 * convolution and the calibration statistics, as Fluid's MKL-DNN kernels and its Calibrator
 * compute them. Every integer result comes from plain C loops on integers (products exact in
 * int64, scales applied in double, rounded to nearest with ties to even), so it is the same under
 * every GEMM kernel and with oneDNN on or off. Inputs are checked before anything is allocated;
 * outputs are replaced whole. */
#include "runtime/kernels/kernels_quant.h"

#include <math.h>

#include "runtime/kernels/kernels_impl.h"

/* Round to nearest, ties to even, without depending on the floating-point environment. */
static double round_even(double v) {
    double r = floor(v), d = v - r;
    if (d > 0.5 || (d == 0.5 && fmod(r, 2.0) != 0)) r += 1;
    return r;
}

/* round_even(v) saturated to [lo, hi]; NaN gives 0. */
static int64_t sat(double v, int64_t lo, int64_t hi) {
    if (v != v) return 0;
    if (v <= (double)lo) return lo;
    if (v >= (double)hi) return hi;
    int64_t r = (int64_t)round_even(v);
    return r < lo ? lo : r > hi ? hi : r;
}

static bool is_int8(FlDType t) { return t == FL_DT_INT8 || t == FL_DT_UINT8; }
static int64_t lo_of(FlDType t) { return t == FL_DT_INT8 ? -128 : 0; }
static int64_t hi_of(FlDType t) { return t == FL_DT_INT8 ? 127 : 255; }

/* element i of an int8 or uint8 tensor's data */
static int64_t qget(FlDType t, const void *p, int64_t i) {
    return t == FL_DT_INT8 ? (int64_t)((const int8_t *)p)[i] : (int64_t)((const uint8_t *)p)[i];
}
static void qset(FlDType t, void *p, int64_t i, int64_t v) {
    if (t == FL_DT_INT8) ((int8_t *)p)[i] = (int8_t)v;
    else ((uint8_t *)p)[i] = (uint8_t)v;
}

static FlStatus need_q(FlErr *e, const char *op, const char *slot, const FlTensor *t) {
    if (khas(e, op, slot, t)) return FL_ERROR;
    if (!is_int8(t->dtype))
        return fl_err(e, "%s: %s %s is %s; int8 or uint8 expected", op, slot, fl_tensor_shape(t).s,
                      fl_dtype_name(t->dtype));
    return FL_OK;
}

static FlStatus need_f32(FlErr *e, const char *op, const char *slot, const FlTensor *t) {
    if (khas(e, op, slot, t)) return FL_ERROR;
    if (t->dtype != FL_DT_FLOAT32)
        return fl_err(e, "%s: %s %s is %s; float32 expected", op, slot, fl_tensor_shape(t).s,
                      fl_dtype_name(t->dtype));
    return FL_OK;
}

/* A scale: float32, one value, finite and > 0. */
static FlStatus scale_of(FlErr *e, const char *op, const char *slot, const FlTensor *t, double *s) {
    if (need_f32(e, op, slot, t)) return FL_ERROR;
    if (fl_tensor_numel(t) != 1) return fl_err(e, "%s: %s %s must hold one value", op, slot, fl_tensor_shape(t).s);
    *s = ((const float *)fl_tensor_data(t))[0];
    if (!(*s > 0) || isinf(*s)) return fl_err(e, "%s: %s must be a finite scale > 0, found %g", op, slot, *s);
    return FL_OK;
}

FlStatus fl_kernel_quantize(FlErr *e, const FlTensor *x, const FlTensor *scale, bool negative, FlTensor *out) {
    double s;
    if (need_f32(e, "quantize", "Input", x) || scale_of(e, "quantize", "Scale", scale, &s)) return FL_ERROR;
    FlDType t = negative ? FL_DT_INT8 : FL_DT_UINT8;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, "quantize", &r, t, x->ndim, x->ne)) return FL_ERROR;
    const float *xp = fl_tensor_data(x);
    void *rp = fl_tensor_data(&r);
    int64_t n = fl_tensor_numel(x), lo = lo_of(t), hi = hi_of(t);
    for (int64_t i = 0; i < n; i++) qset(t, rp, i, sat((double)xp[i] * s, lo, hi));
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_dequantize(FlErr *e, const FlTensor *x, const FlTensor *scale, FlTensor *out) {
    double s;
    if (need_q(e, "dequantize", "Input", x) || scale_of(e, "dequantize", "Scale", scale, &s)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, "dequantize", &r, FL_DT_FLOAT32, x->ndim, x->ne)) return FL_ERROR;
    const void *xp = fl_tensor_data(x);
    float *rp = fl_tensor_data(&r);
    int64_t n = fl_tensor_numel(x);
    for (int64_t i = 0; i < n; i++) rp[i] = (float)((double)qget(x->dtype, xp, i) / s);
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_requantize(FlErr *e, const FlTensor *x, const FlTensor *scale_in, const FlTensor *scale_out,
                              FlTensor *out) {
    double si, so;
    if (need_q(e, "requantize", "Input", x) || scale_of(e, "requantize", "Scale_in", scale_in, &si) ||
        scale_of(e, "requantize", "Scale_out", scale_out, &so))
        return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, "requantize", &r, x->dtype, x->ndim, x->ne)) return FL_ERROR;
    const void *xp = fl_tensor_data(x);
    void *rp = fl_tensor_data(&r);
    int64_t n = fl_tensor_numel(x), lo = lo_of(x->dtype), hi = hi_of(x->dtype);
    double k = so / si;
    for (int64_t i = 0; i < n; i++) qset(x->dtype, rp, i, sat((double)qget(x->dtype, xp, i) * k, lo, hi));
    kout(out, &r);
    return FL_OK;
}

/* ---- conv2d_int8 ---- */

static FlStatus conv_dims(FlErr *e, const FlTensor *in, const FlTensor *f, const FlConv2dAttrs *a, ConvDims *d) {
    const char *op = "conv2d_int8";
    if (need_q(e, op, "Input", in) || need_f32(e, op, "Filter", f)) return FL_ERROR;
    if (in->ndim != 4 || f->ndim != 4)
        return fl_err(e, "%s: Input %s must be [N, C, H, W] and Filter %s [M, C/groups, kh, kw]", op,
                      fl_tensor_shape(in).s, fl_tensor_shape(f).s);
    if (a->groups < 1 || a->strides[0] < 1 || a->strides[1] < 1 || a->dilations[0] < 1 || a->dilations[1] < 1 ||
        a->paddings[0] < 0 || a->paddings[1] < 0)
        return fl_err(e, "%s: bad attributes: strides (%d, %d), paddings (%d, %d), dilations (%d, %d), groups %d", op,
                      a->strides[0], a->strides[1], a->paddings[0], a->paddings[1], a->dilations[0], a->dilations[1],
                      a->groups);
    *d = (ConvDims){.N = in->ne[0], .C = in->ne[1], .H = in->ne[2], .W = in->ne[3], .M = f->ne[0], .kh = f->ne[2],
                    .kw = f->ne[3], .groups = a->groups, .sh = a->strides[0], .sw = a->strides[1],
                    .ph = a->paddings[0], .pw = a->paddings[1], .dh = a->dilations[0], .dw = a->dilations[1]};
    d->Cg = f->ne[1];
    if (d->C != d->Cg * d->groups || d->M % d->groups != 0)
        return fl_err(e, "%s: Input %s and Filter %s do not match in %lld groups", op, fl_tensor_shape(in).s,
                      fl_tensor_shape(f).s, (long long)d->groups);
    d->Mg = d->M / d->groups;
    int64_t eh = d->dh * (d->kh - 1) + 1, ew = d->dw * (d->kw - 1) + 1;
    if (d->H + 2 * d->ph < eh || d->W + 2 * d->pw < ew)
        return fl_err(e, "%s: Input %s is smaller than the filter %s even with padding", op, fl_tensor_shape(in).s,
                      fl_tensor_shape(f).s);
    d->Ho = (d->H + 2 * d->ph - eh) / d->sh + 1;
    d->Wo = (d->W + 2 * d->pw - ew) / d->sw + 1;
    return FL_OK;
}

FlStatus fl_kernel_conv2d_int8(FlErr *e, const FlTensor *input, const FlTensor *filter, const FlTensor *bias,
                               const FlTensor *scale_in, const FlTensor *scale_w, const FlTensor *scale_out,
                               const FlConv2dAttrs *a, bool fp32, FlTensor *out) {
    const char *op = "conv2d_int8";
    ConvDims d = {0};
    double si = 0, so = 0;
    if (conv_dims(e, input, filter, a, &d) || scale_of(e, op, "Scale_in", scale_in, &si) ||
        need_f32(e, op, "Scale_weights", scale_w) || (!fp32 && scale_of(e, op, "Scale_out", scale_out, &so)))
        return FL_ERROR;
    if (fl_tensor_numel(scale_w) != d.M)
        return fl_err(e, "%s: Scale_weights %s must hold one scale per output channel (%lld)", op,
                      fl_tensor_shape(scale_w).s, (long long)d.M);
    if (bias && (need_f32(e, op, "Bias", bias) || fl_tensor_numel(bias) != d.M))
        return fl_err(e, "%s: Bias %s must be float32 with one value per output channel (%lld)", op,
                      fl_tensor_shape(bias).s, (long long)d.M);
    const float *sw = fl_tensor_data(scale_w);
    for (int64_t m = 0; m < d.M; m++)
        if (!(sw[m] >= 0) || isinf(sw[m]))
            return fl_err(e, "%s: Scale_weights[%lld] must be finite and >= 0, found %g", op, (long long)m,
                          (double)sw[m]);
    int64_t ne[4] = {d.N, d.M, d.Ho, d.Wo}, ck = d.Cg * d.kh * d.kw;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, op, &r, fp32 ? FL_DT_FLOAT32 : FL_DT_INT8, 4, ne)) return FL_ERROR;
    int32_t *wq = malloc((size_t)(d.M * ck) * sizeof *wq);
    int64_t *bq = malloc((size_t)d.M * sizeof *bq);
    if (!wq || !bq) {
        free(wq), free(bq), fl_tensor_fini(&r);
        return fl_err(e, "%s: out of memory for the quantized weights (%lld values)", op, (long long)(d.M * ck));
    }
    const float *w = fl_tensor_data(filter), *b = bias ? fl_tensor_data(bias) : NULL;
    for (int64_t m = 0; m < d.M; m++) {
        for (int64_t k = 0; k < ck; k++) wq[m * ck + k] = (int32_t)sat((double)w[m * ck + k] * sw[m], -128, 127);
        bq[m] = b ? sat((double)b[m] * si * sw[m], INT32_MIN, INT32_MAX) : 0;
    }
    const void *in = fl_tensor_data(input);
    FlDType it = input->dtype;
    float *of = fp32 ? fl_tensor_data(&r) : NULL;
    int8_t *oq = fp32 ? NULL : fl_tensor_data(&r);
    for (int64_t n = 0; n < d.N; n++)
        for (int64_t m = 0; m < d.M; m++) {
            int64_t g = m / d.Mg, c0 = g * d.Cg;
            double to_real = (double)sw[m] * si, bm = b ? (double)b[m] : 0.0;
            for (int64_t oh = 0; oh < d.Ho; oh++)
                for (int64_t ow = 0; ow < d.Wo; ow++) {
                    int64_t acc = bq[m];
                    for (int64_t c = 0; c < d.Cg; c++)
                        for (int64_t i = 0; i < d.kh; i++) {
                            int64_t h = oh * d.sh - d.ph + i * d.dh;
                            if (h < 0 || h >= d.H) continue;
                            const int32_t *wr = wq + ((m * d.Cg + c) * d.kh + i) * d.kw;
                            int64_t base = ((n * d.C + c0 + c) * d.H + h) * d.W;
                            for (int64_t j = 0; j < d.kw; j++) {
                                int64_t x = ow * d.sw - d.pw + j * d.dw;
                                if (x >= 0 && x < d.W) acc += qget(it, in, base + x) * wr[j];
                            }
                        }
                    acc = acc < INT32_MIN ? INT32_MIN : acc > INT32_MAX ? INT32_MAX : acc;
                    int64_t o = ((n * d.M + m) * d.Ho + oh) * d.Wo + ow;
                    /* the real value acc / (Scale_in * Scale_weights[m]); a channel of
                     * all-zero weights (scale 0) gives its bias */
                    double real = to_real > 0 ? (double)acc / to_real : bm;
                    if (fp32) of[o] = (float)real;
                    else oq[o] = (int8_t)sat(to_real > 0 ? (double)acc * so / to_real : bm * so, -128, 127);
                }
        }
    free(wq), free(bq);
    kout(out, &r);
    return FL_OK;
}

/* ---- calibration ---- */

static FlStatus count_of(FlErr *e, const char *op, const FlTensor *count, double *n) {
    if (kneed_num(e, op, "Count", count)) return FL_ERROR;
    if (fl_tensor_numel(count) != 1)
        return fl_err(e, "%s: Count %s must hold one value", op, fl_tensor_shape(count).s);
    *n = fl_tensor_get(count, 0);
    return FL_OK;
}

static float fabs_max(const float *p, int64_t n) {
    float m = 0;
    for (int64_t i = 0; i < n; i++) {
        float a = fabsf(p[i]);
        m = a > m ? a : m; /* a NaN is passed over */
    }
    return m;
}

FlStatus fl_kernel_calib_sample(FlErr *e, const FlTensor *x, const FlTensor *stat, const FlTensor *count,
                                FlCalibAlgo algo, FlTensor *out) {
    const char *op = "calib_sample";
    double cnt;
    if (need_f32(e, op, "X", x) || need_f32(e, op, "Stat", stat) || count_of(e, op, count, &cnt)) return FL_ERROR;
    int64_t n = fl_tensor_numel(x), have = cnt > 0 ? fl_tensor_numel(stat) : 0;
    const float *xp = fl_tensor_data(x), *sp = fl_tensor_data(stat);
    FlTensor r = FL_TENSOR_INIT;
    if (algo == FL_CALIB_DIRECT) {
        if (have > 1) return fl_err(e, "%s: Stat %s must hold one value (a running max)", op, fl_tensor_shape(stat).s);
        if (kalloc_raw(e, op, &r, FL_DT_FLOAT32, 1, (int64_t[]){1})) return FL_ERROR;
        float m = fabs_max(xp, n), s = have ? sp[0] : 0;
        ((float *)fl_tensor_data(&r))[0] = s > m ? s : m;
    } else {
        if (have > INT64_MAX - n) return fl_err(e, "%s: too many samples", op);
        if (kalloc_raw(e, op, &r, FL_DT_FLOAT32, 1, (int64_t[]){have + n})) return FL_ERROR;
        float *rp = fl_tensor_data(&r);
        if (have) memcpy(rp, sp, (size_t)have * sizeof *rp);
        for (int64_t i = 0; i < n; i++) rp[have + i] = fabsf(xp[i]);
    }
    kout(out, &r);
    return FL_OK;
}

#define KL_BINS 2048
#define KL_QUANT 255

/* KL(P || Q) as Fluid's __safe_entropy computes it (P's empty bins add nothing). */
static double safe_entropy(const double *p, double p_sum, const double *q, double q_sum, int64_t n) {
    double s1 = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++) {
        if (p[i] == 0) continue;
        s1 += p[i] * log(q_sum * p[i]);
        s2 += p[i] * log(p_sum * q[i]);
    }
    return (s1 - s2) / p_sum;
}

/* The histogram of numpy.histogram(v, bins=2048, range=(lo, hi)), the bin edges lo + k * width. */
static void histogram(const float *v, int64_t n, double lo, double hi, int64_t *hist, double *width) {
    if (lo == hi) lo -= 0.5, hi += 0.5; /* numpy widens an empty range */
    double norm = KL_BINS / (hi - lo);
    *width = (hi - lo) / KL_BINS;
    memset(hist, 0, KL_BINS * sizeof *hist);
    for (int64_t i = 0; i < n; i++) {
        double x = v[i];
        if (!(x >= lo && x <= hi)) continue;
        int64_t k = (int64_t)((x - lo) * norm);
        if (k >= KL_BINS) k = KL_BINS - 1;
        if (x < lo + (double)k * *width && k > 0) k--; /* the edges decide, as numpy's */
        else if (k < KL_BINS - 1 && x >= lo + (double)(k + 1) * *width) k++;
        hist[k]++;
    }
}

double fl_kernel_kl_threshold(const float *v, int64_t n, double p_sum) {
    if (n <= 0) return 0;
    double mx = -INFINITY, mn = INFINITY;
    for (int64_t i = 0; i < n; i++) {
        if (v[i] != v[i]) continue;
        mx = v[i] > mx ? v[i] : mx;
        mn = v[i] < mn ? v[i] : mn;
    }
    if (mx < mn) return 0; /* all NaN */
    int64_t hist[KL_BINS];
    double width;
    int64_t start, end = KL_BINS - 1;
    if (mn >= 0) {
        histogram(v, n, mn, mx, hist, &width);
        start = (int64_t)(end * 0.7);
    } else {
        double th = fabs(mx) > fabs(mn) ? fabs(mx) : fabs(mn);
        histogram(v, n, -th, th, hist, &width);
        start = 0;
        if (fabs(mx) > fabs(mn)) {
            while (start < end && hist[start] == 0) start++;
            start += (int64_t)((double)(end - start) * 0.6);
        } else {
            while (end > 0 && hist[end] == 0) end--;
            start = (int64_t)(0.6 * (double)end);
        }
    }
    double p[KL_BINS], q[KL_BINS], quant[KL_QUANT];
    double min_kl = 0;
    int64_t min_i = 0;
    bool inited = false;
    for (int64_t i = start < 1 ? 1 : start; i <= end; i++) {
        if (hist[i - 1] == 0) continue;
        int64_t outliers = 0;
        for (int64_t k = i; k < KL_BINS; k++) outliers += hist[k];
        for (int64_t k = 0; k < i; k++) p[k] = (double)hist[k];
        p[i - 1] += (double)outliers;
        /* the first i bins merged into KL_QUANT, the last taking the remainder */
        int64_t merged = i / KL_QUANT;
        for (int64_t b = 0; b < KL_QUANT; b++) {
            int64_t j0 = b * merged, j1 = b == KL_QUANT - 1 ? i : j0 + merged;
            double s = 0;
            for (int64_t k = j0; k < j1 && k < i; k++) s += (double)hist[k];
            quant[b] = s;
        }
        /* spread back over the non-empty bins of P */
        double q_sum = 0;
        for (int64_t b = 0; b < KL_QUANT; b++) {
            int64_t j0 = b * merged, j1 = b == KL_QUANT - 1 ? i : j0 + merged;
            if (j1 > i) j1 = i;
            int64_t zeros = 0;
            for (int64_t k = j0; k < j1; k++) zeros += p[k] == 0;
            double avg = zeros == j1 - j0 ? 0 : quant[b] / (double)(j1 - j0 - zeros);
            for (int64_t k = j0; k < j1; k++) {
                q[k] = p[k] == 0 ? 0 : avg;
                q_sum += q[k];
            }
        }
        double kl = safe_entropy(p, p_sum, q, q_sum, i);
        if (!inited || kl < min_kl) min_kl = kl, min_i = i, inited = true;
    }
    if (min_i == 0) {
        while (start > 0 && hist[start] == 0) start--;
        min_i = start;
    }
    return ((double)min_i + 0.5) * width;
}

FlStatus fl_kernel_calib_scale(FlErr *e, const FlTensor *x, const FlTensor *count, FlCalibAlgo algo,
                               double max_range, bool per_channel, FlTensor *out) {
    const char *op = "calib_scale";
    double cnt;
    if (need_f32(e, op, "X", x) || count_of(e, op, count, &cnt)) return FL_ERROR;
    if (!(cnt > 0))
        return fl_err(e, "%s: no batch was sampled (Calibrator.sample_data() after each run of sampling_program) "
                      "before the scales are computed", op);
    if (!(max_range > 0)) return fl_err(e, "%s: max_range must be > 0, found %g", op, max_range);
    const float *xp = fl_tensor_data(x);
    int64_t n = fl_tensor_numel(x);
    FlTensor r = FL_TENSOR_INIT;
    if (per_channel) {
        if (algo != FL_CALIB_DIRECT) return fl_err(e, "%s: per_channel scales are by algo 'direct'", op);
        if (x->ndim < 1) return fl_err(e, "%s: per_channel needs X with a dim 0, found %s", op, fl_tensor_shape(x).s);
        int64_t rows = x->ne[0], cols = rows ? n / rows : 0;
        if (kalloc_raw(e, op, &r, FL_DT_FLOAT32, 1, (int64_t[]){rows})) return FL_ERROR;
        float *rp = fl_tensor_data(&r);
        for (int64_t m = 0; m < rows; m++) {
            double t = fabs_max(xp + m * cols, cols);
            rp[m] = t > 0 ? (float)(max_range / t) : 0.0f;
        }
    } else {
        double t = algo == FL_CALIB_DIRECT ? (double)fabs_max(xp, n) : fl_kernel_kl_threshold(xp, n, cnt);
        if (kalloc_raw(e, op, &r, FL_DT_FLOAT32, 1, (int64_t[]){1})) return FL_ERROR;
        ((float *)fl_tensor_data(&r))[0] = t > 0 ? (float)(max_range / t) : (float)max_range;
    }
    kout(out, &r);
    return FL_OK;
}

/* ---- pool2d on int8 and uint8 (conv.c's pool2d calls it) ---- */

void kpool_int8(const PoolDims *p, FlDType t, const void *x, void *o) {
    for (int64_t nc = 0; nc < p->NC; nc++) {
        int64_t xb = nc * p->H * p->W, ob = nc * p->Ho * p->Wo;
        for (int64_t oh = 0; oh < p->Ho; oh++)
            for (int64_t ow = 0; ow < p->Wo; ow++) {
                int64_t h0, h1, w0, w1, acc = 0, best = 0;
                bool any = false;
                pool_window(p, oh, ow, &h0, &h1, &w0, &w1);
                for (int64_t h = h0; h < h1; h++)
                    for (int64_t w = w0; w < w1; w++) {
                        int64_t v = qget(t, x, xb + h * p->W + w);
                        if (!any || v > best) best = v;
                        any = true;
                        acc += v;
                    }
                int64_t r = p->type == FL_POOL_MAX ? best
                                                   : sat((double)acc / pool_count(p, h0, h1, w0, w1), lo_of(t), hi_of(t));
                qset(t, o, ob + oh * p->Wo + ow, r);
            }
    }
}
