/* infer_rnn.c: shape rules of the recurrent ops over sequences (lstm, lstmp, gru) and of the
 * one-step cells lstm_unit and gru_unit (adapters in runtime/core/ops_rnn.c; kernels in
 * runtime/kernels/rnn.c). */
#include "compiler/infer_impl.h"

static FlStatus rnn_act(Ctx *c, const char *name) {
    const char *v = sattr(c, name);
    if (strcmp(v, "sigmoid") == 0 || strcmp(v, "tanh") == 0 || strcmp(v, "relu") == 0 || strcmp(v, "identity") == 0)
        return FL_OK;
    return fl_err(c->e, "%s: %s '%s' is not one of sigmoid, tanh, relu, identity", c->t, name, v);
}

/* A [rows, cols] input of the dtype of Input (rows < 0: any). */
static FlStatus rnn_mat(Ctx *c, const char *slot, const FlVarDesc *v, const FlVarDesc *xv, int64_t rows,
                        int64_t cols) {
    Shape s = shape_of(v);
    if (v->dtype != xv->dtype || s.nd != 2 || !dims_agree(s.d[0], rows) || !dims_agree(s.d[1], cols))
        return fl_err(c->e, "%s: %s must be %s [%lld, %lld], found %s %s", c->t, slot, dt(xv->dtype),
                      (long long)rows, (long long)cols, dt(v->dtype), sstr(c, &s));
    return FL_OK;
}

/* lstm, lstmp (4 gates) and gru (3): Input [T, gates * D] cut by InputLod, Weight [D, gates * D]
 * (lstmp: ProjWeight [D, P], Weight [P, 4D]). */
FlStatus fl_infer_rnn(Ctx *c, int gates) {
    FlVarDesc *xv, *lv, *wv, *bv, *hv = NULL, *cv = NULL;
    if (in1(c, "Input", &xv) || in1(c, "InputLod", &lv) || in1(c, "Weight", &wv) || in_opt(c, "Bias", &bv))
        return FL_ERROR;
    if (in_opt(c, "H0", &hv)) return FL_ERROR;
    if (gates == 4 && in_opt(c, "C0", &cv)) return FL_ERROR;
    if (need_float(c, "the input", xv)) return FL_ERROR;
    Shape x = shape_of(xv), l = shape_of(lv);
    if (x.nd != 2 || x.d[1] <= 0 || x.d[1] % gates != 0)
        return fl_err(c->e, "%s: the input must be [T, %d * D] with D known, found %s", c->t, gates, sstr(c, &x));
    if (lv->dtype != FL_DT_INT64 || l.nd != 1)
        return fl_err(c->e, "%s: InputLod must be the int64 offsets [nseq + 1] of the input's sequences, found %s %s",
                      c->t, dt(lv->dtype), sstr(c, &l));
    int64_t D = x.d[1] / gates;
    FlVarDesc *pv = NULL;
    if (c->info->id == FL_OPID_lstmp && in1(c, "ProjWeight", &pv)) return FL_ERROR;
    int64_t P = pv && pv->ndim == 2 ? pv->shape[1] : D;
    if (pv && (P <= 0 || rnn_mat(c, "ProjWeight", pv, xv, D, P)))
        return fl_err(c->e, "%s: ProjWeight must be %s [%lld, P] with P known", c->t, dt(xv->dtype), (long long)D);
    if (rnn_mat(c, "Weight", wv, xv, pv ? P : D, gates * D)) return FL_ERROR;
    if (gates == 4 && !bv) return fl_err(c->e, "%s: missing input Bias", c->t);
    int64_t bcols = gates == 4 && iattr(c, "use_peepholes") ? 7 * D : gates * D;
    if (bv && rnn_mat(c, "Bias", bv, xv, 1, bcols)) return FL_ERROR;
    if (hv && rnn_mat(c, "H0", hv, xv, l.d[0] < 0 ? -1 : l.d[0] - 1, P)) return FL_ERROR;
    if (pv && (fattr(c, "cell_clip") < 0 || fattr(c, "proj_clip") < 0))
        return fl_err(c->e, "%s: cell_clip and proj_clip must be >= 0 (0: no clipping), found %g and %g", c->t,
                      fattr(c, "cell_clip"), fattr(c, "proj_clip"));
    if (cv && rnn_mat(c, "C0", cv, xv, l.d[0] < 0 ? -1 : l.d[0] - 1, D)) return FL_ERROR;
    if (rnn_act(c, "gate_activation") ||
        (gates == 4 ? rnn_act(c, "cell_activation") || rnn_act(c, "candidate_activation")
                    : rnn_act(c, "activation")) ||
        (pv && rnn_act(c, "proj_activation")))
        return FL_ERROR;
    Shape h = {.nd = 2, .d = {x.d[0], D}}, r = {.nd = 2, .d = {x.d[0], P}};
    if (set_out(c, "Projection", xv->dtype, &r)) return FL_ERROR;
    return set_out(c, "Hidden", xv->dtype, &h) || set_out(c, "Cell", xv->dtype, &h) ||
                   set_out(c, "ResetHiddenPrev", xv->dtype, &h) || set_like(c, "Gate", xv)
               ? FL_ERROR
               : FL_OK;
}

/* lstm_unit: X [N, 4D], C_prev [N, D]; gru_unit: Input [N, 3D], HiddenPrev [N, D], Weight
 * [D, 3D], Bias [1, 3D]. */
FlStatus fl_infer_rnn_unit(Ctx *c, bool gru) {
    FlVarDesc *xv, *pv, *wv = NULL, *bv = NULL;
    if (in1(c, gru ? "Input" : "X", &xv) || in1(c, gru ? "HiddenPrev" : "C_prev", &pv)) return FL_ERROR;
    if (gru && (in1(c, "Weight", &wv) || in_opt(c, "Bias", &bv))) return FL_ERROR;
    if (need_float(c, "the input", xv)) return FL_ERROR;
    int gates = gru ? 3 : 4;
    Shape x = shape_of(xv);
    if (x.nd != 2 || x.d[1] <= 0 || x.d[1] % gates != 0)
        return fl_err(c->e, "%s: the input must be [N, %d * D] with D known, found %s", c->t, gates, sstr(c, &x));
    int64_t D = x.d[1] / gates;
    if (rnn_mat(c, gru ? "HiddenPrev" : "C_prev", pv, xv, x.d[0], D) ||
        (wv && rnn_mat(c, "Weight", wv, xv, D, 3 * D)) || (bv && rnn_mat(c, "Bias", bv, xv, 1, 3 * D)))
        return FL_ERROR;
    if (gru && (rnn_act(c, "gate_activation") || rnn_act(c, "activation"))) return FL_ERROR;
    Shape h = {.nd = 2, .d = {merge(x.d[0], pv->shape[0]), D}};
    return set_out(c, "Hidden", xv->dtype, &h) || set_out(c, "ResetHiddenPrev", xv->dtype, &h) ||
                   set_out(c, "C", xv->dtype, &h) || set_out(c, "H", xv->dtype, &h) || set_like(c, "Gate", xv)
               ? FL_ERROR
               : FL_OK;
}
