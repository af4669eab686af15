/* index.c: the indexing, stacking, padding and reshaping layers: slice, crop, pad (block copies
 * between a tensor and a box inside a larger one), gather and scatter (rows of dim 0), expand,
 * stack / unstack, the squeeze / unsqueeze / flatten views, one_hot. Copies move bytes, so every
 * dtype goes through one path. */
#include "runtime/kernels/kernels_impl.h"
#include "runtime/kernels/kernels_layers.h"

static size_t esz(const FlTensor *t) { return fl_dtype_size(t->dtype); }

/* Copies the box of `size` (nd dims) at soff in src to doff in dst (both of rank nd, one dtype). */
static void box_copy(const FlTensor *src, const int64_t *soff, FlTensor *dst, const int64_t *doff,
                     const int64_t *size, int nd) {
    size_t es = esz(src);
    int64_t ss[FL_MAX_DIMS + 1], ds[FL_MAX_DIMS + 1];
    ss[nd] = ds[nd] = 1;
    for (int d = nd - 1; d >= 0; d--) {
        ss[d] = ss[d + 1] * src->ne[d];
        ds[d] = ds[d + 1] * dst->ne[d];
    }
    for (int d = 0; d < nd; d++)
        if (size[d] == 0) return;
    const char *sp = fl_tensor_data(src);
    char *dp = fl_tensor_data(dst);
    if (nd == 0) {
        memcpy(dp, sp, es);
        return;
    }
    int64_t idx[FL_MAX_DIMS] = {0}, row = size[nd - 1];
    for (;;) {
        int64_t so = 0, dof = 0;
        for (int d = 0; d < nd; d++) {
            so += (idx[d] + soff[d]) * ss[d + 1];
            dof += (idx[d] + doff[d]) * ds[d + 1];
        }
        memcpy(dp + (size_t)dof * es, sp + (size_t)so * es, (size_t)row * es);
        int d = nd - 2;
        for (; d >= 0; d--) {
            if (++idx[d] < size[d]) break;
            idx[d] = 0;
        }
        if (d < 0) return;
    }
}

static const int64_t ZEROS[FL_MAX_DIMS];

/* ---- slice, crop ---- */

/* The box of a slice: offsets and sizes per dim of x. */
static FlStatus slice_box(FlErr *e, const char *op, const FlTensor *x, const int64_t *axes, const int64_t *starts,
                          const int64_t *ends, int n, int64_t *off, int64_t *size) {
    bool seen[FL_MAX_DIMS] = {0};
    for (int d = 0; d < x->ndim; d++) off[d] = 0, size[d] = x->ne[d];
    for (int k = 0; k < n; k++) {
        int a = axes[k] < INT32_MIN || axes[k] > INT32_MAX ? -1 : kaxis((int)axes[k], x->ndim);
        if (a < 0) return fl_err(e, "%s: axis %lld is out of range for X %s", op, (long long)axes[k], fl_tensor_shape(x).s);
        if (seen[a]) return fl_err(e, "%s: axis %d is listed twice", op, a);
        seen[a] = true;
        int64_t dim = x->ne[a], s = starts[k], t = ends[k];
        if (s < 0) s = s < -dim ? 0 : s + dim;
        if (t < 0) t = t < -dim ? 0 : t + dim;
        if (s > dim) s = dim;
        if (t > dim) t = dim;
        if (t <= s)
            return fl_err(e, "%s: the slice [%lld:%lld] of dim %d of X %s is empty", op, (long long)starts[k],
                          (long long)ends[k], a, fl_tensor_shape(x).s);
        off[a] = s;
        size[a] = t - s;
    }
    return FL_OK;
}

/* Out = the box of x. */
static FlStatus take_box(FlErr *e, const char *op, const FlTensor *x, const int64_t *off, const int64_t *size,
                         FlTensor *out) {
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, op, &r, x->dtype, x->ndim, size)) return FL_ERROR;
    box_copy(x, off, &r, ZEROS, size, x->ndim);
    kout(out, &r);
    return FL_OK;
}

/* dX = zeros shaped like x with dout placed at off. */
static FlStatus place_box(FlErr *e, const char *op, const FlTensor *x, const FlTensor *dout, const int64_t *off,
                          FlTensor *dx) {
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &r, x)) return FL_ERROR;
    box_copy(dout, ZEROS, &r, off, dout->ne, x->ndim);
    kout(dx, &r);
    return FL_OK;
}

FlStatus fl_kernel_slice(FlErr *e, const FlTensor *x, const int64_t *axes, const int64_t *starts, const int64_t *ends,
                         int n, FlTensor *out) {
    if (khas(e, "slice", "Input", x)) return FL_ERROR;
    int64_t off[FL_MAX_DIMS], size[FL_MAX_DIMS];
    if (slice_box(e, "slice", x, axes, starts, ends, n, off, size)) return FL_ERROR;
    return take_box(e, "slice", x, off, size, out);
}

FlStatus fl_kernel_slice_grad(FlErr *e, const FlTensor *x, const FlTensor *dout, const int64_t *axes,
                              const int64_t *starts, const int64_t *ends, int n, FlTensor *dx) {
    const char *op = "slice_grad";
    if (khas(e, op, "Input", x) || ksame_dtype(e, op, "Input", x, "Out@GRAD", dout)) return FL_ERROR;
    int64_t off[FL_MAX_DIMS], size[FL_MAX_DIMS];
    if (slice_box(e, op, x, axes, starts, ends, n, off, size)) return FL_ERROR;
    if (dout->ndim != x->ndim || memcmp(dout->ne, size, sizeof(int64_t) * (size_t)x->ndim) != 0)
        return fl_err(e, "%s: Out@GRAD %s is not the slice's shape %s", op, fl_tensor_shape(dout).s,
                      fl_shape_str(x->ndim, size).s);
    if (!dx) return FL_OK;
    return place_box(e, op, x, dout, off, dx);
}

static FlStatus crop_box(FlErr *e, const char *op, const FlTensor *x, const int64_t *offsets, const int64_t *shape,
                         int64_t *off, int64_t *size) {
    for (int d = 0; d < x->ndim; d++) {
        off[d] = offsets ? offsets[d] : 0;
        size[d] = shape[d] > 0 ? shape[d] : x->ne[d] - off[d];
        if (off[d] < 0 || size[d] < 0 || off[d] > x->ne[d] || size[d] > x->ne[d] - off[d])
            return fl_err(e, "%s: a block of size %s at offsets %s does not fit in X %s", op,
                          fl_shape_str(x->ndim, shape).s, fl_shape_str(x->ndim, offsets ? offsets : ZEROS).s,
                          fl_tensor_shape(x).s);
    }
    return FL_OK;
}

FlStatus fl_kernel_crop(FlErr *e, const FlTensor *x, const int64_t *offsets, const int64_t *shape, int ndim,
                        FlTensor *out) {
    if (khas(e, "crop", "X", x)) return FL_ERROR;
    if (ndim != x->ndim)
        return fl_err(e, "crop: the shape %s and X %s differ in rank", fl_shape_str(ndim, shape).s, fl_tensor_shape(x).s);
    int64_t off[FL_MAX_DIMS], size[FL_MAX_DIMS];
    if (crop_box(e, "crop", x, offsets, shape, off, size)) return FL_ERROR;
    return take_box(e, "crop", x, off, size, out);
}

FlStatus fl_kernel_crop_grad(FlErr *e, const FlTensor *x, const FlTensor *dout, const int64_t *offsets, FlTensor *dx) {
    const char *op = "crop_grad";
    if (khas(e, op, "X", x) || ksame_dtype(e, op, "X", x, "Out@GRAD", dout)) return FL_ERROR;
    int64_t off[FL_MAX_DIMS], size[FL_MAX_DIMS];
    if (dout->ndim != x->ndim)
        return fl_err(e, "%s: Out@GRAD %s and X %s differ in rank", op, fl_tensor_shape(dout).s, fl_tensor_shape(x).s);
    if (crop_box(e, op, x, offsets, dout->ne, off, size)) return FL_ERROR;
    if (!dx) return FL_OK;
    return place_box(e, op, x, dout, off, dx);
}

/* ---- pad ---- */

static FlStatus pad_check(FlErr *e, const char *op, const FlTensor *x, const int64_t *p, int np, int64_t *before,
                          int64_t *big) {
    if (np != 2 * x->ndim)
        return fl_err(e, "%s: paddings must hold 2 values per dim of X %s, found %d", op, fl_tensor_shape(x).s, np);
    for (int d = 0; d < x->ndim; d++) {
        if (p[2 * d] < 0 || p[2 * d + 1] < 0 || p[2 * d] > INT32_MAX || p[2 * d + 1] > INT32_MAX)
            return fl_err(e, "%s: paddings of dim %d are %lld and %lld (expected 0 to 2^31)", op, d,
                          (long long)p[2 * d], (long long)p[2 * d + 1]);
        before[d] = p[2 * d];
        big[d] = x->ne[d] + p[2 * d] + p[2 * d + 1];
    }
    return FL_OK;
}

FlStatus fl_kernel_pad(FlErr *e, const FlTensor *x, const int64_t *paddings, int npaddings, double pad_value,
                       FlTensor *out) {
    if (kneed_num(e, "pad", "X", x)) return FL_ERROR;
    int64_t before[FL_MAX_DIMS], big[FL_MAX_DIMS];
    if (pad_check(e, "pad", x, paddings, npaddings, before, big)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (fl_kernel_fill_constant(e, x->ndim, big, pad_value, NULL, x->dtype, &r)) return FL_ERROR;
    box_copy(x, ZEROS, &r, before, x->ne, x->ndim);
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_pad_grad(FlErr *e, const FlTensor *x, const FlTensor *dout, const int64_t *paddings,
                            int npaddings, FlTensor *dx) {
    const char *op = "pad_grad";
    if (khas(e, op, "X", x) || ksame_dtype(e, op, "X", x, "Out@GRAD", dout)) return FL_ERROR;
    int64_t before[FL_MAX_DIMS], big[FL_MAX_DIMS];
    if (pad_check(e, op, x, paddings, npaddings, before, big)) return FL_ERROR;
    if (dout->ndim != x->ndim || memcmp(dout->ne, big, sizeof(int64_t) * (size_t)x->ndim) != 0)
        return fl_err(e, "%s: Out@GRAD %s is not the padded shape %s", op, fl_tensor_shape(dout).s,
                      fl_shape_str(x->ndim, big).s);
    if (!dx) return FL_OK;
    return take_box(e, op, dout, before, x->ne, dx);
}

/* ---- gather, scatter ---- */

static int64_t index_at(const FlTensor *t, int64_t i) {
    return t->dtype == FL_DT_INT32 ? ((const int32_t *)fl_tensor_data(t))[i] : ((const int64_t *)fl_tensor_data(t))[i];
}

/* Index [N] or [N, 1] of int32/int64, each in [0, rows): *n = N. */
static FlStatus index_check(FlErr *e, const char *op, const char *slot, const FlTensor *idx, int64_t rows, int64_t *n) {
    if (khas(e, op, slot, idx)) return FL_ERROR;
    if (!kis_int(idx->dtype))
        return fl_err(e, "%s: %s %s has dtype %s; int32 or int64 expected", op, slot, fl_tensor_shape(idx).s,
                      fl_dtype_name(idx->dtype));
    if (!(idx->ndim == 1 || (idx->ndim == 2 && idx->ne[1] == 1)))
        return fl_err(e, "%s: %s must have shape [N] or [N, 1], found %s", op, slot, fl_tensor_shape(idx).s);
    *n = idx->ne[0];
    for (int64_t i = 0; i < *n; i++) {
        int64_t v = index_at(idx, i);
        if (v < 0 || v >= rows)
            return fl_err(e, "%s: %s[%lld] is %lld, outside [0, %lld)", op, slot, (long long)i, (long long)v,
                          (long long)rows);
    }
    return FL_OK;
}

static FlStatus rows_of(FlErr *e, const char *op, const FlTensor *x) {
    if (khas(e, op, "X", x)) return FL_ERROR;
    if (x->ndim < 1) return fl_err(e, "%s: X %s has no rows", op, fl_tensor_shape(x).s);
    return FL_OK;
}

FlStatus fl_kernel_gather(FlErr *e, const FlTensor *x, const FlTensor *index, FlTensor *out) {
    int64_t n;
    if (rows_of(e, "gather", x) || index_check(e, "gather", "Index", index, x->ne[0], &n)) return FL_ERROR;
    int64_t ne[FL_MAX_DIMS];
    memcpy(ne, x->ne, sizeof ne);
    ne[0] = n;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, "gather", &r, x->dtype, x->ndim, ne)) return FL_ERROR;
    size_t row = (size_t)kprod(x->ne, 1, x->ndim) * esz(x);
    for (int64_t i = 0; i < n; i++)
        memcpy((char *)fl_tensor_data(&r) + (size_t)i * row, (const char *)fl_tensor_data(x) + (size_t)index_at(index, i) * row,
               row);
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_gather_grad(FlErr *e, const FlTensor *x, const FlTensor *index, const FlTensor *dout, FlTensor *dx) {
    const char *op = "gather_grad";
    int64_t n;
    if (rows_of(e, op, x) || kneed_float(e, op, "X", x) || index_check(e, op, "Index", index, x->ne[0], &n) ||
        ksame_dtype(e, op, "X", x, "Out@GRAD", dout))
        return FL_ERROR;
    int64_t w = kprod(x->ne, 1, x->ndim);
    if (fl_tensor_numel(dout) != n * w)
        return fl_err(e, "%s: Out@GRAD %s does not hold %lld rows of X %s", op, fl_tensor_shape(dout).s, (long long)n,
                      fl_tensor_shape(x).s);
    if (!dx) return FL_OK;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &r, x)) return FL_ERROR;
    for (int64_t i = 0; i < n; i++) {
        int64_t to = index_at(index, i) * w;
        for (int64_t j = 0; j < w; j++)
            fl_tensor_set(&r, to + j, fl_tensor_get(&r, to + j) + fl_tensor_get(dout, i * w + j));
    }
    kout(dx, &r);
    return FL_OK;
}

/* winner[i]: whether update i is the last one written to its row. */
static FlStatus scatter_check(FlErr *e, const char *op, const FlTensor *x, const FlTensor *ids,
                              const FlTensor *updates, bool **winner) {
    int64_t n;
    if (rows_of(e, op, x) || index_check(e, op, "Ids", ids, x->ne[0], &n) ||
        ksame_dtype(e, op, "X", x, "Updates", updates))
        return FL_ERROR;
    int64_t w = kprod(x->ne, 1, x->ndim);
    if (updates->ndim != x->ndim || updates->ne[0] != n || kprod(updates->ne, 1, updates->ndim) != w ||
        memcmp(updates->ne + 1, x->ne + 1, sizeof(int64_t) * (size_t)(x->ndim - 1)) != 0)
        return fl_err(e, "%s: Updates %s must hold one row of X %s per id (%lld)", op, fl_tensor_shape(updates).s,
                      fl_tensor_shape(x).s, (long long)n);
    *winner = calloc((size_t)(n ? n : 1), sizeof **winner);
    int64_t *last = malloc((size_t)(x->ne[0] ? x->ne[0] : 1) * sizeof *last);
    if (!*winner || !last) {
        free(*winner);
        free(last);
        return fl_err(e, "%s: out of memory", op);
    }
    for (int64_t r = 0; r < x->ne[0]; r++) last[r] = -1;
    for (int64_t i = 0; i < n; i++) last[index_at(ids, i)] = i;
    for (int64_t i = 0; i < n; i++) (*winner)[i] = last[index_at(ids, i)] == i;
    free(last);
    return FL_OK;
}

FlStatus fl_kernel_scatter(FlErr *e, const FlTensor *x, const FlTensor *ids, const FlTensor *updates, FlTensor *out) {
    bool *win;
    if (scatter_check(e, "scatter", x, ids, updates, &win)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (fl_tensor_copy(e, &r, x)) {
        free(win);
        return FL_ERROR;
    }
    size_t row = (size_t)kprod(x->ne, 1, x->ndim) * esz(x);
    for (int64_t i = 0; i < updates->ne[0]; i++)
        if (win[i])
            memcpy((char *)fl_tensor_data(&r) + (size_t)index_at(ids, i) * row,
                   (const char *)fl_tensor_data(updates) + (size_t)i * row, row);
    free(win);
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_scatter_grad(FlErr *e, const FlTensor *x, const FlTensor *ids, const FlTensor *updates,
                                const FlTensor *dout, FlTensor *dx, FlTensor *dupdates) {
    const char *op = "scatter_grad";
    bool *win;
    if (kneed_float(e, op, "X", x) || ksame(e, op, "X", x, "Out@GRAD", dout)) return FL_ERROR;
    if (scatter_check(e, op, x, ids, updates, &win)) return FL_ERROR;
    FlTensor rx = FL_TENSOR_INIT, ru = FL_TENSOR_INIT;
    FlStatus st = FL_OK;
    if (dx) st = fl_tensor_copy(e, &rx, dout);
    if (!st && dupdates) st = kalloc_like(e, op, &ru, updates);
    if (st) {
        fl_tensor_fini(&rx);
        free(win);
        return FL_ERROR;
    }
    int64_t w = kprod(x->ne, 1, x->ndim);
    size_t row = (size_t)w * esz(x);
    for (int64_t i = 0; i < updates->ne[0]; i++) {
        int64_t to = index_at(ids, i);
        if (dupdates && win[i])
            memcpy((char *)fl_tensor_data(&ru) + (size_t)i * row, (const char *)fl_tensor_data(dout) + (size_t)to * row, row);
        if (dx) memset((char *)fl_tensor_data(&rx) + (size_t)to * row, 0, row);
    }
    free(win);
    if (dx) kout(dx, &rx);
    if (dupdates) kout(dupdates, &ru);
    return FL_OK;
}

/* ---- expand ---- */

static FlStatus expand_check(FlErr *e, const char *op, const FlTensor *x, const int64_t *times, int n, int64_t *ne) {
    if (khas(e, op, "X", x)) return FL_ERROR;
    if (n != x->ndim)
        return fl_err(e, "%s: expand_times has %d values but X %s has %d dims", op, n, fl_tensor_shape(x).s, x->ndim);
    for (int d = 0; d < n; d++) {
        if (times[d] < 1 || times[d] > INT32_MAX)
            return fl_err(e, "%s: expand_times[%d] is %lld (expected >= 1)", op, d, (long long)times[d]);
        if (__builtin_mul_overflow(x->ne[d], times[d], &ne[d]))
            return fl_err(e, "%s: X %s expanded %lld times along dim %d is too large", op, fl_tensor_shape(x).s,
                          (long long)times[d], d);
    }
    int64_t total;
    return fl_shape_numel(e, n, ne, &total);
}

/* For each element of the expanded shape (ne), the X element it copies: calls f(i_out, i_x). */
#define EXPAND_WALK(x, ne, body)                                                                         \
    do {                                                                                                 \
        int nd_ = (x)->ndim;                                                                             \
        int64_t idx_[FL_MAX_DIMS] = {0}, xs_[FL_MAX_DIMS + 1];                                           \
        xs_[nd_] = 1;                                                                                    \
        for (int d_ = nd_ - 1; d_ >= 0; d_--) xs_[d_] = xs_[d_ + 1] * (x)->ne[d_];                       \
        int64_t total_ = kprod(ne, 0, nd_);                                                              \
        for (int64_t io = 0; io < total_; io++) {                                                        \
            int64_t ix = 0;                                                                              \
            for (int d_ = 0; d_ < nd_; d_++) ix += (idx_[d_] % (x)->ne[d_]) * xs_[d_ + 1];               \
            body;                                                                                        \
            for (int d_ = nd_ - 1; d_ >= 0; d_--) {                                                      \
                if (++idx_[d_] < (ne)[d_]) break;                                                        \
                idx_[d_] = 0;                                                                            \
            }                                                                                            \
        }                                                                                                \
    } while (0)

FlStatus fl_kernel_expand(FlErr *e, const FlTensor *x, const int64_t *times, int n, FlTensor *out) {
    int64_t ne[FL_MAX_DIMS];
    if (expand_check(e, "expand", x, times, n, ne)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, "expand", &r, x->dtype, x->ndim, ne)) return FL_ERROR;
    size_t es = esz(x);
    const char *src = fl_tensor_data(x);
    char *dst = fl_tensor_data(&r);
    EXPAND_WALK(x, ne, memcpy(dst + (size_t)io * es, src + (size_t)ix * es, es));
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_expand_grad(FlErr *e, const FlTensor *x, const FlTensor *dout, const int64_t *times, int n,
                               FlTensor *dx) {
    const char *op = "expand_grad";
    int64_t ne[FL_MAX_DIMS];
    if (expand_check(e, op, x, times, n, ne) || kneed_float(e, op, "X", x) ||
        ksame_dtype(e, op, "X", x, "Out@GRAD", dout))
        return FL_ERROR;
    if (dout->ndim != x->ndim || memcmp(dout->ne, ne, sizeof(int64_t) * (size_t)n) != 0)
        return fl_err(e, "%s: Out@GRAD %s is not the expanded shape %s", op, fl_tensor_shape(dout).s,
                      fl_shape_str(n, ne).s);
    if (!dx) return FL_OK;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &r, x)) return FL_ERROR;
    EXPAND_WALK(x, ne, fl_tensor_set(&r, ix, fl_tensor_get(&r, ix) + fl_tensor_get(dout, io)));
    kout(dx, &r);
    return FL_OK;
}

/* ---- stack, unstack ---- */

/* Y [outer, n, inner] <-> X_i [outer, inner]: to_y copies the X into Y, else Y into the X
 * (a NULL X_i is skipped, or zero-filled when zero_missing). */
static void stack_move(FlTensor *const *xs, int n, FlTensor *y, int64_t outer, int64_t inner, bool to_y) {
    size_t es = esz(y), row = (size_t)inner * es;
    char *yp = fl_tensor_data(y);
    for (int i = 0; i < n; i++) {
        char *xp = xs[i] ? fl_tensor_data(xs[i]) : NULL;
        for (int64_t o = 0; o < outer; o++) {
            char *yr = yp + ((size_t)o * (size_t)n + (size_t)i) * row;
            if (!xp) {
                if (to_y) memset(yr, 0, row);
                continue;
            }
            if (to_y) memcpy(yr, xp + (size_t)o * row, row);
            else memcpy(xp + (size_t)o * row, yr, row);
        }
    }
}

FlStatus fl_kernel_stack(FlErr *e, const FlTensor *const *xs, int n, int axis, FlTensor *out) {
    if (n < 1) return fl_err(e, "stack: no inputs");
    for (int i = 0; i < n; i++) {
        if (khas(e, "stack", "X", xs[i])) return FL_ERROR;
        if (i && (xs[i]->dtype != xs[0]->dtype || !fl_tensor_same_shape(xs[i], xs[0])))
            return fl_err(e, "stack: X[%d] is %s %s but X[0] is %s %s", i, fl_dtype_name(xs[i]->dtype),
                          fl_tensor_shape(xs[i]).s, fl_dtype_name(xs[0]->dtype), fl_tensor_shape(xs[0]).s);
    }
    const FlTensor *x = xs[0];
    if (x->ndim >= FL_MAX_DIMS) return fl_err(e, "stack: X %s has too many dims", fl_tensor_shape(x).s);
    int a = kaxis(axis, x->ndim + 1);
    if (a < 0) return fl_err(e, "stack: axis %d is out of range for inputs %s", axis, fl_tensor_shape(x).s);
    int64_t ne[FL_MAX_DIMS];
    for (int d = 0, k = 0; d <= x->ndim; d++) ne[d] = d == a ? n : x->ne[k++];
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, "stack", &r, x->dtype, x->ndim + 1, ne)) return FL_ERROR;
    stack_move((FlTensor *const *)xs, n, &r, kprod(x->ne, 0, a), kprod(x->ne, a, x->ndim), true);
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_unstack(FlErr *e, const FlTensor *x, int axis, FlTensor *const *outs, int n) {
    if (khas(e, "unstack", "X", x)) return FL_ERROR;
    int a = kaxis(axis, x->ndim);
    if (a < 0) return fl_err(e, "unstack: axis %d is out of range for X %s", axis, fl_tensor_shape(x).s);
    if (x->ne[a] != n)
        return fl_err(e, "unstack: %d outputs but dim %d of X %s has size %lld", n, a, fl_tensor_shape(x).s,
                      (long long)x->ne[a]);
    int64_t ne[FL_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < x->ndim; d++)
        if (d != a) ne[nd++] = x->ne[d];
    if (nd == 0) ne[nd++] = 1;
    FlTensor *tmp = calloc((size_t)(n ? n : 1), sizeof *tmp);
    FlTensor **ps = calloc((size_t)(n ? n : 1), sizeof *ps);
    if (!tmp || !ps) {
        free(tmp);
        free(ps);
        return fl_err(e, "unstack: out of memory");
    }
    FlStatus st = FL_OK;
    for (int i = 0; i < n; i++) {
        fl_tensor_init(&tmp[i]);
        if (outs[i] && !st) st = kalloc_raw(e, "unstack", &tmp[i], x->dtype, nd, ne);
        ps[i] = outs[i] ? &tmp[i] : NULL;
    }
    if (!st) stack_move(ps, n, (FlTensor *)x, kprod(x->ne, 0, a), kprod(x->ne, a + 1, x->ndim), false);
    for (int i = 0; i < n; i++) {
        if (!st && outs[i]) kout(outs[i], &tmp[i]);
        else fl_tensor_fini(&tmp[i]);
    }
    free(tmp);
    free(ps);
    return st;
}

FlStatus fl_kernel_unstack_grad(FlErr *e, const FlTensor *x, const FlTensor *const *douts, int n, int axis,
                                FlTensor *dx) {
    const char *op = "unstack_grad";
    if (kneed_float(e, op, "X", x)) return FL_ERROR;
    int a = kaxis(axis, x->ndim);
    if (a < 0 || x->ne[a] != n)
        return fl_err(e, "%s: %d output gradients for axis %d of X %s", op, n, axis, fl_tensor_shape(x).s);
    int64_t inner = kprod(x->ne, a + 1, x->ndim), outer = kprod(x->ne, 0, a);
    for (int i = 0; i < n; i++)
        if (douts[i] && (ksame_dtype(e, op, "X", x, "Y@GRAD", douts[i]) || fl_tensor_numel(douts[i]) != outer * inner))
            return fl_err(e, "%s: Y@GRAD[%d] %s is not a slice of X %s", op, i, fl_tensor_shape(douts[i]).s,
                          fl_tensor_shape(x).s);
    if (!dx) return FL_OK;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, op, &r, x)) return FL_ERROR;
    stack_move((FlTensor *const *)douts, n, &r, outer, inner, true);
    kout(dx, &r);
    return FL_OK;
}

/* ---- views: squeeze, unsqueeze, flatten ---- */

static FlStatus view_as(FlErr *e, const char *op, const FlTensor *x, int nd, const int64_t *ne, FlTensor *out) {
    if (nd < 1 || nd > FL_MAX_DIMS) return fl_err(e, "%s: the result would have %d dims (1 to %d)", op, nd, FL_MAX_DIMS);
    FlTensor r = FL_TENSOR_INIT;
    fl_tensor_ref(&r, x);
    r.ndim = nd;
    for (int d = 0; d < FL_MAX_DIMS; d++) r.ne[d] = d < nd ? ne[d] : 1;
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_squeeze(FlErr *e, const FlTensor *x, const int64_t *axes, int n, FlTensor *out) {
    if (khas(e, "squeeze", "X", x)) return FL_ERROR;
    bool drop[FL_MAX_DIMS] = {0};
    for (int k = 0; k < n; k++) {
        int a = axes[k] < INT32_MIN || axes[k] > INT32_MAX ? -1 : kaxis((int)axes[k], x->ndim);
        if (a < 0) return fl_err(e, "squeeze: axis %lld is out of range for X %s", (long long)axes[k], fl_tensor_shape(x).s);
        if (x->ne[a] != 1)
            return fl_err(e, "squeeze: dim %d of X %s has size %lld; only a size-1 dim can be squeezed", a,
                          fl_tensor_shape(x).s, (long long)x->ne[a]);
        drop[a] = true;
    }
    int64_t ne[FL_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < x->ndim; d++)
        if (!(n ? drop[d] : x->ne[d] == 1)) ne[nd++] = x->ne[d];
    if (nd == 0) ne[nd++] = 1;
    return view_as(e, "squeeze", x, nd, ne, out);
}

FlStatus fl_kernel_unsqueeze(FlErr *e, const FlTensor *x, const int64_t *axes, int n, FlTensor *out) {
    if (khas(e, "unsqueeze", "X", x)) return FL_ERROR;
    int64_t ne[FL_MAX_DIMS];
    int nd = x->ndim;
    memcpy(ne, x->ne, sizeof ne);
    for (int k = 0; k < n; k++) {
        if (nd == FL_MAX_DIMS) return fl_err(e, "unsqueeze: the result would have more than %d dims", FL_MAX_DIMS);
        int64_t a = axes[k] < 0 ? axes[k] + nd + 1 : axes[k];
        if (a < 0 || a > nd)
            return fl_err(e, "unsqueeze: axis %lld is out of range for a result of rank %d", (long long)axes[k], nd + 1);
        memmove(&ne[a + 1], &ne[a], sizeof(int64_t) * (size_t)(nd - a));
        ne[a] = 1;
        nd++;
    }
    return view_as(e, "unsqueeze", x, nd, ne, out);
}

FlStatus fl_kernel_flatten(FlErr *e, const FlTensor *x, int axis, FlTensor *out) {
    if (khas(e, "flatten", "X", x)) return FL_ERROR;
    if (axis < 0 || axis > x->ndim)
        return fl_err(e, "flatten: axis %d is out of range 0..%d for X %s", axis, x->ndim, fl_tensor_shape(x).s);
    int64_t ne[2] = {kprod(x->ne, 0, axis), kprod(x->ne, axis, x->ndim)};
    return view_as(e, "flatten", x, 2, ne, out);
}

/* ---- one_hot ---- */

FlStatus fl_kernel_one_hot(FlErr *e, const FlTensor *x, int64_t depth, FlTensor *out) {
    if (khas(e, "one_hot", "X", x)) return FL_ERROR;
    if (!kis_int(x->dtype))
        return fl_err(e, "one_hot: X %s has dtype %s; int32 or int64 expected", fl_tensor_shape(x).s,
                      fl_dtype_name(x->dtype));
    if (x->ndim < 1 || x->ne[x->ndim - 1] != 1)
        return fl_err(e, "one_hot: X must have shape [..., 1], found %s", fl_tensor_shape(x).s);
    if (depth < 1 || depth > INT32_MAX) return fl_err(e, "one_hot: depth must be >= 1, found %lld", (long long)depth);
    int64_t ne[FL_MAX_DIMS];
    memcpy(ne, x->ne, sizeof ne);
    ne[x->ndim - 1] = depth;
    int64_t n = fl_tensor_numel(x);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = index_at(x, i);
        if (v < 0 || v >= depth)
            return fl_err(e, "one_hot: X[%lld] is %lld, outside [0, %lld)", (long long)i, (long long)v, (long long)depth);
    }
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc(e, "one_hot", &r, FL_DT_FLOAT32, x->ndim, ne)) return FL_ERROR;
    float *o = fl_tensor_data(&r);
    for (int64_t i = 0; i < n; i++) o[i * depth + index_at(x, i)] = 1;
    kout(out, &r);
    return FL_OK;
}
