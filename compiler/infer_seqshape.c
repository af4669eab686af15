/* infer_seqshape.c: shape rules of the sequence reshaping ops (sequence_concat,
 * sequence_reshape, sequence_slice, sequence_pad, sequence_unpad, sequence_enumerate, lod_reset);
 * adapters in runtime/core/ops_seqshape.c, kernels in runtime/kernels/seqshape.c. Offsets are int64
 * vectors; the rows they cut are known at run time only (docs/sequences.md). */
#include "compiler/infer_impl.h"

/* Every var of input slot `slot` is an offsets vector (int64 [n]). */
static FlStatus need_lod_in(Ctx *c, const char *slot) {
    FlSlot *sl = fl_ir_op_input(c->op, slot);
    if (!sl || sl->nargs == 0) return fl_err(c->e, "%s: missing input %s", c->t, slot);
    for (size_t i = 0; i < sl->nargs; i++) {
        FlVarDesc *v;
        if (lookup(c, "input", slot, sl->args[i], &v)) return FL_ERROR;
        if (v->dtype != FL_DT_INT64 || v->ndim != 1)
            return fl_err(c->e, "%s: %s '%s' must be an int64 vector of offsets, found %s %s", c->t, slot, v->name,
                          dt(v->dtype), sstr(c, &(Shape){.nd = v->ndim, .d = {v->ndim ? v->shape[0] : 0}}));
    }
    return FL_OK;
}

/* Out: `rows` rows of X's steps (dims [from, nd) of x), OutLod an offsets vector. */
static FlStatus set_seq_out(Ctx *c, const FlVarDesc *x, int64_t rows, int from) {
    Shape xs = shape_of(x), s = {.nd = 1, .d = {rows}};
    for (int i = from; i < xs.nd; i++) s.d[s.nd++] = xs.d[i];
    if (s.nd == 1) s.d[s.nd++] = 1;
    Shape lod = shape1(-1);
    return set_out(c, "Out", x->dtype, &s) || set_out(c, "OutLod", FL_DT_INT64, &lod) ? FL_ERROR : FL_OK;
}

FlStatus fl_infer_seqshape(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x)) return FL_ERROR;
    Shape xs = shape_of(x);
    switch (c->info->id) {
    case FL_OPID_sequence_concat: {
        FlSlot *xl = fl_ir_op_input(c->op, "X"), *ll = fl_ir_op_input(c->op, "XLod");
        if (need_lod_in(c, "XLod")) return FL_ERROR;
        if (ll->nargs != xl->nargs)
            return fl_err(c->e, "%s: %zu inputs X but %zu offsets XLod", c->t, xl->nargs, ll->nargs);
        if (xs.nd < 1) return fl_err(c->e, "%s: X '%s' has no rows", c->t, x->name);
        Shape lod = shape1(-1);
        return fl_infer_concat(c) || set_out(c, "OutLod", FL_DT_INT64, &lod) ? FL_ERROR : FL_OK;
    }
    case FL_OPID_sequence_reshape: {
        int64_t nd = iattr(c, "new_dim");
        if (need_lod_in(c, "XLod")) return FL_ERROR;
        if (xs.nd != 2) return fl_err(c->e, "%s: X must be a matrix [T, D], found %s", c->t, sstr(c, &xs));
        if (nd < 1) return fl_err(c->e, "%s: new_dim must be >= 1, found %lld", c->t, (long long)nd);
        int64_t n = prod(&xs, 0, 2);
        Shape s = {.nd = 2, .d = {n >= 0 && n % nd == 0 ? n / nd : -1, nd}}, lod = shape1(-1);
        return set_out(c, "Out", x->dtype, &s) || set_out(c, "OutLod", FL_DT_INT64, &lod) ? FL_ERROR : FL_OK;
    }
    case FL_OPID_sequence_slice: {
        FlVarDesc *o, *l;
        if (need_lod_in(c, "XLod") || in1(c, "Offset", &o) || in1(c, "Length", &l) || need_int_in(c, o, "Offset") ||
            need_int_in(c, l, "Length"))
            return FL_ERROR;
        if (xs.nd < 1) return fl_err(c->e, "%s: X '%s' has no rows", c->t, x->name);
        return set_seq_out(c, x, -1, 1);
    }
    case FL_OPID_sequence_pad: {
        FlVarDesc *pv;
        int64_t len = iattr(c, "padded_length");
        if (need_lod_in(c, "XLod") || in1(c, "PadValue", &pv)) return FL_ERROR;
        if (xs.nd < 2 || xs.nd + 1 > FL_IR_MAX_DIMS)
            return fl_err(c->e, "%s: X must have rank 2 to %d, found %s", c->t, FL_IR_MAX_DIMS - 1, sstr(c, &xs));
        if (pv->dtype != x->dtype)
            return fl_err(c->e, "%s: PadValue is %s but X is %s", c->t, dt(pv->dtype), dt(x->dtype));
        if (len < -1) return fl_err(c->e, "%s: padded_length must be -1 or a length, found %lld", c->t, (long long)len);
        Shape s = {.nd = xs.nd + 1, .d = {-1, len}}, n = shape1(-1);
        for (int i = 1; i < xs.nd; i++) s.d[i + 1] = xs.d[i];
        return set_out(c, "Out", x->dtype, &s) || set_out(c, "Length", FL_DT_INT64, &n) ? FL_ERROR : FL_OK;
    }
    case FL_OPID_sequence_unpad: {
        FlVarDesc *l;
        if (in1(c, "Length", &l) || need_int_in(c, l, "Length")) return FL_ERROR;
        if (xs.nd < 2) return fl_err(c->e, "%s: X must be padded sequences [B, L, ...], found %s", c->t, sstr(c, &xs));
        return set_seq_out(c, x, -1, 2);
    }
    case FL_OPID_sequence_enumerate: {
        int64_t w = iattr(c, "win_size");
        if (need_lod_in(c, "XLod") || need_int_in(c, x, "X")) return FL_ERROR;
        if (!(xs.nd == 1 || (xs.nd == 2 && dims_agree(xs.d[1], 1))))
            return fl_err(c->e, "%s: X must be ids [T, 1], found %s", c->t, sstr(c, &xs));
        if (w < 1) return fl_err(c->e, "%s: win_size must be >= 1, found %lld", c->t, (long long)w);
        Shape s = {.nd = 2, .d = {xs.d[0], w}};
        return set_out(c, "Out", x->dtype, &s);
    }
    case FL_OPID_lod_reset:
        if (need_lod_in(c, "TargetLod")) return FL_ERROR;
        return set_like(c, "Out", x);
    default: break;
    }
    FL_UNREACHABLE();
}
