/* seqshape.c: sequence_concat, sequence_reshape, sequence_slice, sequence_pad / sequence_unpad
 * and sequence_enumerate (kernels_seqshape.h).
 *
 * Every op here moves whole rows (the elements below dim 0) from one place to another, so the
 * forward kernels copy bytes and take any dtype, and each gradient copies dOut's rows back to
 * where they came from into zeros. The offsets are checked again here (cheaply, in one pass) so
 * that a caller's mistake is an error, never a copy out of bounds.
 */
#include <stdio.h>

#include "runtime/kernels/kernels_impl.h"
#include "runtime/kernels/kernels_seqshape.h"

/* Elements and bytes of one row of t (t has rank >= 1). */
static int64_t row_elems(const FlTensor *t) {
    int64_t n = 1;
    for (int i = 1; i < t->ndim; i++) n *= t->ne[i];
    return n;
}
static size_t row_bytes(const FlTensor *t) { return (size_t)row_elems(t) * fl_dtype_size(t->dtype); }
static char *row_at(const FlTensor *t, int64_t r, size_t rb) { return (char *)fl_tensor_data(t) + (size_t)r * rb; }

/* Copies n rows of rb bytes (n may be 0, where an empty tensor may have no data). */
static void copy_rows(const FlTensor *dst, int64_t dr, const FlTensor *src, int64_t sr, int64_t n, size_t rb) {
    if (n > 0 && rb > 0) memcpy(row_at(dst, dr, rb), row_at(src, sr, rb), (size_t)n * rb);
}

/* An int32 or int64 element. */
static int64_t ival(const FlTensor *t, int64_t i) {
    const void *p = fl_tensor_data(t);
    return t->dtype == FL_DT_INT32 ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

static FlStatus need_rows(FlErr *e, const char *op, const char *slot, const FlTensor *t, int min_rank) {
    if (khas(e, op, slot, t)) return FL_ERROR;
    if (t->ndim < min_rank)
        return fl_err(e, "%s: %s %s must have rank >= %d", op, slot, fl_tensor_shape(t).s, min_rank);
    return FL_OK;
}

/* t: int32 or int64 with n elements. */
static FlStatus need_ints(FlErr *e, const char *op, const char *slot, const FlTensor *t, int64_t n) {
    if (khas(e, op, slot, t)) return FL_ERROR;
    if (!kis_int(t->dtype))
        return fl_err(e, "%s: %s %s is %s; int32 or int64 expected", op, slot, fl_tensor_shape(t).s,
                      fl_dtype_name(t->dtype));
    if (fl_tensor_numel(t) != n)
        return fl_err(e, "%s: %s %s must hold %lld values (one per sequence)", op, slot, fl_tensor_shape(t).s,
                      (long long)n);
    return FL_OK;
}

/* off cuts the rows of t (the caller's contract, checked so a mistake cannot copy out of
 * bounds). */
static FlStatus lod_cuts(FlErr *e, const char *op, const char *slot, const int64_t *off, int64_t nseq,
                         const FlTensor *t) {
    bool ok = nseq >= 0 && off && off[0] == 0 && off[nseq] == t->ne[0];
    for (int64_t i = 0; ok && i < nseq; i++) ok = off[i + 1] >= off[i];
    return ok ? FL_OK : fl_err(e, "%s: the offsets of %s do not cut its %lld rows", op, slot, (long long)t->ne[0]);
}

/* r = a new tensor (zeros when zero, else uninitialised). */
static FlStatus new_tensor(FlErr *e, const char *op, FlTensor *r, FlDType dt, int nd, const int64_t *ne, bool zero) {
    FlErr sub;
    FlStatus s = zero ? fl_tensor_alloc(&sub, r, dt, nd, ne) : fl_tensor_alloc_uninit(&sub, r, dt, nd, ne);
    return s ? fl_err(e, "%s: %s", op, sub.msg) : FL_OK;
}

/* lod = int64 [nseq + 1], 0 then the running sum of len[i]; *o its data. */
static FlStatus new_offsets(FlErr *e, const char *op, FlTensor *lod, int64_t nseq, int64_t **o) {
    if (new_tensor(e, op, lod, FL_DT_INT64, 1, (int64_t[]){nseq + 1}, true)) return FL_ERROR;
    *o = fl_tensor_data(lod);
    return FL_OK;
}

/* dout must be dtype dt with numel elements. */
static FlStatus need_grad(FlErr *e, const char *op, const FlTensor *dout, FlDType dt, int64_t numel) {
    if (khas(e, op, "Out@GRAD", dout)) return FL_ERROR;
    if (dout->dtype != dt || fl_tensor_numel(dout) != numel)
        return fl_err(e, "%s: Out@GRAD %s %s must be %s with %lld elements", op, fl_tensor_shape(dout).s,
                      fl_dtype_name(dout->dtype), fl_dtype_name(dt), (long long)numel);
    return FL_OK;
}

/* ---- sequence_concat ---- */

/* The xs: one dtype, rows of one shape, each cut by its offsets; *rows = their total rows. */
static FlStatus concat_inputs(FlErr *e, const FlTensor *const *xs, const int64_t *const *offs, int n, int64_t nseq,
                              int64_t *rows) {
    static const char op[] = "sequence_concat";
    if (n < 1) return fl_err(e, "%s: no inputs", op);
    *rows = 0;
    for (int k = 0; k < n; k++) {
        char slot[32];
        snprintf(slot, sizeof slot, "X[%d]", k);
        if (need_rows(e, op, slot, xs[k], 1) || lod_cuts(e, op, slot, offs[k], nseq, xs[k])) return FL_ERROR;
        bool same = xs[k]->dtype == xs[0]->dtype && xs[k]->ndim == xs[0]->ndim;
        for (int d = 1; same && d < xs[0]->ndim; d++) same = xs[k]->ne[d] == xs[0]->ne[d];
        if (!same)
            return fl_err(e, "%s: X[%d] %s %s and X[0] %s %s differ in dtype or row shape", op, k,
                          fl_tensor_shape(xs[k]).s, fl_dtype_name(xs[k]->dtype), fl_tensor_shape(xs[0]).s,
                          fl_dtype_name(xs[0]->dtype));
        *rows += xs[k]->ne[0];
    }
    return FL_OK;
}

FlStatus fl_kernel_sequence_concat(FlErr *e, const FlTensor *const *xs, const int64_t *const *offs, int n,
                                   int64_t nseq, FlTensor *out, FlTensor *out_lod) {
    int64_t rows, ne[FL_MAX_DIMS], *o;
    if (concat_inputs(e, xs, offs, n, nseq, &rows)) return FL_ERROR;
    memcpy(ne, xs[0]->ne, sizeof ne);
    ne[0] = rows;
    FlTensor r = FL_TENSOR_INIT, lod = FL_TENSOR_INIT;
    if (new_tensor(e, "sequence_concat", &r, xs[0]->dtype, xs[0]->ndim, ne, false)) return FL_ERROR;
    if (new_offsets(e, "sequence_concat", &lod, nseq, &o)) {
        fl_tensor_fini(&r);
        return FL_ERROR;
    }
    size_t rb = row_bytes(xs[0]);
    int64_t at = 0;
    for (int64_t i = 0; i < nseq; i++) {
        for (int k = 0; k < n; k++) {
            int64_t len = offs[k][i + 1] - offs[k][i];
            copy_rows(&r, at, xs[k], offs[k][i], len, rb);
            at += len;
        }
        o[i + 1] = at;
    }
    kout(out, &r);
    kout(out_lod, &lod);
    return FL_OK;
}

FlStatus fl_kernel_sequence_concat_grad(FlErr *e, const FlTensor *const *xs, const int64_t *const *offs, int n,
                                        int64_t nseq, const FlTensor *dout, FlTensor *const *dxs) {
    int64_t rows;
    if (concat_inputs(e, xs, offs, n, nseq, &rows) ||
        need_grad(e, "sequence_concat_grad", dout, xs[0]->dtype, rows * row_elems(xs[0])))
        return FL_ERROR;
    FlTensor *r = fl_xcalloc((size_t)n, sizeof *r);
    FlStatus st = FL_OK;
    for (int k = 0; k < n && !st; k++) {
        fl_tensor_init(&r[k]);
        if (dxs[k]) st = new_tensor(e, "sequence_concat_grad", &r[k], xs[k]->dtype, xs[k]->ndim, xs[k]->ne, true);
    }
    size_t rb = row_bytes(xs[0]);
    int64_t at = 0;
    for (int64_t i = 0; i < nseq && !st; i++)
        for (int k = 0; k < n; k++) {
            int64_t len = offs[k][i + 1] - offs[k][i];
            if (dxs[k]) copy_rows(&r[k], offs[k][i], dout, at, len, rb);
            at += len;
        }
    for (int k = 0; k < n; k++) {
        if (!st && dxs[k]) kout(dxs[k], &r[k]);
        fl_tensor_fini(&r[k]);
    }
    free(r);
    return st;
}

/* ---- sequence_reshape ---- */

FlStatus fl_kernel_sequence_reshape(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq, int64_t new_dim,
                                    FlTensor *out, FlTensor *out_lod) {
    static const char op[] = "sequence_reshape";
    if (need_rows(e, op, "X", x, 2) || lod_cuts(e, op, "X", off, nseq, x)) return FL_ERROR;
    if (x->ndim != 2) return fl_err(e, "%s: X %s must be a matrix [T, D]", op, fl_tensor_shape(x).s);
    if (new_dim < 1) return fl_err(e, "%s: new_dim must be >= 1, found %lld", op, (long long)new_dim);
    int64_t d = x->ne[1], *o;
    for (int64_t i = 0; i < nseq; i++) {
        int64_t len = off[i + 1] - off[i];
        if (len * d % new_dim)
            return fl_err(e, "%s: sequence %lld has %lld rows of %lld elements: %lld elements do not make rows of "
                             "new_dim %lld", op, (long long)i, (long long)len, (long long)d, (long long)(len * d),
                          (long long)new_dim);
    }
    FlTensor r = FL_TENSOR_INIT, lod = FL_TENSOR_INIT;
    if (new_tensor(e, op, &r, x->dtype, 2, (int64_t[]){x->ne[0] * d / new_dim, new_dim}, false)) return FL_ERROR;
    if (new_offsets(e, op, &lod, nseq, &o)) {
        fl_tensor_fini(&r);
        return FL_ERROR;
    }
    if (fl_tensor_nbytes(x)) memcpy(fl_tensor_data(&r), fl_tensor_data(x), fl_tensor_nbytes(x));
    for (int64_t i = 0; i <= nseq; i++) o[i] = off[i] * d / new_dim;
    kout(out, &r);
    kout(out_lod, &lod);
    return FL_OK;
}

FlStatus fl_kernel_sequence_reshape_grad(FlErr *e, const FlTensor *x, const FlTensor *dout, FlTensor *dx) {
    if (!dx) return FL_OK;
    if (khas(e, "sequence_reshape_grad", "X", x) ||
        need_grad(e, "sequence_reshape_grad", dout, x->dtype, fl_tensor_numel(x)))
        return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (new_tensor(e, "sequence_reshape_grad", &r, x->dtype, x->ndim, x->ne, false)) return FL_ERROR;
    if (fl_tensor_nbytes(x)) memcpy(fl_tensor_data(&r), fl_tensor_data(dout), fl_tensor_nbytes(x));
    kout(dx, &r);
    return FL_OK;
}

/* ---- sequence_slice ---- */

/* Checks the slices against the sequences; *rows = their total length. */
static FlStatus slices(FlErr *e, const char *op, const FlTensor *x, const int64_t *off, int64_t nseq,
                       const FlTensor *offset, const FlTensor *length, int64_t *rows) {
    if (need_rows(e, op, "X", x, 1) || lod_cuts(e, op, "X", off, nseq, x) ||
        need_ints(e, op, "Offset", offset, nseq) || need_ints(e, op, "Length", length, nseq))
        return FL_ERROR;
    *rows = 0;
    for (int64_t i = 0; i < nseq; i++) {
        int64_t a = ival(offset, i), l = ival(length, i), n = off[i + 1] - off[i];
        if (a < 0 || l < 0 || a > n || l > n - a)
            return fl_err(e, "%s: sequence %lld has %lld rows: offset %lld and length %lld are outside it", op,
                          (long long)i, (long long)n, (long long)a, (long long)l);
        *rows += l;
    }
    return FL_OK;
}

FlStatus fl_kernel_sequence_slice(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                  const FlTensor *offset, const FlTensor *length, FlTensor *out, FlTensor *out_lod) {
    static const char op[] = "sequence_slice";
    int64_t rows, ne[FL_MAX_DIMS], *o;
    if (slices(e, op, x, off, nseq, offset, length, &rows)) return FL_ERROR;
    memcpy(ne, x->ne, sizeof ne);
    ne[0] = rows;
    FlTensor r = FL_TENSOR_INIT, lod = FL_TENSOR_INIT;
    if (new_tensor(e, op, &r, x->dtype, x->ndim, ne, false)) return FL_ERROR;
    if (new_offsets(e, op, &lod, nseq, &o)) {
        fl_tensor_fini(&r);
        return FL_ERROR;
    }
    size_t rb = row_bytes(x);
    for (int64_t i = 0; i < nseq; i++) {
        int64_t l = ival(length, i);
        copy_rows(&r, o[i], x, off[i] + ival(offset, i), l, rb);
        o[i + 1] = o[i] + l;
    }
    kout(out, &r);
    kout(out_lod, &lod);
    return FL_OK;
}

FlStatus fl_kernel_sequence_slice_grad(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                       const FlTensor *offset, const FlTensor *length, const FlTensor *dout,
                                       FlTensor *dx) {
    static const char op[] = "sequence_slice_grad";
    int64_t rows;
    if (!dx) return FL_OK;
    if (slices(e, op, x, off, nseq, offset, length, &rows) || need_grad(e, op, dout, x->dtype, rows * row_elems(x)))
        return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (new_tensor(e, op, &r, x->dtype, x->ndim, x->ne, true)) return FL_ERROR;
    size_t rb = row_bytes(x);
    for (int64_t i = 0, at = 0; i < nseq; i++) {
        int64_t l = ival(length, i);
        copy_rows(&r, off[i] + ival(offset, i), dout, at, l, rb);
        at += l;
    }
    kout(dx, &r);
    return FL_OK;
}

/* ---- sequence_pad, sequence_unpad ---- */

static int64_t longest(const int64_t *off, int64_t nseq) {
    int64_t m = 0;
    for (int64_t i = 0; i < nseq; i++)
        if (off[i + 1] - off[i] > m) m = off[i + 1] - off[i];
    return m;
}

FlStatus fl_kernel_sequence_pad(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                const FlTensor *pad_value, int64_t padded_length, FlTensor *out, FlTensor *length) {
    static const char op[] = "sequence_pad";
    if (need_rows(e, op, "X", x, 2) || lod_cuts(e, op, "X", off, nseq, x) ||
        ksame_dtype(e, op, "X", x, "PadValue", pad_value))
        return FL_ERROR;
    if (x->ndim + 1 > FL_MAX_DIMS) return fl_err(e, "%s: X %s has too many dims to pad", op, fl_tensor_shape(x).s);
    int64_t step = row_elems(x), npad = fl_tensor_numel(pad_value), maxlen = longest(off, nseq);
    if (npad != 1 && npad != step)
        return fl_err(e, "%s: PadValue %s must hold 1 value or a row of X %s (%lld values)", op,
                      fl_tensor_shape(pad_value).s, fl_tensor_shape(x).s, (long long)step);
    int64_t len = padded_length == -1 ? maxlen : padded_length;
    if (len < maxlen)
        return fl_err(e, "%s: padded_length %lld is less than the longest sequence (%lld rows)", op,
                      (long long)padded_length, (long long)maxlen);
    int64_t ne[FL_MAX_DIMS];
    ne[0] = nseq, ne[1] = len;
    for (int d = 1; d < x->ndim; d++) ne[d + 1] = x->ne[d];
    FlTensor r = FL_TENSOR_INIT, lt = FL_TENSOR_INIT;
    if (new_tensor(e, op, &r, x->dtype, x->ndim + 1, ne, false)) return FL_ERROR;
    if (new_tensor(e, op, &lt, FL_DT_INT64, 1, (int64_t[]){nseq}, false)) {
        fl_tensor_fini(&r);
        return FL_ERROR;
    }
    size_t rb = row_bytes(x), es = fl_dtype_size(x->dtype);
    char *pad = fl_xmalloc(rb ? rb : 1); /* one padding row */
    const char *pv = fl_tensor_data(pad_value);
    for (int64_t j = 0; j < step; j++) memcpy(pad + (size_t)j * es, pv + (npad == 1 ? 0 : (size_t)j * es), es);
    int64_t *lens = fl_tensor_data(&lt);
    for (int64_t i = 0; i < nseq; i++) {
        int64_t n = off[i + 1] - off[i];
        copy_rows(&r, i * len, x, off[i], n, rb);
        for (int64_t t = n; t < len; t++) memcpy(row_at(&r, i * len + t, rb), pad, rb);
        lens[i] = n;
    }
    free(pad);
    kout(out, &r);
    kout(length, &lt);
    return FL_OK;
}

FlStatus fl_kernel_sequence_pad_grad(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                     const FlTensor *dout, FlTensor *dx) {
    static const char op[] = "sequence_pad_grad";
    if (!dx) return FL_OK;
    if (need_rows(e, op, "X", x, 2) || lod_cuts(e, op, "X", off, nseq, x) || khas(e, op, "Out@GRAD", dout))
        return FL_ERROR;
    int64_t len = dout->ndim == x->ndim + 1 ? dout->ne[1] : -1;
    if (dout->ndim != x->ndim + 1 || dout->ne[0] != nseq || len < longest(off, nseq) ||
        need_grad(e, op, dout, x->dtype, nseq * len * row_elems(x)))
        return fl_err(e, "%s: Out@GRAD %s does not hold %lld padded sequences of X %s", op, fl_tensor_shape(dout).s,
                      (long long)nseq, fl_tensor_shape(x).s);
    FlTensor r = FL_TENSOR_INIT;
    if (new_tensor(e, op, &r, x->dtype, x->ndim, x->ne, true)) return FL_ERROR;
    size_t rb = row_bytes(x);
    for (int64_t i = 0; i < nseq; i++) copy_rows(&r, off[i], dout, i * len, off[i + 1] - off[i], rb);
    kout(dx, &r);
    return FL_OK;
}

/* Elements of one step X[i][t] of a padded X [B, L, ...]. */
static int64_t step_elems(const FlTensor *x) {
    int64_t n = 1;
    for (int d = 2; d < x->ndim; d++) n *= x->ne[d];
    return n;
}

/* X [B, L, ...] and its lengths; *rows = their sum, *rb the bytes of one step X[i][t]. */
static FlStatus unpad_inputs(FlErr *e, const char *op, const FlTensor *x, const FlTensor *length, int64_t *rows,
                             size_t *rb) {
    if (need_rows(e, op, "X", x, 2) || need_ints(e, op, "Length", length, x->ne[0])) return FL_ERROR;
    *rows = 0;
    for (int64_t i = 0; i < x->ne[0]; i++) {
        int64_t n = ival(length, i);
        if (n < 0 || n > x->ne[1])
            return fl_err(e, "%s: Length[%lld] is %lld, outside 0 to %lld (X %s)", op, (long long)i, (long long)n,
                          (long long)x->ne[1], fl_tensor_shape(x).s);
        *rows += n;
    }
    *rb = (size_t)step_elems(x) * fl_dtype_size(x->dtype);
    return FL_OK;
}

FlStatus fl_kernel_sequence_unpad(FlErr *e, const FlTensor *x, const FlTensor *length, FlTensor *out,
                                  FlTensor *out_lod) {
    static const char op[] = "sequence_unpad";
    int64_t rows, ne[FL_MAX_DIMS], *o;
    size_t rb;
    if (unpad_inputs(e, op, x, length, &rows, &rb)) return FL_ERROR;
    int nd = x->ndim == 2 ? 2 : x->ndim - 1;
    ne[0] = rows, ne[1] = 1;
    for (int d = 2; d < x->ndim; d++) ne[d - 1] = x->ne[d];
    FlTensor r = FL_TENSOR_INIT, lod = FL_TENSOR_INIT;
    if (new_tensor(e, op, &r, x->dtype, nd, ne, false)) return FL_ERROR;
    if (new_offsets(e, op, &lod, x->ne[0], &o)) {
        fl_tensor_fini(&r);
        return FL_ERROR;
    }
    for (int64_t i = 0; i < x->ne[0]; i++) {
        int64_t n = ival(length, i);
        copy_rows(&r, o[i], x, i * x->ne[1], n, rb);
        o[i + 1] = o[i] + n;
    }
    kout(out, &r);
    kout(out_lod, &lod);
    return FL_OK;
}

FlStatus fl_kernel_sequence_unpad_grad(FlErr *e, const FlTensor *x, const FlTensor *length, const FlTensor *dout,
                                       FlTensor *dx) {
    static const char op[] = "sequence_unpad_grad";
    int64_t rows;
    size_t rb;
    if (!dx) return FL_OK;
    if (unpad_inputs(e, op, x, length, &rows, &rb) ||
        need_grad(e, op, dout, x->dtype, rows * step_elems(x)))
        return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (new_tensor(e, op, &r, x->dtype, x->ndim, x->ne, true)) return FL_ERROR;
    for (int64_t i = 0, at = 0; i < x->ne[0]; i++) {
        int64_t n = ival(length, i);
        copy_rows(&r, i * x->ne[1], dout, at, n, rb);
        at += n;
    }
    kout(dx, &r);
    return FL_OK;
}

/* ---- sequence_enumerate ---- */

FlStatus fl_kernel_sequence_enumerate(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                      int64_t win_size, int64_t pad_value, FlTensor *out) {
    static const char op[] = "sequence_enumerate";
    if (need_rows(e, op, "X", x, 1) || lod_cuts(e, op, "X", off, nseq, x)) return FL_ERROR;
    if (!kis_int(x->dtype) || !(x->ndim == 1 || (x->ndim == 2 && x->ne[1] == 1)))
        return fl_err(e, "%s: X %s %s must be int32 or int64 ids [T, 1]", op, fl_tensor_shape(x).s,
                      fl_dtype_name(x->dtype));
    if (win_size < 1) return fl_err(e, "%s: win_size must be >= 1, found %lld", op, (long long)win_size);
    if (x->dtype == FL_DT_INT32 && (pad_value < INT32_MIN || pad_value > INT32_MAX))
        return fl_err(e, "%s: pad_value %lld does not fit X's int32", op, (long long)pad_value);
    FlTensor r = FL_TENSOR_INIT;
    if (new_tensor(e, op, &r, x->dtype, 2, (int64_t[]){x->ne[0], win_size}, false)) return FL_ERROR;
    void *p = fl_tensor_data(&r);
    for (int64_t i = 0; i < nseq; i++)
        for (int64_t t = off[i]; t < off[i + 1]; t++)
            for (int64_t j = 0; j < win_size; j++) {
                int64_t v = j < off[i + 1] - t ? ival(x, t + j) : pad_value;
                if (x->dtype == FL_DT_INT32) ((int32_t *)p)[t * win_size + j] = (int32_t)v;
                else ((int64_t *)p)[t * win_size + j] = v;
            }
    kout(out, &r);
    return FL_OK;
}
