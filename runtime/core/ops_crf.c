/* ops_crf.c: adapters of the sequence-labelling ops linear_chain_crf (and its gradient) and
 * crf_decoding (kernels in runtime/kernels/crf.c). Each checks its offsets
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
