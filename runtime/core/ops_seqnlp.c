/* ops_seqnlp.c: adapters of the further sequence ops of the NLP layers, sequence_reverse,
 * row_conv, add_position_encoding, im2sequence (and their gradients) and sampling_id (kernels in
 * runtime/kernels/seqnlp.c). Each checks its offsets against the rows they cut
 * (fl_exec_check_lod) before the kernel runs. */
#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_seqnlp.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* The offsets in slot s, checked against the rows of x. */
static FlStatus lod_of(OpCall *c, int s, const FlTensor *x, const char *slot, const int64_t **off, int64_t *nseq) {
    if (!x || !fl_tensor_has_data(x)) return fl_err(c->e, "the input %s cuts has no value", slot);
    return fl_exec_check_lod(c->e, IN(s), x->ndim ? x->ne[0] : 1, slot, off, nseq);
}

static FlStatus run_sequence_reverse(OpCall *c) {
    const FlTensor *x = IN(FL_IN_sequence_reverse_X);
    const int64_t *off;
    int64_t n;
    if (lod_of(c, FL_IN_sequence_reverse_XLod, x, "XLod", &off, &n)) return FL_ERROR;
    return fl_kernel_sequence_reverse(c->e, "sequence_reverse", x, off, n, OUT(FL_OUT_sequence_reverse_Y));
}
FL_ADAPTER(sequence_reverse, NULL, run_sequence_reverse);
/* sequence_reverse_grad: XLod Y@GRAD -> X@GRAD? */
static FlStatus run_sequence_reverse_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_sequence_reverse_grad_X_GRAD);
    if (!dx) return FL_OK;
    const FlTensor *dy = IN(FL_IN_sequence_reverse_grad_Y_GRAD);
    const int64_t *off;
    int64_t n;
    if (lod_of(c, FL_IN_sequence_reverse_grad_XLod, dy, "XLod", &off, &n)) return FL_ERROR;
    return fl_kernel_sequence_reverse(c->e, "sequence_reverse_grad", dy, off, n, dx);
}
FL_ADAPTER(sequence_reverse_grad, NULL, run_sequence_reverse_grad);

static FlStatus run_row_conv(OpCall *c) {
    const FlTensor *x = IN(FL_IN_row_conv_X);
    const int64_t *off;
    int64_t n;
    if (lod_of(c, FL_IN_row_conv_XLod, x, "XLod", &off, &n)) return FL_ERROR;
    return fl_kernel_row_conv(c->e, x, off, n, IN(FL_IN_row_conv_Filter), OUT(FL_OUT_row_conv_Out));
}
FL_ADAPTER(row_conv, NULL, run_row_conv);
static FlStatus run_row_conv_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_row_conv_grad_X_GRAD), *df = OUT(FL_OUT_row_conv_grad_Filter_GRAD);
    if (!dx && !df) return FL_OK;
    const FlTensor *x = IN(FL_IN_row_conv_grad_X);
    const int64_t *off;
    int64_t n;
    if (lod_of(c, FL_IN_row_conv_grad_XLod, x, "XLod", &off, &n)) return FL_ERROR;
    return fl_kernel_row_conv_grad(c->e, x, off, n, IN(FL_IN_row_conv_grad_Filter), IN(FL_IN_row_conv_grad_Out_GRAD),
                                   dx, df);
}
FL_ADAPTER(row_conv_grad, NULL, run_row_conv_grad);

/* a.f[0] alpha, a.f[1] beta */
static FlStatus prep_add_position_encoding(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.f[0] = fl_exec_attr_float(op, "alpha");
    op->a.f[1] = fl_exec_attr_float(op, "beta");
    return FL_OK;
}
static FlStatus run_add_position_encoding(OpCall *c) {
    const FlTensor *x = IN(FL_IN_add_position_encoding_X);
    const int64_t *off = NULL;
    int64_t n = 0;
    if (IN(FL_IN_add_position_encoding_XLod) && lod_of(c, FL_IN_add_position_encoding_XLod, x, "XLod", &off, &n))
        return FL_ERROR;
    return fl_kernel_add_position_encoding(c->e, x, off, n, c->op->a.f[0], c->op->a.f[1],
                                           OUT(FL_OUT_add_position_encoding_Out));
}
FL_ADAPTER(add_position_encoding, prep_add_position_encoding, run_add_position_encoding);
/* add_position_encoding_grad: Out@GRAD -> X@GRAD? (alpha * Out@GRAD) */
static FlStatus run_add_position_encoding_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_add_position_encoding_grad_X_GRAD);
    if (!dx) return FL_OK;
    return fl_kernel_scale_grad(c->e, IN(FL_IN_add_position_encoding_grad_Out_GRAD), c->op->a.f[0], dx);
}
FL_ADAPTER(add_position_encoding_grad, prep_add_position_encoding, run_add_position_encoding_grad);

/* a.f[0] min, a.f[1] max */
static FlStatus prep_sampling_id(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.f[0] = fl_exec_attr_float(op, "min");
    op->a.f[1] = fl_exec_attr_float(op, "max");
    return FL_OK;
}
static FlStatus run_sampling_id(OpCall *c) {
    return fl_kernel_sampling_id(c->e, IN(FL_IN_sampling_id_X), c->op->a.f[0], c->op->a.f[1], c->op->seed,
                                 c->rc->step, OUT(FL_OUT_sampling_id_Out));
}
FL_ADAPTER(sampling_id, prep_sampling_id, run_sampling_id);

/* im2sequence: an FlIm2SeqAttrs in a.extra */
static FlStatus prep_im2sequence(ExecOp *op, FlErr *e) {
    FlIm2SeqAttrs *p = fl_xcalloc(1, sizeof *p);
    op->a.extra = p;
    struct {
        const char *name;
        int64_t *to;
        size_t n;
    } at[] = {{"kernels", p->k, 2}, {"strides", p->s, 2}, {"paddings", p->p, 4}, {"out_stride", p->os, 2}};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        size_t n;
        const int64_t *v = fl_exec_attr_ints(op, at[i].name, &n);
        if (n != at[i].n) return fl_err(e, "attribute '%s' must hold %zu ints, found %zu", at[i].name, at[i].n, n);
        for (size_t j = 0; j < n; j++) {
            if (v[j] < (i == 2 ? 0 : 1) || v[j] > INT32_MAX)
                return fl_err(e, "attribute '%s' holds %lld", at[i].name, (long long)v[j]);
            at[i].to[j] = v[j];
        }
    }
    return FL_OK;
}
static FlStatus run_im2sequence(OpCall *c) {
    return fl_kernel_im2sequence(c->e, IN(FL_IN_im2sequence_X), IN(FL_IN_im2sequence_Y), c->op->a.extra,
                                 OUT(FL_OUT_im2sequence_Out), OUT(FL_OUT_im2sequence_OutLod));
}
FL_ADAPTER(im2sequence, prep_im2sequence, run_im2sequence);
/* im2sequence_grad: X Y? Out@GRAD -> X@GRAD? */
static FlStatus run_im2sequence_grad(OpCall *c) {
    return fl_kernel_im2sequence_grad(c->e, IN(FL_IN_im2sequence_grad_X), IN(FL_IN_im2sequence_grad_Y), c->op->a.extra,
                                      IN(FL_IN_im2sequence_grad_Out_GRAD), OUT(FL_OUT_im2sequence_grad_X_GRAD));
}
FL_ADAPTER(im2sequence_grad, prep_im2sequence, run_im2sequence_grad);
