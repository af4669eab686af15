/* api.h: fluidc's embedding API: load a compiled program (.flp), run it from C, from any number
 * of threads at once.
 *
 * Overview. `flc build model.fl -o model.flp` compiles a .fl program into a bundle: a STARTUP
 * program (creates and initialises the parameters) and a MAIN program (one training or predicting
 * step). An embedder loads the bundle (FlLoadedProgram), makes ONE executor for it (FlExecutor:
 * both programs prepared once) and ONE scope (FlScope: where the parameters live), runs the
 * startup program once, then runs the main program as often as it likes, with feeds (input
 * tensors by var name) and fetches (output tensors by var name) that belong to that call alone.
 *
 *     #include "runtime/api.h"
 *
 *     FlErr err;
 *     FlLoadedProgram *prog;
 *     FlExecutor *ex;
 *     if (fl_program_load("identity.flp", &prog, &err) ||
 *         fl_executor_new(prog, NULL, &ex, &err)) {
 *         fprintf(stderr, "%s\n", fl_error_message(&err));
 *         return 1;
 *     }
 *     FlScope *scope = fl_scope_new(NULL);
 *     if (fl_executor_run_startup(ex, scope, &err)) { ... }
 *
 *     // from any thread, as often as wanted, with no per-thread names, scopes or executors:
 *     float in[1] = {42};
 *     int64_t ne[2] = {1, 1};
 *     FlTensor x = FL_TENSOR_INIT;
 *     if (fl_tensor_from_floats(&err, &x, 2, ne, in)) { ... }
 *     FlFeed feed = {"x", &x};
 *     FlFetch fetch = {"y", FL_TENSOR_INIT};
 *     if (fl_executor_run(ex, scope, &feed, 1, &fetch, 1, &err)) { ... }
 *     const float *y = fl_tensor_data(&fetch.tensor);   // y[0] == 42 for identity.fl
 *     fl_tensor_fini(&fetch.tensor);
 *     fl_tensor_fini(&x);
 *
 *     fl_scope_free(scope);
 *     fl_executor_free(ex);
 *     fl_program_free(prog);
 *
 * Tensors (runtime/tensor.h) are small values over reference-counted, immutable buffers: a feed
 * is shared with the call (no copy), a fetch is a new reference the caller must fl_tensor_fini.
 *
 * Concurrency. Everything here may be called from any number of threads at once except the _free
 * functions (call them once, when no other call uses the object). Concurrent runs of one executor
 * on one scope each have their own feeds, temporaries and fetches (in a per-call scope); they
 * share the persistable vars (parameters, optimizer state) of the scope. A run that updates a
 * parameter (a training step) replaces its tensor whole, so a concurrent run sees either the old
 * or the new parameter tensor, never a mixture. Concurrent training runs update the parameters
 * last-writer-wins (Hogwild style).
 *
 * Ownership. Arguments are borrowed unless said otherwise. _new/_load results belong to the
 * caller, who frees them with the matching _free (NULL is a no-op). An executor borrows its
 * program (free the executor first); scopes are reference counted internally and may be freed in
 * any order relative to executors.
 *
 * Errors. Functions that can fail return FL_OK (0) or FL_ERROR and write a message into the
 * caller's FlErr (which may be NULL; one FlErr per thread). Nothing here aborts on bad input or a
 * bad file. Runtime errors name the op and the .fl line that made it, e.g.
 *   runtime error in op 'mul' (fit_a_line.fl:10:8): X 'x' [32, 13] and Y 'fc_0.w_0' [12, 1]:
 *   X's columns (13) differ from Y's rows (12)
 * and feed errors name the feed and what was expected and found, e.g.
 *   feed 'x': expected shape [-1, 13], found [32, 12]
 */
#ifndef FL_API_H
#define FL_API_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "compiler/ir/dtype.h"
#include "runtime/prof.h"
#include "runtime/tensor.h"
#include "runtime/trace.h"

typedef struct FlLoadedProgram FlLoadedProgram; /* a loaded .flp: startup + main programs */
typedef struct FlExecutor FlExecutor;           /* both programs, prepared */
typedef struct FlScope FlScope;                 /* name -> var store (parameters live here) */
typedef struct FlBundle FlBundle;               /* compiler/ir/ir.h, for tools */

/* ---- programs ---- */

/* Loads a .flp file, or an inference model: a directory that fluid.io.save_inference_model wrote
 * (its __model__), or the model file itself (save_inference_model(model_filename=...)), whose
 * parameters are then read from the checkpoint beside it and checked against the program, and
 * set by fl_executor_run_startup. Its feeds and targets: fl_program_bundle(p)->inference
 * (docs/driver.md, "Saving and serving"). A fluid.train bundle written before format 3 (a run
 * spec and no driver) gets fluid.train's driver now, as flc build keeps it. Errors: I/O, not a .flp (or a .plan: run those with
 * flrun under mpirun), a newer format version, a corrupt or structurally invalid program; a
 * directory without a __model__ or whose __model__ is not an inference model; a parameter the
 * checkpoint lacks or holds in another dtype or shape (naming it). */
FlStatus fl_program_load(const char *path, FlLoadedProgram **out, FlErr *err) FL_WARN_UNUSED;
/* Wraps a bundle that the caller built or compiled (tools); the program takes ownership of it. */
FlLoadedProgram *fl_program_from_bundle_take(FlBundle *bundle);
void fl_program_free(FlLoadedProgram *p);
/* The bundle (programs, run spec, source table), owned by p. */
const FlBundle *fl_program_bundle(const FlLoadedProgram *p);

/* ---- executors ---- */

typedef struct FlExecutorOptions {
    /* Random ops whose seed attribute is 0 get a seed derived from this one and their position,
     * so a program gives bit-identical parameters on every run with the same options. */
    uint64_t seed;
    /* NULL, or the recorder (runtime/trace.h) every op run of both programs is written to, one
     * span per op; borrowed: it must outlive the executor. */
    FlTrace *trace;
    /* NULL, or the op profiler (runtime/prof.h, fluid.profiler) each op run's time goes to while
     * it is on, per op type; borrowed: it must outlive the executor. */
    FlProf *prof;
    /* Kernel threads (flrun --threads): 0 or 1 runs every kernel on the thread that runs its op;
     * N > 1 gives the executor a pool of N threads (the running thread and N-1 workers) on which
     * large kernels split their work: one op at a time, so any number of threads running ops
     * add at most N-1 threads to them. Results are deterministic for a given N
     * (docs/kernels.md, "Threads"). Errors: N < 0 or N > 256. */
    int threads;
} FlExecutorOptions;

/* Prepares p's startup and main programs, and its driver when it has one (p must outlive the
 * executor). opt may be NULL (seed
 * 0). Errors: an op unknown to this runtime or malformed; the message names the op. */
FlStatus fl_executor_new(const FlLoadedProgram *p, const FlExecutorOptions *opt, FlExecutor **out,
                         FlErr *err) FL_WARN_UNUSED;
void fl_executor_free(FlExecutor *ex);

/* ---- scopes ---- */

/* A new, empty scope; a child of parent (which may be NULL) sees parent's vars. */
FlScope *fl_scope_new(FlScope *parent);
void fl_scope_free(FlScope *s);
/* A new reference to the tensor of var `name` (found in s or its parents) in *out; the caller
 * finis it. Errors: no such var, or it holds no tensor. */
FlStatus fl_scope_get_tensor(FlScope *s, const char *name, FlTensor *out, FlErr *err) FL_WARN_UNUSED;
/* Sets var `name` of s itself (created when absent) to share t's buffer, replacing its tensor
 * whole (e.g. to load parameters). */
void fl_scope_set_tensor(FlScope *s, const char *name, const FlTensor *t);

/* ---- running ---- */

/* Runs the startup program: creates and initialises the persistable vars (parameters, optimizer
 * state) in `scope`; for an inference model, sets its saved parameters there. Run it once per
 * scope before the main program. */
FlStatus fl_executor_run_startup(FlExecutor *ex, FlScope *scope, FlErr *err) FL_WARN_UNUSED;

typedef struct FlFeed {
    const char *name;       /* a var of the main program's global block (a layers.data name) */
    const FlTensor *tensor; /* borrowed; its buffer is shared with the call, not copied */
} FlFeed;

typedef struct FlFetch {
    const char *name; /* any var of the program's global block: outputs, losses, parameters */
    FlTensor tensor;  /* set by a successful run to a new reference: the caller finis it */
} FlFetch;

/* Runs the main program once on `scope` with these feeds and fetches. Each feed's dtype must be
 * the declared one and its shape the declared shape, where -1 (the batch dimension) matches any
 * size; [N, k] rows are reshaped to a declared [-1, d1, ..., dm] with d1*...*dm == k. Every data
 * var the program reads must be fed. Before the call each fetch's tensor must be initialised
 * (FL_TENSOR_INIT or a previous result, which is released); on error no fetch is set.
 * Thread-safe: any number of threads may run one executor on one scope at once. */
FlStatus fl_executor_run(FlExecutor *ex, FlScope *scope, const FlFeed *feeds, size_t nfeeds,
                         FlFetch *fetches, size_t nfetches, FlErr *err) FL_WARN_UNUSED;

/* Like fl_executor_run, but runs only the ops the fetches depend on and never changes the
 * scope: writes to persistable vars are dropped, and ops that only update them (optimizers) do
 * not run. So a training program predicts with the current parameters, without labels, while
 * other threads train it (Fluid's program.clone(for_test=True) plus pruning, per call). Layers
 * with a test mode run in it: dropout scales by (1 - p) without a mask, batch_norm uses the
 * running statistics. */
FlStatus fl_executor_predict(FlExecutor *ex, FlScope *scope, const FlFeed *feeds, size_t nfeeds,
                             FlFetch *fetches, size_t nfetches, FlErr *err) FL_WARN_UNUSED;

/* Whether the program has a driver (docs/driver.md): the script's run-time half, which
 * fl_executor_run_driver runs instead of the startup program once and the main program once. */
bool fl_executor_has_driver(const FlExecutor *ex);
/* Runs the driver on `scope` (the root scope its programs run on): its run_program ops run the
 * startup and main programs there (or on the scopes it makes under it), from its goroutines too.
 * A driver with goroutines needs a scheduler attached to scope (runtime/core/conc.h), or makes
 * its own. Errors: the program has no driver; an op of the driver or of a program it runs failed
 * (the message names the driver's op and line, then the program's). Goroutines it started and
 * did not wait for may still run when it returns, as in Go. */
FlStatus fl_executor_run_driver(FlExecutor *ex, FlScope *scope, FlErr *err) FL_WARN_UNUSED;
/* Like fl_executor_run_driver, and a driver that ends through sys.exit (its exit op) returns FL_OK
 * with *exit_code set to the exit's code (what the driver printed, it printed); 0 when it ran to
 * its end. fl_executor_run_driver makes a code other than 0 an error. */
FlStatus fl_executor_run_driver_exit(FlExecutor *ex, FlScope *scope, int *exit_code, FlErr *err) FL_WARN_UNUSED;

/* The main program's runs so far (fl_executor_run and fl_executor_predict alike): a dropout op
 * draws its mask from its seed and this count, so it is the random state of training; restoring
 * it (a run resumed from a checkpoint) draws the masks the uninterrupted run would. */
uint64_t fl_executor_runs(const FlExecutor *ex);
void fl_executor_set_runs(FlExecutor *ex, uint64_t runs);

/* ---- tensors from and to C arrays (see runtime/tensor.h for the rest) ---- */

/* Allocates *t (releasing what it held) with shape ne[0..ndim) and copies numel values in. */
FlStatus fl_tensor_from_floats(FlErr *err, FlTensor *t, int ndim, const int64_t *ne,
                               const float *data) FL_WARN_UNUSED;
FlStatus fl_tensor_from_int64s(FlErr *err, FlTensor *t, int ndim, const int64_t *ne,
                               const int64_t *data) FL_WARN_UNUSED;
/* Copies t's elements (converted to float) into dst, which holds n floats. Errors: t is empty
 * or has more than n elements. */
FlStatus fl_tensor_to_floats(FlErr *err, const FlTensor *t, float *dst, size_t n) FL_WARN_UNUSED;

/* The message of the last failed call that used err ("" when none). */
const char *fl_error_message(const FlErr *err);

#endif
