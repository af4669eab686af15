/* infer_ctc.c: shape rules of the CTC ops warpctc, ctc_align, edit_distance and sequence_erase
 * (adapters in runtime/core/ops_ctc.c; kernels in runtime/kernels/ctc.c). */
#include "compiler/infer_impl.h"

/* An int ids var: [T, 1] or [T]. */
static FlStatus ctc_ids(Ctx *c, const char *slot, FlVarDesc **v) {
    if (in1(c, slot, v) || need_int_in(c, *v, slot)) return FL_ERROR;
    Shape s = shape_of(*v);
    if (!((s.nd == 2 && dims_agree(s.d[1], 1)) || s.nd == 1))
        return fl_err(c->e, "%s: %s must be [T, 1] (an id per row), found %s", c->t, slot, sstr(c, &s));
    return FL_OK;
}

/* ids out of a filter: [-1, 1] of the input's dtype, and their offsets */
static FlStatus filtered(Ctx *c, const char *in, const char *lod, const char *out, const char *outlod) {
    FlVarDesc *x;
    if (ctc_ids(c, in, &x) || need_offsets(c, lod, false)) return FL_ERROR;
    Shape o = {.nd = 2, .d = {-1, 1}}, l = shape1(-1);
    return set_out(c, out, x->dtype, &o) || set_out(c, outlod, FL_DT_INT64, &l) ? FL_ERROR : FL_OK;
}

FlStatus fl_infer_warpctc(Ctx *c) {
    FlVarDesc *x, *lab;
    if (in1(c, "Logits", &x) || need_float_in(c, x, "Logits") || ctc_ids(c, "Label", &lab) ||
        need_offsets(c, "LogitsLod", false) || need_offsets(c, "LabelLod", false))
        return FL_ERROR;
    Shape xs = shape_of(x);
    if (xs.nd != 2 || xs.d[1] == 0)
        return fl_err(c->e, "%s: Logits must be [T, C] (a score per frame and class), found %s", c->t, sstr(c, &xs));
    int64_t blank = iattr(c, "blank");
    if (blank < 0 || (xs.d[1] > 0 && blank >= xs.d[1]))
        return fl_err(c->e, "%s: blank %lld is outside the classes [0, %lld) of Logits %s", c->t, (long long)blank,
                      (long long)xs.d[1], sstr(c, &xs));
    Shape l = {.nd = 2, .d = {-1, 1}};
    return set_like(c, "WarpCTCGrad", x) || set_out(c, "Loss", x->dtype, &l) ? FL_ERROR : FL_OK;
}

FlStatus fl_infer_ctc_align(Ctx *c) { return filtered(c, "Input", "InputLod", "Output", "OutputLod"); }

FlStatus fl_infer_sequence_erase(Ctx *c) { return filtered(c, "X", "XLod", "Out", "OutLod"); }

FlStatus fl_infer_edit_distance(Ctx *c) {
    FlVarDesc *h, *r;
    if (ctc_ids(c, "Hyps", &h) || ctc_ids(c, "Refs", &r) || need_offsets(c, "HypsLod", false) ||
        need_offsets(c, "RefsLod", false))
        return FL_ERROR;
    Shape o = {.nd = 2, .d = {-1, 1}}, one = shape1(1);
    return set_out(c, "Out", FL_DT_FLOAT32, &o) || set_out(c, "SequenceNum", FL_DT_INT64, &one) ? FL_ERROR : FL_OK;
}
