/* kernels_masks.h: generate_mask_labels (masks.c), Mask R-CNN's mask targets as Fluid's operator
 * makes them (paddle/fluid/operators/detection/generate_mask_labels_op.cc and mask_util.cc: the
 * polygons rasterized by COCO's run-length algorithm, at 5 times the resolution then sampled). The
 * conventions of kernels.h hold (outputs replaced whole, errors name the op and the shapes).
 */
#ifndef FL_KERNELS_MASKS_H
#define FL_KERNELS_MASKS_H

#include "runtime/kernels/kernels.h"

/* The inputs, each cut into nseq images by its offsets: ImInfo [N, 3] (height, width, scale);
 * GtClasses and IsCrowd int32 [G, 1] (gt_off, crowd_off); GtSegms float32 [S, 2], the points of
 * every polygon, cut three times: images into objects (segm_off[0], as gt_off), objects into
 * polygons (segm_off[1], n_obj + 1 entries), polygons into points (segm_off[2], n_poly + 1);
 * Rois [R, 4] (float32, roi_off) and LabelsInt32 int32 [R, 1] (label_off). */
typedef struct FlMaskLabelsIn {
    const FlTensor *im_info, *gt_classes, *is_crowd, *segms, *rois, *labels;
    const int64_t *gt_off, *crowd_off, *segm_off[3], *roi_off, *label_off;
    int64_t nseq, n_obj, n_poly;
} FlMaskLabelsIn;

/* generate_mask_labels: per image with RoIs, its foreground RoIs (label > 0) each take the mask of
 * the non-crowd object of class > 0 whose polygons' bounding box overlaps the RoI most (pixel IoU,
 * the RoI over the scale; the first on ties or no overlap): its polygons rasterized in the RoI's
 * box at resolution x resolution (their union), written as 0/1 in the columns of the RoI's class
 * of MaskInt32 [K, num_classes * resolution^2], -1 elsewhere; RoiHasMaskInt32 the RoI's index in
 * its image. An image without foreground gives its first RoI with class 0 (all -1). MaskRois
 * [K, 4] the RoIs; MaskLod [N + 1] cuts the three into images. An image with foreground RoIs and
 * no such object, an empty polygon, a label outside [0, num_classes), are errors. */
FlStatus fl_kernel_generate_mask_labels(FlErr *e, const FlMaskLabelsIn *in, int num_classes, int resolution,
                                        FlTensor *mask_rois, FlTensor *has_mask, FlTensor *mask_int32,
                                        FlTensor *mask_lod) FL_WARN_UNUSED;

#endif
