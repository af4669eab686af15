/* conv.c: conv2d (reference: direct loops; fast: im2col + GEMM, cblas_sgemm for float32) and
 * pool2d, forward and backward, NCHW. The typed loops are in conv_t.inc. */
#include "runtime/kernels/kernels_impl.h"

#include "runtime/kernels/par.h"

#include <stdlib.h>

#define FL_TMPL "conv_t.inc"
#include "runtime/kernels/tmpl.h"

static FlStatus conv_dims(FlErr *e, const char *op, const FlTensor *in, const FlTensor *f,
                          const FlConv2dAttrs *a, ConvDims *d) {
    if (kneed_float(e, op, "Input", in) || ksame_dtype(e, op, "Input", in, "Filter", f))
        return FL_ERROR;
    if (in->ndim != 4 || f->ndim != 4)
        return fl_err(e, "%s: Input %s must be [N, C, H, W] and Filter %s [M, C/groups, kh, kw]",
                      op, fl_tensor_shape(in).s, fl_tensor_shape(f).s);
    if (a->groups < 1 || a->strides[0] < 1 || a->strides[1] < 1 || a->dilations[0] < 1 ||
        a->dilations[1] < 1 || a->paddings[0] < 0 || a->paddings[1] < 0)
        return fl_err(e, "%s: bad attributes: strides (%d, %d), paddings (%d, %d), dilations "
                         "(%d, %d), groups %d", op, a->strides[0], a->strides[1], a->paddings[0],
                      a->paddings[1], a->dilations[0], a->dilations[1], a->groups);
    *d = (ConvDims){.N = in->ne[0], .C = in->ne[1], .H = in->ne[2], .W = in->ne[3],
                    .M = f->ne[0], .kh = f->ne[2], .kw = f->ne[3], .groups = a->groups,
                    .sh = a->strides[0], .sw = a->strides[1], .ph = a->paddings[0],
                    .pw = a->paddings[1], .dh = a->dilations[0], .dw = a->dilations[1]};
    if (d->C % d->groups || d->M % d->groups || f->ne[1] * d->groups != d->C)
        return fl_err(e, "%s: Input %s and Filter %s with groups %d: Filter's dim 1 (%lld) times "
                         "groups must equal Input's channels (%lld), and both channel counts must "
                         "divide by groups", op, fl_tensor_shape(in).s, fl_tensor_shape(f).s,
                      a->groups, (long long)f->ne[1], (long long)d->C);
    d->Cg = d->C / d->groups;
    d->Mg = d->M / d->groups;
    d->Ho = (d->H + 2 * d->ph - (d->dh * (d->kh - 1) + 1)) / d->sh + 1;
    d->Wo = (d->W + 2 * d->pw - (d->dw * (d->kw - 1) + 1)) / d->sw + 1;
    if (d->H + 2 * d->ph < d->dh * (d->kh - 1) + 1 || d->W + 2 * d->pw < d->dw * (d->kw - 1) + 1 ||
        d->Ho < 1 || d->Wo < 1)
        return fl_err(e, "%s: Input %s and Filter %s: the output would be empty (the padded image "
                         "is smaller than the dilated filter)", op, fl_tensor_shape(in).s,
                      fl_tensor_shape(f).s);
    return FL_OK;
}

/* conv2d's im2col path over images: multiply-adds a chunk of images must have to be worth a
 * hand-over to another thread (docs/kernels.md, "Threads"). */
enum { CONV_GRAIN = 1 << 21 };

typedef struct ImJob {
    const ConvDims *d;
    const void *in, *w;
    void *out;
    char *col; /* nchunks buffers of colsz bytes */
    size_t colsz;
    bool f32;
    int nchunks;
} ImJob;

static void conv_chunk(void *arg, int c) {
    const ImJob *j = arg;
    int64_t n0, n1;
    fl_par_range(j->d->N, c, j->nchunks, &n0, &n1);
    void *col = j->col + (size_t)c * j->colsz;
    if (j->f32) conv_gemm_f32(j->in, j->w, j->out, col, j->d, n0, n1);
    else conv_gemm_f64(j->in, j->w, j->out, col, j->d, n0, n1);
}

static FlStatus conv(FlErr *e, const FlTensor *in, const FlTensor *f, const FlConv2dAttrs *a,
                     FlTensor *output, bool fast) {
    ConvDims d;
    if (conv_dims(e, "conv2d", in, f, a, &d)) return FL_ERROR;
    int64_t ne[4] = {d.N, d.M, d.Ho, d.Wo};
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, "conv2d", &r, in->dtype, 4, ne)) return FL_ERROR;
    bool f32 = in->dtype == FL_DT_FLOAT32;
    if (fast && f32 && kdnnl_conv(&d, fl_tensor_data(in), fl_tensor_data(f), fl_tensor_data(&r))) {
        /* done by oneDNN */
    } else if (!fast) {
        if (f32) conv_ref_f32(fl_tensor_data(in), fl_tensor_data(f), fl_tensor_data(&r), &d);
        else conv_ref_f64(fl_tensor_data(in), fl_tensor_data(f), fl_tensor_data(&r), &d);
    } else {
        /* images in chunks on the kernel pool, each chunk with its own im2col buffer; a chunk's
         * GEMMs run whole (nested kernels are serial), as they do without a pool: the results
         * are the same bits at every thread count */
        size_t es = fl_dtype_size(in->dtype), colsz = (size_t)(d.Cg * d.kh * d.kw * d.Ho * d.Wo) * es + 64;
        int64_t per = d.M * d.Cg * d.kh * d.kw * d.Ho * d.Wo; /* multiply-adds per image */
        per = per > 0 ? per : 1;
        ImJob j = {.d = &d, .in = fl_tensor_data(in), .w = fl_tensor_data(f), .out = fl_tensor_data(&r), .f32 = f32,
                   .colsz = colsz, .nchunks = fl_par_chunks(d.N, (CONV_GRAIN + per - 1) / per)};
        j.col = malloc(colsz * (size_t)j.nchunks);
        if (!j.col) {
            fl_tensor_fini(&r);
            return fl_err(e, "conv2d: out of memory for the im2col buffer");
        }
        fl_par_run(j.nchunks, conv_chunk, &j);
        free(j.col);
    }
    kout(output, &r);
    return FL_OK;
}

static FlStatus conv_grad(FlErr *e, const FlTensor *in, const FlTensor *f, const FlTensor *dout,
                          const FlConv2dAttrs *a, FlTensor *din, FlTensor *dfilter, bool fast) {
    const char *op = "conv2d_grad";
    ConvDims d;
    if (conv_dims(e, op, in, f, a, &d) || ksame_dtype(e, op, "Input", in, "Output@GRAD", dout))
        return FL_ERROR;
    if (dout->ndim != 4 || dout->ne[0] != d.N || dout->ne[1] != d.M || dout->ne[2] != d.Ho ||
        dout->ne[3] != d.Wo) {
        int64_t ne[4] = {d.N, d.M, d.Ho, d.Wo};
        return fl_err(e, "%s: Output@GRAD %s differs from the output shape %s", op,
                      fl_tensor_shape(dout).s, fl_shape_str(4, ne).s);
    }
    /* oneDNN writes the gradients whole; the other kernels accumulate into zeros */
    bool f32 = in->dtype == FL_DT_FLOAT32, dnnl = fast && f32;
    FlTensor ri = FL_TENSOR_INIT, rf = FL_TENSOR_INIT;
    if (din && (dnnl ? kalloc_raw_like(e, op, &ri, in) : kalloc_like(e, op, &ri, in)))
        return FL_ERROR;
    if (dfilter && (dnnl ? kalloc_raw_like(e, op, &rf, f) : kalloc_like(e, op, &rf, f))) {
        fl_tensor_fini(&ri);
        return FL_ERROR;
    }
    void *pi = din ? fl_tensor_data(&ri) : NULL, *pf = dfilter ? fl_tensor_data(&rf) : NULL;
    if (dnnl && kdnnl_conv_grad(&d, fl_tensor_data(in), fl_tensor_data(f), fl_tensor_data(dout),
                                pi, pf)) {
        /* done by oneDNN */
    } else if (!fast) {
        if (f32) conv_grad_ref_f32(fl_tensor_data(in), fl_tensor_data(f), fl_tensor_data(dout), pi, pf, &d);
        else conv_grad_ref_f64(fl_tensor_data(in), fl_tensor_data(f), fl_tensor_data(dout), pi, pf, &d);
    } else {
        if (pi && dnnl) memset(pi, 0, fl_tensor_nbytes(&ri));
        if (pf && dnnl) memset(pf, 0, fl_tensor_nbytes(&rf));
        size_t es = fl_dtype_size(in->dtype);
        void *col = malloc((size_t)(d.Cg * d.kh * d.kw * d.Ho * d.Wo) * es + 1);
        if (!col) {
            fl_tensor_fini(&ri);
            fl_tensor_fini(&rf);
            return fl_err(e, "%s: out of memory for the im2col buffer", op);
        }
        if (f32) conv_gemm_grad_f32(fl_tensor_data(in), fl_tensor_data(f), fl_tensor_data(dout), pi, pf, col, &d);
        else conv_gemm_grad_f64(fl_tensor_data(in), fl_tensor_data(f), fl_tensor_data(dout), pi, pf, col, &d);
        free(col);
    }
    if (din) kout(din, &ri);
    if (dfilter) kout(dfilter, &rf);
    return FL_OK;
}

FlStatus fl_kernel_conv2d(FlErr *e, const FlTensor *input, const FlTensor *filter,
                          const FlConv2dAttrs *a, FlTensor *output) {
    return conv(e, input, filter, a, output, true);
}
FlStatus fl_kernel_conv2d_ref(FlErr *e, const FlTensor *input, const FlTensor *filter,
                              const FlConv2dAttrs *a, FlTensor *output) {
    return conv(e, input, filter, a, output, false);
}
FlStatus fl_kernel_conv2d_grad(FlErr *e, const FlTensor *input, const FlTensor *filter,
                               const FlTensor *doutput, const FlConv2dAttrs *a, FlTensor *dinput,
                               FlTensor *dfilter) {
    return conv_grad(e, input, filter, doutput, a, dinput, dfilter, true);
}
FlStatus fl_kernel_conv2d_grad_ref(FlErr *e, const FlTensor *input, const FlTensor *filter,
                                   const FlTensor *doutput, const FlConv2dAttrs *a,
                                   FlTensor *dinput, FlTensor *dfilter) {
    return conv_grad(e, input, filter, doutput, a, dinput, dfilter, false);
}

/* ---- pool2d ---- */

static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, bool ceil_mode) {
    int64_t span = in + 2 * p - k;
    return (ceil_mode ? (span + s - 1) / s : span / s) + 1;
}

/* ints: X may also be int8 or uint8 (the forward pass, int8 inference) */
static FlStatus pool_dims(FlErr *e, const char *op, const FlTensor *x, const FlPool2dAttrs *a,
                          PoolDims *p, bool ints) {
    if (!(ints && x && x->buf && (x->dtype == FL_DT_INT8 || x->dtype == FL_DT_UINT8)) && kneed_float(e, op, "X", x))
        return FL_ERROR;
    if (x->ndim != 4) return fl_err(e, "%s: X %s must be [N, C, H, W]", op, fl_tensor_shape(x).s);
    if (a->type != FL_POOL_MAX && a->type != FL_POOL_AVG)
        return fl_err(e, "%s: unknown pooling type %d", op, (int)a->type);
    *p = (PoolDims){.NC = x->ne[0] * x->ne[1], .H = x->ne[2], .W = x->ne[3], .kh = a->ksize[0],
                    .kw = a->ksize[1], .sh = a->strides[0], .sw = a->strides[1],
                    .ph = a->paddings[0], .pw = a->paddings[1], .type = a->type,
                    .exclusive = a->exclusive};
    if (a->global_pooling) {
        p->kh = p->H, p->kw = p->W, p->ph = p->pw = 0, p->sh = p->sw = 1;
    }
    if (p->kh < 1 || p->kw < 1 || p->sh < 1 || p->sw < 1 || p->ph < 0 || p->pw < 0 ||
        p->ph >= p->kh || p->pw >= p->kw)
        return fl_err(e, "%s: bad attributes for X %s: ksize (%lld, %lld), strides (%lld, %lld), "
                         "paddings (%lld, %lld) (padding must be smaller than the window)", op,
                      fl_tensor_shape(x).s, (long long)p->kh, (long long)p->kw, (long long)p->sh,
                      (long long)p->sw, (long long)p->ph, (long long)p->pw);
    if (p->H + 2 * p->ph < p->kh || p->W + 2 * p->pw < p->kw)
        return fl_err(e, "%s: X %s is smaller than the window (%lld, %lld) even with padding", op,
                      fl_tensor_shape(x).s, (long long)p->kh, (long long)p->kw);
    p->Ho = pool_out(p->H, p->kh, p->sh, p->ph, a->ceil_mode);
    p->Wo = pool_out(p->W, p->kw, p->sw, p->pw, a->ceil_mode);
    return FL_OK;
}

static FlStatus pool(FlErr *e, const FlTensor *x, const FlPool2dAttrs *a, FlTensor *out,
                     bool fast) {
    PoolDims p;
    if (pool_dims(e, "pool2d", x, a, &p, true)) return FL_ERROR;
    int64_t ne[4] = {x->ne[0], x->ne[1], p.Ho, p.Wo};
    FlTensor r = FL_TENSOR_INIT; /* every cell is written */
    if (kalloc_raw(e, "pool2d", &r, x->dtype, 4, ne)) return FL_ERROR;
    if (x->dtype == FL_DT_INT8 || x->dtype == FL_DT_UINT8) {
        kpool_int8(&p, x->dtype, fl_tensor_data(x), fl_tensor_data(&r));
    } else if (x->dtype == FL_DT_FLOAT32) {
        if (!fast || !kdnnl_pool(&p, x->ne[0], fl_tensor_data(x), fl_tensor_data(&r)))
            pool_f32(fl_tensor_data(x), fl_tensor_data(&r), &p);
    } else pool_f64(fl_tensor_data(x), fl_tensor_data(&r), &p);
    kout(out, &r);
    return FL_OK;
}

static FlStatus pool_grad(FlErr *e, const FlTensor *x, const FlTensor *out,
                          const FlTensor *dout, const FlPool2dAttrs *a, FlTensor *dx, bool fast) {
    const char *op = "pool2d_grad";
    (void)out; /* the max cell is found again in X: the same cell the forward pass chose */
    PoolDims p;
    if (pool_dims(e, op, x, a, &p, false) || ksame_dtype(e, op, "X", x, "Out@GRAD", dout)) return FL_ERROR;
    int64_t ne[4] = {x->ne[0], x->ne[1], p.Ho, p.Wo};
    if (dout->ndim != 4 || memcmp(dout->ne, ne, sizeof ne))
        return fl_err(e, "%s: Out@GRAD %s differs from the output shape %s", op,
                      fl_tensor_shape(dout).s, fl_shape_str(4, ne).s);
    if (!dx) return FL_OK;
    /* oneDNN writes dX whole; the loops accumulate into zeros */
    bool dnnl = fast && x->dtype == FL_DT_FLOAT32;
    FlTensor r = FL_TENSOR_INIT;
    if (dnnl ? kalloc_raw_like(e, op, &r, x) : kalloc_like(e, op, &r, x)) return FL_ERROR;
    if (x->dtype == FL_DT_FLOAT32) {
        if (dnnl && kdnnl_pool_grad(&p, x->ne[0], fl_tensor_data(x), fl_tensor_data(dout),
                                    fl_tensor_data(&r))) {
            /* done by oneDNN */
        } else {
            if (dnnl) memset(fl_tensor_data(&r), 0, fl_tensor_nbytes(&r));
            pool_grad_f32(fl_tensor_data(x), fl_tensor_data(dout), fl_tensor_data(&r), &p);
        }
    } else pool_grad_f64(fl_tensor_data(x), fl_tensor_data(dout), fl_tensor_data(&r), &p);
    kout(dx, &r);
    return FL_OK;
}

FlStatus fl_kernel_pool2d(FlErr *e, const FlTensor *x, const FlPool2dAttrs *a, FlTensor *out) {
    return pool(e, x, a, out, true);
}
FlStatus fl_kernel_pool2d_ref(FlErr *e, const FlTensor *x, const FlPool2dAttrs *a, FlTensor *out) {
    return pool(e, x, a, out, false);
}
FlStatus fl_kernel_pool2d_grad(FlErr *e, const FlTensor *x, const FlTensor *out,
                               const FlTensor *dout, const FlPool2dAttrs *a, FlTensor *dx) {
    return pool_grad(e, x, out, dout, a, dx, true);
}
FlStatus fl_kernel_pool2d_grad_ref(FlErr *e, const FlTensor *x, const FlTensor *out,
                                   const FlTensor *dout, const FlPool2dAttrs *a, FlTensor *dx) {
    return pool_grad(e, x, out, dout, a, dx, false);
}
