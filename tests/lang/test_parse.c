/* test_parse.c: the lang front end: scanner, grammar, AST dump, spans and diagnostics.
 *
 * Valid programs are checked through their fl_ast_dump text, bad ones through the exact
 * diagnostics (path:line:col, source line, caret line). Runs from the repository root:
 * every examples/NAME.fl must parse (and match tests/lang/ast/NAME.ast where it exists), and every
 * tests/diag/parse_*.fl must print exactly its .expected.
 */
#include "lang/ast.h"

#include <CUnit/Basic.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Parsed {
    FlSources src;
    FlDiag diag;
    FlArena arena;
    FlInterner in;
    FlAstModule m;
    int nerrors;
    FlBuf dump;
} Parsed;

static void parse_text(Parsed *r, const char *path, const char *text, size_t len) {
    fl_sources_init(&r->src);
    uint32_t id = fl_sources_add_take(&r->src, path, fl_xstrndup(text, len), len);
    fl_diag_init(&r->diag, &r->src);
    r->diag.max_errors = 0; /* print them all */
    fl_arena_init(&r->arena);
    fl_intern_init(&r->in);
    r->nerrors = fl_parse(&r->arena, &r->in, &r->diag, id, &r->m);
    memset(&r->dump, 0, sizeof r->dump);
    if (r->nerrors == 0) fl_ast_dump(&r->m, &r->dump);
}

static void parsed_fini(Parsed *r) {
    fl_buf_free(&r->dump);
    fl_intern_fini(&r->in);
    fl_arena_fini(&r->arena);
    fl_diag_fini(&r->diag);
    fl_sources_fini(&r->src);
}

static bool same(const char *what, const char *src, const char *got, const char *want) {
    if (strcmp(got, want) == 0) return true;
    fprintf(stderr, "\n--- %s of:\n%s\n--- got:\n%s\n--- expected:\n%s\n", what, src, got, want);
    return false;
}

/* The dump of a program that must parse without errors. */
static void check_ast(const char *src, const char *want) {
    Parsed r;
    parse_text(&r, "t.fl", src, strlen(src));
    if (r.nerrors) fprintf(stderr, "\n%s", fl_buf_str(&r.diag.out));
    CU_ASSERT_EQUAL(r.nerrors, 0);
    CU_ASSERT(same("dump", src, fl_buf_str(&r.dump), want));
    parsed_fini(&r);
}

/* The diagnostics of a program with `nerrors` errors. */
static void check_diag(const char *src, int nerrors, const char *want) {
    Parsed r;
    parse_text(&r, "t.fl", src, strlen(src));
    CU_ASSERT(same("diagnostics", src, fl_buf_str(&r.diag.out), want));
    if (r.nerrors != nerrors) fprintf(stderr, "\n%s: %d errors, expected %d\n", src, r.nerrors, nerrors);
    CU_ASSERT_EQUAL(r.nerrors, nerrors);
    parsed_fini(&r);
}

/* ---- valid programs ---- */

static void test_precedence(void) {
    check_ast("x = -a ** -b ** c * d + e // f % g @ h - +i\n",
              "(assign (name x) (- (+ (* (neg (** (name a) (neg (** (name b) (name c))))) (name d)) "
              "(@ (% (// (name e) (name f)) (name g)) (name h))) (pos (name i))))\n");
    check_ast("y = not a == b and c or d in e and f not in g or h is i or j is not k\n",
              "(assign (name y) (or (or (or (and (not (== (name a) (name b))) (name c)) (and (in (name d) (name e)) "
              "(not-in (name f) (name g)))) (is (name h) (name i))) (is-not (name j) (name k))))\n");
    check_ast("z = a if b else c if d else e\n",
              "(assign (name z) (ifexp (name b) (name a) (ifexp (name d) (name c) (name e))))\n");
    check_ast("1 - 2 - 3\n2 ** 3 ** 4\n-2 ** 2\n(a + b) * c\na * b + c * d\nnot not x\n",
              "(expr (- (- (int 1) (int 2)) (int 3)))\n(expr (** (int 2) (** (int 3) (int 4))))\n"
              "(expr (neg (** (int 2) (int 2))))\n(expr (* (+ (name a) (name b)) (name c)))\n"
              "(expr (+ (* (name a) (name b)) (* (name c) (name d))))\n(expr (not (not (name x))))\n");
    check_ast("x = (a < b) == c\n", "(assign (name x) (== (< (name a) (name b)) (name c)))\n");
    check_ast("f(x)(y).z[0]\n", "(expr (index (attr (call (call (name f) (name x)) (name y)) z) (int 0)))\n");
}

static void test_assignment(void) {
    check_ast("a, b = b, a\n(a, b), c = f()\n[x.y, z[0]] = 1, 2\nx = y, \n",
              "(assign (tuple (name a) (name b)) (tuple (name b) (name a)))\n"
              "(assign (tuple (tuple (name a) (name b)) (name c)) (call (name f)))\n"
              "(assign (list (attr (name x) y) (index (name z) (int 0))) (tuple (int 1) (int 2)))\n"
              "(assign (name x) (tuple (name y)))\n");
    check_ast("x += 1; y -= 2; z *= 3; w /= 4; q //= 5; r %= 6; m @= n; p **= 2;\n",
              "(augassign += (name x) (int 1))\n(augassign -= (name y) (int 2))\n(augassign *= (name z) (int 3))\n"
              "(augassign /= (name w) (int 4))\n(augassign //= (name q) (int 5))\n(augassign %= (name r) (int 6))\n"
              "(augassign @= (name m) (name n))\n(augassign **= (name p) (int 2))\n");
    check_ast("params, grads = fluid.append_backward(loss)\n",
              "(assign (tuple (name params) (name grads)) (call (attr (name fluid) append_backward) (name loss)))\n");
    /* chained: the targets left to right, then the one value */
    check_ast("a = b = c\nx, y = z[0] = w.v = 1, 2\np = q, = r = [s]\n",
              "(assign (name a) (name b) (name c))\n"
              "(assign (tuple (name x) (name y)) (index (name z) (int 0)) (attr (name w) v) (tuple (int 1) (int 2)))\n"
              "(assign (name p) (tuple (name q)) (name r) (list (name s)))\n");
}

/* class, assert, raise, global, nonlocal, starred items and chained comparisons */
static void test_python_statements(void) {
    check_ast("class A(B.C):\n    x = 1\n    def f(self):\n        return self.x\nclass D:\n    pass\nclass E():\n    pass\n",
              "(class A (attr (name B) C) (body (assign (name x) (int 1)) (def f (params self) (body (return (attr (name self) x))))))\n"
              "(class D _ (body (pass)))\n(class E _ (body (pass)))\n");
    check_ast("assert x\nassert x > 0, 'msg'\nraise\nraise ValueError('v')\n",
              "(assert (name x) _)\n(assert (> (name x) (int 0)) (str \"msg\"))\n(raise _)\n"
              "(raise (call (name ValueError) (str \"v\")))\n");
    check_ast("def f():\n    global a, b\n    nonlocal c\n",
              "(def f (params) (body (global a b) (nonlocal c)))\n");
    check_ast("a, *b = x\n[*c, d] = y\nz = [*a, 1, *b]\n",
              "(assign (tuple (name a) (starred (name b))) (name x))\n"
              "(assign (list (starred (name c)) (name d)) (name y))\n"
              "(assign (name z) (list (starred (name a)) (int 1) (starred (name b))))\n");
    check_ast("0 < x <= 10 != y\n(a < b) < c\n",
              "(expr (chain != (chain <= (< (int 0) (name x)) (int 10)) (name y)))\n"
              "(expr (< (< (name a) (name b)) (name c)))\n");
    /* a generator expression (the sole argument of a call, or in parentheses) is a list */
    check_ast("max(len(x) for x in xs)\ny = (i for i in r if i)\n",
              "(expr (call (name max) (listcomp (call (name len) (name x)) (for (name x) (name xs)))))\n"
              "(assign (name y) (listcomp (name i) (for (name i) (name r)) (if (name i))))\n");
    check_ast("@a.b(1)\n@c\ndef f():\n    pass\n@d\nclass K:\n    pass\n",
              "(def f (params) (body (pass)) (decorators (call (attr (name a) b) (int 1)) (name c)))\n"
              "(class K _ (body (pass)) (decorators (name d)))\n");
    /* the new keywords are attribute names after a '.' */
    check_ast("x.class_ = m.raise\n", "(assign (attr (name x) class_) (attr (name m) raise))\n");
}

static void test_comprehensions(void) {
    check_ast("a = [x * 2 for x in xs if x > 1 if x < 9]\n",
              "(assign (name a) (listcomp (* (name x) (int 2)) (for (name x) (name xs)) (if (> (name x) (int 1))) "
              "(if (< (name x) (int 9)))))\n");
    check_ast("b = [(i, j) for i in range(3) for j, k in pairs if i != j]\n",
              "(assign (name b) (listcomp (tuple (name i) (name j)) (for (name i) (call (name range) (int 3))) "
              "(for (tuple (name j) (name k)) (name pairs)) (if (!= (name i) (name j)))))\n");
    check_ast("d = {k: v for k, v in items}\ne = {k: [v for v in k] for k in a or b if not k}\n",
              "(assign (name d) (dictcomp (name k) (name v) (for (tuple (name k) (name v)) (name items))))\n"
              "(assign (name e) (dictcomp (name k) (listcomp (name v) (for (name v) (name k))) (for (name k) (or "
              "(name a) (name b))) (if (not (name k)))))\n");
    /* the element may be a conditional expression or a lambda; an iterable or condition that is
     * one needs parentheses */
    check_ast("f = [x if c else y for x in (a if t else b)]\ng = [lambda: i for i in r]\nh = [[y for y in row] for row in m]\n",
              "(assign (name f) (listcomp (ifexp (name c) (name x) (name y)) (for (name x) (ifexp (name t) (name a) "
              "(name b)))))\n"
              "(assign (name g) (listcomp (lambda (params) (name i)) (for (name i) (name r))))\n"
              "(assign (name h) (listcomp (listcomp (name y) (for (name y) (name row))) (for (name row) (name m))))\n");
    check_ast("s = sum([v.x for v in vs],)\n",
              "(assign (name s) (call (name sum) (listcomp (attr (name v) x) (for (name v) (name vs)))))\n");
}

static void test_literals(void) {
    check_ast("t = (), (1,), (1, 2,), [], [1,], {}, {1: 2, 'a': \"b\",}\n",
              "(assign (name t) (tuple (tuple) (tuple (int 1)) (tuple (int 1) (int 2)) (list) (list (int 1)) (dict) "
              "(dict (item (int 1) (int 2)) (item (str \"a\") (str \"b\")))))\n");
    check_ast("s = \"a\" 'b' \"\"\"c\nd\"\"\" '''e'f'''\n", "(assign (name s) (str \"abc\\nde'f\"))\n");
    check_ast("s = '\\n\\t\\\\\\'\\\"\\x41\\x00'\n", "(assign (name s) (str \"\\n\\t\\\\'\\\"A\\x00\"))\n");
    check_ast("u = [1.0, .5, 1e-3, 1.0e+5, 0x1F, 0, 00, 7, 2.5e3, 9223372036854775807]\n",
              "(assign (name u) (list (float 1.0) (float 0.5) (float 0.001) (float 100000.0) (int 31) (int 0) (int 0) "
              "(int 7) (float 2500.0) (int 9223372036854775807)))\n");
    check_ast("x = [1e300, 1e-7, 0.1, 3.14159, 1e16, 123456789.125]\n",
              "(assign (name x) (list (float 1e+300) (float 1e-07) (float 0.1) (float 3.14159) (float 1e+16) "
              "(float 123456789.125)))\n");
    check_ast("x = [True, False, None]\n", "(assign (name x) (list True False None))\n");
    check_ast("s = 'a\\\nb'\n", "(assign (name s) (str \"ab\"))\n");
}

static void test_slices(void) {
    check_ast("v = a[1:2, ::3, :, 4:][::-1][x]\n",
              "(assign (name v) (index (index (index (name a) (tuple (slice (int 1) (int 2) _) (slice _ _ (int 3)) "
              "(slice _ _ _) (slice (int 4) _ _))) (slice _ _ (neg (int 1)))) (name x)))\n");
    check_ast("a[i, j]\na[i,]\na[:n]\n",
              "(expr (index (name a) (tuple (name i) (name j))))\n(expr (index (name a) (tuple (name i))))\n"
              "(expr (index (name a) (slice _ (name n) _)))\n");
}

static void test_lambda_calls(void) {
    check_ast("w = lambda x, y=1, *a, **k: x + y\nf = lambda: 0\ng = lambda x: lambda y: x if y else 0\n",
              "(assign (name w) (lambda (params x (default y (int 1)) (star a) (dstar k)) (+ (name x) (name y))))\n"
              "(assign (name f) (lambda (params) (int 0)))\n"
              "(assign (name g) (lambda (params x) (lambda (params y) (ifexp (name y) (name x) (int 0)))))\n");
    check_ast("f(a, *b, c=1, **d)\nf(x,)\nf()\n",
              "(expr (call (name f) (name a) (star (name b)) (kw c (int 1)) (dstar (name d))))\n"
              "(expr (call (name f) (name x)))\n(expr (call (name f)))\n");
}

static void test_imports(void) {
    check_ast("import a.b\nimport a.b as c, d\nfrom a.b import x, y as z\nfrom a import (x, y,)\nimport fluid\n",
              "(import a.b)\n(import a.b as c)\n(import d)\n(from a.b import x (y as z))\n(from a import x y)\n"
              "(import fluid)\n");
    check_ast("from a.b import *\nfrom m import *; x = 1\n",
              "(from a.b import *)\n(from m import *)\n(assign (name x) (int 1))\n");
}

static void test_compound(void) {
    check_ast("def g(n, *args, **kwargs):\n    def h(x=1):\n        return\n    return h\n",
              "(def g (params n (star args) (dstar kwargs)) (body (def h (params (default x (int 1))) (body (return))) "
              "(return (name h))))\n");
    check_ast("if a:\n    x\nelif b:\n    y\nelif c:\n    z\nelse:\n    w\n",
              "(if (name a) (body (expr (name x))) (else (if (name b) (body (expr (name y))) (else (if (name c) "
              "(body (expr (name z))) (else (expr (name w))))))))\n");
    check_ast("for i, j in zip(a, b):\n    break\nelse:\n    continue\nwhile x < 10:\n    x += 1\nelse:\n    pass\n",
              "(for (tuple (name i) (name j)) (call (name zip) (name a) (name b)) (body (break)) (else (continue)))\n"
              "(while (< (name x) (int 10)) (body (augassign += (name x) (int 1))) (else (pass)))\n");
    check_ast("for x in a, b: pass\nif x: pass\nelse: y = 1; z = 2\n",
              "(for (name x) (tuple (name a) (name b)) (body (pass)))\n"
              "(if (name x) (body (pass)) (else (assign (name y) (int 1)) (assign (name z) (int 2))))\n");
    check_ast("with fluid.program_guard(main, startup):\n    pass\nwith a as b: pass\n",
              "(with (call (attr (name fluid) program_guard) (name main) (name startup)) (body (pass)))\n"
              "(with (name a) as b (body (pass)))\n");
    check_ast("with fluid.parallel_for(4) as it:\n    f(it.idx)\n",
              "(with (call (attr (name fluid) parallel_for) (int 4)) as it (body (expr (call (name f) (attr (name it) idx)))))\n");
    check_ast("go:\n    x = 1\nwith fluid.go():\n    pass\n",
              "(go (body (assign (name x) (int 1))))\n(with (call (attr (name fluid) go)) (body (pass)))\n");
    check_ast("parallel_for i in range(4):\n    f(i)\n",
              "(parallel_for (name i) (call (name range) (int 4)) (body (expr (call (name f) (name i)))))\n");
}

static void test_select(void) {
    check_ast("select:\n    case v = ch.recv():\n        f(v)\n    case ch.send(1):\n        pass\n"
              "    case a, b = ch.recv():\n        pass\n    default:\n        pass\n",
              "(select (case (name v) (call (attr (name ch) recv)) (body (expr (call (name f) (name v))))) "
              "(case (call (attr (name ch) send) (int 1)) (body (pass))) "
              "(case (tuple (name a) (name b)) (call (attr (name ch) recv)) (body (pass))) (default (body (pass))))\n");
    /* case and default are ordinary names elsewhere */
    check_ast("def f(default=1, case=2):\n    return default + case\ncase = 3\n",
              "(def f (params (default default (int 1)) (default case (int 2))) (body (return (+ (name default) "
              "(name case)))))\n(assign (name case) (int 3))\n");
    check_ast("select:\n    case x.recv(): pass\n", "(select (case (call (attr (name x) recv)) (body (pass))))\n");
}

static void test_layout(void) {
    /* implicit line joining, backslash continuation, comments, blank lines */
    check_ast("y = (1 +\n     2) \\\n    + 3\nz = [1,\n# c\n\n  2]\n",
              "(assign (name y) (+ (+ (int 1) (int 2)) (int 3)))\n(assign (name z) (list (int 1) (int 2)))\n");
    /* no trailing newline, with open blocks */
    check_ast("if x:\n    if y:\n        z = 1", "(if (name x) (body (if (name y) (body (assign (name z) (int 1))))))\n");
    check_ast("x = 1", "(assign (name x) (int 1))\n");
    check_ast("", "");
    check_ast("\n\n  \n# only a comment\n   # indented comment", "");
    check_ast("x = 1\n   \r", "(assign (name x) (int 1))\n");
    check_ast("x = 1\n\t  ", "(assign (name x) (int 1))\n");
    /* tabs-only indentation, CRLF line ends, blank lines with odd indentation inside blocks */
    check_ast("if x:\n\ty = 1\n\tif z:\n\t\tw = 2\n",
              "(if (name x) (body (assign (name y) (int 1)) (if (name z) (body (assign (name w) (int 2))))))\n");
    check_ast("if x:\r\n    y = 1\r\n\r\n  \r\nz = 2\r\n",
              "(if (name x) (body (assign (name y) (int 1))))\n(assign (name z) (int 2))\n");
    check_ast("def f():\n    x = 1\n\n        # comment at another indentation\n    return x\n",
              "(def f (params) (body (assign (name x) (int 1)) (return (name x))))\n");
    /* several dedents at once, then more code */
    check_ast("if a:\n  if b:\n    if c:\n      x\ny\n",
              "(if (name a) (body (if (name b) (body (if (name c) (body (expr (name x))))))))\n(expr (name y))\n");
    /* keywords after '.' are attribute names */
    check_ast("x = fluid.go().parallel_for(n).select.import_.if_\ny = a.for.in.not\n",
              "(assign (name x) (attr (attr (attr (call (attr (call (attr (name fluid) go)) parallel_for) (name n)) "
              "select) import_) if_))\n(assign (name y) (attr (attr (attr (name a) for) in) not))\n");
    check_ast("a; b;\n", "(expr (name a))\n(expr (name b))\n");
}

static void test_examples(void) {
    DIR *d = opendir("examples");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 3, ".fl") != 0) continue;
        char path[512], golden[512];
        snprintf(path, sizeof path, "examples/%s", e->d_name);
        snprintf(golden, sizeof golden, "tests/lang/ast/%.*s.ast", (int)(len - 3), e->d_name);
        FlErr err;
        size_t tlen;
        char *text = fl_read_file(path, &tlen, &err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(text);
        Parsed r;
        parse_text(&r, path, text, tlen);
        if (r.nerrors) fprintf(stderr, "\n%s", fl_buf_str(&r.diag.out));
        CU_ASSERT_EQUAL(r.nerrors, 0);
        size_t glen;
        char *want = fl_read_file(golden, &glen, &err);
        if (want) CU_ASSERT(same("dump", path, fl_buf_str(&r.dump), want));
        free(want);
        free(text);
        parsed_fini(&r);
        n++;
    }
    closedir(d);
    CU_ASSERT(n >= 6);
}

/* ---- spans ---- */

static char *text_of(const Parsed *r, FlSpan sp) {
    const FlSourceFile *f = fl_sources_file(&r->src, sp.file);
    return fl_xstrndup(f->text + sp.start, sp.end - sp.start);
}

#define SPAN_IS(r, sp, want)                                                                \
    do {                                                                                    \
        char *s_ = text_of((r), (sp));                                                      \
        CU_ASSERT(same("span", #sp, s_, (want)));                                           \
        free(s_);                                                                           \
    } while (0)

static void test_spans(void) {
    Parsed r;
    const char *src = "x = layers.fc(a, size=1) + -b ** 2\n"
                      "if (x) :  # c\n    y = [1, 2][0:1]\n"
                      "def f(a, b=3, *c):\n    return lambda q: q\n"
                      "from m import n as o\n"
                      "s = 'ab' \"cd\"\n";
    parse_text(&r, "t.fl", src, strlen(src));
    CU_ASSERT_EQUAL_FATAL(r.nerrors, 0);
    FlAst **top = r.m.body.items;
    CU_ASSERT_EQUAL_FATAL(r.m.body.len, 5);
    FlAst *as = top[0];
    SPAN_IS(&r, as->span, "x = layers.fc(a, size=1) + -b ** 2");
    FlAst *add = as->assign.value;
    SPAN_IS(&r, add->span, "layers.fc(a, size=1) + -b ** 2");
    FlAst *call = add->binop.l;
    SPAN_IS(&r, call->span, "layers.fc(a, size=1)");
    SPAN_IS(&r, call->call.fn->span, "layers.fc");
    SPAN_IS(&r, call->call.fn->attr.name_span, "fc");
    SPAN_IS(&r, call->call.args[1].span, "size=1");
    SPAN_IS(&r, call->call.args[1].value->span, "1");
    SPAN_IS(&r, add->binop.r->span, "-b ** 2");
    SPAN_IS(&r, add->binop.r->unop.e->span, "b ** 2");
    FlAst *ifs = top[1];
    SPAN_IS(&r, ifs->span, "if (x) :");
    SPAN_IS(&r, ifs->cond.test->span, "x");
    FlAst *y = ifs->cond.then_body.items[0];
    SPAN_IS(&r, y->span, "y = [1, 2][0:1]");
    SPAN_IS(&r, y->assign.value->index.index->span, "0:1");
    FlAst *def = top[2];
    SPAN_IS(&r, def->span, "def f(a, b=3, *c):");
    SPAN_IS(&r, def->def.params[1].span, "b=3");
    SPAN_IS(&r, def->def.params[2].span, "*c");
    FlAst *ret = def->def.body.items[0];
    SPAN_IS(&r, ret->span, "return lambda q: q");
    SPAN_IS(&r, ret->expr.e->span, "lambda q: q");
    SPAN_IS(&r, top[3]->span, "from m import n as o");
    SPAN_IS(&r, top[3]->import.name_spans[0], "n as o");
    SPAN_IS(&r, top[4]->assign.value->span, "'ab' \"cd\"");
    CU_ASSERT_EQUAL(as->depth, 5); /* assign > + > - > ** > b */
    parsed_fini(&r);

    src = "select:\n    case v = ch.recv():\n        pass\n    default:\n        pass\n"
          "for a, b in c:\n    pass\nwhile x:\n    pass\nif a:\n    pass\nelif b:\n    pass\n"
          "go:\n    pass\nparallel_for i in r:\n    pass\nwith g() as h:\n    pass\nimport a.b as c, d\n";
    parse_text(&r, "t.fl", src, strlen(src));
    CU_ASSERT_EQUAL_FATAL(r.nerrors, 0);
    top = r.m.body.items;
    CU_ASSERT_EQUAL_FATAL(r.m.body.len, 9);
    SPAN_IS(&r, top[0]->span, "select:");
    SPAN_IS(&r, top[0]->select.cases.items[0]->span, "case v = ch.recv():");
    SPAN_IS(&r, top[0]->select.cases.items[0]->case_.op->span, "ch.recv()");
    SPAN_IS(&r, top[0]->select.cases.items[1]->span, "default:");
    SPAN_IS(&r, top[1]->span, "for a, b in c:");
    SPAN_IS(&r, top[1]->loop.target->span, "a, b");
    SPAN_IS(&r, top[2]->span, "while x:");
    SPAN_IS(&r, top[3]->span, "if a:");
    SPAN_IS(&r, top[3]->cond.else_body.items[0]->span, "elif b:");
    SPAN_IS(&r, top[4]->span, "go:");
    SPAN_IS(&r, top[5]->span, "parallel_for i in r:");
    SPAN_IS(&r, top[5]->loop.target->span, "i");
    SPAN_IS(&r, top[6]->span, "with g() as h:");
    SPAN_IS(&r, top[7]->span, "a.b as c");
    SPAN_IS(&r, top[8]->span, "d");
    parsed_fini(&r);
}

/* ---- errors ---- */

static void test_lexical_errors(void) {
    check_diag("x = 1 $ 2\ny = 3 ? 4\n", 2,
               "t.fl:1:7: error: unexpected character '$'\nx = 1 $ 2\n      ^\n"
               "t.fl:2:7: error: unexpected character '?'\ny = 3 ? 4\n      ^\n");
    check_diag("x = \"abc\ny = 'd\n", 2,
               "t.fl:1:5: error: unterminated string literal\nx = \"abc\n    ^\n"
               "t.fl:2:5: error: unterminated string literal\ny = 'd\n    ^\n");
    check_diag("x = '''abc\n\nd", 1,
               "t.fl:1:5: error: unterminated triple-quoted string literal\nx = '''abc\n    ^~~\n");
    check_diag("x = \"a\\qb\\x4\"\n", 2,
               "t.fl:1:7: error: invalid escape sequence '\\q'\nx = \"a\\qb\\x4\"\n      ^~\n"
               "t.fl:1:10: error: invalid '\\x' escape: expected two hexadecimal digits\nx = \"a\\qb\\x4\"\n"
               "         ^~\n");
    check_diag("n = 9223372036854775808\nm = 0x8000000000000000\n", 2,
               "t.fl:1:5: error: integer literal too large (the limit is 9223372036854775807)\n"
               "n = 9223372036854775808\n    ^~~~~~~~~~~~~~~~~~~\n"
               "t.fl:2:5: error: integer literal too large (the limit is 9223372036854775807)\n"
               "m = 0x8000000000000000\n    ^~~~~~~~~~~~~~~~~~\n");
    check_diag("x = 012 + 0x + 1abc\n", 3,
               "t.fl:1:5: error: leading zeros in decimal integer literals are not permitted\nx = 012 + 0x + 1abc\n"
               "    ^~~\nt.fl:1:11: error: invalid hexadecimal literal '0x'\nx = 012 + 0x + 1abc\n          ^~\n"
               "t.fl:1:16: error: invalid decimal literal '1abc'\nx = 012 + 0x + 1abc\n               ^~~~\n");
    check_diag("x = 1 \\ 2\n", 1,
               "t.fl:1:7: error: unexpected character after line continuation character\nx = 1 \\ 2\n      ^\n");
    check_diag("x = 1 \\", 1,
               "t.fl:1:7: error: unexpected end of file after line continuation character\nx = 1 \\\n      ^\n");
    check_diag("x = \xe2\x82\xac\n", 1,
               "t.fl:1:5: error: non-ASCII character outside a string or comment\nx = \xe2\x82\xac\n    ^~~\n");
    /* NUL bytes: printed as '?' in the source line */
    Parsed r;
    parse_text(&r, "t.fl", "x = 1\0\n", 7);
    CU_ASSERT(same("diagnostics", "NUL", fl_buf_str(&r.diag.out),
                   "t.fl:1:6: error: unexpected character '\\x00'\nx = 1?\n     ^\n"));
    parsed_fini(&r);
    /* strings may hold anything, comments too */
    check_ast("s = '\xe2\x82\xac\t'  # \xff\x01 comment\n", "(assign (name s) (str \"\\xe2\\x82\\xac\\t\"))\n");
}

static void test_indent_errors(void) {
    check_diag("if x:\n    y = 1\nif z:\n\tw = 2\nif q:\n\tw = 3\n", 1,
               "t.fl:4:1: error: inconsistent use of tabs and spaces in indentation\n\tw = 2\n^\n");
    check_diag("if x:\n \ty = 1\n", 1,
               "t.fl:2:1: error: inconsistent use of tabs and spaces in indentation\n \ty = 1\n^~\n");
    check_diag("if x:\n        y = 1\n    z = 2\n", 1,
               "t.fl:3:5: error: unindent does not match any outer indentation level\n    z = 2\n    ^\n");
    check_diag("x = 1\n    y = 2\nz = 3\n", 1, "t.fl:2:5: error: unexpected indent\n    y = 2\n    ^\n");
    check_diag("def f():\nreturn 1\n", 1,
               "t.fl:2:1: error: expected an indented block, found keyword 'return'\nreturn 1\n^~~~~~\n");
    /* caret under a tab-indented token keeps the tab */
    check_diag("if x:\n\ty = $\n", 1, "t.fl:2:6: error: unexpected character '$'\n\ty = $\n\t    ^\n");
}

static void test_bracket_errors(void) {
    check_diag("x = f(1,\n      2\n", 1,
               "t.fl:2:8: error: unclosed '(' at end of file\n      2\n       ^\n"
               "t.fl:1:6: note: '(' opened here\nx = f(1,\n     ^\n");
    check_diag("x = (1 + 2]\n", 1,
               "t.fl:1:11: error: closing ']' does not match '('\nx = (1 + 2]\n          ^\n"
               "t.fl:1:5: note: '(' opened here\nx = (1 + 2]\n    ^\n");
    check_diag("x = f(1))\n", 1, "t.fl:1:9: error: unmatched ')'\nx = f(1))\n        ^\n");
}

static void test_syntax_errors(void) {
    check_diag("if x\n    y = 1\n", 1, "t.fl:1:5: error: expected ':', found newline\nif x\n    ^\n");
    check_diag("for i in range(3)\n    pass\n", 1,
               "t.fl:1:18: error: expected ':', found newline\nfor i in range(3)\n                 ^\n");
    check_diag("x = \n", 1, "t.fl:1:4: error: expected an expression, found newline\nx = \n   ^\n");
    check_diag("f(x y)\n", 1, "t.fl:1:5: error: expected ',' or ')', found 'y'\nf(x y)\n    ^\n");
    check_diag("f(,)\n", 1, "t.fl:1:3: error: expected an expression or ')', found ','\nf(,)\n  ^\n");
    check_diag("x y\n", 1, "t.fl:1:3: error: expected newline, found 'y'\nx y\n  ^\n");
    check_diag("= 3\n", 1, "t.fl:1:1: error: expected a statement, found '='\n= 3\n^\n");
    check_diag("def for(x):\n    pass\n", 1,
               "t.fl:1:5: error: expected a name, found keyword 'for'\ndef for(x):\n    ^~~\n");
    check_diag("x = if\n", 1, "t.fl:1:5: error: expected an expression, found keyword 'if'\nx = if\n    ^~\n");
    check_diag("x = 1\nelse:\n    pass\n", 1,
               "t.fl:2:1: error: 'else' without a matching 'if', 'for' or 'while'\nelse:\n^~~~\n");
    check_diag("elif x:\n  pass\n", 1, "t.fl:1:1: error: 'elif' without a matching 'if'\nelif x:\n^~~~\n");
    check_diag("x = 1 if y\n", 1, "t.fl:1:11: error: expected 'else', found newline\nx = 1 if y\n          ^\n");
    check_diag("x = (1 2)\n", 1, "t.fl:1:8: error: expected ',' or ')', found '2'\nx = (1 2)\n       ^\n");
    check_diag("import\n", 1, "t.fl:1:7: error: expected a name, found newline\nimport\n      ^\n");
    check_diag("lambda = 1\n", 1, "t.fl:1:8: error: expected a name or ':', found '='\nlambda = 1\n       ^\n");
    check_diag("x = [1 for]\n", 1, "t.fl:1:11: error: expected an expression, found ']'\nx = [1 for]\n          ^\n");
    check_diag("y = [a for a in b if c else d]\n", 1,
               "t.fl:1:24: error: expected ']', found keyword 'else'\ny = [a for a in b if c else d]\n"
               "                       ^~~~\n");
    check_diag("z = [for x in y]\n", 1,
               "t.fl:1:6: error: expected an expression or ']', found keyword 'for'\nz = [for x in y]\n     ^~~\n");
    check_diag("from m import *, x\n", 1,
               "t.fl:1:16: error: expected newline, found ','\nfrom m import *, x\n               ^\n");
    check_diag("x += y = 1\n", 1, "t.fl:1:8: error: expected newline, found '='\nx += y = 1\n       ^\n");
}

static void test_semantic_syntax_errors(void) {
    check_diag("1 = x\nNone = 3\nf() = 2\na + b = 1\n", 4,
               "t.fl:1:1: error: cannot assign to a literal\n1 = x\n^\n"
               "t.fl:2:1: error: cannot assign to 'None'\nNone = 3\n^~~~\n"
               "t.fl:3:1: error: cannot assign to a function call\nf() = 2\n^~~\n"
               "t.fl:4:1: error: cannot assign to an expression\na + b = 1\n^~~~~\n");
    check_diag("a, 1 = x\nfor f() in y: pass\n(a, b) += 1\n", 3,
               "t.fl:1:4: error: cannot assign to a literal\na, 1 = x\n   ^\n"
               "t.fl:2:5: error: cannot assign to a function call\nfor f() in y: pass\n    ^~~\n"
               "t.fl:3:1: error: a tuple cannot be the target of an augmented assignment\n(a, b) += 1\n^~~~~~\n");
    check_diag("a = 1 = b\nx = [v for 1 in w]\n{k: v for f() in w}\n", 3,
               "t.fl:1:5: error: cannot assign to a literal\na = 1 = b\n    ^\n"
               "t.fl:2:12: error: cannot assign to a literal\nx = [v for 1 in w]\n           ^\n"
               "t.fl:3:11: error: cannot assign to a function call\n{k: v for f() in w}\n          ^~~\n");
    check_diag("a, *b, *c = x\n*d = x\n", 2,
               "t.fl:1:8: error: multiple starred expressions in an assignment\na, *b, *c = x\n       ^~\n"
               "t.fl:2:1: error: a starred assignment target must be in a list or tuple\n*d = x\n^~\n");
    check_diag("def f(a=1, b, a, **k, c):\n    pass\n", 3,
               "t.fl:1:12: error: parameter without a default follows a parameter with a default\n"
               "def f(a=1, b, a, **k, c):\n           ^\n"
               "t.fl:1:15: error: duplicate parameter 'a'\ndef f(a=1, b, a, **k, c):\n              ^\n"
               "t.fl:1:23: error: parameter after '**' parameter\ndef f(a=1, b, a, **k, c):\n"
               "                      ^\n");
    check_diag("f(a=1, 2, a=3)\nf(**k, *a, b)\n", 4,
               "t.fl:1:8: error: positional argument follows keyword argument\nf(a=1, 2, a=3)\n       ^\n"
               "t.fl:1:11: error: keyword argument 'a' repeated\nf(a=1, 2, a=3)\n          ^~~\n"
               "t.fl:2:8: error: '*' argument follows '**' argument\nf(**k, *a, b)\n       ^~\n"
               "t.fl:2:12: error: positional argument follows '**' argument\nf(**k, *a, b)\n           ^\n");
}

static void test_select_errors(void) {
    check_diag("case ch.recv():\n    pass\ndefault:\n    pass\n", 2,
               "t.fl:1:1: error: 'case' outside a select statement\ncase ch.recv():\n^~~~\n"
               "t.fl:3:1: error: 'default' outside a select statement\ndefault:\n^~~~~~~\n");
    check_diag("select:\n    case ch.foo():\n        pass\n    x = 1\n", 2,
               "t.fl:2:10: error: a select case must be a channel operation: 'CH.recv()' or 'CH.send(X)'\n"
               "    case ch.foo():\n         ^~~~~~~~\n"
               "t.fl:4:5: error: expected 'case' or 'default' in a select body, found 'x'\n    x = 1\n    ^\n");
    check_diag("select:\n    case:\n        pass\n    default x:\n        pass\n    case v = ch.send(1):\n"
               "        pass\n    other ch.recv():\n        pass\n    pass\n", 5,
               "t.fl:2:9: error: expected a channel operation after 'case': 'CH.recv()' or 'CH.send(X)'\n"
               "    case:\n        ^\n"
               "t.fl:4:13: error: expected ':' after 'default'\n    default x:\n            ^\n"
               "t.fl:6:10: error: only a 'recv()' case can assign its result\n    case v = ch.send(1):\n         ^\n"
               "t.fl:8:5: error: expected 'case' or 'default' in a select body, found 'other'\n"
               "    other ch.recv():\n    ^~~~~\n"
               "t.fl:10:5: error: expected 'case' or 'default' in a select body, found keyword 'pass'\n"
               "    pass\n    ^~~~\n");
}

static void test_recovery(void) {
    /* several errors in one file, each reported once, parsing goes on after each */
    check_diag("x = = 1\ny = 2 +\nif z\n    w = )\nv = [1,\n", 5,
               "t.fl:1:5: error: expected an expression, found '='\nx = = 1\n    ^\n"
               "t.fl:2:8: error: expected an expression, found newline\ny = 2 +\n       ^\n"
               "t.fl:3:5: error: expected ':', found newline\nif z\n    ^\n"
               "t.fl:4:9: error: unmatched ')'\n    w = )\n        ^\n"
               "t.fl:5:8: error: unclosed '[' at end of file\nv = [1,\n       ^\n"
               "t.fl:5:5: note: '[' opened here\nv = [1,\n    ^\n");
    /* recovery inside brackets: several errors on one line */
    check_diag("x = f(1 2) + g(3 4) + [5 6]\n", 3,
               "t.fl:1:9: error: expected ',' or ')', found '2'\nx = f(1 2) + g(3 4) + [5 6]\n        ^\n"
               "t.fl:1:18: error: expected ',' or ')', found '4'\nx = f(1 2) + g(3 4) + [5 6]\n                 ^\n"
               "t.fl:1:26: error: expected ',' or ']', found '6'\nx = f(1 2) + g(3 4) + [5 6]\n"
               "                         ^\n");
    /* an error inside a block does not hide the next statements */
    check_diag("def f():\n    x = (1 2)\n    return x\ny = ]\n", 2,
               "t.fl:2:12: error: expected ',' or ')', found '2'\n    x = (1 2)\n           ^\n"
               "t.fl:4:5: error: unmatched ']'\ny = ]\n    ^\n");
}

static void test_limits(void) {
    FlBuf b = {0};
    /* nesting: brackets, unary chains, left-leaning chains, blocks */
    fl_buf_puts(&b, "x = ");
    for (int i = 0; i < 300; i++) fl_buf_putc(&b, '(');
    Parsed r;
    parse_text(&r, "t.fl", b.data, b.len);
    CU_ASSERT_EQUAL(r.nerrors, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&r.diag.out), "error: too many nested brackets (the limit is 200)"));
    parsed_fini(&r);
    const char *unit[] = {"-", "not ", "1+", "a.", "()", "[", "lambda: ", "1**", "+"};
    for (size_t k = 0; k < FL_ARRAY_LEN(unit); k++) {
        b.len = 0;
        fl_buf_puts(&b, "x = ");
        for (int i = 0; i < 30000; i++) fl_buf_puts(&b, unit[k]);
        fl_buf_puts(&b, "1\n");
        parse_text(&r, "t.fl", b.data, b.len);
        CU_ASSERT(r.nerrors >= 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&r.diag.out), "nest"));
        parsed_fini(&r);
    }
    b.len = 0;
    for (int i = 0; i < 150; i++) {
        for (int j = 0; j < i; j++) fl_buf_putc(&b, ' ');
        fl_buf_puts(&b, "if x:\n");
    }
    parse_text(&r, "t.fl", b.data, b.len);
    CU_ASSERT_EQUAL(r.nerrors, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&r.diag.out), "too many levels of indentation (the limit is 100)"));
    parsed_fini(&r);
    /* just under the limits parses */
    b.len = 0;
    fl_buf_puts(&b, "x = ");
    for (int i = 0; i < 150; i++) fl_buf_putc(&b, '[');
    for (int i = 0; i < 150; i++) fl_buf_putc(&b, ']');
    parse_text(&r, "t.fl", b.data, b.len);
    CU_ASSERT_EQUAL(r.nerrors, 0);
    parsed_fini(&r);
    /* a very long line and a long string */
    b.len = 0;
    fl_buf_puts(&b, "x = '");
    for (int i = 0; i < 1000000; i++) fl_buf_putc(&b, 'a');
    fl_buf_puts(&b, "' + $");
    parse_text(&r, "t.fl", b.data, b.len);
    CU_ASSERT_EQUAL(r.nerrors, 1);
    parsed_fini(&r);
    fl_buf_free(&b);
}

/* ---- the diagnostics API ---- */

static void test_diag_api(void) {
    FlSources s;
    fl_sources_init(&s);
    uint32_t a = fl_sources_add_take(&s, "a.fl", fl_xstrdup("ab\n\ncd"), 6);
    uint32_t b = fl_sources_add_take(&s, "b.fl", fl_xstrdup(""), 0);
    int line, col;
    fl_sources_linecol(&s, a, 0, &line, &col);
    CU_ASSERT(line == 1 && col == 1);
    fl_sources_linecol(&s, a, 2, &line, &col);
    CU_ASSERT(line == 1 && col == 3);
    fl_sources_linecol(&s, a, 3, &line, &col);
    CU_ASSERT(line == 2 && col == 1);
    fl_sources_linecol(&s, a, 5, &line, &col);
    CU_ASSERT(line == 3 && col == 2);
    fl_sources_linecol(&s, a, 6, &line, &col);
    CU_ASSERT(line == 3 && col == 3);
    fl_sources_linecol(&s, b, 0, &line, &col);
    CU_ASSERT(line == 1 && col == 1);

    FlDiag d;
    fl_diag_init(&d, &s);
    CU_ASSERT_EQUAL(d.max_errors, 20);
    d.max_errors = 2;
    fl_diag_error(&d, fl_span(a, 0, 9), "first %d", 1); /* a span over several lines: '~' to the line end */
    fl_diag_note(&d, fl_span(a, 5, 6), "a note");
    fl_diag_error(&d, fl_span(b, 0, 0), "empty file");
    fl_diag_error(&d, fl_span(a, 0, 1), "third");        /* counted, not printed */
    fl_diag_note(&d, fl_span(a, 0, 1), "dropped note");
    fl_diag_error_plain(&d, "cannot read '%s'", "x.fl");
    CU_ASSERT_EQUAL(d.nerrors, 4);
    CU_ASSERT(same("diagnostics", "api", fl_buf_str(&d.out),
                   "a.fl:1:1: error: first 1\nab\n^~\na.fl:3:2: note: a note\ncd\n ^\n"
                   "b.fl:1:1: error: empty file\n\n^\n"));
    fl_diag_fini(&d);
    fl_diag_init(&d, &s);
    fl_diag_error_plain(&d, "cannot read '%s'", "x.fl");
    CU_ASSERT(same("diagnostics", "plain", fl_buf_str(&d.out), "flc: error: cannot read 'x.fl'\n"));
    fl_diag_fini(&d);
    fl_sources_fini(&s);

    CU_ASSERT_STRING_EQUAL(fl_ast_kind_name(FL_AST_NAME), "name");
    CU_ASSERT_STRING_EQUAL(fl_ast_kind_name(FL_AST_PARALLEL_FOR), "parallel_for");
    CU_ASSERT_STRING_EQUAL(fl_ast_kind_name(FL_AST_CASE), "case");
}

/* Every tests/diag/parse_*.fl prints exactly its .expected (what `flc check` shows). */
static void test_diag_goldens(void) {
    DIR *d = opendir("tests/diag");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "parse_", 6) != 0 || len < 4 || strcmp(e->d_name + len - 3, ".fl") != 0) continue;
        char path[512], golden[512];
        snprintf(path, sizeof path, "tests/diag/%s", e->d_name);
        snprintf(golden, sizeof golden, "tests/diag/%.*s.expected", (int)(len - 3), e->d_name);
        FlErr err;
        size_t tlen, glen;
        char *text = fl_read_file(path, &tlen, &err);
        char *want = fl_read_file(golden, &glen, &err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(text);
        CU_ASSERT_PTR_NOT_NULL_FATAL(want);
        Parsed r;
        parse_text(&r, path, text, tlen);
        CU_ASSERT(r.nerrors > 0);
        CU_ASSERT(same("diagnostics", path, fl_buf_str(&r.diag.out), want));
        free(text);
        free(want);
        parsed_fini(&r);
        n++;
    }
    closedir(d);
    CU_ASSERT(n >= 20);
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("parse", NULL, NULL);
    CU_add_test(s, "precedence", test_precedence);
    CU_add_test(s, "assignment", test_assignment);
    CU_add_test(s, "literals", test_literals);
    CU_add_test(s, "slices", test_slices);
    CU_add_test(s, "lambda and calls", test_lambda_calls);
    CU_add_test(s, "imports", test_imports);
    CU_add_test(s, "comprehensions", test_comprehensions);
    CU_add_test(s, "compound statements", test_compound);
    CU_add_test(s, "python statements", test_python_statements);
    CU_add_test(s, "select", test_select);
    CU_add_test(s, "layout", test_layout);
    CU_add_test(s, "examples", test_examples);
    CU_add_test(s, "spans", test_spans);
    CU_add_test(s, "lexical errors", test_lexical_errors);
    CU_add_test(s, "indentation errors", test_indent_errors);
    CU_add_test(s, "bracket errors", test_bracket_errors);
    CU_add_test(s, "syntax errors", test_syntax_errors);
    CU_add_test(s, "checked constructs", test_semantic_syntax_errors);
    CU_add_test(s, "select errors", test_select_errors);
    CU_add_test(s, "recovery", test_recovery);
    CU_add_test(s, "limits", test_limits);
    CU_add_test(s, "diagnostics api", test_diag_api);
    CU_add_test(s, "diag goldens", test_diag_goldens);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}
