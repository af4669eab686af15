/* exec.h: the executor: runs a program's blocks op by op on scopes.
 *
 * fl_exec_new prepares one FlProgram once: every op is checked against the op table, bound to its
 * adapter (runtime/core/ops_*.c), its attributes are parsed, and each argument is resolved to
 * (the block that declares the var, its slot in that block's scope layout), so that running an op
 * costs no name lookups, hashing or attribute parsing.
 *
 * Running (fl_exec_run): each call makes its own CALL SCOPE, a child of the caller's scope with
 * block 0's layout. Feeds, temporaries and fetches live there and die with the call; persistable
 * vars (parameters, optimizer state, learning rates) live in the caller's scope (or an ancestor)
 * and are read from there and updated there, each write replacing the tensor whole. Control ops
 * run a sub-block in a child scope of the scope running them (with the sub-block's layout); a write
 * to a var declared in an outer block goes to the scope of that block. Hence:
 *
 *   REENTRANCY: any number of threads may call fl_exec_run on one FlExec with one scope at once.
 *   Each sees its own feeds, temporaries and fetches; they share the persistable vars, of which
 *   each reader sees a whole tensor (the old or the new one). Concurrent optimizer updates of one
 *   parameter are last-writer-wins (each is a whole, consistent tensor), as in Hogwild training.
 *
 * Feeds: a feed must name a var of block 0; its dtype must be the declared one and its shape the
 * declared shape except at -1 dims; a tensor [N, k] fed to a var declared [-1, d1, ..., dm] with
 * d1*...*dm == k is reshaped (flat CSV rows). A non-persistable var that block 0 reads before any
 * op writes it must be fed (or exist in the caller's scope). Feeding a persistable var overrides
 * it for this call only.
 *
 * Errors: status + message in the caller's FlErr, never an abort on user input. A failing op
 * gives "runtime error in op 'mul' (fit_a_line.fl:10:8): X 'x' [32, 13] and Y 'fc_0.w_0' [12, 1]:
 * X's columns (13) differ from Y's rows (12)".
 *
 * Random ops: a nonzero seed attribute is used as is; seed 0 is replaced by a seed derived from
 * FlExecOptions.seed and the op's position, so that every run of one program gives bit-identical
 * values. dropout draws a new mask per run: its stream is (seed, run counter).
 *
 * Ownership: the FlExec borrows the program and the source table; both must outlive it.
 */
#ifndef FL_EXEC_H
#define FL_EXEC_H

#include "base/base.h"
#include "compiler/ir/ir.h"
#include "runtime/core/scope.h"
#include "runtime/kernels/par.h"
#include "runtime/tensor.h"
#include "runtime/prof.h"
#include "runtime/trace.h"

typedef struct FlExec FlExec;

typedef struct FlExecOptions {
    uint64_t seed; /* the program seed behind seed-0 random ops (default 0) */
    FlTrace *trace; /* NULL, or where every op run is recorded (one span per op: its type, .fl
                     * line, block and output vars); borrowed, outlives the FlExec */
    FlProf *prof;   /* NULL, or the op profiler each op run's time is added to while it is on
                     * (runtime/prof.h); borrowed, outlives the FlExec */
    FlPar *par;    /* the kernels' thread pool (runtime/kernels/par.h), borrowed: it must outlive
                    * the FlExec; NULL: every kernel runs on the thread running its op */
} FlExecOptions;

typedef struct FlExecFeed {
    const char *name;
    const FlTensor *tensor; /* borrowed; the call shares its buffer (no copy) */
} FlExecFeed;

/* Prepares p. sources: the bundle's source table (FlLoc.file indexes it; may be NULL/0), used in
 * messages. opt may be NULL. Errors: an op the op table does not know or whose slots/attributes
 * are wrong, a sub-block that is not a child of its op's block; the message names the op. */
FlStatus fl_exec_new(const FlProgram *p, const char *const *sources, size_t nsources,
                     const FlExecOptions *opt, FlExec **out, FlErr *e) FL_WARN_UNUSED;
void fl_exec_free(FlExec *ex); /* NULL is a no-op; no run may be in progress */

/* Flags of fl_exec_run. FL_EXEC_PREDICT: run only the ops of block 0 that the fetches depend
 * on (outputs to persistable vars do not count as dependencies) and drop every write to a
 * persistable var: a training program then predicts without labels and changes nothing shared
 * (Fluid's clone(for_test) + prune, per call). */
enum { FL_EXEC_PREDICT = 1 << 0 };

/* Runs block 0 in a new call scope under `scope` (see above). fetches[i] receives a new
 * reference to the tensor of var fetch_names[i] after the run (the caller finis them; they are
 * released first, so pass initialised tensors). On error no fetch is set. Thread-safe. */
FlStatus fl_exec_run(FlExec *ex, FlScope *scope, const FlExecFeed *feeds, size_t nfeeds,
                     const char *const *fetch_names, FlTensor *fetches, size_t nfetches,
                     unsigned flags, FlErr *e) FL_WARN_UNUSED;

/* As fl_exec_run, each fetch set into the caller's var outs[i]: the tensor of var fetch_names[i],
 * or, when the program declares it a tensor array, its array (the empty array when nothing was
 * written; its elements share their buffers, as a fetched tensor does). On error no out changes.
 * Thread-safe. */
FlStatus fl_exec_run_into(FlExec *ex, FlScope *scope, const FlExecFeed *feeds, size_t nfeeds,
                          const char *const *fetch_names, FlVar *const *outs, size_t nfetches,
                          unsigned flags, FlErr *e) FL_WARN_UNUSED;

/* The runs of ex so far (each run's dropout masks come from its op's seed and this count), and
 * its restore (a run resumed from a checkpoint draws the masks the uninterrupted one would).
 * Thread-safe. */
uint64_t fl_exec_runs(const FlExec *ex);
void fl_exec_set_runs(FlExec *ex, uint64_t runs);

/* Number of ops the prepared program holds (all blocks), for benchmarks and tests. */
size_t fl_exec_op_count(const FlExec *ex);

#endif
