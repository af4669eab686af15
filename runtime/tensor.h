/* tensor.h: dense tensors over reference-counted buffers.
 *
 * An FlBuffer is a block of bytes, 64-byte aligned, with an atomic reference count: it may be
 * retained and released from any thread, and it is freed (or recycled, see below) by its last
 * release. An FlTensor is a small value (dtype, shape, buffer, byte offset) that holds ONE
 * reference to its buffer. Tensors are always contiguous (row-major); a view is a tensor that
 * shares another's buffer at an offset ("views hold their base and an offset, never own data":
 * the buffer owns the data).
 *
 *     FlTensor t = FL_TENSOR_INIT;                       // empty: no buffer
 *     int64_t ne[2] = {128, 784};
 *     if (fl_tensor_alloc(&err, &t, FL_DT_FLOAT32, 2, ne)) return FL_ERROR;  // zero-filled
 *     float *p = fl_tensor_data(&t);
 *     ...
 *     fl_tensor_fini(&t);                                // releases the buffer reference
 *
 * Ownership: an FlTensor owns one reference to its buffer; fl_tensor_fini drops it. Copying the
 * struct by assignment does NOT retain: use fl_tensor_ref to share. Functions that fill a tensor
 * (alloc, copy, ref, view) release whatever the destination held before, after reading the
 * source, so the destination may be the source itself. Arguments are otherwise borrowed.
 *
 * Thread-safety: buffer reference counts are atomic. Tensor contents are immutable once
 * published (handed to a scope, a channel, another thread): a writer allocates a new buffer and
 * replaces the tensor whole, so readers see the old or the new tensor, never a torn one. Only
 * the code that allocated a buffer and has not published it yet may write into it, with one
 * exception: a holder that, under a var's lock, finds the buffer held by that var and itself
 * alone (fl_var_lock_sole, runtime/core/scope.h: sparse optimizer rows), so nobody can see the
 * change happen. Distinct
 * FlTensor structs may be used from different threads freely; one struct is not locked.
 *
 * Errors: allocation of a user-sized tensor never aborts: an overflowing shape, a negative
 * dimension or a failed allocation returns FL_ERROR with a message naming the shape.
 *
 * Recycling: a buffer of at least FL_BUFFER_CACHE_MIN bytes is not freed by its last release but
 * kept in a process-wide cache, and the next allocation of exactly its size takes it back (the
 * most recently released first), so a training loop's per-step buffers stop going back to the
 * system and faulting in again. The cache holds at most its limit in bytes, oldest out first:
 * by default the larger of FL_BUFFER_CACHE_LIMIT and the most bytes of cacheable buffers the
 * process has had in use at once (so a model whose step lives on more than the default limit
 * still reuses its buffers), grown by the size of each buffer it evicted for its limit that an
 * allocation then missed (a step's exact sizes can add up to more than its peak in use; the
 * growth stops at that peak again), or FLUIDC_BUFFER_CACHE_MB from the environment (read on first use;
 * 0 turns the cache off) or fl_buffer_cache_set_limit, which fix it; and it frees a buffer no
 * allocation has taken for FL_BUFFER_CACHE_AGE allocations. It is
 * thread-safe (one mutex). Every buffer whose last release may come must have been made by
 * fl_buffer_new or fl_buffer_new_uninit: a header built elsewhere (ops_dist.c's pieces) keeps
 * its one reference for good.
 */
#ifndef FL_TENSOR_H
#define FL_TENSOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "compiler/ir/dtype.h"

#define FL_MAX_DIMS 8
#define FL_TENSOR_ALIGN 64

/* A reference-counted block of bytes. `data` is 64-byte aligned; `size` is its length in bytes. */
typedef struct FlBuffer {
    atomic_long refs;
    size_t size;
    unsigned char *data;
} FlBuffer;

/* A new buffer of `size` bytes, zero-filled, with one reference; NULL with a message in e when
 * the allocation fails. */
FlBuffer *fl_buffer_new(FlErr *e, size_t size) FL_WARN_UNUSED;
/* Like fl_buffer_new without the zero fill: the bytes are undefined until written. For a buffer
 * its allocator then fills in full before publishing it (a received message's payload). */
FlBuffer *fl_buffer_new_uninit(FlErr *e, size_t size) FL_WARN_UNUSED;
void fl_buffer_retain(FlBuffer *b); /* b may be NULL */
void fl_buffer_release(FlBuffer *b); /* b may be NULL; frees or caches on the last release */
long fl_buffer_refs(const FlBuffer *b); /* the current count (a snapshot) */

#define FL_BUFFER_CACHE_MIN (16 << 10)           /* smaller buffers go straight back to malloc */
#define FL_BUFFER_CACHE_LIMIT ((size_t)64 << 20) /* the default limit of the cache, in bytes */
#define FL_BUFFER_CACHE_AGE 4096 /* allocations (of cacheable size) a cached buffer outlives */

/* The cache's state (a snapshot): its limit, the bytes of data and the buffers it holds, the
 * allocations of cacheable size it served (hits) and did not (misses), and the buffers it
 * gave back to malloc for its limit or their age (evicted). */
typedef struct FlBufferCacheStats {
    size_t limit, bytes, count;
    uint64_t hits, misses, evicted;
} FlBufferCacheStats;

FlBufferCacheStats fl_buffer_cache_stats(void);
/* Fixes the cache's limit in bytes (0 turns it off; it no longer follows the peak in use),
 * freeing the oldest buffers past it; returns the previous limit. */
size_t fl_buffer_cache_set_limit(size_t bytes);
/* Frees every cached buffer (the limit stays). */
void fl_buffer_cache_trim(void);

/* A dense tensor. ndim 0 is a scalar (numel 1). ne[i] for i >= ndim are 1. */
typedef struct FlTensor {
    FlDType dtype;
    int ndim;
    int64_t ne[FL_MAX_DIMS]; /* elements per dimension, outermost first */
    FlBuffer *buf; /* NULL: the tensor is empty (holds no data) */
    size_t offset; /* byte offset of element 0 in buf->data */
} FlTensor;

#define FL_TENSOR_INIT {.dtype = FL_DT_FLOAT32, .ndim = 0, .ne = {1, 1, 1, 1, 1, 1, 1, 1}}

/* A shape printed as "[128, 784]", returned by value so it can be used inside one printf call:
 * fl_err(e, "bad %s", fl_tensor_shape(t).s). */
typedef struct FlShapeStr {
    char s[8 * 22 + 4];
} FlShapeStr;

/* Inline: the executor inits and finis a tensor per argument of every op run. */
static inline void fl_tensor_init(FlTensor *t) { /* empty */
    t->dtype = FL_DT_FLOAT32;
    t->ndim = 0;
    for (int i = 0; i < FL_MAX_DIMS; i++) t->ne[i] = 1;
    t->buf = NULL;
    t->offset = 0;
}
/* Drops the buffer reference; t becomes empty; NULL is a no-op. */
static inline void fl_tensor_fini(FlTensor *t) {
    if (!t) return;
    if (t->buf) fl_buffer_release(t->buf);
    fl_tensor_init(t);
}
static inline bool fl_tensor_has_data(const FlTensor *t) { return t && t->buf; }

/* Allocates a zero-filled tensor of the given dtype and shape into *t (releasing what t held).
 * Errors: ndim outside [0, FL_MAX_DIMS], a negative dimension, a byte size that overflows, or a
 * failed allocation; *t is then unchanged. */
FlStatus fl_tensor_alloc(FlErr *e, FlTensor *t, FlDType dtype, int ndim, const int64_t *ne)
    FL_WARN_UNUSED;
/* Like fl_tensor_alloc without the zero fill (fl_buffer_new_uninit): the caller must write
 * every element before the tensor is read or published. */
FlStatus fl_tensor_alloc_uninit(FlErr *e, FlTensor *t, FlDType dtype, int ndim, const int64_t *ne)
    FL_WARN_UNUSED;
/* Like fl_tensor_alloc with the shape of `like` (which may be t itself). */
FlStatus fl_tensor_alloc_like(FlErr *e, FlTensor *t, const FlTensor *like, FlDType dtype)
    FL_WARN_UNUSED;
/* Allocates and fills from `vals` (numel values, converted to dtype). For constants and tests. */
FlStatus fl_tensor_from(FlErr *e, FlTensor *t, FlDType dtype, int ndim, const int64_t *ne,
                        const double *vals) FL_WARN_UNUSED;
/* A deep copy of src into a new buffer. */
FlStatus fl_tensor_copy(FlErr *e, FlTensor *dst, const FlTensor *src) FL_WARN_UNUSED;
/* dst shares src's buffer (retained): same dtype, shape and offset. */
void fl_tensor_ref(FlTensor *dst, const FlTensor *src);
/* dst becomes a view of src: `ndim`/`ne` elements starting `elem_offset` elements into src,
 * sharing its buffer. Errors when the view does not fit inside src. */
FlStatus fl_tensor_view(FlErr *e, FlTensor *dst, const FlTensor *src, int64_t elem_offset,
                        int ndim, const int64_t *ne) FL_WARN_UNUSED;

int64_t fl_tensor_numel(const FlTensor *t); /* product of ne[0..ndim) (1 for ndim 0) */
size_t fl_tensor_nbytes(const FlTensor *t);
void *fl_tensor_data(const FlTensor *t); /* NULL when empty */
bool fl_tensor_same_shape(const FlTensor *a, const FlTensor *b); /* ndim and ne equal */
FlShapeStr fl_tensor_shape(const FlTensor *t);
FlShapeStr fl_shape_str(int ndim, const int64_t *ne);
/* The checked element count of a shape: FL_ERROR with a message on a negative dimension or an
 * overflow. The dims, each taken as at least 1, must multiply within int64, whichever of them is
 * 0: so no stride or index of a tensor overflows, an empty one's included. */
FlStatus fl_shape_numel(FlErr *e, int ndim, const int64_t *ne, int64_t *numel) FL_WARN_UNUSED;

/* Slow element access by linear index, converting to and from double (bool: 0/1). For tests,
 * scalars (learning rates, counters) and printing; kernels use typed pointers. */
double fl_tensor_get(const FlTensor *t, int64_t i);
/* Stores v converted to t's dtype: float to int saturates (fl_sat_i64/i32), bool is v != 0. */
void fl_tensor_set(FlTensor *t, int64_t i, double v);
/* Element i as an integer: exact for the int dtypes and bool (an int64 beyond 2^53 too, which
 * fl_tensor_get rounds); a float truncated and saturated (fl_sat_i64). For ids, indices, lengths
 * and printing. */
int64_t fl_tensor_get_int(const FlTensor *t, int64_t i);

/* The one float -> int conversion of the runtime (fill_constant, cast, fl_tensor_set): the value
 * truncated toward zero, saturated at the type's range (1e30 -> INT64_MAX, -inf -> INT64_MIN),
 * NaN -> 0. C leaves out-of-range conversions undefined; these never are. */
static inline int64_t fl_sat_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return INT64_MAX; /* 2^63 */
    if (v < -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}
/* An int64 to int32, saturated at its range. */
static inline int32_t fl_sat_i32_of(int64_t v) { return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v; }
static inline int32_t fl_sat_i32(double v) {
    if (v != v) return 0;
    if (v >= 2147483648.0) return INT32_MAX;
    if (v <= -2147483649.0) return INT32_MIN;
    return (int32_t)v;
}
/* The same rule for int8 and uint8 (cast, fill_constant): truncated, saturated at [-128, 127]
 * and [0, 255], NaN -> 0. */
static inline int8_t fl_sat_i8(double v) {
    if (v != v) return 0;
    if (v >= 127.0) return 127;
    if (v <= -128.0) return -128;
    return (int8_t)v;
}
static inline uint8_t fl_sat_u8(double v) {
    if (v != v) return 0;
    if (v >= 255.0) return 255;
    if (v <= 0.0) return 0;
    return (uint8_t)v;
}

#endif
