/* kernels_detection.h: the kernels of Fluid's detection ops (detection.c: prior and anchor boxes,
 * box coding and clipping, IoU, YOLO boxes; detection_match.c: multiclass NMS, matching, target
 * assignment, hard example mining; detection_map.c: mean average precision; detection_loss.c:
 * smooth L1, sigmoid cross entropy). The conventions of kernels.h hold: outputs replaced whole,
 * NULL gradient outputs not computed, errors name the op and the shapes, "F" = float32 or
 * float64 (every float input of one op shares its dtype, the float outputs take it; internals are
 * double).
 *
 * Boxes are rows [xmin, ymin, xmax, ymax]. "Normalized" boxes live in [0, 1] and a box's width
 * is xmax - xmin; pixel boxes (normalized false) count both edges, width xmax - xmin + 1, as
 * Fluid's operators do. Sequences (one image's ground truth, RoIs or detections) are rows cut by
 * offsets off[0..nseq] (checked by the caller: off[0] == 0, non-decreasing, off[nseq] == rows).
 * Int inputs (labels, indices, image sizes) may be int32 or int64; int outputs are int32 as in
 * Fluid.
 */
#ifndef FL_KERNELS_DETECTION_H
#define FL_KERNELS_DETECTION_H

#include "runtime/kernels/kernels.h"

/* ---- prior and anchor boxes (detection.c) ---- */

/* prior_box's attributes; the lists are borrowed. aspect_ratios as given (the kernel expands
 * them: 1 first, then each ratio not within 1e-6 of one already there, and its inverse with
 * flip). */
typedef struct FlPriorBoxAttrs {
    const double *min_sizes, *max_sizes, *aspect_ratios, *variances;
    int n_min, n_max, n_ar, n_var; /* n_max 0 or n_min; n_var 4 */
    bool flip, clip, min_max_aspect_ratios_order;
    double step_w, step_h, offset; /* step 0: the image size over the feature map's */
} FlPriorBoxAttrs;
/* The number of priors per position (the expanded ratios times the min sizes, plus the max
 * sizes). */
int fl_prior_box_count(const FlPriorBoxAttrs *a);
/* prior_box: Boxes and Variances [H, W, P, 4] for Input [N, C, H, W] on Image [N, C', IH, IW]:
 * at each position centre ((w + offset) * step_w, (h + offset) * step_h), per min size the
 * boxes of each expanded ratio r (min * sqrt(r) by min / sqrt(r)) and the square
 * sqrt(min * max), in that order, or with min_max_aspect_ratios_order the min square, the max
 * square, then the other ratios (Caffe's); each divided by the image size (normalized), clipped
 * to [0, 1] with clip; Variances every row the 4 variances. */
FlStatus fl_kernel_prior_box(FlErr *e, const FlTensor *input, const FlTensor *image, const FlPriorBoxAttrs *a,
                             FlTensor *boxes, FlTensor *variances) FL_WARN_UNUSED;

typedef struct FlDensityPriorBoxAttrs {
    const double *fixed_sizes, *fixed_ratios, *variances;
    const int64_t *densities;
    int n_sizes, n_ratios, n_var; /* n_sizes densities and fixed sizes; n_var 4 */
    bool clip, flatten_to_2d;
    double step_w, step_h, offset;
} FlDensityPriorBoxAttrs;
int64_t fl_density_prior_box_count(const FlDensityPriorBoxAttrs *a);
/* density_prior_box: per position, per fixed size s (density d) and ratio r, a d x d grid of
 * boxes of size (s * sqrt(r), s / sqrt(r)) centred on a grid of step int((step_w + step_h) / 2) / d
 * around the position, each edge kept in [0, 1]; [H, W, P, 4] or [H * W * P, 4] with
 * flatten_to_2d. */
FlStatus fl_kernel_density_prior_box(FlErr *e, const FlTensor *input, const FlTensor *image,
                                     const FlDensityPriorBoxAttrs *a, FlTensor *boxes,
                                     FlTensor *variances) FL_WARN_UNUSED;

typedef struct FlAnchorAttrs {
    const double *anchor_sizes, *aspect_ratios, *variances, *stride;
    int n_sizes, n_ratios, n_var; /* stride: 2 values (width, height) */
    double offset;
} FlAnchorAttrs;
/* anchor_generator: Anchors and Variances [H, W, A, 4] (pixel boxes), A = ratios x sizes, ratio
 * major: centre (w * sw + offset * (sw - 1), h * sh + offset * (sh - 1)), base width
 * round(sqrt(sw * sh / ratio)), base height round(base width * ratio), scaled by size / stride. */
FlStatus fl_kernel_anchor_generator(FlErr *e, const FlTensor *input, const FlAnchorAttrs *a, FlTensor *anchors,
                                    FlTensor *variances) FL_WARN_UNUSED;

/* ---- box coding, IoU, clipping (detection.c) ---- */

/* iou_similarity: Out [N, M] = the IoU of box i of X [N, 4] and box j of Y [M, 4] (normalized
 * areas; 0 when the union is empty). */
FlStatus fl_kernel_iou_similarity(FlErr *e, const FlTensor *x, const FlTensor *y, FlTensor *out) FL_WARN_UNUSED;

typedef enum FlBoxCode { FL_BOX_ENCODE_CENTER_SIZE, FL_BOX_DECODE_CENTER_SIZE, FL_BOX_CODE_COUNT } FlBoxCode;
/* "encode_center_size" / "decode_center_size"; FL_BOX_CODE_COUNT for any other name. */
FlBoxCode fl_box_code_find(const char *name);
/* box_coder. Encode: TargetBox [N, 4], PriorBox [M, 4] -> [N, M, 4], the target's centre offset
 * over the prior's size and the log of their size ratio, each divided by its variance. Decode:
 * TargetBox [N, M, 4] (deltas) and PriorBox [M, 4] (axis 0: prior j for column j) or [N, 4]
 * (axis 1: prior i for row i) -> [N, M, 4] boxes. The variance of a prior is its row of
 * prior_var [M or N, 4] when given, else `variance` (4 values) when not NULL, else 1. */
FlStatus fl_kernel_box_coder(FlErr *e, const FlTensor *prior, const FlTensor *prior_var, const FlTensor *target,
                             FlBoxCode code, bool normalized, int axis, const double *variance,
                             FlTensor *out) FL_WARN_UNUSED;
/* box_coder_grad: dTarget (TargetBox's shape) and dPrior (PriorBox's shape) from dOut, either
 * NULL when not wanted. */
FlStatus fl_kernel_box_coder_grad(FlErr *e, const FlTensor *prior, const FlTensor *prior_var, const FlTensor *target,
                                  const FlTensor *dout, FlBoxCode code, bool normalized, int axis,
                                  const double *variance, FlTensor *dtarget, FlTensor *dprior) FL_WARN_UNUSED;
/* box_clip: each box of Input [..., 4] clipped to [0, W - 1] x [0, H - 1] of its image, W =
 * round(ImInfo[1] / ImInfo[2]), H = round(ImInfo[0] / ImInfo[2]) (ImInfo [N, 3]: height, width,
 * scale). With offsets (off not NULL, nseq images) sequence i is image i; without, Input's
 * first dim is the image. */
FlStatus fl_kernel_box_clip(FlErr *e, const FlTensor *input, const FlTensor *im_info, const int64_t *off,
                            int64_t nseq, FlTensor *out) FL_WARN_UNUSED;
/* polygon_box_transform: Input [N, 2K, H, W] of offsets -> Output: channel 2k holds 4 * w - in,
 * channel 2k + 1 holds 4 * h - in (the geometry of a quadrilateral, in input pixels). */
FlStatus fl_kernel_polygon_box_transform(FlErr *e, const FlTensor *input, FlTensor *out) FL_WARN_UNUSED;
/* box_decoder_and_assign: PriorBox [N, 4] (pixel boxes), PriorBoxVar [4], TargetBox [N, C * 4]
 * (deltas per class), BoxScore [N, C] -> DecodeBox [N, C * 4] (the deltas decoded, the log
 * sizes capped at box_clip) and OutputAssignBox [N, 4] (the decoded box of the best class
 * other than 0, the prior when no class above 0 scores above -1). */
FlStatus fl_kernel_box_decoder_and_assign(FlErr *e, const FlTensor *prior, const FlTensor *prior_var,
                                          const FlTensor *target, const FlTensor *score, double box_clip,
                                          FlTensor *decode, FlTensor *assign) FL_WARN_UNUSED;
/* yolo_box: X [N, A * (5 + C), H, W] (A anchors of `anchors` pairs), ImgSize int [N, 2] (height,
 * width) -> Boxes [N, A * H * W, 4] (pixel boxes in the image, clipped to it) and Scores
 * [N, A * H * W, C] (objectness times class probability); rows whose objectness is below
 * conf_thresh are zero. */
FlStatus fl_kernel_yolo_box(FlErr *e, const FlTensor *x, const FlTensor *img_size, const int64_t *anchors,
                            int n_anchors, int class_num, double conf_thresh, int downsample_ratio, FlTensor *boxes,
                            FlTensor *scores) FL_WARN_UNUSED;

/* ---- selection (detection_match.c) ---- */

typedef struct FlNmsAttrs {
    int64_t background_label, nms_top_k, keep_top_k; /* background -1: none; top_k -1: all */
    double score_threshold, nms_threshold, nms_eta;
    bool normalized;
} FlNmsAttrs;
/* multiclass_nms: BBoxes [N, M, 4] and Scores [N, C, M] (one dtype) -> Out [No, 6] rows (label,
 * score, box) and OutLod int64 [N + 1] cutting them into images. Per image and class (but the
 * background), the scores above score_threshold best first (equal scores in index order; the
 * nms_top_k best when it is > -1), each kept when its IoU (pixel boxes count both edges unless
 * normalized) with every kept box of its class is at most the threshold, the threshold times
 * nms_eta after each keep while it is above 0.5 (nms_eta < 1); then, when keep_top_k > -1 and
 * the image keeps more, its keep_top_k best, regrouped by class. Rows by class ascending, within
 * a class best first. Nothing kept in the whole batch: Out [1, 1] = -1 and OutLod [0, 1].
 * The LoD form (off set, as Fluid's for Faster R-CNN's per-class boxes): BBoxes [M, C, 4] and
 * Scores [M, C], off[0..nseq] cutting the M rows into images; class c's candidates are column c
 * and its boxes BBoxes[:, c]; a class's kept rows are written (and regrouped after keep_top_k)
 * in row order instead of best first. An image of no rows keeps nothing. */
FlStatus fl_kernel_multiclass_nms(FlErr *e, const FlTensor *bboxes, const FlTensor *scores, const int64_t *off,
                                  int64_t nseq, const FlNmsAttrs *a, FlTensor *out, FlTensor *out_lod) FL_WARN_UNUSED;

/* bipartite_match: DistMat [K, M] (rows: entities, columns: priors), its rows cut into nseq
 * images by off (NULL: one image) -> ColToRowMatchIndices int32 [nseq, M] (the row within its
 * image, -1 unmatched) and ColToRowMatchDist [nseq, M] (0 unmatched). Per image the greedy
 * bipartite matching: repeatedly the largest distance between a free row and a free column (the
 * first in column, then row order on ties), distances below 1e-6 never; with per_prediction each
 * still free column then takes its largest row distance at least `threshold`. */
FlStatus fl_kernel_bipartite_match(FlErr *e, const FlTensor *dist, const int64_t *off, int64_t nseq,
                                   bool per_prediction, double threshold, FlTensor *indices,
                                   FlTensor *out_dist) FL_WARN_UNUSED;
/* target_assign: X [rows, P, K] (float or int) cut into N images by off, MatchIndices int [N, M]
 * -> Out [N, M, K] (X's dtype) and OutWeight float32 [N, M, 1]: Out[n, j] = X[off[n] + id, j % P]
 * with weight 1 for id = MatchIndices[n, j] > -1, else mismatch and weight 0; then each index of
 * image n's rows of NegIndices int [rows', 1] (cut by neg_off; neg NULL: none) gets mismatch and
 * weight 1. */
FlStatus fl_kernel_target_assign(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                  const FlTensor *match, const FlTensor *neg, const int64_t *neg_off, int64_t neg_nseq,
                                  int64_t mismatch, FlTensor *out, FlTensor *out_weight) FL_WARN_UNUSED;

/* mine_hard_examples (max_negative): ClsLoss [N, P], MatchIndices int [N, P], MatchDist [N, P]
 * -> NegIndices int32 [n, 1] and its offsets neg_off int64 [N + 1] (a tensor), Updated a copy of
 * MatchIndices. Per image, the candidates are the priors with index -1 and distance below
 * neg_dist_threshold; the int(neg_pos_ratio * matched priors) of them (at most all) with the
 * largest losses (equal losses: the lower prior first) are listed in prior order. */
FlStatus fl_kernel_mine_hard_examples(FlErr *e, const FlTensor *cls_loss, const FlTensor *match, const FlTensor *dist,
                                      double neg_pos_ratio, double neg_dist_threshold, FlTensor *neg,
                                      FlTensor *neg_off, FlTensor *updated) FL_WARN_UNUSED;

/* detection_map: DetectRes [M, 6] (label, score, xmin, ymin, xmax, ymax; [1, 1] = -1: no
 * detection) cut into images by det_off, Label [G, 6] (label, difficult, box) or [G, 5] cut by
 * gt_off (as many images) -> MAP [1]: Fluid's mean average precision over the classes with
 * ground truth (a class with none is not counted; one whose positive count equals
 * background_label is skipped, as Fluid's operator does): per image and class, detections best
 * first (clipped to [0, 1]) against the class's boxes by IoU, a true positive above
 * overlap_threshold on a box not yet taken (difficult boxes neither count nor match unless
 * evaluate_difficult); AP integral (ap_11point false) or VOC's 11 points.
 *
 * The accumulated state (Fluid's PosCount, TruePos, FalsePos): `in`, when not NULL, holds the
 * earlier batches' positives per class and their verdicts, which come before this batch's; every
 * class then counts (its positive count read, 0 or not, as Fluid's operator reads them all).
 * `out` (any member NULL: not wanted) receives the state after this batch. */
typedef struct FlDetMapState {
    const FlTensor *pos_count;             /* int32 [class_num, 1] */
    const FlTensor *true_pos, *false_pos;  /* [n, 2] rows (score, flag), DetectRes's dtype */
    const int64_t *true_off, *false_off;   /* their rows of each class: class_num + 1 offsets */
    int64_t true_nseq, false_nseq;         /* the classes the offsets cut (must be class_num) */
} FlDetMapState;
typedef struct FlDetMapAccum {
    FlTensor *pos_count;            /* int32 [class_num, 1] */
    FlTensor *true_pos, *true_off;  /* [n, 2] and int64 [class_num + 1], the classes in order */
    FlTensor *false_pos, *false_off;
} FlDetMapAccum;
FlStatus fl_kernel_detection_map(FlErr *e, const FlTensor *det, const int64_t *det_off, int64_t det_nseq,
                                 const FlTensor *label, const int64_t *gt_off, int64_t gt_nseq, int64_t class_num,
                                 int64_t background_label, double overlap_threshold, bool evaluate_difficult,
                                 bool ap_11point, const FlDetMapState *in, const FlDetMapAccum *out,
                                 FlTensor *map) FL_WARN_UNUSED;

/* ---- losses (detection_loss.c) ---- */

/* smooth_l1_loss: Diff = (X - Y) * InsideWeight (X, Y [N, ...]; the weights optional, X's
 * shape); Out [N, 1] = the sum over each row of f(Diff) * OutsideWeight, f(d) = 0.5 * (sigma *
 * d)^2 when |d| < 1 / sigma^2, else |d| - 0.5 / sigma^2. */
FlStatus fl_kernel_smooth_l1_loss(FlErr *e, const FlTensor *x, const FlTensor *y, const FlTensor *inside,
                                  const FlTensor *outside, double sigma, FlTensor *diff, FlTensor *out) FL_WARN_UNUSED;
/* smooth_l1_loss_grad: dX = dOut (per row) * f'(Diff) * InsideWeight * OutsideWeight, dY = -dX. */
FlStatus fl_kernel_smooth_l1_loss_grad(FlErr *e, const FlTensor *inside, const FlTensor *outside,
                                       const FlTensor *diff, const FlTensor *dout, double sigma, FlTensor *dx,
                                       FlTensor *dy) FL_WARN_UNUSED;
/* sigmoid_cross_entropy_with_logits: Out = max(X, 0) - X * Label + log(1 + exp(-|X|)), 0 where
 * int(Label) == ignore_index; with normalize divided by the count of the other elements. */
FlStatus fl_kernel_sigmoid_xent(FlErr *e, const FlTensor *x, const FlTensor *label, int ignore_index, bool normalize,
                                FlTensor *out) FL_WARN_UNUSED;
/* Its gradient: dX = dOut * (sigmoid(X) - Label) (0 where ignored, divided as the forward). */
FlStatus fl_kernel_sigmoid_xent_grad(FlErr *e, const FlTensor *x, const FlTensor *label, const FlTensor *dout,
                                     int ignore_index, bool normalize, FlTensor *dx) FL_WARN_UNUSED;

#endif
