/* tensor.c: reference-counted buffers, a cache recycling the large ones, and dense tensors.
 *
 * A buffer is one malloc block: a Block header at its start (the public FlBuffer, then the
 * cache's links), the data at the first FL_TENSOR_ALIGN boundary after it. Plain malloc, not
 * aligned_alloc, whose memalign path doubled the cost of a tiny op's allocation.
 *
 * The cache: a training step allocates the same large buffers every step (activations, their
 * gradients, each updated parameter) and frees them all when its scope goes. Handed back to
 * malloc, they let glibc trim the heap top or unmap the block, and the next step faults every
 * page in again (208 faults a step on the benchmark MLP, which ran ~10% slower for them). So a
 * buffer of at least FL_BUFFER_CACHE_MIN bytes goes, on its last release, to a cache of free
 * buffers, and an allocation of exactly its byte size takes it back: shapes repeat exactly from
 * step to step, and exact sizes waste no memory (size classes would round every buffer up).
 * Buffers are filed by class (8 per power of two, to find a size in a short list) and a class's
 * list is newest first, so the buffer released last, the likeliest to be still in the CPU's
 * caches, is the one reused. One age list, newest first, bounds the cache: past its byte limit
 * the oldest buffers go back to malloc, and so does one that FL_BUFFER_CACHE_AGE allocations
 * have passed by. The sizes the byte limit evicted are remembered (the last NGHOST): a miss of
 * one means the step takes back more than the limit lets the cache hold, and the limit grows by
 * it (regrow). A mutex guards it all: held for a few list operations, never while freeing or
 * zero-filling. Smaller buffers bypass it (malloc's own free lists serve those without system
 * calls, and tiny ops pay no lock).
 *
 * The cache is process state, like malloc's own: buffers are released from any thread and
 * carry no context back to an owner. Under AddressSanitizer a cached buffer's data is poisoned,
 * so a use after the last release is still reported (until the buffer is reused).
 *
 * Invariant: a non-empty tensor's [offset, offset + nbytes) lies inside its buffer. */
#include "runtime/tensor.h"
#include "runtime/half.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define FL_TENSOR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FL_TENSOR_ASAN 1
#endif
#endif
#ifdef FL_TENSOR_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* The header of every buffer's malloc block; the links are valid only while it is cached. */
typedef struct Block {
    FlBuffer b;                  /* first: an FlBuffer * is its Block * */
    struct Block *prev, *next;   /* its class's list, newest first */
    struct Block *newer, *older; /* the age list */
    uint64_t stamp;              /* the cache's clock when it was cached */
} Block;

enum {
    PAD = sizeof(Block) + FL_TENSOR_ALIGN - 1,
    MIN_LOG = 14,     /* log2(FL_BUFFER_CACHE_MIN) */
    CLASS_BITS = 3,   /* 8 classes per power of two */
    NCLASS = (64 - MIN_LOG) << CLASS_BITS,
    NGHOST = 64,      /* evicted sizes remembered */
};
_Static_assert(FL_BUFFER_CACHE_MIN == 1 << MIN_LOG, "MIN_LOG must match FL_BUFFER_CACHE_MIN");

typedef struct Cache {
    pthread_mutex_t mu;
    bool ready;     /* limit read from the environment */
    bool fixed;     /* the limit was set (environment, fl_buffer_cache_set_limit): no growth */
    size_t limit;   /* bytes of data the cached buffers may hold; 0: the cache is off */
    size_t live, peak; /* bytes of cacheable buffers in use now, and at most so far */
    size_t bytes, count;
    uint64_t clock; /* allocations of cacheable size so far */
    uint64_t hits, misses, evicted;
    size_t extra; /* bytes the limit grew by for sizes it had evicted (not when fixed) */
    size_t ghost[NGHOST]; /* sizes of the last buffers evicted for the byte limit (0: none) */
    int ghost_next;
    Block *newest, *oldest;
    Block *cls[NCLASS];
} Cache;

static Cache cache = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int class_of(size_t size) {
    int lg = 63 - __builtin_clzll((unsigned long long)size);
    int frac = (int)(size >> (lg - CLASS_BITS)) & ((1 << CLASS_BITS) - 1); /* bits after the top */
    return ((lg - MIN_LOG) << CLASS_BITS) + frac;
}

/* Under mu: the limit from FLUIDC_BUFFER_CACHE_MB on first use. */
static void configure(void) {
    if (cache.ready) return;
    cache.ready = true;
    cache.limit = FL_BUFFER_CACHE_LIMIT;
    const char *v = getenv("FLUIDC_BUFFER_CACHE_MB");
    if (v && *v) {
        char *end;
        unsigned long long mb = strtoull(v, &end, 10);
        if (!*end && mb <= SIZE_MAX >> 20) {
            cache.limit = (size_t)mb << 20;
            cache.fixed = true;
        }
    }
}

/* Under mu: the byte limit in force. Unless fixed, the cache may hold as much as the program
 * has had in use at once (its peak of live cacheable buffers): a step that keeps more than the
 * default limit alive (VGG-16 at batch 64 frees ~400 MB of activations and gradients a step)
 * would otherwise fault most of them in anew every step, and memory the program has already
 * held at its peak adds nothing to its peak RSS in a repeating loop. */
static size_t limit_now(void) {
    if (cache.fixed || cache.limit == 0) return cache.limit;
    return (cache.peak < cache.limit ? cache.limit : cache.peak) + cache.extra;
}

/* Under mu, on a miss of `size`: when the byte limit evicted a buffer of that size lately, the
 * limit was too small for what the program takes back (a step's buffers are of exact sizes, and
 * those of its temporaries can add up to more than its peak in use), so unless fixed it grows
 * by the size, up to twice the peak in use. */
static void regrow(size_t size) {
    for (int i = 0; i < NGHOST; i++)
        if (cache.ghost[i] == size) {
            cache.ghost[i] = 0;
            if (!cache.fixed && cache.limit && cache.extra + size <= cache.peak) cache.extra += size;
            return;
        }
}

/* Under mu: unlinks k from both lists. */
static void unlink_block(Block *k) {
    if (k->prev) k->prev->next = k->next;
    else cache.cls[class_of(k->b.size)] = k->next;
    if (k->next) k->next->prev = k->prev;
    if (k->newer) k->newer->older = k->older;
    else cache.newest = k->older;
    if (k->older) k->older->newer = k->newer;
    else cache.oldest = k->newer;
    cache.bytes -= k->b.size;
    cache.count--;
}

/* Under mu: moves the oldest buffers onto *dead (a chain through next) until the cache holds at
 * most `limit` bytes and none older than FL_BUFFER_CACHE_AGE allocations; with `remember`, the
 * sizes evicted for the byte limit go to the ghost ring (regrow). */
static void evict(size_t limit, Block **dead, bool remember) {
    Block *k;
    while ((k = cache.oldest) &&
           (cache.bytes > limit || cache.clock - k->stamp > FL_BUFFER_CACHE_AGE)) {
        if (remember && cache.bytes > limit) {
            cache.ghost[cache.ghost_next] = k->b.size;
            cache.ghost_next = (cache.ghost_next + 1) % NGHOST;
        }
        unlink_block(k);
        k->next = *dead;
        *dead = k;
        cache.evicted++;
    }
}

static void free_chain(Block *k) {
    while (k) {
        Block *next = k->next;
        UNPOISON(k->b.data, k->b.size);
        free(k);
        k = next;
    }
}

/* A cached buffer of exactly `size` bytes (>= FL_BUFFER_CACHE_MIN), or NULL. */
static Block *take(size_t size) {
    Block *got = NULL, *dead = NULL;
    pthread_mutex_lock(&cache.mu);
    configure();
    cache.clock++;
    cache.live += size; /* taken, or malloc'd by the caller (untaken by untake on failure) */
    if (cache.live > cache.peak) cache.peak = cache.live;
    for (Block *k = cache.cls[class_of(size)]; k; k = k->next)
        if (k->b.size == size) {
            got = k;
            break;
        }
    if (got) {
        unlink_block(got);
        cache.hits++;
    } else {
        cache.misses++;
        regrow(size);
    }
    evict(limit_now(), &dead, true);
    pthread_mutex_unlock(&cache.mu);
    free_chain(dead);
    if (got) UNPOISON(got->b.data, size);
    return got;
}

/* A buffer of `size` that take did not find could not be allocated: it is not in use. */
static void untake(size_t size) {
    pthread_mutex_lock(&cache.mu);
    cache.live -= size;
    pthread_mutex_unlock(&cache.mu);
}

/* Caches k (refs 0, size >= FL_BUFFER_CACHE_MIN), or frees it when it alone exceeds the limit. */
static void put(Block *k) {
    Block *dead = NULL;
    POISON(k->b.data, k->b.size);
    pthread_mutex_lock(&cache.mu);
    configure();
    cache.live -= k->b.size;
    size_t limit = limit_now();
    if (k->b.size > limit) {
        k->next = NULL;
        dead = k;
        cache.evicted++;
    } else {
        int c = class_of(k->b.size);
        k->prev = NULL;
        k->next = cache.cls[c];
        if (k->next) k->next->prev = k;
        cache.cls[c] = k;
        k->newer = NULL;
        k->older = cache.newest;
        if (k->older) k->older->newer = k;
        else cache.oldest = k;
        cache.newest = k;
        k->stamp = cache.clock;
        cache.bytes += k->b.size;
        cache.count++;
        evict(limit, &dead, true);
    }
    pthread_mutex_unlock(&cache.mu);
    free_chain(dead);
}

size_t fl_buffer_cache_set_limit(size_t bytes) {
    Block *dead = NULL;
    pthread_mutex_lock(&cache.mu);
    configure();
    size_t old = limit_now();
    cache.limit = bytes;
    cache.fixed = true;
    evict(bytes, &dead, false);
    pthread_mutex_unlock(&cache.mu);
    free_chain(dead);
    return old;
}

void fl_buffer_cache_trim(void) {
    Block *dead = NULL;
    pthread_mutex_lock(&cache.mu);
    evict(0, &dead, false);
    pthread_mutex_unlock(&cache.mu);
    free_chain(dead);
}

FlBufferCacheStats fl_buffer_cache_stats(void) {
    pthread_mutex_lock(&cache.mu);
    configure();
    FlBufferCacheStats st = {.limit = limit_now(), .bytes = cache.bytes, .count = cache.count,
                             .hits = cache.hits, .misses = cache.misses,
                             .evicted = cache.evicted};
    pthread_mutex_unlock(&cache.mu);
    return st;
}

/* ---------------------------------------------------------------- buffers */

static FlBuffer *buffer_new(FlErr *e, size_t size, bool zero) {
    Block *k = size >= FL_BUFFER_CACHE_MIN ? take(size) : NULL;
    if (!k) {
        unsigned char *mem = size > SIZE_MAX - PAD ? NULL : malloc(size + PAD);
        if (!mem && size >= FL_BUFFER_CACHE_MIN) untake(size);
        if (size > SIZE_MAX - PAD) {
            fl_err(e, "cannot allocate a buffer of %zu bytes: too large", size);
            return NULL;
        }
        if (!mem) {
            fl_err(e, "out of memory allocating %zu bytes", size);
            return NULL;
        }
        k = (Block *)mem;
        k->b.size = size;
        uintptr_t d = ((uintptr_t)mem + sizeof(Block) + FL_TENSOR_ALIGN - 1) &
                      ~(uintptr_t)(FL_TENSOR_ALIGN - 1);
        k->b.data = mem + (d - (uintptr_t)mem);
    }
    atomic_init(&k->b.refs, 1);
    if (zero) memset(k->b.data, 0, size);
    return &k->b;
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
    if (old != 1) return;
    if (b->size >= FL_BUFFER_CACHE_MIN) put((Block *)b);
    else free(b);
}

long fl_buffer_refs(const FlBuffer *b) {
    return b ? atomic_load_explicit(&((FlBuffer *)b)->refs, memory_order_acquire) : 0;
}


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
    /* extent: the product of the dims, each at least 1, which bounds every stride and index a
     * kernel computes; an empty tensor's other dims may not multiply past int64 either */
    int64_t n = 1, extent = 1;
    for (int i = 0; i < ndim; i++) {
        if (ne[i] < 0)
            return fl_err(e, "shape %s has a negative dimension", fl_shape_str(ndim, ne).s);
        if (__builtin_mul_overflow(extent, ne[i] ? ne[i] : 1, &extent))
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
    case FL_DT_FLOAT16: return fl_half_to_double(((const uint16_t *)p)[i]);
    case FL_DT_INT8: return ((const int8_t *)p)[i];
    case FL_DT_UINT8: return ((const uint8_t *)p)[i];
    case FL_DT_COUNT: break;
    }
    FL_UNREACHABLE();
}

int64_t fl_tensor_get_int(const FlTensor *t, int64_t i) {
    const void *p = fl_tensor_data(t);
    FL_ASSERT(p && i >= 0 && i < fl_tensor_numel(t));
    switch (t->dtype) {
    case FL_DT_FLOAT32: return fl_sat_i64(((const float *)p)[i]);
    case FL_DT_FLOAT64: return fl_sat_i64(((const double *)p)[i]);
    case FL_DT_INT32: return ((const int32_t *)p)[i];
    case FL_DT_INT64: return ((const int64_t *)p)[i];
    case FL_DT_BOOL: return ((const uint8_t *)p)[i] != 0;
    case FL_DT_FLOAT16: return fl_sat_i64(fl_half_to_double(((const uint16_t *)p)[i]));
    case FL_DT_INT8: return ((const int8_t *)p)[i];
    case FL_DT_UINT8: return ((const uint8_t *)p)[i];
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
    case FL_DT_INT32: ((int32_t *)p)[i] = fl_sat_i32(v); return;
    case FL_DT_INT64: ((int64_t *)p)[i] = fl_sat_i64(v); return;
    case FL_DT_BOOL: ((uint8_t *)p)[i] = v != 0; return;
    case FL_DT_FLOAT16: ((uint16_t *)p)[i] = fl_half_from_double(v); return;
    case FL_DT_INT8: ((int8_t *)p)[i] = fl_sat_i8(v); return;
    case FL_DT_UINT8: ((uint8_t *)p)[i] = fl_sat_u8(v); return;
    case FL_DT_COUNT: break;
    }
    FL_UNREACHABLE();
}
