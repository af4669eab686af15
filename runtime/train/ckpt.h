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
 * the FL_CKPT_KEEP newest.
 *
 * Errors name the directory or the file and line. Not thread-safe for one DIR (one writer: the
 * run's trainer 0).
 */
#ifndef FL_CKPT_H
#define FL_CKPT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
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

#endif
