/* driver_contrib.c: the native module `_contrib` under stdlib/fluid/contrib/lookup_table_utils.fl
 * (Fluid's contrib.utils.lookup_table_utils, docs/distributed.md, "Distributed tables"):
 *
 *   local_lookups(program)  convert_dist_to_sparse_program's program: a copy of `program` (a
 *                           program the bundle adopts, as a clone) in which every lookup of a
 *                           distributed table (lookup_table and its gradient with
 *                           is_distributed=True) reads the whole table where it runs; None when
 *                           the program has no such lookup (Fluid warns and returns None)
 *   distributed_tables(program)
 *                           the names of the tables its lookups read with is_distributed=True,
 *                           in the order of their first lookup
 *
 * A copy, not the program itself as Fluid rewrites it: the script's programs are made when it
 * compiles, so changing the program would also change the runs of it that come before the call
 * (the training whose table the pservers hold).
 *
 * The program edits of contrib.QuantizeTranspiler (stdlib/fluid/contrib/quantize.fl), which
 * rewrites a program in place as Fluid's does; ops are made with _core.op (appended) and then
 * moved where Fluid inserts them:
 *
 *   num_ops(program, block)          the block's op count
 *   move_tail(program, block, n, pos) the block's last n ops to before op pos, in their order
 *   rename_input(program, block, i, old, new)
 *                                    every input arg `old` of op i becomes `new`
 *   remove_op(program, block, i)     drops op i
 *   make_persistable(program, name)  the global block's var `name` keeps its value in the scope
 *   remove_unused_vars(program)      drops the vars no op of the program names (neither a data
 *                                    var fed by name nor the LoD of a var that stays)
 *   driver_runs(program)             whether the driver already runs the program (an exe.run
 *                                    before this point of the script) or saves or loads its vars
 *                                    (fluid.io's save_* and load_*: they read its declarations)
 *   replace_with_copy(program)       the Program value becomes a copy of its program, which the
 *                                    bundle adopts when the driver first runs it; the runs before
 *                                    keep the program as it was
 */
#include <string.h>

#include "compiler/ops.h"
#include "lang/eval_impl.h"

/* Whether op is a lookup of a distributed table (lookup_table or lookup_table_grad). */
static bool is_dist_lookup(const FlOpDesc *op) {
    const FlOpInfo *info = fl_ops_of(op);
    return info && info->id == FL_OPID_lookup_table && fl_ir_op_get_bool(op, "is_distributed", false);
}

static FlValue *want_program(Ctx *c, FlValue *p, const char *what, FlSpan sp) {
    if (p->kind != VK_PROGRAM)
        return fl_ev_error(c, sp, "%s(program) takes a Program, found %s", what, fl_v_type_name(p));
    return p;
}

static FlValue *ct_distributed_tables(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("distributed_tables", "program", 1);
    if (want_program(c, v[0], "convert_dist_to_sparse_program", a->span) == c->error) return c->error;
    const FlProgram *p = v[0]->prog;
    FlValue *l = fl_v_list(c, VK_LIST);
    for (size_t bi = 0; bi < p->blocks.len; bi++) {
        const FlBlock *b = p->blocks.data[bi];
        for (size_t i = 0; i < b->ops.len; i++) {
            const FlOpDesc *op = b->ops.data[i];
            const char *w = is_dist_lookup(op) ? fl_ir_op_input1(op, "W") : NULL;
            if (!w) continue;
            bool seen = false;
            for (size_t k = 0; k < l->list.len && !seen; k++) seen = strcmp(l->list.items[k]->str.s, w) == 0;
            if (!seen) fl_v_list_push(c, l, fl_v_cstr(c, w));
        }
    }
    return l;
}

static FlValue *ct_local_lookups(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("local_lookups", "program", 1);
    if (want_program(c, v[0], "convert_dist_to_sparse_program", a->span) == c->error) return c->error;
    size_t changed = 0;
    const FlProgram *p = v[0]->prog;
    for (size_t bi = 0; bi < p->blocks.len; bi++) {
        const FlBlock *b = p->blocks.data[bi];
        for (size_t i = 0; i < b->ops.len; i++) changed += is_dist_lookup(b->ops.data[i]);
    }
    if (!changed) return c->none;
    FlProgram *q = fl_ev_program_copy(c, p);
    for (size_t bi = 0; bi < q->blocks.len; bi++) {
        FlBlock *b = q->blocks.data[bi];
        for (size_t i = 0; i < b->ops.len; i++)
            if (is_dist_lookup(b->ops.data[i])) fl_ir_op_set_bool(b->ops.data[i], "is_distributed", false);
    }
    FlValue *r = fl_v_new(c, VK_PROGRAM);
    r->prog = q;
    return r;
}

/* ------------------------------------------------------------------ program edits */

static FlBlock *want_block(Ctx *c, FlValue *p, FlValue *bi, FlSpan sp) {
    int64_t i;
    if (want_program(c, p, "QuantizeTranspiler", sp) == c->error || !fl_ev_want_int(c, bi, "block", sp, &i)) return NULL;
    if (i < 0 || (size_t)i >= p->prog->blocks.len) {
        fl_ev_error(c, sp, "block %lld: the program has %zu blocks", (long long)i, p->prog->blocks.len);
        return NULL;
    }
    return fl_ir_block(p->prog, (int)i);
}

static bool want_op_index(Ctx *c, const FlBlock *b, FlValue *v, bool end_ok, FlSpan sp, size_t *out) {
    int64_t i;
    if (!fl_ev_want_int(c, v, "op index", sp, &i)) return false;
    if (i < 0 || (size_t)i > b->ops.len || (!end_ok && (size_t)i == b->ops.len)) {
        fl_ev_error(c, sp, "op index %lld: block %d has %zu ops", (long long)i, b->idx, b->ops.len);
        return false;
    }
    *out = (size_t)i;
    return true;
}

static FlValue *ct_num_ops(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("num_ops", "program block", 2);
    FlBlock *b = want_block(c, v[0], v[1], a->span);
    return b ? fl_v_int(c, (int64_t)b->ops.len) : c->error;
}

static FlValue *ct_move_tail(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("move_tail", "program block n pos", 4);
    FlBlock *b = want_block(c, v[0], v[1], a->span);
    int64_t n;
    size_t pos;
    if (!b || !fl_ev_want_int(c, v[2], "n", a->span, &n) || !want_op_index(c, b, v[3], true, a->span, &pos))
        return c->error;
    if (n < 0 || (size_t)n > b->ops.len || pos > b->ops.len - (size_t)n)
        return fl_ev_error(c, a->span, "move_tail: %lld ops to before op %zu of %zu", (long long)n, pos, b->ops.len);
    fl_ir_ops_move_tail(b, b->ops.len - (size_t)n, pos);
    return c->none;
}

static FlValue *ct_rename_input(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("rename_input", "program block op old new", 5);
    FlBlock *b = want_block(c, v[0], v[1], a->span);
    size_t i;
    if (!b || !want_op_index(c, b, v[2], false, a->span, &i) || !fl_ev_want_str(c, v[3], "old", a->span) ||
        !fl_ev_want_str(c, v[4], "new", a->span))
        return c->error;
    FlOpDesc *op = b->ops.data[i];
    for (size_t s = 0; s < op->ins.len; s++)
        for (size_t k = 0; k < op->ins.data[s].nargs; k++)
            if (strcmp(op->ins.data[s].args[k], v[3]->str.s) == 0) fl_ir_slot_set_arg(&op->ins.data[s], k, v[4]->str.s);
    return c->none;
}

static FlValue *ct_remove_op(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("remove_op", "program block op", 3);
    FlBlock *b = want_block(c, v[0], v[1], a->span);
    size_t i;
    if (!b || !want_op_index(c, b, v[2], false, a->span, &i)) return c->error;
    fl_ir_op_remove(b, i);
    return c->none;
}

static FlValue *ct_make_persistable(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("make_persistable", "program name", 2);
    if (want_program(c, v[0], "QuantizeTranspiler", a->span) == c->error ||
        !fl_ev_want_str(c, v[1], "name", a->span))
        return c->error;
    FlVarDesc *d = fl_ir_var_find(fl_ir_block(v[0]->prog, 0), v[1]->str.s);
    if (!d) return fl_ev_error(c, a->span, "the global block has no var named '%s'", v[1]->str.s);
    d->persistable = true;
    return c->none;
}

static void note_slots(FlMap *used, const FlSlot *slots, size_t n) {
    for (size_t s = 0; s < n; s++)
        for (size_t k = 0; k < slots[s].nargs; k++) fl_map_put_str(used, slots[s].args[k], (void *)1);
}

static FlValue *ct_remove_unused_vars(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("remove_unused_vars", "program", 1);
    if (want_program(c, v[0], "QuantizeTranspiler", a->span) == c->error) return c->error;
    FlProgram *p = v[0]->prog;
    FlMap used;
    fl_map_init(&used);
    for (size_t bi = 0; bi < p->blocks.len; bi++) {
        const FlBlock *b = p->blocks.data[bi];
        for (size_t i = 0; i < b->ops.len; i++) {
            note_slots(&used, b->ops.data[i]->ins.data, b->ops.data[i]->ins.len);
            note_slots(&used, b->ops.data[i]->outs.data, b->ops.data[i]->outs.len);
        }
    }
    for (size_t bi = 0; bi < p->blocks.len; bi++) { /* the LoD offsets of vars that stay */
        const FlBlock *b = p->blocks.data[bi];
        for (size_t i = 0; i < b->vars.len; i++) {
            const FlVarDesc *d = b->vars.data[i];
            if (!d->fed && !fl_map_find_str(&used, d->name)) continue;
            for (int k = 0; k < d->lod_level; k++)
                if (d->lod[k]) fl_map_put_str(&used, d->lod[k], (void *)1);
        }
    }
    for (size_t bi = 0; bi < p->blocks.len; bi++) {
        FlBlock *b = p->blocks.data[bi];
        for (size_t i = b->vars.len; i-- > 0;) {
            const FlVarDesc *d = b->vars.data[i];
            if (!d->fed && !fl_map_find_str(&used, d->name)) fl_ir_var_remove(b, d->name);
        }
    }
    fl_map_fini(&used);
    return c->none;
}

/* Whether a run_program op of the driver (any block) names program p. */
static bool driver_runs(Ctx *c, const FlProgram *p) {
    const FlProgram *d = c->bundle->driver;
    const char *name = NULL;
    if (p == c->bundle->main) name = "main";
    else if (p == c->bundle->startup) name = "startup";
    for (size_t i = 0; !name && i < c->bundle->programs.len; i++)
        if (c->bundle->programs.data[i].program == p) name = c->bundle->programs.data[i].name;
    if (!d || !name) return false;
    for (size_t bi = 0; bi < d->blocks.len; bi++) {
        const FlBlock *b = d->blocks.data[bi];
        for (size_t i = 0; i < b->ops.len; i++) {
            const FlOpDesc *op = b->ops.data[i];
            if (!fl_ops_is(op, FL_OPID_run_program) && !fl_ops_is(op, FL_OPID_save_vars) &&
                !fl_ops_is(op, FL_OPID_load_vars))
                continue;
            const FlAttr *at = fl_ir_op_attr(op, "program");
            if (at && at->type == FL_ATTR_STRING && strcmp(at->s, name) == 0) return true;
        }
    }
    return false;
}

static FlValue *ct_driver_runs(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("driver_runs", "program", 1);
    if (want_program(c, v[0], "QuantizeTranspiler", a->span) == c->error) return c->error;
    return fl_v_bool(c, driver_runs(c, v[0]->prog));
}

static FlValue *ct_replace_with_copy(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("replace_with_copy", "program", 1);
    if (want_program(c, v[0], "QuantizeTranspiler", a->span) == c->error) return c->error;
    if (v[0]->prog == c->bundle->main || v[0]->prog == c->bundle->startup)
        return fl_ev_error(c, a->span, "freeze_program: the script runs the default %s program before this call, "
                           "which is not replaced by its frozen copy: freeze a test program "
                           "(program.clone(for_test=True)), as Fluid's examples do",
                           v[0]->prog == c->bundle->main ? "main" : "startup");
    v[0]->prog = fl_ev_program_copy(c, v[0]->prog);
    return c->none;
}

static const NativeFn contrib_fns[] = {
    {"num_ops", ct_num_ops},
    {"move_tail", ct_move_tail},
    {"rename_input", ct_rename_input},
    {"remove_op", ct_remove_op},
    {"make_persistable", ct_make_persistable},
    {"remove_unused_vars", ct_remove_unused_vars},
    {"driver_runs", ct_driver_runs},
    {"replace_with_copy", ct_replace_with_copy},
    {"distributed_tables", ct_distributed_tables},
    {"local_lookups", ct_local_lookups},
};

void fl_ev_contrib_install(Ctx *c) { fl_ev_module_of_fns(c, "_contrib", contrib_fns, FL_ARRAY_LEN(contrib_fns)); }
