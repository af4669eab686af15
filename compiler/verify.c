/* verify.c: static checks of a main program (see verify.h).
 *
 * Passes: (1) op table checks and block references, which also record the one op that uses
 * each sub-block; (2) def-before-use, a walk in program order that descends into a control op's
 * sub-blocks where the op stands, with one set of written names (a name written anywhere so far
 * counts: scoping is checked by the declaration lookup); (3) goroutine races, per block, from
 * each go op's set of shared writes (vars written in its sub-block tree but declared outside it),
 * against the writes of the ops after it (a block without go ops has none to check).
 * Names in the maps are borrowed from the programs, which are not mutated.
 */
#include "compiler/verify.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/rules.h"
#include "compiler/ops.h"

#define MARK ((void *)1)

typedef struct Vf {
    const FlProgram *p;
    FlVerifyIssues *out;
    int count;
    FlMap defined; /* names written so far (or fed, or initialised) */
    FlMap writers; /* names some op of main writes */
    const FlOpDesc **user; /* per block: the op that uses it */
    bool *valid_sub;       /* per block: referenced correctly by its user */
    bool *walked;
} Vf;

static void issue(Vf *v, FlLoc loc, const char *fmt, ...) FL_PRINTF(3, 4);
static void issue(Vf *v, FlLoc loc, const char *fmt, ...) {
    FlBuf b = {0};
    va_list ap;
    va_start(ap, fmt);
    fl_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    FlVerifyIssue it = {loc, fl_xstrdup(fl_buf_str(&b))};
    fl_buf_free(&b);
    FL_VEC_PUSH(&v->out->items, it);
    v->count++;
}

static bool skip_name(const char *n) { return fl_rule_is_empty(n); }

static FlBlock *blk(const Vf *v, int64_t idx) {
    return idx >= 0 && (uint64_t)idx < v->p->blocks.len ? v->p->blocks.data[idx] : NULL;
}

/* ---- sub-block references ---- */

/* Calls fn for every sub-block index op names (BLOCK, BLOCKS attrs and lr_block). */
typedef void (*SubFn)(Vf *v, const FlBlock *b, const FlOpDesc *op, const char *attr,
                      int64_t idx, void *ctx);

static void each_sub(Vf *v, const FlBlock *b, const FlOpDesc *op, SubFn fn, void *ctx) {
    for (size_t i = 0; i < op->attrs.len; i++) {
        const FlAttr *a = &op->attrs.data[i];
        if (a->type == FL_ATTR_BLOCK) fn(v, b, op, a->name, a->i, ctx);
        else if (a->type == FL_ATTR_BLOCKS)
            for (size_t k = 0; k < a->n; k++) fn(v, b, op, a->name, a->ints[k], ctx);
        else if (a->type == FL_ATTR_INT && fl_ops_is(op, FL_OPID_listen_and_serv) &&
                 strcmp(a->name, "lr_block") == 0 && a->i >= 0)
            fn(v, b, op, a->name, a->i, ctx);
        else if (a->type == FL_ATTR_INT && fl_ops_is(op, FL_OPID_py_func) && strcmp(a->name, "backward_block") == 0 &&
                 a->i >= 0)
            fn(v, b, op, a->name, a->i, ctx);
    }
}

/* A py_func op or its gradient op. */
static bool is_py_func(const FlOpDesc *op) {
    const FlOpInfo *oi = fl_ops_of(op);
    return oi && oi->id == FL_OPID_py_func;
}

static void check_ref(Vf *v, const FlBlock *b, const FlOpDesc *op, const char *attr,
                      int64_t idx, void *ctx) {
    const FlBlock *sub = blk(v, idx);
    if (!sub || idx == 0) {
        issue(v, op->loc, "%s: attribute '%s' names block %lld, which is not a sub-block (the "
              "program has blocks 0..%zu)", op->type, attr, (long long)idx, v->p->blocks.len - 1);
        return;
    }
    if (sub->parent != b->idx) {
        issue(v, op->loc, "%s: attribute '%s' names block %lld, whose parent is block %d, not "
              "the op's block %d", op->type, attr, (long long)idx, sub->parent, b->idx);
        return;
    }
    /* a py_func's backward_block is also its gradient op's sub_block */
    if (v->user[idx] && is_py_func(v->user[idx]) && is_py_func(op) && v->user[idx] != op) return;
    if (v->user[idx] && v->user[idx] != op) {
        issue(v, op->loc, "%s: block %lld is already the sub-block of another op ('%s')",
              op->type, (long long)idx, v->user[idx]->type);
        return;
    }
    v->user[idx] = op;
    v->valid_sub[idx] = true;
}

/* ---- def before use ---- */

static void define(Vf *v, const char *name) {
    if (!fl_map_find_str(&v->defined, name)) fl_map_put_str(&v->defined, name, MARK);
}

static void walk_block(Vf *v, int idx, bool dist);

static void walk_sub(Vf *v, const FlBlock *b, const FlOpDesc *op, const char *attr, int64_t idx,
                     void *ctx) {
    if (!blk(v, idx) || !v->valid_sub[idx] || v->user[idx] != op || v->walked[idx]) return;
    walk_block(v, (int)idx, *(bool *)ctx);
}

static bool is_recv_case_var(const FlOpDesc *op, const char *name) {
    if (!fl_ops_is(op, FL_OPID_select)) return false;
    const FlAttr *kinds = fl_ir_op_attr(op, "case_kinds"), *vars = fl_ir_op_attr(op, "case_vars");
    if (!kinds || !vars || kinds->type != FL_ATTR_INTS || vars->type != FL_ATTR_STRINGS)
        return false;
    const FlAttr *oks = fl_ir_op_attr(op, "case_oks");
    if (oks && (oks->type != FL_ATTR_STRINGS || oks->n != kinds->n)) oks = NULL;
    for (size_t i = 0; i < vars->n && i < kinds->n; i++)
        if (kinds->ints[i] == 0 && (strcmp(vars->strs[i], name) == 0 || (oks && strcmp(oks->strs[i], name) == 0)))
            return true;
    return false;
}

static void walk_block(Vf *v, int idx, bool dist) {
    const FlBlock *b = v->p->blocks.data[idx];
    v->walked[idx] = true;
    for (size_t i = 0; i < b->ops.len; i++) {
        const FlOpDesc *op = b->ops.data[i];
        bool op_dist = dist || fl_ops_is(op, FL_OPID_listen_and_serv);
        for (size_t s = 0; s < op->ins.len; s++) {
            const FlSlot *sl = &op->ins.data[s];
            for (size_t k = 0; k < sl->nargs; k++) {
                const char *n = sl->args[k];
                if (skip_name(n)) continue;
                if (!fl_ir_var_lookup(v->p, b, n)) {
                    issue(v, op->loc, "%s: var '%s' (input %s) is not declared", op->type, n,
                          sl->name);
                    define(v, n); /* once */
                    continue;
                }
                if (fl_map_find_str(&v->defined, n) || is_recv_case_var(op, n)) continue;
                if (op_dist && !fl_map_find_str(&v->writers, n)) continue; /* received */
                issue(v, op->loc, "%s: var '%s' (input %s) is used before it is written", op->type,
                      n, sl->name);
                define(v, n);
            }
        }
        /* vars the op itself provides to its sub-blocks */
        const FlOpInfo *oi = fl_ops_of(op);
        if (oi && oi->id == FL_OPID_dynamic_rnn) { /* and its gradient */
            /* the step vars the op sets before each run of its block (ops_rnn_ctl.c) */
            static const char *const given[] = {"step_inputs", "static_inputs", "ex_states", "seeds", "static_lods"};
            for (size_t g = 0; g < FL_ARRAY_LEN(given); g++) {
                const FlAttr *a = fl_ir_op_attr(op, given[g]);
                for (size_t k = 0; a && a->type == FL_ATTR_STRINGS && k < a->n; k++) define(v, a->strs[k]);
            }
        }
        if (is_py_func(op)) { /* and its gradient: the function's arguments */
            static const char *const given[] = {"in_vars", "bw_x", "bw_out", "bw_dout"};
            for (size_t g = 0; g < FL_ARRAY_LEN(given); g++) {
                const FlAttr *a = fl_ir_op_attr(op, given[g]);
                for (size_t k = 0; a && a->type == FL_ATTR_STRINGS && k < a->n; k++)
                    if (a->strs[k][0]) define(v, a->strs[k]);
            }
        }
        if (fl_ops_is(op, FL_OPID_parallel_for)) {
            const FlAttr *a = fl_ir_op_attr(op, "index_var");
            if (a && a->type == FL_ATTR_STRING && a->s) define(v, a->s);
        }
        const FlAttr *cv = fl_ir_op_attr(op, "case_vars");
        if (fl_ops_is(op, FL_OPID_select) && cv && cv->type == FL_ATTR_STRINGS)
            for (size_t k = 0; k < cv->n; k++)
                if (is_recv_case_var(op, cv->strs[k])) define(v, cv->strs[k]);
        const FlAttr *co = fl_ir_op_attr(op, "case_oks");
        if (fl_ops_is(op, FL_OPID_select) && co && co->type == FL_ATTR_STRINGS)
            for (size_t k = 0; k < co->n; k++)
                if (co->strs[k][0] && is_recv_case_var(op, co->strs[k])) define(v, co->strs[k]);
        each_sub(v, b, op, walk_sub, &op_dist);
        for (size_t s = 0; s < op->outs.len; s++)
            for (size_t k = 0; k < op->outs.data[s].nargs; k++)
                if (!skip_name(op->outs.data[s].args[k])) define(v, op->outs.data[s].args[k]);
    }
}

/* ---- goroutine races ---- */

typedef struct Writes {
    FlMap names; /* shared var name -> MARK */
    FL_VEC(const char *) list;
    bool chan; /* the subtree uses a channel */
} Writes;

/* The op talks through a channel (creating one, or starting goroutines, does not: a parallel_for
 * waits for its own iterations, not for a goroutine started before it). */
static bool is_chan_op(const FlOpDesc *op) {
    return (fl_ops_flags(op) & FL_OPF_CHAN) && !fl_ops_is(op, FL_OPID_channel_create) &&
           !fl_ops_is(op, FL_OPID_channel_assign) && !fl_ops_is(op, FL_OPID_channel_nil) && !fl_ops_is(op, FL_OPID_go) &&
           !fl_ops_is(op, FL_OPID_parallel_for);
}

static bool within(const Vf *v, int blk_idx, int root) {
    for (size_t steps = 0; blk_idx >= 0 && steps <= v->p->blocks.len; steps++) {
        if (blk_idx == root) return true;
        const FlBlock *b = blk(v, blk_idx);
        if (!b) return false;
        blk_idx = b->parent;
    }
    return false;
}

/* The block that declares name as seen from block b; -1 if undeclared. */
static int decl_block(const Vf *v, const FlBlock *b, const char *name) {
    for (size_t steps = 0; b && steps <= v->p->blocks.len; steps++) {
        const FlVarDesc *d = fl_ir_var_find(b, name);
        if (d) return d->kind == FL_VAR_CHANNEL ? -2 : b->idx;
        b = blk(v, b->parent);
    }
    return -1;
}

static void add_write(Writes *w, const char *name) {
    if (fl_map_find_str(&w->names, name)) return;
    fl_map_put_str(&w->names, name, MARK);
    FL_VEC_PUSH(&w->list, name);
}

static void collect(Vf *v, int idx, int root, Writes *w, int depth);

typedef struct CollectCtx {
    int root;
    Writes *w;
    int depth;
} CollectCtx;

static void collect_sub(Vf *v, const FlBlock *b, const FlOpDesc *op, const char *attr,
                        int64_t idx, void *ctx) {
    CollectCtx *c = ctx;
    if (blk(v, idx) && v->valid_sub[idx] && v->user[idx] == op && c->depth < 64)
        collect(v, (int)idx, c->root, c->w, c->depth + 1);
}

/* Writes of block idx's ops (and their sub-blocks) to vars declared outside root's tree (root
 * -1: every write). Not fl_ir_block_io, which computes a control op's X/Out for the builder:
 * this walk must survive malformed block references (it follows only validated ones, and
 * lr_block), leaves out channels and @EMPTY@, does not expand list_index writes, and notes
 * channel use on the way. */
static void collect_op(Vf *v, const FlBlock *b, const FlOpDesc *op, int root, Writes *w,
                       int depth) {
    if (is_chan_op(op)) w->chan = true;
    for (size_t s = 0; s < op->outs.len; s++)
        for (size_t k = 0; k < op->outs.data[s].nargs; k++) {
            const char *n = op->outs.data[s].args[k];
            if (skip_name(n)) continue;
            int d = decl_block(v, b, n);
            if (d == -2 || (d >= 0 && root >= 0 && within(v, d, root))) continue;
            add_write(w, n);
        }
    CollectCtx c = {root, w, depth};
    each_sub(v, b, op, collect_sub, &c);
}

static void collect(Vf *v, int idx, int root, Writes *w, int depth) {
    const FlBlock *b = v->p->blocks.data[idx];
    for (size_t i = 0; i < b->ops.len; i++) collect_op(v, b, b->ops.data[i], root, w, depth);
}

static void writes_fini(Writes *w) {
    fl_map_fini(&w->names);
    FL_VEC_FREE(&w->list);
}

static int go_block(const FlOpDesc *op) {
    if (!fl_ops_is(op, FL_OPID_go)) return -1;
    const FlAttr *a = fl_ir_op_attr(op, "sub_block");
    return a && a->type == FL_ATTR_BLOCK ? (int)a->i : -1;
}

static void check_races(Vf *v, const FlBlock *b) {
    size_t n = b->ops.len, first = 0; /* the ops before the first go op race with nothing */
    while (first < n && go_block(b->ops.data[first]) < 0) first++;
    if (first == n) return;
    Writes *ws = fl_xcalloc(n + 1, sizeof(Writes));
    bool any_go = false;
    for (size_t i = first; i < n; i++) {
        const FlOpDesc *op = b->ops.data[i];
        int g = go_block(op);
        if (g >= 0 && blk(v, g) && v->valid_sub[g] && v->user[g] == op) {
            any_go = true;
            collect(v, g, g, &ws[i], 0);
        } else {
            collect_op(v, b, op, -1, &ws[i], 0);
        }
    }
    for (size_t i = first; any_go && i < n; i++) {
        const FlOpDesc *gop = b->ops.data[i];
        if (go_block(gop) < 0) continue;
        for (size_t k = i + 1; k < n; k++) {
            const FlOpDesc *op = b->ops.data[k];
            bool is_go = go_block(op) >= 0;
            if (!is_go && ws[k].chan) break; /* a channel operation in the parent */
            if (is_go && ws[i].chan && ws[k].chan) continue;
            for (size_t j = 0; j < ws[i].list.len; j++) {
                const char *name = ws[i].list.data[j];
                if (!fl_map_find_str(&ws[k].names, name)) continue;
                if (is_go)
                    issue(v, op->loc, "var '%s' is written by two goroutines (started at lines "
                          "%d and %d) with no channel operation between them", name,
                          gop->loc.line, op->loc.line);
                else
                    issue(v, op->loc, "var '%s' is written by the goroutine started at line %d "
                          "and, after it starts, by '%s' at line %d, with no channel operation "
                          "between them", name, gop->loc.line, op->type, op->loc.line);
            }
        }
    }
    for (size_t i = 0; i < n; i++) writes_fini(&ws[i]);
    free(ws);
}

/* ---- entry ---- */

int fl_verify_program(const FlProgram *main, const FlProgram *startup, FlVerifyIssues *out) {
    size_t nb = main->blocks.len;
    Vf v = {.p = main, .out = out};
    fl_map_init(&v.defined);
    fl_map_init(&v.writers);
    v.user = fl_xcalloc(nb + 1, sizeof *v.user);
    v.valid_sub = fl_xcalloc(nb + 1, sizeof *v.valid_sub);
    v.walked = fl_xcalloc(nb + 1, sizeof *v.walked);

    /* 1. ops against the table, sub-block references */
    for (size_t bi = 0; bi < nb; bi++) {
        const FlBlock *b = main->blocks.data[bi];
        for (size_t i = 0; i < b->ops.len; i++) {
            const FlOpDesc *op = b->ops.data[i];
            FlErr e;
            if (fl_ops_check(op, &e)) issue(&v, op->loc, "%s", e.msg);
            each_sub(&v, b, op, check_ref, NULL);
            for (size_t s = 0; s < op->outs.len; s++)
                for (size_t k = 0; k < op->outs.data[s].nargs; k++)
                    fl_map_put_str(&v.writers, op->outs.data[s].args[k], MARK);
        }
    }
    for (size_t bi = 1; bi < nb; bi++)
        if (!v.user[bi]) issue(&v, FL_LOC_NONE, "block %zu is not the sub-block of any op", bi);

    /* 2. def before use */
    for (size_t bi = 0; startup && bi < startup->blocks.len; bi++) {
        const FlBlock *b = startup->blocks.data[bi];
        for (size_t i = 0; i < b->ops.len; i++) {
            const FlOpDesc *op = b->ops.data[i];
            for (size_t s = 0; s < op->outs.len; s++)
                for (size_t k = 0; k < op->outs.data[s].nargs; k++)
                    define(&v, op->outs.data[s].args[k]);
        }
    }
    for (size_t bi = 0; bi < nb; bi++) {
        const FlBlock *b = main->blocks.data[bi];
        for (size_t i = 0; i < b->vars.len; i++) {
            const FlVarDesc *d = b->vars.data[i];
            if (d->persistable || d->fed || (d->stop_gradient && !fl_map_find_str(&v.writers, d->name)))
                define(&v, d->name);
        }
    }
    if (nb > 0) walk_block(&v, 0, false);

    /* 3. goroutine races */
    for (size_t bi = 0; bi < nb; bi++) check_races(&v, main->blocks.data[bi]);

    fl_map_fini(&v.defined);
    fl_map_fini(&v.writers);
    free(v.user);
    free(v.valid_sub);
    free(v.walked);
    return v.count;
}

void fl_verify_issues_fini(FlVerifyIssues *v) {
    for (size_t i = 0; i < v->items.len; i++) free(v->items.data[i].msg);
    FL_VEC_FREE(&v->items);
}

/* ---- the driver ---- */

static void driver_run_program(Vf *v, const FlBundle *b, const FlBlock *db, const FlOpDesc *op) {
    const FlAttr *pa = fl_ir_op_attr(op, "program");
    const char *pn = pa && pa->s ? pa->s : "";
    const FlProgram *p = fl_ir_bundle_program(b, pn);
    if (!p) {
        issue(v, op->loc, "run_program: program '%s' is not a program of the bundle (startup, main or a named one)", pn);
        return;
    }
    const FlBlock *g = fl_ir_block(p, 0);
    const FlAttr *fn = fl_ir_op_attr(op, "feed_names"), *tn = fl_ir_op_attr(op, "fetch_names");
    for (size_t i = 0; fn && i < fn->n; i++)
        if (!fl_ir_var_find(g, fn->strs[i]))
            issue(v, op->loc, "run_program: feed '%s' is not a var of the %s program's global block", fn->strs[i], pn);
    const FlSlot *fetch = fl_ir_op_output(op, "Fetch");
    for (size_t i = 0; tn && i < tn->n; i++) {
        const FlVarDesc *src = fl_ir_var_find(g, tn->strs[i]);
        if (!src) {
            issue(v, op->loc, "run_program: fetch '%s' is not a var of the %s program's global block", tn->strs[i], pn);
            continue;
        }
        const FlVarDesc *dst = fetch && i < fetch->nargs ? fl_ir_var_lookup(v->p, db, fetch->args[i]) : NULL;
        if (dst && dst->dtype != src->dtype)
            issue(v, op->loc, "run_program: fetch '%s' is %s but the driver's var '%s' is %s", tn->strs[i],
                  fl_dtype_name(src->dtype), dst->name, fl_dtype_name(dst->dtype));
    }
}

/* save_vars, load_vars, save_program: a program of the bundle, and tensor vars of its global block. */
static void driver_save_load(Vf *v, const FlBundle *b, const FlOpDesc *op) {
    const FlAttr *pa = fl_ir_op_attr(op, "program"), *na = fl_ir_op_attr(op, "names");
    const char *pn = pa && pa->s ? pa->s : "main";
    const FlProgram *p = fl_ir_bundle_program(b, pn);
    if (!p) {
        issue(v, op->loc, "%s: program '%s' is not a program of the bundle (startup, main or a named one)", op->type, pn);
        return;
    }
    for (size_t i = 0; na && i < na->n; i++) {
        const FlVarDesc *d = fl_ir_var_find(fl_ir_block(p, 0), na->strs[i]);
        if (!d || d->kind != FL_VAR_DENSE)
            issue(v, op->loc, "%s: '%s' is not a tensor var of the %s program's global block", op->type, na->strs[i], pn);
    }
}

int fl_verify_driver(const FlBundle *b, FlVerifyIssues *out) {
    if (!b->driver) return 0;
    int n = fl_verify_program(b->driver, NULL, out);
    for (size_t i = 0; i < b->programs.len; i++) n += fl_verify_program(b->programs.data[i].program, NULL, out);
    Vf v = {.p = b->driver, .out = out};
    for (size_t bi = 0; bi < b->driver->blocks.len; bi++) {
        const FlBlock *db = b->driver->blocks.data[bi];
        for (size_t i = 0; i < db->ops.len; i++) {
            const FlOpDesc *op = db->ops.data[i];
            if (fl_ops_is(op, FL_OPID_run_program)) driver_run_program(&v, b, db, op);
            if (fl_ops_is(op, FL_OPID_save_vars) || fl_ops_is(op, FL_OPID_load_vars) || fl_ops_is(op, FL_OPID_save_program))
                driver_save_load(&v, b, op);
            if (!fl_ops_is(op, FL_OPID_reader_open)) continue;
            int64_t r = fl_ir_op_get_int(op, "reader", -1); /* Bundle.readers[r] */
            if (r < 0 || (size_t)r >= b->readers.len)
                issue(&v, op->loc, "reader_open: reader %lld is not a reader of the bundle (it has %zu)", (long long)r,
                      b->readers.len);
        }
    }
    return n + v.count;
}
