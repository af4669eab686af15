/* ops_proposals.c: adapters of the proposal ops (compiler/ops/proposals.def; kernels in
 * runtime/kernels/proposals.c). Each prepare reads the op's attributes once into op->a (lists
 * into op->a.extra, freed with it). */
#include <stdlib.h>
#include <string.h>

#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_proposals.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* The offsets of two LoD inputs (slots in[i], their offsets lod[i], named name[i]) and the
 * images they cut, which must be as many. */
static FlStatus two_lods(OpCall *c, const int in[2], const int lod[2], const char *const name[2],
                         const FlTensor *t[2], const int64_t *off[2], int64_t *nseq) {
    int64_t n[2];
    for (int i = 0; i < 2; i++) {
        t[i] = IN(in[i]);
        if (fl_exec_check_lod(c->e, IN(lod[i]), t[i] ? t[i]->ne[0] : -1, name[i], &off[i], &n[i])) return FL_ERROR;
    }
    *nseq = n[0];
    if (n[0] == n[1]) return FL_OK;
    return fl_err(c->e, "%s cuts %lld images but %s %lld", name[0], (long long)n[0], name[1], (long long)n[1]);
}

/* ---- yolov3_loss ---- */

/* op->a.extra: an FlYoloLossAttrs followed by its anchors and mask */
static FlStatus prep_yolov3_loss(ExecOp *op, FlErr *e) {
    size_t na, nm;
    const int64_t *an = fl_exec_attr_ints(op, "anchors", &na), *mask = fl_exec_attr_ints(op, "anchor_mask", &nm);
    FlYoloLossAttrs *a = fl_xcalloc(1, sizeof *a + (na + nm) * sizeof(int64_t));
    op->a.extra = a;
    int64_t *lists = (int64_t *)(a + 1);
    if (na) memcpy(lists, an, na * sizeof *an);
    if (nm) memcpy(lists + na, mask, nm * sizeof *mask);
    a->anchors = lists, a->mask = lists + na;
    a->n_anchors = (int)(na / 2), a->n_mask = (int)nm;
    int64_t C = fl_exec_attr_int(op, "class_num"), ratio = fl_exec_attr_int(op, "downsample_ratio");
    a->ignore_thresh = fl_exec_attr_float(op, "ignore_thresh");
    a->label_smooth = fl_exec_attr_bool(op, "use_label_smooth");
    if (na == 0 || na % 2)
        return fl_err(e, "attribute 'anchors' must hold (width, height) pairs, found %zu values", na);
    for (size_t i = 0; i < na; i++)
        if (an[i] <= 0 || an[i] > (1 << 24))
            return fl_err(e, "attribute 'anchors' must be in [1, 2^24], found %lld", (long long)an[i]);
    if (nm == 0 || nm > 1024) return fl_err(e, "attribute 'anchor_mask' must hold 1 to 1024 indices, found %zu", nm);
    for (size_t i = 0; i < nm; i++)
        if (mask[i] < 0 || mask[i] >= (int64_t)(na / 2))
            return fl_err(e, "attribute 'anchor_mask' must index the %zu anchors, found %lld", na / 2,
                          (long long)mask[i]);
    if (C < 1 || C > (1 << 20))
        return fl_err(e, "attribute 'class_num' must be in [1, 2^20], found %lld", (long long)C);
    if (ratio < 1 || ratio > (1 << 20))
        return fl_err(e, "attribute 'downsample_ratio' must be in [1, 2^20], found %lld", (long long)ratio);
    a->class_num = (int)C, a->downsample_ratio = (int)ratio;
    return FL_OK;
}
static FlStatus run_yolov3_loss(OpCall *c) {
    return fl_kernel_yolov3_loss(c->e, IN(FL_IN_yolov3_loss_X), IN(FL_IN_yolov3_loss_GTBox),
                                 IN(FL_IN_yolov3_loss_GTLabel), IN(FL_IN_yolov3_loss_GTScore), c->op->a.extra,
                                 OUT(FL_OUT_yolov3_loss_Loss), OUT(FL_OUT_yolov3_loss_ObjectnessMask),
                                 OUT(FL_OUT_yolov3_loss_GTMatchMask));
}
FL_ADAPTER(yolov3_loss, prep_yolov3_loss, run_yolov3_loss);
/* yolov3_loss_grad: X GTBox GTLabel GTScore? ObjectnessMask GTMatchMask Loss@GRAD -> X@GRAD? */
static FlStatus run_yolov3_loss_grad(OpCall *c) {
    return fl_kernel_yolov3_loss_grad(
        c->e, IN(FL_IN_yolov3_loss_grad_X), IN(FL_IN_yolov3_loss_grad_GTBox), IN(FL_IN_yolov3_loss_grad_GTLabel),
        IN(FL_IN_yolov3_loss_grad_GTScore), IN(FL_IN_yolov3_loss_grad_ObjectnessMask),
        IN(FL_IN_yolov3_loss_grad_GTMatchMask), IN(FL_IN_yolov3_loss_grad_Loss_GRAD), c->op->a.extra,
        OUT(FL_OUT_yolov3_loss_grad_X_GRAD));
}
FL_ADAPTER(yolov3_loss_grad, prep_yolov3_loss, run_yolov3_loss_grad);

/* ---- generate_proposals ---- */

/* a.i[0..1] pre_nms_topN, post_nms_topN; a.f[0..2] nms_thresh, min_size, eta */
static FlStatus prep_generate_proposals(ExecOp *op, FlErr *e) {
    static const char *const ints[] = {"pre_nms_topN", "post_nms_topN"};
    static const char *const floats[] = {"nms_thresh", "min_size", "eta"};
    for (int i = 0; i < 2; i++) op->a.i[i] = fl_exec_attr_int(op, ints[i]);
    for (int i = 0; i < 3; i++) op->a.f[i] = fl_exec_attr_float(op, floats[i]);
    if (!(op->a.f[2] > 0 && op->a.f[2] <= 1))
        return fl_err(e, "attribute 'eta' must be in (0, 1], found %g", op->a.f[2]);
    return FL_OK;
}
static FlStatus run_generate_proposals(OpCall *c) {
    const PAttrs *p = &c->op->a;
    FlProposalAttrs a = {p->i[0], p->i[1], p->f[0], p->f[1], p->f[2]};
    return fl_kernel_generate_proposals(
        c->e, IN(FL_IN_generate_proposals_Scores), IN(FL_IN_generate_proposals_BboxDeltas),
        IN(FL_IN_generate_proposals_ImInfo), IN(FL_IN_generate_proposals_Anchors),
        IN(FL_IN_generate_proposals_Variances), &a, OUT(FL_OUT_generate_proposals_RpnRois),
        OUT(FL_OUT_generate_proposals_RpnRoiProbs), OUT(FL_OUT_generate_proposals_RpnRoisLod));
}
FL_ADAPTER(generate_proposals, prep_generate_proposals, run_generate_proposals);

/* ---- rpn_target_assign ---- */

/* a.i[0] rpn_batch_size_per_im; a.f[0..3] straddle, positive, negative overlap, fg fraction;
 * a.b[0] use_random */
static FlStatus prep_rpn_target_assign(ExecOp *op, FlErr *e) {
    static const char *const floats[] = {"rpn_straddle_thresh", "rpn_positive_overlap", "rpn_negative_overlap",
                                         "rpn_fg_fraction"};
    op->a.i[0] = fl_exec_attr_int(op, "rpn_batch_size_per_im");
    for (int i = 0; i < 4; i++) op->a.f[i] = fl_exec_attr_float(op, floats[i]);
    op->a.b[0] = fl_exec_attr_bool(op, "use_random");
    if (op->a.i[0] < 1) return fl_err(e, "attribute 'rpn_batch_size_per_im' must be >= 1");
    if (!(op->a.f[3] >= 0 && op->a.f[3] <= 1))
        return fl_err(e, "attribute 'rpn_fg_fraction' must be in [0, 1], found %g", op->a.f[3]);
    return FL_OK;
}
/* each run draws its samples from (seed, run number), as dropout its mask */
static FlStatus run_rpn_target_assign(OpCall *c) {
    const PAttrs *p = &c->op->a;
    static const char *const names[2] = {"GtBoxesLod", "IsCrowdLod"};
    const int in[2] = {FL_IN_rpn_target_assign_GtBoxes, FL_IN_rpn_target_assign_IsCrowd};
    const int lod[2] = {FL_IN_rpn_target_assign_GtBoxesLod, FL_IN_rpn_target_assign_IsCrowdLod};
    const FlTensor *t[2];
    const int64_t *off[2];
    int64_t nseq;
    if (two_lods(c, in, lod, names, t, off, &nseq)) return FL_ERROR;
    FlRpnTargetAttrs a = {p->i[0], p->f[0], p->f[1], p->f[2], p->f[3], p->b[0], c->op->seed, c->rc->step};
    FlRpnTargets out = {OUT(FL_OUT_rpn_target_assign_LocationIndex), OUT(FL_OUT_rpn_target_assign_ScoreIndex),
                        OUT(FL_OUT_rpn_target_assign_TargetBBox), OUT(FL_OUT_rpn_target_assign_TargetLabel),
                        OUT(FL_OUT_rpn_target_assign_BBoxInsideWeight), OUT(FL_OUT_rpn_target_assign_LocationLod),
                        OUT(FL_OUT_rpn_target_assign_ScoreLod)};
    return fl_kernel_rpn_target_assign(c->e, IN(FL_IN_rpn_target_assign_Anchor), t[0], off[0], nseq, t[1], off[1],
                                       IN(FL_IN_rpn_target_assign_ImInfo), &a, &out);
}
FL_ADAPTER(rpn_target_assign, prep_rpn_target_assign, run_rpn_target_assign);

/* ---- distribute_fpn_proposals, collect_fpn_proposals ---- */

/* a.i[0..3] min_level, max_level, refer_level, refer_scale */
static FlStatus prep_distribute_fpn(ExecOp *op, FlErr *e) {
    static const char *const names[] = {"min_level", "max_level", "refer_level", "refer_scale"};
    for (int i = 0; i < 4; i++) op->a.i[i] = fl_exec_attr_int(op, names[i]);
    if (op->a.i[0] < 0 || op->a.i[1] < op->a.i[0] || op->a.i[1] - op->a.i[0] >= 64 || op->a.i[2] < -64 ||
        op->a.i[2] > 64 || op->a.i[3] < 1 || op->a.i[3] > (1 << 24))
        return fl_err(e, "attributes min_level %lld, max_level %lld, refer_level %lld, refer_scale %lld out of range",
                      (long long)op->a.i[0], (long long)op->a.i[1], (long long)op->a.i[2], (long long)op->a.i[3]);
    return FL_OK;
}
static FlStatus run_distribute_fpn(OpCall *c) {
    const PAttrs *p = &c->op->a;
    const FlTensor *r = IN(FL_IN_distribute_fpn_proposals_FpnRois);
    const int64_t *off;
    int64_t nseq;
    int L = (int)(p->i[1] - p->i[0] + 1);
    if (fl_exec_check_lod(c->e, IN(FL_IN_distribute_fpn_proposals_FpnRoisLod), r ? r->ne[0] : -1, "FpnRoisLod", &off,
                          &nseq))
        return FL_ERROR;
    if (fl_call_nout(c, FL_OUT_distribute_fpn_proposals_MultiFpnRois) != L ||
        fl_call_nout(c, FL_OUT_distribute_fpn_proposals_MultiFpnRoisLod) != L)
        return fl_err(c->e, "MultiFpnRois and MultiFpnRoisLod must hold %d vars, one per level", L);
    return fl_kernel_distribute_fpn_proposals(
        c->e, r, off, nseq, (int)p->i[0], (int)p->i[1], (int)p->i[2], (int)p->i[3],
        fl_call_outs(c, FL_OUT_distribute_fpn_proposals_MultiFpnRois),
        fl_call_outs(c, FL_OUT_distribute_fpn_proposals_MultiFpnRoisLod),
        OUT(FL_OUT_distribute_fpn_proposals_RestoreIndex));
}
FL_ADAPTER(distribute_fpn_proposals, prep_distribute_fpn, run_distribute_fpn);

static FlStatus prep_collect_fpn(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "post_nms_topN");
    if (op->a.i[0] < 0) return fl_err(e, "attribute 'post_nms_topN' must be >= 0, found %lld", (long long)op->a.i[0]);
    return FL_OK;
}
static FlStatus run_collect_fpn(OpCall *c) {
    int L = fl_call_nin(c, FL_IN_collect_fpn_proposals_MultiLevelRois);
    const FlTensor *const *rois = fl_call_ins(c, FL_IN_collect_fpn_proposals_MultiLevelRois);
    const FlTensor *const *lods = fl_call_ins(c, FL_IN_collect_fpn_proposals_MultiLevelLod);
    if (L < 1 || fl_call_nin(c, FL_IN_collect_fpn_proposals_MultiLevelScores) != L ||
        fl_call_nin(c, FL_IN_collect_fpn_proposals_MultiLevelLod) != L)
        return fl_err(c->e, "MultiLevelRois, MultiLevelScores and MultiLevelLod must hold one var per level");
    const int64_t **offs = fl_xcalloc((size_t)L, sizeof *offs);
    int64_t nseq = 0, n;
    FlStatus st = FL_OK;
    for (int k = 0; k < L && st == FL_OK; k++) {
        st = fl_exec_check_lod(c->e, lods[k], rois[k] ? rois[k]->ne[0] : -1, "MultiLevelLod", &offs[k], &n);
        if (st == FL_OK && k && n != nseq)
            st = fl_err(c->e, "level %d's RoIs are cut into %lld images, level 0's into %lld", k, (long long)n,
                        (long long)nseq);
        nseq = n;
    }
    if (st == FL_OK)
        st = fl_kernel_collect_fpn_proposals(c->e, rois, fl_call_ins(c, FL_IN_collect_fpn_proposals_MultiLevelScores),
                                             offs, L, nseq, c->op->a.i[0], OUT(FL_OUT_collect_fpn_proposals_FpnRois),
                                             OUT(FL_OUT_collect_fpn_proposals_FpnRoisLod));
    free(offs);
    return st;
}
FL_ADAPTER(collect_fpn_proposals, prep_collect_fpn, run_collect_fpn);

/* ---- generate_proposal_labels ---- */

/* a.i[0..1] batch_size_per_im, class_nums; a.f[0..3] fg_fraction, fg_thresh, bg_thresh_hi,
 * bg_thresh_lo; a.b[0..2] use_random, is_cls_agnostic, is_cascade_rcnn; op->a.extra the 4 bbox_reg_weights */
static FlStatus prep_proposal_labels(ExecOp *op, FlErr *e) {
    static const char *const floats[] = {"fg_fraction", "fg_thresh", "bg_thresh_hi", "bg_thresh_lo"};
    op->a.i[0] = fl_exec_attr_int(op, "batch_size_per_im");
    op->a.i[1] = fl_exec_attr_int(op, "class_nums");
    for (int i = 0; i < 4; i++) op->a.f[i] = fl_exec_attr_float(op, floats[i]);
    op->a.b[0] = fl_exec_attr_bool(op, "use_random");
    op->a.b[1] = fl_exec_attr_bool(op, "is_cls_agnostic");
    op->a.b[2] = fl_exec_attr_bool(op, "is_cascade_rcnn");
    size_t n;
    const double *w = fl_exec_attr_floats(op, "bbox_reg_weights", &n);
    double *ws = fl_xcalloc(4, sizeof *ws);
    op->a.extra = ws;
    if (n != 4) return fl_err(e, "attribute 'bbox_reg_weights' must hold 4 values, found %zu", n);
    memcpy(ws, w, 4 * sizeof *ws);
    if (op->a.i[0] < 1 || op->a.i[1] < 1 || op->a.i[1] > (1 << 20))
        return fl_err(e, "attributes 'batch_size_per_im' (%lld) and 'class_nums' (%lld) must be >= 1",
                      (long long)op->a.i[0], (long long)op->a.i[1]);
    return FL_OK;
}
static FlStatus run_proposal_labels(OpCall *c) {
    const PAttrs *p = &c->op->a;
    static const char *const names[2] = {"RpnRoisLod", "GtBoxesLod"};
    const int in[2] = {FL_IN_generate_proposal_labels_RpnRois, FL_IN_generate_proposal_labels_GtBoxes};
    const int lod[2] = {FL_IN_generate_proposal_labels_RpnRoisLod, FL_IN_generate_proposal_labels_GtBoxesLod};
    const FlTensor *t[2];
    const int64_t *off[2];
    int64_t nseq;
    if (two_lods(c, in, lod, names, t, off, &nseq)) return FL_ERROR;
    const double *w = p->extra;
    FlProposalLabelAttrs a = {p->i[0], p->i[1], p->f[0], p->f[1], p->f[2], p->f[3], {w[0], w[1], w[2], w[3]},
                              p->b[0], p->b[1], p->b[2], c->op->seed, c->rc->step};
    FlProposalLabels out = {OUT(FL_OUT_generate_proposal_labels_Rois), OUT(FL_OUT_generate_proposal_labels_LabelsInt32),
                            OUT(FL_OUT_generate_proposal_labels_BboxTargets),
                            OUT(FL_OUT_generate_proposal_labels_BboxInsideWeights),
                            OUT(FL_OUT_generate_proposal_labels_BboxOutsideWeights),
                            OUT(FL_OUT_generate_proposal_labels_RoisLod)};
    return fl_kernel_generate_proposal_labels(c->e, t[0], off[0], nseq, IN(FL_IN_generate_proposal_labels_GtClasses),
                                              IN(FL_IN_generate_proposal_labels_IsCrowd), t[1], off[1],
                                              IN(FL_IN_generate_proposal_labels_ImInfo), &a, &out);
}
FL_ADAPTER(generate_proposal_labels, prep_proposal_labels, run_proposal_labels);
