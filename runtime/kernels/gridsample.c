/* gridsample.c: affine_grid and grid_sampler, the spatial transformer's pair, and their
 * gradients (kernels_gridsample.h). */
#include "runtime/kernels/kernels_gridsample.h"

#include <math.h>

#include "runtime/kernels/kernels_impl.h"

/* ---- affine_grid ---- */

/* point k of n spread evenly over [-1, 1] */
static double spread(int64_t k, int64_t n) { return n > 1 ? -1 + 2.0 * (double)k / (double)(n - 1) : -1; }

static FlStatus check_theta(FlErr *e, const char *op, const FlTensor *theta) {
    if (kneed_float(e, op, "Theta", theta)) return FL_ERROR;
    if (theta->ndim != 3 || theta->ne[1] != 2 || theta->ne[2] != 3)
        return fl_err(e, "%s: Theta %s must be [N, 2, 3]", op, fl_tensor_shape(theta).s);
    return FL_OK;
}

FlStatus fl_kernel_affine_grid(FlErr *e, const FlTensor *theta, int64_t H, int64_t W, FlTensor *out) {
    const char *op = "affine_grid";
    if (kwant(e, op, "Output", out) || check_theta(e, op, theta)) return FL_ERROR;
    if (H < 1 || W < 1) return fl_err(e, "%s: the grid's H (%lld) and W (%lld) must be >= 1", op, (long long)H, (long long)W);
    int64_t N = theta->ne[0];
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc(e, op, &o, theta->dtype, 4, (int64_t[]){N, H, W, 2})) return FL_ERROR;
    for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < H; i++)
            for (int64_t j = 0; j < W; j++) {
                double p[3] = {spread(j, W), spread(i, H), 1};
                for (int r = 0; r < 2; r++) {
                    double s = 0;
                    for (int k = 0; k < 3; k++) s += fl_tensor_get(theta, n * 6 + r * 3 + k) * p[k];
                    fl_tensor_set(&o, ((n * H + i) * W + j) * 2 + r, s);
                }
            }
    kout(out, &o);
    return FL_OK;
}

FlStatus fl_kernel_affine_grid_grad(FlErr *e, const FlTensor *theta, const FlTensor *dout, FlTensor *dtheta) {
    const char *op = "affine_grid_grad";
    if (!dtheta) return FL_OK;
    if (check_theta(e, op, theta) || kneed_float(e, op, "Output@GRAD", dout) ||
        ksame_dtype(e, op, "Theta", theta, "Output@GRAD", dout))
        return FL_ERROR;
    int64_t N = theta->ne[0];
    if (dout->ndim != 4 || dout->ne[0] != N || dout->ne[3] != 2)
        return fl_err(e, "%s: Output@GRAD %s must be [%lld, H, W, 2]", op, fl_tensor_shape(dout).s, (long long)N);
    int64_t H = dout->ne[1], W = dout->ne[2];
    FlTensor g = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &g, theta)) return FL_ERROR;
    for (int64_t n = 0; n < N; n++) {
        double acc[6] = {0};
        for (int64_t i = 0; i < H; i++)
            for (int64_t j = 0; j < W; j++) {
                double p[3] = {spread(j, W), spread(i, H), 1};
                for (int r = 0; r < 2; r++) {
                    double d = fl_tensor_get(dout, ((n * H + i) * W + j) * 2 + r);
                    for (int k = 0; k < 3; k++) acc[r * 3 + k] += d * p[k];
                }
            }
        for (int k = 0; k < 6; k++) fl_tensor_set(&g, n * 6 + k, acc[k]);
    }
    kout(dtheta, &g);
    return FL_OK;
}

/* ---- grid_sampler ---- */

static FlStatus check_sampler(FlErr *e, const char *op, const FlTensor *x, const FlTensor *grid) {
    if (kneed_float(e, op, "X", x) || kneed_float(e, op, "Grid", grid) || ksame_dtype(e, op, "X", x, "Grid", grid))
        return FL_ERROR;
    if (x->ndim != 4 || grid->ndim != 4 || grid->ne[3] != 2 || grid->ne[0] != x->ne[0])
        return fl_err(e, "%s: X %s must be [N, C, H, W] and Grid %s [N, H', W', 2]", op, fl_tensor_shape(x).s,
                      fl_tensor_shape(grid).s);
    return FL_OK;
}

/* one sampling point: the four neighbours (west/east columns, north/south rows), their weights
 * and whether each lies in the image */
typedef struct Tap {
    int64_t xw, yn;
    double dw, de, dn, ds; /* x - xw, xw + 1 - x, y - yn, yn + 1 - y */
    double sx, sy;         /* d x' / d gx, d y' / d gy */
} Tap;

static Tap tap(const FlTensor *grid, int64_t gi, int64_t H, int64_t W) {
    Tap t;
    t.sx = (double)(W - 1) / 2;
    t.sy = (double)(H - 1) / 2;
    double x = (fl_tensor_get(grid, gi) + 1) * t.sx, y = (fl_tensor_get(grid, gi + 1) + 1) * t.sy;
    double fx = floor(x), fy = floor(y);
    /* far outside: every neighbour is out, and the corners stay in int64's range */
    if (!(fx > -2 && fx < (double)W + 1)) fx = -2;
    if (!(fy > -2 && fy < (double)H + 1)) fy = -2;
    t.xw = (int64_t)fx;
    t.yn = (int64_t)fy;
    t.dw = x - fx;
    t.de = fx + 1 - x;
    t.dn = y - fy;
    t.ds = fy + 1 - y;
    return t;
}

/* x[n, c] at (row y, column x), 0 outside (ok = in the image) */
static double at(const FlTensor *x, int64_t base, int64_t H, int64_t W, int64_t yy, int64_t xx) {
    return yy >= 0 && yy < H && xx >= 0 && xx < W ? fl_tensor_get(x, base + yy * W + xx) : 0;
}

FlStatus fl_kernel_grid_sampler(FlErr *e, const FlTensor *x, const FlTensor *grid, FlTensor *out) {
    const char *op = "grid_sampler";
    if (kwant(e, op, "Output", out) || check_sampler(e, op, x, grid)) return FL_ERROR;
    int64_t N = x->ne[0], C = x->ne[1], H = x->ne[2], W = x->ne[3], Ho = grid->ne[1], Wo = grid->ne[2];
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc(e, op, &o, x->dtype, 4, (int64_t[]){N, C, Ho, Wo})) return FL_ERROR;
    for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < Ho; i++)
            for (int64_t j = 0; j < Wo; j++) {
                Tap t = tap(grid, ((n * Ho + i) * Wo + j) * 2, H, W);
                for (int64_t c = 0; c < C; c++) {
                    int64_t b = (n * C + c) * H * W;
                    double v = at(x, b, H, W, t.yn, t.xw) * t.de * t.ds + at(x, b, H, W, t.yn, t.xw + 1) * t.dw * t.ds +
                               at(x, b, H, W, t.yn + 1, t.xw) * t.de * t.dn +
                               at(x, b, H, W, t.yn + 1, t.xw + 1) * t.dw * t.dn;
                    fl_tensor_set(&o, ((n * C + c) * Ho + i) * Wo + j, v);
                }
            }
    kout(out, &o);
    return FL_OK;
}

/* dx[n, c] at (row y, column x) += v when inside the image */
static void add_at(double *dx, int64_t base, int64_t H, int64_t W, int64_t yy, int64_t xx, double v) {
    if (yy >= 0 && yy < H && xx >= 0 && xx < W) dx[base + yy * W + xx] += v;
}

FlStatus fl_kernel_grid_sampler_grad(FlErr *e, const FlTensor *x, const FlTensor *grid, const FlTensor *dout,
                                     FlTensor *dx, FlTensor *dgrid) {
    const char *op = "grid_sampler_grad";
    if (!dx && !dgrid) return FL_OK;
    if (check_sampler(e, op, x, grid) || kneed_float(e, op, "Output@GRAD", dout) ||
        ksame_dtype(e, op, "X", x, "Output@GRAD", dout))
        return FL_ERROR;
    int64_t N = x->ne[0], C = x->ne[1], H = x->ne[2], W = x->ne[3], Ho = grid->ne[1], Wo = grid->ne[2];
    if (dout->ndim != 4 || dout->ne[0] != N || dout->ne[1] != C || dout->ne[2] != Ho || dout->ne[3] != Wo)
        return fl_err(e, "%s: Output@GRAD %s must be [%lld, %lld, %lld, %lld]", op, fl_tensor_shape(dout).s,
                      (long long)N, (long long)C, (long long)Ho, (long long)Wo);
    int64_t nx = fl_tensor_numel(x), ng = fl_tensor_numel(grid);
    double *gx = fl_xcalloc((size_t)nx + 1, sizeof(double)), *gg = fl_xcalloc((size_t)ng + 1, sizeof(double));
    for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < Ho; i++)
            for (int64_t j = 0; j < Wo; j++) {
                int64_t gi = ((n * Ho + i) * Wo + j) * 2;
                Tap t = tap(grid, gi, H, W);
                for (int64_t c = 0; c < C; c++) {
                    int64_t b = (n * C + c) * H * W;
                    double d = fl_tensor_get(dout, ((n * C + c) * Ho + i) * Wo + j);
                    double vwn = at(x, b, H, W, t.yn, t.xw), ven = at(x, b, H, W, t.yn, t.xw + 1);
                    double vws = at(x, b, H, W, t.yn + 1, t.xw), ves = at(x, b, H, W, t.yn + 1, t.xw + 1);
                    add_at(gx, b, H, W, t.yn, t.xw, d * t.de * t.ds);
                    add_at(gx, b, H, W, t.yn, t.xw + 1, d * t.dw * t.ds);
                    add_at(gx, b, H, W, t.yn + 1, t.xw, d * t.de * t.dn);
                    add_at(gx, b, H, W, t.yn + 1, t.xw + 1, d * t.dw * t.dn);
                    gg[gi] += d * ((ven - vwn) * t.ds + (ves - vws) * t.dn) * t.sx;
                    gg[gi + 1] += d * ((vws - vwn) * t.de + (ves - ven) * t.dw) * t.sy;
                }
            }
    FlTensor a = FL_TENSOR_INIT, b = FL_TENSOR_INIT;
    FlStatus st = FL_OK;
    if (dx && (st = kalloc_like(e, op, &a, x)) == FL_OK) {
        for (int64_t k = 0; k < nx; k++) fl_tensor_set(&a, k, gx[k]);
        kout(dx, &a);
    }
    if (st == FL_OK && dgrid && (st = kalloc_like(e, op, &b, grid)) == FL_OK) {
        for (int64_t k = 0; k < ng; k++) fl_tensor_set(&b, k, gg[k]);
        kout(dgrid, &b);
    }
    free(gx);
    free(gg);
    return st;
}
