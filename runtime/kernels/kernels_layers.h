/* kernels_layers.h: the kernels of Fluid's parametrised activations, batch-size fills, max / min
 * / product reductions, and the indexing, stacking, padding and cropping layers. The
 * conventions of kernels.h hold for every function here (outputs replaced whole, NULL gradient
 * outputs not computed, errors name the op and the shapes, "F" = float32 or float64).
 */
#ifndef FL_KERNELS_LAYERS_H
#define FL_KERNELS_LAYERS_H

#include "runtime/kernels/kernels.h"

/* ======================================================================================
 * Activations with parameters and clipping (activation_param.c). X: F; Out: X's shape.
 * Gradients take (X, dOut) and give dX:
 *   leaky_relu(alpha):          Out = X > 0 ? X : alpha X
 *   elu(alpha):                 Out = X > 0 ? X : alpha (e^X - 1)
 *   relu6(threshold):           Out = min(max(X, 0), threshold);   dX = dOut where 0 < X < threshold
 *   swish(beta):                Out = X sigmoid(beta X)
 *   hard_sigmoid(slope, offset): Out = min(max(slope X + offset, 0), 1); dX = slope dOut inside
 *   brelu(t_min, t_max):        Out = min(max(X, t_min), t_max);  dX = dOut where t_min < X < t_max
 *   soft_relu(threshold):       Out = log(1 + e^min(max(X, -t), t)); dX = dOut sigmoid(X) where |X| < t
 *   softsign:                   Out = X / (1 + |X|)
 *   pow(factor):                Out = X^factor
 *   clip(min, max):             Out = min(max(X, min), max);      dX = dOut where min < X < max
 *   logsigmoid:                 Out = -log(1 + e^-X)
 *   atan, cos, acos, asin, sin: Out = the function of X (acos, asin: X in [-1, 1])
 *   tanh_shrink:                Out = X - tanh X
 *   softshrink(lambda):         Out = X - lambda where X > lambda, X + lambda where X < -lambda, else 0
 *   rsqrt, reciprocal:          Out = 1 / sqrt(X), 1 / X
 *   ceil, floor, round, sign:   Out = the function of X (round: half away from zero; sign 0 at 0);
 *                               dX = 0 * dOut, as Fluid's
 *   softplus:                   Out = log(1 + e^X)
 *   hard_shrink(threshold):     Out = X where |X| > threshold, else 0
 *   thresholded_relu(threshold): Out = X where X > threshold, else 0
 *   selu(scale, alpha):         Out = scale X where X > 0, else scale alpha (e^X - 1)
 *   stanh(scale_a, scale_b):    Out = scale_b tanh(scale_a X)
 * (p1, p2: the op's attributes in the order listed; p2 unused by one-parameter ops.)
 * ====================================================================================== */
typedef enum FlActKind {
    FL_ACT_LEAKY_RELU,
    FL_ACT_ELU,
    FL_ACT_RELU6,
    FL_ACT_SWISH,
    FL_ACT_HARD_SIGMOID,
    FL_ACT_BRELU,
    FL_ACT_SOFT_RELU,
    FL_ACT_SOFTSIGN,
    FL_ACT_POW,
    FL_ACT_CLIP,
    FL_ACT_LOGSIGMOID,
    FL_ACT_ATAN,
    FL_ACT_TANH_SHRINK,
    FL_ACT_SOFTSHRINK,
    FL_ACT_RSQRT,
    FL_ACT_CEIL,
    FL_ACT_FLOOR,
    FL_ACT_COS,
    FL_ACT_ACOS,
    FL_ACT_ASIN,
    FL_ACT_SIN,
    FL_ACT_ROUND,
    FL_ACT_RECIPROCAL,
    FL_ACT_SOFTPLUS,
    FL_ACT_HARD_SHRINK,
    FL_ACT_THRESHOLDED_RELU,
    FL_ACT_SELU,
    FL_ACT_STANH,
    FL_ACT_SIGN,
    FL_ACT_COUNT
} FlActKind;
FlStatus fl_kernel_act(FlErr *e, FlActKind kind, const FlTensor *x, double p1, double p2,
                       FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_act_grad(FlErr *e, FlActKind kind, const FlTensor *x, const FlTensor *dout,
                            double p1, double p2, FlTensor *dx) FL_WARN_UNUSED;

/* prelu: Out = X > 0 ? X : a X, with a = Alpha[0] (FL_PRELU_ALL), Alpha[c] for X's dim-1 index c
 * (FL_PRELU_CHANNEL; Alpha holds X.dims[1] values) or Alpha[j] for the element's index j within
 * its sample (FL_PRELU_ELEMENT; Alpha holds prod(X.dims[1:]) values). Alpha's own shape is free.
 * prelu_grad: dX = dOut * (X > 0 ? 1 : a); dAlpha = the sum of dOut * X over the X <= 0 elements
 * that use each alpha. */
typedef enum FlPreluMode { FL_PRELU_ALL, FL_PRELU_CHANNEL, FL_PRELU_ELEMENT, FL_PRELU_COUNT } FlPreluMode;
FlStatus fl_kernel_prelu(FlErr *e, const FlTensor *x, const FlTensor *alpha, FlPreluMode mode,
                         FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_prelu_grad(FlErr *e, const FlTensor *x, const FlTensor *alpha,
                              const FlTensor *dout, FlPreluMode mode, FlTensor *dx,
                              FlTensor *dalpha) FL_WARN_UNUSED;

/* clip_by_norm: n = the L2 norm of all of X; Out = X * max_norm / n when n > max_norm, else X.
 * clip_by_norm_grad: dX = dOut (n <= max_norm), else max_norm / n * (dOut - X (X . dOut) / n^2). */
FlStatus fl_kernel_clip_by_norm(FlErr *e, const FlTensor *x, double max_norm,
                                FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_clip_by_norm_grad(FlErr *e, const FlTensor *x, const FlTensor *dout,
                                     double max_norm, FlTensor *dx) FL_WARN_UNUSED;

/* ======================================================================================
 * Fills shaped by a batch size (fill_batch.c)
 * ====================================================================================== */

/* fill_constant_batch_size_like: Out = fill_constant(shape with shape[output_dim_idx] replaced by
 * Input.dims[input_dim_idx]; by nseq instead when nseq >= 0 and input_dim_idx is 0: a LoD
 * Input's number of sequences, -1 for a dense Input). uniform_random_batch_size_like: the same
 * shape, uniform_random. Errors: an index outside Input's dims or shape, another dim of shape < 1. */
FlStatus fl_kernel_fill_constant_batch_size_like(FlErr *e, const FlTensor *input, int64_t nseq, int nshape,
                                                 const int64_t *shape, int input_dim_idx,
                                                 int output_dim_idx, double value, const int64_t *exact,
                                                 FlDType dtype, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_uniform_random_batch_size_like(FlErr *e, const FlTensor *input, int64_t nseq, int nshape,
                                                  const int64_t *shape, int input_dim_idx,
                                                  int output_dim_idx, double min, double max,
                                                  uint64_t seed, FlDType dtype,
                                                  FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_gaussian_random_batch_size_like(FlErr *e, const FlTensor *input, int64_t nseq, int nshape,
                                                   const int64_t *shape, int input_dim_idx, int output_dim_idx,
                                                   double mean, double std, uint64_t seed, FlDType dtype,
                                                   FlTensor *out) FL_WARN_UNUSED;

/* ======================================================================================
 * Reductions by max, min and product (reduce_minmax.c); dims, keep_dim and reduce_all as
 * reduce_sum's (kernels.h). X: F (max and min also int32/int64).
 * Gradients take X, Out and dOut: max / min give dOut to every element equal to its group's
 * result; prod gives dOut times the product of the group's other elements.
 * ====================================================================================== */
FlStatus fl_kernel_reduce_max(FlErr *e, const FlTensor *x, const int *dims, int ndims,
                              bool keep_dim, bool reduce_all, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_reduce_min(FlErr *e, const FlTensor *x, const int *dims, int ndims,
                              bool keep_dim, bool reduce_all, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_reduce_prod(FlErr *e, const FlTensor *x, const int *dims, int ndims,
                               bool keep_dim, bool reduce_all, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_reduce_max_grad(FlErr *e, const FlTensor *x, const FlTensor *out,
                                   const FlTensor *dout, const int *dims, int ndims,
                                   bool keep_dim, bool reduce_all, FlTensor *dx) FL_WARN_UNUSED;
FlStatus fl_kernel_reduce_min_grad(FlErr *e, const FlTensor *x, const FlTensor *out,
                                   const FlTensor *dout, const int *dims, int ndims,
                                   bool keep_dim, bool reduce_all, FlTensor *dx) FL_WARN_UNUSED;
FlStatus fl_kernel_reduce_prod_grad(FlErr *e, const FlTensor *x, const FlTensor *out,
                                    const FlTensor *dout, const int *dims, int ndims,
                                    bool keep_dim, bool reduce_all, FlTensor *dx) FL_WARN_UNUSED;

/* ======================================================================================
 * Indexing, stacking, padding and reshaping layers (index.c). Any dtype unless said.
 * ====================================================================================== */

/* slice: Out = X[starts[k]:ends[k]] along each axes[k] (n entries; negative starts / ends count
 * from the end, both are clamped to [0, dim] as Python's slices). Errors: an axis out of range
 * or listed twice, an empty slice. slice_grad: dX = zeros of X's shape with dOut at the block. */
FlStatus fl_kernel_slice(FlErr *e, const FlTensor *x, const int64_t *axes, const int64_t *starts,
                         const int64_t *ends, int n, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_slice_grad(FlErr *e, const FlTensor *x, const FlTensor *dout,
                              const int64_t *axes, const int64_t *starts, const int64_t *ends,
                              int n, FlTensor *dx) FL_WARN_UNUSED;

/* crop: Out = the block of X at offsets (ndim values, or NULL: zeros) of the given shape (ndim
 * values; -1 or 0: the rest of X's dim). Errors: a block that does not fit.
 * crop_grad: dX = zeros with dOut at the block. */
FlStatus fl_kernel_crop(FlErr *e, const FlTensor *x, const int64_t *offsets, const int64_t *shape,
                        int ndim, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_crop_grad(FlErr *e, const FlTensor *x, const FlTensor *dout,
                             const int64_t *offsets, FlTensor *dx) FL_WARN_UNUSED;

/* pad: Out = X with paddings[2i] values pad_value before and paddings[2i+1] after dim i
 * (2 * ndim entries, each >= 0). X: N. pad_grad: dX = the block of dOut that holds X. */
FlStatus fl_kernel_pad(FlErr *e, const FlTensor *x, const int64_t *paddings, int npaddings,
                       double pad_value, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_pad_grad(FlErr *e, const FlTensor *x, const FlTensor *dout,
                            const int64_t *paddings, int npaddings, FlTensor *dx) FL_WARN_UNUSED;

/* gather: Out[i] = X[Index[i]] (rows of X's dim 0); Index int32/int64 [N] or [N, 1]. Errors: an
 * index outside [0, X.dims[0]) (names the position). gather_grad: dX = zeros with each dOut row
 * added to row Index[i]. */
FlStatus fl_kernel_gather(FlErr *e, const FlTensor *x, const FlTensor *index,
                          FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_gather_grad(FlErr *e, const FlTensor *x, const FlTensor *index,
                               const FlTensor *dout, FlTensor *dx) FL_WARN_UNUSED;

/* scatter: Out = X with row Ids[i] replaced by Updates[i] (Updates [N] + X.dims[1:]); for a
 * repeated id the last update wins. scatter_grad: dX = dOut with the replaced rows zeroed;
 * dUpdates[i] = dOut[Ids[i]] for the update that won, zeros for the others. */
FlStatus fl_kernel_scatter(FlErr *e, const FlTensor *x, const FlTensor *ids,
                           const FlTensor *updates, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_scatter_grad(FlErr *e, const FlTensor *x, const FlTensor *ids,
                                const FlTensor *updates, const FlTensor *dout, FlTensor *dx,
                                FlTensor *dupdates) FL_WARN_UNUSED;

/* expand: Out = X tiled times[i] times along each dim i (n == X's rank, each >= 1).
 * expand_grad: dX = the sum of dOut's tiles. */
FlStatus fl_kernel_expand(FlErr *e, const FlTensor *x, const int64_t *times, int n,
                          FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_expand_grad(FlErr *e, const FlTensor *x, const FlTensor *dout,
                               const int64_t *times, int n, FlTensor *dx) FL_WARN_UNUSED;

/* stack: Out = the n inputs (one shape and dtype) stacked along a new dim at axis (in
 * [-(rank+1), rank]). unstack: outs[i] = X's slice i along axis, without that dim (n == its
 * size; a NULL outs[i] is skipped). stack_grad is unstack of dOut; unstack_grad is stack of the
 * douts, a NULL one counting as zeros shaped like x's slices. */
FlStatus fl_kernel_stack(FlErr *e, const FlTensor *const *xs, int n, int axis,
                         FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_unstack(FlErr *e, const FlTensor *x, int axis, FlTensor *const *outs,
                           int n) FL_WARN_UNUSED;
FlStatus fl_kernel_unstack_grad(FlErr *e, const FlTensor *x, const FlTensor *const *douts, int n,
                                int axis, FlTensor *dx) FL_WARN_UNUSED;

/* squeeze (axes: size-1 dims to drop; none: every size-1 dim), unsqueeze (a size-1 dim inserted
 * at each axes[k] of the growing result), flatten (to [prod(dims[:axis]), prod(dims[axis:])]):
 * views of X like reshape (kernels.h); their gradient is reshape_grad. */
FlStatus fl_kernel_squeeze(FlErr *e, const FlTensor *x, const int64_t *axes, int n,
                           FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_unsqueeze(FlErr *e, const FlTensor *x, const int64_t *axes, int n,
                             FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_flatten(FlErr *e, const FlTensor *x, int axis, FlTensor *out) FL_WARN_UNUSED;

/* one_hot: X int32/int64 [..., 1] -> Out float32 [..., depth], 1 at column X[i]. Errors: a value
 * outside [0, depth). */
FlStatus fl_kernel_one_hot(FlErr *e, const FlTensor *x, int64_t depth, FlTensor *out) FL_WARN_UNUSED;

#endif
