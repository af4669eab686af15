/* ops_ctc.c: adapters of the CTC ops warpctc (and its gradient), ctc_align, edit_distance and
 * sequence_erase (kernels in runtime/kernels/ctc.c). Each checks its offsets inputs against the
 * rows they cut (fl_exec_check_lod) before the kernel runs. */
#include <string.h>

#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_ctc.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* The offsets in slot s, checked against the rows of x (its first dim). */
static FlStatus lod_of(OpCall *c, int s, const FlTensor *x, const char *slot, const int64_t **off, int64_t *nseq) {
    if (!x || !fl_tensor_has_data(x)) return fl_err(c->e, "the input %s cuts has no value", slot);
    return fl_exec_check_lod(c->e, IN(s), x->ndim ? x->ne[0] : 1, slot, off, nseq);
}

/* ---- warpctc ---- */

/* a.i[0] blank, a.b[0] norm_by_times */
static FlStatus prep_warpctc(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_int(op, "blank");
    op->a.b[0] = fl_exec_attr_bool(op, "norm_by_times");
    return FL_OK;
}
static FlStatus run_warpctc(OpCall *c) {
    const FlTensor *x = IN(FL_IN_warpctc_Logits), *lab = IN(FL_IN_warpctc_Label);
    const int64_t *off, *loff;
    int64_t n, nl;
    if (lod_of(c, FL_IN_warpctc_LogitsLod, x, "LogitsLod", &off, &n) ||
        lod_of(c, FL_IN_warpctc_LabelLod, lab, "LabelLod", &loff, &nl))
        return FL_ERROR;
    return fl_kernel_warpctc(c->e, x, off, n, lab, loff, nl, c->op->a.i[0], OUT(FL_OUT_warpctc_WarpCTCGrad),
                             OUT(FL_OUT_warpctc_Loss));
}
FL_ADAPTER(warpctc, prep_warpctc, run_warpctc);
/* warpctc_grad: Logits LogitsLod WarpCTCGrad Loss@GRAD -> Logits@GRAD? */
static FlStatus run_warpctc_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_warpctc_grad_Logits_GRAD);
    if (!dx) return FL_OK;
    const FlTensor *g = IN(FL_IN_warpctc_grad_WarpCTCGrad);
    const int64_t *off;
    int64_t n;
    if (lod_of(c, FL_IN_warpctc_grad_LogitsLod, g, "LogitsLod", &off, &n)) return FL_ERROR;
    return fl_kernel_warpctc_grad(c->e, g, off, n, IN(FL_IN_warpctc_grad_Loss_GRAD), c->op->a.b[0], dx);
}
FL_ADAPTER(warpctc_grad, prep_warpctc, run_warpctc_grad);

/* ---- ctc_align ---- */

/* a.i[0] blank, a.b[0] merge_repeated */
static FlStatus prep_ctc_align(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_int(op, "blank");
    op->a.b[0] = fl_exec_attr_bool(op, "merge_repeated");
    return FL_OK;
}
static FlStatus run_ctc_align(OpCall *c) {
    const FlTensor *x = IN(FL_IN_ctc_align_Input);
    const int64_t *off;
    int64_t n;
    if (lod_of(c, FL_IN_ctc_align_InputLod, x, "InputLod", &off, &n)) return FL_ERROR;
    return fl_kernel_ctc_align(c->e, x, off, n, c->op->a.i[0], c->op->a.b[0], OUT(FL_OUT_ctc_align_Output),
                               OUT(FL_OUT_ctc_align_OutputLod));
}
FL_ADAPTER(ctc_align, prep_ctc_align, run_ctc_align);

/* ---- edit_distance ---- */

static FlStatus prep_edit_distance(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.b[0] = fl_exec_attr_bool(op, "normalized");
    return FL_OK;
}
static FlStatus run_edit_distance(OpCall *c) {
    const FlTensor *h = IN(FL_IN_edit_distance_Hyps), *r = IN(FL_IN_edit_distance_Refs);
    const int64_t *hoff, *roff;
    int64_t nh, nr;
    if (lod_of(c, FL_IN_edit_distance_HypsLod, h, "HypsLod", &hoff, &nh) ||
        lod_of(c, FL_IN_edit_distance_RefsLod, r, "RefsLod", &roff, &nr))
        return FL_ERROR;
    return fl_kernel_edit_distance(c->e, h, hoff, nh, r, roff, nr, c->op->a.b[0], OUT(FL_OUT_edit_distance_Out),
                                   OUT(FL_OUT_edit_distance_SequenceNum));
}
FL_ADAPTER(edit_distance, prep_edit_distance, run_edit_distance);

/* ---- sequence_erase ---- */

/* a.list / a.nlist: the tokens */
static FlStatus prep_sequence_erase(ExecOp *op, FlErr *e) {
    (void)e;
    size_t n;
    const int64_t *t = fl_exec_attr_ints(op, "tokens", &n);
    if (n) {
        op->a.list = fl_xmalloc(n * sizeof *op->a.list);
        memcpy(op->a.list, t, n * sizeof *t);
    }
    op->a.nlist = (int)n;
    return FL_OK;
}
static FlStatus run_sequence_erase(OpCall *c) {
    const FlTensor *x = IN(FL_IN_sequence_erase_X);
    const int64_t *off;
    int64_t n;
    if (lod_of(c, FL_IN_sequence_erase_XLod, x, "XLod", &off, &n)) return FL_ERROR;
    return fl_kernel_sequence_erase(c->e, x, off, n, c->op->a.list, (size_t)c->op->a.nlist,
                                    OUT(FL_OUT_sequence_erase_Out), OUT(FL_OUT_sequence_erase_OutLod));
}
FL_ADAPTER(sequence_erase, prep_sequence_erase, run_sequence_erase);
