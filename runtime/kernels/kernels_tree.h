/* kernels_tree.h: the kernel of tree_conv (tree.c), Fluid's tree-based convolution (Mou et al.,
 * "Convolutional neural networks over tree structures for programming language processing"),
 * with its gradient. The conventions of kernels.h hold (outputs replaced whole, NULL gradient
 * outputs not computed, errors name the op and the shapes, "F" = float32 or float64); sums are
 * taken in double.
 *
 * Each instance b is a tree given by its edges EdgeSet[b] (int32 or int64 [E, 2], (parent,
 * child) pairs of node ids from 1; the first pair holding a 0 ends the tree's edges). Its node
 * count is 1 + the number of pairs without a 0 in the whole list (as Fluid counts it); it may not
 * exceed NodesVector's node dim, and every id of the edges read must be in [1, count]. The patch
 * of node u is u and its descendants less than max_depth below it, found as Fluid's depth-first
 * walk does (each node once); a node v of the patch at depth d, the i-th (from 1) of its parent's
 * c children (the root: 1 of 1), has the weights
 *     eta_t = (max_depth - d) / max_depth
 *     eta_l = (1 - eta_t) * (c == 1 ? 0.5 : (i - 1) / (c - 1))
 *     eta_r = (1 - eta_t) * (1 - eta_l)          (Fluid's formula, eta_l as computed above)
 * and Out[b, u - 1, k] = sum over the patch's v and the features f of
 *     X[b, v - 1, f] * (eta_l W[f, 0, k] + eta_r W[f, 1, k] + eta_t W[f, 2, k])
 * for k over W's [out_size, num_filters]; the rows of nodes past the count are 0. */
#ifndef FL_KERNELS_TREE_H
#define FL_KERNELS_TREE_H

#include "runtime/kernels/kernels.h"

/* tree_conv: nodes F [B, N, Fe], edges int [B, E, 2], filter F [Fe, 3, O, K] (nodes' dtype),
 * max_depth >= 1 -> out F [B, N, O, K]. */
FlStatus fl_kernel_tree_conv(FlErr *e, const FlTensor *nodes, const FlTensor *edges, const FlTensor *filter,
                             int64_t max_depth, FlTensor *out) FL_WARN_UNUSED;
/* tree_conv_grad: dOut [B, N, O, K] -> dNodes (like nodes) and dFilter (like filter); either may
 * be NULL. */
FlStatus fl_kernel_tree_conv_grad(FlErr *e, const FlTensor *nodes, const FlTensor *edges, const FlTensor *filter,
                                  const FlTensor *dout, int64_t max_depth, FlTensor *dnodes,
                                  FlTensor *dfilter) FL_WARN_UNUSED;

#endif
