/* kernels_ctc.h: the kernels of connectionist temporal classification and of the sequence
 * metrics that go with it (ctc.c): the CTC loss of unscaled logits and its gradient (Fluid's
 * warpctc), the greedy alignment (ctc_align), the edit distance between sequences of ids, and
 * the erasure of tokens from sequences. The conventions of kernels.h hold (outputs replaced
 * whole, NULL gradient outputs not computed, errors name the op and the shapes, "F" = float32
 * or float64).
 *
 * Sequences: a tensor's rows are cut by offsets off[0..nseq] (off[0] == 0, non-decreasing,
 * off[nseq] == rows), checked by the caller (fl_exec_check_lod); an empty sequence is allowed.
 * Ids are int32 or int64 tensors [rows, 1] (or [rows]). Internals are double.
 */
#ifndef FL_KERNELS_CTC_H
#define FL_KERNELS_CTC_H

#include "runtime/kernels/kernels.h"

/* warpctc: Loss [nseq, 1] (F) = -log p(label_s | logits_s) for each sequence s, where logits_s
 * (rows loff[s]..loff[s+1] of logits [T, C], F) are unscaled scores whose softmax over the C
 * classes gives each frame's probabilities, and p sums the probabilities of every alignment
 * (a class per frame) that reads label_s (rows laboff[s]..laboff[s+1] of label, ids in [0, C)
 * other than blank) once repeated classes are merged and blanks removed. A sequence with fewer
 * frames than its label needs (its length plus its repeated neighbours) costs 0 and gets a zero
 * gradient, as warp-ctc gives. Grad [T, C] (F, may be NULL) = d Loss_s / d logits for each row
 * of sequence s (softmax minus the alignments' posterior of each class). Errors: shapes, blank
 * outside [0, C), a label equal to blank or outside [0, C), different numbers of sequences. */
FlStatus fl_kernel_warpctc(FlErr *e, const FlTensor *logits, const int64_t *loff, int64_t nseq,
                           const FlTensor *label, const int64_t *laboff, int64_t nlab, int64_t blank,
                           FlTensor *grad, FlTensor *loss) FL_WARN_UNUSED;
/* warpctc_grad: dLogits [T, C] = Grad (the forward's) with each row of sequence s times
 * dLoss[s] (and divided by the sequence's length with norm_by_times). */
FlStatus fl_kernel_warpctc_grad(FlErr *e, const FlTensor *grad, const int64_t *loff, int64_t nseq,
                                const FlTensor *dloss, bool norm_by_times, FlTensor *dlogits) FL_WARN_UNUSED;

/* ctc_align: each sequence of ids (input [T, 1], int32 or int64) with repeated neighbours
 * merged (merge_repeated) and the blanks removed: Output [T', 1] of input's dtype (T' may be
 * 0) and OutputLod (int64 [nseq + 1]) cutting it into the sequences. */
FlStatus fl_kernel_ctc_align(FlErr *e, const FlTensor *input, const int64_t *off, int64_t nseq, int64_t blank,
                             bool merge_repeated, FlTensor *output, FlTensor *output_lod) FL_WARN_UNUSED;

/* edit_distance: Out [nseq, 1] (float32) = the Levenshtein distance (insertions, deletions and
 * substitutions of one id each cost 1) from each sequence of hyps to the matching sequence of
 * refs (ids, int32 or int64), divided by the reference's length when normalized (an empty
 * reference is then an error); SequenceNum (int64 [1]) = nseq. Errors: different numbers of
 * sequences. */
FlStatus fl_kernel_edit_distance(FlErr *e, const FlTensor *hyps, const int64_t *hoff, int64_t nh,
                                 const FlTensor *refs, const int64_t *roff, int64_t nr, bool normalized,
                                 FlTensor *out, FlTensor *sequence_num) FL_WARN_UNUSED;

/* sequence_erase: x (ids [T, 1], int32 or int64) without the rows whose id is one of tokens
 * (n of them): Out [T', 1] of x's dtype and OutLod (int64 [nseq + 1]) cutting it. */
FlStatus fl_kernel_sequence_erase(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                  const int64_t *tokens, size_t n, FlTensor *out, FlTensor *out_lod) FL_WARN_UNUSED;

#endif
