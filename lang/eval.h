/* eval.h: compiling a .fl program: parse it and the modules it imports, run it at compile time
 * and build the IR bundle (startup program, main program, run spec) it describes.
 *
 * The script runs as a Fluid Python script runs: plain values (int, float, bool, str, None,
 * lists, tuples, dicts, functions, modules) are compile-time values; a Var is a symbolic tensor
 * and every operation on a Var appends an op to the current block. Control flow on plain values
 * runs at compile time; `if`/`while` on a Var and `for v in ch` over a channel become
 * conditional_block / while ops with sub-blocks.
 *
 * Errors are diagnostics (file:line:col, source line, caret), several per run where recovery
 * allows; an op's shape or dtype error is reported at the user's line that made it, even when
 * the op was built inside a stdlib layer.
 */
#ifndef FL_EVAL_H
#define FL_EVAL_H

#include "base/base.h"
#include "compiler/ir/ir.h"

typedef struct FlCompileOptions {
    const char *const *defines; /* "name=value" strings for fluid.flag (-D) */
    size_t ndefines;
    const char *stdlib_dir;     /* NULL: $FLUIDC_STDLIB, else the build's stdlib/ directory */
    int max_errors;             /* 0: 20 */
    bool no_stdlib_cache;       /* for tests */
    const char *tool;           /* the prefix of messages with no location; NULL: "flc" */
} FlCompileOptions;

/* Compiles the .fl file at `path`. On success (return 0) *out receives the bundle (owned by the
 * caller). Otherwise returns the number of errors and *out is NULL. Diagnostics are appended to
 * `diag_out` in the printed form, with warnings (a -D that no fluid.flag read), which do not
 * count as errors: print diag_out on success too. Reentrant: no global state. */
int fl_compile_file(const char *path, const FlCompileOptions *opt, FlBundle **out, FlBuf *diag_out);

/* The same for a source text that is not on disk (`path` is only used in messages and to find
 * modules next to it). */
int fl_compile_source(const char *path, const char *text, size_t len, const FlCompileOptions *opt,
                      FlBundle **out, FlBuf *diag_out);

/* The stdlib directory compiled into this build. */
const char *fl_eval_default_stdlib(void);

#endif
