/* infer_control.c: rules of the control ops (adapters in runtime/core/ops_control.c and
 * ops_rnn_ctl.c): list_index's picked var, and the StepScopes that dynamic_rnn and while keep for
 * their gradients. conditional_block and parallel_for have nothing to infer: their blocks are
 * inferred on their own (fl_infer_program). */
#include "compiler/infer_impl.h"

FlStatus fl_infer_list_index(Ctx *c) {
    FlSlot *xs = fl_ir_op_input(c->op, "X");
    if (!xs || xs->nargs == 0) return fl_err(c->e, "%s: the list is empty", c->t);
    FlVarDesc *first;
    if (lookup(c, "input", "X", xs->args[0], &first)) return FL_ERROR;
    Shape f = shape_of(first);
    for (size_t i = 1; i < xs->nargs; i++) {
        FlVarDesc *v;
        if (lookup(c, "input", "X", xs->args[i], &v)) return FL_ERROR;
        Shape s = shape_of(v);
        if (v->kind != first->kind || v->dtype != first->dtype || v->elem_chans != first->elem_chans ||
            !shapes_agree(&f, &s))
            return fl_err(c->e, "%s: list elements differ (%s %s and %s %s)", c->t, sstr(c, &f),
                          dt(first->dtype), sstr(c, &s), dt(v->dtype));
    }
    const char *out = fl_ir_op_output1(c->op, "Out");
    if (!out) return FL_OK;
    FlVarDesc *ov;
    if (lookup(c, "output", "Out", out, &ov)) return FL_ERROR;
    ov->kind = first->kind;
    ov->dtype = first->dtype;
    ov->capacity = first->capacity;
    ov->elem_chans = first->elem_chans;
    fl_ir_var_set_shape(ov, f.nd, f.d);
    return FL_OK;
}

/* StepScopes: the runtime's own (a raw var, no gradient). */
static FlStatus raw_step_scopes(Ctx *c, const char *ss) {
    FlVarDesc *o;
    if (lookup(c, "output", "StepScopes", ss, &o)) return FL_ERROR;
    o->kind = FL_VAR_RAW;
    o->stop_gradient = true;
    return FL_OK;
}

/* Out: declared by the layer; StepScopes: the runtime's own. */
FlStatus fl_infer_dynamic_rnn(Ctx *c) {
    const char *ss = fl_ir_op_output1(c->op, "StepScopes");
    if (!ss) return fl_err(c->e, "dynamic_rnn: output StepScopes is missing");
    return raw_step_scopes(c, ss);
}

/* StepScopes (added by append_backward): the runtime's own. */
FlStatus fl_infer_while(Ctx *c) {
    const char *ss = fl_ir_op_output1(c->op, "StepScopes");
    if (!ss) return FL_OK;
    return raw_step_scopes(c, ss);
}
