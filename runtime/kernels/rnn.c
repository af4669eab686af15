/* rnn.c: the lstm and gru kernels over LoD sequences and their gradients (kernels_rnn.h).
 *
 * Sequences are sorted by length, longest first (ties in batch order), as Fluid's
 * sequence-to-batch reordering does; the sequences active at step t (longer than t) are then a
 * prefix of that order, and the state of sorted sequence k lives in row k of a [nseq, D]
 * buffer, so step t is one GEMM over rows [0, nact[t]) and an elementwise pass that reads and
 * writes the rows of X and the outputs where the sequences have their step t. The gradients run
 * the steps backwards with the same layout. Typed loops: rnn_t.inc.
 */
#include "runtime/kernels/kernels_rnn.h"

#include <math.h>

#include "runtime/kernels/kernels_impl.h"
#include "runtime/kernels/par.h"

/* Gate units (a row's D, times rows) per chunk of a step's gate math on the kernel pool: each
 * unit is five transcendentals in double (~0.1 us), so 2^12 of them far outweigh a hand-over
 * (a few us, docs/kernels.md "Threads"). */
enum { GATE_GRAIN = 1 << 12 };

bool fl_rnn_act_find(const char *name, FlRnnAct *act) {
    static const char *const names[] = {"sigmoid", "tanh", "relu", "identity"};
    _Static_assert(sizeof names / sizeof names[0] == FL_RNN_ACT_COUNT, "one name per FlRnnAct");
    for (int i = 0; i < FL_RNN_ACT_COUNT; i++)
        if (strcmp(name, names[i]) == 0) {
            *act = (FlRnnAct)i;
            return true;
        }
    return false;
}

static inline double ract(FlRnnAct k, double x) {
    switch (k) {
    case FL_RNN_SIGMOID: return 1 / (1 + exp(-x));
    case FL_RNN_TANH: return tanh(x);
    case FL_RNN_RELU: return x > 0 ? x : 0;
    case FL_RNN_IDENTITY: return x;
    case FL_RNN_ACT_COUNT: break;
    }
    FL_UNREACHABLE();
}
/* The activation's derivative, from its output y. */
static inline double rdact(FlRnnAct k, double y) {
    switch (k) {
    case FL_RNN_SIGMOID: return y * (1 - y);
    case FL_RNN_TANH: return 1 - y * y;
    case FL_RNN_RELU: return y > 0 ? 1 : 0;
    case FL_RNN_IDENTITY: return 1;
    case FL_RNN_ACT_COUNT: break;
    }
    FL_UNREACHABLE();
}

/* The row of sequence s's step t. */
static inline int64_t row_of(const int64_t *off, int64_t s, int64_t t, bool reverse) {
    return reverse ? off[s + 1] - 1 - t : off[s] + t;
}

/* The steps: order[k] = the k-th longest sequence, nact[t] = how many are longer than t. */
typedef struct Sched {
    int64_t nseq, maxlen;
    int64_t *order, *nact;
    FlTensor mem;
} Sched;

typedef struct LenIdx {
    int64_t len, idx;
} LenIdx;
static int by_length(const void *pa, const void *pb) {
    const LenIdx *a = pa, *b = pb;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static FlStatus sched_init(FlErr *e, const char *op, const int64_t *off, int64_t nseq, Sched *sc) {
    sc->nseq = nseq;
    sc->maxlen = 0;
    for (int64_t s = 0; s < nseq; s++)
        if (off[s + 1] - off[s] > sc->maxlen) sc->maxlen = off[s + 1] - off[s];
    fl_tensor_init(&sc->mem);
    int64_t ne = 2 * nseq + sc->maxlen + 1;
    if (kalloc(e, op, &sc->mem, FL_DT_INT64, 1, &ne)) return FL_ERROR;
    LenIdx *li = fl_tensor_data(&sc->mem); /* sorted in place, then read into order */
    for (int64_t s = 0; s < nseq; s++) li[s] = (LenIdx){off[s + 1] - off[s], s};
    if (nseq) qsort(li, (size_t)nseq, sizeof *li, by_length);
    sc->order = fl_tensor_data(&sc->mem);
    sc->nact = sc->order + 2 * nseq;
    int64_t k = nseq;
    for (int64_t t = 0; t < sc->maxlen; t++) {
        while (k > 0 && li[k - 1].len <= t) k--;
        sc->nact[t] = k;
    }
    for (int64_t s = 0; s < nseq; s++) sc->order[s] = li[s].idx; /* order[s] overlays li[s / 2] */
    return FL_OK;
}

#define FL_TMPL "rnn_t.inc"
#include "runtime/kernels/tmpl.h"

/* A [rows, cols] matrix of the op's dtype (rows < 0: any). */
static FlStatus need_mat(FlErr *e, const char *op, const char *slot, const FlTensor *t, const FlTensor *like,
                         int64_t rows, int64_t cols) {
    if (ksame_dtype(e, op, "Input", like, slot, t)) return FL_ERROR;
    if (t->ndim != 2 || (rows >= 0 && t->ne[0] != rows) || t->ne[1] != cols)
        return fl_err(e, "%s: %s %s must be [%lld, %lld] (Input %s)", op, slot, fl_tensor_shape(t).s,
                      (long long)rows, (long long)cols, fl_tensor_shape(like).s);
    return FL_OK;
}

/* X [T, gates * D] with W [D, gates * D]: D, or an error. */
static FlStatus rnn_dims(FlErr *e, const char *op, const FlTensor *x, const FlTensor *w, int gates, int64_t *D) {
    if (kneed_float(e, op, "Input", x) || khas(e, op, "Weight", w)) return FL_ERROR;
    if (x->ndim != 2 || x->ne[1] % gates != 0 || x->ne[1] == 0)
        return fl_err(e, "%s: Input %s must be [T, %d * D]", op, fl_tensor_shape(x).s, gates);
    *D = x->ne[1] / gates;
    return need_mat(e, op, "Weight", w, x, *D, gates * *D);
}

/* The workspace (zeroed) and the outputs [T, D] ... of a kernel, allocated at once. */
static FlStatus alloc_all(FlErr *e, const char *op, FlDType dt, int64_t wsn, FlTensor *ws, int n, FlTensor *outs,
                          const int64_t (*shapes)[2]) {
    if (kalloc(e, op, ws, dt, 1, &wsn)) return FL_ERROR;
    for (int i = 0; i < n; i++)
        if (kalloc(e, op, &outs[i], dt, 2, shapes[i])) return FL_ERROR;
    return FL_OK;
}

static void release(Sched *sc, FlTensor *ws, int n, FlTensor *outs) {
    fl_tensor_fini(&sc->mem);
    fl_tensor_fini(ws);
    for (int i = 0; i < n; i++) fl_tensor_fini(&outs[i]);
}

#define P(t) fl_tensor_data(t)
#define PO(t) ((t) ? fl_tensor_data(t) : NULL)

/* lstm (pw NULL) and lstmp: the inputs' checks; D, and R the recurrent width (D or P). */
static FlStatus lstm_inputs(FlErr *e, const char *op, const FlTensor *x, const FlTensor *w, const FlTensor *pw,
                            const FlTensor *b, const FlLstmAttrs *a, int64_t *D, int64_t *R) {
    if (kneed_float(e, op, "Input", x) || khas(e, op, "Weight", w)) return FL_ERROR;
    if (x->ndim != 2 || x->ne[1] % 4 != 0 || x->ne[1] == 0)
        return fl_err(e, "%s: Input %s must be [T, 4 * D]", op, fl_tensor_shape(x).s);
    *D = x->ne[1] / 4;
    *R = *D;
    if (pw) {
        if (khas(e, op, "ProjWeight", pw) || need_mat(e, op, "ProjWeight", pw, x, *D, pw->ndim == 2 ? pw->ne[1] : 0))
            return FL_ERROR;
        *R = pw->ne[1];
    }
    if (need_mat(e, op, "Weight", w, x, *R, 4 * *D)) return FL_ERROR;
    return need_mat(e, op, "Bias", b, x, 1, (a->peepholes ? 7 : 4) * *D);
}

static FlStatus lstm_forward(FlErr *e, const char *op, const FlTensor *x, const int64_t *off, int64_t nseq,
                             const FlTensor *h0, const FlTensor *c0, const FlTensor *w, const FlTensor *pw,
                             const FlTensor *b, const FlLstmAttrs *a, FlTensor *hidden, FlTensor *cell, FlTensor *gate,
                             FlTensor *proj) {
    int64_t D = 0, R = 0;
    if (lstm_inputs(e, op, x, w, pw, b, a, &D, &R) || (h0 && need_mat(e, op, "H0", h0, x, nseq, R)) ||
        (c0 && need_mat(e, op, "C0", c0, x, nseq, D)))
        return FL_ERROR;
    int64_t T = x->ne[0];
    Sched sc;
    FlTensor ws = FL_TENSOR_INIT, o[4] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    const int64_t shapes[4][2] = {{T, D}, {T, D}, {T, 4 * D}, {T, R}};
    int nout = pw ? 4 : 3;
    if (sched_init(e, op, off, nseq, &sc)) return FL_ERROR;
    if (alloc_all(e, op, x->dtype, nseq * (R + 5 * D + (pw ? D : 0)) + 1, &ws, nout, o, shapes)) {
        release(&sc, &ws, nout, o);
        return FL_ERROR;
    }
    if (x->dtype == FL_DT_FLOAT32)
        lstm_fwd_f32(&sc, off, P(x), PO(h0), PO(c0), P(w), P(b), a, D, PO(pw), R, P(&o[0]), P(&o[1]), P(&o[2]),
                     PO(pw ? &o[3] : NULL), P(&ws), true);
    else
        lstm_fwd_f64(&sc, off, P(x), PO(h0), PO(c0), P(w), P(b), a, D, PO(pw), R, P(&o[0]), P(&o[1]), P(&o[2]),
                     PO(pw ? &o[3] : NULL), P(&ws), false);
    kout(hidden, &o[0]);
    kout(cell, &o[1]);
    kout(gate, &o[2]);
    kout(proj, &o[3]);
    release(&sc, &ws, 0, o);
    return FL_OK;
}

FlStatus fl_kernel_lstm(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq, const FlTensor *h0,
                        const FlTensor *c0, const FlTensor *w, const FlTensor *b, const FlLstmAttrs *a,
                        FlTensor *hidden, FlTensor *cell, FlTensor *gate) {
    return lstm_forward(e, "lstm", x, off, nseq, h0, c0, w, NULL, b, a, hidden, cell, gate, NULL);
}

FlStatus fl_kernel_lstmp(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq, const FlTensor *h0,
                         const FlTensor *c0, const FlTensor *w, const FlTensor *proj_w, const FlTensor *b,
                         const FlLstmAttrs *a, FlTensor *proj, FlTensor *cell, FlTensor *hidden, FlTensor *gate) {
    if (khas(e, "lstmp", "ProjWeight", proj_w)) return FL_ERROR;
    return lstm_forward(e, "lstmp", x, off, nseq, h0, c0, w, proj_w, b, a, hidden, cell, gate, proj);
}

/* The gradient of lstm (pw NULL: dh, dw, db) and lstmp (dproj, dpw too). */
static FlStatus lstm_backward(FlErr *e, const char *op, const int64_t *off, int64_t nseq, const FlTensor *h0,
                              const FlTensor *c0, const FlTensor *w, const FlTensor *pw, const FlTensor *b,
                              const FlTensor *hidden, const FlTensor *cell, const FlTensor *gate,
                              const FlTensor *proj, const FlTensor *dhidden, const FlTensor *dcell,
                              const FlTensor *dproj, const FlLstmAttrs *a, FlTensor *dx, FlTensor *dh0,
                              FlTensor *dc0, FlTensor *dw, FlTensor *dpw, FlTensor *db) {
    int64_t D = 0, R = 0;
    if (lstm_inputs(e, op, gate, w, pw, b, a, &D, &R) || (h0 && need_mat(e, op, "H0", h0, gate, nseq, R)) ||
        (c0 && need_mat(e, op, "C0", c0, gate, nseq, D)))
        return FL_ERROR;
    int64_t T = gate->ne[0];
    if (need_mat(e, op, "Hidden", hidden, gate, T, D) || need_mat(e, op, "Cell", cell, gate, T, D) ||
        (dhidden && need_mat(e, op, "Hidden@GRAD", dhidden, gate, T, D)) ||
        (dcell && need_mat(e, op, "Cell@GRAD", dcell, gate, T, D)) ||
        (pw && need_mat(e, op, "Projection", proj, gate, T, R)) ||
        (dproj && need_mat(e, op, "Projection@GRAD", dproj, gate, T, R)))
        return FL_ERROR;
    if (!pw) dpw = NULL;
    if (!h0) dh0 = NULL;
    if (!c0) dc0 = NULL;
    if (!dx && !dw && !db && !dpw && !dh0 && !dc0) return FL_OK;
    Sched sc;
    FlTensor ws = FL_TENSOR_INIT, o[6] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT,
                                          FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    const int64_t shapes[6][2] = {{T, 4 * D}, {R, 4 * D}, {1, b->ne[1]}, {D, R}, {nseq, R}, {nseq, D}};
    int nout = pw ? 4 : 3;
    if (sched_init(e, op, off, nseq, &sc)) return FL_ERROR;
    if ((dh0 && kalloc(e, op, &o[4], gate->dtype, 2, shapes[4])) ||
        (dc0 && kalloc(e, op, &o[5], gate->dtype, 2, shapes[5]))) {
        release(&sc, &ws, 6, o);
        return FL_ERROR;
    }
    if (alloc_all(e, op, gate->dtype, nseq * (2 * R + 5 * D + (pw ? 2 * D + R : 0)) + 1, &ws, nout, o, shapes)) {
        release(&sc, &ws, 6, o);
        return FL_ERROR;
    }
    if (gate->dtype == FL_DT_FLOAT32)
        lstm_bwd_f32(&sc, off, PO(h0), PO(c0), P(w), P(b), P(hidden), P(cell), P(gate), PO(dhidden), PO(dcell), a,
                     D, PO(pw), R, PO(proj), PO(dproj), dx ? P(&o[0]) : NULL, dh0 ? P(&o[4]) : NULL,
                     dc0 ? P(&o[5]) : NULL, dw ? P(&o[1]) : NULL, db ? P(&o[2]) : NULL, dpw ? P(&o[3]) : NULL,
                     P(&ws), true);
    else
        lstm_bwd_f64(&sc, off, PO(h0), PO(c0), P(w), P(b), P(hidden), P(cell), P(gate), PO(dhidden), PO(dcell), a,
                     D, PO(pw), R, PO(proj), PO(dproj), dx ? P(&o[0]) : NULL, dh0 ? P(&o[4]) : NULL,
                     dc0 ? P(&o[5]) : NULL, dw ? P(&o[1]) : NULL, db ? P(&o[2]) : NULL, dpw ? P(&o[3]) : NULL,
                     P(&ws), false);
    kout(dx, &o[0]);
    kout(dw, &o[1]);
    kout(db, &o[2]);
    kout(dpw, &o[3]);
    kout(dh0, &o[4]);
    kout(dc0, &o[5]);
    release(&sc, &ws, 0, o);
    return FL_OK;
}

FlStatus fl_kernel_lstm_grad(FlErr *e, const int64_t *off, int64_t nseq, const FlTensor *h0, const FlTensor *c0,
                             const FlTensor *w, const FlTensor *b, const FlTensor *hidden, const FlTensor *cell,
                             const FlTensor *gate, const FlTensor *dhidden, const FlTensor *dcell,
                             const FlLstmAttrs *a, FlTensor *dx, FlTensor *dh0, FlTensor *dc0, FlTensor *dw,
                             FlTensor *db) {
    return lstm_backward(e, "lstm_grad", off, nseq, h0, c0, w, NULL, b, hidden, cell, gate, NULL, dhidden, dcell,
                         NULL, a, dx, dh0, dc0, dw, NULL, db);
}

FlStatus fl_kernel_lstmp_grad(FlErr *e, const int64_t *off, int64_t nseq, const FlTensor *h0, const FlTensor *c0,
                              const FlTensor *w, const FlTensor *proj_w, const FlTensor *b, const FlTensor *proj,
                              const FlTensor *cell, const FlTensor *hidden, const FlTensor *gate,
                              const FlTensor *dproj, const FlTensor *dcell, const FlLstmAttrs *a, FlTensor *dx,
                              FlTensor *dh0, FlTensor *dc0, FlTensor *dw, FlTensor *dproj_w, FlTensor *db) {
    if (khas(e, "lstmp_grad", "ProjWeight", proj_w)) return FL_ERROR;
    return lstm_backward(e, "lstmp_grad", off, nseq, h0, c0, w, proj_w, b, hidden, cell, gate, proj, NULL, dcell,
                         dproj, a, dx, dh0, dc0, dw, dproj_w, db);
}

static FlStatus gru_inputs(FlErr *e, const char *op, const FlTensor *x, int64_t nseq, const FlTensor *h0,
                           const FlTensor *w, int64_t *D) {
    if (rnn_dims(e, op, x, w, 3, D)) return FL_ERROR;
    return h0 ? need_mat(e, op, "H0", h0, x, nseq, *D) : FL_OK;
}

FlStatus fl_kernel_gru(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq, const FlTensor *h0,
                       const FlTensor *w, const FlTensor *b, const FlGruAttrs *a, FlTensor *hidden, FlTensor *gate,
                       FlTensor *reset_hidden_prev) {
    const char *op = "gru";
    int64_t D = 0;
    if (gru_inputs(e, op, x, nseq, h0, w, &D) || (b && need_mat(e, op, "Bias", b, x, 1, 3 * D))) return FL_ERROR;
    int64_t T = x->ne[0];
    Sched sc;
    FlTensor ws = FL_TENSOR_INIT, o[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    const int64_t shapes[3][2] = {{T, D}, {T, 3 * D}, {T, D}};
    if (sched_init(e, op, off, nseq, &sc)) return FL_ERROR;
    if (alloc_all(e, op, x->dtype, nseq * 5 * D + 1, &ws, 3, o, shapes)) {
        release(&sc, &ws, 3, o);
        return FL_ERROR;
    }
    if (x->dtype == FL_DT_FLOAT32)
        gru_fwd_f32(&sc, off, P(x), PO(h0), P(w), PO(b), a, D, P(&o[0]), P(&o[1]), P(&o[2]), P(&ws), true);
    else
        gru_fwd_f64(&sc, off, P(x), PO(h0), P(w), PO(b), a, D, P(&o[0]), P(&o[1]), P(&o[2]), P(&ws), false);
    kout(hidden, &o[0]);
    kout(gate, &o[1]);
    kout(reset_hidden_prev, &o[2]);
    release(&sc, &ws, 0, o);
    return FL_OK;
}

FlStatus fl_kernel_gru_grad(FlErr *e, const int64_t *off, int64_t nseq, const FlTensor *h0, const FlTensor *w,
                            const FlTensor *hidden, const FlTensor *gate, const FlTensor *reset_hidden_prev,
                            const FlTensor *dhidden, const FlGruAttrs *a, FlTensor *dx, FlTensor *dh0, FlTensor *dw,
                            FlTensor *db) {
    const char *op = "gru_grad";
    int64_t D = 0;
    if (gru_inputs(e, op, gate, nseq, h0, w, &D)) return FL_ERROR;
    int64_t T = gate->ne[0];
    if (need_mat(e, op, "Hidden", hidden, gate, T, D) ||
        need_mat(e, op, "ResetHiddenPrev", reset_hidden_prev, gate, T, D) ||
        (dhidden && need_mat(e, op, "Hidden@GRAD", dhidden, gate, T, D)))
        return FL_ERROR;
    if (!h0) dh0 = NULL;
    if (!dx && !dh0 && !dw && !db) return FL_OK;
    Sched sc;
    FlTensor ws = FL_TENSOR_INIT, o[4] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    const int64_t shapes[4][2] = {{T, 3 * D}, {nseq, D}, {D, 3 * D}, {1, 3 * D}};
    if (sched_init(e, op, off, nseq, &sc)) return FL_ERROR;
    if (alloc_all(e, op, gate->dtype, nseq * 7 * D + 1, &ws, 4, o, shapes)) {
        release(&sc, &ws, 4, o);
        return FL_ERROR;
    }
    if (gate->dtype == FL_DT_FLOAT32)
        gru_bwd_f32(&sc, off, PO(h0), P(w), P(hidden), P(gate), P(reset_hidden_prev), PO(dhidden), a, D,
                    dx ? P(&o[0]) : NULL, dh0 ? P(&o[1]) : NULL, dw ? P(&o[2]) : NULL, db ? P(&o[3]) : NULL,
                    P(&ws), true);
    else
        gru_bwd_f64(&sc, off, PO(h0), P(w), P(hidden), P(gate), P(reset_hidden_prev), PO(dhidden), a, D,
                    dx ? P(&o[0]) : NULL, dh0 ? P(&o[1]) : NULL, dw ? P(&o[2]) : NULL, db ? P(&o[3]) : NULL,
                    P(&ws), false);
    kout(dx, &o[0]);
    kout(dh0, &o[1]);
    kout(dw, &o[2]);
    kout(db, &o[3]);
    release(&sc, &ws, 0, o);
    return FL_OK;
}

FlStatus fl_kernel_lstm_unit(FlErr *e, const FlTensor *x, const FlTensor *c_prev, double forget_bias, FlTensor *c,
                             FlTensor *h) {
    const char *op = "lstm_unit";
    if (kneed_float(e, op, "X", x) || khas(e, op, "C_prev", c_prev)) return FL_ERROR;
    if (x->ndim != 2 || x->ne[1] % 4 != 0 || x->ne[1] == 0)
        return fl_err(e, "%s: X %s must be [N, 4 * D]", op, fl_tensor_shape(x).s);
    int64_t N = x->ne[0], D = x->ne[1] / 4;
    if (need_mat(e, op, "C_prev", c_prev, x, N, D)) return FL_ERROR;
    FlTensor o[2] = {FL_TENSOR_INIT, FL_TENSOR_INIT};
    const int64_t shape[2] = {N, D};
    if (kalloc(e, op, &o[0], x->dtype, 2, shape) || kalloc(e, op, &o[1], x->dtype, 2, shape)) {
        fl_tensor_fini(&o[0]);
        fl_tensor_fini(&o[1]);
        return FL_ERROR;
    }
    if (x->dtype == FL_DT_FLOAT32)
        lstm_unit_fwd_f32(P(x), P(c_prev), forget_bias, N, D, P(&o[0]), P(&o[1]));
    else
        lstm_unit_fwd_f64(P(x), P(c_prev), forget_bias, N, D, P(&o[0]), P(&o[1]));
    kout(c, &o[0]);
    kout(h, &o[1]);
    return FL_OK;
}

FlStatus fl_kernel_lstm_unit_grad(FlErr *e, const FlTensor *x, const FlTensor *c_prev, const FlTensor *c,
                                  const FlTensor *dc, const FlTensor *dh, double forget_bias, FlTensor *dx,
                                  FlTensor *dc_prev) {
    const char *op = "lstm_unit_grad";
    if (kneed_float(e, op, "X", x) || khas(e, op, "C_prev", c_prev) || khas(e, op, "C", c)) return FL_ERROR;
    if (x->ndim != 2 || x->ne[1] % 4 != 0 || x->ne[1] == 0)
        return fl_err(e, "%s: X %s must be [N, 4 * D]", op, fl_tensor_shape(x).s);
    int64_t N = x->ne[0], D = x->ne[1] / 4;
    if (need_mat(e, op, "C_prev", c_prev, x, N, D) || need_mat(e, op, "C", c, x, N, D) ||
        (dc && need_mat(e, op, "C@GRAD", dc, x, N, D)) || (dh && need_mat(e, op, "H@GRAD", dh, x, N, D)))
        return FL_ERROR;
    if (!dx && !dc_prev) return FL_OK;
    FlTensor o[2] = {FL_TENSOR_INIT, FL_TENSOR_INIT};
    if (kalloc_like(e, op, &o[0], x) || kalloc_like(e, op, &o[1], c_prev)) {
        fl_tensor_fini(&o[0]);
        fl_tensor_fini(&o[1]);
        return FL_ERROR;
    }
    if (x->dtype == FL_DT_FLOAT32)
        lstm_unit_bwd_f32(P(x), P(c_prev), P(c), PO(dc), PO(dh), forget_bias, N, D, P(&o[0]), P(&o[1]));
    else
        lstm_unit_bwd_f64(P(x), P(c_prev), P(c), PO(dc), PO(dh), forget_bias, N, D, P(&o[0]), P(&o[1]));
    kout(dx, &o[0]);
    kout(dc_prev, &o[1]);
    return FL_OK;
}

/* gru_unit is gru over N sequences of one row from H0 = HiddenPrev: the offsets 0, 1, .., N. */
static FlStatus unit_offsets(FlErr *e, const char *op, const FlTensor *h_prev, FlTensor *off) {
    if (khas(e, op, "HiddenPrev", h_prev)) return FL_ERROR;
    if (h_prev->ndim != 2) return fl_err(e, "%s: HiddenPrev %s must be [N, D]", op, fl_tensor_shape(h_prev).s);
    int64_t n = h_prev->ne[0] + 1;
    if (kalloc(e, op, off, FL_DT_INT64, 1, &n)) return FL_ERROR;
    int64_t *o = fl_tensor_data(off);
    for (int64_t i = 0; i < n; i++) o[i] = i;
    return FL_OK;
}

FlStatus fl_kernel_gru_unit(FlErr *e, const FlTensor *x, const FlTensor *h_prev, const FlTensor *w, const FlTensor *b,
                            const FlGruAttrs *a, FlTensor *hidden, FlTensor *gate, FlTensor *reset_hidden_prev) {
    FlTensor off = FL_TENSOR_INIT;
    if (unit_offsets(e, "gru_unit", h_prev, &off)) return FL_ERROR;
    FlGruAttrs fwd = *a;
    fwd.reverse = false;
    FlStatus st = FL_OK;
    if (x && x->ndim >= 1 && x->ne[0] != h_prev->ne[0])
        st = fl_err(e, "gru_unit: Input %s and HiddenPrev %s must have the same rows", fl_tensor_shape(x).s,
                    fl_tensor_shape(h_prev).s);
    if (!st)
        st = fl_kernel_gru(e, x, fl_tensor_data(&off), h_prev->ne[0], h_prev, w, b, &fwd, hidden, gate,
                           reset_hidden_prev);
    fl_tensor_fini(&off);
    return st;
}

FlStatus fl_kernel_gru_unit_grad(FlErr *e, const FlTensor *h_prev, const FlTensor *w, const FlTensor *hidden,
                                 const FlTensor *gate, const FlTensor *reset_hidden_prev, const FlTensor *dhidden,
                                 const FlGruAttrs *a, FlTensor *dx, FlTensor *dh_prev, FlTensor *dw, FlTensor *db) {
    FlTensor off = FL_TENSOR_INIT;
    if (unit_offsets(e, "gru_unit_grad", h_prev, &off)) return FL_ERROR;
    FlGruAttrs fwd = *a;
    fwd.reverse = false;
    FlStatus st = FL_OK;
    if (gate && gate->ndim >= 1 && gate->ne[0] != h_prev->ne[0])
        st = fl_err(e, "gru_unit_grad: Gate %s and HiddenPrev %s must have the same rows", fl_tensor_shape(gate).s,
                    fl_tensor_shape(h_prev).s);
    if (!st)
        st = fl_kernel_gru_grad(e, fl_tensor_data(&off), h_prev->ne[0], h_prev, w, hidden, gate, reset_hidden_prev,
                                dhidden, &fwd, dx, dh_prev, dw, db);
    fl_tensor_fini(&off);
    return st;
}
