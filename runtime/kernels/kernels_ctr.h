/* kernels_ctr.h: the kernels of the CTR feature ops (ctr.c), hash and continuous_value_model
 * with its gradient. The conventions of kernels.h hold (outputs replaced whole, NULL gradient
 * outputs not computed, errors name the op and the shapes, "F" = float32 or float64). */
#ifndef FL_KERNELS_CTR_H
#define FL_KERNELS_CTR_H

#include "runtime/kernels/kernels.h"

/* XXH64 of n bytes with a seed (the reference xxHash's 64-bit hash, byte order little-endian). */
uint64_t fl_kernel_xxh64(const void *data, size_t n, uint64_t seed);

/* hash: out [N, num_hash, 1] (x's dtype) = xxh64(row n of x [N, K] as its K values' bytes, seed
 * i) % mod_by, as unsigned 64-bit numbers; x int32 or int64, num_hash >= 1, mod_by >= 1. */
FlStatus fl_kernel_hash(FlErr *e, const FlTensor *x, int64_t num_hash, int64_t mod_by, FlTensor *out) FL_WARN_UNUSED;

/* continuous_value_model: y = x [N, D] (F, D >= 2) with the first two columns log(x0 + 1) and
 * log(x1 + 1) - log(x0 + 1) (use_cvm), else without them [N, D - 2]. */
FlStatus fl_kernel_cvm(FlErr *e, const FlTensor *x, bool use_cvm, FlTensor *y) FL_WARN_UNUSED;
/* Its gradient as Fluid's: dx [N, D] = dy in the columns y keeps, cvm's row in the first two;
 * cvm [S, 2] has a row per instance (off NULL) or per sequence of the nseq that off cuts x's
 * rows into. */
FlStatus fl_kernel_cvm_grad(FlErr *e, const FlTensor *x, const FlTensor *cvm, const int64_t *off, int64_t nseq,
                            const FlTensor *dy, bool use_cvm, FlTensor *dx) FL_WARN_UNUSED;

#endif
