/* infer_chan.c: rules of the channel ops (adapters in runtime/core/ops_chan.c): what a channel
 * carries, what a send may put in it, and the channels that time_after / time_tick make. go,
 * panic, time_sleep and the block ops of the CSP worker have nothing to infer. */
#include "compiler/infer_impl.h"

/* A value sent on a channel must be of its element dtype and, when the channel declares a shape,
 * of that shape (-1 dims on either side agree with any size; the executor checks the rest at
 * run time). */
static FlStatus check_send(Ctx *c, const char *chan, const char *val) {
    FlVarDesc *cd = chan ? fl_ir_var_lookup(c->p, c->b, chan) : NULL;
    FlVarDesc *vd = val ? fl_ir_var_lookup(c->p, c->b, val) : NULL;
    if (!cd || !vd || cd->kind != FL_VAR_CHANNEL) return FL_OK;
    /* a channel of channels (elem_chans) carries channels one level less deep */
    int want = cd->elem_chans, got = vd->kind == FL_VAR_CHANNEL ? vd->elem_chans + 1 : 0;
    Shape cs = shape_of(cd), vs = shape_of(vd);
    bool ok = vd->dtype == cd->dtype && want == got;
    if (ok && cs.nd > 0 && vs.nd > 0) ok = shapes_agree(&cs, &vs);
    if (ok) return FL_OK;
    static const char chans[] = "chan chan chan chan chan chan chan chan chan ";
    int nw = want > 9 ? 9 : want, ng = got > 9 ? 9 : got;
    return fl_err(c->e, "%s: channel '%s' carries %.*s%s %s, but the value '%s' is %.*s%s %s", c->t, chan, 5 * nw,
                  chans, dt(cd->dtype), cs.nd ? sstr(c, &cs) : "(any shape)", val, 5 * ng, chans, dt(vd->dtype),
                  vs.nd || !ng ? sstr(c, &vs) : "(any shape)");
}

FlStatus fl_infer_select_sends(Ctx *c) {
    FlAttr *kinds = fl_ir_op_attr(c->op, "case_kinds"), *chans = fl_ir_op_attr(c->op, "case_channels");
    FlAttr *vars = fl_ir_op_attr(c->op, "case_vars");
    if (!kinds || !chans || !vars) return FL_OK; /* the validator reports a malformed select */
    for (size_t i = 0; i < kinds->n && i < chans->n && i < vars->n; i++)
        if (kinds->ints[i] == 1 && check_send(c, chans->strs[i], vars->strs[i])) return FL_ERROR;
    return FL_OK;
}

FlStatus fl_infer_channel_send(Ctx *c) {
    return check_send(c, fl_ir_op_input1(c->op, "Channel"), fl_ir_op_input1(c->op, "X"));
}

/* The received value has the channel's element dtype and shape (a channel var's shape is its
 * elements' shape; rank 0 when unknown); Status is a bool [1]. */
FlStatus fl_infer_channel_recv(Ctx *c) {
    const char *ch = fl_ir_op_input1(c->op, "Channel"), *out = fl_ir_op_output1(c->op, "Out");
    FlVarDesc *cd = ch ? fl_ir_var_lookup(c->p, c->b, ch) : NULL;
    FlVarDesc *od = out ? fl_ir_var_lookup(c->p, c->b, out) : NULL;
    if (cd && od && od != cd) fl_ir_var_set_elem(od, cd);
    return FL_OK;
}

/* time_after, time_tick: Out is a channel of float32 [1], capacity 1. */
FlStatus fl_infer_time_after(Ctx *c) {
    const char *out = fl_ir_op_output1(c->op, "Out");
    FlVarDesc *o;
    if (!out) return fl_err(c->e, "time_after: output Out is missing");
    if (lookup(c, "output", "Out", out, &o)) return FL_ERROR;
    Shape one = shape1(1);
    o->kind = FL_VAR_CHANNEL;
    o->dtype = FL_DT_FLOAT32;
    fl_ir_var_set_shape(o, one.nd, one.d);
    o->capacity = 1;
    o->stop_gradient = true;
    return FL_OK;
}

/* Out keeps its declaration: a channel var's element type. */
FlStatus fl_infer_channel_nil(Ctx *c) {
    FlVarDesc *o;
    const char *out = fl_ir_op_output1(c->op, "Out");
    if (!out) return fl_err(c->e, "channel_nil: output Out is missing");
    if (lookup(c, "output", "Out", out, &o)) return FL_ERROR;
    return o->kind == FL_VAR_CHANNEL ? FL_OK : fl_err(c->e, "channel_nil: Out '%s' is not a channel", o->name);
}

FlStatus fl_infer_channel_len(Ctx *c) {
    Shape one = shape1(1);
    return set_out(c, "Out", FL_DT_INT64, &one);
}

FlStatus fl_infer_channel_assign(Ctx *c) {
    FlVarDesc *x, *o;
    const char *out = fl_ir_op_output1(c->op, "Out");
    if (in1(c, "X", &x)) return FL_ERROR;
    if (!out) return fl_err(c->e, "channel_assign: output Out is missing");
    if (lookup(c, "output", "Out", out, &o)) return FL_ERROR;
    if (x->kind != FL_VAR_CHANNEL) return fl_err(c->e, "channel_assign: X '%s' is not a channel", x->name);
    if (o != x) { /* the element type and capacity, not where Out is declared */
        bool persist = o->persistable;
        FlLoc loc = o->loc;
        fl_ir_var_copy(o, x);
        o->persistable = persist, o->loc = loc;
    }
    return FL_OK;
}
