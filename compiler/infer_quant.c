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

/* ---- int8 inference (compiler/ops/quant_int8.def) ---- */

static bool is_int8(FlDType t) { return t == FL_DT_INT8 || t == FL_DT_UINT8; }

/* A float32 scale input of one value. */
static FlStatus scale1(Ctx *c, const char *slot) {
    FlVarDesc *v;
    if (in1(c, slot, &v)) return FL_ERROR;
    Shape s = shape_of(v);
    if (v->dtype != FL_DT_FLOAT32 || s.nd > 1 || prod(&s, 0, s.nd) > 1)
        return fl_err(c->e, "%s: %s must be float32 [1], found %s %s", c->t, slot, dt(v->dtype), sstr(c, &s));
    return FL_OK;
}

static FlStatus need_int8(Ctx *c, const char *slot, const FlVarDesc *v) {
    if (is_int8(v->dtype)) return FL_OK;
    return fl_err(c->e, "%s: %s must be int8 or uint8 (a quantize op's output), found %s", c->t, slot, dt(v->dtype));
}

FlStatus fl_infer_quantize(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "Input", &x) || scale1(c, "Scale")) return FL_ERROR;
    if (x->dtype != FL_DT_FLOAT32)
        return fl_err(c->e, "%s: Input must be float32, found %s", c->t, dt(x->dtype));
    Shape s = shape_of(x);
    return set_out(c, "Output", fl_ir_op_get_bool(c->op, "is_negative_input", false) ? FL_DT_INT8 : FL_DT_UINT8, &s);
}

FlStatus fl_infer_dequantize(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "Input", &x) || need_int8(c, "Input", x) || scale1(c, "Scale")) return FL_ERROR;
    Shape s = shape_of(x);
    return set_out(c, "Output", FL_DT_FLOAT32, &s);
}

FlStatus fl_infer_requantize(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "Input", &x) || need_int8(c, "Input", x) || scale1(c, "Scale_in") || scale1(c, "Scale_out"))
        return FL_ERROR;
    return set_like(c, "Output", x);
}

FlStatus fl_infer_conv2d_int8(Ctx *c) {
    FlVarDesc *iv, *fv, *bv, *wv;
    if (in1(c, "Input", &iv) || need_int8(c, "Input", iv) || in1(c, "Filter", &fv) || in_opt(c, "Bias", &bv) ||
        scale1(c, "Scale_in") || in1(c, "Scale_weights", &wv))
        return FL_ERROR;
    if (fv->dtype != FL_DT_FLOAT32)
        return fl_err(c->e, "%s: Filter must be float32 (quantized per output channel by Scale_weights), found %s",
                      c->t, dt(fv->dtype));
    Shape out;
    if (fl_infer_conv2d_shape(c, iv, fv, &out)) return FL_ERROR;
    Shape ws = shape_of(wv), want = shape1(out.d[1]);
    if (wv->dtype != FL_DT_FLOAT32 || ws.nd != 1 || !dims_agree(ws.d[0], out.d[1]))
        return fl_err(c->e, "%s: Scale_weights must be float32 %s (one scale per output channel), found %s %s", c->t,
                      sstr(c, &want), dt(wv->dtype), sstr(c, &ws));
    if (bv) {
        Shape bs = shape_of(bv);
        if (bv->dtype != FL_DT_FLOAT32 || bs.nd != 1 || !dims_agree(bs.d[0], out.d[1]))
            return fl_err(c->e, "%s: Bias must be float32 %s (one per output channel), found %s %s", c->t,
                          sstr(c, &want), dt(bv->dtype), sstr(c, &bs));
    }
    bool fp32 = fl_ir_op_get_bool(c->op, "force_fp32_output", false);
    bool has_out = fl_ir_op_input1(c->op, "Scale_out") != NULL;
    if (!fp32 && !has_out)
        return fl_err(c->e, "%s: an int8 output needs Scale_out (or force_fp32_output=True)", c->t);
    if (has_out && scale1(c, "Scale_out")) return FL_ERROR;
    return set_out(c, "Output", fp32 ? FL_DT_FLOAT32 : FL_DT_INT8, &out);
}

static FlStatus algo(Ctx *c) {
    const char *a = sattr(c, "algo");
    if (strcmp(a, "direct") != 0 && strcmp(a, "KL") != 0)
        return fl_err(c->e, "%s: algo must be 'direct' or 'KL', found '%s'", c->t, a);
    return FL_OK;
}

static FlStatus count1(Ctx *c) {
    FlVarDesc *v;
    if (in1(c, "Count", &v)) return FL_ERROR;
    Shape s = shape_of(v);
    if (fl_dtype_is_storage(v->dtype) || v->dtype == FL_DT_BOOL || s.nd > 1 || prod(&s, 0, s.nd) > 1)
        return fl_err(c->e, "%s: Count must be a number [1], found %s %s", c->t, dt(v->dtype), sstr(c, &s));
    return FL_OK;
}

FlStatus fl_infer_calib_sample(Ctx *c) {
    FlVarDesc *x, *st;
    if (in1(c, "X", &x) || in1(c, "Stat", &st) || count1(c) || algo(c)) return FL_ERROR;
    if (x->dtype != FL_DT_FLOAT32 || st->dtype != FL_DT_FLOAT32)
        return fl_err(c->e, "%s: X and Stat must be float32, found %s and %s", c->t, dt(x->dtype), dt(st->dtype));
    Shape s = strcmp(sattr(c, "algo"), "direct") == 0 ? shape1(1) : shape1(-1);
    return set_out(c, "Out", FL_DT_FLOAT32, &s);
}

FlStatus fl_infer_calib_scale(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x) || count1(c) || algo(c)) return FL_ERROR;
    if (x->dtype != FL_DT_FLOAT32) return fl_err(c->e, "%s: X must be float32, found %s", c->t, dt(x->dtype));
    double r = fattr(c, "max_range");
    if (!(r > 0)) return fl_err(c->e, "%s: max_range must be > 0, found %g", c->t, r);
    Shape xs = shape_of(x), s = shape1(1);
    if (fl_ir_op_get_bool(c->op, "per_channel", false)) {
        if (strcmp(sattr(c, "algo"), "direct") != 0)
            return fl_err(c->e, "%s: per_channel scales are by algo 'direct' (the weights' max), found '%s'", c->t,
                          sattr(c, "algo"));
        if (xs.nd < 1) return fl_err(c->e, "%s: per_channel needs X with a dim 0, found %s", c->t, sstr(c, &xs));
        s = shape1(xs.d[0]);
    }
    return set_out(c, "Out", FL_DT_FLOAT32, &s);
}
