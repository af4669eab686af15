/* parse_impl.h: what the scanner (scan.l) and the grammar (grammar.y) share; internal to lang/.
 *
 * One FlParser lives on fl_parse's stack for one parse. The flex scanner is reentrant and keeps
 * this struct as its extra data; the bison parser receives it through %parse-param. Locations
 * are byte ranges (FlLoc) in the one file being parsed; diagnostics turn them into FlSpans.
 *
 * Token flow: flex rules return ordinary tokens; indentation and end of file may produce several
 * tokens at once (DEDENT DEDENT ..., NEWLINE + DEDENTs + end), which wait in `queue` and are handed
 * out by fl_yylex before flex is asked again. fl_yylex also keeps the facts about the current
 * logical line that syntax errors use to word their message (its first token, whether it sits
 * directly in a select body).
 */
#ifndef FL_PARSE_IMPL_H
#define FL_PARSE_IMPL_H

#include "lang/ast.h"

/* Limits that turn hostile input into a diagnostic instead of a stack overflow. */
enum { FL_MAX_BRACKETS = 200, FL_MAX_INDENT = 100 };

typedef struct FlLoc {
    uint32_t start, end; /* byte offsets, end exclusive */
} FlLoc;

/* A decoded string literal (arena memory, NUL-terminated, may contain NULs). */
typedef struct FlStrLit {
    const char *s;
    size_t n;
} FlStrLit;

/* Growable arrays in the arena (growing copies; the old array stays in the arena). */
typedef struct FlNodeVec {
    FlAst **data;
    size_t len, cap;
} FlNodeVec;
typedef struct FlArgVec {
    FlAstArg *data;
    size_t len, cap;
} FlArgVec;
typedef struct FlParamVec {
    FlAstParam *data;
    size_t len, cap;
} FlParamVec;
typedef struct FlStrVec {
    FlStrLit *data;
    size_t len, cap;
} FlStrVec;
/* Names of a dotted module path or of a from-import list. */
typedef struct FlImportName {
    const char *name, *alias;
    FlSpan span;
} FlImportName;
typedef struct FlNameVec {
    FlImportName *data;
    size_t len, cap;
} FlNameVec;

typedef struct FlIndent {
    int col;
    bool real;   /* false for the level made up after an unindent error: popping it emits no DEDENT */
    bool select; /* the body of a select statement */
} FlIndent;

typedef struct FlPending {
    int tok;
    FlLoc loc;
} FlPending;

typedef struct FlBracket {
    char ch;
    FlLoc loc;
} FlBracket;

typedef struct FlParser {
    FlArena *arena;
    FlInterner *in;
    FlDiag *diag;
    uint32_t file;
    const char *text;
    size_t len;
    void *scanner; /* yyscan_t */

    uint32_t pos;      /* offset of the next byte the scanner reads */
    uint32_t last_end; /* end of the last ordinary token (where NEWLINE and end of file point) */
    FL_VEC(FlIndent) indents;
    char indent_char;   /* ' ' or '\t' after the first indented line */
    bool mixed_reported;
    FL_VEC(FlBracket) brackets;
    FL_VEC(FlPending) queue;
    size_t qhead;
    bool eof;   /* the scanner reached the end; only queued tokens and then end of file remain */
    bool fatal; /* a limit was hit: scanning stopped and further syntax errors are not reported */
    bool begun;

    /* the string literal being scanned */
    FlBuf str;
    uint32_t str_start;
    bool str_triple;

    /* the current logical line, as tokens reach the parser */
    int prev_tok;
    bool line_has_token;
    int line_ntok;
    int line_first_tok;
    const char *line_first_name; /* interned text when the first token is a name */
    FlLoc line_first_loc;
    bool line_in_select;

    /* A token the scanner already reported (a stray character...): a syntax error whose
     * lookahead starts here is not reported again. */
    bool has_reported;
    uint32_t reported_start;

    FlNodeVec *top; /* module statements, filled as they are parsed (kept on errors) */
} FlParser;

/* scan.l */
void fl_scan_begin(FlParser *p);
void fl_scan_end(FlParser *p);
/* Text of a token for messages: "'foo'", shortened, quoted. Arena memory. */
const char *fl_scan_quote(FlParser *p, FlLoc loc);

static inline FlSpan fl_loc_span(const FlParser *p, FlLoc l) { return fl_span(p->file, l.start, l.end); }

#endif
