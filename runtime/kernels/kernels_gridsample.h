/* kernels_gridsample.h: the kernels of the spatial transformer's pair (gridsample.c), affine_grid
 * and grid_sampler, with their gradients. The conventions of kernels.h hold (outputs replaced
 * whole, NULL gradient outputs not computed, errors name the op and the shapes, "F" = float32 or
 * float64). Internals are double. */
#ifndef FL_KERNELS_GRIDSAMPLE_H
#define FL_KERNELS_GRIDSAMPLE_H

#include "runtime/kernels/kernels.h"

/* affine_grid: out [N, H, W, 2] (F) = theta[n] (x_j, y_i, 1)^T with x_j, y_i spread evenly over
 * [-1, 1] (-1 for a size-1 axis); theta F [N, 2, 3]; H and W > 0. */
FlStatus fl_kernel_affine_grid(FlErr *e, const FlTensor *theta, int64_t H, int64_t W, FlTensor *out) FL_WARN_UNUSED;
/* affine_grid_grad: dtheta [N, 2, 3] = sum over the grid of dout[n, i, j] (x_j, y_i, 1). */
FlStatus fl_kernel_affine_grid_grad(FlErr *e, const FlTensor *theta, const FlTensor *dout,
                                    FlTensor *dtheta) FL_WARN_UNUSED;

/* grid_sampler: out [N, C, H', W'] = x [N, C, H, W] sampled bilinearly at grid [N, H', W', 2]
 * (x' = (gx + 1) (W - 1) / 2, y' likewise; neighbours outside the image count 0).
 * grid_sampler_grad: dx and dgrid (either may be NULL). */
FlStatus fl_kernel_grid_sampler(FlErr *e, const FlTensor *x, const FlTensor *grid, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_grid_sampler_grad(FlErr *e, const FlTensor *x, const FlTensor *grid, const FlTensor *dout,
                                     FlTensor *dx, FlTensor *dgrid) FL_WARN_UNUSED;

#endif
