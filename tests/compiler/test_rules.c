/* Tests of compiler/ir/rules: the block rule and the names every layer shares. */
#include "compiler/ir/rules.h"

#include <string.h>

#include "tests/cunit.h"

static void test_block_count(void) {
    /* min(pservers, numel / min_block_size, dim0), at least 1 */
    CU_ASSERT_EQUAL(fl_rule_block_count(1000, 1000 * 100, 2, 8192), 2);
    CU_ASSERT_EQUAL(fl_rule_block_count(1000, 1000 * 100, 20, 8192), 12);
    CU_ASSERT_EQUAL(fl_rule_block_count(10, 10, 3, 8192), 1);
    CU_ASSERT_EQUAL(fl_rule_block_count(3, 3 * 100000, 8, 8192), 3);
    CU_ASSERT_EQUAL(fl_rule_block_count(0, 0, 4, 8192), 1);
    CU_ASSERT_EQUAL(fl_rule_block_count(100, 100, 0, 1), 1);
    CU_ASSERT_EQUAL(fl_rule_block_count(1000, 8192 * 4, 8, 0), 4); /* 0: Fluid's default */
    /* no cap above 64 pservers */
    CU_ASSERT_EQUAL(fl_rule_block_count(1000, 1000, 100, 1), 100);
    CU_ASSERT_EQUAL(fl_rule_block_count(5000, 5000 * 64, 1000, 1), 1000);
}

static void test_block_rows(void) {
    const int64_t dims[] = {1, 7, 100, 1001, 65536};
    const int64_t counts[] = {1, 2, 3, 7, 64, 65, 100};
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++)
        for (size_t j = 0; j < sizeof counts / sizeof *counts; j++) {
            int64_t dim0 = dims[i], n = counts[j];
            if (n > dim0) continue;
            int64_t row0 = 0;
            for (int64_t k = 0; k < n; k++) {
                int64_t r = fl_rule_block_rows(dim0, n, k);
                CU_ASSERT_EQUAL(fl_rule_block_row0(dim0, n, k), row0);
                CU_ASSERT(r == dim0 / n || r == dim0 / n + 1);
                if (k > 0) CU_ASSERT(r <= fl_rule_block_rows(dim0, n, k - 1)); /* earlier take the extra */
                row0 += r;
            }
            CU_ASSERT_EQUAL(row0, dim0);
        }
}

static void test_names(void) {
    FlArena a;
    fl_arena_init(&a);
    CU_ASSERT_STRING_EQUAL(fl_rule_block_name(&a, "fc_0.w_0@GRAD", 12), "fc_0.w_0@GRAD.block12");
    CU_ASSERT_STRING_EQUAL(fl_rule_trainer_name(&a, "w@GRAD.block0", 3), "w@GRAD.block0.trainer_3");
    CU_ASSERT_STRING_EQUAL(fl_rule_grad_name(&a, "w"), "w@GRAD");
    int64_t k = -1;
    CU_ASSERT_EQUAL(fl_rule_block_base_len("fc_0.w_0@GRAD.block12", &k), strlen("fc_0.w_0@GRAD"));
    CU_ASSERT_EQUAL(k, 12);
    CU_ASSERT_EQUAL(fl_rule_block_base_len("fc_0.w_0", NULL), 0);
    CU_ASSERT_EQUAL(fl_rule_block_base_len("w.block", NULL), 0);
    CU_ASSERT_EQUAL(fl_rule_block_base_len("w.block1x", NULL), 0);
    CU_ASSERT_EQUAL(fl_rule_block_base_len(".block1", NULL), 0);
    CU_ASSERT(fl_rule_is_trainer_copy("g.trainer_0", "g"));
    CU_ASSERT(fl_rule_is_trainer_copy("g.trainer_17", "g"));
    CU_ASSERT(!fl_rule_is_trainer_copy("g.trainer_", "g"));
    CU_ASSERT(!fl_rule_is_trainer_copy("g.trainer_1.x", "g"));
    CU_ASSERT(!fl_rule_is_trainer_copy("h.trainer_1", "g"));
    CU_ASSERT(fl_rule_is_empty(""));
    CU_ASSERT(fl_rule_is_empty("@EMPTY@"));
    CU_ASSERT(!fl_rule_is_empty("x"));
    CU_ASSERT(fl_rule_is_grad("x@GRAD"));
    CU_ASSERT(!fl_rule_is_grad("@GRAD"));
    CU_ASSERT(!fl_rule_is_grad("x@GRAD.block0"));
    CU_ASSERT(fl_rule_has_grad("x@GRAD.block0"));
    fl_arena_fini(&a);
}

int main(void) {
    static const FlTestCase cases[] = {
        {"block_count", test_block_count},
        {"block_rows", test_block_rows},
        {"names", test_names},
    };
    return fl_test_run("rules", NULL, NULL, cases, sizeof cases / sizeof *cases);
}
