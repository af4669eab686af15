/* params.h: saving and loading a program's persistable vars (parameters, optimizer state,
 * learning rates) — `flrun --save DIR` / `--load DIR`, and for embedders.
 *
 * Format (version 2; version 3 is the combined form below): DIR holds FORMAT ("fluidc checkpoint 2\n"), MANIFEST (one file name per
 * line, in var order) and one file per var. A var's file name is its name with '%', '/', control
 * bytes, a leading '.' and the first byte of a name equal to MANIFEST or FORMAT (any case)
 * written as %XX (two upper-case hex digits), so no var name can collide with another's file or
 * with the checkpoint's own files; names may hold any other byte. Each var's file is
 *     "FLTENSOR"            8 bytes, magic
 *     u32 version (1), u32 dtype (FlDType), u32 ndim, u32 reserved (0)
 *     i64 dims[ndim]
 *     the elements, little-endian, row-major
 * Version 1 (no FORMAT file: files named after the vars themselves) is still read. A FORMAT of
 * another version ("written by a newer fluidc" when higher) or that is not such a line is an
 * error. Every file read (FORMAT, MANIFEST, a var's, a shard) must be a regular file: it is
 * opened without blocking (fl_open_regular), so a FIFO in a checkpoint is an error, not a hang;
 * the save target check applies the same rule to the files of the directory it would replace.
 * Shards (a distributed table and its row-shaped optimizer state, written by the pservers that
 * hold them: docs/distributed.md): a var may instead be saved as files named
 * "<escaped name>%shard-FIRST-END" (an escaped name never holds "%s"), each holding rows
 * [FIRST, END) of the var, listed in MANIFEST after the whole vars; the file is
 *     "FLTENSOR", u32 version (2), u32 dtype, u32 ndim, u32 reserved (0)
 *     i64 dims[ndim]        the whole var's shape
 *     i64 first, i64 rows   the rows it holds
 *     the elements of those rows
 * A load reads, of the shards, the rows it needs (fl_params_read_rows): a whole var assembled
 * from all of them, or a pserver's block from the shards overlapping it, whatever P saved them.
 * Overlapping shards, rows no shard holds, a shard of another shape or dtype are errors naming
 * the var and the file.
 *
 * Targets: a save goes to a new path (in an existing, writable directory) or replaces an
 * earlier checkpoint: a directory holding a MANIFEST whose every entry is a saved tensor file
 * and nothing else but FORMAT and inference models' programs (a .flp with an inference spec: the
 * __model__ of fluid.io.save_inference_model, docs/driver.md). Anything else (a directory of other files, a regular file) is
 * refused, and nothing is touched. Trailing slashes are ignored; an existing DIR that is a
 * symlink is resolved first, so the checkpoint it points at is the one replaced.
 * Atomicity: the new checkpoint is written completely into DIR.tmp.PID beside DIR, then switched
 * in with one system call: rename(2) when DIR is new, renameat2(RENAME_EXCHANGE) when it
 * replaces a checkpoint (Linux; the old one, now at DIR.tmp.PID, is then removed). A process
 * killed at any moment leaves DIR holding the old or the new complete checkpoint (and maybe a
 * stale DIR.tmp.PID beside it). On a filesystem without RENAME_EXCHANGE the old checkpoint is
 * renamed aside to DIR.old.PID first (a kill between the two renames leaves it there).
 * Combined (format 3, "fluidc checkpoint 3"; Fluid's save_vars(filename=...)): every var in one
 * file of DIR that MANIFEST's first line names; MANIFEST's other lines are the vars' escaped
 * names, in the file's order, and the file is their tensor files (version 1) one after the
 * other. Loading reads it as it reads the other formats (fl_params_read, fl_params_load).
 * Fluid's layout (formats 4 and 5, fl_params_write_begin_fluid: what a script's fluid.io.save_*
 * writes): formats 2 and 3 with each whole var's tensor in Fluid's stream format instead
 * (runtime/lodstream.h; with its LoD levels), and a combined file's vars sorted by name, each
 * once, as Paddle's save_combine writes them, so Paddle's load_* read them. Shards stay version 2
 * tensor files (flrun --save and checkpoints write format 2).
 * Paddle's own saves (no FORMAT): a var's file named after it may be one tensor of Fluid's
 * stream format, nothing after it; which a file is, its first bytes say (FLTENSOR or a uint32 0,
 * the stream's LoD version). A directory without FORMAT may hold Paddle's combined file
 * (fl_params_check_combined, fl_params_read_fluid_combined), and fl_params_load of a regular
 * file reads it as the combined file of the program's persistables.
 * Loading checks every persistable var of the program before it sets any: a missing file, a
 * different dtype or shape is an error naming the var, and the scope is left untouched.
 * Not thread-safe for one DIR: one save or load of a directory at a time.
 */
#ifndef FL_PARAMS_H
#define FL_PARAMS_H

#include "base/base.h"
#include "compiler/ir/ir.h"
#include "runtime/api.h"
#include "runtime/lodstream.h"

FlStatus fl_params_save(const FlLoadedProgram *p, FlScope *scope, const char *dir, FlErr *err) FL_WARN_UNUSED;
/* Checks, without writing anything, that a save to dir would be accepted (the rules above) and
 * that a directory can be created beside it; flrun calls it before training. */
FlStatus fl_params_check_target(const char *dir, FlErr *err) FL_WARN_UNUSED;
FlStatus fl_params_load(const FlLoadedProgram *p, FlScope *scope, const char *dir, FlErr *err) FL_WARN_UNUSED;

/* The pieces of both, for jobs whose saved vars are spread over processes (flrun's MPI jobs). */
typedef struct FlNamedTensor {
    const char *name; /* borrowed */
    FlTensor t;       /* owned by the list */
    int nlevels;      /* its LoD levels (owned; int64 offsets, outermost first), which only a
                         checkpoint in Fluid's layout (formats 4 and 5) keeps */
    FlTensor lod[FL_LODSTREAM_MAX_LEVELS];
} FlNamedTensor;
typedef FL_VEC(FlNamedTensor) FlNamedTensors;
/* Appends the program's persistable vars (names borrowed from p) with their tensors in scope.
 * Errors: a var without a value (the list keeps what it has; free it either way). */
FlStatus fl_params_collect(const FlLoadedProgram *p, FlScope *scope, FlNamedTensors *out, FlErr *err) FL_WARN_UNUSED;
void fl_params_free(FlNamedTensors *v); /* releases the tensors and the list */
/* Writes the list as a saved directory (atomically, as fl_params_save does). Errors: a target
 * that is neither new nor a checkpoint, I/O. */
FlStatus fl_params_write(const char *dir, const FlNamedTensors *v, FlErr *err) FL_WARN_UNUSED;
/* fl_params_write with every var in the one file `file` of dir (a combined checkpoint, format 3).
 * Errors: those of fl_params_write, a file name that is not a plain name of the directory or is
 * the checkpoint's own (MANIFEST, FORMAT). */
FlStatus fl_params_write_combined(const char *dir, const char *file, const FlNamedTensors *v, FlErr *err) FL_WARN_UNUSED;
/* The message m of this module without the flrun option and directory it starts with ("--save: ",
 * "--load DIR: "), for callers that name them their own way. */
const char *fl_params_msg(const char *m);
/* Whether dir is a combined checkpoint whose file is `file` (an error saying what it is if not):
 * fluidc's (formats 3 and 5; *fluid false) or, in a directory without FORMAT, Paddle's combined file
 * (*fluid true: read it with fl_params_read_fluid_combined). */
FlStatus fl_params_check_combined(const char *dir, const char *file, bool *fluid, FlErr *err) FL_WARN_UNUSED;
/* Fluid's combined file `file` of dir (its save_combine's: the tensors of the vars of one call,
 * sorted by name, in the stream format, nothing after them): the values of vars[0, n) (any
 * order; a var named twice is read once) into out[0, n) (each initialised here; on error all
 * left empty), each checked against its var: dtype, shape (a -1 dim takes any size), as many
 * LoD levels as its lod_level. Errors name the var and the file: a tensor that is not there or
 * malformed, a mismatch, bytes after the last tensor. */
FlStatus fl_params_read_fluid_combined(const char *dir, const char *file, const FlVarDesc *const *vars, size_t n,
                                       FlLodTensor *out, FlErr *err) FL_WARN_UNUSED;
/* fl_params_read of the whole var with its LoD levels (a Fluid file's; fluidc's files hold
 * none) into *out (released first; left empty on error). */
FlStatus fl_params_read_lod(const char *dir, const FlVarDesc *v, FlLodTensor *out, FlErr *err) FL_WARN_UNUSED;
/* Sets v's value lt in scope: its tensor, and its LoD levels as the values of v's offset vars. */
void fl_params_set_value(FlScope *scope, const FlVarDesc *v, const FlLodTensor *lt);
/* One var's saved value into *out (released first), checked against v's dtype and shape; from
 * its file or assembled from its shards. */
FlStatus fl_params_read(const char *dir, const FlVarDesc *v, FlTensor *out, FlErr *err) FL_WARN_UNUSED;
/* Rows [row0, row0 + rows) of v's saved value (rows < 0: all of it) into *out, read from v's
 * whole file or from the shards overlapping them (only those rows are read). */
FlStatus fl_params_read_rows(const char *dir, const FlVarDesc *v, int64_t row0, int64_t rows, FlTensor *out,
                             FlErr *err) FL_WARN_UNUSED;

/* fl_params_write in steps, for a save some of whose vars other processes write as shards:
 * _begin checks the target (as fl_params_write), makes the new checkpoint's directory beside it
 * (fl_params_saving_dir) and writes v's vars whole into it; the shards go into that directory
 * (fl_params_write_shard, from any process that sees it); _end lists them in MANIFEST and
 * switches the checkpoint in; _abandon (or a failing _end) removes the directory. Both _end
 * and _abandon free s (NULL: no-op). */
typedef struct FlParamsSaving FlParamsSaving;
FlStatus fl_params_write_begin(const char *dir, const FlNamedTensors *v, FlParamsSaving **out, FlErr *err) FL_WARN_UNUSED;
/* fl_params_write_begin with every var in the one file `file` of dir (NULL: a file per var). */
FlStatus fl_params_write_begin_combined(const char *dir, const char *file, const FlNamedTensors *v, FlParamsSaving **out,
                                        FlErr *err) FL_WARN_UNUSED;
/* fl_params_write_begin_combined in Fluid's layout (formats 4 and 5): each whole var's file one tensor
 * of Fluid's stream format (with its LoD levels), named as in format 2; with `file`, that file
 * holds the vars' tensors sorted by name, each once (Fluid's save_combine). Paddle's load_vars
 * reads it (the vars whose names need no escaping). */
FlStatus fl_params_write_begin_fluid(const char *dir, const char *file, const FlNamedTensors *v, FlParamsSaving **out,
                                     FlErr *err) FL_WARN_UNUSED;
const char *fl_params_saving_dir(const FlParamsSaving *s);
FlStatus fl_params_write_end(FlParamsSaving *s, FlErr *err) FL_WARN_UNUSED;
void fl_params_write_abandon(FlParamsSaving *s);
/* Removes a saved directory: its files (a checkpoint's are all files), then itself. */
void fl_params_remove(const char *dir);
/* Writes t as rows [row0, row0 + t's rows) of the var `name` of `height` rows into dir (a
 * saving's directory). Errors: rows outside [0, height), I/O. */
FlStatus fl_params_write_shard(const char *dir, const char *name, int64_t height, int64_t row0, const FlTensor *t,
                               FlErr *err) FL_WARN_UNUSED;

#endif
