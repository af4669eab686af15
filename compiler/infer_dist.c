/* infer_dist.c: shape rules of the distributed ops that have outputs: the distributed table's
 * lookup and sparse gradient on a trainer, and allreduce (adapters in runtime/core/ops_dist.c and
 * ops_nn.c; the transport in runtime/mpi/). send, recv and the barriers have nothing to infer. */
#include "compiler/infer_impl.h"

/* distributed_lookup_table: Ids -> Out, as lookup_table with a table of
 * [sum(height_sections), width] and dtype `dtype` that the trainer does not hold; one table
 * name and pserver per section. */
FlStatus fl_infer_distributed_lookup_table(Ctx *c) {
    FlVarDesc *iv;
    if (in1(c, "Ids", &iv)) return FL_ERROR;
    Shape ids = shape_of(iv);
    if (iv->dtype != FL_DT_INT64) return fl_err(c->e, "%s: the ids must be int64, found %s", c->t, dt(iv->dtype));
    if (ids.nd == 0) return fl_err(c->e, "%s: the ids have no dims", c->t);
    size_t nsec, nep;
    bool ok, ok2;
    const int64_t *sec = intsattr(c, "height_sections", &nsec, &ok), *ep = intsattr(c, "epmap", &nep, &ok2);
    if (!ok || !ok2) return FL_ERROR;
    const FlAttr *names = fl_ir_op_attr(c->op, "table_names");
    size_t nn = names && names->type == FL_ATTR_STRINGS ? names->n : 0;
    if (nsec == 0 || nsec != nep || nsec != nn)
        return fl_err(c->e, "%s: %zu height_sections, %zu epmap entries and %zu table_names (one of each per block of the "
                      "table, at least one)", c->t, nsec, nep, nn);
    int64_t height = 0;
    for (size_t k = 0; k < nsec; k++) {
        if (sec[k] < 1 || ep[k] < 0)
            return fl_err(c->e, "%s: block %zu has %lld rows on pserver %lld (blocks have rows, pservers are >= 0)", c->t,
                          k, (long long)sec[k], (long long)ep[k]);
        height = sadd(height, sec[k]);
    }
    int64_t w = iattr(c, "width"), pad = iattr(c, "padding_idx");
    if (w < 1) return fl_err(c->e, "%s: width is %lld (the table's row length, >= 1)", c->t, (long long)w);
    if (pad < -1 || pad >= height)
        return fl_err(c->e, "%s: padding_idx %lld is not a row of the table (%lld rows)", c->t, (long long)pad,
                      (long long)height);
    FlDType t = (FlDType)iattr(c, "dtype");
    if (check_dtype(c, t)) return FL_ERROR;
    if (t != FL_DT_FLOAT32 && t != FL_DT_FLOAT64)
        return fl_err(c->e, "%s: the table must be float32 or float64, found %s", c->t, dt(t));
    Shape out = ids;
    if (ids.d[ids.nd - 1] == 1 && ids.nd > 1) out.d[out.nd - 1] = w;
    else if (out.nd < FL_IR_MAX_DIMS) out.d[out.nd++] = w;
    else return fl_err(c->e, "%s: the result has too many dims", c->t);
    return set_out(c, "Out", t, &out);
}

/* distributed_lookup_grad_rows: Ids, Out@GRAD -> W@GRAD, a SelectedRows [height, width]. */
FlStatus fl_infer_distributed_lookup_grad_rows(Ctx *c) {
    FlVarDesc *iv, *gv;
    if (in1(c, "Ids", &iv) || in1(c, "Out@GRAD", &gv)) return FL_ERROR;
    if (iv->dtype != FL_DT_INT64) return fl_err(c->e, "%s: the ids must be int64, found %s", c->t, dt(iv->dtype));
    Shape g = shape_of(gv);
    int64_t h = iattr(c, "height");
    if (h < 1) return fl_err(c->e, "%s: height is %lld (the table's rows, >= 1)", c->t, (long long)h);
    if (g.nd < 2) return fl_err(c->e, "%s: Out@GRAD %s must have a row length", c->t, sstr(c, &g));
    Shape out = {.nd = 2, .d = {h, g.d[g.nd - 1]}};
    if (set_out(c, "W@GRAD", gv->dtype, &out)) return FL_ERROR;
    FlVarDesc *o;
    FlSlot *os = fl_ir_op_output(c->op, "W@GRAD");
    if (os && os->nargs == 1 && !skip_arg(os->args[0]) && lookup(c, "output", "W@GRAD", os->args[0], &o) == FL_OK)
        o->kind = FL_VAR_SELECTED_ROWS;
    return FL_OK;
}

/* allreduce: Out[i] is like X[i], a float tensor. */
FlStatus fl_infer_allreduce(Ctx *c) {
    FlSlot *xs = fl_ir_op_input(c->op, "X"), *os = fl_ir_op_output(c->op, "Out");
    size_t nx = xs ? xs->nargs : 0, no = os ? os->nargs : 0;
    if (nx != no) return fl_err(c->e, "%s: %zu inputs X but %zu outputs Out (one per input)", c->t, nx, no);
    for (size_t i = 0; i < nx; i++) {
        FlVarDesc *x, *o;
        if (lookup(c, "input", "X", xs->args[i], &x) || lookup(c, "output", "Out", os->args[i], &o)) return FL_ERROR;
        if (!is_float(x->dtype))
            return fl_err(c->e, "%s: X '%s' is %s; only float tensors are reduced", c->t, x->name, dt(x->dtype));
        if (o == x) continue;
        o->dtype = x->dtype;
        fl_ir_var_set_shape(o, x->ndim, x->shape);
    }
    return FL_OK;
}
