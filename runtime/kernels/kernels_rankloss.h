/* kernels_rankloss.h: the kernels of the pairwise ranking losses (rankloss.c): RankNet's
 * rank_loss, margin_rank_loss and Bayesian personalised ranking (bpr_loss), with their
 * gradients. The conventions of kernels.h hold (outputs replaced whole, NULL gradient outputs
 * not computed, errors name the op and the shapes, "F" = float32 or float64). Internals are
 * double; the losses use log(1 + exp(v)) = max(v, 0) + log1p(exp(-|v|)), finite for any score. */
#ifndef FL_KERNELS_RANKLOSS_H
#define FL_KERNELS_RANKLOSS_H

#include "runtime/kernels/kernels.h"

/* rank_loss: Out [N, 1] (F) = log(1 + exp(o)) - label * o with o = left - right; label, left
 * and right F [N, 1] of one dtype. */
FlStatus fl_kernel_rank_loss(FlErr *e, const FlTensor *label, const FlTensor *left, const FlTensor *right,
                             FlTensor *out) FL_WARN_UNUSED;
/* rank_loss_grad: dLeft = dOut * (sigmoid(o) - label), dRight = -dLeft (either may be NULL). */
FlStatus fl_kernel_rank_loss_grad(FlErr *e, const FlTensor *label, const FlTensor *left, const FlTensor *right,
                                  const FlTensor *dout, FlTensor *dleft, FlTensor *dright) FL_WARN_UNUSED;

/* margin_rank_loss: Out [N, 1] (F) = max(0, -label * (x1 - x2) + margin); Activated (F, may be
 * NULL) = 1 where Out > 0, else 0. */
FlStatus fl_kernel_margin_rank_loss(FlErr *e, const FlTensor *label, const FlTensor *x1, const FlTensor *x2,
                                    double margin, FlTensor *out, FlTensor *activated) FL_WARN_UNUSED;
/* margin_rank_loss_grad: dX1 = -dOut * Activated * label, dX2 = -dX1 (either may be NULL). */
FlStatus fl_kernel_margin_rank_loss_grad(FlErr *e, const FlTensor *label, const FlTensor *activated,
                                         const FlTensor *dout, FlTensor *dx1, FlTensor *dx2) FL_WARN_UNUSED;

/* bpr_loss: Y [N, 1] (F) = 1 / (C - 1) * sum over j != l of log(1 + exp(x[j] - x[l])) for each
 * row x of X [N, C] (F, C >= 2), l its label (int32 or int64 [N, 1], in [0, C): an error names
 * the row otherwise). */
FlStatus fl_kernel_bpr_loss(FlErr *e, const FlTensor *x, const FlTensor *label, FlTensor *y) FL_WARN_UNUSED;
/* bpr_loss_grad: dX [N, C] = dY times the derivative of each row's loss. */
FlStatus fl_kernel_bpr_loss_grad(FlErr *e, const FlTensor *x, const FlTensor *label, const FlTensor *dy,
                                 FlTensor *dx) FL_WARN_UNUSED;

#endif
