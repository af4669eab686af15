/* kernels_quant.h: simulated ("fake") quantization (quant.c), as Fluid's fake_quantize_op.cc and
 * fake_dequantize_op.cc compute it. The conventions of kernels.h hold (outputs replaced whole,
 * errors name the op and the shapes, "F" = float32 or float64; every output may be the struct
 * of an input: a weight quantized in place).
 *
 * A quantized tensor stays float and holds integers in [-bin_cnt, bin_cnt], bin_cnt =
 * 2^(bit_length - 1) - 1: q = round(clip(x, -s, s) * bin_cnt / s), rounding half away from zero
 * (Eigen's round). A scale s of 0 (an all-zero tensor) gives q = 0 where Fluid 1.5 divides by 0
 * and gets NaN. Values are computed in double and stored in the tensor's dtype.
 */
#ifndef FL_KERNELS_QUANT_H
#define FL_KERNELS_QUANT_H

#include "runtime/kernels/kernels.h"

typedef struct FlQuantAttrs {
    int bit_length;    /* 1 to 16 */
    int64_t window_size; /* fake_quantize_range_abs_max: >= 1 */
    double moving_rate;  /* fake_quantize_moving_average_abs_max */
    bool is_test;        /* the scale is InScale, no state is updated */
} FlQuantAttrs;

/* fake_quantize_abs_max: s = max|x|; out = q(x, s) like x; out_scale [1] = s. */
FlStatus fl_kernel_fake_quantize_abs_max(FlErr *e, const FlTensor *x, const FlQuantAttrs *a, FlTensor *out,
                                         FlTensor *out_scale) FL_WARN_UNUSED;
/* fake_quantize_range_abs_max: is_test: out = q(x, in_scale[0]) (out_scale = in_scale when
 * asked). Training: iter (int, [1]) and the window in_scales [window_size] (F): out_scales =
 * in_scales with max|x| at iter mod window_size; s = max(in_scale, max|x|), or, when the value
 * leaving the window was within 1e-6 of in_scale and max|x| is not larger, the largest |v| of
 * the window's first min(iter, window_size) entries (Fluid's FindRangeAbsMax); out = q(x, s),
 * out_scale = s. */
FlStatus fl_kernel_fake_quantize_range_abs_max(FlErr *e, const FlTensor *x, const FlTensor *in_scale,
                                               const FlTensor *iter, const FlTensor *in_scales, const FlQuantAttrs *a,
                                               FlTensor *out, FlTensor *out_scale, FlTensor *out_scales) FL_WARN_UNUSED;
/* fake_quantize_moving_average_abs_max: is_test: out = q(x, in_scale[0]). Training: state =
 * rate * in_state + 1, accum = rate * in_accum + max|x|, s = accum / state; out = q(x, s),
 * out_scale = s, out_state, out_accum [1]. */
FlStatus fl_kernel_fake_quantize_moving_average_abs_max(FlErr *e, const FlTensor *x, const FlTensor *in_scale,
                                                        const FlTensor *in_accum, const FlTensor *in_state,
                                                        const FlQuantAttrs *a, FlTensor *out, FlTensor *out_scale,
                                                        FlTensor *out_state, FlTensor *out_accum) FL_WARN_UNUSED;
/* fake_dequantize_max_abs: out = x * scale[0] / max_range (max_range > 0). */
FlStatus fl_kernel_fake_dequantize_max_abs(FlErr *e, const FlTensor *x, const FlTensor *scale, double max_range,
                                           FlTensor *out) FL_WARN_UNUSED;

/* ---- int8 inference (quant_int8.c; the ops of compiler/ops/quant_int8.def) ----
 * Rounding is to nearest with ties to even (oneDNN's), of the exact double product; results
 * saturate to the output dtype's range (int8 [-128, 127], uint8 [0, 255]); a NaN becomes 0.
 * Scales are float32 [1] tensors and must be finite and > 0. Integer results do not depend on
 * the kernel set or FL_DNNL: every loop is plain C on integers. */

/* quantize: out (int8 when negative, else uint8) = sat(round(x * scale)); x float32. */
FlStatus fl_kernel_quantize(FlErr *e, const FlTensor *x, const FlTensor *scale, bool negative,
                            FlTensor *out) FL_WARN_UNUSED;
/* dequantize: out (float32) = x / scale; x int8 or uint8. */
FlStatus fl_kernel_dequantize(FlErr *e, const FlTensor *x, const FlTensor *scale, FlTensor *out) FL_WARN_UNUSED;
/* requantize: out (x's dtype) = sat(round(x * (scale_out / scale_in))). */
FlStatus fl_kernel_requantize(FlErr *e, const FlTensor *x, const FlTensor *scale_in, const FlTensor *scale_out,
                              FlTensor *out) FL_WARN_UNUSED;
/* conv2d_int8: input int8 or uint8 [N, C, H, W] carrying scale_in; filter float32 [M, C/groups,
 * kh, kw] quantized per output channel m to int8 round(w * scale_w[m]); bias (NULL: none) float32
 * [M] added as the integer round(b[m] * scale_in * scale_w[m]); the products summed exactly
 * (int64) and saturated to int32, as oneDNN's s32 accumulator. Output [N, M, Ho, Wo]: fp32:
 * float32 acc / (scale_in * scale_w[m]); else int8 sat(round(acc * scale_out / (scale_in *
 * scale_w[m]))). A channel with scale_w[m] = 0 (all-zero weights) outputs its bias (b[m], or
 * round(b[m] * scale_out)). */
FlStatus fl_kernel_conv2d_int8(FlErr *e, const FlTensor *input, const FlTensor *filter, const FlTensor *bias,
                               const FlTensor *scale_in, const FlTensor *scale_w, const FlTensor *scale_out,
                               const FlConv2dAttrs *a, bool fp32, FlTensor *out) FL_WARN_UNUSED;

typedef enum FlCalibAlgo { FL_CALIB_DIRECT, FL_CALIB_KL, FL_CALIB_COUNT } FlCalibAlgo;
/* calib_sample: direct: out [1] = max(stat[0], max|x|) (stat unread while count is 0); KL: out
 * (1-D) = stat's values then |x| of every element of x (count 0: |x| alone). x, stat float32. */
FlStatus fl_kernel_calib_sample(FlErr *e, const FlTensor *x, const FlTensor *stat, const FlTensor *count,
                                FlCalibAlgo algo, FlTensor *out) FL_WARN_UNUSED;
/* calib_scale: out = max_range / t as float32, t = max|x| (direct) or fl_kernel_kl_threshold of
 * x with count as Fluid's P_sum (KL); t = 0 gives max_range. per_channel (direct only): out
 * [ne[0]], t per row, 0 where a row is all 0. count (the batches sampled) 0 is an error. */
FlStatus fl_kernel_calib_scale(FlErr *e, const FlTensor *x, const FlTensor *count, FlCalibAlgo algo,
                               double max_range, bool per_channel, FlTensor *out) FL_WARN_UNUSED;
/* Fluid 1.5's KL-divergence threshold (Calibrator.__get_optimal_scaling_factor) of n values:
 * a 2048-bin histogram over [min, max] (all >= 0; else [-m, m], m = max |v|); for each candidate
 * end bin i (from 1432, or as Fluid picks it for signed values) whose bin is not empty, the
 * reference P = the first i bins with the outliers added to the last, Q = those bins merged
 * into 255 and spread back over P's non-empty bins, KL(P || Q) with p_sum as Fluid's P_sum; the
 * threshold is (i + 0.5) * bin width for the first i of least divergence. In double. */
double fl_kernel_kl_threshold(const float *v, int64_t n, double p_sum);

#endif
