/* infer_optim.c: shape rules of the optimizer updates (sgd, momentum and adam: adapters in
 * runtime/core/ops_shape.c, kernels in runtime/kernels/optim.c; the others in ops_optim.c,
 * kernels in optim_rules.c) and of ModelAverage's average_accumulates. */
#include "compiler/infer_impl.h"

/* Optimizer: each "<State>Out" is shaped like "<State>"; Grad agrees with Param. */
FlStatus fl_infer_optimizer(Ctx *c) {
    FlVarDesc *pv, *gv;
    if (in1(c, "Param", &pv) || in1(c, "Grad", &gv)) return FL_ERROR;
    Shape ps = shape_of(pv), gs = shape_of(gv);
    if (!shapes_agree(&ps, &gs))
        return fl_err(c->e, "%s: the gradient %s of '%s' does not match the parameter's shape %s",
                      c->t, sstr(c, &gs), pv->name, sstr(c, &ps));
    for (int i = 0; i < c->info->nouts; i++) {
        const char *out = c->info->outs[i].name;
        size_t len = strlen(out);
        FL_ASSERT(len > 3 && strcmp(out + len - 3, "Out") == 0);
        char in[64];
        size_t n = len - 3 < sizeof in ? len - 3 : sizeof in - 1;
        memcpy(in, out, n);
        in[n] = 0;
        FlVarDesc *v;
        if (in_opt(c, in, &v)) return FL_ERROR;
        if (v && set_like(c, out, v)) return FL_ERROR;
    }
    return FL_OK;
}

/* average_accumulates: the sums are shaped and typed as param, the counters int64 [1]; every
 * output is its input. */
FlStatus fl_infer_average_accumulates(Ctx *c) {
    static const char *const sums[] = {"in_sum_1", "in_sum_2", "in_sum_3"};
    static const char *const counts[] = {"in_num_accumulates", "in_old_num_accumulates", "in_num_updates"};
    FlVarDesc *pv = NULL, *v = NULL;
    if (in1(c, "param", &pv) || need_float_in(c, pv, "param")) return FL_ERROR;
    Shape ps = shape_of(pv);
    for (int i = 0; i < 3; i++) {
        if (in1(c, sums[i], &v)) return FL_ERROR;
        Shape s = shape_of(v);
        if (v->dtype != pv->dtype || !shapes_agree(&s, &ps))
            return fl_err(c->e, "%s: %s is %s %s, not the param's %s %s", c->t, sums[i], sstr(c, &s), dt(v->dtype),
                          sstr(c, &ps), dt(pv->dtype));
    }
    for (int i = 0; i < 3; i++) {
        if (in1(c, counts[i], &v)) return FL_ERROR;
        Shape s = shape_of(v), one = shape1(1);
        if (v->dtype != FL_DT_INT64 || !shapes_agree(&s, &one))
            return fl_err(c->e, "%s: %s must be int64 [1], found %s %s", c->t, counts[i], dt(v->dtype), sstr(c, &s));
    }
    static const char *const outs[] = {"out_sum_1", "out_sum_2", "out_sum_3",
                                       "out_num_accumulates", "out_old_num_accumulates", "out_num_updates"};
    for (int i = 0; i < 6; i++) {
        if (in1(c, i < 3 ? sums[i] : counts[i - 3], &v) || set_like(c, outs[i], v)) return FL_ERROR;
    }
    return FL_OK;
}
