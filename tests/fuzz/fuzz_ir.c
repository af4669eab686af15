/* fuzz_ir.c: libFuzzer target for the IR reader (compiler/ir: fl_ir_decode).
 *
 * Any byte string must decode to a valid bundle or plan, or fail with a message; never crash,
 * leak or hang. Whatever decodes is also shown, drawn (dot), cloned and encoded again, and the
 * oracle checks that the encoding decodes and re-encodes to the same bytes (the reader accepts
 * everything the writer writes, and the round trip is exact).
 *
 * Built with clang -fsanitize=fuzzer,address,undefined when FL_FUZZ is on (tests/fuzz/ir.cmake);
 * fuzz_ir_main.c drives the same function over the corpus in an ordinary build
 * (test_fuzz_ir_corpus).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_reencode(const uint8_t *enc, size_t n, bool is_plan) {
    FlBundle *b = NULL;
    FlPlan *p = NULL;
    FlErr e;
    if (fl_ir_decode(enc, n, &b, &p, &e) != FL_OK)
        fl_panic(__FILE__, __LINE__, "re-decoding what was encoded failed: %s", e.msg);
    FL_ASSERT(is_plan ? p != NULL : b != NULL);
    size_t n2;
    uint8_t *enc2 = is_plan ? fl_ir_encode_plan(p, &n2) : fl_ir_encode_bundle(b, &n2);
    FL_ASSERT(n2 == n && memcmp(enc, enc2, n) == 0);
    free(enc2);
    fl_ir_bundle_free(b);
    fl_ir_plan_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FlBundle *b = NULL;
    FlPlan *p = NULL;
    FlErr e;
    e.msg[0] = 0;
    if (fl_ir_decode(data, size, &b, &p, &e) != FL_OK) {
        FL_ASSERT(b == NULL && p == NULL);
        FL_ASSERT(strncmp(e.msg, "input ", 6) == 0);
        return 0;
    }
    FL_ASSERT((b != NULL) != (p != NULL));
    FlBuf out = {0};
    size_t n;
    uint8_t *enc;
    if (b) {
        FL_ASSERT(fl_ir_validate_bundle(b, &e) == FL_OK);
        fl_ir_show_bundle(b, &out);
        fl_ir_dot_bundle(b, &out);
        FlBundle *c = fl_ir_bundle_clone(b);
        FlBuf out2 = {0};
        fl_ir_show_bundle(c, &out2);
        fl_ir_dot_bundle(c, &out2);
        FL_ASSERT(out.len == out2.len && memcmp(fl_buf_str(&out), fl_buf_str(&out2), out.len) == 0);
        fl_buf_free(&out2);
        fl_ir_bundle_free(c);
        enc = fl_ir_encode_bundle(b, &n);
        check_reencode(enc, n, false);
    } else {
        FL_ASSERT(fl_ir_validate_plan(p, &e) == FL_OK);
        fl_ir_show_plan(p, &out);
        fl_ir_dot_plan(p, &out);
        enc = fl_ir_encode_plan(p, &n);
        check_reencode(enc, n, true);
    }
    free(enc);
    fl_buf_free(&out);
    fl_ir_bundle_free(b);
    fl_ir_plan_free(p);
    return 0;
}
