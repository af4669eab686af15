/* ops_seq.c: adapters of the sequence ops (sequence_pool, sequence_softmax, sequence_conv,
 * sequence_expand, sequence_expand_as, sequence_mask) and their gradients; kernels in
 * runtime/kernels/seq.c. Each adapter checks the offsets it reads (fl_exec_check_lod) against
 * the rows they cut before the kernel runs. */
#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_seq.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* The offsets of input `slot` of the call, checked to cut `rows` rows (-1: any). */
static FlStatus lod_of(OpCall *c, int s, const char *slot, int64_t rows, const int64_t **off, int64_t *n) {
    const FlTensor *t = IN(s);
    if (!t) return fl_err(c->e, "input %s is missing", slot);
    return fl_exec_check_lod(c->e, t, rows, slot, off, n);
}

/* The rows of X, which the offsets must cut (-1 when X holds no data: the kernel reports that). */
static int64_t rows_of(const FlTensor *x) { return x && fl_tensor_has_data(x) && x->ndim > 0 ? x->ne[0] : -1; }

/* ---- sequence_pool ---- */

static FlStatus prep_sequence_pool(ExecOp *op, FlErr *e) {
    const char *pt = fl_exec_attr_string(op, "pooltype");
    FlSeqPool t = fl_seqpool_parse(pt);
    if (t == FL_SEQPOOL_COUNT)
        return fl_err(e, "attribute 'pooltype' must be AVERAGE, SUM, SQRT, MAX, LAST or FIRST, found '%s'", pt);
    op->a.i[0] = t;
    op->a.f[0] = fl_exec_attr_float(op, "pad_value");
    return FL_OK;
}
static FlStatus run_sequence_pool(OpCall *c) {
    const FlTensor *x = IN(FL_IN_sequence_pool_X);
    const int64_t *off;
    int64_t n;
    if (lod_of(c, FL_IN_sequence_pool_XLod, "XLod", rows_of(x), &off, &n)) return FL_ERROR;
    return fl_kernel_sequence_pool(c->e, x, off, n, (FlSeqPool)c->op->a.i[0], c->op->a.f[0],
                                   OUT(FL_OUT_sequence_pool_Out), OUT(FL_OUT_sequence_pool_MaxIndex));
}
FL_ADAPTER(sequence_pool, prep_sequence_pool, run_sequence_pool);
/* sequence_pool_grad: X XLod MaxIndex? Out@GRAD -> X@GRAD? */
static FlStatus run_sequence_pool_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_sequence_pool_grad_X_GRAD);
    if (!dx) return FL_OK;
    const FlTensor *x = IN(FL_IN_sequence_pool_grad_X);
    const int64_t *off;
    int64_t n;
    if (lod_of(c, FL_IN_sequence_pool_grad_XLod, "XLod", rows_of(x), &off, &n)) return FL_ERROR;
    return fl_kernel_sequence_pool_grad(c->e, x, off, n, (FlSeqPool)c->op->a.i[0],
                                        IN(FL_IN_sequence_pool_grad_MaxIndex),
                                        IN(FL_IN_sequence_pool_grad_Out_GRAD), dx);
}
FL_ADAPTER(sequence_pool_grad, prep_sequence_pool, run_sequence_pool_grad);

/* ---- sequence_softmax ---- */

static FlStatus run_sequence_softmax(OpCall *c) {
    const FlTensor *x = IN(FL_IN_sequence_softmax_X);
    const int64_t *off;
    int64_t n;
    if (lod_of(c, FL_IN_sequence_softmax_XLod, "XLod", rows_of(x), &off, &n)) return FL_ERROR;
    return fl_kernel_sequence_softmax(c->e, x, off, n, OUT(FL_OUT_sequence_softmax_Out));
}
FL_ADAPTER(sequence_softmax, NULL, run_sequence_softmax);
static FlStatus run_sequence_softmax_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_sequence_softmax_grad_X_GRAD);
    if (!dx) return FL_OK;
    const FlTensor *y = IN(FL_IN_sequence_softmax_grad_Out);
    const int64_t *off;
    int64_t n;
    if (lod_of(c, FL_IN_sequence_softmax_grad_XLod, "XLod", rows_of(y), &off, &n)) return FL_ERROR;
    return fl_kernel_sequence_softmax_grad(c->e, y, off, n, IN(FL_IN_sequence_softmax_grad_Out_GRAD), dx);
}
FL_ADAPTER(sequence_softmax_grad, NULL, run_sequence_softmax_grad);

/* ---- sequence_conv ---- */

static FlStatus prep_sequence_conv(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "contextStart");
    op->a.i[1] = fl_exec_attr_int(op, "contextLength");
    int64_t stride = fl_exec_attr_int(op, "contextStride");
    if (stride != 1) return fl_err(e, "attribute 'contextStride' must be 1, found %lld", (long long)stride);
    if (op->a.i[1] < 1 || op->a.i[1] > (1 << 20) || op->a.i[0] < -(1 << 20) || op->a.i[0] > (1 << 20))
        return fl_err(e, "attributes 'contextLength' (%lld) and 'contextStart' (%lld) are out of range",
                      (long long)op->a.i[1], (long long)op->a.i[0]);
    return FL_OK;
}
static FlStatus run_sequence_conv(OpCall *c) {
    const FlTensor *x = IN(FL_IN_sequence_conv_X);
    const int64_t *off;
    int64_t n;
    if (lod_of(c, FL_IN_sequence_conv_XLod, "XLod", rows_of(x), &off, &n)) return FL_ERROR;
    return fl_kernel_sequence_conv(c->e, x, off, n, IN(FL_IN_sequence_conv_Filter), c->op->a.i[0], c->op->a.i[1],
                                   OUT(FL_OUT_sequence_conv_Out));
}
FL_ADAPTER(sequence_conv, prep_sequence_conv, run_sequence_conv);
static FlStatus run_sequence_conv_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_sequence_conv_grad_X_GRAD), *df = OUT(FL_OUT_sequence_conv_grad_Filter_GRAD);
    if (!dx && !df) return FL_OK;
    const FlTensor *x = IN(FL_IN_sequence_conv_grad_X);
    const int64_t *off;
    int64_t n;
    if (lod_of(c, FL_IN_sequence_conv_grad_XLod, "XLod", rows_of(x), &off, &n)) return FL_ERROR;
    return fl_kernel_sequence_conv_grad(c->e, x, off, n, IN(FL_IN_sequence_conv_grad_Filter), c->op->a.i[0],
                                        c->op->a.i[1], IN(FL_IN_sequence_conv_grad_Out_GRAD), dx, df);
}
FL_ADAPTER(sequence_conv_grad, prep_sequence_conv, run_sequence_conv_grad);

/* ---- sequence_expand, sequence_expand_as ---- */

/* X's offsets (when xs >= 0 and the slot is given) and Y's. */
static FlStatus expand_lods(OpCall *c, const FlTensor *x, int xs, int ys, const int64_t **xoff, int64_t *nx,
                            const int64_t **yoff, int64_t *ny) {
    *xoff = NULL;
    *nx = 0;
    if (xs >= 0 && IN(xs) && lod_of(c, xs, "XLod", rows_of(x), xoff, nx)) return FL_ERROR;
    return lod_of(c, ys, "YLod", -1, yoff, ny);
}
static FlStatus run_sequence_expand(OpCall *c) {
    const FlTensor *x = IN(FL_IN_sequence_expand_X);
    const int64_t *xoff, *yoff;
    int64_t nx, ny;
    if (expand_lods(c, x, FL_IN_sequence_expand_XLod, FL_IN_sequence_expand_YLod, &xoff, &nx, &yoff, &ny))
        return FL_ERROR;
    return fl_kernel_sequence_expand(c->e, x, xoff, nx, yoff, ny, OUT(FL_OUT_sequence_expand_Out),
                                     OUT(FL_OUT_sequence_expand_OutLod));
}
FL_ADAPTER(sequence_expand, NULL, run_sequence_expand);
static FlStatus run_sequence_expand_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_sequence_expand_grad_X_GRAD);
    if (!dx) return FL_OK;
    const FlTensor *x = IN(FL_IN_sequence_expand_grad_X);
    const int64_t *xoff, *yoff;
    int64_t nx, ny;
    if (expand_lods(c, x, FL_IN_sequence_expand_grad_XLod, FL_IN_sequence_expand_grad_YLod, &xoff, &nx, &yoff, &ny))
        return FL_ERROR;
    return fl_kernel_sequence_expand_grad(c->e, x, xoff, nx, yoff, ny, IN(FL_IN_sequence_expand_grad_Out_GRAD), dx);
}
FL_ADAPTER(sequence_expand_grad, NULL, run_sequence_expand_grad);
static FlStatus run_sequence_expand_as(OpCall *c) {
    const FlTensor *x = IN(FL_IN_sequence_expand_as_X);
    const int64_t *xoff, *yoff;
    int64_t nx, ny;
    if (expand_lods(c, x, -1, FL_IN_sequence_expand_as_YLod, &xoff, &nx, &yoff, &ny)) return FL_ERROR;
    return fl_kernel_sequence_expand(c->e, x, NULL, 0, yoff, ny, OUT(FL_OUT_sequence_expand_as_Out), NULL);
}
FL_ADAPTER(sequence_expand_as, NULL, run_sequence_expand_as);
static FlStatus run_sequence_expand_as_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_sequence_expand_as_grad_X_GRAD);
    if (!dx) return FL_OK;
    const FlTensor *x = IN(FL_IN_sequence_expand_as_grad_X);
    const int64_t *xoff, *yoff;
    int64_t nx, ny;
    if (expand_lods(c, x, -1, FL_IN_sequence_expand_as_grad_YLod, &xoff, &nx, &yoff, &ny)) return FL_ERROR;
    return fl_kernel_sequence_expand_grad(c->e, x, NULL, 0, yoff, ny, IN(FL_IN_sequence_expand_as_grad_Out_GRAD), dx);
}
FL_ADAPTER(sequence_expand_as_grad, NULL, run_sequence_expand_as_grad);

/* ---- sequence_mask ---- */

static FlStatus prep_sequence_mask(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "maxlen");
    op->a.i[1] = fl_exec_attr_int(op, "out_dtype");
    if (op->a.i[1] < 0 || op->a.i[1] >= FL_DT_COUNT)
        return fl_err(e, "attribute 'out_dtype' (%lld) is not a dtype", (long long)op->a.i[1]);
    return FL_OK;
}
static FlStatus run_sequence_mask(OpCall *c) {
    const FlTensor *m = IN(FL_IN_sequence_mask_MaxLenTensor);
    int64_t maxlen = c->op->a.i[0];
    if (m) {
        if (fl_tensor_numel(m) != 1 || (m->dtype != FL_DT_INT32 && m->dtype != FL_DT_INT64))
            return fl_err(c->e, "sequence_mask: MaxLenTensor %s (%s) must hold one int", fl_tensor_shape(m).s,
                          fl_dtype_name(m->dtype));
        maxlen = (int64_t)fl_tensor_get(m, 0);
        if (maxlen < 0) return fl_err(c->e, "sequence_mask: MaxLenTensor holds %lld, must be >= 0", (long long)maxlen);
    }
    return fl_kernel_sequence_mask(c->e, IN(FL_IN_sequence_mask_X), maxlen, (FlDType)c->op->a.i[1],
                                   OUT(FL_OUT_sequence_mask_Y));
}
FL_ADAPTER(sequence_mask, prep_sequence_mask, run_sequence_mask);
