/* ops_chan.c: goroutines, channels and select for the executor, on the goroutine scheduler and
 * channel library of runtime/sched (sched.h, chan.h), and the CSP worker's block ops.
 *
 *   go             runs its sub-block on a new goroutine, in a child scope of the scope running
 *                  the op (reference counted: it keeps every scope above it alive, so a
 *                  goroutine started in a loop body or a function outlives the iteration)
 *   channel_create Out = a new channel (capacity attribute; the var holds it as an object)
 *   channel_send   Channel, X [-> Status]      channel_recv  Channel -> Out [, Status]
 *   channel_close  Channel
 *   select         Go's select over case_kinds / case_channels / case_vars / sub_blocks
 *   split_to_chan  X*, Channel: cuts each X into row blocks (the transpiler's rule), and a new
 *                  goroutine pushes them in order and closes the channel (so the op never blocks
 *                  the program, which starts its consumers after it)
 *   chan_concat    Channel -> Out*: receives blocks until the channel is closed and writes each
 *                  parameter whole, its blocks joined in order
 *
 * Values: a channel element is a ChanItem, a tensor reference plus an optional tag. A send takes
 * a new reference to the var's current tensor (tensors in vars are never changed in place, so
 * the value is shared immutably and never torn) and MOVES it into the channel; the receiver's
 * var takes it over. The tag names a parameter block ("fc_0.w_0@GRAD.block0"): split_to_chan
 * sets it, sends carry it, a receive puts it on the receiving var as the var's label
 * (scope.h), and the distributed ops send and receive a labelled var under its label.
 * A receive from a closed, drained channel yields ok=false and the zero value: zeros of the
 * declared dtype and shape ([1] when the shape is unknown).
 *
 * Errors are the library's (send on closed channel, close of closed channel, deadlock) with the
 * op and its .fl line. A goroutine's error is kept on the executor and returned by the run that
 * ends next (Go ends the program on a goroutine's panic); errors that only say the goroutine was
 * woken by a deadlock or a scheduler shutdown are not kept.
 *
 * Reports: every goroutine (and the attached calling thread) has a ConcLabel, a buffer that the
 * library prints in deadlock reports and leak listings; its owner rewrites it to the location of
 * each blocking op before the op may block, so a report names the line each goroutine waits at.
 * Label buffers live in recycled GoCtx records that are freed only with the executor, after its
 * scheduler.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/core/conc.h"
#include "runtime/core/exec_impl.h"
#include "runtime/sched/chan.h"

typedef struct ChanItem {
    FlTensor t;
    char *tag; /* malloc'd; NULL when untagged */
} ChanItem;

typedef struct GoCtx GoCtx;
struct GoCtx {
    GoCtx *next_free, *next_all;
    RunCtx rc;          /* a copy of the starting run's, with e and label of its own */
    const ExecOp *op;
    FlScope *scope;     /* go: the goroutine's scope (one reference) */
    FlChan *chan;       /* split_to_chan: the channel (one reference) and the blocks to push */
    ChanItem *items;
    size_t nitems;
    FlErr err;
    ConcLabel label;
};

struct FlExecConc {
    pthread_mutex_t mu;
    FlSched *own;  /* made on first use when the caller's scope has no scheduler */
    bool own_failed;
    GoCtx *free_list, *all;
    char *err;     /* a goroutine's error that no run has returned yet */
};

/* ---------------------------------------------------------------- hooks */

void fl_conc_attach(FlScope *root, FlSched *s) { fl_var_set_object(fl_scope_var(root, FL_SCHED_VAR), s, NULL); }

FlSched *fl_conc_find(FlScope *s) {
    FlVar *v = fl_scope_find(s, FL_SCHED_VAR);
    return v ? fl_var_get_object(v) : NULL;
}

void fl_conc_prepare(FlExec *ex) {
    if (ex->conc) return;
    ex->conc = fl_xcalloc(1, sizeof *ex->conc);
    pthread_mutex_init(&ex->conc->mu, NULL);
}

void fl_conc_free(FlExec *ex) {
    FlExecConc *c = ex->conc;
    if (!c) return;
    fl_sched_free(c->own);
    for (GoCtx *g = c->all, *next; g; g = next) {
        next = g->next_all;
        free(g);
    }
    free(c->err);
    pthread_mutex_destroy(&c->mu);
    free(c);
    ex->conc = NULL;
}

static FlSched *own_sched(FlExec *ex) {
    FlExecConc *c = ex->conc;
    pthread_mutex_lock(&c->mu);
    if (!c->own && !c->own_failed) {
        FlErr e;
        FlSchedConfig cfg = {.stack_size = FL_CONC_STACK_SIZE, .seed = ex->opt.seed};
        c->own = fl_sched_new(&cfg, &e);
        c->own_failed = c->own == NULL;
    }
    FlSched *s = c->own;
    pthread_mutex_unlock(&c->mu);
    return s;
}

void fl_conc_run_begin(FlExec *ex, FlScope *scope, RunCtx *rc, ConcRun *cr) {
    FlSched *s = fl_conc_find(scope);
    if (!s) s = own_sched(ex);
    rc->sched = s;
    if (!s || fl_go_id() != 0) return;
    snprintf(cr->label.s, sizeof cr->label.s, "main program");
    fl_sched_attach(s, cr->label.s);
    cr->attached = true;
    cr->label.owner = fl_go_id();
    rc->label = &cr->label;
}

FlStatus fl_conc_run_end(FlExec *ex, RunCtx *rc, ConcRun *cr, FlStatus st) {
    if (cr->attached) fl_sched_detach(rc->sched);
    FlExecConc *c = ex->conc;
    pthread_mutex_lock(&c->mu);
    char *err = c->err;
    c->err = NULL;
    pthread_mutex_unlock(&c->mu);
    if (err) {
        fl_err(rc->e, "%s", err);
        free(err);
        return FL_ERROR;
    }
    return st;
}

/* Names op as the place the caller may block at, in its report label. */
static void set_where(RunCtx *rc, const ExecOp *op) {
    ConcLabel *l = rc->label;
    if (!l || l->owner != fl_go_id() || l->op == op) return; /* owner is set before the run */
    l->op = op;
    char buf[sizeof l->s];
    fl_exec_loc_str(rc->ex, op->desc->loc, buf, sizeof buf);
    if (buf[0]) memcpy(l->s, buf, sizeof buf);
}

/* ---------------------------------------------------------------- goroutine records */

static GoCtx *ctx_get(FlExec *ex) {
    FlExecConc *c = ex->conc;
    pthread_mutex_lock(&c->mu);
    GoCtx *g = c->free_list;
    if (g) {
        c->free_list = g->next_free;
    } else {
        g = fl_xcalloc(1, sizeof *g);
        g->next_all = c->all;
        c->all = g;
    }
    pthread_mutex_unlock(&c->mu);
    GoCtx *keep = g->next_all;
    char label[sizeof g->label.s];
    memcpy(label, g->label.s, sizeof label); /* a stale reader may still print it: keep it whole */
    memset(g, 0, sizeof *g);
    g->next_all = keep;
    memcpy(g->label.s, label, sizeof label);
    return g;
}

static void ctx_put(FlExec *ex, GoCtx *g) {
    FlExecConc *c = ex->conc;
    pthread_mutex_lock(&c->mu);
    g->next_free = c->free_list;
    c->free_list = g;
    pthread_mutex_unlock(&c->mu);
}

/* A goroutine failed: keep its error for the next run's end, unless it only says that the
 * goroutine was woken by a deadlock (reported by the run that detects it) or a shutdown. */
static void go_failed(GoCtx *g) {
    const char *m = g->err.msg;
    if (fl_sched_deadlock_report(g->rc.sched) || strstr(m, "goroutine abandoned")) return;
    FlExecConc *c = g->rc.ex->conc;
    pthread_mutex_lock(&c->mu);
    if (!c->err) c->err = fl_xstrdup(m);
    pthread_mutex_unlock(&c->mu);
}

/* ---------------------------------------------------------------- values */

static void item_drop(void *elem, void *ud) {
    (void)ud;
    ChanItem *it = elem;
    fl_tensor_fini(&it->t);
    free(it->tag);
    it->tag = NULL;
}

static void chan_retain_cb(void *c) { fl_chan_retain(c); }
static void chan_release_cb(void *c) { fl_chan_release(c); }

/* The channel var a names (a new reference in *out), NULL for a var without a value (Go's nil
 * channel). */
static FlStatus get_chan(RunCtx *rc, const ExecOp *op, FlScope *s, const ArgRef *a, FlChan **out) {
    *out = NULL;
    FlVar *v = a->idx >= 0 ? fl_exec_var_read(s, a) : NULL;
    if (!v) return FL_OK;
    FlVarTag tag = fl_var_tag(v);
    if (tag == FL_VAR_TAG_TENSOR)
        return fl_exec_op_error(rc, op, "'%s' holds a tensor, not a channel", a->name);
    if (tag == FL_VAR_TAG_OBJECT) *out = fl_var_retain_object(v, chan_retain_cb);
    return FL_OK;
}

static FlStatus load_item(RunCtx *rc, const ExecOp *op, FlScope *s, const ArgRef *a, ChanItem *it) {
    *it = (ChanItem){.t = FL_TENSOR_INIT};
    FlVar *v = a->idx >= 0 ? fl_exec_var_read(s, a) : NULL;
    if (!v || !fl_var_get_tensor(v, &it->t))
        return fl_exec_op_error(rc, op, "the value to send, '%s', has no value", a->name);
    it->tag = fl_var_label_dup(v);
    return FL_OK;
}

static const FlVarDesc *arg_desc(const ExecOp *op, const ArgRef *a) {
    const PBlock *pb = op->block;
    for (int i = 0; i < a->up && pb; i++) pb = pb->parent;
    return pb && a->idx >= 0 && (size_t)a->idx < pb->slots.len ? pb->slots.data[a->idx].desc : NULL;
}

/* Writes a received value (ok) or the zero value (!ok) into the var a names; it is consumed. */
static FlStatus store_item(RunCtx *rc, const ExecOp *op, FlScope *s, const ArgRef *a, ChanItem *it,
                           bool ok) {
    if (a->idx < 0 || (rc->read_only && a->shared)) {
        item_drop(it, NULL);
        return FL_OK;
    }
    FlVar *v = fl_exec_var_write(s, a);
    if (ok) {
        fl_var_set_label(v, it->tag);
        fl_var_take_tensor(v, &it->t);
        item_drop(it, NULL);
        return FL_OK;
    }
    item_drop(it, NULL);
    const FlVarDesc *d = arg_desc(op, a);
    int64_t one = 1;
    bool known = d && d->ndim > 0;
    for (int i = 0; known && i < d->ndim; i++) known = d->shape[i] >= 0;
    FlTensor z = FL_TENSOR_INIT;
    FlErr e;
    if (fl_tensor_alloc(&e, &z, d ? d->dtype : FL_DT_FLOAT32, known ? d->ndim : 1,
                        known ? d->shape : &one) != FL_OK)
        return fl_exec_op_error(rc, op, "the zero value of '%s': %s", a->name, e.msg);
    fl_var_set_label(v, NULL);
    fl_var_take_tensor(v, &z);
    return FL_OK;
}

static FlStatus store_bool(RunCtx *rc, const ExecOp *op, FlScope *s, const ArgRef *a, bool b) {
    if (a->idx < 0) return FL_OK;
    FlTensor t = FL_TENSOR_INIT;
    int64_t one = 1;
    double v = b;
    FlErr e;
    if (fl_tensor_from(&e, &t, FL_DT_BOOL, 1, &one, &v) != FL_OK) return fl_exec_op_error(rc, op, "%s", e.msg);
    fl_var_take_tensor(fl_exec_var_write(s, a), &t);
    return FL_OK;
}

static FlStatus one_arg(const ExecOp *op, bool in, int slot, const char *name, FlErr *e) {
    int n = in ? op->in_off[slot + 1] - op->in_off[slot] : op->out_off[slot + 1] - op->out_off[slot];
    return n == 1 ? FL_OK : fl_err(e, "slot '%s' must hold one var, found %d", name, n);
}

static FlStatus run_sub_block(RunCtx *rc, const PBlock *sub, FlScope *s) {
    FlScope *child = fl_scope_new_layout(s, &sub->layout);
    FlStatus st = fl_exec_block(rc, sub, child);
    fl_scope_release(child);
    return st;
}

static FlStatus need_sched(RunCtx *rc, const ExecOp *op) {
    return rc->sched ? FL_OK : fl_exec_op_error(rc, op, "no goroutine scheduler could be started");
}

/* ---------------------------------------------------------------- go */

static FlStatus push_blocks(GoCtx *g);

static void go_main(void *arg) {
    GoCtx *g = arg;
    g->label.owner = fl_go_id();
    g->rc.e = &g->err;
    g->rc.label = &g->label;
    FlStatus st = g->items ? push_blocks(g) : fl_exec_block(&g->rc, g->op->sub, g->scope);
    if (st != FL_OK) go_failed(g);
    fl_scope_release(g->scope);
    fl_chan_release(g->chan);
    for (size_t i = 0; i < g->nitems; i++) item_drop(&g->items[i], NULL);
    free(g->items);
    ctx_put(g->rc.ex, g);
}

/* Starts g (op, scope or blocks set) as a goroutine labelled with op's location. */
static FlStatus start(RunCtx *rc, const ExecOp *op, GoCtx *g) {
    g->rc = *rc;
    g->op = op;
    g->label.op = op;
    fl_exec_loc_str(rc->ex, op->desc->loc, g->label.s, sizeof g->label.s);
    FlErr e;
    if (fl_go(rc->sched, go_main, g, g->label.s, &e) == FL_OK) return FL_OK;
    fl_scope_release(g->scope);
    fl_chan_release(g->chan);
    for (size_t i = 0; i < g->nitems; i++) item_drop(&g->items[i], NULL);
    free(g->items);
    ctx_put(rc->ex, g);
    return fl_exec_op_error(rc, op, "%s", e.msg);
}

static FlStatus prep_go(ExecOp *op, FlErr *e) {
    return op->sub ? FL_OK : fl_err(e, "attribute 'sub_block' is missing");
}
static FlStatus run_go(RunCtx *rc, const ExecOp *op, FlScope *s) {
    if (need_sched(rc, op)) return FL_ERROR;
    GoCtx *g = ctx_get(rc->ex);
    g->scope = fl_scope_new_layout(s, &op->sub->layout);
    return start(rc, op, g);
}
FL_CONTROL_ADAPTER(go, prep_go, run_go);

/* ---------------------------------------------------------------- channel ops */

static FlStatus prep_create(ExecOp *op, FlErr *e) {
    if (one_arg(op, false, 0, "Out", e)) return FL_ERROR;
    op->a.i[0] = fl_exec_attr_int(op, "capacity");
    if (op->a.i[0] < 0 || op->a.i[0] > (1 << 24))
        return fl_err(e, "attribute 'capacity' must be in [0, %d], found %lld", 1 << 24, (long long)op->a.i[0]);
    return FL_OK;
}
static FlStatus run_create(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlErr e;
    FlChan *c = fl_chan_new(sizeof(ChanItem), (size_t)op->a.i[0], item_drop, NULL, &e);
    if (!c) return fl_exec_op_error(rc, op, "%s", e.msg);
    fl_var_set_object(fl_exec_var_write(s, &op->args[op->nin]), c, chan_release_cb);
    return FL_OK;
}
FL_CONTROL_ADAPTER(channel_create, prep_create, run_create);

static FlStatus prep_send(ExecOp *op, FlErr *e) {
    if (one_arg(op, true, 0, "Channel", e) || one_arg(op, true, 1, "X", e)) return FL_ERROR;
    return FL_OK;
}
static FlStatus run_send(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlChan *c;
    ChanItem it;
    if (get_chan(rc, op, s, &op->args[0], &c)) return FL_ERROR;
    if (load_item(rc, op, s, &op->args[1], &it)) {
        fl_chan_release(c);
        return FL_ERROR;
    }
    set_where(rc, op);
    FlErr e;
    FlStatus st = fl_chan_send(c, &it, &e);
    fl_chan_release(c);
    if (st != FL_OK) {
        item_drop(&it, NULL);
        return fl_exec_op_error(rc, op, "%s", e.msg);
    }
    return op->nout ? store_bool(rc, op, s, &op->args[op->nin], true) : FL_OK;
}
FL_CONTROL_ADAPTER(channel_send, prep_send, run_send);

static FlStatus prep_recv(ExecOp *op, FlErr *e) {
    if (one_arg(op, true, 0, "Channel", e) || one_arg(op, false, 0, "Out", e)) return FL_ERROR;
    return FL_OK;
}
static FlStatus run_recv(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlChan *c;
    if (get_chan(rc, op, s, &op->args[0], &c)) return FL_ERROR;
    set_where(rc, op);
    ChanItem it = {.t = FL_TENSOR_INIT};
    bool ok = false;
    FlErr e;
    FlStatus st = fl_chan_recv(c, &it, &ok, &e);
    fl_chan_release(c);
    if (st != FL_OK) return fl_exec_op_error(rc, op, "%s", e.msg);
    if (store_item(rc, op, s, &op->args[op->nin], &it, ok)) return FL_ERROR;
    int ns = op->out_off[2] - op->out_off[1];
    return ns ? store_bool(rc, op, s, &op->args[op->nin + op->out_off[1]], ok) : FL_OK;
}
FL_CONTROL_ADAPTER(channel_recv, prep_recv, run_recv);

static FlStatus prep_close(ExecOp *op, FlErr *e) { return one_arg(op, true, 0, "Channel", e); }
static FlStatus run_close(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlChan *c;
    if (get_chan(rc, op, s, &op->args[0], &c)) return FL_ERROR;
    FlErr e;
    FlStatus st = fl_chan_close(c, &e);
    fl_chan_release(c);
    return st == FL_OK ? FL_OK : fl_exec_op_error(rc, op, "%s", e.msg);
}
FL_CONTROL_ADAPTER(channel_close, prep_close, run_close);

/* ---------------------------------------------------------------- select */

enum { CASE_RECV = 0, CASE_SEND = 1, CASE_DEFAULT = 2 };

typedef struct SelCase {
    int kind;
    int chan;  /* input arg index of the channel; -1: none */
    int var;   /* recv: output arg index (from nin) or -1; send: input arg index */
    const PBlock *sub;
} SelCase;

typedef struct SelPrep {
    int n;
    SelCase c[];
} SelPrep;

static int find_arg(const ExecOp *op, bool in, const char *name) {
    if (!name || !name[0]) return -1;
    int lo = in ? 0 : op->nin, hi = in ? op->nin : op->nin + op->nout;
    for (int i = lo; i < hi; i++)
        if (!strcmp(op->args[i].name, name)) return i;
    return -1;
}

static FlStatus prep_select(ExecOp *op, FlErr *e) {
    const FlAttr *kinds = fl_ir_op_attr(op->desc, "case_kinds");
    const FlAttr *chans = fl_ir_op_attr(op->desc, "case_channels");
    const FlAttr *vars = fl_ir_op_attr(op->desc, "case_vars");
    const FlAttr *subs = fl_ir_op_attr(op->desc, "sub_blocks");
    if (!kinds || !chans || !vars || !subs) return fl_err(e, "the case attributes are missing");
    size_t n = kinds->n;
    if (chans->n != n || vars->n != n || subs->n != n)
        return fl_err(e, "the case attributes have different lengths (%zu, %zu, %zu, %zu)", n, chans->n,
                      vars->n, subs->n);
    if (n > 65535) return fl_err(e, "%zu cases: at most 65535", n);
    SelPrep *sp = fl_xcalloc(1, sizeof *sp + (n + 1) * sizeof(SelCase));
    op->a.extra = sp;
    sp->n = (int)n;
    const PBlock *base = op->block - op->block->b->idx; /* ex->blocks: block i is at index i */
    int ndefault = 0;
    for (size_t i = 0; i < n; i++) {
        SelCase *c = &sp->c[i];
        c->kind = (int)kinds->ints[i];
        c->sub = &base[subs->ints[i]]; /* fl_exec_new checked BLOCKS attributes */
        if (c->kind == CASE_DEFAULT) {
            if (++ndefault > 1) return fl_err(e, "more than one default case");
            c->chan = c->var = -1;
            continue;
        }
        if (c->kind != CASE_RECV && c->kind != CASE_SEND)
            return fl_err(e, "case %zu has kind %d (0 recv, 1 send, 2 default)", i, c->kind);
        c->chan = find_arg(op, true, chans->strs[i]);
        if (c->chan < 0) return fl_err(e, "case %zu: channel '%s' is not an input of the op", i, chans->strs[i]);
        c->var = find_arg(op, c->kind == CASE_SEND, vars->strs[i]);
        if (c->kind == CASE_SEND && c->var < 0)
            return fl_err(e, "case %zu: the value '%s' is not an input of the op", i, vars->strs[i]);
    }
    return FL_OK;
}

static FlStatus run_select(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const SelPrep *sp = op->a.extra;
    int n = sp->n;
    FlSelectCase *cases = fl_xcalloc((size_t)n + 1, sizeof *cases);
    ChanItem *vals = fl_xcalloc((size_t)n + 1, sizeof *vals);
    int *orig = fl_xcalloc((size_t)n + 1, sizeof *orig);
    int k = 0, dflt = -1, chosen = -1;
    FlStatus st = FL_OK;
    for (int i = 0; i < n && st == FL_OK; i++) {
        const SelCase *c = &sp->c[i];
        if (c->kind == CASE_DEFAULT) {
            dflt = i;
            continue;
        }
        vals[k] = (ChanItem){.t = FL_TENSOR_INIT};
        st = get_chan(rc, op, s, &op->args[c->chan], &cases[k].chan);
        if (st == FL_OK && c->kind == CASE_SEND) {
            st = load_item(rc, op, s, &op->args[c->var], &vals[k]);
            if (st != FL_OK) {
                fl_chan_release(cases[k].chan);
                continue;
            }
        }
        if (st != FL_OK) continue;
        cases[k].dir = c->kind == CASE_SEND ? FL_SELECT_SEND : FL_SELECT_RECV;
        cases[k].val = &vals[k];
        orig[k++] = i;
    }
    if (st == FL_OK) {
        set_where(rc, op);
        FlErr e;
        if (fl_select(cases, k, dflt >= 0, &chosen, &e) != FL_OK)
            st = fl_exec_op_error(rc, op, "%s", e.msg);
    }
    for (int j = 0; j < k; j++) {
        bool moved = st == FL_OK && j == chosen && cases[j].dir == FL_SELECT_SEND;
        if (st == FL_OK && j == chosen && cases[j].dir == FL_SELECT_RECV) {
            const SelCase *c = &sp->c[orig[j]];
            ArgRef none = {.idx = -1};
            st = store_item(rc, op, s, c->var >= 0 ? &op->args[c->var] : &none, &vals[j], cases[j].ok);
            moved = true;
        }
        if (!moved) item_drop(&vals[j], NULL);
        fl_chan_release(cases[j].chan);
    }
    const PBlock *sub = NULL;
    if (st == FL_OK) sub = chosen < 0 ? sp->c[dflt].sub : sp->c[orig[chosen]].sub;
    free(cases);
    free(vals);
    free(orig);
    if (st != FL_OK) return st;
    return run_sub_block(rc, sub, s);
}
FL_CONTROL_ADAPTER(select, prep_select, run_select);

/* ---------------------------------------------------------------- CSP blocks */


static FlStatus push_blocks(GoCtx *g) {
    FlStatus st = FL_OK;
    size_t i = 0;
    for (; i < g->nitems && st == FL_OK; i++) {
        set_where(&g->rc, g->op);
        FlErr e;
        if (fl_chan_send(g->chan, &g->items[i], &e) != FL_OK) st = fl_exec_op_error(&g->rc, g->op, "%s", e.msg);
        else g->items[i] = (ChanItem){.t = FL_TENSOR_INIT}; /* moved */
    }
    FlErr e;
    if (st == FL_OK && fl_chan_close(g->chan, &e) != FL_OK) st = fl_exec_op_error(&g->rc, g->op, "%s", e.msg);
    return st;
}

static FlStatus prep_split(ExecOp *op, FlErr *e) {
    if (one_arg(op, true, 1, "Channel", e)) return FL_ERROR;
    op->a.i[0] = fl_exec_attr_int(op, "min_block_size");
    op->a.i[1] = fl_exec_attr_int(op, "pservers");
    if (op->a.i[1] < 1) return fl_err(e, "attribute 'pservers' must be at least 1");
    return FL_OK;
}
static FlStatus run_split(RunCtx *rc, const ExecOp *op, FlScope *s) {
    if (need_sched(rc, op)) return FL_ERROR;
    FlChan *c;
    if (get_chan(rc, op, s, &op->args[op->in_off[1]], &c)) return FL_ERROR;
    FL_VEC(ChanItem) items = {0};
    FlStatus st = FL_OK;
    for (int i = op->in_off[0]; i < op->in_off[1] && st == FL_OK; i++) {
        const ArgRef *a = &op->args[i];
        FlTensor t = FL_TENSOR_INIT;
        FlVar *v = a->idx >= 0 ? fl_exec_var_read(s, a) : NULL;
        if (!v || !fl_var_get_tensor(v, &t)) {
            st = fl_exec_op_error(rc, op, "input X '%s' has no value", a->name);
            break;
        }
        int64_t ne[FL_MAX_DIMS], row_elems = 1, dim0 = t.ndim > 0 ? t.ne[0] : 1;
        /* the block rule (compiler/ir/rules.h), as the transpiler cuts a parameter */
        int64_t nb = fl_rule_block_count(dim0, fl_tensor_numel(&t), op->a.i[1], op->a.i[0] > 0 ? op->a.i[0] : 1);
        for (int d = 1; d < t.ndim; d++) row_elems *= t.ne[d];
        memcpy(ne, t.ne, sizeof ne);
        int64_t off = 0;
        for (int64_t k = 0; k < nb && st == FL_OK; k++) {
            ChanItem it = {.t = FL_TENSOR_INIT};
            FlErr e;
            int64_t rows = fl_rule_block_rows(dim0, nb, k);
            if (t.ndim == 0) fl_tensor_ref(&it.t, &t);
            else {
                ne[0] = rows;
                if (fl_tensor_view(&e, &it.t, &t, off * row_elems, t.ndim, ne) != FL_OK)
                    st = fl_exec_op_error(rc, op, "block %lld of '%s': %s", (long long)k, a->name, e.msg);
            }
            off += rows;
            FlBuf b = {0};
            fl_rule_put_block_name(&b, a->name, k);
            it.tag = fl_xstrdup(fl_buf_str(&b));
            fl_buf_free(&b);
            FL_VEC_PUSH(&items, it);
        }
        fl_tensor_fini(&t);
    }
    if (st != FL_OK) {
        for (size_t i = 0; i < items.len; i++) item_drop(&items.data[i], NULL);
        free(items.data);
        fl_chan_release(c);
        return st;
    }
    GoCtx *g = ctx_get(rc->ex);
    g->chan = c;
    g->items = items.data;
    g->nitems = items.len;
    if (!g->items) g->items = fl_xcalloc(1, sizeof *g->items); /* marks the record as a pusher */
    return start(rc, op, g);
}
FL_CONTROL_ADAPTER(split_to_chan, prep_split, run_split);

typedef struct Block {
    char *base; /* the tag without ".block<k>" */
    long k;
    FlTensor t;
} Block;

static int cmp_block(const void *a, const void *b) {
    const Block *x = a, *y = b;
    int c = strcmp(x->base, y->base);
    return c ? c : (x->k > y->k) - (x->k < y->k);
}

static FlStatus run_concat(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlChan *c;
    if (get_chan(rc, op, s, &op->args[0], &c)) return FL_ERROR;
    FL_VEC(Block) bl = {0};
    FlStatus st = FL_OK;
    for (;;) {
        set_where(rc, op);
        ChanItem it = {.t = FL_TENSOR_INIT};
        bool ok;
        FlErr e;
        if (fl_chan_recv(c, &it, &ok, &e) != FL_OK) {
            st = fl_exec_op_error(rc, op, "%s", e.msg);
            break;
        }
        if (!ok) break;
        int64_t k = -1;
        size_t base = it.tag ? fl_rule_block_base_len(it.tag, &k) : 0;
        if (!base) {
            st = fl_exec_op_error(rc, op, "received a value that is not a parameter block (tag '%s')",
                                  it.tag ? it.tag : "");
            item_drop(&it, NULL);
            break;
        }
        it.tag[base] = 0;
        FL_VEC_PUSH(&bl, ((Block){.base = it.tag, .k = (long)k, .t = it.t}));
    }
    fl_chan_release(c);
    if (bl.len > 1) qsort(bl.data, bl.len, sizeof *bl.data, cmp_block);
    for (size_t i = 0; i < bl.len && st == FL_OK;) {
        size_t j = i;
        while (j < bl.len && !strcmp(bl.data[j].base, bl.data[i].base)) j++;
        const char *name = bl.data[i].base;
        for (size_t q = i; q < j && st == FL_OK; q++)
            if (bl.data[q].k != (long)(q - i))
                st = fl_exec_op_error(rc, op, "the blocks of '%s' are not 0..%zu: block %ld is missing or "
                                      "repeated", name, j - i - 1, (long)(q - i));
        if (st != FL_OK) break;
        const FlTensor **xs = fl_xcalloc(j - i + 1, sizeof *xs);
        for (size_t q = i; q < j; q++) xs[q - i] = &bl.data[q].t;
        FlTensor out = FL_TENSOR_INIT;
        FlErr e;
        if (fl_kernel_concat(&e, xs, (int)(j - i), 0, &out) != FL_OK)
            st = fl_exec_op_error(rc, op, "joining the blocks of '%s': %s", name, e.msg);
        free(xs);
        if (st == FL_OK) {
            int oa = find_arg(op, false, name);
            FlVar *v = oa >= 0 ? fl_exec_var_write(s, &op->args[oa]) : fl_scope_find(s, name);
            if (!v) st = fl_exec_op_error(rc, op, "no var '%s' to write the joined blocks into", name);
            else if (!rc->read_only) fl_var_take_tensor(v, &out);
        }
        fl_tensor_fini(&out);
        i = j;
    }
    for (size_t i = 0; i < bl.len; i++) {
        fl_tensor_fini(&bl.data[i].t);
        free(bl.data[i].base);
    }
    FL_VEC_FREE(&bl);
    return st;
}
FL_CONTROL_ADAPTER(chan_concat, NULL, run_concat);
