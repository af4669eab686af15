/* backward.c: append_backward (see backward.h for what it produces).
 *
 * Three linear passes over block 0 up to the last op that writes the loss:
 *   1. forward: a var "needs" a gradient if it is a chosen parameter, a data var whose
 *      stop_gradient the program cleared, or an output of an op with an input that needs one
 *      (FL_GRAD_STOP ops, a py_func without backward_func and stop_gradient vars break the chain);
 *   2. backward from the loss: an op is "relevant" if an input needs a gradient and an output
 *      reaches the loss; its inputs that need a gradient then reach the loss too. A relevant
 *      FL_GRAD_NONE op is the user's error, found before anything is appended;
 *   3. emission in reverse order. Each var first gets its number of partial gradients (one per
 *      use by a relevant op whose gradient op makes one), so the k-th partial gradient can be
 *      named at once (x@GRAD when there is one, x@GRAD@RENAME@k otherwise) and the `sum` is
 *      appended right after the last. Because the ops of block 0 are in dependency order, every
 *      use of x is differentiated before x's producer, which reads x@GRAD.
 * All per-var state lives in one map from var name to VarState (keys borrowed from the
 * program, whose strings do not move while ops are only appended).
 * A tensor array's gradient is one array var, "<array>@GRAD", declared beside the array: the
 * gradient ops of the reads add into its elements and those of the writes read them, in place,
 * so it is neither counted nor summed (a While writes an array again at every iteration).
 */
#include "compiler/backward.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/infer.h"
#include "compiler/ops.h"

typedef struct VarState {
    FlVarDesc *v; /* the block-0 var, NULL if undeclared */
    bool need;    /* depends on a parameter */
    bool reach;   /* the loss depends on it through relevant ops */
    bool zeroed;  /* x@GRAD made by fill_zeros_like */
    int total;    /* partial gradients to come */
    int done;     /* partial gradients made so far */
} VarState;

typedef struct Bw {
    FlProgram *p;
    FlBlock *fwd; /* the block whose ops are differentiated */
    FlBlock *b0;  /* the block the gradient ops go to (fwd, or a step block's gradient block) */
    FlErr *e;
    FlLoc *where;
    FlArena arena;
    FlMap vars; /* name -> VarState */
    FlBuf tmp;
    bool undo_incr; /* a While's block: each in-place increment is undone in reverse */
} Bw;

static VarState *state(Bw *w, const char *name) {
    VarState *s = fl_map_find_str(&w->vars, name);
    if (!s) {
        s = fl_arena_alloc(&w->arena, sizeof *s);
        s->v = fl_ir_var_lookup(w->p, w->b0, name);
        fl_map_put_str(&w->vars, name, s);
    }
    return s;
}

static bool is_float(FlDType t) { return t == FL_DT_FLOAT32 || t == FL_DT_FLOAT64; }

static bool is_array(const VarState *s) { return s->v && s->v->kind == FL_VAR_TENSOR_ARRAY; }

/* Whether input var `name` gets a gradient. */
static bool wanted(Bw *w, const char *name) {
    VarState *s = fl_map_find_str(&w->vars, name);
    return s && s->need && s->v && is_float(s->v->dtype) && !s->v->stop_gradient;
}

static const FlOpInfo *grad_info(const FlOpDesc *op) {
    char name[128];
    size_t n = strlen(op->type);
    if (n + sizeof "_grad" > sizeof name) return NULL; /* no op has so long a name */
    memcpy(name, op->type, n);
    memcpy(name + n, "_grad", sizeof "_grad");
    return fl_ops_find(name);
}

/* slot without its gradient suffix, in buf (cap bytes), or NULL when slot has no such suffix. */
static const char *strip_grad(char *buf, size_t cap, const char *slot) {
    size_t len = strlen(slot), sl = strlen(FL_GRAD_SUFFIX);
    if (len <= sl || strcmp(slot + len - sl, FL_GRAD_SUFFIX) != 0) return NULL;
    size_t n = len - sl < cap ? len - sl : cap - 1;
    memcpy(buf, slot, n);
    buf[n] = 0;
    return buf;
}

static FlStatus infer(Bw *w, FlOpDesc *op) {
    if (fl_infer_op(w->p, w->b0, op, w->e)) {
        if (w->where) *w->where = op->loc;
        return FL_ERROR;
    }
    return FL_OK;
}

static FlVarDesc *grad_var(Bw *w, const char *name, const FlVarDesc *fwd) {
    FlVarDesc *g = fl_ir_var_find(w->b0, name);
    if (!g) g = fl_ir_var_add(w->b0, name);
    fl_ir_var_copy(g, fwd);
    g->kind = fwd->kind == FL_VAR_TENSOR_ARRAY ? FL_VAR_TENSOR_ARRAY : FL_VAR_DENSE;
    g->persistable = g->trainable = g->stop_gradient = false;
    return g;
}

/* The gradient of array s: "<array>@GRAD", declared in the array's own block. */
static const char *array_grad(Bw *w, VarState *s) {
    char *g = fl_arena_printf(&w->arena, "%s" FL_GRAD_SUFFIX, s->v->name);
    FlBlock *b = w->b0;
    while (!fl_ir_var_find(b, s->v->name) && b->parent >= 0) b = fl_ir_block(w->p, b->parent);
    if (!fl_ir_var_find(b, g)) {
        FlBlock *keep = w->b0;
        w->b0 = b;
        grad_var(w, g, s->v);
        w->b0 = keep;
    }
    return g;
}

/* The name of the next partial gradient of var `name` (creating the var). */
static const char *next_grad(Bw *w, const char *name) {
    VarState *s = state(w, name);
    if (is_array(s)) return array_grad(w, s);
    FL_ASSERT(s->v && s->done < s->total);
    char *g = s->total == 1 ? fl_arena_printf(&w->arena, "%s" FL_GRAD_SUFFIX, name)
                            : fl_arena_printf(&w->arena, "%s" FL_GRAD_SUFFIX "@RENAME@%d", name,
                                              s->done);
    s->done++;
    grad_var(w, g, s->v);
    return g;
}

/* After an op made partial gradients: the `sum` of every var whose last one it made. */
static FlStatus sum_finished(Bw *w, const FlOpDesc *gop, FlLoc loc) {
    for (size_t i = 0; i < gop->outs.len; i++) {
        const FlSlot *sl = &gop->outs.data[i];
        for (size_t k = 0; k < sl->nargs; k++) {
            const char *g = sl->args[k];
            const char *r = strstr(g, FL_GRAD_SUFFIX "@RENAME@");
            if (!r) continue;
            char *name = fl_arena_strndup(&w->arena, g, (size_t)(r - g));
            VarState *s = state(w, name);
            int idx = atoi(r + strlen(FL_GRAD_SUFFIX "@RENAME@"));
            if (idx != s->total - 1) continue; /* not the last part */
            FlOpDesc *sum = fl_ir_op_append(w->b0, "sum");
            sum->loc = loc;
            for (int j = 0; j < s->total; j++) {
                w->tmp.len = 0;
                fl_buf_printf(&w->tmp, "%s" FL_GRAD_SUFFIX "@RENAME@%d", name, j);
                fl_ir_op_add_input(sum, "X", fl_buf_str(&w->tmp));
            }
            w->tmp.len = 0;
            fl_buf_printf(&w->tmp, "%s" FL_GRAD_SUFFIX, name);
            grad_var(w, fl_buf_str(&w->tmp), s->v);
            fl_ir_op_add_output(sum, "Out", fl_buf_str(&w->tmp));
            if (infer(w, sum)) return FL_ERROR;
        }
    }
    return FL_OK;
}

static void copy_attr(FlOpDesc *dst, const FlAttr *a) {
    switch (a->type) {
    case FL_ATTR_INT: fl_ir_op_set_int(dst, a->name, a->i); break;
    case FL_ATTR_FLOAT: fl_ir_op_set_float(dst, a->name, a->f); break;
    case FL_ATTR_STRING: fl_ir_op_set_string(dst, a->name, a->s); break;
    case FL_ATTR_BOOL: fl_ir_op_set_bool(dst, a->name, a->i != 0); break;
    case FL_ATTR_INTS: fl_ir_op_set_ints(dst, a->name, a->ints, a->n); break;
    case FL_ATTR_FLOATS: fl_ir_op_set_floats(dst, a->name, a->floats, a->n); break;
    case FL_ATTR_STRINGS:
        fl_ir_op_set_strings(dst, a->name, (const char *const *)a->strs, a->n);
        break;
    case FL_ATTR_BLOCK: fl_ir_op_set_block(dst, a->name, (int)a->i); break;
    case FL_ATTR_BLOCKS: fl_ir_op_set_blocks(dst, a->name, a->ints, a->n); break;
    case FL_ATTR_TYPE_COUNT: FL_UNREACHABLE();
    }
}

/* The gradient of each forward output in `fs`: its x@GRAD, made by fill_zeros_like when nothing
 * produced one. */
static FlStatus out_grads(Bw *w, const FlOpDesc *op, const FlSlot *fs, FlOpDesc **gop,
                          const char *slot) {
    for (size_t k = 0; k < fs->nargs; k++) {
        const char *x = fs->args[k];
        VarState *s = state(w, x);
        if (!s->v)
            return fl_err(w->e, "backward: %s writes undeclared var '%s'", op->type, x);
        if (is_array(s)) {
            fl_ir_op_add_input(*gop, slot, array_grad(w, s));
            continue;
        }
        if (s->total > 0 && s->done < s->total) {
            if (w->where) *w->where = op->loc;
            return fl_err(w->e, "backward: var '%s' is written by '%s' after it is used; "
                          "gradients need each var written once", x, op->type);
        }
        w->tmp.len = 0;
        fl_buf_printf(&w->tmp, "%s" FL_GRAD_SUFFIX, x);
        if (s->total == 0 && !s->zeroed) {
            s->zeroed = true;
            /* appended before the gradient op, which is moved after it below */
            FlOpDesc *z = fl_ir_op_insert(w->b0, w->b0->ops.len - 1, "fill_zeros_like");
            z->loc = op->loc;
            fl_ir_op_add_input(z, "X", x);
            grad_var(w, fl_buf_str(&w->tmp), s->v);
            fl_ir_op_add_output(z, "Out", fl_buf_str(&w->tmp));
            if (infer(w, z)) return FL_ERROR;
        }
        fl_ir_op_add_input(*gop, slot, fl_buf_str(&w->tmp));
    }
    return FL_OK;
}

typedef FlStatus (*SeedFn)(Bw *w, void *ctx);
static FlStatus diff(Bw *w, size_t end, SeedFn seed, void *ctx);

/* The seeds of a step block's gradient: the gradient of each seeded var x (a step output or a
 * state) starts as the var seeds[i], which dynamic_rnn_grad sets before each run. */
typedef struct StepSeeds {
    const FlOpDesc *op;
    FL_VEC(const char *) xs, seeds;
} StepSeeds;

static FlStatus seed_steps(Bw *w, void *ctx) {
    StepSeeds *ss = ctx;
    for (size_t i = 0; i < ss->xs.len; i++) {
        FlOpDesc *as = fl_ir_op_append(w->b0, "assign");
        as->loc = ss->op->loc;
        fl_ir_op_add_input(as, "X", ss->seeds.data[i]);
        fl_ir_op_add_output(as, "Out", next_grad(w, ss->xs.data[i]));
        if (infer(w, as) || sum_finished(w, as, ss->op->loc)) return FL_ERROR;
    }
    return FL_OK;
}

static const FlAttr *names_attr(const FlOpDesc *op, const char *name) {
    const FlAttr *a = fl_ir_op_attr(op, name);
    return a && a->type == FL_ATTR_STRINGS ? a : NULL;
}

/* The gradient of dynamic_rnn's step block (op), as the sub-block of its gradient op gop: a new
 * block of w->b0 that declares the step block's vars again (the runtime binds them to each
 * step's forward vars), differentiated w.r.t. the step inputs, static inputs, ex_states and the
 * outer vars the block reads (Params), from seeds for the step outputs and the states. */
static FlStatus rnn_grad_block(Bw *w, const FlOpDesc *op, FlOpDesc *gop) {
    const FlAttr *sb = fl_ir_op_attr(op, "sub_block");
    if (!sb || sb->type != FL_ATTR_BLOCK || sb->i <= 0 || (size_t)sb->i >= w->p->blocks.len)
        return fl_err(w->e, "backward: %s has no sub_block", op->type);
    FlBlock *fb = fl_ir_block(w->p, (int)sb->i);
    FlBlock *g = fl_ir_block_new(w->p, w->b0->idx);
    for (size_t i = 0; i < fb->vars.len; i++) fl_ir_var_copy(fl_ir_var_add(g, fb->vars.data[i]->name), fb->vars.data[i]);
    Bw sw = {.p = w->p, .fwd = fb, .b0 = g, .e = w->e, .where = w->where};
    fl_arena_init(&sw.arena);
    fl_map_init(&sw.vars);
    static const char *const wrt[] = {"step_inputs", "static_inputs", "ex_states"};
    for (size_t k = 0; k < FL_ARRAY_LEN(wrt); k++) {
        const FlAttr *a = names_attr(op, wrt[k]);
        for (size_t i = 0; a && i < a->n; i++) state(&sw, a->strs[i])->need = true;
    }
    const FlSlot *ps = fl_ir_op_input(op, "Params");
    for (size_t i = 0; ps && i < ps->nargs; i++) state(&sw, ps->args[i])->need = true;
    StepSeeds ss = {.op = op};
    static const char *const seeded[] = {"step_outputs", "states"};
    for (size_t k = 0; k < FL_ARRAY_LEN(seeded); k++) {
        const FlAttr *a = names_attr(op, seeded[k]);
        for (size_t i = 0; a && i < a->n; i++) {
            VarState *vs = state(&sw, a->strs[i]);
            char *seed = fl_arena_printf(&w->arena, "%s@SEED%zu", a->strs[i], ss.seeds.len);
            FL_VEC_PUSH(&ss.seeds, seed);
            if (!vs->v) {
                FL_VEC_FREE(&ss.xs);
                FL_VEC_FREE(&ss.seeds);
                fl_map_fini(&sw.vars);
                fl_arena_fini(&sw.arena);
                return fl_err(w->e, "backward: %s names undeclared var '%s'", op->type, a->strs[i]);
            }
            FlVarDesc *sd = fl_ir_var_add(g, seed);
            fl_ir_var_copy(sd, vs->v);
            sd->persistable = sd->trainable = sd->stop_gradient = false;
            FL_VEC_PUSH(&ss.xs, a->strs[i]);
            vs->reach = true;
            vs->total++;
        }
    }
    FlStatus st = diff(&sw, fb->ops.len, seed_steps, &ss);
    if (st == FL_OK) {
        fl_ir_op_set_block(gop, "sub_block", g->idx);
        fl_ir_op_set_strings(gop, "seeds", (const char *const *)ss.seeds.data, ss.seeds.len);
    }
    FL_VEC_FREE(&ss.xs);
    FL_VEC_FREE(&ss.seeds);
    fl_map_fini(&sw.vars);
    fl_arena_fini(&sw.arena);
    fl_buf_free(&sw.tmp);
    return st;
}

static FlStatus seed_none(Bw *w, void *ctx) {
    (void)w;
    (void)ctx;
    return FL_OK;
}

/* The gradient of a while op's block, as the sub-block of while_grad gop: a new block of w->b0
 * that declares the block's vars again (bound to each iteration's forward vars at run time) and
 * the dense vars the loop writes in place (set to their values after that iteration; the
 * counters are then decremented where the block incremented them), differentiated w.r.t. the
 * outer vars the block reads, from the gradients of the arrays it writes. The forward op gets
 * its StepScopes output. A float var the loop overwrites has one value per iteration that it
 * does not keep: refused. */
static FlStatus while_grad_block(Bw *w, FlOpDesc *op, FlOpDesc *gop) {
    const FlAttr *sb = fl_ir_op_attr(op, "sub_block");
    if (!sb || sb->type != FL_ATTR_BLOCK || sb->i <= 0 || (size_t)sb->i >= w->p->blocks.len)
        return fl_err(w->e, "backward: %s has no sub_block", op->type);
    if (w->fwd->idx != 0) {
        if (w->where) *w->where = op->loc;
        return fl_err(w->e, "cannot differentiate through 'while' inside another block "
                      "(a DynamicRNN, StaticRNN or While): 'while' in a block is not supported");
    }
    const FlSlot *outs = fl_ir_op_output(op, "Out"), *xs = fl_ir_op_input(op, "X");
    for (size_t k = 0; outs && k < outs->nargs; k++) {
        VarState *vs = state(w, outs->args[k]);
        if (is_array(vs) || !wanted(w, outs->args[k]) || !vs->reach) continue;
        if (w->where) *w->where = op->loc;
        return fl_err(w->e, "cannot differentiate through 'while': its block overwrites '%s' (%s), a var "
                      "from outside the loop, at every iteration; keep the values a loop carries in tensor "
                      "arrays (array_write, array_read)", outs->args[k], fl_dtype_name(vs->v->dtype));
    }
    FlBlock *fb = fl_ir_block(w->p, (int)sb->i);
    FlBlock *g = fl_ir_block_new(w->p, w->b0->idx);
    for (size_t i = 0; i < fb->vars.len; i++) fl_ir_var_copy(fl_ir_var_add(g, fb->vars.data[i]->name), fb->vars.data[i]);
    for (size_t k = 0; outs && k < outs->nargs; k++) { /* the dense vars written in place */
        VarState *vs = state(w, outs->args[k]);
        if (!vs->v || vs->v->kind != FL_VAR_DENSE || fl_ir_var_find(g, outs->args[k])) continue;
        FlVarDesc *c = fl_ir_var_add(g, outs->args[k]);
        fl_ir_var_copy(c, vs->v);
        c->persistable = c->trainable = false;
    }
    Bw sw = {.p = w->p, .fwd = fb, .b0 = g, .e = w->e, .where = w->where, .undo_incr = true};
    fl_arena_init(&sw.arena);
    fl_map_init(&sw.vars);
    for (size_t k = 0; xs && k < xs->nargs; k++) {
        VarState *vs = state(w, xs->args[k]);
        if (vs->need && vs->v && is_float(vs->v->dtype)) state(&sw, xs->args[k])->need = true;
    }
    for (size_t k = 0; outs && k < outs->nargs; k++) {
        VarState *vs = state(w, outs->args[k]);
        if (is_array(vs) && vs->need && vs->reach) state(&sw, outs->args[k])->reach = true;
    }
    FlStatus st = diff(&sw, fb->ops.len, seed_none, NULL);
    fl_map_fini(&sw.vars);
    fl_arena_fini(&sw.arena);
    fl_buf_free(&sw.tmp);
    if (st) return st;
    fl_ir_op_set_block(gop, "sub_block", g->idx);
    const char *ss = fl_ir_op_output1(op, "StepScopes"); /* a second append_backward: kept */
    if (!ss) {
        ss = fl_arena_printf(&w->arena, "while@%d.step_scopes", g->idx);
        FlVarDesc *sv = fl_ir_var_add(w->b0, ss);
        sv->kind = FL_VAR_RAW;
        sv->stop_gradient = true;
        fl_ir_op_add_output(op, "StepScopes", ss);
        fl_ir_op_add_input(gop, "StepScopes", ss);
    }
    return FL_OK;
}

/* In a While's gradient block: `increment` of the same var by -step, undoing the forward's. */
static bool undone_incr(const Bw *w, const FlOpDesc *op) {
    if (!w->undo_incr || !fl_ops_is(op, FL_OPID_increment)) return false;
    const char *x = fl_ir_op_input1(op, "X"), *o = fl_ir_op_output1(op, "Out");
    return x && o && strcmp(x, o) == 0;
}

static FlStatus emit_undo_incr(Bw *w, const FlOpDesc *op) {
    FlOpDesc *dec = fl_ir_op_append(w->b0, "increment");
    dec->loc = op->loc;
    const FlAttr *a = fl_ir_op_attr(op, "step");
    fl_ir_op_set_float(dec, "step", a && a->type == FL_ATTR_FLOAT ? -a->f : -1.0);
    fl_ir_op_add_input(dec, "X", fl_ir_op_input1(op, "X"));
    fl_ir_op_add_output(dec, "Out", fl_ir_op_output1(op, "Out"));
    return infer(w, dec);
}

static FlStatus emit_grad_op(Bw *w, const FlOpDesc *op, const FlOpInfo *gi) {
    if (undone_incr(w, op)) return emit_undo_incr(w, op);
    FlOpDesc *gop = fl_ir_op_append(w->b0, gi->name);
    gop->loc = op->loc;
    char base[128];
    for (int i = 0; i < gi->nins; i++) {
        const char *slot = gi->ins[i].name;
        if (strip_grad(base, sizeof base, slot)) {
            const FlSlot *fs = fl_ir_op_output(op, base);
            if (fs && fs->nargs && out_grads(w, op, fs, &gop, slot)) return FL_ERROR;
            continue;
        }
        const FlSlot *fs = fl_ir_op_input(op, slot);
        if (!fs) fs = fl_ir_op_output(op, slot);
        if (!fs) continue;
        fl_ir_op_add_input_slot(gop, slot);
        for (size_t k = 0; k < fs->nargs; k++) fl_ir_op_add_input(gop, slot, fs->args[k]);
    }
    for (int i = 0; i < gi->nouts; i++) {
        const char *slot = gi->outs[i].name;
        FL_ASSERT(strip_grad(base, sizeof base, slot));
        const FlSlot *fs = fl_ir_op_input(op, base);
        if (!fs) continue;
        bool any = false;
        for (size_t k = 0; k < fs->nargs; k++) any |= wanted(w, fs->args[k]);
        if (!any) continue;
        for (size_t k = 0; k < fs->nargs; k++) {
            if (wanted(w, fs->args[k])) fl_ir_op_add_output(gop, slot, next_grad(w, fs->args[k]));
            else if (gi->outs[i].list) fl_ir_op_add_output(gop, slot, FL_BACKWARD_EMPTY);
        }
    }
    for (size_t i = 0; i < op->attrs.len; i++) copy_attr(gop, &op->attrs.data[i]);
    if (fl_ops_is(op, FL_OPID_dynamic_rnn) && rnn_grad_block(w, op, gop)) return FL_ERROR;
    if (fl_ops_is(op, FL_OPID_while) && while_grad_block(w, (FlOpDesc *)op, gop)) return FL_ERROR;
    if (fl_ops_is(op, FL_OPID_py_func)) { /* py_func_grad runs the block compiled from backward_func */
        fl_ir_op_set_block(gop, "sub_block", (int)fl_ir_op_get_int(op, "backward_block", -1));
        fl_ir_op_set_int(gop, "backward_block", -1);
    }
    if (infer(w, gop)) return FL_ERROR;
    return sum_finished(w, gop, op->loc);
}

/* Counts the partial gradients the gradient op of op will make. */
static void count_grads(Bw *w, const FlOpDesc *op, const FlOpInfo *gi) {
    char base[128];
    if (undone_incr(w, op)) return;
    for (int i = 0; i < gi->nouts; i++) {
        if (!strip_grad(base, sizeof base, gi->outs[i].name)) continue;
        const FlSlot *fs = fl_ir_op_input(op, base);
        for (size_t k = 0; fs && k < fs->nargs; k++)
            if (wanted(w, fs->args[k]) && !is_array(state(w, fs->args[k]))) state(w, fs->args[k])->total++;
    }
}

static bool any_arg(Bw *w, const FlSlot *slots, size_t n, bool reach) {
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < slots[i].nargs; k++) {
            VarState *s = fl_map_find_str(&w->vars, slots[i].args[k]);
            if (s && (reach ? s->reach : s->need)) return true;
        }
    return false;
}

static FlStatus check_loss(Bw *w, const char *loss, FlVarDesc **lv) {
    FlVarDesc *v = *lv = fl_ir_var_find(w->b0, loss);
    if (!v) return fl_err(w->e, "backward: no var named '%s'", loss);
    if (!is_float(v->dtype) && w->where) *w->where = v->loc;
    if (!is_float(v->dtype))
        return fl_err(w->e, "backward from a non-float var '%s' (%s)", loss,
                      fl_dtype_name(v->dtype));
    for (int i = 0; i < v->ndim; i++) {
        if (v->shape[i] != 1) {
            FlBuf s = {0};
            fl_ir_shape_str(v->ndim, v->shape, &s);
            fl_err(w->e, "backward from '%s' of shape %s: the loss must have one element "
                   "(take its mean)", loss, fl_buf_str(&s));
            fl_buf_free(&s);
            if (w->where) *w->where = v->loc;
            return FL_ERROR;
        }
    }
    return FL_OK;
}

/* The gradient ops of w->fwd's ops [0, end), last first, into w->b0: from the vars marked
 * `reach` (the seeds, each with the number of seed gradients already in its `total`) back to the
 * vars marked `need`. seed(w, ctx) appends the seeds' ops once the partial gradients are
 * counted. */

/* Whether input var vs of op only steers it (a loop's counter, bound or condition, an array
 * index): no gradient flows back through it, so its producer (array_length, less_than...) need
 * not be differentiable. */
static bool steers(const FlOpDesc *op, const VarState *vs) {
    if (!vs->v || is_float(vs->v->dtype)) return false;
    return fl_ops_is(op, FL_OPID_while) || fl_ops_is(op, FL_OPID_read_from_array) ||
           fl_ops_is(op, FL_OPID_write_to_array);
}

/* In a While's gradient block, a var from outside the loop that the block overwrites holds
 * its value after the iteration (the counters: decremented where the block incremented them):
 * a relevant op (rel, the op indices) must not read one that an op at or after it overwrites
 * another way, whose value at the read is kept nowhere. */
static FlStatus check_carried(Bw *w, size_t end, const size_t *rel, size_t nrel) {
    FlBlock *fb = w->fwd;
    for (size_t j = 0; j < nrel; j++) {
        const FlOpDesc *op = fb->ops.data[rel[j]];
        if (undone_incr(w, op)) continue;
        for (size_t s = 0; s < op->ins.len; s++)
            for (size_t k = 0; k < op->ins.data[s].nargs; k++) {
                const char *x = op->ins.data[s].args[k];
                if (fl_ir_var_find(fb, x) || !fl_ir_var_find(w->b0, x)) continue; /* not carried */
                for (size_t q = rel[j]; q < end; q++) {
                    const FlOpDesc *wr = fb->ops.data[q];
                    if (undone_incr(w, wr)) continue;
                    for (size_t o = 0; o < wr->outs.len; o++)
                        for (size_t m = 0; m < wr->outs.data[o].nargs; m++) {
                            if (strcmp(wr->outs.data[o].args[m], x) != 0) continue;
                            if (w->where) *w->where = op->loc;
                            return fl_err(w->e, "cannot differentiate through 'while': '%s' reads '%s', which "
                                          "'%s' overwrites later in the loop's block, and its value at the read "
                                          "is not kept; update a counter with increment(in_place=True) and keep "
                                          "other values in tensor arrays", op->type, x, wr->type);
                        }
                }
            }
    }
    return FL_OK;
}

/* The op passes no gradient back and that is no error: FL_GRAD_STOP ops, and a py_func without
 * a backward_func (Fluid's: no gradient flows through it). */
static bool stops(const FlOpDesc *op, const FlOpInfo *info) {
    if (info && info->grad == FL_GRAD_STOP) return true;
    return fl_ops_is(op, FL_OPID_py_func) && fl_ir_op_get_int(op, "backward_block", -1) < 0;
}

static FlStatus diff(Bw *w, size_t end, SeedFn seed, void *ctx) {
    FlBlock *fb = w->fwd;
    /* 1. forward: what depends on a var that needs a gradient */
    bool *need_in = fl_xcalloc(end + 1, sizeof(bool));
    FL_VEC(size_t) rel = {0};
    FlStatus st = FL_ERROR;
    for (size_t i = 0; i < end; i++) {
        const FlOpDesc *op = fb->ops.data[i];
        const FlOpInfo *info = fl_ops_of(op);
        need_in[i] = any_arg(w, op->ins.data, op->ins.len, false);
        if (!need_in[i] || stops(op, info)) continue;
        for (size_t s = 0; s < op->outs.len; s++)
            for (size_t k = 0; k < op->outs.data[s].nargs; k++) {
                VarState *vs = state(w, op->outs.data[s].args[k]);
                if (!vs->v || !vs->v->stop_gradient) vs->need = true;
            }
    }
    /* 2. backward from the seeds: the relevant ops, last first */
    for (size_t i = end; i-- > 0;) {
        const FlOpDesc *op = fb->ops.data[i];
        const FlOpInfo *info = fl_ops_of(op);
        if (undone_incr(w, op)) {
            FL_VEC_PUSH(&rel, i);
            continue;
        }
        if (!need_in[i] || stops(op, info)) continue;
        if (!any_arg(w, op->outs.data, op->outs.len, true)) continue;
        if (!info || info->grad == FL_GRAD_NONE) {
            if (w->where) *w->where = op->loc;
            fl_err(w->e, "cannot differentiate through '%s' (%s)", op->type,
                   info ? "it has no gradient" : "unknown op");
            goto fail;
        }
        FL_VEC_PUSH(&rel, i);
        for (size_t s = 0; s < op->ins.len; s++)
            for (size_t k = 0; k < op->ins.data[s].nargs; k++) {
                VarState *vs = fl_map_find_str(&w->vars, op->ins.data[s].args[k]);
                if (vs && vs->need && !steers(op, vs)) vs->reach = true;
            }
    }
    if (w->undo_incr && check_carried(w, end, rel.data, rel.len)) goto fail;
    /* 3. emission */
    for (size_t j = 0; j < rel.len; j++) {
        const FlOpDesc *op = fb->ops.data[rel.data[j]];
        count_grads(w, op, grad_info(op));
    }
    if (seed(w, ctx)) goto fail;
    for (size_t j = 0; j < rel.len; j++) {
        const FlOpDesc *op = fb->ops.data[rel.data[j]];
        if (emit_grad_op(w, op, grad_info(op))) goto fail;
    }
    st = FL_OK;
fail:
    free(need_in);
    FL_VEC_FREE(&rel);
    return st;
}

/* The seed of append_backward: loss@GRAD = 1. */
static FlStatus seed_loss(Bw *w, void *ctx) {
    FlVarDesc *lv = ctx;
    FlOpDesc *fill = fl_ir_op_append(w->b0, "fill_constant");
    fill->loc = lv->loc;
    fl_ir_op_set_ints(fill, "shape", lv->shape, (size_t)lv->ndim);
    fl_ir_op_set_float(fill, "value", 1.0);
    fl_ir_op_set_int(fill, "dtype", lv->dtype);
    fl_ir_op_add_output(fill, "Out", next_grad(w, lv->name));
    if (lv->ndim == 0) {
        int64_t one = 1;
        fl_ir_op_set_ints(fill, "shape", &one, 1);
    }
    if (infer(w, fill) || sum_finished(w, fill, lv->loc)) return FL_ERROR;
    return FL_OK;
}

static FlStatus run(Bw *w, const char *loss, const char *const *params, size_t nparams,
                    FlBackwardResult *r) {
    FlBlock *b0 = w->b0;
    FlVarDesc *lv;
    if (check_loss(w, loss, &lv)) return FL_ERROR;
    size_t end = 0; /* one past the last op writing the loss */
    for (size_t i = 0; i < b0->ops.len; i++) {
        const FlOpDesc *op = b0->ops.data[i];
        for (size_t s = 0; s < op->outs.len; s++)
            for (size_t k = 0; k < op->outs.data[s].nargs; k++)
                if (strcmp(op->outs.data[s].args[k], loss) == 0) end = i + 1;
    }
    if (end == 0) return fl_err(w->e, "backward: no op computes the loss '%s'", loss);

    /* the parameters, in creation order */
    FL_VEC(FlVarDesc *) ps = {0};
    for (size_t i = 0; i < nparams; i++)
        if (!fl_ir_var_find(b0, params[i])) {
            FL_VEC_FREE(&ps);
            return fl_err(w->e, "backward: no parameter named '%s'", params[i]);
        }
    FlMap chosen;
    fl_map_init(&chosen);
    for (size_t i = 0; i < nparams; i++) fl_map_put_str(&chosen, params[i], (void *)params[i]);
    for (size_t i = 0; i < b0->vars.len; i++) {
        FlVarDesc *v = b0->vars.data[i];
        if (nparams ? fl_map_find_str(&chosen, v->name) != NULL : v->trainable) {
            FL_VEC_PUSH(&ps, v);
            state(w, v->name)->need = true;
        }
    }
    fl_map_fini(&chosen);
    /* a data var whose stop_gradient the program cleared gets its gradient too (Fluid's
     * `x.stop_gradient = False`), though no optimizer updates it */
    for (size_t i = 0; i < b0->vars.len; i++)
        if (b0->vars.data[i]->fed && !b0->vars.data[i]->stop_gradient) state(w, b0->vars.data[i]->name)->need = true;
    state(w, loss)->reach = true;
    state(w, loss)->total = 1; /* the fill_constant */
    FlStatus st = diff(w, end, seed_loss, lv);
    for (size_t i = 0; st == FL_OK && i < ps.len; i++) {
        VarState *vs = state(w, ps.data[i]->name);
        if (vs->total == 0) continue;
        FlParamGrad pg = {fl_xstrdup(ps.data[i]->name), NULL};
        w->tmp.len = 0;
        fl_buf_printf(&w->tmp, "%s" FL_GRAD_SUFFIX, pg.param);
        pg.grad = fl_xstrdup(fl_buf_str(&w->tmp));
        FL_VEC_PUSH(&r->pairs, pg);
    }
    FL_VEC_FREE(&ps);
    return st;
}

FlStatus fl_backward_append(FlProgram *p, const char *loss, const char *const *params,
                            size_t nparams, FlBackwardResult *r, FlErr *e, FlLoc *where) {
    Bw w = {.p = p, .fwd = fl_ir_block(p, 0), .b0 = fl_ir_block(p, 0), .e = e, .where = where};
    fl_arena_init(&w.arena);
    fl_map_init(&w.vars);
    FlStatus st = run(&w, loss, params, nparams, r);
    fl_map_fini(&w.vars);
    fl_arena_fini(&w.arena);
    fl_buf_free(&w.tmp);
    return st;
}

void fl_backward_result_fini(FlBackwardResult *r) {
    for (size_t i = 0; i < r->pairs.len; i++) {
        free(r->pairs.data[i].param);
        free(r->pairs.data[i].grad);
    }
    FL_VEC_FREE(&r->pairs);
}
