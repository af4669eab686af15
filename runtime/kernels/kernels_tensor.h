/* kernels_tensor.h: the kernels of the tensor family (tensor.c): scans, orders and tests of
 * values (cumsum, reverse, argmin, argsort, isinf / isnan / isfinite, diag, where, shape) and the
 * small losses log_loss, huber_loss and kldiv_loss, as Fluid's operators define them. The
 * conventions of kernels.h hold: outputs replaced whole, NULL gradient outputs not computed,
 * errors name the op and the shapes. "N" = a numeric dtype (float32, float64, int32, int64; the
 * output takes the input's); the losses take float32 or float64 and compute in double. */
#ifndef FL_KERNELS_TENSOR_H
#define FL_KERNELS_TENSOR_H

#include "runtime/kernels/kernels.h"

/* cumsum: Out (N, X's shape) = the running sum along axis; reverse from the end, exclusive
 * without the element itself (the first 0). Ints wrap (two's complement); floats add in double.
 * Its gradient is the same kernel on dOut with reverse flipped. */
FlStatus fl_kernel_cumsum(FlErr *e, const FlTensor *x, int axis, bool exclusive, bool reverse,
                          FlTensor *out) FL_WARN_UNUSED;

/* reverse: Out (X's dtype and shape) = X with each dim named in axes[0..n) reversed (an axis in
 * [-rank, rank); one named twice is reversed once). Its own gradient. */
FlStatus fl_kernel_reverse(FlErr *e, const FlTensor *x, const int64_t *axes, int n, FlTensor *out) FL_WARN_UNUSED;

/* argmin: Out (int64, X's shape without axis; [1] for a rank-1 X) = the index of the smallest
 * element along axis, the first on ties. */
FlStatus fl_kernel_argmin(FlErr *e, const FlTensor *x, int axis, FlTensor *out) FL_WARN_UNUSED;

/* argsort: Out (N) = X sorted ascending along axis, stably; Indices (int64, X's shape) = the
 * index along axis each came from. NaNs sort last. argsort_grad: dX[.., Indices[j], ..] =
 * dOut[.., j, ..]. */
FlStatus fl_kernel_argsort(FlErr *e, const FlTensor *x, int axis, FlTensor *out, FlTensor *indices) FL_WARN_UNUSED;
FlStatus fl_kernel_argsort_grad(FlErr *e, const FlTensor *indices, const FlTensor *dout, int axis,
                                FlTensor *dx) FL_WARN_UNUSED;

/* isinf (any element infinite), isnan (any NaN), isfinite (every element finite): Out bool [1]. */
typedef enum FlValueTest { FL_TEST_INF, FL_TEST_NAN, FL_TEST_FINITE } FlValueTest;
FlStatus fl_kernel_value_test(FlErr *e, FlValueTest k, const FlTensor *x, FlTensor *out) FL_WARN_UNUSED;

/* diag: Out [n, n] (N) = Diagonal [n] on the diagonal, 0 elsewhere; diag_grad: dDiagonal =
 * dOut's diagonal. */
FlStatus fl_kernel_diag(FlErr *e, const FlTensor *d, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_diag_grad(FlErr *e, const FlTensor *dout, FlTensor *dd) FL_WARN_UNUSED;

/* where: Out (int64 [k, rank]) = the coordinates of the k true elements of the bool Condition,
 * row-major. */
FlStatus fl_kernel_where(FlErr *e, const FlTensor *cond, FlTensor *out) FL_WARN_UNUSED;

/* shape: Out (int32 [rank]) = Input's dims (Input of any dtype, holding data). */
FlStatus fl_kernel_shape(FlErr *e, const FlTensor *x, FlTensor *out) FL_WARN_UNUSED;

/* log_loss: Loss = -L log(P + eps) - (1 - L) log(1 - P + eps) elementwise (P, L one shape);
 * the gradient into P and L (either NULL). */
FlStatus fl_kernel_log_loss(FlErr *e, const FlTensor *p, const FlTensor *l, double eps, FlTensor *loss) FL_WARN_UNUSED;
FlStatus fl_kernel_log_loss_grad(FlErr *e, const FlTensor *p, const FlTensor *l, const FlTensor *dloss, double eps,
                                 FlTensor *dp, FlTensor *dl) FL_WARN_UNUSED;

/* teacher_student_sigmoid_loss: Y = ce(x, clk) + (with a q) ce(x, q), ce(x, z) = max(x, 0) - x z +
 * log(1 + exp(-|x|)), from Label l: l < -1 no click and no q, l < 0 a click and no q, l < 1 no
 * click and q = l, else a click and q = l - 1 (X, Label, Y one shape). The gradient as Fluid's:
 * with s = sigmoid(clip(x, lo, up)), dX = dY * (s, s - 1, 2 s - l for the three label ranges),
 * 0 where x is at or past a bound; dLabel = dY * -x where l >= 0, else 0 (either NULL). */
FlStatus fl_kernel_ts_sigmoid_loss(FlErr *e, const FlTensor *x, const FlTensor *label, FlTensor *y) FL_WARN_UNUSED;
FlStatus fl_kernel_ts_sigmoid_loss_grad(FlErr *e, const FlTensor *x, const FlTensor *label, const FlTensor *dy,
                                        double up, double lo, FlTensor *dx, FlTensor *dlabel) FL_WARN_UNUSED;

/* huber_loss: Residual = Y - X, Out = r^2 / 2 where |r| <= delta, else delta (|r| - delta / 2);
 * the gradient from Residual and dOut: dY = dOut * clip(r, -delta, delta), dX = -dY. */
FlStatus fl_kernel_huber_loss(FlErr *e, const FlTensor *x, const FlTensor *y, double delta, FlTensor *out,
                              FlTensor *residual) FL_WARN_UNUSED;
FlStatus fl_kernel_huber_loss_grad(FlErr *e, const FlTensor *residual, const FlTensor *dout, double delta,
                                   FlTensor *dx, FlTensor *dy) FL_WARN_UNUSED;

/* kldiv_loss: l = T (log T - X) where T > 0, else 0; reduction none: Loss = l (X's shape); sum,
 * mean (over every element), batchmean (sum / X's first dim): Loss [1]. The gradient: dX = -T
 * and dT = log T + 1 - X where T > 0 (else 0), times dLoss (over the reduction). */
typedef enum FlKlReduction { FL_KL_NONE, FL_KL_SUM, FL_KL_MEAN, FL_KL_BATCHMEAN } FlKlReduction;
FlStatus fl_kernel_kldiv_loss(FlErr *e, const FlTensor *x, const FlTensor *t, FlKlReduction r,
                              FlTensor *loss) FL_WARN_UNUSED;
FlStatus fl_kernel_kldiv_loss_grad(FlErr *e, const FlTensor *x, const FlTensor *t, const FlTensor *dloss,
                                   FlKlReduction r, FlTensor *dx, FlTensor *dt) FL_WARN_UNUSED;

/* multiplex: out = row i of xs[ids[i]] for each row i of the n inputs xs (one shape and dtype, any
 * dtype); ids int [M, 1] (each in [0, n): an error names the row otherwise). */
FlStatus fl_kernel_multiplex(FlErr *e, const FlTensor *const *xs, int n, const FlTensor *ids,
                             FlTensor *out) FL_WARN_UNUSED;
/* mean_iou: over the elements of pred and label (int32 or int64, one shape, each in [0, k)):
 * correct[c] (int32 [k]) += 1 where both are c; where they differ, wrong[label] and wrong[pred]
 * += 1; miou (float32 [1]) = the sum over classes of correct / (correct + wrong), 0 / 0 counted
 * as 0, divided by the classes with correct + wrong > 0 (NaN when none, as Fluid). Errors: an id
 * outside [0, k), naming its element. */
FlStatus fl_kernel_mean_iou(FlErr *e, const FlTensor *pred, const FlTensor *label, int64_t k, FlTensor *miou,
                            FlTensor *wrong, FlTensor *correct) FL_WARN_UNUSED;

/* range: Out [n] (start's dtype, N) = start, start + step, ... short of end, each a one-element
 * tensor of that dtype: n = ceil(|end - start| / |step|) (for ints (|end - start| + |step| - 1)
 * / |step|), each value the previous + step in the dtype (float32 accumulates in float, as
 * Fluid's kernel). Errors: step 0, a step pointing away from end, n above 2^31. */
FlStatus fl_kernel_range(FlErr *e, const FlTensor *start, const FlTensor *end, const FlTensor *step,
                         FlTensor *out) FL_WARN_UNUSED;

/* linspace: Out [num] (start's float dtype) = start + i * step, step = (stop - start) / (num - 1)
 * computed in the dtype; num 1: [start]. num: one int > 0 (at most 2^31). */
FlStatus fl_kernel_linspace(FlErr *e, const FlTensor *start, const FlTensor *stop, const FlTensor *num,
                            FlTensor *out) FL_WARN_UNUSED;

/* multiplex_grad: dxs[k] (NULL: not wanted) = dOut's rows i with ids[i] == k, zeros elsewhere. */
FlStatus fl_kernel_multiplex_grad(FlErr *e, const FlTensor *const *xs, int n, const FlTensor *ids,
                                  const FlTensor *dout, FlTensor *const *dxs) FL_WARN_UNUSED;

#endif
