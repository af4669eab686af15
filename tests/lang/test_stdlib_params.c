/* test_stdlib_params.c: no stdlib function accepts an argument and ignores it.
 *
 * Every parameter of every function the stdlib defines (module-level defs and the methods of its
 * classes) must be read somewhere in the function's body: to honour it, to pass it on, or to
 * reject it with a located error (_core.unsupported and friends read it too). A parameter the
 * body never names is an argument a user's program can pass and that silently changes nothing;
 * this test lists each one as file:line: function 'f' parameter 'p' and fails.
 *
 * A function whose body starts by returning _core.error(...) rejects every call, so all of its
 * parameters count as rejected (an API kept by name only, e.g. one not supported at all).
 *
 * The walk reads the tree through its S-expression dump (lang/ast.c), so a new node kind needs no
 * change here: a use of p is the token "(name p)" in the dump of the function's body.
 *
 * usage: test_stdlib_params STDLIB_DIR      prints "N passed, N failed" (one per function)
 */
#include "lang/ast.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Count {
    int pass, fail;
} Count;

static bool body_uses(const FlAstList *body, const char *name) {
    FlAstModule m = {.file = 0, .body = *body};
    FlBuf out = {0};
    fl_ast_dump(&m, &out);
    FlBuf tok = {0};
    fl_buf_printf(&tok, "(name %s)", name);
    bool used = strstr(fl_buf_str(&out), fl_buf_str(&tok)) != NULL;
    fl_buf_free(&tok);
    fl_buf_free(&out);
    return used;
}

static bool rejects_every_call(const FlAstList *body) {
    if (body->len == 0) return false;
    FlAstList first = {body->items, 1};
    FlAstModule m = {.file = 0, .body = first};
    FlBuf out = {0};
    fl_ast_dump(&m, &out);
    bool r = strncmp(fl_buf_str(&out), "(return (call (attr (name _core) error)", 39) == 0;
    fl_buf_free(&out);
    return r;
}

static void check_def(const FlDiag *diag, const FlAst *d, const char *owner, Count *c) {
    bool ok = true;
    if (rejects_every_call(&d->def.body)) {
        c->pass++;
        return;
    }
    for (size_t i = 0; i < d->def.nparams; i++) {
        const FlAstParam *p = &d->def.params[i];
        if (owner && i == 0) continue; /* self */
        if (body_uses(&d->def.body, p->name)) continue;
        int line, col;
        fl_sources_linecol(diag->sources, p->span.file, p->span.start, &line, &col);
        printf("%s:%d:%d: function '%s%s%s' parameter '%s' is never read: honour it or reject it\n",
               fl_sources_file(diag->sources, p->span.file)->path, line, col, owner ? owner : "",
               owner ? "." : "", d->def.name, p->name);
        ok = false;
    }
    if (ok) c->pass++;
    else c->fail++;
}

static void check_body(const FlDiag *diag, const FlAstList *body, const char *owner, Count *c);

static void check_stmt(const FlDiag *diag, const FlAst *s, const char *owner, Count *c) {
    if (s->kind == FL_AST_DEF) check_def(diag, s, owner, c);
    if (s->kind == FL_AST_CLASS) check_body(diag, &s->cls.body, s->cls.name, c); /* its methods */
}

static void check_body(const FlDiag *diag, const FlAstList *body, const char *owner, Count *c) {
    for (size_t i = 0; i < body->len; i++) check_stmt(diag, body->items[i], owner, c);
}

static int check_file(const char *path, Count *c) {
    FlErr e;
    size_t len;
    char *text = fl_read_file(path, &len, &e);
    if (!text) {
        printf("%s\n", e.msg);
        return 1;
    }
    FlSources src;
    fl_sources_init(&src);
    uint32_t id = fl_sources_add_take(&src, path, text, len);
    FlDiag diag;
    fl_diag_init(&diag, &src);
    FlArena arena;
    fl_arena_init(&arena);
    FlInterner in;
    fl_intern_init(&in);
    FlAstModule m;
    int bad = fl_parse(&arena, &in, &diag, id, &m) != 0;
    if (bad) fputs(fl_buf_str(&diag.out), stdout);
    else check_body(&diag, &m.body, NULL, c);
    fl_intern_fini(&in);
    fl_arena_fini(&arena);
    fl_diag_fini(&diag);
    fl_sources_fini(&src);
    return bad;
}

/* Every .fl file under dir, in name order (so the listing is stable). */
static int walk(const char *dir, Count *c) {
    struct dirent **ents;
    int n = scandir(dir, &ents, NULL, alphasort);
    if (n < 0) {
        printf("cannot read '%s'\n", dir);
        return 1;
    }
    int bad = 0;
    for (int i = 0; i < n; i++) {
        const char *nm = ents[i]->d_name;
        FlBuf path = {0};
        fl_buf_printf(&path, "%s/%s", dir, nm);
        size_t l = strlen(nm);
        if (nm[0] != '.') {
            if (ents[i]->d_type == DT_DIR) bad |= walk(fl_buf_str(&path), c);
            else if (l > 3 && strcmp(nm + l - 3, ".fl") == 0) bad |= check_file(fl_buf_str(&path), c);
        }
        fl_buf_free(&path);
        free(ents[i]);
    }
    free(ents);
    return bad;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_stdlib_params STDLIB_DIR\n");
        return 2;
    }
    Count c = {0, 0};
    int bad = walk(argv[1], &c);
    printf("%d passed, %d failed\n", c.pass, c.fail);
    return bad || c.fail || c.pass == 0;
}
