/* train_driver.h: the driver program of a run spec's training (docs/driver.md, "fluid.train over
 * the driver"): the loop fl_train_run runs, as ops of the IR.
 *
 *   epochs = option(epochs, run spec's); batch = option(batch_size, ...); seed = option(seed, ...)
 *   report = report_open(epochs, batch, seed)
 *   epoch = 1
 *   while epoch <= epochs:
 *       feeds..., rows, global_rows, step, ok = report_next(report, epoch)
 *       while ok:
 *           figures... = run_program(main, feeds, Step=step, Rows=rows, GlobalRows=global_rows,
 *                                    fetch = the run spec's fetches, then `watch`)
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
 * vars (outermost first), declared as the main program declares them.
 *
 * Ownership: *out is the caller's (fl_ir_program_free). Errors: a bundle without a run spec or a
 * reader; a feed or fetch that is not a var of main's global block.
 */
#ifndef FL_TRAIN_DRIVER_H
#define FL_TRAIN_DRIVER_H

#include <stddef.h>

#include "base/base.h"
#include "compiler/ir/ir.h"

FlStatus fl_train_driver_build(const FlBundle *b, const char *const *watch, size_t nwatch, FlProgram **out,
                               FlErr *e) FL_WARN_UNUSED;

#endif
