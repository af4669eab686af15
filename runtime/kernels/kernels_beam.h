/* kernels_beam.h: Fluid 1.x's beam search over two-level LoD batches (docs/sequences.md).
 *
 * A beam-search batch holds, for each source sentence, its prefixes (the hypotheses so far), and
 * for each prefix its candidate rows: two offset vectors, src_off [nsrc + 1] cutting the prefixes
 * of each source and pfx_off [npfx + 1] cutting the rows of each prefix (src_off[nsrc] == npfx,
 * pfx_off[npfx] == the rows). The adapters check the offsets; the kernels check that they agree
 * with the tensors. Outputs are replaced whole (kernels.h).
 */
#ifndef FL_KERNELS_BEAM_H
#define FL_KERNELS_BEAM_H

#include "runtime/kernels/kernels.h"

/* One step of beam search. Each row r of the batch is a prefix that ended with pre_ids[r] at the
 * score pre_scores[r] (int64, float32; R values); scores [R, K] (float32) scores its K candidate
 * continuations, whose ids are ids [R, K] (int64; NULL: the column index), accumulated already
 * or, when !accumulated, as probabilities (the candidate scores pre_scores[r] + log(p)).
 * For each source, the beam_size best candidates over its rows are kept, ordered by score, then
 * by row, both descending (Fluid's order); a row whose pre_id is end_id has one candidate, end_id
 * at pre_scores[r]. A source all of whose kept candidates are end_id after an end_id is pruned
 * (keeps none). The kept candidates are written grouped by their row: sel_ids (int64),
 * sel_scores (float32) [n, 1], parent (int32 [n], may be NULL) the row of each, out_src
 * [nsrc + 1] = pfx_off[src_off[i]] (the rows of each source, which become the prefixes of the
 * next step) and out_lod [R + 1] cutting the kept rows of each row. */
FlStatus fl_kernel_beam_search(FlErr *e, const FlTensor *pre_ids, const FlTensor *pre_scores, const FlTensor *ids,
                               const FlTensor *scores, const int64_t *src_off, int64_t nsrc, const int64_t *pfx_off,
                               int64_t npfx, int64_t beam_size, int64_t end_id, bool accumulated, FlTensor *sel_ids,
                               FlTensor *sel_scores, FlTensor *parent, FlTensor *out_src, FlTensor *out_lod);

/* The steps of a beam search, for beam_search_decode: step t's ids (int64) and scores (float32),
 * both of `rows` values, cut by src_off [nsrc + 1] and pfx_off [src_off[nsrc] + 1] as above. */
typedef struct FlBeamStep {
    const FlTensor *ids, *scores;
    const int64_t *src_off, *pfx_off;
    int64_t nsrc;
} FlBeamStep;

/* The sentences of a beam search: each source's candidates at the last step it has any (a
 * source pruned at step t ends at step t - 1) followed back, step by step, through the prefix
 * (row of the step before) each came from; repeated end_ids after a sentence ended are left out.
 * Each source's sentences (at most beam_size, else an error) are sorted by their last word's
 * score, best first (ties keep their order). out_ids (int64) and out_scores (float32) [n] hold the
 * words of every sentence in order and the score at each word, out_src [nsrc + 1] cuts the
 * sentences of each source and out_lod [nsent + 1] the words of each sentence. Every step must
 * have the same nsrc. */
FlStatus fl_kernel_beam_search_decode(FlErr *e, const FlBeamStep *steps, int64_t nsteps, int64_t beam_size,
                                      int64_t end_id, FlTensor *out_ids, FlTensor *out_scores, FlTensor *out_src,
                                      FlTensor *out_lod);

#endif
