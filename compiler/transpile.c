/* transpile.c: the distribute transpiler (see transpile.h for what the plan holds).
 *
 * How: one pass over the local main program collects the parameters (one per optimizer op of
 * block 0, in program order) with their gradient and optimizer state, follows each gradient's
 * path to its optimizer op (clipping and regularization: see "the gradient's path"), and marks
 * the learning-rate ops; then the blocks are cut and placed; then each role is built from those
 * tables: the trainer program is a clone of the local main with ops removed, each gradient's
 * split/send ops inserted right after the last op that writes the gradient, and the barrier
 * and recv section inserted where the first optimizer op stood; a pserver program is built from
 * nothing (block 0: vars and listen_and_serv; sub-blocks: the lr block, then one optimize block
 * per parameter block); a pserver startup program is the slice of the local startup that
 * initialises what the server holds, followed by its blocks: made directly by the block's rows
 * of the init op (counter-based fills, shard_offset) where one fill makes the var, else cut from
 * the whole by split / assign ops.
 * Finally every program is inferred and verified.
 *
 * Invariants: a Piece's names are the names used on every role (trainers send and receive
 * them, servers hold them); a parameter with one piece keeps its own names. All strings made
 * here live in the Tp arena until the end of fl_transpile; the IR copies what it keeps.
 */
#include "compiler/transpile.h"

#include <stdlib.h>
#include <string.h>

#include "compiler/infer.h"
#include "compiler/ir/rules.h"
#include "compiler/ir/train_driver.h"
#include "compiler/ops.h"
#include "compiler/verify.h"

#define MAX_ROLES 4096 /* P and T each: far beyond what an MPI job on these machines holds */

typedef enum StateKind {
    ST_SLICE,     /* the parameter's shape: cut like it */
    ST_PER_BLOCK, /* other state the optimizer writes: one whole copy per block */
    ST_SHARED,    /* read only (LearningRate): one whole copy per server, own name */
} StateKind;

typedef struct State {
    const char *name; /* in the local program */
    StateKind kind;
    const FlVarDesc *var; /* local main block 0 */
} State;

typedef struct Piece {
    const char *param, *grad; /* names on every role */
    int64_t row0, rows;
    int64_t server;
} Piece;

typedef struct Param {
    const FlOpDesc *opt; /* the optimizer op in local main block 0 */
    const char *name, *grad;
    const FlVarDesc *var, *gvar;
    const char *raw;          /* the backward pass's gradient, <name>@GRAD, which the ops
                                 between it and the optimizer (clipping, regularization) read */
    size_t path0;             /* index of the first op on that path (SIZE_MAX: none) */
    const FlOpDesc *nonlinear; /* the first op on the path that is not affine in the gradient */
    size_t nonlinear_at;      /* its index */
    const char *proc;         /* (pserver plans, a path with clipping) the optimizer's Grad: the
                                 servers run the path on the merged raw gradient, grad = raw */
    FL_VEC(size_t) spath;     /* the ops of that path, in program order (indices into lb) */
    bool sliced;
    bool dist;                /* a distributed table (embedding(is_distributed=True)): its blocks
                                 stay on the pservers, the trainers look their rows up */
    bool decay_merged;        /* a regularized sparse table read by several lookups: its raw
                                 gradient is their merged sum (distinct rows), decayed once per
                                 distinct row of the global batch after the trainers' merge */
    FL_VEC(State) states;
    FL_VEC(Piece) pieces;
} Param;

typedef FL_VEC(int64_t) I64Vec;
typedef FL_VEC(const char *) StrVec;

static const char mark_;
#define MARK_PTR ((void *)&mark_)

typedef struct Tp {
    const FlBundle *local;
    const FlBlock *lb;        /* local main block 0 */
    int64_t P, T, minb;
    FlTranspileMode mode;
    FlTranspileDispatch dispatch;
    FlErr *e;
    FlArena arena;
    FL_VEC(Param) params;
    FlMap param_index;        /* parameter name -> Param index + 1 */
    bool *lr_op;              /* per op of lb */
    size_t nlr;               /* how many are set */
    FlMap lr_writes;          /* names that learning-rate ops write -> MARK_PTR */
    FlLoc first_loc;          /* the first optimizer op's loc */
    bool loss_sum;            /* sync and allreduce plans: the loss is a sum over the batch */
} Tp;

/* ---- names and messages ---- */

static const char *block_name(Tp *tp, const char *base, bool sliced, size_t k) {
    return sliced ? fl_rule_block_name(&tp->arena, base, (int64_t)k) : base;
}

static const char *trainer_name(Tp *tp, const char *grad, int64_t t) {
    return fl_rule_trainer_name(&tp->arena, grad, t);
}

/* "path:line:col: " for an op's loc, or "" when it has none. */
static const char *where(Tp *tp, FlLoc l) {
    if (l.file < 0 || (size_t)l.file >= tp->local->source_paths.len || l.line <= 0) return "";
    return fl_arena_printf(&tp->arena, "%s:%d:%d: ", tp->local->source_paths.data[l.file],
                           l.line, l.col);
}

static bool skip_arg(const char *n) { return fl_rule_is_empty(n); }

static unsigned op_flags(const FlOpDesc *op) { return fl_ops_flags(op); }

static bool is_optimize(const FlOpDesc *op) { return (op_flags(op) & FL_OPF_OPTIMIZE) != 0; }

static bool slot_has(const FlSlot *s, const char *name) {
    for (size_t k = 0; k < s->nargs; k++)
        if (strcmp(s->args[k], name) == 0) return true;
    return false;
}

static bool op_writes(const FlOpDesc *op, const char *name) {
    for (size_t s = 0; s < op->outs.len; s++)
        if (slot_has(&op->outs.data[s], name)) return true;
    return false;
}

/* Does op read name through its LearningRate slot only? */
static bool reads_only_lr(const FlOpDesc *op, const char *name) {
    for (size_t s = 0; s < op->ins.len; s++)
        if (strcmp(op->ins.data[s].name, "LearningRate") != 0 && slot_has(&op->ins.data[s], name))
            return false;
    return true;
}

/* Elements per row (dim 0) of v. */
static int64_t row_elems(const FlVarDesc *v) {
    int64_t n = 1;
    for (int d = 1; d < v->ndim; d++) n *= v->shape[d] > 0 ? v->shape[d] : 0;
    return n;
}

static bool same_shape(const FlVarDesc *a, const FlVarDesc *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

static const char *shape_str(Tp *tp, const FlVarDesc *v) {
    FlBuf b = {0};
    fl_ir_shape_str(v->ndim, v->shape, &b);
    const char *s = fl_arena_strdup(&tp->arena, fl_buf_str(&b));
    fl_buf_free(&b);
    return s;
}

/* ---- analysis of the local program ---- */

static FlStatus check_ops(Tp *tp) {
    const FlProgram *m = tp->local->main;
    for (size_t bi = 0; bi < m->blocks.len; bi++) {
        const FlBlock *b = m->blocks.data[bi];
        for (size_t i = 0; i < b->ops.len; i++) {
            const FlOpDesc *op = b->ops.data[i];
            if (!fl_ops_of(op))
                return fl_err(tp->e, "%sunknown op '%s'", where(tp, op->loc), op->type);
            unsigned f = op_flags(op);
            if (f & FL_OPF_DIST)
                return fl_err(tp->e,
                              "%sthe program already has distributed ops ('%s'); transpile "
                              "takes a single-machine program (a hand-written distributed "
                              "program runs as it is under mpirun)",
                              where(tp, op->loc), op->type);
            if ((f & FL_OPF_OPTIMIZE) && bi != 0)
                return fl_err(tp->e,
                              "%sthe optimizer op '%s' is inside a sub-block (block %zu); the "
                              "transpiler moves only optimizer ops of block 0",
                              where(tp, op->loc), op->type, bi);
        }
    }
    return FL_OK;
}

/* Block bi of the driver runs in a goroutine: it or an enclosing block is the body of a go or
 * parallel_for op. */
static bool in_goroutine(const FlProgram *d, int bi) {
    for (int depth = 0; bi > 0 && depth < 4096; depth++) {
        const FlBlock *parent = fl_ir_block(d, fl_ir_block(d, bi)->parent);
        for (size_t i = 0; i < parent->ops.len; i++) {
            const FlOpDesc *op = parent->ops.data[i];
            const FlAttr *sb = fl_ir_op_attr(op, "sub_block");
            if (sb && sb->i == bi && (fl_ops_is(op, FL_OPID_go) || fl_ops_is(op, FL_OPID_parallel_for))) return true;
        }
        bi = fl_ir_block(d, bi)->parent;
    }
    return false;
}

/* A trainer's runs of main are the job's steps, one after the other (the pservers number them):
 * the driver must not run main from goroutines. */
static FlStatus check_driver_steps(Tp *tp) {
    const FlProgram *d = tp->local->driver;
    for (size_t bi = 1; d && bi < d->blocks.len; bi++) {
        const FlBlock *b = d->blocks.data[bi];
        for (size_t i = 0; i < b->ops.len; i++) {
            const FlOpDesc *op = b->ops.data[i];
            const FlAttr *pa = fl_ops_is(op, FL_OPID_run_program) ? fl_ir_op_attr(op, "program") : NULL;
            if (pa && pa->s && !strcmp(pa->s, "main") && in_goroutine(d, (int)bi))
                return fl_err(tp->e,
                              "%sthe driver runs the main program in a thread (a goroutine); a trainer's runs of "
                              "main are the job's steps, one after the other: run it from the driver's own loop",
                              where(tp, op->loc));
        }
    }
    return FL_OK;
}

/* A bundle with a driver (docs/driver.md, "Plans: each role's driver"): the trainers keep the
 * driver, its named programs and its readers (role_bundle clones them), and their main is the
 * trainer program, so the driver's runs of main send and receive. A named program runs on the
 * trainer's scope as it is: one that trains (optimizer ops: a second model of its own) or talks
 * to other ranks would train apart from the job, and is refused. */
static FlStatus check_named_programs(Tp *tp) {
    for (size_t k = 0; k < tp->local->programs.len; k++) {
        const FlNamedProgram *np = &tp->local->programs.data[k];
        for (size_t bi = 0; bi < np->program->blocks.len; bi++) {
            const FlBlock *b = np->program->blocks.data[bi];
            for (size_t i = 0; i < b->ops.len; i++) {
                const FlOpDesc *op = b->ops.data[i];
                unsigned f = op_flags(op);
                if (f & (FL_OPF_OPTIMIZE | FL_OPF_DIST))
                    return fl_err(tp->e,
                                  "%sthe driver's program '%s' %s (op '%s'); a plan trains the main program "
                                  "alone: the trainers run the other programs of the driver as they are (a test "
                                  "clone), so make this one the main program or leave its optimizer out",
                                  where(tp, op->loc), np->name,
                                  (f & FL_OPF_OPTIMIZE) ? "trains" : "has distributed ops", op->type);
            }
        }
    }
    return check_driver_steps(tp);
}

static Param *param_find(Tp *tp, const char *name) {
    uintptr_t i = (uintptr_t)fl_map_find_str(&tp->param_index, name);
    return i ? &tp->params.data[i - 1] : NULL;
}

static FlStatus add_states(Tp *tp, Param *pr, FlMap *owner) {
    const FlOpDesc *op = pr->opt;
    for (size_t s = 0; s < op->ins.len; s++) {
        const FlSlot *sl = &op->ins.data[s];
        if (!strcmp(sl->name, "Param") || !strcmp(sl->name, "Grad")) continue;
        for (size_t k = 0; k < sl->nargs; k++) {
            const char *n = sl->args[k];
            if (skip_arg(n)) continue;
            const FlVarDesc *v = fl_ir_var_find(tp->lb, n);
            if (!v)
                return fl_err(tp->e, "%s%s: var '%s' (input %s) is not declared in block 0",
                              where(tp, op->loc), op->type, n, sl->name);
            bool written = op_writes(op, n);
            StateKind kind = ST_SHARED;
            if (strcmp(sl->name, "LearningRate") != 0) {
                if (same_shape(v, pr->var)) kind = ST_SLICE;
                else if (written) kind = ST_PER_BLOCK;
            }
            if (written) {
                const char *other = fl_map_find_str(owner, n);
                if (other && strcmp(other, pr->name) != 0)
                    return fl_err(tp->e,
                                  "%sthe optimizer state '%s' is updated for parameters '%s' "
                                  "and '%s'; the transpiler needs state of its own per "
                                  "parameter", where(tp, op->loc), n, other, pr->name);
                fl_map_put_str(owner, n, (void *)pr->name);
            }
            State st = {n, kind, v};
            FL_VEC_PUSH(&pr->states, st);
        }
    }
    return FL_OK;
}

/* One Param per optimizer op of block 0, in program order. */
static FlStatus collect_params(Tp *tp) {
    FlMap owner;
    fl_map_init(&owner);
    FlStatus st = FL_OK;
    for (size_t i = 0; i < tp->lb->ops.len && st == FL_OK; i++) {
        const FlOpDesc *op = tp->lb->ops.data[i];
        if (!is_optimize(op)) continue;
        if (tp->params.len == 0) tp->first_loc = op->loc;
        const char *pn = fl_ir_op_input1(op, "Param"), *gn = fl_ir_op_input1(op, "Grad");
        if (!pn || !gn) {
            st = fl_err(tp->e, "%s%s: the op has no %s", where(tp, op->loc), op->type,
                        pn ? "Grad" : "Param");
            break;
        }
        Param *dup = param_find(tp, pn);
        if (dup) {
            st = fl_err(tp->e, "%sthe parameter '%s' is updated by two optimizer ops ('%s' and "
                        "'%s')", where(tp, op->loc), pn, dup->opt->type, op->type);
            break;
        }
        const FlVarDesc *pv = fl_ir_var_find(tp->lb, pn), *gv = fl_ir_var_find(tp->lb, gn);
        if (!pv || !gv) {
            st = fl_err(tp->e, "%s%s: var '%s' is not declared in block 0", where(tp, op->loc),
                        op->type, pv ? gn : pn);
            break;
        }
        bool known = pv->ndim >= 1;
        for (int d = 0; d < pv->ndim; d++) known = known && pv->shape[d] > 0;
        if (!known) {
            st = fl_err(tp->e, "%sthe parameter '%s' has shape %s; the transpiler slices "
                        "parameters of known, non-empty shape", where(tp, op->loc), pn,
                        shape_str(tp, pv));
            break;
        }
        Param pr = {.opt = op, .name = pn, .grad = gn, .var = pv, .gvar = gv};
        FL_VEC_PUSH(&tp->params, pr);
        fl_map_put_str(&tp->param_index, pn, (void *)(uintptr_t)tp->params.len);
        st = add_states(tp, &tp->params.data[tp->params.len - 1], &owner);
    }
    fl_map_fini(&owner);
    if (st == FL_OK && tp->params.len == 0)
        st = fl_err(tp->e, "the program has no optimizer ops, so the pservers would have "
                    "nothing to update (call an optimizer's minimize(loss))");
    return st;
}

static bool is_fetched(Tp *tp, const char *name) {
    const FlRunSpec *r = &tp->local->run;
    for (size_t i = 0; i < r->fetch_vars.len; i++)
        if (strcmp(r->fetch_vars.data[i], name) == 0) return true;
    return false;
}

/* Maps every arg of the slots to val (keys borrowed from the slots). */
static void put_args_as(FlMap *m, const FlSlot *ss, size_t ns, void *val) {
    for (size_t s = 0; s < ns; s++)
        for (size_t k = 0; k < ss[s].nargs; k++)
            if (!skip_arg(ss[s].args[k])) fl_map_put_str(m, ss[s].args[k], val);
}

static void put_args(FlMap *m, const FlSlot *ss, size_t ns) { put_args_as(m, ss, ns, MARK_PTR); }

/* Who reads what in block 0: for var id v (names are numbered by `ids`, value = id + 1), the
 * readers are ops[start[v] .. start[v + 1]) (an op once per slot that reads it). */
typedef struct Readers {
    FlMap ids;
    size_t *start, *ops;
} Readers;

static void readers_init(Readers *r, const FlBlock *b) {
    fl_map_init(&r->ids);
    size_t nids = 0, npairs = 0;
    for (size_t i = 0; i < b->ops.len; i++) {
        const FlOpDesc *op = b->ops.data[i];
        for (size_t s = 0; s < op->ins.len; s++)
            for (size_t k = 0; k < op->ins.data[s].nargs; k++) {
                const char *n = op->ins.data[s].args[k];
                if (skip_arg(n)) continue;
                if (!fl_map_find_str(&r->ids, n))
                    fl_map_put_str(&r->ids, n, (void *)(uintptr_t)++nids);
                npairs++;
            }
    }
    r->start = fl_xcalloc(nids + 2, sizeof *r->start);
    r->ops = fl_xcalloc(npairs + 1, sizeof *r->ops);
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < b->ops.len; i++) {
            const FlOpDesc *op = b->ops.data[i];
            for (size_t s = 0; s < op->ins.len; s++)
                for (size_t k = 0; k < op->ins.data[s].nargs; k++) {
                    const char *n = op->ins.data[s].args[k];
                    if (skip_arg(n)) continue;
                    size_t id = (uintptr_t)fl_map_find_str(&r->ids, n) - 1;
                    if (pass == 0) r->start[id + 2]++;          /* counts, shifted */
                    else r->ops[r->start[id + 1]++] = i;        /* fill, then start[id] */
                }
        }
        if (pass == 0)
            for (size_t v = 2; v < nids + 2; v++) r->start[v] += r->start[v - 1];
    }
}

static void readers_fini(Readers *r) {
    fl_map_fini(&r->ids);
    free(r->start);
    free(r->ops);
}

/* An op of block 0 is a learning-rate op when each of its outputs is read, and read only by
 * optimizer ops (through LearningRate) and other learning-rate ops. The greatest such set is
 * found by starting from every candidate and dropping ops until nothing changes (an op that
 * reads its own output, like increment, stays if nothing else disqualifies it). Passes go from
 * the last op back, so that a program in order settles in one pass; each check walks the
 * readers of the op's outputs only. */
static FlStatus find_lr_ops(Tp *tp) {
    const FlBlock *b = tp->lb;
    const FlProgram *m = tp->local->main;
    size_t n = b->ops.len;
    FlMap outside; /* names read outside block 0 or fetched: the trainers need them */
    fl_map_init(&outside);
    for (size_t bi = 1; bi < m->blocks.len; bi++)
        for (size_t i = 0; i < m->blocks.data[bi]->ops.len; i++)
            put_args(&outside, m->blocks.data[bi]->ops.data[i]->ins.data,
                     m->blocks.data[bi]->ops.data[i]->ins.len);
    for (size_t i = 0; i < tp->local->run.fetch_vars.len; i++)
        fl_map_put_str(&outside, tp->local->run.fetch_vars.data[i], MARK_PTR);
    Readers rd;
    readers_init(&rd, b);
    tp->lr_op = fl_xcalloc(n ? n : 1, sizeof *tp->lr_op);
    for (size_t i = 0; i < n; i++) {
        const FlOpDesc *op = b->ops.data[i];
        unsigned f = op_flags(op);
        bool cand = !(f & (FL_OPF_OPTIMIZE | FL_OPF_SIDE_EFFECT | FL_OPF_CONTROL | FL_OPF_DIST));
        size_t nout = 0;
        for (size_t s = 0; s < op->outs.len; s++)
            for (size_t k = 0; k < op->outs.data[s].nargs; k++) {
                const char *v = op->outs.data[s].args[k];
                if (skip_arg(v)) continue;
                nout++;
                if (fl_map_find_str(&outside, v)) cand = false;
            }
        tp->lr_op[i] = cand && nout > 0;
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = n; i-- > 0;) {
            if (!tp->lr_op[i]) continue;
            const FlOpDesc *op = b->ops.data[i];
            bool ok = true;
            for (size_t s = 0; s < op->outs.len && ok; s++)
                for (size_t k = 0; k < op->outs.data[s].nargs && ok; k++) {
                    const char *v = op->outs.data[s].args[k];
                    if (skip_arg(v)) continue;
                    uintptr_t id = (uintptr_t)fl_map_find_str(&rd.ids, v);
                    bool used = false;
                    for (size_t r = id ? rd.start[id - 1] : 0; id && r < rd.start[id] && ok;
                         r++) {
                        size_t j = rd.ops[r];
                        if (j == i) continue;
                        used = true;
                        const FlOpDesc *c = b->ops.data[j];
                        ok = is_optimize(c) ? reads_only_lr(c, v) : tp->lr_op[j];
                    }
                    ok = ok && used;
                }
            if (!ok) {
                tp->lr_op[i] = false;
                changed = true;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        if (tp->lr_op[i]) {
            tp->nlr++;
            put_args(&tp->lr_writes, b->ops.data[i]->outs.data, b->ops.data[i]->outs.len);
        }
    readers_fini(&rd);
    fl_map_fini(&outside);
    return FL_OK;
}

/* Is name written by a learning-rate op (which the servers run)? */
static bool lr_written(Tp *tp, const char *name) {
    return fl_map_find_str(&tp->lr_writes, name) != NULL;
}

/* The servers can compute a var when the startup program initialises it (persistable) or a
 * learning-rate op writes it. */
static bool server_has(Tp *tp, const char *name) {
    const FlVarDesc *v = fl_ir_var_find(tp->lb, name);
    return (v && v->persistable) || lr_written(tp, name);
}

static FlStatus check_lr_inputs(Tp *tp) {
    for (size_t i = 0; i < tp->lb->ops.len; i++) {
        if (!tp->lr_op[i]) continue;
        const FlOpDesc *op = tp->lb->ops.data[i];
        for (size_t s = 0; s < op->ins.len; s++)
            for (size_t k = 0; k < op->ins.data[s].nargs; k++) {
                const char *n = op->ins.data[s].args[k];
                if (!skip_arg(n) && !server_has(tp, n))
                    return fl_err(tp->e,
                                  "%sthe learning-rate op '%s' reads '%s', which the trainers "
                                  "compute; the pservers cannot run it", where(tp, op->loc),
                                  op->type, n);
            }
    }
    for (size_t i = 0; i < tp->params.len; i++) {
        const Param *pr = &tp->params.data[i];
        for (size_t k = 0; k < pr->states.len; k++) {
            const State *st = &pr->states.data[k];
            if (!server_has(tp, st->name))
                return fl_err(tp->e,
                              "%s%s: '%s' is computed by the trainers' ops, but the pservers "
                              "need it to update '%s' (make it a persistable var or a "
                              "learning-rate computation)", where(tp, pr->opt->loc),
                              pr->opt->type, st->name, pr->name);
        }
    }
    return FL_OK;
}

/* ---- the loss: a mean or a sum over the batch ----
 * Sync and allreduce plans merge the trainers' gradients into the global batch's. When the loss
 * is a mean over the batch's rows, trainer t's gradient is a mean over its rows and weighs
 * rows_t / rows_global. When it is a sum over the rows (Fluid's Transformer minimizes sum_cost,
 * a reduce_sum of the tokens' costs), trainer t's gradient is its rows' part of the sum, and the
 * global batch's gradient is the plain sum of the trainers': the plan says so (loss_sum on
 * listen_and_serv and allreduce) and the runtime weighs every trainer 1 instead. The loss counts
 * as a sum when it is a reduce_sum whose summed dims include dim 0 of a var whose dim 0 is the
 * batch's (-1), a scale of such a sum, or sum / elementwise_add of such sums (a scale or an
 * added bias does not change how the trainers' gradients combine); any other loss (a mean, or a
 * sum divided by a count the batch gives) keeps the mean weighting, which is Fluid's (its
 * pservers always average). The loss is the var whose gradient the backward pass seeds: the
 * fill_constant of value 1 that writes 'loss@GRAD' after the ops that compute loss. */

static size_t writer_before(const FlBlock *b, const char *name, size_t before) {
    size_t w = before;
    while (w-- > 0)
        if (op_writes(b->ops.data[w], name)) return w;
    return SIZE_MAX;
}

static bool is_batch_sum(const FlBlock *b, const char *name, size_t before, int depth) {
    size_t w = writer_before(b, name, before);
    if (w == SIZE_MAX || depth > 32) return false;
    const FlOpDesc *op = b->ops.data[w];
    if (fl_ops_is(op, FL_OPID_reduce_sum)) {
        const FlSlot *x = op->ins.len ? &op->ins.data[0] : NULL;
        const FlVarDesc *v = x && x->nargs == 1 ? fl_ir_var_find(b, x->args[0]) : NULL;
        if (!v || v->ndim < 1 || v->shape[0] != -1) return false;
        /* the loss has one element (backward checks it): dims left unsummed are of size 1 */
        if (fl_ir_op_get_bool(op, "reduce_all", false)) return true;
        const FlAttr *dim = fl_ir_op_attr(op, "dim");
        for (size_t k = 0; dim && k < dim->n; k++)
            if (dim->ints[k] == 0 || dim->ints[k] == -v->ndim) return true;
        return false;
    }
    if (!fl_ops_is(op, FL_OPID_sum) && !fl_ops_is(op, FL_OPID_elementwise_add) && !fl_ops_is(op, FL_OPID_scale))
        return false;
    size_t n = 0;
    for (size_t sl = 0; sl < op->ins.len; sl++)
        for (size_t k = 0; k < op->ins.data[sl].nargs; k++, n++)
            if (!is_batch_sum(b, op->ins.data[sl].args[k], w, depth + 1)) return false;
    return n > 0;
}

static void find_loss_kind(Tp *tp) {
    if (tp->mode == FL_TRANSPILE_ASYNC) return; /* async applies each gradient as it is */
    const FlBlock *b = tp->lb;
    for (size_t i = 0; i < b->ops.len; i++) {
        const FlOpDesc *op = b->ops.data[i];
        if (!fl_ops_is(op, FL_OPID_fill_constant) || op->outs.len != 1 || op->outs.data[0].nargs != 1) continue;
        const char *g = op->outs.data[0].args[0];
        const FlAttr *v = fl_ir_op_attr(op, "value");
        if (!fl_rule_is_grad(g) || !v || v->f != 1.0) continue;
        char *loss = fl_arena_strndup(&tp->arena, g, strlen(g) - strlen(FL_RULE_GRAD_SUFFIX));
        if (writer_before(b, loss, i) == SIZE_MAX) continue;
        tp->loss_sum = is_batch_sum(b, loss, i, 0);
        return;
    }
}

/* ---- the gradient's path ----
 * minimize() leaves ops between the backward pass's gradient W@GRAD and the optimizer's Grad:
 * clipping, then regularization (fluid/clip.fl, fluid/regularizer.fl). The trainers run them on
 * their share of the batch, the servers then average: that equals the local gradient when each
 * op is affine in the gradient (sum, scale, add or subtract a term of the parameter, multiply or
 * divide by one), as regularization is, and not otherwise (clipping). A path with clipping is
 * therefore run by the servers on the merged raw gradient (Fluid's order: merge, clip,
 * regularize, update). Allreduce plans reduce the raw gradients before every path instead, so
 * every op on it sees the global batch. */

/* Does var `name`, as ops[0, before) leave it, depend on pr->raw? Marks the first op on the
 * path and the first non-affine one. */
static bool grad_dep(Tp *tp, Param *pr, const char *name, size_t before, int depth, size_t *budget) {
    if (strcmp(name, pr->raw) == 0) return true;
    /* the paths minimize() makes are short and read the gradient, the parameter and constants;
     * the budget stops a walk into the forward graph (which a path does not reach) from
     * multiplying over its shared vars */
    if (depth > 64 || *budget == 0) return false;
    --*budget;
    size_t w = before;
    while (w-- > 0)
        if (op_writes(tp->lb->ops.data[w], name)) break;
    if (w == SIZE_MAX) return false;
    const FlOpDesc *op = tp->lb->ops.data[w];
    int ndep = 0;
    bool dep_y = false;
    for (size_t sl = 0; sl < op->ins.len; sl++)
        for (size_t k = 0; k < op->ins.data[sl].nargs; k++) {
            const char *n = op->ins.data[sl].args[k];
            if (skip_arg(n) || !grad_dep(tp, pr, n, w, depth + 1, budget)) continue;
            ndep++;
            dep_y = dep_y || strcmp(op->ins.data[sl].name, "Y") == 0;
        }
    if (!ndep) return false;
    if (w < pr->path0) pr->path0 = w;
    bool affine = fl_ops_is(op, FL_OPID_sum) || fl_ops_is(op, FL_OPID_scale) ||
                  fl_ops_is(op, FL_OPID_assign) || fl_ops_is(op, FL_OPID_elementwise_add) ||
                  fl_ops_is(op, FL_OPID_elementwise_sub) ||
                  (fl_ops_is(op, FL_OPID_elementwise_mul) && ndep == 1) ||
                  (fl_ops_is(op, FL_OPID_elementwise_div) && !dep_y);
    if (!affine && (!pr->nonlinear || w < pr->nonlinear_at)) {
        pr->nonlinear = op;
        pr->nonlinear_at = w;
    }
    return true;
}

/* Marks in mark[] the ops of ops[0, before) that compute name from pr's raw gradient, the
 * parameter and constants: the ops the servers run for a path with clipping. Anything else
 * the path reads (another parameter's gradient: global-norm clipping; the trainers' data) is
 * an error. */
static FlStatus mark_server_path(Tp *tp, const Param *pr, const char *name, size_t before,
                                 const FlOpDesc *at, bool *mark, int depth) {
    if (!strcmp(name, pr->raw) || !strcmp(name, pr->name)) return FL_OK;
    size_t w = before;
    while (w-- > 0)
        if (op_writes(tp->lb->ops.data[w], name)) break;
    if (w == SIZE_MAX || fl_rule_has_grad(name) || depth > 64)
        return fl_err(tp->e,
                      "%sthe clipping of '%s' reads '%s'%s; the pservers, which clip each "
                      "parameter's merged gradient, cannot compute it: use --mode allreduce",
                      where(tp, at->loc), pr->name, name,
                      fl_rule_has_grad(name) ? ", another parameter's gradient (global-norm "
                                               "clipping needs every gradient)"
                                             : ", which the trainers compute");
    if (mark[w]) return FL_OK;
    mark[w] = true;
    const FlOpDesc *op = tp->lb->ops.data[w];
    for (size_t sl = 0; sl < op->ins.len; sl++)
        for (size_t k = 0; k < op->ins.data[sl].nargs; k++)
            if (!skip_arg(op->ins.data[sl].args[k]) &&
                mark_server_path(tp, pr, op->ins.data[sl].args[k], w, op, mark, depth + 1))
                return FL_ERROR;
    return FL_OK;
}

/* pr's sparse gradient goes to its optimizer through one sparse_decay (a regularizer of a table
 * read by embedding(is_sparse=True)) and nothing else: the servers decay each trainer's rows
 * (build_optimize_block), so that a row gets the decay once per lookup of the global batch. */
static bool sparse_decay_path(Tp *tp, const Param *pr) {
    const FlOpDesc *op = tp->lb->ops.data[pr->path0];
    const char *x = fl_ir_op_input1(op, "X"), *w = fl_ir_op_input1(op, "Param"), *o = fl_ir_op_output1(op, "Out");
    /* (once the servers run the path, pr->grad is the raw gradient and pr->proc the path's end) */
    return fl_ops_is(op, FL_OPID_sparse_decay) && x && w && o && !strcmp(x, pr->raw) && !strcmp(w, pr->name) &&
           !strcmp(o, pr->proc ? pr->proc : pr->grad);
}

static FlStatus find_grad_paths(Tp *tp) {
    bool *mark = fl_xcalloc(tp->lb->ops.len + 1, sizeof *mark);
    for (size_t i = 0; i < tp->params.len; i++) {
        Param *pr = &tp->params.data[i];
        pr->raw = fl_rule_grad_name(&tp->arena, pr->name);
        pr->path0 = SIZE_MAX;
        size_t opt = 0;
        while (tp->lb->ops.data[opt] != pr->opt) opt++;
        size_t budget = 100000;
        if (strcmp(pr->grad, pr->raw) != 0 && !grad_dep(tp, pr, pr->grad, opt, 0, &budget)) pr->raw = pr->grad;
        const FlVarDesc *rv = fl_ir_var_find(tp->lb, pr->raw);
        if (tp->mode != FL_TRANSPILE_ALLREDUCE && rv && rv->kind == FL_VAR_SELECTED_ROWS &&
            pr->path0 != SIZE_MAX && !sparse_decay_path(tp, pr)) {
            free(mark);
            return fl_err(tp->e,
                          "%sthe gradient of '%s' is a SelectedRows (is_sparse=True) processed by "
                          "'%s' (clipping or regularization) before its optimizer: a pserver plan "
                          "sends sparse gradients as they are (drop the processing, or use "
                          "--mode allreduce)",
                          where(tp, tp->lb->ops.data[pr->path0]->loc), pr->name,
                          tp->lb->ops.data[pr->path0]->type);
        }
        /* sparse_decay counts the rows of the gradient as its SelectedRows lists them: one
         * lookup's rows are the batch's ids, whose shares add up to the global batch's (each
         * trainer's rows decayed before the merge); the sum of several lookups' gradients merges
         * them (each distinct row once), so the plan decays the trainers' merged rows, each
         * distinct row of the global batch once, as locally (decay_merged) */
        if (tp->mode != FL_TRANSPILE_ASYNC && rv && rv->kind == FL_VAR_SELECTED_ROWS &&
            pr->path0 != SIZE_MAX && sparse_decay_path(tp, pr)) {
            size_t w = pr->path0;
            while (w-- > 0)
                if (op_writes(tp->lb->ops.data[w], pr->raw)) break;
            const char *wt = w != SIZE_MAX ? tp->lb->ops.data[w]->type : "";
            if (w != SIZE_MAX && fl_ops_is(tp->lb->ops.data[w], FL_OPID_sum)) pr->decay_merged = true;
            else if (strcmp(wt, "lookup_table_grad") != 0) {
                free(mark);
                return fl_err(tp->e,
                              "%sthe regularized sparse gradient of '%s' is written by '%s', neither a "
                              "lookup's gradient nor the sum of several: %s plan cannot count its rows "
                              "as the local run does (use is_sparse=False, or --mode async)",
                              where(tp, tp->lb->ops.data[pr->path0]->loc), pr->name, wt[0] ? wt : "no op",
                              tp->mode == FL_TRANSPILE_ALLREDUCE ? "an allreduce" : "a sync");
            }
        }
        /* an affine path stays on the trainers when the merge is a weighted mean (weights
         * that sum to 1 keep 'g + c * p' so); a merged sum would add the trainers' c * p up */
        bool on_servers = pr->nonlinear || (tp->loss_sum && pr->path0 != SIZE_MAX);
        if (!on_servers || tp->mode == FL_TRANSPILE_ALLREDUCE) continue;
        /* clipping: the servers run the path after merging the trainers' raw gradients */
        memset(mark, 0, (tp->lb->ops.len + 1) * sizeof *mark);
        if (mark_server_path(tp, pr, pr->grad, opt, pr->opt, mark, 0)) {
            free(mark);
            return FL_ERROR;
        }
        for (size_t w = 0; w < opt; w++)
            if (mark[w]) FL_VEC_PUSH(&pr->spath, w);
        pr->proc = pr->grad;
        pr->grad = pr->raw;
        pr->gvar = fl_ir_var_find(tp->lb, pr->raw);
        FL_ASSERT(pr->gvar);
    }
    free(mark);
    if (tp->mode != FL_TRANSPILE_ALLREDUCE) return FL_OK;
    /* allreduce reduces every raw gradient before the first path op: each must be final there */
    size_t first = SIZE_MAX;
    for (size_t i = 0; i < tp->params.len; i++)
        if (tp->params.data[i].path0 < first) first = tp->params.data[i].path0;
    for (size_t i = 0; first != SIZE_MAX && i < tp->params.len; i++)
        for (size_t w = first; w < tp->lb->ops.len; w++)
            if (op_writes(tp->lb->ops.data[w], tp->params.data[i].raw))
                return fl_err(tp->e,
                              "%s'%s' writes the gradient '%s' after ops that process other "
                              "gradients; an allreduce plan reduces every gradient at one place "
                              "(append the processing after the whole backward pass)",
                              where(tp, tp->lb->ops.data[w]->loc), tp->lb->ops.data[w]->type,
                              tp->params.data[i].raw);
    return FL_OK;
}

/* ---- distributed tables ----
 * A table read by lookup_table ops with is_distributed (embedding(is_distributed=True)) is
 * sharded over all the pservers and never sent whole: the trainers replace each lookup by a
 * distributed_lookup_table (the ids' rows asked from the blocks' servers) and the gradient's
 * lookup_table_grad by a distributed_lookup_grad_rows (no table needed), send the SelectedRows
 * gradient split by block as any sparse gradient, and receive nothing back; their startup does
 * not make the table or its row-shaped state; each pserver's startup makes only its rows. */

static FlStatus find_dist_tables(Tp *tp) {
    const FlProgram *m = tp->local->main;
    for (size_t bi = 0; bi < m->blocks.len; bi++)
        for (size_t i = 0; i < m->blocks.data[bi]->ops.len; i++) {
            const FlOpDesc *op = m->blocks.data[bi]->ops.data[i];
            if (!fl_ops_is(op, FL_OPID_lookup_table) || !fl_ir_op_get_bool(op, "is_distributed", false)) continue;
            const char *w = fl_ir_op_input1(op, "W");
            if (tp->mode == FL_TRANSPILE_ALLREDUCE)
                return fl_err(tp->e, "%sthe table '%s' is read with is_distributed=True, which shards it over the "
                              "pservers; an allreduce plan has none (use --mode sync or async, or is_distributed=False)",
                              where(tp, op->loc), w ? w : "");
            if (bi != 0)
                return fl_err(tp->e, "%sthe distributed table '%s' is read inside a sub-block (block %zu); a plan looks "
                              "distributed tables up in block 0 only", where(tp, op->loc), w ? w : "", bi);
            Param *pr = w ? param_find(tp, w) : NULL;
            if (!pr)
                return fl_err(tp->e, "%sthe table '%s' is read with is_distributed=True but no optimizer updates it "
                              "(a distributed table is a trainable parameter)", where(tp, op->loc), w ? w : "");
            if (!fl_ir_op_get_bool(op, "is_sparse", false) || pr->gvar->kind != FL_VAR_SELECTED_ROWS)
                return fl_err(tp->e, "%sthe distributed table '%s' needs is_sparse=True: its gradient travels as rows",
                              where(tp, op->loc), w);
            if (pr->var->ndim != 2)
                return fl_err(tp->e, "%sthe distributed table '%s' has shape %s; a table is [rows, width]",
                              where(tp, op->loc), w, shape_str(tp, pr->var));
            pr->dist = true;
        }
    /* every other reader of a distributed table would need it whole on the trainer */
    for (size_t i = 0; i < tp->lb->ops.len; i++) {
        const FlOpDesc *op = tp->lb->ops.data[i];
        if (is_optimize(op)) continue;
        bool lookup = fl_ops_is(op, FL_OPID_lookup_table), grad = !strcmp(op->type, "lookup_table_grad");
        for (size_t sl = 0; sl < op->ins.len; sl++)
            for (size_t k = 0; k < op->ins.data[sl].nargs; k++) {
                const Param *pr = param_find(tp, op->ins.data[sl].args[k]);
                if (!pr || !pr->dist) continue;
                bool w = !strcmp(op->ins.data[sl].name, "W");
                if (lookup && w && !fl_ir_op_get_bool(op, "is_distributed", false))
                    return fl_err(tp->e, "%sthe table '%s' is read by lookups with and without is_distributed=True "
                                  "(set it on every embedding of the table)", where(tp, op->loc), pr->name);
                if ((lookup || grad) && w) continue;
                /* its regularization: the servers decay the rows they receive (build_optimize_block) */
                if (pr->path0 == i && sparse_decay_path(tp, pr)) continue;
                return fl_err(tp->e, "%s'%s' reads the distributed table '%s' (input %s); a plan keeps the table on "
                              "the pservers, where only lookups can read it", where(tp, op->loc), op->type,
                              pr->name, op->ins.data[sl].name);
            }
    }
    return FL_OK;
}

/* ---- slicing and placement ---- */

/* A path the servers run block by block must be elementwise in the gradient: every var it
 * derives from the gradient is shaped like the parameter (a norm, [1], would be a block's). */
static FlStatus check_sliced_path(Tp *tp, const Param *pr, int64_t pieces, int64_t numel) {
    FlMap dep;
    fl_map_init(&dep);
    fl_map_put_str(&dep, pr->raw, MARK_PTR);
    FlStatus st = FL_OK;
    for (size_t j = 0; j < pr->spath.len && st == FL_OK; j++) {
        const FlOpDesc *op = tp->lb->ops.data[pr->spath.data[j]];
        bool d = false;
        for (size_t sl = 0; sl < op->ins.len; sl++)
            for (size_t k = 0; k < op->ins.data[sl].nargs; k++)
                d = d || fl_map_find_str(&dep, op->ins.data[sl].args[k]);
        if (!d) continue;
        for (size_t sl = 0; sl < op->outs.len && st == FL_OK; sl++)
            for (size_t k = 0; k < op->outs.data[sl].nargs && st == FL_OK; k++) {
                const char *n = op->outs.data[sl].args[k];
                const FlVarDesc *v = fl_ir_var_find(tp->lb, n);
                fl_map_put_str(&dep, n, MARK_PTR);
                if (v && !same_shape(v, pr->var))
                    st = fl_err(tp->e,
                                "%sthe clipping of '%s' computes '%s' %s from the whole "
                                "gradient (a norm), but the plan cuts the parameter into %lld "
                                "blocks: raise --min-block-size above %lld elements, or use "
                                "--mode allreduce", where(tp, op->loc), pr->name, n,
                                shape_str(tp, v), (long long)pieces,
                                (long long)numel);
            }
    }
    fl_map_fini(&dep);
    return st;
}

static FlStatus cut(Tp *tp) {
    int64_t next = 0; /* global block index */
    for (size_t i = 0; i < tp->params.len; i++) {
        Param *pr = &tp->params.data[i];
        int64_t dim0 = pr->var->shape[0], numel = 1;
        for (int d = 0; d < pr->var->ndim; d++)
            if (__builtin_mul_overflow(numel, pr->var->shape[d], &numel))
                return fl_err(tp->e, "%sthe parameter '%s' is too large (shape %s)",
                              where(tp, pr->opt->loc), pr->name, shape_str(tp, pr->var));
        /* a distributed table is spread over every server whatever its size */
        int64_t pieces = pr->dist ? (dim0 < tp->P ? dim0 : tp->P) : fl_rule_block_count(dim0, numel, tp->P, tp->minb);
        pr->sliced = pieces > 1;
        if (pr->sliced && pr->spath.len && check_sliced_path(tp, pr, pieces, numel)) return FL_ERROR;
        bool lamb = fl_ops_is(pr->opt, FL_OPID_lamb);
        if (pr->sliced && (lamb || fl_ops_is(pr->opt, FL_OPID_lars_momentum)))
            return fl_err(tp->e,
                          "%s%s scales '%s' by the norms of the whole parameter and %s, but the plan "
                          "cuts it into %lld blocks: raise --min-block-size above %lld elements, or "
                          "use --mode allreduce",
                          where(tp, pr->opt->loc), lamb ? "lamb" : "lars_momentum", pr->name,
                          lamb ? "its update" : "gradient", (long long)pieces, (long long)numel);
        for (int64_t k = 0; k < pieces; k++) {
            Piece pc = {.param = block_name(tp, pr->name, pr->sliced, (size_t)k),
                        .grad = block_name(tp, pr->grad, pr->sliced, (size_t)k),
                        .row0 = fl_rule_block_row0(dim0, pieces, k),
                        .rows = fl_rule_block_rows(dim0, pieces, k)};
            if (tp->dispatch == FL_TRANSPILE_HASH)
                pc.server = (int64_t)(fl_hash_bytes(pc.param, strlen(pc.param)) %
                                      (uint64_t)tp->P);
            else pc.server = next % tp->P;
            next++;
            FL_VEC_PUSH(&pr->pieces, pc);
        }
    }
    return FL_OK;
}

/* The name a var of the optimizer op has on block k of pr. */
static const char *state_block_name(Tp *tp, const Param *pr, const State *st, size_t k) {
    return st->kind == ST_SHARED ? st->name : block_name(tp, st->name, pr->sliced, k);
}

/* ---- building blocks ---- */

/* Declares name in b like `like` (shape[0] = rows when rows >= 0). NULL + e when the name is
 * taken. */
static FlVarDesc *declare(Tp *tp, FlBlock *b, const char *name, const FlVarDesc *like,
                          int64_t rows) {
    FlVarDesc *v = fl_ir_var_add(b, name);
    if (!v) {
        fl_err(tp->e, "the program already has a var named '%s', a name the transpiler needs",
               name);
        return NULL;
    }
    if (like) fl_ir_var_copy(v, like);
    if (rows >= 0) v->shape[0] = rows;
    return v;
}

/* Declares name in b like `like` unless b already has it. */
static FlVarDesc *ensure(FlBlock *b, const char *name, const FlVarDesc *like) {
    FlVarDesc *v = fl_ir_var_find(b, name);
    if (v) return v;
    v = fl_ir_var_add(b, name);
    if (like) fl_ir_var_copy(v, like);
    return v;
}

static void push_op(FlBlock *b, FlOpDesc *op) { FL_VEC_PUSH(&b->ops, op); }

/* op's outputs "Out" = outs, one per piece of pr, and its int list attribute `attr` the pieces'
 * rows (a split's sections, a split_selected_rows' height_sections). */
static void out_pieces(FlOpDesc *op, const Param *pr, const char *const *outs, const char *attr) {
    fl_ir_op_add_output_slot(op, "Out");
    int64_t *sec = fl_xmalloc(fl_mul_size(pr->pieces.len, sizeof *sec));
    for (size_t k = 0; k < pr->pieces.len; k++) {
        sec[k] = pr->pieces.data[k].rows;
        fl_ir_op_add_output(op, "Out", outs[k]);
    }
    fl_ir_op_set_ints(op, attr, sec, pr->pieces.len);
    free(sec);
}

/* A split of X along dim 0 into the given pieces; outputs not wanted are FL_RULE_EMPTY. */
static FlOpDesc *split_op(FlBlock *b, size_t *pos, const char *x, const Param *pr,
                          const char *const *outs, FlLoc loc) {
    FlOpDesc *op = pos ? fl_ir_op_insert(b, (*pos)++, "split") : fl_ir_op_append(b, "split");
    op->loc = loc;
    fl_ir_op_add_input(op, "X", x);
    out_pieces(op, pr, outs, "sections");
    fl_ir_op_set_int(op, "axis", 0);
    fl_ir_op_set_int(op, "num", 0);
    return op;
}

/* A split_selected_rows of the SelectedRows X into the pieces' row ranges (Fluid's sparse
 * gradient split: each block's rows, rebased to the block's first row). */
static FlOpDesc *split_rows_op(FlBlock *b, size_t *pos, const char *x, const Param *pr,
                               const char *const *outs, FlLoc loc) {
    FlOpDesc *op = fl_ir_op_insert(b, (*pos)++, "split_selected_rows");
    op->loc = loc;
    fl_ir_op_add_input(op, "X", x);
    out_pieces(op, pr, outs, "height_sections");
    return op;
}

static bool is_sparse_grad(const Param *pr) { return pr->gvar->kind == FL_VAR_SELECTED_ROWS; }

/* ---- trainer ---- */

static void note_names(FlMap *m, const FlOpDesc *op) {
    for (size_t s = 0; s < op->ins.len; s++)
        for (size_t k = 0; k < op->ins.data[s].nargs; k++)
            fl_map_put_str(m, op->ins.data[s].args[k], (void *)op->ins.data[s].args[k]);
    for (size_t s = 0; s < op->outs.len; s++)
        for (size_t k = 0; k < op->outs.data[s].nargs; k++)
            fl_map_put_str(m, op->outs.data[s].args[k], (void *)op->outs.data[s].args[k]);
}

/* Removes from block 0 the vars that only removed ops used (names borrowed from `removed`,
 * which must stay alive: the strings belong to the local program). */
static void prune_vars(Tp *tp, FlProgram *p, const FlMap *removed) {
    FlBlock *b0 = fl_ir_block(p, 0);
    FlMap used; /* keys borrowed from p's ops, which outlive the map */
    fl_map_init(&used);
    for (size_t bi = 0; bi < p->blocks.len; bi++)
        for (size_t i = 0; i < p->blocks.data[bi]->ops.len; i++) {
            const FlOpDesc *op = p->blocks.data[bi]->ops.data[i];
            put_args(&used, op->ins.data, op->ins.len);
            put_args(&used, op->outs.data, op->outs.len);
        }
    for (size_t i = 0; i < removed->cap; i++) {
        if (!fl_map_slot_live(removed, i)) continue;
        const char *n = removed->buckets[i].key;
        if (!fl_ir_var_find(b0, n) || fl_map_find_str(&used, n) || is_fetched(tp, n)) continue;
        fl_ir_var_remove(b0, n);
    }
    fl_map_fini(&used);
}

/* Where a gradient's split/send group goes: before op `at` of the trainer's block 0 as it is
 * before any group is inserted. */
typedef struct SendAt {
    size_t at, param; /* param: index in tp->params */
} SendAt;

static int send_at_cmp(const void *a, const void *b) {
    const SendAt *x = a, *y = b;
    if (x->at != y->at) return x->at < y->at ? -1 : 1;
    return (x->param > y->param) - (x->param < y->param);
}

/* The place of each parameter's group: right after the last of ops[0, end) that writes its
 * gradient (end when none does), sorted by place, then by parameter order. The caller frees. */
static SendAt *send_places(Tp *tp, const FlBlock *b, size_t end) {
    FlMap last; /* var -> index + 1 of its last writer; keys borrowed from b's ops */
    fl_map_init(&last);
    for (size_t i = 0; i < end; i++)
        put_args_as(&last, b->ops.data[i]->outs.data, b->ops.data[i]->outs.len,
                    (void *)(uintptr_t)(i + 1));
    SendAt *sa = fl_xmalloc(fl_mul_size(tp->params.len, sizeof *sa));
    for (size_t i = 0; i < tp->params.len; i++) {
        uintptr_t w = (uintptr_t)fl_map_find_str(&last, tp->params.data[i].grad);
        sa[i] = (SendAt){.at = w ? (size_t)w : end, .param = i};
    }
    fl_map_fini(&last);
    qsort(sa, tp->params.len, sizeof *sa, send_at_cmp);
    return sa;
}

/* Declares the gradient blocks of the sliced parameters, in parameter order. */
static FlStatus declare_grad_blocks(Tp *tp, FlBlock *b0) {
    for (size_t i = 0; i < tp->params.len; i++) {
        const Param *pr = &tp->params.data[i];
        for (size_t k = 0; pr->sliced && k < pr->pieces.len; k++) {
            FlVarDesc *v = declare(tp, b0, pr->pieces.data[k].grad, pr->gvar,
                                   pr->pieces.data[k].rows);
            if (!v) return FL_ERROR;
            v->persistable = v->trainable = false;
        }
    }
    return FL_OK;
}

/* Inserts at *at the gradient's split into its blocks (sliced parameters only) and one send
 * per block; *at moves past them. */
static void send_grad(FlBlock *b0, size_t *at, const Param *pr, bool sync) {
    if (pr->sliced) {
        const char **outs = fl_xmalloc(fl_mul_size(pr->pieces.len, sizeof *outs));
        for (size_t k = 0; k < pr->pieces.len; k++) outs[k] = pr->pieces.data[k].grad;
        if (is_sparse_grad(pr)) split_rows_op(b0, at, pr->grad, pr, outs, pr->opt->loc);
        else split_op(b0, at, pr->grad, pr, outs, pr->opt->loc);
        free(outs);
    }
    for (size_t k = 0; k < pr->pieces.len; k++) {
        FlOpDesc *op = fl_ir_op_insert(b0, (*at)++, "send");
        op->loc = pr->opt->loc;
        fl_ir_op_add_input(op, "X", pr->pieces.data[k].grad);
        fl_ir_op_set_ints(op, "epmap", &pr->pieces.data[k].server, 1);
        fl_ir_op_set_bool(op, "sync", sync);
    }
}

/* The trainer's lookups of distributed tables and their gradients, replaced in place (one op for
 * one: the indices of the local program's ops stay valid). */
static void replace_dist_lookups(Tp *tp, FlBlock *b0) {
    for (size_t i = 0; i < b0->ops.len; i++) {
        const FlOpDesc *op = b0->ops.data[i];
        bool lookup = fl_ops_is(op, FL_OPID_lookup_table), grad = !strcmp(op->type, "lookup_table_grad");
        const char *w = lookup || grad ? fl_ir_op_input1(op, "W") : NULL;
        const Param *pr = w ? param_find(tp, w) : NULL;
        if (!pr || !pr->dist) continue;
        FlOpDesc *n = fl_ir_op_insert(b0, i, lookup ? "distributed_lookup_table" : "distributed_lookup_grad_rows");
        op = b0->ops.data[i + 1];
        n->loc = op->loc;
        fl_ir_op_add_input(n, "Ids", fl_ir_op_input1(op, "Ids"));
        fl_ir_op_set_int(n, "padding_idx", fl_ir_op_get_int(op, "padding_idx", -1));
        if (lookup) {
            size_t np = pr->pieces.len;
            const char **names = fl_xmalloc(fl_mul_size(np, sizeof *names));
            int64_t *ep = fl_xmalloc(fl_mul_size(np, sizeof *ep)), *sec = fl_xmalloc(fl_mul_size(np, sizeof *sec));
            for (size_t k = 0; k < np; k++) {
                names[k] = pr->pieces.data[k].param;
                ep[k] = pr->pieces.data[k].server;
                sec[k] = pr->pieces.data[k].rows;
            }
            fl_ir_op_add_output(n, "Out", fl_ir_op_output1(op, "Out"));
            fl_ir_op_set_string(n, "table", pr->name);
            fl_ir_op_set_strings(n, "table_names", names, np);
            fl_ir_op_set_ints(n, "epmap", ep, np);
            fl_ir_op_set_ints(n, "height_sections", sec, np);
            fl_ir_op_set_int(n, "width", pr->var->shape[1]);
            fl_ir_op_set_int(n, "dtype", pr->var->dtype);
            free(names);
            free(ep);
            free(sec);
        } else {
            fl_ir_op_add_input(n, "Out@GRAD", fl_ir_op_input1(op, "Out@GRAD"));
            fl_ir_op_add_output(n, "W@GRAD", fl_ir_op_output1(op, "W@GRAD"));
            fl_ir_op_set_int(n, "height", pr->var->shape[0]);
        }
        fl_ir_op_remove(b0, i + 1);
    }
}

static FlProgram *build_trainer(Tp *tp) {
    FlProgram *p = fl_ir_program_clone(tp->local->main);
    FlBlock *b0 = fl_ir_block(p, 0);
    replace_dist_lookups(tp, b0);
    FlMap removed;
    fl_map_init(&removed);
    /* send_barrier and the recv section go where the first optimizer op stood, counted
     * without the ops removed before it (learning-rate ops may stand anywhere) */
    bool *on_server = fl_xcalloc(tp->lb->ops.len + 1, sizeof *on_server);
    for (size_t i = 0; i < tp->params.len; i++)
        for (size_t j = 0; j < tp->params.data[i].spath.len; j++)
            on_server[tp->params.data[i].spath.data[j]] = true;
    size_t pos = 0;
    for (size_t i = 0; i < tp->lb->ops.len && !is_optimize(tp->lb->ops.data[i]); i++)
        pos += !tp->lr_op[i] && !on_server[i];
    for (size_t i = tp->lb->ops.len; i-- > 0;) {
        const FlOpDesc *op = tp->lb->ops.data[i];
        if (!is_optimize(op) && !tp->lr_op[i] && !on_server[i]) continue;
        note_names(&removed, op);
        fl_ir_op_remove(b0, i);
    }
    free(on_server);
    bool sync = tp->mode == FL_TRANSPILE_SYNC;
    /* each gradient is sent right after the op before pos that finishes it (Fluid's
     * find_op_by_output_arg(reverse=True)), so the last layers' gradients travel while the
     * backward of the first ones still runs. The places are found first and the groups
     * inserted in increasing order of place: each group shifts every later place, and pos,
     * by its size. */
    if (declare_grad_blocks(tp, b0) != FL_OK) goto fail;
    SendAt *sa = send_places(tp, b0, pos);
    size_t shift = 0;
    for (size_t j = 0; j < tp->params.len; j++) {
        size_t at = sa[j].at + shift;
        send_grad(b0, &at, &tp->params.data[sa[j].param], sync);
        shift = at - sa[j].at;
    }
    free(sa);
    pos += shift;
    if (sync) fl_ir_op_insert(b0, pos++, "send_barrier")->loc = tp->first_loc;
    for (size_t i = 0; i < tp->params.len; i++) {
        const Param *pr = &tp->params.data[i];
        for (size_t k = 0; k < pr->pieces.len && !pr->dist; k++) { /* a distributed table stays there */
            const Piece *pc = &pr->pieces.data[k];
            if (pr->sliced) {
                FlVarDesc *v = declare(tp, b0, pc->param, pr->var, pc->rows);
                if (!v) goto fail;
                v->persistable = v->trainable = false;
                v->stop_gradient = true;
            }
            FlOpDesc *op = fl_ir_op_insert(b0, pos++, "recv");
            op->loc = pr->opt->loc;
            fl_ir_op_add_input_slot(op, "X");
            fl_ir_op_add_output(op, "Out", pc->param);
            fl_ir_op_set_ints(op, "epmap", &pc->server, 1);
        }
    }
    if (sync) fl_ir_op_insert(b0, pos++, "fetch_barrier")->loc = tp->first_loc;
    for (size_t i = 0; i < tp->params.len; i++) {
        const Param *pr = &tp->params.data[i];
        if (!pr->sliced || pr->dist) continue;
        FlOpDesc *op = fl_ir_op_insert(b0, pos++, "concat");
        op->loc = pr->opt->loc;
        for (size_t k = 0; k < pr->pieces.len; k++)
            fl_ir_op_add_input(op, "X", pr->pieces.data[k].param);
        fl_ir_op_add_output(op, "Out", pr->name);
        fl_ir_op_set_int(op, "axis", 0);
    }
    prune_vars(tp, p, &removed);
    fl_map_fini(&removed);
    return p;
fail:
    fl_map_fini(&removed);
    fl_ir_program_free(p);
    return NULL;
}

/* Allreduce mode: the local main program plus one allreduce of every raw gradient where the
 * first optimizer op stands, or before the first op of a gradient's path (clipping,
 * regularization) when that comes earlier (transpile.h). */
static FlProgram *build_allreduce_trainer(Tp *tp) {
    FlProgram *p = fl_ir_program_clone(tp->local->main);
    FlBlock *b0 = fl_ir_block(p, 0);
    size_t pos = 0;
    while (pos < b0->ops.len && !is_optimize(b0->ops.data[pos])) pos++;
    for (size_t i = 0; i < tp->params.len; i++)
        if (tp->params.data[i].path0 < pos) pos = tp->params.data[i].path0;
    FlOpDesc *op = fl_ir_op_insert(b0, pos, "allreduce");
    op->loc = tp->first_loc;
    if (tp->loss_sum) fl_ir_op_set_bool(op, "loss_sum", true);
    for (size_t i = 0; i < tp->params.len; i++) {
        fl_ir_op_add_input(op, "X", tp->params.data[i].raw);
        fl_ir_op_add_output(op, "Out", tp->params.data[i].raw);
    }
    /* the gathered rows of a merged sum (decay_merged) list a row once per trainer that had it:
     * merged again (a sum of one SelectedRows adds duplicate rows up), so that the decay counts
     * each distinct row of the global batch once, as locally */
    for (size_t i = 0, at = pos + 1; i < tp->params.len; i++) {
        if (!tp->params.data[i].decay_merged) continue;
        FlOpDesc *m = fl_ir_op_insert(b0, at++, "sum");
        m->loc = tp->first_loc;
        fl_ir_op_add_input(m, "X", tp->params.data[i].raw);
        fl_ir_op_add_output(m, "Out", tp->params.data[i].raw);
    }
    return p;
}

/* ---- pserver main ---- */

/* A var a pserver's startup must produce: `name` on the server, made from the local startup's
 * var `src` by keeping rows [row0, row0 + rows) (rows < 0: the whole var). */
typedef struct Need {
    const char *name, *src;
    const Param *pr; /* for a slice: whose pieces give the sections */
    size_t piece;
    bool slice;
} Need;
typedef struct Needs {
    FL_VEC(Need) v;
    FlMap names; /* Need.name -> MARK_PTR */
} Needs;

static void need(Needs *nd, const char *name, const char *src, const Param *pr, size_t piece,
                 bool slice) {
    if (fl_map_find_str(&nd->names, name)) return;
    fl_map_put_str(&nd->names, name, MARK_PTR);
    Need n = {name, src, pr, piece, slice};
    FL_VEC_PUSH(&nd->v, n);
}

static FlOpDesc *clone_into(FlBlock *b, const FlOpDesc *op) {
    FlOpDesc *c = fl_ir_op_clone(op);
    push_op(b, c);
    return c;
}

/* Declares in b every var op uses, like the local var of block lb (if it has one). */
static void declare_op_vars(FlBlock *b, const FlBlock *lb, const FlOpDesc *op) {
    for (int io = 0; io < 2; io++) {
        const FlSlot *ss = io ? op->outs.data : op->ins.data;
        size_t ns = io ? op->outs.len : op->ins.len;
        for (size_t s = 0; s < ns; s++)
            for (size_t k = 0; k < ss[s].nargs; k++) {
                const char *n = ss[s].args[k];
                if (skip_arg(n)) continue;
                ensure(b, n, fl_ir_var_find(lb, n));
            }
    }
}

static void rename_args(FlSlot *ss, size_t ns, const char *from, const char *to) {
    for (size_t s = 0; s < ns; s++)
        for (size_t k = 0; k < ss[s].nargs; k++)
            if (strcmp(ss[s].args[k], from) == 0) fl_ir_slot_set_arg(&ss[s], k, to);
}

static FlStatus build_optimize_block(Tp *tp, FlProgram *p, const Param *pr, size_t k,
                                     Needs *nd, FlOpDesc *ls, I64Vec *blocks, StrVec *g2b) {
    FlBlock *b0 = fl_ir_block(p, 0);
    const Piece *pc = &pr->pieces.data[k];
    bool sync = tp->mode == FL_TRANSPILE_SYNC;
    FlVarDesc *v = declare(tp, b0, pc->param, pr->var, pr->sliced ? pc->rows : -1);
    if (!v) return FL_ERROR;
    need(nd, pc->param, pr->name, pr, k, pr->sliced);
    v = declare(tp, b0, pc->grad, pr->gvar, pr->sliced ? pc->rows : -1);
    if (!v) return FL_ERROR;
    v->persistable = false;
    for (size_t i = 0; i < pr->states.len; i++) {
        const State *st = &pr->states.data[i];
        const char *n = state_block_name(tp, pr, st, k);
        if (st->kind == ST_SHARED) {
            ensure(b0, n, st->var);
            if (st->var->persistable) need(nd, n, st->name, NULL, 0, false);
            continue;
        }
        if (!declare(tp, b0, n, st->var, pr->sliced && st->kind == ST_SLICE ? pc->rows : -1))
            return FL_ERROR;
        need(nd, n, st->name, pr, k, pr->sliced && st->kind == ST_SLICE);
    }
    FlBlock *ob = fl_ir_block_new(p, 0);
    /* a sparse gradient's sparse_decay (its only path op) decays each trainer's rows before the
     * merge, which adds duplicate rows up: coeff * T, as the merge scales by 1/T; the merged sum
     * of several lookups (decay_merged) is decayed after the merge, as any path */
    const FlOpDesc *decay = sync && is_sparse_grad(pr) && pr->spath.len && !pr->decay_merged
                                ? tp->lb->ops.data[pr->spath.data[0]]
                                : NULL;
    if (sync) {
        FlOpDesc **decays = decay ? fl_xcalloc((size_t)tp->T, sizeof *decays) : NULL;
        for (int64_t t = 0; decay && t < tp->T; t++) decays[t] = clone_into(ob, decay);
        FlOpDesc *sum = fl_ir_op_append(ob, "sum");
        sum->loc = pr->opt->loc;
        for (int64_t t = 0; t < tp->T; t++) {
            const char *tn = trainer_name(tp, pc->grad, t);
            FlVarDesc *tv = declare(tp, b0, tn, pr->gvar, pr->sliced ? pc->rows : -1);
            if (!tv) {
                free(decays);
                return FL_ERROR;
            }
            tv->persistable = false;
            const char *sn = tn;
            if (decay) {
                sn = fl_arena_printf(&tp->arena, "%s.decay", tn);
                FlVarDesc *dv = declare(tp, b0, sn, pr->gvar, pr->sliced ? pc->rows : -1);
                if (!dv) {
                    free(decays);
                    return FL_ERROR;
                }
                dv->persistable = false;
                rename_args(decays[t]->ins.data, decays[t]->ins.len, pr->raw, tn);
                rename_args(decays[t]->ins.data, decays[t]->ins.len, pr->name, pc->param);
                rename_args(decays[t]->outs.data, decays[t]->outs.len, pr->proc, sn);
                fl_ir_op_set_float(decays[t], "coeff", fl_ir_op_get_float(decay, "coeff", 0) * (double)tp->T);
            }
            fl_ir_op_add_input(sum, "X", sn);
            fl_ir_op_add_input(ls, "X", tn);
        }
        free(decays);
        fl_ir_op_add_output(sum, "Out", pc->grad);
        FlOpDesc *sc = fl_ir_op_append(ob, "scale");
        sc->loc = pr->opt->loc;
        fl_ir_op_add_input(sc, "X", pc->grad);
        fl_ir_op_add_output(sc, "Out", pc->grad);
        fl_ir_op_set_float(sc, "scale", 1.0 / (double)tp->T);
        fl_ops_fill_defaults(sc);
    } else {
        fl_ir_op_add_input(ls, "X", pc->grad);
    }
    const char *proc = pc->grad; /* the optimizer's Grad on the block */
    for (size_t j = 0; !decay && j < pr->spath.len; j++) {
        /* the path on the merged gradient block: the raw gradient and the parameter by their
         * block's names, every var it makes by a block name of its own when cut */
        FlOpDesc *c = clone_into(ob, tp->lb->ops.data[pr->spath.data[j]]);
        rename_args(c->ins.data, c->ins.len, pr->raw, pc->grad);
        rename_args(c->ins.data, c->ins.len, pr->name, pc->param);
        for (size_t sl = 0; sl < c->outs.len; sl++)
            for (size_t a = 0; a < c->outs.data[sl].nargs; a++) {
                const char *n = c->outs.data[sl].args[a];
                const FlVarDesc *lv = fl_ir_var_find(tp->lb, n);
                const char *bn = block_name(tp, n, pr->sliced, k);
                FlVarDesc *bv = ensure(b0, bn, lv);
                bv->persistable = false;
                if (pr->sliced && lv && same_shape(lv, pr->var)) bv->shape[0] = pc->rows;
                if (strcmp(n, pr->proc) == 0) proc = fl_arena_strdup(&tp->arena, bn);
            }
        if (!pr->sliced) continue;
        for (size_t sl = 0; sl < c->ins.len; sl++)
            for (size_t a = 0; a < c->ins.data[sl].nargs; a++) {
                const char *n = c->ins.data[sl].args[a];
                if (!skip_arg(n) && !fl_ir_var_find(b0, n))
                    fl_ir_slot_set_arg(&c->ins.data[sl], a, block_name(tp, n, true, k));
            }
        for (size_t sl = 0; sl < c->outs.len; sl++)
            for (size_t a = 0; a < c->outs.data[sl].nargs; a++)
                fl_ir_slot_set_arg(&c->outs.data[sl], a,
                                   block_name(tp, c->outs.data[sl].args[a], true, k));
    }
    FlOpDesc *op = clone_into(ob, pr->opt);
    if (pr->proc) rename_args(op->ins.data, op->ins.len, pr->proc, proc);
    /* rename every name of the op to its block's (in and out slots alike) */
    const char *from[2 + FL_OPS_MAX_SLOTS * 4], *to[2 + FL_OPS_MAX_SLOTS * 4];
    size_t nr = 0;
    from[nr] = pr->name, to[nr++] = pc->param;
    from[nr] = pr->grad, to[nr++] = pc->grad;
    for (size_t i = 0; i < pr->states.len && nr < FL_ARRAY_LEN(from); i++)
        from[nr] = pr->states.data[i].name,
        to[nr++] = state_block_name(tp, pr, &pr->states.data[i], k);
    for (size_t i = 0; i < nr; i++) {
        if (strcmp(from[i], to[i]) == 0) continue;
        rename_args(op->ins.data, op->ins.len, from[i], to[i]);
        rename_args(op->outs.data, op->outs.len, from[i], to[i]);
    }
    FL_VEC_PUSH(blocks, ob->idx);
    FL_VEC_PUSH(g2b, fl_arena_printf(&tp->arena, "%s:%d", pc->grad, ob->idx));
    return FL_OK;
}

static FlProgram *build_pserver(Tp *tp, int64_t s, Needs *nd) {
    FlProgram *p = fl_ir_program_new();
    FlBlock *b0 = fl_ir_block(p, 0);
    I64Vec blocks = {0};
    StrVec g2b = {0};
    bool any = false;
    for (size_t i = 0; i < tp->params.len && !any; i++)
        for (size_t k = 0; k < tp->params.data[i].pieces.len; k++)
            any = any || tp->params.data[i].pieces.data[k].server == s;
    FlOpDesc *ls = fl_ir_op_append(b0, "listen_and_serv");
    ls->loc = tp->first_loc;
    fl_ir_op_add_input_slot(ls, "X");
    int64_t lr_block = -1;
    if (any && tp->nlr) {
        FlBlock *lb = fl_ir_block_new(p, 0);
        lr_block = lb->idx;
        for (size_t i = 0; i < tp->lb->ops.len; i++) {
            if (!tp->lr_op[i]) continue;
            const FlOpDesc *op = clone_into(lb, tp->lb->ops.data[i]);
            declare_op_vars(b0, tp->lb, op);
            for (size_t sl = 0; sl < op->ins.len; sl++)
                for (size_t k = 0; k < op->ins.data[sl].nargs; k++) {
                    const char *n = op->ins.data[sl].args[k];
                    const FlVarDesc *v = fl_ir_var_find(tp->lb, n);
                    if (!skip_arg(n) && v && v->persistable)
                        need(nd, fl_arena_strdup(&tp->arena, n),
                             fl_arena_strdup(&tp->arena, n), NULL, 0, false);
                }
        }
    }
    /* lr_block first: the verifier walks sub-blocks in attribute order, as the server runs
     * them */
    fl_ir_op_set_int(ls, "lr_block", lr_block);
    for (size_t i = 0; i < tp->params.len; i++) {
        const Param *pr = &tp->params.data[i];
        for (size_t k = 0; k < pr->pieces.len; k++)
            if (pr->pieces.data[k].server == s &&
                build_optimize_block(tp, p, pr, k, nd, ls, &blocks, &g2b))
                goto fail;
    }
    fl_ir_op_set_blocks(ls, "optimize_blocks", blocks.data, blocks.len);
    fl_ir_op_set_strings(ls, "grad_to_block", g2b.data, g2b.len);
    fl_ir_op_set_int(ls, "fanin", tp->T);
    fl_ir_op_set_bool(ls, "sync_mode", tp->mode == FL_TRANSPILE_SYNC);
    if (tp->loss_sum) fl_ir_op_set_bool(ls, "loss_sum", true);
    FL_VEC_FREE(&blocks);
    FL_VEC_FREE(&g2b);
    return p;
fail:
    FL_VEC_FREE(&blocks);
    FL_VEC_FREE(&g2b);
    fl_ir_program_free(p);
    return NULL;
}

/* ---- pserver startup ---- */

static bool is_random_seed0(const FlOpDesc *op) {
    const FlOpInfo *info = fl_ops_of(op);
    return info && fl_ops_attr(info, "seed") && fl_ir_op_get_int(op, "seed", 0) == 0;
}

/* op (the one startup op that writes v) can make any block of v's rows on its own: a constant
 * fill, or a counter-based random fill (uniform, gaussian, truncated gaussian: element i of the
 * whole var depends only on the seed and i) with a seed of its own. A seed-0 op's seed comes from
 * its position in the program, which a server's startup does not keep: such an op runs whole
 * and is cut, as any other initialiser is. */
static bool makes_rows(const FlOpDesc *op, const FlVarDesc *v) {
    bool fill = fl_ops_is(op, FL_OPID_fill_constant);
    bool rnd = fl_ops_is(op, FL_OPID_uniform_random) || fl_ops_is(op, FL_OPID_gaussian_random) ||
               fl_ops_is(op, FL_OPID_truncated_gaussian_random);
    if ((!fill && !rnd) || (rnd && is_random_seed0(op))) return false;
    if (fl_ir_op_get_int(op, "shard_offset", 0) != 0 || op->outs.len != 1 || op->outs.data[0].nargs != 1)
        return false;
    const FlAttr *sh = fl_ir_op_attr(op, "shape");
    if (!v || !sh || v->ndim < 1 || sh->n != (size_t)v->ndim) return false;
    for (int d = 0; d < v->ndim; d++)
        if (sh->ints[d] != v->shape[d]) return false;
    return true;
}

/* The index + 1 of the one op of b that writes name and can make its rows (makes_rows), else 0. */
static size_t row_maker(const FlBlock *b, const char *name) {
    size_t w = 0;
    for (size_t i = 0; i < b->ops.len; i++) {
        const FlOpDesc *op = b->ops.data[i];
        for (size_t sl = 0; sl < op->outs.len; sl++)
            for (size_t k = 0; k < op->outs.data[sl].nargs; k++)
                if (strcmp(op->outs.data[sl].args[k], name) == 0) {
                    if (w) return 0; /* two writers */
                    w = i + 1;
                }
    }
    return w && makes_rows(b->ops.data[w - 1], fl_ir_var_find(b, name)) ? w : 0;
}

/* The server's blocks of src made directly: per block, the maker op with the block's shape and
 * (for a random fill) shard_offset at the block's first element, writing the block. The whole
 * var is declared (a temporary nothing writes) so that readers of the plan find its shape. */
static FlStatus make_blocks(Tp *tp, FlBlock *b0, const FlBlock *ls, const FlOpDesc *maker,
                            const Need *ne, int64_t s, const FlBlock *pm0) {
    const FlVarDesc *whole = fl_ir_var_find(ls, ne->src);
    FlVarDesc *w = ensure(b0, ne->src, whole);
    w->persistable = w->trainable = false;
    const Param *pr = ne->pr;
    for (size_t k = 0; k < pr->pieces.len; k++) {
        const Piece *pc = &pr->pieces.data[k];
        if (pc->server != s) continue;
        const char *bn = block_name(tp, ne->src, true, k);
        const FlVarDesc *bl = fl_ir_var_find(pm0, bn);
        FL_ASSERT(bl);
        if (!declare(tp, b0, bn, bl, -1)) return FL_ERROR;
        FlOpDesc *op = clone_into(b0, maker);
        fl_ir_slot_set_arg(&op->outs.data[0], 0, bn);
        const FlAttr *sh = fl_ir_op_attr(maker, "shape");
        int64_t shape[FL_IR_MAX_DIMS];
        for (size_t d = 0; d < sh->n; d++) shape[d] = sh->ints[d];
        shape[0] = pc->rows;
        fl_ir_op_set_ints(op, "shape", shape, sh->n);
        fl_ir_op_set_int(op, "shard_offset", pc->row0 * row_elems(whole));
    }
    return FL_OK;
}

/* The trainers' startup without the distributed tables and their row-shaped state (the servers
 * make their rows): the ops writing only those vars go. Each must be a fill that makes any block
 * of rows (row_maker), so that no server makes a table whole either; and no random op whose
 * seed comes from its position (seed=0) may follow a removed op, whose numbers would change. */
static FlStatus strip_dist_startup(Tp *tp, FlProgram *st) {
    FlBlock *b = fl_ir_block(st, 0);
    FlMap drop;
    fl_map_init(&drop);
    FlStatus rc = FL_OK;
    for (size_t i = 0; i < tp->params.len && rc == FL_OK; i++) {
        const Param *pr = &tp->params.data[i];
        if (!pr->dist) continue;
        fl_map_put_str(&drop, pr->name, MARK_PTR);
        for (size_t k = 0; k < pr->states.len; k++)
            if (pr->states.data[k].kind == ST_SLICE) fl_map_put_str(&drop, pr->states.data[k].name, MARK_PTR);
    }
    size_t last_seed0 = 0; /* index + 1 of the last seed-0 random op */
    for (size_t i = 0; i < b->ops.len; i++)
        if (is_random_seed0(b->ops.data[i])) last_seed0 = i + 1;
    for (size_t i = b->ops.len; i-- > 0 && rc == FL_OK;) {
        const FlOpDesc *op = b->ops.data[i];
        size_t nout = 0, ndrop = 0;
        const char *name = NULL;
        for (size_t sl = 0; sl < op->outs.len; sl++)
            for (size_t k = 0; k < op->outs.data[sl].nargs; k++) {
                nout++;
                if (fl_map_find_str(&drop, op->outs.data[sl].args[k])) ndrop++, name = op->outs.data[sl].args[k];
            }
        if (!ndrop) continue;
        if (ndrop != nout || !row_maker(b, name))
            rc = fl_err(tp->e, "%sthe distributed table's var '%s' is initialised by '%s', which cannot make a block of "
                        "its rows alone (a pserver would make it whole): use a constant or a seeded random initializer "
                        "(give the program a random_seed)", where(tp, op->loc), name, op->type);
        else if (i + 1 < last_seed0)
            rc = fl_err(tp->e, "%sthe startup program has random ops whose seed comes from their position (seed=0) "
                        "after the initialiser of the distributed table's '%s', which the trainers do not run: give the "
                        "program a random_seed", where(tp, op->loc), name);
        else fl_ir_op_remove(b, i);
    }
    for (size_t i = 0; i < drop.cap && rc == FL_OK; i++)
        if (fl_map_slot_live(&drop, i)) fl_ir_var_remove(b, drop.buckets[i].key);
    fl_map_fini(&drop);
    return rc;
}

static FlProgram *build_pserver_startup(Tp *tp, int64_t s, const Needs *nds,
                                        const FlProgram *pmain) {
    const FlBlock *ls = fl_ir_block(tp->local->startup, 0);
    const FlBlock *pm0 = fl_ir_block(pmain, 0);
    size_t n = ls->ops.len;
    bool *keep = fl_xcalloc(n ? n : 1, sizeof *keep);
    FlMap want, made, cut, rowsmade; /* keys borrowed from the local startup and the arena */
    fl_map_init(&want);
    fl_map_init(&made);
    fl_map_init(&cut);
    fl_map_init(&rowsmade); /* a cut var whose blocks are made directly -> its maker's index + 1 */
    FlProgram *p = NULL;
    for (size_t i = 0; i < nds->v.len; i++) {
        const Need *ne = &nds->v.data[i];
        size_t w = ne->slice ? row_maker(ls, ne->src) : 0;
        if (w) fl_map_put_str(&rowsmade, ne->src, (void *)(uintptr_t)w);
    }
    for (size_t i = 0; i < nds->v.len; i++)
        if (!fl_map_find_str(&rowsmade, nds->v.data[i].src))
            fl_map_put_str(&want, nds->v.data[i].src, MARK_PTR);
    /* the backward slice: the ops that write a wanted var, and what they read */
    for (size_t i = n; i-- > 0;) {
        const FlOpDesc *op = ls->ops.data[i];
        bool hit = false;
        for (size_t sl = 0; sl < op->outs.len && !hit; sl++)
            for (size_t k = 0; k < op->outs.data[sl].nargs && !hit; k++)
                hit = fl_map_find_str(&want, op->outs.data[sl].args[k]) != NULL;
        if (!hit) continue;
        keep[i] = true;
        put_args(&want, op->ins.data, op->ins.len);
    }
    /* a var another kept op reads (or the server also holds whole) is made whole: cut it */
    for (size_t i = 0; i < nds->v.len; i++) {
        uintptr_t w = (uintptr_t)fl_map_find_str(&rowsmade, nds->v.data[i].src);
        if (w && keep[w - 1]) fl_map_remove(&rowsmade, nds->v.data[i].src, strlen(nds->v.data[i].src));
    }
    /* a seed-0 random op draws its seed from its position: keep everything before it */
    size_t last0 = SIZE_MAX;
    for (size_t i = 0; i < n; i++)
        if (keep[i] && is_random_seed0(ls->ops.data[i])) last0 = i;
    for (size_t i = 0; last0 != SIZE_MAX && i <= last0; i++) keep[i] = true;
    for (size_t i = 0; i < n; i++)
        if (keep[i]) put_args(&made, ls->ops.data[i]->outs.data, ls->ops.data[i]->outs.len);
    for (size_t i = 0; i < nds->v.len; i++)
        if (!fl_map_find_str(&made, nds->v.data[i].src) &&
            !fl_map_find_str(&rowsmade, nds->v.data[i].src)) {
            fl_err(tp->e, "the startup program does not initialise '%s', which pserver %lld "
                   "needs", nds->v.data[i].src, (long long)s);
            goto fail;
        }

    p = fl_ir_program_new();
    FlBlock *b0 = fl_ir_block(p, 0);
    for (size_t i = 0; i < n; i++) {
        if (!keep[i]) continue;
        const FlOpDesc *op = clone_into(b0, ls->ops.data[i]);
        declare_op_vars(b0, ls, op);
    }
    /* the vars the server holds under their own names stay persistable; the full vars that
     * are cut or copied into blocks are temporaries */
    for (size_t i = 0; i < b0->vars.len; i++) {
        FlVarDesc *v = b0->vars.data[i];
        if (!fl_map_find_str(&nds->names, v->name)) v->persistable = v->trainable = false;
    }
    /* the server's blocks: made directly, or cut (one split per cut source) or copied (one
     * assign per copy) from the whole var */
    for (size_t i = 0; i < nds->v.len; i++) {
        const Need *ne = &nds->v.data[i];
        if (strcmp(ne->name, ne->src) == 0) continue;
        if (ne->slice && fl_map_find_str(&cut, ne->src)) continue; /* one split serves every block */
        uintptr_t w = (uintptr_t)fl_map_find_str(&rowsmade, ne->src);
        if (ne->slice && w) {
            fl_map_put_str(&cut, ne->src, MARK_PTR);
            if (make_blocks(tp, b0, ls, ls->ops.data[w - 1], ne, s, pm0)) goto fail;
            continue;
        }
        const FlVarDesc *src = fl_ir_var_find(b0, ne->src);
        FL_ASSERT(src);
        if (!ne->slice) {
            const FlVarDesc *like = fl_ir_var_find(pm0, ne->name);
            FL_ASSERT(like);
            if (!declare(tp, b0, ne->name, like, -1)) goto fail;
            FlOpDesc *op = fl_ir_op_append(b0, "assign");
            op->loc = src->loc;
            fl_ir_op_add_input(op, "X", ne->src);
            fl_ir_op_add_output(op, "Out", ne->name);
            continue;
        }
        fl_map_put_str(&cut, ne->src, MARK_PTR);
        const Param *pr = ne->pr;
        const char **outs = fl_xmalloc(fl_mul_size(pr->pieces.len, sizeof *outs));
        for (size_t k = 0; k < pr->pieces.len; k++) {
            outs[k] = FL_RULE_EMPTY;
            if (pr->pieces.data[k].server != s) continue;
            outs[k] = block_name(tp, ne->src, true, k);
            const FlVarDesc *bl = fl_ir_var_find(pm0, outs[k]);
            FL_ASSERT(bl);
            if (!declare(tp, b0, outs[k], bl, -1)) {
                free(outs);
                goto fail;
            }
        }
        split_op(b0, NULL, ne->src, pr, outs, src->loc);
        free(outs);
    }
    free(keep);
    fl_map_fini(&want);
    fl_map_fini(&made);
    fl_map_fini(&cut);
    fl_map_fini(&rowsmade);
    return p;
fail:
    free(keep);
    fl_map_fini(&want);
    fl_map_fini(&made);
    fl_map_fini(&cut);
    fl_map_fini(&rowsmade);
    fl_ir_program_free(p);
    return NULL;
}

/* ---- checks of the result ---- */

static FlStatus check_program(Tp *tp, FlProgram *main, FlProgram *startup, const char *role,
                              int64_t idx) {
    FlErr sub;
    FlLoc at;
    if (fl_infer_program(startup, &sub, &at) != FL_OK)
        return fl_err(tp->e, "internal error: the startup program of %s %lld: %s", role,
                      (long long)idx, sub.msg);
    if (fl_infer_program(main, &sub, &at) != FL_OK)
        return fl_err(tp->e, "internal error: the main program of %s %lld: %s", role,
                      (long long)idx, sub.msg);
    FlVerifyIssues vi = {0};
    int n = fl_verify_program(startup, NULL, &vi);
    const char *what = "startup";
    if (n == 0) {
        n = fl_verify_program(main, startup, &vi);
        what = "main";
    }
    if (n) {
        fl_err(tp->e, "internal error: the %s program of %s %lld does not verify: %s", what,
               role, (long long)idx, vi.items.data[0].msg);
        fl_verify_issues_fini(&vi);
        return FL_ERROR;
    }
    fl_verify_issues_fini(&vi);
    return FL_OK;
}

/* A bundle for a role: the local one's source table, the given programs (taken). */
static FlBundle *role_bundle(Tp *tp, const char *role, int64_t idx, FlProgram *startup,
                             FlProgram *main, bool with_run) {
    FlBundle *b;
    if (with_run) {
        b = fl_ir_bundle_clone(tp->local);
        fl_ir_program_free(b->startup);
        fl_ir_program_free(b->main);
    } else {
        b = fl_ir_bundle_new();
        fl_ir_program_free(b->startup);
        fl_ir_program_free(b->main);
        for (size_t i = 0; i < tp->local->source_paths.len; i++)
            FL_VEC_PUSH(&b->source_paths, fl_xstrdup(tp->local->source_paths.data[i]));
    }
    b->startup = startup;
    b->main = main;
    free(b->role);
    b->role = fl_xstrdup(role);
    b->role_index = idx;
    return b;
}

static FlStatus check_options(const FlTranspileOptions *o, FlErr *e) {
    if (o->mode == FL_TRANSPILE_ALLREDUCE) {
        if (o->pservers != 0)
            return fl_err(e, "allreduce jobs have no pservers (found %lld): the trainers sum their gradients "
                          "themselves", (long long)o->pservers);
    } else if (o->pservers < 1 || o->pservers > MAX_ROLES)
        return fl_err(e, "the number of pservers must be between 1 and %d, found %lld",
                      MAX_ROLES, (long long)o->pservers);
    if (o->trainers < 1 || o->trainers > MAX_ROLES)
        return fl_err(e, "the number of trainers must be between 1 and %d, found %lld",
                      MAX_ROLES, (long long)o->trainers);
    if (o->min_block_size < 0)
        return fl_err(e, "the minimum block size must be at least 1 element, found %lld",
                      (long long)o->min_block_size);
    if ((unsigned)o->mode >= FL_TRANSPILE_MODE_COUNT)
        return fl_err(e, "unknown transpile mode %d (expected sync, async or allreduce)", (int)o->mode);
    if ((unsigned)o->dispatch >= FL_TRANSPILE_DISPATCH_COUNT)
        return fl_err(e, "unknown dispatch %d (expected round_robin or hash)", (int)o->dispatch);
    return FL_OK;
}

FlStatus fl_transpile(const FlBundle *local, const FlTranspileOptions *opt, FlPlan **out,
                      FlErr *e) {
    *out = NULL;
    if (check_options(opt, e)) return FL_ERROR;
    FL_ASSERT(local && local->main && local->startup);
    Tp tp = {.local = local,
             .lb = fl_ir_block(local->main, 0),
             .P = opt->pservers,
             .T = opt->trainers,
             .minb = opt->min_block_size ? opt->min_block_size : FL_TRANSPILE_MIN_BLOCK_SIZE,
             .mode = opt->mode,
             .dispatch = opt->dispatch,
             .e = e};
    fl_arena_init(&tp.arena);
    fl_map_init(&tp.param_index);
    fl_map_init(&tp.lr_writes);
    FlPlan *plan = NULL;
    FlProgram *tmain = NULL;
    Needs nd = {0};
    fl_map_init(&nd.names);
    bool allreduce = tp.mode == FL_TRANSPILE_ALLREDUCE;
    find_loss_kind(&tp);
    if (check_ops(&tp) || check_named_programs(&tp) || collect_params(&tp) || find_grad_paths(&tp) || find_dist_tables(&tp) ||
        (!allreduce && (find_lr_ops(&tp) || check_lr_inputs(&tp) || cut(&tp))))
        goto fail;
    tmain = allreduce ? build_allreduce_trainer(&tp) : build_trainer(&tp);
    if (!tmain) goto fail;
    FlProgram *tstart = fl_ir_program_clone(local->startup);
    if (strip_dist_startup(&tp, tstart) || check_program(&tp, tmain, tstart, "trainer", 0)) {
        fl_ir_program_free(tstart);
        goto fail;
    }
    plan = fl_ir_plan_new();
    free(plan->mode);
    plan->mode = fl_xstrdup(fl_transpile_mode_name(tp.mode));
    plan->pservers = tp.P;
    plan->trainers = tp.T;
    for (int64_t t = 0; t < tp.T; t++) {
        FlProgram *m = t + 1 < tp.T ? fl_ir_program_clone(tmain) : tmain;
        FlProgram *s = t + 1 < tp.T ? fl_ir_program_clone(tstart) : tstart;
        FL_VEC_PUSH(&plan->roles, role_bundle(&tp, "trainer", t, s, m, true));
    }
    tmain = NULL;
    for (int64_t s = 0; s < tp.P; s++) {
        nd.v.len = 0;
        fl_map_fini(&nd.names);
        fl_map_init(&nd.names);
        FlProgram *m = build_pserver(&tp, s, &nd);
        if (!m) goto fail;
        FlProgram *st = build_pserver_startup(&tp, s, &nd, m);
        if (!st) {
            fl_ir_program_free(m);
            goto fail;
        }
        FL_VEC_PUSH(&plan->roles, role_bundle(&tp, "pserver", s, st, m, false));
        if (check_program(&tp, m, st, "pserver", s)) goto fail;
    }
    for (int64_t r = 0; r < tp.T + tp.P; r++) FL_VEC_PUSH(&plan->rank_role, r);
    FlErr sub;
    /* a trainer of fluid.train carries its loop's driver: the local bundle's (cloned above), or
     * for a bundle written before the driver was kept (format 2) the one built from its run spec */
    for (int64_t t = 0; t < tp.T; t++)
        if (fl_ir_bundle_add_train_driver(plan->roles.data[t], FL_LOC_NONE, &sub) != FL_OK) {
            fl_err(e, "trainer %lld: fluid.train's driver: %s", (long long)t, sub.msg);
            goto fail;
        }
    if (fl_ir_validate_plan(plan, &sub) != FL_OK) {
        fl_err(e, "internal error: the plan does not validate: %s", sub.msg);
        goto fail;
    }
    *out = plan;
    plan = NULL;
fail:
    fl_ir_plan_free(plan);
    fl_ir_program_free(tmain);
    for (size_t i = 0; i < tp.params.len; i++) {
        FL_VEC_FREE(&tp.params.data[i].states);
        FL_VEC_FREE(&tp.params.data[i].pieces);
        FL_VEC_FREE(&tp.params.data[i].spath);
    }
    FL_VEC_FREE(&tp.params);
    FL_VEC_FREE(&nd.v);
    fl_map_fini(&nd.names);
    fl_map_fini(&tp.param_index);
    fl_map_fini(&tp.lr_writes);
    free(tp.lr_op);
    fl_arena_fini(&tp.arena);
    return *out ? FL_OK : FL_ERROR;
}

/* ---- names of the options ---- */

const char *fl_transpile_mode_name(FlTranspileMode m) {
    switch (m) {
    case FL_TRANSPILE_SYNC: return "sync";
    case FL_TRANSPILE_ASYNC: return "async";
    case FL_TRANSPILE_ALLREDUCE: return "allreduce";
    case FL_TRANSPILE_MODE_COUNT: break;
    }
    return "?";
}

const char *fl_transpile_dispatch_name(FlTranspileDispatch d) {
    switch (d) {
    case FL_TRANSPILE_ROUND_ROBIN: return "round_robin";
    case FL_TRANSPILE_HASH: return "hash";
    case FL_TRANSPILE_DISPATCH_COUNT: break;
    }
    return "?";
}

FlStatus fl_transpile_parse_mode(const char *s, FlTranspileMode *out, FlErr *e) {
    for (int m = 0; m < FL_TRANSPILE_MODE_COUNT; m++)
        if (strcmp(s, fl_transpile_mode_name((FlTranspileMode)m)) == 0) {
            *out = (FlTranspileMode)m;
            return FL_OK;
        }
    return fl_err(e, "unknown mode '%s' (expected sync, async or allreduce)", s);
}

FlStatus fl_transpile_parse_dispatch(const char *s, FlTranspileDispatch *out, FlErr *e) {
    for (int d = 0; d < FL_TRANSPILE_DISPATCH_COUNT; d++)
        if (strcmp(s, fl_transpile_dispatch_name((FlTranspileDispatch)d)) == 0) {
            *out = (FlTranspileDispatch)d;
            return FL_OK;
        }
    return fl_err(e, "unknown dispatch '%s' (expected round_robin or hash)", s);
}

/* ---- placement table ---- */

typedef struct Row {
    const char *param;  /* the parameter */
    const char *block;  /* the block's name (== param when whole) */
    int64_t row0, rows, row_elems, server;
    const FlVarDesc *pvar;
} Row;

void fl_transpile_show_placement(const FlPlan *plan, FlBuf *out) {
    const FlBundle *tr = NULL;
    for (size_t i = 0; i < plan->roles.len && !tr; i++)
        if (plan->roles.data[i]->role && !strcmp(plan->roles.data[i]->role, "trainer") &&
            plan->roles.data[i]->role_index == 0)
            tr = plan->roles.data[i];
    fl_buf_puts(out, "placement:\n");
    if (plan->pservers == 0) {
        fl_buf_puts(out, "  none (allreduce: every trainer holds every parameter and sums the gradients with the others)\n");
        return;
    }
    if (!tr || !tr->main || tr->main->blocks.len == 0) {
        fl_buf_puts(out, "  (no trainer 0 in this plan)\n");
        return;
    }
    const FlBlock *b = fl_ir_block(tr->main, 0);
    FL_VEC(Row) rows = {0};
    /* block name -> its concat op, whose Out is the parameter */
    FlMap whole;
    fl_map_init(&whole);
    for (size_t i = 0; i < b->ops.len; i++) {
        FlOpDesc *c = b->ops.data[i];
        const FlSlot *xs = fl_ir_op_input(c, "X");
        if (!fl_ops_is(c, FL_OPID_concat) || !xs || !fl_ir_op_output1(c, "Out")) continue;
        for (size_t x = 0; x < xs->nargs; x++) fl_map_put_str(&whole, xs->args[x], c);
    }
    for (size_t i = 0; i < b->ops.len; i++) {
        const FlOpDesc *op = b->ops.data[i];
        const FlAttr *tn = fl_ops_is(op, FL_OPID_distributed_lookup_table) ? fl_ir_op_attr(op, "table_names") : NULL;
        const FlAttr *tsec = tn ? fl_ir_op_attr(op, "height_sections") : NULL, *tep = tn ? fl_ir_op_attr(op, "epmap") : NULL;
        const char *table = tn ? fl_ir_op_get_string(op, "table", NULL) : NULL;
        bool seen = false; /* a distributed table's blocks, once (it may be looked up several times) */
        for (size_t j = 0; table && j < rows.len && !seen; j++) seen = !strcmp(rows.data[j].param, table);
        for (size_t k = 0, row0 = 0; table && !seen && tsec && tep && tn->type == FL_ATTR_STRINGS && k < tn->n &&
                                     k < tsec->n && k < tep->n; k++) {
            Row r = {.param = table, .block = tn->strs[k], .row0 = (int64_t)row0, .rows = tsec->ints[k],
                     .row_elems = fl_ir_op_get_int(op, "width", 1), .server = tep->ints[k], .pvar = NULL};
            row0 += (size_t)tsec->ints[k];
            FL_VEC_PUSH(&rows, r);
        }
        if (!fl_ops_is(op, FL_OPID_recv)) continue;
        const FlSlot *o = fl_ir_op_output(op, "Out");
        const FlAttr *ep = fl_ir_op_attr(op, "epmap");
        for (size_t k = 0; o && k < o->nargs; k++) {
            Row r = {.param = o->args[k], .block = o->args[k], .row0 = 0, .server = -1};
            if (ep && ep->type == FL_ATTR_INTS && k < ep->n) r.server = ep->ints[k];
            /* a block concatenated back into its parameter */
            const FlOpDesc *c = fl_map_find_str(&whole, r.block);
            if (c) {
                const FlSlot *xs = fl_ir_op_input(c, "X");
                int64_t off = 0;
                for (size_t x = 0; x < xs->nargs; x++) {
                    if (strcmp(xs->args[x], r.block) == 0) {
                        r.param = fl_ir_op_output1(c, "Out");
                        r.row0 = off;
                        break;
                    }
                    const FlVarDesc *xv = fl_ir_var_find(b, xs->args[x]);
                    off += xv && xv->ndim ? xv->shape[0] : 0;
                }
            }
            const FlVarDesc *bv = fl_ir_var_find(b, r.block);
            r.pvar = fl_ir_var_find(b, r.param);
            r.rows = bv && bv->ndim ? bv->shape[0] : 1;
            r.row_elems = bv ? row_elems(bv) : 1;
            FL_VEC_PUSH(&rows, r);
        }
    }
    /* one line per parameter, in the order of its first block */
    for (size_t i = 0; i < rows.len; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++) seen = !strcmp(rows.data[j].param, rows.data[i].param);
        if (seen) continue;
        const Row *r = &rows.data[i];
        fl_buf_printf(out, "  %s ", r->param);
        if (r->pvar) fl_ir_shape_str(r->pvar->ndim, r->pvar->shape, out);
        if (!r->pvar) { /* a distributed table: the trainers do not declare it */
            int64_t h = 0;
            for (size_t j = i; j < rows.len; j++) h += !strcmp(rows.data[j].param, r->param) ? rows.data[j].rows : 0;
            fl_buf_printf(out, "[%lld, %lld] distributed", (long long)h, (long long)r->row_elems);
        }
        if (!strcmp(r->param, r->block)) {
            fl_buf_printf(out, ": whole -> pserver %lld\n", (long long)r->server);
            continue;
        }
        fl_buf_puts(out, ":");
        for (size_t j = i, first = 1; j < rows.len; j++) {
            const Row *q = &rows.data[j];
            if (strcmp(q->param, r->param) != 0) continue;
            const char *suffix = q->block + strlen(q->param);
            fl_buf_printf(out, "%s %s rows [%lld, %lld) -> pserver %lld", first ? "" : ",",
                          suffix[0] == '.' ? suffix + 1 : q->block, (long long)q->row0,
                          (long long)(q->row0 + q->rows), (long long)q->server);
            first = 0;
        }
        fl_buf_putc(out, '\n');
    }
    /* the load of each server */
    for (int64_t s = 0; s < plan->pservers; s++) {
        int64_t nb = 0, ne = 0;
        for (size_t i = 0; i < rows.len; i++)
            if (rows.data[i].server == s) nb++, ne += rows.data[i].rows * rows.data[i].row_elems;
        fl_buf_printf(out, "  pserver %lld: %lld block%s, %lld elements\n", (long long)s,
                      (long long)nb, nb == 1 ? "" : "s", (long long)ne);
    }
    FL_VEC_FREE(&rows);
    fl_map_fini(&whole);
}

/* ---- what a pserver holds (checkpoints) ---- */

size_t fl_transpile_pserver_vars(const FlBundle *pserver, FlPlanVar **out) {
    *out = NULL;
    const FlBlock *m0 = fl_ir_block(pserver->main, 0), *s0 = fl_ir_block(pserver->startup, 0);
    FlMap last; /* var -> index + 1 of its last writer in the startup; keys borrowed */
    fl_map_init(&last);
    for (size_t j = 0; j < s0->ops.len; j++)
        put_args_as(&last, s0->ops.data[j]->outs.data, s0->ops.data[j]->outs.len, (void *)(uintptr_t)(j + 1));
    FL_VEC(FlPlanVar) r = {0};
    for (size_t i = 0; i < m0->vars.len; i++) {
        const FlVarDesc *v = m0->vars.data[i];
        uintptr_t w = (uintptr_t)fl_map_find_str(&last, v->name);
        if (!v->persistable || v->kind != FL_VAR_DENSE || !w) continue;
        const FlOpDesc *op = s0->ops.data[w - 1];
        const FlSlot *o = &op->outs.data[0], *x = op->ins.len ? &op->ins.data[0] : NULL;
        bool split = fl_ops_is(op, FL_OPID_split), assign = fl_ops_is(op, FL_OPID_assign);
        const FlAttr *sec = split ? fl_ir_op_attr(op, "sections") : NULL;
        /* a cut (the transpiler's split: one section per output) or a whole copy of its input */
        const char *src = ((split && sec && sec->n == o->nargs) || assign) && x && x->nargs ? x->args[0] : v->name;
        FlPlanVar pv = {.var = v->name, .full = fl_ir_var_find(s0, src), .row0 = 0, .rows = -1};
        for (size_t k = 0; sec && src != v->name && k < o->nargs; k++) {
            if (!strcmp(o->args[k], v->name)) {
                pv.rows = sec->ints[k];
                break;
            }
            pv.row0 += sec->ints[k];
        }
        /* a block made directly: "W.blockK" of the declared whole W, from its shard_offset */
        size_t base = fl_rule_block_base_len(v->name, NULL);
        int64_t off = fl_ir_op_get_int(op, "shard_offset", -1);
        if (src == v->name && base && off >= 0 && v->ndim >= 1) {
            char *bn = fl_xmalloc(base + 1);
            memcpy(bn, v->name, base);
            bn[base] = 0;
            const FlVarDesc *whole = fl_ir_var_find(s0, bn);
            free(bn);
            int64_t re = whole ? row_elems(whole) : 0;
            if (whole && re > 0 && off % re == 0) {
                pv.full = whole;
                pv.row0 = off / re;
                pv.rows = v->shape[0];
            }
        }
        if (pv.full) FL_VEC_PUSH(&r, pv);
    }
    fl_map_fini(&last);
    *out = r.data;
    return r.len;
}
