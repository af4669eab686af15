/* eval_impl.h: the compile-time interpreter's internals, shared by the files of the evaluator
 * (value.c, build.c, arith.c, expr.c, stmt.c, lower.c, eval.c, builtins.c, pylib.c,
 * pyclass.c, core.c, module.c). Not included outside lang/.
 *
 * Values live in the compilation's arena and are never freed one by one. An evaluation that
 * fails reports a diagnostic and yields the ERROR value, which every operation propagates
 * silently, so one mistake gives one message and evaluation goes on to find the next.
 */
#ifndef FL_EVAL_IMPL_H
#define FL_EVAL_IMPL_H

#include "compiler/ir/ir.h"
#include "lang/ast.h"
#include "lang/eval.h"
#include "lang/source.h"

typedef struct FlValue FlValue;
typedef struct Env Env;
typedef struct Module Module;
typedef struct Ctx Ctx;
typedef struct CallArgs CallArgs;

typedef FlValue *(*BuiltinFn)(Ctx *c, FlValue *self, CallArgs *a);

typedef enum ValKind {
    VK_NONE, VK_BOOL, VK_INT, VK_FLOAT, VK_STR, VK_LIST, VK_TUPLE, VK_DICT, VK_FUNC, VK_BUILTIN,
    VK_MODULE, VK_VAR, VK_RECORD, VK_GUARD, VK_PROGRAM, VK_READER, VK_ERROR, VK_CLASS,
    VK_SET, /* a Python set: its distinct elements in list.items, in insertion order (pyset.c) */
    VK_COUNT
} ValKind;

typedef enum GuardKind {
    GK_PROGRAM, GK_UNIQUE_NAME, GK_NAME_SCOPE, GK_SERVER_DO, GK_GO, GK_PARALLEL_FOR, GK_RNN, GK_WHILE,
    GK_COND,  /* _core.cond_block(cond): a: the bool [1] Var */
    GK_CALLS, /* _core.guard(enter, exit): a: enter, b: exit (NULL: none), called with no arguments */
    GK_BLOCK, /* _core.block_guard(index): n: an enclosing block of the current one, where the body's ops go */
    GK_COUNT
} GuardKind;

struct FlValue {
    ValKind kind;
    union {
        bool b;
        int64_t i;
        double f;
        struct { const char *s; size_t n; } str;
        /* LIST, TUPLE, SET; rt_depth: the runtime blocks around the code that made it; rt_block:
         * the driver's block it was made in (NULL: made outside the driver); rt_array: a list
         * filled at run time, the driver's tensor array that holds it (driver_values.c), and
         * rt_kind what it stands for (RtKind: how its elements are held, what it allows) */
        struct { FlValue **items; size_t len, cap; int rt_depth; FlBlock *rt_block; FlValue *rt_array; int rt_kind; } list;
        /* keys and vals in insertion order; the index (NULL while the dict is small): each str
         * key's text (by_str) or other key's bytes (by_bytes) -> its place + 1 (value.c) */
        struct { FlValue **keys, **vals; size_t len, cap; FlMap *by_str, *by_bytes; } dict;
        /* self: the instance a method is bound to (NULL: a plain function); owner: the class
         * whose body defined it (what a zero-argument super() starts from) */
        struct { FlAst *def; Env *closure; Module *mod; FlValue *self, *owner; } func;
        struct { const char *name; BuiltinFn fn; FlValue *self; } builtin;
        Module *mod;
        struct { const char *name; FlProgram *prog; } var;
        /* an instance of a user class has cls (its class); super() makes a record with cls (the
         * class to search from), no attributes and bind (the instance its methods bind to) */
        struct { const char *type; Env *attrs; FlValue *cls, *bind; } rec;
        /* a user class: its name, its base class (NULL: object) and its attributes */
        struct { const char *name; FlValue *base; Env *attrs; } cls;
        struct { GuardKind kind; FlValue *a, *b; int64_t n; } guard;
        FlProgram *prog;
        FlReaderSpec *reader;
    };
};

typedef struct EnvJournal EnvJournal;

/* A name -> value map with a parent (function scopes: locals -> closure -> module). */
struct Env {
    FlMap map;
    Env *parent;
    FlMap *redirect; /* names declared global or nonlocal in this scope -> the Env they live in
                        (NULL when none is) */
    bool shared;     /* a function closes over it or a class's attributes live in it, or in an Env
                        under it: it may be used after the call that made it returns */
    EnvJournal *journal; /* the innermost journal kept of this Env's map, or NULL */
};

/* The names written into an Env's own map while the journal is kept (fl_env_set, fl_env_remove),
 * each with the value it had when the journal began: what a runtime body changed, found without
 * a walk over every name in scope (lower.c). Journals of one Env nest; ending one hands its
 * names on to the one around it. */
struct EnvJournal {
    FlMap old;        /* name -> its value before (the map's own address: it was unbound) */
    FL_VEC(const char *) names; /* the same names, in the order first written */
    EnvJournal *outer;
};

struct Module {
    const char *name;  /* dotted */
    const char *path;  /* file, or "<native>" */
    const char *dir;   /* directory of the file (user modules import from there) */
    bool is_stdlib;
    bool loading;
    Env *globals;
};

struct CallArgs {
    FlValue **pos;
    size_t npos;
    const char **kwnames;
    FlValue **kwvals;
    size_t nkw;
    FlSpan span;      /* the whole call */
    FlSpan *pos_spans; /* each positional arg's span (may be NULL) */
};

typedef FL_VEC(const char *) StrVec;

/* The arena size past which evaluation stops (a runaway compile-time program). */
#define MEMORY_LIMIT ((size_t)512 << 20)
/* The most elements a compile-time list or tuple may hold and the most characters of a string
 * (range, repetition, concatenation, str): more is a diagnostic, not a slow crawl to the memory
 * limit. */
#define FL_MAX_LEN 10000000
/* The deepest nesting of lists, tuples and dicts that str, print, ==, `in` and dict keys go
 * through (Python's recursion limit is 1000): a value nested deeper, or a list holding itself in
 * ==, is a diagnostic instead of an overflow of the C stack. */
#define FL_MAX_NESTING 1000

/* Iterations that compile-time loops and comprehensions may run in one compilation, together:
 * a per-loop limit would let nested loops multiply past it. */
#define CT_ITERATION_BUDGET 1000000

/* Flow control of statements. */
typedef enum Flow { FLOW_NORMAL, FLOW_BREAK, FLOW_CONTINUE, FLOW_RETURN, FLOW_ERROR } Flow;

/* A runtime loop being built (a while on a Var, a for over a channel). Its break and continue
 * lower to bool [1] flag vars, as TensorFlow's autograph lowers them:
 * - directly in the body (`body`, not inside a runtime block within it), continue ends the
 *   evaluation of the body and so does break, after which every iteration ends by clearing
 *   `cond`;
 * - inside a runtime block within the body (an if, or a guarded rest as below), break sets
 *   `broke`, break and continue clear `alive`, and `exits` counts them. `alive` is a var of
 *   `body`, set at the start of every iteration; once a statement has lowered an exit, the
 *   statements after it (in its own list and in every enclosing list up to the body) run in a
 *   conditional_block on `alive`. The iteration ends with the carry-out of the names the body
 *   rebinds, then `cond` is recomputed (a while) only if not `broke`, then cleared if `broke`
 *   (the carry-out may have written it: `while c: ...; c = x < n`);
 * - `broke` is a var of `outer` set before the loop op; with an else clause, a break directly in
 *   the body sets it too, and the else clause runs in a conditional_block on its negation. */
typedef struct RtLoop {
    const char *cond;   /* the loop's condition var */
    FlBlock *body;      /* the block of one iteration */
    int depth;          /* the rt_depth of the code directly in the body */
    FlBlock *outer;     /* the block holding the loop op */
    const char *alive;  /* NULL until an exit inside a runtime block needs it */
    const char *broke;  /* NULL until a break needs it */
    bool has_else;
    bool has_break;
    int exits;          /* break and continue lowered inside runtime blocks so far */
    bool is_select;     /* a select case's body, lowered as a loop that runs once: a break ends
                           the case (Go), as a continue would; no cond, no broke */
    bool in_ct_loop;    /* (is_select) the select is inside a compile-time loop */
    bool is_try;        /* the body of a try around a reader's EOFException, run once
                           (fl_ev_lower_once): only the EOFException leaves it */
    bool ends_run;      /* an uncaught EOFException in the body ends the run (driver_pyreader.c) */
} RtLoop;

/* A function call's returns under a runtime condition (docs/driver.md, "Exits";
 * driver_loop.c): a `return` inside a runtime loop or if of the call clears `alive`, breaks every
 * runtime loop of the call around it, and the statements after each statement that lowered one
 * run in a conditional_block on `alive` (as a loop's `alive` guards the rest of its body). */
typedef struct RtFunc {
    size_t mark;          /* the index of the call's NULL in c->rtloops */
    int rt_depth;         /* c->rt_depth at the call: a return deeper than that is a runtime one */
    FlProgram *prog;      /* the program current at the call, its block and that block's length */
    FlBlock *block;
    size_t pos;
    size_t driver_pos;    /* the length of the driver's block 0 at the call (prog not the driver) */
    const char *alive;    /* bool [1], true until a return runs; NULL until a return needs it */
    bool alive_in_driver; /* alive is a var of the driver */
    int exits;            /* returns lowered so far */
    const char *result;   /* the driver var a `return value` under a runtime condition assigns, the
                             call's value (NULL: none yet) */
} RtFunc;

/* The current program and block saved while ops go to the driver (driver.c). */
typedef struct DriverSwap {
    bool swapped; /* false: the driver was current already */
    FlProgram *main;
    FlBlock *block, *home;
} DriverSwap;

/* Where ops currently go. */
typedef struct BuildState {
    FlProgram *main, *startup;
    FlBlock *block; /* current block of main */
} BuildState;

typedef struct Frame {
    Module *mod;
    FlSpan call_span; /* where the user called into stdlib code (valid when user_call) */
    bool user_call;
} Frame;

struct Ctx {
    FlArena arena;
    FlInterner in;
    FlSources sources;
    FlDiag diag;
    const FlCompileOptions *opt;
    const char *stdlib_dir;
    bool stdlib_from_env; /* stdlib_dir is $FLUIDC_STDLIB: an import that fails names it */

    FlBundle *bundle;
    BuildState b;
    FlMap modules;          /* dotted name or path -> Module* */
    Env *builtins;
    FlMap unique;           /* prefix -> counter (int64 stored as pointer-to-arena int) */
    FL_VEC(FlMap *) unique_stack;
    FL_VEC(const char *) unique_prefix; /* beside unique_stack: guard(new_generator="p") names p<key>_<n> */
    /* unique_name.switch's generators (build.c): names come from the innermost guard's counts
     * (unique_stack), else from unique_base (NULL: &unique) with unique_base_prefix; unique_gens[i]
     * and unique_gen_prefix[i] are generator i's counts and prefix (a value of the program holds
     * i), kept to the end (those of guards too, once held) */
    FlMap *unique_base;
    const char *unique_base_prefix;
    FL_VEC(FlMap *) unique_gens;
    FL_VEC(const char *) unique_gen_prefix;
    int64_t random_seed;    /* counter for the seeds of random init ops */
    FL_VEC(const char *) name_scopes;
    FL_VEC(RtLoop *) rtloops; /* runtime loops being built, innermost last; a NULL hides the
                                 ones below it (a function body, a goroutine, a parallel_for) */
    RtFunc *rtfunc;         /* the innermost function call being evaluated (NULL: none) */
    FL_VEC(struct TryFrame *) tries; /* runtime trys around a reader's EOFException being built,
                                        innermost last (driver_pyreader.c) */
    int user_calls;         /* calls of the script's own functions being evaluated */
    int loop_depth;         /* compile-time loops around the code being evaluated (within the
                               innermost function, goroutine or runtime loop body), for break
                               and continue */
    int rt_depth;           /* runtime blocks (if branches, loop bodies, select cases, goroutine
                               bodies) around the code being evaluated */
    int loop_rt_depth;      /* rt_depth where the innermost compile-time loop runs (valid when
                               loop_depth > 0): a break deeper than that is under a runtime if */
    FlBlock *home;          /* the block where names first bound inside runtime ifs and loops
                               get their vars: the innermost block that is not such a body */
    int64_t ct_iterations;  /* iterations of compile-time loops and comprehensions so far, in
                               the whole compilation (CT_ITERATION_BUDGET) */
    int func_depth;
    int depth;              /* recursion guard */
    FlSpan err_span;        /* the user-level span errors and op locations use */
    bool have_err_span;
    FlValue *ret;           /* value of the last `return` */
    FlValue *cur_owner;     /* the class that defined the running method (for super()), or NULL */
    FlValue *cur_self;      /* the running function's first argument (for super()), or NULL */
    Env *cur_locals;        /* the running function's local scope (for locals()); NULL at module level */
    FL_VEC(int32_t) src_map; /* FlSources file id -> bundle source index (or -1) */
    FlMap block_of_var;     /* param-block var name -> base param name (split/concat) */
    FlMap params;           /* "<main program>/<name>" of each parameter -> FlSpan* (arena) of
                               the user's line that created it: a second create_parameter of
                               that name shares it */
    FlMap param_hooks;      /* "<main program>/<name>" of a parameter -> the function that makes it
                               (param_hook(): a WeightNormParamAttr's g and v and their product) */
    FlMap tensor_fetches;   /* names of the driver vars exe.run(return_numpy=False) fetched -> the
                               var: Fluid's LoDTensor methods shape() and _dtype() (driver_values.c) */
    FlMap error_clips;      /* "<main program>/<name>" of a var given an error_clip -> its ErrorClipByValue
                               record: its gradient is clipped where the backward makes it (build.c) */
    FlMap updates_at;       /* "<main program>" -> size_t* (arena): the index in its block 0 of
                               the first op after the first minimize()'s backward (where the
                               updates begin); later minimizes' backwards go before it */
    bool in_server_do;
    bool aborted;           /* a limit was hit: stop evaluating */
    bool cuda_noted;        /* the note that CUDAPlace means the CPU was given (once a compilation) */
    struct DistState *dist; /* what fluid.DistributeTranspiler asked (driver_dist.c); NULL: nothing */
    FlBlock *server_block;
    Module *cur_mod;        /* the module whose code is running */
    FL_VEC(Env *) envs;     /* every Env made, so their maps can be freed at the end */
    FL_VEC(FlProgram *) programs;   /* made by fluid.Program(); NULL once the bundle adopts one */
    FL_VEC(FlReaderSpec *) readers; /* made by io.csv/io.split; the bundle keeps clones */
    struct {                /* fluid.profiler (core.c): a region being evaluated */
        bool on;            /* between start_profiler and stop_profiler */
        bool train_before;  /* fluid.train(...) had been called when it started */
        FlSpan start;       /* the user's line that started it */
        int errors;         /* the errors reported before it started */
    } prof;
    bool *define_read;      /* opt->defines[i] was read by a fluid.flag */
    StrVec flags_asked;     /* the names fluid.flag asked for, each once, in order */
    FlProgram *train_driver; /* the driver fluid.train's loop is written into (the bundle's), once called */
    bool driver_after_train; /* the script's code reached that driver (exe.run after fluid.train) */
    FlValue *none, *vtrue, *vfalse, *error;
};

/* ---- values (value.c) ---- */
FlValue *fl_v_new(Ctx *c, ValKind k);
FlValue *fl_v_int(Ctx *c, int64_t i);
FlValue *fl_v_float(Ctx *c, double f);
FlValue *fl_v_bool(Ctx *c, bool b);
FlValue *fl_v_str(Ctx *c, const char *s, size_t n);
FlValue *fl_v_cstr(Ctx *c, const char *s);
FlValue *fl_v_list(Ctx *c, ValKind k); /* VK_LIST or VK_TUPLE */
void fl_v_list_push(Ctx *c, FlValue *l, FlValue *v);
FlValue *fl_v_dict(Ctx *c);
void fl_v_dict_set(Ctx *c, FlValue *d, FlValue *k, FlValue *v);
/* NULL if absent. Keys are compared with ==; a comparison nesting too deeply (a key that holds
 * itself) counts as unequal. */
FlValue *fl_v_dict_get(FlValue *d, FlValue *k);
/* Removes the key at place i (< d's length) and its value; the keys after it move down one. */
void fl_v_dict_remove(FlValue *d, size_t i);
FlValue *fl_v_var(Ctx *c, const char *name);
FlValue *fl_v_builtin(Ctx *c, const char *name, BuiltinFn fn, FlValue *self);
FlValue *fl_v_record(Ctx *c, const char *type);
void fl_v_rec_set(Ctx *c, FlValue *rec, const char *name, FlValue *v);
/* A record's attribute (NULL: none, or not a record); whether v is a native record of that type
 * (not an instance of a user class). */
FlValue *fl_v_rec_get(FlValue *r, const char *name);
bool fl_v_is_rec(const FlValue *v, const char *type);
/* Python's ==, exact for ints (not through a double), dicts equal when they map the same keys
 * to equal values. A comparison nesting deeper than FL_MAX_NESTING (two lists that hold
 * themselves: Python's RecursionError) is reported at sp, *ok false. */
bool fl_v_equal(Ctx *c, FlValue *a, FlValue *b, FlSpan sp, bool *ok);
/* Two numbers (int, float or bool) as Python orders them, exactly: -1, 0, 1, or 2 (a NaN). */
int fl_v_num_cmp(const FlValue *a, const FlValue *b);
const char *fl_v_type_name(const FlValue *v);
/* Python's repr of v appended to out; a list, tuple or dict met again inside itself shows as
 * [...], (...) or {...}. False (the text cut short) when v nests deeper than FL_MAX_NESTING or
 * its text passes FL_MAX_LEN characters; fl_v_repr_at also reports that at sp. */
bool fl_v_repr(Ctx *c, FlValue *v, FlBuf *out);
bool fl_v_repr_at(Ctx *c, FlValue *v, FlBuf *out, FlSpan sp);
bool fl_v_is_seq(const FlValue *v);
bool fl_v_is_num(const FlValue *v); /* int, float or bool */
double fl_v_num(const FlValue *v);  /* the number of an int, float or bool */

/* ---- environments (value.c) ---- */
Env *fl_env_new(Ctx *c, Env *parent);
FlValue *fl_env_find(Env *e, const char *name); /* walks parents */
/* fl_env_find(e, name), else fl_env_find(then, name) (a name in a scope, else a builtin). */
FlValue *fl_env_find_then(Env *e, Env *then, const char *name);
void fl_env_set(Env *e, const char *name, FlValue *v);
/* Marks e and its parents shared (see Env): a function or a class keeps e. */
void fl_env_share(Env *e);
/* Unbinds name in e's own map (global and nonlocal names are not redirected). */
void fl_env_remove(Env *e, const char *name);
/* Keeps journal j of the names written into e's map from now on, until fl_env_journal_end. */
void fl_env_journal_begin(Env *e, EnvJournal *j);
void fl_env_journal_end(Env *e, EnvJournal *j);
/* Whether j saw name written; *old: its value when j began (NULL: unbound). */
bool fl_env_journal_old(const EnvJournal *j, const char *name, FlValue **old);
/* `global name` / `nonlocal name` in scope e: assignments to name in e go to `to`. */
void fl_env_redirect(Ctx *c, Env *e, const char *name, Env *to);

/* ---- errors (build.c) ---- */
/* Reports at the user-level span (the node's own span in user code; in stdlib code the user's
 * call site, with a note at the stdlib line). Returns the ERROR value. */
FlValue *fl_ev_error(Ctx *c, FlSpan sp, const char *fmt, ...) FL_PRINTF(3, 4);
FlSpan fl_ev_user_span(Ctx *c, FlSpan sp);
FlLoc fl_ev_loc(Ctx *c, FlSpan sp);
const char *fl_ev_suggest(Ctx *c, const char *name, Env *e);

/* ---- the op builder (build.c) ---- */
FlVarDesc *fl_ev_var_desc(Ctx *c, FlValue *v); /* the desc of a VK_VAR visible from the block */
const char *fl_ev_unique(Ctx *c, const char *prefix); /* "fc" -> "fc_0", "fc_1", ... */
/* `with unique_name.guard(prefix)`: names inside count afresh (prefix NULL or "": none) until
 * fl_ev_unique_pop. */
void fl_ev_unique_push(Ctx *c, const char *prefix);
void fl_ev_unique_pop(Ctx *c);
/* unique_name.switch: names come from generator `to` from now on (-1: a new one, its names
 * prefixed by prefix unless NULL); returns the generator they came from (its index, made one
 * when it had none). */
int64_t fl_ev_unique_switch(Ctx *c, int64_t to, const char *prefix);
FlVarDesc *fl_ev_new_var(Ctx *c, FlBlock *b, const char *name, FlSpan sp);
/* Appends an op of `type` to the current block: inputs/outputs from keyword-named slots, attrs
 * from the rest; creates missing outputs; runs shape inference, reporting its errors at the
 * user's span. Returns the single output Var, a tuple of them, or ERROR. */
FlValue *fl_ev_op(Ctx *c, const char *type, CallArgs *a, FlSpan sp);
/* Appends op `type` to the current block as a's keywords spell it, in their order: input and
 * output slots (a Var or a list of Vars, every output given), attributes typed by the op table
 * (None: left out). Nothing else: no default attributes, no shape inference, no fresh vars; the
 * driver of fluid.train (stdlib/fluid/_train.fl) is built so, to be the op for op equal of
 * compiler/ir/train_driver.c's, which flc verify checks as a whole. Returns None or the error. */
FlValue *fl_ev_op_exact(Ctx *c, const char *type, CallArgs *a, FlSpan sp);
/* fl_ev_op with inputs X = x and, unless y is NULL, Y = y. */
FlValue *fl_ev_op2(Ctx *c, const char *type, FlValue *x, FlValue *y, FlSpan sp);
/* A scale op: x * scale + bias. */
FlValue *fl_ev_scale(Ctx *c, FlValue *x, double scale, double bias, FlSpan sp);
/* Appends a bare op (slots and attrs set by the caller) located at the user's span. */
FlOpDesc *fl_ev_op_raw(Ctx *c, FlBlock *b, const char *type, FlSpan sp);
bool fl_ev_infer(Ctx *c, FlBlock *b, FlOpDesc *op, FlSpan sp);
/* The span of an IR loc in the compilation's sources; false when it has none there. */
bool fl_ev_loc_span(Ctx *c, FlLoc loc, FlSpan *out);
/* An arithmetic operation (an FlBinOp) or, for op >= 100, a comparison (FlCmpOp op - 100)
 * where at least one side is a Var. */
FlValue *fl_ev_binop_var(Ctx *c, int op, FlValue *l, FlValue *r, FlSpan sp);
/* The exact integers of float attribute `attr` of op in its INTS twin (fl_ops_int_twin), when v
 * (the value the attribute was set from) is an int, or a list of ints, some beyond what a double
 * holds exactly. */
void fl_ev_set_int_twin(Ctx *c, FlOpDesc *op, const char *attr, FlValue *v);
/* A fill_constant var [1] of dtype dt holding the number v (an int stays exact: fl_ops_int_twin). */
FlValue *fl_ev_const_var(Ctx *c, FlValue *v, FlDType dt, FlSpan sp);
/* Appends backward ops for loss; returns (params, grads) lists or ERROR. */
FlValue *fl_ev_append_backward(Ctx *c, FlValue *loss, FlValue *param_list, FlSpan sp);
/* Fluid's error_clip_callback over the backward ops of block 0 from op index `from` on: each var
 * with an error_clip gets its gradient clipped in place right after the op that makes it. False
 * (reported at sp) when one cannot be (a sparse gradient). */
bool fl_ev_error_clips(Ctx *c, size_t from, FlSpan sp);
bool fl_ev_is_var(const FlValue *v);
bool fl_ev_is_channel(Ctx *c, FlValue *v);

/* ---- operators (arith.c) ---- */
FlValue *fl_ev_binop(Ctx *c, int op, FlValue *l, FlValue *r, FlSpan sp);   /* an FlBinOp */
FlValue *fl_ev_unop(Ctx *c, int op, FlValue *v, FlSpan sp);                /* an FlUnOp */
FlValue *fl_ev_compare(Ctx *c, int op, FlValue *l, FlValue *r, FlSpan sp); /* an FlCmpOp */
/* Python's truth value; a Var has none at compile time (reported, *ok false). */
bool fl_v_truthy(Ctx *c, FlValue *v, FlSpan sp, bool *ok);

/* ---- expressions and calls (expr.c) ---- */
FlValue *fl_ev_expr(Ctx *c, Env *e, FlAst *n);
FlValue *fl_ev_getattr(Ctx *c, FlValue *obj, const char *name, FlSpan sp);
/* A function value for a def or lambda node, closing over e, in the current module. */
FlValue *fl_ev_make_func(Ctx *c, Env *e, FlAst *n);
FlValue *fl_ev_call(Ctx *c, FlValue *fn, CallArgs *a);
FlValue *fl_ev_call_simple(Ctx *c, FlValue *fn, FlSpan sp, FlValue **pos, size_t npos);
/* Binds a builtin's arguments to its parameter spec "a b c=" (names; '=' marks optional;
 * "*rest" takes extra positionals, "**kw" extra keywords into out as a dict). Missing optional
 * arguments are NULL in out. Returns false after reporting an error. */
bool fl_ev_bind(Ctx *c, const char *fname, const char *spec, CallArgs *a, FlValue **out);

/* ---- statements (stmt.c) ---- */
/* Reports break/continue outside a loop and 'import *' inside a function in body. */
void fl_ev_check_placement(Ctx *c, FlAstList *body, bool in_loop, bool in_def);
/* Binds target t (a name, a tuple or list of targets, an attribute, an item) to v. */
bool fl_ev_assign(Ctx *c, Env *e, FlAst *t, FlValue *v);
Flow fl_ev_block(Ctx *c, Env *e, FlAstList *body);
/* Runs body->items[from..] in order, up to one that lowers a break or continue of the runtime
 * loop around inside a runtime block while more statements follow: *next is then the index
 * after it, else body->len. */
Flow fl_ev_run_stmts(Ctx *c, Env *e, FlAstList *body, size_t from, size_t *next);
/* The runtime loop that a break or continue here would leave, or NULL (none, or a compile-time
 * loop is nearer). */
RtLoop *fl_ev_rt_loop(Ctx *c);
/* Counts one iteration of a compile-time loop or comprehension (`what`) against the
 * compilation's CT_ITERATION_BUDGET; once it is spent, reports at sp, aborts the evaluation and
 * returns false. */
bool fl_ev_ct_iteration(Ctx *c, FlSpan sp, const char *what);

/* ---- runtime control flow (lower.c) ---- */
/* Runs `body` into a new sub-block of the current block; returns the sub-block. Names rebound to
 * Vars inside it are carried out by assign ops (see lower.c). */
FlBlock *fl_ev_sub_block(Ctx *c, Env *e, FlAstList *body, bool carry_out, FlSpan sp, Flow *flow);
void fl_ev_control_io(Ctx *c, FlBlock *parent, FlBlock *sub, FlOpDesc *op, const char *in_slot,
                      const char *out_slot);
/* Appends to b a fill_constant setting the dense var d to zeros, its unknown dims 0 (an empty
 * batch): what a var holds before the runtime block that sets it first has run, so every later
 * read finds it written; d's declaration stays as it was. false: an error (reported). */
bool fl_ev_zero_init(Ctx *c, FlBlock *b, FlVarDesc *d, FlSpan sp);
/* `v, ok = ch.recv()` (target: a tuple or list of two targets; ch: a channel): Go's two-value
 * receive, a channel_recv with its Status; binds v to the value (the zero value once ch is
 * closed and drained) and ok to a bool [1] Var, false then. */
Flow fl_ev_lower_recv2(Ctx *c, Env *e, FlAst *target, FlValue *ch, FlSpan sp);
/* len(ch), or with cap cap(ch): an int64 [1] Var (channel_len), the state when the op runs. */
FlValue *fl_ev_chan_len(Ctx *c, FlValue *ch, bool cap, FlSpan sp);
/* A break or continue of the runtime loop l; the flow that ends the enclosing statements. */
Flow fl_ev_lower_exit(Ctx *c, RtLoop *l, bool is_break, FlSpan sp);
/* body->items[from..] after a statement that lowered an exit: run while the iteration lives. */
Flow fl_ev_lower_rest(Ctx *c, Env *e, FlAstList *body, size_t from);
const char *fl_ev_new_flag(Ctx *c, FlBlock *b, const char *prefix, size_t pos, bool value, FlSpan sp);
void fl_ev_set_flag(Ctx *c, const char *name, bool value, FlSpan sp);
Flow fl_ev_lower_return(Ctx *c, FlAst *s);
void fl_ev_rtfunc_begin(Ctx *c, RtFunc *f);
/* The value of a call whose body is def (r: what it returned when it ended): r, or the call's
 * result var when it returned a value under a runtime condition (an error when its body can end
 * without a return of a value there). */
FlValue *fl_ev_rtfunc_value(Ctx *c, RtFunc *f, const FlAst *def, FlValue *r, FlSpan sp);
Flow fl_ev_lower_if(Ctx *c, Env *e, FlAst *s, FlValue *cond);       /* cond: a bool Var */
Flow fl_ev_lower_while(Ctx *c, Env *e, FlAst *s, FlValue *cond);    /* cond: a bool Var */
Flow fl_ev_lower_while_true(Ctx *c, Env *e, FlAst *s);
Flow fl_ev_lower_once(Ctx *c, Env *e, FlAstList *body, RtLoop *l, FlSpan sp);
Flow fl_ev_lower_cond_body(Ctx *c, Env *e, FlAstList *body, const char *cond, FlSpan sp, const char *where);
/* A runtime loop over what an op gives each iteration (`for v in ch`, `for data in reader()`):
 * ok = true; while ok: next(...) appends to `sub` the ops that give the next value and set the
 * bool [1] var `ok`, and returns the value (a tuple for `for a, b in ...`); if ok: the body with
 * the target bound to it. break and continue work as in any runtime loop (RtLoop). */
typedef FlValue *(*LoopNextFn)(Ctx *c, FlBlock *sub, const char *ok, void *arg, FlSpan sp);
Flow fl_ev_lower_for_next(Ctx *c, Env *e, FlAst *s, LoopNextFn next, void *arg);
Flow fl_ev_lower_for_chan(Ctx *c, Env *e, FlAst *s, FlValue *ch);   /* `for v in ch` */
/* `for v in range(start, stop, step)` on the driver: start and stop ints or int driver vars, step
 * a nonzero int (lower.c); driver_loop.c decides which `for` is one. */
Flow fl_ev_lower_for_range(Ctx *c, Env *e, FlAst *s, FlValue *start, FlValue *stop, int64_t step);
/* The iterable of `for` statement s; NULL when s is a runtime loop of the driver, which it then
 * lowered (*flow says how that went; driver_loop.c). */
FlValue *fl_ev_for_iter(Ctx *c, Env *e, FlAst *s, Flow *flow);
Flow fl_ev_lower_go(Ctx *c, Env *e, FlAstList *body, FlSpan sp);
/* n concurrent iterations of body; bind (if not NULL) is bound to the index Var or, with
 * as_rec, to a record whose .idx is. */
Flow fl_ev_lower_parallel_for(Ctx *c, Env *e, int64_t n, const char *bind, bool as_rec,
                              FlAstList *body, FlSpan sp);
Flow fl_ev_lower_select(Ctx *c, Env *e, FlAst *s);
Flow fl_ev_lower_server_do(Ctx *c, Env *e, FlAst *s, FlValue *g); /* g: the server.do guard */
/* Thread.start(): see driver.c; the current program must be the driver. */
FlValue *fl_ev_lower_thread(Ctx *c, FlValue *fn, FlValue *args, FlValue *kwargs, FlSpan sp);
/* A recurrent layer's block (g: an rnn_block guard, g->guard.a its owner object): the body goes
 * into a new sub-block of the current block, after owner._block_begin(index) and before
 * owner._block_end(), which the stdlib uses to emit the op that runs the block. Names bound in
 * the body do not leave it. */
Flow fl_ev_lower_rnn(Ctx *c, Env *e, FlAst *s, FlValue *g);
/* `with while_op.block():` of layers.While(cond) (g->guard.a: cond, a bool [1] Var): the body
 * becomes the sub-block of a runtime `while` op on cond. Its ops update outer vars in place (the
 * condition through less_than(cond=), counters through increment); names bound in the body do
 * not leave it. */
Flow fl_ev_lower_while_guard(Ctx *c, Env *e, FlAst *s, FlValue *g);
/* `with _core.cond_block(cond):` (layers.Switch's cases; g->guard.a: cond, a bool [1] Var): the
 * body becomes a conditional_block on cond, as the then branch of a runtime `if`. */
Flow fl_ev_lower_cond_guard(Ctx *c, Env *e, FlAst *s, FlValue *g);

/* ---- Python builtins and methods (builtins.c) ---- */
/* Binds the CallArgs `a` of builtin fname to spec into FlValue *v[n] or returns ERROR. */
#define ARGS(fname, spec, n)                                                                \
    FlValue *v[n + 1];                                                                     \
    if (!fl_ev_bind(c, fname, spec, a, v)) return c->error

/* A builtin of a native table (the Python builtins, the functions of `_core`). */
typedef struct NativeFn {
    const char *name;
    BuiltinFn fn;
} NativeFn;

void fl_builtins_install(Ctx *c);
/* An int (or bool) into *out, or a report that `what` must be an int. */
bool fl_ev_want_int(Ctx *c, FlValue *v, const char *what, FlSpan sp, int64_t *out);
bool fl_ev_want_str(Ctx *c, FlValue *v, const char *what, FlSpan sp);
/* Whether a `what` ("list", "tuple", "str") of have + add elements stays within FL_MAX_LEN;
 * reported at sp if not. */
bool fl_ev_check_len(Ctx *c, size_t have, size_t add, const char *what, FlSpan sp);
FlValue *fl_ev_var_method(Ctx *c, FlValue *var, const char *name, FlSpan sp);
/* var.name = v: only stop_gradient (a bool; on a parameter, True also keeps it out of training,
 * as Fluid's trainable=False); any other attribute is an error. */
bool fl_ev_var_set(Ctx *c, FlValue *var, const char *name, FlValue *v, FlSpan sp);
/* prog.name: the methods of a Program (core.c): global_block, clone. */
FlValue *fl_ev_program_method(Ctx *c, FlValue *prog, const char *name, FlSpan sp);
bool fl_ev_program_set(Ctx *c, FlValue *prog, const char *name, FlValue *v, FlSpan sp);
FlValue *fl_ev_value_method(Ctx *c, FlValue *obj, const char *name, FlSpan sp);
/* What a compile-time `for`, a comprehension or a builtin iterates over: a list or tuple itself,
 * a dict's keys, a string's characters; ERROR (reported) for anything else. */
FlValue *fl_ev_as_list(Ctx *c, FlValue *o, FlSpan sp);

/* ---- classes, the Python library builtins and modules (pyclass.c, pylib.c) ---- */
/* A class statement: evaluates its base and body, binds the class in e. */
Flow fl_ev_class(Ctx *c, Env *e, FlAst *s);
/* Calls a class: a new instance, initialised by __init__ when the class has one. */
FlValue *fl_ev_instantiate(Ctx *c, FlValue *cls, CallArgs *a);
/* An attribute of a class (through its bases), NULL if none; functions are returned as they are
 * (bind them with fl_ev_bind_method). */
FlValue *fl_ev_class_attr(FlValue *cls, const char *name);
/* A function found on a class, bound to the instance self (other values as they are). */
FlValue *fl_ev_bind_method(Ctx *c, FlValue *f, FlValue *self);
/* A class attribute v as an attribute of the class cls (obj NULL) or of its instance obj: a
 * function bound to obj, a classmethod bound to cls, a property's value (its getter called on
 * obj, reported at sp), anything else as it is. */
FlValue *fl_ev_class_member(Ctx *c, FlValue *v, FlValue *cls, FlValue *obj, FlSpan sp);
/* v (a function or a class just made) passed through the decorators written above it,
 * evaluated top to bottom and applied bottom to top; ERROR after an error. */
FlValue *fl_ev_decorate(Ctx *c, Env *e, FlAstList *decos, FlValue *v);
/* Whether class cls is sub or one of its bases. */
bool fl_ev_is_subclass(FlValue *sub, FlValue *cls);
/* obj.name when obj has it, else NULL; nothing is reported, except errors of a property getter
 * it calls (at sp). */
FlValue *fl_ev_find_attr(Ctx *c, FlValue *obj, const char *name, FlSpan sp);
/* The exception classes and super() into the builtins. */
void fl_ev_pyclass_install(Ctx *c);
/* sets (pyset.c): the builtin set, a display {a, b}, a set's methods */
void fl_ev_pyset_install(Ctx *c);
FlValue *fl_ev_set_display(Ctx *c, Env *e, FlAst *n);
FlValue *fl_ev_set_method(Ctx *c, FlValue *s, const char *name, FlSpan sp);
/* isinstance, hasattr, setattr, sorted, map, filter, any, all, super and the exception types
 * into the builtins; the modules math and functools. */
void fl_ev_pylib_install(Ctx *c);
/* An int attribute or argument from v: an int or bool, or a float that is a whole number (what
 * `/` gives: (k - 1) / 2 is 1.0). 1: *out set; 0: v is not a number (the caller reports); -1: a
 * float that is not whole, reported at sp as `what` with a note that '//' was probably meant. */
int fl_ev_whole_int(Ctx *c, FlValue *v, const char *what, FlSpan sp, int64_t *out);
/* A native module (no file) of the functions fns, registered under name (`import name` finds
 * it). */
Module *fl_ev_module_of_fns(Ctx *c, const char *name, const NativeFn *fns, size_t n);
/* min() and max(): of several arguments or one iterable, with key= and default=. */
FlValue *fl_ev_min_max(Ctx *c, CallArgs *a, bool is_max);
/* list.sort(key=None, reverse=False): a stable sort in place. */
FlValue *fl_ev_list_sort(Ctx *c, FlValue *self, CallArgs *a);
/* Whether the method table of plain values (lists, dicts, strings) has obj.name. */
bool fl_ev_has_value_method(const FlValue *obj, const char *name);

/* ---- the `_core` module (core.c) ---- */
Module *fl_ev_native_module(Ctx *c, const char *name);
/* At the end of a compilation: a fluid.profiler region never stopped is an error at its start. */
void fl_ev_profile_end(Ctx *c);

/* ---- the driver program (driver.c; docs/driver.md) ---- */
FlProgram *fl_ev_driver(Ctx *c);                 /* the bundle's driver, made on first use */
bool fl_ev_in_driver(const Ctx *c);             /* ops go to the driver now (a thread's body) */
bool fl_ev_driver_started(const Ctx *c);        /* the driver has an op: what prints now prints at run time */
bool fl_ev_is_driver_var(const Ctx *c, const FlValue *v);
/* Makes the driver's global block current unless the driver is current already; leave undoes it. */
void fl_ev_driver_enter(Ctx *c, DriverSwap *s);
void fl_ev_driver_leave(Ctx *c, DriverSwap *s);
/* Run-time strings: a driver var, or a RuntimeStr record (a format and its driver vars). */
bool fl_ev_is_rtstr(const FlValue *v);
bool fl_ev_is_runtime(const Ctx *c, const FlValue *v);
FlValue *fl_ev_rtstr_new(Ctx *c);                                        /* empty */
void fl_ev_rtstr_text(Ctx *c, FlValue *rt, const char *s, size_t n);     /* appends text */
void fl_ev_rtstr_value(Ctx *c, FlValue *rt, FlValue *var, const char *spec); /* a value, printf spec */
FlValue *fl_ev_rtstr_cat(Ctx *c, FlValue *a, FlValue *b); /* str/RuntimeStr/driver var + same */
FlValue *fl_ev_rtstr_of(Ctx *c, FlValue *v);              /* str(v) of a run-time value */
void fl_ev_rtstr_add(Ctx *c, FlValue *rt, FlValue *v);    /* appends a str/RuntimeStr/driver var */
FlValue *fl_ev_rtstr_settle(Ctx *c, FlValue *rt);         /* rt, or its str when it holds no value */
/* driver_print.c: str(v) (repr: repr(v)) as Python gives it, a class's __str__/__repr__ and the
 * items of containers included: a str, or a RuntimeStr when a part is a run-time value. */
FlValue *fl_ev_str_of(Ctx *c, FlValue *v, bool repr, FlSpan sp);
/* A '%s'/'{}' argument (repr: '%r'): an object or container that needs fl_ev_str_of as its
 * string, else x itself. */
FlValue *fl_ev_format_arg(Ctx *c, FlValue *x, bool repr, FlSpan sp);
/* str.format's spec of a run-time value as a printf conversion ("" for none); NULL, reported. */
const char *fl_ev_rtstr_pyspec(Ctx *c, const char *spec, size_t n, FlSpan sp);
/* print(*values, sep=, end=) when a value is a run-time one: a print_line of the driver. */
FlValue *fl_ev_driver_print(Ctx *c, FlValue *values, FlValue *sep, FlValue *end, FlSpan sp);
void fl_ev_driver_install(Ctx *c); /* the native module _driver */
/* driver_dist.c: fluid.DistributeTranspiler's native module _dist (docs/distributed.md). finish
 * fills opt->dist at the end of a compilation (or reports a transpile() nobody asked for). */
void fl_ev_dist_install(Ctx *c);
void fl_ev_dist_finish(Ctx *c);
void fl_ev_dist_free(Ctx *c);
/* driver_batch.c: a batch as Paddle's list of samples. The samples of a ReaderBatch (NULL when b
 * is none; the error value when its size is unknown), and the fields of a list of samples. */
FlValue *fl_ev_batch_samples(Ctx *c, FlValue *b, FlSpan sp);
FlValue *fl_ev_samples_fields(Ctx *c, FlValue *samples, FlSpan sp);
/* _core.create_var(prefix=, shape=, dtype=, name=, persistable=) (core.c): a var of the current
 * block (the global block when persistable); Block.create_var is it too (program.c). */
FlValue *fl_ev_core_create_var(Ctx *c, FlValue *self, CallArgs *a);
/* driver_values.c: type(names[i]=vals[i]...) as an op of the driver (its current block). */
FlValue *fl_ev_driver_kwop(Ctx *c, const char *type, const char **names, FlValue **vals, size_t n, FlSpan sp);
/* Fluid's Variable.is_data: a var layers.data made (fed), not its offsets. */
bool fl_ev_var_is_data(Ctx *c, FlValue *var, const FlVarDesc *d);
/* driver_data.c: readers (docs/driver.md, "Data"): the native module _reader and builtin next();
 * `for data in reader():` and enumerate(reader()). */
void fl_ev_driver_data_install(Ctx *c);
void fl_ev_driver_random_install(Ctx *c); /* driver_random.c: numpy.random */
void fl_ev_driver_pyfunc_install(Ctx *c); /* driver_pyfunc.c: fluid.layers.py_func (the native module _pyfunc) */
bool fl_ev_is_reader_iter(const FlValue *v);
bool fl_ev_is_reader_batch(const FlValue *v);
FlValue *fl_ev_batch_comp(Ctx *c, Env *scope, FlAst *n, FlValue *batch);
Flow fl_ev_lower_for_reader(Ctx *c, Env *e, FlAst *s, FlValue *it);
FlValue *fl_ev_reader_enumerate(Ctx *c, FlValue *it, FlValue *start, FlSpan sp);
/* For driver_pyreader.c: the Reader record of a reader value (else NULL) and its attributes
 * (_fields: (dtype, width, name) tuples; _batched); reader_epoch of record r into the driver var
 * `into` (NULL: a new var), after its reader_open; reader_next of epoch var into block sub
 * setting the bool var ok: the list of its field vars ([rows, width]), or an error value; *lods the
 * list of each field's offsets var (a sequence field's) or None. */
FlValue *fl_ev_reader_record(FlValue *v);
/* driver_dataset.c: Fluid's Dataset API (the native module _dataset): a source reader of kind
 * `kind` giving the fields of layout l (its record's _files, _slot_names, _slot_types and
 * _slot_widths, set by the caller, go to Bundle.readers). */
void fl_ev_driver_dataset_install(Ctx *c);
struct FlDsLayout;
FlValue *fl_ev_reader_source(Ctx *c, const char *kind, const struct FlDsLayout *l);
FlValue *fl_ev_reader_attr(FlValue *r, const char *name);
const char *fl_ev_reader_epoch_into(Ctx *c, FlValue *r, const char *into, FlSpan sp);
FlValue *fl_ev_reader_next_fields(Ctx *c, FlBlock *sub, const char *ok, FlValue *r, const char *epoch_var,
                                  FlValue **lods, FlSpan sp);
void fl_ev_driver_io_install(Ctx *c); /* _driver_io (driver_io.c): fluid.io's save and load of vars */
void fl_ev_contrib_install(Ctx *c); /* _contrib (driver_contrib.c): fluid.contrib's lookup table utils */
void fl_ev_driver_metrics_install(Ctx *c); /* _metrics (driver_metrics.c): metrics' states on the driver */
/* driver_lod.c: Fluid's LoDTensor (the native module _lod); exe.run's feed dict with each LoDTensor
 * replaced by its data and the offsets of the var it feeds (feed itself when it holds none); a
 * fetched value's lod() and recursive_sequence_lengths() (NULL: another name). */
void fl_ev_driver_lod_install(Ctx *c);
bool fl_ev_is_lod_tensor(const FlValue *v);
FlValue *fl_ev_lod_feeds(Ctx *c, FlValue *feed, const FlBlock *g, FlSpan sp);
FlValue *fl_ev_lod_fetched_attr(Ctx *c, FlValue *v, const char *name, FlSpan sp);
/* The lengths (or offsets) of a fetched sequence: a run-time value that prints as Python's list. */
bool fl_ev_is_lod_lengths(const FlValue *v);
FlValue *fl_ev_lod_lengths_str(Ctx *c, FlValue *v); /* its RuntimeStr */
/* driver_file.c: the builtin open() of a file to write a program to or to read values from,
 * `with` on it, and program.desc (its serialize_to_string() is what f.write takes). */
void fl_ev_driver_file_install(Ctx *c);
bool fl_ev_is_file(const FlValue *v);
/* A File open for reading: its path and position (bytes from the start) into *path and *pos, or
 * false, reported at sp naming what (the call), when it is closed, written or read to its end. */
bool fl_ev_file_read_at(Ctx *c, FlValue *f, const char *what, FlSpan sp, const char **path, int64_t *pos);
void fl_ev_file_moved(Ctx *c, FlValue *f, int64_t pos); /* its position now; -1: at the end */
FlValue *fl_ev_file_guard(Ctx *c, FlValue *f);
FlValue *fl_ev_program_desc(Ctx *c, FlValue *prog);
/* The program of v, a serialize_to_string() result (a ProgramBytes record); NULL for anything else. */
FlValue *fl_ev_program_bytes_program(const FlValue *v);
/* driver_pyreader.c: the py_reader family (docs/driver.md, "Data"): the native module _pyreader,
 * `try: ... except fluid.core.EOFException:`, and the EOFException an exe.run of a program a
 * py_reader feeds raises. fl_ev_eof_after_stmt: after a statement of runtime loop l's body (or of
 * a block within it) in which an EOFException left a loop inside l, it leaves l too. */
void fl_ev_driver_pyreader_install(Ctx *c);
Flow fl_ev_stmt_try(Ctx *c, Env *e, FlAst *s);
void fl_ev_eof_after_stmt(Ctx *c, RtLoop *l, FlSpan sp);
/* The feeds exe.run of program pname adds from the py_readers that feed it (their batch, after the
 * EOFException when there is none), appended to names and vals; with *guard set to the bool var
 * the run_program must run under (NULL: none). false: an error (reported). */
bool fl_ev_pyreader_feeds(Ctx *c, const FlProgram *prog, FlValue *feed, const char ***names, FlValue ***vals,
                          size_t *n, const char **guard, FlSpan sp);
/* After fl_ev_pyreader_feeds set a guard: the blocks back to outer, the run under the guard. */
bool fl_ev_pyreader_guard_end(Ctx *c, FlBlock *outer, const char *guard, FlSpan sp);
/* A fetch var d of such a run (in the driver's global block): zeros there first, the batch dim 0
 * (what it holds when no batch came), so every later read finds it written. */
bool fl_ev_pyreader_fetch_init(Ctx *c, FlVarDesc *d, FlSpan sp);
/* `for data in reader():` of an iterable PyReader (reader() gave a PyReaderIter). */
bool fl_ev_is_pyreader_iter(const FlValue *v);
Flow fl_ev_lower_for_pyreader(Ctx *c, Env *e, FlAst *s, FlValue *it);
/* driver_loop.c: whether statements run programs (the static scan of a runtime loop's body). */
bool fl_ev_body_runs_programs(Ctx *c, Env *e, FlAstList *body);
/* v[idx] and float(v) / int(v) (dt float64 / int64) of a driver var: ops of the driver. */
FlValue *fl_ev_driver_index(Ctx *c, FlValue *v, FlValue *idx, FlSpan sp);
FlValue *fl_ev_driver_item(Ctx *c, FlValue *v, FlDType dt, FlSpan sp);
/* numpy's elementwise fn (exp, log, sqrt, square, abs, tanh, sin, cos) of driver value x, element
 * by element (an int value is taken as float64 first, as numpy does, except by square and abs,
 * which keep its dtype); `what` names the call in errors (driver_values.c). */
FlValue *fl_ev_driver_unary(Ctx *c, const char *fn, FlValue *x, const char *what, FlSpan sp);
/* print(...) to stream ("stdout", "stderr"); the shape and numbers of a nested list (driver.c). */
FlValue *fl_ev_driver_print_stream(Ctx *c, FlValue *values, FlValue *sep, FlValue *end, const char *stream, FlSpan sp);
bool fl_ev_driver_flatten(Ctx *c, FlValue *v, int depth, int64_t *shape, int *ndim, FlValue *out, FlSpan sp);
/* ---- fetched values: numpy's indexing, functions and methods, math, sys.exit (driver_values.c) ---- */
void fl_ev_values_install(Ctx *c); /* the native module _values */
FlValue *fl_ev_driver_subscript(Ctx *c, Env *e, FlValue *v, FlAst *ix, FlSpan sp); /* v[...] */
FlValue *fl_ev_driver_len(Ctx *c, FlValue *v, FlSpan sp);
FlValue *fl_ev_driver_take(Ctx *c, FlValue *v, FlValue *idx, FlSpan sp); /* v[[0, 2]]: a gather */
/* A new var PREFIX_N.tmp_0 of driver block b holding a value declared as `like` is (its dtype
 * and shape; not persistable, no gradient, no offsets): a fetched value, a scope's var, a result. */
FlVarDesc *fl_ev_driver_value_var(Ctx *c, FlBlock *b, const char *prefix, const FlVarDesc *like, FlSpan sp);
/* v.NAME of a driver var (shape, ndim, mean, sum, min, max, astype, flatten); NULL: not one of them. */
FlValue *fl_ev_driver_attr(Ctx *c, FlValue *v, const char *name, FlSpan sp);
bool fl_ev_driver_dtype(Ctx *c, FlValue *v, FlDType *out, FlSpan sp); /* numpy's dtype names */
FlValue *fl_ev_driver_math(Ctx *c, const char *fn, FlValue *x, FlSpan sp); /* math.fn(v) */
FlValue *fl_ev_driver_const(Ctx *c, FlValue *v, FlSpan sp); /* numbers as a constant of the driver */
/* the same in dtype (-1: float64 unless they are all ints, as numpy's arrays) */
FlValue *fl_ev_driver_const_as(Ctx *c, FlValue *v, int dtype, FlSpan sp);
/* The numbers of a numpy array the script made (numpy.array(...)) and its dtype (-1: none given);
 * NULL when v is not one. */
FlValue *fl_ev_ndarray_numbers(FlValue *v, int *dtype);
FlValue *fl_ev_driver_write_dot(Ctx *c, FlValue *self, CallArgs *a); /* _driver.write_dot (driver_file.c) */
FlValue *fl_ev_ndarray_of(Ctx *c, FlValue *value, int dtype, FlSpan sp); /* numbers as a numpy array (dtype -1: none) */
/* driver_tensorfile.c: a scope tensor's set(array, place), numpy.fromfile(...) */
FlValue *fl_ev_driver_m_set(Ctx *c, FlValue *self, CallArgs *a);
FlValue *fl_ev_driver_fromfile(Ctx *c, FlValue *self, CallArgs *a);
FlValue *fl_ev_driver_exit(Ctx *c, int64_t code, FlSpan sp); /* an exit op */
void fl_ev_driver_raise(Ctx *c, const char *msg, FlSpan sp); /* a raise under a runtime condition */
/* scope.find_var(name) of the Scope whose driver var is scope_var (None: the root scope). */
FlValue *fl_ev_scope_find_var(Ctx *c, FlValue *scope_var, const char *name, FlSpan sp);
/* Lists filled at run time (docs/driver.md): l.append(x) in a runtime block of the driver makes
 * l a tensor array of the driver (list.rt_array); len(l), l[i], sum(l) of one. A fetched tensor
 * array is one too: a list of numpy arrays (return_numpy) or a LoDTensorArray, whose elements the
 * array holds as they are (RT_LIST's each with a leading dim of 1, which numpy.array(l) stacks). */
typedef enum RtKind {
    RT_LIST,         /* a Python list appended to at run time */
    RT_FETCHED,      /* exe.run's list of numpy arrays for a fetched tensor array */
    RT_TENSOR_ARRAY, /* a LoDTensorArray: fetched with return_numpy=False, or fluid.LoDTensorArray() */
    RT_KIND_COUNT
} RtKind;
bool fl_ev_is_rt_list(const FlValue *v);
bool fl_ev_is_tensor_array(const FlValue *v); /* a LoDTensorArray (RT_TENSOR_ARRAY), perhaps not yet written */
/* exe.run's value for a fetch of tensor array var arr (a var of the driver): a list of numpy
 * arrays (numpy) or a LoDTensorArray. */
FlValue *fl_ev_driver_fetched_array(Ctx *c, FlValue *arr, bool numpy, FlSpan sp);
FlValue *fl_ev_driver_tensor_array(Ctx *c, FlSpan sp); /* fluid.LoDTensorArray() */
/* str() of a list filled at run time (driver_print.c): Python's list of its elements' reprs. */
FlValue *fl_ev_driver_list_str(Ctx *c, FlValue *l, FlSpan sp);
/* for t in l: over a list filled at run time, a runtime loop of the driver (lower.c) */
Flow fl_ev_lower_for_list(Ctx *c, Env *e, FlAst *s, FlValue *l);
FlValue *fl_ev_driver_list_array(FlValue *l); /* its array var and its length var (int64 [1]) */
FlValue *fl_ev_driver_list_count(FlValue *l);
FlValue *fl_ev_driver_list_append(Ctx *c, FlValue *l, FlValue *x, FlSpan sp);
FlValue *fl_ev_driver_list_len(Ctx *c, FlValue *l, FlSpan sp);
FlValue *fl_ev_driver_list_index(Ctx *c, FlValue *l, FlValue *idx, FlSpan sp);
FlValue *fl_ev_driver_list_sum(Ctx *c, FlValue *l, FlSpan sp);
/* program.c: Programs and Blocks as values. A Block record of block idx of program value prog;
 * var.block (its program's global block); a Program attribute other than clone and random_seed
 * (NULL: none); clone(for_test=True)'s pruning of p (false: reported). */
FlValue *fl_ev_block_record(Ctx *c, FlValue *prog, int idx);
FlValue *fl_ev_var_block(Ctx *c, FlValue *var);
FlValue *fl_ev_program_attr(Ctx *c, FlValue *prog, const char *name);
bool fl_ev_program_for_test(Ctx *c, FlProgram *p, FlSpan sp);
/* A copy of program p that the script holds (in c->programs), whose parameters are parameters of
 * the copy too (all_parameters() lists them), as Fluid's Program.clone copies their Parameter info:
 * clone(), a frozen or converted copy. */
FlProgram *fl_ev_program_copy(Ctx *c, const FlProgram *p);
/* The name a run_program gives program p ("main", "startup", program_N: the bundle adopts a
 * Program() or a clone the first time); NULL when the script did not make p. */
const char *fl_ev_program_name(Ctx *c, const FlProgram *p);

/* ---- modules (module.c) ---- */
FlValue *fl_ev_import(Ctx *c, const char *dotted, FlSpan sp, const char *from_dir);
/* Parses the module `name` from text (taken: the sources own it from here on; `path` is what
 * diagnostics show), registers it in c->modules and runs its top level. NULL if it does not
 * parse or breaks a placement rule (reported); else the module, even if running it reported
 * errors. */
Module *fl_ev_run_file(Ctx *c, const char *name, const char *path, char *text, size_t len, bool is_stdlib);

#endif
