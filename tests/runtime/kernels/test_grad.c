/* test_grad.c: every differentiable kernel's gradient against central finite differences, in
 * float64 (random inputs kept away from kinks; relative tolerance 1e-6). Multi-output ops are
 * checked through the concatenation of their outputs. */
#include "tests/runtime/kernels/kt.h"

typedef enum {
    G_MUL, G_MATMUL, G_ELT, G_UNARY, G_SCALE, G_SOFTMAX, G_CE, G_SOFTMAX_CE, G_MEAN, G_REDUCE,
    G_SUM, G_CONCAT, G_SPLIT, G_RESHAPE, G_TRANSPOSE, G_TOPK, G_CONV, G_CONV_REF, G_POOL, G_BN,
    G_DROPOUT, G_CAST,
} GOp;

typedef FlStatus (*EltFn)(FlErr *, const FlTensor *, const FlTensor *, int, FlTensor *);
typedef FlStatus (*EltGradFn)(FlErr *, const FlTensor *, const FlTensor *, const FlTensor *, int,
                              FlTensor *, FlTensor *);
typedef FlStatus (*UnFn)(FlErr *, const FlTensor *, FlTensor *);
typedef FlStatus (*UnGradFn)(FlErr *, const FlTensor *, const FlTensor *, const FlTensor *,
                             FlTensor *);

typedef struct G {
    GOp op;
    int nin;
    int i1, i2; /* num_col_dims, axis, k, ... */
    bool b1, b2;
    double d1;
    int ints[8];
    int nints;
    int64_t secs[4];
    int nsecs;
    EltFn elt;
    EltGradFn elt_grad;
    UnFn un;
    UnGradFn un_grad;
    FlConv2dAttrs conv;
    FlPool2dAttrs pool;
} G;

static FlStatus fwd(const void *vc, FlErr *e, FlTensor *in, FlTensor *out) {
    const G *c = vc;
    switch (c->op) {
    case G_MUL: return fl_kernel_mul(e, &in[0], &in[1], c->i1, c->i2, out);
    case G_MATMUL: return fl_kernel_matmul(e, &in[0], &in[1], c->b1, c->b2, c->d1, out);
    case G_ELT: return c->elt(e, &in[0], &in[1], c->i1, out);
    case G_UNARY: return c->un(e, &in[0], out);
    case G_SCALE: return fl_kernel_scale(e, &in[0], c->d1, 0.3, c->b1, out);
    case G_SOFTMAX: return fl_kernel_softmax(e, &in[0], out);
    case G_CE: return fl_kernel_cross_entropy(e, &in[0], &in[1], c->b1, c->i1, out);
    case G_SOFTMAX_CE: {
        FlTensor p = FL_TENSOR_INIT;
        FlStatus s = fl_kernel_softmax(e, &in[0], &p);
        if (!s) s = fl_kernel_cross_entropy(e, &p, &in[1], c->b1, -100, out);
        fl_tensor_fini(&p);
        return s;
    }
    case G_MEAN: return fl_kernel_mean(e, &in[0], out);
    case G_REDUCE:
        return c->b2 ? fl_kernel_reduce_mean(e, &in[0], c->ints, c->nints, c->b1, c->i1, out)
                     : fl_kernel_reduce_sum(e, &in[0], c->ints, c->nints, c->b1, c->i1, out);
    case G_SUM: {
        const FlTensor *xs[3] = {&in[0], &in[1], &in[2]};
        return fl_kernel_sum(e, xs, c->nin, out);
    }
    case G_CONCAT: {
        const FlTensor *xs[3] = {&in[0], &in[1], &in[2]};
        return fl_kernel_concat(e, xs, c->nin, c->i1, out);
    }
    case G_SPLIT: {
        FlTensor parts[4];
        FlTensor *pp[4] = {&parts[0], &parts[1], &parts[2], &parts[3]};
        for (int i = 0; i < 4; i++) fl_tensor_init(&parts[i]);
        int n = c->nsecs ? c->nsecs : c->i2;
        FlStatus s = fl_kernel_split(e, &in[0], c->i1, c->i2, c->secs, c->nsecs, pp, n);
        if (!s) s = fl_kernel_concat(e, (const FlTensor *const *)pp, n, c->i1, out);
        kt_fini(4, parts);
        return s;
    }
    case G_RESHAPE: {
        int64_t sh[8];
        for (int i = 0; i < c->nints; i++) sh[i] = c->ints[i];
        return fl_kernel_reshape(e, &in[0], sh, c->nints, out);
    }
    case G_TRANSPOSE: return fl_kernel_transpose(e, &in[0], c->ints, c->nints, out);
    case G_TOPK: {
        FlTensor idx = FL_TENSOR_INIT;
        FlStatus s = fl_kernel_top_k(e, &in[0], c->i1, out, &idx);
        fl_tensor_fini(&idx);
        return s;
    }
    case G_CONV: return fl_kernel_conv2d(e, &in[0], &in[1], &c->conv, out);
    case G_CONV_REF: return fl_kernel_conv2d_ref(e, &in[0], &in[1], &c->conv, out);
    case G_POOL: return fl_kernel_pool2d(e, &in[0], &c->pool, out);
    case G_BN: return fl_kernel_batch_norm(e, &in[0], &in[1], &in[2], &in[3], &in[4], 0.9, 1e-5,
                                           c->b1, out, NULL, NULL, NULL, NULL);
    case G_DROPOUT: {
        FlTensor m = FL_TENSOR_INIT;
        FlStatus s = fl_kernel_dropout(e, &in[0], c->d1, c->b1, c->b2, 7, 3, out, &m);
        fl_tensor_fini(&m);
        return s;
    }
    case G_CAST: return fl_kernel_cast(e, &in[0], FL_DT_FLOAT64, out);
    }
    return FL_ERROR;
}

static FlStatus bwd(const void *vc, FlErr *e, FlTensor *in, const FlTensor *out,
                    const FlTensor *g, FlTensor *din) {
    const G *c = vc;
    switch (c->op) {
    case G_MUL: return fl_kernel_mul_grad(e, &in[0], &in[1], g, c->i1, c->i2, &din[0], &din[1]);
    case G_MATMUL:
        return fl_kernel_matmul_grad(e, &in[0], &in[1], g, c->b1, c->b2, c->d1, &din[0], &din[1]);
    case G_ELT: return c->elt_grad(e, &in[0], &in[1], g, c->i1, &din[0], &din[1]);
    case G_UNARY: return c->un_grad(e, &in[0], out, g, &din[0]);
    case G_SCALE: return fl_kernel_scale_grad(e, g, c->d1, &din[0]);
    case G_SOFTMAX: return fl_kernel_softmax_grad(e, out, g, &din[0]);
    case G_CE: return fl_kernel_cross_entropy_grad(e, &in[0], &in[1], g, c->b1, c->i1, &din[0]);
    case G_SOFTMAX_CE: {
        FlTensor p = FL_TENSOR_INIT, dp = FL_TENSOR_INIT;
        FlStatus s = fl_kernel_softmax(e, &in[0], &p);
        if (!s) s = fl_kernel_cross_entropy_grad(e, &p, &in[1], g, c->b1, -100, &dp);
        if (!s) s = fl_kernel_softmax_grad(e, &p, &dp, &din[0]);
        fl_tensor_fini(&p);
        fl_tensor_fini(&dp);
        return s;
    }
    case G_MEAN: return fl_kernel_mean_grad(e, &in[0], g, &din[0]);
    case G_REDUCE:
        return c->b2 ? fl_kernel_reduce_mean_grad(e, &in[0], g, c->ints, c->nints, c->b1, c->i1, &din[0])
                     : fl_kernel_reduce_sum_grad(e, &in[0], g, c->ints, c->nints, c->b1, c->i1, &din[0]);
    case G_SUM: {
        FlTensor *d[3] = {&din[0], &din[1], &din[2]};
        return fl_kernel_sum_grad(e, g, c->nin, d);
    }
    case G_CONCAT: {
        const FlTensor *xs[3] = {&in[0], &in[1], &in[2]};
        FlTensor *d[3] = {&din[0], NULL, &din[2]}; /* NULL: that gradient is not needed */
        FlStatus s = fl_kernel_concat_grad(e, xs, c->nin, g, c->i1, d);
        if (!s) {
            FlTensor *d1[3] = {NULL, &din[1], NULL};
            s = fl_kernel_concat_grad(e, xs, c->nin, g, c->i1, d1);
        }
        return s;
    }
    case G_SPLIT: {
        FlTensor parts[4];
        FlTensor *pp[4] = {&parts[0], &parts[1], &parts[2], &parts[3]};
        for (int i = 0; i < 4; i++) fl_tensor_init(&parts[i]);
        int n = c->nsecs ? c->nsecs : c->i2;
        FlStatus s = fl_kernel_split(e, g, c->i1, c->i2, c->secs, c->nsecs, pp, n);
        if (!s) s = fl_kernel_split_grad(e, &in[0], (const FlTensor *const *)pp, n, c->i1, c->secs,
                                         c->nsecs, &din[0]);
        kt_fini(4, parts);
        return s;
    }
    case G_RESHAPE: return fl_kernel_reshape_grad(e, &in[0], g, &din[0]);
    case G_TRANSPOSE: return fl_kernel_transpose_grad(e, g, c->ints, c->nints, &din[0]);
    case G_TOPK: {
        FlTensor o = FL_TENSOR_INIT, idx = FL_TENSOR_INIT;
        FlStatus s = fl_kernel_top_k(e, &in[0], c->i1, &o, &idx);
        if (!s) s = fl_kernel_top_k_grad(e, &in[0], &idx, g, &din[0]);
        fl_tensor_fini(&o);
        fl_tensor_fini(&idx);
        return s;
    }
    case G_CONV: return fl_kernel_conv2d_grad(e, &in[0], &in[1], g, &c->conv, &din[0], &din[1]);
    case G_CONV_REF:
        return fl_kernel_conv2d_grad_ref(e, &in[0], &in[1], g, &c->conv, &din[0], &din[1]);
    case G_POOL: return fl_kernel_pool2d_grad(e, &in[0], out, g, &c->pool, &din[0]);
    case G_BN: {
        FlTensor sm = FL_TENSOR_INIT, sv = FL_TENSOR_INIT, y = FL_TENSOR_INIT;
        FlStatus s = fl_kernel_batch_norm(e, &in[0], &in[1], &in[2], &in[3], &in[4], 0.9, 1e-5,
                                          c->b1, &y, NULL, NULL, &sm, &sv);
        if (!s) s = fl_kernel_batch_norm_grad(e, &in[0], &in[1], &sm, &sv, g, c->b1, &din[0],
                                              &din[1], &din[2]);
        fl_tensor_fini(&sm);
        fl_tensor_fini(&sv);
        fl_tensor_fini(&y);
        return s;
    }
    case G_DROPOUT: {
        FlTensor o = FL_TENSOR_INIT, m = FL_TENSOR_INIT;
        FlStatus s = fl_kernel_dropout(e, &in[0], c->d1, c->b1, c->b2, 7, 3, &o, &m);
        if (!s) s = fl_kernel_dropout_grad(e, c->b1 ? NULL : &m, g, c->d1, c->b1, c->b2, &din[0]);
        fl_tensor_fini(&o);
        fl_tensor_fini(&m);
        return s;
    }
    case G_CAST: return fl_kernel_cast_grad(e, &in[0], g, &din[0]);
    }
    return FL_ERROR;
}

#define D FL_DT_FLOAT64
static FlRng rng;

static void check(const char *name, const G *c, FlTensor *in, const bool *chk) {
    bool ok = kt_grad_check(name, c, c->nin, in, chk, fwd, bwd, 1e-6);
    CU_ASSERT(ok);
    kt_fini(c->nin, in);
}
static const bool ALL[8] = {true, true, true, true, true, true, true, true};

static void test_grad_mul(void) {
    G c = {.op = G_MUL, .nin = 2, .i1 = 1, .i2 = 1};
    FlTensor in[2] = {kt_rand(&rng, D, 2, (int64_t[]){3, 4}, -1, 1), kt_rand(&rng, D, 2, (int64_t[]){4, 5}, -1, 1)};
    check("mul", &c, in, ALL);
    G c2 = {.op = G_MUL, .nin = 2, .i1 = 2, .i2 = 1};
    FlTensor in2[2] = {kt_rand(&rng, D, 3, (int64_t[]){2, 3, 4}, -1, 1), kt_rand(&rng, D, 3, (int64_t[]){4, 2, 3}, -1, 1)};
    check("mul num_col_dims", &c2, in2, ALL);
}

static void test_grad_matmul(void) {
    for (int t = 0; t < 4; t++) {
        bool tx = t & 1, ty = t & 2;
        G c = {.op = G_MATMUL, .nin = 2, .b1 = tx, .b2 = ty, .d1 = 0.7};
        int64_t xs[2] = {tx ? 4 : 3, tx ? 3 : 4}, ys[2] = {ty ? 5 : 4, ty ? 4 : 5};
        FlTensor in[2] = {kt_rand(&rng, D, 2, xs, -1, 1), kt_rand(&rng, D, 2, ys, -1, 1)};
        check("matmul 2-D", &c, in, ALL);
        int64_t xb[3] = {2, xs[0], xs[1]}, yb[3] = {2, ys[0], ys[1]};
        FlTensor in3[2] = {kt_rand(&rng, D, 3, xb, -1, 1), kt_rand(&rng, D, 3, yb, -1, 1)};
        check("matmul batched", &c, in3, ALL);
        FlTensor in4[2] = {kt_rand(&rng, D, 3, xb, -1, 1), kt_rand(&rng, D, 2, ys, -1, 1)};
        check("matmul 3-D x 2-D", &c, in4, ALL);
        FlTensor in5[2] = {kt_rand(&rng, D, 2, xs, -1, 1), kt_rand(&rng, D, 3, yb, -1, 1)};
        check("matmul 2-D x 3-D", &c, in5, ALL);
    }
}

typedef struct EltCase {
    const char *name;
    EltFn f;
    EltGradFn g;
} EltCase;

static void test_grad_elementwise(void) {
    const EltCase ops[] = {
        {"add", fl_kernel_elementwise_add, fl_kernel_elementwise_add_grad},
        {"sub", fl_kernel_elementwise_sub, fl_kernel_elementwise_sub_grad},
        {"mul", fl_kernel_elementwise_mul, fl_kernel_elementwise_mul_grad},
        {"div", fl_kernel_elementwise_div, fl_kernel_elementwise_div_grad},
        {"max", fl_kernel_elementwise_max, fl_kernel_elementwise_max_grad},
        {"min", fl_kernel_elementwise_min, fl_kernel_elementwise_min_grad},
        {"pow", fl_kernel_elementwise_pow, fl_kernel_elementwise_pow_grad},
    };
    /* shapes: same; numpy both ways; Y scalar-like; Paddle axis */
    struct { int nx; int64_t x[4]; int ny; int64_t y[4]; int axis; } sh[] = {
        {2, {3, 4}, 2, {3, 4}, -1},
        {3, {3, 1, 4}, 2, {2, 1}, -1},
        {2, {3, 4}, 1, {1}, -1},
        {1, {4}, 3, {2, 3, 4}, -1},
        {3, {2, 3, 4}, 1, {3}, 1},
        {4, {2, 3, 2, 2}, 2, {2, 3}, 0},
    };
    for (size_t o = 0; o < FL_ARRAY_LEN(ops); o++)
        for (size_t s = 0; s < FL_ARRAY_LEN(sh); s++) {
            G c = {.op = G_ELT, .nin = 2, .i1 = sh[s].axis, .elt = ops[o].f, .elt_grad = ops[o].g};
            FlTensor x = kt_rand(&rng, D, sh[s].nx, sh[s].x, 0.5, 1.5);
            FlTensor y = kt_rand(&rng, D, sh[s].ny, sh[s].y, 0.5, 1.5);
            if (o == 4 || o == 5) { /* max/min: keep |x - y| large against every pairing */
                for (int64_t i = 0; i < fl_tensor_numel(&x); i++)
                    fl_tensor_set(&x, i, fl_rng_uniform(&rng) < 0.5 ? 0.1 + 0.2 * fl_rng_uniform(&rng)
                                                                    : 2 + 0.2 * fl_rng_uniform(&rng));
                for (int64_t i = 0; i < fl_tensor_numel(&y); i++) fl_tensor_set(&y, i, 1 + 0.2 * fl_rng_uniform(&rng));
            }
            FlTensor in[2] = {x, y};
            char name[64];
            snprintf(name, sizeof name, "elementwise_%s shape case %zu", ops[o].name, s);
            check(name, &c, in, ALL);
        }
}

static void test_grad_unary(void) {
    struct { const char *name; UnFn f; UnGradFn g; double lo, hi; bool away; } ops[] = {
        {"relu", fl_kernel_relu, fl_kernel_relu_grad, 0.05, 2, true},
        {"sigmoid", fl_kernel_sigmoid, fl_kernel_sigmoid_grad, -3, 3, false},
        {"tanh", fl_kernel_tanh, fl_kernel_tanh_grad, -2, 2, false},
        {"exp", fl_kernel_exp, fl_kernel_exp_grad, -2, 2, false},
        {"log", fl_kernel_log, fl_kernel_log_grad, 0.3, 3, false},
        {"sqrt", fl_kernel_sqrt, fl_kernel_sqrt_grad, 0.3, 3, false},
        {"square", fl_kernel_square, fl_kernel_square_grad, -2, 2, false},
        {"abs", fl_kernel_abs, fl_kernel_abs_grad, 0.05, 2, true},
    };
    for (size_t o = 0; o < FL_ARRAY_LEN(ops); o++) {
        G c = {.op = G_UNARY, .nin = 1, .un = ops[o].f, .un_grad = ops[o].g};
        int64_t ne[2] = {3, 5};
        FlTensor in[1] = {ops[o].away ? kt_rand_away(&rng, D, 2, ne, ops[o].lo, ops[o].hi)
                                      : kt_rand(&rng, D, 2, ne, ops[o].lo, ops[o].hi)};
        check(ops[o].name, &c, in, ALL);
    }
    G c = {.op = G_SCALE, .nin = 1, .d1 = -1.7, .b1 = false};
    FlTensor in[1] = {kt_rand(&rng, D, 2, (int64_t[]){2, 3}, -1, 1)};
    check("scale", &c, in, ALL);
    G cc = {.op = G_CAST, .nin = 1};
    FlTensor inc[1] = {kt_rand(&rng, D, 1, (int64_t[]){4}, -1, 1)};
    check("cast", &cc, inc, ALL);
}

static void test_grad_softmax_ce(void) {
    G c = {.op = G_SOFTMAX, .nin = 1};
    FlTensor in[1] = {kt_rand(&rng, D, 3, (int64_t[]){2, 3, 5}, -2, 2)};
    check("softmax", &c, in, ALL);

    G ce = {.op = G_CE, .nin = 2, .i1 = -100};
    FlTensor x = kt_rand(&rng, D, 2, (int64_t[]){4, 5}, 0.1, 1);
    FlTensor l = KT_T(FL_DT_INT64, KT_SHAPE(4, 1), 2, 0, -100, 4);
    FlTensor in2[2] = {x, l};
    check("cross_entropy hard (one row ignored)", &ce, in2, (bool[]){true, false});

    G cs = {.op = G_CE, .nin = 2, .b1 = true, .i1 = -100};
    FlTensor in3[2] = {kt_rand(&rng, D, 2, (int64_t[]){3, 4}, 0.1, 1), kt_rand(&rng, D, 2, (int64_t[]){3, 4}, 0, 1)};
    check("cross_entropy soft", &cs, in3, (bool[]){true, false});

    G sc = {.op = G_SOFTMAX_CE, .nin = 2};
    FlTensor in4[2] = {kt_rand(&rng, D, 2, (int64_t[]){4, 6}, -2, 2), KT_T(FL_DT_INT64, KT_SHAPE(4, 1), 5, 0, 3, 3)};
    check("softmax + cross_entropy", &sc, in4, (bool[]){true, false});
}

static void test_grad_reduce(void) {
    G m = {.op = G_MEAN, .nin = 1};
    FlTensor in[1] = {kt_rand(&rng, D, 2, (int64_t[]){3, 4}, -1, 1)};
    check("mean", &m, in, ALL);
    struct { int dims[3]; int nd; bool keep, all; } rc[] = {
        {{1}, 1, false, false}, {{0, 2}, 2, true, false}, {{-1}, 1, true, false}, {{0}, 0, false, true},
    };
    for (int mean = 0; mean < 2; mean++)
        for (size_t i = 0; i < FL_ARRAY_LEN(rc); i++) {
            G c = {.op = G_REDUCE, .nin = 1, .b1 = rc[i].keep, .i1 = rc[i].all, .b2 = mean, .nints = rc[i].nd};
            memcpy(c.ints, rc[i].dims, sizeof rc[i].dims);
            FlTensor x[1] = {kt_rand(&rng, D, 3, (int64_t[]){2, 3, 4}, -1, 1)};
            check(mean ? "reduce_mean" : "reduce_sum", &c, x, ALL);
        }
    G s = {.op = G_SUM, .nin = 3};
    int64_t ne[2] = {2, 3};
    FlTensor xs[3] = {kt_rand(&rng, D, 2, ne, -1, 1), kt_rand(&rng, D, 2, ne, -1, 1), kt_rand(&rng, D, 2, ne, -1, 1)};
    check("sum", &s, xs, ALL);
}

static void test_grad_shape_ops(void) {
    G c = {.op = G_CONCAT, .nin = 3, .i1 = 1};
    FlTensor xs[3] = {kt_rand(&rng, D, 3, (int64_t[]){2, 1, 3}, -1, 1), kt_rand(&rng, D, 3, (int64_t[]){2, 2, 3}, -1, 1),
                      kt_rand(&rng, D, 3, (int64_t[]){2, 3, 3}, -1, 1)};
    check("concat", &c, xs, ALL);
    G s = {.op = G_SPLIT, .nin = 1, .i1 = -1, .secs = {1, -1, 2}, .nsecs = 3};
    FlTensor x[1] = {kt_rand(&rng, D, 2, (int64_t[]){2, 5}, -1, 1)};
    check("split sections", &s, x, ALL);
    G s2 = {.op = G_SPLIT, .nin = 1, .i1 = 0, .i2 = 2};
    FlTensor x2[1] = {kt_rand(&rng, D, 2, (int64_t[]){4, 3}, -1, 1)};
    check("split num", &s2, x2, ALL);
    G r = {.op = G_RESHAPE, .nin = 1, .ints = {0, -1}, .nints = 2};
    FlTensor x3[1] = {kt_rand(&rng, D, 3, (int64_t[]){2, 3, 4}, -1, 1)};
    check("reshape", &r, x3, ALL);
    G t = {.op = G_TRANSPOSE, .nin = 1, .ints = {2, 0, 1}, .nints = 3};
    FlTensor x4[1] = {kt_rand(&rng, D, 3, (int64_t[]){2, 3, 4}, -1, 1)};
    check("transpose", &t, x4, ALL);
    G k = {.op = G_TOPK, .nin = 1, .i1 = 2};
    FlTensor x5[1] = {kt_distinct(&rng, D, 2, (int64_t[]){3, 5})};
    check("top_k", &k, x5, ALL);
}

static void test_grad_conv(void) {
    struct { int64_t in[4], f[4]; FlConv2dAttrs a; } cs[] = {
        {{2, 2, 5, 5}, {3, 2, 3, 3}, {{1, 1}, {0, 0}, {1, 1}, 1}},
        {{1, 4, 6, 5}, {4, 2, 3, 2}, {{2, 1}, {1, 2}, {1, 1}, 2}},
        {{1, 2, 7, 7}, {2, 1, 3, 3}, {{1, 2}, {2, 1}, {2, 2}, 2}},
    };
    for (size_t i = 0; i < FL_ARRAY_LEN(cs); i++)
        for (int ref = 0; ref < 2; ref++) {
            G c = {.op = ref ? G_CONV_REF : G_CONV, .nin = 2, .conv = cs[i].a};
            FlTensor in[2] = {kt_rand(&rng, D, 4, cs[i].in, -1, 1), kt_rand(&rng, D, 4, cs[i].f, -1, 1)};
            check(ref ? "conv2d_ref" : "conv2d (im2col)", &c, in, ALL);
        }
}

static void test_grad_pool(void) {
    FlPool2dAttrs as[] = {
        {FL_POOL_MAX, {2, 2}, {2, 2}, {0, 0}, false, true, false},
        {FL_POOL_MAX, {3, 3}, {2, 2}, {1, 1}, false, true, false},
        {FL_POOL_AVG, {3, 3}, {2, 2}, {1, 1}, false, true, false},
        {FL_POOL_AVG, {3, 2}, {1, 2}, {1, 1}, false, false, true},
        {FL_POOL_AVG, {1, 1}, {1, 1}, {0, 0}, true, true, false},
        {FL_POOL_MAX, {1, 1}, {1, 1}, {0, 0}, true, true, false},
    };
    for (size_t i = 0; i < FL_ARRAY_LEN(as); i++) {
        G c = {.op = G_POOL, .nin = 1, .pool = as[i]};
        FlTensor in[1] = {kt_distinct(&rng, D, 4, (int64_t[]){2, 2, 5, 5})};
        check(as[i].type == FL_POOL_MAX ? "pool2d max" : "pool2d avg", &c, in, ALL);
    }
}

static void test_grad_batch_norm(void) {
    for (int test = 0; test < 2; test++) {
        for (int rank4 = 0; rank4 < 2; rank4++) {
            G c = {.op = G_BN, .nin = 5, .b1 = test};
            int64_t xs4[4] = {3, 2, 2, 3}, xs2[2] = {5, 3};
            int64_t C = rank4 ? 2 : 3;
            FlTensor in[5] = {rank4 ? kt_rand(&rng, D, 4, xs4, -2, 2) : kt_rand(&rng, D, 2, xs2, -2, 2),
                              kt_rand(&rng, D, 1, &C, 0.5, 1.5), kt_rand(&rng, D, 1, &C, -1, 1),
                              kt_rand(&rng, D, 1, &C, -0.5, 0.5), kt_rand(&rng, D, 1, &C, 0.5, 2)};
            check(test ? "batch_norm test mode" : "batch_norm train mode", &c, in,
                  (bool[]){true, true, true, false, false});
        }
    }
}

static void test_grad_dropout(void) {
    for (int mode = 0; mode < 4; mode++) { /* train/test x downgrade_in_infer/upscale_in_train */
        G c = {.op = G_DROPOUT, .nin = 1, .d1 = 0.3, .b1 = mode & 1, .b2 = mode >> 1};
        FlTensor in[1] = {kt_rand(&rng, D, 2, (int64_t[]){4, 5}, -1, 1)};
        check("dropout", &c, in, ALL);
    }
}

int main(void) {
    fl_rng_init(&rng, 20240601);
    static const KtCase cases[] = {
        KT_TEST(test_grad_mul),        KT_TEST(test_grad_matmul),     KT_TEST(test_grad_elementwise),
        KT_TEST(test_grad_unary),      KT_TEST(test_grad_softmax_ce), KT_TEST(test_grad_reduce),
        KT_TEST(test_grad_shape_ops),  KT_TEST(test_grad_conv),       KT_TEST(test_grad_pool),
        KT_TEST(test_grad_batch_norm), KT_TEST(test_grad_dropout),
    };
    return kt_run("kernel gradients (finite differences)", cases, (int)FL_ARRAY_LEN(cases));
}
