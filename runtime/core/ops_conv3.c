/* ops_conv3.c: adapters of conv3d, conv3d_transpose, pool3d and max_pool{2,3}d_with_index and
 * their gradients (kernels in runtime/kernels/kernels_conv3.h; the gradients' slots are their
 * FL_GRAD_SLOTS lines in compiler/ops/conv3.def), and the prepare of the N-D poolings that pool2d's
 * adaptive windows share (ops_nn.c). */
#include <stdlib.h>
#include <string.h>

#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_conv3.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* n ints of attribute `name` into out (each within int). */
static FlStatus ints(ExecOp *op, const char *name, int n, int *out, FlErr *e) {
    size_t got;
    const int64_t *v = fl_exec_attr_ints(op, name, &got);
    if (got != (size_t)n) return fl_err(e, "attribute '%s' must hold %d ints, found %zu", name, n, got);
    for (int i = 0; i < n; i++) {
        if (v[i] < INT32_MIN || v[i] > INT32_MAX) return fl_err(e, "attribute '%s' holds %lld", name, (long long)v[i]);
        out[i] = (int)v[i];
    }
    return FL_OK;
}

/* ---- conv3d, conv3d_transpose ---- */

typedef struct Conv3Prep {
    FlConv3dAttrs a;
    int64_t output_size[3];
    bool has_output_size;
} Conv3Prep;

static FlStatus prep_conv3d(ExecOp *op, FlErr *e) {
    Conv3Prep *p = fl_xcalloc(1, sizeof *p);
    op->a.extra = p;
    if (ints(op, "strides", 3, p->a.strides, e) || ints(op, "paddings", 3, p->a.paddings, e) ||
        ints(op, "dilations", 3, p->a.dilations, e))
        return FL_ERROR;
    p->a.groups = (int)fl_exec_attr_int(op, "groups");
    if (!fl_ops_attr(op->info, "output_size")) return FL_OK;
    size_t n;
    const int64_t *os = fl_exec_attr_ints(op, "output_size", &n);
    if (n != 0 && n != 3) return fl_err(e, "attribute 'output_size' must hold 3 ints or none, found %zu", n);
    p->has_output_size = n == 3;
    for (size_t i = 0; i < n; i++) p->output_size[i] = os[i];
    return FL_OK;
}
#define CONV3(c) ((const Conv3Prep *)(c)->op->a.extra)

static FlStatus run_conv3d(OpCall *c) {
    return fl_kernel_conv3d(c->e, IN(FL_IN_conv3d_Input), IN(FL_IN_conv3d_Filter), &CONV3(c)->a,
                            OUT(FL_OUT_conv3d_Output));
}
FL_ADAPTER(conv3d, prep_conv3d, run_conv3d);
/* conv3d_grad: Input Filter Output Output@GRAD -> Input@GRAD? Filter@GRAD? */
static FlStatus run_conv3d_grad(OpCall *c) {
    FlTensor *di = OUT(FL_OUT_conv3d_grad_Input_GRAD), *df = OUT(FL_OUT_conv3d_grad_Filter_GRAD);
    if (!di && !df) return FL_OK;
    return fl_kernel_conv3d_grad(c->e, IN(FL_IN_conv3d_grad_Input), IN(FL_IN_conv3d_grad_Filter),
                                 IN(FL_IN_conv3d_grad_Output_GRAD), &CONV3(c)->a, di, df);
}
FL_ADAPTER(conv3d_grad, prep_conv3d, run_conv3d_grad);

static FlStatus run_conv3d_transpose(OpCall *c) {
    const Conv3Prep *p = CONV3(c);
    return fl_kernel_conv3d_transpose(c->e, IN(FL_IN_conv3d_transpose_Input), IN(FL_IN_conv3d_transpose_Filter), &p->a,
                                      p->has_output_size ? p->output_size : NULL, OUT(FL_OUT_conv3d_transpose_Output));
}
FL_ADAPTER(conv3d_transpose, prep_conv3d, run_conv3d_transpose);
/* conv3d_transpose_grad: Input Filter Output@GRAD -> Input@GRAD? Filter@GRAD? */
static FlStatus run_conv3d_transpose_grad(OpCall *c) {
    const Conv3Prep *p = CONV3(c);
    FlTensor *di = OUT(FL_OUT_conv3d_transpose_grad_Input_GRAD), *df = OUT(FL_OUT_conv3d_transpose_grad_Filter_GRAD);
    if (!di && !df) return FL_OK;
    return fl_kernel_conv3d_transpose_grad(c->e, IN(FL_IN_conv3d_transpose_grad_Input),
                                           IN(FL_IN_conv3d_transpose_grad_Filter),
                                           IN(FL_IN_conv3d_transpose_grad_Output_GRAD), &p->a,
                                           p->has_output_size ? p->output_size : NULL, di, df);
}
FL_ADAPTER(conv3d_transpose_grad, prep_conv3d, run_conv3d_transpose_grad);

/* ---- pooling ---- */

FlStatus fl_exec_prep_pool_nd(ExecOp *op, FlErr *e, int nsp) {
    FlPoolNdAttrs *pa = fl_xcalloc(1, sizeof *pa);
    op->a.extra = pa;
    pa->nsp = nsp;
    pa->type = FL_POOL_MAX;
    pa->exclusive = true;
    if (fl_ops_attr(op->info, "pooling_type")) { /* the with_index poolings are max pooling */
        const char *t = fl_exec_attr_string(op, "pooling_type");
        if (strcmp(t, "avg") == 0) pa->type = FL_POOL_AVG;
        else if (strcmp(t, "max") != 0) return fl_err(e, "attribute 'pooling_type' must be 'max' or 'avg', found '%s'", t);
        pa->exclusive = fl_exec_attr_bool(op, "exclusive");
        pa->ceil_mode = fl_exec_attr_bool(op, "ceil_mode");
    }
    if (ints(op, "ksize", nsp, pa->ksize, e) || ints(op, "strides", nsp, pa->strides, e) ||
        ints(op, "paddings", nsp, pa->paddings, e))
        return FL_ERROR;
    pa->global_pooling = fl_exec_attr_bool(op, "global_pooling");
    pa->adaptive = fl_exec_attr_bool(op, "adaptive");
    return FL_OK;
}
#define POOL(c) ((const FlPoolNdAttrs *)(c)->op->a.extra)

static FlStatus prep_pool3d(ExecOp *op, FlErr *e) { return fl_exec_prep_pool_nd(op, e, 3); }
static FlStatus run_pool3d(OpCall *c) {
    return fl_kernel_pool_nd(c->e, IN(FL_IN_pool3d_X), POOL(c), OUT(FL_OUT_pool3d_Out), NULL);
}
FL_ADAPTER(pool3d, prep_pool3d, run_pool3d);
/* pool3d_grad: X Out Out@GRAD -> X@GRAD? */
static FlStatus run_pool3d_grad(OpCall *c) {
    FlTensor *dx = OUT(FL_OUT_pool3d_grad_X_GRAD);
    if (!dx) return FL_OK;
    return fl_kernel_pool_nd_grad(c->e, IN(FL_IN_pool3d_grad_X), NULL, IN(FL_IN_pool3d_grad_Out_GRAD), POOL(c), dx);
}
FL_ADAPTER(pool3d_grad, prep_pool3d, run_pool3d_grad);

#define POOL_WITH_INDEX(name, nsp)                                                                             \
    static FlStatus prep_##name(ExecOp *op, FlErr *e) { return fl_exec_prep_pool_nd(op, e, nsp); }            \
    static FlStatus run_##name(OpCall *c) {                                                                     \
        return fl_kernel_pool_nd(c->e, IN(FL_IN_##name##_X), POOL(c), OUT(FL_OUT_##name##_Out),                \
                                 OUT(FL_OUT_##name##_Mask));                                                    \
    }                                                                                                           \
    FL_ADAPTER(name, prep_##name, run_##name);                                                                  \
    /* X Mask Out@GRAD -> X@GRAD? */                                                                            \
    static FlStatus run_##name##_grad(OpCall *c) {                                                              \
        FlTensor *dx = OUT(FL_OUT_##name##_grad_X_GRAD);                                                        \
        if (!dx) return FL_OK;                                                                                  \
        return fl_kernel_pool_nd_grad(c->e, IN(FL_IN_##name##_grad_X), IN(FL_IN_##name##_grad_Mask),           \
                                      IN(FL_IN_##name##_grad_Out_GRAD), POOL(c), dx);                          \
    }                                                                                                           \
    FL_ADAPTER(name##_grad, prep_##name, run_##name##_grad)
POOL_WITH_INDEX(max_pool2d_with_index, 2);
POOL_WITH_INDEX(max_pool3d_with_index, 3);
