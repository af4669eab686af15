/* kernels_imgsel.h: the kernels of the ops that select parts of an image batch (imgsel.c),
 * random_crop and similarity_focus. The conventions of kernels.h hold (outputs replaced whole,
 * errors name the op and the shapes). */
#ifndef FL_KERNELS_IMGSEL_H
#define FL_KERNELS_IMGSEL_H

#include "runtime/kernels/kernels.h"

/* random_crop: out = x [d..., e...] (any dtype) cropped to [d..., shape[0..k)] (k <= x's rank, each
 * shape[i] in [1, e_i]), instance by instance (each index of the leading dims d), at offsets drawn
 * uniformly in [0, e_i - shape[i]] by an xoshiro256** stream seeded with seed. */
FlStatus fl_kernel_random_crop(FlErr *e, const FlTensor *x, const int64_t *shape, int k, uint64_t seed,
                               FlTensor *out) FL_WARN_UNUSED;

/* similarity_focus: out [N, A, B, C] (x's dtype, F) = 1 along axis (1..3) at the places of each
 * slice x[n, indexes[i] along axis] that a greedy pick takes (greatest first, ties the first in
 * row-major order, one per row and per column of the slice, min(rows, columns) of them), else 0. */
FlStatus fl_kernel_similarity_focus(FlErr *e, const FlTensor *x, int axis, const int64_t *indexes, int nidx,
                                    FlTensor *out) FL_WARN_UNUSED;

#endif
