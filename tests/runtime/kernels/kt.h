/* kt.h: helpers shared by the kernel tests (tensor construction, random fills, comparisons and
 * the finite-difference gradient checker). Header-only: every test program includes it once. */
#ifndef FL_KT_H
#define FL_KT_H

#include <CUnit/Basic.h>
#include "tests/cunit.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/kernels.h"
#include "runtime/rng.h"
#include "runtime/tensor.h"

/* Fails the test (with the kernel's message) when a call does not return FL_OK. */
#define KT_OK(call)                                                                          \
    do {                                                                                     \
        FlErr kt_e_ = {{0}};                                                                 \
        FlStatus kt_s_ = (call);                                                             \
        if (kt_s_ != FL_OK) fprintf(stderr, "\n%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, kt_e_.msg); \
        CU_ASSERT_EQUAL_FATAL(kt_s_, FL_OK);                                                 \
    } while (0)
/* The calls inside KT_OK use `&kt_e_` as their FlErr. */
#define KE (&kt_e_)
/* Expects FL_ERROR and exactly this message (the call uses KE too). */
#define KT_ERR(call, text)                                                                   \
    do {                                                                                     \
        FlErr kt_e_ = {{0}};                                                                 \
        CU_ASSERT_EQUAL(call, FL_ERROR);                                                     \
        if (strcmp(kt_e_.msg, text)) fprintf(stderr, "\n  got:      %s\n  expected: %s\n", kt_e_.msg, text); \
        CU_ASSERT_STRING_EQUAL(kt_e_.msg, text);                                             \
    } while (0)

static inline FlTensor kt_make(FlDType dt, int ndim, const int64_t *ne, const double *vals) {
    FlTensor t = FL_TENSOR_INIT;
    FlErr e;
    FlStatus s = fl_tensor_from(&e, &t, dt, ndim, ne, vals);
    CU_ASSERT_EQUAL_FATAL(s, FL_OK);
    return t;
}
#define KT_T(dt, shape, ...)                                                                 \
    kt_make(dt, (int)(sizeof((int64_t[])shape) / sizeof(int64_t)), (int64_t[])shape,          \
            (double[]){__VA_ARGS__})
#define KT_SHAPE(...) {__VA_ARGS__}

/* Random values in [lo, hi), from a seeded generator. */
static inline FlTensor kt_rand(FlRng *r, FlDType dt, int ndim, const int64_t *ne, double lo,
                               double hi) {
    FlTensor t = FL_TENSOR_INIT;
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &t, dt, ndim, ne), FL_OK);
    for (int64_t i = 0, n = fl_tensor_numel(&t); i < n; i++)
        fl_tensor_set(&t, i, lo + (hi - lo) * fl_rng_uniform(r));
    return t;
}
/* Random values with |v| in [lo, hi) and a random sign: away from the kink at 0. */
static inline FlTensor kt_rand_away(FlRng *r, FlDType dt, int ndim, const int64_t *ne, double lo,
                                    double hi) {
    FlTensor t = kt_rand(r, dt, ndim, ne, lo, hi);
    for (int64_t i = 0, n = fl_tensor_numel(&t); i < n; i++)
        if (fl_rng_uniform(r) < 0.5) fl_tensor_set(&t, i, -fl_tensor_get(&t, i));
    return t;
}
/* Distinct values (a shuffled ladder with step 0.05): no ties for max / top_k. */
static inline FlTensor kt_distinct(FlRng *r, FlDType dt, int ndim, const int64_t *ne) {
    FlTensor t = kt_rand(r, dt, ndim, ne, 0, 1);
    int64_t n = fl_tensor_numel(&t);
    for (int64_t i = 0; i < n; i++) fl_tensor_set(&t, i, 0.05 * (double)i - 0.025 * (double)n);
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(fl_rng_next(r) % (uint64_t)(i + 1));
        double a = fl_tensor_get(&t, i);
        fl_tensor_set(&t, i, fl_tensor_get(&t, j));
        fl_tensor_set(&t, j, a);
    }
    return t;
}

static inline void kt_shape_is(const FlTensor *t, int ndim, const int64_t *ne) {
    CU_ASSERT_EQUAL(t->ndim, ndim);
    for (int i = 0; i < ndim && i < t->ndim; i++) CU_ASSERT_EQUAL(t->ne[i], ne[i]);
}
#define KT_SHAPE_IS(t, shape)                                                                \
    kt_shape_is(t, (int)(sizeof((int64_t[])shape) / sizeof(int64_t)), (int64_t[])shape)

/* Every element of t equals vals[i] within tol. */
static inline bool kt_values(const FlTensor *t, const double *vals, int64_t n, double tol) {
    if (fl_tensor_numel(t) != n) {
        fprintf(stderr, "\n  %lld elements, %lld expected\n", (long long)fl_tensor_numel(t), (long long)n);
        return false;
    }
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(fl_tensor_get(t, i) - vals[i]) <= tol)) {
            fprintf(stderr, "\n  element %lld is %.9g, %.9g expected\n", (long long)i,
                    fl_tensor_get(t, i), vals[i]);
            return false;
        }
    return true;
}
#define KT_VALUES(t, tol, ...)                                                               \
    CU_ASSERT(kt_values(t, (double[]){__VA_ARGS__},                                          \
                        (int64_t)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)), tol))

/* max |a - b| / max(1, max |b|): a relative distance for comparing two results. */
static inline double kt_rel_diff(const FlTensor *a, const FlTensor *b) {
    if (!fl_tensor_same_shape(a, b)) return INFINITY;
    double m = 1, d = 0;
    for (int64_t i = 0, n = fl_tensor_numel(a); i < n; i++) {
        double x = fl_tensor_get(a, i), y = fl_tensor_get(b, i);
        if (fabs(y) > m) m = fabs(y);
        if (!(fabs(x - y) <= d)) d = fabs(x - y);
    }
    return d / m;
}

static inline void kt_fini(int n, FlTensor *t) {
    for (int i = 0; i < n; i++) fl_tensor_fini(&t[i]);
}

/* ---- finite-difference gradient checking ----
 * fwd computes one output tensor from the inputs (multi-output ops concatenate theirs); bwd
 * gets dOut and fills din[i] for every input with check[i]. The loss is sum(out * W) for a
 * fixed random W; each checked input element is perturbed by +-h and the central difference is
 * compared with the analytic gradient: |num - ana| <= tol * max(|num|, |ana|) + atol. */
typedef FlStatus (*KtFwd)(const void *ctx, FlErr *e, FlTensor *in, FlTensor *out);
typedef FlStatus (*KtBwd)(const void *ctx, FlErr *e, FlTensor *in, const FlTensor *out,
                          const FlTensor *dout, FlTensor *din);

static inline double kt_loss(const FlTensor *out, const FlTensor *w) {
    double s = 0;
    for (int64_t i = 0, n = fl_tensor_numel(out); i < n; i++)
        s += fl_tensor_get(out, i) * fl_tensor_get(w, i);
    return s;
}

static inline bool kt_grad_check(const char *name, const void *ctx, int nin, FlTensor *in,
                                 const bool *check, KtFwd fwd, KtBwd bwd, double tol) {
    FlErr e;
    FlTensor out = FL_TENSOR_INIT, din[8];
    bool ok = true;
    for (int i = 0; i < 8; i++) fl_tensor_init(&din[i]);
    if (fwd(ctx, &e, in, &out)) {
        fprintf(stderr, "\n%s: forward failed: %s\n", name, e.msg);
        return false;
    }
    FlRng r;
    fl_rng_init(&r, 1234);
    FlTensor w = kt_rand(&r, out.dtype, out.ndim, out.ne, -1, 1);
    if (bwd(ctx, &e, in, &out, &w, din)) {
        fprintf(stderr, "\n%s: backward failed: %s\n", name, e.msg);
        ok = false;
        goto done;
    }
    const double h = 1e-5, atol = 1e-8;
    for (int i = 0; i < nin && ok; i++) {
        if (!check[i]) continue;
        if (!fl_tensor_same_shape(&din[i], &in[i]) || din[i].dtype != in[i].dtype) {
            fprintf(stderr, "\n%s: input %d: the gradient has shape %s, the input %s\n", name, i,
                    fl_tensor_shape(&din[i]).s, fl_tensor_shape(&in[i]).s);
            ok = false;
            break;
        }
        for (int64_t j = 0, n = fl_tensor_numel(&in[i]); j < n && ok; j++) {
            double x0 = fl_tensor_get(&in[i], j), lp, lm;
            FlTensor o = FL_TENSOR_INIT;
            fl_tensor_set(&in[i], j, x0 + h);
            ok = fwd(ctx, &e, in, &o) == FL_OK;
            lp = ok ? kt_loss(&o, &w) : 0;
            fl_tensor_set(&in[i], j, x0 - h);
            ok = ok && fwd(ctx, &e, in, &o) == FL_OK;
            lm = ok ? kt_loss(&o, &w) : 0;
            fl_tensor_set(&in[i], j, x0);
            fl_tensor_fini(&o);
            double num = (lp - lm) / (2 * h), ana = fl_tensor_get(&din[i], j);
            if (!ok || !(fabs(num - ana) <= tol * fmax(fabs(num), fabs(ana)) + atol)) {
                fprintf(stderr, "\n%s: input %d element %lld: analytic %.12g, numeric %.12g\n",
                        name, i, (long long)j, ana, num);
                ok = false;
            }
        }
    }
done:
    fl_tensor_fini(&out);
    fl_tensor_fini(&w);
    kt_fini(8, din);
    return ok;
}

typedef FlTestCase KtCase;
#define KT_TEST(f) {#f, f}

static inline int kt_run(const char *suite, const KtCase *cases, int n) {
    return fl_test_run(suite, NULL, NULL, cases, (size_t)n);
}

#endif
