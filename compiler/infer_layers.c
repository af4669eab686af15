/* infer_layers.c: shape rules of the parametrised activations, prelu, the batch-size fills, clip
 * and clip_by_norm, and the indexing, stacking, padding and reshaping layers (slice, gather,
 * scatter, expand, squeeze, unsqueeze, flatten, stack, unstack, pad, crop, one_hot); adapters in
 * runtime/core/ops_layers.c, kernels in runtime/kernels/kernels_layers.h (activation_param.c,
 * fill_batch.c, index.c). */
#include "compiler/infer_impl.h"




FlStatus fl_infer_float_unary(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x) || need_float_in(c, x, "X")) return FL_ERROR;
    return set_like(c, "Out", x);
}

FlStatus fl_infer_prelu(Ctx *c) {
    FlVarDesc *xv, *av;
    if (in1(c, "X", &xv) || in1(c, "Alpha", &av) || need_float_in(c, xv, "X")) return FL_ERROR;
    if (av->dtype != xv->dtype)
        return fl_err(c->e, "%s: Alpha is %s but X is %s", c->t, dt(av->dtype), dt(xv->dtype));
    Shape x = shape_of(xv), a = shape_of(av);
    const char *mode = sattr(c, "mode");
    int64_t want;
    if (strcmp(mode, "all") == 0) {
        want = 1;
    } else if (strcmp(mode, "channel") == 0) {
        if (x.nd < 2) return fl_err(c->e, "%s: mode 'channel' needs X of rank >= 2, found %s", c->t, sstr(c, &x));
        want = x.d[1];
    } else if (strcmp(mode, "element") == 0) {
        want = prod(&x, 1, x.nd);
    } else {
        return fl_err(c->e, "%s: mode must be 'all', 'channel' or 'element', found '%s'", c->t, mode);
    }
    int64_t have = prod(&a, 0, a.nd);
    if (!dims_agree(have, want))
        return fl_err(c->e, "%s: mode '%s' needs %lld alpha values for X %s, found Alpha %s", c->t, mode,
                      (long long)want, sstr(c, &x), sstr(c, &a));
    return set_like(c, "Out", xv);
}

/* fill_constant_batch_size_like, uniform_random_batch_size_like, gaussian_random_batch_size_like */
FlStatus fl_infer_batch_size_like(Ctx *c) {
    FlVarDesc *iv;
    if (in1(c, "Input", &iv)) return FL_ERROR;
    Shape in = shape_of(iv);
    size_t n;
    bool ok;
    const int64_t *dims = intsattr(c, "shape", &n, &ok);
    if (!ok) return FL_ERROR;
    if (n == 0 || n > FL_IR_MAX_DIMS)
        return fl_err(c->e, "%s: shape must have 1 to %d dims, found %zu", c->t, FL_IR_MAX_DIMS, n);
    int64_t idx = iattr(c, "input_dim_idx"), odx = iattr(c, "output_dim_idx");
    if (idx < 0 || idx >= in.nd)
        return fl_err(c->e, "%s: input_dim_idx %lld is not a dim of the input %s", c->t, (long long)idx,
                      sstr(c, &in));
    if (odx < 0 || (size_t)odx >= n)
        return fl_err(c->e, "%s: output_dim_idx %lld is not a dim of shape (%zu dims)", c->t, (long long)odx, n);
    Shape s = {.nd = (int)n};
    for (size_t i = 0; i < n; i++) {
        if ((int64_t)i != odx && dims[i] < 1 && dims[i] != -1)
            return fl_err(c->e, "%s: shape dim %zu is %lld (expected a positive size)", c->t, i, (long long)dims[i]);
        s.d[i] = dims[i];
    }
    /* a LoD Input's batch is its number of sequences, known at run time */
    s.d[odx] = idx == 0 && fl_ir_op_input1(c->op, "InputLod") ? -1 : in.d[idx];
    FlDType t = (FlDType)iattr(c, "dtype");
    if (check_dtype(c, t)) return FL_ERROR;
    if (c->info->id == FL_OPID_uniform_random_batch_size_like) {
        if (!is_float(t)) return fl_err(c->e, "%s: dtype must be float32 or float64, found %s", c->t, dt(t));
        if (fattr(c, "min") > fattr(c, "max"))
            return fl_err(c->e, "%s: min %g is above max %g", c->t, fattr(c, "min"), fattr(c, "max"));
    }
    if (c->info->id == FL_OPID_gaussian_random_batch_size_like) {
        if (!is_float(t)) return fl_err(c->e, "%s: dtype must be float32 or float64, found %s", c->t, dt(t));
        if (!(fattr(c, "std") >= 0)) return fl_err(c->e, "%s: std must be >= 0, found %g", c->t, fattr(c, "std"));
    }
    return set_out(c, "Out", t, &s);
}

/* An ints attribute (its default when absent; an empty default gives n 0); false after the
 * error when it is required and absent or not a list. */
static bool ints_get(Ctx *c, const char *name, const int64_t **v, size_t *n) {
    bool ok;
    *n = 0;
    *v = intsattr(c, name, n, &ok);
    if (!ok) *n = 0;
    return ok;
}

FlStatus fl_infer_slice(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "Input", &xv)) return FL_ERROR;
    Shape x = shape_of(xv), out = x;
    size_t na, ns, ne;
    const int64_t *axes, *st, *en;
    if (!ints_get(c, "axes", &axes, &na) || !ints_get(c, "starts", &st, &ns) || !ints_get(c, "ends", &en, &ne))
        return FL_ERROR;
    if (na != ns || na != ne)
        return fl_err(c->e, "%s: axes, starts and ends must have one length, found %zu, %zu and %zu", c->t, na, ns, ne);
    bool seen[FL_IR_MAX_DIMS] = {0};
    for (size_t k = 0; k < na; k++) {
        int a = 0;
        if (norm_axis(c, axes[k], x.nd, &x, &a)) return FL_ERROR;
        if (seen[a]) return fl_err(c->e, "%s: axis %d is listed twice", c->t, a);
        seen[a] = true;
        int64_t d = x.d[a];
        if (d < 0) continue; /* the batch dim: known at run time */
        int64_t s = st[k] < 0 ? sadd(st[k], d) : st[k], e = en[k] < 0 ? sadd(en[k], d) : en[k];
        s = s < 0 ? 0 : s > d ? d : s;
        e = e < 0 ? 0 : e > d ? d : e;
        if (e <= s)
            return fl_err(c->e, "%s: the slice [%lld:%lld] of dim %d (size %lld) is empty", c->t, (long long)st[k],
                          (long long)en[k], a, (long long)d);
        out.d[a] = e - s;
    }
    return set_out(c, "Out", xv->dtype, &out);
}

/* Index [N] or [N, 1] of int32/int64: *n = N. */
static FlStatus index_rows(Ctx *c, const FlVarDesc *iv, const char *slot, int64_t *n) {
    if (need_int_in(c, iv, slot)) return FL_ERROR;
    Shape s = shape_of(iv);
    if (!(s.nd == 1 || (s.nd == 2 && dims_agree(s.d[1], 1))))
        return fl_err(c->e, "%s: %s must have shape [N] or [N, 1], found %s", c->t, slot, sstr(c, &s));
    *n = s.d[0];
    return FL_OK;
}

FlStatus fl_infer_gather(Ctx *c) {
    FlVarDesc *xv, *iv;
    if (in1(c, "X", &xv) || in1(c, "Index", &iv)) return FL_ERROR;
    Shape x = shape_of(xv), out = x;
    if (x.nd < 1) return fl_err(c->e, "%s: X has no dims", c->t);
    if (index_rows(c, iv, "Index", &out.d[0])) return FL_ERROR;
    return set_out(c, "Out", xv->dtype, &out);
}

FlStatus fl_infer_scatter(Ctx *c) {
    FlVarDesc *xv, *iv, *uv;
    if (in1(c, "X", &xv) || in1(c, "Ids", &iv) || in1(c, "Updates", &uv)) return FL_ERROR;
    Shape x = shape_of(xv), u = shape_of(uv), want = x;
    if (x.nd < 1) return fl_err(c->e, "%s: X has no dims", c->t);
    if (index_rows(c, iv, "Ids", &want.d[0])) return FL_ERROR;
    if (uv->dtype != xv->dtype)
        return fl_err(c->e, "%s: Updates is %s but X is %s", c->t, dt(uv->dtype), dt(xv->dtype));
    if (!shapes_agree(&u, &want))
        return fl_err(c->e, "%s: Updates must have shape %s (one row per id, X %s), found %s", c->t, sstr(c, &want),
                      sstr(c, &x), sstr(c, &u));
    return set_like(c, "Out", xv);
}

FlStatus fl_infer_expand(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    size_t n;
    const int64_t *t;
    if (!ints_get(c, "expand_times", &t, &n)) return FL_ERROR;
    if ((int)n != x.nd)
        return fl_err(c->e, "%s: expand_times has %zu values but X %s has %d dims", c->t, n, sstr(c, &x), x.nd);
    for (int i = 0; i < x.nd; i++) {
        if (t[i] < 1) return fl_err(c->e, "%s: expand_times[%d] is %lld (expected >= 1)", c->t, i, (long long)t[i]);
        x.d[i] = x.d[i] < 0 ? -1 : smul(x.d[i], t[i]);
    }
    return set_out(c, "Out", xv->dtype, &x);
}

FlStatus fl_infer_squeeze(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv), out = {0};
    size_t n;
    const int64_t *axes;
    if (!ints_get(c, "axes", &axes, &n)) return FL_ERROR;
    bool drop[FL_IR_MAX_DIMS] = {0};
    for (size_t k = 0; k < n; k++) {
        int a = 0;
        if (norm_axis(c, axes[k], x.nd, &x, &a)) return FL_ERROR;
        if (x.d[a] > 1)
            return fl_err(c->e, "%s: dim %d of X %s has size %lld; only a size-1 dim can be squeezed", c->t, a,
                          sstr(c, &x), (long long)x.d[a]);
        drop[a] = true;
    }
    for (int i = 0; i < x.nd; i++)
        if (!(n ? drop[i] : x.d[i] == 1)) out.d[out.nd++] = x.d[i];
    if (out.nd == 0) out = shape1(1);
    return set_out(c, "Out", xv->dtype, &out);
}

FlStatus fl_infer_unsqueeze(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv), out = x;
    size_t n;
    const int64_t *axes;
    if (!ints_get(c, "axes", &axes, &n)) return FL_ERROR;
    for (size_t k = 0; k < n; k++) {
        if (out.nd == FL_IR_MAX_DIMS) return fl_err(c->e, "%s: the result would have more than %d dims", c->t, FL_IR_MAX_DIMS);
        int64_t a = axes[k] < 0 ? sadd(axes[k], out.nd + 1) : axes[k];
        if (a < 0 || a > out.nd)
            return fl_err(c->e, "%s: axis %lld is out of range for a result of rank %d", c->t, (long long)axes[k],
                          out.nd + 1);
        memmove(&out.d[a + 1], &out.d[a], sizeof(int64_t) * (size_t)(out.nd - a));
        out.d[a] = 1;
        out.nd++;
    }
    return set_out(c, "Out", xv->dtype, &out);
}

FlStatus fl_infer_flatten(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    int64_t axis = iattr(c, "axis");
    if (axis < 0 || axis > x.nd)
        return fl_err(c->e, "%s: axis %lld is out of range 0..%d for X %s", c->t, (long long)axis, x.nd, sstr(c, &x));
    Shape out = {.nd = 2, .d = {prod(&x, 0, (int)axis), prod(&x, (int)axis, x.nd)}};
    return set_out(c, "Out", xv->dtype, &out);
}

FlStatus fl_infer_stack(Ctx *c) {
    FlSlot *xs = fl_ir_op_input(c->op, "X");
    if (!xs || xs->nargs == 0) return fl_err(c->e, "%s: no inputs to stack", c->t);
    FlVarDesc *first;
    if (lookup(c, "input", "X", xs->args[0], &first)) return FL_ERROR;
    Shape s0 = shape_of(first);
    for (size_t i = 1; i < xs->nargs; i++) {
        FlVarDesc *v;
        if (lookup(c, "input", "X", xs->args[i], &v)) return FL_ERROR;
        Shape s = shape_of(v);
        if (v->dtype != first->dtype)
            return fl_err(c->e, "%s: dtype mismatch: %s and %s", c->t, dt(first->dtype), dt(v->dtype));
        if (!shapes_agree(&s0, &s))
            return fl_err(c->e, "%s: inputs differ in shape (%s and %s)", c->t, sstr(c, &s0), sstr(c, &s));
        for (int k = 0; k < s.nd; k++) s0.d[k] = merge(s0.d[k], s.d[k]);
    }
    if (s0.nd == FL_IR_MAX_DIMS) return fl_err(c->e, "%s: the result would have more than %d dims", c->t, FL_IR_MAX_DIMS);
    int64_t axis = iattr(c, "axis");
    int64_t a = axis < 0 ? sadd(axis, s0.nd + 1) : axis;
    if (a < 0 || a > s0.nd)
        return fl_err(c->e, "%s: axis %lld is out of range for inputs %s", c->t, (long long)axis, sstr(c, &s0));
    memmove(&s0.d[a + 1], &s0.d[a], sizeof(int64_t) * (size_t)(s0.nd - a));
    s0.d[a] = (int64_t)xs->nargs;
    s0.nd++;
    return set_out(c, "Y", first->dtype, &s0);
}

FlStatus fl_infer_unstack(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    int a = 0;
    if (norm_axis(c, iattr(c, "axis"), x.nd, &x, &a)) return FL_ERROR;
    FlSlot *ys = fl_ir_op_output(c->op, "Y");
    size_t ny = ys ? ys->nargs : 0;
    int64_t num = iattr(c, "num");
    if (num <= 0) num = x.d[a];
    if (num <= 0)
        return fl_err(c->e, "%s: dim %d of X %s is unknown: give num", c->t, a, sstr(c, &x));
    if (x.d[a] >= 0 && num != x.d[a])
        return fl_err(c->e, "%s: num is %lld but dim %d of X %s has size %lld", c->t, (long long)num, a, sstr(c, &x),
                      (long long)x.d[a]);
    if ((size_t)num != ny) return fl_err(c->e, "%s: num is %lld but there are %zu outputs", c->t, (long long)num, ny);
    Shape out = {0};
    for (int i = 0; i < x.nd; i++)
        if (i != a) out.d[out.nd++] = x.d[i];
    if (out.nd == 0) out = shape1(1);
    return set_out(c, "Y", xv->dtype, &out);
}

FlStatus fl_infer_clip(Ctx *c) {
    if (fattr(c, "min") > fattr(c, "max"))
        return fl_err(c->e, "%s: min %g is above max %g", c->t, fattr(c, "min"), fattr(c, "max"));
    return fl_infer_float_unary(c);
}

FlStatus fl_infer_clip_by_norm(Ctx *c) {
    if (!(fattr(c, "max_norm") > 0)) return fl_err(c->e, "%s: max_norm must be > 0, found %g", c->t, fattr(c, "max_norm"));
    return fl_infer_float_unary(c);
}

FlStatus fl_infer_pad(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    size_t n;
    const int64_t *p;
    if (!ints_get(c, "paddings", &p, &n)) return FL_ERROR;
    if (n != 2 * (size_t)x.nd)
        return fl_err(c->e, "%s: paddings must hold 2 values per dim of X %s (%d), found %zu", c->t, sstr(c, &x),
                      2 * x.nd, n);
    for (int i = 0; i < x.nd; i++) {
        if (p[2 * i] < 0 || p[2 * i + 1] < 0)
            return fl_err(c->e, "%s: paddings of dim %d are %lld and %lld (expected >= 0)", c->t, i,
                          (long long)p[2 * i], (long long)p[2 * i + 1]);
        x.d[i] = x.d[i] < 0 ? -1 : sadd(x.d[i], sadd(p[2 * i], p[2 * i + 1]));
    }
    return set_out(c, "Out", xv->dtype, &x);
}

FlStatus fl_infer_crop(Ctx *c) {
    FlVarDesc *xv, *yv;
    if (in1(c, "X", &xv) || in_opt(c, "Y", &yv)) return FL_ERROR;
    Shape x = shape_of(xv), out;
    size_t no, ns;
    const int64_t *off, *sh;
    if (!ints_get(c, "offsets", &off, &no)) return FL_ERROR;
    if (no && no != (size_t)x.nd)
        return fl_err(c->e, "%s: offsets has %zu values but X %s has %d dims", c->t, no, sstr(c, &x), x.nd);
    if (yv) {
        out = shape_of(yv);
        if (out.nd != x.nd)
            return fl_err(c->e, "%s: Y %s and X %s differ in rank", c->t, sstr(c, &out), sstr(c, &x));
    } else {
        if (!ints_get(c, "shape", &sh, &ns)) return FL_ERROR;
        if (ns != (size_t)x.nd)
            return fl_err(c->e, "%s: shape has %zu values but X %s has %d dims", c->t, ns, sstr(c, &x), x.nd);
        out.nd = x.nd;
        for (int i = 0; i < x.nd; i++) out.d[i] = sh[i];
    }
    for (int i = 0; i < x.nd; i++) {
        int64_t o = no ? off[i] : 0;
        if (o < 0) return fl_err(c->e, "%s: offset %lld of dim %d is negative", c->t, (long long)o, i);
        if (out.d[i] <= 0) out.d[i] = x.d[i] < 0 ? -1 : x.d[i] - o;
        if (x.d[i] >= 0 && out.d[i] >= 0 && (out.d[i] < 1 || sadd(o, out.d[i]) > x.d[i]))
            return fl_err(c->e, "%s: a block of size %lld at offset %lld does not fit in dim %d of X %s", c->t,
                          (long long)out.d[i], (long long)o, i, sstr(c, &x));
    }
    return set_out(c, "Out", xv->dtype, &out);
}

FlStatus fl_infer_one_hot(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv) || need_int_in(c, xv, "X")) return FL_ERROR;
    Shape x = shape_of(xv);
    if (x.nd < 1 || !dims_agree(x.d[x.nd - 1], 1))
        return fl_err(c->e, "%s: X must have shape [..., 1], found %s", c->t, sstr(c, &x));
    int64_t depth = iattr(c, "depth");
    if (depth < 1) return fl_err(c->e, "%s: depth must be >= 1, found %lld", c->t, (long long)depth);
    x.d[x.nd - 1] = depth;
    return set_out(c, "Out", FL_DT_FLOAT32, &x);
}
