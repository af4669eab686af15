/* test_verify.c: static checks (compiler/verify.c): a clean program passes; use before
 * definition, undeclared vars, unknown ops, bad sub-block references and goroutine races are
 * each reported once with the op's loc.
 */
#include <CUnit/Basic.h>
#include "tests/cunit.h"
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/verify.h"
#include "tests/compiler/op_text.h"


static FlProgram *P, *S;
static int line;

static void begin(void) {
    P = fl_ir_program_new();
    S = fl_ir_program_new();
    line = 0;
}

static void end(void) {
    fl_ir_program_free(P);
    fl_ir_program_free(S);
}

static FlVarDesc *V(FlBlock *b, const char *name) {
    FlVarDesc *v = fl_ir_var_find(b, name);
    return v ? v : fl_ir_var_add(b, name);
}

/* An op in block b with "X=a Y=b,c" slots; loc line = ++line. Vars are not declared. */
static FlOpDesc *OP(FlBlock *b, const char *type, const char *ins, const char *outs) {
    FlOpDesc *op = fl_test_op(b, type, ins, outs, NULL);
    op->loc = (FlLoc){0, ++line, 1, 1};
    return op;
}

/* Runs the verifier; the messages joined by '\n' (with "line N: " prefixes). */
static const char *run(void) {
    static char buf[4096];
    FlVerifyIssues vi = {0};
    int n = fl_verify_program(P, S, &vi);
    CU_ASSERT_EQUAL(n, (int)vi.items.len);
    buf[0] = 0;
    for (size_t i = 0; i < vi.items.len; i++) {
        char one[600];
        snprintf(one, sizeof one, "%sline %d: %s", i ? "\n" : "", vi.items.data[i].loc.line,
                 vi.items.data[i].msg);
        strncat(buf, one, sizeof buf - strlen(buf) - 1);
    }
    fl_verify_issues_fini(&vi);
    return buf;
}

/* startup initialises W and lr; main: x (data) -> mul -> sgd */
static void build_clean(void) {
    FlBlock *s0 = fl_ir_block(S, 0), *b0 = fl_ir_block(P, 0);
    V(s0, "W")->persistable = true;
    FlOpDesc *init = OP(s0, "uniform_random", "", "Out=W");
    int64_t shape[] = {13, 1};
    fl_ir_op_set_ints(init, "shape", shape, 2);
    V(b0, "x")->stop_gradient = true;
    V(b0, "W")->persistable = true;
    V(b0, "h");
    V(b0, "loss");
    V(b0, "lr")->persistable = true;
    OP(b0, "mul", "X=x Y=W", "Out=h");
    OP(b0, "mean", "X=h", "Out=loss");
}

static void test_clean(void) {
    begin();
    build_clean();
    CHECK_STR(run(), "");
    end();
}

static void test_use_before_def(void) {
    begin();
    build_clean();
    FlBlock *b0 = fl_ir_block(P, 0);
    V(b0, "t");
    V(b0, "u");
    OP(b0, "relu", "X=t", "Out=u"); /* line 4: t is written only later */
    OP(b0, "relu", "X=h", "Out=t");
    OP(b0, "relu", "X=ghost", "Out=u"); /* line 6 */
    OP(b0, "relu", "X=t", "Out=u");     /* fine now */
    CHECK_STR(run(), "line 4: relu: var 't' (input X) is used before it is written\n"
                     "line 6: relu: var 'ghost' (input X) is not declared");
    end();
    /* without the startup program W is still persistable (initialised by startup) but a var
     * only startup writes and main does not declare persistable is not */
    begin();
    build_clean();
    FlBlock *s0 = fl_ir_block(S, 0), *b0b = fl_ir_block(P, 0);
    OP(s0, "fill_constant", "", "Out=c");
    V(b0b, "c");
    V(b0b, "d");
    OP(b0b, "relu", "X=c", "Out=d");
    CHECK_STR(run(), "");
    fl_ir_program_free(S);
    S = NULL;
    CHECK_STR(run(), "line 5: relu: var 'c' (input X) is used before it is written");
    fl_ir_program_free(P);
}

static void test_ops_checked(void) {
    begin();
    build_clean();
    FlBlock *b0 = fl_ir_block(P, 0);
    OP(b0, "frobnicate", "X=h", "Out=h");
    OP(b0, "mul", "X=h", "Out=h");
    CHECK_STR(run(), "line 4: unknown op 'frobnicate'\nline 5: mul: missing input 'Y'");
    end();
}

static void test_blocks(void) {
    begin();
    build_clean();
    FlBlock *b0 = fl_ir_block(P, 0);
    FlBlock *b1 = fl_ir_block_new(P, 0);
    FlBlock *b2 = fl_ir_block_new(P, 1);
    fl_ir_block_new(P, 0); /* block 3: nobody's */
    V(b0, "cond")->stop_gradient = true;
    OP(b1, "relu", "X=h", "Out=h");
    FlOpDesc *w = OP(b0, "while", "X=h Condition=cond", "Out=h"); /* line 5 */
    fl_ir_op_set_block(w, "sub_block", 1);
    FlOpDesc *g = OP(b0, "go", "", ""); /* line 6: block 2's parent is 1 */
    fl_ir_op_set_block(g, "sub_block", 2);
    FlOpDesc *g2 = OP(b0, "go", "", ""); /* line 7: block 1 again */
    fl_ir_op_set_block(g2, "sub_block", 1);
    FlOpDesc *g3 = OP(b0, "go", "", ""); /* line 8: no such block */
    fl_ir_op_set_block(g3, "sub_block", 9);
    (void)b2;
    CHECK_STR(run(),
              "line 6: go: attribute 'sub_block' names block 2, whose parent is block 1, not the "
              "op's block 0\n"
              "line 7: go: block 1 is already the sub-block of another op ('while')\n"
              "line 8: go: attribute 'sub_block' names block 9, which is not a sub-block (the "
              "program has blocks 0..3)\n"
              "line 0: block 2 is not the sub-block of any op\n"
              "line 0: block 3 is not the sub-block of any op");
    end();
}

static void test_sub_block_defs(void) {
    begin();
    build_clean();
    FlBlock *b0 = fl_ir_block(P, 0);
    FlBlock *b1 = fl_ir_block_new(P, 0);
    V(b0, "n")->stop_gradient = true;
    V(b1, "i");
    V(b0, "hi");
    V(b0, "later");
    OP(b1, "elementwise_add", "X=h Y=i", "Out=hi");    /* i: parallel_for's index_var */
    OP(b1, "relu", "X=later", "Out=hi");               /* line 5: written after the op */
    FlOpDesc *pf = OP(b0, "parallel_for", "X=h", ""); /* line 6 */
    fl_ir_op_set_block(pf, "sub_block", 1);
    fl_ir_op_set_int(pf, "n", 4);
    fl_ir_op_set_string(pf, "index_var", "i");
    OP(b0, "relu", "X=h", "Out=later");
    OP(b0, "relu", "X=hi", "Out=later"); /* hi was written inside the block */
    CHECK_STR(run(), "line 5: relu: var 'later' (input X) is used before it is written");
    end();
}

/* main: two goroutines writing the shared var s; variants with channel ops */
static void test_races(void) {
    begin();
    build_clean();
    FlBlock *b0 = fl_ir_block(P, 0);
    V(b0, "s");
    FlBlock *g1 = fl_ir_block_new(P, 0), *g2 = fl_ir_block_new(P, 0);
    V(g1, "local");
    OP(g1, "relu", "X=h", "Out=s");
    OP(g1, "relu", "X=h", "Out=local"); /* declared inside: the goroutine's own */
    V(g2, "local");
    OP(g2, "sigmoid", "X=h", "Out=s");
    OP(g2, "sigmoid", "X=h", "Out=local");
    FlOpDesc *a = OP(b0, "go", "X=h", ""); /* line 8 */
    fl_ir_op_set_block(a, "sub_block", 1);
    FlOpDesc *b = OP(b0, "go", "X=h", ""); /* line 9 */
    fl_ir_op_set_block(b, "sub_block", 2);
    CHECK_STR(run(), "line 9: var 's' is written by two goroutines (started at lines 8 and 9) "
                     "with no channel operation between them");
    end();

    /* the parent writes s after starting the goroutine */
    begin();
    build_clean();
    b0 = fl_ir_block(P, 0);
    V(b0, "s");
    g1 = fl_ir_block_new(P, 0);
    OP(g1, "relu", "X=h", "Out=s");
    a = OP(b0, "go", "", ""); /* line 5 */
    fl_ir_op_set_block(a, "sub_block", 1);
    OP(b0, "assign", "X=h", "Out=s"); /* line 6 */
    CHECK_STR(run(), "line 6: var 's' is written by the goroutine started at line 5 and, after it "
                     "starts, by 'assign' at line 6, with no channel operation between them");
    end();

    /* a channel receive in the parent between them: no report */
    begin();
    build_clean();
    b0 = fl_ir_block(P, 0);
    V(b0, "s");
    V(b0, "ch")->kind = FL_VAR_CHANNEL;
    V(b0, "v");
    OP(b0, "channel_create", "", "Out=ch");
    g1 = fl_ir_block_new(P, 0);
    OP(g1, "relu", "X=h", "Out=s");
    OP(g1, "channel_send", "Channel=ch X=s", "");
    a = OP(b0, "go", "", "");
    fl_ir_op_set_block(a, "sub_block", 1);
    OP(b0, "channel_recv", "Channel=ch", "Out=v");
    OP(b0, "assign", "X=h", "Out=s");
    CHECK_STR(run(), "");
    end();

    /* two goroutines that both use channels may synchronise: no report */
    begin();
    build_clean();
    b0 = fl_ir_block(P, 0);
    V(b0, "s");
    V(b0, "ch")->kind = FL_VAR_CHANNEL;
    OP(b0, "channel_create", "", "Out=ch");
    g1 = fl_ir_block_new(P, 0);
    g2 = fl_ir_block_new(P, 0);
    OP(g1, "relu", "X=h", "Out=s");
    OP(g1, "channel_send", "Channel=ch X=s", "");
    OP(g2, "channel_recv", "Channel=ch", "Out=s");
    a = OP(b0, "go", "", "");
    fl_ir_op_set_block(a, "sub_block", 1);
    b = OP(b0, "go", "", "");
    fl_ir_op_set_block(b, "sub_block", 2);
    CHECK_STR(run(), "");
    end();
}

/* A driver's reader_open names a reader of the bundle (Bundle.readers). */
static void test_driver_readers(void) {
    FlBundle *b = fl_ir_bundle_new();
    b->driver = fl_ir_program_new();
    FlBlock *d = fl_ir_block(b->driver, 0);
    V(d, "r")->kind = FL_VAR_RAW;
    line = 0;
    FlOpDesc *op = OP(d, "reader_open", "", "Out=r");
    fl_ir_op_set_int(op, "reader", 0);
    FlVerifyIssues vi = {0};
    CU_ASSERT_EQUAL(fl_verify_driver(b, &vi), 1);
    CU_ASSERT_EQUAL_FATAL(vi.items.len, 1);
    CHECK_STR(vi.items.data[0].msg, "reader_open: reader 0 is not a reader of the bundle (it has 0)");
    CU_ASSERT_EQUAL(vi.items.data[0].loc.line, 1);
    fl_verify_issues_fini(&vi);
    FlReaderDesc *r = fl_xcalloc(1, sizeof *r);
    r->kind = fl_xstrdup("dataset");
    r->dataset = fl_xstrdup("mnist");
    r->part = fl_xstrdup("train");
    FL_VEC_PUSH(&b->readers, r);
    CU_ASSERT_EQUAL(fl_verify_driver(b, &vi), 0);
    fl_verify_issues_fini(&vi);
    fl_ir_bundle_free(b);
}

int main(void) {
    static const FlTestCase cases[] = {
        {"driver readers", test_driver_readers},
        {"a clean program", test_clean},
        {"use before definition", test_use_before_def},
        {"ops against the table", test_ops_checked},
        {"sub-block references", test_blocks},
        {"defs inside sub-blocks", test_sub_block_defs},
        {"goroutine races", test_races},
    };
    return fl_test_run("verify", NULL, NULL, cases, sizeof cases / sizeof cases[0]);
}
