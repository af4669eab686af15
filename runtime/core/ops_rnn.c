/* ops_rnn.c: adapters of the recurrent ops over sequences, lstm, lstmp and gru, of the one-step cells
 * lstm_unit and gru_unit, and their gradients
 * (kernels in runtime/kernels/kernels_rnn.h; the gradients' slots are their FL_GRAD_SLOTS lines
 * in ops.def). lstm, lstmp and gru read the offsets of Input's sequences from their InputLod slot,
 * checked against Input's rows. */
#include <stdlib.h>

#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_rnn.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

static FlStatus act_attr(const ExecOp *op, const char *name, FlRnnAct *act, FlErr *e) {
    const char *v = fl_exec_attr_string(op, name);
    if (!v || !fl_rnn_act_find(v, act))
        return fl_err(e, "attribute '%s' is '%s'; sigmoid, tanh, relu or identity expected", name, v ? v : "");
    return FL_OK;
}

/* The offsets of the sequences of `x` (rows of x; NULL x: any rows). */
static FlStatus lod_of(OpCall *c, const FlTensor *lod, const FlTensor *x, const int64_t **off, int64_t *nseq) {
    if (!lod) return fl_err(c->e, "input InputLod has no value");
    return fl_exec_check_lod(c->e, lod, x && x->ndim >= 1 ? x->ne[0] : -1, "InputLod", off, nseq);
}

/* ---- lstm ---- */

static FlStatus prep_lstm(ExecOp *op, FlErr *e) {
    FlLstmAttrs *a = fl_xcalloc(1, sizeof *a);
    op->a.extra = a;
    a->peepholes = fl_exec_attr_bool(op, "use_peepholes");
    a->reverse = fl_exec_attr_bool(op, "is_reverse");
    if (act_attr(op, "gate_activation", &a->gate, e) || act_attr(op, "cell_activation", &a->cell, e) ||
        act_attr(op, "candidate_activation", &a->cand, e))
        return FL_ERROR;
    a->proj = FL_RNN_IDENTITY;
    return FL_OK;
}
static FlStatus run_lstm(OpCall *c) {
    const FlTensor *x = IN(FL_IN_lstm_Input);
    const int64_t *off;
    int64_t nseq;
    if (!x) return fl_err(c->e, "input Input has no value");
    if (lod_of(c, IN(FL_IN_lstm_InputLod), x, &off, &nseq)) return FL_ERROR;
    return fl_kernel_lstm(c->e, x, off, nseq, IN(FL_IN_lstm_H0), IN(FL_IN_lstm_C0), IN(FL_IN_lstm_Weight),
                          IN(FL_IN_lstm_Bias), c->op->a.extra,
                          OUT(FL_OUT_lstm_Hidden), OUT(FL_OUT_lstm_Cell), OUT(FL_OUT_lstm_Gate));
}
FL_ADAPTER(lstm, prep_lstm, run_lstm);
/* lstm_grad: Input InputLod H0? C0? Weight Bias Hidden Cell Gate Hidden@GRAD Cell@GRAD
 *         -> Input@GRAD? H0@GRAD? C0@GRAD? Weight@GRAD? Bias@GRAD? */
static FlStatus run_lstm_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_lstm_grad_Input_GRAD), *dw = OUT(FL_OUT_lstm_grad_Weight_GRAD),
             *db = OUT(FL_OUT_lstm_grad_Bias_GRAD), *dh0 = OUT(FL_OUT_lstm_grad_H0_GRAD),
             *dc0 = OUT(FL_OUT_lstm_grad_C0_GRAD);
    if (!dx && !dw && !db && !dh0 && !dc0) return FL_OK;
    const FlTensor *gate = IN(FL_IN_lstm_grad_Gate);
    const int64_t *off;
    int64_t nseq;
    if (!gate) return fl_err(c->e, "input Gate has no value");
    if (lod_of(c, IN(FL_IN_lstm_grad_InputLod), gate, &off, &nseq)) return FL_ERROR;
    return fl_kernel_lstm_grad(c->e, off, nseq, IN(FL_IN_lstm_grad_H0), IN(FL_IN_lstm_grad_C0),
                               IN(FL_IN_lstm_grad_Weight), IN(FL_IN_lstm_grad_Bias), IN(FL_IN_lstm_grad_Hidden),
                               IN(FL_IN_lstm_grad_Cell), gate, IN(FL_IN_lstm_grad_Hidden_GRAD),
                               IN(FL_IN_lstm_grad_Cell_GRAD), c->op->a.extra, dx, dh0, dc0, dw, db);
}
FL_ADAPTER(lstm_grad, prep_lstm, run_lstm_grad);

/* ---- lstmp ---- */

static FlStatus prep_lstmp(ExecOp *op, FlErr *e) {
    if (prep_lstm(op, e)) return FL_ERROR;
    FlLstmAttrs *a = op->a.extra;
    a->cell_clip = fl_exec_attr_float(op, "cell_clip");
    a->proj_clip = fl_exec_attr_float(op, "proj_clip");
    return act_attr(op, "proj_activation", &a->proj, e);
}
static FlStatus run_lstmp(OpCall *c) {
    const FlTensor *x = IN(FL_IN_lstmp_Input);
    const int64_t *off;
    int64_t nseq;
    if (!x) return fl_err(c->e, "input Input has no value");
    if (lod_of(c, IN(FL_IN_lstmp_InputLod), x, &off, &nseq)) return FL_ERROR;
    return fl_kernel_lstmp(c->e, x, off, nseq, IN(FL_IN_lstmp_H0), IN(FL_IN_lstmp_C0), IN(FL_IN_lstmp_Weight),
                           IN(FL_IN_lstmp_ProjWeight), IN(FL_IN_lstmp_Bias), c->op->a.extra, OUT(FL_OUT_lstmp_Projection), OUT(FL_OUT_lstmp_Cell),
                           OUT(FL_OUT_lstmp_Hidden), OUT(FL_OUT_lstmp_Gate));
}
FL_ADAPTER(lstmp, prep_lstmp, run_lstmp);
/* lstmp_grad: Input InputLod H0? C0? Weight ProjWeight Bias Projection Cell Hidden Gate
 *          Projection@GRAD Cell@GRAD -> Input@GRAD? H0@GRAD? C0@GRAD? Weight@GRAD? ProjWeight@GRAD?
 *          Bias@GRAD? */
static FlStatus run_lstmp_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_lstmp_grad_Input_GRAD), *dw = OUT(FL_OUT_lstmp_grad_Weight_GRAD),
             *dpw = OUT(FL_OUT_lstmp_grad_ProjWeight_GRAD), *db = OUT(FL_OUT_lstmp_grad_Bias_GRAD),
             *dh0 = OUT(FL_OUT_lstmp_grad_H0_GRAD), *dc0 = OUT(FL_OUT_lstmp_grad_C0_GRAD);
    if (!dx && !dw && !dpw && !db && !dh0 && !dc0) return FL_OK;
    const FlTensor *gate = IN(FL_IN_lstmp_grad_Gate);
    const int64_t *off;
    int64_t nseq;
    if (!gate) return fl_err(c->e, "input Gate has no value");
    if (lod_of(c, IN(FL_IN_lstmp_grad_InputLod), gate, &off, &nseq)) return FL_ERROR;
    return fl_kernel_lstmp_grad(c->e, off, nseq, IN(FL_IN_lstmp_grad_H0), IN(FL_IN_lstmp_grad_C0),
                                IN(FL_IN_lstmp_grad_Weight), IN(FL_IN_lstmp_grad_ProjWeight), IN(FL_IN_lstmp_grad_Bias),
                                IN(FL_IN_lstmp_grad_Projection), IN(FL_IN_lstmp_grad_Cell), IN(FL_IN_lstmp_grad_Hidden),
                                gate, IN(FL_IN_lstmp_grad_Projection_GRAD), IN(FL_IN_lstmp_grad_Cell_GRAD),
                                c->op->a.extra, dx, dh0, dc0, dw, dpw, db);
}
FL_ADAPTER(lstmp_grad, prep_lstmp, run_lstmp_grad);

/* ---- gru ---- */

/* gru and gru_unit (which has no is_reverse: unit). */
static FlStatus prep_gru_attrs(ExecOp *op, FlErr *e, bool unit) {
    FlGruAttrs *a = fl_xcalloc(1, sizeof *a);
    op->a.extra = a;
    a->reverse = unit ? false : fl_exec_attr_bool(op, "is_reverse");
    a->origin_mode = fl_exec_attr_bool(op, "origin_mode");
    if (act_attr(op, "gate_activation", &a->gate, e) || act_attr(op, "activation", &a->cand, e)) return FL_ERROR;
    return FL_OK;
}
static FlStatus prep_gru(ExecOp *op, FlErr *e) { return prep_gru_attrs(op, e, false); }
static FlStatus prep_gru_unit(ExecOp *op, FlErr *e) { return prep_gru_attrs(op, e, true); }
static FlStatus run_gru(OpCall *c) {
    const FlTensor *x = IN(FL_IN_gru_Input);
    const int64_t *off;
    int64_t nseq;
    if (!x) return fl_err(c->e, "input Input has no value");
    if (lod_of(c, IN(FL_IN_gru_InputLod), x, &off, &nseq)) return FL_ERROR;
    return fl_kernel_gru(c->e, x, off, nseq, IN(FL_IN_gru_H0), IN(FL_IN_gru_Weight), IN(FL_IN_gru_Bias),
                         c->op->a.extra, OUT(FL_OUT_gru_Hidden), OUT(FL_OUT_gru_Gate),
                         OUT(FL_OUT_gru_ResetHiddenPrev));
}
FL_ADAPTER(gru, prep_gru, run_gru);
/* gru_grad: Input InputLod H0? Weight Bias? Hidden Gate ResetHiddenPrev Hidden@GRAD
 *        -> Input@GRAD? H0@GRAD? Weight@GRAD? Bias@GRAD? */
static FlStatus run_gru_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_gru_grad_Input_GRAD), *dh0 = OUT(FL_OUT_gru_grad_H0_GRAD),
             *dw = OUT(FL_OUT_gru_grad_Weight_GRAD), *db = OUT(FL_OUT_gru_grad_Bias_GRAD);
    if (!dx && !dh0 && !dw && !db) return FL_OK;
    const FlTensor *gate = IN(FL_IN_gru_grad_Gate);
    const int64_t *off;
    int64_t nseq;
    if (!gate) return fl_err(c->e, "input Gate has no value");
    if (lod_of(c, IN(FL_IN_gru_grad_InputLod), gate, &off, &nseq)) return FL_ERROR;
    return fl_kernel_gru_grad(c->e, off, nseq, IN(FL_IN_gru_grad_H0), IN(FL_IN_gru_grad_Weight),
                              IN(FL_IN_gru_grad_Hidden), gate, IN(FL_IN_gru_grad_ResetHiddenPrev),
                              IN(FL_IN_gru_grad_Hidden_GRAD), c->op->a.extra, dx, dh0, dw, db);
}
FL_ADAPTER(gru_grad, prep_gru, run_gru_grad);

/* ---- lstm_unit, gru_unit: one step of a dense batch ---- */

static FlStatus prep_lstm_unit(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.f[0] = fl_exec_attr_float(op, "forget_bias");
    return FL_OK;
}
static FlStatus run_lstm_unit(OpCall *c) {
    return fl_kernel_lstm_unit(c->e, IN(FL_IN_lstm_unit_X), IN(FL_IN_lstm_unit_C_prev), c->op->a.f[0],
                               OUT(FL_OUT_lstm_unit_C), OUT(FL_OUT_lstm_unit_H));
}
FL_ADAPTER(lstm_unit, prep_lstm_unit, run_lstm_unit);
/* lstm_unit_grad: X C_prev C H C@GRAD H@GRAD -> X@GRAD? C_prev@GRAD? */
static FlStatus run_lstm_unit_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_lstm_unit_grad_X_GRAD), *dcp = OUT(FL_OUT_lstm_unit_grad_C_prev_GRAD);
    if (!dx && !dcp) return FL_OK;
    return fl_kernel_lstm_unit_grad(c->e, IN(FL_IN_lstm_unit_grad_X), IN(FL_IN_lstm_unit_grad_C_prev),
                                    IN(FL_IN_lstm_unit_grad_C), IN(FL_IN_lstm_unit_grad_C_GRAD),
                                    IN(FL_IN_lstm_unit_grad_H_GRAD), c->op->a.f[0], dx, dcp);
}
FL_ADAPTER(lstm_unit_grad, prep_lstm_unit, run_lstm_unit_grad);

static FlStatus run_gru_unit(OpCall *c) {
    return fl_kernel_gru_unit(c->e, IN(FL_IN_gru_unit_Input), IN(FL_IN_gru_unit_HiddenPrev), IN(FL_IN_gru_unit_Weight),
                              IN(FL_IN_gru_unit_Bias), c->op->a.extra, OUT(FL_OUT_gru_unit_Hidden),
                              OUT(FL_OUT_gru_unit_Gate), OUT(FL_OUT_gru_unit_ResetHiddenPrev));
}
FL_ADAPTER(gru_unit, prep_gru_unit, run_gru_unit);
/* gru_unit_grad: Input HiddenPrev Weight Bias? Gate ResetHiddenPrev Hidden Hidden@GRAD
 *             -> Input@GRAD? HiddenPrev@GRAD? Weight@GRAD? Bias@GRAD? */
static FlStatus run_gru_unit_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_gru_unit_grad_Input_GRAD), *dh = OUT(FL_OUT_gru_unit_grad_HiddenPrev_GRAD),
             *dw = OUT(FL_OUT_gru_unit_grad_Weight_GRAD), *db = OUT(FL_OUT_gru_unit_grad_Bias_GRAD);
    if (!dx && !dh && !dw && !db) return FL_OK;
    return fl_kernel_gru_unit_grad(c->e, IN(FL_IN_gru_unit_grad_HiddenPrev), IN(FL_IN_gru_unit_grad_Weight),
                                   IN(FL_IN_gru_unit_grad_Hidden), IN(FL_IN_gru_unit_grad_Gate),
                                   IN(FL_IN_gru_unit_grad_ResetHiddenPrev), IN(FL_IN_gru_unit_grad_Hidden_GRAD),
                                   c->op->a.extra, dx, dh, dw, db);
}
FL_ADAPTER(gru_unit_grad, prep_gru_unit, run_gru_unit_grad);
