/* ops_seqshape.c: adapters of the sequence reshaping ops (sequence_concat, sequence_reshape,
 * sequence_slice, sequence_pad, sequence_unpad, sequence_enumerate, lod_reset) and their
 * gradients; kernels in runtime/kernels/seqshape.c. Each adapter checks the offsets it is given
 * against the rows they cut (fl_exec_check_lod) before the kernel runs. */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_seqshape.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* The offsets x's rows are cut by: input slot lod_slot, named `name` in errors. */
static FlStatus lod_of(OpCall *c, const FlTensor *x, const FlTensor *lod, const char *name, const int64_t **off,
                       int64_t *nseq) {
    if (!fl_tensor_has_data(x) || x->ndim < 1) return fl_err(c->e, "X has no rows for %s to cut", name);
    if (!lod) return fl_err(c->e, "input %s is missing", name);
    return fl_exec_check_lod(c->e, lod, x->ne[0], name, off, nseq);
}

/* ---- sequence_concat ---- */

/* The offsets of every X (*offs, malloc'd: the caller frees it), one nseq for all. */
static FlStatus concat_lods(OpCall *c, int xs_slot, int lods_slot, const int64_t ***offs, int64_t *nseq) {
    int n = fl_call_nin(c, xs_slot);
    *offs = NULL;
    if (n < 1 || fl_call_nin(c, lods_slot) != n)
        return fl_err(c->e, "sequence_concat: %d inputs X but %d offsets XLod", n, fl_call_nin(c, lods_slot));
    const FlTensor *const *xs = fl_call_ins(c, xs_slot), *const *ls = fl_call_ins(c, lods_slot);
    const int64_t **o = fl_xcalloc((size_t)n, sizeof *o);
    for (int k = 0; k < n; k++) {
        char name[32];
        int64_t ns;
        snprintf(name, sizeof name, "XLod[%d]", k);
        if (lod_of(c, xs[k], ls[k], name, &o[k], &ns)) goto fail;
        if (k > 0 && ns != *nseq) {
            fl_err(c->e, "sequence_concat: X[%d] holds %lld sequences but X[0] holds %lld", k, (long long)ns,
                   (long long)*nseq);
            goto fail;
        }
        *nseq = ns;
    }
    *offs = o;
    return FL_OK;
fail:
    free(o);
    return FL_ERROR;
}

static FlStatus run_sequence_concat(OpCall *c) {
    const int64_t **offs;
    int64_t nseq;
    if (concat_lods(c, FL_IN_sequence_concat_X, FL_IN_sequence_concat_XLod, &offs, &nseq)) return FL_ERROR;
    FlStatus st = fl_kernel_sequence_concat(c->e, fl_call_ins(c, FL_IN_sequence_concat_X), offs,
                                            fl_call_nin(c, FL_IN_sequence_concat_X), nseq,
                                            OUT(FL_OUT_sequence_concat_Out), OUT(FL_OUT_sequence_concat_OutLod));
    free(offs);
    return st;
}
FL_ADAPTER(sequence_concat, NULL, run_sequence_concat);
/* sequence_concat_grad: X* XLod* Out@GRAD -> X@GRAD* (as many as X, or none) */
static FlStatus run_sequence_concat_grad(OpCall *c) {
    int n = fl_call_nin(c, FL_IN_sequence_concat_grad_X), nd = fl_call_nout(c, FL_OUT_sequence_concat_grad_X_GRAD);
    if (nd == 0) return FL_OK;
    if (nd != n) return fl_err(c->e, "sequence_concat_grad: %d inputs but %d input gradients", n, nd);
    const int64_t **offs;
    int64_t nseq;
    if (concat_lods(c, FL_IN_sequence_concat_grad_X, FL_IN_sequence_concat_grad_XLod, &offs, &nseq)) return FL_ERROR;
    FlStatus st = fl_kernel_sequence_concat_grad(c->e, fl_call_ins(c, FL_IN_sequence_concat_grad_X), offs, n, nseq,
                                                 IN(FL_IN_sequence_concat_grad_Out_GRAD),
                                                 fl_call_outs(c, FL_OUT_sequence_concat_grad_X_GRAD));
    free(offs);
    return st;
}
FL_ADAPTER(sequence_concat_grad, NULL, run_sequence_concat_grad);

/* ---- sequence_reshape ---- */

static FlStatus prep_sequence_reshape(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "new_dim");
    return op->a.i[0] >= 1 ? FL_OK : fl_err(e, "attribute 'new_dim' must be >= 1, found %lld", (long long)op->a.i[0]);
}
static FlStatus run_sequence_reshape(OpCall *c) {
    const FlTensor *x = IN(FL_IN_sequence_reshape_X);
    const int64_t *off;
    int64_t nseq;
    if (lod_of(c, x, IN(FL_IN_sequence_reshape_XLod), "XLod", &off, &nseq)) return FL_ERROR;
    return fl_kernel_sequence_reshape(c->e, x, off, nseq, c->op->a.i[0], OUT(FL_OUT_sequence_reshape_Out),
                                      OUT(FL_OUT_sequence_reshape_OutLod));
}
FL_ADAPTER(sequence_reshape, prep_sequence_reshape, run_sequence_reshape);
/* sequence_reshape_grad: X Out@GRAD -> X@GRAD? */
static FlStatus run_sequence_reshape_grad(OpCall *c) {
    return fl_kernel_sequence_reshape_grad(c->e, IN(FL_IN_sequence_reshape_grad_X),
                                           IN(FL_IN_sequence_reshape_grad_Out_GRAD),
                                           OUT(FL_OUT_sequence_reshape_grad_X_GRAD));
}
FL_ADAPTER(sequence_reshape_grad, prep_sequence_reshape, run_sequence_reshape_grad);

/* ---- sequence_slice ---- */

static FlStatus run_sequence_slice(OpCall *c) {
    const FlTensor *x = IN(FL_IN_sequence_slice_X);
    const int64_t *off;
    int64_t nseq;
    if (lod_of(c, x, IN(FL_IN_sequence_slice_XLod), "XLod", &off, &nseq)) return FL_ERROR;
    return fl_kernel_sequence_slice(c->e, x, off, nseq, IN(FL_IN_sequence_slice_Offset),
                                    IN(FL_IN_sequence_slice_Length), OUT(FL_OUT_sequence_slice_Out),
                                    OUT(FL_OUT_sequence_slice_OutLod));
}
FL_ADAPTER(sequence_slice, NULL, run_sequence_slice);
/* sequence_slice_grad: X XLod Offset Length Out@GRAD -> X@GRAD? */
static FlStatus run_sequence_slice_grad(OpCall *c) {
    const FlTensor *x = IN(FL_IN_sequence_slice_grad_X);
    const int64_t *off;
    int64_t nseq;
    if (!OUT(FL_OUT_sequence_slice_grad_X_GRAD)) return FL_OK;
    if (lod_of(c, x, IN(FL_IN_sequence_slice_grad_XLod), "XLod", &off, &nseq)) return FL_ERROR;
    return fl_kernel_sequence_slice_grad(c->e, x, off, nseq, IN(FL_IN_sequence_slice_grad_Offset),
                                         IN(FL_IN_sequence_slice_grad_Length), IN(FL_IN_sequence_slice_grad_Out_GRAD),
                                         OUT(FL_OUT_sequence_slice_grad_X_GRAD));
}
FL_ADAPTER(sequence_slice_grad, NULL, run_sequence_slice_grad);

/* ---- sequence_pad, sequence_unpad ---- */

static FlStatus prep_sequence_pad(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "padded_length");
    return op->a.i[0] >= -1 ? FL_OK
                            : fl_err(e, "attribute 'padded_length' must be -1 or a length, found %lld",
                                     (long long)op->a.i[0]);
}
static FlStatus run_sequence_pad(OpCall *c) {
    const FlTensor *x = IN(FL_IN_sequence_pad_X);
    const int64_t *off;
    int64_t nseq;
    if (lod_of(c, x, IN(FL_IN_sequence_pad_XLod), "XLod", &off, &nseq)) return FL_ERROR;
    return fl_kernel_sequence_pad(c->e, x, off, nseq, IN(FL_IN_sequence_pad_PadValue), c->op->a.i[0],
                                  OUT(FL_OUT_sequence_pad_Out), OUT(FL_OUT_sequence_pad_Length));
}
FL_ADAPTER(sequence_pad, prep_sequence_pad, run_sequence_pad);
/* sequence_pad_grad: X XLod Out@GRAD -> X@GRAD? */
static FlStatus run_sequence_pad_grad(OpCall *c) {
    const FlTensor *x = IN(FL_IN_sequence_pad_grad_X);
    const int64_t *off;
    int64_t nseq;
    if (!OUT(FL_OUT_sequence_pad_grad_X_GRAD)) return FL_OK;
    if (lod_of(c, x, IN(FL_IN_sequence_pad_grad_XLod), "XLod", &off, &nseq)) return FL_ERROR;
    return fl_kernel_sequence_pad_grad(c->e, x, off, nseq, IN(FL_IN_sequence_pad_grad_Out_GRAD),
                                       OUT(FL_OUT_sequence_pad_grad_X_GRAD));
}
FL_ADAPTER(sequence_pad_grad, prep_sequence_pad, run_sequence_pad_grad);

static FlStatus run_sequence_unpad(OpCall *c) {
    return fl_kernel_sequence_unpad(c->e, IN(FL_IN_sequence_unpad_X), IN(FL_IN_sequence_unpad_Length),
                                    OUT(FL_OUT_sequence_unpad_Out), OUT(FL_OUT_sequence_unpad_OutLod));
}
FL_ADAPTER(sequence_unpad, NULL, run_sequence_unpad);
/* sequence_unpad_grad: X Length Out@GRAD -> X@GRAD? */
static FlStatus run_sequence_unpad_grad(OpCall *c) {
    return fl_kernel_sequence_unpad_grad(c->e, IN(FL_IN_sequence_unpad_grad_X), IN(FL_IN_sequence_unpad_grad_Length),
                                         IN(FL_IN_sequence_unpad_grad_Out_GRAD),
                                         OUT(FL_OUT_sequence_unpad_grad_X_GRAD));
}
FL_ADAPTER(sequence_unpad_grad, NULL, run_sequence_unpad_grad);

/* ---- sequence_enumerate ---- */

static FlStatus prep_sequence_enumerate(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "win_size");
    op->a.i[1] = fl_exec_attr_int(op, "pad_value");
    return op->a.i[0] >= 1 ? FL_OK
                           : fl_err(e, "attribute 'win_size' must be >= 1, found %lld", (long long)op->a.i[0]);
}
static FlStatus run_sequence_enumerate(OpCall *c) {
    const FlTensor *x = IN(FL_IN_sequence_enumerate_X);
    const int64_t *off;
    int64_t nseq;
    if (lod_of(c, x, IN(FL_IN_sequence_enumerate_XLod), "XLod", &off, &nseq)) return FL_ERROR;
    return fl_kernel_sequence_enumerate(c->e, x, off, nseq, c->op->a.i[0], c->op->a.i[1],
                                        OUT(FL_OUT_sequence_enumerate_Out));
}
FL_ADAPTER(sequence_enumerate, prep_sequence_enumerate, run_sequence_enumerate);

/* ---- lod_reset: Out = X; the offsets its layer gives Out are checked against X's rows ---- */

static FlStatus run_lod_reset(OpCall *c) {
    const FlTensor *x = IN(FL_IN_lod_reset_X);
    const int64_t *off;
    int64_t nseq;
    if (lod_of(c, x, IN(FL_IN_lod_reset_TargetLod), "TargetLod", &off, &nseq)) return FL_ERROR;
    return fl_kernel_assign(c->e, x, OUT(FL_OUT_lod_reset_Out));
}
FL_ADAPTER(lod_reset, NULL, run_lod_reset);
/* lod_reset_grad: X Out@GRAD -> X@GRAD? */
static FlStatus run_lod_reset_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_lod_reset_grad_X_GRAD);
    return dx ? fl_kernel_assign(c->e, IN(FL_IN_lod_reset_grad_Out_GRAD), dx) : FL_OK;
}
FL_ADAPTER(lod_reset_grad, NULL, run_lod_reset_grad);
