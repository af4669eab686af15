/* test_eval: the language's semantics, construct by construct. Each case compiles a snippet and
 * checks the IR it builds. Compile-time results are observed through the shape of a data var:
 * `layers.data(name="r", shape=[VALUE])`; run-time results (runtime control flow) by running the
 * program and reading what its `layers.Print(x, message="NAME")` ops would print. */
#include <CUnit/Basic.h>
#include "tests/cunit.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/ir.h"
#include "lang/eval.h"
#include "runtime/api.h"

#define HDR "import fluid\nfrom fluid import layers\n"

static FlBundle *compile_defs(const char *src, const char *const *defs, size_t ndefs) {
    FlCompileOptions opt = {.defines = defs, .ndefines = ndefs};
    FlBundle *b = NULL;
    FlBuf diag = {0};
    int n = fl_compile_source("tests/lang/snippet.fl", src, strlen(src), &opt, &b, &diag);
    if (n) fprintf(stderr, "unexpected errors:\n%s", fl_buf_str(&diag));
    fl_buf_free(&diag);
    CU_ASSERT_EQUAL(n, 0);
    return b;
}
static FlBundle *compile(const char *src) { return compile_defs(src, NULL, 0); }

/* The diagnostics of a snippet that must fail. */
static char *errors_of(const char *src) {
    FlBundle *b = NULL;
    FlBuf diag = {0};
    int n = fl_compile_source("tests/lang/snippet.fl", src, strlen(src), NULL, &b, &diag);
    CU_ASSERT(n > 0);
    CU_ASSERT_PTR_NULL(b);
    fl_ir_bundle_free(b);
    char *s = strdup(fl_buf_str(&diag));
    fl_buf_free(&diag);
    return s;
}

/* A snippet that must fail with (among others) a diagnostic holding `want`. */
static void check_error(const char *src, const char *want) {
    char *e = errors_of(src);
    if (!strstr(e, want)) fprintf(stderr, "expected '%s' in:\n%s\n", want, e);
    CU_ASSERT_PTR_NOT_NULL(strstr(e, want));
    free(e);
}

static int64_t result(const FlBundle *b) {
    if (!b) return -999;
    FlVarDesc *d = fl_ir_var_find(fl_ir_block(b->main, 0), "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    return d->shape[d->ndim - 1];
}

static void check_result(const char *src, int64_t want) {
    FlBundle *b = compile(src);
    int64_t got = result(b);
    if (got != want) fprintf(stderr, "snippet gave %lld, expected %lld:\n%s\n", (long long)got, (long long)want, src);
    CU_ASSERT_EQUAL(got, want);
    fl_ir_bundle_free(b);
}

/* A snippet whose compile-time condition `cond` (after the statements `setup`) must hold. */
static void check_true(const char *setup, const char *cond) {
    char src[4096];
    snprintf(src, sizeof src, HDR "%sr = layers.data(name='r', shape=[1 if (%s) else 2])\n", setup, cond);
    check_result(src, 1);
}

/* Snippets (each after HDR and the statements `setup`) that must fail: {source, a diagnostic it
 * must give}. */
typedef struct ErrCase {
    const char *src, *want;
} ErrCase;
static void check_errors(const char *setup, const ErrCase *cases, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char src[1024];
        snprintf(src, sizeof src, HDR "%s%s", setup, cases[i].src);
        check_error(src, cases[i].want);
    }
}

/* Runs a snippet (its startup program, then its main program once) and checks the values its
 * `layers.Print(X, message="NAME")` ops would print: `want` is "NAME=VALUE ..." (one element
 * each; an int tensor's exactly, as an int64). The Print ops are dropped and their inputs
 * fetched instead. */
static void check_run(const char *src, const char *want) {
    FlBundle *b = compile(src);
    if (!b) return;
    FlBlock *main = fl_ir_block(b->main, 0);
    char names[8][32], vars[8][128], text[8][32];
    double values[8];
    long long ints[8];
    int n = 0, used = 0;
    for (const char *p = want; n < 8 && sscanf(p, " %31[^=]=%31s%n", names[n], text[n], &used) == 2; p += used) {
        values[n] = strtod(text[n], NULL);
        ints[n] = strtoll(text[n], NULL, 10);
        n++;
    }
    CU_ASSERT_FATAL(n > 0);
    FlFetch fetch[8];
    for (int k = 0; k < n; k++) {
        vars[k][0] = 0;
        for (size_t i = 0; i < main->ops.len; i++) {
            FlOpDesc *op = main->ops.data[i];
            if (strcmp(op->type, "Print") != 0 || strcmp(fl_ir_op_get_string(op, "message", ""), names[k]) != 0)
                continue;
            snprintf(vars[k], sizeof vars[k], "%s", fl_ir_op_input1(op, "In"));
            fl_ir_op_remove(main, i);
            break;
        }
        if (!vars[k][0]) fprintf(stderr, "no Print with message '%s' in:\n%s\n", names[k], src);
        CU_ASSERT_FATAL(vars[k][0] != 0);
        fetch[k] = (FlFetch){vars[k], FL_TENSOR_INIT};
    }
    FlErr err = {{0}};
    FlLoadedProgram *prog = fl_program_from_bundle_take(b);
    FlExecutor *ex = NULL;
    FlScope *scope = fl_scope_new(NULL);
    bool ok = fl_executor_new(prog, NULL, &ex, &err) == FL_OK && fl_executor_run_startup(ex, scope, &err) == FL_OK &&
              fl_executor_run(ex, scope, NULL, 0, fetch, (size_t)n, &err) == FL_OK;
    if (!ok) fprintf(stderr, "run failed: %s\n%s\n", fl_error_message(&err), src);
    CU_ASSERT(ok);
    for (int k = 0; ok && k < n; k++) {
        FlDType dt = fetch[k].tensor.dtype;
        if (dt == FL_DT_INT64 || dt == FL_DT_INT32 || dt == FL_DT_BOOL) {
            long long got = (long long)fl_tensor_get_int(&fetch[k].tensor, 0);
            if (got != ints[k]) fprintf(stderr, "%s = %lld, expected %lld, in:\n%s\n", names[k], got, ints[k], src);
            CU_ASSERT_EQUAL(got, ints[k]);
            continue;
        }
        double got = fl_tensor_get(&fetch[k].tensor, 0);
        if (got != values[k]) fprintf(stderr, "%s = %g, expected %g, in:\n%s\n", names[k], got, values[k], src);
        CU_ASSERT_EQUAL(got, values[k]);
    }
    for (int k = 0; k < n; k++) fl_tensor_fini(&fetch[k].tensor);
    fl_scope_free(scope);
    fl_executor_free(ex);
    fl_program_free(prog);
}

static const FlOpDesc *op_at(const FlBundle *b, int block, const char *type, int nth) {
    const FlBlock *bl = fl_ir_block(b->main, block);
    for (size_t i = 0; i < bl->ops.len; i++)
        if (strcmp(bl->ops.data[i]->type, type) == 0 && nth-- == 0) return bl->ops.data[i];
    return NULL;
}
static int count(const FlBundle *b, int block, const char *type) {
    int n = 0;
    const FlBlock *bl = fl_ir_block(b->main, block);
    for (size_t i = 0; i < bl->ops.len; i++) n += strcmp(bl->ops.data[i]->type, type) == 0;
    return n;
}
static bool slot_has(const FlOpDesc *op, bool input, const char *slot, const char *var) {
    FlSlot *s = input ? fl_ir_op_input(op, slot) : fl_ir_op_output(op, slot);
    for (size_t i = 0; s && i < s->nargs; i++)
        if (strcmp(s->args[i], var) == 0) return true;
    return false;
}

/* ---- compile-time Python ---- */

static void test_functions(void) {
    check_result(HDR "def make_adder(n):\n"
                     "    def add(x, k=1):\n"
                     "        return x + n * k\n"
                     "    return add\n"
                     "f = make_adder(2)\n"
                     "r = layers.data(name='r', shape=[f(1, k=3) + f(0)])\n",
                 9);
    check_result(HDR "def f(*args, **kw):\n"
                     "    return len(args) * 10 + len(kw)\n"
                     "r = layers.data(name='r', shape=[f(1, 2, 3, a=1, b=2)])\n",
                 32);
    check_result(HDR "g = lambda a, b=4: a * b\n"
                     "r = layers.data(name='r', shape=[g(3) + g(1, b=1)])\n",
                 13);
    check_result(HDR "def fact(n):\n"
                     "    return 1 if n <= 1 else n * fact(n - 1)\n"
                     "r = layers.data(name='r', shape=[fact(5)])\n",
                 120);
    /* a call's locals are let go when it returns, unless something made in it keeps them: a
     * function (also one made in a comprehension or a class body inside it, or one level
     * further down) or a class; each here is used after the call that made it returned */
    check_true("def counter():\n    n = [0]\n    def inc():\n        n[0] += 1\n        return n[0]\n    return inc\n"
               "def deep(a):\n    def mid(b):\n        return lambda c: a * 100 + b * 10 + c\n    return mid\n"
               "def fs(k):\n    return [lambda y: y * k for i in range(3)]\n"
               "def klass(v):\n    class K:\n        def get(self):\n            return v\n    return K\n"
               "def total(m):\n    t = 0\n    def add(x):\n        nonlocal t\n        t += x\n    for i in range(m):\n"
               "        add(i)\n    return add, lambda: t\n"
               "def plain(x):\n    y = [x * 2 for _ in range(2)]\n    return y\n"
               "c = counter()\nc()\nd = deep(1)(2)\ng = fs(5)\nK = klass('v')\na, t = total(4)\na(10)\n"
               "for i in range(50):\n    plain(i)\n",
               "c() == 2 and d(3) == 123 and [h(2) for h in g] == [10, 10, 10] and K().get() == 'v' "
               "and t() == 16 and plain(4) == [8, 8]");
    /* keyword-only binding errors */
    char *e = errors_of("def f(a, b=2):\n    return a\nf(1, c=3)\n");
    CU_ASSERT_PTR_NOT_NULL(strstr(e, "f() got an unexpected keyword argument 'c'"));
    free(e);
}

static void test_control_flow(void) {
    check_result(HDR "s = 0\n"
                     "for i in range(10):\n"
                     "    if i == 3:\n"
                     "        continue\n"
                     "    if i == 6:\n"
                     "        break\n"
                     "    s += i\n"
                     "else:\n"
                     "    s = 1000\n"
                     "r = layers.data(name='r', shape=[s])\n",
                 12);
    check_result(HDR "n = 0\n"
                     "while n < 7:\n"
                     "    n = n + 2\n"
                     "r = layers.data(name='r', shape=[n])\n",
                 8);
    check_result(HDR "x = 5\n"
                     "if x > 10:\n    y = 1\nelif x > 3:\n    y = 2\nelse:\n    y = 3\n"
                     "r = layers.data(name='r', shape=[y])\n",
                 2);
    check_result(HDR "r = layers.data(name='r', shape=[(3 if not (1 and 0) else 4) + (0 or 5)])\n", 8);
}

static void test_values(void) {
    check_result(HDR "a, (b, c) = 1, (2, 3)\n"
                     "[d, e] = [4, 5]\n"
                     "r = layers.data(name='r', shape=[a + b + c + d + e])\n",
                 15);
    check_result(HDR "d = {'a': [1, 2, 3], 'b': (4, 5)}\n"
                     "d['c'] = 10\n"
                     "l = d['a'][1:] + list(d['b'])\n"
                     "l.append(d.get('c'))\n"
                     "r = layers.data(name='r', shape=[sum(l) + len(d) + l[-1]])\n",
                 37);
    check_result(HDR "s = ', '.join(['a', 'b']) + '%d' % 7\n"
                     "r = layers.data(name='r', shape=[len(s) if s.startswith('a, b') else 1])\n",
                 5);
    check_result(HDR "pairs = list(zip([1, 2, 3], [10, 20, 30]))\n"
                     "t = 0\n"
                     "for i, (a, b) in enumerate(pairs):\n"
                     "    t += i * b\n"
                     "r = layers.data(name='r', shape=[t + max(3, 9) - min([4, 2])])\n",
                 87);
    check_result(HDR "r = layers.data(name='r', shape=[7 // 2 * 10 + -7 % 3 + 2 ** 3])\n", 40);
    check_result(HDR "r = layers.data(name='r', shape=[int(7 / 2 * 2) + (1 if 'b' in {'a': 1, 'b': 2} else 0)])\n", 8);
}

/* Values that hold themselves or nest deeply: str, print, == and `in` neither recurse without end
 * nor overflow the C stack. */
static void test_nesting(void) {
    check_true("x = [1]\nx.append(x)\nd = {}\nd['a'] = d\nt = ([],)\nt[0].append(t)\n",
               "str(x) == '[1, [...]]' and str(d) == \"{'a': {...}}\" and str(t) == '([(...)],)'");
    check_true("x = [1]\nx.append(x)\n", "x == x and x in [x]");
    check_error(HDR "x = [1]\nx.append(x)\ny = [1]\ny.append(y)\nb = x == y\n",
                "snippet.fl:7:5: error: cannot compare: the values are nested too deeply");
    check_error(HDR "x = [1]\nx.append(x)\ny = [1]\ny.append(y)\nb = x in [0, y]\n",
                "snippet.fl:7:5: error: cannot compare");
    const char *deep = "x = [1]\nfor i in range(200000):\n    x = [x]\n";
    char src[512];
    snprintf(src, sizeof src, HDR "%sprint(x)\n", deep);
    check_error(src, "snippet.fl:6:1: error: cannot convert to a string: the value is nested too deeply");
    snprintf(src, sizeof src, HDR "%ss = str(x)\n", deep);
    check_error(src, "snippet.fl:6:5: error: cannot convert to a string");
    snprintf(src, sizeof src, HDR "%sy = [1]\nfor i in range(200000):\n    y = [y]\nb = x == y\n", deep);
    check_error(src, "snippet.fl:9:5: error: cannot compare: the values are nested too deeply");
    snprintf(src, sizeof src, HDR "%ss = '%%s' %% (x,)\n", deep);
    check_error(src, "snippet.fl:6:5: error: cannot convert to a string");
    snprintf(src, sizeof src, HDR "%ss = '{}'.format(x)\n", deep);
    check_error(src, "snippet.fl:6:5: error: cannot convert to a string");
    /* the repr of a shared (not cyclic) list is written out each time */
    check_true("a = [1]\nb = [a, a]\n", "str(b) == '[[1], [1]]'");
}

/* A dict past a few keys finds them through an index of each key's bytes: it must agree with ==
 * (1, 1.0 and True are one key; a NaN only itself; lists and dicts as keys by a scan), keep the
 * insertion order, and follow pop's moving of the keys after the one removed. */
static void test_big_dicts(void) {
    const char *setup = "d = {}\n"
                        "for i in range(100):\n    d['k' + str(i)] = i\n"
                        "for i in range(100):\n    d[i] = -i\n"
                        "d[1.0] = 'one'\nd[True] = 'true'\nd[2.5] = 'f'\nd[-0.0] = 'zero'\n"
                        "d[(1, ('a', None))] = 't'\nd[None] = 'n'\n"
                        "nan = float('nan')\nd[nan] = 'nan'\nd[2.0 ** 63] = 'f63'\nd[2 ** 62] = 'big'\n";
    check_true(setup, "len(d) == 206 and d[1] == 'true' and d[1.0] == 'true' and d[True] == 'true' "
                      "and d[0] == 'zero' and d[False] == 'zero' and d[2.5] == 'f' and 2.4 not in d "
                      "and d[(1.0, ('a', None))] == 't' and (1, ('a', 0)) not in d and d[None] == 'n' "
                      "and d[nan] == 'nan' and float('nan') not in d and d['k42'] == 42 and 'k100' not in d "
                      "and d[2 ** 62] == 'big' and d[float(2 ** 62)] == 'big' and d[2.0 ** 63] == 'f63' "
                      "and 9223372036854775807 not in d");
    check_true(setup, "list(d)[:3] == ['k0', 'k1', 'k2'] and list(d)[100:102] == [0, 1] "
                      "and list(d)[-1] == 2 ** 62");
    char more[1024];
    snprintf(more, sizeof more, "%sfor i in range(0, 100, 2):\n    d.pop('k' + str(i))\n"
             "d.pop(5)\nd['k0'] = 'again'\n", setup);
    check_true(more, "len(d) == 156 and d['k1'] == 1 and 'k2' not in d and d['k99'] == 99 and d[4] == -4 "
                     "and 5 not in d and d[6] == -6 and d[nan] == 'nan' and list(d)[-1] == 'k0' "
                     "and d['k0'] == 'again' and list(d)[:2] == ['k1', 'k3'] and d[2 ** 62] == 'big'");
    check_true("d = {}\nfor i in range(40):\n    d[str(i)] = i\n",
               "d == {str(i): i for i in range(40)} and d != {str(i): i + 1 for i in range(40)}");
}

/* Ints are int64 and exact: an overflow anywhere is a located error, sum() adds in int64, 0 to a
 * negative power is Python's ZeroDivisionError, and ** by squaring takes no time for 1 ** huge. */
static void test_int_semantics(void) {
    check_true("", "sum([2**53 + 1]) == 2**53 + 1 and sum([2**53, 1]) - 2**53 == 1 and sum([1, 2.5]) == 3.5");
    check_true("", "sum([True, 2], 10) == 13 and abs(True) == 1 and abs(-9223372036854775807) == 9223372036854775807");
    check_true("", "1 ** 1000000000000000000 == 1 and (-1) ** 999999999999999999 == -1 and 3 ** 39 == 4052555153018976267");
    check_true("", "2 ** -1 == 0.5 and 0 ** 0 == 1 and (-9223372036854775807 - 1) % -1 == 0 and 7 // -1 == -7");
    static const ErrCase errs[] = {
        {"v = abs(-9223372036854775807 - 1)\n", "snippet.fl:3:5: error: integer overflow in abs()"},
        {"v = sum([9223372036854775807, 1])\n", "snippet.fl:3:5: error: integer overflow in sum()"},
        {"v = list(enumerate([1, 2], 9223372036854775807))\n", "snippet.fl:3:10: error: integer overflow in enumerate()"},
        {"v = 0 ** -1\n", "snippet.fl:3:5: error: 0 cannot be raised to a negative power"},
        {"v = 0.0 ** -2\n", "snippet.fl:3:5: error: 0.0 cannot be raised to a negative power"},
        {"v = 9223372036854775807 + 1\n", "snippet.fl:3:5: error: integer overflow"},
        {"v = -9223372036854775807 - 2\n", "snippet.fl:3:5: error: integer overflow"},
        {"v = 4294967296 * 4294967296\n", "snippet.fl:3:5: error: integer overflow"},
        {"v = (-9223372036854775807 - 1) // -1\n", "snippet.fl:3:5: error: integer overflow"},
        {"v = 3 ** 40\n", "snippet.fl:3:5: error: integer overflow"},
        {"v = -(-9223372036854775807 - 1)\n", "snippet.fl:3:5: error: integer overflow"},
    };
    check_errors("", errs, FL_ARRAY_LEN(errs));
}

/* Sizes from user numbers are checked before anything is made: range's length is computed
 * without overflow, a list or string past FL_MAX_LEN elements is an error, and so is a split into
 * more parts than its dim has (it made every output first, 2**40 of them). */
static void test_size_limits(void) {
    check_true("", "len(range(0, 9223372036854775807, 9223372036854775807)) == 1 and "
                   "len(range(5, -9223372036854775807 - 1, -9223372036854775807)) == 2 and "
                   "list(range(9223372036854775806, 9223372036854775807)) == [9223372036854775806] and "
                   "list(range(10, 0, -3)) == [10, 7, 4, 1] and len(range(-3)) == 0");
    check_true("x = [1, 2]\nx.extend(x)\n", "x == [1, 2, 1, 2] and len([] * 1000000000000000000) == 0 and 'ab' * -1 == ''");
    static const ErrCase errs[] = {
        {"x = range(0, 9223372036854775807, 2)\n", "snippet.fl:3:5: error: range() of 4611686018427387904 elements is too large"},
        {"x = range(-9223372036854775807 - 1, 9223372036854775807)\n", "error: range() of 18446744073709551615 elements"},
        {"x = [0] * 100000000\n", "snippet.fl:3:5: error: a list * 100000000 would hold more than 10000000 elements"},
        {"x = [0] * 1000000 * 20\n", "snippet.fl:3:5: error: a list * 20 would hold more than 10000000 elements"},
        {"x = 'ab' * 6000000\n", "snippet.fl:3:5: error: a str * 6000000 would hold more than 10000000 characters"},
        {"x = [0] * 6000000\ny = x + x\n", "snippet.fl:4:5: error: a list may hold at most 10000000 elements; this one would hold 12000000"},
        {"x = [0] * 6000000\nx.extend(x)\n", "snippet.fl:4:1: error: a list may hold at most 10000000 elements"},
        {"s = 'a' * 6000000\ns = s + s\n", "snippet.fl:4:5: error: a str may hold at most 10000000 characters"},
        {"x = layers.data(name='x', shape=[4])\ny = layers.split(x, num_or_sections=2**40)\n",
         "snippet.fl:4:5: error: split() cannot split dim 1 of size 4 into 1099511627776 parts"},
        {"x = layers.data(name='x', shape=[4])\ny = layers.split(x, num_or_sections='2')\n",
         "snippet.fl:4:5: error: split() num_or_sections must be an int, found str"},
        {"x = layers.data(name='x', shape=[4])\ny = layers.split(x, [1, 1, 1, 1, 1])\n",
         "snippet.fl:4:5: error: split() needs 1 to 4 sections for dim 1 of size 4, found 5"},
        {"import _core\nx = layers.data(name='x', shape=[4])\ny = _core.op('split', X=x, axis=1, num=2**40)\n",
         "snippet.fl:5:5: error: split: output 'Out' would hold 1099511627776 vars; it takes 1 to 65536"},
        {"import _core\nx = layers.data(name='x', shape=[4])\ny = _core.op('split', X=x, axis=1, _n_out=2**40)\n",
         "snippet.fl:5:5: error: split: output 'Out' would hold 1099511627776 vars"},
    };
    check_errors("", errs, FL_ARRAY_LEN(errs));
}

/* Var names the IR reserves are rejected where the program gives them; _core.op builds no
 * gradient op (append_backward does, with the inputs they need: sum_grad without its Out@GRAD
 * crashed the runtime) and no differentiable op writing one of its own inputs. */
static void test_var_names_and_aliasing(void) {
    static const ErrCase errs[] = {
        {"x = layers.data(name='@EMPTY@', shape=[2])\n",
         "snippet.fl:3:5: error: '@EMPTY@' cannot name a var: the IR reserves it for an argument that holds no value"},
        {"import _core\nx = _core.data('@EMPTY@', [2])\n", "snippet.fl:4:5: error: '@EMPTY@' cannot name a var"},
        {"x = layers.data(name='', shape=[2])\n", "snippet.fl:3:5: error: '' cannot name a var: a name must not be empty"},
        {"x = layers.data(name='x', shape=[2])\ny = layers.fc(x, size=2, param_attr=fluid.ParamAttr(name='@EMPTY@'))\n",
         "snippet.fl:4:5: error: '@EMPTY@' cannot name a var"},
        {"import _core\nw = _core.global_var('@EMPTY@', [1], 0.0)\n", "snippet.fl:4:5: error: '@EMPTY@' cannot name a var"},
        {"import _core\nx = layers.data(name='x', shape=[2])\n_core.op('sum_grad', X=x, Out=x)\n",
         "snippet.fl:5:1: error: 'sum_grad' is a gradient op: append_backward makes those"},
        {"import _core\nx = layers.fill_constant(shape=[2], dtype='float32', value=1.0)\n_core.op('relu', X=x, Out=x)\n",
         "snippet.fl:5:1: error: relu: output 'Out' is var 'fill_constant_0.tmp_0', which is also its input 'X'; relu cannot work in place"},
        {"import _core\nx = layers.fill_constant(shape=[2], dtype='float32', value=1.0)\n_core.op('sum', X=[x, x], Out=x)\n",
         "snippet.fl:5:1: error: sum: output 'Out' is var 'fill_constant_0.tmp_0', which is also its input 'X'"},
    };
    check_errors("", errs, FL_ARRAY_LEN(errs));
    /* names holding @GRAD are the user's, and ops without a gradient may work in place */
    FlBundle *b = compile(HDR "x = layers.data(name='w@GRAD', shape=[2])\n"
                              "y = layers.fc(x, size=2)\n"
                              "i = layers.fill_constant(shape=[1], dtype='float32', value=1.0)\n"
                              "layers.increment(i)\n");
    CU_ASSERT_PTR_NOT_NULL(b);
    fl_ir_bundle_free(b);
}

/* The layers check the ints they compute with (a conv2d with groups=0 said "modulo by zero") and
 * stop at their first error, so a wrong argument gives one message at the user's call. */
static void test_layer_arguments(void) {
    static const ErrCase errs[] = {
        {"y = layers.fc(x, size=0)\n", "snippet.fl:4:5: error: fc() size must be >= 1, found 0"},
        {"y = layers.fc(x, size=2, num_flatten_dims='1')\n", "snippet.fl:4:5: error: fc() num_flatten_dims must be an int, found str"},
        {"y = layers.conv2d(x, num_filters=4, filter_size=3, stride=0)\n", "snippet.fl:4:5: error: conv2d() stride must be >= 1, found 0"},
        {"y = layers.conv2d(x, num_filters=4, filter_size=3, dilation=[1, 0])\n", "snippet.fl:4:5: error: conv2d() dilation must be >= 1, found 0"},
        {"y = layers.conv2d(x, num_filters=4, filter_size=3, padding=-1)\n", "snippet.fl:4:5: error: conv2d() padding must be >= 0, found -1"},
        {"y = layers.conv2d(x, num_filters=0, filter_size=3)\n", "snippet.fl:4:5: error: conv2d() num_filters must be >= 1, found 0"},
        {"y = layers.conv2d(x, num_filters=4, filter_size=3, groups=2)\n", "snippet.fl:4:5: error: conv2d() input channels (3) must be divisible by groups (2)"},
        {"y = layers.pool2d(x, pool_size=0)\n", "snippet.fl:4:5: error: pool2d() pool_size must be >= 1, found 0"},
        {"y = layers.pool2d(x, pool_size=2, pool_padding=-1)\n", "snippet.fl:4:5: error: pool2d() pool_padding must be >= 0, found -1"},
    };
    check_errors("x = layers.data(name='x', shape=[3, 8, 8])\n", errs, FL_ARRAY_LEN(errs));
    /* global pooling ignores pool_size, as Fluid does: SE-ResNeXt's squeeze passes pool_size=0 */
    check_result(HDR "x = layers.data(name='x', shape=[3, 8, 8])\n"
                     "y = layers.pool2d(x, pool_size=0, pool_type='avg', global_pooling=True)\n"
                     "r = layers.data(name='r', shape=[y.shape[2] + 10 * y.shape[3] + 100 * y.shape[1]])\n",
                 311);
    /* an error inside a loop of a layer (fc's loop over its inputs) ends the layer too */
    char *e = errors_of(HDR "x = layers.data(name='x', shape=[4])\n"
                            "y = layers.fc(x, size=2, param_attr=fluid.ParamAttr(name='@EMPTY@'))\n");
    CU_ASSERT_PTR_NOT_NULL(strstr(e, "'@EMPTY@' cannot name a var"));
    CU_ASSERT_PTR_NULL(strstr(e, "sum: no inputs"));
    free(e);
}

/* int64 values stay exact from the .fl to the tensor, beyond 2^53 where a double rounds: list
 * constants, fill_constant, numbers meeting an int64 Var, a global var's, a Constant
 * initializer's and a NumpyArrayInitializer's values. */
static void test_int64_exact(void) {
    check_run(HDR "a = layers.assign([9223372036854775807, 2**53 + 1])\nlayers.Print(a, message='a')\n"
                  "a1 = layers.slice(a, axes=[0], starts=[1], ends=[2])\nlayers.Print(a1, message='a1')\n"
                  "b = layers.fill_constant(shape=[1], dtype='int64', value=2**53 + 1)\nlayers.Print(b, message='b')\n"
                  "c = layers.fill_constant(shape=[1], dtype='int64', value=-9223372036854775807 - 1)\n"
                  "layers.Print(c, message='c')\n"
                  "d = b + (2**53 + 1)\nlayers.Print(d, message='d')\n"
                  "g = layers.create_global_var(shape=[1], value=2**53 + 3, dtype='int64')\nlayers.Print(g, message='g')\n"
                  "p = layers.create_parameter(shape=[1], dtype='int64', "
                  "default_initializer=fluid.initializer.Constant(2**53 + 5))\nlayers.Print(p, message='p')\n"
                  "f = layers.fill_constant(shape=[1], dtype='float32', value=2**53 + 1)\nlayers.Print(f, message='f')\n"
                  "q = layers.create_parameter(shape=[2], dtype='int64', "
                  "default_initializer=fluid.initializer.NumpyArrayInitializer([2**53 + 7, 3]))\n"
                  "layers.Print(q, message='q')\n",
              "a=9223372036854775807 a1=9007199254740993 b=9007199254740993 c=-9223372036854775808 "
              "d=18014398509481986 g=9007199254740995 p=9007199254740997 f=9007199254740992 "
              "q=9007199254740999 3");
    /* a hand-made twin that is not the float's value is refused where the op is checked */
    check_error(HDR "import _core\n"
                    "y = _core.op('fill_constant', shape=[1], dtype='int64', value=1.0, int_value=[2])\n",
                "fill_constant: attribute 'int_value' value 0 is 2, but 'value' holds 1: they must be the same number");
}

/* embedding's padding_idx follows Fluid's rule, a row in [-rows, rows) (a negative one from the
 * end); anything else is refused with the value the program wrote. */
static void test_embedding_padding_idx(void) {
    static const ErrCase errs[] = {
        {"e = layers.embedding(w, size=[100, 4], padding_idx=-101)\n",
         "snippet.fl:4:5: error: embedding() padding_idx must be an int in [-100, 100) for a table of 100 rows, found -101"},
        {"e = layers.embedding(w, size=[100, 4], padding_idx=-102)\n", "rows, found -102"},
        {"e = layers.embedding(w, size=[100, 4], padding_idx=100)\n", "rows, found 100"},
        {"e = layers.embedding(w, size=[100, 4], padding_idx=2.5)\n", "padding_idx must be an int, found 2.5"},
    };
    check_errors("w = layers.data(name='w', shape=[1], dtype='int64')\n", errs, FL_ARRAY_LEN(errs));
    FlBundle *b = compile(HDR "w = layers.data(name='w', shape=[1], dtype='int64')\n"
                              "a = layers.embedding(w, size=[100, 4], padding_idx=-100)\n"
                              "b = layers.embedding(w, size=[100, 4], padding_idx=99)\n"
                              "c = layers.embedding(w, size=[100, 4], padding_idx=-1)\n"
                              "d = layers.embedding(w, size=[100, 4])\n");
    if (!b) return;
    static const int64_t want[] = {0, 99, 99, -1};
    for (int k = 0; k < 4; k++)
        CU_ASSERT_EQUAL(fl_ir_op_get_int(op_at(b, 0, "lookup_table", k), "padding_idx", -7), want[k]);
    fl_ir_bundle_free(b);
}

/* The layers with attributes, fills, reductions and indexing: bad arguments are located errors at
 * the call; name= names the outputs as Fluid does; act= takes the parametrised activations; prelu
 * makes its alpha parameter of the mode's shape; unstack makes one output per slice. */
static void test_more_layers(void) {
    static const ErrCase errs[] = {
        {"y = layers.prelu(x, mode='rows')\n", "snippet.fl:4:5: error: prelu() mode must be 'all', 'channel' or 'element', found 'rows'"},
        {"y = layers.clip(x, 1.0, 0.5)\n", "snippet.fl:4:5: error: clip() min (1.0) must not be above max (0.5)"},
        {"y = layers.clip_by_norm(x, max_norm=0.0)\n", "snippet.fl:4:5: error: clip_by_norm() max_norm must be > 0, found 0.0"},
        {"y = layers.brelu(x, t_min=2.0, t_max=1.0)\n", "snippet.fl:4:5: error: brelu() t_min (2.0) must not be above t_max (1.0)"},
        {"y = layers.soft_relu(x, threshold=0.0)\n", "snippet.fl:4:5: error: soft_relu() threshold must be > 0, found 0.0"},
        {"y = layers.leaky_relu(x, name=3)\n", "snippet.fl:4:5: error: leaky_relu() name must be a string, found int"},
        {"y = layers.slice(x, axes=[1], starts=[5], ends=[9])\n", "snippet.fl:4:5: error: slice: the slice [5:9] of dim 1 (size 3) is empty"},
        {"y = layers.squeeze(x, axes=[1])\n", "snippet.fl:4:5: error: squeeze: dim 1 of X [-1, 3, 8, 8] has size 3; only a size-1 dim can be squeezed"},
        {"y = layers.one_hot(x, depth=0)\n", "snippet.fl:4:5: error: one_hot() depth must be >= 1, found 0"},
        {"y = layers.unstack(x, axis=0)\n", "snippet.fl:4:5: error: unstack() needs num when dim 0 is unknown (shape [-1, 3, 8, 8])"},
        {"y = layers.crop(x)\n", "snippet.fl:4:5: error: crop() needs shape: a Variable or a list of ints"},
        {"y = layers.pad(x, paddings=[1, 1])\n", "snippet.fl:4:5: error: pad: paddings must hold 2 values per dim of X [-1, 3, 8, 8] (8), found 2"},
        {"y = layers.expand(x, expand_times=[1, 0, 1, 1])\n", "snippet.fl:4:5: error: expand: expand_times[1] is 0 (expected >= 1)"},
        {"y = layers.flatten(x, axis=5)\n", "snippet.fl:4:5: error: flatten() axis must be between 0 and the rank 4, found 5"},
        {"y = layers.gather(x, x)\n", "snippet.fl:4:5: error: gather: Index must be int32 or int64, found float32"},
        {"y = layers.fill_constant_batch_size_like(x, shape=[-1, 3], dtype='float32', value=1.0, input_dim_idx=4)\n",
         "snippet.fl:4:5: error: fill_constant_batch_size_like: input_dim_idx 4 is not a dim of the input [-1, 3, 8, 8]"},
        {"y = layers.reduce_max(x, dim=[4])\n", "snippet.fl:4:5: error: reduce_max: axis 4 is out of range for [-1, 3, 8, 8]"},
        {"y = layers.gaussian_random([2, 3], std=-1.0)\n", "snippet.fl:4:5: error: gaussian_random() std must be >= 0, found -1.0"},
    };
    check_errors("x = layers.data(name='x', shape=[3, 8, 8])\n", errs, FL_ARRAY_LEN(errs));
    FlBundle *b = compile(HDR "x = layers.data(name='x', shape=[3, 8, 8])\n"
                              "a = layers.leaky_relu(x, alpha=0.1, name='lr')\n"
                              "b = layers.leaky_relu(a, name='lr')\n"
                              "h = layers.fc(x, size=4, act='hard_sigmoid')\n"
                              "p = layers.prelu(x, mode='channel')\n"
                              "q = layers.prelu(x, mode='element', param_attr=fluid.ParamAttr(name='alpha_e'))\n"
                              "u = layers.unstack(layers.reshape(h, [-1, 4, 1]), axis=1)\n"
                              "f = layers.fill_constant_batch_size_like(x, shape=[-1, 6], dtype='int64', value=2)\n"
                              "z = layers.zeros([2, 2], 'float32')\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    const FlBlock *m = fl_ir_block(b->main, 0);
    CU_ASSERT_PTR_NOT_NULL(fl_ir_var_find(m, "lr.tmp_0"));
    CU_ASSERT_PTR_NOT_NULL(fl_ir_var_find(m, "lr.tmp_1"));
    CU_ASSERT_EQUAL(count(b, 0, "leaky_relu"), 2);
    CU_ASSERT_EQUAL(count(b, 0, "hard_sigmoid"), 1);
    FlVarDesc *al = fl_ir_var_find(m, "prelu_0.w_0");
    CU_ASSERT(al && al->persistable && al->ndim == 4 && al->shape[1] == 3 && al->shape[2] == 1);
    FlVarDesc *ae = fl_ir_var_find(m, "alpha_e");
    CU_ASSERT(ae && ae->ndim == 4 && ae->shape[0] == 1 && ae->shape[3] == 8);
    CU_ASSERT_EQUAL(count(b, 0, "unstack"), 1);
    int nout = 0;
    for (size_t i = 0; i < m->ops.len; i++)
        if (strcmp(m->ops.data[i]->type, "unstack") == 0) nout = (int)fl_ir_op_output(m->ops.data[i], "Y")->nargs;
    CU_ASSERT_EQUAL(nout, 4);
    CU_ASSERT_EQUAL(count(b, 0, "fill_constant_batch_size_like"), 1);
    fl_ir_bundle_free(b);
}

/* ==, ordering, min and max compare ints exactly (not through a double); dicts compare by
 * content. */
static void test_exact_compare(void) {
    check_true("", "not (2**53 == 2**53 + 1) and 2**53 < 2**53 + 1 and 2**53 + 1 != 9007199254740992.0");
    check_true("", "max(2**53 + 1, 2**53) == 2**53 + 1 and min([2**53 + 1, 2**53]) == 2**53");
    check_true("", "1 == 1.0 and 9223372036854775807 > 9.2e18 and -9223372036854775807 - 1 < -9.2e18 and 9223372036854775807 < 9223372036854775808.0 and 0.5 > 0 and -0.5 < 0");
    check_true("", "{1: 2, 'a': [3]} == {'a': [3], 1: 2} and {1: 2} != {1: 3} and {1: 2} != {2: 2}");
}

/* printf-style formatting with Python's conversions, flags, width and precision, and Python's
 * errors for a value a conversion cannot show, too few and too many arguments. */
static void test_format(void) {
    check_true("s = '%d|%5d|%-5d|%05d|%x|%X|%o|%#x|%e|%.2f|%g|%c|%c|%s|%r|%%|%+d|%i|%.1s' % "
               "(3.7, 42, 42, -42, -255, 255, 8, 255, 12345.678, 3.14159, 0.0001, 65, 'z', [1, 'a'], 'q', 5, True, 'ab')\n",
               "s == \"3|   42|42   |-0042|-ff|FF|10|0xff|1.234568e+04|3.14|0.0001|A|z|[1, 'a']|'q'|%|+5|1|a\"");
    check_true("", "'%s' % [1, 2] == '[1, 2]' and '%s' % ((1, 2),) == '(1, 2)' and '100%%' % () == '100%'");
    static const ErrCase errs[] = {
        {"s = '%d' % 'a'\n", "snippet.fl:3:5: error: %d format: a number is required, found str"},
        {"s = '%x' % 1.5\n", "error: %x format: an int is required, found float"},
        {"s = '%f' % None\n", "error: %f format: a number is required, found None"},
        {"s = '%e' % 'a'\n", "error: %e format: a number is required, found str"},
        {"s = '%g' % [1]\n", "error: %g format: a number is required, found list"},
        {"s = '%i' % 'a'\n", "error: %i format: a number is required, found str"},
        {"s = '%c' % 'ab'\n", "error: %c format: a single character or an int from 1 to 127 is required"},
        {"s = '%d' % float('inf')\n", "error: %d format: cannot convert the float inf to an int"},
        {"s = '%s %s' % (1,)\n", "error: not enough arguments for the format string (1 given)"},
        {"s = '%s' % (1, 2)\n", "error: not all arguments converted during string formatting (2 given, 1 used)"},
        {"s = 'abc' % 5\n", "error: not all arguments converted"},
        {"s = '%y' % 1\n", "error: unsupported format character 'y'"},
        {"s = '50%' % ()\n", "error: incomplete format"},
        {"s = '%(a)s' % {'a': 1}\n", "error: '(' in a format conversion is not supported"},
        {"s = '%99999d' % 1\n", "error: a format width or precision must be at most 9999"},
    };
    check_errors("", errs, FL_ARRAY_LEN(errs));
}

static void test_comprehensions(void) {
    check_result(HDR "x = 100\n"
                     "l = [x * 2 for x in range(5) if x % 2 == 0]\n" /* [0, 4, 8]; x does not leak */
                     "r = layers.data(name='r', shape=[sum(l) + x])\n",
                 112);
    check_result(HDR "pairs = [(i, j) for i in range(4) for j in range(i) if (i + j) % 2 == 1]\n" /* 10 21 30 32 */
                     "r = layers.data(name='r', shape=[len(pairs) * 100 + sum([i * 10 + j for i, j in pairs])])\n",
                 493);
    /* str() of containers quotes the strings inside, as Python does */
    check_result(HDR "s = str({'a': 1, 2: ['b', ('c',)]})\n"
                     "r = layers.data(name='r', shape=[len(s) if s == \"{'a': 1, 2: ['b', ('c',)]}\" else 1])\n",
                 26);
    check_result(HDR "d = {k: len(k) for k in ['a', 'bb', 'ccc'] if k != 'bb'}\n"
                     "sq = {i: i * i for i in range(4)}\n"
                     "r = layers.data(name='r', shape=[d['ccc'] * 100 + len(d) * 10 + sq[3]])\n",
                 329);
    check_result(HDR "grid = [[i * 3 + j for j in range(3)] for i in range(2)]\n"
                     "flat = [v for row in grid for v in row if v > 1]\n" /* the first iterable is outer */
                     "rows = [row for row in [row for row in grid]]\n"
                     "r = layers.data(name='r', shape=[sum(flat) * 10 + len(rows)])\n",
                 142);
    check_result(HDR "fs = [lambda: i for i in range(3)]\n" /* one scope: late binding, as in Python */
                     "def scaled(k):\n"
                     "    return [k * v for v in [1, 2] + [c for c in [3]]]\n"
                     "r = layers.data(name='r', shape=[fs[0]() * 100 + sum(scaled(2)) + len([c for c in 'abc'])])\n",
                 215);
    /* Vars: layers built in a comprehension */
    FlBundle *b = compile(HDR "x = layers.data(name='x', shape=[8])\n"
                              "hs = [layers.fc(x, size=s) for s in [4, 3, 2]]\n"
                              "total = {h.name: h for h in hs}\n"
                              "r = layers.data(name='r', shape=[len(total) + hs[2].shape[1] * 10])\n");
    CU_ASSERT_EQUAL(result(b), 23);
    CU_ASSERT_EQUAL(count(b, 0, "mul"), 3);
    fl_ir_bundle_free(b);
    check_error(HDR "x = layers.data(name='x', shape=[4])\nl = [v for v in x]\n",
                "snippet.fl:4:17: error: a comprehension cannot iterate over a tensor Var");
    check_error(HDR "ch = fluid.make_chan()\nl = [v for v in ch]\n", "a comprehension cannot iterate over a channel");
    check_error("l = [i for i in range(3)]\nprint(i)\n", "2:7: error: unknown name 'i'");
    check_error("d = {[k]: 1 for k in range(2)}\n", "1:6: error: a list cannot be a dict key");
    check_error("l = [1 for x in 5]\n", "1:17: error: 'int' object is not iterable");
    check_error("l = [0 for a in range(2000) for b in range(2000) if False]\n",
                "1:5: error: compile-time loops and comprehensions ran 1,000,000 iterations in this compilation, the "
                "most a program may; this comprehension would run more (is it infinite?)");
}

static void test_chained_assignment(void) {
    check_result(HDR "a = b = 3\n"
                     "x, y = z = (1, 2)\n"
                     "r = layers.data(name='r', shape=[a + b + x * 10 + y * 100 + len(z) * 1000])\n",
                 2216);
    /* one value, the targets bound left to right: i first, then l[i] with the new i */
    check_result(HDR "p = q = []\n"
                     "q.append(1)\n"
                     "i = 0\n"
                     "l = [0, 0]\n"
                     "i = l[i] = 1\n"
                     "r = layers.data(name='r', shape=[len(p) * 100 + l[1] * 10 + l[0]])\n",
                 110);
    FlBundle *b = compile(HDR "x = y = layers.data(name='x', shape=[4])\n"
                              "r = layers.data(name='r', shape=[1 if x is y else 0])\n");
    CU_ASSERT_EQUAL(result(b), 1);
    fl_ir_bundle_free(b);
    /* after a failed target the rest are bound quietly: no "unknown name 'c'" */
    char *e = errors_of("a, b = c = [1, 2, 3]\nprint(c)\n");
    CU_ASSERT_PTR_NOT_NULL(strstr(e, "cannot unpack 3 values into 2 names"));
    CU_ASSERT_PTR_NULL(strstr(e, "unknown name 'c'"));
    free(e);
}

static void test_import_star(void) {
    /* no __all__: every name not starting with '_' */
    check_result(HDR "from helper_mod import *\n"
                     "r = layers.data(name='r', shape=[triple(2) + K])\n",
                 106);
    check_error("from helper_mod import *\nprint(_PRIVATE)\n", "unknown name '_PRIVATE'");
    /* __all__ says which */
    check_result(HDR "from helper_all import *\n"
                     "r = layers.data(name='r', shape=[shown + len(_listed)])\n",
                 9);
    check_error("from helper_all import *\nprint(unlisted)\n", "unknown name 'unlisted'");
    /* the stdlib */
    FlBundle *b = compile("from fluid.layers import *\n"
                          "x = data(name='x', shape=[3])\n"
                          "y = fc(x, size=2, act='relu')\n");
    CU_ASSERT_EQUAL(count(b, 0, "relu"), 1);
    fl_ir_bundle_free(b);
    check_error("from fluid.layers import *\n_op('relu')\n", "unknown name '_op'");
    check_error("from helper_bad_all import *\n", "module 'helper_bad_all' has no attribute or submodule 'missing'");
    check_error("def f():\n    from helper_mod import *\n", "2:5: error: 'import *' is only allowed at module level");
}

/* fluid.layers is a package of Fluid's modules: each layer is in the module Fluid puts it in, the
 * package re-exports them (the same objects), and `import *` of it binds the layers, not the
 * module names (io would hide fluid.io). */
static void test_layers_modules(void) {
    FlBundle *b = compile("import fluid.layers.nn as nn\n"
                          "from fluid.layers.io import data\n"
                          "x = data(name='x', shape=[3])\n"
                          "y = nn.fc(x, size=2, act='relu')\n");
    CU_ASSERT_EQUAL(count(b, 0, "relu"), 1);
    fl_ir_bundle_free(b);
    check_true("import fluid.layers.tensor as T\nimport fluid.layers.control_flow as CF\n",
               "T.fill_constant is layers.fill_constant and CF.While is layers.While and CF.less_than is layers.less_than");
    check_true("from fluid.layers import ops, metric_op, learning_rate_scheduler as lrs\n",
               "ops.sigmoid is layers.sigmoid and metric_op.auc is layers.auc and lrs.noam_decay is layers.noam_decay");
    check_true("", "fluid.layers.nn.sequence_pool is layers.sequence_pool and fluid.layers.nn.dynamic_lstm is layers.dynamic_lstm");
    check_true("import fluid.layers.detection as det\nimport fluid.layers.device as dev\n",
               "det.prior_box is layers.prior_box and det.ssd_loss is layers.ssd_loss and "
               "'multiclass_nms' in det.__all__ and fluid.layers.nn.smooth_l1 is layers.smooth_l1 and "
               "len(dev.__all__) == 0");
    check_error("import fluid.layers.nn as nn\nx = nn.fill_constant([1], 'float32', 1.0)\n",
                "module 'fluid.layers.nn' has no attribute 'fill_constant'");
    check_error("from fluid.layers import *\nprint(nn)\n", "unknown name 'nn'");
    check_error("from fluid.layers import *\nprint(io)\n", "unknown name 'io'");
    check_error("from fluid.layers.nn import *\nprint(_common)\n", "unknown name '_common'");
}

static void test_flags(void) {
    const char *defs[] = {"n=5", "name=cnn", "lr=0.5"};
    FlBundle *b = compile_defs(HDR "n = fluid.flag('n', 1)\n"
                                   "k = 10 if fluid.flag('name', 'mlp') == 'cnn' else 20\n"
                                   "f = fluid.flag('lr', 0.1)\n"
                                   "m = fluid.flag('missing', 3)\n"
                                   "r = layers.data(name='r', shape=[n + k + int(f * 4) + m])\n",
                               defs, 3);
    CU_ASSERT_EQUAL(result(b), 20);
    fl_ir_bundle_free(b);
}

/* A -D that no fluid.flag reads is a warning naming the flags the program has; it does not fail
 * the compile, and messages without a location carry the tool's name (flrun said "flc:"). */
static void test_flag_warnings(void) {
    const char *defs[] = {"nett=4", "lr=0.5", "net=2"};
    FlCompileOptions opt = {.defines = defs, .ndefines = 3, .tool = "flrun"};
    const char *src = HDR "n = fluid.flag('net', 1)\nf = fluid.flag('lr', 0.1)\nn2 = fluid.flag('net', 1)\n"
                          "r = layers.data(name='r', shape=[n])\n";
    FlBundle *b = NULL;
    FlBuf diag = {0};
    CU_ASSERT_EQUAL(fl_compile_source("tests/lang/snippet.fl", src, strlen(src), &opt, &b, &diag), 0);
    CU_ASSERT_STRING_EQUAL(fl_buf_str(&diag), "flrun: warning: -D 'nett' is not a flag of this program (its flags: net, lr)\n");
    CU_ASSERT_EQUAL(result(b), 2);
    fl_ir_bundle_free(b);
    fl_buf_free(&diag);
    opt.ndefines = 1;
    src = HDR "x = 1\n";
    CU_ASSERT_EQUAL(fl_compile_source("tests/lang/snippet.fl", src, strlen(src), &opt, &b, &diag), 0);
    CU_ASSERT_STRING_EQUAL(fl_buf_str(&diag), "flrun: warning: -D 'nett' is not a flag of this program (it reads no fluid.flag)\n");
    fl_ir_bundle_free(b);
    fl_buf_free(&diag);
    CU_ASSERT_EQUAL(fl_compile_file("tests/lang/no_such_file.fl", &opt, &b, &diag), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&diag), "flrun: error: "));
    fl_buf_free(&diag);
}

/* What the bundle validator would reject is a located error at the user's call, never "internal:
 * the built program is invalid" without a location. */
static void test_run_spec_errors(void) {
    static const ErrCase errs[] = {
        {"r = fluid.io.csv('a.csv', {'x': [0, 1]}, skip_rows=-1)\n", "snippet.fl:4:5: error: skip_rows cannot be negative, found -1"},
        {"r = fluid.io.csv('', {'x': [0, 1]})\n", "snippet.fl:4:5: error: io.csv() needs the path of a data file, found ''"},
        {"r = fluid.io.csv('a.csv', {'x': [0, 1]}, scale={'': 2.0})\nfluid.train(reader=r)\n",
         "snippet.fl:5:1: error: scale names '', which is not one of the reader's feeds"},
        {"r = fluid.io.csv('a.csv', {'x': [0, 1]}, scale={'y': 2.0})\nfluid.train(reader=r)\n",
         "snippet.fl:5:1: error: scale names 'y', which is not one of the reader's feeds"},
        {"fluid.train(fetch={'': x})\n", "snippet.fl:4:1: error: fetch keys must be names, found ''"},
        /* the primitives fluid.train's loop is written with build that loop only */
        {"import _core\n_core.driver_var('epoch', 'int64')\n",
         "snippet.fl:5:1: error: driver_var() builds fluid.train's loop: call it inside `with program_guard(spec.driver):`"},
        {"import _core\n_core.driver_op('increment', X=x, Out=x)\n", "snippet.fl:5:1: error: driver_op() builds fluid.train's loop"},
    };
    check_errors("x = layers.data(name='x', shape=[2])\n", errs, FL_ARRAY_LEN(errs));
}

/* io.sequence(column, levels) in io.csv's columns: the reader spec's feed reads one column with
 * that lod_level; misuse is a located error at the call. */
static void test_io_sequence(void) {
    FlBundle *b = compile(HDR "w = layers.data(name='w', shape=[1], dtype='int64', lod_level=1)\n"
                              "w2 = layers.data(name='w2', shape=[1], lod_level=2)\n"
                              "y = layers.data(name='y', shape=[1], dtype='int64')\n"
                              "s = fluid.io.sequence(2, levels=2)\n"
                              "r = fluid.io.csv('a.csv', {'w': fluid.io.sequence(0), 'y': [1]})\n"
                              "r2 = fluid.io.csv('a.csv', {'w2': s, 'y': 1}, sep=';')\n"
                              "fluid.train(reader=r, test_reader=r2)\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    const FlReaderSpec *r = b->run.reader, *r2 = b->run.test_reader;
    CU_ASSERT_EQUAL(r->feeds.len, 2);
    CU_ASSERT_EQUAL(r->feeds.data[0].lod_level, 1);
    CU_ASSERT_EQUAL(r->feeds.data[0].ncols, 1);
    CU_ASSERT_EQUAL(r->feeds.data[0].cols[0], 0);
    CU_ASSERT_EQUAL(r->feeds.data[0].dtype, FL_DT_INT64);
    CU_ASSERT_EQUAL(r->feeds.data[1].lod_level, 0);
    CU_ASSERT_EQUAL(r2->feeds.data[0].lod_level, 2);
    CU_ASSERT_EQUAL(r2->feeds.data[0].dtype, FL_DT_FLOAT32);
    CU_ASSERT_EQUAL(r2->feeds.data[0].cols[0], 2);
    fl_ir_bundle_free(b);
    static const ErrCase errs[] = {
        {"s = fluid.io.sequence(-1)\n", "snippet.fl:3:5: error: io.sequence() needs a non-negative column index, found -1"},
        {"s = fluid.io.sequence(0, levels=3)\n", "snippet.fl:3:5: error: io.sequence() reads sequences of 1 or 2 levels, found levels=3"},
        {"s = fluid.io.sequence(0, levels=0)\n", "snippet.fl:3:5: error: io.sequence() reads sequences of 1 or 2 levels, found levels=0"},
        {"s = fluid.io.sequence('a')\n", "snippet.fl:3:5: error: column must be an int, found str"},
        {"s = fluid.io.sequence(0)\ns.levels = 7\nr = fluid.io.csv('a.csv', {'w': s})\n",
         "snippet.fl:5:5: error: columns['w'] is not an io.sequence(column, levels) of a column index and 1 or 2 levels"},
        {"r = fluid.io.csv('a.csv', {'w': 'x'})\n",
         "snippet.fl:3:5: error: columns['w'] must be a list of column indices or io.sequence(column), found str"},
        {"r = fluid.io.csv('a.csv', {'w': fluid.io.sequence(0)}, sep=' ')\n",
         "snippet.fl:3:5: error: feed 'w' is a sequence of blank-separated numbers: sep cannot be a blank"},
        {"r = fluid.io.csv('a.csv', {'w': fluid.io.sequence(0, levels=2)}, sep='|')\n",
         "snippet.fl:3:5: error: feed 'w' is a nested sequence whose sub-sequences '|' separates: sep cannot be '|'"},
        {"r = fluid.io.csv('a.csv', {'w': fluid.io.sequence(0)}, normalize=['w'])\n",
         "snippet.fl:3:5: error: normalize names 'w', a sequence (io.sequence): sequences cannot be normalised"},
    };
    check_errors("", errs, FL_ARRAY_LEN(errs));
    /* fluid.train checks each feed against its data var's lod_level */
    static const ErrCase feeds[] = {
        {"r = fluid.io.csv('a.csv', {'d': fluid.io.sequence(0)})\nfluid.train(reader=r)\n",
         "snippet.fl:9:1: error: the reader gives 'd' sequences of 1 level (io.sequence) but the data var has lod_level 0 "
         "(layers.data(..., lod_level=1))"},
        {"r = fluid.io.csv('a.csv', {'s2': fluid.io.sequence(0)})\nfluid.train(reader=r)\n",
         "snippet.fl:9:1: error: the reader gives 's2' sequences of 1 level (io.sequence) but the data var has lod_level 2 "
         "(layers.data(..., lod_level=1))"},
        {"r = fluid.io.csv('a.csv', {'s1': [0]})\nfluid.train(reader=r)\n",
         "snippet.fl:9:1: error: the data var 's1' holds sequences (lod_level 1) but the reader gives it plain columns: "
         "read its column with io.sequence(column)"},
        {"r = fluid.io.csv('a.csv', {'s2': [0]})\nfluid.train(reader=r)\n",
         "snippet.fl:9:1: error: the data var 's2' holds sequences (lod_level 2) but the reader gives it plain columns: "
         "read its column with io.sequence(column, levels=2)"},
        {"r = fluid.io.csv('a.csv', {'s3': [0]})\nfluid.train(reader=r)\n",
         "snippet.fl:9:1: error: the data var 's3' holds sequences of 3 levels; a reader gives at most 2 (io.sequence)"},
        {"r = fluid.io.csv('a.csv', {'wide': fluid.io.sequence(0, levels=2)})\nfluid.train(reader=r)\n",
         "snippet.fl:9:1: error: the reader gives 'wide' one value per step of its nested sequences but the data var has "
         "shape [-1, 2] (2 values per row); declare it with shape=[1]"},
    };
    check_errors("d = layers.data(name='d', shape=[1])\n"
                 "s1 = layers.data(name='s1', shape=[1], lod_level=1)\n"
                 "s2 = layers.data(name='s2', shape=[1], lod_level=2)\n"
                 "s3 = layers.data(name='s3', shape=[1], lod_level=3)\n"
                 "wide = layers.data(name='wide', shape=[2], lod_level=2)\n",
                 feeds, FL_ARRAY_LEN(feeds));
}

static void test_user_module(void) {
    /* tests/lang/helper_mod.fl is next to the (virtual) snippet */
    check_result(HDR "import helper_mod\nfrom helper_mod import triple as t3\n"
                     "r = layers.data(name='r', shape=[helper_mod.triple(2) + t3(1) + helper_mod.K])\n",
                 109);
}

/* ---- Vars and ops ---- */

static void test_var_operators(void) {
    FlBundle *b = compile(HDR "x = layers.data(name='x', shape=[4])\n"
                              "y = layers.data(name='y', shape=[4])\n"
                              "b = layers.create_parameter(shape=[4], dtype='float32')\n"
                              "w = layers.create_parameter(shape=[4, 3], dtype='float32')\n"
                              "a1 = x + b\n"
                              "a2 = x * 2\n"
                              "a3 = 2 - x\n"
                              "a4 = x @ w\n"
                              "a5 = x / y\n"
                              "a6 = -x\n"
                              "a7 = x ** 2\n"
                              "a8 = x < y\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    const FlOpDesc *add = op_at(b, 0, "elementwise_add", 0);
    CU_ASSERT_PTR_NOT_NULL(add);
    FlVarDesc *o = fl_ir_var_find(fl_ir_block(b->main, 0), fl_ir_op_output1(add, "Out"));
    CU_ASSERT(o && o->ndim == 2 && o->shape[0] == -1 && o->shape[1] == 4);
    CU_ASSERT_EQUAL(count(b, 0, "scale"), 3);
    const FlOpDesc *s3 = op_at(b, 0, "scale", 1);
    CU_ASSERT_DOUBLE_EQUAL(fl_ir_op_get_float(s3, "scale", 0), -1.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(fl_ir_op_get_float(s3, "bias", 0), 2.0, 1e-12);
    const FlOpDesc *mm = op_at(b, 0, "matmul", 0);
    o = fl_ir_var_find(fl_ir_block(b->main, 0), fl_ir_op_output1(mm, "Out"));
    CU_ASSERT(o && o->ndim == 2 && o->shape[1] == 3);
    CU_ASSERT_EQUAL(count(b, 0, "elementwise_div"), 1);
    CU_ASSERT_EQUAL(count(b, 0, "elementwise_pow"), 1);
    const FlOpDesc *lt = op_at(b, 0, "less_than", 0);
    o = fl_ir_var_find(fl_ir_block(b->main, 0), fl_ir_op_output1(lt, "Out"));
    CU_ASSERT(o && o->dtype == FL_DT_BOOL);
    fl_ir_bundle_free(b);
}

static void test_fc_and_params(void) {
    FlBundle *b = compile(HDR "x = layers.data(name='x', shape=[1, 8, 8])\n"
                              "h = layers.fc(x, size=5, act='relu')\n"
                              "h2 = layers.fc(h, size=2, bias_attr=False, param_attr=fluid.ParamAttr(name='W2'))\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    const FlBlock *m = fl_ir_block(b->main, 0);
    FlVarDesc *w = fl_ir_var_find(m, "fc_0.w_0");
    CU_ASSERT(w && w->persistable && w->trainable && w->shape[0] == 64 && w->shape[1] == 5);
    CU_ASSERT_PTR_NOT_NULL(fl_ir_var_find(m, "fc_0.b_0"));
    CU_ASSERT_PTR_NOT_NULL(fl_ir_var_find(m, "W2"));
    CU_ASSERT_PTR_NULL(fl_ir_var_find(m, "fc_1.b_0"));
    CU_ASSERT_EQUAL(count(b, 0, "relu"), 1);
    /* startup: xavier uniform for the weights with distinct deterministic seeds, zero bias */
    const FlBlock *s = fl_ir_block(b->startup, 0);
    int nuni = 0;
    int64_t seeds[2] = {0, 0};
    for (size_t i = 0; i < s->ops.len; i++)
        if (strcmp(s->ops.data[i]->type, "uniform_random") == 0 && nuni < 2) seeds[nuni++] = fl_ir_op_get_int(s->ops.data[i], "seed", 0);
    CU_ASSERT_EQUAL(nuni, 2);
    CU_ASSERT(seeds[0] != seeds[1] && seeds[0] != 0);
    fl_ir_bundle_free(b);
}

/* ---- runtime control flow ---- */

static void test_runtime_while(void) {
    FlBundle *b = compile(HDR "i = layers.fill_constant(shape=[1], dtype='int64', value=0)\n"
                              "n = layers.fill_constant(shape=[1], dtype='int64', value=10)\n"
                              "while i < n:\n"
                              "    i = i + 1\n"
                              "j = i * 1\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    const FlOpDesc *w = op_at(b, 0, "while", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    /* i gets a var of its own before the loop (an assign from the fill_constant's var, which
     * keeps 0, as it does when the loop runs at compile time) */
    const char *init = fl_ir_op_output1(op_at(b, 0, "fill_constant", 0), "Out");
    const FlOpDesc *own = op_at(b, 0, "assign", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(own);
    CU_ASSERT_STRING_EQUAL(fl_ir_op_input1(own, "X"), init);
    const char *ivar = fl_ir_op_output1(own, "Out");
    CU_ASSERT(!slot_has(w, false, "Out", init));
    const char *cond = fl_ir_op_input1(w, "Condition");
    CU_ASSERT_PTR_NOT_NULL_FATAL(cond);
    /* i is loop-carried: read and written by the loop */
    CU_ASSERT(slot_has(w, true, "X", ivar));
    CU_ASSERT(slot_has(w, false, "Out", ivar));
    int sub = (int)fl_ir_op_attr(w, "sub_block")->i;
    const FlBlock *body = fl_ir_block(b->main, sub);
    /* the body assigns the new i into the outer i, then recomputes the condition into cond */
    bool assigns_i = false, assigns_cond = false;
    int i_at = -1, cond_at = -1;
    for (size_t k = 0; k < body->ops.len; k++) {
        const FlOpDesc *op = body->ops.data[k];
        if (strcmp(op->type, "assign") != 0) continue;
        if (strcmp(fl_ir_op_output1(op, "Out"), ivar) == 0) assigns_i = true, i_at = (int)k;
        if (strcmp(fl_ir_op_output1(op, "Out"), cond) == 0) assigns_cond = true, cond_at = (int)k;
    }
    CU_ASSERT(assigns_i && assigns_cond && i_at < cond_at);
    /* code after the loop sees the outer i */
    const FlOpDesc *after = op_at(b, 0, "elementwise_mul", 0); /* int64: no scale op */
    CU_ASSERT(after && strcmp(fl_ir_op_input1(after, "X"), ivar) == 0);
    fl_ir_bundle_free(b);
}

static void test_runtime_if(void) {
    FlBundle *b = compile(HDR "x = layers.fill_constant(shape=[1], dtype='float32', value=3.0)\n"
                              "z = layers.fill_constant(shape=[1], dtype='float32', value=1.0)\n"
                              "if x > 2.0:\n"
                              "    z = z * 2.0\n"
                              "    fresh = z + 1.0\n"
                              "else:\n"
                              "    z = z - 1.0\n"
                              "out = z + fresh\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_EQUAL(count(b, 0, "conditional_block"), 2);
    CU_ASSERT_EQUAL(count(b, 0, "logical_not"), 1);
    /* z gets a var of its own before the branches, which both write */
    const char *zinit = fl_ir_op_output1(op_at(b, 0, "fill_constant", 1), "Out");
    CU_ASSERT_EQUAL(count(b, 0, "assign"), 1);
    CU_ASSERT_STRING_EQUAL(fl_ir_op_input1(op_at(b, 0, "assign", 0), "X"), zinit);
    const char *zvar = fl_ir_op_output1(op_at(b, 0, "assign", 0), "Out");
    const FlOpDesc *c1 = op_at(b, 0, "conditional_block", 0);
    const FlOpDesc *c2 = op_at(b, 0, "conditional_block", 1);
    CU_ASSERT(slot_has(c1, false, "Out", zvar));
    CU_ASSERT(slot_has(c2, false, "Out", zvar));
    /* `out = z + fresh` reads the outer z and a var of block 0 for fresh */
    const FlOpDesc *add = op_at(b, 0, "elementwise_add", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(add);
    CU_ASSERT_STRING_EQUAL(fl_ir_op_input1(add, "X"), zvar);
    CU_ASSERT_PTR_NOT_NULL(fl_ir_var_find(fl_ir_block(b->main, 0), fl_ir_op_input1(add, "Y")));
    fl_ir_bundle_free(b);
}

#define I64(name, v) name " = layers.fill_constant(shape=[1], dtype='int64', value=" #v ")\n"

/* break and continue of runtime loops, run; every figure is what Python gives for the same
 * code on plain ints */
static void test_runtime_break_continue(void) {
    /* continue directly in the body, and in a runtime if */
    check_run(HDR I64("i", 0) I64("n", 10) I64("s", 0)
                  "while i < n:\n"
                  "    i = i + 1\n"
                  "    if i % 2 == 0:\n"
                  "        continue\n"
                  "    s = s + i\n"
                  "while i > 0:\n"
                  "    i = i - 1\n"
                  "    continue\n"
                  "    s = s + 1000\n"
                  "layers.Print(s, message='s')\nlayers.Print(i, message='i')\n",
              "s=25 i=0");
    /* break in a runtime if; the else clause runs only without a break */
    check_run(HDR I64("i", 0) I64("n", 100) I64("s", 0) I64("t", 0)
                  "while i < n:\n"
                  "    i = i + 1\n"
                  "    if s > 20:\n"
                  "        break\n"
                  "    s = s + i\n"
                  "else:\n"
                  "    s = s + 1000\n"
                  "while t < 3:\n"
                  "    t = t + 1\n"
                  "    if t > 5:\n"
                  "        break\n"
                  "else:\n"
                  "    t = t + 1000\n"
                  "layers.Print(s, message='s')\nlayers.Print(i, message='i')\nlayers.Print(t, message='t')\n",
              "s=21 i=7 t=1003");
    /* nested runtime ifs with else branches, continue and break at several depths */
    check_run(HDR I64("i", 0) I64("n", 20) I64("s", 0) I64("t", 0)
                  "while i < n:\n"
                  "    i = i + 1\n"
                  "    if i % 3 == 0:\n"
                  "        if i > 10:\n"
                  "            break\n"
                  "        t = t + 1\n"
                  "        continue\n"
                  "    else:\n"
                  "        s = s + i\n"
                  "    s = s * 1 + 1\n"
                  "    if s > 1000:\n"
                  "        continue\n"
                  "    t = t + 100\n"
                  "else:\n"
                  "    t = t - 7\n"
                  "layers.Print(s, message='s')\nlayers.Print(t, message='t')\nlayers.Print(i, message='i')\n",
              "s=56 t=803 i=12");
    /* nested runtime loops: each break and continue leaves its own loop */
    check_run(HDR I64("i", 0) I64("n", 5) I64("s", 0)
                  "while i < n:\n"
                  "    i = i + 1\n"
                  "    j = layers.fill_constant(shape=[1], dtype='int64', value=0)\n"
                  "    while j < n:\n"
                  "        j = j + 1\n"
                  "        if j > i:\n"
                  "            break\n"
                  "        if (i + j) % 2 == 1:\n"
                  "            continue\n"
                  "        s = s + i * 10 + j\n"
                  "    if s > 60:\n"
                  "        break\n"
                  "else:\n"
                  "    s = s + 1000\n"
                  "layers.Print(s, message='s')\nlayers.Print(i, message='i')\n",
              "s=97 i=3");
    /* a name first bound after a continue point, and the loop's own condition name rebound in
     * the body before a break (the break must stick) */
    check_run(HDR I64("i", 0) I64("n", 6) I64("s", 0) I64("k", 0)
                  "while i < n:\n"
                  "    i = i + 1\n"
                  "    if i == 2:\n"
                  "        continue\n"
                  "    last = i * 10\n"
                  "    s = s + last\n"
                  "go_on = k < n\n"
                  "while go_on:\n"
                  "    k = k + 1\n"
                  "    go_on = k < n\n"
                  "    if k == 4:\n"
                  "        break\n"
                  "layers.Print(s, message='s')\nlayers.Print(last, message='last')\nlayers.Print(k, message='k')\n",
              "s=190 last=60 k=4");
    /* compile-time control flow inside a runtime loop: a compile-time for's continue is its own,
     * a compile-time if around a runtime continue, a function call, a runtime loop inside an
     * unrolled one */
    check_run(HDR I64("i", 0) I64("n", 6) I64("s", 0) I64("u", 0)
                  "def step(v):\n"
                  "    return v + 1\n"
                  "while i < n:\n"
                  "    i = step(i)\n"
                  "    for k in range(3):\n"
                  "        if k == 1:\n"
                  "            continue\n"
                  "        s = s + k\n"
                  "    if True:\n"
                  "        if i == 4:\n"
                  "            continue\n"
                  "    s = s + 100\n"
                  "for k in range(3):\n"
                  "    i = i * 0\n"
                  "    while i < n:\n"
                  "        i = i + 1\n"
                  "        if i + k > 4:\n"
                  "            break\n"
                  "        u = u + 1\n"
                  "layers.Print(s, message='s')\nlayers.Print(u, message='u')\n",
              "s=512 u=9");
    /* shape inference on extreme attributes: located errors, never C's signed overflow (UBSan) */
    check_error(HDR "import _core\nx = layers.fill_constant(shape=[2, 3], dtype='float32', value=1.5)\n"
                    "_core.op('reshape', X=x, shape=[1099511627776, 9223372036854775807])\n",
                "has more elements than an int64 holds");
    check_error(HDR "import _core\nx = layers.fill_constant(shape=[2, 3], dtype='float32', value=1.5)\n"
                    "_core.op('elementwise_mul', X=x, Y=x, axis=9223372036854775807)\n",
                "is out of range");
    check_error(HDR "import _core\nx = layers.fill_constant(shape=[2, 3], dtype='float32', value=1.5)\n"
                    "_core.op('split', X=x, axis=0, sections=[1099511627776, 9223372036854775807])\n",
                "sections add up to 9223372036854775807");
    check_error(HDR "import _core\nx = layers.fill_constant(shape=[2, 3], dtype='float32', value=1.5)\n"
                    "_core.op('concat', X=[x, x], axis=-9223372036854775807 - 1)\n",
                "is out of range");
    /* listen_and_serv takes no argument it would ignore */
    check_error(HDR "s = fluid.listen_and_serv(endpoint='127.0.0.1:6174')\n", "'endpoint' is not supported");
    check_error(HDR "s = fluid.listen_and_serv(sync_mode=False)\n", "sync_mode=False is not supported");
    /* split_to_chan cuts by the one block rule, with no cap on the count (it had one of 64) */
    check_run(HDR "w = layers.fill_constant(shape=[200, 2], dtype='float32', value=1.0)\n"
                  "ch = fluid.make_chan(dtype='float32', capacity=200)\n"
                  "layers.split_to_chan(w, ch, pservers=100, min_block_size=1)\n" I64("n", 0)
                  "for v in ch:\n"
                  "    n = n + 1\n"
                  "layers.Print(n, message='n')\n",
              "n=100");
    check_error(HDR "w = layers.fill_constant(shape=[4], dtype='float32', value=1.0)\n"
                    "ch = fluid.make_chan(dtype='float32', capacity=4)\n"
                    "layers.split_to_chan(w, ch, pservers='2')\n",
                "pservers");
    check_error(HDR "w = layers.fill_constant(shape=[4], dtype='float32', value=1.0)\n"
                    "ch = fluid.make_chan(dtype='float32', capacity=4)\n"
                    "layers.split_to_chan(w, ch, pservers=0)\n",
                "needs pservers >= 1");
    /* for over a channel */
    check_run(HDR "ch = fluid.make_chan(dtype='int64', capacity=10)\n"
                  "for k in range(8):\n"
                  "    ch.send(layers.fill_constant(shape=[1], dtype='int64', value=k))\n"
                  "ch.close()\n" I64("s", 0) I64("rest", 0)
                  "for v in ch:\n"
                  "    if v == 2:\n"
                  "        continue\n"
                  "    if v == 5:\n"
                  "        break\n"
                  "    s = s + v\n"
                  "else:\n"
                  "    s = s + 1000\n"
                  "for v in ch:\n"
                  "    rest = rest + v\n"
                  "else:\n"
                  "    rest = rest + 100\n"
                  "layers.Print(s, message='s')\nlayers.Print(rest, message='rest')\n",
              "s=8 rest=113");
    /* the shape of the lowering: no flag for exits directly in the body; one alive flag, set
     * first in the body, for exits inside a runtime if */
    FlBundle *b = compile(HDR I64("i", 0) "while i < 3:\n    i = i + 1\n    continue\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_EQUAL(b->main->blocks.len, 2);
    fl_ir_bundle_free(b);
    b = compile(HDR I64("i", 0) "while i < 3:\n    i = i + 1\n    if i == 1:\n        continue\n    i = i * 2\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    int body = (int)fl_ir_op_attr(op_at(b, 0, "while", 0), "sub_block")->i;
    const FlOpDesc *first = fl_ir_block(b->main, body)->ops.data[0];
    CU_ASSERT_STRING_EQUAL(first->type, "fill_constant");
    CU_ASSERT_STRING_EQUAL(fl_ir_op_output1(first, "Out"), "loop_alive_0");
    CU_ASSERT_EQUAL(count(b, body, "conditional_block"), 2); /* the if, the rest after it */
    fl_ir_bundle_free(b);
}

static void test_runtime_loop_errors(void) {
    /* an unrolled loop cannot stop at run time: said once, at the break */
    char *e = errors_of(HDR "x = layers.data(name='x', shape=[1])\n"
                            "for k in range(3):\n"
                            "    if x > float(k):\n"
                            "        continue\n");
    CU_ASSERT_PTR_NOT_NULL(strstr(e, "snippet.fl:6:9: error: 'continue' under a runtime 'if' or 'select' cannot "
                                     "leave a compile-time loop"));
    CU_ASSERT_PTR_NULL(strstr(strstr(e, "cannot leave") + 1, "cannot leave"));
    free(e);
    /* but a compile-time loop inside the runtime if is the break's own */
    FlBundle *b = compile(HDR "x = layers.fill_constant(shape=[1], dtype='float32', value=2.0)\n"
                              "if x > 1.0:\n"
                              "    for k in range(3):\n"
                              "        x = x * 2.0\n"
                              "        break\n");
    CU_ASSERT_EQUAL(count(b, 1, "scale"), 1);
    fl_ir_bundle_free(b);
    check_error(HDR I64("i", 0)
                    "def f(i):\n"
                    "    while i < 5:\n"
                    "        i = i + 1\n"
                    "        if i == 3:\n"
                    "            return i\n"
                    "    return i\n"
                    "f(i)\n",
                "a 'return' of a value inside a runtime loop or 'if' of a program (not of the code around exe.run): return it after the loop");
}

static void test_channels_go_select(void) {
    FlBundle *b = compile(HDR "ch = fluid.make_chan(dtype='float32', capacity=2)\n"
                              "done = fluid.make_chan()\n"
                              "x = layers.fill_constant(shape=[1], dtype='float32', value=1.0)\n"
                              "go:\n"
                              "    ch.send(x)\n"
                              "    ch.close()\n"
                              "with fluid.go():\n"
                              "    for v in ch:\n"
                              "        layers.Print(v)\n"
                              "    done.send(x)\n"
                              "select:\n"
                              "    case got = done.recv():\n"
                              "        layers.Print(got)\n"
                              "    case ch.send(x):\n"
                              "        pass\n"
                              "    default:\n"
                              "        pass\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_EQUAL(count(b, 0, "channel_create"), 2);
    CU_ASSERT_EQUAL(count(b, 0, "go"), 2);
    const FlOpDesc *g2 = op_at(b, 0, "go", 1);
    int gb = (int)fl_ir_op_attr(g2, "sub_block")->i;
    CU_ASSERT_EQUAL(count(b, gb, "while"), 1);
    CU_ASSERT_EQUAL(count(b, gb, "channel_send"), 1);
    const FlOpDesc *sel = op_at(b, 0, "select", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sel);
    FlAttr *kinds = fl_ir_op_attr(sel, "case_kinds");
    CU_ASSERT(kinds && kinds->n == 3 && kinds->ints[0] == 0 && kinds->ints[1] == 1 && kinds->ints[2] == 2);
    FlAttr *blocks = fl_ir_op_attr(sel, "sub_blocks");
    CU_ASSERT(blocks && blocks->n == 3);
    char *e = errors_of(HDR "x = layers.data(name='x', shape=[1])\nx.close()\n");
    CU_ASSERT_PTR_NOT_NULL(strstr(e, "'close' needs a channel"));
    free(e);
    fl_ir_bundle_free(b);
}

static void test_parallel_for(void) {
    FlBundle *b = compile(HDR "xs = []\n"
                              "for i in range(3):\n"
                              "    xs.append(layers.fill_constant(shape=[2], dtype='float32', value=float(i)))\n"
                              "parallel_for k in range(3):\n"
                              "    layers.Print(xs[k])\n"
                              "with fluid.parallel_for(len(xs)) as it:\n"
                              "    layers.Print(xs[it.idx])\n");
    if (!b) return;
    CU_ASSERT_EQUAL(count(b, 0, "parallel_for"), 2);
    const FlOpDesc *pf = op_at(b, 0, "parallel_for", 0);
    CU_ASSERT_EQUAL(fl_ir_op_get_int(pf, "n", 0), 3);
    int sb = (int)fl_ir_op_attr(pf, "sub_block")->i;
    const FlOpDesc *li = op_at(b, sb, "list_index", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(li);
    CU_ASSERT_EQUAL(fl_ir_op_input(li, "X")->nargs, 3);
    CU_ASSERT_STRING_EQUAL(fl_ir_op_input1(li, "Index"), fl_ir_op_get_string(pf, "index_var", ""));
    fl_ir_bundle_free(b);
}

/* A data var stays fed whatever its stop_gradient: `x.stop_gradient = False` (or
 * data(stop_gradient=False)) gives it a gradient, and its later uses read the fed value. */
static void test_data_stop_gradient(void) {
    static const char *const srcs[] = {
        HDR "x = layers.data(name='x', shape=[3])\nx.stop_gradient = False\n",
        HDR "x = layers.data(name='x', shape=[3], stop_gradient=False)\n",
    };
    for (size_t i = 0; i < FL_ARRAY_LEN(srcs); i++) {
        char src[512];
        snprintf(src, sizeof src, "%sy = layers.fc(x, size=2)\nz = layers.relu(x)\n"
                                  "fluid.append_backward(layers.mean(y))\n", srcs[i]);
        FlBundle *b = compile(src);
        if (!b) continue;
        const FlOpDesc *g = op_at(b, 0, "mul_grad", 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        CU_ASSERT_STRING_EQUAL(fl_ir_op_output1(g, "X@GRAD"), "x@GRAD");
        CU_ASSERT(fl_ir_var_find(fl_ir_block(b->main, 0), "x")->fed);
        fl_ir_bundle_free(b);
    }
}

static void test_programs_and_guards(void) {
    FlBundle *b = compile(HDR "main = fluid.Program()\n"
                              "startup = fluid.Program()\n"
                              "with fluid.program_guard(main, startup):\n"
                              "    with fluid.unique_name.guard():\n"
                              "        x = layers.data(name='x', shape=[3])\n"
                              "        y = layers.fc(x, size=2)\n"
                              "with fluid.unique_name.guard():\n"
                              "    x2 = layers.data(name='x', shape=[3])\n"
                              "    y2 = layers.fc(x2, size=4)\n"
                              "fluid.train(main_program=main, startup_program=startup, epochs=2)\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    /* the bundle holds the guarded programs; both used the name fc_0 in their own program */
    FlVarDesc *w = fl_ir_var_find(fl_ir_block(b->main, 0), "fc_0.w_0");
    CU_ASSERT(w && w->shape[1] == 2);
    CU_ASSERT(b->run.present && b->run.epochs == 2);
    CU_ASSERT(fl_ir_block(b->startup, 0)->ops.len >= 2);
    fl_ir_bundle_free(b);
    /* a guard in the same program restarts the counts: the layers inside make other parameters
     * and other outputs than the same layers before it (never an internal assertion) */
    check_true("x = layers.data(name='x', shape=[3])\na = layers.fc(x, size=1)\np = layers.split(x, 3)\n"
               "with fluid.unique_name.guard():\n    b = layers.fc(x, size=4)\n    q = layers.split(x, 3)\n"
               "    m = layers.fc(x, size=1)\n",
               "a.name != b.name and a.shape == [-1, 1] and b.shape == [-1, 4] and m.name not in (a.name, b.name) and "
               "len(dict([(v.name, 1) for v in p + q])) == 6 and "
               "fluid.default_main_program().global_block().var('fc_0.w_0').shape == [3, 1]");
}

/* Program methods: global_block().var(name); clone(for_test=True) copies the program as it is
 * then, with is_test set on the ops that have it, and the copy can be the run spec's program. */
static void test_program_methods(void) {
    /* unique_name.guard(new_generator='enc_') prefixes the names made inside (Fluid's generator
     * of that prefix); outside, the default names go on */
    check_true("x = layers.data(name='x', shape=[4])\nwith fluid.unique_name.guard('enc_'):\n    h = layers.fc(x, size=3)\n"
               "g = layers.fc(x, size=2)\n",
               "h.name.startswith('enc_') and not g.name.startswith('enc_') and "
               "fluid.default_main_program().global_block().var('enc_fc_0.w_0').shape == [4, 3]");
    check_true("x = layers.data(name='x', shape=[4])\nh = layers.fc(x, size=3)\n",
               "fluid.default_main_program().global_block().var('fc_0.w_0').shape == [4, 3]");
    /* unique_name.switch(): a generator keeps its own counts while another is current; switch()
     * returns the one it replaces, which guard() and a later switch() make current again; inside
     * a guard it replaces the guard's, which comes back at the guard's end */
    check_true("un = fluid.unique_name\ng = un.generate\na = g('k')\nold = un.switch()\nb = g('k')\nc = g('k')\n"
               "mid = un.switch(old)\nd = g('k')\nun.switch(mid)\ne = g('k')\nwith un.guard(old):\n    f = g('k')\n"
               "h = g('k')\nwith un.guard('p_'):\n    o2 = un.switch()\n    i = g('k')\n    un.switch(o2)\n    j = g('k')\n"
               "k = g('k')\nwith un.guard(un.UniqueNameGenerator('q_')):\n    m = g('k')\n",
               "[a, b, c, d, e, f, h, i, j, k, m] == ['k_0', 'k_0', 'k_1', 'k_1', 'k_2', 'k_2', 'k_3', 'k_0', 'p_k_0', "
               "'k_4', 'q_k_0']");
    /* a layer name used twice makes new parameters (Fluid's unique names); a parameter name
     * given twice shares one */
    check_true("x = layers.data(name='x', shape=[4])\na = layers.fc(x, size=4, name='proj')\n"
               "b = layers.fc(a, size=3, name='proj')\nc = layers.fc(a, size=3, param_attr='proj.w_1')\n",
               "fluid.default_main_program().global_block().var('proj.w_1').shape == [4, 3]");
    FlBundle *b = compile(HDR "x = layers.data(name='x', shape=[4])\n"
                              "h = layers.dropout(layers.fc(x, size=3), dropout_prob=0.5)\n"
                              "test = fluid.default_main_program().clone(for_test=True)\n"
                              "fluid.optimizer.SGD(learning_rate=0.1).minimize(layers.mean(h))\n"
                              "fluid.train(reader=fluid.io.csv('x.csv', columns={'x': [0, 1, 2, 3]}), "
                              "main_program=test, startup_program=fluid.default_startup_program())\n");
    if (!b) return;
    const FlOpDesc *d = op_at(b, 0, "dropout", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT_TRUE(fl_ir_op_get_bool(d, "is_test", false));
    CU_ASSERT_EQUAL(count(b, 0, "sgd"), 0); /* cloned before minimize */
    fl_ir_bundle_free(b);
    static const ErrCase errs[] = {
        {"v = fluid.default_main_program().global_block().var('nope')\n", "the global block has no var named 'nope'"},
        {"p = fluid.default_main_program().clone(for_test=1)\n", "for_test must be True or False, found int"},
        {"fluid.unique_name.switch('enc_')\n", "unique_name.switch(): new_generator must be a UniqueNameGenerator "
                                              "(one switch() returned) or None, found str"},
        {"p = fluid.default_main_program().blocks\n", "a Program has no attribute 'blocks' (it has global_block, block, current_block, num_blocks, list_vars, to_string, clone, random_seed)"},
    };
    check_errors("", errs, FL_ARRAY_LEN(errs));
}

/* Several minimize() calls: each later backward goes before the earlier updates, so the block
 * reads forward, backward 1, 2, 3, then sgd, momentum, adam (no gradient op after an update). */
static void test_several_minimize(void) {
    FlBundle *b = compile(HDR "x = layers.data(name='x', shape=[3])\n"
                              "h = layers.fc(x, size=5, param_attr='w1', bias_attr='b1')\n"
                              "loss = layers.mean(layers.fc(h, size=1, param_attr='w2', bias_attr=False))\n"
                              "fluid.optimizer.SGD(learning_rate=0.1).minimize(loss, parameter_list=['w2'])\n"
                              "fluid.optimizer.Momentum(learning_rate=0.1, momentum=0.9).minimize(loss, parameter_list=['w1'])\n"
                              "fluid.optimizer.Adam(learning_rate=0.1).minimize(loss, parameter_list=['b1'])\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    const FlBlock *bl = fl_ir_block(b->main, 0);
    size_t n = bl->ops.len, first_update = n, last_grad = 0;
    for (size_t i = 0; i < n; i++) {
        const char *t = bl->ops.data[i]->type;
        if (strstr(t, "_grad")) last_grad = i;
        if ((!strcmp(t, "sgd") || !strcmp(t, "momentum") || !strcmp(t, "adam")) && first_update == n) first_update = i;
    }
    CU_ASSERT_EQUAL(count(b, 0, "mean_grad"), 3);
    CU_ASSERT_TRUE(last_grad < first_update);
    CU_ASSERT_STRING_EQUAL(bl->ops.data[n - 3]->type, "sgd");
    CU_ASSERT_STRING_EQUAL(bl->ops.data[n - 2]->type, "momentum");
    CU_ASSERT_STRING_EQUAL(bl->ops.data[n - 1]->type, "adam");
    CU_ASSERT_TRUE(slot_has(bl->ops.data[n - 2], true, "Grad", "w1@GRAD"));
    fl_ir_bundle_free(b);
}

static void test_backward_sum(void) {
    /* a var used twice gets its gradients summed */
    FlBundle *b = compile(HDR "x = layers.data(name='x', shape=[4])\n"
                              "h = layers.fc(x, size=4)\n"
                              "loss = layers.mean(h * h + h)\n"
                              "params, grads = fluid.append_backward(loss)\n"
                              "r = layers.data(name='r', shape=[len(params) * 10 + len(grads)])\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_EQUAL(result(b), 22);
    CU_ASSERT(count(b, 0, "sum") >= 1);
    fl_ir_bundle_free(b);
}

/* ---- Python's classes, statements and library (each `assert` is checked at compile time: the
 * snippet compiles only if every one holds) ---- */

static void check_asserts(const char *src) {
    char *full = malloc(strlen(HDR) + strlen(src) + 1);
    strcpy(full, HDR);
    strcat(full, src);
    FlBundle *b = compile(full);
    free(full);
    CU_ASSERT_PTR_NOT_NULL(b);
    fl_ir_bundle_free(b);
}

/* Python's sets: displays, set(), `in`, len, iteration, equality and the methods (pyset.c). */
static void test_sets(void) {
    check_asserts("s = {1, 2, 2, 'a'}\n"
                  "assert len(s) == 3 and 2 in s and 3 not in s and 'a' in s\n"
                  "assert s == {'a', 2, 1} and s != {1, 2} and isinstance(s, set) and type(s) == set\n"
                  "t = set([3, 1, 3])\n"
                  "t.add(4)\n"
                  "t.add(1)\n"
                  "assert sorted(t) == [1, 3, 4] and len(set()) == 0 and not set() and bool(t)\n"
                  "t.update([5], (6,))\n"
                  "t.discard(99)\n"
                  "t.remove(3)\n"
                  "assert list(t) == [1, 4, 5, 6] and [x * 2 for x in t] == [2, 8, 10, 12]\n"
                  "u = t.union({7}, [1])\n"
                  "assert len(u) == 5 and len(t) == 4 and t.copy() == t and set('aba') == {'a', 'b'}\n"
                  "assert str({1}) == '{1}' and str(set()) == 'set()' and {(1, 2), (1, 2)} == {(1, 2)}\n"
                  "assert {'k': 1} == dict(k=1) and {} == dict() and {*[1, 2], 3} == {1, 2, 3}\n");
    static const ErrCase errs[] = {
        {"{[1]}\n", "error: unhashable type: 'list'"},
        {"s = {1}\ns.remove(2)\n", "error: set.remove(x): x is not in the set (KeyError: 2)"},
        {"{1}.append(2)\n", "error: 'set' object has no attribute 'append'"},
        {"{1}[0]\n", "error: set is not subscriptable"},
    };
    check_errors("", errs, FL_ARRAY_LEN(errs));
}

static void test_classes(void) {
    check_asserts("class Base(object):\n"
                  "    scale = 2\n"
                  "    def __init__(self, n):\n"
                  "        self.n = n\n"
                  "    def get(self):\n"
                  "        return self.n * self.scale\n"
                  "    def name(self):\n"
                  "        return 'base'\n"
                  "class Child(Base):\n"
                  "    def __init__(self, n, extra=1):\n"
                  "        super().__init__(n)\n"
                  "        self.extra = extra\n"
                  "    def get(self):\n"
                  "        return super().get() + self.extra\n"
                  "    def name(self):\n"
                  "        return 'child:' + super(Child, self).name()\n"
                  "c = Child(3, extra=4)\n"
                  "assert c.get() == 10 and c.name() == 'child:base'\n"
                  "assert Base.get(c) == 6 and Base(5).get() == 10\n"
                  "m = c.get\n"
                  "assert m() == 10\n"
                  "Base.scale = 3\n"
                  "assert c.get() == 13 and Child.scale == 3 and Child.__name__ == 'Child'\n"
                  "c.scale = 1\n"
                  "assert c.get() == 7 and Base.scale == 3\n"
                  "assert isinstance(c, Base) and isinstance(c, (int, Child)) and not isinstance(Base(1), Child)\n"
                  "assert hasattr(c, 'extra') and hasattr(c, 'get') and not hasattr(c, 'nope')\n"
                  "class Plain:\n"
                  "    pass\n"
                  "p = Plain()\n"
                  "p.x = 1\n"
                  "p.x += 1\n"
                  "assert p.x == 2 and str(Plain) == \"<class 'Plain'>\"\n"
                  "class Counter:\n"
                  "    def __init__(self):\n"
                  "        self.n = 0\n"
                  "    def __call__(self, k):\n"
                  "        self.n += k\n"
                  "        return self.n\n"
                  "k = Counter()\n"
                  "k(2)\n"
                  "assert k(3) == 5\n"
                  /* methods do not see the class body's names, as in Python */
                  "y = 'outer'\n"
                  "class S:\n"
                  "    y = 'class'\n"
                  "    def f(self):\n"
                  "        return y\n"
                  "assert S().f() == 'outer'\n"
                  /* a nested class's methods see the module, not the class bodies around */
                  "class Outer:\n"
                  "    class Inner:\n"
                  "        def f(self):\n"
                  "            return y\n"
                  "    def g(self):\n"
                  "        return Outer.Inner().f()\n"
                  "assert Outer().g() == 'outer'\n"
                  "class MyError(ValueError):\n"
                  "    def __init__(self, what):\n"
                  "        super().__init__('bad ' + what)\n"
                  "assert MyError('x').args == ('bad x',) and isinstance(MyError('x'), Exception)\n"
                  /* decorators: user ones, staticmethod, classmethod, property */
                  "def twice(f):\n"
                  "    def g(x):\n"
                  "        return f(f(x))\n"
                  "    return g\n"
                  "@twice\n"
                  "def inc(x):\n"
                  "    return x + 1\n"
                  "assert inc(0) == 2\n"
                  "class Config:\n"
                  "    base = 10\n"
                  "    def __init__(self, n):\n"
                  "        self.n = n\n"
                  "    @staticmethod\n"
                  "    def helper(a, b):\n"
                  "        return a + b\n"
                  "    @classmethod\n"
                  "    def make(cls, n):\n"
                  "        return cls(n * 2)\n"
                  "    @property\n"
                  "    def total(self):\n"
                  "        return self.n + self.base\n"
                  "class Sub(Config):\n"
                  "    base = 100\n"
                  "k = Config.make(3)\n"
                  "assert isinstance(k, Config) and k.n == 6 and k.total == 16\n"
                  "assert Config.helper(1, 2) == 3 and k.helper(2, 3) == 5 and k.make(1).n == 2\n"
                  "assert Sub.make(1).total == 102 and isinstance(Sub.make(1), Sub)\n");
    /* a model as a class builds its layers through methods */
    FlBundle *b = compile(HDR "class Net:\n"
                              "    def __init__(self, width):\n"
                              "        self.width = width\n"
                              "    def conv_bn(self, x, k):\n"
                              "        return layers.conv2d(x, num_filters=self.width, filter_size=k, padding=(k - 1) / 2)\n"
                              "    def net(self, x):\n"
                              "        return self.conv_bn(self.conv_bn(x, 3), 1)\n"
                              "img = layers.data(name='img', shape=[3, 8, 8])\n"
                              "out = Net(4).net(img)\n"
                              "r = layers.data(name='r', shape=[out.shape[1] * 100 + out.shape[3]])\n");
    CU_ASSERT_EQUAL(result(b), 408);
    CU_ASSERT_EQUAL(count(b, 0, "conv2d"), 2);
    fl_ir_bundle_free(b);
    static const ErrCase errs[] = {
        {"class A:\n    pass\nA(1)\n", "error: A() takes no arguments"},
        {"class A(3):\n    pass\n", "error: a class derives from a class, found int"},
        {"class A:\n    def __init__(self):\n        return 1\nA()\n", "error: __init__() should return None, not 'int'"},
        {"class A:\n    pass\nA().x\n", "error: 'A' object has no attribute 'x'"},
        {"class A:\n    pass\nA.x\n", "error: class 'A' has no attribute 'x'"},
        {"class A:\n    def f(self, a):\n        return a\nA().f()\n", "error: f() missing required argument 'a'"},
        {"super()\n", "error: super() without arguments is only valid in a method"},
        {"isinstance(1, 2)\n", "error: isinstance() arg 2 must be a class, a type or a tuple of them, found int"},
        {"@staticmethod(1)\ndef f():\n    pass\n", "error: 'int' object is not callable"},
        {"print(1, file=2)\n", "error: print(file=...) takes sys.stdout or sys.stderr, found int"},
        {"for i in range(2):\n    class A:\n        break\n", "error: 'break' outside a loop"},
    };
    check_errors("", errs, FL_ARRAY_LEN(errs));
}

static void test_python_library(void) {
    check_asserts("import math\nimport functools\nfrom functools import partial, reduce\n"
                  "def db(word, mark, **ignored):\n    return word * 10 + mark\n"
                  "def feed(word, mark, extra):\n    total = 0\n    return db(**locals())\n"
                  "assert feed(4, 2, 9) == 42 and sorted(locals()['feed'](1, 1, 1) for _ in [0]) == [11]\n"
                  "assert 'feed' in locals() and 'total' not in locals()\n"
                  "assert getattr(1, 'nope', None) is None and getattr([], 'append', 0) != 0\n"
                  "assert getattr(fluid, 'nope', 3) == 3 and getattr(fluid.ParamAttr(), 'name', 7) is None\n"
                  "class P:\n    pass\n"
                  "p = P()\nsetattr(p, 'z', 5)\nsetattr(P, 'w', 6)\n"
                  "assert p.z == 5 and p.w == 6 and hasattr(p, 'w') and hasattr('', 'join') and not hasattr(1, 'x')\n"
                  "assert isinstance(3, int) and isinstance(True, int) and isinstance(3.0, (int, float))\n"
                  "assert not isinstance('a', int) and isinstance([], list) and isinstance({}, dict) and isinstance((), tuple)\n"
                  "assert isinstance(fluid.ParamAttr(name='w'), fluid.ParamAttr)\n"
                  "assert sorted([3, 1, 2]) == [1, 2, 3] and sorted(['b', 'a', 'c'], reverse=True) == ['c', 'b', 'a']\n"
                  "assert sorted([(1, 'b'), (0, 'z'), (1, 'a')]) == [(0, 'z'), (1, 'a'), (1, 'b')]\n"
                  "assert sorted([3, -4, 1, -3], key=abs) == [1, 3, -3, -4]\n"  /* stable */
                  "assert sorted({'b': 1, 'a': 2}) == ['a', 'b'] and sorted([]) == []\n"
                  "l = [3, 1, 2]\nl.sort(reverse=True)\nassert l == [3, 2, 1]\n"
                  "assert list(reversed([1, 2])) == [2, 1] and list(map(lambda x: x * 2, [1, 2])) == [2, 4]\n"
                  "assert list(map(lambda a, b: a + b, [1, 2, 3], [10, 20])) == [11, 22]\n"
                  "assert list(filter(None, [0, 1, 2])) == [1, 2] and list(filter(lambda x: x > 1, [1, 2, 3])) == [2, 3]\n"
                  "assert any([0, 1]) and not any([]) and all([]) and not all([1, 0])\n"
                  "assert min([3, 1, 2], key=lambda x: -x) == 3 and max('a', 'bb', key=len) == 'bb'\n"
                  "assert max([], default=7) == 7 and max([], default=None) is None and min(['b', 'a']) == 'a' and max([(1, 2), (1, 3)]) == (1, 3)\n"
                  "assert reduce(lambda a, b: a + b, [1, 2, 3]) == 6 and functools.reduce(lambda a, b: a * b, [], 1) == 1\n"
                  "def f(a, b, c=0):\n    return a * 100 + b * 10 + c\n"
                  "g = partial(f, 1, c=3)\n"
                  "assert g(2) == 123 and g(2, c=5) == 125 and functools.partial(f, b=2)(1) == 120\n"
                  "assert math.sqrt(16) == 4.0 and math.floor(2.5) == 2 and math.ceil(2.1) == 3 and math.floor(-0.5) == -1\n"
                  "assert abs(math.pi - 3.14159265) < 1e-8 and abs(math.e - 2.71828183) < 1e-8\n"
                  "assert math.pow(2, 10) == 1024.0 and math.log(math.e) == 1.0 and math.exp(0) == 1.0\n"
                  "assert math.log(8, 2) == 3.0 and math.log10(1000) == 3.0 and math.log2(8) == 3.0\n"
                  "d = {'a': 1}\nd.update({'b': 2}, c=3)\nd.update([('e', 5)])\n"
                  "assert d.get('b') == 2 and d.get('q') is None and d.pop('a') == 1 and d.pop('q', 9) == 9\n"
                  "assert d.setdefault('z', 4) == 4 and d.setdefault('z', 8) == 4 and len(d) == 4\n"
                  "assert sorted(d.items()) == [('b', 2), ('c', 3), ('e', 5), ('z', 4)] and d.copy() == d\n"
                  "l = [1, 2, 3]\nl.insert(0, 0)\nl.insert(-1, 9)\nl.remove(9)\nl.reverse()\n"
                  "assert l == [3, 2, 1, 0] and l.index(1) == 2 and l.count(3) == 1 and (1, 2).index(2) == 1\n"
                  "assert 'a,b,,c'.split(',') == ['a', 'b', '', 'c'] and ' a  b '.split() == ['a', 'b']\n"
                  "assert 'a b c'.split(' ', 1) == ['a', 'b c'] and '-'.join(['x', 'y']) == 'x-y'\n"
                  "assert 'aXbX'.replace('X', '_') == 'a_b_' and 'aXbX'.replace('X', '', 1) == 'abX'\n"
                  "assert ' x '.strip() == 'x' and 'Ab'.lower() == 'ab' and 'Ab'.upper() == 'AB'\n"
                  "assert '{} {}'.format(1, 'a') == '1 a' and '{1}{0}'.format('a', 'b') == 'ba'\n"
                  "assert '{x:.2f}'.format(x=3.14159) == '3.14' and '{:5d}|{:<4}|'.format(42, 'ab') == '   42|ab  |'\n"
                  "assert '{{}}{}'.format(1) == '{}1' and '{:.1%}'.format(0.25) == '25.0%'\n"
                  "class T:\n    def __call__(self):\n        return 1\n"
                  "assert type(T()) is T and type(1) is int and type('a') == str and type(T()).__name__ == 'T'\n"
                  "assert type(1.5).__name__ == 'float' and f.__name__ == 'f' and len.__name__ == 'len'\n"
                  "assert callable(f) and callable(T) and callable(T()) and callable(len) and not callable(1)\n"
                  "assert round(2.5) == 2 and round(3.5) == 4 and round(-0.5) == 0 and round(7) == 7\n"
                  "assert round(2.675, 2) == 2.67 or round(2.675, 2) == 2.68\n");
    static const ErrCase errs[] = {
        {"getattr(1, 'nope')\n", "error: 'int' object has no attribute 'nope'"},
        {"sorted([1, 'a'])\n", "error: cannot order str and int"},
        {"import math\nmath.sqrt(-1)\n", "error: math.sqrt(): math domain error (-1)"},
        {"import math\nmath.log(0)\n", "error: math.log(): math domain error"},
        {"from functools import reduce\nreduce(lambda a, b: a, [])\n", "error: reduce() of an empty sequence with no initial value"},
        {"{}.pop('k')\n", "error: pop(): key 'k' not in dict"},
        {"'{}'.format()\n", "error: format(): no argument for the field '{}'"},
        {"'{:q}'.format(1)\n", "error: format(): unknown format code 'q' for object of type 'int'"},
        {"min([])\n", "error: min() of an empty sequence"},
    };
    check_errors("", errs, FL_ARRAY_LEN(errs));
}

/* str.format's specs as Python's format(x, spec) reads them: fill and alignment (a str to the
 * left, a number to the right, '=' after the sign), '0' (zeros after a number's sign, a str's
 * fill), sign, '#', width, ',' and '_' grouping, precision and type codes; each expected value is
 * what python3 gives, and the errors are Python's for a spec that does not fit the value's type. */
static void test_str_format_spec(void) {
    check_asserts(
                  "assert '{:05}'.format('ab') == 'ab000' and '{:5}'.format(True) == '    1'\n"
                  "assert '{:.3}'.format(1.0) == '1.0' and '{:10}'.format(1e20) == '     1e+20'\n"
                  "assert '{:>05}'.format('ab') == '000ab' and '{:0=+10,}'.format(1234) == '+0,001,234'\n"
                  "assert '{:=+8.2f}'.format(3.14159) == '+   3.14' and '{:*^9}'.format('ab') == '***ab****'\n"
                  "assert '{:#x}'.format(255) == '0xff' and '{:#010b}'.format(5) == '0b00000101'\n"
                  "assert '{:,}'.format(1234567) == '1,234,567' and '{:_.2f}'.format(1234567.891) == '1_234_567.89'\n"
                  "assert '{:c}'.format(65) == 'A' and '{:e}'.format(12345.678) == '1.234568e+04'\n"
                  "assert '{:%}'.format(0.25) == '25.000000%' and '{:>6.1%}'.format(0.25) == ' 25.0%'\n"
                  "assert '{:010}'.format(-3.5) == '-0000003.5' and '{:^6}'.format(7) == '  7   '\n"
                  "assert '{:x<4}'.format(7) == '7xxx' and '{:.2}'.format('abc') == 'ab'\n"
                  "assert '{:5.1}'.format('xyz') == 'x    ' and '{: d}'.format(5) == ' 5'\n"
                  "assert '{:+}'.format(0.5) == '+0.5' and '{:0=5}'.format(-7) == '-0007'\n"
                  "assert '{:010,}'.format(1234) == '00,001,234' and '{:_x}'.format(0xdeadbeef) == 'dead_beef'\n"
                  "assert '{:#.0f}'.format(2.0) == '2.' and '{:#g}'.format(2.0) == '2.00000'\n"
                  "assert '{:<05}'.format(3) == '30000' and '{:^05}'.format(3) == '00300'\n"
                  "assert '{:.3}'.format(100.0) == '1e+02' and '{:.5}'.format(12.0) == '12.0'\n"
                  "assert '{:,.2f}'.format(-1234567.891) == '-1,234,567.89' and '{:8}'.format(float('inf')) == '     inf'\n"
                  "assert '{:#X}'.format(255) == '0XFF' and '{:→^5}'.format('é') == '→→é→→'\n"
                  "assert '{:>4}|{:<4}|{:^4}'.format('a', 'b', 'c') == '   a|b   | c  ' and '{:g}'.format(1e-5) == '1e-05'\n"
                  "assert '{:n}'.format(1234) == '1234' and '{:.0f}'.format(2.5) == '2'\n"
                  "assert '{:-^11,}'.format(-1234) == '---1,234---'\n");
    static const ErrCase errs[] = {
        {"s = '{:s}'.format(5)\n", "error: format(): unknown format code 's' for object of type 'int'"},
        {"s = '{:d}'.format(2.5)\n", "error: format(): unknown format code 'd' for object of type 'float'"},
        {"s = '{:.2}'.format(5)\n", "error: format(): precision not allowed in integer format specifier"},
        {"s = '{:=5}'.format('ab')\n", "error: format(): '=' alignment not allowed in string format specifier"},
        {"s = '{:+}'.format('ab')\n", "error: format(): sign not allowed in string format specifier"},
        {"s = '{:,x}'.format(5)\n", "error: format(): cannot specify ',' with 'x'"},
        {"s = '{:5q}'.format(1.5)\n", "error: format(): unknown format code 'q' for object of type 'float'"},
        {"s = '{:5.}'.format(1.5)\n", "error: format(): unsupported format spec '5.'"},
    };
    check_errors("", errs, FL_ARRAY_LEN(errs));
}

static void test_python_statements(void) {
    check_asserts("a, *b = [1, 2, 3]\nassert a == 1 and b == [2, 3]\n"
                  "*h, t = (1, 2, 3)\nassert h == [1, 2] and t == 3\n"
                  "x, *y, z = 'ab'\nassert y == [] and x == 'a'\n"
                  "for first, *rest in [(1, 2, 3)]:\n    assert rest == [2, 3]\n"
                  "assert [*b, *h, 0] == [2, 3, 1, 2, 0] and (*b,) == (2, 3)\n"
                  "assert 0 < a < 2 and not (0 < a < 1) and 1 <= a <= 1 < 5 and (a < 2) < 2\n"
                  "calls = []\n"
                  "def mid():\n    calls.append(1)\n    return 5\n"
                  "assert 0 < mid() < 10 and len(calls) == 1\n"          /* the middle operand once */
                  "assert not (9 < mid() < 10) and len(calls) == 2\n"
                  "assert not (1 > 2 < mid()) and len(calls) == 2\n"    /* short-circuit */
                  "counter = 0\n"
                  "def bump():\n    global counter\n    counter += 1\n"
                  "bump()\nbump()\nassert counter == 2\n"
                  "def make():\n    global made\n    made = 'yes'\nmake()\nassert made == 'yes'\n"
                  "def outer():\n"
                  "    n = 0\n"
                  "    def inc():\n"
                  "        nonlocal n\n"
                  "        n += 1\n"
                  "    inc()\n"
                  "    inc()\n"
                  "    return n\n"
                  "assert outer() == 2\n"
                  "assert 7 / 2 == 3.5 and 7 // 2 == 3 and -7 // 2 == -4 and isinstance(6 / 3, float) and 6 / 3 == 2\n"
                  "assert 7.5 // 2 == 3.0 and isinstance(7.5 // 2, float) and -7.5 // 2 == -4.0 and 7 % -3 == -2\n"
                  "q = 7\nq /= 2\nassert q == 3.5\n"
                  "assert True, 'never shown'\n"
                  "xs = [[1], [2, 3]]\n"
                  "assert max(len(x) for x in xs) == 2 and sum(len(x) for x in xs if x) == 3\n"
                  "assert any(x == [2, 3] for x in xs) and tuple((i * 2 for i in range(3))) == (0, 2, 4)\n");
    /* a chained comparison of Vars joins its links with logical_and */
    FlBundle *b = compile(HDR "x = layers.data(name='x', shape=[1])\nc = 0.0 < x < 1.0\n");
    CU_ASSERT_EQUAL(count(b, 0, "logical_and"), 1);
    CU_ASSERT_EQUAL(count(b, 0, "less_than"), 2);
    fl_ir_bundle_free(b);
    static const ErrCase errs[] = {
        {"assert 1 == 2\n", "snippet.fl:3:1: error: assertion failed\n"},
        {"assert [], 'empty: %d' % 0\n", "snippet.fl:3:1: error: assertion failed: empty: 0\n"},
        {"raise ValueError('bad value')\n", "snippet.fl:3:1: error: ValueError: bad value\n"},
        {"raise NotImplementedError\n", "snippet.fl:3:1: error: NotImplementedError\n"},
        {"raise 3\n", "error: exceptions must derive from BaseException, found int"},
        {"raise\n", "error: 'raise' without an exception"},
        {"x = layers.data(name='x', shape=[1])\nassert x\n", "error: 'assert' needs a compile-time condition, found a Var"},
        {"x = layers.data(name='x', shape=[1])\nif x > 0.0:\n    raise ValueError('v')\n",
         "note: this is inside a runtime 'if', loop or select case"},
        {"def f():\n    nonlocal q\nf()\n", "snippet.fl:4:14: error: no binding for nonlocal 'q' found"},
        {"a, *b = 1\n", "error: cannot unpack a int into 2 names"},
        {"a, *b = []\n", "error: cannot unpack 0 values into at least 1 names"},
        {"x = *[1]\n", "error: a starred expression is only allowed in a list, a tuple or an assignment target"},
        {"x = 1 < 2 < 'a'\n", "error: cannot order int and str"},
        {"for i in range(6 / 2):\n    pass\n", "error: range() argument must be an int, found the float 3.0\n"},
        {"for i in range(6 / 2):\n    pass\n", "note: '/' always gives a float; '//' divides ints to an int\n"},
    };
    check_errors("", errs, FL_ARRAY_LEN(errs));
}

/* A float that is a whole number (what '/' gives) is accepted where an int attribute is
 * expected, by layers and by ops built directly; others are errors with a note. */
static void test_whole_float_attrs(void) {
    FlBundle *b = compile(HDR "x = layers.data(name='x', shape=[3, 8, 8])\n"
                              "k = 3\n"
                              "y = layers.conv2d(x, num_filters=4, filter_size=k, padding=(k - 1) / 2, stride=[2.0, 1])\n"
                              "z = layers.pool2d(y, pool_size=4 / 2, pool_stride=2)\n"
                              "t = layers._op('top_k', X=layers.reshape(z, shape=[-1, 8]), k=6 / 3)\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    const FlOpDesc *conv = op_at(b, 0, "conv2d", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(conv);
    FlAttr *pad = fl_ir_op_attr(conv, "paddings"), *st = fl_ir_op_attr(conv, "strides");
    CU_ASSERT(pad && pad->n == 2 && pad->ints[0] == 1 && pad->ints[1] == 1);
    CU_ASSERT(st && st->n == 2 && st->ints[0] == 2 && st->ints[1] == 1);
    FlAttr *ks = fl_ir_op_attr(op_at(b, 0, "pool2d", 0), "ksize");
    CU_ASSERT(ks && ks->n == 2 && ks->ints[0] == 2);
    CU_ASSERT_EQUAL(fl_ir_op_get_int(op_at(b, 0, "top_k", 0), "k", 0), 2);
    fl_ir_bundle_free(b);
    /* a dimension: fc(size=channels / ratio), as SE-ResNeXt's squeeze */
    check_result(HDR "x = layers.data(name='x', shape=[64])\n"
                     "y = layers.fc(x, size=64 / 16)\n"
                     "r = layers.data(name='r', shape=[y.shape[1]])\n",
                 4);
    static const ErrCase errs[] = {
        {"y = layers.conv2d(x, num_filters=4, filter_size=3, padding=3 / 2)\n",
         "error: conv2d() padding must be an int, found 1.5 (a float that is not a whole number)\n"},
        {"y = layers.conv2d(x, num_filters=4, filter_size=3, padding=3 / 2)\n",
         "note: '/' always gives a float; '//' divides ints to an int"},
        {"y = layers._op('top_k', X=x, k=1.5)\n", "error: top_k: attribute 'k' must be an int, found 1.5 (a float that is not a whole number)"},
        {"y = layers._op('reshape', X=x, shape=[3, 64, 1.5])\n", "error: reshape: attribute 'shape' must be an int, found 1.5 (a float"},
        {"y = layers._op('reshape', X=x, shape=2.5)\n", "error: reshape: attribute 'shape' must be an int, found 2.5 (a float"},
    };
    check_errors("x = layers.data(name='x', shape=[3, 8, 8])\n", errs, FL_ARRAY_LEN(errs));
}

int main(void) {
    static const FlTestCase cases[] = {
        {"functions", test_functions},
        {"control_flow", test_control_flow},
        {"values", test_values},
        {"nesting", test_nesting},
        {"big_dicts", test_big_dicts},
        {"exact_compare", test_exact_compare},
        {"int_semantics", test_int_semantics},
        {"size_limits", test_size_limits},
        {"var_names_and_aliasing", test_var_names_and_aliasing},
        {"layer_arguments", test_layer_arguments},
        {"more_layers", test_more_layers},
        {"embedding_padding_idx", test_embedding_padding_idx},
        {"int64_exact", test_int64_exact},
        {"format", test_format},
        {"str_format_spec", test_str_format_spec},
        {"comprehensions", test_comprehensions},
        {"chained_assignment", test_chained_assignment},
        {"import_star", test_import_star},
        {"layers_modules", test_layers_modules},
        {"flags", test_flags},
        {"flag_warnings", test_flag_warnings},
        {"run_spec_errors", test_run_spec_errors},
        {"io_sequence", test_io_sequence},
        {"user_module", test_user_module},
        {"var_operators", test_var_operators},
        {"fc_and_params", test_fc_and_params},
        {"runtime_while", test_runtime_while},
        {"runtime_if", test_runtime_if},
        {"runtime_break_continue", test_runtime_break_continue},
        {"runtime_loop_errors", test_runtime_loop_errors},
        {"channels_go_select", test_channels_go_select},
        {"parallel_for", test_parallel_for},
        {"data_stop_gradient", test_data_stop_gradient},
        {"programs_and_guards", test_programs_and_guards},
        {"backward_sum", test_backward_sum},
        {"several_minimize", test_several_minimize},
        {"program_methods", test_program_methods},
        {"classes", test_classes},
        {"sets", test_sets},
        {"python_library", test_python_library},
        {"python_statements", test_python_statements},
        {"whole_float_attrs", test_whole_float_attrs},
    };
    return fl_test_run("eval", NULL, NULL, cases, sizeof cases / sizeof cases[0]);
}
