/* seqnlp.c: the further sequence kernels of the NLP layers, sequence_reverse, row_conv,
 * add_position_encoding, sampling_id and im2sequence (kernels_seqnlp.h). */
#include "runtime/kernels/kernels_seqnlp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"
#include "runtime/rng.h"

FlStatus fl_kernel_sequence_reverse(FlErr *e, const char *op, const FlTensor *x, const int64_t *off, int64_t nseq,
                                    FlTensor *y) {
    if (khas(e, op, "X", x) || kwant(e, op, "Y", y)) return FL_ERROR;
    if (x->ndim < 2 || off[nseq] != x->ne[0])
        return fl_err(e, "%s: X %s must be [T, ...] with the %lld rows its offsets cut", op, fl_tensor_shape(x).s,
                      (long long)off[nseq]);
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, op, &o, x)) return FL_ERROR;
    size_t row = (size_t)kprod(x->ne, 1, x->ndim) * fl_dtype_size(x->dtype);
    const char *src = fl_tensor_data(x);
    char *dst = fl_tensor_data(&o);
    for (int64_t s = 0; s < nseq; s++)
        for (int64_t i = off[s], j = off[s + 1] - 1; i < off[s + 1]; i++, j--)
            if (row) memcpy(dst + (size_t)j * row, src + (size_t)i * row, row);
    kout(y, &o);
    return FL_OK;
}

/* ---- row_conv ---- */

static FlStatus row_conv_check(FlErr *e, const char *op, const FlTensor *x, const int64_t *off, int64_t nseq,
                               const FlTensor *filter) {
    if (kneed_float(e, op, "X", x) || kneed_float(e, op, "Filter", filter) ||
        ksame_dtype(e, op, "X", x, "Filter", filter))
        return FL_ERROR;
    if (x->ndim != 2 || off[nseq] != x->ne[0])
        return fl_err(e, "%s: X %s must be [T, D] with the %lld rows its offsets cut", op, fl_tensor_shape(x).s,
                      (long long)off[nseq]);
    if (filter->ndim != 2 || filter->ne[1] != x->ne[1] || filter->ne[0] < 1)
        return fl_err(e, "%s: Filter %s must be [k, D] (k >= 1) for X %s", op, fl_tensor_shape(filter).s,
                      fl_tensor_shape(x).s);
    return FL_OK;
}

static void put(FlTensor *t, int64_t i, double v) {
    if (t->dtype == FL_DT_FLOAT32) ((float *)fl_tensor_data(t))[i] = (float)v;
    else ((double *)fl_tensor_data(t))[i] = v;
}

FlStatus fl_kernel_row_conv(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq, const FlTensor *filter,
                            FlTensor *out) {
    const char *op = "row_conv";
    if (kwant(e, op, "Out", out) || row_conv_check(e, op, x, off, nseq, filter)) return FL_ERROR;
    int64_t D = x->ne[1], k = filter->ne[0];
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &o, x)) return FL_ERROR;
    for (int64_t s = 0; s < nseq; s++)
        for (int64_t t = off[s]; t < off[s + 1]; t++)
            for (int64_t d = 0; d < D; d++) {
                double v = 0;
                for (int64_t w = 0; w < k && t + w < off[s + 1]; w++)
                    v += fl_tensor_get(x, (t + w) * D + d) * fl_tensor_get(filter, w * D + d);
                put(&o, t * D + d, v);
            }
    kout(out, &o);
    return FL_OK;
}

FlStatus fl_kernel_row_conv_grad(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                 const FlTensor *filter, const FlTensor *dout, FlTensor *dx, FlTensor *dfilter) {
    const char *op = "row_conv_grad";
    if (!dx && !dfilter) return FL_OK;
    if (row_conv_check(e, op, x, off, nseq, filter) || ksame(e, op, "X", x, "Out@GRAD", dout)) return FL_ERROR;
    int64_t D = x->ne[1], k = filter->ne[0];
    double *gx = fl_xcalloc((size_t)(x->ne[0] * D + 1), sizeof(double));
    double *gf = fl_xcalloc((size_t)(k * D), sizeof(double));
    for (int64_t s = 0; s < nseq; s++)
        for (int64_t t = off[s]; t < off[s + 1]; t++)
            for (int64_t d = 0; d < D; d++) {
                double g = fl_tensor_get(dout, t * D + d);
                for (int64_t w = 0; w < k && t + w < off[s + 1]; w++) {
                    gx[(t + w) * D + d] += g * fl_tensor_get(filter, w * D + d);
                    gf[w * D + d] += g * fl_tensor_get(x, (t + w) * D + d);
                }
            }
    FlTensor a = FL_TENSOR_INIT, b = FL_TENSOR_INIT;
    FlStatus st = FL_ERROR;
    if (kalloc_like(e, op, &a, x) || kalloc_like(e, op, &b, filter)) goto done;
    for (int64_t i = 0; i < x->ne[0] * D; i++) put(&a, i, gx[i]);
    for (int64_t i = 0; i < k * D; i++) put(&b, i, gf[i]);
    kout(dx, &a);
    kout(dfilter, &b);
    st = FL_OK;
done:
    fl_tensor_fini(&a);
    fl_tensor_fini(&b);
    free(gx);
    free(gf);
    return st;
}

/* ---- add_position_encoding ---- */

FlStatus fl_kernel_add_position_encoding(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq, double alpha,
                                         double beta, FlTensor *out) {
    const char *op = "add_position_encoding";
    if (kwant(e, op, "Out", out) || kneed_float(e, op, "X", x)) return FL_ERROR;
    if (x->ndim != (off ? 2 : 3) || (off && off[nseq] != x->ne[0]))
        return fl_err(e, "%s: X %s must be %s", op, fl_tensor_shape(x).s,
                      off ? "[T, P] with the rows its offsets cut" : "[B, M, P]");
    int64_t P = x->ne[x->ndim - 1], half = P / 2;
    if (P % 2) return fl_err(e, "%s: the encoding size of X %s must be even", op, fl_tensor_shape(x).s);
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &o, x)) return FL_ERROR;
    int64_t B = off ? nseq : x->ne[0];
    for (int64_t b = 0; b < B; b++) {
        int64_t r0 = off ? off[b] : b * x->ne[1], len = off ? off[b + 1] - off[b] : x->ne[1];
        for (int64_t j = 0; j < len; j++) {
            int64_t base = (r0 + j) * P;
            for (int64_t k = 0; k < half; k++) {
                double v = half > 1 ? (double)j / pow(10000.0, (double)k / (double)(half - 1)) : (double)j / 10000.0;
                put(&o, base + k, alpha * fl_tensor_get(x, base + k) + beta * sin(v));
                put(&o, base + half + k, alpha * fl_tensor_get(x, base + half + k) + beta * cos(v));
            }
        }
    }
    kout(out, &o);
    return FL_OK;
}

/* ---- sampling_id ---- */

FlStatus fl_kernel_sampling_id(FlErr *e, const FlTensor *x, double min, double max, uint64_t seed, uint64_t step,
                               FlTensor *out) {
    const char *op = "sampling_id";
    if (kwant(e, op, "Out", out) || kneed_float(e, op, "X", x)) return FL_ERROR;
    if (x->ndim != 2 || x->ne[1] < 1)
        return fl_err(e, "%s: X %s must be [N, C] (a distribution over C ids per row)", op, fl_tensor_shape(x).s);
    if (!(min <= max)) return fl_err(e, "%s: min (%g) is greater than max (%g)", op, min, max);
    int64_t N = x->ne[0], C = x->ne[1];
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc(e, op, &o, FL_DT_INT64, 1, (int64_t[]){N})) return FL_ERROR;
    int64_t *ids = fl_tensor_data(&o);
    FlRng rng;
    fl_rng_init2(&rng, seed, step);
    for (int64_t i = 0; i < N; i++) {
        double r = min + (max - min) * fl_rng_uniform(&rng);
        int64_t id = C - 1;
        for (int64_t j = 0; j < C; j++)
            if ((r -= fl_tensor_get(x, i * C + j)) < 0) {
                id = j;
                break;
            }
        ids[i] = id;
    }
    kout(out, &o);
    return FL_OK;
}

/* ---- im2sequence ---- */

/* The patch grid of image i: oh x ow positions (the real size's when real is given). */
static FlStatus im2seq_grid(FlErr *e, const char *op, const FlTensor *x, const FlTensor *real, const FlIm2SeqAttrs *a,
                            int64_t i, int64_t *oh, int64_t *ow) {
    int64_t size[2] = {x->ne[2], x->ne[3]};
    for (int d = 0; d < 2; d++) {
        int64_t n = size[d];
        if (real) {
            double r = fl_tensor_get(real, i * 2 + d);
            if (!(r >= 1 && r <= (double)size[d]))
                return fl_err(e, "%s: Y row %lld gives a real %s of %g, outside the image's [1, %lld]", op,
                              (long long)i, d ? "width" : "height", r, (long long)size[d]);
            int64_t v = (int64_t)r;
            n = v / a->os[d] + (v % a->os[d] != 0);
        }
        int64_t g = (n + a->p[d] + a->p[d + 2] - a->k[d]) / a->s[d] + 1;
        if (n + a->p[d] + a->p[d + 2] < a->k[d])
            return fl_err(e, "%s: image %lld's %s %lld (padded %lld) is smaller than the kernel's %lld", op,
                          (long long)i, d ? "width" : "height", (long long)n, (long long)(n + a->p[d] + a->p[d + 2]),
                          (long long)a->k[d]);
        *(d ? ow : oh) = g;
    }
    return FL_OK;
}

static FlStatus im2seq_check(FlErr *e, const char *op, const FlTensor *x, const FlTensor *real) {
    if (kneed_float(e, op, "X", x)) return FL_ERROR;
    if (x->ndim != 4) return fl_err(e, "%s: X %s must be [N, C, H, W]", op, fl_tensor_shape(x).s);
    if (real && (kneed_float(e, op, "Y", real) || real->ndim != 2 || real->ne[0] != x->ne[0] || real->ne[1] != 2))
        return fl_err(e, "%s: Y %s must be float [N, 2] for X %s", op, fl_tensor_shape(real).s, fl_tensor_shape(x).s);
    return FL_OK;
}

/* The pixel of image i, channel ch, under row j, column q of the patch at (r, col), or -1 in the
 * padding. */
static int64_t im2seq_pixel(const FlTensor *x, const FlIm2SeqAttrs *a, int64_t i, int64_t ch, int64_t r, int64_t col,
                            int64_t j, int64_t q) {
    int64_t h = r * a->s[0] - a->p[0] + j, w = col * a->s[1] - a->p[1] + q;
    if (h < 0 || h >= x->ne[2] || w < 0 || w >= x->ne[3]) return -1;
    return ((i * x->ne[1] + ch) * x->ne[2] + h) * x->ne[3] + w;
}

/* The map of Out's elements to x's: *map[k] the pixel of element k (-1: padding), *rows Out's
 * rows, off (N + 1, may be NULL) each image's first row; both allocated here. */
static FlStatus im2seq_map(FlErr *e, const char *op, const FlTensor *x, const FlTensor *real, const FlIm2SeqAttrs *a,
                           int64_t **map, int64_t *rows, int64_t **off) {
    int64_t N = x->ne[0], C = x->ne[1], width = C * a->k[0] * a->k[1], n = 0;
    int64_t *o = fl_xcalloc((size_t)N + 1, sizeof(int64_t)), *grid = fl_xcalloc((size_t)N * 2 + 1, sizeof(int64_t));
    for (int64_t i = 0; i < N; i++) {
        if (im2seq_grid(e, op, x, real, a, i, &grid[2 * i], &grid[2 * i + 1])) {
            free(o);
            free(grid);
            return FL_ERROR;
        }
        o[i + 1] = n += grid[2 * i] * grid[2 * i + 1];
    }
    int64_t *m = fl_xcalloc((size_t)(n * width) + 1, sizeof(int64_t)), k = 0;
    for (int64_t i = 0; i < N; i++)
        for (int64_t r = 0; r < grid[2 * i]; r++)
            for (int64_t col = 0; col < grid[2 * i + 1]; col++)
                for (int64_t ch = 0; ch < C; ch++)
                    for (int64_t j = 0; j < a->k[0]; j++)
                        for (int64_t q = 0; q < a->k[1]; q++) m[k++] = im2seq_pixel(x, a, i, ch, r, col, j, q);
    free(grid);
    *map = m;
    *rows = n;
    if (off) *off = o;
    else free(o);
    return FL_OK;
}

FlStatus fl_kernel_im2sequence(FlErr *e, const FlTensor *x, const FlTensor *real, const FlIm2SeqAttrs *a,
                               FlTensor *out, FlTensor *out_lod) {
    const char *op = "im2sequence";
    if (kwant(e, op, "Out", out) || im2seq_check(e, op, x, real)) return FL_ERROR;
    int64_t N = x->ne[0], width = x->ne[1] * a->k[0] * a->k[1], rows, *map, *off;
    if (im2seq_map(e, op, x, real, a, &map, &rows, &off)) return FL_ERROR;
    FlTensor o = FL_TENSOR_INIT, l = FL_TENSOR_INIT;
    FlStatus st = FL_ERROR;
    if (kalloc(e, op, &o, x->dtype, 2, (int64_t[]){rows, width}) ||
        (out_lod && kalloc(e, op, &l, FL_DT_INT64, 1, (int64_t[]){N + 1}))) {
        fl_tensor_fini(&o);
        goto done;
    }
    for (int64_t k = 0; k < rows * width; k++) put(&o, k, map[k] < 0 ? 0.0 : fl_tensor_get(x, map[k]));
    if (out_lod) {
        memcpy(fl_tensor_data(&l), off, (size_t)(N + 1) * sizeof(int64_t));
        kout(out_lod, &l);
    }
    kout(out, &o);
    st = FL_OK;
done:
    free(map);
    free(off);
    return st;
}

FlStatus fl_kernel_im2sequence_grad(FlErr *e, const FlTensor *x, const FlTensor *real, const FlIm2SeqAttrs *a,
                                    const FlTensor *dout, FlTensor *dx) {
    const char *op = "im2sequence_grad";
    if (!dx) return FL_OK;
    if (im2seq_check(e, op, x, real) || kneed_float(e, op, "Out@GRAD", dout)) return FL_ERROR;
    int64_t width = x->ne[1] * a->k[0] * a->k[1], rows, *map;
    if (im2seq_map(e, op, x, real, a, &map, &rows, NULL)) return FL_ERROR;
    FlTensor d = FL_TENSOR_INIT;
    if (dout->ndim != 2 || dout->ne[0] != rows || dout->ne[1] != width) {
        free(map);
        return fl_err(e, "%s: Out@GRAD %s must be [%lld, %lld], Out's shape", op, fl_tensor_shape(dout).s,
                      (long long)rows, (long long)width);
    }
    double *g = fl_xcalloc((size_t)fl_tensor_numel(x) + 1, sizeof(double));
    for (int64_t k = 0; k < rows * width; k++)
        if (map[k] >= 0) g[map[k]] += fl_tensor_get(dout, k);
    free(map);
    if (kalloc_like(e, op, &d, x)) {
        free(g);
        return FL_ERROR;
    }
    for (int64_t i = 0; i < fl_tensor_numel(x); i++) put(&d, i, g[i]);
    free(g);
    kout(dx, &d);
    return FL_OK;
}
