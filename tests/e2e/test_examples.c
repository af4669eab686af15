/* test_examples: every acceptance program in examples/ compiles unchanged, and its IR has the
 * structure the program describes (checked on the IR itself and on `flc show`'s text); `flc dot`
 * output is accepted by Graphviz. Runs from the repository root. */
#include <CUnit/Basic.h>
#include "tests/cunit.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/ir/ir.h"
#include "lang/eval.h"

static FlBundle *compile(const char *path, const char *define) {
    FlCompileOptions opt = {0};
    const char *defs[1] = {define};
    if (define) {
        opt.defines = defs;
        opt.ndefines = 1;
    }
    FlBundle *b = NULL;
    FlBuf diag = {0};
    int n = fl_compile_file(path, &opt, &b, &diag);
    if (n) fprintf(stderr, "%s", fl_buf_str(&diag));
    fl_buf_free(&diag);
    CU_ASSERT_EQUAL(n, 0);
    return b;
}

/* Index of the first op of `type` in block b at or after `from`, or -1. */
static int find_op(const FlBlock *b, const char *type, int from) {
    for (size_t i = (size_t)from; i < b->ops.len; i++)
        if (strcmp(b->ops.data[i]->type, type) == 0) return (int)i;
    return -1;
}
static int count_ops(const FlBlock *b, const char *type) {
    int n = 0;
    for (size_t i = 0; i < b->ops.len; i++) n += strcmp(b->ops.data[i]->type, type) == 0;
    return n;
}
static const FlBlock *sub_block(const FlProgram *p, const FlOpDesc *op, const char *attr) {
    FlAttr *a = fl_ir_op_attr(op, attr);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    int idx = a->type == FL_ATTR_BLOCKS ? (int)a->ints[0] : (int)a->i;
    return fl_ir_block(p, idx);
}
static bool show_has(const FlBundle *b, const char *text) {
    FlBuf s = {0};
    fl_ir_show_bundle(b, &s);
    bool ok = strstr(fl_buf_str(&s), text) != NULL;
    if (!ok) fprintf(stderr, "show output lacks '%s'\n", text);
    fl_buf_free(&s);
    return ok;
}

static void dot_ok(const FlBundle *b, const char *name) {
    FlBuf d = {0};
    fl_ir_dot_bundle(b, &d);
    char path[256];
    snprintf(path, sizeof path, "%s/fl_test_%s_%d.dot", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", name, (int)getpid());
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(fl_buf_str(&d), f);
    fclose(f);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "dot -Tsvg %s -o /dev/null", path);
    CU_ASSERT_EQUAL(system(cmd), 0);
    remove(path);
    fl_buf_free(&d);
}

static void test_fit_a_line(void) {
    FlBundle *b = compile("examples/fit_a_line.fl", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    const FlBlock *m = fl_ir_block(b->main, 0);
    const char *ops[] = {"mul", "elementwise_add", "mean", "mean_grad", "elementwise_add_grad", "mul_grad", "sgd"};
    int at = 0;
    for (size_t i = 0; i < 7; i++) {
        int k = find_op(m, ops[i], at);
        if (k < 0) fprintf(stderr, "fit_a_line: no '%s' after op %d\n", ops[i], at);
        CU_ASSERT(k >= 0);
        if (k >= 0) at = k;
    }
    CU_ASSERT_EQUAL(count_ops(m, "sgd"), 2); /* weight and bias */
    CU_ASSERT(show_has(b, "op mul"));
    CU_ASSERT(show_has(b, "op mul_grad"));
    CU_ASSERT(show_has(b, "op sgd"));
    /* the startup program initialises the parameters and the learning rate */
    const FlBlock *s = fl_ir_block(b->startup, 0);
    CU_ASSERT(find_op(s, "uniform_random", 0) >= 0);
    CU_ASSERT(count_ops(s, "fill_constant") >= 2);
    /* the run spec */
    CU_ASSERT(b->run.present);
    CU_ASSERT_EQUAL(b->run.batch_size, 20);
    CU_ASSERT_EQUAL(b->run.epochs, 50);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b->run.reader);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b->run.test_reader);
    CU_ASSERT_EQUAL(b->run.reader->part, FL_PART_TRAIN);
    CU_ASSERT_EQUAL(b->run.test_reader->part, FL_PART_TEST);
    CU_ASSERT_EQUAL(b->run.reader->skip_rows, 2);
    CU_ASSERT_EQUAL(b->run.reader->feeds.len, 2);
    CU_ASSERT_EQUAL(b->run.reader->feeds.data[0].ncols, 13);
    CU_ASSERT_STRING_EQUAL(b->run.fetch_names.data[0], "loss");
    dot_ok(b, "fit_a_line");
    fl_ir_bundle_free(b);
}

static void test_seed_server(void) {
    FlBundle *b = compile("examples/seed_server.fl", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    const FlBlock *m = fl_ir_block(b->main, 0);
    int k = find_op(m, "listen_and_serv", 0);
    CU_ASSERT_FATAL(k >= 0);
    CU_ASSERT_EQUAL(m->ops.len, 1); /* the server runs only its loop */
    const FlBlock *opt = sub_block(b->main, m->ops.data[k], "optimize_blocks");
    CU_ASSERT_EQUAL(count_ops(opt, "adam"), 2);
    CU_ASSERT_STRING_EQUAL(b->role, "pserver");
    CU_ASSERT(show_has(b, "op listen_and_serv"));
    CU_ASSERT(show_has(b, "op adam"));
    dot_ok(b, "seed_server");
    fl_ir_bundle_free(b);
}

static void test_seed_worker(void) {
    FlBundle *b = compile("examples/seed_worker.fl", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    const FlBlock *m = fl_ir_block(b->main, 0);
    int sp = find_op(m, "split", 0);
    int p1 = find_op(m, "parallel_for", 0);
    int p2 = p1 >= 0 ? find_op(m, "parallel_for", p1 + 1) : -1;
    int cc = find_op(m, "concat", 0);
    CU_ASSERT(sp >= 0 && p1 > sp && p2 > p1 && cc > p2);
    if (p2 > 0) {
        const FlBlock *b1 = sub_block(b->main, m->ops.data[p1], "sub_block");
        const FlBlock *b2 = sub_block(b->main, m->ops.data[p2], "sub_block");
        CU_ASSERT(find_op(b1, "send", 0) >= 0);
        CU_ASSERT(find_op(b2, "recv", 0) >= 0);
        CU_ASSERT_EQUAL(fl_ir_op_get_int(m->ops.data[p1], "n", 0), 2); /* w and b, one block each */
    }
    CU_ASSERT_EQUAL(count_ops(m, "sgd") + count_ops(m, "adam"), 0);
    dot_ok(b, "seed_worker");
    fl_ir_bundle_free(b);
}

static void test_seed_csp_worker(void) {
    FlBundle *b = compile("examples/seed_csp_worker.fl", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    const FlBlock *m = fl_ir_block(b->main, 0);
    CU_ASSERT_EQUAL(count_ops(m, "channel_create"), 3);
    CU_ASSERT_EQUAL(count_ops(m, "split_to_chan"), 2);
    CU_ASSERT_EQUAL(count_ops(m, "go"), 2);
    CU_ASSERT(find_op(m, "chan_concat", 0) >= 0);
    int g1 = find_op(m, "go", 0), g2 = find_op(m, "go", g1 + 1);
    const FlBlock *b1 = sub_block(b->main, m->ops.data[g1], "sub_block");
    const FlBlock *b2 = sub_block(b->main, m->ops.data[g2], "sub_block");
    /* each goroutine loops over a channel: a while whose body receives */
    for (int k = 0; k < 2; k++) {
        const FlBlock *gb = k ? b2 : b1;
        int w = find_op(gb, "while", 0);
        CU_ASSERT_FATAL(w >= 0);
        const FlBlock *body = sub_block(b->main, gb->ops.data[w], "sub_block");
        CU_ASSERT(find_op(body, "channel_recv", 0) >= 0);
    }
    CU_ASSERT(find_op(b2, "channel_close", 0) >= 0);
    CU_ASSERT(show_has(b, "op go"));
    CU_ASSERT(show_has(b, "op channel_recv"));
    dot_ok(b, "seed_csp_worker");
    fl_ir_bundle_free(b);
}

static void test_recognize_digits(void) {
    FlBundle *b = compile("examples/recognize_digits.fl", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    const FlBlock *m = fl_ir_block(b->main, 0);
    CU_ASSERT_EQUAL(count_ops(m, "mul"), 3);
    CU_ASSERT_EQUAL(count_ops(m, "conv2d"), 0);
    CU_ASSERT_EQUAL(count_ops(m, "adam"), 6);
    CU_ASSERT(find_op(m, "accuracy", 0) >= 0);
    CU_ASSERT(find_op(m, "cross_entropy_grad", 0) >= 0);
    fl_ir_bundle_free(b);
    b = compile("examples/recognize_digits.fl", "net=cnn");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    m = fl_ir_block(b->main, 0);
    CU_ASSERT_EQUAL(count_ops(m, "conv2d"), 1);
    CU_ASSERT_EQUAL(count_ops(m, "pool2d"), 1);
    CU_ASSERT(find_op(m, "conv2d_grad", 0) >= 0);
    dot_ok(b, "recognize_digits_cnn");
    fl_ir_bundle_free(b);
}

static void test_model_module(void) {
    FlBundle *b = compile("examples/model.fl", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_EQUAL(fl_ir_block(b->main, 0)->ops.len, 0); /* only defines a function */
    CU_ASSERT_FALSE(b->run.present);
    fl_ir_bundle_free(b);
}

int main(void) {
    static const FlTestCase cases[] = {
        {"fit_a_line", test_fit_a_line},
        {"seed_server", test_seed_server},
        {"seed_worker", test_seed_worker},
        {"seed_csp_worker", test_seed_csp_worker},
        {"recognize_digits", test_recognize_digits},
        {"model_module", test_model_module},
    };
    return fl_test_run("examples", NULL, NULL, cases, sizeof cases / sizeof cases[0]);
}
