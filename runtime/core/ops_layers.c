/* ops_layers.c: adapters of the parametrised activations, clip and clip_by_norm, prelu, the
 * batch-size fills, reduce_max / reduce_min / reduce_prod, and the indexing, stacking, padding
 * and reshaping layers (kernels in runtime/kernels/kernels_layers.h), with their gradients. Slots
 * are bound by their generated names as in ops_math.c. */
#include "runtime/core/exec_impl.h"

#include <string.h>

#include "runtime/kernels/kernels_layers.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* Up to three int lists of an op (slice's axes/starts/ends, pad's paddings, ...), in op->a.extra. */
#define MAX_LIST 2 * FL_MAX_DIMS
typedef struct Lists {
    int n[3];
    int64_t v[3][MAX_LIST];
} Lists;

static FlStatus prep_lists(ExecOp *op, FlErr *e, const char *n0, const char *n1, const char *n2) {
    const char *names[3] = {n0, n1, n2};
    Lists *l = fl_xcalloc(1, sizeof *l);
    op->a.extra = l;
    for (int k = 0; k < 3 && names[k]; k++) {
        size_t n;
        const int64_t *v = fl_exec_attr_ints(op, names[k], &n);
        if (n > MAX_LIST) return fl_err(e, "attribute '%s' holds %zu values (at most %d)", names[k], n, MAX_LIST);
        if (n) memcpy(l->v[k], v, n * sizeof *v);
        l->n[k] = (int)n;
    }
    return FL_OK;
}
#define LISTS(c) ((const Lists *)(c)->op->a.extra)

/* ---- activations with attributes, clip ---- */

#define ACT(name, KIND, attr1, attr2)                                                                        \
    static FlStatus prep_##name(ExecOp *op, FlErr *e) {                                                      \
        (void)e;                                                                                             \
        const char *a1 = attr1, *a2 = attr2;                                                                 \
        op->a.f[0] = a1 ? fl_exec_attr_float(op, a1) : 0;                                                    \
        op->a.f[1] = a2 ? fl_exec_attr_float(op, a2) : 0;                                                    \
        return FL_OK;                                                                                        \
    }                                                                                                        \
    static FlStatus run_##name(OpCall *c) {                                                                  \
        return fl_kernel_act(c->e, KIND, IN(FL_IN_##name##_X), c->op->a.f[0], c->op->a.f[1],                 \
                             OUT(FL_OUT_##name##_Out));                                                      \
    }                                                                                                        \
    FL_ADAPTER(name, prep_##name, run_##name);                                                               \
    /* <op>_grad: X, Out, Out@GRAD -> X@GRAD */                                                              \
    static FlStatus run_##name##_grad(OpCall *c) {                                                           \
        if (!OUT(FL_OUT_##name##_grad_X_GRAD)) return FL_OK;                                                 \
        return fl_kernel_act_grad(c->e, KIND, IN(FL_IN_##name##_grad_X), IN(FL_IN_##name##_grad_Out_GRAD),   \
                                  c->op->a.f[0], c->op->a.f[1], OUT(FL_OUT_##name##_grad_X_GRAD));           \
    }                                                                                                        \
    FL_ADAPTER(name##_grad, prep_##name, run_##name##_grad);

ACT(leaky_relu, FL_ACT_LEAKY_RELU, "alpha", NULL)
ACT(elu, FL_ACT_ELU, "alpha", NULL)
ACT(relu6, FL_ACT_RELU6, "threshold", NULL)
ACT(swish, FL_ACT_SWISH, "beta", NULL)
ACT(hard_sigmoid, FL_ACT_HARD_SIGMOID, "slope", "offset")
ACT(brelu, FL_ACT_BRELU, "t_min", "t_max")
ACT(soft_relu, FL_ACT_SOFT_RELU, "threshold", NULL)
ACT(softsign, FL_ACT_SOFTSIGN, NULL, NULL)
ACT(pow, FL_ACT_POW, "factor", NULL)
ACT(clip, FL_ACT_CLIP, "min", "max")
ACT(logsigmoid, FL_ACT_LOGSIGMOID, NULL, NULL)
ACT(atan, FL_ACT_ATAN, NULL, NULL)
ACT(tanh_shrink, FL_ACT_TANH_SHRINK, NULL, NULL)
ACT(softshrink, FL_ACT_SOFTSHRINK, "lambda", NULL)
ACT(rsqrt, FL_ACT_RSQRT, NULL, NULL)
ACT(ceil, FL_ACT_CEIL, NULL, NULL)
ACT(floor, FL_ACT_FLOOR, NULL, NULL)
ACT(cos, FL_ACT_COS, NULL, NULL)
ACT(acos, FL_ACT_ACOS, NULL, NULL)
ACT(asin, FL_ACT_ASIN, NULL, NULL)
ACT(sin, FL_ACT_SIN, NULL, NULL)
ACT(round, FL_ACT_ROUND, NULL, NULL)
ACT(reciprocal, FL_ACT_RECIPROCAL, NULL, NULL)
ACT(softplus, FL_ACT_SOFTPLUS, NULL, NULL)
ACT(hard_shrink, FL_ACT_HARD_SHRINK, "threshold", NULL)
ACT(thresholded_relu, FL_ACT_THRESHOLDED_RELU, "threshold", NULL)
ACT(selu, FL_ACT_SELU, "scale", "alpha")
ACT(stanh, FL_ACT_STANH, "scale_a", "scale_b")
ACT(sign, FL_ACT_SIGN, NULL, NULL)

static FlStatus prep_prelu(ExecOp *op, FlErr *e) {
    const char *m = fl_exec_attr_string(op, "mode");
    static const char *const modes[FL_PRELU_COUNT] = {"all", "channel", "element"};
    for (int i = 0; i < FL_PRELU_COUNT; i++)
        if (strcmp(m, modes[i]) == 0) {
            op->a.i[0] = i;
            return FL_OK;
        }
    return fl_err(e, "attribute 'mode' must be 'all', 'channel' or 'element', found '%s'", m);
}
static FlStatus run_prelu(OpCall *c) {
    return fl_kernel_prelu(c->e, IN(FL_IN_prelu_X), IN(FL_IN_prelu_Alpha), (FlPreluMode)c->op->a.i[0],
                           OUT(FL_OUT_prelu_Out));
}
FL_ADAPTER(prelu, prep_prelu, run_prelu);
static FlStatus run_prelu_grad(OpCall *c) {
    if (!OUT(FL_OUT_prelu_grad_X_GRAD) && !OUT(FL_OUT_prelu_grad_Alpha_GRAD)) return FL_OK;
    return fl_kernel_prelu_grad(c->e, IN(FL_IN_prelu_grad_X), IN(FL_IN_prelu_grad_Alpha),
                                IN(FL_IN_prelu_grad_Out_GRAD), (FlPreluMode)c->op->a.i[0],
                                OUT(FL_OUT_prelu_grad_X_GRAD), OUT(FL_OUT_prelu_grad_Alpha_GRAD));
}
FL_ADAPTER(prelu_grad, prep_prelu, run_prelu_grad);

static FlStatus prep_clip_by_norm(ExecOp *op, FlErr *e) {
    op->a.f[0] = fl_exec_attr_float(op, "max_norm");
    if (!(op->a.f[0] > 0)) return fl_err(e, "attribute 'max_norm' must be > 0, found %g", op->a.f[0]);
    return FL_OK;
}
static FlStatus run_clip_by_norm(OpCall *c) {
    return fl_kernel_clip_by_norm(c->e, IN(FL_IN_clip_by_norm_X), c->op->a.f[0], OUT(FL_OUT_clip_by_norm_Out));
}
FL_ADAPTER(clip_by_norm, prep_clip_by_norm, run_clip_by_norm);
static FlStatus run_clip_by_norm_grad(OpCall *c) {
    if (!OUT(FL_OUT_clip_by_norm_grad_X_GRAD)) return FL_OK;
    return fl_kernel_clip_by_norm_grad(c->e, IN(FL_IN_clip_by_norm_grad_X), IN(FL_IN_clip_by_norm_grad_Out_GRAD),
                                       c->op->a.f[0], OUT(FL_OUT_clip_by_norm_grad_X_GRAD));
}
FL_ADAPTER(clip_by_norm_grad, prep_clip_by_norm, run_clip_by_norm_grad);

/* ---- fills shaped by a batch size ---- */

static FlStatus prep_batch_like(ExecOp *op, FlErr *e) {
    int64_t dt = fl_exec_attr_int(op, "dtype");
    if (dt < 0 || dt >= FL_DT_COUNT) return fl_err(e, "attribute 'dtype' is not a dtype (%lld)", (long long)dt);
    op->a.i[0] = fl_exec_attr_int(op, "input_dim_idx");
    op->a.i[1] = fl_exec_attr_int(op, "output_dim_idx");
    op->a.i[2] = dt;
    if (op->a.i[0] < 0 || op->a.i[0] >= FL_MAX_DIMS || op->a.i[1] < 0 || op->a.i[1] >= FL_MAX_DIMS)
        return fl_err(e, "attributes 'input_dim_idx' %lld and 'output_dim_idx' %lld must be dims (0 to %d)",
                      (long long)op->a.i[0], (long long)op->a.i[1], FL_MAX_DIMS - 1);
    if (fl_ops_attr(op->info, "value")) { /* a.b[0], a.i[3]: int_value when it holds the value */
        op->a.f[0] = fl_exec_attr_float(op, "value");
        const int64_t *exact = fl_exec_attr_exact(op, "value");
        op->a.b[0] = exact != NULL;
        op->a.i[3] = exact ? *exact : 0;
    } else if (fl_ops_attr(op->info, "std")) { /* a.f[0] mean, a.f[1] std */
        op->a.f[0] = fl_exec_attr_float(op, "mean");
        op->a.f[1] = fl_exec_attr_float(op, "std");
    } else {
        op->a.f[0] = fl_exec_attr_float(op, "min");
        op->a.f[1] = fl_exec_attr_float(op, "max");
    }
    return fl_exec_attr_shape(op, "shape", e);
}
/* The number of sequences of a LoD Input (its offsets in input slot lod_slot), -1 without. */
static FlStatus batch_nseq(OpCall *c, int in_slot, int lod_slot, int64_t *nseq) {
    const FlTensor *in = IN(in_slot), *lod = IN(lod_slot);
    const int64_t *off;
    *nseq = -1;
    if (!lod) return FL_OK;
    if (!fl_tensor_has_data(in) || in->ndim < 1) return fl_err(c->e, "Input has no rows for InputLod to cut");
    return fl_exec_check_lod(c->e, lod, in->ne[0], "InputLod", &off, nseq);
}
static FlStatus run_fill_constant_batch_size_like(OpCall *c) {
    const PAttrs *a = &c->op->a;
    int64_t nseq;
    if (batch_nseq(c, FL_IN_fill_constant_batch_size_like_Input, FL_IN_fill_constant_batch_size_like_InputLod, &nseq))
        return FL_ERROR;
    return fl_kernel_fill_constant_batch_size_like(c->e, IN(FL_IN_fill_constant_batch_size_like_Input), nseq,
                                                   a->nshape, a->shape, (int)a->i[0], (int)a->i[1], a->f[0],
                                                   a->b[0] ? &a->i[3] : NULL, (FlDType)a->i[2],
                                                   OUT(FL_OUT_fill_constant_batch_size_like_Out));
}
FL_ADAPTER(fill_constant_batch_size_like, prep_batch_like, run_fill_constant_batch_size_like);
static FlStatus run_uniform_random_batch_size_like(OpCall *c) {
    const PAttrs *a = &c->op->a;
    int64_t nseq;
    if (batch_nseq(c, FL_IN_uniform_random_batch_size_like_Input, FL_IN_uniform_random_batch_size_like_InputLod,
                   &nseq))
        return FL_ERROR;
    return fl_kernel_uniform_random_batch_size_like(
        c->e, IN(FL_IN_uniform_random_batch_size_like_Input), nseq, a->nshape, a->shape, (int)a->i[0], (int)a->i[1],
        a->f[0], a->f[1], fl_call_draw_seed(c), (FlDType)a->i[2], OUT(FL_OUT_uniform_random_batch_size_like_Out));
}
FL_ADAPTER(uniform_random_batch_size_like, prep_batch_like, run_uniform_random_batch_size_like);
static FlStatus run_gaussian_random_batch_size_like(OpCall *c) {
    const PAttrs *a = &c->op->a;
    int64_t nseq;
    if (batch_nseq(c, FL_IN_gaussian_random_batch_size_like_Input, FL_IN_gaussian_random_batch_size_like_InputLod,
                   &nseq))
        return FL_ERROR;
    return fl_kernel_gaussian_random_batch_size_like(
        c->e, IN(FL_IN_gaussian_random_batch_size_like_Input), nseq, a->nshape, a->shape, (int)a->i[0], (int)a->i[1],
        a->f[0], a->f[1], fl_call_draw_seed(c), (FlDType)a->i[2], OUT(FL_OUT_gaussian_random_batch_size_like_Out));
}
FL_ADAPTER(gaussian_random_batch_size_like, prep_batch_like, run_gaussian_random_batch_size_like);

/* ---- reduce_max, reduce_min, reduce_prod ---- */

#define REDUCE(name)                                                                                         \
    FL_REDUCE_ADAPTER(name);                                                                                 \
    /* <op>_grad: X, Out, Out@GRAD -> X@GRAD */                                                              \
    static FlStatus run_##name##_grad(OpCall *c) {                                                           \
        const PAttrs *a = &c->op->a;                                                                         \
        if (!OUT(FL_OUT_##name##_grad_X_GRAD)) return FL_OK;                                                 \
        return fl_kernel_##name##_grad(c->e, IN(FL_IN_##name##_grad_X), IN(FL_IN_##name##_grad_Out),         \
                                       IN(FL_IN_##name##_grad_Out_GRAD), a->dims, a->ndims, a->b[0],         \
                                       a->b[1], OUT(FL_OUT_##name##_grad_X_GRAD));                           \
    }                                                                                                        \
    FL_ADAPTER(name##_grad, fl_exec_prep_reduce, run_##name##_grad);
REDUCE(reduce_max)
REDUCE(reduce_min)
REDUCE(reduce_prod)

/* ---- slice, crop, pad ---- */

static FlStatus prep_slice(ExecOp *op, FlErr *e) { return prep_lists(op, e, "axes", "starts", "ends"); }
static FlStatus slice_lists(OpCall *c, const Lists *l) {
    if (l->n[0] != l->n[1] || l->n[0] != l->n[2])
        return fl_err(c->e, "slice: axes, starts and ends have %d, %d and %d values", l->n[0], l->n[1], l->n[2]);
    return FL_OK;
}
static FlStatus run_slice(OpCall *c) {
    const Lists *l = LISTS(c);
    if (slice_lists(c, l)) return FL_ERROR;
    return fl_kernel_slice(c->e, IN(FL_IN_slice_Input), l->v[0], l->v[1], l->v[2], l->n[0], OUT(FL_OUT_slice_Out));
}
FL_ADAPTER(slice, prep_slice, run_slice);
/* slice_grad: Input, Out, Out@GRAD -> Input@GRAD */
static FlStatus run_slice_grad(OpCall *c) {
    const Lists *l = LISTS(c);
    if (!OUT(FL_OUT_slice_grad_Input_GRAD)) return FL_OK;
    if (slice_lists(c, l)) return FL_ERROR;
    return fl_kernel_slice_grad(c->e, IN(FL_IN_slice_grad_Input), IN(FL_IN_slice_grad_Out_GRAD), l->v[0], l->v[1],
                                l->v[2], l->n[0], OUT(FL_OUT_slice_grad_Input_GRAD));
}
FL_ADAPTER(slice_grad, prep_slice, run_slice_grad);

static FlStatus prep_crop(ExecOp *op, FlErr *e) { return prep_lists(op, e, "offsets", "shape", NULL); }
/* The offsets (NULL: zeros) and shape of a crop of x: Y's dims when Y is given. */
static FlStatus crop_args(OpCall *c, const FlTensor *x, const FlTensor *y, const int64_t **off, const int64_t **shape,
                          int *nshape) {
    const Lists *l = LISTS(c);
    if (!x) return fl_err(c->e, "crop: input X has no value");
    if (l->n[0] && l->n[0] != x->ndim)
        return fl_err(c->e, "crop: offsets has %d values but X %s has %d dims", l->n[0], fl_tensor_shape(x).s, x->ndim);
    *off = l->n[0] ? l->v[0] : NULL;
    *shape = y ? y->ne : l->v[1];
    *nshape = y ? y->ndim : l->n[1];
    return FL_OK;
}
static FlStatus run_crop(OpCall *c) {
    const FlTensor *x = IN(FL_IN_crop_X);
    const int64_t *off = NULL, *shape = NULL;
    int ns = 0;
    if (crop_args(c, x, IN(FL_IN_crop_Y), &off, &shape, &ns)) return FL_ERROR;
    return fl_kernel_crop(c->e, x, off, shape, ns, OUT(FL_OUT_crop_Out));
}
FL_ADAPTER(crop, prep_crop, run_crop);
/* crop_grad: X, Y, Out, Out@GRAD -> X@GRAD, Y@GRAD (Y only gives the shape: zeros) */
static FlStatus run_crop_grad(OpCall *c) {
    const FlTensor *x = IN(FL_IN_crop_grad_X), *y = IN(FL_IN_crop_grad_Y);
    if (OUT(FL_OUT_crop_grad_Y_GRAD) && y && fl_kernel_fill_zeros_like(c->e, y, OUT(FL_OUT_crop_grad_Y_GRAD)))
        return FL_ERROR;
    if (!OUT(FL_OUT_crop_grad_X_GRAD)) return FL_OK;
    const int64_t *off = NULL, *shape = NULL;
    int ns = 0;
    if (crop_args(c, x, y, &off, &shape, &ns)) return FL_ERROR;
    return fl_kernel_crop_grad(c->e, x, IN(FL_IN_crop_grad_Out_GRAD), off, OUT(FL_OUT_crop_grad_X_GRAD));
}
FL_ADAPTER(crop_grad, prep_crop, run_crop_grad);

static FlStatus prep_pad(ExecOp *op, FlErr *e) {
    op->a.f[0] = fl_exec_attr_float(op, "pad_value");
    return prep_lists(op, e, "paddings", NULL, NULL);
}
static FlStatus run_pad(OpCall *c) {
    const Lists *l = LISTS(c);
    return fl_kernel_pad(c->e, IN(FL_IN_pad_X), l->v[0], l->n[0], c->op->a.f[0], OUT(FL_OUT_pad_Out));
}
FL_ADAPTER(pad, prep_pad, run_pad);
static FlStatus run_pad_grad(OpCall *c) {
    const Lists *l = LISTS(c);
    if (!OUT(FL_OUT_pad_grad_X_GRAD)) return FL_OK;
    return fl_kernel_pad_grad(c->e, IN(FL_IN_pad_grad_X), IN(FL_IN_pad_grad_Out_GRAD), l->v[0], l->n[0],
                              OUT(FL_OUT_pad_grad_X_GRAD));
}
FL_ADAPTER(pad_grad, prep_pad, run_pad_grad);

/* ---- gather, scatter, expand ---- */

static FlStatus run_gather(OpCall *c) {
    return fl_kernel_gather(c->e, IN(FL_IN_gather_X), IN(FL_IN_gather_Index), OUT(FL_OUT_gather_Out));
}
FL_ADAPTER(gather, NULL, run_gather);
static FlStatus run_gather_grad(OpCall *c) {
    if (!OUT(FL_OUT_gather_grad_X_GRAD)) return FL_OK;
    return fl_kernel_gather_grad(c->e, IN(FL_IN_gather_grad_X), IN(FL_IN_gather_grad_Index),
                                 IN(FL_IN_gather_grad_Out_GRAD), OUT(FL_OUT_gather_grad_X_GRAD));
}
FL_ADAPTER(gather_grad, NULL, run_gather_grad);

static FlStatus run_scatter(OpCall *c) {
    return fl_kernel_scatter(c->e, IN(FL_IN_scatter_X), IN(FL_IN_scatter_Ids), IN(FL_IN_scatter_Updates),
                             OUT(FL_OUT_scatter_Out));
}
FL_ADAPTER(scatter, NULL, run_scatter);
static FlStatus run_scatter_grad(OpCall *c) {
    if (!OUT(FL_OUT_scatter_grad_X_GRAD) && !OUT(FL_OUT_scatter_grad_Updates_GRAD)) return FL_OK;
    return fl_kernel_scatter_grad(c->e, IN(FL_IN_scatter_grad_X), IN(FL_IN_scatter_grad_Ids),
                                  IN(FL_IN_scatter_grad_Updates), IN(FL_IN_scatter_grad_Out_GRAD),
                                  OUT(FL_OUT_scatter_grad_X_GRAD), OUT(FL_OUT_scatter_grad_Updates_GRAD));
}
FL_ADAPTER(scatter_grad, NULL, run_scatter_grad);

static FlStatus prep_expand(ExecOp *op, FlErr *e) { return prep_lists(op, e, "expand_times", NULL, NULL); }
static FlStatus run_expand(OpCall *c) {
    const Lists *l = LISTS(c);
    return fl_kernel_expand(c->e, IN(FL_IN_expand_X), l->v[0], l->n[0], OUT(FL_OUT_expand_Out));
}
FL_ADAPTER(expand, prep_expand, run_expand);
static FlStatus run_expand_grad(OpCall *c) {
    const Lists *l = LISTS(c);
    if (!OUT(FL_OUT_expand_grad_X_GRAD)) return FL_OK;
    return fl_kernel_expand_grad(c->e, IN(FL_IN_expand_grad_X), IN(FL_IN_expand_grad_Out_GRAD), l->v[0], l->n[0],
                                 OUT(FL_OUT_expand_grad_X_GRAD));
}
FL_ADAPTER(expand_grad, prep_expand, run_expand_grad);

/* ---- views: squeeze, unsqueeze, flatten (gradients: dOut viewed with X's shape) ---- */

static FlStatus prep_axes(ExecOp *op, FlErr *e) { return prep_lists(op, e, "axes", NULL, NULL); }
static FlStatus run_squeeze(OpCall *c) {
    const Lists *l = LISTS(c);
    return fl_kernel_squeeze(c->e, IN(FL_IN_squeeze_X), l->v[0], l->n[0], OUT(FL_OUT_squeeze_Out));
}
FL_ADAPTER(squeeze, prep_axes, run_squeeze);
static FlStatus run_unsqueeze(OpCall *c) {
    const Lists *l = LISTS(c);
    return fl_kernel_unsqueeze(c->e, IN(FL_IN_unsqueeze_X), l->v[0], l->n[0], OUT(FL_OUT_unsqueeze_Out));
}
FL_ADAPTER(unsqueeze, prep_axes, run_unsqueeze);
static FlStatus run_flatten(OpCall *c) {
    return fl_kernel_flatten(c->e, IN(FL_IN_flatten_X), (int)c->op->a.i[0], OUT(FL_OUT_flatten_Out));
}
FL_ADAPTER(flatten, fl_exec_prep_axis, run_flatten);
#define VIEW_GRAD(name)                                                                                      \
    static FlStatus run_##name##_grad(OpCall *c) {                                                           \
        if (!OUT(FL_OUT_##name##_grad_X_GRAD)) return FL_OK;                                                 \
        return fl_kernel_reshape_grad(c->e, IN(FL_IN_##name##_grad_X), IN(FL_IN_##name##_grad_Out_GRAD),     \
                                      OUT(FL_OUT_##name##_grad_X_GRAD));                                     \
    }                                                                                                        \
    FL_ADAPTER(name##_grad, NULL, run_##name##_grad);
VIEW_GRAD(squeeze)
VIEW_GRAD(unsqueeze)
VIEW_GRAD(flatten)

/* ---- stack, unstack ---- */

static FlStatus run_stack(OpCall *c) {
    int n = fl_call_nin(c, FL_IN_stack_X);
    const FlTensor *const *xs = fl_call_ins(c, FL_IN_stack_X);
    for (int i = 0; i < n; i++)
        if (!xs[i]) return fl_err(c->e, "stack: input %d is empty", i);
    return fl_kernel_stack(c->e, xs, n, (int)c->op->a.i[0], OUT(FL_OUT_stack_Y));
}
FL_ADAPTER(stack, fl_exec_prep_axis, run_stack);
/* stack_grad: X*, Y, Y@GRAD -> X@GRAD* (as many as X, or none) */
static FlStatus run_stack_grad(OpCall *c) {
    int n = fl_call_nin(c, FL_IN_stack_grad_X), nd = fl_call_nout(c, FL_OUT_stack_grad_X_GRAD);
    if (nd == 0) return FL_OK;
    if (nd != n) return fl_err(c->e, "stack_grad: %d inputs but %d input gradients", n, nd);
    const FlTensor *g = IN(FL_IN_stack_grad_Y_GRAD);
    if (!g) return fl_err(c->e, "stack_grad: input Y@GRAD has no value");
    return fl_kernel_unstack(c->e, g, (int)c->op->a.i[0],
                             fl_call_outs(c, FL_OUT_stack_grad_X_GRAD), n);
}
FL_ADAPTER(stack_grad, fl_exec_prep_axis, run_stack_grad);

static FlStatus run_unstack(OpCall *c) {
    return fl_kernel_unstack(c->e, IN(FL_IN_unstack_X), (int)c->op->a.i[0], fl_call_outs(c, FL_OUT_unstack_Y),
                             fl_call_nout(c, FL_OUT_unstack_Y));
}
FL_ADAPTER(unstack, fl_exec_prep_axis, run_unstack);
/* unstack_grad: X, Y*, Y@GRAD* -> X@GRAD */
static FlStatus run_unstack_grad(OpCall *c) {
    if (!OUT(FL_OUT_unstack_grad_X_GRAD)) return FL_OK;
    return fl_kernel_unstack_grad(c->e, IN(FL_IN_unstack_grad_X), fl_call_ins(c, FL_IN_unstack_grad_Y_GRAD),
                                  fl_call_nin(c, FL_IN_unstack_grad_Y_GRAD), (int)c->op->a.i[0],
                                  OUT(FL_OUT_unstack_grad_X_GRAD));
}
FL_ADAPTER(unstack_grad, fl_exec_prep_axis, run_unstack_grad);

/* ---- one_hot ---- */

static FlStatus prep_one_hot(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_int(op, "depth");
    return FL_OK;
}
static FlStatus run_one_hot(OpCall *c) {
    return fl_kernel_one_hot(c->e, IN(FL_IN_one_hot_X), c->op->a.i[0], OUT(FL_OUT_one_hot_Out));
}
FL_ADAPTER(one_hot, prep_one_hot, run_one_hot);
