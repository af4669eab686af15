/* reduce_minmax.c: reduce_max, reduce_min and reduce_prod and their gradients. Each X element
 * is mapped to the output element it reduces into (an index table built once per call), so the
 * three reductions and their gradients are single passes over X in memory order. */
#include "runtime/kernels/kernels_impl.h"
#include "runtime/kernels/kernels_layers.h"

#include <math.h>

typedef enum { R_MAX, R_MIN, R_PROD } RKind;

static const char *const RNAMES[] = {"reduce_max", "reduce_min", "reduce_prod"};
static const char *const RGNAMES[] = {"reduce_max_grad", "reduce_min_grad", "reduce_prod_grad"};

/* The output shape (ondim, one) and, per X element, its output index (*map, malloc'd). */
static FlStatus rmap(FlErr *e, const char *op, const FlTensor *x, const int *dims, int ndims, bool keep_dim,
                     bool reduce_all, int *ondim, int64_t *one, int64_t **map) {
    bool red[FL_MAX_DIMS] = {0};
    if (reduce_all || ndims == 0) {
        for (int i = 0; i < x->ndim; i++) red[i] = true;
    } else {
        for (int k = 0; k < ndims; k++) {
            int a = kaxis(dims[k], x->ndim);
            if (a < 0) return fl_err(e, "%s: dim %d is out of range for X %s", op, dims[k], fl_tensor_shape(x).s);
            if (red[a]) return fl_err(e, "%s: dim %d is listed twice", op, dims[k]);
            red[a] = true;
        }
    }
    int64_t ostride[FL_MAX_DIMS] = {0}, full[FL_MAX_DIMS];
    int64_t s = 1;
    for (int i = x->ndim - 1; i >= 0; i--) {
        full[i] = red[i] ? 1 : x->ne[i];
        ostride[i] = red[i] ? 0 : s;
        s *= full[i];
    }
    *ondim = 0;
    for (int i = 0; i < x->ndim; i++)
        if (!red[i] || keep_dim) one[(*ondim)++] = full[i];
    if (*ondim == 0) one[(*ondim)++] = 1;
    int64_t n = fl_tensor_numel(x);
    *map = malloc((size_t)(n ? n : 1) * sizeof **map);
    if (!*map) return fl_err(e, "%s: out of memory", op);
    int64_t idx[FL_MAX_DIMS] = {0}, o = 0;
    for (int64_t i = 0; i < n; i++) {
        (*map)[i] = o;
        for (int d = x->ndim - 1; d >= 0; d--) { /* next multi-index, keeping o in step */
            idx[d]++;
            o += ostride[d];
            if (idx[d] < x->ne[d]) break;
            o -= ostride[d] * idx[d];
            idx[d] = 0;
        }
    }
    return FL_OK;
}

static FlStatus rfwd(FlErr *e, RKind k, const FlTensor *x, const int *dims, int ndims, bool keep_dim,
                     bool reduce_all, FlTensor *out) {
    const char *op = RNAMES[k];
    if (k == R_PROD ? kneed_float(e, op, "X", x) : kneed_num(e, op, "X", x)) return FL_ERROR;
    int ondim;
    int64_t one[FL_MAX_DIMS], *map;
    if (rmap(e, op, x, dims, ndims, keep_dim, reduce_all, &ondim, one, &map)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc(e, op, &r, x->dtype, ondim, one)) {
        free(map);
        return FL_ERROR;
    }
    int64_t n = fl_tensor_numel(x), m = fl_tensor_numel(&r);
    if (n == 0 && k != R_PROD && m > 0) {
        free(map);
        fl_tensor_fini(&r);
        return fl_err(e, "%s: X %s is empty: no %s", op, fl_tensor_shape(x).s, k == R_MAX ? "maximum" : "minimum");
    }
    bool *seen = calloc((size_t)(m ? m : 1), 1);
    if (!seen) {
        free(map);
        fl_tensor_fini(&r);
        return fl_err(e, "%s: out of memory", op);
    }
    if (k == R_PROD)
        for (int64_t i = 0; i < m; i++) fl_tensor_set(&r, i, 1);
    if (x->dtype == FL_DT_INT64 && k != R_PROD) { /* int64 exactly (doubles would round above 2^53) */
        const int64_t *xs = fl_tensor_data(x);
        int64_t *o = fl_tensor_data(&r);
        for (int64_t i = 0; i < n; i++) {
            int64_t j = map[i];
            if (!seen[j] || (k == R_MAX ? xs[i] > o[j] : xs[i] < o[j])) o[j] = xs[i];
            seen[j] = true;
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            int64_t j = map[i];
            double v = fl_tensor_get(x, i), cur = fl_tensor_get(&r, j);
            if (k == R_PROD) fl_tensor_set(&r, j, cur * v);
            else if (!seen[j] || (k == R_MAX ? v > cur : v < cur) || isnan(v)) fl_tensor_set(&r, j, v);
            seen[j] = true;
        }
    }
    free(seen);
    free(map);
    kout(out, &r);
    return FL_OK;
}

static FlStatus rbwd(FlErr *e, RKind k, const FlTensor *x, const FlTensor *out, const FlTensor *dout, const int *dims,
                     int ndims, bool keep_dim, bool reduce_all, FlTensor *dx) {
    const char *op = RGNAMES[k];
    if (kneed_float(e, op, "X", x) || ksame_dtype(e, op, "X", x, "Out", out) ||
        ksame(e, op, "Out", out, "Out@GRAD", dout))
        return FL_ERROR;
    int ondim;
    int64_t one[FL_MAX_DIMS], *map;
    if (rmap(e, op, x, dims, ndims, keep_dim, reduce_all, &ondim, one, &map)) return FL_ERROR;
    int64_t n = fl_tensor_numel(x), m = kprod(one, 0, ondim);
    if (fl_tensor_numel(out) != m) {
        free(map);
        return fl_err(e, "%s: Out %s does not match the reduced shape %s of X %s", op, fl_tensor_shape(out).s,
                      fl_shape_str(ondim, one).s, fl_tensor_shape(x).s);
    }
    if (!dx) {
        free(map);
        return FL_OK;
    }
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &r, x)) {
        free(map);
        return FL_ERROR;
    }
    if (k != R_PROD) {
        for (int64_t i = 0; i < n; i++)
            if (fl_tensor_get(x, i) == fl_tensor_get(out, map[i])) fl_tensor_set(&r, i, fl_tensor_get(dout, map[i]));
    } else {
        /* the product of the others: Out / X, or (X == 0) the product recomputed without X */
        for (int64_t i = 0; i < n; i++) {
            double v = fl_tensor_get(x, i), others;
            if (v != 0) {
                others = fl_tensor_get(out, map[i]) / v;
            } else {
                others = 1;
                for (int64_t j = 0; j < n; j++)
                    if (j != i && map[j] == map[i]) others *= fl_tensor_get(x, j);
            }
            fl_tensor_set(&r, i, fl_tensor_get(dout, map[i]) * others);
        }
    }
    free(map);
    kout(dx, &r);
    return FL_OK;
}

FlStatus fl_kernel_reduce_max(FlErr *e, const FlTensor *x, const int *dims, int ndims, bool keep_dim,
                              bool reduce_all, FlTensor *out) {
    return rfwd(e, R_MAX, x, dims, ndims, keep_dim, reduce_all, out);
}
FlStatus fl_kernel_reduce_min(FlErr *e, const FlTensor *x, const int *dims, int ndims, bool keep_dim,
                              bool reduce_all, FlTensor *out) {
    return rfwd(e, R_MIN, x, dims, ndims, keep_dim, reduce_all, out);
}
FlStatus fl_kernel_reduce_prod(FlErr *e, const FlTensor *x, const int *dims, int ndims, bool keep_dim,
                               bool reduce_all, FlTensor *out) {
    return rfwd(e, R_PROD, x, dims, ndims, keep_dim, reduce_all, out);
}
FlStatus fl_kernel_reduce_max_grad(FlErr *e, const FlTensor *x, const FlTensor *out, const FlTensor *dout,
                                   const int *dims, int ndims, bool keep_dim, bool reduce_all, FlTensor *dx) {
    return rbwd(e, R_MAX, x, out, dout, dims, ndims, keep_dim, reduce_all, dx);
}
FlStatus fl_kernel_reduce_min_grad(FlErr *e, const FlTensor *x, const FlTensor *out, const FlTensor *dout,
                                   const int *dims, int ndims, bool keep_dim, bool reduce_all, FlTensor *dx) {
    return rbwd(e, R_MIN, x, out, dout, dims, ndims, keep_dim, reduce_all, dx);
}
FlStatus fl_kernel_reduce_prod_grad(FlErr *e, const FlTensor *x, const FlTensor *out, const FlTensor *dout,
                                    const int *dims, int ndims, bool keep_dim, bool reduce_all, FlTensor *dx) {
    return rbwd(e, R_PROD, x, out, dout, dims, ndims, keep_dim, reduce_all, dx);
}
