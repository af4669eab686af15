/* grammar.y: the .fl grammar (a pure, LALR(1) bison parser) building the AST of ast.h.
 *
 * The grammar follows Python's: statements are simple ones (on one line, ';'-separated) or
 * compound ones with a header ending in ':' and a block (NEWLINE INDENT stmts DEDENT, or simple
 * statements on the header's line). Expressions are layered like Python's grammar (lambda and
 * conditional, or, and, not, comparisons), the arithmetic operators get their precedence from
 * the %left/%right declarations below; `**` binds tighter than a unary minus on its left and
 * takes one on its right. Assignment targets are parsed as expressions and checked afterwards.
 *
 * Actions are one-liners calling the builders in this file's epilogue; nothing is evaluated.
 * Every builder records the node's depth, so that a tree deeper than FL_AST_MAX_DEPTH is an
 * error instead of a stack overflow later. Syntax errors are worded by yyreport_syntax_error
 * ("expected X, found Y"); recovery resumes at the end of a line (error NEWLINE, and an indented
 * block after it), which keeps several errors per run meaningful.
 */
%code requires {
#include "lang/parse_impl.h"
}

%code provides {
int fl_yylex(FL_YYSTYPE *v, FL_YYLTYPE *loc, FlParser *p);
}

%code {
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define YYLLOC_DEFAULT(cur, rhs, n)                                                        \
    do {                                                                                   \
        if (n) {                                                                           \
            (cur).start = YYRHSLOC(rhs, 1).start;                                          \
            (cur).end = YYRHSLOC(rhs, n).end;                                              \
        } else {                                                                           \
            (cur).start = (cur).end = YYRHSLOC(rhs, 0).end;                                \
        }                                                                                  \
    } while (0)

static void fl_yyerror(FL_YYLTYPE *loc, FlParser *p, const char *msg);
static FlLoc join(FlLoc a, FlLoc b) { FlLoc l = {a.start, b.end}; return l; }

static FlNodeVec *nv_new(FlParser *p);
static FlNodeVec *nv_push(FlParser *p, FlNodeVec *v, FlAst *n);
static FlNodeVec *nv_cat(FlParser *p, FlNodeVec *v, FlNodeVec *w);
static FlArgVec *av_push(FlParser *p, FlArgVec *v, FlAstArg a);
static FlStrVec *sv_push(FlParser *p, FlStrVec *v, FlStrLit s);
static FlParamVec *pv_push(FlParser *p, FlParamVec *v, FlAstParam a);
static FlNameVec *names_push(FlParser *p, FlNameVec *v, const char *name, const char *alias, FlLoc loc);
static FlAstArg arg(FlParser *p, const char *name, int star, FlAst *value, FlLoc loc);
static FlAstParam param(FlParser *p, const char *name, int star, FlAst *deflt, FlLoc loc);

static FlAst *name(FlParser *p, const char *s, FlLoc loc);
static FlAst *int_lit(FlParser *p, int64_t v, FlLoc loc);
static FlAst *float_lit(FlParser *p, double v, FlLoc loc);
static FlAst *str_lit(FlParser *p, FlStrVec *parts, FlLoc loc);
static FlAst *leaf(FlParser *p, FlAstKind k, FlLoc loc);
static FlAst *bad(FlParser *p, FlLoc loc);
static FlAst *attr(FlParser *p, FlAst *obj, const char *s, FlLoc name_loc, FlLoc loc);
static FlAst *call(FlParser *p, FlAst *fn, FlArgVec *args, FlLoc loc);
static FlAst *subscript(FlParser *p, FlAst *obj, FlAst *index, FlLoc loc);
static FlAst *slice(FlParser *p, FlAst *lo, FlAst *hi, FlAst *step, FlLoc loc);
static FlAst *seq(FlParser *p, FlAstKind k, FlNodeVec *items, FlLoc loc);
static FlAst *one_or_tuple(FlParser *p, FlNodeVec *items, FlLoc loc);
static FlAst *dict(FlParser *p, FlNodeVec *kv, FlLoc loc);
static FlAst *binop(FlParser *p, FlAstKind k, int op, FlAst *l, FlAst *r, FlLoc loc);
static FlAst *unop(FlParser *p, int op, FlAst *e, FlLoc loc);
static FlAst *chained(FlParser *p, FlAst *l, int op, FlAst *r, FlLoc loc);
static FlAst *cond_expr(FlParser *p, FlAst *then, FlAst *test, FlAst *other, FlLoc loc);
static FlAst *lambda(FlParser *p, FlParamVec *params, FlAst *body, FlLoc loc);
static FlAst *comp(FlParser *p, FlAstKind k, FlAst *elt, FlAst *val, FlNodeVec *clauses, FlLoc loc);
static FlAst *comp_for(FlParser *p, FlAst *target, FlAst *iter, FlLoc loc);
static FlAst *comp_if(FlParser *p, FlAst *test, FlLoc loc);

static FlAst *expr_stmt(FlParser *p, FlAst *e, FlLoc loc);
static FlAst *assign(FlParser *p, FlNodeVec *targets, FlAst *value, FlLoc loc);
static FlAst *augassign(FlParser *p, int op, FlAst *target, FlAst *value, FlLoc loc);
static FlAst *ret(FlParser *p, FlAst *e, FlLoc loc);
static FlNodeVec *imports(FlParser *p, FlNodeVec *v, FlNameVec *dotted, const char *alias, FlLoc loc);
static FlAst *from_import(FlParser *p, FlNameVec *dotted, FlNameVec *names, FlLoc loc);
static FlAst *def(FlParser *p, const char *s, FlParamVec *params, FlNodeVec *body, FlLoc loc);
static FlAst *if_stmt(FlParser *p, FlAst *test, FlNodeVec *then, FlNodeVec *other, FlLoc loc);
static FlAst *loop(FlParser *p, FlAstKind k, FlAst *target, FlAst *iter, FlNodeVec *body, FlNodeVec *other, FlLoc loc);
static FlAst *with(FlParser *p, FlAstKind k, FlAst *e, const char *as, FlNodeVec *body, FlLoc loc);
static FlAst *select_stmt(FlParser *p, FlNodeVec *cases, FlLoc loc);
static FlAst *case_clause(FlParser *p, const char *kw, FlLoc kwl, FlAst *target, FlAst *op, FlNodeVec *body, FlLoc loc);
static FlAst *class_stmt(FlParser *p, const char *s, FlAst *base, FlNodeVec *body, FlLoc loc);
static FlAst *assert_stmt(FlParser *p, FlAst *test, FlAst *msg, FlLoc loc);
static FlAst *raise_stmt(FlParser *p, FlAst *e, FlLoc loc);
static FlAst *decl_stmt(FlParser *p, FlNameVec *names, bool nonlocal, FlLoc loc);
static FlAst *starred(FlParser *p, FlAst *e, FlLoc loc);
static FlAst *decorated(FlParser *p, FlNodeVec *decos, FlAst *n);
}

%define api.pure full
%define api.prefix {fl_yy}
%define api.location.type {FlLoc}
%define parse.error custom
%define parse.lac full
%locations
%parse-param {FlParser *p}
%lex-param {FlParser *p}
%expect 0

%union {
    const char *name;
    int64_t ival;
    double fval;
    FlStrLit str;
    int op;
    FlAst *node;
    FlNodeVec *vec;
    FlArgVec *args;
    FlAstArg arg;
    FlParamVec *params;
    FlAstParam param;
    FlNameVec *names;
    FlStrVec *strs;
}

%token END 0 "end of file"
%token <name> NAME "name"
%token <ival> INT "integer"
%token <fval> FLOAT "float"
%token <str> STRING "string"
%token NEWLINE "newline" INDENT "indent" DEDENT "unindent" INVALID "invalid character"
%token DEF "'def'" RETURN "'return'" IF "'if'" ELIF "'elif'" ELSE "'else'" FOR "'for'"
%token WHILE "'while'" BREAK "'break'" CONTINUE "'continue'" PASS "'pass'" IMPORT "'import'"
%token FROM "'from'" AS "'as'" WITH "'with'" IN "'in'" NOT "'not'" AND "'and'" OR "'or'"
%token IS "'is'" TRUE "'True'" FALSE "'False'" NONE "'None'" LAMBDA "'lambda'" GO "'go'"
%token PARALLEL_FOR "'parallel_for'" SELECT "'select'"
%token CLASS "'class'" ASSERT "'assert'" RAISE "'raise'" GLOBAL "'global'" NONLOCAL "'nonlocal'"
%token TRY "'try'" EXCEPT "'except'" FINALLY "'finally'"
%token POW "'**'" DSLASH "'//'" EQ "'=='" NE "'!='" LE "'<='" GE "'>='" ARROW "'->'"
%token <op> AUGASSIGN "augmented assignment"

%left '+' '-'
%left '*' '/' '%' '@' DSLASH
%precedence UMINUS
%right POW

%type <vec> stmts stmt recover simple_stmts small_list block else_part else_opt cases
%type <vec> exprs target_items subscript_items dict_items import_list assign_lhs comp_clauses
%type <node> small_stmt compound if_stmt for_stmt while_stmt def_stmt with_stmt go_stmt pfor_stmt
%type <node> select_stmt case_clause from_stmt class_stmt star_expr decorated try_stmt
%type <vec> decorators
%type <node> testlist expr expr_opt or_test and_test not_test comparison cmp_chain arith primary
%type <strs> strings
%type <node> atom subscripts subscript target_list lambdef
%type <op> cmp_op
%type <args> args
%type <arg> arg
%type <params> params params_opt
%type <param> param
%type <names> dotted from_names name_list

%%

module:
    %empty
  | module stmt                 { p->top = nv_cat(p, p->top, $2); }
  ;

stmts:
    stmt                        { $$ = nv_cat(p, nv_new(p), $1); }
  | stmts stmt                  { $$ = nv_cat(p, $1, $2); }
  ;

stmt:
    simple_stmts NEWLINE        { $$ = $1; }
  | compound                    { $$ = nv_push(p, nv_new(p), $1); }
  | recover                     { $$ = NULL; }
  ;

/* Resynchronise at the end of the line; a block indented under the bad line is parsed too. */
recover:
    error NEWLINE                       { $$ = NULL; yyerrok; }
  | error NEWLINE INDENT stmts DEDENT   { $$ = NULL; yyerrok; }
  ;

simple_stmts:
    small_list
  | small_list ';'
  ;

small_list:
    small_stmt                  { $$ = nv_push(p, nv_new(p), $1); }
  | IMPORT import_list          { $$ = $2; }
  | small_list ';' small_stmt   { $$ = nv_push(p, $1, $3); }
  | small_list ';' IMPORT import_list { $$ = nv_cat(p, $1, $4); }
  ;

small_stmt:
    testlist                    { $$ = expr_stmt(p, $1, @$); }
  | assign_lhs testlist         { $$ = assign(p, $1, $2, @$); }
  | testlist AUGASSIGN testlist { $$ = augassign(p, $2, $1, $3, @$); }
  | PASS                        { $$ = leaf(p, FL_AST_PASS, @$); }
  | BREAK                       { $$ = leaf(p, FL_AST_BREAK, @$); }
  | CONTINUE                    { $$ = leaf(p, FL_AST_CONTINUE, @$); }
  | RETURN                      { $$ = ret(p, NULL, @$); }
  | RETURN testlist             { $$ = ret(p, $2, @$); }
  | from_stmt
  | ASSERT expr                 { $$ = assert_stmt(p, $2, NULL, @$); }
  | ASSERT expr ',' expr        { $$ = assert_stmt(p, $2, $4, @$); }
  | RAISE                       { $$ = raise_stmt(p, NULL, @$); }
  | RAISE expr                  { $$ = raise_stmt(p, $2, @$); }
  | GLOBAL name_list            { $$ = decl_stmt(p, $2, false, @$); }
  | NONLOCAL name_list          { $$ = decl_stmt(p, $2, true, @$); }
  ;

name_list:
    NAME                        { $$ = names_push(p, NULL, $1, NULL, @1); }
  | name_list ',' NAME          { $$ = names_push(p, $1, $3, NULL, @3); }
  ;

/* The targets of `a = b = v`, left to right. */
assign_lhs:
    testlist '='                { $$ = nv_push(p, nv_new(p), $1); }
  | assign_lhs testlist '='     { $$ = nv_push(p, $1, $2); }
  ;

import_list:
    dotted                      { $$ = imports(p, nv_new(p), $1, NULL, @$); }
  | dotted AS NAME              { $$ = imports(p, nv_new(p), $1, $3, @$); }
  | import_list ',' dotted      { $$ = imports(p, $1, $3, NULL, @3); }
  | import_list ',' dotted AS NAME { $$ = imports(p, $1, $3, $5, join(@3, @5)); }
  ;

dotted:
    NAME                        { $$ = names_push(p, NULL, $1, NULL, @1); }
  | dotted '.' NAME             { $$ = names_push(p, $1, $3, NULL, @3); }
  ;

from_stmt:
    FROM dotted IMPORT from_names                 { $$ = from_import(p, $2, $4, @$); }
  | FROM dotted IMPORT '*'                        { $$ = from_import(p, $2, NULL, @$); }
  | FROM dotted IMPORT '(' from_names ')'         { $$ = from_import(p, $2, $5, @$); }
  | FROM dotted IMPORT '(' from_names ',' ')'     { $$ = from_import(p, $2, $5, @$); }
  ;

from_names:
    NAME                        { $$ = names_push(p, NULL, $1, NULL, @1); }
  | NAME AS NAME                { $$ = names_push(p, NULL, $1, $3, @$); }
  | from_names ',' NAME         { $$ = names_push(p, $1, $3, NULL, @3); }
  | from_names ',' NAME AS NAME { $$ = names_push(p, $1, $3, $5, join(@3, @5)); }
  ;

compound:
    if_stmt | for_stmt | while_stmt | def_stmt | with_stmt | go_stmt | pfor_stmt | select_stmt
  | class_stmt | decorated | try_stmt
  ;

/* @d1 @d2 def f: f = d1(d2(f)); the decorators are evaluated first, top to bottom */
decorated:
    decorators def_stmt         { $$ = decorated(p, $1, $2); }
  | decorators class_stmt       { $$ = decorated(p, $1, $2); }
  ;

decorators:
    '@' expr NEWLINE            { $$ = nv_push(p, nv_new(p), $2); }
  | decorators '@' expr NEWLINE { $$ = nv_push(p, $1, $3); }
  ;

block:
    NEWLINE INDENT stmts DEDENT { $$ = $3; }
  | simple_stmts NEWLINE        { $$ = $1; }
  ;

if_stmt:
    IF expr ':' block else_part { $$ = if_stmt(p, $2, $4, $5, join(@1, @3)); }
  ;

else_part:
    %empty                      { $$ = NULL; }
  | ELIF expr ':' block else_part { $$ = nv_push(p, nv_new(p), if_stmt(p, $2, $4, $5, join(@1, @3))); }
  | ELSE ':' block              { $$ = $3; }
  ;

else_opt:
    %empty                      { $$ = NULL; }
  | ELSE ':' block              { $$ = $3; }
  ;

for_stmt:
    FOR target_list IN testlist ':' block else_opt { $$ = loop(p, FL_AST_FOR, $2, $4, $6, $7, join(@1, @5)); }
  ;

while_stmt:
    WHILE expr ':' block else_opt { $$ = loop(p, FL_AST_WHILE, NULL, $2, $4, $5, join(@1, @3)); }
  ;

pfor_stmt:
    PARALLEL_FOR NAME IN expr ':' block { $$ = loop(p, FL_AST_PARALLEL_FOR, name(p, $2, @2), $4, $6, NULL, join(@1, @5)); }
  ;

/* try with one except clause (docs/driver.md, "Data": a reader's EOFException); loop.body is the
 * try body, loop.iter the exception (NULL: a bare except), loop.target the `as` name, loop.else_body
 * the handler. */
try_stmt:
    TRY ':' block EXCEPT ':' block { $$ = loop(p, FL_AST_TRY, NULL, NULL, $3, $6, join(@1, @2)); }
  | TRY ':' block EXCEPT expr ':' block { $$ = loop(p, FL_AST_TRY, NULL, $5, $3, $7, join(@1, @2)); }
  | TRY ':' block EXCEPT expr AS NAME ':' block { $$ = loop(p, FL_AST_TRY, name(p, $7, @7), $5, $3, $9, join(@1, @2)); }
  ;

def_stmt:
    DEF NAME '(' params_opt ')' ':' block { $$ = def(p, $2, $4, $7, join(@1, @6)); }
  ;

/* Single inheritance: at most one base. */
class_stmt:
    CLASS NAME ':' block        { $$ = class_stmt(p, $2, NULL, $4, join(@1, @3)); }
  | CLASS NAME '(' ')' ':' block { $$ = class_stmt(p, $2, NULL, $6, join(@1, @5)); }
  | CLASS NAME '(' expr ')' ':' block { $$ = class_stmt(p, $2, $4, $7, join(@1, @6)); }
  ;

params_opt:
    %empty                      { $$ = NULL; }
  | params
  | params ','
  ;

params:
    param                       { $$ = pv_push(p, NULL, $1); }
  | params ',' param            { $$ = pv_push(p, $1, $3); }
  ;

param:
    NAME                        { $$ = param(p, $1, 0, NULL, @$); }
  | NAME '=' expr               { $$ = param(p, $1, 0, $3, @$); }
  | '*' NAME                    { $$ = param(p, $2, 1, NULL, @$); }
  | POW NAME                    { $$ = param(p, $2, 2, NULL, @$); }
  ;

with_stmt:
    WITH expr ':' block         { $$ = with(p, FL_AST_WITH, $2, NULL, $4, join(@1, @3)); }
  | WITH expr AS NAME ':' block { $$ = with(p, FL_AST_WITH, $2, $4, $6, join(@1, @5)); }
  ;

go_stmt:
    GO ':' block                { $$ = with(p, FL_AST_GO, NULL, NULL, $3, join(@1, @2)); }
  ;

select_stmt:
    SELECT ':' NEWLINE INDENT cases DEDENT { $$ = select_stmt(p, $5, join(@1, @2)); }
  ;

cases:
    case_clause                 { $$ = nv_push(p, nv_new(p), $1); }
  | cases case_clause           { $$ = nv_push(p, $1, $2); }
  ;

/* `case` and `default` are names, not keywords: the clause starts with any name and the
 * builder checks which. */
case_clause:
    NAME ':' block              { $$ = case_clause(p, $1, @1, NULL, NULL, $3, join(@1, @2)); }
  | NAME expr ':' block         { $$ = case_clause(p, $1, @1, NULL, $2, $4, join(@1, @3)); }
  | NAME target_list '=' expr ':' block { $$ = case_clause(p, $1, @1, $2, $4, $6, join(@1, @5)); }
  | recover                     { $$ = NULL; }
  ;

/* Targets of for and case: primaries (names, attributes, subscripts, parenthesised tuples). */
target_list:
    target_items                { $$ = one_or_tuple(p, $1, @$); }
  ;

target_items:
    primary                     { $$ = nv_push(p, nv_new(p), $1); }
  | '*' primary                 { $$ = nv_push(p, nv_new(p), starred(p, $2, @$)); }
  | target_items ',' primary    { $$ = nv_push(p, $1, $3); }
  | target_items ',' '*' primary { $$ = nv_push(p, $1, starred(p, $4, join(@3, @4))); }
  ;

testlist:
    exprs                       { $$ = one_or_tuple(p, $1, @$); }
  | exprs ','                   { $$ = seq(p, FL_AST_TUPLE, $1, @$); }
  ;

/* A display's or a target's items; `*e` splices a sequence into a display and takes the rest
 * in a target (`a, *b = xs`). */
exprs:
    expr                        { $$ = nv_push(p, nv_new(p), $1); }
  | star_expr                   { $$ = nv_push(p, nv_new(p), $1); }
  | exprs ',' expr              { $$ = nv_push(p, $1, $3); }
  | exprs ',' star_expr         { $$ = nv_push(p, $1, $3); }
  ;

star_expr:
    '*' arith                   { $$ = starred(p, $2, @$); }
  ;

expr:
    or_test
  | or_test IF or_test ELSE expr { $$ = cond_expr(p, $1, $3, $5, @$); }
  | lambdef
  ;

lambdef:
    LAMBDA params_opt ':' expr  { $$ = lambda(p, $2, $4, @$); }
  ;

or_test:
    and_test
  | or_test OR and_test         { $$ = binop(p, FL_AST_OR, 0, $1, $3, @$); }
  ;

and_test:
    not_test
  | and_test AND not_test       { $$ = binop(p, FL_AST_AND, 0, $1, $3, @$); }
  ;

not_test:
    NOT not_test                { $$ = unop(p, FL_UN_NOT, $2, @$); }
  | comparison
  ;

comparison:
    arith
  | cmp_chain
  ;

cmp_chain:
    arith cmp_op arith          { $$ = binop(p, FL_AST_COMPARE, $2, $1, $3, @$); }
  | cmp_chain cmp_op arith      { $$ = chained(p, $1, $2, $3, @$); }
  ;

cmp_op:
    '<'                         { $$ = FL_CMP_LT; }
  | '>'                         { $$ = FL_CMP_GT; }
  | EQ                          { $$ = FL_CMP_EQ; }
  | NE                          { $$ = FL_CMP_NE; }
  | LE                          { $$ = FL_CMP_LE; }
  | GE                          { $$ = FL_CMP_GE; }
  | IN                          { $$ = FL_CMP_IN; }
  | NOT IN                      { $$ = FL_CMP_NOT_IN; }
  | IS                          { $$ = FL_CMP_IS; }
  | IS NOT                      { $$ = FL_CMP_IS_NOT; }
  ;

arith:
    arith '+' arith             { $$ = binop(p, FL_AST_BINOP, FL_OP_ADD, $1, $3, @$); }
  | arith '-' arith             { $$ = binop(p, FL_AST_BINOP, FL_OP_SUB, $1, $3, @$); }
  | arith '*' arith             { $$ = binop(p, FL_AST_BINOP, FL_OP_MUL, $1, $3, @$); }
  | arith '/' arith             { $$ = binop(p, FL_AST_BINOP, FL_OP_DIV, $1, $3, @$); }
  | arith DSLASH arith          { $$ = binop(p, FL_AST_BINOP, FL_OP_FLOORDIV, $1, $3, @$); }
  | arith '%' arith             { $$ = binop(p, FL_AST_BINOP, FL_OP_MOD, $1, $3, @$); }
  | arith '@' arith             { $$ = binop(p, FL_AST_BINOP, FL_OP_MATMUL, $1, $3, @$); }
  | arith POW arith             { $$ = binop(p, FL_AST_BINOP, FL_OP_POW, $1, $3, @$); }
  | '-' arith %prec UMINUS      { $$ = unop(p, FL_UN_NEG, $2, @$); }
  | '+' arith %prec UMINUS      { $$ = unop(p, FL_UN_POS, $2, @$); }
  | primary
  ;

primary:
    atom
  | primary '.' NAME            { $$ = attr(p, $1, $3, @3, @$); }
  | primary '(' ')'             { $$ = call(p, $1, NULL, @$); }
  | primary '(' args ')'        { $$ = call(p, $1, $3, @$); }
  | primary '(' args ',' ')'    { $$ = call(p, $1, $3, @$); }
  | primary '(' expr comp_clauses ')' { $$ = call(p, $1, av_push(p, NULL, arg(p, NULL, 0, comp(p, FL_AST_LISTCOMP, $3, NULL, $4, join(@3, @4)), join(@3, @4))), @$); }
  | primary '[' subscripts ']'  { $$ = subscript(p, $1, $3, @$); }
  | primary '(' error ')'       { $$ = bad(p, @$); }
  | primary '[' error ']'       { $$ = bad(p, @$); }
  ;

args:
    arg                         { $$ = av_push(p, NULL, $1); }
  | args ',' arg                { $$ = av_push(p, $1, $3); }
  ;

arg:
    expr                        { $$ = arg(p, NULL, 0, $1, @$); }
  | NAME '=' expr               { $$ = arg(p, $1, 0, $3, @$); }
  | '*' expr                    { $$ = arg(p, NULL, 1, $2, @$); }
  | POW expr                    { $$ = arg(p, NULL, 2, $2, @$); }
  ;

subscripts:
    subscript_items             { $$ = one_or_tuple(p, $1, @$); }
  | subscript_items ','         { $$ = seq(p, FL_AST_TUPLE, $1, @$); }
  ;

subscript_items:
    subscript                   { $$ = nv_push(p, nv_new(p), $1); }
  | subscript_items ',' subscript { $$ = nv_push(p, $1, $3); }
  ;

subscript:
    expr
  | expr_opt ':' expr_opt       { $$ = slice(p, $1, $3, NULL, @$); }
  | expr_opt ':' expr_opt ':' expr_opt { $$ = slice(p, $1, $3, $5, @$); }
  ;

expr_opt:
    %empty                      { $$ = NULL; }
  | expr
  ;

atom:
    NAME                        { $$ = name(p, $1, @$); }
  | INT                         { $$ = int_lit(p, $1, @$); }
  | FLOAT                       { $$ = float_lit(p, $1, @$); }
  | strings                     { $$ = str_lit(p, $1, @$); }
  | TRUE                        { $$ = leaf(p, FL_AST_TRUE, @$); }
  | FALSE                       { $$ = leaf(p, FL_AST_FALSE, @$); }
  | NONE                        { $$ = leaf(p, FL_AST_NONE, @$); }
  | '(' ')'                     { $$ = seq(p, FL_AST_TUPLE, NULL, @$); }
  | '(' exprs ')'               { $$ = $2->len == 1 ? $2->data[0] : seq(p, FL_AST_TUPLE, $2, @$); }
  | '(' exprs ',' ')'           { $$ = seq(p, FL_AST_TUPLE, $2, @$); }
  | '[' ']'                     { $$ = seq(p, FL_AST_LIST, NULL, @$); }
  | '[' exprs ']'               { $$ = seq(p, FL_AST_LIST, $2, @$); }
  | '[' exprs ',' ']'           { $$ = seq(p, FL_AST_LIST, $2, @$); }
  | '[' expr comp_clauses ']'   { $$ = comp(p, FL_AST_LISTCOMP, $2, NULL, $3, @$); }
  | '(' expr comp_clauses ')'   { $$ = comp(p, FL_AST_LISTCOMP, $2, NULL, $3, @$); } /* a generator: made at once */
  | '{' '}'                     { $$ = dict(p, NULL, @$); }
  | '{' exprs '}'               { $$ = seq(p, FL_AST_LIST, $2, @$); $$->list.set = true; }
  | '{' exprs ',' '}'           { $$ = seq(p, FL_AST_LIST, $2, @$); $$->list.set = true; }
  | '{' dict_items '}'          { $$ = dict(p, $2, @$); }
  | '{' dict_items ',' '}'      { $$ = dict(p, $2, @$); }
  | '{' expr ':' expr comp_clauses '}' { $$ = comp(p, FL_AST_DICTCOMP, $2, $4, $5, @$); }
  | '(' error ')'               { $$ = bad(p, @$); }
  | '[' error ']'               { $$ = bad(p, @$); }
  | '{' error '}'               { $$ = bad(p, @$); }
  ;

strings:
    STRING                      { $$ = sv_push(p, NULL, $1); }
  | strings STRING              { $$ = sv_push(p, $1, $2); }
  ;

/* The clauses of a comprehension, as Python's: a 'for', then any mix of 'for' and 'if'. The
 * iterables and conditions are or_tests (a conditional expression there needs parentheses). */
comp_clauses:
    FOR target_list IN or_test  { $$ = nv_push(p, nv_new(p), comp_for(p, $2, $4, @$)); }
  | comp_clauses FOR target_list IN or_test { $$ = nv_push(p, $1, comp_for(p, $3, $5, join(@2, @5))); }
  | comp_clauses IF or_test     { $$ = nv_push(p, $1, comp_if(p, $3, join(@2, @3))); }
  ;

dict_items:
    expr ':' expr               { $$ = nv_push(p, nv_push(p, nv_new(p), $1), $3); }
  | dict_items ',' expr ':' expr { $$ = nv_push(p, nv_push(p, $1, $3), $5); }
  ;

%%

/* ---- growable arrays in the arena ---- */

static void *agrow(FlParser *p, void *data, size_t *cap, size_t len, size_t elem) {
    if (len < *cap) return data;
    size_t c = *cap ? fl_mul_size(*cap, 2) : 4;
    void *d = fl_arena_alloc(p->arena, fl_mul_size(c, elem));
    if (len) memcpy(d, data, len * elem);
    *cap = c;
    return d;
}

static FlNodeVec *nv_new(FlParser *p) { return fl_arena_alloc(p->arena, sizeof(FlNodeVec)); }

/* Appends n (a NULL left by error recovery is skipped). */
static FlNodeVec *nv_push(FlParser *p, FlNodeVec *v, FlAst *n) {
    if (!v) v = nv_new(p);
    if (!n) return v;
    v->data = agrow(p, v->data, &v->cap, v->len, sizeof *v->data);
    v->data[v->len++] = n;
    return v;
}

static FlNodeVec *nv_cat(FlParser *p, FlNodeVec *v, FlNodeVec *w) {
    if (!v) v = nv_new(p);
    for (size_t i = 0; w && i < w->len; i++) nv_push(p, v, w->data[i]);
    return v;
}

static FlAstList list_of(const FlNodeVec *v) {
    FlAstList l = {v ? v->data : NULL, v ? v->len : 0};
    return l;
}

static FlArgVec *av_push(FlParser *p, FlArgVec *v, FlAstArg a) {
    if (!v) v = fl_arena_alloc(p->arena, sizeof *v);
    v->data = agrow(p, v->data, &v->cap, v->len, sizeof *v->data);
    v->data[v->len++] = a;
    return v;
}

static FlParamVec *pv_push(FlParser *p, FlParamVec *v, FlAstParam a) {
    if (!v) v = fl_arena_alloc(p->arena, sizeof *v);
    v->data = agrow(p, v->data, &v->cap, v->len, sizeof *v->data);
    v->data[v->len++] = a;
    return v;
}

static FlStrVec *sv_push(FlParser *p, FlStrVec *v, FlStrLit s) {
    if (!v) v = fl_arena_alloc(p->arena, sizeof *v);
    v->data = agrow(p, v->data, &v->cap, v->len, sizeof *v->data);
    v->data[v->len++] = s;
    return v;
}

static FlNameVec *names_push(FlParser *p, FlNameVec *v, const char *name, const char *alias, FlLoc loc) {
    if (!v) v = fl_arena_alloc(p->arena, sizeof *v);
    v->data = agrow(p, v->data, &v->cap, v->len, sizeof *v->data);
    FlImportName n = {name, alias, fl_loc_span(p, loc)};
    v->data[v->len++] = n;
    return v;
}

/* ---- nodes ---- */

static FlAst *node(FlParser *p, FlAstKind k, FlLoc loc) {
    FlAst *n = fl_arena_alloc(p->arena, sizeof *n);
    n->kind = k;
    n->span = fl_loc_span(p, loc);
    n->depth = 1;
    return n;
}

static int deeper(int d, const FlAst *n) { return n && n->depth > d ? n->depth : d; }

static int vec_depth(const FlNodeVec *v) {
    int d = 0;
    for (size_t i = 0; v && i < v->len; i++) d = deeper(d, v->data[i]);
    return d;
}

/* Sets n's depth to one more than its deepest child; the first node past the limit reports. */
static FlAst *nest(FlParser *p, FlAst *n, int below) {
    n->depth = below + 1;
    if (n->depth == FL_AST_MAX_DEPTH + 1)
        fl_diag_error(p->diag, n->span, "nesting too deep (the limit is %d levels)", FL_AST_MAX_DEPTH);
    return n;
}

static FlAst *name(FlParser *p, const char *s, FlLoc loc) {
    FlAst *n = node(p, FL_AST_NAME, loc);
    n->name = s;
    return n;
}

static FlAst *int_lit(FlParser *p, int64_t v, FlLoc loc) {
    FlAst *n = node(p, FL_AST_INT, loc);
    n->ival = v;
    return n;
}

static FlAst *float_lit(FlParser *p, double v, FlLoc loc) {
    FlAst *n = node(p, FL_AST_FLOAT, loc);
    n->fval = v;
    return n;
}

/* Adjacent string literals make one string. */
static FlAst *str_lit(FlParser *p, FlStrVec *parts, FlLoc loc) {
    FlAst *n = node(p, FL_AST_STR, loc);
    if (parts->len == 1) {
        n->str = parts->data[0].s;
        n->slen = parts->data[0].n;
        return n;
    }
    size_t len = 0;
    for (size_t i = 0; i < parts->len; i++) len += parts->data[i].n;
    char *s = fl_arena_alloc(p->arena, len + 1), *q = s;
    for (size_t i = 0; i < parts->len; i++) {
        if (parts->data[i].n) memcpy(q, parts->data[i].s, parts->data[i].n);
        q += parts->data[i].n;
    }
    n->str = s;
    n->slen = len;
    return n;
}

static FlAst *leaf(FlParser *p, FlAstKind k, FlLoc loc) { return node(p, k, loc); }

/* What a bracket pair with a syntax error inside becomes: a name no program can write, so
 * that later checks (assignment targets...) stay quiet. The tree is not evaluated anyway. */
static FlAst *bad(FlParser *p, FlLoc loc) { return name(p, fl_intern_str(p->in, "<error>"), loc); }

static FlAst *attr(FlParser *p, FlAst *obj, const char *s, FlLoc name_loc, FlLoc loc) {
    FlAst *n = node(p, FL_AST_ATTR, loc);
    n->attr.obj = obj;
    n->attr.name = s;
    n->attr.name_span = fl_loc_span(p, name_loc);
    return nest(p, n, obj->depth);
}

/* Does `name` appear among the names seen so far? (records it) */
static bool repeated(FlMap *seen, const char *name) {
    size_t n = strlen(name);
    if (fl_map_find(seen, name, n)) return true;
    fl_map_put(seen, name, n, (void *)name);
    return false;
}

static FlAstArg arg(FlParser *p, const char *name, int star, FlAst *value, FlLoc loc) {
    FlAstArg a = {name, star, value, fl_loc_span(p, loc)};
    return a;
}

/* Python's order: positional and *x, then keywords (and *x), then **x (and keywords). */
static FlAst *call(FlParser *p, FlAst *fn, FlArgVec *args, FlLoc loc) {
    FlAst *n = node(p, FL_AST_CALL, loc);
    n->call.fn = fn;
    n->call.args = args ? args->data : NULL;
    n->call.nargs = args ? args->len : 0;
    int d = fn->depth;
    bool kw = false, dstar = false;
    FlMap seen;
    fl_map_init(&seen);
    for (size_t i = 0; i < n->call.nargs; i++) {
        const FlAstArg *a = &n->call.args[i];
        d = deeper(d, a->value);
        if (a->star == 2) {
            dstar = true;
        } else if (a->name) {
            kw = true;
            if (repeated(&seen, a->name))
                fl_diag_error(p->diag, a->span, "keyword argument '%s' repeated", a->name);
        } else if (a->star == 1) {
            if (dstar)
                fl_diag_error(p->diag, a->span, "'*' argument follows '**' argument");
        } else if (dstar) {
            fl_diag_error(p->diag, a->span, "positional argument follows '**' argument");
        } else if (kw) {
            fl_diag_error(p->diag, a->span, "positional argument follows keyword argument");
        }
    }
    fl_map_fini(&seen);
    return nest(p, n, d);
}

static FlAst *subscript(FlParser *p, FlAst *obj, FlAst *index, FlLoc loc) {
    FlAst *n = node(p, FL_AST_INDEX, loc);
    n->index.obj = obj;
    n->index.index = index;
    return nest(p, n, deeper(obj->depth, index));
}

static FlAst *slice(FlParser *p, FlAst *lo, FlAst *hi, FlAst *step, FlLoc loc) {
    FlAst *n = node(p, FL_AST_SLICE, loc);
    n->slice.lo = lo;
    n->slice.hi = hi;
    n->slice.step = step;
    return nest(p, n, deeper(deeper(deeper(0, lo), hi), step));
}

static FlAst *seq(FlParser *p, FlAstKind k, FlNodeVec *items, FlLoc loc) {
    FlAst *n = node(p, k, loc);
    n->list.items = list_of(items);
    return nest(p, n, vec_depth(items));
}

static FlAst *one_or_tuple(FlParser *p, FlNodeVec *items, FlLoc loc) {
    return items->len == 1 ? items->data[0] : seq(p, FL_AST_TUPLE, items, loc);
}

static FlAst *dict(FlParser *p, FlNodeVec *kv, FlLoc loc) {
    FlAst *n = node(p, FL_AST_DICT, loc);
    size_t m = kv ? kv->len / 2 : 0;
    FlAst **k = fl_arena_alloc(p->arena, fl_mul_size(m, sizeof *k));
    FlAst **v = fl_arena_alloc(p->arena, fl_mul_size(m, sizeof *v));
    for (size_t i = 0; i < m; i++) {
        k[i] = kv->data[2 * i];
        v[i] = kv->data[2 * i + 1];
    }
    n->dict.keys.items = k;
    n->dict.keys.len = m;
    n->dict.vals.items = v;
    n->dict.vals.len = m;
    return nest(p, n, vec_depth(kv));
}

static FlAst *binop(FlParser *p, FlAstKind k, int op, FlAst *l, FlAst *r, FlLoc loc) {
    FlAst *n = node(p, k, loc);
    n->binop.op = op;
    n->binop.l = l;
    n->binop.r = r;
    return nest(p, n, deeper(l->depth, r));
}

static FlAst *unop(FlParser *p, int op, FlAst *e, FlLoc loc) {
    FlAst *n = node(p, FL_AST_UNOP, loc);
    n->unop.op = op;
    n->unop.e = e;
    return nest(p, n, e->depth);
}

/* `a < b < c`: l is the comparison (or chain) on the left; b is evaluated once. */
static FlAst *chained(FlParser *p, FlAst *l, int op, FlAst *r, FlLoc loc) {
    return binop(p, FL_AST_CMP_CHAIN, op, l, r, loc);
}

static FlAst *decorated(FlParser *p, FlNodeVec *decos, FlAst *n) {
    FlAstList *l = n->kind == FL_AST_DEF ? &n->def.decos : &n->cls.decos;
    *l = list_of(decos);
    int d = vec_depth(decos);
    return d >= n->depth ? nest(p, n, d) : n;
}

static FlAst *starred(FlParser *p, FlAst *e, FlLoc loc) {
    FlAst *n = node(p, FL_AST_STARRED, loc);
    n->unop.e = e;
    return nest(p, n, e->depth);
}

static FlAst *cond_expr(FlParser *p, FlAst *then, FlAst *test, FlAst *other, FlLoc loc) {
    FlAst *n = node(p, FL_AST_COND, loc);
    n->cond.test = test;
    n->cond.then = then;
    n->cond.other = other;
    return nest(p, n, deeper(deeper(then->depth, test), other));
}

static FlAstParam param(FlParser *p, const char *name, int star, FlAst *deflt, FlLoc loc) {
    FlAstParam a = {name, deflt, star, fl_loc_span(p, loc)};
    return a;
}

/* Python's rules: no repeated name, one *args, **kwargs last, and before *args no parameter
 * without a default after one with a default. Returns the deepest default. */
static int check_params(FlParser *p, const FlParamVec *ps) {
    bool dflt = false, star = false, dstar = false;
    int d = 0;
    FlMap seen;
    fl_map_init(&seen);
    for (size_t i = 0; ps && i < ps->len; i++) {
        const FlAstParam *a = &ps->data[i];
        d = deeper(d, a->deflt);
        if (repeated(&seen, a->name))
            fl_diag_error(p->diag, a->span, "duplicate parameter '%s'", a->name);
        else if (dstar)
            fl_diag_error(p->diag, a->span, "parameter after '**' parameter");
        else if (a->star == 1 && star)
            fl_diag_error(p->diag, a->span, "only one '*' parameter is allowed");
        else if (a->star == 0 && !a->deflt && dflt && !star)
            fl_diag_error(p->diag, a->span, "parameter without a default follows a parameter with a default");
        dflt |= a->deflt != NULL;
        star |= a->star == 1;
        dstar |= a->star == 2;
    }
    fl_map_fini(&seen);
    return d;
}

static FlAst *lambda(FlParser *p, FlParamVec *params, FlAst *body, FlLoc loc) {
    FlAst *n = node(p, FL_AST_LAMBDA, loc);
    FlAst *r = node(p, FL_AST_RETURN, loc);
    r->span = body->span;
    r->expr.e = body;
    nest(p, r, body->depth);
    FlAst **b = fl_arena_alloc(p->arena, sizeof *b);
    b[0] = r;
    n->def.name = fl_intern_str(p->in, "<lambda>");
    n->def.params = params ? params->data : NULL;
    n->def.nparams = params ? params->len : 0;
    n->def.body.items = b;
    n->def.body.len = 1;
    return nest(p, n, deeper(check_params(p, params), r));
}

static void check_target(FlParser *p, const FlAst *t, bool aug);

/* [elt for ...] and {elt: val for ...}: the targets of the 'for' clauses are checked as those
 * of a for statement. */
static FlAst *comp(FlParser *p, FlAstKind k, FlAst *elt, FlAst *val, FlNodeVec *clauses, FlLoc loc) {
    FlAst *n = node(p, k, loc);
    n->comp.elt = elt;
    n->comp.val = val;
    n->comp.clauses = list_of(clauses);
    return nest(p, n, deeper(deeper(vec_depth(clauses), elt), val));
}

static FlAst *comp_for(FlParser *p, FlAst *target, FlAst *iter, FlLoc loc) {
    FlAst *n = node(p, FL_AST_COMP_FOR, loc);
    check_target(p, target, false);
    n->loop.target = target;
    n->loop.iter = iter;
    return nest(p, n, deeper(target->depth, iter));
}

static FlAst *comp_if(FlParser *p, FlAst *test, FlLoc loc) {
    FlAst *n = node(p, FL_AST_COMP_IF, loc);
    n->cond.test = test;
    return nest(p, n, test->depth);
}

/* ---- statements ---- */

static FlAst *expr_stmt(FlParser *p, FlAst *e, FlLoc loc) {
    FlAst *n = node(p, FL_AST_EXPR_STMT, loc);
    n->expr.e = e;
    return nest(p, n, e->depth);
}

/* Names, attributes and subscripts, and (except in augmented assignment) tuples and lists of
 * targets. */
static void check_target(FlParser *p, const FlAst *t, bool aug) {
    FlAstKind k = t->kind;
    if (k == FL_AST_NAME || k == FL_AST_ATTR || k == FL_AST_INDEX) return;
    if ((k == FL_AST_TUPLE || k == FL_AST_LIST) && !aug) {
        int stars = 0;
        for (size_t i = 0; i < t->list.items.len; i++) {
            const FlAst *x = t->list.items.items[i];
            if (x->kind == FL_AST_STARRED && ++stars == 2)
                fl_diag_error(p->diag, x->span, "multiple starred expressions in an assignment");
            check_target(p, x->kind == FL_AST_STARRED ? x->unop.e : x, false);
        }
        return;
    }
    if (k == FL_AST_STARRED) {
        fl_diag_error(p->diag, t->span, "a starred assignment target must be in a list or tuple");
        return;
    }
    const char *what = k == FL_AST_TUPLE || k == FL_AST_LIST ? NULL
                       : k == FL_AST_INT || k == FL_AST_FLOAT || k == FL_AST_STR ? "a literal"
                       : k == FL_AST_TRUE ? "'True'"
                       : k == FL_AST_FALSE ? "'False'"
                       : k == FL_AST_NONE ? "'None'"
                       : k == FL_AST_CALL ? "a function call"
                       : k == FL_AST_DICT ? "a dict display"
                                          : "an expression";
    if (what)
        fl_diag_error(p->diag, t->span, "cannot assign to %s", what);
    else
        fl_diag_error(p->diag, t->span, "a %s cannot be the target of an augmented assignment",
                      k == FL_AST_TUPLE ? "tuple" : "list");
}

/* targets: those of `a = b = v`, left to right (one for a plain assignment). */
static FlAst *assign(FlParser *p, FlNodeVec *targets, FlAst *value, FlLoc loc) {
    FlAst *n = node(p, FL_AST_ASSIGN, loc);
    for (size_t i = 0; i < targets->len; i++) check_target(p, targets->data[i], false);
    n->assign.target = targets->data[0];
    n->assign.more.items = targets->data + 1;
    n->assign.more.len = targets->len - 1;
    n->assign.value = value;
    return nest(p, n, deeper(vec_depth(targets), value));
}

static FlAst *augassign(FlParser *p, int op, FlAst *target, FlAst *value, FlLoc loc) {
    FlAst *n = node(p, FL_AST_AUGASSIGN, loc);
    check_target(p, target, true);
    n->assign.op = op;
    n->assign.target = target;
    n->assign.value = value;
    return nest(p, n, deeper(target->depth, value));
}

static FlAst *ret(FlParser *p, FlAst *e, FlLoc loc) {
    FlAst *n = node(p, FL_AST_RETURN, loc);
    n->expr.e = e;
    return nest(p, n, deeper(0, e));
}

/* "a.b.c" from the parts of a dotted name, interned. */
static const char *dotted_name(FlParser *p, const FlNameVec *d) {
    FlBuf b = {0};
    for (size_t i = 0; i < d->len; i++) {
        if (i) fl_buf_putc(&b, '.');
        fl_buf_puts(&b, d->data[i].name);
    }
    const char *s = fl_intern(p->in, fl_buf_str(&b), b.len);
    fl_buf_free(&b);
    return s;
}

static FlNodeVec *imports(FlParser *p, FlNodeVec *v, FlNameVec *dotted, const char *alias, FlLoc loc) {
    FlAst *n = node(p, FL_AST_IMPORT, loc);
    n->import.module = dotted_name(p, dotted);
    n->import.alias = alias;
    return nv_push(p, v, n);
}

/* names == NULL: from a import * */
static FlAst *from_import(FlParser *p, FlNameVec *dotted, FlNameVec *names, FlLoc loc) {
    FlAst *n = node(p, FL_AST_FROM_IMPORT, loc);
    size_t m = names ? names->len : 0;
    n->import.star = names == NULL;
    n->import.module = dotted_name(p, dotted);
    n->import.names = fl_arena_alloc(p->arena, fl_mul_size(m, sizeof(char *)));
    n->import.aliases = fl_arena_alloc(p->arena, fl_mul_size(m, sizeof(char *)));
    n->import.name_spans = fl_arena_alloc(p->arena, fl_mul_size(m, sizeof(FlSpan)));
    n->import.nnames = m;
    for (size_t i = 0; i < m; i++) {
        n->import.names[i] = names->data[i].name;
        n->import.aliases[i] = names->data[i].alias;
        n->import.name_spans[i] = names->data[i].span;
    }
    return n;
}

static FlAst *def(FlParser *p, const char *s, FlParamVec *params, FlNodeVec *body, FlLoc loc) {
    FlAst *n = node(p, FL_AST_DEF, loc);
    n->def.name = s;
    n->def.params = params ? params->data : NULL;
    n->def.nparams = params ? params->len : 0;
    n->def.body = list_of(body);
    int d = check_params(p, params), b = vec_depth(body);
    return nest(p, n, d > b ? d : b);
}

static FlAst *class_stmt(FlParser *p, const char *s, FlAst *base, FlNodeVec *body, FlLoc loc) {
    FlAst *n = node(p, FL_AST_CLASS, loc);
    n->cls.name = s;
    n->cls.base = base;
    n->cls.body = list_of(body);
    return nest(p, n, deeper(vec_depth(body), base));
}

static FlAst *assert_stmt(FlParser *p, FlAst *test, FlAst *msg, FlLoc loc) {
    FlAst *n = node(p, FL_AST_ASSERT, loc);
    n->cond.test = test;
    n->cond.then = msg;
    return nest(p, n, deeper(test->depth, msg));
}

static FlAst *raise_stmt(FlParser *p, FlAst *e, FlLoc loc) {
    FlAst *n = node(p, FL_AST_RAISE, loc);
    n->expr.e = e;
    return nest(p, n, deeper(0, e));
}

static FlAst *decl_stmt(FlParser *p, FlNameVec *names, bool nonlocal, FlLoc loc) {
    FlAst *n = node(p, FL_AST_GLOBAL, loc);
    n->decl.nonlocal = nonlocal;
    n->decl.nnames = names->len;
    n->decl.names = fl_arena_alloc(p->arena, fl_mul_size(names->len, sizeof(char *)));
    n->decl.name_spans = fl_arena_alloc(p->arena, fl_mul_size(names->len, sizeof(FlSpan)));
    for (size_t i = 0; i < names->len; i++) {
        n->decl.names[i] = names->data[i].name;
        n->decl.name_spans[i] = names->data[i].span;
    }
    return n;
}

static FlAst *if_stmt(FlParser *p, FlAst *test, FlNodeVec *then, FlNodeVec *other, FlLoc loc) {
    FlAst *n = node(p, FL_AST_IF, loc);
    n->cond.test = test;
    n->cond.then_body = list_of(then);
    n->cond.else_body = list_of(other);
    int d = deeper(vec_depth(then), test), e = vec_depth(other);
    return nest(p, n, d > e ? d : e);
}

static FlAst *loop(FlParser *p, FlAstKind k, FlAst *target, FlAst *iter, FlNodeVec *body, FlNodeVec *other,
                   FlLoc loc) {
    FlAst *n = node(p, k, loc);
    if (target && k == FL_AST_FOR) check_target(p, target, false);
    n->loop.target = target;
    n->loop.iter = iter;
    n->loop.body = list_of(body);
    n->loop.else_body = list_of(other);
    int d = deeper(deeper(vec_depth(body), target), iter), e = vec_depth(other);
    return nest(p, n, d > e ? d : e);
}

static FlAst *with(FlParser *p, FlAstKind k, FlAst *e, const char *as, FlNodeVec *body, FlLoc loc) {
    FlAst *n = node(p, k, loc);
    n->with.expr = e;
    n->with.as_name = as;
    n->with.body = list_of(body);
    return nest(p, n, deeper(vec_depth(body), e));
}

static FlAst *select_stmt(FlParser *p, FlNodeVec *cases, FlLoc loc) {
    FlAst *n = node(p, FL_AST_SELECT, loc);
    n->select.cases = list_of(cases);
    return nest(p, n, vec_depth(cases));
}

/* The channel operation of a case: "recv" or "send" for CH.recv(...) / CH.send(...), else NULL. */
static const char *chan_op(const FlAst *op) {
    if (op->kind != FL_AST_CALL || op->call.fn->kind != FL_AST_ATTR) return NULL;
    const char *m = op->call.fn->attr.name;
    return strcmp(m, "recv") == 0 ? "recv" : strcmp(m, "send") == 0 ? "send" : NULL;
}

static FlAst *case_clause(FlParser *p, const char *kw, FlLoc kwl, FlAst *target, FlAst *op, FlNodeVec *body,
                          FlLoc loc) {
    FlAst *n = node(p, FL_AST_CASE, loc);
    bool is_case = strcmp(kw, "case") == 0, is_default = strcmp(kw, "default") == 0;
    if (!is_case && !is_default) {
        fl_diag_error(p->diag, fl_loc_span(p, kwl), "expected 'case' or 'default' in a select body, found '%s'", kw);
    } else if (is_default && (target || op)) {
        fl_diag_error(p->diag, (target ? target : op)->span, "expected ':' after 'default'");
    } else if (is_case && !op) {
        fl_diag_error(p->diag, fl_span(p->file, kwl.end, kwl.end),
                      "expected a channel operation after 'case': 'CH.recv()' or 'CH.send(X)'");
    } else if (is_case && !chan_op(op)) {
        fl_diag_error(p->diag, op->span, "a select case must be a channel operation: 'CH.recv()' or 'CH.send(X)'");
    } else if (target && strcmp(chan_op(op), "send") == 0) {
        fl_diag_error(p->diag, target->span, "only a 'recv()' case can assign its result");
    } else if (target) {
        check_target(p, target, false);
    }
    n->case_.target = target;
    n->case_.op = op;
    n->case_.body = list_of(body);
    return nest(p, n, deeper(deeper(vec_depth(body), target), op));
}

/* ---- syntax errors ---- */

static bool is(const char *sym, const char *const *set) {
    for (; *set; set++)
        if (strcmp(sym, *set) == 0) return true;
    return false;
}

static const char *const expr_start[] = {"name", "integer", "float", "string", "'('", "'['", "'{'", "'-'",
                                         "'+'", "'not'", "'lambda'", "'True'", "'False'", "'None'", NULL};
static const char *const stmt_start[] = {"'def'", "'if'", "'for'", "'while'", "'with'", "'go'",
                                         "'parallel_for'", "'select'", "'return'", "'pass'", "'break'",
                                         "'continue'", "'import'", "'from'", "'class'", "'assert'", "'raise'",
                                         "'global'", "'nonlocal'", "'@'", "'try'", NULL};
/* Tokens that continue an expression: when many are possible, they say little. */
static const char *const binary_op[] = {"'*'", "'/'", "'%'", "'@'", "'//'", "'**'", "'<'", "'>'", "'=='",
                                        "'!='", "'<='", "'>='", NULL};
static const char *const continuation[] = {"'+'", "'-'", "'*'", "'/'", "'%'", "'@'", "'//'", "'**'", "'<'",
                                           "'>'", "'=='", "'!='", "'<='", "'>='", "'in'", "'not'", "'is'",
                                           "'and'", "'or'", "'if'", "'for'", "'.'", "'('", "'['", "'='",
                                           "augmented assignment", NULL};
static const char *const noise[] = {"error", "invalid character", "invalid token", "$undefined", NULL};

/* How a token of kind `sym` found at `loc` reads in a message. */
static const char *describe(FlParser *p, const char *sym, FlLoc loc) {
    if (!strcmp(sym, "name") || !strcmp(sym, "integer") || !strcmp(sym, "float") || !strcmp(sym, "string") ||
        !strcmp(sym, "augmented assignment"))
        return fl_scan_quote(p, loc);
    if (sym[0] == '\'' && ((sym[1] >= 'a' && sym[1] <= 'z') || (sym[1] >= 'A' && sym[1] <= 'Z')))
        return fl_arena_printf(p->arena, "keyword %s", sym);
    return sym;
}

/* "expected X, Y or Z" from the expected tokens, or NULL when they are too many to help. */
static const char *expected(FlParser *p, const char **exp, int n) {
    const char *out[8];
    int nout = 0, nops = 0;
    bool newline = false, stmt = false, expr = false, name = false, colon = false;
    for (int i = 0; i < n; i++) {
        nops += is(exp[i], binary_op);
        newline |= !strcmp(exp[i], "newline");
        stmt |= !strcmp(exp[i], "'def'");
        expr |= !strcmp(exp[i], "integer");
        name |= !strcmp(exp[i], "name");
        colon |= !strcmp(exp[i], "':'");
    }
    if (stmt) out[nout++] = "a statement";
    else if (expr) out[nout++] = "an expression";
    for (int i = 0; i < n && nout < 8; i++) {
        const char *s = exp[i];
        if (is(s, noise) || (stmt && (is(s, stmt_start) || is(s, expr_start))) || (expr && is(s, expr_start)) ||
            (nops >= 3 && is(s, continuation)) || (newline && (!strcmp(s, "';'") || !strcmp(s, "','"))) || (colon && !strcmp(s, "','")) ||
            (stmt && !strcmp(s, "end of file")) ||
            ((expr || name) && (!strcmp(s, "'*'") || !strcmp(s, "'**'"))))
            continue;
        out[nout++] = !strcmp(s, "name") ? "a name" : !strcmp(s, "integer") ? "an integer"
                    : !strcmp(s, "string") ? "a string" : !strcmp(s, "indent") ? "an indented block" : s;
    }
    if (nout == 0 || nout > 4) return NULL;
    FlBuf b = {0};
    for (int i = 0; i < nout; i++) {
        if (i) fl_buf_puts(&b, i == nout - 1 ? " or " : ", ");
        fl_buf_puts(&b, out[i]);
    }
    const char *s = fl_arena_strdup(p->arena, fl_buf_str(&b));
    fl_buf_free(&b);
    return s;
}

static bool is_clause_word(const char *s) { return s && (!strcmp(s, "case") || !strcmp(s, "default")); }

static int yyreport_syntax_error(const yypcontext_t *ctx, FlParser *p) {
    yysymbol_kind_t la = yypcontext_token(ctx);
    FlLoc loc = *yypcontext_location(ctx);
    if (p->fatal || la == YYSYMBOL_INVALID || (p->has_reported && loc.start == p->reported_start)) return 0;
    const char *sym = yysymbol_name(la);
    const char *found = describe(p, sym, loc);
    bool ordinary = la != YYSYMBOL_NEWLINE && la != YYSYMBOL_INDENT && la != YYSYMBOL_DEDENT && la != YYSYMBOL_YYEOF;
    int k = ordinary ? p->line_ntok : p->line_ntok + 1; /* the lookahead is the line's k-th token */
    bool first_is_clause = p->line_first_tok == NAME && is_clause_word(p->line_first_name);
    FlSpan at = fl_loc_span(p, loc);

    if (la == YYSYMBOL_INDENT) {
        fl_diag_error(p->diag, at, "unexpected indent");
    } else if (k == 2 && first_is_clause && !p->line_in_select) {
        fl_diag_error(p->diag, fl_loc_span(p, p->line_first_loc), "'%s' outside a select statement",
                      p->line_first_name);
    } else if (k <= 2 && p->line_in_select && !first_is_clause) {
        fl_diag_error(p->diag, fl_loc_span(p, p->line_first_loc),
                      "expected 'case' or 'default' in a select body, found %s",
                      k == 1 ? found : fl_scan_quote(p, p->line_first_loc));
    } else if (k == 1 && la == YYSYMBOL_ELSE) {
        fl_diag_error(p->diag, at, "'else' without a matching 'if', 'for' or 'while'");
    } else if (k == 1 && la == YYSYMBOL_ELIF) {
        fl_diag_error(p->diag, at, "'elif' without a matching 'if'");
    } else {
        yysymbol_kind_t kinds[YYNTOKENS];
        const char *names[YYNTOKENS];
        int n = yypcontext_expected_tokens(ctx, kinds, YYNTOKENS);
        for (int i = 0; i < n; i++) names[i] = yysymbol_name(kinds[i]);
        const char *want = expected(p, names, n < 0 ? 0 : n);
        if (want) fl_diag_error(p->diag, at, "expected %s, found %s", want, found);
        else fl_diag_error(p->diag, at, "unexpected %s", found);
    }
    return 0;
}

/* Bison calls this only when its stack is exhausted. */
static void fl_yyerror(FL_YYLTYPE *loc, FlParser *p, const char *msg) {
    if (!p->fatal)
        fl_diag_error(p->diag, fl_loc_span(p, *loc), "nesting too deep for the parser (%s)", msg);
    p->fatal = true;
}

int fl_parse(FlArena *arena, FlInterner *in, FlDiag *diag, uint32_t file, FlAstModule *out) {
    const FlSourceFile *f = fl_sources_file(diag->sources, file);
    int before = diag->nerrors;
    memset(out, 0, sizeof *out);
    out->file = file;
    if (f->len > (size_t)INT32_MAX - 16) {
        fl_diag_error_plain(diag, "%s: file too large", f->path);
        return diag->nerrors - before;
    }
    FlParser p;
    memset(&p, 0, sizeof p);
    p.arena = arena;
    p.in = in;
    p.diag = diag;
    p.file = file;
    p.text = f->text;
    p.len = f->len;
    fl_scan_begin(&p);
    int rc = fl_yyparse(&p);
    fl_scan_end(&p);
    if (rc != 0 && diag->nerrors == before)
        fl_diag_error(diag, fl_span(file, (uint32_t)f->len, (uint32_t)f->len), "invalid syntax");
    out->body = list_of(p.top);
    return diag->nerrors - before;
}
