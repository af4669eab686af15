/* kernels_proposals.h: the kernels of the proposal ops (proposals.c: YOLOv3's loss and its
 * gradient; Faster R-CNN's proposals and RPN targets). The conventions of kernels.h and
 * kernels_detection.h hold: outputs replaced whole, NULL gradient outputs not computed, errors
 * name the op and the shapes, every float input of one op shares its dtype (internals double),
 * int inputs int32 or int64, int outputs int32 as in Fluid. */
#ifndef FL_KERNELS_PROPOSALS_H
#define FL_KERNELS_PROPOSALS_H

#include "runtime/kernels/kernels.h"

/* ---- yolov3_loss ---- */

/* yolov3_loss's attributes; the lists are borrowed. */
typedef struct FlYoloLossAttrs {
    const int64_t *anchors, *mask; /* anchors: n_anchors (width, height) pairs; mask: n_mask indices */
    int n_anchors, n_mask, class_num, downsample_ratio;
    double ignore_thresh;
    bool label_smooth;
} FlYoloLossAttrs;
/* yolov3_loss: X [N, M * (5 + C), H, H] (M = n_mask; per masked anchor the channels x, y, w, h,
 * objectness, C classes), GTBox [N, B, 4] (centre x, y, width, height, normalized; a width or
 * height below 1e-6 marks padding), GTLabel int [N, B] (in [0, C) for a real box), GTScore
 * [N, B] or NULL (1) -> Loss [N], ObjectnessMask [N, M, H, H] and GTMatchMask int32 [N, B].
 * Predicted boxes overlapping a ground-truth box by more than ignore_thresh get mask -1 (their
 * objectness is not a negative); each real box takes the anchor whose shape matches it best (IoU
 * of boxes sharing a centre, the first on ties); when that anchor is masked (index k) the box's
 * cell (int(x * H), int(y * H)) and anchor k are a positive: mask its score, sigmoid cross
 * entropy on x, y (targets the offsets in the cell) and the classes (1 or 0, 1 - 1/C and 1/C
 * with label_smooth), L1 on w, h (targets the log size ratios), the location terms weighted by
 * (2 - w * h), all by the score; then the objectness of every masked position: cross entropy
 * against 1 times the mask where it is > 1e-5, against 0 where it is 0. A real box whose cell
 * is outside the map is an error. */
FlStatus fl_kernel_yolov3_loss(FlErr *e, const FlTensor *x, const FlTensor *gt_box, const FlTensor *gt_label,
                               const FlTensor *gt_score, const FlYoloLossAttrs *a, FlTensor *loss, FlTensor *obj_mask,
                               FlTensor *match_mask) FL_WARN_UNUSED;
/* Its gradient: dX from dLoss [N] with the masks of the forward. Two boxes sharing a cell and
 * anchor add their terms (the derivative of the forward's sum). */
FlStatus fl_kernel_yolov3_loss_grad(FlErr *e, const FlTensor *x, const FlTensor *gt_box, const FlTensor *gt_label,
                                    const FlTensor *gt_score, const FlTensor *obj_mask, const FlTensor *match_mask,
                                    const FlTensor *dloss, const FlYoloLossAttrs *a, FlTensor *dx) FL_WARN_UNUSED;

/* ---- generate_proposals ---- */

typedef struct FlProposalAttrs {
    int64_t pre_nms_top_n, post_nms_top_n; /* <= 0: all */
    double nms_thresh, min_size, eta;      /* nms_thresh <= 0: no NMS */
} FlProposalAttrs;
/* generate_proposals: Scores [N, A, H, W], BboxDeltas [N, 4A, H, W], ImInfo [N, 3] (height,
 * width, scale), Anchors and Variances of A * H * W boxes (row (h * W + w) * A + a: anchor a at
 * (h, w), pixel boxes) -> RpnRois [R, 4], RpnRoiProbs [R, 1] and rois_lod int64 [N + 1]. Per
 * image: the anchors by score, best first (equal scores in anchor order), the pre_nms_top_n best;
 * each decoded around its anchor (centre + var * delta * size, size * exp(min(var * delta,
 * log(1000 / 16))), pixel boxes), clipped to [0, width - 1] x [0, height - 1]; kept when its
 * width and height over the scale (plus 1) are at least max(min_size, 1) and its centre is in
 * the image; then greedy NMS (pixel IoU at most the threshold, lowered by eta after each keep
 * while above 0.5) and the post_nms_top_n first. An image with no box left gives one zero row
 * (score 0). */
FlStatus fl_kernel_generate_proposals(FlErr *e, const FlTensor *scores, const FlTensor *deltas, const FlTensor *im_info,
                                      const FlTensor *anchors, const FlTensor *variances, const FlProposalAttrs *a,
                                      FlTensor *rois, FlTensor *probs, FlTensor *rois_lod) FL_WARN_UNUSED;

/* ---- rpn_target_assign ---- */

typedef struct FlRpnTargetAttrs {
    int64_t batch_size_per_im;
    double straddle_thresh, positive_overlap, negative_overlap, fg_fraction;
    bool use_random;
    uint64_t seed, stream; /* the sampling's generator: fl_rng_init2(seed, stream) */
} FlRpnTargetAttrs;
/* The outputs of rpn_target_assign (kernel-made tensors moved into the non-NULL ones). */
typedef struct FlRpnTargets {
    FlTensor *loc_index, *score_index, *target_bbox, *target_label, *inside_weight, *loc_lod, *score_lod;
} FlRpnTargets;
/* rpn_target_assign: Anchor [M, 4] (pixel boxes), GtBoxes [G, 4] cut into N images by gt_off,
 * IsCrowd int [G', 1] cut by crowd_off (N sequences as long as the boxes'), ImInfo [N, 3] ->
 * FlRpnTargets. Per image: the anchors inside it (x1, y1 >= -t, x2 < width + t, y2 < height + t;
 * t < 0: all), its boxes with IsCrowd 0 times the scale, their pixel IoU; foreground candidates in
 * anchor order: an anchor within 1e-5 of some box's best IoU or at positive_overlap or more;
 * reservoir-sampled (use_random: rows past the first k swap in at random; else the first k) down
 * to int(fg_fraction * batch_size_per_im); background candidates, IoU below negative_overlap,
 * down to the rest of the batch; a foreground also drawn as background becomes background and
 * the location list gets the first sampled foreground with weight 0 for it (Fluid's). Location
 * rows: those, then the foreground in anchor order (weight 1), each with the deltas from its
 * anchor to its best box (pixel centre and log size, unscaled); score rows: the foreground, then
 * the background. Indices are anchor + image * M. */
FlStatus fl_kernel_rpn_target_assign(FlErr *e, const FlTensor *anchor, const FlTensor *gt, const int64_t *gt_off,
                                     int64_t nseq, const FlTensor *crowd, const int64_t *crowd_off,
                                     const FlTensor *im_info, const FlRpnTargetAttrs *a,
                                     const FlRpnTargets *out) FL_WARN_UNUSED;

/* ---- generate_proposal_labels ---- */

typedef struct FlProposalLabelAttrs {
    int64_t batch_size_per_im, class_nums;
    double fg_fraction, fg_thresh, bg_thresh_hi, bg_thresh_lo, reg_weights[4];
    bool use_random, cls_agnostic, cascade; /* is_cls_agnostic, is_cascade_rcnn */
    uint64_t seed, stream;
} FlProposalLabelAttrs;
/* The outputs of generate_proposal_labels (kernel-made tensors moved into the non-NULL ones). */
typedef struct FlProposalLabels {
    FlTensor *rois, *labels, *targets, *inside_weights, *outside_weights, *rois_lod;
} FlProposalLabels;
/* generate_proposal_labels: RpnRois [R, 4] cut into N images by roi_off; GtBoxes [G, 4], GtClasses
 * and IsCrowd int [G, 1] cut by gt_off; ImInfo [N, 3]. Per image, the candidates are its boxes then
 * its RoIs over the scale; their best pixel IoU with the boxes (-1 for a crowd box's own row);
 * foreground at or above fg_thresh (its box: the first within 1e-5 of the best), the first
 * min(floor(batch * fg_fraction), count) of them after reservoir sampling with use_random;
 * background in [bg_thresh_lo, bg_thresh_hi), likewise up to the rest of the batch. With
 * a->cascade the image's first G RoIs are not candidates (an error when it has fewer), nor those
 * less than a pixel wide or high, and all the foreground and background are kept. Rows:
 * foreground then background, the candidate times the scale, its box's class (0 background), and
 * for a foreground of class c the deltas to its box over reg_weights in columns 4c .. 4c + 3 of
 * BboxTargets [S, 4 * class_nums] (c = 1 with a->cls_agnostic), the weights 1 there. */
FlStatus fl_kernel_generate_proposal_labels(FlErr *e, const FlTensor *rois, const int64_t *roi_off, int64_t nseq,
                                            const FlTensor *classes, const FlTensor *crowd, const FlTensor *gt,
                                            const int64_t *gt_off, const FlTensor *im_info,
                                            const FlProposalLabelAttrs *a, const FlProposalLabels *out) FL_WARN_UNUSED;

/* ---- feature pyramid proposals ---- */

/* distribute_fpn_proposals: RoIs [R, 4] (pixel boxes) cut into nseq images by off -> per level
 * k of [min_level, max_level] rois[k] [Rk, 4] and lods[k] int64 [nseq + 1] (the RoIs of level k,
 * image by image in their order), and restore int32 [R, 1] (RoI i's row in the levels'
 * concatenation). A RoI's level: floor(refer_level + log2(sqrt((w + 1)(h + 1)) / refer_scale))
 * clamped to the range (an empty box: min_level). */
FlStatus fl_kernel_distribute_fpn_proposals(FlErr *e, const FlTensor *rois, const int64_t *off, int64_t nseq,
                                            int min_level, int max_level, int refer_level, int refer_scale,
                                            FlTensor *const *level_rois, FlTensor *const *level_lods,
                                            FlTensor *restore) FL_WARN_UNUSED;
/* collect_fpn_proposals: nlevel levels of RoIs [Rk, 4] and scores [Rk, 1], each cut into the
 * same nseq images by offs[k] -> FpnRois [K, 4] and lod int64 [nseq + 1]: the top_n best of all
 * (K = min(top_n, all); equal scores in level, then row order), grouped by image (an image may
 * keep none), best first within an image. */
FlStatus fl_kernel_collect_fpn_proposals(FlErr *e, const FlTensor *const *rois, const FlTensor *const *scores,
                                         const int64_t *const *offs, int nlevel, int64_t nseq, int64_t top_n,
                                         FlTensor *out, FlTensor *lod) FL_WARN_UNUSED;

#endif
