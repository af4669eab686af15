/* ast.c: node kind names and the S-expression dump of a tree.
 *
 * The dump is for tests and debugging; its format is stable (docs/syntax.md shows it): one
 * top-level statement per line, every node a parenthesised form whose head names it
 * ((name x), (int 3), (+ l r), (call f args...), (if test (body ...) (else ...)), ...), absent
 * optional parts as '_'. The walk is recursive; trees that parsed without errors are at most
 * FL_AST_MAX_DEPTH deep. NULL children (left by error recovery) print as '_'.
 */
#include "lang/ast.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {
#define X(k, s) s,
    FL_AST_KINDS(X)
#undef X
};
_Static_assert(FL_ARRAY_LEN(kind_names) == FL_AST_COUNT, "one name per kind");

const char *fl_ast_kind_name(FlAstKind k) {
    FL_ASSERT((unsigned)k < FL_AST_COUNT);
    return kind_names[k];
}

static const char *const binop_names[] = {"+", "-", "*", "/", "//", "%", "@", "**"};
_Static_assert(FL_ARRAY_LEN(binop_names) == FL_BINOP_COUNT, "one name per operator");
static const char *const cmp_names[] = {"==", "!=", "<", "<=", ">", ">=", "in", "not-in", "is", "is-not"};
_Static_assert(FL_ARRAY_LEN(cmp_names) == FL_CMP_COUNT, "one name per comparison");
static const char *const unop_names[] = {"neg", "pos", "not"};
_Static_assert(FL_ARRAY_LEN(unop_names) == FL_UNOP_COUNT, "one name per unary operator");

static const char *op_name(const char *const *names, int n, int op) {
    return op >= 0 && op < n ? names[op] : "?";
}

static void dump(const FlAst *n, FlBuf *b);

static void dump_str(const char *s, size_t n, FlBuf *b) {
    fl_buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') fl_buf_printf(b, "\\%c", c);
        else if (c == '\n') fl_buf_puts(b, "\\n");
        else if (c == '\t') fl_buf_puts(b, "\\t");
        else if (c < 0x20 || c >= 0x7f) fl_buf_printf(b, "\\x%02x", c);
        else fl_buf_putc(b, (char)c);
    }
    fl_buf_putc(b, '"');
}

/* Like Python's repr: the fewest digits that read back as the same double, in positional
 * notation for exponents -4..15 (always with a '.'), else with an exponent. */
static void dump_float(double v, FlBuf *b) {
    char s[64];
    int p = 1;
    for (; p < 17; p++) {
        snprintf(s, sizeof s, "%.*e", p - 1, v);
        if (strtod(s, NULL) == v) break;
    }
    snprintf(s, sizeof s, "%.*e", p - 1, v);
    const char *e = strchr(s, 'e');
    int exp = e ? atoi(e + 1) : 0;
    if (e && exp >= -4 && exp < 16) snprintf(s, sizeof s, "%.*f", p - 1 - exp > 0 ? p - 1 - exp : 0, v);
    fl_buf_puts(b, s);
    if (!strpbrk(s, ".eninf")) fl_buf_puts(b, ".0");
}

static void dump_list(const char *head, FlAstList l, FlBuf *b) {
    fl_buf_printf(b, " (%s", head);
    for (size_t i = 0; i < l.len; i++) {
        fl_buf_putc(b, ' ');
        dump(l.items[i], b);
    }
    fl_buf_putc(b, ')');
}

static void dump_params(const FlAstParam *ps, size_t n, FlBuf *b) {
    fl_buf_puts(b, " (params");
    for (size_t i = 0; i < n; i++) {
        const FlAstParam *a = &ps[i];
        if (a->star) {
            fl_buf_printf(b, " (%s %s)", a->star == 1 ? "star" : "dstar", a->name);
        } else if (a->deflt) {
            fl_buf_printf(b, " (default %s ", a->name);
            dump(a->deflt, b);
            fl_buf_putc(b, ')');
        } else {
            fl_buf_printf(b, " %s", a->name);
        }
    }
    fl_buf_putc(b, ')');
}

static void sp(const FlAst *n, FlBuf *b) {
    fl_buf_putc(b, ' ');
    dump(n, b);
}

static void dump(const FlAst *n, FlBuf *b) {
    if (!n) {
        fl_buf_putc(b, '_');
        return;
    }
    switch (n->kind) {
    case FL_AST_NAME: fl_buf_printf(b, "(name %s)", n->name); return;
    case FL_AST_INT: fl_buf_printf(b, "(int %lld)", (long long)n->ival); return;
    case FL_AST_FLOAT:
        fl_buf_puts(b, "(float ");
        dump_float(n->fval, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_STR:
        fl_buf_puts(b, "(str ");
        dump_str(n->str, n->slen, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_TRUE: fl_buf_puts(b, "True"); return;
    case FL_AST_FALSE: fl_buf_puts(b, "False"); return;
    case FL_AST_NONE: fl_buf_puts(b, "None"); return;
    case FL_AST_ATTR:
        fl_buf_puts(b, "(attr");
        sp(n->attr.obj, b);
        fl_buf_printf(b, " %s)", n->attr.name);
        return;
    case FL_AST_CALL:
        fl_buf_puts(b, "(call");
        sp(n->call.fn, b);
        for (size_t i = 0; i < n->call.nargs; i++) {
            const FlAstArg *a = &n->call.args[i];
            if (a->name) fl_buf_printf(b, " (kw %s", a->name);
            else if (a->star) fl_buf_printf(b, " (%s", a->star == 1 ? "star" : "dstar");
            sp(a->value, b);
            if (a->name || a->star) fl_buf_putc(b, ')');
        }
        fl_buf_putc(b, ')');
        return;
    case FL_AST_INDEX:
        fl_buf_puts(b, "(index");
        sp(n->index.obj, b);
        sp(n->index.index, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_SLICE:
        fl_buf_puts(b, "(slice");
        sp(n->slice.lo, b);
        sp(n->slice.hi, b);
        sp(n->slice.step, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_LIST:
    case FL_AST_TUPLE:
        fl_buf_puts(b, n->kind == FL_AST_LIST ? (n->list.set ? "(set" : "(list") : "(tuple");
        for (size_t i = 0; i < n->list.items.len; i++) sp(n->list.items.items[i], b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_DICT:
        fl_buf_puts(b, "(dict");
        for (size_t i = 0; i < n->dict.keys.len; i++) {
            fl_buf_puts(b, " (item");
            sp(n->dict.keys.items[i], b);
            sp(n->dict.vals.items[i], b);
            fl_buf_putc(b, ')');
        }
        fl_buf_putc(b, ')');
        return;
    case FL_AST_BINOP:
    case FL_AST_COMPARE:
    case FL_AST_AND:
    case FL_AST_OR:
        fl_buf_printf(b, "(%s", n->kind == FL_AST_BINOP    ? op_name(binop_names, FL_BINOP_COUNT, n->binop.op)
                                : n->kind == FL_AST_COMPARE ? op_name(cmp_names, FL_CMP_COUNT, n->binop.op)
                                : n->kind == FL_AST_AND     ? "and"
                                                            : "or");
        sp(n->binop.l, b);
        sp(n->binop.r, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_UNOP:
        fl_buf_printf(b, "(%s", op_name(unop_names, FL_UNOP_COUNT, n->unop.op));
        sp(n->unop.e, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_COND:
        fl_buf_puts(b, "(ifexp");
        sp(n->cond.test, b);
        sp(n->cond.then, b);
        sp(n->cond.other, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_LAMBDA:
        fl_buf_puts(b, "(lambda");
        dump_params(n->def.params, n->def.nparams, b);
        sp(n->def.body.len == 1 && n->def.body.items[0]->kind == FL_AST_RETURN ? n->def.body.items[0]->expr.e
                                                                                : NULL, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_LISTCOMP:
    case FL_AST_DICTCOMP:
        fl_buf_puts(b, n->kind == FL_AST_LISTCOMP ? "(listcomp" : "(dictcomp");
        sp(n->comp.elt, b);
        if (n->kind == FL_AST_DICTCOMP) sp(n->comp.val, b);
        for (size_t i = 0; i < n->comp.clauses.len; i++) sp(n->comp.clauses.items[i], b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_COMP_FOR:
        fl_buf_puts(b, "(for");
        sp(n->loop.target, b);
        sp(n->loop.iter, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_COMP_IF:
        fl_buf_puts(b, "(if");
        sp(n->cond.test, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_EXPR_STMT:
        fl_buf_puts(b, "(expr");
        sp(n->expr.e, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_ASSIGN:
    case FL_AST_AUGASSIGN:
        if (n->kind == FL_AST_ASSIGN) fl_buf_puts(b, "(assign");
        else fl_buf_printf(b, "(augassign %s=", op_name(binop_names, FL_BINOP_COUNT, n->assign.op));
        sp(n->assign.target, b);
        for (size_t i = 0; i < n->assign.more.len; i++) sp(n->assign.more.items[i], b);
        sp(n->assign.value, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_DEF:
        fl_buf_printf(b, "(def %s", n->def.name);
        dump_params(n->def.params, n->def.nparams, b);
        dump_list("body", n->def.body, b);
        if (n->def.decos.len) dump_list("decorators", n->def.decos, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_RETURN:
        fl_buf_puts(b, "(return");
        if (n->expr.e) sp(n->expr.e, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_IF:
        fl_buf_puts(b, "(if");
        sp(n->cond.test, b);
        dump_list("body", n->cond.then_body, b);
        if (n->cond.else_body.len) dump_list("else", n->cond.else_body, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_FOR:
    case FL_AST_WHILE:
    case FL_AST_PARALLEL_FOR:
        fl_buf_puts(b, n->kind == FL_AST_FOR ? "(for" : n->kind == FL_AST_WHILE ? "(while" : "(parallel_for");
        if (n->kind != FL_AST_WHILE) sp(n->loop.target, b);
        sp(n->loop.iter, b);
        dump_list("body", n->loop.body, b);
        if (n->loop.else_body.len) dump_list("else", n->loop.else_body, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_BREAK: fl_buf_puts(b, "(break)"); return;
    case FL_AST_CONTINUE: fl_buf_puts(b, "(continue)"); return;
    case FL_AST_PASS: fl_buf_puts(b, "(pass)"); return;
    case FL_AST_IMPORT:
        fl_buf_printf(b, "(import %s", n->import.module);
        if (n->import.alias) fl_buf_printf(b, " as %s", n->import.alias);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_FROM_IMPORT:
        fl_buf_printf(b, "(from %s import", n->import.module);
        if (n->import.star) fl_buf_puts(b, " *");
        for (size_t i = 0; i < n->import.nnames; i++) {
            if (n->import.aliases[i]) fl_buf_printf(b, " (%s as %s)", n->import.names[i], n->import.aliases[i]);
            else fl_buf_printf(b, " %s", n->import.names[i]);
        }
        fl_buf_putc(b, ')');
        return;
    case FL_AST_WITH:
        fl_buf_puts(b, "(with");
        sp(n->with.expr, b);
        if (n->with.as_name) fl_buf_printf(b, " as %s", n->with.as_name);
        dump_list("body", n->with.body, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_GO:
        fl_buf_puts(b, "(go");
        dump_list("body", n->with.body, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_SELECT:
        fl_buf_puts(b, "(select");
        for (size_t i = 0; i < n->select.cases.len; i++) sp(n->select.cases.items[i], b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_CASE:
        if (!n->case_.op) {
            fl_buf_puts(b, "(default");
        } else {
            fl_buf_puts(b, "(case");
            if (n->case_.target) sp(n->case_.target, b);
            sp(n->case_.op, b);
        }
        dump_list("body", n->case_.body, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_STARRED:
        fl_buf_puts(b, "(starred");
        sp(n->unop.e, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_CMP_CHAIN:
        fl_buf_printf(b, "(chain %s", op_name(cmp_names, FL_CMP_COUNT, n->binop.op));
        sp(n->binop.l, b);
        sp(n->binop.r, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_CLASS:
        fl_buf_printf(b, "(class %s", n->cls.name);
        sp(n->cls.base, b);
        dump_list("body", n->cls.body, b);
        if (n->cls.decos.len) dump_list("decorators", n->cls.decos, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_ASSERT:
        fl_buf_puts(b, "(assert");
        sp(n->cond.test, b);
        sp(n->cond.then, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_RAISE:
        fl_buf_puts(b, "(raise");
        sp(n->expr.e, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_TRY:
        fl_buf_puts(b, "(try");
        dump_list("body", n->loop.body, b);
        fl_buf_puts(b, " (except");
        if (n->loop.iter) sp(n->loop.iter, b);
        if (n->loop.target) sp(n->loop.target, b);
        fl_buf_putc(b, ')');
        dump_list("handler", n->loop.else_body, b);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_GLOBAL:
        fl_buf_puts(b, n->decl.nonlocal ? "(nonlocal" : "(global");
        for (size_t i = 0; i < n->decl.nnames; i++) fl_buf_printf(b, " %s", n->decl.names[i]);
        fl_buf_putc(b, ')');
        return;
    case FL_AST_COUNT: break;
    }
    FL_UNREACHABLE();
}

void fl_ast_dump(const FlAstModule *m, FlBuf *out) {
    for (size_t i = 0; i < m->body.len; i++) {
        dump(m->body.items[i], out);
        fl_buf_putc(out, '\n');
    }
}
