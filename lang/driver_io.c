/* driver_io.c: saving and loading vars from the driver (docs/driver.md, "Saving and serving"):
 * the native module `_driver_io` under stdlib/fluid/io.fl's save_vars, save_params,
 * save_persistables and their load_* twins.
 *
 *   save(what, dirname, program, vars, predicate, kind, filename, model=, feeds=, targets=)
 *                 model: also the program as an inference model in that file of dirname, with
 *                 the feeds (names) and targets (Vars) inference_program gave
 *   load(...)     the same arguments but the last three
 *   has_var(program, name)  whether the program's global block has the var (fluid.compiler)
 *   is_program(x)           whether x is a Program
 *   inference_program(program, feeded_var_names, target_vars)
 *                           save_inference_model's program: program pruned to what the targets
 *                           need from the feeds, in test mode (compiler/prune.c), a program of
 *                           the bundle; [it, the feed names, the targets as its Vars]
 *
 * filename: a combined checkpoint, every var in that one file of dirname (Fluid's); without it
 * one file per var.
 *
 * The vars are chosen at compile time with Fluid's rules: `vars` (Variables or names of the
 * program's global block), else those of the program's global block for which `predicate(var)`
 * is true, else by `kind`: "params" (the program's parameters: create_parameter's and the
 * layers', trainable or not, Fluid's is_parameter) or "persistables" (its persistable tensor
 * vars: parameters, optimizer state, learning rates; Fluid's is_persistable, which leaves out
 * feed, fetch and raw vars). A save_vars op or a load_vars op of the driver does the rest when
 * it runs (runtime/core/ops_saveload.c), on the checkpoint formats of docs/running.md (a save:
 * Fluid's layout, formats 4 and 5; a load: those, the older ones and Paddle's own saves).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "compiler/prune.h"
#include "lang/eval_impl.h"

/* The program argument: None is the default main program; else a program the driver can name
 * (startup, main, or a Program() or clone the bundle adopts as a named program). NULL (reported)
 * for anything else. */
static const char *io_program(Ctx *c, const char *what, FlValue *p, FlProgram **out, FlSpan sp) {
    if (!p || p->kind == VK_NONE) {
        *out = c->bundle->main;
        return "main";
    }
    if (p->kind != VK_PROGRAM) {
        fl_ev_error(c, sp, "%s(main_program=...) takes a Program, found %s", what, fl_v_type_name(p));
        return NULL;
    }
    const char *name = p->prog == c->bundle->driver ? NULL : fl_ev_program_name(c, p->prog);
    if (!name) fl_ev_error(c, sp, "%s(main_program=...): the program is not one this script made", what);
    *out = p->prog;
    return name;
}

static bool is_param(Ctx *c, const FlProgram *p, const char *name) {
    return fl_map_find_str(&c->params, fl_arena_printf(&c->arena, "%p/%s", (void *)p, name)) != NULL;
}

/* The names the call saves or loads, into `names` (a list of str). */
static bool io_select(Ctx *c, const char *what, FlProgram *p, FlValue *vars, FlValue *pred, FlValue *kind,
                      FlValue *names, FlSpan sp) {
    const FlBlock *g = fl_ir_block(p, 0);
    if (vars && vars->kind != VK_NONE) {
        if (pred && pred->kind != VK_NONE) {
            fl_ev_error(c, sp, "%s: give vars= or predicate=, not both (Fluid would ignore the predicate)", what);
            return false;
        }
        if (vars->kind == VK_VAR || !fl_v_is_seq(vars)) {
            fl_ev_error(c, sp, "%s(vars=...) takes a list of Variables or var names, found %s", what,
                        fl_v_type_name(vars));
            return false;
        }
        for (size_t i = 0; i < vars->list.len; i++) {
            FlValue *v = vars->list.items[i];
            const char *n = v->kind == VK_VAR ? v->var.name : v->kind == VK_STR ? v->str.s : NULL;
            if (!n) {
                fl_ev_error(c, sp, "%s: vars[%zu] is %s, not a Variable or a var name", what, i, fl_v_type_name(v));
                return false;
            }
            const FlVarDesc *d = fl_ir_var_find(g, n);
            if (!d) {
                fl_ev_error(c, sp, "%s: '%s' is not a var of the program's global block", what, n);
                return false;
            }
            if (d->kind != FL_VAR_DENSE) {
                fl_ev_error(c, sp, "%s: '%s' is not a tensor var (a reader, a scope, a channel, rows...): a "
                            "checkpoint holds tensors", what, n);
                return false;
            }
            fl_v_list_push(c, names, fl_v_cstr(c, n));
        }
        return true;
    }
    bool call = pred && pred->kind != VK_NONE;
    if (call && pred->kind != VK_FUNC && pred->kind != VK_BUILTIN) {
        fl_ev_error(c, sp, "%s(predicate=...) takes a function of a Variable, found %s", what, fl_v_type_name(pred));
        return false;
    }
    bool params = !call && kind && kind->kind == VK_STR && !strcmp(kind->str.s, "params");
    if (!call && !params && !(kind && kind->kind == VK_STR && !strcmp(kind->str.s, "persistables"))) {
        fl_ev_error(c, sp, "%s: give vars= or predicate= (which vars to save)", what);
        return false;
    }
    for (size_t i = 0; i < g->vars.len; i++) {
        const FlVarDesc *d = g->vars.data[i];
        bool take;
        if (call) {
            FlValue *var = fl_v_var(c, d->name);
            var->var.prog = p;
            FlValue *r = fl_ev_call_simple(c, pred, sp, &var, 1);
            if (r->kind == VK_ERROR) return false;
            bool ok = true;
            take = fl_v_truthy(c, r, sp, &ok);
            if (!ok) return false;
            if (take && d->kind != FL_VAR_DENSE) {
                fl_ev_error(c, sp, "%s: the predicate chose '%s', which is not a tensor var (a reader, a scope, a "
                            "channel, rows...): a checkpoint holds tensors", what, d->name);
                return false;
            }
        } else {
            take = d->kind == FL_VAR_DENSE && d->persistable && (!params || is_param(c, p, d->name));
        }
        if (take) fl_v_list_push(c, names, fl_v_cstr(c, d->name));
    }
    return true;
}

static FlValue *io_op(Ctx *c, CallArgs *a, bool load) {
    ARGS(load ? "load" : "save", "what dirname program vars predicate kind filename model= feeds= targets=", 10);
    FlSpan sp = a->span;
    const char *what = v[0]->kind == VK_STR ? v[0]->str.s : (load ? "load_vars" : "save_vars");
    if (v[1]->kind != VK_STR || !v[1]->str.n)
        return fl_ev_error(c, sp, "%s(dirname=...) takes a directory's path, found %s", what,
                           v[1]->kind == VK_STR ? "''" : fl_v_type_name(v[1]));
    const char *file = NULL;
    if (v[6] && v[6]->kind != VK_NONE) {
        if (v[6]->kind != VK_STR || !v[6]->str.n || strchr(v[6]->str.s, '/'))
            return fl_ev_error(c, sp, "%s(filename=...) takes the name of a file in dirname (no '/'), found %s", what,
                               v[6]->kind == VK_STR ? v[6]->str.s : fl_v_type_name(v[6]));
        file = v[6]->str.s;
    }
    const char *model = NULL;
    if (!load && v[7] && v[7]->kind != VK_NONE) {
        if (v[7]->kind != VK_STR || !v[7]->str.n || strchr(v[7]->str.s, '/') || v[7]->str.s[0] == '.' ||
            !strcasecmp(v[7]->str.s, "MANIFEST") || !strcasecmp(v[7]->str.s, "FORMAT") ||
            (file && !strcmp(file, v[7]->str.s)))
            return fl_ev_error(c, sp, "%s(model_filename=...) takes a file name for the program in dirname (not "
                               "starting with '.', not MANIFEST or FORMAT, not params_filename), found %s", what,
                               v[7]->kind == VK_STR ? (v[7]->str.n ? v[7]->str.s : "''") : fl_v_type_name(v[7]));
        model = v[7]->str.s;
    }
    FlProgram *p;
    const char *pname = io_program(c, what, v[2], &p, sp);
    if (!pname) return c->error;
    FlValue *names = fl_v_list(c, VK_LIST);
    if (!io_select(c, what, p, v[3], v[4], v[5], names, sp)) return c->error;
    if (file && !load && !names->list.len)
        return fl_ev_error(c, sp, "%s(filename='%s'): no vars to save into it", what, file);
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, load ? "load_vars" : "save_vars", sp);
    fl_ir_op_set_string(op, "dir", v[1]->str.s);
    fl_ir_op_set_string(op, "program", pname);
    if (file) fl_ir_op_set_string(op, "file", file);
    const char **nv = fl_arena_alloc(&c->arena, (names->list.len + 1) * sizeof *nv);
    for (size_t i = 0; i < names->list.len; i++) nv[i] = names->list.items[i]->str.s;
    if (names->list.len) fl_ir_op_set_strings(op, "names", nv, names->list.len);
    bool ok = true;
    if (model) {
        fl_ir_op_set_string(op, "model", model);
        for (int k = 8; k <= 9 && ok; k++) { /* feeds, targets: lists of names or Vars of the program */
            FlValue *l = v[k];
            const char *field = k == 8 ? "feeded_var_names" : "target_vars";
            size_t n = l && fl_v_is_seq(l) ? l->list.len : 0;
            if (k == 9 && !n) {
                fl_ev_error(c, sp, "%s: no target_vars: name the vars the model computes", what);
                ok = false;
            }
            const char **sv = fl_arena_alloc(&c->arena, (n + 1) * sizeof *sv);
            for (size_t i = 0; i < n && ok; i++) {
                FlValue *x = l->list.items[i];
                sv[i] = x->kind == VK_VAR ? x->var.name : x->kind == VK_STR ? x->str.s : NULL;
                if (!sv[i] || !fl_ir_var_find(fl_ir_block(p, 0), sv[i])) {
                    if (sv[i])
                        fl_ev_error(c, sp, "%s: %s[%zu] '%s' is not a var of the program's global block", what, field, i,
                                    sv[i]);
                    else
                        fl_ev_error(c, sp, "%s: %s[%zu] is %s, not a var name or a Variable", what, field, i,
                                    fl_v_type_name(x));
                    ok = false;
                }
            }
            if (ok && n) fl_ir_op_set_strings(op, k == 8 ? "feeds" : "targets", sv, n);
        }
    }
    ok = ok && fl_ev_infer(c, c->b.block, op, sp);
    fl_ev_driver_leave(c, &s);
    return ok ? c->none : c->error;
}

static FlValue *io_save(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    return io_op(c, a, false);
}

static FlValue *io_load(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    return io_op(c, a, true);
}

/* ------------------------------------------------------------------ inference models */

/* A list of str from a str or a list of str / Vars (feeded_var_names, target_vars). NULL
 * (reported) for anything else. */
static FlValue *name_list(Ctx *c, const char *what, FlValue *v, FlSpan sp) {
    FlValue *l = fl_v_list(c, VK_LIST);
    if (v->kind == VK_STR || v->kind == VK_VAR) {
        fl_v_list_push(c, l, v->kind == VK_STR ? v : fl_v_cstr(c, v->var.name));
        return l;
    }
    if (!fl_v_is_seq(v)) {
        fl_ev_error(c, sp, "save_inference_model(%s=...) takes a list, found %s", what, fl_v_type_name(v));
        return NULL;
    }
    for (size_t i = 0; i < v->list.len; i++) {
        FlValue *x = v->list.items[i];
        if (x->kind != VK_STR && x->kind != VK_VAR) {
            fl_ev_error(c, sp, "save_inference_model: %s[%zu] is %s, not a %s", what, i, fl_v_type_name(x),
                        strcmp(what, "feeded_var_names") == 0 ? "var name" : "Variable");
            return NULL;
        }
        fl_v_list_push(c, l, x->kind == VK_STR ? x : fl_v_cstr(c, x->var.name));
    }
    return l;
}

/* inference_program(program, feeded_var_names, target_vars): [the pruned program (a program of
 * the bundle), its feed names, its targets (Vars of it)]. */
static FlValue *io_inference_program(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("inference_program", "program feeded_var_names target_vars", 3);
    FlSpan sp = a->span;
    FlProgram *p;
    if (!io_program(c, "save_inference_model", v[0], &p, sp)) return c->error;
    FlValue *feeds = name_list(c, "feeded_var_names", v[1], sp);
    FlValue *targets = feeds ? name_list(c, "target_vars", v[2], sp) : NULL;
    if (!targets) return c->error;
    const char **fv = fl_arena_alloc(&c->arena, (feeds->list.len + 1) * sizeof *fv);
    const char **tv = fl_arena_alloc(&c->arena, (targets->list.len + 1) * sizeof *tv);
    for (size_t i = 0; i < feeds->list.len; i++) fv[i] = feeds->list.items[i]->str.s;
    for (size_t i = 0; i < targets->list.len; i++) tv[i] = targets->list.items[i]->str.s;
    FlErr e;
    FlProgram *q = fl_prune_for_inference(p, fv, feeds->list.len, tv, targets->list.len, &e);
    if (!q) return fl_ev_error(c, sp, "save_inference_model: %s", e.msg);
    FL_VEC_PUSH(&c->programs, q);
    if (!fl_ev_program_name(c, q)) return fl_ev_error(c, sp, "save_inference_model: the bundle did not take the program");
    FlValue *prog = fl_v_new(c, VK_PROGRAM);
    prog->prog = q;
    FlValue *fetch = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < targets->list.len; i++) {
        FlValue *t = fl_v_var(c, tv[i]);
        t->var.prog = q;
        fl_v_list_push(c, fetch, t);
    }
    FlValue *r = fl_v_list(c, VK_LIST);
    fl_v_list_push(c, r, prog);
    fl_v_list_push(c, r, feeds);
    fl_v_list_push(c, r, fetch);
    return r;
}

/* read_model(dirname, model_file): the inference model another compilation saved, read from
 * dirname/model_file when the script compiles (as imikolov.build_dict reads its file): [its
 * program (a program of the bundle), its feed names, its targets (Vars of it)], the program's
 * source locations pointing at the saving script's files, which join the bundle's source table.
 * The parameters are loaded when the driver gets to the call (load_vars, which checks them
 * against this program). */
static void model_relocate(Ctx *c, FlProgram *q, const FlBundle *m) {
    FL_VEC(int32_t) to = {0};
    for (size_t i = 0; i < m->source_paths.len; i++) {
        const char *path = m->source_paths.data[i] ? m->source_paths.data[i] : "";
        size_t k = 0;
        while (k < c->bundle->source_paths.len && strcmp(c->bundle->source_paths.data[k], path)) k++;
        if (k == c->bundle->source_paths.len) FL_VEC_PUSH(&c->bundle->source_paths, fl_xstrdup(path));
        FL_VEC_PUSH(&to, (int32_t)k);
    }
    for (size_t bi = 0; bi < q->blocks.len; bi++) {
        FlBlock *b = q->blocks.data[bi];
        for (size_t i = 0; i < b->ops.len; i++) {
            FlLoc *l = &b->ops.data[i]->loc;
            *l = l->file >= 0 && (size_t)l->file < to.len ? (FlLoc){to.data[l->file], l->line, l->col, l->len}
                                                          : FL_LOC_NONE;
        }
        for (size_t i = 0; i < b->vars.len; i++) {
            FlLoc *l = &b->vars.data[i]->loc;
            *l = l->file >= 0 && (size_t)l->file < to.len ? (FlLoc){to.data[l->file], l->line, l->col, l->len}
                                                          : FL_LOC_NONE;
        }
    }
    FL_VEC_FREE(&to);
}

static FlValue *io_read_model(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("read_model", "dirname model_file", 2);
    FlSpan sp = a->span;
    if (v[0]->kind != VK_STR || !v[0]->str.n)
        return fl_ev_error(c, sp, "load_inference_model(dirname=...) takes a directory's path, found %s",
                           v[0]->kind == VK_STR ? "''" : fl_v_type_name(v[0]));
    if (!fl_ev_want_str(c, v[1], "load_inference_model(model_filename=...)", sp)) return c->error;
    const char *path = fl_arena_printf(&c->arena, "%s/%s", v[0]->str.s, v[1]->str.s);
    struct stat st;
    if (stat(path, &st) != 0)
        return fl_ev_error(c, sp, "load_inference_model: '%s' is missing: fluid.io.save_inference_model('%s', ...) "
                           "writes it, and a script reads the model when it compiles", path, v[0]->str.s);
    FlBundle *m;
    FlPlan *plan;
    FlErr e;
    if (fl_ir_read(path, &m, &plan, &e) != FL_OK)
        return fl_ev_error(c, sp, "load_inference_model: %s", e.msg);
    if (plan) {
        fl_ir_plan_free(plan);
        return fl_ev_error(c, sp, "load_inference_model: '%s' is a plan, not an inference model", path);
    }
    if (!m->inference) {
        fl_ir_bundle_free(m);
        return fl_ev_error(c, sp, "load_inference_model: '%s' is a compiled program but not an inference model (it "
                           "names no feeds and targets: fluid.io.save_inference_model writes one)", path);
    }
    FlProgram *q = fl_ir_program_clone(m->main);
    model_relocate(c, q, m);
    FL_VEC_PUSH(&c->programs, q);
    FlValue *prog = fl_v_new(c, VK_PROGRAM);
    prog->prog = q;
    FlValue *feeds = fl_v_list(c, VK_LIST), *fetch = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < m->inference->feeds.len; i++) fl_v_list_push(c, feeds, fl_v_cstr(c, m->inference->feeds.data[i]));
    for (size_t i = 0; i < m->inference->targets.len; i++) {
        FlValue *t = fl_v_var(c, m->inference->targets.data[i]);
        t->var.prog = q;
        fl_v_list_push(c, fetch, t);
    }
    fl_ir_bundle_free(m);
    if (!fl_ev_program_name(c, q)) return fl_ev_error(c, sp, "load_inference_model: the bundle did not take the program");
    FlValue *r = fl_v_list(c, VK_LIST);
    fl_v_list_push(c, r, prog);
    fl_v_list_push(c, r, feeds);
    fl_v_list_push(c, r, fetch);
    return r;
}

/* has_var(program, name): whether name is a var of program's global block (CompiledProgram's
 * loss_name). */
static FlValue *io_has_var(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("has_var", "program name", 2);
    if (v[0]->kind != VK_PROGRAM) return fl_ev_error(c, a->span, "has_var() takes a Program, found %s", fl_v_type_name(v[0]));
    if (!fl_ev_want_str(c, v[1], "has_var() name", a->span)) return c->error;
    return fl_v_bool(c, fl_ir_var_find(fl_ir_block(v[0]->prog, 0), v[1]->str.s) != NULL);
}

static FlValue *io_is_program(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("is_program", "x", 1);
    return fl_v_bool(c, v[0]->kind == VK_PROGRAM);
}

static const NativeFn io_fns[] = {
    {"save", io_save},
    {"load", io_load},
    {"has_var", io_has_var},
    {"is_program", io_is_program},
    {"inference_program", io_inference_program},
    {"read_model", io_read_model},
};

void fl_ev_driver_io_install(Ctx *c) { fl_ev_module_of_fns(c, "_driver_io", io_fns, FL_ARRAY_LEN(io_fns)); }
