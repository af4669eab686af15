/* detection_impl.h: what the detection kernels (detection*.c) share: float and int inputs read
 * as double or int64 copies, outputs written from double arrays in their dtype, scratch memory,
 * the IoU of two boxes as Fluid's operators compute it, and the scored items of the selection
 * kernels with their stable sort. Never included from outside runtime/kernels/. */
#ifndef FL_DETECTION_IMPL_H
#define FL_DETECTION_IMPL_H

#include <math.h>

#include "runtime/kernels/kernels_detection.h"
#include "runtime/kernels/kernels_impl.h"

/* n doubles of scratch (n counts elements of existing tensors or small products of them). */
static inline FlStatus dscratch(FlErr *e, const char *op, int64_t n, double **p) {
    *p = malloc((size_t)(n > 0 ? n : 1) * sizeof **p);
    return *p ? FL_OK : fl_err(e, "%s: out of memory for %lld values of scratch", op, (long long)n);
}
static inline FlStatus iscratch(FlErr *e, const char *op, int64_t n, int64_t **p) {
    *p = malloc((size_t)(n > 0 ? n : 1) * sizeof **p);
    return *p ? FL_OK : fl_err(e, "%s: out of memory for %lld values of scratch", op, (long long)n);
}

/* t's elements as doubles (a fresh array the caller frees); t float or int. */
static inline FlStatus dload(FlErr *e, const char *op, const FlTensor *t, double **out) {
    int64_t n = fl_tensor_numel(t);
    if (dscratch(e, op, n, out)) return FL_ERROR;
    const void *p = fl_tensor_data(t);
    switch (t->dtype) {
    case FL_DT_FLOAT32:
        for (int64_t i = 0; i < n; i++) (*out)[i] = ((const float *)p)[i];
        break;
    case FL_DT_FLOAT64: memcpy(*out, p, (size_t)n * sizeof **out); break;
    case FL_DT_INT32:
        for (int64_t i = 0; i < n; i++) (*out)[i] = ((const int32_t *)p)[i];
        break;
    case FL_DT_INT64:
        for (int64_t i = 0; i < n; i++) (*out)[i] = (double)((const int64_t *)p)[i];
        break;
    case FL_DT_UINT8:
    case FL_DT_BOOL:
        for (int64_t i = 0; i < n; i++) (*out)[i] = ((const uint8_t *)p)[i];
        break;
    case FL_DT_INT8:
        for (int64_t i = 0; i < n; i++) (*out)[i] = ((const int8_t *)p)[i];
        break;
    case FL_DT_FLOAT16:
        for (int64_t i = 0; i < n; i++) (*out)[i] = fl_half_to_double(((const uint16_t *)p)[i]);
        break;
    case FL_DT_COUNT: FL_UNREACHABLE();
    }
    return FL_OK;
}

/* Element i of an int tensor (int32 or int64). */
static inline int64_t iget(const FlTensor *t, int64_t i) {
    return t->dtype == FL_DT_INT64 ? ((const int64_t *)fl_tensor_data(t))[i] : ((const int32_t *)fl_tensor_data(t))[i];
}

/* Writes n doubles into t (float32 or float64; int32 and int64 truncate). */
static inline void dstore(FlTensor *t, const double *d, int64_t n) {
    void *p = fl_tensor_data(t);
    switch (t->dtype) {
    case FL_DT_FLOAT32:
        for (int64_t i = 0; i < n; i++) ((float *)p)[i] = (float)d[i];
        break;
    case FL_DT_FLOAT64: memcpy(p, d, (size_t)n * sizeof *d); break;
    case FL_DT_INT32:
        for (int64_t i = 0; i < n; i++) ((int32_t *)p)[i] = (int32_t)d[i];
        break;
    case FL_DT_INT64:
        for (int64_t i = 0; i < n; i++) ((int64_t *)p)[i] = (int64_t)d[i];
        break;
    case FL_DT_BOOL:
        for (int64_t i = 0; i < n; i++) ((uint8_t *)p)[i] = d[i] != 0;
        break;
    case FL_DT_FLOAT16:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)p)[i] = fl_half_from_double(d[i]);
        break;
    case FL_DT_INT8:
        for (int64_t i = 0; i < n; i++) ((int8_t *)p)[i] = fl_sat_i8(d[i]);
        break;
    case FL_DT_UINT8:
        for (int64_t i = 0; i < n; i++) ((uint8_t *)p)[i] = fl_sat_u8(d[i]);
        break;
    case FL_DT_COUNT: FL_UNREACHABLE();
    }
}

/* A new tensor of dtype and shape filled from d (n = its element count). */
static inline FlStatus dnew(FlErr *e, const char *op, FlTensor *t, FlDType dtype, int ndim, const int64_t *ne,
                            const double *d) {
    if (kalloc_raw(e, op, t, dtype, ndim, ne)) return FL_ERROR;
    dstore(t, d, fl_tensor_numel(t));
    return FL_OK;
}

/* The input must be a float tensor whose last dim is 4 (boxes). */
static inline FlStatus kboxes(FlErr *e, const char *op, const char *slot, const FlTensor *t) {
    if (kneed_float(e, op, slot, t)) return FL_ERROR;
    if (t->ndim < 1 || t->ne[t->ndim - 1] != 4)
        return fl_err(e, "%s: %s %s must hold boxes [..., 4] (xmin, ymin, xmax, ymax)", op, slot, fl_tensor_shape(t).s);
    return FL_OK;
}

static inline FlStatus kneed_int(FlErr *e, const char *op, const char *slot, const FlTensor *t) {
    if (khas(e, op, slot, t)) return FL_ERROR;
    if (!kis_int(t->dtype))
        return fl_err(e, "%s: %s %s has dtype %s; int32 or int64 expected", op, slot, fl_tensor_shape(t).s,
                      fl_dtype_name(t->dtype));
    return FL_OK;
}

/* The offsets must cut `rows` rows (a bug of the caller otherwise: the adapters check them). */
static inline FlStatus koffsets(FlErr *e, const char *op, const char *slot, const int64_t *off, int64_t nseq,
                                int64_t rows) {
    if (nseq < 0 || off[0] != 0 || off[nseq] != rows)
        return fl_err(e, "%s: the offsets cut %lld rows but %s has %lld", op, (long long)off[nseq], slot,
                      (long long)rows);
    return FL_OK;
}

static inline double dmin(double a, double b) { return a < b ? a : b; }
static inline double dmax(double a, double b) { return a > b ? a : b; }
static inline double dsigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* The area of a box: 0 when it is inverted; a pixel box counts both edges. */
static inline double box_area(const double *b, bool normalized) {
    if (b[2] < b[0] || b[3] < b[1]) return 0;
    double w = b[2] - b[0], h = b[3] - b[1];
    return normalized ? w * h : (w + 1) * (h + 1);
}

/* The IoU of two boxes as multiclass_nms and the proposal ops compute it (Fluid's
 * JaccardOverlap): 0 for boxes apart, else the intersection over the union of their areas. */
static inline double box_iou(const double *a, const double *b, bool normalized) {
    if (b[0] > a[2] || b[2] < a[0] || b[1] > a[3] || b[3] < a[1]) return 0;
    double n = normalized ? 0 : 1;
    double iw = dmin(a[2], b[2]) - dmax(a[0], b[0]) + n, ih = dmin(a[3], b[3]) - dmax(a[1], b[1]) + n;
    double inter = iw * ih, uni = box_area(a, normalized) + box_area(b, normalized) - inter;
    return uni > 0 ? inter / uni : 0;
}

/* A scored item of the selection kernels (NMS candidates, mining candidates, mAP verdicts): its
 * score, class and row or prior, and for detection_map whether it is a true or false positive. */
typedef struct DetItem {
    double score;
    int64_t cls, idx;
    int tp, fp;
} DetItem;

/* A stable bottom-up merge sort of n items (tmp: n of scratch): by score descending (equal scores
 * keep their order, as Fluid's stable sorts), or with by_class by class ascending. */
static inline void det_sort(DetItem *a, DetItem *tmp, int64_t n, bool by_class) {
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = (by_class ? a[j].cls < a[i].cls : a[j].score > a[i].score) ? a[j++] : a[i++];
            while (i < mid) tmp[k++] = a[i++];
            while (j < hi) tmp[k++] = a[j++];
        }
        memcpy(a, tmp, (size_t)n * sizeof *a);
    }
}

#endif
