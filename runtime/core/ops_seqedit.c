/* ops_seqedit.c: the adapters of sequence_scatter, lod_rank_table and reorder_lod_tensor_by_rank
 * (and their gradients) (kernels in
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

/* ---- lod_rank_table, reorder_lod_tensor_by_rank ---- */

static FlStatus run_lod_rank_table(OpCall *c) {
    const int64_t *off;
    int64_t n;
    if (fl_exec_check_lod(c->e, IN(FL_IN_lod_rank_table_XLod), -1, "XLod", &off, &n)) return FL_ERROR;
    return fl_kernel_lod_rank_table(c->e, off, n, OUT(FL_OUT_lod_rank_table_Out));
}
FL_ADAPTER(lod_rank_table, NULL, run_lod_rank_table);

/* X's sequences: those XLod cuts (checked against X's rows), else its rows (off NULL). */
static FlStatus seqs_of(OpCall *c, int s, const FlTensor *x, const int64_t **off, int64_t *n) {
    if (!x || !fl_tensor_has_data(x) || x->ndim < 1) return fl_err(c->e, "the input X has no rows");
    const FlTensor *lod = IN(s);
    if (lod && fl_tensor_has_data(lod)) return fl_exec_check_lod(c->e, lod, x->ne[0], "XLod", off, n);
    *off = NULL;
    *n = x->ne[0];
    return FL_OK;
}
static FlStatus run_reorder_by_rank(OpCall *c) {
    const FlTensor *x = IN(FL_IN_reorder_lod_tensor_by_rank_X);
    const int64_t *off;
    int64_t n;
    if (seqs_of(c, FL_IN_reorder_lod_tensor_by_rank_XLod, x, &off, &n)) return FL_ERROR;
    return fl_kernel_reorder_by_rank(c->e, x, off, n, IN(FL_IN_reorder_lod_tensor_by_rank_RankTable),
                                     OUT(FL_OUT_reorder_lod_tensor_by_rank_Out),
                                     OUT(FL_OUT_reorder_lod_tensor_by_rank_OutLod));
}
FL_ADAPTER(reorder_lod_tensor_by_rank, NULL, run_reorder_by_rank);
/* reorder_lod_tensor_by_rank_grad: X XLod? RankTable Out@GRAD -> X@GRAD? */
static FlStatus run_reorder_by_rank_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_reorder_lod_tensor_by_rank_grad_X_GRAD);
    if (!dx) return FL_OK;
    const int64_t *off;
    int64_t n;
    if (seqs_of(c, FL_IN_reorder_lod_tensor_by_rank_grad_XLod, IN(FL_IN_reorder_lod_tensor_by_rank_grad_X), &off, &n))
        return FL_ERROR;
    return fl_kernel_reorder_by_rank_grad(c->e, IN(FL_IN_reorder_lod_tensor_by_rank_grad_Out_GRAD), off, n,
                                          IN(FL_IN_reorder_lod_tensor_by_rank_grad_RankTable), dx);
}
FL_ADAPTER(reorder_lod_tensor_by_rank_grad, NULL, run_reorder_by_rank_grad);
