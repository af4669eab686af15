/* kernels_seqshape.h: the kernels of the sequence reshaping ops (seqshape.c): sequence_concat,
 * sequence_reshape, sequence_slice, sequence_pad / sequence_unpad and sequence_enumerate
 * (docs/sequences.md).
 *
 * A sequence input comes with its offsets `off` (int64, nseq + 1 values: sequence i is rows
 * off[i] to off[i+1] of the tensor), checked by the caller (fl_exec_check_lod: off[0] == 0,
 * non-decreasing, off[nseq] == the tensor's rows). A "row" is everything below dim 0 (a step of
 * the sequence); rows are copied whole, so the forward kernels take any dtype. An op that cuts
 * its output anew gives the offsets in out_lod (int64 [nseq + 1]; NULL: not wanted).
 *
 * The conventions of kernels.h hold: outputs are replaced whole, a NULL gradient output is not
 * computed, errors name the op and the shapes. Gradients are zero where the forward op dropped
 * or padded, and dOut's rows copied back elsewhere (every op here moves each row at most once).
 */
#ifndef FL_KERNELS_SEQSHAPE_H
#define FL_KERNELS_SEQSHAPE_H

#include "runtime/kernels/kernels.h"

/* sequence_concat: xs[0..n) (one dtype, rows of one shape), each cut by offs[k] into nseq
 * sequences; Out's sequence i = sequence i of xs[0], then of xs[1], ...; out_lod[i] = the sum
 * over k of offs[k][i]. sequence_concat_grad: dxs[k] (NULL: skipped) = its rows of dout. */
FlStatus fl_kernel_sequence_concat(FlErr *e, const FlTensor *const *xs, const int64_t *const *offs, int n,
                                   int64_t nseq, FlTensor *out, FlTensor *out_lod) FL_WARN_UNUSED;
FlStatus fl_kernel_sequence_concat_grad(FlErr *e, const FlTensor *const *xs, const int64_t *const *offs, int n,
                                        int64_t nseq, const FlTensor *dout, FlTensor *const *dxs) FL_WARN_UNUSED;

/* sequence_reshape: X [T, D] -> Out [T * D / new_dim, new_dim], the same elements in order;
 * each sequence's length * D must divide by new_dim; out_lod = off * D / new_dim.
 * sequence_reshape_grad: dX = dOut's elements with X's shape. */
FlStatus fl_kernel_sequence_reshape(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq, int64_t new_dim,
                                    FlTensor *out, FlTensor *out_lod) FL_WARN_UNUSED;
FlStatus fl_kernel_sequence_reshape_grad(FlErr *e, const FlTensor *x, const FlTensor *dout,
                                         FlTensor *dx) FL_WARN_UNUSED;

/* sequence_slice: offset and length (int32 or int64, nseq values each, any shape) choose rows
 * off[i] + offset[i] to off[i] + offset[i] + length[i] of each sequence i (0 <= offset,
 * 0 <= length, offset + length <= the sequence's length); Out = those rows in order, out_lod
 * their offsets. sequence_slice_grad: dX = zeros with dOut's rows at the rows they came from. */
FlStatus fl_kernel_sequence_slice(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                  const FlTensor *offset, const FlTensor *length, FlTensor *out,
                                  FlTensor *out_lod) FL_WARN_UNUSED;
FlStatus fl_kernel_sequence_slice_grad(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                       const FlTensor *offset, const FlTensor *length, const FlTensor *dout,
                                       FlTensor *dx) FL_WARN_UNUSED;

/* sequence_pad: X [T, ...] (rank >= 2) -> Out [nseq, L] + X.dims[1:], sequence i in Out[i]'s
 * first rows and pad_value (X's dtype; one element, or one row's worth) after them;
 * L = padded_length, or the longest sequence's length when padded_length is -1 (a longer
 * sequence is an error); length (int64 [nseq]) = the lengths.
 * sequence_pad_grad: dX = the sequences' rows of dOut [nseq, L', ...] (L' >= the longest). */
FlStatus fl_kernel_sequence_pad(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                const FlTensor *pad_value, int64_t padded_length, FlTensor *out,
                                FlTensor *length) FL_WARN_UNUSED;
FlStatus fl_kernel_sequence_pad_grad(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                     const FlTensor *dout, FlTensor *dx) FL_WARN_UNUSED;

/* sequence_unpad: X [B, L, ...] (rank >= 2), length (int32 or int64, B values, each 0 to L) ->
 * Out = the first length[i] rows of each X[i], one after the other: [sum(length)] + X.dims[2:]
 * ([sum, 1] when X has rank 2); out_lod their offsets. sequence_unpad_grad: dX = zeros [B, L,
 * ...] with dOut's rows in each X[i]'s first rows. */
FlStatus fl_kernel_sequence_unpad(FlErr *e, const FlTensor *x, const FlTensor *length, FlTensor *out,
                                  FlTensor *out_lod) FL_WARN_UNUSED;
FlStatus fl_kernel_sequence_unpad_grad(FlErr *e, const FlTensor *x, const FlTensor *length, const FlTensor *dout,
                                       FlTensor *dx) FL_WARN_UNUSED;

/* sequence_enumerate: X (int32 or int64, [T, 1] or [T]) -> Out [T, win_size] of X's dtype:
 * Out[t][j] = X[t + j] when row t + j is in t's sequence, else pad_value. */
FlStatus fl_kernel_sequence_enumerate(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                      int64_t win_size, int64_t pad_value, FlTensor *out) FL_WARN_UNUSED;

#endif
