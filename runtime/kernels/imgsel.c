/* imgsel.c: random_crop and similarity_focus (kernels_imgsel.h). */
#include "runtime/kernels/kernels_imgsel.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"
#include "runtime/rng.h"

/* ---- random_crop ---- */

FlStatus fl_kernel_random_crop(FlErr *e, const FlTensor *x, const int64_t *shape, int k, uint64_t seed,
                               FlTensor *out) {
    const char *op = "random_crop";
    if (kwant(e, op, "Out", out) || khas(e, op, "X", x)) return FL_ERROR;
    if (k < 1 || k > x->ndim)
        return fl_err(e, "%s: shape gives %d sizes for X %s (1 to its rank)", op, k, fl_tensor_shape(x).s);
    int lead = x->ndim - k;
    int64_t ne[FL_MAX_DIMS];
    memcpy(ne, x->ne, sizeof ne);
    for (int i = 0; i < k; i++) {
        if (shape[i] < 1 || shape[i] > x->ne[lead + i])
            return fl_err(e, "%s: shape[%d] = %lld does not fit X %s's dim %d", op, i, (long long)shape[i],
                          fl_tensor_shape(x).s, lead + i);
        ne[lead + i] = shape[i];
    }
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc_raw(e, op, &o, x->dtype, x->ndim, ne)) return FL_ERROR;
    size_t es = fl_dtype_size(x->dtype);
    int64_t inst = kprod(x->ne, 0, lead), in_sz = kprod(x->ne, lead, x->ndim), out_sz = kprod(ne, lead, x->ndim);
    int64_t w = shape[k - 1]; /* a run of the innermost dim is copied at once */
    const char *px = fl_tensor_data(x);
    char *po = fl_tensor_data(&o);
    FlRng r;
    fl_rng_init(&r, seed);
    for (int64_t n = 0; n < inst; n++) {
        int64_t offs[FL_MAX_DIMS];
        for (int i = 0; i < k; i++) offs[i] = (int64_t)(fl_rng_next(&r) % (uint64_t)(x->ne[lead + i] - shape[i] + 1));
        for (int64_t run = 0; run < out_sz / w; run++) {
            /* the run's index in the crop, dim by dim from the innermost but one, to x's */
            int64_t rem = run, src = offs[k - 1], stride = x->ne[lead + k - 1];
            for (int i = k - 2; i >= 0; i--) {
                int64_t idx = rem % shape[i];
                rem /= shape[i];
                src += (idx + offs[i]) * stride;
                stride *= x->ne[lead + i];
            }
            memcpy(po + (size_t)(n * out_sz + run * w) * es, px + (size_t)(n * in_sz + src) * es, (size_t)w * es);
        }
    }
    kout(out, &o);
    return FL_OK;
}

/* ---- similarity_focus ---- */

typedef struct Cand {
    double v;
    int64_t at; /* row-major place in the slice */
} Cand;

static int by_value(const void *a, const void *b) {
    const Cand *p = a, *q = b;
    if (p->v != q->v) return p->v > q->v ? -1 : 1;
    return p->at < q->at ? -1 : p->at > q->at;
}

FlStatus fl_kernel_similarity_focus(FlErr *e, const FlTensor *x, int axis, const int64_t *indexes, int nidx,
                                    FlTensor *out) {
    const char *op = "similarity_focus";
    if (kwant(e, op, "Out", out) || kneed_float(e, op, "X", x)) return FL_ERROR;
    if (x->ndim != 4) return fl_err(e, "%s: X %s must be [N, A, B, C]", op, fl_tensor_shape(x).s);
    if (axis < 1 || axis > 3) return fl_err(e, "%s: axis %d must be 1, 2 or 3", op, axis);
    for (int i = 0; i < nidx; i++)
        if (indexes[i] < 0 || indexes[i] >= x->ne[axis])
            return fl_err(e, "%s: indexes[%d] = %lld is outside [0, %lld) of X %s's dim %d", op, i,
                          (long long)indexes[i], (long long)x->ne[axis], fl_tensor_shape(x).s, axis);
    /* the slice's two dims u < v (the ones other than axis), and the strides of all three */
    int u = axis == 1 ? 2 : 1, v = axis == 3 ? 2 : 3;
    int64_t st[4] = {x->ne[1] * x->ne[2] * x->ne[3], x->ne[2] * x->ne[3], x->ne[3], 1};
    int64_t R = x->ne[u], C = x->ne[v], A = x->ne[axis], want = R < C ? R : C;
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &o, x)) return FL_ERROR; /* zeros */
    Cand *cand = malloc((size_t)(R * C) * sizeof *cand + 1);
    bool *used = calloc((size_t)(R + C) + 1, 1);
    if (!cand || !used) {
        free(cand), free(used), fl_tensor_fini(&o);
        return fl_err(e, "%s: out of memory for a slice of %lld x %lld", op, (long long)R, (long long)C);
    }
    for (int64_t n = 0; n < x->ne[0]; n++)
        for (int i = 0; i < nidx; i++) {
            int64_t base = n * st[0] + indexes[i] * st[axis];
            for (int64_t a = 0; a < R; a++)
                for (int64_t b = 0; b < C; b++)
                    cand[a * C + b] = (Cand){fl_tensor_get(x, base + a * st[u] + b * st[v]), a * C + b};
            qsort(cand, (size_t)(R * C), sizeof *cand, by_value);
            memset(used, 0, (size_t)(R + C));
            int64_t taken = 0;
            for (int64_t j = 0; j < R * C && taken < want; j++) {
                int64_t a = cand[j].at / C, b = cand[j].at % C;
                if (used[a] || used[R + b]) continue;
                used[a] = used[R + b] = true;
                taken++;
                for (int64_t t = 0; t < A; t++) fl_tensor_set(&o, n * st[0] + t * st[axis] + a * st[u] + b * st[v], 1);
            }
        }
    free(cand), free(used);
    kout(out, &o);
    return FL_OK;
}
