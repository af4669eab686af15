/* test_buffer.c: the buffer cache (runtime/tensor.c): a released large buffer is reused by the
 * next allocation of its size, newest first, zero-filled by fl_buffer_new; small buffers bypass
 * it; its byte limit and age send buffers back to malloc; many threads allocating, handing over
 * and releasing buffers keep every buffer's contents their own (run under TSan: `concurrency`).
 * The cache is process state, so each test starts from an empty cache with a known limit. */
#include <pthread.h>
#include <stdatomic.h>

#include "tests/runtime/kernels/kt.h"

#if defined(__SANITIZE_ADDRESS__)
#define KT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KT_ASAN 1
#endif
#endif
#ifdef KT_ASAN
#include <sanitizer/asan_interface.h>
#endif

enum { KIB = 1024 };

static void reset(size_t limit) {
    fl_buffer_cache_set_limit(limit);
    fl_buffer_cache_trim();
}

static FlBuffer *get(size_t size, bool zero) {
    FlErr e;
    FlBuffer *b = zero ? fl_buffer_new(&e, size) : fl_buffer_new_uninit(&e, size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_EQUAL(b->size, size);
    CU_ASSERT_EQUAL(fl_buffer_refs(b), 1);
    CU_ASSERT_EQUAL((uintptr_t)b->data % FL_TENSOR_ALIGN, 0);
    return b;
}

static void test_buffer_reuse(void) {
    reset(FL_BUFFER_CACHE_LIMIT);
    FlBufferCacheStats s0 = fl_buffer_cache_stats();
    CU_ASSERT_EQUAL(s0.bytes, 0);
    CU_ASSERT_EQUAL(s0.count, 0);
    FlBuffer *a = get(100 * KIB, false);
    unsigned char *data = a->data;
    memset(data, 7, 100 * KIB);
    fl_buffer_retain(a);
    fl_buffer_release(a); /* not the last release: stays a's */
    CU_ASSERT_EQUAL(fl_buffer_cache_stats().count, 0);
    fl_buffer_release(a);
    FlBufferCacheStats s1 = fl_buffer_cache_stats();
    CU_ASSERT_EQUAL(s1.count, 1);
    CU_ASSERT_EQUAL(s1.bytes, 100 * KIB);
#ifdef KT_ASAN
    CU_ASSERT(__asan_address_is_poisoned(data)); /* a use after the last release is reported */
#endif
    /* another size does not take it; the same size does */
    FlBuffer *other = get(100 * KIB + 4, false);
    CU_ASSERT_PTR_NOT_EQUAL(other, a);
    FlBuffer *b = get(100 * KIB, false);
    CU_ASSERT_PTR_EQUAL(b, a);
    CU_ASSERT_PTR_EQUAL(b->data, data);
    FlBufferCacheStats s2 = fl_buffer_cache_stats();
    CU_ASSERT_EQUAL(s2.hits, s1.hits + 1);
    CU_ASSERT_EQUAL(s2.misses, s1.misses + 1);
    CU_ASSERT_EQUAL(s2.count, 0);
    CU_ASSERT_EQUAL(s2.bytes, 0);
    fl_buffer_release(b);
    fl_buffer_release(other);
    /* newest first: the buffer released last is reused first */
    FlBuffer *x = get(64 * KIB, false), *y = get(64 * KIB, false);
    fl_buffer_release(x);
    fl_buffer_release(y);
    FlBuffer *y2 = get(64 * KIB, false), *x2 = get(64 * KIB, false);
    CU_ASSERT_PTR_EQUAL(y2, y);
    CU_ASSERT_PTR_EQUAL(x2, x);
    fl_buffer_release(x2);
    fl_buffer_release(y2);
    /* a buffer below the threshold goes straight back to malloc */
    size_t before = fl_buffer_cache_stats().count;
    fl_buffer_release(get(FL_BUFFER_CACHE_MIN - 1, false));
    CU_ASSERT_EQUAL(fl_buffer_cache_stats().count, before);
    fl_buffer_release(get(FL_BUFFER_CACHE_MIN, false));
    CU_ASSERT_EQUAL(fl_buffer_cache_stats().count, before + 1);
    fl_buffer_cache_trim();
    CU_ASSERT_EQUAL(fl_buffer_cache_stats().count, 0);
    CU_ASSERT_EQUAL(fl_buffer_cache_stats().bytes, 0);
}

static bool all_zero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return false;
    return true;
}

static void test_buffer_zero_fill(void) {
    reset(FL_BUFFER_CACHE_LIMIT);
    const size_t n = 48 * KIB + 12;
    FlBuffer *a = get(n, false);
    memset(a->data, 0xab, n);
    fl_buffer_release(a);
    FlBuffer *b = get(n, true); /* the same buffer, zero-filled again */
    CU_ASSERT_PTR_EQUAL(b, a);
    CU_ASSERT(all_zero(b->data, n));
    memset(b->data, 0xcd, n);
    fl_buffer_release(b);
    /* through the tensor API: [12300] float32 = 49200 bytes, not n; [3, 4100] float32 is */
    FlErr e;
    FlTensor t = FL_TENSOR_INIT;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &t, FL_DT_FLOAT32, 1, (int64_t[]){12300}), FL_OK);
    CU_ASSERT_PTR_NOT_EQUAL(t.buf, a);
    fl_tensor_fini(&t);
    FlBuffer *u = get(n, false); /* uninit: takes it as is */
    CU_ASSERT_PTR_EQUAL(u, a);
    CU_ASSERT_EQUAL(u->data[0], 0xcd);
    fl_buffer_release(u);
    int64_t ne[2] = {1, (int64_t)n};
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &t, FL_DT_BOOL, 2, ne), FL_OK);
    CU_ASSERT_PTR_EQUAL(t.buf, a);
    CU_ASSERT(all_zero(fl_tensor_data(&t), n));
    fl_tensor_fini(&t);
    fl_buffer_cache_trim();
}

static void test_buffer_limit(void) {
    reset(256 * KIB);
    FlBufferCacheStats s0 = fl_buffer_cache_stats();
    CU_ASSERT_EQUAL(s0.limit, 256 * KIB);
    FlBuffer *b[3];
    for (int i = 0; i < 3; i++) b[i] = get(128 * KIB, false);
    for (int i = 0; i < 3; i++) fl_buffer_release(b[i]);
    /* past the limit the oldest (b[0]) went back to malloc */
    FlBufferCacheStats s1 = fl_buffer_cache_stats();
    CU_ASSERT_EQUAL(s1.count, 2);
    CU_ASSERT_EQUAL(s1.bytes, 256 * KIB);
    CU_ASSERT_EQUAL(s1.evicted, s0.evicted + 1);
    FlBuffer *c2 = get(128 * KIB, false), *c1 = get(128 * KIB, false);
    CU_ASSERT_PTR_EQUAL(c2, b[2]);
    CU_ASSERT_PTR_EQUAL(c1, b[1]);
    FlBufferCacheStats s2 = fl_buffer_cache_stats();
    CU_ASSERT_EQUAL(s2.hits, s1.hits + 2);
    CU_ASSERT_EQUAL(s2.count, 0);
    /* a buffer larger than the whole limit is not cached, and evicts nothing */
    fl_buffer_release(c1);
    fl_buffer_release(get(512 * KIB, false));
    FlBufferCacheStats s3 = fl_buffer_cache_stats();
    CU_ASSERT_EQUAL(s3.count, 1);
    CU_ASSERT_EQUAL(s3.bytes, 128 * KIB);
    CU_ASSERT_EQUAL(s3.evicted, s2.evicted + 1);
    /* lowering the limit frees what is past it; 0 turns the cache off */
    fl_buffer_release(c2);
    CU_ASSERT_EQUAL(fl_buffer_cache_set_limit(128 * KIB), 256 * KIB);
    CU_ASSERT_EQUAL(fl_buffer_cache_stats().bytes, 128 * KIB);
    CU_ASSERT_EQUAL(fl_buffer_cache_set_limit(0), 128 * KIB);
    CU_ASSERT_EQUAL(fl_buffer_cache_stats().count, 0);
    fl_buffer_release(get(128 * KIB, false));
    CU_ASSERT_EQUAL(fl_buffer_cache_stats().count, 0);
    CU_ASSERT_EQUAL(fl_buffer_cache_stats().bytes, 0);
    fl_buffer_cache_set_limit(FL_BUFFER_CACHE_LIMIT);
}

static void test_buffer_age(void) {
    reset(FL_BUFFER_CACHE_LIMIT);
    fl_buffer_release(get(40 * KIB, false)); /* released, then never asked for again */
    FlBufferCacheStats s0 = fl_buffer_cache_stats();
    CU_ASSERT_EQUAL(s0.count, 1);
    /* allocations of another size: the hot buffer is reused, the stale one ages out */
    for (int i = 0; i < FL_BUFFER_CACHE_AGE; i++) fl_buffer_release(get(20 * KIB, false));
    CU_ASSERT_EQUAL(fl_buffer_cache_stats().count, 2);
    fl_buffer_release(get(20 * KIB, false));
    FlBufferCacheStats s1 = fl_buffer_cache_stats();
    CU_ASSERT_EQUAL(s1.count, 1);
    CU_ASSERT_EQUAL(s1.bytes, 20 * KIB);
    CU_ASSERT_EQUAL(s1.evicted, s0.evicted + 1);
    CU_ASSERT_EQUAL(s1.misses, s0.misses + 1); /* only the first 20 KiB one came from malloc */
    fl_buffer_cache_trim();
}

/* Stress: threads allocate buffers of a few sizes, stamp every byte with a tag, and swap them
 * through shared slots, so buffers are released (into the cache) by other threads than their
 * allocators and reused by yet others. A buffer's bytes must still be its tag when it is taken
 * out of a slot, and fl_buffer_new's must be zero. */
enum { THREADS = 4, SLOTS = 8, ROUNDS = 3000 };
static _Atomic(FlBuffer *) slots[SLOTS];
static atomic_int bad;

static bool holds(const FlBuffer *b, unsigned char tag) {
    for (size_t i = 0; i < b->size; i += 61)
        if (b->data[i] != tag) return false;
    return b->data[b->size - 1] == tag;
}

static void *stress_worker(void *arg) {
    unsigned id = (unsigned)(uintptr_t)arg;
    FlRng r;
    fl_rng_init(&r, 100 + id);
    static const size_t sizes[] = {16 * KIB, 20 * KIB + 8, 64 * KIB, 100 * KIB, 1000};
    for (int i = 0; i < ROUNDS; i++) {
        size_t n = sizes[fl_rng_next(&r) % FL_ARRAY_LEN(sizes)];
        bool zero = fl_rng_next(&r) % 2;
        FlErr e;
        FlBuffer *b = zero ? fl_buffer_new(&e, n) : fl_buffer_new_uninit(&e, n);
        if (!b || (zero && !all_zero(b->data, n))) atomic_fetch_add(&bad, 1);
        if (!b) continue;
        unsigned char tag = (unsigned char)(1 + fl_rng_next(&r) % 250);
        memset(b->data, tag, n);
        if (fl_rng_next(&r) % 4 == 0) { /* a second holder, released right away */
            fl_buffer_retain(b);
            fl_buffer_release(b);
        }
        FlBuffer *old = atomic_exchange(&slots[fl_rng_next(&r) % SLOTS], b);
        if (old) {
            if (!holds(old, old->data[0])) atomic_fetch_add(&bad, 1);
            fl_buffer_release(old);
        }
    }
    return NULL;
}

static void test_buffer_threads(void) {
    reset(512 * KIB); /* small: the limit evicts while threads allocate */
    pthread_t th[THREADS];
    for (unsigned i = 0; i < THREADS; i++)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, stress_worker, (void *)(uintptr_t)i), 0);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    CU_ASSERT_EQUAL(atomic_load(&bad), 0);
    for (int i = 0; i < SLOTS; i++) {
        FlBuffer *b = atomic_exchange(&slots[i], NULL);
        if (b) CU_ASSERT(holds(b, b->data[0]));
        fl_buffer_release(b);
    }
    FlBufferCacheStats s = fl_buffer_cache_stats();
    CU_ASSERT(s.bytes <= 512 * KIB);
    CU_ASSERT(s.hits > 0);
    CU_ASSERT(s.evicted > 0);
    fl_buffer_cache_set_limit(FL_BUFFER_CACHE_LIMIT);
    fl_buffer_cache_trim();
}

int main(void) {
    static const KtCase cases[] = {
        KT_TEST(test_buffer_reuse), KT_TEST(test_buffer_zero_fill), KT_TEST(test_buffer_limit),
        KT_TEST(test_buffer_age),   KT_TEST(test_buffer_threads),
    };
    return kt_run("buffers and their cache", cases, (int)FL_ARRAY_LEN(cases));
}
