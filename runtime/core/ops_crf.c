/* ops_crf.c: adapters of the sequence-labelling ops linear_chain_crf (and its gradient),
 * crf_decoding and chunk_eval (kernels in runtime/kernels/crf.c). Each checks its offsets
 * inputs against the rows they cut (fl_exec_check_lod) before the kernel runs. */
#include <stdlib.h>
#include <string.h>

#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_crf.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* The offsets in slot s, checked against the rows of x (first dim). */
static FlStatus lod_of(OpCall *c, int s, const FlTensor *x, const char *slot, const int64_t **off, int64_t *nseq) {
    return fl_exec_check_lod(c->e, IN(s), x->ndim ? x->ne[0] : 1, slot, off, nseq);
}

/* ---- linear_chain_crf ---- */

static FlStatus run_linear_chain_crf(OpCall *c) {
    const FlTensor *x = IN(FL_IN_linear_chain_crf_Emission);
    const int64_t *off;
    int64_t nseq;
    if (lod_of(c, FL_IN_linear_chain_crf_EmissionLod, x, "EmissionLod", &off, &nseq)) return FL_ERROR;
    return fl_kernel_linear_chain_crf(c->e, x, IN(FL_IN_linear_chain_crf_Transition), IN(FL_IN_linear_chain_crf_Label),
                                      off, nseq, OUT(FL_OUT_linear_chain_crf_Alpha),
                                      OUT(FL_OUT_linear_chain_crf_EmissionExps),
                                      OUT(FL_OUT_linear_chain_crf_TransitionExps),
                                      OUT(FL_OUT_linear_chain_crf_LogLikelihood));
}
FL_ADAPTER(linear_chain_crf, NULL, run_linear_chain_crf);
/* linear_chain_crf_grad: Emission Transition Label EmissionLod Alpha EmissionExps TransitionExps
 * LogLikelihood@GRAD -> Emission@GRAD? Transition@GRAD? */
static FlStatus run_linear_chain_crf_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_linear_chain_crf_grad_Emission_GRAD),
             *dw = OUT(FL_OUT_linear_chain_crf_grad_Transition_GRAD);
    if (!dx && !dw) return FL_OK;
    const FlTensor *alpha = IN(FL_IN_linear_chain_crf_grad_Alpha);
    const int64_t *off;
    int64_t nseq;
    if (lod_of(c, FL_IN_linear_chain_crf_grad_EmissionLod, alpha, "EmissionLod", &off, &nseq)) return FL_ERROR;
    return fl_kernel_linear_chain_crf_grad(c->e, IN(FL_IN_linear_chain_crf_grad_Label), off, nseq, alpha,
                                           IN(FL_IN_linear_chain_crf_grad_EmissionExps),
                                           IN(FL_IN_linear_chain_crf_grad_TransitionExps),
                                           IN(FL_IN_linear_chain_crf_grad_LogLikelihood_GRAD), dx, dw);
}
FL_ADAPTER(linear_chain_crf_grad, NULL, run_linear_chain_crf_grad);

/* ---- crf_decoding ---- */

static FlStatus run_crf_decoding(OpCall *c) {
    const FlTensor *x = IN(FL_IN_crf_decoding_Emission);
    const int64_t *off;
    int64_t nseq;
    if (lod_of(c, FL_IN_crf_decoding_EmissionLod, x, "EmissionLod", &off, &nseq)) return FL_ERROR;
    return fl_kernel_crf_decoding(c->e, x, IN(FL_IN_crf_decoding_Transition), IN(FL_IN_crf_decoding_Label), off,
                                  nseq, OUT(FL_OUT_crf_decoding_ViterbiPath));
}
FL_ADAPTER(crf_decoding, NULL, run_crf_decoding);

/* ---- chunk_eval ---- */

/* a.i[0] num_chunk_types, a.i[1] the scheme, a.list / a.nlist excluded_chunk_types */
static FlStatus prep_chunk_eval(ExecOp *op, FlErr *e) {
    const char *scheme = fl_exec_attr_string(op, "chunk_scheme");
    op->a.i[0] = fl_exec_attr_int(op, "num_chunk_types");
    op->a.i[1] = fl_chunk_scheme_find(scheme);
    if (op->a.i[1] == FL_CHUNK_COUNT)
        return fl_err(e, "attribute 'chunk_scheme' must be IOB, IOE, IOBES or plain, found '%s'", scheme);
    if (op->a.i[0] < 1 || op->a.i[0] > (1 << 24))
        return fl_err(e, "attribute 'num_chunk_types' must be in [1, 2^24], found %lld", (long long)op->a.i[0]);
    size_t n;
    const int64_t *ex = fl_exec_attr_ints(op, "excluded_chunk_types", &n);
    if (n) {
        op->a.list = fl_xmalloc(n * sizeof *op->a.list);
        memcpy(op->a.list, ex, n * sizeof *ex);
    }
    op->a.nlist = (int)n;
    return FL_OK;
}
static FlStatus run_chunk_eval(OpCall *c) {
    const PAttrs *a = &c->op->a;
    const FlTensor *inf = IN(FL_IN_chunk_eval_Inference), *lab = IN(FL_IN_chunk_eval_Label);
    const int64_t *off, *loff;
    int64_t nseq, nlseq;
    if (lod_of(c, FL_IN_chunk_eval_InferenceLod, inf, "InferenceLod", &off, &nseq) ||
        lod_of(c, FL_IN_chunk_eval_LabelLod, lab, "LabelLod", &loff, &nlseq))
        return FL_ERROR;
    if (nseq != nlseq || memcmp(off, loff, (size_t)(nseq + 1) * sizeof *off) != 0)
        return fl_err(c->e, "Inference and Label must be cut into the same sequences: InferenceLod has %lld "
                      "sequences and LabelLod %lld%s", (long long)nseq, (long long)nlseq,
                      nseq == nlseq ? ", of other lengths" : "");
    return fl_kernel_chunk_eval(c->e, inf, lab, off, nseq, (int)a->i[0], (FlChunkScheme)a->i[1], a->list,
                                (size_t)a->nlist, OUT(FL_OUT_chunk_eval_Precision), OUT(FL_OUT_chunk_eval_Recall),
                                OUT(FL_OUT_chunk_eval_F1Score), OUT(FL_OUT_chunk_eval_NumInferChunks),
                                OUT(FL_OUT_chunk_eval_NumLabelChunks), OUT(FL_OUT_chunk_eval_NumCorrectChunks));
}
FL_ADAPTER(chunk_eval, prep_chunk_eval, run_chunk_eval);
