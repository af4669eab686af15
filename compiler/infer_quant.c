/* infer_quant.c: the shape rules of the simulated quantization ops (compiler/ops/quant.def;
 * adapters runtime/core/ops_quant.c, kernels runtime/kernels/quant.c). They check what Fluid's
 * InferShape and attribute checkers check (bit_length 1 to 16, the scale vars [1]), so a mistake
 * is a compile error at the line that made the op. */
#include "compiler/infer_impl.h"

static FlStatus bits(Ctx *c) {
    int64_t b = iattr(c, "bit_length");
    if (b < 1 || b > 16) return fl_err(c->e, "%s: bit_length must be 1 to 16, found %lld", c->t, (long long)b);
    return FL_OK;
}

/* A float input of X's dtype holding one value (a scale, a state). */
static FlStatus one_value(Ctx *c, const char *slot, const FlVarDesc *x, bool optional) {
    FlVarDesc *v;
    if (optional ? in_opt(c, slot, &v) : in1(c, slot, &v)) return FL_ERROR;
    if (!v) return FL_OK;
    Shape s = shape_of(v);
    if (v->dtype != x->dtype || prod(&s, 0, s.nd) > 1 || s.nd > 1)
        return fl_err(c->e, "%s: %s must be %s [1], found %s %s", c->t, slot, dt(x->dtype), dt(v->dtype), sstr(c, &s));
    return FL_OK;
}

/* Out like X, OutScale [1]. */
static FlStatus quant_outs(Ctx *c, const FlVarDesc *x) {
    Shape one = shape1(1);
    return set_like(c, "Out", x) || set_out(c, "OutScale", x->dtype, &one) ? FL_ERROR : FL_OK;
}

FlStatus fl_infer_fake_quantize_abs_max(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x) || need_float(c, "X", x) || bits(c)) return FL_ERROR;
    return quant_outs(c, x);
}

FlStatus fl_infer_fake_quantize_range_abs_max(Ctx *c) {
    FlVarDesc *x, *it;
    if (in1(c, "X", &x) || need_float(c, "X", x) || bits(c) || one_value(c, "InScale", x, false) ||
        in_opt(c, "Iter", &it))
        return FL_ERROR;
    int64_t w = iattr(c, "window_size");
    if (w < 1) return fl_err(c->e, "%s: window_size must be >= 1, found %lld", c->t, (long long)w);
    bool test = fl_ir_op_get_bool(c->op, "is_test", false);
    bool scales = fl_ir_op_output1(c->op, "OutScales") && fl_ir_op_input1(c->op, "InScales");
    if (!test && (!it || !scales))
        return fl_err(c->e, "%s: training (is_test=False) needs the step Iter and the window InScales and OutScales",
                      c->t);
    FlVarDesc *win;
    if (in_opt(c, "InScales", &win)) return FL_ERROR;
    Shape wv = win ? shape_of(win) : shape1(w);
    if (win && (win->dtype != x->dtype || wv.nd != 1 || !dims_agree(wv.d[0], w)))
        return fl_err(c->e, "%s: InScales must be %s [%lld] (window_size), found %s %s", c->t, dt(x->dtype),
                      (long long)w, dt(win->dtype), sstr(c, &wv));
    if (it && (it->dtype != FL_DT_INT64 && it->dtype != FL_DT_INT32))
        return fl_err(c->e, "%s: Iter must be an int64 step counter, found %s", c->t, dt(it->dtype));
    Shape ws = shape1(w);
    if (set_out(c, "OutScales", x->dtype, &ws)) return FL_ERROR;
    return quant_outs(c, x);
}

FlStatus fl_infer_fake_quantize_moving_average_abs_max(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x) || need_float(c, "X", x) || bits(c) || one_value(c, "InScale", x, false) ||
        one_value(c, "InAccum", x, true) || one_value(c, "InState", x, true))
        return FL_ERROR;
    bool test = fl_ir_op_get_bool(c->op, "is_test", false);
    bool full = fl_ir_op_input1(c->op, "InAccum") && fl_ir_op_input1(c->op, "InState") &&
                fl_ir_op_output1(c->op, "OutAccum") && fl_ir_op_output1(c->op, "OutState");
    if (!test && !full)
        return fl_err(c->e, "%s: training (is_test=False) needs InAccum, InState, OutAccum and OutState", c->t);
    Shape one = shape1(1);
    if (set_out(c, "OutState", x->dtype, &one) || set_out(c, "OutAccum", x->dtype, &one)) return FL_ERROR;
    return quant_outs(c, x);
}

FlStatus fl_infer_fake_dequantize_max_abs(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x) || need_float(c, "X", x) || one_value(c, "Scale", x, false)) return FL_ERROR;
    double r = fattr(c, "max_range");
    if (!(r > 0)) return fl_err(c->e, "%s: max_range must be > 0, found %g", c->t, r);
    return set_like(c, "Out", x);
}
