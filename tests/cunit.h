/* cunit.h: the one CUnit runner the test programs share: a table of cases, one suite, verbose
 * output, exit status 1 when any assertion or test failed. */
#ifndef FL_TESTS_CUNIT_H
#define FL_TESTS_CUNIT_H

#include <CUnit/Basic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Like CU_ASSERT_STRING_EQUAL, but shows both strings when they differ. */
#define CHECK_STR(actual, expected)                                                                \
    do {                                                                                           \
        const char *a_ = (actual), *x_ = (expected);                                               \
        bool eq_ = a_ && x_ && strcmp(a_, x_) == 0;                                                \
        if (!eq_)                                                                                  \
            fprintf(stderr, "\n%s:%d: got:\n%s\n--- expected:\n%s\n---\n", __FILE__, __LINE__,      \
                    a_ ? a_ : "(null)", x_ ? x_ : "(null)");                                       \
        CU_ASSERT(eq_);                                                                            \
    } while (0)

typedef struct FlTestCase {
    const char *name;
    void (*fn)(void);
} FlTestCase;

/* Runs `cases` as one suite (setup/teardown may be NULL); returns the process exit status. */
static inline int fl_test_run(const char *suite, int (*setup)(void), int (*teardown)(void),
                              const FlTestCase *cases, size_t n) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 1;
    CU_pSuite s = CU_add_suite(suite, setup, teardown);
    if (!s) {
        CU_cleanup_registry();
        return 1;
    }
    for (size_t i = 0; i < n; i++) CU_add_test(s, cases[i].name, cases[i].fn);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}

#endif
