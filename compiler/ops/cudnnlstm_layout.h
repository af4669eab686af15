/* cudnnlstm_layout.h: the sizes of cudnn_lstm's flat weight W and of its Reserve output, the one
 * home of both layouts: the shape rule (compiler/infer_cudnnlstm.c) and the kernels
 * (runtime/kernels/cudnnlstm.c) read them from here, beside the op's line (cudnnlstm.def).
 * Header-only, no dependencies.
 *
 * W (cuDNN's layout, as Fluid's lstm layer sizes it): for each layer l and direction d in turn
 * (layer-major, forward first) Wx [4H, in_l] then Wh [4H, H], row-major, gate rows in cuDNN's
 * order i, f, c, o; then, in the same order of layers and directions, bx [4H] and bh [4H].
 * in_0 = the input size, in_l = H * directions above.
 *
 * Reserve, per layer l: for l > 0 the dropout mask and the dropped input [T, B, in_l] each; then
 * per direction the activated gates [T, B, 4H], the cell [T, B, H] and the hidden state [T, B, H]
 * of each step (indexed by time). */
#ifndef FL_CUDNNLSTM_LAYOUT_H
#define FL_CUDNNLSTM_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

/* the sizes these functions take: num_layers, input and hidden sizes in [1, 2^20], so that no
 * size below overflows (the shape rule and the kernels refuse others) */
#define FL_CUDNN_LSTM_MAX_DIM (1 << 20)
static inline bool fl_cudnn_lstm_dims_ok(int64_t L, int64_t I, int64_t H) {
    return L >= 1 && I >= 1 && H >= 1 && L <= FL_CUDNN_LSTM_MAX_DIM && I <= FL_CUDNN_LSTM_MAX_DIM &&
           H <= FL_CUDNN_LSTM_MAX_DIM;
}

static inline int64_t fl_cudnn_lstm_in(int64_t l, int64_t D, int64_t I, int64_t H) { return l == 0 ? I : H * D; }

/* the number of weights and biases of num_layers L, directions D, input size I, hidden size H */
static inline int64_t fl_cudnn_lstm_weight_size(int64_t L, int64_t D, int64_t I, int64_t H) {
    int64_t n = 0;
    for (int64_t l = 0; l < L; l++) n += D * (4 * H * (fl_cudnn_lstm_in(l, D, I, H) + H) + 8 * H);
    return n;
}

/* the offset in W of Wx of layer l, direction d (Wh follows it) */
static inline int64_t fl_cudnn_lstm_w_off(int64_t l, int64_t d, int64_t D, int64_t I, int64_t H) {
    int64_t n = 0;
    for (int64_t k = 0; k < l; k++) n += D * 4 * H * (fl_cudnn_lstm_in(k, D, I, H) + H);
    return n + d * 4 * H * (fl_cudnn_lstm_in(l, D, I, H) + H);
}

/* the offset in W of bx of layer l, direction d (bh follows it) */
static inline int64_t fl_cudnn_lstm_b_off(int64_t l, int64_t d, int64_t L, int64_t D, int64_t I, int64_t H) {
    return fl_cudnn_lstm_w_off(L, 0, D, I, H) + (l * D + d) * 8 * H;
}

/* the offset in Reserve of layer l's part (l == L: the whole size) */
static inline int64_t fl_cudnn_lstm_r_off(int64_t l, int64_t D, int64_t I, int64_t H, int64_t T, int64_t B) {
    int64_t n = 0;
    for (int64_t k = 0; k < l; k++) n += (k > 0 ? 2 * T * B * fl_cudnn_lstm_in(k, D, I, H) : 0) + D * T * B * 6 * H;
    return n;
}

static inline int64_t fl_cudnn_lstm_reserve_size(int64_t L, int64_t D, int64_t I, int64_t H, int64_t T, int64_t B) {
    return fl_cudnn_lstm_r_off(L, D, I, H, T, B);
}

#endif
