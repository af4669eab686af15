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

#endif
