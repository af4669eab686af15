/* kernels_crf.h: the sequence-labelling kernels (crf.c): the linear-chain CRF's negative
 * log-likelihood and its gradient, Viterbi decoding, and chunk evaluation. The conventions of
 * kernels.h hold (outputs replaced whole, NULL gradient outputs not computed, errors name the op
 * and the shapes, "F" = float32 or float64).
 *
 * Sequences: the rows of Emission (and of Label, Inference) are cut by offsets off[0..nseq]
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

/* chunk_eval's tagging schemes: how many tag kinds each has (a label is tag + kinds * type). */
typedef enum FlChunkScheme {
    FL_CHUNK_IOB,   /* B I   (2 kinds) */
    FL_CHUNK_IOE,   /* I E   (2 kinds) */
    FL_CHUNK_IOBES, /* B I E S (4 kinds) */
    FL_CHUNK_PLAIN, /* one kind: a run of one type is a chunk */
    FL_CHUNK_COUNT
} FlChunkScheme;
/* The scheme named name ("IOB", "IOE", "IOBES", "plain"); FL_CHUNK_COUNT when none. */
FlChunkScheme fl_chunk_scheme_find(const char *name);

/* chunk_eval: the chunks of each sequence of inference and label (int [T, 1], both cut by off),
 * label value v: tag v % kinds, type v / kinds, types >= num_chunk_types outside any chunk
 * (values above num_chunk_types * kinds are an error). A chunk is correct when both mark it with
 * the same span and type; chunks whose type is in excluded (n_excluded values) count nowhere.
 * Precision = correct / inferred, Recall = correct / labelled, F1 = 2PR / (P + R) (0 when a
 * denominator is 0), float32 [1]; the three counts int64 [1]. */
FlStatus fl_kernel_chunk_eval(FlErr *e, const FlTensor *inference, const FlTensor *label, const int64_t *off,
                              int64_t nseq, int num_chunk_types, FlChunkScheme scheme, const int64_t *excluded,
                              size_t n_excluded, FlTensor *precision, FlTensor *recall, FlTensor *f1,
                              FlTensor *num_infer, FlTensor *num_label, FlTensor *num_correct) FL_WARN_UNUSED;

#endif
