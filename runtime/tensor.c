/* tensor.c: reference-counted buffers and dense tensors over them.
 * A buffer and its header come from one aligned allocation: the header sits in the first 64
 * bytes and the data starts right after, so data is 64-byte aligned. Invariant: a non-empty
 * tensor's [offset, offset + nbytes) lies inside its buffer. */
#include "runtime/tensor.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(FlBuffer) <= FL_TENSOR_ALIGN, "buffer header must fit its padding");

static FlBuffer *buffer_new(FlErr *e, size_t size, bool zero) {
    size_t total = size + 2 * FL_TENSOR_ALIGN - 1;
    if (size > SIZE_MAX - 2 * FL_TENSOR_ALIGN) {
        fl_err(e, "cannot allocate a buffer of %zu bytes: too large", size);
        return NULL;
    }
    total &= ~(size_t)(FL_TENSOR_ALIGN - 1);
    unsigned char *mem = aligned_alloc(FL_TENSOR_ALIGN, total);
    if (!mem) {
        fl_err(e, "out of memory allocating %zu bytes", size);
        return NULL;
    }
    FlBuffer *b = (FlBuffer *)mem;
    atomic_init(&b->refs, 1);
    b->size = size;
    b->data = mem + FL_TENSOR_ALIGN;
    if (zero) memset(b->data, 0, size);
    return b;
}

FlBuffer *fl_buffer_new(FlErr *e, size_t size) { return buffer_new(e, size, true); }
FlBuffer *fl_buffer_new_uninit(FlErr *e, size_t size) { return buffer_new(e, size, false); }

void fl_buffer_retain(FlBuffer *b) {
    if (b) atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
}

void fl_buffer_release(FlBuffer *b) {
    if (!b) return;
    long old = atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel);
    FL_ASSERT(old > 0);
    if (old == 1) free(b);
}

long fl_buffer_refs(const FlBuffer *b) {
    return b ? atomic_load_explicit(&((FlBuffer *)b)->refs, memory_order_acquire) : 0;
}

void fl_tensor_init(FlTensor *t) {
    *t = (FlTensor)FL_TENSOR_INIT;
}

void fl_tensor_fini(FlTensor *t) {
    if (!t) return;
    fl_buffer_release(t->buf);
    fl_tensor_init(t);
}

bool fl_tensor_has_data(const FlTensor *t) { return t && t->buf; }

FlShapeStr fl_shape_str(int ndim, const int64_t *ne) {
    FlShapeStr r;
    size_t n = 0;
    r.s[n++] = '[';
    for (int i = 0; i < ndim && i < FL_MAX_DIMS; i++)
        n += (size_t)snprintf(r.s + n, sizeof r.s - n, "%s%" PRId64, i ? ", " : "", ne[i]);
    snprintf(r.s + n, sizeof r.s - n, "]");
    return r;
}

FlShapeStr fl_tensor_shape(const FlTensor *t) { return fl_shape_str(t->ndim, t->ne); }

FlStatus fl_shape_numel(FlErr *e, int ndim, const int64_t *ne, int64_t *numel) {
    if (ndim < 0 || ndim > FL_MAX_DIMS)
        return fl_err(e, "a tensor has %d dimensions; at most %d are supported", ndim, FL_MAX_DIMS);
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (ne[i] < 0)
            return fl_err(e, "shape %s has a negative dimension", fl_shape_str(ndim, ne).s);
        if (ne[i] && n > INT64_MAX / ne[i])
            return fl_err(e, "shape %s has too many elements", fl_shape_str(ndim, ne).s);
        n *= ne[i];
    }
    *numel = n;
    return FL_OK;
}

static FlStatus tensor_alloc(FlErr *e, FlTensor *t, FlDType dtype, int ndim, const int64_t *ne, bool zero) {
    int64_t n;
    if (fl_shape_numel(e, ndim, ne, &n)) return FL_ERROR;
    size_t es = fl_dtype_size(dtype);
    FL_ASSERT(es > 0);
    if ((uint64_t)n > SIZE_MAX / es)
        return fl_err(e, "shape %s is too large to allocate", fl_shape_str(ndim, ne).s);
    FlErr sub;
    FlBuffer *b = buffer_new(&sub, (size_t)n * es, zero);
    if (!b)
        return fl_err(e, "cannot allocate a %s tensor of shape %s: %s", fl_dtype_name(dtype),
                      fl_shape_str(ndim, ne).s, sub.msg);
    FlTensor r = FL_TENSOR_INIT;
    r.dtype = dtype;
    r.ndim = ndim;
    for (int i = 0; i < ndim; i++) r.ne[i] = ne[i];
    r.buf = b;
    r.offset = 0;
    fl_tensor_fini(t);
    *t = r;
    return FL_OK;
}

FlStatus fl_tensor_alloc(FlErr *e, FlTensor *t, FlDType dtype, int ndim, const int64_t *ne) {
    return tensor_alloc(e, t, dtype, ndim, ne, true);
}

FlStatus fl_tensor_alloc_uninit(FlErr *e, FlTensor *t, FlDType dtype, int ndim, const int64_t *ne) {
    return tensor_alloc(e, t, dtype, ndim, ne, false);
}

FlStatus fl_tensor_alloc_like(FlErr *e, FlTensor *t, const FlTensor *like, FlDType dtype) {
    int64_t ne[FL_MAX_DIMS];
    int nd = like->ndim;
    memcpy(ne, like->ne, sizeof ne);
    return fl_tensor_alloc(e, t, dtype, nd, ne);
}

FlStatus fl_tensor_from(FlErr *e, FlTensor *t, FlDType dtype, int ndim, const int64_t *ne,
                        const double *vals) {
    FlTensor r = FL_TENSOR_INIT;
    if (fl_tensor_alloc(e, &r, dtype, ndim, ne)) return FL_ERROR;
    int64_t n = fl_tensor_numel(&r);
    for (int64_t i = 0; i < n; i++) fl_tensor_set(&r, i, vals[i]);
    fl_tensor_fini(t);
    *t = r;
    return FL_OK;
}

FlStatus fl_tensor_copy(FlErr *e, FlTensor *dst, const FlTensor *src) {
    FlTensor r = FL_TENSOR_INIT;
    if (fl_tensor_alloc_like(e, &r, src, src->dtype)) return FL_ERROR;
    size_t nb = fl_tensor_nbytes(src);
    if (nb) memcpy(fl_tensor_data(&r), fl_tensor_data(src), nb);
    fl_tensor_fini(dst);
    *dst = r;
    return FL_OK;
}

void fl_tensor_ref(FlTensor *dst, const FlTensor *src) {
    FlTensor r = *src;
    fl_buffer_retain(r.buf);
    fl_tensor_fini(dst);
    *dst = r;
}

FlStatus fl_tensor_view(FlErr *e, FlTensor *dst, const FlTensor *src, int64_t elem_offset,
                        int ndim, const int64_t *ne) {
    int64_t n;
    if (fl_shape_numel(e, ndim, ne, &n)) return FL_ERROR;
    int64_t have = fl_tensor_numel(src);
    if (!src->buf || elem_offset < 0 || elem_offset > have || n > have - elem_offset)
        return fl_err(e, "a view of shape %s at element %" PRId64 " does not fit in a tensor of "
                         "shape %s", fl_shape_str(ndim, ne).s, elem_offset,
                      fl_tensor_shape(src).s);
    FlTensor r = FL_TENSOR_INIT;
    r.dtype = src->dtype;
    r.ndim = ndim;
    for (int i = 0; i < ndim; i++) r.ne[i] = ne[i];
    r.buf = src->buf;
    r.offset = src->offset + (size_t)elem_offset * fl_dtype_size(src->dtype);
    fl_buffer_retain(r.buf);
    fl_tensor_fini(dst);
    *dst = r;
    return FL_OK;
}

int64_t fl_tensor_numel(const FlTensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->ne[i];
    return n;
}

size_t fl_tensor_nbytes(const FlTensor *t) {
    return (size_t)fl_tensor_numel(t) * fl_dtype_size(t->dtype);
}

void *fl_tensor_data(const FlTensor *t) { return t->buf ? t->buf->data + t->offset : NULL; }

bool fl_tensor_same_shape(const FlTensor *a, const FlTensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->ne[i] != b->ne[i]) return false;
    return true;
}

double fl_tensor_get(const FlTensor *t, int64_t i) {
    const void *p = fl_tensor_data(t);
    FL_ASSERT(p && i >= 0 && i < fl_tensor_numel(t));
    switch (t->dtype) {
    case FL_DT_FLOAT32: return ((const float *)p)[i];
    case FL_DT_FLOAT64: return ((const double *)p)[i];
    case FL_DT_INT32: return ((const int32_t *)p)[i];
    case FL_DT_INT64: return (double)((const int64_t *)p)[i];
    case FL_DT_BOOL: return ((const uint8_t *)p)[i] != 0;
    case FL_DT_COUNT: break;
    }
    FL_UNREACHABLE();
}

void fl_tensor_set(FlTensor *t, int64_t i, double v) {
    void *p = fl_tensor_data(t);
    FL_ASSERT(p && i >= 0 && i < fl_tensor_numel(t));
    switch (t->dtype) {
    case FL_DT_FLOAT32: ((float *)p)[i] = (float)v; return;
    case FL_DT_FLOAT64: ((double *)p)[i] = v; return;
    case FL_DT_INT32: ((int32_t *)p)[i] = (int32_t)v; return;
    case FL_DT_INT64: ((int64_t *)p)[i] = (int64_t)v; return;
    case FL_DT_BOOL: ((uint8_t *)p)[i] = v != 0; return;
    case FL_DT_COUNT: break;
    }
    FL_UNREACHABLE();
}
