/* ops_math.c: adapters of the creation, copy, elementwise, comparison, logic, activation and
 * scale ops and their gradients: each binds the op table's slots by their generated names (FL_IN_<op>_<slot>; a default
 * gradient op <op>_grad takes the forward inputs, then the forward outputs, then each output's
 * gradient, and makes each input's gradient) and pre-parsed attributes to one kernel call. */
#include "runtime/core/exec_impl.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

static FlStatus dtype_attr(ExecOp *op, const char *name, FlErr *e) {
    int64_t dt = fl_exec_attr_int(op, name);
    if (dt < 0 || dt >= FL_DT_COUNT) return fl_err(e, "attribute '%s' is not a dtype (%lld)", name, (long long)dt);
    op->a.i[1] = dt;
    return FL_OK;
}

/* ---- creation ---- */

/* a.f[0] value, a.i[1] dtype, a.b[0] and a.i[2]: int_value when it holds the value */
static FlStatus prep_fill_constant(ExecOp *op, FlErr *e) {
    op->a.f[0] = fl_exec_attr_float(op, "value");
    const int64_t *exact = fl_exec_attr_exact(op, "value");
    if (dtype_attr(op, "dtype", e)) return FL_ERROR;
    op->a.b[0] = exact != NULL;
    op->a.i[2] = exact ? *exact : 0;
    return fl_exec_attr_shape(op, "shape", e);
}
static FlStatus run_fill_constant(OpCall *c) {
    const PAttrs *a = &c->op->a;
    return fl_kernel_fill_constant(c->e, a->nshape, a->shape, a->f[0], a->b[0] ? &a->i[2] : NULL, (FlDType)a->i[1],
                                   OUT(FL_OUT_fill_constant_Out));
}
FL_ADAPTER(fill_constant, prep_fill_constant, run_fill_constant);

static FlStatus prep_assign_value(ExecOp *op, FlErr *e) {
    if (dtype_attr(op, "dtype", e)) return FL_ERROR;
    return fl_exec_attr_shape(op, "shape", e);
}
static FlStatus run_assign_value(OpCall *c) {
    const PAttrs *a = &c->op->a;
    size_t n;
    const double *v = fl_exec_attr_floats(c->op, "values", &n);
    return fl_kernel_assign_value(c->e, a->nshape, a->shape, v, fl_exec_attr_exact(c->op, "values"), n,
                                  (FlDType)a->i[1], OUT(FL_OUT_assign_value_Out));
}
FL_ADAPTER(assign_value, prep_assign_value, run_assign_value);

static FlStatus run_fill_zeros_like(OpCall *c) {
    return fl_kernel_fill_zeros_like(c->e, IN(FL_IN_fill_zeros_like_X), OUT(FL_OUT_fill_zeros_like_Out));
}
FL_ADAPTER(fill_zeros_like, NULL, run_fill_zeros_like);

/* The random fills: a->f = {min or mean, max or std}, a->i = {shard_offset, dtype}. */
static FlStatus prep_random(ExecOp *op, const char *p0, const char *p1, FlErr *e) {
    op->a.f[0] = fl_exec_attr_float(op, p0);
    op->a.f[1] = fl_exec_attr_float(op, p1);
    op->a.i[0] = fl_exec_attr_int(op, "shard_offset");
    if (op->a.i[0] < 0)
        return fl_err(e, "attribute 'shard_offset' must be >= 0, found %lld", (long long)op->a.i[0]);
    if (dtype_attr(op, "dtype", e)) return FL_ERROR;
    return fl_exec_attr_shape(op, "shape", e);
}

static FlStatus prep_uniform_random(ExecOp *op, FlErr *e) { return prep_random(op, "min", "max", e); }
static FlStatus run_uniform_random(OpCall *c) {
    const PAttrs *a = &c->op->a;
    return fl_kernel_uniform_random(c->e, a->nshape, a->shape, a->f[0], a->f[1], fl_call_draw_seed(c), a->i[0],
                                    (FlDType)a->i[1], OUT(FL_OUT_uniform_random_Out));
}
FL_ADAPTER(uniform_random, prep_uniform_random, run_uniform_random);

static FlStatus prep_gaussian_random(ExecOp *op, FlErr *e) { return prep_random(op, "mean", "std", e); }
static FlStatus run_gaussian_random(OpCall *c) {
    const PAttrs *a = &c->op->a;
    return fl_kernel_gaussian_random(c->e, a->nshape, a->shape, a->f[0], a->f[1], fl_call_draw_seed(c), a->i[0],
                                     (FlDType)a->i[1], OUT(FL_OUT_gaussian_random_Out));
}
FL_ADAPTER(gaussian_random, prep_gaussian_random, run_gaussian_random);

static FlStatus run_truncated_gaussian_random(OpCall *c) {
    const PAttrs *a = &c->op->a;
    return fl_kernel_truncated_gaussian_random(c->e, a->nshape, a->shape, a->f[0], a->f[1], fl_call_draw_seed(c),
                                               a->i[0], (FlDType)a->i[1],
                                               OUT(FL_OUT_truncated_gaussian_random_Out));
}
FL_ADAPTER(truncated_gaussian_random, prep_gaussian_random, run_truncated_gaussian_random);

/* assign shares the buffer: tensors are immutable once published, so a copy buys nothing. */
static FlStatus run_assign(OpCall *c) {
    if (OUT(FL_OUT_assign_Out)) fl_tensor_ref(OUT(FL_OUT_assign_Out), IN(FL_IN_assign_X));
    return FL_OK;
}
FL_ADAPTER(assign, NULL, run_assign);
/* assign_grad: X, Out, Out@GRAD -> X@GRAD */
static FlStatus run_assign_grad(OpCall *c) {
    if (OUT(FL_OUT_assign_grad_X_GRAD))
        fl_tensor_ref(OUT(FL_OUT_assign_grad_X_GRAD), IN(FL_IN_assign_grad_Out_GRAD));
    return FL_OK;
}
FL_ADAPTER(assign_grad, NULL, run_assign_grad);

static FlStatus prep_cast(ExecOp *op, FlErr *e) { return dtype_attr(op, "out_dtype", e); }
static FlStatus run_cast(OpCall *c) {
    return fl_kernel_cast(c->e, IN(FL_IN_cast_X), (FlDType)c->op->a.i[1], OUT(FL_OUT_cast_Out));
}
FL_ADAPTER(cast, prep_cast, run_cast);
static FlStatus run_cast_grad(OpCall *c) {
    if (!OUT(FL_OUT_cast_grad_X_GRAD)) return FL_OK;
    return fl_kernel_cast_grad(c->e, IN(FL_IN_cast_grad_X), IN(FL_IN_cast_grad_Out_GRAD),
                               OUT(FL_OUT_cast_grad_X_GRAD));
}
FL_ADAPTER(cast_grad, NULL, run_cast_grad);

/* ---- elementwise binary ---- */

#define BINARY(name)                                                                                         \
    static FlStatus run_##name(OpCall *c) {                                                                  \
        return fl_kernel_##name(c->e, IN(FL_IN_##name##_X), IN(FL_IN_##name##_Y), (int)c->op->a.i[0],        \
                                OUT(FL_OUT_##name##_Out));                                                   \
    }                                                                                                        \
    FL_ADAPTER(name, fl_exec_prep_axis, run_##name);
/* <op>_grad: X, Y, Out, Out@GRAD -> X@GRAD, Y@GRAD */
#define BINARY_GRAD(name)                                                                                    \
    static FlStatus run_##name##_grad(OpCall *c) {                                                           \
        if (!OUT(FL_OUT_##name##_grad_X_GRAD) && !OUT(FL_OUT_##name##_grad_Y_GRAD)) return FL_OK;            \
        return fl_kernel_##name##_grad(c->e, IN(FL_IN_##name##_grad_X), IN(FL_IN_##name##_grad_Y),           \
                                       IN(FL_IN_##name##_grad_Out_GRAD), (int)c->op->a.i[0],                 \
                                       OUT(FL_OUT_##name##_grad_X_GRAD), OUT(FL_OUT_##name##_grad_Y_GRAD));  \
    }                                                                                                        \
    FL_ADAPTER(name##_grad, fl_exec_prep_axis, run_##name##_grad);

BINARY(elementwise_add)
BINARY(elementwise_sub)
BINARY(elementwise_mul)
BINARY(elementwise_div)
BINARY(elementwise_max)
BINARY(elementwise_min)
BINARY(elementwise_pow)
BINARY(elementwise_floordiv)
BINARY(elementwise_mod)
BINARY_GRAD(elementwise_add)
BINARY_GRAD(elementwise_sub)
BINARY_GRAD(elementwise_mul)
BINARY_GRAD(elementwise_div)
BINARY_GRAD(elementwise_max)
BINARY_GRAD(elementwise_min)
BINARY_GRAD(elementwise_pow)

BINARY(less_than)
BINARY(less_equal)
BINARY(greater_than)
BINARY(greater_equal)
BINARY(equal)
BINARY(not_equal)

static FlStatus run_logical_and(OpCall *c) {
    return fl_kernel_logical_and(c->e, IN(FL_IN_logical_and_X), IN(FL_IN_logical_and_Y),
                                 OUT(FL_OUT_logical_and_Out));
}
FL_ADAPTER(logical_and, NULL, run_logical_and);
static FlStatus run_logical_or(OpCall *c) {
    return fl_kernel_logical_or(c->e, IN(FL_IN_logical_or_X), IN(FL_IN_logical_or_Y),
                                OUT(FL_OUT_logical_or_Out));
}
FL_ADAPTER(logical_or, NULL, run_logical_or);
static FlStatus run_logical_not(OpCall *c) {
    return fl_kernel_logical_not(c->e, IN(FL_IN_logical_not_X), OUT(FL_OUT_logical_not_Out));
}
FL_ADAPTER(logical_not, NULL, run_logical_not);

/* ---- unary ---- */

#define UNARY(name)                                                                                          \
    static FlStatus run_##name(OpCall *c) {                                                                  \
        return fl_kernel_##name(c->e, IN(FL_IN_##name##_X), OUT(FL_OUT_##name##_Out));                       \
    }                                                                                                        \
    FL_ADAPTER(name, NULL, run_##name);                                                                      \
    /* <op>_grad: X, Out, Out@GRAD -> X@GRAD */                                                              \
    static FlStatus run_##name##_grad(OpCall *c) {                                                           \
        if (!OUT(FL_OUT_##name##_grad_X_GRAD)) return FL_OK;                                                 \
        return fl_kernel_##name##_grad(c->e, IN(FL_IN_##name##_grad_X), IN(FL_IN_##name##_grad_Out),         \
                                       IN(FL_IN_##name##_grad_Out_GRAD), OUT(FL_OUT_##name##_grad_X_GRAD));  \
    }                                                                                                        \
    FL_ADAPTER(name##_grad, NULL, run_##name##_grad);

UNARY(relu)
UNARY(sigmoid)
UNARY(tanh)
UNARY(exp)
UNARY(log)
UNARY(sqrt)
UNARY(square)
UNARY(abs)

static FlStatus prep_scale(ExecOp *op, FlErr *e) {
    op->a.f[0] = fl_exec_attr_float(op, "scale");
    op->a.f[1] = fl_exec_attr_float(op, "bias");
    op->a.b[0] = fl_exec_attr_bool(op, "bias_after_scale");
    return FL_OK;
}
/* A SelectedRows X to a SelectedRows Out: its value scaled (a bias would touch every row, the
 * ones it does not list too, so it must be 0); to a dense Out: X densified, then scaled. */
static FlStatus run_scale(OpCall *c) {
    const PAttrs *a = &c->op->a;
    const FlSelectedRows *xr = fl_call_in_rows(c, FL_IN_scale_X);
    FlSelectedRows *ro = fl_call_out_rows(c, FL_OUT_scale_Out);
    if (ro) {
        if (!xr) return fl_err(c->e, "scale: Out is a SelectedRows but X is dense");
        if (a->f[1] != 0)
            return fl_err(c->e, "scale: a bias (%g) on a SelectedRows would add to the rows it does not hold", a->f[1]);
        return fl_rows_scale(c->e, xr, a->f[0], ro);
    }
    if (!xr) return fl_kernel_scale(c->e, IN(FL_IN_scale_X), a->f[0], a->f[1], a->b[0], OUT(FL_OUT_scale_Out));
    FlTensor d = FL_TENSOR_INIT;
    FlStatus st = fl_rows_to_dense(c->e, xr, &d);
    if (st == FL_OK) st = fl_kernel_scale(c->e, &d, a->f[0], a->f[1], a->b[0], OUT(FL_OUT_scale_Out));
    fl_tensor_fini(&d);
    return st;
}
FL_SPARSE_ADAPTER(scale, prep_scale, run_scale);
static FlStatus run_scale_grad(OpCall *c) {
    if (!OUT(FL_OUT_scale_grad_X_GRAD)) return FL_OK;
    return fl_kernel_scale_grad(c->e, IN(FL_IN_scale_grad_Out_GRAD), c->op->a.f[0],
                                OUT(FL_OUT_scale_grad_X_GRAD));
}
FL_ADAPTER(scale_grad, prep_scale, run_scale_grad);

static FlStatus prep_increment(ExecOp *op, FlErr *e) {
    op->a.f[0] = fl_exec_attr_float(op, "step");
    return FL_OK;
}
static FlStatus run_increment(OpCall *c) {
    return fl_kernel_increment(c->e, IN(FL_IN_increment_X), c->op->a.f[0], OUT(FL_OUT_increment_Out));
}
FL_ADAPTER(increment, prep_increment, run_increment);
