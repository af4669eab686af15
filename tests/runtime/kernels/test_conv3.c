/* test_conv3.c: the kernels of conv3.c (conv3d, conv3d_transpose, pooling over 2 or 3 dims with
 * adaptive windows and argmax masks): plain reference loops in double written from Fluid's
 * definitions (conv3d's sum over the dilated window, conv3d_transpose's scatter of every input cell,
 * pool windows [o*s - p, o*s - p + k) clipped to the image, adaptive windows [floor(i*in/out),
 * ceil((i+1)*in/out))), compared with the kernels in float64 and float32 (the float32 ones on oneDNN
 * unless FL_DNNL=0: the test runs both ways) and with their _ref twins; gradients by kt_grad_check's
 * central differences in float64; and the errors on bad inputs. */
#include "tests/runtime/kernels/kt.h"

#include "runtime/kernels/kernels_conv3.h"

static double at(const FlTensor *t, int64_t i) { return fl_tensor_get(t, i); }

/* ---- conv3d: out[n, m, o] = sum over c in m's group and k of in[n, c, o*s - p + k*d] * f[m, c', k] ---- */

typedef struct Geo {
    int64_t N, C, M, in[3], k[3];
    FlConv3dAttrs a;
} Geo;

static int64_t conv_out(const Geo *g, int i) {
    return (g->in[i] + 2 * g->a.paddings[i] - (g->a.dilations[i] * (g->k[i] - 1) + 1)) / g->a.strides[i] + 1;
}

static void ref_conv3d(const Geo *g, const FlTensor *x, const FlTensor *f, double *out) {
    int64_t G = g->a.groups, Cg = g->C / G, Mg = g->M / G, O[3] = {conv_out(g, 0), conv_out(g, 1), conv_out(g, 2)};
    int64_t *I = (int64_t *)g->in, *K = (int64_t *)g->k;
    const int *s = g->a.strides, *p = g->a.paddings, *d = g->a.dilations;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t m = 0; m < g->M; m++)
            for (int64_t o0 = 0; o0 < O[0]; o0++)
                for (int64_t o1 = 0; o1 < O[1]; o1++)
                    for (int64_t o2 = 0; o2 < O[2]; o2++) {
                        double acc = 0;
                        for (int64_t c = 0; c < Cg; c++)
                            for (int64_t k0 = 0; k0 < K[0]; k0++)
                                for (int64_t k1 = 0; k1 < K[1]; k1++)
                                    for (int64_t k2 = 0; k2 < K[2]; k2++) {
                                        int64_t i0 = o0 * s[0] - p[0] + k0 * d[0], i1 = o1 * s[1] - p[1] + k1 * d[1],
                                                i2 = o2 * s[2] - p[2] + k2 * d[2];
                                        if (i0 < 0 || i0 >= I[0] || i1 < 0 || i1 >= I[1] || i2 < 0 || i2 >= I[2])
                                            continue;
                                        int64_t ci = (m / Mg) * Cg + c;
                                        acc += at(x, (((n * g->C + ci) * I[0] + i0) * I[1] + i1) * I[2] + i2) *
                                               at(f, (((m * Cg + c) * K[0] + k0) * K[1] + k1) * K[2] + k2);
                                    }
                        *out++ = acc;
                    }
}

static const Geo conv_geos[] = {
    {1, 2, 3, {4, 5, 6}, {2, 3, 2}, {{1, 2, 1}, {1, 0, 1}, {1, 1, 1}, 1}},
    {2, 4, 6, {5, 4, 5}, {3, 2, 3}, {{2, 1, 2}, {1, 1, 0}, {1, 2, 1}, 2}},
    {1, 3, 3, {3, 6, 4}, {1, 2, 2}, {{1, 1, 1}, {0, 2, 1}, {1, 2, 2}, 3}},
};

static void test_conv3d_values(void) {
    FlRng r;
    fl_rng_init(&r, 11);
    for (size_t t = 0; t < FL_ARRAY_LEN(conv_geos); t++) {
        const Geo *g = &conv_geos[t];
        int64_t O[3] = {conv_out(g, 0), conv_out(g, 1), conv_out(g, 2)}, n = g->N * g->M * O[0] * O[1] * O[2];
        double *ref = fl_xcalloc((size_t)n, sizeof *ref);
        for (int k = 0; k < 2; k++) {
            FlDType dt = k ? FL_DT_FLOAT64 : FL_DT_FLOAT32;
            FlTensor x = kt_rand(&r, dt, 5, (int64_t[]){g->N, g->C, g->in[0], g->in[1], g->in[2]}, -1, 1);
            FlTensor f = kt_rand(&r, dt, 5, (int64_t[]){g->M, g->C / g->a.groups, g->k[0], g->k[1], g->k[2]}, -1, 1);
            FlTensor o = FL_TENSOR_INIT, o2 = FL_TENSOR_INIT;
            ref_conv3d(g, &x, &f, ref);
            KT_OK(fl_kernel_conv3d(KE, &x, &f, &g->a, &o));
            KT_SHAPE_IS(&o, KT_SHAPE(g->N, g->M, O[0], O[1], O[2]));
            CU_ASSERT(kt_values(&o, ref, n, k ? 1e-12 : 1e-5));
            KT_OK(fl_kernel_conv3d_ref(KE, &x, &f, &g->a, &o2));
            CU_ASSERT(kt_values(&o2, ref, n, k ? 1e-12 : 1e-5));
            FlTensor all[] = {x, f, o, o2};
            kt_fini(4, all);
        }
        free(ref);
    }
}

/* ---- conv3d_transpose: every input cell adds in[n, c, i] * f[c, m', k] to out[n, m, i*s - p + k*d] ---- */

static void ref_conv3d_transpose(const Geo *g, const FlTensor *x, const FlTensor *f, const int64_t *O, double *out) {
    int64_t G = g->a.groups, Cg = g->C / G, Mg = g->M / G;
    const int64_t *I = g->in, *K = g->k;
    const int *s = g->a.strides, *p = g->a.paddings, *d = g->a.dilations;
    memset(out, 0, (size_t)(g->N * g->M * O[0] * O[1] * O[2]) * sizeof *out);
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t c = 0; c < g->C; c++)
            for (int64_t i0 = 0; i0 < I[0]; i0++)
                for (int64_t i1 = 0; i1 < I[1]; i1++)
                    for (int64_t i2 = 0; i2 < I[2]; i2++) {
                        double v = at(x, (((n * g->C + c) * I[0] + i0) * I[1] + i1) * I[2] + i2);
                        for (int64_t mm = 0; mm < Mg; mm++)
                            for (int64_t k0 = 0; k0 < K[0]; k0++)
                                for (int64_t k1 = 0; k1 < K[1]; k1++)
                                    for (int64_t k2 = 0; k2 < K[2]; k2++) {
                                        int64_t o0 = i0 * s[0] - p[0] + k0 * d[0], o1 = i1 * s[1] - p[1] + k1 * d[1],
                                                o2 = i2 * s[2] - p[2] + k2 * d[2];
                                        if (o0 < 0 || o0 >= O[0] || o1 < 0 || o1 >= O[1] || o2 < 0 || o2 >= O[2])
                                            continue;
                                        int64_t m = (c / Cg) * Mg + mm;
                                        out[(((n * g->M + m) * O[0] + o0) * O[1] + o1) * O[2] + o2] +=
                                            v * at(f, (((c * Mg + mm) * K[0] + k0) * K[1] + k1) * K[2] + k2);
                                    }
                    }
}

static void test_conv3d_transpose_values(void) {
    FlRng r;
    fl_rng_init(&r, 12);
    for (size_t t = 0; t < FL_ARRAY_LEN(conv_geos); t++) {
        const Geo *g = &conv_geos[t];
        for (int withsize = 0; withsize < 2; withsize++) {
            int64_t O[3], os[3];
            for (int i = 0; i < 3; i++) {
                O[i] = (g->in[i] - 1) * g->a.strides[i] - 2 * g->a.paddings[i] + g->a.dilations[i] * (g->k[i] - 1) + 1;
                /* output_size: the largest size of the range [O, O + stride) */
                os[i] = O[i] + g->a.strides[i] - 1;
                if (withsize) O[i] = os[i];
            }
            int64_t n = g->N * g->M * O[0] * O[1] * O[2];
            double *ref = fl_xcalloc((size_t)n, sizeof *ref);
            for (int k = 0; k < 2; k++) {
                FlDType dt = k ? FL_DT_FLOAT64 : FL_DT_FLOAT32;
                FlTensor x = kt_rand(&r, dt, 5, (int64_t[]){g->N, g->C, g->in[0], g->in[1], g->in[2]}, -1, 1);
                FlTensor f = kt_rand(&r, dt, 5, (int64_t[]){g->C, g->M / g->a.groups, g->k[0], g->k[1], g->k[2]}, -1, 1);
                FlTensor o = FL_TENSOR_INIT;
                ref_conv3d_transpose(g, &x, &f, O, ref);
                KT_OK(fl_kernel_conv3d_transpose(KE, &x, &f, &g->a, withsize ? os : NULL, &o));
                KT_SHAPE_IS(&o, KT_SHAPE(g->N, g->M, O[0], O[1], O[2]));
                CU_ASSERT(kt_values(&o, ref, n, k ? 1e-12 : 1e-5));
                FlTensor all[] = {x, f, o};
                kt_fini(3, all);
            }
            free(ref);
        }
    }
}

/* ---- pooling ---- */

typedef struct PoolCase {
    int nsp;
    int64_t N, C, in[3];
    FlPoolNdAttrs a;
} PoolCase;

/* The window [*lo, *hi) of output cell o along dim i, and the output size. */
static int64_t pool_out(const PoolCase *pc, int i) {
    const FlPoolNdAttrs *a = &pc->a;
    if (a->global_pooling) return 1;
    if (a->adaptive) return a->ksize[i];
    int64_t span = pc->in[i] + 2 * a->paddings[i] - a->ksize[i];
    return (a->ceil_mode ? span + a->strides[i] - 1 : span) / a->strides[i] + 1;
}
static void window(const PoolCase *pc, int i, int64_t o, int64_t *lo, int64_t *hi) {
    const FlPoolNdAttrs *a = &pc->a;
    int64_t in = pc->in[i];
    if (a->global_pooling) {
        *lo = 0, *hi = in;
    } else if (a->adaptive) {
        *lo = (int64_t)floor((double)(o * in) / (double)a->ksize[i]);
        *hi = (int64_t)ceil((double)((o + 1) * in) / (double)a->ksize[i]);
    } else {
        *lo = o * a->strides[i] - a->paddings[i];
        *hi = *lo + a->ksize[i] < in ? *lo + a->ksize[i] : in;
        if (*lo < 0) *lo = 0;
    }
}

/* out (and mask: the flat index in the image of the first maximum) of every output cell; the
 * spatial dims beyond nsp are 1. */
static int64_t ref_pool(const PoolCase *pc, const FlTensor *x, double *out, double *mask) {
    int64_t I[3] = {1, 1, 1}, O[3] = {1, 1, 1}, k = 0;
    for (int i = 0; i < pc->nsp; i++) I[3 - pc->nsp + i] = pc->in[i], O[3 - pc->nsp + i] = pool_out(pc, i);
    for (int64_t nc = 0; nc < pc->N * pc->C; nc++)
        for (int64_t o0 = 0; o0 < O[0]; o0++)
            for (int64_t o1 = 0; o1 < O[1]; o1++)
                for (int64_t o2 = 0; o2 < O[2]; o2++, k++) {
                    int64_t lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1}, o[3] = {o0, o1, o2};
                    for (int i = 0; i < pc->nsp; i++) window(pc, i, o[3 - pc->nsp + i], &lo[3 - pc->nsp + i], &hi[3 - pc->nsp + i]);
                    double best = -INFINITY, sum = 0, cells = 0, arg = -1;
                    for (int64_t a = lo[0]; a < hi[0]; a++)
                        for (int64_t b = lo[1]; b < hi[1]; b++)
                            for (int64_t c = lo[2]; c < hi[2]; c++) {
                                int64_t idx = (a * I[1] + b) * I[2] + c;
                                double v = at(x, nc * I[0] * I[1] * I[2] + idx);
                                sum += v, cells += 1;
                                if (v > best) best = v, arg = (double)idx;
                            }
                    double size = 1;
                    for (int i = 0; i < pc->nsp; i++) size *= (double)pc->a.ksize[i];
                    bool whole = pc->a.exclusive || pc->a.adaptive || pc->a.global_pooling;
                    /* a window of ceil_mode wholly in the padding gives 0 (kernels_conv3.h) */
                    out[k] = cells == 0 ? 0 : pc->a.type == FL_POOL_MAX ? best : sum / (whole ? cells : size);
                    if (mask) mask[k] = arg;
                }
    return k;
}

#define MAXP FL_POOL_MAX
#define AVGP FL_POOL_AVG
static const PoolCase pool_cases[] = {
    /* 3-D: plain, padded and strided, ceil_mode, global, non-exclusive average */
    {3, 2, 2, {4, 5, 6}, {3, MAXP, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, false, true, false, false}},
    {3, 1, 3, {5, 4, 6}, {3, AVGP, {3, 2, 3}, {2, 1, 2}, {1, 1, 1}, false, true, false, false}},
    {3, 1, 2, {5, 4, 6}, {3, AVGP, {3, 2, 3}, {2, 1, 2}, {1, 1, 1}, false, false, false, false}},
    {3, 1, 2, {5, 5, 7}, {3, MAXP, {2, 3, 2}, {2, 2, 3}, {0, 1, 0}, false, true, true, false}},
    /* ceil_mode with a last window wholly in the padding (W: windows from -1, 2, 5, 8 over 7) */
    {3, 1, 2, {5, 5, 7}, {3, MAXP, {2, 3, 2}, {2, 2, 3}, {0, 1, 1}, false, true, true, false}},
    {2, 1, 2, {4, 5}, {2, AVGP, {2, 2}, {2, 2}, {1, 1}, false, false, true, false}},
    {3, 2, 2, {3, 4, 5}, {3, AVGP, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, true, true, false, false}},
    /* adaptive in 3 and 2 dims: windows that overlap (5 -> 3) and that divide evenly (6 -> 3) */
    {3, 1, 2, {5, 6, 7}, {3, MAXP, {3, 3, 4}, {1, 1, 1}, {0, 0, 0}, false, true, false, true}},
    {3, 2, 2, {5, 6, 7}, {3, AVGP, {2, 3, 4}, {1, 1, 1}, {0, 0, 0}, false, true, false, true}},
    {2, 2, 3, {5, 7}, {2, MAXP, {3, 2}, {1, 1}, {0, 0}, false, true, false, true}},
    {2, 1, 2, {7, 5}, {2, AVGP, {4, 3}, {1, 1}, {0, 0}, false, true, false, true}},
    /* 2-D with a mask: padded and strided */
    {2, 1, 2, {6, 5}, {2, MAXP, {3, 2}, {2, 2}, {1, 1}, false, true, false, false}},
};

static FlTensor pool_x(FlRng *r, const PoolCase *pc, FlDType dt) {
    int64_t ne[5] = {pc->N, pc->C, pc->in[0], pc->in[1], pc->in[2]};
    return kt_distinct(r, dt, 2 + pc->nsp, ne);
}

static void test_pool_nd_values(void) {
    FlRng r;
    fl_rng_init(&r, 13);
    for (size_t t = 0; t < FL_ARRAY_LEN(pool_cases); t++) {
        const PoolCase *pc = &pool_cases[t];
        double ref[4096], mref[4096];
        for (int k = 0; k < 2; k++) {
            FlDType dt = k ? FL_DT_FLOAT64 : FL_DT_FLOAT32;
            FlTensor x = pool_x(&r, pc, dt), o = FL_TENSOR_INIT, o2 = FL_TENSOR_INIT, m = FL_TENSOR_INIT;
            int64_t n = ref_pool(pc, &x, ref, mref);
            KT_OK(fl_kernel_pool_nd(KE, &x, &pc->a, &o, NULL));
            CU_ASSERT_EQUAL(fl_tensor_numel(&o), n);
            for (int i = 0; i < pc->nsp; i++) CU_ASSERT_EQUAL(o.ne[2 + i], pool_out(pc, i));
            CU_ASSERT(kt_values(&o, ref, n, k ? 1e-12 : 1e-5));
            KT_OK(fl_kernel_pool_nd_ref(KE, &x, &pc->a, &o2, pc->a.type == MAXP ? &m : NULL));
            CU_ASSERT(kt_values(&o2, ref, n, k ? 1e-12 : 1e-5));
            if (pc->a.type == MAXP) {
                CU_ASSERT_EQUAL(m.dtype, FL_DT_INT32);
                CU_ASSERT(kt_values(&m, mref, n, 0));
            }
            FlTensor all[] = {x, o, o2, m};
            kt_fini(4, all);
        }
    }
    /* the first maximum on ties, and the average of an adaptive window of 3 overlapping cells */
    FlTensor x = KT_T(FL_DT_FLOAT64, KT_SHAPE(1, 1, 1, 5), 1, 4, 4, 2, 4), o = FL_TENSOR_INIT, m = FL_TENSOR_INIT;
    FlPoolNdAttrs a = {2, MAXP, {1, 2}, {1, 1}, {0, 0}, false, true, false, true};
    KT_OK(fl_kernel_pool_nd(KE, &x, &a, &o, &m));
    KT_VALUES(&o, 0, 4, 4); /* windows [0, 3) and [2, 5) */
    KT_VALUES(&m, 0, 1, 2);
    a.type = AVGP;
    KT_OK(fl_kernel_pool_nd(KE, &x, &a, &o, NULL));
    KT_VALUES(&o, 1e-12, 3, 10.0 / 3);
    FlTensor all[] = {x, o, m};
    kt_fini(3, all);
}

/* ---- gradients (float64) ---- */

typedef struct ConvCtx {
    const Geo *g;
    const int64_t *os; /* conv3d_transpose's output_size, or NULL */
    bool transpose;
} ConvCtx;

static FlStatus conv_fwd(const void *ctx, FlErr *e, FlTensor *in, FlTensor *out) {
    const ConvCtx *c = ctx;
    return c->transpose ? fl_kernel_conv3d_transpose(e, &in[0], &in[1], &c->g->a, c->os, out)
                        : fl_kernel_conv3d(e, &in[0], &in[1], &c->g->a, out);
}
static FlStatus conv_bwd(const void *ctx, FlErr *e, FlTensor *in, const FlTensor *out, const FlTensor *dout,
                         FlTensor *din) {
    (void)out;
    const ConvCtx *c = ctx;
    return c->transpose ? fl_kernel_conv3d_transpose_grad(e, &in[0], &in[1], dout, &c->g->a, c->os, &din[0], &din[1])
                        : fl_kernel_conv3d_grad(e, &in[0], &in[1], dout, &c->g->a, &din[0], &din[1]);
}

typedef struct PoolCtx {
    const PoolCase *pc;
    bool with_mask;
} PoolCtx;

static FlStatus pool_fwd(const void *ctx, FlErr *e, FlTensor *in, FlTensor *out) {
    return fl_kernel_pool_nd(e, &in[0], &((const PoolCtx *)ctx)->pc->a, out, NULL);
}
static FlStatus pool_bwd(const void *ctx, FlErr *e, FlTensor *in, const FlTensor *out, const FlTensor *dout,
                         FlTensor *din) {
    (void)out;
    const PoolCtx *c = ctx;
    FlTensor o = FL_TENSOR_INIT, m = FL_TENSOR_INIT;
    FlStatus s = FL_OK;
    if (c->with_mask) s = fl_kernel_pool_nd(e, &in[0], &c->pc->a, &o, &m);
    if (!s) s = fl_kernel_pool_nd_grad(e, &in[0], c->with_mask ? &m : NULL, dout, &c->pc->a, &din[0]);
    fl_tensor_fini(&o);
    fl_tensor_fini(&m);
    return s;
}

static void test_conv3_grads(void) {
    FlRng r;
    fl_rng_init(&r, 14);
    const Geo small[] = {
        {1, 2, 2, {3, 4, 3}, {2, 2, 2}, {{1, 2, 1}, {1, 0, 1}, {1, 1, 1}, 1}},
        {1, 4, 2, {4, 3, 3}, {2, 1, 2}, {{2, 1, 1}, {0, 1, 1}, {1, 1, 2}, 2}},
    };
    for (size_t t = 0; t < FL_ARRAY_LEN(small); t++) {
        const Geo *g = &small[t];
        for (int tr = 0; tr < 2; tr++) {
            int64_t os[3];
            for (int i = 0; i < 3; i++)
                os[i] = (g->in[i] - 1) * g->a.strides[i] - 2 * g->a.paddings[i] + g->a.dilations[i] * (g->k[i] - 1) +
                        g->a.strides[i]; /* the top of output_size's range */
            FlTensor in[2] = {
                kt_rand(&r, FL_DT_FLOAT64, 5, (int64_t[]){g->N, g->C, g->in[0], g->in[1], g->in[2]}, -1, 1),
                tr ? kt_rand(&r, FL_DT_FLOAT64, 5, (int64_t[]){g->C, g->M / g->a.groups, g->k[0], g->k[1], g->k[2]}, -1, 1)
                   : kt_rand(&r, FL_DT_FLOAT64, 5, (int64_t[]){g->M, g->C / g->a.groups, g->k[0], g->k[1], g->k[2]}, -1, 1)};
            ConvCtx c = {g, tr ? os : NULL, tr != 0};
            CU_ASSERT(kt_grad_check(tr ? "conv3d_transpose" : "conv3d", &c, 2, in, (bool[]){true, true}, conv_fwd,
                                    conv_bwd, 1e-6));
            kt_fini(2, in);
        }
    }
    for (size_t t = 0; t < FL_ARRAY_LEN(pool_cases); t++) {
        const PoolCase *pc = &pool_cases[t];
        for (int wm = 0; wm < (pc->a.type == MAXP ? 2 : 1); wm++) {
            FlTensor x = pool_x(&r, pc, FL_DT_FLOAT64);
            PoolCtx c = {pc, wm != 0};
            CU_ASSERT(kt_grad_check("pool_nd", &c, 1, &x, (bool[]){true}, pool_fwd, pool_bwd, 1e-6));
            fl_tensor_fini(&x);
        }
    }
}

/* ---- errors ---- */

static void test_conv3_bad_inputs(void) {
    FlErr e;
    FlTensor x = kt_rand(&(FlRng){0}, FL_DT_FLOAT64, 5, (int64_t[]){1, 4, 3, 3, 3}, 0, 1);
    FlTensor f = kt_rand(&(FlRng){0}, FL_DT_FLOAT64, 5, (int64_t[]){2, 3, 2, 2, 2}, 0, 1), o = FL_TENSOR_INIT;
    FlConv3dAttrs a = FL_CONV3D_ATTRS_DEFAULT;
    CU_ASSERT_EQUAL(fl_kernel_conv3d(&e, &x, &f, &a, &o), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "Filter's dim 1 (3) times groups"));
    FlTensor f5 = kt_rand(&(FlRng){0}, FL_DT_FLOAT64, 5, (int64_t[]){2, 4, 5, 2, 2}, 0, 1);
    CU_ASSERT_EQUAL(fl_kernel_conv3d(&e, &x, &f5, &a, &o), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "the output would be empty"));
    FlTensor x4 = kt_rand(&(FlRng){0}, FL_DT_FLOAT64, 4, (int64_t[]){1, 4, 3, 3}, 0, 1);
    CU_ASSERT_EQUAL(fl_kernel_conv3d(&e, &x4, &f, &a, &o), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "[N, C, D, H, W]"));
    FlTensor ft = kt_rand(&(FlRng){0}, FL_DT_FLOAT64, 5, (int64_t[]){4, 2, 2, 2, 2}, 0, 1);
    /* output_size outside [inferred, inferred + stride): 4 is the inferred size of stride 1 */
    CU_ASSERT_EQUAL(fl_kernel_conv3d_transpose(&e, &x, &ft, &a, (int64_t[]){4, 5, 4}, &o), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "output_size"));
    FlPoolNdAttrs pa = {3, AVGP, {2, 2, 2}, {1, 1, 1}, {0, 0, 0}, false, true, false, false};
    FlTensor m = FL_TENSOR_INIT;
    CU_ASSERT_EQUAL(fl_kernel_pool_nd(&e, &x, &pa, &o, &m), FL_ERROR); /* a mask of an average */
    pa.type = MAXP, pa.nsp = 2;
    CU_ASSERT_EQUAL(fl_kernel_pool_nd(&e, &x, &pa, &o, NULL), FL_ERROR); /* rank 5 for 2 dims */
    pa.nsp = 3, pa.ksize[0] = 4;
    CU_ASSERT_EQUAL(fl_kernel_pool_nd(&e, &x, &pa, &o, NULL), FL_ERROR); /* window above the image */
    FlTensor all[] = {x, f, o, f5, x4, ft, m};
    kt_fini(7, all);
}

int main(void) {
    KtCase cases[] = {
        KT_TEST(test_conv3d_values),  KT_TEST(test_conv3d_transpose_values), KT_TEST(test_pool_nd_values),
        KT_TEST(test_conv3_grads),    KT_TEST(test_conv3_bad_inputs),
    };
    return kt_run("conv3", cases, (int)FL_ARRAY_LEN(cases));
}
