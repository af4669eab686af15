/* kernels_cudnnlstm.h: the kernels of cudnn_lstm (cudnnlstm.c), Fluid's stacked LSTM in cuDNN's
 * weight layout (cudnnlstm_layout.h), forward and gradient. The conventions of kernels.h hold
 * (outputs replaced whole, NULL gradient outputs not computed, errors name the op and the shapes,
 * "F" = float32 or float64). Internals are double. */
#ifndef FL_KERNELS_CUDNNLSTM_H
#define FL_KERNELS_CUDNNLSTM_H

#include "compiler/ops/cudnnlstm_layout.h"
#include "runtime/kernels/kernels.h"

typedef struct FlCudnnLstmAttrs {
    int64_t num_layers, hidden_size, input_size, max_len;
    bool bidirec;
    bool is_test;        /* no dropout between the layers */
    double dropout_prob; /* in [0, 1) */
} FlCudnnLstmAttrs;

/* cudnn_lstm: x F [T, B, input_size] (T <= max_len), h0 and c0 F [L * dirs, B, H], w F [the
 * layout's size]: out [T, B, H * dirs], last_h and last_c [L * dirs, B, H], reserve [the layout's
 * size] (all F). The dropout masks between the layers come from (seed, step); a mask entry holds
 * the factor its input was multiplied by (0 or 1 / (1 - p); 1 when is_test). */
FlStatus fl_kernel_cudnn_lstm(FlErr *e, const FlTensor *x, const FlTensor *h0, const FlTensor *c0, const FlTensor *w,
                              const FlCudnnLstmAttrs *a, uint64_t seed, uint64_t step, FlTensor *out,
                              FlTensor *last_h, FlTensor *last_c, FlTensor *reserve) FL_WARN_UNUSED;
/* cudnn_lstm_grad: dX, dH0, dC0, dW (each may be NULL) from the forward's inputs, its reserve and
 * the gradients of out, last_h and last_c (each may be NULL or empty: zeros). */
FlStatus fl_kernel_cudnn_lstm_grad(FlErr *e, const FlTensor *x, const FlTensor *h0, const FlTensor *c0,
                                   const FlTensor *w, const FlTensor *reserve, const FlCudnnLstmAttrs *a,
                                   const FlTensor *dout, const FlTensor *dlast_h, const FlTensor *dlast_c,
                                   FlTensor *dx, FlTensor *dh0, FlTensor *dc0, FlTensor *dw) FL_WARN_UNUSED;

#endif
