/* activation_param.c: the activations with attributes (leaky_relu, elu, relu6, swish,
 * hard_sigmoid, brelu, soft_relu, softsign, pow), clip, the elementwise math of Fluid's
 * layers.ops (logsigmoid, atan, tanh_shrink, softshrink, rsqrt, ceil, floor, cos, acos, asin,
 * sin, round, reciprocal, softplus, hard_shrink, thresholded_relu) and selu, stanh, sign,
 * prelu and clip_by_norm, forward and backward. One macro line per activation gives its forward expression in terms of the input
 * `a` and its gradient in terms of the input `v` and the incoming gradient `go`; p1 and p2 are
 * the op's attributes, in the order kernels_layers.h lists them. */
#include "runtime/kernels/kernels_impl.h"
#include "runtime/kernels/kernels_layers.h"

#include <tgmath.h>

static inline double sigm(double z) { return 1 / (1 + exp(-z)); }
static inline double clampd(double z, double lo, double hi) { return z < lo ? lo : z > hi ? hi : z; }
/* log(1 + e^z) without overflow: max(z, 0) + log(1 + e^-|z|) */
static inline double softplus(double z) { return (z > 0 ? z : 0) + log1p(exp(-fabs(z))); }

/* kind, name, forward(a), gradient(v, go) */
#define ACT_OPS(X)                                                                                          \
    X(FL_ACT_LEAKY_RELU, leaky_relu, a > 0 ? a : p1 * a, v > 0 ? go : p1 * go)                               \
    X(FL_ACT_ELU, elu, a > 0 ? a : p1 * (exp(a) - 1), v > 0 ? go : go * p1 * exp(v))                         \
    X(FL_ACT_RELU6, relu6, clampd(a, 0, p1), v > 0 && v < p1 ? go : 0)                                       \
    X(FL_ACT_SWISH, swish, a * sigm(p1 * a), go * (sigm(p1 * v) + p1 * v * sigm(p1 * v) * (1 - sigm(p1 * v)))) \
    X(FL_ACT_HARD_SIGMOID, hard_sigmoid, clampd(p1 * a + p2, 0, 1),                                          \
      p1 * v + p2 > 0 && p1 * v + p2 < 1 ? go * p1 : 0)                                                      \
    X(FL_ACT_BRELU, brelu, clampd(a, p1, p2), v > p1 && v < p2 ? go : 0)                                     \
    X(FL_ACT_SOFT_RELU, soft_relu, log(1 + exp(clampd(a, -p1, p1))), v > -p1 && v < p1 ? go * sigm(v) : 0)   \
    X(FL_ACT_SOFTSIGN, softsign, a / (1 + fabs(a)), go / ((1 + fabs(v)) * (1 + fabs(v))))                    \
    X(FL_ACT_POW, pow, pow(a, p1), go * p1 * pow(v, p1 - 1))                                                  \
    X(FL_ACT_CLIP, clip, clampd(a, p1, p2), v > p1 && v < p2 ? go : 0)                                       \
    X(FL_ACT_LOGSIGMOID, logsigmoid, -softplus(-a), go * sigm(-v))                                           \
    X(FL_ACT_ATAN, atan, atan(a), go / (1 + v * v))                                                          \
    X(FL_ACT_TANH_SHRINK, tanh_shrink, a - tanh(a), go * tanh(v) * tanh(v))                                  \
    X(FL_ACT_SOFTSHRINK, softshrink, a > p1 ? a - p1 : a < -p1 ? a + p1 : 0, v > p1 || v < -p1 ? go : 0)     \
    X(FL_ACT_RSQRT, rsqrt, 1 / sqrt(a), -0.5 * go / (v * sqrt(v)))                                           \
    X(FL_ACT_CEIL, ceil, ceil(a), 0 * go)                                                                    \
    X(FL_ACT_FLOOR, floor, floor(a), 0 * go)                                                                 \
    X(FL_ACT_COS, cos, cos(a), -go * sin(v))                                                                 \
    X(FL_ACT_ACOS, acos, acos(a), -go / sqrt(1 - v * v))                                                     \
    X(FL_ACT_ASIN, asin, asin(a), go / sqrt(1 - v * v))                                                      \
    X(FL_ACT_SIN, sin, sin(a), go * cos(v))                                                                  \
    X(FL_ACT_ROUND, round, round(a), 0 * go)                                                                 \
    X(FL_ACT_RECIPROCAL, reciprocal, 1 / a, -go / (v * v))                                                   \
    X(FL_ACT_SOFTPLUS, softplus, softplus(a), go * sigm(v))                                                  \
    X(FL_ACT_HARD_SHRINK, hard_shrink, a > p1 || a < -p1 ? a : 0, v > p1 || v < -p1 ? go : 0)                \
    X(FL_ACT_THRESHOLDED_RELU, thresholded_relu, a > p1 ? a : 0, v > p1 ? go : 0)                            \
    X(FL_ACT_SELU, selu, a > 0 ? p1 * a : p1 * p2 * (exp(a) - 1), v > 0 ? go * p1 : go * p1 * p2 * exp(v))   \
    X(FL_ACT_STANH, stanh, p2 * tanh(p1 * a), go * p1 * p2 * (1 - tanh(p1 * v) * tanh(p1 * v)))              \
    X(FL_ACT_SIGN, sign, (a > 0) - (a < 0), 0 * go)

/* The loops run in double (the attributes are doubles) and store in T. */
#define DEF_LOOPS(kind, op, fwd, grad)                                                                      \
    static void op##_fwd_f32(const float *x, float *o, int64_t n, double p1, double p2) {                   \
        for (int64_t i = 0; i < n; i++) {                                                                   \
            double a = x[i];                                                                                \
            o[i] = (float)(fwd);                                                                            \
        }                                                                                                   \
    }                                                                                                       \
    static void op##_fwd_f64(const double *x, double *o, int64_t n, double p1, double p2) {                 \
        for (int64_t i = 0; i < n; i++) {                                                                   \
            double a = x[i];                                                                                \
            o[i] = (fwd);                                                                                   \
        }                                                                                                   \
    }                                                                                                       \
    static void op##_bwd_f32(const float *s, const float *g, float *d, int64_t n, double p1, double p2) {   \
        for (int64_t i = 0; i < n; i++) {                                                                   \
            double v = s[i], go = g[i];                                                                     \
            (void)v;                                                                                        \
            d[i] = (float)(grad);                                                                           \
        }                                                                                                   \
    }                                                                                                       \
    static void op##_bwd_f64(const double *s, const double *g, double *d, int64_t n, double p1, double p2) { \
        for (int64_t i = 0; i < n; i++) {                                                                   \
            double v = s[i], go = g[i];                                                                     \
            (void)v;                                                                                        \
            d[i] = (grad);                                                                                  \
        }                                                                                                   \
    }
ACT_OPS(DEF_LOOPS)

typedef struct ActFns {
    const char *name, *grad_name;
    void (*f32)(const float *, float *, int64_t, double, double);
    void (*f64)(const double *, double *, int64_t, double, double);
    void (*b32)(const float *, const float *, float *, int64_t, double, double);
    void (*b64)(const double *, const double *, double *, int64_t, double, double);
} ActFns;

#define DEF_ENTRY(kind, op, fwd, grad) [kind] = {#op, #op "_grad", op##_fwd_f32, op##_fwd_f64, op##_bwd_f32, op##_bwd_f64},
static const ActFns ACTS[] = {ACT_OPS(DEF_ENTRY)};
_Static_assert(sizeof ACTS / sizeof ACTS[0] == FL_ACT_COUNT, "one entry per FlActKind");

FlStatus fl_kernel_act(FlErr *e, FlActKind kind, const FlTensor *x, double p1, double p2, FlTensor *out) {
    FL_ASSERT((unsigned)kind < FL_ACT_COUNT);
    const ActFns *f = &ACTS[kind];
    if (kneed_float(e, f->name, "X", x)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, f->name, &r, x)) return FL_ERROR;
    int64_t n = fl_tensor_numel(x);
    if (x->dtype == FL_DT_FLOAT32) f->f32(fl_tensor_data(x), fl_tensor_data(&r), n, p1, p2);
    else f->f64(fl_tensor_data(x), fl_tensor_data(&r), n, p1, p2);
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_act_grad(FlErr *e, FlActKind kind, const FlTensor *x, const FlTensor *dout, double p1,
                            double p2, FlTensor *dx) {
    FL_ASSERT((unsigned)kind < FL_ACT_COUNT);
    const ActFns *f = &ACTS[kind];
    if (kneed_float(e, f->grad_name, "X", x) || ksame(e, f->grad_name, "X", x, "Out@GRAD", dout)) return FL_ERROR;
    if (!dx) return FL_OK;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, f->grad_name, &r, x)) return FL_ERROR;
    int64_t n = fl_tensor_numel(x);
    if (x->dtype == FL_DT_FLOAT32) f->b32(fl_tensor_data(x), fl_tensor_data(dout), fl_tensor_data(&r), n, p1, p2);
    else f->b64(fl_tensor_data(x), fl_tensor_data(dout), fl_tensor_data(&r), n, p1, p2);
    kout(dx, &r);
    return FL_OK;
}

/* ---- prelu ---- */

/* The alpha index of element i: all -> 0, channel -> (i / inner) % C, element -> i % per_sample. */
typedef struct PreluMap {
    FlPreluMode mode;
    int64_t inner, channels, per_sample;
} PreluMap;

static inline int64_t prelu_idx(const PreluMap *m, int64_t i) {
    switch (m->mode) {
    case FL_PRELU_ALL: return 0;
    case FL_PRELU_CHANNEL: return (i / m->inner) % m->channels;
    case FL_PRELU_ELEMENT: return i % m->per_sample;
    case FL_PRELU_COUNT: break;
    }
    FL_UNREACHABLE();
}

static FlStatus prelu_check(FlErr *e, const char *op, const FlTensor *x, const FlTensor *alpha, FlPreluMode mode,
                            PreluMap *m) {
    if (kneed_float(e, op, "X", x) || ksame_dtype(e, op, "X", x, "Alpha", alpha)) return FL_ERROR;
    FL_ASSERT((unsigned)mode < FL_PRELU_COUNT);
    *m = (PreluMap){.mode = mode, .inner = 1, .channels = 1, .per_sample = 1};
    int64_t want = 1;
    if (mode == FL_PRELU_CHANNEL) {
        if (x->ndim < 2) return fl_err(e, "%s: mode 'channel' needs X of rank >= 2, found %s", op, fl_tensor_shape(x).s);
        m->channels = want = x->ne[1];
        m->inner = kprod(x->ne, 2, x->ndim);
    } else if (mode == FL_PRELU_ELEMENT) {
        m->per_sample = want = x->ndim > 0 ? kprod(x->ne, 1, x->ndim) : 1;
    }
    if (fl_tensor_numel(alpha) != want)
        return fl_err(e, "%s: X %s needs %lld alpha values, found Alpha %s", op, fl_tensor_shape(x).s,
                      (long long)want, fl_tensor_shape(alpha).s);
    if (m->inner == 0 || m->channels == 0 || m->per_sample == 0) *m = (PreluMap){.mode = FL_PRELU_ALL};
    return FL_OK;
}

FlStatus fl_kernel_prelu(FlErr *e, const FlTensor *x, const FlTensor *alpha, FlPreluMode mode, FlTensor *out) {
    PreluMap m;
    if (prelu_check(e, "prelu", x, alpha, mode, &m)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, "prelu", &r, x)) return FL_ERROR;
    int64_t n = fl_tensor_numel(x);
    if (x->dtype == FL_DT_FLOAT32) {
        const float *xs = fl_tensor_data(x), *as = fl_tensor_data(alpha);
        float *o = fl_tensor_data(&r);
        for (int64_t i = 0; i < n; i++) o[i] = xs[i] > 0 ? xs[i] : as[prelu_idx(&m, i)] * xs[i];
    } else {
        const double *xs = fl_tensor_data(x), *as = fl_tensor_data(alpha);
        double *o = fl_tensor_data(&r);
        for (int64_t i = 0; i < n; i++) o[i] = xs[i] > 0 ? xs[i] : as[prelu_idx(&m, i)] * xs[i];
    }
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_prelu_grad(FlErr *e, const FlTensor *x, const FlTensor *alpha, const FlTensor *dout,
                              FlPreluMode mode, FlTensor *dx, FlTensor *dalpha) {
    PreluMap m;
    if (prelu_check(e, "prelu_grad", x, alpha, mode, &m) || ksame(e, "prelu_grad", "X", x, "Out@GRAD", dout))
        return FL_ERROR;
    FlTensor rx = FL_TENSOR_INIT, ra = FL_TENSOR_INIT;
    if (dx && kalloc_raw_like(e, "prelu_grad", &rx, x)) return FL_ERROR;
    if (dalpha && kalloc_like(e, "prelu_grad", &ra, alpha)) {
        fl_tensor_fini(&rx);
        return FL_ERROR;
    }
    int64_t n = fl_tensor_numel(x);
    for (int64_t i = 0; i < n; i++) {
        double v = fl_tensor_get(x, i), g = fl_tensor_get(dout, i);
        int64_t k = prelu_idx(&m, i);
        if (dx) fl_tensor_set(&rx, i, v > 0 ? g : g * fl_tensor_get(alpha, k));
        if (dalpha && !(v > 0)) fl_tensor_set(&ra, k, fl_tensor_get(&ra, k) + g * v);
    }
    if (dx) kout(dx, &rx);
    if (dalpha) kout(dalpha, &ra);
    return FL_OK;
}

/* ---- clip_by_norm ---- */

static double l2norm(const FlTensor *x) {
    double s = 0;
    for (int64_t i = 0, n = fl_tensor_numel(x); i < n; i++) {
        double v = fl_tensor_get(x, i);
        s += v * v;
    }
    return sqrt(s);
}

FlStatus fl_kernel_clip_by_norm(FlErr *e, const FlTensor *x, double max_norm, FlTensor *out) {
    if (kneed_float(e, "clip_by_norm", "X", x)) return FL_ERROR;
    if (!(max_norm > 0)) return fl_err(e, "clip_by_norm: max_norm must be > 0, found %g", max_norm);
    double nrm = l2norm(x);
    double k = nrm > max_norm ? max_norm / nrm : 1;
    return fl_kernel_scale(e, x, k, 0, true, out);
}

FlStatus fl_kernel_clip_by_norm_grad(FlErr *e, const FlTensor *x, const FlTensor *dout, double max_norm,
                                     FlTensor *dx) {
    if (kneed_float(e, "clip_by_norm_grad", "X", x) || ksame(e, "clip_by_norm_grad", "X", x, "Out@GRAD", dout))
        return FL_ERROR;
    if (!(max_norm > 0)) return fl_err(e, "clip_by_norm_grad: max_norm must be > 0, found %g", max_norm);
    if (!dx) return FL_OK;
    double nrm = l2norm(x);
    if (!(nrm > max_norm)) return fl_kernel_scale(e, dout, 1, 0, true, dx);
    double dot = 0;
    int64_t n = fl_tensor_numel(x);
    for (int64_t i = 0; i < n; i++) dot += fl_tensor_get(x, i) * fl_tensor_get(dout, i);
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, "clip_by_norm_grad", &r, x)) return FL_ERROR;
    double k = max_norm / nrm, c2 = dot / (nrm * nrm);
    for (int64_t i = 0; i < n; i++) fl_tensor_set(&r, i, k * (fl_tensor_get(dout, i) - fl_tensor_get(x, i) * c2));
    kout(dx, &r);
    return FL_OK;
}
