/* train.h: the training driver behind `flrun`, for embedders too: epochs over a program's run
 * spec (fluid.train(...)) readers, per-step figures, the test set's figures weighted by rows,
 * prediction, and the distributed trainer shares of an MPI job.
 *
 * A trainer (FlTrainer) wraps a loaded program, an executor and a scope that the caller made and
 * whose startup program (or --load) has run. fl_train_new opens the run spec's readers (the
 * training reader and the test reader; one file load and one split when both come from one
 * io.split). Then:
 *
 *     FlTrainer *tr;
 *     if (fl_train_new(prog, ex, scope, NULL, &tr, &err) != FL_OK) ...
 *     FlTrainOptions o = FL_TRAIN_OPTIONS_INIT;        // epochs, batch, seed of the run spec
 *     FlTrainHooks h = {.ctx = me, .row = my_log_row, .epoch = my_print};
 *     if (fl_train_run(tr, &o, &h, &err) != FL_OK) ...
 *     FlTrainPredictInput *in;                          // before training, to fail early
 *     if (fl_train_predict_open(tr, "features.csv", NULL, &in, &err) != FL_OK) ...
 *     FlTrainPredictions p;
 *     if (fl_train_predict(tr, in, &p, &err) != FL_OK) ...
 *     ... p.values[i * p.width + k], p.classes ? p.class_of[i] ...
 *     fl_train_predictions_fini(&p);
 *     fl_train_predict_input_free(in);
 *     fl_train_free(tr);
 *
 * The loop. fl_train_run runs the bundle's driver program (compiler/ir/train_driver.h: option,
 * report_open, report_next, run_program, report_step, report_train_end, the test set's
 * run_program predictions and report_test, report_epoch; docs/driver.md, "fluid.train over the
 * driver") with this module as the report host of its report ops (runtime/core/report_host.h),
 * in a local run and in a job's trainers alike. An error is the loop's own message: a hook's or
 * the loop's, or the main program's.
 *
 * Figures. Every step fetches the run spec's fetches; a fetch's figure is the mean of its
 * tensor. An epoch's training figures are the steps' figures weighted by their rows; the test
 * figures are over the whole test set in batches, each batch weighted by its rows. The loss
 * (the fetch named "loss", else the first) stops training when it is not finite.
 *
 * Checkpoints (FlTrainOptions.checkpoint_every): after every that many steps the trainers
 * report their figures so far (trainer 0 writes their log rows) and trainer 0 calls the
 * checkpoint hook with the training state (FlTrainState: the position, the epoch's figures, each
 * trainer's random state); FlTrainOptions.resume goes on from such a state. The checkpoints'
 * files are ckpt.h's.
 *
 * Distributed (mpi != NULL, a trainer rank): trainer t of T reads rows [t*b, (t+1)*b) of each
 * global batch of T*b rows (data.h; a job running fewer trainers than its plan keeps the plan's
 * global batch, FlTrainOptions.batch_trainers, and cuts it into its trainers' shares) and tells
 * the transport its rows and the global rows before each step; an empty share (a partial last batch) still runs the step on one borrowed row and
 * counts with weight 0. At each epoch's end trainer 0 gathers every trainer's per-step figures
 * (and at each checkpoint) and reports each step's figures averaged over the trainers, weighted
 * by rows (the local run's figures on the global batch); trainer 0 alone evaluates the test set
 * and calls the row, epoch and checkpoint hooks. Pserver ranks do not use this module (they run their main program once).
 *
 * Ownership: arguments are borrowed (the program, executor, scope and mpi must outlive the
 * trainer); objects returned through `out` belong to the caller and go with their _free /
 * _fini (NULL is a no-op). Errors: functions returning FlStatus leave a message in err (may be
 * NULL): data errors name the file and line (data.h), runtime errors the op and its .fl line,
 * a diverging loss its epoch and step. Thread-safety: a trainer is driven by one thread at a
 * time; other threads may run fl_executor_predict on the same executor and scope meanwhile
 * (api.h). Hooks run on the calling thread.
 */
#ifndef FL_TRAIN_H
#define FL_TRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "runtime/api.h"
#include "runtime/data/data.h"
#include "runtime/mpi/mpi.h"

typedef struct FlTrainer FlTrainer;

/* Where training stands after a step: what a checkpoint keeps beside the vars (ckpt.h) so that
 * a run resumed from it computes what the uninterrupted run would, step for step. */
typedef struct FlTrainState {
    int64_t step;         /* training steps done, over the whole run */
    int64_t epoch, batch; /* the next step's epoch (1-based) and its batch in the epoch (0-based) */
    uint64_t seed;        /* the shuffling seed (the epoch's row order comes from seed and epoch) */
    int64_t global_batch; /* rows of a whole global batch */
    int64_t rows;         /* training rows of the data */
    double epoch_rows;    /* rows the epoch's steps before the next one took (all trainers) */
    double *epoch_sums;   /* [nfetch]: their figures, each summed weighted by rows */
    size_t nfetch;
    uint64_t *runs;       /* [trainers]: each trainer's main-program runs (fl_executor_runs): the
                           * random state of its dropout ops */
    int trainers;
} FlTrainState;

/* Overrides of the run spec; a negative value keeps the run spec's. */
typedef struct FlTrainOptions {
    int64_t epochs;     /* >= 0 */
    int64_t batch_size; /* > 0: rows per batch (per trainer) */
    int64_t seed;       /* >= 0: the shuffling seed */
    int64_t checkpoint_every;   /* > 0: the checkpoint hook after every that many steps */
    const FlTrainState *resume; /* NULL, or where to go on from (its vars are loaded already):
                                 * the steps before it are not run again */
    int64_t batch_trainers;     /* > 0: a global batch is that many batches (the trainers of the
                                 * job's plan), cut into the job's trainers' shares as evenly as
                                 * possible; 0: one batch per trainer of the job */
    /* Vars of the main program's block 0 fetched by every step besides the run spec's fetches,
     * their means reported to FlTrainHooks.step_done (e.g. a decaying learning rate); borrowed. */
    const char *const *watch;
    size_t nwatch;
} FlTrainOptions;
#define FL_TRAIN_OPTIONS_INIT {-1, -1, -1, 0, NULL, 0, NULL, 0}

/* What an epoch's end reports (figures indexed like the fetches; borrowed for the call). */
typedef struct FlTrainEpoch {
    int64_t epoch, epochs; /* 1-based epoch of epochs */
    int64_t step;          /* training steps so far, over the whole run */
    const double *train;   /* the epoch's training figures */
    const double *test;    /* the test set's figures after the epoch; NULL without a test set */
    double rows;           /* training rows of the epoch (all trainers) that this run trained:
                            * those before a resume within the epoch left out */
    double seconds;        /* the epoch's training time, evaluation left out: wall clock */
    double cpu_seconds;    /* the same span in this process's CPU time (all its threads) */
} FlTrainEpoch;

/* What a step's end reports (for figures per step: samples/s, the learning rate). */
typedef struct FlTrainStep {
    int64_t epoch, step; /* the 1-based epoch; training steps so far over the whole run */
    double rows;         /* the step's rows: the global batch's in a job (all trainers) */
    double seconds;      /* this process's wall clock for the step: its batch's assembly, the run
                            and, in a job, its sends completing */
    const double *watched; /* the means of FlTrainOptions.watch's vars after the step (NaN for an
                              empty one); borrowed for the call */
} FlTrainStep;

/* Callbacks of fl_train_run; any may be NULL. ctx is passed back. */
typedef struct FlTrainHooks {
    void *ctx;
    /* After each of this process's steps (trainer 0 only in a job): batch b of nb. */
    void (*step)(void *ctx, int64_t epoch, int64_t epochs, size_t b, size_t nb, double loss);
    /* After each of this process's steps too (trainer 0 only in a job), with the step's rows and
     * time. An error stops training with its message. */
    FlStatus (*step_done)(void *ctx, const FlTrainStep *s, FlErr *e);
    /* One row of figures: phase "train" (one per step) or "test" (one per epoch, `step` the
     * step it follows). An error stops training with its message. */
    FlStatus (*row)(void *ctx, const char *phase, int64_t epoch, int64_t step, const double *v, FlErr *e);
    /* After each epoch's evaluation. */
    void (*epoch)(void *ctx, const FlTrainEpoch *ep);
    /* With FlTrainOptions.checkpoint_every, on trainer 0 (the local run's one): after step
     * st->step, its log rows reported (and, when it ends an epoch, the evaluation and the epoch
     * hook). *stop (false on entry): end training here; every trainer of the job then returns
     * from fl_train_run with FL_OK, and fl_train_stopped says so. An error stops training. */
    FlStatus (*checkpoint)(void *ctx, const FlTrainState *st, bool *stop, FlErr *e);
} FlTrainHooks;

/* A trainer for prog (its run spec may be absent: then fl_train_run_once is all there is).
 * mpi: NULL for a local run, else this trainer rank's transport. Opens the run spec's readers
 * (relative to the .fl file's directory). Errors: the data (data.h). */
FlStatus fl_train_new(const FlLoadedProgram *prog, FlExecutor *ex, FlScope *scope, FlMpi *mpi, FlTrainer **out,
                      FlErr *err) FL_WARN_UNUSED;
void fl_train_free(FlTrainer *tr);

/* The run spec's fetches: their count, display names (owned by the program) and the loss's
 * index (the fetch named "loss", else 0). */
size_t fl_train_fetch_count(const FlTrainer *tr);
const char *fl_train_fetch_name(const FlTrainer *tr, size_t i);
size_t fl_train_loss_index(const FlTrainer *tr);
/* The training and test datasets (NULL when the run spec has none); owned by tr. */
const FlDataset *fl_train_dataset(const FlTrainer *tr, bool test);
/* The data files the readers read (resolved paths, owned by tr; 0, 1 or 2 of them), e.g. to
 * check that no output overwrites them. */
size_t fl_train_input_count(const FlTrainer *tr);
const char *fl_train_input_path(const FlTrainer *tr, size_t i);

/* Trains: the epochs the options and the run spec say, from the start or from opt->resume.
 * Errors: no reader, the executor's, the transport's, a loss that is not finite, a hook's; a
 * resume state of another run (another seed, global batch or data). */
FlStatus fl_train_run(FlTrainer *tr, const FlTrainOptions *opt, const FlTrainHooks *hooks, FlErr *err) FL_WARN_UNUSED;
/* Whether the last fl_train_run ended at a checkpoint whose hook asked to stop. */
bool fl_train_stopped(const FlTrainer *tr);
/* A program without a run spec: its main program once, with the (empty) fetches. */
FlStatus fl_train_run_once(FlTrainer *tr, FlErr *err) FL_WARN_UNUSED;
/* The figures (fl_train_fetch_count() of them, into out) of ds in batches of `batch` rows, with
 * fl_executor_predict (nothing changes), each batch weighted by its rows; *rows the rows seen. */
FlStatus fl_train_evaluate(FlTrainer *tr, const FlDataset *ds, size_t batch, double *out, double *rows,
                           FlErr *err) FL_WARN_UNUSED;

/* ---- prediction ---- */

typedef struct FlTrainPredictInput FlTrainPredictInput;

/* Reads the prediction input `path`: feature rows, one per line and no header lines, read at the
 * training reader's feature column indices with its separator (further columns such as a label
 * are ignored), normalised with the training statistics (data.h, fl_data_predict_load); and
 * picks the var to predict: `var`, else the model's output (the input of the first op that
 * reads the label feed). Call it before training to find a bad file or var before the first
 * step. Errors: no reader, the file's, a var the program does not have, no label to tell the
 * output by. */
FlStatus fl_train_predict_open(FlTrainer *tr, const char *path, const char *var, FlTrainPredictInput **out,
                               FlErr *err) FL_WARN_UNUSED;
void fl_train_predict_input_free(FlTrainPredictInput *in);

typedef struct FlTrainPredictions {
    size_t rows, width; /* one row of `width` values per input row */
    double *values;     /* [rows, width], owned */
    bool classes;       /* an int64 label: class_of holds each row's most probable class */
    int64_t *class_of;  /* [rows] when classes, else NULL; owned */
} FlTrainPredictions;

/* Runs the model on the input (fl_executor_predict, in batches of 256 rows). *out is set on
 * success only. Errors: the executor's. */
FlStatus fl_train_predict(FlTrainer *tr, const FlTrainPredictInput *in, FlTrainPredictions *out,
                          FlErr *err) FL_WARN_UNUSED;
void fl_train_predictions_fini(FlTrainPredictions *p);

#endif
