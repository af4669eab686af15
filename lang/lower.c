/* lower.c: runtime control flow, lowered to sub-blocks and control ops.
 *
 * An `if` or `while` on a Var, `for v in ch` over a channel, select, go, parallel_for and
 * server.do: the body is evaluated with the current block set to a new sub-block, and a control
 * op (conditional_block, while, select, go, parallel_for, listen_and_serv) in the parent block
 * names the sub-block and the parent's vars the sub-block reads (X) and writes (Out).
 *
 * Carried variables: names that the body rebinds to Vars are carried out: an `assign` at the end
 * of the sub-block writes the new value into the var the name had before (or, for a new name,
 * into a fresh var of the home block: the block around the outermost runtime if or loop), and
 * the name is bound to that outer var again. That is what makes `i = i + 1` in a `while` body a
 * loop-carried variable that the condition and the code after the loop see. A name rebound
 * there must keep its dtype and shape. Whatever Var the body left the name bound to (an op's
 * result, a Var from outside, a received value) is carried, so a plain rebinding never leaks out
 * of a body that does not run; and before the statement every name its bodies may assign gets a
 * var of its own (own_names), so the carry-out never writes a var that another name, a list or a
 * closure holds. The program then computes what it computes with compile-time conditions
 * (tests/lang/staged.sh). A channel is carried by channel_assign (a reference). break and continue of a
 * runtime loop lower to bool flag vars (RtLoop in eval_impl.h).
 *
 * Invariants: c->b.block and c->home are restored when a body has been lowered, whatever its
 * flow; a sub-block's parent is the block of its control op; `return` cannot leave a runtime
 * body (a diagnostic).
 */
#include "lang/eval_impl.h"

#include <stdlib.h>
#include <string.h>

#include "compiler/ir/rules.h"
#include "compiler/ops.h"

/* ------------------------------------------------------------------ sub-blocks and carried names */

/* The names of e as a body found them: a journal of e (EnvJournal) kept from before the body, so
 * that what the body changed costs the names it wrote, not every name in scope (a program's
 * thousand names and thousand runtime ifs would otherwise take a million steps). */
typedef struct Snapshot {
    Env *e;
    EnvJournal j;
    FlBlock *home;     /* the home block then (NULL when not taken by run_bound) */
    size_t home_nvars; /* and its number of vars */
} Snapshot;

static void snap_take(Env *e, Snapshot *s) {
    s->e = e;
    s->home = NULL;
    s->home_nvars = 0;
    fl_env_journal_begin(e, &s->j);
}

/* Ends the snapshot (its names go on to a snapshot of e around it). */
static void snap_end(Snapshot *s) { fl_env_journal_end(s->e, &s->j); }

/* name's value when the snapshot was taken (NULL: unbound). */
static FlValue *snap_before(Snapshot *s, const char *name) {
    FlValue *old;
    return fl_env_journal_old(&s->j, name, &old) ? old : fl_map_find_str(&s->e->map, name);
}

typedef struct SlotName {
    size_t slot;
    const char *name;
} SlotName;
static int by_slot(const void *a, const void *b) {
    size_t x = ((const SlotName *)a)->slot, y = ((const SlotName *)b)->slot;
    return x < y ? -1 : x > y;
}

/* The names written since the snapshot that e binds now, in the order a walk over e's map meets
 * them (the order the carry-out's ops come in), into out. */
static void snap_written(Snapshot *s, StrVec *out) {
    FlMap *m = &s->e->map;
    size_t n = s->j.names.len, k = 0;
    SlotName *sn = fl_xmalloc(fl_mul_size(n + 1, sizeof *sn));
    for (size_t i = 0; i < n; i++) {
        const char *name = s->j.names.data[i];
        size_t slot = fl_map_slot(m, name, strlen(name));
        if (slot < m->cap) sn[k++] = (SlotName){slot, name};
    }
    qsort(sn, k, sizeof *sn, by_slot);
    for (size_t i = 0; i < k; i++) FL_VEC_PUSH(out, sn[i].name);
    free(sn);
}

/* Drops the names the body added, rebinds the ones it rebound. */
static void snap_restore(Env *e, Snapshot *s) {
    for (size_t i = 0; i < s->j.names.len; i++) {
        const char *name = s->j.names.data[i];
        FlValue *old;
        fl_env_journal_old(&s->j, name, &old);
        if (old) fl_map_put_str(&e->map, name, old);
        else fl_map_remove(&e->map, name, strlen(name));
    }
}

/* ------------------------------------------------------------------ owning the carried vars */

static FlValue *copy_var(Ctx *c, FlValue *v, FlSpan sp);
static FlBlock *home_block(Ctx *c, FlBlock *parent);

/* The names a target binds (a name, nested tuples and lists of them), into out. */
static void target_names(FlAst *t, StrVec *out) {
    if (!t) return;
    if (t->kind == FL_AST_NAME) FL_VEC_PUSH(out, t->name);
    if (t->kind == FL_AST_STARRED) target_names(t->unop.e, out);
    if (t->kind == FL_AST_TUPLE || t->kind == FL_AST_LIST)
        for (size_t i = 0; i < t->list.items.len; i++) target_names(t->list.items.items[i], out);
}

/* The names that statements of body (and of the runtime and compile-time blocks within it, not
 * of functions, goroutines or parallel_for bodies: their names stay inside) may bind. */
static void assigned_names(FlAstList *body, StrVec *out) {
    for (size_t i = 0; i < body->len; i++) {
        FlAst *s = body->items[i];
        switch (s->kind) {
        case FL_AST_ASSIGN:
            target_names(s->assign.target, out);
            for (size_t k = 0; k < s->assign.more.len; k++) target_names(s->assign.more.items[k], out);
            break;
        case FL_AST_AUGASSIGN: target_names(s->assign.target, out); break;
        case FL_AST_IF:
            assigned_names(&s->cond.then_body, out);
            assigned_names(&s->cond.else_body, out);
            break;
        case FL_AST_FOR:
        case FL_AST_WHILE:
            target_names(s->loop.target, out);
            assigned_names(&s->loop.body, out);
            assigned_names(&s->loop.else_body, out);
            break;
        case FL_AST_WITH: assigned_names(&s->with.body, out); break;
        case FL_AST_TRY:
            target_names(s->loop.target, out);
            assigned_names(&s->loop.body, out);
            assigned_names(&s->loop.else_body, out);
            break;
        case FL_AST_SELECT:
            for (size_t k = 0; k < s->select.cases.len; k++) {
                target_names(s->select.cases.items[k]->case_.target, out);
                assigned_names(&s->select.cases.items[k]->case_.body, out);
            }
            break;
        case FL_AST_DEF: case FL_AST_GO: case FL_AST_PARALLEL_FOR: case FL_AST_IMPORT:
        case FL_AST_FROM_IMPORT: case FL_AST_NAME: case FL_AST_INT: case FL_AST_FLOAT: case FL_AST_STR:
        case FL_AST_TRUE: case FL_AST_FALSE: case FL_AST_NONE: case FL_AST_ATTR: case FL_AST_CALL:
        case FL_AST_INDEX: case FL_AST_SLICE: case FL_AST_LIST: case FL_AST_TUPLE: case FL_AST_DICT:
        case FL_AST_BINOP: case FL_AST_UNOP: case FL_AST_AND: case FL_AST_OR: case FL_AST_COMPARE:
        case FL_AST_COND: case FL_AST_LAMBDA: case FL_AST_LISTCOMP: case FL_AST_DICTCOMP:
        case FL_AST_COMP_FOR: case FL_AST_COMP_IF: case FL_AST_EXPR_STMT: case FL_AST_RETURN:
        case FL_AST_BREAK: case FL_AST_CONTINUE: case FL_AST_PASS: case FL_AST_CASE:
        case FL_AST_STARRED: case FL_AST_CMP_CHAIN: case FL_AST_CLASS: case FL_AST_ASSERT:
        case FL_AST_RAISE: case FL_AST_GLOBAL: case FL_AST_COUNT:
            break;
        }
    }
}

/* Before a runtime body that may rebind names of e (bodies[0..n)), each such name bound to a
 * Var gets a var of its own: an assign in the current block copies the Var into a new one and
 * the name is bound to it. The body's carry-out then writes that var, never one that another
 * name, a list or a closure also holds (`z = x` before `if c: x = x + 1` leaves z alone, as
 * when c is a compile-time value). */
static void own_names(Ctx *c, Env *e, FlAstList **bodies, size_t n, FlSpan sp) {
    StrVec names = {0};
    for (size_t i = 0; i < n; i++) assigned_names(bodies[i], &names);
    for (size_t i = 0; i < names.len; i++) {
        FlValue *v = fl_map_find_str(&e->map, names.data[i]);
        int dt = -1;
        FlValue *nums = v && fl_ev_in_driver(c) ? fl_ev_ndarray_numbers(v, &dt) : NULL;
        if (v && (v->kind == VK_INT || v->kind == VK_FLOAT || v->kind == VK_BOOL || nums) && fl_ev_in_driver(c)) {
            /* a number or numpy array of the script that a runtime body of the driver rebinds (a
             * step counter `batch_id += 1`, a sum `total += float(loss)`, a value fed back
             * `w = exe.run(feed={'x': w}, ...)[0]`) changes at run time: from here on a var of
             * the driver holding it (a number: rank 0; int64, float64 or bool as Python's), which
             * the body reads on every run and its carry-out writes */
            if (!nums) dt = v->kind == VK_INT ? FL_DT_INT64 : v->kind == VK_FLOAT ? FL_DT_FLOAT64 : FL_DT_BOOL;
            FlValue *cv = fl_ev_driver_const_as(c, nums ? nums : v, dt, sp);
            if (cv->kind == VK_VAR) fl_env_set(e, names.data[i], cv);
            continue;
        }
        /* a Var of another program (a handle the driver passes to exe.run) is no var of this one */
        if (!v || v->kind != VK_VAR || v->var.prog != c->b.main) continue;
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++) seen = names.data[k] == names.data[i];
        if (!seen) fl_env_set(e, names.data[i], copy_var(c, v, sp));
    }
    FL_VEC_FREE(&names);
}

/* Where a name first bound inside a runtime block gets its var: the home block (see Ctx) when it
 * encloses parent, so that the var outlives every runtime if and loop iteration around it (as a
 * Python name does) and no enclosing block has to copy it out; else parent. */
static FlBlock *home_block(Ctx *c, FlBlock *parent) {
    for (FlBlock *x = parent; x; x = x->parent >= 0 ? fl_ir_block(c->b.main, x->parent) : NULL)
        if (x == c->home) return x;
    return parent;
}

bool fl_ev_zero_init(Ctx *c, FlBlock *b, FlVarDesc *d, FlSpan sp) {
    if (d->kind != FL_VAR_DENSE) return true;
    int nd = d->ndim;
    int64_t shape[FL_IR_MAX_DIMS], keep[FL_IR_MAX_DIMS];
    bool empty = false;
    for (int i = 0; i < nd; i++) {
        keep[i] = d->shape[i];
        shape[i] = d->shape[i] < 0 ? 0 : d->shape[i];
        empty = empty || shape[i] == 0;
    }
    FlDType dt = d->dtype;
    FlOpDesc *op = fl_ev_op_raw(c, b, "fill_constant", sp);
    fl_ir_op_add_output(op, "Out", d->name);
    fl_ir_op_set_ints(op, "shape", shape, (size_t)nd);
    fl_ir_op_set_float(op, "value", 0);
    fl_ir_op_set_int(op, "dtype", dt);
    /* an empty tensor (a batch dim of 0) is what the op makes at run time; its shape rule asks
     * for sizes a program can use, and the declaration is the var's anyway */
    bool ok = empty || fl_ev_infer(c, b, op, sp);
    fl_ir_var_set_shape(d, nd, keep);
    d->dtype = dt;
    return ok;
}

/* One name carried out: the body left it bound to src; the assign writes target (src NULL: a
 * channel name bound to None, carried as the nil channel). */
typedef struct Carry {
    const char *name, *src, *target;
} Carry;

/* The names of the vars made in block b after its first `before` vars (during the body), into m. */
static void made_since(FlBlock *b, size_t before, FlMap *m) {
    for (size_t i = before; i < b->vars.len; i++) fl_map_put_str(m, b->vars.data[i]->name, b->vars.data[i]);
}

/* The var a name that the body rebound to the Var whose desc is nd is carried into: the var it
 * had before (own_names gave it one of its own) when that is visible in parent, else a new var
 * of the home block. NULL after reporting a change of dtype or shape. */
static const char *carry_target(Ctx *c, const char *name, FlValue *before, FlVarDesc *nd, FlBlock *parent, FlSpan sp) {
    FlVarDesc *bd = before && before->kind == VK_VAR ? fl_ir_var_lookup(c->b.main, parent, before->var.name) : NULL;
    if (!bd) {
        const char *target = fl_ev_unique(c, name);
        FlBlock *home = home_block(c, parent);
        FlVarDesc *td = fl_ev_new_var(c, home, target, sp);
        fl_ir_var_copy(td, nd);
        td->loc = fl_ev_loc(c, sp);
        td->persistable = false;
        /* a driver name first bound in a nested runtime block (a loop inside a loop) is read by
         * blocks around it once bound, as a Python name is: it is written before they run */
        if (home != parent && fl_ev_in_driver(c) && !fl_ev_zero_init(c, home, td, sp)) return NULL;
        return target;
    }
    bool same = bd->kind == nd->kind && bd->dtype == nd->dtype && bd->ndim == nd->ndim && bd->elem_chans == nd->elem_chans;
    for (int k = 0; same && k < bd->ndim; k++)
        if (bd->shape[k] != nd->shape[k] && bd->shape[k] >= 0 && nd->shape[k] >= 0) same = false;
    if (same) return before->var.name;
    FlBuf a = {0}, b = {0};
    fl_ir_shape_str(bd->ndim, bd->shape, &a);
    fl_ir_shape_str(nd->ndim, nd->shape, &b);
    fl_ev_error(c, sp, "'%s' changes from %s %s to %s %s inside a runtime block; a name rebound there must keep its dtype and shape", name,
                fl_dtype_name(bd->dtype), fl_buf_str(&a), fl_dtype_name(nd->dtype), fl_buf_str(&b));
    fl_buf_free(&a);
    fl_buf_free(&b);
    return NULL;
}

/* Appends `assign X=src -> Out=dst` to sub (channel_assign for a channel: Out names the same
 * channel). */
static void assign_in(Ctx *c, FlBlock *sub, const char *src, const char *dst, FlSpan sp) {
    FlVarDesc *sd = fl_ir_var_lookup(c->b.main, sub, src);
    FlOpDesc *op = fl_ev_op_raw(c, sub, sd && sd->kind == FL_VAR_CHANNEL ? "channel_assign" : "assign", sp);
    fl_ir_op_add_input(op, "X", src);
    fl_ir_op_add_output(op, "Out", dst);
    fl_ev_infer(c, sub, op, sp);
}

static bool is_number(const FlValue *v) { return v->kind == VK_INT || v->kind == VK_FLOAT || v->kind == VK_BOOL; }

static bool same_number(const FlValue *a, const FlValue *b) {
    double x = a->kind == VK_FLOAT ? a->f : a->kind == VK_BOOL ? (double)a->b : (double)a->i;
    double y = b->kind == VK_FLOAT ? b->f : b->kind == VK_BOOL ? (double)b->b : (double)b->i;
    return a->kind == b->kind && x == y;
}

/* v (what a body rebound `name` to) as a constant Var of the current block like bd (the Var the
 * name held before) when v is a number, or a numpy array of the driver, and bd holds one
 * element, or the array's elements; v itself when it is neither (a list, a string: not carried);
 * NULL after reporting one that bd cannot hold. */
static FlValue *number_as(Ctx *c, const char *name, FlValue *v, const FlVarDesc *bd, FlSpan sp) {
    int dt = -1;
    FlValue *nums = fl_ev_in_driver(c) ? fl_ev_ndarray_numbers(v, &dt) : NULL;
    if (!bd || (!is_number(v) && !nums)) return v;
    int64_t numel = 1;
    for (int k = 0; k < bd->ndim; k++) numel *= bd->shape[k];
    FlValue *r = NULL;
    if (nums && numel >= 0) {
        r = fl_ev_driver_const_as(c, nums, bd->dtype, sp);
    } else if (numel == 1 && fl_ev_in_driver(c)) {
        for (int k = 0; k < bd->ndim; k++) { /* [[v]]: the var's rank */
            FlValue *l = fl_v_list(c, VK_LIST);
            fl_v_list_push(c, l, v);
            v = l;
        }
        r = fl_ev_driver_const_as(c, v, bd->dtype, sp);
    } else if (numel == 1 && bd->ndim == 1) {
        r = fl_ev_const_var(c, v, bd->dtype, sp);
    }
    if (r && r->kind == VK_VAR) return r;
    if (!r) {
        FlBuf a = {0};
        fl_ir_shape_str(bd->ndim, bd->shape, &a);
        fl_ev_error(c, sp, "'%s' is a Var of %s %s that this runtime block rebinds to a number: it must keep its "
                    "dtype and shape (a Var of one element takes a number)", name, fl_dtype_name(bd->dtype),
                    fl_buf_str(&a));
        fl_buf_free(&a);
    }
    return NULL;
}

/* Carries names rebound to Vars in the sub-block out to the parent (see the file comment): every
 * name whose Var changed, whether the body made the new Var (`x = x + 1`) or bound the name to a
 * Var from outside (`x = y`, the value received by a select case or a `for v in ch`): a plain
 * rebinding would leak out of a branch not taken. A source that another name's assign writes
 * (`a, b = b, a`) is copied first, so that every assign reads the value the body left. Names
 * bound to vars the body made in the home block (a nested body's carry-out of a new name) are
 * carried already. */
static void carry_out(Ctx *c, Env *e, Snapshot *s, const StrVec *written, FlBlock *parent, FlBlock *sub,
                      FlSpan sp) {
    FL_VEC(Carry) cs = {0};
    FlMap made; /* the vars the body made in the home block */
    fl_map_init(&made);
    if (s->home) made_since(s->home, s->home_nvars, &made);
    for (size_t i = 0; i < written->len; i++) { /* a name the body did not write is as it was */
        const char *name = written->data[i];
        FlValue *now = fl_map_find_str(&e->map, name);
        FlValue *before = snap_before(s, name);
        if (now->kind == VK_NONE && before && fl_ev_is_channel(c, before) && fl_ir_var_lookup(c->b.main, parent, before->var.name)) {
            /* `ch = None`: Go's nil channel, a value the channel var holds (channel_nil) */
            FL_VEC_PUSH(&cs, ((Carry){name, NULL, before->var.name}));
            continue;
        }
        if (now != before && before && is_number(before) && is_number(now) && !same_number(before, now)) {
            /* a compile-time number the body changes: after the block it would hold the body's
             * one compile-time pass's value whether the body ran once, never or many times */
            FlBuf a = {0}, b = {0};
            fl_v_repr(c, before, &a);
            fl_v_repr(c, now, &b);
            fl_ev_error(c, sp, "'%s' is a number known when the script compiles (%s) that this runtime block "
                        "changes (to %s): its value cannot follow the block's runs; use enumerate(...) or the "
                        "loop's own variable to count, or compute it from fetched values", name,
                        fl_buf_str(&a), fl_buf_str(&b));
            fl_buf_free(&a);
            fl_buf_free(&b);
            break;
        }
        if (now != before && before && before->kind == VK_VAR && now->kind != VK_VAR) {
            /* a Var the body rebinds to a number (`k = 5`, `done = True`): the number, as a
             * constant of the sub-block, is what the carry-out writes */
            c->b.block = sub;
            now = number_as(c, name, now, fl_ir_var_lookup(c->b.main, parent, before->var.name), sp);
            if (!now) break;
            if (now->kind != VK_VAR) continue;
        }
        if (now == before || now->kind != VK_VAR || now->var.prog != c->b.main) continue;
        if (before && before->kind == VK_VAR && before->var.name == now->var.name) {
            fl_env_set(e, name, before);
            continue;
        }
        FlVarDesc *nd = fl_ir_var_lookup(c->b.main, sub, now->var.name);
        if (!nd) continue;
        if (s->home && fl_map_find_str(&made, now->var.name) && s->home != sub) continue;
        const char *target = carry_target(c, name, before, nd, parent, sp);
        if (target) FL_VEC_PUSH(&cs, ((Carry){name, now->var.name, target}));
    }
    /* the targets: each -> the place of its last carry + 1 and, in `twice`, whether two carries
     * write it */
    FlMap targets, twice;
    fl_map_init(&targets);
    fl_map_init(&twice);
    for (size_t k = 0; k < cs.len; k++) {
        if (fl_map_find_str(&targets, cs.data[k].target)) fl_map_put_str(&twice, cs.data[k].target, &twice);
        fl_map_put_str(&targets, cs.data[k].target, (void *)(uintptr_t)(k + 1));
    }
    for (size_t i = 0; i < cs.len; i++) {
        if (!cs.data[i].src) continue;
        uintptr_t k = (uintptr_t)fl_map_find_str(&targets, cs.data[i].src);
        if (!k || (k == i + 1 && !fl_map_find_str(&twice, cs.data[i].src))) continue; /* no other carry writes it */
        const char *tmp = fl_arena_printf(&c->arena, "%s.tmp_0", fl_ev_unique(c, "assign"));
        fl_ir_var_copy(fl_ev_new_var(c, sub, tmp, sp), fl_ir_var_lookup(c->b.main, sub, cs.data[i].src));
        assign_in(c, sub, cs.data[i].src, tmp, sp);
        cs.data[i].src = tmp;
    }
    fl_map_fini(&targets);
    fl_map_fini(&twice);
    c->b.block = sub;
    for (size_t i = 0; i < cs.len; i++) {
        if (!cs.data[i].src) {
            FlOpDesc *op = fl_ev_op_raw(c, sub, "channel_nil", sp);
            fl_ir_op_add_output(op, "Out", cs.data[i].target);
            fl_ev_infer(c, sub, op, sp);
        } else {
            assign_in(c, sub, cs.data[i].src, cs.data[i].target, sp);
        }
        fl_env_set(e, cs.data[i].name, fl_v_var(c, cs.data[i].target));
    }
    FL_VEC_FREE(&cs);
    fl_map_fini(&made);
}

/* A new var of the current block that an assign sets to the Var v. */
static FlValue *copy_var(Ctx *c, FlValue *v, FlSpan sp) {
    const char *tmp = fl_arena_printf(&c->arena, "%s.tmp_0", fl_ev_unique(c, "assign"));
    FlVarDesc *d = fl_ev_new_var(c, c->b.block, tmp, sp);
    FlVarDesc *src = fl_ev_var_desc(c, v);
    if (src) {
        fl_ir_var_copy(d, src);
        d->persistable = false;
        d->loc = fl_ev_loc(c, sp);
    }
    assign_in(c, c->b.block, v->var.name, tmp, sp);
    return fl_v_var(c, tmp);
}

void fl_ev_control_io(Ctx *c, FlBlock *parent, FlBlock *sub, FlOpDesc *op, const char *in_slot, const char *out_slot) {
    FlBlockIo io;
    fl_ir_block_io_init(&io);
    fl_ir_block_io(c->b.main, parent, sub, &io);
    if (in_slot) {
        fl_ir_op_add_input_slot(op, in_slot);
        for (size_t i = 0; i < io.ins.len; i++)
            if (fl_ir_var_lookup(c->b.main, parent, io.ins.data[i])) fl_ir_op_add_input(op, in_slot, io.ins.data[i]);
    }
    if (out_slot) {
        fl_ir_op_add_output_slot(op, out_slot);
        for (size_t i = 0; i < io.outs.len; i++)
            if (fl_ir_var_lookup(c->b.main, parent, io.outs.data[i])) fl_ir_op_add_output(op, out_slot, io.outs.data[i]);
    }
    fl_ir_block_io_fini(&io);
}

static Flow run_bound(Ctx *c, Env *e, FlAstList *body, size_t from, size_t *next, FlBlock *sub, bool carry,
                      bool own, bool copy_in, const char *name, FlValue *v, FlSpan sp);

/* A loop body that rebinds a name that was None when it started to a channel: the body was
 * compiled with the name None (a select case on it is never ready), but its next iteration would
 * start with a channel. Go's typed nil channel is what such a loop needs. */
static void nil_to_chan(Ctx *c, Env *e, Snapshot *s, const StrVec *written, FlSpan sp) {
    for (size_t i = 0; i < written->len; i++) {
        const char *name = written->data[i];
        FlValue *before = snap_before(s, name);
        if (!before || before->kind != VK_NONE) continue;
        FlValue *now = fl_map_find_str(&e->map, name);
        if (now && now->kind == VK_VAR && fl_ev_is_channel(c, now))
            fl_ev_error(c, sp, "'%s' is None when the loop starts and a channel after its body; start it as a nil "
                        "channel of its element type: %s = fluid.nil_chan(dtype=..., shape=...)", name, name);
    }
}

/* Runs body into sub, a new block of the current one; carries names out or restores them. A body
 * whose names do not carry out (a goroutine's) is the home of the names bound in it. With next,
 * only body->items[from..] up to one that lowers a loop exit (fl_ev_run_stmts). */
static Flow run_in(Ctx *c, Env *e, FlAstList *body, size_t from, size_t *next, FlBlock *sub, bool carry,
                   FlSpan sp) {
    return run_bound(c, e, body, from, next, sub, carry, false, false, NULL, NULL, sp);
}

/* run_in; with own, the names the body may rebind get vars of their own first (own_names, in
 * the current block); with name, that name is bound to the Var v at the start of sub, after the
 * snapshot: a rebinding the body made (`case x = ch.recv():` assigns the existing x). With
 * copy_in (a loop's body), each channel name the body may rebind is bound to a var of the
 * iteration that the carried one is copied into at its start: a goroutine the iteration starts
 * keeps the channel it was given when the loop rebinds the name (the pipelines of Go's sieve). */
static Flow run_bound(Ctx *c, Env *e, FlAstList *body, size_t from, size_t *next, FlBlock *sub, bool carry,
                      bool own, bool copy_in, const char *name, FlValue *v, FlSpan sp) {
    FlBlock *parent = c->b.block, *home = c->home;
    if (own) {
        FlAstList rest = {body->items + from, body->len - from};
        FlAstList *one = &rest;
        own_names(c, e, &one, 1, sp);
    }
    Snapshot s;
    snap_take(e, &s);
    s.home = home;
    s.home_nvars = home->vars.len;
    c->b.block = sub;
    if (!carry) c->home = sub;
    if (name) fl_env_set(e, name, v);
    if (copy_in) {
        StrVec names = {0};
        assigned_names(body, &names);
        for (size_t i = 0; i < names.len; i++) {
            FlValue *cur = fl_map_find_str(&e->map, names.data[i]);
            if (cur && fl_ev_is_channel(c, cur) && !fl_ir_var_find(sub, cur->var.name))
                fl_env_set(e, names.data[i], copy_var(c, cur, sp));
        }
        FL_VEC_FREE(&names);
    }
    c->rt_depth++;
    Flow f = next ? fl_ev_run_stmts(c, e, body, from, next) : fl_ev_block(c, e, body);
    c->rt_depth--;
    c->home = home;
    StrVec written = {0};
    if (carry) snap_written(&s, &written);
    if (carry && copy_in) nil_to_chan(c, e, &s, &written, sp);
    if (carry) carry_out(c, e, &s, &written, parent, sub, sp);
    else snap_restore(e, &s);
    FL_VEC_FREE(&written);
    c->b.block = parent;
    snap_end(&s);
    return f;
}

FlBlock *fl_ev_sub_block(Ctx *c, Env *e, FlAstList *body, bool carry, FlSpan sp, Flow *flow) {
    FlBlock *sub = fl_ir_block_new(c->b.main, c->b.block->idx);
    Flow f = run_in(c, e, body, 0, NULL, sub, carry, sp);
    if (flow) *flow = f;
    return sub;
}

/* ------------------------------------------------------------------ runtime if */

static bool check_cond_var(Ctx *c, FlValue *v, FlSpan sp, const char *what) {
    FlVarDesc *d = fl_ev_var_desc(c, v);
    if (!d) {
        fl_ev_error(c, sp, "var '%s' is not visible here", v->var.name);
        return false;
    }
    if (d->kind != FL_VAR_DENSE || d->dtype != FL_DT_BOOL) {
        FlBuf b = {0};
        fl_ir_shape_str(d->ndim, d->shape, &b);
        fl_ev_error(c, sp, "the condition of '%s' must be a bool Var, found %s %s", what,
                    d->kind == FL_VAR_CHANNEL ? "channel" : fl_dtype_name(d->dtype), fl_buf_str(&b));
        fl_buf_free(&b);
        if (strcmp(what, "if") == 0) /* Fluid's `if attn_bias:` meant "if one was given" */
            fl_diag_note(&c->diag, fl_ev_user_span(c, sp), "a Var in an 'if' is a run-time condition; to test "
                                                         "whether one was given, write 'if x is not None:'");
        return false;
    }
    return true;
}

static FlOpDesc *control_op(Ctx *c, const char *type, FlBlock *sub, FlSpan sp) {
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, type, sp);
    fl_ir_op_set_block(op, "sub_block", sub->idx);
    return op;
}

/* Runs body into a conditional_block on the bool var `cond` (appended to the current block);
 * names it rebinds to Vars are carried out (into vars of their own first, with own). Returns the body's flow. With next, only
 * body->items[from..] up to one that lowers a loop exit (fl_ev_run_stmts). */
static Flow cond_block(Ctx *c, Env *e, FlAstList *body, size_t from, size_t *next, const char *cond, bool own,
                       FlSpan sp) {
    FlBlock *parent = c->b.block;
    FlBlock *sub = fl_ir_block_new(c->b.main, parent->idx);
    Flow f = run_bound(c, e, body, from, next, sub, true, own, false, NULL, NULL, sp);
    FlOpDesc *op = control_op(c, "conditional_block", sub, sp);
    fl_ir_op_add_input(op, "Cond", cond);
    fl_ev_control_io(c, parent, sub, op, "X", "Out");
    fl_ev_infer(c, parent, op, sp);
    return f;
}

/* The flow of a statement whose body ran in a runtime block (`where`: an if's branch, the rest
 * of a loop body after an exit, a loop's else clause). A break or continue that reached it has
 * been lowered onto the innermost runtime loop's flags (fl_ev_lower_exit), so the statement completes
 * normally; one meant for a compile-time loop cannot be, nor can a return. */
static Flow branch_flow(Ctx *c, Flow f, FlSpan sp, const char *where) {
    switch (f) {
    case FLOW_NORMAL:
    case FLOW_ERROR: return f;
    case FLOW_BREAK:
    case FLOW_CONTINUE:
        if (fl_ev_rt_loop(c)) return FLOW_NORMAL;
        /* one for a compile-time loop was reported where it is written (and ends the unrolling) */
        return f;
    case FLOW_RETURN:
        fl_ev_error(c, sp, "'return' inside %s cannot be compiled (the branch is taken at run time)", where);
        return FLOW_ERROR;
    }
    return FLOW_ERROR;
}

/* The flow that says more of two branches' (an exit over a normal end, a return over an exit). */
static Flow worse(Flow a, Flow b) {
    int ra = a == FLOW_RETURN ? 2 : a == FLOW_BREAK || a == FLOW_CONTINUE;
    int rb = b == FLOW_RETURN ? 2 : b == FLOW_BREAK || b == FLOW_CONTINUE;
    return rb > ra ? b : a;
}

Flow fl_ev_lower_if(Ctx *c, Env *e, FlAst *s, FlValue *cond) {
    if (!check_cond_var(c, cond, s->cond.test->span, "if")) return FLOW_ERROR;
    /* the else branch's condition is taken before the then branch may rebind the condition */
    FlValue *nc = NULL;
    if (s->cond.else_body.len) {
        nc = fl_ev_op2(c, "logical_not", cond, NULL, s->span);
        if (nc->kind == VK_ERROR) return FLOW_ERROR;
    }
    /* once for both branches: the one that runs writes the vars the code after reads */
    FlAstList *bodies[2] = {&s->cond.then_body, &s->cond.else_body};
    own_names(c, e, bodies, 2, s->span);
    Flow f1 = cond_block(c, e, &s->cond.then_body, 0, NULL, cond->var.name, false, s->span);
    Flow f2 = nc ? cond_block(c, e, &s->cond.else_body, 0, NULL, nc->var.name, false, s->span) : FLOW_NORMAL;
    Flow f = branch_flow(c, worse(f1, f2), s->span, "a runtime 'if'");
    return f1 == FLOW_ERROR || f2 == FLOW_ERROR ? FLOW_ERROR : f;
}

/* ------------------------------------------------------------------ runtime loops: flags for break and continue */

/* Makes op (a fill_constant of block b) set the bool [1] var `name` to `value`. */
static void fill_flag(Ctx *c, FlBlock *b, FlOpDesc *op, const char *name, bool value, FlSpan sp) {
    int64_t one = 1;
    op->loc = fl_ev_loc(c, sp);
    fl_ir_op_add_output(op, "Out", name);
    fl_ir_op_set_ints(op, "shape", &one, 1);
    fl_ir_op_set_float(op, "value", value);
    fl_ir_op_set_int(op, "dtype", FL_DT_BOOL);
    fl_ev_infer(c, b, op, sp);
}

/* A new bool [1] var of block b, set to `value` by a fill_constant inserted at ops[pos]. */
const char *fl_ev_new_flag(Ctx *c, FlBlock *b, const char *prefix, size_t pos, bool value, FlSpan sp) {
    const char *name = fl_ev_unique(c, prefix);
    FlVarDesc *d = fl_ev_new_var(c, b, name, sp);
    int64_t one = 1;
    d->dtype = FL_DT_BOOL;
    fl_ir_var_set_shape(d, 1, &one);
    d->stop_gradient = true;
    fill_flag(c, b, fl_ir_op_insert(b, pos, "fill_constant"), name, value, sp);
    return name;
}

/* Sets the bool [1] var `name` to `value` in the current block. */
void fl_ev_set_flag(Ctx *c, const char *name, bool value, FlSpan sp) {
    fill_flag(c, c->b.block, fl_ir_op_append(c->b.block, "fill_constant"), name, value, sp);
}

/* break or continue of the runtime loop l, lowered as RtLoop describes. Returns the flow that
 * ends the evaluation of the enclosing statements. */
Flow fl_ev_lower_exit(Ctx *c, RtLoop *l, bool is_break, FlSpan sp) {
    bool nested = c->rt_depth != l->depth;
    if (is_break && (nested || l->has_else)) {
        if (!l->broke) l->broke = fl_ev_new_flag(c, l->outer, "loop_broke", l->outer->ops.len, false, sp);
        fl_ev_set_flag(c, l->broke, true, sp);
    }
    l->has_break |= is_break;
    if (nested) {
        if (!l->alive) l->alive = fl_ev_new_flag(c, l->body, "loop_alive", 0, true, sp);
        fl_ev_set_flag(c, l->alive, false, sp);
        l->exits++;
    }
    return is_break ? FLOW_BREAK : FLOW_CONTINUE;
}

/* After a statement of a runtime loop's body (or of a block within it) that lowered a break or
 * continue, the rest of the statement list runs only while the iteration is alive: in
 * conditional_blocks on `alive`, one after the other (not one inside the other: `alive` is never
 * set again in the iteration), each up to the next statement that lowers an exit. */
Flow fl_ev_lower_rest(Ctx *c, Env *e, FlAstList *body, size_t from) {
    RtLoop *l = fl_ev_rt_loop(c);
    const char *alive = l ? l->alive : c->rtfunc->alive; /* no loop: after a return (RtFunc) */
    DriverSwap sw; /* a return of the driver's, reached from code of another program */
    if (!l && c->rtfunc->alive_in_driver) fl_ev_driver_enter(c, &sw);
    else sw.swapped = false;
    Flow f = FLOW_NORMAL;
    while (from < body->len && f == FLOW_NORMAL) {
        FlSpan sp = body->items[from]->span;
        f = branch_flow(c, cond_block(c, e, body, from, &from, alive, true, sp), sp,
                        l ? "a runtime loop" : "the rest of a function after a runtime 'return'");
    }
    fl_ev_driver_leave(c, &sw);
    return f;
}

/* Evaluates a runtime loop's body into l->body (a new block of the current one) with l as the
 * innermost runtime loop and no compile-time loop around; names rebound to Vars are carried out
 * to the current block. */
static Flow loop_body(Ctx *c, Env *e, FlAstList *body, RtLoop *l, FlSpan sp) {
    int depth = c->loop_depth;
    c->loop_depth = 0;
    l->depth = c->rt_depth + 1;
    FL_VEC_PUSH(&c->rtloops, l);
    Flow f = run_bound(c, e, body, 0, NULL, l->body, true, false, true, NULL, NULL, sp);
    c->rtloops.len--;
    c->loop_depth = depth;
    return f;
}

/* What a loop computes for its next iteration, into the block current when called: the new
 * value of its condition (a Var), or an error value (reported). */
typedef FlValue *(*LoopNext)(Ctx *c, Env *e, FlAst *s, const void *arg);

/* A while's next condition: its expression again. */
static FlValue *while_next(Ctx *c, Env *e, FlAst *s, const void *arg) {
    (void)arg;
    FlValue *c2 = fl_ev_expr(c, e, s->loop.iter);
    if (c2->kind != VK_VAR && c2->kind != VK_ERROR)
        return fl_ev_error(c, s->loop.iter->span, "the loop condition stopped being a Var inside the body");
    return c2;
}

/* The end of an iteration, after the carry-out (RtLoop): the loop's next condition (next, NULL
 * for none) is computed into the condition var unless a break ran, and a break clears it. f is
 * the flow of the body. */
static void loop_end(Ctx *c, Env *e, FlAst *s, RtLoop *l, Flow f, LoopNext next, const void *arg) {
    FlBlock *saved = c->b.block, *b = l->body;
    c->b.block = b;
    FlValue *nb = NULL;
    if (f == FLOW_BREAK) { /* a break directly in the body: every iteration that gets here broke */
        fl_ev_set_flag(c, l->cond, false, s->span);
        goto done;
    }
    if (l->broke) {
        nb = fl_ev_op2(c, "logical_not", fl_v_var(c, l->broke), NULL, s->span);
        if (nb->kind == VK_ERROR) goto done;
    }
    if (next) {
        FlBlock *guard = nb ? fl_ir_block_new(c->b.main, b->idx) : NULL;
        c->b.block = guard ? guard : b;
        FlValue *c2 = next(c, e, s, arg);
        if (c2->kind == VK_VAR && c2->var.name != l->cond) {
            FlOpDesc *as = fl_ev_op_raw(c, c->b.block, "assign", s->span);
            fl_ir_op_add_input(as, "X", c2->var.name);
            fl_ir_op_add_output(as, "Out", l->cond);
            fl_ev_infer(c, c->b.block, as, s->span);
        }
        c->b.block = b;
        if (guard) {
            FlOpDesc *op = control_op(c, "conditional_block", guard, s->span);
            fl_ir_op_add_input(op, "Cond", nb->var.name);
            fl_ev_control_io(c, b, guard, op, "X", "Out");
            fl_ev_infer(c, b, op, s->span);
        }
    }
    if (nb) {
        const char *names[3] = {"X", "Y", "Out"};
        FlValue *vals[3] = {fl_v_var(c, l->cond), nb, fl_v_var(c, l->cond)};
        CallArgs a = {.kwnames = names, .kwvals = vals, .nkw = 3, .span = s->span};
        fl_ev_op(c, "logical_and", &a, s->span);
    }
done:
    c->b.block = saved;
}

/* The else clause of a runtime loop (after its op): it runs unless a break left the loop. */
static Flow loop_else(Ctx *c, Env *e, FlAst *s, RtLoop *l) {
    FlAstList *body = &s->loop.else_body;
    if (!body->len) return FLOW_NORMAL;
    if (!l->has_break) return fl_ev_block(c, e, body);
    FlValue *nb = fl_ev_op2(c, "logical_not", fl_v_var(c, l->broke), NULL, s->span);
    if (nb->kind == VK_ERROR) return FLOW_ERROR;
    return branch_flow(c, cond_block(c, e, body, 0, NULL, nb->var.name, true, s->span), s->span,
                       "a runtime loop's 'else'");
}

/* The body of runtime loop l (of statement s) into l->body, the end of its iteration (next), the
 * while op in l->outer on l->cond, and the else clause. */
static Flow while_op(Ctx *c, Env *e, FlAst *s, RtLoop *l, LoopNext next, const void *arg) {
    Flow f = loop_body(c, e, &s->loop.body, l, s->span);
    loop_end(c, e, s, l, f, next, arg);
    FlOpDesc *op = control_op(c, "while", l->body, s->span);
    fl_ev_control_io(c, l->outer, l->body, op, "X", "Out");
    fl_ir_op_add_input(op, "Condition", l->cond);
    fl_ev_infer(c, l->outer, op, s->span);
    if (f == FLOW_RETURN) {
        fl_ev_error(c, s->span, "'return' inside a runtime loop cannot be compiled");
        return FLOW_ERROR;
    }
    return loop_else(c, e, s, l);
}

/* while on a Var: the body and the re-evaluated condition become the sub-block. */
Flow fl_ev_lower_while(Ctx *c, Env *e, FlAst *s, FlValue *cond) {
    if (!check_cond_var(c, cond, s->loop.iter->span, "while")) return FLOW_ERROR;
    FlBlock *parent = c->b.block;
    FlAstList *bodies[1] = {&s->loop.body};
    own_names(c, e, bodies, 1, s->span);
    RtLoop loop = {.cond = cond->var.name, .body = fl_ir_block_new(c->b.main, parent->idx), .outer = parent,
                   .has_else = s->loop.else_body.len > 0};
    return while_op(c, e, s, &loop, while_next, NULL);
}

/* `while True:` whose body runs programs (the driver's: docs/driver.md, "Runtime loops"): a while
 * on a flag that only a break (or a reader's EOFException, driver_pyreader.c) clears. */
Flow fl_ev_lower_while_true(Ctx *c, Env *e, FlAst *s) {
    FlBlock *parent = c->b.block;
    FlValue *cond = fl_ev_const_var(c, c->vtrue, FL_DT_BOOL, s->span);
    if (cond->kind == VK_ERROR) return FLOW_ERROR;
    FlAstList *bodies[1] = {&s->loop.body};
    own_names(c, e, bodies, 1, s->span);
    RtLoop loop = {.cond = cond->var.name, .body = fl_ir_block_new(c->b.main, parent->idx), .outer = parent,
                   .has_else = s->loop.else_body.len > 0};
    Flow f = while_op(c, e, s, &loop, NULL, NULL);
    if (f != FLOW_ERROR && !loop.has_break && !loop.ends_run) {
        fl_ev_error(c, s->span, "this 'while True:' runs programs and would never end: no 'break' of it is reached at "
                                "run time (one under an 'if' on a compile-time value, such as a counter the loop "
                                "adds to, is decided once, when the script compiles) and no py_reader's "
                                "EOFException leaves it; break on a fetched value, or loop over range(n)");
        return FLOW_ERROR;
    }
    return f;
}

/* The body of a `try` around a reader's EOFException (driver_pyreader.c): a runtime loop l that
 * runs once, so that the EOFException a run raises in it leaves it as a break would (l->is_try:
 * the user's break and continue are not its). Returns the body's flow. */
Flow fl_ev_lower_once(Ctx *c, Env *e, FlAstList *body, RtLoop *l, FlSpan sp) {
    FlBlock *parent = c->b.block;
    FlValue *cond = fl_ev_const_var(c, c->vtrue, FL_DT_BOOL, sp);
    if (cond->kind == VK_ERROR) return FLOW_ERROR;
    FlAstList *bodies[1] = {body};
    own_names(c, e, bodies, 1, sp);
    *l = (RtLoop){.cond = cond->var.name, .body = fl_ir_block_new(c->b.main, parent->idx), .outer = parent,
                  .is_try = true};
    Flow f = loop_body(c, e, body, l, sp);
    FlBlock *saved = c->b.block;
    c->b.block = l->body;
    fl_ev_set_flag(c, l->cond, false, sp);
    c->b.block = saved;
    FlOpDesc *op = control_op(c, "while", l->body, sp);
    fl_ev_control_io(c, parent, l->body, op, "X", "Out");
    fl_ir_op_add_input(op, "Condition", l->cond);
    fl_ev_infer(c, parent, op, sp);
    return f;
}

/* body in a conditional_block on the bool var cond (an `except` clause's, driver_pyreader.c);
 * where: what the body is, for a 'return' in it. */
Flow fl_ev_lower_cond_body(Ctx *c, Env *e, FlAstList *body, const char *cond, FlSpan sp, const char *where) {
    return branch_flow(c, cond_block(c, e, body, 0, NULL, cond, true, sp), sp, where);
}

/* `for NAME in range(...)` at run time (the driver's: docs/driver.md, "Which `for` is a runtime
 * loop"): a counter (int64 [1]) from start, a while on counter < stop (> for a negative step)
 * whose body binds NAME to the counter's value (a number: index 0 of the counter), runs the
 * statements and steps the counter, also after a continue. */
typedef struct RangeNext {
    const char *counter, *stop;
    int64_t step;
} RangeNext;

static FlValue *range_cond(Ctx *c, const RangeNext *r, FlSpan sp) {
    return fl_ev_op2(c, r->step > 0 ? "less_than" : "greater_than", fl_v_var(c, r->counter), fl_v_var(c, r->stop), sp);
}

static FlValue *range_next(Ctx *c, Env *e, FlAst *s, const void *arg) {
    (void)e;
    const RangeNext *r = arg;
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "increment", s->span);
    fl_ir_op_add_input(op, "X", r->counter);
    fl_ir_op_add_output(op, "Out", r->counter);
    fl_ir_op_set_float(op, "step", (double)r->step);
    if (!fl_ev_infer(c, c->b.block, op, s->span)) return c->error;
    return range_cond(c, r, s->span);
}

/* An int64 [1] var of the current block holding bound v (an int, or a driver var of one
 * element: its item as an int64, an error when it runs if it has more). */
static FlValue *range_bound(Ctx *c, FlValue *v, FlSpan sp) {
    if (v->kind == VK_INT) return fl_ev_const_var(c, v, FL_DT_INT64, sp);
    FlVarDesc *d = fl_ev_var_desc(c, v);
    if (!d || (d->dtype != FL_DT_INT64 && d->dtype != FL_DT_INT32))
        return fl_ev_error(c, sp, "a range() bound that is a run-time value must be an int (int64 or int32), found %s",
                           d ? fl_dtype_name(d->dtype) : "a var not visible here");
    FlValue *n = fl_ev_driver_item(c, v, FL_DT_INT64, sp);
    if (n->kind == VK_ERROR) return n;
    const char *names[2] = {"X", "shape"};
    FlValue *shape = fl_v_list(c, VK_LIST);
    fl_v_list_push(c, shape, fl_v_int(c, 1));
    FlValue *vals[2] = {n, shape};
    CallArgs a = {.kwnames = names, .kwvals = vals, .nkw = 2, .span = sp};
    return fl_ev_op(c, "reshape", &a, sp);
}

Flow fl_ev_lower_for_range(Ctx *c, Env *e, FlAst *s, FlValue *start, FlValue *stop, int64_t step) {
    if (s->loop.target->kind != FL_AST_NAME) {
        fl_ev_error(c, s->loop.target->span, "a runtime 'for ... in range()' binds one name");
        return FLOW_ERROR;
    }
    FlBlock *parent = c->b.block;
    FlValue *counter = range_bound(c, start, s->loop.iter->span);
    if (counter->kind == VK_ERROR) return FLOW_ERROR;
    if (start->kind != VK_INT) { /* the counter is the loop's own: a copy of a driver var */
        FlValue *own = fl_ev_const_var(c, fl_v_int(c, 0), FL_DT_INT64, s->span);
        FlOpDesc *as = fl_ev_op_raw(c, parent, "assign", s->span);
        fl_ir_op_add_input(as, "X", counter->var.name);
        fl_ir_op_add_output(as, "Out", own->var.name);
        if (!fl_ev_infer(c, parent, as, s->span)) return FLOW_ERROR;
        counter = own;
    }
    FlValue *stopv = range_bound(c, stop, s->loop.iter->span);
    if (stopv->kind == VK_ERROR) return FLOW_ERROR;
    RangeNext rn = {counter->var.name, stopv->var.name, step};
    FlValue *cond = range_cond(c, &rn, s->span);
    if (cond->kind == VK_ERROR) return FLOW_ERROR;
    FlAstList *bodies[1] = {&s->loop.body};
    own_names(c, e, bodies, 1, s->span);
    RtLoop loop = {.cond = cond->var.name, .body = fl_ir_block_new(c->b.main, parent->idx), .outer = parent,
                   .has_else = s->loop.else_body.len > 0};
    /* NAME is a var of the parent (the counter's value, a number), which each iteration sets
     * first: the body reads it, and after the loop it holds the last value, as Python's does
     * (start when the loop ran no iteration, where Python leaves the name as it was) */
    FlValue *item = fl_ev_driver_index(c, counter, fl_v_int(c, 0), s->loop.target->span);
    if (item->kind == VK_ERROR) return FLOW_ERROR;
    FlOpDesc *ix = fl_ev_op_raw(c, loop.body, "index", s->loop.target->span);
    fl_ir_op_add_input(ix, "X", counter->var.name);
    fl_ir_op_add_output(ix, "Out", item->var.name);
    fl_ir_op_set_int(ix, "i", 0);
    if (!fl_ev_infer(c, loop.body, ix, s->span)) return FLOW_ERROR;
    fl_env_set(e, s->loop.target->name, item);
    return while_op(c, e, s, &loop, range_next, &rn);
}

/* for t in l, l a list filled at run time (a fetched tensor array's list, a LoDTensorArray, a list
 * appended to at run time): a loop of the driver over its elements, as over range(len(l)) taken
 * when the loop starts; t is a var of the parent that each iteration sets to element i (an RT_LIST
 * element without its leading dim of 1), holding the last one after the loop. */
Flow fl_ev_lower_for_list(Ctx *c, Env *e, FlAst *s, FlValue *l) {
    if (s->loop.target->kind != FL_AST_NAME) {
        fl_ev_error(c, s->loop.target->span, "a runtime 'for' over a list filled at run time binds one name");
        return FLOW_ERROR;
    }
    DriverSwap sw;
    fl_ev_driver_enter(c, &sw);
    Flow res = FLOW_ERROR;
    FlBlock *parent = c->b.block;
    FlSpan tsp = s->loop.target->span;
    FlValue *arr = fl_ev_driver_list_array(l);
    FlValue *counter = fl_ev_const_var(c, fl_v_int(c, 0), FL_DT_INT64, s->span);
    FlValue *stopv = counter->kind == VK_ERROR ? counter : range_bound(c, fl_ev_driver_list_count(l), s->loop.iter->span);
    if (stopv->kind == VK_ERROR) goto done;
    RangeNext rn = {counter->var.name, stopv->var.name, 1};
    FlValue *cond = range_cond(c, &rn, s->span);
    if (cond->kind == VK_ERROR) goto done;
    FlAstList *bodies[1] = {&s->loop.body};
    own_names(c, e, bodies, 1, s->span);
    RtLoop loop = {.cond = cond->var.name, .body = fl_ir_block_new(c->b.main, parent->idx), .outer = parent,
                   .has_else = s->loop.else_body.len > 0};
    FlVarDesc *ad = fl_ev_var_desc(c, arr);
    FlVarDesc *rd = fl_ev_driver_value_var(c, parent, "list_item", ad, tsp);
    rd->kind = FL_VAR_DENSE;
    if (!fl_ev_zero_init(c, parent, rd, tsp)) goto done; /* zeros before the first element, as a range's */
    FlOpDesc *rop = fl_ev_op_raw(c, loop.body, "read_from_array", tsp);
    fl_ir_op_add_input(rop, "X", arr->var.name);
    fl_ir_op_add_input(rop, "I", counter->var.name);
    fl_ir_op_add_output(rop, "Out", rd->name);
    if (!fl_ev_infer(c, loop.body, rop, tsp)) goto done;
    const char *item = rd->name;
    if (l->list.rt_kind == RT_LIST && rd->ndim >= 1) { /* the element without its leading dim of 1 */
        FlVarDesc *id = fl_ev_driver_value_var(c, parent, "list_item", rd, tsp);
        fl_ir_var_set_shape(id, rd->ndim - 1, rd->shape + 1);
        if (!fl_ev_zero_init(c, parent, id, tsp)) goto done;
        FlOpDesc *ix = fl_ev_op_raw(c, loop.body, "index", tsp);
        fl_ir_op_add_input(ix, "X", rd->name);
        fl_ir_op_add_output(ix, "Out", id->name);
        fl_ir_op_set_int(ix, "i", 0);
        if (!fl_ev_infer(c, loop.body, ix, tsp)) goto done;
        item = id->name;
    }
    if (l->list.rt_kind == RT_TENSOR_ARRAY) fl_map_put_str(&c->tensor_fetches, item, (void *)item); /* a LoDTensor */
    fl_env_set(e, s->loop.target->name, fl_v_var(c, item));
    res = while_op(c, e, s, &loop, range_next, &rn);
done:
    fl_ev_driver_leave(c, &sw);
    return res;
}

/* A new var of the current block for a value received from the channel whose desc is chd. */
static const char *recv_var(Ctx *c, FlVarDesc *chd, const char *prefix, FlSpan sp) {
    const char *vname = fl_arena_printf(&c->arena, "%s.tmp_0", fl_ev_unique(c, prefix));
    FlVarDesc *vd = fl_ev_new_var(c, c->b.block, vname, sp);
    fl_ir_var_set_elem(vd, chd);
    vd->stop_gradient = true;
    return vname;
}

/* A new bool [1] var of the current block. */
static const char *bool_var(Ctx *c, const char *prefix, FlSpan sp) {
    const char *name = fl_arena_printf(&c->arena, "%s.tmp_0", fl_ev_unique(c, prefix));
    FlVarDesc *d = fl_ev_new_var(c, c->b.block, name, sp);
    int64_t one = 1;
    d->dtype = FL_DT_BOOL;
    fl_ir_var_set_shape(d, 1, &one);
    d->stop_gradient = true;
    return name;
}

Flow fl_ev_lower_recv2(Ctx *c, Env *e, FlAst *target, FlValue *ch, FlSpan sp) {
    FlVarDesc *chd = fl_ev_var_desc(c, ch);
    if (!chd) return FLOW_ERROR;
    const char *vname = recv_var(c, chd, "channel_recv", sp);
    const char *okname = bool_var(c, "channel_recv_ok", sp);
    FlOpDesc *rv = fl_ev_op_raw(c, c->b.block, "channel_recv", sp);
    fl_ir_op_add_input(rv, "Channel", ch->var.name);
    fl_ir_op_add_output(rv, "Out", vname);
    fl_ir_op_add_output(rv, "Status", okname);
    if (!fl_ev_infer(c, c->b.block, rv, sp)) return FLOW_ERROR;
    FlValue *pair = fl_v_list(c, VK_TUPLE);
    fl_v_list_push(c, pair, fl_v_var(c, vname));
    fl_v_list_push(c, pair, fl_v_var(c, okname));
    return fl_ev_assign(c, e, target, pair) ? FLOW_NORMAL : FLOW_ERROR;
}

FlValue *fl_ev_chan_len(Ctx *c, FlValue *ch, bool cap, FlSpan sp) {
    const char *names[2] = {"Channel", "cap"};
    FlValue *vals[2] = {ch, fl_v_bool(c, cap)};
    CallArgs a = {.kwnames = names, .kwvals = vals, .nkw = 2, .span = sp};
    return fl_ev_op(c, "channel_len", &a, sp);
}

/* for_chan's receive: the channel's next element into a new var of `sub`, ok its status. */
static FlValue *chan_next(Ctx *c, FlBlock *sub, const char *ok, void *arg, FlSpan sp) {
    FlValue *ch = arg;
    FlVarDesc *chd = fl_ev_var_desc(c, ch);
    if (!chd) return c->error;
    const char *vname = recv_var(c, chd, "channel_recv", sp); /* c->b.block is sub */
    FlOpDesc *rv = fl_ev_op_raw(c, sub, "channel_recv", sp);
    fl_ir_op_add_input(rv, "Channel", ch->var.name);
    fl_ir_op_add_output(rv, "Out", vname);
    fl_ir_op_add_output(rv, "Status", ok);
    fl_ev_infer(c, sub, rv, sp);
    return fl_v_var(c, vname);
}

/* `for v in ch`: ok = true; while ok: v, ok = recv(ch); if ok: body. break clears ok. */
Flow fl_ev_lower_for_chan(Ctx *c, Env *e, FlAst *s, FlValue *ch) {
    if (s->loop.target->kind != FL_AST_NAME) {
        fl_ev_error(c, s->loop.target->span, "'for ... in' a channel binds one name");
        return FLOW_ERROR;
    }
    return fl_ev_lower_for_next(c, e, s, chan_next, ch);
}

/* Binds the loop's target (a name, or a tuple of names given a tuple) to v for the body; the
 * names' previous values go to prev. */
static bool bind_target(Ctx *c, Env *e, FlAst *t, FlValue *v, FlValue **prev, size_t *n) {
    if (t->kind == FL_AST_NAME) {
        prev[(*n)++] = fl_map_find_str(&e->map, t->name);
        fl_env_set(e, t->name, v);
        return true;
    }
    if (t->kind != FL_AST_TUPLE || v->kind != VK_TUPLE || t->list.items.len != v->list.len || t->list.items.len > 8) {
        fl_ev_error(c, t->span, "this runtime loop binds %s",
                    v->kind == VK_TUPLE ? "a pair of names (for i, data in enumerate(...))" : "one name");
        return false;
    }
    for (size_t i = 0; i < t->list.items.len; i++) {
        FlAst *ti = t->list.items.items[i];
        if (ti->kind != FL_AST_NAME) {
            fl_ev_error(c, ti->span, "this runtime loop binds names");
            return false;
        }
        if (!bind_target(c, e, ti, v->list.items[i], prev, n)) return false;
    }
    return true;
}

/* Unbinds the loop's target after the loop (prev: what bind_target kept), but for a name bound to
 * a var of the parent block (enumerate's index), which keeps its last value as Python's does. */
static void unbind_target(Ctx *c, FlBlock *parent, Env *e, FlAst *t, FlValue **prev, size_t *n) {
    if (t->kind == FL_AST_NAME) {
        FlValue *p = prev[(*n)++], *now = fl_map_find_str(&e->map, t->name);
        if (now && now->kind == VK_VAR && fl_ir_var_lookup(c->b.main, parent, now->var.name)) return;
        if (p) fl_env_set(e, t->name, p);
        else fl_env_remove(e, t->name);
        return;
    }
    for (size_t i = 0; i < t->list.items.len; i++) unbind_target(c, parent, e, t->list.items.items[i], prev, n);
}

/* A driver loop's target names bound to vars of sub (enumerate's index): each is bound to a var of
 * the parent instead, zeros before the loop, that an assign at the start of the body sets, so
 * that after the loop the name holds its last value as Python's does (unbind_target keeps it). */
static bool keep_targets(Ctx *c, Env *e, FlAst *t, FlBlock *sub, FlBlock *parent, FlBlock *body, FlSpan sp) {
    if (t->kind == FL_AST_TUPLE) {
        for (size_t i = 0; i < t->list.items.len; i++)
            if (!keep_targets(c, e, t->list.items.items[i], sub, parent, body, sp)) return false;
        return true;
    }
    FlValue *v = t->kind == FL_AST_NAME ? fl_map_find_str(&e->map, t->name) : NULL;
    FlVarDesc *d = v && v->kind == VK_VAR ? fl_ir_var_find(sub, v->var.name) : NULL;
    if (!d || d->kind != FL_VAR_DENSE) return true;
    const char *kept = fl_ev_unique(c, t->name);
    FlVarDesc *kd = fl_ev_new_var(c, parent, kept, sp);
    fl_ir_var_copy(kd, d);
    kd->persistable = false;
    kd->loc = fl_ev_loc(c, t->span);
    if (!fl_ev_zero_init(c, parent, kd, sp)) return false;
    assign_in(c, body, v->var.name, kept, sp);
    fl_env_set(e, t->name, fl_v_var(c, kept));
    return true;
}

Flow fl_ev_lower_for_next(Ctx *c, Env *e, FlAst *s, LoopNextFn next, void *arg) {
    FlBlock *parent = c->b.block;
    FlValue *ok = fl_ev_const_var(c, c->vtrue, FL_DT_BOOL, s->span);
    if (ok->kind == VK_ERROR) return FLOW_ERROR;
    FlAstList *bodies[1] = {&s->loop.body};
    own_names(c, e, bodies, 1, s->span);
    FlBlock *sub = fl_ir_block_new(c->b.main, parent->idx);
    c->b.block = sub;
    FlValue *v = next(c, sub, ok->var.name, arg, s->loop.target->span);
    FlValue *prev[9];
    size_t np = 0;
    if (v->kind == VK_ERROR || !bind_target(c, e, s->loop.target, v, prev, &np)) {
        c->b.block = parent;
        return FLOW_ERROR;
    }
    RtLoop loop = {.cond = ok->var.name, .body = fl_ir_block_new(c->b.main, sub->idx), .outer = parent,
                   .has_else = s->loop.else_body.len > 0};
    if (fl_ev_in_driver(c) && !keep_targets(c, e, s->loop.target, sub, parent, loop.body, s->span)) {
        c->b.block = parent;
        return FLOW_ERROR;
    }
    Flow f = loop_body(c, e, &s->loop.body, &loop, s->span);
    loop_end(c, e, s, &loop, f, NULL, NULL);
    FlOpDesc *cb = control_op(c, "conditional_block", loop.body, s->span);
    fl_ir_op_add_input(cb, "Cond", ok->var.name);
    fl_ev_control_io(c, sub, loop.body, cb, "X", "Out");
    fl_ev_infer(c, sub, cb, s->span);
    /* the loop's names are the loop's (Go's `for v := range ch`); names the body bound are carried */
    np = 0;
    unbind_target(c, parent, e, s->loop.target, prev, &np);
    c->b.block = parent;
    FlOpDesc *op = control_op(c, "while", sub, s->span);
    fl_ev_control_io(c, parent, sub, op, "X", "Out");
    fl_ir_op_add_input(op, "Condition", ok->var.name);
    fl_ev_infer(c, parent, op, s->span);
    if (f == FLOW_RETURN) {
        fl_ev_error(c, s->span, "'return' inside a runtime loop cannot be compiled");
        return FLOW_ERROR;
    }
    return loop_else(c, e, s, &loop);
}

/* ------------------------------------------------------------------ go, parallel_for, select, server.do */

/* go: the body on its own goroutine */
Flow fl_ev_lower_go(Ctx *c, Env *e, FlAstList *body, FlSpan sp) {
    FlBlock *parent = c->b.block;
    Flow f;
    int saved_loop = c->loop_depth;
    c->loop_depth = 0;
    FL_VEC_PUSH(&c->rtloops, NULL);
    FlBlock *sub = fl_ev_sub_block(c, e, body, false, sp, &f);
    c->rtloops.len--;
    c->loop_depth = saved_loop;
    FlOpDesc *op = control_op(c, "go", sub, sp);
    fl_ev_control_io(c, parent, sub, op, "X", NULL);
    fl_ev_infer(c, parent, op, sp);
    if (f == FLOW_RETURN) {
        fl_ev_error(c, sp, "'return' inside a go block");
        return FLOW_ERROR;
    }
    return FLOW_NORMAL;
}

/* Thread.start() (driver.c; the current program is the driver): a channel (bool [1], capacity 1)
 * and a go whose body calls fn(*args, **kwargs), compiled into the go's block as a go body is,
 * then sends on the channel, which Thread.join() receives from. Returns the channel Var. */
FlValue *fl_ev_lower_thread(Ctx *c, FlValue *fn, FlValue *args, FlValue *kwargs, FlSpan sp) {
    FlBlock *parent = c->b.block;
    const char *ch = fl_arena_printf(&c->arena, "%s.tmp_0", fl_ev_unique(c, "thread"));
    FlVarDesc *cd = fl_ev_new_var(c, parent, ch, sp);
    int64_t one = 1;
    cd->kind = FL_VAR_CHANNEL;
    cd->dtype = FL_DT_BOOL;
    fl_ir_var_set_shape(cd, 1, &one);
    cd->capacity = 1;
    cd->stop_gradient = true;
    FlOpDesc *mk = fl_ev_op_raw(c, parent, "channel_create", sp);
    fl_ir_op_add_output(mk, "Out", ch);
    fl_ir_op_set_int(mk, "dtype", FL_DT_BOOL);
    fl_ir_op_set_int(mk, "capacity", 1);
    if (!fl_ev_infer(c, parent, mk, sp)) return c->error;
    FlBlock *sub = fl_ir_block_new(c->b.main, parent->idx), *home = c->home;
    int saved_loop = c->loop_depth;
    c->b.block = c->home = sub;
    c->loop_depth = 0;
    c->rt_depth++;
    FL_VEC_PUSH(&c->rtloops, NULL);
    CallArgs ca = {.pos = args->list.items, .npos = args->list.len, .span = sp};
    ca.nkw = kwargs->dict.len;
    ca.kwnames = fl_arena_alloc(&c->arena, (ca.nkw + 1) * sizeof *ca.kwnames);
    ca.kwvals = kwargs->dict.vals;
    bool ok = true;
    for (size_t i = 0; i < ca.nkw && ok; i++) {
        if (kwargs->dict.keys[i]->kind != VK_STR) {
            fl_ev_error(c, sp, "Thread(kwargs=...) keys must be strings");
            ok = false;
        } else {
            ca.kwnames[i] = kwargs->dict.keys[i]->str.s;
        }
    }
    /* a user's function locates its ops at its own lines, not at the start() that runs it */
    bool saved_have = c->have_err_span;
    FlSpan saved_span = c->err_span;
    if (fn->kind == VK_FUNC && fn->func.mod && !fn->func.mod->is_stdlib) c->have_err_span = false;
    if (ok) ok = fl_ev_call(c, fn, &ca)->kind != VK_ERROR;
    c->have_err_span = saved_have;
    c->err_span = saved_span;
    FlValue *done = ok ? fl_ev_const_var(c, c->vtrue, FL_DT_BOOL, sp) : c->error;
    if (ok && done->kind == VK_VAR) {
        FlOpDesc *snd = fl_ev_op_raw(c, sub, "channel_send", sp);
        fl_ir_op_add_input(snd, "Channel", ch);
        fl_ir_op_add_input(snd, "X", done->var.name);
        ok = fl_ev_infer(c, sub, snd, sp);
    }
    c->rtloops.len--;
    c->rt_depth--;
    c->loop_depth = saved_loop;
    c->home = home;
    c->b.block = parent;
    FlOpDesc *op = control_op(c, "go", sub, sp);
    fl_ev_control_io(c, parent, sub, op, "X", NULL);
    fl_ev_infer(c, parent, op, sp);
    return ok ? fl_v_var(c, ch) : c->error;
}

/* parallel_for: n concurrent iterations; idx_name is bound to the index Var (or, with
 * as_rec, a record whose .idx is). */
Flow fl_ev_lower_parallel_for(Ctx *c, Env *e, int64_t n, const char *bind, bool as_rec, FlAstList *body, FlSpan sp) {
    FlBlock *parent = c->b.block;
    if (n < 1) {
        fl_ev_error(c, sp, "parallel_for needs at least one iteration, found %lld", (long long)n);
        return FLOW_ERROR;
    }
    const char *base = fl_ev_unique(c, "parallel_for");
    const char *idx = fl_arena_printf(&c->arena, "%s.idx", base);
    FlBlock *sub = fl_ir_block_new(c->b.main, parent->idx);
    FlVarDesc *d = fl_ev_new_var(c, sub, idx, sp);
    d->dtype = FL_DT_INT64;
    int64_t one = 1;
    fl_ir_var_set_shape(d, 1, &one);
    d->stop_gradient = true;
    Snapshot snap;
    snap_take(e, &snap);
    c->b.block = sub;
    FlValue *iv = fl_v_var(c, idx);
    if (bind) {
        if (as_rec) {
            FlValue *r = fl_v_record(c, "ParallelFor");
            fl_v_rec_set(c, r, "idx", iv);
            fl_env_set(e, fl_intern_str(&c->in, bind), r);
        } else {
            fl_env_set(e, fl_intern_str(&c->in, bind), iv);
        }
    }
    int saved_loop = c->loop_depth;
    c->loop_depth = 0;
    FL_VEC_PUSH(&c->rtloops, NULL);
    FlBlock *home = c->home;
    c->home = sub;
    Flow f = fl_ev_block(c, e, body);
    c->home = home;
    c->rtloops.len--;
    c->loop_depth = saved_loop;
    snap_restore(e, &snap);
    snap_end(&snap);
    c->b.block = parent;
    FlOpDesc *op = control_op(c, "parallel_for", sub, sp);
    fl_ir_op_set_int(op, "n", n);
    fl_ir_op_set_string(op, "index_var", idx);
    fl_ev_control_io(c, parent, sub, op, "X", "Out");
    fl_ev_infer(c, parent, op, sp);
    if (f == FLOW_RETURN || f == FLOW_BREAK || f == FLOW_CONTINUE) {
        fl_ev_error(c, sp, "'return', 'break' and 'continue' cannot leave a parallel_for body");
        return FLOW_ERROR;
    }
    return FLOW_NORMAL;
}

Flow fl_ev_lower_select(Ctx *c, Env *e, FlAst *s) {
    FlBlock *parent = c->b.block;
    FL_VEC(int64_t) kinds = {0};
    FL_VEC(const char *) chans = {0};
    FL_VEC(const char *) vars = {0};
    FL_VEC(const char *) oks = {0}; /* each case's received flag var, "" for none */
    bool any_ok = false;
    FL_VEC(int64_t) blocks = {0};
    bool bad = false, has_default = false;
    int nil_cases = 0;
    /* once for every case: the one chosen writes the vars the code after reads */
    FlAstList self = {&s, 1};
    FlAstList *bodies[1] = {&self};
    own_names(c, e, bodies, 1, s->span);
    for (size_t i = 0; i < s->select.cases.len; i++) {
        FlAst *cs = s->select.cases.items[i];
        FlAst *opn = cs->case_.op;
        Snapshot snap;
        snap_take(e, &snap);
        int64_t kind = 2;
        const char *chn = "", *vn = "", *assign_to = NULL, *okn = "";
        if (!opn) {
            if (has_default) {
                fl_ev_error(c, cs->span, "a select has at most one 'default' case");
                bad = true;
            }
            has_default = true;
        } else {
            if (opn->kind != FL_AST_CALL || opn->call.fn->kind != FL_AST_ATTR ||
                (strcmp(opn->call.fn->attr.name, "recv") != 0 && strcmp(opn->call.fn->attr.name, "send") != 0)) {
                fl_ev_error(c, opn->span, "a select case must be 'ch.recv()' or 'ch.send(x)'");
                bad = true;
                snap_end(&snap);
                continue;
            }
            bool is_send = strcmp(opn->call.fn->attr.name, "send") == 0;
            FlValue *ch = fl_ev_expr(c, e, opn->call.fn->attr.obj);
            if (ch->kind == VK_ERROR) {
                bad = true;
                snap_end(&snap);
                continue;
            }
            if (ch->kind == VK_NONE) { /* Go's nil channel, known at compile time: never ready */
                nil_cases++;
                snap_end(&snap);
                continue;
            }
            if (!fl_ev_is_channel(c, ch)) {
                fl_ev_error(c, opn->call.fn->attr.obj->span, "'%s' needs a channel, found %s",
                            is_send ? "send" : "recv", fl_v_type_name(ch));
                bad = true;
                snap_end(&snap);
                continue;
            }
            FlVarDesc *chd = fl_ev_var_desc(c, ch);
            chn = ch->var.name;
            if (is_send) {
                kind = 1;
                if (opn->call.nargs != 1) {
                    fl_ev_error(c, opn->span, "send() takes one value");
                    bad = true;
                    snap_end(&snap);
                    continue;
                }
                FlValue *x = fl_ev_expr(c, e, opn->call.args[0].value);
                if (x->kind == VK_INT || x->kind == VK_FLOAT) x = fl_ev_const_var(c, x, chd->dtype, opn->span);
                if (x->kind != VK_VAR) {
                    if (x->kind != VK_ERROR) fl_ev_error(c, opn->span, "send() needs a Var, found %s", fl_v_type_name(x));
                    bad = true;
                    snap_end(&snap);
                    continue;
                }
                vn = x->var.name;
            } else {
                kind = 0;
                vn = fl_arena_printf(&c->arena, "%s.tmp_0", fl_ev_unique(c, "select_recv"));
                FlVarDesc *vd = fl_ev_new_var(c, parent, vn, cs->span);
                fl_ir_var_set_elem(vd, chd);
                FlAst *tg = cs->case_.target;
                if (tg && (tg->kind == FL_AST_TUPLE || tg->kind == FL_AST_LIST) && tg->list.items.len == 2 &&
                    tg->list.items.items[0]->kind == FL_AST_NAME && tg->list.items.items[1]->kind == FL_AST_NAME) {
                    /* `case v, ok = ch.recv():` declares both names in the case (Go's `v, ok := <-ch`) */
                    okn = bool_var(c, "select_recv_ok", cs->span);
                    fl_env_set(e, tg->list.items.items[0]->name, fl_v_var(c, vn));
                    fl_env_set(e, tg->list.items.items[1]->name, fl_v_var(c, okn));
                } else if (tg) {
                    if (tg->kind != FL_AST_NAME) {
                        fl_ev_error(c, tg->span, "a select case binds one name, or two: 'case v, ok = ch.recv():'");
                        bad = true;
                    } else {
                        FlValue *prev = fl_map_find_str(&e->map, cs->case_.target->name);
                        /* `case x = ch.recv():` assigns an x that is a Var (Go's `x = <-ch`), else
                         * declares a name of the case (Go's `x := <-ch`) */
                        if (prev && prev->kind == VK_VAR) assign_to = cs->case_.target->name;
                        else fl_env_set(e, cs->case_.target->name, fl_v_var(c, vn));
                    }
                }
            }
        }
        Flow f;
        FlBlock *sub = fl_ir_block_new(c->b.main, parent->idx);
        /* the case runs as a loop that runs once: break and continue end it (select_exit) */
        RtLoop sel = {.body = sub, .outer = parent, .depth = c->rt_depth + 1, .is_select = true,
                      .in_ct_loop = c->loop_depth > 0};
        int loop_depth = c->loop_depth;
        c->loop_depth = 0;
        FL_VEC_PUSH(&c->rtloops, &sel);
        f = run_bound(c, e, &cs->case_.body, 0, NULL, sub, true, false, false, assign_to,
                      assign_to ? fl_v_var(c, vn) : NULL, cs->span);
        c->rtloops.len--;
        c->loop_depth = loop_depth;
        if (f == FLOW_CONTINUE) f = FLOW_NORMAL;
        /* names the case rebinds stay rebound (carried out); names it declared do not leak */
        StrVec declared = {0};
        if (!assign_to) target_names(cs->case_.target, &declared);
        for (size_t k = 0; k < declared.len; k++) {
            const char *tn = declared.data[k];
            FlValue *prev = snap_before(&snap, tn);
            if (prev) fl_env_set(e, tn, prev);
            else fl_env_remove(e, tn);
        }
        FL_VEC_FREE(&declared);
        snap_end(&snap);
        if (f == FLOW_RETURN) {
            fl_ev_error(c, cs->span, "'return' inside a select case cannot be compiled (the case is chosen at run time)");
            bad = true;
        }
        FL_VEC_PUSH(&kinds, kind);
        FL_VEC_PUSH(&chans, chn);
        FL_VEC_PUSH(&vars, vn);
        FL_VEC_PUSH(&oks, okn);
        any_ok |= okn[0] != 0;
        FL_VEC_PUSH(&blocks, (int64_t)sub->idx);
    }
    if (!bad && (kinds.len || nil_cases)) { /* only nil cases: select {} blocks forever */
        FlOpDesc *op = fl_ev_op_raw(c, parent, "select", s->span);
        fl_ir_op_set_ints(op, "case_kinds", kinds.data, kinds.len);
        fl_ir_op_set_strings(op, "case_channels", chans.data, chans.len);
        fl_ir_op_set_strings(op, "case_vars", vars.data, vars.len);
        if (any_ok) fl_ir_op_set_strings(op, "case_oks", oks.data, oks.len);
        fl_ir_op_set_blocks(op, "sub_blocks", blocks.data, blocks.len);
        fl_ir_op_add_input_slot(op, "X");
        fl_ir_op_add_output_slot(op, "Out");
        FlBlockIo io;
        fl_ir_block_io_init(&io);
        for (size_t i = 0; i < kinds.len; i++) {
            if (chans.data[i][0]) fl_ir_block_io_add(&io, false, chans.data[i]);
            if (kinds.data[i] == 1) fl_ir_block_io_add(&io, false, vars.data[i]);
            if (kinds.data[i] == 0) fl_ir_block_io_add(&io, true, vars.data[i]);
            if (kinds.data[i] == 0 && oks.data[i][0]) fl_ir_block_io_add(&io, true, oks.data[i]);
            fl_ir_block_io(c->b.main, parent, fl_ir_block(c->b.main, (int)blocks.data[i]), &io);
        }
        for (size_t i = 0; i < io.ins.len; i++) {
            bool is_recv_target = false;
            for (size_t k = 0; k < kinds.len; k++)
                if (kinds.data[k] == 0 && (strcmp(vars.data[k], io.ins.data[i]) == 0 || strcmp(oks.data[k], io.ins.data[i]) == 0))
                    is_recv_target = true;
            if (!is_recv_target && fl_ir_var_lookup(c->b.main, parent, io.ins.data[i])) fl_ir_op_add_input(op, "X", io.ins.data[i]);
        }
        for (size_t i = 0; i < io.outs.len; i++)
            if (fl_ir_var_lookup(c->b.main, parent, io.outs.data[i])) fl_ir_op_add_output(op, "Out", io.outs.data[i]);
        fl_ir_block_io_fini(&io);
        fl_ev_infer(c, parent, op, s->span);
    }
    FL_VEC_FREE(&kinds);
    FL_VEC_FREE(&chans);
    FL_VEC_FREE(&vars);
    FL_VEC_FREE(&oks);
    FL_VEC_FREE(&blocks);
    return bad ? FLOW_ERROR : FLOW_NORMAL;
}

/* server.do(): the body becomes the optimize block of a listen_and_serv op, which replaces the
 * ops of the top-level block (g is the guard; g->guard.a the fanin, if given). */
Flow fl_ev_lower_server_do(Ctx *c, Env *e, FlAst *s, FlValue *g) {
    if (c->in_server_do) {
        fl_ev_error(c, s->span, "server.do() blocks cannot nest");
        return FLOW_ERROR;
    }
    FlBlock *parent = c->b.block;
    if (parent->idx != 0) {
        fl_ev_error(c, s->span, "server.do() must be used at the top level of the program");
        return FLOW_ERROR;
    }
    FlBlock *sub = fl_ir_block_new(c->b.main, parent->idx);
    FlBlock *home = c->home;
    c->in_server_do = true;
    c->server_block = sub;
    c->b.block = c->home = sub;
    Flow f = fl_ev_block(c, e, &s->with.body);
    c->b.block = parent;
    c->home = home;
    c->in_server_do = false;
    /* The server runs only listen_and_serv: the forward and backward ops that built the
     * model belong to the trainers. */
    for (size_t i = parent->ops.len; i-- > 0;) {
        FlOpDesc *op = parent->ops.data[i];
        if (!fl_ops_is(op, FL_OPID_listen_and_serv)) fl_ir_op_remove(parent, i);
    }
    FlOpDesc *op = fl_ev_op_raw(c, parent, "listen_and_serv", s->span);
    int64_t bi = sub->idx;
    fl_ir_op_set_blocks(op, "optimize_blocks", &bi, 1);
    fl_ev_control_io(c, parent, sub, op, "X", NULL);
    /* every gradient the optimize block reads comes from the trainers */
    FL_VEC(const char *) g2b = {0};
    FlSlot *xs = fl_ir_op_input(op, "X");
    for (size_t i = 0; xs && i < xs->nargs; i++)
        if (fl_rule_has_grad(xs->args[i]))
            FL_VEC_PUSH(&g2b, fl_arena_printf(&c->arena, "%s:%d", xs->args[i], sub->idx));
    fl_ir_op_set_strings(op, "grad_to_block", g2b.data, g2b.len);
    FL_VEC_FREE(&g2b);
    if (g->guard.a) fl_ir_op_set_int(op, "fanin", g->guard.a->i);
    fl_ev_infer(c, parent, op, s->span);
    return f == FLOW_ERROR ? f : FLOW_NORMAL;
}

/* ------------------------------------------------------------------ recurrent layers' blocks */

/* Calls owner.<name>(args...) at the with statement's span; false after an error. */
static bool call_owner(Ctx *c, FlValue *owner, const char *name, FlValue **args, size_t n, FlSpan sp) {
    FlValue *fn = fl_ev_find_attr(c, owner, name, sp);
    if (!fn) {
        fl_ev_error(c, sp, "'%s' object has no method '%s'", fl_v_type_name(owner), name);
        return false;
    }
    return fl_ev_call_simple(c, fn, sp, args, n)->kind != VK_ERROR;
}

Flow fl_ev_lower_rnn(Ctx *c, Env *e, FlAst *s, FlValue *g) {
    if (s->with.as_name) {
        fl_ev_error(c, s->span, "the block of a recurrent layer binds no name (write 'with rnn.block():')");
        return FLOW_ERROR;
    }
    FlBlock *parent = c->b.block, *home = c->home;
    FlBlock *sub = fl_ir_block_new(c->b.main, parent->idx);
    FlValue *idx = fl_v_int(c, sub->idx);
    if (!call_owner(c, g->guard.a, "_block_begin", &idx, 1, s->span)) return FLOW_ERROR;
    Snapshot snap;
    snap_take(e, &snap);
    int saved_loop = c->loop_depth;
    c->loop_depth = 0;
    FL_VEC_PUSH(&c->rtloops, NULL);
    c->b.block = c->home = sub;
    Flow f = fl_ev_block(c, e, &s->with.body); /* runs every step: not a conditional block */
    c->b.block = parent;
    c->home = home;
    c->rtloops.len--;
    c->loop_depth = saved_loop;
    snap_restore(e, &snap);
    snap_end(&snap);
    if (f == FLOW_RETURN || f == FLOW_BREAK || f == FLOW_CONTINUE) {
        fl_ev_error(c, s->span, "'return', 'break' and 'continue' cannot leave the block of a recurrent layer");
        return FLOW_ERROR;
    }
    if (f == FLOW_ERROR) {
        call_owner(c, g->guard.a, "_block_failed", NULL, 0, s->span); /* no op: no second report */
        return f;
    }
    return call_owner(c, g->guard.a, "_block_end", NULL, 0, s->span) ? FLOW_NORMAL : FLOW_ERROR;
}

Flow fl_ev_lower_while_guard(Ctx *c, Env *e, FlAst *s, FlValue *g) {
    FlValue *cond = g->guard.a;
    if (s->with.as_name) {
        fl_ev_error(c, s->span, "'with while_op.block()' binds no name");
        return FLOW_ERROR;
    }
    if (!check_cond_var(c, cond, s->span, "While")) return FLOW_ERROR;
    FlBlock *parent = c->b.block;
    Flow f;
    int saved_loop = c->loop_depth;
    c->loop_depth = 0;
    FL_VEC_PUSH(&c->rtloops, NULL);
    FlBlock *sub = fl_ev_sub_block(c, e, &s->with.body, false, s->span, &f);
    if (f == FLOW_NORMAL && g->guard.b) { /* the guard's own end of the body, in the loop's block */
        FlBlock *home = c->home;
        c->b.block = c->home = sub;
        c->rt_depth++;
        if (fl_ev_call_simple(c, g->guard.b, s->span, NULL, 0)->kind == VK_ERROR) f = FLOW_ERROR;
        c->rt_depth--;
        c->b.block = parent;
        c->home = home;
    }
    c->rtloops.len--;
    c->loop_depth = saved_loop;
    if (f == FLOW_RETURN || f == FLOW_BREAK || f == FLOW_CONTINUE) {
        fl_ev_error(c, s->span, "'return', 'break' and 'continue' cannot leave the block of a While (update its condition)");
        return FLOW_ERROR;
    }
    if (f == FLOW_ERROR) return f;
    FlOpDesc *op = control_op(c, "while", sub, s->span);
    fl_ev_control_io(c, parent, sub, op, "X", "Out");
    fl_ir_op_add_input(op, "Condition", cond->var.name);
    const FlSlot *outs = fl_ir_op_output(op, "Out");
    bool updates = false;
    for (size_t i = 0; outs && i < outs->nargs; i++) updates |= strcmp(outs->args[i], cond->var.name) == 0;
    if (!updates) {
        fl_ev_error(c, s->span, "the block of this While never updates its condition '%s', so it would run forever; "
                                "recompute it in the block (layers.less_than(..., cond=...))",
                    cond->var.name);
        return FLOW_ERROR;
    }
    fl_ev_infer(c, parent, op, s->span);
    return FLOW_NORMAL;
}

Flow fl_ev_lower_cond_guard(Ctx *c, Env *e, FlAst *s, FlValue *g) {
    FlValue *cond = g->guard.a;
    if (s->with.as_name) {
        fl_ev_error(c, s->span, "'with switch.case(...)' binds no name");
        return FLOW_ERROR;
    }
    if (!check_cond_var(c, cond, s->span, "a Switch case")) return FLOW_ERROR;
    FlAstList *bodies[1] = {&s->with.body};
    own_names(c, e, bodies, 1, s->span);
    Flow f = cond_block(c, e, &s->with.body, 0, NULL, cond->var.name, false, s->span);
    return branch_flow(c, f, s->span, "a Switch case");
}
