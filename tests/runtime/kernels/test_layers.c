/* test_layers.c: the kernels of kernels_layers.h (parametrised activations, prelu, clip_by_norm,
 * batch-size fills, max / min / product reductions, indexing, stacking, padding, views,
 * one_hot): forward values against plain references or hand values, error messages, and every
 * gradient against central finite differences in float64 (kt_grad_check, tolerance 1e-6). */
#include "tests/runtime/kernels/kt.h"

#include "runtime/kernels/kernels_layers.h"

#define F FL_DT_FLOAT32
#define D FL_DT_FLOAT64
#define I FL_DT_INT64

static FlRng rng;

/* ---- the gradient-check cases ---- */

typedef enum {
    L_ACT, L_PRELU, L_CLIP_NORM, L_REDUCE, L_SLICE, L_CROP, L_PAD, L_GATHER, L_SCATTER, L_EXPAND,
    L_STACK, L_UNSTACK, L_SQUEEZE, L_UNSQUEEZE, L_FLATTEN,
} LOp;

typedef struct L {
    LOp op;
    int nin;
    FlActKind act;
    double p1, p2;
    FlPreluMode mode;
    int kind; /* reduce: 0 max, 1 min, 2 prod */
    int dims[4], ndims;
    bool keep, all;
    int64_t a[8], b[8], c[8];
    int n;
    int axis;
} L;

typedef FlStatus (*RedFn)(FlErr *, const FlTensor *, const int *, int, bool, bool, FlTensor *);
typedef FlStatus (*RedGradFn)(FlErr *, const FlTensor *, const FlTensor *, const FlTensor *, const int *, int, bool,
                              bool, FlTensor *);
static const RedFn REDS[] = {fl_kernel_reduce_max, fl_kernel_reduce_min, fl_kernel_reduce_prod};
static const RedGradFn RED_GRADS[] = {fl_kernel_reduce_max_grad, fl_kernel_reduce_min_grad, fl_kernel_reduce_prod_grad};

static FlStatus fwd(const void *vc, FlErr *e, FlTensor *in, FlTensor *out) {
    const L *c = vc;
    switch (c->op) {
    case L_ACT: return fl_kernel_act(e, c->act, &in[0], c->p1, c->p2, out);
    case L_PRELU: return fl_kernel_prelu(e, &in[0], &in[1], c->mode, out);
    case L_CLIP_NORM: return fl_kernel_clip_by_norm(e, &in[0], c->p1, out);
    case L_REDUCE: return REDS[c->kind](e, &in[0], c->dims, c->ndims, c->keep, c->all, out);
    case L_SLICE: return fl_kernel_slice(e, &in[0], c->a, c->b, c->c, c->n, out);
    case L_CROP: return fl_kernel_crop(e, &in[0], c->a, c->b, c->n, out);
    case L_PAD: return fl_kernel_pad(e, &in[0], c->a, c->n, c->p1, out);
    case L_GATHER: return fl_kernel_gather(e, &in[0], &in[1], out);
    case L_SCATTER: return fl_kernel_scatter(e, &in[0], &in[1], &in[2], out);
    case L_EXPAND: return fl_kernel_expand(e, &in[0], c->a, c->n, out);
    case L_STACK: {
        const FlTensor *xs[3] = {&in[0], &in[1], &in[2]};
        return fl_kernel_stack(e, xs, c->nin, c->axis, out);
    }
    case L_UNSTACK: { /* checked through stack(unstack(X)) along a new leading axis */
        FlTensor parts[4];
        FlTensor *pp[4] = {&parts[0], &parts[1], &parts[2], &parts[3]};
        for (int i = 0; i < 4; i++) fl_tensor_init(&parts[i]);
        FlStatus s = fl_kernel_unstack(e, &in[0], c->axis, pp, c->n);
        if (!s) s = fl_kernel_stack(e, (const FlTensor *const *)pp, c->n, 0, out);
        kt_fini(4, parts);
        return s;
    }
    case L_SQUEEZE: return fl_kernel_squeeze(e, &in[0], c->a, c->n, out);
    case L_UNSQUEEZE: return fl_kernel_unsqueeze(e, &in[0], c->a, c->n, out);
    case L_FLATTEN: return fl_kernel_flatten(e, &in[0], c->axis, out);
    }
    return FL_ERROR;
}

static FlStatus bwd(const void *vc, FlErr *e, FlTensor *in, const FlTensor *out, const FlTensor *g, FlTensor *din) {
    const L *c = vc;
    switch (c->op) {
    case L_ACT: return fl_kernel_act_grad(e, c->act, &in[0], g, c->p1, c->p2, &din[0]);
    case L_PRELU: return fl_kernel_prelu_grad(e, &in[0], &in[1], g, c->mode, &din[0], &din[1]);
    case L_CLIP_NORM: return fl_kernel_clip_by_norm_grad(e, &in[0], g, c->p1, &din[0]);
    case L_REDUCE: return RED_GRADS[c->kind](e, &in[0], out, g, c->dims, c->ndims, c->keep, c->all, &din[0]);
    case L_SLICE: return fl_kernel_slice_grad(e, &in[0], g, c->a, c->b, c->c, c->n, &din[0]);
    case L_CROP: return fl_kernel_crop_grad(e, &in[0], g, c->a, &din[0]);
    case L_PAD: return fl_kernel_pad_grad(e, &in[0], g, c->a, c->n, &din[0]);
    case L_GATHER: return fl_kernel_gather_grad(e, &in[0], &in[1], g, &din[0]);
    case L_SCATTER: return fl_kernel_scatter_grad(e, &in[0], &in[1], &in[2], g, &din[0], &din[2]);
    case L_EXPAND: return fl_kernel_expand_grad(e, &in[0], g, c->a, c->n, &din[0]);
    case L_STACK: {
        FlTensor *d[3] = {&din[0], &din[1], &din[2]};
        return fl_kernel_unstack(e, g, c->axis, d, c->nin);
    }
    case L_UNSTACK: {
        FlTensor parts[4];
        FlTensor *pp[4] = {&parts[0], &parts[1], &parts[2], &parts[3]};
        for (int i = 0; i < 4; i++) fl_tensor_init(&parts[i]);
        FlStatus s = fl_kernel_unstack(e, g, 0, pp, c->n);
        if (!s) { /* one part's gradient missing counts as zeros: drop part 1, then add it separately */
            const FlTensor *dp[4] = {pp[0], NULL, pp[2], pp[3]};
            FlTensor only1 = FL_TENSOR_INIT;
            const FlTensor *dq[4] = {NULL, pp[1], NULL, NULL};
            s = fl_kernel_unstack_grad(e, &in[0], dp, c->n, c->axis, &din[0]);
            if (!s) s = fl_kernel_unstack_grad(e, &in[0], dq, c->n, c->axis, &only1);
            if (!s) s = fl_kernel_elementwise_add(e, &din[0], &only1, -1, &din[0]);
            fl_tensor_fini(&only1);
        }
        kt_fini(4, parts);
        return s;
    }
    case L_SQUEEZE:
    case L_UNSQUEEZE:
    case L_FLATTEN: return fl_kernel_reshape_grad(e, &in[0], g, &din[0]);
    }
    return FL_ERROR;
}

static void check(const char *name, const L *c, FlTensor *in, const bool *chk) {
    bool ok = kt_grad_check(name, c, c->nin, in, chk, fwd, bwd, 1e-6);
    CU_ASSERT(ok);
    kt_fini(c->nin, in);
}
static const bool ALL[8] = {true, true, true, true, true, true, true, true};

/* ---- activations ---- */

static double sigm(double z) { return 1 / (1 + exp(-z)); }
static double clampd(double z, double lo, double hi) { return z < lo ? lo : z > hi ? hi : z; }

static double act_ref(FlActKind k, double a, double p1, double p2) {
    switch (k) {
    case FL_ACT_LEAKY_RELU: return a > 0 ? a : p1 * a;
    case FL_ACT_ELU: return a > 0 ? a : p1 * (exp(a) - 1);
    case FL_ACT_RELU6: return clampd(a, 0, p1);
    case FL_ACT_SWISH: return a * sigm(p1 * a);
    case FL_ACT_HARD_SIGMOID: return clampd(p1 * a + p2, 0, 1);
    case FL_ACT_BRELU: return clampd(a, p1, p2);
    case FL_ACT_SOFT_RELU: return log(1 + exp(clampd(a, -p1, p1)));
    case FL_ACT_SOFTSIGN: return a / (1 + fabs(a));
    case FL_ACT_POW: return pow(a, p1);
    case FL_ACT_CLIP: return clampd(a, p1, p2);
    /* the math of layers.ops, written from Fluid's definitions (inputs in ranges where the plain
     * formulas do not overflow) */
    case FL_ACT_LOGSIGMOID: return log(sigm(a));
    case FL_ACT_ATAN: return atan(a);
    case FL_ACT_TANH_SHRINK: return a - tanh(a);
    case FL_ACT_SOFTSHRINK: return fabs(a) <= p1 ? 0 : a - copysign(p1, a);
    case FL_ACT_RSQRT: return pow(a, -0.5);
    case FL_ACT_CEIL: return ceil(a);
    case FL_ACT_FLOOR: return floor(a);
    case FL_ACT_COS: return cos(a);
    case FL_ACT_ACOS: return acos(a);
    case FL_ACT_ASIN: return asin(a);
    case FL_ACT_SIN: return sin(a);
    case FL_ACT_ROUND: return a < 0 ? -floor(-a + 0.5) : floor(a + 0.5);
    case FL_ACT_RECIPROCAL: return 1 / a;
    case FL_ACT_SOFTPLUS: return log(1 + exp(a));
    case FL_ACT_HARD_SHRINK: return fabs(a) > p1 ? a : 0;
    case FL_ACT_THRESHOLDED_RELU: return a > p1 ? a : 0;
    case FL_ACT_SELU: return p1 * (a > 0 ? a : p2 * (exp(a) - 1));
    case FL_ACT_STANH: return p2 * tanh(p1 * a);
    case FL_ACT_SIGN: return a > 0 ? 1 : a < 0 ? -1 : 0;
    case FL_ACT_COUNT: break;
    }
    return NAN;
}

static const struct {
    const char *name;
    FlActKind k;
    double p1, p2, lo, hi; /* attributes; the input range (|x| in [lo, hi) with a random sign, or [lo, hi) when lo < 0) */
} ACTS[] = {
    {"leaky_relu", FL_ACT_LEAKY_RELU, 0.1, 0, 0.05, 2},
    {"elu", FL_ACT_ELU, 1.3, 0, 0.05, 2},
    {"relu6", FL_ACT_RELU6, 1.2, 0, 0.05, 2},
    {"swish", FL_ACT_SWISH, 1.7, 0, -3, 3},
    {"hard_sigmoid", FL_ACT_HARD_SIGMOID, 0.3, 0.4, -4, 4},
    {"brelu", FL_ACT_BRELU, -0.5, 0.7, -1.5, 1.5},
    {"soft_relu", FL_ACT_SOFT_RELU, 1.5, 0, -3, 3},
    {"softsign", FL_ACT_SOFTSIGN, 0, 0, -3, 3},
    {"pow", FL_ACT_POW, 2.5, 0, 0.2, 2},
    {"clip", FL_ACT_CLIP, -0.3, 0.6, -1.5, 1.5},
    {"logsigmoid", FL_ACT_LOGSIGMOID, 0, 0, -6, 6},
    {"atan", FL_ACT_ATAN, 0, 0, -3, 3},
    {"tanh_shrink", FL_ACT_TANH_SHRINK, 0, 0, -3, 3},
    {"softshrink", FL_ACT_SOFTSHRINK, 0.5, 0, -2, 2},
    {"rsqrt", FL_ACT_RSQRT, 0, 0, 0.2, 3},
    {"ceil", FL_ACT_CEIL, 0, 0, -3, 3},
    {"floor", FL_ACT_FLOOR, 0, 0, -3, 3},
    {"cos", FL_ACT_COS, 0, 0, -4, 4},
    {"acos", FL_ACT_ACOS, 0, 0, -0.9, 0.9},
    {"asin", FL_ACT_ASIN, 0, 0, -0.9, 0.9},
    {"sin", FL_ACT_SIN, 0, 0, -4, 4},
    {"round", FL_ACT_ROUND, 0, 0, -3, 3},
    {"reciprocal", FL_ACT_RECIPROCAL, 0, 0, 0.2, 3},
    {"softplus", FL_ACT_SOFTPLUS, 0, 0, -6, 6},
    {"hard_shrink", FL_ACT_HARD_SHRINK, 0.3, 0, -2, 2},
    {"thresholded_relu", FL_ACT_THRESHOLDED_RELU, 0.4, 0, -2, 2},
    {"selu", FL_ACT_SELU, 1.0507009873554805, 1.6732632423543772, -3, 3},
    {"stanh", FL_ACT_STANH, 0.67, 1.7159, -3, 3},
    {"sign", FL_ACT_SIGN, 0, 0, -3, 3},
};

static void test_act_values(void) {
    for (size_t k = 0; k < FL_ARRAY_LEN(ACTS); k++)
        for (int dt = 0; dt < 2; dt++) {
            int64_t ne[2] = {4, 7};
            FlTensor x = ACTS[k].lo < 0 ? kt_rand(&rng, dt ? D : F, 2, ne, ACTS[k].lo, ACTS[k].hi)
                                        : kt_rand_away(&rng, dt ? D : F, 2, ne, ACTS[k].lo, ACTS[k].hi);
            if (ACTS[k].k == FL_ACT_POW || ACTS[k].k == FL_ACT_RSQRT)
                for (int i = 0; i < 28; i++) fl_tensor_set(&x, i, fabs(fl_tensor_get(&x, i)));
            FlTensor o = FL_TENSOR_INIT;
            KT_OK(fl_kernel_act(KE, ACTS[k].k, &x, ACTS[k].p1, ACTS[k].p2, &o));
            CU_ASSERT_EQUAL(o.dtype, x.dtype);
            KT_SHAPE_IS(&o, KT_SHAPE(4, 7));
            double worst = 0;
            for (int i = 0; i < 28; i++) {
                double want = act_ref(ACTS[k].k, fl_tensor_get(&x, i), ACTS[k].p1, ACTS[k].p2);
                worst = fmax(worst, fabs(fl_tensor_get(&o, i) - want) / fmax(1, fabs(want)));
            }
            if (!(worst <= (dt ? 1e-14 : 1e-6))) fprintf(stderr, "\n  %s: off by %g\n", ACTS[k].name, worst);
            CU_ASSERT(worst <= (dt ? 1e-14 : 1e-6));
            fl_tensor_fini(&x);
            fl_tensor_fini(&o);
        }
    /* hand values */
    FlTensor x = KT_T(F, KT_SHAPE(5), -2, -0.5, 0, 0.5, 7), o = FL_TENSOR_INIT;
    KT_OK(fl_kernel_act(KE, FL_ACT_LEAKY_RELU, &x, 0.02, 0, &o));
    KT_VALUES(&o, 1e-7, -0.04, -0.01, 0, 0.5, 7);
    KT_OK(fl_kernel_act(KE, FL_ACT_RELU6, &x, 6, 0, &o));
    KT_VALUES(&o, 0, 0, 0, 0, 0.5, 6);
    KT_OK(fl_kernel_act(KE, FL_ACT_HARD_SIGMOID, &x, 0.2, 0.5, &o));
    KT_VALUES(&o, 1e-7, 0.1, 0.4, 0.5, 0.6, 1);
    KT_OK(fl_kernel_act(KE, FL_ACT_SOFTSIGN, &x, 0, 0, &o));
    KT_VALUES(&o, 1e-7, -2.0 / 3, -0.5 / 1.5, 0, 0.5 / 1.5, 7.0 / 8);
    KT_OK(fl_kernel_act(KE, FL_ACT_CLIP, &x, -1, 1, &o));
    KT_VALUES(&o, 0, -1, -0.5, 0, 0.5, 1);
    KT_OK(fl_kernel_act(KE, FL_ACT_SOFT_RELU, &x, 40, 0, &o));
    KT_VALUES(&o, 1e-6, log(1 + exp(-2.0)), log(1 + exp(-0.5)), log(2.0), log(1 + exp(0.5)), log(1 + exp(7.0)));
    KT_OK(fl_kernel_act(KE, FL_ACT_ROUND, &x, 0, 0, &o)); /* halves away from zero */
    KT_VALUES(&o, 0, -2, -1, 0, 1, 7);
    KT_OK(fl_kernel_act(KE, FL_ACT_SIGN, &x, 0, 0, &o));
    KT_VALUES(&o, 0, -1, -1, 0, 1, 1);
    KT_OK(fl_kernel_act(KE, FL_ACT_SOFTSHRINK, &x, 0.5, 0, &o)); /* |x| <= lambda gives 0 */
    KT_VALUES(&o, 1e-7, -1.5, 0, 0, 0, 6.5);
    KT_OK(fl_kernel_act(KE, FL_ACT_HARD_SHRINK, &x, 0.5, 0, &o));
    KT_VALUES(&o, 0, -2, 0, 0, 0, 7);
    KT_OK(fl_kernel_act(KE, FL_ACT_THRESHOLDED_RELU, &x, 1, 0, &o));
    KT_VALUES(&o, 0, 0, 0, 0, 0, 7);
    /* logsigmoid and softplus far out: no overflow, the limits */
    FlTensor far = KT_T(F, KT_SHAPE(2), -100, 100);
    KT_OK(fl_kernel_act(KE, FL_ACT_LOGSIGMOID, &far, 0, 0, &o));
    KT_VALUES(&o, 1e-5, -100, 0);
    KT_OK(fl_kernel_act(KE, FL_ACT_SOFTPLUS, &far, 0, 0, &o));
    KT_VALUES(&o, 1e-5, 0, 100);
    fl_tensor_fini(&far);
    FlTensor li = KT_T(I, KT_SHAPE(2), 1, 2);
    KT_ERR(fl_kernel_act(KE, FL_ACT_ELU, &li, 1, 0, &o), "elu: X [2] has dtype int64; float32 or float64 expected");
    FlTensor all[] = {x, o, li};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

static void test_act_grads(void) {
    for (size_t k = 0; k < FL_ARRAY_LEN(ACTS); k++) {
        L c = {.op = L_ACT, .nin = 1, .act = ACTS[k].k, .p1 = ACTS[k].p1, .p2 = ACTS[k].p2};
        int64_t ne[2] = {3, 5};
        FlTensor in[1] = {ACTS[k].lo < 0 ? kt_rand(&rng, D, 2, ne, ACTS[k].lo, ACTS[k].hi)
                                         : kt_rand_away(&rng, D, 2, ne, ACTS[k].lo, ACTS[k].hi)};
        if (ACTS[k].k == FL_ACT_POW || ACTS[k].k == FL_ACT_RSQRT)
            for (int i = 0; i < 15; i++) fl_tensor_set(&in[0], i, fabs(fl_tensor_get(&in[0], i)));
        check(ACTS[k].name, &c, in, ALL);
    }
}

/* ---- prelu, clip_by_norm ---- */

static void test_prelu(void) {
    FlTensor x = KT_T(F, KT_SHAPE(2, 2, 2), -1, 2, -3, 4, 5, -6, 7, -8), o = FL_TENSOR_INIT;
    FlTensor a1 = KT_T(F, KT_SHAPE(1), 0.5), ac = KT_T(F, KT_SHAPE(1, 2, 1, 1), 0.1, 0.2);
    FlTensor ae = KT_T(F, KT_SHAPE(1, 2, 2), 1, 2, 3, 4);
    KT_OK(fl_kernel_prelu(KE, &x, &a1, FL_PRELU_ALL, &o));
    KT_VALUES(&o, 1e-7, -0.5, 2, -1.5, 4, 5, -3, 7, -4);
    KT_OK(fl_kernel_prelu(KE, &x, &ac, FL_PRELU_CHANNEL, &o));
    KT_VALUES(&o, 1e-6, -0.1, 2, -0.6, 4, 5, -0.6, 7, -1.6);
    KT_OK(fl_kernel_prelu(KE, &x, &ae, FL_PRELU_ELEMENT, &o));
    KT_VALUES(&o, 1e-6, -1, 2, -9, 4, 5, -12, 7, -32);
    KT_ERR(fl_kernel_prelu(KE, &x, &ac, FL_PRELU_ELEMENT, &o), "prelu: X [2, 2, 2] needs 4 alpha values, found Alpha [1, 2, 1, 1]");
    FlTensor all[] = {x, o, a1, ac, ae};
    kt_fini((int)FL_ARRAY_LEN(all), all);

    int64_t xs[4] = {2, 3, 2, 2}, one = 1, cs[4] = {1, 3, 1, 1}, es[3] = {3, 2, 2};
    struct { FlPreluMode m; int nd; const int64_t *ne; } ms[] = {
        {FL_PRELU_ALL, 1, &one}, {FL_PRELU_CHANNEL, 4, cs}, {FL_PRELU_ELEMENT, 3, es}};
    for (size_t i = 0; i < FL_ARRAY_LEN(ms); i++) {
        L c = {.op = L_PRELU, .nin = 2, .mode = ms[i].m};
        FlTensor in[2] = {kt_rand_away(&rng, D, 4, xs, 0.05, 2), kt_rand(&rng, D, ms[i].nd, ms[i].ne, 0.1, 0.9)};
        check("prelu", &c, in, ALL);
    }
}

static void test_clip_by_norm(void) {
    FlTensor x = KT_T(D, KT_SHAPE(2, 2), 3, 0, 0, 4), o = FL_TENSOR_INIT; /* norm 5 */
    KT_OK(fl_kernel_clip_by_norm(KE, &x, 1, &o));
    KT_VALUES(&o, 1e-12, 0.6, 0, 0, 0.8);
    KT_OK(fl_kernel_clip_by_norm(KE, &x, 5, &o));
    KT_VALUES(&o, 0, 3, 0, 0, 4);
    KT_ERR(fl_kernel_clip_by_norm(KE, &x, 0, &o), "clip_by_norm: max_norm must be > 0, found 0");
    fl_tensor_fini(&x);
    fl_tensor_fini(&o);
    for (int big = 0; big < 2; big++) {
        L c = {.op = L_CLIP_NORM, .nin = 1, .p1 = big ? 0.5 : 50};
        FlTensor in[1] = {kt_rand(&rng, D, 2, (int64_t[]){3, 4}, -1, 1)};
        check(big ? "clip_by_norm (clipped)" : "clip_by_norm (unclipped)", &c, in, ALL);
    }
}

/* ---- reductions ---- */

static void test_reduce_values(void) {
    FlTensor x = KT_T(F, KT_SHAPE(2, 3), 1, -5, 3, 4, 2, -6), o = FL_TENSOR_INIT;
    KT_OK(fl_kernel_reduce_max(KE, &x, (int[]){1}, 1, false, false, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(2));
    KT_VALUES(&o, 0, 3, 4);
    KT_OK(fl_kernel_reduce_min(KE, &x, (int[]){0}, 1, true, false, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(1, 3));
    KT_VALUES(&o, 0, 1, -5, -6);
    KT_OK(fl_kernel_reduce_prod(KE, &x, NULL, 0, false, true, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(1));
    KT_VALUES(&o, 0, 1.0 * -5 * 3 * 4 * 2 * -6);
    KT_OK(fl_kernel_reduce_max(KE, &x, (int[]){-1, 0}, 2, false, false, &o));
    KT_VALUES(&o, 0, 4);
    FlTensor xi = KT_T(I, KT_SHAPE(3), 9007199254740993.0, 1, 2), oi = FL_TENSOR_INIT;
    ((int64_t *)fl_tensor_data(&xi))[0] = 9007199254740993LL; /* 2^53 + 1: kept exactly */
    KT_OK(fl_kernel_reduce_max(KE, &xi, NULL, 0, false, true, &oi));
    CU_ASSERT_EQUAL(((int64_t *)fl_tensor_data(&oi))[0], 9007199254740993LL);
    KT_ERR(fl_kernel_reduce_max(KE, &x, (int[]){2}, 1, false, false, &o), "reduce_max: dim 2 is out of range for X [2, 3]");
    KT_ERR(fl_kernel_reduce_min(KE, &x, (int[]){1, -1}, 2, false, false, &o), "reduce_min: dim -1 is listed twice");
    KT_ERR(fl_kernel_reduce_prod(KE, &xi, NULL, 0, false, true, &o), "reduce_prod: X [3] has dtype int64; float32 or float64 expected");
    /* against a brute-force reference over every subset of dims of a [2, 3, 4] tensor */
    FlTensor r = kt_rand(&rng, D, 3, (int64_t[]){2, 3, 4}, 0.5, 1.5);
    for (int mask = 1; mask < 8; mask++) {
        int dims[3], nd = 0;
        for (int d = 0; d < 3; d++)
            if (mask & 1 << d) dims[nd++] = d;
        for (int k = 0; k < 3; k++) {
            KT_OK(REDS[k](KE, &r, dims, nd, true, false, &o));
            int64_t n = fl_tensor_numel(&o);
            bool ok = true;
            for (int64_t j = 0; j < n; j++) {
                /* output j's coordinates in the keep_dim shape */
                int64_t oc[3], rem = j;
                for (int d = 2; d >= 0; d--) {
                    oc[d] = rem % o.ne[d];
                    rem /= o.ne[d];
                }
                double acc = k == 2 ? 1 : k == 0 ? -INFINITY : INFINITY;
                for (int64_t i = 0; i < 24; i++) {
                    int64_t ic[3] = {i / 12, i / 4 % 3, i % 4};
                    bool in = true;
                    for (int d = 0; d < 3; d++)
                        if (!(mask & 1 << d) && ic[d] != oc[d]) in = false;
                    if (!in) continue;
                    double v = fl_tensor_get(&r, i);
                    acc = k == 2 ? acc * v : k == 0 ? fmax(acc, v) : fmin(acc, v);
                }
                if (fabs(fl_tensor_get(&o, j) - acc) > 1e-12) ok = false;
            }
            CU_ASSERT(ok);
        }
    }
    FlTensor all[] = {x, o, xi, oi, r};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

static void test_reduce_grads(void) {
    struct { int dims[3]; int nd; bool keep, all; } rc[] = {
        {{1}, 1, false, false}, {{0, 2}, 2, true, false}, {{-1}, 1, true, false}, {{0}, 0, false, true},
    };
    static const char *const names[] = {"reduce_max", "reduce_min", "reduce_prod"};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < FL_ARRAY_LEN(rc); i++) {
            L c = {.op = L_REDUCE, .nin = 1, .kind = k, .keep = rc[i].keep, .all = rc[i].all, .ndims = rc[i].nd};
            memcpy(c.dims, rc[i].dims, sizeof rc[i].dims);
            int64_t ne[3] = {2, 3, 4};
            FlTensor x[1] = {k < 2 ? kt_distinct(&rng, D, 3, ne) : kt_rand_away(&rng, D, 3, ne, 0.5, 1.5)};
            check(names[k], &c, x, ALL);
        }
    /* a zero in a product: the others' product, not Out / X */
    L c = {.op = L_REDUCE, .nin = 1, .kind = 2, .dims = {1}, .ndims = 1};
    FlTensor x[1] = {KT_T(D, KT_SHAPE(2, 3), 0.5, 0, 2, 1.5, -0.7, 0)};
    check("reduce_prod with zeros", &c, x, ALL);
    /* ties of a max: every tied element gets the gradient (Paddle's rule) */
    FlTensor t = KT_T(D, KT_SHAPE(3), 2, 1, 2), m = FL_TENSOR_INIT, g = KT_T(D, KT_SHAPE(1), 5), dx = FL_TENSOR_INIT;
    KT_OK(fl_kernel_reduce_max(KE, &t, NULL, 0, false, true, &m));
    KT_OK(fl_kernel_reduce_max_grad(KE, &t, &m, &g, NULL, 0, false, true, &dx));
    KT_VALUES(&dx, 0, 5, 0, 5);
    FlTensor all[] = {t, m, g, dx};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

/* ---- slice, crop, pad ---- */

static void test_slice_crop_pad(void) {
    FlTensor x = KT_T(F, KT_SHAPE(3, 4), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), o = FL_TENSOR_INIT, d = FL_TENSOR_INIT;
    KT_OK(fl_kernel_slice(KE, &x, (int64_t[]){1}, (int64_t[]){1}, (int64_t[]){3}, 1, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(3, 2));
    KT_VALUES(&o, 0, 1, 2, 5, 6, 9, 10);
    KT_OK(fl_kernel_slice(KE, &x, (int64_t[]){0, -1}, (int64_t[]){-2, -3}, (int64_t[]){100, -1}, 2, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(2, 2));
    KT_VALUES(&o, 0, 5, 6, 9, 10);
    KT_ERR(fl_kernel_slice(KE, &x, (int64_t[]){1}, (int64_t[]){3}, (int64_t[]){2}, 1, &o),
           "slice: the slice [3:2] of dim 1 of X [3, 4] is empty");
    KT_ERR(fl_kernel_slice(KE, &x, (int64_t[]){2}, (int64_t[]){0}, (int64_t[]){1}, 1, &o),
           "slice: axis 2 is out of range for X [3, 4]");
    KT_OK(fl_kernel_crop(KE, &x, (int64_t[]){1, 2}, (int64_t[]){2, -1}, 2, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(2, 2));
    KT_VALUES(&o, 0, 6, 7, 10, 11);
    KT_ERR(fl_kernel_crop(KE, &x, (int64_t[]){2, 0}, (int64_t[]){2, 4}, 2, &o),
           "crop: a block of size [2, 4] at offsets [2, 0] does not fit in X [3, 4]");
    FlTensor s = KT_T(I, KT_SHAPE(2, 2), 1, 2, 3, 4);
    KT_OK(fl_kernel_pad(KE, &s, (int64_t[]){1, 0, 0, 2}, 4, -1, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(3, 4));
    CU_ASSERT_EQUAL(o.dtype, I);
    KT_VALUES(&o, 0, -1, -1, -1, -1, 1, 2, -1, -1, 3, 4, -1, -1);
    KT_ERR(fl_kernel_pad(KE, &s, (int64_t[]){1, 0}, 2, 0, &o), "pad: paddings must hold 2 values per dim of X [2, 2], found 2");
    FlTensor g = KT_T(D, KT_SHAPE(3, 4), 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0), sd = KT_T(D, KT_SHAPE(2, 2), 0, 0, 0, 0);
    KT_OK(fl_kernel_pad_grad(KE, &sd, &g, (int64_t[]){1, 0, 0, 2}, 4, &d));
    KT_VALUES(&d, 0, 1, 2, 3, 4);
    FlTensor all[] = {x, o, d, s, g, sd};
    kt_fini((int)FL_ARRAY_LEN(all), all);

    int64_t ne[3] = {3, 4, 5};
    L c = {.op = L_SLICE, .nin = 1, .a = {0, 2}, .b = {1, -4}, .c = {3, 4}, .n = 2};
    FlTensor in[1] = {kt_rand(&rng, D, 3, ne, -1, 1)};
    check("slice", &c, in, ALL);
    L cr = {.op = L_CROP, .nin = 1, .a = {1, 0, 2}, .b = {2, -1, 3}, .n = 3};
    FlTensor in2[1] = {kt_rand(&rng, D, 3, ne, -1, 1)};
    check("crop", &cr, in2, ALL);
    L p = {.op = L_PAD, .nin = 1, .a = {0, 1, 2, 0, 1, 1}, .n = 6, .p1 = 0.5};
    FlTensor in3[1] = {kt_rand(&rng, D, 3, ne, -1, 1)};
    check("pad", &p, in3, ALL);
}

/* ---- gather, scatter, expand ---- */

static void test_gather_scatter_expand(void) {
    FlTensor x = KT_T(F, KT_SHAPE(3, 2), 1, 2, 3, 4, 5, 6), o = FL_TENSOR_INIT;
    FlTensor idx = KT_T(I, KT_SHAPE(4, 1), 2, 0, 2, 1), bad = KT_T(FL_DT_INT32, KT_SHAPE(2), 1, 3);
    KT_OK(fl_kernel_gather(KE, &x, &idx, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(4, 2));
    KT_VALUES(&o, 0, 5, 6, 1, 2, 5, 6, 3, 4);
    KT_ERR(fl_kernel_gather(KE, &x, &bad, &o), "gather: Index[1] is 3, outside [0, 3)");
    FlTensor ids = KT_T(I, KT_SHAPE(3), 2, 0, 2), up = KT_T(F, KT_SHAPE(3, 2), 10, 11, 20, 21, 30, 31);
    KT_OK(fl_kernel_scatter(KE, &x, &ids, &up, &o));
    KT_VALUES(&o, 0, 20, 21, 3, 4, 30, 31); /* row 2: the last update wins */
    FlTensor up2 = KT_T(F, KT_SHAPE(2, 2), 1, 2, 3, 4);
    KT_ERR(fl_kernel_scatter(KE, &x, &ids, &up2, &o), "scatter: Updates [2, 2] must hold one row of X [3, 2] per id (3)");
    FlTensor e2 = KT_T(F, KT_SHAPE(1, 3), 1, 2, 3);
    KT_OK(fl_kernel_expand(KE, &e2, (int64_t[]){2, 2}, 2, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(2, 6));
    KT_VALUES(&o, 0, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3);
    KT_ERR(fl_kernel_expand(KE, &e2, (int64_t[]){2}, 1, &o), "expand: expand_times has 1 values but X [1, 3] has 2 dims");
    FlTensor all[] = {x, o, idx, bad, ids, up, up2, e2};
    kt_fini((int)FL_ARRAY_LEN(all), all);

    L g = {.op = L_GATHER, .nin = 2};
    FlTensor in[2] = {kt_rand(&rng, D, 3, (int64_t[]){4, 2, 3}, -1, 1), KT_T(I, KT_SHAPE(5), 3, 0, 3, 1, 3)};
    check("gather", &g, in, (bool[]){true, false});
    L s = {.op = L_SCATTER, .nin = 3};
    FlTensor in2[3] = {kt_rand(&rng, D, 2, (int64_t[]){4, 3}, -1, 1), KT_T(I, KT_SHAPE(3, 1), 1, 3, 1),
                       kt_rand(&rng, D, 2, (int64_t[]){3, 3}, -1, 1)};
    check("scatter (a repeated id)", &s, in2, (bool[]){true, false, true});
    L ex = {.op = L_EXPAND, .nin = 1, .a = {2, 1, 3}, .n = 3};
    FlTensor in3[1] = {kt_rand(&rng, D, 3, (int64_t[]){2, 3, 2}, -1, 1)};
    check("expand", &ex, in3, ALL);
}

/* ---- stack, unstack, views ---- */

static void test_stack_views(void) {
    FlTensor a = KT_T(F, KT_SHAPE(2, 2), 1, 2, 3, 4), b = KT_T(F, KT_SHAPE(2, 2), 5, 6, 7, 8), o = FL_TENSOR_INIT;
    const FlTensor *xs[2] = {&a, &b};
    KT_OK(fl_kernel_stack(KE, xs, 2, 1, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(2, 2, 2));
    KT_VALUES(&o, 0, 1, 2, 5, 6, 3, 4, 7, 8);
    KT_OK(fl_kernel_stack(KE, xs, 2, -1, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(2, 2, 2));
    KT_VALUES(&o, 0, 1, 5, 2, 6, 3, 7, 4, 8);
    FlTensor p0 = FL_TENSOR_INIT, p1 = FL_TENSOR_INIT;
    FlTensor *ps[2] = {&p0, &p1};
    KT_OK(fl_kernel_unstack(KE, &o, 2, ps, 2));
    KT_SHAPE_IS(&p1, KT_SHAPE(2, 2));
    KT_VALUES(&p1, 0, 5, 6, 7, 8);
    KT_ERR(fl_kernel_unstack(KE, &o, 0, ps, 3), "unstack: 3 outputs but dim 0 of X [2, 2, 2] has size 2");
    FlTensor c = KT_T(F, KT_SHAPE(3), 1, 2, 3);
    const FlTensor *ys[2] = {&a, &c};
    KT_ERR(fl_kernel_stack(KE, ys, 2, 0, &o), "stack: X[1] is float32 [3] but X[0] is float32 [2, 2]");
    FlTensor v = kt_rand(&rng, F, 4, (int64_t[]){1, 3, 1, 2}, 0, 1);
    KT_OK(fl_kernel_squeeze(KE, &v, NULL, 0, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(3, 2));
    CU_ASSERT_EQUAL(o.buf, v.buf);
    KT_OK(fl_kernel_squeeze(KE, &v, (int64_t[]){-2}, 1, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(1, 3, 2));
    KT_ERR(fl_kernel_squeeze(KE, &v, (int64_t[]){1}, 1, &o),
           "squeeze: dim 1 of X [1, 3, 1, 2] has size 3; only a size-1 dim can be squeezed");
    KT_OK(fl_kernel_unsqueeze(KE, &c, (int64_t[]){0, -1}, 2, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(1, 3, 1));
    KT_OK(fl_kernel_flatten(KE, &v, 2, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(3, 2));
    KT_OK(fl_kernel_flatten(KE, &v, 0, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(1, 6));
    FlTensor all[] = {a, b, o, p0, p1, c, v};
    kt_fini((int)FL_ARRAY_LEN(all), all);

    int64_t ne[2] = {2, 3};
    L s = {.op = L_STACK, .nin = 3, .axis = 1};
    FlTensor in[3] = {kt_rand(&rng, D, 2, ne, -1, 1), kt_rand(&rng, D, 2, ne, -1, 1), kt_rand(&rng, D, 2, ne, -1, 1)};
    check("stack", &s, in, ALL);
    L u = {.op = L_UNSTACK, .nin = 1, .axis = -2, .n = 3};
    FlTensor in2[1] = {kt_rand(&rng, D, 3, (int64_t[]){2, 3, 2}, -1, 1)};
    check("unstack", &u, in2, ALL);
    L sq = {.op = L_SQUEEZE, .nin = 1, .a = {0}, .n = 1};
    FlTensor in3[1] = {kt_rand(&rng, D, 3, (int64_t[]){1, 3, 2}, -1, 1)};
    check("squeeze", &sq, in3, ALL);
    L us = {.op = L_UNSQUEEZE, .nin = 1, .a = {1}, .n = 1};
    FlTensor in4[1] = {kt_rand(&rng, D, 2, ne, -1, 1)};
    check("unsqueeze", &us, in4, ALL);
    L fl = {.op = L_FLATTEN, .nin = 1, .axis = 1};
    FlTensor in5[1] = {kt_rand(&rng, D, 3, (int64_t[]){2, 3, 2}, -1, 1)};
    check("flatten", &fl, in5, ALL);
}

/* ---- one_hot, batch-size fills ---- */

static void test_one_hot_and_fills(void) {
    FlTensor x = KT_T(I, KT_SHAPE(3, 1), 2, 0, 3), o = FL_TENSOR_INIT, bad = KT_T(I, KT_SHAPE(1, 1), 4);
    KT_OK(fl_kernel_one_hot(KE, &x, 4, &o));
    CU_ASSERT_EQUAL(o.dtype, F);
    KT_SHAPE_IS(&o, KT_SHAPE(3, 4));
    KT_VALUES(&o, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1);
    KT_ERR(fl_kernel_one_hot(KE, &bad, 4, &o), "one_hot: X[0] is 4, outside [0, 4)");
    FlTensor in = kt_rand(&rng, F, 2, (int64_t[]){7, 3}, 0, 1);
    KT_OK(fl_kernel_fill_constant_batch_size_like(KE, &in, -1, 3, (int64_t[]){-1, 2, 5}, 0, 0, 1.5, NULL, D, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(7, 2, 5));
    CU_ASSERT_EQUAL(o.dtype, D);
    CU_ASSERT_EQUAL(fl_tensor_get(&o, 69), 1.5);
    KT_OK(fl_kernel_fill_constant_batch_size_like(KE, &in, -1, 2, (int64_t[]){4, 1}, 1, 1, 0, NULL, I, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(4, 3));
    KT_ERR(fl_kernel_fill_constant_batch_size_like(KE, &in, -1, 2, (int64_t[]){4, 1}, 2, 0, 0, NULL, F, &o),
           "fill_constant_batch_size_like: input_dim_idx 2 is not a dim of Input [7, 3]");
    /* a LoD Input of 7 rows in 3 sequences: the batch is 3 when input_dim_idx is 0, else the dim */
    KT_OK(fl_kernel_fill_constant_batch_size_like(KE, &in, 3, 2, (int64_t[]){-1, 4}, 0, 0, 2, NULL, F, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(3, 4));
    KT_OK(fl_kernel_fill_constant_batch_size_like(KE, &in, 3, 2, (int64_t[]){2, -1}, 1, 1, 2, NULL, F, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(2, 3));
    KT_OK(fl_kernel_uniform_random_batch_size_like(KE, &in, 3, 2, (int64_t[]){5, -1}, 0, 1, 2, 3, 5, F, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(5, 3));
    KT_OK(fl_kernel_uniform_random_batch_size_like(KE, &in, -1, 2, (int64_t[]){-1, 300}, 0, 0, 2, 3, 5, F, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(7, 300));
    double mn = 1e9, mx = -1e9;
    for (int64_t i = 0; i < 2100; i++) {
        mn = fmin(mn, fl_tensor_get(&o, i));
        mx = fmax(mx, fl_tensor_get(&o, i));
    }
    CU_ASSERT(mn >= 2 && mx < 3 && mn < 2.01 && mx > 2.99);
    FlTensor all[] = {x, o, bad, in};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

int main(void) {
    fl_rng_init(&rng, 20261201);
    static const KtCase cases[] = {
        KT_TEST(test_act_values),    KT_TEST(test_act_grads),          KT_TEST(test_prelu),
        KT_TEST(test_clip_by_norm),  KT_TEST(test_reduce_values),      KT_TEST(test_reduce_grads),
        KT_TEST(test_slice_crop_pad), KT_TEST(test_gather_scatter_expand), KT_TEST(test_stack_views),
        KT_TEST(test_one_hot_and_fills),
    };
    return kt_run("layer kernels (values and finite-difference gradients)", cases, (int)FL_ARRAY_LEN(cases));
}
