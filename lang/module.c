/* module.c: finding, loading and running .fl modules (import).
 *
 * `import a.b` loads the parent package first; a module is looked for as a/b.fl or
 * a/b/__init__.fl, in the stdlib directory for the package `fluid` and its submodules, next to
 * the importing file for user modules (then the other place). fl_ev_run_file parses a module
 * and runs its top level in a fresh global scope.
 *
 * Invariants: each module is loaded once per compilation and cached by dotted name in
 * c->modules (a cycle through user modules is a diagnostic; stdlib modules may import each
 * other while loading); stdlib files are shown as <stdlib>/..., so diagnostics do not depend
 * on where the stdlib is installed; errors in a stdlib module's top level point at the import.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lang/eval_impl.h"

/* Runs a module file's top level. */
Module *fl_ev_run_file(Ctx *c, const char *name, const char *path, char *text, size_t len, bool is_stdlib) {
    uint32_t fid = fl_sources_add_take(&c->sources, path, text, len);
    FlAstModule am;
    int nerr = fl_parse(&c->arena, &c->in, &c->diag, fid, &am);
    Module *m = fl_arena_alloc(&c->arena, sizeof *m);
    m->name = fl_intern_str(&c->in, name);
    m->path = fl_arena_strdup(&c->arena, path);
    const char *slash = strrchr(path, '/');
    m->dir = slash ? fl_arena_strndup(&c->arena, path, (size_t)(slash - path)) : ".";
    m->is_stdlib = is_stdlib;
    m->globals = fl_env_new(c, NULL);
    FlValue *mv = fl_v_new(c, VK_MODULE);
    mv->mod = m;
    fl_map_put_str(&c->modules, m->name, mv);
    if (nerr) return NULL;
    int before = c->diag.nerrors;
    fl_ev_check_placement(c, &am.body, false, false);
    if (c->diag.nerrors > before) return NULL;
    fl_env_set(m->globals, fl_intern_str(&c->in, "__name__"), fl_v_cstr(c, name));
    Module *saved = c->cur_mod;
    c->cur_mod = m;
    m->loading = true;
    bool saved_have = c->have_err_span;
    if (!is_stdlib) c->have_err_span = false;
    int saved_loop = c->loop_depth;
    c->loop_depth = 0;
    FL_VEC_PUSH(&c->rtloops, NULL);
    fl_ev_block(c, m->globals, &am.body);
    c->rtloops.len--;
    c->loop_depth = saved_loop;
    c->have_err_span = saved_have;
    m->loading = false;
    c->cur_mod = saved;
    return m;
}

static bool file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static FlValue *load_module_file(Ctx *c, const char *dotted, const char *path, bool is_stdlib, FlSpan sp) {
    FlErr e;
    size_t len;
    char *text = fl_read_file(path, &len, &e);
    if (!text) return fl_ev_error(c, sp, "cannot import '%s': %s", dotted, e.msg);
    int before = c->diag.nerrors;
    bool saved_have = c->have_err_span;
    FlSpan saved_span = c->err_span;
    if (is_stdlib && !c->have_err_span) {
        /* errors in a stdlib module's top level point at the import */
        c->have_err_span = true;
        c->err_span = sp;
    }
    /* stdlib files are shown as <stdlib>/fluid/x.fl, the same on every machine */
    const char *shown = path;
    size_t sl = strlen(c->stdlib_dir);
    if (is_stdlib && strncmp(path, c->stdlib_dir, sl) == 0) shown = fl_arena_printf(&c->arena, "<stdlib>%s", path + sl);
    Module *m = fl_ev_run_file(c, dotted, shown, text, len, is_stdlib);
    c->have_err_span = saved_have;
    c->err_span = saved_span;
    FlValue *mv = fl_map_find_str(&c->modules, fl_intern_str(&c->in, dotted));
    if (!m || c->diag.nerrors > before) {
        if (!m) fl_ev_error(c, sp, "module '%s' has errors", dotted);
        return m ? mv : c->error;
    }
    return mv;
}

/* A module found nowhere; when $FLUIDC_STDLIB chose the stdlib, the message names it and its
 * value, and says when that is no directory (the usual cause). */
static FlValue *no_module(Ctx *c, const char *dotted, const char *rel, FlSpan sp) {
    if (!c->stdlib_from_env)
        return fl_ev_error(c, sp, "no module named '%s' (looked for %s.fl next to the importing file and in the stdlib)",
                           dotted, rel);
    struct stat st;
    bool is_dir = stat(c->stdlib_dir, &st) == 0 && S_ISDIR(st.st_mode);
    return fl_ev_error(c, sp, "no module named '%s' (looked for %s.fl next to the importing file and in the stdlib "
                              "that $FLUIDC_STDLIB names, '%s'%s)",
                       dotted, rel, c->stdlib_dir, is_dir ? "" : ", which is not a directory");
}

FlValue *fl_ev_import(Ctx *c, const char *dotted, FlSpan sp, const char *from_dir) {
    dotted = fl_intern_str(&c->in, dotted);
    FlValue *cached = fl_map_find_str(&c->modules, dotted);
    if (cached) {
        if (cached->kind == VK_MODULE && cached->mod->loading && !cached->mod->is_stdlib)
            return fl_ev_error(c, sp, "circular import of '%s'", dotted);
        return cached;
    }
    /* parent package first: fluid before fluid.layers */
    const char *dot = strrchr(dotted, '.');
    FlValue *parent = NULL;
    if (dot) {
        parent = fl_ev_import(c, fl_intern(&c->in, dotted, (size_t)(dot - dotted)), sp, from_dir);
        if (parent->kind == VK_ERROR) return parent;
        FlValue *already = fl_map_find_str(&parent->mod->globals->map, dot + 1);
        if (already && already->kind == VK_MODULE) return already;
        cached = fl_map_find_str(&c->modules, dotted);
        if (cached) return cached;
    }
    FlBuf rel = {0};
    for (const char *p = dotted; *p; p++) fl_buf_putc(&rel, *p == '.' ? '/' : *p);
    FlBuf path = {0};
    FlValue *res = NULL;
    bool stdlib_first = parent ? parent->mod->is_stdlib : (strcmp(dotted, "fluid") == 0);
    for (int pass = 0; pass < 2 && !res; pass++) {
        bool std = (pass == 0) == stdlib_first;
        const char *dir = std ? c->stdlib_dir : from_dir;
        if (!std && parent && parent->mod->is_stdlib) continue;
        const char *pre = strcmp(dir, ".") == 0 ? "" : dir, *slash = *pre ? "/" : "";
        path.len = 0;
        fl_buf_printf(&path, "%s%s%s.fl", pre, slash, fl_buf_str(&rel));
        if (file_exists(fl_buf_str(&path))) {
            res = load_module_file(c, dotted, fl_buf_str(&path), std, sp);
            break;
        }
        path.len = 0;
        fl_buf_printf(&path, "%s%s%s/__init__.fl", pre, slash, fl_buf_str(&rel));
        if (file_exists(fl_buf_str(&path))) {
            res = load_module_file(c, dotted, fl_buf_str(&path), std, sp);
            break;
        }
    }
    if (!res) {
        if (parent) res = fl_ev_error(c, sp, "module '%s' has no attribute or submodule '%s'", parent->mod->name, dot + 1);
        else res = no_module(c, dotted, fl_buf_str(&rel), sp);
    }
    if (res->kind == VK_MODULE && parent && !fl_map_find_str(&parent->mod->globals->map, dot + 1))
        fl_env_set(parent->mod->globals, fl_intern_str(&c->in, dot + 1), res);
    fl_buf_free(&rel);
    fl_buf_free(&path);
    return res;
}

/* Runs a module file's top level. */
