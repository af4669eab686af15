/* test_plan_verify.c: the plan checks (compiler/plan_verify.c), `flc verify` and flrun's refusal.
 *
 *   - clean: every plan the transpiler makes of the examples (the .fl files of examples/ and examples/fluid/)
 *     and of the goldens' programs (tests/compiler/plans: fit_a_line and the digits MLP for P 1-3,
 *     T 1-2, the optimizer goldens) verifies with no issue, in sync, async (hash placement) and
 *     allreduce mode;
 *   - broken: a transpiled plan with one thing changed through the IR API, one case per rule,
 *     refused with the message that names the rule, the var and the roles;
 *   - the tools (argv[1]: flc, argv[2]: flrun): `flc verify` of a good and of a broken plan file,
 *     and flrun on a broken plan: exit 1 and the message once, before any work.
 * Runs from the repository root (ctest sets the working directory).
 */
#include "tests/cunit.h"

#include <CUnit/CUnit.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler/ops.h"
#include "compiler/plan_verify.h"
#include "compiler/transpile.h"
#include "lang/eval.h"

#define DIGITS "examples/recognize_digits.fl"
#define FIT "examples/fit_a_line.fl"

static const char *flc_path, *flrun_path;

/* ---- helpers ---- */

static FlBundle *compile_src(const char *path, const char *text) {
    FlCompileOptions opt = {0};
    FlBundle *b = NULL;
    FlBuf diag = {0};
    int n = text ? fl_compile_source(path, text, strlen(text), &opt, &b, &diag) : fl_compile_file(path, &opt, &b, &diag);
    fl_buf_free(&diag);
    return n ? NULL : b;
}

static FlPlan *plan_of(const FlBundle *b, int64_t P, int64_t T, FlTranspileMode mode, int64_t minb,
                       FlTranspileDispatch d) {
    FlTranspileOptions o = {.pservers = P, .trainers = T, .mode = mode, .min_block_size = minb, .dispatch = d};
    FlPlan *plan = NULL;
    FlErr e;
    return fl_transpile(b, &o, &plan, &e) == FL_OK ? plan : NULL;
}

/* The issues of p, one a line. */
static char *issues_of(const FlPlan *p, int *n) {
    FlPlanIssues vi = {0};
    *n = fl_plan_verify(p, &vi);
    CU_ASSERT_EQUAL(*n, (int)vi.items.len);
    FlBuf b = {0};
    for (size_t i = 0; i < vi.items.len; i++) fl_buf_printf(&b, "%s\n", vi.items.data[i].msg);
    fl_plan_verify_issues_fini(&vi);
    char *s = fl_xstrdup(fl_buf_str(&b));
    fl_buf_free(&b);
    return s;
}

static void expect_clean(const FlPlan *p, const char *what) {
    int n;
    char *s = issues_of(p, &n);
    if (n) fprintf(stderr, "\n%s: %d issues:\n%s", what, n, s);
    CU_ASSERT_EQUAL(n, 0);
    free(s);
}

/* p has an issue with exactly the message want (and was clean before the change). */
static void expect_issue(const FlPlan *p, const char *want) {
    int n;
    char *s = issues_of(p, &n);
    FlBuf line = {0};
    fl_buf_printf(&line, "%s\n", want);
    bool found = strncmp(s, fl_buf_str(&line), line.len) == 0 || strstr(s, fl_buf_str(&line)) != NULL;
    if (!found) fprintf(stderr, "\nwanted:\n%s\ngot %d issues:\n%s", want, n, s);
    CU_ASSERT(found);
    fl_buf_free(&line);
    free(s);
}

static FlBundle *role_b(FlPlan *p, const char *r, int64_t idx) {
    for (size_t i = 0; i < p->roles.len; i++)
        if (!strcmp(p->roles.data[i]->role, r) && p->roles.data[i]->role_index == idx) return p->roles.data[i];
    CU_FAIL_FATAL("no such role");
    return NULL;
}

static FlBlock *main0(FlPlan *p, const char *r, int64_t idx) { return fl_ir_block(role_b(p, r, idx)->main, 0); }

/* The first op of b of that type whose slot (input, or output when out) holds arg. */
static FlOpDesc *op_with(FlBlock *b, const char *type, bool out, const char *slot, const char *arg) {
    for (size_t i = 0; i < b->ops.len; i++) {
        FlOpDesc *op = b->ops.data[i];
        if (strcmp(op->type, type)) continue;
        if (!slot) return op;
        FlSlot *s = out ? fl_ir_op_output(op, slot) : fl_ir_op_input(op, slot);
        for (size_t k = 0; s && k < s->nargs; k++)
            if (!strcmp(s->args[k], arg)) return op;
    }
    CU_FAIL_FATAL("no such op");
    return NULL;
}

static void remove_op(FlBlock *b, const FlOpDesc *op) {
    for (size_t i = 0; i < b->ops.len; i++)
        if (b->ops.data[i] == op) {
            fl_ir_op_remove(b, i);
            return;
        }
    CU_FAIL_FATAL("op not in block");
}

static FlOpDesc *serv(FlPlan *p, int64_t s) { return op_with(main0(p, "pserver", s), "listen_and_serv", false, NULL, NULL); }

/* The digits MLP on P=2 T=2 with fc_0.w_0 and fc_1.w_0 cut in two (the goldens' plan):
 * fc_0.w_0.block0, fc_0.b_0, fc_1.w_0.block1, fc_2.w_0 on pserver 0, the others on pserver 1. */
static FlBundle *digits;
static FlPlan *digits_plan(void) {
    FlPlan *p = plan_of(digits, 2, 2, FL_TRANSPILE_SYNC, 1024, FL_TRANSPILE_ROUND_ROBIN);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    expect_clean(p, "digits P=2 T=2");
    return p;
}

/* ---- clean plans ---- */

static void verify_all_modes(const FlBundle *b, const char *name, int64_t minb) {
    static const struct {
        int64_t P, T;
        FlTranspileMode mode;
        FlTranspileDispatch d;
    } cfg[] = {
        {1, 1, FL_TRANSPILE_SYNC, FL_TRANSPILE_ROUND_ROBIN}, {1, 2, FL_TRANSPILE_SYNC, FL_TRANSPILE_ROUND_ROBIN},
        {2, 1, FL_TRANSPILE_SYNC, FL_TRANSPILE_ROUND_ROBIN}, {2, 2, FL_TRANSPILE_SYNC, FL_TRANSPILE_ROUND_ROBIN},
        {3, 2, FL_TRANSPILE_SYNC, FL_TRANSPILE_ROUND_ROBIN}, {3, 3, FL_TRANSPILE_ASYNC, FL_TRANSPILE_HASH},
        {2, 2, FL_TRANSPILE_ASYNC, FL_TRANSPILE_ROUND_ROBIN}, {0, 3, FL_TRANSPILE_ALLREDUCE, FL_TRANSPILE_ROUND_ROBIN},
    };
    for (size_t i = 0; i < FL_ARRAY_LEN(cfg); i++) {
        FlPlan *p = plan_of(b, cfg[i].P, cfg[i].T, cfg[i].mode, cfg[i].mode == FL_TRANSPILE_ALLREDUCE ? 0 : minb, cfg[i].d);
        if (!p) continue; /* a program the transpiler refuses in this mode (e.g. lars on blocks) */
        char what[512];
        snprintf(what, sizeof what, "%s P=%lld T=%lld %s %s", name, (long long)cfg[i].P, (long long)cfg[i].T,
                 fl_transpile_mode_name(cfg[i].mode), fl_transpile_dispatch_name(cfg[i].d));
        expect_clean(p, what);
        fl_ir_plan_free(p);
    }
}

static int transpiled_examples; /* how many example programs made plans */

static void verify_dir(const char *dir) {
    DIR *d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".fl")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FlBundle *b = compile_src(path, NULL);
        if (!b) continue;
        FlPlan *probe = plan_of(b, 2, 2, FL_TRANSPILE_SYNC, 0, FL_TRANSPILE_ROUND_ROBIN);
        if (probe) { /* a training program (the others: no optimizer, or distributed already) */
            transpiled_examples++;
            fl_ir_plan_free(probe);
            verify_all_modes(b, path, 64);
        }
        fl_ir_bundle_free(b);
    }
    closedir(d);
}

static void test_clean_examples(void) {
    verify_dir("examples");
    verify_dir("examples/fluid");
    CU_ASSERT(transpiled_examples >= 15);
}

/* a distributed table (is_distributed=True) beside an fc layer, lazy Adam */
#define DIST_TABLE_PROGRAM                                                                                      \
    "import fluid\nfrom fluid import layers, optimizer\nids = layers.data(name='ids', shape=[2], dtype='int64')\n" \
    "y = layers.data(name='y', shape=[1])\n"                                                                    \
    "e = layers.embedding(input=ids, size=[20, 4], is_sparse=True, is_distributed=True, "                       \
    "param_attr=fluid.ParamAttr(name='table'))\n"                                                              \
    "loss = layers.mean(layers.square_error_cost(layers.fc(layers.reshape(e, shape=[-1, 8]), size=1), y))\n"   \
    "optimizer.Adam(learning_rate=0.01, lazy_mode=True).minimize(loss)\n"
#define OPT_HEAD "import fluid\nfrom fluid import layers, optimizer, regularizer, clip\n" \
                 "x = layers.data(name='x', shape=[16])\ny = layers.data(name='y', shape=[1])\n"
static void test_clean_goldens(void) {
    FlBundle *fit = compile_src(FIT, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fit);
    verify_all_modes(fit, FIT, 0);
    verify_all_modes(digits, DIGITS, 1024);
    fl_ir_bundle_free(fit);
    static const char *const programs[] = {
        OPT_HEAD "h = layers.fc(x, size=8, act='relu')\n"
        "loss = layers.mean(layers.square_error_cost(layers.fc(h, size=1), y))\n"
        "lr = layers.exponential_decay(0.1, decay_steps=100, decay_rate=0.5, staircase=True)\n"
        "optimizer.RMSProp(learning_rate=lr, momentum=0.9, centered=True, "
        "regularization=regularizer.L2Decay(1e-4)).minimize(loss)\n",
        OPT_HEAD "h = layers.fc(x, size=8, act='relu', param_attr=fluid.ParamAttr("
        "regularizer=regularizer.L1Decay(1e-3), learning_rate=0.5))\n"
        "loss = layers.mean(layers.square_error_cost(layers.fc(h, size=1), y))\n"
        "lr = layers.piecewise_decay(boundaries=[100, 200], values=[0.1, 0.05, 0.01])\n"
        "optimizer.Adagrad(learning_rate=lr).minimize(loss)\n",
        OPT_HEAD "loss = layers.mean(layers.square_error_cost(layers.fc(x, size=1), y))\n"
        "clip.set_gradient_clip(clip.GradientClipByGlobalNorm(clip_norm=1.0))\n"
        "optimizer.SGD(learning_rate=0.1, regularization=regularizer.L2Decay(1e-4)).minimize(loss)\n",
        OPT_HEAD "w = fluid.ParamAttr(gradient_clip=clip.GradientClipByValue(0.5), "
        "regularizer=regularizer.L2Decay(0.01))\n"
        "loss = layers.mean(layers.square_error_cost(layers.fc(x, size=2, param_attr=w), y))\n"
        "optimizer.Momentum(learning_rate=0.1, momentum=0.9).minimize(loss)\n",
        OPT_HEAD "cost = layers.square_error_cost(layers.fc(x, size=2), y)\n"
        "loss = layers.scale(layers.reduce_sum(cost), scale=0.5)\n"
        "optimizer.SGD(learning_rate=0.1, regularization=regularizer.L2Decay(0.01)).minimize(loss)\n",
        OPT_HEAD "h = layers.fc(x, size=8)\nloss = layers.mean(layers.square_error_cost(layers.fc(h, size=1), y))\n"
        "optimizer.Adam(learning_rate=0.01).minimize(loss)\n",
        DIST_TABLE_PROGRAM,
    };
    for (size_t i = 0; i < FL_ARRAY_LEN(programs); i++) {
        FlBundle *b = compile_src("tests/compiler/plan_verify.fl", programs[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        verify_all_modes(b, programs[i], 16);
        fl_ir_bundle_free(b);
    }
}

/* ---- one broken plan per rule ---- */

static void test_send(void) {
    FlPlan *p = digits_plan();
    /* pserver 1 forgets the block it optimizes for fc_0.w_0@GRAD.block1 */
    FlAttr *g = fl_ir_op_attr(serv(p, 1), "grad_to_block");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CHECK_STR(g->strs[0], "fc_0.w_0@GRAD.block1:1");
    fl_ir_op_set_strings(serv(p, 1), "grad_to_block", (const char *const *)g->strs + 1, g->n - 1);
    expect_issue(p, "send of 'fc_0.w_0@GRAD.block1' from trainer 0 to pserver 1: pserver 1 has no block for it "
                    "(rule: every send has a receiver)");
    fl_ir_plan_free(p);
    /* a send to a server that has the block but does not receive this trainer's copy */
    p = digits_plan();
    FlSlot *x = fl_ir_op_input(serv(p, 1), "X");
    CHECK_STR(x->args[1], "fc_0.w_0@GRAD.block1.trainer_1");
    fl_ir_slot_set_arg(x, 1, "fc_0.w_0@GRAD.block1.trainer_7");
    expect_issue(p, "send of 'fc_0.w_0@GRAD.block1' from trainer 1 to pserver 1: pserver 1's listen_and_serv does "
                    "not receive 'fc_0.w_0@GRAD.block1.trainer_1' (rule: every send has a receiver)");
    expect_issue(p, "pserver 1's listen_and_serv receives 'fc_0.w_0@GRAD.block1.trainer_7', which is no trainer's "
                    "copy of a gradient in its grad_to_block (rule: every expected gradient is sent)");
    fl_ir_plan_free(p);
}

static void test_expect(void) {
    FlPlan *p = digits_plan();
    FlBlock *t1 = main0(p, "trainer", 1);
    remove_op(t1, op_with(t1, "send", false, "X", "fc_2.b_0@GRAD"));
    expect_issue(p, "pserver 1 expects 'fc_2.b_0@GRAD' from trainer 1, which does not send it (rule: every expected "
                    "gradient is sent)");
    fl_ir_plan_free(p);
    /* sent, but to the other server */
    p = digits_plan();
    FlOpDesc *s = op_with(main0(p, "trainer", 0), "send", false, "X", "fc_0.b_0@GRAD");
    int64_t one = 1;
    fl_ir_op_set_ints(s, "epmap", &one, 1);
    expect_issue(p, "pserver 0 expects 'fc_0.b_0@GRAD' from trainer 0, which sends it to pserver 1 (rule: every "
                    "expected gradient is sent)");
    expect_issue(p, "send of 'fc_0.b_0@GRAD' from trainer 0 to pserver 1: pserver 1 has no block for it (rule: every "
                    "send has a receiver)");
    fl_ir_plan_free(p);
}

static void test_recv(void) {
    FlPlan *p = digits_plan();
    FlOpDesc *r = op_with(main0(p, "trainer", 0), "recv", true, "Out", "fc_0.b_0");
    int64_t one = 1;
    fl_ir_op_set_ints(r, "epmap", &one, 1);
    expect_issue(p, "recv of 'fc_0.b_0' by trainer 0 from pserver 1: pserver 1 does not update it (pserver 0 does) "
                    "(rule: every recv is answered)");
    fl_ir_plan_free(p);
    /* a server out of range */
    p = digits_plan();
    r = op_with(main0(p, "trainer", 1), "recv", true, "Out", "fc_2.w_0");
    int64_t five = 5;
    fl_ir_op_set_ints(r, "epmap", &five, 1);
    expect_issue(p, "recv of 'fc_2.w_0' by trainer 1 names pserver 5, but the plan has pservers 0..1 (rule: every "
                    "recv is answered)");
    fl_ir_plan_free(p);
}

/* A trainer's distributed_lookup_table counts as receiving its table's blocks: a block looked up
 * on a server that does not update it is a RECV issue. */
static void test_dist_lookup(void) {
    FlBundle *b = compile_src("tests/compiler/plan_verify.fl", DIST_TABLE_PROGRAM);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    FlPlan *p = plan_of(b, 2, 2, FL_TRANSPILE_SYNC, 0, FL_TRANSPILE_ROUND_ROBIN);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    expect_clean(p, "dist table P=2 T=2");
    FlOpDesc *lk = op_with(main0(p, "trainer", 1), "distributed_lookup_table", false, "Ids", "ids");
    int64_t ep[2] = {1, 1}; /* block0 lives on pserver 0 */
    fl_ir_op_set_ints(lk, "epmap", ep, 2);
    expect_issue(p, "distributed_lookup_table of 'table.block0' by trainer 1 from pserver 1: pserver 1 does not update "
                    "it (rule: every recv is answered)");
    fl_ir_plan_free(p);
    fl_ir_bundle_free(b);
}

static void test_fetch(void) {
    FlPlan *p = digits_plan();
    FlBlock *t1 = main0(p, "trainer", 1);
    remove_op(t1, op_with(t1, "recv", true, "Out", "fc_2.w_0"));
    expect_issue(p, "pserver 0 updates 'fc_2.w_0', but trainer 1 does not receive it (rule: every updated block is "
                    "received)");
    fl_ir_plan_free(p);
}

static void test_fanin(void) {
    FlPlan *p = digits_plan();
    fl_ir_op_set_int(serv(p, 1), "fanin", 3);
    expect_issue(p, "pserver 1's listen_and_serv has fanin=3, but the plan has 2 trainers (rule: barrier fan-in "
                    "matches the trainer count)");
    fl_ir_plan_free(p);
    p = digits_plan();
    FlBlock *t1 = main0(p, "trainer", 1);
    remove_op(t1, op_with(t1, "send_barrier", false, NULL, NULL));
    expect_issue(p, "trainer 1 passes 0 send_barrier and 1 fetch_barrier ops a step; each sync pserver counts one of "
                    "each from every one of the 2 trainers (rule: barrier fan-in matches the trainer count)");
    fl_ir_plan_free(p);
    /* a recv moved before the send barrier */
    p = digits_plan();
    FlBlock *t0 = main0(p, "trainer", 0);
    FlOpDesc *sb = op_with(t0, "send_barrier", false, NULL, NULL);
    size_t at = 0;
    while (t0->ops.data[at] != sb) at++;
    FlOpDesc *r = t0->ops.data[at + 1];
    t0->ops.data[at + 1] = sb;
    t0->ops.data[at] = r;
    expect_issue(p, "trainer 0 receives 'fc_0.w_0.block0' before its send_barrier: the pservers have not updated it "
                    "yet (rule: barrier fan-in matches the trainer count)");
    fl_ir_plan_free(p);
}

static void test_rows(void) {
    /* the trainer's split cuts other rows than the servers hold */
    FlPlan *p = digits_plan();
    FlOpDesc *s = op_with(main0(p, "trainer", 0), "split", false, "X", "fc_0.w_0@GRAD");
    int64_t sec[2] = {40, 24};
    fl_ir_op_set_ints(s, "sections", sec, 2);
    expect_issue(p, "trainer 0's split of 'fc_0.w_0@GRAD' does not cut it along axis 0 into the blocks the pservers "
                    "expect: 'fc_0.w_0@GRAD.block0' (32 rows), 'fc_0.w_0@GRAD.block1' (32 rows) (rule: the blocks "
                    "cover each parameter's rows exactly once)");
    fl_ir_plan_free(p);
    /* a server's block that is short of rows */
    p = digits_plan();
    FlVarDesc *v = fl_ir_var_find(main0(p, "pserver", 1), "fc_0.w_0.block1");
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    v->shape[0] = 30;
    expect_issue(p, "the 2 blocks of 'fc_0.w_0' hold 62 rows on the pservers, but 'fc_0.w_0' has 64 (rule: the blocks "
                    "cover each parameter's rows exactly once)");
    fl_ir_plan_free(p);
    /* the concat joins the blocks in the wrong order */
    p = digits_plan();
    FlOpDesc *c = op_with(main0(p, "trainer", 1), "concat", true, "Out", "fc_1.w_0");
    FlSlot *x = fl_ir_op_input(c, "X");
    fl_ir_slot_set_arg(x, 0, "fc_1.w_0.block1");
    fl_ir_slot_set_arg(x, 1, "fc_1.w_0.block0");
    expect_issue(p, "trainer 1's concat of 'fc_1.w_0' does not join the received blocks fc_1.w_0.block0..1 in order "
                    "along axis 0 (rule: the blocks cover each parameter's rows exactly once)");
    fl_ir_plan_free(p);
}

static void test_state(void) {
    FlPlan *p = digits_plan();
    FlVarDesc *v = fl_ir_var_find(main0(p, "pserver", 0), "fc_0.w_0_moment1_0.block0");
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    v->shape[0] = 64;
    expect_issue(p, "pserver 0 declares 'fc_0.w_0_moment1_0.block0' (Moment1 of 'fc_0.w_0.block0') as [64, 128], but "
                    "it should be [32, 128]: the local 'fc_0.w_0_moment1_0' has the parameter's shape, so it is cut "
                    "like 'fc_0.w_0.block0' (rule: optimizer state is sliced like its parameter)");
    fl_ir_plan_free(p);
    /* block 1's optimizer reads block 0's moment */
    p = digits_plan();
    FlProgram *sp = role_b(p, "pserver", 1)->main;
    FlOpDesc *adam = NULL;
    for (size_t b = 1; b < sp->blocks.len && !adam; b++)
        for (size_t i = 0; i < fl_ir_block(sp, b)->ops.len; i++) {
            FlOpDesc *op = fl_ir_block(sp, b)->ops.data[i];
            const char *pn = fl_ir_op_input1(op, "Param");
            if (!strcmp(op->type, "adam") && pn && !strcmp(pn, "fc_0.w_0.block1")) adam = op;
        }
    CU_ASSERT_PTR_NOT_NULL_FATAL(adam);
    fl_ir_slot_set_arg(fl_ir_op_input(adam, "Moment2"), 0, "fc_0.w_0_moment2_0.block0");
    expect_issue(p, "pserver 1's adam on 'fc_0.w_0.block1' uses 'fc_0.w_0_moment2_0.block0' (Moment2), which is not "
                    "that block's own state (a name ending in '.block1') (rule: optimizer state is sliced like its "
                    "parameter)");
    fl_ir_plan_free(p);
}

static void test_init(void) {
    /* the op that initialises a server's block is gone (whatever op the startup uses) */
    FlPlan *p = digits_plan();
    FlBlock *s0 = fl_ir_block(role_b(p, "pserver", 0)->startup, 0);
    for (size_t i = s0->ops.len; i-- > 0;) {
        FlSlot *o = fl_ir_op_output(s0->ops.data[i], "Out");
        for (size_t k = 0; o && k < o->nargs; k++)
            if (!strcmp(o->args[k], "fc_0.w_0.block0")) {
                fl_ir_op_remove(s0, i);
                break;
            }
    }
    expect_issue(p, "pserver 0 holds 'fc_0.w_0.block0', but its startup program does not initialise it (rule: every "
                    "pserver starts from the local values)");
    fl_ir_plan_free(p);
    /* a startup var under the local name with another dtype */
    p = digits_plan();
    fl_ir_var_find(fl_ir_block(role_b(p, "pserver", 1)->startup, 0), "learning_rate_0")->dtype = FL_DT_FLOAT64;
    expect_issue(p, "pserver 1's startup program declares 'learning_rate_0' as float64 [1], but the local program "
                    "(trainer 0's startup) as float32 [1] (rule: every pserver starts from the local values)");
    fl_ir_plan_free(p);
    /* a startup split that keeps other rows than the server's block has (when the startup cuts
     * the full var) */
    p = digits_plan();
    s0 = fl_ir_block(role_b(p, "pserver", 1)->startup, 0);
    for (size_t i = 0; i < s0->ops.len; i++) {
        FlOpDesc *op = s0->ops.data[i];
        const char *x = fl_ir_op_input1(op, "X");
        if (strcmp(op->type, "split") || !x || strcmp(x, "fc_0.w_0")) continue;
        int64_t sec[2] = {31, 33};
        fl_ir_op_set_ints(op, "sections", sec, 2);
        expect_issue(p, "pserver 1's startup split of 'fc_0.w_0' gives 'fc_0.w_0.block1' 33 rows, but its main program "
                        "declares 32 (rule: every pserver starts from the local values)");
    }
    fl_ir_plan_free(p);
}

static void test_ranks(void) {
    FlPlan *p = digits_plan();
    p->rank_role.data[1] = 0;
    expect_issue(p, "ranks 0 and 1 both run trainer 0 (rule: the rank map is a permutation consistent with the "
                    "roles)");
    expect_issue(p, "no rank runs trainer 1 (rule: the rank map is a permutation consistent with the roles)");
    fl_ir_plan_free(p);
    p = digits_plan();
    p->rank_role.data[2] = 3;
    p->rank_role.data[3] = 2;
    expect_issue(p, "rank 2 runs pserver 1, but the ranks number each kind in rank order: it should run pserver 0 "
                    "(rule: the rank map is a permutation consistent with the roles)");
    fl_ir_plan_free(p);
}

static void test_ir(void) {
    FlPlan *p = digits_plan();
    FlOpDesc *mul = op_with(main0(p, "trainer", 1), "mul", false, "X", "img");
    fl_ir_slot_set_arg(fl_ir_op_input(mul, "X"), 0, "no_such_var");
    int n;
    char *s = issues_of(p, &n);
    CU_ASSERT(n >= 1);
    CU_ASSERT(!strncmp(s, "trainer 1's main program: examples/recognize_digits.fl:9:9: mul: var 'no_such_var'", 82));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "(rule: every program passes the IR verifier)\n"));
    if (strncmp(s, "trainer 1's main program: examples/recognize_digits.fl:9:9: mul: var 'no_such_var'", 82))
        fprintf(stderr, "\ngot:\n%s", s);
    free(s);
    fl_ir_plan_free(p);
}

static void test_mode(void) {
    FlPlan *p = digits_plan();
    fl_ir_op_set_bool(serv(p, 1), "sync_mode", false);
    expect_issue(p, "pserver 1's listen_and_serv has sync_mode=false, but the plan is sync (rule: sync and async roles "
                    "are not mixed)");
    fl_ir_plan_free(p);
    /* an async plan with one sync send */
    p = plan_of(digits, 2, 2, FL_TRANSPILE_ASYNC, 1024, FL_TRANSPILE_ROUND_ROBIN);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    expect_clean(p, "digits async");
    fl_ir_op_set_bool(op_with(main0(p, "trainer", 1), "send", false, "X", "fc_2.w_0@GRAD"), "sync", true);
    expect_issue(p, "send of 'fc_2.w_0@GRAD' from trainer 1 has sync=true, but the plan is async (rule: sync and async "
                    "roles are not mixed)");
    fl_ir_plan_free(p);
}

static void test_allreduce(void) {
    FlBundle *fit = compile_src(FIT, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fit);
    FlPlan *p = plan_of(fit, 0, 3, FL_TRANSPILE_ALLREDUCE, 0, FL_TRANSPILE_ROUND_ROBIN);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    expect_clean(p, "fit allreduce");
    FlOpDesc *ar = op_with(main0(p, "trainer", 2), "allreduce", false, NULL, NULL);
    FlSlot *x = fl_ir_op_input(ar, "X");
    CU_ASSERT_EQUAL_FATAL(x->nargs, 2);
    char *a0 = fl_xstrdup(x->args[0]), *a1 = fl_xstrdup(x->args[1]);
    fl_ir_slot_set_arg(x, 0, a1);
    fl_ir_slot_set_arg(x, 1, a0);
    FlBuf want = {0};
    fl_buf_printf(&want, "trainer 2's allreduce #0 lists '%s' at position 0 where trainer 0's has '%s' in X: the "
                  "trainers would sum different gradients (rule: every trainer's allreduce lists match)", a1, a0);
    expect_issue(p, fl_buf_str(&want));
    fl_buf_free(&want);
    free(a0);
    free(a1);
    fl_ir_plan_free(p);
    /* trainer 0 does not sum a gradient it applies */
    p = plan_of(fit, 0, 2, FL_TRANSPILE_ALLREDUCE, 0, FL_TRANSPILE_ROUND_ROBIN);
    for (int64_t t = 0; t < 2; t++) {
        FlOpDesc *a = op_with(main0(p, "trainer", t), "allreduce", false, NULL, NULL);
        fl_ir_slot_clear(fl_ir_op_input(a, "X"));
        fl_ir_slot_clear(fl_ir_op_output(a, "Out"));
        fl_ir_op_add_input(a, "X", "fc_0.b_0@GRAD");
        fl_ir_op_add_output(a, "Out", "fc_0.b_0@GRAD");
    }
    expect_issue(p, "trainer 0 updates 'fc_0.w_0', but no allreduce sums 'fc_0.w_0@GRAD': the trainers' copies of it "
                    "would drift apart (rule: every trainer's allreduce lists match)");
    fl_ir_plan_free(p);
    fl_ir_bundle_free(fit);
}

/* ---- the tools ---- */

static char *tmp_path(const char *name) {
    char *p = fl_xmalloc(512);
    snprintf(p, 512, "%s/fl_pv_%d_%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(), name);
    return p;
}

/* Runs cmd (stdout and stderr to one file); the exit code, the output in *out. */
static int run(const char *cmd, char **out) {
    char *op = tmp_path("out");
    char full[4096];
    snprintf(full, sizeof full, "%s >'%s' 2>&1", cmd, op);
    int st = system(full);
    FlErr e;
    size_t len;
    *out = fl_read_file(op, &len, &e);
    if (!*out) *out = fl_xstrdup("");
    unlink(op);
    free(op);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static size_t count_of(const char *s, const char *what) {
    size_t n = 0;
    for (const char *q = s; (q = strstr(q, what)); q += strlen(what)) n++;
    return n;
}

static void test_tools(void) {
    if (!flc_path || !flrun_path) {
        fprintf(stderr, "(no flc / flrun path given: skipped)\n");
        return;
    }
    char *good = tmp_path("good.plan"), *bad = tmp_path("bad.plan"), *out;
    char cmd[2048];
    FlErr e;
    FlPlan *p = digits_plan();
    CU_ASSERT_EQUAL_FATAL(fl_ir_plan_write(p, good, &e), FL_OK);
    fl_ir_op_set_int(serv(p, 1), "fanin", 3);
    CU_ASSERT_EQUAL_FATAL(fl_ir_plan_write(p, bad, &e), FL_OK);
    fl_ir_plan_free(p);
    const char *msg = "pserver 1's listen_and_serv has fanin=3, but the plan has 2 trainers (rule: barrier fan-in "
                      "matches the trainer count)\n";
    snprintf(cmd, sizeof cmd, "'%s' verify '%s'", flc_path, good);
    CU_ASSERT_EQUAL(run(cmd, &out), 0);
    FlBuf want = {0};
    fl_buf_printf(&want, "%s: ok: sync mode, 2 trainers, 2 pservers\n", good);
    CHECK_STR(out, fl_buf_str(&want));
    free(out);
    fl_buf_free(&want);
    snprintf(cmd, sizeof cmd, "'%s' verify '%s'", flc_path, bad);
    CU_ASSERT_EQUAL(run(cmd, &out), 1);
    fl_buf_printf(&want, "flc: error: %s: %s", bad, msg);
    CHECK_STR(out, fl_buf_str(&want));
    free(out);
    fl_buf_free(&want);
    snprintf(cmd, sizeof cmd, "'%s' verify " FIT, flc_path);
    CU_ASSERT_EQUAL(run(cmd, &out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "'verify' checks a plan (.plan, from flc transpile) or a compiled program (.flp), not 'examples/fit_a_line.fl'"));
    free(out);
    /* flrun refuses the plan before any work: exit 1, the message once (no rank starts) */
    snprintf(cmd, sizeof cmd, "'%s' '%s' --epochs 1", flrun_path, bad);
    CU_ASSERT_EQUAL(run(cmd, &out), 1);
    fl_buf_printf(&want, "flrun: error: %s: %s", bad, msg);
    CU_ASSERT_EQUAL(count_of(out, fl_buf_str(&want)), 1);
    if (count_of(out, fl_buf_str(&want)) != 1) fprintf(stderr, "\nflrun printed:\n%s", out);
    CU_ASSERT_PTR_NULL(strstr(out, "epoch"));
    free(out);
    fl_buf_free(&want);
    unlink(good);
    unlink(bad);
    free(good);
    free(bad);
}

static int setup(void) {
    digits = compile_src(DIGITS, NULL);
    return digits ? 0 : 1;
}

static int teardown(void) {
    fl_ir_bundle_free(digits);
    return 0;
}

int main(int argc, char **argv) {
    flc_path = argc > 1 ? argv[1] : NULL;
    flrun_path = argc > 2 ? argv[2] : NULL;
    static const FlTestCase cases[] = {
        {"clean: the examples' plans, every mode", test_clean_examples},
        {"clean: the goldens' programs, every mode", test_clean_goldens},
        {"distributed tables: lookups receive the blocks", test_dist_lookup},
        {"rule: every send has a receiver", test_send},
        {"rule: every expected gradient is sent", test_expect},
        {"rule: every recv is answered", test_recv},
        {"rule: every updated block is received", test_fetch},
        {"rule: barrier fan-in", test_fanin},
        {"rule: rows exactly once", test_rows},
        {"rule: optimizer state sliced", test_state},
        {"rule: every pserver starts from the local values", test_init},
        {"rule: rank map", test_ranks},
        {"rule: IR verifier", test_ir},
        {"rule: sync and async not mixed", test_mode},
        {"rule: allreduce lists match", test_allreduce},
        {"flc verify and flrun's refusal", test_tools},
    };
    return fl_test_run("plan_verify", setup, teardown, cases, FL_ARRAY_LEN(cases));
}
