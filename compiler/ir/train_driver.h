/* train_driver.h: fluid.train's loop as a driver program (docs/driver.md, "fluid.train over the
 * driver"), kept in Bundle.driver beside the run spec: a bundle with a run spec and a driver runs
 * fluid.train's loop, which fl_train_run (runtime/train) hosts. A script's fluid.train call
 * writes it in .fl (stdlib/fluid/_train.fl, declaring its vars with the functions below); a
 * bundle written before the driver was kept (format 2: a run spec alone) gets it here, built in
 * C from the run spec and main program when flrun, fl_program_load or flc transpile loads it.
 * The two are the same loop, op for op and var for var:
 *
 *   epochs = option(epochs, run spec's); batch = option(batch_size, ...); seed = option(seed, ...)
 *   report = report_open(epochs, batch, seed)
 *   epoch = 1
 *   while epoch <= epochs:
 *       feeds..., rows, global_rows, step, ok = report_next(report, epoch)
 *       while ok:
 *           figures... = run_program(main, feeds, Step=step, Rows=rows, GlobalRows=global_rows,
 *                                    fetch = the run spec's fetches)
 *           report_step(report, figures..., rows)
 *           feeds..., rows, global_rows, step, ok = report_next(report, epoch)
 *       report_train_end(report, epoch)
 *       test_feeds..., test_rows, ..., test_ok = report_next(report, epoch, test=True)  # a test reader
 *       while test_ok:
 *           test_figures... = run_program(main, test_feeds, predict=True, fetch = the run spec's)
 *           report_test(report, test_figures..., test_rows)
 *           test_feeds..., test_rows, ..., test_ok = report_next(report, epoch, test=True)
 *       report_epoch(report, epoch)
 *       epoch += 1
 *
 * In a job's trainer, report_next gives the trainer's share and run_program marks the step with
 * its number and rows (the transport's weights); the report host gathers the figures.
 *
 * The feeds are the run spec's readers', in their order, a sequence feed followed by its offset
 * vars (outermost first), declared as the main program declares them. Only IR: no runtime.
 */
#ifndef FL_IR_TRAIN_DRIVER_H
#define FL_IR_TRAIN_DRIVER_H

#include <stddef.h>

#include "base/base.h"
#include "compiler/ir/ir.h"

/* A list of var names (borrowed: the names of vars declared in a block, or the run spec's). */
typedef FL_VEC(const char *) FlTrainNames;

/* The vars of the loop, declared in block blk of a driver as both builders declare them: the
 * loop written in stdlib/fluid/_train.fl (through lang's _core primitives, each call one of
 * these) and fl_ir_train_driver_build below, whose output the two must give alike
 * (tests/e2e/train_driver_bundle.sh compares them).
 *   fl_ir_train_var: an int64 or bool [1] var (a counter, a flag, an option), stop_gradient.
 *   fl_ir_train_report_var: the report handle (a raw var).
 *   fl_ir_train_feeds: the feeds of the run spec's reader (test: its test reader), main's data
 *     vars declared alike (not persistable, stop_gradient, not fed) with a sequence feed's offset
 *     vars after it, outermost first; those blk declares already are kept. *feeds lists them in
 *     the order report_next writes them (the caller frees the vector, not the names).
 *   fl_ir_train_figures: the figure vars prefix_0, prefix_1, ... of the run spec's fetches, each
 *     declared as main declares the fetched var, without offsets, listed in *figures.
 * Errors: a feed or fetch that is not a var of main's global block; a figure name blk declares
 * already; no such reader. */
FlVarDesc *fl_ir_train_var(FlBlock *blk, const char *name, FlDType dt);
FlVarDesc *fl_ir_train_report_var(FlBlock *blk, const char *name);
FlStatus fl_ir_train_feeds(const FlBundle *b, FlBlock *blk, bool test, FlTrainNames *feeds, FlErr *e) FL_WARN_UNUSED;
FlStatus fl_ir_train_figures(const FlBundle *b, FlBlock *blk, const char *prefix, FlTrainNames *figures,
                             FlErr *e) FL_WARN_UNUSED;

/* The driver of b's run spec into *out (the caller's: fl_ir_program_free); each of its ops and
 * vars carries the location at (the fluid.train call; FL_LOC_NONE when unknown), so what
 * flc verify and the runtime say of them points there. Errors: b has no run spec or no reader; a
 * feed or fetch that is not a var of main's global block. */
FlStatus fl_ir_train_driver_build(const FlBundle *b, FlLoc at, FlProgram **out, FlErr *e) FL_WARN_UNUSED;

/* Whether b runs fluid.train's loop: a run spec with a reader (its driver, once built, is that
 * loop's). A bundle with a driver and no such run spec runs the script's own loop (exe.run). */
bool fl_ir_bundle_trains(const FlBundle *b);

/* Builds and keeps b's driver when b trains (fl_ir_bundle_trains) and has none yet: a file
 * written before the driver was kept in it (format 2, which kept the run spec alone; at:
 * FL_LOC_NONE), or a trainer role of its plan. Nothing to do otherwise (the compiler's bundles
 * hold the driver their fluid.train call wrote). Errors: those of
 * fl_ir_train_driver_build (b is left as it was). */
FlStatus fl_ir_bundle_add_train_driver(FlBundle *b, FlLoc at, FlErr *e) FL_WARN_UNUSED;

/* Watched vars (runtime/train/train.h, FlTrainOptions.watch: flrun --tensorboard's learning
 * rate): drv (fluid.train's driver, a copy the caller owns) fetches main's vars watch[0..n) at
 * each step after the run spec's fetches: they are appended to the step's run_program fetches
 * (its fetch_names and Fetch vars, figure_K declared beside the other figures in the step's
 * block) and to report_step's figures; nothing else changes. The report host tells them from
 * the run spec's figures by their count. Errors: a watched name that is not a var of main's
 * global block; drv is not fluid.train's driver (no step). */
FlStatus fl_ir_train_driver_watch(FlProgram *drv, const FlBundle *b, const char *const *watch, size_t n,
                                  FlErr *e) FL_WARN_UNUSED;

#endif
