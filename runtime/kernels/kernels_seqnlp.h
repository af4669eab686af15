/* kernels_seqnlp.h: the kernels of the further sequence ops of the NLP layers (seqnlp.c):
 * sequence_reverse, row_conv, add_position_encoding, sampling_id and im2sequence. The conventions of kernels.h hold (outputs replaced whole, errors name the
 * op and the shapes). Sequences: a tensor's rows are cut by offsets off[0..nseq] (off[0] == 0,
 * non-decreasing, off[nseq] == rows), checked by the caller (fl_exec_check_lod). */
#ifndef FL_KERNELS_SEQNLP_H
#define FL_KERNELS_SEQNLP_H

#include "runtime/kernels/kernels.h"

/* sequence_reverse: Y = x [T, ...] (any dtype) with each sequence's rows in reverse order; its
 * own gradient too (dX = dY reversed the same way; op names the op in errors). */
FlStatus fl_kernel_sequence_reverse(FlErr *e, const char *op, const FlTensor *x, const int64_t *off, int64_t nseq,
                                    FlTensor *y) FL_WARN_UNUSED;

/* row_conv: Out [T, D] (F) = for each row t of sequence s, sum over w < k with t + w < off[s + 1]
 * of x[t + w] * filter[w] (elementwise; x [T, D] and filter [k, D] float of one dtype). */
FlStatus fl_kernel_row_conv(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq, const FlTensor *filter,
                            FlTensor *out) FL_WARN_UNUSED;
/* row_conv_grad: dX and dFilter (either may be NULL) of row_conv given dOut [T, D]. */
FlStatus fl_kernel_row_conv_grad(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                 const FlTensor *filter, const FlTensor *dout, FlTensor *dx,
                                 FlTensor *dfilter) FL_WARN_UNUSED;

/* add_position_encoding: Out = alpha * x + beta * PE, x [B, M, P] (off NULL: each of the B rows
 * a sequence of M steps) or [T, P] cut by off into sequences; step j (counted from each
 * sequence's start) gets PE[k] = sin(v), PE[P/2 + k] = cos(v) for k < P/2, v = j / 10000^(k /
 * (P/2 - 1)) (j / 10000 when P = 2). P must be even. The gradient is alpha * dOut
 * (fl_kernel_scale's work). */
FlStatus fl_kernel_add_position_encoding(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq, double alpha,
                                         double beta, FlTensor *out) FL_WARN_UNUSED;

/* sampling_id: Out [N] (int64) = for each row of x [N, C] (F), the first j with r - x[0] - ... -
 * x[j] < 0 (C - 1 when none), r = min + (max - min) u, u uniform in [0, 1) from an FlRng seeded
 * with (seed, step): a deterministic function of them, a new draw for each step. Errors: min >
 * max. */
FlStatus fl_kernel_sampling_id(FlErr *e, const FlTensor *x, double min, double max, uint64_t seed, uint64_t step,
                               FlTensor *out) FL_WARN_UNUSED;

/* im2sequence's attributes: the kernel (kh, kw), strides (sh, sw), paddings (up, left, down,
 * right) and out_stride (the divisor of the real sizes of Y). */
typedef struct FlIm2SeqAttrs {
    int64_t k[2], s[2], p[4], os[2];
} FlIm2SeqAttrs;
/* im2sequence: Out [T, C * kh * kw] (x's dtype) = the patches of each image of x [N, C, H, W]
 * (float), row-major over the patch positions, each row channel by channel, then the kernel's rows
 * and columns (zeros where the patch covers the padding); out_lod (int64 [N + 1]) the offsets of
 * each image's patches. real (float [N, 2], may be NULL): image i's real height and width; its
 * patches are then the first ceil(h / os) and ceil(w / os) sized grid's only. */
FlStatus fl_kernel_im2sequence(FlErr *e, const FlTensor *x, const FlTensor *real, const FlIm2SeqAttrs *a,
                               FlTensor *out, FlTensor *out_lod) FL_WARN_UNUSED;
/* im2sequence_grad: dX [N, C, H, W] = the sum over the patches covering each pixel of their dOut
 * entries (real as in the forward). */
FlStatus fl_kernel_im2sequence_grad(FlErr *e, const FlTensor *x, const FlTensor *real, const FlIm2SeqAttrs *a,
                                    const FlTensor *dout, FlTensor *dx) FL_WARN_UNUSED;

#endif
