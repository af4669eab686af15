/* kernels_seqedit.h: the kernels of the ops that write or order sequences by index (seqedit.c):
 * sequence_scatter and its gradient, lod_rank_table, reorder_lod_tensor_by_rank and its gradient. The conventions of kernels.h hold (outputs
 * replaced whole, NULL gradient outputs not computed, errors name the op and the shapes, "F" =
 * float32 or float64). */
#ifndef FL_KERNELS_SEQEDIT_H
#define FL_KERNELS_SEQEDIT_H

#include "runtime/kernels/kernels.h"

/* sequence_scatter: out = x [N, ...] (F) with updates[j] (F [M, 1] or [M]) added at element ids[j]
 * (int64, ids' shape) of row i flattened, for each j of sequence i of the nseq (<= N) that off
 * cuts the M ids into. An index outside [0, the row's elements) is an error. */
FlStatus fl_kernel_sequence_scatter(FlErr *e, const FlTensor *x, const FlTensor *ids, const FlTensor *updates,
                                    const int64_t *off, int64_t nseq, FlTensor *out) FL_WARN_UNUSED;
/* Its gradient: dx = dout; dupdates[j] = dout at the element updates[j] went to (ids' shape). */
FlStatus fl_kernel_sequence_scatter_grad(FlErr *e, const FlTensor *ids, const int64_t *off, int64_t nseq,
                                         const FlTensor *dout, FlTensor *dx, FlTensor *dupdates) FL_WARN_UNUSED;

/* lod_rank_table: out [n, 2] int64 = (index, length) of the n sequences off cuts, longest first,
 * equal lengths in their order. */
FlStatus fl_kernel_lod_rank_table(FlErr *e, const int64_t *off, int64_t n, FlTensor *out) FL_WARN_UNUSED;
/* reorder_lod_tensor_by_rank: out = x's n sequences (rows off cuts; off NULL: its rows) in the
 * order of table's first column (a permutation of [0, n)), out_off [n + 1] their offsets there.
 * The gradient (dx, like dout) puts each sequence's rows back. */
FlStatus fl_kernel_reorder_by_rank(FlErr *e, const FlTensor *x, const int64_t *off, int64_t n, const FlTensor *table,
                                   FlTensor *out, FlTensor *out_off) FL_WARN_UNUSED;
FlStatus fl_kernel_reorder_by_rank_grad(FlErr *e, const FlTensor *dout, const int64_t *off, int64_t n,
                                        const FlTensor *table, FlTensor *dx) FL_WARN_UNUSED;

#endif
