/* seqedit.c: sequence_scatter and its gradient (kernels_seqedit.h). */
#include "runtime/kernels/kernels_seqedit.h"

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
