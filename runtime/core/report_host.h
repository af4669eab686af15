/* report_host.h: the hook between fluid.train's report ops on the driver (ops_report.c;
 * compiler/ops/report.def) and the embedder that runs the training and reports it.
 *
 * The training's data, its figures and where they go (flrun's log, progress bar and line, plot,
 * TensorBoard; an embedder's hooks) belong to whoever runs the driver, not to the runtime: it
 * hands them over as an FlReportHost attached to the ROOT scope the driver runs on
 * (fl_report_host_attach), as conc.h attaches the goroutine scheduler; the report ops find it by
 * walking up from their scope. runtime/train/train.c is the host behind fl_train_run.
 *
 * Ownership: the host is borrowed (it must outlive the driver's run); tensors passed to a
 * callback are borrowed for the call, those it fills are the caller's. Errors: a callback's
 * error is the op's, with the op's location added by the adapter.
 */
#ifndef FL_REPORT_HOST_H
#define FL_REPORT_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/core/scope.h"
#include "runtime/tensor.h"

#define FL_REPORT_HOST_VAR "@REPORT@" /* the root scope's object var holding the FlReportHost */

typedef struct FlReportHost {
    void *ctx; /* passed back to every callback */
    /* option: *out = the run's option `name` ("epochs", "batch_size", "seed") when it gives one,
     * else dflt. Errors: an unknown name. */
    FlStatus (*option)(void *ctx, const char *name, int64_t dflt, int64_t *out, FlErr *e);
    /* report_open: the training begins with these counts. */
    FlStatus (*open)(void *ctx, int64_t epochs, int64_t batch, int64_t seed, FlErr *e);
    /* report_next: the next batch of epoch `epoch` into out[0..nout) (the feeds in the run
     * spec's order, a sequence feed's values then its offsets; in a job, this trainer's share),
     * *rows its rows, *global the global batch's, *step the step it is (0-based over the run),
     * *ok false after the epoch's last batch (out then untouched); with test, the next batch of
     * the evaluation after the epoch (*global and *step 0). Errors: nout is not the feeds'
     * count, data. */
    FlStatus (*next)(void *ctx, int64_t epoch, bool test, FlTensor *out, size_t nout, int64_t *rows, int64_t *global,
                     int64_t *step, bool *ok, FlErr *e);
    /* report_step: the step's fetched figures (n of them) over `rows` rows. */
    FlStatus (*step)(void *ctx, const FlTensor *figures, size_t n, int64_t rows, FlErr *e);
    /* report_train_end: epoch `epoch`'s training steps are done. */
    FlStatus (*train_end)(void *ctx, int64_t epoch, FlErr *e);
    /* report_test: a batch of the evaluation's fetched figures (n of them) over `rows` rows. */
    FlStatus (*test)(void *ctx, const FlTensor *figures, size_t n, int64_t rows, FlErr *e);
    /* report_epoch: epoch `epoch` ends (its test row, its line, a checkpoint). */
    FlStatus (*epoch)(void *ctx, int64_t epoch, FlErr *e);
} FlReportHost;

/* Attaches h (borrowed) to the root scope the driver will run on; NULL detaches. */
void fl_report_host_attach(FlScope *root, const FlReportHost *h);
/* The host of the run that scope s belongs to; NULL when none is attached. */
const FlReportHost *fl_report_host_find(FlScope *s);

#endif
