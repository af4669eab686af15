/* kernels_crf.h: the sequence-labelling kernels (crf.c): the linear-chain CRF's negative
 * log-likelihood and its gradient, and Viterbi decoding. The conventions of
 * kernels.h hold (outputs replaced whole, NULL gradient outputs not computed, errors name the op
 * and the shapes, "F" = float32 or float64).
 *
 * Sequences: the rows of Emission (and of Label) are cut by offsets off[0..nseq]
 * (off[0] == 0, non-decreasing, off[nseq] == rows), checked by the caller (fl_exec_check_lod);
 * an empty sequence is allowed.
 *
 * The CRF over K tags: Emission x [T, K] (F) and Transition w [K + 2, K] (F, Emission's dtype),
 * w[0, j] the weight of starting with tag j, w[1, j] of ending with it, w[2 + i, j] of tag i
 * followed by tag j. A path y of a sequence of length L scores
 *     s(y) = w[0, y0] + sum_k x[k, yk] + sum_{k>0} w[2 + y(k-1), yk] + w[1, y(L-1)]
 * and has probability exp(s(y)) / Z, Z summing exp(s) over all K^L paths. Internals are double.
 */
#ifndef FL_KERNELS_CRF_H
#define FL_KERNELS_CRF_H

#include "runtime/kernels/kernels.h"

/* linear_chain_crf: LogLikelihood [nseq, 1] = log Z - s(label) for each sequence (the negative
 * log-likelihood, as Fluid's output of that name; 0 for an empty sequence). Label: int [T, 1] (or
 * [T]) with values in [0, K). Alpha [T, K]: the forward vectors, row k proportional to the sum of
 * exp(score) over the paths of positions 0..k ending in each tag (rows normalised to sum 1);
 * EmissionExps [T, K] = exp(x - the row's max); TransitionExps = exp(w). Any output may be NULL
 * except LogLikelihood. Errors: shapes, a label out of range, a non-finite normaliser. */
FlStatus fl_kernel_linear_chain_crf(FlErr *e, const FlTensor *emission, const FlTensor *transition,
                                    const FlTensor *label, const int64_t *off, int64_t nseq, FlTensor *alpha,
                                    FlTensor *emission_exps, FlTensor *transition_exps,
                                    FlTensor *log_likelihood) FL_WARN_UNUSED;
/* linear_chain_crf_grad: from the forward's Alpha, EmissionExps, TransitionExps and dLL
 * [nseq, 1]: dEmission[k, j] = dLL * (P(yk = j) - [label_k == j]) and dTransition the same
 * difference of expected and labelled transition counts (start, end and pairs), summed over
 * the sequences; NULL outputs are not computed. */
FlStatus fl_kernel_linear_chain_crf_grad(FlErr *e, const FlTensor *label, const int64_t *off, int64_t nseq,
                                         const FlTensor *alpha, const FlTensor *emission_exps,
                                         const FlTensor *transition_exps, const FlTensor *dll,
                                         FlTensor *demission, FlTensor *dtransition) FL_WARN_UNUSED;

/* crf_decoding: ViterbiPath (int64 [T, 1]) = the path of highest s(y) for each sequence (the
 * lowest tag wins a tie); with label (int [T, 1], may be NULL) it is 1 where the path's tag
 * equals the label and 0 elsewhere instead. */
FlStatus fl_kernel_crf_decoding(FlErr *e, const FlTensor *emission, const FlTensor *transition,
                                const FlTensor *label, const int64_t *off, int64_t nseq,
                                FlTensor *path) FL_WARN_UNUSED;

#endif
