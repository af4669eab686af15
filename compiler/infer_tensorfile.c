/* infer_tensorfile.c: shape rules of compiler/ops/tensorfile.def (the driver's scope_set and
 * read_file). */
#include "compiler/infer_impl.h"

/* X is a tensor, Scope a scope, and the name not empty; the var's own dtype and shape are known
 * only when the op runs (the scope's tensor), where they are checked. */
FlStatus fl_infer_scope_set(Ctx *c) {
    FlVarDesc *xv, *s;
    if (in1(c, "X", &xv) || in_opt(c, "Scope", &s)) return FL_ERROR;
    if (xv->kind != FL_VAR_DENSE) return fl_err(c->e, "scope_set: X '%s' is not a tensor", xv->name);
    if (s && s->kind != FL_VAR_RAW) return fl_err(c->e, "scope_set: Scope '%s' is not a scope", s->name);
    const FlAttr *na = fl_ir_op_attr(c->op, "name");
    if (!na || !na->s || !*na->s) return fl_err(c->e, "scope_set: the name of the var is empty");
    return FL_OK;
}

/* Out: a vector of dtype, of count values (unknown with count -1). */
FlStatus fl_infer_read_file(Ctx *c) {
    const FlAttr *pa = fl_ir_op_attr(c->op, "path"), *da = fl_ir_op_attr(c->op, "dtype");
    const FlAttr *oa = fl_ir_op_attr(c->op, "offset"), *ca = fl_ir_op_attr(c->op, "count");
    if (!pa || !pa->s || !*pa->s) return fl_err(c->e, "read_file: the path is empty");
    FlDType dt = da ? (FlDType)da->i : FL_DT_FLOAT32;
    if (dt != FL_DT_FLOAT32 && dt != FL_DT_FLOAT64 && dt != FL_DT_INT32 && dt != FL_DT_INT64)
        return fl_err(c->e, "read_file: dtype %s (float32, float64, int32 or int64 are read)", fl_dtype_name(dt));
    int64_t off = oa ? oa->i : 0, count = ca ? ca->i : -1;
    if (off < 0) return fl_err(c->e, "read_file: offset %lld is negative", (long long)off);
    if (count < -1) return fl_err(c->e, "read_file: count %lld (a number of values, or -1 for all)", (long long)count);
    Shape out = {.nd = 1, .d = {count}};
    return set_out(c, "Out", dt, &out);
}
