/* infer_report.c: shape rules of fluid.train's report ops on the driver (compiler/ops/report.def;
 * docs/driver.md, "fluid.train over the driver"). A report is a raw var; report_next's feeds keep
 * the declarations of the main program's data vars they feed, which the driver's builder copies. */
#include "compiler/infer_impl.h"

/* Input slot of op is a raw var (a report_open's Out). */
static FlStatus raw_in(Ctx *c, const char *op, const char *slot) {
    FlVarDesc *v;
    if (in1(c, slot, &v)) return FL_ERROR;
    if (v->kind != FL_VAR_RAW) return fl_err(c->e, "%s: %s '%s' is not a report (report_open's Out)", op, slot, v->name);
    return FL_OK;
}

FlStatus fl_infer_option(Ctx *c) {
    const char *name = fl_ir_op_get_string(c->op, "name", "");
    if (strcmp(name, "epochs") && strcmp(name, "batch_size") && strcmp(name, "seed"))
        return fl_err(c->e, "option: name '%s' is not an option of the run (epochs, batch_size, seed)", name);
    Shape one = {.nd = 1, .d = {1}};
    return set_out(c, "Out", FL_DT_INT64, &one);
}

FlStatus fl_infer_report_open(Ctx *c) {
    static const char *const ins[] = {"Epochs", "BatchSize", "Seed"};
    for (size_t i = 0; i < FL_ARRAY_LEN(ins); i++) {
        FlVarDesc *v;
        if (in1(c, ins[i], &v)) return FL_ERROR;
        if (v->dtype != FL_DT_INT64) return fl_err(c->e, "report_open: %s '%s' is not int64", ins[i], v->name);
    }
    const char *out = fl_ir_op_output1(c->op, "Out");
    FlVarDesc *o;
    if (!out) return fl_err(c->e, "report_open: output Out is missing");
    if (lookup(c, "output", "Out", out, &o)) return FL_ERROR;
    o->kind = FL_VAR_RAW;
    o->stop_gradient = true;
    return FL_OK;
}

FlStatus fl_infer_report_next(Ctx *c) {
    if (raw_in(c, "report_next", "Report")) return FL_ERROR;
    Shape one = {.nd = 1, .d = {1}};
    if (set_out(c, "Rows", FL_DT_INT64, &one) || set_out(c, "GlobalRows", FL_DT_INT64, &one) ||
        set_out(c, "Step", FL_DT_INT64, &one))
        return FL_ERROR;
    return set_out(c, "Ok", FL_DT_BOOL, &one);
}

FlStatus fl_infer_report_in(Ctx *c) { return raw_in(c, c->op->type, "Report"); }
