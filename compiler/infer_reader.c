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

FlStatus fl_infer_reader_next(Ctx *c) {
    if (raw_in(c, "reader_next", "Epoch")) return FL_ERROR;
    Shape one = {.nd = 1, .d = {1}};
    if (set_out(c, "Rows", FL_DT_INT64, &one)) return FL_ERROR;
    return set_out(c, "Ok", FL_DT_BOOL, &one);
}
