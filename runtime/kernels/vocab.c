/* vocab.c: the losses over large vocabularies: the hierarchical sigmoid and its gradient
 * (kernels_vocab.h). */
#include "runtime/kernels/kernels_vocab.h"

#include <math.h>
#include <stdlib.h>

#include "runtime/kernels/kernels_impl.h"

static void put(FlTensor *t, int64_t i, double v) {
    if (t->dtype == FL_DT_FLOAT32) ((float *)fl_tensor_data(t))[i] = (float)v;
    else ((double *)fl_tensor_data(t))[i] = v;
}

static double softplus(double v) { return fmax(v, 0) + log1p(exp(-fabs(v))); }

/* The longest path of the tree: the custom table's width, else the position of the highest bit of
 * num_classes - 1. */
static int64_t tree_length(const FlHsigmoidTree *t) {
    if (t->path_table) return t->path_table->ne[1];
    int64_t n = 0;
    for (uint64_t v = (uint64_t)(t->num_classes - 1); v; v >>= 1) n++;
    return n;
}

/* Row i's path into node[] and bit[] (room for tree_length entries): its length, or -1 after an
 * error naming the row. */
static int64_t path_of(FlErr *e, const char *op, const FlHsigmoidTree *t, const FlTensor *label, int64_t nodes,
                       int64_t i, int64_t *node, int64_t *bit) {
    if (t->path_table) {
        int64_t L = t->path_table->ne[1], n = 0;
        for (; n < L; n++) {
            int64_t v = fl_tensor_get_int(t->path_table, i * L + n);
            if (v < 0) break;
            if (v >= nodes) {
                fl_err(e, "%s: PathTable row %lld names node %lld, outside W's %lld rows", op, (long long)i,
                       (long long)v, (long long)nodes);
                return -1;
            }
            node[n] = v;
            bit[n] = fl_tensor_get_int(t->path_code, i * L + n) != 0;
        }
        return n;
    }
    int64_t c = fl_tensor_get_int(label, i);
    if (c < 0 || c >= t->num_classes) {
        fl_err(e, "%s: Label row %lld is %lld, outside the %lld classes [0, %lld)", op, (long long)i, (long long)c,
               (long long)t->num_classes, (long long)t->num_classes);
        return -1;
    }
    uint64_t code = (uint64_t)(c + t->num_classes);
    int64_t n = 0;
    while ((code >> (n + 1)) != 0) n++;
    for (int64_t j = 0; j < n; j++) {
        node[j] = (int64_t)(code >> (j + 1)) - 1;
        bit[j] = (int64_t)((code >> j) & 1);
    }
    return n;
}

static FlStatus check(FlErr *e, const char *op, const FlTensor *x, const FlTensor *w, const FlTensor *label,
                      const FlTensor *bias, const FlHsigmoidTree *t) {
    if (kneed_float(e, op, "X", x) || kneed_float(e, op, "W", w) || ksame_dtype(e, op, "X", x, "W", w) ||
        khas(e, op, "Label", label))
        return FL_ERROR;
    if (x->ndim != 2 || w->ndim != 2 || w->ne[1] != x->ne[1])
        return fl_err(e, "%s: X %s and W %s must be [N, D] and [nodes, D]", op, fl_tensor_shape(x).s,
                      fl_tensor_shape(w).s);
    if (fl_tensor_numel(label) != x->ne[0])
        return fl_err(e, "%s: Label %s must hold a class per row of X %s", op, fl_tensor_shape(label).s,
                      fl_tensor_shape(x).s);
    if (bias && (ksame_dtype(e, op, "X", x, "Bias", bias) || fl_tensor_numel(bias) != w->ne[0]))
        return fl_err(e, "%s: Bias %s must hold a value per row of W %s", op, fl_tensor_shape(bias).s,
                      fl_tensor_shape(w).s);
    if (t->path_table) {
        if (khas(e, op, "PathTable", t->path_table) || khas(e, op, "PathCode", t->path_code)) return FL_ERROR;
        if (t->path_table->ndim != 2 || t->path_table->ne[0] != x->ne[0] ||
            !fl_tensor_same_shape(t->path_table, t->path_code))
            return fl_err(e, "%s: PathTable %s and PathCode %s must be [N, L] for X %s", op,
                          fl_tensor_shape(t->path_table).s, fl_tensor_shape(t->path_code).s, fl_tensor_shape(x).s);
    } else if (w->ne[0] != t->num_classes - 1) {
        return fl_err(e, "%s: W %s must have num_classes - 1 = %lld rows (the default tree's inner nodes)", op,
                      fl_tensor_shape(w).s, (long long)(t->num_classes - 1));
    }
    return FL_OK;
}

/* z of row i at node n: x[i] . w[n] + bias[n], clipped to [-40, 40] */
static double logit(const FlTensor *x, const FlTensor *w, const FlTensor *bias, int64_t i, int64_t n) {
    int64_t D = x->ne[1];
    double z = bias ? fl_tensor_get(bias, n) : 0;
    for (int64_t d = 0; d < D; d++) z += fl_tensor_get(x, i * D + d) * fl_tensor_get(w, n * D + d);
    return fmin(fmax(z, -40.0), 40.0);
}

FlStatus fl_kernel_hsigmoid(FlErr *e, const FlTensor *x, const FlTensor *w, const FlTensor *label,
                            const FlTensor *bias, const FlHsigmoidTree *tree, FlTensor *out, FlTensor *pre_out) {
    const char *op = "hierarchical_sigmoid";
    if (kwant(e, op, "Out", out) || check(e, op, x, w, label, bias, tree)) return FL_ERROR;
    int64_t N = x->ne[0], L = tree_length(tree);
    FlTensor o = FL_TENSOR_INIT, p = FL_TENSOR_INIT;
    if (kalloc(e, op, &o, x->dtype, 2, (int64_t[]){N, 1}) || kalloc(e, op, &p, x->dtype, 2, (int64_t[]){N, L})) {
        fl_tensor_fini(&o);
        return FL_ERROR;
    }
    int64_t *node = fl_xcalloc((size_t)L + 1, sizeof(int64_t)), *bit = fl_xcalloc((size_t)L + 1, sizeof(int64_t));
    FlStatus st = FL_OK;
    for (int64_t i = 0; i < N && st == FL_OK; i++) {
        int64_t n = path_of(e, op, tree, label, w->ne[0], i, node, bit);
        if (n < 0) {
            st = FL_ERROR;
            break;
        }
        double loss = 0;
        for (int64_t j = 0; j < L; j++) {
            double z = j < n ? logit(x, w, bias, i, node[j]) : 0, sp = softplus(z);
            if (j < n && bit[j]) loss -= z;
            loss += sp;
            put(&p, i * L + j, sp);
        }
        put(&o, i, loss);
    }
    free(node);
    free(bit);
    if (st != FL_OK) {
        fl_tensor_fini(&o);
        fl_tensor_fini(&p);
        return FL_ERROR;
    }
    kout(out, &o);
    if (pre_out) kout(pre_out, &p);
    else fl_tensor_fini(&p);
    return FL_OK;
}

FlStatus fl_kernel_hsigmoid_grad(FlErr *e, const FlTensor *x, const FlTensor *w, const FlTensor *label,
                                 const FlTensor *bias, const FlHsigmoidTree *tree, const FlTensor *pre_out,
                                 const FlTensor *dout, FlTensor *dx, FlTensor *dw, FlTensor *dbias) {
    const char *op = "hierarchical_sigmoid_grad";
    if (!dx && !dw && !dbias) return FL_OK;
    if (check(e, op, x, w, label, bias, tree) || kneed_float(e, op, "PreOut", pre_out) ||
        kneed_float(e, op, "Out@GRAD", dout))
        return FL_ERROR;
    int64_t N = x->ne[0], D = x->ne[1], R = w->ne[0], L = tree_length(tree);
    if (pre_out->ndim != 2 || pre_out->ne[0] != N || pre_out->ne[1] != L || fl_tensor_numel(dout) != N)
        return fl_err(e, "%s: PreOut %s and Out@GRAD %s must be [%lld, %lld] and [%lld, 1]", op,
                      fl_tensor_shape(pre_out).s, fl_tensor_shape(dout).s, (long long)N, (long long)L, (long long)N);
    double *gx = fl_xcalloc((size_t)(N * D) + 1, sizeof(double)), *gw = fl_xcalloc((size_t)(R * D) + 1, sizeof(double));
    double *gb = fl_xcalloc((size_t)R + 1, sizeof(double));
    int64_t *node = fl_xcalloc((size_t)L + 1, sizeof(int64_t)), *bit = fl_xcalloc((size_t)L + 1, sizeof(int64_t));
    FlStatus st = FL_OK;
    for (int64_t i = 0; i < N; i++) {
        int64_t n = path_of(e, op, tree, label, R, i, node, bit);
        if (n < 0) {
            st = FL_ERROR;
            break;
        }
        for (int64_t j = 0; j < n; j++) {
            double g = fl_tensor_get(dout, i) * ((1 - exp(-fl_tensor_get(pre_out, i * L + j))) - (double)bit[j]);
            gb[node[j]] += g;
            for (int64_t d = 0; d < D; d++) {
                gx[i * D + d] += g * fl_tensor_get(w, node[j] * D + d);
                gw[node[j] * D + d] += g * fl_tensor_get(x, i * D + d);
            }
        }
    }
    FlTensor a = FL_TENSOR_INIT, b = FL_TENSOR_INIT, c = FL_TENSOR_INIT;
    if (st == FL_OK && ((dx && kalloc_like(e, op, &a, x)) || (dw && kalloc_like(e, op, &b, w)) ||
                        (dbias && kalloc(e, op, &c, w->dtype, 2, (int64_t[]){R, 1}))))
        st = FL_ERROR;
    if (st == FL_OK) {
        if (dx) {
            for (int64_t i = 0; i < N * D; i++) put(&a, i, gx[i]);
            kout(dx, &a);
        }
        if (dw) {
            for (int64_t i = 0; i < R * D; i++) put(&b, i, gw[i]);
            kout(dw, &b);
        }
        if (dbias) {
            for (int64_t i = 0; i < R; i++) put(&c, i, gb[i]);
            kout(dbias, &c);
        }
    } else {
        fl_tensor_fini(&a);
        fl_tensor_fini(&b);
        fl_tensor_fini(&c);
    }
    free(gx);
    free(gw);
    free(gb);
    free(node);
    free(bit);
    return st;
}
