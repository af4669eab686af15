/* test_while_grad.c: training through layers.While and tensor arrays. One recurrent network
 * (h = tanh(x_t Wx + h_prev Wh + b), h starting from the parameter h0, the loss the mean of
 * the squared outputs of its 4 steps) written twice: with StaticRNN, whose gradient is
 * dynamic_rnn_grad, and with a While loop that reads x_t and h_prev from tensor arrays and
 * writes h back to one, whose gradient is while_grad with the arrays' gradients. Both start
 * from the same parameters and take SGD steps; their losses and parameters must stay equal.
 * (Gradients of While loops by finite differences: test_grad.c, grad_cases_while.inc.) */
#include "tests/runtime/core/ct.h"

#define COMMON \
    "import fluid\n" \
    "from fluid import layers\n" \
    "T = 4\n" \
    "x = layers.reshape(layers.assign([0.5, -1.0, 0.25, 2.0, 0.0, -0.5, 1.5, 0.75, -2.0, 1.0, 0.1, -0.3,\n" \
    "                                  0.3, 0.9, -1.2, 0.6, -0.4, 0.2, 1.1, -0.7, 0.8, -0.9, 0.4, 1.3]), [T, 2, 3])\n" \
    "Wx = layers.create_parameter(shape=[3, 5], dtype=\"float32\", name=\"Wx\")\n" \
    "Wh = layers.create_parameter(shape=[5, 5], dtype=\"float32\", name=\"Wh\")\n" \
    "b = layers.create_parameter(shape=[5], dtype=\"float32\", name=\"b\")\n" \
    "h0 = layers.create_parameter(shape=[2, 5], dtype=\"float32\", name=\"h0\")\n" \
    "def cell(word, prev):\n" \
    "    return layers.tanh(layers.elementwise_add(layers.elementwise_add(layers.mul(word, Wx), layers.mul(prev, Wh)), b))\n"

static const char *const static_rnn = COMMON
    "rnn = layers.StaticRNN()\n"
    "with rnn.step():\n"
    "    word = rnn.step_input(x)\n"
    "    prev = rnn.memory(init=h0)\n"
    "    h = cell(word, prev)\n"
    "    rnn.update_memory(prev, h)\n"
    "    rnn.step_output(h)\n"
    "out = rnn()\n"
    "loss = layers.mean(layers.elementwise_mul(out, out))\n"
    "fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)\n";

static const char *const while_rnn = COMMON
    "xs = layers.create_array(\"float32\")\n"
    "for k in range(T):\n"
    "    layers.array_write(layers.reshape(layers.slice(x, axes=[0], starts=[k], ends=[k + 1]), [2, 3]),\n"
    "                       layers.fill_constant(shape=[1], dtype=\"int64\", value=k), array=xs)\n"
    "i = layers.fill_constant(shape=[1], dtype=\"int64\", value=0)\n"
    "n = layers.array_length(xs)\n"
    "mem = layers.create_array(\"float32\")\n"
    "layers.array_write(h0, i, array=mem)\n"
    "cond = layers.less_than(x=i, y=n)\n"
    "w = layers.While(cond=cond)\n"
    "with w.block():\n"
    "    word = layers.array_read(xs, i)\n"
    "    prev = layers.array_read(mem, i)\n"
    "    h = cell(word, prev)\n"
    "    layers.increment(x=i, in_place=True)\n"
    "    layers.array_write(h, i, array=mem)\n"
    "    layers.less_than(x=i, y=n, cond=cond)\n"
    "steps = [layers.array_read(mem, layers.fill_constant(shape=[1], dtype=\"int64\", value=k + 1)) for k in range(T)]\n"
    "out = layers.concat(steps, axis=0)\n"
    "loss = layers.mean(layers.elementwise_mul(out, out))\n"
    "fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)\n";

static const char *const params[] = {"Wx", "Wh", "b", "h0"};

/* The output of the program's mean op: its loss. */
static const char *loss_name(const Ct *c) {
    const FlBlock *b0 = fl_ir_block(fl_program_bundle(c->prog)->main, 0);
    for (size_t i = 0; i < b0->ops.len; i++)
        if (strcmp(b0->ops.data[i]->type, "mean") == 0) return fl_ir_op_output1(b0->ops.data[i], "Out");
    return NULL;
}

static void test_while_rnn_trains_like_static_rnn(void) {
    Ct a = ct_open("static_rnn.fl", static_rnn), w = ct_open("while_rnn.fl", while_rnn);
    FlErr e = {{0}};
    for (size_t k = 0; k < FL_ARRAY_LEN(params); k++) { /* the same start */
        FlTensor t = FL_TENSOR_INIT;
        CT_OK(fl_scope_get_tensor(a.scope, params[k], &t, &e), &e);
        fl_scope_set_tensor(w.scope, params[k], &t);
        fl_tensor_fini(&t);
    }
    const char *la = loss_name(&a), *lw = loss_name(&w);
    CU_ASSERT_PTR_NOT_NULL_FATAL(la);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lw);
    double first = 0, last = 0;
    for (int step = 0; step < 4; step++) {
        FlFetch fa = {la, FL_TENSOR_INIT}, fw = {lw, FL_TENSOR_INIT};
        CT_OK(fl_executor_run(a.ex, a.scope, NULL, 0, &fa, 1, &e), &e);
        CT_OK(fl_executor_run(w.ex, w.scope, NULL, 0, &fw, 1, &e), &e);
        double va = fl_tensor_get(&fa.tensor, 0), vw = fl_tensor_get(&fw.tensor, 0);
        if (fabs(va - vw) > 1e-5) fprintf(stderr, "\nstep %d: loss %.8g (StaticRNN), %.8g (While)\n", step, va, vw);
        CT_NEAR(va, vw, 1e-5);
        if (step == 0) first = va;
        last = va;
        fl_tensor_fini(&fa.tensor);
        fl_tensor_fini(&fw.tensor);
        int bad = 0, n = 0;
        for (size_t k = 0; k < FL_ARRAY_LEN(params); k++) {
            FlTensor pa = FL_TENSOR_INIT, pw = FL_TENSOR_INIT;
            CT_OK(fl_scope_get_tensor(a.scope, params[k], &pa, &e), &e);
            CT_OK(fl_scope_get_tensor(w.scope, params[k], &pw, &e), &e);
            for (int64_t q = 0; q < fl_tensor_numel(&pa); q++, n++)
                if (fabs(fl_tensor_get(&pa, q) - fl_tensor_get(&pw, q)) > 1e-5) {
                    if (bad++ < 5)
                        fprintf(stderr, "\nstep %d: %s[%lld] %.8g (StaticRNN), %.8g (While)\n", step, params[k],
                                (long long)q, fl_tensor_get(&pa, q), fl_tensor_get(&pw, q));
                }
            fl_tensor_fini(&pa);
            fl_tensor_fini(&pw);
        }
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT_EQUAL(n, 15 + 25 + 5 + 10);
    }
    CU_ASSERT_TRUE(last < first - 1e-3); /* the steps trained */
    ct_close(&a);
    ct_close(&w);
}

int main(void) {
    static const CtCase tc[] = {
        CT_TEST(test_while_rnn_trains_like_static_rnn),
    };
    return ct_run("While gradients", tc, (int)FL_ARRAY_LEN(tc));
}
