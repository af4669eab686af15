/* ops_seqedit.c: the adapters of sequence_scatter and its gradient (kernels in
 * runtime/kernels/seqedit.c); the offsets are checked against the ids they cut
 * (fl_exec_check_lod) before the kernel runs. */
#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_seqedit.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* The offsets in slot s, checked against the rows of ids. */
static FlStatus ids_lod(OpCall *c, int s, const FlTensor *ids, const int64_t **off, int64_t *nseq) {
    if (!ids || !fl_tensor_has_data(ids)) return fl_err(c->e, "the input Ids has no value");
    return fl_exec_check_lod(c->e, IN(s), ids->ndim ? ids->ne[0] : 1, "IdsLod", off, nseq);
}

static FlStatus run_sequence_scatter(OpCall *c) {
    const FlTensor *ids = IN(FL_IN_sequence_scatter_Ids);
    const int64_t *off;
    int64_t n;
    if (ids_lod(c, FL_IN_sequence_scatter_IdsLod, ids, &off, &n)) return FL_ERROR;
    return fl_kernel_sequence_scatter(c->e, IN(FL_IN_sequence_scatter_X), ids, IN(FL_IN_sequence_scatter_Updates), off,
                                      n, OUT(FL_OUT_sequence_scatter_Out));
}
FL_ADAPTER(sequence_scatter, NULL, run_sequence_scatter);
/* sequence_scatter_grad: Ids IdsLod Out@GRAD -> X@GRAD? Updates@GRAD? */
static FlStatus run_sequence_scatter_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_sequence_scatter_grad_X_GRAD), *du = OUT(FL_OUT_sequence_scatter_grad_Updates_GRAD);
    if (!dx && !du) return FL_OK;
    const FlTensor *ids = IN(FL_IN_sequence_scatter_grad_Ids);
    const int64_t *off;
    int64_t n;
    if (ids_lod(c, FL_IN_sequence_scatter_grad_IdsLod, ids, &off, &n)) return FL_ERROR;
    return fl_kernel_sequence_scatter_grad(c->e, ids, off, n, IN(FL_IN_sequence_scatter_grad_Out_GRAD), dx, du);
}
FL_ADAPTER(sequence_scatter_grad, NULL, run_sequence_scatter_grad);
