/* eval.c: the compile driver (eval.h): sets up a compilation, runs the main module, verifies
 * the program it built and hands back the bundle.
 *
 * The evaluator itself is split by concern, sharing its internals through eval_impl.h: value.c
 * (values, scopes), build.c (the op builder), arith.c (operators on plain values), expr.c and
 * stmt.c (the tree walk), lower.c (runtime control flow), builtins.c (Python builtins), core.c
 * (the `_core` module the stdlib is written against), module.c (finding and loading modules).
 *
 * Invariants: a compilation owns everything in its Ctx and frees it before returning (the arena,
 * the maps of every Env, the Programs and readers the bundle did not adopt); the bundle is
 * handed out only when there were no diagnostics; no global state, so compilations may run in
 * parallel.
 */
#include "lang/eval_impl.h"

#include <stdlib.h>
#include <string.h>

#include "compiler/ir/train_driver.h"
#include "compiler/ops.h"
#include "compiler/verify.h"

/* ------------------------------------------------------------------ compile */


const char *fl_eval_default_stdlib(void) {
#ifdef FL_STDLIB_DIR
    return FL_STDLIB_DIR;
#else
    return "stdlib";
#endif
}

static void report_verify(Ctx *c, FlVerifyIssues *vi) {
    for (size_t i = 0; i < vi->items.len; i++) {
        FlVerifyIssue *it = &vi->items.data[i];
        /* map the loc back to a span */
        FlSpan sp = {0, 0, 0};
        bool found = false;
        if (it->loc.file >= 0) {
            for (size_t f = 0; f < c->src_map.len; f++)
                if (c->src_map.data[f] == it->loc.file) {
                    const FlSourceFile *sf = fl_sources_file(&c->sources, (uint32_t)f);
                    if (sf && it->loc.line >= 1 && (size_t)it->loc.line <= sf->nlines) {
                        uint32_t off = sf->line_starts[it->loc.line - 1] + (uint32_t)(it->loc.col - 1);
                        sp = fl_span((uint32_t)f, off, off + (uint32_t)(it->loc.len > 0 ? it->loc.len : 1));
                        found = true;
                    }
                    break;
                }
        }
        if (found) fl_diag_error(&c->diag, sp, "%s", it->msg);
        else fl_diag_error_plain(&c->diag, "%s", it->msg);
    }
}

/* A -D that no fluid.flag read is most likely a typo of one that was: say so, without failing. */
static void warn_unread_defines(Ctx *c) {
    for (size_t i = 0; i < c->opt->ndefines; i++) {
        if (c->define_read[i]) continue;
        const char *def = c->opt->defines[i], *eq = strchr(def, '=');
        int nl = eq ? (int)(eq - def) : (int)strlen(def);
        FlBuf names = {0};
        for (size_t k = 0; k < c->flags_asked.len; k++)
            fl_buf_printf(&names, "%s%s", k ? ", " : "", c->flags_asked.data[k]);
        if (c->flags_asked.len)
            fl_diag_warning_plain(&c->diag, "-D '%.*s' is not a flag of this program (its flags: %s)", nl, def,
                                  fl_buf_str(&names));
        else
            fl_diag_warning_plain(&c->diag, "-D '%.*s' is not a flag of this program (it reads no fluid.flag)",
                                  nl, def);
        fl_buf_free(&names);
    }
}

static int compile(const char *path, char *text, size_t len, const FlCompileOptions *opt, FlBundle **out, FlBuf *diag_out) {
    Ctx *c = fl_xcalloc(1, sizeof *c);
    FlCompileOptions dflt = {0};
    if (!opt) opt = &dflt;
    c->opt = opt;
    fl_arena_init(&c->arena);
    fl_intern_init(&c->in);
    fl_sources_init(&c->sources);
    fl_diag_init(&c->diag, &c->sources);
    if (opt->max_errors > 0) c->diag.max_errors = opt->max_errors;
    if (opt->tool) c->diag.tool = opt->tool;
    c->define_read = fl_xcalloc(opt->ndefines + 1, sizeof *c->define_read);
    fl_map_init(&c->modules);
    fl_map_init(&c->unique);
    fl_map_init(&c->block_of_var);
    fl_map_init(&c->params);
    fl_map_init(&c->error_clips);
    fl_map_init(&c->tensor_fetches);
    fl_map_init(&c->param_hooks);
    fl_map_init(&c->updates_at);
    c->stdlib_dir = opt->stdlib_dir ? opt->stdlib_dir : getenv("FLUIDC_STDLIB");
    c->stdlib_from_env = !opt->stdlib_dir && c->stdlib_dir && *c->stdlib_dir;
    if (!c->stdlib_dir || !*c->stdlib_dir) c->stdlib_dir = fl_eval_default_stdlib();
    c->none = fl_v_new(c, VK_NONE);
    c->vtrue = fl_v_new(c, VK_BOOL);
    c->vtrue->b = true;
    c->vfalse = fl_v_new(c, VK_BOOL);
    c->error = fl_v_new(c, VK_ERROR);
    c->bundle = fl_ir_bundle_new();
    c->b.main = c->bundle->main;
    c->b.startup = c->bundle->startup;
    c->b.block = c->home = fl_ir_block(c->b.main, 0);
    free(c->bundle->role);
    c->bundle->role = fl_xstrdup("local");
    fl_builtins_install(c);

    Module *m = fl_ev_run_file(c, "__main__", path, text, len, false);
    (void)m;
    if (!c->aborted) fl_ev_profile_end(c);
    if (!c->aborted) fl_ev_dist_finish(c);
    /* fluid.train's loop is the driver its stdlib function wrote (stdlib/fluid/_train.fl); a script
     * that also runs programs itself would add its own to it (docs/driver.md, "Status") */
    if (c->diag.nerrors == 0 && c->bundle->driver && c->bundle->run.present &&
        (c->driver_after_train || c->bundle->driver != c->train_driver))
        fl_diag_error_plain(&c->diag, "the program both calls fluid.train(...) and runs programs itself (exe.run): "
                                      "a bundle holds one driver, fluid.train's loop or the script's own; use one or "
                                      "the other");
    if (c->diag.nerrors == 0 && fl_ir_bundle_trains(c->bundle) && !c->bundle->driver)
        fl_diag_error_plain(&c->diag, "internal: fluid.train's run spec has no driver: its loop was not written");
    if (c->diag.nerrors == 0) {
        FlVerifyIssues vi = {0};
        if (fl_verify_program(c->bundle->main, c->bundle->startup, &vi) > 0) report_verify(c, &vi);
        fl_verify_issues_fini(&vi);
        if (fl_verify_driver(c->bundle, &vi) > 0) report_verify(c, &vi);
        fl_verify_issues_fini(&vi);
    }
    if (c->diag.nerrors == 0) {
        /* a program with listen_and_serv is a parameter server's */
        for (size_t i = 0; i < fl_ir_block(c->bundle->main, 0)->ops.len; i++)
            if (fl_ops_is(fl_ir_block(c->bundle->main, 0)->ops.data[i], FL_OPID_listen_and_serv)) {
                free(c->bundle->role);
                c->bundle->role = fl_xstrdup("pserver");
            }
        FlErr e;
        if (fl_ir_validate_bundle(c->bundle, &e) != FL_OK) fl_diag_error_plain(&c->diag, "internal: the built program is invalid: %s", e.msg);
    }
    if (!c->aborted) warn_unread_defines(c);
    int nerr = c->diag.nerrors;
    if (diag_out) fl_buf_append(diag_out, fl_buf_str(&c->diag.out), c->diag.out.len);
    if (nerr == 0) *out = c->bundle;
    else {
        *out = NULL;
        fl_ir_bundle_free(c->bundle);
    }
    for (size_t i = 0; i < c->envs.len; i++) fl_map_fini(&c->envs.data[i]->map);
    FL_VEC_FREE(&c->envs);
    fl_ev_dist_free(c);
    for (size_t i = 0; i < c->programs.len; i++)
        if (c->programs.data[i]) fl_ir_program_free(c->programs.data[i]);
    FL_VEC_FREE(&c->programs);
    for (size_t i = 0; i < c->readers.len; i++) fl_ir_reader_free(c->readers.data[i]);
    FL_VEC_FREE(&c->readers);
    free(c->define_read);
    FL_VEC_FREE(&c->flags_asked);
    FL_VEC_FREE(&c->unique_stack);
    FL_VEC_FREE(&c->unique_prefix);
    for (size_t i = 0; i < c->unique_gens.len; i++)
        if (c->unique_gens.data[i] != &c->unique) fl_map_fini(c->unique_gens.data[i]);
    FL_VEC_FREE(&c->unique_gens);
    FL_VEC_FREE(&c->unique_gen_prefix);
    FL_VEC_FREE(&c->name_scopes);
    FL_VEC_FREE(&c->rtloops);
    FL_VEC_FREE(&c->tries);
    FL_VEC_FREE(&c->src_map);
    fl_map_fini(&c->modules);
    fl_map_fini(&c->unique);
    fl_map_fini(&c->block_of_var);
    fl_map_fini(&c->params);
    fl_map_fini(&c->error_clips);
    fl_map_fini(&c->tensor_fetches);
    fl_map_fini(&c->param_hooks);
    fl_map_fini(&c->updates_at);
    fl_diag_fini(&c->diag);
    fl_sources_fini(&c->sources);
    fl_intern_fini(&c->in);
    fl_arena_fini(&c->arena);
    free(c);
    return nerr;
}

int fl_compile_source(const char *path, const char *text, size_t len, const FlCompileOptions *opt, FlBundle **out, FlBuf *diag_out) {
    char *copy = fl_xmalloc(len + 1);
    memcpy(copy, text, len);
    copy[len] = 0;
    return compile(path, copy, len, opt, out, diag_out);
}

int fl_compile_file(const char *path, const FlCompileOptions *opt, FlBundle **out, FlBuf *diag_out) {
    FlErr e;
    size_t len;
    char *text = fl_read_file(path, &len, &e);
    *out = NULL;
    if (!text) {
        if (diag_out) fl_buf_printf(diag_out, "%s: error: %s\n", opt && opt->tool ? opt->tool : "flc", e.msg);
        return 1;
    }
    return compile(path, text, len, opt, out, diag_out);
}
