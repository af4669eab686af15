/* infer_reader.c: shape rules of the driver's reader ops (compiler/ops/reader.def; docs/driver.md,
 * "Data"). A reader and an epoch are raw vars; reader_next's fields are declared by the compiler
 * from the reader's layout (dataset/), since the driver alone does not know it. */
#include "compiler/infer_impl.h"

/* Out: a raw var. */
static FlStatus raw_out(Ctx *c, const char *op) {
    const char *out = fl_ir_op_output1(c->op, "Out");
    FlVarDesc *o;
    if (!out) return fl_err(c->e, "%s: output Out is missing", op);
    if (lookup(c, "output", "Out", out, &o)) return FL_ERROR;
    o->kind = FL_VAR_RAW;
    o->stop_gradient = true;
    return FL_OK;
}

/* A raw input (a reader_open's or reader_epoch's Out). */
static FlStatus raw_in(Ctx *c, const char *op, const char *slot) {
    FlVarDesc *v;
    if (in1(c, slot, &v)) return FL_ERROR;
    if (v->kind != FL_VAR_RAW) return fl_err(c->e, "%s: %s '%s' is not a reader", op, slot, v->name);
    return FL_OK;
}

FlStatus fl_infer_reader_open(Ctx *c) {
    const FlAttr *r = fl_ir_op_attr(c->op, "reader");
    if (!r || r->i < 0) return fl_err(c->e, "reader_open: reader %lld is not a reader of the bundle", r ? (long long)r->i : -1LL);
    return raw_out(c, "reader_open");
}

FlStatus fl_infer_reader_epoch(Ctx *c) {
    if (raw_in(c, "reader_epoch", "Reader")) return FL_ERROR;
    return raw_out(c, "reader_epoch");
}

FlStatus fl_infer_reader_end(Ctx *c) {
    const char *out = fl_ir_op_output1(c->op, "Epoch");
    FlVarDesc *o;
    if (!out) return fl_err(c->e, "reader_end: output Epoch is missing");
    if (lookup(c, "output", "Epoch", out, &o)) return FL_ERROR;
    o->kind = FL_VAR_RAW;
    o->stop_gradient = true;
    return FL_OK;
}

FlStatus fl_infer_recordio_write(Ctx *c) {
    if (raw_in(c, "recordio_write", "Epoch")) return FL_ERROR;
    size_t nd = 0, nr = 0, ns = 0, at = 0;
    const FlAttr *p = fl_ir_op_attr(c->op, "file_path"), *d = fl_ir_op_attr(c->op, "dtypes"),
                 *r = fl_ir_op_attr(c->op, "ranks"), *s = fl_ir_op_attr(c->op, "shape_concat");
    if (d) nd = d->n;
    if (r) nr = r->n;
    if (s) ns = s->n;
    if (!p || !p->s || !p->s[0]) return fl_err(c->e, "recordio_write: no file_path");
    if (nd != nr || !nd) return fl_err(c->e, "recordio_write: %zu dtypes and %zu ranks", nd, nr);
    for (size_t i = 0; i < nr; i++) {
        FlDType dt;
        if (!fl_dtype_from_name(d->strs[i], &dt)) return fl_err(c->e, "recordio_write: dtype '%s'", d->strs[i]);
        if (r->ints[i] < 1 || r->ints[i] > FL_IR_MAX_DIMS || (size_t)r->ints[i] > ns - at)
            return fl_err(c->e, "recordio_write: field %zu of rank %lld", i, (long long)r->ints[i]);
        at += (size_t)r->ints[i];
    }
    if (at != ns) return fl_err(c->e, "recordio_write: %zu dims for ranks of %zu", ns, at);
    if (fl_ir_op_get_int(c->op, "max_num_records", 1000) < 1) return fl_err(c->e, "recordio_write: max_num_records below 1");
    Shape one = {.nd = 1, .d = {1}};
    return set_out(c, "Out", FL_DT_INT64, &one);
}

FlStatus fl_infer_reader_next(Ctx *c) {
    if (raw_in(c, "reader_next", "Epoch")) return FL_ERROR;
    Shape one = {.nd = 1, .d = {1}};
    if (set_out(c, "Rows", FL_DT_INT64, &one)) return FL_ERROR;
    return set_out(c, "Ok", FL_DT_BOOL, &one);
}
