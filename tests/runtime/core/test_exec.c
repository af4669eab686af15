/* test_exec.c: the executor on compiled and hand-built programs: forward values against hand
 * computations, an SGD step, while / if / parallel_for / list_index, feeds (checks, reshape,
 * errors with exact messages), runtime error messages with their .fl location, unsupported ops,
 * deterministic seeds. */
#include <unistd.h>

#include "tests/runtime/core/ct.h"
#include "compiler/ir/rules.h"

#include "runtime/rng.h"

static void feed_run(Ct *c, const FlFeed *f, size_t nf, FlFetch *out, size_t nout) {
    FlErr e = {{0}};
    CT_OK(fl_executor_run(c->ex, c->scope, f, nf, out, nout, &e), &e);
}

/* ---- forward values: a 2-layer MLP ---- */
static void test_mlp_forward(void) {
    Ct c = ct_open("mlp.fl",
                   "from fluid import layers\n"
                   "x = layers.data(name=\"x\", shape=[3], dtype=\"float32\")\n"
                   "h = layers.fc(x, size=4, act=\"relu\")\n"
                   "y = layers.fc(h, size=2)\n");
    /* nonzero biases so that they matter */
    double b0v[4] = {0.1, -0.2, 0.3, -0.4}, b1v[2] = {0.5, -0.5};
    FlTensor b0 = ct_tensor(FL_DT_FLOAT32, 1, (int64_t[]){4}, b0v);
    FlTensor b1 = ct_tensor(FL_DT_FLOAT32, 1, (int64_t[]){2}, b1v);
    fl_scope_set_tensor(c.scope, "fc_0.b_0", &b0);
    fl_scope_set_tensor(c.scope, "fc_1.b_0", &b1);
    double xv[2 * 3] = {1, 2, 3, -1, 0.5, 0.25};
    FlTensor x = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){2, 3}, xv);
    FlFeed f = {"x", &x};
    FlFetch out = {"elementwise_add_1.tmp_0", FL_TENSOR_INIT};
    feed_run(&c, &f, 1, &out, 1);
    CU_ASSERT_EQUAL(out.tensor.ndim, 2);
    CU_ASSERT_EQUAL(out.tensor.ne[0], 2);
    CU_ASSERT_EQUAL(out.tensor.ne[1], 2);
    for (int r = 0; r < 2; r++) {
        double h[4];
        for (int j = 0; j < 4; j++) {
            double s = b0v[j];
            for (int k = 0; k < 3; k++) s += xv[r * 3 + k] * ct_get(c.scope, "fc_0.w_0", k * 4 + j);
            h[j] = s > 0 ? s : 0;
        }
        for (int j = 0; j < 2; j++) {
            double s = b1v[j];
            for (int k = 0; k < 4; k++) s += h[k] * ct_get(c.scope, "fc_1.w_0", k * 2 + j);
            CT_NEAR(fl_tensor_get(&out.tensor, r * 2 + j), s, 1e-5);
        }
    }
    fl_tensor_fini(&out.tensor);
    fl_tensor_fini(&x);
    fl_tensor_fini(&b0);
    fl_tensor_fini(&b1);
    ct_close(&c);
}

/* ---- fills shaped by the batch: the dim comes from the fed input at each run ---- */
static void test_batch_size_like(void) {
    Ct c = ct_open("batch_like.fl",
                   "from fluid import layers\n"
                   "x = layers.data(name=\"x\", shape=[3], dtype=\"float32\")\n"
                   "f = layers.fill_constant_batch_size_like(x, shape=[2, -1], dtype=\"int64\", value=7, output_dim_idx=1)\n"
                   "u = layers.uniform_random_batch_size_like(x, shape=[-1, 4], min=2.0, max=3.0)\n");
    for (int64_t rows = 1; rows <= 5; rows += 4) {
        double xv[15] = {0};
        FlTensor x = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){rows, 3}, xv);
        FlFeed f = {"x", &x};
        FlFetch out[2] = {{"fill_constant_batch_size_like_0.tmp_0", FL_TENSOR_INIT},
                          {"uniform_random_batch_size_like_0.tmp_0", FL_TENSOR_INIT}};
        feed_run(&c, &f, 1, out, 2);
        CU_ASSERT(out[0].tensor.ndim == 2 && out[0].tensor.ne[0] == 2 && out[0].tensor.ne[1] == rows);
        CU_ASSERT_EQUAL(out[0].tensor.dtype, FL_DT_INT64);
        CU_ASSERT_EQUAL(fl_tensor_get(&out[0].tensor, 2 * rows - 1), 7);
        CU_ASSERT(out[1].tensor.ndim == 2 && out[1].tensor.ne[0] == rows && out[1].tensor.ne[1] == 4);
        for (int64_t i = 0; i < 4 * rows; i++) {
            double v = fl_tensor_get(&out[1].tensor, i);
            CU_ASSERT(v >= 2 && v < 3);
        }
        fl_tensor_fini(&out[0].tensor);
        fl_tensor_fini(&out[1].tensor);
        fl_tensor_fini(&x);
    }
    ct_close(&c);
}

/* ---- one SGD step of a fit_a_line-shaped program against the hand-computed update ---- */
static void test_sgd_step(void) {
    Ct c = ct_open("fit.fl",
                   "from fluid import layers, optimizer\n"
                   "x = layers.data(name=\"x\", shape=[13], dtype=\"float32\")\n"
                   "y = layers.data(name=\"y\", shape=[1], dtype=\"float32\")\n"
                   "pred = layers.fc(x, size=1)\n"
                   "loss = layers.mean(layers.square_error_cost(pred, y))\n"
                   "optimizer.SGD(learning_rate=0.01).minimize(loss)\n");
    enum { N = 5, D = 13 };
    double xv[N * D], yv[N], w[D], b;
    FlRng r;
    fl_rng_init(&r, 7);
    for (int i = 0; i < N * D; i++) xv[i] = fl_rng_uniform(&r) * 2 - 1;
    for (int i = 0; i < N; i++) yv[i] = fl_rng_uniform(&r) * 4;
    for (int k = 0; k < D; k++) w[k] = ct_get(c.scope, "fc_0.w_0", k);
    b = ct_get(c.scope, "fc_0.b_0", 0);
    FlTensor x = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){N, D}, xv);
    FlTensor y = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){N, 1}, yv);
    FlFeed f[2] = {{"x", &x}, {"y", &y}};
    FlFetch out = {"mean_0.tmp_0", FL_TENSOR_INIT};
    feed_run(&c, f, 2, &out, 1);
    double loss = 0, gw[D] = {0}, gb = 0;
    for (int i = 0; i < N; i++) {
        double p = b;
        for (int k = 0; k < D; k++) p += xv[i * D + k] * w[k];
        double d = p - yv[i];
        loss += d * d / N;
        for (int k = 0; k < D; k++) gw[k] += 2 * d * xv[i * D + k] / N;
        gb += 2 * d / N;
    }
    CT_NEAR(fl_tensor_get(&out.tensor, 0), loss, 1e-4);
    for (int k = 0; k < D; k++) CT_NEAR(ct_get(c.scope, "fc_0.w_0", k), w[k] - 0.01 * gw[k], 1e-5);
    CT_NEAR(ct_get(c.scope, "fc_0.b_0", 0), b - 0.01 * gb, 1e-5);
    /* the temporaries stayed in the call scope: only persistable vars are in the scope */
    CU_ASSERT_PTR_NULL(fl_scope_find(c.scope, "mean_0.tmp_0"));
    CU_ASSERT_PTR_NULL(fl_scope_find(c.scope, "x"));
    CU_ASSERT_PTR_NOT_NULL(fl_scope_find(c.scope, "fc_0.w_0"));
    fl_tensor_fini(&out.tensor);
    fl_tensor_fini(&x);
    fl_tensor_fini(&y);
    ct_close(&c);
}

/* ---- while with a loop-carried counter ---- */
static void test_while_counter(void) {
    Ct c = ct_open("loop.fl",
                   "from fluid import layers\n"
                   "i = layers.fill_constant(shape=[1], dtype=\"int64\", value=0)\n"
                   "n = layers.fill_constant(shape=[1], dtype=\"int64\", value=10)\n"
                   "while i < n:\n"
                   "    i = i + 1\n");
    FlFetch out = {"assign_0.tmp_0", FL_TENSOR_INIT}; /* i: the var it owns from the loop on */
    feed_run(&c, NULL, 0, &out, 1);
    CU_ASSERT_EQUAL(out.tensor.dtype, FL_DT_INT64);
    CU_ASSERT_EQUAL(fl_tensor_get(&out.tensor, 0), 10);
    fl_tensor_fini(&out.tensor);
    ct_close(&c);
}

/* ---- if on a Var ---- */
static void test_if_on_var(void) {
    Ct c = ct_open("cond.fl",
                   "from fluid import layers\n"
                   "c = layers.data(name=\"c\", shape=[1], dtype=\"float32\")\n"
                   "z = layers.scale(c, scale=0.0, bias=-1.0)\n"
                   "if c > 2.0:\n"
                   "    z = c * 2.0\n");
    double cases[2][2] = {{3, 6}, {1, -1}};
    for (int k = 0; k < 2; k++) {
        FlTensor cv = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){1, 1}, &cases[k][0]);
        FlFeed f = {"c", &cv};
        FlFetch out = {"assign_0.tmp_0", FL_TENSOR_INIT}; /* z: the var it owns from the if on */
        feed_run(&c, &f, 1, &out, 1);
        CT_NEAR(fl_tensor_get(&out.tensor, 0), cases[k][1], 1e-6);
        fl_tensor_fini(&out.tensor);
        fl_tensor_fini(&cv);
    }
    ct_close(&c);
}

/* ---- parallel_for: every iteration runs once, with its own index, and writes its list
 * element through list_index's alias ---- */
static void test_parallel_for(void) {
    enum { N = 16 };
    char src[1024];
    snprintf(src, sizeof src,
             "from fluid import layers\n"
             "xs = []\n"
             "for k in range(%d):\n"
             "    xs.append(layers.fill_constant(shape=[1], dtype=\"int64\", value=-1))\n"
             "parallel_for it in range(%d):\n"
             "    layers.assign(it * 10, output=xs[it])\n",
             N, N);
    Ct c = ct_open("pfor.fl", src);
    FlFetch out[N];
    char names[N][64];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "fill_constant_%d.tmp_0", i);
        out[i] = (FlFetch){names[i], FL_TENSOR_INIT};
    }
    for (int rep = 0; rep < 20; rep++) {
        feed_run(&c, NULL, 0, out, N);
        for (int i = 0; i < N; i++) CU_ASSERT_EQUAL(fl_tensor_get(&out[i].tensor, 0), i * 10);
    }
    for (int i = 0; i < N; i++) fl_tensor_fini(&out[i].tensor);
    ct_close(&c);
}

/* ---- feeds ---- */
static const char *fit_src =
    "from fluid import layers\n"
    "x = layers.data(name=\"x\", shape=[13], dtype=\"float32\")\n"
    "pred = layers.fc(x, size=1)\n";

static void expect_feed_error(Ct *c, const FlFeed *f, size_t nf, const char *want) {
    FlErr e = {{0}};
    FlFetch out = {"mul_0.tmp_0", FL_TENSOR_INIT};
    CU_ASSERT_EQUAL(fl_executor_run(c->ex, c->scope, f, nf, &out, 1, &e), FL_ERROR);
    CT_MSG(e.msg, want);
    CU_ASSERT_PTR_NULL(out.tensor.buf);
}

static void test_bad_feeds(void) {
    Ct c = ct_open("fit_a_line.fl", fit_src);
    double v[32 * 13] = {0};
    FlTensor x12 = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){32, 12}, v);
    FlTensor xi = ct_tensor(FL_DT_INT64, 2, (int64_t[]){32, 13}, v);
    FlTensor x3 = ct_tensor(FL_DT_FLOAT32, 3, (int64_t[]){2, 13, 1}, v);
    FlTensor ok = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){32, 13}, v);
    expect_feed_error(&c, &(FlFeed){"x", &x12}, 1, "feed 'x': expected shape [-1, 13], found [32, 12]");
    expect_feed_error(&c, &(FlFeed){"x", &xi}, 1, "feed 'x': expected dtype float32, found int64");
    expect_feed_error(&c, NULL, 0,
                      "missing feed 'x' (float32 [-1, 13]): the program reads it and no feed or "
                      "scope var gives it");
    expect_feed_error(&c, (FlFeed[]){{"x", &ok}, {"nope", &ok}}, 2,
                      "feed 'nope': the program has no var of that name in its global block");
    expect_feed_error(&c, (FlFeed[]){{"x", &ok}, {"x", &ok}}, 2, "feed 'x' is given twice");
    /* a declared row whose dims multiply past int64: the flat-rows count overflowed (fuzz_pyfeed
     * found it with an empty feed of such dims, which fl_shape_numel now refuses to make) */
    Ct big = ct_open("big.fl", "from fluid import layers\n"
                               "x = layers.data(name='x', shape=[1099511627776, 1099511627776], dtype='float32')\n"
                               "y = layers.scale(x, scale=2.0)\n");
    FlErr be = {{0}};
    FlFetch by = {"scale_0.tmp_0", FL_TENSOR_INIT};
    CU_ASSERT_EQUAL(fl_executor_run(big.ex, big.scope, &(FlFeed){"x", &ok}, 1, &by, 1, &be), FL_ERROR);
    CT_MSG(be.msg, "feed 'x': expected shape [-1, 1099511627776, 1099511627776], found [32, 13]");
    ct_close(&big);
    /* [2, 13, 1] has 13 elements per row: reshaped to [2, 13] */
    FlErr e = {{0}};
    FlFetch out = {"mul_0.tmp_0", FL_TENSOR_INIT};
    CT_OK(fl_executor_run(c.ex, c.scope, &(FlFeed){"x", &x3}, 1, &out, 1, &e), &e);
    CU_ASSERT_EQUAL(out.tensor.ne[0], 2);
    /* a fetch that does not exist */
    FlFetch bad = {"nope", FL_TENSOR_INIT};
    CU_ASSERT_EQUAL(fl_executor_run(c.ex, c.scope, &(FlFeed){"x", &ok}, 1, &bad, 1, &e), FL_ERROR);
    CT_MSG(e.msg, "fetch 'nope': no var of that name");
    fl_tensor_fini(&out.tensor);
    fl_tensor_fini(&x12);
    fl_tensor_fini(&xi);
    fl_tensor_fini(&x3);
    fl_tensor_fini(&ok);
    ct_close(&c);
}

/* flat CSV rows [N, 64] into a declared [-1, 1, 8, 8] */
static void test_feed_reshape(void) {
    Ct c = ct_open("img.fl",
                   "from fluid import layers\n"
                   "img = layers.data(name=\"img\", shape=[1, 8, 8], dtype=\"float32\")\n"
                   "y = layers.scale(img, scale=2.0)\n");
    double v[3 * 64];
    for (int i = 0; i < 3 * 64; i++) v[i] = i;
    FlTensor x = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){3, 64}, v);
    FlFetch out = {"scale_0.tmp_0", FL_TENSOR_INIT};
    feed_run(&c, &(FlFeed){"img", &x}, 1, &out, 1);
    CU_ASSERT_EQUAL(out.tensor.ndim, 4);
    CU_ASSERT_EQUAL(out.tensor.ne[0], 3);
    CU_ASSERT_EQUAL(out.tensor.ne[3], 8);
    CU_ASSERT_EQUAL(fl_tensor_get(&out.tensor, 100), 200);
    fl_tensor_fini(&out.tensor);
    fl_tensor_fini(&x);
    ct_close(&c);
}

/* ---- runtime errors name the op, its .fl location, the vars and their shapes ---- */

/* A hand-built mul of x [32, 12] by fc_0.w_0 [13, 1] at fit_a_line.fl:9:8 (docs/embedding.md shows
 * the same message from the real program, where a feed check comes first). */
static void test_runtime_error_message(void) {
    FlProgram *p = fl_ir_program_new();
    FlBlock *b0 = fl_ir_block(p, 0);
    FlVarDesc *x = fl_ir_var_add(b0, "x");
    fl_ir_var_set_shape(x, 2, (int64_t[]){-1, 12});
    FlVarDesc *w = fl_ir_var_add(b0, "fc_0.w_0");
    fl_ir_var_set_shape(w, 2, (int64_t[]){13, 1});
    w->persistable = true;
    fl_ir_var_add(b0, "out");
    FlOpDesc *op = fl_ir_op_append(b0, "mul");
    fl_ir_op_add_input(op, "X", "x");
    fl_ir_op_add_input(op, "Y", "fc_0.w_0");
    fl_ir_op_add_output(op, "Out", "out");
    op->loc = (FlLoc){0, 9, 8, 5};
    const char *src[1] = {"examples/fit_a_line.fl"};
    FlExec *ex;
    FlErr e = {{0}};
    CT_OK(fl_exec_new(p, src, 1, NULL, &ex, &e), &e);
    FlScope *s = fl_scope_new(NULL);
    double v[32 * 13] = {0};
    FlTensor wt = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){13, 1}, v);
    FlTensor xt = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){32, 12}, v);
    fl_scope_set_tensor(s, "fc_0.w_0", &wt);
    FlExecFeed f = {"x", &xt};
    CU_ASSERT_EQUAL(fl_exec_run(ex, s, &f, 1, NULL, NULL, 0, 0, &e), FL_ERROR);
    CT_MSG(e.msg, "runtime error in op 'mul' (fit_a_line.fl:9:8): X 'x' [32, 12] and Y 'fc_0.w_0' "
                  "[13, 1]: X's columns (12) differ from Y's rows (13)");
    /* a persistable input that was never initialised */
    FlScope *empty = fl_scope_new(NULL);
    CU_ASSERT_EQUAL(fl_exec_run(ex, empty, &f, 1, NULL, NULL, 0, 0, &e), FL_ERROR);
    CT_MSG(e.msg, "runtime error in op 'mul' (fit_a_line.fl:9:8): input Y 'fc_0.w_0' has no value "
                  "(a persistable var: was the startup program run on this scope?)");
    fl_scope_free(empty);
    fl_tensor_fini(&wt);
    fl_tensor_fini(&xt);
    fl_scope_free(s);
    fl_exec_free(ex);
    fl_ir_program_free(p);
}

/* A compiled program whose error only shows at run time (an id out of range). */
static void test_runtime_error_compiled(void) {
    Ct c = ct_open("tests/emb.fl",
                   "from fluid import layers\n"
                   "ids = layers.data(name=\"ids\", shape=[1], dtype=\"int64\")\n"
                   "e = layers.embedding(ids, size=[5, 4])\n");
    double v[2] = {1, 7};
    FlTensor ids = ct_tensor(FL_DT_INT64, 2, (int64_t[]){2, 1}, v);
    FlErr e = {{0}};
    FlFetch out = {"lookup_table_0.tmp_0", FL_TENSOR_INIT};
    CU_ASSERT_EQUAL(fl_executor_run(c.ex, c.scope, &(FlFeed){"ids", &ids}, 1, &out, 1, &e), FL_ERROR);
    CT_MSG(e.msg, "runtime error in op 'lookup_table' (emb.fl:3:5): Ids 'ids' [2, 1] row 1 is 7, "
                  "outside [0, 5) (W 'embedding_0.w_0' [5, 4])");
    /* and a good run: rows of W */
    v[1] = 4;
    FlTensor ids2 = ct_tensor(FL_DT_INT64, 2, (int64_t[]){2, 1}, v);
    CT_OK(fl_executor_run(c.ex, c.scope, &(FlFeed){"ids", &ids2}, 1, &out, 1, &e), &e);
    for (int j = 0; j < 4; j++) {
        CU_ASSERT_EQUAL(fl_tensor_get(&out.tensor, j), ct_get(c.scope, "embedding_0.w_0", 4 + j));
        CU_ASSERT_EQUAL(fl_tensor_get(&out.tensor, 4 + j), ct_get(c.scope, "embedding_0.w_0", 16 + j));
    }
    /* an id beyond 2^53 is named as it is (a double would round it, and INT64_MAX overflow) */
    FlTensor ids3 = FL_TENSOR_INIT;
    CT_OK(fl_tensor_from_int64s(&e, &ids3, 2, (int64_t[]){2, 1}, (int64_t[]){INT64_MAX, 9007199254740993}), &e);
    CU_ASSERT_EQUAL(fl_executor_run(c.ex, c.scope, &(FlFeed){"ids", &ids3}, 1, &out, 1, &e), FL_ERROR);
    CT_MSG(e.msg, "runtime error in op 'lookup_table' (emb.fl:3:5): Ids 'ids' [2, 1] row 0 is 9223372036854775807, "
                  "outside [0, 5) (W 'embedding_0.w_0' [5, 4])");
    CT_OK(fl_tensor_from_int64s(&e, &ids3, 2, (int64_t[]){2, 1}, (int64_t[]){1, 9007199254740993}), &e);
    CU_ASSERT_EQUAL(fl_executor_run(c.ex, c.scope, &(FlFeed){"ids", &ids3}, 1, &out, 1, &e), FL_ERROR);
    CT_MSG(e.msg, "runtime error in op 'lookup_table' (emb.fl:3:5): Ids 'ids' [2, 1] row 1 is 9007199254740993, "
                  "outside [0, 5) (W 'embedding_0.w_0' [5, 4])");
    fl_tensor_fini(&out.tensor);
    fl_tensor_fini(&ids);
    fl_tensor_fini(&ids2);
    fl_tensor_fini(&ids3);
    ct_close(&c);
}

/* ---- integer // and % at run time: INT64_MIN // -1 wraps (Go's), a zero divisor is an error
 * naming the op and its line ---- */
static void test_int_division(void) {
    Ct c = ct_open("tests/div.fl",
                   "from fluid import layers\n"
                   "x = layers.data(name=\"x\", shape=[2], dtype=\"int64\", append_batch_size=False)\n"
                   "y = layers.data(name=\"y\", shape=[1], dtype=\"int64\", append_batch_size=False)\n"
                   "q = x // y\n"
                   "r = x % y\n");
    FlTensor x = ct_tensor(FL_DT_INT64, 1, (int64_t[]){2}, (double[]){-9223372036854775808.0, 7});
    FlTensor y = ct_tensor(FL_DT_INT64, 1, (int64_t[]){1}, (double[]){-1});
    FlTensor z = ct_tensor(FL_DT_INT64, 1, (int64_t[]){1}, (double[]){0});
    FlFeed feeds[2] = {{"x", &x}, {"y", &y}};
    FlFetch out[2] = {{"elementwise_floordiv_0.tmp_0", FL_TENSOR_INIT}, {"elementwise_mod_0.tmp_0", FL_TENSOR_INIT}};
    FlErr e = {{0}};
    CT_OK(fl_executor_run(c.ex, c.scope, feeds, 2, out, 2, &e), &e);
    const int64_t *q = fl_tensor_data(&out[0].tensor), *r = fl_tensor_data(&out[1].tensor);
    CU_ASSERT_EQUAL(q[0], INT64_MIN);
    CU_ASSERT_EQUAL(q[1], -7);
    CU_ASSERT_EQUAL(r[0], 0);
    CU_ASSERT_EQUAL(r[1], 0);
    feeds[1].tensor = &z;
    CU_ASSERT_EQUAL(fl_executor_run(c.ex, c.scope, feeds, 2, out, 2, &e), FL_ERROR);
    CT_MSG(e.msg, "runtime error in op 'elementwise_floordiv' (div.fl:4:5): integer division by zero "
                  "(Y 'y' [1] holds a 0)");
    for (int i = 0; i < 2; i++) fl_tensor_fini(&out[i].tensor);
    fl_tensor_fini(&x);
    fl_tensor_fini(&y);
    fl_tensor_fini(&z);
    ct_close(&c);
}

/* ---- the empty marker (rules.h) names no value: an input holding it, or a var named so, is
 * rejected when a .flp is loaded or a program prepared; a gradient op missing an input fails
 * its run with an error instead of aborting ---- */

/* A main program "fill_constant -> x; relu(X=<in>) -> y", with var `decl` declared too. */
static FlBundle *empty_bundle(const char *in, const char *decl) {
    FlBundle *b = fl_ir_bundle_new();
    FlBlock *b0 = fl_ir_block(b->main, 0);
    int64_t one = 1;
    fl_ir_var_set_shape(fl_ir_var_add(b0, "x"), 1, &one);
    fl_ir_var_set_shape(fl_ir_var_add(b0, "y"), 1, &one);
    if (decl) fl_ir_var_set_shape(fl_ir_var_add(b0, decl), 1, &one);
    FlOpDesc *f = fl_ir_op_append(b0, "fill_constant");
    fl_ir_op_add_output(f, "Out", "x");
    fl_ir_op_set_ints(f, "shape", &one, 1);
    FlOpDesc *r = fl_ir_op_append(b0, "relu");
    fl_ir_op_add_input(r, "X", in);
    fl_ir_op_add_output(r, "Out", "y");
    return b;
}

/* Writes b to path with every "@EMPTX@" turned into FL_RULE_EMPTY (same length, so the protobuf
 * stays well formed): the writer validates and would refuse the marker itself. */
static void write_crafted(FlBundle *b, const char *path) {
    FlErr e = {{0}};
    CT_OK(fl_ir_bundle_write(b, path, &e), &e);
    fl_ir_bundle_free(b);
    FILE *f = fopen(path, "r+b");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    CU_ASSERT_FATAL(n > 0 && n < sizeof buf);
    int hits = 0;
    for (size_t i = 0; i + 7 <= n; i++)
        if (!memcmp(buf + i, "@EMPTX@", 7)) memcpy(buf + i, FL_RULE_EMPTY, 7), hits++;
    CU_ASSERT_FATAL(hits > 0);
    rewind(f);
    CU_ASSERT_EQUAL(fwrite(buf, 1, n, f), n);
    fclose(f);
}

static void expect_load_error(const char *path, const char *want) {
    FlLoadedProgram *lp = NULL;
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_program_load(path, &lp, &e), FL_ERROR);
    CU_ASSERT_PTR_NULL(lp);
    if (!strstr(e.msg, want)) fprintf(stderr, "\n  got: %s\n  want (in it): %s\n", e.msg, want);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, want));
    remove(path);
}

static void test_empty_marker(void) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/fl_empty_%d.flp", (int)getpid());
    /* a .flp naming the marker as an input argument */
    write_crafted(empty_bundle("@EMPTX@", NULL), path);
    expect_load_error(path, "block 0, op 'relu': input slot 'X' position 0 holds the empty marker "
                            "'@EMPTY@': an input must name a var");
    /* a .flp declaring a var of that name (and using it) */
    write_crafted(empty_bundle("@EMPTX@", "@EMPTX@"), path);
    expect_load_error(path, "block 0: a var is named '@EMPTY@', the marker of an empty argument");
    /* the same program built in memory is refused by the executor's prepare */
    FlBundle *b = empty_bundle(FL_RULE_EMPTY, NULL);
    FlExec *ex = NULL;
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_exec_new(b->main, NULL, 0, NULL, &ex, &e), FL_ERROR);
    CT_MSG(e.msg, "program: block 0, op 1 'relu': input slot 'X' position 0 holds the empty marker "
                  "'@EMPTY@': an input must name a var");
    fl_ir_bundle_free(b);
    /* sum_grad with X=x Out=x and no Out@GRAD (as `_core.op` can build it): a runtime error */
    b = empty_bundle("x", NULL);
    FlBlock *b0 = fl_ir_block(b->main, 0);
    FlOpDesc *g = fl_ir_op_append(b0, "sum_grad");
    fl_ir_op_add_input(g, "X", "x");
    fl_ir_op_add_input(g, "Out", "x");
    fl_ir_op_add_output(g, "X@GRAD", "y");
    g->loc = (FlLoc){0, 7, 3, 10};
    const char *src[1] = {"grad.fl"};
    CT_OK(fl_exec_new(b->main, src, 1, NULL, &ex, &e), &e);
    FlScope *s = fl_scope_new(NULL);
    CU_ASSERT_EQUAL(fl_exec_run(ex, s, NULL, 0, NULL, NULL, 0, 0, &e), FL_ERROR);
    CT_MSG(e.msg, "runtime error in op 'sum_grad' (grad.fl:7:3): input Out@GRAD has no value "
                  "(inputs: X 'x' [1], Out 'x' [1])");
    fl_scope_free(s);
    fl_exec_free(ex);
    fl_ir_bundle_free(b);
}

/* ---- a go op runs (an empty goroutine); unknown ops fail cleanly ---- */
static void test_unsupported_op(void) {
    FlProgram *p = fl_ir_program_new();
    FlBlock *b0 = fl_ir_block(p, 0);
    FlBlock *b1 = fl_ir_block_new(p, 0);
    (void)b1;
    FlOpDesc *op = fl_ir_op_append(b0, "go");
    fl_ir_op_add_input_slot(op, "X");
    fl_ir_op_set_block(op, "sub_block", 1);
    op->loc = (FlLoc){0, 4, 1, 2};
    const char *src[1] = {"csp.fl"};
    FlExec *ex;
    FlErr e = {{0}};
    CT_OK(fl_exec_new(p, src, 1, NULL, &ex, &e), &e);
    FlScope *s = fl_scope_new(NULL);
    CT_OK(fl_exec_run(ex, s, NULL, 0, NULL, NULL, 0, 0, &e), &e);
    fl_scope_free(s);
    fl_exec_free(ex);
    /* an unknown op is a prepare error naming it */
    fl_ir_op_append(b0, "frobnicate");
    CU_ASSERT_EQUAL(fl_exec_new(p, src, 1, NULL, &ex, &e), FL_ERROR);
    CT_MSG(e.msg, "program: block 0, op 1 'frobnicate': unknown op 'frobnicate'");
    fl_ir_program_free(p);
}

/* ---- seeds: the same program gives bit-identical parameters every run ---- */
static void test_seeds(void) {
    const char *src = "from fluid import layers\n"
                      "x = layers.data(name=\"x\", shape=[6], dtype=\"float32\")\n"
                      "h = layers.fc(x, size=5)\n";
    Ct a = ct_open("s.fl", src), b = ct_open("s.fl", src);
    FlTensor ta = FL_TENSOR_INIT, tb = FL_TENSOR_INIT;
    FlErr e;
    CT_OK(fl_scope_get_tensor(a.scope, "fc_0.w_0", &ta, &e), &e);
    CT_OK(fl_scope_get_tensor(b.scope, "fc_0.w_0", &tb, &e), &e);
    CU_ASSERT_EQUAL(fl_tensor_nbytes(&ta), 30 * 4);
    CU_ASSERT_EQUAL(memcmp(fl_tensor_data(&ta), fl_tensor_data(&tb), fl_tensor_nbytes(&ta)), 0);
    /* running startup again on the same executor gives the same values too */
    FlScope *s2 = fl_scope_new(NULL);
    CT_OK(fl_executor_run_startup(a.ex, s2, &e), &e);
    FlTensor t2 = FL_TENSOR_INIT;
    CT_OK(fl_scope_get_tensor(s2, "fc_0.w_0", &t2, &e), &e);
    CU_ASSERT_EQUAL(memcmp(fl_tensor_data(&ta), fl_tensor_data(&t2), fl_tensor_nbytes(&ta)), 0);
    fl_tensor_fini(&t2);
    fl_scope_free(s2);
    fl_tensor_fini(&ta);
    fl_tensor_fini(&tb);
    ct_close(&a);
    ct_close(&b);
}

/* A seed-0 random op gets a program seed from the executor options. */
static void test_seed_zero(void) {
    FlProgram *p = fl_ir_program_new();
    FlBlock *b0 = fl_ir_block(p, 0);
    FlVarDesc *w = fl_ir_var_add(b0, "w");
    w->persistable = true;
    FlOpDesc *op = fl_ir_op_append(b0, "gaussian_random");
    fl_ir_op_set_ints(op, "shape", (int64_t[]){4}, 1);
    fl_ir_op_add_output(op, "Out", "w");
    double got[3][4];
    uint64_t seeds[3] = {5, 5, 6};
    for (int k = 0; k < 3; k++) {
        FlExec *ex;
        FlErr e;
        FlExecOptions o = {.seed = seeds[k]};
        CT_OK(fl_exec_new(p, NULL, 0, &o, &ex, &e), &e);
        FlScope *s = fl_scope_new(NULL);
        CT_OK(fl_exec_run(ex, s, NULL, 0, NULL, NULL, 0, 0, &e), &e);
        for (int i = 0; i < 4; i++) got[k][i] = ct_get(s, "w", i);
        fl_scope_free(s);
        fl_exec_free(ex);
    }
    CU_ASSERT_EQUAL(memcmp(got[0], got[1], sizeof got[0]), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(got[0], got[2], sizeof got[0]), 0);
    fl_ir_program_free(p);
}

/* A non-fed var may come from the caller's scope (not a feed: no per-call override). */
static void test_scope_var_as_input(void) {
    Ct c = ct_open("sv.fl",
                   "from fluid import layers\n"
                   "x = layers.data(name=\"x\", shape=[2], dtype=\"float32\")\n"
                   "y = layers.scale(x, scale=3.0)\n");
    double v[2] = {1, 2};
    FlTensor x = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){1, 2}, v);
    fl_scope_set_tensor(c.scope, "x", &x);
    FlFetch out = {"scale_0.tmp_0", FL_TENSOR_INIT};
    feed_run(&c, NULL, 0, &out, 1);
    CU_ASSERT_EQUAL(fl_tensor_get(&out.tensor, 1), 6);
    CU_ASSERT_PTR_NULL(fl_scope_find(c.scope, "scale_0.tmp_0"));
    fl_tensor_fini(&out.tensor);
    fl_tensor_fini(&x);
    ct_close(&c);
}

/* predict mode on a training program: no label needed, only the needed ops run, nothing shared
 * changes; a full run trains. */
static void test_predict_mode(void) {
    Ct c = ct_open("fitp.fl",
                   "from fluid import layers, optimizer\n"
                   "x = layers.data(name=\"x\", shape=[2], dtype=\"float32\")\n"
                   "y = layers.data(name=\"y\", shape=[1], dtype=\"float32\")\n"
                   "pred = layers.fc(x, size=1)\n"
                   "loss = layers.mean(layers.square_error_cost(pred, y))\n"
                   "optimizer.SGD(learning_rate=0.1).minimize(loss)\n");
    double xv[2] = {1, 2}, yv[1] = {5};
    FlTensor x = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){1, 2}, xv);
    FlTensor y = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){1, 1}, yv);
    double w0 = ct_get(c.scope, "fc_0.w_0", 0);
    FlErr e = {{0}};
    FlFetch out = {"elementwise_add_0.tmp_0", FL_TENSOR_INIT};
    CT_OK(fl_executor_predict(c.ex, c.scope, &(FlFeed){"x", &x}, 1, &out, 1, &e), &e);
    CT_NEAR(fl_tensor_get(&out.tensor, 0), w0 * 1 + ct_get(c.scope, "fc_0.w_0", 1) * 2, 1e-6);
    CU_ASSERT_EQUAL(ct_get(c.scope, "fc_0.w_0", 0), w0); /* not trained */
    /* the full program needs the label */
    CU_ASSERT_EQUAL(fl_executor_run(c.ex, c.scope, &(FlFeed){"x", &x}, 1, &out, 1, &e), FL_ERROR);
    CT_MSG(e.msg, "missing feed 'y' (float32 [-1, 1]): the program reads it and no feed or scope var gives it");
    CT_OK(fl_executor_run(c.ex, c.scope, (FlFeed[]){{"x", &x}, {"y", &y}}, 2, &out, 1, &e), &e);
    CU_ASSERT_NOT_EQUAL(ct_get(c.scope, "fc_0.w_0", 0), w0); /* trained */
    fl_tensor_fini(&out.tensor);
    fl_tensor_fini(&x);
    fl_tensor_fini(&y);
    ct_close(&c);
}

/* ---- a predicting run is inference: dropout without a mask, scaled by (1 - p) ---- */
static void test_predict_inference_mode(void) {
    Ct c = ct_open("drop.fl", "import fluid\nfrom fluid import layers\n"
                              "x = layers.data(name='x', shape=[64])\n"
                              "y = layers.dropout(x, dropout_prob=0.5)\n");
    const FlBlock *b0 = fl_ir_block(fl_program_bundle(c.prog)->main, 0);
    const char *out = NULL;
    for (size_t i = 0; i < b0->ops.len; i++)
        if (!strcmp(b0->ops.data[i]->type, "dropout")) out = fl_ir_op_output1(b0->ops.data[i], "Out");
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    double ones[64];
    for (int i = 0; i < 64; i++) ones[i] = 1.0;
    int64_t ne[2] = {1, 64};
    FlTensor x = ct_tensor(FL_DT_FLOAT32, 2, ne, ones);
    FlFeed feed = {"x", &x};
    FlFetch f = {out, FL_TENSOR_INIT};
    FlErr e = {{0}};
    CT_OK(fl_executor_predict(c.ex, c.scope, &feed, 1, &f, 1, &e), &e);
    for (int i = 0; i < 64; i++) CT_NEAR(fl_tensor_get(&f.tensor, i), 0.5, 1e-7);
    CT_OK(fl_executor_run(c.ex, c.scope, &feed, 1, &f, 1, &e), &e); /* training: a 0/1 mask */
    int zeros = 0;
    for (int i = 0; i < 64; i++) zeros += fl_tensor_get(&f.tensor, i) == 0.0;
    CU_ASSERT(zeros > 0 && zeros < 64);
    fl_tensor_fini(&f.tensor);
    fl_tensor_fini(&x);
    ct_close(&c);
}

int main(void) {
    static const CtCase cases[] = {
        CT_TEST(test_mlp_forward),          CT_TEST(test_sgd_step),
        CT_TEST(test_while_counter),        CT_TEST(test_if_on_var),
        CT_TEST(test_parallel_for),         CT_TEST(test_bad_feeds),
        CT_TEST(test_feed_reshape),         CT_TEST(test_runtime_error_message),
        CT_TEST(test_runtime_error_compiled), CT_TEST(test_int_division), CT_TEST(test_empty_marker),
        CT_TEST(test_unsupported_op),
        CT_TEST(test_seeds),                CT_TEST(test_seed_zero),
        CT_TEST(test_scope_var_as_input),   CT_TEST(test_predict_mode),
        CT_TEST(test_predict_inference_mode), CT_TEST(test_batch_size_like),
    };
    return ct_run("executor", cases, (int)FL_ARRAY_LEN(cases));
}
