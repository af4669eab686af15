/* optim_rules.c: the optimizers whose update is elementwise over the parameter and state
 * tensors shaped like it (adagrad, decayed_adagrad, rmsprop, adamax, adadelta, ftrl,
 * lars_momentum, lamb): one kernel, fl_kernel_optim, with the rule as an argument; the formulas are in
 * kernels.h, the loops in optim_rules_t.inc. Outputs are written in place when the output is
 * the input's own struct and nobody else holds its buffer, else into new tensors committed once
 * every check has passed (as optim.c). */
#include "runtime/kernels/kernels_impl.h"

#include <tgmath.h>

#define FL_TMPL "optim_rules_t.inc"
#include "runtime/kernels/tmpl.h"

static const struct {
    const char *name;
    int nstate;
    const char *states[3];
} rules[] = {
    [FL_OPTIM_ADAGRAD] = {"adagrad", 1, {"Moment"}},
    [FL_OPTIM_DECAYED_ADAGRAD] = {"decayed_adagrad", 1, {"Moment"}},
    [FL_OPTIM_RMSPROP] = {"rmsprop", 3, {"Moment", "MeanSquare", "MeanGrad"}},
    [FL_OPTIM_ADAMAX] = {"adamax", 2, {"Moment", "InfNorm"}},
    [FL_OPTIM_ADADELTA] = {"adadelta", 2, {"AvgSquaredGrad", "AvgSquaredUpdate"}},
    [FL_OPTIM_FTRL] = {"ftrl", 2, {"SquaredAccum", "LinearAccum"}},
    [FL_OPTIM_LARS_MOMENTUM] = {"lars_momentum", 1, {"Velocity"}},
    [FL_OPTIM_LAMB] = {"lamb", 2, {"Moment1", "Moment2"}},
};
_Static_assert(sizeof rules / sizeof rules[0] == FL_OPTIM_COUNT, "one entry per rule");

const char *fl_optim_rule_name(FlOptimRule rule) { return rules[rule].name; }

/* Where the result for `out` (from input `in`) goes: in place, or a new tensor in *tmp. */
static FlStatus dest(FlErr *e, const char *op, FlTensor *out, const FlTensor *in, FlTensor *tmp,
                     void **p) {
    if (out == in && fl_buffer_refs(in->buf) == 1) {
        *p = fl_tensor_data(in);
        return FL_OK;
    }
    if (kalloc_raw_like(e, op, tmp, in)) return FL_ERROR; /* the update writes every element */
    *p = fl_tensor_data(tmp);
    return FL_OK;
}

FlStatus fl_kernel_optim(FlErr *e, FlOptimRule rule, const FlTensor *param, const FlTensor *grad,
                         const FlTensor *learning_rate, const FlTensor *const *state,
                         const FlTensor *beta_pow, const double *hp, FlTensor *param_out,
                         FlTensor *const *state_out, FlTensor *beta_pow_out) {
    const char *op = rules[rule].name;
    int ns = rules[rule].nstate;
    bool centered = rule == FL_OPTIM_RMSPROP && hp[3] != 0;
    if (rule == FL_OPTIM_RMSPROP && !centered) ns = 2; /* MeanGrad only when centered */
    double lr = 0, bp = 0;
    if (kneed_float(e, op, "Param", param) || ksame(e, op, "Param", param, "Grad", grad) ||
        kscalar(e, op, "LearningRate", learning_rate, &lr) || kwant(e, op, "ParamOut", param_out))
        return FL_ERROR;
    for (int k = 0; k < ns; k++)
        if (ksame(e, op, "Param", param, rules[rule].states[k], state[k]) ||
            kwant(e, op, rules[rule].states[k], state_out[k]))
            return FL_ERROR;
    if (rule == FL_OPTIM_ADAMAX) {
        if (kscalar(e, op, "Beta1Pow", beta_pow, &bp)) return FL_ERROR;
        if (bp == 1) return fl_err(e, "%s: Beta1Pow is 1, so 1 - Beta1Pow divides by zero", op);
        lr /= 1 - bp;
    }
    if (rule == FL_OPTIM_FTRL && lr == 0) return fl_err(e, "%s: the learning rate is 0 (ftrl divides by it)", op);
    int64_t n = fl_tensor_numel(param);
    bool f32 = param->dtype == FL_DT_FLOAT32;
    if (rule == FL_OPTIM_LARS_MOMENTUM) {
        /* the layer-wise rate: lr * coeff * ||p|| / (||g|| + decay * ||p||) when both norms are
         * positive, else lr */
        double pn = f32 ? l2norm_f32(fl_tensor_data(param), n) : l2norm_f64(fl_tensor_data(param), n);
        double gn = f32 ? l2norm_f32(fl_tensor_data(grad), n) : l2norm_f64(fl_tensor_data(grad), n);
        if (pn > 0 && gn > 0) lr = lr * hp[1] * pn / (gn + hp[2] * pn);
    }
    FlTensor tp = FL_TENSOR_INIT, ts[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT}, tb = FL_TENSOR_INIT;
    void *po, *so[3] = {0};
    const void *si[3] = {0};
    FlStatus st = FL_ERROR;
    if (dest(e, op, param_out, param, &tp, &po)) goto fail;
    for (int k = 0; k < ns; k++) {
        si[k] = fl_tensor_data(state[k]);
        if (dest(e, op, state_out[k], state[k], &ts[k], &so[k])) goto fail;
    }
    if (rule == FL_OPTIM_ADAMAX && beta_pow_out) { /* computed before anything is committed */
        if (kalloc_like(e, op, &tb, beta_pow)) goto fail;
        fl_tensor_set(&tb, 0, bp * hp[0]);
    }
    if (f32)
        rule_loop_f32(rule, fl_tensor_data(param), fl_tensor_data(grad), (const float *const *)si, po,
                      (float *const *)so, hp, lr, n);
    else
        rule_loop_f64(rule, fl_tensor_data(param), fl_tensor_data(grad), (const double *const *)si, po,
                      (double *const *)so, hp, lr, n);
    if (tp.buf) kout(param_out, &tp);
    for (int k = 0; k < ns; k++)
        if (ts[k].buf) kout(state_out[k], &ts[k]);
    if (tb.buf) kout(beta_pow_out, &tb);
    return FL_OK;
fail:
    fl_tensor_fini(&tp);
    for (int k = 0; k < 3; k++) fl_tensor_fini(&ts[k]);
    fl_tensor_fini(&tb);
    return st;
}
