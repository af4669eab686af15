/* cudnnlstm.c: cudnn_lstm, the stacked (and bidirectional) LSTM of Fluid's layers.lstm, in
 * cuDNN's math and weight layout, and its gradient (kernels_cudnnlstm.h). Everything is computed
 * in double; the matrix products go through kgemm_f64. */
#include "runtime/kernels/kernels_cudnnlstm.h"

#include <math.h>

#include "runtime/kernels/kernels_impl.h"
#include "runtime/rng.h"

static double sigm(double v) { return v >= 0 ? 1 / (1 + exp(-v)) : exp(v) / (1 + exp(v)); }

/* the values of t as doubles (n of them; t's numel checked by the caller) */
static double *load(const FlTensor *t, int64_t n) {
    double *d = fl_xcalloc((size_t)n + 1, sizeof(double));
    if (t->dtype == FL_DT_FLOAT32) {
        const float *s = fl_tensor_data(t);
        for (int64_t i = 0; i < n; i++) d[i] = s[i];
    } else {
        memcpy(d, fl_tensor_data(t), (size_t)n * sizeof(double));
    }
    return d;
}

/* a new F tensor of shape ne from n doubles, moved into out (NULL: dropped) */
static FlStatus store(FlErr *e, const char *op, FlTensor *out, FlDType dtype, int ndim, const int64_t *ne,
                      const double *v) {
    if (!out) return FL_OK;
    FlTensor t = FL_TENSOR_INIT;
    if (kalloc(e, op, &t, dtype, ndim, ne)) return FL_ERROR;
    int64_t n = fl_tensor_numel(&t);
    if (dtype == FL_DT_FLOAT32) {
        float *p = fl_tensor_data(&t);
        for (int64_t i = 0; i < n; i++) p[i] = (float)v[i];
    } else {
        memcpy(fl_tensor_data(&t), v, (size_t)n * sizeof(double));
    }
    kout(out, &t);
    return FL_OK;
}

typedef struct Dims {
    int64_t T, B, I, H, L, D, LD;
} Dims;

/* a float [rows, B, H] state of x's dtype */
static FlStatus check_state(FlErr *e, const char *op, const char *slot, const FlTensor *s, const FlTensor *x,
                            const Dims *d) {
    if (kneed_float(e, op, slot, s) || ksame_dtype(e, op, "Input", x, slot, s)) return FL_ERROR;
    if (s->ndim != 3 || s->ne[0] != d->LD || s->ne[1] != d->B || s->ne[2] != d->H)
        return fl_err(e, "%s: %s %s must be [num_layers * directions, batch, hidden_size] = [%lld, %lld, %lld]", op,
                      slot, fl_tensor_shape(s).s, (long long)d->LD, (long long)d->B, (long long)d->H);
    return FL_OK;
}

static FlStatus check(FlErr *e, const char *op, const FlTensor *x, const FlTensor *h0, const FlTensor *c0,
                      const FlTensor *w, const FlCudnnLstmAttrs *a, Dims *d) {
    if (kneed_float(e, op, "Input", x)) return FL_ERROR;
    if (!fl_cudnn_lstm_dims_ok(a->num_layers, a->input_size, a->hidden_size))
        return fl_err(e, "%s: num_layers (%lld), hidden_size (%lld) and input_size (%lld) must be in [1, %d]", op,
                      (long long)a->num_layers, (long long)a->hidden_size, (long long)a->input_size,
                      FL_CUDNN_LSTM_MAX_DIM);
    if (x->ndim != 3 || x->ne[2] != a->input_size)
        return fl_err(e, "%s: Input %s must be [seq_len, batch, input_size] with input_size %lld", op,
                      fl_tensor_shape(x).s, (long long)a->input_size);
    if (x->ne[0] > a->max_len)
        return fl_err(e, "%s: Input %s has %lld steps, more than max_len %lld", op, fl_tensor_shape(x).s,
                      (long long)x->ne[0], (long long)a->max_len);
    *d = (Dims){.T = x->ne[0], .B = x->ne[1], .I = x->ne[2], .H = a->hidden_size, .L = a->num_layers,
                .D = a->bidirec ? 2 : 1};
    d->LD = d->L * d->D;
    if (check_state(e, op, "InitH", h0, x, d) || check_state(e, op, "InitC", c0, x, d) || kneed_float(e, op, "W", w) ||
        ksame_dtype(e, op, "Input", x, "W", w))
        return FL_ERROR;
    int64_t wn = fl_cudnn_lstm_weight_size(d->L, d->D, d->I, d->H);
    if (w->ndim != 1 || w->ne[0] != wn)
        return fl_err(e, "%s: W %s must be [%lld] (%lld layers, %lld directions, input_size %lld, hidden_size %lld)",
                      op, fl_tensor_shape(w).s, (long long)wn, (long long)d->L, (long long)d->D, (long long)d->I,
                      (long long)d->H);
    return FL_OK;
}

/* the parts of layer l, direction dir in the reserve r */
typedef struct Part {
    double *mask, *xin;   /* layer l > 0: the dropout factors and the dropped input [T, B, in] */
    double *gate, *c, *h; /* [T, B, 4H], [T, B, H], [T, B, H] */
} Part;

static Part part(double *r, const Dims *d, int64_t l, int64_t dir) {
    int64_t in = fl_cudnn_lstm_in(l, d->D, d->I, d->H), TB = d->T * d->B;
    double *p = r + fl_cudnn_lstm_r_off(l, d->D, d->I, d->H, d->T, d->B);
    Part q = {0};
    if (l > 0) {
        q.mask = p;
        q.xin = p + TB * in;
        p += 2 * TB * in;
    }
    q.gate = p + dir * TB * 6 * d->H;
    q.c = q.gate + TB * 4 * d->H;
    q.h = q.c + TB * d->H;
    return q;
}

FlStatus fl_kernel_cudnn_lstm(FlErr *e, const FlTensor *x, const FlTensor *h0, const FlTensor *c0, const FlTensor *w,
                              const FlCudnnLstmAttrs *a, uint64_t seed, uint64_t step, FlTensor *out,
                              FlTensor *last_h, FlTensor *last_c, FlTensor *reserve) {
    const char *op = "cudnn_lstm";
    Dims d;
    if (kwant(e, op, "Out", out) || check(e, op, x, h0, c0, w, a, &d)) return FL_ERROR;
    int64_t T = d.T, B = d.B, H = d.H, D = d.D, G = 4 * H, TB = T * B;
    int64_t rn = fl_cudnn_lstm_reserve_size(d.L, D, d.I, H, T, B), wn = fl_cudnn_lstm_weight_size(d.L, D, d.I, H);
    double *xd = load(x, TB * d.I), *wd = load(w, wn), *hd = load(h0, d.LD * B * H), *cd = load(c0, d.LD * B * H);
    double *r = fl_xcalloc((size_t)rn + 1, sizeof(double)), *y = fl_xcalloc((size_t)(TB * H * D) + 1, sizeof(double));
    double *lh = fl_xcalloc((size_t)(d.LD * B * H) + 1, sizeof(double));
    double *lc = fl_xcalloc((size_t)(d.LD * B * H) + 1, sizeof(double));
    double p = a->dropout_prob, keep_scale = 1 / (1 - p);
    bool drop = !a->is_test && p > 0;
    FlRng rng;
    fl_rng_init2(&rng, seed, step);
    for (int64_t l = 0; l < d.L; l++) {
        int64_t in = fl_cudnn_lstm_in(l, D, d.I, H);
        const double *cur = xd;
        if (l > 0) {
            Part q = part(r, &d, l, 0);
            for (int64_t k = 0; k < TB * in; k++) {
                q.mask[k] = drop ? (fl_rng_uniform(&rng) >= p ? keep_scale : 0) : 1;
                q.xin[k] = y[k] * q.mask[k];
            }
            cur = q.xin;
        }
        for (int64_t dir = 0; dir < D; dir++) {
            Part q = part(r, &d, l, dir);
            const double *wx = wd + fl_cudnn_lstm_w_off(l, dir, D, d.I, H), *wh = wx + G * in;
            const double *bx = wd + fl_cudnn_lstm_b_off(l, dir, d.L, D, d.I, H), *bh = bx + G;
            const double *hp = hd + (l * D + dir) * B * H, *cp = cd + (l * D + dir) * B * H;
            for (int64_t s = 0; s < T; s++) {
                int64_t t = dir ? T - 1 - s : s;
                double *g = q.gate + t * B * G, *ct = q.c + t * B * H, *ht = q.h + t * B * H;
                kgemm_f64(false, true, B, G, in, 1, cur + t * B * in, in, wx, in, 0, g, G, true);
                kgemm_f64(false, true, B, G, H, 1, hp, H, wh, H, 1, g, G, true);
                for (int64_t b = 0; b < B; b++) {
                    double *gb = g + b * G;
                    for (int64_t j = 0; j < G; j++) {
                        double v = gb[j] + bx[j] + bh[j];
                        gb[j] = j >= 2 * H && j < 3 * H ? tanh(v) : sigm(v);
                    }
                    for (int64_t j = 0; j < H; j++) {
                        double c = gb[H + j] * cp[b * H + j] + gb[j] * gb[2 * H + j];
                        ct[b * H + j] = c;
                        ht[b * H + j] = gb[3 * H + j] * tanh(c);
                    }
                }
                hp = ht;
                cp = ct;
            }
            memcpy(lh + (l * D + dir) * B * H, hp, (size_t)(B * H) * sizeof(double));
            memcpy(lc + (l * D + dir) * B * H, cp, (size_t)(B * H) * sizeof(double));
        }
        /* the layer's output, the directions side by side */
        for (int64_t dir = 0; dir < D; dir++) {
            Part q = part(r, &d, l, dir);
            for (int64_t k = 0; k < TB; k++)
                memcpy(y + (k * D + dir) * H, q.h + k * H, (size_t)H * sizeof(double));
        }
    }
    FlStatus st = store(e, op, out, x->dtype, 3, (int64_t[]){T, B, H * D}, y);
    if (st == FL_OK) st = store(e, op, last_h, x->dtype, 3, h0->ne, lh);
    if (st == FL_OK) st = store(e, op, last_c, x->dtype, 3, c0->ne, lc);
    if (st == FL_OK) st = store(e, op, reserve, x->dtype, 1, (int64_t[]){rn}, r);
    free(xd);
    free(wd);
    free(hd);
    free(cd);
    free(r);
    free(y);
    free(lh);
    free(lc);
    return st;
}

/* an optional gradient input: its values, or zeros when absent */
static FlStatus load_grad(FlErr *e, const char *op, const char *slot, const FlTensor *t, const FlTensor *like,
                          int ndim, const int64_t *ne, double **out) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= ne[i];
    if (!t || !t->buf) {
        *out = fl_xcalloc((size_t)n + 1, sizeof(double));
        return FL_OK;
    }
    if (ksame_dtype(e, op, "Input", like, slot, t)) return FL_ERROR;
    if (fl_tensor_numel(t) != n)
        return fl_err(e, "%s: %s %s must hold %lld values (%s)", op, slot, fl_tensor_shape(t).s, (long long)n,
                      fl_shape_str(ndim, ne).s);
    *out = load(t, n);
    return FL_OK;
}

FlStatus fl_kernel_cudnn_lstm_grad(FlErr *e, const FlTensor *x, const FlTensor *h0, const FlTensor *c0,
                                   const FlTensor *w, const FlTensor *reserve, const FlCudnnLstmAttrs *a,
                                   const FlTensor *dout, const FlTensor *dlast_h, const FlTensor *dlast_c,
                                   FlTensor *dx, FlTensor *dh0, FlTensor *dc0, FlTensor *dw) {
    const char *op = "cudnn_lstm_grad";
    if (!dx && !dh0 && !dc0 && !dw) return FL_OK;
    Dims d;
    if (check(e, op, x, h0, c0, w, a, &d) || kneed_float(e, op, "Reserve", reserve)) return FL_ERROR;
    int64_t T = d.T, B = d.B, H = d.H, D = d.D, G = 4 * H, TB = T * B, SN = d.LD * B * H;
    int64_t rn = fl_cudnn_lstm_reserve_size(d.L, D, d.I, H, T, B), wn = fl_cudnn_lstm_weight_size(d.L, D, d.I, H);
    if (fl_tensor_numel(reserve) != rn)
        return fl_err(e, "%s: Reserve %s must hold %lld values (the forward's of Input %s)", op,
                      fl_tensor_shape(reserve).s, (long long)rn, fl_tensor_shape(x).s);
    double *dy = NULL, *dlh = NULL, *dlc = NULL;
    if (load_grad(e, op, "Out@GRAD", dout, x, 3, (int64_t[]){T, B, H * D}, &dy) ||
        load_grad(e, op, "last_h@GRAD", dlast_h, x, 3, h0->ne, &dlh) ||
        load_grad(e, op, "last_c@GRAD", dlast_c, x, 3, c0->ne, &dlc)) {
        free(dy);
        free(dlh);
        return FL_ERROR;
    }
    double *xd = load(x, TB * d.I), *wd = load(w, wn), *hd = load(h0, SN), *cd = load(c0, SN), *r = load(reserve, rn);
    double *gw = fl_xcalloc((size_t)wn + 1, sizeof(double)), *gh0 = fl_xcalloc((size_t)SN + 1, sizeof(double));
    double *gc0 = fl_xcalloc((size_t)SN + 1, sizeof(double));
    int64_t inmax = d.I > H * D ? d.I : H * D;
    double *dxin = fl_xcalloc((size_t)(TB * inmax) + 1, sizeof(double));
    double *da = fl_xcalloc((size_t)(B * G) + 1, sizeof(double)), *dh = fl_xcalloc((size_t)(B * H) + 1, sizeof(double));
    double *dc = fl_xcalloc((size_t)(B * H) + 1, sizeof(double));
    for (int64_t l = d.L - 1; l >= 0; l--) {
        int64_t in = fl_cudnn_lstm_in(l, D, d.I, H);
        const double *xin = l > 0 ? part(r, &d, l, 0).xin : xd;
        memset(dxin, 0, (size_t)(TB * in) * sizeof(double));
        for (int64_t dir = 0; dir < D; dir++) {
            Part q = part(r, &d, l, dir);
            int64_t woff = fl_cudnn_lstm_w_off(l, dir, D, d.I, H), boff = fl_cudnn_lstm_b_off(l, dir, d.L, D, d.I, H);
            const double *wx = wd + woff, *wh = wx + G * in;
            double *gwx = gw + woff, *gwh = gwx + G * in, *gbx = gw + boff, *gbh = gbx + G;
            memcpy(dh, dlh + (l * D + dir) * B * H, (size_t)(B * H) * sizeof(double));
            memcpy(dc, dlc + (l * D + dir) * B * H, (size_t)(B * H) * sizeof(double));
            for (int64_t s = T - 1; s >= 0; s--) {
                int64_t t = dir ? T - 1 - s : s, tp = dir ? t + 1 : t - 1;
                const double *hp = s > 0 ? q.h + tp * B * H : hd + (l * D + dir) * B * H;
                const double *cp = s > 0 ? q.c + tp * B * H : cd + (l * D + dir) * B * H;
                const double *g = q.gate + t * B * G, *ct = q.c + t * B * H;
                for (int64_t b = 0; b < B; b++) {
                    const double *gb = g + b * G;
                    double *ab = da + b * G;
                    for (int64_t j = 0; j < H; j++) {
                        int64_t k = b * H + j;
                        double gi = gb[j], gf = gb[H + j], gc = gb[2 * H + j], go = gb[3 * H + j];
                        double h_ = dh[k] + dy[(t * B + b) * H * D + dir * H + j], tc = tanh(ct[k]);
                        double dct = dc[k] + h_ * go * (1 - tc * tc);
                        ab[j] = dct * gc * gi * (1 - gi);
                        ab[H + j] = dct * cp[k] * gf * (1 - gf);
                        ab[2 * H + j] = dct * gi * (1 - gc * gc);
                        ab[3 * H + j] = h_ * tc * go * (1 - go);
                        dc[k] = dct * gf;
                    }
                }
                kgemm_f64(true, false, G, in, B, 1, da, G, xin + t * B * in, in, 1, gwx, in, true);
                kgemm_f64(true, false, G, H, B, 1, da, G, hp, H, 1, gwh, H, true);
                for (int64_t b = 0; b < B; b++)
                    for (int64_t j = 0; j < G; j++) {
                        gbx[j] += da[b * G + j];
                        gbh[j] += da[b * G + j];
                    }
                kgemm_f64(false, false, B, in, G, 1, da, G, wx, in, 1, dxin + t * B * in, in, true);
                kgemm_f64(false, false, B, H, G, 1, da, G, wh, H, 0, dh, H, true);
            }
            memcpy(gh0 + (l * D + dir) * B * H, dh, (size_t)(B * H) * sizeof(double));
            memcpy(gc0 + (l * D + dir) * B * H, dc, (size_t)(B * H) * sizeof(double));
        }
        if (l > 0) { /* through the dropout into the layer below's output */
            const double *mask = part(r, &d, l, 0).mask;
            for (int64_t k = 0; k < TB * in; k++) dy[k] = dxin[k] * mask[k];
        }
    }
    FlStatus st = store(e, op, dx, x->dtype, 3, x->ne, dxin);
    if (st == FL_OK) st = store(e, op, dh0, x->dtype, 3, h0->ne, gh0);
    if (st == FL_OK) st = store(e, op, dc0, x->dtype, 3, c0->ne, gc0);
    if (st == FL_OK) st = store(e, op, dw, x->dtype, 1, w->ne, gw);
    free(dy);
    free(dlh);
    free(dlc);
    free(xd);
    free(wd);
    free(hd);
    free(cd);
    free(r);
    free(gw);
    free(gh0);
    free(gc0);
    free(dxin);
    free(da);
    free(dh);
    free(dc);
    return st;
}
