/* test_backward.c: append_backward (compiler/backward.c): the gradient op sequence of an MLP,
 * summed gradients of a var used twice, zero gradients of unused outputs, parameter subsets,
 * the user's errors with their locs, gradient shapes, and a 4,000-layer chain in linear time.
 */
#include <CUnit/Basic.h>
#include "tests/cunit.h"
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler/backward.h"
#include "compiler/infer.h"
#include "compiler/verify.h"


static FlProgram *P;
static FlBlock *B;
static int line;

static void begin(void) {
    P = fl_ir_program_new();
    B = fl_ir_block(P, 0);
    line = 0;
}

static FlVarDesc *V(const char *name, FlDType t, const char *shape) {
    FlVarDesc *v = fl_ir_var_add(B, name);
    v->dtype = t;
    int64_t d[FL_IR_MAX_DIMS];
    int n = 0;
    for (const char *s = shape; *s;) {
        char *end;
        d[n++] = strtoll(s, &end, 10);
        s = *end == ',' ? end + 1 : end;
    }
    fl_ir_var_set_shape(v, n, d);
    return v;
}

static FlVarDesc *data(const char *name, FlDType t, const char *shape) {
    FlVarDesc *v = V(name, t, shape);
    v->stop_gradient = true;
    return v;
}

static FlVarDesc *param(const char *name, const char *shape) {
    FlVarDesc *v = V(name, FL_DT_FLOAT32, shape);
    v->persistable = v->trainable = true;
    return v;
}

/* Appends an op ("X=a Y=b,c" slots) and declares its outputs; loc line = ++line. */
static FlOpDesc *OPN(const char *type, const char *ins, const char *outs) {
    FlOpDesc *op = fl_ir_op_append(B, type);
    op->loc = (FlLoc){0, ++line, 1, 1};
    for (int pass = 0; pass < 2; pass++) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", pass ? outs : ins);
        char *save1 = NULL;
        for (char *tok = strtok_r(buf, " ", &save1); tok; tok = strtok_r(NULL, " ", &save1)) {
            char *eq = strchr(tok, '=');
            *eq = 0;
            char *save2 = NULL;
            for (char *a = strtok_r(eq + 1, ",", &save2); a; a = strtok_r(NULL, ",", &save2)) {
                if (pass) {
                    fl_ir_op_add_output(op, tok, a);
                    if (!fl_ir_var_find(B, a)) fl_ir_var_add(B, a);
                } else {
                    fl_ir_op_add_input(op, tok, a);
                }
            }
        }
    }
    return op;
}

static FlOpDesc *I(FlOpDesc *op) {
    FlErr e = {{0}};
    FlStatus st = fl_infer_op(P, B, op, &e);
    if (st) fprintf(stderr, "\nbuilding: %s\n", e.msg);
    CU_ASSERT_EQUAL(st, FL_OK);
    return op;
}

/* OPN, then infers the op. */
static FlOpDesc *OP(const char *type, const char *ins, const char *outs) {
    return I(OPN(type, ins, outs));
}

/* The types of ops[from..], space separated. */
static const char *types_from(size_t from) {
    static char buf[4096];
    buf[0] = 0;
    for (size_t i = from; i < B->ops.len; i++) {
        if (i > from) strcat(buf, " ");
        strcat(buf, B->ops.data[i]->type);
    }
    return buf;
}

/* "Slot=a,b ..." of an op's inputs or outputs. */
static const char *slots_str(const FlOpDesc *op, bool outs) {
    static char buf[1024];
    buf[0] = 0;
    size_t n = outs ? op->outs.len : op->ins.len;
    for (size_t i = 0; i < n; i++) {
        const FlSlot *s = outs ? &op->outs.data[i] : &op->ins.data[i];
        if (i) strcat(buf, " ");
        strcat(buf, s->name);
        strcat(buf, "=");
        for (size_t k = 0; k < s->nargs; k++) {
            if (k) strcat(buf, ",");
            strcat(buf, s->args[k]);
        }
    }
    return buf;
}

static void shape_is(const char *name, const char *shape) {
    FlVarDesc *v = fl_ir_var_find(B, name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    FlBuf s = {0};
    fl_ir_shape_str(v->ndim, v->shape, &s);
    CHECK_STR(fl_buf_str(&s), shape);
    fl_buf_free(&s);
}

/* x [-1, 13] -> fc(10) -> relu -> fc(3) -> softmax -> cross_entropy(label) -> mean */
static void build_mlp(void) {
    data("x", FL_DT_FLOAT32, "-1,13");
    data("label", FL_DT_INT64, "-1,1");
    param("W1", "13,10");
    param("b1", "10");
    param("W2", "10,3");
    param("b2", "3");
    OP("mul", "X=x Y=W1", "Out=h1");
    FlOpDesc *add = OPN("elementwise_add", "X=h1 Y=b1", "Out=h2");
    fl_ir_op_set_int(add, "axis", 1);
    I(add);
    OP("relu", "X=h2", "Out=h3");
    OP("mul", "X=h3 Y=W2", "Out=h4");
    OP("elementwise_add", "X=h4 Y=b2", "Out=h5");
    OP("softmax", "X=h5", "Out=prob");
    OP("cross_entropy", "X=prob Label=label", "Y=ce");
    OP("mean", "X=ce", "Out=loss");
}

static void test_mlp(void) {
    begin();
    build_mlp();
    size_t nfwd = B->ops.len;
    FlBackwardResult r = {0};
    FlErr e = {{0}};
    FlLoc where = FL_LOC_NONE;
    FlStatus st = fl_backward_append(P, "loss", NULL, 0, &r, &e, &where);
    if (st) fprintf(stderr, "\n%s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(st, FL_OK);
    CHECK_STR(types_from(nfwd), "fill_constant mean_grad cross_entropy_grad softmax_grad "
                                "elementwise_add_grad mul_grad relu_grad elementwise_add_grad "
                                "mul_grad");
    const FlOpDesc *fill = B->ops.data[nfwd];
    CHECK_STR(slots_str(fill, true), "Out=loss@GRAD");
    CU_ASSERT_DOUBLE_EQUAL(fl_ir_op_get_float(fill, "value", 0), 1.0, 0);
    CHECK_STR(slots_str(B->ops.data[nfwd + 1], false), "X=ce Out=loss Out@GRAD=loss@GRAD");
    CHECK_STR(slots_str(B->ops.data[nfwd + 1], true), "X@GRAD=ce@GRAD");
    /* no gradient for the label */
    CHECK_STR(slots_str(B->ops.data[nfwd + 2], true), "X@GRAD=prob@GRAD");
    const FlOpDesc *add2 = B->ops.data[nfwd + 4];
    CHECK_STR(slots_str(add2, false), "X=h4 Y=b2 Out=h5 Out@GRAD=h5@GRAD");
    CHECK_STR(slots_str(add2, true), "X@GRAD=h4@GRAD Y@GRAD=b2@GRAD");
    /* the first layer's mul makes no gradient for the data */
    const FlOpDesc *mul1 = B->ops.data[nfwd + 8];
    CHECK_STR(slots_str(mul1, true), "Y@GRAD=W1@GRAD");
    CU_ASSERT_EQUAL(mul1->loc.line, 1); /* the forward op's loc */
    CU_ASSERT_EQUAL(fl_ir_op_get_int(B->ops.data[nfwd + 7], "axis", 0), 1); /* forward attrs */
    CU_ASSERT_EQUAL(r.pairs.len, 4);
    if (r.pairs.len == 4) {
        CHECK_STR(r.pairs.data[0].param, "W1");
        CHECK_STR(r.pairs.data[0].grad, "W1@GRAD");
        CHECK_STR(r.pairs.data[1].param, "b1");
        CHECK_STR(r.pairs.data[2].param, "W2");
        CHECK_STR(r.pairs.data[3].grad, "b2@GRAD");
    }
    shape_is("W1@GRAD", "[13, 10]");
    shape_is("b1@GRAD", "[10]");
    shape_is("h3@GRAD", "[-1, 10]");
    shape_is("loss@GRAD", "[1]");
    CU_ASSERT_PTR_NULL(fl_ir_var_find(B, "x@GRAD"));
    CU_ASSERT_PTR_NULL(fl_ir_var_find(B, "label@GRAD"));
    /* the result verifies clean and re-infers */
    FlVerifyIssues vi = {0};
    CU_ASSERT_EQUAL(fl_verify_program(P, NULL, &vi), 0);
    for (size_t i = 0; i < vi.items.len; i++) fprintf(stderr, "\n%s\n", vi.items.data[i].msg);
    fl_verify_issues_fini(&vi);
    CU_ASSERT_EQUAL(fl_infer_program(P, &e, &where), FL_OK);
    fl_backward_result_fini(&r);
    fl_ir_program_free(P);
}

static void test_params_subset(void) {
    begin();
    build_mlp();
    size_t nfwd = B->ops.len;
    const char *params[] = {"W2"};
    FlBackwardResult r = {0};
    FlErr e = {{0}};
    CU_ASSERT_EQUAL_FATAL(fl_backward_append(P, "loss", params, 1, &r, &e, NULL), FL_OK);
    CHECK_STR(types_from(nfwd), "fill_constant mean_grad cross_entropy_grad softmax_grad "
                                "elementwise_add_grad mul_grad");
    CHECK_STR(slots_str(B->ops.data[nfwd + 4], true), "X@GRAD=h4@GRAD"); /* b2 not chosen */
    CHECK_STR(slots_str(B->ops.data[nfwd + 5], true), "Y@GRAD=W2@GRAD");
    CU_ASSERT_EQUAL(r.pairs.len, 1);
    fl_backward_result_fini(&r);
    const char *bad[] = {"W9"};
    CU_ASSERT_EQUAL(fl_backward_append(P, "loss", bad, 1, &r, &e, NULL), FL_ERROR);
    CHECK_STR(e.msg, "backward: no parameter named 'W9'");
    fl_ir_program_free(P);
}

static void test_used_twice(void) {
    begin();
    data("x", FL_DT_FLOAT32, "-1,4");
    param("W", "4,4");
    OP("mul", "X=x Y=W", "Out=a");
    OP("relu", "X=a", "Out=r1");
    OP("sigmoid", "X=a", "Out=r2");
    OP("elementwise_mul", "X=r1 Y=r1", "Out=sq"); /* twice in one op */
    OP("elementwise_add", "X=sq Y=r2", "Out=s");
    OP("mean", "X=s", "Out=loss");
    size_t nfwd = B->ops.len;
    FlBackwardResult r = {0};
    FlErr e = {{0}};
    FlStatus st = fl_backward_append(P, "loss", NULL, 0, &r, &e, NULL);
    if (st) fprintf(stderr, "\n%s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(st, FL_OK);
    CHECK_STR(types_from(nfwd), "fill_constant mean_grad elementwise_add_grad "
                                "elementwise_mul_grad sum sigmoid_grad relu_grad sum mul_grad");
    CHECK_STR(slots_str(B->ops.data[nfwd + 3], true),
              "X@GRAD=r1@GRAD@RENAME@0 Y@GRAD=r1@GRAD@RENAME@1");
    CHECK_STR(slots_str(B->ops.data[nfwd + 4], false), "X=r1@GRAD@RENAME@0,r1@GRAD@RENAME@1");
    CHECK_STR(slots_str(B->ops.data[nfwd + 4], true), "Out=r1@GRAD");
    CHECK_STR(slots_str(B->ops.data[nfwd + 5], true), "X@GRAD=a@GRAD@RENAME@0");
    CHECK_STR(slots_str(B->ops.data[nfwd + 6], true), "X@GRAD=a@GRAD@RENAME@1");
    CHECK_STR(slots_str(B->ops.data[nfwd + 7], false), "X=a@GRAD@RENAME@0,a@GRAD@RENAME@1");
    CHECK_STR(slots_str(B->ops.data[nfwd + 8], false), "X=x Y=W Out=a Out@GRAD=a@GRAD");
    shape_is("a@GRAD@RENAME@1", "[-1, 4]");
    shape_is("a@GRAD", "[-1, 4]");
    CU_ASSERT_EQUAL(r.pairs.len, 1);
    fl_backward_result_fini(&r);
    fl_ir_program_free(P);
}

static void test_zero_grads_and_stop(void) {
    begin();
    data("x", FL_DT_FLOAT32, "-1,6");
    param("W", "6,6");
    OP("mul", "X=x Y=W", "Out=h");
    FlOpDesc *sp = OPN("split", "X=h", "Out=p1,p2");
    fl_ir_op_set_int(sp, "axis", 1);
    I(sp);
    FlOpDesc *fc = OPN("fill_constant", "", "Out=k");
    int64_t one = 1;
    fl_ir_op_set_ints(fc, "shape", &one, 1);
    I(fc);
    FlErr e = {{0}};
    OP("argmax", "X=p2", "Out=am"); /* off the path to the loss: no error */
    OP("elementwise_mul", "X=p1 Y=k", "Out=q");
    OP("mean", "X=q", "Out=loss");
    size_t nfwd = B->ops.len;
    FlBackwardResult r = {0};
    FlStatus st = fl_backward_append(P, "loss", NULL, 0, &r, &e, NULL);
    if (st) fprintf(stderr, "\n%s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(st, FL_OK);
    CHECK_STR(types_from(nfwd),
              "fill_constant mean_grad elementwise_mul_grad fill_zeros_like split_grad mul_grad");
    CHECK_STR(slots_str(B->ops.data[nfwd + 2], true), "X@GRAD=p1@GRAD"); /* k: a constant */
    CHECK_STR(slots_str(B->ops.data[nfwd + 3], false), "X=p2");
    CHECK_STR(slots_str(B->ops.data[nfwd + 4], false), "X=h Out=p1,p2 Out@GRAD=p1@GRAD,p2@GRAD");
    shape_is("p2@GRAD", "[-1, 3]");
    shape_is("h@GRAD", "[-1, 6]");
    fl_backward_result_fini(&r);
    fl_ir_program_free(P);
}

static void test_list_slots(void) {
    begin();
    data("x", FL_DT_FLOAT32, "-1,4");
    param("W", "4,4");
    OP("mul", "X=x Y=W", "Out=h");
    FlOpDesc *c = OPN("concat", "X=x,h", "Out=c");
    fl_ir_op_set_int(c, "axis", 1);
    I(c);
    OP("mean", "X=c", "Out=loss");
    size_t nfwd = B->ops.len;
    FlBackwardResult r = {0};
    FlErr e = {{0}};
    CU_ASSERT_EQUAL_FATAL(fl_backward_append(P, "loss", NULL, 0, &r, &e, NULL), FL_OK);
    CHECK_STR(types_from(nfwd), "fill_constant mean_grad concat_grad mul_grad");
    CHECK_STR(slots_str(B->ops.data[nfwd + 2], true), "X@GRAD=" FL_BACKWARD_EMPTY ",h@GRAD");
    CU_ASSERT_EQUAL(fl_ir_op_get_int(B->ops.data[nfwd + 2], "axis", 0), 1);
    shape_is("h@GRAD", "[-1, 4]");
    FlVerifyIssues vi = {0};
    CU_ASSERT_EQUAL(fl_verify_program(P, NULL, &vi), 0);
    fl_verify_issues_fini(&vi);
    fl_backward_result_fini(&r);
    fl_ir_program_free(P);
}

static void test_errors(void) {
    begin();
    data("x", FL_DT_FLOAT32, "-1,4");
    param("W", "4,4");
    OP("mul", "X=x Y=W", "Out=h");
    OP("argmax", "X=h", "Out=am"); /* line 2 */
    FlOpDesc *c = OPN("cast", "X=am", "Out=amf");
    fl_ir_op_set_int(c, "out_dtype", FL_DT_FLOAT32);
    I(c);
    FlErr e = {{0}};
    OP("mean", "X=amf", "Out=loss");
    OP("mean", "X=am", "Out=iloss");
    OP("reduce_sum", "X=h", "Out=big");
    FlVarDesc *w = fl_ir_var_find(B, "big");
    w->loc = (FlLoc){0, 42, 5, 3};
    size_t nops = B->ops.len, nvars = B->vars.len;
    FlBackwardResult r = {0};
    FlLoc where = FL_LOC_NONE;
    CU_ASSERT_EQUAL(fl_backward_append(P, "loss", NULL, 0, &r, &e, &where), FL_ERROR);
    CHECK_STR(e.msg, "cannot differentiate through 'argmax' (it has no gradient)");
    CU_ASSERT_EQUAL(where.line, 2);
    CU_ASSERT_EQUAL(B->ops.len, nops); /* nothing appended */
    CU_ASSERT_EQUAL(B->vars.len, nvars);
    CU_ASSERT_EQUAL(r.pairs.len, 0);

    CU_ASSERT_EQUAL(fl_backward_append(P, "iloss", NULL, 0, &r, &e, &where), FL_ERROR);
    CHECK_STR(e.msg, "backward from a non-float var 'iloss' (int64)");
    CU_ASSERT_EQUAL(fl_backward_append(P, "big", NULL, 0, &r, &e, &where), FL_ERROR);
    CHECK_STR(e.msg, "backward from 'big' of shape [4]: the loss must have one element (take its "
                     "mean)");
    CU_ASSERT_EQUAL(where.line, 42);
    CU_ASSERT_EQUAL(fl_backward_append(P, "nope", NULL, 0, &r, &e, &where), FL_ERROR);
    CHECK_STR(e.msg, "backward: no var named 'nope'");
    V("lonely", FL_DT_FLOAT32, "1");
    CU_ASSERT_EQUAL(fl_backward_append(P, "lonely", NULL, 0, &r, &e, &where), FL_ERROR);
    CHECK_STR(e.msg, "backward: no op computes the loss 'lonely'");
    CU_ASSERT_EQUAL(B->ops.len, nops);
    fl_ir_program_free(P);
}

static void test_stop_gradient_var(void) {
    begin();
    data("x", FL_DT_FLOAT32, "-1,4");
    param("W", "4,4");
    param("V", "4,1");
    OP("mul", "X=x Y=W", "Out=h");
    fl_ir_var_find(B, "h")->stop_gradient = true; /* detached by the user */
    OP("mul", "X=h Y=V", "Out=o");
    OP("mean", "X=o", "Out=loss");
    size_t nfwd = B->ops.len;
    FlBackwardResult r = {0};
    FlErr e = {{0}};
    CU_ASSERT_EQUAL_FATAL(fl_backward_append(P, "loss", NULL, 0, &r, &e, NULL), FL_OK);
    CHECK_STR(types_from(nfwd), "fill_constant mean_grad mul_grad");
    CU_ASSERT_EQUAL(r.pairs.len, 1);
    if (r.pairs.len) CHECK_STR(r.pairs.data[0].param, "V");
    fl_backward_result_fini(&r);
    fl_ir_program_free(P);
}

static void test_deep_chain(void) {
    begin();
    enum { LAYERS = 4000 };
    data("x", FL_DT_FLOAT32, "-1,8");
    char prev[96] = "x", name[64], w[64], ins[200], outs[100];
    for (int i = 0; i < LAYERS; i++) {
        snprintf(w, sizeof w, "W%d", i);
        param(w, "8,8");
        snprintf(name, sizeof name, "h%d", i);
        snprintf(ins, sizeof ins, "X=%s Y=%s", prev, w);
        snprintf(outs, sizeof outs, "Out=%s", name);
        OP("mul", ins, outs);
        snprintf(ins, sizeof ins, "X=%s", name);
        snprintf(outs, sizeof outs, "Out=%s_r", name);
        OP("tanh", ins, outs);
        snprintf(prev, sizeof prev, "%s_r", name);
    }
    snprintf(ins, sizeof ins, "X=%s", prev);
    OP("mean", ins, "Out=loss");
    size_t nfwd = B->ops.len;
    FlBackwardResult r = {0};
    FlErr e = {{0}};
    clock_t t0 = clock();
    CU_ASSERT_EQUAL_FATAL(fl_backward_append(P, "loss", NULL, 0, &r, &e, NULL), FL_OK);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CU_ASSERT_EQUAL(B->ops.len - nfwd, 2 + 2 * LAYERS);
    CU_ASSERT_EQUAL(r.pairs.len, LAYERS);
    /* linear: well under a second normally; the bound only catches quadratic behaviour */
    if (secs > 5) fprintf(stderr, "\nappend_backward on %d layers took %.2f s\n", LAYERS, secs);
    CU_ASSERT(secs < 20);
    fl_backward_result_fini(&r);
    fl_ir_program_free(P);
}

int main(void) {
    static const FlTestCase cases[] = {
        {"MLP gradient ops", test_mlp},
        {"a subset of the parameters", test_params_subset},
        {"a var used twice is summed", test_used_twice},
        {"zero gradients, stop ops", test_zero_grads_and_stop},
        {"list slots keep positions", test_list_slots},
        {"errors and their locs", test_errors},
        {"stop_gradient var", test_stop_gradient_var},
        {"4,000-layer chain", test_deep_chain},
    };
    return fl_test_run("backward", NULL, NULL, cases, sizeof cases / sizeof cases[0]);
}
