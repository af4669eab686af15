/* kernels_seq.h: the kernels of the sequence ops (Fluid's sequence_pool, sequence_softmax,
 * sequence_conv, sequence_expand, sequence_expand_as, sequence_mask; docs/sequences.md).
 *
 * A sequence batch is a tensor X [T, ...] whose rows are cut by offsets `off` (int64, nseq + 1
 * values, off[0] == 0, non-decreasing, off[nseq] == T): sequence i is rows [off[i], off[i+1]).
 * The caller (the adapter, through fl_exec_check_lod) has checked the offsets; the kernels check
 * that they cut X's rows. A row is everything after dim 0 (D = the product of dims 1..). The
 * conventions of kernels.h hold (outputs replaced whole, NULL gradient outputs not computed,
 * errors name the op and the shapes, "F" = float32 or float64).
 */
#ifndef FL_KERNELS_SEQ_H
#define FL_KERNELS_SEQ_H

#include "runtime/kernels/kernels.h"

/* sequence_pool: Out [nseq, X.dims[1:]] (F) = each sequence's rows pooled:
 *   AVERAGE  the mean of its rows        SUM    their sum
 *   SQRT     their sum / sqrt(length)    MAX    the elementwise max
 *   LAST     its last row                FIRST  its first row
 * An empty sequence gives a row of pad_value. MAX also writes max_index (int32, Out's shape):
 * the row of X each maximum came from (-1 for an empty sequence); max_index NULL: not kept.
 * sequence_pool_grad: dX (X's shape) = dOut spread back: AVERAGE dOut / length to every row, SUM
 * dOut, SQRT dOut / sqrt(length), MAX dOut to the row max_index names (max_index NULL: the
 * maximum's row found again in X), FIRST / LAST dOut to that row; 0 elsewhere. */
typedef enum FlSeqPool {
    FL_SEQPOOL_AVERAGE,
    FL_SEQPOOL_SUM,
    FL_SEQPOOL_SQRT,
    FL_SEQPOOL_MAX,
    FL_SEQPOOL_LAST,
    FL_SEQPOOL_FIRST,
    FL_SEQPOOL_COUNT
} FlSeqPool;
/* The pool type named by Fluid's pooltype string ("AVERAGE", ...), or FL_SEQPOOL_COUNT. */
FlSeqPool fl_seqpool_parse(const char *name);
FlStatus fl_kernel_sequence_pool(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq, FlSeqPool type,
                                 double pad_value, FlTensor *out, FlTensor *max_index) FL_WARN_UNUSED;
FlStatus fl_kernel_sequence_pool_grad(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                      FlSeqPool type, const FlTensor *max_index, const FlTensor *dout,
                                      FlTensor *dx) FL_WARN_UNUSED;

/* sequence_softmax: X [T] or [T, 1] (F); Out (X's shape) = the softmax of each sequence's values.
 * sequence_softmax_grad: dX = Out * (dOut - sum over the sequence of dOut * Out). */
FlStatus fl_kernel_sequence_softmax(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                    FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_sequence_softmax_grad(FlErr *e, const FlTensor *out, const int64_t *off, int64_t nseq,
                                         const FlTensor *dout, FlTensor *dx) FL_WARN_UNUSED;

/* sequence_conv: X [T, D] (F), Filter [length * D, N]. Row t of the context projection C
 * [T, length * D] holds rows t + start .. t + start + length - 1 of X side by side, a row outside
 * t's sequence being zeros (padding at the sequence edges); Out [T, N] = C @ Filter (GEMM).
 * sequence_conv_grad: dX = the rows of dOut @ Filter^T added back where C took them; dFilter =
 * C^T @ dOut. Errors: length < 1, a Filter that is not [length * D, N]. */
FlStatus fl_kernel_sequence_conv(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                 const FlTensor *filter, int64_t start, int64_t length, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_sequence_conv_grad(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                      const FlTensor *filter, int64_t start, int64_t length,
                                      const FlTensor *dout, FlTensor *dx, FlTensor *dfilter) FL_WARN_UNUSED;

/* sequence_expand: X [R, ...] (any dtype), Y's offsets yoff (ny sequences, lengths n_i).
 * xoff NULL: X has ny rows and Out = row i of X repeated n_i times, in order. xoff given (X cut
 * into nx == ny sequences): Out = sequence i of X repeated n_i times, and out_off (int64, 1 + the
 * number of repeats) its offsets, each copy a sequence (out_off NULL: not made).
 * sequence_expand_grad: dX = for each row of X, the sum of dOut over its copies (F).
 * Errors: X's row or sequence count differs from ny. */
FlStatus fl_kernel_sequence_expand(FlErr *e, const FlTensor *x, const int64_t *xoff, int64_t nx,
                                   const int64_t *yoff, int64_t ny, FlTensor *out, FlTensor *out_off) FL_WARN_UNUSED;
FlStatus fl_kernel_sequence_expand_grad(FlErr *e, const FlTensor *x, const int64_t *xoff, int64_t nx,
                                        const int64_t *yoff, int64_t ny, const FlTensor *dout,
                                        FlTensor *dx) FL_WARN_UNUSED;

/* sequence_mask: X (int32 or int64, any shape) holds lengths; Out [X.dims..., maxlen] of dtype
 * (any numeric or bool) = 1 where the last index j < X's value, else 0. maxlen < 0: the largest
 * value of X (0 for an empty X or when every length is <= 0). Errors: a non-integer X. */
FlStatus fl_kernel_sequence_mask(FlErr *e, const FlTensor *x, int64_t maxlen, FlDType dtype,
                                 FlTensor *out) FL_WARN_UNUSED;

#endif
