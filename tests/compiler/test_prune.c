/* test_prune.c: the inference program (compiler/prune.c): a trained model's program pruned to
 * what its prediction needs from its feeds (the loss, label, gradients and optimizer ops and
 * their vars go; the parameters stay), ops in test mode, ops inside a kept op's sub-block and
 * what they read kept; a target that needs an unfed data var, an unknown feed or target, and no
 * targets are errors. */
#include <CUnit/Basic.h>
#include "tests/cunit.h"
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "compiler/prune.h"
#include "tests/compiler/op_text.h"

static FlVarDesc *V(FlBlock *b, const char *name) {
    FlVarDesc *v = fl_ir_var_find(b, name);
    return v ? v : fl_ir_var_add(b, name);
}

/* An op in block b with "X=a Y=b,c" slots; its vars declared in block d. */
static FlOpDesc *OP(FlBlock *b, FlBlock *d, const char *type, const char *ins, const char *outs) {
    return fl_test_op(b, type, ins, outs, d);
}

/* The op types of block 0, space separated. */
static const char *ops_of(const FlProgram *p) {
    static char buf[512];
    buf[0] = 0;
    const FlBlock *b = fl_ir_block(p, 0);
    for (size_t i = 0; i < b->ops.len; i++) {
        strncat(buf, i ? " " : "", sizeof buf - strlen(buf) - 1);
        strncat(buf, b->ops.data[i]->type, sizeof buf - strlen(buf) - 1);
    }
    return buf;
}

/* fc + dropout + softmax, a cross-entropy loss on a label, its gradients and an SGD step. */
static FlProgram *trained(void) {
    FlProgram *p = fl_ir_program_new();
    FlBlock *g = fl_ir_block(p, 0);
    V(g, "x")->fed = true;
    V(g, "label")->fed = true;
    V(g, "w")->persistable = true;
    V(g, "lr")->persistable = true;
    OP(g, g, "mul", "X=x Y=w", "Out=h");
    FlOpDesc *d = OP(g, g, "dropout", "X=h", "Out=hd Mask=mask");
    fl_ir_op_set_bool(d, "is_test", false);
    OP(g, g, "softmax", "X=hd", "Out=pred");
    OP(g, g, "cross_entropy", "X=pred Label=label", "Y=ce");
    OP(g, g, "mean", "X=ce", "Out=loss");
    OP(g, g, "fill_constant", "", "Out=loss@GRAD");
    OP(g, g, "mean_grad", "X=ce Out@GRAD=loss@GRAD", "X@GRAD=ce@GRAD");
    OP(g, g, "mul_grad", "X=x Y=w Out@GRAD=h@GRAD", "Y@GRAD=w@GRAD");
    OP(g, g, "sgd", "Param=w Grad=w@GRAD LearningRate=lr", "ParamOut=w");
    return p;
}

static void test_prediction(void) {
    FlProgram *p = trained();
    FlErr e = {{0}};
    const char *feeds[] = {"x"}, *targets[] = {"pred"};
    FlProgram *q = fl_prune_for_inference(p, feeds, 1, targets, 1, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT_STRING_EQUAL(ops_of(q), "mul dropout softmax");
    const FlBlock *g = fl_ir_block(q, 0);
    CU_ASSERT_TRUE(fl_ir_op_attr(g->ops.data[1], "is_test")->i == 1);
    /* kept: the feed, the parameter, what the kept ops write; gone: the rest */
    const char *kept[] = {"x", "w", "h", "hd", "mask", "pred"}, *gone[] = {"label", "lr", "ce", "loss", "w@GRAD", "loss@GRAD"};
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) CU_ASSERT_PTR_NOT_NULL(fl_ir_var_find(g, kept[i]));
    for (size_t i = 0; i < sizeof gone / sizeof *gone; i++) CU_ASSERT_PTR_NULL(fl_ir_var_find(g, gone[i]));
    /* the source program is untouched */
    CU_ASSERT_EQUAL(fl_ir_block(p, 0)->ops.len, 9);
    CU_ASSERT_TRUE(fl_ir_op_attr(fl_ir_block(p, 0)->ops.data[1], "is_test")->i == 0);
    fl_ir_program_free(q);
    /* a feed in the middle: what computes it goes */
    const char *mid[] = {"hd"};
    q = fl_prune_for_inference(p, mid, 1, targets, 1, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT_STRING_EQUAL(ops_of(q), "softmax");
    CU_ASSERT_PTR_NULL(fl_ir_var_find(fl_ir_block(q, 0), "w"));
    fl_ir_program_free(q);
    fl_ir_program_free(p);
}

static void test_sub_blocks(void) {
    /* a while whose body reads an outer var and updates an outer one */
    FlProgram *p = fl_ir_program_new();
    FlBlock *g = fl_ir_block(p, 0);
    V(g, "x")->fed = true;
    V(g, "w")->persistable = true;
    OP(g, g, "assign", "X=x", "Out=acc");
    OP(g, g, "less_than", "X=acc Y=x", "Out=cond");
    FlOpDesc *wh = OP(g, g, "while", "X=acc Condition=cond", "Out=acc");
    FlBlock *body = fl_ir_block_new(p, 0);
    fl_ir_op_set_block(wh, "sub_block", body->idx);
    OP(body, g, "elementwise_add", "X=acc Y=w", "Out=acc");
    OP(body, g, "less_than", "X=acc Y=x", "Out=cond");
    OP(g, g, "scale", "X=x", "Out=unused");
    FlErr e = {{0}};
    const char *feeds[] = {"x"}, *targets[] = {"acc"};
    FlProgram *q = fl_prune_for_inference(p, feeds, 1, targets, 1, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT_STRING_EQUAL(ops_of(q), "assign less_than while");
    CU_ASSERT_PTR_NOT_NULL(fl_ir_var_find(fl_ir_block(q, 0), "w"));
    CU_ASSERT_PTR_NULL(fl_ir_var_find(fl_ir_block(q, 0), "unused"));
    CU_ASSERT_EQUAL(q->blocks.len, 2);
    fl_ir_program_free(q);
    fl_ir_program_free(p);
}

static void test_errors(void) {
    FlProgram *p = trained();
    FlErr e = {{0}};
    const char *x[] = {"x"}, *loss[] = {"loss"}, *nope[] = {"nope"};
    CU_ASSERT_PTR_NULL(fl_prune_for_inference(p, x, 1, loss, 1, &e));
    CU_ASSERT_STRING_EQUAL(e.msg, "the targets need 'label', which is neither fed nor computed from the feeds (it is a "
                                  "data var: add it to the feeds)");
    CU_ASSERT_PTR_NULL(fl_prune_for_inference(p, x, 1, nope, 1, &e));
    CU_ASSERT_STRING_EQUAL(e.msg, "target 'nope' is not a var of the program's global block");
    CU_ASSERT_PTR_NULL(fl_prune_for_inference(p, nope, 1, loss, 1, &e));
    CU_ASSERT_STRING_EQUAL(e.msg, "feed 'nope' is not a var of the program's global block");
    CU_ASSERT_PTR_NULL(fl_prune_for_inference(p, x, 1, NULL, 0, &e));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "no targets"));
    fl_ir_program_free(p);
}

int main(void) {
    static const FlTestCase cases[] = {
        {"prediction", test_prediction},
        {"sub-blocks", test_sub_blocks},
        {"errors", test_errors},
    };
    return fl_test_run("prune", NULL, NULL, cases, sizeof cases / sizeof *cases);
}
