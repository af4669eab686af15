/* ops_vision.c: adapters of the image ops that rearrange, pad and normalise, and of their
 * gradients (kernels in runtime/kernels/kernels_vision.h; the custom gradients' slots are their
 * FL_GRAD_SLOTS lines in compiler/ops/vision.def). */
#include <stdlib.h>
#include <string.h>

#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_vision.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* ---- the rearrangements ---- */

static FlStatus prep_rearrange(ExecOp *op, FlErr *e, FlRearrange kind, const char *factor) {
    FlRearrangeAttrs *a = fl_xcalloc(1, sizeof *a);
    op->a.extra = a;
    a->kind = kind;
    int64_t f = fl_exec_attr_int(op, factor);
    if (f < 1 || f > INT32_MAX) return fl_err(e, "attribute '%s' must be >= 1, found %lld", factor, (long long)f);
    a->factor = (int)f;
    if (kind == FL_REARRANGE_TEMPORAL_SHIFT) a->shift_ratio = fl_exec_attr_float(op, "shift_ratio");
    return FL_OK;
}

#define REARRANGE(name, KIND, factor)                                                                        \
    static FlStatus prep_##name(ExecOp *op, FlErr *e) { return prep_rearrange(op, e, KIND, factor); }        \
    static FlStatus run_##name(OpCall *c) {                                                                   \
        return fl_kernel_rearrange(c->e, IN(FL_IN_##name##_X), c->op->a.extra, OUT(FL_OUT_##name##_Out));    \
    }                                                                                                         \
    FL_ADAPTER(name, prep_##name, run_##name);                                                                \
    /* X Out Out@GRAD -> X@GRAD */                                                                            \
    static FlStatus run_##name##_grad(OpCall *c) {                                                            \
        FlTensor *dx = OUT(FL_OUT_##name##_grad_X_GRAD);                                                      \
        if (!dx) return FL_OK;                                                                                \
        return fl_kernel_rearrange_grad(c->e, IN(FL_IN_##name##_grad_X), IN(FL_IN_##name##_grad_Out_GRAD),   \
                                        c->op->a.extra, dx);                                                  \
    }                                                                                                         \
    FL_ADAPTER(name##_grad, prep_##name, run_##name##_grad)
REARRANGE(pixel_shuffle, FL_REARRANGE_PIXEL_SHUFFLE, "upscale_factor");
REARRANGE(shuffle_channel, FL_REARRANGE_SHUFFLE_CHANNEL, "group");
REARRANGE(space_to_depth, FL_REARRANGE_SPACE_TO_DEPTH, "blocksize");
REARRANGE(temporal_shift, FL_REARRANGE_TEMPORAL_SHIFT, "seg_num");

/* ---- maxout, affine_channel ---- */

static FlStatus prep_maxout(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "groups");
    if (op->a.i[0] < 1 || op->a.i[0] > INT32_MAX)
        return fl_err(e, "attribute 'groups' must be >= 1, found %lld", (long long)op->a.i[0]);
    return FL_OK;
}
static FlStatus run_maxout(OpCall *c) {
    return fl_kernel_maxout(c->e, IN(FL_IN_maxout_X), (int)c->op->a.i[0], OUT(FL_OUT_maxout_Out));
}
FL_ADAPTER(maxout, prep_maxout, run_maxout);
static FlStatus run_maxout_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_maxout_grad_X_GRAD);
    if (!dx) return FL_OK;
    return fl_kernel_maxout_grad(c->e, IN(FL_IN_maxout_grad_X), IN(FL_IN_maxout_grad_Out_GRAD), (int)c->op->a.i[0], dx);
}
FL_ADAPTER(maxout_grad, prep_maxout, run_maxout_grad);

/* "NCHW" / "NHWC" of attribute `name` into op->a.b[0] (true: NHWC). */
static FlStatus prep_layout(ExecOp *op, FlErr *e, const char *name) {
    const char *l = fl_exec_attr_string(op, name);
    if (strcmp(l, "NCHW") != 0 && strcmp(l, "NHWC") != 0)
        return fl_err(e, "attribute '%s' must be 'NCHW' or 'NHWC', found '%s'", name, l);
    op->a.b[0] = strcmp(l, "NHWC") == 0;
    return FL_OK;
}

static FlStatus prep_affine_channel(ExecOp *op, FlErr *e) { return prep_layout(op, e, "data_layout"); }
static FlStatus run_affine_channel(OpCall *c) {
    return fl_kernel_affine_channel(c->e, IN(FL_IN_affine_channel_X), IN(FL_IN_affine_channel_Scale),
                                    IN(FL_IN_affine_channel_Bias), c->op->a.b[0], OUT(FL_OUT_affine_channel_Out));
}
FL_ADAPTER(affine_channel, prep_affine_channel, run_affine_channel);
static FlStatus run_affine_channel_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_affine_channel_grad_X_GRAD), *ds = OUT(FL_OUT_affine_channel_grad_Scale_GRAD),
             *db = OUT(FL_OUT_affine_channel_grad_Bias_GRAD);
    if (!dx && !ds && !db) return FL_OK;
    return fl_kernel_affine_channel_grad(c->e, IN(FL_IN_affine_channel_grad_X), IN(FL_IN_affine_channel_grad_Scale),
                                         IN(FL_IN_affine_channel_grad_Out_GRAD), c->op->a.b[0], dx, ds, db);
}
FL_ADAPTER(affine_channel_grad, prep_affine_channel, run_affine_channel_grad);

/* ---- pad2d, pad_constant_like ---- */

/* mode in op->a.i[0], pad_value in op->a.f[0], NHWC in op->a.b[0], paddings in op->a.shape (4). */
static FlStatus prep_pad2d(ExecOp *op, FlErr *e) {
    const char *m = fl_exec_attr_string(op, "mode");
    if (strcmp(m, "constant") == 0) op->a.i[0] = FL_PAD2D_CONSTANT;
    else if (strcmp(m, "reflect") == 0) op->a.i[0] = FL_PAD2D_REFLECT;
    else if (strcmp(m, "edge") == 0) op->a.i[0] = FL_PAD2D_EDGE;
    else return fl_err(e, "attribute 'mode' must be 'constant', 'reflect' or 'edge', found '%s'", m);
    op->a.f[0] = fl_exec_attr_float(op, "pad_value");
    if (fl_exec_attr_shape(op, "paddings", e)) return FL_ERROR;
    if (op->a.nshape != 4) return fl_err(e, "attribute 'paddings' must hold 4 ints, found %d", op->a.nshape);
    return prep_layout(op, e, "data_format");
}

/* The paddings: the int32 tensor Paddings [4] when given, else the attribute. */
static FlStatus pad2d_pads(OpCall *c, const FlTensor *t, int64_t pads[4]) {
    if (!t) {
        memcpy(pads, c->op->a.shape, 4 * sizeof pads[0]);
        return FL_OK;
    }
    if (t->dtype != FL_DT_INT32 || fl_tensor_numel(t) != 4)
        return fl_err(c->e, "pad2d: Paddings %s (%s) must be int32 with 4 values", fl_tensor_shape(t).s,
                      fl_dtype_name(t->dtype));
    for (int i = 0; i < 4; i++) pads[i] = ((const int32_t *)fl_tensor_data(t))[i];
    return FL_OK;
}

static FlStatus run_pad2d(OpCall *c) {
    const PAttrs *a = &c->op->a;
    int64_t pads[4];
    if (pad2d_pads(c, IN(FL_IN_pad2d_Paddings), pads)) return FL_ERROR;
    return fl_kernel_pad2d(c->e, IN(FL_IN_pad2d_X), pads, (FlPad2dMode)a->i[0], a->f[0], a->b[0], OUT(FL_OUT_pad2d_Out));
}
FL_ADAPTER(pad2d, prep_pad2d, run_pad2d);
/* pad2d_grad: X Paddings? Out@GRAD -> X@GRAD? */
static FlStatus run_pad2d_grad(OpCall *c) {
    const PAttrs *a = &c->op->a;
    FlTensor *dx = OUT(FL_OUT_pad2d_grad_X_GRAD);
    int64_t pads[4];
    if (!dx) return FL_OK;
    if (pad2d_pads(c, IN(FL_IN_pad2d_grad_Paddings), pads)) return FL_ERROR;
    return fl_kernel_pad2d_grad(c->e, IN(FL_IN_pad2d_grad_X), IN(FL_IN_pad2d_grad_Out_GRAD), pads,
                                (FlPad2dMode)a->i[0], a->b[0], dx);
}
FL_ADAPTER(pad2d_grad, prep_pad2d, run_pad2d_grad);

static FlStatus prep_pad_constant_like(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.f[0] = fl_exec_attr_float(op, "pad_value");
    return FL_OK;
}
static FlStatus run_pad_constant_like(OpCall *c) {
    return fl_kernel_pad_constant_like(c->e, IN(FL_IN_pad_constant_like_X), IN(FL_IN_pad_constant_like_Y),
                                       c->op->a.f[0], OUT(FL_OUT_pad_constant_like_Out));
}
FL_ADAPTER(pad_constant_like, prep_pad_constant_like, run_pad_constant_like);
/* pad_constant_like_grad: X Y Out@GRAD -> Y@GRAD? */
static FlStatus run_pad_constant_like_grad(OpCall *c) {
    FlTensor *dy = OUT(FL_OUT_pad_constant_like_grad_Y_GRAD);
    if (!dy) return FL_OK;
    return fl_kernel_pad_constant_like_grad(c->e, IN(FL_IN_pad_constant_like_grad_X), IN(FL_IN_pad_constant_like_grad_Y),
                                            IN(FL_IN_pad_constant_like_grad_Out_GRAD), dy);
}
FL_ADAPTER(pad_constant_like_grad, prep_pad_constant_like, run_pad_constant_like_grad);

/* ---- group_norm ---- */

static FlStatus prep_group_norm(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "groups");
    op->a.f[0] = fl_exec_attr_float(op, "epsilon");
    if (op->a.i[0] < 1 || op->a.i[0] > INT32_MAX)
        return fl_err(e, "attribute 'groups' must be >= 1, found %lld", (long long)op->a.i[0]);
    return FL_OK;
}
static FlStatus run_group_norm(OpCall *c) {
    const PAttrs *a = &c->op->a;
    return fl_kernel_group_norm(c->e, IN(FL_IN_group_norm_X), IN(FL_IN_group_norm_Scale), IN(FL_IN_group_norm_Bias),
                                (int)a->i[0], a->f[0], OUT(FL_OUT_group_norm_Y), OUT(FL_OUT_group_norm_Mean),
                                OUT(FL_OUT_group_norm_Variance));
}
FL_ADAPTER(group_norm, prep_group_norm, run_group_norm);
/* group_norm_grad: X Scale? Bias? Mean Variance Y@GRAD -> X@GRAD? Scale@GRAD? Bias@GRAD? */
static FlStatus run_group_norm_grad(OpCall *c) {
    const PAttrs *a = &c->op->a;
    FlTensor *dx = OUT(FL_OUT_group_norm_grad_X_GRAD), *ds = OUT(FL_OUT_group_norm_grad_Scale_GRAD),
             *db = OUT(FL_OUT_group_norm_grad_Bias_GRAD);
    if (!dx && !ds && !db) return FL_OK;
    return fl_kernel_group_norm_grad(c->e, IN(FL_IN_group_norm_grad_X), IN(FL_IN_group_norm_grad_Scale),
                                     IN(FL_IN_group_norm_grad_Mean), IN(FL_IN_group_norm_grad_Variance),
                                     IN(FL_IN_group_norm_grad_Y_GRAD), (int)a->i[0], a->f[0], dx, ds, db);
}
FL_ADAPTER(group_norm_grad, prep_group_norm, run_group_norm_grad);
