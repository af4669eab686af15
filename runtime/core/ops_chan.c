/* ops_chan.c: the go, channel and select op adapters of the executor, on the goroutine scheduler and
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
 * Values: a channel element is a ChanItem, a tensor reference plus an optional tag, or for a
 * channel of channels (a declaration with elem_chans) a channel reference (NULL: the nil
 * channel), which the receiving var holds as its object, as Go passes a channel value. A send takes
 * a new reference to the var's current tensor (tensors in vars are never changed in place, so
 * the value is shared immutably and never torn) and MOVES it into the channel; the receiver's
 * var takes it over. The tag names a parameter block ("fc_0.w_0@GRAD.block0"): split_to_chan
 * sets it, sends carry it, a receive puts it on the receiving var as the var's label
 * (scope.h), and the distributed ops send and receive a labelled var under its label.
 * A receive from a closed, drained channel yields ok=false and the zero value: zeros of the
 * declared dtype and shape ([1] when the shape is unknown).
 *
 * Errors are the library's (send on closed channel, close of closed channel, deadlock) with the
 * op and its .fl line. Goroutines start, report and fail through conc.c (fl_conc_go): each
 * blocking op names itself in its caller's report label first (fl_conc_set_where).
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/core/exec_impl.h"
#include "runtime/sched/chan.h"
#include "runtime/sched/sched.h"

typedef struct ChanItem {
    FlTensor t;
    char *tag;    /* malloc'd; NULL when untagged */
    FlChan *chan; /* a channel of channels' element: one reference, NULL for nil */
} ChanItem;

/* ---------------------------------------------------------------- values */

static void item_drop(void *elem, void *ud) {
    (void)ud;
    ChanItem *it = elem;
    fl_tensor_fini(&it->t);
    free(it->tag);
    it->tag = NULL;
    fl_chan_release(it->chan);
    it->chan = NULL;
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

/* The value ch (the channel var's declaration: its element dtype, and its element shape when it
 * has one, -1 dims matching any size) may carry. */
static FlStatus check_elem(RunCtx *rc, const ExecOp *op, const ArgRef *ch, const ArgRef *a,
                           const FlTensor *t) {
    const FlVarDesc *d = fl_exec_arg_desc(op, ch);
    if (!d || d->kind != FL_VAR_CHANNEL) return FL_OK;
    bool ok = t->dtype == d->dtype && (d->ndim == 0 || t->ndim == d->ndim);
    for (int i = 0; ok && d->ndim > 0 && i < d->ndim; i++) ok = d->shape[i] < 0 || d->shape[i] == t->ne[i];
    if (ok) return FL_OK;
    return fl_exec_op_error(rc, op, "channel '%s' carries %s %s, but the value '%s' is %s %s", ch->name,
                            fl_dtype_name(d->dtype), d->ndim ? fl_shape_str(d->ndim, d->shape).s : "(any shape)",
                            a->name, fl_dtype_name(t->dtype), fl_tensor_shape(t).s);
}

/* Whether the channel var ch names carries channels (its declaration's elem_chans). */
static bool carries_chans(const ExecOp *op, const ArgRef *ch) {
    const FlVarDesc *d = fl_exec_arg_desc(op, ch);
    return d && d->kind == FL_VAR_CHANNEL && d->elem_chans > 0;
}

/* The value a names, to send on the channel ch names. */
static FlStatus load_item(RunCtx *rc, const ExecOp *op, FlScope *s, const ArgRef *ch, const ArgRef *a,
                          ChanItem *it) {
    *it = (ChanItem){.t = FL_TENSOR_INIT};
    if (carries_chans(op, ch)) /* a channel value; a var holding none sends the nil channel */
        return get_chan(rc, op, s, a, &it->chan);
    FlVar *v = a->idx >= 0 ? fl_exec_var_read(s, a) : NULL;
    if (v && fl_var_tag(v) == FL_VAR_TAG_OBJECT)
        return fl_exec_op_error(rc, op, "channel '%s' carries tensors, but the value '%s' is a channel", ch->name, a->name);
    if (!v || !fl_var_get_tensor(v, &it->t))
        return fl_exec_op_error(rc, op, "the value to send, '%s', has no value", a->name);
    if (check_elem(rc, op, ch, a, &it->t)) {
        fl_tensor_fini(&it->t);
        return FL_ERROR;
    }
    it->tag = fl_var_label_dup(v);
    return FL_OK;
}

/* Writes a received value (ok) or the zero value (!ok) into the var a names; it is consumed. */
static FlStatus store_item(RunCtx *rc, const ExecOp *op, FlScope *s, const ArgRef *a, ChanItem *it,
                           bool ok) {
    if (a->idx < 0 || (rc->read_only && a->shared)) {
        item_drop(it, NULL);
        return FL_OK;
    }
    FlVar *v = fl_exec_var_write(s, a);
    const FlVarDesc *d = fl_exec_arg_desc(op, a);
    if (it->chan || (d && d->kind == FL_VAR_CHANNEL)) { /* a channel, or a channel's zero value: nil */
        fl_var_set_object(v, ok ? it->chan : NULL, chan_release_cb);
        if (ok) it->chan = NULL; /* moved */
        item_drop(it, NULL);
        return FL_OK;
    }
    if (ok) {
        fl_var_set_label(v, it->tag);
        fl_var_take_tensor(v, &it->t);
        item_drop(it, NULL);
        return FL_OK;
    }
    item_drop(it, NULL);
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

/* ---------------------------------------------------------------- go */

static FlStatus go_body(RunCtx *rc, const ExecOp *op, void *scope) { return fl_exec_block(rc, op->sub, scope); }
static void go_done(void *scope) { fl_scope_release(scope); }

static FlStatus prep_go(ExecOp *op, FlErr *e) {
    return op->sub ? FL_OK : fl_err(e, "attribute 'sub_block' is missing");
}
static FlStatus run_go(RunCtx *rc, const ExecOp *op, FlScope *s) {
    if (fl_conc_need_sched(rc, op)) return FL_ERROR;
    return fl_conc_go(rc, op, go_body, go_done, fl_scope_new_layout(s, &op->sub->layout));
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

/* panic: the run ends with 'panic: message' (a goroutine's error ends the program, as Go's
 * panic does; the executor adds the op and its line). */
static FlStatus run_panic(RunCtx *rc, const ExecOp *op, FlScope *s) {
    (void)s;
    return fl_exec_op_error(rc, op, "panic: %s", fl_exec_attr_string(op, "message"));
}
FL_CONTROL_ADAPTER(panic, NULL, run_panic);

/* channel_len: Out = len(Channel) or, with cap, cap(Channel), as int64 [1]. */
static FlStatus prep_chan_len(ExecOp *op, FlErr *e) {
    if (one_arg(op, true, 0, "Channel", e) || one_arg(op, false, 0, "Out", e)) return FL_ERROR;
    op->a.i[0] = fl_exec_attr_bool(op, "cap");
    return FL_OK;
}
static FlStatus run_chan_len(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlChan *c;
    if (get_chan(rc, op, s, &op->args[0], &c)) return FL_ERROR;
    double n = (double)(op->a.i[0] ? fl_chan_cap(c) : fl_chan_len(c));
    fl_chan_release(c);
    FlTensor t = FL_TENSOR_INIT;
    int64_t one = 1;
    FlErr e;
    if (fl_tensor_from(&e, &t, FL_DT_INT64, 1, &one, &n) != FL_OK) return fl_exec_op_error(rc, op, "%s", e.msg);
    fl_var_take_tensor(fl_exec_var_write(s, &op->args[op->nin]), &t);
    return FL_OK;
}
FL_CONTROL_ADAPTER(channel_len, prep_chan_len, run_chan_len);

/* channel_assign: Out names the channel X names (a reference, as a Go channel value is). */
static FlStatus prep_chan_assign(ExecOp *op, FlErr *e) {
    if (one_arg(op, true, 0, "X", e) || one_arg(op, false, 0, "Out", e)) return FL_ERROR;
    return FL_OK;
}
static FlStatus run_chan_assign(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlChan *c;
    if (get_chan(rc, op, s, &op->args[0], &c)) return FL_ERROR;
    fl_var_set_object(fl_exec_var_write(s, &op->args[op->nin]), c, chan_release_cb); /* NULL: nil */
    return FL_OK;
}
FL_CONTROL_ADAPTER(channel_assign, prep_chan_assign, run_chan_assign);

/* channel_nil: Out holds no channel, which every channel op treats as Go's nil channel. */
static FlStatus prep_chan_nil(ExecOp *op, FlErr *e) { return one_arg(op, false, 0, "Out", e); }
static FlStatus run_chan_nil(RunCtx *rc, const ExecOp *op, FlScope *s) {
    (void)rc;
    fl_var_set_object(fl_exec_var_write(s, &op->args[op->nin]), NULL, NULL);
    return FL_OK;
}
FL_CONTROL_ADAPTER(channel_nil, prep_chan_nil, run_chan_nil);

static FlStatus prep_send(ExecOp *op, FlErr *e) {
    if (one_arg(op, true, 0, "Channel", e) || one_arg(op, true, 1, "X", e)) return FL_ERROR;
    return FL_OK;
}
static FlStatus run_send(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlChan *c;
    ChanItem it;
    if (get_chan(rc, op, s, &op->args[0], &c)) return FL_ERROR;
    if (load_item(rc, op, s, &op->args[0], &op->args[1], &it)) {
        fl_chan_release(c);
        return FL_ERROR;
    }
    fl_conc_set_where(rc, op);
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
    fl_conc_set_where(rc, op);
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
    int ok;    /* recv: output arg index of the received flag (case_oks), or -1 */
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
    const FlAttr *oks = fl_ir_op_attr(op->desc, "case_oks");
    if (!kinds || !chans || !vars || !subs) return fl_err(e, "the case attributes are missing");
    size_t n = kinds->n;
    if (oks && oks->n != 0 && oks->n != n) return fl_err(e, "case_oks has %zu entries for %zu cases", oks->n, n);
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
        c->ok = oks && oks->n ? find_arg(op, false, oks->strs[i]) : -1;
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
            st = load_item(rc, op, s, &op->args[c->chan], &op->args[c->var], &vals[k]);
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
        fl_conc_set_where(rc, op);
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
            if (st == FL_OK && c->ok >= 0) st = store_bool(rc, op, s, &op->args[c->ok], cases[j].ok);
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

/* ---------------------------------------------------------------- timers */

/* Timers sleep with fl_sched_sleep: inside a blocking region (the goroutine counts as running,
 * never reported as deadlocked, and its processor serves other goroutines meanwhile), ended
 * early when the program ends or panics, so a pending timer never delays the exit. The range
 * of their seconds is the op table's rule (fl_ops_check, run on every op loaded). */


static FlStatus run_sleep(RunCtx *rc, const ExecOp *op, FlScope *s) {
    (void)s;
    FlErr e;
    if (fl_sched_sleep(fl_exec_attr_float(op, "seconds"), &e) != FL_OK) return fl_exec_op_error(rc, op, "%s", e.msg);
    return FL_OK;
}
FL_CONTROL_ADAPTER(time_sleep, NULL, run_sleep);

/* The goroutine of time_after (once) and time_tick (every period): sleeps, then offers the
 * seconds since the timer started on its channel of capacity 1. A tick the receiver has not taken
 * yet is not doubled (Go's ticker drops ticks for slow receivers); a closed channel stops a
 * ticker (Go's Ticker.Stop); the end of the program stops any timer. */
typedef struct Timer {
    FlChan *chan; /* one reference */
    double seconds;
    bool repeat;
} Timer;

static FlStatus timer_body(RunCtx *rc, const ExecOp *op, void *arg) {
    Timer *t = arg;
    FlErr e;
    fl_conc_set_where(rc, op);
    for (double elapsed = t->seconds;; elapsed += t->seconds) {
        if (fl_sched_sleep(t->seconds, &e) != FL_OK) return FL_OK; /* the program is over */
        ChanItem it = {.t = FL_TENSOR_INIT};
        int64_t one = 1;
        if (fl_tensor_from(&e, &it.t, FL_DT_FLOAT32, 1, &one, &elapsed) != FL_OK) return fl_exec_op_error(rc, op, "%s", e.msg);
        FlSelectCase sc = {.chan = t->chan, .dir = FL_SELECT_SEND, .val = &it};
        int chosen = -1;
        FlStatus st = fl_select(&sc, 1, true, &chosen, &e); /* never blocks */
        if (chosen != 0 || st != FL_OK) item_drop(&it, NULL); /* not taken: full, or closed */
        if (st != FL_OK || !t->repeat) return FL_OK; /* closed (a stopped ticker), or shutting down */
    }
}

static void timer_free(void *arg) {
    Timer *t = arg;
    fl_chan_release(t->chan);
    free(t);
}

static FlStatus prep_after(ExecOp *op, FlErr *e) { return one_arg(op, false, 0, "Out", e); }
static FlStatus run_timer(RunCtx *rc, const ExecOp *op, FlScope *s, bool repeat) {
    if (fl_conc_need_sched(rc, op)) return FL_ERROR;
    FlErr e;
    FlChan *c = fl_chan_new(sizeof(ChanItem), 1, item_drop, NULL, &e);
    if (!c) return fl_exec_op_error(rc, op, "%s", e.msg);
    fl_chan_retain(c); /* one for the var, one for the timer */
    fl_var_set_object(fl_exec_var_write(s, &op->args[op->nin]), c, chan_release_cb);
    Timer *t = fl_xmalloc(sizeof *t);
    *t = (Timer){.chan = c, .seconds = fl_exec_attr_float(op, "seconds"), .repeat = repeat};
    return fl_conc_go(rc, op, timer_body, timer_free, t);
}
static FlStatus run_after(RunCtx *rc, const ExecOp *op, FlScope *s) { return run_timer(rc, op, s, false); }
FL_CONTROL_ADAPTER(time_after, prep_after, run_after);

static FlStatus run_tick(RunCtx *rc, const ExecOp *op, FlScope *s) { return run_timer(rc, op, s, true); }
FL_CONTROL_ADAPTER(time_tick, prep_after, run_tick);

/* ---------------------------------------------------------------- CSP blocks */

/* split_to_chan's goroutine: pushes the blocks in order, then closes the channel. */
typedef struct Pusher {
    FlChan *chan; /* one reference */
    ChanItem *items;
    size_t nitems;
} Pusher;

static FlStatus push_blocks(RunCtx *rc, const ExecOp *op, void *arg) {
    Pusher *p = arg;
    FlStatus st = FL_OK;
    size_t i = 0;
    for (; i < p->nitems && st == FL_OK; i++) {
        fl_conc_set_where(rc, op);
        FlErr e;
        if (fl_chan_send(p->chan, &p->items[i], &e) != FL_OK) st = fl_exec_op_error(rc, op, "%s", e.msg);
        else p->items[i] = (ChanItem){.t = FL_TENSOR_INIT}; /* moved */
    }
    FlErr e;
    if (st == FL_OK && fl_chan_close(p->chan, &e) != FL_OK) st = fl_exec_op_error(rc, op, "%s", e.msg);
    return st;
}

static void pusher_free(void *arg) {
    Pusher *p = arg;
    fl_chan_release(p->chan);
    for (size_t i = 0; i < p->nitems; i++) item_drop(&p->items[i], NULL);
    free(p->items);
    free(p);
}

static FlStatus prep_split(ExecOp *op, FlErr *e) {
    if (one_arg(op, true, 1, "Channel", e)) return FL_ERROR;
    op->a.i[0] = fl_exec_attr_int(op, "min_block_size");
    op->a.i[1] = fl_exec_attr_int(op, "pservers");
    if (op->a.i[1] < 1) return fl_err(e, "attribute 'pservers' must be at least 1");
    return FL_OK;
}
static FlStatus run_split(RunCtx *rc, const ExecOp *op, FlScope *s) {
    if (fl_conc_need_sched(rc, op)) return FL_ERROR;
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
    Pusher *p = fl_xmalloc(sizeof *p);
    *p = (Pusher){.chan = c, .items = items.data, .nitems = items.len};
    return fl_conc_go(rc, op, push_blocks, pusher_free, p);
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
        fl_conc_set_where(rc, op);
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
