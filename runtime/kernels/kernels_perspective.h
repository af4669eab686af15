/* kernels_perspective.h: roi_perspective_transform and its gradient (perspective.c), as Fluid's
 * operator (paddle/fluid/operators/detection/roi_perspective_transform_op.cc). The conventions of
 * kernels.h hold (outputs replaced whole, NULL gradient outputs not computed, errors name the op
 * and the shapes, "F" = float32 or float64).
 *
 * X [N, C, H, W] (F); ROIs [R, 8] (X's dtype): quadrilaterals (x1, y1, x2, y2, x3, y3, x4, y4),
 * top left, top right, bottom right, bottom left, in the image's pixels; ROI r belongs to image b
 * where off[b] <= r < off[b + 1] (off: the nseq + 1 offsets of ROIs' LoD, nseq == N).
 * Out [R, C, th, tw]. Positions are computed in double.
 */
#ifndef FL_KERNELS_PERSPECTIVE_H
#define FL_KERNELS_PERSPECTIVE_H

#include "runtime/kernels/kernels.h"

typedef struct FlPerspectiveAttrs {
    int transformed_height, transformed_width; /* >= 1 */
    double spatial_scale;                      /* > 0: the corners times it are X's cells */
} FlPerspectiveAttrs;

/* roi_perspective_transform: per ROI (corners scaled), the perspective matrix taking the
 * rectangle [0, nw - 1] x [0, nh - 1] to the quadrilateral (nh = max(2, th), nw = its width at
 * the quadrilateral's mean side ratio, round(mean width * (nh - 1) / mean height) + 1, within
 * [2, tw]); Out[r, c, h, w] is X[b, c] sampled bilinearly at the image of (w, h) when that point
 * is inside the quadrilateral (borders within 1e-4 inside) and within (-0.5, size - 0.5) of each
 * side (1e-4 in), else 0. A quadrilateral whose mean height is 0 (or not finite) is an error
 * naming it. roi_perspective_transform_grad: dX gets dOut times each sample's weights. */
FlStatus fl_kernel_roi_perspective_transform(FlErr *e, const FlTensor *x, const FlTensor *rois, const int64_t *off,
                                             int64_t nseq, const FlPerspectiveAttrs *a, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_roi_perspective_transform_grad(FlErr *e, const FlTensor *x, const FlTensor *rois,
                                                  const int64_t *off, int64_t nseq, const FlTensor *dout,
                                                  const FlPerspectiveAttrs *a, FlTensor *dx) FL_WARN_UNUSED;

#endif
