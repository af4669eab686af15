/* test_roi.c: the kernels of roi.c (roi_pool, roi_align, psroi_pool): plain reference loops in
 * double written from Fluid's CPU kernels (one output element at a time: its box's image, its bin
 * or sample points, then the max, the bilinear mean or the average), compared with the kernels in
 * float32 and float64 for boxes inside, across and outside the image, scaled and not; gradients by
 * kt_grad_check's central differences in float64 (roi_pool's through its Argmax); and the errors. */
#include "tests/runtime/kernels/kt.h"

#include "runtime/kernels/kernels_roi.h"

static double at(const FlTensor *t, int64_t i) { return fl_tensor_get(t, i); }

enum { N = 2, C = 8, H = 6, W = 7, R = 5 };
/* boxes (x1, y1, x2, y2): inside, fractional, reaching past the image, a point, wholly outside */
static const double boxes[R * 4] = {1, 1, 4, 3, 0.4, 1.6, 5.5, 4.2, 3, 2, 9, 8, 2, 2, 2, 2, -3, -2, -1, -0.5};
static const int64_t offs[N + 1] = {0, 3, 5};
static int64_t bid(int64_t r) { return r < offs[1] ? 0 : 1; }
static double X(const FlTensor *x, int64_t b, int64_t c, int64_t h, int64_t w) { return at(x, ((b * C + c) * H + h) * W + w); }

static double ref_roi_pool(const FlTensor *x, const FlRoiAttrs *a, int64_t r, int64_t c, int64_t i, int64_t j, int64_t *arg) {
    const double *bx = &boxes[r * 4], s = a->spatial_scale;
    int64_t x1 = (int64_t)round(bx[0] * s), y1 = (int64_t)round(bx[1] * s);
    int64_t x2 = (int64_t)round(bx[2] * s), y2 = (int64_t)round(bx[3] * s);
    double bh = (double)(y2 - y1 + 1 > 1 ? y2 - y1 + 1 : 1) / a->pooled_height;
    double bw = (double)(x2 - x1 + 1 > 1 ? x2 - x1 + 1 : 1) / a->pooled_width;
    int64_t h0 = (int64_t)floor(i * bh) + y1, h1 = (int64_t)ceil((i + 1) * bh) + y1;
    int64_t w0 = (int64_t)floor(j * bw) + x1, w1 = (int64_t)ceil((j + 1) * bw) + x1;
    h0 = h0 < 0 ? 0 : h0 > H ? H : h0, h1 = h1 < 0 ? 0 : h1 > H ? H : h1;
    w0 = w0 < 0 ? 0 : w0 > W ? W : w0, w1 = w1 < 0 ? 0 : w1 > W ? W : w1;
    double best = 0;
    *arg = -1;
    for (int64_t h = h0; h < h1; h++)
        for (int64_t w = w0; w < w1; w++)
            if (*arg < 0 || X(x, bid(r), c, h, w) > best) best = X(x, bid(r), c, h, w), *arg = h * W + w;
    return best;
}

static double bilinear(const FlTensor *x, int64_t b, int64_t c, double y, double xx) {
    if (y < -1 || y > H || xx < -1 || xx > W) return 0;
    y = y < 0 ? 0 : y, xx = xx < 0 ? 0 : xx;
    int64_t yl = (int64_t)y, xl = (int64_t)xx, yh, xh;
    if (yl >= H - 1) yh = yl = H - 1, y = (double)yl;
    else yh = yl + 1;
    if (xl >= W - 1) xh = xl = W - 1, xx = (double)xl;
    else xh = xl + 1;
    double ly = y - yl, lx = xx - xl;
    return (1 - ly) * (1 - lx) * X(x, b, c, yl, xl) + (1 - ly) * lx * X(x, b, c, yl, xh) + ly * (1 - lx) * X(x, b, c, yh, xl) +
           ly * lx * X(x, b, c, yh, xh);
}

static double ref_roi_align(const FlTensor *x, const FlRoiAttrs *a, int64_t r, int64_t c, int64_t i, int64_t j) {
    const double *bx = &boxes[r * 4], s = a->spatial_scale;
    double x1 = bx[0] * s, y1 = bx[1] * s, rw = fmax(bx[2] * s - x1, 1), rh = fmax(bx[3] * s - y1, 1);
    double bh = rh / a->pooled_height, bw = rw / a->pooled_width;
    int64_t gh = a->sampling_ratio > 0 ? a->sampling_ratio : (int64_t)ceil(rh / a->pooled_height);
    int64_t gw = a->sampling_ratio > 0 ? a->sampling_ratio : (int64_t)ceil(rw / a->pooled_width);
    double sum = 0;
    for (int64_t iy = 0; iy < gh; iy++)
        for (int64_t ix = 0; ix < gw; ix++)
            sum += bilinear(x, bid(r), c, y1 + i * bh + (iy + 0.5) * bh / gh, x1 + j * bw + (ix + 0.5) * bw / gw);
    return sum / (double)(gh * gw);
}

static double ref_psroi(const FlTensor *x, const FlRoiAttrs *a, int64_t r, int64_t c, int64_t i, int64_t j) {
    const double *bx = &boxes[r * 4], s = a->spatial_scale;
    double x1 = round(bx[0]) * s, y1 = round(bx[1]) * s;
    double rw = fmax((round(bx[2]) + 1) * s - x1, 0.1), rh = fmax((round(bx[3]) + 1) * s - y1, 0.1);
    double bh = rh / a->pooled_height, bw = rw / a->pooled_width;
    int64_t h0 = (int64_t)floor(bh * i + y1), h1 = (int64_t)ceil(bh * (i + 1) + y1);
    int64_t w0 = (int64_t)floor(bw * j + x1), w1 = (int64_t)ceil(bw * (j + 1) + x1);
    h0 = h0 < 0 ? 0 : h0 > H ? H : h0, h1 = h1 < 0 ? 0 : h1 > H ? H : h1;
    w0 = w0 < 0 ? 0 : w0 > W ? W : w0, w1 = w1 < 0 ? 0 : w1 > W ? W : w1;
    if (h1 <= h0 || w1 <= w0) return 0;
    double sum = 0;
    int64_t ic = (c * a->pooled_height + i) * a->pooled_width + j;
    for (int64_t h = h0; h < h1; h++)
        for (int64_t w = w0; w < w1; w++) sum += X(x, bid(r), ic, h, w);
    return sum / (double)((h1 - h0) * (w1 - w0));
}

static FlTensor make_rois(FlDType dt) { return kt_make(dt, 2, (int64_t[]){R, 4}, boxes); }

static void test_roi_values(void) {
    FlRng rng;
    fl_rng_init(&rng, 31);
    const FlRoiAttrs attrs[] = {{2, 3, 1.0, -1, 0}, {3, 2, 0.5, 2, 0}, {1, 1, 1.5, 1, 0}, {2, 2, 1.0, 3, 2}};
    for (int k = 0; k < 2; k++) {
        FlDType dt = k ? FL_DT_FLOAT64 : FL_DT_FLOAT32;
        FlTensor x = kt_rand(&rng, dt, 4, (int64_t[]){N, C, H, W}, -2, 2), rois = make_rois(dt);
        for (size_t t = 0; t < FL_ARRAY_LEN(attrs); t++) {
            FlRoiAttrs a = attrs[t];
            int64_t ph = a.pooled_height, pw = a.pooled_width, n = R * C * ph * pw;
            double *ref = fl_xcalloc((size_t)n, sizeof *ref), *refa = fl_xcalloc((size_t)n, sizeof *refa),
                   *args = fl_xcalloc((size_t)n, sizeof *args);
            for (int64_t r = 0, o = 0; r < R; r++)
                for (int64_t c = 0; c < C; c++)
                    for (int64_t i = 0; i < ph; i++)
                        for (int64_t j = 0; j < pw; j++, o++) {
                            int64_t arg;
                            ref[o] = ref_roi_pool(&x, &a, r, c, i, j, &arg);
                            args[o] = (double)arg;
                            refa[o] = ref_roi_align(&x, &a, r, c, i, j);
                        }
            FlTensor o = FL_TENSOR_INIT, am = FL_TENSOR_INIT;
            KT_OK(fl_kernel_roi_pool(KE, &x, &rois, offs, N, &a, &o, &am));
            KT_SHAPE_IS(&o, KT_SHAPE(R, C, ph, pw));
            CU_ASSERT(kt_values(&o, ref, n, 0));
            CU_ASSERT(kt_values(&am, args, n, 0));
            KT_OK(fl_kernel_roi_align(KE, &x, &rois, offs, N, &a, &o));
            CU_ASSERT(kt_values(&o, refa, n, k ? 1e-12 : 1e-5));
            if (a.output_channels) {
                int64_t oc = a.output_channels, np = R * oc * ph * pw;
                for (int64_t r = 0, q = 0; r < R; r++)
                    for (int64_t c = 0; c < oc; c++)
                        for (int64_t i = 0; i < ph; i++)
                            for (int64_t j = 0; j < pw; j++, q++) ref[q] = ref_psroi(&x, &a, r, c, i, j);
                KT_OK(fl_kernel_psroi_pool(KE, &x, &rois, offs, N, &a, &o));
                KT_SHAPE_IS(&o, KT_SHAPE(R, oc, ph, pw));
                CU_ASSERT(kt_values(&o, ref, np, k ? 1e-12 : 1e-5));
            }
            free(ref), free(refa), free(args);
            fl_tensor_fini(&o), fl_tensor_fini(&am);
        }
        fl_tensor_fini(&x), fl_tensor_fini(&rois);
    }
}

/* ---- gradients (float64): X perturbed, the boxes fixed ---- */

typedef struct RoiCtx {
    int kind; /* 0 roi_pool, 1 roi_align, 2 psroi_pool */
    FlRoiAttrs a;
    const FlTensor *rois;
} RoiCtx;

static FlStatus roi_fwd(const void *ctx, FlErr *e, FlTensor *in, FlTensor *out) {
    const RoiCtx *c = ctx;
    switch (c->kind) {
    case 0: return fl_kernel_roi_pool(e, &in[0], c->rois, offs, N, &c->a, out, NULL);
    case 1: return fl_kernel_roi_align(e, &in[0], c->rois, offs, N, &c->a, out);
    default: return fl_kernel_psroi_pool(e, &in[0], c->rois, offs, N, &c->a, out);
    }
}
static FlStatus roi_bwd(const void *ctx, FlErr *e, FlTensor *in, const FlTensor *out, const FlTensor *dout, FlTensor *din) {
    (void)out;
    const RoiCtx *c = ctx;
    if (c->kind == 1) return fl_kernel_roi_align_grad(e, &in[0], c->rois, offs, N, dout, &c->a, &din[0]);
    if (c->kind == 2) return fl_kernel_psroi_pool_grad(e, &in[0], c->rois, offs, N, dout, &c->a, &din[0]);
    FlTensor o = FL_TENSOR_INIT, am = FL_TENSOR_INIT;
    FlStatus s = fl_kernel_roi_pool(e, &in[0], c->rois, offs, N, &c->a, &o, &am);
    if (!s) s = fl_kernel_roi_pool_grad(e, &in[0], c->rois, offs, N, &am, dout, &c->a, &din[0]);
    fl_tensor_fini(&o), fl_tensor_fini(&am);
    return s;
}

static void test_roi_grads(void) {
    FlRng rng;
    fl_rng_init(&rng, 32);
    FlTensor rois = make_rois(FL_DT_FLOAT64);
    const RoiCtx cases[] = {{0, {2, 3, 1.0, -1, 0}, &rois}, {1, {2, 3, 1.0, -1, 0}, &rois},
                            {1, {3, 2, 0.5, 2, 0}, &rois}, {2, {2, 2, 1.0, -1, 2}, &rois}};
    for (size_t t = 0; t < FL_ARRAY_LEN(cases); t++) {
        FlTensor x = kt_distinct(&rng, FL_DT_FLOAT64, 4, (int64_t[]){N, C, H, W});
        CU_ASSERT(kt_grad_check("roi", &cases[t], 1, &x, (bool[]){true}, roi_fwd, roi_bwd, 1e-6));
        fl_tensor_fini(&x);
    }
    fl_tensor_fini(&rois);
}

static void test_roi_bad_inputs(void) {
    FlErr e;
    FlTensor x = kt_rand(&(FlRng){0}, FL_DT_FLOAT64, 4, (int64_t[]){N, C, H, W}, 0, 1), rois = make_rois(FL_DT_FLOAT64);
    FlTensor o = FL_TENSOR_INIT;
    FlRoiAttrs a = {2, 2, 1.0, -1, 3};
    CU_ASSERT_EQUAL(fl_kernel_roi_pool(&e, &x, &rois, offs, 1, &a, &o, NULL), FL_ERROR); /* one image for two */
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "one sequence per image"));
    CU_ASSERT_EQUAL(fl_kernel_roi_align(&e, &x, &rois, NULL, 0, &a, &o), FL_ERROR);
    CU_ASSERT_EQUAL(fl_kernel_psroi_pool(&e, &x, &rois, offs, N, &a, &o), FL_ERROR); /* 8 != 3 * 2 * 2 */
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "output_channels"));
    FlTensor r32 = make_rois(FL_DT_FLOAT32);
    CU_ASSERT_EQUAL(fl_kernel_roi_pool(&e, &x, &r32, offs, N, &a, &o, NULL), FL_ERROR);
    a.sampling_ratio = 0;
    CU_ASSERT_EQUAL(fl_kernel_roi_align(&e, &x, &rois, offs, N, &a, &o), FL_ERROR);
    FlTensor all[] = {x, rois, o, r32};
    kt_fini(4, all);
}

int main(void) {
    KtCase cases[] = {KT_TEST(test_roi_values), KT_TEST(test_roi_grads), KT_TEST(test_roi_bad_inputs)};
    return kt_run("roi", cases, (int)FL_ARRAY_LEN(cases));
}
