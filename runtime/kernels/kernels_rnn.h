/* kernels_rnn.h: the recurrent kernels over LoD sequences (rnn.c): Fluid's lstm and gru ops,
 * which run one recurrence per sequence of a packed batch. The conventions of kernels.h hold
 * (outputs replaced whole, NULL gradient outputs not computed, errors name the op and the
 * shapes, "F" = float32 or float64, every float input of one dtype).
 *
 * Sequences: X holds the rows of nseq sequences back to back, sequence s being rows
 * [off[s], off[s+1]) (the offsets are checked by the caller: off[0] == 0, non-decreasing,
 * off[nseq] == X's rows); an empty sequence has no rows and is skipped. Each sequence starts
 * from a zero state (gru: from H0's row s when H0 is given) and runs over its rows in order, or
 * from its last row to its first when is_reverse. The kernels run the recurrence of every
 * sequence at once: at step t they take the sequences longer than t (sorted by length, so they
 * are a prefix of the sorted order) and do one GEMM of the recurrent weight over all of them.
 *
 * Thread-safety as kernels.h: pure functions of their arguments.
 */
#ifndef FL_KERNELS_RNN_H
#define FL_KERNELS_RNN_H

#include "runtime/kernels/kernels.h"

/* The activations the recurrent ops take by name (Fluid's "sigmoid", "tanh", "relu",
 * "identity"). */
typedef enum FlRnnAct { FL_RNN_SIGMOID, FL_RNN_TANH, FL_RNN_RELU, FL_RNN_IDENTITY, FL_RNN_ACT_COUNT } FlRnnAct;
/* The activation named `name`; false (and *act untouched) for an unknown name. */
bool fl_rnn_act_find(const char *name, FlRnnAct *act);

/* ======================================================================================
 * lstm: X [T, 4D] (the already projected input), W [D, 4D], B [1, 4D] or, with peepholes,
 * [1, 7D]. The 4D columns of X, W and B are the gates in Fluid's order: candidate c~, input i,
 * forget f, output o; B's last 3D columns are the peephole weights w_ic, w_fc, w_oc. Per row,
 * with h, c the previous step's hidden and cell (zero at a sequence's first step) and
 * g = X[row] + B[:4D] + h W:
 *     c~ = cand(g_c)                  i = gate(g_i + w_ic * c)     f = gate(g_f + w_fc * c)
 *     c' = c~ * i + c * f             o = gate(g_o + w_oc * c')    h' = o * cell(c')
 * (the w_* terms only with peepholes). Outputs: Hidden [T, D] = h', Cell [T, D] = c',
 * Gate [T, 4D] = the activated gates (c~, i, f, o), which the gradient reads.
 * H0, C0 [nseq, D] (either may be NULL: zeros) are each sequence's initial h and c.
 * lstm_grad: dX [T, 4D], dH0, dC0, dW, dB from the forward's H0, C0, W, B, Hidden, Cell, Gate and
 * dHidden, dCell (either may be NULL: zero); dH0 (dC0) only when H0 (C0) was given.
 * ====================================================================================== */
typedef struct FlLstmAttrs {
    bool peepholes, reverse;
    FlRnnAct gate, cell, cand;
    FlRnnAct proj;                /* lstmp only */
    double cell_clip, proj_clip; /* lstmp only: > 0 clips c' to [-cell_clip, cell_clip], r' likewise */
} FlLstmAttrs;
FlStatus fl_kernel_lstm(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq, const FlTensor *h0,
                        const FlTensor *c0, const FlTensor *w, const FlTensor *b, const FlLstmAttrs *a,
                        FlTensor *hidden, FlTensor *cell, FlTensor *gate) FL_WARN_UNUSED;
FlStatus fl_kernel_lstm_grad(FlErr *e, const int64_t *off, int64_t nseq, const FlTensor *h0, const FlTensor *c0,
                             const FlTensor *w, const FlTensor *b, const FlTensor *hidden, const FlTensor *cell,
                             const FlTensor *gate, const FlTensor *dhidden, const FlTensor *dcell,
                             const FlLstmAttrs *a, FlTensor *dx, FlTensor *dh0, FlTensor *dc0, FlTensor *dw,
                             FlTensor *db) FL_WARN_UNUSED;

/* lstmp: lstm whose recurrent input is the projection r = proj(h ProjW) instead of h:
 * ProjW [D, P], W [P, 4D]; g = X[row] + B[:4D] + r W. H0 [nseq, P] and C0 [nseq, D] (either
 * may be NULL: zeros) are each sequence's initial r and c. With a->cell_clip > 0 the cell c' is
 * clipped to [-cell_clip, cell_clip] before o and h' read it; with a->proj_clip > 0 r' is
 * clipped to [-proj_clip, proj_clip] after the activation (Fluid's lstmp). Outputs:
 * Projection [T, P] = r', Cell [T, D], Hidden [T, D] = h' (before the projection) and Gate
 * [T, 4D], which the gradient reads. lstmp_grad: dX, dH0, dC0, dW, dProjW, dB from the forward's
 * H0, C0, W, ProjW, B and outputs and dProjection, dCell (either may be NULL: zero); a clipped
 * value passes no gradient (nor one at the bound, as Fluid's kernel). */
FlStatus fl_kernel_lstmp(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq, const FlTensor *h0,
                         const FlTensor *c0, const FlTensor *w, const FlTensor *proj_w, const FlTensor *b,
                         const FlLstmAttrs *a, FlTensor *proj, FlTensor *cell, FlTensor *hidden,
                         FlTensor *gate) FL_WARN_UNUSED;
FlStatus fl_kernel_lstmp_grad(FlErr *e, const int64_t *off, int64_t nseq, const FlTensor *h0, const FlTensor *c0,
                              const FlTensor *w, const FlTensor *proj_w, const FlTensor *b, const FlTensor *proj,
                              const FlTensor *cell, const FlTensor *hidden, const FlTensor *gate,
                              const FlTensor *dproj, const FlTensor *dcell, const FlLstmAttrs *a, FlTensor *dx,
                              FlTensor *dh0, FlTensor *dc0, FlTensor *dw, FlTensor *dproj_w,
                              FlTensor *db) FL_WARN_UNUSED;

/* ======================================================================================
 * gru: X [T, 3D], W [D, 3D], B [1, 3D] (may be NULL), H0 [nseq, D] (may be NULL: zeros).
 * The 3D columns are the update gate u, the reset gate r and the candidate c, in that order.
 * W's memory is Fluid's: its first 2D*D elements are the gates' weight Wg [D, 2D] (row-major),
 * the last D*D the candidate's weight Wc [D, D]. Per row, with h the previous hidden state and
 * g = X[row] + B:
 *     u = gate(g_u + (h Wg)_u)     r = gate(g_r + (h Wg)_r)     c = cand(g_c + (r * h) Wc)
 *     h' = u * h + (1 - u) * c  (origin_mode)      h' = (1 - u) * h + u * c  (otherwise)
 * Outputs: Hidden [T, D] = h', Gate [T, 3D] = (u, r, c) activated, ResetHiddenPrev [T, D] =
 * r * h, which the gradient reads.
 * gru_grad: dX, dH0, dW, dB (any NULL: not computed) from the forward's H0, W, Hidden, Gate,
 * ResetHiddenPrev and dHidden.
 * ====================================================================================== */
typedef struct FlGruAttrs {
    bool reverse, origin_mode;
    FlRnnAct gate, cand;
} FlGruAttrs;
FlStatus fl_kernel_gru(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq, const FlTensor *h0,
                       const FlTensor *w, const FlTensor *b, const FlGruAttrs *a, FlTensor *hidden, FlTensor *gate,
                       FlTensor *reset_hidden_prev) FL_WARN_UNUSED;
FlStatus fl_kernel_gru_grad(FlErr *e, const int64_t *off, int64_t nseq, const FlTensor *h0, const FlTensor *w,
                            const FlTensor *hidden, const FlTensor *gate, const FlTensor *reset_hidden_prev,
                            const FlTensor *dhidden, const FlGruAttrs *a, FlTensor *dx, FlTensor *dh0, FlTensor *dw,
                            FlTensor *db) FL_WARN_UNUSED;

/* ======================================================================================
 * Dense one-step cells (no sequences; row n is batch entry n's step).
 * lstm_unit: X [N, 4D] (gates input, forget, output, candidate, Fluid's lstm_unit order),
 * C_prev [N, D]: C = sigmoid(x_f + forget_bias) C_prev + sigmoid(x_i) tanh(x_c),
 * H = sigmoid(x_o) tanh(C). lstm_unit_grad: dX, dC_prev from X, C_prev, C and dC, dH (either
 * may be NULL: zero).
 * gru_unit: one step of gru from HiddenPrev [N, D] (as gru with N sequences of one row and
 * H0 = HiddenPrev); gru_unit_grad: dInput, dHiddenPrev, dWeight, dBias.
 * ====================================================================================== */
FlStatus fl_kernel_lstm_unit(FlErr *e, const FlTensor *x, const FlTensor *c_prev, double forget_bias, FlTensor *c,
                             FlTensor *h) FL_WARN_UNUSED;
FlStatus fl_kernel_lstm_unit_grad(FlErr *e, const FlTensor *x, const FlTensor *c_prev, const FlTensor *c,
                                  const FlTensor *dc, const FlTensor *dh, double forget_bias, FlTensor *dx,
                                  FlTensor *dc_prev) FL_WARN_UNUSED;
FlStatus fl_kernel_gru_unit(FlErr *e, const FlTensor *x, const FlTensor *h_prev, const FlTensor *w, const FlTensor *b,
                            const FlGruAttrs *a, FlTensor *hidden, FlTensor *gate,
                            FlTensor *reset_hidden_prev) FL_WARN_UNUSED;
FlStatus fl_kernel_gru_unit_grad(FlErr *e, const FlTensor *h_prev, const FlTensor *w, const FlTensor *hidden,
                                 const FlTensor *gate, const FlTensor *reset_hidden_prev, const FlTensor *dhidden,
                                 const FlGruAttrs *a, FlTensor *dx, FlTensor *dh_prev, FlTensor *dw,
                                 FlTensor *db) FL_WARN_UNUSED;

#endif
