/* report.h: what flrun shows beside its progress lines and its log: the training curves
 * (--plot FILE.svg, tools/curves.h), TensorBoard event files (--tensorboard DIR,
 * tools/tfevents.h) and Fluid's profiler tables (--profile for the whole run, or the run spec's
 * profile: a fluid.profiler region around fluid.train; runtime/prof.h). docs/running.md.
 *
 * flrun makes a report from its options and the program's run spec, gives the executor the
 * report's profiler (NULL when nothing is profiled), tells it where training begins and ends,
 * and, on the process that writes the log (a local run, trainer 0 of a job), opens it before the
 * first step and passes it every log row and every step's rows and time. At the end every rank
 * finishes it: the profiler's tables (every rank's, gathered to trainer 0 and printed there in
 * rank order), the picture written, the event file closed.
 *
 * Per step, TensorBoard gets (at the step) "train/<figure>" for each fetch, "learning_rate" (the
 * LearningRate input of the program's first optimizer op: fetched by each step where the process
 * runs the optimizer, asked from the pserver that holds it in a parameter-server job) and
 * "samples_per_second" (the step's rows over its time); after each evaluation "test/<figure>".
 *
 * Ownership: options are borrowed for the report's life; errors name the option.
 */
#ifndef FL_REPORT_H
#define FL_REPORT_H

#include <stdbool.h>

#include "base/base.h"
#include "compiler/ir/ir.h"
#include "runtime/api.h"
#include "runtime/mpi/mpi.h"
#include "runtime/prof.h"
#include "runtime/train/train.h"

typedef struct FlReport FlReport;

typedef struct FlReportOptions {
    const char *program;      /* the program's file: the curves' name, the profile's process */
    const char *plot;         /* --plot FILE.svg, or NULL */
    const char *tensorboard;  /* --tensorboard DIR, or NULL */
    bool profile;             /* --profile: the whole run, from the report's making */
    const char *profile_sort; /* --profile-sort KEY (a name of fl_ir_profile_sort_keys, "none" for
                                 Fluid's None), or NULL: the region's sorted_key, else "total" */
    const FlProfileSpec *spec; /* the run spec's profile (the trainers' in a plan), or NULL;
                                  borrowed for fl_report_new only */
} FlReportOptions;

/* A report; with --profile its profiler is on from now. Errors: a --profile-sort that is not a
 * sort key. */
FlStatus fl_report_new(const FlReportOptions *o, FlReport **out, FlErr *e) FL_WARN_UNUSED;
void fl_report_free(FlReport *r); /* NULL is a no-op; closes an open event file */

/* The profiler for FlExecutorOptions.prof (and FlMpiOptions.profile), or NULL. */
FlProf *fl_report_prof(const FlReport *r);
/* The region's profile_path (a trace of the profiled span to write), or NULL. */
const char *fl_report_profile_path(const FlReport *r);
/* Training begins or ends (a region's profiler goes on and off with it). */
void fl_report_train_begin(FlReport *r);
void fl_report_train_end(FlReport *r);

/* The process that writes the log, before the first step: the curves' figures, the event file
 * (made now: an output that fails stops the run before it trains) and where the learning rate
 * is read. bundle: this process's program; plan: the job's plan (its pservers' programs say which
 * one holds the learning rate), or NULL. Errors: --tensorboard's. */
FlStatus fl_report_open(FlReport *r, const FlTrainer *tr, const FlBundle *bundle, FlMpi *mpi, const FlPlan *plan,
                        FlErr *e) FL_WARN_UNUSED;
/* The vars the training's steps must fetch for the report (the learning rate of this process's
 * program), into to->watch (borrowed from r). */
void fl_report_watch(const FlReport *r, FlTrainOptions *to);
/* A row of the log (FlTrainHooks.row) and a step's end (FlTrainHooks.step_done). Errors: the
 * event file's, the learning rate's request. */
FlStatus fl_report_row(FlReport *r, const char *phase, int64_t epoch, int64_t step, const double *v,
                       FlErr *e) FL_WARN_UNUSED;
FlStatus fl_report_step(FlReport *r, const FlTrainStep *s, FlErr *e) FL_WARN_UNUSED;

/* Every rank, at the end (after the timeline): the profile's tables printed on stdout (a job's
 * gathered to trainer 0: collective), the picture written, the event file closed. lead: the
 * process that writes the log. Errors: the picture's file, the event file's, the gathering. */
FlStatus fl_report_finish(FlReport *r, FlMpi *mpi, bool lead, FlErr *e) FL_WARN_UNUSED;

#endif
