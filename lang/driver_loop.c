/* driver_loop.c: which `for ... in range(...)` is a runtime loop of the driver (docs/driver.md,
 * "Which `for` is a runtime loop").
 *
 * A `for` over range(...) is the driver's when a bound is a driver var (a fetched value), or when
 * its body runs programs: a static scan of the body finds a call of a `run` method (exe.run), or
 * a call of a function the compiler can name at that point (a function bound to a name, a method
 * of an object bound to a name, a method of `self` inside a method) whose body does, a few calls
 * deep. Such a loop is lowered by fl_ev_lower_for_range (lower.c) into the driver: a counter and a
 * `while`, with break, continue and else as in any runtime loop. Every other `for` is unrolled at
 * compile time, as before; its range() is called once, with the arguments evaluated here.
 *
 * Exits (docs/driver.md, "Exits"): a `return` inside a runtime loop or `if` of a function call
 * clears the call's `alive` flag (RtFunc, made at the call's start where the call's first ops
 * went, when the first such return needs it), breaks every runtime loop of the call around it,
 * and the statements after each statement that lowered one run on `alive` (fl_ev_lower_rest).
 * A `return value` there assigns the value to the call's result var, a var of the driver that is
 * the call's value (return_value, fl_ev_rtfunc_value).
 */
#include <string.h>

#include "lang/eval_impl.h"

#define SCAN_CALL_DEPTH 6 /* how many calls deep the scan follows named functions */

typedef struct Scan {
    Ctx *c;
    Env *env;       /* where names of the code scanned are looked up */
    FlValue *self;  /* the class of `self` in a method scanned (NULL: none) */
    const char *self_name;
    int depth;
} Scan;

static bool scan_node(Scan *s, const FlAst *n);

static bool scan_list(Scan *s, const FlAstList *l) {
    for (size_t i = 0; i < l->len; i++)
        if (scan_node(s, l->items[i])) return true;
    return false;
}

/* Whether function value f (a def of the script, perhaps a bound method) runs programs. */
static bool scan_func(Scan *s, FlValue *f) {
    if (!f || f->kind != VK_FUNC || !f->func.def || s->depth >= SCAN_CALL_DEPTH) return false;
    const FlAst *def = f->func.def;
    Scan inner = {.c = s->c, .env = f->func.closure, .depth = s->depth + 1};
    if (f->func.owner && def->def.nparams > 0) { /* a method: its first parameter is the instance */
        inner.self = f->func.owner;
        inner.self_name = def->def.params[0].name;
    }
    return scan_list(&inner, &def->def.body);
}

/* The function a call's callee names, when the compiler can name it here; NULL otherwise. */
static FlValue *callee(Scan *s, const FlAst *fn) {
    if (fn->kind == FL_AST_NAME) {
        FlValue *v = s->env ? fl_env_find_then(s->env, s->c->builtins, fn->name) : NULL;
        return v && v->kind == VK_FUNC ? v : NULL;
    }
    if (fn->kind != FL_AST_ATTR || fn->attr.obj->kind != FL_AST_NAME) return NULL;
    const char *on = fn->attr.obj->name;
    FlValue *cls = NULL;
    if (s->self && on == s->self_name) {
        cls = s->self;
    } else {
        FlValue *o = s->env ? fl_env_find(s->env, on) : NULL;
        if (o && o->kind == VK_RECORD && o->rec.cls) cls = o->rec.cls;
        if (o && o->kind == VK_CLASS) cls = o;
    }
    FlValue *m = cls ? fl_ev_class_attr(cls, fn->attr.name) : NULL;
    return m && m->kind == VK_FUNC ? m : NULL;
}

static bool scan_call(Scan *s, const FlAst *n) {
    const FlAst *fn = n->call.fn;
    if (fn->kind == FL_AST_ATTR && strcmp(fn->attr.name, "run") == 0) return true; /* exe.run, pe.run */
    for (size_t i = 0; i < n->call.nargs; i++)
        if (scan_node(s, n->call.args[i].value)) return true;
    if (scan_node(s, fn)) return true;
    return scan_func(s, callee(s, fn));
}

static bool scan_node(Scan *s, const FlAst *n) {
    if (!n) return false;
    switch (n->kind) {
    case FL_AST_NAME: case FL_AST_INT: case FL_AST_FLOAT: case FL_AST_STR: case FL_AST_TRUE: case FL_AST_FALSE:
    case FL_AST_NONE: case FL_AST_BREAK: case FL_AST_CONTINUE: case FL_AST_PASS: case FL_AST_IMPORT:
    case FL_AST_FROM_IMPORT: case FL_AST_GLOBAL:
        return false;
    case FL_AST_ATTR: return scan_node(s, n->attr.obj);
    case FL_AST_CALL: return scan_call(s, n);
    case FL_AST_INDEX: return scan_node(s, n->index.obj) || scan_node(s, n->index.index);
    case FL_AST_SLICE: return scan_node(s, n->slice.lo) || scan_node(s, n->slice.hi) || scan_node(s, n->slice.step);
    case FL_AST_LIST: case FL_AST_TUPLE: return scan_list(s, &n->list.items);
    case FL_AST_DICT: return scan_list(s, &n->dict.keys) || scan_list(s, &n->dict.vals);
    case FL_AST_BINOP: case FL_AST_AND: case FL_AST_OR: case FL_AST_COMPARE: case FL_AST_CMP_CHAIN:
        return scan_node(s, n->binop.l) || scan_node(s, n->binop.r);
    case FL_AST_UNOP: case FL_AST_STARRED: return scan_node(s, n->unop.e);
    case FL_AST_COND: return scan_node(s, n->cond.test) || scan_node(s, n->cond.then) || scan_node(s, n->cond.other);
    case FL_AST_LAMBDA: case FL_AST_DEF: case FL_AST_CLASS: return false; /* defining runs nothing */
    case FL_AST_LISTCOMP: case FL_AST_DICTCOMP:
        return scan_node(s, n->comp.elt) || scan_node(s, n->comp.val) || scan_list(s, &n->comp.clauses);
    case FL_AST_COMP_FOR: return scan_node(s, n->loop.iter);
    case FL_AST_COMP_IF: return scan_node(s, n->cond.test);
    case FL_AST_EXPR_STMT: case FL_AST_RETURN: case FL_AST_RAISE: return scan_node(s, n->expr.e);
    case FL_AST_ASSIGN: case FL_AST_AUGASSIGN: return scan_node(s, n->assign.value);
    case FL_AST_IF:
        return scan_node(s, n->cond.test) || scan_list(s, &n->cond.then_body) || scan_list(s, &n->cond.else_body);
    case FL_AST_ASSERT: return scan_node(s, n->cond.test) || scan_node(s, n->cond.then);
    case FL_AST_FOR: case FL_AST_WHILE: case FL_AST_PARALLEL_FOR:
        return scan_node(s, n->loop.iter) || scan_list(s, &n->loop.body) || scan_list(s, &n->loop.else_body);
    case FL_AST_WITH: return scan_node(s, n->with.expr) || scan_list(s, &n->with.body);
    case FL_AST_TRY: return scan_list(s, &n->loop.body) || scan_list(s, &n->loop.else_body);
    case FL_AST_GO: return scan_list(s, &n->with.body);
    case FL_AST_SELECT: return scan_list(s, &n->select.cases);
    case FL_AST_CASE: return scan_node(s, n->case_.op) || scan_list(s, &n->case_.body);
    case FL_AST_COUNT: return false;
    }
    return false;
}

bool fl_ev_body_runs_programs(Ctx *c, Env *e, FlAstList *body) {
    Scan sc = {.c = c, .env = e};
    return scan_list(&sc, body);
}

/* range(...) of the builtin: its argument expressions (1 to 3 positional), else false. */
static bool range_call(Ctx *c, Env *e, const FlAst *it) {
    if (it->kind != FL_AST_CALL || it->call.fn->kind != FL_AST_NAME || strcmp(it->call.fn->name, "range") != 0)
        return false;
    FlValue *r = fl_env_find_then(e, c->builtins, it->call.fn->name);
    if (!r || r->kind != VK_BUILTIN || strcmp(r->builtin.name, "range") != 0) return false;
    if (it->call.nargs < 1 || it->call.nargs > 3) return false;
    for (size_t i = 0; i < it->call.nargs; i++)
        if (it->call.args[i].name || it->call.args[i].star) return false;
    return true;
}

FlValue *fl_ev_for_iter(Ctx *c, Env *e, FlAst *s, Flow *flow) {
    FlAst *it = s->loop.iter;
    *flow = FLOW_NORMAL;
    if (!range_call(c, e, it)) return fl_ev_expr(c, e, it);
    FlValue *args[3];
    size_t n = it->call.nargs;
    bool driver_bound = false;
    for (size_t i = 0; i < n; i++) {
        args[i] = fl_ev_expr(c, e, it->call.args[i].value);
        if (args[i]->kind == VK_ERROR) return args[i];
        driver_bound |= fl_ev_is_driver_var(c, args[i]);
    }
    Scan sc = {.c = c, .env = e};
    if (!driver_bound && !scan_list(&sc, &s->loop.body)) /* a compile-time loop */
        return fl_ev_call_simple(c, fl_env_find_then(e, c->builtins, "range"), it->span, args, n);
    FlValue *start = n >= 2 ? args[0] : fl_v_int(c, 0), *stop = n >= 2 ? args[1] : args[0];
    int64_t step = 1;
    if (n == 3 && (args[2]->kind != VK_INT || args[2]->i == 0)) {
        fl_ev_error(c, it->call.args[2].span, "the step of a runtime loop's range() must be a nonzero int known when "
                                             "the program compiles, found %s", args[2]->kind == VK_INT ? "0" : fl_v_type_name(args[2]));
        *flow = FLOW_ERROR;
        return NULL;
    }
    if (n == 3) step = args[2]->i;
    for (int k = 0; k < 2; k++) {
        FlValue *b = k ? stop : start;
        if (b->kind != VK_INT && !fl_ev_is_driver_var(c, b)) {
            fl_ev_error(c, it->span, "a runtime loop's range() takes ints or fetched values, found %s",
                        fl_v_type_name(b));
            *flow = FLOW_ERROR;
            return NULL;
        }
    }
    DriverSwap sw;
    fl_ev_driver_enter(c, &sw);
    *flow = fl_ev_lower_for_range(c, e, s, start, stop, step);
    fl_ev_driver_leave(c, &sw);
    return NULL;
}

/* ------------------------------------------------------------------ exits */

void fl_ev_rtfunc_begin(Ctx *c, RtFunc *f) {
    FlProgram *d = c->bundle->driver;
    *f = (RtFunc){.mark = c->rtloops.len - 1, .rt_depth = c->rt_depth, .prog = c->b.main, .block = c->b.block,
                  .pos = c->b.block->ops.len, .driver_pos = d && d != c->b.main ? fl_ir_block(d, 0)->ops.len : 0};
    c->rtfunc = f;
}

/* The call's alive flag, made true before the call's first op: in the block current at the call,
 * or in the driver's block 0 when the return is the driver's and the call was not (the driver is
 * entered there, fl_ev_driver_enter). */
static const char *func_alive(Ctx *c, RtFunc *f, FlSpan sp) {
    if (f->alive) return f->alive;
    bool in_driver = fl_ev_in_driver(c);
    FlBlock *b = f->block;
    size_t pos = f->pos;
    if (c->b.main != f->prog) {
        b = fl_ir_block(c->b.main, 0);
        pos = in_driver ? f->driver_pos : 0;
    }
    if (pos > b->ops.len) pos = b->ops.len;
    f->alive = fl_ev_new_flag(c, b, "func_alive", pos, true, sp);
    f->alive_in_driver = in_driver;
    return f->alive;
}

/* A runtime return's value (c->ret), assigned to the call's result var: made in the driver's
 * block 0 at the first such return, declared as its value is; a number takes the result's dtype.
 * Every runtime return of a call gives a value (a fetched value or a number, of one dtype and
 * rank) or none does. false: an error (reported). */
static bool return_value(Ctx *c, RtFunc *f, FlAst *s) {
    FlValue *v = c->ret;
    bool valued = v != c->none;
    if (!valued && !f->result) return true;
    FlSpan sp = valued ? s->expr.e->span : s->span;
    if (!valued || (f->exits > 0 && !f->result)) {
        fl_ev_error(c, sp, "this runtime 'return' %s where an earlier one of the call %s: the call's value would "
                           "be known only at run time, and None is not a value the driver has (docs/driver.md, "
                           "\"Exits\")", valued ? "gives a value" : "gives None", valued ? "gave None" : "gave a value");
        return false;
    }
    if (!fl_ev_in_driver(c)) {
        fl_ev_error(c, sp, "a 'return' of a value inside a runtime loop or 'if' of a program (not of the code around "
                           "exe.run): return it after the loop");
        return false;
    }
    bool number = fl_v_is_num(v);
    if (number) v = fl_ev_driver_const(c, v, sp);
    if (v->kind == VK_ERROR) return false;
    if (!fl_ev_is_driver_var(c, v)) {
        fl_ev_error(c, sp, "a 'return' inside a runtime loop or 'if' returns a fetched value or a number (a value "
                           "known only at run time), found %s", fl_v_type_name(v));
        return false;
    }
    const FlVarDesc *d = fl_ev_var_desc(c, v);
    FlBlock *g = fl_ir_block(c->b.main, 0);
    FlVarDesc *r = f->result ? fl_ir_var_find(g, f->result) : NULL;
    if (r && number && d->dtype != r->dtype) {
        const char *names[3] = {"X", "in_dtype", "out_dtype"};
        FlValue *vals[3] = {v, fl_v_int(c, d->dtype), fl_v_int(c, r->dtype)};
        v = fl_ev_driver_kwop(c, "cast", names, vals, 3, sp);
        if (v->kind == VK_ERROR) return false;
        d = fl_ev_var_desc(c, v);
    }
    if (r && (d->dtype != r->dtype || d->ndim != r->ndim)) {
        FlBuf a = {0}, b = {0};
        fl_ir_shape_str(d->ndim, d->shape, &a);
        fl_ir_shape_str(r->ndim, r->shape, &b);
        fl_ev_error(c, sp, "this runtime 'return' gives a value of %s %s where an earlier one of the call gave %s %s: "
                           "the call's value is one var of the driver", fl_dtype_name(d->dtype), fl_buf_str(&a),
                    fl_dtype_name(r->dtype), fl_buf_str(&b));
        fl_buf_free(&a);
        fl_buf_free(&b);
        return false;
    }
    if (!r) {
        r = fl_ev_driver_value_var(c, g, "func_result", d, sp);
        f->result = r->name;
    }
    for (int i = 0; i < r->ndim; i++) /* a dim the returns differ in is known only at run time */
        if (r->shape[i] != d->shape[i]) r->shape[i] = -1;
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "assign", sp);
    fl_ir_op_add_input(op, "X", v->var.name);
    fl_ir_op_add_output(op, "Out", f->result);
    return fl_ev_infer(c, c->b.block, op, sp);
}

FlValue *fl_ev_rtfunc_value(Ctx *c, RtFunc *f, const FlAst *def, FlValue *r, FlSpan sp) {
    (void)r;
    const FlAstList *body = &def->def.body;
    const FlAst *last = body->len ? body->items[body->len - 1] : NULL;
    if (!last || (last->kind != FL_AST_RAISE && (last->kind != FL_AST_RETURN || !last->expr.e)))
        return fl_ev_error(c, sp, "%s() returns a value under a runtime condition, so every way out of it must: end "
                                  "it with a 'return' of a value or a 'raise' (falling off its end returns None, "
                                  "which is not a value the driver has)", def->def.name ? def->def.name : "the function");
    DriverSwap sw;
    fl_ev_driver_enter(c, &sw);
    FlValue *v = fl_v_var(c, f->result);
    fl_ev_driver_leave(c, &sw);
    return v;
}

Flow fl_ev_lower_return(Ctx *c, FlAst *s) {
    RtFunc *f = c->rtfunc;
    size_t k = c->rtloops.len;
    while (k > 0 && c->rtloops.data[k - 1]) k--;
    if (k == 0 || k - 1 != f->mark) return FLOW_RETURN; /* in a goroutine or parallel_for: reported there */
    for (size_t i = k; i < c->rtloops.len; i++)
        if (c->rtloops.data[i]->is_select) return FLOW_RETURN; /* reported at the select */
    if (c->ret->kind == VK_ERROR) return FLOW_ERROR;
    if (c->loop_depth > 0) {
        fl_ev_error(c, s->span, "a runtime 'return' (inside a runtime loop or 'if') cannot leave a loop that is "
                                "unrolled when the program is built");
        return FLOW_ERROR;
    }
    if (!return_value(c, f, s)) return FLOW_ERROR;
    fl_ev_set_flag(c, func_alive(c, f, s->span), false, s->span);
    f->exits++;
    if (k == c->rtloops.len) return FLOW_NORMAL; /* no runtime loop: fl_ev_run_stmts ends the list */
    /* every runtime loop of the call ends, the innermost as a break here does */
    for (size_t i = k; i + 1 < c->rtloops.len; i++) fl_ev_lower_exit(c, c->rtloops.data[i], true, s->span);
    return fl_ev_lower_exit(c, c->rtloops.data[c->rtloops.len - 1], true, s->span);
}
