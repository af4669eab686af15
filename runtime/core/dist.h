/* dist.h: the hook between the distributed ops and a transport.
 *
 * The ops send, recv, send_barrier, fetch_barrier and listen_and_serv (adapters in ops_dist.c)
 * do not talk MPI themselves: they call an FlDist, a table of functions that a transport fills
 * (runtime/mpi/mpi.c is the one transport). The embedder (flrun) attaches the transport to the
 * ROOT scope it runs programs on with fl_dist_attach: it becomes the object var FL_DIST_VAR of
 * that scope, and the adapters find it from the scope running them (fl_dist_find), so neither
 * the executor nor the embedding API knows about distribution. Without a transport the dist ops
 * fail with "op 'send' needs the distributed runtime: run the program with flrun under mpirun".
 *
 * Trainer side: send(pserver, name, tensor), recv(pserver, name) -> tensor, barrier(kind).
 * `pserver` is the op's epmap entry, -1 when the op has none (the transport then picks the
 * server). `name` is the var's REAL name: when the op's argument is a list_index alias (the
 * hand-written seed_worker.fl sends `splited["grad"][i]`), the adapter passes the name of the
 * var the alias picked ("fc_0.w_0@GRAD.block0"), never the alias's own name.
 *
 * Pserver side: the listen_and_serv adapter hands the transport an FlDistServer (the running
 * op: its scope, its optimize blocks, grad_to_block, sync_mode) and the transport's serve()
 * runs the whole receive / optimize / answer loop with the functions below, returning when every
 * trainer is done.
 *
 * Errors: every function returns FL_OK or FL_ERROR with a message in e; the adapters wrap the
 * message with the op and its .fl line. Thread-safety: send and recv may be called from several
 * threads of one process at once (parallel_for in hand-written workers); fl_dist_server_run may
 * run different blocks on several threads at once.
 */
#ifndef FL_DIST_H
#define FL_DIST_H

#include <stddef.h>

#include "base/base.h"
#include "runtime/core/scope.h"
#include "runtime/tensor.h"

#define FL_DIST_VAR "@DIST@" /* the root scope's object var holding the FlDist */

typedef struct FlDistServer FlDistServer; /* a running listen_and_serv op (ops_dist.c) */

typedef enum FlDistBarrier { FL_DIST_SEND_BARRIER, FL_DIST_FETCH_BARRIER, FL_DIST_BARRIER_COUNT } FlDistBarrier;

typedef struct FlDist FlDist;
struct FlDist {
    /* Sends t (borrowed; the transport keeps its own buffer reference while the bytes are in
     * flight, so the caller may drop t at once) to pserver `pserver` (-1: the transport picks). */
    FlStatus (*send)(FlDist *d, int pserver, const char *name, const FlTensor *t, FlErr *e);
    /* Sends the SelectedRows r (a sparse gradient block; borrowed) to pserver `pserver`, as
     * send does a tensor. May be NULL: the transport takes no SelectedRows. */
    FlStatus (*send_rows)(FlDist *d, int pserver, const char *name, const FlSelectedRows *r, FlErr *e);
    /* Receives var `name` from pserver `pserver` into *out (a new tensor; *out is released). */
    FlStatus (*recv)(FlDist *d, int pserver, const char *name, FlTensor *out, FlErr *e);
    FlStatus (*barrier)(FlDist *d, FlDistBarrier kind, FlErr *e);
    /* May be NULL. Announces that this thread's next recv ops will receive `name` from pserver
     * `pserver`, so the transport may ask for it at once; the recv that follows claims it. The
     * recv adapter announces a whole run of consecutive recv ops at the first, so a plan's
     * parameters are requested together instead of one round trip after another. */
    FlStatus (*prefetch)(FlDist *d, int pserver, const char *name, FlErr *e);
    /* Distributed tables: for each i < n, asks pserver ps[i] for the rows ids[i] (int64, rebased to
     * the block `names[i]` it holds) of that block and receives them into out[i] (a new [len,
     * width] tensor; released first). Every request is posted before the first answer is awaited.
     * A sync pserver answers with the block as updated by the requester's previous step. May be
     * NULL: the transport has no distributed tables. */
    FlStatus (*lookup)(FlDist *d, size_t n, const int *ps, const char *const *names, const FlTensor *ids,
                       FlTensor *out, FlErr *e);
    /* The pserver loop; returns when every trainer has finished. */
    FlStatus (*serve)(FlDist *d, FlDistServer *srv, FlErr *e);
    /* Allreduce jobs (no pservers): out[i] (a new tensor; released first) = the sum over the
     * trainers of w_t * in[i] of trainer t, w_t = the trainer's rows / the step's global rows
     * (w_t = 1 with loss_sum: the loss is a sum over the batch's rows), the same values on every
     * trainer. Every trainer calls it with the same names, dtypes and shapes in the same order;
     * names are for messages. May be NULL. */
    FlStatus (*allreduce)(FlDist *d, size_t n, const char *const *names, const FlTensor *in, FlTensor *out,
                          bool loss_sum, FlErr *e);
    /* Allreduce jobs, a SelectedRows gradient: *out (released first) = every trainer's rows in
     * trainer order, each trainer's value weighted by its w_t as allreduce weighs a tensor
     * (the global batch's sparse gradient, rows in batch order). Every trainer calls it at the
     * same point (inside the allreduce op, in X's order). May be NULL. */
    FlStatus (*allgather_rows)(FlDist *d, const char *name, const FlSelectedRows *in, bool loss_sum,
                               FlSelectedRows *out, FlErr *e);
    /* A driver's step (docs/driver.md, "Plans: each role's driver"): the driver's run_program of a
     * trainer's main program calls step_begin before it and step_end after it (its sends
     * completed). step: the step's number over the run (0-based), negative for the next after
     * the steps so far; rows and rows_global: the trainer's rows and the global batch's
     * (fluid.train's share), 0 and 0 for equal weights (a script feeding its trainer's own
     * batch). May be NULL. */
    void (*step_begin)(FlDist *d, int64_t step, int64_t rows, int64_t rows_global);
    FlStatus (*step_end)(FlDist *d, FlErr *e);
};

/* Makes d the transport of every program run on `root` and its child scopes (d is borrowed: it
 * must outlive those runs). */
void fl_dist_attach(FlScope *root, FlDist *d);
/* The transport attached to s or an ancestor; NULL when none. */
FlDist *fl_dist_find(FlScope *s);

/* ---- the running listen_and_serv op, for the transport's serve() ---- */

bool fl_dist_server_sync(const FlDistServer *s);       /* sync_mode */
bool fl_dist_server_loss_sum(const FlDistServer *s);   /* loss_sum: each trainer weighs 1 */
size_t fl_dist_server_nblocks(const FlDistServer *s);  /* optimize blocks */
bool fl_dist_server_has_lr(const FlDistServer *s);     /* an lr_block */
/* grad_to_block: entry i's gradient name (as the trainers send it) and optimize block index
 * (0-based in optimize_blocks). */
size_t fl_dist_server_ngrads(const FlDistServer *s);
const char *fl_dist_server_grad(const FlDistServer *s, size_t i, size_t *block);
/* The server program declares var `name` a SelectedRows (a sparse gradient it receives). */
bool fl_dist_server_var_is_rows(const FlDistServer *s, const char *name);
/* Optimize block k's ops write var `name` (a parameter the block updates). */
bool fl_dist_server_block_writes(const FlDistServer *s, size_t k, const char *name);
/* The var `name` of the server program's global block (created empty when declared but unset;
 * persistable vars live in the root scope); NULL when the program has no such var. Borrowed. */
FlVar *fl_dist_server_var(FlDistServer *s, const char *name);
/* Sets var `name` to a zero gradient: zeros of its declared dtype and shape, or a SelectedRows of
 * its declared height with no rows (an absent trainer's copy of a gradient). Errors: no such
 * var, a shape with an unknown dimension. */
FlStatus fl_dist_server_zero(FlDistServer *s, const char *name, FlErr *e) FL_WARN_UNUSED;
/* Runs optimize block k (k == fl_dist_server_nblocks(): the lr_block) in a child scope of the
 * server's scope. Different blocks may run on different threads at once. */
FlStatus fl_dist_server_run(FlDistServer *s, size_t k, FlErr *e) FL_WARN_UNUSED;
/* Optimize block k's head when it is the transpiled sync mean of gradient `grad` over n
 * trainers (docs/distributed.md, "Pserver programs"):
 *     sum X=[grad.trainer_0 .. grad.trainer_{n-1}] -> Out=[grad]
 *     scale X=[grad] -> Out=[grad] {scale, bias, bias_after_scale}
 * and no later op of the block reads a grad.trainer_t. Then the transport may compute the
 * scaled sum itself, in one pass as the gradients arrive, set it into `out`, and run the block
 * from op `skip` (fl_dist_server_run_from) instead of storing the per-trainer vars. */
typedef struct FlDistMean {
    FlVar *out;       /* the var `grad` (borrowed) */
    double scale, bias;
    bool bias_after_scale;
    size_t skip;      /* ops the transport has done (2) */
} FlDistMean;
bool fl_dist_server_find_mean(FlDistServer *s, size_t k, const char *grad, int n, FlDistMean *out);
/* fl_dist_server_run from op `first` of block k (first <= the block's op count). */
FlStatus fl_dist_server_run_from(FlDistServer *s, size_t k, size_t first, FlErr *e) FL_WARN_UNUSED;
/* ---- element-wise updates in pieces (the pserver's pipelined sync updates) ----
 * When optimize block k, from op `first` on, is a single optimizer op (FL_OPF_OPTIMIZE: sgd,
 * momentum, adam) whose every input holds either n elements (the parameter, the gradient, the
 * state) or one (learning rate, beta powers), and whose n-element outputs each update the input
 * of the same var (ParamOut = Param), the update of element i reads only element i. The
 * transport may then run it on element ranges as the gradient's pieces arrive, and send the
 * parameter's finished ranges while later ones are still coming:
 *     fl_dist_server_updatable(srv, k, first)           the block's ops allow it (static)
 *     FlDistUpdate *u;
 *     fl_dist_update_begin(srv, k, first, n, grad, dt, &u, e);  u == NULL: the tensors do not
 *                                                       allow it (run the block whole)
 *     fl_dist_update_run(u, i0, i1, gp, e);  ...        ranges covering [0, n), each element once
 *     fl_dist_update_tensor(u, var, &t);                the tensor var will hold: a finished
 *                                                       range of it may be sent at once
 *     fl_dist_update_end(u, e);                         publishes the outputs, frees u
 * begin reads every input once, except the gradient var `grad` (dtype dt): its elements
 * [i0, i1) are given to each run at gp, so the transport may average the gradient piece by
 * piece in a small buffer and the whole gradient never exists (the var keeps what it had). The state is updated in place when the server alone holds
 * its buffer (nothing in flight), else in a copy; one-element outputs (beta powers) come from
 * one run and are published by end. Between begin and end nobody else may read the updated
 * vars (the transport holds their requests back). fl_dist_update_free drops an unfinished
 * update (after an error) without publishing. */
typedef struct FlDistUpdate FlDistUpdate;
bool fl_dist_server_updatable(FlDistServer *s, size_t k, size_t first);
FlStatus fl_dist_update_begin(FlDistServer *s, size_t k, size_t first, int64_t n, FlVar *grad, FlDType dt,
                              FlDistUpdate **out, FlErr *e) FL_WARN_UNUSED;
FlStatus fl_dist_update_run(FlDistUpdate *u, int64_t i0, int64_t i1, const void *gp, FlErr *e) FL_WARN_UNUSED;
/* *out shares the buffer var v will hold after end (false: the update does not write v). */
bool fl_dist_update_tensor(FlDistUpdate *u, FlVar *v, FlTensor *out);
FlStatus fl_dist_update_end(FlDistUpdate *u, FlErr *e) FL_WARN_UNUSED;
void fl_dist_update_free(FlDistUpdate *u); /* NULL is a no-op */
/* "file:line:col" of the listen_and_serv op ("" when unknown), for messages. */
const char *fl_dist_server_where(const FlDistServer *s);

#endif
