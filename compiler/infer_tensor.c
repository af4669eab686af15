/* infer_tensor.c: shape rules of the tensor family (compiler/ops/tensor.def: cumsum, reverse,
 * argmin, argsort, isinf / isnan / isfinite, diag, where, shape and the small losses log_loss,
 * huber_loss, kldiv_loss; adapters runtime/core/ops_tensor.c, kernels runtime/kernels/tensor.c).
 * Each checks what Fluid's InferShape checks, so that a mistake is a compile error at the
 * layer's line. */
#include <string.h>

#include "compiler/infer_impl.h"

static FlStatus need_num_in(Ctx *c, const FlVarDesc *v, const char *slot) {
    if (is_float(v->dtype) || v->dtype == FL_DT_INT32 || v->dtype == FL_DT_INT64) return FL_OK;
    return fl_err(c->e, "%s: %s must be float32, float64, int32 or int64, found %s", c->t, slot, dt(v->dtype));
}

/* A numeric X of rank >= 1 and its axis attribute in range: *axis normalised. */
static FlStatus x_axis(Ctx *c, FlVarDesc **x, Shape *s, int *axis) {
    if (in1(c, "X", x) || need_num_in(c, *x, "X")) return FL_ERROR;
    *s = shape_of(*x);
    if (s->nd == 0) return fl_err(c->e, "%s: X has no dims", c->t);
    return norm_axis(c, iattr(c, "axis"), s->nd, s, axis);
}

FlStatus fl_infer_cumsum(Ctx *c) {
    FlVarDesc *x;
    Shape s;
    int axis;
    if (x_axis(c, &x, &s, &axis)) return FL_ERROR;
    return set_like(c, "Out", x);
}

FlStatus fl_infer_argsort(Ctx *c) {
    FlVarDesc *x;
    Shape s;
    int axis;
    if (x_axis(c, &x, &s, &axis)) return FL_ERROR;
    return set_like(c, "Out", x) || set_out(c, "Indices", FL_DT_INT64, &s) ? FL_ERROR : FL_OK;
}

FlStatus fl_infer_argmin(Ctx *c) {
    FlVarDesc *x;
    Shape s, out = {0};
    int axis;
    if (x_axis(c, &x, &s, &axis)) return FL_ERROR;
    for (int i = 0; i < s.nd; i++)
        if (i != axis) out.d[out.nd++] = s.d[i];
    if (out.nd == 0) out = shape1(1);
    return set_out(c, "Out", FL_DT_INT64, &out);
}

FlStatus fl_infer_reverse(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x) || need_num_in(c, x, "X")) return FL_ERROR;
    Shape s = shape_of(x);
    size_t n;
    bool ok;
    const int64_t *ax = intsattr(c, "axis", &n, &ok);
    if (!ok) return FL_ERROR;
    if (n == 0) return fl_err(c->e, "%s: axis must name at least one dim", c->t);
    for (size_t i = 0; i < n; i++) {
        int a;
        if (norm_axis(c, ax[i], s.nd, &s, &a)) return FL_ERROR;
    }
    return set_like(c, "Out", x);
}

/* isinf, isnan, isfinite: one bool of any numeric X. */
FlStatus fl_infer_value_test(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x) || need_num_in(c, x, "X")) return FL_ERROR;
    Shape one = shape1(1);
    return set_out(c, "Out", FL_DT_BOOL, &one);
}

FlStatus fl_infer_diag(Ctx *c) {
    FlVarDesc *d;
    if (in1(c, "Diagonal", &d) || need_num_in(c, d, "Diagonal")) return FL_ERROR;
    Shape s = shape_of(d);
    if (s.nd != 1) return fl_err(c->e, "%s: Diagonal must have rank 1, found %s", c->t, sstr(c, &s));
    Shape o = {.nd = 2, .d = {s.d[0], s.d[0]}};
    return set_out(c, "Out", d->dtype, &o);
}

/* One number of slot `slot` (its numel 1, or unknown); *v its desc. */
static FlStatus one_number(Ctx *c, const char *slot, FlVarDesc **v) {
    if (in1(c, slot, v) || need_num_in(c, *v, slot)) return FL_ERROR;
    Shape s = shape_of(*v);
    int64_t n = prod(&s, 0, s.nd);
    if (n == 1 || n == -1) return FL_OK;
    return fl_err(c->e, "%s: %s must hold one number, found %s", c->t, slot, sstr(c, &s));
}

FlStatus fl_infer_range(Ctx *c) {
    FlVarDesc *v[3];
    const char *slots[3] = {"Start", "End", "Step"};
    for (int i = 0; i < 3; i++) {
        if (one_number(c, slots[i], &v[i])) return FL_ERROR;
        if (v[i]->dtype != v[0]->dtype)
            return fl_err(c->e, "%s: Start, End and Step must have one dtype, found %s and %s", c->t,
                          dt(v[0]->dtype), dt(v[i]->dtype));
    }
    Shape o = shape1(-1);
    return set_out(c, "Out", v[0]->dtype, &o);
}

FlStatus fl_infer_linspace(Ctx *c) {
    FlVarDesc *start, *stop, *num;
    if (one_number(c, "Start", &start) || one_number(c, "Stop", &stop) || one_number(c, "Num", &num)) return FL_ERROR;
    if (!is_float(start->dtype) || stop->dtype != start->dtype)
        return fl_err(c->e, "%s: Start and Stop must be float32 or float64 of one dtype, found %s and %s", c->t,
                      dt(start->dtype), dt(stop->dtype));
    if (num->dtype != FL_DT_INT32 && num->dtype != FL_DT_INT64)
        return fl_err(c->e, "%s: Num must be int32 or int64, found %s", c->t, dt(num->dtype));
    Shape o = shape1(-1);
    return set_out(c, "Out", start->dtype, &o);
}

FlStatus fl_infer_mean_iou(Ctx *c) {
    FlVarDesc *p, *l;
    if (in1(c, "Predictions", &p) || in1(c, "Labels", &l)) return FL_ERROR;
    for (int i = 0; i < 2; i++) {
        const FlVarDesc *v = i ? l : p;
        if (v->dtype != FL_DT_INT32 && v->dtype != FL_DT_INT64)
            return fl_err(c->e, "%s: %s must be int32 or int64 class ids, found %s", c->t, i ? "Labels" : "Predictions",
                          dt(v->dtype));
    }
    Shape ps = shape_of(p), ls = shape_of(l);
    if (p->dtype != l->dtype || !shapes_agree(&ps, &ls))
        return fl_err(c->e, "%s: Predictions %s %s and Labels %s %s must have one dtype and shape", c->t,
                      dt(p->dtype), sstr(c, &ps), dt(l->dtype), sstr(c, &ls));
    int64_t k = iattr(c, "num_classes");
    if (k < 1) return fl_err(c->e, "%s: num_classes must be >= 1, found %lld", c->t, (long long)k);
    Shape one = shape1(1), cls = shape1(k);
    return set_out(c, "OutMeanIou", FL_DT_FLOAT32, &one) || set_out(c, "OutWrong", FL_DT_INT32, &cls) ||
           set_out(c, "OutCorrect", FL_DT_INT32, &cls);
}

FlStatus fl_infer_where(Ctx *c) {
    FlVarDesc *v;
    if (in1(c, "Condition", &v)) return FL_ERROR;
    if (v->dtype != FL_DT_BOOL) return fl_err(c->e, "%s: Condition must be bool, found %s", c->t, dt(v->dtype));
    Shape s = shape_of(v);
    if (s.nd == 0) return fl_err(c->e, "%s: Condition has no dims", c->t);
    Shape o = {.nd = 2, .d = {-1, s.nd}};
    return set_out(c, "Out", FL_DT_INT64, &o);
}

FlStatus fl_infer_shape_op(Ctx *c) {
    FlVarDesc *v;
    if (in1(c, "Input", &v)) return FL_ERROR;
    Shape o = shape1(v->ndim);
    return set_out(c, "Out", FL_DT_INT32, &o);
}

/* Two float inputs of one dtype and shape; with col, of rank 2 and one column ([N, 1]). */
static FlStatus float_pair(Ctx *c, const char *a, const char *b, bool col, FlVarDesc **x, FlVarDesc **y) {
    if (in1(c, a, x) || in1(c, b, y) || need_float_in(c, *x, a) || need_float_in(c, *y, b)) return FL_ERROR;
    Shape xs = shape_of(*x), ys = shape_of(*y);
    if ((*x)->dtype != (*y)->dtype)
        return fl_err(c->e, "%s: %s is %s but %s is %s", c->t, a, dt((*x)->dtype), b, dt((*y)->dtype));
    if (!shapes_agree(&xs, &ys))
        return fl_err(c->e, "%s: %s %s and %s %s must have one shape", c->t, a, sstr(c, &xs), b, sstr(c, &ys));
    if (col && (xs.nd != 2 || !dims_agree(xs.d[1], 1)))
        return fl_err(c->e, "%s: %s must be [N, 1], found %s", c->t, a, sstr(c, &xs));
    return FL_OK;
}

FlStatus fl_infer_log_loss(Ctx *c) {
    FlVarDesc *p, *l;
    if (float_pair(c, "Predicted", "Labels", true, &p, &l)) return FL_ERROR;
    return set_like(c, "Loss", p);
}

FlStatus fl_infer_teacher_student_sigmoid_loss(Ctx *c) {
    FlVarDesc *x, *l;
    if (float_pair(c, "X", "Label", true, &x, &l)) return FL_ERROR;
    if (fattr(c, "soft_max_lower_bound") >= fattr(c, "soft_max_up_bound"))
        return fl_err(c->e, "%s: soft_max_lower_bound (%g) must be below soft_max_up_bound (%g)", c->t,
                      fattr(c, "soft_max_lower_bound"), fattr(c, "soft_max_up_bound"));
    return set_like(c, "Y", x);
}

FlStatus fl_infer_huber_loss(Ctx *c) {
    FlVarDesc *x, *y;
    if (float_pair(c, "X", "Y", true, &x, &y)) return FL_ERROR;
    return set_like(c, "Out", x) || set_like(c, "Residual", x) ? FL_ERROR : FL_OK;
}

FlStatus fl_infer_kldiv_loss(Ctx *c) {
    FlVarDesc *x, *t;
    if (float_pair(c, "X", "Target", false, &x, &t)) return FL_ERROR;
    const char *r = sattr(c, "reduction");
    if (strcmp(r, "none") == 0) return set_like(c, "Loss", x);
    if (strcmp(r, "mean") && strcmp(r, "sum") && strcmp(r, "batchmean"))
        return fl_err(c->e, "%s: reduction must be 'none', 'batchmean', 'mean' or 'sum', found '%s'", c->t, r);
    Shape one = shape1(1);
    return set_out(c, "Loss", x->dtype, &one);
}

FlStatus fl_infer_multiplex(Ctx *c) {
    FlSlot *xs = fl_ir_op_input(c->op, "X");
    FlVarDesc *ids, *first;
    if (!xs || xs->nargs < 1) return fl_err(c->e, "%s: needs the inputs to choose from", c->t);
    if (lookup(c, "input", "X", xs->args[0], &first) || in1(c, "Ids", &ids) || need_int_in(c, ids, "Ids"))
        return FL_ERROR;
    Shape out = shape_of(first), is = shape_of(ids);
    if (out.nd < 1) return fl_err(c->e, "%s: X must have rows, found %s", c->t, sstr(c, &out));
    for (size_t i = 1; i < xs->nargs; i++) {
        FlVarDesc *v;
        if (lookup(c, "input", "X", xs->args[i], &v)) return FL_ERROR;
        Shape s = shape_of(v);
        if (v->dtype != first->dtype || !shapes_agree(&out, &s))
            return fl_err(c->e, "%s: the inputs must have one shape and dtype, found %s %s and %s %s", c->t,
                          dt(first->dtype), sstr(c, &out), dt(v->dtype), sstr(c, &s));
    }
    if (is.nd != 2 || !dims_agree(is.d[1], 1) || !dims_agree(is.d[0], out.d[0]))
        return fl_err(c->e, "%s: Ids must be [M, 1] (an input's index per row of X %s), found %s", c->t,
                      sstr(c, &out), sstr(c, &is));
    return set_out(c, "Out", first->dtype, &out);
}
