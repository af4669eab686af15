/* test_rnn.c: the recurrent kernels of kernels_rnn.h (lstm, gru) against a plain per-sequence
 * reference (one sequence at a time, matrix-vector products in double), on a batch mixing
 * sequence lengths 2, 1, 0 and 17, both directions and every option; gradients by finite
 * differences. */
#include "tests/runtime/kernels/kt.h"

#include "runtime/kernels/kernels_rnn.h"

/* lengths 2, 1, 0 (an empty sequence) and 17 */
static const int64_t OFF[] = {0, 2, 3, 3, 20};
#define NSEQ 4
#define TROWS 20

static double act(FlRnnAct k, double x) {
    switch (k) {
    case FL_RNN_SIGMOID: return 1 / (1 + exp(-x));
    case FL_RNN_TANH: return tanh(x);
    case FL_RNN_RELU: return x > 0 ? x : 0;
    case FL_RNN_IDENTITY: return x;
    case FL_RNN_ACT_COUNT: break;
    }
    return NAN;
}

static double at(const FlTensor *t, int64_t i, int64_t j) { return fl_tensor_get(t, i * t->ne[1] + j); }

/* hidden, cell: [TROWS * D] each; with pw [D, P] (lstmp) the recurrence reads r = proj(h pw),
 * written to projv [TROWS * P]; h0, c0 [NSEQ, D] (lstm; NULL: zeros) the initial states */
static void ref_lstm(const FlTensor *x, const FlTensor *h0, const FlTensor *c0, const FlTensor *w, const FlTensor *b,
                     const FlLstmAttrs *a, int64_t D, const FlTensor *pw, double *hidden, double *cell,
                     double *projv) {
    double h[8], c[8], g[32], rec[8];
    int64_t R = pw ? pw->ne[1] : D;
    for (int s = 0; s < NSEQ; s++) {
        for (int j = 0; j < 8; j++) h[j] = c[j] = rec[j] = 0;
        for (int j = 0; j < R; j++)
            if (h0) rec[j] = at(h0, s, j);
        for (int j = 0; j < D; j++)
            if (c0) c[j] = at(c0, s, j);
        int64_t len = OFF[s + 1] - OFF[s];
        for (int64_t t = 0; t < len; t++) {
            int64_t r = a->reverse ? OFF[s + 1] - 1 - t : OFF[s] + t;
            for (int q = 0; q < 4 * D; q++) {
                g[q] = at(x, r, q) + at(b, 0, q);
                for (int k = 0; k < R; k++) g[q] += rec[k] * at(w, k, q);
            }
            for (int j = 0; j < D; j++) {
                double pi = a->peepholes ? at(b, 0, 4 * D + j) : 0, pf = a->peepholes ? at(b, 0, 5 * D + j) : 0;
                double po = a->peepholes ? at(b, 0, 6 * D + j) : 0;
                double cand = act(a->cand, g[j]), in = act(a->gate, g[D + j] + pi * c[j]);
                double fg = act(a->gate, g[2 * D + j] + pf * c[j]);
                c[j] = cand * in + c[j] * fg;
                if (a->cell_clip > 0) c[j] = fmin(fmax(c[j], -a->cell_clip), a->cell_clip);
                double og = act(a->gate, g[3 * D + j] + po * c[j]);
                h[j] = og * act(a->cell, c[j]);
                hidden[r * D + j] = h[j];
                cell[r * D + j] = c[j];
            }
            for (int k = 0; k < R; k++) {
                double v = 0;
                for (int j = 0; j < D; j++) v += h[j] * (pw ? at(pw, j, k) : j == k);
                rec[k] = pw ? act(a->proj, v) : v;
                if (pw && a->proj_clip > 0) rec[k] = fmin(fmax(rec[k], -a->proj_clip), a->proj_clip);
                if (pw) projv[r * R + k] = rec[k];
            }
        }
    }
}

static void ref_gru(const FlTensor *x, const FlTensor *h0, const FlTensor *w, const FlTensor *b,
                    const FlGruAttrs *a, int64_t D, double *hidden) {
    double h[8], g[24], rh[8];
    for (int s = 0; s < NSEQ; s++) {
        for (int j = 0; j < D; j++) h[j] = h0 ? at(h0, s, j) : 0;
        int64_t len = OFF[s + 1] - OFF[s];
        for (int64_t t = 0; t < len; t++) {
            int64_t r = a->reverse ? OFF[s + 1] - 1 - t : OFF[s] + t;
            /* W's memory: [D, 2D] for the gates, then [D, D] for the candidate */
            for (int q = 0; q < 2 * D; q++) {
                g[q] = at(x, r, q) + (b ? at(b, 0, q) : 0);
                for (int k = 0; k < D; k++) g[q] += h[k] * fl_tensor_get(w, k * 2 * D + q);
                g[q] = act(a->gate, g[q]);
            }
            for (int j = 0; j < D; j++) rh[j] = g[D + j] * h[j];
            for (int j = 0; j < D; j++) {
                double v = at(x, r, 2 * D + j) + (b ? at(b, 0, 2 * D + j) : 0);
                for (int k = 0; k < D; k++) v += rh[k] * fl_tensor_get(w, 2 * D * D + k * D + j);
                g[2 * D + j] = act(a->cand, v);
            }
            for (int j = 0; j < D; j++) {
                double u = g[j], c = g[2 * D + j];
                h[j] = a->origin_mode ? u * h[j] + (1 - u) * c : (1 - u) * h[j] + u * c;
                hidden[r * D + j] = h[j];
            }
        }
    }
}

static const FlLstmAttrs LSTM_CASES[] = {
    {false, false, FL_RNN_SIGMOID, FL_RNN_TANH, FL_RNN_TANH, FL_RNN_TANH, 0, 0},
    {true, false, FL_RNN_SIGMOID, FL_RNN_TANH, FL_RNN_TANH, FL_RNN_IDENTITY, 0, 0},
    {false, true, FL_RNN_SIGMOID, FL_RNN_TANH, FL_RNN_TANH, FL_RNN_SIGMOID, 0, 0},
    {true, true, FL_RNN_SIGMOID, FL_RNN_RELU, FL_RNN_IDENTITY, FL_RNN_TANH, 0, 0},
};

static void test_lstm_values(void) {
    FlRng r;
    fl_rng_init(&r, 11);
    const int64_t D = 3;
    FlDType dts[2] = {FL_DT_FLOAT32, FL_DT_FLOAT64};
    for (int k = 0; k < 2; k++)
        for (size_t c = 0; c < FL_ARRAY_LEN(LSTM_CASES); c++) {
            const FlLstmAttrs *a = &LSTM_CASES[c];
            FlTensor x = kt_rand(&r, dts[k], 2, (int64_t[]){TROWS, 4 * D}, -1, 1);
            FlTensor w = kt_rand(&r, dts[k], 2, (int64_t[]){D, 4 * D}, -0.8, 0.8);
            FlTensor b = kt_rand(&r, dts[k], 2, (int64_t[]){1, (a->peepholes ? 7 : 4) * D}, -0.5, 0.5);
            FlTensor h0 = kt_rand(&r, dts[k], 2, (int64_t[]){NSEQ, D}, -1, 1);
            FlTensor c0 = kt_rand(&r, dts[k], 2, (int64_t[]){NSEQ, D}, -1, 1);
            /* without initial states, with both, with only H0, with only C0 */
            for (int init = 0; init < 4; init++) {
                const FlTensor *ph0 = init == 1 || init == 2 ? &h0 : NULL, *pc0 = init == 1 || init == 3 ? &c0 : NULL;
                FlTensor h = FL_TENSOR_INIT, ce = FL_TENSOR_INIT, g = FL_TENSOR_INIT;
                KT_OK(fl_kernel_lstm(KE, &x, OFF, NSEQ, ph0, pc0, &w, &b, a, &h, &ce, &g));
                double rh[TROWS * 3], rc[TROWS * 3];
                ref_lstm(&x, ph0, pc0, &w, &b, a, D, NULL, rh, rc, NULL);
                CU_ASSERT(kt_values(&h, rh, TROWS * D, k ? 1e-12 : 1e-5));
                CU_ASSERT(kt_values(&ce, rc, TROWS * D, k ? 1e-12 : 1e-5));
                KT_SHAPE_IS(&g, KT_SHAPE(TROWS, 12));
                FlTensor outs[] = {h, ce, g};
                kt_fini(3, outs);
            }
            FlTensor all[] = {x, w, b, h0, c0};
            kt_fini(5, all);
        }
}

static void test_gru_values(void) {
    FlRng r;
    fl_rng_init(&r, 12);
    const int64_t D = 3;
    FlDType dts[2] = {FL_DT_FLOAT32, FL_DT_FLOAT64};
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < 8; c++) {
            FlGruAttrs a = {c & 1, (c >> 1) & 1, FL_RNN_SIGMOID, c == 7 ? FL_RNN_RELU : FL_RNN_TANH};
            bool with_h0 = c & 4, with_b = c != 4;
            FlTensor x = kt_rand(&r, dts[k], 2, (int64_t[]){TROWS, 3 * D}, -1, 1);
            FlTensor w = kt_rand(&r, dts[k], 2, (int64_t[]){D, 3 * D}, -0.8, 0.8);
            FlTensor b = kt_rand(&r, dts[k], 2, (int64_t[]){1, 3 * D}, -0.5, 0.5);
            FlTensor h0 = kt_rand(&r, dts[k], 2, (int64_t[]){NSEQ, D}, -1, 1);
            FlTensor h = FL_TENSOR_INIT, g = FL_TENSOR_INIT, rhp = FL_TENSOR_INIT;
            KT_OK(fl_kernel_gru(KE, &x, OFF, NSEQ, with_h0 ? &h0 : NULL, &w, with_b ? &b : NULL, &a, &h, &g, &rhp));
            double rh[TROWS * 3];
            ref_gru(&x, with_h0 ? &h0 : NULL, &w, with_b ? &b : NULL, &a, D, rh);
            CU_ASSERT(kt_values(&h, rh, TROWS * D, k ? 1e-12 : 1e-5));
            KT_SHAPE_IS(&g, KT_SHAPE(TROWS, 9));
            KT_SHAPE_IS(&rhp, KT_SHAPE(TROWS, 3));
            FlTensor all[] = {x, w, b, h0, h, g, rhp};
            kt_fini(7, all);
        }
}

/* ---- gradients: out = hidden then cell (lstm), hidden (gru), flattened ---- */

typedef struct RG {
    bool gru, h0, bias, c0; /* lstm: h0 and c0 are in[3] and in[4] */
    FlLstmAttrs lstm;
    FlGruAttrs g;
} RG;

static FlStatus concat2(FlErr *e, const FlTensor *a, const FlTensor *b, FlTensor *out) {
    int64_t na = fl_tensor_numel(a), n = na + (b ? fl_tensor_numel(b) : 0);
    if (fl_tensor_alloc(e, out, a->dtype, 1, &n)) return FL_ERROR;
    for (int64_t i = 0; i < na; i++) fl_tensor_set(out, i, fl_tensor_get(a, i));
    for (int64_t i = na; i < n; i++) fl_tensor_set(out, i, fl_tensor_get(b, i - na));
    return FL_OK;
}

static FlStatus rg_fwd_all(const RG *g, FlErr *e, FlTensor *in, FlTensor *o /* [3] */) {
    if (g->gru)
        return fl_kernel_gru(e, &in[0], OFF, NSEQ, g->h0 ? &in[3] : NULL, &in[1], g->bias ? &in[2] : NULL, &g->g,
                             &o[0], &o[1], &o[2]);
    return fl_kernel_lstm(e, &in[0], OFF, NSEQ, g->h0 ? &in[3] : NULL, g->c0 ? &in[4] : NULL, &in[1], &in[2],
                          &g->lstm, &o[0], &o[1], &o[2]);
}

static FlStatus rg_fwd(const void *ctx, FlErr *e, FlTensor *in, FlTensor *out) {
    const RG *g = ctx;
    FlTensor o[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    FlStatus st = rg_fwd_all(g, e, in, o);
    if (!st) st = concat2(e, &o[0], g->gru ? NULL : &o[1], out);
    kt_fini(3, o);
    return st;
}

static FlStatus rg_bwd(const void *ctx, FlErr *e, FlTensor *in, const FlTensor *out, const FlTensor *dout,
                       FlTensor *din) {
    (void)out;
    const RG *g = ctx;
    FlTensor o[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT}, dh = FL_TENSOR_INIT, dc = FL_TENSOR_INIT;
    FlStatus st = rg_fwd_all(g, e, in, o);
    if (!st) st = fl_tensor_view(e, &dh, dout, 0, 2, o[0].ne);
    if (!st && !g->gru) st = fl_tensor_view(e, &dc, dout, fl_tensor_numel(&o[0]), 2, o[1].ne);
    if (!st && g->gru)
        st = fl_kernel_gru_grad(e, OFF, NSEQ, g->h0 ? &in[3] : NULL, &in[1], &o[0], &o[1], &o[2], &dh, &g->g,
                                &din[0], &din[3], &din[1], g->bias ? &din[2] : NULL);
    else if (!st)
        st = fl_kernel_lstm_grad(e, OFF, NSEQ, g->h0 ? &in[3] : NULL, g->c0 ? &in[4] : NULL, &in[1], &in[2], &o[0],
                                 &o[1], &o[2], &dh, &dc, &g->lstm, &din[0], g->h0 ? &din[3] : NULL,
                                 g->c0 ? &din[4] : NULL, &din[1], &din[2]);
    kt_fini(3, o);
    fl_tensor_fini(&dh);
    fl_tensor_fini(&dc);
    return st;
}

static void test_rnn_grads(void) {
    FlRng r;
    fl_rng_init(&r, 13);
    const int64_t D = 3;
    const FlDType d = FL_DT_FLOAT64;
    for (size_t c = 0; c < FL_ARRAY_LEN(LSTM_CASES); c++) {
        /* the cases alternate no initial state, H0 and C0, H0 only, C0 only */
        RG g = {.lstm = LSTM_CASES[c], .h0 = c % 4 == 1 || c % 4 == 2, .c0 = c % 4 == 1 || c % 4 == 3};
        FlTensor in[5] = {kt_rand(&r, d, 2, (int64_t[]){TROWS, 4 * D}, -1, 1),
                          kt_rand(&r, d, 2, (int64_t[]){D, 4 * D}, -0.8, 0.8),
                          kt_rand(&r, d, 2, (int64_t[]){1, (g.lstm.peepholes ? 7 : 4) * D}, -0.5, 0.5),
                          kt_rand(&r, d, 2, (int64_t[]){NSEQ, D}, -1, 1),
                          kt_rand(&r, d, 2, (int64_t[]){NSEQ, D}, -1, 1)};
        /* relu's kink: keep the cell away from 0 (a finite difference across it is meaningless) */
        if (g.lstm.cell == FL_RNN_RELU)
            for (int64_t i = 0; i < TROWS; i++)
                for (int64_t j = 0; j < D; j++) fl_tensor_set(&in[0], i * 4 * D + j, 0.5 + 0.5 * fl_rng_uniform(&r));
        if (g.lstm.cell == FL_RNN_RELU)
            for (int64_t i = 0; i < NSEQ * D; i++) fl_tensor_set(&in[4], i, 0.5 + 0.5 * fl_rng_uniform(&r));
        bool check[5] = {true, true, true, g.h0, g.c0};
        CU_ASSERT(kt_grad_check("lstm", &g, 5, in, check, rg_fwd, rg_bwd, 1e-6));
        kt_fini(5, in);
    }
    for (int c = 0; c < 8; c++) {
        RG g = {.gru = true, .h0 = c & 4, .bias = c != 4, .g = {c & 1, (c >> 1) & 1, FL_RNN_SIGMOID, FL_RNN_TANH}};
        FlTensor in[4] = {kt_rand(&r, d, 2, (int64_t[]){TROWS, 3 * D}, -1, 1),
                          kt_rand(&r, d, 2, (int64_t[]){D, 3 * D}, -0.8, 0.8),
                          kt_rand(&r, d, 2, (int64_t[]){1, 3 * D}, -0.5, 0.5),
                          kt_rand(&r, d, 2, (int64_t[]){NSEQ, D}, -1, 1)};
        bool check[4] = {true, true, g.bias, g.h0};
        CU_ASSERT(kt_grad_check("gru", &g, 4, in, check, rg_fwd, rg_bwd, 1e-6));
        kt_fini(4, in);
    }
}

/* float32 runs the GEMMs through OpenBLAS: its gradients agree with float64's */
static void test_rnn_grads_f32(void) {
    FlRng r;
    fl_rng_init(&r, 14);
    const int64_t D = 5;
    FlTensor x = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){TROWS, 4 * D}, -1, 1);
    FlTensor w = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){D, 4 * D}, -0.5, 0.5);
    FlTensor b = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){1, 7 * D}, -0.5, 0.5);
    FlTensor dh = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){TROWS, D}, -1, 1);
    FlTensor res[2][3];
    const FlLstmAttrs a = {true, true, FL_RNN_SIGMOID, FL_RNN_TANH, FL_RNN_TANH, FL_RNN_TANH, 0, 0};
    for (int k = 0; k < 2; k++) {
        FlDType dt = k ? FL_DT_FLOAT64 : FL_DT_FLOAT32;
        FlTensor xs = FL_TENSOR_INIT, ws = FL_TENSOR_INIT, bs = FL_TENSOR_INIT, dhs = FL_TENSOR_INIT;
        FlTensor o[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
        KT_OK(fl_kernel_cast(KE, &x, dt, &xs));
        KT_OK(fl_kernel_cast(KE, &w, dt, &ws));
        KT_OK(fl_kernel_cast(KE, &b, dt, &bs));
        KT_OK(fl_kernel_cast(KE, &dh, dt, &dhs));
        KT_OK(fl_kernel_lstm(KE, &xs, OFF, NSEQ, NULL, NULL, &ws, &bs, &a, &o[0], &o[1], &o[2]));
        for (int i = 0; i < 3; i++) fl_tensor_init(&res[k][i]);
        KT_OK(fl_kernel_lstm_grad(KE, OFF, NSEQ, NULL, NULL, &ws, &bs, &o[0], &o[1], &o[2], &dhs, NULL, &a,
                                  &res[k][0], NULL, NULL, &res[k][1], &res[k][2]));
        FlTensor all[] = {xs, ws, bs, dhs, o[0], o[1], o[2]};
        kt_fini(7, all);
    }
    for (int i = 0; i < 3; i++) {
        FlTensor c = FL_TENSOR_INIT;
        KT_OK(fl_kernel_cast(KE, &res[0][i], FL_DT_FLOAT64, &c));
        CU_ASSERT(kt_rel_diff(&c, &res[1][i]) < 1e-5);
        fl_tensor_fini(&c);
        kt_fini(2, (FlTensor[]){res[0][i], res[1][i]});
    }
    FlTensor all[] = {x, w, b, dh};
    kt_fini(4, all);
}

static void test_rnn_bad_inputs(void) {
    FlTensor x = KT_T(FL_DT_FLOAT32, KT_SHAPE(2, 5), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    FlTensor w4 = KT_T(FL_DT_FLOAT32, KT_SHAPE(1, 4), 0, 0, 0, 0), b4 = KT_T(FL_DT_FLOAT32, KT_SHAPE(1, 4), 0, 0, 0, 0);
    FlTensor x4 = KT_T(FL_DT_FLOAT32, KT_SHAPE(2, 4), 0, 0, 0, 0, 0, 0, 0, 0);
    FlTensor w64 = KT_T(FL_DT_FLOAT64, KT_SHAPE(1, 4), 0, 0, 0, 0), o = FL_TENSOR_INIT;
    const int64_t off[] = {0, 2};
    FlLstmAttrs a = {false, false, FL_RNN_SIGMOID, FL_RNN_TANH, FL_RNN_TANH, FL_RNN_TANH, 0, 0};
    KT_ERR(fl_kernel_lstm(KE, &x, off, 1, NULL, NULL, &w4, &b4, &a, &o, NULL, NULL), "lstm: Input [2, 5] must be [T, 4 * D]");
    KT_ERR(fl_kernel_lstm(KE, &x4, off, 1, NULL, NULL, &w64, &b4, &a, &o, NULL, NULL),
           "lstm: Input [2, 4] is float32 but Weight [1, 4] is float64");
    a.peepholes = true;
    KT_ERR(fl_kernel_lstm(KE, &x4, off, 1, NULL, NULL, &w4, &b4, &a, &o, NULL, NULL),
           "lstm: Bias [1, 4] must be [1, 7] (Input [2, 4])");
    FlGruAttrs ga = {false, false, FL_RNN_SIGMOID, FL_RNN_TANH};
    FlTensor x3 = KT_T(FL_DT_FLOAT32, KT_SHAPE(2, 3), 0, 0, 0, 0, 0, 0), w3 = KT_T(FL_DT_FLOAT32, KT_SHAPE(1, 3), 0, 0, 0);
    KT_ERR(fl_kernel_gru(KE, &x3, off, 1, &w3 /* as H0: 1 row, 3 cols */, &w3, NULL, &ga, &o, NULL, NULL),
           "gru: H0 [1, 3] must be [1, 1] (Input [2, 3])");
    CU_ASSERT_FALSE(fl_tensor_has_data(&o));
    FlRnnAct act = FL_RNN_ACT_COUNT;
    CU_ASSERT_FALSE(fl_rnn_act_find("softmax", &act));
    CU_ASSERT(fl_rnn_act_find("identity", &act) && act == FL_RNN_IDENTITY);
    FlTensor all[] = {x, w4, b4, x4, w64, x3, w3};
    kt_fini(7, all);
}

/* ---- lstm_unit, gru_unit ---- */

static void test_units(void) {
    FlRng r;
    fl_rng_init(&r, 15);
    const int64_t N = 3, D = 2;
    FlDType dts[2] = {FL_DT_FLOAT32, FL_DT_FLOAT64};
    for (int k = 0; k < 2; k++) {
        FlTensor x = kt_rand(&r, dts[k], 2, (int64_t[]){N, 4 * D}, -1, 1);
        FlTensor cp = kt_rand(&r, dts[k], 2, (int64_t[]){N, D}, -1, 1);
        FlTensor c = FL_TENSOR_INIT, h = FL_TENSOR_INIT;
        KT_OK(fl_kernel_lstm_unit(KE, &x, &cp, 0.5, &c, &h));
        double rc[6], rh[6];
        for (int64_t n = 0; n < N; n++)
            for (int64_t j = 0; j < D; j++) {
                double i = act(FL_RNN_SIGMOID, at(&x, n, j)), f = act(FL_RNN_SIGMOID, at(&x, n, D + j) + 0.5);
                double o = act(FL_RNN_SIGMOID, at(&x, n, 2 * D + j)), g = tanh(at(&x, n, 3 * D + j));
                rc[n * D + j] = f * at(&cp, n, j) + i * g;
                rh[n * D + j] = o * tanh(rc[n * D + j]);
            }
        CU_ASSERT(kt_values(&c, rc, N * D, k ? 1e-12 : 1e-6));
        CU_ASSERT(kt_values(&h, rh, N * D, k ? 1e-12 : 1e-6));
        /* gru_unit: one step from HiddenPrev, as gru from H0 over sequences of one row */
        FlTensor gx = kt_rand(&r, dts[k], 2, (int64_t[]){NSEQ, 3 * D}, -1, 1);
        FlTensor gw = kt_rand(&r, dts[k], 2, (int64_t[]){D, 3 * D}, -1, 1);
        FlTensor gh = kt_rand(&r, dts[k], 2, (int64_t[]){NSEQ, D}, -1, 1);
        FlTensor o[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
        FlGruAttrs a = {false, true, FL_RNN_SIGMOID, FL_RNN_TANH};
        KT_OK(fl_kernel_gru_unit(KE, &gx, &gh, &gw, NULL, &a, &o[0], &o[1], &o[2]));
        double ref[NSEQ * 2];
        for (int64_t n = 0; n < NSEQ; n++) {
            double hp[2] = {at(&gh, n, 0), at(&gh, n, 1)}, u[2], rr[2];
            for (int q = 0; q < 2 * D; q++) {
                double v = at(&gx, n, q);
                for (int m = 0; m < D; m++) v += hp[m] * fl_tensor_get(&gw, m * 2 * D + q);
                if (q < D) u[q] = act(FL_RNN_SIGMOID, v);
                else rr[q - D] = act(FL_RNN_SIGMOID, v);
            }
            for (int j = 0; j < D; j++) {
                double v = at(&gx, n, 2 * D + j);
                for (int m = 0; m < D; m++) v += rr[m] * hp[m] * fl_tensor_get(&gw, 2 * D * D + m * D + j);
                ref[n * D + j] = u[j] * hp[j] + (1 - u[j]) * tanh(v);
            }
        }
        CU_ASSERT(kt_values(&o[0], ref, NSEQ * D, k ? 1e-12 : 1e-6));
        FlTensor all[] = {x, cp, c, h, gx, gw, gh, o[0], o[1], o[2]};
        kt_fini(10, all);
    }
}

typedef struct UG {
    bool gru;
    FlGruAttrs a;
} UG;

static FlStatus ug_fwd_all(const UG *g, FlErr *e, FlTensor *in, FlTensor *o) {
    if (g->gru) return fl_kernel_gru_unit(e, &in[0], &in[1], &in[2], &in[3], &g->a, &o[0], &o[1], &o[2]);
    return fl_kernel_lstm_unit(e, &in[0], &in[1], 0.25, &o[1], &o[0]); /* o[0] = H, o[1] = C */
}
static FlStatus ug_fwd(const void *ctx, FlErr *e, FlTensor *in, FlTensor *out) {
    const UG *g = ctx;
    FlTensor o[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    FlStatus st = ug_fwd_all(g, e, in, o);
    if (!st) st = concat2(e, &o[0], g->gru ? NULL : &o[1], out);
    kt_fini(3, o);
    return st;
}
static FlStatus ug_bwd(const void *ctx, FlErr *e, FlTensor *in, const FlTensor *out, const FlTensor *dout,
                       FlTensor *din) {
    (void)out;
    const UG *g = ctx;
    FlTensor o[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT}, dh = FL_TENSOR_INIT, dc = FL_TENSOR_INIT;
    FlStatus st = ug_fwd_all(g, e, in, o);
    if (!st) st = fl_tensor_view(e, &dh, dout, 0, 2, o[0].ne);
    if (!st && !g->gru) st = fl_tensor_view(e, &dc, dout, fl_tensor_numel(&o[0]), 2, o[1].ne);
    if (!st && g->gru)
        st = fl_kernel_gru_unit_grad(e, &in[1], &in[2], &o[0], &o[1], &o[2], &dh, &g->a, &din[0], &din[1], &din[2],
                                     &din[3]);
    else if (!st)
        st = fl_kernel_lstm_unit_grad(e, &in[0], &in[1], &o[1], &dc, &dh, 0.25, &din[0], &din[1]);
    kt_fini(3, o);
    fl_tensor_fini(&dh);
    fl_tensor_fini(&dc);
    return st;
}

static void test_unit_grads(void) {
    FlRng r;
    fl_rng_init(&r, 16);
    const FlDType d = FL_DT_FLOAT64;
    UG lg = {0};
    FlTensor li[2] = {kt_rand(&r, d, 2, (int64_t[]){3, 8}, -1, 1), kt_rand(&r, d, 2, (int64_t[]){3, 2}, -1, 1)};
    CU_ASSERT(kt_grad_check("lstm_unit", &lg, 2, li, (bool[]){true, true}, ug_fwd, ug_bwd, 1e-6));
    kt_fini(2, li);
    for (int origin = 0; origin < 2; origin++) {
        UG gg = {true, {false, origin, FL_RNN_SIGMOID, FL_RNN_TANH}};
        FlTensor gi[4] = {kt_rand(&r, d, 2, (int64_t[]){3, 6}, -1, 1), kt_rand(&r, d, 2, (int64_t[]){3, 2}, -1, 1),
                          kt_rand(&r, d, 2, (int64_t[]){2, 6}, -1, 1), kt_rand(&r, d, 2, (int64_t[]){1, 6}, -1, 1)};
        CU_ASSERT(kt_grad_check("gru_unit", &gg, 4, gi, (bool[]){true, true, true, true}, ug_fwd, ug_bwd, 1e-6));
        kt_fini(4, gi);
    }
}

/* ---- lstmp ---- */

/* The lstmp cases: LSTM_CASES without clipping, then two with cell_clip and proj_clip (0.3 and
 * 0.25 clip a good part of the values drawn below). */
static FlLstmAttrs lstmp_case(size_t c) {
    FlLstmAttrs a = LSTM_CASES[c % FL_ARRAY_LEN(LSTM_CASES)];
    if (c >= FL_ARRAY_LEN(LSTM_CASES)) {
        a.cell_clip = 0.3;
        a.proj_clip = c % 2 ? 0.25 : 0;
    }
    return a;
}

static void test_lstmp_values(void) {
    FlRng r;
    fl_rng_init(&r, 17);
    const int64_t D = 3, P = 2;
    FlDType dts[2] = {FL_DT_FLOAT32, FL_DT_FLOAT64};
    for (int k = 0; k < 2; k++)
        for (size_t c = 0; c < FL_ARRAY_LEN(LSTM_CASES) + 2; c++) {
            FlLstmAttrs a = lstmp_case(c);
            FlTensor x = kt_rand(&r, dts[k], 2, (int64_t[]){TROWS, 4 * D}, -1, 1);
            FlTensor w = kt_rand(&r, dts[k], 2, (int64_t[]){P, 4 * D}, -0.8, 0.8);
            FlTensor pw = kt_rand(&r, dts[k], 2, (int64_t[]){D, P}, -0.8, 0.8);
            FlTensor b = kt_rand(&r, dts[k], 2, (int64_t[]){1, (a.peepholes ? 7 : 4) * D}, -0.5, 0.5);
            FlTensor h0 = kt_rand(&r, dts[k], 2, (int64_t[]){NSEQ, P}, -1, 1);
            FlTensor c0 = kt_rand(&r, dts[k], 2, (int64_t[]){NSEQ, D}, -1, 1);
            /* without initial states, with both, with only H0 [nseq, P], with only C0 */
            for (int init = 0; init < 4; init++) {
                const FlTensor *ph0 = init == 1 || init == 2 ? &h0 : NULL, *pc0 = init == 1 || init == 3 ? &c0 : NULL;
                FlTensor o[4] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
                KT_OK(fl_kernel_lstmp(KE, &x, OFF, NSEQ, ph0, pc0, &w, &pw, &b, &a, &o[0], &o[1], &o[2], &o[3]));
                double rh[TROWS * 3], rc[TROWS * 3], rp[TROWS * 2];
                ref_lstm(&x, ph0, pc0, &w, &b, &a, D, &pw, rh, rc, rp);
                CU_ASSERT(kt_values(&o[0], rp, TROWS * P, k ? 1e-12 : 1e-5));
                CU_ASSERT(kt_values(&o[1], rc, TROWS * D, k ? 1e-12 : 1e-5));
                CU_ASSERT(kt_values(&o[2], rh, TROWS * D, k ? 1e-12 : 1e-5));
                if (a.cell_clip > 0) { /* the clip bounds the cell and bites on these draws */
                    double m = 0;
                    for (int64_t i = 0; i < TROWS * D; i++) m = fmax(m, fabs(rc[i]));
                    CU_ASSERT(m == a.cell_clip);
                }
                kt_fini(4, o);
            }
            FlTensor all[] = {x, w, pw, b, h0, c0};
            kt_fini(6, all);
        }
    /* H0 is [nseq, P] (the initial projection), not [nseq, D] */
    FlTensor x = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){TROWS, 4 * D}, -1, 1);
    FlTensor w = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){P, 4 * D}, -0.8, 0.8);
    FlTensor pw = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){D, P}, -0.8, 0.8);
    FlTensor b = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){1, 4 * D}, -0.5, 0.5);
    FlTensor h0 = kt_rand(&r, FL_DT_FLOAT64, 2, (int64_t[]){NSEQ, D}, -1, 1);
    FlTensor o[4] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    KT_ERR(fl_kernel_lstmp(KE, &x, OFF, NSEQ, &h0, NULL, &w, &pw, &b, &LSTM_CASES[0], &o[0], &o[1], &o[2], &o[3]),
           "lstmp: H0 [4, 3] must be [4, 2] (Input [20, 12])");
    FlTensor all[] = {x, w, pw, b, h0};
    kt_fini(5, all);
}

/* in: X, W, B, ProjW, H0, C0 */
static FlStatus pg_fwd_all(const FlLstmAttrs *a, FlErr *e, FlTensor *in, FlTensor *o) {
    return fl_kernel_lstmp(e, &in[0], OFF, NSEQ, &in[4], &in[5], &in[1], &in[3], &in[2], a, &o[0], &o[1], &o[2],
                           &o[3]);
}
static FlStatus pg_fwd(const void *ctx, FlErr *e, FlTensor *in, FlTensor *out) {
    FlTensor o[4] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    FlStatus st = pg_fwd_all(ctx, e, in, o);
    if (!st) st = concat2(e, &o[0], &o[1], out);
    kt_fini(4, o);
    return st;
}
static FlStatus pg_bwd(const void *ctx, FlErr *e, FlTensor *in, const FlTensor *out, const FlTensor *dout,
                       FlTensor *din) {
    (void)out;
    FlTensor o[4] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT}, dp = FL_TENSOR_INIT,
             dc = FL_TENSOR_INIT;
    FlStatus st = pg_fwd_all(ctx, e, in, o);
    if (!st) st = fl_tensor_view(e, &dp, dout, 0, 2, o[0].ne);
    if (!st) st = fl_tensor_view(e, &dc, dout, fl_tensor_numel(&o[0]), 2, o[1].ne);
    if (!st)
        st = fl_kernel_lstmp_grad(e, OFF, NSEQ, &in[4], &in[5], &in[1], &in[3], &in[2], &o[0], &o[1], &o[2], &o[3],
                                  &dp, &dc, ctx, &din[0], &din[4], &din[5], &din[1], &din[3], &din[2]);
    kt_fini(4, o);
    fl_tensor_fini(&dp);
    fl_tensor_fini(&dc);
    return st;
}

static void test_lstmp_grads(void) {
    FlRng r;
    fl_rng_init(&r, 18);
    const int64_t D = 3, P = 2;
    const FlDType d = FL_DT_FLOAT64;
    /* the cases without relu's kink, and the clipped ones (a value within the finite difference's
     * step of a bound would break the check; none of these draws is) */
    const size_t cases[] = {0, 1, 2, FL_ARRAY_LEN(LSTM_CASES), FL_ARRAY_LEN(LSTM_CASES) + 1};
    for (size_t c = 0; c < FL_ARRAY_LEN(cases); c++) {
        FlLstmAttrs a = lstmp_case(cases[c]);
        FlTensor in[6] = {kt_rand(&r, d, 2, (int64_t[]){TROWS, 4 * D}, -1, 1),
                          kt_rand(&r, d, 2, (int64_t[]){P, 4 * D}, -0.8, 0.8),
                          kt_rand(&r, d, 2, (int64_t[]){1, (a.peepholes ? 7 : 4) * D}, -0.5, 0.5),
                          kt_rand(&r, d, 2, (int64_t[]){D, P}, -0.8, 0.8),
                          kt_rand(&r, d, 2, (int64_t[]){NSEQ, P}, -1, 1),
                          kt_rand(&r, d, 2, (int64_t[]){NSEQ, D}, -1, 1)};
        CU_ASSERT(kt_grad_check("lstmp", &a, 6, in, (bool[]){true, true, true, true, true, true}, pg_fwd, pg_bwd,
                                1e-6));
        kt_fini(6, in);
    }
}

int main(void) {
    static const KtCase tc[] = {
        KT_TEST(test_lstm_values), KT_TEST(test_gru_values),     KT_TEST(test_rnn_grads),
        KT_TEST(test_rnn_grads_f32), KT_TEST(test_rnn_bad_inputs), KT_TEST(test_units), KT_TEST(test_unit_grads), KT_TEST(test_lstmp_values), KT_TEST(test_lstmp_grads),
    };
    return kt_run("rnn kernels", tc, (int)FL_ARRAY_LEN(tc));
}
