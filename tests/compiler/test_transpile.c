/* test_transpile.c: the distribute transpiler (compiler/transpile.c) and `flc transpile`.
 *
 *   - goldens: the placement table and `flc show` of the plans of fit_a_line and of the digits
 *     MLP for P in {1, 2, 3}, T in {1, 2}, read back from the written .plan files
 *     (tests/compiler/plans/; FL_UPDATE_GOLDEN=1 rewrites them), and `dot -Tsvg` on their DOT;
 *   - slicing (whole rows, even split, small parameters whole), round-robin and hash placement
 *     (deterministic: the same bytes twice), the op order of every role (each gradient sent
 *     right after its last writer, then the barriers and recv ops), the optimize blocks
 *     (sum, scale 1/T, the optimizer on the block and its sliced state), the pserver startup
 *     programs (the local init ops with their seeds, making each block's rows directly), async mode,
 *     learning-rate ops in lr_block, seed-0 random ops kept in place;
 *   - errors with their exact messages, and the command line's usage errors (argv[1]: flc).
 * Runs from the repository root (ctest sets the working directory).
 */
#include <CUnit/Basic.h>
#include "tests/cunit.h"
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler/ir/rules.h"
#include "compiler/ops.h"
#include "compiler/transpile.h"
#include "lang/eval.h"

#define FIT "examples/fit_a_line.fl"
#define DIGITS "examples/recognize_digits.fl"
#define GOLDEN_DIR "tests/compiler/plans"
#define DIGITS_BLOCK 1024 /* goldens: fc_0.w_0 and fc_1.w_0 (8192) are cut, the rest is whole */

static const char *flc_path; /* argv[1] */


/* ---- helpers ---- */

static FlBundle *compile(const char *path) {
    FlCompileOptions opt = {0};
    FlBundle *b = NULL;
    FlBuf diag = {0};
    int n = fl_compile_file(path, &opt, &b, &diag);
    if (n) fprintf(stderr, "%s", fl_buf_str(&diag));
    fl_buf_free(&diag);
    CU_ASSERT_EQUAL_FATAL(n, 0);
    return b;
}

static FlBundle *compile_text(const char *path, const char *text) {
    FlCompileOptions opt = {0};
    FlBundle *b = NULL;
    FlBuf diag = {0};
    int n = fl_compile_source(path, text, strlen(text), &opt, &b, &diag);
    if (n) fprintf(stderr, "%s", fl_buf_str(&diag));
    fl_buf_free(&diag);
    CU_ASSERT_EQUAL_FATAL(n, 0);
    return b;
}

static FlPlan *transpile(const FlBundle *b, int64_t P, int64_t T, FlTranspileMode mode,
                         int64_t minb, FlTranspileDispatch d) {
    FlTranspileOptions o = {.pservers = P, .trainers = T, .mode = mode, .min_block_size = minb,
                            .dispatch = d};
    FlPlan *plan = NULL;
    FlErr e;
    FlStatus s = fl_transpile(b, &o, &plan, &e);
    if (s != FL_OK) fprintf(stderr, "transpile: %s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(s, FL_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
    return plan;
}

static const char *err_of(const FlBundle *b, int64_t P, int64_t T, int mode, int64_t minb,
                          int d) {
    static FlErr e;
    FlTranspileOptions o = {.pservers = P, .trainers = T, .mode = (FlTranspileMode)mode,
                            .min_block_size = minb, .dispatch = (FlTranspileDispatch)d};
    FlPlan *plan = (FlPlan *)1;
    CU_ASSERT_EQUAL(fl_transpile(b, &o, &plan, &e), FL_ERROR);
    CU_ASSERT_PTR_NULL(plan);
    return e.msg;
}

static const FlBundle *role(const FlPlan *p, const char *r, int64_t idx) {
    for (size_t i = 0; i < p->roles.len; i++)
        if (!strcmp(p->roles.data[i]->role, r) && p->roles.data[i]->role_index == idx)
            return p->roles.data[i];
    CU_FAIL_FATAL("no such role");
    return NULL;
}

static const FlBlock *b0(const FlProgram *p) { return fl_ir_block(p, 0); }

static int count_ops(const FlBlock *b, const char *type) {
    int n = 0;
    for (size_t i = 0; i < b->ops.len; i++) n += strcmp(b->ops.data[i]->type, type) == 0;
    return n;
}

static int64_t epmap0(const FlOpDesc *op) {
    const FlAttr *a = fl_ir_op_attr(op, "epmap");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL_FATAL(a->n, 1);
    return a->ints[0];
}

static const FlVarDesc *var(const FlProgram *p, const char *name) {
    const FlVarDesc *v = fl_ir_var_find(b0(p), name);
    if (!v) fprintf(stderr, "no var '%s'\n", name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    return v;
}

static bool has_var(const FlProgram *p, const char *name) {
    return fl_ir_var_find(b0(p), name) != NULL;
}

static bool is_op(const FlOpDesc *op, const char *type) { return strcmp(op->type, type) == 0; }

static bool op_writes(const FlOpDesc *op, const char *name) {
    for (size_t s = 0; s < op->outs.len; s++)
        for (size_t k = 0; k < op->outs.data[s].nargs; k++)
            if (!strcmp(op->outs.data[s].args[k], name)) return true;
    return false;
}

/* The index of the last op of b that writes name, or -1. */
static int last_writer(const FlBlock *b, const char *name) {
    for (size_t i = b->ops.len; i-- > 0;)
        if (op_writes(b->ops.data[i], name)) return (int)i;
    return -1;
}

/* The gradient block a trainer sends for the parameter block it receives as n
 * ("W.block1" -> "W@GRAD.block1", "b" -> "b@GRAD"). */
static void grad_of(const char *n, char *g, size_t cap) {
    const char *dot = strstr(n, ".block");
    if (dot) snprintf(g, cap, "%.*s@GRAD%s", (int)(dot - n), n, dot);
    else snprintf(g, cap, "%s@GRAD", n);
}

/* The places of a trainer's split and send ops (trainer block t). Each gradient goes out right
 * after the last op that writes it: the ops before a send, back to the first op that is not a
 * split or a send (the gradient's producer, whose groups stand together), are split/send ops
 * only; the producer writes the gradient the send reads (for a block: the gradient that the
 * split of its group cuts) and no later op writes it again. Every send stands before the
 * section that starts at send_barrier (sync) or at the first recv (async), which holds only
 * the barriers, recv and concat ops: all backward ops come first. Returns the number of sends
 * and *splits that of splits. */
static int check_send_places(const FlBlock *t, int *splits) {
    size_t sec = 0;
    while (sec < t->ops.len && !is_op(t->ops.data[sec], "send_barrier") &&
           !is_op(t->ops.data[sec], "recv"))
        sec++;
    CU_ASSERT_FATAL(sec < t->ops.len);
    for (size_t i = sec; i < t->ops.len; i++) {
        const FlOpDesc *op = t->ops.data[i];
        bool ok = is_op(op, "send_barrier") || is_op(op, "recv") ||
                  is_op(op, "fetch_barrier") || is_op(op, "concat");
        if (!ok) fprintf(stderr, "op '%s' at %zu after the send section\n", op->type, i);
        CU_ASSERT(ok);
        CU_ASSERT(!is_op(op, "send_barrier") || i == sec); /* recv after send_barrier */
    }
    int nsend = 0;
    *splits = 0;
    for (size_t i = 0; i < sec; i++) {
        const FlOpDesc *op = t->ops.data[i];
        *splits += is_op(op, "split");
        if (!is_op(op, "send")) continue;
        nsend++;
        const char *g = fl_ir_op_input1(op, "X"), *grad = g;
        int cut = -1; /* the split of g's group, if g is a block */
        size_t w = i;
        while (w > 0 && (is_op(t->ops.data[w - 1], "send") || is_op(t->ops.data[w - 1], "split"))) {
            w--;
            if (is_op(t->ops.data[w], "split") && op_writes(t->ops.data[w], g)) {
                cut = (int)w;
                grad = fl_ir_op_input1(t->ops.data[w], "X");
            }
        }
        CU_ASSERT_FATAL(w > 0);
        w--;
        if (last_writer(t, grad) != (int)w)
            fprintf(stderr, "send of '%s' at %zu: '%s' last written at %d, not by the op before "
                    "the group (%zu)\n", g, i, grad, last_writer(t, grad), w);
        CU_ASSERT_EQUAL(last_writer(t, grad), (int)w);
        if (grad != g) CU_ASSERT_EQUAL(last_writer(t, g), cut);
    }
    return nsend;
}

/* Replaces every occurrence of `what` in s (in place; the text only shrinks). */
static void strip(char *s, const char *what) {
    size_t n = strlen(what);
    if (!n) return;
    char *w = s;
    for (char *r = s; *r;) {
        if (!strncmp(r, what, n)) r += n;
        else *w++ = *r++;
    }
    *w = 0;
}

/* The golden text of a plan: the placement table, then `flc show` of it. Absolute paths of
 * this checkout (the run spec's base_dir) become relative. */
static char *golden_text(const FlPlan *p) {
    FlBuf b = {0};
    fl_transpile_show_placement(p, &b);
    fl_ir_show_plan(p, &b);
    char *s = fl_xstrdup(fl_buf_str(&b));
    fl_buf_free(&b);
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd - 1)) {
        strcat(cwd, "/");
        strip(s, cwd);
    }
    return s;
}

static char *tmp_path(const char *name) {
    char *p = fl_xmalloc(512);
    snprintf(p, 512, "%s/fl_tp_%d_%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid(), name);
    return p;
}

/* Writes p, reads it back (the round trip of fl_ir_plan_write / fl_ir_read). */
static FlPlan *round_trip(const FlPlan *p) {
    char *path = tmp_path("rt.plan");
    FlErr e;
    FlStatus s = fl_ir_plan_write(p, path, &e);
    if (s) fprintf(stderr, "write: %s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(s, FL_OK);
    FlBundle *bundle = NULL;
    FlPlan *back = NULL;
    s = fl_ir_read(path, &bundle, &back, &e);
    if (s) fprintf(stderr, "read: %s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(s, FL_OK);
    CU_ASSERT_PTR_NULL(bundle);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    unlink(path);
    free(path);
    return back;
}

static bool have_dot(void) { return system("dot -V >/dev/null 2>&1") == 0; }

/* Runs `dot [extra] -Tsvg` on the plan's DOT; true when it succeeds. */
static bool dot_accepts(const FlPlan *p, const char *extra) {
    FlBuf d = {0};
    fl_ir_dot_plan(p, &d);
    char *path = tmp_path("plan.dot");
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(fl_buf_str(&d), f);
    fclose(f);
    fl_buf_free(&d);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "dot %s -Tsvg '%s' >/dev/null 2>&1", extra, path);
    bool ok = system(cmd) == 0;
    unlink(path);
    free(path);
    return ok;
}

/* ---- goldens ---- */

static void check_golden(const char *model, const FlBundle *b, int64_t P, int64_t T, int64_t minb,
                         FlTranspileMode mode) {
    FlPlan *p = transpile(b, P, T, mode, minb, FL_TRANSPILE_ROUND_ROBIN);
    FlPlan *back = round_trip(p);
    char *text = golden_text(back), *direct = golden_text(p);
    CHECK_STR(text, direct); /* nothing lost in the file */
    char path[512];
    if (mode == FL_TRANSPILE_ALLREDUCE)
        snprintf(path, sizeof path, "%s/%s_allreduce_t%lld.txt", GOLDEN_DIR, model, (long long)T);
    else
        snprintf(path, sizeof path, "%s/%s_p%lld_t%lld.txt", GOLDEN_DIR, model, (long long)P, (long long)T);
    const char *upd = getenv("FL_UPDATE_GOLDEN");
    if (upd && *upd && strcmp(upd, "0") != 0) {
        FlErr e;
        CU_ASSERT_EQUAL(fl_write_file(path, text, strlen(text), &e), FL_OK);
    } else {
        FlErr e;
        size_t len;
        char *want = fl_read_file(path, &len, &e);
        if (!want) fprintf(stderr, "%s (regenerate with FL_UPDATE_GOLDEN=1)\n", e.msg);
        CU_ASSERT_PTR_NOT_NULL(want);
        if (want && strcmp(want, text) != 0) {
            fprintf(stderr, "\n%s differs (FL_UPDATE_GOLDEN=1 rewrites it); got:\n%s\n", path,
                    text);
            CU_FAIL("golden mismatch");
        }
        free(want);
    }
    if (have_dot()) {
        /* Graphviz 2.43 fails with "trouble in init_rank" on large plans unless newrank is
         * set; small plans must pass as they are */
        if (P * T <= 2) CU_ASSERT(dot_accepts(back, ""));
        CU_ASSERT(dot_accepts(back, "-Gnewrank=true"));
    }
    free(text);
    free(direct);
    fl_ir_plan_free(back);
    fl_ir_plan_free(p);
}

static void test_goldens(void) {
    FlBundle *fit = compile(FIT), *digits = compile(DIGITS);
    for (int64_t P = 1; P <= 3; P++)
        for (int64_t T = 1; T <= 2; T++) {
            check_golden("fit_a_line", fit, P, T, 0, FL_TRANSPILE_SYNC);
            check_golden("recognize_digits_mlp_b1024", digits, P, T, DIGITS_BLOCK, FL_TRANSPILE_SYNC);
        }
    check_golden("fit_a_line", fit, 0, 2, 0, FL_TRANSPILE_ALLREDUCE);
    fl_ir_bundle_free(fit);
    fl_ir_bundle_free(digits);
}

/* Goldens of what Fluid programs put around the optimizer: the accumulators of RMSProp (centered)
 * and Adagrad sliced with their parameter's blocks; the regularization ops on the trainers (affine
 * in the gradient); the learning-rate blocks of exponential and piecewise decay on the pservers;
 * a parameter clipped by value and regularized: both on the servers, on the merged gradient;
 * a globally clipped model as an allreduce plan (the raw gradients reduced before the clip). */
#define OPT_HEAD "import fluid\nfrom fluid import layers, optimizer, regularizer, clip\n" \
                 "x = layers.data(name='x', shape=[16])\ny = layers.data(name='y', shape=[1])\n"
static void test_optimizer_goldens(void) {
    FlBundle *b = compile_text("tests/compiler/rmsprop_l2_exp.fl",
        OPT_HEAD "h = layers.fc(x, size=8, act='relu')\n"
        "loss = layers.mean(layers.square_error_cost(layers.fc(h, size=1), y))\n"
        "lr = layers.exponential_decay(0.1, decay_steps=100, decay_rate=0.5, staircase=True)\n"
        "optimizer.RMSProp(learning_rate=lr, momentum=0.9, centered=True, "
        "regularization=regularizer.L2Decay(1e-4)).minimize(loss)\n");
    check_golden("rmsprop_l2_exponential", b, 2, 2, 64, FL_TRANSPILE_SYNC);
    fl_ir_bundle_free(b);
    b = compile_text("tests/compiler/adagrad_l1_piecewise.fl",
        OPT_HEAD "h = layers.fc(x, size=8, act='relu', param_attr=fluid.ParamAttr("
        "regularizer=regularizer.L1Decay(1e-3), learning_rate=0.5))\n"
        "loss = layers.mean(layers.square_error_cost(layers.fc(h, size=1), y))\n"
        "lr = layers.piecewise_decay(boundaries=[100, 200], values=[0.1, 0.05, 0.01])\n"
        "optimizer.Adagrad(learning_rate=lr).minimize(loss)\n");
    check_golden("adagrad_l1_piecewise", b, 2, 2, 64, FL_TRANSPILE_SYNC);
    fl_ir_bundle_free(b);
    b = compile_text("tests/compiler/clip_global_norm.fl",
        OPT_HEAD "loss = layers.mean(layers.square_error_cost(layers.fc(x, size=1), y))\n"
        "clip.set_gradient_clip(clip.GradientClipByGlobalNorm(clip_norm=1.0))\n"
        "optimizer.SGD(learning_rate=0.1, regularization=regularizer.L2Decay(1e-4)).minimize(loss)\n");
    check_golden("clip_global_norm", b, 0, 2, 0, FL_TRANSPILE_ALLREDUCE);
    /* pserver plans refuse global-norm clipping (a server holds some of the gradients only) */
    CHECK_STR(err_of(b, 2, 2, 0, 0, 0),
              "tests/compiler/clip_global_norm.fl:7:1: the clipping of 'fc_0.w_0' reads "
              "'fc_0.b_0@GRAD', another parameter's gradient (global-norm clipping needs every "
              "gradient); the pservers, which clip each parameter's merged gradient, cannot "
              "compute it: use --mode allreduce");
    fl_ir_bundle_free(b);
    /* a clipped and regularized parameter: the servers run both on the merged gradient, block
     * by block (clipping by value is elementwise) */
    b = compile_text("tests/compiler/clip_value.fl",
        OPT_HEAD "w = fluid.ParamAttr(gradient_clip=clip.GradientClipByValue(0.5), "
        "regularizer=regularizer.L2Decay(0.01))\n"
        "loss = layers.mean(layers.square_error_cost(layers.fc(x, size=2, param_attr=w), y))\n"
        "optimizer.Momentum(learning_rate=0.1, momentum=0.9).minimize(loss)\n");
    check_golden("clip_value_l2", b, 2, 2, 16, FL_TRANSPILE_SYNC);
    fl_ir_bundle_free(b);
    /* a loss that is a sum over the batch's rows: listen_and_serv and allreduce say loss_sum (the
     * trainers' gradients are summed, not averaged), and the L2 term runs on the servers after
     * the sum (each trainer's would add up); a mean loss (every golden above) has no loss_sum */
    b = compile_text("tests/compiler/sum_loss.fl",
        OPT_HEAD "cost = layers.square_error_cost(layers.fc(x, size=2), y)\n"
        "loss = layers.scale(layers.reduce_sum(cost), scale=0.5)\n"
        "optimizer.SGD(learning_rate=0.1, regularization=regularizer.L2Decay(0.01)).minimize(loss)\n");
    check_golden("sum_loss_l2", b, 2, 2, 0, FL_TRANSPILE_SYNC);
    check_golden("sum_loss_l2", b, 0, 2, 0, FL_TRANSPILE_ALLREDUCE);
    fl_ir_bundle_free(b);
    /* a sum divided by a count the batch gives is not a sum: the mean weighting stays */
    b = compile_text("tests/compiler/sum_over_count.fl",
        OPT_HEAD "cost = layers.square_error_cost(layers.fc(x, size=2), y)\n"
        "loss = layers.reduce_sum(cost) / layers.reduce_sum(y)\n"
        "optimizer.SGD(learning_rate=0.1).minimize(loss)\n");
    FlPlan *ratio = transpile(b, 2, 2, FL_TRANSPILE_SYNC, 0, FL_TRANSPILE_ROUND_ROBIN);
    char *text = golden_text(ratio);
    CU_ASSERT_PTR_NULL(strstr(text, "loss_sum"));
    free(text);
    fl_ir_plan_free(ratio);
    fl_ir_bundle_free(b);
    /* clipping by norm needs the whole gradient: fine on a whole parameter, refused on a cut one */
    b = compile_text("tests/compiler/clip_norm.fl",
        OPT_HEAD "w = fluid.ParamAttr(gradient_clip=clip.GradientClipByNorm(1.0))\n"
        "loss = layers.mean(layers.square_error_cost(layers.fc(x, size=2, param_attr=w), y))\n"
        "optimizer.SGD(learning_rate=0.1).minimize(loss)\n");
    FlPlan *whole = transpile(b, 2, 2, FL_TRANSPILE_SYNC, 0, FL_TRANSPILE_ROUND_ROBIN);
    fl_ir_plan_free(whole);
    CHECK_STR(err_of(b, 2, 2, 0, 16, 0),
              "tests/compiler/clip_norm.fl:7:1: the clipping of 'fc_0.w_0' computes "
              "'reduce_sum_0.tmp_0' [1] from the whole gradient (a norm), but the plan cuts the "
              "parameter into 2 blocks: raise --min-block-size above 32 elements, or use --mode "
              "allreduce");
    fl_ir_bundle_free(b);
    /* lars_momentum and lamb need the whole parameter's norms; whole, its plan is fine */
    static const struct {
        const char *file, *minimize, *err;
    } norms[] = {
        {"tests/compiler/lars.fl", "optimizer.LarsMomentum(learning_rate=0.1, momentum=0.9).minimize(loss)\n",
         "tests/compiler/lars.fl:6:1: lars_momentum scales 'fc_0.w_0' by the norms of the whole parameter and "
         "gradient, but the plan cuts it into 2 blocks: raise --min-block-size above 16 elements, or use --mode "
         "allreduce"},
        {"tests/compiler/lamb.fl", "optimizer.Lamb(learning_rate=0.1).minimize(loss)\n",
         "tests/compiler/lamb.fl:6:1: lamb scales 'fc_0.w_0' by the norms of the whole parameter and its "
         "update, but the plan cuts it into 2 blocks: raise --min-block-size above 16 elements, or use --mode "
         "allreduce"},
    };
    for (size_t i = 0; i < FL_ARRAY_LEN(norms); i++) {
        char src[512];
        snprintf(src, sizeof src, "%s%s%s", OPT_HEAD,
                 "loss = layers.mean(layers.square_error_cost(layers.fc(x, size=1), y))\n", norms[i].minimize);
        b = compile_text(norms[i].file, src);
        CHECK_STR(err_of(b, 2, 1, 0, 8, 0), norms[i].err);
        FlPlan *p = transpile(b, 2, 1, FL_TRANSPILE_SYNC, 0, FL_TRANSPILE_ROUND_ROBIN);
        fl_ir_plan_free(p);
        fl_ir_bundle_free(b);
    }
}

/* ---- slicing and placement ---- */

static void test_slicing(void) {
    FlBundle *b = compile(DIGITS);
    FlPlan *p = transpile(b, 3, 2, FL_TRANSPILE_SYNC, 64, FL_TRANSPILE_ROUND_ROBIN);
    CU_ASSERT_EQUAL(p->roles.len, 5);
    const FlProgram *tm = role(p, "trainer", 0)->main;
    /* fc_0.w_0 [64, 128]: 3 blocks of whole rows, 22 + 21 + 21 */
    const int64_t rows[3] = {22, 21, 21};
    for (int k = 0; k < 3; k++) {
        char n[64];
        snprintf(n, sizeof n, "fc_0.w_0.block%d", k);
        const FlVarDesc *v = var(tm, n);
        CU_ASSERT_EQUAL(v->ndim, 2);
        CU_ASSERT_EQUAL(v->shape[0], rows[k]);
        CU_ASSERT_EQUAL(v->shape[1], 128);
        /* the block lives on server k (round robin from block 0) with the same shape */
        const FlProgram *sm = role(p, "pserver", k)->main;
        CU_ASSERT_EQUAL(var(sm, n)->shape[0], rows[k]);
        CU_ASSERT(var(sm, n)->persistable);
        snprintf(n, sizeof n, "fc_0.w_0_moment1_0.block%d", k);
        CU_ASSERT_EQUAL(var(sm, n)->shape[0], rows[k]);
        snprintf(n, sizeof n, "fc_0.w_0_beta1_pow_acc_0.block%d", k);
        CU_ASSERT_EQUAL(var(sm, n)->shape[0], 1);
        for (int other = 0; other < 3; other++) {
            snprintf(n, sizeof n, "fc_0.w_0.block%d", k);
            if (other != k) CU_ASSERT(!has_var(role(p, "pserver", other)->main, n));
        }
    }
    CU_ASSERT(!has_var(tm, "fc_0.w_0.block3"));
    /* fc_1.b_0 [64] = 64 elements: one piece, whole, under its own name */
    CU_ASSERT(!has_var(tm, "fc_1.b_0.block0"));
    int holders = 0;
    for (int s = 0; s < 3; s++) {
        const FlProgram *sm = role(p, "pserver", s)->main;
        if (!has_var(sm, "fc_1.b_0")) continue;
        holders++;
        CU_ASSERT_EQUAL(var(sm, "fc_1.b_0")->shape[0], 64);
        CU_ASSERT(has_var(sm, "fc_1.b_0_moment1_0"));
    }
    CU_ASSERT_EQUAL(holders, 1);
    fl_ir_plan_free(p);
    /* more servers than rows: fit_a_line's [13, 1] in 3 blocks (5, 4, 4), [1] whole */
    FlBundle *fit = compile(FIT);
    p = transpile(fit, 3, 1, FL_TRANSPILE_SYNC, 1, FL_TRANSPILE_ROUND_ROBIN);
    tm = role(p, "trainer", 0)->main;
    CU_ASSERT_EQUAL(var(tm, "fc_0.w_0.block0")->shape[0], 5);
    CU_ASSERT_EQUAL(var(tm, "fc_0.w_0.block1")->shape[0], 4);
    CU_ASSERT_EQUAL(var(tm, "fc_0.w_0.block2")->shape[0], 4);
    CU_ASSERT(!has_var(tm, "fc_0.b_0.block0"));
    fl_ir_plan_free(p);
    /* with the default block size nothing of fit_a_line is cut */
    p = transpile(fit, 3, 1, FL_TRANSPILE_SYNC, 0, FL_TRANSPILE_ROUND_ROBIN);
    CU_ASSERT_EQUAL(count_ops(b0(role(p, "trainer", 0)->main), "split"), 0);
    CU_ASSERT_EQUAL(count_ops(b0(role(p, "trainer", 0)->main), "concat"), 0);
    fl_ir_plan_free(p);
    fl_ir_bundle_free(fit);
    fl_ir_bundle_free(b);
}

static void test_round_robin(void) {
    FlBundle *b = compile(DIGITS);
    FlPlan *p = transpile(b, 3, 1, FL_TRANSPILE_SYNC, 64, FL_TRANSPILE_ROUND_ROBIN);
    const FlBlock *t = b0(role(p, "trainer", 0)->main);
    /* recv ops come in block order; each gradient block is sent to its parameter block's
     * server (sends follow the backward pass, in another order) */
    int64_t j = 0;
    for (size_t k = 0; k < t->ops.len; k++) {
        if (!is_op(t->ops.data[k], "recv")) continue;
        CU_ASSERT_EQUAL(epmap0(t->ops.data[k]), j % 3);
        char g[128];
        grad_of(fl_ir_op_output1(t->ops.data[k], "Out"), g, sizeof g);
        int sends = 0;
        for (size_t i = 0; i < t->ops.len; i++)
            if (is_op(t->ops.data[i], "send") && !strcmp(fl_ir_op_input1(t->ops.data[i], "X"), g)) {
                CU_ASSERT_EQUAL(epmap0(t->ops.data[i]), j % 3);
                sends++;
            }
        CU_ASSERT_EQUAL(sends, 1);
        j++;
    }
    CU_ASSERT_EQUAL(j, 3 + 2 + 3 + 1 + 3 + 1); /* blocks of the six parameters */
    CU_ASSERT_EQUAL(count_ops(t, "send"), j);
    /* the table */
    FlBuf s = {0};
    fl_transpile_show_placement(p, &s);
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&s),
                                  "  fc_0.w_0 [64, 128]: block0 rows [0, 22) -> pserver 0, "
                                  "block1 rows [22, 43) -> pserver 1, block2 rows [43, 64) -> "
                                  "pserver 2\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&s), "  fc_1.b_0 [64]: whole -> pserver 2\n"));
    fl_buf_free(&s);
    fl_ir_plan_free(p);
    fl_ir_bundle_free(b);
}

static void test_hash(void) {
    FlBundle *b = compile(DIGITS);
    FlPlan *p = transpile(b, 3, 2, FL_TRANSPILE_SYNC, 64, FL_TRANSPILE_HASH);
    FlPlan *q = transpile(b, 3, 2, FL_TRANSPILE_SYNC, 64, FL_TRANSPILE_HASH);
    size_t n1, n2;
    uint8_t *e1 = fl_ir_encode_plan(p, &n1), *e2 = fl_ir_encode_plan(q, &n2);
    CU_ASSERT(n1 == n2 && memcmp(e1, e2, n1) == 0);
    free(e1);
    free(e2);
    /* every block on fl_hash_bytes(name) mod P, the grad block with its param block */
    const FlBlock *t = b0(role(p, "trainer", 0)->main);
    int nrecv = 0;
    for (size_t k = 0; k < t->ops.len; k++) {
        const FlOpDesc *op = t->ops.data[k];
        if (strcmp(op->type, "recv") != 0) continue;
        const char *n = fl_ir_op_output1(op, "Out");
        int64_t s = (int64_t)(fl_hash_bytes(n, strlen(n)) % 3);
        CU_ASSERT_EQUAL(epmap0(op), s);
        CU_ASSERT(has_var(role(p, "pserver", s)->main, n));
        char g[128];
        grad_of(n, g, sizeof g);
        CU_ASSERT(has_var(role(p, "pserver", s)->main, g));
        nrecv++;
    }
    CU_ASSERT_EQUAL(nrecv, 13);
    fl_ir_plan_free(p);
    fl_ir_plan_free(q);
    fl_ir_bundle_free(b);
}

/* ---- roles ---- */

static void test_trainer_order(void) {
    FlBundle *b = compile(DIGITS);
    for (int mode = 0; mode < 2; mode++) {
        FlPlan *p = transpile(b, 2, 2, (FlTranspileMode)mode, 64, FL_TRANSPILE_ROUND_ROBIN);
        CU_ASSERT_EQUAL(p->rank_role.len, 4);
        for (size_t r = 0; r < 4; r++) CU_ASSERT_EQUAL(p->rank_role.data[r], (int64_t)r);
        CU_ASSERT_STRING_EQUAL(p->roles.data[0]->role, "trainer");
        CU_ASSERT_STRING_EQUAL(p->roles.data[2]->role, "pserver");
        CU_ASSERT_EQUAL(p->roles.data[3]->role_index, 1);
        CHECK_STR(p->mode, mode ? "async" : "sync");
        for (int64_t tr = 0; tr < 2; tr++) {
            const FlBundle *tb = role(p, "trainer", tr);
            const FlBlock *t = b0(tb->main), *l = b0(b->main);
            CU_ASSERT(tb->run.present);
            CU_ASSERT_EQUAL(tb->run.batch_size, b->run.batch_size);
            /* the local ops up to the first optimizer op, unchanged, with split/send ops
             * among them */
            size_t i = 0;
            for (size_t n = 0;; n++, i++) {
                while (i < t->ops.len &&
                       (is_op(t->ops.data[i], "split") || is_op(t->ops.data[i], "send")))
                    i++;
                if (n == l->ops.len || is_op(l->ops.data[n], "adam")) break;
                CU_ASSERT_FATAL(i < t->ops.len);
                CU_ASSERT_STRING_EQUAL(t->ops.data[i]->type, l->ops.data[n]->type);
            }
            CU_ASSERT_FATAL(i > 0 && i < t->ops.len);
            /* each gradient sent right after its last writer (the backward pass: later
             * layers first), then [send_barrier], recv+, [fetch_barrier], concat* */
            CU_ASSERT(is_op(t->ops.data[i - 1], "send"));
            int nsplit;
            CU_ASSERT_EQUAL(check_send_places(t, &nsplit), 10); /* w0: 2, b0: 2, w1: 2, b1: 1,
                                                                   w2: 2, b2: 1 */
            CU_ASSERT_EQUAL(nsplit, 4);
            CU_ASSERT_STRING_EQUAL(t->ops.data[i]->type, mode ? "recv" : "send_barrier");
            /* the last layer's bias gradient leaves first, the first layer's weights last */
            int first = -1, last = -1;
            for (size_t k = 0; k < t->ops.len; k++)
                if (is_op(t->ops.data[k], "send")) {
                    if (first < 0) first = (int)k;
                    last = (int)k;
                }
            CU_ASSERT_FATAL(first >= 0);
            CHECK_STR(fl_ir_op_input1(t->ops.data[first], "X"), "fc_2.b_0@GRAD");
            CHECK_STR(fl_ir_op_input1(t->ops.data[last], "X"), "fc_0.w_0@GRAD.block1");
            CU_ASSERT_EQUAL(count_ops(t, "recv"), 10);
            CU_ASSERT_EQUAL(count_ops(t, "concat"), 4);
            for (size_t k = 0; k < t->ops.len; k++)
                CU_ASSERT(!(fl_ops_find(t->ops.data[k]->type)->flags & FL_OPF_OPTIMIZE));
            CU_ASSERT_EQUAL(count_ops(t, "send_barrier"), mode ? 0 : 1);
            CU_ASSERT_EQUAL(count_ops(t, "fetch_barrier"), mode ? 0 : 1);
            CU_ASSERT_EQUAL(count_ops(t, "adam"), 0);
            /* the optimizer's state is gone from the trainer's main program */
            CU_ASSERT(!has_var(tb->main, "fc_0.w_0_moment1_0"));
            CU_ASSERT(!has_var(tb->main, "learning_rate_0"));
            /* the startup program is the local one */
            CU_ASSERT_EQUAL(b0(tb->startup)->ops.len, b0(b->startup)->ops.len);
        }
        fl_ir_plan_free(p);
    }
    fl_ir_bundle_free(b);
}

/* The gradients of a and b come from one elementwise_add_grad, b's first in its slots: their
 * groups (a split, two sends) follow it in parameter order, a then b; c's group, inserted
 * after an earlier op, shifts theirs. */
static void test_shared_producer(void) {
    FlBundle *b = compile_text("tests/compiler/shared_producer.fl",
                               "import fluid\n"
                               "from fluid import layers, optimizer\n"
                               "a = layers.create_parameter(shape=[4], name=\"a\")\n"
                               "c = layers.create_parameter(shape=[6], name=\"c\")\n"
                               "w = layers.create_parameter(shape=[4], name=\"b\")\n"
                               "s = layers.elementwise_add(w, a)\n"
                               "loss = layers.mean(layers.elementwise_add(layers.mean(c), "
                               "layers.mean(layers.square(s))))\n"
                               "optimizer.SGD(learning_rate=0.1).minimize(loss)\n");
    for (int mode = 0; mode < 2; mode++) {
        FlPlan *p = transpile(b, 2, 1, (FlTranspileMode)mode, 1, FL_TRANSPILE_ROUND_ROBIN);
        const FlBlock *t = b0(role(p, "trainer", 0)->main);
        int nsplit;
        CU_ASSERT_EQUAL(check_send_places(t, &nsplit), 6); /* a, c, b: 2 blocks each */
        CU_ASSERT_EQUAL(nsplit, 3);
        int add = last_writer(t, "a@GRAD");
        CU_ASSERT_FATAL(add >= 0 && (size_t)add + 6 < t->ops.len);
        CHECK_STR(t->ops.data[add]->type, "elementwise_add_grad");
        CU_ASSERT_EQUAL(last_writer(t, "b@GRAD"), add);
        const char *want[] = {"split", "a@GRAD", "send", "a@GRAD.block0", "send", "a@GRAD.block1",
                              "split", "b@GRAD", "send", "b@GRAD.block0", "send", "b@GRAD.block1"};
        for (size_t k = 0; k < 6; k++) {
            const FlOpDesc *op = t->ops.data[add + 1 + (int)k];
            CHECK_STR(op->type, want[2 * k]);
            CHECK_STR(fl_ir_op_input1(op, "X"), want[2 * k + 1]);
        }
        fl_ir_plan_free(p);
    }
    fl_ir_bundle_free(b);
}

/* The optimize block of the grad block g on a pserver's main program. */
static const FlBlock *optimize_block(const FlProgram *m, const char *g) {
    const FlOpDesc *ls = b0(m)->ops.data[0];
    CU_ASSERT_STRING_EQUAL_FATAL(ls->type, "listen_and_serv");
    const FlAttr *g2b = fl_ir_op_attr(ls, "grad_to_block");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g2b);
    size_t n = strlen(g);
    for (size_t i = 0; i < g2b->n; i++)
        if (!strncmp(g2b->strs[i], g, n) && g2b->strs[i][n] == ':')
            return fl_ir_block(m, atoi(g2b->strs[i] + n + 1));
    CU_FAIL_FATAL("no such gradient block");
    return NULL;
}

static void test_pserver_sync(void) {
    FlBundle *b = compile(DIGITS);
    FlPlan *p = transpile(b, 2, 2, FL_TRANSPILE_SYNC, 64, FL_TRANSPILE_ROUND_ROBIN);
    const FlProgram *m = role(p, "pserver", 1)->main;
    CU_ASSERT_EQUAL(b0(m)->ops.len, 1);
    const FlOpDesc *ls = b0(m)->ops.data[0];
    CU_ASSERT_EQUAL(fl_ir_op_get_int(ls, "fanin", 0), 2);
    CU_ASSERT_EQUAL(fl_ir_op_get_bool(ls, "sync_mode", false), true);
    CU_ASSERT_EQUAL(fl_ir_op_get_int(ls, "lr_block", 0), -1);
    /* pserver 1 holds block1 of fc_0.w_0 (round robin: block 1 of the global sequence) */
    const FlBlock *ob = optimize_block(m, "fc_0.w_0@GRAD.block1");
    CU_ASSERT_EQUAL_FATAL(ob->ops.len, 3);
    const FlOpDesc *sum = ob->ops.data[0], *sc = ob->ops.data[1], *opt = ob->ops.data[2];
    CU_ASSERT_STRING_EQUAL(sum->type, "sum");
    const FlSlot *xs = fl_ir_op_input(sum, "X");
    CU_ASSERT_EQUAL_FATAL(xs->nargs, 2);
    CU_ASSERT_STRING_EQUAL(xs->args[0], "fc_0.w_0@GRAD.block1.trainer_0");
    CU_ASSERT_STRING_EQUAL(xs->args[1], "fc_0.w_0@GRAD.block1.trainer_1");
    CU_ASSERT_STRING_EQUAL(fl_ir_op_output1(sum, "Out"), "fc_0.w_0@GRAD.block1");
    CU_ASSERT_STRING_EQUAL(sc->type, "scale");
    CU_ASSERT_DOUBLE_EQUAL(fl_ir_op_get_float(sc, "scale", 0), 0.5, 1e-12);
    CU_ASSERT_STRING_EQUAL(fl_ir_op_input1(sc, "X"), "fc_0.w_0@GRAD.block1");
    CU_ASSERT_STRING_EQUAL(fl_ir_op_output1(sc, "Out"), "fc_0.w_0@GRAD.block1");
    CU_ASSERT_STRING_EQUAL(opt->type, "adam");
    CU_ASSERT_STRING_EQUAL(fl_ir_op_input1(opt, "Param"), "fc_0.w_0.block1");
    CU_ASSERT_STRING_EQUAL(fl_ir_op_output1(opt, "ParamOut"), "fc_0.w_0.block1");
    CU_ASSERT_STRING_EQUAL(fl_ir_op_input1(opt, "Grad"), "fc_0.w_0@GRAD.block1");
    CU_ASSERT_STRING_EQUAL(fl_ir_op_input1(opt, "Moment1"), "fc_0.w_0_moment1_0.block1");
    CU_ASSERT_STRING_EQUAL(fl_ir_op_output1(opt, "Moment2Out"), "fc_0.w_0_moment2_0.block1");
    CU_ASSERT_STRING_EQUAL(fl_ir_op_input1(opt, "Beta1Pow"), "fc_0.w_0_beta1_pow_acc_0.block1");
    CU_ASSERT_STRING_EQUAL(fl_ir_op_input1(opt, "LearningRate"), "learning_rate_0");
    CU_ASSERT_DOUBLE_EQUAL(fl_ir_op_get_float(opt, "beta2", 0), 0.999, 1e-12);
    CU_ASSERT_EQUAL(var(m, "fc_0.w_0_moment1_0.block1")->shape[0], 32);
    CU_ASSERT(var(m, "learning_rate_0")->persistable);
    CU_ASSERT(!var(m, "fc_0.w_0@GRAD.block1.trainer_0")->persistable);
    /* X lists exactly what the server receives */
    CU_ASSERT_EQUAL(fl_ir_op_input(ls, "X")->nargs, 2 * 5); /* 5 blocks, 2 trainers */
    /* a whole parameter keeps its names */
    ob = optimize_block(m, "fc_2.b_0@GRAD"); /* block 9 of the sequence */
    CU_ASSERT_STRING_EQUAL(fl_ir_op_input1(ob->ops.data[2], "Param"), "fc_2.b_0");
    CU_ASSERT_STRING_EQUAL(fl_ir_op_input1(ob->ops.data[2], "Moment1"), "fc_2.b_0_moment1_0");
    fl_ir_plan_free(p);
    fl_ir_bundle_free(b);
}

static void test_async(void) {
    FlBundle *b = compile(DIGITS);
    FlPlan *p = transpile(b, 2, 2, FL_TRANSPILE_ASYNC, 64, FL_TRANSPILE_ROUND_ROBIN);
    CHECK_STR(p->mode, "async");
    for (int64_t s = 0; s < 2; s++) {
        const FlProgram *m = role(p, "pserver", s)->main;
        const FlOpDesc *ls = b0(m)->ops.data[0];
        CU_ASSERT_EQUAL(fl_ir_op_get_bool(ls, "sync_mode", true), false);
        CU_ASSERT_EQUAL(fl_ir_op_get_int(ls, "fanin", 0), 2);
        for (size_t k = 1; k < m->blocks.len; k++) {
            const FlBlock *ob = fl_ir_block(m, (int)k);
            CU_ASSERT_EQUAL(ob->ops.len, 1);
            CU_ASSERT_STRING_EQUAL(ob->ops.data[0]->type, "adam");
            CU_ASSERT_EQUAL(count_ops(ob, "sum"), 0);
        }
        for (size_t k = 0; k < b0(m)->vars.len; k++)
            CU_ASSERT_PTR_NULL(strstr(b0(m)->vars.data[k]->name, ".trainer_"));
        const FlSlot *xs = fl_ir_op_input(ls, "X");
        const FlAttr *g2b = fl_ir_op_attr(ls, "grad_to_block");
        CU_ASSERT_EQUAL(xs->nargs, g2b->n);
    }
    const FlBlock *t = b0(role(p, "trainer", 1)->main);
    CU_ASSERT_EQUAL(count_ops(t, "send_barrier") + count_ops(t, "fetch_barrier"), 0);
    for (size_t i = 0; i < t->ops.len; i++)
        if (!strcmp(t->ops.data[i]->type, "send"))
            CU_ASSERT_EQUAL(fl_ir_op_get_bool(t->ops.data[i], "sync", true), false);
    fl_ir_plan_free(p);
    fl_ir_bundle_free(b);
}

/* Allreduce: T trainers, no pservers; each trainer is the local program plus one allreduce of
 * every gradient, in parameter order, right before the optimizer ops, which stay. */
static void test_allreduce(void) {
    FlBundle *b = compile(DIGITS);
    FlPlan *p = transpile(b, 0, 3, FL_TRANSPILE_ALLREDUCE, 0, FL_TRANSPILE_ROUND_ROBIN);
    CHECK_STR(p->mode, "allreduce");
    CU_ASSERT_EQUAL(p->pservers, 0);
    CU_ASSERT_EQUAL(p->roles.len, 3);
    CU_ASSERT_EQUAL(p->rank_role.len, 3);
    const FlBlock *l = b0(b->main);
    for (int64_t t = 0; t < 3; t++) {
        const FlBundle *r = role(p, "trainer", t);
        const FlBlock *m = b0(r->main);
        CU_ASSERT_EQUAL(m->ops.len, l->ops.len + 1);
        CU_ASSERT_EQUAL(count_ops(m, "allreduce"), 1);
        CU_ASSERT_EQUAL(count_ops(m, "adam"), count_ops(l, "adam"));
        CU_ASSERT_EQUAL(count_ops(m, "send") + count_ops(m, "recv") + count_ops(m, "listen_and_serv"), 0);
        size_t at = 0;
        while (at < m->ops.len && strcmp(m->ops.data[at]->type, "allreduce") != 0) at++;
        CU_ASSERT_FATAL(at < m->ops.len);
        for (size_t i = 0; i < m->ops.len; i++) /* the same ops around it, in the same order */
            CHECK_STR(m->ops.data[i]->type, i < at ? l->ops.data[i]->type : i > at ? l->ops.data[i - 1]->type : "allreduce");
        CU_ASSERT(fl_ops_find(m->ops.data[at + 1]->type)->flags & FL_OPF_OPTIMIZE);
        for (size_t i = 0; i < at; i++) CU_ASSERT(!(fl_ops_find(m->ops.data[i]->type)->flags & FL_OPF_OPTIMIZE));
        const FlSlot *xs = fl_ir_op_input(m->ops.data[at], "X"), *os = fl_ir_op_output(m->ops.data[at], "Out");
        CU_ASSERT_EQUAL_FATAL(xs->nargs, (size_t)count_ops(l, "adam"));
        size_t k = 0;
        for (size_t i = at + 1; i < m->ops.len; i++) { /* X = Out = the optimizers' Grad, in their order */
            if (strcmp(m->ops.data[i]->type, "adam") != 0) continue;
            CHECK_STR(xs->args[k], fl_ir_op_input1(m->ops.data[i], "Grad"));
            CHECK_STR(os->args[k], xs->args[k]);
            k++;
        }
        CU_ASSERT_EQUAL(b0(r->startup)->ops.len, b0(b->startup)->ops.len);
    }
    fl_ir_plan_free(p);
    fl_ir_bundle_free(b);
}

/* The index of the op of startup block 0 that writes name, or -1. */
static int writer(const FlProgram *p, const char *name) {
    const FlBlock *b = b0(p);
    for (size_t i = 0; i < b->ops.len; i++)
        if (op_writes(b->ops.data[i], name)) return (int)i;
    return -1;
}

static void same_attrs(const FlOpDesc *a, const FlOpDesc *b) {
    CU_ASSERT_STRING_EQUAL(a->type, b->type);
    CU_ASSERT_EQUAL_FATAL(a->attrs.len, b->attrs.len);
    FlBuf x = {0}, y = {0};
    FlProgram *pa = fl_ir_program_new(), *pb = fl_ir_program_new();
    FL_VEC_PUSH(&fl_ir_block(pa, 0)->ops, fl_ir_op_clone(a));
    FL_VEC_PUSH(&fl_ir_block(pb, 0)->ops, fl_ir_op_clone(b));
    fl_ir_show_program(pa, "", NULL, &x);
    fl_ir_show_program(pb, "", NULL, &y);
    CHECK_STR(fl_buf_str(&x), fl_buf_str(&y));
    fl_buf_free(&x);
    fl_buf_free(&y);
    fl_ir_program_free(pa);
    fl_ir_program_free(pb);
}

/* op makes rows [row0, row0 + rows) of what the local op lo makes whole: the same type and
 * attributes but for shape[0] = rows and shard_offset = row0 * (elements per row). */
static void made_rows(const FlOpDesc *op, const FlOpDesc *lo, int64_t row0, int64_t rows) {
    FlOpDesc *want = fl_ir_op_clone(lo);
    const FlAttr *sh = fl_ir_op_attr(lo, "shape");
    CU_ASSERT_FATAL(sh && sh->n >= 1);
    int64_t shape[FL_IR_MAX_DIMS], per = 1;
    for (size_t d = 0; d < sh->n; d++) shape[d] = sh->ints[d];
    for (size_t d = 1; d < sh->n; d++) per *= sh->ints[d];
    shape[0] = rows;
    fl_ir_op_set_ints(want, "shape", shape, sh->n);
    fl_ir_op_set_int(want, "shard_offset", row0 * per);
    fl_ir_slot_set_arg(&want->outs.data[0], 0, fl_ir_op_output1(op, "Out"));
    same_attrs(op, want);
    fl_ir_op_free(want);
}

static void test_pserver_startup(void) {
    FlBundle *b = compile(DIGITS);
    FlPlan *p = transpile(b, 3, 2, FL_TRANSPILE_SYNC, 64, FL_TRANSPILE_ROUND_ROBIN);
    const FlProgram *ls = b->startup;
    for (int64_t s = 0; s < 3; s++) {
        const FlProgram *st = role(p, "pserver", s)->startup;
        const FlProgram *m = role(p, "pserver", s)->main;
        /* pserver s holds block s of fc_0.w_0 (rows 22, 21, 21) */
        char blk[64];
        snprintf(blk, sizeof blk, "fc_0.w_0.block%lld", (long long)s);
        /* made directly: the local init op (type, seed, range) with the block's shape and
         * its first element's offset; the whole var is declared (a temporary), never made */
        static const int64_t row0[3] = {0, 22, 43}, rows[3] = {22, 21, 21};
        CU_ASSERT_EQUAL(writer(st, "fc_0.w_0"), -1);
        CU_ASSERT(!var(st, "fc_0.w_0")->persistable);
        int w = writer(st, blk);
        CU_ASSERT_FATAL(w >= 0);
        made_rows(b0(st)->ops.data[w], b0(ls)->ops.data[writer(ls, "fc_0.w_0")], row0[s], rows[s]);
        CU_ASSERT_EQUAL(fl_ir_op_get_int(b0(st)->ops.data[w], "seed", 0), 1);
        CU_ASSERT(var(st, blk)->persistable);
        CU_ASSERT_EQUAL(var(st, blk)->shape[0], var(m, blk)->shape[0]);
        /* moments: fill_constant of the block's shape, made directly too */
        snprintf(blk, sizeof blk, "fc_0.w_0_moment1_0.block%lld", (long long)s);
        CU_ASSERT_EQUAL(writer(st, "fc_0.w_0_moment1_0"), -1);
        w = writer(st, blk);
        CU_ASSERT_FATAL(w >= 0);
        made_rows(b0(st)->ops.data[w], b0(ls)->ops.data[writer(ls, "fc_0.w_0_moment1_0")], row0[s],
                  rows[s]);
        /* beta pow: copied whole per block */
        snprintf(blk, sizeof blk, "fc_0.w_0_beta1_pow_acc_0.block%lld", (long long)s);
        const FlOpDesc *as = b0(st)->ops.data[writer(st, blk)];
        CU_ASSERT_STRING_EQUAL(as->type, "assign");
        CU_ASSERT_STRING_EQUAL(fl_ir_op_input1(as, "X"), "fc_0.w_0_beta1_pow_acc_0");
        /* the learning rate, whole, under its own name */
        w = writer(st, "learning_rate_0");
        CU_ASSERT_FATAL(w >= 0);
        same_attrs(b0(st)->ops.data[w], b0(ls)->ops.data[writer(ls, "learning_rate_0")]);
        CU_ASSERT(var(st, "learning_rate_0")->persistable);
        /* every persistable var of the server's main program is written by its startup */
        for (size_t i = 0; i < b0(m)->vars.len; i++)
            if (b0(m)->vars.data[i]->persistable)
                CU_ASSERT(writer(st, b0(m)->vars.data[i]->name) >= 0);
    }
    /* every random init op the servers run carries the local seed and range: the local op
     * itself (a whole var), or its rows of a block ("W.blockK" of the local W) */
    for (int64_t s = 0; s < 3; s++) {
        const FlBlock *st = b0(role(p, "pserver", s)->startup);
        for (size_t i = 0; i < st->ops.len; i++) {
            const FlOpDesc *op = st->ops.data[i];
            if (strcmp(op->type, "uniform_random") != 0) continue;
            const char *out = fl_ir_op_output1(op, "Out");
            int64_t k;
            size_t base = fl_rule_block_base_len(out, &k);
            if (!base) {
                same_attrs(op, b0(ls)->ops.data[writer(ls, out)]);
                continue;
            }
            char whole[64];
            snprintf(whole, sizeof whole, "%.*s", (int)base, out);
            const FlOpDesc *lo = b0(ls)->ops.data[writer(ls, whole)];
            const FlAttr *sh = fl_ir_op_attr(op, "shape");
            int64_t per = 1;
            for (size_t d = 1; d < sh->n; d++) per *= sh->ints[d];
            made_rows(op, lo, fl_ir_op_get_int(op, "shard_offset", -1) / per, sh->ints[0]);
        }
    }
    fl_ir_plan_free(p);
    fl_ir_bundle_free(b);
}

/* A random op with seed 0 draws its seed from its position: the servers keep it in place. */
static void test_seed0_in_place(void) {
    FlBundle *b = compile(DIGITS);
    int k = writer(b->startup, "fc_1.w_0");
    CU_ASSERT_FATAL(k > 0);
    fl_ir_op_set_int(fl_ir_block(b->startup, 0)->ops.data[k], "seed", 0);
    FlPlan *p = transpile(b, 2, 1, FL_TRANSPILE_SYNC, 64, FL_TRANSPILE_ROUND_ROBIN);
    for (int64_t s = 0; s < 2; s++) {
        const FlProgram *st = role(p, "pserver", s)->startup;
        CU_ASSERT_EQUAL(writer(st, "fc_1.w_0"), k);
        for (int i = 0; i < k; i++)
            CU_ASSERT_STRING_EQUAL(b0(st)->ops.data[i]->type, b0(b->startup)->ops.data[i]->type);
    }
    fl_ir_plan_free(p);
    fl_ir_bundle_free(b);
}

static const char *lr_program =
    "import fluid\n"
    "from fluid import layers, optimizer\n"
    "x = layers.data(name=\"x\", shape=[13], dtype=\"float32\")\n"
    "y = layers.data(name=\"y\", shape=[1], dtype=\"float32\")\n"
    "pred = layers.fc(x, size=1)\n"
    "loss = layers.mean(layers.square_error_cost(pred, y))\n"
    "base = layers.fill_constant(shape=[1], value=0.1, dtype=\"float32\")\n"
    "lr = layers.scale(base, scale=0.5)\n"
    "optimizer.SGD(learning_rate=lr).minimize(loss)\n";

static void test_lr_block(void) {
    FlBundle *b = compile_text("tests/compiler/lr_decay.fl", lr_program);
    FlPlan *p = transpile(b, 2, 2, FL_TRANSPILE_SYNC, 0, FL_TRANSPILE_ROUND_ROBIN);
    const FlBlock *t = b0(role(p, "trainer", 0)->main);
    CU_ASSERT_EQUAL(count_ops(t, "fill_constant"), 1); /* loss@GRAD only */
    CU_ASSERT_EQUAL(count_ops(t, "scale"), 0);
    CU_ASSERT_EQUAL(count_ops(t, "sgd"), 0);
    /* the learning-rate ops stood before the backward ops: each send still follows its
     * gradient's writer, and the barriers and recv ops stand where sgd stood */
    int nsplit;
    CU_ASSERT_EQUAL(check_send_places(t, &nsplit), 2);
    CU_ASSERT_EQUAL(nsplit, 0);
    CU_ASSERT_STRING_EQUAL(t->ops.data[t->ops.len - 5]->type, "send");
    CU_ASSERT_STRING_EQUAL(t->ops.data[t->ops.len - 4]->type, "send_barrier");
    for (int64_t s = 0; s < 2; s++) {
        const FlProgram *m = role(p, "pserver", s)->main;
        const FlOpDesc *ls = b0(m)->ops.data[0];
        int64_t lrb = fl_ir_op_get_int(ls, "lr_block", -1);
        CU_ASSERT_FATAL(lrb > 0);
        const FlBlock *lb = fl_ir_block(m, (int)lrb);
        CU_ASSERT_EQUAL(lb->parent, 0);
        CU_ASSERT_EQUAL_FATAL(lb->ops.len, 2);
        CU_ASSERT_STRING_EQUAL(lb->ops.data[0]->type, "fill_constant");
        CU_ASSERT_STRING_EQUAL(lb->ops.data[1]->type, "scale");
        const FlBlock *ob = fl_ir_block(m, (int)lrb + 1);
        CU_ASSERT_STRING_EQUAL(fl_ir_op_input1(ob->ops.data[2], "LearningRate"),
                               fl_ir_op_output1(lb->ops.data[1], "Out"));
    }
    fl_ir_plan_free(p);
    fl_ir_bundle_free(b);
}

static void test_round_trip(void) {
    FlBundle *b = compile(DIGITS);
    FlPlan *p = transpile(b, 2, 2, FL_TRANSPILE_ASYNC, 64, FL_TRANSPILE_HASH);
    FlPlan *q = round_trip(p);
    size_t n1, n2;
    uint8_t *e1 = fl_ir_encode_plan(p, &n1), *e2 = fl_ir_encode_plan(q, &n2);
    CU_ASSERT(n1 == n2 && memcmp(e1, e2, n1) == 0);
    free(e1);
    free(e2);
    FlErr e;
    CU_ASSERT_EQUAL(fl_ir_validate_plan(q, &e), FL_OK);
    fl_ir_plan_free(q);
    fl_ir_plan_free(p);
    fl_ir_bundle_free(b);
}

/* ---- errors ---- */

static void test_errors(void) {
    FlBundle *b = compile(FIT);
    CHECK_STR(err_of(b, 0, 1, 0, 0, 0), "the number of pservers must be between 1 and 4096, found 0");
    CHECK_STR(err_of(b, 1, 0, 0, 0, 0), "the number of trainers must be between 1 and 4096, found 0");
    CHECK_STR(err_of(b, 1, 1, 0, -5, 0),
              "the minimum block size must be at least 1 element, found -5");
    CHECK_STR(err_of(b, 1, 1, 7, 0, 0), "unknown transpile mode 7 (expected sync, async or allreduce)");
    CHECK_STR(err_of(b, 2, 1, FL_TRANSPILE_ALLREDUCE, 0, 0),
              "allreduce jobs have no pservers (found 2): the trainers sum their gradients themselves");
    CHECK_STR(err_of(b, 1, 1, 0, 0, 9), "unknown dispatch 9 (expected round_robin or hash)");
    FlTranspileMode m;
    FlTranspileDispatch d;
    FlErr e;
    CU_ASSERT_EQUAL(fl_transpile_parse_mode("ring", &m, &e), FL_ERROR);
    CHECK_STR(e.msg, "unknown mode 'ring' (expected sync, async or allreduce)");
    CU_ASSERT_EQUAL(fl_transpile_parse_mode("allreduce", &m, &e), FL_OK);
    CU_ASSERT_EQUAL(m, FL_TRANSPILE_ALLREDUCE);
    CU_ASSERT_EQUAL(fl_transpile_parse_dispatch("random", &d, &e), FL_ERROR);
    CHECK_STR(e.msg, "unknown dispatch 'random' (expected round_robin or hash)");
    CU_ASSERT_EQUAL(fl_transpile_parse_mode("async", &m, &e), FL_OK);
    CU_ASSERT_EQUAL(m, FL_TRANSPILE_ASYNC);
    CU_ASSERT_EQUAL(fl_transpile_parse_dispatch("hash", &d, &e), FL_OK);
    CU_ASSERT_EQUAL(d, FL_TRANSPILE_HASH);
    fl_ir_bundle_free(b);

    /* nothing to serve */
    b = compile_text("tests/compiler/no_opt.fl",
                     "import fluid\nfrom fluid import layers\n"
                     "x = layers.data(name=\"x\", shape=[13], dtype=\"float32\")\n"
                     "pred = layers.fc(x, size=1)\n");
    CHECK_STR(err_of(b, 2, 2, 0, 0, 0),
              "the program has no optimizer ops, so the pservers would have nothing to update "
              "(call an optimizer's minimize(loss))");
    fl_ir_bundle_free(b);

    /* hand-written distributed programs are refused */
    b = compile("examples/seed_worker.fl");
    CHECK_STR(err_of(b, 2, 2, 0, 0, 0),
              "examples/seed_worker.fl:11:5: the program already has distributed ops ('send'); "
              "transpile takes a single-machine program (a hand-written distributed program "
              "runs as it is under mpirun)");
    fl_ir_bundle_free(b);

    /* a parameter updated twice */
    b = compile(FIT);
    FlBlock *mb = fl_ir_block(b->main, 0);
    FlOpDesc *again = fl_ir_op_clone(mb->ops.data[mb->ops.len - 1]);
    FL_VEC_PUSH(&mb->ops, again);
    CHECK_STR(err_of(b, 2, 1, 0, 0, 0),
              "examples/fit_a_line.fl:12:1: the parameter 'fc_0.b_0' is updated by two "
              "optimizer ops ('sgd' and 'sgd')");
    fl_ir_bundle_free(b);

    /* a var name the transpiler needs is taken */
    b = compile(FIT);
    FlVarDesc *v = fl_ir_var_add(fl_ir_block(b->main, 0), "fc_0.w_0.block1");
    fl_ir_var_set_shape(v, 1, (int64_t[]){1});
    CHECK_STR(err_of(b, 2, 1, 0, 1, 0),
              "the program already has a var named 'fc_0.w_0.block1', a name the transpiler "
              "needs");
    fl_ir_bundle_free(b);
}

/* ---- the command line ---- */

/* Runs flc with args (a shell fragment); returns the exit code, *err the stderr text. */
static int run_flc(const char *args, char **err) {
    char *ep = tmp_path("stderr");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>'%s'", flc_path, args, ep);
    int st = system(cmd);
    FlErr e;
    size_t len;
    *err = fl_read_file(ep, &len, &e);
    unlink(ep);
    free(ep);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_cli(void) {
    if (!flc_path) {
        fprintf(stderr, "(no flc path given: skipped)\n");
        return;
    }
    char *err, *out = tmp_path("cli.plan");
    char args[1024];
    struct {
        const char *args, *msg;
        int rc;
    } cases[] = {
        {"transpile " FIT " --trainers 2 -o x.plan", "flc: transpile needs --pservers P\n", 2},
        {"transpile " FIT " --pservers 2 -o x.plan", "flc: transpile needs --trainers T\n", 2},
        {"transpile " FIT " -o x.plan", "flc: transpile needs --pservers P and --trainers T\n", 2},
        {"transpile " FIT " --pservers 2 --trainers 2", "flc: transpile needs -o OUT.plan\n", 2},
        {"transpile " FIT " --pservers 0 --trainers 2 -o x.plan",
         "flc: --pservers needs a whole number from 1 to 4096, found '0'\n", 2},
        {"transpile " FIT " --pservers 2 --trainers two -o x.plan",
         "flc: --trainers needs a whole number from 1 to 4096, found 'two'\n", 2},
        {"transpile " FIT " --pservers 2 --trainers 2 --mode fast -o x.plan",
         "flc: unknown mode 'fast' (expected sync, async or allreduce)\n", 2},
        {"transpile " FIT " --mode allreduce --pservers 1 --trainers 2 -o x.plan",
         "flc: --mode allreduce has no pservers: --pservers does not apply\n", 2},
        {"transpile " FIT " --pservers 2 --trainers 2 --dispatch random -o x.plan",
         "flc: unknown dispatch 'random' (expected round_robin or hash)\n", 2},
        {"transpile " FIT " --pservers 2 --trainers 2 --min-block-size 0 -o x.plan",
         "flc: --min-block-size needs a whole number of at least 1, found '0'\n", 2},
        {"transpile " FIT " --pservers", "flc: --pservers needs a value\n", 2},
        {"show " FIT " --pservers 2",
         "flc: --pservers, --trainers, --mode, --min-block-size and --dispatch are only for "
         "transpile (and all but --mode for simulate), not show\n", 2},
        {"transpile examples/seed_worker.fl --pservers 2 --trainers 2 -o x.plan",
         "flc: error: examples/seed_worker.fl:11:5: the program already has distributed ops "
         "('send'); transpile takes a single-machine program (a hand-written distributed "
         "program runs as it is under mpirun)\n", 1},
    };
    for (size_t i = 0; i < FL_ARRAY_LEN(cases); i++) {
        int rc = run_flc(cases[i].args, &err);
        if (rc != cases[i].rc) fprintf(stderr, "flc %s: exit %d\n", cases[i].args, rc);
        CU_ASSERT_EQUAL(rc, cases[i].rc);
        const char *e = err ? err : "";
        /* usage errors add a hint line */
        CU_ASSERT(!strncmp(e, cases[i].msg, strlen(cases[i].msg)));
        if (strncmp(e, cases[i].msg, strlen(cases[i].msg)) != 0)
            fprintf(stderr, "flc %s:\n%s--- expected:\n%s", cases[i].args, e, cases[i].msg);
        free(err);
    }
    /* success: the plan is written and reads back; show prints it */
    snprintf(args, sizeof args,
             "transpile " FIT " --pservers 2 --trainers 2 --mode async --dispatch hash "
             "--min-block-size 4 -o '%s'", out);
    CU_ASSERT_EQUAL(run_flc(args, &err), 0);
    free(err);
    FlBundle *bundle = NULL;
    FlPlan *plan = NULL;
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_ir_read(out, &bundle, &plan, &e), FL_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
    CHECK_STR(plan->mode, "async");
    CU_ASSERT_EQUAL(plan->roles.len, 4);
    fl_ir_plan_free(plan);
    snprintf(args, sizeof args, "transpile '%s' --pservers 1 --trainers 1 -o '%s'", out, out);
    CU_ASSERT_EQUAL(run_flc(args, &err), 2); /* a plan is not transpiled again */
    CU_ASSERT(err && strstr(err, "transpile takes a .fl or .flp file, not a plan"));
    free(err);
    unlink(out);
    free(out);
}

/* An is_sparse table (its gradient a SelectedRows): cut into two blocks, the trainers split the
 * gradient by the blocks' rows (split_selected_rows) and send each piece as rows; the servers
 * declare the gradient blocks and the trainers' copies SelectedRows, merge them (sum), scale,
 * and run the sparse sgd. */
#define SPARSE_HEAD "import fluid\nfrom fluid import layers, optimizer\n" \
                    "ids = layers.data(name='ids', shape=[2], dtype='int64')\n" \
                    "y = layers.data(name='y', shape=[1])\n"
static void test_sparse_plans(void) {
    FlBundle *b = compile_text("tests/compiler/sparse_embedding.fl",
        SPARSE_HEAD "e = layers.embedding(input=ids, size=[20, 4], is_sparse=True, "
        "param_attr=fluid.ParamAttr(name='table'))\n"
        "loss = layers.mean(layers.square_error_cost(layers.fc(layers.reshape(e, shape=[-1, 8]), size=1), y))\n"
        "optimizer.SGD(learning_rate=0.1).minimize(loss)\n");
    check_golden("sparse_embedding", b, 2, 2, 16, FL_TRANSPILE_SYNC);
    FlPlan *p = transpile(b, 2, 2, FL_TRANSPILE_ASYNC, 16, FL_TRANSPILE_ROUND_ROBIN);
    const FlBundle *ps = role(p, "pserver", 1);
    const FlVarDesc *g = ps ? fl_ir_var_find(fl_ir_block(ps->main, 0), "table@GRAD.block1") : NULL;
    CU_ASSERT(g && g->kind == FL_VAR_SELECTED_ROWS && g->shape[0] == 10);
    fl_ir_plan_free(p);
    fl_ir_bundle_free(b);
}

/* A distributed table (is_distributed=True): sharded over every server whatever the block size,
 * the trainers look rows up (distributed_lookup_table) and send the rows' gradient
 * (distributed_lookup_grad_rows, split by block) and receive no block; neither their main nor
 * their startup declares the table or its moments; each server makes only its rows. Refusals:
 * allreduce, another reader of the table, a position-seeded initialiser. */
static bool declares(const FlProgram *p, const char *name) { return fl_ir_var_find(fl_ir_block(p, 0), name) != NULL; }

static void test_dist_table_plans(void) {
#define DIST_TABLE(extra, opt)                                                                                \
    SPARSE_HEAD "fluid.default_startup_program().random_seed = 1\n"                                         \
                "e = layers.embedding(input=ids, size=[20, 4], is_sparse=True, is_distributed=True, "       \
                "param_attr=fluid.ParamAttr(name='table'))\n" extra                                        \
                "loss = layers.mean(layers.square_error_cost(layers.fc(layers.reshape(e, shape=[-1, 8]), size=1), y))\n" \
                "optimizer." opt ".minimize(loss)\n"
    FlBundle *b = compile_text("tests/compiler/dist_table.fl", DIST_TABLE("", "SGD(learning_rate=0.1)"));
    check_golden("dist_table", b, 2, 2, 16, FL_TRANSPILE_SYNC);
    fl_ir_bundle_free(b);
    b = compile_text("tests/compiler/dist_table.fl", DIST_TABLE("", "Adam(learning_rate=0.1, lazy_mode=True)"));
    FlPlan *p = transpile(b, 3, 2, FL_TRANSPILE_SYNC, 1000000, FL_TRANSPILE_ROUND_ROBIN); /* cut anyway */
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (int64_t t = 0; t < 2; t++) {
        const FlBundle *tr = role(p, "trainer", t);
        CU_ASSERT(!declares(tr->main, "table") && !declares(tr->startup, "table"));
        CU_ASSERT(!declares(tr->main, "table_moment1_0") && !declares(tr->startup, "table_moment1_0"));
        const FlBlock *b0 = fl_ir_block(tr->main, 0);
        int lookups = 0;
        for (size_t i = 0; i < b0->ops.len; i++) {
            const FlOpDesc *op = b0->ops.data[i];
            lookups += fl_ops_is(op, FL_OPID_distributed_lookup_table);
            CU_ASSERT(!fl_ops_is(op, FL_OPID_lookup_table) && strcmp(op->type, "lookup_table_grad") != 0);
            const char *out = fl_ops_is(op, FL_OPID_recv) ? fl_ir_op_output1(op, "Out") : NULL;
            CU_ASSERT(!out || strncmp(out, "table", 5) != 0);
        }
        CU_ASSERT_EQUAL(lookups, 1);
    }
    for (int64_t s = 0; s < 3; s++) { /* 20 rows in 3 blocks: 7, 7, 6, each made alone */
        const FlBundle *ps = role(p, "pserver", s);
        char bn[32];
        snprintf(bn, sizeof bn, "table.block%lld", (long long)s);
        const FlVarDesc *v = fl_ir_var_find(fl_ir_block(ps->startup, 0), bn);
        CU_ASSERT(v && v->shape[0] == (s < 2 ? 7 : 6));
        const FlBlock *s0 = fl_ir_block(ps->startup, 0);
        for (size_t i = 0; i < s0->ops.len; i++) {
            const char *o = s0->ops.data[i]->outs.len ? s0->ops.data[i]->outs.data[0].args[0] : "";
            CU_ASSERT(strcmp(o, "table") != 0 && strcmp(o, "table_moment1_0") != 0);
        }
    }
    fl_ir_plan_free(p);
    CHECK_STR(err_of(b, 0, 2, FL_TRANSPILE_ALLREDUCE, 0, 0),
              "tests/compiler/dist_table.fl:6:5: the table 'table' is read with is_distributed=True, which shards it "
              "over the pservers; an allreduce plan has none (use --mode sync or async, or is_distributed=False)");
    fl_ir_bundle_free(b);
    b = compile_text("tests/compiler/dist_table.fl",
                     DIST_TABLE("e = e + layers.embedding(input=ids, size=[20, 4], is_sparse=True, "
                                "param_attr=fluid.ParamAttr(name='table'))\n", "SGD(learning_rate=0.1)"));
    CU_ASSERT(strstr(err_of(b, 2, 1, 0, 0, 0), "the table 'table' is read by lookups with and without "
                     "is_distributed=True") != NULL);
    fl_ir_bundle_free(b);
    /* an initialiser seeded by its position (seed=0: hand-made IR; the stdlib always seeds) */
    b = compile_text("tests/compiler/dist_table.fl", DIST_TABLE("", "SGD(learning_rate=0.1)"));
    FlBlock *sb = fl_ir_block(b->startup, 0);
    for (size_t i = 0; i < sb->ops.len; i++)
        if (fl_ops_is(sb->ops.data[i], FL_OPID_uniform_random) && !strcmp(sb->ops.data[i]->outs.data[0].args[0], "table"))
            fl_ir_op_set_int(sb->ops.data[i], "seed", 0);
    CU_ASSERT(strstr(err_of(b, 2, 1, 0, 0, 0), "the distributed table's var 'table' is initialised by 'uniform_random', "
                     "which cannot make a block of its rows alone") != NULL);
    fl_ir_bundle_free(b);
#undef DIST_TABLE
}

/* The sparse_decay ops of a plan's role whose X is `x` (a prefix when it ends with '*'). */
static int decays_of(const FlProgram *p, const char *x) {
    int n = 0;
    for (size_t bi = 0; bi < p->blocks.len; bi++)
        for (size_t i = 0; i < p->blocks.data[bi]->ops.len; i++) {
            const FlOpDesc *op = p->blocks.data[bi]->ops.data[i];
            const char *in = fl_ops_is(op, FL_OPID_sparse_decay) ? fl_ir_op_input1(op, "X") : NULL;
            size_t len = strlen(x);
            n += in && (x[len - 1] == '*' ? !strncmp(in, x, len - 1) : !strcmp(in, x));
        }
    return n;
}

/* Regularized sparse tables: a distributed table's rows decayed by its servers, each trainer's
 * before the merge (coeff * T), never on a trainer; a table of two lookups (its gradient their
 * merged sum) decayed after the merge on the servers (coeff), and on allreduce trainers after a
 * sum that merges the gathered rows. */
static void test_sparse_decay_plans(void) {
    FlBundle *b = compile_text("tests/compiler/dist_decay.fl",
        SPARSE_HEAD "fluid.default_startup_program().random_seed = 1\n"
        "e = layers.embedding(input=ids, size=[20, 4], is_sparse=True, is_distributed=True, "
        "param_attr=fluid.ParamAttr(name='table'))\n"
        "loss = layers.mean(layers.square_error_cost(layers.fc(layers.reshape(e, shape=[-1, 8]), size=1), y))\n"
        "optimizer.SGD(learning_rate=0.1, regularization=fluid.regularizer.L2Decay(0.01)).minimize(loss)\n");
    FlPlan *p = transpile(b, 2, 2, FL_TRANSPILE_SYNC, 1000000, FL_TRANSPILE_ROUND_ROBIN);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(decays_of(role(p, "trainer", 0)->main, "table@GRAD*"), 0);
    CU_ASSERT_EQUAL(decays_of(role(p, "pserver", 0)->main, "table@GRAD.block0.trainer_*"), 2);
    CU_ASSERT_EQUAL(decays_of(role(p, "pserver", 1)->main, "table@GRAD.block1.trainer_*"), 2);
    fl_ir_plan_free(p);
    fl_ir_bundle_free(b);
    b = compile_text("tests/compiler/shared_decay.fl",
        SPARSE_HEAD "e = layers.embedding(input=ids, size=[20, 4], is_sparse=True, param_attr=fluid.ParamAttr(name='table'))\n"
        "e2 = layers.embedding(input=ids, size=[20, 4], is_sparse=True, param_attr=fluid.ParamAttr(name='table'))\n"
        "loss = layers.mean(layers.square_error_cost(layers.fc(layers.reshape(e + e2, shape=[-1, 8]), size=1), y))\n"
        "optimizer.SGD(learning_rate=0.1, regularization=fluid.regularizer.L2Decay(0.01)).minimize(loss)\n");
    p = transpile(b, 1, 2, FL_TRANSPILE_SYNC, 1000000, FL_TRANSPILE_ROUND_ROBIN);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    const FlProgram *ps = role(p, "pserver", 0)->main;
    CU_ASSERT_EQUAL(decays_of(ps, "table@GRAD.trainer_*"), 0);
    CU_ASSERT_EQUAL(decays_of(ps, "table@GRAD"), 1);
    for (size_t bi = 0; bi < ps->blocks.len; bi++) {
        const FlBlock *ob = ps->blocks.data[bi];
        for (size_t i = 0; i < ob->ops.len; i++)
            if (fl_ops_is(ob->ops.data[i], FL_OPID_sparse_decay))
                CU_ASSERT_DOUBLE_EQUAL(fl_ir_op_get_float(ob->ops.data[i], "coeff", 0), 0.01, 1e-9);
    }
    fl_ir_plan_free(p);
    p = transpile(b, 0, 2, FL_TRANSPILE_ALLREDUCE, 0, FL_TRANSPILE_ROUND_ROBIN);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    const FlBlock *t0 = fl_ir_block(role(p, "trainer", 0)->main, 0);
    size_t ar = SIZE_MAX;
    for (size_t i = 0; i < t0->ops.len && ar == SIZE_MAX; i++)
        if (fl_ops_is(t0->ops.data[i], FL_OPID_allreduce)) ar = i;
    CU_ASSERT_FATAL(ar + 2 < t0->ops.len);
    const FlOpDesc *m = t0->ops.data[ar + 1];
    CU_ASSERT(fl_ops_is(m, FL_OPID_sum) && !strcmp(fl_ir_op_input1(m, "X"), "table@GRAD") &&
              !strcmp(fl_ir_op_output1(m, "Out"), "table@GRAD"));
    CU_ASSERT(fl_ops_is(t0->ops.data[ar + 2], FL_OPID_sparse_decay));
    fl_ir_plan_free(p);
    fl_ir_bundle_free(b);
}

int main(int argc, char **argv) {
    flc_path = argc > 1 ? argv[1] : NULL;
    if (CU_initialize_registry() != CUE_SUCCESS) return 1;
    CU_pSuite s = CU_add_suite("transpile", NULL, NULL);
    CU_add_test(s, "goldens: fit_a_line and digits MLP, P 1-3, T 1-2", test_goldens);
    CU_add_test(s, "goldens: regularizers, clipping, LR schedules, RMSProp/Adagrad state", test_optimizer_goldens);
    CU_add_test(s, "slicing: whole rows, even split, small stays whole", test_slicing);
    CU_add_test(s, "round-robin placement", test_round_robin);
    CU_add_test(s, "hash placement is deterministic", test_hash);
    CU_add_test(s, "trainer op order, rank map", test_trainer_order);
    CU_add_test(s, "gradients of one op: sent in parameter order", test_shared_producer);
    CU_add_test(s, "pserver optimize blocks (sync)", test_pserver_sync);
    CU_add_test(s, "async mode", test_async);
    CU_add_test(s, "allreduce mode", test_allreduce);
    CU_add_test(s, "pserver startup: local init ops, then the cut", test_pserver_startup);
    CU_add_test(s, "seed-0 random ops stay in place", test_seed0_in_place);
    CU_add_test(s, "learning-rate ops in lr_block", test_lr_block);
    CU_add_test(s, "plan file round trip", test_round_trip);
    CU_add_test(s, "errors", test_errors);
    CU_add_test(s, "flc transpile", test_cli);
    CU_add_test(s, "sparse tables: split_selected_rows, SelectedRows on the servers", test_sparse_plans);
    CU_add_test(s, "distributed tables: sharded, looked up, never on a trainer", test_dist_table_plans);
    CU_add_test(s, "regularized sparse tables: distributed, read by two lookups", test_sparse_decay_plans);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}
