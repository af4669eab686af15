/* seqnlp.c: the further sequence kernels of the NLP layers (kernels_seqnlp.h). */
#include "runtime/kernels/kernels_seqnlp.h"

#include <string.h>

#include "runtime/kernels/kernels_impl.h"

FlStatus fl_kernel_sequence_reverse(FlErr *e, const char *op, const FlTensor *x, const int64_t *off, int64_t nseq,
                                    FlTensor *y) {
    if (khas(e, op, "X", x) || kwant(e, op, "Y", y)) return FL_ERROR;
    if (x->ndim < 2 || off[nseq] != x->ne[0])
        return fl_err(e, "%s: X %s must be [T, ...] with the %lld rows its offsets cut", op, fl_tensor_shape(x).s,
                      (long long)off[nseq]);
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, op, &o, x)) return FL_ERROR;
    size_t row = (size_t)kprod(x->ne, 1, x->ndim) * fl_dtype_size(x->dtype);
    const char *src = fl_tensor_data(x);
    char *dst = fl_tensor_data(&o);
    for (int64_t s = 0; s < nseq; s++)
        for (int64_t i = off[s], j = off[s + 1] - 1; i < off[s + 1]; i++, j--)
            if (row) memcpy(dst + (size_t)j * row, src + (size_t)i * row, row);
    kout(y, &o);
    return FL_OK;
}
