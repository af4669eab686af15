/* kernels_statnorm.h: the kernels of the normalisations by held statistics (statnorm.c):
 * data_norm and spectral_norm, with their gradients. The conventions of kernels.h hold (outputs
 * replaced whole, NULL gradient outputs not computed, errors name the op and the shapes, "F" =
 * float32 or float64). Internals are double. */
#ifndef FL_KERNELS_STATNORM_H
#define FL_KERNELS_STATNORM_H

#include "runtime/kernels/kernels.h"

/* data_norm: y [N, C] = (x - means) * scales, means = batch_sum / batch_size, scales =
 * sqrt(batch_size / batch_square_sum) ([C] each, F; means and scales may be NULL). */
FlStatus fl_kernel_data_norm(FlErr *e, const FlTensor *x, const FlTensor *batch_size, const FlTensor *batch_sum,
                             const FlTensor *batch_square_sum, FlTensor *y, FlTensor *means,
                             FlTensor *scales) FL_WARN_UNUSED;
/* data_norm_grad (Fluid's): dx = dy * scales; d_size [C] = N, d_sum = the column sums of x,
 * d_square_sum = the column sums of (x - means)^2 + N * epsilon (each output may be NULL). */
FlStatus fl_kernel_data_norm_grad(FlErr *e, const FlTensor *x, const FlTensor *means, const FlTensor *scales,
                                  const FlTensor *dy, double epsilon, FlTensor *dx, FlTensor *d_size,
                                  FlTensor *d_sum, FlTensor *d_square_sum) FL_WARN_UNUSED;

/* spectral_norm: out = weight / sigma (weight F of rank 2 to 5, seen as W [h, w] with h = its
 * axis dim, moved first, by the rest; u F [h], v F [w]): power_iters rounds of v = W^T u /
 * (|W^T u| + eps), u = W v / (|W v| + eps) on copies of u and v, then sigma = u^T W v.
 * spectral_norm_grad: dweight = (dout - <dout, out> u v^T) / sigma with the final u and v held
 * fixed (moved back to weight's layout). */
FlStatus fl_kernel_spectral_norm(FlErr *e, const FlTensor *weight, const FlTensor *u, const FlTensor *v, int dim,
                                 int64_t power_iters, double eps, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_spectral_norm_grad(FlErr *e, const FlTensor *weight, const FlTensor *u, const FlTensor *v,
                                      const FlTensor *dout, int dim, int64_t power_iters, double eps,
                                      FlTensor *dweight) FL_WARN_UNUSED;

#endif
