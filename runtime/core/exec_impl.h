/* exec_impl.h: the executor's internals shared with the op adapters (runtime/core only).
 *
 * A prepared op (ExecOp) holds its adapter, its arguments resolved to ArgRefs (inputs then
 * outputs, flat, grouped by the op table's slot order: slot s of the table owns args
 * [in_off[s], in_off[s+1])), its parsed attributes and its sub-blocks.
 *
 * Adapters come in two kinds:
 *  - compute adapters (`run`): the executor loads every input into a tensor, passes empty output
 *    tensors, and after `run` stores every output that received data into its var (replacing it
 *    whole). An output the program does not want (absent slot, FL_EMPTY_ARG) is passed as NULL.
 *  - control adapters (`control`): they get the scope and do everything themselves (sub-blocks,
 *    aliases); they report their own errors with fl_exec_op_error.
 *
 * Every op of ops.def has a forward adapter `fl_adapter_<op>` and every differentiable one a
 * gradient adapter `fl_adapter_<op>_grad`; the tables in exec.c name them through the ops.def
 * X-macro, so a missing adapter fails the build (link error).
 */
#ifndef FL_EXEC_IMPL_H
#define FL_EXEC_IMPL_H

#include <stdatomic.h>

#include "compiler/ir/rules.h"
#include "compiler/op_slots.h" /* FL_IN_<op>_<slot>, FL_OUT_<op>_<slot>: generated from ops.def */
#include "compiler/ops.h"
#include "runtime/core/exec.h"
#include "runtime/kernels/kernels.h"

#define FL_EMPTY_ARG FL_RULE_EMPTY

typedef struct PBlock PBlock;
typedef struct ExecOp ExecOp;
typedef struct FlExecConc FlExecConc;
typedef struct FlSched FlSched;
typedef struct ConcLabel ConcLabel;

typedef struct ArgRef {
    const char *name; /* borrowed from the program */
    int up;           /* scopes to walk up from the running block's scope to the declaring one */
    int idx;          /* slot in that scope's layout; -1: no var (FL_EMPTY_ARG) */
    bool shared;      /* a persistable var of block 0: lives in the caller's scope */
    bool rows;        /* declared a SelectedRows (FL_VAR_SELECTED_ROWS) */
} ArgRef;

/* Two offsets vars of one LoD level that an op's LoD inputs must share (fl_ops_lod_pairs),
 * compared before the op runs. */
typedef struct LodCheck {
    ArgRef off[2];       /* [0]: the first LoD input's offsets, [1]: the other input's */
    const char *slot[2]; /* the inputs' slots and vars, for the message (borrowed) */
    const char *var[2];
} LodCheck;

/* Parsed attributes; each adapter's prepare says which fields it uses. */
typedef struct PAttrs {
    int64_t i[4];
    double f[4];
    bool b[4];
    int dims[FL_MAX_DIMS];        /* an int list (perm, dims, axis lists) */
    int ndims;
    int64_t shape[FL_MAX_DIMS];   /* a shape */
    int nshape;
    int64_t *list;                /* a longer int list (sections), owned */
    const char *str;              /* a string attribute, borrowed from the program */
    int nlist;
    void *extra;                  /* adapter-owned struct (conv/pool attrs), freed with free() */
} PAttrs;

typedef struct RunCtx RunCtx;
typedef struct OpCall OpCall;

typedef struct FlAdapter {
    const char *name;
    /* Parses attributes into op->a; may be NULL. Errors name the attribute. */
    FlStatus (*prepare)(ExecOp *op, FlErr *e);
    FlStatus (*run)(OpCall *c);                                    /* compute ops */
    FlStatus (*control)(RunCtx *rc, const ExecOp *op, FlScope *s); /* control ops */
    bool sparse; /* run takes SelectedRows inputs as they are (OpCall.in_rows); other compute
                  * adapters get them densified (the tensor they stand for) */
} FlAdapter;

struct ExecOp {
    const FlOpDesc *desc;
    const FlOpInfo *info;
    const FlAdapter *ad;
    const PBlock *block;
    int index;             /* in its block */
    ArgRef *args;          /* nin inputs, then nout outputs */
    int nin, nout;
    int in_off[FL_OPS_MAX_SLOTS + 1];  /* per table input slot */
    int out_off[FL_OPS_MAX_SLOTS + 1]; /* per table output slot (offsets from args + nin) */
    PAttrs a;
    uint64_t seed;         /* random ops: the effective seed */
    bool seed_given;       /* its program gave the seed attribute (not 0) */
    const PBlock *sub;     /* the BLOCK attribute's block, if any */
    atomic_long count;     /* Print's first_n counter */
    char where[160];       /* "file:line:col" of the op ("" without a loc): the label a goroutine
                            * blocked in it has in reports; written at prepare, never after */
    bool region;           /* may block its thread for long (MPI, GEMM): run inside
                            * fl_sched_block_begin/end so goroutines keep running (exec.c) */
    char *trace_args;      /* with FlExecOptions.trace: the args of its spans (JSON members:
                            * line, block, outputs), made at prepare; owned */
    LodCheck *lods;        /* the offsets its LoD inputs must share, compared before it runs;
                            * owned */
    int nlods;
};

typedef struct SlotInfo {
    const FlVarDesc *desc; /* NULL for a name no block declares */
    bool shared;
} SlotInfo;

struct PBlock {
    const FlBlock *b;
    const PBlock *parent;
    int depth;
    FlScopeLayout layout;
    FL_VEC(SlotInfo) slots;
    ExecOp *ops;
    size_t nops;
};

typedef FL_VEC(size_t) SizeVec;

struct FlExec {
    const FlProgram *prog;
    const char *const *sources;
    size_t nsources;
    FlExecOptions opt;
    PBlock *blocks;
    size_t nblocks;
    SizeVec needs;        /* block-0 slots read before written (feeds) */
    atomic_ullong runs;   /* run counter (dropout streams) */
    FlExecConc *conc;     /* goroutine state (conc.c); NULL when the program has no
                           * go / channel / select op */
    atomic_bool panic;    /* a goroutine failed: every block of every run stops at its next op
                           * (Go's panic ends the program; set by conc.c) */
};

struct RunCtx {
    FlExec *ex;
    uint64_t step;  /* this call's run number */
    bool read_only; /* FL_EXEC_PREDICT: writes to persistable vars are dropped */
    FlErr *e;
    FlSched *sched;    /* the run's scheduler when the program uses concurrency ops */
    ConcLabel *label;  /* the running goroutine's (or attached thread's) report label */
    bool iteration;    /* in a parallel_for iteration: long kernels keep the processor (exec.c) */
};

struct OpCall {
    RunCtx *rc;
    const ExecOp *op;
    FlErr *e;
    FlScope *s;                /* the scope the op runs in (fl_exec_var_read finds its vars);
                                * NULL for calls made outside the executor */
    const FlTensor *const *in; /* per input arg; NULL for FL_EMPTY_ARG */
    FlTensor *const *out;      /* per output arg; NULL when not wanted */
    /* SelectedRows (runtime/rows.h). in_rows[i]: what input arg i holds when it is one and the
     * adapter is sparse (in[i] is then its value block), else NULL. out_rows[i]: where the
     * adapter puts output arg i when the program declares it a SelectedRows (then out[i] is
     * NULL), else NULL. Both arrays may be NULL (calls made outside the executor: the pserver's
     * in-place updates), meaning no SelectedRows at all; read them through the accessors. */
    const FlSelectedRows *const *in_rows;
    FlSelectedRows *const *out_rows;
};

/* ---- slot access for compute adapters (s = the slot's position in the op table) ---- */
/* Control ops' slots: the arguments of table input slot s (FL_IN_<op>_<slot>) and their count;
 * the same for output slots. */
static inline int fl_exec_nin(const ExecOp *op, int s) { return op->in_off[s + 1] - op->in_off[s]; }
static inline int fl_exec_nout(const ExecOp *op, int s) { return op->out_off[s + 1] - op->out_off[s]; }
static inline const ArgRef *fl_exec_in_args(const ExecOp *op, int s) { return &op->args[op->in_off[s]]; }
static inline const ArgRef *fl_exec_out_args(const ExecOp *op, int s) { return &op->args[op->nin + op->out_off[s]]; }
/* The seed of this run's draws for the ops that draw a fresh tensor each run (uniform_random,
 * gaussian_random, ...): with a seed from the program, the op's seed every run (Fluid re-seeds
 * its engine with it on each run, so the values repeat); with seed 0, the op's derived seed on
 * the first run and a mix of it and the run number after (Fluid draws anew from
 * std::random_device each run; here the draws stay a function of flrun --seed). */
uint64_t fl_call_draw_seed(const OpCall *c);
static inline int fl_call_nin(const OpCall *c, int s) { return c->op->in_off[s + 1] - c->op->in_off[s]; }
static inline int fl_call_nout(const OpCall *c, int s) { return c->op->out_off[s + 1] - c->op->out_off[s]; }
/* The first tensor of input slot s; NULL when the slot is absent, empty or FL_EMPTY_ARG. */
static inline const FlTensor *fl_call_in(const OpCall *c, int s) {
    return fl_call_nin(c, s) ? c->in[c->op->in_off[s]] : NULL;
}
static inline const FlTensor *const *fl_call_ins(const OpCall *c, int s) { return c->in + c->op->in_off[s]; }
/* The first output of slot s; NULL when not wanted. */
static inline FlTensor *fl_call_out(const OpCall *c, int s) {
    return fl_call_nout(c, s) ? c->out[c->op->out_off[s]] : NULL;
}
static inline FlTensor *const *fl_call_outs(const OpCall *c, int s) { return c->out + c->op->out_off[s]; }
/* The SelectedRows of input slot s's first arg (sparse adapters); NULL when it is dense. */
static inline const FlSelectedRows *fl_call_in_rows(const OpCall *c, int s) {
    return c->in_rows && fl_call_nin(c, s) ? c->in_rows[c->op->in_off[s]] : NULL;
}
/* The SelectedRows of input slot s's args; NULL when the call has none. */
static inline const FlSelectedRows *const *fl_call_ins_rows(const OpCall *c, int s) {
    return c->in_rows ? c->in_rows + c->op->in_off[s] : NULL;
}
/* Where output slot s's first arg goes when it is declared a SelectedRows; NULL otherwise. */
static inline FlSelectedRows *fl_call_out_rows(const OpCall *c, int s) {
    return c->out_rows && fl_call_nout(c, s) ? c->out_rows[c->op->out_off[s]] : NULL;
}

/* ---- for control adapters ---- */
/* Runs pb's ops in order in scope s (whose layout is pb's). */
FlStatus fl_exec_block(RunCtx *rc, const PBlock *pb, FlScope *s) FL_WARN_UNUSED;
/* The var an argument names, for reading (NULL when none exists) or writing (created in the
 * declaring block's scope when absent; shared vars in the caller's scope). */
/* ops_array.c: a tensor array as a value that leaves a run (a driver's fetch, print_line). The
 * array var v holds, retained (NULL: the empty array; release it with fl_array_release, NULL a
 * no-op); its length and element i (NULL: never written); a new empty array (NULL: out of
 * memory); v set to hold array a (its reference taken). */
typedef struct TArray TArray;
TArray *fl_array_retain(FlVar *v);
void fl_array_release(TArray *a);
int64_t fl_array_len(const TArray *a);
const FlTensor *fl_array_at(const TArray *a, int64_t i);
TArray *fl_array_empty(void);
void fl_array_set(FlVar *v, TArray *a);
FlVar *fl_exec_var_read(FlScope *s, const ArgRef *a);
FlVar *fl_exec_var_write(FlScope *s, const ArgRef *a);
/* The declaration of the var an argument names (NULL for a name no block declares). */
static inline const FlVarDesc *fl_exec_arg_desc(const ExecOp *op, const ArgRef *a) {
    const PBlock *pb = op->block;
    for (int i = 0; i < a->up && pb; i++) pb = pb->parent;
    return pb && a->idx >= 0 && (size_t)a->idx < pb->slots.len ? pb->slots.data[a->idx].desc : NULL;
}
/* The scope holding args declared `up` blocks out. */
FlScope *fl_exec_scope_up(FlScope *s, int up);
/* Sets rc->e to "runtime error in op 'T' (file:line:col): <fmt...>" and returns FL_ERROR. */
FlStatus fl_exec_op_error(RunCtx *rc, const ExecOp *op, const char *fmt, ...) FL_PRINTF(3, 4);
/* The iterations a while op keeps for while_grad in its StepScopes output (ops_rnn_ctl.c): each
 * iteration runs in fl_while_run_step's scope, then fl_while_run_snap keeps the values of the
 * op's Out vars (fl_while_run_new those before the loop); fl_while_run_keep hands the run to
 * StepScopes (or frees it). */
typedef struct WhileRun WhileRun;
WhileRun *fl_while_run_new(const ExecOp *op, FlScope *s);
FlScope *fl_while_run_step(WhileRun *r, FlScope *s);
void fl_while_run_snap(WhileRun *r, const ExecOp *op, FlScope *s);
void fl_while_run_keep(WhileRun *r, const ExecOp *op, FlScope *s);
/* "file:line:col" of a location, or "" when it has none. */
void fl_exec_loc_str(const FlExec *ex, FlLoc loc, char *buf, size_t n);

/* ---- concurrency hooks (conc.c), called by exec.c and the adapters of ops_chan.c ---- */
/* At prepare: notes that the program uses concurrency ops (creates ex->conc). */
void fl_conc_prepare(FlExec *ex);
void fl_conc_free(FlExec *ex); /* frees the executor's own scheduler first (waits for goroutines) */
/* Around a run of block 0 when ex->conc: picks the scheduler (the one attached to the caller's
 * scope with fl_conc_attach, else the executor's own, made on first use), attaches the calling
 * thread when it is neither a goroutine nor attached, and at the end detaches it and returns the
 * first error of a goroutine of this executor when one failed (Go's panic in a goroutine ends
 * the program), replacing st. */
struct ConcLabel {
    int64_t owner;  /* fl_go_id() of the goroutine or thread that may relabel itself */
    const void *op; /* the op its label names (its where string) */
};
typedef struct ConcRun {
    bool attached;
    ConcLabel label;
} ConcRun;
void fl_conc_run_begin(FlExec *ex, FlScope *scope, RunCtx *rc, ConcRun *cr);
FlStatus fl_conc_run_end(FlExec *ex, RunCtx *rc, ConcRun *cr, FlStatus st);
/* Names op as the place the caller may block at, in its report label (before a blocking op). */
void fl_conc_set_where(RunCtx *rc, const ExecOp *op);
/* FL_OK when the run has a scheduler, else op's error "no goroutine scheduler could be started". */
FlStatus fl_conc_need_sched(RunCtx *rc, const ExecOp *op) FL_WARN_UNUSED;
/* Starts body(rc', op, arg) as a goroutine labelled with op's location, rc' a copy of rc with an
 * error and a report label of its own; a failing body's error is kept for the next run's end
 * (fl_conc_run_end). done(arg) releases what arg owns: after body returns, or at once when the
 * goroutine cannot start (then op's error is returned). rc->sched must be set. */
/* Go's panic of a goroutine or parallel_for iteration that failed with msg: msg is kept for the
 * end of the run (the first only), every block of the executor stops at its next op and the
 * scheduler wakes every blocked party (fl_sched_panic). */
void fl_conc_panic(RunCtx *rc, const char *msg);
/* Whether a goroutine's error msg only says it was woken by a deadlock, a scheduler shutdown or
 * another goroutine's panic (then it is no panic of its own). */
bool fl_conc_is_abort(RunCtx *rc, const char *msg);
typedef FlStatus (*FlConcBody)(RunCtx *rc, const ExecOp *op, void *arg);
FlStatus fl_conc_go(RunCtx *rc, const ExecOp *op, FlConcBody body, void (*done)(void *arg),
                    void *arg) FL_WARN_UNUSED;

/* ---- LoD offsets (docs/sequences.md) ---- */
/* Checks that off (the offsets input `slot` of a sequence op) is an int64 vector [nseq + 1] with
 * off[0] == 0, non-decreasing, and off[nseq] == rows (the rows it cuts; -1: any), and gives its
 * values and nseq. The error names the slot and the first bad offset (the executor adds the op
 * and its .fl line). */
FlStatus fl_exec_check_lod(FlErr *e, const FlTensor *off, int64_t rows, const char *slot, const int64_t **offsets,
                           int64_t *nseq) FL_WARN_UNUSED;

/* ---- SelectedRows gradients of the optimizers (ops_optim.c) ---- */
/* fn runs a dense update on the rows grad touches: rows_in[i] holds those rows of full[i],
 * fn writes their updated values to rows_out[i] (each a fresh empty tensor). */
typedef FlStatus (*FlRowsUpdateFn)(OpCall *c, void *ctx, const FlTensor *grad, const FlTensor *const *rows_in,
                                   FlTensor *const *rows_out);
/* The update of a sparse optimizer that leaves the rows no id touched as they are: merges g
 * (duplicate rows added), gathers its rows of each full[i] (Param and its row-shaped states),
 * runs fn on them with the merged value as the gradient, and sets outs[i] (NULL: not wanted) to
 * full[i] with the updated rows: full[i]'s own buffer, written in place, when outs[i] writes
 * full[i]'s var and nobody but that var and the call holds the buffer (fl_var_lock_sole), else
 * a copy. Errors name the kernel's complaint. */
FlStatus fl_exec_rows_update(OpCall *c, const FlSelectedRows *g, const FlTensor *const *full, FlTensor *const *outs,
                             int n, FlRowsUpdateFn fn, void *ctx) FL_WARN_UNUSED;

/* ---- attribute helpers for prepare (defaults come from the op table) ---- */
int64_t fl_exec_attr_int(const ExecOp *op, const char *name);
double fl_exec_attr_float(const ExecOp *op, const char *name);
bool fl_exec_attr_bool(const ExecOp *op, const char *name);
const char *fl_exec_attr_string(const ExecOp *op, const char *name);
/* An INTS attribute: its values and count (the default when absent). */
const int64_t *fl_exec_attr_ints(const ExecOp *op, const char *name, size_t *n);
/* The exact integers of FLOAT or FLOATS attribute `attr` in its INTS twin (fl_ops_int_twin):
 * NULL when the twin is empty (the float values hold), else its values, as many as the float
 * attribute holds and each the same number (fl_ops_check, run on every op loaded, says so). */
const int64_t *fl_exec_attr_exact(const ExecOp *op, const char *attr);
/* A FLOATS attribute: its values and count (the default when absent). */
const double *fl_exec_attr_floats(const ExecOp *op, const char *name, size_t *n);
/* An INTS attribute of at most FL_MAX_DIMS values into op->a.dims/ndims (axis lists) or
 * op->a.shape/nshape (shapes); the error names the attribute. */
FlStatus fl_exec_attr_dims(ExecOp *op, const char *name, FlErr *e) FL_WARN_UNUSED;
FlStatus fl_exec_attr_shape(ExecOp *op, const char *name, FlErr *e) FL_WARN_UNUSED;
/* The prepare of ops whose only attribute is "axis": op->a.i[0]. */
FlStatus fl_exec_prep_axis(ExecOp *op, FlErr *e);
/* The prepare of the reductions (reduce_sum, reduce_max, ...): dims in op->a.dims, keep_dim in
 * op->a.b[0], reduce_all in op->a.b[1] (ops_nn.c). */
FlStatus fl_exec_prep_reduce(ExecOp *op, FlErr *e);
/* The adapter of a reduction op <name>: fl_kernel_<name> on X with the prepared dims, keep_dim
 * and reduce_all (each file writes its gradient's adapter: the gradients take other inputs). */
#define FL_REDUCE_ADAPTER(name)                                                                      \
    static FlStatus run_##name(OpCall *c) {                                                          \
        const PAttrs *a = &c->op->a;                                                                 \
        return fl_kernel_##name(c->e, fl_call_in(c, FL_IN_##name##_X), a->dims, a->ndims, a->b[0],    \
                                a->b[1], fl_call_out(c, FL_OUT_##name##_Out));                       \
    }                                                                                                \
    FL_ADAPTER(name, fl_exec_prep_reduce, run_##name)
/* strides, paddings, dilations (2 ints each) and groups into an FlConv2dAttrs in op->a.extra
 * (conv2d, conv2d_transpose). */
FlStatus fl_exec_prep_conv2d(ExecOp *op, FlErr *e);
/* pooling_type (when the op has it), ksize, strides, paddings (nsp ints each), global_pooling,
 * exclusive, ceil_mode and adaptive into an FlPoolNdAttrs in op->a.extra (pool3d, the
 * with_index poolings, pool2d's adaptive windows; ops_conv3.c). */
FlStatus fl_exec_prep_pool_nd(ExecOp *op, FlErr *e, int nsp);

/* ---- the adapter tables ---- */
#define FL_OP(id, ins, outs, attrs, grad, flags, desc) extern const FlAdapter fl_adapter_##id;
#include "compiler/ops.def"
#undef FL_OP
#define FL_GRAD_ADAPTER_DECL_FL_GRAD_DEFAULT(id) extern const FlAdapter fl_adapter_##id##_grad;
#define FL_GRAD_ADAPTER_DECL_FL_GRAD_CUSTOM(id) extern const FlAdapter fl_adapter_##id##_grad;
#define FL_GRAD_ADAPTER_DECL_FL_GRAD_NONE(id)
#define FL_GRAD_ADAPTER_DECL_FL_GRAD_STOP(id)
#define FL_OP(id, ins, outs, attrs, grad, flags, desc) FL_GRAD_ADAPTER_DECL_##grad(id)
#include "compiler/ops.def"
#undef FL_OP

/* Adapter definition helpers. */
#define FL_ADAPTER(id, prep, fn) const FlAdapter fl_adapter_##id = {#id, prep, fn, NULL, false}
#define FL_CONTROL_ADAPTER(id, prep, fn) const FlAdapter fl_adapter_##id = {#id, prep, NULL, fn, false}
/* A compute adapter that reads SelectedRows inputs as they are (OpCall.in_rows). */
#define FL_SPARSE_ADAPTER(id, prep, fn) const FlAdapter fl_adapter_##id = {#id, prep, fn, NULL, true}
/* A control adapter that handles SelectedRows vars itself (fl_var_get_rows / take_rows). */
#define FL_SPARSE_CONTROL_ADAPTER(id, prep, fn) const FlAdapter fl_adapter_##id = {#id, prep, NULL, fn, true}

#endif
