/* kernels_roi.h: the kernels of the pooling of regions of interest (roi.c): roi_pool, roi_align and
 * psroi_pool, as Fluid's. The conventions of kernels.h hold (outputs replaced whole, NULL gradient
 * outputs not computed, errors name the op and the shapes, "F" = float32 or float64).
 *
 * X [N, C, H, W] (F); ROIs [R, 4] (X's dtype), boxes (x1, y1, x2, y2) in the image's pixels, box r
 * of image b where off[b] <= r < off[b + 1] (off: the nseq + 1 offsets of ROIs' LoD, nseq == N).
 * Out [R, C, ph, pw] (psroi_pool: [R, output_channels, ph, pw]). Positions are computed in double.
 */
#ifndef FL_KERNELS_ROI_H
#define FL_KERNELS_ROI_H

#include "runtime/kernels/kernels.h"

typedef struct FlRoiAttrs {
    int pooled_height, pooled_width; /* >= 1 */
    double spatial_scale;            /* > 0: box coordinates times it are X's cells */
    int sampling_ratio;              /* roi_align: points per bin side, -1: ceil(the bin's size) */
    int output_channels;             /* psroi_pool: X's C = output_channels * ph * pw */
} FlRoiAttrs;

/* roi_pool: box corners scaled and rounded (half away from zero), the box at least 1x1 cells
 * ([x1, x2] inclusive); bin i of a side of n cells spans [floor(i*n/p), ceil((i+1)*n/p)) from the
 * box's start, clipped to the image; Out its maximum (0 for an empty bin), Argmax (int64, may be
 * NULL) the flat index h*W + w of the first maximum (-1: empty). roi_pool_grad: dX[b, c, Argmax] +=
 * dOut. */
FlStatus fl_kernel_roi_pool(FlErr *e, const FlTensor *x, const FlTensor *rois, const int64_t *off, int64_t nseq,
                            const FlRoiAttrs *a, FlTensor *out, FlTensor *argmax) FL_WARN_UNUSED;
FlStatus fl_kernel_roi_pool_grad(FlErr *e, const FlTensor *x, const FlTensor *rois, const int64_t *off, int64_t nseq,
                                 const FlTensor *argmax, const FlTensor *dout, const FlRoiAttrs *a,
                                 FlTensor *dx) FL_WARN_UNUSED;

/* roi_align: the box scaled (not rounded), each side at least 1; bin (i, j) the mean over a grid of
 * gh x gw points (sampling_ratio each, or ceil(bin size)) at the grid cells' centres of X sampled
 * bilinearly: a point below -1 or beyond the size counts 0, one in [-1, 0] is clamped to 0, one
 * past the last cell to it. roi_align_grad: dX gets dOut times each point's weights / (gh*gw). */
FlStatus fl_kernel_roi_align(FlErr *e, const FlTensor *x, const FlTensor *rois, const int64_t *off, int64_t nseq,
                             const FlRoiAttrs *a, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_roi_align_grad(FlErr *e, const FlTensor *x, const FlTensor *rois, const int64_t *off, int64_t nseq,
                                  const FlTensor *dout, const FlRoiAttrs *a, FlTensor *dx) FL_WARN_UNUSED;

/* psroi_pool: the box's start round(x1) * scale, its end (round(x2) + 1) * scale (each side at
 * least 0.1); bin (i, j) spans [floor(start + i*size/p), ceil(start + (i+1)*size/p)) clipped to the
 * image; Out[r, c, i, j] the mean of X's channel (c*ph + i)*pw + j over it (0 when empty).
 * psroi_pool_grad: dX gets dOut / the bin's cells over each bin. */
FlStatus fl_kernel_psroi_pool(FlErr *e, const FlTensor *x, const FlTensor *rois, const int64_t *off, int64_t nseq,
                              const FlRoiAttrs *a, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_psroi_pool_grad(FlErr *e, const FlTensor *x, const FlTensor *rois, const int64_t *off,
                                   int64_t nseq, const FlTensor *dout, const FlRoiAttrs *a, FlTensor *dx) FL_WARN_UNUSED;

#endif
