/* seqedit.c: sequence_scatter and its gradient, lod_rank_table, reorder_lod_tensor_by_rank and its
 * gradient (kernels_seqedit.h). */
#include "runtime/kernels/kernels_seqedit.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

/* Checks ids (int64, one per row the offsets cut) against rows of w elements and nseq <= N rows;
 * the first bad index is the error. */
static FlStatus check_ids(FlErr *e, const char *op, const FlTensor *ids, const int64_t *off, int64_t nseq,
                          int64_t N, int64_t w) {
    if (khas(e, op, "Ids", ids)) return FL_ERROR;
    if (ids->dtype != FL_DT_INT64)
        return fl_err(e, "%s: Ids must be int64, found %s %s", op, fl_dtype_name(ids->dtype), fl_tensor_shape(ids).s);
    if (nseq > N)
        return fl_err(e, "%s: Ids holds %lld sequences but X has %lld rows (one per sequence)", op, (long long)nseq,
                      (long long)N);
    const int64_t *pi = fl_tensor_data(ids);
    for (int64_t i = 0; i < nseq; i++)
        for (int64_t j = off[i]; j < off[i + 1]; j++)
            if (pi[j] < 0 || pi[j] >= w)
                return fl_err(e, "%s: Ids[%lld] = %lld (sequence %lld) is outside [0, %lld), the elements of a row of X",
                              op, (long long)j, (long long)pi[j], (long long)i, (long long)w);
    return FL_OK;
}

FlStatus fl_kernel_sequence_scatter(FlErr *e, const FlTensor *x, const FlTensor *ids, const FlTensor *updates,
                                    const int64_t *off, int64_t nseq, FlTensor *out) {
    const char *op = "sequence_scatter";
    if (kwant(e, op, "Out", out) || kneed_float(e, op, "X", x) || kneed_float(e, op, "Updates", updates) ||
        ksame_dtype(e, op, "X", x, "Updates", updates))
        return FL_ERROR;
    if (x->ndim < 2) return fl_err(e, "%s: X %s must be [N, ...] (a row per sequence)", op, fl_tensor_shape(x).s);
    int64_t N = x->ne[0], w = kprod(x->ne, 1, x->ndim), M = off[nseq];
    if (check_ids(e, op, ids, off, nseq, N, w)) return FL_ERROR;
    if (fl_tensor_numel(ids) != M || fl_tensor_numel(updates) != M)
        return fl_err(e, "%s: Ids %s and Updates %s must hold the %lld rows the offsets cut", op, fl_tensor_shape(ids).s,
                      fl_tensor_shape(updates).s, (long long)M);
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, op, &o, x)) return FL_ERROR;
    int64_t n = fl_tensor_numel(x);
    for (int64_t k = 0; k < n; k++) fl_tensor_set(&o, k, fl_tensor_get(x, k));
    const int64_t *pi = fl_tensor_data(ids);
    for (int64_t i = 0; i < nseq; i++)
        for (int64_t j = off[i]; j < off[i + 1]; j++) {
            int64_t at = i * w + pi[j];
            fl_tensor_set(&o, at, fl_tensor_get(&o, at) + fl_tensor_get(updates, j));
        }
    kout(out, &o);
    return FL_OK;
}

FlStatus fl_kernel_sequence_scatter_grad(FlErr *e, const FlTensor *ids, const int64_t *off, int64_t nseq,
                                         const FlTensor *dout, FlTensor *dx, FlTensor *dupdates) {
    const char *op = "sequence_scatter_grad";
    if (kneed_float(e, op, "Out@GRAD", dout)) return FL_ERROR;
    if (dout->ndim < 2) return fl_err(e, "%s: Out@GRAD %s must be [N, ...]", op, fl_tensor_shape(dout).s);
    int64_t w = kprod(dout->ne, 1, dout->ndim), M = off[nseq];
    if (check_ids(e, op, ids, off, nseq, dout->ne[0], w)) return FL_ERROR;
    if (fl_tensor_numel(ids) != M)
        return fl_err(e, "%s: Ids %s must hold the %lld rows the offsets cut", op, fl_tensor_shape(ids).s, (long long)M);
    FlTensor rx = FL_TENSOR_INIT, ru = FL_TENSOR_INIT;
    if ((dx && kalloc_raw_like(e, op, &rx, dout)) ||
        (dupdates && kalloc_raw(e, op, &ru, dout->dtype, ids->ndim, ids->ne))) {
        fl_tensor_fini(&rx);
        return FL_ERROR;
    }
    if (dx)
        for (int64_t k = 0, n = fl_tensor_numel(dout); k < n; k++) fl_tensor_set(&rx, k, fl_tensor_get(dout, k));
    const int64_t *pi = fl_tensor_data(ids);
    if (dupdates)
        for (int64_t i = 0; i < nseq; i++)
            for (int64_t j = off[i]; j < off[i + 1]; j++) fl_tensor_set(&ru, j, fl_tensor_get(dout, i * w + pi[j]));
    kout(dx, &rx);
    kout(dupdates, &ru);
    return FL_OK;
}

/* ---- lod_rank_table, reorder_lod_tensor_by_rank ---- */

FlStatus fl_kernel_lod_rank_table(FlErr *e, const int64_t *off, int64_t n, FlTensor *out) {
    const char *op = "lod_rank_table";
    if (kwant(e, op, "Out", out)) return FL_ERROR;
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc_raw(e, op, &o, FL_DT_INT64, 2, (int64_t[]){n, 2})) return FL_ERROR;
    int64_t *t = fl_tensor_data(&o);
    /* insertion by length, longest first, stable: the rank tables of a batch are short */
    for (int64_t i = 0; i < n; i++) {
        int64_t len = off[i + 1] - off[i], k = i;
        for (; k > 0 && t[2 * (k - 1) + 1] < len; k--) {
            t[2 * k] = t[2 * (k - 1)];
            t[2 * k + 1] = t[2 * (k - 1) + 1];
        }
        t[2 * k] = i;
        t[2 * k + 1] = len;
    }
    kout(out, &o);
    return FL_OK;
}

/* The permutation in table's first column: a permutation of [0, n), else an error. */
static FlStatus rank_order(FlErr *e, const char *op, const FlTensor *table, int64_t n, const int64_t **idx) {
    if (khas(e, op, "RankTable", table)) return FL_ERROR;
    if (table->dtype != FL_DT_INT64 || table->ndim != 2 || table->ne[1] != 2 || table->ne[0] != n)
        return fl_err(e, "%s: RankTable %s %s must be a lod_rank_table of the %lld sequences of X (int64 [%lld, 2])", op,
                      fl_dtype_name(table->dtype), fl_tensor_shape(table).s, (long long)n, (long long)n);
    const int64_t *t = fl_tensor_data(table);
    bool *seen = calloc((size_t)n + 1, 1);
    if (!seen) return fl_err(e, "%s: out of memory", op);
    for (int64_t k = 0; k < n; k++) {
        int64_t i = t[2 * k];
        if (i < 0 || i >= n || seen[i]) {
            free(seen);
            return fl_err(e, "%s: RankTable's index %lld (row %lld) is not one of the %lld sequences' once", op,
                          (long long)i, (long long)k, (long long)n);
        }
        seen[i] = true;
    }
    free(seen);
    *idx = t;
    return FL_OK;
}

/* Copies sequence i of src (rows [b(i), b(i + 1)), b = off or the identity) to or from the k-th
 * place of the reordered tensor: forward (to_sorted) or back. */
static void move_seqs(const FlTensor *src, FlTensor *dst, const int64_t *off, int64_t n, const int64_t *t,
                      bool to_sorted, int64_t *out_off) {
    size_t rb = fl_tensor_nbytes(src) / (size_t)(src->ne[0] ? src->ne[0] : 1);
    const char *ps = fl_tensor_data(src);
    char *pd = fl_tensor_data(dst);
    int64_t at = 0;
    if (out_off) out_off[0] = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t i = t[2 * k], b = off ? off[i] : i, len = off ? off[i + 1] - off[i] : 1;
        if (to_sorted) memcpy(pd + (size_t)at * rb, ps + (size_t)b * rb, (size_t)len * rb);
        else memcpy(pd + (size_t)b * rb, ps + (size_t)at * rb, (size_t)len * rb);
        at += len;
        if (out_off) out_off[k + 1] = at;
    }
}

FlStatus fl_kernel_reorder_by_rank(FlErr *e, const FlTensor *x, const int64_t *off, int64_t n, const FlTensor *table,
                                   FlTensor *out, FlTensor *out_off) {
    const char *op = "reorder_lod_tensor_by_rank";
    const int64_t *t;
    if (kwant(e, op, "Out", out) || khas(e, op, "X", x) || rank_order(e, op, table, n, &t)) return FL_ERROR;
    FlTensor o = FL_TENSOR_INIT, lo = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, op, &o, x) || kalloc_raw(e, op, &lo, FL_DT_INT64, 1, (int64_t[]){n + 1})) {
        fl_tensor_fini(&o);
        return FL_ERROR;
    }
    move_seqs(x, &o, off, n, t, true, fl_tensor_data(&lo));
    kout(out, &o);
    kout(out_off, &lo);
    return FL_OK;
}

FlStatus fl_kernel_reorder_by_rank_grad(FlErr *e, const FlTensor *dout, const int64_t *off, int64_t n,
                                        const FlTensor *table, FlTensor *dx) {
    const char *op = "reorder_lod_tensor_by_rank_grad";
    const int64_t *t;
    if (!dx) return FL_OK;
    if (khas(e, op, "Out@GRAD", dout) || rank_order(e, op, table, n, &t)) return FL_ERROR;
    int64_t rows = off ? off[n] : n;
    if (dout->ndim < 1 || dout->ne[0] != rows)
        return fl_err(e, "%s: Out@GRAD %s must have X's %lld rows", op, fl_tensor_shape(dout).s, (long long)rows);
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, op, &o, dout)) return FL_ERROR;
    move_seqs(dout, &o, off, n, t, false, NULL);
    kout(dx, &o);
    return FL_OK;
}
