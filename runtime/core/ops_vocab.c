/* ops_vocab.c: adapters of the losses over large vocabularies, hierarchical_sigmoid, nce and
 * sample_logits and their gradients (kernels in runtime/kernels/vocab.c). */
#include "runtime/core/exec_impl.h"
#include <stdlib.h>

#include "runtime/kernels/kernels_vocab.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* a.i[0] num_classes */
static FlStatus prep_hierarchical_sigmoid(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_int(op, "num_classes");
    return FL_OK;
}
static FlStatus run_hierarchical_sigmoid(OpCall *c) {
    FlHsigmoidTree t = {c->op->a.i[0], IN(FL_IN_hierarchical_sigmoid_PathTable),
                        IN(FL_IN_hierarchical_sigmoid_PathCode)};
    return fl_kernel_hsigmoid(c->e, IN(FL_IN_hierarchical_sigmoid_X), IN(FL_IN_hierarchical_sigmoid_W),
                              IN(FL_IN_hierarchical_sigmoid_Label), IN(FL_IN_hierarchical_sigmoid_Bias), &t,
                              OUT(FL_OUT_hierarchical_sigmoid_Out), OUT(FL_OUT_hierarchical_sigmoid_PreOut));
}
FL_ADAPTER(hierarchical_sigmoid, prep_hierarchical_sigmoid, run_hierarchical_sigmoid);
/* hierarchical_sigmoid_grad: X W Label PathTable? PathCode? Bias? PreOut Out@GRAD -> X@GRAD? W@GRAD?
 * Bias@GRAD? */
static FlStatus run_hierarchical_sigmoid_grad(OpCall *c) {
    FlHsigmoidTree t = {c->op->a.i[0], IN(FL_IN_hierarchical_sigmoid_grad_PathTable),
                        IN(FL_IN_hierarchical_sigmoid_grad_PathCode)};
    return fl_kernel_hsigmoid_grad(
        c->e, IN(FL_IN_hierarchical_sigmoid_grad_X), IN(FL_IN_hierarchical_sigmoid_grad_W),
        IN(FL_IN_hierarchical_sigmoid_grad_Label), IN(FL_IN_hierarchical_sigmoid_grad_Bias), &t,
        IN(FL_IN_hierarchical_sigmoid_grad_PreOut), IN(FL_IN_hierarchical_sigmoid_grad_Out_GRAD),
        OUT(FL_OUT_hierarchical_sigmoid_grad_X_GRAD), OUT(FL_OUT_hierarchical_sigmoid_grad_W_GRAD),
        fl_call_out_rows(c, FL_OUT_hierarchical_sigmoid_grad_W_GRAD), OUT(FL_OUT_hierarchical_sigmoid_grad_Bias_GRAD));
}
/* sparse: W@GRAD is a SelectedRows when the program declares it one (is_sparse) */
FL_SPARSE_ADAPTER(hierarchical_sigmoid_grad, prep_hierarchical_sigmoid, run_hierarchical_sigmoid_grad);

/* nce: an FlNceAttrs in a.extra (dist points into the op's attribute; seed and step set per run) */
static FlStatus prep_nce(ExecOp *op, FlErr *e) {
    FlNceAttrs *p = fl_xcalloc(1, sizeof *p);
    op->a.extra = p;
    p->num_total = fl_exec_attr_int(op, "num_total_classes");
    p->num_neg = fl_exec_attr_int(op, "num_neg_samples");
    int64_t s = fl_exec_attr_int(op, "sampler");
    p->dist = fl_exec_attr_floats(op, "custom_dist", &p->ndist);
    size_t nneg;
    p->neg = fl_exec_attr_ints(op, "custom_neg_classes", &nneg);
    if (nneg == 0) p->neg = NULL;
    else if ((int64_t)nneg != p->num_neg)
        return fl_err(e, "custom_neg_classes holds %zu classes but num_neg_samples is %lld", nneg,
                      (long long)p->num_neg);
    if (p->num_total < 1 || p->num_neg < 0 || s < 0 || s > 2)
        return fl_err(e, "num_total_classes %lld, num_neg_samples %lld and sampler %lld are not >= 1, >= 0 and 0..2",
                      (long long)p->num_total, (long long)p->num_neg, (long long)s);
    p->sampler = (int)s;
    return FL_OK;
}
static FlNceAttrs nce_attrs(OpCall *c) {
    FlNceAttrs a = *(const FlNceAttrs *)c->op->a.extra;
    a.seed = c->op->seed;
    a.step = c->rc->step;
    return a;
}
static FlStatus run_nce(OpCall *c) {
    FlNceAttrs a = nce_attrs(c);
    return fl_kernel_nce(c->e, IN(FL_IN_nce_Input), IN(FL_IN_nce_Label), IN(FL_IN_nce_Weight), IN(FL_IN_nce_Bias),
                         IN(FL_IN_nce_SampleWeight), &a, OUT(FL_OUT_nce_Cost), OUT(FL_OUT_nce_SampleLogits),
                         OUT(FL_OUT_nce_SampleLabels));
}
FL_ADAPTER(nce, prep_nce, run_nce);
/* nce_grad: Input Label Weight Bias? SampleWeight? SampleLogits SampleLabels Cost@GRAD -> Input@GRAD?
 * Weight@GRAD? Bias@GRAD? */
static FlStatus run_nce_grad(OpCall *c) {
    FlNceAttrs a = nce_attrs(c);
    return fl_kernel_nce_grad(c->e, IN(FL_IN_nce_grad_Input), IN(FL_IN_nce_grad_Label), IN(FL_IN_nce_grad_Weight),
                              IN(FL_IN_nce_grad_Bias), IN(FL_IN_nce_grad_SampleWeight), &a,
                              IN(FL_IN_nce_grad_SampleLogits), IN(FL_IN_nce_grad_SampleLabels),
                              IN(FL_IN_nce_grad_Cost_GRAD), OUT(FL_OUT_nce_grad_Input_GRAD),
                              OUT(FL_OUT_nce_grad_Weight_GRAD), fl_call_out_rows(c, FL_OUT_nce_grad_Weight_GRAD),
                              OUT(FL_OUT_nce_grad_Bias_GRAD));
}
/* sparse: Weight@GRAD is a SelectedRows when the program declares it one (is_sparse) */
FL_SPARSE_ADAPTER(nce_grad, prep_nce, run_nce_grad);

/* sample_logits: a.i[0] num_samples, a.i[1] use_customized_samples, a.i[2] remove_accidental_hits */
static FlStatus prep_sample_logits(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "num_samples");
    op->a.i[1] = fl_exec_attr_int(op, "use_customized_samples") != 0;
    op->a.i[2] = fl_exec_attr_int(op, "remove_accidental_hits") != 0;
    if (!fl_exec_attr_int(op, "uniq"))
        return fl_err(e, "uniq=False (draws with repeats) is not supported: the drawn classes are distinct");
    return FL_OK;
}
static FlStatus run_sample_logits(OpCall *c) {
    bool custom = c->op->a.i[1];
    return fl_kernel_sample_logits(c->e, IN(FL_IN_sample_logits_Logits), IN(FL_IN_sample_logits_Labels),
                                   custom ? IN(FL_IN_sample_logits_CustomizedSamples) : NULL,
                                   custom ? IN(FL_IN_sample_logits_CustomizedProbabilities) : NULL, c->op->a.i[0],
                                   c->op->a.i[2], c->op->seed, c->rc->step, OUT(FL_OUT_sample_logits_Samples),
                                   OUT(FL_OUT_sample_logits_Probabilities), OUT(FL_OUT_sample_logits_SampledLogits),
                                   OUT(FL_OUT_sample_logits_SampledLabels));
}
FL_ADAPTER(sample_logits, prep_sample_logits, run_sample_logits);
/* sample_logits_grad: Logits Samples SampledLogits@GRAD -> Logits@GRAD? */
static FlStatus run_sample_logits_grad(OpCall *c) {
    return fl_kernel_sample_logits_grad(c->e, IN(FL_IN_sample_logits_grad_Logits), IN(FL_IN_sample_logits_grad_Samples),
                                        IN(FL_IN_sample_logits_grad_SampledLogits_GRAD),
                                        OUT(FL_OUT_sample_logits_grad_Logits_GRAD));
}
FL_ADAPTER(sample_logits_grad, NULL, run_sample_logits_grad);
