/* infer_cudnnlstm.c: the shape rule of cudnn_lstm, the stacked LSTM in cuDNN's weight layout
 * (compiler/ops/cudnnlstm.def; adapters runtime/core/ops_cudnnlstm.c; kernels
 * runtime/kernels/cudnnlstm.c). */
#include "compiler/infer_impl.h"

#include "compiler/ops/cudnnlstm_layout.h"

/* A float [rows, B, H] initial state of Input's dtype. */
static FlStatus state(Ctx *c, const char *slot, const FlVarDesc *x, int64_t rows, int64_t H, FlVarDesc **v) {
    if (in1(c, slot, v) || need_float_in(c, *v, slot)) return FL_ERROR;
    Shape s = shape_of(*v), xs = shape_of(x);
    if ((*v)->dtype != x->dtype)
        return fl_err(c->e, "%s: %s is %s but Input is %s: they must have one dtype", c->t, slot, dt((*v)->dtype),
                      dt(x->dtype));
    if (s.nd != 3 || !dims_agree(s.d[0], rows) || !dims_agree(s.d[1], xs.d[1]) || !dims_agree(s.d[2], H))
        return fl_err(c->e,
                      "%s: %s must be [num_layers * directions, batch, hidden_size] = [%lld, %lld, %lld] for Input "
                      "%s, found %s",
                      c->t, slot, (long long)rows, (long long)xs.d[1], (long long)H, sstr(c, &xs), sstr(c, &s));
    return FL_OK;
}

FlStatus fl_infer_cudnn_lstm(Ctx *c) {
    FlVarDesc *x, *h0, *c0, *w;
    int64_t L = iattr(c, "num_layers"), H = iattr(c, "hidden_size"), I = iattr(c, "input_size");
    int64_t max_len = iattr(c, "max_len"), D = iattr(c, "is_bidirec") ? 2 : 1;
    double p = fattr(c, "dropout_prob");
    if (!fl_cudnn_lstm_dims_ok(L, I, H) || max_len < 1)
        return fl_err(c->e,
                      "%s: num_layers (%lld), hidden_size (%lld) and input_size (%lld) must be in [1, %d], max_len (%lld) "
                      ">= 1",
                      c->t, (long long)L, (long long)H, (long long)I, FL_CUDNN_LSTM_MAX_DIM, (long long)max_len);
    if (!(p >= 0 && p < 1)) return fl_err(c->e, "%s: dropout_prob (%g) must be in [0, 1)", c->t, p);
    if (in1(c, "Input", &x) || need_float_in(c, x, "Input")) return FL_ERROR;
    Shape xs = shape_of(x);
    if (xs.nd != 3 || !dims_agree(xs.d[2], I))
        return fl_err(c->e, "%s: Input must be [seq_len, batch, input_size] with input_size %lld, found %s", c->t,
                      (long long)I, sstr(c, &xs));
    if (xs.d[0] > max_len)
        return fl_err(c->e, "%s: Input %s has %lld steps, more than max_len %lld", c->t, sstr(c, &xs),
                      (long long)xs.d[0], (long long)max_len);
    if (state(c, "InitH", x, L * D, H, &h0) || state(c, "InitC", x, L * D, H, &c0)) return FL_ERROR;
    if (in1(c, "W", &w) || need_float_in(c, w, "W")) return FL_ERROR;
    Shape ws = shape_of(w);
    int64_t wn = fl_cudnn_lstm_weight_size(L, D, I, H);
    if (w->dtype != x->dtype || ws.nd != 1 || !dims_agree(ws.d[0], wn))
        return fl_err(c->e, "%s: W must be %s [%lld] (%lld layers, %lld directions, input_size %lld, hidden_size %lld), found %s %s",
                      c->t, dt(x->dtype), (long long)wn, (long long)L, (long long)D, (long long)I, (long long)H,
                      dt(w->dtype), sstr(c, &ws));
    int64_t B = merge(xs.d[1], merge(shape_of(h0).d[1], shape_of(c0).d[1]));
    Shape o = {.nd = 3, .d = {xs.d[0], B, smul(H, D)}};
    Shape st = {.nd = 3, .d = {L * D, B, H}};
    Shape r = shape1(xs.d[0] < 0 || B < 0 ? -1 : fl_cudnn_lstm_reserve_size(L, D, I, H, xs.d[0], B));
    return set_out(c, "Out", x->dtype, &o) || set_out(c, "last_h", x->dtype, &st) ||
                   set_out(c, "last_c", x->dtype, &st) || set_out(c, "Reserve", x->dtype, &r)
               ? FL_ERROR
               : FL_OK;
}
