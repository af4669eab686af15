/* optim.c: sgd, momentum and adam updates (Paddle's formulas). Outputs are either new tensors
 * or, in place, the input's own buffer when the output struct is the input struct and nobody
 * else holds that buffer (see kernels.h). */
#include "runtime/kernels/kernels_impl.h"

#include <tgmath.h>

#define FL_TMPL "optim_t.inc"
#include "runtime/kernels/tmpl.h"

#include "runtime/kernels/par.h"

/* Elements per chunk of an update on the kernel pool (par.h); element-wise, so chunks never
 * change a result. */
enum { OPTIM_GRAIN = 1 << 15 };

/* An update's arrays and scalars; chunk [lo, hi) runs the typed loop on those elements. */
typedef struct UpdJob {
    int kind; /* 0 sgd, 1 momentum, 2 adam */
    bool f32, nesterov;
    const void *p, *g, *a, *b;
    void *po, *ao, *bo;
    double lr, mu, b1, b2, eps;
} UpdJob;

#define OFF(T, ptr) ((T *)(ptr) + lo)
#define UPD(T, SFX)                                                                            \
    switch (j->kind) {                                                                       \
    case 0: sgd_##SFX(OFF(const T, j->p), OFF(const T, j->g), (T)j->lr, OFF(T, j->po), hi - lo); break; \
    case 1:                                                                                  \
        momentum_##SFX(OFF(const T, j->p), OFF(const T, j->g), OFF(const T, j->a), (T)j->lr, (T)j->mu, \
                       j->nesterov, OFF(T, j->po), OFF(T, j->ao), hi - lo);                  \
        break;                                                                               \
    default:                                                                                 \
        adam_##SFX(OFF(const T, j->p), OFF(const T, j->g), OFF(const T, j->a), OFF(const T, j->b), (T)j->lr, \
                   (T)j->b1, (T)j->b2, (T)j->eps, OFF(T, j->po), OFF(T, j->ao), OFF(T, j->bo), hi - lo); \
    }

static void upd_chunk(void *arg, int64_t lo, int64_t hi) {
    const UpdJob *j = arg;
    if (j->f32) {
        UPD(float, f32)
    } else {
        UPD(double, f64)
    }
}

/* Where the result for `out` (from input `in`) is written: in place, or a new tensor in *tmp. */
static FlStatus dest(FlErr *e, const char *op, FlTensor *out, const FlTensor *in, FlTensor *tmp,
                     void **p) {
    if (kwant(e, op, "the updated param", out)) return FL_ERROR;
    if (out == in && fl_buffer_refs(in->buf) == 1) {
        *p = fl_tensor_data(in);
        return FL_OK;
    }
    if (kalloc_raw_like(e, op, tmp, in)) return FL_ERROR; /* the update writes every element */
    *p = fl_tensor_data(tmp);
    return FL_OK;
}

static void commit(FlTensor *out, FlTensor *tmp) {
    if (tmp->buf) kout(out, tmp);
}

static FlStatus check_state(FlErr *e, const char *op, const FlTensor *param, const char *slot,
                            const FlTensor *t) {
    return ksame(e, op, "Param", param, slot, t);
}

FlStatus fl_kernel_sgd(FlErr *e, const FlTensor *param, const FlTensor *grad,
                       const FlTensor *learning_rate, FlTensor *param_out) {
    const char *op = "sgd";
    double lr = 0;
    if (kneed_float(e, op, "Param", param) || check_state(e, op, param, "Grad", grad) ||
        kscalar(e, op, "LearningRate", learning_rate, &lr))
        return FL_ERROR;
    FlTensor t = FL_TENSOR_INIT;
    void *po;
    if (dest(e, op, param_out, param, &t, &po)) return FL_ERROR;
    int64_t n = fl_tensor_numel(param);
    UpdJob j = {.kind = 0, .f32 = param->dtype == FL_DT_FLOAT32, .p = fl_tensor_data(param),
                .g = fl_tensor_data(grad), .po = po, .lr = lr};
    fl_par_for(n, OPTIM_GRAIN, upd_chunk, &j);
    commit(param_out, &t);
    return FL_OK;
}

FlStatus fl_kernel_momentum(FlErr *e, const FlTensor *param, const FlTensor *grad,
                            const FlTensor *velocity, const FlTensor *learning_rate, double mu,
                            bool use_nesterov, FlTensor *param_out, FlTensor *velocity_out) {
    const char *op = "momentum";
    double lr = 0;
    if (kneed_float(e, op, "Param", param) || check_state(e, op, param, "Grad", grad) ||
        check_state(e, op, param, "Velocity", velocity) ||
        kscalar(e, op, "LearningRate", learning_rate, &lr))
        return FL_ERROR;
    FlTensor tp = FL_TENSOR_INIT, tv = FL_TENSOR_INIT;
    void *po, *vo;
    if (dest(e, op, param_out, param, &tp, &po)) return FL_ERROR;
    if (dest(e, op, velocity_out, velocity, &tv, &vo)) {
        fl_tensor_fini(&tp);
        return FL_ERROR;
    }
    int64_t n = fl_tensor_numel(param);
    UpdJob j = {.kind = 1, .f32 = param->dtype == FL_DT_FLOAT32, .nesterov = use_nesterov,
                .p = fl_tensor_data(param), .g = fl_tensor_data(grad), .a = fl_tensor_data(velocity),
                .po = po, .ao = vo, .lr = lr, .mu = mu};
    fl_par_for(n, OPTIM_GRAIN, upd_chunk, &j);
    commit(param_out, &tp);
    commit(velocity_out, &tv);
    return FL_OK;
}

static FlStatus scalar_out(FlErr *e, const char *op, const FlTensor *in, double v, FlTensor *out) {
    if (!out) return FL_OK;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &r, in)) return FL_ERROR;
    fl_tensor_set(&r, 0, v);
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_adam(FlErr *e, const FlTensor *param, const FlTensor *grad,
                        const FlTensor *learning_rate, const FlTensor *moment1,
                        const FlTensor *moment2, const FlTensor *beta1_pow,
                        const FlTensor *beta2_pow, double beta1, double beta2, double epsilon,
                        FlTensor *param_out, FlTensor *moment1_out, FlTensor *moment2_out,
                        FlTensor *beta1_pow_out, FlTensor *beta2_pow_out) {
    const char *op = "adam";
    double lr = 0, b1p = 0, b2p = 0;
    if (kneed_float(e, op, "Param", param) || check_state(e, op, param, "Grad", grad) ||
        check_state(e, op, param, "Moment1", moment1) ||
        check_state(e, op, param, "Moment2", moment2) ||
        kscalar(e, op, "LearningRate", learning_rate, &lr) ||
        kscalar(e, op, "Beta1Pow", beta1_pow, &b1p) || kscalar(e, op, "Beta2Pow", beta2_pow, &b2p))
        return FL_ERROR;
    if (b1p == 1) return fl_err(e, "%s: Beta1Pow is 1, so 1 - Beta1Pow divides by zero", op);
    FlTensor tp = FL_TENSOR_INIT, t1 = FL_TENSOR_INIT, t2 = FL_TENSOR_INIT;
    void *po, *m1o, *m2o;
    if (dest(e, op, param_out, param, &tp, &po) || dest(e, op, moment1_out, moment1, &t1, &m1o) ||
        dest(e, op, moment2_out, moment2, &t2, &m2o)) {
        fl_tensor_fini(&tp);
        fl_tensor_fini(&t1);
        fl_tensor_fini(&t2);
        return FL_ERROR;
    }
    /* the scalar outputs are computed before anything is committed (they may alias inputs) */
    FlTensor s1 = FL_TENSOR_INIT, s2 = FL_TENSOR_INIT;
    if (scalar_out(e, op, beta1_pow, b1p * beta1, beta1_pow_out ? &s1 : NULL) ||
        scalar_out(e, op, beta2_pow, b2p * beta2, beta2_pow_out ? &s2 : NULL)) {
        fl_tensor_fini(&tp);
        fl_tensor_fini(&t1);
        fl_tensor_fini(&t2);
        fl_tensor_fini(&s1);
        return FL_ERROR;
    }
    double lr_t = lr * sqrt(1 - b2p) / (1 - b1p), eps_hat = epsilon * sqrt(1 - b2p);
    int64_t n = fl_tensor_numel(param);
    UpdJob j = {.kind = 2, .f32 = param->dtype == FL_DT_FLOAT32, .p = fl_tensor_data(param),
                .g = fl_tensor_data(grad), .a = fl_tensor_data(moment1), .b = fl_tensor_data(moment2),
                .po = po, .ao = m1o, .bo = m2o, .lr = lr_t, .b1 = beta1, .b2 = beta2, .eps = eps_hat};
    fl_par_for(n, OPTIM_GRAIN, upd_chunk, &j);
    commit(param_out, &tp);
    commit(moment1_out, &t1);
    commit(moment2_out, &t2);
    if (beta1_pow_out) kout(beta1_pow_out, &s1);
    if (beta2_pow_out) kout(beta2_pow_out, &s2);
    return FL_OK;
}

static FlStatus counter(FlErr *e, const char *op, const char *slot, const FlTensor *t, int64_t *v) {
    if (!fl_tensor_has_data(t) || t->dtype != FL_DT_INT64 || fl_tensor_numel(t) != 1)
        return fl_err(e, "%s: %s must be an int64 tensor of one element", op, slot);
    *v = *(const int64_t *)fl_tensor_data(t);
    if (*v < 0) return fl_err(e, "%s: %s is negative (%lld)", op, slot, (long long)*v);
    return FL_OK;
}

static FlStatus counter_out(FlErr *e, const char *op, const FlTensor *in, int64_t v, FlTensor *out) {
    if (kwant(e, op, "a counter", out)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &r, in)) return FL_ERROR;
    *(int64_t *)fl_tensor_data(&r) = v;
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_average_accumulates(FlErr *e, const FlTensor *param, const FlTensor *const sum[3],
                                       const FlTensor *const count[3], double average_window,
                                       int64_t min_window, int64_t max_window, FlTensor *const sum_out[3],
                                       FlTensor *const count_out[3]) {
    static const char *const sums[3] = {"in_sum_1", "in_sum_2", "in_sum_3"};
    static const char *const counts[3] = {"in_num_accumulates", "in_old_num_accumulates", "in_num_updates"};
    const char *op = "average_accumulates";
    if (min_window > max_window)
        return fl_err(e, "%s: min_average_window %lld is larger than max_average_window %lld", op,
                      (long long)min_window, (long long)max_window);
    if (kneed_float(e, op, "param", param)) return FL_ERROR;
    int64_t c[3];
    for (int k = 0; k < 3; k++)
        if (check_state(e, op, param, sums[k], sum[k]) || counter(e, op, counts[k], count[k], &c[k])) return FL_ERROR;
    if (c[0] == INT64_MAX || c[2] == INT64_MAX) return fl_err(e, "%s: the counters overflow", op);
    int64_t num_acc = c[0] + 1, old_acc = c[1], num_updates = c[2] + 1;
    bool shuffle = num_updates % FL_AVERAGE_MAX_ACCUMULATES == 0;
    double w = (double)num_updates * average_window;
    int64_t window = !(w < (double)max_window) ? max_window : w <= 0 ? 0 : (int64_t)w; /* NaN: max */
    bool restart = num_acc >= min_window && num_acc >= window;
    if (restart) {
        old_acc = num_acc;
        num_acc = 0;
    }
    FlTensor t[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    void *o[3];
    FlStatus st = FL_OK;
    for (int k = 0; k < 3 && st == FL_OK; k++) st = dest(e, op, sum_out[k], sum[k], &t[k], &o[k]);
    if (st != FL_OK) {
        for (int k = 0; k < 3; k++) fl_tensor_fini(&t[k]);
        return FL_ERROR;
    }
    int64_t n = fl_tensor_numel(param);
    if (param->dtype == FL_DT_FLOAT32)
        average_accumulates_f32(fl_tensor_data(param), fl_tensor_data(sum[0]), fl_tensor_data(sum[1]),
                                fl_tensor_data(sum[2]), shuffle, restart, o[0], o[1], o[2], n);
    else
        average_accumulates_f64(fl_tensor_data(param), fl_tensor_data(sum[0]), fl_tensor_data(sum[1]),
                                fl_tensor_data(sum[2]), shuffle, restart, o[0], o[1], o[2], n);
    for (int k = 0; k < 3; k++) commit(sum_out[k], &t[k]);
    int64_t v[3] = {num_acc, old_acc, num_updates};
    for (int k = 0; k < 3; k++)
        if (counter_out(e, op, count[k], v[k], count_out[k]) != FL_OK) return FL_ERROR;
    return FL_OK;
}
