/* test_grad.c: every gradient op adapter, through append_backward on compiled programs: each case
 * builds `out` from parameters through the op under test, the harness adds
 * loss = mean(out * R) (R a random parameter, so no gradient is trivially zero), appends the
 * backward pass, runs forward + backward once, and compares each parameter's gradient with central
 * finite differences of the loss (re-running the program in training mode: a predicting run is
 * inference, where batch_norm and dropout behave differently). */
#include "tests/runtime/core/ct.h"

#include "compiler/backward.h"
#include "compiler/ops.h"

#define HEAD                                                                                  \
    "from fluid import layers\n"                                                              \
    "def param(name, shape):\n"                                                               \
    "    return layers.create_parameter(shape=shape, dtype=\"float32\", name=name)\n"

typedef struct GradCase {
    const char *name;
    const char *body;  /* defines `out` */
    const char *shape; /* out's shape, as .fl text */
} GradCase;

/* Every gradient op type the cases ran (the coverage check below wants all of them). */
static char seen[512][48];
static int nseen;
static void note_ops(const FlBlock *b0) {
    for (size_t i = 0; i < b0->ops.len; i++) {
        const char *t = b0->ops.data[i]->type;
        bool have = false;
        for (int k = 0; k < nseen && !have; k++) have = strcmp(seen[k], t) == 0;
        if (!have && nseen < (int)FL_ARRAY_LEN(seen)) snprintf(seen[nseen++], sizeof seen[0], "%s", t);
    }
}

static double loss_of(FlExecutor *ex, FlScope *s, const char *loss) {
    FlErr e = {{0}};
    FlFetch f = {loss, FL_TENSOR_INIT};
    CT_OK(fl_executor_run(ex, s, NULL, 0, &f, 1, &e), &e);
    double v = fl_tensor_get(&f.tensor, 0);
    fl_tensor_fini(&f.tensor);
    return v;
}

/* A compiled case with its backward appended (from the last op's Out, the loss), its executor
 * and a scope its startup has run on. */
typedef struct GradRun {
    FlLoadedProgram *prog;
    FlExecutor *ex;
    FlScope *s;
    FlBackwardResult r;
    char *loss;
} GradRun;

static void grad_open(GradRun *gr, const char *name, const char *src) {
    FlBundle *b = ct_compile(name, src);
    FlBlock *b0 = fl_ir_block(b->main, 0);
    const char *loss = fl_ir_op_output1(b0->ops.data[b0->ops.len - 1], "Out");
    CU_ASSERT_PTR_NOT_NULL_FATAL(loss);
    *gr = (GradRun){.loss = fl_xstrdup(loss)};
    FlErr e = {{0}};
    CT_OK(fl_backward_append(b->main, gr->loss, NULL, 0, &gr->r, &e, NULL), &e);
    note_ops(b0);
    gr->prog = fl_program_from_bundle_take(b);
    CT_OK(fl_executor_new(gr->prog, NULL, &gr->ex, &e), &e);
    gr->s = fl_scope_new(NULL);
    CT_OK(fl_executor_run_startup(gr->ex, gr->s, &e), &e);
}

static void grad_close(GradRun *gr) {
    free(gr->loss);
    fl_backward_result_fini(&gr->r);
    fl_scope_free(gr->s);
    fl_executor_free(gr->ex);
    fl_program_free(gr->prog);
}

static void check_case(const GradCase *gc) {
    char src[4096];
    snprintf(src, sizeof src,
             HEAD "%s"
                  "R = param(\"R\", %s)\n"
                  "loss = layers.mean(layers.elementwise_mul(out, R))\n",
             gc->body, gc->shape);
    GradRun gr;
    grad_open(&gr, gc->name, src);
    FlExecutor *ex = gr.ex;
    FlScope *s = gr.s;
    FlErr e = {{0}};
    /* analytic gradients: one full run */
    size_t np = gr.r.pairs.len;
    FlFetch *g = fl_xcalloc(np + 1, sizeof *g);
    for (size_t i = 0; i < np; i++) g[i] = (FlFetch){gr.r.pairs.data[i].grad, FL_TENSOR_INIT};
    FlStatus st = fl_executor_run(ex, s, NULL, 0, g, np, &e);
    if (st) fprintf(stderr, "\n%s: %s\n", gc->name, e.msg);
    CU_ASSERT_EQUAL_FATAL(st, FL_OK);
    int bad = 0, checked = 0;
    for (size_t i = 0; i < np; i++) {
        const char *pn = gr.r.pairs.data[i].param;
        FlTensor p = FL_TENSOR_INIT, q = FL_TENSOR_INIT;
        CT_OK(fl_scope_get_tensor(s, pn, &p, &e), &e);
        CU_ASSERT_TRUE(fl_tensor_same_shape(&p, &g[i].tensor));
        int64_t n = fl_tensor_numel(&p), step = n > 6 ? n / 6 : 1;
        for (int64_t k = 0; k < n; k += step) {
            const double eps = 1e-3;
            double v = fl_tensor_get(&p, k), lp, lm;
            CT_OK(fl_tensor_copy(&e, &q, &p), &e);
            fl_tensor_set(&q, k, v + eps);
            fl_scope_set_tensor(s, pn, &q);
            lp = loss_of(ex, s, gr.loss);
            CT_OK(fl_tensor_copy(&e, &q, &p), &e);
            fl_tensor_set(&q, k, v - eps);
            fl_scope_set_tensor(s, pn, &q);
            lm = loss_of(ex, s, gr.loss);
            fl_scope_set_tensor(s, pn, &p);
            double num = (lp - lm) / (2 * eps), ana = fl_tensor_get(&g[i].tensor, k);
            checked++;
            if (fabs(num - ana) > 2e-3 + 2e-2 * fabs(num)) {
                bad++;
                fprintf(stderr, "\n%s: d loss / d %s[%lld]: analytic %g, numeric %g\n", gc->name,
                        pn, (long long)k, ana, num);
            }
        }
        fl_tensor_fini(&p);
        fl_tensor_fini(&q);
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_TRUE(checked > 0);
    for (size_t i = 0; i < np; i++) fl_tensor_fini(&g[i].tensor);
    free(g);
    grad_close(&gr);
}

static const GradCase cases[] = {
    {"mul.fl", "P = param(\"P\", [3, 4])\nQ = param(\"Q\", [4, 2])\nout = layers.mul(P, Q)\n", "[3, 2]"},
    {"matmul.fl",
     "P = param(\"P\", [2, 3])\nQ = param(\"Q\", [2, 3])\nout = layers.matmul(P, Q, transpose_y=True, alpha=0.5)\n",
     "[2, 2]"},
    {"add.fl", "P = param(\"P\", [3, 4])\nQ = param(\"Q\", [4])\nout = layers.elementwise_add(P, Q)\n", "[3, 4]"},
    {"sub.fl", "P = param(\"P\", [3, 4])\nQ = param(\"Q\", [4])\nout = layers.elementwise_sub(P, Q)\n", "[3, 4]"},
    {"emul.fl", "P = param(\"P\", [3, 4])\nQ = param(\"Q\", [3, 1])\nout = layers.elementwise_mul(P, Q)\n", "[3, 4]"},
    {"div.fl",
     "P = param(\"P\", [3, 4])\nQ = param(\"Q\", [4])\nout = layers.elementwise_div(P, layers.exp(Q))\n", "[3, 4]"},
    {"max.fl", "P = param(\"P\", [3, 4])\nQ = param(\"Q\", [3, 4])\nout = layers.elementwise_max(P, Q)\n", "[3, 4]"},
    {"min.fl", "P = param(\"P\", [3, 4])\nQ = param(\"Q\", [3, 4])\nout = layers.elementwise_min(P, Q)\n", "[3, 4]"},
    {"pow.fl",
     "P = param(\"P\", [3, 4])\nQ = param(\"Q\", [3, 4])\nout = layers.elementwise_pow(layers.exp(P), Q)\n", "[3, 4]"},
    {"relu.fl", "P = param(\"P\", [3, 4])\nout = layers.relu(P)\n", "[3, 4]"},
    {"sigmoid.fl", "P = param(\"P\", [3, 4])\nout = layers.sigmoid(P)\n", "[3, 4]"},
    {"tanh.fl", "P = param(\"P\", [3, 4])\nout = layers.tanh(P)\n", "[3, 4]"},
    /* py_func with backward_func (y's gradient dy * (1 - y^2) from the function's own numpy) */
    {"py_func.fl",
     "import fluid\nimport numpy as np\nP = param(\"P\", [3, 4])\n"
     "def f(x):\n    return np.tanh(x)\n"
     "def g(x, y, dy):\n    return np.array(dy) * (1 - np.square(np.array(y)))\n"
     "o = fluid.default_main_program().current_block().create_var(name=\"o\", dtype=\"float32\", shape=[3, 4])\n"
     "out = layers.py_func(func=f, x=P, out=o, backward_func=g)\n",
     "[3, 4]"},
    {"log_sqrt.fl",
     "P = param(\"P\", [3, 4])\nu = layers.scale(layers.square(P), bias=1.0)\nout = layers.elementwise_add(layers.log(u), layers.sqrt(u))\n",
     "[3, 4]"},
    {"abs.fl", "P = param(\"P\", [3, 4])\nout = layers.abs(P)\n", "[3, 4]"},
    {"softmax.fl", "P = param(\"P\", [3, 4])\nout = layers.softmax(P)\n", "[3, 4]"},
    {"softmax_axis0.fl", "P = param(\"P\", [3, 4])\nout = layers.softmax(P, axis=0)\n", "[3, 4]"},
    {"xent.fl",
     "P = param(\"P\", [3, 4])\nlab = layers.fill_constant(shape=[3, 1], dtype=\"int64\", value=2)\n"
     "out = layers.cross_entropy(layers.softmax(P), lab)\n",
     "[3, 1]"},
    {"reduce.fl",
     "P = param(\"P\", [3, 4])\nout = layers.elementwise_add(layers.reduce_sum(P, dim=[1], keep_dim=True), layers.reduce_mean(P, dim=[1], keep_dim=True))\n",
     "[3, 1]"},
    {"mean.fl", "P = param(\"P\", [3, 4])\nout = layers.scale(layers.mean(P), scale=3.0)\n", "[1]"},
    {"sums.fl", "P = param(\"P\", [3, 4])\nQ = param(\"Q\", [3, 4])\nout = layers.sums([P, Q, P])\n", "[3, 4]"},
    {"concat.fl", "P = param(\"P\", [3, 2])\nQ = param(\"Q\", [3, 3])\nout = layers.concat([P, Q], axis=1)\n", "[3, 5]"},
    {"split.fl",
     "P = param(\"P\", [3, 4])\nparts = layers.split(P, 2, dim=1)\nout = layers.elementwise_mul(parts[0], parts[1])\n",
     "[3, 2]"},
    {"reshape.fl", "P = param(\"P\", [3, 4])\nout = layers.reshape(P, [2, 6])\n", "[2, 6]"},
    {"transpose.fl", "P = param(\"P\", [3, 4])\nout = layers.transpose(P, [1, 0])\n", "[4, 3]"},
    /* the layers of kernels_layers.h */
    {"leaky_relu_elu.fl",
     "P = param(\"P\", [3, 4])\nout = layers.elementwise_add(layers.leaky_relu(P, alpha=0.1), layers.elu(P, alpha=0.7))\n",
     "[3, 4]"},
    {"relu6_brelu.fl",
     "P = param(\"P\", [3, 4])\nout = layers.elementwise_add(layers.relu6(P, threshold=0.5), layers.brelu(P, t_min=-0.3, t_max=0.4))\n",
     "[3, 4]"},
    {"swish_softsign.fl",
     "P = param(\"P\", [3, 4])\nout = layers.elementwise_add(layers.swish(P, beta=1.5), layers.softsign(P))\n", "[3, 4]"},
    {"hard_sigmoid_soft_relu.fl",
     "P = param(\"P\", [3, 4])\nout = layers.elementwise_add(layers.hard_sigmoid(P, slope=0.9, offset=0.4), layers.soft_relu(P, threshold=0.5))\n",
     "[3, 4]"},
    {"pow_clip.fl",
     "P = param(\"P\", [3, 4])\nout = layers.elementwise_add(layers.pow(layers.exp(P), factor=1.5), layers.clip(P, -0.3, 0.5))\n",
     "[3, 4]"},
    {"clip_by_norm.fl", "P = param(\"P\", [3, 4])\nout = layers.clip_by_norm(P, max_norm=0.5)\n", "[3, 4]"},
    {"prelu.fl", "P = param(\"P\", [2, 3, 2, 2])\nout = layers.prelu(P, mode=\"channel\")\n", "[2, 3, 2, 2]"},
    {"reduce_max_min_prod.fl",
     "P = param(\"P\", [3, 4])\na = layers.reduce_max(P, dim=[1], keep_dim=True)\nb = layers.reduce_min(P, dim=1, keep_dim=True)\n"
     "c = layers.reduce_prod(layers.exp(P), dim=[-1], keep_dim=True)\nout = layers.sums([a, b, c])\n",
     "[3, 1]"},
    {"slice_pad_crop.fl",
     "P = param(\"P\", [3, 4])\nQ = param(\"Q\", [2, 3])\ns = layers.slice(P, axes=[0, 1], starts=[1, -3], ends=[3, 4])\n"
     "c = layers.crop(layers.pad(P, [1, 0, 0, 2], pad_value=0.5), shape=Q, offsets=[1, 2])\nout = layers.elementwise_mul(s, c)\n",
     "[2, 3]"},
    {"gather_scatter.fl",
     "P = param(\"P\", [4, 3])\nQ = param(\"Q\", [2, 3])\nidx = layers.fill_constant(shape=[2, 1], dtype=\"int64\", value=3)\n"
     "g = layers.gather(P, idx)\nout = layers.scatter(P, layers.fill_constant(shape=[2], dtype=\"int64\", value=1), layers.elementwise_mul(Q, g))\n",
     "[4, 3]"},
    {"expand_views.fl",
     "P = param(\"P\", [3, 1, 4])\ne = layers.expand(layers.squeeze(P, axes=[1]), [2, 1])\n"
     "out = layers.flatten(layers.unsqueeze(e, axes=[0, 2]), axis=2)\n",
     "[6, 4]"},
    {"stack_unstack.fl",
     "P = param(\"P\", [3, 4])\nQ = param(\"Q\", [3, 4])\nparts = layers.unstack(layers.stack([P, Q], axis=1), axis=0)\n"
     "out = layers.elementwise_mul(parts[0], parts[2])\n",
     "[2, 4]"},
    {"cast_assign_print.fl",
     "P = param(\"P\", [3, 4])\nc = layers.cast(layers.cast(P, \"float64\"), \"float32\")\nout = layers.Print(layers.assign(c), first_n=0)\n",
     "[3, 4]"},
    {"embedding.fl",
     "ids = layers.fill_constant(shape=[4, 1], dtype=\"int64\", value=2)\nout = layers.embedding(ids, size=[5, 3])\n",
     "[4, 3]"},
    {"embedding_rank3.fl",
     "ids = layers.concat([layers.fill_constant(shape=[2, 1, 1], dtype=\"int64\", value=v) for v in [1, 4, 1]], axis=1)\n"
     "out = layers.embedding(ids, size=[5, 3])\n",
     "[2, 3, 3]"},
    {"conv2d.fl",
     "P = param(\"P\", [1, 2, 5, 5])\nout = layers.conv2d(P, num_filters=3, filter_size=3, padding=1)\n",
     "[1, 3, 5, 5]"},
    {"pool_max.fl", "P = param(\"P\", [1, 2, 4, 4])\nout = layers.pool2d(P, pool_size=2, pool_type=\"max\", pool_stride=2)\n",
     "[1, 2, 2, 2]"},
    {"pool_avg.fl", "P = param(\"P\", [1, 2, 4, 4])\nout = layers.pool2d(P, pool_size=2, pool_type=\"avg\", pool_stride=2)\n",
     "[1, 2, 2, 2]"},
    {"batch_norm.fl", "P = param(\"P\", [4, 3])\nout = layers.batch_norm(P)\n", "[4, 3]"},
    {"fc.fl", "P = param(\"P\", [3, 5])\nout = layers.fc(P, size=4, act=\"tanh\")\n", "[3, 4]"},
#include "tests/runtime/core/grad_cases_nn2.inc"
#include "tests/runtime/core/grad_cases_ops.inc"
#include "tests/runtime/core/grad_cases_tensor.inc"
    /* Recurrent networks (DynamicRNN): sequences of 1, 2 and 17 steps; an fc over [word, prev,
     * static input], an initial memory put in the length order (need_reorder) and a second memory
     * from a fill, the step output used twice (memory and output) */
    {"dynamic_rnn.fl",
     "import _core\n"
     "X = _core.set_lod(layers.scale(param(\"X\", [20, 3]), scale=1.0), [layers.assign([0, 1, 3, 20])])\n"
     "S = param(\"S\", [3, 2])\nB = param(\"B\", [3, 4])\n"
     "drnn = layers.DynamicRNN()\n"
     "with drnn.block():\n"
     "    word = drnn.step_input(X)\n"
     "    enc = drnn.static_input(S)\n"
     "    prev = drnn.memory(init=B, need_reorder=True)\n"
     "    acc = drnn.memory(shape=[4], value=0.5)\n"
     "    h = layers.fc(input=[word, prev, enc], size=4, act=\"tanh\")\n"
     "    a2 = layers.elementwise_add(layers.scale(acc, scale=0.5), h)\n"
     "    drnn.update_memory(prev, h)\n"
     "    drnn.update_memory(acc, a2)\n"
     "    drnn.output(h, a2)\n"
     "outs = drnn()\n"
     "out = layers.elementwise_mul(outs[0], outs[1])\n",
     "[20, 4]"},
    /* the order as given (need_reorder=False): the initial memory's rows are taken in the length order */
    {"dynamic_rnn_noreorder.fl",
     "import _core\n"
     "X = _core.set_lod(layers.scale(param(\"X\", [20, 3]), scale=1.0), [layers.assign([0, 17, 18, 20])])\n"
     "B = param(\"B\", [3, 4])\n"
     "drnn = layers.DynamicRNN()\n"
     "with drnn.block():\n"
     "    word = drnn.step_input(X)\n"
     "    prev = drnn.memory(init=B)\n"
     "    h = layers.fc(input=[word, prev], size=4, act=\"sigmoid\")\n"
     "    drnn.update_memory(prev, h)\n"
     "    drnn.output(h)\n"
     "out = drnn()\n",
     "[20, 4]"},
    /* a LoD static input (attention over an encoder's steps, as RNNsearch's decoder): sequences of
     * 3, 1 and 3 encoder rows for step sequences of 1, 2 and 5 steps (sorted 5, 2, 1: the rows go
     * back to their sequences' places in E's gradient) */
    {"dynamic_rnn_lod_static.fl",
     "import _core\n"
     "X = _core.set_lod(layers.scale(param(\"X\", [8, 3]), scale=1.0), [layers.assign([0, 1, 3, 8])])\n"
     "E = _core.set_lod(layers.scale(param(\"E\", [7, 3]), scale=1.0), [layers.assign([0, 3, 4, 7])])\n"
     "B = param(\"B\", [3, 4])\n"
     "drnn = layers.DynamicRNN()\n"
     "with drnn.block():\n"
     "    word = drnn.step_input(X)\n"
     "    enc = drnn.static_input(E)\n"
     "    prev = drnn.memory(init=B, need_reorder=True)\n"
     "    st = layers.fc(input=prev, size=3, bias_attr=False)\n"
     "    mix = layers.tanh(layers.elementwise_add(enc, layers.sequence_expand(st, enc)))\n"
     "    att = layers.sequence_softmax(layers.fc(input=mix, size=1, bias_attr=False))\n"
     "    ctx = layers.sequence_pool(layers.elementwise_mul(enc, layers.reshape(att, [-1]), axis=0), \"sum\")\n"
     "    h = layers.fc(input=[word, prev, ctx], size=4, act=\"tanh\")\n"
     "    drnn.update_memory(prev, h)\n"
     "    drnn.output(h)\n"
     "out = drnn()\n",
     "[8, 4]"},
    /* StaticRNN: 4 steps over a batch of 3, an initial memory and a memory from shape= */
    {"static_rnn.fl",
     "X = layers.scale(param(\"X\", [4, 3, 2]), scale=1.0)\n"
     "B = param(\"B\", [3, 4])\n"
     "rnn = layers.StaticRNN()\n"
     "with rnn.step():\n"
     "    word = rnn.step_input(X)\n"
     "    prev = rnn.memory(init=B)\n"
     "    acc = rnn.memory(shape=[-1, 4], batch_ref=word, init_value=0.25)\n"
     "    h = layers.fc(input=[word, prev], size=4, act=\"tanh\")\n"
     "    a2 = layers.elementwise_mul(acc, h)\n"
     "    rnn.update_memory(prev, h)\n"
     "    rnn.update_memory(acc, layers.elementwise_add(a2, h))\n"
     "    rnn.step_output(a2)\n"
     "out = rnn()\n",
     "[4, 3, 4]"},
    /* crf: linear_chain_crf on sequences of 1, 2, 0 and 17 rows (K = 5): the gradients of the
     * emissions and of the transition parameter */
    {"linear_chain_crf.fl",
     "import _core\n"
     "P = param(\"P\", [20, 5])\n"
     "lod = layers.assign([0, 1, 3, 3, 20])\n"
     "E = _core.set_lod(layers.scale(P, scale=2.0), [lod])\n"
     "Y = _core.set_lod(layers.assign([[0], [4], [2], [1], [1], [3], [0], [2], [4], [4], [1], [0], [3], [2], [2], "
     "[1], [0], [4], [3], [1]]), [lod])\n"
     "out = layers.linear_chain_crf(E, Y, param_attr=\"crfw\")\n",
     "[4, 1]"},
    /* rnn: dynamic_lstm / dynamic_gru over sequences of 1, 2 and 17 rows */
    {"lstm_peep.fl",
     "import _core\nP = _core.set_lod(layers.scale(param(\"P\", [20, 8])), [layers.assign([0, 1, 3, 20])])\n"
     "h, c = layers.dynamic_lstm(P, size=8)\nout = layers.elementwise_add(h, c)\n",
     "[20, 2]"},
    {"lstm_reverse.fl",
     "import _core\nP = _core.set_lod(layers.scale(param(\"P\", [20, 8])), [layers.assign([0, 1, 3, 20])])\n"
     "h, c = layers.dynamic_lstm(P, size=8, use_peepholes=False, is_reverse=True)\n"
     "out = layers.elementwise_add(h, c)\n",
     "[20, 2]"},
    {"lstm_rev_peep_hidden.fl",
     "import _core\nP = _core.set_lod(layers.scale(param(\"P\", [20, 8])), [layers.assign([0, 1, 3, 20])])\n"
     "out, c = layers.dynamic_lstm(P, size=8, is_reverse=True)\n",
     "[20, 2]"},
    {"gru.fl",
     "import _core\nP = _core.set_lod(layers.scale(param(\"P\", [20, 6])), [layers.assign([0, 1, 3, 20])])\n"
     "out = layers.dynamic_gru(P, size=2)\n",
     "[20, 2]"},
    {"gru_h0_reverse_origin.fl",
     "import _core\nP = _core.set_lod(layers.scale(param(\"P\", [20, 6])), [layers.assign([0, 1, 3, 20])])\n"
     "out = layers.dynamic_gru(P, size=2, is_reverse=True, h_0=param(\"H\", [3, 2]), origin_mode=True)\n",
     "[20, 2]"},
    {"lstm_h0_c0.fl",
     "import _core\nP = _core.set_lod(layers.scale(param(\"P\", [20, 8])), [layers.assign([0, 1, 3, 20])])\n"
     "h, c = layers.dynamic_lstm(P, size=8, h_0=param(\"H\", [3, 2]), c_0=param(\"C\", [3, 2]), is_reverse=True)\n"
     "out = layers.concat([h, c], axis=1)\n",
     "[20, 4]"},
    {"lstmp.fl",
     "import _core\nP = _core.set_lod(layers.scale(param(\"P\", [20, 8])), [layers.assign([0, 1, 3, 20])])\n"
     "r, c = layers.dynamic_lstmp(P, size=8, proj_size=3, is_reverse=True)\nout = layers.concat([r, c], axis=1)\n",
     "[20, 5]"},
    {"lstmp_h0_c0.fl",
     "import _core\nP = _core.set_lod(layers.scale(param(\"P\", [20, 8])), [layers.assign([0, 1, 3, 20])])\n"
     "r, c = layers.dynamic_lstmp(P, size=8, proj_size=3, h_0=param(\"H\", [3, 3]), c_0=param(\"C\", [3, 2]))\n"
     "out = layers.concat([r, c], axis=1)\n",
     "[20, 5]"},
    {"lstm_unit.fl",
     "X = param(\"X\", [3, 4])\nH = param(\"H\", [3, 2])\nC = param(\"C\", [3, 2])\n"
     "h, c = layers.lstm_unit(X, H, C, forget_bias=0.5)\nout = layers.elementwise_add(h, c)\n",
     "[3, 2]"},
    {"gru_unit.fl",
     "X = param(\"X\", [3, 6])\nH = param(\"H\", [3, 2])\n"
     "out, r, g = layers.gru_unit(X, H, size=6, origin_mode=True)\n",
     "[3, 2]"},
    /* sequences: LoD inputs cut into lengths 1, 2, 0 (empty) and 17 */
#define SEQ_X(rows, d) "import _core\nP = param(\"P\", [" #rows ", " #d "])\nlod = layers.assign([0, 1, 3, 3, 20])\n" \
                       "x = _core.set_lod(layers.scale(P, scale=1.0), [lod])\n"
    {"seq_pool.fl",
     SEQ_X(20, 3) "out = layers.sequence_pool(x, \"average\")\n"
                  "for t in [\"sum\", \"sqrt\", \"max\", \"last\", \"first\"]:\n"
                  "    out = layers.elementwise_add(out, layers.sequence_pool(x, t, pad_value=0.5))\n"
                  "out = layers.elementwise_add(out, layers.sequence_first_step(x))\n"
                  "out = layers.elementwise_add(out, layers.sequence_last_step(x))\n",
     "[4, 3]"},
    {"seq_pool_max_test.fl", SEQ_X(20, 3) "out = layers.sequence_pool(x, \"max\", is_test=True)\n", "[4, 3]"},
    {"seq_softmax.fl", SEQ_X(20, 1) "out = layers.sequence_softmax(x)\n", "[20, 1]"},
    {"seq_conv.fl", SEQ_X(20, 3) "out = layers.sequence_conv(x, num_filters=2, filter_size=3, act=\"tanh\")\n", "[20, 2]"},
    {"seq_conv_start.fl", SEQ_X(20, 2) "out = layers.sequence_conv(x, num_filters=3, filter_size=4, padding_start=-3, bias_attr=False)\n",
     "[20, 3]"},
    {"seq_expand.fl",
     SEQ_X(20, 1) "Q = param(\"Q\", [4, 3])\nout = layers.elementwise_add(layers.sequence_expand(Q, x), x)\n", "[20, 3]"},
    {"seq_expand_lod.fl",
     SEQ_X(20, 1) "Q = param(\"Q\", [5, 2])\nq = _core.set_lod(layers.scale(Q, scale=1.0), [layers.assign([0, 2, 3, 3, 5])])\n"
                  "out = layers.sequence_expand(q, x)\n",
     "[38, 2]"},
    {"seq_expand_as.fl",
     SEQ_X(20, 1) "Q = param(\"Q\", [4, 3])\nout = layers.elementwise_mul(layers.sequence_expand_as(Q, x), x)\n", "[20, 3]"},
#undef SEQ_X
/* sequence reshaping: concat, reshape, slice, pad / unpad, lod_reset */
#include "tests/runtime/core/grad_cases_seqshape.inc"
/* While loops over tensor arrays */
#include "tests/runtime/core/grad_cases_while.inc"
/* detection: box_coder, smooth_l1, sigmoid_cross_entropy_with_logits */
#include "tests/runtime/core/grad_cases_detection.inc"
/* proposals: yolov3_loss */
#include "tests/runtime/core/grad_cases_proposals.inc"
/* 3-D convolution and pooling, adaptive pooling */
#include "tests/runtime/core/grad_cases_conv3.inc"
/* the image layers: rearranging, padding, group_norm */
#include "tests/runtime/core/grad_cases_vision.inc"
/* the pooling of regions of interest */
#include "tests/runtime/core/grad_cases_roi.inc"
/* the sequence and NLP layers: CTC, sampled losses, sequence ops */
#include "tests/runtime/core/grad_cases_seqnlp.inc"
/* the stacked LSTM in cuDNN's layout */
#include "tests/runtime/core/grad_cases_cudnnlstm.inc"
/* spectral_norm */
#include "tests/runtime/core/grad_cases_statnorm.inc"
/* affine_grid, grid_sampler */
#include "tests/runtime/core/grad_cases_gridsample.inc"
/* sequence_scatter */
#include "tests/runtime/core/grad_cases_seqedit.inc"
/* tree_conv */
#include "tests/runtime/core/grad_cases_tree.inc"
};

static void test_grad_ops(void) {
    for (size_t i = 0; i < FL_ARRAY_LEN(cases); i++) check_case(&cases[i]);
}

/* dropout's mask is drawn per run, so no finite differences: dX must be dOut * Mask exactly. */
static void test_dropout_grad(void) {
    FlBundle *b = ct_compile("dropout.fl", HEAD
                             "P = param(\"P\", [4, 8])\n"
                             "d = layers.dropout(P, dropout_prob=0.5)\n"
                             "loss = layers.mean(d)\n");
    FlBackwardResult r = {0};
    FlErr e = {{0}};
    CT_OK(fl_backward_append(b->main, "mean_0.tmp_0", NULL, 0, &r, &e, NULL), &e);
    FlBlock *b0 = fl_ir_block(b->main, 0);
    note_ops(b0);
    const char *mask = NULL;
    for (size_t i = 0; i < b0->ops.len; i++)
        if (strcmp(b0->ops.data[i]->type, "dropout") == 0) mask = fl_ir_op_output1(b0->ops.data[i], "Mask");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mask);
    FlLoadedProgram *prog = fl_program_from_bundle_take(b);
    FlExecutor *ex;
    CT_OK(fl_executor_new(prog, NULL, &ex, &e), &e);
    FlScope *s = fl_scope_new(NULL);
    CT_OK(fl_executor_run_startup(ex, s, &e), &e);
    FlFetch f[2] = {{"P@GRAD", FL_TENSOR_INIT}, {mask, FL_TENSOR_INIT}};
    double first = -1;
    bool differs = false;
    for (int rep = 0; rep < 3; rep++) {
        CT_OK(fl_executor_run(ex, s, NULL, 0, f, 2, &e), &e);
        int ones = 0;
        for (int k = 0; k < 32; k++) {
            double m = fl_tensor_get(&f[1].tensor, k);
            ones += m != 0;
            CT_NEAR(fl_tensor_get(&f[0].tensor, k), m / 32.0, 1e-7);
        }
        CU_ASSERT_TRUE(ones > 4 && ones < 28);
        if (rep == 0) first = fl_tensor_get(&f[1].tensor, 0) + 2 * fl_tensor_get(&f[1].tensor, 1) +
                              4 * fl_tensor_get(&f[1].tensor, 2) + 8 * fl_tensor_get(&f[1].tensor, 3);
        else if (first != fl_tensor_get(&f[1].tensor, 0) + 2 * fl_tensor_get(&f[1].tensor, 1) +
                              4 * fl_tensor_get(&f[1].tensor, 2) + 8 * fl_tensor_get(&f[1].tensor, 3))
            differs = true;
    }
    CU_ASSERT_TRUE(differs); /* a new mask per run (with overwhelming probability) */
    fl_tensor_fini(&f[0].tensor);
    fl_tensor_fini(&f[1].tensor);
    fl_backward_result_fini(&r);
    fl_scope_free(s);
    fl_executor_free(ex);
    fl_program_free(prog);
}

/* data_norm: dX = dY * Scales (Y is linear in X), and in place of the statistics' gradients the
 * batch's summary, as Fluid's op gives them: N, the column sums of X, the column sums of
 * (X - Means)^2 + N * epsilon. Statistics 4, 2 and 8: Means 0.5, Scales sqrt(1/2). */
static void test_data_norm_grad(void) {
    GradRun gr;
    grad_open(&gr, "data_norm.fl", HEAD
              "P = param(\"P\", [5, 3])\n"
              "R = param(\"R\", [5, 3])\n"
              "y = layers.data_norm(layers.scale(P, scale=1.0), epsilon=0.001, name=\"dn\",\n"
              "                     param_attr={\"batch_size\": 4.0, \"batch_sum\": 2.0, \"batch_square\": 8.0})\n"
              "loss = layers.mean(layers.elementwise_mul(y, R))\n");
    FlErr e = {{0}};
    FlFetch f[6] = {{"P", FL_TENSOR_INIT},         {"R", FL_TENSOR_INIT},
                    {"P@GRAD", FL_TENSOR_INIT},    {"dn.batch_size@GRAD", FL_TENSOR_INIT},
                    {"dn.batch_sum@GRAD", FL_TENSOR_INIT}, {"dn.batch_square_sum@GRAD", FL_TENSOR_INIT}};
    CT_OK(fl_executor_run(gr.ex, gr.s, NULL, 0, f, 6, &e), &e);
    for (int j = 0; j < 3; j++) {
        double sum = 0, sq = 0;
        for (int i = 0; i < 5; i++) {
            double p = fl_tensor_get(&f[0].tensor, i * 3 + j);
            sum += p;
            sq += (p - 0.5) * (p - 0.5);
            CT_NEAR(fl_tensor_get(&f[2].tensor, i * 3 + j), fl_tensor_get(&f[1].tensor, i * 3 + j) / 15 * sqrt(0.5), 1e-6);
        }
        CT_NEAR(fl_tensor_get(&f[3].tensor, j), 5, 1e-6);
        CT_NEAR(fl_tensor_get(&f[4].tensor, j), sum, 1e-5);
        CT_NEAR(fl_tensor_get(&f[5].tensor, j), sq + 5 * 0.001, 1e-5);
    }
    for (int k = 0; k < 6; k++) fl_tensor_fini(&f[k].tensor);
    grad_close(&gr);
}

/* continuous_value_model (the cvm op): Fluid's gradient, not the derivative: dY passed through to
 * the columns Y keeps (use_cvm: all of them, not through the logs; else all but the first two) and
 * the CVM input's row in the first two, from each of the two layers. With loss = mean(Y * R) +
 * mean(N * S): dP = 2 C in the first two columns, R / 12 + S / 6 in the others. */
static void test_cvm_grad(void) {
    GradRun gr;
    grad_open(&gr, "cvm.fl", HEAD
              "P = param(\"P\", [3, 4])\n"
              "R = param(\"R\", [3, 4])\n"
              "S = param(\"S\", [3, 2])\n"
              "C = param(\"C\", [3, 2])\n"
              "c = layers.assign(C)\n"
              "c.stop_gradient = True\n"
              "y = layers.continuous_value_model(layers.scale(P, scale=1.0), c)\n"
              "n = layers.continuous_value_model(P, c, use_cvm=False)\n"
              "loss = layers.elementwise_add(layers.mean(layers.elementwise_mul(y, R)), "
              "layers.mean(layers.elementwise_mul(n, S)))\n");
    FlErr e = {{0}};
    FlFetch f[4] = {{"R", FL_TENSOR_INIT}, {"S", FL_TENSOR_INIT}, {"C", FL_TENSOR_INIT}, {"P@GRAD", FL_TENSOR_INIT}};
    CT_OK(fl_executor_run(gr.ex, gr.s, NULL, 0, f, 4, &e), &e);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            double want = j < 2 ? 2 * fl_tensor_get(&f[2].tensor, i * 2 + j)
                                : fl_tensor_get(&f[0].tensor, i * 4 + j) / 12 + fl_tensor_get(&f[1].tensor, i * 2 + j - 2) / 6;
            CT_NEAR(fl_tensor_get(&f[3].tensor, i * 4 + j), want, 1e-6);
        }
    for (int k = 0; k < 4; k++) fl_tensor_fini(&f[k].tensor);
    grad_close(&gr);
}

/* Runs last: every gradient op of the op table was exercised by a case above. */
static void test_grad_coverage(void) {
    CU_ASSERT(nseen < (int)FL_ARRAY_LEN(seen)); /* a full table would hide op types: make it larger */
    int missing = 0;
    for (size_t i = 0; i < fl_ops_count(); i++) {
        const FlOpInfo *info = fl_ops_at(i);
        if (!info->is_grad) continue;
        bool have = false;
        for (int k = 0; k < nseen && !have; k++) have = strcmp(seen[k], info->name) == 0;
        if (!have) {
            fprintf(stderr, "\nno case runs '%s'", info->name);
            missing++;
        }
    }
    CU_ASSERT_EQUAL(missing, 0);
}

int main(void) {
    static const CtCase tc[] = {
        CT_TEST(test_grad_ops),
        CT_TEST(test_dropout_grad),
        CT_TEST(test_data_norm_grad),
        CT_TEST(test_cvm_grad),
        CT_TEST(test_grad_coverage),
    };
    return ct_run("gradient adapters", tc, (int)FL_ARRAY_LEN(tc));
}
