/* kernels_vocab.h: the kernels of the losses over large vocabularies (vocab.c): the hierarchical
 * sigmoid, noise-contrastive estimation and sampled softmax's sample_logits, with their
 * gradients. The conventions of kernels.h hold (outputs replaced whole, NULL
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
 * Fluid's). dw_rows (is_sparse; may be NULL, then dW is dense): W's gradient as a SelectedRows of
 * the nodes on the batch's paths, ascending, each once (the same values as dW's rows). */
FlStatus fl_kernel_hsigmoid_grad(FlErr *e, const FlTensor *x, const FlTensor *w, const FlTensor *label,
                                 const FlTensor *bias, const FlHsigmoidTree *tree, const FlTensor *pre_out,
                                 const FlTensor *dout, FlTensor *dx, FlTensor *dw, FlSelectedRows *dw_rows,
                                 FlTensor *dbias) FL_WARN_UNUSED;

/* nce's sampler and draws: sampler 0 uniform over [0, num_total), 1 log-uniform, 2 the
 * distribution dist (ndist = num_total probabilities); the draws of a run come from (seed, step). */
typedef struct FlNceAttrs {
    int64_t num_total, num_neg;
    int sampler;
    const double *dist;
    size_t ndist;
    const int64_t *neg; /* custom_neg_classes (num_neg of them) instead of draws, or NULL */
    uint64_t seed, step;
} FlNceAttrs;
/* nce: cost [N, 1], sample_logits and sample_labels [N, T + S] (see compiler/ops/vocab.def): x F
 * [N, D], label int [N, T] (in [0, num_total): an error names the row otherwise), w F [num_total,
 * D], bias F [num_total, 1] and sample_weight F [N] (each may be NULL). */
FlStatus fl_kernel_nce(FlErr *e, const FlTensor *x, const FlTensor *label, const FlTensor *w, const FlTensor *bias,
                       const FlTensor *sample_weight, const FlNceAttrs *a, FlTensor *cost, FlTensor *sample_logits,
                       FlTensor *sample_labels) FL_WARN_UNUSED;
/* nce_grad: dX, dW and dBias (each may be NULL) from the forward's sample_logits and sample_labels
 * and dCost [N, 1]: the logit gradient w * b (o - 1) / (o + b) of a true class and w * o (1 - o) /
 * (o + b) of a drawn one, times dCost. dw_rows (is_sparse; may be NULL, then dW is dense): W's
 * gradient as a SelectedRows of the sampled classes, ascending, each once. */
FlStatus fl_kernel_nce_grad(FlErr *e, const FlTensor *x, const FlTensor *label, const FlTensor *w,
                            const FlTensor *bias, const FlTensor *sample_weight, const FlNceAttrs *a,
                            const FlTensor *sample_logits, const FlTensor *sample_labels, const FlTensor *dcost,
                            FlTensor *dx, FlTensor *dw, FlSelectedRows *dw_rows, FlTensor *dbias) FL_WARN_UNUSED;

/* sample_logits: samples, probabilities and sampled_logits [N, T + S] and sampled_labels [N, T]
 * (see compiler/ops/vocab.def) from logits F [N, K] and labels int [N, T] (in [0, K): an error
 * names the row otherwise); with custom_samples and custom_probs (both non-NULL, [N, T + S]) no
 * class is drawn; else S distinct classes are drawn from (seed, step) for the whole batch. */
FlStatus fl_kernel_sample_logits(FlErr *e, const FlTensor *logits, const FlTensor *labels,
                                 const FlTensor *custom_samples, const FlTensor *custom_probs, int64_t num_samples,
                                 bool remove_accidental_hits, uint64_t seed, uint64_t step, FlTensor *samples,
                                 FlTensor *probabilities, FlTensor *sampled_logits,
                                 FlTensor *sampled_labels) FL_WARN_UNUSED;
/* sample_logits_grad: dLogits [N, K] = dSampledLogits added at each row's samples. */
FlStatus fl_kernel_sample_logits_grad(FlErr *e, const FlTensor *logits, const FlTensor *samples,
                                      const FlTensor *dsampled, FlTensor *dlogits) FL_WARN_UNUSED;

#endif
