/* conv3.c: conv3d and conv3d_transpose (NCDHW), and pooling over 2 or 3 spatial dims with
 * adaptive windows and argmax masks (kernels_conv3.h). The typed loops are in conv3_t.inc; the
 * float32 fast paths are oneDNN's (dnnl.c), with the loops as the reference and the fallback.
 * conv3d_transpose is conv3d's input gradient, as conv2d_transpose is conv2d's (nn2.c). */
#include "runtime/kernels/kernels_impl.h"

#include "runtime/kernels/kernels_conv3.h"

/* A pooling's geometry over three dims, the depth dim 1 for a 2-D pooling. */
typedef struct PoolGeom {
    int64_t NC, in[3], out[3], k[3], s[3], p[3];
    FlPoolType type;
    bool exclusive, adaptive;
} PoolGeom;

/* The cells [*lo, *hi) of dim i that output cell o pools (clipped to the image). */
static void pool_span(const PoolGeom *g, int i, int64_t o, int64_t *lo, int64_t *hi) {
    if (g->adaptive) {
        *lo = o * g->in[i] / g->out[i];
        *hi = ((o + 1) * g->in[i] + g->out[i] - 1) / g->out[i];
        return;
    }
    int64_t a = o * g->s[i] - g->p[i], b = a + g->k[i];
    *lo = a < 0 ? 0 : a;
    *hi = b > g->in[i] ? g->in[i] : b;
}

/* The divisor of an average: the window's cells inside the image (exclusive, adaptive; at least
 * 1), else the window's size. */
static double pool_cells(const PoolGeom *g, const int64_t *lo, const int64_t *hi) {
    if (!g->exclusive && !g->adaptive) return (double)(g->k[0] * g->k[1] * g->k[2]);
    int64_t n = 1;
    for (int i = 0; i < 3; i++) n *= hi[i] > lo[i] ? hi[i] - lo[i] : 0;
    return n > 0 ? (double)n : 1;
}

#define FL_TMPL "conv3_t.inc"
#include "runtime/kernels/tmpl.h"

/* ---- conv3d ---- */

static FlStatus conv3_dims(FlErr *e, const char *op, const FlTensor *in, const FlTensor *f, const FlConv3dAttrs *a,
                           ConvNd *d) {
    if (kneed_float(e, op, "Input", in) || ksame_dtype(e, op, "Input", in, "Filter", f)) return FL_ERROR;
    if (in->ndim != 5 || f->ndim != 5)
        return fl_err(e, "%s: Input %s must be [N, C, D, H, W] and Filter %s [M, C/groups, kd, kh, kw]", op,
                      fl_tensor_shape(in).s, fl_tensor_shape(f).s);
    bool bad = a->groups < 1;
    for (int i = 0; i < 3; i++) bad = bad || a->strides[i] < 1 || a->dilations[i] < 1 || a->paddings[i] < 0;
    if (bad)
        return fl_err(e, "%s: bad attributes: strides (%d, %d, %d), paddings (%d, %d, %d), dilations (%d, %d, %d), "
                         "groups %d", op, a->strides[0], a->strides[1], a->strides[2], a->paddings[0], a->paddings[1],
                      a->paddings[2], a->dilations[0], a->dilations[1], a->dilations[2], a->groups);
    *d = (ConvNd){.nsp = 3, .N = in->ne[0], .C = in->ne[1], .M = f->ne[0], .groups = a->groups};
    if (d->C % d->groups || d->M % d->groups || f->ne[1] * d->groups != d->C)
        return fl_err(e, "%s: Input %s and Filter %s with groups %d: Filter's dim 1 (%lld) times groups must equal "
                         "Input's channels (%lld), and both channel counts must divide by groups", op,
                      fl_tensor_shape(in).s, fl_tensor_shape(f).s, a->groups, (long long)f->ne[1], (long long)d->C);
    d->Cg = d->C / d->groups;
    d->Mg = d->M / d->groups;
    for (int i = 0; i < 3; i++) {
        d->in[i] = in->ne[2 + i], d->k[i] = f->ne[2 + i];
        d->s[i] = a->strides[i], d->p[i] = a->paddings[i], d->d[i] = a->dilations[i];
        int64_t span = d->d[i] * (d->k[i] - 1) + 1, padded = d->in[i] + 2 * d->p[i];
        if (padded < span)
            return fl_err(e, "%s: Input %s and Filter %s: the output would be empty (the padded image is smaller "
                             "than the dilated filter)", op, fl_tensor_shape(in).s, fl_tensor_shape(f).s);
        d->out[i] = (padded - span) / d->s[i] + 1;
    }
    return FL_OK;
}

static FlStatus conv3(FlErr *e, const FlTensor *in, const FlTensor *f, const FlConv3dAttrs *a, FlTensor *output,
                      bool fast) {
    ConvNd d;
    if (conv3_dims(e, "conv3d", in, f, a, &d)) return FL_ERROR;
    int64_t ne[5] = {d.N, d.M, d.out[0], d.out[1], d.out[2]};
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, "conv3d", &r, in->dtype, 5, ne)) return FL_ERROR;
    if (in->dtype == FL_DT_FLOAT32) {
        if (!fast || !kdnnl_conv_nd(&d, fl_tensor_data(in), fl_tensor_data(f), fl_tensor_data(&r)))
            conv3_ref_f32(fl_tensor_data(in), fl_tensor_data(f), fl_tensor_data(&r), &d);
    } else {
        conv3_ref_f64(fl_tensor_data(in), fl_tensor_data(f), fl_tensor_data(&r), &d);
    }
    kout(output, &r);
    return FL_OK;
}

static FlStatus conv3_grad(FlErr *e, const FlTensor *in, const FlTensor *f, const FlTensor *dout,
                           const FlConv3dAttrs *a, FlTensor *din, FlTensor *dfilter, bool fast) {
    const char *op = "conv3d_grad";
    ConvNd d;
    if (conv3_dims(e, op, in, f, a, &d) || ksame_dtype(e, op, "Input", in, "Output@GRAD", dout)) return FL_ERROR;
    int64_t ne[5] = {d.N, d.M, d.out[0], d.out[1], d.out[2]};
    if (dout->ndim != 5 || memcmp(dout->ne, ne, sizeof ne) != 0)
        return fl_err(e, "%s: Output@GRAD %s differs from the output shape %s", op, fl_tensor_shape(dout).s,
                      fl_shape_str(5, ne).s);
    FlTensor ri = FL_TENSOR_INIT, rf = FL_TENSOR_INIT; /* zeros: the loops accumulate */
    if (din && kalloc_like(e, op, &ri, in)) return FL_ERROR;
    if (dfilter && kalloc_like(e, op, &rf, f)) {
        fl_tensor_fini(&ri);
        return FL_ERROR;
    }
    void *pi = din ? fl_tensor_data(&ri) : NULL, *pf = dfilter ? fl_tensor_data(&rf) : NULL;
    if (in->dtype == FL_DT_FLOAT32) {
        if (!fast || !kdnnl_conv_nd_grad(&d, fl_tensor_data(in), fl_tensor_data(f), fl_tensor_data(dout), pi, pf)) {
            /* oneDNN may have written part of them before it gave up */
            if (pi) memset(pi, 0, fl_tensor_nbytes(&ri));
            if (pf) memset(pf, 0, fl_tensor_nbytes(&rf));
            conv3_grad_ref_f32(fl_tensor_data(in), fl_tensor_data(f), fl_tensor_data(dout), pi, pf, &d);
        }
    } else {
        conv3_grad_ref_f64(fl_tensor_data(in), fl_tensor_data(f), fl_tensor_data(dout), pi, pf, &d);
    }
    if (din) kout(din, &ri);
    if (dfilter) kout(dfilter, &rf);
    return FL_OK;
}

FlStatus fl_kernel_conv3d(FlErr *e, const FlTensor *input, const FlTensor *filter, const FlConv3dAttrs *a,
                          FlTensor *output) {
    return conv3(e, input, filter, a, output, true);
}
FlStatus fl_kernel_conv3d_ref(FlErr *e, const FlTensor *input, const FlTensor *filter, const FlConv3dAttrs *a,
                              FlTensor *output) {
    return conv3(e, input, filter, a, output, false);
}
FlStatus fl_kernel_conv3d_grad(FlErr *e, const FlTensor *input, const FlTensor *filter, const FlTensor *doutput,
                               const FlConv3dAttrs *a, FlTensor *dinput, FlTensor *dfilter) {
    return conv3_grad(e, input, filter, doutput, a, dinput, dfilter, true);
}
FlStatus fl_kernel_conv3d_grad_ref(FlErr *e, const FlTensor *input, const FlTensor *filter,
                                   const FlTensor *doutput, const FlConv3dAttrs *a, FlTensor *dinput,
                                   FlTensor *dfilter) {
    return conv3_grad(e, input, filter, doutput, a, dinput, dfilter, false);
}

/* ---- conv3d_transpose ---- */

/* Output [N, M, Do, Ho, Wo] of a transposed 3-D convolution (output_size: NULL or the sizes, each
 * in [inferred, inferred + stride)). */
static FlStatus convt3_out(FlErr *e, const char *op, const FlTensor *in, const FlTensor *f, const FlConv3dAttrs *a,
                           const int64_t *output_size, int64_t ne[5]) {
    if (kneed_float(e, op, "Input", in) || ksame_dtype(e, op, "Input", in, "Filter", f)) return FL_ERROR;
    if (in->ndim != 5 || f->ndim != 5 || a->groups < 1 || f->ne[0] != in->ne[1])
        return fl_err(e, "%s: Input %s must be [N, C, D, H, W] and Filter %s [C, M/groups, kd, kh, kw] (groups %d)",
                      op, fl_tensor_shape(in).s, fl_tensor_shape(f).s, a->groups);
    ne[0] = in->ne[0];
    ne[1] = f->ne[1] * a->groups;
    for (int i = 0; i < 3; i++) {
        int64_t o = 0;
        if (a->strides[i] >= 1 && a->dilations[i] >= 1 && a->paddings[i] >= 0)
            o = (in->ne[2 + i] - 1) * a->strides[i] - 2 * (int64_t)a->paddings[i] +
                (int64_t)a->dilations[i] * (f->ne[2 + i] - 1) + 1;
        if (o < 1)
            return fl_err(e, "%s: Input %s, Filter %s: bad attributes or an empty output (strides (%d, %d, %d), "
                             "paddings (%d, %d, %d), dilations (%d, %d, %d))", op, fl_tensor_shape(in).s,
                          fl_tensor_shape(f).s, a->strides[0], a->strides[1], a->strides[2], a->paddings[0],
                          a->paddings[1], a->paddings[2], a->dilations[0], a->dilations[1], a->dilations[2]);
        if (output_size && (output_size[i] < o || output_size[i] >= o + a->strides[i]))
            return fl_err(e, "%s: output_size %lld of dim %d is outside [%lld, %lld) (Input %s, Filter %s, stride %d)",
                          op, (long long)output_size[i], 2 + i, (long long)o, (long long)(o + a->strides[i]),
                          fl_tensor_shape(in).s, fl_tensor_shape(f).s, a->strides[i]);
        ne[2 + i] = output_size ? output_size[i] : o;
    }
    return FL_OK;
}

/* A conv3d kernel's error under `op`'s name. */
static FlStatus convt3_sub(FlErr *e, const char *op, FlStatus st, const FlErr *sub) {
    return st ? fl_err(e, "%s: %s", op, sub->msg) : FL_OK;
}

FlStatus fl_kernel_conv3d_transpose(FlErr *e, const FlTensor *input, const FlTensor *filter, const FlConv3dAttrs *a,
                                    const int64_t *output_size, FlTensor *output) {
    const char *op = "conv3d_transpose";
    int64_t ne[5];
    if (convt3_out(e, op, input, filter, a, output_size, ne)) return FL_ERROR;
    /* the input gradient of the convolution of an image of the output's size, whose output the
     * transposed convolution's input stands for (only its shape is read) */
    FlTensor shape = FL_TENSOR_INIT;
    if (kalloc(e, op, &shape, input->dtype, 5, ne)) return FL_ERROR;
    FlErr sub;
    FlStatus st = fl_kernel_conv3d_grad(&sub, &shape, filter, input, a, output, NULL);
    fl_tensor_fini(&shape);
    return convt3_sub(e, op, st, &sub);
}

FlStatus fl_kernel_conv3d_transpose_grad(FlErr *e, const FlTensor *input, const FlTensor *filter,
                                         const FlTensor *doutput, const FlConv3dAttrs *a, const int64_t *output_size,
                                         FlTensor *dinput, FlTensor *dfilter) {
    const char *op = "conv3d_transpose_grad";
    int64_t ne[5];
    if (convt3_out(e, op, input, filter, a, output_size, ne) || ksame_dtype(e, op, "Input", input, "Output@GRAD", doutput))
        return FL_ERROR;
    if (doutput->ndim != 5 || memcmp(doutput->ne, ne, sizeof ne) != 0)
        return fl_err(e, "%s: Output@GRAD %s differs from the output shape %s", op, fl_tensor_shape(doutput).s,
                      fl_shape_str(5, ne).s);
    FlErr sub;
    if (dinput && convt3_sub(e, op, fl_kernel_conv3d(&sub, doutput, filter, a, dinput), &sub)) return FL_ERROR;
    if (dfilter && convt3_sub(e, op, fl_kernel_conv3d_grad(&sub, doutput, filter, input, a, NULL, dfilter), &sub))
        return FL_ERROR;
    return FL_OK;
}

/* ---- pooling ---- */

/* The op's name for messages: pool2d / pool3d, or max_poolNd_with_index with a mask. */
static const char *pool_op(const FlPoolNdAttrs *a, bool mask, bool grad) {
    static const char *const names[2][2][2] = {{{"pool2d", "pool2d_grad"}, {"pool3d", "pool3d_grad"}},
                                               {{"max_pool2d_with_index", "max_pool2d_with_index_grad"},
                                                {"max_pool3d_with_index", "max_pool3d_with_index_grad"}}};
    return names[mask][a->nsp == 3][grad];
}

static FlStatus pool_geom(FlErr *e, const char *op, const FlTensor *x, const FlPoolNdAttrs *a, bool mask,
                          PoolGeom *g, PoolNd *nd) {
    if (kneed_float(e, op, "X", x)) return FL_ERROR;
    if ((a->nsp != 2 && a->nsp != 3) || x->ndim != 2 + a->nsp)
        return fl_err(e, "%s: X %s must be [N, C, %s]", op, fl_tensor_shape(x).s, a->nsp == 3 ? "D, H, W" : "H, W");
    if (a->type != FL_POOL_MAX && a->type != FL_POOL_AVG)
        return fl_err(e, "%s: unknown pooling type %d", op, (int)a->type);
    if (mask && a->type != FL_POOL_MAX) return fl_err(e, "%s: a mask needs max pooling", op);
    int off = 3 - a->nsp; /* a 2-D pooling's dims go to 1 and 2 */
    *g = (PoolGeom){.NC = x->ne[0] * x->ne[1], .in = {1, 1, 1}, .out = {1, 1, 1}, .k = {1, 1, 1}, .s = {1, 1, 1},
                    .type = a->type, .exclusive = a->exclusive, .adaptive = a->adaptive};
    *nd = (PoolNd){.nsp = a->nsp, .N = x->ne[0], .C = x->ne[1], .type = a->type, .exclusive = a->exclusive,
                   .adaptive = a->adaptive};
    for (int i = 0; i < a->nsp; i++) {
        int64_t in = x->ne[2 + i], k = a->ksize[i], s = a->strides[i], p = a->paddings[i], o;
        if (a->global_pooling) k = in, s = 1, p = 0;
        if (a->adaptive && !a->global_pooling) {
            if (k < 1)
                return fl_err(e, "%s: X %s: the adaptive output size (ksize %d) must be >= 1", op,
                              fl_tensor_shape(x).s, a->ksize[i]);
            o = k;
        } else {
            if (k < 1 || s < 1 || p < 0 || p >= k)
                return fl_err(e, "%s: bad attributes for X %s: ksize %lld, stride %lld, padding %lld of dim %d "
                                 "(padding must be smaller than the window)", op, fl_tensor_shape(x).s, (long long)k,
                              (long long)s, (long long)p, 2 + i);
            if (in + 2 * p < k)
                return fl_err(e, "%s: X %s is smaller than the window %lld of dim %d even with padding", op,
                              fl_tensor_shape(x).s, (long long)k, 2 + i);
            int64_t span = in + 2 * p - k;
            o = (a->ceil_mode ? (span + s - 1) / s : span / s) + 1;
        }
        g->in[off + i] = nd->in[i] = in;
        g->out[off + i] = nd->out[i] = o;
        g->k[off + i] = nd->k[i] = k;
        g->s[off + i] = nd->s[i] = s;
        g->p[off + i] = nd->p[i] = p;
    }
    if (a->global_pooling) g->adaptive = nd->adaptive = false;
    return FL_OK;
}

static FlStatus pool_nd(FlErr *e, const FlTensor *x, const FlPoolNdAttrs *a, FlTensor *out, FlTensor *mask,
                        bool fast) {
    const char *op = pool_op(a, mask != NULL, false);
    PoolGeom g;
    PoolNd nd;
    if (pool_geom(e, op, x, a, mask != NULL, &g, &nd)) return FL_ERROR;
    int64_t ne[5] = {x->ne[0], x->ne[1], nd.out[0], nd.out[1], nd.out[2]};
    int ndim = 2 + a->nsp;
    FlTensor r = FL_TENSOR_INIT, m = FL_TENSOR_INIT; /* every cell is written */
    if (kalloc_raw(e, op, &r, x->dtype, ndim, ne) || (mask && kalloc_raw(e, op, &m, FL_DT_INT32, ndim, ne))) {
        fl_tensor_fini(&r);
        return FL_ERROR;
    }
    int32_t *mp = mask ? fl_tensor_data(&m) : NULL;
    if (x->dtype == FL_DT_FLOAT32) {
        if (!fast || mask || !kdnnl_pool_nd(&nd, fl_tensor_data(x), fl_tensor_data(&r)))
            pool_nd_f32(fl_tensor_data(x), fl_tensor_data(&r), mp, &g);
    } else {
        pool_nd_f64(fl_tensor_data(x), fl_tensor_data(&r), mp, &g);
    }
    kout(out, &r);
    if (mask) kout(mask, &m);
    return FL_OK;
}

static FlStatus pool_nd_grad(FlErr *e, const FlTensor *x, const FlTensor *mask, const FlTensor *dout,
                             const FlPoolNdAttrs *a, FlTensor *dx, bool fast) {
    const char *op = pool_op(a, mask != NULL, true);
    PoolGeom g;
    PoolNd nd;
    if (pool_geom(e, op, x, a, mask != NULL, &g, &nd) || ksame_dtype(e, op, "X", x, "Out@GRAD", dout))
        return FL_ERROR;
    int64_t ne[5] = {x->ne[0], x->ne[1], nd.out[0], nd.out[1], nd.out[2]};
    int ndim = 2 + a->nsp;
    if (dout->ndim != ndim || memcmp(dout->ne, ne, sizeof ne[0] * (size_t)ndim) != 0)
        return fl_err(e, "%s: Out@GRAD %s differs from the output shape %s", op, fl_tensor_shape(dout).s,
                      fl_shape_str(ndim, ne).s);
    if (mask) {
        if (khas(e, op, "Mask", mask)) return FL_ERROR;
        if (mask->dtype != FL_DT_INT32 || !fl_tensor_same_shape(mask, dout))
            return fl_err(e, "%s: Mask %s (%s) must be int32 of Out@GRAD's shape %s", op, fl_tensor_shape(mask).s,
                          fl_dtype_name(mask->dtype), fl_tensor_shape(dout).s);
        const int32_t *mv = fl_tensor_data(mask);
        int64_t isz = fl_tensor_numel(x) / (x->ne[0] * x->ne[1]);
        for (int64_t i = 0, n = fl_tensor_numel(mask); i < n; i++)
            if (mv[i] < -1 || mv[i] >= isz)
                return fl_err(e, "%s: Mask holds %d at %lld, outside an image of %lld cells", op, (int)mv[i],
                              (long long)i, (long long)isz);
    }
    if (!dx) return FL_OK;
    FlTensor r = FL_TENSOR_INIT; /* zeros: the loops accumulate */
    if (kalloc_like(e, op, &r, x)) return FL_ERROR;
    const int32_t *mp = mask ? fl_tensor_data(mask) : NULL;
    if (x->dtype == FL_DT_FLOAT32) {
        if (!fast || mask || !kdnnl_pool_nd_grad(&nd, fl_tensor_data(x), fl_tensor_data(dout), fl_tensor_data(&r))) {
            memset(fl_tensor_data(&r), 0, fl_tensor_nbytes(&r));
            pool_nd_grad_f32(fl_tensor_data(x), mp, fl_tensor_data(dout), fl_tensor_data(&r), &g);
        }
    } else {
        pool_nd_grad_f64(fl_tensor_data(x), mp, fl_tensor_data(dout), fl_tensor_data(&r), &g);
    }
    kout(dx, &r);
    return FL_OK;
}

FlStatus fl_kernel_pool_nd(FlErr *e, const FlTensor *x, const FlPoolNdAttrs *a, FlTensor *out, FlTensor *mask) {
    return pool_nd(e, x, a, out, mask, true);
}
FlStatus fl_kernel_pool_nd_ref(FlErr *e, const FlTensor *x, const FlPoolNdAttrs *a, FlTensor *out, FlTensor *mask) {
    return pool_nd(e, x, a, out, mask, false);
}
FlStatus fl_kernel_pool_nd_grad(FlErr *e, const FlTensor *x, const FlTensor *mask, const FlTensor *dout,
                                const FlPoolNdAttrs *a, FlTensor *dx) {
    return pool_nd_grad(e, x, mask, dout, a, dx, true);
}
FlStatus fl_kernel_pool_nd_grad_ref(FlErr *e, const FlTensor *x, const FlTensor *mask, const FlTensor *dout,
                                    const FlPoolNdAttrs *a, FlTensor *dx) {
    return pool_nd_grad(e, x, mask, dout, a, dx, false);
}
