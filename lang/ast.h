/* ast.h: the syntax tree of a .fl module.
 *
 * Every node is an FlAst: a common header (kind, span) and a union whose valid member the kind
 * decides (see the comment at each kind). Nodes, their arrays and their strings live in the
 * compilation's arena and are freed with it; identifiers are interned (compare by pointer).
 * The parser builds the tree and evaluates nothing; the evaluator (lang/expr.c, lang/stmt.c)
 * walks it.
 */
#ifndef FL_AST_H
#define FL_AST_H

#include "base/base.h"
#include "lang/source.h"

/* X-macro list of node kinds: X(KIND, "readable name"). */
#define FL_AST_KINDS(X)                                                                   \
    /* expressions */                                                                     \
    X(FL_AST_NAME, "name")           /* name */                                          \
    X(FL_AST_INT, "integer")         /* ival */                                          \
    X(FL_AST_FLOAT, "float")         /* fval */                                          \
    X(FL_AST_STR, "string")          /* str (decoded, NUL-terminated; slen bytes) */     \
    X(FL_AST_TRUE, "True")           /* - */                                             \
    X(FL_AST_FALSE, "False")         /* - */                                             \
    X(FL_AST_NONE, "None")           /* - */                                             \
    X(FL_AST_ATTR, "attribute")      /* attr.obj, attr.name */                           \
    X(FL_AST_CALL, "call")           /* call.fn, call.args */                            \
    X(FL_AST_INDEX, "subscript")     /* index.obj, index.index */                        \
    X(FL_AST_SLICE, "slice")         /* slice.lo, slice.hi, slice.step (each may be NULL) */ \
    X(FL_AST_LIST, "list")           /* list.items */                                    \
    X(FL_AST_TUPLE, "tuple")         /* list.items */                                    \
    X(FL_AST_DICT, "dict")           /* dict.keys, dict.vals (same length) */            \
    X(FL_AST_BINOP, "binary operation") /* binop.op, binop.l, binop.r */                 \
    X(FL_AST_UNOP, "unary operation")   /* unop.op (an FlUnOp), unop.e */     \
    X(FL_AST_AND, "and")             /* binop.l, binop.r */                              \
    X(FL_AST_OR, "or")               /* binop.l, binop.r */                              \
    X(FL_AST_COMPARE, "comparison")  /* binop.op (FlCmpOp), binop.l, binop.r */          \
    X(FL_AST_COND, "conditional expression") /* cond.test, cond.then, cond.other */      \
    X(FL_AST_LAMBDA, "lambda")       /* def.params, def.body (one FL_AST_RETURN), def.name "<lambda>" */      \
    X(FL_AST_LISTCOMP, "list comprehension") /* comp.elt, comp.clauses */                \
    X(FL_AST_DICTCOMP, "dict comprehension") /* comp.elt (the key), comp.val, comp.clauses */ \
    X(FL_AST_COMP_FOR, "comprehension 'for'") /* loop.target, loop.iter (a clause only) */ \
    X(FL_AST_COMP_IF, "comprehension 'if'")   /* cond.test (a clause only) */          \
    X(FL_AST_STARRED, "starred expression") /* unop.e: `*e` in a display or a target */  \
    X(FL_AST_CMP_CHAIN, "chained comparison") /* binop.op, binop.l (the COMPARE or        \
                                        CMP_CHAIN on its left), binop.r: `a < b < c` */   \
    /* statements */                                                                      \
    X(FL_AST_EXPR_STMT, "expression statement") /* expr.e */                            \
    X(FL_AST_ASSIGN, "assignment")   /* assign.target, assign.more, assign.value */      \
    X(FL_AST_AUGASSIGN, "augmented assignment") /* assign.op, assign.target, assign.value */ \
    X(FL_AST_DEF, "def")             /* def.name, def.params, def.body, def.decos */     \
    X(FL_AST_RETURN, "return")       /* expr.e (may be NULL) */                          \
    X(FL_AST_IF, "if")               /* cond.test, cond.then_body, cond.else_body        \
                                        (elif is an FL_AST_IF alone in else_body) */      \
    X(FL_AST_FOR, "for")             /* loop.target, loop.iter, loop.body */             \
    X(FL_AST_WHILE, "while")         /* loop.iter = condition, loop.body */              \
    X(FL_AST_BREAK, "break")         /* - */                                             \
    X(FL_AST_CONTINUE, "continue")   /* - */                                             \
    X(FL_AST_PASS, "pass")           /* - */                                             \
    X(FL_AST_IMPORT, "import")       /* import.module (dotted), import.alias (may be NULL) */ \
    X(FL_AST_FROM_IMPORT, "from-import") /* import.module, import.names, import.aliases, \
                                            import.star */                               \
    X(FL_AST_WITH, "with")           /* with.expr, with.as_name (may be NULL), with.body */ \
    X(FL_AST_GO, "go")               /* with.body */                                     \
    X(FL_AST_PARALLEL_FOR, "parallel_for") /* loop.target (a NAME), loop.iter, loop.body */ \
    X(FL_AST_SELECT, "select")       /* select.cases */                                  \
    X(FL_AST_CLASS, "class")         /* cls.name, cls.base (may be NULL), cls.body,      \
                                        cls.decos */                                      \
    X(FL_AST_ASSERT, "assert")       /* cond.test, cond.then (the message; may be NULL) */ \
    X(FL_AST_RAISE, "raise")         /* expr.e (may be NULL) */                          \
    X(FL_AST_GLOBAL, "global")       /* decl.names, decl.nnames, decl.nonlocal */        \
    X(FL_AST_TRY, "try")             /* loop.body (the try body), loop.iter (the exception; \
                                        NULL: bare), loop.target (the `as` NAME or NULL),   \
                                        loop.else_body (the except body) */                 \
    X(FL_AST_CASE, "case")           /* case_.target (NULL or a NAME/TUPLE to bind a      \
                                        received value), case_.op (the ch.recv()/ch.send(x) \
                                        call; NULL for default), case_.body */

typedef enum FlAstKind {
#define X(k, s) k,
    FL_AST_KINDS(X)
#undef X
        FL_AST_COUNT
} FlAstKind;

const char *fl_ast_kind_name(FlAstKind k);

/* Binary operators (binop.op of FL_AST_BINOP and assign.op of FL_AST_AUGASSIGN). */
typedef enum FlBinOp {
    FL_OP_ADD, FL_OP_SUB, FL_OP_MUL, FL_OP_DIV, FL_OP_FLOORDIV, FL_OP_MOD, FL_OP_MATMUL, FL_OP_POW,
    FL_BINOP_COUNT
} FlBinOp;
/* Comparison operators (binop.op of FL_AST_COMPARE). */
typedef enum FlCmpOp {
    FL_CMP_EQ, FL_CMP_NE, FL_CMP_LT, FL_CMP_LE, FL_CMP_GT, FL_CMP_GE, FL_CMP_IN, FL_CMP_NOT_IN,
    FL_CMP_IS, FL_CMP_IS_NOT,
    FL_CMP_COUNT
} FlCmpOp;
/* Unary operators (unop.op). */
typedef enum FlUnOp { FL_UN_NEG, FL_UN_POS, FL_UN_NOT, FL_UNOP_COUNT } FlUnOp;

typedef struct FlAst FlAst;

/* A list of nodes (statements of a body, items of a list...). */
typedef struct FlAstList {
    FlAst **items;
    size_t len;
} FlAstList;

/* A call argument: positional (name == NULL), keyword (name), *expr (star == 1), **expr (star == 2). */
typedef struct FlAstArg {
    const char *name; /* interned, or NULL */
    int star;
    FlAst *value;
    FlSpan span;
} FlAstArg;

/* A def parameter: name, default (NULL if none); star == 1 for *args, 2 for **kwargs. */
typedef struct FlAstParam {
    const char *name; /* interned */
    FlAst *deflt;
    int star;
    FlSpan span;
} FlAstParam;

/* The parser rejects trees deeper than this (counting statements and expressions), so that
 * recursive walks over a tree without errors stay within a small, known stack depth. */
#define FL_AST_MAX_DEPTH 200

struct FlAst {
    FlAstKind kind;
    FlSpan span; /* the whole construct; for statements with bodies, the header line */
    int depth;   /* height of the subtree (a leaf is 1); <= FL_AST_MAX_DEPTH when parsing succeeded */
    void *memo;  /* the evaluator's: an INT, FLOAT or STR literal's value, made when the literal is
                    first evaluated (values are immutable, and live as long as the tree) */
    union {
        const char *name;
        int64_t ival;
        double fval;
        struct { const char *str; size_t slen; };
        struct { FlAst *obj; const char *name; FlSpan name_span; } attr;
        struct { FlAst *fn; FlAstArg *args; size_t nargs; } call;
        struct { FlAst *obj, *index; } index;
        struct { FlAst *lo, *hi, *step; } slice;
        struct { FlAstList items; bool set; } list; /* set: a set display {a, b} (FL_AST_LIST) */
        struct { FlAstList keys, vals; } dict;
        struct { int op; FlAst *l, *r; } binop;
        struct { int op; FlAst *e; } unop;
        struct { FlAst *test, *then, *other; FlAstList then_body, else_body; } cond;
        struct { FlAst *e; } expr;
        /* assign.more: the further targets of a chained assignment `a = b = v` (after
         * target, left to right); empty otherwise and for augmented assignment */
        struct { int op; FlAst *target, *value; FlAstList more; } assign;
        /* decos: the decorators written above a def (top first; empty for a lambda) */
        struct { const char *name; FlAstParam *params; size_t nparams; FlAstList body; FlAstList decos; } def;
        struct { FlAst *target, *iter; FlAstList body; FlAstList else_body; } loop;
        struct {
            const char *module; /* dotted, interned: "fluid.layers" */
            const char *alias;  /* import a.b as c */
            const char **names, **aliases; /* from-import: names[i] as aliases[i] (NULL = same) */
            FlSpan *name_spans;
            size_t nnames;
            bool star;          /* from a import *: no names */
        } import;
        struct { FlAst *expr; const char *as_name; FlAstList body; } with;
        /* comprehensions: clauses are FL_AST_COMP_FOR / FL_AST_COMP_IF nodes in source order,
         * the first one a 'for' */
        struct { FlAst *elt, *val; FlAstList clauses; } comp;
        struct { FlAstList cases; } select;
        struct { FlAst *target, *op; FlAstList body; } case_;
        struct { const char *name; FlAst *base; FlAstList body; FlAstList decos; } cls;
        struct { const char **names; FlSpan *name_spans; size_t nnames; bool nonlocal; } decl;
    };
};

/* A parsed module: its statements. */
typedef struct FlAstModule {
    uint32_t file;
    FlAstList body;
} FlAstModule;

/* Parses the source file `file` of `ctx->sources`. Nodes come from `arena`, identifiers from
 * `in`. Errors go to `diag` (several per run where recovery allows); returns the number of
 * errors. On errors *out is still set (possibly partial) and must not be evaluated. */
int fl_parse(FlArena *arena, FlInterner *in, FlDiag *diag, uint32_t file, FlAstModule *out);

/* Prints the tree as an S-expression (for tests and `flc` debugging). */
void fl_ast_dump(const FlAstModule *m, FlBuf *out);

#endif
