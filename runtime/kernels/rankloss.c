/* rankloss.c: the pairwise ranking losses rank_loss, margin_rank_loss and bpr_loss and their
 * gradients (kernels_rankloss.h). */
#include "runtime/kernels/kernels_rankloss.h"

#include <math.h>

#include "runtime/kernels/kernels_impl.h"

/* log(1 + exp(v)) without overflow */
static double softplus(double v) { return fmax(v, 0) + log1p(exp(-fabs(v))); }
static double sigmoid(double v) { return v >= 0 ? 1 / (1 + exp(-v)) : exp(v) / (1 + exp(v)); }

static void put(FlTensor *t, int64_t i, double v) {
    if (t->dtype == FL_DT_FLOAT32) ((float *)fl_tensor_data(t))[i] = (float)v;
    else ((double *)fl_tensor_data(t))[i] = v;
}

/* a float [N, 1] (a score per row) */
static FlStatus check_col(FlErr *e, const char *op, const char *slot, const FlTensor *t) {
    if (kneed_float(e, op, slot, t)) return FL_ERROR;
    if (t->ndim != 2 || t->ne[1] != 1)
        return fl_err(e, "%s: %s %s must be [N, 1] (a score per row)", op, slot, fl_tensor_shape(t).s);
    return FL_OK;
}

/* three [N, 1] floats of one shape and dtype */
static FlStatus check_three(FlErr *e, const char *op, const char *an, const FlTensor *a, const char *bn,
                            const FlTensor *b, const char *cn, const FlTensor *c) {
    if (check_col(e, op, an, a) || check_col(e, op, bn, b) || check_col(e, op, cn, c) || ksame(e, op, an, a, bn, b) ||
        ksame(e, op, an, a, cn, c))
        return FL_ERROR;
    return FL_OK;
}

/* two results shaped like `like` (a loss and its mask, or the two sides' gradients) */
static FlStatus alloc_two(FlErr *e, const char *op, FlTensor *a, FlTensor *b, const FlTensor *like) {
    if (kalloc_like(e, op, a, like)) return FL_ERROR;
    if (kalloc_like(e, op, b, like)) {
        fl_tensor_fini(a);
        return FL_ERROR;
    }
    return FL_OK;
}

/* ---- rank_loss ---- */

FlStatus fl_kernel_rank_loss(FlErr *e, const FlTensor *label, const FlTensor *left, const FlTensor *right,
                             FlTensor *out) {
    const char *op = "rank_loss";
    if (kwant(e, op, "Out", out) || check_three(e, op, "Left", left, "Right", right, "Label", label)) return FL_ERROR;
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &o, left)) return FL_ERROR;
    for (int64_t i = 0, n = left->ne[0]; i < n; i++) {
        double d = fl_tensor_get(left, i) - fl_tensor_get(right, i);
        put(&o, i, softplus(d) - fl_tensor_get(label, i) * d);
    }
    kout(out, &o);
    return FL_OK;
}

FlStatus fl_kernel_rank_loss_grad(FlErr *e, const FlTensor *label, const FlTensor *left, const FlTensor *right,
                                  const FlTensor *dout, FlTensor *dleft, FlTensor *dright) {
    const char *op = "rank_loss_grad";
    if (!dleft && !dright) return FL_OK;
    if (check_three(e, op, "Left", left, "Right", right, "Label", label) || ksame(e, op, "Left", left, "Out@GRAD", dout))
        return FL_ERROR;
    FlTensor gl = FL_TENSOR_INIT, gr = FL_TENSOR_INIT;
    if (alloc_two(e, op, &gl, &gr, left)) return FL_ERROR;
    for (int64_t i = 0, n = left->ne[0]; i < n; i++) {
        double d = fl_tensor_get(left, i) - fl_tensor_get(right, i);
        double g = fl_tensor_get(dout, i) * (sigmoid(d) - fl_tensor_get(label, i));
        put(&gl, i, g);
        put(&gr, i, -g);
    }
    kout(dleft, &gl);
    kout(dright, &gr);
    return FL_OK;
}

/* ---- margin_rank_loss ---- */

FlStatus fl_kernel_margin_rank_loss(FlErr *e, const FlTensor *label, const FlTensor *x1, const FlTensor *x2,
                                    double margin, FlTensor *out, FlTensor *activated) {
    const char *op = "margin_rank_loss";
    if (kwant(e, op, "Out", out) || check_three(e, op, "X1", x1, "X2", x2, "Label", label)) return FL_ERROR;
    FlTensor o = FL_TENSOR_INIT, a = FL_TENSOR_INIT;
    if (alloc_two(e, op, &o, &a, x1)) return FL_ERROR;
    for (int64_t i = 0, n = x1->ne[0]; i < n; i++) {
        double v = -fl_tensor_get(label, i) * (fl_tensor_get(x1, i) - fl_tensor_get(x2, i)) + margin;
        put(&o, i, v > 0 ? v : 0);
        put(&a, i, v > 0 ? 1 : 0);
    }
    kout(out, &o);
    kout(activated, &a);
    return FL_OK;
}

FlStatus fl_kernel_margin_rank_loss_grad(FlErr *e, const FlTensor *label, const FlTensor *activated,
                                         const FlTensor *dout, FlTensor *dx1, FlTensor *dx2) {
    const char *op = "margin_rank_loss_grad";
    if (!dx1 && !dx2) return FL_OK;
    if (check_three(e, op, "Activated", activated, "Label", label, "Out@GRAD", dout)) return FL_ERROR;
    FlTensor g1 = FL_TENSOR_INIT, g2 = FL_TENSOR_INIT;
    if (alloc_two(e, op, &g1, &g2, activated)) return FL_ERROR;
    for (int64_t i = 0, n = activated->ne[0]; i < n; i++) {
        double g = -fl_tensor_get(dout, i) * fl_tensor_get(activated, i) * fl_tensor_get(label, i);
        put(&g1, i, g);
        put(&g2, i, -g);
    }
    kout(dx1, &g1);
    kout(dx2, &g2);
    return FL_OK;
}

/* ---- bpr_loss ---- */

static FlStatus bpr_check(FlErr *e, const char *op, const FlTensor *x, const FlTensor *label) {
    if (kneed_float(e, op, "X", x) || khas(e, op, "Label", label)) return FL_ERROR;
    if (x->ndim != 2 || x->ne[1] < 2)
        return fl_err(e, "%s: X %s must be [N, C] with C >= 2 (the positive class and at least one other)", op,
                      fl_tensor_shape(x).s);
    if (!kis_int(label->dtype) || fl_tensor_numel(label) != x->ne[0])
        return fl_err(e, "%s: Label %s (%s) must hold an int class per row of X %s", op, fl_tensor_shape(label).s,
                      fl_dtype_name(label->dtype), fl_tensor_shape(x).s);
    for (int64_t i = 0, C = x->ne[1]; i < x->ne[0]; i++) {
        int64_t l = fl_tensor_get_int(label, i);
        if (l < 0 || l >= C)
            return fl_err(e, "%s: Label row %lld is %lld, outside the %lld classes [0, %lld) of X %s", op,
                          (long long)i, (long long)l, (long long)C, (long long)C, fl_tensor_shape(x).s);
    }
    return FL_OK;
}

FlStatus fl_kernel_bpr_loss(FlErr *e, const FlTensor *x, const FlTensor *label, FlTensor *y) {
    const char *op = "bpr_loss";
    if (kwant(e, op, "Y", y) || bpr_check(e, op, x, label)) return FL_ERROR;
    int64_t N = x->ne[0], C = x->ne[1];
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc(e, op, &o, x->dtype, 2, (int64_t[]){N, 1})) return FL_ERROR;
    for (int64_t i = 0; i < N; i++) {
        int64_t l = fl_tensor_get_int(label, i);
        double pos = fl_tensor_get(x, i * C + l), s = 0;
        for (int64_t j = 0; j < C; j++)
            if (j != l) s += softplus(fl_tensor_get(x, i * C + j) - pos);
        put(&o, i, s / (double)(C - 1));
    }
    kout(y, &o);
    return FL_OK;
}

FlStatus fl_kernel_bpr_loss_grad(FlErr *e, const FlTensor *x, const FlTensor *label, const FlTensor *dy,
                                 FlTensor *dx) {
    const char *op = "bpr_loss_grad";
    if (!dx) return FL_OK;
    if (bpr_check(e, op, x, label) || ksame_dtype(e, op, "X", x, "Y@GRAD", dy)) return FL_ERROR;
    int64_t N = x->ne[0], C = x->ne[1];
    if (fl_tensor_numel(dy) != N)
        return fl_err(e, "%s: Y@GRAD %s must hold one value per row of X %s", op, fl_tensor_shape(dy).s,
                      fl_tensor_shape(x).s);
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &o, x)) return FL_ERROR;
    for (int64_t i = 0; i < N; i++) {
        int64_t l = fl_tensor_get_int(label, i);
        double pos = fl_tensor_get(x, i * C + l), k = fl_tensor_get(dy, i) / (double)(C - 1), gpos = 0;
        for (int64_t j = 0; j < C; j++) {
            if (j == l) continue;
            double g = k * sigmoid(fl_tensor_get(x, i * C + j) - pos); /* d softplus(x_j - pos) / d x_j */
            put(&o, i * C + j, g);
            gpos -= g;
        }
        put(&o, i * C + l, gpos);
    }
    kout(dx, &o);
    return FL_OK;
}
