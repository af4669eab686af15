/* build.c: the op builder, where evaluation meets the IR.
 *
 * Errors and locations (a diagnostic at the user-level span; spans mapped to the IR's locs and
 * the bundle's source table), vars and ops in the current block (fl_ev_new_var, fl_ev_op_raw,
 * fl_ev_infer), fl_ev_op (an op from keyword-named slots and attributes, its output vars, shape
 * inference), arithmetic and comparisons with a Var operand (elementwise ops, `scale` for a
 * float Var and a number), and append_backward.
 *
 * Invariants: an op is appended to c->b.block and carries the loc of the user's line that made
 * it (fl_ev_user_span), even when a stdlib layer built it; an op that fails to build is removed
 * again, so the block never keeps a half-made op; numbers given where a Var is expected become
 * fill_constant vars of the dtype of the op's first input Var.
 */
#include "lang/eval_impl.h"

#include <stdlib.h>
#include <string.h>

#include "compiler/backward.h"
#include "compiler/ir/rules.h"
#include "compiler/infer.h"
#include "compiler/ops.h"

/* ------------------------------------------------------------------ errors and locations */

FlSpan fl_ev_user_span(Ctx *c, FlSpan sp) { return c->have_err_span ? c->err_span : sp; }

FlValue *fl_ev_error(Ctx *c, FlSpan sp, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    FlBuf msg = {0};
    fl_buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    fl_diag_error(&c->diag, fl_ev_user_span(c, sp), "%s", fl_buf_str(&msg));
    fl_buf_free(&msg);
    return c->error;
}

FlLoc fl_ev_loc(Ctx *c, FlSpan sp) {
    sp = fl_ev_user_span(c, sp);
    FlLoc loc = FL_LOC_NONE;
    const FlSourceFile *f = fl_sources_file(&c->sources, sp.file);
    if (!f) return loc;
    while (c->src_map.len <= sp.file) FL_VEC_PUSH(&c->src_map, -1);
    if (c->src_map.data[sp.file] < 0) {
        c->src_map.data[sp.file] = (int32_t)c->bundle->source_paths.len;
        FL_VEC_PUSH(&c->bundle->source_paths, fl_xstrdup(f->path));
    }
    int line, col, eline, ecol;
    fl_sources_linecol(&c->sources, sp.file, sp.start, &line, &col);
    fl_sources_linecol(&c->sources, sp.file, sp.end > sp.start ? sp.end - 1 : sp.start, &eline, &ecol);
    loc.file = c->src_map.data[sp.file];
    loc.line = line;
    loc.col = col;
    loc.len = eline == line ? ecol - col + 1 : 1;
    return loc;
}

/* ------------------------------------------------------------------ vars and ops */

FlVarDesc *fl_ev_var_desc(Ctx *c, FlValue *v) {
    if (v->kind != VK_VAR) return NULL;
    if (fl_ev_is_driver_var(c, v) && !fl_ev_in_driver(c)) /* from a program being built: the driver's own */
        return fl_ir_var_find(fl_ir_block(v->var.prog, 0), v->var.name);
    FlVarDesc *d = fl_ir_var_lookup(c->b.main, c->b.block, v->var.name);
    if (!d && v->var.prog != c->b.main) {
        /* a var of another program (program_guard): look in its global block */
        d = fl_ir_var_find(fl_ir_block(v->var.prog, 0), v->var.name);
    }
    return d;
}

bool fl_ev_is_channel(Ctx *c, FlValue *v) {
    FlVarDesc *d = fl_ev_var_desc(c, v);
    return d && d->kind == FL_VAR_CHANNEL;
}

/* A var of that name is visible in the current block or declared in block 0. */
static bool is_taken1(Ctx *c, const char *name) {
    return fl_ir_var_lookup(c->b.main, c->b.block, name) || fl_ir_var_find(fl_ir_block(c->b.main, 0), name);
}

/* A name is taken when a var of the program has it, or has it with the ".tmp_0" that op outputs
 * add (so that after unique_name.guard() restarts the counts, a new output does not land on an
 * old one of the same program). */
static bool is_taken(Ctx *c, const char *name) {
    return is_taken1(c, name) || is_taken1(c, fl_arena_printf(&c->arena, "%s.tmp_0", name));
}

/* The counts names come from now, and their prefix (may be NULL). */
static FlMap **cur_counts(Ctx *c, const char ***prefix) {
    if (c->unique_stack.len) {
        *prefix = &c->unique_prefix.data[c->unique_prefix.len - 1];
        return &c->unique_stack.data[c->unique_stack.len - 1];
    }
    if (!c->unique_base) c->unique_base = &c->unique;
    *prefix = &c->unique_base_prefix;
    return &c->unique_base;
}

const char *fl_ev_unique(Ctx *c, const char *prefix) {
    const char **pre;
    FlMap *m = *cur_counts(c, &pre);
    const char *key = fl_intern_str(&c->in, prefix);
    if (*pre && **pre) prefix = fl_arena_printf(&c->arena, "%s%s", *pre, prefix);
    int64_t *n = fl_map_find_str(m, key);
    if (!n) {
        n = fl_arena_alloc(&c->arena, sizeof *n);
        fl_map_put_str(m, key, n);
    }
    for (;;) {
        char *name = fl_arena_printf(&c->arena, "%s_%lld", prefix, (long long)(*n)++);
        if (!is_taken(c, name)) return fl_intern_str(&c->in, name);
    }
}

static FlMap *new_counts(Ctx *c) {
    FlMap *m = fl_arena_alloc(&c->arena, sizeof *m);
    fl_map_init(m);
    return m;
}

static int64_t gen_index(Ctx *c, FlMap *m) {
    for (size_t i = 0; i < c->unique_gens.len; i++)
        if (c->unique_gens.data[i] == m) return (int64_t)i;
    return -1;
}

void fl_ev_unique_push(Ctx *c, const char *prefix) {
    FL_VEC_PUSH(&c->unique_stack, new_counts(c));
    FL_VEC_PUSH(&c->unique_prefix, prefix ? prefix : "");
}

void fl_ev_unique_pop(Ctx *c) {
    FlMap *m = c->unique_stack.data[--c->unique_stack.len];
    c->unique_prefix.len--;
    if (gen_index(c, m) < 0) fl_map_fini(m); /* else a generator value holds it */
}

int64_t fl_ev_unique_switch(Ctx *c, int64_t to, const char *prefix) {
    const char **pre;
    FlMap **cur = cur_counts(c, &pre);
    int64_t old = gen_index(c, *cur);
    if (old < 0) {
        old = (int64_t)c->unique_gens.len;
        FL_VEC_PUSH(&c->unique_gens, *cur);
        FL_VEC_PUSH(&c->unique_gen_prefix, *pre ? *pre : "");
    }
    if (to < 0) {
        *cur = new_counts(c);
        *pre = prefix ? prefix : "";
    } else {
        *cur = c->unique_gens.data[to];
        *pre = c->unique_gen_prefix.data[to];
    }
    return old;
}

FlVarDesc *fl_ev_new_var(Ctx *c, FlBlock *b, const char *name, FlSpan sp) {
    FlVarDesc *d = fl_ir_var_add(b, name);
    if (!d) return NULL;
    d->loc = fl_ev_loc(c, sp);
    return d;
}

FlOpDesc *fl_ev_op_raw(Ctx *c, FlBlock *b, const char *type, FlSpan sp) {
    FlOpDesc *op = fl_ir_op_append(b, type);
    op->loc = fl_ev_loc(c, sp);
    return op;
}

bool fl_ev_infer(Ctx *c, FlBlock *b, FlOpDesc *op, FlSpan sp) {
    FlErr e;
    fl_ops_fill_defaults(op);
    if (fl_ops_check(op, &e) != FL_OK || fl_infer_op(c->b.main, b, op, &e) != FL_OK) {
        fl_ev_error(c, sp, "%s", e.msg);
        return false;
    }
    return true;
}

static bool dtype_from_value(Ctx *c, FlValue *v, FlDType *dt) {
    if (v->kind == VK_INT && v->i >= 0 && v->i < FL_DT_COUNT) {
        *dt = (FlDType)v->i;
        return true;
    }
    if (v->kind != VK_STR) return false;
    for (int t = 0; t < FL_DT_COUNT; t++)
        if (strcmp(v->str.s, fl_dtype_name((FlDType)t)) == 0) {
            *dt = (FlDType)t;
            return true;
        }
    return false;
}

void fl_ev_set_int_twin(Ctx *c, FlOpDesc *op, const char *attr, FlValue *v) {
    const FlOpInfo *info = fl_ops_of(op);
    const FlAttrInfo *twin = info ? fl_ops_int_twin(info, attr) : NULL;
    if (!twin) return;
    bool seq = fl_v_is_seq(v), need = false;
    size_t n = seq ? v->list.len : 1;
    FlValue *const *items = seq ? v->list.items : &v;
    for (size_t i = 0; i < n; i++) {
        if (items[i]->kind != VK_INT) return;
        need |= fl_ops_needs_int_twin(items[i]->i);
    }
    if (!need) return;
    int64_t *a = fl_arena_alloc(&c->arena, (n + 1) * sizeof *a);
    for (size_t i = 0; i < n; i++) a[i] = items[i]->i;
    fl_ir_op_set_ints(op, twin->name, a, n);
}

/* How an error names attribute n of op, for fl_ev_whole_int: it can only need it for a float, so
 * the text is made only then. */
static const char *attr_what(Ctx *c, const FlOpDesc *op, const char *n, const FlValue *v) {
    return v->kind == VK_FLOAT ? fl_arena_printf(&c->arena, "%s: attribute '%s'", op->type, n) : "";
}

/* Sets attribute `info` of op from a compile-time value; reports a type error. */
static bool set_attr(Ctx *c, FlOpDesc *op, const FlAttrInfo *info, FlValue *v, FlSpan sp) {
    const char *n = info->name;
    switch (info->type) {
    case FL_ATTR_INT:
        if (strstr(n, "dtype")) {
            FlDType dt;
            if (!dtype_from_value(c, v, &dt)) break;
            fl_ir_op_set_int(op, n, dt);
            return true;
        }
        {
            int64_t x;
            int w = fl_ev_whole_int(c, v, attr_what(c, op, n, v), sp, &x);
            if (w < 0) return false;
            if (w == 0) break;
            fl_ir_op_set_int(op, n, x);
            return true;
        }
    case FL_ATTR_FLOAT:
        if (!fl_v_is_num(v)) break;
        fl_ir_op_set_float(op, n, fl_v_num(v));
        fl_ev_set_int_twin(c, op, n, v);
        return true;
    case FL_ATTR_BOOL:
        if (v->kind != VK_BOOL && v->kind != VK_INT) break;
        fl_ir_op_set_bool(op, n, v->kind == VK_BOOL ? v->b : v->i != 0);
        return true;
    case FL_ATTR_STRING:
        if (v->kind != VK_STR) break;
        fl_ir_op_set_string(op, n, v->str.s);
        return true;
    case FL_ATTR_INTS: {
        int64_t x;
        if (v->kind == VK_INT || v->kind == VK_FLOAT) {
            int w = fl_ev_whole_int(c, v, attr_what(c, op, n, v), sp, &x);
            if (w < 0) return false;
            fl_ir_op_set_ints(op, n, &x, 1);
            return true;
        }
        if (!fl_v_is_seq(v)) break;
        int64_t *a = fl_arena_alloc(&c->arena, (v->list.len + 1) * sizeof *a);
        for (size_t i = 0; i < v->list.len; i++) {
            FlValue *it = v->list.items[i];
            if (it->kind != VK_INT && it->kind != VK_FLOAT) goto bad;
            if (fl_ev_whole_int(c, it, attr_what(c, op, n, it), sp, &a[i]) < 0) return false;
        }
        fl_ir_op_set_ints(op, n, a, v->list.len);
        return true;
    }
    case FL_ATTR_FLOATS: {
        if (!fl_v_is_seq(v)) break;
        double *a = fl_arena_alloc(&c->arena, (v->list.len + 1) * sizeof *a);
        for (size_t i = 0; i < v->list.len; i++) {
            if (!fl_v_is_num(v->list.items[i])) goto bad;
            a[i] = fl_v_num(v->list.items[i]);
        }
        fl_ir_op_set_floats(op, n, a, v->list.len);
        fl_ev_set_int_twin(c, op, n, v);
        return true;
    }
    case FL_ATTR_STRINGS: {
        if (!fl_v_is_seq(v)) break;
        const char **a = fl_arena_alloc(&c->arena, (v->list.len + 1) * sizeof *a);
        for (size_t i = 0; i < v->list.len; i++) {
            if (v->list.items[i]->kind != VK_STR) goto bad;
            a[i] = v->list.items[i]->str.s;
        }
        fl_ir_op_set_strings(op, n, a, v->list.len);
        return true;
    }
    case FL_ATTR_BLOCK:
        /* a sub-block of the current block, by index (the stdlib's control layers) */
        if (v->kind == VK_INT && v->i > 0 && (uint64_t)v->i < c->b.main->blocks.len &&
            fl_ir_block(c->b.main, (int)v->i)->parent == c->b.block->idx) {
            fl_ir_op_set_block(op, n, (int)v->i);
            return true;
        }
        break;
    case FL_ATTR_BLOCKS:
    case FL_ATTR_TYPE_COUNT: break;
    }
bad:;
    static const char *tn[] = {"an int", "a float", "a string", "a bool", "a list of ints",
                               "a list of floats", "a list of strings", "a block", "blocks"};
    fl_ev_error(c, sp, "%s: attribute '%s' must be %s, found %s", op->type, n,
                info->type < FL_ATTR_TYPE_COUNT ? tn[info->type] : "?", fl_v_type_name(v));
    return false;
}

FlValue *fl_ev_const_var(Ctx *c, FlValue *v, FlDType dt, FlSpan sp) {
    const char *name = fl_ev_unique(c, "fill_constant");
    name = fl_arena_printf(&c->arena, "%s.tmp_0", name);
    FlVarDesc *d = fl_ev_new_var(c, c->b.block, name, sp);
    d->stop_gradient = true;
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "fill_constant", sp);
    fl_ir_op_add_output(op, "Out", name);
    int64_t one = 1;
    fl_ir_op_set_ints(op, "shape", &one, 1);
    fl_ir_op_set_float(op, "value", fl_v_num(v));
    fl_ev_set_int_twin(c, op, "value", v);
    fl_ir_op_set_int(op, "dtype", dt);
    if (!fl_ev_infer(c, c->b.block, op, sp)) return c->error;
    return fl_v_var(c, name);
}

/* Adds the vars of value v (a Var or a list of Vars) to slot `slot` of op. Numbers become
 * constant vars of dtype dt. */
static bool add_slot_vars(Ctx *c, FlOpDesc *op, bool input, const FlSlotInfo *si, FlValue *v,
                          FlDType dt, FlSpan sp) {
    FlValue *one[1] = {v};
    FlValue **items = one;
    size_t n = 1;
    if (fl_v_is_seq(v)) {
        items = v->list.items;
        n = v->list.len;
        if (!si->list && n != 1) {
            fl_ev_error(c, sp, "%s: input '%s' takes one Var, found a %s of %zu", op->type,
                        si->name, fl_v_type_name(v), n);
            return false;
        }
    }
    if (input) fl_ir_op_add_input_slot(op, si->name);
    else fl_ir_op_add_output_slot(op, si->name);
    for (size_t i = 0; i < n; i++) {
        FlValue *x = items[i];
        if (x->kind == VK_ERROR) return false;
        if (input && fl_v_is_num(x)) x = fl_ev_const_var(c, x, dt, sp);
        if (x->kind == VK_ERROR) return false;
        if (x->kind != VK_VAR) {
            fl_ev_error(c, sp, "%s: '%s' must be a Var, found %s", op->type, si->name,
                        fl_v_type_name(x));
            return false;
        }
        if (!fl_ev_var_desc(c, x)) {
            fl_ev_error(c, sp, "%s: var '%s' is not visible here (it belongs to another block)",
                        op->type, x->var.name);
            return false;
        }
        if (input) fl_ir_op_add_input(op, si->name, x->var.name);
        else fl_ir_op_add_output(op, si->name, x->var.name);
    }
    return true;
}

/* The most vars fl_ev_op makes for one list output (split's num, _n_out): every one is a var of
 * the block, so a count from a typo (2**40) must fail before they are made. */
#define MAX_LIST_OUTPUTS 65536

/* An output naming a var that is also an input of the same op. The kernels allow it (an output
 * is replaced whole after the computation), but the gradient of a differentiable op needs its
 * input as it was, so only ops without a gradient (optimizers, increment, channel ops, the
 * quantize ops that stop it) and the state pairs named "<slot>Out" (batch_norm's MeanOut = Mean)
 * may update a var in place. */
static bool check_in_place(Ctx *c, const FlOpInfo *info, const FlOpDesc *op, FlSpan sp) {
    if (info->grad == FL_GRAD_NONE || info->grad == FL_GRAD_STOP) return true;
    for (size_t s = 0; s < op->outs.len; s++)
        for (size_t i = 0; i < op->outs.data[s].nargs; i++)
            for (size_t t = 0; t < op->ins.len; t++) {
                const FlSlot *in = &op->ins.data[t], *out = &op->outs.data[s];
                size_t n = strlen(in->name);
                if (strncmp(out->name, in->name, n) == 0 && strcmp(out->name + n, "Out") == 0) continue;
                for (size_t j = 0; j < in->nargs; j++)
                    if (strcmp(out->args[i], in->args[j]) == 0) {
                        fl_ev_error(c, sp, "%s: output '%s' is var '%s', which is also its input '%s'; %s "
                                           "cannot work in place (let it make a new var)",
                                    op->type, out->name, out->args[i], in->name, op->type);
                        return false;
                    }
            }
    return true;
}

/* The LoD rule of the op table (FL_OPF_LOD_KEEP / FL_OPF_LOD_ANY, docs/sequences.md): an op that
 * keeps rows gives its outputs the LoD of its first LoD input; an op that takes LoD makes outputs
 * without it (its layer sets theirs); any other op refuses a LoD input here, at compile time,
 * rather than mixing up sequences at run time. LoD inputs that an op combines row by row
 * (fl_ops_lod_pairs) and whose offsets are other vars must have as many levels: the run
 * compares their offsets. */
static bool apply_lod(Ctx *c, const FlOpInfo *info, FlOpDesc *op, FlSpan sp) {
    FlLodPairs pairs = {0};
    fl_ops_lod_pairs(c->b.main, c->b.block, op, &pairs);
    for (size_t i = 0; i < pairs.len; i++) {
        const FlLodPair *q = &pairs.data[i];
        if (q->var[0]->lod_level == q->var[1]->lod_level) continue;
        fl_ev_error(c, sp, "%s: its inputs %s '%s' (lod_level %d) and %s '%s' (lod_level %d) must be cut into the same "
                           "sequences, but they have different numbers of LoD levels",
                    op->type, q->slot[0], q->var[0]->name, q->var[0]->lod_level, q->slot[1], q->var[1]->name,
                    q->var[1]->lod_level);
        FL_VEC_FREE(&pairs);
        return false;
    }
    FL_VEC_FREE(&pairs);
    const FlVarDesc *from = NULL;
    const char *slot = NULL;
    for (size_t s = 0; s < op->ins.len && !from; s++)
        for (size_t i = 0; i < op->ins.data[s].nargs && !from; i++) {
            const FlVarDesc *d = fl_ir_var_lookup(c->b.main, c->b.block, op->ins.data[s].args[i]);
            if (d && d->lod_level > 0) from = d, slot = op->ins.data[s].name;
        }
    if (!from) return true;
    if (info->flags & FL_OPF_LOD_ANY) return true;
    if (!(info->flags & FL_OPF_LOD_KEEP)) {
        fl_ev_error(c, sp, "%s cannot take a LoD tensor: its input '%s' is '%s', which holds sequences (lod_level %d); "
                           "a sequence op (sequence_pool, sequence_last_step, ...) makes one row per sequence",
                    op->type, slot, from->name, from->lod_level);
        return false;
    }
    for (size_t s = 0; s < op->outs.len; s++)
        for (size_t i = 0; i < op->outs.data[s].nargs; i++) {
            FlVarDesc *d = fl_ir_var_lookup(c->b.main, c->b.block, op->outs.data[s].args[i]);
            if (d && d != from) fl_ir_var_set_lod(d, from->lod_level, (const char *const *)from->lod);
        }
    return true;
}

/* The base of an op's output names "<base>.tmp_<k>": fl_ev_unique vouches for the base alone,
 * and `with unique_name.guard():` restarts its counts, so an op of the same type made before the
 * guard may hold "<base>.tmp_0" already; its outputs are other vars than this op's. */
static const char *fresh_base(Ctx *c, const char *type) {
    for (;;) {
        const char *base = fl_ev_unique(c, type);
        if (!is_taken(c, fl_arena_printf(&c->arena, "%s.tmp_0", base))) return base;
    }
}

/* Whether an input of the op is a var of the driver (a fetched value, time.time()). */
static bool driver_inputs(Ctx *c, const FlOpInfo *info, CallArgs *a) {
    for (size_t k = 0; k < a->nkw; k++) {
        FlValue *v = a->kwvals[k];
        if (!fl_ops_in_slot(info, a->kwnames[k])) continue;
        if (fl_ev_is_driver_var(c, v)) return true;
        for (size_t i = 0; fl_v_is_seq(v) && i < v->list.len; i++)
            if (fl_ev_is_driver_var(c, v->list.items[i])) return true;
    }
    return false;
}

static FlValue *op_here(Ctx *c, const FlOpInfo *info, const char *type, CallArgs *a, FlSpan sp);

/* An op goes to the program its inputs belong to: one on driver vars to the driver
 * (docs/driver.md, "Which ops go where"). */
FlValue *fl_ev_op(Ctx *c, const char *type, CallArgs *a, FlSpan sp) {
    const FlOpInfo *info = fl_ops_find(type);
    if (!info || fl_ev_in_driver(c) || !driver_inputs(c, info, a)) return op_here(c, info, type, a, sp);
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    FlValue *r = op_here(c, info, type, a, sp);
    fl_ev_driver_leave(c, &s);
    return r;
}

static FlValue *op_here(Ctx *c, const FlOpInfo *info, const char *type, CallArgs *a, FlSpan sp) {
    if (!info) return fl_ev_error(c, sp, "unknown op '%s'", type);
    if (info->is_grad)
        return fl_ev_error(c, sp, "'%s' is a gradient op: append_backward makes those, with the gradient "
                                  "inputs they need; a program cannot build one", type);
    FlBlock *b = c->b.block;
    FlOpDesc *op = fl_ir_op_append(b, type);
    op->loc = fl_ev_loc(c, sp);
    size_t pos = b->ops.len - 1;
    FlValue *given_out[FL_OPS_MAX_SLOTS] = {0};
    int64_t n_out = -1;
    const char *named = NULL;
    FlDType dt = FL_DT_FLOAT32;
    /* the dtype numbers become: the first input var's dtype */
    for (size_t k = 0; k < a->nkw; k++) {
        FlValue *v = a->kwvals[k];
        if (fl_ops_in_slot(info, a->kwnames[k]) && v->kind == VK_VAR) {
            FlVarDesc *d = fl_ev_var_desc(c, v);
            if (d) dt = d->dtype;
            break;
        }
    }
    for (size_t k = 0; k < a->nkw; k++) {
        const char *kn = a->kwnames[k];
        FlValue *v = a->kwvals[k];
        if (v->kind == VK_ERROR) goto fail;
        const FlSlotInfo *si;
        const FlAttrInfo *ai;
        if (strcmp(kn, "_n_out") == 0 && v->kind == VK_INT) {
            n_out = v->i;
        } else if (strcmp(kn, "_name") == 0 && (v->kind == VK_STR || v->kind == VK_NONE)) {
            /* a layer's name=: its outputs are "<name>.tmp_<k>", as Fluid names them */
            if (v->kind == VK_STR) named = fl_arena_printf(&c->arena, "%s.tmp", v->str.s);
        } else if ((si = fl_ops_in_slot(info, kn))) {
            if (v->kind == VK_NONE) continue;
            if (!add_slot_vars(c, op, true, si, v, dt, sp)) goto fail;
        } else if ((si = fl_ops_out_slot(info, kn))) {
            given_out[si - info->outs] = v;
        } else if ((ai = fl_ops_attr(info, kn))) {
            if (v->kind == VK_NONE) continue;
            if (!set_attr(c, op, ai, v, sp)) goto fail;
        } else {
            fl_ev_error(c, sp, "op '%s' has no input, output or attribute '%s'", type, kn);
            goto fail;
        }
    }
    if (a->npos) {
        fl_ev_error(c, sp, "op '%s' takes keyword arguments only", type);
        goto fail;
    }
    /* outputs: given ones, else fresh vars */
    const char *base = NULL;
    int tmp = 0;
    FlValue *outs[FL_OPS_MAX_SLOTS] = {0};
    for (int s = 0; s < info->nouts; s++) {
        const FlSlotInfo *si = &info->outs[s];
        if (given_out[s]) {
            if (!add_slot_vars(c, op, false, si, given_out[s], dt, sp)) goto fail;
            outs[s] = given_out[s];
            continue;
        }
        if (si->optional) continue;
        if (!base) base = fresh_base(c, type);
        int64_t count = 1;
        if (si->list) {
            count = n_out;
            if (count < 0) {
                FlAttr *num = fl_ir_op_attr(op, "num");
                FlAttr *sec = fl_ir_op_attr(op, "sections");
                count = sec && sec->n ? (int64_t)sec->n : num ? num->i : 1;
            }
        }
        if (count < 1 || count > MAX_LIST_OUTPUTS) {
            fl_ev_error(c, sp, "%s: output '%s' would hold %lld vars; it takes 1 to %d", type, si->name,
                        (long long)count, MAX_LIST_OUTPUTS);
            goto fail;
        }
        FlValue *lst = si->list ? fl_v_list(c, VK_LIST) : NULL;
        fl_ir_op_add_output_slot(op, si->name);
        for (int64_t i = 0; i < count; i++) {
            const char *name;
            do name = named ? fl_ev_unique(c, named) : fl_arena_printf(&c->arena, "%s.tmp_%d", base, tmp++);
            while (is_taken(c, name));
            fl_ev_new_var(c, b, name, sp); /* a fresh name: is_taken said so */
            fl_ir_op_add_output(op, si->name, name);
            FlValue *vv = fl_v_var(c, name);
            if (lst) fl_v_list_push(c, lst, vv);
            else outs[s] = vv;
        }
        if (lst) outs[s] = lst;
    }
    if (!check_in_place(c, info, op, sp) || !fl_ev_infer(c, b, op, sp) || !apply_lod(c, info, op, sp)) goto fail;
    /* stop_gradient propagates: an op whose inputs all stop gradients makes outputs that do */
    bool all_stop = true, any_in = false;
    for (size_t s = 0; s < op->ins.len; s++)
        for (size_t i = 0; i < op->ins.data[s].nargs; i++) {
            FlVarDesc *d = fl_ir_var_lookup(c->b.main, b, op->ins.data[s].args[i]);
            any_in = true;
            if (d && !d->stop_gradient) all_stop = false;
        }
    if (any_in && all_stop && !(info->flags & FL_OPF_OPTIMIZE))
        for (size_t s = 0; s < op->outs.len; s++)
            for (size_t i = 0; i < op->outs.data[s].nargs; i++) {
                FlVarDesc *d = fl_ir_var_find(b, op->outs.data[s].args[i]);
                if (d && !d->persistable) d->stop_gradient = true;
            }
    if (info->nouts == 1) return outs[0] ? outs[0] : c->none;
    FlValue *t = fl_v_list(c, VK_TUPLE);
    for (int s = 0; s < info->nouts; s++)
        if (!info->outs[s].optional || outs[s]) fl_v_list_push(c, t, outs[s] ? outs[s] : c->none);
    return t;
fail:
    fl_ir_op_remove(b, pos);
    return c->error;
}

FlValue *fl_ev_op_exact(Ctx *c, const char *type, CallArgs *a, FlSpan sp) {
    const FlOpInfo *info = fl_ops_find(type);
    if (!info || info->is_grad) return fl_ev_error(c, sp, "unknown op '%s'", type);
    if (a->npos) return fl_ev_error(c, sp, "op '%s' takes keyword arguments only", type);
    FlBlock *b = c->b.block;
    FlOpDesc *op = fl_ev_op_raw(c, b, type, sp);
    size_t pos = b->ops.len - 1;
    bool given[FL_OPS_MAX_SLOTS] = {0};
    FlErr e;
    for (size_t k = 0; k < a->nkw; k++) {
        const char *kn = a->kwnames[k];
        FlValue *v = a->kwvals[k];
        const FlSlotInfo *si;
        const FlAttrInfo *ai;
        if (v->kind == VK_ERROR) goto fail;
        if ((si = fl_ops_in_slot(info, kn))) {
            if (!add_slot_vars(c, op, true, si, v, FL_DT_FLOAT32, sp)) goto fail;
        } else if ((si = fl_ops_out_slot(info, kn))) {
            if (!add_slot_vars(c, op, false, si, v, FL_DT_FLOAT32, sp)) goto fail;
            given[si - info->outs] = true;
        } else if ((ai = fl_ops_attr(info, kn))) {
            if (v->kind != VK_NONE && !set_attr(c, op, ai, v, sp)) goto fail;
        } else {
            fl_ev_error(c, sp, "op '%s' has no input, output or attribute '%s'", type, kn);
            goto fail;
        }
    }
    for (int s = 0; s < info->nouts; s++)
        if (!given[s] && !info->outs[s].optional) {
            fl_ev_error(c, sp, "%s: output '%s' must be given", type, info->outs[s].name);
            goto fail;
        }
    if (fl_ops_check(op, &e) != FL_OK) {
        fl_ev_error(c, sp, "%s", e.msg);
        goto fail;
    }
    return c->none;
fail:
    fl_ir_op_remove(b, pos);
    return c->error;
}

FlValue *fl_ev_op2(Ctx *c, const char *type, FlValue *x, FlValue *y, FlSpan sp) {
    const char *names[2] = {"X", "Y"};
    FlValue *vals[2] = {x, y};
    CallArgs a = {.kwnames = names, .kwvals = vals, .nkw = y ? 2 : 1, .span = sp};
    return fl_ev_op(c, type, &a, sp);
}

FlValue *fl_ev_scale(Ctx *c, FlValue *x, double scale, double bias, FlSpan sp) {
    const char *names[3] = {"X", "scale", "bias"};
    FlValue *vals[3] = {x, fl_v_float(c, scale), fl_v_float(c, bias)};
    CallArgs a = {.kwnames = names, .kwvals = vals, .nkw = 3, .span = sp};
    return fl_ev_op(c, "scale", &a, sp);
}

static const char *cmp_op_name(int op) {
    switch ((FlCmpOp)op) {
    case FL_CMP_EQ: return "equal";
    case FL_CMP_NE: return "not_equal";
    case FL_CMP_LT: return "less_than";
    case FL_CMP_LE: return "less_equal";
    case FL_CMP_GT: return "greater_than";
    case FL_CMP_GE: return "greater_equal";
    case FL_CMP_IN:
    case FL_CMP_NOT_IN:
    case FL_CMP_IS:
    case FL_CMP_IS_NOT:
    case FL_CMP_COUNT: break;
    }
    return NULL;
}

/* An arithmetic binary operation where at least one side is a Var. op >= 100 marks a
 * comparison (op - 100 is the FlCmpOp). */
static FlValue *binop_var_here(Ctx *c, int op, FlValue *l, FlValue *r, FlSpan sp);

/* A number, or a rank-0 Var (a Python number of the run: float(v), a loop's index, a counter). */
static bool scalar_operand(Ctx *c, FlValue *v) {
    if (fl_v_is_num(v)) return true;
    FlVarDesc *d = v->kind == VK_VAR ? fl_ev_var_desc(c, v) : NULL;
    return d && d->ndim == 0;
}

/* binop_var_here on the driver: two Python numbers of the run give one (rank 0, as `item`
 * makes), not the [1] tensor their constants' broadcast would. */
static FlValue *binop_var_driver(Ctx *c, int op, FlValue *l, FlValue *r, FlSpan sp) {
    bool scalar = scalar_operand(c, l) && scalar_operand(c, r);
    FlValue *v = binop_var_here(c, op, l, r, sp);
    FlVarDesc *d = scalar && v->kind == VK_VAR ? fl_ev_var_desc(c, v) : NULL;
    return d && d->ndim != 0 ? fl_ev_driver_item(c, v, d->dtype, sp) : v;
}

/* On driver vars (a fetched value, time.time()), the ops and their constants go to the driver. */
FlValue *fl_ev_binop_var(Ctx *c, int op, FlValue *l, FlValue *r, FlSpan sp) {
    if (fl_ev_in_driver(c)) return binop_var_driver(c, op, l, r, sp);
    if (!(fl_ev_is_driver_var(c, l) || fl_ev_is_driver_var(c, r))) return binop_var_here(c, op, l, r, sp);
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    FlValue *v = binop_var_driver(c, op, l, r, sp);
    fl_ev_driver_leave(c, &s);
    return v;
}

static bool is_int_dtype(FlDType dt) { return dt == FL_DT_INT32 || dt == FL_DT_INT64; }

/* numpy's kinds, in its promotion order: bool < int < float. */
static int dt_kind(FlDType t) { return t == FL_DT_BOOL ? 0 : is_int_dtype(t) ? 1 : 2; }

/* numpy.promote_types over fluidc's dtypes: the wider of one kind; an int with a float is float64,
 * which holds both (numpy's int32 or int64 with float32). */
static FlDType promote_types(FlDType a, FlDType b) {
    int ka = dt_kind(a), kb = dt_kind(b);
    if (a == b || kb == 0) return a;
    if (ka == 0) return b;
    if (ka == kb) return fl_dtype_size(a) >= fl_dtype_size(b) ? a : b;
    return FL_DT_FLOAT64;
}

static bool cast_var(Ctx *c, FlValue **v, FlDType from, FlDType to, FlSpan sp) {
    if (from == to) return true;
    const char *names[3] = {"X", "in_dtype", "out_dtype"};
    FlValue *vals[3] = {*v, fl_v_int(c, from), fl_v_int(c, to)};
    CallArgs a = {.kwnames = names, .kwvals = vals, .nkw = 3, .span = sp};
    *v = fl_ev_op(c, "cast", &a, sp);
    return (*v)->kind != VK_ERROR;
}

/* On the driver, two values of other dtypes are cast to the dtype numpy (1.x) gives their
 * operation: two arrays, or two numbers (rank 0: Python's and numpy's scalars), by
 * promote_types; an array and a number of a kind no higher than the array's take the array's
 * dtype (a float32 loss times a Python float stays float32), else promote_types. With
 * true_div, ints divide as float64 (Python's and numpy's `/`). false after an error. */
static bool promote_driver(Ctx *c, FlValue **l, FlValue **r, bool true_div, FlSpan sp) {
    FlVarDesc *ld = fl_ev_var_desc(c, *l), *rd = fl_ev_var_desc(c, *r);
    if (!ld || !rd || ld->kind != FL_VAR_DENSE || rd->kind != FL_VAR_DENSE) return true;
    FlDType a = ld->dtype, b = rd->dtype, to;
    if ((ld->ndim == 0) == (rd->ndim == 0)) {
        to = promote_types(a, b);
    } else {
        FlDType arr = ld->ndim == 0 ? b : a, num = ld->ndim == 0 ? a : b;
        to = dt_kind(num) > dt_kind(arr) ? promote_types(arr, num) : arr;
    }
    if (true_div && dt_kind(to) < 2) to = FL_DT_FLOAT64;
    return cast_var(c, l, a, to, sp) && cast_var(c, r, b, to, sp);
}

static FlValue *binop_var_here(Ctx *c, int op, FlValue *l, FlValue *r, FlSpan sp) {
    FlValue *var = l->kind == VK_VAR ? l : r;
    FlVarDesc *d = fl_ev_var_desc(c, var);
    if (!d) return fl_ev_error(c, sp, "var '%s' is not visible here", var->var.name);
    if (d->kind == FL_VAR_CHANNEL)
        return fl_ev_error(c, sp, "arithmetic on a channel ('%s')", var->var.name);
    bool is_float = d->dtype == FL_DT_FLOAT32 || d->dtype == FL_DT_FLOAT64;
    if (op >= 100) {
        const char *name = cmp_op_name(op - 100);
        if (!name) return fl_ev_error(c, sp, "this comparison is not defined on Vars");
        if (fl_v_is_num(l)) l = fl_ev_const_var(c, l, d->dtype, sp);
        if (fl_v_is_num(r)) r = fl_ev_const_var(c, r, d->dtype, sp);
        if (l->kind != VK_VAR || r->kind != VK_VAR)
            return l->kind == VK_ERROR || r->kind == VK_ERROR
                       ? c->error
                       : fl_ev_error(c, sp, "cannot compare a Var with %s",
                                     fl_v_type_name(l->kind == VK_VAR ? r : l));
        if (fl_ev_in_driver(c) && !promote_driver(c, &l, &r, false, sp)) return c->error;
        return fl_ev_op2(c, name, l, r, sp);
    }
    FlValue *other = var == l ? r : l;
    if (other->kind != VK_VAR && !fl_v_is_num(other))
        return fl_ev_error(c, sp, "unsupported operand types for arithmetic: %s and %s",
                           fl_v_type_name(l), fl_v_type_name(r));
    if (other->kind != VK_VAR && is_float) {
        double s = fl_v_num(other);
        bool var_left = var == l;
        switch ((FlBinOp)op) {
        case FL_OP_ADD: return fl_ev_scale(c, var, 1, s, sp);
        case FL_OP_SUB: return var_left ? fl_ev_scale(c, var, 1, -s, sp) : fl_ev_scale(c, var, -1, s, sp);
        case FL_OP_MUL: return fl_ev_scale(c, var, s, 0, sp);
        case FL_OP_DIV:
            if (var_left) {
                if (s == 0) return fl_ev_error(c, sp, "division by zero");
                return fl_ev_scale(c, var, 1.0 / s, 0, sp);
            }
            break;
        case FL_OP_FLOORDIV:
        case FL_OP_MOD:
        case FL_OP_MATMUL:
        case FL_OP_POW:
        case FL_BINOP_COUNT: break;
        }
    }
    /* a Python number: the var's dtype, but a float with an int var (numpy: float64) */
    FlDType kdt = fl_ev_in_driver(c) && !is_float && (l->kind == VK_FLOAT || r->kind == VK_FLOAT) ? FL_DT_FLOAT64 : d->dtype;
    if (fl_v_is_num(l)) l = fl_ev_const_var(c, l, kdt, sp);
    if (fl_v_is_num(r)) r = fl_ev_const_var(c, r, kdt, sp);
    if (l->kind == VK_ERROR || r->kind == VK_ERROR) return c->error;
    if (fl_ev_in_driver(c) && !promote_driver(c, &l, &r, op == FL_OP_DIV, sp)) return c->error;
    static const char *names[FL_BINOP_COUNT] = {
        [FL_OP_ADD] = "elementwise_add", [FL_OP_SUB] = "elementwise_sub",
        [FL_OP_MUL] = "elementwise_mul", [FL_OP_DIV] = "elementwise_div",
        [FL_OP_FLOORDIV] = "elementwise_floordiv", [FL_OP_MOD] = "elementwise_mod",
        [FL_OP_MATMUL] = "matmul", [FL_OP_POW] = "elementwise_pow"};
    return fl_ev_op2(c, names[op], l, r, sp);
}

/* ------------------------------------------------------------------ backward */

/* The span of a location an op or var carries (fl_ev_loc's inverse), for a note; false when it
 * has none or its file is not one of the compilation's sources. */
bool fl_ev_loc_span(Ctx *c, FlLoc loc, FlSpan *out) {
    if (loc.file < 0 || loc.line < 1 || loc.col < 1) return false;
    for (size_t i = 0; i < c->src_map.len; i++) {
        if (c->src_map.data[i] != loc.file) continue;
        const FlSourceFile *f = fl_sources_file(&c->sources, (uint32_t)i);
        if (!f || (size_t)loc.line > f->nlines) return false;
        size_t start = f->line_starts[loc.line - 1] + (size_t)loc.col - 1;
        if (start > f->len) return false;
        size_t end = start + (size_t)(loc.len > 0 ? loc.len : 1);
        *out = fl_span((uint32_t)i, (uint32_t)start, (uint32_t)(end > f->len ? f->len : end));
        return true;
    }
    return false;
}

/* Whether op writes var `name`. */
static bool op_writes(const FlOpDesc *op, const char *name) {
    for (size_t s = 0; s < op->outs.len; s++)
        for (size_t k = 0; k < op->outs.data[s].nargs; k++)
            if (strcmp(op->outs.data[s].args[k], name) == 0) return true;
    return false;
}

bool fl_ev_error_clips(Ctx *c, size_t from, FlSpan sp) {
    FlBlock *b0 = fl_ir_block(c->b.main, 0);
    for (size_t i = 0; i < b0->vars.len; i++) {
        FlVarDesc *d = b0->vars.data[i];
        FlValue *clip = fl_map_find_str(&c->error_clips, fl_arena_printf(&c->arena, "%p/%s", (void *)c->b.main, d->name));
        if (!clip) continue;
        const char *g = fl_rule_grad_name(&c->arena, d->name);
        size_t at = b0->ops.len;
        for (size_t k = from; k < b0->ops.len; k++)
            if (op_writes(b0->ops.data[k], g)) at = k;
        if (at == b0->ops.len) continue; /* no gradient reaches it */
        FlVarDesc *gd = fl_ir_var_find(b0, g);
        if (gd && gd->kind == FL_VAR_SELECTED_ROWS) {
            fl_ev_error(c, sp, "the error_clip of '%s' cannot clip its gradient, a SelectedRows (a sparse table's): "
                               "clip the parameter's gradient with ParamAttr(gradient_clip=...) instead", d->name);
            return false;
        }
        FlValue *lo = fl_map_find_str(&clip->rec.attrs->map, "min"), *hi = fl_map_find_str(&clip->rec.attrs->map, "max");
        FlOpDesc *op = fl_ir_op_insert(b0, at + 1, "clip");
        op->loc = b0->ops.data[at]->loc;
        fl_ir_op_add_input(op, "X", g);
        fl_ir_op_add_output(op, "Out", g);
        fl_ir_op_set_float(op, "min", fl_v_num(lo));
        fl_ir_op_set_float(op, "max", fl_v_num(hi));
    }
    return true;
}

FlValue *fl_ev_append_backward(Ctx *c, FlValue *loss, FlValue *param_list, FlSpan sp) {
    if (loss->kind != VK_VAR) return fl_ev_error(c, sp, "append_backward needs a Var loss, found %s", fl_v_type_name(loss));
    FlVarDesc *ld = fl_ev_var_desc(c, loss);
    if (!ld) return fl_ev_error(c, sp, "var '%s' is not visible here", loss->var.name);
    FL_VEC(const char *) params = {0};
    /* an empty parameter_list names no parameter (Fluid's append_backward: the gradient ops are
     * appended, and no (param, grad) pair is given, so minimize updates nothing) */
    bool none = param_list && fl_v_is_seq(param_list) && param_list->list.len == 0;
    if (param_list) {
        if (!fl_v_is_seq(param_list)) return fl_ev_error(c, sp, "parameter_list must be a list of Vars or names");
        for (size_t i = 0; i < param_list->list.len; i++) {
            FlValue *p = param_list->list.items[i];
            if (p->kind == VK_VAR) FL_VEC_PUSH(&params, p->var.name);
            else if (p->kind == VK_STR) FL_VEC_PUSH(&params, p->str.s);
            else {
                FL_VEC_FREE(&params);
                return fl_ev_error(c, sp, "parameter_list must be a list of Vars or names");
            }
        }
    }
    FlBackwardResult r = {0};
    FlErr err;
    FlLoc where = FL_LOC_NONE;
    FlStatus st = fl_backward_append(c->b.main, loss->var.name, params.data, params.len, &r, &err, &where);
    FL_VEC_FREE(&params);
    if (st != FL_OK) {
        fl_backward_result_fini(&r);
        fl_ev_error(c, sp, "%s", err.msg);
        FlSpan at;
        if (fl_ev_loc_span(c, where, &at)) fl_diag_note(&c->diag, at, "it is made here");
        return c->error;
    }
    FlValue *ps = fl_v_list(c, VK_LIST), *gs = fl_v_list(c, VK_LIST);
    for (size_t i = 0; !none && i < r.pairs.len; i++) {
        fl_v_list_push(c, ps, fl_v_var(c, r.pairs.data[i].param));
        fl_v_list_push(c, gs, fl_v_var(c, r.pairs.data[i].grad));
    }
    fl_backward_result_fini(&r);
    FlValue *t = fl_v_list(c, VK_TUPLE);
    fl_v_list_push(c, t, ps);
    fl_v_list_push(c, t, gs);
    return t;
}
