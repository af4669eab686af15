/* ckpt.h: the checkpoints a run writes while it trains (flrun --checkpoint DIR
 * --checkpoint-every N): where they live in DIR, which is the last complete one, and the training
 * state each holds beside the vars.
 *
 * Layout: DIR/step-N is the checkpoint after N training steps: the vars as params.h saves them
 * (FORMAT, MANIFEST, a file per var), and beside them TRAIN, the training state (FlTrainState,
 * text: "fluidc training state 1", then one "key value..." line each), and log.csv, the --log
 * rows up to step N when the run writes a log. It is written whole into DIR/step-N.tmp.PID and
 * renamed into place (params.h), so a step-N directory is always complete: the last complete
 * checkpoint is the step-N with the largest N. Once a new one is in place the older ones go but
 * the FL_CKPT_KEEP newest. DIR/STOP and DIR/STOPPED are the stop request's (below).
 *
 * Errors name the directory or the file and line. Not thread-safe for one DIR (one writer: the
 * run's trainer 0); the writer's thread is its own.
 */
#ifndef FL_CKPT_H
#define FL_CKPT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "runtime/params.h"
#include "runtime/train/train.h"

#define FL_CKPT_KEEP 2

/* "DIR/step-N" (malloc'ed). */
char *fl_ckpt_path(const char *dir, int64_t step);

/* Readies DIR for a run's checkpoints: made when missing (its parent must exist), refused when
 * it is not a directory; a run that does not resume (`resume` false) refuses a DIR that holds
 * checkpoints already (another run's: they are not replaced). */
FlStatus fl_ckpt_prepare(const char *dir, bool resume, FlErr *err) FL_WARN_UNUSED;

/* The last complete checkpoint in DIR into *path (malloc'ed; NULL when DIR holds none) and its
 * step into *step. Errors: DIR cannot be read. */
FlStatus fl_ckpt_latest(const char *dir, char **path, int64_t *step, FlErr *err) FL_WARN_UNUSED;

/* Removes the checkpoints of DIR older than the FL_CKPT_KEEP newest up to step `newest`, and
 * the leftovers of writes of such steps that did not complete (step-M.tmp.PID). */
void fl_ckpt_prune(const char *dir, int64_t newest);

/* The training state as the TRAIN file of checkpoint directory `ckpt` (being written), and back.
 * fl_ckpt_read_state fills *out (fl_ckpt_state_fini frees it); errors: no TRAIN file, another
 * format, a malformed line (named by file and line). */
FlStatus fl_ckpt_write_state(const char *ckpt, const FlTrainState *s, FlErr *err) FL_WARN_UNUSED;
FlStatus fl_ckpt_read_state(const char *ckpt, FlTrainState *out, FlErr *err) FL_WARN_UNUSED;
void fl_ckpt_state_fini(FlTrainState *s);

/* ---- stopping at a checkpoint ----
 * DIR/STOP asks a job to stop at its next checkpoint (a launcher that wants the job to restart
 * on more hosts writes it; so may a person). Trainer 0 takes it there (fl_ckpt_take_stop renames
 * it DIR/STOPPED) and the job ends well after that checkpoint; fl_ckpt_stopped then tells the
 * launcher that the job stopped for it (and removes STOPPED). */
FlStatus fl_ckpt_ask_stop(const char *dir, FlErr *err) FL_WARN_UNUSED;
bool fl_ckpt_take_stop(const char *dir);
bool fl_ckpt_stopped(const char *dir);
/* Withdraws a request no job took (removes DIR/STOP and DIR/STOPPED). */
void fl_ckpt_clear_stop(const char *dir);

/* ---- the writer: checkpoints written in the background ----
 * A run stops only to take its checkpoint's values (references to the vars' tensors, which are
 * never changed in place while held: runtime/tensor.h) and the state; a thread of the writer
 * then writes the files, switches the checkpoint in and prunes the older ones while training
 * goes on. One write at a time: a checkpoint that comes while the last one is still being
 * written waits for it. A write that fails is said by the next start or by fl_ckpt_writer_wait.
 * A process that dies meanwhile leaves the last complete checkpoint as it was. */
typedef struct FlCkptWriter FlCkptWriter;
/* A writer of DIR's checkpoints. */
FlCkptWriter *fl_ckpt_writer_new(const char *dir);
/* Waits for the write in progress, then starts writing DIR/step-N (N = st->step): the vars of
 * *v (taken: the list is emptied; the writer releases them), the state and the log's text
 * (both copied; log may be NULL). Errors: the write before failed (then nothing starts). */
FlStatus fl_ckpt_writer_start(FlCkptWriter *w, FlNamedTensors *v, const FlTrainState *st, const char *log,
                              size_t log_len, FlErr *err) FL_WARN_UNUSED;
/* Waits for the write in progress. Errors: its. */
FlStatus fl_ckpt_writer_wait(FlCkptWriter *w, FlErr *err) FL_WARN_UNUSED;
/* The checkpoints written so far, and the seconds their writes took (in all, the longest). */
void fl_ckpt_writer_stats(const FlCkptWriter *w, int *written, double *seconds, double *longest);
/* Waits for the write in progress (its error dropped), then frees w (NULL: no-op). */
void fl_ckpt_writer_free(FlCkptWriter *w);

#endif
