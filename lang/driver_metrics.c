/* driver_metrics.c: the state of a fluid.metrics metric kept on the driver (docs/driver.md,
 * "Metrics on fetched values"; stdlib/fluid/metrics.fl): Fluid's metrics are host objects whose
 * update(), eval() and reset() work on fetched numpy values, so here their states are vars of the
 * driver that the driver's ops update in place. The native module `_metrics`:
 *
 *   state(anchor, shape, dtype, value)  a var of the driver of that shape and dtype, filled with
 *                     value where the metric was made (anchor: a list the metric made then, whose
 *                     block of the driver it takes; in a runtime block, a new state each time the
 *                     driver runs it, as a Python object made there is new each time), so that
 *                     updates in the loops after it accumulate
 *   set(state, x)     state = x (cast to the state's dtype), in place, where the driver is now:
 *                     the update of a runtime loop's body is seen by the next iteration; a
 *                     number fills the state (reset())
 *   value(x)          x as a value of the driver (numbers and numpy.array(...) of them a constant)
 */
#include <string.h>

#include "lang/eval_impl.h"

static FlValue *m_state(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("state", "anchor shape dtype value", 4);
    FlSpan sp = a->span;
    FlValue *anchor = v[0];
    if (anchor->kind != VK_LIST || !fl_v_is_seq(v[1]) || !fl_v_is_num(v[3]))
        return fl_ev_error(c, sp, "_metrics.state(anchor list, shape, dtype, value)");
    if (anchor->list.rt_depth != 0 && !anchor->list.rt_block)
        return fl_ev_error(c, sp, "a metric updated with fetched values is made in a runtime block of a program "
                           "that is not the driver");
    FlBlock *here = c->b.block;
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    c->b.block = anchor->list.rt_block ? anchor->list.rt_block : fl_ir_block(c->b.main, 0);
    const char *names[3] = {"shape", "value", "dtype"};
    FlValue *vals[3] = {v[1], v[3], v[2]};
    FlValue *r = fl_ev_driver_kwop(c, "fill_constant", names, vals, 3, sp);
    c->b.block = here;
    fl_ev_driver_leave(c, &s);
    return r;
}

/* The state's shape as a list value (fill_constant's and reshape's shape). */
static FlValue *shape_list(Ctx *c, const FlVarDesc *d) {
    FlValue *l = fl_v_list(c, VK_LIST);
    for (int i = 0; i < d->ndim; i++) fl_v_list_push(c, l, fl_v_int(c, d->shape[i]));
    return l;
}

static FlValue *m_set(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("set", "state x", 2);
    FlSpan sp = a->span;
    if (!fl_ev_is_driver_var(c, v[0])) return fl_ev_error(c, sp, "_metrics.set(): the state is not a var of the driver");
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    const FlVarDesc *sd = fl_ev_var_desc(c, v[0]);
    fl_ev_driver_leave(c, &s);
    if (!sd) return fl_ev_error(c, sp, "_metrics.set(): a state without a declaration");
    FlValue *x = v[1];
    if (fl_v_is_num(x)) { /* reset(): the state's shape and dtype filled with x */
        const char *fn[3] = {"shape", "value", "dtype"};
        FlValue *fv[3] = {shape_list(c, sd), x, fl_v_int(c, sd->dtype)};
        x = fl_ev_driver_kwop(c, "fill_constant", fn, fv, 3, sp);
    } else if (!fl_ev_is_driver_var(c, x)) {
        return fl_ev_error(c, sp, "a metric's update takes fetched values and numbers, found %s", fl_v_type_name(x));
    }
    if (x->kind == VK_ERROR) return x;
    fl_ev_driver_enter(c, &s);
    const FlVarDesc *xd = fl_ev_var_desc(c, x);
    fl_ev_driver_leave(c, &s);
    if (!xd) return fl_ev_error(c, sp, "_metrics.set(): a value without a declaration");
    if (xd->dtype != sd->dtype) {
        const char *cn[3] = {"X", "in_dtype", "out_dtype"};
        FlValue *cv[3] = {x, fl_v_int(c, xd->dtype), fl_v_int(c, sd->dtype)};
        if ((x = fl_ev_driver_kwop(c, "cast", cn, cv, 3, sp))->kind == VK_ERROR) return x;
    }
    bool same = xd->ndim == sd->ndim;
    for (int i = 0; same && i < sd->ndim; i++) same = xd->shape[i] == sd->shape[i];
    if (!same) { /* a batch's one figure ([1], [1, 1], a number) into the state's shape; more is a run-time error */
        const char *rn[2] = {"X", "shape"};
        FlValue *rv[2] = {x, shape_list(c, sd)};
        if ((x = fl_ev_driver_kwop(c, "reshape", rn, rv, 2, sp))->kind == VK_ERROR) return x;
    }
    const char *an[2] = {"X", "Out"};
    FlValue *av[2] = {x, v[0]};
    FlValue *r = fl_ev_driver_kwop(c, "assign", an, av, 2, sp);
    return r->kind == VK_ERROR ? r : c->none;
}

/* value(x): x as a value of the driver: a fetched value as it is, numbers, nested lists of them
 * and numpy.array(...) of them as a constant of the driver (update(preds, labels=numpy.array(l))). */
static FlValue *m_value(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("value", "x", 1);
    FlValue *x = v[0];
    if (fl_ev_is_driver_var(c, x)) return x;
    FlValue *dt = NULL;
    if (x->kind == VK_RECORD && !x->rec.cls && x->rec.type && !strcmp(x->rec.type, "ndarray") && x->rec.attrs) {
        dt = fl_map_find_str(&x->rec.attrs->map, "_dtype");
        x = fl_map_find_str(&x->rec.attrs->map, "_value");
    }
    if (!x || (!fl_v_is_num(x) && !fl_v_is_seq(x)))
        return fl_ev_error(c, a->span, "a metric's update takes fetched values, numbers and arrays of numbers, found %s",
                           fl_v_type_name(v[0]));
    FlValue *r = fl_ev_driver_const(c, x, a->span);
    if (r->kind == VK_ERROR || !dt || dt->kind != VK_INT) return r;
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    const FlVarDesc *d = fl_ev_var_desc(c, r);
    fl_ev_driver_leave(c, &s);
    if (!d || d->dtype == (FlDType)dt->i) return r;
    const char *cn[3] = {"X", "in_dtype", "out_dtype"};
    FlValue *cv[3] = {r, fl_v_int(c, d->dtype), dt};
    return fl_ev_driver_kwop(c, "cast", cn, cv, 3, a->span);
}

static const NativeFn metrics_fns[] = {
    {"state", m_state},
    {"set", m_set},
    {"value", m_value},
};

void fl_ev_driver_metrics_install(Ctx *c) {
    fl_ev_module_of_fns(c, "_metrics", metrics_fns, FL_ARRAY_LEN(metrics_fns));
}
