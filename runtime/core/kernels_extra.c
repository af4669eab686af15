/* kernels_extra.c: kernels the kernel library does not have yet (fill_zeros_like, lookup_table
 * and its gradient, softmax over any axis). Same conventions as runtime/kernels/kernels.h:
 * outputs are replaced whole, errors start with the op name and leave outputs untouched. */
#include <string.h>

#include "runtime/core/exec_impl.h"

FlStatus fl_kernel_fill_zeros_like(FlErr *e, const FlTensor *x, FlTensor *out) {
    return fl_tensor_alloc_like(e, out, x, x->dtype);
}

static bool is_float(FlDType t) { return t == FL_DT_FLOAT32 || t == FL_DT_FLOAT64; }

static FlStatus check_lookup(FlErr *e, const char *op, const FlTensor *w, const FlTensor *ids,
                             int64_t *n) {
    if (w->ndim != 2 || !is_float(w->dtype))
        return fl_err(e, "%s: W %s must be a float32/float64 matrix [V, D]", op, fl_tensor_shape(w).s);
    if (ids->dtype != FL_DT_INT64 && ids->dtype != FL_DT_INT32)
        return fl_err(e, "%s: Ids %s must be int64 or int32, found %s", op, fl_tensor_shape(ids).s,
                      fl_dtype_name(ids->dtype));
    if (!(ids->ndim == 1 || (ids->ndim == 2 && ids->ne[1] == 1)))
        return fl_err(e, "%s: Ids %s must be [N, 1] or [N]", op, fl_tensor_shape(ids).s);
    *n = ids->ne[0];
    for (int64_t i = 0; i < *n; i++) {
        int64_t id = (int64_t)fl_tensor_get(ids, i);
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
    int64_t d = w->ne[1], ne[2] = {n, d};
    FlTensor r = FL_TENSOR_INIT;
    if (fl_tensor_alloc(e, &r, w->dtype, 2, ne)) return FL_ERROR;
    size_t es = fl_dtype_size(w->dtype), row = (size_t)d * es;
    const unsigned char *src = fl_tensor_data(w);
    unsigned char *dst = fl_tensor_data(&r);
    for (int64_t i = 0; i < n; i++) {
        int64_t id = (int64_t)fl_tensor_get(ids, i);
        if (id == padding_idx) continue; /* zeros */
        memcpy(dst + (size_t)i * row, src + (size_t)id * row, row);
    }
    fl_tensor_fini(out);
    *out = r;
    return FL_OK;
}

FlStatus fl_kernel_lookup_table_grad(FlErr *e, const FlTensor *w, const FlTensor *ids,
                                     const FlTensor *dout, int64_t padding_idx, FlTensor *dw) {
    int64_t n;
    if (check_lookup(e, "lookup_table_grad", w, ids, &n)) return FL_ERROR;
    int64_t d = w->ne[1];
    if (dout->dtype != w->dtype || dout->ndim != 2 || dout->ne[0] != n || dout->ne[1] != d)
        return fl_err(e, "lookup_table_grad: Out@GRAD %s must be [%lld, %lld] %s", fl_tensor_shape(dout).s,
                      (long long)n, (long long)d, fl_dtype_name(w->dtype));
    FlTensor r = FL_TENSOR_INIT;
    if (fl_tensor_alloc_like(e, &r, w, w->dtype)) return FL_ERROR;
    for (int64_t i = 0; i < n; i++) {
        int64_t id = (int64_t)fl_tensor_get(ids, i);
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

/* The permutation swapping `axis` with the last dim (its own inverse). */
static int swap_perm(FlErr *e, const char *op, const FlTensor *x, int axis, int *perm) {
    int nd = x->ndim;
    if (nd < 1) return fl_err(e, "%s: X %s must have rank >= 1", op, fl_tensor_shape(x).s), -1;
    int a = axis < 0 ? axis + nd : axis;
    if (a < 0 || a >= nd)
        return fl_err(e, "%s: axis %d is outside X %s", op, axis, fl_tensor_shape(x).s), -1;
    for (int i = 0; i < nd; i++) perm[i] = i;
    perm[a] = nd - 1;
    perm[nd - 1] = a;
    return a;
}

FlStatus fl_kernel_softmax_axis(FlErr *e, const FlTensor *x, int axis, FlTensor *out) {
    int perm[FL_MAX_DIMS];
    int a = swap_perm(e, "softmax", x, axis, perm);
    if (a < 0) return FL_ERROR;
    if (a == x->ndim - 1) return fl_kernel_softmax(e, x, out);
    FlTensor t = FL_TENSOR_INIT, s = FL_TENSOR_INIT;
    FlStatus st = FL_ERROR;
    if (fl_kernel_transpose(e, x, perm, x->ndim, &t) || fl_kernel_softmax(e, &t, &s) ||
        fl_kernel_transpose(e, &s, perm, x->ndim, out))
        goto done;
    st = FL_OK;
done:
    fl_tensor_fini(&t);
    fl_tensor_fini(&s);
    return st;
}

FlStatus fl_kernel_softmax_axis_grad(FlErr *e, const FlTensor *out, const FlTensor *dout, int axis,
                                     FlTensor *dx) {
    int perm[FL_MAX_DIMS];
    int a = swap_perm(e, "softmax_grad", out, axis, perm);
    if (a < 0) return FL_ERROR;
    if (a == out->ndim - 1) return fl_kernel_softmax_grad(e, out, dout, dx);
    FlTensor to = FL_TENSOR_INIT, td = FL_TENSOR_INIT, g = FL_TENSOR_INIT;
    FlStatus st = FL_ERROR;
    if (fl_kernel_transpose(e, out, perm, out->ndim, &to) ||
        fl_kernel_transpose(e, dout, perm, out->ndim, &td) ||
        fl_kernel_softmax_grad(e, &to, &td, &g) || fl_kernel_transpose(e, &g, perm, out->ndim, dx))
        goto done;
    st = FL_OK;
done:
    fl_tensor_fini(&to);
    fl_tensor_fini(&td);
    fl_tensor_fini(&g);
    return st;
}
