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

#endif
