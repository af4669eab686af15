/* program.c: Programs and Blocks as values (Fluid's framework.Program and Block; docs/driver.md,
 * "Programs in a bundle").
 *
 *   Program: global_block(), block(i), current_block(), num_blocks, list_vars(),
 *            to_string(throw_on_error, with_details=False), clone(for_test) (core.c), random_seed
 *   Block:   idx, parent_idx, program, var(name), has_var(name), create_var(...), vars (a dict), all_parameters(),
 *            ops (a list of Operators: type, input(slot), output(slot), attr(name), ...)
 *   Var.block: the global block of the var's program (so minimize appends to loss.block.program)
 *
 * clone(for_test=True) of a program that has a backward drops it as Fluid's clone does: the
 * gradient ops, the optimizer's updates, its learning-rate and state ops, and whatever reads what
 * they write (fl_ev_program_for_test).
 */
#include <string.h>

#include "lang/eval_impl.h"

static FlValue *var_of(Ctx *c, FlValue *prog, const char *name) {
    FlValue *v = fl_v_var(c, name);
    v->var.prog = prog->prog;
    return v;
}

static FlValue *block_attr(FlValue *self, const char *name) {
    return self->rec.attrs ? fl_map_find_str(&self->rec.attrs->map, name) : NULL;
}

static const FlBlock *block_of(FlValue *self) {
    FlValue *p = block_attr(self, "program"), *i = block_attr(self, "idx");
    return fl_ir_block(p->prog, (int)i->i);
}

/* Block.var(name): a var of this block (Fluid raises ValueError for another name). */
static FlValue *b_var(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("var", "name", 1);
    if (!fl_ev_want_str(c, v[0], "name", a->span)) return c->error;
    int64_t idx = block_attr(self, "idx")->i;
    if (!fl_ir_var_find(block_of(self), v[0]->str.s)) {
        if (idx == 0) return fl_ev_error(c, a->span, "the global block has no var named '%s'", v[0]->str.s);
        return fl_ev_error(c, a->span, "block %lld has no var named '%s'", (long long)idx, v[0]->str.s);
    }
    return var_of(c, block_attr(self, "program"), v[0]->str.s);
}

static FlValue *b_has_var(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("has_var", "name", 1);
    if (!fl_ev_want_str(c, v[0], "name", a->span)) return c->error;
    return fl_v_bool(c, fl_ir_var_find(block_of(self), v[0]->str.s) != NULL);
}

/* Block.create_var(name=None, shape=None, dtype=None, persistable=False, lod_level=0,
 * stop_gradient=False): a var of this block, which must be where layers go now (the current
 * block of the program being built; its global block for a persistable var), as
 * fluid.layers.create_tensor makes one; a name the block has gives its var. */
static FlValue *b_create_var(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("create_var", "name= shape= dtype= persistable= lod_level= stop_gradient=", 6);
    FlValue *prog = block_attr(self, "program");
    int64_t idx = block_attr(self, "idx")->i;
    bool keep = v[3] && v[3]->kind == VK_BOOL && v[3]->b;
    if (prog->prog != c->b.main || (idx != c->b.block->idx && !(keep && idx == 0)))
        return fl_ev_error(c, a->span, "Block.create_var makes a var of the block layers go to now (%s); this is "
                           "block %lld of %s", "program.current_block()", (long long)idx,
                           prog->prog == c->b.main ? "that program" : "another program");
    int64_t lod = 0;
    if (v[4] && !fl_ev_want_int(c, v[4], "lod_level", a->span, &lod)) return c->error;
    if (lod != 0)
        return fl_ev_error(c, a->span, "Block.create_var(lod_level=%lld): a var of sequences gets its offsets from "
                           "the op that writes it; make it with fluid.layers.data(lod_level=...) or a sequence "
                           "layer", (long long)lod);
    if (v[5] && v[5]->kind != VK_BOOL)
        return fl_ev_error(c, a->span, "stop_gradient must be True or False, found %s", fl_v_type_name(v[5]));
    const char *names[5] = {"prefix", "name", "shape", "dtype", "persistable"};
    FlValue *vals[5] = {fl_v_cstr(c, "_generated_var"), v[0], v[1], v[2], v[3]};
    const char *kn[5];
    FlValue *kv[5];
    size_t n = 0;
    for (size_t i = 0; i < 5; i++)
        if (vals[i] && vals[i]->kind != VK_NONE) {
            kn[n] = names[i];
            kv[n++] = vals[i];
        }
    CallArgs ca = {.kwnames = kn, .kwvals = kv, .nkw = n, .span = a->span};
    FlValue *r = fl_ev_core_create_var(c, NULL, &ca);
    if (r->kind == VK_VAR && v[5]) {
        FlVarDesc *d = fl_ev_var_desc(c, r);
        if (d) d->stop_gradient = v[5]->b;
    }
    return r;
}

/* Whether var d of program p is a parameter (made by create_parameter: a layer's weights). */
static bool is_param(Ctx *c, const FlProgram *p, const FlVarDesc *d) {
    const char *key = fl_arena_printf(&c->arena, "%p/%s", (const void *)p, d->name);
    return d->persistable && fl_map_find_str(&c->params, key) != NULL;
}

FlProgram *fl_ev_program_copy(Ctx *c, const FlProgram *p) {
    FlProgram *q = fl_ir_program_clone(p);
    FL_VEC_PUSH(&c->programs, q);
    const FlBlock *g = fl_ir_block(p, 0);
    for (size_t i = 0; i < g->vars.len; i++) {
        const FlVarDesc *d = g->vars.data[i];
        const char *key = fl_arena_printf(&c->arena, "%p/%s", (const void *)p, d->name);
        FlSpan *first = fl_map_find_str(&c->params, key);
        if (first) fl_map_put_str(&c->params, fl_arena_printf(&c->arena, "%p/%s", (void *)q, d->name), first);
    }
    return q;
}

static FlValue *b_all_parameters(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("all_parameters", "", 0);
    (void)v;
    FlValue *prog = block_attr(self, "program");
    const FlBlock *b = block_of(self);
    FlValue *l = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < b->vars.len; i++)
        if (is_param(c, prog->prog, b->vars.data[i])) fl_v_list_push(c, l, var_of(c, prog, b->vars.data[i]->name));
    return l;
}

/* ------------------------------------------------------------------ Block.ops */

/* Operator (Fluid's framework.Operator, read-only): type, idx, input_names, output_names,
 * input_arg_names, output_arg_names, attr_names, input(slot), output(slot), attr(name),
 * has_attr(name), all_attrs(), block; a snapshot of the op when Block.ops was read. */

static FlValue *str_list(Ctx *c, char *const *s, size_t n) {
    FlValue *l = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < n; i++) fl_v_list_push(c, l, fl_v_cstr(c, s[i]));
    return l;
}

static FlValue *attr_value(Ctx *c, FlValue *prog, const FlAttr *at) {
    FlValue *l;
    switch (at->type) {
    case FL_ATTR_INT: return fl_v_int(c, at->i);
    case FL_ATTR_FLOAT: return fl_v_float(c, at->f);
    case FL_ATTR_STRING: return fl_v_cstr(c, at->s);
    case FL_ATTR_BOOL: return fl_v_bool(c, at->i != 0);
    case FL_ATTR_INTS:
        l = fl_v_list(c, VK_LIST);
        for (size_t i = 0; i < at->n; i++) fl_v_list_push(c, l, fl_v_int(c, at->ints[i]));
        return l;
    case FL_ATTR_FLOATS:
        l = fl_v_list(c, VK_LIST);
        for (size_t i = 0; i < at->n; i++) fl_v_list_push(c, l, fl_v_float(c, at->floats[i]));
        return l;
    case FL_ATTR_STRINGS: return str_list(c, at->strs, at->n);
    case FL_ATTR_BLOCK: return fl_ev_block_record(c, prog, (int)at->i);
    case FL_ATTR_BLOCKS:
        l = fl_v_list(c, VK_LIST);
        for (size_t i = 0; i < at->n; i++) fl_v_list_push(c, l, fl_ev_block_record(c, prog, (int)at->ints[i]));
        return l;
    case FL_ATTR_TYPE_COUNT: break;
    }
    FL_UNREACHABLE();
}

/* The entry `key` of the op's private dict `dict` ("_inputs", "_outputs", "_attrs"). */
static FlValue *op_lookup(Ctx *c, FlValue *self, CallArgs *a, const char *fn, const char *dict, bool must) {
    ARGS(fn, "name", 1);
    if (!fl_ev_want_str(c, v[0], "name", a->span)) return c->error;
    FlValue *r = fl_v_dict_get(block_attr(self, dict), v[0]);
    if (!r && must)
        return fl_ev_error(c, a->span, "%s('%s'): op '%s' has no such %s", fn, v[0]->str.s,
                           block_attr(self, "type")->str.s, strcmp(dict, "_attrs") == 0 ? "attribute" : "slot");
    return r ? r : fl_v_list(c, VK_LIST);
}
static FlValue *o_input(Ctx *c, FlValue *self, CallArgs *a) { return op_lookup(c, self, a, "input", "_inputs", true); }
static FlValue *o_output(Ctx *c, FlValue *self, CallArgs *a) { return op_lookup(c, self, a, "output", "_outputs", true); }
static FlValue *o_attr(Ctx *c, FlValue *self, CallArgs *a) { return op_lookup(c, self, a, "attr", "_attrs", true); }
static FlValue *o_has_attr(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("has_attr", "name", 1);
    if (!fl_ev_want_str(c, v[0], "name", a->span)) return c->error;
    return fl_v_bool(c, fl_v_dict_get(block_attr(self, "_attrs"), v[0]) != NULL);
}
static FlValue *o_all_attrs(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("all_attrs", "", 0);
    (void)v;
    return block_attr(self, "_attrs");
}

/* One slot list: the names of the slots that have args, the dict slot -> args, every arg. */
static void op_slots(Ctx *c, FlValue *r, const char *what, const FlSlot *slots, size_t n) {
    FlValue *names = fl_v_list(c, VK_LIST), *dict = fl_v_dict(c), *args = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < n; i++) {
        fl_v_list_push(c, names, fl_v_cstr(c, slots[i].name));
        fl_v_dict_set(c, dict, fl_v_cstr(c, slots[i].name), str_list(c, slots[i].args, slots[i].nargs));
        for (size_t k = 0; k < slots[i].nargs; k++) fl_v_list_push(c, args, fl_v_cstr(c, slots[i].args[k]));
    }
    fl_v_rec_set(c, r, fl_arena_printf(&c->arena, "%s_names", what), names);
    fl_v_rec_set(c, r, fl_arena_printf(&c->arena, "_%ss", what), dict);
    fl_v_rec_set(c, r, fl_arena_printf(&c->arena, "%s_arg_names", what), args);
}

static FlValue *op_record(Ctx *c, FlValue *prog, FlValue *block, const FlOpDesc *op, size_t idx) {
    FlValue *r = fl_v_record(c, "Operator");
    fl_v_rec_set(c, r, "type", fl_v_cstr(c, op->type));
    fl_v_rec_set(c, r, "idx", fl_v_int(c, (int64_t)idx));
    fl_v_rec_set(c, r, "block", block);
    op_slots(c, r, "input", op->ins.data, op->ins.len);
    op_slots(c, r, "output", op->outs.data, op->outs.len);
    FlValue *attrs = fl_v_dict(c), *names = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < op->attrs.len; i++) {
        fl_v_list_push(c, names, fl_v_cstr(c, op->attrs.data[i].name));
        fl_v_dict_set(c, attrs, fl_v_cstr(c, op->attrs.data[i].name), attr_value(c, prog, &op->attrs.data[i]));
    }
    fl_v_rec_set(c, r, "attr_names", names);
    fl_v_rec_set(c, r, "_attrs", attrs);
    fl_v_rec_set(c, r, "input", fl_v_builtin(c, "input", o_input, r));
    fl_v_rec_set(c, r, "output", fl_v_builtin(c, "output", o_output, r));
    fl_v_rec_set(c, r, "attr", fl_v_builtin(c, "attr", o_attr, r));
    fl_v_rec_set(c, r, "has_attr", fl_v_builtin(c, "has_attr", o_has_attr, r));
    fl_v_rec_set(c, r, "all_attrs", fl_v_builtin(c, "all_attrs", o_all_attrs, r));
    return r;
}

FlValue *fl_ev_block_record(Ctx *c, FlValue *prog, int idx) {
    const FlBlock *b = fl_ir_block(prog->prog, idx);
    FlValue *r = fl_v_record(c, "Block");
    fl_v_rec_set(c, r, "program", prog);
    fl_v_rec_set(c, r, "idx", fl_v_int(c, idx));
    fl_v_rec_set(c, r, "parent_idx", fl_v_int(c, b->parent));
    fl_v_rec_set(c, r, "var", fl_v_builtin(c, "var", b_var, r));
    fl_v_rec_set(c, r, "has_var", fl_v_builtin(c, "has_var", b_has_var, r));
    fl_v_rec_set(c, r, "create_var", fl_v_builtin(c, "create_var", b_create_var, r));
    fl_v_rec_set(c, r, "all_parameters", fl_v_builtin(c, "all_parameters", b_all_parameters, r));
    FlValue *vars = fl_v_dict(c);
    for (size_t i = 0; i < b->vars.len; i++)
        fl_v_dict_set(c, vars, fl_v_cstr(c, b->vars.data[i]->name), var_of(c, prog, b->vars.data[i]->name));
    fl_v_rec_set(c, r, "vars", vars);
    FlValue *ops = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < b->ops.len; i++) fl_v_list_push(c, ops, op_record(c, prog, r, b->ops.data[i], i));
    fl_v_rec_set(c, r, "ops", ops);
    return r;
}

FlValue *fl_ev_var_block(Ctx *c, FlValue *var) {
    FlValue *p = fl_v_new(c, VK_PROGRAM);
    p->prog = var->var.prog;
    return fl_ev_block_record(c, p, 0);
}

/* ------------------------------------------------------------------ Program methods */

static FlValue *p_global_block(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("global_block", "", 0);
    (void)v;
    return fl_ev_block_record(c, self, 0);
}

static FlValue *p_block(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("block", "index", 1);
    int64_t i;
    if (!fl_ev_want_int(c, v[0], "block index", a->span, &i)) return c->error;
    if (i < 0 || (size_t)i >= self->prog->blocks.len)
        return fl_ev_error(c, a->span, "block(%lld): the program has %zu blocks", (long long)i, self->prog->blocks.len);
    return fl_ev_block_record(c, self, (int)i);
}

/* current_block(): where layers go now when the program is being built, else its global block. */
static FlValue *p_current_block(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("current_block", "", 0);
    (void)v;
    return fl_ev_block_record(c, self, self->prog == c->b.main ? c->b.block->idx : 0);
}

/* list_vars(): every var of every block, block by block (Fluid's generator, as a list). */
static FlValue *p_list_vars(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("list_vars", "", 0);
    (void)v;
    FlValue *l = fl_v_list(c, VK_LIST);
    for (size_t bi = 0; bi < self->prog->blocks.len; bi++) {
        const FlBlock *b = self->prog->blocks.data[bi];
        for (size_t i = 0; i < b->vars.len; i++) fl_v_list_push(c, l, var_of(c, self, b->vars.data[i]->name));
    }
    return l;
}

/* to_string(throw_on_error, with_details=False): the program as `flc show` prints it. */
static FlValue *p_to_string(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("to_string", "throw_on_error with_details=", 2);
    if (v[0]->kind != VK_BOOL || (v[1] && v[1]->kind != VK_BOOL))
        return fl_ev_error(c, a->span, "to_string() takes throw_on_error and with_details, both bools");
    if (v[0]->b) { /* Fluid raises when a required field is missing: the IR's checks */
        FlErr e;
        if (fl_ir_validate_program(self->prog, c->bundle->source_paths.len, &e) != FL_OK)
            return fl_ev_error(c, a->span, "to_string(throw_on_error=True): %s", e.msg);
    }
    FlBuf b = {0};
    fl_ir_show_program(self->prog, "program", v[1] && v[1]->b ? c->bundle : NULL, &b);
    FlValue *r = fl_v_str(c, fl_buf_str(&b), b.len);
    fl_buf_free(&b);
    return r;
}

FlValue *fl_ev_program_attr(Ctx *c, FlValue *prog, const char *name) {
    if (strcmp(name, "global_block") == 0) return fl_v_builtin(c, "global_block", p_global_block, prog);
    if (strcmp(name, "block") == 0) return fl_v_builtin(c, "block", p_block, prog);
    if (strcmp(name, "current_block") == 0) return fl_v_builtin(c, "current_block", p_current_block, prog);
    if (strcmp(name, "list_vars") == 0) return fl_v_builtin(c, "list_vars", p_list_vars, prog);
    if (strcmp(name, "to_string") == 0) return fl_v_builtin(c, "to_string", p_to_string, prog);
    if (strcmp(name, "num_blocks") == 0) return fl_v_int(c, (int64_t)prog->prog->blocks.len);
    if (strcmp(name, "desc") == 0) return fl_ev_program_desc(c, prog); /* driver_file.c */
    return NULL;
}

/* ------------------------------------------------------------------ clone(for_test=True) */

static bool is_grad_name(const char *n) { return strstr(n, "@GRAD") != NULL; }

/* Whether op reads or writes a gradient, writes a persistable var of b, or reads a var in
 * tainted; its outputs are tainted when it is dropped. */
static bool drop_for_test(const FlBlock *b, const FlOpDesc *op, FlMap *tainted) {
    for (size_t s = 0; s < op->ins.len; s++)
        for (size_t k = 0; k < op->ins.data[s].nargs; k++) {
            const char *n = op->ins.data[s].args[k];
            if (is_grad_name(n) || fl_map_find_str(tainted, n)) return true;
        }
    for (size_t s = 0; s < op->outs.len; s++)
        for (size_t k = 0; k < op->outs.data[s].nargs; k++) {
            const char *n = op->outs.data[s].args[k];
            const FlVarDesc *d = fl_ir_var_find(b, n);
            if (is_grad_name(n) || (d && d->persistable)) return true;
        }
    return false;
}

bool fl_ev_program_for_test(Ctx *c, FlProgram *p, FlSpan sp) {
    FlBlock *b = fl_ir_block(p, 0);
    size_t first = b->ops.len;
    for (size_t i = 0; i < b->ops.len && first == b->ops.len; i++) {
        const FlOpDesc *op = b->ops.data[i];
        for (size_t s = 0; s < op->outs.len; s++)
            for (size_t k = 0; k < op->outs.data[s].nargs; k++)
                if (is_grad_name(op->outs.data[s].args[k])) first = i;
    }
    FlMap tainted;
    fl_map_init(&tainted);
    bool ok = true;
    for (size_t i = first; i < b->ops.len;) {
        FlOpDesc *op = b->ops.data[i];
        if (!drop_for_test(b, op, &tainted)) {
            i++;
            continue;
        }
        for (size_t k = 0; k < op->attrs.len; k++)
            if (op->attrs.data[k].type == FL_ATTR_BLOCK || op->attrs.data[k].type == FL_ATTR_BLOCKS) ok = false;
        if (!ok) {
            fl_ev_error(c, sp, "clone(for_test=True): the program's backward or optimizer has a sub-block (op '%s'); "
                        "clone it before minimize(), as Fluid's examples do", op->type);
            break;
        }
        for (size_t s = 0; s < op->outs.len; s++)
            for (size_t k = 0; k < op->outs.data[s].nargs; k++)
                fl_map_put_str(&tainted, op->outs.data[s].args[k], (void *)1);
        fl_ir_op_remove(b, i);
    }
    fl_map_fini(&tainted);
    if (!ok) return false;
    for (size_t i = b->vars.len; i-- > 0;)
        if (is_grad_name(b->vars.data[i]->name)) fl_ir_var_remove(b, b->vars.data[i]->name);
    for (size_t bi = 0; bi < p->blocks.len; bi++) {
        FlBlock *blk = p->blocks.data[bi];
        for (size_t j = 0; j < blk->ops.len; j++)
            if (fl_ir_op_attr(blk->ops.data[j], "is_test")) fl_ir_op_set_bool(blk->ops.data[j], "is_test", true);
    }
    return true;
}
