/* test_eval: the language's semantics, construct by construct. Each case compiles a snippet and
 * checks the IR it builds. Compile-time results are observed through the shape of a data var:
 * `layers.data(name="r", shape=[VALUE])`. */
#include <CUnit/Basic.h>
#include "tests/cunit.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/ir.h"
#include "lang/eval.h"

#define HDR "import fluid\nfrom fluid import layers\n"

static FlBundle *compile_defs(const char *src, const char *const *defs, size_t ndefs) {
    FlCompileOptions opt = {.defines = defs, .ndefines = ndefs};
    FlBundle *b = NULL;
    FlBuf diag = {0};
    int n = fl_compile_source("tests/e2e/snippet.fl", src, strlen(src), &opt, &b, &diag);
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
    int n = fl_compile_source("tests/e2e/snippet.fl", src, strlen(src), NULL, &b, &diag);
    CU_ASSERT(n > 0);
    CU_ASSERT_PTR_NULL(b);
    fl_ir_bundle_free(b);
    char *s = strdup(fl_buf_str(&diag));
    fl_buf_free(&diag);
    return s;
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

static void test_user_module(void) {
    /* tests/e2e/helper_mod.fl is next to the (virtual) snippet */
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
    const char *ivar = fl_ir_op_output1(op_at(b, 0, "fill_constant", 0), "Out");
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
    const char *zvar = fl_ir_op_output1(op_at(b, 0, "fill_constant", 1), "Out");
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

int main(void) {
    static const FlTestCase cases[] = {
        {"functions", test_functions},
        {"control_flow", test_control_flow},
        {"values", test_values},
        {"flags", test_flags},
        {"user_module", test_user_module},
        {"var_operators", test_var_operators},
        {"fc_and_params", test_fc_and_params},
        {"runtime_while", test_runtime_while},
        {"runtime_if", test_runtime_if},
        {"channels_go_select", test_channels_go_select},
        {"parallel_for", test_parallel_for},
        {"programs_and_guards", test_programs_and_guards},
        {"backward_sum", test_backward_sum},
    };
    return fl_test_run("eval", NULL, NULL, cases, sizeof cases / sizeof cases[0]);
}
