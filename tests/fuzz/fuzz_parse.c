/* fuzz_parse.c: libFuzzer target for the front end: the input is the text of a .fl file, which is
 * scanned and parsed; a tree without errors is also dumped. Beyond the sanitizers it checks the
 * parser's promises: an error count matches printed diagnostics, a tree without errors keeps
 * its spans inside the file and its depth within FL_AST_MAX_DEPTH.
 * fuzz_driver.c runs the same function over corpus files as an ordinary test. */
#include "lang/ast.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what) {
    if (ok) return;
    fprintf(stderr, "fuzz_parse: broken promise: %s\n", what);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fl_xmalloc(size + 1);
    if (size) memcpy(text, data, size);
    text[size] = 0;
    FlSources src;
    fl_sources_init(&src);
    uint32_t id = fl_sources_add_take(&src, "fuzz.fl", text, size);
    FlDiag diag;
    fl_diag_init(&diag, &src);
    FlArena arena;
    fl_arena_init(&arena);
    FlInterner in;
    fl_intern_init(&in);
    FlAstModule m;
    int n = fl_parse(&arena, &in, &diag, id, &m);
    check(n == diag.nerrors, "fl_parse returns the number of errors");
    check((n == 0) == (diag.out.len == 0), "errors are printed, and only errors");
    if (n == 0) {
        for (size_t i = 0; i < m.body.len; i++) {
            const FlAst *s = m.body.items[i];
            check(s && s->span.start <= s->span.end && s->span.end <= size, "statement spans lie in the file");
            check(s->depth >= 1 && s->depth <= FL_AST_MAX_DEPTH, "depth within the limit");
        }
        FlBuf out = {0};
        fl_ast_dump(&m, &out);
        check((out.len == 0) == (m.body.len == 0), "the dump shows the statements");
        fl_buf_free(&out);
    }
    fl_intern_fini(&in);
    fl_arena_fini(&arena);
    fl_diag_fini(&diag);
    fl_sources_fini(&src);
    return 0;
}
