/* exec.c: preparing a program (adapters, attributes, argument resolution) and running blocks.
 *
 * Scopes mirror blocks: the call scope has block 0's layout and each sub-block run gets a child
 * scope with that block's layout, whose parent is the scope of the block holding the control op
 * (prepare checks that a sub-block's parent is its op's block). So an argument declared `up`
 * blocks out is `up` scope parents away, at a slot fixed at prepare time.
 *
 * Var homes: a var declared in block k lives in the scope running block k; a persistable var of
 * block 0 lives in the caller's scope (its call-scope slot only caches the var once found, or
 * holds a per-call feed override); a name no block declares lives in the scope of the block using
 * it. Reading a var that is not in its home slot falls back to a name lookup in the home scope's
 * ancestors (the caller's scope tree), so vars put there by the embedder are visible.
 */
#include "runtime/core/exec_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rng.h"
#include "runtime/sched/sched.h"

/* ---------------------------------------------------------------- adapter tables */

static const FlAdapter *const fwd_adapters[FL_OPID_COUNT] = {
#define FL_OP(id, ins, outs, attrs, grad, flags, desc) [FL_OPID_##id] = &fl_adapter_##id,
#include "compiler/ops.def"
#undef FL_OP
};

#define FL_GRAD_ADAPTER_REF_FL_GRAD_DEFAULT(id) &fl_adapter_##id##_grad
#define FL_GRAD_ADAPTER_REF_FL_GRAD_CUSTOM(id) &fl_adapter_##id##_grad
#define FL_GRAD_ADAPTER_REF_FL_GRAD_NONE(id) NULL
#define FL_GRAD_ADAPTER_REF_FL_GRAD_STOP(id) NULL
static const FlAdapter *const grad_adapters[FL_OPID_COUNT] = {
#define FL_OP(id, ins, outs, attrs, grad, flags, desc) [FL_OPID_##id] = FL_GRAD_ADAPTER_REF_##grad(id),
#include "compiler/ops.def"
#undef FL_OP
};

/* Startup check (once per prepare; cheap): every op of the table has its adapter, with a run or
 * control function, under the op's own name. */
static void check_tables(void) {
    for (size_t i = 0; i < fl_ops_count(); i++) {
        const FlOpInfo *info = fl_ops_at(i);
        const FlAdapter *ad = info->is_grad ? grad_adapters[info->id] : fwd_adapters[info->id];
        if (!ad) fl_panic(__FILE__, __LINE__, "op '%s' has no adapter", info->name);
        FL_ASSERT(strcmp(ad->name, info->name) == 0);
        FL_ASSERT((ad->run != NULL) != (ad->control != NULL));
    }
}

/* ---------------------------------------------------------------- attributes */

static const FlAttr *attr_or_default(const ExecOp *op, const char *name) {
    const FlAttr *a = fl_ir_op_attr(op->desc, name);
    if (a) return a;
    const FlAttrInfo *ai = fl_ops_attr(op->info, name);
    FL_ASSERT(ai); /* adapters only ask for attributes of their op */
    return ai->required ? NULL : &ai->dflt;
}

int64_t fl_exec_attr_int(const ExecOp *op, const char *name) {
    const FlAttr *a = attr_or_default(op, name);
    return a ? a->i : 0;
}

double fl_exec_attr_float(const ExecOp *op, const char *name) {
    const FlAttr *a = attr_or_default(op, name);
    if (!a) return 0;
    return a->type == FL_ATTR_FLOAT ? a->f : (double)a->i;
}

bool fl_exec_attr_bool(const ExecOp *op, const char *name) {
    const FlAttr *a = attr_or_default(op, name);
    return a && a->i != 0;
}

const char *fl_exec_attr_string(const ExecOp *op, const char *name) {
    const FlAttr *a = attr_or_default(op, name);
    return a && a->s ? a->s : "";
}

const int64_t *fl_exec_attr_ints(const ExecOp *op, const char *name, size_t *n) {
    const FlAttr *a = attr_or_default(op, name);
    *n = a ? a->n : 0;
    return a ? a->ints : NULL;
}

FlStatus fl_exec_check_lod(FlErr *e, const FlTensor *off, int64_t rows, const char *slot, const int64_t **offsets,
                           int64_t *nseq) {
    if (!fl_tensor_has_data(off) || off->dtype != FL_DT_INT64 || off->ndim != 1 || off->ne[0] < 1)
        return fl_err(e, "%s must be an int64 vector of sequence offsets [nseq + 1], found %s %s", slot,
                      fl_dtype_name(off->dtype), fl_tensor_shape(off).s);
    const int64_t *o = fl_tensor_data(off);
    int64_t n = off->ne[0] - 1;
    if (o[0] != 0) return fl_err(e, "%s: the first offset is %lld (sequence offsets start at 0)", slot, (long long)o[0]);
    for (int64_t i = 0; i < n; i++)
        if (o[i + 1] < o[i])
            return fl_err(e, "%s: offset %lld (%lld) is less than offset %lld (%lld): offsets never decrease", slot,
                          (long long)(i + 1), (long long)o[i + 1], (long long)i, (long long)o[i]);
    if (rows >= 0 && o[n] != rows)
        return fl_err(e, "%s: the last offset is %lld but the tensor has %lld rows", slot, (long long)o[n],
                      (long long)rows);
    *offsets = o;
    *nseq = n;
    return FL_OK;
}

const int64_t *fl_exec_attr_exact(const ExecOp *op, const char *attr) {
    const FlAttrInfo *twin = fl_ops_int_twin(op->info, attr);
    size_t n = 0;
    const int64_t *iv = twin ? fl_exec_attr_ints(op, twin->name, &n) : NULL;
    return n ? iv : NULL;
}

const double *fl_exec_attr_floats(const ExecOp *op, const char *name, size_t *n) {
    const FlAttr *a = attr_or_default(op, name);
    *n = a ? a->n : 0;
    return a ? a->floats : NULL;
}

/* The INTS attribute `name`, checked to hold at most FL_MAX_DIMS values. */
static FlStatus attr_dims(const ExecOp *op, const char *name, const int64_t **v, size_t *n,
                          FlErr *e) {
    *v = fl_exec_attr_ints(op, name, n);
    if (*n > FL_MAX_DIMS)
        return fl_err(e, "attribute '%s' has %zu entries (at most %d)", name, *n, FL_MAX_DIMS);
    return FL_OK;
}

FlStatus fl_exec_attr_dims(ExecOp *op, const char *name, FlErr *e) {
    const int64_t *v;
    size_t n;
    if (attr_dims(op, name, &v, &n, e) != FL_OK) return FL_ERROR;
    for (size_t i = 0; i < n; i++) op->a.dims[i] = (int)v[i];
    op->a.ndims = (int)n;
    return FL_OK;
}

FlStatus fl_exec_attr_shape(ExecOp *op, const char *name, FlErr *e) {
    const int64_t *v;
    size_t n;
    if (attr_dims(op, name, &v, &n, e) != FL_OK) return FL_ERROR;
    for (size_t i = 0; i < n; i++) op->a.shape[i] = v[i];
    op->a.nshape = (int)n;
    return FL_OK;
}

FlStatus fl_exec_prep_axis(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_int(op, "axis");
    return FL_OK;
}

/* ---------------------------------------------------------------- messages */

void fl_exec_loc_str(const FlExec *ex, FlLoc loc, char *buf, size_t n) {
    buf[0] = 0;
    if (loc.line <= 0) return;
    const char *path = loc.file >= 0 && (size_t)loc.file < ex->nsources ? ex->sources[loc.file]
                                                                          : "?";
    const char *base = strrchr(path, '/');
    snprintf(buf, n, "%s:%d:%d", base ? base + 1 : path, loc.line, loc.col);
}

static void op_prefix(const FlExec *ex, const ExecOp *op, FlBuf *b) {
    char loc[512];
    fl_exec_loc_str(ex, op->desc->loc, loc, sizeof loc);
    fl_buf_printf(b, "runtime error in op '%s'", op->desc->type);
    if (loc[0]) fl_buf_printf(b, " (%s)", loc);
    fl_buf_puts(b, ": ");
}

FlStatus fl_exec_op_error(RunCtx *rc, const ExecOp *op, const char *fmt, ...) {
    FlBuf b = {0};
    op_prefix(rc->ex, op, &b);
    va_list ap;
    va_start(ap, fmt);
    fl_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    fl_err(rc->e, "%s", fl_buf_str(&b));
    fl_buf_free(&b);
    return FL_ERROR;
}

/* The kernel's message ("mul: X [32, 12] and Y [13, 1]: ...") in the runtime's form: the op
 * prefix and location, and each input slot's var name after the slot's name ("X 'x' [32, 12]").
 * When the message shows no input shape, the inputs are listed after it. */
static void wrap_kernel_error(RunCtx *rc, const ExecOp *op, const FlTensor *const *in) {
    const char *msg = rc->e->msg;
    size_t tl = strlen(op->desc->type);
    if (strncmp(msg, op->desc->type, tl) == 0 && msg[tl] == ':' && msg[tl + 1] == ' ') msg += tl + 2;
    FlBuf out = {0}, pat = {0};
    op_prefix(rc->ex, op, &out);
    const char *p = msg;
    bool named = false;
    while (*p) {
        /* at a slot name followed by a shape of that slot's first input? */
        bool hit = false;
        for (int s = 0; s < op->info->nins && !hit; s++) {
            if (op->in_off[s + 1] == op->in_off[s]) continue;
            const FlTensor *t = in[op->in_off[s]];
            if (!t) continue;
            const char *sn = op->info->ins[s].name;
            if (p != msg && (p[-1] != ' ' && p[-1] != '(')) continue;
            pat.len = 0;
            fl_buf_printf(&pat, "%s %s", sn, fl_tensor_shape(t).s);
            if (strncmp(p, pat.data, pat.len) != 0) continue;
            fl_buf_printf(&out, "%s '%s' %s", sn, op->args[op->in_off[s]].name,
                          fl_tensor_shape(t).s);
            p += pat.len;
            hit = named = true;
        }
        if (!hit) fl_buf_putc(&out, *p++);
    }
    if (!named && op->nin > 0) {
        fl_buf_puts(&out, " (inputs:");
        bool first = true;
        for (int s = 0; s < op->info->nins; s++)
            for (int k = op->in_off[s]; k < op->in_off[s + 1]; k++) {
                if (!in[k]) continue;
                fl_buf_printf(&out, "%s %s '%s' %s", first ? "" : ",", op->info->ins[s].name,
                              op->args[k].name, fl_tensor_shape(in[k]).s);
                first = false;
            }
        fl_buf_putc(&out, ')');
    }
    fl_err(rc->e, "%s", fl_buf_str(&out));
    fl_buf_free(&out);
    fl_buf_free(&pat);
}

/* ---------------------------------------------------------------- vars of arguments */

FlScope *fl_exec_scope_up(FlScope *s, int up) {
    while (up-- > 0) s = fl_scope_parent(s);
    return s;
}

FlVar *fl_exec_var_read(FlScope *s, const ArgRef *a) {
    FlScope *home = fl_exec_scope_up(s, a->up);
    FlVar *v = fl_scope_slot(home, (size_t)a->idx);
    if (v) return v;
    FlScope *outer = fl_scope_parent(home);
    v = outer ? fl_scope_find(outer, a->name) : NULL;
    if (v && a->shared) v = fl_scope_slot_set(home, (size_t)a->idx, v); /* cache */
    return v;
}

FlVar *fl_exec_var_write(FlScope *s, const ArgRef *a) {
    FlScope *home = fl_exec_scope_up(s, a->up);
    FlVar *v = fl_scope_slot(home, (size_t)a->idx);
    if (v) return v;
    if (a->shared) {
        FlScope *outer = fl_scope_parent(home);
        FL_ASSERT(outer); /* call scopes always have the caller's scope above them */
        v = fl_scope_find(outer, a->name);
        if (!v) v = fl_scope_var(outer, a->name);
        return fl_scope_slot_set(home, (size_t)a->idx, v);
    }
    return fl_scope_slot_var(home, (size_t)a->idx);
}

/* ---------------------------------------------------------------- running */

#define STACK_ARGS 8

/* The per-call argument arrays of run_compute: on the stack for up to STACK_ARGS each way. The
 * SelectedRows slots are initialised only for the args that use them (in_rows[k]: input k's
 * var held rows; an output's when its arg is a rows arg): most ops see none, and every op run
 * pays for what it initialises. */
typedef struct CallArgs {
    FlTensor *in, *out;
    const FlTensor **inp;
    FlTensor **outp;
    FlSelectedRows *in_r, *out_r;
    const FlSelectedRows **in_rp;
    FlSelectedRows **out_rp;
    bool *in_rows;
} CallArgs;

/* Loads input arg k of op into ca: a tensor, or a SelectedRows (as it is for a sparse adapter,
 * its value block in in[k]; densified for the others). false when the var holds neither. */
static FlStatus load_input(RunCtx *rc, const ExecOp *op, FlVar *v, int k, CallArgs *ca, bool *found) {
    *found = true;
    if (fl_var_get_tensor(v, &ca->in[k])) return FL_OK;
    fl_rows_init(&ca->in_r[k]);
    ca->in_rows[k] = true;
    if (!fl_var_get_rows(v, &ca->in_r[k])) {
        *found = false;
        return FL_OK;
    }
    if (op->ad->sparse) {
        fl_tensor_ref(&ca->in[k], &ca->in_r[k].value);
        ca->in_rp[k] = &ca->in_r[k];
        return FL_OK;
    }
    FlErr e = {0};
    if (fl_rows_to_dense(&e, &ca->in_r[k], &ca->in[k]) == FL_OK) return FL_OK;
    return fl_exec_op_error(rc, op, "input '%s' (a SelectedRows): %s", op->args[k].name, e.msg);
}

static FlStatus run_compute(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlTensor in_st[STACK_ARGS], out_st[STACK_ARGS];
    const FlTensor *inp_st[STACK_ARGS];
    FlTensor *outp_st[STACK_ARGS];
    FlSelectedRows in_r_st[STACK_ARGS], out_r_st[STACK_ARGS];
    const FlSelectedRows *in_rp_st[STACK_ARGS];
    FlSelectedRows *out_rp_st[STACK_ARGS];
    bool in_rows_st[STACK_ARGS];
    bool heap = op->nin > STACK_ARGS || op->nout > STACK_ARGS;
    size_t ni = (size_t)op->nin + 1, no = (size_t)op->nout + 1;
    CallArgs ca = {
        .in = heap ? fl_xcalloc(ni, sizeof *ca.in) : in_st,
        .out = heap ? fl_xcalloc(no, sizeof *ca.out) : out_st,
        .inp = heap ? fl_xcalloc(ni, sizeof *ca.inp) : inp_st,
        .outp = heap ? fl_xcalloc(no, sizeof *ca.outp) : outp_st,
        .in_r = heap ? fl_xcalloc(ni, sizeof *ca.in_r) : in_r_st,
        .out_r = heap ? fl_xcalloc(no, sizeof *ca.out_r) : out_r_st,
        .in_rp = heap ? fl_xcalloc(ni, sizeof *ca.in_rp) : in_rp_st,
        .out_rp = heap ? fl_xcalloc(no, sizeof *ca.out_rp) : out_rp_st,
        .in_rows = heap ? fl_xcalloc(ni, sizeof *ca.in_rows) : in_rows_st,
    };
    FlStatus st = FL_OK;
    int loaded = 0;
    for (int k = 0; k < op->nout; k++) {
        const ArgRef *a = &op->args[op->nin + k];
        fl_tensor_init(&ca.out[k]);
        ca.outp[k] = a->idx >= 0 && !a->rows ? &ca.out[k] : NULL;
        ca.out_rp[k] = a->idx >= 0 && a->rows ? &ca.out_r[k] : NULL;
        if (ca.out_rp[k]) fl_rows_init(ca.out_rp[k]);
    }
    for (; loaded < op->nin; loaded++) {
        const ArgRef *a = &op->args[loaded];
        fl_tensor_init(&ca.in[loaded]);
        ca.in_rows[loaded] = false;
        ca.inp[loaded] = NULL;
        ca.in_rp[loaded] = NULL;
        if (a->idx < 0) continue;
        FlVar *v = fl_exec_var_read(s, a);
        bool found = false;
        if (v && load_input(rc, op, v, loaded, &ca, &found)) {
            loaded++;
            st = FL_ERROR;
            goto done;
        }
        if (!found) {
            int slot = 0;
            while (op->in_off[slot + 1] <= loaded) slot++;
            st = fl_exec_op_error(rc, op, "input %s '%s' has no value%s", op->info->ins[slot].name,
                                  a->name,
                                  a->shared ? " (a persistable var: was the startup program run "
                                              "on this scope?)"
                                            : "");
            loaded++;
            goto done;
        }
        ca.inp[loaded] = &ca.in[loaded];
    }
    OpCall c = {.rc = rc, .op = op, .e = rc->e, .s = s, .in = ca.inp, .out = ca.outp,
                .in_rows = ca.in_rp, .out_rows = ca.out_rp};
    /* the kernels run on the executor's pool (par.h); restored after, as a control op's
     * sub-block may run on a thread (a goroutine's) bound to another pool */
    FlPar *prev = fl_par_bind(rc->ex->opt.par);
    FlStatus rs = op->ad->run(&c);
    fl_par_bind(prev);
    if (rs != FL_OK) {
        wrap_kernel_error(rc, op, ca.inp);
        st = FL_ERROR;
        goto done;
    }
    for (int k = 0; k < op->nout; k++) {
        const ArgRef *a = &op->args[op->nin + k];
        if (rc->read_only && a->shared) continue;
        if (ca.outp[k] && fl_tensor_has_data(&ca.out[k]))
            fl_var_take_tensor(fl_exec_var_write(s, a), &ca.out[k]);
        else if (ca.out_rp[k] && fl_tensor_has_data(&ca.out_r[k].rows))
            fl_var_take_rows(fl_exec_var_write(s, a), &ca.out_r[k]);
    }
done:
    for (int k = 0; k < loaded; k++) {
        fl_tensor_fini(&ca.in[k]);
        if (ca.in_rows[k]) fl_rows_fini(&ca.in_r[k]);
    }
    for (int k = 0; k < op->nout; k++) {
        fl_tensor_fini(&ca.out[k]);
        if (ca.out_rp[k]) fl_rows_fini(ca.out_rp[k]);
    }
    if (heap) {
        free(ca.in);
        free(ca.out);
        free(ca.inp);
        free(ca.outp);
        free(ca.in_r);
        free(ca.out_r);
        free(ca.in_rp);
        free(ca.out_rp);
        free(ca.in_rows);
    }
    return st;
}

/* "[0 2 3]": offsets o[0..n), the first 12 and the last when there are more. */
static void put_offsets(FlBuf *b, const int64_t *o, int64_t n) {
    fl_buf_putc(b, '[');
    for (int64_t i = 0; i < n; i++) {
        if (n > 16 && i == 12) {
            fl_buf_printf(b, " ... %lld] (%lld offsets)", (long long)o[n - 1], (long long)n);
            return;
        }
        fl_buf_printf(b, i ? " %lld" : "%lld", (long long)o[i]);
    }
    fl_buf_putc(b, ']');
}

/* The error of a LodCheck whose offsets a and b (int64 vectors) differ. */
static FlStatus lod_mismatch(RunCtx *rc, const ExecOp *op, const LodCheck *lc, const FlTensor *a, const FlTensor *b) {
    const int64_t *o[2] = {fl_tensor_data(a), fl_tensor_data(b)};
    int64_t n[2] = {a->ne[0], b->ne[0]}, i = 0;
    while (i + 1 < n[0] && i + 1 < n[1] && o[0][i + 1] - o[0][i] == o[1][i + 1] - o[1][i]) i++;
    FlBuf m = {0};
    fl_buf_printf(&m, "%s '%s' and %s '%s' must be cut into the same sequences, but %s's offsets '%s' are ", lc->slot[0],
                  lc->var[0], lc->slot[1], lc->var[1], lc->slot[0], lc->off[0].name);
    put_offsets(&m, o[0], n[0]);
    fl_buf_printf(&m, " and %s's '%s' ", lc->slot[1], lc->off[1].name);
    put_offsets(&m, o[1], n[1]);
    if (i + 1 < n[0] && i + 1 < n[1])
        fl_buf_printf(&m, ": sequence %lld holds %lld and %lld", (long long)i, (long long)(o[0][i + 1] - o[0][i]),
                      (long long)(o[1][i + 1] - o[1][i]));
    else
        fl_buf_printf(&m, ": %lld sequences and %lld", (long long)(n[0] - 1), (long long)(n[1] - 1));
    FlStatus st = fl_exec_op_error(rc, op, "%s", fl_buf_str(&m));
    fl_buf_free(&m);
    return st;
}

/* op's LoD inputs combined row by row are cut into the same sequences (docs/sequences.md):
 * each LodCheck's offsets are equal. Offsets without a value yet are left to the op. */
static FlStatus check_lods(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlStatus st = FL_OK;
    for (int i = 0; i < op->nlods && st == FL_OK; i++) {
        const LodCheck *lc = &op->lods[i];
        FlTensor t[2] = {FL_TENSOR_INIT, FL_TENSOR_INIT};
        bool have = true;
        for (int j = 0; j < 2 && have; j++) {
            FlVar *v = fl_exec_var_read(s, &lc->off[j]);
            have = v && fl_var_get_tensor(v, &t[j]) && fl_tensor_has_data(&t[j]) && t[j].dtype == FL_DT_INT64 &&
                   t[j].ndim == 1;
        }
        if (have && (t[0].ne[0] != t[1].ne[0] ||
                     memcmp(fl_tensor_data(&t[0]), fl_tensor_data(&t[1]), (size_t)t[0].ne[0] * sizeof(int64_t)) != 0))
            st = lod_mismatch(rc, op, lc, &t[0], &t[1]);
        fl_tensor_fini(&t[0]);
        fl_tensor_fini(&t[1]);
    }
    return st;
}

/* One op. Ops that may hold their thread for long (MPI, GEMM-shaped kernels) run inside a
 * blocking region: on a goroutine the worker's processor goes to another worker meanwhile, and
 * a goroutine waiting in MPI is never taken for deadlocked (runtime/sched/sched.h). Outside
 * goroutines and attached threads the region calls are no-ops. In a parallel_for iteration a
 * long kernel keeps its processor (only the ops that wait for a peer hand it on), so at most
 * --procs iterations compute at once, on the processors' threads, however many there are. */
static FlStatus run_op_plain(RunCtx *rc, const ExecOp *op, FlScope *s) {
    if (op->nlods && check_lods(rc, op, s) != FL_OK) return FL_ERROR;
    bool region = op->region && rc->sched && (!rc->iteration || (op->info->flags & FL_OPF_DIST));
    if (region) fl_sched_block_begin();
    FlStatus st = op->ad->run ? run_compute(rc, op, s) : op->ad->control(rc, op, s);
    if (region) fl_sched_block_end();
    return st;
}

/* With a trace (--timeline), each op run is a span; with a profiler that is on, its time goes to
 * the op type's counters, from the same two clock reads; without either, the one branch below is
 * its cost. */
static FlStatus run_op(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlTrace *tr = rc->ex->opt.trace;
    FlProf *pf = rc->ex->opt.prof && fl_prof_is_on(rc->ex->opt.prof) ? rc->ex->opt.prof : NULL;
    if (!tr && !pf) return run_op_plain(rc, op, s);
    int64_t t0 = fl_trace_now();
    FlStatus st = run_op_plain(rc, op, s);
    int64_t t1 = fl_trace_now();
    if (tr) fl_trace_span(tr, "op", op->desc->type, t0, t1, op->trace_args);
    if (pf) fl_prof_record(pf, op->info, t0, t1);
    return st;
}

static FlStatus run_masked(RunCtx *rc, const PBlock *pb, FlScope *s, const bool *mask) {
    for (size_t i = 0; i < pb->nops; i++) {
        if (mask && !mask[i]) continue;
        if (atomic_load_explicit(&rc->ex->panic, memory_order_relaxed)) /* the goroutine's error wins */
            return fl_exec_op_error(rc, &pb->ops[i], "%s", FL_SCHED_PANIC_MSG);
        FlStatus st = run_op(rc, &pb->ops[i], s);
        if (st != FL_OK) return st;
    }
    return FL_OK;
}

FlStatus fl_exec_block(RunCtx *rc, const PBlock *pb, FlScope *s) { return run_masked(rc, pb, s, NULL); }

/* ---------------------------------------------------------------- prepare */


static int block_depth(const FlProgram *p, int idx) {
    int d = 0;
    for (const FlBlock *b = fl_ir_block(p, idx); b->parent >= 0; b = fl_ir_block(p, b->parent)) d++;
    return d;
}

static void resolve_arg(PBlock *pb, const char *name, ArgRef *a) {
    a->name = name;
    a->up = 0;
    a->idx = -1;
    a->shared = false;
    a->rows = false;
    if (fl_rule_is_empty(name)) return;
    for (const PBlock *d = pb; d; d = d->parent) {
        long i = fl_scope_layout_find(&d->layout, name);
        if (i >= 0 && d->slots.data[i].desc) {
            a->up = pb->depth - d->depth;
            a->idx = (int)i;
            a->shared = d->slots.data[i].shared;
            a->rows = d->slots.data[i].desc->kind == FL_VAR_SELECTED_ROWS;
            return;
        }
    }
    /* declared nowhere: a var of the block using it */
    size_t i = fl_scope_layout_add(&pb->layout, name);
    if (i >= pb->slots.len) FL_VEC_PUSH(&pb->slots, ((SlotInfo){NULL, false}));
    a->idx = (int)i;
}

/* The args of op's spans in a trace: its .fl line (when it has one), block and output vars. */
static void trace_args(ExecOp *op, const char *loc) {
    FlBuf b = {0};
    if (loc[0]) {
        fl_buf_puts(&b, "\"line\":");
        fl_trace_json_str(&b, loc);
        fl_buf_putc(&b, ',');
    }
    fl_buf_printf(&b, "\"block\":%d,\"outputs\":[", op->block->b->idx);
    for (int j = 0; j < op->nout; j++) {
        if (j) fl_buf_putc(&b, ',');
        fl_trace_json_str(&b, op->args[op->nin + j].name);
    }
    fl_buf_putc(&b, ']');
    op->trace_args = b.data;
}

static FlStatus prepare_op(FlExec *ex, PBlock *pb, size_t k, FlErr *e) {
    const FlOpDesc *d = pb->b->ops.data[k];
    ExecOp *op = &pb->ops[k];
    op->desc = d;
    op->block = pb;
    op->index = (int)k;
    atomic_init(&op->count, 0);
    char where[600];
    char loc[512];
    fl_exec_loc_str(ex, d->loc, loc, sizeof loc);
    fl_exec_loc_str(ex, d->loc, op->where, sizeof op->where); /* a goroutine label: cut if long */
    snprintf(where, sizeof where, "%s: block %d, op %zu '%s'%s%s%s", "program", pb->b->idx, k,
             d->type, loc[0] ? " (" : "", loc, loc[0] ? ")" : "");
    FlErr ce;
    if (fl_ops_check(d, &ce) != FL_OK) return fl_err(e, "%s: %s", where, ce.msg);
    op->info = fl_ops_find(d->type);
    op->ad = op->info->is_grad ? grad_adapters[op->info->id] : fwd_adapters[op->info->id];
    FL_ASSERT(op->ad);

    /* arguments, in the table's slot order */
    int nin = 0, nout = 0;
    for (int s = 0; s < op->info->nins; s++) {
        const FlSlot *sl = fl_ir_op_input(d, op->info->ins[s].name);
        nin += sl ? (int)sl->nargs : 0;
    }
    for (int s = 0; s < op->info->nouts; s++) {
        const FlSlot *sl = fl_ir_op_output(d, op->info->outs[s].name);
        nout += sl ? (int)sl->nargs : 0;
    }
    op->nin = nin;
    op->nout = nout;
    op->args = fl_xcalloc((size_t)(nin + nout) + 1, sizeof *op->args);
    int n = 0;
    for (int s = 0; s < op->info->nins; s++) {
        op->in_off[s] = n;
        const FlSlot *sl = fl_ir_op_input(d, op->info->ins[s].name);
        for (size_t j = 0; sl && j < sl->nargs; j++) {
            /* the IR validator's rule (ir.c), for programs built in memory */
            if (fl_rule_is_empty(sl->args[j]))
                return fl_err(e, "%s: input slot '%s' position %zu holds the empty marker '%s': an "
                              "input must name a var", where, sl->name, j, FL_RULE_EMPTY);
            resolve_arg(pb, sl->args[j], &op->args[n++]);
        }
    }
    op->in_off[op->info->nins] = n;
    for (int s = 0; s < op->info->nouts; s++) {
        op->out_off[s] = n - nin;
        const FlSlot *sl = fl_ir_op_output(d, op->info->outs[s].name);
        for (size_t j = 0; sl && j < sl->nargs; j++) resolve_arg(pb, sl->args[j], &op->args[n++]);
    }
    op->out_off[op->info->nouts] = n - nin;
    /* LoD inputs combined row by row: the offsets compared before each run */
    FlLodPairs pairs = {0};
    fl_ops_lod_pairs(ex->prog, pb->b, d, &pairs);
    for (size_t i = 0; i < pairs.len; i++) {
        const FlLodPair *q = &pairs.data[i];
        if (q->var[0]->lod_level != q->var[1]->lod_level) {
            fl_err(e, "%s: its inputs %s '%s' (lod_level %d) and %s '%s' (lod_level %d) must be cut into the same "
                      "sequences, but they have different numbers of LoD levels",
                   where, q->slot[0], q->var[0]->name, q->var[0]->lod_level, q->slot[1], q->var[1]->name,
                   q->var[1]->lod_level);
            FL_VEC_FREE(&pairs);
            return FL_ERROR;
        }
        for (int l = 0; l < q->var[0]->lod_level; l++) {
            if (strcmp(q->var[0]->lod[l], q->var[1]->lod[l]) == 0) continue;
            op->lods = fl_xrealloc(op->lods, (size_t)(op->nlods + 1) * sizeof *op->lods);
            LodCheck *lc = &op->lods[op->nlods++];
            *lc = (LodCheck){.slot = {q->slot[0], q->slot[1]}, .var = {q->var[0]->name, q->var[1]->name}};
            resolve_arg(pb, q->var[0]->lod[l], &lc->off[0]);
            resolve_arg(pb, q->var[1]->lod[l], &lc->off[1]);
        }
    }
    FL_VEC_FREE(&pairs);
    /* SelectedRows: compute adapters read them densified; sparse adapters (compute or control:
     * send, listen_and_serv, allreduce) take them as they are; the others would find no tensor,
     * and only sparse adapters make them */
    for (int j = 0; j < n; j++) {
        if (!op->args[j].rows || op->ad->sparse || (op->ad->run && j < nin)) continue;
        return fl_err(e, "%s: %s '%s' is a SelectedRows (a sparse gradient), which op '%s' does not %s", where,
                      j < nin ? "input" : "output", op->args[j].name, d->type, j < nin ? "read" : "make");
    }

    /* sub-block */
    for (size_t i = 0; i < d->attrs.len; i++) {
        const FlAttr *at = &d->attrs.data[i];
        if (at->type == FL_ATTR_BLOCK) {
            if (at->i <= 0 || (size_t)at->i >= ex->nblocks)
                return fl_err(e, "%s: attribute '%s' names block %lld, which does not exist", where,
                              at->name, (long long)at->i);
            const PBlock *sub = &ex->blocks[at->i];
            if (sub->b->parent != pb->b->idx)
                return fl_err(e, "%s: its sub-block %lld is not a child of block %d", where,
                              (long long)at->i, pb->b->idx);
            op->sub = sub;
        } else if (at->type == FL_ATTR_BLOCKS) { /* select's sub_blocks */
            for (size_t j = 0; j < at->n; j++) {
                if (at->ints[j] <= 0 || (size_t)at->ints[j] >= ex->nblocks)
                    return fl_err(e, "%s: attribute '%s' names block %lld, which does not exist", where,
                                  at->name, (long long)at->ints[j]);
                if (ex->blocks[at->ints[j]].b->parent != pb->b->idx)
                    return fl_err(e, "%s: its sub-block %lld is not a child of block %d", where,
                                  (long long)at->ints[j], pb->b->idx);
            }
        }
    }
    /* random ops: the effective seed */
    if (fl_ops_attr(op->info, "seed")) {
        uint64_t seed = (uint64_t)fl_exec_attr_int(op, "seed");
        op->seed_given = seed != 0;
        if (seed == 0) {
            uint64_t x = ex->opt.seed ^ ((uint64_t)pb->b->idx << 32) ^ (uint64_t)k;
            x += 0x9e3779b97f4a7c15ULL;
            seed = fl_rng_splitmix64(&x);
            if (seed == 0) seed = 1;
        }
        op->seed = seed;
    }
    if (op->ad->prepare && op->ad->prepare(op, &ce) != FL_OK)
        return fl_err(e, "%s: %s", where, ce.msg);
    /* concurrency: goroutine state, and the ops that run inside a blocking region */
    if (op->info->flags & FL_OPF_CHAN) fl_conc_prepare(ex);
    op->region = (op->info->flags & (FL_OPF_DIST | FL_OPF_LONG)) != 0;
    if (ex->opt.trace) trace_args(op, loc);
    return FL_OK;
}

/* Block-0 vars (non-persistable, declared) that an op reads before any op writes them. The
 * inputs of distributed ops are not feeds: listen_and_serv's X are the vars it receives, recv's
 * X is informational, and send reports a missing value itself (ops_dist.c). */
static void compute_needs(FlExec *ex) {
    PBlock *pb = &ex->blocks[0];
    bool *written = fl_xcalloc(pb->layout.n + 1, 1);
    bool *needed = fl_xcalloc(pb->layout.n + 1, 1);
    for (size_t k = 0; k < pb->nops; k++) {
        const ExecOp *op = &pb->ops[k];
        for (int j = 0; j < op->nin && !(op->info->flags & FL_OPF_DIST); j++) {
            const ArgRef *a = &op->args[j];
            if (a->idx < 0 || a->up != 0 || a->shared || !pb->slots.data[a->idx].desc) continue;
            if (!written[a->idx] && !needed[a->idx]) {
                needed[a->idx] = true;
                FL_VEC_PUSH(&ex->needs, (size_t)a->idx);
            }
        }
        for (int j = 0; j < op->nout; j++) {
            const ArgRef *a = &op->args[op->nin + j];
            if (a->idx >= 0 && a->up == 0) written[a->idx] = true;
        }
    }
    free(written);
    free(needed);
}

uint64_t fl_call_draw_seed(const OpCall *c) {
    if (c->op->seed_given || c->rc->step == 0) return c->op->seed;
    uint64_t x = c->op->seed ^ (c->rc->step * 0x9e3779b97f4a7c15ULL);
    uint64_t seed = fl_rng_splitmix64(&x);
    return seed ? seed : 1;
}

uint64_t fl_exec_runs(const FlExec *ex) { return atomic_load(&((FlExec *)ex)->runs); }
void fl_exec_set_runs(FlExec *ex, uint64_t runs) { atomic_store(&ex->runs, runs); }

FlStatus fl_exec_new(const FlProgram *p, const char *const *sources, size_t nsources,
                     const FlExecOptions *opt, FlExec **out, FlErr *e) {
    *out = NULL;
    check_tables();
    FlExec *ex = fl_xcalloc(1, sizeof *ex);
    ex->prog = p;
    ex->sources = sources;
    ex->nsources = sources ? nsources : 0;
    if (opt) ex->opt = *opt;
    atomic_init(&ex->runs, 0);
    atomic_init(&ex->panic, false);
    ex->nblocks = p->blocks.len;
    ex->blocks = fl_xcalloc(ex->nblocks + 1, sizeof *ex->blocks);
    for (size_t i = 0; i < ex->nblocks; i++) {
        PBlock *pb = &ex->blocks[i];
        pb->b = p->blocks.data[i];
        fl_scope_layout_init(&pb->layout);
        if (pb->b->idx != (int)i || (i > 0 && (pb->b->parent < 0 || (size_t)pb->b->parent >= i))) {
            fl_err(e, "%s: block %zu has a bad index or parent", "program", i);
            goto fail;
        }
        pb->parent = i > 0 ? &ex->blocks[pb->b->parent] : NULL;
        pb->depth = block_depth(p, (int)i);
        for (size_t v = 0; v < pb->b->vars.len; v++) {
            const FlVarDesc *vd = pb->b->vars.data[v];
            size_t slot = fl_scope_layout_add(&pb->layout, vd->name);
            if (slot >= pb->slots.len) FL_VEC_PUSH(&pb->slots, ((SlotInfo){NULL, false}));
            pb->slots.data[slot] = (SlotInfo){vd, i == 0 && vd->persistable};
        }
    }
    for (size_t i = 0; i < ex->nblocks; i++) {
        PBlock *pb = &ex->blocks[i];
        pb->nops = pb->b->ops.len;
        pb->ops = fl_xcalloc(pb->nops + 1, sizeof *pb->ops);
        for (size_t k = 0; k < pb->nops; k++)
            if (prepare_op(ex, pb, k, e) != FL_OK) goto fail;
    }
    compute_needs(ex);
    *out = ex;
    return FL_OK;
fail:
    fl_exec_free(ex);
    return FL_ERROR;
}

void fl_exec_free(FlExec *ex) {
    if (!ex) return;
    fl_conc_free(ex); /* its goroutines use the blocks below */
    for (size_t i = 0; i < ex->nblocks; i++) {
        PBlock *pb = &ex->blocks[i];
        for (size_t k = 0; pb->ops && k < pb->nops; k++) {
            free(pb->ops[k].args);
            free(pb->ops[k].a.list);
            free(pb->ops[k].a.extra);
            free(pb->ops[k].trace_args);
            free(pb->ops[k].lods);
        }
        free(pb->ops);
        fl_scope_layout_fini(&pb->layout);
        FL_VEC_FREE(&pb->slots);
    }
    free(ex->blocks);
    FL_VEC_FREE(&ex->needs);
    free(ex);
}

size_t fl_exec_op_count(const FlExec *ex) {
    size_t n = 0;
    for (size_t i = 0; i < ex->nblocks; i++) n += ex->blocks[i].nops;
    return n;
}

/* ---------------------------------------------------------------- feeds, fetches, runs */

static FlStatus check_feed(const FlVarDesc *vd, const FlExecFeed *f, FlTensor *t, FlErr *e) {
    const FlTensor *x = f->tensor;
    if (!x || !fl_tensor_has_data(x)) return fl_err(e, "feed '%s': the tensor is empty", f->name);
    if (x->dtype != vd->dtype)
        return fl_err(e, "feed '%s': expected dtype %s, found %s", f->name,
                      fl_dtype_name(vd->dtype), fl_dtype_name(x->dtype));
    bool ok = x->ndim == vd->ndim;
    for (int i = 0; ok && i < vd->ndim; i++)
        if (vd->shape[i] >= 0 && vd->shape[i] != x->ne[i]) ok = false;
    if (ok) {
        fl_tensor_ref(t, x);
        return FL_OK;
    }
    /* flat rows: [N, k] (or any [N, ...]) into [-1, d1, ..., dm] with the same count per row
     * (counts past int64, as an empty feed's other dims may have, match nothing) */
    if (vd->ndim >= 1 && vd->shape[0] < 0 && x->ndim >= 1) {
        int64_t want = 1, have = 1;
        bool known = true;
        for (int i = 1; i < vd->ndim; i++)
            known = known && vd->shape[i] >= 0 && !__builtin_mul_overflow(want, vd->shape[i], &want);
        for (int i = 1; i < x->ndim; i++) known = known && !__builtin_mul_overflow(have, x->ne[i], &have);
        if (known && want == have) {
            int64_t ne[FL_MAX_DIMS];
            ne[0] = x->ne[0];
            for (int i = 1; i < vd->ndim; i++) ne[i] = vd->shape[i];
            FlErr ve;
            if (fl_tensor_view(&ve, t, x, 0, vd->ndim, ne) == FL_OK) return FL_OK;
        }
    }
    return fl_err(e, "feed '%s': expected shape %s, found %s", f->name,
                  fl_shape_str(vd->ndim, vd->shape).s, fl_tensor_shape(x).s);
}

/* Predict mode: mask[k] says whether block-0 op k is needed for the fetches (a backward
 * liveness pass in which writes to persistable vars are ignored); the slots still live at the
 * start (read before written) are pushed to *needs. */
static bool *prune(const FlExec *ex, const char *const *names, size_t n, SizeVec *needs) {
    const PBlock *pb = &ex->blocks[0];
    bool *live = fl_xcalloc(pb->layout.n + 1, 1);
    bool *mask = fl_xcalloc(pb->nops + 1, 1);
    for (size_t i = 0; i < n; i++) {
        long s = fl_scope_layout_find(&pb->layout, names[i]);
        if (s >= 0) live[s] = true;
    }
    for (size_t k = pb->nops; k-- > 0;) {
        const ExecOp *op = &pb->ops[k];
        bool need = false;
        for (int j = 0; j < op->nout && !need; j++) {
            const ArgRef *a = &op->args[op->nin + j];
            need = a->idx >= 0 && a->up == 0 && !a->shared && live[a->idx];
        }
        if (!need) continue;
        mask[k] = true;
        for (int j = 0; j < op->nout; j++) {
            const ArgRef *a = &op->args[op->nin + j];
            if (a->idx >= 0 && a->up == 0) live[a->idx] = false;
        }
        for (int j = 0; j < op->nin; j++) {
            const ArgRef *a = &op->args[j];
            if (a->idx >= 0 && a->up == 0) live[a->idx] = true;
        }
    }
    for (size_t s = 0; s < pb->layout.n; s++)
        if (live[s] && !pb->slots.data[s].shared && pb->slots.data[s].desc) FL_VEC_PUSH(needs, s);
    free(live);
    return mask;
}

/* A run (fl_exec_run); arrays: NULL, or where a fetch of a tensor array var puts its array (a
 * reference, NULL for the empty array) instead of a tensor in fetches. */
static FlStatus run_call(FlExec *ex, FlScope *scope, const FlExecFeed *feeds, size_t nfeeds,
                         const char *const *fetch_names, FlTensor *fetches, TArray **arrays, size_t nfetches,
                         unsigned flags, FlErr *e) {
    FL_ASSERT(scope);
    PBlock *pb = &ex->blocks[0];
    FlScope *call = fl_scope_new_layout(scope, &pb->layout);
    FlStatus st = FL_ERROR;
    FlTensor t = FL_TENSOR_INIT;
    SizeVec pneeds = {0};
    bool *mask = NULL;
    const size_t *needs = ex->needs.data;
    size_t nneeds = ex->needs.len;
    if (flags & FL_EXEC_PREDICT) {
        mask = prune(ex, fetch_names, nfetches, &pneeds);
        needs = pneeds.data;
        nneeds = pneeds.len;
    }
    for (size_t i = 0; i < nfeeds; i++) {
        const FlExecFeed *f = &feeds[i];
        long slot = fl_scope_layout_find(&pb->layout, f->name);
        if (slot < 0 || !pb->slots.data[slot].desc) {
            fl_err(e, "feed '%s': the program has no var of that name in its global block",
                   f->name);
            goto done;
        }
        if (check_feed(pb->slots.data[slot].desc, f, &t, e) != FL_OK) goto done;
        FlVar *v = fl_var_new();
        fl_var_take_tensor(v, &t);
        FlVar *got = fl_scope_slot_set(call, (size_t)slot, v);
        fl_var_release(v);
        if (got != v) {
            fl_err(e, "feed '%s' is given twice", f->name);
            goto done;
        }
    }
    for (size_t i = 0; i < nneeds; i++) {
        size_t slot = needs[i];
        if (fl_scope_slot(call, slot) || fl_scope_find(scope, pb->layout.names[slot])) continue;
        const FlVarDesc *vd = pb->slots.data[slot].desc;
        fl_err(e, "missing feed '%s' (%s %s): the program reads it and no feed or scope var gives it",
               vd->name, fl_dtype_name(vd->dtype), fl_shape_str(vd->ndim, vd->shape).s);
        goto done;
    }
    RunCtx rc = {.ex = ex, .step = atomic_fetch_add(&ex->runs, 1), .e = e,
                 .read_only = (flags & FL_EXEC_PREDICT) != 0};
    ConcRun cr = {0};
    if (ex->conc) fl_conc_run_begin(ex, scope, &rc, &cr);
    FlStatus rst = run_masked(&rc, pb, call, mask);
    if (ex->conc) rst = fl_conc_run_end(ex, &rc, &cr, rst);
    if (rst != FL_OK) goto done;
    for (size_t i = 0; i < nfetches; i++) {
        FlVar *v = fl_scope_find(call, fetch_names[i]);
        long slot = arrays ? fl_scope_layout_find(&pb->layout, fetch_names[i]) : -1;
        const FlVarDesc *vd = slot >= 0 ? pb->slots.data[slot].desc : NULL;
        if (vd && vd->kind == FL_VAR_TENSOR_ARRAY) { /* no var: nothing was written to it */
            arrays[i] = fl_array_retain(v);
            continue;
        }
        if (!v) {
            fl_err(e, "fetch '%s': no var of that name", fetch_names[i]);
            goto undo;
        }
        if (fl_var_get_tensor(v, &fetches[i])) continue;
        FlSelectedRows r;
        fl_rows_init(&r);
        bool rows = fl_var_get_rows(v, &r);
        FlStatus dst = rows ? fl_rows_to_dense(e, &r, &fetches[i]) : FL_ERROR; /* as its tensor */
        fl_rows_fini(&r);
        if (!rows) fl_err(e, "fetch '%s': the var has no value after the run", fetch_names[i]);
        if (dst != FL_OK) goto undo;
    }
    st = FL_OK;
    goto done;
undo:
    for (size_t i = 0; i < nfetches; i++) {
        fl_tensor_fini(&fetches[i]);
        if (arrays) fl_array_release(arrays[i]), arrays[i] = NULL;
    }
done:
    fl_tensor_fini(&t);
    fl_scope_release(call);
    free(mask);
    FL_VEC_FREE(&pneeds);
    return st;
}

FlStatus fl_exec_run(FlExec *ex, FlScope *scope, const FlExecFeed *feeds, size_t nfeeds,
                     const char *const *fetch_names, FlTensor *fetches, size_t nfetches,
                     unsigned flags, FlErr *e) {
    return run_call(ex, scope, feeds, nfeeds, fetch_names, fetches, NULL, nfetches, flags, e);
}

FlStatus fl_exec_run_into(FlExec *ex, FlScope *scope, const FlExecFeed *feeds, size_t nfeeds,
                          const char *const *fetch_names, FlVar *const *outs, size_t nfetches,
                          unsigned flags, FlErr *e) {
    FlTensor *t = fl_xcalloc(nfetches + 1, sizeof *t);
    TArray **arrays = fl_xcalloc(nfetches + 1, sizeof *arrays);
    for (size_t i = 0; i < nfetches; i++) fl_tensor_init(&t[i]);
    FlStatus st = run_call(ex, scope, feeds, nfeeds, fetch_names, t, arrays, nfetches, flags, e);
    bool *is_array = fl_xcalloc(nfetches + 1, sizeof *is_array);
    for (size_t i = 0; i < nfetches; i++) {
        long slot = fl_scope_layout_find(&ex->blocks[0].layout, fetch_names[i]);
        const FlVarDesc *vd = slot >= 0 ? ex->blocks[0].slots.data[slot].desc : NULL;
        is_array[i] = vd && vd->kind == FL_VAR_TENSOR_ARRAY;
        if (st == FL_OK && is_array[i] && !arrays[i] && !(arrays[i] = fl_array_empty()))
            st = fl_err(e, "fetch '%s': out of memory for an empty array", fetch_names[i]);
    }
    for (size_t i = 0; i < nfetches; i++) { /* every out or none */
        if (st == FL_OK && is_array[i]) fl_array_set(outs[i], arrays[i]), arrays[i] = NULL;
        else if (st == FL_OK) fl_var_take_tensor(outs[i], &t[i]);
        fl_array_release(arrays[i]);
        fl_tensor_fini(&t[i]);
    }
    free(is_array);
    free(t);
    free(arrays);
    return st;
}
