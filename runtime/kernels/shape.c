/* shape.c: concat, split, reshape, transpose, argmax, top_k, accuracy, increment, lookup_table.
 * The layout ops move bytes and work for every dtype; a tensor is viewed as
 * [outer, dim(axis), inner] around the axis they act on. */
#include "runtime/kernels/kernels_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double rd(const void *p, FlDType dt, int64_t i) {
    switch (dt) {
    case FL_DT_FLOAT32: return ((const float *)p)[i];
    case FL_DT_FLOAT64: return ((const double *)p)[i];
    case FL_DT_INT32: return ((const int32_t *)p)[i];
    case FL_DT_INT64: return (double)((const int64_t *)p)[i];
    case FL_DT_UINT8:
    case FL_DT_BOOL: return ((const uint8_t *)p)[i];
    case FL_DT_INT8: return ((const int8_t *)p)[i];
    case FL_DT_FLOAT16: return fl_half_to_double(((const uint16_t *)p)[i]);
    case FL_DT_COUNT: break;
    }
    FL_UNREACHABLE();
}

/* Copies src[.., start:start+len, ..] (along axis) into dst[.., dstart:dstart+len, ..]. */
static void copy_slab(const FlTensor *src, int axis, int64_t start, FlTensor *dst, int64_t dstart,
                      int64_t len) {
    size_t es = fl_dtype_size(src->dtype);
    int64_t outer = kprod(src->ne, 0, axis);
    size_t inner = (size_t)kprod(src->ne, axis + 1, src->ndim) * es;
    const char *s = fl_tensor_data(src);
    char *d = fl_tensor_data(dst);
    size_t srow = (size_t)src->ne[axis] * inner, drow = (size_t)dst->ne[axis] * inner;
    if (!len || !inner) return;
    for (int64_t o = 0; o < outer; o++)
        memcpy(d + (size_t)o * drow + (size_t)dstart * inner, s + (size_t)o * srow + (size_t)start * inner,
               (size_t)len * inner);
}

/* ---- concat ---- */

static FlStatus concat_check(FlErr *e, const char *op, const FlTensor *const *xs, int n, int axis,
                             int *ax, int64_t *total) {
    if (n < 1) return fl_err(e, "%s: at least one input is needed", op);
    if (khas(e, op, "X[0]", xs[0])) return FL_ERROR;
    const FlTensor *x0 = xs[0];
    *ax = kaxis(axis, x0->ndim);
    if (*ax < 0) return fl_err(e, "%s: axis %d is out of range for X[0] %s", op, axis, fl_tensor_shape(x0).s);
    *total = 0;
    for (int k = 0; k < n; k++) {
        if (khas(e, op, "X[i] (one of them)", xs[k])) return FL_ERROR;
        if (ksame_dtype(e, op, "X[0]", x0, "another input", xs[k])) return FL_ERROR;
        bool ok = xs[k]->ndim == x0->ndim;
        for (int i = 0; ok && i < x0->ndim; i++) ok = i == *ax || xs[k]->ne[i] == x0->ne[i];
        if (!ok)
            return fl_err(e, "%s: X[0] %s and X[%d] %s differ outside axis %d", op,
                          fl_tensor_shape(x0).s, k, fl_tensor_shape(xs[k]).s, *ax);
        *total += xs[k]->ne[*ax];
    }
    return FL_OK;
}

FlStatus fl_kernel_concat(FlErr *e, const FlTensor *const *xs, int n, int axis, FlTensor *out) {
    int ax;
    int64_t total;
    if (concat_check(e, "concat", xs, n, axis, &ax, &total)) return FL_ERROR;
    int64_t ne[FL_MAX_DIMS];
    memcpy(ne, xs[0]->ne, sizeof ne);
    ne[ax] = total;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, "concat", &r, xs[0]->dtype, xs[0]->ndim, ne)) return FL_ERROR; /* the slabs fill it */
    int64_t at = 0;
    for (int k = 0; k < n; k++) {
        copy_slab(xs[k], ax, 0, &r, at, xs[k]->ne[ax]);
        at += xs[k]->ne[ax];
    }
    kout(out, &r);
    return FL_OK;
}

/* A new tensor holding x[.., start:start+len, ..] along axis. */
static FlStatus slice(FlErr *e, const char *op, const FlTensor *x, int axis, int64_t start,
                      int64_t len, FlTensor *out) {
    int64_t ne[FL_MAX_DIMS];
    memcpy(ne, x->ne, sizeof ne);
    ne[axis] = len;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, op, &r, x->dtype, x->ndim, ne)) return FL_ERROR;
    copy_slab(x, axis, start, &r, 0, len); /* fills it */
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_concat_grad(FlErr *e, const FlTensor *const *xs, int n, const FlTensor *dout,
                               int axis, FlTensor *const *dxs) {
    const char *op = "concat_grad";
    int ax;
    int64_t total;
    if (concat_check(e, op, xs, n, axis, &ax, &total)) return FL_ERROR;
    if (khas(e, op, "Out@GRAD", dout)) return FL_ERROR;
    bool ok = dout->ndim == xs[0]->ndim && dout->ne[ax] == total;
    for (int i = 0; ok && i < dout->ndim; i++) ok = i == ax || dout->ne[i] == xs[0]->ne[i];
    if (!ok)
        return fl_err(e, "%s: Out@GRAD %s does not match the concatenation of the inputs (X[0] %s, "
                         "%lld along axis %d)", op, fl_tensor_shape(dout).s,
                      fl_tensor_shape(xs[0]).s, (long long)total, ax);
    /* all outputs are built first, then committed, so a failure leaves every output untouched */
    FlTensor tmp[64];
    FlTensor *rs = n <= 64 ? tmp : fl_xcalloc((size_t)n, sizeof *rs);
    for (int k = 0; k < n; k++) fl_tensor_init(&rs[k]);
    FlStatus st = FL_OK;
    int64_t at = 0;
    for (int k = 0; k < n && !st; k++) {
        if (dxs[k]) st = slice(e, op, dout, ax, at, xs[k]->ne[ax], &rs[k]);
        at += xs[k]->ne[ax];
    }
    for (int k = 0; k < n; k++) {
        if (!st && dxs[k]) kout(dxs[k], &rs[k]);
        else fl_tensor_fini(&rs[k]);
    }
    if (rs != tmp) free(rs);
    return st;
}

/* ---- split ---- */

static FlStatus split_sizes(FlErr *e, const char *op, const FlTensor *x, int axis, int num,
                            const int64_t *sections, int nsections, int nouts, int *ax,
                            int64_t *sizes) {
    *ax = kaxis(axis, x->ndim);
    if (*ax < 0) return fl_err(e, "%s: axis %d is out of range for X %s", op, axis, fl_tensor_shape(x).s);
    int64_t dim = x->ne[*ax];
    if (nsections == 0) {
        if (num < 1 || num != nouts)
            return fl_err(e, "%s: num (%d) must be >= 1 and equal the number of outputs (%d)", op,
                          num, nouts);
        if (dim % num)
            return fl_err(e, "%s: X %s: dim %d (%lld) does not split into %d equal parts", op,
                          fl_tensor_shape(x).s, *ax, (long long)dim, num);
        for (int i = 0; i < num; i++) sizes[i] = dim / num;
        return FL_OK;
    }
    if (nsections != nouts)
        return fl_err(e, "%s: %d sections but %d outputs", op, nsections, nouts);
    int infer = -1;
    int64_t sum = 0;
    for (int i = 0; i < nsections; i++) {
        sizes[i] = sections[i];
        if (sections[i] == -1 && infer < 0) infer = i;
        else if (sections[i] < 0)
            return fl_err(e, "%s: section %d is %lld; sizes must be >= 0 with at most one -1", op,
                          i, (long long)sections[i]);
        else sum += sections[i];
    }
    if (infer >= 0) {
        if (sum > dim)
            return fl_err(e, "%s: X %s: the sections add up to %lld, more than dim %d (%lld)", op,
                          fl_tensor_shape(x).s, (long long)sum, *ax, (long long)dim);
        sizes[infer] = dim - sum;
    } else if (sum != dim) {
        return fl_err(e, "%s: X %s: the sections add up to %lld but dim %d is %lld", op,
                      fl_tensor_shape(x).s, (long long)sum, *ax, (long long)dim);
    }
    return FL_OK;
}

FlStatus fl_kernel_split(FlErr *e, const FlTensor *x, int axis, int num, const int64_t *sections,
                         int nsections, FlTensor *const *outs, int nouts) {
    if (khas(e, "split", "X", x)) return FL_ERROR;
    if (nouts < 1) return fl_err(e, "split: at least one output is needed");
    int ax;
    int64_t *sizes = fl_xcalloc((size_t)nouts, sizeof *sizes);
    FlTensor *rs = fl_xcalloc((size_t)nouts, sizeof *rs);
    FlStatus st = split_sizes(e, "split", x, axis, num, sections, nsections, nouts, &ax, sizes);
    int64_t at = 0;
    for (int k = 0; k < nouts; k++) fl_tensor_init(&rs[k]);
    for (int k = 0; k < nouts && !st; k++) {
        st = slice(e, "split", x, ax, at, sizes[k], &rs[k]);
        at += sizes[k];
    }
    for (int k = 0; k < nouts; k++) {
        if (!st) kout(outs[k], &rs[k]);
        else fl_tensor_fini(&rs[k]);
    }
    free(rs);
    free(sizes);
    return st;
}

FlStatus fl_kernel_split_grad(FlErr *e, const FlTensor *x, const FlTensor *const *douts,
                              int nouts, int axis, const int64_t *sections, int nsections,
                              FlTensor *dx) {
    const char *op = "split_grad";
    if (khas(e, op, "X", x)) return FL_ERROR;
    if (nouts < 1) return fl_err(e, "%s: at least one output gradient slot is needed", op);
    int ax;
    int64_t *sizes = fl_xcalloc((size_t)nouts, sizeof *sizes);
    FlStatus st = split_sizes(e, op, x, axis, nsections ? 0 : nouts, sections, nsections, nouts,
                              &ax, sizes);
    FlTensor r = FL_TENSOR_INIT;
    if (!st) st = kalloc_like(e, op, &r, x);
    int64_t at = 0;
    for (int k = 0; k < nouts && !st; k++) {
        const FlTensor *g = douts[k];
        if (g) {
            bool ok = g->dtype == x->dtype && g->ndim == x->ndim;
            for (int i = 0; ok && i < x->ndim; i++) ok = g->ne[i] == (i == ax ? sizes[k] : x->ne[i]);
            if (!ok) st = fl_err(e, "%s: Out@GRAD[%d] %s (%s) does not match part %d of X %s (%s)",
                                 op, k, fl_tensor_shape(g).s, fl_dtype_name(g->dtype), k,
                                 fl_tensor_shape(x).s, fl_dtype_name(x->dtype));
            else copy_slab(g, ax, 0, &r, at, sizes[k]);
        }
        at += sizes[k];
    }
    free(sizes);
    if (st) {
        fl_tensor_fini(&r);
        return FL_ERROR;
    }
    kout(dx, &r);
    return FL_OK;
}

/* ---- reshape ---- */

FlStatus fl_kernel_reshape(FlErr *e, const FlTensor *x, const int64_t *shape, int ndim,
                           FlTensor *out) {
    if (khas(e, "reshape", "X", x)) return FL_ERROR;
    if (ndim < 1 || ndim > FL_MAX_DIMS)
        return fl_err(e, "reshape: the shape has %d dims; 1 to %d are supported", ndim, FL_MAX_DIMS);
    int64_t ne[FL_MAX_DIMS], known = 1;
    int infer = -1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0) {
            if (i >= x->ndim)
                return fl_err(e, "reshape: X %s: shape %s copies dim %d (0), which X does not have",
                              fl_tensor_shape(x).s, fl_shape_str(ndim, shape).s, i);
            ne[i] = x->ne[i];
        } else if (shape[i] == -1) {
            if (infer >= 0)
                return fl_err(e, "reshape: X %s: shape %s has more than one -1",
                              fl_tensor_shape(x).s, fl_shape_str(ndim, shape).s);
            infer = i;
            ne[i] = 1;
        } else if (shape[i] < 0) {
            return fl_err(e, "reshape: X %s: shape %s has a negative size", fl_tensor_shape(x).s,
                          fl_shape_str(ndim, shape).s);
        } else {
            ne[i] = shape[i];
        }
        if (i != infer) {
            if (ne[i] && known > INT64_MAX / ne[i])
                return fl_err(e, "reshape: shape %s is too large", fl_shape_str(ndim, shape).s);
            known *= ne[i];
        }
    }
    int64_t n = fl_tensor_numel(x);
    if (infer >= 0) {
        if (known == 0 || n % known)
            return fl_err(e, "reshape: X %s (%lld elements) cannot be reshaped to %s", fl_tensor_shape(x).s,
                          (long long)n, fl_shape_str(ndim, shape).s);
        ne[infer] = n / known;
        known = n;
    }
    if (known != n)
        return fl_err(e, "reshape: X %s has %lld elements but shape %s has %lld", fl_tensor_shape(x).s,
                      (long long)n, fl_shape_str(ndim, shape).s, (long long)known);
    return fl_tensor_view(e, out, x, 0, ndim, ne);
}

FlStatus fl_kernel_reshape_grad(FlErr *e, const FlTensor *x, const FlTensor *dout, FlTensor *dx) {
    if (khas(e, "reshape_grad", "X", x) || khas(e, "reshape_grad", "Out@GRAD", dout)) return FL_ERROR;
    if (fl_tensor_numel(x) != fl_tensor_numel(dout) || x->dtype != dout->dtype)
        return fl_err(e, "reshape_grad: X %s and Out@GRAD %s differ in size or dtype",
                      fl_tensor_shape(x).s, fl_tensor_shape(dout).s);
    if (!dx) return FL_OK;
    return fl_tensor_view(e, dx, dout, 0, x->ndim, x->ne);
}

/* ---- transpose ---- */

FlStatus fl_kernel_transpose(FlErr *e, const FlTensor *x, const int *perm, int ndim, FlTensor *out) {
    if (khas(e, "transpose", "X", x)) return FL_ERROR;
    bool seen[FL_MAX_DIMS] = {false};
    bool ok = ndim == x->ndim;
    for (int i = 0; ok && i < ndim; i++) {
        ok = perm[i] >= 0 && perm[i] < ndim && !seen[perm[i]];
        if (ok) seen[perm[i]] = true;
    }
    if (!ok) {
        char buf[128] = "";
        size_t m = 0;
        for (int i = 0; i < ndim && i < FL_MAX_DIMS && m < sizeof buf - 16; i++)
            m += (size_t)snprintf(buf + m, sizeof buf - m, "%s%d", i ? ", " : "", perm[i]);
        return fl_err(e, "transpose: axis [%s] is not a permutation of the %d dims of X %s", buf,
                      x->ndim, fl_tensor_shape(x).s);
    }
    int64_t ne[FL_MAX_DIMS], xs[FL_MAX_DIMS], st[FL_MAX_DIMS];
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        xs[i] = s;
        s *= x->ne[i];
    }
    for (int i = 0; i < ndim; i++) {
        ne[i] = x->ne[perm[i]];
        st[i] = xs[perm[i]];
    }
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc(e, "transpose", &r, x->dtype, ndim, ne)) return FL_ERROR;
    int64_t n = fl_tensor_numel(&r), idx[FL_MAX_DIMS] = {0}, off = 0;
    size_t es = fl_dtype_size(x->dtype);
    const char *src = fl_tensor_data(x);
    char *dst = fl_tensor_data(&r);
    for (int64_t i = 0; i < n; i++) {
        switch (es) {
        case 1: dst[i] = src[off]; break;
        case 4: ((uint32_t *)dst)[i] = ((const uint32_t *)src)[off]; break;
        case 8: ((uint64_t *)dst)[i] = ((const uint64_t *)src)[off]; break;
        default: FL_UNREACHABLE();
        }
        for (int d = ndim - 1; d >= 0; d--) {
            off += st[d];
            if (++idx[d] < ne[d]) break;
            off -= st[d] * ne[d];
            idx[d] = 0;
        }
    }
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_transpose_grad(FlErr *e, const FlTensor *dout, const int *perm, int ndim,
                                  FlTensor *dx) {
    int inv[FL_MAX_DIMS];
    if (ndim < 0 || ndim > FL_MAX_DIMS)
        return fl_err(e, "transpose_grad: %d dims are not supported", ndim);
    for (int i = 0; i < ndim; i++) inv[i] = -1;
    for (int i = 0; i < ndim; i++)
        if (perm[i] >= 0 && perm[i] < ndim) inv[perm[i]] = i;
    FlTensor r = FL_TENSOR_INIT;
    if (fl_kernel_transpose(e, dout, inv, ndim, &r)) return FL_ERROR;
    kout(dx, &r);
    return FL_OK;
}

/* ---- argmax, top_k, accuracy ---- */

FlStatus fl_kernel_argmax(FlErr *e, const FlTensor *x, int axis, FlTensor *out) {
    if (kneed_num(e, "argmax", "X", x)) return FL_ERROR;
    int ax = kaxis(axis, x->ndim);
    if (ax < 0) return fl_err(e, "argmax: axis %d is out of range for X %s", axis, fl_tensor_shape(x).s);
    if (x->ne[ax] == 0) return fl_err(e, "argmax: X %s is empty along axis %d", fl_tensor_shape(x).s, ax);
    int64_t ne[FL_MAX_DIMS];
    int nd = kdims_without(x, ax, ne);
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc(e, "argmax", &r, FL_DT_INT64, nd, ne)) return FL_ERROR;
    int64_t outer = kprod(x->ne, 0, ax), d = x->ne[ax], inner = kprod(x->ne, ax + 1, x->ndim);
    const void *p = fl_tensor_data(x);
    int64_t *o = fl_tensor_data(&r);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t c = 0; c < inner; c++) {
            int64_t base = a * d * inner + c, best = 0;
            double bv = rd(p, x->dtype, base);
            for (int64_t j = 1; j < d; j++) {
                double v = rd(p, x->dtype, base + j * inner);
                if (v > bv) bv = v, best = j;
            }
            o[a * inner + c] = best;
        }
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_top_k(FlErr *e, const FlTensor *x, int k, FlTensor *out, FlTensor *indices) {
    if (kneed_num(e, "top_k", "X", x) || kwant(e, "top_k", "Indices", indices)) return FL_ERROR;
    if (x->ndim < 1) return fl_err(e, "top_k: X %s must have rank 1 or more", fl_tensor_shape(x).s);
    int64_t d = x->ne[x->ndim - 1];
    if (k < 1 || k > d)
        return fl_err(e, "top_k: k (%d) must be in [1, %lld] for X %s", k, (long long)d,
                      fl_tensor_shape(x).s);
    int64_t ne[FL_MAX_DIMS];
    memcpy(ne, x->ne, sizeof ne);
    ne[x->ndim - 1] = k;
    FlTensor ro = FL_TENSOR_INIT, ri = FL_TENSOR_INIT;
    if (kalloc(e, "top_k", &ro, x->dtype, x->ndim, ne)) return FL_ERROR;
    if (kalloc(e, "top_k", &ri, FL_DT_INT64, x->ndim, ne)) {
        fl_tensor_fini(&ro);
        return FL_ERROR;
    }
    int64_t rows = fl_tensor_numel(x) / d;
    const void *p = fl_tensor_data(x);
    int64_t *ix = fl_tensor_data(&ri);
    double *vals = fl_xmalloc(sizeof(double) * (size_t)k);
    for (int64_t r = 0; r < rows; r++) {
        int64_t *ri_row = ix + r * k, m = 0; /* m entries kept, sorted by value desc, index asc */
        for (int64_t j = 0; j < d; j++) {
            double v = rd(p, x->dtype, r * d + j);
            if (m == k && !(v > vals[k - 1])) continue;
            int64_t pos = m < k ? m++ : k - 1;
            while (pos > 0 && v > vals[pos - 1]) {
                vals[pos] = vals[pos - 1];
                ri_row[pos] = ri_row[pos - 1];
                pos--;
            }
            vals[pos] = v;
            ri_row[pos] = j;
        }
        for (int64_t j = 0; j < k; j++) { /* copy the values exactly, not through double */
            size_t es = fl_dtype_size(x->dtype);
            memcpy((char *)fl_tensor_data(&ro) + (size_t)(r * k + j) * es,
                   (const char *)p + (size_t)(r * d + ri_row[j]) * es, es);
        }
    }
    free(vals);
    if (out) kout(out, &ro);
    else fl_tensor_fini(&ro);
    kout(indices, &ri);
    return FL_OK;
}

FlStatus fl_kernel_top_k_grad(FlErr *e, const FlTensor *x, const FlTensor *indices,
                              const FlTensor *dout, FlTensor *dx) {
    const char *op = "top_k_grad";
    if (kneed_float(e, op, "X", x) || ksame_dtype(e, op, "X", x, "Out@GRAD", dout)) return FL_ERROR;
    if (khas(e, op, "Indices", indices)) return FL_ERROR;
    if (indices->dtype != FL_DT_INT64 || !fl_tensor_same_shape(indices, dout) ||
        dout->ndim != x->ndim)
        return fl_err(e, "%s: Indices %s (int64) and Out@GRAD %s must have one shape, X %s's with "
                         "the last dim k", op, fl_tensor_shape(indices).s, fl_tensor_shape(dout).s,
                      fl_tensor_shape(x).s);
    if (!dx) return FL_OK;
    int64_t d = x->ne[x->ndim - 1], k = dout->ne[dout->ndim - 1];
    int64_t rows = k ? fl_tensor_numel(dout) / k : 0;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &r, x)) return FL_ERROR;
    const int64_t *ix = fl_tensor_data(indices);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < k; j++) {
            int64_t c = ix[i * k + j];
            if (c < 0 || c >= d) {
                fl_tensor_fini(&r);
                return fl_err(e, "%s: index %lld in row %lld is outside [0, %lld)", op, (long long)c,
                              (long long)i, (long long)d);
            }
            double g = fl_tensor_get(dout, i * k + j);
            fl_tensor_set(&r, i * d + c, fl_tensor_get(&r, i * d + c) + g);
        }
    kout(dx, &r);
    return FL_OK;
}

FlStatus fl_kernel_accuracy(FlErr *e, const FlTensor *out, const FlTensor *indices,
                            const FlTensor *label, FlTensor *accuracy, FlTensor *correct,
                            FlTensor *total) {
    const char *op = "accuracy";
    if (khas(e, op, "Indices", indices) || khas(e, op, "Label", label)) return FL_ERROR;
    if (!kis_int(indices->dtype) || !kis_int(label->dtype))
        return fl_err(e, "%s: Indices %s (%s) and Label %s (%s) must be int64", op,
                      fl_tensor_shape(indices).s, fl_dtype_name(indices->dtype),
                      fl_tensor_shape(label).s, fl_dtype_name(label->dtype));
    if (indices->ndim != 2)
        return fl_err(e, "%s: Indices %s must be [N, k]", op, fl_tensor_shape(indices).s);
    int64_t n = indices->ne[0], k = indices->ne[1];
    if (fl_tensor_numel(label) != n || label->ndim < 1 || label->ne[0] != n)
        return fl_err(e, "%s: Indices %s and Label %s: Label must be [N, 1] with N = %lld", op,
                      fl_tensor_shape(indices).s, fl_tensor_shape(label).s, (long long)n);
    if (out && !fl_tensor_same_shape(out, indices))
        return fl_err(e, "%s: Out %s and Indices %s must have the same shape", op,
                      fl_tensor_shape(out).s, fl_tensor_shape(indices).s);
    int64_t good = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t l = fl_tensor_get_int(label, i);
        for (int64_t j = 0; j < k; j++)
            if (fl_tensor_get_int(indices, i * k + j) == l) {
                good++;
                break;
            }
    }
    int64_t one = 1;
    FlTensor ra = FL_TENSOR_INIT, rc = FL_TENSOR_INIT, rt = FL_TENSOR_INIT;
    if (kalloc(e, op, &ra, FL_DT_FLOAT32, 1, &one) || kalloc(e, op, &rc, FL_DT_INT64, 1, &one) ||
        kalloc(e, op, &rt, FL_DT_INT64, 1, &one)) {
        fl_tensor_fini(&ra);
        fl_tensor_fini(&rc);
        fl_tensor_fini(&rt);
        return FL_ERROR;
    }
    ((float *)fl_tensor_data(&ra))[0] = n ? (float)good / (float)n : 0.0f;
    ((int64_t *)fl_tensor_data(&rc))[0] = good;
    ((int64_t *)fl_tensor_data(&rt))[0] = n;
    kout(accuracy, &ra);
    kout(correct, &rc);
    kout(total, &rt);
    return FL_OK;
}

/* ---- increment ---- */

FlStatus fl_kernel_increment(FlErr *e, const FlTensor *x, double step, FlTensor *out) {
    if (kneed_num(e, "increment", "X", x)) return FL_ERROR;
    if (fl_tensor_numel(x) != 1)
        return fl_err(e, "increment: X %s must hold exactly one element", fl_tensor_shape(x).s);
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_like(e, "increment", &r, x)) return FL_ERROR;
    void *p = fl_tensor_data(&r);
    const void *s = fl_tensor_data(x);
    switch (x->dtype) {
    case FL_DT_FLOAT32: *(float *)p = *(const float *)s + (float)step; break;
    case FL_DT_FLOAT64: *(double *)p = *(const double *)s + step; break;
    case FL_DT_INT32: *(int32_t *)p = (int32_t)kadd_i(*(const int32_t *)s, fl_sat_i32(step)); break;
    case FL_DT_INT64: *(int64_t *)p = kadd_i(*(const int64_t *)s, fl_sat_i64(step)); break;
    case FL_DT_FLOAT16:
    case FL_DT_INT8:
    case FL_DT_UINT8:
    case FL_DT_BOOL:
    case FL_DT_COUNT: FL_UNREACHABLE();
    }
    kout(out, &r);
    return FL_OK;
}

/* ---- lookup_table: rows of W gathered by Ids ---- */

static FlStatus check_lookup(FlErr *e, const char *op, const FlTensor *w, const FlTensor *ids,
                             int64_t *n) {
    if (w->ndim != 2 || !kis_float(w->dtype))
        return fl_err(e, "%s: W %s must be a float32/float64 matrix [V, D]", op, fl_tensor_shape(w).s);
    if (ids->dtype != FL_DT_INT64 && ids->dtype != FL_DT_INT32)
        return fl_err(e, "%s: Ids %s must be int64 or int32, found %s", op, fl_tensor_shape(ids).s,
                      fl_dtype_name(ids->dtype));
    if (ids->ndim < 1 || ids->ndim >= FL_MAX_DIMS)
        return fl_err(e, "%s: Ids %s must have 1 to %d dims", op, fl_tensor_shape(ids).s, FL_MAX_DIMS - 1);
    *n = fl_tensor_numel(ids);
    for (int64_t i = 0; i < *n; i++) {
        int64_t id = fl_tensor_get_int(ids, i);
        if (id < 0 || id >= w->ne[0])
            return fl_err(e, "%s: Ids %s row %lld is %lld, outside [0, %lld) (W %s)", op,
                          fl_tensor_shape(ids).s, (long long)i, (long long)id,
                          (long long)w->ne[0], fl_tensor_shape(w).s);
    }
    return FL_OK;
}

FlStatus fl_kernel_lookup_table(FlErr *e, const FlTensor *w, const FlTensor *ids,
                                int64_t padding_idx, FlTensor *out) {
    int64_t n;
    if (check_lookup(e, "lookup_table", w, ids, &n)) return FL_ERROR;
    /* Ids [..., 1] -> [..., D]; Ids [...] -> [..., D] (Fluid's rule: a last dim of 1 is the id) */
    int64_t d = w->ne[1], ne[FL_MAX_DIMS];
    int nd = ids->ndim > 1 && ids->ne[ids->ndim - 1] == 1 ? ids->ndim - 1 : ids->ndim;
    memcpy(ne, ids->ne, (size_t)nd * sizeof ne[0]);
    ne[nd++] = d;
    FlTensor r = FL_TENSOR_INIT;
    if (fl_tensor_alloc(e, &r, w->dtype, nd, ne)) return FL_ERROR;
    size_t es = fl_dtype_size(w->dtype), row = (size_t)d * es;
    const unsigned char *src = fl_tensor_data(w);
    unsigned char *dst = fl_tensor_data(&r);
    for (int64_t i = 0; i < n; i++) {
        int64_t id = fl_tensor_get_int(ids, i);
        if (id == padding_idx) continue; /* zeros */
        memcpy(dst + (size_t)i * row, src + (size_t)id * row, row);
    }
    fl_tensor_fini(out);
    *out = r;
    return FL_OK;
}

/* The checks of both gradients: check_lookup's, and dOut holds one row of W's width per id. */
static FlStatus check_lookup_grad(FlErr *e, const FlTensor *w, const FlTensor *ids, const FlTensor *dout, int64_t *n) {
    if (check_lookup(e, "lookup_table_grad", w, ids, n)) return FL_ERROR;
    int64_t d = w->ne[1];
    if (dout->dtype != w->dtype || dout->ndim < 2 || dout->ne[dout->ndim - 1] != d ||
        fl_tensor_numel(dout) != *n * d)
        return fl_err(e, "lookup_table_grad: Out@GRAD %s must hold %lld rows of %lld %s (one per id)",
                      fl_tensor_shape(dout).s, (long long)*n, (long long)d, fl_dtype_name(w->dtype));
    return FL_OK;
}

FlStatus fl_kernel_lookup_table_grad(FlErr *e, const FlTensor *w, const FlTensor *ids,
                                     const FlTensor *dout, int64_t padding_idx, FlTensor *dw) {
    int64_t n, d = w->ne[1];
    if (check_lookup_grad(e, w, ids, dout, &n)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (fl_tensor_alloc_like(e, &r, w, w->dtype)) return FL_ERROR;
    for (int64_t i = 0; i < n; i++) {
        int64_t id = fl_tensor_get_int(ids, i);
        if (id == padding_idx) continue;
        if (w->dtype == FL_DT_FLOAT32) {
            float *g = (float *)fl_tensor_data(&r) + id * d;
            const float *s = (const float *)fl_tensor_data(dout) + i * d;
            for (int64_t j = 0; j < d; j++) g[j] += s[j];
        } else {
            double *g = (double *)fl_tensor_data(&r) + id * d;
            const double *s = (const double *)fl_tensor_data(dout) + i * d;
            for (int64_t j = 0; j < d; j++) g[j] += s[j];
        }
    }
    fl_tensor_fini(dw);
    *dw = r;
    return FL_OK;
}

FlStatus fl_kernel_lookup_table_grad_rows(FlErr *e, const FlTensor *w, const FlTensor *ids,
                                          const FlTensor *dout, int64_t padding_idx, FlSelectedRows *dw) {
    int64_t n, d = w->ne[1];
    if (check_lookup_grad(e, w, ids, dout, &n)) return FL_ERROR;
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) kept += fl_tensor_get_int(ids, i) != padding_idx;
    FlSelectedRows r;
    fl_rows_init(&r);
    r.height = w->ne[0];
    int64_t ne[2] = {kept, d};
    if (fl_tensor_alloc_uninit(e, &r.rows, FL_DT_INT64, 1, &kept) ||
        fl_tensor_alloc_uninit(e, &r.value, w->dtype, 2, ne)) {
        fl_rows_fini(&r);
        return FL_ERROR;
    }
    size_t row = (size_t)d * fl_dtype_size(w->dtype);
    int64_t *rows = fl_tensor_data(&r.rows), k = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t id = fl_tensor_get_int(ids, i);
        if (id == padding_idx) continue; /* the padding row gets no gradient */
        rows[k] = id;
        memcpy((char *)fl_tensor_data(&r.value) + (size_t)k * row, (const char *)fl_tensor_data(dout) + (size_t)i * row, row);
        k++;
    }
    fl_rows_fini(dw);
    *dw = r;
    return FL_OK;
}
