/* stmt.c: running statements (the tree walk over statement nodes).
 *
 * Placement checks made before a module runs (break outside a loop, `import *` in a function),
 * assignment and unpacking, statement lists (fl_ev_block), compile-time `if`, `for` and `while`
 * (unrolled: their bodies run once per iteration), import, `with` guards and eval_stmt. A
 * statement whose condition or iterable is a Var is lowered to control ops by lower.c.
 *
 * Invariants: a statement returns its Flow (normal, break, continue, return, error) and never
 * longjmps; compile-time loops and comprehensions share one budget of 1,000,000 iterations per
 * compilation (nested loops cannot multiply past it) and the arena is bounded (512 MiB),
 * so a runaway program ends with a diagnostic; after an error, evaluation goes on with the next
 * statement until 200 errors.
 */
#include "lang/eval_impl.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ static checks */

/* break/continue outside a loop and 'import *' inside a function are errors where they are
 * written, whether or not the code runs (as in Python). */
static void placement(Ctx *c, FlAstList *body, bool break_ok, bool continue_ok, bool in_def) {
    for (size_t i = 0; i < body->len; i++) {
        FlAst *s = body->items[i];
        switch (s->kind) {
        case FL_AST_BREAK:
        case FL_AST_CONTINUE:
            if (!(s->kind == FL_AST_BREAK ? break_ok : continue_ok))
                fl_diag_error(&c->diag, s->span, "'%s' outside a loop%s", s->kind == FL_AST_BREAK ? "break" : "continue",
                              s->kind == FL_AST_BREAK ? " or a select" : "");
            break;
        case FL_AST_FROM_IMPORT:
            if (s->import.star && in_def) fl_diag_error(&c->diag, s->span, "'import *' is only allowed at module level");
            break;
        case FL_AST_DEF: placement(c, &s->def.body, false, false, true); break;
        case FL_AST_CLASS: placement(c, &s->cls.body, false, false, true); break;
        case FL_AST_IF:
            placement(c, &s->cond.then_body, break_ok, continue_ok, in_def);
            placement(c, &s->cond.else_body, break_ok, continue_ok, in_def);
            break;
        case FL_AST_FOR:
        case FL_AST_WHILE:
            placement(c, &s->loop.body, true, true, in_def);
            placement(c, &s->loop.else_body, break_ok, continue_ok, in_def);
            break;
        case FL_AST_PARALLEL_FOR: placement(c, &s->loop.body, false, false, in_def); break;
        case FL_AST_GO: placement(c, &s->with.body, false, false, in_def); break;
        case FL_AST_TRY:
            placement(c, &s->loop.body, break_ok, continue_ok, in_def);
            placement(c, &s->loop.else_body, break_ok, continue_ok, in_def);
            break;
        case FL_AST_WITH: placement(c, &s->with.body, break_ok, continue_ok, in_def); break;
        case FL_AST_SELECT: /* Go: a break leaves the select, a continue is the loop's */
            for (size_t k = 0; k < s->select.cases.len; k++)
                placement(c, &s->select.cases.items[k]->case_.body, true, continue_ok, in_def);
            break;
        case FL_AST_NAME: case FL_AST_INT: case FL_AST_FLOAT: case FL_AST_STR: case FL_AST_TRUE:
        case FL_AST_FALSE: case FL_AST_NONE: case FL_AST_ATTR: case FL_AST_CALL: case FL_AST_INDEX:
        case FL_AST_SLICE: case FL_AST_LIST: case FL_AST_TUPLE: case FL_AST_DICT:
        case FL_AST_BINOP: case FL_AST_UNOP: case FL_AST_AND: case FL_AST_OR: case FL_AST_COMPARE:
        case FL_AST_COND: case FL_AST_LAMBDA: case FL_AST_LISTCOMP: case FL_AST_DICTCOMP:
        case FL_AST_COMP_FOR: case FL_AST_COMP_IF: case FL_AST_EXPR_STMT: case FL_AST_ASSIGN:
        case FL_AST_AUGASSIGN: case FL_AST_RETURN: case FL_AST_PASS: case FL_AST_IMPORT:
        case FL_AST_CASE: case FL_AST_STARRED: case FL_AST_CMP_CHAIN: case FL_AST_ASSERT:
        case FL_AST_RAISE: case FL_AST_GLOBAL: case FL_AST_COUNT: break;
        }
    }
}

void fl_ev_check_placement(Ctx *c, FlAstList *body, bool in_loop, bool in_def) {
    placement(c, body, in_loop, in_loop, in_def);
}

/* ------------------------------------------------------------------ assignment and statement lists */

/* The target itself, or for `*rest` the name (or target) it binds. */
static FlAst *unstar(FlAst *t) { return t->kind == FL_AST_STARRED ? t->unop.e : t; }

static bool unpack(Ctx *c, Env *e, FlAst *t, FlValue *v) {
    FlAstList *items = &t->list.items;
    size_t star = items->len; /* the index of a `*rest` target, if any (the parser allows one) */
    for (size_t i = 0; i < items->len; i++)
        if (items->items[i]->kind == FL_AST_STARRED) star = i;
    size_t fixed = items->len - (star < items->len);
    if (v->kind == VK_ERROR) {
        for (size_t i = 0; i < items->len; i++) fl_ev_assign(c, e, unstar(items->items[i]), v);
        return false;
    }
    if (!fl_v_is_seq(v) && v->kind != VK_STR && v->kind != VK_DICT) {
        fl_ev_error(c, t->span, "cannot unpack a %s into %zu names", fl_v_type_name(v), items->len);
        for (size_t i = 0; i < items->len; i++) fl_ev_assign(c, e, unstar(items->items[i]), c->error);
        return false;
    }
    v = fl_ev_as_list(c, v, t->span);
    if (star == items->len ? v->list.len != items->len : v->list.len < fixed) {
        fl_ev_error(c, t->span, "cannot unpack %zu values into %s%zu names", v->list.len,
                    star < items->len ? "at least " : "", fixed);
        for (size_t i = 0; i < items->len; i++) fl_ev_assign(c, e, unstar(items->items[i]), c->error);
        return false;
    }
    bool ok = true;
    size_t rest = v->list.len - fixed; /* how many the starred target takes */
    for (size_t i = 0, k = 0; i < items->len; i++) {
        if (i == star) {
            FlValue *l = fl_v_list(c, VK_LIST);
            for (size_t j = 0; j < rest; j++) fl_v_list_push(c, l, v->list.items[k++]);
            ok = fl_ev_assign(c, e, unstar(items->items[i]), l) && ok;
        } else {
            ok = fl_ev_assign(c, e, items->items[i], v->list.items[k++]) && ok;
        }
    }
    return ok;
}

bool fl_ev_assign(Ctx *c, Env *e, FlAst *t, FlValue *v) {
    switch (t->kind) {
    case FL_AST_NAME: fl_env_set(e, t->name, v); return true;
    case FL_AST_TUPLE:
    case FL_AST_LIST: return unpack(c, e, t, v);
    case FL_AST_ATTR: {
        FlValue *o = fl_ev_expr(c, e, t->attr.obj);
        if (o->kind == VK_ERROR || v->kind == VK_ERROR) return false;
        if (o->kind == VK_RECORD) {
            fl_v_rec_set(c, o, t->attr.name, v);
            return true;
        }
        if (o->kind == VK_MODULE) {
            fl_env_set(o->mod->globals, t->attr.name, v);
            return true;
        }
        if (o->kind == VK_VAR) return fl_ev_var_set(c, o, t->attr.name, v, t->span);
        if (o->kind == VK_PROGRAM) return fl_ev_program_set(c, o, t->attr.name, v, t->span);
        if (o->kind == VK_CLASS) {
            fl_env_set(o->cls.attrs, t->attr.name, v);
            return true;
        }
        fl_ev_error(c, t->span, "cannot set attribute '%s' of a %s", t->attr.name, fl_v_type_name(o));
        return false;
    }
    case FL_AST_INDEX: {
        FlValue *o = fl_ev_expr(c, e, t->index.obj);
        FlValue *i = fl_ev_expr(c, e, t->index.index);
        if (o->kind == VK_ERROR || i->kind == VK_ERROR || v->kind == VK_ERROR) return false;
        if (o->kind == VK_DICT) {
            fl_v_dict_set(c, o, i, v);
            return true;
        }
        if (fl_ev_is_rt_list(o) || fl_ev_is_tensor_array(o)) { /* its elements are the driver's */
            fl_ev_error(c, t->span, "item assignment of a %s (its elements are known when the driver runs) is not "
                        "built: append to a new one (l.append(x))",
                        fl_ev_is_tensor_array(o) ? "LoDTensorArray" : "list filled at run time");
            return false;
        }
        if (o->kind == VK_LIST && o->list.rt_depth < c->rt_depth) {
            /* a compile-time change of a list from outside: it would hold also when the block
             * does not run (names are carried out, list items cannot be) */
            fl_ev_error(c, t->span, "cannot assign an item of a list made outside this runtime block (it would "
                        "change the list also when the block does not run); bind a name instead");
            return false;
        }
        if (o->kind == VK_LIST && i->kind == VK_INT) {
            int64_t k = i->i < 0 ? i->i + (int64_t)o->list.len : i->i;
            if (k < 0 || k >= (int64_t)o->list.len) {
                fl_ev_error(c, t->span, "list assignment index out of range");
                return false;
            }
            o->list.items[k] = v;
            return true;
        }
        fl_ev_error(c, t->span, "a %s does not support item assignment", fl_v_type_name(o));
        return false;
    }
    case FL_AST_INT: case FL_AST_FLOAT: case FL_AST_STR: case FL_AST_TRUE: case FL_AST_FALSE:
    case FL_AST_NONE: case FL_AST_CALL: case FL_AST_SLICE: case FL_AST_DICT: case FL_AST_BINOP:
    case FL_AST_UNOP: case FL_AST_AND: case FL_AST_OR: case FL_AST_COMPARE: case FL_AST_COND:
    case FL_AST_LAMBDA: case FL_AST_LISTCOMP: case FL_AST_DICTCOMP: case FL_AST_COMP_FOR:
    case FL_AST_COMP_IF: case FL_AST_EXPR_STMT: case FL_AST_ASSIGN: case FL_AST_AUGASSIGN:
    case FL_AST_DEF: case FL_AST_RETURN: case FL_AST_IF: case FL_AST_FOR: case FL_AST_WHILE:
    case FL_AST_BREAK: case FL_AST_CONTINUE: case FL_AST_PASS: case FL_AST_IMPORT:
    case FL_AST_FROM_IMPORT: case FL_AST_WITH: case FL_AST_GO: case FL_AST_PARALLEL_FOR:
    case FL_AST_SELECT: case FL_AST_CASE: case FL_AST_STARRED: case FL_AST_CMP_CHAIN:
    case FL_AST_CLASS: case FL_AST_ASSERT: case FL_AST_RAISE: case FL_AST_GLOBAL: case FL_AST_TRY:
    case FL_AST_COUNT: break;
    }
    fl_ev_error(c, t->span, "cannot assign to a %s", fl_ast_kind_name(t->kind));
    return false;
}

static Flow eval_stmt(Ctx *c, Env *e, FlAst *s);

/* The runtime loop that a break or continue here would leave, or NULL (none, or a compile-time
 * loop is nearer). */
RtLoop *fl_ev_rt_loop(Ctx *c) {
    return c->rtloops.len && c->loop_depth == 0 ? c->rtloops.data[c->rtloops.len - 1] : NULL;
}

/* Whether a statement's error ends the statements around it: after 200 errors, and in stdlib
 * code, which stops at its first error as a raise would (what follows there only cascades). */
static bool stop_at_error(Ctx *c) {
    return c->diag.nerrors > 200 || (c->cur_mod && c->cur_mod->is_stdlib);
}

/* Runs body->items[from..] in order, up to one that lowers a break or continue of the runtime
 * loop around inside a runtime block (RtLoop) while more statements follow: *next is then the
 * index after it, else body->len. */
Flow fl_ev_run_stmts(Ctx *c, Env *e, FlAstList *body, size_t from, size_t *next) {
    RtLoop *l = fl_ev_rt_loop(c);
    *next = body->len;
    for (size_t i = from; i < body->len; i++) {
        if (c->aborted) return FLOW_ERROR;
        if (c->arena.used_total > MEMORY_LIMIT) {
            fl_ev_error(c, body->items[i]->span, "the program needs more than 512 MiB of memory at compile time");
            c->aborted = true;
            return FLOW_ERROR;
        }
        int exits = l ? l->exits : 0, returns = c->rtfunc ? c->rtfunc->exits : 0;
        Flow f = eval_stmt(c, e, body->items[i]);
        if (l && c->tries.len) fl_ev_eof_after_stmt(c, l, body->items[i]->span);
        if (f != FLOW_NORMAL && f != FLOW_ERROR) return f;
        if (f == FLOW_ERROR && stop_at_error(c)) return FLOW_ERROR;
        bool returned = !l && c->rtfunc && c->rtfunc->exits != returns; /* a runtime return (RtFunc) */
        if (returned && body->items[i]->kind == FL_AST_RETURN) return FLOW_NORMAL; /* what follows never runs */
        if (((l && l->exits != exits) || returned) && i + 1 < body->len) {
            *next = i + 1;
            return FLOW_NORMAL;
        }
    }
    return FLOW_NORMAL;
}

/* Runs the statements in order. Once one has lowered a break or continue of the runtime loop
 * around (inside a runtime block), the rest run only while that iteration is alive. */
Flow fl_ev_block(Ctx *c, Env *e, FlAstList *body) {
    size_t next;
    Flow f = fl_ev_run_stmts(c, e, body, 0, &next);
    return next < body->len ? fl_ev_lower_rest(c, e, body, next) : f;
}

/* ------------------------------------------------------------------ compile-time loops */

bool fl_ev_ct_iteration(Ctx *c, FlSpan sp, const char *what) {
    if (++c->ct_iterations <= CT_ITERATION_BUDGET) return true;
    if (c->ct_iterations > CT_ITERATION_BUDGET + 1) return false; /* reported at the loop that spent it */
    fl_ev_error(c, sp, "compile-time loops and comprehensions ran 1,000,000 iterations in this compilation, the "
                       "most a program may; this %s would run more (is it infinite?)", what);
    c->aborted = true;
    return false;
}

/* One pass of a compile-time loop's body; false when the loop ends there: at a break (*broke),
 * a return, or an error (*res) -- any error when `any_error`, else one that stop_at_error says
 * ends the statements around it. */
static bool loop_pass(Ctx *c, Env *e, FlAst *s, bool any_error, bool *broke, Flow *res) {
    int returns = c->rtfunc ? c->rtfunc->exits : 0;
    Flow f = fl_ev_block(c, e, &s->loop.body);
    if (c->rtfunc && c->rtfunc->exits != returns) { /* the next unrolled pass would run regardless */
        fl_ev_error(c, s->span, "a runtime 'return' (inside a runtime loop or 'if') cannot leave this loop, which "
                                "is unrolled when the program is built");
        *res = FLOW_ERROR;
        return false;
    }
    if (f == FLOW_BREAK) {
        *broke = true;
        return false;
    }
    if (f == FLOW_RETURN || (f == FLOW_ERROR && (any_error || stop_at_error(c)))) {
        *res = f;
        return false;
    }
    return true;
}

/* Leaves a compile-time loop: the loop depths as they were, then the else body unless it broke. */
static Flow loop_end(Ctx *c, Env *e, FlAst *s, int loop_rt_depth, bool broke, Flow res) {
    c->loop_depth--;
    c->loop_rt_depth = loop_rt_depth;
    if (!broke && res == FLOW_NORMAL && s->loop.else_body.len) res = fl_ev_block(c, e, &s->loop.else_body);
    return res;
}

static Flow stmt_for(Ctx *c, Env *e, FlAst *s) {
    Flow rt;
    FlValue *it = fl_ev_for_iter(c, e, s, &rt); /* NULL: a runtime loop of the driver (docs/driver.md) */
    if (!it) return rt;
    if (it->kind == VK_ERROR) {
        fl_ev_assign(c, e, s->loop.target, c->error);
        return FLOW_ERROR;
    }
    if (fl_ev_is_reader_iter(it)) return fl_ev_lower_for_reader(c, e, s, it); /* docs/driver.md, "Data" */
    if (fl_ev_is_pyreader_iter(it)) return fl_ev_lower_for_pyreader(c, e, s, it);
    if (it->kind == VK_VAR) {
        if (fl_ev_is_channel(c, it)) return fl_ev_lower_for_chan(c, e, s, it);
        fl_ev_error(c, s->loop.iter->span, "cannot iterate over a tensor Var; iterate over a channel, a list or range(n)");
        return FLOW_ERROR;
    }
    if (fl_ev_is_rt_list(it)) return fl_ev_lower_for_list(c, e, s, it); /* its elements, when the driver runs */
    FlValue *seq = fl_ev_as_list(c, it, s->loop.iter->span);
    if (seq->kind == VK_ERROR) return FLOW_ERROR;
    int loop_rt_depth = c->loop_rt_depth;
    c->loop_rt_depth = c->rt_depth;
    c->loop_depth++;
    Flow res = FLOW_NORMAL;
    bool broke = false;
    for (size_t i = 0; i < seq->list.len; i++) {
        if (!fl_ev_ct_iteration(c, s->span, "loop")) {
            res = FLOW_ERROR;
            break;
        }
        if (!fl_ev_assign(c, e, s->loop.target, seq->list.items[i])) {
            res = FLOW_ERROR;
            break;
        }
        if (!loop_pass(c, e, s, false, &broke, &res)) break;
    }
    return loop_end(c, e, s, loop_rt_depth, broke, res);
}

static Flow stmt_while(Ctx *c, Env *e, FlAst *s) {
    FlAst *lit = s->loop.iter;
    if ((lit->kind == FL_AST_TRUE || (lit->kind == FL_AST_INT && lit->ival != 0)) &&
        fl_ev_body_runs_programs(c, e, &s->loop.body)) { /* `while True:` running programs: the driver's */
        DriverSwap sw;
        fl_ev_driver_enter(c, &sw);
        Flow f = fl_ev_lower_while_true(c, e, s);
        fl_ev_driver_leave(c, &sw);
        return f;
    }
    int loop_rt_depth = c->loop_rt_depth;
    c->loop_rt_depth = c->rt_depth;
    c->loop_depth++;
    Flow res = FLOW_NORMAL;
    bool broke = false;
    for (long iter = 0;; iter++) {
        FlValue *t = fl_ev_expr(c, e, s->loop.iter);
        if (t->kind == VK_ERROR) {
            res = FLOW_ERROR;
            break;
        }
        if (t->kind == VK_VAR) {
            if (iter > 0) {
                fl_ev_error(c, s->loop.iter->span, "the condition became a Var after the loop ran at compile time");
                res = FLOW_ERROR;
                break;
            }
            c->loop_depth--;
            c->loop_rt_depth = loop_rt_depth;
            if (!fl_ev_is_driver_var(c, t) || fl_ev_in_driver(c)) return fl_ev_lower_while(c, e, s, t);
            DriverSwap sw; /* a loop on a fetched value is the driver's (docs/driver.md) */
            fl_ev_driver_enter(c, &sw);
            Flow f = fl_ev_lower_while(c, e, s, t);
            fl_ev_driver_leave(c, &sw);
            return f;
        }
        bool ok;
        bool tv = fl_v_truthy(c, t, s->loop.iter->span, &ok);
        if (!ok) {
            res = FLOW_ERROR;
            break;
        }
        if (!tv) break;
        if (!fl_ev_ct_iteration(c, s->span, "loop")) {
            res = FLOW_ERROR;
            break;
        }
        if (!loop_pass(c, e, s, true, &broke, &res)) break;
    }
    return loop_end(c, e, s, loop_rt_depth, broke, res);
}

/* ------------------------------------------------------------------ import and with */

/* from m import *: the names m's __all__ lists when it has one (a submodule among them is
 * imported), else every global of m whose name does not start with '_'. */
static Flow import_star(Ctx *c, Env *e, FlValue *m, FlAst *s, const char *dir) {
    Env *g = m->mod->globals;
    FlValue *all = fl_map_find_str(&g->map, "__all__");
    StrVec names = {0};
    bool ok = true;
    if (!all) {
        for (size_t i = 0; i < g->map.cap; i++)
            if (fl_map_slot_live(&g->map, i) && g->map.buckets[i].key[0] != '_') FL_VEC_PUSH(&names, g->map.buckets[i].key);
    } else if (!fl_v_is_seq(all)) {
        fl_ev_error(c, s->span, "__all__ of module '%s' must be a list or tuple of names, found %s", m->mod->name,
                    fl_v_type_name(all));
        ok = false;
    } else {
        for (size_t i = 0; i < all->list.len; i++) {
            FlValue *x = all->list.items[i];
            if (x->kind == VK_STR) {
                FL_VEC_PUSH(&names, fl_intern_str(&c->in, x->str.s));
                continue;
            }
            fl_ev_error(c, s->span, "__all__ of module '%s' must hold names (strings), found %s", m->mod->name,
                        fl_v_type_name(x));
            ok = false;
        }
    }
    for (size_t i = 0; i < names.len; i++) {
        const char *nm = names.data[i];
        FlValue *v = fl_map_find_str(&g->map, nm);
        if (!v) v = fl_ev_import(c, fl_arena_printf(&c->arena, "%s.%s", m->mod->name, nm), s->span, dir);
        ok = ok && v->kind != VK_ERROR;
        fl_env_set(e, nm, v);
    }
    FL_VEC_FREE(&names);
    return ok ? FLOW_NORMAL : FLOW_ERROR;
}

static Flow stmt_import(Ctx *c, Env *e, FlAst *s) {
    Module *cm = c->cur_mod;
    const char *dir = cm ? cm->dir : ".";
    if (s->kind == FL_AST_IMPORT) {
        FlValue *m = fl_ev_import(c, s->import.module, s->span, dir);
        if (m->kind == VK_ERROR) {
            fl_env_set(e, s->import.alias ? s->import.alias : s->import.module, c->error);
            return FLOW_ERROR;
        }
        if (s->import.alias) {
            fl_env_set(e, s->import.alias, m);
        } else {
            /* `import a.b` binds a */
            const char *dot = strchr(s->import.module, '.');
            if (dot) {
                const char *top = fl_intern(&c->in, s->import.module, (size_t)(dot - s->import.module));
                fl_env_set(e, top, fl_ev_import(c, top, s->span, dir));
            } else {
                fl_env_set(e, s->import.module, m);
            }
        }
        return FLOW_NORMAL;
    }
    FlValue *m = fl_ev_import(c, s->import.module, s->span, dir);
    bool bad = m->kind == VK_ERROR;
    if (s->import.star) return bad ? FLOW_ERROR : import_star(c, e, m, s, dir);
    for (size_t i = 0; i < s->import.nnames; i++) {
        const char *nm = s->import.names[i];
        const char *as = s->import.aliases && s->import.aliases[i] ? s->import.aliases[i] : nm;
        if (bad) {
            fl_env_set(e, as, c->error);
            continue;
        }
        FlValue *v = fl_map_find_str(&m->mod->globals->map, nm);
        if (!v) {
            const char *dotted = fl_arena_printf(&c->arena, "%s.%s", s->import.module, nm);
            FlSpan nsp = s->import.name_spans ? s->import.name_spans[i] : s->span;
            v = fl_ev_import(c, dotted, nsp, dir);
            if (v->kind == VK_ERROR) {
                bad = true;
                fl_env_set(e, as, c->error);
                continue;
            }
        }
        fl_env_set(e, as, v);
    }
    return bad ? FLOW_ERROR : FLOW_NORMAL;
}

static Flow stmt_with(Ctx *c, Env *e, FlAst *s) {
    FlValue *g = fl_ev_expr(c, e, s->with.expr);
    if (g->kind == VK_ERROR) return FLOW_ERROR;
    if (fl_ev_is_file(g)) g = fl_ev_file_guard(c, g); /* with open(...) as f: */
    if (g->kind != VK_GUARD) {
        fl_ev_error(c, s->with.expr->span, "'with' needs a guard (program_guard, unique_name.guard, "
                                           "name_scope, go, parallel_for, server.do, DynamicRNN.block(), While.block(), "
                                           "Switch(), ModelAverage.apply()), found %s",
                    fl_v_type_name(g));
        return FLOW_ERROR;
    }
    switch (g->guard.kind) {
    case GK_GO:
        if (s->with.as_name) fl_ev_error(c, s->span, "'with fluid.go()' binds no name");
        return fl_ev_lower_go(c, e, &s->with.body, s->span);
    case GK_PARALLEL_FOR:
        return fl_ev_lower_parallel_for(c, e, g->guard.n, s->with.as_name, true, &s->with.body, s->span);
    case GK_PROGRAM: {
        BuildState saved = c->b;
        FlBlock *home = c->home;
        c->b.main = g->guard.a->prog;
        c->b.startup = g->guard.b ? g->guard.b->prog : saved.startup;
        if (c->b.main != saved.main) /* the same program keeps its current block, as Fluid's does */
            c->b.block = c->home = fl_ir_block(c->b.main, 0);
        if (s->with.as_name) fl_env_set(e, s->with.as_name, g->guard.a);
        Flow f = fl_ev_block(c, e, &s->with.body);
        c->b = saved;
        c->home = home;
        return f;
    }
    case GK_UNIQUE_NAME: {
        fl_ev_unique_push(c, g->guard.a ? g->guard.a->str.s : NULL);
        Flow f = fl_ev_block(c, e, &s->with.body);
        fl_ev_unique_pop(c);
        return f;
    }
    case GK_NAME_SCOPE: {
        FL_VEC_PUSH(&c->name_scopes, g->guard.a ? g->guard.a->str.s : "");
        Flow f = fl_ev_block(c, e, &s->with.body);
        c->name_scopes.len--;
        return f;
    }
    case GK_SERVER_DO: return fl_ev_lower_server_do(c, e, s, g);
    case GK_RNN: return fl_ev_lower_rnn(c, e, s, g);
    case GK_WHILE: return fl_ev_lower_while_guard(c, e, s, g);
    case GK_COND: return fl_ev_lower_cond_guard(c, e, s, g);
    case GK_CALLS: {
        FlValue *r = fl_ev_call_simple(c, g->guard.a, s->with.expr->span, NULL, 0);
        if (r->kind == VK_ERROR) return FLOW_ERROR;
        if (s->with.as_name) fl_env_set(e, s->with.as_name, r);
        Flow f = fl_ev_block(c, e, &s->with.body);
        if (g->guard.b && fl_ev_call_simple(c, g->guard.b, s->with.expr->span, NULL, 0)->kind == VK_ERROR)
            return FLOW_ERROR;
        return f;
    }
    case GK_BLOCK: {
        if (s->with.as_name) fl_ev_error(c, s->span, "'with block_guard()' binds no name");
        FlBlock *block = c->b.block, *home = c->home;
        c->b.block = c->home = fl_ir_block(c->b.main, (int)g->guard.n);
        Flow f = fl_ev_block(c, e, &s->with.body);
        c->b.block = block;
        c->home = home;
        return f;
    }
    case GK_COUNT: break;
    }
    return FLOW_NORMAL;
}

/* ------------------------------------------------------------------ statement dispatch */

/* The count of a `parallel_for i in range(n)` or `in list`: known at compile time. */
static bool iteration_count(Ctx *c, FlValue *v, FlSpan sp, int64_t *n) {
    if (v->kind == VK_INT) {
        *n = v->i;
        return true;
    }
    if (fl_v_is_seq(v)) {
        *n = (int64_t)v->list.len;
        return true;
    }
    if (v->kind != VK_ERROR)
        fl_ev_error(c, sp, "parallel_for needs a compile-time count (an int or range(n)), found %s", fl_v_type_name(v));
    return false;
}

/* break or continue directly in a select case (or in runtime ifs within it), as in Go: a break
 * ends the case; a continue is the innermost runtime loop's around the select, and ends the
 * case and every select case between. Both lower as a continue of the case (RtLoop). */
static Flow select_exit(Ctx *c, bool is_break, FlSpan sp) {
    size_t top = c->rtloops.len - 1, k = top;
    if (is_break) return fl_ev_lower_exit(c, c->rtloops.data[top], false, sp);
    while (c->rtloops.data[k] && c->rtloops.data[k]->is_select) {
        if (c->rtloops.data[k]->in_ct_loop) {
            fl_ev_error(c, sp, "'continue' inside a select case cannot continue a compile-time loop: that loop is "
                               "unrolled when the program is built, so its iterations cannot depend on run-time values");
            return FLOW_ERROR;
        }
        if (k == 0) break;
        k--;
    }
    RtLoop *l = c->rtloops.data[k];
    if (!l || l->is_select) {
        fl_ev_error(c, sp, "'continue' outside a loop");
        return FLOW_ERROR;
    }
    fl_ev_lower_exit(c, l, false, sp);
    for (size_t i = k + 1; i <= top; i++) fl_ev_lower_exit(c, c->rtloops.data[i], false, sp);
    return FLOW_CONTINUE;
}

/* `a, b = X.recv()`: Go's two-value receive when X is a channel. */
static bool is_recv2(const FlAst *s) {
    const FlAst *t = s->assign.target, *v = s->assign.value;
    return s->assign.more.len == 0 && (t->kind == FL_AST_TUPLE || t->kind == FL_AST_LIST) && t->list.items.len == 2 &&
           v->kind == FL_AST_CALL && v->call.nargs == 0 && v->call.fn->kind == FL_AST_ATTR &&
           strcmp(v->call.fn->attr.name, "recv") == 0;
}

/* The error of a raise or a failed assert at sp, and when it stands inside a runtime if, loop
 * or select case, a note that the program is built once (whether that code runs is only known
 * at run time). */
static void raise_error(Ctx *c, FlSpan sp, const char *msg) {
    if (c->rt_depth > 0 && fl_ev_in_driver(c)) { /* under a runtime condition of the driver: when it runs */
        fl_ev_driver_raise(c, msg, sp);
        return;
    }
    fl_ev_error(c, sp, "%s", msg);
    if (c->rt_depth > 0)
        fl_diag_note(&c->diag, fl_ev_user_span(c, sp), "this is inside a runtime 'if', loop or select case: the "
                     "program is built once, whether or not that code runs; fluid.panic(msg) stops the program "
                     "when it runs");
}

/* The message of a failed `assert test, msg`: "assertion failed: msg" (msg's repr), NULL
 * (reported) when msg is in error. */
static const char *assert_message(Ctx *c, Env *e, FlAst *s) {
    FlValue *m = s->cond.then ? fl_ev_expr(c, e, s->cond.then) : NULL;
    if (m && m->kind == VK_ERROR) return NULL;
    FlBuf b = {0};
    const char *msg = NULL;
    if (!m || fl_v_repr_at(c, m, &b, s->span))
        msg = fl_arena_printf(&c->arena, "assertion failed%s%s", m ? ": " : "", fl_buf_str(&b));
    fl_buf_free(&b);
    return msg;
}

/* `assert test, msg` of a bool value of the driver (a fetched value compared): a conditional
 * block that, when the test is false at run time, stops the run as Python's AssertionError. */
static Flow assert_at_run_time(Ctx *c, Env *e, FlAst *s, FlValue *t) {
    FlVarDesc *d = fl_ev_var_desc(c, t);
    if (!d || d->kind != FL_VAR_DENSE || d->dtype != FL_DT_BOOL) {
        fl_ev_error(c, s->cond.test->span, "'assert' of a value of the driver needs a bool (a comparison), found %s",
                    d ? fl_dtype_name(d->dtype) : "a var not visible here");
        return FLOW_ERROR;
    }
    const char *msg = assert_message(c, e, s);
    if (!msg) return FLOW_ERROR;
    DriverSwap sw;
    fl_ev_driver_enter(c, &sw);
    Flow f = FLOW_ERROR;
    FlValue *nc = fl_ev_op2(c, "logical_not", t, NULL, s->span);
    if (nc->kind != VK_ERROR) {
        FlBlock *parent = c->b.block, *sub = fl_ir_block_new(c->b.main, parent->idx);
        c->b.block = sub;
        c->rt_depth++;
        fl_ev_driver_raise(c, msg, s->span);
        c->rt_depth--;
        c->b.block = parent;
        FlOpDesc *op = fl_ev_op_raw(c, parent, "conditional_block", s->span);
        fl_ir_op_set_block(op, "sub_block", sub->idx);
        fl_ir_op_add_input(op, "Cond", nc->var.name);
        fl_ev_control_io(c, parent, sub, op, "X", "Out");
        f = fl_ev_infer(c, parent, op, s->span) ? FLOW_NORMAL : FLOW_ERROR;
    }
    fl_ev_driver_leave(c, &sw);
    return f;
}

/* `assert test, msg`: a false compile-time test is an error at the statement, quoting msg; a
 * test on the driver's values is checked when the driver runs. */
static Flow stmt_assert(Ctx *c, Env *e, FlAst *s) {
    FlValue *t = fl_ev_expr(c, e, s->cond.test);
    if (t->kind == VK_ERROR) return FLOW_ERROR;
    if (t->kind == VK_VAR && (fl_ev_in_driver(c) || fl_ev_is_driver_var(c, t))) return assert_at_run_time(c, e, s, t);
    if (t->kind == VK_VAR) {
        fl_ev_error(c, s->cond.test->span, "'assert' needs a compile-time condition, found a Var (its value is "
                                           "only known at run time)");
        return FLOW_ERROR;
    }
    bool ok, tv = fl_v_truthy(c, t, s->cond.test->span, &ok);
    if (!ok) return FLOW_ERROR;
    if (tv) return FLOW_NORMAL;
    const char *msg = assert_message(c, e, s);
    if (!msg) return FLOW_ERROR;
    raise_error(c, s->span, msg);
    return c->rt_depth > 0 && fl_ev_in_driver(c) ? FLOW_NORMAL : FLOW_ERROR;
}

/* `raise E("msg")`: an error at the statement, naming the exception and quoting its message. */
static Flow stmt_raise(Ctx *c, Env *e, FlAst *s) {
    FlValue *x = s->expr.e ? fl_ev_expr(c, e, s->expr.e) : NULL;
    if (x && x->kind == VK_ERROR) return FLOW_ERROR;
    if (!x) {
        fl_ev_error(c, s->span, "'raise' without an exception: there is no exception being handled to raise again");
        return FLOW_ERROR;
    }
    FlValue *cls = x->kind == VK_CLASS ? x : x->kind == VK_RECORD ? x->rec.cls : NULL;
    FlValue *args = x->kind == VK_RECORD ? fl_map_find_str(&x->rec.attrs->map, "args") : NULL;
    FlBuf b = {0};
    bool ok = true;
    if (x->kind == VK_STR) fl_buf_append(&b, x->str.s, x->str.n);
    else if (!cls || !fl_ev_is_subclass(cls, fl_env_find(c->builtins, fl_intern_str(&c->in, "BaseException")))) {
        fl_buf_free(&b);
        fl_ev_error(c, s->expr.e->span, "exceptions must derive from BaseException, found %s", fl_v_type_name(x));
        return FLOW_ERROR;
    } else {
        fl_buf_puts(&b, cls->cls.name);
        if (args && fl_v_is_seq(args) && args->list.len) {
            fl_buf_puts(&b, ": ");
            FlValue *a0 = args->list.len == 1 ? args->list.items[0] : args;
            ok = fl_v_repr_at(c, a0, &b, s->span);
        }
    }
    if (ok) raise_error(c, s->span, fl_buf_str(&b));
    fl_buf_free(&b);
    return ok && c->rt_depth > 0 && fl_ev_in_driver(c) ? FLOW_NORMAL : FLOW_ERROR;
}

/* `global a, b` / `nonlocal a`: assignments to the names in this scope bind them in the module
 * (global) or in the nearest enclosing function scope that binds them (nonlocal). */
static Flow stmt_decl(Ctx *c, Env *e, FlAst *s) {
    bool bad = false;
    for (size_t i = 0; i < s->decl.nnames; i++) {
        const char *n = s->decl.names[i];
        Env *to = NULL;
        if (!s->decl.nonlocal) {
            to = c->cur_mod ? c->cur_mod->globals : NULL;
        } else {
            Env *globals = c->cur_mod ? c->cur_mod->globals : NULL;
            for (Env *x = e->parent; x && x != globals && !to; x = x->parent)
                if (fl_map_find_str(&x->map, n)) to = x;
            if (!to) {
                fl_ev_error(c, s->decl.name_spans[i], "no binding for nonlocal '%s' found", n);
                bad = true;
                continue;
            }
        }
        if (to && to != e) fl_env_redirect(c, e, n, to);
    }
    return bad ? FLOW_ERROR : FLOW_NORMAL;
}

static Flow eval_stmt(Ctx *c, Env *e, FlAst *s) {
    switch (s->kind) {
    case FL_AST_EXPR_STMT: {
        FlValue *v = fl_ev_expr(c, e, s->expr.e);
        return v->kind == VK_ERROR ? FLOW_ERROR : FLOW_NORMAL;
    }
    case FL_AST_ASSIGN: {
        if (is_recv2(s)) {
            FlValue *ch = fl_ev_expr(c, e, s->assign.value->call.fn->attr.obj);
            if (ch->kind == VK_ERROR) return FLOW_ERROR;
            if (fl_ev_is_channel(c, ch)) return fl_ev_lower_recv2(c, e, s->assign.target, ch, s->span);
            /* another object's recv(), called once: its object is not evaluated again */
            FlSpan csp = s->assign.value->span;
            FlValue *r = fl_ev_getattr(c, ch, "recv", s->assign.value->call.fn->attr.name_span);
            if (r->kind != VK_ERROR) r = fl_ev_call_simple(c, r, csp, NULL, 0);
            bool ok = fl_ev_assign(c, e, s->assign.target, r);
            return ok && r->kind != VK_ERROR ? FLOW_NORMAL : FLOW_ERROR;
        }
        /* a = b = v: v once, then the targets left to right; after a failed one the rest are
         * bound to the error value (quietly), as Python would not reach them */
        FlValue *v = fl_ev_expr(c, e, s->assign.value);
        bool ok = fl_ev_assign(c, e, s->assign.target, v);
        for (size_t i = 0; i < s->assign.more.len; i++) {
            FlAst *t = s->assign.more.items[i];
            if (ok) ok = fl_ev_assign(c, e, t, v);
            else if (t->kind == FL_AST_NAME || t->kind == FL_AST_TUPLE || t->kind == FL_AST_LIST) fl_ev_assign(c, e, t, c->error);
        }
        return ok && v->kind != VK_ERROR ? FLOW_NORMAL : FLOW_ERROR;
    }
    case FL_AST_AUGASSIGN: {
        FlValue *cur = fl_ev_expr(c, e, s->assign.target);
        FlValue *v = fl_ev_expr(c, e, s->assign.value);
        FlValue *r = fl_ev_binop(c, s->assign.op, cur, v, s->span);
        if (s->assign.target->kind != FL_AST_NAME && s->assign.target->kind != FL_AST_ATTR &&
            s->assign.target->kind != FL_AST_INDEX) {
            fl_ev_error(c, s->assign.target->span, "illegal target for augmented assignment");
            return FLOW_ERROR;
        }
        return fl_ev_assign(c, e, s->assign.target, r) && r->kind != VK_ERROR ? FLOW_NORMAL : FLOW_ERROR;
    }
    case FL_AST_DEF: {
        FlValue *f = fl_ev_decorate(c, e, &s->def.decos, fl_ev_make_func(c, e, s));
        fl_env_set(e, s->def.name, f);
        return f->kind == VK_ERROR ? FLOW_ERROR : FLOW_NORMAL;
    }
    case FL_AST_RETURN:
        if (c->func_depth == 0) {
            fl_ev_error(c, s->span, "'return' outside a function");
            return FLOW_ERROR;
        }
        c->ret = s->expr.e ? fl_ev_expr(c, e, s->expr.e) : c->none;
        if (c->rtfunc && c->rt_depth > c->rtfunc->rt_depth) return fl_ev_lower_return(c, s);
        return FLOW_RETURN;
    case FL_AST_IF: {
        FlValue *t = fl_ev_expr(c, e, s->cond.test);
        if (t->kind == VK_ERROR) return FLOW_ERROR;
        if (t->kind == VK_VAR && (!fl_ev_is_driver_var(c, t) || fl_ev_in_driver(c))) return fl_ev_lower_if(c, e, s, t);
        if (t->kind == VK_VAR) { /* an if on a fetched value is the driver's (docs/driver.md) */
            DriverSwap sw;
            fl_ev_driver_enter(c, &sw);
            Flow f = fl_ev_lower_if(c, e, s, t);
            fl_ev_driver_leave(c, &sw);
            return f;
        }
        bool ok;
        bool tv = fl_v_truthy(c, t, s->cond.test->span, &ok);
        if (!ok) return FLOW_ERROR;
        return fl_ev_block(c, e, tv ? &s->cond.then_body : &s->cond.else_body);
    }
    case FL_AST_FOR: return stmt_for(c, e, s);
    case FL_AST_WHILE: return stmt_while(c, e, s);
    case FL_AST_BREAK:
    case FL_AST_CONTINUE: {
        bool is_break = s->kind == FL_AST_BREAK;
        if (c->loop_depth > 0) {
            if (c->rt_depth == c->loop_rt_depth) return is_break ? FLOW_BREAK : FLOW_CONTINUE;
            fl_ev_error(c, s->span, "'%s' under a runtime 'if' or 'select' cannot leave a compile-time loop: that "
                                    "loop is unrolled when the program is built, so when it stops cannot depend on "
                                    "run-time values", is_break ? "break" : "continue");
            return FLOW_BREAK; /* ends the unrolling: said once */
        }
        RtLoop *l = fl_ev_rt_loop(c);
        if (l && l->is_try) {
            fl_ev_error(c, s->span, "'%s' inside a 'try' around a reader's EOFException is not compiled: the try "
                                    "body runs once at run time; put the '%s' in the 'except' clause or in a loop "
                                    "inside the try", is_break ? "break" : "continue", is_break ? "break" : "continue");
            return FLOW_ERROR;
        }
        if (l && l->is_select) return select_exit(c, is_break, s->span);
        if (l) return fl_ev_lower_exit(c, l, is_break, s->span);
        fl_ev_error(c, s->span, "'%s' outside a loop", is_break ? "break" : "continue");
        return FLOW_ERROR;
    }
    case FL_AST_PASS: return FLOW_NORMAL;
    case FL_AST_IMPORT:
    case FL_AST_FROM_IMPORT: return stmt_import(c, e, s);
    case FL_AST_WITH: return stmt_with(c, e, s);
    case FL_AST_GO: return fl_ev_lower_go(c, e, &s->with.body, s->span);
    case FL_AST_PARALLEL_FOR: {
        FlValue *it = fl_ev_expr(c, e, s->loop.iter);
        int64_t n;
        if (!iteration_count(c, it, s->loop.iter->span, &n)) return FLOW_ERROR;
        if (s->loop.target->kind != FL_AST_NAME) {
            fl_ev_error(c, s->loop.target->span, "parallel_for binds one name");
            return FLOW_ERROR;
        }
        return fl_ev_lower_parallel_for(c, e, n, s->loop.target->name, false, &s->loop.body, s->span);
    }
    case FL_AST_SELECT: return fl_ev_lower_select(c, e, s);
    case FL_AST_CLASS: return fl_ev_class(c, e, s);
    case FL_AST_ASSERT: return stmt_assert(c, e, s);
    case FL_AST_RAISE: return stmt_raise(c, e, s);
    case FL_AST_GLOBAL: return stmt_decl(c, e, s);
    case FL_AST_TRY: return fl_ev_stmt_try(c, e, s);
    case FL_AST_NAME: case FL_AST_INT: case FL_AST_FLOAT: case FL_AST_STR: case FL_AST_TRUE:
    case FL_AST_FALSE: case FL_AST_NONE: case FL_AST_ATTR: case FL_AST_CALL: case FL_AST_INDEX:
    case FL_AST_SLICE: case FL_AST_LIST: case FL_AST_TUPLE: case FL_AST_DICT: case FL_AST_BINOP:
    case FL_AST_UNOP: case FL_AST_AND: case FL_AST_OR: case FL_AST_COMPARE: case FL_AST_COND:
    case FL_AST_LAMBDA: case FL_AST_LISTCOMP: case FL_AST_DICTCOMP: case FL_AST_COMP_FOR:
    case FL_AST_COMP_IF: case FL_AST_CASE: case FL_AST_STARRED: case FL_AST_CMP_CHAIN:
    case FL_AST_COUNT: break;
    }
    /* an expression node where a statement stands: evaluated for its effects */
    FlValue *v = fl_ev_expr(c, e, s);
    return v->kind == VK_ERROR ? FLOW_ERROR : FLOW_NORMAL;
}
