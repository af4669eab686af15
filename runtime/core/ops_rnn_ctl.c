/* ops_rnn_ctl.c: the recurrent control op dynamic_rnn and its gradient (docs/sequences.md,
 * "Recurrent networks").
 *
 * dynamic_rnn runs its sub-block once per time step. The batch's sequences are ordered by
 * length, longest first (a stable sort: Fluid's lod_rank_table), so that at step t the active
 * sequences (those longer than t) are the first n_t of that order and n_t only shrinks. Before
 * each step the op sets, in a fresh scope with the block's layout (a child of the op's scope):
 *   - each step input var: row t of every active sequence of its X, in the sorted order;
 *   - each static input var: the active rows of its StaticInput (one row per sequence, sorted),
 *     or of a LoD StaticInput (one sequence per sequence) the active sequences' rows, sorted,
 *     with their offsets in its static_lods var (attention over an encoder's steps);
 *   - each ex_state (the memory as the block reads it): the first n_t rows of the state the
 *     step before left in its `states` var, or at step 0 the initial memory: InitMem rows put in
 *     the sorted order (need_reorder) or taken as given, or a fill of mem_value.
 * After the step, row j of each step output goes back to row t of sequence order[j] of Out
 * (Out has the rows and LoD of X). With `dense` (StaticRNN) X is [T, B, ...]: step t reads
 * X[t], every sequence has length T, the order is the batch's and Out is [T, B, ...].
 *
 * The step scopes are kept in StepScopes (a raw var holding an RnnRun) for dynamic_rnn_grad,
 * whose sub-block is the gradient of the step block (compiler/backward.c). It declares the
 * forward block's vars again: the gradient op runs its block once per step, last step first,
 * in a scope where those names are bound to the very vars of that step's forward scope, the
 * `seeds` vars hold the gradients of the step outputs (rows of Out@GRAD) and of the states
 * (the gradient of the next step's ex_states, zero rows for the sequences that ended), and
 * reads back "<name>@GRAD" of the step inputs (scattered into X@GRAD), the static inputs and
 * the outer vars the block reads (summed over the steps) and the ex_states (passed to the step
 * before, and at step 0 to InitMem@GRAD). A gradient the block does not make is zero.
 *
 * A differentiated while op (one with StepScopes) keeps its iterations the same way: each one's
 * scope, and the values its Out vars (the outer vars the block writes) hold after it. while_grad
 * runs its block (the gradient of the while's block) once per iteration, last first, in a scope
 * where the forward block's names are bound to that iteration's vars and the Out vars its block
 * declares (the counters, the condition) hold their values after the iteration; the block's
 * gradient ops decrement the counters again where the forward incremented them, and add the
 * gradients of the arrays the loop reads into the arrays' gradients, outer vars. The gradients
 * of the dense outer vars the block reads ("<name>@GRAD" in the block) are summed over the
 * iterations. Last, the dense Out vars get back the values they had before the loop (as the
 * counters the gradient ops of the ops before the loop read). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/core/exec_impl.h"

/* ---- prepared attributes ---- */

typedef struct RnnAttrs {
    int nx, nst, nmem, nout, nparam;
    const char *const *x_names, *const *st_names, *const *pre_names, *const *post_names, *const *out_names;
    long *x, *st, *pre, *post, *out; /* slots in the forward block's layout (forward op) */
    long *stl;                       /* per static input: the slot of its offsets var (-1: dense) */
    long *seed;                      /* gradient op: slots of the seeds (nout + nmem) */
    long *gx, *gst, *gpre, *gparam;  /* gradient op: slots of the gradients (-1: none) */
    const int64_t *init, *reorder;
    const double *value;
    bool dense;
} RnnAttrs;

static const char *const *strs_attr(const ExecOp *op, const char *name, int *n) {
    const FlAttr *a = fl_ir_op_attr(op->desc, name);
    if (!a || a->type != FL_ATTR_STRINGS) {
        *n = 0;
        return NULL;
    }
    *n = (int)a->n;
    return (const char *const *)a->strs;
}

static FlStatus find_slots(const FlScopeLayout *l, const char *const *names, int n, long *out, bool required,
                           const char *suffix, FlErr *e) {
    char buf[512];
    for (int i = 0; i < n; i++) {
        snprintf(buf, sizeof buf, "%s%s", names[i], suffix);
        out[i] = fl_scope_layout_find(l, buf);
        if (out[i] < 0 && required) return fl_err(e, "step var '%s' is not a var of its sub-block", buf);
    }
    return FL_OK;
}

static FlStatus prep_rnn(ExecOp *op, FlErr *e, bool grad) {
    if (!op->sub) return fl_err(e, "attribute 'sub_block' is missing");
    int nx, nst, npre, npost, nout, nseed;
    const char *const *xs = strs_attr(op, "step_inputs", &nx), *const *sts = strs_attr(op, "static_inputs", &nst);
    const char *const *pres = strs_attr(op, "ex_states", &npre), *const *posts = strs_attr(op, "states", &npost);
    const char *const *outs = strs_attr(op, "step_outputs", &nout), *const *seeds = strs_attr(op, "seeds", &nseed);
    size_t ninit, nre, nval;
    const int64_t *init = fl_exec_attr_ints(op, "init_index", &ninit);
    const int64_t *re = fl_exec_attr_ints(op, "need_reorder", &nre);
    const double *val = fl_exec_attr_floats(op, "mem_value", &nval);
    if (npre != npost || (size_t)npre != ninit || (size_t)npre != nre || (size_t)npre != nval)
        return fl_err(e, "ex_states, states, init_index, need_reorder and mem_value must have one entry per memory");
    int nparam = grad ? op->in_off[FL_IN_dynamic_rnn_grad_Params + 1] - op->in_off[FL_IN_dynamic_rnn_grad_Params] : 0;
    int fx = grad ? fl_exec_nin(op, FL_IN_dynamic_rnn_grad_X) : fl_exec_nin(op, FL_IN_dynamic_rnn_X);
    int fo = grad ? fl_exec_nin(op, FL_IN_dynamic_rnn_grad_Out) : fl_exec_nout(op, FL_OUT_dynamic_rnn_Out);
    if (nx < 1 || fx != nx) return fl_err(e, "step_inputs must name one block var per X (%d), found %d", fx, nx);
    if (fo != nout) return fl_err(e, "step_outputs must name one block var per Out (%d), found %d", fo, nout);
    if (grad && nseed != nout + npre) return fl_err(e, "seeds must name one var per step output and state");
    int nmem = npre;
    int nstn;
    const char *const *stl_names = strs_attr(op, "static_lods", &nstn);
    if (nstn != 0 && nstn != nst) return fl_err(e, "static_lods must have one entry per static input");
    size_t nl = (size_t)(nx + 2 * nst + 2 * nmem + nout) + (size_t)(nout + nmem + nx + nst + nmem + nparam);
    RnnAttrs *a = calloc(1, sizeof *a + nl * sizeof(long));
    if (!a) return fl_err(e, "out of memory");
    op->a.extra = a;
    long *p = (long *)(a + 1);
    a->nx = nx, a->nst = nst, a->nmem = nmem, a->nout = nout, a->nparam = nparam;
    a->x_names = xs, a->st_names = sts, a->pre_names = pres, a->post_names = posts, a->out_names = outs;
    a->x = p, p += nx;
    a->st = p, p += nst;
    a->stl = p, p += nst;
    a->pre = p, p += nmem;
    a->post = p, p += nmem;
    a->out = p, p += nout;
    a->seed = p, p += nout + nmem;
    a->gx = p, p += nx;
    a->gst = p, p += nst;
    a->gpre = p, p += nmem;
    a->gparam = p;
    a->init = init, a->reorder = re, a->value = val;
    a->dense = fl_exec_attr_bool(op, "dense");
    const FlScopeLayout *l = &op->sub->layout;
    int nlod = 0; /* the gradient reads the offsets from the forward run */
    for (int k = 0; k < nst; k++) {
        a->stl[k] = -1;
        if (grad || nstn == 0 || !stl_names[k] || !stl_names[k][0]) continue;
        if ((a->stl[k] = fl_scope_layout_find(l, stl_names[k])) < 0)
            return fl_err(e, "static_lods var '%s' is not a var of its sub-block", stl_names[k]);
        nlod++;
    }
    if (!grad && nlod != fl_exec_nin(op, FL_IN_dynamic_rnn_StaticLod))
        return fl_err(e, "static_lods names %d offsets vars, StaticLod has %d", nlod, fl_exec_nin(op, FL_IN_dynamic_rnn_StaticLod));
    if (!grad) {
        for (int i = 0; i < nmem; i++)
            if (init[i] < -1 || init[i] >= fl_exec_nin(op, FL_IN_dynamic_rnn_InitMem))
                return fl_err(e, "init_index %lld names no InitMem", (long long)init[i]);
        if (find_slots(l, xs, nx, a->x, true, "", e) || find_slots(l, sts, nst, a->st, true, "", e) ||
            find_slots(l, pres, nmem, a->pre, true, "", e) || find_slots(l, posts, nmem, a->post, true, "", e) ||
            find_slots(l, outs, nout, a->out, true, "", e))
            return FL_ERROR;
        return FL_OK;
    }
    if (find_slots(l, seeds, nout + nmem, a->seed, true, "", e) || find_slots(l, xs, nx, a->gx, false, FL_RULE_GRAD_SUFFIX, e) ||
        find_slots(l, sts, nst, a->gst, false, FL_RULE_GRAD_SUFFIX, e) ||
        find_slots(l, pres, nmem, a->gpre, false, FL_RULE_GRAD_SUFFIX, e))
        return FL_ERROR;
    const ArgRef *params = fl_exec_in_args(op, FL_IN_dynamic_rnn_grad_Params);
    for (int i = 0; i < nparam; i++) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s%s", params[i].name, FL_RULE_GRAD_SUFFIX);
        a->gparam[i] = fl_scope_layout_find(l, buf);
    }
    return FL_OK;
}

/* ---- the forward run, kept for the gradient ---- */

typedef struct RnnRun {
    const RnnAttrs *fa;   /* the forward op's attributes (the executor outlives the run) */
    const PBlock *fwd;    /* the step block */
    int64_t nseq, maxlen;
    int64_t *order;       /* sorted position -> sequence */
    int64_t *active;      /* per step: the sequences still running */
    int64_t *off;         /* the sequences' first rows (nseq + 1; LoD mode) */
    FlScope **steps;      /* maxlen scopes */
    int nst;              /* per static input (NULL: dense): */
    int64_t **st_off;     /*   its sequences' first rows in StaticInput (nseq + 1) */
    int64_t **st_cum;     /*   its sorted sequences' first rows (nseq + 1): the rows of the first
                           *   n active ones are a prefix */
} RnnRun;

static void run_free(void *p) {
    RnnRun *r = p;
    if (!r) return;
    for (int64_t t = 0; r->steps && t < r->maxlen; t++) fl_scope_release(r->steps[t]);
    free(r->steps);
    for (int k = 0; k < r->nst; k++) {
        if (r->st_off) free(r->st_off[k]);
        if (r->st_cum) free(r->st_cum[k]);
    }
    free(r->st_off);
    free(r->st_cum);
    free(r->order);
    free(r->active);
    free(r->off);
    free(r);
}

/* The row of X (seen as rows of its step shape) that sorted sequence j reads at step t. */
static int64_t row_of(const RnnRun *r, int64_t j, int64_t t) {
    return r->fa->dense ? t * r->nseq + r->order[j] : r->off[r->order[j]] + t;
}

static size_t trail_bytes(const FlTensor *t, int from) {
    size_t n = fl_dtype_size(t->dtype);
    for (int d = from; d < t->ndim; d++) n *= (size_t)t->ne[d];
    return n;
}

static FlStatus in_tensor(RunCtx *rc, const ExecOp *op, FlScope *s, const ArgRef *a, FlTensor *t) {
    FlVar *v = fl_exec_var_read(s, a);
    if (!v || !fl_var_get_tensor(v, t)) return fl_exec_op_error(rc, op, "input '%s' has no value", a->name);
    return FL_OK;
}

/* A new tensor of n rows of the trailing dims of src from dim `from` (dtype of src). */
static FlStatus alloc_rows(FlErr *e, FlTensor *dst, const FlTensor *src, int from, int64_t n, bool zero) {
    int64_t ne[FL_MAX_DIMS];
    int nd = 1 + src->ndim - from;
    ne[0] = n;
    for (int d = from; d < src->ndim; d++) ne[1 + d - from] = src->ne[d];
    return zero ? fl_tensor_alloc(e, dst, src->dtype, nd, ne) : fl_tensor_alloc_uninit(e, dst, src->dtype, nd, ne);
}

static void add_into(FlTensor *dst, const FlTensor *src, int64_t n) {
    if (dst->dtype == FL_DT_FLOAT64) {
        double *d = fl_tensor_data(dst);
        const double *s = fl_tensor_data(src);
        for (int64_t i = 0; i < n; i++) d[i] += s[i];
    } else {
        float *d = fl_tensor_data(dst);
        const float *s = fl_tensor_data(src);
        for (int64_t i = 0; i < n; i++) d[i] += s[i];
    }
}

static void set_slot(FlScope *s, long slot, FlTensor *t) { fl_var_take_tensor(fl_scope_slot_var(s, (size_t)slot), t); }

static bool slot_tensor(FlScope *s, long slot, FlTensor *t) {
    FlVar *v = slot >= 0 ? fl_scope_slot(s, (size_t)slot) : NULL;
    return v && fl_var_get_tensor(v, t);
}

/* Orders the sequences (LoD offsets off, or dense: nseq of length T) longest first. */
static FlStatus order_seqs(RunCtx *rc, const ExecOp *op, RnnRun *r, const int64_t *off, int64_t nseq, int64_t T) {
    r->nseq = nseq;
    r->order = calloc((size_t)nseq + 1, sizeof *r->order);
    r->off = calloc((size_t)nseq + 1, sizeof *r->off);
    int64_t *len = calloc((size_t)nseq + 1, sizeof *len);
    if (!r->order || !r->off || !len) {
        free(len);
        return fl_exec_op_error(rc, op, "out of memory");
    }
    r->maxlen = 0;
    for (int64_t i = 0; i < nseq; i++) {
        len[i] = off ? off[i + 1] - off[i] : T;
        if (off) r->off[i] = off[i];
        if (len[i] > r->maxlen) r->maxlen = len[i];
        /* stable insertion by descending length */
        int64_t j = i;
        while (j > 0 && len[r->order[j - 1]] < len[i]) r->order[j] = r->order[j - 1], j--;
        r->order[j] = i;
    }
    r->active = calloc((size_t)r->maxlen + 1, sizeof *r->active);
    r->steps = calloc((size_t)r->maxlen + 1, sizeof *r->steps);
    if (!r->active || !r->steps) {
        free(len);
        return fl_exec_op_error(rc, op, "out of memory");
    }
    for (int64_t t = 0; t < r->maxlen; t++)
        for (int64_t j = 0; j < nseq && len[r->order[j]] > t; j++) r->active[t] = j + 1;
    free(len);
    return FL_OK;
}

/* rows of src (rows of the dims from `from`) picked by sorted position j -> row_fn into dst */
static FlStatus gather_step(RunCtx *rc, const ExecOp *op, const RnnRun *r, const FlTensor *src, int from, int64_t t,
                            FlTensor *dst) {
    int64_t n = r->active[t];
    if (alloc_rows(rc->e, dst, src, from, n, false)) return FL_ERROR;
    size_t rb = trail_bytes(src, from);
    const char *s = fl_tensor_data(src);
    char *d = fl_tensor_data(dst);
    for (int64_t j = 0; j < n; j++) memcpy(d + (size_t)j * rb, s + (size_t)row_of(r, j, t) * rb, rb);
    (void)op;
    return FL_OK;
}

/* Rows of src (one per sequence) in sorted order (reorder) or as given, as a new tensor. */
static FlStatus sorted_rows(RunCtx *rc, const ExecOp *op, const RnnRun *r, const FlTensor *src, bool reorder,
                            const char *what, const char *name, FlTensor *dst) {
    if (src->ndim < 1 || src->ne[0] != r->nseq)
        return fl_exec_op_error(rc, op, "%s '%s' must have one row per sequence (%lld), found %s", what, name, (long long)r->nseq,
                                fl_tensor_shape(src).s);
    if (alloc_rows(rc->e, dst, src, 1, r->nseq, false)) return FL_ERROR;
    size_t rb = trail_bytes(src, 1);
    const char *s = fl_tensor_data(src);
    char *d = fl_tensor_data(dst);
    for (int64_t j = 0; j < r->nseq; j++) memcpy(d + (size_t)j * rb, s + (size_t)(reorder ? r->order[j] : j) * rb, rb);
    return FL_OK;
}

/* The sequences of a LoD static input src (offsets lod, one sequence per sequence of the batch)
 * in sorted order, as a new tensor; keeps its offsets and the sorted ones in r. */
static FlStatus sorted_seqs(RunCtx *rc, const ExecOp *op, RnnRun *r, int k, const FlTensor *src, const FlTensor *lod,
                            const char *name, FlTensor *dst) {
    const int64_t *off;
    int64_t nseq;
    FlErr le;
    if (fl_exec_check_lod(&le, lod, src->ndim >= 1 ? src->ne[0] : 0, "StaticLod", &off, &nseq))
        return fl_exec_op_error(rc, op, "static input '%s': %s", name, le.msg);
    if (nseq != r->nseq)
        return fl_exec_op_error(rc, op, "static input '%s' holds %lld sequences, the step inputs %lld: it needs one "
                                        "sequence per sequence", name, (long long)nseq, (long long)r->nseq);
    int64_t *so = r->st_off[k] = malloc(((size_t)nseq + 1) * sizeof *so);
    int64_t *cum = r->st_cum[k] = malloc(((size_t)nseq + 1) * sizeof *cum);
    if (!so || !cum) return fl_exec_op_error(rc, op, "out of memory");
    memcpy(so, off, ((size_t)nseq + 1) * sizeof *so);
    if (alloc_rows(rc->e, dst, src, 1, src->ne[0], false)) return FL_ERROR;
    size_t rb = trail_bytes(src, 1);
    const char *s = fl_tensor_data(src);
    char *d = fl_tensor_data(dst);
    cum[0] = 0;
    for (int64_t j = 0; j < nseq; j++) {
        int64_t q = r->order[j], len = so[q + 1] - so[q];
        memcpy(d + (size_t)cum[j] * rb, s + (size_t)so[q] * rb, (size_t)len * rb);
        cum[j + 1] = cum[j] + len;
    }
    return FL_OK;
}

/* The first n rows of t, as a view. */
static FlStatus first_rows(FlErr *e, const FlTensor *t, int64_t n, FlTensor *out) {
    int64_t ne[FL_MAX_DIMS];
    memcpy(ne, t->ne, sizeof ne);
    ne[0] = n;
    return fl_tensor_view(e, out, t, 0, t->ndim, ne);
}

static FlStatus run_rnn(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const RnnAttrs *a = op->a.extra;
    int nx = a->nx;
    FlTensor *xs = calloc((size_t)nx + (size_t)a->nst + 2 * (size_t)a->nmem + 2 * (size_t)a->nout + 1, sizeof *xs);
    RnnRun *r = calloc(1, sizeof *r);
    FlStatus st = FL_ERROR;
    if (!xs || !r) {
        free(xs);
        free(r);
        return fl_exec_op_error(rc, op, "out of memory");
    }
    FlTensor *sts = xs + nx, *mems = sts + a->nst, *prev = mems + a->nmem, *outs = prev + a->nmem,
             *souts = outs + a->nout;
    r->fa = a;
    r->fwd = op->sub;
    const ArgRef *xa = fl_exec_in_args(op, FL_IN_dynamic_rnn_X);
    for (int i = 0; i < nx; i++)
        if (in_tensor(rc, op, s, &xa[i], &xs[i])) goto done;
    for (int i = 0; i < nx; i++) {
        if (xs[i].ndim < (a->dense ? 2 : 1) || xs[i].ne[0] != xs[0].ne[0] || (a->dense && xs[i].ne[1] != xs[0].ne[1])) {
            fl_exec_op_error(rc, op, "step input '%s' %s does not have the rows of '%s' %s", xa[i].name,
                             fl_tensor_shape(&xs[i]).s, xa[0].name, fl_tensor_shape(&xs[0]).s);
            goto done;
        }
    }
    if (a->dense) {
        if (order_seqs(rc, op, r, NULL, xs[0].ne[1], xs[0].ne[0])) goto done;
    } else {
        FlTensor lod = FL_TENSOR_INIT;
        if (fl_exec_nin(op, FL_IN_dynamic_rnn_XLod) != 1) {
            fl_exec_op_error(rc, op, "XLod is missing");
            goto done;
        }
        if (in_tensor(rc, op, s, fl_exec_in_args(op, FL_IN_dynamic_rnn_XLod), &lod)) goto done;
        const int64_t *off;
        int64_t nseq;
        FlErr le;
        if (fl_exec_check_lod(&le, &lod, xs[0].ne[0], "XLod", &off, &nseq)) {
            fl_tensor_fini(&lod);
            fl_exec_op_error(rc, op, "%s", le.msg);
            goto done;
        }
        FlStatus os = order_seqs(rc, op, r, off, nseq, 0);
        if (os == FL_OK) r->off[nseq] = off[nseq];
        fl_tensor_fini(&lod);
        if (os) goto done;
    }
    const ArgRef *sa = fl_exec_in_args(op, FL_IN_dynamic_rnn_StaticInput);
    const ArgRef *sla = fl_exec_in_args(op, FL_IN_dynamic_rnn_StaticLod);
    r->nst = a->nst;
    r->st_off = calloc((size_t)a->nst + 1, sizeof *r->st_off);
    r->st_cum = calloc((size_t)a->nst + 1, sizeof *r->st_cum);
    if (!r->st_off || !r->st_cum) {
        fl_exec_op_error(rc, op, "out of memory");
        goto done;
    }
    for (int k = 0, nlod = 0; k < a->nst; k++) {
        FlTensor t = FL_TENSOR_INIT, lod = FL_TENSOR_INIT;
        if (in_tensor(rc, op, s, &sa[k], &t)) goto done;
        FlStatus ss;
        if (a->stl[k] >= 0) {
            ss = in_tensor(rc, op, s, &sla[nlod++], &lod);
            if (ss == FL_OK) ss = sorted_seqs(rc, op, r, k, &t, &lod, sa[k].name, &sts[k]);
            fl_tensor_fini(&lod);
        } else {
            ss = sorted_rows(rc, op, r, &t, true, "static input", sa[k].name, &sts[k]);
        }
        fl_tensor_fini(&t);
        if (ss) goto done;
    }
    const ArgRef *ia = fl_exec_in_args(op, FL_IN_dynamic_rnn_InitMem);
    for (int i = 0; i < a->nmem; i++) {
        if (a->init[i] >= 0) {
            FlTensor t = FL_TENSOR_INIT;
            if (in_tensor(rc, op, s, &ia[a->init[i]], &t)) goto done;
            FlStatus ss = sorted_rows(rc, op, r, &t, a->reorder[i] != 0, "initial memory", ia[a->init[i]].name, &mems[i]);
            fl_tensor_fini(&t);
            if (ss) goto done;
            continue;
        }
        const FlVarDesc *d = op->sub->slots.data[a->pre[i]].desc;
        int64_t ne[FL_MAX_DIMS];
        ne[0] = r->nseq;
        for (int k = 1; d && k < d->ndim; k++) {
            ne[k] = d->shape[k];
            if (ne[k] < 0) {
                fl_exec_op_error(rc, op, "memory '%s' has an unknown dimension %d: give memory() its shape", d->name, k);
                goto done;
            }
        }
        if (!d || d->ndim < 1) {
            fl_exec_op_error(rc, op, "memory '%s' has no shape", a->pre_names[i]);
            goto done;
        }
        if (fl_tensor_alloc(rc->e, &mems[i], d->dtype, d->ndim, ne)) goto done;
        for (int64_t k = 0, n = fl_tensor_numel(&mems[i]); k < n; k++) fl_tensor_set(&mems[i], k, a->value[i]);
    }
    for (int64_t t = 0; t < r->maxlen; t++) {
        int64_t n = r->active[t];
        /* kept in StepScopes, a var of s or of its ancestors: a retained s would be a cycle */
        FlScope *sc = r->steps[t] = fl_scope_new_layout_weak(s, &op->sub->layout);
        for (int i = 0; i < nx; i++) {
            FlTensor v = FL_TENSOR_INIT;
            if (gather_step(rc, op, r, &xs[i], a->dense ? 2 : 1, t, &v)) goto done;
            set_slot(sc, a->x[i], &v);
        }
        for (int k = 0; k < a->nst; k++) {
            FlTensor v = FL_TENSOR_INIT;
            if (first_rows(rc->e, &sts[k], a->stl[k] >= 0 ? r->st_cum[k][n] : n, &v)) goto done;
            set_slot(sc, a->st[k], &v);
            if (a->stl[k] < 0) continue;
            FlTensor o = FL_TENSOR_INIT;
            int64_t ne = n + 1;
            if (fl_tensor_alloc_uninit(rc->e, &o, FL_DT_INT64, 1, &ne)) goto done;
            memcpy(fl_tensor_data(&o), r->st_cum[k], (size_t)ne * sizeof(int64_t));
            set_slot(sc, a->stl[k], &o);
        }
        for (int i = 0; i < a->nmem; i++) {
            FlTensor v = FL_TENSOR_INIT;
            const FlTensor *from = t == 0 ? &mems[i] : &prev[i];
            if (from->ne[0] < n) {
                fl_exec_op_error(rc, op, "state '%s' has %lld rows at step %lld, fewer than the %lld running sequences",
                                 a->post_names[i], (long long)from->ne[0], (long long)t, (long long)n);
                goto done;
            }
            if (first_rows(rc->e, from, n, &v)) goto done;
            set_slot(sc, a->pre[i], &v);
        }
        if (fl_exec_block(rc, op->sub, sc)) goto done;
        for (int i = 0; i < a->nmem; i++) {
            fl_tensor_fini(&prev[i]);
            if (!slot_tensor(sc, a->post[i], &prev[i])) {
                fl_exec_op_error(rc, op, "state '%s' has no value after step %lld", a->post_names[i], (long long)t);
                goto done;
            }
        }
        for (int k = 0; k < a->nout; k++) {
            FlTensor v = FL_TENSOR_INIT;
            if (!slot_tensor(sc, a->out[k], &v)) {
                fl_exec_op_error(rc, op, "step output '%s' has no value after step %lld", a->out_names[k], (long long)t);
                goto done;
            }
            if (v.ndim < 1 || v.ne[0] != n) {
                fl_exec_op_error(rc, op, "step output '%s' is %s at step %lld, not %lld rows (one per running sequence)",
                                 a->out_names[k], fl_tensor_shape(&v).s, (long long)t, (long long)n);
                fl_tensor_fini(&v);
                goto done;
            }
            if (!fl_tensor_has_data(&outs[k])) {
                int64_t ne[FL_MAX_DIMS];
                int nd = 0;
                ne[nd++] = xs[0].ne[0];
                if (a->dense) ne[nd++] = xs[0].ne[1];
                for (int d = 1; d < v.ndim; d++) ne[nd++] = v.ne[d];
                if (fl_tensor_alloc(rc->e, &outs[k], v.dtype, nd, ne)) {
                    fl_tensor_fini(&v);
                    goto done;
                }
                fl_tensor_ref(&souts[k], &v);
            } else if (trail_bytes(&v, 1) != trail_bytes(&souts[k], 1) || v.dtype != souts[k].dtype) {
                fl_exec_op_error(rc, op, "step output '%s' changes from %s to %s between steps", a->out_names[k],
                                 fl_tensor_shape(&souts[k]).s, fl_tensor_shape(&v).s);
                fl_tensor_fini(&v);
                goto done;
            }
            size_t rb = trail_bytes(&v, 1);
            char *d = fl_tensor_data(&outs[k]);
            const char *src = fl_tensor_data(&v);
            for (int64_t j = 0; j < n; j++) memcpy(d + (size_t)row_of(r, j, t) * rb, src + (size_t)j * rb, rb);
            fl_tensor_fini(&v);
        }
    }
    const ArgRef *oa = fl_exec_out_args(op, FL_OUT_dynamic_rnn_Out);
    for (int k = 0; k < a->nout; k++) {
        if (!fl_tensor_has_data(&outs[k])) { /* no step ran: no rows */
            const FlVarDesc *d = op->sub->slots.data[a->out[k]].desc;
            int64_t ne[FL_MAX_DIMS];
            int nd = 0;
            ne[nd++] = xs[0].ne[0];
            if (a->dense) ne[nd++] = xs[0].ne[1];
            for (int q = 1; d && q < d->ndim; q++) ne[nd++] = d->shape[q] < 0 ? 0 : d->shape[q];
            if (fl_tensor_alloc(rc->e, &outs[k], d ? d->dtype : FL_DT_FLOAT32, nd, ne)) goto done;
        }
        if (oa[k].idx >= 0) fl_var_take_tensor(fl_exec_var_write(s, &oa[k]), &outs[k]);
    }
    const ArgRef *ssa = fl_exec_out_args(op, FL_OUT_dynamic_rnn_StepScopes);
    if (fl_exec_nout(op, FL_OUT_dynamic_rnn_StepScopes) == 1 && ssa->idx >= 0) {
        fl_var_set_object(fl_exec_var_write(s, ssa), r, run_free);
        r = NULL;
    }
    st = FL_OK;
done:
    for (int i = 0; i < nx + a->nst + 2 * a->nmem + 2 * a->nout; i++) fl_tensor_fini(&xs[i]);
    free(xs);
    run_free(r);
    return st;
}

static FlStatus prep_fwd(ExecOp *op, FlErr *e) { return prep_rnn(op, e, false); }
FL_CONTROL_ADAPTER(dynamic_rnn, prep_fwd, run_rnn);

/* ---- the gradient ---- */

/* Binds every var of the forward step scope fs (block fwd) in the gradient step scope gs (block
 * g; same names). */
static void alias_step(const PBlock *fwd, const PBlock *g, FlScope *fs, FlScope *gs) {
    const FlScopeLayout *fl = &fwd->layout;
    for (size_t i = 0; i < fl->n; i++) {
        FlVar *v = fl_scope_slot(fs, i);
        long gi = v ? fl_scope_layout_find(&g->layout, fl->names[i]) : -1;
        if (gi >= 0) fl_scope_slot_set(gs, (size_t)gi, v);
    }
}

static FlStatus run_rnn_grad(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const RnnAttrs *a = op->a.extra;
    FlVar *sv = fl_exec_var_read(s, fl_exec_in_args(op, FL_IN_dynamic_rnn_grad_StepScopes));
    const RnnRun *r = sv ? fl_var_get_object(sv) : NULL;
    if (!r) return fl_exec_op_error(rc, op, "StepScopes holds no forward run (the forward dynamic_rnn did not run)");
    const RnnAttrs *fa = r->fa;
    int nx = a->nx, nst = a->nst, nmem = a->nmem, nout = a->nout, np = a->nparam;
    size_t nt = (size_t)(nx * 2 + nout + nst * 2 + nmem * 3 + np * 2) + 1;
    FlTensor *ts = calloc(nt, sizeof *ts);
    if (!ts) return fl_exec_op_error(rc, op, "out of memory");
    FlTensor *xs = ts, *dx = xs + nx, *douts = dx + nx, *sts = douts + nout, *dst = sts + nst, *inits = dst + nst,
             *dmem = inits + nmem, *dinit = dmem + nmem, *ps = dinit + nmem, *dps = ps + np;
    FlStatus st = FL_ERROR;
    FlScope *gs = NULL;
    const ArgRef *xa = fl_exec_in_args(op, FL_IN_dynamic_rnn_grad_X);
    const ArgRef *dxa = fl_exec_out_args(op, FL_OUT_dynamic_rnn_grad_X_GRAD);
    int ndx = fl_exec_nout(op, FL_OUT_dynamic_rnn_grad_X_GRAD);
    for (int i = 0; i < nx; i++) {
        if (in_tensor(rc, op, s, &xa[i], &xs[i])) goto done;
        if (i < ndx && dxa[i].idx >= 0 && fl_tensor_alloc_like(rc->e, &dx[i], &xs[i], xs[i].dtype)) goto done;
    }
    const ArgRef *oga = fl_exec_in_args(op, FL_IN_dynamic_rnn_grad_Out_GRAD);
    for (int k = 0; k < nout; k++)
        if (in_tensor(rc, op, s, &oga[k], &douts[k])) goto done;
    const ArgRef *sa = fl_exec_in_args(op, FL_IN_dynamic_rnn_grad_StaticInput);
    for (int k = 0; k < nst; k++) {
        if (in_tensor(rc, op, s, &sa[k], &sts[k])) goto done;
        if (fl_tensor_alloc_like(rc->e, &dst[k], &sts[k], sts[k].dtype)) goto done;
    }
    const ArgRef *pa = fl_exec_in_args(op, FL_IN_dynamic_rnn_grad_Params);
    const ArgRef *dpa = fl_exec_out_args(op, FL_OUT_dynamic_rnn_grad_Params_GRAD);
    int ndp = fl_exec_nout(op, FL_OUT_dynamic_rnn_grad_Params_GRAD);
    for (int p = 0; p < np; p++) {
        if (p >= ndp || dpa[p].idx < 0 || a->gparam[p] < 0) continue;
        if (in_tensor(rc, op, s, &pa[p], &ps[p])) goto done;
        if (fl_tensor_alloc_like(rc->e, &dps[p], &ps[p], ps[p].dtype)) goto done;
    }
    for (int64_t t = r->maxlen; t-- > 0;) {
        int64_t n = r->active[t];
        FlScope *fs = r->steps[t];
        gs = fl_scope_new_layout(s, &op->sub->layout);
        alias_step(r->fwd, op->sub, fs, gs);
        for (int k = 0; k < nout; k++) { /* rows of Out@GRAD */
            FlTensor y = FL_TENSOR_INIT, g = FL_TENSOR_INIT;
            if (!slot_tensor(fs, fa->out[k], &y)) {
                fl_exec_op_error(rc, op, "step output '%s' of step %lld is gone", a->out_names[k], (long long)t);
                goto done;
            }
            FlStatus as = alloc_rows(rc->e, &g, &y, 1, n, false);
            size_t rb = trail_bytes(&y, 1);
            fl_tensor_fini(&y);
            if (as) goto done;
            const char *src = fl_tensor_data(&douts[k]);
            char *d = fl_tensor_data(&g);
            for (int64_t j = 0; j < n; j++) memcpy(d + (size_t)j * rb, src + (size_t)row_of(r, j, t) * rb, rb);
            set_slot(gs, a->seed[k], &g);
        }
        for (int i = 0; i < nmem; i++) { /* the next step's ex_state gradient, zero rows after it */
            FlTensor y = FL_TENSOR_INIT, g = FL_TENSOR_INIT;
            if (!slot_tensor(fs, fa->post[i], &y)) {
                fl_exec_op_error(rc, op, "state '%s' of step %lld is gone", a->post_names[i], (long long)t);
                goto done;
            }
            FlStatus as = alloc_rows(rc->e, &g, &y, 1, y.ne[0], true);
            fl_tensor_fini(&y);
            if (as) goto done;
            if (fl_tensor_has_data(&dmem[i]))
                memcpy(fl_tensor_data(&g), fl_tensor_data(&dmem[i]), fl_tensor_nbytes(&dmem[i]));
            set_slot(gs, a->seed[nout + i], &g);
        }
        if (fl_exec_block(rc, op->sub, gs)) goto done;
        for (int i = 0; i < nx; i++) {
            FlTensor g = FL_TENSOR_INIT;
            if (!fl_tensor_has_data(&dx[i]) || !slot_tensor(gs, a->gx[i], &g)) continue;
            size_t rb = trail_bytes(&g, 1);
            const char *src = fl_tensor_data(&g);
            char *d = fl_tensor_data(&dx[i]);
            for (int64_t j = 0; j < n && j < g.ne[0]; j++) memcpy(d + (size_t)row_of(r, j, t) * rb, src + (size_t)j * rb, rb);
            fl_tensor_fini(&g);
        }
        for (int k = 0; k < nst; k++) {
            FlTensor g = FL_TENSOR_INIT;
            if (!slot_tensor(gs, a->gst[k], &g)) continue;
            add_into(&dst[k], &g, fl_tensor_numel(&g)); /* sorted rows 0..n: unsorted at the end */
            fl_tensor_fini(&g);
        }
        for (int p = 0; p < np; p++) {
            FlTensor g = FL_TENSOR_INIT;
            if (!fl_tensor_has_data(&dps[p]) || !slot_tensor(gs, a->gparam[p], &g)) continue;
            if (fl_tensor_numel(&g) == fl_tensor_numel(&dps[p])) add_into(&dps[p], &g, fl_tensor_numel(&g));
            fl_tensor_fini(&g);
        }
        for (int i = 0; i < nmem; i++) {
            fl_tensor_fini(&dmem[i]);
            slot_tensor(gs, a->gpre[i], &dmem[i]);
        }
        fl_scope_release(gs);
        gs = NULL;
    }
    for (int i = 0; i < ndx && i < nx; i++)
        if (dxa[i].idx >= 0 && fl_tensor_has_data(&dx[i])) fl_var_take_tensor(fl_exec_var_write(s, &dxa[i]), &dx[i]);
    const ArgRef *dsa = fl_exec_out_args(op, FL_OUT_dynamic_rnn_grad_StaticInput_GRAD);
    for (int k = 0; k < fl_exec_nout(op, FL_OUT_dynamic_rnn_grad_StaticInput_GRAD) && k < nst; k++) {
        if (dsa[k].idx < 0) continue;
        FlTensor g = FL_TENSOR_INIT;
        if (fl_tensor_alloc_like(rc->e, &g, &sts[k], sts[k].dtype)) goto done;
        size_t rb = trail_bytes(&g, 1);
        const int64_t *so = k < r->nst && r->st_off ? r->st_off[k] : NULL, *cum = so ? r->st_cum[k] : NULL;
        for (int64_t j = 0; j < r->nseq; j++) { /* a row, or a sequence's rows, back to its place */
            int64_t q = r->order[j], at = so ? so[q] : q, from = so ? cum[j] : j, len = so ? cum[j + 1] - cum[j] : 1;
            memcpy((char *)fl_tensor_data(&g) + (size_t)at * rb, (char *)fl_tensor_data(&dst[k]) + (size_t)from * rb,
                   (size_t)len * rb);
        }
        fl_var_take_tensor(fl_exec_var_write(s, &dsa[k]), &g);
    }
    const ArgRef *ia = fl_exec_in_args(op, FL_IN_dynamic_rnn_grad_InitMem);
    const ArgRef *dia = fl_exec_out_args(op, FL_OUT_dynamic_rnn_grad_InitMem_GRAD);
    int ndi = fl_exec_nout(op, FL_OUT_dynamic_rnn_grad_InitMem_GRAD);
    for (int i = 0; i < nmem; i++) {
        int64_t k = a->init[i];
        if (k < 0 || k >= ndi || dia[k].idx < 0) continue;
        FlTensor init = FL_TENSOR_INIT, g = FL_TENSOR_INIT;
        if (in_tensor(rc, op, s, &ia[k], &init)) goto done;
        FlStatus as = fl_tensor_alloc_like(rc->e, &g, &init, init.dtype);
        fl_tensor_fini(&init);
        if (as) goto done;
        if (fl_tensor_has_data(&dmem[i])) {
            size_t rb = trail_bytes(&g, 1);
            for (int64_t j = 0; j < dmem[i].ne[0]; j++)
                memcpy((char *)fl_tensor_data(&g) + (size_t)(a->reorder[i] ? r->order[j] : j) * rb,
                       (char *)fl_tensor_data(&dmem[i]) + (size_t)j * rb, rb);
        }
        /* two memories may start from one InitMem: their gradients add up */
        FlVar *ov = fl_exec_var_write(s, &dia[k]);
        FlTensor have = FL_TENSOR_INIT;
        bool again = false;
        for (int q = 0; q < i; q++) again |= a->init[q] == k;
        if (again && fl_var_get_tensor(ov, &have)) {
            add_into(&g, &have, fl_tensor_numel(&g));
            fl_tensor_fini(&have);
        }
        fl_var_take_tensor(ov, &g);
    }
    for (int p = 0; p < np; p++)
        if (fl_tensor_has_data(&dps[p])) fl_var_take_tensor(fl_exec_var_write(s, &dpa[p]), &dps[p]);
    for (int p = 0; p < ndp && p < np; p++) /* a param the block does not differentiate: zero */
        if (dpa[p].idx >= 0 && a->gparam[p] < 0) {
            FlTensor z = FL_TENSOR_INIT, x = FL_TENSOR_INIT;
            if (in_tensor(rc, op, s, &pa[p], &x)) goto done;
            FlStatus as = fl_tensor_alloc_like(rc->e, &z, &x, x.dtype);
            fl_tensor_fini(&x);
            if (as) goto done;
            fl_var_take_tensor(fl_exec_var_write(s, &dpa[p]), &z);
        }
    st = FL_OK;
done:
    fl_scope_release(gs);
    for (size_t i = 0; i < nt; i++) fl_tensor_fini(&ts[i]);
    free(ts);
    return st;
}

static FlStatus prep_grad(ExecOp *op, FlErr *e) { return prep_rnn(op, e, true); }
FL_CONTROL_ADAPTER(dynamic_rnn_grad, prep_grad, run_rnn_grad);

/* ---- while: the kept iterations, and while_grad ---- */

struct WhileRun {
    const PBlock *fwd; /* the while's block */
    int nout;          /* the op's Out vars */
    int64_t n, cap;    /* iterations */
    FlScope **steps;   /* n scopes */
    FlTensor *snaps;   /* (n + 1) * nout: the Out vars before the loop, then after each
                          iteration (unset: no tensor) */
};

static void while_run_free(void *p) {
    WhileRun *r = p;
    if (!r) return;
    for (int64_t t = 0; t < r->n; t++) fl_scope_release(r->steps[t]);
    for (int64_t t = 0; r->snaps && t <= r->n; t++)
        for (int k = 0; k < r->nout; k++) fl_tensor_fini(&r->snaps[t * r->nout + k]);
    free(r->steps);
    free(r->snaps);
    free(r);
}

/* Row `row` of the snapshots: the op's Out vars now. */
static void snap_row(WhileRun *r, const ExecOp *op, FlScope *s, int64_t row) {
    const ArgRef *oa = fl_exec_out_args(op, FL_OUT_while_Out);
    for (int k = 0; k < r->nout; k++) {
        FlVar *v = fl_exec_var_read(s, &oa[k]);
        FlTensor *t = &r->snaps[row * r->nout + k];
        fl_tensor_fini(t);
        if (v) fl_var_get_tensor(v, t); /* a tensor in a var never changes: a reference */
    }
}

WhileRun *fl_while_run_new(const ExecOp *op, FlScope *s) {
    WhileRun *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->fwd = op->sub;
    r->nout = fl_exec_nout(op, FL_OUT_while_Out);
    r->snaps = calloc((size_t)r->nout + 1, sizeof *r->snaps);
    if (!r->snaps) {
        free(r);
        return NULL;
    }
    snap_row(r, op, s, 0);
    return r;
}

FlScope *fl_while_run_step(WhileRun *r, FlScope *s) {
    if (r->n == r->cap) {
        int64_t cap = r->cap ? 2 * r->cap : 8;
        FlScope **st = realloc(r->steps, (size_t)cap * sizeof *st);
        if (st) r->steps = st;
        FlTensor *sn = st ? realloc(r->snaps, (size_t)(cap + 1) * (size_t)(r->nout + 1) * sizeof *sn) : NULL;
        if (!sn) return NULL;
        r->snaps = sn;
        r->cap = cap;
    }
    for (int k = 0; k < r->nout; k++) fl_tensor_init(&r->snaps[(r->n + 1) * r->nout + k]);
    /* kept in StepScopes, a var of s or of its ancestors: a retained s would be a cycle */
    return r->steps[r->n++] = fl_scope_new_layout_weak(s, &r->fwd->layout);
}

void fl_while_run_snap(WhileRun *r, const ExecOp *op, FlScope *s) { snap_row(r, op, s, r->n); }

void fl_while_run_keep(WhileRun *r, const ExecOp *op, FlScope *s) {
    if (!op) {
        while_run_free(r);
        return;
    }
    fl_var_set_object(fl_exec_var_write(s, fl_exec_out_args(op, FL_OUT_while_StepScopes)), r, while_run_free);
}

typedef struct WhileGradAttrs {
    long *carried; /* per Out: its slot in the gradient block (-1: not declared there) */
    long *gx;      /* per X: the slot of "<X>@GRAD" in the gradient block (-1: none) */
} WhileGradAttrs;

static FlStatus prep_while_grad(ExecOp *op, FlErr *e) {
    if (!op->sub) return fl_err(e, "attribute 'sub_block' is missing");
    if (fl_exec_nin(op, FL_IN_while_grad_StepScopes) != 1) return fl_err(e, "slot 'StepScopes' must hold one var");
    int nout = fl_exec_nin(op, FL_IN_while_grad_Out), nx = fl_exec_nin(op, FL_IN_while_grad_X);
    WhileGradAttrs *a = calloc(1, sizeof *a + (size_t)(nout + nx + 1) * sizeof(long));
    if (!a) return fl_err(e, "out of memory");
    op->a.extra = a;
    a->carried = (long *)(a + 1);
    a->gx = a->carried + nout;
    const ArgRef *oa = fl_exec_in_args(op, FL_IN_while_grad_Out), *xa = fl_exec_in_args(op, FL_IN_while_grad_X);
    for (int k = 0; k < nout; k++) a->carried[k] = fl_scope_layout_find(&op->sub->layout, oa[k].name);
    for (int p = 0; p < nx; p++) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s%s", xa[p].name, FL_RULE_GRAD_SUFFIX);
        a->gx[p] = fl_scope_layout_find(&op->sub->layout, buf);
    }
    return FL_OK;
}

static FlStatus run_while_grad(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const WhileGradAttrs *a = op->a.extra;
    FlVar *sv = fl_exec_var_read(s, fl_exec_in_args(op, FL_IN_while_grad_StepScopes));
    const WhileRun *r = sv ? fl_var_get_object(sv) : NULL;
    if (!r) return fl_exec_op_error(rc, op, "StepScopes holds no forward run (the forward while did not run)");
    int nx = fl_exec_nin(op, FL_IN_while_grad_X), ndx = fl_exec_nout(op, FL_OUT_while_grad_X_GRAD);
    if (r->nout != fl_exec_nin(op, FL_IN_while_grad_Out))
        return fl_exec_op_error(rc, op, "StepScopes keeps %d Out vars, the op has %d", r->nout,
                                fl_exec_nin(op, FL_IN_while_grad_Out));
    const ArgRef *xa = fl_exec_in_args(op, FL_IN_while_grad_X), *dxa = fl_exec_out_args(op, FL_OUT_while_grad_X_GRAD);
    FlTensor *sums = calloc((size_t)nx + 1, sizeof *sums);
    if (!sums) return fl_exec_op_error(rc, op, "out of memory");
    FlStatus st = FL_ERROR;
    FlScope *gs = NULL;
    /* the dense vars whose gradient is asked for; an array's is written by the block's ops */
    for (int p = 0; p < nx && p < ndx; p++) {
        FlTensor x = FL_TENSOR_INIT;
        FlVar *v = dxa[p].idx >= 0 ? fl_exec_var_read(s, &xa[p]) : NULL;
        if (!v || !fl_var_get_tensor(v, &x)) continue;
        FlStatus as = fl_tensor_alloc_like(rc->e, &sums[p], &x, x.dtype);
        fl_tensor_fini(&x);
        if (as) goto done;
    }
    for (int64_t t = r->n; t-- > 0;) {
        gs = fl_scope_new_layout(s, &op->sub->layout);
        alias_step(r->fwd, op->sub, r->steps[t], gs);
        for (int k = 0; k < r->nout; k++) {
            const FlTensor *v = &r->snaps[(t + 1) * r->nout + k];
            if (a->carried[k] < 0 || !fl_tensor_has_data(v)) continue;
            FlTensor c = FL_TENSOR_INIT;
            fl_tensor_ref(&c, v);
            set_slot(gs, a->carried[k], &c);
        }
        if (fl_exec_block(rc, op->sub, gs)) goto done;
        for (int p = 0; p < nx; p++) {
            FlTensor g = FL_TENSOR_INIT;
            if (!fl_tensor_has_data(&sums[p]) || !slot_tensor(gs, a->gx[p], &g)) continue;
            bool same = fl_tensor_numel(&g) == fl_tensor_numel(&sums[p]) && g.dtype == sums[p].dtype;
            if (same) add_into(&sums[p], &g, fl_tensor_numel(&g));
            fl_tensor_fini(&g);
            if (!same) {
                fl_exec_op_error(rc, op, "the gradient of '%s' at iteration %lld does not have its shape", xa[p].name,
                                 (long long)t);
                goto done;
            }
        }
        fl_scope_release(gs);
        gs = NULL;
    }
    for (int p = 0; p < nx && p < ndx; p++)
        if (fl_tensor_has_data(&sums[p])) fl_var_take_tensor(fl_exec_var_write(s, &dxa[p]), &sums[p]);
    /* the vars the loop overwrote get their values from before it back (the counters an
     * array_write before the loop indexed with, as the gradient of that write reads them) */
    const ArgRef *oa = fl_exec_in_args(op, FL_IN_while_grad_Out);
    for (int k = 0; k < r->nout; k++) {
        if (!fl_tensor_has_data(&r->snaps[k])) continue;
        FlTensor c = FL_TENSOR_INIT;
        fl_tensor_ref(&c, &r->snaps[k]);
        fl_var_take_tensor(fl_exec_var_write(s, &oa[k]), &c);
    }
    st = FL_OK;
done:
    fl_scope_release(gs);
    for (int p = 0; p < nx; p++) fl_tensor_fini(&sums[p]);
    free(sums);
    return st;
}
FL_CONTROL_ADAPTER(while_grad, prep_while_grad, run_while_grad);
