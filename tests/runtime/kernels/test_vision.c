/* test_vision.c: the kernels of vision.c (pixel_shuffle, shuffle_channel, space_to_depth,
 * temporal_shift, maxout, affine_channel, pad2d, pad_constant_like, group_norm): plain reference
 * loops in double written from Fluid's operator definitions (space_to_depth from the index
 * arithmetic of Fluid's kernel, the paddings as numpy's constant / reflect / edge modes, group_norm's
 * biased variance per sample and group), compared with the kernels in float32 and float64; the
 * gradients of maxout and group_norm by kt_grad_check's central differences (the other gradients
 * through their layers in test_grad); and the errors on bad inputs. */
#include "tests/runtime/kernels/kt.h"

#include "runtime/kernels/kernels_vision.h"

static double at(const FlTensor *t, int64_t i) { return fl_tensor_get(t, i); }

static const FlDType dts[2] = {FL_DT_FLOAT32, FL_DT_FLOAT64};
#define TOL(k) ((k) ? 1e-12 : 1e-5)

/* ---- the rearrangements: the source element of each output element (-1: zero) ---- */

static int64_t ref_src(const FlRearrangeAttrs *a, const int64_t *xne, int64_t o) {
    int64_t N = xne[0], C = xne[1], H = xne[2], W = xne[3], f = a->factor;
    (void)N;
    switch (a->kind) {
    case FL_REARRANGE_PIXEL_SHUFFLE: { /* Out [N, C/f^2, H*f, W*f] */
        int64_t Wo = W * f, Ho = H * f, Co = C / (f * f);
        int64_t x = o % Wo, y = o / Wo % Ho, c = o / (Wo * Ho) % Co, n = o / (Wo * Ho * Co);
        return ((n * C + c * f * f + (y % f) * f + x % f) * H + y / f) * W + x / f;
    }
    case FL_REARRANGE_SHUFFLE_CHANNEL: { /* out channel j*f + i = in channel i*(C/f) + j */
        int64_t hw = o % (H * W), c = o / (H * W) % C, n = o / (H * W * C);
        int64_t j = c / f, i = c % f;
        return (n * C + i * (C / f) + j) * H * W + hw;
    }
    case FL_REARRANGE_SPACE_TO_DEPTH:
        return -2; /* computed forward below: Fluid's kernel scatters */
    case FL_REARRANGE_TEMPORAL_SHIFT: {
        int64_t hw = o % (H * W), c = o / (H * W) % C, nt = o / (H * W * C), t = nt % f;
        int64_t c1 = (int64_t)((float)C * (float)a->shift_ratio), c2 = (int64_t)((float)C * 2 * (float)a->shift_ratio);
        int64_t st = c < c1 ? t - 1 : c < c2 ? t + 1 : t;
        if (st < 0 || st >= f) return -1;
        return ((nt - t + st) * C + c) * H * W + hw;
    }
    case FL_REARRANGE_COUNT:
        break;
    }
    return -1;
}

/* Fluid's space_to_depth: input element [b, k, j, i] goes to the output's flat index
 * w2 + W*bs*(h2 + H*bs*(c2 + C/bs^2 * b)), c2 = k % (C/bs^2), off = k / (C/bs^2), w2 = i*bs + off % bs,
 * h2 = j*bs + off / bs. */
static void ref_space_to_depth(const FlTensor *x, int64_t bs, double *out) {
    int64_t B = x->ne[0], C = x->ne[1], H = x->ne[2], W = x->ne[3], oc = C / (bs * bs);
    for (int64_t in = 0; in < B * C * H * W; in++) {
        int64_t b = in / (C * H * W), k = in / (H * W) % C, j = in / W % H, i = in % W;
        int64_t c2 = k % oc, off = k / oc, w2 = i * bs + off % bs, h2 = j * bs + off / bs;
        out[w2 + W * bs * (h2 + H * bs * (c2 + oc * b))] = at(x, in);
    }
}

static void test_rearrange_values(void) {
    FlRng r;
    fl_rng_init(&r, 21);
    const struct {
        FlRearrangeAttrs a;
        int64_t ne[4], out[4];
    } cases[] = {
        {{FL_REARRANGE_PIXEL_SHUFFLE, 2, 0}, {2, 8, 3, 2}, {2, 2, 6, 4}},
        {{FL_REARRANGE_PIXEL_SHUFFLE, 3, 0}, {1, 9, 2, 2}, {1, 1, 6, 6}},
        {{FL_REARRANGE_SHUFFLE_CHANNEL, 3, 0}, {2, 6, 2, 3}, {2, 6, 2, 3}},
        {{FL_REARRANGE_SPACE_TO_DEPTH, 2, 0}, {2, 8, 4, 6}, {2, 32, 2, 3}},
        {{FL_REARRANGE_SPACE_TO_DEPTH, 3, 0}, {1, 9, 3, 6}, {1, 81, 1, 2}},
        {{FL_REARRANGE_TEMPORAL_SHIFT, 3, 0.25}, {6, 8, 2, 2}, {6, 8, 2, 2}},
        {{FL_REARRANGE_TEMPORAL_SHIFT, 2, 0.2}, {4, 7, 1, 3}, {4, 7, 1, 3}}, /* c1 = 1, c2 = 2 */
    };
    for (size_t t = 0; t < FL_ARRAY_LEN(cases); t++) {
        for (int k = 0; k < 2; k++) {
            FlTensor x = kt_rand(&r, dts[k], 4, cases[t].ne, -1, 1), o = FL_TENSOR_INIT;
            int64_t n = fl_tensor_numel(&x);
            double *ref = fl_xcalloc((size_t)n, sizeof *ref);
            if (cases[t].a.kind == FL_REARRANGE_SPACE_TO_DEPTH) {
                ref_space_to_depth(&x, cases[t].a.factor, ref);
            } else {
                for (int64_t i = 0; i < n; i++) {
                    int64_t s = ref_src(&cases[t].a, cases[t].ne, i);
                    ref[i] = s < 0 ? 0 : at(&x, s);
                }
            }
            KT_OK(fl_kernel_rearrange(KE, &x, &cases[t].a, &o));
            kt_shape_is(&o, 4, cases[t].out);
            CU_ASSERT(kt_values(&o, ref, n, 0));
            free(ref);
            FlTensor all[] = {x, o};
            kt_fini(2, all);
        }
    }
    /* space_to_depth by hand: X = 0..15 as [1, 4, 2, 2], blocksize 2 (Out viewed as [1, 1, 4, 4]) */
    double v[16];
    for (int i = 0; i < 16; i++) v[i] = i;
    FlTensor x = kt_make(FL_DT_FLOAT64, 4, (int64_t[]){1, 4, 2, 2}, v), o = FL_TENSOR_INIT;
    KT_OK(fl_kernel_rearrange(KE, &x, &(FlRearrangeAttrs){FL_REARRANGE_SPACE_TO_DEPTH, 2, 0}, &o));
    KT_SHAPE_IS(&o, KT_SHAPE(1, 16, 1, 1));
    KT_VALUES(&o, 0, 0, 4, 1, 5, 8, 12, 9, 13, 2, 6, 3, 7, 10, 14, 11, 15);
    FlErr e;
    CU_ASSERT_EQUAL(fl_kernel_rearrange(&e, &x, &(FlRearrangeAttrs){FL_REARRANGE_PIXEL_SHUFFLE, 3, 0}, &o), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "upscale_factor"));
    fl_tensor_fini(&x);
    fl_tensor_fini(&o);
}

/* ---- maxout, affine_channel ---- */

static void test_maxout_affine_values(void) {
    FlRng r;
    fl_rng_init(&r, 22);
    for (int k = 0; k < 2; k++) {
        FlTensor x = kt_rand(&r, dts[k], 4, (int64_t[]){2, 6, 2, 3}, -1, 1), o = FL_TENSOR_INIT;
        double ref[36];
        for (int64_t n = 0; n < 2; n++)
            for (int64_t c = 0; c < 2; c++)
                for (int64_t s = 0; s < 6; s++) {
                    double m = -INFINITY;
                    for (int64_t g = 0; g < 3; g++) m = fmax(m, at(&x, (n * 6 + c * 3 + g) * 6 + s));
                    ref[(n * 2 + c) * 6 + s] = m;
                }
        KT_OK(fl_kernel_maxout(KE, &x, 3, &o));
        KT_SHAPE_IS(&o, KT_SHAPE(2, 2, 2, 3));
        CU_ASSERT(kt_values(&o, ref, 24, 0));
        /* affine_channel, NCHW then NHWC (the channels the last dim, 3) */
        FlTensor s = kt_rand(&r, dts[k], 1, (int64_t[]){6}, -2, 2), b = kt_rand(&r, dts[k], 1, (int64_t[]){6}, -1, 1);
        FlTensor s3 = kt_rand(&r, dts[k], 1, (int64_t[]){3}, -2, 2), b3 = kt_rand(&r, dts[k], 1, (int64_t[]){3}, -1, 1);
        double refa[72];
        for (int64_t i = 0; i < 72; i++) refa[i] = at(&x, i) * at(&s, i / 6 % 6) + at(&b, i / 6 % 6);
        KT_OK(fl_kernel_affine_channel(KE, &x, &s, &b, false, &o));
        CU_ASSERT(kt_values(&o, refa, 72, TOL(k)));
        for (int64_t i = 0; i < 72; i++) refa[i] = at(&x, i) * at(&s3, i % 3) + at(&b3, i % 3);
        KT_OK(fl_kernel_affine_channel(KE, &x, &s3, &b3, true, &o));
        CU_ASSERT(kt_values(&o, refa, 72, TOL(k)));
        FlErr e;
        CU_ASSERT_EQUAL(fl_kernel_affine_channel(&e, &x, &s3, &b3, false, &o), FL_ERROR);
        CU_ASSERT_EQUAL(fl_kernel_maxout(&e, &x, 4, &o), FL_ERROR);
        FlTensor all[] = {x, o, s, b, s3, b3};
        kt_fini(6, all);
    }
}

/* ---- pad2d, pad_constant_like ---- */

/* The source row of padded row i (pad before, size n), -1 for the constant. */
static int64_t pad_src(int64_t i, int64_t before, int64_t n, FlPad2dMode mode) {
    int64_t s = i - before;
    if (s >= 0 && s < n) return s;
    switch (mode) {
    case FL_PAD2D_CONSTANT: return -1;
    case FL_PAD2D_REFLECT: return s < 0 ? -s : 2 * (n - 1) - s;
    case FL_PAD2D_EDGE: return s < 0 ? 0 : n - 1;
    case FL_PAD2D_COUNT: break;
    }
    return -1;
}

static void test_pad2d_values(void) {
    FlRng r;
    fl_rng_init(&r, 23);
    const int64_t pads[][4] = {{1, 2, 0, 3}, {2, 0, 2, 1}, {0, 0, 0, 0}};
    for (int k = 0; k < 2; k++)
        for (int mode = 0; mode < FL_PAD2D_COUNT; mode++)
            for (size_t p = 0; p < FL_ARRAY_LEN(pads); p++)
                for (int nhwc = 0; nhwc < 2; nhwc++) {
                    int64_t N = 2, C = 3, H = 3, W = 4, Ho = H + pads[p][0] + pads[p][1], Wo = W + pads[p][2] + pads[p][3];
                    FlTensor x = kt_rand(&r, dts[k], 4, nhwc ? (int64_t[]){N, H, W, C} : (int64_t[]){N, C, H, W}, -1, 1);
                    FlTensor o = FL_TENSOR_INIT;
                    double ref[2 * 3 * 6 * 8];
                    for (int64_t n = 0; n < N; n++)
                        for (int64_t c = 0; c < C; c++)
                            for (int64_t h = 0; h < Ho; h++)
                                for (int64_t w = 0; w < Wo; w++) {
                                    int64_t sh = pad_src(h, pads[p][0], H, (FlPad2dMode)mode),
                                            sw = pad_src(w, pads[p][2], W, (FlPad2dMode)mode);
                                    int64_t oi = nhwc ? ((n * Ho + h) * Wo + w) * C + c : ((n * C + c) * Ho + h) * Wo + w;
                                    int64_t xi = nhwc ? ((n * H + sh) * W + sw) * C + c : ((n * C + c) * H + sh) * W + sw;
                                    ref[oi] = sh < 0 || sw < 0 ? -0.5 : at(&x, xi);
                                }
                    KT_OK(fl_kernel_pad2d(KE, &x, pads[p], (FlPad2dMode)mode, -0.5, nhwc, &o));
                    if (nhwc) KT_SHAPE_IS(&o, KT_SHAPE(N, Ho, Wo, C));
                    else KT_SHAPE_IS(&o, KT_SHAPE(N, C, Ho, Wo));
                    CU_ASSERT(kt_values(&o, ref, N * C * Ho * Wo, 0));
                    FlTensor all[] = {x, o};
                    kt_fini(2, all);
                }
    /* reflect needs each padding below the size it mirrors */
    FlTensor x = kt_rand(&r, FL_DT_FLOAT64, 4, (int64_t[]){1, 1, 2, 3}, 0, 1), o = FL_TENSOR_INIT;
    FlErr e;
    CU_ASSERT_EQUAL(fl_kernel_pad2d(&e, &x, (int64_t[]){2, 0, 0, 0}, FL_PAD2D_REFLECT, 0, false, &o), FL_ERROR);
    KT_OK(fl_kernel_pad2d(KE, &x, (int64_t[]){1, 0, 0, 2}, FL_PAD2D_REFLECT, 0, false, &o));
    /* pad_constant_like: Y [1, 1, 2, 2] at the origin of X's [1, 1, 2, 3] */
    FlTensor y = KT_T(FL_DT_FLOAT64, KT_SHAPE(1, 1, 2, 2), 1, 2, 3, 4);
    KT_OK(fl_kernel_pad_constant_like(KE, &x, &y, 9, &o));
    KT_VALUES(&o, 0, 1, 2, 9, 3, 4, 9);
    CU_ASSERT_EQUAL(fl_kernel_pad_constant_like(&e, &y, &x, 9, &o), FL_ERROR); /* Y larger than X */
    FlTensor all[] = {x, o, y};
    kt_fini(3, all);
}

/* ---- group_norm ---- */

static void ref_group_norm(const FlTensor *x, const FlTensor *s, const FlTensor *b, int64_t G, double eps, double *y,
                           double *mean, double *var) {
    int64_t N = x->ne[0], C = x->ne[1], S = fl_tensor_numel(x) / (N * C), M = C / G * S;
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < G; g++) {
            int64_t base = (n * C + g * (C / G)) * S;
            double mu = 0, v = 0;
            for (int64_t i = 0; i < M; i++) mu += at(x, base + i) / (double)M;
            for (int64_t i = 0; i < M; i++) v += pow(at(x, base + i) - mu, 2) / (double)M;
            mean[n * G + g] = mu, var[n * G + g] = v;
            for (int64_t i = 0; i < M; i++) {
                int64_t c = g * (C / G) + i / S;
                y[base + i] = (at(x, base + i) - mu) / sqrt(v + eps) * (s ? at(s, c) : 1) + (b ? at(b, c) : 0);
            }
        }
}

static void test_group_norm_values(void) {
    FlRng r;
    fl_rng_init(&r, 24);
    for (int k = 0; k < 2; k++)
        for (int affine = 0; affine < 2; affine++) {
            FlTensor x = kt_rand(&r, dts[k], 4, (int64_t[]){2, 6, 2, 3}, -2, 3);
            FlTensor s = kt_rand(&r, dts[k], 1, (int64_t[]){6}, 0.5, 2), b = kt_rand(&r, dts[k], 1, (int64_t[]){6}, -1, 1);
            FlTensor y = FL_TENSOR_INIT, m = FL_TENSOR_INIT, v = FL_TENSOR_INIT;
            double ry[72], rm[6], rv[6];
            ref_group_norm(&x, affine ? &s : NULL, affine ? &b : NULL, 3, 1e-3, ry, rm, rv);
            KT_OK(fl_kernel_group_norm(KE, &x, affine ? &s : NULL, affine ? &b : NULL, 3, 1e-3, &y, &m, &v));
            KT_SHAPE_IS(&m, KT_SHAPE(2, 3));
            CU_ASSERT(kt_values(&y, ry, 72, k ? 1e-12 : 1e-5));
            CU_ASSERT(kt_values(&m, rm, 6, k ? 1e-12 : 1e-5));
            CU_ASSERT(kt_values(&v, rv, 6, k ? 1e-12 : 1e-5));
            FlErr e;
            CU_ASSERT_EQUAL(fl_kernel_group_norm(&e, &x, NULL, NULL, 4, 1e-3, &y, &m, &v), FL_ERROR);
            FlTensor all[] = {x, s, b, y, m, v};
            kt_fini(6, all);
        }
}

/* ---- gradients (float64) ---- */

typedef struct GnCtx {
    int groups;
    double eps;
} GnCtx;

static FlStatus gn_fwd(const void *ctx, FlErr *e, FlTensor *in, FlTensor *out) {
    const GnCtx *g = ctx;
    return fl_kernel_group_norm(e, &in[0], &in[1], &in[2], g->groups, g->eps, out, NULL, NULL);
}
static FlStatus gn_bwd(const void *ctx, FlErr *e, FlTensor *in, const FlTensor *out, const FlTensor *dout,
                       FlTensor *din) {
    (void)out;
    const GnCtx *g = ctx;
    FlTensor y = FL_TENSOR_INIT, m = FL_TENSOR_INIT, v = FL_TENSOR_INIT;
    FlStatus s = fl_kernel_group_norm(e, &in[0], &in[1], &in[2], g->groups, g->eps, &y, &m, &v);
    if (!s) s = fl_kernel_group_norm_grad(e, &in[0], &in[1], &m, &v, dout, g->groups, g->eps, &din[0], &din[1], &din[2]);
    FlTensor all[] = {y, m, v};
    kt_fini(3, all);
    return s;
}

static FlStatus maxout_fwd(const void *ctx, FlErr *e, FlTensor *in, FlTensor *out) {
    return fl_kernel_maxout(e, &in[0], *(const int *)ctx, out);
}
static FlStatus maxout_bwd(const void *ctx, FlErr *e, FlTensor *in, const FlTensor *out, const FlTensor *dout,
                           FlTensor *din) {
    (void)out;
    return fl_kernel_maxout_grad(e, &in[0], dout, *(const int *)ctx, &din[0]);
}

static void test_vision_grads(void) {
    FlRng r;
    fl_rng_init(&r, 25);
    GnCtx g = {2, 1e-4};
    FlTensor in[3] = {kt_rand(&r, FL_DT_FLOAT64, 4, (int64_t[]){2, 4, 2, 3}, -2, 2),
                      kt_rand(&r, FL_DT_FLOAT64, 1, (int64_t[]){4}, 0.5, 2),
                      kt_rand(&r, FL_DT_FLOAT64, 1, (int64_t[]){4}, -1, 1)};
    CU_ASSERT(kt_grad_check("group_norm", &g, 3, in, (bool[]){true, true, true}, gn_fwd, gn_bwd, 1e-6));
    kt_fini(3, in);
    int groups = 3;
    FlTensor x = kt_distinct(&r, FL_DT_FLOAT64, 4, (int64_t[]){2, 6, 2, 2});
    CU_ASSERT(kt_grad_check("maxout", &groups, 1, &x, (bool[]){true}, maxout_fwd, maxout_bwd, 1e-6));
    fl_tensor_fini(&x);
}

int main(void) {
    KtCase cases[] = {
        KT_TEST(test_rearrange_values), KT_TEST(test_maxout_affine_values), KT_TEST(test_pad2d_values),
        KT_TEST(test_group_norm_values), KT_TEST(test_vision_grads),
    };
    return kt_run("vision", cases, (int)FL_ARRAY_LEN(cases));
}
