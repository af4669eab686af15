/* parse_tool.c: parses .fl files and prints their diagnostics (stderr) and AST dump (stdout).
 * A debugging aid for the lang module:  fl_parse_tool FILE.fl...  (exit 1 if any had errors). */
#include "lang/ast.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        FlErr e;
        size_t len;
        char *text = fl_read_file(argv[i], &len, &e);
        if (!text) {
            fprintf(stderr, "%s\n", e.msg);
            bad = 1;
            continue;
        }
        FlSources src;
        fl_sources_init(&src);
        uint32_t id = fl_sources_add_take(&src, argv[i], text, len);
        FlDiag diag;
        fl_diag_init(&diag, &src);
        FlArena arena;
        fl_arena_init(&arena);
        FlInterner in;
        fl_intern_init(&in);
        FlAstModule m;
        int n = fl_parse(&arena, &in, &diag, id, &m);
        fputs(fl_buf_str(&diag.out), stderr);
        if (n == 0) {
            FlBuf out = {0};
            fl_ast_dump(&m, &out);
            fputs(fl_buf_str(&out), stdout);
            fl_buf_free(&out);
        }
        bad |= n != 0;
        fl_intern_fini(&in);
        fl_arena_fini(&arena);
        fl_diag_fini(&diag);
        fl_sources_fini(&src);
    }
    return bad;
}
