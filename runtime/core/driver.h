/* driver.h: the hook between the driver's ops (ops_driver.c) and the programs they run.
 *
 * A bundle's driver program (docs/driver.md) runs the bundle's other programs: its run_program
 * op needs their prepared executors and the root scope they run on. The embedder (the embedding
 * API's fl_executor_run_driver, runtime/core/api.c) hands them over as an FlDriverHost kept in
 * the object var FL_DRIVER_VAR of a scope made for the driver's run (fl_driver_scope), a child of
 * the root scope, as conc.h attaches the goroutine scheduler: every scope of the driver's run,
 * its goroutines' included, finds it by walking up.
 *
 * Ownership: the host is copied into the var; the executors and the root scope it names are
 * borrowed and must outlive every run of the driver (and every goroutine it started).
 */
#ifndef FL_DRIVER_H
#define FL_DRIVER_H

#include <stdatomic.h>

#include "runtime/core/exec.h"
#include "runtime/core/scope.h"

#define FL_DRIVER_VAR "@DRIVER@" /* the driver scope's object var holding its FlDriverHost */

/* How a driver's run ended through an exit op (sys.exit): set once, by the first exit op that
 * runs (a goroutine's or the driver's own), before the op's error unwinds the run. */
typedef struct FlDriverExit {
    atomic_bool exited;
    int code; /* written by the exit op that set exited, read after the run */
} FlDriverExit;

typedef struct FlDriverHost {
    FlScope *root;          /* where the programs run unless a run_program names a scope */
    FlExec *startup, *main; /* the bundle's programs, prepared */
    FlDriverExit *exit;     /* where an exit op records its code; borrowed, as the others */
    const FlBundle *bundle; /* its readers (Bundle.readers), which reader_open opens */
    uint64_t seed;          /* the run's seed (flrun --seed, else 0): the readers' shuffles */
    const char *const *names; /* the bundle's named programs (Bundle.programs), in order */
    FlExec *const *programs;  /* each prepared */
    size_t nprograms;
} FlDriverHost;

/* Runs `driver`, a driver program the caller built for ex's bundle (runtime/train's of a run
 * spec), as fl_executor_run_driver_exit runs the bundle's own: prepared for this run, its own ops
 * neither traced nor profiled (the programs it runs are). driver is borrowed. */
struct FlExecutor;
FlStatus fl_executor_run_driver_program(struct FlExecutor *ex, const FlProgram *driver, FlScope *scope,
                                        int *exit_code, FlErr *err) FL_WARN_UNUSED;

/* What the runner of a driver does at points of its run (flrun's options over a user's driver:
 * docs/driver.md, "flrun's features"), attached to the root scope the driver runs on as the
 * report host is (report_host.h); borrowed, it must outlive the run. startup_done: after each
 * run_program of the startup program, on the scope it ran on (flrun --load replaces the
 * parameters the startup made); its error is the op's. */
typedef struct FlDriverHooks {
    void *ctx;
    FlStatus (*startup_done)(void *ctx, FlScope *scope, FlErr *e);
} FlDriverHooks;
#define FL_DRIVER_HOOKS_VAR "@DRIVER_HOOKS@" /* the root scope's object var holding them */
void fl_driver_hooks_attach(FlScope *root, const FlDriverHooks *h); /* NULL detaches */

/* The prepared program a run_program names ("startup", "main" or a named one); NULL if none. */
FlExec *fl_driver_program(const FlDriverHost *h, const char *name);

/* A new scope (one reference) under root holding a copy of *h: run the driver on it. */
FlScope *fl_driver_scope(FlScope *root, const FlDriverHost *h);
/* The host of the driver run that s belongs to; NULL outside one. */
const FlDriverHost *fl_driver_find(FlScope *s);

/* For the adapters of the driver's ops (ops_driver.c, ops_saveload.c). The host of s's driver
 * run; NULL (op's error reported) outside one. */
struct RunCtx;
struct ExecOp;
struct ArgRef;
const FlDriverHost *fl_driver_need_host(struct RunCtx *rc, const struct ExecOp *op, FlScope *s);
/* *out = the scope the input arg a holds (a new reference), or a new reference to dflt when a is
 * NULL; an error (reported) when a holds none. */
FlStatus fl_driver_arg_scope(struct RunCtx *rc, const struct ExecOp *op, FlScope *s, const struct ArgRef *a,
                             FlScope *dflt, FlScope **out);

#endif
