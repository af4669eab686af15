/* infer_shape.c: shape rules of sum, concat, split, split_selected_rows, sparse_decay, reshape,
 * transpose, argmax, top_k, accuracy and Print (adapters in runtime/core/ops_shape.c; kernels in
 * runtime/kernels/shape.c, sum's in reduce.c). */
#include "compiler/infer_impl.h"

FlStatus fl_infer_sum(Ctx *c) {
    FlSlot *xs = fl_ir_op_input(c->op, "X");
    if (!xs || xs->nargs == 0) return fl_err(c->e, "%s: no inputs to add", c->t);
    FlVarDesc *first;
    if (lookup(c, "input", "X", xs->args[0], &first)) return FL_ERROR;
    Shape out = shape_of(first);
    for (size_t i = 1; i < xs->nargs; i++) {
        FlVarDesc *v;
        if (lookup(c, "input", "X", xs->args[i], &v)) return FL_ERROR;
        if (v->dtype != first->dtype)
            return fl_err(c->e, "%s: dtype mismatch: %s and %s", c->t, dt(first->dtype),
                          dt(v->dtype));
        Shape s = shape_of(v);
        if (!shapes_agree(&out, &s))
            return fl_err(c->e, "%s: inputs differ in shape (%s and %s)", c->t, sstr(c, &out),
                          sstr(c, &s));
        for (int k = 0; k < out.nd; k++) out.d[k] = merge(out.d[k], s.d[k]);
    }
    /* SelectedRows in, SelectedRows out; one dense input makes the sum dense */
    bool rows = true;
    for (size_t i = 0; i < xs->nargs; i++) {
        FlVarDesc *v = fl_ir_var_lookup(c->p, c->b, xs->args[i]);
        rows = rows && v && v->kind == FL_VAR_SELECTED_ROWS;
    }
    FlSlot *os = fl_ir_op_output(c->op, "Out");
    for (size_t i = 0; os && i < os->nargs; i++) {
        FlVarDesc *o = skip_arg(os->args[i]) ? NULL : fl_ir_var_lookup(c->p, c->b, os->args[i]);
        if (o && (o->kind == FL_VAR_DENSE || o->kind == FL_VAR_SELECTED_ROWS))
            o->kind = rows ? FL_VAR_SELECTED_ROWS : FL_VAR_DENSE;
    }
    return set_out(c, "Out", first->dtype, &out);
}

/* ---- shape ops ---- */

FlStatus fl_infer_concat(Ctx *c) {
    FlSlot *xs = fl_ir_op_input(c->op, "X");
    if (!xs || xs->nargs == 0) return fl_err(c->e, "%s: no inputs to join", c->t);
    FlVarDesc *first;
    if (lookup(c, "input", "X", xs->args[0], &first)) return FL_ERROR;
    Shape out = shape_of(first);
    int axis = 0;
    if (norm_axis(c, iattr(c, "axis"), out.nd, &out, &axis)) return FL_ERROR;
    for (size_t i = 1; i < xs->nargs; i++) {
        FlVarDesc *v;
        if (lookup(c, "input", "X", xs->args[i], &v)) return FL_ERROR;
        Shape s = shape_of(v);
        if (v->dtype != first->dtype)
            return fl_err(c->e, "%s: dtype mismatch: %s and %s", c->t, dt(first->dtype),
                          dt(v->dtype));
        if (s.nd != out.nd)
            return fl_err(c->e, "%s: inputs differ in rank (%s and %s)", c->t, sstr(c, &out),
                          sstr(c, &s));
        for (int k = 0; k < s.nd; k++) {
            if (k == axis) {
                out.d[k] = out.d[k] < 0 || s.d[k] < 0 ? -1 : sadd(out.d[k], s.d[k]);
            } else if (!dims_agree(out.d[k], s.d[k])) {
                Shape f = shape_of(first);
                return fl_err(c->e, "%s: inputs differ in dim %d (%s and %s)", c->t, k,
                              sstr(c, &f), sstr(c, &s));
            } else {
                out.d[k] = merge(out.d[k], s.d[k]);
            }
        }
    }
    return set_out(c, "Out", first->dtype, &out);
}

/* sparse_decay: X a SelectedRows of Param's shape and dtype; Out one like X. */
FlStatus fl_infer_sparse_decay(Ctx *c) {
    FlVarDesc *xv = NULL, *pv = NULL;
    if (in1(c, "X", &xv) || in1(c, "Param", &pv)) return FL_ERROR;
    if (!xv || !pv) return fl_err(c->e, "%s: X and Param are required", c->t);
    if (xv->kind != FL_VAR_SELECTED_ROWS)
        return fl_err(c->e, "%s: X '%s' must be a SelectedRows (a sparse gradient)", c->t, xv->name);
    Shape x = shape_of(xv), p = shape_of(pv);
    bool fits = xv->dtype == pv->dtype && x.nd == p.nd;
    for (int k = 0; fits && k < x.nd; k++) fits = dims_agree(x.d[k], p.d[k]);
    if (!fits)
        return fl_err(c->e, "%s: X '%s' %s is not the gradient of Param '%s' %s", c->t, xv->name, sstr(c, &x),
                      pv->name, sstr(c, &p));
    const char *on = fl_ir_op_output1(c->op, "Out");
    FlVarDesc *o;
    if (!on || skip_arg(on)) return fl_err(c->e, "%s: output Out is required", c->t);
    if (lookup(c, "output", "Out", on, &o)) return FL_ERROR;
    o->dtype = xv->dtype;
    o->kind = FL_VAR_SELECTED_ROWS;
    fl_ir_var_set_shape(o, x.nd, x.d);
    return FL_OK;
}

/* split_selected_rows: X a SelectedRows [H, ...]; Out[k] SelectedRows [height_sections[k], ...]
 * with the sections adding up to H (when H is known). */
FlStatus fl_infer_split_selected_rows(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    if (xv->kind != FL_VAR_SELECTED_ROWS)
        return fl_err(c->e, "%s: X '%s' must be a SelectedRows (a sparse gradient)", c->t, xv->name);
    Shape x = shape_of(xv);
    if (x.nd < 1) return fl_err(c->e, "%s: X '%s' has no rows to split", c->t, xv->name);
    FlSlot *outs = fl_ir_op_output(c->op, "Out");
    size_t nout = outs ? outs->nargs : 0, nsec;
    bool ok;
    const int64_t *sec = intsattr(c, "height_sections", &nsec, &ok);
    if (!ok) return FL_ERROR;
    if (nsec == 0 || nsec != nout)
        return fl_err(c->e, "%s: %zu height_sections but %zu outputs (one section per output, at least one)", c->t,
                      nsec, nout);
    int64_t total = 0;
    for (size_t k = 0; k < nsec; k++) {
        if (sec[k] < 0)
            return fl_err(c->e, "%s: height_sections[%zu] is %lld; sections are row counts >= 0", c->t, k,
                          (long long)sec[k]);
        total = sadd(total, sec[k]);
    }
    if (x.d[0] >= 0 && total != x.d[0])
        return fl_err(c->e, "%s: height_sections add up to %lld but X '%s' has height %lld", c->t, (long long)total,
                      xv->name, (long long)x.d[0]);
    for (size_t k = 0; k < nout; k++) {
        if (skip_arg(outs->args[k])) continue;
        FlVarDesc *o;
        if (lookup(c, "output", "Out", outs->args[k], &o)) return FL_ERROR;
        Shape s = x;
        s.d[0] = sec[k];
        o->dtype = xv->dtype;
        o->kind = FL_VAR_SELECTED_ROWS;
        fl_ir_var_set_shape(o, s.nd, s.d);
    }
    return FL_OK;
}

FlStatus fl_infer_split(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    int axis = 0;
    if (norm_axis(c, iattr(c, "axis"), x.nd, &x, &axis)) return FL_ERROR;
    FlSlot *outs = fl_ir_op_output(c->op, "Out");
    size_t nout = outs ? outs->nargs : 0;
    size_t nsec;
    bool ok;
    const int64_t *sec = intsattr(c, "sections", &nsec, &ok);
    if (!ok) return FL_ERROR;
    int64_t num = iattr(c, "num"), dim = x.d[axis];
    if (nsec == 0) {
        if (num <= 0) num = (int64_t)nout;
        if (num <= 0) return fl_err(c->e, "%s: nothing to split into (no outputs)", c->t);
        if ((size_t)num != nout)
            return fl_err(c->e, "%s: num is %lld but there are %zu outputs", c->t, (long long)num,
                          nout);
        if (dim >= 0 && dim % num != 0)
            return fl_err(c->e, "%s: dim %d of size %lld cannot be split into %lld equal parts (X %s)",
                          c->t, axis, (long long)dim, (long long)num, sstr(c, &x));
        Shape s = x;
        s.d[axis] = dim < 0 ? -1 : dim / num;
        return set_out(c, "Out", xv->dtype, &s);
    }
    if (nsec != nout)
        return fl_err(c->e, "%s: %zu sections but %zu outputs", c->t, nsec, nout);
    int64_t known = 0;
    int unknown = -1;
    for (size_t k = 0; k < nsec; k++) {
        if (sec[k] < 0) {
            if (unknown >= 0 || sec[k] != -1)
                return fl_err(c->e, "%s: sections may hold one -1, found %lld at %zu", c->t,
                              (long long)sec[k], k);
            unknown = (int)k;
        } else {
            known = sadd(known, sec[k]);
        }
    }
    int64_t inferred = -1;
    if (dim >= 0) {
        if (unknown < 0 && known != dim)
            return fl_err(c->e, "%s: sections add up to %lld but dim %d has size %lld (X %s)", c->t,
                          (long long)known, axis, (long long)dim, sstr(c, &x));
        if (unknown >= 0 && known > dim)
            return fl_err(c->e, "%s: sections add up to %lld, more than dim %d's size %lld (X %s)",
                          c->t, (long long)known, axis, (long long)dim, sstr(c, &x));
        inferred = dim - known;
    }
    for (size_t k = 0; k < nsec; k++) {
        if (skip_arg(outs->args[k])) continue;
        FlVarDesc *v;
        if (lookup(c, "output", "Out", outs->args[k], &v)) return FL_ERROR;
        Shape s = x;
        s.d[axis] = (int)k == unknown ? inferred : sec[k];
        v->dtype = xv->dtype;
        fl_ir_var_set_shape(v, s.nd, s.d);
    }
    return FL_OK;
}

FlStatus fl_infer_reshape(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    size_t n;
    bool ok;
    const int64_t *dims = intsattr(c, "shape", &n, &ok);
    if (!ok) return FL_ERROR;
    if (n == 0 || n > FL_IR_MAX_DIMS)
        return fl_err(c->e, "%s: the new shape must have 1 to %d dims, found %zu", c->t,
                      FL_IR_MAX_DIMS, n);
    Shape out = {.nd = (int)n};
    int infer_at = -1;
    for (size_t i = 0; i < n; i++) {
        if (dims[i] == 0) {
            if ((int)i >= x.nd)
                return fl_err(c->e, "%s: shape[%zu] is 0 (copy) but X %s has only %d dims", c->t,
                              i, sstr(c, &x), x.nd);
            out.d[i] = x.d[i];
        } else if (dims[i] == -1) {
            if (infer_at >= 0)
                return fl_err(c->e, "%s: the new shape may hold one -1, found two", c->t);
            infer_at = (int)i;
            out.d[i] = -1;
        } else if (dims[i] < 0) {
            return fl_err(c->e, "%s: shape[%zu] is %lld", c->t, i, (long long)dims[i]);
        } else {
            out.d[i] = dims[i];
        }
    }
    /* Known parts and unknown counts; an unknown dim of the result (other than infer_at) can
     * only be a copy of one of X's, so when the counts agree every unknown is accounted for. */
    int64_t xk = 1, ok_ = 1;
    int xu = 0, ou = 0;
    for (int i = 0; i < x.nd; i++) {
        if (x.d[i] < 0) xu++;
        else xk = smul(xk, x.d[i]);
    }
    for (int i = 0; i < out.nd; i++) {
        if (i == infer_at) continue;
        if (out.d[i] < 0) ou++;
        else if (__builtin_mul_overflow(ok_, out.d[i], &ok_))
            return fl_err(c->e, "%s: the shape %s has more elements than an int64 holds", c->t, sstr(c, &out));
    }
    if (xu == ou) {
        if (infer_at >= 0) {
            if (ok_ == 0 || xk % ok_ != 0)
                return fl_err(c->e, "%s: cannot reshape X %s into %s", c->t, sstr(c, &x),
                              sstr(c, &out));
            out.d[infer_at] = xk / ok_;
        } else if (xk != ok_) {
            return fl_err(c->e, "%s: cannot reshape X %s (%lld%s elements) into %s (%lld%s)", c->t,
                          sstr(c, &x), (long long)xk, xu ? " x batch" : "", sstr(c, &out),
                          (long long)ok_, ou ? " x batch" : "");
        }
    }
    return set_out(c, "Out", xv->dtype, &out);
}

FlStatus fl_infer_transpose(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    size_t n;
    bool ok;
    const int64_t *perm = intsattr(c, "axis", &n, &ok);
    if (!ok) return FL_ERROR;
    bool seen[FL_IR_MAX_DIMS] = {0};
    bool good = n == (size_t)x.nd;
    for (size_t i = 0; good && i < n; i++) {
        if (perm[i] < 0 || perm[i] >= x.nd || seen[perm[i]]) good = false;
        else seen[perm[i]] = true;
    }
    if (!good) {
        Shape p = {.nd = n <= FL_IR_MAX_DIMS ? (int)n : FL_IR_MAX_DIMS};
        for (int i = 0; i < p.nd; i++) p.d[i] = perm[i];
        return fl_err(c->e, "%s: axis %s is not a permutation of the %d dims of X %s", c->t,
                      sstr(c, &p), x.nd, sstr(c, &x));
    }
    Shape out = {.nd = x.nd};
    for (int i = 0; i < x.nd; i++) out.d[i] = x.d[perm[i]];
    return set_out(c, "Out", xv->dtype, &out);
}

/* ---- classification helpers ---- */

FlStatus fl_infer_argmax(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv), out = {0};
    int axis = 0;
    if (x.nd == 0) return fl_err(c->e, "%s: the input has no dims", c->t);
    if (norm_axis(c, iattr(c, "axis"), x.nd, &x, &axis)) return FL_ERROR;
    for (int i = 0; i < x.nd; i++)
        if (i != axis) out.d[out.nd++] = x.d[i];
    if (out.nd == 0) out = shape1(1);
    return set_out(c, "Out", FL_DT_INT64, &out);
}

FlStatus fl_infer_top_k(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    int64_t k = iattr(c, "k");
    if (x.nd == 0) return fl_err(c->e, "%s: the input has no dims", c->t);
    if (k < 1) return fl_err(c->e, "%s: k must be at least 1, found %lld", c->t, (long long)k);
    int64_t last = x.d[x.nd - 1];
    if (last >= 0 && k > last)
        return fl_err(c->e, "%s: k is %lld but the input's last dim has size %lld (X %s)", c->t,
                      (long long)k, (long long)last, sstr(c, &x));
    Shape out = x;
    out.d[out.nd - 1] = k;
    if (set_out(c, "Out", xv->dtype, &out)) return FL_ERROR;
    return set_out(c, "Indices", FL_DT_INT64, &out);
}

FlStatus fl_infer_accuracy(Ctx *c) {
    FlVarDesc *ov, *iv, *lv;
    if (in1(c, "Out", &ov) || in1(c, "Indices", &iv) || in1(c, "Label", &lv)) return FL_ERROR;
    if (iv->dtype != FL_DT_INT64)
        return fl_err(c->e, "%s: the indices must be int64, found %s", c->t, dt(iv->dtype));
    if (lv->dtype != FL_DT_INT64)
        return fl_err(c->e, "%s: the label must be int64, found %s", c->t, dt(lv->dtype));
    Shape i = shape_of(iv), l = shape_of(lv);
    if (i.nd > 0 && l.nd > 0 && !dims_agree(i.d[0], l.d[0]))
        return fl_err(c->e, "%s: the prediction has %lld rows but the label has %lld (Indices %s, Label %s)",
                      c->t, (long long)i.d[0], (long long)l.d[0], sstr(c, &i), sstr(c, &l));
    Shape one = shape1(1);
    if (set_out(c, "Accuracy", FL_DT_FLOAT32, &one) || set_out(c, "Correct", FL_DT_INT64, &one) ||
        set_out(c, "Total", FL_DT_INT64, &one))
        return FL_ERROR;
    return FL_OK;
}

FlStatus fl_infer_print(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "In", &x)) return FL_ERROR;
    return set_like(c, "Out", x);
}
