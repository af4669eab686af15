/* fuzz_eval.c: libFuzzer target for the whole front end: the input is a .fl program, which is
 * scanned, parsed, evaluated against the real stdlib (so it builds IR: layers, backward,
 * optimizers, runtime control flow, channels), verified, and, when it compiles, encoded and
 * decoded again. Beyond the sanitizers it checks the compiler's promises: it returns an error
 * count that matches the diagnostics printed, and a program it accepts is a valid bundle that
 * survives a round trip through the file format.
 * fuzz_driver.c runs the same function over corpus files as an ordinary test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/ir.h"
#include "lang/eval.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what) {
    if (ok) return;
    fprintf(stderr, "fuzz_eval: broken promise: %s\n", what);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 64 * 1024) return 0; /* long inputs only slow the search down */
    FlCompileOptions opt = {0};
    FlBundle *b = NULL;
    FlBuf diag = {0};
    /* the virtual file lives in examples/, so `from model import ...` finds a real module */
    int n = fl_compile_source("examples/fuzz.fl", (const char *)data, size, &opt, &b, &diag);
    check((n == 0) == (b != NULL), "a bundle exactly when there are no errors");
    check(n == 0 || diag.len > 0, "errors are printed");
    if (b) {
        FlErr e;
        check(fl_ir_validate_bundle(b, &e) == FL_OK, "an accepted program is a valid bundle");
        size_t len;
        uint8_t *bytes = fl_ir_encode_bundle(b, &len);
        FlBundle *b2 = NULL;
        FlPlan *p2 = NULL;
        check(fl_ir_decode(bytes, len, &b2, &p2, &e) == FL_OK && b2 && !p2, "the bundle decodes again");
        fl_ir_bundle_free(b2);
        free(bytes);
        fl_ir_bundle_free(b);
    }
    fl_buf_free(&diag);
    return 0;
}
