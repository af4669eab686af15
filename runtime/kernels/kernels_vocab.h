/* kernels_vocab.h: the kernels of the losses over large vocabularies (vocab.c): the hierarchical
 * sigmoid and its gradient. The conventions of kernels.h hold (outputs replaced whole, NULL
 * gradient outputs not computed, errors name the op and the shapes, "F" = float32 or float64).
 * Internals are double. */
#ifndef FL_KERNELS_VOCAB_H
#define FL_KERNELS_VOCAB_H

#include "runtime/kernels/kernels.h"

/* The tree of hierarchical_sigmoid: num_classes and, for a custom tree, path_table and path_code
 * (int [N, L]: each row's inner nodes, ended by a negative one, and the bits taken at them);
 * both NULL for the default tree (class c's code c + num_classes). */
typedef struct FlHsigmoidTree {
    int64_t num_classes;
    const FlTensor *path_table, *path_code;
} FlHsigmoidTree;

/* hierarchical_sigmoid: out [N, 1] (F) = sum over the path's nodes j of softplus(z_j) - bit_j * z_j
 * with z_j = x . w[node_j] + bias[node_j] (bias F [nodes, 1], may be NULL) clipped to [-40, 40],
 * plus log 2 for each of the L - length entries past the path (Fluid's op counts them); pre_out
 * [N, L] (F) = softplus(z) (0 past the path: log 2). x F [N, D], w F [nodes, D], label int [N, 1]
 * (in [0, num_classes) for the default tree; an error names the row otherwise, and a custom node
 * outside w's rows). */
FlStatus fl_kernel_hsigmoid(FlErr *e, const FlTensor *x, const FlTensor *w, const FlTensor *label,
                            const FlTensor *bias, const FlHsigmoidTree *tree, FlTensor *out,
                            FlTensor *pre_out) FL_WARN_UNUSED;
/* hierarchical_sigmoid_grad: dX, dW and dBias (each may be NULL) given pre_out and dOut [N, 1]:
 * with g_j = dOut * (sigmoid(z_j) - bit_j) over the path (sigmoid(z) = 1 - exp(-pre_out)), dX =
 * sum g_j w[node_j], dW[node_j] += g_j x, dBias[node_j] += g_j (no subgradient of the clip, as
 * Fluid's). */
FlStatus fl_kernel_hsigmoid_grad(FlErr *e, const FlTensor *x, const FlTensor *w, const FlTensor *label,
                                 const FlTensor *bias, const FlHsigmoidTree *tree, const FlTensor *pre_out,
                                 const FlTensor *dout, FlTensor *dx, FlTensor *dw, FlTensor *dbias) FL_WARN_UNUSED;

#endif
