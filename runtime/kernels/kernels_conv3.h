/* kernels_conv3.h: the kernels of 3-D convolution (conv3d, conv3d_transpose) and of pooling over
 * 2 or 3 spatial dims with what pool2d's kernel lacks: 3-D windows, adaptive windows and the
 * argmax mask of max_pool2d_with_index / max_pool3d_with_index (conv3.c). The conventions of
 * kernels.h hold (outputs replaced whole, NULL gradient outputs not computed, errors name the op
 * and the shapes, "F" = float32 or float64).
 *
 * Fast paths (float32): conv3d and its gradients, and pooling without adaptive windows or a mask,
 * run on oneDNN (dnnl.c); the _ref twins run the plain loops (sums in double), which every
 * other case runs too. Tests check that both agree (tests/runtime/kernels/test_conv3.c).
 */
#ifndef FL_KERNELS_CONV3_H
#define FL_KERNELS_CONV3_H

#include "runtime/kernels/kernels.h"

/* ======================================================================================
 * 3-D convolution, NCDHW: Input [N, C, D, H, W], Filter [M, C/groups, kd, kh, kw].
 * ====================================================================================== */

typedef struct FlConv3dAttrs {
    int strides[3];   /* (d, h, w), >= 1 */
    int paddings[3];  /* zero padding on both sides, >= 0 */
    int dilations[3]; /* >= 1 */
    int groups;       /* >= 1; C and M divisible by it */
} FlConv3dAttrs;
#define FL_CONV3D_ATTRS_DEFAULT {{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1}

/* conv3d: Output [N, M, Do, Ho, Wo], Do = (D + 2*pd - (dd*(kd-1) + 1)) / sd + 1 (likewise Ho, Wo).
 * conv3d_grad: dInput, dFilter (either NULL: not wanted) from dOutput. Errors: ranks, channels
 * and groups, bad attributes, an empty output. */
FlStatus fl_kernel_conv3d(FlErr *e, const FlTensor *input, const FlTensor *filter, const FlConv3dAttrs *a,
                          FlTensor *output) FL_WARN_UNUSED;
FlStatus fl_kernel_conv3d_ref(FlErr *e, const FlTensor *input, const FlTensor *filter, const FlConv3dAttrs *a,
                              FlTensor *output) FL_WARN_UNUSED;
FlStatus fl_kernel_conv3d_grad(FlErr *e, const FlTensor *input, const FlTensor *filter, const FlTensor *doutput,
                               const FlConv3dAttrs *a, FlTensor *dinput, FlTensor *dfilter) FL_WARN_UNUSED;
FlStatus fl_kernel_conv3d_grad_ref(FlErr *e, const FlTensor *input, const FlTensor *filter,
                                   const FlTensor *doutput, const FlConv3dAttrs *a, FlTensor *dinput,
                                   FlTensor *dfilter) FL_WARN_UNUSED;

/* conv3d_transpose: Input [N, C, D, H, W], Filter [C, M/groups, kd, kh, kw] -> Output [N, M, Do, Ho, Wo],
 * Do = (D - 1) * sd - 2 * pd + dd * (kd - 1) + 1 unless output_size (NULL or 3 values) names another
 * size in [Do, Do + sd) (the rows the inferred size leaves out get the filter's reach into the
 * padding; the rest zeros): the input gradient of conv3d with that filter on an image of the output's
 * size. Grad: dInput = conv3d(dOutput, Filter), dFilter = conv3d's filter gradient of (dOutput, Input). */
FlStatus fl_kernel_conv3d_transpose(FlErr *e, const FlTensor *input, const FlTensor *filter, const FlConv3dAttrs *a,
                                    const int64_t *output_size, FlTensor *output) FL_WARN_UNUSED;
FlStatus fl_kernel_conv3d_transpose_grad(FlErr *e, const FlTensor *input, const FlTensor *filter,
                                         const FlTensor *doutput, const FlConv3dAttrs *a, const int64_t *output_size,
                                         FlTensor *dinput, FlTensor *dfilter) FL_WARN_UNUSED;

/* ======================================================================================
 * Pooling over 2 or 3 spatial dims (pool2d with adaptive windows, pool3d, max_pool*_with_index).
 * ====================================================================================== */

typedef struct FlPoolNdAttrs {
    int nsp;           /* spatial dims: 2 (X [N, C, H, W]) or 3 (X [N, C, D, H, W]) */
    FlPoolType type;   /* max or avg */
    int ksize[3];      /* the window; with adaptive, the output's spatial size */
    int strides[3];
    int paddings[3];
    bool global_pooling; /* one window over each whole image (ksize = its size, paddings 0) */
    bool exclusive;      /* avg: divide by the window's cells inside the image (else the window's size) */
    bool ceil_mode;      /* the output size rounds up */
    bool adaptive;       /* Out's spatial size is ksize; output cell i of a dim pools the input's
                          * [floor(i*in/out), ceil((i+1)*in/out)), an average over that many cells */
} FlPoolNdAttrs;

/* pool_nd: X [N, C, in...] (F) -> Out [N, C, out...], out = (in + 2*p - k) / s + 1 (rounded up with
 * ceil_mode; ksize with adaptive). max: the window's largest cell (the first on ties; a window
 * entirely in the padding gives 0); avg: its mean. mask (NULL: not wanted; max only): int32
 * [N, C, out...], the index of each max cell within its image (d*H*W + h*W + w), -1 for an empty
 * window. pool_nd_grad: dX from X, dOut and, when given, the mask (else the max cells are found
 * again in X); avg spreads dOut evenly. Errors: rank, type, attributes, a window larger than the
 * padded image, mask with avg. */
FlStatus fl_kernel_pool_nd(FlErr *e, const FlTensor *x, const FlPoolNdAttrs *a, FlTensor *out,
                           FlTensor *mask) FL_WARN_UNUSED;
FlStatus fl_kernel_pool_nd_ref(FlErr *e, const FlTensor *x, const FlPoolNdAttrs *a, FlTensor *out,
                               FlTensor *mask) FL_WARN_UNUSED;
FlStatus fl_kernel_pool_nd_grad(FlErr *e, const FlTensor *x, const FlTensor *mask, const FlTensor *dout,
                                const FlPoolNdAttrs *a, FlTensor *dx) FL_WARN_UNUSED;
FlStatus fl_kernel_pool_nd_grad_ref(FlErr *e, const FlTensor *x, const FlTensor *mask, const FlTensor *dout,
                                    const FlPoolNdAttrs *a, FlTensor *dx) FL_WARN_UNUSED;

#endif
