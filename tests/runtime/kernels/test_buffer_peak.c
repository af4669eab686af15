/* test_buffer_peak.c: the buffer cache's default limit follows the process's peak of large
 * buffers in use (runtime/tensor.c): a step that holds more than FL_BUFFER_CACHE_LIMIT at once
 * gets all of its buffers back the next step (no malloc, no page faults), while a limit set by
 * fl_buffer_cache_set_limit stays fixed. Its own process: the default holds only until a test
 * sets a limit (test_buffer.c sets one in every test). */
#include "tests/runtime/kernels/kt.h"

enum { NBUF = 5, MIB = 1 << 20 };

/* One "step": NBUF buffers of `size` in use at once, then all released. Returns the misses. */
static uint64_t step(size_t size) {
    FlErr e;
    FlBuffer *b[NBUF];
    uint64_t m0 = fl_buffer_cache_stats().misses;
    for (int i = 0; i < NBUF; i++) {
        b[i] = fl_buffer_new_uninit(&e, size);
        CU_ASSERT_PTR_NOT_NULL_FATAL(b[i]);
    }
    for (int i = 0; i < NBUF; i++) fl_buffer_release(b[i]);
    return fl_buffer_cache_stats().misses - m0;
}

static void test_buffer_peak_limit(void) {
    size_t size = FL_BUFFER_CACHE_LIMIT / 2 + MIB; /* NBUF of them: well past the default */
    FlBufferCacheStats s0 = fl_buffer_cache_stats();
    CU_ASSERT_EQUAL(s0.limit, FL_BUFFER_CACHE_LIMIT);
    CU_ASSERT_EQUAL(step(size), NBUF); /* the first step mallocs them */
    FlBufferCacheStats s1 = fl_buffer_cache_stats();
    CU_ASSERT_EQUAL(s1.count, NBUF); /* all kept: the limit grew to the peak in use */
    CU_ASSERT_EQUAL(s1.bytes, NBUF * size);
    CU_ASSERT(s1.limit >= NBUF * size);
    CU_ASSERT_EQUAL(step(size), 0); /* the next steps take them back */
    CU_ASSERT_EQUAL(step(size), 0);
    CU_ASSERT_EQUAL(fl_buffer_cache_stats().evicted, s0.evicted);
    /* a limit set by hand is fixed: the same step now overflows it and frees the oldest */
    CU_ASSERT_EQUAL(fl_buffer_cache_set_limit(FL_BUFFER_CACHE_LIMIT), s1.limit);
    CU_ASSERT(fl_buffer_cache_stats().bytes <= FL_BUFFER_CACHE_LIMIT);
    step(size);
    FlBufferCacheStats s2 = fl_buffer_cache_stats();
    CU_ASSERT_EQUAL(s2.limit, FL_BUFFER_CACHE_LIMIT);
    CU_ASSERT(s2.bytes <= FL_BUFFER_CACHE_LIMIT);
    CU_ASSERT(s2.evicted > s0.evicted);
    fl_buffer_cache_trim();
}

int main(void) {
    static const KtCase cases[] = {KT_TEST(test_buffer_peak_limit)};
    return kt_run("the buffer cache's limit follows the peak in use", cases, (int)FL_ARRAY_LEN(cases));
}
