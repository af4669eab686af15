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

/* What a script's fluid.DistributeTranspiler asked for (docs/distributed.md, "DistributeTranspiler
 * in a script"), filled by a compilation given FlCompileOptions.dist. Owned strings: fini frees. */
typedef struct FlScriptDist {
    bool present;                /* the script called transpile() */
    int64_t trainer_id, trainers, pservers;
    bool sync;
    int64_t min_block_size;      /* 0: never cut a parameter (slice_var_up=False) */
    bool hash;                   /* split_method HashName, else RoundRobin */
    char **endpoints;            /* the pservers' endpoints as given, pservers of them */
    int64_t pserver;             /* the pserver whose programs the script asked for, else -1 */
    char *pserver_main, *pserver_startup; /* their names in Bundle.programs when the driver runs them */
    char *where;                 /* "file:line:col: " of the transpile() call */
    char *load;                  /* the checkpoint a pserver's load_persistables_for_increment names */
} FlScriptDist;
void fl_script_dist_fini(FlScriptDist *d);

typedef struct FlCompileOptions {
    const char *const *defines; /* "name=value" strings for fluid.flag (-D) */
    size_t ndefines;
    const char *stdlib_dir;     /* NULL: $FLUIDC_STDLIB, else the build's stdlib/ directory */
    int max_errors;             /* 0: 20 */
    bool no_stdlib_cache;       /* for tests */
    const char *tool;           /* the prefix of messages with no location; NULL: "flc" */
    const char *const *env;     /* "NAME=value": what os.getenv sees before the process's environment */
    size_t nenv;
    FlScriptDist *dist;         /* when set, filled (zeroed first); when NULL, a script that calls
                                   DistributeTranspiler.transpile is an error naming flc build */
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

/* A script that transpiles itself (its FlScriptDist present): compiles it once per role of the
 * plan it asks for, with the role's variables added to opt->env (PADDLE_TRAINING_ROLE,
 * PADDLE_TRAINER_ID, ...; docs/distributed.md), transpiles each compilation (compiler/transpile.h)
 * and keeps that role's bundle: trainer t's keeps the script's driver, pserver p's is the
 * transpiler's pserver (its script must run get_startup_program's and get_pserver_program's
 * programs, nothing else). Returns the number of errors, diagnostics in diag_out (each role's
 * prefixed by a note naming the role); *out the plan on success. */
int fl_compile_plan(const char *path, const FlCompileOptions *opt, FlPlan **out, FlBuf *diag_out);

/* The stdlib directory compiled into this build. */
const char *fl_eval_default_stdlib(void);

#endif
