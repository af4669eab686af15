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

#endif
