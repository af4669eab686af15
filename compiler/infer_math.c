/* infer_math.c: shape rules of the creation, copy, elementwise, comparison, logic and increment
 * ops (adapters in runtime/core/ops_math.c; kernels in runtime/kernels/fill.c, elementwise.c,
 * activation.c, and increment's in shape.c). The unary activations and scale keep X's shape: the
 * dispatch passes them through (infer.c). */
#include "compiler/infer_impl.h"

/* ---- constants and copies ---- */

FlStatus fl_infer_fill(Ctx *c) {
    size_t n;
    bool ok;
    const int64_t *dims = intsattr(c, "shape", &n, &ok);
    if (!ok) return FL_ERROR;
    if (n > FL_IR_MAX_DIMS)
        return fl_err(c->e, "%s: shape has %zu dims (at most %d)", c->t, n, FL_IR_MAX_DIMS);
    Shape s = {.nd = (int)n};
    for (size_t i = 0; i < n; i++) {
        if (dims[i] < -1 || dims[i] == 0)
            return fl_err(c->e, "%s: shape dim %zu is %lld (expected a positive size or -1)", c->t,
                          i, (long long)dims[i]);
        s.d[i] = dims[i];
    }
    FlDType t = (FlDType)iattr(c, "dtype");
    if (check_dtype(c, t)) return FL_ERROR;
    return set_out(c, "Out", t, &s);
}

FlStatus fl_infer_assign_value(Ctx *c) {
    if (fl_infer_fill(c)) return FL_ERROR;
    const FlAttr *a = fl_ir_op_attr(c->op, "values");
    if (!a || a->type != FL_ATTR_FLOATS) return fl_err(c->e, "%s: attribute 'values' must be a list of numbers", c->t);
    size_t n;
    bool ok;
    const int64_t *dims = intsattr(c, "shape", &n, &ok);
    int64_t numel = 1;
    for (size_t i = 0; i < n; i++) {
        if (dims[i] < 0 || numel > INT64_MAX / (dims[i] ? dims[i] : 1))
            return fl_err(c->e, "%s: shape dim %zu is %lld (a known size is needed)", c->t, i, (long long)dims[i]);
        numel *= dims[i];
    }
    if ((size_t)numel != a->n)
        return fl_err(c->e, "%s: shape holds %lld values but %zu are given", c->t, (long long)numel, a->n);
    return FL_OK;
}

FlStatus fl_infer_cast(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x)) return FL_ERROR;
    FlDType t = (FlDType)iattr(c, "out_dtype");
    if (check_dtype(c, t)) return FL_ERROR;
    Shape s = shape_of(x);
    return set_out(c, "Out", t, &s);
}

/* ---- elementwise ---- */

static FlStatus broadcast_xy(Ctx *c, const FlVarDesc *xv, const FlVarDesc *yv, Shape *out) {
    Shape x = shape_of(xv), y = shape_of(yv);
    int64_t axis = fl_ir_op_attr(c->op, "axis") ? iattr(c, "axis") : -1;
    if (axis == -1) {
        if (!broadcast(&x, &y, out))
            return fl_err(c->e, "%s: shapes %s and %s cannot be broadcast", c->t, sstr(c, &x),
                          sstr(c, &y));
        return FL_OK;
    }
    /* Paddle's rule: Y (without trailing 1s) matches the dims of X starting at axis. */
    int ny = y.nd;
    while (ny > 0 && y.d[ny - 1] == 1) ny--;
    if (axis < 0 || axis > x.nd - ny)
        return fl_err(c->e, "%s: axis %lld is out of range for shapes %s and %s", c->t,
                      (long long)axis, sstr(c, &x), sstr(c, &y));
    for (int i = 0; i < ny; i++)
        if (y.d[i] != 1 && !dims_agree(x.d[axis + i], y.d[i]))
            return fl_err(c->e, "%s: shapes %s and %s cannot be broadcast at axis %lld", c->t,
                          sstr(c, &x), sstr(c, &y), (long long)axis);
    *out = x;
    return FL_OK;
}

FlStatus fl_infer_binary(Ctx *c, bool logical_out) {
    FlVarDesc *xv, *yv;
    if (in1(c, "X", &xv) || in1(c, "Y", &yv)) return FL_ERROR;
    if (xv->dtype != yv->dtype)
        return fl_err(c->e, "dtype mismatch: %s and %s", dt(xv->dtype), dt(yv->dtype));
    Shape out;
    if (broadcast_xy(c, xv, yv, &out)) return FL_ERROR;
    return set_out(c, "Out", logical_out ? FL_DT_BOOL : xv->dtype, &out);
}

FlStatus fl_infer_logical(Ctx *c, bool unary) {
    FlVarDesc *xv, *yv = NULL;
    if (in1(c, "X", &xv) || (!unary && in1(c, "Y", &yv))) return FL_ERROR;
    if (xv->dtype != FL_DT_BOOL || (yv && yv->dtype != FL_DT_BOOL))
        return fl_err(c->e, "%s: operands must be bool, found %s", c->t,
                      dt(xv->dtype != FL_DT_BOOL ? xv->dtype : yv->dtype));
    if (unary) {
        Shape s = shape_of(xv);
        return set_out(c, "Out", FL_DT_BOOL, &s);
    }
    Shape x = shape_of(xv), y = shape_of(yv), out;
    if (!broadcast(&x, &y, &out))
        return fl_err(c->e, "%s: shapes %s and %s cannot be broadcast", c->t, sstr(c, &x),
                      sstr(c, &y));
    return set_out(c, "Out", FL_DT_BOOL, &out);
}

/* ---- increment ---- */

FlStatus fl_infer_increment(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    int64_t n = prod(&x, 0, x.nd);
    if (n > 1)
        return fl_err(c->e, "%s: X must have one element, found shape %s", c->t, sstr(c, &x));
    return set_like(c, "Out", xv);
}
