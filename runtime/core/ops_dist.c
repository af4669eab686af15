/* ops_dist.c: the parameter-server ops' adapters: send, recv, send_barrier, fetch_barrier and
 * listen_and_serv. They are control adapters (they need the scope: to find the transport, to
 * resolve list_index aliases to the picked var's real name, and to run optimize sub-blocks) and
 * delegate every byte of communication to the FlDist attached to the root scope (dist.h).
 *
 *   send     X*            each X's tensor to pserver epmap[i] (no epmap: the transport picks)
 *   recv     X* -> Out*    each Out from pserver epmap[i], written whole into its var
 *   send_barrier / fetch_barrier   the transport's barriers
 *   listen_and_serv        hands the transport an FlDistServer and lets it serve
 *   allreduce X* -> Out*   each Out the row-weighted sum of X over the trainers
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/core/dist.h"
#include "compiler/ir/rules.h"
#include "runtime/core/exec_impl.h"

void fl_dist_attach(FlScope *root, FlDist *d) { fl_var_set_object(fl_scope_var(root, FL_DIST_VAR), d, NULL); }

FlDist *fl_dist_find(FlScope *s) {
    FlVar *v = fl_scope_find(s, FL_DIST_VAR);
    return v ? fl_var_get_object(v) : NULL;
}

static FlDist *need_dist(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlDist *d = fl_dist_find(s);
    if (!d)
        fl_exec_op_error(rc, op, "op '%s' needs the distributed runtime: run the program with flrun under mpirun",
                         op->desc->type);
    return d;
}

/* The transport's message, wrapped with the op and its line. */
static FlStatus wrap(RunCtx *rc, const ExecOp *op, FlErr *inner) {
    return fl_exec_op_error(rc, op, "%s", inner->msg);
}

/* The real name of argument a: when a list_index op of this block made `a` an alias of one of
 * its list's vars, that var's name (compared by identity of the FlVar), else a's own name. */
static const char *real_name(const ExecOp *op, FlScope *s, const ArgRef *a) {
    FlVar *lv = a->idx >= 0 ? fl_exec_var_read(s, a) : NULL;
    const char *label = lv ? fl_var_label(lv) : NULL;
    if (label) return label; /* a parameter block received from a channel (ops_chan.c) */
    const PBlock *pb = op->block;
    FlVar *v = NULL;
    for (size_t i = 0; i < pb->nops; i++) {
        const ExecOp *li = &pb->ops[i];
        if (!fl_ops_is(li->desc, FL_OPID_list_index) || li->nout != 1) continue;
        if (strcmp(li->args[li->nin].name, a->name) != 0) continue;
        if (!v) v = fl_exec_var_read(s, a);
        if (!v) break;
        for (int k = li->in_off[FL_IN_list_index_X]; k < li->in_off[FL_IN_list_index_X + 1]; k++)
            if (li->args[k].idx >= 0 && fl_exec_var_read(s, &li->args[k]) == v) return li->args[k].name;
    }
    return a->name;
}

static FlStatus check_epmap(ExecOp *op, int nargs, FlErr *e) {
    size_t n;
    const int64_t *ep = fl_exec_attr_ints(op, "epmap", &n);
    if (n != 0 && n != (size_t)nargs)
        return fl_err(e, "attribute 'epmap' has %zu entries for %d vars (one per var, or none)", n, nargs);
    for (size_t i = 0; i < n; i++)
        if (ep[i] < -1 || ep[i] > 1 << 20) return fl_err(e, "attribute 'epmap' holds %lld, not a pserver", (long long)ep[i]);
    return FL_OK;
}

/* Entry i of an epmap of n entries (checked by check_epmap), -1 when there is none. */
static int epmap_at(const int64_t *ep, size_t n, int i) { return n ? (int)ep[i] : -1; }

/* ---- send: X* ---- */
static FlStatus prep_send(ExecOp *op, FlErr *e) { return check_epmap(op, fl_exec_nin(op, FL_IN_send_X), e); }

static FlStatus run_send(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlDist *d = need_dist(rc, op, s);
    if (!d) return FL_ERROR;
    size_t nep;
    const int64_t *ep = fl_exec_attr_ints(op, "epmap", &nep);
    for (int i = op->in_off[FL_IN_send_X]; i < op->in_off[FL_IN_send_X + 1]; i++) {
        const ArgRef *a = &op->args[i];
        FlTensor t = FL_TENSOR_INIT;
        FlVar *v = a->idx >= 0 ? fl_exec_var_read(s, a) : NULL;
        int ps = epmap_at(ep, nep, i - op->in_off[FL_IN_send_X]);
        FlErr inner;
        FlStatus st;
        if (v && a->rows) { /* a sparse gradient (block): its rows travel, not the dense tensor */
            FlSelectedRows r;
            fl_rows_init(&r);
            if (!fl_var_get_rows(v, &r))
                return fl_exec_op_error(rc, op, "input X '%s' (a SelectedRows) has no value", a->name);
            if (!d->send_rows) {
                fl_rows_fini(&r);
                return fl_exec_op_error(rc, op, "input X '%s' is a SelectedRows, which this transport does not send",
                                        a->name);
            }
            st = d->send_rows(d, ps, real_name(op, s, a), &r, &inner);
            fl_rows_fini(&r);
        } else {
            if (!v || !fl_var_get_tensor(v, &t)) return fl_exec_op_error(rc, op, "input X '%s' has no value", a->name);
            st = d->send(d, ps, real_name(op, s, a), &t, &inner);
            fl_tensor_fini(&t);
        }
        if (st != FL_OK) return wrap(rc, op, &inner);
    }
    return FL_OK;
}
FL_SPARSE_CONTROL_ADAPTER(send, prep_send, run_send);

/* ---- recv: X* -> Out* (X is informational: Fluid's form) ---- */
static FlStatus prep_recv(ExecOp *op, FlErr *e) { return check_epmap(op, fl_exec_nout(op, FL_OUT_recv_Out), e); }

/* At the first op of a run of consecutive recv ops, announces every var the run receives, so
 * the transport can request them all at once. Only recv ops lie between the announcement and
 * the receipt, so nothing the program sends meanwhile could change the answers. */
static FlStatus prefetch_run(RunCtx *rc, const ExecOp *op, FlScope *s, FlDist *d) {
    const PBlock *pb = op->block;
    if (!d->prefetch || (op->index > 0 && fl_ops_is(pb->ops[op->index - 1].desc, FL_OPID_recv))) return FL_OK;
    for (size_t j = (size_t)op->index; j < pb->nops && fl_ops_is(pb->ops[j].desc, FL_OPID_recv); j++) {
        const ExecOp *r = &pb->ops[j];
        if (fl_exec_nout(r, FL_OUT_recv_Out) < 1) continue;
        size_t n;
        const int64_t *ep = fl_exec_attr_ints(r, "epmap", &n);
        if (n != 0 && n != (size_t)fl_exec_nout(r, FL_OUT_recv_Out)) return FL_OK; /* prepare rejects it */
        for (int i = r->out_off[FL_OUT_recv_Out]; i < r->out_off[FL_OUT_recv_Out + 1]; i++) {
            const ArgRef *a = &r->args[r->nin + i];
            if (a->idx < 0) continue;
            FlErr inner;
            if (d->prefetch(d, epmap_at(ep, n, i - r->out_off[FL_OUT_recv_Out]), real_name(r, s, a), &inner) != FL_OK)
                return wrap(rc, r, &inner);
        }
    }
    return FL_OK;
}

static FlStatus run_recv(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlDist *d = need_dist(rc, op, s);
    if (!d) return FL_ERROR;
    if (prefetch_run(rc, op, s, d) != FL_OK) return FL_ERROR;
    size_t nep;
    const int64_t *ep = fl_exec_attr_ints(op, "epmap", &nep);
    for (int i = op->out_off[FL_OUT_recv_Out]; i < op->out_off[FL_OUT_recv_Out + 1]; i++) {
        const ArgRef *a = &op->args[op->nin + i];
        if (a->idx < 0) continue;
        FlTensor t = FL_TENSOR_INIT;
        FlErr inner;
        if (d->recv(d, epmap_at(ep, nep, i - op->out_off[FL_OUT_recv_Out]), real_name(op, s, a), &t, &inner) != FL_OK)
            return wrap(rc, op, &inner);
        if (rc->read_only && a->shared) fl_tensor_fini(&t);
        else fl_var_take_tensor(fl_exec_var_write(s, a), &t);
    }
    return FL_OK;
}
FL_CONTROL_ADAPTER(recv, prep_recv, run_recv);

/* ---- barriers ---- */
static FlStatus run_barrier(RunCtx *rc, const ExecOp *op, FlScope *s, FlDistBarrier kind) {
    FlDist *d = need_dist(rc, op, s);
    if (!d) return FL_ERROR;
    FlErr inner;
    return d->barrier(d, kind, &inner) == FL_OK ? FL_OK : wrap(rc, op, &inner);
}
static FlStatus run_send_barrier(RunCtx *rc, const ExecOp *op, FlScope *s) {
    return run_barrier(rc, op, s, FL_DIST_SEND_BARRIER);
}
static FlStatus run_fetch_barrier(RunCtx *rc, const ExecOp *op, FlScope *s) {
    return run_barrier(rc, op, s, FL_DIST_FETCH_BARRIER);
}
FL_CONTROL_ADAPTER(send_barrier, NULL, run_send_barrier);
FL_CONTROL_ADAPTER(fetch_barrier, NULL, run_fetch_barrier);

/* ---- allreduce: X* -> Out* ---- */
static FlStatus prep_allreduce(ExecOp *op, FlErr *e) {
    int nx = fl_exec_nin(op, FL_IN_allreduce_X), no = fl_exec_nout(op, FL_OUT_allreduce_Out);
    return nx == no ? FL_OK : fl_err(e, "%d inputs X but %d outputs Out (one per input)", nx, no);
}

/* Dense X are summed by the transport's allreduce in one call; a SelectedRows X (a sparse
 * table's gradient) is gathered as rows (allgather_rows), so its Out stays a SelectedRows and
 * the sparse optimizer updates only the rows the global batch touched. */
static FlStatus run_allreduce(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlDist *d = need_dist(rc, op, s);
    if (!d) return FL_ERROR;
    if (!d->allreduce) return fl_exec_op_error(rc, op, "this transport has no allreduce");
    int n = fl_exec_nin(op, FL_IN_allreduce_X);
    const char **names = fl_xcalloc((size_t)n + 1, sizeof *names);
    FlTensor *in = fl_xcalloc((size_t)n + 1, sizeof *in), *out = fl_xcalloc((size_t)n + 1, sizeof *out);
    FlSelectedRows *rin = fl_xcalloc((size_t)n + 1, sizeof *rin);
    int *dense = fl_xcalloc((size_t)n + 1, sizeof *dense); /* the dense inputs' indices */
    bool *is_rows = fl_xcalloc((size_t)n + 1, sizeof *is_rows);
    FlStatus st = FL_OK;
    int nd = 0;
    bool sum = fl_exec_attr_bool(op, "loss_sum");
    for (int i = 0; i < n; i++) {
        in[i] = out[i] = (FlTensor)FL_TENSOR_INIT;
        fl_rows_init(&rin[i]);
    }
    for (int i = 0; i < n && st == FL_OK; i++) {
        const ArgRef *a = &fl_exec_in_args(op, FL_IN_allreduce_X)[i];
        FlVar *v = a->idx >= 0 ? fl_exec_var_read(s, a) : NULL;
        if (v && a->rows && fl_var_get_rows(v, &rin[i])) {
            is_rows[i] = true;
            if (!d->allgather_rows)
                st = fl_exec_op_error(rc, op, "input X '%s' is a SelectedRows, which this transport does not gather",
                                      a->name);
            continue;
        }
        if (!v || !fl_var_get_tensor(v, &in[nd])) {
            st = fl_exec_op_error(rc, op, "input X '%s' has no value", a->name);
            break;
        }
        names[nd] = a->name;
        dense[nd++] = i;
    }
    FlErr inner;
    if (st == FL_OK && nd > 0 && d->allreduce(d, (size_t)nd, names, in, out, sum, &inner) != FL_OK) st = wrap(rc, op, &inner);
    for (int k = 0; k < nd; k++) {
        const ArgRef *a = &fl_exec_out_args(op, FL_OUT_allreduce_Out)[dense[k]];
        if (st == FL_OK && a->idx >= 0 && !(rc->read_only && a->shared)) fl_var_take_tensor(fl_exec_var_write(s, a), &out[k]);
    }
    for (int i = 0; i < n && st == FL_OK; i++) {
        if (!is_rows[i]) continue;
        const ArgRef *xa = &fl_exec_in_args(op, FL_IN_allreduce_X)[i], *a = &fl_exec_out_args(op, FL_OUT_allreduce_Out)[i];
        FlSelectedRows r;
        fl_rows_init(&r);
        if (d->allgather_rows(d, xa->name, &rin[i], sum, &r, &inner) != FL_OK) st = wrap(rc, op, &inner);
        else if (a->idx >= 0 && !(rc->read_only && a->shared)) fl_var_take_rows(fl_exec_var_write(s, a), &r);
        fl_rows_fini(&r);
    }
    for (int i = 0; i < n; i++) {
        fl_tensor_fini(&in[i]);
        fl_tensor_fini(&out[i]);
        fl_rows_fini(&rin[i]);
    }
    free(names);
    free(in);
    free(out);
    free(rin);
    free(dense);
    free(is_rows);
    return st;
}
FL_SPARSE_CONTROL_ADAPTER(allreduce, prep_allreduce, run_allreduce);

/* ---- listen_and_serv: X* {optimize_blocks, grad_to_block, fanin, sync_mode, lr_block, loss_sum} ---- */
typedef struct GradEntry {
    char *name;
    size_t block;
} GradEntry;

struct FlDistServer {
    RunCtx *rc;
    const ExecOp *op;
    FlScope *s;
    const PBlock **blocks; /* nblocks optimize blocks, then the lr block (or NULL) */
    size_t nblocks;
    GradEntry *grads;
    size_t ngrads;
    bool sync, loss_sum;
    char where[256];
};

static FlStatus block_of(RunCtx *rc, const ExecOp *op, int64_t idx, const PBlock **out) {
    if (idx < 0 || (size_t)idx >= rc->ex->nblocks)
        return fl_exec_op_error(rc, op, "sub-block %lld does not exist", (long long)idx);
    const PBlock *pb = &rc->ex->blocks[idx];
    if (pb->b->parent != op->block->b->idx)
        return fl_exec_op_error(rc, op, "sub-block %lld is not a child of block %d", (long long)idx, op->block->b->idx);
    *out = pb;
    return FL_OK;
}

static void server_free(FlDistServer *srv) {
    for (size_t i = 0; i < srv->ngrads; i++) free(srv->grads[i].name);
    free(srv->grads);
    free(srv->blocks);
}

static FlStatus run_listen(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlDist *d = need_dist(rc, op, s);
    if (!d) return FL_ERROR;
    FlDistServer srv = {.rc = rc,
                        .op = op,
                        .s = s,
                        .sync = fl_exec_attr_bool(op, "sync_mode"),
                        .loss_sum = fl_exec_attr_bool(op, "loss_sum")};
    fl_exec_loc_str(rc->ex, op->desc->loc, srv.where, sizeof srv.where);
    size_t nb;
    const int64_t *bl = fl_exec_attr_ints(op, "optimize_blocks", &nb);
    srv.nblocks = nb;
    srv.blocks = fl_xcalloc(nb + 1, sizeof *srv.blocks);
    FlStatus st = FL_OK;
    for (size_t k = 0; k < nb && st == FL_OK; k++) st = block_of(rc, op, bl[k], &srv.blocks[k]);
    int64_t lr = fl_exec_attr_int(op, "lr_block");
    if (st == FL_OK && lr >= 0) st = block_of(rc, op, lr, &srv.blocks[nb]);
    const FlAttr *g2b = fl_ir_op_attr(op->desc, "grad_to_block");
    size_t ng = g2b ? g2b->n : 0;
    srv.grads = fl_xcalloc(ng + 1, sizeof *srv.grads);
    for (size_t i = 0; i < ng && st == FL_OK; i++) {
        const char *entry = g2b->strs[i], *colon = strrchr(entry, ':');
        char *end = NULL;
        long k = colon ? strtol(colon + 1, &end, 10) : -1;
        if (!colon || colon == entry || !end || *end || end == colon + 1) {
            st = fl_exec_op_error(rc, op, "grad_to_block entry '%s' is not 'gradient:block'", entry);
            break;
        }
        /* the block is a program block index; find its position in optimize_blocks */
        size_t pos = nb;
        for (size_t j = 0; j < nb; j++)
            if (bl[j] == k) pos = j;
        if (pos == nb) {
            st = fl_exec_op_error(rc, op, "grad_to_block entry '%s' names block %ld, not one of optimize_blocks", entry, k);
            break;
        }
        srv.grads[i].name = fl_xstrndup(entry, (size_t)(colon - entry));
        srv.grads[i].block = pos;
        srv.ngrads++;
    }
    if (st == FL_OK) {
        FlErr inner;
        if (d->serve(d, &srv, &inner) != FL_OK) st = wrap(rc, op, &inner);
    }
    server_free(&srv);
    return st;
}
FL_SPARSE_CONTROL_ADAPTER(listen_and_serv, NULL, run_listen);

bool fl_dist_server_sync(const FlDistServer *s) { return s->sync; }
bool fl_dist_server_loss_sum(const FlDistServer *s) { return s->loss_sum; }
size_t fl_dist_server_nblocks(const FlDistServer *s) { return s->nblocks; }
bool fl_dist_server_has_lr(const FlDistServer *s) { return s->blocks[s->nblocks] != NULL; }
size_t fl_dist_server_ngrads(const FlDistServer *s) { return s->ngrads; }
const char *fl_dist_server_where(const FlDistServer *s) { return s->where; }

const char *fl_dist_server_grad(const FlDistServer *s, size_t i, size_t *block) {
    FL_ASSERT(i < s->ngrads);
    if (block) *block = s->grads[i].block;
    return s->grads[i].name;
}

bool fl_dist_server_var_is_rows(const FlDistServer *s, const char *name) {
    const PBlock *pb = s->op->block;
    long slot = fl_scope_layout_find(&pb->layout, name);
    return slot >= 0 && pb->slots.data[slot].desc && pb->slots.data[slot].desc->kind == FL_VAR_SELECTED_ROWS;
}

bool fl_dist_server_block_writes(const FlDistServer *s, size_t k, const char *name) {
    FL_ASSERT(k < s->nblocks);
    const PBlock *pb = s->blocks[k];
    for (size_t i = 0; i < pb->nops; i++) {
        const ExecOp *op = &pb->ops[i];
        for (int j = 0; j < op->nout; j++)
            if (!strcmp(op->args[op->nin + j].name, name)) return true;
    }
    return false;
}

FlStatus fl_dist_server_zero(FlDistServer *s, const char *name, FlErr *e) {
    const PBlock *pb = s->op->block;
    long slot = fl_scope_layout_find(&pb->layout, name);
    const FlVarDesc *d = slot >= 0 ? pb->slots.data[slot].desc : NULL;
    if (!d) return fl_err(e, "the pserver program has no '%s'", name);
    for (int i = 0; i < d->ndim; i++)
        if (d->shape[i] < 0)
            return fl_err(e, "'%s' is %s: a zero gradient needs its whole shape", name,
                          fl_shape_str(d->ndim, d->shape).s);
    FlVar *v = fl_dist_server_var(s, name);
    if (d->kind == FL_VAR_SELECTED_ROWS) { /* no rows, of the declared height and row shape */
        FlSelectedRows r;
        fl_rows_init(&r);
        int64_t none = 0, ne[FL_MAX_DIMS] = {0};
        for (int i = 1; i < d->ndim; i++) ne[i] = d->shape[i];
        r.height = d->ndim ? d->shape[0] : 1;
        FlStatus st = fl_tensor_alloc(e, &r.rows, FL_DT_INT64, 1, &none);
        if (st == FL_OK) st = fl_tensor_alloc(e, &r.value, d->dtype, d->ndim ? d->ndim : 1, ne);
        if (st == FL_OK) fl_var_take_rows(v, &r);
        fl_rows_fini(&r);
        return st;
    }
    FlTensor t = FL_TENSOR_INIT;
    if (fl_tensor_alloc(e, &t, d->dtype, d->ndim, d->shape) != FL_OK) return FL_ERROR;
    fl_var_take_tensor(v, &t);
    fl_tensor_fini(&t);
    return FL_OK;
}

FlVar *fl_dist_server_var(FlDistServer *s, const char *name) {
    const PBlock *pb = s->op->block;
    long slot = fl_scope_layout_find(&pb->layout, name);
    if (slot < 0 || !pb->slots.data[slot].desc) return NULL;
    ArgRef a = {.name = pb->layout.names[slot], .up = 0, .idx = (int)slot, .shared = pb->slots.data[slot].shared};
    return fl_exec_var_write(s->s, &a);
}

/* "G.trainer_t" */
static bool is_trainer_copy(const char *arg, const char *grad, int t) {
    FlBuf b = {0};
    fl_rule_put_trainer_name(&b, grad, t);
    bool same = strcmp(arg, fl_buf_str(&b)) == 0;
    fl_buf_free(&b);
    return same;
}

bool fl_dist_server_find_mean(FlDistServer *s, size_t k, const char *grad, int n, FlDistMean *out) {
    FL_ASSERT(k < s->nblocks);
    const PBlock *pb = s->blocks[k];
    if (pb->nops < 2 || n < 1) return false;
    const ExecOp *sum = &pb->ops[0], *sc = &pb->ops[1];
    if (!fl_ops_is(sum->desc, FL_OPID_sum) || sum->nin != n || sum->nout != 1 || !fl_ops_is(sc->desc, FL_OPID_scale) ||
        sc->nin != 1 || sc->nout != 1)
        return false;
    for (int t = 0; t < n; t++)
        if (!is_trainer_copy(sum->args[t].name, grad, t)) return false;
    if (strcmp(sum->args[sum->nin].name, grad) != 0 || strcmp(sc->args[0].name, grad) != 0 ||
        strcmp(sc->args[1].name, grad) != 0)
        return false;
    for (size_t j = 2; j < pb->nops; j++) { /* nobody else reads the per-trainer copies */
        const ExecOp *o = &pb->ops[j];
        for (int i = 0; i < o->nin + o->nout; i++)
            if (fl_rule_is_trainer_copy(o->args[i].name, grad)) return false;
    }
    FlVar *v = fl_dist_server_var(s, grad);
    if (!v) return false;
    *out = (FlDistMean){.out = v, .scale = sc->a.f[0], .bias = sc->a.f[1], .bias_after_scale = sc->a.b[0], .skip = 2};
    return true;
}

FlStatus fl_dist_server_run(FlDistServer *s, size_t k, FlErr *e) { return fl_dist_server_run_from(s, k, 0, e); }

FlStatus fl_dist_server_run_from(FlDistServer *s, size_t k, size_t first, FlErr *e) {
    FL_ASSERT(k <= s->nblocks && s->blocks[k] && first <= s->blocks[k]->nops);
    const PBlock *pb = s->blocks[k];
    PBlock tail = *pb; /* the same block from op `first` (ops keep their block and index) */
    tail.ops = pb->ops + first;
    tail.nops = pb->nops - first;
    FlScope *child = fl_scope_new_layout(s->s, &pb->layout);
    RunCtx rc = *s->rc;
    rc.e = e;
    FlStatus st = fl_exec_block(&rc, &tail, child);
    fl_scope_release(child);
    return st;
}

/* ---- element-wise updates in pieces (dist.h) ---- */

#define UPD_MAX 16 /* arguments per side of an updatable op */

struct FlDistUpdate {
    RunCtx rc;
    const ExecOp *op;
    FlScope *child;
    int64_t n;
    FlTensor in[UPD_MAX]; /* the inputs, read at begin; an updated one is the buffer written */
    FlVar *var[UPD_MAX];  /* per input, its var */
    int grad;             /* the input given piece by piece to each run */
    FlDType grad_dt;
    bool wide[UPD_MAX];   /* per input: n elements (else one, or absent) */
    int upd[UPD_MAX];     /* per output: the wide input it updates in place; -1: a one-element
                           * output; -2: not wanted */
    FlTensor small[UPD_MAX]; /* one-element outputs, from the first run */
    bool ran;
};

void fl_dist_update_free(FlDistUpdate *u) {
    if (!u) return;
    for (int j = 0; j < UPD_MAX; j++) {
        fl_tensor_fini(&u->in[j]);
        fl_tensor_fini(&u->small[j]);
    }
    fl_scope_release(u->child);
    free(u);
}

bool fl_dist_server_updatable(FlDistServer *s, size_t k, size_t first) {
    FL_ASSERT(k < s->nblocks);
    const PBlock *pb = s->blocks[k];
    if (first + 1 != pb->nops) return false;
    const ExecOp *op = &pb->ops[first];
    if (!op->ad->run || !(op->info->flags & FL_OPF_OPTIMIZE) || op->nin > UPD_MAX || op->nout > UPD_MAX) return false;
    for (int o = 0; o < op->nout; o++) { /* every output updates an input of its var */
        const ArgRef *a = &op->args[op->nin + o];
        int j = 0;
        while (a->idx >= 0 && j < op->nin && strcmp(op->args[j].name, a->name) != 0) j++;
        if (j == op->nin) return false;
    }
    return true;
}

FlStatus fl_dist_update_begin(FlDistServer *s, size_t k, size_t first, int64_t n, FlVar *grad, FlDType dt,
                              FlDistUpdate **out, FlErr *e) {
    FL_ASSERT(k < s->nblocks);
    *out = NULL;
    if (n <= 0 || !fl_dist_server_updatable(s, k, first)) return FL_OK;
    const PBlock *pb = s->blocks[k];
    const ExecOp *op = &pb->ops[first];
    FlDistUpdate *u = fl_xcalloc(1, sizeof *u);
    u->rc = *s->rc;
    u->op = op;
    u->n = n;
    u->grad = -1;
    u->grad_dt = dt;
    u->child = fl_scope_new_layout(s->s, &pb->layout);
    for (int j = 0; j < UPD_MAX; j++) u->in[j] = u->small[j] = (FlTensor)FL_TENSOR_INIT;
    bool ok = true;
    for (int j = 0; j < op->nin && ok; j++) {
        if (op->args[j].idx < 0) continue;
        u->var[j] = fl_exec_var_read(u->child, &op->args[j]);
        if (u->var[j] && u->var[j] == grad) { /* given to each run */
            u->grad = j;
            u->wide[j] = dt == FL_DT_FLOAT32 || dt == FL_DT_FLOAT64;
            ok = u->wide[j];
            continue;
        }
        if (!u->var[j] || !fl_var_get_tensor(u->var[j], &u->in[j])) { /* the whole run names it */
            ok = false;
            break;
        }
        int64_t m = fl_tensor_numel(&u->in[j]);
        FlDType t = u->in[j].dtype;
        u->wide[j] = m == n && (t == FL_DT_FLOAT32 || t == FL_DT_FLOAT64);
        ok = u->wide[j] || m == 1;
    }
    for (int o = 0; o < op->nout && ok; o++) {
        const ArgRef *a = &op->args[op->nin + o];
        u->upd[o] = -2;
        if (a->idx < 0) continue;
        FlVar *v = fl_exec_var_write(u->child, a);
        int j = 0;
        while (j < op->nin && u->var[j] != v) j++;
        if (j == op->nin) ok = false; /* an output of unknown size */
        else u->upd[o] = u->wide[j] ? j : -1;
    }
    ok = ok && (!grad || u->grad >= 0);
    /* an updated buffer that anybody but its var and u holds (a send in flight, another var)
     * is updated in a copy */
    for (int o = 0; o < op->nout && ok; o++) {
        int j = u->upd[o];
        if (j == u->grad && j >= 0) ok = false; /* the gradient is not updated */
        if (!ok || j < 0 || fl_buffer_refs(u->in[j].buf) <= 2) continue;
        if (fl_tensor_copy(e, &u->in[j], &u->in[j]) != FL_OK) {
            fl_dist_update_free(u);
            return FL_ERROR;
        }
    }
    if (!ok) {
        fl_dist_update_free(u);
        return FL_OK;
    }
    *out = u;
    return FL_OK;
}

/* t: elements [i0, i1) of whole, 1-D, through the header hb, which counts one reference and is
 * never released: a kernel sees a buffer nobody else holds, so an output given as the same
 * struct as its input is written in place (kernels.h, "In-place mode"). */
static void piece(FlBuffer *hb, FlTensor *t, FlDType dt, void *data, int64_t count) {
    atomic_init(&hb->refs, 1);
    hb->size = (size_t)count * fl_dtype_size(dt);
    hb->data = data;
    *t = (FlTensor)FL_TENSOR_INIT;
    t->dtype = dt;
    t->ndim = 1;
    t->ne[0] = count;
    t->buf = hb;
}

FlStatus fl_dist_update_run(FlDistUpdate *u, int64_t i0, int64_t i1, const void *gp, FlErr *e) {
    FL_ASSERT(0 <= i0 && i0 < i1 && i1 <= u->n && (u->grad < 0 || gp));
    const ExecOp *op = u->op;
    FlBuffer hb[UPD_MAX];
    FlTensor pc[UPD_MAX], so[UPD_MAX];
    const FlTensor *inp[UPD_MAX];
    FlTensor *outp[UPD_MAX];
    for (int j = 0; j < op->nin; j++) {
        inp[j] = u->in[j].buf ? &u->in[j] : NULL;
        if (j == u->grad) {
            piece(&hb[j], &pc[j], u->grad_dt, (void *)gp, i1 - i0);
            inp[j] = &pc[j];
        } else if (u->wide[j]) {
            size_t es = fl_dtype_size(u->in[j].dtype);
            piece(&hb[j], &pc[j], u->in[j].dtype, (unsigned char *)fl_tensor_data(&u->in[j]) + (size_t)i0 * es, i1 - i0);
            inp[j] = &pc[j];
        }
    }
    for (int o = 0; o < op->nout; o++) {
        so[o] = (FlTensor)FL_TENSOR_INIT;
        outp[o] = u->upd[o] >= 0 ? &pc[u->upd[o]] : u->upd[o] == -1 ? &so[o] : NULL;
    }
    RunCtx rc = u->rc;
    rc.e = e;
    OpCall c = {.rc = &rc, .op = op, .e = e, .in = inp, .out = outp};
    FlStatus st = op->ad->run(&c);
    for (int o = 0; o < op->nout; o++) {
        int j = u->upd[o];
        if (st == FL_OK && j >= 0 && pc[j].buf != &hb[j]) /* the kernel did not write in place */
            st = fl_err(e, "internal error: '%s' did not update '%s' in place", op->desc->type, op->args[op->nin + o].name);
        if (j == -1 && st == FL_OK && !u->ran) {
            u->small[o] = so[o];
            so[o] = (FlTensor)FL_TENSOR_INIT;
        }
        fl_tensor_fini(&so[o]);
    }
    if (st != FL_OK) {
        FlErr inner = *e;
        return fl_exec_op_error(&rc, op, "%s", inner.msg);
    }
    u->ran = true;
    return FL_OK;
}

bool fl_dist_update_tensor(FlDistUpdate *u, FlVar *v, FlTensor *out) {
    for (int o = 0; o < u->op->nout; o++) {
        int j = u->upd[o];
        if (j >= 0 && u->var[j] == v) {
            fl_tensor_ref(out, &u->in[j]);
            return true;
        }
    }
    return false;
}

FlStatus fl_dist_update_end(FlDistUpdate *u, FlErr *e) {
    (void)e;
    const ExecOp *op = u->op;
    for (int o = 0; o < op->nout; o++) {
        int j = u->upd[o];
        if (j == -2) continue;
        FlVar *v = fl_exec_var_write(u->child, &op->args[op->nin + o]);
        if (j >= 0) fl_var_set_tensor(v, &u->in[j]);
        else if (fl_tensor_has_data(&u->small[o])) fl_var_take_tensor(v, &u->small[o]);
    }
    fl_dist_update_free(u);
    return FL_OK;
}

/* ---- distributed_lookup_table: Ids -> Out {table, table_names, epmap, height_sections,
 * padding_idx, width, dtype} ---- */
static FlStatus prep_dist_lookup(ExecOp *op, FlErr *e) {
    size_t nsec, nep;
    const int64_t *sec = fl_exec_attr_ints(op, "height_sections", &nsec);
    fl_exec_attr_ints(op, "epmap", &nep);
    const FlAttr *names = fl_ir_op_attr(op->desc, "table_names");
    if (!names || names->type != FL_ATTR_STRINGS || names->n != nsec || nep != nsec || nsec == 0)
        return fl_err(e, "attributes 'table_names', 'epmap' and 'height_sections' must have one entry per block of the "
                      "table (found %zu, %zu and %zu)", names && names->type == FL_ATTR_STRINGS ? names->n : 0, nep, nsec);
    if (check_epmap(op, (int)nsec, e) != FL_OK) return FL_ERROR;
    int64_t h = 0;
    for (size_t k = 0; k < nsec; k++) {
        if (sec[k] < 1) return fl_err(e, "height_sections[%zu] is %lld (a block has rows)", k, (long long)sec[k]);
        h += sec[k];
    }
    op->a.i[0] = fl_exec_attr_int(op, "padding_idx");
    op->a.i[1] = fl_exec_attr_int(op, "width");
    op->a.i[2] = fl_exec_attr_int(op, "dtype");
    op->a.i[3] = h;
    if (op->a.i[1] < 1) return fl_err(e, "attribute 'width' is %lld (the table's row length)", (long long)op->a.i[1]);
    if (op->a.i[2] != FL_DT_FLOAT32 && op->a.i[2] != FL_DT_FLOAT64) return fl_err(e, "the table must be float32 or float64");
    return FL_OK;
}

typedef struct IdPos {
    int64_t id, pos;
} IdPos;

static int idpos_cmp(const void *a, const void *b) {
    const IdPos *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* The ids split by block, each block's distinct ids (sorted, rebased to the block's first row)
 * asked from its pserver in one round (every request posted before any answer is awaited), and
 * the rows put into Out at every position of their id (padding_idx: zeros). */
static FlStatus run_dist_lookup(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlDist *d = need_dist(rc, op, s);
    if (!d) return FL_ERROR;
    if (!d->lookup) return fl_exec_op_error(rc, op, "this transport has no distributed tables");
    const ArgRef *ia = &fl_exec_in_args(op, FL_IN_distributed_lookup_table_Ids)[0];
    FlVar *iv = ia->idx >= 0 ? fl_exec_var_read(s, ia) : NULL;
    FlTensor ids = FL_TENSOR_INIT;
    if (!iv || !fl_var_get_tensor(iv, &ids)) return fl_exec_op_error(rc, op, "input Ids '%s' has no value", ia->name);
    size_t nsec, nep;
    const int64_t *sec = fl_exec_attr_ints(op, "height_sections", &nsec), *ep = fl_exec_attr_ints(op, "epmap", &nep);
    const FlAttr *names = fl_ir_op_attr(op->desc, "table_names");
    int64_t pad = op->a.i[0], width = op->a.i[1], height = op->a.i[3];
    FlDType dt = (FlDType)op->a.i[2];
    FlStatus st = FL_OK;
    int64_t n = fl_tensor_numel(&ids);
    if ((ids.dtype != FL_DT_INT64 && ids.dtype != FL_DT_INT32) || ids.ndim < 1 || ids.ndim >= FL_MAX_DIMS) {
        fl_tensor_fini(&ids);
        return fl_exec_op_error(rc, op, "Ids %s must be int64 or int32 with 1 to %d dims", fl_tensor_shape(&ids).s,
                                FL_MAX_DIMS - 1);
    }
    IdPos *ip = fl_xcalloc((size_t)n + 1, sizeof *ip);
    int64_t m = 0;
    for (int64_t i = 0; i < n && st == FL_OK; i++) {
        int64_t id = fl_tensor_get_int(&ids, i);
        if (id < 0 || id >= height)
            st = fl_exec_op_error(rc, op, "Ids %s row %lld is %lld, outside [0, %lld) (the table '%s')",
                                  fl_tensor_shape(&ids).s, (long long)i, (long long)id, (long long)height,
                                  fl_exec_attr_string(op, "table"));
        else if (id != pad) ip[m++] = (IdPos){id, i};
    }
    qsort(ip, (size_t)m, sizeof *ip, idpos_cmp);
    /* per block with ids: its distinct ids (req), its pserver and block name */
    FlTensor *req = fl_xcalloc(nsec, sizeof *req), *got = fl_xcalloc(nsec, sizeof *got);
    int *ps = fl_xcalloc(nsec, sizeof *ps);
    const char **bn = fl_xcalloc(nsec, sizeof *bn);
    size_t nreq = 0;
    int64_t j = 0, row0 = 0;
    for (size_t k = 0; k < nsec && st == FL_OK; k++) {
        int64_t end = row0 + sec[k], j0 = j, distinct = 0;
        for (; j < m && ip[j].id < end; j++) distinct += j == j0 || ip[j].id != ip[j - 1].id;
        if (distinct > 0) {
            req[nreq] = (FlTensor)FL_TENSOR_INIT;
            got[nreq] = (FlTensor)FL_TENSOR_INIT;
            FlErr in;
            if (fl_tensor_alloc_uninit(&in, &req[nreq], FL_DT_INT64, 1, &distinct) != FL_OK) {
                st = wrap(rc, op, &in);
                break;
            }
            int64_t *r = fl_tensor_data(&req[nreq]), c = 0;
            for (int64_t q = j0; q < j; q++)
                if (q == j0 || ip[q].id != ip[q - 1].id) r[c++] = ip[q].id - row0;
            ps[nreq] = (int)ep[k];
            bn[nreq] = names->strs[k];
            nreq++;
        }
        row0 = end;
    }
    FlErr inner;
    if (st == FL_OK && nreq && d->lookup(d, nreq, ps, bn, req, got, &inner) != FL_OK) st = wrap(rc, op, &inner);
    for (size_t r = 0; r < nreq && st == FL_OK; r++)
        if (got[r].dtype != dt || got[r].ndim != 2 || got[r].ne[0] != req[r].ne[0] || got[r].ne[1] != width)
            st = fl_exec_op_error(rc, op, "pserver %d answered %lld rows of '%s' with %s %s, not [%lld, %lld] %s", ps[r],
                                  (long long)req[r].ne[0], bn[r], fl_dtype_name(got[r].dtype), fl_tensor_shape(&got[r]).s,
                                  (long long)req[r].ne[0], (long long)width, fl_dtype_name(dt));
    FlTensor out = FL_TENSOR_INIT;
    if (st == FL_OK) {
        int64_t ne[FL_MAX_DIMS];
        int nd = ids.ndim > 1 && ids.ne[ids.ndim - 1] == 1 ? ids.ndim - 1 : ids.ndim;
        for (int i = 0; i < nd; i++) ne[i] = ids.ne[i];
        ne[nd++] = width;
        FlErr in;
        if (fl_tensor_alloc(&in, &out, dt, nd, ne) != FL_OK) st = wrap(rc, op, &in); /* zeros: padding rows */
    }
    if (st == FL_OK) {
        /* rows in order: the k-th distinct id of ip (over all blocks) is row c of request r */
        size_t rowb = (size_t)width * fl_dtype_size(dt), r = 0;
        int64_t c = -1;
        for (int64_t q = 0; q < m; q++) {
            if (q == 0 || ip[q].id != ip[q - 1].id) {
                c++;
                while (r < nreq && c >= req[r].ne[0]) {
                    c -= req[r].ne[0];
                    r++;
                }
            }
            memcpy((char *)fl_tensor_data(&out) + (size_t)ip[q].pos * rowb,
                   (const char *)fl_tensor_data(&got[r]) + (size_t)c * rowb, rowb);
        }
        const ArgRef *oa = &fl_exec_out_args(op, FL_OUT_distributed_lookup_table_Out)[0];
        if (oa->idx >= 0 && !(rc->read_only && oa->shared)) fl_var_take_tensor(fl_exec_var_write(s, oa), &out);
    }
    fl_tensor_fini(&out);
    for (size_t r = 0; r < nreq; r++) {
        fl_tensor_fini(&req[r]);
        fl_tensor_fini(&got[r]);
    }
    free(req);
    free(got);
    free(ps);
    free(bn);
    free(ip);
    fl_tensor_fini(&ids);
    return st;
}
FL_CONTROL_ADAPTER(distributed_lookup_table, prep_dist_lookup, run_dist_lookup);
