/* vocab.c: the losses over large vocabularies: the hierarchical sigmoid, noise-contrastive
 * estimation and sampled softmax's sample_logits, with their gradients (kernels_vocab.h). */
#include "runtime/kernels/kernels_vocab.h"

#include <math.h>
#include <stdlib.h>

#include "runtime/kernels/kernels_impl.h"
#include "runtime/rng.h"

static void put(FlTensor *t, int64_t i, double v) {
    if (t->dtype == FL_DT_FLOAT32) ((float *)fl_tensor_data(t))[i] = (float)v;
    else ((double *)fl_tensor_data(t))[i] = v;
}

/* Writes the gradients gathered in doubles into dX (like x), dW (like w) and dBias ([rows of w,
 * 1]), each when asked for; dw_rows (when not NULL, instead of dW) gets W's gradient as a
 * SelectedRows of the rows marked in `touched`, ascending. */
static FlStatus give_grads(FlErr *e, const char *op, const FlTensor *x, const FlTensor *w, const double *gx,
                           const double *gw, const double *gb, const bool *touched, FlTensor *dx, FlTensor *dw,
                           FlSelectedRows *dw_rows, FlTensor *dbias) {
    int64_t R = w->ne[0], D = w->ne[1], kept = 0;
    for (int64_t r = 0; dw_rows && r < R; r++) kept += touched[r];
    FlTensor a = FL_TENSOR_INIT, b = FL_TENSOR_INIT, c = FL_TENSOR_INIT;
    FlSelectedRows sr;
    fl_rows_init(&sr);
    if ((dx && kalloc_like(e, op, &a, x)) || (dw && !dw_rows && kalloc_like(e, op, &b, w)) ||
        (dbias && kalloc(e, op, &c, w->dtype, 2, (int64_t[]){R, 1})) ||
        (dw_rows && (kalloc(e, op, &sr.rows, FL_DT_INT64, 1, &kept) ||
                     kalloc(e, op, &sr.value, w->dtype, 2, (int64_t[]){kept, D})))) {
        fl_tensor_fini(&a);
        fl_tensor_fini(&b);
        fl_tensor_fini(&c);
        fl_rows_fini(&sr);
        return FL_ERROR;
    }
    if (dx) {
        for (int64_t i = 0; i < fl_tensor_numel(x); i++) put(&a, i, gx[i]);
        kout(dx, &a);
    }
    if (dw_rows) {
        int64_t *rows = fl_tensor_data(&sr.rows), k = 0;
        for (int64_t r = 0; r < R; r++) {
            if (!touched[r]) continue;
            rows[k] = r;
            for (int64_t d = 0; d < D; d++) put(&sr.value, k * D + d, gw[r * D + d]);
            k++;
        }
        sr.height = R;
        fl_rows_fini(dw_rows);
        *dw_rows = sr;
    } else if (dw) {
        for (int64_t i = 0; i < fl_tensor_numel(w); i++) put(&b, i, gw[i]);
        kout(dw, &b);
    }
    if (dbias) {
        for (int64_t i = 0; i < R; i++) put(&c, i, gb[i]);
        kout(dbias, &c);
    }
    return FL_OK;
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
    kout(pre_out, &p);
    return FL_OK;
}

FlStatus fl_kernel_hsigmoid_grad(FlErr *e, const FlTensor *x, const FlTensor *w, const FlTensor *label,
                                 const FlTensor *bias, const FlHsigmoidTree *tree, const FlTensor *pre_out,
                                 const FlTensor *dout, FlTensor *dx, FlTensor *dw, FlSelectedRows *dw_rows,
                                 FlTensor *dbias) {
    const char *op = "hierarchical_sigmoid_grad";
    if (!dx && !dw && !dw_rows && !dbias) return FL_OK;
    if (check(e, op, x, w, label, bias, tree) || kneed_float(e, op, "PreOut", pre_out) ||
        kneed_float(e, op, "Out@GRAD", dout))
        return FL_ERROR;
    int64_t N = x->ne[0], D = x->ne[1], R = w->ne[0], L = tree_length(tree);
    if (pre_out->ndim != 2 || pre_out->ne[0] != N || pre_out->ne[1] != L || fl_tensor_numel(dout) != N)
        return fl_err(e, "%s: PreOut %s and Out@GRAD %s must be [%lld, %lld] and [%lld, 1]", op,
                      fl_tensor_shape(pre_out).s, fl_tensor_shape(dout).s, (long long)N, (long long)L, (long long)N);
    double *gx = fl_xcalloc((size_t)(N * D) + 1, sizeof(double)), *gw = fl_xcalloc((size_t)(R * D) + 1, sizeof(double));
    double *gb = fl_xcalloc((size_t)R + 1, sizeof(double));
    bool *touched = fl_xcalloc((size_t)R + 1, sizeof(bool));
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
            touched[node[j]] = true;
            for (int64_t d = 0; d < D; d++) {
                gx[i * D + d] += g * fl_tensor_get(w, node[j] * D + d);
                gw[node[j] * D + d] += g * fl_tensor_get(x, i * D + d);
            }
        }
    }
    st = st == FL_OK ? give_grads(e, op, x, w, gx, gw, gb, touched, dx, dw, dw_rows, dbias) : st;
    free(gx);
    free(gw);
    free(gb);
    free(touched);
    free(node);
    free(bit);
    return st;
}

/* ---- nce ---- */

/* The sampler's probability of class c. */
static double nce_prob(const FlNceAttrs *a, int64_t c) {
    switch (a->sampler) {
    case 0: return 1.0 / (double)a->num_total;
    case 1: return log((double)(c + 2) / (double)(c + 1)) / log((double)a->num_total + 1);
    default: return a->dist[c];
    }
}

/* A class drawn from the sampler (cum: the custom distribution's running sums). */
static int64_t nce_draw(const FlNceAttrs *a, const double *cum, FlRng *rng) {
    double u = fl_rng_uniform(rng);
    int64_t c;
    switch (a->sampler) {
    case 0: c = (int64_t)(u * (double)a->num_total); break;
    case 1: c = (int64_t)exp(u * log((double)a->num_total + 1)) - 1; break;
    default: {
        int64_t lo = 0, hi = a->num_total - 1;
        double t = u * cum[a->num_total - 1];
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (cum[mid] > t) hi = mid;
            else lo = mid + 1;
        }
        c = lo;
    }
    }
    return c < 0 ? 0 : c >= a->num_total ? a->num_total - 1 : c;
}

static FlStatus nce_check(FlErr *e, const char *op, const FlTensor *x, const FlTensor *label, const FlTensor *w,
                          const FlTensor *bias, const FlTensor *sw, const FlNceAttrs *a) {
    if (kneed_float(e, op, "Input", x) || kneed_float(e, op, "Weight", w) || ksame_dtype(e, op, "Input", x, "Weight", w) ||
        khas(e, op, "Label", label))
        return FL_ERROR;
    if (x->ndim != 2 || w->ndim != 2 || w->ne[0] != a->num_total || w->ne[1] != x->ne[1])
        return fl_err(e, "%s: Input %s and Weight %s must be [N, D] and [%lld, D]", op, fl_tensor_shape(x).s,
                      fl_tensor_shape(w).s, (long long)a->num_total);
    if (label->ndim != 2 || label->ne[0] != x->ne[0])
        return fl_err(e, "%s: Label %s must be [N, T] for Input %s", op, fl_tensor_shape(label).s, fl_tensor_shape(x).s);
    if (bias && (ksame_dtype(e, op, "Input", x, "Bias", bias) || fl_tensor_numel(bias) != a->num_total))
        return fl_err(e, "%s: Bias %s must hold %lld values", op, fl_tensor_shape(bias).s, (long long)a->num_total);
    if (sw && (ksame_dtype(e, op, "Input", x, "SampleWeight", sw) || fl_tensor_numel(sw) != x->ne[0]))
        return fl_err(e, "%s: SampleWeight %s must hold a weight per row of Input %s", op, fl_tensor_shape(sw).s,
                      fl_tensor_shape(x).s);
    for (int64_t k = 0; a->neg && k < a->num_neg; k++)
        if (a->neg[k] < 0 || a->neg[k] >= a->num_total)
            return fl_err(e, "%s: custom_neg_classes holds %lld, outside the %lld classes", op, (long long)a->neg[k],
                          (long long)a->num_total);
    if (a->sampler == 2 && a->ndist != (size_t)a->num_total)
        return fl_err(e, "%s: custom_dist holds %zu probabilities for %lld classes", op, a->ndist,
                      (long long)a->num_total);
    int64_t n = fl_tensor_numel(label);
    for (int64_t i = 0; i < n; i++) {
        int64_t c = fl_tensor_get_int(label, i);
        if (c < 0 || c >= a->num_total)
            return fl_err(e, "%s: Label row %lld holds %lld, outside the %lld classes [0, %lld)", op,
                          (long long)(i / label->ne[1]), (long long)c, (long long)a->num_total, (long long)a->num_total);
    }
    return FL_OK;
}

FlStatus fl_kernel_nce(FlErr *e, const FlTensor *x, const FlTensor *label, const FlTensor *w, const FlTensor *bias,
                       const FlTensor *sample_weight, const FlNceAttrs *a, FlTensor *cost, FlTensor *sample_logits,
                       FlTensor *sample_labels) {
    const char *op = "nce";
    if (kwant(e, op, "Cost", cost) || nce_check(e, op, x, label, w, bias, sample_weight, a)) return FL_ERROR;
    int64_t N = x->ne[0], D = x->ne[1], T = label->ne[1], K = T + a->num_neg;
    FlTensor c = FL_TENSOR_INIT, o = FL_TENSOR_INIT, l = FL_TENSOR_INIT;
    if (kalloc(e, op, &c, x->dtype, 2, (int64_t[]){N, 1}) || kalloc(e, op, &o, x->dtype, 2, (int64_t[]){N, K}) ||
        kalloc(e, op, &l, FL_DT_INT64, 2, (int64_t[]){N, K})) {
        fl_tensor_fini(&c);
        fl_tensor_fini(&o);
        return FL_ERROR;
    }
    double *cum = NULL;
    if (a->sampler == 2) {
        cum = fl_xcalloc((size_t)a->num_total, sizeof(double));
        for (int64_t t = 0; t < a->num_total; t++) cum[t] = (t ? cum[t - 1] : 0) + a->dist[t];
    }
    FlRng rng;
    fl_rng_init2(&rng, a->seed, a->step);
    int64_t *labels = fl_tensor_data(&l);
    for (int64_t i = 0; i < N; i++) {
        double loss = 0, sw = sample_weight ? fl_tensor_get(sample_weight, i) : 1;
        for (int64_t k = 0; k < K; k++) {
            int64_t t = k < T ? fl_tensor_get_int(label, i * T + k) : a->neg ? a->neg[k - T] : nce_draw(a, cum, &rng);
            double z = bias ? fl_tensor_get(bias, t) : 0;
            for (int64_t d = 0; d < D; d++) z += fl_tensor_get(x, i * D + d) * fl_tensor_get(w, t * D + d);
            double p = 1 / (1 + exp(-z)), b = nce_prob(a, t) * (double)a->num_neg;
            loss += sw * (k < T ? -log(p / (p + b)) : -log(b / (p + b)));
            labels[i * K + k] = t;
            put(&o, i * K + k, p);
        }
        put(&c, i, loss);
    }
    free(cum);
    kout(cost, &c);
    kout(sample_logits, &o);
    kout(sample_labels, &l);
    return FL_OK;
}

FlStatus fl_kernel_nce_grad(FlErr *e, const FlTensor *x, const FlTensor *label, const FlTensor *w,
                            const FlTensor *bias, const FlTensor *sample_weight, const FlNceAttrs *a,
                            const FlTensor *sample_logits, const FlTensor *sample_labels, const FlTensor *dcost,
                            FlTensor *dx, FlTensor *dw, FlSelectedRows *dw_rows, FlTensor *dbias) {
    const char *op = "nce_grad";
    if (!dx && !dw && !dw_rows && !dbias) return FL_OK;
    if (nce_check(e, op, x, label, w, bias, sample_weight, a) || kneed_float(e, op, "SampleLogits", sample_logits) ||
        khas(e, op, "SampleLabels", sample_labels) || kneed_float(e, op, "Cost@GRAD", dcost))
        return FL_ERROR;
    int64_t N = x->ne[0], D = x->ne[1], T = label->ne[1], K = T + a->num_neg;
    if (!fl_tensor_same_shape(sample_logits, sample_labels) || sample_logits->ndim != 2 ||
        sample_logits->ne[0] != N || sample_logits->ne[1] != K || fl_tensor_numel(dcost) != N)
        return fl_err(e, "%s: SampleLogits %s, SampleLabels %s and Cost@GRAD %s must be [%lld, %lld] and [%lld, 1]",
                      op, fl_tensor_shape(sample_logits).s, fl_tensor_shape(sample_labels).s,
                      fl_tensor_shape(dcost).s, (long long)N, (long long)K, (long long)N);
    int64_t R = a->num_total;
    double *gx = fl_xcalloc((size_t)(N * D) + 1, sizeof(double)), *gw = fl_xcalloc((size_t)(R * D) + 1, sizeof(double));
    double *gb = fl_xcalloc((size_t)R + 1, sizeof(double));
    bool *touched = fl_xcalloc((size_t)R + 1, sizeof(bool));
    FlStatus st = FL_OK;
    for (int64_t i = 0; i < N && st == FL_OK; i++) {
        double sw = sample_weight ? fl_tensor_get(sample_weight, i) : 1, dc = fl_tensor_get(dcost, i);
        for (int64_t k = 0; k < K; k++) {
            int64_t t = fl_tensor_get_int(sample_labels, i * K + k);
            if (t < 0 || t >= R) {
                st = fl_err(e, "%s: SampleLabels row %lld holds %lld, outside the %lld classes", op, (long long)i,
                            (long long)t, (long long)R);
                break;
            }
            double o = fl_tensor_get(sample_logits, i * K + k), b = nce_prob(a, t) * (double)a->num_neg;
            double g = dc * sw * (k < T ? b * (o - 1) / (o + b) : o * (1 - o) / (o + b));
            gb[t] += g;
            touched[t] = true;
            for (int64_t d = 0; d < D; d++) {
                gx[i * D + d] += g * fl_tensor_get(w, t * D + d);
                gw[t * D + d] += g * fl_tensor_get(x, i * D + d);
            }
        }
    }
    st = st == FL_OK ? give_grads(e, op, x, w, gx, gw, gb, touched, dx, dw, dw_rows, dbias) : st;
    free(gx);
    free(gw);
    free(gb);
    free(touched);
    return st;
}

/* ---- sample_logits ---- */

/* The log-uniform probability of class c among K. */
static double loguniform_prob(int64_t c, int64_t K) { return log((double)(c + 2) / (double)(c + 1)) / log((double)K + 1); }

FlStatus fl_kernel_sample_logits(FlErr *e, const FlTensor *logits, const FlTensor *labels,
                                 const FlTensor *custom_samples, const FlTensor *custom_probs, int64_t num_samples,
                                 bool remove_accidental_hits, uint64_t seed, uint64_t step, FlTensor *samples,
                                 FlTensor *probabilities, FlTensor *sampled_logits, FlTensor *sampled_labels) {
    const char *op = "sample_logits";
    if (kwant(e, op, "SampledLogits", sampled_logits) || kneed_float(e, op, "Logits", logits) ||
        khas(e, op, "Labels", labels))
        return FL_ERROR;
    if (logits->ndim != 2 || labels->ndim != 2 || labels->ne[0] != logits->ne[0])
        return fl_err(e, "%s: Logits %s and Labels %s must be [N, K] and [N, T]", op, fl_tensor_shape(logits).s,
                      fl_tensor_shape(labels).s);
    int64_t N = logits->ne[0], K = logits->ne[1], T = labels->ne[1], S = num_samples, C = T + S;
    if (S < 1 || S > K) return fl_err(e, "%s: num_samples %lld is not in [1, %lld]", op, (long long)S, (long long)K);
    for (int64_t i = 0; i < N * T; i++) {
        int64_t v = fl_tensor_get_int(labels, i);
        if (v < 0 || v >= K)
            return fl_err(e, "%s: Labels row %lld holds %lld, outside the %lld classes", op, (long long)(i / T),
                          (long long)v, (long long)K);
    }
    if (custom_samples) {
        if (kneed_float(e, op, "CustomizedProbabilities", custom_probs)) return FL_ERROR;
        if (custom_samples->ndim != 2 || custom_samples->ne[0] != N || custom_samples->ne[1] != C ||
            !fl_tensor_same_shape(custom_samples, custom_probs))
            return fl_err(e, "%s: CustomizedSamples %s and CustomizedProbabilities %s must be [%lld, %lld]", op,
                          fl_tensor_shape(custom_samples).s, fl_tensor_shape(custom_probs).s, (long long)N,
                          (long long)C);
    }
    FlTensor ts = FL_TENSOR_INIT, tp = FL_TENSOR_INIT, tl = FL_TENSOR_INIT, tb = FL_TENSOR_INIT;
    if (kalloc(e, op, &ts, FL_DT_INT64, 2, (int64_t[]){N, C}) || kalloc(e, op, &tp, logits->dtype, 2, (int64_t[]){N, C}) ||
        kalloc(e, op, &tl, logits->dtype, 2, (int64_t[]){N, C}) || kalloc(e, op, &tb, FL_DT_INT64, 2, (int64_t[]){N, T})) {
        fl_tensor_fini(&ts);
        fl_tensor_fini(&tp);
        fl_tensor_fini(&tl);
        return FL_ERROR;
    }
    int64_t *sm = fl_tensor_data(&ts), *sl = fl_tensor_data(&tb);
    FlStatus st = FL_OK;
    if (custom_samples) {
        for (int64_t i = 0; i < N * C && st == FL_OK; i++) {
            sm[i] = fl_tensor_get_int(custom_samples, i);
            double p = fl_tensor_get(custom_probs, i);
            if (sm[i] < 0 || sm[i] >= K || !(p > 0 && p <= 1))
                st = fl_err(e, "%s: CustomizedSamples row %lld holds class %lld with probability %g: classes are in "
                               "[0, %lld) and probabilities in (0, 1]", op, (long long)(i / C), (long long)sm[i], p,
                            (long long)K);
            put(&tp, i, p);
        }
    } else {
        /* S distinct classes for the whole batch, and the number of draws it took */
        int64_t *drawn = fl_xcalloc((size_t)S, sizeof(int64_t)), n = 0, tries = 0;
        unsigned char *seen = fl_xcalloc((size_t)K, 1);
        FlRng rng;
        fl_rng_init2(&rng, seed, step);
        while (n < S) {
            int64_t v = ((int64_t)exp(fl_rng_uniform(&rng) * log((double)K + 1)) - 1) % K;
            tries++;
            if (v < 0 || seen[v]) continue;
            seen[v] = 1;
            drawn[n++] = v;
        }
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < C; j++) {
                int64_t v = j < T ? fl_tensor_get_int(labels, i * T + j) : drawn[j - T];
                double p = loguniform_prob(v, K);
                sm[i * C + j] = v;
                put(&tp, i * C + j, tries == S ? p * (double)S : -expm1((double)tries * log1p(-p)));
            }
        free(drawn);
        free(seen);
    }
    for (int64_t i = 0; i < N && st == FL_OK; i++) {
        for (int64_t t = 0; t < T; t++) sl[i * T + t] = t;
        for (int64_t j = 0; j < C; j++) {
            int64_t v = sm[i * C + j];
            double z = fl_tensor_get(logits, i * K + v) - log(fl_tensor_get(&tp, i * C + j));
            for (int64_t t = 0; remove_accidental_hits && j >= T && t < T; t++)
                if (fl_tensor_get_int(labels, i * T + t) == v) {
                    z -= 1e20;
                    break;
                }
            put(&tl, i * C + j, z);
        }
    }
    if (st != FL_OK) {
        fl_tensor_fini(&ts);
        fl_tensor_fini(&tp);
        fl_tensor_fini(&tl);
        fl_tensor_fini(&tb);
        return FL_ERROR;
    }
    kout(sampled_logits, &tl);
    kout(samples, &ts);
    kout(probabilities, &tp);
    kout(sampled_labels, &tb);
    return FL_OK;
}

FlStatus fl_kernel_sample_logits_grad(FlErr *e, const FlTensor *logits, const FlTensor *samples,
                                      const FlTensor *dsampled, FlTensor *dlogits) {
    const char *op = "sample_logits_grad";
    if (!dlogits) return FL_OK;
    if (kneed_float(e, op, "Logits", logits) || khas(e, op, "Samples", samples) ||
        kneed_float(e, op, "SampledLogits@GRAD", dsampled))
        return FL_ERROR;
    if (logits->ndim != 2 || samples->ndim != 2 || samples->ne[0] != logits->ne[0] ||
        !fl_tensor_same_shape(samples, dsampled))
        return fl_err(e, "%s: Logits %s, Samples %s and SampledLogits@GRAD %s do not agree", op,
                      fl_tensor_shape(logits).s, fl_tensor_shape(samples).s, fl_tensor_shape(dsampled).s);
    int64_t N = logits->ne[0], K = logits->ne[1], C = samples->ne[1];
    double *g = fl_xcalloc((size_t)(N * K) + 1, sizeof(double));
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < C; j++) {
            int64_t v = fl_tensor_get_int(samples, i * C + j);
            if (v < 0 || v >= K) {
                free(g);
                return fl_err(e, "%s: Samples row %lld holds %lld, outside the %lld classes", op, (long long)i,
                              (long long)v, (long long)K);
            }
            g[i * K + v] += fl_tensor_get(dsampled, i * C + j);
        }
    FlTensor d = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &d, logits)) {
        free(g);
        return FL_ERROR;
    }
    for (int64_t i = 0; i < N * K; i++) put(&d, i, g[i]);
    free(g);
    kout(dlogits, &d);
    return FL_OK;
}
