/* fill_batch.c: fill_constant_batch_size_like, uniform_random_batch_size_like and
 * gaussian_random_batch_size_like, the fills
 * whose shape takes one dim (the batch size) from an input at run time. */
#include "runtime/kernels/kernels_impl.h"
#include "runtime/kernels/kernels_layers.h"

static FlStatus batch_shape(FlErr *e, const char *op, const FlTensor *input, int64_t nseq, int nshape, const int64_t *shape,
                            int input_dim_idx, int output_dim_idx, int64_t *ne) {
    if (khas(e, op, "Input", input)) return FL_ERROR;
    if (nshape < 1 || nshape > FL_MAX_DIMS) return fl_err(e, "%s: shape has %d dims (1 to %d)", op, nshape, FL_MAX_DIMS);
    if (input_dim_idx < 0 || input_dim_idx >= input->ndim)
        return fl_err(e, "%s: input_dim_idx %d is not a dim of Input %s", op, input_dim_idx, fl_tensor_shape(input).s);
    if (output_dim_idx < 0 || output_dim_idx >= nshape)
        return fl_err(e, "%s: output_dim_idx %d is not a dim of shape %s", op, output_dim_idx,
                      fl_shape_str(nshape, shape).s);
    for (int i = 0; i < nshape; i++) {
        ne[i] = i != output_dim_idx ? shape[i] : nseq >= 0 && input_dim_idx == 0 ? nseq : input->ne[input_dim_idx];
        if (ne[i] < 0 || (ne[i] == 0 && i != output_dim_idx))
            return fl_err(e, "%s: shape %s has dim %d of size %lld", op, fl_shape_str(nshape, shape).s, i,
                          (long long)ne[i]);
    }
    return FL_OK;
}

FlStatus fl_kernel_fill_constant_batch_size_like(FlErr *e, const FlTensor *input, int64_t nseq, int nshape, const int64_t *shape,
                                                 int input_dim_idx, int output_dim_idx, double value,
                                                 const int64_t *exact, FlDType dtype, FlTensor *out) {
    int64_t ne[FL_MAX_DIMS];
    if (batch_shape(e, "fill_constant_batch_size_like", input, nseq, nshape, shape, input_dim_idx, output_dim_idx, ne))
        return FL_ERROR;
    return fl_kernel_fill_constant(e, nshape, ne, value, exact, dtype, out);
}

FlStatus fl_kernel_uniform_random_batch_size_like(FlErr *e, const FlTensor *input, int64_t nseq, int nshape, const int64_t *shape,
                                                  int input_dim_idx, int output_dim_idx, double min, double max,
                                                  uint64_t seed, FlDType dtype, FlTensor *out) {
    int64_t ne[FL_MAX_DIMS];
    if (batch_shape(e, "uniform_random_batch_size_like", input, nseq, nshape, shape, input_dim_idx, output_dim_idx, ne))
        return FL_ERROR;
    return fl_kernel_uniform_random(e, nshape, ne, min, max, seed, 0, dtype, out);
}

FlStatus fl_kernel_gaussian_random_batch_size_like(FlErr *e, const FlTensor *input, int64_t nseq, int nshape,
                                                   const int64_t *shape, int input_dim_idx, int output_dim_idx,
                                                   double mean, double std, uint64_t seed, FlDType dtype,
                                                   FlTensor *out) {
    int64_t ne[FL_MAX_DIMS];
    if (batch_shape(e, "gaussian_random_batch_size_like", input, nseq, nshape, shape, input_dim_idx, output_dim_idx,
                    ne))
        return FL_ERROR;
    return fl_kernel_gaussian_random(e, nshape, ne, mean, std, seed, 0, dtype, out);
}
