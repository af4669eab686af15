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
    FlProgram *q = fl_ir_program_clone(v[0]->prog);
    size_t changed = 0;
    for (size_t bi = 0; bi < q->blocks.len; bi++) {
        FlBlock *b = q->blocks.data[bi];
        for (size_t i = 0; i < b->ops.len; i++)
            if (is_dist_lookup(b->ops.data[i])) {
                fl_ir_op_set_bool(b->ops.data[i], "is_distributed", false);
                changed++;
            }
    }
    if (!changed) {
        fl_ir_program_free(q);
        return c->none;
    }
    FlValue *r = fl_v_new(c, VK_PROGRAM);
    r->prog = q;
    FL_VEC_PUSH(&c->programs, q);
    return r;
}

static const NativeFn contrib_fns[] = {
    {"distributed_tables", ct_distributed_tables},
    {"local_lookups", ct_local_lookups},
};

void fl_ev_contrib_install(Ctx *c) { fl_ev_module_of_fns(c, "_contrib", contrib_fns, FL_ARRAY_LEN(contrib_fns)); }
