/* activation.c: unary math ops (relu, sigmoid, tanh, exp, log, sqrt, square, abs), their
 * gradients, and scale. One macro line per op gives its forward expression in terms of the
 * input `a`, and its gradient in terms of `v` (the forward input or output, whichever the op
 * names in kernels.h) and the incoming gradient `go`; <tgmath.h> picks the float or double
 * version of each math function. */
#include "runtime/kernels/kernels_impl.h"

#include <tgmath.h>

#include "runtime/kernels/par.h"

/* Elements a chunk of a unary op must have to be worth a hand-over to another thread (measured:
 * docs/kernels.md, "Threads"). Element-wise: chunks never change a result. */
enum { UNARY_GRAIN = 1 << 15 };

/* A unary loop over [lo, hi) of its arrays, in chunks on the kernel pool (par.h). */
typedef struct UnaryJob {
    void (*f32)(const float *, float *, int64_t);
    void (*f64)(const double *, double *, int64_t);
    void (*g32)(const float *, const float *, float *, int64_t);
    void (*g64)(const double *, const double *, double *, int64_t);
    const void *x, *g;
    void *o;
} UnaryJob;

static void unary_chunk(void *arg, int64_t lo, int64_t hi) {
    const UnaryJob *j = arg;
    if (j->f32) j->f32((const float *)j->x + lo, (float *)j->o + lo, hi - lo);
    else if (j->f64) j->f64((const double *)j->x + lo, (double *)j->o + lo, hi - lo);
    else if (j->g32) j->g32((const float *)j->x + lo, (const float *)j->g + lo, (float *)j->o + lo, hi - lo);
    else j->g64((const double *)j->x + lo, (const double *)j->g + lo, (double *)j->o + lo, hi - lo);
}

/* name, forward(a), which tensor the gradient reads (X or OUT), gradient(v, go) */
#define UNARY_OPS(X)                                                                         \
    X(relu, a > 0 ? a : 0, OUT_, v > 0 ? go : 0)                                              \
    X(sigmoid, 1 / (1 + exp(-a)), OUT_, go * v * (1 - v))                                     \
    X(tanh, tanh(a), OUT_, go * (1 - v * v))                                                  \
    X(exp, exp(a), OUT_, go * v)                                                              \
    X(log, log(a), X_, go / v)                                                                \
    X(sqrt, sqrt(a), OUT_, go / (2 * v))                                                      \
    X(square, a * a, X_, go * 2 * v)                                                          \
    X(abs, fabs(a), X_, v > 0 ? go : v < 0 ? -go : 0)

#define DEF_LOOPS(op, fwd, src, grad)                                                        \
    static void op##_f32(const float *x, float *o, int64_t n) {                              \
        for (int64_t i = 0; i < n; i++) {                                                    \
            float a = x[i];                                                                  \
            o[i] = (fwd);                                                                    \
        }                                                                                    \
    }                                                                                        \
    static void op##_f64(const double *x, double *o, int64_t n) {                            \
        for (int64_t i = 0; i < n; i++) {                                                    \
            double a = x[i];                                                                 \
            o[i] = (fwd);                                                                    \
        }                                                                                    \
    }                                                                                        \
    static void op##_grad_f32(const float *s, const float *g, float *d, int64_t n) {          \
        for (int64_t i = 0; i < n; i++) {                                                    \
            float v = s[i], go = g[i];                                                       \
            d[i] = (grad);                                                                   \
        }                                                                                    \
    }                                                                                        \
    static void op##_grad_f64(const double *s, const double *g, double *d, int64_t n) {       \
        for (int64_t i = 0; i < n; i++) {                                                    \
            double v = s[i], go = g[i];                                                      \
            d[i] = (grad);                                                                   \
        }                                                                                    \
    }
UNARY_OPS(DEF_LOOPS)

static FlStatus unary(FlErr *e, const char *op, const FlTensor *x,
                      void (*f32)(const float *, float *, int64_t),
                      void (*f64)(const double *, double *, int64_t), FlTensor *out) {
    if (kneed_float(e, op, "X", x)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, op, &r, x)) return FL_ERROR; /* the loops write every element */
    bool f = x->dtype == FL_DT_FLOAT32;
    UnaryJob j = {.f32 = f ? f32 : NULL, .f64 = f ? NULL : f64, .x = fl_tensor_data(x), .o = fl_tensor_data(&r)};
    fl_par_for(fl_tensor_numel(x), UNARY_GRAIN, unary_chunk, &j);
    kout(out, &r);
    return FL_OK;
}

static FlStatus unary_grad(FlErr *e, const char *op, const char *sname, const FlTensor *src,
                           const FlTensor *dout,
                           void (*f32)(const float *, const float *, float *, int64_t),
                           void (*f64)(const double *, const double *, double *, int64_t),
                           FlTensor *dx) {
    if (kneed_float(e, op, sname, src) || ksame(e, op, sname, src, "Out@GRAD", dout))
        return FL_ERROR;
    if (!dx) return FL_OK;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, op, &r, src)) return FL_ERROR;
    int64_t n = fl_tensor_numel(src);
    bool f = src->dtype == FL_DT_FLOAT32;
    UnaryJob j = {.g32 = f ? f32 : NULL, .g64 = f ? NULL : f64, .x = fl_tensor_data(src), .g = fl_tensor_data(dout),
                  .o = fl_tensor_data(&r)};
    fl_par_for(n, UNARY_GRAIN, unary_chunk, &j);
    kout(dx, &r);
    return FL_OK;
}

#define PICK_X_(x, out) (x)
#define PICK_OUT_(x, out) (out)
#define SLOT_X_ "X"
#define SLOT_OUT_ "Out"
#define DEF_API(op, fwd, src, grad)                                                          \
    FlStatus fl_kernel_##op(FlErr *e, const FlTensor *x, FlTensor *out) {                    \
        return unary(e, #op, x, op##_f32, op##_f64, out);                                    \
    }                                                                                        \
    FlStatus fl_kernel_##op##_grad(FlErr *e, const FlTensor *x, const FlTensor *out,         \
                                   const FlTensor *dout, FlTensor *dx) {                     \
        return unary_grad(e, #op "_grad", SLOT_##src, PICK_##src(x, out), dout, op##_grad_f32,     \
                          op##_grad_f64, dx);                                                \
    }
UNARY_OPS(DEF_API)

/* ---- scale ---- */

/* conv: the double result to T (ints saturate: fl_sat_i64). */
#define SCALE_LOOP(T, conv)                                                                  \
    do {                                                                                     \
        const T *s = fl_tensor_data(x);                                                      \
        T *o = fl_tensor_data(&r);                                                           \
        for (int64_t i = 0; i < n; i++)                                                      \
            o[i] = (T)conv(bias_after_scale ? scale * s[i] + bias : scale * (s[i] + bias));  \
    } while (0)

FlStatus fl_kernel_scale(FlErr *e, const FlTensor *x, double scale, double bias,
                         bool bias_after_scale, FlTensor *out) {
    if (kneed_num(e, "scale", "X", x)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, "scale", &r, x)) return FL_ERROR;
    int64_t n = fl_tensor_numel(x);
    switch (x->dtype) {
    case FL_DT_FLOAT32: {
        float sc = (float)scale, bi = (float)bias; /* float arithmetic for float tensors */
        const float *s = fl_tensor_data(x);
        float *o = fl_tensor_data(&r);
        for (int64_t i = 0; i < n; i++) o[i] = bias_after_scale ? sc * s[i] + bi : sc * (s[i] + bi);
        break;
    }
    case FL_DT_FLOAT64: SCALE_LOOP(double, (double)); break;
    case FL_DT_INT32: SCALE_LOOP(int32_t, fl_sat_i32); break;
    case FL_DT_INT64: SCALE_LOOP(int64_t, fl_sat_i64); break;
    case FL_DT_FLOAT16:
    case FL_DT_INT8:
    case FL_DT_UINT8:
    case FL_DT_BOOL:
    case FL_DT_COUNT: FL_UNREACHABLE();
    }
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_scale_grad(FlErr *e, const FlTensor *dout, double scale, FlTensor *dx) {
    if (kneed_float(e, "scale_grad", "Out@GRAD", dout)) return FL_ERROR;
    if (!dx) return FL_OK;
    return fl_kernel_scale(e, dout, scale, 0, true, dx);
}
