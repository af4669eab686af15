/* reduce.c: softmax, cross_entropy, mean, reduce_sum / reduce_mean, sum.
 * Sums of float data accumulate in double. reduce_* reuse the broadcasting plan of
 * elementwise.c: X against the keep_dim-shaped output, whose reduced dims get stride 0, so every
 * X element meets the output element it reduces into. */
#include "runtime/kernels/kernels_impl.h"

#include "runtime/kernels/par.h"

#include <stdlib.h>

#include <tgmath.h>

static int64_t label_at(const FlTensor *l, int64_t i) {
    return l->dtype == FL_DT_INT32 ? ((const int32_t *)fl_tensor_data(l))[i]
                                   : ((const int64_t *)fl_tensor_data(l))[i];
}

#define FL_TMPL "reduce_t.inc"
#include "runtime/kernels/tmpl.h"

/* ---- softmax ---- */

/* softmax and its gradient on the kernel pool (par.h): chunks of whole rows, at least
 * ROW_GRAIN elements each (the activations' grain, docs/kernels.md "Threads"); each row is
 * computed as serially, by one thread, so the cut changes no bit. */
enum { ROW_GRAIN = 1 << 15 };

typedef struct RowJob {
    bool f32, grad;
    const void *a, *g; /* softmax: X; grad: Out and Out@GRAD */
    void *o;
    int64_t d;
} RowJob;

static void softmax_rows(void *arg, int64_t lo, int64_t hi) {
    const RowJob *j = arg;
    int64_t at = lo * j->d, n = hi - lo;
    if (j->f32 && !j->grad)
        softmax_f32((const float *)j->a + at, (float *)j->o + at, n, j->d);
    else if (!j->grad)
        softmax_f64((const double *)j->a + at, (double *)j->o + at, n, j->d);
    else if (j->f32)
        softmax_grad_f32((const float *)j->a + at, (const float *)j->g + at, (float *)j->o + at, n, j->d);
    else
        softmax_grad_f64((const double *)j->a + at, (const double *)j->g + at, (double *)j->o + at, n,
                         j->d);
}

static void softmax_run(RowJob *j, int64_t rows) {
    int64_t grain = j->d > 0 && j->d < ROW_GRAIN ? ROW_GRAIN / j->d : 1;
    fl_par_for(rows, grain, softmax_rows, j);
}

FlStatus fl_kernel_softmax(FlErr *e, const FlTensor *x, FlTensor *out) {
    if (kneed_float(e, "softmax", "X", x)) return FL_ERROR;
    if (x->ndim < 1) return fl_err(e, "softmax: X %s must have rank 1 or more", fl_tensor_shape(x).s);
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, "softmax", &r, x)) return FL_ERROR;
    int64_t d = x->ne[x->ndim - 1], rows = d ? fl_tensor_numel(x) / d : 0;
    RowJob j = {.f32 = x->dtype == FL_DT_FLOAT32, .a = fl_tensor_data(x), .o = fl_tensor_data(&r), .d = d};
    softmax_run(&j, rows);
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_softmax_grad(FlErr *e, const FlTensor *out, const FlTensor *dout, FlTensor *dx) {
    const char *op = "softmax_grad";
    if (kneed_float(e, op, "Out", out) || ksame(e, op, "Out", out, "Out@GRAD", dout)) return FL_ERROR;
    if (out->ndim < 1) return fl_err(e, "%s: Out %s must have rank 1 or more", op, fl_tensor_shape(out).s);
    if (!dx) return FL_OK;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, op, &r, out)) return FL_ERROR;
    int64_t d = out->ne[out->ndim - 1], rows = d ? fl_tensor_numel(out) / d : 0;
    RowJob j = {.f32 = out->dtype == FL_DT_FLOAT32, .grad = true, .a = fl_tensor_data(out),
                .g = fl_tensor_data(dout), .o = fl_tensor_data(&r), .d = d};
    softmax_run(&j, rows);
    kout(dx, &r);
    return FL_OK;
}

/* ---- cross_entropy ---- */

static FlStatus ce_check(FlErr *e, const char *op, const FlTensor *x, const FlTensor *label,
                         bool soft) {
    if (kneed_float(e, op, "X", x)) return FL_ERROR;
    if (khas(e, op, "Label", label)) return FL_ERROR;
    if (x->ndim < 1) return fl_err(e, "%s: X %s must have rank 1 or more", op, fl_tensor_shape(x).s);
    int n = x->ndim;
    int64_t d = x->ne[n - 1];
    if (soft) {
        if (ksame(e, op, "X", x, "Label", label)) return FL_ERROR;
        return FL_OK;
    }
    if (label->dtype != FL_DT_INT64 && label->dtype != FL_DT_INT32)
        return fl_err(e, "%s: Label %s has dtype %s; int64 expected (or set soft_label)", op,
                      fl_tensor_shape(label).s, fl_dtype_name(label->dtype));
    bool ok = label->ndim == n && label->ne[n - 1] == 1;
    for (int i = 0; ok && i < n - 1; i++) ok = label->ne[i] == x->ne[i];
    if (!ok)
        return fl_err(e, "%s: X %s and Label %s: Label must have X's shape with the last dim 1 "
                         "(one class index per row of %lld probabilities)",
                      op, fl_tensor_shape(x).s, fl_tensor_shape(label).s, (long long)d);
    return FL_OK;
}

FlStatus fl_kernel_cross_entropy(FlErr *e, const FlTensor *x, const FlTensor *label,
                                 bool soft_label, int64_t ignore_index, FlTensor *y) {
    if (ce_check(e, "cross_entropy", x, label, soft_label)) return FL_ERROR;
    int64_t ne[FL_MAX_DIMS];
    memcpy(ne, x->ne, sizeof ne);
    int64_t d = ne[x->ndim - 1], rows = kprod(x->ne, 0, x->ndim - 1);
    ne[x->ndim - 1] = 1;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc(e, "cross_entropy", &r, x->dtype, x->ndim, ne)) return FL_ERROR;
    FlStatus st = x->dtype == FL_DT_FLOAT32
                      ? ce_fwd_f32(e, fl_tensor_data(x), label, soft_label, ignore_index,
                                   fl_tensor_data(&r), rows, d)
                      : ce_fwd_f64(e, fl_tensor_data(x), label, soft_label, ignore_index,
                                   fl_tensor_data(&r), rows, d);
    if (st) {
        fl_tensor_fini(&r);
        return FL_ERROR;
    }
    kout(y, &r);
    return FL_OK;
}

FlStatus fl_kernel_cross_entropy_grad(FlErr *e, const FlTensor *x, const FlTensor *label,
                                      const FlTensor *dy, bool soft_label, int64_t ignore_index,
                                      FlTensor *dx) {
    const char *op = "cross_entropy_grad";
    if (ce_check(e, op, x, label, soft_label) || ksame_dtype(e, op, "X", x, "Y@GRAD", dy))
        return FL_ERROR;
    int64_t d = x->ne[x->ndim - 1], rows = kprod(x->ne, 0, x->ndim - 1);
    if (fl_tensor_numel(dy) != rows)
        return fl_err(e, "%s: Y@GRAD %s must hold one value per row of X %s", op,
                      fl_tensor_shape(dy).s, fl_tensor_shape(x).s);
    if (!dx) return FL_OK;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &r, x)) return FL_ERROR;
    FlStatus st = x->dtype == FL_DT_FLOAT32
                      ? ce_bwd_f32(e, fl_tensor_data(x), label, fl_tensor_data(dy), soft_label,
                                   ignore_index, fl_tensor_data(&r), rows, d)
                      : ce_bwd_f64(e, fl_tensor_data(x), label, fl_tensor_data(dy), soft_label,
                                   ignore_index, fl_tensor_data(&r), rows, d);
    if (st) {
        fl_tensor_fini(&r);
        return FL_ERROR;
    }
    kout(dx, &r);
    return FL_OK;
}

/* ---- mean ---- */

/* A reduction on the kernel pool (par.h): the elements split into blocks by their count alone
 * (fl_par_blocks, the same with any pool or none), each summed in order into its own partial,
 * and the partials added in block order, so the result depends neither on the thread count nor
 * on which thread ran which block. Up to SUM_GRAIN elements: one block, the plain sum. */
enum { SUM_GRAIN = 1 << 16 };

typedef struct SumJob {
    const FlTensor *x;
    int nchunks;
    double part[FL_PAR_MAX_BLOCKS];
} SumJob;

static void sum_chunk(void *arg, int c) {
    SumJob *j = arg;
    int64_t lo, hi;
    fl_par_range(fl_tensor_numel(j->x), c, j->nchunks, &lo, &hi);
    double s = 0;
    if (j->x->dtype == FL_DT_FLOAT32)
        for (const float *p = fl_tensor_data(j->x); lo < hi; lo++) s += p[lo];
    else
        for (const double *p = fl_tensor_data(j->x); lo < hi; lo++) s += p[lo];
    j->part[c] = s;
}

FlStatus fl_kernel_mean(FlErr *e, const FlTensor *x, FlTensor *out) {
    if (kneed_float(e, "mean", "X", x)) return FL_ERROR;
    int64_t n = fl_tensor_numel(x), one = 1;
    SumJob j = {.x = x, .nchunks = fl_par_blocks(n, SUM_GRAIN)};
    fl_par_run(j.nchunks, sum_chunk, &j);
    double s = 0;
    for (int c = 0; c < j.nchunks; c++) s += j.part[c];
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc(e, "mean", &r, x->dtype, 1, &one)) return FL_ERROR;
    fl_tensor_set(&r, 0, n ? s / (double)n : 0);
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_mean_grad(FlErr *e, const FlTensor *x, const FlTensor *dout, FlTensor *dx) {
    double g = 0;
    if (kneed_float(e, "mean_grad", "X", x) || kscalar(e, "mean_grad", "Out@GRAD", dout, &g))
        return FL_ERROR;
    if (!dx) return FL_OK;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, "mean_grad", &r, x)) return FL_ERROR;
    int64_t n = fl_tensor_numel(x);
    double v = g / (double)(n ? n : 1);
    for (int64_t i = 0; i < n; i++) {
        if (x->dtype == FL_DT_FLOAT32) ((float *)fl_tensor_data(&r))[i] = (float)v;
        else ((double *)fl_tensor_data(&r))[i] = v;
    }
    kout(dx, &r);
    return FL_OK;
}

/* ---- reduce_sum / reduce_mean ---- */

typedef struct RPlan {
    FlTensor kd; /* shape only: X's with reduced dims 1 */
    int ondim;
    int64_t one[FL_MAX_DIMS];
    int64_t count; /* elements reduced into each output element */
    KBcast b;
} RPlan;

static FlStatus rplan(FlErr *e, const char *op, const FlTensor *x, const int *dims, int ndims,
                      bool keep_dim, bool reduce_all, RPlan *p) {
    bool red[FL_MAX_DIMS] = {false};
    if (reduce_all || ndims == 0) {
        for (int i = 0; i < x->ndim; i++) red[i] = true;
    } else {
        for (int i = 0; i < ndims; i++) {
            int a = kaxis(dims[i], x->ndim);
            if (a < 0)
                return fl_err(e, "%s: dim %d is out of range for X %s", op, dims[i], fl_tensor_shape(x).s);
            if (red[a])
                return fl_err(e, "%s: dim %d is listed twice for X %s", op, dims[i], fl_tensor_shape(x).s);
            red[a] = true;
        }
    }
    fl_tensor_init(&p->kd);
    p->kd.ndim = x->ndim;
    p->ondim = 0;
    p->count = 1;
    for (int i = 0; i < x->ndim; i++) {
        p->kd.ne[i] = red[i] ? 1 : x->ne[i];
        if (red[i]) p->count *= x->ne[i];
        if (keep_dim || !red[i]) p->one[p->ondim++] = p->kd.ne[i];
    }
    if (p->ondim == 0) p->one[p->ondim++] = 1;
    return kbcast_plan(e, op, x, &p->kd, -1, &p->b);
}

typedef struct RCtx {
    const void *x;
    void *acc; /* double (floats) or int64_t (ints) per output element */
    FlDType dt;
    double f; /* gradient factor */
    const void *g;
    void *dx;
} RCtx;

static void racc(void *c, int64_t xo, int64_t yo, int64_t oo, int64_t n, int64_t sx, int64_t sy) {
    RCtx *k = c;
    (void)oo;
    switch (k->dt) {
    case FL_DT_FLOAT32: { const float *x = (const float *)k->x + xo; double *a = (double *)k->acc + yo;
        for (int64_t i = 0; i < n; i++) a[i * sy] += x[i * sx]; } break;
    case FL_DT_FLOAT64: { const double *x = (const double *)k->x + xo; double *a = (double *)k->acc + yo;
        for (int64_t i = 0; i < n; i++) a[i * sy] += x[i * sx]; } break;
    case FL_DT_INT32: { const int32_t *x = (const int32_t *)k->x + xo; int64_t *a = (int64_t *)k->acc + yo;
        for (int64_t i = 0; i < n; i++) a[i * sy] += x[i * sx]; } break;
    case FL_DT_INT64: { const int64_t *x = (const int64_t *)k->x + xo; int64_t *a = (int64_t *)k->acc + yo;
        for (int64_t i = 0; i < n; i++) a[i * sy] += x[i * sx]; } break;
    case FL_DT_FLOAT16:
    case FL_DT_INT8:
    case FL_DT_UINT8:
    case FL_DT_BOOL:
    case FL_DT_COUNT: FL_UNREACHABLE();
    }
}

static void rspread(void *c, int64_t xo, int64_t yo, int64_t oo, int64_t n, int64_t sx, int64_t sy) {
    RCtx *k = c;
    (void)oo;
    if (k->dt == FL_DT_FLOAT32) {
        const float *g = (const float *)k->g + yo;
        float *d = (float *)k->dx + xo, f = (float)k->f;
        for (int64_t i = 0; i < n; i++) d[i * sx] = g[i * sy] * f;
    } else {
        const double *g = (const double *)k->g + yo;
        double *d = (double *)k->dx + xo;
        for (int64_t i = 0; i < n; i++) d[i * sx] = g[i * sy] * k->f;
    }
}

static FlStatus reduce(FlErr *e, const char *op, bool mean, const FlTensor *x, const int *dims,
                       int ndims, bool keep_dim, bool reduce_all, FlTensor *out) {
    if (mean ? kneed_float(e, op, "X", x) : kneed_num(e, op, "X", x)) return FL_ERROR;
    RPlan p;
    if (rplan(e, op, x, dims, ndims, keep_dim, reduce_all, &p)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc(e, op, &r, x->dtype, p.ondim, p.one)) return FL_ERROR;
    int64_t n = fl_tensor_numel(&r);
    void *acc = calloc((size_t)(n ? n : 1), 8);
    if (!acc) {
        fl_tensor_fini(&r);
        return fl_err(e, "%s: out of memory", op);
    }
    RCtx c = {.x = fl_tensor_data(x), .acc = acc, .dt = x->dtype};
    kbcast_run(&p.b, racc, &c);
    double div = mean && p.count ? (double)p.count : 1;
    for (int64_t i = 0; i < n; i++) {
        if (kis_float(x->dtype)) fl_tensor_set(&r, i, ((double *)acc)[i] / div);
        else if (x->dtype == FL_DT_INT64) ((int64_t *)fl_tensor_data(&r))[i] = ((int64_t *)acc)[i];
        else ((int32_t *)fl_tensor_data(&r))[i] = (int32_t)((int64_t *)acc)[i];
    }
    free(acc);
    kout(out, &r);
    return FL_OK;
}

static FlStatus reduce_grad(FlErr *e, const char *op, bool mean, const FlTensor *x,
                            const FlTensor *dout, const int *dims, int ndims, bool keep_dim,
                            bool reduce_all, FlTensor *dx) {
    if (kneed_float(e, op, "X", x) || ksame_dtype(e, op, "X", x, "Out@GRAD", dout)) return FL_ERROR;
    RPlan p;
    if (rplan(e, op, x, dims, ndims, keep_dim, reduce_all, &p)) return FL_ERROR;
    if (fl_tensor_numel(dout) != kprod(p.one, 0, p.ondim))
        return fl_err(e, "%s: Out@GRAD %s does not match the reduced shape %s of X %s", op,
                      fl_tensor_shape(dout).s, fl_shape_str(p.ondim, p.one).s, fl_tensor_shape(x).s);
    if (!dx) return FL_OK;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &r, x)) return FL_ERROR;
    RCtx c = {.g = fl_tensor_data(dout), .dx = fl_tensor_data(&r), .dt = x->dtype,
              .f = mean && p.count ? 1.0 / (double)p.count : 1.0};
    kbcast_run(&p.b, rspread, &c);
    kout(dx, &r);
    return FL_OK;
}

FlStatus fl_kernel_reduce_sum(FlErr *e, const FlTensor *x, const int *dims, int ndims,
                              bool keep_dim, bool reduce_all, FlTensor *out) {
    return reduce(e, "reduce_sum", false, x, dims, ndims, keep_dim, reduce_all, out);
}
FlStatus fl_kernel_reduce_mean(FlErr *e, const FlTensor *x, const int *dims, int ndims,
                               bool keep_dim, bool reduce_all, FlTensor *out) {
    return reduce(e, "reduce_mean", true, x, dims, ndims, keep_dim, reduce_all, out);
}
FlStatus fl_kernel_reduce_sum_grad(FlErr *e, const FlTensor *x, const FlTensor *dout,
                                   const int *dims, int ndims, bool keep_dim, bool reduce_all,
                                   FlTensor *dx) {
    return reduce_grad(e, "reduce_sum_grad", false, x, dout, dims, ndims, keep_dim, reduce_all, dx);
}
FlStatus fl_kernel_reduce_mean_grad(FlErr *e, const FlTensor *x, const FlTensor *dout,
                                    const int *dims, int ndims, bool keep_dim, bool reduce_all,
                                    FlTensor *dx) {
    return reduce_grad(e, "reduce_mean_grad", true, x, dout, dims, ndims, keep_dim, reduce_all, dx);
}

/* ---- sum ---- */

#define SUM_LOOP(T, ADD)                                                                     \
    do {                                                                                     \
        T *o = fl_tensor_data(&r);                                                           \
        for (int k = 1; k < n; k++) {                                                        \
            const T *s = fl_tensor_data(xs[k]);                                              \
            for (int64_t i = 0; i < m; i++) o[i] = (T)ADD(o[i], s[i]);                       \
        }                                                                                    \
    } while (0)

/* A float sum on the kernel pool, in chunks of elements: each element is X[0]'s, then each
 * other input added in order, as SUM_LOOP does, so the cut changes no bit (the gradients of a
 * ResNet's shortcut, 2^20 elements, accumulate this way). */
typedef struct SumInJob {
    const FlTensor *const *xs;
    int n;
    void *o;
} SumInJob;

#define SUM_IN_CHUNK(name, T)                                                                \
    static void name(void *arg, int64_t lo, int64_t hi) {                                    \
        const SumInJob *j = arg;                                                             \
        T *restrict o = j->o;                                                                \
        memcpy(o + lo, (const T *)fl_tensor_data(j->xs[0]) + lo, (size_t)(hi - lo) * sizeof(T)); \
        for (int k = 1; k < j->n; k++) {                                                     \
            const T *s = fl_tensor_data(j->xs[k]);                                           \
            for (int64_t i = lo; i < hi; i++) o[i] = o[i] + s[i];                            \
        }                                                                                    \
    }
SUM_IN_CHUNK(sum_in_chunk_f32, float)
SUM_IN_CHUNK(sum_in_chunk_f64, double)

FlStatus fl_kernel_sum(FlErr *e, const FlTensor *const *xs, int n, FlTensor *out) {
    if (n < 1) return fl_err(e, "sum: at least one input is needed");
    if (kneed_num(e, "sum", "X[0]", xs[0])) return FL_ERROR;
    for (int k = 1; k < n; k++)
        if (ksame(e, "sum", "X[0]", xs[0], "another input", xs[k])) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    int64_t numel = fl_tensor_numel(xs[0]);
    bool f32 = xs[0]->dtype == FL_DT_FLOAT32;
    if ((f32 || xs[0]->dtype == FL_DT_FLOAT64) && fl_par_chunks(numel, ROW_GRAIN) > 1) {
        if (kalloc_raw_like(e, "sum", &r, xs[0])) return FL_ERROR;
        SumInJob j = {xs, n, fl_tensor_data(&r)};
        fl_par_for(numel, ROW_GRAIN, f32 ? sum_in_chunk_f32 : sum_in_chunk_f64, &j);
        kout(out, &r);
        return FL_OK;
    }
    FlErr sub;
    if (fl_tensor_copy(&sub, &r, xs[0])) return fl_err(e, "sum: %s", sub.msg);
    int64_t m = fl_tensor_numel(&r);
    switch (r.dtype) {
#define SUM_FADD(a, b) ((a) + (b))
    case FL_DT_FLOAT32: SUM_LOOP(float, SUM_FADD); break;
    case FL_DT_FLOAT64: SUM_LOOP(double, SUM_FADD); break;
    case FL_DT_INT32: SUM_LOOP(int32_t, kadd_i); break; /* wraps */
    case FL_DT_INT64: SUM_LOOP(int64_t, kadd_i); break;
    case FL_DT_FLOAT16:
    case FL_DT_INT8:
    case FL_DT_UINT8:
    case FL_DT_BOOL:
    case FL_DT_COUNT: FL_UNREACHABLE();
    }
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_sum_grad(FlErr *e, const FlTensor *dout, int n, FlTensor *const *dxs) {
    if (khas(e, "sum_grad", "Out@GRAD", dout)) return FL_ERROR;
    for (int k = 0; k < n; k++)
        if (dxs[k] && fl_kernel_assign(e, dout, dxs[k])) return FL_ERROR;
    return FL_OK;
}

/* ---- softmax over any axis ---- */

/* The permutation swapping `axis` with the last dim (its own inverse). */
static int swap_perm(FlErr *e, const char *op, const FlTensor *x, int axis, int *perm) {
    int nd = x->ndim;
    if (nd < 1) return fl_err(e, "%s: X %s must have rank >= 1", op, fl_tensor_shape(x).s), -1;
    int a = axis < 0 ? axis + nd : axis;
    if (a < 0 || a >= nd)
        return fl_err(e, "%s: axis %d is outside X %s", op, axis, fl_tensor_shape(x).s), -1;
    for (int i = 0; i < nd; i++) perm[i] = i;
    perm[a] = nd - 1;
    perm[nd - 1] = a;
    return a;
}

FlStatus fl_kernel_softmax_axis(FlErr *e, const FlTensor *x, int axis, FlTensor *out) {
    int perm[FL_MAX_DIMS];
    int a = swap_perm(e, "softmax", x, axis, perm);
    if (a < 0) return FL_ERROR;
    if (a == x->ndim - 1) return fl_kernel_softmax(e, x, out);
    FlTensor t = FL_TENSOR_INIT, s = FL_TENSOR_INIT;
    FlStatus st = FL_ERROR;
    if (fl_kernel_transpose(e, x, perm, x->ndim, &t) || fl_kernel_softmax(e, &t, &s) ||
        fl_kernel_transpose(e, &s, perm, x->ndim, out))
        goto done;
    st = FL_OK;
done:
    fl_tensor_fini(&t);
    fl_tensor_fini(&s);
    return st;
}

FlStatus fl_kernel_softmax_axis_grad(FlErr *e, const FlTensor *out, const FlTensor *dout, int axis,
                                     FlTensor *dx) {
    int perm[FL_MAX_DIMS];
    int a = swap_perm(e, "softmax_grad", out, axis, perm);
    if (a < 0) return FL_ERROR;
    if (a == out->ndim - 1) return fl_kernel_softmax_grad(e, out, dout, dx);
    FlTensor to = FL_TENSOR_INIT, td = FL_TENSOR_INIT, g = FL_TENSOR_INIT;
    FlStatus st = FL_ERROR;
    if (fl_kernel_transpose(e, out, perm, out->ndim, &to) ||
        fl_kernel_transpose(e, dout, perm, out->ndim, &td) ||
        fl_kernel_softmax_grad(e, &to, &td, &g) || fl_kernel_transpose(e, &g, perm, out->ndim, dx))
        goto done;
    st = FL_OK;
done:
    fl_tensor_fini(&to);
    fl_tensor_fini(&td);
    fl_tensor_fini(&g);
    return st;
}
