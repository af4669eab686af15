/* kernels_vision.h: the kernels of Fluid's image layers that rearrange, pad and normalise
 * (vision.c). The conventions of kernels.h hold for every function here (outputs replaced whole,
 * NULL gradient outputs not computed, errors name the op and the shapes, "F" = float32 or
 * float64). Each op has one plain C kernel; sums accumulate in double.
 */
#ifndef FL_KERNELS_VISION_H
#define FL_KERNELS_VISION_H

#include "runtime/kernels/kernels.h"

/* ======================================================================================
 * Rearranging X [N, C, H, W]: each element of Out is one element of X, or 0.
 *   pixel_shuffle(factor r):       Out [N, C/r^2, H*r, W*r], Out[n, c, h*r+i, w*r+j] = X[n, c*r*r + i*r + j, h, w]
 *   shuffle_channel(factor g):     Out channel j*g + i = X channel i*(C/g) + j
 *   space_to_depth(factor b):      Out [N, C*b^2, H/b, W/b], YOLOv2's reorg in Fluid's order (ops.md)
 *   temporal_shift(factor T, ratio): X [N*T, C, H, W]; channels [0, c1) of segment t from t-1,
 *                                  [c1, c2) from t+1 (0 past either end), the rest the same, with
 *                                  c1 = int(C * ratio), c2 = int(C * 2 * ratio) in float, as Fluid
 * The forward kernels take any dtype (elements are copied), the gradients F: dX receives dOut at
 * each element's source.
 * ====================================================================================== */
typedef enum FlRearrange {
    FL_REARRANGE_PIXEL_SHUFFLE,
    FL_REARRANGE_SHUFFLE_CHANNEL,
    FL_REARRANGE_SPACE_TO_DEPTH,
    FL_REARRANGE_TEMPORAL_SHIFT,
    FL_REARRANGE_COUNT
} FlRearrange;
typedef struct FlRearrangeAttrs {
    FlRearrange kind;
    int factor;         /* upscale_factor, group, blocksize or seg_num (>= 1) */
    double shift_ratio; /* temporal_shift */
} FlRearrangeAttrs;
FlStatus fl_kernel_rearrange(FlErr *e, const FlTensor *x, const FlRearrangeAttrs *a, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_rearrange_grad(FlErr *e, const FlTensor *x, const FlTensor *dout, const FlRearrangeAttrs *a,
                                  FlTensor *dx) FL_WARN_UNUSED;

/* maxout: X [N, C, H, W] (F) -> Out [N, C/groups, H, W], Out channel c = the largest of X's channels
 * c*groups .. c*groups + groups - 1. maxout_grad: dOut to the first of those channels holding the
 * maximum (as Fluid's). */
FlStatus fl_kernel_maxout(FlErr *e, const FlTensor *x, int groups, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_maxout_grad(FlErr *e, const FlTensor *x, const FlTensor *dout, int groups,
                               FlTensor *dx) FL_WARN_UNUSED;

/* affine_channel: Out = X * Scale[c] + Bias[c], c = dim 1 of X [N, C, ...] (nhwc: the last dim).
 * affine_channel_grad: dX = dOut * Scale[c], dScale[c] = sum dOut * X, dBias[c] = sum dOut. */
FlStatus fl_kernel_affine_channel(FlErr *e, const FlTensor *x, const FlTensor *scale, const FlTensor *bias, bool nhwc,
                                  FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_affine_channel_grad(FlErr *e, const FlTensor *x, const FlTensor *scale, const FlTensor *dout,
                                       bool nhwc, FlTensor *dx, FlTensor *dscale, FlTensor *dbias) FL_WARN_UNUSED;

/* pad2d: X [N, C, H, W] (nhwc: [N, H, W, C]) padded by pads = [top, bottom, left, right] (>= 0):
 * constant fills value, reflect mirrors about the edge without repeating it (each padding below
 * the size it mirrors), edge repeats the edge. X: any dtype (constant) or F. pad2d_grad: dX sums
 * dOut over every cell that copied it. */
typedef enum FlPad2dMode { FL_PAD2D_CONSTANT, FL_PAD2D_REFLECT, FL_PAD2D_EDGE, FL_PAD2D_COUNT } FlPad2dMode;
FlStatus fl_kernel_pad2d(FlErr *e, const FlTensor *x, const int64_t pads[4], FlPad2dMode mode, double value, bool nhwc,
                         FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_pad2d_grad(FlErr *e, const FlTensor *x, const FlTensor *dout, const int64_t pads[4],
                              FlPad2dMode mode, bool nhwc, FlTensor *dx) FL_WARN_UNUSED;

/* pad_constant_like: Out (X's shape) = Y at the origin and value elsewhere (Y of X's rank and
 * dtype, no dim larger than X's). pad_constant_like_grad: dY = dOut's box at the origin. */
FlStatus fl_kernel_pad_constant_like(FlErr *e, const FlTensor *x, const FlTensor *y, double value,
                                     FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_pad_constant_like_grad(FlErr *e, const FlTensor *x, const FlTensor *y, const FlTensor *dout,
                                          FlTensor *dy) FL_WARN_UNUSED;

/* group_norm: X [N, C, ...] (F), C divisible by groups; per sample and group of C/groups channels
 * Y = (X - mean) / sqrt(var + epsilon) * Scale[c] + Bias[c] (biased variance; Scale, Bias [C] or
 * NULL: 1 and 0). Mean, Variance [N, groups] (may be NULL). group_norm_grad: dX, dScale, dBias
 * (any may be NULL) from X, Scale, Mean, Variance, dY. */
FlStatus fl_kernel_group_norm(FlErr *e, const FlTensor *x, const FlTensor *scale, const FlTensor *bias, int groups,
                              double epsilon, FlTensor *y, FlTensor *mean, FlTensor *variance) FL_WARN_UNUSED;
FlStatus fl_kernel_group_norm_grad(FlErr *e, const FlTensor *x, const FlTensor *scale, const FlTensor *mean,
                                   const FlTensor *variance, const FlTensor *dy, int groups, double epsilon,
                                   FlTensor *dx, FlTensor *dscale, FlTensor *dbias) FL_WARN_UNUSED;

#endif
