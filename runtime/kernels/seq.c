/* seq.c: the sequence kernels (kernels_seq.h): pooling, softmax, the context-projection
 * convolution, expansion and masks over a tensor whose rows are cut by offsets. The typed loops
 * are in seq_t.inc; this file checks the arguments, allocates and dispatches on the dtype. */
#include "runtime/kernels/kernels_seq.h"

#include <math.h>

#include "runtime/kernels/kernels_impl.h"

#define FL_TMPL "seq_t.inc"
#include "runtime/kernels/tmpl.h"

static const char *const pool_names[] = {"AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST"};
_Static_assert(FL_ARRAY_LEN(pool_names) == FL_SEQPOOL_COUNT, "one name per pool type");

FlSeqPool fl_seqpool_parse(const char *name) {
    for (int i = 0; i < FL_SEQPOOL_COUNT; i++)
        if (strcmp(name, pool_names[i]) == 0) return (FlSeqPool)i;
    return FL_SEQPOOL_COUNT;
}

/* X holds data of a float dtype, has at least one dim and the rows the offsets cut. */
static FlStatus check_rows(FlErr *e, const char *op, const FlTensor *x, const int64_t *off, int64_t nseq,
                           bool need_float) {
    if (need_float ? kneed_float(e, op, "X", x) : khas(e, op, "X", x)) return FL_ERROR;
    if (x->ndim < 1) return fl_err(e, "%s: X %s must have at least one dim", op, fl_tensor_shape(x).s);
    if (off[nseq] != x->ne[0])
        return fl_err(e, "%s: the offsets end at %lld but X %s has %lld rows", op, (long long)off[nseq],
                      fl_tensor_shape(x).s, (long long)x->ne[0]);
    return FL_OK;
}

static int64_t row_len(const FlTensor *x) { return kprod(x->ne, 1, x->ndim); }

/* ---- sequence_pool ---- */

FlStatus fl_kernel_sequence_pool(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq, FlSeqPool type,
                                 double pad_value, FlTensor *out, FlTensor *max_index) {
    const char *op = "sequence_pool";
    if (check_rows(e, op, x, off, nseq, true) || kwant(e, op, "Out", out)) return FL_ERROR;
    if (type == FL_SEQPOOL_MAX && x->ne[0] > INT32_MAX)
        return fl_err(e, "%s: X %s has more rows than MaxIndex (int32) can name", op, fl_tensor_shape(x).s);
    int64_t ne[FL_MAX_DIMS];
    memcpy(ne, x->ne, sizeof ne);
    ne[0] = nseq;
    int64_t D = row_len(x);
    bool keep = type == FL_SEQPOOL_MAX && max_index;
    FlTensor o = FL_TENSOR_INIT, mi = FL_TENSOR_INIT;
    if (kalloc(e, op, &o, x->dtype, x->ndim, ne)) return FL_ERROR;
    if (keep && kalloc(e, op, &mi, FL_DT_INT32, x->ndim, ne)) {
        fl_tensor_fini(&o);
        return FL_ERROR;
    }
    int32_t *idx = keep ? fl_tensor_data(&mi) : NULL;
    if (x->dtype == FL_DT_FLOAT32) pool_fwd_f32(fl_tensor_data(x), off, nseq, D, type, pad_value, fl_tensor_data(&o), idx);
    else pool_fwd_f64(fl_tensor_data(x), off, nseq, D, type, pad_value, fl_tensor_data(&o), idx);
    kout(out, &o);
    if (keep) kout(max_index, &mi);
    return FL_OK;
}

FlStatus fl_kernel_sequence_pool_grad(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                      FlSeqPool type, const FlTensor *max_index, const FlTensor *dout,
                                      FlTensor *dx) {
    const char *op = "sequence_pool_grad";
    if (!dx) return FL_OK;
    if (check_rows(e, op, x, off, nseq, true) || ksame_dtype(e, op, "X", x, "Out@GRAD", dout)) return FL_ERROR;
    int64_t D = row_len(x);
    if (dout->ndim < 1 || dout->ne[0] != nseq || fl_tensor_numel(dout) != nseq * D)
        return fl_err(e, "%s: Out@GRAD %s must have one row per sequence (%lld) of X %s", op,
                      fl_tensor_shape(dout).s, (long long)nseq, fl_tensor_shape(x).s);
    const int32_t *idx = NULL;
    if (type == FL_SEQPOOL_MAX && max_index) {
        if (khas(e, op, "MaxIndex", max_index)) return FL_ERROR;
        if (max_index->dtype != FL_DT_INT32 || fl_tensor_numel(max_index) != nseq * D)
            return fl_err(e, "%s: MaxIndex %s %s must be int32 with one entry per element of Out %s", op,
                          fl_tensor_shape(max_index).s, fl_dtype_name(max_index->dtype), fl_tensor_shape(dout).s);
        idx = fl_tensor_data(max_index);
        for (int64_t s = 0; s < nseq; s++)
            for (int64_t j = 0; j < D; j++) {
                int64_t r = idx[s * D + j];
                bool empty = off[s] == off[s + 1];
                if (empty ? r != -1 : (r < off[s] || r >= off[s + 1]))
                    return fl_err(e, "%s: MaxIndex[%lld] is %lld, outside sequence %lld (rows %lld to %lld)", op,
                                  (long long)(s * D + j), (long long)r, (long long)s, (long long)off[s],
                                  (long long)off[s + 1]);
            }
    }
    FlTensor g = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &g, x)) return FL_ERROR;
    if (x->dtype == FL_DT_FLOAT32)
        pool_bwd_f32(fl_tensor_data(x), off, nseq, D, type, idx, fl_tensor_data(dout), fl_tensor_data(&g));
    else pool_bwd_f64(fl_tensor_data(x), off, nseq, D, type, idx, fl_tensor_data(dout), fl_tensor_data(&g));
    kout(dx, &g);
    return FL_OK;
}

/* ---- sequence_softmax ---- */

static FlStatus check_column(FlErr *e, const char *op, const char *slot, const FlTensor *x) {
    if (x->ndim == 1 || (x->ndim == 2 && x->ne[1] == 1)) return FL_OK;
    return fl_err(e, "%s: %s %s must be [T] or [T, 1]", op, slot, fl_tensor_shape(x).s);
}

FlStatus fl_kernel_sequence_softmax(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq, FlTensor *out) {
    const char *op = "sequence_softmax";
    if (check_rows(e, op, x, off, nseq, true) || check_column(e, op, "X", x) || kwant(e, op, "Out", out))
        return FL_ERROR;
    FlTensor y = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &y, x)) return FL_ERROR;
    if (x->dtype == FL_DT_FLOAT32) softmax_fwd_f32(fl_tensor_data(x), off, nseq, fl_tensor_data(&y));
    else softmax_fwd_f64(fl_tensor_data(x), off, nseq, fl_tensor_data(&y));
    kout(out, &y);
    return FL_OK;
}

FlStatus fl_kernel_sequence_softmax_grad(FlErr *e, const FlTensor *out, const int64_t *off, int64_t nseq,
                                         const FlTensor *dout, FlTensor *dx) {
    const char *op = "sequence_softmax_grad";
    if (!dx) return FL_OK;
    if (kneed_float(e, op, "Out", out) || check_column(e, op, "Out", out) || ksame(e, op, "Out", out, "Out@GRAD", dout))
        return FL_ERROR;
    if (off[nseq] != out->ne[0])
        return fl_err(e, "%s: the offsets end at %lld but Out %s has %lld rows", op, (long long)off[nseq],
                      fl_tensor_shape(out).s, (long long)out->ne[0]);
    FlTensor g = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &g, out)) return FL_ERROR;
    if (out->dtype == FL_DT_FLOAT32)
        softmax_bwd_f32(fl_tensor_data(out), fl_tensor_data(dout), off, nseq, fl_tensor_data(&g));
    else softmax_bwd_f64(fl_tensor_data(out), fl_tensor_data(dout), off, nseq, fl_tensor_data(&g));
    kout(dx, &g);
    return FL_OK;
}

/* ---- sequence_conv ---- */

static FlStatus check_conv(FlErr *e, const char *op, const FlTensor *x, const int64_t *off, int64_t nseq,
                           const FlTensor *filter, int64_t length) {
    if (check_rows(e, op, x, off, nseq, true) || ksame_dtype(e, op, "X", x, "Filter", filter)) return FL_ERROR;
    if (length < 1) return fl_err(e, "%s: contextLength must be >= 1, found %lld", op, (long long)length);
    if (x->ndim != 2) return fl_err(e, "%s: X %s must be [T, D]", op, fl_tensor_shape(x).s);
    if (filter->ndim != 2 || length > INT64_MAX / (x->ne[1] ? x->ne[1] : 1) || filter->ne[0] != length * x->ne[1])
        return fl_err(e, "%s: Filter %s must be [contextLength * D, N] = [%lld, N] for X %s", op,
                      fl_tensor_shape(filter).s, (long long)(length * x->ne[1]), fl_tensor_shape(x).s);
    return FL_OK;
}

/* The context projection's scratch [T, length * D]. */
static FlStatus alloc_col(FlErr *e, const char *op, FlTensor *col, const FlTensor *x, int64_t length) {
    return kalloc_raw(e, op, col, x->dtype, 2, (int64_t[]){x->ne[0], length * x->ne[1]});
}

FlStatus fl_kernel_sequence_conv(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                 const FlTensor *filter, int64_t start, int64_t length, FlTensor *out) {
    const char *op = "sequence_conv";
    if (check_conv(e, op, x, off, nseq, filter, length) || kwant(e, op, "Out", out)) return FL_ERROR;
    int64_t T = x->ne[0], D = x->ne[1], N = filter->ne[1];
    FlTensor col = FL_TENSOR_INIT, o = FL_TENSOR_INIT;
    if (alloc_col(e, op, &col, x, length)) return FL_ERROR;
    if (kalloc(e, op, &o, x->dtype, 2, (int64_t[]){T, N})) {
        fl_tensor_fini(&col);
        return FL_ERROR;
    }
    if (T > 0 && N > 0) {
        if (x->dtype == FL_DT_FLOAT32)
            conv_fwd_f32(fl_tensor_data(x), off, nseq, T, D, start, length, fl_tensor_data(filter), N,
                         fl_tensor_data(&col), fl_tensor_data(&o));
        else conv_fwd_f64(fl_tensor_data(x), off, nseq, T, D, start, length, fl_tensor_data(filter), N,
                          fl_tensor_data(&col), fl_tensor_data(&o));
    }
    fl_tensor_fini(&col);
    kout(out, &o);
    return FL_OK;
}

FlStatus fl_kernel_sequence_conv_grad(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                      const FlTensor *filter, int64_t start, int64_t length,
                                      const FlTensor *dout, FlTensor *dx, FlTensor *dfilter) {
    const char *op = "sequence_conv_grad";
    if (!dx && !dfilter) return FL_OK;
    if (check_conv(e, op, x, off, nseq, filter, length) || ksame_dtype(e, op, "X", x, "Out@GRAD", dout))
        return FL_ERROR;
    int64_t T = x->ne[0], D = x->ne[1], N = filter->ne[1];
    if (dout->ndim != 2 || dout->ne[0] != T || dout->ne[1] != N)
        return fl_err(e, "%s: Out@GRAD %s must be [%lld, %lld]", op, fl_tensor_shape(dout).s, (long long)T,
                      (long long)N);
    FlTensor col = FL_TENSOR_INIT, gx = FL_TENSOR_INIT, gw = FL_TENSOR_INIT;
    FlStatus st = FL_ERROR;
    if (alloc_col(e, op, &col, x, length) || (dx && kalloc_like(e, op, &gx, x)) ||
        (dfilter && kalloc_like(e, op, &gw, filter)))
        goto fail;
    if (T > 0 && N > 0) {
        if (x->dtype == FL_DT_FLOAT32)
            conv_bwd_f32(fl_tensor_data(x), off, nseq, T, D, start, length, fl_tensor_data(filter), N,
                         fl_tensor_data(dout), fl_tensor_data(&col), dx ? fl_tensor_data(&gx) : NULL,
                         dfilter ? fl_tensor_data(&gw) : NULL);
        else conv_bwd_f64(fl_tensor_data(x), off, nseq, T, D, start, length, fl_tensor_data(filter), N,
                          fl_tensor_data(dout), fl_tensor_data(&col), dx ? fl_tensor_data(&gx) : NULL,
                          dfilter ? fl_tensor_data(&gw) : NULL);
    }
    if (dx) kout(dx, &gx);
    if (dfilter) kout(dfilter, &gw);
    st = FL_OK;
fail:
    fl_tensor_fini(&col);
    fl_tensor_fini(&gx);
    fl_tensor_fini(&gw);
    return st;
}

/* ---- sequence_expand ---- */

/* X's units (rows when xoff is NULL, else sequences) must number ny. */
static FlStatus check_expand(FlErr *e, const char *op, const FlTensor *x, const int64_t *xoff, int64_t nx,
                             int64_t ny) {
    if (khas(e, op, "X", x)) return FL_ERROR;
    if (x->ndim < 1) return fl_err(e, "%s: X %s must have at least one dim", op, fl_tensor_shape(x).s);
    if (!xoff && x->ne[0] != ny)
        return fl_err(e, "%s: X %s has %lld rows but Y holds %lld sequences (one row of X per sequence)", op,
                      fl_tensor_shape(x).s, (long long)x->ne[0], (long long)ny);
    if (xoff && xoff[nx] != x->ne[0])
        return fl_err(e, "%s: X's offsets end at %lld but X %s has %lld rows", op, (long long)xoff[nx],
                      fl_tensor_shape(x).s, (long long)x->ne[0]);
    if (xoff && nx != ny)
        return fl_err(e, "%s: X holds %lld sequences but Y %lld (one sequence of X per sequence of Y)", op,
                      (long long)nx, (long long)ny);
    return FL_OK;
}

/* The rows of the expanded X and the number of copies of its units (sequences or rows). */
static FlStatus expanded_rows(FlErr *e, const char *op, const FlTensor *x, const int64_t *xoff, const int64_t *yoff,
                              int64_t ny, int64_t *rows, int64_t *copies) {
    *rows = *copies = 0;
    for (int64_t i = 0; i < ny; i++) {
        int64_t rep = yoff[i + 1] - yoff[i], n = xoff ? xoff[i + 1] - xoff[i] : 1;
        if (n > 0 && rep > (INT64_MAX - *rows) / n)
            return fl_err(e, "%s: the expanded X %s would have more than 2^63 rows", op, fl_tensor_shape(x).s);
        *rows += rep * n;
        *copies += rep;
    }
    return FL_OK;
}

FlStatus fl_kernel_sequence_expand(FlErr *e, const FlTensor *x, const int64_t *xoff, int64_t nx, const int64_t *yoff,
                                   int64_t ny, FlTensor *out, FlTensor *out_off) {
    const char *op = "sequence_expand";
    int64_t rows, copies;
    if (check_expand(e, op, x, xoff, nx, ny) || kwant(e, op, "Out", out) ||
        expanded_rows(e, op, x, xoff, yoff, ny, &rows, &copies))
        return FL_ERROR;
    int64_t ne[FL_MAX_DIMS];
    memcpy(ne, x->ne, sizeof ne);
    ne[0] = rows;
    FlTensor o = FL_TENSOR_INIT, lo = FL_TENSOR_INIT;
    if (kalloc_raw(e, op, &o, x->dtype, x->ndim, ne)) return FL_ERROR;
    if (xoff && out_off && kalloc(e, op, &lo, FL_DT_INT64, 1, (int64_t[]){copies + 1})) {
        fl_tensor_fini(&o);
        return FL_ERROR;
    }
    size_t rb = x->ne[0] ? fl_tensor_nbytes(x) / (size_t)x->ne[0] : 0;
    const char *src = fl_tensor_data(x);
    char *dst = fl_tensor_data(&o);
    int64_t *lod = xoff && out_off ? fl_tensor_data(&lo) : NULL, k = 0;
    for (int64_t i = 0; i < ny; i++) {
        int64_t xb = xoff ? xoff[i] : i, n = xoff ? xoff[i + 1] - xoff[i] : 1;
        for (int64_t r = 0; r < yoff[i + 1] - yoff[i]; r++) {
            memcpy(dst, src + (size_t)xb * rb, (size_t)n * rb);
            dst += (size_t)n * rb;
            if (lod) lod[k + 1] = lod[k] + n;
            k++;
        }
    }
    kout(out, &o);
    if (lod) kout(out_off, &lo);
    return FL_OK;
}

FlStatus fl_kernel_sequence_expand_grad(FlErr *e, const FlTensor *x, const int64_t *xoff, int64_t nx,
                                        const int64_t *yoff,
                                        int64_t ny, const FlTensor *dout, FlTensor *dx) {
    const char *op = "sequence_expand_grad";
    if (!dx) return FL_OK;
    if (check_expand(e, op, x, xoff, nx, ny) || kneed_float(e, op, "X", x) ||
        ksame_dtype(e, op, "X", x, "Out@GRAD", dout))
        return FL_ERROR;
    int64_t D = row_len(x), rows, copies;
    if (expanded_rows(e, op, x, xoff, yoff, ny, &rows, &copies)) return FL_ERROR;
    if (dout->ndim < 1 || dout->ne[0] != rows || fl_tensor_numel(dout) != rows * D)
        return fl_err(e, "%s: Out@GRAD %s must have the %lld rows of the expanded X %s", op, fl_tensor_shape(dout).s,
                      (long long)rows, fl_tensor_shape(x).s);
    FlTensor g = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &g, x)) return FL_ERROR;
    if (x->dtype == FL_DT_FLOAT32) expand_bwd_f32(fl_tensor_data(dout), xoff, yoff, ny, D, fl_tensor_data(&g));
    else expand_bwd_f64(fl_tensor_data(dout), xoff, yoff, ny, D, fl_tensor_data(&g));
    kout(dx, &g);
    return FL_OK;
}

/* ---- sequence_mask ---- */

FlStatus fl_kernel_sequence_mask(FlErr *e, const FlTensor *x, int64_t maxlen, FlDType dtype, FlTensor *out) {
    const char *op = "sequence_mask";
    if (khas(e, op, "X", x) || kwant(e, op, "Y", out)) return FL_ERROR;
    if (!kis_int(x->dtype))
        return fl_err(e, "%s: X %s has dtype %s; int32 or int64 lengths expected", op, fl_tensor_shape(x).s,
                      fl_dtype_name(x->dtype));
    if (x->ndim >= FL_MAX_DIMS)
        return fl_err(e, "%s: X %s has too many dims to add one", op, fl_tensor_shape(x).s);
    int64_t n = fl_tensor_numel(x);
    if (maxlen < 0) {
        maxlen = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t v = fl_tensor_get_int(x, i);
            maxlen = v > maxlen ? v : maxlen;
        }
    }
    int64_t ne[FL_MAX_DIMS];
    memcpy(ne, x->ne, sizeof ne);
    ne[x->ndim] = maxlen;
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc(e, op, &o, dtype, x->ndim + 1, ne)) return FL_ERROR;
    for (int64_t i = 0; i < n; i++) {
        int64_t len = fl_tensor_get_int(x, i);
        for (int64_t j = 0; j < maxlen && j < len; j++) fl_tensor_set(&o, i * maxlen + j, 1);
    }
    kout(out, &o);
    return FL_OK;
}
